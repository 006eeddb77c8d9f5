//! The system prompt: the default coding-agent instructions (or the user's override), a
//! startup summary of the environment, and project instructions (REASONIX.md, AGENTS.md or
//! CLAUDE.md). It is built once per session and stored as the session's first message, so
//! every request and every resume sends the same bytes.
//!
//! Nothing from the workspace runs while the summary is built: no permission check has
//! happened yet, and the user may have asked for a strict run on a repository they do not
//! trust. So the git state comes from reading `.git/HEAD`, never from running git (a
//! repository's config and attributes can make `git status` run its own commands: fsmonitor,
//! clean filters), and the tool versions come from programs found only in `PATH` entries that
//! are absolute and outside the workspace and the write roots (where the model or the
//! repository could plant a `git` or `python3`), started with an environment that carries
//! nothing but `PATH`, `HOME` and `LANG`, so no provider key reaches them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

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

/// Files searched for project instructions, in order of preference within one directory.
pub const INSTRUCTION_FILES: &[&str] = &["REASONIX.md", "AGENTS.md", "CLAUDE.md"];

/// Tools whose versions are reported when found on PATH.
const PROBED_TOOLS: &[&str] = &[
    "git", "python3", "node", "npm", "cargo", "rustc", "go", "java", "gcc", "make", "docker",
];

/// How long the one-time probes may take at startup before being reported as unknown.
const PROBE_DEADLINE: Duration = Duration::from_millis(1500);

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
    for (origin, body) in project_instructions(inputs.home, inputs.cwd) {
        text.push_str(&format!(
            "\n\n<instructions source=\"{}\">\n{}\n</instructions>",
            origin.display(),
            body.trim_end()
        ));
    }
    text
}

/// User-global instructions first (from the reasonix home), then the project root's.
pub fn project_instructions(home: &Path, cwd: &Path) -> Vec<(PathBuf, String)> {
    [home, cwd]
        .iter()
        .filter_map(|dir| {
            INSTRUCTION_FILES.iter().find_map(|name| {
                let path = dir.join(name);
                std::fs::read_to_string(&path).ok().map(|body| (path, body))
            })
        })
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
    let probe_path = trusted_path(std::env::var_os("PATH"), writable);
    let versions = tool_versions(home, &probe_path);
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

/// `path` (a `PATH` value) without the entries a probe must not trust: relative ones (they
/// resolve against the workspace) and those inside a `writable` directory. Symlinked entries
/// are judged by where they lead.
fn trusted_path(path: Option<OsString>, writable: &[PathBuf]) -> Vec<PathBuf> {
    let writable: Vec<PathBuf> = writable
        .iter()
        .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.clone()))
        .collect();
    let Some(path) = path else {
        return Vec::new();
    };
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            !writable
                .iter()
                .any(|w| real.starts_with(w) || dir.starts_with(w))
        })
        .collect()
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct CachedVersion {
    path: String,
    mtime: u64,
    size: u64,
    version: String,
}

/// Versions of the probed tools found on PATH. Running `--version` costs tens of
/// milliseconds per tool, so answers are cached under the home keyed by each binary's path,
/// mtime and size; a warm start only stats files.
fn tool_versions(home: &Path, search: &[PathBuf]) -> Vec<(String, String)> {
    let cache_path = home.join("cache").join("tool-versions.json");
    let mut cache: BTreeMap<String, CachedVersion> = std::fs::read(&cache_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let found: Vec<(&str, PathBuf, u64, u64)> = PROBED_TOOLS
        .iter()
        .filter_map(|name| {
            let path = which(name, search)?;
            let meta = std::fs::metadata(&path).ok()?;
            let mtime = meta
                .modified()
                .ok()?
                .duration_since(UNIX_EPOCH)
                .ok()?
                .as_secs();
            Some((*name, path, mtime, meta.len()))
        })
        .collect();
    let stale: Vec<&(&str, PathBuf, u64, u64)> = found
        .iter()
        .filter(|(name, path, mtime, size)| {
            !cache.get(*name).is_some_and(|c| {
                c.path == path.display().to_string() && c.mtime == *mtime && c.size == *size
            })
        })
        .collect();
    if !stale.is_empty() {
        let (tx, rx) = mpsc::channel();
        let joined = std::env::join_paths(search).unwrap_or_default();
        for (name, path, mtime, size) in &stale {
            let tx = tx.clone();
            let (name, path, mtime, size) = (name.to_string(), path.clone(), *mtime, *size);
            let probe_env_path = joined.clone();
            let _ = std::thread::Builder::new()
                .name(format!("probe-{name}"))
                .spawn(move || {
                    let version = probe_version(&path, &probe_env_path);
                    let _ = tx.send((name, path, mtime, size, version));
                });
        }
        drop(tx);
        let deadline = std::time::Instant::now() + PROBE_DEADLINE;
        while let Ok((name, path, mtime, size, version)) =
            rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
        {
            if let Some(version) = version {
                cache.insert(
                    name,
                    CachedVersion {
                        path: path.display().to_string(),
                        mtime,
                        size,
                        version,
                    },
                );
            }
        }
        if let Ok(bytes) = serde_json::to_vec_pretty(&cache) {
            let _ = std::fs::create_dir_all(home.join("cache"));
            let _ = crate::fsutil::write_atomic(&cache_path, &bytes, None);
        }
    }
    found
        .iter()
        .filter_map(|(name, ..)| {
            cache
                .get(*name)
                .map(|c| (name.to_string(), c.version.clone()))
        })
        .collect()
}

/// `path --version` with a scrubbed environment: only the trusted `PATH`, `HOME` and `LANG`,
/// so no provider key or `*_OPTIONS` variable reaches the program.
fn probe_version(path: &Path, search: &OsString) -> Option<String> {
    let mut command = Command::new(path);
    command
        .arg("--version")
        .env_clear()
        .env("PATH", search)
        .env("LANG", "C")
        .current_dir("/")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(home) = std::env::var_os("HOME") {
        command.env("HOME", home);
    }
    let out = command.output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let first = String::from_utf8_lossy(&text)
        .lines()
        .next()?
        .trim()
        .to_string();
    (!first.is_empty()).then_some(first)
}

fn which(name: &str, search: &[PathBuf]) -> Option<PathBuf> {
    search.iter().map(|dir| dir.join(name)).find(|candidate| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("reasonix-prompt-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn instructions_prefer_reasonix_md_and_put_global_first() {
        let home = scratch("home");
        let project = scratch("project");
        std::fs::write(home.join("AGENTS.md"), "global rule").unwrap();
        std::fs::write(project.join("CLAUDE.md"), "claude rule").unwrap();
        std::fs::write(project.join("REASONIX.md"), "project rule").unwrap();
        let found = project_instructions(&home, &project);
        let bodies: Vec<&str> = found.iter().map(|(_, b)| b.as_str()).collect();
        assert_eq!(bodies, ["global rule", "project rule"]);
        let prompt = system_prompt(&PromptInputs {
            base: Some("base".into()),
            append: vec!["appended".into()],
            cwd: &project,
            home: &home,
            environment: false,
            extra_tools: &BTreeMap::new(),
            writable: &[],
        });
        assert!(
            prompt.starts_with("base\n\nappended\n\n<instructions source="),
            "{prompt}"
        );
        assert!(prompt.find("global rule") < prompt.find("project rule"));
        std::fs::remove_dir_all(home).unwrap();
        std::fs::remove_dir_all(project).unwrap();
    }

    #[test]
    fn environment_summary_is_identical_when_built_twice() {
        let home = scratch("envhome");
        let cwd = scratch("envcwd");
        let first = environment_summary(&cwd, &home, &BTreeMap::new(), &[]);
        let second = environment_summary(&cwd, &home, &BTreeMap::new(), &[]);
        assert_eq!(first, second);
        assert!(
            first.contains(&format!("cwd: {}", cwd.display())),
            "{first}"
        );
        assert!(first.contains("git: not a repository"), "{first}");
        std::fs::remove_dir_all(home).unwrap();
        std::fs::remove_dir_all(cwd).unwrap();
    }
}
