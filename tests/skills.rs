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

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_skill_index_is_pinned_in_the_system_prompt_and_the_skill_tool_loads_a_body() {
    use crate::util::fake_openai::{FakeOpenAI, Reply};
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "skill", r#"{"name":"changelog","args":"v2.0"}"#)]),
        Reply::tool_calls(&[("c2", "skill", r#"{"name":"repo-skill"}"#)]),
        Reply::text("done"),
        Reply::text("again"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    crate::util::use_fake_provider(&home, &server.base_url(), "");
    home.write(
        ".reasonix/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write the changelog entry\n---\nWrite the entry for $ARGUMENTS.\n",
    );
    home.write(".reasonix/skills/changelog/references/style.md", "style");
    skill(
        &home,
        ".reasonix/skills/private",
        "name: private\ndescription: Only by hand\ninvocation: manual",
    );
    skill(
        &work,
        ".reasonix/skills/repo-skill",
        "name: repo-skill\ndescription: From the repository",
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("# Skills") && system.contains("- changelog: Write the changelog entry\n"),
        "{system}"
    );
    assert!(
        !system.contains("private") && !system.contains("repo-skill"),
        "{system}"
    );
    assert!(tool_names(&requests[0].body).contains(&"skill".to_string()));
    let loaded = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(loaded.contains("Write the entry for v2.0."), "{loaded}");
    assert!(loaded.contains("references/style.md"), "{loaded}");
    let untrusted = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        untrusted.contains("Do the thing.") && untrusted.contains("has not trusted"),
        "{untrusted}"
    );

    // A later skill does not change a session's pinned index.
    skill(
        &home,
        ".reasonix/skills/newer",
        "name: newer\ndescription: Added later",
    );
    let id = requests[0].body["messages"][0].clone();
    let again = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "-c", "more"]));
    assert_eq!(again.code, 0, "{}", again.stderr);
    let resumed = server.requests();
    assert_eq!(resumed[3].body["messages"][0], id);
}

#[test]
fn without_skills_the_tool_list_is_unchanged() {
    use crate::util::fake_openai::{FakeOpenAI, Reply};
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    crate::util::use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = &server.requests()[0].body;
    assert!(!tool_names(body).contains(&"skill".to_string()));
    assert!(!body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("# Skills"));
}

#[test]
fn a_skill_runs_as_a_slash_command_in_the_chat() {
    use crate::util::fake_openai::{FakeOpenAI, Reply};
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    crate::util::use_fake_provider(&home, &server.base_url(), "");
    home.write(
        ".reasonix/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write the changelog entry\n---\nWrite the entry for $ARGUMENTS.\n",
    );
    let out = crate::util::run_with_stdin(
        reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .arg("chat"),
        "/changelog v3.1\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = &server.requests()[0].body;
    let user = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.starts_with("<skill name=\"changelog\""), "{user}");
    assert!(user.contains("Write the entry for v3.1."), "{user}");
}
