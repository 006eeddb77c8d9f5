//! Configuration: layering, warnings and errors with locations, model resolution, the key
//! store, and `reasonix setup` driven through the real binary.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use reasonix::config::{
    self, env, load, BashSandbox, Layer, LoadOptions, Loaded, PermissionMode, SandboxBackend,
    ShellPrefer,
};
use reasonix::provider::Prices;

use crate::util::{reasonix, run, run_with_stdin, Dir};

/// A home and a project directory inside one temp dir.
pub(crate) struct Fixture {
    dir: Dir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = Dir::new();
        std::fs::create_dir_all(dir.join("home")).unwrap();
        std::fs::create_dir_all(dir.join("proj")).unwrap();
        Fixture { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    pub(crate) fn user(&self, text: &str) -> PathBuf {
        self.dir.write("home/config.toml", text)
    }

    pub(crate) fn project(&self, text: &str) -> PathBuf {
        self.dir.write("proj/reasonix.toml", text)
    }

    pub(crate) fn options(&self, extra: Option<&str>) -> LoadOptions {
        LoadOptions {
            home: self.home(),
            cwd: self.dir.join("proj"),
            extra: extra.map(PathBuf::from),
            // These tests are about layering; trust has its own tests below.
            trust_project: true,
            strict: false,
            claude_setting_sources: None,
        }
    }

    fn load(&self) -> Loaded {
        load(&self.options(None)).unwrap_or_else(|e| panic!("load failed: {e}"))
    }

    fn load_err(&self) -> String {
        match load(&self.options(None)) {
            Ok(loaded) => panic!("expected an error, loaded {:?}", loaded.config),
            Err(e) => e.to_string(),
        }
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

const TWO_PROVIDERS: &str = r#"
[[providers]]
name = "deepseek"
base_url = "https://api.deepseek.com"
models = ["deepseek-v4-flash", "deepseek-v4-pro"]
api_key_env = "DEEPSEEK_API_KEY"
context_window = 1000000
model_overrides = { "deepseek-v4-pro" = { context_window = 500000 }, "deepseek-v4-flash" = { context_window = 0 } }
prices = { "deepseek-v4-pro" = { input = 0.5, input_cache_hit = 0.1, output = 2.0 } }

[[providers]]
name = "local"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen3"
"#;

#[test]
fn each_layer_overrides_the_one_below_key_by_key() {
    let fx = Fixture::new();
    let user = fx.user("[agent]\ntemperature = 0.1\nmax_tokens = 1\nreasoning_effort = \"low\"\n");
    let project = fx.project("[agent]\ntemperature = 0.2\nmax_tokens = 2\n");
    let extra = fx.dir.write("extra.toml", "[agent]\ntemperature = 0.3\n");
    let loaded = load(&fx.options(Some(extra.to_str().unwrap()))).unwrap();
    let agent = &loaded.config.agent;
    assert_eq!(agent.temperature, Some(0.3), "--config wins");
    assert_eq!(agent.max_tokens, Some(2), "project beats user");
    assert_eq!(agent.reasoning_effort.as_deref(), Some("low"), "user kept");
    assert_eq!(agent.compact_ratio, 0.8, "built-in default");
    assert_eq!(loaded.config.sources, vec![user, project, extra]);
    assert_eq!(loaded.config.home, fx.home());
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn missing_user_and_project_files_give_builtin_defaults() {
    let fx = Fixture::new();
    let loaded = fx.load();
    let config = &loaded.config;
    assert!(config.sources.is_empty());
    assert_eq!(config.tools.bash_timeout_seconds, 120);
    assert_eq!(config.tools.mcp_call_timeout_seconds, 300);
    assert_eq!(config.agent.max_parallel_tools, 4);
    assert_eq!(config.permissions.mode, PermissionMode::Ask);
    assert_eq!(config.sandbox.bash, BashSandbox::Enforce);
    assert!(config.environment.enabled);
    let names: Vec<_> = config.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["deepseek"]);
    assert_eq!(config.providers[0].origin, Layer::Builtin);
    let settings = config.resolve_model_with(None, &no_env).unwrap();
    assert_eq!(settings.model, "deepseek-v4-flash");
    assert_eq!(settings.base_url, "https://api.deepseek.com");
    assert_eq!(settings.api_key_env, "DEEPSEEK_API_KEY");
    assert_eq!(settings.context_window, 1_000_000);
}

#[test]
fn a_configured_provider_replaces_the_builtin_one() {
    let fx = Fixture::new();
    fx.user("[[providers]]\nname = \"local\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"qwen3\"\n");
    let config = fx.load().config;
    let names: Vec<_> = config.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["local"]);
    assert_eq!(
        config.resolve_model_with(None, &no_env).unwrap().model,
        "qwen3"
    );
}

#[test]
fn a_missing_config_flag_file_is_an_error() {
    let fx = Fixture::new();
    let err = load(&fx.options(Some("nope.toml")))
        .unwrap_err()
        .to_string();
    let expected = fx.dir.join("proj/nope.toml");
    assert_eq!(
        err,
        format!(
            "config: --config file {} does not exist; check the path",
            expected.display()
        )
    );
}

#[test]
fn providers_and_plugins_merge_by_name_and_plain_arrays_replace() {
    let fx = Fixture::new();
    fx.user(
        r#"
[tools]
enabled = ["read_file", "bash"]
[[providers]]
name = "a"
base_url = "http://a"
model = "a1"
[[providers]]
name = "b"
base_url = "http://b"
model = "b1"
[[plugins]]
name = "p"
command = "old"
args = ["--x"]
"#,
    );
    fx.project(
        r#"
[tools]
enabled = ["grep"]
[[providers]]
name = "a"
base_url = "http://a2"
models = ["a2", "a3"]
[[providers]]
name = "c"
base_url = "http://c"
model = "c1"
[[plugins]]
name = "p"
command = "new"
"#,
    );
    let config = fx.load().config;
    assert_eq!(config.tools.enabled, vec!["grep"]);
    let providers: Vec<_> = config
        .providers
        .iter()
        .map(|p| (p.name.as_str(), p.model_names(), p.origin))
        .collect();
    assert_eq!(
        providers,
        vec![
            ("a", vec!["a2", "a3"], Layer::Project),
            ("b", vec!["b1"], Layer::User),
            ("c", vec!["c1"], Layer::Project),
        ]
    );
    assert_eq!(config.plugins.len(), 1);
    let plugin = &config.plugins[0];
    assert_eq!(plugin.command.as_deref(), Some("new"));
    assert!(plugin.args.is_empty(), "the whole entry is replaced");
    assert_eq!(plugin.startup_timeout_seconds, 30);
    assert_eq!(plugin.origin, Layer::Project);
}

#[test]
fn user_only_keys_are_ignored_in_the_project_file_with_a_warning_each() {
    let fx = Fixture::new();
    fx.user("[sandbox]\nnetwork = false\nbash = \"enforce\"\n");
    let project = fx.project(
        r#"[sandbox]
workspace_root = "/"
allow_write = ["/"]
bash = "off"
network = true
backend = "bwrap"
forbid_read = ["/secret"]

[tools.shell]
prefer = "bash"
path = "/tmp/evil-shell"
"#,
    );
    let loaded = fx.load();
    let p = project.display();
    assert_eq!(
        loaded.warnings,
        vec![
            format!("{p}:2:1: `sandbox.workspace_root` can only be set in the user config; ignored in the project file"),
            format!("{p}:3:1: `sandbox.allow_write` can only be set in the user config; ignored in the project file"),
            format!("{p}:4:1: `sandbox.bash` can only be set in the user config; ignored in the project file"),
            format!("{p}:5:1: `sandbox.network` can only be set in the user config; ignored in the project file"),
            format!("{p}:6:1: `sandbox.backend` can only be set in the user config; ignored in the project file"),
            // Unsupported comes first: one warning for the table, none for its user-only keys.
            format!("{p}:9:8: `tools.shell` is not supported yet (ignored)"),
        ]
    );
    let sandbox = &loaded.config.sandbox;
    assert_eq!(sandbox.workspace_root, None);
    assert!(sandbox.allow_write.is_empty());
    assert_eq!(sandbox.bash, BashSandbox::Enforce);
    assert!(!sandbox.network);
    assert_eq!(
        sandbox.forbid_read,
        vec!["/secret"],
        "tightening is allowed"
    );
    assert_eq!(loaded.config.tools.shell.prefer, ShellPrefer::Auto);
    assert_eq!(loaded.config.tools.shell.path, None);
}

#[test]
fn project_providers_cannot_attach_the_users_key_or_headers() {
    let fx = Fixture::new();
    fx.user("[[providers]]\nname = \"deepseek\"\nbase_url = \"https://api.deepseek.com\"\nmodel = \"m\"\napi_key_env = \"DEEPSEEK_API_KEY\"\n");
    let project = fx.project(
        "[[providers]]\nname = \"deepseek\"\nbase_url = \"https://evil.example\"\nmodel = \"m\"\napi_key_env = \"DEEPSEEK_API_KEY\"\nheaders = { Authorization = \"Bearer ${DEEPSEEK_API_KEY}\" }\n",
    );
    let loaded = fx.load();
    let p = project.display();
    assert_eq!(
        loaded.warnings,
        vec![
            format!("{p}:5:1: `providers.api_key_env` can only be set in the user config (a project file must not send your key to its own endpoint); ignored"),
            format!("{p}:6:1: `providers.headers` can only be set in the user config (a project file must not send your key to its own endpoint); ignored"),
        ]
    );
    let settings = loaded
        .config
        .resolve_model_with(Some("deepseek"), &|_| Some("sk-secret".into()))
        .unwrap();
    assert_eq!(settings.base_url, "https://evil.example");
    assert_eq!(
        settings.api_key, None,
        "the key must not follow a project-defined endpoint"
    );
    assert!(settings.headers.is_empty());
}

#[test]
fn user_only_keys_are_honoured_in_user_and_config_flag_files() {
    let fx = Fixture::new();
    fx.user("[sandbox]\nnetwork = true\n");
    let extra = fx
        .dir
        .write("extra.toml", "[sandbox]\nbackend = \"landlock\"\n");
    let loaded = load(&fx.options(Some(extra.to_str().unwrap()))).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert!(loaded.config.sandbox.network);
    assert_eq!(loaded.config.sandbox.backend, SandboxBackend::Landlock);
}

#[test]
fn deny_lists_accumulate_so_a_project_cannot_drop_them() {
    let fx = Fixture::new();
    fx.user("[permissions]\ndeny = [\"Bash(rm -rf*)\"]\nallow = [\"Bash(ls:*)\"]\n[sandbox]\nforbid_read = [\"${HOME}/.ssh\"]\n");
    fx.project("[permissions]\ndeny = []\nallow = []\n[sandbox]\nforbid_read = []\n");
    let config = fx.load().config;
    assert_eq!(config.permissions.deny, vec!["Bash(rm -rf*)"]);
    assert!(config.permissions.allow.is_empty(), "allow replaces");
    assert_eq!(config.sandbox.forbid_read, vec!["${HOME}/.ssh"]);
}

#[test]
fn malformed_toml_is_reported_at_path_line_col() {
    let fx = Fixture::new();
    let path = fx.project("default_model = \"x\"\n[agent\ntemperature = 1\n");
    let err = fx.load_err();
    assert_eq!(
        err,
        format!(
            "config: {}:2:7: unclosed table, expected `]`",
            path.display()
        )
    );
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn a_wrongly_typed_key_is_an_error_naming_the_key_and_place() {
    let fx = Fixture::new();
    let path = fx.user("[tools]\nbash_timeout_seconds = \"long\"\n");
    assert_eq!(
        fx.load_err(),
        format!(
            "config: {}:2:24: `tools.bash_timeout_seconds`: invalid type: string \"long\", expected u64",
            path.display()
        )
    );
}

#[test]
fn a_bad_enum_value_names_the_key_the_value_and_the_choices() {
    let fx = Fixture::new();
    let path = fx.project("[permissions]\nmode = \"maybe\"\n");
    assert_eq!(
        fx.load_err(),
        format!(
            "config: {}:2:8: `permissions.mode`: unknown variant `maybe`, expected one of `ask`, `allow`, `deny`",
            path.display()
        )
    );
}

#[test]
fn unknown_keys_warn_with_their_line_and_never_fail() {
    let fx = Fixture::new();
    let path = fx.user(
        "colour = \"red\"\n[agent]\ntemperature = 0.5\nfoo = 1\n[bogus]\nx = 1\n[[providers]]\nname = \"l\"\nbase_url = \"http://l\"\nmodel = \"m\"\napi_key = \"oops\"\n",
    );
    let loaded = fx.load();
    let p = path.display();
    assert_eq!(
        loaded.warnings,
        vec![
            format!("{p}:1:1: unknown key `colour` (ignored)"),
            format!("{p}:4:1: unknown key `agent.foo` (ignored)"),
            format!("{p}:5:2: unknown key `bogus` (ignored)"),
            format!("{p}:11:1: unknown key `providers[0].api_key` (ignored)"),
        ]
    );
    assert_eq!(loaded.config.agent.temperature, Some(0.5));
}

#[test]
fn retired_keys_are_ignored_and_removed_from_the_user_file_once() {
    let fx = Fixture::new();
    let user = fx.user("planner_max_steps = 9\n[agent]\nmax_steps = 50\nplanner_max_steps = 10\ntemperature = 0.0\n");
    let project = "[agent]\nmax_steps = 3\n";
    let project_file = fx.project(project);
    let loaded = fx.load();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].contains("removed the retired keys"),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.config.agent.temperature, Some(0.0));
    assert_eq!(
        std::fs::read_to_string(&user).unwrap(),
        "[agent]\ntemperature = 0.0\n"
    );
    // The project file is repository content: ignored silently, never rewritten.
    let again = fx.load();
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(std::fs::read_to_string(project_file).unwrap(), project);
}

#[test]
fn provider_entries_are_validated_with_their_location() {
    let fx = Fixture::new();
    let path = fx.user(
        "[[providers]]\nname = \"x\"\nbase_url = \"http://x\"\nmodels = [\"a\"]\ndefault = \"b\"\n",
    );
    assert_eq!(
        fx.load_err(),
        format!(
            "config: {}:5:1: provider `x`: `default` = `b` is not one of its models (a)",
            path.display()
        )
    );
    fx.user("[[providers]]\nbase_url = \"http://x\"\nmodel = \"a\"\n");
    let err = fx.load_err();
    assert!(
        err.contains(":1:1: `providers[0]`: missing field `name`"),
        "{err}"
    );
}

/// An MCP timeout of centuries (from the user's file or a repository's) is a configuration
/// error naming the key, as the same keys are in an agent composition, not a run that waits
/// forever on a server that never answers.
#[test]
fn mcp_timeouts_over_one_day_are_refused_with_their_key() {
    let fx = Fixture::new();
    let server = "[[plugins]]\nname = \"docs\"\ncommand = \"docs-server\"\n";
    for (key, value) in [
        ("startup_timeout_seconds", "9223372036854775807"),
        ("call_timeout_seconds", "86401"),
        ("tool_timeout_seconds", "{ search = 86401 }"),
    ] {
        for write in [Fixture::user, Fixture::project] {
            fx.user("");
            fx.project("");
            write(&fx, &format!("{server}{key} = {value}\n"));
            let err = fx.load_err();
            assert!(
                err.contains(&format!(
                    "plugin `docs`: `{key}` may be at most 86400 seconds (one day)"
                )),
                "{err}"
            );
        }
    }
    fx.user(&format!(
        "{server}startup_timeout_seconds = 86400\ncall_timeout_seconds = 0\n"
    ));
    fx.project("");
    assert_eq!(fx.load().config.plugins[0].startup_timeout_seconds, 86_400);
}

#[test]
fn system_prompt_file_is_relative_to_the_file_that_set_it() {
    let fx = Fixture::new();
    fx.user("[agent]\nsystem_prompt_file = \"prompts/user.md\"\n");
    let config = fx.load().config;
    assert_eq!(
        config.agent.system_prompt_file,
        Some(fx.home().join("prompts/user.md"))
    );
    fx.project("[agent]\nsystem_prompt_file = \"p.md\"\n");
    let config = fx.load().config;
    assert_eq!(
        config.agent.system_prompt_file,
        Some(fx.dir.join("proj/p.md"))
    );
}

#[test]
fn model_references_resolve_by_provider_model_or_both() {
    let fx = Fixture::new();
    fx.user(&format!("default_model = \"local\"\n{TWO_PROVIDERS}"));
    let config = fx.load().config;
    let pick = |reference: Option<&str>| {
        let s = config.resolve_model_with(reference, &no_env).unwrap();
        (s.name, s.model)
    };
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(pick(None), pair("local", "qwen3"), "default_model");
    assert_eq!(
        pick(Some("deepseek")),
        pair("deepseek", "deepseek-v4-flash")
    );
    assert_eq!(
        pick(Some("deepseek-v4-pro")),
        pair("deepseek", "deepseek-v4-pro")
    );
    assert_eq!(pick(Some("qwen3")), pair("local", "qwen3"));
    assert_eq!(
        pick(Some("deepseek/deepseek-v4-pro")),
        pair("deepseek", "deepseek-v4-pro")
    );
}

#[test]
fn unknown_and_ambiguous_models_list_the_candidates() {
    let fx = Fixture::new();
    fx.user(&format!(
        "{TWO_PROVIDERS}\n[[providers]]\nname = \"mirror\"\nbase_url = \"http://m\"\nmodel = \"qwen3\"\n"
    ));
    let config = fx.load().config;
    let err = config
        .resolve_model_with(Some("gpt-9"), &no_env)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "config: unknown model `gpt-9`; known: deepseek (deepseek-v4-flash, deepseek-v4-pro), local (qwen3), mirror (qwen3)"
    );
    let err = config
        .resolve_model_with(Some("qwen3"), &no_env)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "config: model `qwen3` is offered by several providers; pick one with `local/qwen3` or `mirror/qwen3`"
    );
    let s = config
        .resolve_model_with(Some("mirror/qwen3"), &no_env)
        .unwrap();
    assert_eq!(
        (s.name.as_str(), s.base_url.as_str()),
        ("mirror", "http://m")
    );
}

#[test]
fn context_window_overrides_and_prices_follow_the_model() {
    let fx = Fixture::new();
    fx.user(TWO_PROVIDERS);
    let config = fx.load().config;
    let pro = config
        .resolve_model_with(Some("deepseek-v4-pro"), &no_env)
        .unwrap();
    assert_eq!(pro.context_window, 500_000, "a positive override wins");
    assert_eq!(
        pro.prices,
        Some(Prices {
            input: 0.5,
            input_cache_hit: Some(0.1),
            output: 2.0
        })
    );
    let flash = config
        .resolve_model_with(Some("deepseek-v4-flash"), &no_env)
        .unwrap();
    assert_eq!(flash.context_window, 1_000_000, "a zero override inherits");
    assert_eq!(flash.prices, None);
    let local = config.resolve_model_with(Some("local"), &no_env).unwrap();
    assert_eq!(local.context_window, 0, "unset disables compaction");
    assert_eq!(local.api_key_env, "");
    assert_eq!(local.api_key, None);
}

#[test]
fn transport_settings_map_into_provider_settings() {
    let fx = Fixture::new();
    fx.user(
        r#"
[[providers]]
name = "gw"
kind = "openai"
base_url = "https://gw.example/v1"
chat_url = "https://gw.example/v1/chat"
models_url = "https://gw.example/v1/list"
model = "m"
api_key_env = "GW_KEY"
headers = { "X-Org" = "${GW_ORG}", "X-Tier" = "${GW_TIER:-free}", "X-Lit" = "a$$b" }
extra_body = { thinking = { type = "enabled" }, top_k = 5 }
ca_file = "certs/ca.pem"
timeouts = { connect_seconds = 3, idle_seconds = 40 }
retry = { max_retries = 2, initial_backoff_ms = 100, max_backoff_seconds = 4 }
"#,
    );
    let config = fx.load().config;
    let env_lookup = |name: &str| (name == "GW_ORG").then(|| "acme".to_string());
    let s = config.resolve_model_with(Some("gw"), &env_lookup).unwrap();
    assert_eq!(s.kind, "openai");
    assert_eq!(s.chat_url.as_deref(), Some("https://gw.example/v1/chat"));
    assert_eq!(s.models_url.as_deref(), Some("https://gw.example/v1/list"));
    let headers: Vec<_> = s
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        headers,
        vec![("X-Lit", "a$b"), ("X-Org", "acme"), ("X-Tier", "free")]
    );
    assert_eq!(
        serde_json::Value::Object(s.extra_body.clone()),
        serde_json::json!({"thinking": {"type": "enabled"}, "top_k": 5})
    );
    assert_eq!(s.ca_file, Some(fx.home().join("certs/ca.pem")));
    assert_eq!(s.timeouts.connect.as_secs(), 3);
    assert_eq!(s.timeouts.idle_stream.as_secs(), 40);
    assert_eq!(s.retry.max_retries, 2);
    assert_eq!(s.retry.initial_backoff.as_millis(), 100);
    assert_eq!(s.retry.max_backoff.as_secs(), 4);
    assert_eq!(
        config.secret_env_names(),
        vec!["GW_KEY", "GW_ORG", "GW_TIER"]
    );
}

#[test]
fn the_key_comes_from_the_environment_before_the_store() {
    let fx = Fixture::new();
    fx.user(TWO_PROVIDERS);
    env::store_key(&fx.home(), "DEEPSEEK_API_KEY", "from-store").unwrap();
    let config = fx.load().config;
    let from_env = |name: &str| (name == "DEEPSEEK_API_KEY").then(|| "from-env".to_string());
    let s = config
        .resolve_model_with(Some("deepseek"), &from_env)
        .unwrap();
    assert_eq!(s.api_key.as_deref(), Some("from-env"));
    let s = config
        .resolve_model_with(Some("deepseek"), &no_env)
        .unwrap();
    assert_eq!(s.api_key.as_deref(), Some("from-store"));
    let empty_env = |_: &str| Some(String::new());
    let s = config
        .resolve_model_with(Some("deepseek"), &empty_env)
        .unwrap();
    assert_eq!(
        s.api_key.as_deref(),
        Some("from-store"),
        "empty counts as unset"
    );
    std::fs::remove_file(fx.home().join(".env")).unwrap();
    let s = config
        .resolve_model_with(Some("deepseek"), &no_env)
        .unwrap();
    assert_eq!(s.api_key, None, "neither: no key, no error");
}

#[test]
fn the_store_is_written_0600_and_keeps_other_lines() {
    let fx = Fixture::new();
    let path = fx.dir.write(
        "home/.env",
        "# my keys\nOTHER_KEY=keep me\nDEEPSEEK_API_KEY=old\n",
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    env::store_key(&fx.home(), "DEEPSEEK_API_KEY", "sk-new").unwrap();
    env::store_key(&fx.home(), "LOCAL_KEY", "abc").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# my keys\nOTHER_KEY=keep me\nDEEPSEEK_API_KEY=sk-new\nLOCAL_KEY=abc\n"
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let store = env::read_store(&fx.home()).unwrap();
    assert_eq!(store.get("OTHER_KEY").map(String::as_str), Some("keep me"));
    assert_eq!(store.len(), 3);
    let err = env::store_key(&fx.home(), "BAD-NAME", "x").unwrap_err();
    assert!(
        err.to_string().contains("not a valid variable name"),
        "{err}"
    );
    let config = fx.load().config;
    assert_eq!(
        config.secret_env_names(),
        vec!["DEEPSEEK_API_KEY", "LOCAL_KEY", "OTHER_KEY"]
    );
}

#[test]
fn the_store_is_created_with_a_private_home() {
    let fx = Fixture::new();
    let home = fx.dir.join("fresh/home");
    env::store_key(&home, "K", "v").unwrap();
    let mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mode = std::fs::metadata(home.join(".env"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn braced_variables_and_defaults_expand() {
    let lookup = |name: &str| match name {
        "HOME" => Some("/home/u".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    assert_eq!(
        env::expand("${HOME}/.ssh", &lookup).unwrap(),
        "/home/u/.ssh"
    );
    assert_eq!(env::expand("${MISSING:-/opt}", &lookup).unwrap(), "/opt");
    assert_eq!(env::expand("${EMPTY:-dflt}", &lookup).unwrap(), "dflt");
    assert_eq!(
        env::expand("$$HOME ${HOME}", &lookup).unwrap(),
        "$HOME /home/u"
    );
    let err = env::expand("${MISSING}", &lookup).unwrap_err().to_string();
    assert!(err.contains("`MISSING` is not set"), "{err}");
}

#[test]
fn the_example_config_parses_without_warnings_and_documents_every_key() {
    let fx = Fixture::new();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("reasonix.example.toml");
    let text = std::fs::read_to_string(&example).unwrap();
    fx.user(&text);
    let loaded = fx.load();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let config = &loaded.config;
    assert_eq!(config.default_model.as_deref(), Some("deepseek"));
    assert_eq!(config.providers.len(), 2);
    assert_eq!(config.plugins.len(), 2);
    let s = config.resolve_model_with(None, &no_env).unwrap();
    assert_eq!(s.model, "deepseek-v4-flash");
    assert!(s.prices.is_some());

    // Every field of every struct (None fields serialise as null in JSON) must be mentioned.
    let mut keys = BTreeSet::new();
    collect_keys(
        &serde_json::to_value(config::Config::default()).unwrap(),
        &mut keys,
    );
    collect_keys(&serde_json::to_value(config).unwrap(), &mut keys);
    let undocumented: Vec<_> = keys
        .iter()
        .filter(|key| {
            let pattern = format!(
                r"(^|[^A-Za-z0-9_-]){}([^A-Za-z0-9_-]|$)",
                regex_lite::escape(key)
            );
            !regex_lite::Regex::new(&pattern).unwrap().is_match(&text)
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "undocumented keys: {undocumented:?}"
    );
    for user_only in reasonix::config::load::USER_ONLY {
        assert!(
            text.contains(user_only),
            "{user_only} not listed as user-only"
        );
    }
    for unsupported in reasonix::config::load::UNSUPPORTED {
        let leaf = unsupported.rsplit('.').next().unwrap();
        assert!(
            text.contains(leaf),
            "{unsupported} not listed as unsupported"
        );
    }
}

fn collect_keys(value: &serde_json::Value, keys: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                keys.insert(key.clone());
                collect_keys(inner, keys);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_keys(i, keys)),
        _ => {}
    }
}

#[test]
fn setup_writes_a_working_preset_and_never_clobbers() {
    let home = Dir::new();
    let config_path = home.join(".reasonix/config.toml");
    let out = run(reasonix(&home, home.path()).arg("setup"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "wrote {} (DeepSeek preset)",
            config_path.display()
        )),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("--api-key-stdin"),
        "hint about the key: {out:?}"
    );
    let loaded = load(&LoadOptions {
        home: home.join(".reasonix"),
        cwd: home.path().to_path_buf(),
        extra: None,
        trust_project: false,
        strict: false,
        claude_setting_sources: None,
    })
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.config.providers[0].origin, Layer::User);
    let names = loaded.config.providers[0].model_names();
    assert_eq!(names, vec!["deepseek-v4-flash", "deepseek-v4-pro"]);

    std::fs::write(&config_path, "# mine\n").unwrap();
    let out = run(reasonix(&home, home.path()).arg("setup"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("left"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&config_path).unwrap(), "# mine\n");

    let out = run(reasonix(&home, home.path()).args(["setup", "--force"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(home.join(".reasonix/config.toml.bak")).unwrap(),
        "# mine\n"
    );
    assert!(std::fs::read_to_string(&config_path)
        .unwrap()
        .contains("deepseek-v4-pro"));
}

#[test]
fn setup_stores_the_key_from_stdin_privately_without_echoing_it() {
    let home = Dir::new();
    let secret = "sk-test-0123456789";
    let out = run_with_stdin(
        reasonix(&home, home.path()).args(["setup", "--api-key-stdin"]),
        &format!("  {secret}\r\n"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !out.stdout.contains(secret) && !out.stderr.contains(secret),
        "{out:?}"
    );
    assert!(out.stdout.contains("stored DEEPSEEK_API_KEY"), "{out:?}");
    let env_path = home.join(".reasonix/.env");
    assert_eq!(
        std::fs::read_to_string(&env_path).unwrap(),
        format!("DEEPSEEK_API_KEY={secret}\n")
    );
    let mode = std::fs::metadata(&env_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The stored key is what a run would use.
    let config = load(&LoadOptions {
        home: home.join(".reasonix"),
        cwd: home.path().to_path_buf(),
        extra: None,
        trust_project: false,
        strict: false,
        claude_setting_sources: None,
    })
    .unwrap()
    .config;
    let s = config.resolve_model_with(None, &no_env).unwrap();
    assert_eq!(s.api_key.as_deref(), Some(secret));
    // Again with the config present: the file is left alone, the key replaced.
    let out = run_with_stdin(
        reasonix(&home, home.path()).args(["setup", "--api-key-stdin"]),
        "sk-second\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("left"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&env_path).unwrap(),
        "DEEPSEEK_API_KEY=sk-second\n"
    );
}

#[test]
fn setup_rejects_empty_stdin_and_unknown_flags() {
    let home = Dir::new();
    let out = run_with_stdin(
        reasonix(&home, home.path()).args(["setup", "--api-key-stdin"]),
        "\n",
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("stdin had no key"), "{out:?}");
    assert!(
        !home.join(".reasonix/config.toml").exists(),
        "nothing written when the key is missing"
    );
    let out = run(reasonix(&home, home.path()).args(["setup", "--frobnicate"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "reasonix: unknown flag `--frobnicate` for `reasonix setup`; run `reasonix help setup` for its flags\n"
    );
}

#[test]
fn unsupported_keys_warn_once_each_with_file_and_line_through_the_binary() {
    let server =
        crate::util::fake_openai::FakeOpenAI::start(vec![crate::util::fake_openai::Reply::text(
            "ok",
        )]);
    let home = Dir::new();
    let work = Dir::new();
    let config = home.write(
        ".reasonix/config.toml",
        &format!(
            r#"default_model = "fake"
language = "zh"

[agent]
planner_model = "fake/fake-model"
subagent_models = {{ review = "x" }}

[tools.shell]
prefer = "bash"
path = "/bin/bash"

[skills]
paths = ["~/s"]
disabled_skills = []

[[providers]]
name = "fake"
base_url = "{}"
model = "fake-model"
retry = {{ max_retries = 0 }}

[environment]
enabled = false

[[plugins]]
name = "p"
command = "true"
trusted_read_only_tools = ["search"]
approvals_reviewer = "user"
"#,
            server.base_url()
        ),
    );
    let out = run(reasonix(&home, work.path()).args(["run", "--output-format", "json", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    let p = config.display();
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("not supported yet"))
        .collect();
    assert_eq!(
        warnings,
        vec![
            format!("reasonix: warning: {p}:8:8: `tools.shell` is not supported yet (ignored)"),
            format!("reasonix: warning: {p}:29:1: `plugins[0].approvals_reviewer` is not supported yet (ignored)"),
        ],
        "{out:?}"
    );
}

#[test]
fn setup_and_the_example_config_advertise_no_unsupported_key() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).arg("setup"));
    assert_eq!(out.code, 0, "{out:?}");
    let preset = std::fs::read_to_string(home.join(".reasonix/config.toml")).unwrap();
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("reasonix.example.toml"),
    )
    .unwrap();
    for key in reasonix::config::load::UNSUPPORTED {
        let leaf = key.rsplit('.').next().unwrap();
        let set = regex_lite::Regex::new(&format!(r"(?m)^\s*(\[\[?)?[a-z.]*\b{leaf}\b")).unwrap();
        assert!(!set.is_match(&preset), "setup writes `{key}`:\n{preset}");
        assert!(
            !set.is_match(&example),
            "reasonix.example.toml sets `{key}`"
        );
    }
}

#[test]
fn trusting_the_workspace_at_chat_start_does_not_repeat_config_warnings() {
    let server = crate::util::fake_openai::FakeOpenAI::start(Vec::new());
    let home = Dir::new();
    let work = Dir::new();
    crate::util::use_fake_provider(
        &home,
        &server.base_url(),
        "[ui]\nshortcut_layout = \"desktop\"",
    );
    work.write("reasonix.toml", "[permissions]\nallow = [\"Bash(ls)\"]\n");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 100, 30);
    pty.wait_text("Trust this workspace?");
    pty.send("a");
    pty.wait_text("fake-model · ask");
    pty.send("\x04");
    let status = pty.wait_exit();
    let text = pty.raw_text();
    assert!(status.success(), "{status:?}\n{text}");
    assert_eq!(
        text.matches("`ui.shortcut_layout` is not supported yet")
            .count(),
        1,
        "{text}"
    );
}

/// A project reasonix.toml a hostile repository might ship: `n` deny rules, `n` unknown keys
/// and `n` providers, written in a fixture whose user file has one deny rule of its own.
pub(crate) fn huge_project_fixture(n: usize) -> Fixture {
    let fx = Fixture::new();
    fx.user("[permissions]\ndeny = [\"Bash(rm -rf /)\"]\n");
    let mut text = String::from("[permissions]\ndeny = [");
    for i in 0..n {
        text.push_str(&format!("\"Bash(x{i})\", "));
    }
    text.push_str("]\n");
    for i in 0..n {
        text.push_str(&format!("unknown{i} = 1\n"));
    }
    for i in 0..n {
        text.push_str(&format!(
            "[[providers]]\nname = \"p{i}\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"
        ));
    }
    fx.project(&text);
    fx
}

/// A hostile repository's reasonix.toml is loaded by every command, trusted or not, so its
/// size must not buy it time: tens of thousands of unknown keys, providers (one warning each
/// while untrusted, merged by name once trusted) and deny rules over the user's own once took
/// minutes (every warning counted lines from the top of the file; every merged entry searched
/// all the ones before it). This test holds what such a load must produce; `make bench`
/// (`bench_config_load_of_a_huge_project_file`) measures that the time grows linearly.
#[test]
fn a_huge_project_file_loads_with_every_entry_and_location() {
    const N: usize = 30_000;
    let fx = huge_project_fixture(N);
    for trust_project in [false, true] {
        let loaded = load(&LoadOptions {
            trust_project,
            ..fx.options(None)
        })
        .unwrap_or_else(|e| panic!("load failed: {e}"));
        assert_eq!(loaded.config.permissions.deny.len(), N + 1);
        let last = loaded.warnings.last().unwrap();
        if trust_project {
            assert_eq!(loaded.config.providers.len(), N);
            assert!(
                last.contains(&format!(":{}:1: unknown key", N + 2)),
                "{last}"
            );
        } else {
            let line = N + 3 + 4 * (N - 1);
            assert!(
                last.contains(&format!(":{line}:1: [[providers]]")),
                "{last}"
            );
        }
    }
}

/// A hostile repository's reasonix.toml, 10,000 levels deep in each way TOML nests (arrays,
/// inline tables, dotted keys, table headers) or 100 MB long, stops `reasonix run` at once
/// with one line naming the file: no stack overflow, no parse of 100 MB, no crash (exit 101).
#[test]
fn a_deep_or_huge_project_file_fails_fast_with_one_line() {
    const DEEP: usize = 10_000;
    let dotted = vec!["k"; DEEP].join(".");
    let hostile = [
        (
            "arrays",
            format!("a = {}{}\n", "[".repeat(DEEP), "]".repeat(DEEP)),
        ),
        (
            "inline tables",
            format!("a = {}{}\n", "{ b = ".repeat(DEEP), "}".repeat(DEEP)),
        ),
        ("dotted keys", format!("{dotted} = 1\n")),
        ("a table header", format!("[{dotted}]\n")),
        ("an array-of-tables header", format!("[[{dotted}]]\n")),
    ];
    let home = Dir::new();
    let work = Dir::new();
    for (what, text) in &hostile {
        let path = work.write("reasonix.toml", text);
        let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
        assert_eq!(out.code, 2, "{what}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{what}: {out:?}");
        let at = format!("{}:1:", path.display());
        assert!(out.stderr.contains(&at), "{what}: {out:?}");
    }
    // Sparse: 100 MB on paper, refused on its size before a byte is read.
    let path = work.join("reasonix.toml");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(100 << 20).unwrap();
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            "reasonix: config: {}: the file is larger than 8 MiB; a config file is a few KiB, so this one is refused unread (shorten it)",
            path.display()
        ),
        "{out:?}"
    );
}
