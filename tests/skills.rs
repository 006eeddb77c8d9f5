//! `reasonix skills list` through the real binary: discovery across scopes, precedence,
//! `[skills]` settings, trust marking, symlinks out of the workspace, and malformed files
//! reported with `file:line`.

use serde_json::Value;

use crate::util::{reasonix, run, Dir};

fn skill(dir: &Dir, folder: &str, front: &str) {
    dir.write(
        &format!("{folder}/SKILL.md"),
        &format!("---\n{front}\n---\nDo the thing.\n"),
    );
}

fn list_json(home: &Dir, work: &Dir) -> Value {
    let out = run(reasonix(home, work.path()).args(["skills", "list", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn skills_list_shows_scopes_precedence_and_problems() {
    let home = Dir::new();
    let work = Dir::new();
    skill(
        &work,
        ".reasonix/skills/review",
        "name: review\ndescription: Project review",
    );
    skill(
        &home,
        ".reasonix/skills/review",
        "name: review\ndescription: User review",
    );
    skill(
        &home,
        ".agents/skills/changelog",
        "name: changelog\ndescription: >\n  Write the\n  changelog\ninvocation: manual",
    );
    skill(
        &work,
        ".claude/skills/broken",
        "name: broken\ndescription: x\nrunAs: later",
    );
    let out = run(reasonix(&home, work.path()).args(["skills", "list"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("review     [project, inline, auto, untrusted workspace]  Project review"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("changelog  [agents, inline, manual]  Write the changelog"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("User review"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("skills/review/SKILL.md: skill `review` is shadowed by the project skill"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            ".claude/skills/broken/SKILL.md:4: `runAs` must be inline or subagent, got `later`"
        ),
        "{}",
        out.stdout
    );

    let trusted = run(reasonix(&home, work.path()).arg("trust"));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let store = list_json(&home, &work);
    let review = &store["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "review")
        .unwrap();
    assert_eq!(review["trusted"], true);
    assert_eq!(review["scope"], "project");
}

#[test]
fn skills_settings_hide_roots_and_names_and_add_roots() {
    let home = Dir::new();
    let work = Dir::new();
    skill(&home, ".agents/skills/a", "name: a\ndescription: x");
    skill(&home, "extra/b", "name: b\ndescription: x");
    skill(&home, ".reasonix/skills/c", "name: c\ndescription: x");
    home.write(
        ".reasonix/config.toml",
        "[skills]\npaths = [\"~/extra\"]\nexcluded_paths = [\"~/.agents/skills\"]\ndisabled_skills = [\"c\"]\n",
    );
    let store = list_json(&home, &work);
    let names: Vec<&str> = store["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b"], "{store:#}");
    assert_eq!(store["disabled"], serde_json::json!(["c"]));
    let agents = store["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scope"] == "agents")
        .unwrap();
    assert_eq!(agents["excluded"], true);
}

#[test]
fn a_repository_cannot_list_your_files_as_skills_through_a_symlink() {
    let home = Dir::new();
    let work = Dir::new();
    skill(
        &home,
        "private/notes",
        "name: notes\ndescription: my private notes",
    );
    std::fs::create_dir_all(work.join(".reasonix/skills")).unwrap();
    std::os::unix::fs::symlink(
        home.join("private/notes"),
        work.join(".reasonix/skills/notes"),
    )
    .unwrap();
    let out = run(reasonix(&home, work.path()).args(["skills", "list"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("my private notes"), "{}", out.stdout);
    assert!(
        out.stdout.contains("outside the workspace"),
        "{}",
        out.stdout
    );
}
