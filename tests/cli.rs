//! The command-line skeleton: version, help, unknown commands and flags.

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{
    read_session, reasonix, run, run_with_stdin, session_files, use_fake_provider, Dir,
};

/// The build script, compiled here too so its choice of commit is tested without a build in
/// a copy of the tree (its `main` is unused here).
#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

/// The line names the version, the commit the build script stamped (from `.git`, else
/// `REASONIX_COMMIT`, else none: a distribution builds from a tarball without `.git`) and the
/// target triple. The script's environment reaches this test crate too, so the expected
/// commit is the one the binary was built with, whichever of the three cases this is.
#[test]
fn version_names_version_and_commit() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).arg("--version"));
    assert_eq!(out.code, 0, "{out:?}");
    let target = option_env!("REASONIX_TARGET").unwrap_or_default();
    // The target triple, for telling release archives apart.
    assert!(
        target.starts_with(&format!("{}-", std::env::consts::ARCH)),
        "{target}"
    );
    let expected = match option_env!("REASONIX_GIT_COMMIT") {
        Some(commit) => format!(
            "reasonix {} ({commit} {target})\n",
            env!("CARGO_PKG_VERSION")
        ),
        None => format!("reasonix {} ({target})\n", env!("CARGO_PKG_VERSION")),
    };
    assert_eq!(out.stdout, expected);
    // A tree with `.git` names its commit: the stamp is git's HEAD when git can say.
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if manifest.join(".git").exists() {
        let head = std::process::Command::new("git")
            .arg("-C")
            .arg(manifest)
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(head) = head {
            assert_eq!(option_env!("REASONIX_GIT_COMMIT"), Some(head.as_str()));
        }
    }
    let same = run(reasonix(&home, home.path()).arg("version"));
    assert_eq!(same.stdout, out.stdout);
}

/// `.git` wins; without it `REASONIX_COMMIT` (non-blank) names the commit; else none. git is
/// not asked at all without `.git`, so an enclosing repository's commit never leaks in.
#[test]
fn the_commit_comes_from_git_then_the_environment_then_nowhere() {
    use build_script::commit;
    let git = || Some("abc123def456\n".to_string());
    let env = || Some("fromtarball1".to_string());
    assert_eq!(commit(true, git, env()), Some("abc123def456".into()));
    assert_eq!(commit(true, git, None), Some("abc123def456".into()));
    // `.git` present but git cannot answer (not installed, no commit yet): the variable.
    assert_eq!(commit(true, || None, env()), Some("fromtarball1".into()));
    let never = || -> Option<String> { panic!("git asked without .git") };
    assert_eq!(commit(false, never, env()), Some("fromtarball1".into()));
    assert_eq!(commit(false, never, Some("  ".into())), None);
    assert_eq!(commit(false, never, None), None);
}

#[test]
fn help_lists_every_command_and_help_cmd_shows_its_flags() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).arg("help"));
    assert_eq!(out.code, 0, "{out:?}");
    for name in ["run", "setup", "models", "doctor", "tools", "help"] {
        assert!(
            out.stdout.contains(&format!("  {name} ")),
            "{name} missing: {out:?}"
        );
    }
    let run_help = run(reasonix(&home, home.path()).args(["help", "run"]));
    assert_eq!(run_help.code, 0, "{run_help:?}");
    assert!(
        run_help.stdout.contains("Usage: reasonix run"),
        "{run_help:?}"
    );
    assert!(run_help.stdout.contains("--cd"), "{run_help:?}");
}

/// Issue 35: the README said piped stdin to bare `reasonix` runs turns; it prints the
/// overview (the README now says so), reads nothing and sends nothing.
#[test]
fn piped_stdin_to_bare_reasonix_prints_the_overview_as_the_readme_says() {
    let home = Dir::new();
    let mut child = crate::util::spawn_piped(&mut reasonix(&home, home.path()));
    let mut stdin = child.stdin.take().expect("piped stdin");
    // The program may exit without reading it (that is the point), so a broken pipe is fine.
    let _ = std::io::Write::write_all(&mut stdin, b"hi\n");
    drop(stdin);
    let out: crate::util::Run = child.wait_with_output().expect("wait for reasonix").into();
    assert_eq!(out.code, 0, "{out:?}");
    let help = run(reasonix(&home, home.path()).arg("help"));
    assert_eq!(out.stdout, help.stdout);
}

#[test]
fn unknown_command_is_one_line_with_a_hint_and_exit_2() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).arg("rnu"));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "reasonix: unknown command `rnu`; did you mean `run`? run `reasonix help` for the list\n"
    );
}

#[test]
fn unknown_global_and_command_flags_exit_2() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).arg("--frobnicate"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("unknown flag `--frobnicate`"),
        "{out:?}"
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    let out = run(reasonix(&home, home.path()).args(["version", "--frobnicate"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("unknown flag `--frobnicate` for `reasonix version`"),
        "{out:?}"
    );
}

#[test]
fn unknown_flags_get_a_did_you_mean_from_the_documented_flags() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).args(["run", "--modle", "x", "hi"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "reasonix: unknown flag `--modle` for `reasonix run`; did you mean `--model`? run `reasonix help run` for its flags\n"
    );
    let out = run(reasonix(&home, home.path()).args(["chat", "--contineu"]));
    assert!(out.stderr.contains("did you mean `--continue`?"), "{out:?}");
    let out = run(reasonix(&home, home.path()).arg("--resum"));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "reasonix: unknown flag `--resum`; did you mean `--resume`? run `reasonix help` for the global flags\n"
    );
}

#[test]
fn bare_reasonix_on_a_first_run_without_a_key_shows_the_welcome() {
    let home = Dir::new();
    let mut cmd = reasonix(&home, home.path());
    cmd.env_remove("DEEPSEEK_API_KEY");
    let mut pty = Pty::spawn(cmd, 100, 40);
    pty.wait_text("Welcome to reasonix");
    let status = pty.wait_exit();
    let screen = pty.raw_text();
    assert_eq!(status.code(), Some(0), "{screen}");
    for part in [
        "$DEEPSEEK_API_KEY",
        "reasonix setup --api-key-stdin",
        "reasonix setup --base-url http://127.0.0.1:8080/v1",
        "make demo",
    ] {
        assert!(screen.contains(part), "missing {part}:\n{screen}");
    }
}

/// Bare `reasonix` takes the chat's flags: piped, it is the plain line chat, as `chat` is.
#[test]
fn bare_reasonix_takes_model_continue_and_resume_like_chat() {
    let server = FakeOpenAI::start(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply::text("third answer"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let chat = |args: &[&str], line: &str| {
        let out = run_with_stdin(
            reasonix(&home, work.path())
                .env("FAKE_API_KEY", "k")
                .args(args),
            line,
        );
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        format!("{out:?}")
    };
    let first = chat(&["-m", "fake/fake-model"], "one\n");
    assert!(first.contains("first answer"), "{first}");
    let second = chat(&["-c"], "two\n");
    assert!(second.contains("second answer"), "{second}");
    let requests = server.wait_for_requests(2);
    let contents: Vec<String> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        contents.contains(&"one".to_string()) && contents.contains(&"two".to_string()),
        "-c continued the first conversation: {contents:?}"
    );
    let session = session_files(&home).pop().unwrap();
    let id = read_session(&session).0["id"].as_str().unwrap().to_string();
    let third = chat(&["--resume", &id], "three\n");
    assert!(third.contains("third answer"), "{third}");
    let requests = server.wait_for_requests(3);
    let count = requests[2].body["messages"].as_array().unwrap().len();
    assert!(count >= 6, "--resume continued it: {count} messages");
}

/// The `api key` row of `reasonix doctor`.
fn doctor_key_row(home: &Dir, env: &[(&str, &str)]) -> String {
    let mut cmd = reasonix(home, home.path());
    cmd.arg("doctor").envs(env.iter().copied());
    let out = run(&mut cmd);
    out.stdout
        .lines()
        .find(|l| l.starts_with("api key"))
        .unwrap_or_else(|| panic!("no api key row: {out:?}"))
        .to_string()
}

#[test]
fn doctor_names_where_the_key_was_found() {
    let server = FakeOpenAI::start_with(|_| Reply::body(200, "application/json", r#"{"data":[]}"#));
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let row = doctor_key_row(&home, &[("FAKE_API_KEY", "k")]);
    assert!(
        row.contains("pass") && row.contains("environment variable FAKE_API_KEY"),
        "{row}"
    );
    let store = home.write(".reasonix/.env", "FAKE_API_KEY=from-store\n");
    let row = doctor_key_row(&home, &[]);
    assert!(
        row.contains("pass") && row.contains(&format!("FAKE_API_KEY in {}", store.display())),
        "{row}"
    );

    // A local server configured without `api_key_env`: nothing to find, and no `$ not set`.
    let local = Dir::new();
    local.write(
        ".reasonix/config.toml",
        &format!(
            "[[providers]]\nname = \"local\"\nbase_url = \"{}\"\nmodel = \"m\"\n",
            server.base_url()
        ),
    );
    let row = doctor_key_row(&local, &[]);
    assert!(!row.contains('$'), "{row}");
    assert!(row.contains("no api_key_env"), "{row}");
}

#[test]
fn help_after_a_command_shows_its_help_and_no_flag_suggests_itself() {
    let home = Dir::new();
    for command in ["run", "chat", "doctor", "models"] {
        let out = run(reasonix(&home, home.path()).args([command, "--model", "x", "--help"]));
        assert_eq!(out.code, 0, "{command}: {out:?}");
        assert!(
            out.stdout
                .starts_with(&format!("Usage: reasonix {command}")),
            "{command}: {out:?}"
        );
    }
    let out = run(reasonix(&home, home.path()).args(["doctor", "--versio"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(!out.stderr.contains("did you mean"), "{out:?}");
}
