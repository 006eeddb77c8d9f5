//! Claude Code's own configuration, read only: where its files are, which of them are believed,
//! and the `permissions` lists of its `settings.json` files merged into ours. The hooks of the
//! same files are turned into ours by `cli/hooks.rs` (through `agent::hooks`), the skills and
//! subagent definitions are read by `skill::store`, and `CLAUDE.md` by `agent::prompt`.
//!
//! Two kinds of file, two kinds of belief:
//! - the user's, under `$HOME/.claude` (`settings.json`, `skills/`, `agents/`, `CLAUDE.md`),
//!   are the user's own and apply like `<home>/config.toml`, allow rules and hooks included;
//!   but only while they lie outside every place this session's tools may write (the workspace
//!   and `[sandbox] allow_write`). Inside one (reasonix started in the home directory, or a
//!   write root over it), the model could have written them, so they count as the workspace's
//!   files: `$HOME/.claude/settings.json` is then the workspace's `.claude/settings.json`,
//!   bound by workspace trust, and anything else there is not read as the user's;
//! - the workspace's `.claude/settings.json` and `.claude/settings.local.json` are repository
//!   content: their `deny` and `ask` rules always apply (they only tighten), their `allow`
//!   rules and hooks only while the workspace is trusted with that file as it is now, or for a
//!   run started with `--trust-project` ([`super::trust::TrustStore::for_session`]).
//!
//! Keys other than `permissions.allow`, `permissions.ask`, `permissions.deny` and `hooks` are
//! Claude Code's own (its model, its env, `defaultMode`, `additionalDirectories`, ...) and are
//! not read.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::file::Config;
use super::trust::{Bound, Standing, TrustStore};

/// Claude Code's folder in the user's home, from `$HOME`; `None` when `HOME` is unset or
/// empty.
pub fn user_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join(".claude"))
}

/// The user's Claude file or folder `name` (`settings.json`, `skills`, `agents`, `CLAUDE.md`),
/// when it is believed as the user's own: it lies outside every place this session may write.
pub fn user_path(config: &Config, cwd: &Path, name: &str) -> Option<PathBuf> {
    let path = user_dir()?.join(name);
    (!writable_by_session(config, cwd, &path)).then_some(path)
}

/// Whether `path` lies under the session's workspace root or one of its `allow_write` roots,
/// where a tool or a jailed command (so the model) may have written it. Paths are compared
/// after resolving symlinks of the part that exists.
pub fn writable_by_session(config: &Config, cwd: &Path, path: &Path) -> bool {
    let workspace = match &config.sandbox.workspace_root {
        Some(root) => cwd.join(root),
        None => cwd.to_path_buf(),
    };
    let mut roots = vec![resolve(&workspace)];
    roots.extend(
        config
            .sandbox
            .allow_write
            .iter()
            .map(|root| resolve(&workspace.join(root))),
    );
    let path = resolve(path);
    roots.iter().any(|root| path.starts_with(root))
}

/// `path` with its longest existing prefix canonicalized and the rest appended.
fn resolve(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = current.canonicalize() {
            return missing.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_os_string());
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// One Claude settings file to read, with what of it is believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    pub path: PathBuf,
    /// The user's own (every list applies) or the workspace's (deny and ask always, allow and
    /// hooks per [`SettingsFile::standing`]).
    pub user: bool,
    /// The workspace's trust in this file as it is now (always trusted for the user's).
    pub standing: Standing,
}

impl SettingsFile {
    /// Whether its allow rules and hooks apply.
    pub fn believed(&self) -> bool {
        self.user || self.standing == Standing::Trusted
    }
}

/// The Claude settings files of a session, user's first: `$HOME/.claude/settings.json` when
/// believed as the user's, then the workspace's `.claude/settings.json` and
/// `.claude/settings.local.json`. Files that do not exist are left out.
pub fn settings_files(config: &Config, cwd: &Path) -> Vec<SettingsFile> {
    let store = TrustStore::for_session(config);
    let mut files = Vec::new();
    let workspace_settings = [Bound::ClaudeSettings, Bound::ClaudeLocalSettings]
        .map(|bound| (cwd.join(bound.path()), bound));
    if let Some(path) = user_path(config, cwd, "settings.json") {
        files.push(SettingsFile {
            path,
            user: true,
            standing: Standing::Trusted,
        });
    }
    for (path, bound) in workspace_settings {
        // The same file as the user's (reasonix started in the home directory) is the
        // workspace's alone: the user's copy was not believed above.
        files.push(SettingsFile {
            standing: store.standing_of(cwd, bound),
            path,
            user: false,
        });
    }
    files.retain(|file| file.path.is_file() && source_wanted(config, cwd, file));
    files
}

/// Whether `--setting-sources` (when given) names the source of `file`: `user` for the
/// user's, `local` for `.claude/settings.local.json`, `project` for the workspace's other.
fn source_wanted(config: &Config, cwd: &Path, file: &SettingsFile) -> bool {
    let Some(sources) = &config.claude_setting_sources else {
        return true;
    };
    let source = if file.user {
        "user"
    } else if file.path == cwd.join(Bound::ClaudeLocalSettings.path()) {
        "local"
    } else {
        "project"
    };
    sources.iter().any(|s| s == source)
}

/// The parts of a Claude settings file reasonix reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ClaudeSettings {
    permissions: ClaudePermissions,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ClaudePermissions {
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
}

/// Adds the `permissions` lists of the session's Claude settings files to `config`'s rules.
/// A workspace file's allow rules are left out (and named in `untrusted`) while it is not
/// trusted, and always under `--permission-mode strict` (`strict`). A file that cannot be read
/// or parsed is one warning; a rule whose form no tool name can have is one warning and
/// skipped (the permission layer parses the rest and refuses what it cannot).
pub fn merge_permissions(
    config: &mut Config,
    cwd: &Path,
    strict: bool,
    warnings: &mut Vec<String>,
    untrusted: &mut Vec<String>,
) {
    for file in settings_files(config, cwd) {
        let shown = file.path.display().to_string();
        let text = match super::load::read_bounded(&file.path) {
            Ok(text) => text,
            Err(err) => {
                warnings.push(format!("{err}; its permissions are not read"));
                continue;
            }
        };
        let settings: ClaudeSettings = match serde_json::from_str(&text) {
            Ok(settings) => settings,
            Err(err) => {
                warnings.push(format!(
                    "{shown}: not Claude Code settings JSON ({err}); its permissions are not read"
                ));
                continue;
            }
        };
        let perms = settings.permissions;
        let mut take = |rules: Vec<String>, into: &mut Vec<String>, key: &str| {
            for rule in rules {
                if plausible_rule(&rule) {
                    into.push(rule);
                } else {
                    warnings.push(format!(
                        "{shown}: permissions.{key}: `{rule}` is not a rule reasonix reads (Tool or Tool(specifier)); skipped"
                    ));
                }
            }
        };
        take(perms.deny, &mut config.permissions.deny, "deny");
        take(perms.ask, &mut config.permissions.ask, "ask");
        if perms.allow.is_empty() {
            continue;
        }
        if file.user || (file.believed() && !strict) {
            take(perms.allow, &mut config.permissions.allow, "allow");
            continue;
        }
        let why = if strict && file.believed() {
            "--permission-mode strict ignores a project's allow rules"
        } else if file.standing == Standing::Changed {
            "the file changed since you trusted the workspace (review it; `reasonix trust`)"
        } else {
            "the workspace is not trusted (`reasonix trust` or --trust-project applies them)"
        };
        warnings.push(format!(
            "{shown}: the {} allow rules are ignored: {why}",
            perms.allow.len()
        ));
        untrusted.push(format!("permissions.allow ({shown})"));
    }
}

/// `Name` or `Name(specifier)` with a name of letters, digits, `_`, `-`, `.` (and a trailing
/// `*` for `mcp__server__*`): the shapes the permission layer parses. Anything else in a Claude
/// file would stop every session with a parse error, so it is skipped with a warning instead.
fn plausible_rule(rule: &str) -> bool {
    let rule = rule.trim();
    let name = match rule.split_once('(') {
        Some((name, rest)) => {
            if !rest.ends_with(')') {
                return false;
            }
            name
        }
        None => rule,
    };
    let name = name.strip_suffix("__*").unwrap_or(name);
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_in_claude_syntax_are_plausible_and_junk_is_not() {
        for rule in [
            "Bash(npm run test:*)",
            "Read(./secrets/**)",
            "Edit",
            "WebFetch(domain:example.com)",
            "mcp__github__*",
            "mcp__github__create_issue",
        ] {
            assert!(plausible_rule(rule), "{rule}");
        }
        for rule in ["", "(x)", "Bash(unclosed", "a b", "../x"] {
            assert!(!plausible_rule(rule), "{rule}");
        }
    }

    #[test]
    fn a_path_under_the_workspace_or_a_write_root_is_writable_by_the_session() {
        let dir = crate::fsutil::scratch::TempDir::new("claude-roots");
        let ws = dir.path().join("ws");
        let extra = dir.path().join("extra");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&extra).unwrap();
        let mut config = Config::default();
        config.sandbox.allow_write = vec![extra.clone()];
        assert!(writable_by_session(
            &config,
            &ws,
            &ws.join(".claude/settings.json")
        ));
        assert!(writable_by_session(
            &config,
            &ws,
            &extra.join("not-yet/settings.json")
        ));
        assert!(!writable_by_session(
            &config,
            &ws,
            &dir.path().join("home/.claude/settings.json")
        ));
        // Through a symlink into the workspace, the file is the workspace's.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&ws, dir.path().join("link")).unwrap();
            assert!(writable_by_session(
                &config,
                &ws,
                &dir.path().join("link/.claude")
            ));
        }
    }
}
