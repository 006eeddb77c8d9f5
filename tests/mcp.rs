//! MCP end to end: the real `reasonix` binary against the reference server
//! (`reasonix-plugin-example`, built with the crate) over stdio and streamable HTTP, misbehaving
//! servers written as shell scripts, launch grants for project servers, `reasonix mcp list` and
//! `call`, and, when installed, the official SDKs' reference servers.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

fn example() -> &'static str {
    env!("CARGO_BIN_EXE_reasonix-plugin-example")
}

/// A child process killed when the test ends.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the example in HTTP mode on a free loopback port; returns it and its URL.
fn example_http(extra: &[&str]) -> (Background, String) {
    example_http_at("127.0.0.1:0", extra, Stdio::null())
}

fn example_http_at(addr: &str, extra: &[&str], stderr: Stdio) -> (Background, String) {
    let mut child = Command::new(example())
        .args(["--http", addr])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start the example server");
    let stdout = child.stdout.take().expect("example stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the listening line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    (Background(child), url)
}

fn toml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn stdio_plugin(name: &str, command: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| toml_str(a)).collect();
    format!(
        "[[plugins]]\nname = {}\ncommand = {}\nargs = [{}]\n{extra}\n",
        toml_str(name),
        toml_str(command),
        args.join(", ")
    )
}

fn http_plugin(name: &str, url: &str) -> String {
    format!(
        "[[plugins]]\nname = {}\ntype = \"http\"\nurl = {}\n",
        toml_str(name),
        toml_str(url)
    )
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn first_user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[test]
fn run_uses_tools_from_a_stdio_and_an_http_server_in_one_session() {
    let (_http, url) = example_http(&[]);
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[
            ("c1", "mcp__local__wordcount", r#"{"text":"one two three"}"#),
            ("c2", "mcp__remote__echo", r#"{"text":"over http"}"#),
            ("c3", "mcp__remote__wordcount", r#"{"text":"a"}"#),
        ]),
        Reply::text("Both servers answered."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    let plugins = format!(
        "{}{}",
        stdio_plugin("local", example(), &["--page-size", "1"], ""),
        http_plugin("remote", &url)
    );
    use_fake_provider(&home, &server.base_url(), &plugins);
    let out = run(reasonix(&home, work.path()).args(["run", "count and echo"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Both servers answered.\n");
    let requests = server.wait_for_requests(2);
    let names = tool_names(&requests[0].body);
    for expected in [
        "mcp__local__echo",
        "mcp__local__wordcount",
        "mcp__remote__echo",
        "mcp__remote__wordcount",
        "read_file",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    let results = tool_results(&requests[1].body);
    assert_eq!(
        results,
        vec![
            ("c1".to_string(), "3 words".to_string()),
            ("c2".to_string(), "over http".to_string()),
            ("c3".to_string(), "1 word".to_string()),
        ]
    );
    assert!(server.pairing_violations().is_empty());
}

#[test]
fn a_changed_tool_list_reaches_the_model_before_its_next_request() {
    let (_http, url) = example_http(&["--dynamic-tools"]);
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[
            ("c1", "mcp__local__enable_extra", "{}"),
            ("c2", "mcp__remote__enable_extra", "{}"),
        ]),
        Reply::tool_calls(&[
            ("c3", "mcp__local__reverse", r#"{"text":"stdio"}"#),
            ("c4", "mcp__remote__reverse", r#"{"text":"http"}"#),
        ]),
        Reply::text("Reversed."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    let plugins = format!(
        "{}{}",
        stdio_plugin("local", example(), &["--dynamic-tools"], ""),
        http_plugin("remote", &url)
    );
    use_fake_provider(&home, &server.base_url(), &plugins);
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--output-format",
        "stream-json",
        "add tools",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(3);
    let reverse = ["mcp__local__reverse", "mcp__remote__reverse"];
    let first = tool_names(&requests[0].body);
    assert!(
        first.iter().any(|n| n == "mcp__local__enable_extra"),
        "{first:?}"
    );
    assert!(
        !first.iter().any(|n| reverse.contains(&n.as_str())),
        "{first:?}"
    );
    let second = tool_names(&requests[1].body);
    for name in reverse {
        assert!(
            second.iter().any(|n| n == name),
            "{name} missing from {second:?}"
        );
    }
    // The new tools run, and the gate knows their approval mode: a writer of a server from
    // the user's config is approved outright, where an unknown tool would be an Ask that the
    // headless run resolves with a permission event.
    assert_eq!(
        tool_results(&requests[2].body)[2..],
        [
            ("c3".to_string(), "oidts".to_string()),
            ("c4".to_string(), "ptth".to_string())
        ]
    );
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("stream-json line"))
        .collect();
    let resets: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "notice" && e["kind"] == "cache_prefix_changed")
        .collect();
    let permissions: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permission")
        .collect();
    assert!(permissions.is_empty(), "{permissions:?}");
    assert_eq!(resets.len(), 1, "one reset for both servers: {resets:?}");
    assert_eq!(resets[0]["reason"], "tools");
    assert_eq!(resets[0]["first_changed"], 0);
    let changed: Vec<&str> = events
        .iter()
        .filter_map(|e| e["message"].as_str())
        .filter(|m| m.starts_with("tools changed"))
        .collect();
    assert_eq!(
        changed,
        ["tools changed (MCP server `local`, MCP server `remote`): added `mcp__local__reverse`, \
          `mcp__remote__reverse`; the model sees the new list from its next request"]
    );
    // The reset comes after the round that changed the tools and before the next request.
    let position = |kind: &dyn Fn(&Value) -> bool| events.iter().position(kind).unwrap();
    let reset_at = position(&|e| e["kind"] == "cache_prefix_changed");
    let enabled_at = position(&|e| e["type"] == "tool_result" && e["id"] == "c2");
    let reversed_at = position(&|e| e["type"] == "tool_use" && e["id"] == "c3");
    assert!(
        enabled_at < reset_at && reset_at < reversed_at,
        "{events:?}"
    );
    assert!(server.pairing_violations().is_empty());
}

#[test]
fn plain_json_http_replies_work_too() {
    let (_http, url) = example_http(&["--json-replies"]);
    let home = Dir::new();
    let work = Dir::new();
    home.write(".reasonix/config.toml", &http_plugin("j", &url));
    let out = run(reasonix(&home, work.path()).args([
        "mcp",
        "call",
        "j",
        "echo",
        r#"{"text":"json body"}"#,
    ]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "json body\n"),
        "{out:?}"
    );
}

/// A home whose MCP server `docs` is the example plugin (a `review` prompt, resources), with
/// the fake model answering `replies` "ok"s.
fn with_docs_server(replies: usize) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start((0..replies).map(|_| Reply::text("ok")).collect());
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(
        &home,
        &server.base_url(),
        &stdio_plugin("docs", example(), &[], ""),
    );
    (server, home, work)
}

#[test]
fn mcp_prompts_and_resources_expand_the_run_prompt() {
    let (server, home, work) = with_docs_server(3);
    let out = run(reasonix(&home, work.path()).args(["run", "/mcp__docs__review error handling"]));
    assert_eq!(out.code, 0, "{out:?}");
    let out =
        run(reasonix(&home, work.path())
            .args(["run", "Summarise @docs:doc://style-guide, briefly."]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    assert_eq!(
        first_user_message(&requests[0].body),
        "Review the current changes against doc://style-guide. Focus on error handling."
    );
    let second = first_user_message(&requests[1].body);
    assert!(
        second.starts_with("<resource ref=\"docs:doc://style-guide\">\n# Style guide\n"),
        "{second}"
    );
    assert!(
        second.ends_with("</resource>\n\nSummarise @docs:doc://style-guide, briefly."),
        "{second}"
    );

    let out = run(reasonix(&home, work.path()).args(["run", "/mcp__docs__nope x"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("/mcp__docs__nope"), "{out:?}");
    let out = run(reasonix(&home, work.path()).args(["run", "read @docs:doc://missing now"]));
    assert_eq!(
        out.code, 0,
        "an unreadable resource is only a notice: {out:?}"
    );
    assert!(
        out.stderr.contains("cannot read @docs:doc://missing: "),
        "{out:?}"
    );
}

/// Answers `initialize` and `tools/list` correctly, then dies on the first `tools/call`.
const DIES_ON_CALL: &str = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}'; read l; read l; echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"boom"}]}}'; read l; echo 'dying' >&2; exit 7"#;

#[test]
fn misbehaving_servers_cost_only_their_tools_and_a_notice() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[
            ("c1", "mcp__dies__boom", "{}"),
            ("c2", "mcp__good__echo", r#"{"text":"still here"}"#),
        ]),
        Reply::text("Survived."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    let quick = "startup_timeout_seconds = 2";
    let plugins = [
        stdio_plugin("crash", "sh", &["-c", "echo 'fatal: no config' >&2; exit 3"], quick),
        stdio_plugin(
            "garbage",
            "sh",
            &["-c", "while read l; do echo \"hello, I am not JSON-RPC\"; done"],
            quick,
        ),
        stdio_plugin("silent", "sh", &["-c", "cat > /dev/null"], quick),
        stdio_plugin(
            "wrongid",
            "sh",
            &[
                "-c",
                r#"read l; echo '{"jsonrpc":"2.0","id":999,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"w","version":"1"}}}'; cat > /dev/null"#,
            ],
            quick,
        ),
        stdio_plugin("missing", "/nonexistent/mcp-server", &[], quick),
        stdio_plugin("dies", "sh", &["-c", DIES_ON_CALL], quick),
        stdio_plugin("good", example(), &[], ""),
    ]
    .concat();
    use_fake_provider(&home, &server.base_url(), &plugins);
    let out = run(reasonix(&home, work.path()).args(["run", "go"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Survived.\n");
    for (name, why) in [
        ("crash", "exited with status 3; stderr: fatal: no config"),
        ("garbage", "`initialize` got no answer within 2 s"),
        ("silent", "`initialize` got no answer within 2 s"),
        ("wrongid", "`initialize` got no answer within 2 s"),
        ("missing", "cannot run `/nonexistent/mcp-server`"),
    ] {
        let expected = format!("mcp: server `{name}` failed to start:");
        let line = out
            .stderr
            .lines()
            .find(|l| l.contains(&expected))
            .unwrap_or_else(|| panic!("no notice for `{name}`: {out:?}"));
        assert!(
            line.contains(why),
            "notice for `{name}` lacks `{why}`: {line}"
        );
        assert!(line.ends_with("its tools are unavailable"), "{line}");
    }
    let requests = server.wait_for_requests(2);
    let mut mcp_tools: Vec<String> = tool_names(&requests[0].body)
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    mcp_tools.sort();
    assert_eq!(
        mcp_tools,
        ["mcp__dies__boom", "mcp__good__echo", "mcp__good__wordcount"]
    );
    let results = tool_results(&requests[1].body);
    assert_eq!(results[1], ("c2".to_string(), "still here".to_string()));
    let (id, died) = &results[0];
    assert_eq!(id, "c1");
    assert!(
        died.contains("MCP server `dies`") && died.contains("exited with status 7"),
        "{died}"
    );
}

fn list(home: &Dir, cwd: &Path, extra: &[&str]) -> crate::util::Run {
    run(reasonix(home, cwd).args(["mcp", "list"]).args(extra))
}

fn status_line<'a>(out: &'a crate::util::Run, name: &str) -> &'a str {
    out.stdout
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row for {name}: {out:?}"))
}

#[test]
fn project_servers_need_trust_or_a_grant_for_their_exact_identity() {
    let home = Dir::new();
    let work = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &stdio_plugin("mine", example(), &[], ""),
    );
    let mcp_json = |args: &[&str]| {
        json!({"mcpServers": {"proj": {"command": example(), "args": args}}}).to_string()
    };
    work.write(".mcp.json", &mcp_json(&[]));

    let out = list(&home, work.path(), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(status_line(&out, "mine").contains("connected"), "{out:?}");
    assert!(status_line(&out, "proj").contains("not started"), "{out:?}");
    assert!(out.stderr.contains("--trust-project-mcp"), "{out:?}");

    let out = list(&home, work.path(), &["--trust-project-mcp"]);
    assert!(status_line(&out, "proj").contains("connected"), "{out:?}");

    // A grant stored by an earlier interactive approval, for this identity.
    let config = reasonix::config::Config {
        home: home.join(".reasonix"),
        ..Default::default()
    };
    let declared = reasonix::mcp::config::declared(&config, work.path());
    let spec = declared.servers.iter().find(|s| s.name == "proj").unwrap();
    reasonix::mcp::grants::GrantStore::new(&home.join(".reasonix"))
        .grant(work.path(), "proj", &spec.identity_hash())
        .unwrap();
    let out = list(&home, work.path(), &[]);
    assert!(status_line(&out, "proj").contains("connected"), "{out:?}");

    // Changing the arguments changes the identity: the grant no longer applies.
    work.write(".mcp.json", &mcp_json(&["--page-size", "1"]));
    let out = list(&home, work.path(), &[]);
    assert!(status_line(&out, "proj").contains("not started"), "{out:?}");
}

#[test]
fn a_project_toml_server_also_needs_a_grant_and_user_config_wins_a_name_clash() {
    let home = Dir::new();
    let work = Dir::new();
    work.write("reasonix.toml", &stdio_plugin("p", example(), &[], ""));
    work.write(
        ".mcp.json",
        &json!({"mcpServers": {"p": {"command": "/nonexistent"}, "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}).to_string(),
    );
    let out = list(&home, work.path(), &[]);
    assert!(status_line(&out, "p").contains("not started"), "{out:?}");
    assert!(out.stdout.contains("declared in reasonix.toml"), "{out:?}");
    let out = list(&home, work.path(), &["--trust-project-mcp"]);
    assert!(
        status_line(&out, "p").contains("connected"),
        "reasonix.toml wins: {out:?}"
    );
    assert!(
        out.stderr.contains("`legacy`") && out.stderr.contains("use type `http`"),
        "{out:?}"
    );
}

#[test]
fn mcp_call_prints_the_result_and_fails_on_tool_errors() {
    let home = Dir::new();
    let work = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &stdio_plugin("ex", example(), &[], ""),
    );
    let out = run(reasonix(&home, work.path()).args([
        "mcp",
        "call",
        "ex",
        "wordcount",
        r#"{"text":"a b"}"#,
    ]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "2 words\n"), "{out:?}");
    let out = run(reasonix(&home, work.path()).args([
        "mcp",
        "call",
        "ex",
        "mcp__ex__echo",
        r#"{"text":"by registry name"}"#,
    ]));
    assert_eq!(out.stdout, "by registry name\n", "{out:?}");
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "ex", "echo"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("`text` argument is required"),
        "{out:?}"
    );
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "nope", "echo"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("no MCP server named `nope`"), "{out:?}");
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "ex", "frobnicate"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("has no tool `frobnicate`; it offers: echo, wordcount"),
        "an unknown tool is not one the server withdrew: {out:?}"
    );
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "ex", "echo", "{bad"]));
    assert_eq!(out.code, 2, "{out:?}");
    let out = run(reasonix(&home, work.path()).args(["mcp", "list"]));
    let row = status_line(&out, "ex");
    // The SANDBOX column follows; `mcp_list_shows_each_servers_sandbox` checks it.
    let cells: Vec<&str> = row.split_whitespace().take(7).collect();
    assert_eq!(
        cells,
        ["ex", "stdio", "connected", "2025-11-25", "2", "1", "1"],
        "{out:?}"
    );
}

#[test]
fn stdio_servers_do_not_inherit_provider_keys_unless_their_env_names_them() {
    let server = FakeOpenAI::start(vec![]);
    let home = Dir::new();
    let work = Dir::new();
    let dump = |file: &str| format!("env > {file}");
    let plugins = [
        stdio_plugin("plain", "sh", &["-c", &dump("plain.env")], ""),
        stdio_plugin(
            "named",
            "sh",
            &["-c", &dump("named.env")],
            "env = { FAKE_API_KEY = \"${FAKE_API_KEY}\", OTHER = \"x${REASONIX_TEST_MCP_VAR:-dflt}\" }",
        ),
    ]
    .concat();
    use_fake_provider(&home, &server.base_url(), &plugins);
    let out = run(reasonix(&home, work.path())
        .args(["mcp", "list"])
        .env("FAKE_API_KEY", "sk-secret"));
    // The scripts exit after dumping their environment, so both servers fail to start and
    // `mcp list` says so with its exit code.
    assert_eq!(out.code, 1, "{out:?}");
    let plain = work.read("plain.env");
    let named = work.read("named.env");
    assert!(!plain.contains("sk-secret"), "{plain}");
    assert!(named.contains("FAKE_API_KEY=sk-secret"), "{named}");
    assert!(named.contains("OTHER=xdflt"), "{named}");
}

// --- Interoperability with the official SDKs' reference servers -------------------------

/// `REASONIX_REQUIRE_MCP_INTEROP=1` (CI) turns a missing reference server into a failure.
fn skip_or_fail(what: &str, install: &str) {
    let message = format!("{what} is not installed; install it with `{install}` to run this test");
    if std::env::var_os("REASONIX_REQUIRE_MCP_INTEROP").is_some() {
        panic!("{message}");
    }
    println!("skipping: {message}");
}

/// How to start server-everything: the global bin, else the package's entry under npm's
/// global root; None, after `skip_or_fail`, when it is not installed.
pub(crate) fn server_everything() -> Option<(String, Vec<String>)> {
    let found = find_server_everything();
    if found.is_none() {
        skip_or_fail(
            "@modelcontextprotocol/server-everything",
            "npm install -g @modelcontextprotocol/server-everything",
        );
    }
    found
}

fn find_server_everything() -> Option<(String, Vec<String>)> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("mcp-server-everything"))
            .find(|p| p.is_file())
    });
    if let Some(bin) = on_path {
        return Some(("node".into(), vec![bin.to_string_lossy().into_owned()]));
    }
    let root = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let entry = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim())
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    entry
        .is_file()
        .then(|| ("node".into(), vec![entry.to_string_lossy().into_owned()]))
}

fn everything_config(home: &Dir, plugin: &str) -> reasonix::config::Config {
    home.write(".reasonix/config.toml", plugin);
    let options = reasonix::config::LoadOptions {
        home: home.join(".reasonix"),
        cwd: home.path().to_path_buf(),
        extra: None,
        trust_project: false,
        strict: false,
        claude_setting_sources: None,
    };
    reasonix::config::load(&options)
        .expect("config loads")
        .config
}

/// Exercises one connected server-everything through the library surface.
fn exercise_everything(config: &reasonix::config::Config, cwd: &Path) {
    use reasonix::mcp::client::ServerEvent;
    use reasonix::mcp::McpHost;
    let (events_tx, events_rx) = mpsc::channel();
    let mut notices = Vec::new();
    let options = reasonix::mcp::McpOptions {
        events: Some(events_tx),
        ..Default::default()
    };
    let handle = reasonix::mcp::start(config, cwd, options, &mut |e| notices.push(e));
    assert!(notices.is_empty(), "{notices:?}");
    let server = handle.server("everything").expect("connected");
    let tools = server.tools();
    // Listing follows every page; the tools registered after the roots capability (sent
    // with list_changed) appear once the list is fetched again before a call.
    for name in [
        "echo",
        "get-tiny-image",
        "get-sum",
        "trigger-long-running-operation",
    ] {
        assert!(tools.iter().any(|t| t.name == name), "{name} missing");
    }
    let cancel = reasonix::cancel::CancelToken::new();
    let sum = server
        .call_tool("get-sum", &json!({"a": 2, "b": 40}), &cancel)
        .unwrap();
    assert!(sum.text.contains("42"), "{sum:?}");
    let image = server
        .call_tool("get-tiny-image", &json!({}), &cancel)
        .unwrap();
    assert!(image.text.contains("[image: image/png,"), "{}", image.text);
    assert!(
        image.text.lines().count() >= 2,
        "mixed content: {}",
        image.text
    );
    let roots = server
        .call_tool("get-roots-list", &json!({}), &cancel)
        .unwrap();
    assert!(roots.text.contains("file://"), "{}", roots.text);
    // The elicitation capability makes the server offer its form; with no one to ask, the
    // request is declined cleanly and a warning event says so.
    let asked = server
        .call_tool("trigger-elicitation-request", &json!({}), &cancel)
        .unwrap();
    assert!(asked.text.contains("decline"), "{}", asked.text);

    let host = reasonix::mcp::Host::new(handle);
    let turn = |typed: &str| {
        use reasonix::command::input::{interpret, Input};
        let catalog = reasonix::command::Catalog::new(Vec::new(), host.prompts());
        match interpret(typed, &catalog) {
            Some(Ok(Input::Message(message))) => {
                let sandbox = reasonix::sandbox::Policy::workspace_only(cwd);
                message.prepare(cwd, &sandbox, &host).unwrap()
            }
            other => panic!("{typed}: {other:?}"),
        }
    };
    let expansion = turn("/mcp__everything__args-prompt Paris France");
    assert!(
        expansion.text.contains("Paris, France"),
        "{}",
        expansion.text
    );
    let resources = server.resources().unwrap();
    let uri = resources
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .find(|u| u.ends_with(".md"))
        .expect("a markdown resource")
        .to_string();
    let expansion = turn(&format!("read @everything:{uri}"));
    assert!(expansion.notices.is_empty(), "{:?}", expansion.notices);
    assert!(expansion
        .text
        .starts_with(&format!("<resource ref=\"everything:{uri}\">")));

    let done = server
        .call_tool(
            "trigger-long-running-operation",
            &json!({"duration": 0.2, "steps": 2}),
            &cancel,
        )
        .unwrap();
    assert!(done.text.contains("completed"), "{done:?}");
    let events: Vec<ServerEvent> = events_rx.try_iter().collect();
    let progress: Vec<&ServerEvent> = events
        .iter()
        .filter(|e| matches!(e, ServerEvent::Progress { .. }))
        .collect();
    assert_eq!(progress.len(), 2, "{progress:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ServerEvent::Log { level, text, .. }
            if level == "warning" && text.contains("declined a request for input"))),
        "the decline is reported: {events:?}"
    );
}

#[test]
fn interop_server_everything_over_stdio() {
    let Some((program, args)) = server_everything() else {
        return;
    };
    let home = Dir::new();
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.push("stdio");
    let config = everything_config(&home, &stdio_plugin("everything", &program, &all, ""));
    exercise_everything(&config, home.path());
}

/// server-filesystem's entry under npm's global root.
fn server_filesystem() -> Option<String> {
    let root = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let entry = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim())
        .join("@modelcontextprotocol/server-filesystem/dist/index.js");
    entry
        .is_file()
        .then(|| entry.to_string_lossy().into_owned())
}

/// Regression: reasonix answered `roots/list` with the workspace alone, and server-filesystem
/// replaces the directories it was started with by the client's roots, so `/X` configured
/// became "Access denied: /X not in <workspace>".
#[test]
fn interop_server_filesystem_keeps_a_configured_directory_outside_the_workspace() {
    let Some(entry) = server_filesystem() else {
        return skip_or_fail(
            "@modelcontextprotocol/server-filesystem",
            "npm install -g @modelcontextprotocol/server-filesystem",
        );
    };
    let home = Dir::new();
    let work = Dir::new();
    let outside = Dir::new();
    let note = outside.write("note.txt", "kept outside");
    let dir = outside.path().to_string_lossy().into_owned();
    // First with the default roots (the workspace). Then with `roots = []`, which does not
    // declare the capability: the server keeps its own directories. (A list of roots
    // replaces them, but server-filesystem applies it asynchronously after answering, so no
    // call can be sure to see it; `the_roots_setting_reaches_the_server` checks the lists.)
    for settings in ["sandbox = \"off\"", "sandbox = \"off\"\nroots = []"] {
        home.write(
            ".reasonix/config.toml",
            &stdio_plugin("fs", "node", &[&entry, &dir], settings),
        );
        for _ in 0..3 {
            let out = mcp_call(
                &home,
                work.path(),
                "fs",
                "read_text_file",
                json!({"path": note.to_string_lossy()}),
            );
            assert_eq!(
                (out.code, out.stdout.as_str()),
                (0, "kept outside\n"),
                "{settings}: {out:?}"
            );
        }
        let out = mcp_call(
            &home,
            work.path(),
            "fs",
            "list_allowed_directories",
            json!({}),
        );
        assert!(out.stdout.contains(&dir), "{settings}: {out:?}");
    }
}

/// server-everything asks for the roots when its `get-roots-list` tool is called, and offers
/// that tool only to a client that declares the roots capability.
#[test]
fn the_roots_setting_reaches_the_server() {
    let Some((program, args)) = server_everything() else {
        return;
    };
    let home = Dir::new();
    let work = Dir::new();
    let data = Dir::new();
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.push("stdio");
    let roots_of = |extra: &str| {
        home.write(
            ".reasonix/config.toml",
            &stdio_plugin(
                "everything",
                &program,
                &all,
                &format!("sandbox = \"off\"\n{extra}"),
            ),
        );
        mcp_call(
            &home,
            work.path(),
            "everything",
            "get-roots-list",
            json!({}),
        )
    };
    let uri = |dir: &Dir| format!("file://{}", dir.path().display());
    // Default: the workspace (the args name no directory).
    let out = roots_of("");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&uri(&work)), "{out:?}");
    assert!(!out.stdout.contains(&uri(&data)), "{out:?}");
    // A list: exactly those.
    let out = roots_of(&format!("roots = [{:?}]", data.path().to_string_lossy()));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&uri(&data)), "{out:?}");
    assert!(!out.stdout.contains(&uri(&work)), "{out:?}");
    // `[]`: no capability, so no such tool.
    let out = roots_of("roots = []");
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("has no tool `get-roots-list`"),
        "{out:?}"
    );
}

/// Forces Node servers onto the loopback interface (server-everything listens on all).
const LOOPBACK_ONLY: &str = r#"
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const callbacks = args.slice(1).filter((a) => typeof a === 'function');
    return listen.call(this, Number(args[0]), '127.0.0.1', ...callbacks);
  }
  return listen.apply(this, args);
};
"#;

#[test]
fn interop_server_everything_over_streamable_http() {
    let Some((program, args)) = server_everything() else {
        return;
    };
    let home = Dir::new();
    let preload = home.write("loopback.cjs", LOOPBACK_ONLY);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(&program)
        .arg("--require")
        .arg(&preload)
        .args(&args)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start server-everything");
    let stderr = child.stderr.take().unwrap();
    let _server = Background(child);
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening on port") {
                let _ = ready_tx.send(());
            }
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("server-everything did not start listening");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = everything_config(&home, &http_plugin("everything", &url));
    exercise_everything(&config, home.path());
}

#[test]
fn interop_mcp_server_time_from_pypi() {
    let found = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join("mcp-server-time").is_file())
    });
    if !found {
        return skip_or_fail("mcp-server-time", "pip install mcp-server-time");
    }
    let home = Dir::new();
    let work = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &stdio_plugin("time", "mcp-server-time", &["--local-timezone", "UTC"], ""),
    );
    let out = run(reasonix(&home, work.path()).args([
        "mcp",
        "call",
        "time",
        "convert_time",
        r#"{"source_timezone":"UTC","time":"12:00","target_timezone":"Asia/Tokyo"}"#,
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("Asia/Tokyo") && out.stdout.contains("21:00"),
        "{out:?}"
    );
}

/// Lists `rm` (destructiveHint) and `look` (readOnlyHint), then waits for end of input.
const ANNOTATED: &str = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"a","version":"1"}}}'; read l; read l; echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"rm","annotations":{"destructiveHint":true}},{"name":"look","annotations":{"readOnlyHint":true}}]}}'; cat > /dev/null"#;

#[test]
fn tool_annotations_reach_the_permission_gate() {
    use reasonix::permission::{Decision, Gate, Policy, PolicyGate, Posture};
    let home = Dir::new();
    let config = everything_config(
        &home,
        &stdio_plugin(
            "srv",
            "sh",
            &["-c", ANNOTATED],
            "tools = { look = { approval_mode = \"prompt\" } }",
        ),
    );
    let handle = reasonix::mcp::start(&config, home.path(), Default::default(), &mut |_| {});
    let mut registry = reasonix::tool::Registry::new();
    handle.register(&mut registry);
    assert!(registry.get("mcp__srv__look").unwrap().read_only());
    assert!(!registry.get("mcp__srv__rm").unwrap().read_only());
    let gate = |allow: &[&str]| {
        let mut policy = Policy::new(Decision::Ask, home.path().to_path_buf(), None);
        policy.allow = Policy::parse_rules(allow).unwrap();
        PolicyGate::new(policy, Posture::Ask, None).with_mcp(handle.tool_policies())
    };
    let args = json!({});
    let verdict = gate(&[]).check("mcp__srv__rm", false, &args);
    assert!(!verdict.allowed, "{verdict:?}");
    assert!(
        !gate(&["mcp__srv__rm"])
            .check("mcp__srv__rm", false, &args)
            .allowed,
        "headless, a destructive tool is refused even when an allow rule names it"
    );
    let verdict = gate(&[]).check("mcp__srv__look", true, &args);
    assert_eq!(verdict.rule.as_deref(), Some("approval_mode = prompt"));
}

#[test]
fn an_http_server_that_forgot_the_session_is_initialized_again_and_close_deletes_it() {
    let (first, url) = example_http(&[]);
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let home = Dir::new();
    let config = everything_config(&home, &http_plugin("remote", &url));
    let handle = reasonix::mcp::start(&config, home.path(), Default::default(), &mut |_| {});
    let server = handle.server("remote").expect("connected").clone();
    let cancel = reasonix::cancel::CancelToken::new();
    let echo = |text: &str| {
        server
            .call_tool("echo", &json!({ "text": text }), &cancel)
            .map(|o| o.text)
    };
    assert_eq!(echo("before").unwrap(), "before");
    // A restarted server knows no sessions: it answers 404 and we initialize again.
    drop(first);
    let mut child = example_http_at(&addr, &[], Stdio::piped()).0;
    let stderr = child.0.stderr.take().unwrap();
    let (lines_tx, lines_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    assert_eq!(echo("after").unwrap(), "after");
    drop(server);
    drop(handle);
    let line = lines_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the session was not deleted on close");
    assert_eq!(
        line,
        "reasonix-plugin-example: session example-session-1 deleted"
    );
}

/// Answers every launch question with `answer` and counts them.
struct Answer(reasonix::mcp::LaunchAnswer, std::sync::atomic::AtomicUsize);

impl reasonix::mcp::LaunchApprover for Answer {
    fn approve_launch(
        &self,
        request: &reasonix::mcp::LaunchRequest,
    ) -> reasonix::mcp::LaunchAnswer {
        assert!(
            request.detail.contains("reasonix-plugin-example"),
            "{request:?}"
        );
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0
    }
}

#[test]
fn an_interactive_always_answer_stores_a_grant_that_headless_runs_honour() {
    use reasonix::mcp::{LaunchAnswer, McpOptions};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let home = Dir::new();
    let work = Dir::new();
    work.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {"command": example()}}}).to_string(),
    );
    let config = reasonix::config::Config {
        home: home.join(".reasonix"),
        ..Default::default()
    };
    let start = |answer: Option<Arc<Answer>>| {
        let options = McpOptions {
            interactive: answer.is_some(),
            approver: answer.map(|a| a as Arc<dyn reasonix::mcp::LaunchApprover>),
            ..McpOptions::default()
        };
        let handle = reasonix::mcp::start(&config, work.path(), options, &mut |_| {});
        handle.server("proj").is_some()
    };
    let deny = Arc::new(Answer(LaunchAnswer::Deny, Default::default()));
    assert!(!start(Some(deny.clone())));
    let once = Arc::new(Answer(LaunchAnswer::Session, Default::default()));
    assert!(start(Some(once.clone())));
    assert!(!start(None), "`once` stores nothing");
    let always = Arc::new(Answer(LaunchAnswer::Always, Default::default()));
    assert!(start(Some(always.clone())));
    assert!(start(None), "headless honours the stored grant");
    assert!(
        start(Some(deny.clone())),
        "a granted identity is not asked again"
    );
    assert_eq!(deny.1.load(Ordering::SeqCst), 1);
    assert_eq!(always.1.load(Ordering::SeqCst), 1);
}

/// One request to the scripted HTTP server.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A loopback HTTP server answering each request with `handler`, reporting every request.
fn scripted_http(
    handler: impl Fn(&Seen) -> (u16, Vec<(String, String)>, String) + Send + Sync + 'static,
) -> (String, mpsc::Receiver<Seen>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (seen_tx, seen_rx) = mpsc::channel();
    let handler = std::sync::Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let (handler, seen_tx) = (handler.clone(), seen_tx.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let method = line.split_whitespace().next().unwrap_or("").to_string();
                let mut headers = Vec::new();
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    match header.trim().split_once(':') {
                        Some((n, v)) => headers.push((n.trim().to_string(), v.trim().to_string())),
                        None => break,
                    }
                }
                let length = headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let seen = Seen {
                    method,
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                };
                let (status, extra, body) = handler(&seen);
                let _ = seen_tx.send(seen);
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (n, v) in extra {
                    head.push_str(&format!("{n}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let mut stream = &stream;
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            });
        }
    });
    (url, seen_rx)
}

fn sse_headers() -> Vec<(String, String)> {
    vec![("Content-Type".into(), "text/event-stream".into())]
}

fn sse_message(id: &str, message: Value) -> String {
    format!("event: message\nid: {id}\ndata: {message}\n\n")
}

#[test]
fn streamable_http_follows_the_sdk_servers_behaviour() {
    let standing_opened = std::sync::atomic::AtomicBool::new(false);
    let (url, seen) = scripted_http(move |req| {
        let method = req.body["method"].as_str().unwrap_or("");
        let id = req.body["id"].clone();
        match (req.method.as_str(), method, req.header("last-event-id")) {
            ("POST", "initialize", _) => {
                let mut headers = sse_headers();
                headers.push(("Mcp-Session-Id".into(), "s-1".into()));
                // A 2025-11-25 priming event first: an id and empty data.
                let body = format!(
                    "id: a1\nretry: 10\ndata: \n\n{}",
                    sse_message(
                        "a2",
                        json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "1"}}})
                    )
                );
                (200, headers, body)
            }
            // The server cuts the stream after priming; the reply comes on a resumed GET.
            ("POST", "tools/list", _) => {
                (200, sse_headers(), "id: t1\nretry: 10\ndata: \n\n".into())
            }
            ("GET", _, Some("t1")) => (
                200,
                sse_headers(),
                sse_message(
                    "t2",
                    json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "resumed"}]}}),
                ),
            ),
            // The standing stream carries a request the server makes on its own.
            ("GET", _, None)
                if !standing_opened.swap(true, std::sync::atomic::Ordering::SeqCst) =>
            {
                (
                    200,
                    sse_headers(),
                    format!(
                        "data: {}\n\n",
                        json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"})
                    ),
                )
            }
            ("GET", _, _) => (405, Vec::new(), String::new()),
            ("DELETE", _, _) => (405, Vec::new(), String::new()),
            // Notifications and our answers: accepted, no body (labelled JSON, as Python does).
            _ => (
                202,
                vec![("Content-Type".into(), "application/json".into())],
                String::new(),
            ),
        }
    });
    let home = Dir::new();
    let plugin = format!(
        "{}headers = {{ Authorization = \"Bearer ${{REASONIX_TEST_UNSET_TOKEN:-tok}}\" }}\n",
        http_plugin("scripted", &url)
    );
    let config = everything_config(&home, &plugin);
    let mut notices = Vec::new();
    let handle = reasonix::mcp::start(&config, home.path(), Default::default(), &mut |e| {
        notices.push(e)
    });
    assert!(notices.is_empty(), "{notices:?}");
    let server = handle.server("scripted").expect("connected");
    assert_eq!(server.info().protocol_version, "2025-06-18");
    assert_eq!(server.tools()[0].name, "resumed");
    let mut requests: Vec<Seen> = Vec::new();
    while !requests
        .iter()
        .any(|r| r.body["id"] == 0 && r.body.get("result").is_some())
    {
        requests.push(
            seen.recv_timeout(Duration::from_secs(30))
                .expect("no answer to roots/list"),
        );
    }
    drop(handle);
    while !requests.iter().any(|r| r.method == "DELETE") {
        requests.push(
            seen.recv_timeout(Duration::from_secs(30))
                .expect("no DELETE"),
        );
    }
    let roots = requests
        .iter()
        .find(|r| r.body["id"] == 0)
        .map(|r| r.body["result"]["roots"][0]["uri"].clone());
    assert_eq!(
        roots,
        Some(json!(format!("file://{}", home.path().display())))
    );
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer tok"),
            "{request:?}"
        );
        match request.method.as_str() {
            "POST" => assert_eq!(
                request.header("accept"),
                Some("application/json, text/event-stream")
            ),
            _ => assert_eq!(
                request.header("accept").unwrap_or("text/event-stream"),
                "text/event-stream"
            ),
        }
        if request.body["method"] != "initialize" {
            assert_eq!(request.header("mcp-session-id"), Some("s-1"), "{request:?}");
        }
        if request.method == "POST" && request.body["method"] != "initialize" {
            assert_eq!(
                request.header("mcp-protocol-version"),
                Some("2025-06-18"),
                "{request:?}"
            );
        }
    }
}

#[test]
fn the_chat_host_reports_every_server_and_renders_prompts_and_resources() {
    use reasonix::mcp::McpHost;
    use std::collections::BTreeMap;
    let home = Dir::new();
    let work = Dir::new();
    work.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {"command": example()}}}).to_string(),
    );
    home.write(
        ".reasonix/config.toml",
        &format!(
            "{}\n{}",
            stdio_plugin("docs", example(), &[], ""),
            stdio_plugin("broken", "/nonexistent/server", &[], "")
        ),
    );
    let config = reasonix::config::load(&reasonix::config::LoadOptions {
        home: home.join(".reasonix"),
        cwd: work.path().to_path_buf(),
        extra: None,
        trust_project: false,
        strict: false,
        claude_setting_sources: None,
    })
    .expect("the config loads")
    .config;
    let handle = reasonix::mcp::start(
        &config,
        work.path(),
        reasonix::mcp::McpOptions::default(),
        &mut |_| {},
    );
    let host = reasonix::mcp::Host::new(handle);
    let servers = host.servers();
    let status = |name: &str| {
        servers
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} in {servers:?}"))
            .clone()
    };
    let docs = status("docs");
    assert_eq!(
        (
            docs.status.as_str(),
            docs.tools,
            docs.prompts,
            docs.resources
        ),
        ("connected", 2, 1, 1)
    );
    assert!(
        status("broken").status.starts_with("failed: "),
        "{servers:?}"
    );
    assert!(
        status("proj").status.starts_with("not started: "),
        "{servers:?}"
    );
    let prompts = host.prompts();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0].command_name(), "mcp__docs__review");
    assert_eq!(prompts[0].arguments[0].name, "focus");
    let arguments = BTreeMap::from([("focus".to_string(), "tests".to_string())]);
    assert_eq!(
        host.get_prompt("docs", "review", &arguments).unwrap(),
        "Review the current changes against doc://style-guide. Focus on tests."
    );
    assert_eq!(host.resources()[0].reference(), "docs:doc://style-guide");
    assert!(host
        .read_resource("docs", "doc://style-guide")
        .unwrap()
        .starts_with("# Style guide"));
    let err = host
        .read_resource("docs", "doc://missing")
        .unwrap_err()
        .to_string();
    assert!(err.contains("doc://missing"), "{err}");
    let err = host.read_resource("proj", "doc://style-guide").unwrap_err();
    assert_eq!(err.to_string(), "mcp: server `proj` is not connected");
}

// --- The jail: stdio servers run in the sandbox bash uses --------------------------------

/// The jail backends that work here, by their `[sandbox] backend` name; a missing one is
/// skipped with a message, or fails when `REASONIX_REQUIRE_SANDBOX` is set (CI).
pub(crate) fn jail_backends() -> Vec<&'static str> {
    let host = reasonix::sandbox::Host::current();
    let mut usable = Vec::new();
    for (name, works) in [
        ("bwrap", host.bwrap.as_ref().err()),
        ("landlock", host.landlock.as_ref().err()),
    ] {
        match works {
            None => usable.push(name),
            Some(why) if std::env::var_os("REASONIX_REQUIRE_SANDBOX").is_some() => {
                panic!("REASONIX_REQUIRE_SANDBOX is set but {name} is unusable: {why}")
            }
            Some(why) => eprintln!("warning: MCP jail tests skip {name}: {why}"),
        }
    }
    usable
}

/// The example server with its I/O tools, declared in the user config as `io`, plus `extra`
/// in its entry and `sandbox` as the `[sandbox]` table.
fn io_config(home: &Dir, extra: &str, sandbox: &str) {
    let plugin = stdio_plugin("io", example(), &["--io-tools"], extra);
    use_fake_provider(
        home,
        "http://127.0.0.1:9",
        &format!("{plugin}\n[sandbox]\n{sandbox}\n"),
    );
}

/// `reasonix mcp call SERVER TOOL ARGS`, with a provider key in the environment.
fn mcp_call(home: &Dir, cwd: &Path, server: &str, tool: &str, args: Value) -> crate::util::Run {
    run(reasonix(home, cwd)
        .args(["mcp", "call", "--trust-project-mcp", server, tool])
        .arg(args.to_string())
        .env("FAKE_API_KEY", "sk-provider-secret"))
}

#[test]
fn jailed_stdio_servers_write_only_inside_the_workspace_and_never_see_provider_keys() {
    for backend in jail_backends() {
        let home = Dir::new();
        let work = Dir::new();
        let outside = Dir::outside_temp();
        io_config(&home, "", &format!("backend = \"{backend}\""));
        let escaped = outside.join("escaped.txt");
        let out = mcp_call(
            &home,
            work.path(),
            "io",
            "write_file",
            json!({"path": escaped, "text": "pwned"}),
        );
        assert_eq!(out.code, 1, "{backend}: {out:?}");
        assert!(
            !escaped.exists(),
            "{backend}: the server wrote outside: {out:?}"
        );
        let planted = home.join(".reasonix/planted.txt");
        let out = mcp_call(
            &home,
            work.path(),
            "io",
            "write_file",
            json!({"path": planted, "text": "pwned"}),
        );
        assert_eq!(out.code, 1, "{backend}: {out:?}");
        assert!(
            !planted.exists(),
            "{backend}: the server wrote into the reasonix home"
        );
        let out = mcp_call(
            &home,
            work.path(),
            "io",
            "write_file",
            json!({"path": work.join("inside.txt"), "text": "kept"}),
        );
        assert_eq!(out.code, 0, "{backend}: {out:?}");
        assert_eq!(work.read("inside.txt"), "kept", "{backend}");
        let out = mcp_call(
            &home,
            work.path(),
            "io",
            "getenv",
            json!({"name": "FAKE_API_KEY"}),
        );
        assert_eq!(out.code, 0, "{backend}: {out:?}");
        assert_eq!(out.stdout, "(unset)\n", "{backend}: {out:?}");
    }
}

#[test]
fn a_server_that_fails_in_the_jail_says_how_to_give_it_room() {
    if jail_backends().is_empty() {
        return;
    }
    let home = Dir::new();
    let work = Dir::new();
    let outside = Dir::outside_temp();
    let cache = outside.join("cache");
    let server = crate::util::copy_into(example(), work.path());
    let script = format!(
        "mkdir -p {0} && echo warm > {0}/index || exit 1; exec {1} --io-tools",
        cache.display(),
        server.display()
    );
    let plugin = stdio_plugin("npxlike", "sh", &["-c", &script], "");
    use_fake_provider(&home, "http://127.0.0.1:9", &plugin);
    let out = list(&home, work.path(), &[]);
    assert!(status_line(&out, "npxlike").contains("failed"), "{out:?}");
    let reason = out
        .stdout
        .lines()
        .find(|l| l.starts_with("npxlike: "))
        .unwrap_or_else(|| panic!("no reason for npxlike: {out:?}"));
    assert!(
        reason.contains("exited with status 1") && reason.contains("sandbox.allow_write"),
        "{reason}"
    );
    assert!(!cache.exists(), "{out:?}");
    // The advice works: the cache directory as a write root lets it start.
    let plugin = stdio_plugin(
        "npxlike",
        "sh",
        &["-c", &script],
        &format!(
            "sandbox = {{ allow_write = [{}] }}",
            toml_str(&outside.path().to_string_lossy())
        ),
    );
    use_fake_provider(&home, "http://127.0.0.1:9", &plugin);
    let out = list(&home, work.path(), &[]);
    assert!(
        status_line(&out, "npxlike").contains("connected"),
        "{out:?}"
    );
    assert!(cache.join("index").exists(), "{out:?}");
}

#[test]
fn stdio_servers_keep_the_network_unless_their_sandbox_turns_it_off() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().unwrap().to_string();
    for backend in jail_backends() {
        let home = Dir::new();
        let work = Dir::new();
        io_config(
            &home,
            "",
            &format!("backend = \"{backend}\"\nnetwork = false"),
        );
        let connect = json!({ "addr": addr });
        let out = mcp_call(&home, work.path(), "io", "connect", connect.clone());
        assert_eq!(
            out.code, 0,
            "{backend}: [sandbox] network is bash's switch: {out:?}"
        );
        assert!(out.stdout.contains("connected"), "{backend}: {out:?}");

        io_config(
            &home,
            "sandbox = { network = false }",
            &format!("backend = \"{backend}\""),
        );
        let out = mcp_call(&home, work.path(), "io", "connect", connect.clone());
        assert_eq!(out.code, 1, "{backend}: {out:?}");
        assert!(out.stdout.contains("connect failed"), "{backend}: {out:?}");

        // A project file may tighten a server's sandbox.
        io_config(&home, "", &format!("backend = \"{backend}\""));
        let entry =
            json!({"command": example(), "args": ["--io-tools"], "sandbox": {"network": false}});
        work.write(
            ".mcp.json",
            &json!({"mcpServers": {"proj": entry}}).to_string(),
        );
        let out = mcp_call(&home, work.path(), "proj", "connect", connect.clone());
        assert_eq!(out.code, 1, "{backend}: {out:?}");
        assert!(out.stdout.contains("connect failed"), "{backend}: {out:?}");
    }
}

#[test]
fn jailed_stdio_servers_cannot_read_forbid_read_paths() {
    for backend in jail_backends() {
        let home = Dir::new();
        let work = Dir::new();
        let outside = Dir::outside_temp();
        std::fs::create_dir_all(outside.join("secrets")).unwrap();
        std::fs::write(outside.join("secrets/key"), "TOPSECRET-MCP-5151").unwrap();
        std::fs::write(outside.join("plain.txt"), "readable").unwrap();
        let hidden = outside.join("secrets");
        io_config(
            &home,
            "",
            &format!(
                "backend = \"{backend}\"\nforbid_read = [{}]",
                toml_str(&hidden.to_string_lossy())
            ),
        );
        let out = mcp_call(
            &home,
            work.path(),
            "io",
            "read_file",
            json!({"path": outside.join("secrets/key")}),
        );
        assert_eq!(out.code, 1, "{backend}: {out:?}");
        assert!(!out.stdout.contains("TOPSECRET"), "{backend}: {out:?}");
        let out = mcp_call(
            &home,
            work.path(),
            "io",
            "read_file",
            json!({"path": outside.join("plain.txt")}),
        );
        assert_eq!(out.code, 0, "{backend}: {out:?}");
        assert_eq!(out.stdout, "readable\n", "{backend}");
    }
}

#[test]
fn only_the_user_config_can_turn_a_servers_sandbox_off_or_widen_it() {
    if jail_backends().is_empty() {
        return;
    }
    let home = Dir::new();
    let work = Dir::new();
    let outside = Dir::outside_temp();
    io_config(&home, "sandbox = \"off\"", "");
    let out = mcp_call(
        &home,
        work.path(),
        "io",
        "write_file",
        json!({"path": outside.join("user.txt"), "text": "allowed"}),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(outside.join("user.txt")).unwrap(),
        "allowed"
    );

    let project =
        |sandbox: Value| json!({"command": example(), "args": ["--io-tools"], "sandbox": sandbox});
    work.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "off": project(json!("off")),
            "wide": project(json!({"allow_write": [outside.path()]})),
        }})
        .to_string(),
    );
    work.write(
        "reasonix.toml",
        &stdio_plugin("tomloff", example(), &["--io-tools"], "sandbox = \"off\""),
    );
    for server in ["off", "wide", "tomloff"] {
        let target = outside.join(&format!("{server}.txt"));
        let out = mcp_call(
            &home,
            work.path(),
            server,
            "write_file",
            json!({"path": target, "text": "pwned"}),
        );
        assert_eq!(out.code, 1, "{server}: {out:?}");
        assert!(
            !target.exists(),
            "{server}: a project file loosened the jail"
        );
        assert!(
            out.stderr.contains(&format!("server `{server}`"))
                && out.stderr.contains("only the user config"),
            "{server}: no warning: {out:?}"
        );
    }
}

#[test]
fn mcp_list_shows_each_servers_sandbox() {
    if jail_backends().is_empty() {
        return;
    }
    let (_http, url) = example_http(&[]);
    let home = Dir::new();
    let work = Dir::new();
    let backend = match &reasonix::sandbox::Host::current().bwrap {
        Ok(_) => "bwrap",
        Err(_) => "landlock",
    };
    let plugins = [
        stdio_plugin("plain", example(), &[], ""),
        stdio_plugin(
            "tight",
            example(),
            &[],
            "sandbox = { network = false, allow_write = [\"/srv/cache\"] }",
        ),
        stdio_plugin("free", example(), &[], "sandbox = \"off\""),
        http_plugin("remote", &url),
    ]
    .concat();
    use_fake_provider(&home, "http://127.0.0.1:9", &plugins);
    let out = list(&home, work.path(), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let header = out.stdout.lines().next().unwrap_or("");
    assert!(header.trim_end().ends_with("SANDBOX"), "{out:?}");
    for (name, sandbox) in [
        ("plain", format!("{backend}, network on, writes: workspace")),
        (
            "tight",
            format!("{backend}, network off, writes: workspace, /srv/cache"),
        ),
        ("free", "off".to_string()),
        ("remote", "-".to_string()),
    ] {
        let line = status_line(&out, name);
        assert!(line.contains("connected"), "{name}: {out:?}");
        assert!(line.ends_with(&format!("  {sandbox}")), "{name}: {line}");
    }
}

#[test]
fn task_only_tools_are_listed_as_such_and_calling_one_says_why() {
    let (url, _seen) = scripted_http(|req| {
        if req.method != "POST" {
            return (405, vec![], String::new());
        }
        let result = match req.body["method"].as_str().unwrap_or("") {
            "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "tasks", "version": "1"}}),
            "tools/list" => json!({"tools": [
                {"name": "quick", "inputSchema": {"type": "object"}},
                {"name": "batch", "inputSchema": {"type": "object"},
                 "execution": {"taskSupport": "required"}}]}),
            _ => return (202, vec![], String::new()),
        };
        let reply = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": result});
        (
            200,
            vec![("Content-Type".into(), "application/json".into())],
            reply.to_string(),
        )
    });
    let home = Dir::new();
    let work = Dir::new();
    home.write(".reasonix/config.toml", &http_plugin("t", &url));
    let out = list(&home, work.path(), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("t: task-only tools, not offered: batch"),
        "{out:?}"
    );
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "t", "batch"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("can only run as a task"), "{out:?}");
}

/// Headless runs fail closed on destructive MCP tools (spec: a non-interactive session cannot
/// ask): an allow rule naming the tool and the yolo posture do not let `rm` run, through the
/// real binary with a real stdio server.
#[test]
fn a_destructive_mcp_tool_is_refused_headless_even_with_an_allow_rule_naming_it() {
    let home = Dir::new();
    let work = Dir::new();
    // One run whose model calls the destructive `rm` once, with an allow rule naming it.
    let run_rm = |args: &[&str]| {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "mcp__srv__rm", "{}")]),
            Reply::text("done"),
        ]);
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!(
                "[permissions]\nmode = \"allow\"\nallow = [\"mcp__srv__rm\"]\n{}",
                stdio_plugin("srv", "sh", &["-c", ANNOTATED], "sandbox = \"off\"")
            ),
        );
        let out = run(reasonix(&home, work.path())
            .arg("run")
            .args(args)
            .arg("remove it")
            .env("FAKE_API_KEY", "k"));
        assert_eq!(out.code, 0, "{out:?}");
        (server, out)
    };

    let (server, out) = run_rm(&["--permission-mode", "yolo"]);
    assert!(
        out.stderr.contains("permission: blocked mcp__srv__rm"),
        "{out:?}"
    );
    let requests = server.wait_for_requests(2);
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(result.contains("marked destructive"), "{result}");

    // The JSON result lists the refusal among the run's denials.
    let (_server, out) = run_rm(&["--output-format", "json"]);
    let result: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON result");
    let denials = result["permission_denials"]
        .as_array()
        .expect("a denials list");
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool"], "mcp__srv__rm", "{result}");
}

/// Issue 37.6: a streamable-HTTP server that answers the `notifications/initialized` POST with
/// a body (the conformance suite's `initialize` scenario sends `{"jsonrpc":"2.0","result":{}}`,
/// a "response" without an id) made reasonix mark the server failed. A reply to a
/// notification is ignored and logged at debug; the server works.
#[test]
fn a_reply_to_the_initialized_notification_is_ignored_not_fatal() {
    let (url, _seen) = scripted_http(move |req| {
        let id = req.body["id"].clone();
        let json_headers = vec![("Content-Type".into(), "application/json".into())];
        let result = match req.body["method"].as_str().unwrap_or("") {
            "initialize" => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "chatty", "version": "1"}}),
            "notifications/initialized" => {
                return (200, json_headers, r#"{"jsonrpc":"2.0","result":{}}"#.into())
            }
            "tools/list" => json!({"tools": [{"name": "add_numbers",
                "inputSchema": {"type": "object"}}]}),
            "tools/call" => json!({"content": [{"type": "text",
                "text": format!("sum {}", req.body["params"]["arguments"]["a"])}]}),
            _ => return (405, Vec::new(), String::new()),
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        (200, json_headers, body)
    });
    let home = Dir::new();
    home.write(".reasonix/config.toml", &http_plugin("chatty", &url));
    let log = home.join("mcp.log");
    let out = run(reasonix(&home, home.path())
        .env("REASONIX_LOG", &log)
        .args(["mcp", "list"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(status_line(&out, "chatty").contains("connected"), "{out:?}");
    let out = run(reasonix(&home, home.path()).args([
        "mcp",
        "call",
        "chatty",
        "add_numbers",
        r#"{"a":5,"b":3}"#,
    ]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "sum 5\n"), "{out:?}");
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("ignored the reply to notifications/initialized"),
        "{logged}"
    );
}

/// Print mode's `system/init` lists a server's prompts among the `slash_commands`, as
/// `mcp__SERVER__PROMPT`, the name a print-mode prompt runs them by (as Claude Code's does).
#[test]
fn print_mode_init_lists_the_servers_prompts_as_slash_commands() {
    let (server, home, work) = with_docs_server(2);
    let out = run(reasonix(&home, work.path())
        .args(["-p", "--output-format", "stream-json", "--verbose", "hi"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let init: Value = serde_json::from_str(out.stdout.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("init is JSON ({e}): {out:?}"));
    assert_eq!(init["subtype"], "init", "{init}");
    let commands = init["slash_commands"].as_array().expect("a list");
    assert!(
        commands.contains(&json!("mcp__docs__review")),
        "{commands:?}"
    );
    // And the name listed is the one a print-mode prompt runs.
    let out = run(reasonix(&home, work.path())
        .args(["-p", "/mcp__docs__review error handling"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        first_user_message(&server.wait_for_requests(2)[1].body),
        "Review the current changes against doc://style-guide. Focus on error handling."
    );
}
