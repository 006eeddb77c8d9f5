//! The command-line skeleton: version, help, unknown commands and flags.

use crate::util::{reasonix, run, Dir};

#[test]
fn version_names_version_and_commit() {
    let home = Dir::new();
    let out = run(reasonix(&home, home.path()).arg("--version"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with(&format!("reasonix {}", env!("CARGO_PKG_VERSION"))),
        "{out:?}"
    );
    let same = run(reasonix(&home, home.path()).arg("version"));
    assert_eq!(same.stdout, out.stdout);
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
