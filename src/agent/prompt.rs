//! The system prompt: the default coding-agent instructions (or the user's override), a
//! startup summary of the environment, project instructions (REASONIX.md, AGENTS.md,
//! CLAUDE.md or .claude/CLAUDE.md; the user's own from the reasonix home and Claude Code's
//! `~/.claude/CLAUDE.md`) and the index of saved memory; `agent.reasoning_language` adds one fixed line. It is built once per session and stored as the
//! session's first message, so every request and every resume sends the same bytes.
//!
//! The memory index (each active fact's name and one-line description) is standing context
//! because that rule keeps its bytes stable: it is read when the session starts and frozen
//! with the rest of the prompt. A `remember`, `forget` or `/memory` change during the session
//! does not touch it (the model learns of its own changes from the tool results) and shows from
//! the next session on. It is capped at [`MEMORY_INDEX_CAP`] bytes; the memory tool lists the
//! rest.
//!
//! Nothing from the workspace runs while the summary is built: no permission check has
//! happened yet, and the user may have asked for a strict run on a repository they do not
//! trust. So the git state comes from reading `.git/HEAD`, never from running git (a
//! repository's config and attributes can make `git status` run its own commands: fsmonitor,
//! clean filters), and the tool versions come from programs found only in `PATH` entries that
//! are absolute and outside the workspace and the write roots (where the model or the
//! repository could plant a `git` or `python3`), started with an environment that carries
//! nothing but `PATH`, `HOME` and `LANG`, so no provider key reaches them (see
//! `agent::probes`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::ReasoningLanguage;

pub const DEFAULT_SYSTEM_PROMPT: &str = "\
You are Reasonix, a coding agent working in the user's repository through tools.

How you work:
- Understand before changing: read the relevant files and search the code (ls, glob, grep, read_file) before editing.
- Make focused changes with edit_file or multi_edit; use write_file for new files or complete rewrites. Keep the existing style, line endings and conventions.
- Verify your work: run the project's build and tests with bash, read the output, and fix what fails. Do not claim success you have not observed.
- Prefer small, reversible steps. Never delete data, rewrite git history or touch files outside the task unless asked.
- Use todo_write to plan multi-step work and keep it current; mark one item in_progress at a time.
- When a tool fails, read the error and correct the call instead of repeating it unchanged.
- Shell commands run non-interactively with stdin closed: pass flags that avoid prompts and pagers.

When you are done, reply with a short summary of what you changed and how you verified it. Be concise; use Markdown only where it helps.";

/// Files searched for project instructions, in order of preference within one directory; the
/// first found is read. Claude Code keeps its project file at either of the last two.
pub const INSTRUCTION_FILES: &[&str] =
    &["REASONIX.md", "AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md"];

/// The most bytes of memory index in the system prompt; facts past it are counted, not listed.
pub const MEMORY_INDEX_CAP: usize = 4_000;

pub struct PromptInputs<'a> {
    /// `None`: the default prompt.
    pub base: Option<String>,
    pub append: Vec<String>,
    pub cwd: &'a Path,
    pub home: &'a Path,
    pub environment: bool,
    /// Extra trusted tool paths from `[environment.tools]`, listed as given.
    pub extra_tools: &'a BTreeMap<String, PathBuf>,
    /// Directories the model or the repository can write (the workspace and the write roots):
    /// programs in `PATH` entries under them are never started by the probes.
    pub writable: &'a [PathBuf],
    /// The saved-memory directory whose index is standing context; `None`: no index.
    pub memory: Option<&'a Path>,
    /// The user's Claude Code instructions (`~/.claude/CLAUDE.md`) when believed as theirs
    /// (`config::claude::user_path`); read after the reasonix home's, before the project's.
    pub claude_user_instructions: Option<&'a Path>,
}

/// The one fixed line asking the model to reason in `language` (`agent.reasoning_language`);
/// `None` for `auto`. Fixed text, so the system prompt stays byte-stable across turns.
pub fn reasoning_language_line(language: ReasoningLanguage) -> Option<&'static str> {
    match language {
        ReasoningLanguage::Auto => None,
        ReasoningLanguage::Zh => Some(
            "Write your reasoning (thinking) in Chinese (简体中文). Tool calls, code and file contents stay as they need to be.",
        ),
        ReasoningLanguage::En => Some(
            "Write your reasoning (thinking) in English. Tool calls, code and file contents stay as they need to be.",
        ),
    }
}

/// Builds the full system prompt text.
pub fn system_prompt(inputs: &PromptInputs) -> String {
    let mut text = inputs
        .base
        .clone()
        .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string());
    for extra in &inputs.append {
        text.push_str("\n\n");
        text.push_str(extra);
    }
    if inputs.environment {
        text.push_str("\n\n");
        text.push_str(&environment_summary(
            inputs.cwd,
            inputs.home,
            inputs.extra_tools,
            inputs.writable,
        ));
    }
    for (origin, body) in
        project_instructions(inputs.home, inputs.claude_user_instructions, inputs.cwd)
    {
        text.push_str(&format!(
            "\n\n<instructions source=\"{}\">\n{}\n</instructions>",
            origin.display(),
            body.trim_end()
        ));
    }
    if let Some(index) = inputs.memory.and_then(memory_index) {
        text.push_str("\n\n");
        text.push_str(&index);
    }
    text
}

/// The active facts' names and descriptions as of now, within [`MEMORY_INDEX_CAP`] bytes;
/// `None` when there are none.
pub fn memory_index(dir: &Path) -> Option<String> {
    let facts = crate::tool::memory_store::Store::new(dir).active();
    if facts.is_empty() {
        return None;
    }
    let mut text = String::from(
        "<memory>\nSaved facts from earlier sessions (name: description). Read one with the memory \
         tool before relying on it. This index was read when the session started; facts saved or \
         forgotten since are not reflected here.\n",
    );
    let mut listed = 0;
    for fact in &facts {
        let line = format!("- {}: {}\n", fact.name, fact.description);
        if text.len() + line.len() > MEMORY_INDEX_CAP {
            break;
        }
        text.push_str(&line);
        listed += 1;
    }
    if listed < facts.len() {
        text.push_str(&format!(
            "- ... and {} more; list them with the memory tool\n",
            facts.len() - listed
        ));
    }
    text.push_str("</memory>");
    Some(text)
}

/// User-global instructions first (from the reasonix home, then Claude Code's user file),
/// then the project root's.
pub fn project_instructions(
    home: &Path,
    claude_user: Option<&Path>,
    cwd: &Path,
) -> Vec<(PathBuf, String)> {
    let first_of = |dir: &Path| {
        INSTRUCTION_FILES.iter().find_map(|name| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).ok().map(|body| (path, body))
        })
    };
    let claude = claude_user.and_then(|path| {
        std::fs::read_to_string(path)
            .ok()
            .map(|body| (path.to_path_buf(), body))
    });
    first_of(home)
        .into_iter()
        .chain(claude)
        .chain(first_of(cwd))
        .collect()
}

/// OS, shell, working directory, git state and tool versions, as a stable text block.
pub fn environment_summary(
    cwd: &Path,
    home: &Path,
    extra_tools: &BTreeMap<String, PathBuf>,
    writable: &[PathBuf],
) -> String {
    let git_dir = find_git_dir(cwd);
    let versions = super::probes::tool_versions(home, std::env::var_os("PATH"), writable);
    let mut lines = vec![
        "<environment>".to_string(),
        format!("os: {}", os_name()),
        format!("arch: {}", std::env::consts::ARCH),
        format!(
            "shell: {}",
            std::env::var("SHELL").unwrap_or_else(|_| "unknown".into())
        ),
        format!("cwd: {}", cwd.display()),
    ];
    match git_dir {
        Some(dir) => {
            let branch = git_branch(&dir).unwrap_or_else(|| "(detached)".into());
            lines.push(format!("git: branch {branch}"));
        }
        None => lines.push("git: not a repository".into()),
    }
    if !versions.is_empty() || !extra_tools.is_empty() {
        lines.push("tools:".into());
        for (name, version) in &versions {
            lines.push(format!("  {name}: {version}"));
        }
        for (name, path) in extra_tools {
            lines.push(format!("  {name}: {} (configured)", path.display()));
        }
    }
    lines.push("</environment>".into());
    lines.join("\n")
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        });
    match pretty {
        Some(name) => format!("{} ({name})", std::env::consts::OS),
        None => std::env::consts::OS.to_string(),
    }
}

/// The `.git` directory for `cwd`, following a worktree's `gitdir:` file.
fn find_git_dir(cwd: &Path) -> Option<PathBuf> {
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        let candidate = d.join(".git");
        if candidate.is_dir() {
            return Some(candidate);
        }
        if candidate.is_file() {
            let text = std::fs::read_to_string(&candidate).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return Some(d.join(target));
        }
        dir = d.parent();
    }
    None
}

fn git_branch(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn instructions_prefer_reasonix_md_and_put_global_first() {
        let home = TempDir::new("home");
        let project = TempDir::new("project");
        home.write("AGENTS.md", "global rule");
        project.write("CLAUDE.md", "claude rule");
        project.write("REASONIX.md", "project rule");
        let found = project_instructions(home.path(), None, project.path());
        let bodies: Vec<&str> = found.iter().map(|(_, b)| b.as_str()).collect();
        assert_eq!(bodies, ["global rule", "project rule"]);
        let prompt = system_prompt(&PromptInputs {
            base: Some("base".into()),
            append: vec!["appended".into()],
            cwd: project.path(),
            home: home.path(),
            environment: false,
            extra_tools: &BTreeMap::new(),
            writable: &[],
            memory: None,
            claude_user_instructions: None,
        });
        assert!(
            prompt.starts_with("base\n\nappended\n\n<instructions source="),
            "{prompt}"
        );
        assert!(prompt.find("global rule") < prompt.find("project rule"));
    }

    #[test]
    fn environment_summary_is_identical_when_built_twice() {
        let home = TempDir::new("envhome");
        let cwd = TempDir::new("envcwd");
        let first = environment_summary(cwd.path(), home.path(), &BTreeMap::new(), &[]);
        let second = environment_summary(cwd.path(), home.path(), &BTreeMap::new(), &[]);
        assert_eq!(first, second);
        assert!(
            first.contains(&format!("cwd: {}", cwd.path().display())),
            "{first}"
        );
        assert!(first.contains("git: not a repository"), "{first}");
    }

    #[test]
    fn the_memory_index_lists_active_facts_within_its_cap() {
        let state = TempDir::new("prompt-memory");
        let dir = state.join("memory");
        assert_eq!(memory_index(&dir), None);
        let store = crate::tool::memory_store::Store::new(&dir);
        store.save("tabs", "The user prefers tabs.", None).unwrap();
        store
            .save("ci", "CI runs make test.", Some("the CI command"))
            .unwrap();
        store.save("gone", "Forgotten.", None).unwrap();
        store.forget("gone").unwrap();
        let index = memory_index(&dir).unwrap();
        assert!(
            index.starts_with("<memory>\n") && index.ends_with("\n</memory>"),
            "{index}"
        );
        assert!(
            index.contains("- ci: the CI command\n- tabs: The user prefers tabs.\n"),
            "{index}"
        );
        assert!(!index.contains("gone"), "{index}");
        for i in 0..200 {
            store
                .save(
                    &format!("fact-{i:03}"),
                    &format!("A long description number {i} for the cap."),
                    None,
                )
                .unwrap();
        }
        let index = memory_index(&dir).unwrap();
        assert!(index.len() <= MEMORY_INDEX_CAP + 100, "{}", index.len());
        assert!(
            index.contains(" more; list them with the memory tool"),
            "{index}"
        );
    }
}
