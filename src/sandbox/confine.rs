//! Path confinement for the file tools: turning a model-supplied path into an absolute,
//! symlink-free one, then deciding whether a writer may change it (it must lie under the
//! workspace root or an `allow_write` root, and not under the reasonix home) and whether a
//! reader may see it (it must not lie under a `forbid_read` path).
//!
//! Resolution walks the path one component at a time the way the kernel does, keeping a prefix
//! that is already free of symlinks: a symlink is replaced by its target (read with
//! `readlink`, so a dangling link is followed to where a write through it would land), `..`
//! removes the last component of the resolved prefix (so `link/..` means the parent of the
//! link's target, as for the kernel), and components that do not exist yet are appended as
//! they are. The tools then operate on the resolved path, never on the original one, so what
//! was checked is what gets written.
//!
//! The check and the write are not one step, so the writers do not reopen the resolved path
//! by name: `sandbox::beneath` opens its directories relative to descriptors and refuses every
//! symlink on the way. Because the resolved path has none, a symlink found there means another
//! process (a concurrent bash command) swapped a directory after the check, and the write
//! fails closed instead of following it.
//!
//! Hard links: a hard link inside the workspace to a file outside cannot be told apart from any
//! other file by its path. A hard link to a hidden file is recognised by its inode (see
//! `sandbox::inodes`) and refused like the file itself. Writers are safe with any hard link:
//! they write a temp file and rename it over the target, which replaces the directory entry
//! (the link) instead of writing into the shared inode, so the outside file keeps its content.
//!
//! The bash jail (bubblewrap or Landlock) is separate: see `sandbox::bwrap` and
//! `sandbox::landlock`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{Policy, SandboxError};

/// More symlinks than this while resolving one path is treated as a loop (the kernel's limit).
const MAX_SYMLINKS: usize = 40;

impl Policy {
    /// The path a writer may change: `path` resolved to an absolute, symlink-free path (a final
    /// symlink is followed, so writing keeps the link and changes its target), which must lie
    /// under the workspace root or a write root and outside every `forbid_read` path (changing
    /// a hidden file could reveal it, for example through an edit's error message).
    pub fn check_write(&self, path: &Path) -> Result<PathBuf, SandboxError> {
        let resolved = resolve(&self.absolute(path))?;
        self.ensure_unprotected(path, &resolved)?;
        self.ensure_writable(path, &resolved)?;
        self.ensure_visible(path, &resolved)?;
        Ok(resolved)
    }

    /// The path a reader may open: `path` resolved like [`Policy::check_write`], refused when it
    /// lies under a `forbid_read` path. Reading is otherwise not confined.
    pub fn check_read(&self, path: &Path) -> Result<PathBuf, SandboxError> {
        let resolved = resolve(&self.absolute(path))?;
        self.ensure_visible(path, &resolved)?;
        Ok(resolved)
    }

    /// The directory entry `path` names, for operations on the entry itself (moving or
    /// removing it): the parent is resolved, a final symlink is kept as it is. The entry must
    /// lie strictly inside a write root, because moving it changes its parent directory, and
    /// it may neither lie under nor contain a `forbid_read` path, because moving a directory
    /// that holds a hidden path would bring that path out of hiding.
    pub fn check_write_entry(&self, path: &Path) -> Result<PathBuf, SandboxError> {
        let absolute = self.absolute(path);
        let resolved = match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) => resolve(parent)?.join(name),
            // `/` or a path ending in `..`: the entry is the directory itself.
            _ => resolve(&absolute)?,
        };
        self.ensure_unprotected(path, &resolved)?;
        if let Some(protected) = self.protected.iter().find(|p| p.starts_with(&resolved)) {
            return Err(SandboxError::Protected {
                path: path.to_path_buf(),
                protected: protected.clone(),
            });
        }
        let strictly_inside = self
            .writable()
            .any(|root| resolved.starts_with(root) && resolved != *root);
        if !strictly_inside {
            return Err(self.outside(path));
        }
        self.ensure_visible(path, &resolved)?;
        if let Some(hidden) = self
            .forbid_read
            .iter()
            .find(|hidden| hidden.starts_with(&resolved))
        {
            return Err(SandboxError::ContainsForbidden {
                path: path.to_path_buf(),
                hidden: hidden.clone(),
            });
        }
        Ok(resolved)
    }

    /// Whether `resolved` (an absolute, symlink-free path) is hidden by `forbid_read`; for
    /// walkers (ls, glob, grep) that must skip hidden entries without reporting an error.
    pub fn hides(&self, resolved: &Path) -> bool {
        self.forbid_read
            .iter()
            .any(|hidden| resolved.starts_with(hidden))
    }

    /// Whether the walker entry at `path` with inode number `ino` is a hard link to a hidden
    /// file. Costs a `stat` only when the inode number matches one of the hidden files.
    pub fn hides_link(&self, path: &Path, ino: u64) -> bool {
        if self.forbid_read.is_empty() || !self.hidden_inodes().may_hide(ino) {
            return false;
        }
        fs::symlink_metadata(path).is_ok_and(|meta| self.hidden_inodes().hides(&meta))
    }

    /// What the bash jail hides: the `forbid_read` paths and the hard links to hidden files
    /// found in the workspace and write roots (see `sandbox::inodes`), computed once.
    pub fn jail_hidden(&self) -> &[PathBuf] {
        self.jail_hidden.get_or_init(|| {
            let roots: Vec<&Path> = self.roots().map(PathBuf::as_path).collect();
            let mut hidden = self.forbid_read.clone();
            if !hidden.is_empty() {
                hidden.extend(self.hidden_inodes().find_links(&roots, &self.forbid_read));
            }
            hidden
        })
    }

    /// The inodes of the hidden files, the sessions' temp directories left out: they hold no
    /// credential, and a busy one would spend the walk's budget and make every hard-linked file
    /// (a pnpm store, say) count as hidden.
    fn hidden_inodes(&self) -> &super::inodes::HiddenInodes {
        self.hidden_inodes.get_or_init(|| {
            let temp = self
                .home
                .as_ref()
                .map(|home| home.join(crate::config::paths::JAIL_TMP_DIR));
            let files: Vec<PathBuf> = self
                .forbid_read
                .iter()
                .filter(|hidden| Some(*hidden) != temp.as_ref())
                .cloned()
                .collect();
            super::inodes::HiddenInodes::collect(&files)
        })
    }

    /// The protected path (the reasonix home) that `resolved` lies under, if any. A workspace
    /// inside the home, an unusual layout, stays writable: only what lies outside the
    /// workspace is protected then, so the home's own files still are.
    pub fn protects(&self, resolved: &Path) -> Option<&PathBuf> {
        self.protected.iter().find(|protected| {
            resolved.starts_with(protected)
                && !(self.workspace_root.starts_with(protected)
                    && resolved.starts_with(&self.workspace_root))
        })
    }

    /// The workspace root followed by the write roots.
    pub fn roots(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.workspace_root).chain(self.write_roots.iter())
    }

    /// Where writers and jailed commands may write: a subagent's fence when it has one, else
    /// the roots.
    pub fn writable(&self) -> impl Iterator<Item = &PathBuf> {
        let fence = self.fence.as_ref();
        let roots = fence.is_none().then(|| self.roots());
        fence
            .into_iter()
            .flatten()
            .chain(roots.into_iter().flatten())
    }

    fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace_root.join(path)
        }
    }

    fn ensure_writable(&self, shown: &Path, resolved: &Path) -> Result<(), SandboxError> {
        if self.writable().any(|root| resolved.starts_with(root)) {
            Ok(())
        } else {
            Err(self.outside(shown))
        }
    }

    fn ensure_unprotected(&self, shown: &Path, resolved: &Path) -> Result<(), SandboxError> {
        match self.protects(resolved) {
            Some(protected) => Err(SandboxError::Protected {
                path: shown.to_path_buf(),
                protected: protected.clone(),
            }),
            None => Ok(()),
        }
    }

    fn ensure_visible(&self, shown: &Path, resolved: &Path) -> Result<(), SandboxError> {
        if let Some(hidden) = self
            .forbid_read
            .iter()
            .find(|hidden| resolved.starts_with(hidden))
        {
            if self.secrets.contains(hidden) {
                return Err(SandboxError::Secret {
                    path: shown.to_path_buf(),
                    secret: hidden.clone(),
                });
            }
            return Err(SandboxError::Forbidden {
                path: shown.to_path_buf(),
                hidden: hidden.clone(),
            });
        }
        let linked = !self.forbid_read.is_empty()
            && fs::symlink_metadata(resolved).is_ok_and(|meta| self.hidden_inodes().hides(&meta));
        if linked {
            return Err(SandboxError::HardLinkToHidden {
                path: shown.to_path_buf(),
            });
        }
        Ok(())
    }

    fn outside(&self, shown: &Path) -> SandboxError {
        if let Some(fence) = &self.fence {
            return SandboxError::OutsideFence {
                path: shown.to_path_buf(),
                fence: fence.clone(),
            };
        }
        SandboxError::OutsideWrite {
            path: shown.to_path_buf(),
            workspace: self.workspace_root.clone(),
        }
    }
}

/// Resolves an absolute `path` to an absolute path without symlinks, `.` or `..`, following
/// symlinks (dangling ones included) through their targets. Components that do not exist are
/// kept as they are; a component that exists but is not a directory, yet is followed by more
/// components, is an error (`ENOTDIR`), as are permission errors: the caller must fail closed.
pub fn resolve(path: &Path) -> Result<PathBuf, SandboxError> {
    let failed = |source: io::Error| SandboxError::Resolve {
        path: path.to_path_buf(),
        source,
    };
    if !path.is_absolute() {
        return Err(failed(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path is not absolute",
        )));
    }
    let mut pending: VecDeque<OsString> = components(path).collect();
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    // Once a component is missing, nothing below it can exist (or be a symlink).
    let mut missing = false;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            resolved.pop();
            // Climbing out of the missing part puts us back among real entries.
            missing = missing && fs::symlink_metadata(&resolved).is_err();
            continue;
        }
        let candidate = resolved.join(&name);
        if missing {
            resolved = candidate;
            continue;
        }
        match fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(SandboxError::SymlinkLoop {
                        path: path.to_path_buf(),
                    });
                }
                let target = match fs::read_link(&candidate) {
                    Ok(target) => target,
                    // No longer a symlink: it was swapped since the stat. Look at the
                    // component again; the link count above bounds how often.
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        pending.push_front(name);
                        continue;
                    }
                    Err(e) => return Err(failed(e)),
                };
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                for part in components(&target).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(part);
                }
            }
            Ok(meta) => {
                if !meta.is_dir() && !pending.is_empty() {
                    return Err(failed(io::Error::from_raw_os_error(libc::ENOTDIR)));
                }
                resolved = candidate;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = true;
                resolved = candidate;
            }
            Err(e) => return Err(failed(e)),
        }
    }
    Ok(resolved)
}

/// The names and `..` of `path`, without the root and `.` components.
fn components(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::symlink;

    fn policy_in(ws: &Path, home: &Path, forbid_read: Vec<PathBuf>) -> Policy {
        Policy::new(super::super::Settings {
            workspace_root: ws.to_path_buf(),
            home: home.to_path_buf(),
            allow_write: Vec::new(),
            forbid_read,
            bash: super::super::BashMode::Enforce,
            network: false,
            backend: super::super::Backend::Bwrap,
        })
    }

    /// A home inside the workspace is still the home: writers may not change it.
    #[test]
    fn the_home_stays_unwritable_inside_the_workspace() {
        let s = TempDir::new("protected");
        fs::create_dir_all(s.join("home")).unwrap();
        let policy = policy_in(s.path(), &s.join("home"), Vec::new());
        let err = policy.check_write(&s.join("home/config.toml")).unwrap_err();
        assert!(matches!(err, SandboxError::Protected { .. }), "{err}");
        assert!(policy.check_write(&s.join("notes.txt")).is_ok());
    }

    /// A hard link to a hidden file is hidden by inode, wherever it lies and whatever its name.
    #[test]
    fn a_hard_link_to_a_hidden_file_is_hidden() {
        use std::os::unix::fs::MetadataExt;
        let s = TempDir::new("links");
        fs::create_dir_all(s.join("home")).unwrap();
        fs::write(s.join("secret.txt"), "key").unwrap();
        fs::write(s.join("other.txt"), "plain").unwrap();
        fs::hard_link(s.join("secret.txt"), s.join("copy.txt")).unwrap();
        let policy = policy_in(s.path(), &s.join("home"), vec![s.join("secret.txt")]);
        let ino = |name: &str| fs::metadata(s.join(name)).unwrap().ino();
        assert!(policy.hides_link(&s.join("copy.txt"), ino("copy.txt")));
        assert!(!policy.hides_link(&s.join("other.txt"), ino("other.txt")));
    }

    #[test]
    fn resolves_missing_tails_dots_and_links() {
        let s = TempDir::new("resolve");
        let root = s.path();
        fs::create_dir(root.join("real")).unwrap();
        symlink(root.join("real"), root.join("abs")).unwrap();
        symlink("real", root.join("rel")).unwrap();
        symlink("nowhere/deeper", root.join("dangling")).unwrap();
        assert_eq!(
            resolve(&root.join("abs/new/../x.txt")).unwrap(),
            root.join("real/x.txt")
        );
        assert_eq!(resolve(&root.join("rel/./y")).unwrap(), root.join("real/y"));
        assert_eq!(
            resolve(&root.join("dangling")).unwrap(),
            root.join("nowhere/deeper")
        );
        // `..` after a symlink applies to the link's target, as the kernel does it.
        fs::create_dir(root.join("real/inner")).unwrap();
        symlink(root.join("real/inner"), root.join("deep")).unwrap();
        assert_eq!(resolve(&root.join("deep/..")).unwrap(), root.join("real"));
        // Climbing back out of a missing part must follow links again.
        assert_eq!(
            resolve(&root.join("missing/../abs/z")).unwrap(),
            root.join("real/z")
        );
    }

    #[test]
    fn symlink_loops_and_file_parents_fail() {
        let s = TempDir::new("loops");
        symlink("b", s.join("a")).unwrap();
        symlink("a", s.join("b")).unwrap();
        let err = resolve(&s.join("a/x")).unwrap_err();
        assert!(err.to_string().contains("too many symbolic links"), "{err}");
        fs::write(s.join("file"), "x").unwrap();
        assert!(resolve(&s.join("file/child")).is_err());
        assert!(resolve(&s.join("file/..")).is_err());
        assert!(resolve(Path::new("relative")).is_err());
    }
}
