//! The polish of the `reasonix serve` page (issue 35.5) in a real headless Chromium:
//! `tests/browser/page_polish.py` checks the title, the empty state, the approval in its tool
//! card, monospace output, labels at two widths and the favicon, and saves screenshots under
//! the target dir for a person to look at.

use serde_json::json;

use crate::serve::{
    browser_available, new_session, post, request, serve_with_an_unavailable_binding, start, Events,
};
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

/// A stored conversation whose binding cannot run here opens in the page as read-only
/// history (`tests/browser/read_only_view.py`): transcript shown, composer disabled with the
/// line naming the binding and the fix; the page could not open it at all before.
#[test]
fn the_page_shows_a_conversation_whose_binding_is_unavailable_as_read_only_history() {
    if !browser_available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![Reply::text("seen it"), Reply::text("must not")]);
    let (server, id) = serve_with_an_unavailable_binding(&fake, &["--auth", "token"]);
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("read-only-view.png");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/browser/read_only_view.py"
    );
    let out = run(std::process::Command::new("python3").args([
        script,
        &server.url,
        &id,
        shot.to_str().unwrap(),
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("read-only view: ok"), "{out:?}");
    assert_eq!(fake.requests().len(), 1, "the history view sent a prompt");
}

/// The title the page shows: the first prompt on one line, until renamed through the
/// authenticated, same-origin route; the live list carries it too.
#[test]
fn a_conversation_is_titled_by_its_first_prompt_and_renamed_through_the_api() {
    let fake = FakeOpenAI::start(vec![Reply::text("ok")]);
    let server = start(&fake, "", &[]);
    let id = new_session(&server);
    let describe = || request(server.addr, "GET", &format!("/api/sessions/{id}"), &[], "").json();
    assert_eq!(describe()["title"], "", "no title before a prompt");
    let workspace = std::fs::canonicalize(server.work.path()).unwrap();
    assert_eq!(describe()["workspace"], workspace.to_str().unwrap());
    let mut events = Events::open(&server, &id);
    let sent = post(
        &server,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "  fix the\n  flaky test  "}),
    );
    assert_eq!(sent.status, 200);
    events.until("turn_end");
    assert_eq!(describe()["title"], "fix the flaky test");
    let title = format!("/api/sessions/{id}/title");
    let renamed = post(&server, &title, json!({"title": "Flaky test\u{7}hunt"}));
    assert_eq!(renamed.status, 200);
    assert_eq!(renamed.json()["title"], "Flaky test hunt");
    assert_eq!(
        events.until("title").pop().unwrap()["title"],
        "Flaky test hunt"
    );
    let listed = request(server.addr, "GET", "/api/sessions", &[], "").json();
    assert_eq!(listed["live"][0]["title"], "Flaky test hunt", "{listed}");
    assert_eq!(post(&server, &title, json!({"name": "x"})).status, 400);
    // A cross-origin page cannot rename it.
    let body = json!({"title": "evil"}).to_string();
    let forged = request(
        server.addr,
        "POST",
        &title,
        &[
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/json"),
        ],
        &body,
    );
    assert_eq!(forged.status, 403);
    // An empty title goes back to the first prompt.
    assert_eq!(
        post(&server, &title, json!({"title": " "})).json()["title"],
        "fix the flaky test"
    );
}

/// The icon the page links, and the one a browser asks for without a link: no 404.
#[test]
fn the_page_has_a_favicon() {
    let fake = FakeOpenAI::start(vec![]);
    let server = start(&fake, "", &[]);
    let page = request(server.addr, "GET", "/", &[], "");
    assert!(page.body.contains(r#"rel="icon""#), "{}", page.body);
    for path in ["/favicon.svg", "/favicon.ico"] {
        let icon = request(server.addr, "GET", path, &[], "");
        assert_eq!(icon.status, 200, "{path}");
        assert_eq!(icon.header("Content-Type"), Some("image/svg+xml"), "{path}");
        assert!(icon.body.starts_with("<svg"), "{path}");
    }
}
