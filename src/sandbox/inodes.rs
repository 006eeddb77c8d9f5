//! The inodes of the files `forbid_read` hides, so that a hard link to one of them elsewhere
//! (inside the workspace, say) is hidden too: a hard link is the same file under another name,
//! and no path comparison can tell it apart from any other file.
//!
//! The set is collected once per session, the first time a reader needs it, by walking each
//! hidden path without following symlinks. The walk is bounded: past [`MAX_ENTRIES`] entries
//! the set is marked incomplete and every regular file with more than one link is treated as
//! hidden, so the bound can only make readers stricter. A file added to a hidden directory after
//! the walk is not in the set; creating a hard link to it needs a process that can see it,
//! which the bash jail is not.
//!
//! The bash jail hides paths, not inodes, so for it the hard links themselves must be found:
//! [`HiddenInodes::find_links`] walks the places a command can reach by a short path (the
//! workspace and the write roots). It only runs when some hidden file has more than one link,
//! which is rare, so the usual session pays nothing.

use crate::platform;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// How many entries below the hidden paths are looked at before giving up on completeness.
const MAX_ENTRIES: usize = 20_000;

/// How many entries of the workspace and write roots [`HiddenInodes::find_links`] looks at.
const MAX_LINK_SEARCH: usize = 500_000;

/// `(device, inode)` of every regular file below the hidden paths.
#[derive(Debug, Default)]
pub struct HiddenInodes {
    files: HashSet<(u64, u64)>,
    /// Inode numbers alone, for the walkers' cheap first test on a directory listing.
    inos: HashSet<u64>,
    /// The walk stopped at [`MAX_ENTRIES`].
    incomplete: bool,
    /// Some hidden file has more than one link, so a hard link to it may exist elsewhere.
    linked: bool,
}

impl HiddenInodes {
    pub fn collect(hidden: &[PathBuf]) -> HiddenInodes {
        let mut set = HiddenInodes::default();
        let mut budget = MAX_ENTRIES;
        for path in hidden {
            set.visit(path, &mut budget);
        }
        set
    }

    fn visit(&mut self, path: &Path, budget: &mut usize) {
        if *budget == 0 {
            self.incomplete = true;
            return;
        }
        *budget -= 1;
        let Ok(meta) = fs::symlink_metadata(path) else {
            return;
        };
        if meta.is_file() {
            if let Some((dev, ino)) = platform::file_id(&meta) {
                self.files.insert((dev, ino));
                self.inos.insert(ino);
            }
            self.linked |= platform::links(&meta) > 1;
        } else if meta.is_dir() {
            let Ok(entries) = fs::read_dir(path) else {
                return;
            };
            for entry in entries.flatten() {
                self.visit(&entry.path(), budget);
            }
        }
    }

    /// Whether the file with this metadata is a hidden file under another name.
    pub fn hides(&self, meta: &fs::Metadata) -> bool {
        if !meta.is_file() || platform::links(meta) < 2 {
            return false;
        }
        self.incomplete || platform::file_id(meta).is_some_and(|id| self.files.contains(&id))
    }

    /// The hard links to hidden files below `roots`, found by a bounded walk that follows no
    /// symlinks and skips the `hidden` paths themselves; empty when no hidden file has a second
    /// link. Past the bound the walk stops with what it found (see the module doc).
    pub fn find_links(&self, roots: &[&Path], hidden: &[PathBuf]) -> Vec<PathBuf> {
        let mut found = Vec::new();
        if !self.linked {
            return found;
        }
        let mut budget = MAX_LINK_SEARCH;
        let mut pending: Vec<PathBuf> = roots.iter().map(|r| r.to_path_buf()).collect();
        while let Some(dir) = pending.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if budget == 0 {
                    return found;
                }
                budget -= 1;
                let path = entry.path();
                if hidden.iter().any(|h| path.starts_with(h)) {
                    continue;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    pending.push(path);
                } else if kind.is_file()
                    && self.inos.contains(&platform::entry_inode(&entry))
                    && fs::symlink_metadata(&path).is_ok_and(|meta| self.hides(&meta))
                {
                    found.push(path);
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// A cheap first test for an entry of a directory listing: `false` means the entry is
    /// certainly not a hidden file; `true` means [`HiddenInodes::hides`] must decide.
    pub fn may_hide(&self, ino: u64) -> bool {
        self.incomplete || self.inos.contains(&ino)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_hard_link_to_a_hidden_file_is_recognised_and_a_plain_file_is_not() {
        let base = TempDir::new("inodes");
        fs::create_dir_all(base.join("secrets/deep")).unwrap();
        fs::write(base.join("secrets/deep/key"), "k").unwrap();
        fs::write(base.join("plain"), "p").unwrap();
        fs::hard_link(base.join("secrets/deep/key"), base.join("alias")).unwrap();
        fs::hard_link(base.join("plain"), base.join("plain2")).unwrap();
        let set = HiddenInodes::collect(&[base.join("secrets")]);
        let meta = |name: &str| fs::metadata(base.join(name)).unwrap();
        assert!(set.hides(&meta("alias")));
        assert!(set.may_hide(meta("alias").ino()));
        assert!(
            !set.hides(&meta("plain2")),
            "an unrelated hard link stays visible"
        );
        assert!(
            !set.hides(&meta("secrets")),
            "directories are judged by path"
        );
    }
}
