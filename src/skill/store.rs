//! Finding skills: the roots in precedence order, one folder per skill, the nearer scope
//! winning a name (with a diagnostic), `excluded_paths` hiding a root and `disabled_skills`
//! hiding a name everywhere. Reading is bounded (skills per root, `SKILL.md` size) and never
//! leaves a repository root through a symlink, since a repository could otherwise point a
//! skill at any file the user can read.

use std::fs;
use std::path::{Path, PathBuf};

use super::{from_document, frontmatter, Diagnostic, Scope, Skill};

/// The largest `SKILL.md` read; a bigger one is reported and skipped.
pub const MAX_SKILL_FILE: u64 = 256 * 1024;
/// Folders looked at per root; the rest are reported and skipped.
pub const MAX_SKILLS_PER_ROOT: usize = 512;
const MAX_REFERENCES: usize = 200;

/// Where to look, from configuration and the environment.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    /// The workspace.
    pub workspace: PathBuf,
    /// The reasonix home (`<home>/skills/`).
    pub home: Option<PathBuf>,
    /// The user's own home directory, for `~/.agents/skills/` and `~` in paths.
    pub user_home: Option<PathBuf>,
    /// `[skills] paths`, as written.
    pub paths: Vec<String>,
    /// `[skills] excluded_paths`, as written.
    pub excluded_paths: Vec<String>,
    /// `[skills] disabled_skills`.
    pub disabled: Vec<String>,
    /// Whether the workspace is trusted (its skills are repository content otherwise).
    pub workspace_trusted: bool,
    /// `~/.claude/skills/`, when believed as the user's (`config::claude::user_path`: outside
    /// everything the session may write).
    pub claude_skills: Option<PathBuf>,
    /// `~/.claude/agents/`, likewise: each `*.md` is read as a subagent profile.
    pub claude_agents: Option<PathBuf>,
}

/// A root searched, with whether it exists and whether it was hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub scope: Scope,
    pub path: PathBuf,
    pub excluded: bool,
}

/// The skills that apply, in name order, plus what was hidden and why.
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub skills: Vec<Skill>,
    /// Names hidden by `disabled_skills`.
    pub disabled: Vec<String>,
    pub roots: Vec<Root>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Store {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

impl Roots {
    /// The roots in precedence order, nearest first.
    pub fn list(&self) -> Vec<Root> {
        let mut roots = vec![(
            Scope::Project,
            self.workspace.join(".reasonix").join("skills"),
        )];
        if let Some(home) = &self.home {
            roots.push((Scope::User, home.join("skills")));
        }
        if let Some(user_home) = &self.user_home {
            roots.push((Scope::Agents, user_home.join(".agents").join("skills")));
        }
        if let Some(dir) = &self.claude_skills {
            roots.push((Scope::ClaudeUser, dir.clone()));
        }
        if let Some(dir) = &self.claude_agents {
            roots.push((Scope::ClaudeAgents, dir.clone()));
        }
        roots.push((Scope::Claude, self.workspace.join(".claude").join("skills")));
        // A repository's agents become profiles that run with the session's tools: only a
        // trusted workspace's are read (`app::skills` reports the ignored ones).
        if self.workspace_trusted {
            roots.push((
                Scope::ClaudeProjectAgents,
                self.workspace.join(".claude").join("agents"),
            ));
        }
        for path in &self.paths {
            roots.push((Scope::Custom(path.clone()), self.expand(path)));
        }
        let excluded: Vec<PathBuf> = self
            .excluded_paths
            .iter()
            .map(|p| canonical(&self.expand(p)))
            .collect();
        roots
            .into_iter()
            .map(|(scope, path)| Root {
                excluded: excluded.contains(&canonical(&path)),
                scope,
                path,
            })
            .collect()
    }

    /// `~` and `~/x` against the user's home; relative paths against the workspace.
    fn expand(&self, path: &str) -> PathBuf {
        let home = self.user_home.as_deref();
        match (path.strip_prefix('~'), home) {
            (Some(""), Some(home)) => home.to_path_buf(),
            (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
            _ => self.workspace.join(path),
        }
    }
}

/// Reads every root. Missing roots are normal and say nothing.
pub fn load(roots: &Roots) -> Store {
    let mut store = Store {
        roots: roots.list(),
        ..Store::default()
    };
    let mut found: Vec<Skill> = Vec::new();
    for root in store.roots.clone() {
        if root.excluded {
            continue;
        }
        for skill in read_root(&root, roots, &mut store.diagnostics) {
            match found.iter().find(|s| s.name == skill.name) {
                Some(winner) => store.diagnostics.push(Diagnostic {
                    path: skill.dir.join("SKILL.md"),
                    line: None,
                    message: format!(
                        "skill `{}` is shadowed by the {} skill in {} (the nearer scope wins)",
                        skill.name,
                        winner.scope.label(),
                        winner.dir.display()
                    ),
                }),
                None => found.push(skill),
            }
        }
    }
    for skill in found {
        if roots.disabled.contains(&skill.name) {
            store.disabled.push(skill.name);
        } else {
            store.skills.push(skill);
        }
    }
    store.skills.sort_by(|a, b| a.name.cmp(&b.name));
    store
}

fn read_root(root: &Root, roots: &Roots, diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    match root.scope {
        Scope::ClaudeAgents => return read_claude_agents(&root.path, None, diagnostics),
        Scope::ClaudeProjectAgents => {
            let fence = canonical(&roots.workspace);
            let mut agents = read_claude_agents(&root.path, Some(&fence), diagnostics);
            for agent in &mut agents {
                agent.scope = Scope::ClaudeProjectAgents;
            }
            return agents;
        }
        _ => {}
    }
    let Ok(entries) = fs::read_dir(&root.path) else {
        return Vec::new();
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    if folders.len() > MAX_SKILLS_PER_ROOT {
        diagnostics.push(Diagnostic {
            path: root.path.clone(),
            line: None,
            message: format!(
                "{} folders; only the first {MAX_SKILLS_PER_ROOT} (by name) are read",
                folders.len()
            ),
        });
        folders.truncate(MAX_SKILLS_PER_ROOT);
    }
    // Repository roots may not lead outside the workspace.
    let fence = root
        .scope
        .is_repository()
        .then(|| canonical(&roots.workspace));
    let mut skills = Vec::new();
    for folder in folders {
        let file = folder.join("SKILL.md");
        if !file.exists() {
            continue;
        }
        match read_skill(&folder, &file, fence.as_deref(), diagnostics) {
            Ok(mut skill) => {
                skill.scope = root.scope.clone();
                skill.trusted = !root.scope.is_repository() || roots.workspace_trusted;
                skills.push(skill);
            }
            Err(diagnostic) => diagnostics.push(diagnostic),
        }
    }
    skills
}

/// Claude Code's subagent definitions: one `*.md` per agent, frontmatter `name`,
/// `description`, `tools` (Claude's tool names and rules, comma-separated) and `model`, the
/// body being the agent's system prompt. Each becomes a subagent profile of the user's.
/// `model: inherit` and Claude's own aliases (`sonnet`, `opus`, `haiku`) mean the session's
/// model; any other value is taken as a reasonix model reference. `fence`: a repository's
/// agent files must resolve inside it (no symlink out of the workspace).
fn read_claude_agents(
    dir: &Path,
    fence: Option<&Path>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Skill> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    if files.len() > MAX_SKILLS_PER_ROOT {
        diagnostics.push(Diagnostic {
            path: dir.to_path_buf(),
            line: None,
            message: format!(
                "{} agent files; only the first {MAX_SKILLS_PER_ROOT} (by name) are read",
                files.len()
            ),
        });
        files.truncate(MAX_SKILLS_PER_ROOT);
    }
    let mut skills = Vec::new();
    for file in files {
        if let Some(fence) = fence {
            let real = canonical(&file);
            if !real.starts_with(fence) {
                diagnostics.push(Diagnostic {
                    path: file.clone(),
                    line: None,
                    message: format!(
                        "resolves to {} outside the workspace; a repository agent must live in the repository, so it is skipped",
                        real.display()
                    ),
                });
                continue;
            }
        }
        match read_claude_agent(&file) {
            Ok(skill) => skills.push(skill),
            Err(diagnostic) => diagnostics.push(diagnostic),
        }
    }
    skills
}

fn read_claude_agent(file: &Path) -> Result<Skill, Diagnostic> {
    let fail = |message: String| Diagnostic {
        path: file.to_path_buf(),
        line: None,
        message,
    };
    let meta = fs::metadata(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if meta.len() > MAX_SKILL_FILE {
        return Err(fail(format!(
            "{} bytes, more than the {} KiB an agent file may have",
            meta.len(),
            MAX_SKILL_FILE / 1024
        )));
    }
    let text = fs::read_to_string(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let mut doc = frontmatter::parse(&text).map_err(|e| Diagnostic {
        path: file.to_path_buf(),
        line: Some(e.line),
        message: e.message,
    })?;
    // Claude's `tools` is our `allowed-tools`; its `model` aliases name Anthropic models.
    if let Some(tools) = doc.keys.remove("tools") {
        doc.keys.entry("allowed-tools".into()).or_insert(tools);
    }
    let inherits = doc.keys.get("model").is_some_and(|entry| {
        matches!(&entry.value, frontmatter::Value::Text(t)
            if matches!(t.trim(), "inherit" | "sonnet" | "opus" | "haiku" | ""))
    });
    if inherits {
        doc.keys.remove("model");
    }
    doc.keys.remove("runAs");
    // The file's name need not match the agent's: no mismatch warning.
    let name = match doc.keys.get("name").map(|entry| &entry.value) {
        Some(frontmatter::Value::Text(t)) => t.trim().to_string(),
        _ => String::new(),
    };
    let (mut skill, _) = from_document(doc, file, &name)?;
    skill.run_as = super::RunAs::Subagent;
    skill.scope = Scope::ClaudeAgents;
    skill.trusted = true;
    Ok(skill)
}

/// One skill folder read on its own, outside any root (a retained bundle's copy).
pub fn read_folder(folder: &Path) -> Result<Skill, Diagnostic> {
    let mut ignored = Vec::new();
    read_skill(folder, &folder.join("SKILL.md"), None, &mut ignored)
}

/// One Claude Code agent file read on its own (a retained bundle's copy).
pub fn read_agent(file: &Path) -> Result<Skill, Diagnostic> {
    read_claude_agent(file)
}

/// The agent file in `dir` that defines the agent `name` (its file name need not match).
pub fn agent_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .take(MAX_SKILLS_PER_ROOT)
        .find(|file| read_claude_agent(file).is_ok_and(|skill| skill.name == name))
}

fn read_skill(
    folder: &Path,
    file: &Path,
    fence: Option<&Path>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Skill, Diagnostic> {
    let fail = |message: String| Diagnostic {
        path: file.to_path_buf(),
        line: None,
        message,
    };
    if let Some(fence) = fence {
        let real = canonical(file);
        if !real.starts_with(fence) {
            return Err(fail(format!(
                "resolves to {} outside the workspace; a repository skill must live in the repository, so it is skipped",
                real.display()
            )));
        }
    }
    let meta = fs::metadata(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if meta.len() > MAX_SKILL_FILE {
        return Err(fail(format!(
            "{} bytes, more than the {} KiB a SKILL.md may have; move detail into references/",
            meta.len(),
            MAX_SKILL_FILE / 1024
        )));
    }
    let text = fs::read_to_string(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let doc = frontmatter::parse(&text).map_err(|e| Diagnostic {
        path: file.to_path_buf(),
        line: Some(e.line),
        message: e.message,
    })?;
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (mut skill, warnings) = from_document(doc, file, &folder_name)?;
    diagnostics.extend(warnings);
    skill.references = list_references(&folder.join("references"), fence);
    skill.has_scripts = folder.join("scripts").is_dir();
    Ok(skill)
}

/// Files under `references/`, relative to the skill folder, depth-first, sorted, bounded.
fn list_references(dir: &Path, fence: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = fs::read_dir(&current) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        for path in paths.into_iter().rev() {
            if fence.is_some_and(|f| !canonical(&path).starts_with(f)) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if let Some(parent) = dir.parent() {
                if let Ok(rel) = path.strip_prefix(parent) {
                    out.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        if out.len() >= MAX_REFERENCES {
            out.truncate(MAX_REFERENCES);
            break;
        }
    }
    out.sort();
    out
}

fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn skill(root: &Path, folder: &str, front: &str) {
        let dir = root.join(folder);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("SKILL.md"),
            format!("---\n{front}\n---\nBody of {folder}\n"),
        )
        .unwrap();
    }

    fn roots(tmp: &Path) -> Roots {
        Roots {
            workspace: tmp.join("work"),
            home: Some(tmp.join("home")),
            user_home: Some(tmp.join("user")),
            workspace_trusted: true,
            ..Roots::default()
        }
    }

    #[test]
    fn the_nearer_scope_wins_and_says_so() {
        let tmp = TempDir::new("skills");
        let r = roots(tmp.path());
        skill(
            &r.workspace.join(".reasonix/skills"),
            "review",
            "name: review\ndescription: project",
        );
        skill(
            &tmp.path().join("home/skills"),
            "review",
            "name: review\ndescription: user",
        );
        skill(
            &tmp.path().join("user/.agents/skills"),
            "lint",
            "name: lint\ndescription: agents",
        );
        skill(
            &r.workspace.join(".claude/skills"),
            "lint",
            "name: lint\ndescription: claude",
        );
        let store = load(&r);
        let got: Vec<(&str, &str, &str)> = store
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.scope.label(), s.description.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("lint", "agents", "agents"),
                ("review", "project", "project")
            ]
        );
        let text: Vec<String> = store.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text.iter().any(|t| t.contains(
            "home/skills/review/SKILL.md: skill `review` is shadowed by the project skill"
        )));
    }

    #[test]
    fn disabled_and_excluded_hide_skills() {
        let tmp = TempDir::new("skills");
        let mut r = roots(tmp.path());
        skill(
            &tmp.path().join("user/.agents/skills"),
            "a",
            "name: a\ndescription: x",
        );
        skill(
            &tmp.path().join("home/skills"),
            "b",
            "name: b\ndescription: x",
        );
        skill(&tmp.path().join("extra"), "c", "name: c\ndescription: x");
        r.paths = vec![tmp.path().join("extra").display().to_string()];
        r.excluded_paths = vec!["~/.agents/skills".into()];
        r.disabled = vec!["b".into()];
        let store = load(&r);
        let names: Vec<&str> = store.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["c"]);
        assert_eq!(store.disabled, ["b"]);
        assert!(store
            .roots
            .iter()
            .any(|root| root.scope == Scope::Agents && root.excluded));
    }

    #[test]
    fn repository_skills_are_untrusted_until_the_workspace_is() {
        let tmp = TempDir::new("skills");
        let mut r = roots(tmp.path());
        r.workspace_trusted = false;
        skill(
            &r.workspace.join(".reasonix/skills"),
            "p",
            "name: p\ndescription: x",
        );
        skill(
            &tmp.path().join("home/skills"),
            "u",
            "name: u\ndescription: x",
        );
        let store = load(&r);
        assert!(!store.get("p").unwrap().trusted);
        assert!(store.get("u").unwrap().trusted);
    }

    #[test]
    fn a_repository_skill_cannot_point_outside_the_workspace() {
        let tmp = TempDir::new("skills");
        let r = roots(tmp.path());
        let secret = tmp.path().join("secret");
        skill(
            &secret,
            "leak",
            "name: leak\ndescription: the user's private notes",
        );
        let skills_dir = r.workspace.join(".reasonix/skills");
        fs::create_dir_all(&skills_dir).unwrap();
        std::os::unix::fs::symlink(secret.join("leak"), skills_dir.join("leak")).unwrap();
        let store = load(&r);
        assert!(store.get("leak").is_none());
        assert!(
            store.diagnostics[0]
                .message
                .contains("outside the workspace"),
            "{:?}",
            store.diagnostics
        );
    }

    #[test]
    fn a_trusted_workspaces_claude_agents_are_profiles_and_cannot_point_outside_it() {
        let tmp = TempDir::new("skills");
        let mut r = roots(tmp.path());
        let agents = r.workspace.join(".claude/agents");
        fs::create_dir_all(&agents).unwrap();
        fs::write(
            agents.join("helper.md"),
            "---\nname: helper\ndescription: helps\n---\nHelp.\n",
        )
        .unwrap();
        let outside = tmp.path().join("private.md");
        fs::write(&outside, "---\nname: leak\ndescription: x\n---\nPrivate.\n").unwrap();
        std::os::unix::fs::symlink(&outside, agents.join("leak.md")).unwrap();
        let store = load(&r);
        let helper = store.get("helper").expect("the workspace agent is read");
        assert_eq!(helper.run_as, crate::skill::RunAs::Subagent);
        assert_eq!(helper.scope, Scope::ClaudeProjectAgents);
        assert!(store.get("leak").is_none());
        assert!(
            store
                .diagnostics
                .iter()
                .any(|d| d.message.contains("outside the workspace")),
            "{:?}",
            store.diagnostics
        );
        r.workspace_trusted = false;
        assert!(load(&r).get("helper").is_none());
    }

    #[test]
    fn malformed_files_are_reported_with_their_line_and_others_still_load() {
        let tmp = TempDir::new("skills");
        let r = roots(tmp.path());
        let root = tmp.path().join("home/skills");
        skill(&root, "bad", "name: bad\ndescription: x\nrunAs: sometimes");
        skill(&root, "good", "name: good\ndescription: x");
        fs::create_dir_all(root.join("good/references/deep")).unwrap();
        fs::write(root.join("good/references/deep/a.md"), "a").unwrap();
        fs::write(root.join("good/references/b.md"), "b").unwrap();
        let store = load(&r);
        assert_eq!(store.skills.len(), 1);
        assert_eq!(
            store.skills[0].references,
            ["references/b.md", "references/deep/a.md"]
        );
        let text = store.diagnostics[0].to_string();
        assert!(
            text.ends_with("bad/SKILL.md:4: `runAs` must be inline or subagent, got `sometimes`"),
            "{text}"
        );
    }
}
