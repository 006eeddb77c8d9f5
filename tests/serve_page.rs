//! The polish of the `reasonix serve` page (issue 35.5) in a real headless Chromium:
//! `tests/browser/page_polish.py` checks the title, the empty state, the approval in its tool
//! card, monospace output, labels at two widths and the favicon, and saves screenshots under
//! the target dir for a person to look at.

use crate::serve::{browser_available, start};
use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::run;

#[test]
fn the_page_is_polished_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::text("Here it is, aligned:\n\n```\nname     size\nalpha      10\n```\n"),
        Reply::tool_calls(&[(
            "c1",
            "edit_file",
            r#"{"path":"note.txt","old_string":"beta","new_string":"approved"}"#,
        )]),
        Reply::text("wrote it"),
        Reply::tool_calls(&[("c2", "read_file", r#"{"path":"table.txt"}"#)]),
        Reply::text("read it"),
    ]);
    let server = start(&fake, "", &["--auth", "token"]);
    server.work.write("note.txt", "alpha\nbeta\ngamma\n");
    server
        .work
        .write("table.txt", "name     size\nalpha      10\n");
    let workspace = std::fs::canonicalize(server.work.path()).unwrap();
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("page-polish");
    let _ = std::fs::remove_dir_all(&shots);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/page_polish.py");
    let out = run(std::process::Command::new("python3").args([
        script,
        &server.url,
        workspace.to_str().unwrap(),
        shots.to_str().unwrap(),
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("page polish: ok"), "{out:?}");
    for name in ["page-1100.png", "page-390.png"] {
        let path = shots.join(name);
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1000, "no screenshot at {}", path.display());
        println!("screenshot: {}", path.display());
    }
    assert_eq!(
        std::fs::read_to_string(server.work.join("note.txt")).unwrap(),
        "alpha\napproved\ngamma\n"
    );
    assert_eq!(fake.requests().len(), 5);
}
