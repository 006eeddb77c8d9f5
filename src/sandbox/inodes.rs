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

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many entries below the hidden paths are looked at before giving up on completeness.
const MAX_ENTRIES: usize = 20_000;

/// `(device, inode)` of every regular file below the hidden paths.
#[derive(Debug, Default)]
pub struct HiddenInodes {
    files: HashSet<(u64, u64)>,
    /// Inode numbers alone, for the walkers' cheap first test on a directory listing.
    inos: HashSet<u64>,
    /// The walk stopped at [`MAX_ENTRIES`].
    incomplete: bool,
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
            self.files.insert((meta.dev(), meta.ino()));
            self.inos.insert(meta.ino());
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
        if !meta.is_file() || meta.nlink() < 2 {
            return false;
        }
        self.incomplete || self.files.contains(&(meta.dev(), meta.ino()))
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

    #[test]
    fn a_hard_link_to_a_hidden_file_is_recognised_and_a_plain_file_is_not() {
        let base =
            std::env::temp_dir().join(format!("reasonix-inodes-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
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
        let _ = fs::remove_dir_all(&base);
    }
}
