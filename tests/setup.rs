//! `reasonix setup --base-url`: a config for any OpenAI-compatible server, written by the real
//! binary against the loopback fake server, then used by `reasonix run` as it is.

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, run, run_with_stdin, Dir};

fn models_reply(ids: &[&str]) -> Reply {
    let data: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| serde_json::json!({"id": id, "object": "model"}))
        .collect();
    Reply::Status {
        status: 200,
        headers: Vec::new(),
        body: serde_json::json!({"object": "list", "data": data}).to_string(),
    }
}

#[test]
fn setup_with_a_base_url_picks_a_listed_model_and_run_then_uses_that_server() {
    let server = FakeOpenAI::start(vec![
        models_reply(&["qwen3-coder", "llama-3"]),
        Reply::text("hello from the local model"),
    ]);
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).args(["setup", "--base-url", &server.base_url()]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("provider `local`: llama-3 at http://"),
        "the first model in sorted order is chosen and named: {out:?}"
    );
    let text = std::fs::read_to_string(home.join(".reasonix/config.toml")).unwrap();
    assert!(text.contains("default_model = \"local\""), "{text}");
    assert!(
        !text.contains("api_key_env    ="),
        "an http server needs no key: {text}"
    );

    let out = run(reasonix(&home, home.path()).args(["run", "say hello"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("hello from the local model"), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests[0].method, "GET");
    assert!(
        requests[0].path.ends_with("/v1/models"),
        "{:?}",
        requests[0].path
    );
    assert_eq!(
        requests[1].body["model"], "llama-3",
        "{:?}",
        requests[1].body
    );
    assert!(
        !requests[1]
            .headers
            .iter()
            .any(|(name, _)| name == "authorization"),
        "no key was configured, so none is sent"
    );
}

#[test]
fn setup_with_a_named_model_and_key_asks_the_server_nothing_and_stores_the_key() {
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    let out = run_with_stdin(
        reasonix(&home, home.path()).args([
            "setup",
            "--base-url",
            &server.base_url(),
            "--model",
            "my-model",
            "--api-key-env",
            "LOCAL_LLM_KEY",
            "--name",
            "lab",
            "--api-key-stdin",
        ]),
        "secret-123\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("stored LOCAL_LLM_KEY"), "{out:?}");
    assert!(!out.stdout.contains("secret-123"), "{out:?}");
    assert!(server.requests().is_empty(), "--model needs no models list");

    let out = run(reasonix(&home, home.path()).args(["run", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    let request = &server.requests()[0];
    assert_eq!(request.body["model"], "my-model");
    let auth = request
        .headers
        .iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str());
    assert_eq!(auth, Some("Bearer secret-123"));
}

#[test]
fn setup_with_a_base_url_refuses_bad_input_with_one_line_and_writes_nothing() {
    let home = Dir::new();
    let config = home.join(".reasonix/config.toml");
    for (args, says) in [
        (
            vec!["--base-url", "localhost:8080"],
            "is not an http:// or https:// URL",
        ),
        (
            vec!["--base-url", "https://api.example.com/v1", "--model", "m"],
            "--api-key-env VAR",
        ),
        (vec!["--model", "m"], "go with --base-url URL"),
        (
            vec![
                "--base-url",
                "http://h/v1",
                "--model",
                "m",
                "--no-key",
                "--api-key-env",
                "K",
            ],
            "exclude each other",
        ),
        (
            vec![
                "--base-url",
                "http://h/v1",
                "--model",
                "m",
                "--api-key-stdin",
            ],
            "needs --api-key-env",
        ),
    ] {
        let out = run(reasonix(&home, home.path()).arg("setup").args(&args));
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?}: {out:?}");
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {out:?}");
        assert!(!config.exists(), "{args:?} wrote a config");
    }
}

#[test]
fn setup_with_a_base_url_that_is_down_says_to_start_it_or_name_the_model() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).args(["setup", "--base-url", &url]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("cannot list the models"), "{out:?}");
    assert!(out.stderr.contains("--model NAME"), "{out:?}");
    assert!(!home.join(".reasonix/config.toml").exists());
}

/// Without a DeepSeek key, a workspace whose `reasonix.toml` names a local server used to get
/// the no-key welcome again and again: the trust question came only after the key check.
#[test]
fn bare_reasonix_without_a_key_asks_to_trust_a_project_that_names_a_working_server() {
    let theirs = FakeOpenAI::start(vec![Reply::text("Hello from the local server.")]);
    let home = Dir::new();
    let work = Dir::new();
    work.write(
        "reasonix.toml",
        &format!(
            "default_model = \"lab\"\n[[providers]]\nname = \"lab\"\nbase_url = \"{}\"\nmodel = \"lab-model\"\n",
            theirs.base_url()
        ),
    );
    let mut cmd = reasonix(&home, work.path());
    cmd.env_remove("DEEPSEEK_API_KEY");
    let mut pty = Pty::spawn(cmd, 100, 30);
    pty.wait_text("Trust this workspace?");
    assert!(
        !pty.raw_text().contains("Welcome to reasonix"),
        "{}",
        pty.raw_text()
    );
    pty.send("a");
    pty.wait_text("lab-model");
    pty.send("hi\r");
    pty.wait_text("Hello from the local server.");
    pty.send("\x04");
    let status = pty.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", pty.raw_text());
    assert_eq!(theirs.requests().len(), 1);
}

/// Settings a project file holds but may not apply (the workspace is not trusted) are named at
/// start, with the command that trusts it, by every front end: `run`, the chat and `serve`.
#[test]
fn every_front_end_names_the_ignored_project_settings_and_the_trust_command() {
    let server = FakeOpenAI::start(vec![Reply::text("ok"), Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    crate::util::use_fake_provider(&home, &server.base_url(), "");
    work.write("reasonix.toml", "[permissions]\nallow = [\"Bash(*)\"]\n");
    let says = |stderr: &str| {
        stderr.lines().any(|line| {
            line.contains("permissions.allow ignored: this workspace is not trusted")
                && line.contains("reasonix trust")
        })
    };

    let out = run(reasonix(&home, work.path())
        .args(["run", "hi"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(says(&out.stderr), "run: {out:?}");

    let out = crate::util::piped_chat(&home, work.path(), &[], "hi\n");
    assert!(says(&out.stderr), "chat: {out:?}");

    let mut child = crate::util::spawn_piped(
        reasonix(&home, work.path())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("FAKE_API_KEY", "k"),
    );
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert!(line.contains("http://"), "serve started: {line:?}");
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(says(&stderr), "serve: {stderr}");
}
