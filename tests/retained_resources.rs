//! Retained composition resources through the real binary (AGENT_COMPOSITIONS "Files and
//! retained resources"): binding a conversation freezes the skill files its composition
//! selected into a bundle under `<state>/trusted/agent-presets/retained/`, with their sha256
//! digests in the binding; the bound conversation uses the frozen copies, so a later edit of
//! the skill does not reach it; the bundle travels in the session archive and is checked on
//! import (digests, limits, paths); a symbolic link or a credential file in a selected skill
//! is refused at binding, so no bundle ever holds one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{files_under, read_session, reasonix, run, session_files, use_fake_provider};
use crate::util::{Dir, Run};

const OLD: &str = "Deploy with the OLD steps: tag, then push.";
const NEW: &str = "Deploy with the NEW steps: push, then tag.";

fn skill_file(body: &str) -> String {
    format!("---\nname: deploy\ndescription: Ships a release\n---\n{body}\n")
}

/// A home with the fake model answering `replies`, the skill `deploy` saying `body`, and the
/// composition `user:ship` selecting only that skill.
/// [`setup`], then a first conversation bound to `user:ship`.
fn bound(replies: Vec<Reply>, body: &str) -> (FakeOpenAI, Dir, Dir) {
    let (server, home, work) = setup(replies, body);
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:ship", "first"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    (server, home, work)
}

/// `session export` of the home's first conversation, as printed.
fn export_first(home: &Dir, work: &Path) -> String {
    let id = session_id(&session_files(home)[0]);
    let export = run(reasonix(home, work).args(["session", "export", &id]));
    assert_eq!(export.code, 0, "{export:?}");
    export.stdout
}

fn setup(replies: Vec<Reply>, body: &str) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    home.write(".reasonix/skills/deploy/SKILL.md", &skill_file(body));
    home.write(
        ".reasonix/skills/deploy/references/checklist.md",
        "1. tag\n",
    );
    create_ship(&home);
    (server, home, Dir::new())
}

fn create_ship(home: &Dir) {
    let work = Dir::new();
    let out = run(reasonix(home, work.path()).args([
        "agent",
        "create",
        "user:ship",
        "--skills",
        "deploy",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
}

fn run_in(home: &Dir, work: &Path, args: &[&str]) -> Run {
    run(reasonix(home, work)
        .arg("run")
        .args(args)
        .env("FAKE_API_KEY", "k"))
}

fn load_skill() -> Reply {
    Reply::tool_calls(&[("c1", "skill", r#"{"name":"deploy"}"#)])
}

/// The text of the `skill` tool's result in a request.
fn skill_result(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn retained_root(home: &Dir) -> PathBuf {
    home.join(".reasonix/trusted/agent-presets/retained")
}

fn session_id(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn a_bound_conversation_keeps_its_frozen_skill_after_the_file_is_edited() {
    let (server, home, work) = bound(
        vec![Reply::text("one"), load_skill(), Reply::text("done")],
        OLD,
    );
    // The binding records the bundle's digest and each file's sha256.
    let (header, _) = read_session(&session_files(&home)[0]);
    let retained = &header["composition"]["retained"];
    assert_eq!(retained["digest"].as_str().unwrap().len(), 64, "{header}");
    let files = retained["files"].as_object().unwrap();
    let names: Vec<&String> = files.keys().collect();
    assert_eq!(
        names,
        [
            "skills/deploy/SKILL.md",
            "skills/deploy/references/checklist.md"
        ]
    );
    let bundle = retained_root(&home).join(retained["digest"].as_str().unwrap());
    let frozen = std::fs::read_to_string(bundle.join("skills/deploy/SKILL.md")).unwrap();
    assert!(frozen.contains(OLD), "{frozen}");
    // The user edits the skill; the bound conversation still gets the frozen text.
    home.write(".reasonix/skills/deploy/SKILL.md", &skill_file(NEW));
    let out = run_in(&home, work.path(), &["--continue", "ship it"]);
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(3);
    let loaded = skill_result(&requests[2].body);
    assert!(loaded.contains(OLD), "{loaded}");
    assert!(!loaded.contains(NEW), "{loaded}");
}

/// A skill deleted after binding is still the bound conversation's: its frozen copy loads,
/// and the `skill` tool it was bound with is still offered.
#[test]
fn a_bound_conversation_keeps_a_skill_deleted_after_binding() {
    let (server, home, work) = bound(
        vec![Reply::text("one"), load_skill(), Reply::text("done")],
        OLD,
    );
    std::fs::remove_dir_all(home.join(".reasonix/skills/deploy")).unwrap();
    let out = run_in(&home, work.path(), &["--continue", "ship it"]);
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(3);
    assert_eq!(requests[1].body["tools"], requests[0].body["tools"]);
    assert!(skill_result(&requests[2].body).contains(OLD));
}

#[test]
fn a_new_conversation_binds_the_edited_skill() {
    let (server, home, work) = setup(vec![load_skill(), Reply::text("done")], NEW);
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:ship", "ship it"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    assert!(skill_result(&requests[1].body).contains(NEW));
}

/// A model that lists the workspace once in each of three turns (a tool call for the
/// `PostToolUse` hooks to follow), with a home and a workspace for it.
fn three_turns_with_a_tool_each() -> (FakeOpenAI, Dir, Dir) {
    let list = || Reply::tool_calls(&[("c1", "ls", r#"{"path":"."}"#)]);
    let server = FakeOpenAI::start(vec![
        list(),
        Reply::text("one"),
        list(),
        Reply::text("two"),
        list(),
        Reply::text("three"),
    ]);
    (server, Dir::new(), Dir::new())
}

/// A selected non-blocking hook runs the script it was bound with: the script file is frozen
/// in the bundle and the hook's command points at the copy, so a later edit of the script
/// reaches new conversations only. The safety hooks are never frozen.
#[test]
fn a_bound_conversation_runs_the_hook_script_it_was_bound_with() {
    let (server, home, work) = three_turns_with_a_tool_each();
    let out_file = work.join("hook-out.txt");
    // A workspace script named by a relative path (hooks run in the workspace), which
    // reads a sibling file of its folder: the folder is retained with it.
    work.write(
        "hooks/note.sh",
        &format!(
            ". \"$(dirname \"$0\")/word.sh\"\necho \"$WORD\" >> '{}'\n",
            out_file.display()
        ),
    );
    let sibling = work.write("hooks/word.sh", "WORD=OLD\n");
    use_fake_provider(
        &home,
        &server.base_url(),
        "[[hooks]]\nevent = \"PostToolUse\"\ncommand = \"sh hooks/note.sh\"\n",
    );
    let created = run(reasonix(&home, work.path()).args([
        "agent",
        "create",
        "user:noted",
        "--hooks",
        "PostToolUse",
    ]));
    assert_eq!(created.code, 0, "{created:?}");
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:noted", "first"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "OLD\n");
    let (header, _) = read_session(&session_files(&home)[0]);
    let files = header["composition"]["retained"]["files"]
        .as_object()
        .unwrap();
    assert!(files.contains_key("hooks/0/0/note.sh"), "{header}");
    assert!(files.contains_key("hooks/0/0/word.sh"), "{header}");

    std::fs::write(&sibling, "WORD=NEW\n").unwrap();
    let out = run_in(&home, work.path(), &["--continue", "again"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "OLD\nOLD\n");
    // A new conversation binds the script as it is now.
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:noted", "fresh"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap(),
        "OLD\nOLD\nNEW\n"
    );
}

/// A bound conversation exported from one home and imported into another home and workspace
/// continues with the frozen skill it carried, not the other home's file of that name.
#[test]
fn the_bundle_survives_export_and_import_into_another_home() {
    let (server, home, work) = bound(
        vec![Reply::text("one"), load_skill(), Reply::text("done")],
        OLD,
    );
    let export = export_first(&home, work.path());
    let archive: Value = serde_json::from_str(&export).unwrap();
    let resources = archive["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2, "{archive}");

    let other = Dir::new();
    use_fake_provider(&other, &server.base_url(), "");
    other.write(
        ".reasonix/skills/deploy/SKILL.md",
        &skill_file("The other home's deploy."),
    );
    create_ship(&other);
    let elsewhere = Dir::new();
    let file = elsewhere.write("archive.json", &export);
    let import = run(reasonix(&other, elsewhere.path())
        .args(["session", "import"])
        .arg(&file));
    assert_eq!(import.code, 0, "{import:?}");
    let imported = session_id(&session_files(&other)[0]);
    let out = run_in(
        &other,
        elsewhere.path(),
        &["--resume", &imported, "ship it"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(3);
    let loaded = skill_result(&requests[2].body);
    assert!(loaded.contains(OLD), "{loaded}");
    assert!(!loaded.contains("other home"), "{loaded}");
    assert!(!files_under(&retained_root(&other)).is_empty());
}

/// An archive's retained hooks are never run: an imported conversation that continues (its
/// composition exists here) keeps this machine's own hooks, so a hook script carried in the
/// archive cannot run a program on import or after.
#[test]
fn an_imported_conversation_never_runs_the_archives_hooks() {
    let list = || Reply::tool_calls(&[("c1", "ls", r#"{"path":"."}"#)]);
    let server = FakeOpenAI::start(vec![list(), Reply::text("one"), list(), Reply::text("two")]);
    let (home, work) = (Dir::new(), Dir::new());
    // The script writes where it runs: the workspace of the conversation.
    work.write("hooks/note.sh", "echo ran >> hook-ran.txt\n");
    use_fake_provider(
        &home,
        &server.base_url(),
        "[[hooks]]\nevent = \"PostToolUse\"\ncommand = \"sh hooks/note.sh\"\n",
    );
    let create = |home: &Dir| {
        let out = run(reasonix(home, work.path()).args([
            "agent",
            "create",
            "user:noted",
            "--hooks",
            "PostToolUse",
        ]));
        assert_eq!(out.code, 0, "{out:?}");
    };
    create(&home);
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:noted", "first"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        work.join("hook-ran.txt").exists(),
        "the hook ran where it was bound"
    );
    let export = export_first(&home, work.path());

    // Another home with the same composition and no hooks of its own.
    let other = Dir::new();
    use_fake_provider(&other, &server.base_url(), "");
    create(&other);
    let elsewhere = Dir::new();
    let file = elsewhere.write("archive.json", &export);
    let import = run(reasonix(&other, elsewhere.path())
        .args(["session", "import"])
        .arg(&file));
    assert_eq!(import.code, 0, "{import:?}");
    let imported = session_id(&session_files(&other)[0]);
    let out = run_in(&other, elsewhere.path(), &["--resume", &imported, "go on"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(server.wait_for_requests(4).len(), 4);
    assert!(
        !elsewhere.join("hook-ran.txt").exists(),
        "the archive's hook ran"
    );
}

/// The exported archive of a bound conversation, and a home to import it into.
fn exported() -> (String, Dir, Dir) {
    let (_server, home, work) = bound(vec![Reply::text("one")], OLD);
    let export = export_first(&home, work.path());
    (export, Dir::new(), Dir::new())
}

fn import(home: &Dir, work: &Dir, archive: &Value) -> Run {
    let file = work.write("archive.json", &archive.to_string());
    run(reasonix(home, work.path())
        .args(["session", "import"])
        .arg(&file))
}

fn assert_refused(out: &Run, code: &str, status: i32, home: &Dir) {
    assert_eq!(out.code, status, "{out:?}");
    assert!(out.stderr.starts_with(code), "{out:?}");
    assert_eq!(out.stderr.trim_end().lines().count(), 1, "{out:?}");
    assert!(session_files(home).is_empty());
    assert!(files_under(&retained_root(home)).is_empty());
}

#[test]
fn a_tampered_escaping_or_oversized_bundle_is_refused_on_import() {
    let (text, home, work) = exported();
    let archive: Value = serde_json::from_str(&text).unwrap();
    let skill_at = archive["resources"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["path"] == "skills/deploy/SKILL.md")
        .unwrap();

    // Each way the archive is spoiled, the code and exit status it is refused with, and what
    // the one line must name besides the code.
    type Spoil = fn(&mut Value, usize);
    let cases: [(&str, Spoil, &str, i32, &str); 6] = [
        (
            "other bytes than the digests recorded in the binding",
            |a, at| a["resources"][at]["base64"] = Value::from("WA=="),
            "session.archive_invalid",
            10,
            "sha256",
        ),
        (
            "a path that leaves the bundle",
            |a, at| a["resources"][at]["path"] = Value::from("skills/../../../.bashrc"),
            "session.archive_invalid",
            10,
            "",
        ),
        (
            "a file that is not in the binding's list",
            |a, at| {
                let mut planted = a["resources"][at].clone();
                planted["path"] = Value::from("skills/deploy/scripts/run.sh");
                a["resources"].as_array_mut().unwrap().push(planted);
            },
            "session.archive_invalid",
            10,
            "",
        ),
        (
            "a credential file's name",
            |a, at| a["resources"][at]["path"] = Value::from("skills/deploy/.env"),
            "session.archive_invalid",
            10,
            "",
        ),
        (
            "one file over the per-file limit: refused on its size, before any digest",
            |a, at| a["resources"][at]["base64"] = Value::from("A".repeat(2 * 1024 * 1024)),
            "session.archive_too_large",
            12,
            "",
        ),
        (
            "resources without a binding to record them",
            |a, _| {
                a["binding"] = Value::Null;
                a["session"]["schema"] = Value::from(1);
            },
            "session.archive_invalid",
            10,
            "",
        ),
    ];
    for (what, spoil, code, status, names) in cases {
        let mut spoiled = archive.clone();
        spoil(&mut spoiled, skill_at);
        let out = import(&home, &work, &spoiled);
        assert_refused(&out, code, status, &home);
        assert!(out.stderr.contains(names), "{what}: {out:?}");
    }

    // The untouched archive imports.
    let out = import(&home, &work, &archive);
    assert_eq!(out.code, 0, "{out:?}");
}

/// A selected skill holding a symbolic link or a credential file is refused at binding, with
/// one line naming the file: a bundle never holds either (it is exported with the
/// conversation), and dropping the file silently would bind another skill than the user's.
#[test]
fn a_symlink_or_credential_file_in_a_selected_skill_is_refused_at_binding() {
    for (what, plant) in [
        ("link", "symlink"),
        (".env", "file"),
        ("id_ed25519", "file"),
    ] {
        let (server, home, work) = setup(vec![Reply::text("one")], OLD);
        let skill = home.join(".reasonix/skills/deploy");
        let target = skill.join(what);
        if plant == "symlink" {
            let secret = home.write("secret.txt", "s3cret");
            std::os::unix::fs::symlink(secret, &target).unwrap();
        } else {
            std::fs::write(&target, "TOKEN=s3cret\n").unwrap();
        }
        let out = run_in(
            &home,
            work.path(),
            &["--agent-composition", "user:ship", "first"],
        );
        assert_eq!(out.code, 6, "{what}: {out:?}");
        assert!(
            out.stderr.contains("agent_composition.unavailable: ") && out.stderr.contains(what),
            "{what}: {out:?}"
        );
        assert!(server.requests().is_empty(), "{what}");
        assert!(files_under(&retained_root(&home)).is_empty(), "{what}");
    }
}

/// Claude Code's settings files are a source of hooks like `[[hooks]]`: a bound conversation
/// keeps the selected non-blocking ones as they were at binding, and one bound without them
/// runs none.
#[test]
fn claude_settings_hooks_follow_the_binding() {
    let (server, home, work) = three_turns_with_a_tool_each();
    let out_file = work.join("hook-out.txt");
    let settings = |word: &str| {
        format!(
            r#"{{"hooks":{{"PostToolUse":[{{"hooks":[{{"type":"command","command":"echo {word} >> {}"}}]}}]}}}}"#,
            out_file.display()
        )
    };
    home.write(".claude/settings.json", &settings("OLD"));
    use_fake_provider(&home, &server.base_url(), "");
    for (name, hooks) in [("user:noted", "PostToolUse"), ("user:quiet", "Stop")] {
        let created = run(reasonix(&home, work.path())
            .args(["agent", "create", name, "--hooks", hooks, "--skills", ""]));
        assert_eq!(created.code, 0, "{created:?}");
    }
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:noted", "first"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "OLD\n");

    home.write(".claude/settings.json", &settings("NEW"));
    let out = run_in(&home, work.path(), &["--continue", "again"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap(),
        "OLD\nOLD\n",
        "the bound conversation runs the hook as it was at binding"
    );
    let out = run_in(
        &home,
        work.path(),
        &["--agent-composition", "user:quiet", "fresh"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap(),
        "OLD\nOLD\n",
        "a binding without PostToolUse runs no PostToolUse hook of the settings files"
    );
}
