//! What distribution ships besides the binary: the man page (`reasonix man`) and the shell
//! completions (`reasonix completions`), checked against the help the binary prints and the
//! flags its parsers accept, and the completions run in real shells.

use std::path::Path;
use std::process::Command;

use crate::util::{bin, reasonix, run, use_fake_provider, Dir};

/// The command names `reasonix help` lists.
fn command_names(home: &Dir) -> Vec<String> {
    let out = run(reasonix(home, home.path()).arg("help"));
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
        .split("Commands:\n")
        .nth(1)
        .expect("a command list")
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// `reasonix help NAME`.
fn help_of(home: &Dir, name: &str) -> String {
    let out = run(reasonix(home, home.path()).args(["help", name]));
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
}

/// Every `--flag` a text names, without the dashes.
fn long_flags(text: &str) -> Vec<String> {
    let mut flags: Vec<String> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "[],/()`=|'\"".contains(c)) {
        if let Some(name) = word.strip_prefix("--") {
            let name = name.trim_end_matches(['.', ':', ';']);
            if !name.is_empty() && !flags.iter().any(|f| f == name) {
                flags.push(name.to_string());
            }
        }
    }
    flags
}

/// The flags a help text lists in its flag tables and usage lines (not those its prose
/// mentions, such as `--trust-project` in `reasonix help trust`).
fn listed_flags(help: &str) -> Vec<String> {
    let listed: Vec<&str> = help
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            (t.len() < l.len() && t.starts_with('-'))
                || l.starts_with("Usage:")
                || l.starts_with("       reasonix")
        })
        .collect();
    long_flags(&listed.join("\n"))
}

/// The flags the command-line parsers under src/cli accept, read from their match arms
/// (`Arg::Long(n) if n == "model"`, `Arg::Short('m')`), unit tests left out.
fn parsed_flags() -> (Vec<String>, Vec<char>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut longs = Vec::new();
    let mut shorts = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (i, _) in code.match_indices("Arg::Long(") {
            let arm = &code[i..code[i..].find("=>").map_or(code.len(), |e| i + e)];
            if let Some(q) = arm.find("== \"") {
                let name = &arm[q + 4..];
                longs.push(name[..name.find('"').unwrap()].to_string());
            }
        }
        for (i, _) in code.match_indices("Arg::Short('") {
            shorts.push(code[i + 12..].chars().next().unwrap());
        }
    }
    assert!(longs.len() > 20 && shorts.len() > 3, "{longs:?} {shorts:?}");
    (longs, shorts)
}

fn man_page(home: &Dir) -> String {
    let out = run(reasonix(home, home.path()).arg("man"));
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
}

#[test]
fn man_page_documents_every_command_and_every_flag_of_its_help() {
    let home = Dir::new();
    let man = man_page(&home);
    assert!(man.starts_with(".\\\" Generated"), "{man:.200}");
    assert!(man.contains(&format!(
        ".TH REASONIX 1 \"\" \"reasonix {}\"",
        env!("CARGO_PKG_VERSION")
    )));
    let names = command_names(&home);
    assert!(names.contains(&"completions".to_string()) && names.contains(&"man".to_string()));
    for name in &names {
        let section = format!(".SH \"REASONIX {}\"\n", name.to_uppercase());
        let at = man
            .find(&section)
            .unwrap_or_else(|| panic!("no section for {name}"));
        let body = &man[at..];
        let body = &body[section.len()..body[1..].find("\n.SH ").map_or(body.len(), |e| e + 1)];
        let help = help_of(&home, name);
        // The global flags `reasonix help NAME` appends are documented once, in GLOBAL FLAGS.
        let own = help.split("Global flags:").next().unwrap();
        for flag in long_flags(own) {
            assert!(
                body.contains(&format!("\\-\\-{}", flag.replace('-', "\\-"))),
                "man section of {name} lacks --{flag}"
            );
        }
    }
    let global = man.split(".SH GLOBAL FLAGS").nth(1).unwrap();
    for flag in ["config", "cd", "help", "version"] {
        assert!(
            global.contains(&format!("\\fB\\-\\-{flag}\\fR")),
            "--{flag}"
        );
    }
}

#[test]
fn every_flag_the_parsers_accept_is_in_the_help_and_the_man_page() {
    let home = Dir::new();
    let man = man_page(&home).replace("\\-", "-");
    let mut helps = run(reasonix(&home, home.path()).arg("help")).stdout;
    for name in command_names(&home) {
        helps.push_str(&help_of(&home, &name));
    }
    let documented = long_flags(&helps);
    let (longs, shorts) = parsed_flags();
    for flag in longs {
        assert!(
            documented.contains(&flag),
            "--{flag} is parsed but no help names it"
        );
        assert!(
            man.contains(&format!("--{flag}")),
            "--{flag} is not in the man page"
        );
    }
    for c in shorts {
        assert!(
            helps.contains(&format!("-{c}, --")),
            "-{c} is parsed but no help names it"
        );
        assert!(
            man.contains(&format!("\\fB-{c}\\fR, ")),
            "-{c} is not in the man page"
        );
    }
}

#[test]
fn man_page_renders_without_roff_warnings() {
    if Command::new("groff").arg("--version").output().is_err() {
        eprintln!("skipped: groff is not installed");
        return;
    }
    let home = Dir::new();
    home.write("reasonix.1", &man_page(&home));
    let out = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww"])
        .arg(home.join("reasonix.1"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff warnings");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--output-format") || text.contains("‐‐output‐format"),
        "{text:.400}"
    );
}

/// A home whose config names two providers, for completing `-m`.
fn home_with_models() -> Dir {
    let home = Dir::new();
    use_fake_provider(&home, "http://127.0.0.1:9", "");
    let config = std::fs::read_to_string(home.join(".reasonix/config.toml")).unwrap();
    home.write(
        ".reasonix/config.toml",
        &format!(
            "{config}\n[[providers]]\nname = \"deep\"\nbase_url = \"http://127.0.0.1:9\"\nmodels = [\"deep-a\", \"deep-b\"]\napi_key_env = \"DEEP_API_KEY\"\n"
        ),
    );
    home
}

/// Completes `line` (words; the last is the word under the cursor) with the bash script in a
/// real bash and returns the candidates.
fn bash_complete(home: &Dir, script: &Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}' || exit 9\nCOMP_WORDS=('{}' {})\nCOMP_CWORD={}\n_reasonix\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        bin().display(),
        words.join(" "),
        line.len()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(program)
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("REASONIX_HOME", home.join(".reasonix"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completion_offers_every_command_flag_and_value() {
    let home = home_with_models();
    let script = run(reasonix(&home, home.path()).args(["completions", "bash"]));
    assert_eq!(script.code, 0, "{script:?}");
    home.write("reasonix.bash", &script.stdout);
    let script = home.join("reasonix.bash");
    let complete = |line: &[&str]| bash_complete(&home, &script, line);

    let names = command_names(&home);
    assert_eq!(complete(&[""]), names);
    for name in &names {
        let offered = complete(&[name, "--"]);
        let help = help_of(&home, name);
        for flag in listed_flags(&help) {
            if flag == "version" {
                continue; // only before a command
            }
            assert!(
                offered.contains(&format!("--{flag}")),
                "`reasonix {name} --<TAB>` lacks --{flag}: {offered:?}"
            );
        }
    }
    assert_eq!(
        complete(&["run", "--output-format", ""]),
        ["text", "json", "stream-json"]
    );
    assert_eq!(complete(&["chat", "--permission-mode", "y"]), ["yolo"]);
    assert_eq!(
        complete(&["subagent", ""]),
        ["list", "try", "run", "create", "edit", "delete"]
    );
    assert_eq!(
        complete(&["subagent", "try", "--output-f"]),
        ["--output-format"]
    );
    assert_eq!(complete(&["mcp", ""]), ["list", "call", "login", "logout"]);
    assert_eq!(complete(&["completions", ""]), ["bash", "zsh", "fish"]);
    assert_eq!(complete(&["help", "sub"]), ["subagent"]);
    // A global flag's value is not taken for the command.
    assert_eq!(complete(&["-C", "/", "run", "--max-s"]), ["--max-steps"]);
    assert_eq!(
        complete(&["--pl"]),
        ["--plan"],
        "bare reasonix takes chat flags"
    );
    // `-m` completes from the config without the network.
    assert_eq!(
        complete(&["run", "-m", ""]),
        [
            "fake",
            "fake-model",
            "fake/fake-model",
            "deep",
            "deep-a",
            "deep/deep-a",
            "deep-b",
            "deep/deep-b"
        ]
    );
    assert_eq!(
        complete(&["--model", "deep/"]),
        ["deep/deep-a", "deep/deep-b"]
    );
}

#[test]
fn completions_list_models_and_refuse_unknown_shells() {
    let home = home_with_models();
    let models = run(reasonix(&home, home.path()).args(["completions", "--models"]));
    assert_eq!(models.code, 0, "{models:?}");
    assert!(
        models
            .stdout
            .starts_with("fake\nfake-model\nfake/fake-model\ndeep\n"),
        "{models:?}"
    );
    let bad = run(reasonix(&home, home.path()).args(["completions", "tcsh"]));
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr
            .contains("no completions for shell `tcsh`; choose one of bash, zsh, fish"),
        "{bad:?}"
    );
    let none = run(reasonix(&home, home.path()).arg("completions"));
    assert_eq!(none.code, 2, "{none:?}");
}

#[test]
fn fish_completion_answers_in_a_real_fish() {
    if Command::new("fish").arg("--version").output().is_err() {
        eprintln!("skipped: fish is not installed");
        return;
    }
    let home = home_with_models();
    let script = run(reasonix(&home, home.path()).args(["completions", "fish"]));
    assert_eq!(script.code, 0, "{script:?}");
    home.write("reasonix.fish", &script.stdout);
    // fish's `complete -C` prints what Tab would offer, `candidate<TAB>description` per line.
    let complete = |line: &str| -> Vec<String> {
        let out = Command::new("fish")
            .arg("--no-config")
            .arg("-c")
            .arg(format!(
                "source {}; complete -C '{line}'",
                home.join("reasonix.fish").display()
            ))
            .env("HOME", home.path())
            .env("REASONIX_HOME", home.join(".reasonix"))
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", bin().parent().unwrap().display()),
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    let top = complete("reasonix ");
    for name in command_names(&home) {
        assert!(top.contains(&name), "{name}: {top:?}");
    }
    assert_eq!(
        complete("reasonix run --output-format "),
        ["json", "stream-json", "text"]
    );
    let sub = complete("reasonix subagent ");
    assert!(
        ["list", "try", "run"]
            .iter()
            .all(|s| sub.contains(&s.to_string())),
        "{sub:?}"
    );
    assert!(complete("reasonix run --max").contains(&"--max-steps".to_string()));
    assert!(complete("reasonix run -m deep/").contains(&"deep/deep-b".to_string()));
}

#[test]
fn zsh_completion_is_valid_zsh_naming_every_command_and_flag() {
    let home = Dir::new();
    let script = run(reasonix(&home, home.path()).args(["completions", "zsh"]));
    assert_eq!(script.code, 0, "{script:?}");
    assert!(script.stdout.starts_with("#compdef reasonix\n"));
    for name in command_names(&home) {
        assert!(script.stdout.contains(&format!("'{name}:")), "{name}");
        for flag in listed_flags(&help_of(&home, &name)) {
            assert!(
                script.stdout.contains(&format!("--{flag}")),
                "{name} --{flag}"
            );
        }
    }
    if Command::new("zsh").arg("--version").output().is_err() {
        eprintln!("skipped the syntax check: zsh is not installed");
        return;
    }
    home.write("_reasonix", &script.stdout);
    let check = Command::new("zsh")
        .arg("-n")
        .arg(home.join("_reasonix"))
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
    // Sourced (not autoloaded from $fpath), the script registers itself for `reasonix`.
    let sourced = Command::new("zsh")
        .arg("-fc")
        .arg(format!(
            "autoload -U compinit && compinit -u -D; source {} && print -r -- ${{_comps[reasonix]}}",
            home.join("_reasonix").display()
        ))
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&sourced.stdout),
        "_reasonix\n",
        "{sourced:?}"
    );
}

#[test]
fn make_install_and_uninstall_honour_destdir_and_prefix() {
    let root = Dir::new();
    let dest = root.join("stage");
    // `-o release`: install this test's binary instead of building a release one.
    let make = |target: &str| {
        let out = Command::new("make")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-s", "-o", "release", target])
            .arg(format!("BIN={}", bin().display()))
            .arg(format!("DESTDIR={}", dest.display()))
            .arg("PREFIX=/opt/rx")
            .output()
            .unwrap();
        assert!(out.status.success(), "make {target}: {out:?}");
    };
    make("install");
    let prefix = dest.join("opt/rx");
    let installed = [
        "bin/reasonix",
        "share/man/man1/reasonix.1",
        "share/bash-completion/completions/reasonix",
        "share/zsh/site-functions/_reasonix",
        "share/fish/vendor_completions.d/reasonix.fish",
    ];
    for file in installed {
        assert!(prefix.join(file).is_file(), "{file} not installed");
    }
    let home = Dir::new();
    let man = std::fs::read_to_string(prefix.join("share/man/man1/reasonix.1")).unwrap();
    assert_eq!(man, man_page(&home));
    let bash = std::fs::read_to_string(prefix.join(installed[2])).unwrap();
    assert!(bash.ends_with("complete -F _reasonix reasonix\n"), "{bash}");
    let version = run(Command::new(prefix.join("bin/reasonix")).arg("--version"));
    assert_eq!(version.code, 0, "{version:?}");
    make("uninstall");
    for file in installed {
        assert!(!prefix.join(file).exists(), "{file} left behind");
    }
}
