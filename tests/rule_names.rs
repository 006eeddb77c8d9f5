//! Every Claude Code tool name a rule may use (`Grep(secrets/**)`, `MultiEdit(...)`) applies to
//! the tool it stands for, through the real binary: a deny rule on the name blocks the call,
//! and the same call without the rule runs. Deleting one arm of the name mapping used to fail
//! no test at all, so a `deny = ["Grep(secrets/**)"]` could silently stop applying.

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

/// (rule name, our tool, its arguments reaching into `secrets/`)
const ROWS: &[(&str, &str, &str)] = &[
    ("Read", "read_file", r#"{"path":"secrets/key.txt"}"#),
    (
        "Write",
        "write_file",
        r#"{"path":"secrets/new.txt","content":"x"}"#,
    ),
    (
        "Edit",
        "edit_file",
        r#"{"path":"secrets/key.txt","old_string":"hidden","new_string":"changed"}"#,
    ),
    (
        "MultiEdit",
        "multi_edit",
        r#"{"path":"secrets/key.txt","edits":[{"old_string":"hidden","new_string":"changed"}]}"#,
    ),
    ("Glob", "glob", r#"{"pattern":"*.txt","path":"secrets"}"#),
    ("Grep", "grep", r#"{"pattern":"hidden","path":"secrets"}"#),
    ("LS", "ls", r#"{"path":"secrets"}"#),
];

/// The tool result the model was sent for one scripted call, with `rule` denied (or none).
fn result_of(tool: &str, args: &str, rule: Option<&str>) -> String {
    let deny = rule.map(|r| format!("\"{r}\"")).unwrap_or_default();
    let config = format!("[permissions]\nmode = \"allow\"\ndeny = [{deny}]\n");
    result_with(tool, args, &config, &[])
}

/// The tool result the model was sent for one scripted call under `config` (the user's
/// `[permissions]`), with `flags` given to `reasonix run`.
fn result_with(tool: &str, args: &str, config: &str, flags: &[&str]) -> String {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", tool, args)]),
        Reply::text("done"),
        // A `task` call that runs spends one more reply on its child.
        Reply::text("done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    work.write("secrets/key.txt", "hidden\n");
    use_fake_provider(&home, &server.base_url(), config);
    let out = run(reasonix(&home, work.path())
        .arg("run")
        .args(flags)
        .arg("go")
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    requests[1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn each_claude_tool_name_in_a_deny_rule_blocks_the_tool_it_names_and_only_with_the_rule() {
    for (name, tool, args) in ROWS {
        let rule = format!("{name}(secrets/**)");
        let denied = result_of(tool, args, Some(&rule));
        assert!(
            denied.contains("blocked by rule"),
            "{rule} did not block {tool}: {denied}"
        );
        let allowed = result_of(tool, args, None);
        assert!(
            !allowed.contains("blocked by rule"),
            "{tool} without a rule was refused: {allowed}"
        );
    }
}

#[test]
fn a_bash_deny_rule_by_its_claude_name_blocks_the_command() {
    let denied = result_of(
        "bash",
        r#"{"command":"cat secrets/key.txt"}"#,
        Some("Bash(cat secrets*)"),
    );
    assert!(denied.contains("blocked by rule"), "{denied}");
}

/// The Claude Code names of tools that would ask (writers, the shell, delegation), with a
/// call of each: `--allowedTools NAME` lets the call run where every ask is refused, and
/// `--disallowedTools NAME` blocks it where everything is allowed.
const ASKING_ROWS: &[(&str, &str, &str)] = &[
    ("Write", "write_file", r#"{"path":"new.txt","content":"x"}"#),
    (
        "Edit",
        "edit_file",
        r#"{"path":"secrets/key.txt","old_string":"hidden","new_string":"changed"}"#,
    ),
    (
        "MultiEdit",
        "multi_edit",
        r#"{"path":"secrets/key.txt","edits":[{"old_string":"hidden","new_string":"changed"}]}"#,
    ),
    ("Bash", "bash", r#"{"command":"echo hi"}"#),
    ("Task", "task", r#"{"prompt":"say done"}"#),
    ("Agent", "task", r#"{"prompt":"say done"}"#),
];

/// Readers and the other mapped tools, which run without asking: `--disallowedTools NAME`
/// still blocks each.
const OTHER_ROWS: &[(&str, &str, &str)] = &[
    ("Read", "read_file", r#"{"path":"secrets/key.txt"}"#),
    ("Glob", "glob", r#"{"pattern":"*.txt"}"#),
    ("Grep", "grep", r#"{"pattern":"hidden"}"#),
    ("LS", "ls", r#"{}"#),
    (
        "TodoWrite",
        "todo_write",
        r#"{"todos":[{"content":"a","status":"pending"}]}"#,
    ),
    ("ExitPlanMode", "exit_plan_mode", r#"{"plan":"p"}"#),
];

const ALLOW_ALL: &str = "[permissions]\nmode = \"allow\"\n";

fn refused(result: &str) -> bool {
    result.contains("blocked") || result.contains("denied") || result.contains("not allowed")
}

#[test]
fn each_claude_tool_name_in_allowed_tools_lets_its_tool_run_where_asks_are_refused() {
    for (name, tool, args) in ASKING_ROWS {
        let strict = ["--permission-mode", "strict"];
        let without = result_with(tool, args, "", &strict);
        assert!(
            refused(&without),
            "{tool} ran under strict without --allowedTools: {without}"
        );
        let with = result_with(
            tool,
            args,
            "",
            &["--permission-mode", "strict", "--allowedTools", name],
        );
        assert!(
            !refused(&with),
            "--allowedTools {name} did not let {tool} run: {with}"
        );
    }
}

#[test]
fn each_claude_tool_name_in_disallowed_tools_blocks_its_tool_where_all_is_allowed() {
    for (name, tool, args) in ASKING_ROWS.iter().chain(OTHER_ROWS) {
        let blocked = result_with(tool, args, ALLOW_ALL, &["--disallowedTools", name]);
        assert!(
            blocked.contains("blocked by rule"),
            "--disallowedTools {name} did not block {tool}: {blocked}"
        );
        let runs = result_with(tool, args, ALLOW_ALL, &["--disallowedTools", "WebFetch"]);
        assert!(
            !refused(&runs),
            "{tool} was refused by an unrelated rule: {runs}"
        );
    }
}

#[test]
fn an_unknown_tool_name_in_allowed_or_disallowed_tools_is_an_error_naming_the_known_ones() {
    let home = Dir::new();
    let work = Dir::new();
    for flag in ["--allowedTools", "--disallowedTools"] {
        let out = run(reasonix(&home, work.path())
            .args(["run", flag, "Read,Frobnicate(x)", "go"])
            .env("FAKE_API_KEY", "k"));
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr.contains(&format!("unknown tool `Frobnicate` in {flag}; known Claude Code names: Read, Write, Edit, MultiEdit")),
            "{out:?}"
        );
    }
}
