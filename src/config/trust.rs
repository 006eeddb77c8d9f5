//! Workspace trust: whether the user believes a directory's project files enough to let them
//! loosen their own settings or run: `./reasonix.toml` (allow rules, a wider `[permissions]
//! mode`, its own providers and model), the hooks of `.claude/settings.json`, the repository's
//! skills, its custom commands shadowing the user's, and the workspace `.env` filling project
//! MCP entries. Until then the loaders let those files only tighten; see `load.rs`,
//! `app/hooks.rs`, `skill/store.rs`, `command/custom.rs` and `mcp/config.rs`. MCP servers
//! declared by project files also need their own launch grants (`mcp::grants`).
//!
//! Trust is per directory, identified by its canonical (absolute, symlink-free) path, and bound
//! to each file of [`Bound`] as it was when the user trusted it: the store keeps a SHA-256 digest
//! of each (of every file under a bound folder), and a file that changed since (a `git pull`, or
//! a model that wrote it inside the workspace, which it may) is untrusted again, on its own,
//! until the user runs `reasonix trust` once more; the others keep their trust. Otherwise a
//! misled model could make the next session run its hooks or widen its permissions by writing
//! a file. reasonix re-records `reasonix.toml` alone after its own edits of the file (an
//! "always allow" answer in the chat). A subdirectory is a separate workspace.
//!
//! Records written before the digests (version 1) bound only the text of `reasonix.toml`: they
//! keep trusting that file, and every other bound file present counts as changed until the user
//! trusts the workspace again, so an upgrade never trusts a file the user did not see.
//!
//! The list lives in `<home>/trusted-workspaces.json`, written atomically and private (0600).
//! An unreadable or malformed file trusts nothing; changing it then is an error naming the file
//! rather than a silent rewrite.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::ConfigError;

pub const FILE_NAME: &str = "trusted-workspaces.json";

/// The version written: 2 since the digests of every bound file.
const VERSION: u32 = 2;

/// A project file or folder that decides what runs or what is allowed, bound by trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `reasonix.toml`: permissions, providers, `[[hooks]]`, `[[plugins]]`.
    ProjectFile,
    /// `.claude/settings.json`: hooks.
    ClaudeSettings,
    /// `.claude/settings.local.json`: Claude Code's local hooks and permissions; bound so that
    /// reading it later cannot trust what the user never saw.
    ClaudeLocalSettings,
    /// `.mcp.json`: project MCP servers (each also needs its launch grant).
    McpJson,
    /// `.env`: values for the project's MCP entries.
    DotEnv,
    /// `.reasonix/commands/`: custom commands, which may shadow the user's.
    Commands,
    /// `.reasonix/skills/`: skills and subagent profiles.
    Skills,
    /// `.claude/skills/`: skills.
    ClaudeSkills,
    /// `.claude/agents/`: Claude Code subagent definitions, read as subagent profiles.
    ClaudeAgents,
    /// `.reasonix/agent-presets/`: project compositions.
    Compositions,
}

impl Bound {
    pub const ALL: [Bound; 10] = [
        Bound::ProjectFile,
        Bound::ClaudeSettings,
        Bound::ClaudeLocalSettings,
        Bound::McpJson,
        Bound::DotEnv,
        Bound::Commands,
        Bound::Skills,
        Bound::ClaudeSkills,
        Bound::ClaudeAgents,
        Bound::Compositions,
    ];

    /// The path relative to the workspace, as the record keys it and messages name it.
    pub fn path(self) -> &'static str {
        match self {
            Bound::ProjectFile => super::paths::PROJECT_FILE,
            Bound::ClaudeSettings => ".claude/settings.json",
            Bound::ClaudeLocalSettings => ".claude/settings.local.json",
            Bound::McpJson => ".mcp.json",
            Bound::DotEnv => ".env",
            Bound::Commands => ".reasonix/commands",
            Bound::Skills => ".reasonix/skills",
            Bound::ClaudeSkills => ".claude/skills",
            Bound::ClaudeAgents => ".claude/agents",
            Bound::Compositions => ".reasonix/agent-presets",
        }
    }

    fn is_folder(self) -> bool {
        matches!(
            self,
            Bound::Commands
                | Bound::Skills
                | Bound::ClaudeSkills
                | Bound::ClaudeAgents
                | Bound::Compositions
        )
    }
}

/// One trusted workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trusted {
    /// The canonical directory.
    pub path: String,
    /// RFC 3339, UTC.
    pub trusted_at: String,
    /// The workspace's `reasonix.toml` as it was when trusted; `None` when it had none. The
    /// binding of version 1 records, still written so an older reasonix keeps its meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_file: Option<String>,
    /// Each bound path's digest when trusted ([`ABSENT`] when there was none); `None` in a
    /// version 1 record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, String>>,
}

/// Where a workspace, or one of its bound files, stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Trusted,
    /// Trusted once, but the file has changed since.
    Changed,
    Untrusted,
}

/// Every bound file of a workspace against its record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Review {
    /// The workspace is in the list.
    pub listed: bool,
    /// The bound files that changed since (or, from a version 1 record, were never seen).
    pub changed: Vec<Bound>,
}

impl Review {
    /// The changed paths, comma separated, for a message.
    pub fn changed_paths(&self) -> String {
        self.changed
            .iter()
            .map(|b| b.path())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    workspaces: Vec<Trusted>,
}

/// The trust list of one reasonix home.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    /// `--trust-project`: every bound file of the session's workspace counts as trusted for
    /// this run, whatever the list says; nothing is stored.
    whole_run: bool,
}

/// A workspace's identity: its canonical path, or the path as given when it cannot be resolved
/// (so a deleted directory can still be revoked).
pub fn identity(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

impl TrustStore {
    pub fn new(home: &Path) -> TrustStore {
        TrustStore {
            path: home.join(FILE_NAME),
            whole_run: false,
        }
    }

    /// The store a session's loaders ask: the list in the config's home, and with
    /// `--trust-project` ([`Config::trust_project`](super::Config::trust_project)) every bound
    /// file trusted for the run, so the flag covers the skills, hooks, commands, `.env` and
    /// Claude settings the same way it covers `reasonix.toml`.
    pub fn for_session(config: &super::Config) -> TrustStore {
        TrustStore {
            whole_run: config.trust_project,
            ..TrustStore::new(&config.home)
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<TrustFile, ConfigError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(TrustFile::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| ConfigError::At {
            location: self.path.display().to_string(),
            message: format!("not a trust list ({e}); fix or delete the file"),
        })
    }

    fn write(&self, file: &TrustFile) -> Result<(), ConfigError> {
        let write_err = |source| ConfigError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(file).map_err(|e| write_err(io::Error::other(e)))?;
        crate::fsutil::write_private(&self.path, format!("{text}\n").as_bytes()).map_err(write_err)
    }

    /// The record of `workspace`; none when the list is unreadable (which trusts nothing).
    fn entry(&self, workspace: &Path) -> Option<Trusted> {
        let id = identity(workspace);
        self.read()
            .ok()?
            .workspaces
            .into_iter()
            .find(|w| w.path == id)
    }

    /// Where `workspace`'s `reasonix.toml` stands: whether it may loosen the user's settings.
    pub fn standing(&self, workspace: &Path) -> Standing {
        self.standing_of(workspace, Bound::ProjectFile)
    }

    /// Where one bound file of `workspace` stands, as it is now.
    pub fn standing_of(&self, workspace: &Path, bound: Bound) -> Standing {
        if self.whole_run {
            return Standing::Trusted;
        }
        match self.entry(workspace) {
            Some(entry) if unchanged(&entry, workspace, bound) => Standing::Trusted,
            Some(_) => Standing::Changed,
            None => Standing::Untrusted,
        }
    }

    /// Whether the bound file is trusted as it is now; the loaders' one question.
    pub fn covers(&self, workspace: &Path, bound: Bound) -> bool {
        self.standing_of(workspace, bound) == Standing::Trusted
    }

    /// Every bound file of `workspace` against its record.
    pub fn review(&self, workspace: &Path) -> Review {
        match self.entry(workspace) {
            Some(entry) => Review {
                listed: true,
                changed: Bound::ALL
                    .into_iter()
                    .filter(|&b| !unchanged(&entry, workspace, b))
                    .collect(),
            },
            None => Review::default(),
        }
    }

    /// Whether `workspace` is trusted with every bound file as it is now.
    pub fn is_trusted(&self, workspace: &Path) -> bool {
        let review = self.review(workspace);
        review.listed && review.changed.is_empty()
    }

    pub fn list(&self) -> Result<Vec<Trusted>, ConfigError> {
        Ok(self.read()?.workspaces)
    }

    /// Trusts `workspace` with every bound file as it is now; false when it already was.
    pub fn trust(&self, workspace: &Path) -> Result<bool, ConfigError> {
        let id = identity(workspace);
        let files: BTreeMap<String, String> = Bound::ALL
            .into_iter()
            .map(|b| (b.path().to_string(), digest(workspace, b)))
            .collect();
        let mut file = self.read()?;
        if file.workspaces.iter().any(|w| {
            w.path == id
                && w.files.as_ref() == Some(&files)
                && !files.values().any(|d| d == OVER_LIMIT)
        }) {
            return Ok(false);
        }
        file.version = VERSION;
        file.workspaces.retain(|w| w.path != id);
        file.workspaces.push(Trusted {
            path: id,
            trusted_at: crate::clock::rfc3339(SystemTime::now()),
            project_file: project_text(workspace),
            files: Some(files),
        });
        self.write(&file)?;
        Ok(true)
    }

    /// Records `bound` as it is now in a trusted workspace's record, leaving every other file's
    /// binding alone: reasonix's own edit of that file (a rule the user said to keep) must not
    /// end the trust, nor extend it to other files. Nothing happens when the workspace is not
    /// in the list.
    pub fn rerecord(&self, workspace: &Path, bound: Bound) -> Result<(), ConfigError> {
        let id = identity(workspace);
        let mut file = self.read()?;
        let Some(entry) = file.workspaces.iter_mut().find(|w| w.path == id) else {
            return Ok(());
        };
        if bound == Bound::ProjectFile {
            entry.project_file = project_text(workspace);
        }
        if let Some(files) = &mut entry.files {
            files.insert(bound.path().to_string(), digest(workspace, bound));
        }
        self.write(&file)
    }

    /// Withdraws trust in `workspace`; false when it was not trusted.
    pub fn revoke(&self, workspace: &Path) -> Result<bool, ConfigError> {
        let id = identity(workspace);
        let mut file = self.read()?;
        let before = file.workspaces.len();
        file.workspaces.retain(|w| w.path != id);
        if file.workspaces.len() == before {
            return Ok(false);
        }
        file.version = file.version.max(1);
        self.write(&file)?;
        Ok(true)
    }
}

/// Whether `bound` is as `entry` recorded it.
fn unchanged(entry: &Trusted, workspace: &Path, bound: Bound) -> bool {
    let now = digest(workspace, bound);
    if now == OVER_LIMIT {
        return false;
    }
    match &entry.files {
        Some(files) => files.get(bound.path()).map_or(ABSENT, String::as_str) == now,
        // Version 1 bound the text of reasonix.toml and nothing else.
        None if bound == Bound::ProjectFile => entry.project_file == project_text(workspace),
        None => now == ABSENT,
    }
}

/// The workspace's `reasonix.toml` as text; `None` when there is none (or it cannot be read,
/// which the loader reports on its own).
fn project_text(workspace: &Path) -> Option<String> {
    std::fs::read_to_string(super::paths::project_file(workspace)).ok()
}

/// The digest of a path that does not exist.
pub const ABSENT: &str = "absent";
/// The digest of a file or folder too big to hash: it never counts as unchanged.
const OVER_LIMIT: &str = "over-limit";
/// The digest of what the loaders cannot read as a file (a FIFO, a device, a folder where a
/// file belongs).
const SPECIAL: &str = "special";

/// A bound file larger than this, or a bound folder whose files add up to more, is never
/// trusted: a prompt template or a settings file is never that big, and hashing stays cheap.
const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Entries of a bound folder hashed at most, counted over all levels (a symlink loop ends here).
const MAX_ENTRIES: usize = 4096;
/// Levels below a bound folder hashed at most.
const MAX_DEPTH: usize = 8;

/// The digest of a bound file or folder as the loaders would read it (symlinks followed):
/// SHA-256 of the file, or of the folder's sorted listing of paths and file digests.
pub fn digest(workspace: &Path, bound: Bound) -> String {
    let path = workspace.join(bound.path());
    match std::fs::metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => ABSENT.to_string(),
        Err(_) => SPECIAL.to_string(),
        Ok(meta) if bound.is_folder() && meta.is_dir() => {
            let mut walk = Walk::default();
            match walk.folder(&path, "", 0) {
                Some(()) => crate::hash::sha256_hex(&walk.listing),
                None => OVER_LIMIT.to_string(),
            }
        }
        Ok(meta) if !bound.is_folder() && meta.is_file() => {
            let mut budget = MAX_BYTES;
            file_digest(&path, &mut budget).unwrap_or_else(|| OVER_LIMIT.to_string())
        }
        Ok(_) => SPECIAL.to_string(),
    }
}

/// The listing of a bound folder, built depth first in name order.
#[derive(Default)]
struct Walk {
    listing: Vec<u8>,
    entries: usize,
    budget: u64,
}

impl Walk {
    /// `None` when a limit was reached.
    fn folder(&mut self, dir: &Path, prefix: &str, depth: usize) -> Option<()> {
        if depth == 0 {
            self.budget = MAX_BYTES;
        }
        if depth > MAX_DEPTH {
            return None;
        }
        let mut names: Vec<std::ffi::OsString> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.file_name()))
                .collect(),
            Err(_) => {
                self.line("unreadable", prefix, "");
                return Some(());
            }
        };
        names.sort();
        for name in names {
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                return None;
            }
            let rel = format!("{prefix}{}", name.to_string_lossy());
            let path = dir.join(&name);
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => {
                    self.line("d", &rel, "");
                    self.folder(&path, &format!("{rel}/"), depth + 1)?;
                }
                Ok(meta) if meta.is_file() => {
                    let sum = file_digest(&path, &mut self.budget)?;
                    self.line("f", &rel, &sum);
                }
                Ok(_) => self.line(SPECIAL, &rel, ""),
                Err(_) => self.line("dangling", &rel, ""),
            }
        }
        Some(())
    }

    fn line(&mut self, kind: &str, rel: &str, sum: &str) {
        // NUL cannot occur in a path, so no name can forge another line.
        for part in [kind, rel, sum] {
            self.listing.extend_from_slice(part.as_bytes());
            self.listing.push(0);
        }
        self.listing.push(b'\n');
    }
}

/// The SHA-256 of a regular file, reading at most `budget` bytes (which it spends); `None`
/// when the file is larger. A file that cannot be opened as a regular file digests as
/// [`SPECIAL`]: the open does not wait on a FIFO swapped in after the check.
fn file_digest(path: &Path, budget: &mut u64) -> Option<String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let Ok(file) = options.open(path) else {
        return Some(SPECIAL.to_string());
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Some(SPECIAL.to_string());
    }
    let mut bytes = Vec::new();
    let read = file.take(budget.saturating_add(1)).read_to_end(&mut bytes);
    if read.is_err() {
        return Some(SPECIAL.to_string());
    }
    let len = bytes.len() as u64;
    if len > *budget {
        return None;
    }
    *budget -= len;
    Some(crate::hash::sha256_hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn trust_is_per_canonical_directory_and_survives_only_until_revoked() {
        let dir = TempDir::new("trust");
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(&ws, dir.join("link")).unwrap();
        let store = TrustStore::new(&dir.join("home"));
        assert!(!store.is_trusted(&ws));
        assert!(store.trust(&dir.join("link")).unwrap());
        assert!(
            !store.trust(&ws).unwrap(),
            "the link and its target are one workspace"
        );
        assert!(store.is_trusted(&ws));
        assert!(!store.is_trusted(&ws.join("sub")));
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(store.list().unwrap().len(), 1);
        assert!(store.revoke(&ws).unwrap());
        assert!(!store.revoke(&ws).unwrap());
        assert!(!store.is_trusted(&ws));

        std::fs::write(store.path(), "not json").unwrap();
        assert!(!store.is_trusted(&ws));
        let err = store.trust(&ws).unwrap_err().to_string();
        assert!(
            err.starts_with("config: ") && err.contains("not a trust list"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), "not json");
    }

    #[test]
    fn a_changed_bound_file_loses_its_trust_alone_until_trusted_again() {
        let dir = TempDir::new("trust-bound");
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join(".claude")).unwrap();
        std::fs::create_dir_all(ws.join(".reasonix/commands/git")).unwrap();
        std::fs::write(ws.join("reasonix.toml"), "model = \"a\"\n").unwrap();
        std::fs::write(ws.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(ws.join(".reasonix/commands/git/c.md"), "one").unwrap();
        let store = TrustStore::new(&dir.join("home"));
        assert!(store.trust(&ws).unwrap());
        assert!(store.is_trusted(&ws));
        for bound in Bound::ALL {
            assert!(store.covers(&ws, bound), "{bound:?}");
        }
        std::fs::write(ws.join(".claude/settings.json"), "{\"hooks\":{}}").unwrap();
        std::fs::write(ws.join(".reasonix/commands/git/c.md"), "two").unwrap();
        std::fs::write(ws.join(".env"), "A=1\n").unwrap();
        let review = store.review(&ws);
        assert!(review.listed);
        assert_eq!(
            review.changed,
            vec![Bound::ClaudeSettings, Bound::DotEnv, Bound::Commands]
        );
        assert_eq!(
            review.changed_paths(),
            ".claude/settings.json, .env, .reasonix/commands"
        );
        assert_eq!(
            store.standing_of(&ws, Bound::ClaudeSettings),
            Standing::Changed
        );
        assert_eq!(store.standing(&ws), Standing::Trusted, "reasonix.toml kept");
        // A new file in a bound folder counts as a change, so does a renamed one.
        std::fs::write(ws.join(".reasonix/commands/git/c.md"), "one").unwrap();
        assert!(store.covers(&ws, Bound::Commands), "the same content again");
        std::fs::write(ws.join(".reasonix/commands/new.md"), "x").unwrap();
        assert!(!store.covers(&ws, Bound::Commands));
        // Re-recording one file leaves the others changed.
        std::fs::write(ws.join("reasonix.toml"), "model = \"b\"\n").unwrap();
        store.rerecord(&ws, Bound::ProjectFile).unwrap();
        assert!(store.covers(&ws, Bound::ProjectFile));
        assert!(!store.covers(&ws, Bound::ClaudeSettings));
        assert!(store.trust(&ws).unwrap());
        assert!(store.is_trusted(&ws));
        assert!(!store.trust(&ws).unwrap(), "already trusted as it is");
    }

    #[test]
    fn a_version_1_record_keeps_reasonix_toml_and_trusts_no_other_file_it_never_saw() {
        let dir = TempDir::new("trust-v1");
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join(".claude")).unwrap();
        std::fs::write(ws.join("reasonix.toml"), "model = \"a\"\n").unwrap();
        let store = TrustStore::new(&dir.join("home"));
        std::fs::create_dir_all(dir.join("home")).unwrap();
        let v1 = serde_json::json!({"version": 1, "workspaces": [{
            "path": identity(&ws), "trusted_at": "2026-01-01T00:00:00Z",
            "project_file": "model = \"a\"\n"}]});
        std::fs::write(store.path(), v1.to_string()).unwrap();
        assert!(store.covers(&ws, Bound::ProjectFile));
        assert!(
            store.covers(&ws, Bound::ClaudeSettings),
            "absent: nothing to run"
        );
        std::fs::write(ws.join(".claude/settings.json"), "{}").unwrap();
        assert_eq!(
            store.standing_of(&ws, Bound::ClaudeSettings),
            Standing::Changed
        );
        assert!(store.trust(&ws).unwrap());
        assert!(store.covers(&ws, Bound::ClaudeSettings));
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(
            text.contains("\"version\": 2") && text.contains("\"project_file\""),
            "{text}"
        );
    }

    #[test]
    fn special_files_digest_at_once_and_oversized_folders_are_never_trusted() {
        let dir = TempDir::new("trust-special");
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join(".reasonix/skills")).unwrap();
        let fifo = ws.join(".env");
        // A FIFO nobody writes: opening it for reading without O_NONBLOCK would wait forever.
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(digest(&ws, Bound::DotEnv), SPECIAL);
        for i in 0..=MAX_ENTRIES {
            std::fs::write(ws.join(format!(".reasonix/skills/{i}")), "").unwrap();
        }
        assert_eq!(digest(&ws, Bound::Skills), OVER_LIMIT);
        let store = TrustStore::new(&dir.join("home"));
        store.trust(&ws).unwrap();
        assert!(!store.covers(&ws, Bound::Skills));
        assert!(store.covers(&ws, Bound::DotEnv));
    }
}
