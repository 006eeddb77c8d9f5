//! Saved memory from the user's side: the `/memory` modal in the real chat (search, read,
//! forget, restore, the empty state) and the memory index as standing context in the system
//! prompt, frozen for the session so its bytes never change between requests.

use reasonix::tool::memory_store::Store;
use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, use_fake_provider, Dir};

const READY: &str = "fake-model · ask";

fn setup(replies: Vec<Reply>) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    (server, home, work)
}

/// The memory store the chat uses: `<state>/memory`, the state dir being the reasonix home.
fn store(home: &Dir) -> Store {
    Store::new(home.join(".reasonix/memory"))
}

fn chat(home: &Dir, work: &Dir) -> Pty {
    let mut cmd = reasonix(home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 100, 30);
    pty.wait_text(READY);
    pty
}

fn index(home: &Dir) -> String {
    std::fs::read_to_string(home.join(".reasonix/memory/MEMORY.md")).unwrap_or_default()
}

fn exit(mut pty: Pty) {
    pty.send("\x04");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}\n{}", pty.screen());
}

#[test]
fn memory_modal_searches_reads_forgets_and_restores() {
    let (_server, home, work) = setup(vec![]);
    let memory = store(&home);
    memory
        .save(
            "db-port",
            "The postgres database listens on 5433.",
            Some("database port"),
        )
        .unwrap();
    memory
        .save(
            "deploy",
            "Deploys go through the docker registry.\nStaging first.",
            Some("how deploys run"),
        )
        .unwrap();
    memory.save("tabs", "The user prefers tabs.", None).unwrap();
    let mut pty = chat(&home, &work);
    pty.send("/memory\r");
    pty.wait_text("Memory · 3 active · 0 archived");
    let screen = pty.screen();
    assert!(
        screen.contains("db-port") && screen.contains("deploy") && screen.contains("tabs"),
        "{screen}"
    );
    assert!(
        !screen.contains("Ask anything"),
        "the modal hides the composer:\n{screen}"
    );

    // Typing in the search field narrows the list, a partial word included.
    pty.send("/dock");
    pty.wait_for("the list narrowed to deploy", |vt| {
        let s = vt.screen();
        s.contains("search: dock") && s.contains("how deploys run") && !s.contains("database port")
    });
    // Back to the list and open the one fact read-only.
    pty.send("\r\r");
    pty.wait_text("Staging first.");
    pty.wait_text("Memory › deploy");
    pty.send("\x1b");
    pty.wait_text("f forget");

    // Forget it: the file moves to the archive and leaves the index; no approval is asked.
    pty.send("f");
    pty.wait_text("forgot `deploy`");
    assert!(!home.join(".reasonix/memory/deploy.md").exists());
    let archived: Vec<_> = std::fs::read_dir(home.join(".reasonix/memory/archive"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(archived.len(), 1, "{archived:?}");
    assert!(archived[0].starts_with("deploy-"), "{archived:?}");
    assert!(!index(&home).contains("deploy"), "{}", index(&home));
    assert!(index(&home).contains("db-port"), "{}", index(&home));
    assert!(!pty.screen().contains("Allow"), "{}", pty.screen());
    pty.wait_text("deploy  [archived]");

    // Restore it: back in place, back in the index.
    pty.send("r");
    pty.wait_text("restored `deploy` to the active memory");
    assert_eq!(
        std::fs::read_to_string(home.join(".reasonix/memory/deploy.md")).unwrap(),
        "---\nname: deploy\ndescription: how deploys run\nupdated: ".to_string()
            + &memory.read("deploy").unwrap().updated
            + "\n---\nDeploys go through the docker registry.\nStaging first.\n"
    );
    assert!(
        index(&home).contains("- [deploy](deploy.md): how deploys run"),
        "{}",
        index(&home)
    );

    // Esc closes the modal; the notices stay in the transcript.
    pty.send("\x1b");
    pty.wait_text("Ask anything");
    let history = pty.vt.history();
    assert!(history.contains("forgot `deploy`"), "{history}");
    exit(pty);
}

#[test]
fn memory_modal_says_so_when_nothing_is_saved() {
    let (_server, home, work) = setup(vec![]);
    let mut pty = chat(&home, &work);
    pty.send("/memory\r");
    pty.wait_text("No saved memory yet");
    pty.send("f");
    pty.send("\x1b");
    pty.wait_text("Ask anything");
    assert!(!home.join(".reasonix/memory").exists());
    exit(pty);
}

fn system_prompt(request: &Value) -> String {
    let messages = request["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system", "{request}");
    messages[0]["content"].as_str().expect("text").to_string()
}

#[test]
fn the_memory_index_is_frozen_in_the_system_prompt_for_the_session() {
    let remember =
        r#"{"name":"new-fact","content":"Saved mid-session.","description":"saved mid-session"}"#;
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[("c1", "remember", remember)]),
        Reply::text("Saved it."),
        Reply::text("Second answer."),
        Reply::text("New session answer."),
    ]);
    store(&home)
        .save(
            "db-port",
            "The database listens on 5433.",
            Some("database port"),
        )
        .unwrap();
    let mut pty = chat(&home, &work);
    pty.send("remember something\r");
    pty.wait_text("Allow remember?");
    pty.send("y");
    pty.wait_text("Saved it.");
    assert!(store(&home).read("new-fact").is_ok());
    pty.wait_text("Ask anything");
    pty.send("and now?\r");
    pty.wait_text("Second answer.");
    let requests = server.wait_for_requests(3);
    let first = system_prompt(&requests[0].body);
    assert!(
        first.contains("<memory>\n") && first.contains("- db-port: database port\n"),
        "{first}"
    );
    assert_eq!(
        first,
        system_prompt(&requests[2].body),
        "the system prompt changed within the session"
    );
    assert!(!first.contains("new-fact"), "{first}");
    // The next session reads the index again and sees the new fact.
    pty.wait_text("Ask anything");
    pty.send("/new\r");
    pty.wait_text("new conversation");
    pty.send("hello\r");
    pty.wait_text("New session answer.");
    let requests = server.wait_for_requests(4);
    let next = system_prompt(&requests[3].body);
    assert!(next.contains("- new-fact: saved mid-session\n"), "{next}");
    exit(pty);
}
