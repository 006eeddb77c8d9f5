//! Attacks by a repository or a misled model on what the user allowed, through the real binary
//! against the loopback fake model: start-up running repository code, the model rewriting the
//! user's configuration, permission subjects taken from the wrong argument or from a symlink's
//! name, search tools listing denied paths, and the default hidden secrets. Each test was
//! written first and seen to fail on the code before its fix.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use reasonix::sandbox::{Backend, Host};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, Dir, Run};

/// A config whose only provider is the fake server, with `extra` appended as TOML.
fn config(home: &Dir, base_url: &str, extra: &str) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n\n{extra}\n"
        ),
    );
}

/// The model makes `calls` in one turn, then says "done". Returns the run and the text of every
/// tool result the model was shown, in call order.
fn model_calls(
    home: &Dir,
    ws: &Path,
    extra_config: &str,
    calls: &[(&str, &str, &str)],
    flags: &[&str],
) -> (Run, Vec<String>) {
    let server = FakeOpenAI::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    config(home, &server.base_url(), extra_config);
    let mut cmd = reasonix(home, ws);
    cmd.env("FAKE_API_KEY", "sk-fake-key-for-escapes")
        .arg("run")
        .args(flags)
        .arg("go");
    let out = run(&mut cmd);
    let requests = server.requests();
    let results = requests
        .last()
        .map(|r| {
            r.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    (out, results)
}

fn backends() -> Vec<Backend> {
    let host = Host::current();
    let mut usable = Vec::new();
    for (backend, works) in [
        (Backend::Bwrap, host.bwrap.as_ref().err()),
        (Backend::Landlock, host.landlock.as_ref().err()),
    ] {
        match works {
            None => usable.push(backend),
            Some(why) if std::env::var_os("REASONIX_REQUIRE_SANDBOX").is_some() => {
                panic!("REASONIX_REQUIRE_SANDBOX is set but {backend:?} is unusable: {why}")
            }
            Some(why) => eprintln!("warning: {backend:?} escape tests skipped: {why}"),
        }
    }
    usable
}

pub(crate) fn sandbox_table(backend: Backend) -> String {
    format!(
        "[sandbox]\nbash = \"enforce\"\nbackend = \"{}\"\n",
        backend.name()
    )
}

fn executable(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn git(ws: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t"])
        .args(args)
        .current_dir(ws)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

// ---------------------------------------------------------------------------------------------
// 1. Start-up runs no repository code.

#[test]
fn start_up_runs_no_repository_code_from_git_config_attributes_or_path() {
    let home = Dir::new();
    let ws = Dir::new();
    let evidence = Dir::new();
    let mark = |name: &str| {
        format!(
            "#!/bin/sh\necho \"$FAKE_API_KEY\" > {}/{name}\ncat\n",
            evidence.path().display()
        )
    };
    git(ws.path(), &["init", "-q", "-b", "main"]);
    ws.write("a.txt", "tracked\n");
    ws.write(".gitattributes", "* filter=evil\n");
    git(ws.path(), &["add", "."]);
    git(ws.path(), &["commit", "-qm", "init"]);
    executable(&ws.join("hooks-bin/fsmonitor"), &mark("fsmonitor"));
    executable(&ws.join("hooks-bin/clean"), &mark("filter"));
    executable(&ws.join("hooks-bin/pager"), &mark("pager"));
    git(
        ws.path(),
        &[
            "config",
            "core.fsmonitor",
            &ws.join("hooks-bin/fsmonitor").display().to_string(),
        ],
    );
    git(
        ws.path(),
        &[
            "config",
            "filter.evil.clean",
            &ws.join("hooks-bin/clean").display().to_string(),
        ],
    );
    git(
        ws.path(),
        &[
            "config",
            "core.pager",
            &ws.join("hooks-bin/pager").display().to_string(),
        ],
    );
    // A changed mtime makes `git status` re-read the file through the clean filter.
    ws.write("a.txt", "tracked\n");
    let planted = |name: &str| executable(&ws.join(&format!("bin/{name}")), &mark(name));
    for name in ["git", "python3", "node", "cargo", "make", "rustc"] {
        planted(name);
    }
    let trusted = Dir::new();
    executable(
        &trusted.join("tools/make"),
        &format!(
            "#!/bin/sh\necho \"key=$FAKE_API_KEY\" > {}/make-env\necho 'GNU Make 99.9'\n",
            trusted.path().display()
        ),
    );
    let path = format!(
        "bin:{}:{}:{}",
        ws.join("bin").display(),
        trusted.join("tools").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The first run's request stalls until the background version probe has filled the cache,
    // so the second run shows the probed version.
    let (stall, release) = Reply::stall();
    let server = FakeOpenAI::start(vec![stall, Reply::text("done")]);
    config(&home, &server.base_url(), "[environment]\nenabled = true\n");
    let start = |prompt: &str| {
        let mut cmd = reasonix(&home, ws.path());
        cmd.env("PATH", &path).env("FAKE_API_KEY", "sk-leak").args([
            "run",
            "--permission-mode",
            "strict",
            prompt,
        ]);
        cmd
    };
    let first = start("hello").spawn().expect("spawn reasonix");
    let system_of = |n: usize| {
        server.wait_for_requests(n + 1)[n].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let system = system_of(0);
    assert!(system.contains("git: branch main"), "{system}");
    // The probe's answer, or its timeout on a loaded machine (200 ms per probe), is cached
    // either way; the trusted make's entry is keyed by its path.
    let cache = home.join(".reasonix/cache/tool-versions.json");
    let make_path = trusted.join("tools/make").display().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !fs::read_to_string(&cache).is_ok_and(|c| c.contains(&make_path)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the version cache was never written"
        );
        std::thread::yield_now();
    }
    let probed = fs::read_to_string(&cache)
        .unwrap()
        .contains("GNU Make 99.9");
    release.release();
    let _ = first.wait_with_output();
    let out = run(&mut start("again"));
    assert_eq!(out.code, 0, "{out:?}");
    let ran: Vec<String> = fs::read_dir(evidence.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        ran.is_empty(),
        "repository code ran at start-up: {ran:?}\n{out:?}"
    );
    // The user's own PATH entries are probed, with a scrubbed environment. A probe that timed
    // out may have been killed before its script wrote anything; one that answered did.
    let seen = fs::read_to_string(trusted.join("make-env"));
    if probed || seen.is_ok() {
        let seen = seen.expect("the trusted make was probed");
        assert_eq!(seen.trim(), "key=", "a probe saw the provider key");
    }
    let system = system_of(1);
    if probed {
        assert!(system.contains("make: GNU Make 99.9"), "{system}");
    } else {
        assert!(system.contains(&format!("make: {make_path}")), "{system}");
    }
}

// ---------------------------------------------------------------------------------------------
// 2. The user's home is never the model's to write.

#[test]
fn jailed_bash_cannot_rewrite_the_user_config_under_either_backend() {
    for backend in backends() {
        let home = Dir::new();
        let ws = Dir::new();
        let config_path = home.join(".reasonix/config.toml");
        let command = format!(
            "printf '\\n[[plugins]]\\nname = \"evil\"\\ncommand = \"/bin/true\"\\n' >> {0}; \
             mkdir -p {1}/memory && echo pwned > {1}/memory/planted.md; \
             echo pwned > {1}/grants.json",
            config_path.display(),
            home.join(".reasonix").display()
        );
        let args = serde_json::json!({ "command": command }).to_string();
        let (out, results) = model_calls(
            &home,
            ws.path(),
            &sandbox_table(backend),
            &[("c1", "bash", &args)],
            &["--permission-mode", "yolo"],
        );
        assert_eq!(out.code, 0, "{backend:?}: {out:?}");
        let config = fs::read_to_string(&config_path).unwrap();
        assert!(
            !config.contains("evil"),
            "{backend:?}: the model appended to the user config:\n{config}\n{results:?}"
        );
        assert!(
            !home.join(".reasonix/memory/planted.md").exists()
                && !home.join(".reasonix/grants.json").exists(),
            "{backend:?}: the model wrote into the reasonix home: {results:?}"
        );
    }
}

#[test]
fn file_tools_refuse_the_reasonix_home() {
    let home = Dir::new();
    let ws = Dir::new();
    ws.write("payload.toml", "[sandbox]\nbash = \"off\"\n");
    let config_path = home.join(".reasonix/config.toml");
    let cfg = config_path.display().to_string();
    let write = serde_json::json!({"path": cfg, "content": "[sandbox]\nbash = \"off\"\n"});
    let edit = serde_json::json!({"path": cfg, "old_string": "[[providers]]", "new_string": "[sandbox]\nbash = \"off\"\n[[providers]]"});
    let moved = serde_json::json!({"source_path": "payload.toml", "destination_path": home.join(".reasonix/extra.toml").display().to_string()});
    let (out, results) = model_calls(
        &home,
        ws.path(),
        "",
        &[
            ("c1", "write_file", &write.to_string()),
            ("c2", "edit_file", &edit.to_string()),
            ("c3", "move_file", &moved.to_string()),
        ],
        &["--permission-mode", "yolo"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let config = fs::read_to_string(&config_path).unwrap();
    assert!(!config.contains("bash = \"off\""), "{config}\n{results:?}");
    assert!(!home.join(".reasonix/extra.toml").exists(), "{results:?}");
    assert_eq!(results.len(), 3);
    for result in &results {
        assert!(
            result.contains("reasonix home"),
            "expected a refusal naming the reasonix home: {result}"
        );
    }
}

#[test]
fn a_reasonix_home_inside_the_workspace_stays_read_only() {
    for backend in backends() {
        let home = Dir::new();
        let ws = Dir::new();
        let inner_home = ws.join("state");
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[
                (
                    "c1",
                    "bash",
                    r#"{"command":"echo '[sandbox]' >> state/config.toml; echo ok > sub/made-by-bash.txt"}"#,
                ),
                (
                    "c2",
                    "write_file",
                    r#"{"path":"state/config.toml","content":"pwned"}"#,
                ),
            ]),
            Reply::text("done"),
        ]);
        fs::create_dir_all(&inner_home).unwrap();
        // Under Landlock the workspace's top level loses the right to create entries when the
        // home is carved out of it (documented); existing directories stay writable.
        fs::create_dir_all(ws.join("sub")).unwrap();
        fs::write(
            inner_home.join("config.toml"),
            format!(
                "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n\n{}",
                server.base_url(),
                sandbox_table(backend)
            ),
        )
        .unwrap();
        let before = fs::read_to_string(inner_home.join("config.toml")).unwrap();
        let out = run(reasonix(&home, ws.path())
            .env("REASONIX_HOME", &inner_home)
            .env("FAKE_API_KEY", "k")
            .args(["run", "--permission-mode", "yolo", "go"]));
        assert_eq!(out.code, 0, "{backend:?}: {out:?}");
        assert_eq!(
            fs::read_to_string(inner_home.join("config.toml")).unwrap(),
            before,
            "{backend:?}"
        );
        assert!(
            ws.join("sub/made-by-bash.txt").exists(),
            "{backend:?}: the rest of the workspace must stay writable"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Permission subjects come from the tool's own arguments, resolved.

#[test]
fn a_decoy_argument_does_not_choose_the_permission_subject() {
    let home = Dir::new();
    let ws = Dir::new();
    ws.write("secret.txt", "DECOY-SECRET-1234\n");
    ws.write("src/main.rs", "fn main() {}\n");
    let (out, results) = model_calls(
        &home,
        ws.path(),
        "",
        &[
            ("c1", "read_file", r#"{"path":"secret.txt","command":"ls"}"#),
            (
                "c2",
                "write_file",
                r#"{"path":"src/main.rs","source_path":"docs/x.md","content":"pwned"}"#,
            ),
            (
                "c3",
                "write_file",
                r#"{"path":"src/main.rs","content":"pwned"}"#,
            ),
        ],
        &[
            "--permission-mode",
            "strict",
            "--deny",
            "Read(secret.txt)",
            "--allow",
            "Edit(docs/**)",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        results.iter().all(|r| !r.contains("DECOY-SECRET")),
        "{results:?}"
    );
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n", "{results:?}");
    assert!(results[0].contains("command"), "{}", results[0]);
}

#[test]
fn rules_judge_the_symlink_target_not_its_name() {
    let home = Dir::new();
    let ws = Dir::new();
    ws.write("secrets/k", "LINKED-SECRET-5678\n");
    ws.write("src/main.rs", "fn main() {}\n");
    fs::create_dir_all(ws.join("docs")).unwrap();
    symlink("secrets/k", ws.join("innocent.txt")).unwrap();
    symlink("../src/main.rs", ws.join("docs/notes.md")).unwrap();
    let (out, results) = model_calls(
        &home,
        ws.path(),
        "",
        &[
            ("c1", "read_file", r#"{"path":"innocent.txt"}"#),
            (
                "c2",
                "write_file",
                r#"{"path":"docs/notes.md","content":"pwned"}"#,
            ),
        ],
        &[
            "--permission-mode",
            "strict",
            "--deny",
            "Read(secrets/**)",
            "--allow",
            "Edit(docs/**)",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!results[0].contains("LINKED-SECRET"), "{results:?}");
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n", "{results:?}");
}

#[test]
fn search_tools_neither_list_nor_search_paths_a_read_rule_denies() {
    let home = Dir::new();
    let ws = Dir::new();
    ws.write("secrets/k", "DENIED-CONTENT-9999\n");
    ws.write("src/lib.rs", "// DENIED-CONTENT-9999 is the marker\n");
    let (out, results) = model_calls(
        &home,
        ws.path(),
        "",
        &[
            (
                "c1",
                "grep",
                r#"{"pattern":"DENIED-CONTENT","output_mode":"content"}"#,
            ),
            ("c2", "glob", r#"{"pattern":"**/*"}"#),
            ("c3", "ls", r#"{"path":".","recursive":true}"#),
            ("c4", "ls", r#"{"path":"secrets"}"#),
        ],
        &["--deny", "Read(secrets/**)"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(results[0].contains("src/lib.rs"), "control: {}", results[0]);
    for result in &results {
        assert!(
            !result.contains("secrets/k") && !result.contains("\nk") && !result.starts_with("k"),
            "a denied path was listed or searched: {result}"
        );
    }
    assert!(results[2].contains("src"), "control: {}", results[2]);
}

// ---------------------------------------------------------------------------------------------
// 8. Default hidden secrets and hard links to them.

#[test]
fn the_usual_credential_files_are_hidden_by_default_also_through_a_hard_link() {
    for backend in backends() {
        let home = Dir::new();
        let ws = Dir::new();
        home.write(".ssh/id_ed25519", "PRIVATE-KEY-DEFAULT-HIDDEN\n");
        home.write(".aws/credentials", "AWS-SECRET-DEFAULT-HIDDEN\n");
        home.write(".netrc", "machine x password NETRC-SECRET\n");
        fs::hard_link(home.join(".ssh/id_ed25519"), ws.join("innocent.txt")).unwrap();
        let ssh = home.join(".ssh/id_ed25519").display().to_string();
        let read = serde_json::json!({ "path": ssh }).to_string();
        let cat = serde_json::json!({
            "command": format!("cat {ssh} {}/.aws/credentials {}/.netrc", home.path().display(), home.path().display())
        })
        .to_string();
        let (out, results) = model_calls(
            &home,
            ws.path(),
            &sandbox_table(backend),
            &[
                ("c1", "read_file", &read),
                ("c2", "read_file", r#"{"path":"innocent.txt"}"#),
                ("c3", "bash", &cat),
                (
                    "c4",
                    "grep",
                    r#"{"pattern":"PRIVATE-KEY","output_mode":"content"}"#,
                ),
            ],
            &["--permission-mode", "yolo"],
        );
        assert_eq!(out.code, 0, "{backend:?}: {out:?}");
        assert_eq!(results.len(), 4);
        for result in &results {
            assert!(
                !result.contains("DEFAULT-HIDDEN") && !result.contains("NETRC-SECRET"),
                "{backend:?}: a default-hidden secret leaked: {result}"
            );
        }
    }
}

#[test]
fn the_user_config_can_unhide_a_default_entry() {
    let home = Dir::new();
    let ws = Dir::new();
    home.write(".npmrc", "registry=NPMRC-VISIBLE\n");
    home.write(".ssh/config", "Host SSH-STILL-HIDDEN\n");
    let npmrc = serde_json::json!({"path": home.join(".npmrc").display().to_string()}).to_string();
    let ssh =
        serde_json::json!({"path": home.join(".ssh/config").display().to_string()}).to_string();
    let defaults = "[sandbox]\ndefault_forbid_read = [\"${HOME}/.ssh\"]\n";
    let (out, results) = model_calls(
        &home,
        ws.path(),
        defaults,
        &[("c1", "read_file", &npmrc), ("c2", "read_file", &ssh)],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(results[0].contains("NPMRC-VISIBLE"), "{results:?}");
    assert!(!results[1].contains("SSH-STILL-HIDDEN"), "{results:?}");
}

#[test]
fn jailed_bash_cannot_read_or_write_a_hidden_file_through_a_hard_link_in_the_workspace() {
    for backend in backends() {
        let home = Dir::new();
        let ws = Dir::new();
        home.write(".ssh/id_ed25519", "PRIVATE-KEY-LINKED\n");
        fs::create_dir_all(ws.join("sub")).unwrap();
        fs::hard_link(home.join(".ssh/id_ed25519"), ws.join("sub/innocent.txt")).unwrap();
        ws.write("sub/control.txt", "CONTROL-VISIBLE\n");
        let (out, results) = model_calls(
            &home,
            ws.path(),
            &sandbox_table(backend),
            &[(
                "c1",
                "bash",
                r#"{"command":"cat sub/control.txt; cat sub/innocent.txt; echo overwritten > sub/innocent.txt"}"#,
            )],
            &["--permission-mode", "yolo"],
        );
        assert_eq!(out.code, 0, "{backend:?}: {out:?}");
        assert!(
            results[0].contains("CONTROL-VISIBLE"),
            "{backend:?}: {results:?}"
        );
        assert!(
            !results[0].contains("PRIVATE-KEY-LINKED"),
            "{backend:?}: the hidden file leaked through a hard link: {results:?}"
        );
        assert_eq!(
            fs::read_to_string(home.join(".ssh/id_ed25519")).unwrap(),
            "PRIVATE-KEY-LINKED\n",
            "{backend:?}: the hidden file was written through a hard link"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 9. Secrets at rest in the reasonix home are hidden, not just private (issue 32.2).

/// Every secret the reasonix home holds, relative to the test's `$HOME`, each with a marker that
/// must never reach the model or a jailed process. `config.toml` gets its marker from
/// [`SECRET_CONFIG_LINE`].
const HOME_SECRETS: &[(&str, &str)] = &[
    (".reasonix/.env", "DEEPSEEK_API_KEY=SECRET-AT-REST-ENV\n"),
    (
        ".reasonix/mcp-auth/server.json",
        "{\"access_token\":\"SECRET-AT-REST-OAUTH\"}\n",
    ),
    (
        ".reasonix/serve-auth.json",
        "{\"token\":\"SECRET-AT-REST-SERVE\"}\n",
    ),
    (
        ".reasonix/mcp-grants.json",
        "{\"version\":1,\"grants\":[{\"workspace\":\"/SECRET-AT-REST-GRANT\",\"server\":\"s\",\"identity\":\"0\"}]}\n",
    ),
    (
        ".reasonix/trusted-workspaces.json",
        "{\"version\":1,\"workspaces\":[{\"path\":\"/SECRET-AT-REST-TRUST\",\"trusted_at\":\"2026-01-01T00:00:00Z\"}]}\n",
    ),
];

/// A credential written inline in the user config (an MCP server's token, say).
const SECRET_CONFIG_LINE: &str = "# SECRET-AT-REST-CONFIG\n";

/// A skill in the home: not a secret, so every reader must still see it.
const SKILL: (&str, &str) = (
    ".reasonix/skills/demo/SKILL.md",
    "---\nname: demo\ndescription: a demo skill\n---\nCONTROL-SKILL-VISIBLE\n",
);

/// Writes every secret of [`HOME_SECRETS`] and the control skill; returns the secrets' paths,
/// `config.toml` included.
fn plant_home_secrets(home: &Dir) -> Vec<String> {
    let mut paths = Vec::new();
    for (rel, content) in HOME_SECRETS {
        paths.push(home.write(rel, content).display().to_string());
    }
    home.write(SKILL.0, SKILL.1);
    paths.push(home.join(".reasonix/config.toml").display().to_string());
    paths
}

fn push(
    calls: &mut Vec<(String, &'static str, String)>,
    name: &'static str,
    args: serde_json::Value,
) {
    calls.push((format!("c{}", calls.len()), name, args.to_string()));
}

fn assert_no_secret(backend: &str, what: &str, text: &str) {
    assert!(
        !text.contains("SECRET-AT-REST"),
        "{backend}: {what} revealed a secret at rest:\n{text}"
    );
}

#[test]
fn home_secrets_are_refused_by_every_file_tool_and_hidden_from_jailed_bash() {
    for backend in backends() {
        let home = Dir::outside_temp();
        let ws = Dir::outside_temp();
        let secrets = plant_home_secrets(&home);
        let reasonix_home = home.join(".reasonix");
        symlink(&reasonix_home, ws.join("peek")).unwrap();
        fs::hard_link(
            reasonix_home.join("mcp-auth/server.json"),
            ws.join("linked.txt"),
        )
        .unwrap();
        let mut calls: Vec<(String, &str, String)> = Vec::new();
        for path in &secrets {
            push(&mut calls, "read_file", serde_json::json!({ "path": path }));
            push(
                &mut calls,
                "view_image",
                serde_json::json!({ "path": path }),
            );
            push(
                &mut calls,
                "edit_file",
                serde_json::json!({"path": path, "old_string": "SECRET", "new_string": "x"}),
            );
        }
        for path in ["peek/mcp-auth/server.json", "peek/.env", "linked.txt"] {
            push(&mut calls, "read_file", serde_json::json!({ "path": path }));
        }
        let home_dir = reasonix_home.display().to_string();
        push(
            &mut calls,
            "grep",
            serde_json::json!({"pattern": "SECRET-AT-RES[T]", "path": home_dir, "output_mode": "content"}),
        );
        push(
            &mut calls,
            "grep",
            serde_json::json!({"pattern": "SECRET-AT-RES[T]", "output_mode": "content"}),
        );
        let listings_from = calls.len();
        push(
            &mut calls,
            "glob",
            serde_json::json!({"pattern": "**/*", "path": home_dir}),
        );
        push(
            &mut calls,
            "glob",
            serde_json::json!({"pattern": "**/*.json"}),
        );
        push(&mut calls, "ls", serde_json::json!({ "path": home_dir }));
        push(
            &mut calls,
            "ls",
            serde_json::json!({ "path": format!("{home_dir}/mcp-auth") }),
        );
        let listings_to = calls.len();
        let cat = format!(
            "cat {} peek/mcp-auth/server.json linked.txt; grep -r 'SECRET-AT-RES[T]' {home_dir}; \
             cp -r {home_dir} copied; grep -r 'SECRET-AT-RES[T]' copied",
            secrets.join(" ")
        );
        push(&mut calls, "bash", serde_json::json!({ "command": cat }));
        let controls_from = calls.len();
        push(
            &mut calls,
            "read_file",
            serde_json::json!({"path": reasonix_home.join("skills/demo/SKILL.md")}),
        );
        push(
            &mut calls,
            "bash",
            serde_json::json!({"command": format!("cat {home_dir}/skills/demo/SKILL.md")}),
        );
        let refs: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(id, name, args)| (id.as_str(), *name, args.as_str()))
            .collect();
        let (out, results) = model_calls(
            &home,
            ws.path(),
            &format!("{}{SECRET_CONFIG_LINE}", sandbox_table(backend)),
            &refs,
            &["--permission-mode", "yolo"],
        );
        let name = backend.name();
        assert_eq!(out.code, 0, "{name}: {out:?}");
        assert_eq!(results.len(), calls.len(), "{name}: {results:?}");
        for (i, result) in results.iter().enumerate() {
            let what = format!("{} {}", calls[i].1, calls[i].2);
            assert_no_secret(name, &what, result);
            if (listings_from..listings_to).contains(&i) {
                for listed in [
                    "server.json",
                    "serve-auth",
                    "mcp-grants",
                    "trusted-workspaces",
                ] {
                    assert!(
                        !result.contains(listed),
                        "{name}: {what} listed the secret {listed}: {result}"
                    );
                }
            }
        }
        for result in &results[controls_from..] {
            assert!(
                result.contains("CONTROL-SKILL-VISIBLE"),
                "{name}: the home's non-secret files must stay readable: {result}"
            );
        }
        for (rel, content) in HOME_SECRETS {
            assert_eq!(&home.read(rel), content, "{name}: {rel} was changed");
        }
        // The private TMPDIR of the run's jailed commands went with the run.
        let left: Vec<_> = fs::read_dir(reasonix_home.join("tmp"))
            .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{name}: temp directories left: {left:?}");
    }
}

#[test]
fn a_jailed_mcp_server_cannot_read_the_secrets_of_the_reasonix_home() {
    for backend in backends() {
        let home = Dir::outside_temp();
        let ws = Dir::outside_temp();
        let plugin = format!(
            "[[plugins]]\nname = \"io\"\ncommand = {:?}\nargs = [\"--io-tools\"]\n",
            env!("CARGO_BIN_EXE_reasonix-plugin-example")
        );
        crate::util::use_fake_provider(
            &home,
            "http://127.0.0.1:9",
            &format!("{plugin}\n{}{SECRET_CONFIG_LINE}", sandbox_table(backend)),
        );
        let secrets = plant_home_secrets(&home);
        let read = |path: &str| {
            run(reasonix(&home, ws.path())
                .args(["mcp", "call", "io", "read_file"])
                .arg(serde_json::json!({ "path": path }).to_string())
                .env("FAKE_API_KEY", "k"))
        };
        for path in &secrets {
            let out = read(path);
            assert_no_secret(
                backend.name(),
                &format!("the jailed server reading {path}"),
                &format!("{}{}", out.stdout, out.stderr),
            );
        }
        let control = read(&home.join(SKILL.0).display().to_string());
        assert!(
            control.stdout.contains("CONTROL-SKILL-VISIBLE"),
            "{}: {control:?}",
            backend.name()
        );
    }
}

#[test]
fn an_at_reference_cannot_attach_a_secret_of_the_reasonix_home() {
    let home = Dir::outside_temp();
    let ws = Dir::outside_temp();
    let server = FakeOpenAI::start(vec![Reply::text("done")]);
    config(&home, &server.base_url(), SECRET_CONFIG_LINE);
    let secrets = plant_home_secrets(&home);
    symlink(home.join(".reasonix"), ws.join("peek")).unwrap();
    ws.write("visible.txt", "CONTROL-REFERENCE-VISIBLE\n");
    let mut prompt = String::from("look at @visible.txt @peek/mcp-auth/server.json");
    for path in &secrets {
        prompt.push_str(&format!(" @{path}"));
    }
    let out = run(reasonix(&home, ws.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", &prompt]));
    assert_eq!(out.code, 0, "{out:?}");
    let body = &server.requests()[0].body;
    let sent = body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(sent.contains("CONTROL-REFERENCE-VISIBLE"), "{sent}");
    assert_no_secret("any backend", "an @ reference", &sent);
}

/// A deny rule on a command cannot be evaded by wrapping the command deeper than the shell
/// analysis unwraps it (wrappers, `eval`, `find -exec`), even where an allow rule grants the
/// outer wrapper: past its bounds a command counts as matching every restriction on bash.
#[test]
fn a_deny_rule_holds_however_deep_the_command_is_wrapped() {
    let wrapped = [
        "nice ".repeat(12) + "rm -f victim.txt",
        "eval ".repeat(8) + "rm -f victim.txt",
        "find . -maxdepth 0 -exec ".repeat(8) + "rm -f victim.txt ;",
    ];
    for command in wrapped {
        let home = Dir::new();
        let ws = Dir::new();
        ws.write("victim.txt", "keep me\n");
        let args = serde_json::json!({ "command": command }).to_string();
        let (out, results) = model_calls(
            &home,
            ws.path(),
            "",
            &[("c1", "bash", &args)],
            &["--permission-mode", "yolo", "--deny", "Bash(rm:*)"],
        );
        assert_eq!(out.code, 0, "{out:?}");
        assert!(
            ws.path().join("victim.txt").exists(),
            "{command:?} ran past the deny rule: {results:?}"
        );
        assert!(results[0].contains("blocked by rule"), "{results:?}");
    }
}
