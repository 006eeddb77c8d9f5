//! The Landlock jail for bash, used when bubblewrap is missing or cannot create namespaces:
//! a ruleset built in the parent before the fork, which the child enforces on itself between
//! fork and exec (`sys::lock_down_before_exec`: only system calls run there, together with the
//! capability drop, the seccomp filter of `sandbox::seccomp` and the supervisor that ends every
//! descendant with the command).
//!
//! What the ruleset allows, negotiated down to the kernel's ABI (1: Linux 5.13, 2: + moving
//! files between directories, 3: + truncate, 4: + TCP, 5: + device ioctls, 6: + scopes):
//! - Read and execute everywhere except the `forbid_read` paths, the home's secrets (whether
//!   they exist yet or not, see `config::paths::home_secrets`), the host's terminals
//!   (`/dev/pts`) and shared memory (`/dev/shm`), and the hard links to hidden files found in
//!   the workspace and write roots (see `sandbox::inodes`). Landlock can only grant, and a
//!   grant covers everything beneath the granted directory, so the hidden paths are carved
//!   out: starting at `/`, a directory that contains no hidden path is granted whole; one that
//!   does is granted only directory listing, and its entries are visited the same way, down to
//!   the hidden path's siblings; hidden paths and symlinks get nothing (a symlink is checked at
//!   its target). Consequences: the names inside a hidden directory can be listed but no file
//!   in it can be read, and an entry created after the ruleset was built directly inside a
//!   directory on the way to a hidden path (say a new file in `~` when `~/.ssh` is hidden, or
//!   any new file at the top of the reasonix home) is not readable by that command: a secret
//!   the home gains while a server runs stays out of its reach.
//! - Writes (create, remove, rename, truncate) beneath the workspace, the write roots, the
//!   session's private temp directory (`<home>/tmp/<pid>-<n>`, also readable, passed as
//!   `TMPDIR`; see `sandbox::private_tmp`) and to `/dev/null`, `/dev/zero`, `/dev/full` and
//!   `/dev/tty` (the command has no controlling terminal, so that one opens nothing). Not to
//!   the host's `/tmp`, `/var/tmp` or `/dev/shm`, which every process of the user shares, nor
//!   to `/dev/pts` or `/dev/ptmx`: a command's own stdio is inherited, not opened, so it needs
//!   neither, and the price is that it cannot allocate a pseudo-terminal. A subagent's fence
//!   narrows the first two to its paths. A hidden
//!   file under a write root stays writable (carving it out of the write grant would also take
//!   away creating files next to it) but not readable, and moving it somewhere readable is
//!   refused by the kernel (ABI 2+ never lets a rename gain access rights; ABI 1 refuses every
//!   rename across directories). bwrap, by contrast, makes it read-only.
//! - With `[sandbox] network = false`: no TCP bind or connect at all on ABI 4+ (Landlock cannot
//!   tell loopback from the internet; UDP is not covered), and on ABI 6+ no abstract unix
//!   sockets outside the sandbox. Below ABI 4 the network is not confined and the policy says
//!   so once. On ABI 6+ the command also cannot signal processes outside its sandbox.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::sys::{self, AsFd, OwnedFd};
use super::Policy;

pub const ACCESS_FS_EXECUTE: u64 = 1 << 0;
pub const ACCESS_FS_WRITE_FILE: u64 = 1 << 1;
pub const ACCESS_FS_READ_FILE: u64 = 1 << 2;
pub const ACCESS_FS_READ_DIR: u64 = 1 << 3;
pub const ACCESS_FS_REMOVE_DIR: u64 = 1 << 4;
pub const ACCESS_FS_REMOVE_FILE: u64 = 1 << 5;
pub const ACCESS_FS_MAKE_CHAR: u64 = 1 << 6;
pub const ACCESS_FS_MAKE_DIR: u64 = 1 << 7;
pub const ACCESS_FS_MAKE_REG: u64 = 1 << 8;
pub const ACCESS_FS_MAKE_SOCK: u64 = 1 << 9;
pub const ACCESS_FS_MAKE_FIFO: u64 = 1 << 10;
pub const ACCESS_FS_MAKE_BLOCK: u64 = 1 << 11;
pub const ACCESS_FS_MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
pub const ACCESS_FS_REFER: u64 = 1 << 13;
/// ABI 3.
pub const ACCESS_FS_TRUNCATE: u64 = 1 << 14;
/// ABI 5.
pub const ACCESS_FS_IOCTL_DEV: u64 = 1 << 15;
/// ABI 4.
pub const ACCESS_NET_BIND_TCP: u64 = 1 << 0;
/// ABI 4.
pub const ACCESS_NET_CONNECT_TCP: u64 = 1 << 1;
/// ABI 6.
pub const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
/// ABI 6.
pub const SCOPE_SIGNAL: u64 = 1 << 1;

/// Rights that apply to a file (a rule on a non-directory may only carry these).
const FILE_RIGHTS: u64 = ACCESS_FS_EXECUTE
    | ACCESS_FS_WRITE_FILE
    | ACCESS_FS_READ_FILE
    | ACCESS_FS_TRUNCATE
    | ACCESS_FS_IOCTL_DEV;
const READ_RIGHTS: u64 =
    ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR | ACCESS_FS_IOCTL_DEV;
const WRITE_RIGHTS: u64 = ACCESS_FS_WRITE_FILE
    | ACCESS_FS_REMOVE_DIR
    | ACCESS_FS_REMOVE_FILE
    | ACCESS_FS_MAKE_CHAR
    | ACCESS_FS_MAKE_DIR
    | ACCESS_FS_MAKE_REG
    | ACCESS_FS_MAKE_SOCK
    | ACCESS_FS_MAKE_FIFO
    | ACCESS_FS_MAKE_BLOCK
    | ACCESS_FS_MAKE_SYM
    | ACCESS_FS_REFER
    | ACCESS_FS_TRUNCATE;

/// Device files every command may write to (writes to anything else in `/dev` are denied).
const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Host places no command may read either: the user's terminals (reading one steals
/// keystrokes) and the shared memory of the user's other processes.
const HOST_PRIVATE: [&str; 2] = ["/dev/pts", "/dev/shm"];

/// The kernel's Landlock ABI version, or why Landlock cannot be used.
pub fn probe() -> Result<u32, String> {
    sys::landlock_abi().map_err(|e| match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "this kernel has no Landlock support (it needs Linux 5.13 or later)".to_string()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into this kernel but not enabled (add it to the lsm= boot \
             parameter)"
                .to_string()
        }
        _ => format!("cannot query Landlock: {e}"),
    })
}

/// The filesystem rights the kernel with this ABI knows; a ruleset handles all of them.
pub fn handled_fs(abi: u32) -> u64 {
    let mut rights = (1 << 13) - 1;
    if abi >= 2 {
        rights |= ACCESS_FS_REFER;
    }
    if abi >= 3 {
        rights |= ACCESS_FS_TRUNCATE;
    }
    if abi >= 5 {
        rights |= ACCESS_FS_IOCTL_DEV;
    }
    rights
}

/// Whether a jail under `policy` on a kernel with this ABI keeps the command off the network
/// (trivially true when the policy allows the network).
pub fn confines_network(policy: &Policy, abi: u32) -> bool {
    policy.network || abi >= 4
}

/// The remark made when [`confines_network`] is false.
pub fn network_gap(abi: u32) -> String {
    format!(
        "sandbox: the network is not confined: this kernel's Landlock (ABI {abi}) cannot \
         restrict TCP (ABI 4, Linux 6.7, is needed); install bubblewrap to cut the network off"
    )
}

/// Builds the ruleset for `policy` on a kernel with this ABI, with `tmp` (an existing
/// directory) as the command's private temp directory. The returned descriptor goes into
/// `CommandSpec::landlock_ruleset`; it can be enforced by any number of children.
pub fn prepare(policy: &Policy, abi: u32, tmp: &Path) -> io::Result<Arc<OwnedFd>> {
    let handled_net = if policy.network {
        0
    } else {
        ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP
    };
    let mut scoped = SCOPE_SIGNAL;
    if !policy.network {
        scoped |= SCOPE_ABSTRACT_UNIX_SOCKET;
    }
    let spec = sys::RulesetSpec {
        handled_fs: handled_fs(abi),
        handled_net,
        scoped,
    };
    let rules = Rules {
        ruleset: sys::landlock_create_ruleset(spec, abi)?,
        handled: spec.handled_fs,
    };
    let hidden = existing(policy.jail_hidden());
    // The secrets are carved out even before they exist, so the home is never granted whole.
    let mut unreadable = hidden.clone();
    unreadable.extend(policy.secrets.iter().cloned());
    unreadable.extend(HOST_PRIVATE.iter().map(PathBuf::from));
    rules.grant_around(Path::new("/"), READ_RIGHTS, &unreadable)?;
    let links: Vec<PathBuf> = hidden
        .iter()
        .filter(|h| !policy.forbid_read.contains(h))
        .cloned()
        .collect();
    rules.grant(tmp, READ_RIGHTS | WRITE_RIGHTS)?;
    for place in policy.writable() {
        // A hard link to a hidden file is carved out of the write grants too, or a command
        // could overwrite the hidden file through it.
        let mut carved = carved_from(policy, place);
        carved.extend(links.iter().filter(|l| l.starts_with(place)).cloned());
        rules.grant_around(place, WRITE_RIGHTS, &carved)?;
    }
    for device in WRITABLE_DEVICES {
        rules.grant(Path::new(device), WRITE_RIGHTS)?;
    }
    Ok(Arc::new(rules.ruleset))
}

/// What write grants on the place `place` go around: the protected paths (the reasonix home)
/// that exist strictly inside it, except the workspace's own ancestors there.
fn carved_from(policy: &Policy, place: &Path) -> Vec<PathBuf> {
    let carved: Vec<PathBuf> = policy
        .protected
        .iter()
        .filter(|p| p.starts_with(place) && p.as_path() != place)
        .filter(|p| {
            !(place.starts_with(&policy.workspace_root) && policy.workspace_root.starts_with(p))
        })
        .cloned()
        .collect();
    existing(&carved)
}

/// The hidden paths that exist; there is nothing to carve out for the others.
fn existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| fs::symlink_metadata(p).is_ok())
        .cloned()
        .collect()
}

/// A ruleset being filled, and the rights it handles (a rule may not grant more).
struct Rules {
    ruleset: OwnedFd,
    handled: u64,
}

impl Rules {
    /// Grants `rights` beneath `path`, not following a final symlink. A path that does not
    /// exist or cannot be opened is skipped: the command simply gets less access.
    fn grant(&self, path: &Path, rights: u64) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.read(true);
        // Landlock exists only on Linux, so elsewhere no ruleset reaches this point.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut options,
            sys::O_PATH | libc::O_NOFOLLOW,
        );
        let Ok(file) = options.open(path) else {
            return Ok(());
        };
        let Ok(meta) = file.metadata() else {
            return Ok(());
        };
        if meta.file_type().is_symlink() {
            return Ok(());
        }
        let mut rights = rights & self.handled;
        if !meta.is_dir() {
            rights &= FILE_RIGHTS;
        }
        if rights == 0 {
            return Ok(());
        }
        sys::landlock_add_path_rule(self.ruleset.as_fd(), file.as_fd(), rights)
    }

    /// Grants `rights` beneath `dir` except beneath the `hidden` paths (see the module doc).
    fn grant_around(&self, dir: &Path, rights: u64, hidden: &[PathBuf]) -> io::Result<()> {
        if hidden.iter().any(|h| dir.starts_with(h)) {
            return Ok(());
        }
        if !hidden.iter().any(|h| h.starts_with(dir)) {
            return self.grant(dir, rights);
        }
        self.grant(dir, rights & ACCESS_FS_READ_DIR)?;
        let Ok(entries) = fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            self.grant_around(&entry.path(), rights, hidden)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handled_rights_grow_with_the_abi() {
        assert_eq!(handled_fs(1), 0x1fff);
        assert_eq!(handled_fs(2), 0x3fff);
        assert_eq!(handled_fs(3), 0x7fff);
        assert_eq!(handled_fs(4), 0x7fff);
        assert_eq!(handled_fs(5), 0xffff);
        assert_eq!(handled_fs(7), 0xffff);
        assert_eq!(READ_RIGHTS & WRITE_RIGHTS, 0);
        assert_eq!(READ_RIGHTS | WRITE_RIGHTS, handled_fs(5));
    }
}
