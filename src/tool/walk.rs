//! The gitignore-aware directory walker shared by ls, glob and grep (and later by
//! `@`-references and `forbid_read`).
//!
//! Policy, chosen to match what a coding agent needs and, for ignore files, ripgrep:
//! - Always skipped, whatever any ignore file says: `.git` (directory or worktree file), `.hg`,
//!   `.svn`, `node_modules`, `__pycache__` and `.venv`. They are never source the model should
//!   search and can hold hundreds of thousands of files. Other build output (`target`, `dist`,
//!   `build`) is skipped only when an ignore rule says so.
//! - `.gitignore` files, `.git/info/exclude` and the global excludes file (`core.excludesFile`)
//!   apply only inside a git repository, as in ripgrep: a directory with a `.git` entry (or
//!   below one) is a repository. A project unpacked without `.git` is walked in full.
//! - Each `.gitignore` applies to its directory and below; deeper files win over shallower ones,
//!   later lines over earlier ones, and `.gitignore` over info/exclude over the global file. A
//!   file inside an ignored directory cannot be re-included (git's rule; the walker simply never
//!   enters the directory). Rules of the ancestors of the walk root count too.
//! - Hidden files (dot files) are listed by default: `.github/`, `.env.example` and `.eslintrc`
//!   matter to a coding agent. [`Hidden::Skip`] turns that off.
//! - Symbolic links are reported, never followed, so the walk cannot loop. The root itself is
//!   followed when it is a link.
//! - Paths in [`Options::exclude`] (absolute, compared lexically with how the root is spelled)
//!   are hidden entirely, as if they did not exist; so is every entry the caller's
//!   [`Options::veto`] refuses (permission deny rules, hard links to hidden files).
//! - Unreadable directories are skipped and counted ([`Walk::unreadable`]).
//! - Ignore files are read through `read_limit` and only their first MiB counts: a repository's
//!   `.gitignore` that is a FIFO or a link to a kernel pseudo-file is ignored, not read.
//!
//! The walk is depth-first and streaming: it holds one sorted listing per open directory, never
//! the whole tree, and yields entries in byte order of their names within each directory.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::glob::{Dialect, Glob};
use super::read_limit;

/// Directory names the walker never enters or reports.
pub const ALWAYS_SKIPPED: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "__pycache__",
    ".venv",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    Include,
    Skip,
}

/// Whether gitignore-style ignore files are consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignores {
    Respect,
    Disregard,
}

#[derive(Debug, Clone)]
pub struct Options {
    /// `Some(1)` lists the root's children only; `None` walks the whole tree.
    pub max_depth: Option<usize>,
    pub hidden: Hidden,
    pub ignores: Ignores,
    /// Absolute paths hidden completely, together with everything below them.
    pub exclude: Vec<PathBuf>,
    /// Extra lines in `.gitignore` syntax, relative to the walk root, that win over every
    /// ignore file and apply even with [`Ignores::Disregard`] or outside a repository.
    pub overrides: Vec<String>,
    /// The global excludes file; see [`default_global_excludes`].
    pub global_excludes: Option<PathBuf>,
    /// The caller's last word on each entry; see [`Veto`].
    pub veto: Option<Veto>,
}

/// Decides, from an entry's path, kind and inode number (from the directory listing, so it
/// costs no `stat`), whether the walk hides it; a hidden directory is not entered. Callers use
/// it for what the walker cannot know: permission deny rules and hard links to hidden files.
#[derive(Clone)]
pub struct Veto(Arc<VetoFn>);

type VetoFn = dyn Fn(&Path, EntryKind, u64) -> bool + Send + Sync;

impl Veto {
    pub fn new(hides: impl Fn(&Path, EntryKind, u64) -> bool + Send + Sync + 'static) -> Veto {
        Veto(Arc::new(hides))
    }

    fn hides(&self, path: &Path, kind: EntryKind, ino: u64) -> bool {
        (self.0)(path, kind, ino)
    }
}

impl fmt::Debug for Veto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Veto(..)")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_depth: None,
            hidden: Hidden::Include,
            ignores: Ignores::Respect,
            exclude: Vec::new(),
            overrides: Vec::new(),
            global_excludes: None,
            veto: None,
        }
    }
}

impl Options {
    /// The defaults plus this user's global excludes file, as the search tools walk.
    pub fn with_user_excludes() -> Options {
        Options {
            global_excludes: default_global_excludes(),
            ..Options::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

impl EntryKind {
    fn of(file_type: fs::FileType) -> EntryKind {
        if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The root joined with the entry's relative path.
    pub path: PathBuf,
    pub kind: EntryKind,
    /// 1 for the root's children; 0 only when the root itself is a file.
    pub depth: usize,
}

/// What one set of ignore rules says about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No rule matched.
    Unmatched,
    Ignore,
    /// A `!` rule matched last.
    Whitelist,
}

#[derive(Debug, Clone)]
struct Rule {
    glob: Glob,
    negate: bool,
    dir_only: bool,
    /// A `/` at the start or in the middle ties the rule to the file's directory; otherwise it
    /// matches the name at any depth.
    anchored: bool,
}

/// The rules of one ignore file, matched against paths relative to the file's directory.
#[derive(Debug, Clone, Default)]
pub struct Gitignore {
    rules: Vec<Rule>,
}

impl Gitignore {
    /// Parses `.gitignore` text. Lines that are not valid patterns are skipped, as git does.
    pub fn parse(text: &str) -> Gitignore {
        Gitignore {
            rules: text.lines().filter_map(parse_line).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Judges `rel` (relative, `/`-separated); the last matching rule decides.
    pub fn verdict(&self, rel: &str, is_dir: bool) -> Verdict {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        for rule in self.rules.iter().rev() {
            if rule.dir_only && !is_dir {
                continue;
            }
            let subject = if rule.anchored { rel } else { name };
            if rule.glob.is_match(subject) {
                return if rule.negate {
                    Verdict::Whitelist
                } else {
                    Verdict::Ignore
                };
            }
        }
        Verdict::Unmatched
    }
}

fn parse_line(line: &str) -> Option<Rule> {
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut pattern = trim_unescaped_trailing_spaces(line.strip_suffix('\r').unwrap_or(line));
    let negate = pattern.starts_with('!');
    if negate {
        pattern = &pattern[1..];
    }
    let dir_only = pattern.ends_with('/');
    if dir_only {
        pattern = &pattern[..pattern.len() - 1];
    }
    let anchored = pattern.contains('/');
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    if pattern.is_empty() {
        return None;
    }
    let glob = Glob::new(pattern, Dialect::Gitignore).ok()?;
    Some(Rule {
        glob,
        negate,
        dir_only,
        anchored,
    })
}

/// Trailing spaces are dropped unless the last one is escaped with a backslash.
fn trim_unescaped_trailing_spaces(line: &str) -> &str {
    let mut end = line.len();
    while line[..end].ends_with(' ') && !line[..end - 1].ends_with('\\') {
        end -= 1;
    }
    &line[..end]
}

/// One ignore file placed in the tree: its rules and its directory relative to the anchor.
#[derive(Debug, Clone)]
struct Matcher {
    base: String,
    rules: Arc<Gitignore>,
}

impl Matcher {
    fn verdict(&self, rel: &str, is_dir: bool) -> Verdict {
        let local = if self.base.is_empty() {
            Some(rel)
        } else {
            rel.strip_prefix(self.base.as_str())
                .and_then(|r| r.strip_prefix('/'))
        };
        match local {
            Some(local) => self.rules.verdict(local, is_dir),
            None => Verdict::Unmatched,
        }
    }
}

/// One open directory: its remaining (already filtered and sorted) children.
struct Frame {
    dir: PathBuf,
    /// The directory relative to the anchor, `/`-separated, empty for the anchor itself.
    rel: String,
    depth: usize,
    in_repo: bool,
    entries: std::vec::IntoIter<(OsString, EntryKind)>,
    /// How many matchers were active before this directory added its own.
    matchers_below: usize,
}

/// A streaming, deterministic walk below one root. See the module docs for the policy.
pub struct Walk {
    max_depth: Option<usize>,
    hidden: Hidden,
    ignores: Ignores,
    exclude: Vec<PathBuf>,
    veto: Option<Veto>,
    global: Arc<Gitignore>,
    overrides: Option<Matcher>,
    /// Active ignore files, shallowest first; later ones take precedence.
    matchers: Vec<Matcher>,
    stack: Vec<Frame>,
    root_file: Option<Entry>,
    unreadable: usize,
}

impl Walk {
    /// Starts a walk. The root should be absolute so repository discovery can look above it.
    pub fn new(root: &Path, options: Options) -> Walk {
        let global = match (&options.global_excludes, options.ignores) {
            (Some(path), Ignores::Respect) => Arc::new(read_gitignore(path)),
            _ => Arc::new(Gitignore::default()),
        };
        let mut walk = Walk {
            max_depth: options.max_depth,
            hidden: options.hidden,
            ignores: options.ignores,
            exclude: options.exclude,
            veto: options.veto,
            global,
            overrides: None,
            matchers: Vec::new(),
            stack: Vec::new(),
            root_file: None,
            unreadable: 0,
        };
        if walk.is_excluded(root) {
            return walk;
        }
        match fs::metadata(root) {
            Ok(meta) if meta.is_dir() => walk.start_dir(root, &options.overrides),
            Ok(meta) => {
                walk.root_file = Some(Entry {
                    path: root.to_path_buf(),
                    kind: EntryKind::of(meta.file_type()),
                    depth: 0,
                })
            }
            Err(_) => walk.unreadable += 1,
        }
        walk
    }

    /// Directories that could not be listed so far.
    pub fn unreadable(&self) -> usize {
        self.unreadable
    }

    fn start_dir(&mut self, root: &Path, overrides: &[String]) {
        let repo = match self.ignores {
            Ignores::Respect => find_repo_root(root),
            Ignores::Disregard => None,
        };
        let (anchor, in_repo) = match &repo {
            Some(repo) => (repo.as_path(), true),
            None => (root, false),
        };
        let root_rel = rel_string(root.strip_prefix(anchor).unwrap_or(Path::new("")));
        if in_repo {
            self.load_ancestors(anchor, root);
        }
        if !overrides.is_empty() {
            self.overrides = Some(Matcher {
                base: root_rel.clone(),
                rules: Arc::new(Gitignore::parse(&overrides.join("\n"))),
            });
        }
        self.push_dir(root.to_path_buf(), root_rel, 0, in_repo);
    }

    /// Loads the ignore files of the directories from the repository root down to (not
    /// including) the walk root, which `push_dir` handles like any other directory.
    fn load_ancestors(&mut self, anchor: &Path, root: &Path) {
        let Ok(below) = root.strip_prefix(anchor) else {
            return;
        };
        let mut dir = anchor.to_path_buf();
        let mut rel = String::new();
        for component in below.components() {
            let has_git = dir.join(".git").symlink_metadata().is_ok();
            let has_gitignore = dir.join(".gitignore").is_file();
            self.push_matchers(&dir, &rel, has_git, has_gitignore);
            rel = join_rel(&rel, &component.as_os_str().to_string_lossy());
            dir.push(component);
        }
    }

    fn push_matchers(&mut self, dir: &Path, rel: &str, has_git: bool, has_gitignore: bool) {
        if has_git {
            if !self.global.is_empty() {
                self.matchers.push(Matcher {
                    base: rel.to_string(),
                    rules: Arc::clone(&self.global),
                });
            }
            if let Some(exclude) = info_exclude_path(dir) {
                self.push_file(&exclude, rel);
            }
        }
        if has_gitignore {
            self.push_file(&dir.join(".gitignore"), rel);
        }
    }

    fn push_file(&mut self, path: &Path, rel: &str) {
        let rules = read_gitignore(path);
        if !rules.is_empty() {
            self.matchers.push(Matcher {
                base: rel.to_string(),
                rules: Arc::new(rules),
            });
        }
    }

    /// Lists `dir`, loads its ignore files, filters and sorts its children and opens a frame.
    fn push_dir(&mut self, dir: PathBuf, rel: String, depth: usize, parent_in_repo: bool) {
        let listing = match list_dir(&dir) {
            Ok(listing) => listing,
            Err(_) => {
                self.unreadable += 1;
                return;
            }
        };
        let matchers_below = self.matchers.len();
        let mut in_repo = parent_in_repo;
        if self.ignores == Ignores::Respect {
            let has_git = listing.iter().any(|(name, ..)| name == ".git");
            in_repo |= has_git;
            let has_gitignore = in_repo && listing.iter().any(|(name, ..)| name == ".gitignore");
            self.push_matchers(&dir, &rel, has_git, has_gitignore);
        }
        let mut entries: Vec<(OsString, EntryKind)> = listing
            .into_iter()
            .filter(|(name, kind, ino)| self.keep(&dir, &rel, name, *kind, *ino))
            .map(|(name, kind, _)| (name, kind))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        self.stack.push(Frame {
            dir,
            rel,
            depth,
            in_repo,
            entries: entries.into_iter(),
            matchers_below,
        });
    }

    fn keep(&self, dir: &Path, dir_rel: &str, name: &OsString, kind: EntryKind, ino: u64) -> bool {
        if let Some(veto) = &self.veto {
            if veto.hides(&dir.join(name), kind, ino) {
                return false;
            }
        }
        let name = name.to_string_lossy();
        if ALWAYS_SKIPPED.contains(&name.as_ref()) {
            return false;
        }
        if self.hidden == Hidden::Skip && name.starts_with('.') {
            return false;
        }
        if !self.exclude.is_empty() && self.is_excluded(&dir.join(name.as_ref())) {
            return false;
        }
        if self.overrides.is_none() && self.matchers.is_empty() {
            return true;
        }
        !self.is_ignored(&join_rel(dir_rel, &name), kind == EntryKind::Dir)
    }

    fn is_excluded(&self, path: &Path) -> bool {
        self.exclude.iter().any(|ex| path.starts_with(ex))
    }

    fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        let matchers = self.overrides.iter().chain(self.matchers.iter().rev());
        for matcher in matchers {
            match matcher.verdict(rel, is_dir) {
                Verdict::Unmatched => continue,
                Verdict::Ignore => return true,
                Verdict::Whitelist => return false,
            }
        }
        false
    }
}

impl Iterator for Walk {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if let Some(entry) = self.root_file.take() {
            return Some(entry);
        }
        loop {
            let frame = self.stack.last_mut()?;
            let Some((name, kind)) = frame.entries.next() else {
                let done = self.stack.pop()?;
                self.matchers.truncate(done.matchers_below);
                continue;
            };
            let path = frame.dir.join(&name);
            let depth = frame.depth + 1;
            let (parent_rel, in_repo) = (&frame.rel, frame.in_repo);
            if kind == EntryKind::Dir && self.max_depth.is_none_or(|max| depth < max) {
                let rel = join_rel(parent_rel, &name.to_string_lossy());
                self.push_dir(path.clone(), rel, depth, in_repo);
            }
            return Some(Entry { path, kind, depth });
        }
    }
}

/// Each entry's name, kind and inode number.
fn list_dir(dir: &Path) -> std::io::Result<Vec<(OsString, EntryKind, u64)>> {
    let mut listing = Vec::new();
    for entry in fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        listing.push((
            entry.file_name(),
            EntryKind::of(file_type),
            crate::platform::entry_inode(&entry),
        ));
    }
    Ok(listing)
}

/// The most of one ignore file that is read. Repository files are untrusted: a `.gitignore`
/// that links to `/proc/self/pagemap` or a FIFO must not stall or exhaust a walk.
const IGNORE_FILE_MAX: usize = 1024 * 1024;

/// Small files the walker follows (`.git` pointing to a worktree's git dir, `commondir`).
const POINTER_FILE_MAX: usize = 64 * 1024;

fn read_gitignore(path: &Path) -> Gitignore {
    match read_limit::read_path_capped(path, IGNORE_FILE_MAX) {
        Ok(capped) => {
            let mut text = String::from_utf8_lossy(&capped.bytes);
            if !capped.complete {
                // A pattern cut at the cap would match the wrong paths; drop it.
                let whole_lines = text.rfind('\n').map_or(0, |i| i + 1);
                text.to_mut().truncate(whole_lines);
            }
            Gitignore::parse(&text)
        }
        Err(_) => Gitignore::default(),
    }
}

/// At most `cap` bytes of a text file, through the bounded reader, or `None`.
fn read_small_text(path: &Path, cap: usize) -> Option<String> {
    let capped = read_limit::read_path_capped(path, cap).ok()?;
    String::from_utf8(capped.bytes).ok()
}

fn join_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn rel_string(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// The nearest directory at or above `start` that has a `.git` entry.
pub fn find_repo_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// `info/exclude` of the repository at `repo`, following a worktree's `.git` file
/// (`gitdir: ...`) and its `commondir`, where git keeps the shared exclude file.
fn info_exclude_path(repo: &Path) -> Option<PathBuf> {
    let dot_git = repo.join(".git");
    let meta = dot_git.symlink_metadata().ok()?;
    if meta.is_dir() {
        return Some(dot_git.join("info").join("exclude"));
    }
    let text = read_small_text(&dot_git, POINTER_FILE_MAX)?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = repo.join(gitdir);
    let common = match read_small_text(&gitdir.join("commondir"), POINTER_FILE_MAX) {
        Some(common) => gitdir.join(common.trim()),
        None => gitdir,
    };
    Some(common.join("info").join("exclude"))
}

/// The global excludes file for this user: `core.excludesFile` from `~/.gitconfig` or
/// `$XDG_CONFIG_HOME/git/config` when set there, else `$XDG_CONFIG_HOME/git/ignore` (by
/// default `~/.config/git/ignore`). Reads two small files; never runs git.
pub fn default_global_excludes() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    global_excludes_path(home.as_deref(), xdg.as_deref())
}

/// [`default_global_excludes`] with the environment passed in.
pub fn global_excludes_path(home: Option<&Path>, xdg_config: Option<&Path>) -> Option<PathBuf> {
    let config_dir = match (xdg_config, home) {
        (Some(xdg), _) => xdg.to_path_buf(),
        (None, Some(home)) => home.join(".config"),
        (None, None) => return None,
    };
    // git reads the XDG file first and ~/.gitconfig after it, so the latter wins.
    let mut configured = None;
    let mut files = vec![config_dir.join("git").join("config")];
    files.extend(home.map(|h| h.join(".gitconfig")));
    for file in files {
        if let Some(text) = read_small_text(&file, IGNORE_FILE_MAX) {
            configured = core_excludes_file(&text).or(configured);
        }
    }
    match configured {
        Some(value) => Some(expand_home(&value, home)),
        None => Some(config_dir.join("git").join("ignore")),
    }
}

fn expand_home(value: &str, home: Option<&Path>) -> PathBuf {
    match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => match home {
            Some(home) if Path::new(value).is_relative() => home.join(value),
            _ => PathBuf::from(value),
        },
    }
}

/// The last `excludesfile` value in a `[core]` section of git config text.
fn core_excludes_file(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"']).next().unwrap_or("");
            in_core = name.eq_ignore_ascii_case("core") && !section.contains('"');
            continue;
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("excludesfile") {
            found = Some(config_value(value));
        }
    }
    found.filter(|v| !v.is_empty())
}

/// A git config value without its comment and surrounding quotes.
fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in raw.trim().chars() {
        match c {
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => break,
            _ => out.push(c),
        }
    }
    out.trim().to_string()
}

/// `path` relative to `base` when it lies inside it (`.` for `base` itself), else in full.
pub fn display_path(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn gitignore_rule_table() {
        // (gitignore text, path relative to its directory, is_dir, expected verdict)
        use Verdict::*;
        let cases: &[(&str, &str, bool, Verdict)] = &[
            ("*.log", "a.log", false, Ignore),
            ("*.log", "deep/er/a.log", false, Ignore),
            ("*.log\n!keep.log", "keep.log", false, Whitelist),
            ("!keep.log\n*.log", "keep.log", false, Ignore),
            ("build/", "build", true, Ignore),
            ("build/", "build", false, Unmatched),
            ("build/", "src/build", true, Ignore),
            ("/build", "build", false, Ignore),
            ("/build", "src/build", false, Unmatched),
            ("doc/frotz", "doc/frotz", true, Ignore),
            ("doc/frotz", "a/doc/frotz", true, Unmatched),
            ("doc/*.txt", "doc/a.txt", false, Ignore),
            ("doc/*.txt", "doc/x/a.txt", false, Unmatched),
            ("**/foo", "foo", false, Ignore),
            ("**/foo", "x/y/foo", false, Ignore),
            ("**/foo/bar", "x/foo/bar", false, Ignore),
            ("abc/**", "abc/x/y", false, Ignore),
            ("abc/**", "abc", true, Unmatched),
            ("a/**/b", "a/b", false, Ignore),
            ("a/**/b", "a/x/y/b", false, Ignore),
            ("# comment", "# comment", false, Unmatched),
            ("\\#hash", "#hash", false, Ignore),
            ("\\!bang", "!bang", false, Ignore),
            ("trail   ", "trail", false, Ignore),
            ("space\\ ", "space ", false, Ignore),
            ("crlf\r", "crlf", false, Ignore),
            ("", "anything", false, Unmatched),
            ("/", "anything", false, Unmatched),
            ("[unclosed\nok", "ok", false, Ignore),
            ("{a,b}", "a", false, Unmatched),
        ];
        let mut failures = Vec::new();
        for &(text, path, is_dir, expected) in cases {
            let got = Gitignore::parse(text).verdict(path, is_dir);
            if got != expected {
                failures.push(format!(
                    "{text:?} on {path:?} (dir: {is_dir}): expected {expected:?}, got {got:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn core_excludes_file_is_read_from_git_config_text() {
        let text = "[user]\n\tname = x\n[core]\n\tEditor = vim\n\texcludesFile = \"~/.gitignore_global\" # mine\n[core \"sub\"]\n\texcludesfile = nope\n";
        assert_eq!(
            core_excludes_file(text).as_deref(),
            Some("~/.gitignore_global")
        );
        assert_eq!(core_excludes_file("[user]\nexcludesfile = x\n"), None);
    }

    #[test]
    fn global_excludes_default_to_xdg_ignore() {
        let scratch = TempDir::new("walk-home");
        let home = scratch.path();
        assert_eq!(
            global_excludes_path(Some(home), None),
            Some(home.join(".config/git/ignore"))
        );
        assert_eq!(
            global_excludes_path(Some(home), Some(Path::new("/xdg"))),
            Some(PathBuf::from("/xdg/git/ignore"))
        );
        fs::write(
            home.join(".gitconfig"),
            "[core]\n  excludesfile = ~/my-ignores\n",
        )
        .unwrap();
        assert_eq!(
            global_excludes_path(Some(home), None),
            Some(home.join("my-ignores"))
        );
        assert_eq!(global_excludes_path(None, None), None);
    }

    #[test]
    fn display_path_is_relative_inside_the_base() {
        let base = Path::new("/work/p");
        assert_eq!(
            display_path(Path::new("/work/p/src/a.rs"), base),
            "src/a.rs"
        );
        assert_eq!(display_path(Path::new("/work/p"), base), ".");
        assert_eq!(display_path(Path::new("/etc/hosts"), base), "/etc/hosts");
    }
}
