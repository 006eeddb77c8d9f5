//! The file-system facts that only Unix has, in one place: permission bits (for new files,
//! private directories, the executable test), file identity (device and inode), owner, hard-link
//! counts, the special file types (FIFO, socket, device) and a path's raw bytes.
//!
//! On Unix (Linux, the supported platform, and the macOS check) each helper is the std call it
//! wraps, so behaviour there is exactly what the call sites did before. On other systems
//! (the `x86_64-pc-windows-gnu` check) they degrade to the nearest meaning: modes are not set
//! and read back as 0644/0755 (0444 when read-only), no file has an identity or a second link,
//! and nothing is a special file. What truly cannot work there (the jail, child processes, the
//! raw terminal) fails in `sandbox::sys` and `term::sys` with "not supported on this platform".

pub use imp::*;

/// A file that is neither regular, a directory nor a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

/// The device of the file of `meta` (0 where there is none).
pub fn device(meta: &std::fs::Metadata) -> u64 {
    file_id(meta).map_or(0, |(dev, _)| dev)
}

/// Whether `path` is a file someone may execute (any execute bit; elsewhere, any file).
pub fn is_executable(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && (cfg!(not(unix)) || mode(&m) & 0o111 != 0))
}

#[cfg(unix)]
mod imp {
    use super::Special;
    use std::ffi::OsStr;
    use std::fs::{self, DirBuilder, DirEntry, File, FileType, Metadata, OpenOptions};
    use std::io;
    use std::os::unix::fs::{
        DirBuilderExt, DirEntryExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt,
    };
    use std::path::Path;

    /// Gives a file that `options` creates the permission bits `mode` (before the umask).
    pub fn create_mode(options: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
        options.mode(mode)
    }

    /// Gives the directories `builder` creates the permission bits `mode` (before the umask).
    pub fn dir_mode(builder: &mut DirBuilder, mode: u32) -> &mut DirBuilder {
        builder.mode(mode)
    }

    /// The permission bits (`st_mode & 0o7777`) of `meta`.
    pub fn mode(meta: &Metadata) -> u32 {
        meta.permissions().mode() & 0o7777
    }

    /// Sets the permission bits of the open `file` to exactly `mode`.
    pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
        file.set_permissions(fs::Permissions::from_mode(mode))
    }

    /// Sets the permission bits of what `path` names (following symlinks) to exactly `mode`.
    pub fn set_path_mode(path: &Path, mode: u32) -> io::Result<()> {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
    }

    /// The (device, inode) pair naming the file of `meta`.
    pub fn file_id(meta: &Metadata) -> Option<(u64, u64)> {
        Some((meta.dev(), meta.ino()))
    }

    /// The inode a directory entry names, without a `stat`.
    pub fn entry_inode(entry: &DirEntry) -> u64 {
        entry.ino()
    }

    /// The user id owning the file of `meta`.
    pub fn owner(meta: &Metadata) -> Option<u32> {
        Some(meta.uid())
    }

    /// How many names the file of `meta` has.
    pub fn links(meta: &Metadata) -> u64 {
        meta.nlink()
    }

    /// Which special file `kind` is, if any.
    pub fn special(kind: FileType) -> Option<Special> {
        if kind.is_fifo() {
            Some(Special::Fifo)
        } else if kind.is_socket() {
            Some(Special::Socket)
        } else if kind.is_char_device() {
            Some(Special::CharDevice)
        } else if kind.is_block_device() {
            Some(Special::BlockDevice)
        } else {
            None
        }
    }

    /// The bytes of `name` as the system stores them.
    pub fn os_bytes(name: &OsStr) -> &[u8] {
        std::os::unix::ffi::OsStrExt::as_bytes(name)
    }
}

#[cfg(not(unix))]
mod imp {
    use super::Special;
    use std::ffi::OsStr;
    use std::fs::{self, DirBuilder, DirEntry, File, FileType, Metadata, OpenOptions};
    use std::io;
    use std::path::Path;

    /// No Unix modes here: the file gets the system's default access.
    pub fn create_mode(options: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
        options
    }

    pub fn dir_mode(builder: &mut DirBuilder, _mode: u32) -> &mut DirBuilder {
        builder
    }

    /// 0644 for a file, 0755 for a directory, without the write bits when read-only.
    pub fn mode(meta: &Metadata) -> u32 {
        let base = if meta.is_dir() { 0o755 } else { 0o644 };
        if meta.permissions().readonly() {
            base & 0o555
        } else {
            base
        }
    }

    /// Only the read-only flag can be expressed: set when `mode` has no write bit.
    pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
        let mut permissions = file.metadata()?.permissions();
        permissions.set_readonly(mode & 0o222 == 0);
        file.set_permissions(permissions)
    }

    pub fn set_path_mode(path: &Path, mode: u32) -> io::Result<()> {
        let mut permissions = fs::metadata(path)?.permissions();
        permissions.set_readonly(mode & 0o222 == 0);
        fs::set_permissions(path, permissions)
    }

    pub fn file_id(_meta: &Metadata) -> Option<(u64, u64)> {
        None
    }

    pub fn entry_inode(_entry: &DirEntry) -> u64 {
        0
    }

    pub fn owner(_meta: &Metadata) -> Option<u32> {
        None
    }

    pub fn links(_meta: &Metadata) -> u64 {
        1
    }

    pub fn special(_kind: FileType) -> Option<Special> {
        None
    }

    /// WTF-8 bytes: the same as UTF-8 for every valid name.
    pub fn os_bytes(name: &OsStr) -> &[u8] {
        name.as_encoded_bytes()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::fs::{self, OpenOptions};

    #[test]
    fn a_created_file_gets_exactly_the_mode_set_after_the_umask() {
        let dir = TempDir::new("platform-mode");
        let path = dir.join("private");
        let file = create_mode(OpenOptions::new().write(true).create_new(true), 0o600)
            .open(&path)
            .unwrap();
        assert_eq!(mode(&file.metadata().unwrap()) & 0o077, 0);
        set_mode(&file, 0o640).unwrap();
        assert_eq!(mode(&fs::metadata(&path).unwrap()), 0o640);
        set_path_mode(&path, 0o750).unwrap();
        assert_eq!(mode(&fs::metadata(&path).unwrap()), 0o750);
        assert!(is_executable(&path));
        set_path_mode(&path, 0o640).unwrap();
        assert!(!is_executable(&path));
    }

    #[test]
    fn identity_follows_the_file_not_the_name() {
        let dir = TempDir::new("platform-id");
        let a = dir.join("a");
        let b = dir.join("b");
        fs::write(&a, "a").unwrap();
        fs::write(&b, "b").unwrap();
        let id_a = file_id(&fs::metadata(&a).unwrap());
        assert!(id_a.is_some());
        assert_ne!(id_a, file_id(&fs::metadata(&b).unwrap()));
        fs::hard_link(&a, dir.join("a2")).unwrap();
        let linked = fs::metadata(dir.join("a2")).unwrap();
        assert_eq!(file_id(&linked), id_a);
        assert_eq!(links(&linked), 2);
        let entry = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name() == "a")
            .unwrap();
        assert_eq!(Some(entry_inode(&entry)), id_a.map(|(_, ino)| ino));
        let ours = owner(&fs::metadata(dir.path()).unwrap());
        assert!(ours.is_some());
        assert_eq!(owner(&linked), ours);
    }

    #[test]
    fn sockets_are_special_and_files_are_not() {
        let dir = TempDir::new("platform-special");
        let sock = dir.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let kind = fs::symlink_metadata(&sock).unwrap().file_type();
        assert_eq!(special(kind), Some(Special::Socket));
        fs::write(dir.join("f"), "").unwrap();
        let kind = fs::metadata(dir.join("f")).unwrap().file_type();
        assert_eq!(special(kind), None);
        let kind = fs::metadata("/dev/null").unwrap().file_type();
        assert_eq!(special(kind), Some(Special::CharDevice));
    }
}
