//! The private temp directory of one session's jailed commands: `<home>/tmp/<pid>-<n>`, mode
//! 0700, created on first use and removed with everything in it when the last policy holding
//! it is dropped. Landlock cannot give a command a `/tmp` of its own (it has no mount
//! namespace), and the host's `/tmp`, `/var/tmp` and `/dev/shm` are shared with every other
//! process of the user, so jailed commands write there not at all and get `TMPDIR` pointing
//! here instead. Directories left by a reasonix that died (its pid no longer runs) are removed
//! when the next one is made. The whole `<home>/tmp` is hidden from tools and other sessions'
//! jails (`config::paths::home_secrets`); a jail grants only its own directory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::sys;

/// One session's temp directory; removed on drop.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    /// Makes a fresh directory under `root` (`<home>/tmp`), creating `root` when needed.
    pub fn create(root: &Path) -> io::Result<PrivateTmp> {
        PrivateTmp::create_in(root).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot make a private temp directory in {}: {e}",
                    root.display()
                ),
            )
        })
    }

    fn create_in(root: &Path) -> io::Result<PrivateTmp> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        // The root may be shared by several sessions and made by anyone: only the directory
        // below it has to be private.
        fs::create_dir_all(root)?;
        remove_orphans(root);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = root.join(format!("{}-{n}", std::process::id()));
        // A leftover of an earlier process with this pid (it died without cleaning up).
        let _ = fs::remove_dir_all(&path);
        make_private_dir(&path)?;
        Ok(PrivateTmp { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // std's remove_dir_all never follows a symlink a command left inside.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Removes the directories of processes that no longer run. Without `/proc` nothing can be
/// told apart, so nothing is removed.
fn remove_orphans(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Creates `dir` with mode 0700, or accepts it when it already is a directory of ours (a
/// shared directory may hold a planted symlink or another user's directory by that name).
fn make_private_dir(dir: &Path) -> io::Result<()> {
    match crate::platform::dir_mode(&mut fs::DirBuilder::new(), 0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(dir)?;
            if meta.is_dir()
                && crate::platform::owner(&meta) == Some(sys::uid())
                && crate::platform::mode(&meta) & 0o077 == 0
            {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not a private directory of ours",
                        dir.display()
                    ),
                ))
            }
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn each_session_gets_its_own_directory_removed_on_drop() {
        let scratch = TempDir::new("private-tmp");
        let root = scratch.join("home/tmp");
        let a = PrivateTmp::create(&root).unwrap();
        let b = PrivateTmp::create(&root).unwrap();
        assert_ne!(a.path(), b.path());
        fs::write(a.path().join("f"), "x").unwrap();
        assert_eq!(
            crate::platform::mode(&fs::metadata(a.path()).unwrap()) & 0o777,
            0o700
        );
        let kept = a.path().to_path_buf();
        drop(a);
        assert!(!kept.exists());
        assert!(b.path().exists());
    }

    #[test]
    fn directories_of_dead_processes_are_swept() {
        let scratch = TempDir::new("private-tmp-orphans");
        let root = scratch.join("tmp");
        // No process has pid 4294967295 (above the kernel's pid_max).
        let orphan = root.join("4294967295-0");
        fs::create_dir_all(orphan.join("deep")).unwrap();
        let foreign = root.join("not-a-session");
        fs::create_dir_all(&foreign).unwrap();
        let _mine = PrivateTmp::create(&root).unwrap();
        assert!(!orphan.exists());
        assert!(foreign.exists());
    }
}
