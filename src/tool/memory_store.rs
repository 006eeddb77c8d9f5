//! The saved-memory store under `<state>/memory/`: one Markdown file per fact with a small
//! front matter, the `MEMORY.md` index of the active facts, and `archive/` for forgotten ones.
//! The memory tools (`tool/builtin/memory.rs`) and the chat's `/memory` modal
//! (`term/ui/memory.rs`) both go through it, so forgetting from either is the same code path.
//!
//! Every write is crash-safe: files are written with `fsutil::write_atomic`, and a move
//! (forget, restore) is a hard link to the new name followed by removing the old one, so a
//! move never replaces a file already at the target and a crash leaves the fact in at least
//! one place. The index is rewritten from the active files after each change.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::bm25::{self, Index};

pub const INDEX_FILE: &str = "MEMORY.md";
pub const ARCHIVE_DIR: &str = "archive";
pub const MAX_NAME: usize = 64;
pub const MAX_CONTENT: usize = 8_000;
pub const MAX_DESCRIPTION: usize = 200;

/// One saved fact, active or archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub name: String,
    pub description: String,
    pub updated: String,
    pub content: String,
    /// The file name under `archive/` for a forgotten fact; `None` for an active one.
    pub archived: Option<String>,
}

impl Fact {
    pub fn is_active(&self) -> bool {
        self.archived.is_none()
    }

    fn render(&self) -> String {
        format!(
            "---\nname: {}\ndescription: {}\nupdated: {}\n---\n{}\n",
            self.name,
            self.description,
            self.updated,
            self.content.trim_end()
        )
    }

    /// Reads the front matter written by [`Fact::render`]; a file without it is all content.
    /// `name` is the name the file's location gives; the front matter's own `name` is
    /// returned beside it, for archived files, whose file names carry a time stamp.
    fn parse(name: &str, text: &str) -> (Fact, Option<String>) {
        let mut fact = Fact {
            name: name.to_string(),
            description: String::new(),
            updated: String::new(),
            content: text.to_string(),
            archived: None,
        };
        let Some(rest) = text.strip_prefix("---\n") else {
            return (fact, None);
        };
        let Some((front, body)) = rest.split_once("\n---\n") else {
            return (fact, None);
        };
        let mut declared = None;
        for line in front.lines() {
            match line.split_once(": ") {
                Some(("name", value)) => declared = Some(value.to_string()),
                Some(("description", value)) => fact.description = value.to_string(),
                Some(("updated", value)) => fact.updated = value.to_string(),
                _ => {}
            }
        }
        fact.content = body.trim_end().to_string();
        (fact, declared)
    }
}

/// Which facts a search looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The active facts only: what the model retrieves.
    Active,
    /// Active and archived: the user's management view.
    All,
}

/// What `save` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    New,
    Updated,
}

#[derive(Debug)]
pub enum MemoryError {
    /// A name outside the allowed alphabet or length.
    InvalidName(String),
    InvalidContent(usize),
    /// No active fact has this name.
    Missing(String),
    /// No archived file has this name.
    MissingArchived(String),
    /// Restoring would replace the active fact of the same name.
    Clash(String),
    Io {
        what: String,
        source: io::Error,
    },
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::InvalidName(name) => write!(
                f,
                "memory: `name` must be 1-{MAX_NAME} lowercase letters, digits, `-` or `_` (e.g. \"build-command\"), got {name:?}"
            ),
            MemoryError::InvalidContent(len) => write!(
                f,
                "memory: `content` must be 1-{MAX_CONTENT} bytes, got {len}; save one focused fact"
            ),
            MemoryError::Missing(name) => write!(f, "memory: no saved memory named `{name}`"),
            MemoryError::MissingArchived(file) => {
                write!(f, "memory: no archived memory file `{file}`")
            }
            MemoryError::Clash(name) => write!(
                f,
                "memory: an active fact named `{name}` already exists; forget it first, the archived copy is kept"
            ),
            MemoryError::Io { what, source } => write!(f, "memory: cannot {what}: {source}"),
        }
    }
}

impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MemoryError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_error(what: String) -> impl FnOnce(io::Error) -> MemoryError {
    move |source| MemoryError::Io { what, source }
}

/// Checks a fact's name: it becomes a file name, so nothing that could leave the directory.
pub fn check_name(name: &str) -> Result<&str, MemoryError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(name)
    } else {
        Err(MemoryError::InvalidName(name.to_string()))
    }
}

/// The memory directory of one state dir.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn fact_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.md"))
    }

    fn archive_dir(&self) -> PathBuf {
        self.dir.join(ARCHIVE_DIR)
    }

    /// Every active fact, sorted by name. A missing directory has none.
    pub fn active(&self) -> Vec<Fact> {
        let mut facts: Vec<Fact> = md_files(&self.dir)
            .into_iter()
            .filter(|(stem, _)| format!("{stem}.md") != INDEX_FILE)
            .filter_map(|(stem, path)| {
                let text = fs::read_to_string(path).ok()?;
                Some(Fact::parse(&stem, &text).0)
            })
            .collect();
        facts.sort_by(|a, b| a.name.cmp(&b.name));
        facts
    }

    /// Every archived fact, the most recently forgotten first (the file names end in a time
    /// stamp), then by name.
    pub fn archived(&self) -> Vec<Fact> {
        let mut facts: Vec<Fact> = md_files(&self.archive_dir())
            .into_iter()
            .filter_map(|(stem, path)| {
                let text = fs::read_to_string(path).ok()?;
                let (mut fact, declared) = Fact::parse(&stem, &text);
                fact.name = declared
                    .filter(|n| check_name(n).is_ok())
                    .unwrap_or_else(|| name_of_archived(&stem).to_string());
                fact.archived = Some(format!("{stem}.md"));
                Some(fact)
            })
            .collect();
        facts.sort_by(|a, b| {
            stamp_of(b.archived.as_deref())
                .cmp(stamp_of(a.archived.as_deref()))
                .then(a.name.cmp(&b.name))
        });
        facts
    }

    /// The active facts, then the archived ones.
    pub fn all(&self) -> Vec<Fact> {
        let mut facts = self.active();
        facts.extend(self.archived());
        facts
    }

    /// Ranks facts against `query` with BM25 (name, description and content), best first,
    /// at most `limit`.
    pub fn search(&self, query: &str, scope: Scope, limit: usize) -> Vec<Fact> {
        let facts = match scope {
            Scope::Active => self.active(),
            Scope::All => self.all(),
        };
        let mut index = Index::new();
        for fact in &facts {
            index.add(&format!(
                "{} {} {}",
                fact.name, fact.description, fact.content
            ));
        }
        bm25::search(&[&index], query, limit)
            .into_iter()
            .map(|hit| facts[hit.doc as usize].clone())
            .collect()
    }

    /// The filter the `/memory` modal shows while the user types: BM25 hits over active and
    /// archived facts first, then facts whose name, description or content contains the text
    /// (a word being typed is not a BM25 term yet), in list order. An empty query is every fact.
    pub fn filter(&self, query: &str) -> Vec<Fact> {
        let all = self.all();
        let query = query.trim();
        if query.is_empty() {
            return all;
        }
        let mut out = self.search(query, Scope::All, all.len().max(1));
        let needle = query.to_lowercase();
        for fact in all {
            let haystack =
                format!("{}\n{}\n{}", fact.name, fact.description, fact.content).to_lowercase();
            if haystack.contains(&needle) && !out.contains(&fact) {
                out.push(fact);
            }
        }
        out
    }

    /// One active fact by name.
    pub fn read(&self, name: &str) -> Result<Fact, MemoryError> {
        let name = check_name(name)?;
        let text = fs::read_to_string(self.fact_path(name))
            .map_err(|_| MemoryError::Missing(name.to_string()))?;
        Ok(Fact::parse(name, &text).0)
    }

    /// Saves a new fact or updates the one of the same name. An update without a description
    /// keeps the one the fact had; a new fact without one uses its first line.
    pub fn save(
        &self,
        name: &str,
        content: &str,
        description: Option<&str>,
    ) -> Result<(Saved, PathBuf), MemoryError> {
        let name = check_name(name)?;
        let content = content.trim();
        if content.is_empty() || content.len() > MAX_CONTENT {
            return Err(MemoryError::InvalidContent(content.len()));
        }
        let path = self.fact_path(name);
        let existing = self.read(name).ok();
        let description = match (description, &existing) {
            (Some(given), _) => given.to_string(),
            (None, Some(old)) if !old.description.is_empty() => old.description.clone(),
            (None, _) => content.lines().next().unwrap_or("").to_string(),
        };
        let description: String = description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(MAX_DESCRIPTION)
            .collect();
        fs::create_dir_all(&self.dir)
            .map_err(io_error(format!("create {}", self.dir.display())))?;
        let fact = Fact {
            name: name.to_string(),
            description,
            updated: crate::clock::rfc3339(SystemTime::now()),
            content: content.to_string(),
            archived: None,
        };
        crate::fsutil::write_atomic(&path, fact.render().as_bytes(), None)
            .map_err(io_error(format!("write {}", path.display())))?;
        self.write_index()?;
        let saved = if existing.is_some() {
            Saved::Updated
        } else {
            Saved::New
        };
        Ok((saved, path))
    }

    /// Moves an active fact to `archive/<name>-<stamp>.md` and drops it from the index.
    /// Returns the archived file's path.
    pub fn forget(&self, name: &str) -> Result<PathBuf, MemoryError> {
        let name = check_name(name)?;
        let path = self.fact_path(name);
        if !path.is_file() {
            return Err(MemoryError::Missing(name.to_string()));
        }
        let archive = self.archive_dir();
        fs::create_dir_all(&archive).map_err(io_error(format!("create {}", archive.display())))?;
        let stamp = crate::clock::compact_stamp(SystemTime::now());
        // Two forgets of one name within a second get distinct files, never one over another.
        let mut n = 1;
        let target = loop {
            let file = match n {
                1 => format!("{name}-{stamp}.md"),
                _ => format!("{name}-{stamp}-{n}.md"),
            };
            let target = archive.join(file);
            match move_no_replace(&path, &target) {
                Ok(()) => break target,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(io_error(format!("archive {}", path.display()))(e)),
            }
        };
        self.write_index()?;
        Ok(target)
    }

    /// Moves an archived fact (by its file name under `archive/`) back to the active facts
    /// and the index. Fails without touching anything when an active fact has its name.
    pub fn restore(&self, archived: &str) -> Result<Fact, MemoryError> {
        let missing = || MemoryError::MissingArchived(archived.to_string());
        let fact = self
            .archived()
            .into_iter()
            .find(|f| f.archived.as_deref() == Some(archived))
            .ok_or_else(missing)?;
        let source = self.archive_dir().join(archived);
        let target = self.fact_path(&fact.name);
        match move_no_replace(&source, &target) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(MemoryError::Clash(fact.name))
            }
            Err(e) => return Err(io_error(format!("restore {}", source.display()))(e)),
        }
        self.write_index()?;
        Ok(Fact {
            archived: None,
            ..fact
        })
    }

    /// Rewrites `MEMORY.md` from the active facts.
    fn write_index(&self) -> Result<(), MemoryError> {
        let mut text =
            String::from("# Memory\n\nSaved facts, one file each. Managed by reasonix.\n\n");
        for fact in self.active() {
            text.push_str(&format!(
                "- [{0}]({0}.md): {1}\n",
                fact.name, fact.description
            ));
        }
        let path = self.dir.join(INDEX_FILE);
        crate::fsutil::write_atomic(&path, text.as_bytes(), None)
            .map_err(io_error("write the memory index".into()))
    }
}

/// `(stem, path)` of the `*.md` files directly in `dir`.
fn md_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
        .collect()
}

/// The fact name of an archive file stem without front matter: `name-YYYYMMDDTHHMMSS[-n]`.
fn name_of_archived(stem: &str) -> &str {
    let is_stamp = |s: &str| s.len() == 15 && s.as_bytes()[8] == b'T';
    let mut parts: Vec<&str> = stem.rsplitn(3, '-').collect();
    parts.reverse();
    match parts.as_slice() {
        [name, stamp, n] if is_stamp(stamp) && n.parse::<u32>().is_ok() => name,
        [.., stamp] if is_stamp(stamp) && stem.len() > stamp.len() => {
            &stem[..stem.len() - stamp.len() - 1]
        }
        _ => stem,
    }
}

/// The `YYYYMMDDTHHMMSS[-n]` tail of an archive file name, for ordering.
fn stamp_of(file: Option<&str>) -> &str {
    let stem = file.and_then(|f| f.strip_suffix(".md")).unwrap_or("");
    let name = name_of_archived(stem);
    stem.get(name.len()..).unwrap_or("")
}

/// Moves `from` to `to` unless something is already at `to` (then `AlreadyExists`): a hard
/// link never replaces its target, and the source goes only once the link exists.
fn move_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)?;
    fs::remove_file(from)?;
    for dir in [from.parent(), to.parent()].into_iter().flatten() {
        crate::fsutil::sync_dir(dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn store(dir: &TempDir) -> Store {
        Store::new(dir.join("memory"))
    }

    fn names(facts: &[Fact]) -> Vec<(String, bool)> {
        facts
            .iter()
            .map(|f| (f.name.clone(), f.is_active()))
            .collect()
    }

    fn index(store: &Store) -> String {
        fs::read_to_string(store.dir().join(INDEX_FILE)).unwrap_or_default()
    }

    #[test]
    fn facts_round_trip_through_their_file_format() {
        let fact = Fact {
            name: "port".into(),
            description: "the dev server port".into(),
            updated: "2026-12-02T10:00:00Z".into(),
            content: "The dev server listens on 8080.\n\n---\nnot front matter".into(),
            archived: None,
        };
        let (parsed, declared) = Fact::parse("port", &fact.render());
        assert_eq!(parsed, fact);
        assert_eq!(declared.as_deref(), Some("port"));
        assert_eq!(Fact::parse("x", "just text").0.content, "just text");
    }

    #[test]
    fn names_are_checked() {
        for good in ["a", "build-command", "v2_notes"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Build", "../x", "a b", "-x", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn archived_names_come_from_the_front_matter_or_the_file_name() {
        assert_eq!(name_of_archived("db-port-20261202T152037"), "db-port");
        assert_eq!(name_of_archived("db-port-20261202T152037-2"), "db-port");
        assert_eq!(name_of_archived("plain"), "plain");
        assert_eq!(
            stamp_of(Some("db-port-20261202T152037-2.md")),
            "-20261202T152037-2"
        );
    }

    #[test]
    fn a_missing_directory_has_no_facts() {
        let dir = TempDir::new("memstore-empty");
        let store = store(&dir);
        assert!(store.all().is_empty());
        assert!(store.filter("x").is_empty());
        assert!(matches!(store.forget("x"), Err(MemoryError::Missing(_))));
    }

    #[test]
    fn forget_and_restore_round_trip_and_keep_the_index_in_step() {
        let dir = TempDir::new("memstore-roundtrip");
        let store = store(&dir);
        store
            .save(
                "db-port",
                "The database listens on 5433.",
                Some("database port"),
            )
            .unwrap();
        store.save("tabs", "The user prefers tabs.", None).unwrap();
        let original = fs::read_to_string(store.fact_path("db-port")).unwrap();
        assert!(index(&store).contains("- [db-port](db-port.md): database port"));

        let archived = store.forget("db-port").unwrap();
        assert!(!store.fact_path("db-port").exists());
        assert_eq!(fs::read_to_string(&archived).unwrap(), original);
        assert!(!index(&store).contains("db-port"), "{}", index(&store));
        assert!(index(&store).contains("- [tabs](tabs.md)"));
        assert_eq!(
            names(&store.all()),
            vec![("tabs".into(), true), ("db-port".into(), false)]
        );

        let file = store.archived()[0].archived.clone().unwrap();
        let restored = store.restore(&file).unwrap();
        assert_eq!(restored.name, "db-port");
        assert_eq!(restored.description, "database port");
        assert_eq!(
            fs::read_to_string(store.fact_path("db-port")).unwrap(),
            original
        );
        assert!(!archived.exists());
        assert!(store.archived().is_empty());
        assert!(index(&store).contains("- [db-port](db-port.md): database port"));
    }

    #[test]
    fn restore_refuses_a_name_clash_and_loses_nothing() {
        let dir = TempDir::new("memstore-clash");
        let store = store(&dir);
        store.save("port", "old: 5433", None).unwrap();
        let archived = store.forget("port").unwrap();
        store.save("port", "new: 6543", None).unwrap();
        let file = archived.file_name().unwrap().to_string_lossy().into_owned();
        let err = store.restore(&file).unwrap_err();
        assert!(
            matches!(err, MemoryError::Clash(ref n) if n == "port"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "memory: an active fact named `port` already exists; forget it first, the archived copy is kept"
        );
        assert!(fs::read_to_string(&archived).unwrap().contains("old: 5433"));
        assert_eq!(store.read("port").unwrap().content, "new: 6543");
        assert!(matches!(
            store.restore("nope.md"),
            Err(MemoryError::MissingArchived(_))
        ));
    }

    #[test]
    fn forgetting_one_name_twice_keeps_both_archived_copies() {
        let dir = TempDir::new("memstore-twice");
        let store = store(&dir);
        store.save("port", "first", None).unwrap();
        let a = store.forget("port").unwrap();
        store.save("port", "second", None).unwrap();
        let b = store.forget("port").unwrap();
        assert_ne!(a, b);
        let contents: Vec<String> = store.archived().into_iter().map(|f| f.content).collect();
        assert_eq!(contents.len(), 2);
        assert!(
            contents.contains(&"first".to_string()) && contents.contains(&"second".to_string())
        );
    }

    #[test]
    fn search_covers_archived_facts_only_when_asked() {
        let dir = TempDir::new("memstore-search");
        let store = store(&dir);
        store
            .save("db-port", "The postgres database listens on 5433.", None)
            .unwrap();
        store.save("ci", "CI runs make test.", None).unwrap();
        store
            .save("deploy", "Deploys go through the docker registry.", None)
            .unwrap();
        store.forget("deploy").unwrap();
        assert!(store.search("docker", Scope::Active, 5).is_empty());
        assert_eq!(
            names(&store.search("docker", Scope::All, 5)),
            vec![("deploy".into(), false)]
        );
        assert_eq!(
            names(&store.search("postgres database", Scope::All, 5)),
            vec![("db-port".into(), true)]
        );
        // A word still being typed matches as a substring.
        assert_eq!(names(&store.filter("dock")), vec![("deploy".into(), false)]);
        assert_eq!(names(&store.filter("")).len(), 3);
    }
}
