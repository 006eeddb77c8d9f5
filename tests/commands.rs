//! `reasonix models` and `reasonix doctor` through the real binary against the fake server, and
//! what `@` references in commands and messages may attach.

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir, Run};

fn models_body() -> String {
    r#"{"object":"list","data":[{"id":"zeta"},{"id":"fake-model"}]}"#.to_string()
}

#[test]
fn models_lists_the_endpoint_and_marks_configured_ones() {
    let server = FakeOpenAI::start(vec![Reply::body(200, "application/json", &models_body())]);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, home.path()).args(["models", "fake"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "* fake-model\n  zeta\n");
    let unknown = run(reasonix(&home, home.path()).args(["models", "nope"]));
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(unknown.stderr.contains("nope"), "{unknown:?}");
}

/// The row of `reasonix doctor`'s table for `check`.
fn doctor_row<'a>(out: &'a Run, check: &str) -> &'a str {
    out.stdout
        .lines()
        .find(|l| l.starts_with(check))
        .unwrap_or_else(|| panic!("no {check} row: {out:?}"))
}

#[test]
fn doctor_prints_a_table_and_passes_against_a_healthy_endpoint() {
    let server = FakeOpenAI::start(vec![Reply::body(200, "application/json", &models_body())]);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, home.path())
        .arg("doctor")
        .env("FAKE_API_KEY", "k"));
    assert!(out.stdout.starts_with("CHECK"), "{out:?}");
    for check in [
        "version", "config", "model", "api key", "endpoint", "sandbox", "sessions",
    ] {
        doctor_row(&out, check);
    }
    let endpoint = doctor_row(&out, "endpoint");
    assert!(
        endpoint.contains("pass") && endpoint.contains("HTTP 200") && endpoint.contains("2 models"),
        "{endpoint}"
    );
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer k")
    );
    let sandbox_ok = out
        .stdout
        .lines()
        .any(|l| l.starts_with("sandbox") && l.contains("pass"));
    assert_eq!(out.code, if sandbox_ok { 0 } else { 1 }, "{out:?}");
}

/// Issue 35: `doctor -m NAME` was refused as an unknown flag while `run`, `chat` and `serve`
/// take `-m`.
#[test]
fn doctor_takes_dash_m_like_run_and_chat() {
    let server = FakeOpenAI::start_with(|_| Reply::body(200, "application/json", &models_body()));
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, home.path())
        .args(["doctor", "-m", "fake/other-model"])
        .env("FAKE_API_KEY", "k"));
    let model = doctor_row(&out, "model");
    assert!(model.contains("other-model"), "{out:?}");
    let out = run(reasonix(&home, home.path())
        .args(["doctor", "-m", "nope/x"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(doctor_row(&out, "model").contains("FAIL"), "{out:?}");
}

#[test]
fn doctor_fails_on_a_rejected_key_and_a_broken_config() {
    let server = FakeOpenAI::start(vec![Reply::error(401, "bad key")]);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, home.path()).arg("doctor"));
    assert_eq!(out.code, 1, "{out:?}");
    let endpoint = doctor_row(&out, "endpoint");
    assert!(
        endpoint.contains("FAIL") && endpoint.contains("$FAKE_API_KEY"),
        "{endpoint}"
    );

    let broken = Dir::new();
    broken.write(".reasonix/config.toml", "default_model = [\n");
    let out = run(reasonix(&broken, broken.path()).arg("doctor"));
    assert_eq!(out.code, 1, "{out:?}");
    let config = doctor_row(&out, "config");
    assert!(
        config.contains("FAIL") && config.contains("config.toml:"),
        "{config}"
    );
}

/// A workspace `ws` inside `root`, with `root/outside.txt` next to it, a workspace symlink to
/// that file, and secrets in the user's home and the reasonix home.
fn reference_bait(home: &Dir) -> (Dir, std::path::PathBuf) {
    let root = Dir::new();
    root.write("outside.txt", "OUTSIDE-TEXT");
    let work = root.join("ws");
    root.write("ws/inside.txt", "INSIDE-TEXT");
    std::os::unix::fs::symlink(root.join("outside.txt"), work.join("link-to-outside")).unwrap();
    home.write(".ssh/id_rsa", "SSH-PRIVATE-KEY");
    home.write(".reasonix/.env", "DEEPSEEK_API_KEY=PROVIDER-KEY\n");
    (root, work)
}

fn sent(server: &FakeOpenAI, request: usize) -> String {
    server.requests()[request].body["messages"].to_string()
}

#[test]
fn a_repository_command_template_attaches_no_file_through_its_at_references() {
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let (root, work) = reference_bait(&home);
    root.write(
        "ws/.reasonix/commands/review.md",
        &format!(
            "Review this. @~/.ssh/id_rsa @{}/.reasonix/.env @../outside.txt @link-to-outside @inside.txt $ARGUMENTS",
            home.path().display()
        ),
    );
    let out = run(reasonix(&home, &work).args(["run", "/review now"]));
    assert_eq!(out.code, 0, "{out:?}");
    let body = sent(&server, 0);
    for secret in [
        "SSH-PRIVATE-KEY",
        "PROVIDER-KEY",
        "OUTSIDE-TEXT",
        "INSIDE-TEXT",
    ] {
        assert!(
            !body.contains(secret),
            "a template's @ reference attached {secret}: {body}"
        );
    }
    assert!(body.contains("@~/.ssh/id_rsa"), "left literal: {body}");
}

#[test]
fn typed_references_outside_the_workspace_or_hidden_are_refused_with_a_line() {
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let (_root, work) = reference_bait(&home);
    let out = run(reasonix(&home, &work).args([
        "run",
        "look at @inside.txt @../outside.txt @link-to-outside @~/.ssh/id_rsa",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let body = sent(&server, 0);
    assert!(body.contains("INSIDE-TEXT"), "{body}");
    for secret in ["OUTSIDE-TEXT", "SSH-PRIVATE-KEY"] {
        assert!(!body.contains(secret), "attached {secret}: {body}");
    }
    for target in ["@../outside.txt", "@link-to-outside", "@~/.ssh/id_rsa"] {
        assert!(
            out.stderr
                .lines()
                .any(|l| l.contains(&format!("cannot attach {target}:"))
                    && l.contains("outside the workspace")),
            "no refusal line for {target}\n{out:?}"
        );
    }
}
