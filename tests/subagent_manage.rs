//! `reasonix subagent create | edit | delete` through the real binary: a profile's life from
//! creation to deletion (listed, tried against the fake model, edited), the scope defaults,
//! every refusal with its one-line reason, symlinks that try to lead a write or an unlink out
//! of the root, and a failed write that leaves nothing half done.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{bin, reasonix, run, run_with_stdin, use_fake_provider, Dir, Run};

fn subagent(home: &Dir, work: &Path, args: &[&str]) -> Run {
    run(reasonix(home, work).arg("subagent").args(args))
}

fn system(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The names in `dir`, sorted; empty when it does not exist.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Refused: exit 2, nothing on stdout and one line on stderr that contains `reason`.
fn assert_refused(out: &Run, reason: &str) {
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(lines[0].contains(reason), "{reason:?} not in {out:?}");
}

const HELPER: &str = "---\nname: helper\ndescription: Counts things\nrunAs: subagent\ninvocation: manual\nmodel: fake-model\n---\nYou are the helper.\n";

#[test]
fn a_profile_is_created_listed_tried_edited_and_deleted() {
    let server = FakeOpenAI::start(vec![Reply::text("counted"), Reply::text("again")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let created = subagent(
        &home,
        work.path(),
        &[
            "create",
            "helper",
            "--description",
            "Counts things",
            "--model",
            "fake-model",
            "--prompt",
            "You are the helper.",
        ],
    );
    assert_eq!(created.code, 0, "{created:?}");
    // The workspace is not trusted, so the default scope is the user's.
    let file = home.join(".reasonix/skills/helper/SKILL.md");
    assert_eq!(
        created.stdout,
        format!("Created user profile `helper`: {}\n", file.display())
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), HELPER);
    assert_eq!(names(&home.join(".reasonix/skills")), ["helper"]);

    let listed = subagent(&home, work.path(), &["list"]);
    assert!(
        listed
            .stdout
            .contains("helper   [user, model fake-model]  Counts things"),
        "{listed:?}"
    );

    let tried = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "subagent",
        "try",
        "helper",
        "count the files",
    ]));
    assert_eq!(tried.code, 0, "{tried:?}");
    assert_eq!(system(&server.requests()[0].body), "You are the helper.");

    let edited = run_with_stdin(
        reasonix(&home, work.path()).args([
            "subagent",
            "edit",
            "helper",
            "--description",
            "Counts: files",
            "--effort",
            "high",
            "--prompt-file",
            "-",
        ]),
        "You count files.\n\n",
    );
    assert_eq!(edited.code, 0, "{edited:?}");
    assert_eq!(
        edited.stdout,
        format!("Updated user profile `helper`: {}\n", file.display())
    );
    // The model nobody asked to change is kept.
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "---\nname: helper\ndescription: \"Counts: files\"\nrunAs: subagent\ninvocation: manual\nmodel: fake-model\neffort: high\n---\nYou count files.\n"
    );
    let again = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "subagent",
        "try",
        "helper",
        "count again",
    ]));
    assert_eq!(again.code, 0, "{again:?}");
    let body = &server.requests()[1].body;
    assert_eq!(system(body), "You count files.");
    assert_eq!(body["reasoning_effort"], "high");

    // The same values in another layout are no change: the file is left as it is.
    let relaid = std::fs::read_to_string(&file)
        .unwrap()
        .replace("effort: high", "effort: 'high'");
    std::fs::write(&file, &relaid).unwrap();
    let same = subagent(&home, work.path(), &["edit", "helper", "--effort", "high"]);
    assert_eq!(same.code, 0, "{same:?}");
    assert!(
        same.stdout
            .starts_with("No change to user profile `helper`"),
        "{same:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), relaid);
    let cleared = subagent(&home, work.path(), &["edit", "helper", "--model", ""]);
    assert_eq!(cleared.code, 0, "{cleared:?}");
    assert!(!std::fs::read_to_string(&file).unwrap().contains("model:"));

    // Without a terminal, delete asks for --yes instead of waiting for an answer.
    let unconfirmed = subagent(&home, work.path(), &["delete", "helper"]);
    assert_refused(
        &unconfirmed,
        "deleting needs --yes when stdin is not a terminal",
    );
    assert!(file.exists());
    let deleted = subagent(&home, work.path(), &["delete", "helper", "--yes"]);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    assert_eq!(
        deleted.stdout,
        format!(
            "Deleted user profile `helper`: {}\n",
            home.join(".reasonix/skills/helper").display()
        )
    );
    assert!(names(&home.join(".reasonix/skills")).is_empty());
    let listed = subagent(&home, work.path(), &["list"]);
    assert!(!listed.stdout.contains("helper"), "{listed:?}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn create_writes_the_project_when_the_workspace_is_trusted_and_reads_a_piped_prompt() {
    let home = Dir::new();
    let work = Dir::new();
    let trusted = run(reasonix(&home, work.path()).args(["trust"]));
    assert_eq!(trusted.code, 0, "{trusted:?}");
    let out = run_with_stdin(
        reasonix(&home, work.path()).args([
            "subagent",
            "create",
            "reviewer",
            "--description",
            "Reviews",
        ]),
        "Review the change.\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let file = work.join(".reasonix/skills/reviewer/SKILL.md");
    assert!(
        out.stdout.starts_with("Created project profile `reviewer`"),
        "{out:?}"
    );
    assert!(out.stderr.is_empty(), "{out:?}");
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .ends_with("runAs: subagent\ninvocation: manual\n---\nReview the change.\n"));
    // The user scope on request, where the project profile of the same name wins.
    let user = subagent(
        &home,
        work.path(),
        &[
            "create",
            "reviewer",
            "--user",
            "--description",
            "Mine",
            "--prompt",
            "Mine.",
        ],
    );
    assert_eq!(user.code, 0, "{user:?}");
    assert!(
        user.stderr.contains("reasonix: note: the project skill in"),
        "{user:?}"
    );
    // edit without a scope takes the winner; --user reaches the shadowed one.
    let edited = subagent(
        &home,
        work.path(),
        &["edit", "reviewer", "--user", "--prompt", "Mine, edited."],
    );
    assert_eq!(edited.code, 0, "{edited:?}");
    assert!(
        edited.stdout.starts_with("Updated user profile"),
        "{edited:?}"
    );
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .ends_with("Review the change.\n"));
}

#[test]
fn a_project_profile_in_an_untrusted_workspace_says_it_runs_read_only() {
    let home = Dir::new();
    let work = Dir::new();
    let out = subagent(
        &home,
        work.path(),
        &[
            "create",
            "review",
            "--project",
            "--description",
            "Ours",
            "--prompt",
            "Review.",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(work.join(".reasonix/skills/review/SKILL.md").is_file());
    assert!(
        out.stderr
            .contains("it replaces the built-in profile `review`"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("runs read-only until you trust it"),
        "{out:?}"
    );
}

#[test]
fn create_refuses_bad_input_and_an_existing_profile() {
    let home = Dir::new();
    let work = Dir::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["create", "../escape", "--description", "d", "--prompt", "p"],
            "profile name: `../escape` is not a valid skill name",
        ),
        (
            &[
                "create",
                "x",
                "--description",
                "d",
                "--effort",
                "hgih",
                "--prompt",
                "p",
            ],
            "profile effort: `hgih` is not one of",
        ),
        (
            &[
                "create",
                "x",
                "--description",
                "two\nlines",
                "--prompt",
                "p",
            ],
            "profile description: it must be one line",
        ),
        (
            &["create", "x", "--prompt", "p"],
            "profile description: it is empty",
        ),
        // stdin is /dev/null: an empty prompt, never a wait for an editor.
        (
            &["create", "x", "--description", "d"],
            "profile prompt: it is empty",
        ),
        (&["create", "x"], "a new profile needs --description TEXT"),
        (
            &["create"],
            "`reasonix subagent create` needs a profile NAME",
        ),
        (&["create", "a", "b"], "takes one NAME"),
        (&["delete", "x", "--prompt", "p"], "unknown flag `--prompt`"),
    ];
    for (args, reason) in cases {
        assert_refused(&subagent(&home, work.path(), args), reason);
    }
    assert!(names(&home.join(".reasonix/skills")).is_empty());
    home.write(".reasonix/skills/helper/SKILL.md", HELPER);
    assert_refused(
        &subagent(
            &home,
            work.path(),
            &["create", "helper", "--description", "d", "--prompt", "p"],
        ),
        "a user skill `helper` already exists",
    );
    assert_eq!(home.read(".reasonix/skills/helper/SKILL.md"), HELPER);
}

#[test]
fn edit_and_delete_refuse_what_they_do_not_manage_and_change_nothing() {
    let home = Dir::new();
    let work = Dir::new();
    let custom = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &format!("[skills]\npaths = [\"{}\"]\n", custom.path().display()),
    );
    let profile = |name: &str, extra: &str| {
        format!("---\nname: {name}\ndescription: d\nrunAs: subagent\n{extra}---\nBody.\n")
    };
    let managed = |name: &str, extra: &str| profile(name, &format!("invocation: manual\n{extra}"));
    let files = [
        home.write(
            ".reasonix/skills/inline/SKILL.md",
            "---\nname: inline\ndescription: d\n---\nBody.\n",
        ),
        home.write(
            ".reasonix/skills/tools/SKILL.md",
            &managed("tools", "allowed-tools: Read\n"),
        ),
        home.write(".reasonix/skills/auto/SKILL.md", &profile("auto", "")),
        home.write(
            ".reasonix/skills/noted/SKILL.md",
            &managed("noted", "# keep this model\n"),
        ),
        home.write(".reasonix/skills/refs/SKILL.md", &managed("refs", "")),
        home.write(".reasonix/skills/refs/references/a.md", "a"),
        home.write(
            ".reasonix/skills/scripted/SKILL.md",
            &managed("scripted", ""),
        ),
        home.write(".reasonix/skills/scripted/scripts/run.sh", "echo"),
        home.write(".reasonix/skills/folder/SKILL.md", &managed("named", "")),
        home.write(".agents/skills/agent/SKILL.md", &managed("agent", "")),
        work.write(".claude/skills/claude/SKILL.md", &managed("claude", "")),
        custom.write("shared/SKILL.md", &managed("shared", "")),
    ];
    let before: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let cases: &[(&str, &str)] = &[
        ("explore", "`explore` is a built-in profile with no file; set its model or effort with agent.subagent_models"),
        ("inline", "profile `inline`: it is an inline skill"),
        ("tools", "its frontmatter has keys `reasonix subagent` does not manage (allowed-tools)"),
        ("auto", "profile `auto`: it is not a manual profile"),
        ("noted", "profile `noted`: its frontmatter has `#` comment lines"),
        ("refs", "the folder holds more than SKILL.md (references)"),
        ("scripted", "the folder holds more than SKILL.md (scripts)"),
        ("folder", "profile `named`: its name differs from its folder `folder`"),
        ("named", "the skill `named` in"),
        ("agent", "lives in the agents convention root"),
        ("claude", "lives in the claude convention root"),
        ("shared", "lives in the [skills] paths root"),
        ("nosuch", "there is no subagent profile `nosuch`"),
    ];
    for (name, reason) in cases {
        assert_refused(
            &subagent(&home, work.path(), &["edit", name, "--description", "new"]),
            reason,
        );
        assert_refused(
            &subagent(&home, work.path(), &["delete", name, "--yes"]),
            reason,
        );
    }
    assert_refused(
        &subagent(
            &home,
            work.path(),
            &["edit", "inline", "--project", "--prompt", "x"],
        ),
        "there is no project profile `inline`",
    );
    // Headless edit with nothing to change never opens an editor.
    home.write(".reasonix/skills/helper/SKILL.md", HELPER);
    assert_refused(
        &subagent(&home, work.path(), &["edit", "helper"]),
        "nothing to change",
    );
    let after: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn a_symlinked_profile_folder_cannot_lead_edit_or_delete_outside_the_root() {
    let home = Dir::new();
    let work = Dir::new();
    let outside = Dir::new();
    let target = outside.write("evil/SKILL.md", &HELPER.replace("helper", "evil"));
    let original = std::fs::read_to_string(&target).unwrap();
    for root in [home.join(".reasonix/skills"), work.join(".reasonix/skills")] {
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(outside.join("evil"), root.join("evil")).unwrap();
    }
    for scope in ["--user", "--project"] {
        assert_refused(
            &subagent(
                &home,
                work.path(),
                &["edit", "evil", scope, "--prompt", "pwned"],
            ),
            "the profile folder is a symlink",
        );
        assert_refused(
            &subagent(&home, work.path(), &["delete", "evil", scope, "--yes"]),
            "the profile folder is a symlink",
        );
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), original);
    assert_eq!(names(&outside.join("evil")), ["SKILL.md"]);
}

#[test]
fn a_symlinked_skill_md_is_never_written_through_or_unlinked() {
    let home = Dir::new();
    let work = Dir::new();
    let outside = Dir::new();
    let target = outside.write("SKILL.md", &HELPER.replace("helper", "evil"));
    let original = std::fs::read_to_string(&target).unwrap();
    let folder = work.join(".reasonix/skills/evil");
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(&target, folder.join("SKILL.md")).unwrap();
    assert_refused(
        &subagent(&home, work.path(), &["edit", "evil", "--prompt", "pwned"]),
        "its SKILL.md is a symlink",
    );
    assert_refused(
        &subagent(&home, work.path(), &["delete", "evil", "--yes"]),
        "its SKILL.md is a symlink",
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), original);
    assert!(folder.join("SKILL.md").is_symlink());
}

#[test]
fn a_project_skills_folder_linked_outside_the_workspace_gets_nothing() {
    let home = Dir::new();
    let work = Dir::new();
    let outside = Dir::new();
    std::fs::create_dir_all(work.join(".reasonix")).unwrap();
    std::os::unix::fs::symlink(outside.path(), work.join(".reasonix/skills")).unwrap();
    assert_refused(
        &subagent(
            &home,
            work.path(),
            &[
                "create",
                "evil",
                "--project",
                "--description",
                "d",
                "--prompt",
                "p",
            ],
        ),
        "resolves to",
    );
    assert!(names(outside.path()).is_empty());
}

/// `reasonix` under `sh` with `ulimit -f 0` and SIGXFSZ ignored: every write of a byte to a
/// file fails with EFBIG, the way a full disk would fail it.
fn with_no_room(home: &Dir, work: &Path, args: &[&str]) -> Run {
    let base = reasonix(home, work);
    let mut sh = Command::new("sh");
    sh.current_dir(work).stdin(Stdio::null());
    for (key, value) in base.get_envs() {
        match value {
            Some(value) => sh.env(key, value),
            None => sh.env_remove(key),
        };
    }
    sh.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 0; exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args);
    run(&mut sh)
}

#[test]
fn a_failed_write_leaves_the_old_profile_whole_and_no_staging_behind() {
    let home = Dir::new();
    let work = Dir::new();
    let file = home.write(".reasonix/skills/helper/SKILL.md", HELPER);
    let edit = with_no_room(
        &home,
        work.path(),
        &["subagent", "edit", "helper", "--prompt", "A new prompt."],
    );
    assert_eq!(edit.code, 1, "{edit:?}");
    assert!(edit.stderr.contains("writing "), "{edit:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), HELPER);
    assert_eq!(names(&home.join(".reasonix/skills/helper")), ["SKILL.md"]);
    let create = with_no_room(
        &home,
        work.path(),
        &[
            "subagent",
            "create",
            "other",
            "--user",
            "--description",
            "d",
            "--prompt",
            "p",
        ],
    );
    assert_eq!(create.code, 1, "{create:?}");
    assert!(
        create.stderr.contains("creating the profile in"),
        "{create:?}"
    );
    assert_eq!(names(&home.join(".reasonix/skills")), ["helper"]);
    // What a crash mid-write leaves (a temp file of ours) neither blocks an edit nor keeps
    // the folder from being deleted.
    home.write(
        ".reasonix/skills/helper/.SKILL.md.reasonix-tmp-1-0",
        "partial",
    );
    let edit = subagent(
        &home,
        work.path(),
        &["edit", "helper", "--prompt", "Later."],
    );
    assert_eq!(edit.code, 0, "{edit:?}");
    let delete = subagent(&home, work.path(), &["delete", "helper", "--yes"]);
    assert_eq!(delete.code, 0, "{delete:?}");
    assert!(names(&home.join(".reasonix/skills")).is_empty());
}

#[test]
fn run_never_turns_a_created_profile_into_a_slash_command() {
    let server = FakeOpenAI::start(vec![Reply::text("plain")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    home.write(".reasonix/skills/helper/SKILL.md", HELPER);
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "/helper count the files"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("unknown command /helper"), "{out:?}");
    assert!(server.requests().is_empty());
}

/// An `$EDITOR` that applies `sed` expressions to the file it is given.
fn sed_editor(dir: &Dir, expressions: &str) -> String {
    let script = dir.write(
        "editor.sh",
        &format!("#!/bin/sh\nsed -i {expressions} \"$1\"\n"),
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script.display().to_string()
}

#[test]
fn on_a_terminal_create_and_edit_open_the_editor() {
    let home = Dir::new();
    let work = Dir::new();
    let tools = Dir::new();
    let fill = sed_editor(
        &tools,
        "-e 's/^description: $/description: From the editor/' -e 's/^Replace this text.*/You came from the editor./'",
    );
    let mut cmd = reasonix(&home, work.path());
    cmd.env_remove("VISUAL")
        .env("EDITOR", &fill)
        .args(["subagent", "create", "helper", "--user"]);
    let mut pty = crate::util::pty::Pty::spawn(cmd, 120, 20);
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    assert_eq!(
        home.read(".reasonix/skills/helper/SKILL.md"),
        "---\nname: helper\ndescription: From the editor\nrunAs: subagent\ninvocation: manual\n---\nYou came from the editor.\n"
    );
    let change = sed_editor(&tools, "-e 's/came from/were edited in/'");
    let mut cmd = reasonix(&home, work.path());
    cmd.env("VISUAL", &change)
        .args(["subagent", "edit", "helper"]);
    let mut pty = crate::util::pty::Pty::spawn(cmd, 120, 20);
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    assert!(home
        .read(".reasonix/skills/helper/SKILL.md")
        .ends_with("---\nYou were edited in the editor.\n"));
    // An edit that breaks the file changes nothing and keeps the text for the person.
    let breaking = sed_editor(&tools, "-e 's/^runAs: subagent$/allowed-tools: Read/'");
    let mut cmd = reasonix(&home, work.path());
    cmd.env("VISUAL", &breaking)
        .args(["subagent", "edit", "helper"]);
    let mut pty = crate::util::pty::Pty::spawn(cmd, 200, 20);
    let status = pty.wait_exit();
    assert_eq!(status.code(), Some(2), "{}", pty.screen());
    let raw = pty.raw_text();
    let kept = raw
        .split("your text is kept in ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("{raw}"));
    let kept = Path::new(kept.trim());
    assert!(
        std::fs::read_to_string(kept)
            .unwrap()
            .contains("allowed-tools: Read"),
        "{raw}"
    );
    std::fs::remove_dir_all(kept.parent().unwrap()).unwrap();
    assert!(home
        .read(".reasonix/skills/helper/SKILL.md")
        .contains("runAs: subagent\n"));
    // The delete question is answered on the terminal.
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["subagent", "delete", "helper"]);
    let mut pty = crate::util::pty::Pty::spawn(cmd, 200, 20);
    pty.wait_text("[y/N]");
    pty.send("y\r");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    assert!(!home.join(".reasonix/skills/helper").exists());
}

#[test]
fn create_with_a_terminal_stdin_but_redirected_output_neither_waits_nor_edits() {
    let home = Dir::new();
    let work = Dir::new();
    // stdin is the terminal, stdout a file: no editor can draw, and reading the terminal
    // until end of file would wait on a person who sees no prompt.
    let base = reasonix(&home, work.path());
    let mut sh = Command::new("sh");
    sh.current_dir(work.path());
    for (key, value) in base.get_envs() {
        match value {
            Some(value) => sh.env(key, value),
            None => sh.env_remove(key),
        };
    }
    sh.env("EDITOR", "false")
        .arg("-c")
        .arg("\"$0\" \"$@\" > out.txt 2>&1")
        .arg(bin())
        .args([
            "subagent",
            "create",
            "helper",
            "--user",
            "--description",
            "d",
        ]);
    let mut pty = crate::util::pty::Pty::spawn(sh, 120, 20);
    assert_eq!(pty.wait_exit().code(), Some(2), "{}", work.read("out.txt"));
    assert!(
        work.read("out.txt")
            .contains("give the prompt with --prompt TEXT or --prompt-file PATH"),
        "{}",
        work.read("out.txt")
    );
    assert!(!home.join(".reasonix/skills/helper").exists());
}
