//! The shipped demo: `examples/demo/` plus a recording of a session on it, replayed through
//! the `replay` provider with real tools and a real test run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, Dir};

const PROMPT: &str = "The test suite fails. Find the bug, fix it and make the tests pass.";

fn demo_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo")
}

/// Copies the demo project (without the recording) into a fresh directory.
fn demo_copy() -> Dir {
    let dir = Dir::new();
    for name in ["calc.py", "test_calc.py", "README.md"] {
        std::fs::copy(demo_source().join(name), dir.join(name)).expect("copy demo file");
    }
    dir
}

fn unittest(dir: &Path) -> std::process::Output {
    Command::new("python3")
        .args(["-m", "unittest", "-q"])
        .current_dir(dir)
        .output()
        .expect("python3 is needed for the demo tests")
}

/// The model's side of the demo conversation, scripted by hand.
fn scripted_replies() -> Vec<Reply> {
    vec![
        Reply::text_then_tool_calls(
            "Let me look at the code and the tests first.",
            &[
                ("call_read_calc", "read_file", r#"{"path":"calc.py"}"#),
                ("call_read_test", "read_file", r#"{"path":"test_calc.py"}"#),
            ],
        ),
        Reply::tool_calls(&[(
            "call_test_1",
            "bash",
            r#"{"command":"python3 -m unittest 2>&1 | tail -n 15","description":"Run the test suite"}"#,
        )]),
        Reply::text_then_tool_calls(
            "`average` adds 1 to the mean. Removing the stray `+ 1`.",
            &[(
                "call_fix",
                "edit_file",
                r#"{"path":"calc.py","old_string":"return sum(values) / len(values) + 1","new_string":"return sum(values) / len(values)"}"#,
            )],
        ),
        Reply::tool_calls(&[(
            "call_test_2",
            "bash",
            r#"{"command":"python3 -m unittest 2>&1 | tail -n 5","description":"Run the tests again"}"#,
        )]),
        Reply::text(
            "Fixed the bug in `calc.py`: `average()` returned the mean plus one. \
             I removed the stray `+ 1`; all three tests pass now.",
        ),
    ]
}

/// Rewrites examples/demo/session.jsonl. Run with
/// `cargo test --test tests regenerate_demo_recording -- --ignored` after changing the
/// agent's request shape or the script above.
#[test]
#[ignore]
fn regenerate_demo_recording() {
    let server = FakeOpenAI::start(scripted_replies());
    let home = Dir::new();
    let work = demo_copy();
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"demo\"\n[[providers]]\nname = \"demo\"\nbase_url = \"{}\"\nmodel = \"deepseek-v4-flash\"\n\n[environment]\nenabled = false\n",
            server.base_url()
        ),
    );
    let recording = demo_source().join("session.jsonl");
    let _ = std::fs::remove_file(&recording);
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--record",
        recording.to_str().unwrap(),
        PROMPT,
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(unittest(work.path()).status.success());
}

#[test]
fn demo_recording_replays_a_real_fix_with_no_network() {
    let work = demo_copy();
    assert!(
        !unittest(work.path()).status.success(),
        "the demo must start with a failing test"
    );
    let home = Dir::new();
    let recording = demo_source().join("session.jsonl");
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--replay",
        recording.to_str().unwrap(),
        PROMPT,
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("all three tests pass"), "{out:?}");
    for tool in ["read_file", "bash", "edit_file"] {
        assert!(
            out.stderr.contains(&format!("> {tool} ")),
            "{tool}: {out:?}"
        );
    }
    let fixed = std::fs::read_to_string(work.join("calc.py")).unwrap();
    assert!(
        fixed.contains("return sum(values) / len(values)\n"),
        "{fixed}"
    );
    let tests = unittest(work.path());
    assert!(
        tests.status.success(),
        "{}",
        String::from_utf8_lossy(&tests.stderr)
    );
}

#[test]
fn replay_reports_a_request_that_diverges_from_the_recording() {
    let work = demo_copy();
    let home = Dir::new();
    let recording = work.join("short.jsonl");
    let full = std::fs::read_to_string(demo_source().join("session.jsonl")).unwrap();
    // Keep only the first exchange: the second request has nothing to match.
    std::fs::write(&recording, full.lines().next().unwrap()).unwrap();
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--replay",
        recording.to_str().unwrap(),
        PROMPT,
    ]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("replay"), "{out:?}");
    assert!(out.stderr.contains("request 2"), "{out:?}");
}
