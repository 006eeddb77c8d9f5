//! The one gate through which the tools read a file named by the model or found by a walker.
//!
//! Only regular files on real filesystems are opened: FIFOs, sockets and devices are refused
//! before they are opened (opening a device can have side effects, reading a FIFO can block
//! for ever), and kernel pseudo-files (/proc, /sys and their kin, which report a size of 0 and
//! may never end, like `/proc/self/pagemap`) are refused by their filesystem type. Every read
//! is then bounded by the caller's byte cap, never by `st_size`: [`read_capped`] for a file
//! loaded whole, [`LineBlocks`] for a file streamed a fixed-size block of whole lines at a time.
//!
//! Decoding belongs to `text`; what to do with the bytes, and the caps themselves, belong to
//! each tool.

use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use crate::platform::{self, Special};
use crate::sandbox::sys::{self, AsFd};

/// Why a file was not opened.
#[derive(Debug)]
pub enum Refusal {
    Missing,
    Directory,
    /// A FIFO, socket or device, named as "a FIFO (named pipe)" and so on.
    Special(&'static str),
    /// A file of a kernel pseudo-filesystem, named like "procfs".
    PseudoFile(&'static str),
    Io(io::Error),
}

impl Refusal {
    /// The model-facing explanation for a file shown as `shown`. Callers that want their own
    /// advice for a missing file or a directory match those first.
    pub fn describe(&self, shown: &str) -> String {
        match self {
            Refusal::Missing => format!("{shown} does not exist"),
            Refusal::Directory => format!("{shown} is a directory, not a file"),
            Refusal::Special(kind) => format!(
                "{shown} is {kind}, not a regular file; the file tools only open regular files \
                 (reading it could block or never end)"
            ),
            Refusal::PseudoFile(fs) => format!(
                "{shown} is a kernel pseudo-file ({fs}), not a regular file: its size is \
                 unknown and reading it may never end; read a bounded part with bash (for \
                 example `head -c 65536 {shown}`)"
            ),
            Refusal::Io(e) => super::text::io_failure("cannot read", shown, e).to_string(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read: {}", self.describe("the file"))
    }
}

impl std::error::Error for Refusal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Refusal::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Refusal {
    fn from(e: io::Error) -> Refusal {
        match e.kind() {
            io::ErrorKind::NotFound => Refusal::Missing,
            _ => Refusal::Io(e),
        }
    }
}

/// Superblock magic numbers of the kernel's pseudo-filesystems (from `linux/magic.h`): their
/// files are generated on read, report a size of 0, and some never reach an end.
const PSEUDO_FILESYSTEMS: [(u64, &str); 8] = [
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x6265_6570, "configfs"),
    (0x0027_e0eb, "cgroupfs"),
    (0x6367_7270, "cgroup2fs"),
];

/// Opens `path` (following symlinks) for reading if it is a regular file on a real
/// filesystem.
pub fn open(path: &Path) -> Result<File, Refusal> {
    // Checked before opening: opening a device can act on it (rewind a tape, arm a watchdog).
    check_type(&fs::metadata(path)?)?;
    Opener::default().open_listed(path)
}

/// Opens the many files of a walk with fewer system calls than [`open`]: the filesystem type
/// is looked up once per device, and a path the directory listing reported as a regular file
/// is not checked by path before it is opened.
#[derive(Default)]
pub struct Opener {
    /// Device number and, for a pseudo-filesystem, its name.
    filesystems: Vec<(u64, Option<&'static str>)>,
}

impl Opener {
    /// Opens a file a directory listing reported as regular. Should it have been swapped for
    /// something else since, O_NONBLOCK keeps a FIFO from blocking the open, and the check of
    /// what was opened refuses it.
    pub fn open_listed(&mut self, path: &Path) -> Result<File, Refusal> {
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        let file = options.open(path)?;
        // What was opened is what counts, whatever the path pointed at a moment ago.
        let meta = file.metadata()?;
        check_type(&meta)?;
        if let Some(name) = self.pseudo_filesystem(&file, platform::device(&meta), path)? {
            return Err(Refusal::PseudoFile(name));
        }
        Ok(file)
    }

    fn pseudo_filesystem(
        &mut self,
        file: &File,
        device: u64,
        path: &Path,
    ) -> io::Result<Option<&'static str>> {
        if let Some((_, name)) = self.filesystems.iter().find(|(d, _)| *d == device) {
            return Ok(*name);
        }
        let name = match sys::filesystem_magic(file.as_fd()) {
            Ok(magic) => PSEUDO_FILESYSTEMS
                .iter()
                .find(|(m, _)| *m == magic)
                .map(|(_, name)| *name),
            // Without fstatfs, fall back to where the kernel mounts them.
            Err(_) => {
                let real = fs::canonicalize(path)?;
                if real.starts_with("/proc") {
                    Some("procfs")
                } else if real.starts_with("/sys") {
                    Some("sysfs")
                } else {
                    None
                }
            }
        };
        self.filesystems.push((device, name));
        Ok(name)
    }
}

fn check_type(meta: &Metadata) -> Result<(), Refusal> {
    let kind = meta.file_type();
    if kind.is_file() {
        Ok(())
    } else if kind.is_dir() {
        Err(Refusal::Directory)
    } else {
        Err(Refusal::Special(match platform::special(kind) {
            Some(Special::Fifo) => "a FIFO (named pipe)",
            Some(Special::Socket) => "a socket",
            Some(Special::CharDevice) => "a character device",
            Some(Special::BlockDevice) => "a block device",
            None => "not a file",
        }))
    }
}

/// The first bytes of a file, at most the cap.
#[derive(Debug)]
pub struct Capped {
    pub bytes: Vec<u8>,
    /// Whether the end of the file was reached within the cap.
    pub complete: bool,
}

/// Reads at most `cap` bytes of `file`. One byte past the cap is read to learn whether the
/// file goes on, so a file of exactly `cap` bytes counts as complete.
pub fn read_capped(file: &mut File, cap: usize) -> io::Result<Capped> {
    // The size is only a hint for the allocation; the cap is what bounds it.
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(cap).min(cap) + 1);
    file.take(cap as u64 + 1).read_to_end(&mut bytes)?;
    let complete = bytes.len() <= cap;
    bytes.truncate(cap);
    Ok(Capped { bytes, complete })
}

/// Opens `path` with [`open`] and reads at most `cap` bytes of it.
pub fn read_path_capped(path: &Path, cap: usize) -> Result<Capped, Refusal> {
    let mut file = open(path)?;
    Ok(read_capped(&mut file, cap)?)
}

/// A file read a block of whole lines at a time through one buffer of fixed size, so memory
/// does not depend on the file's size. A line longer than the buffer is cut: its first
/// buffer-full is returned as a block of its own and the rest is skipped.
pub struct LineBlocks {
    file: File,
    buf: Vec<u8>,
    /// The unreturned bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    /// Inside a cut line: bytes up to and including the next newline are dropped.
    skipping: bool,
}

/// One block of whole lines.
pub struct Block<'a> {
    /// Ends with a newline unless it is the end of the file or a cut line.
    pub bytes: &'a [u8],
    /// The block is the first buffer-full of a longer line, whose rest was skipped.
    pub cut: bool,
}

impl LineBlocks {
    /// Streams `file` through `buf`, whose length (at least 1) is the block size; the buffer
    /// can be reused for the next file with [`LineBlocks::into_buffer`].
    pub fn new(file: File, buf: Vec<u8>) -> LineBlocks {
        LineBlocks {
            file,
            buf,
            start: 0,
            end: 0,
            eof: false,
            skipping: false,
        }
    }

    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    /// The first `n` bytes (fewer at the end of the file), without consuming them.
    pub fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        let n = n.min(self.buf.len());
        while self.end - self.start < n && !self.eof {
            self.fill()?;
        }
        let upto = (self.start + n).min(self.end);
        Ok(&self.buf[self.start..upto])
    }

    /// Whether nothing is left to return.
    pub fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.peek(1)?.is_empty())
    }

    /// The next block, or `None` at the end of the file.
    pub fn next_block(&mut self) -> io::Result<Option<Block<'_>>> {
        if self.skipping {
            self.skip_rest_of_line()?;
        }
        // Until the buffer is full of unreturned bytes (fill moves them to the front first).
        while self.end - self.start < self.buf.len() && !self.eof {
            self.fill()?;
        }
        if self.start == self.end {
            return Ok(None);
        }
        let start = self.start;
        let newline = self.buf[start..self.end].iter().rposition(|&b| b == b'\n');
        let (stop, cut) = match newline {
            _ if self.eof => (self.end, false),
            Some(i) => (start + i + 1, false),
            // A full buffer without a newline: one line longer than the buffer.
            None => (self.end, true),
        };
        self.start = stop;
        self.skipping = cut;
        Ok(Some(Block {
            bytes: &self.buf[start..stop],
            cut,
        }))
    }

    /// Reads more bytes after the unreturned ones, moving those to the front first.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Ok(());
        }
        match self.file.read(&mut self.buf[self.end..]) {
            Ok(0) => self.eof = true,
            Ok(n) => self.end += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Drops bytes up to and including the next newline (or to the end of the file).
    fn skip_rest_of_line(&mut self) -> io::Result<()> {
        loop {
            if let Some(i) = self.buf[self.start..self.end]
                .iter()
                .position(|&b| b == b'\n')
            {
                self.start += i + 1;
                self.skipping = false;
                return Ok(());
            }
            self.start = self.end;
            if self.eof {
                self.skipping = false;
                return Ok(());
            }
            self.fill()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn blocks(content: &[u8], size: usize) -> Vec<(String, bool)> {
        let dir = TempDir::new("read-limit-blocks");
        let path = dir.write("file", content);
        let mut reader = LineBlocks::new(open(&path).unwrap(), vec![0; size]);
        let mut out = Vec::new();
        while let Some(block) = reader.next_block().unwrap() {
            out.push((String::from_utf8_lossy(block.bytes).into_owned(), block.cut));
        }
        out
    }

    #[test]
    fn blocks_hold_whole_lines_and_cut_a_line_longer_than_the_buffer() {
        let owned = |list: &[(&str, bool)]| -> Vec<(String, bool)> {
            list.iter().map(|(s, c)| (s.to_string(), *c)).collect()
        };
        assert_eq!(
            blocks(b"ab\ncd\nef", 4),
            owned(&[("ab\n", false), ("cd\n", false), ("ef", false)])
        );
        assert_eq!(
            blocks(b"abcdefghij\nxy\n", 4),
            owned(&[("abcd", true), ("xy\n", false)])
        );
        assert_eq!(blocks(b"abcdefgh", 4), owned(&[("abcd", true)]));
        assert_eq!(blocks(b"a\nb\nc\n", 64), owned(&[("a\nb\nc\n", false)]));
        // Leftovers of one block are moved to the front and topped up before the next.
        assert_eq!(
            blocks(b"line 1\nline 2\nhit 3\nline 4\n", 16),
            owned(&[("line 1\nline 2\n", false), ("hit 3\nline 4\n", false)])
        );
        assert!(blocks(b"", 4).is_empty());
    }

    #[test]
    fn peek_does_not_consume() {
        let dir = TempDir::new("read-limit-peek");
        let path = dir.write("file", b"hello\nworld\n");
        let mut reader = LineBlocks::new(open(&path).unwrap(), vec![0; 64]);
        assert_eq!(reader.peek(3).unwrap(), b"hel");
        assert_eq!(
            reader.next_block().unwrap().unwrap().bytes,
            b"hello\nworld\n"
        );
        assert!(reader.at_end().unwrap());
    }

    #[test]
    fn read_capped_stops_at_the_cap_and_says_so() {
        let dir = TempDir::new("read-limit-capped");
        let path = dir.write("file", b"0123456789");
        let capped = read_path_capped(&path, 4).unwrap();
        assert_eq!(
            (capped.bytes.as_slice(), capped.complete),
            (&b"0123"[..], false)
        );
        let whole = read_path_capped(&path, 10).unwrap();
        assert_eq!((whole.bytes.len(), whole.complete), (10, true));
    }

    #[test]
    fn pseudo_files_and_special_files_are_refused() {
        let refused = |path: &str| open(Path::new(path)).unwrap_err().describe(path);
        assert!(
            refused("/proc/self/pagemap").contains("kernel pseudo-file (procfs)"),
            "{}",
            refused("/proc/self/pagemap")
        );
        assert!(refused("/dev/null").contains("is a character device, not a regular file"));
        assert!(refused("/").contains("is a directory"));
        assert!(matches!(
            open(Path::new("/nonexistent/reasonix")),
            Err(Refusal::Missing)
        ));
    }
}
