//! The libc calls the sandbox needs that std does not offer: starting a child in its own
//! session, signalling a whole process group, waiting for an exit without reaping it (one
//! child's or any child's), reaping an orphan, whether orphans land on us at all, waiting
//! for either of two pipes to become readable, the three Landlock system calls (with
//! `PR_SET_NO_NEW_PRIVS`, which Landlock requires of an unprivileged caller), the
//! directory-relative calls (`openat`, `openat2`, `mkdirat`, `renameat2`, `unlinkat`,
//! `symlinkat`, `readlinkat`) behind [`Dir`], with which `sandbox::beneath` writes files
//! without following symlinks, the non-blocking `flock` that keeps two processes off one
//! session file, `getrandom` for the server's tokens (std's `File::try_lock` is newer than the crate's minimum Rust version), and
//! `fstatfs` so the file tools can refuse kernel pseudo-files.
//!
//! This is one of the two places in the crate allowed to use `unsafe` (the other is
//! `term::sys`); everything here is a thin, documented wrapper, and policy (which signal, how
//! long to wait) lives in `sandbox::process`.
//!
//! The jail (Landlock, seccomp, capabilities, the supervisor) and `openat2`/`renameat2` are
//! Linux-only: on other Unix systems (the `x86_64-apple-darwin` check) those calls fail with
//! "not supported on this platform", so the crate compiles there and says what it cannot do.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The descriptor types the sandbox passes around; `sys_other` has stand-ins of the same names.
pub use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

/// The error of a call this platform lacks.
#[cfg(not(target_os = "linux"))]
fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "not supported on this platform")
}

/// Installs a pre-exec step that fails the spawn: the jail this command asked for does not
/// exist on this platform, and running the command unjailed would widen what the user allowed.
#[cfg(not(target_os = "linux"))]
fn refuse_before_exec(command: &mut Command) {
    // SAFETY: the closure runs between fork and exec and only builds an error from a kind,
    // which neither allocates nor takes a lock.
    unsafe {
        command.pre_exec(|| Err(io::ErrorKind::Unsupported.into()));
    }
}

/// The signals the process runner sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Asks politely, so tools like git and cargo can remove lock files and temp dirs.
    Term,
    /// Cannot be caught or ignored.
    Kill,
}

impl Signal {
    fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// Makes the child call `setsid()` before exec: it leads a new session and a new process group
/// whose id is its pid, and it has no controlling terminal.
///
/// The new group lets us kill every descendant at once. Dropping the controlling terminal means
/// a command that opens `/dev/tty` (an ssh or sudo password prompt, git asking for credentials)
/// fails at once instead of being stopped by SIGTTIN and hanging until the deadline, and the
/// terminal's Ctrl-C reaches only reasonix, which then decides what to kill.
pub fn start_new_session(command: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // functions may be called; setsid(2) is one, and the closure touches no shared state and
    // does not allocate. It cannot fail with EPERM because a freshly forked child is never a
    // process group leader.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The signal that ended a child, if one did.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// A pipe as (read end, write end), both close-on-exec so no other child inherits them.
/// (`std::io::pipe` does the same but needs a newer Rust than the crate's minimum.)
#[cfg(target_os = "linux")]
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    // SAFETY: pipe2(2) writes two descriptors into the two-element array we own; on success
    // they are fresh, open and owned by nobody else, so wrapping each in an OwnedFd once is
    // sound.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Other Unix systems lack pipe2: the pipe is made first and marked close-on-exec after, so a
/// child another thread spawns in between could inherit it (Linux is the supported platform).
#[cfg(not(target_os = "linux"))]
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    // SAFETY: pipe(2) writes two descriptors into the two-element array we own; on success
    // they are fresh and owned by nobody else, so wrapping each in an OwnedFd once is sound,
    // and fcntl(2) on them takes integers only.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) == -1 {
            return Err(io::Error::last_os_error());
        }
        let pair = (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]));
        for fd in fds {
            if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == -1 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(pair)
    }
}

/// Sends `signal` to every process in the group `pgid`. A group that no longer exists is not
/// an error: the goal (nothing left running) already holds.
///
/// Callers must only pass the pgid of a child they have not reaped yet: while the group leader
/// is at least a zombie, its pid (and so the group id) cannot be reused by an unrelated process.
pub fn kill_group(pgid: u32, signal: Signal) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "process id out of range"))?;
    if pgid <= 1 {
        // kill(0) or kill(-1) would signal our own group or every process we may signal.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to signal process group 0 or 1",
        ));
    }
    // SAFETY: kill(2) takes plain integers and has no memory-safety preconditions; a negative
    // pid addresses the process group, and the guard above rules out the special values.
    let rc = unsafe { libc::kill(-pgid, signal.raw()) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            return Ok(());
        }
        return Err(err);
    }
    Ok(())
}

/// Blocks until the child `pid` has exited, leaving it a zombie so that its pid and process
/// group id stay reserved until the owner reaps it with `Child::wait`.
pub fn wait_exit_keep_zombie(pid: u32) -> io::Result<()> {
    let id = libc::id_t::from(pid);
    loop {
        // SAFETY: siginfo_t is plain data for which all-zero bytes are a valid value, and
        // waitid(2) only writes into the struct we pass by a pointer valid for the call.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Blocks until some child of this process (forked by any of its threads, or an orphan
/// reparented to it) has exited, and returns its pid, leaving it a zombie: the orphan reaper
/// looks first and reaps only what no owner waits for. `None` when there is no child at all.
pub fn wait_any_exit_keep_zombie() -> io::Result<Option<u32>> {
    loop {
        // SAFETY: siginfo_t is plain data for which all-zero bytes are a valid value, and
        // waitid(2) only writes into the struct we pass by a pointer valid for the call.
        let (rc, pid) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | ALL_CHILDREN,
            );
            (rc, info.si_pid())
        };
        if rc == 0 {
            return u32::try_from(pid)
                .map(Some)
                .map_err(|_| io::Error::other("waitid: no child pid"));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::ECHILD) => return Ok(None),
            Some(libc::EINTR) => {}
            _ => return Err(err),
        }
    }
}

/// Reaps the child `pid` if it has exited (`Ok(true)`) without blocking; `Ok(false)` while it
/// still runs. Only for children no other thread waits for.
pub fn reap_if_exited(pid: u32) -> io::Result<bool> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "process id out of range"))?;
    if pid <= 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to wait for process 0 or a group",
        ));
    }
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid(2) with a positive pid only writes the status into the integer we
        // pass by a pointer valid for the call.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG | ALL_CHILDREN) };
        match rc {
            0 => return Ok(false),
            -1 => {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
            _ => return Ok(true),
        }
    }
}

/// Children whatever signal they report their exit with (a `clone` child may use none): the
/// orphans that land on PID 1 are not all plain forks.
#[cfg(target_os = "linux")]
const ALL_CHILDREN: libc::c_int = libc::__WALL;
#[cfg(not(target_os = "linux"))]
const ALL_CHILDREN: libc::c_int = 0;

/// Whether orphaned descendants are reparented to this process: it is PID 1 of its PID
/// namespace (the first process of a container) or a child subreaper.
#[cfg(target_os = "linux")]
pub fn adopts_orphans() -> bool {
    let mut subreaper: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer we pass, which is
    // valid for the call.
    let rc = unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut subreaper as *mut libc::c_int,
        )
    };
    std::process::id() == 1 || (rc == 0 && subreaper != 0)
}

#[cfg(not(target_os = "linux"))]
pub fn adopts_orphans() -> bool {
    std::process::id() == 1
}

/// Which of the two descriptors given to [`wait_readable`] needs attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The data descriptor has bytes, end of file or an error: a `read` will not block.
    Data,
    /// The wake descriptor fired (its writer wrote or closed): stop reading.
    Wake,
}

/// Blocks until `data` or `wake` is readable or hung up. The wake side wins a tie so a reader
/// fed by a never-ending writer still notices when it is told to stop.
pub fn wait_readable(data: BorrowedFd<'_>, wake: BorrowedFd<'_>) -> io::Result<Readiness> {
    let mut fds = [
        libc::pollfd {
            fd: data.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a live array of two initialised pollfd structs, the length passed
        // matches it, and both descriptors are borrowed for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc >= 0 {
            if fds[1].revents != 0 {
                return Ok(Readiness::Wake);
            }
            if fds[0].revents != 0 {
                return Ok(Readiness::Data);
            }
            continue;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(false)` when another open file
/// description holds it. The kernel releases it when the last descriptor of this one closes,
/// which includes the process dying by any signal.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    loop {
        // SAFETY: flock(2) on a descriptor `file` owns and keeps open for the whole call;
        // it reads and writes no memory of ours.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(err),
        }
    }
}

/// Releases a lock [`try_lock_exclusive`] took, for every descriptor of the open file
/// description (a forked child's copy included). Nothing to report: the kernel frees it at
/// the last close in any case.
pub fn unlock(file: &std::fs::File) {
    // SAFETY: flock(2) on a descriptor `file` owns and keeps open for the whole call; it
    // reads and writes no memory of ours.
    let _ = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// `getrandom(2)` with no flags: random bytes from the kernel's generator, waiting only until
/// it is first seeded at boot. How many bytes it wrote (possibly fewer than asked for); fails
/// with `ENOSYS` on kernels before 3.17, and on the other Unix systems of the platform check,
/// so the caller falls back to `/dev/urandom`.
#[cfg(target_os = "linux")]
pub fn getrandom(buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, a live and writable slice; the kernel
    // writes at most `buf.len()` bytes into it and keeps no reference after the call.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

#[cfg(not(target_os = "linux"))]
pub fn getrandom(_buf: &mut [u8]) -> io::Result<usize> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Whether this process runs with effective user id 0 (root keeps capabilities inside a
/// bubblewrap sandbox unless they are dropped explicitly).
pub fn is_root() -> bool {
    uid() == 0
}

/// The effective user id.
pub fn uid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// The filesystem type (`f_type`, the superblock magic number) of the file open at `fd`, so a
/// reader can tell kernel pseudo-files (/proc, /sys) from regular files on disk.
pub fn filesystem_magic(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: an all-zero statfs is a valid value of this plain C struct.
    let mut info: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs(2) writes one statfs into the struct we own; the descriptor is borrowed
    // for the duration of the call, so it stays open.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut info) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // f_type is a signed word on some targets; magic numbers are compared as unsigned 32-bit
    // values by the kernel's own headers.
    Ok(info.f_type as u64 & 0xffff_ffff)
}

#[cfg(target_os = "linux")]
/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1 << 0;
#[cfg(target_os = "linux")]
/// `LANDLOCK_RULE_PATH_BENEATH`: a rule granting access beneath a file or directory.
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

#[cfg(target_os = "linux")]
/// `struct landlock_ruleset_attr` as of ABI 6; older kernels are handed a prefix of it.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[cfg(target_os = "linux")]
/// `struct landlock_path_beneath_attr`, which the kernel declares packed.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// What a new Landlock ruleset handles (denies unless a rule grants it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RulesetSpec {
    pub handled_fs: u64,
    /// Only honoured by ABI 4 and later.
    pub handled_net: u64,
    /// Only honoured by ABI 6 and later.
    pub scoped: u64,
}

#[cfg(target_os = "linux")]
/// The Landlock ABI version the running kernel supports. `ENOSYS` means the kernel was built
/// without Landlock, `EOPNOTSUPP` that it was not enabled at boot.
pub fn landlock_abi() -> io::Result<u32> {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the call reads no
    // memory and only returns a number (or -1 with errno).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(rc).map_err(|_| io::Error::other("landlock ABI version out of range"))
}

#[cfg(target_os = "linux")]
/// Creates a ruleset for a kernel with the given ABI, passing only as much of the attribute
/// struct as that ABI knows (the kernel rejects unknown trailing fields it cannot ignore).
pub fn landlock_create_ruleset(spec: RulesetSpec, abi: u32) -> io::Result<OwnedFd> {
    let attr = RulesetAttr {
        handled_access_fs: spec.handled_fs,
        handled_access_net: if abi >= 4 { spec.handled_net } else { 0 },
        scoped: if abi >= 6 { spec.scoped } else { 0 },
    };
    let size = match abi {
        0..=3 => 8usize,
        4 | 5 => 16,
        _ => std::mem::size_of::<RulesetAttr>(),
    };
    // SAFETY: `attr` is a live, initialised repr(C) struct at least `size` bytes long, which
    // the kernel only reads during the call. On success the result is a new descriptor that
    // nobody else owns, so wrapping it in an OwnedFd once is sound.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size,
            0u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(rc)
        .map_err(|_| io::Error::other("landlock ruleset descriptor out of range"))?;
    // SAFETY: see above; `fd` is fresh and owned by us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(target_os = "linux")]
/// Grants `access` beneath the file or directory `parent` (opened with `O_PATH`).
pub fn landlock_add_path_rule(
    ruleset: BorrowedFd<'_>,
    parent: BorrowedFd<'_>,
    access: u64,
) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: both descriptors are borrowed open fds for the duration of the call, and `attr`
    // is a live packed struct with the layout the kernel expects, read only during the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
/// Makes the child enforce `ruleset` on itself just before exec: it sets no_new_privs (so a
/// setuid binary cannot shed the restriction) and calls `landlock_restrict_self`. The ruleset
/// is built in the parent; only these two system calls run between fork and exec. The `Arc`
/// keeps the descriptor open for as long as the command may still be spawned.
pub fn restrict_self_before_exec(command: &mut Command, ruleset: Arc<OwnedFd>) {
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // functions may be called. prctl(2) and syscall(2) are plain system calls that neither
    // allocate nor take locks, the descriptor stays open because the closure owns an Arc to
    // it, and `last_os_error` only reads errno.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Landlock is Linux-only.
#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> io::Result<u32> {
    Err(unsupported())
}

#[cfg(not(target_os = "linux"))]
pub fn landlock_create_ruleset(_spec: RulesetSpec, _abi: u32) -> io::Result<OwnedFd> {
    Err(unsupported())
}

#[cfg(not(target_os = "linux"))]
pub fn landlock_add_path_rule(
    _ruleset: BorrowedFd<'_>,
    _parent: BorrowedFd<'_>,
    _access: u64,
) -> io::Result<()> {
    Err(unsupported())
}

#[cfg(not(target_os = "linux"))]
pub fn restrict_self_before_exec(command: &mut Command, _ruleset: Arc<OwnedFd>) {
    refuse_before_exec(command);
}

/// `O_PATH` (open the entry without reading it) is Linux-only; elsewhere a non-blocking
/// read-only open stands in, so a FIFO cannot stall it.
#[cfg(target_os = "linux")]
pub const O_PATH: libc::c_int = libc::O_PATH;
#[cfg(not(target_os = "linux"))]
pub const O_PATH: libc::c_int = libc::O_NONBLOCK;

/// An open directory (`O_PATH`): the base of the `*at` calls below, never read from. Every
/// name given to its methods must be a single path component (no `/`, not `.` or `..`); the
/// kernel then looks it up in this very directory, whatever it is called by now.
#[derive(Debug)]
pub struct Dir(OwnedFd);

/// How [`Dir::open_file`] opens a file. Both forms refuse a symlink in the last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFile {
    /// Read-only, non-blocking (so a FIFO cannot stall the open) and never as a controlling
    /// terminal; the caller checks the type with `File::metadata`.
    Read,
    /// Write-only, created here and now (`O_EXCL`) with these permission bits (before umask).
    CreateNew { mode: u32 },
}

/// What [`Dir::rename`] does when the destination name exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rename {
    /// Replace it, as rename(2) does.
    Replace,
    /// Fail with `EEXIST` (`RENAME_NOREPLACE`); the check and the rename are one step.
    NoReplace,
    /// Swap the two entries atomically (`RENAME_EXCHANGE`); both must exist.
    Exchange,
}

/// What [`Dir::remove`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remove {
    File,
    EmptyDir,
}

#[cfg(target_os = "linux")]
/// `struct open_how` of openat2(2); libc's is `non_exhaustive`, so it cannot be built.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// A path or name as the NUL-terminated string the kernel wants; an interior NUL cannot name
/// anything, so it is an invalid-input error rather than a truncated name.
fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// Wraps the result of a call that returns a new descriptor.
fn owned_fd(rc: libc::c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(rc).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: the call succeeded, so `fd` is a fresh descriptor that nobody else owns, and it
    // is wrapped exactly once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Dir {
    /// Opens the directory at `path`, following symlinks; for a starting point such as `/`.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = c_string(path.as_os_str().as_bytes())?;
        // SAFETY: `path` is a live NUL-terminated string that open(2) only reads.
        let rc = unsafe { libc::open(path.as_ptr(), O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        owned_fd(rc.into()).map(Dir)
    }

    /// Opens the subdirectory `name` without following a symlink: a symlink fails with
    /// `ENOTDIR` (or `ELOOP`), exactly like a file.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let name = c_string(name.as_bytes())?;
        // SAFETY: the descriptor is open for the duration of the call and `name` is a live
        // NUL-terminated string that openat(2) only reads.
        let rc = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        owned_fd(rc.into()).map(Dir)
    }

    /// Opens the directory at the relative `path` with openat2(2), refusing any symlink on the
    /// way (`ELOOP`), any step out of this directory (`EXDEV`) and magic links. `ENOSYS` means
    /// the kernel (before 5.6) or a seccomp filter lacks openat2.
    #[cfg(target_os = "linux")]
    pub fn open_dir_beneath(&self, path: &Path) -> io::Result<Dir> {
        let path = c_string(path.as_os_str().as_bytes())?;
        let how = OpenHow {
            flags: (O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64,
            mode: 0,
            resolve: libc::RESOLVE_BENEATH
                | libc::RESOLVE_NO_SYMLINKS
                | libc::RESOLVE_NO_MAGICLINKS,
        };
        // SAFETY: the descriptor is open for the duration of the call, `path` is a live
        // NUL-terminated string and `how` a live repr(C) struct of the size passed, both only
        // read by the kernel during the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.0.as_raw_fd(),
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        owned_fd(rc).map(Dir)
    }

    /// Other systems have no openat2: `ENOSYS` sends the caller to its walk, one
    /// [`Dir::open_dir`] per component.
    #[cfg(not(target_os = "linux"))]
    pub fn open_dir_beneath(&self, _path: &Path) -> io::Result<Dir> {
        Err(io::Error::from_raw_os_error(libc::ENOSYS))
    }

    /// Creates the subdirectory `name` with `mode` (before umask).
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        let name = c_string(name.as_bytes())?;
        // SAFETY: the descriptor is open for the duration of the call and `name` is a live
        // NUL-terminated string that mkdirat(2) only reads.
        check(unsafe { libc::mkdirat(self.0.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) })
    }

    /// Opens the file `name` as `how` says, never through a symlink (`ELOOP`).
    pub fn open_file(&self, name: &OsStr, how: OpenFile) -> io::Result<File> {
        let name = c_string(name.as_bytes())?;
        let (flags, mode) = match how {
            OpenFile::Read => (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY, 0),
            OpenFile::CreateNew { mode } => (libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, mode),
        };
        // SAFETY: the descriptor is open for the duration of the call and `name` is a live
        // NUL-terminated string that openat(2) only reads; the mode is passed as the variadic
        // argument O_CREAT expects.
        let rc = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        owned_fd(rc.into()).map(File::from)
    }

    /// The metadata of the entry `name` itself (a symlink is described, not followed).
    pub fn metadata(&self, name: &OsStr) -> io::Result<Metadata> {
        let name = c_string(name.as_bytes())?;
        // SAFETY: as in `open_dir`. O_PATH with O_NOFOLLOW opens the entry itself whatever its
        // type, without reading it or needing permission to.
        let rc = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        File::from(owned_fd(rc.into())?).metadata()
    }

    /// Renames the entry `from` here to `to` in `to_dir`; neither name is followed if it is a
    /// symlink.
    #[cfg(target_os = "linux")]
    pub fn rename(&self, from: &OsStr, to_dir: &Dir, to: &OsStr, how: Rename) -> io::Result<()> {
        let from = c_string(from.as_bytes())?;
        let to = c_string(to.as_bytes())?;
        let flags = match how {
            Rename::Replace => 0,
            Rename::NoReplace => libc::RENAME_NOREPLACE,
            Rename::Exchange => libc::RENAME_EXCHANGE,
        };
        // SAFETY: both descriptors are open for the duration of the call and both names are
        // live NUL-terminated strings that renameat2(2) only reads.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                self.0.as_raw_fd(),
                from.as_ptr(),
                to_dir.0.as_raw_fd(),
                to.as_ptr(),
                flags,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Other systems have plain renameat only: replacing works, the atomic no-replace and
    /// exchange forms are not supported.
    #[cfg(not(target_os = "linux"))]
    pub fn rename(&self, from: &OsStr, to_dir: &Dir, to: &OsStr, how: Rename) -> io::Result<()> {
        if how != Rename::Replace {
            return Err(unsupported());
        }
        let from = c_string(from.as_bytes())?;
        let to = c_string(to.as_bytes())?;
        // SAFETY: both descriptors are open for the duration of the call and both names are
        // live NUL-terminated strings that renameat(2) only reads.
        check(unsafe {
            libc::renameat(
                self.0.as_raw_fd(),
                from.as_ptr(),
                to_dir.0.as_raw_fd(),
                to.as_ptr(),
            )
        })
    }

    /// Removes the entry `name` (a symlink is removed, not followed).
    pub fn remove(&self, name: &OsStr, what: Remove) -> io::Result<()> {
        let name = c_string(name.as_bytes())?;
        let flags = match what {
            Remove::File => 0,
            Remove::EmptyDir => libc::AT_REMOVEDIR,
        };
        // SAFETY: the descriptor is open for the duration of the call and `name` is a live
        // NUL-terminated string that unlinkat(2) only reads.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), name.as_ptr(), flags) })
    }

    /// Creates the symlink `name` pointing at `target` (which is stored, not resolved).
    pub fn symlink(&self, target: &Path, name: &OsStr) -> io::Result<()> {
        let target = c_string(target.as_os_str().as_bytes())?;
        let name = c_string(name.as_bytes())?;
        // SAFETY: the descriptor is open for the duration of the call and both strings are
        // live and NUL-terminated; symlinkat(2) only reads them.
        check(unsafe { libc::symlinkat(target.as_ptr(), self.0.as_raw_fd(), name.as_ptr()) })
    }

    /// The target of the symlink `name`.
    pub fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        let name = c_string(name.as_bytes())?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: the descriptor is open for the duration of the call, `name` is a live
        // NUL-terminated string, and readlinkat(2) writes at most `buf.len()` bytes into the
        // buffer we own.
        let n = unsafe {
            libc::readlinkat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        if n == buf.len() {
            // readlinkat truncates silently; a target this long would be copied wrong.
            return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        buf.truncate(n);
        Ok(PathBuf::from(OsString::from_vec(buf)))
    }

    /// A path naming this directory through `/proc/self/fd` for APIs that take only paths
    /// (listing it with `std::fs::read_dir`); valid while `self` is open.
    pub fn proc_path(&self) -> PathBuf {
        #[cfg(target_os = "linux")]
        let dir = "/proc/self/fd";
        #[cfg(not(target_os = "linux"))]
        let dir = "/dev/fd";
        PathBuf::from(format!("{dir}/{}", self.0.as_raw_fd()))
    }

    /// Makes new, renamed and removed entries here durable (fsync needs a readable descriptor,
    /// so the directory is opened once more, through its own `.`).
    pub fn sync(&self) -> io::Result<()> {
        // SAFETY: the descriptor is open for the duration of the call and the literal is a
        // NUL-terminated string.
        let rc = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c".".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        File::from(owned_fd(rc.into())?).sync_all()
    }
}

// ---------------------------------------------------------------------------------------------
// Jail hardening: what reasonix does to itself at start-up, and what a child does to itself
// between fork and exec (privileges, descriptors, lifetime, the seccomp filter). Everything a
// child needs is built in the parent; the closures below only make system calls.

#[cfg(target_os = "linux")]
/// Makes this process non-dumpable: other processes of the same user (a jailed command among
/// them) can no longer read its `/proc/<pid>/environ`, `mem` or `fd`, and it leaves no core
/// file with the provider key in it. Forks inherit the flag until they exec.
pub fn protect_self() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes integers only and touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The highest capability number this kernel knows (`/proc/sys/kernel/cap_last_cap`), read in
/// the parent so the child can drop the bounding set without touching the filesystem; 63 (the
/// largest the format allows) when the file cannot be read, since dropping an unknown
/// capability only fails with `EINVAL`, which is ignored.
pub fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63)
}

/// One classic BPF instruction, as the kernel reads it (`struct sock_filter`).
#[cfg(target_os = "linux")]
use libc::sock_filter as SockFilter;
/// The same layout where libc does not declare it: seccomp is Linux-only, but the program is
/// still built (and tested) from the same table everywhere.
#[cfg(not(target_os = "linux"))]
#[repr(C)]
#[derive(Clone, Copy)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// A seccomp program ready for the kernel, and for bubblewrap a sealed memory file holding its
/// bytes (`--seccomp FD`).
pub struct Filter {
    program: Vec<SockFilter>,
    file: Option<FilterFile>,
}

/// The memory file and the `/proc/self/fd/N` path (NUL-terminated) a child reopens it by.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct FilterFile {
    fd: OwnedFd,
    reopen: Vec<u8>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field("instructions", &self.program.len())
            .field("descriptor", &self.descriptor())
            .finish()
    }
}

impl Filter {
    /// A filter the child installs itself (the Landlock jail).
    pub fn new(program: &[super::seccomp::Insn]) -> Filter {
        Filter {
            program: program
                .iter()
                .map(|i| SockFilter {
                    code: i.code,
                    jt: i.jt,
                    jf: i.jf,
                    k: i.k,
                })
                .collect(),
            file: None,
        }
    }

    /// A filter bubblewrap installs inside its sandbox, read from a sealed memory file whose
    /// descriptor number [`Filter::descriptor`] gives for `--seccomp`.
    #[cfg(not(target_os = "linux"))]
    pub fn for_bwrap(_program: &[super::seccomp::Insn]) -> io::Result<Filter> {
        Err(unsupported())
    }

    #[cfg(target_os = "linux")]
    pub fn for_bwrap(program: &[super::seccomp::Insn]) -> io::Result<Filter> {
        let bytes = super::seccomp::to_bytes(program);
        // SAFETY: the name is a NUL-terminated literal; on success the result is a fresh
        // descriptor nobody else owns.
        let fd = unsafe {
            libc::memfd_create(
                c"reasonix-seccomp".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: see above.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(fd);
        std::io::Write::write_all(&mut file, &bytes)?;
        let seals =
            libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
        // SAFETY: fcntl(F_ADD_SEALS) on a descriptor we own; integers only.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } == -1 {
            return Err(io::Error::last_os_error());
        }
        let fd = OwnedFd::from(file);
        let mut reopen = format!("/proc/self/fd/{}", fd.as_raw_fd()).into_bytes();
        reopen.push(0);
        let mut filter = Filter::new(program);
        filter.file = Some(FilterFile { fd, reopen });
        Ok(filter)
    }

    /// The descriptor number bubblewrap reads the program from, for `--seccomp`.
    pub fn descriptor(&self) -> Option<i32> {
        self.file.as_ref().map(|f| f.fd.as_raw_fd())
    }

    pub fn len(&self) -> usize {
        self.program.len()
    }

    pub fn is_empty(&self) -> bool {
        self.program.is_empty()
    }
}

/// What a Landlock-jailed child applies to itself, prepared in the parent.
pub struct Lockdown {
    pub ruleset: Arc<OwnedFd>,
    pub filter: Arc<Filter>,
    /// From [`last_capability`].
    pub last_cap: u32,
}

#[cfg(target_os = "linux")]
/// Marks every descriptor above 2 close-on-exec. Closing them here would also close the pipe
/// std uses to report a failed exec (it is close-on-exec already), after which a failed exec
/// would look like a successful spawn; marking them keeps that pipe working and still leaves
/// the new program nothing but stdin, stdout and stderr. Falls back to a bounded loop on
/// kernels older than 5.11.
fn close_on_exec_above_stderr() {
    // SAFETY (called between fork and exec): plain system calls on integers.
    unsafe {
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) == 0
        {
            return;
        }
        for fd in 3..4096 {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

#[cfg(target_os = "linux")]
/// Kills the child with SIGKILL when the thread that spawned it dies, and exits at once if the
/// parent is already gone. The kernel ties this to the spawning *thread*, so callers spawn
/// from a thread that lives as long as the process (`process::GroupChild::spawn` does).
pub fn die_with_parent_before_exec(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe system
    // calls (prctl, getppid, _exit) on integers captured by value.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(127);
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
/// Passes `filter`'s program to bubblewrap: every other descriptor above 2 is marked
/// close-on-exec, and the filter's descriptor number is given a private, non-inherited-offset
/// copy (reopened through `/proc/self/fd`) that bubblewrap inherits, so any number of
/// commands can be spawned from one filter, even at once.
pub fn pass_filter_before_exec(command: &mut Command, filter: Arc<Filter>) {
    // SAFETY: the closure runs between fork and exec. It calls only async-signal-safe system
    // calls (close_range/fcntl, open, dup2, close) on a NUL-terminated path and descriptor
    // numbers built in the parent and kept alive by the Arc.
    unsafe {
        command.pre_exec(move || {
            close_on_exec_above_stderr();
            let Some(file) = &filter.file else {
                return Ok(());
            };
            let fresh = libc::open(
                file.reopen.as_ptr().cast(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fresh == -1 {
                return Err(io::Error::last_os_error());
            }
            // dup2 onto the number named in the arguments; the copy is not close-on-exec.
            let rc = libc::dup2(fresh, file.fd.as_raw_fd());
            libc::close(fresh);
            if rc == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
/// `struct __user_cap_header_struct` and `struct __user_cap_data_struct` (version 3).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
#[cfg(target_os = "linux")]
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[cfg(target_os = "linux")]
/// The Landlock jail's child: marks descriptors above 2 close-on-exec, then forks a supervisor
/// (see [`supervise`]) that stays behind as the direct child, and in the command's process
/// sets no_new_privs, enforces the Landlock ruleset, drops every capability (bounding,
/// ambient, effective, permitted, inheritable) and installs the seccomp filter, last so that
/// nothing before it is filtered. Must run after `setsid` (the supervisor leads the group).
pub fn lock_down_before_exec(command: &mut Command, lockdown: Arc<Lockdown>) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec. It allocates nothing and takes no lock:
    // every buffer (the filter, the ruleset descriptor, the signal set) was built in the
    // parent and is kept alive by the Arc; the fork is the raw clone system call, so no atfork
    // handler runs; the supervisor never returns from it and leaves with _exit or a signal.
    unsafe {
        command.pre_exec(move || {
            close_on_exec_above_stderr();
            let mut watched: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut watched);
            for signal in SUPERVISOR_SIGNALS {
                libc::sigaddset(&mut watched, signal);
            }
            let mut previous: libc::sigset_t = std::mem::zeroed();
            if libc::sigprocmask(libc::SIG_BLOCK, &watched, &mut previous) == -1 {
                return Err(io::Error::last_os_error());
            }
            let supervisor = libc::getpid();
            let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0);
            if pid == -1 {
                return Err(io::Error::last_os_error());
            }
            if pid > 0 {
                supervise(pid as libc::pid_t, parent, &watched);
            }
            // The command's process from here on.
            if libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut()) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != supervisor {
                libc::_exit(127);
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                lockdown.ruleset.as_raw_fd(),
                0u32,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            drop_capabilities(lockdown.last_cap)?;
            let program = libc::sock_fprog {
                len: lockdown.filter.program.len() as libc::c_ushort,
                filter: lockdown.filter.program.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
                0,
                0,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
/// Drops every capability from all five sets. Bounding-set drops that fail with `EINVAL` (a
/// number this kernel lacks) or `EPERM` (no CAP_SETPCAP, so nothing could be regained from
/// it under no_new_privs anyway) are skipped; clearing the others cannot fail for lack of
/// privilege.
///
/// # Safety
/// Only async-signal-safe system calls; callable between fork and exec.
unsafe fn drop_capabilities(last_cap: u32) -> io::Result<()> {
    for cap in 0..=last_cap.min(63) {
        libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
    }
    if libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    ) == -1
        && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
    {
        return Err(io::Error::last_os_error());
    }
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
/// The signals the supervisor reads from a signalfd: its child's exits, a stop request from the
/// runner (which signals the whole group), and SIGUSR1, its parent-death signal.
const SUPERVISOR_SIGNALS: [libc::c_int; 5] = [
    libc::SIGCHLD,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGUSR1,
];

#[cfg(target_os = "linux")]
/// The supervisor of one Landlock-jailed command: the direct child of reasonix, leader of the
/// command's session and process group, outside the Landlock domain (so on ABI 6+ the command
/// cannot signal it) and a child subreaper, so every descendant that is orphaned (a double
/// fork, a `setsid` daemon) is reparented to it rather than to init. It waits for the command
/// to exit, for a stop signal from the runner, or for reasonix to die (SIGUSR1 as parent-death
/// signal: a SIGKILL of reasonix included), then kills every remaining descendant and exits
/// the way the command did. This gives the Landlock jail bubblewrap's guarantee: nothing a
/// command started outlives it, its timeout, or reasonix.
///
/// # Safety
/// Runs in the forked child: only async-signal-safe system calls, no allocation; never
/// returns.
unsafe fn supervise(command: libc::pid_t, parent: libc::pid_t, watched: &libc::sigset_t) -> ! {
    // Nothing inherited is needed; holding the output pipe or std's exec-error pipe would keep
    // the runner (or spawn) waiting for us.
    if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == -1 {
        for fd in 0..4096 {
            libc::close(fd);
        }
    }
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    let mut orphaned = libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1, 0, 0, 0) == -1
        || libc::getppid() != parent;
    let signals = libc::signalfd(-1, watched, libc::SFD_CLOEXEC);
    let mut status: Option<libc::c_int> = None;
    let mut stopped_by = 0;
    while !orphaned && signals >= 0 && status.is_none() && stopped_by == 0 {
        let mut info: libc::signalfd_siginfo = std::mem::zeroed();
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        let n = libc::read(
            signals,
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            size,
        );
        if n != size as isize {
            if n == -1 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break;
        }
        match info.ssi_signo as libc::c_int {
            libc::SIGCHLD => status = reap_all(command),
            libc::SIGUSR1 => orphaned = true,
            signal => stopped_by = signal,
        }
    }
    kill_descendants(command, &mut status);
    if stopped_by != 0 {
        exit_by_signal(stopped_by);
    }
    match status {
        Some(s) if libc::WIFEXITED(s) => libc::_exit(libc::WEXITSTATUS(s)),
        Some(s) if libc::WIFSIGNALED(s) => exit_by_signal(libc::WTERMSIG(s)),
        _ => libc::_exit(125),
    }
}

#[cfg(target_os = "linux")]
/// Reaps every child that has exited; returns the command's wait status once it is among them.
unsafe fn reap_all(command: libc::pid_t) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut s = 0;
        let pid = libc::waitpid(-1, &mut s, libc::WNOHANG);
        if pid <= 0 {
            return found;
        }
        if pid == command {
            found = Some(s);
        }
    }
}

#[cfg(target_os = "linux")]
/// SIGKILLs every child (the command and everything reparented to us) and reaps it, round
/// after round, until none is left: each death reparents that child's own children to us. The
/// list comes from `/proc/thread-self/children`; a number cut off at the end of the buffer is
/// left for the next round, so a partial number never names a process. Bounded rounds.
unsafe fn kill_descendants(command: libc::pid_t, status: &mut Option<libc::c_int>) {
    let path = c"/proc/thread-self/children";
    let mut buf = [0u8; 4096];
    for _ in 0..10_000 {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd == -1 {
            // No way to list children here: at least the command itself goes.
            if status.is_none() {
                libc::kill(command, libc::SIGKILL);
            }
            break;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        if n <= 0 {
            break;
        }
        let mut any = false;
        let mut pid: libc::pid_t = 0;
        for &byte in &buf[..n as usize] {
            match byte {
                b'0'..=b'9' => {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(byte - b'0'))
                }
                _ => {
                    if pid > 0 {
                        libc::kill(pid, libc::SIGKILL);
                        any = true;
                    }
                    pid = 0;
                }
            }
        }
        if !any {
            break;
        }
        loop {
            let mut s = 0;
            let reaped = libc::waitpid(-1, &mut s, libc::__WALL);
            if reaped == command {
                status.get_or_insert(s);
            }
            if reaped == -1 && *libc::__errno_location() != libc::EINTR {
                break;
            }
            if reaped > 0 {
                // Reap what is already dead without waiting for the rest; the next round
                // kills whatever was reparented meanwhile.
                let more = reap_all(command);
                if more.is_some() {
                    *status = more;
                }
                break;
            }
        }
    }
}

#[cfg(target_os = "linux")]
/// Ends the supervisor the way the command ended: by the same signal, so the runner reports it.
unsafe fn exit_by_signal(signal: libc::c_int) -> ! {
    libc::signal(signal, libc::SIG_DFL);
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, signal);
    libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    libc::kill(libc::getpid(), signal);
    libc::_exit(128 + signal)
}

/// No parent-death signal on other systems: the runner's group kill on drop still applies.
#[cfg(not(target_os = "linux"))]
pub fn die_with_parent_before_exec(_command: &mut Command) {}

#[cfg(not(target_os = "linux"))]
pub fn pass_filter_before_exec(command: &mut Command, _filter: Arc<Filter>) {
    refuse_before_exec(command);
}

#[cfg(not(target_os = "linux"))]
pub fn lock_down_before_exec(command: &mut Command, _lockdown: Arc<Lockdown>) {
    refuse_before_exec(command);
}

#[cfg(not(target_os = "linux"))]
pub fn protect_self() -> io::Result<()> {
    Err(unsupported())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn refuses_the_special_group_ids() {
        assert!(kill_group(0, Signal::Term).is_err());
        assert!(kill_group(1, Signal::Kill).is_err());
    }

    #[test]
    fn wake_wins_over_pending_data() {
        let (data_r, data_w) = pipe().unwrap();
        let (wake_r, wake_w) = pipe().unwrap();
        std::fs::File::from(data_w).write_all(b"x").unwrap();
        assert_eq!(
            wait_readable(data_r.as_fd(), wake_r.as_fd()).unwrap(),
            Readiness::Data
        );
        drop(wake_w);
        assert_eq!(
            wait_readable(data_r.as_fd(), wake_r.as_fd()).unwrap(),
            Readiness::Wake
        );
    }

    #[test]
    fn filesystem_magic_tells_procfs_from_a_regular_file() {
        let proc_file = std::fs::File::open("/proc/self/status").unwrap();
        assert_eq!(filesystem_magic(proc_file.as_fd()).unwrap(), 0x9fa0);
        let exe = std::fs::File::open(std::env::current_exe().unwrap()).unwrap();
        assert_ne!(filesystem_magic(exe.as_fd()).unwrap(), 0x9fa0);
    }

    #[test]
    fn landlock_abi_is_a_version_or_a_clear_refusal() {
        match landlock_abi() {
            Ok(abi) => assert!(abi >= 1, "abi {abi}"),
            Err(e) => assert!(
                matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP)
                ),
                "{e}"
            ),
        }
    }
}
