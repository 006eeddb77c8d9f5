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
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", tool, args)]),
        Reply::text("done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    work.write("secrets/key.txt", "hidden\n");
    let deny = rule.map(|r| format!("\"{r}\"")).unwrap_or_default();
    use_fake_provider(
        &home,
        &server.base_url(),
        &format!("[permissions]\nmode = \"allow\"\ndeny = [{deny}]\n"),
    );
    let out = run(reasonix(&home, work.path())
        .args(["run", "go"])
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
