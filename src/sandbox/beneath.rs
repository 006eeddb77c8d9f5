//! Race-free writes for the file tools. [`confine`](super::confine) decides on a path; this
//! module performs the write on exactly that path even while another process (a bash command
//! the jail lets write the workspace) renames directories and symlinks under our feet.
//!
//! The path a writer gets from `Policy::check_write` is absolute and free of symlinks, `.` and
//! `..` by construction. So the directory that holds the entry is opened from `/` without
//! following any symlink: with openat2(2) and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS` in one call where the kernel has it, else one `openat(O_NOFOLLOW)`
//! per component. Every later step (reading the old file, creating the temp file, renaming it
//! into place, moving an entry) names a single component relative to that directory
//! descriptor, again without following symlinks. A symlink met on the way can only mean that
//! the path changed after the check, so the operation fails closed with [`PathChanged`]
//! instead of going where the link points.
//!
//! The walk starts at `/` rather than at the write root's path: a root's own path can be
//! swapped too when its parent is writable (a workspace under `/tmp`, which Landlock leaves
//! writable), and the check already proved the whole path lies under a root.
//!
//! What the descriptor pins is the directory itself: if it is renamed while we hold it, the
//! write lands in it under its new name. Only a process that may write the directory's parent
//! can rename it, and the jail grants that only inside the write roots.
//!
//! Writes that reasonix makes to its own files (config, sessions) go through
//! `crate::fsutil::write_atomic`, by path.

use crate::platform::{self, Special};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, File, Metadata};
use std::io::{self, Write};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

use super::sys::{Dir, OpenFile, Remove, Rename};

/// The error inside an `io::Error` when a symlink turned up on a path that was free of them
/// when it was checked: something swapped a directory or file while we were writing.
#[derive(Debug)]
pub struct PathChanged;

impl fmt::Display for PathChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the path changed while it was being written (a directory or file on it was \
             replaced, for example by a symlink); nothing was written through it; retry"
        )
    }
}

impl std::error::Error for PathChanged {}

/// A new [`PathChanged`] error.
pub fn path_changed() -> io::Error {
    io::Error::other(PathChanged)
}

/// Whether [`Entry::open`] creates missing directories above the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parents {
    /// They must exist (`NotFound` otherwise).
    Existing,
    /// Missing ones are created (mode 0777 before umask, as `create_dir_all` does).
    Create,
}

/// How the directories above an entry are opened. Chosen once per process: openat2 when the
/// kernel has it, the per-component walk otherwise; both refuse every symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walker {
    Openat2,
    PerComponent,
}

/// Set when openat2 answered `ENOSYS` once, so later calls skip straight to the walk.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// One directory entry of an absolute, symlink-free path, held as its parent directory's
/// descriptor plus its name. Everything done through it happens in that directory.
#[derive(Debug)]
pub struct Entry {
    parent: Dir,
    name: OsString,
}

impl Entry {
    /// Opens the directory that holds `path` (absolute and symlink-free, as `Policy` returns
    /// it) without following symlinks. A symlink on the way fails with [`PathChanged`].
    pub fn open(path: &Path, parents: Parents) -> io::Result<Entry> {
        let walker = if NO_OPENAT2.load(Ordering::Relaxed) {
            Walker::PerComponent
        } else {
            Walker::Openat2
        };
        Entry::open_with(path, parents, walker)
    }

    /// [`Entry::open`] with a chosen walker, so tests cover the one this kernel does not pick.
    fn open_with(path: &Path, parents: Parents, walker: Walker) -> io::Result<Entry> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path names no entry",
            ));
        };
        let relative = dir
            .strip_prefix("/")
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path is not absolute"))?;
        let root = Dir::open(Path::new("/"))?;
        let parent = match walker {
            Walker::Openat2 => open_beneath(root, relative, parents)?,
            Walker::PerComponent => walk(root, relative, parents)?,
        };
        Ok(Entry {
            parent,
            name: name.to_os_string(),
        })
    }

    /// The entry's metadata, not following a symlink; `None` when it does not exist.
    pub fn metadata(&self) -> io::Result<Option<Metadata>> {
        match self.parent.metadata(&self.name) {
            Ok(meta) => Ok(Some(meta)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens the existing file for reading (a FIFO does not block the open; check the type
    /// with `File::metadata`); `None` when it does not exist, [`PathChanged`] when it is a
    /// symlink, since the checked path had its final symlink followed already.
    pub fn open_existing(&self) -> io::Result<Option<File>> {
        match self.parent.open_file(&self.name, OpenFile::Read) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(path_changed()),
            Err(e) => Err(e),
        }
    }

    /// Replaces the file with `bytes` atomically: a temp file in the same directory, written,
    /// given the old file's permission bits (0644 for a new file), synced and renamed over the
    /// entry, then the directory synced. The rename replaces the entry, so a hard link to a
    /// file elsewhere is cut loose rather than written through.
    pub fn replace(&self, bytes: &[u8]) -> io::Result<()> {
        let mode = match self.metadata()? {
            Some(meta) if meta.file_type().is_symlink() => return Err(path_changed()),
            Some(meta) => platform::mode(&meta),
            None => 0o644,
        };
        let temp = crate::fsutil::temp_name(&self.name);
        let mut file = self.parent.open_file(&temp, OpenFile::CreateNew { mode })?;
        let written = (|| {
            file.write_all(bytes)?;
            // The umask may have narrowed the mode on create; set it exactly.
            platform::set_mode(&file, mode)?;
            file.sync_all()?;
            self.parent
                .rename(&temp, &self.parent, &self.name, Rename::Replace)
        })();
        if let Err(e) = written {
            let _ = self.parent.remove(&temp, Remove::File);
            return Err(e);
        }
        self.parent.sync()
    }

    /// Renames this entry to `to`, failing with `AlreadyExists` when `to` exists; the check
    /// and the rename are one step (`RENAME_NOREPLACE`) where the filesystem supports it.
    pub fn rename_to(&self, to: &Entry) -> io::Result<()> {
        match self
            .parent
            .rename(&self.name, &to.parent, &to.name, Rename::NoReplace)
        {
            // EINVAL: a filesystem without RENAME_NOREPLACE (or a directory moved into itself,
            // which the plain rename refuses again). Check, then rename: the best it allows.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                if to.metadata()?.is_some() {
                    return Err(io::Error::from_raw_os_error(libc::EEXIST));
                }
                self.parent
                    .rename(&self.name, &to.parent, &to.name, Rename::Replace)
            }
            other => other,
        }?;
        to.parent.sync()
    }

    /// Copies this entry to `to`, which must not exist: recursively for a directory, keeping
    /// permission bits and symlinks (stored as they are, never followed); for moves across
    /// filesystems. Every step is relative to descriptors, like the rest of this module.
    /// A failed copy removes what it created and leaves an existing `to` alone.
    pub fn copy_to(&self, to: &Entry) -> io::Result<()> {
        copy_tree(&self.parent, &self.name, &to.parent, &to.name)?;
        to.parent.sync()
    }

    /// Removes this entry, recursively for a directory, never following a symlink.
    pub fn remove_tree(&self) -> io::Result<()> {
        remove_tree(&self.parent, &self.name)
    }
}

/// Opens `relative` beneath `root` with openat2 in one call, falling back to [`walk`] when the
/// kernel lacks openat2 or when directories must be created.
fn open_beneath(root: Dir, relative: &Path, parents: Parents) -> io::Result<Dir> {
    if relative.as_os_str().is_empty() {
        return Ok(root);
    }
    match root.open_dir_beneath(relative) {
        Ok(dir) => Ok(dir),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            NO_OPENAT2.store(true, Ordering::Relaxed);
            walk(root, relative, parents)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound && parents == Parents::Create => {
            walk(root, relative, parents)
        }
        // ELOOP: a symlink; EXDEV: a step out of the root (impossible without a symlink on a
        // path free of `..`); EAGAIN: a rename raced the lookup.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ELOOP | libc::EXDEV | libc::EAGAIN)
            ) =>
        {
            Err(path_changed())
        }
        Err(e) => Err(e),
    }
}

/// Opens `relative` beneath `dir` one component at a time, never following a symlink, and
/// creates missing directories when `parents` says so.
fn walk(mut dir: Dir, relative: &Path, parents: Parents) -> io::Result<Dir> {
    for component in relative.components() {
        let Component::Normal(name) = component else {
            // A checked path has only names; `..` here would step where no check looked.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path is not normalised",
            ));
        };
        let next = match dir.open_dir(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && parents == Parents::Create => {
                match dir.mkdir(name, 0o777) {
                    // Another writer may have created it in between; it is opened below with
                    // the same care either way.
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                    _ => dir.open_dir(name),
                }
            }
            other => other,
        };
        dir = next.map_err(|e| not_a_directory(&dir, name, e))?;
    }
    Ok(dir)
}

/// Turns the failure to open `name` as a directory into [`PathChanged`] unless `name` is a
/// plain file (openat with O_NOFOLLOW | O_DIRECTORY reports a symlink as ENOTDIR or ELOOP; a
/// directory or nothing there now means it was swapped back or away since).
fn not_a_directory(dir: &Dir, name: &OsStr, err: io::Error) -> io::Error {
    if !matches!(err.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) {
        return err;
    }
    match dir.metadata(name) {
        Ok(meta) if !meta.file_type().is_symlink() && !meta.is_dir() => err,
        _ => path_changed(),
    }
}

/// The names in `dir`, read through `/proc/self/fd` because std lists directories only by
/// path; the names are then used relative to `dir`, so the listing path is never trusted.
fn names(dir: &Dir) -> io::Result<Vec<OsString>> {
    fs::read_dir(dir.proc_path())?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect()
}

/// Copies the entry `from` to the new entry `to`. Whatever this call created is removed again
/// when a later step fails; an entry that already existed at `to` is an error and left alone.
fn copy_tree(from_dir: &Dir, from: &OsStr, to_dir: &Dir, to: &OsStr) -> io::Result<()> {
    let meta = from_dir.metadata(from)?;
    let kind = meta.file_type();
    let mode = platform::mode(&meta);
    if kind.is_symlink() {
        to_dir.symlink(&from_dir.read_link(from)?, to)
    } else if kind.is_dir() {
        // Owner-only until the copy is complete, then the source's bits.
        to_dir.mkdir(to, 0o700)?;
        let filled = (|| {
            let source = from_dir.open_dir(from)?;
            let target = to_dir.open_dir(to)?;
            for name in names(&source)? {
                copy_tree(&source, &name, &target, &name)?;
            }
            platform::set_path_mode(&target.proc_path(), mode)?;
            target.sync()
        })();
        if filled.is_err() {
            let _ = remove_tree(to_dir, to);
        }
        filled
    } else if kind.is_file() {
        let mut input = from_dir.open_file(from, OpenFile::Read)?;
        // Checked on the open file: the entry may have been swapped since `metadata`.
        if !input.metadata()?.is_file() {
            return Err(path_changed());
        }
        let mut output = to_dir.open_file(to, OpenFile::CreateNew { mode })?;
        let filled = (|| {
            io::copy(&mut input, &mut output)?;
            platform::set_mode(&output, mode)?;
            output.sync_all()
        })();
        if filled.is_err() {
            let _ = to_dir.remove(to, Remove::File);
        }
        filled
    } else {
        let what = match platform::special(kind) {
            Some(Special::Fifo) => "a FIFO",
            Some(Special::Socket) => "a socket",
            _ => "a device",
        };
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{} is {what}, which cannot be copied",
                from.to_string_lossy()
            ),
        ))
    }
}

fn remove_tree(dir: &Dir, name: &OsStr) -> io::Result<()> {
    if !dir.metadata(name)?.is_dir() {
        return dir.remove(name, Remove::File);
    }
    let inner = dir.open_dir(name)?;
    for child in names(&inner)? {
        remove_tree(&inner, &child)?;
    }
    dir.remove(name, Remove::EmptyDir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::symlink;
    use std::os::unix::fs::PermissionsExt;

    const WALKERS: [Walker; 2] = [Walker::Openat2, Walker::PerComponent];

    fn is_path_changed(err: &io::Error) -> bool {
        err.get_ref().is_some_and(|inner| inner.is::<PathChanged>())
    }

    #[test]
    fn both_walkers_refuse_a_symlinked_directory_with_path_changed() {
        let s = TempDir::new("symlinked");
        fs::create_dir_all(s.join("real/inner")).unwrap();
        fs::create_dir_all(s.join("outside")).unwrap();
        symlink(s.join("outside"), s.join("link")).unwrap();
        symlink("real", s.join("relative")).unwrap();
        for walker in WALKERS {
            for path in ["link/x", "relative/inner/x", "link/new/x"] {
                for parents in [Parents::Existing, Parents::Create] {
                    let err = Entry::open_with(&s.join(path), parents, walker).unwrap_err();
                    assert!(
                        is_path_changed(&err),
                        "{walker:?} {parents:?} {path}: {err}"
                    );
                }
            }
            assert!(!s.join("outside/new").exists(), "{walker:?}");
        }
    }

    #[test]
    fn both_walkers_open_create_and_report_missing_parents() {
        let s = TempDir::new("create");
        fs::create_dir_all(s.join("a")).unwrap();
        fs::write(s.join("file"), "x").unwrap();
        for walker in WALKERS {
            let name = format!("{walker:?}");
            let missing = s.join(&name).join("deep/x");
            let err = Entry::open_with(&missing, Parents::Existing, walker).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound, "{walker:?}: {err}");
            let entry = Entry::open_with(&missing, Parents::Create, walker).unwrap();
            entry.replace(b"made").unwrap();
            assert_eq!(fs::read_to_string(&missing).unwrap(), "made");
            let err = Entry::open_with(&s.join("file/x"), Parents::Create, walker).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR), "{walker:?}: {err}");
            assert!(!is_path_changed(&err));
        }
    }

    #[test]
    fn replace_keeps_the_mode_refuses_a_final_symlink_and_cuts_hard_links() {
        let s = TempDir::new("replace");
        let script = s.join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
        let entry = Entry::open(&script, Parents::Existing).unwrap();
        entry.replace(b"new").unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        let mode = fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o750);

        fs::hard_link(&script, s.join("twin")).unwrap();
        Entry::open(&s.join("twin"), Parents::Existing)
            .unwrap()
            .replace(b"twin")
            .unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");

        symlink(&script, s.join("alias")).unwrap();
        let alias = Entry::open(&s.join("alias"), Parents::Existing).unwrap();
        assert!(is_path_changed(&alias.replace(b"x").unwrap_err()));
        assert!(is_path_changed(&alias.open_existing().unwrap_err()));
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        let names: Vec<_> = fs::read_dir(s.path()).unwrap().collect();
        assert_eq!(names.len(), 3, "a temp file was left behind: {names:?}");
    }

    #[test]
    fn a_failed_copy_removes_only_what_it_created() {
        let s = TempDir::new("copy");
        fs::create_dir_all(s.join("src/sub")).unwrap();
        fs::write(s.join("src/sub/a"), "a").unwrap();
        fs::create_dir(s.join("taken")).unwrap();
        fs::write(s.join("taken/keep"), "keep").unwrap();
        let source = Entry::open(&s.join("src"), Parents::Existing).unwrap();
        let taken = Entry::open(&s.join("taken"), Parents::Existing).unwrap();
        let err = source.copy_to(&taken).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(fs::read_to_string(s.join("taken/keep")).unwrap(), "keep");
        // A FIFO deep inside cannot be copied: the partial copy goes, the source stays.
        let status = std::process::Command::new("mkfifo")
            .arg(s.join("src/sub/pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let fresh = Entry::open(&s.join("fresh"), Parents::Existing).unwrap();
        let err = source.copy_to(&fresh).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        assert!(!s.join("fresh").exists(), "partial copy left behind");
        assert_eq!(fs::read_to_string(s.join("src/sub/a")).unwrap(), "a");
    }

    /// A missing entry is `None`; any other failure stays an error, never "missing" (a
    /// caller that creates what is missing must not act on a name it could not look up).
    #[test]
    fn missing_is_none_and_other_failures_stay_errors() {
        let s = TempDir::new("missing");
        fs::write(s.join("file"), "x").unwrap();
        let missing = Entry::open(&s.join("absent"), Parents::Existing).unwrap();
        assert!(missing.metadata().unwrap().is_none());
        assert!(missing.open_existing().unwrap().is_none());
        let too_long = Entry::open(&s.join("n".repeat(300)), Parents::Existing).unwrap();
        let err = too_long.metadata().unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let err = too_long.open_existing().unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let present = Entry::open(&s.join("file"), Parents::Existing).unwrap();
        assert!(present.metadata().unwrap().is_some());
        assert!(present.open_existing().unwrap().is_some());
        let text = path_changed().to_string();
        assert!(
            text.starts_with("the path changed while it was being written"),
            "{text}"
        );
        assert!(text.ends_with("retry"), "{text}");
    }

    #[test]
    fn rename_to_never_replaces() {
        let s = TempDir::new("rename");
        fs::write(s.join("a"), "a").unwrap();
        fs::write(s.join("b"), "b").unwrap();
        let a = Entry::open(&s.join("a"), Parents::Existing).unwrap();
        let b = Entry::open(&s.join("b"), Parents::Existing).unwrap();
        let err = a.rename_to(&b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(fs::read_to_string(s.join("b")).unwrap(), "b");
        let c = Entry::open(&s.join("sub/c"), Parents::Create).unwrap();
        a.rename_to(&c).unwrap();
        assert_eq!(fs::read_to_string(s.join("sub/c")).unwrap(), "a");
        assert!(!s.join("a").exists());
    }
}
