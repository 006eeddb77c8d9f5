//! Crash-safe file writes shared by config, the key store, sessions and memory: write a temp
//! file in the same directory, fsync it, rename it over the target, fsync the directory. A
//! crash at any point leaves either the old file or the new one, never a torn mix. Also the
//! private (0700) directories that hold user state.
//!
//! These writes go by path, for files reasonix itself owns; the file tools write through
//! `sandbox::beneath` instead, which does the same steps relative to directory descriptors so
//! that a concurrent symlink swap cannot redirect them.
//!
//! For unit tests, `scratch::TempDir` is the one scratch directory helper of the crate.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically. `mode` sets the permission bits of a new file; when
/// `None`, an existing file's mode is kept and a new file gets 0644 (subject to umask).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let existing_mode = fs::metadata(path).ok().map(|m| crate::platform::mode(&m));
    let final_mode = mode.or(existing_mode).unwrap_or(0o644);
    let temp = temp_path(&dir, path);
    let result = (|| {
        let mut file = crate::platform::create_mode(
            OpenOptions::new().write(true).create_new(true),
            final_mode,
        )
        .open(&temp)?;
        file.write_all(bytes)?;
        // The umask may have narrowed the mode on create; set it exactly.
        crate::platform::set_mode(&file, final_mode)?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        sync_dir(&dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Creates `dir` and any missing parents with mode 0700 (before the umask). Directories that
/// already exist keep their mode: they may be shared on purpose, and only what reasonix
/// creates is its to decide.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    crate::platform::dir_mode(fs::DirBuilder::new().recursive(true), 0o700).create(dir)
}

/// Writes a file only the user may read (0600) atomically, creating its directory private to
/// the user (0700) when missing: for state in the reasonix home such as grants and trust.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            create_private_dir(dir)?;
        }
    }
    write_atomic(path, bytes, Some(0o600))
}

/// Makes a rename or a new directory entry durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn temp_path(dir: &Path, target: &Path) -> PathBuf {
    dir.join(temp_name(target.file_name().unwrap_or("file".as_ref())))
}

/// A name for the temp file that will replace `name`, unique within this process (a counter)
/// and across processes (the pid), and hidden (a leading dot) from casual listings.
pub fn temp_name(name: &OsStr) -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let mut temp = OsString::from(".");
    temp.push(name);
    temp.push(format!(".reasonix-tmp-{}-{n}", std::process::id()));
    temp
}

/// Scratch directories for unit tests: one helper instead of a hand-rolled one per module.
/// Integration tests have their own (`tests/util::Dir`); this one stays inside the crate so
/// `#[cfg(test)]` modules can use it without a dependency.
#[cfg(test)]
pub(crate) mod scratch {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A directory under the system temp dir, unique to this process (its id), this call (a
    /// counter) and the test (`name`, for a reader of a leftover tree), so tests running in
    /// parallel never share one. Its path is canonical (no symlinks, as code that opens
    /// entries without following links needs). The tree is removed on drop.
    pub(crate) struct TempDir {
        path: PathBuf,
    }

    impl TempDir {
        pub(crate) fn new(name: &str) -> TempDir {
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let n = COUNTER.fetch_add(1, Ordering::SeqCst);
            let path = std::env::temp_dir()
                .join(format!("reasonix-unit-{}-{n}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).expect("create the scratch dir");
            TempDir {
                path: path.canonicalize().expect("canonical scratch dir"),
            }
        }

        pub(crate) fn path(&self) -> &Path {
            &self.path
        }

        pub(crate) fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
            self.path.join(rel)
        }

        /// Writes `bytes` to `rel`, creating parent directories; returns the file's path.
        pub(crate) fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> PathBuf {
            let path = self.join(rel);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).expect("create parent dirs");
            }
            fs::write(&path, bytes).expect("write a scratch file");
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scratch::TempDir;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_content_keeps_mode_and_leaves_no_temp_files() {
        let dir = TempDir::new("mode");
        let file = dir.join("script.sh");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
        write_atomic(&file, b"new", None).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn private_files_are_0600_in_a_new_0700_directory() {
        let dir = TempDir::new("private");
        let file = dir.join("state/grants.json");
        write_private(&file, b"{}").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dir.join("state")), 0o700);
    }

    #[test]
    fn explicit_mode_applies_to_new_files() {
        let dir = TempDir::new("secret");
        let file = dir.join(".env");
        write_atomic(&file, b"K=V\n", Some(0o600)).unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
