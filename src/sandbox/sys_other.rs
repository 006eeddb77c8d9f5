//! `sandbox::sys` where there is no Unix (the `x86_64-pc-windows-gnu` check): the same names
//! as `sys.rs`, so the sandbox compiles unchanged, with every call that needs a Unix kernel
//! failing with "not supported on this platform".
//!
//! What this means at run time: no child process is started at all (`process::GroupChild`
//! refuses before spawning, so a requested jail is never silently skipped), the file tools'
//! descriptor-relative writes (`Dir`) fail, and the seccomp and Landlock pieces are never
//! built. No `unsafe` here.

use std::convert::Infallible;
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Arc;

/// Handles stand in for descriptors: the pipe and file types the sandbox passes around.
pub use std::os::windows::io::{BorrowedHandle as BorrowedFd, OwnedHandle as OwnedFd};

/// `as_fd`, as on Unix, for anything with a handle.
pub trait AsFd {
    fn as_fd(&self) -> BorrowedFd<'_>;
}

impl<T: std::os::windows::io::AsHandle> AsFd for T {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.as_handle()
    }
}

/// The error of a call this platform lacks.
fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "not supported on this platform")
}

/// The signals the process runner sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
}

/// No signals here, so no child ends by one.
pub fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

/// No sessions or process groups here; `process::GroupChild::spawn` refuses to start a child.
pub fn start_new_session(_command: &mut Command) {}

/// The first call of every command run (`process::run`), so it names what is missing.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "running commands is not supported on this platform",
    ))
}

pub fn kill_group(_pgid: u32, _signal: Signal) -> io::Result<()> {
    Err(unsupported())
}

pub fn wait_exit_keep_zombie(_pid: u32) -> io::Result<()> {
    Err(unsupported())
}

pub fn wait_any_exit_keep_zombie() -> io::Result<Option<u32>> {
    Err(unsupported())
}

pub fn reap_if_exited(_pid: u32) -> io::Result<bool> {
    Err(unsupported())
}

/// No child is ever started here, so none can be orphaned.
pub fn adopts_orphans() -> bool {
    false
}

/// Which of the two handles given to [`wait_readable`] needs attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Data,
    Wake,
}

pub fn wait_readable(_data: BorrowedFd<'_>, _wake: BorrowedFd<'_>) -> io::Result<Readiness> {
    Err(unsupported())
}

/// No advisory `flock` here (std's `File::try_lock` is newer than the crate's minimum Rust):
/// the file counts as locked by us, so two processes could append to one session file.
pub fn try_lock_exclusive(_file: &File) -> io::Result<bool> {
    Ok(true)
}

/// No lock was taken (see [`try_lock_exclusive`]).
pub fn unlock(_file: &File) {}

/// No `getrandom(2)` and no `/dev/urandom`: nothing here makes secrets.
pub fn getrandom(_buf: &mut [u8]) -> io::Result<usize> {
    Err(unsupported())
}

pub fn is_root() -> bool {
    false
}

/// No user ids here; nothing owned compares equal to it (see `platform::owner`).
pub fn uid() -> u32 {
    u32::MAX
}

/// No `fstatfs`: the reader falls back to the path, and no Windows path is a Linux
/// pseudo-filesystem.
pub fn filesystem_magic(_fd: BorrowedFd<'_>) -> io::Result<u64> {
    Err(unsupported())
}

/// What a new Landlock ruleset handles (Landlock is Linux-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RulesetSpec {
    pub handled_fs: u64,
    pub handled_net: u64,
    pub scoped: u64,
}

pub fn landlock_abi() -> io::Result<u32> {
    Err(unsupported())
}

pub fn landlock_create_ruleset(_spec: RulesetSpec, _abi: u32) -> io::Result<OwnedFd> {
    Err(unsupported())
}

pub fn landlock_add_path_rule(
    _ruleset: BorrowedFd<'_>,
    _parent: BorrowedFd<'_>,
    _access: u64,
) -> io::Result<()> {
    Err(unsupported())
}

/// The jail hooks do nothing because nothing is spawned here (see the module doc).
pub fn restrict_self_before_exec(_command: &mut Command, _ruleset: Arc<OwnedFd>) {}

pub fn die_with_parent_before_exec(_command: &mut Command) {}

pub fn pass_filter_before_exec(_command: &mut Command, _filter: Arc<Filter>) {}

pub fn lock_down_before_exec(_command: &mut Command, _lockdown: Arc<Lockdown>) {}

pub fn protect_self() -> io::Result<()> {
    Err(unsupported())
}

pub fn last_capability() -> u32 {
    63
}

/// A directory opened for relative calls; none can be opened here, so no value exists.
#[derive(Debug)]
pub struct Dir(Infallible);

/// How [`Dir::open_file`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFile {
    Read,
    CreateNew { mode: u32 },
}

/// What [`Dir::rename`] does when the destination name exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rename {
    Replace,
    NoReplace,
    Exchange,
}

/// What [`Dir::remove`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remove {
    File,
    EmptyDir,
}

impl Dir {
    pub fn open(_path: &Path) -> io::Result<Dir> {
        Err(unsupported())
    }

    pub fn open_dir(&self, _name: &OsStr) -> io::Result<Dir> {
        match self.0 {}
    }

    pub fn open_dir_beneath(&self, _path: &Path) -> io::Result<Dir> {
        match self.0 {}
    }

    pub fn mkdir(&self, _name: &OsStr, _mode: u32) -> io::Result<()> {
        match self.0 {}
    }

    pub fn open_file(&self, _name: &OsStr, _how: OpenFile) -> io::Result<File> {
        match self.0 {}
    }

    pub fn metadata(&self, _name: &OsStr) -> io::Result<Metadata> {
        match self.0 {}
    }

    pub fn rename(
        &self,
        _from: &OsStr,
        _to_dir: &Dir,
        _to: &OsStr,
        _how: Rename,
    ) -> io::Result<()> {
        match self.0 {}
    }

    pub fn remove(&self, _name: &OsStr, _what: Remove) -> io::Result<()> {
        match self.0 {}
    }

    pub fn symlink(&self, _target: &Path, _name: &OsStr) -> io::Result<()> {
        match self.0 {}
    }

    pub fn read_link(&self, _name: &OsStr) -> io::Result<PathBuf> {
        match self.0 {}
    }

    pub fn proc_path(&self) -> PathBuf {
        match self.0 {}
    }

    pub fn sync(&self) -> io::Result<()> {
        match self.0 {}
    }
}

/// A seccomp program (Linux-only); kept so the jail's types exist, never installed.
#[derive(Debug)]
pub struct Filter {
    len: usize,
}

impl Filter {
    pub fn new(program: &[super::seccomp::Insn]) -> Filter {
        Filter { len: program.len() }
    }

    pub fn for_bwrap(_program: &[super::seccomp::Insn]) -> io::Result<Filter> {
        Err(unsupported())
    }

    pub fn descriptor(&self) -> Option<i32> {
        None
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What a Landlock-jailed child would apply to itself.
pub struct Lockdown {
    pub ruleset: Arc<OwnedFd>,
    pub filter: Arc<Filter>,
    pub last_cap: u32,
}
