//! Memory bounds of the file tools, attacked through the real binary: kernel pseudo-files that
//! never end (`/proc/self/pagemap`), FIFOs fed forever, files far larger than any cap, lines
//! with no end, and edits whose result explodes. Every run happens under an address-space
//! limit, so a regression dies quickly on a failed allocation instead of eating the machine,
//! and the peak resident set size of the child (`VmHWM`) is read once its tool calls are done.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Value};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, use_fake_provider, Dir};

/// The child's address space limit. Far above what a bounded tool call needs (the debug
/// binary maps a few hundred MiB of thread arenas and stacks) and far below the machine's
/// memory, so an unbounded read or edit fails fast.
const ADDRESS_SPACE_LIMIT: u64 = 1536 * 1024 * 1024;

/// Peak RSS a bounded run may reach (the debug binary idles at about 15 MiB). The attacks
/// below need hundreds of MiB at least.
const PEAK_RSS_LIMIT_KIB: i64 = 64 * 1024;

/// How one headless run ended.
struct Outcome {
    /// The exit code, or minus the signal number that killed it.
    status: i32,
    /// `i64::MAX` when the run never got as far as reporting the tool results.
    peak_rss_kib: i64,
    /// The content of each tool result, in call order.
    results: Vec<String>,
    stderr: String,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {}, peak RSS {} KiB\n--- results ---\n{:#?}\n--- stderr ---\n{}",
            self.status, self.peak_rss_kib, self.results, self.stderr
        )
    }
}

impl Outcome {
    /// Asserts a clean exit within the memory bound and returns the results.
    fn bounded(&self, calls: usize) -> &[String] {
        assert_eq!(self.status, 0, "{self:?}");
        assert_eq!(self.results.len(), calls, "{self:?}");
        assert!(
            self.peak_rss_kib < PEAK_RSS_LIMIT_KIB,
            "peak RSS {} KiB, limit {PEAK_RSS_LIMIT_KIB} KiB\n{self:?}",
            self.peak_rss_kib
        );
        &self.results
    }
}

/// Runs `reasonix run` in `work` with the model making `calls` (tool name, JSON arguments) in
/// one reply, under [`ADDRESS_SPACE_LIMIT`].
fn run_calls(work: &Dir, calls: &[(&str, String)]) -> Outcome {
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("c{i}")).collect();
    let scripted: Vec<(&str, &str, &str)> = calls
        .iter()
        .zip(&ids)
        .map(|((name, args), id)| (id.as_str(), *name, args.as_str()))
        .collect();
    let first = Reply::tool_calls(&scripted);
    // The second request proves every call has finished; while the child waits for its answer
    // its high-water RSS is read. (The rusage of a reaped child would also count the image of
    // this test process it was forked from.)
    let (pid_tx, pid_rx) = mpsc::channel::<u32>();
    let peak = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&peak);
    let mut first = Some(first);
    let server = FakeOpenAI::start_with(move |requests| match first.take() {
        Some(reply) => reply,
        None => {
            if requests.len() == 2 {
                let pid = pid_rx.recv().expect("child pid");
                *seen.lock().unwrap() = vm_hwm_kib(pid);
            }
            Reply::text("done")
        }
    });
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let stderr_path = home.join("stderr.txt");
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["run", "go"])
        .stdout(Stdio::null())
        .stderr(File::create(&stderr_path).expect("stderr file"));
    let limit = libc::rlimit {
        rlim_cur: ADDRESS_SPACE_LIMIT,
        rlim_max: ADDRESS_SPACE_LIMIT,
    };
    // SAFETY: setrlimit(2) is async-signal-safe and the closure only reads a copied struct,
    // so it is sound between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn reasonix");
    pid_tx.send(child.id()).expect("send pid");
    let exit = child.wait().expect("wait for reasonix");
    let status = exit
        .code()
        .or(exit.signal().map(|s| -s))
        .unwrap_or(i32::MIN);
    let peak_rss_kib = peak.lock().unwrap().unwrap_or(i64::MAX);
    let requests = server.requests();
    let results = requests
        .get(1)
        .and_then(|r| r.body["messages"].as_array())
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    Outcome {
        status,
        peak_rss_kib,
        results,
        stderr: fs::read_to_string(&stderr_path).unwrap_or_default(),
    }
}

/// The peak resident set size of a live process since its exec, from /proc.
fn vm_hwm_kib(pid: u32) -> Option<i64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn args(value: Value) -> String {
    value.to_string()
}

fn assert_contains(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?} in:\n{haystack}"
    );
}

/// A FIFO with a writer that never stops: whoever opens and reads it to the end waits for ever
/// and buffers without limit. The test keeps a read-write handle so opening never blocks.
struct EndlessFifo {
    stop: Arc<AtomicBool>,
    drain: File,
    writer: Option<JoinHandle<()>>,
}

impl EndlessFifo {
    fn new(path: &Path) -> EndlessFifo {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("run mkfifo");
        assert!(made.success(), "mkfifo {}", path.display());
        // Opening a FIFO read-write never blocks on Linux: this handle is its own writer.
        let drain = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("open fifo");
        let mut feed = drain.try_clone().expect("clone fifo handle");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let writer = std::thread::Builder::new()
            .name("endless-fifo".into())
            .spawn(move || {
                // Writes of at most PIPE_BUF bytes are atomic, so one drain unblocks a write.
                let chunk = [b'x'; 4096];
                while !flag.load(Ordering::SeqCst) {
                    if feed.write_all(&chunk).is_err() {
                        return;
                    }
                }
            })
            .expect("spawn fifo writer");
        EndlessFifo {
            stop,
            drain,
            writer: Some(writer),
        }
    }
}

impl Drop for EndlessFifo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The writer is blocked on a full pipe or about to check the flag; emptying the pipe
        // lets its last write finish so it sees the flag.
        let mut sink = vec![0u8; 1 << 16];
        let _ = self.drain.read(&mut sink);
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// A sparse file: `head`, then a hole of zero bytes up to `size`, then `tail`. The hole costs
/// no disk space, but a reader sees one line of `size` NUL bytes.
fn sparse_file(path: &Path, head: &str, size: u64, tail: &str) {
    let mut file = File::create(path).expect("create sparse file");
    file.write_all(head.as_bytes()).expect("write head");
    file.set_len(size).expect("extend sparse file");
    file.seek(SeekFrom::End(0)).expect("seek to end");
    file.write_all(tail.as_bytes()).expect("write tail");
}

/// Text lines filling more than the 8 KiB the binary sniffers look at.
fn text_head(lines: usize) -> String {
    (1..=lines)
        .map(|i| format!("plain text line number {i:05}\n"))
        .collect()
}

#[test]
fn read_file_refuses_proc_pagemap_and_a_workspace_symlink_to_it() {
    let work = Dir::new();
    std::os::unix::fs::symlink("/proc/self/pagemap", work.join("pagemap")).unwrap();
    let outcome = run_calls(
        &work,
        &[
            ("read_file", args(json!({"path": "/proc/self/pagemap"}))),
            ("read_file", args(json!({"path": "pagemap"}))),
        ],
    );
    let results = outcome.bounded(2);
    assert_contains(
        &results[0],
        "/proc/self/pagemap is a kernel pseudo-file (procfs)",
    );
    assert_contains(&results[1], "pagemap is a kernel pseudo-file (procfs)");
}

#[test]
fn grep_refuses_proc_pagemap_and_a_workspace_symlink_to_it() {
    let work = Dir::new();
    std::os::unix::fs::symlink("/proc/self/pagemap", work.join("pagemap")).unwrap();
    work.write("a.txt", "needle\n");
    let outcome = run_calls(
        &work,
        &[
            (
                "grep",
                args(json!({"pattern": "needle", "path": "/proc/self/pagemap"})),
            ),
            (
                "grep",
                args(json!({"pattern": "needle", "path": "pagemap"})),
            ),
            ("grep", args(json!({"pattern": "needle"}))),
        ],
    );
    let results = outcome.bounded(3);
    // grep names the resolved path (/proc/<pid>/pagemap).
    assert_contains(&results[0], "/pagemap is a kernel pseudo-file (procfs)");
    assert_contains(&results[1], "pagemap is a kernel pseudo-file (procfs)");
    assert_eq!(results[2], "a.txt\n");
}

#[test]
fn a_gitignore_linked_to_proc_does_not_stall_the_walk() {
    let work = Dir::new();
    // Ignore files are only read inside a repository.
    fs::create_dir_all(work.join(".git/info")).unwrap();
    std::os::unix::fs::symlink("/proc/self/pagemap", work.join(".gitignore")).unwrap();
    std::os::unix::fs::symlink("/proc/self/pagemap", work.join(".git/info/exclude")).unwrap();
    work.write("a.txt", "needle\n");
    let outcome = run_calls(
        &work,
        &[
            ("grep", args(json!({"pattern": "needle"}))),
            ("glob", args(json!({"pattern": "*.txt"}))),
        ],
    );
    let results = outcome.bounded(2);
    assert_eq!(results[0], "a.txt\n");
    assert_contains(&results[1], "a.txt");
}

#[test]
fn a_fifo_fed_forever_is_refused_by_every_file_tool_without_opening_it() {
    let work = Dir::new();
    let _fifo = EndlessFifo::new(&work.join("pipe"));
    work.write("a.txt", "needle\n");
    let edit = json!({"path": "pipe", "old_string": "x", "new_string": "y"});
    let outcome = run_calls(
        &work,
        &[
            ("read_file", args(json!({"path": "pipe"}))),
            ("grep", args(json!({"pattern": "x", "path": "pipe"}))),
            ("grep", args(json!({"pattern": "needle"}))),
            ("edit_file", args(edit)),
            (
                "multi_edit",
                args(json!({"path": "pipe", "edits": [{"old_string": "x", "new_string": "y"}]})),
            ),
            (
                "write_file",
                args(json!({"path": "pipe", "content": "replacement"})),
            ),
        ],
    );
    let results = outcome.bounded(6);
    for (i, result) in results.iter().enumerate() {
        if i == 2 {
            assert_eq!(result, "a.txt\n", "grep must skip the FIFO while walking");
        } else {
            assert_contains(result, "pipe is ");
            assert_contains(result, "not a regular file");
        }
    }
}

#[test]
fn read_file_of_a_file_past_the_byte_cap_returns_a_window_and_a_note() {
    let work = Dir::new();
    let head = text_head(1000);
    // 300 MB: past the 256 MiB a call may read, mostly one line of NUL bytes.
    sparse_file(&work.join("huge.log"), &head, 300_000_000, "the end\n");
    let outcome = run_calls(
        &work,
        &[
            ("read_file", args(json!({"path": "huge.log", "limit": 3}))),
            (
                "read_file",
                args(json!({"path": "huge.log", "offset": 1001})),
            ),
        ],
    );
    let results = outcome.bounded(2);
    assert_eq!(
        results[0],
        "     1\tplain text line number 00001\n     2\tplain text line number 00002\n     3\tplain \
         text line number 00003\n... more lines follow (read_file stopped counting at the 256 \
         MiB it reads per call); call read_file with offset=4 to continue\n"
    );
    // Line 1001 is the hole: cut to 2000 characters, the rest counted, never held in memory.
    assert_contains(&results[1], "  1001\t\u{0}\u{0}");
    assert_contains(&results[1], "[line truncated: ");
    assert_contains(
        &results[1],
        "read_file reads at most 256 MiB of a file per call",
    );
}

#[test]
fn grep_streams_a_huge_file_in_bounded_memory_and_finds_matches_on_both_sides() {
    let work = Dir::new();
    let mut head = text_head(1000);
    head.push_str("first needle here\n");
    let tail = "\nlast needle here\n";
    sparse_file(&work.join("huge.log"), &head, 200_000_000, tail);
    let outcome = run_calls(
        &work,
        &[
            (
                "grep",
                args(json!({"pattern": "needle", "output_mode": "content"})),
            ),
            (
                "grep",
                args(json!({"pattern": "nee+dle", "output_mode": "count"})),
            ),
        ],
    );
    let results = outcome.bounded(2);
    assert_eq!(
        results[0],
        "huge.log:1001:first needle here\nhuge.log:1003:last needle here\n"
    );
    assert_eq!(results[1], "huge.log:2\n(2 matching lines in 1 file)\n");
}

#[test]
fn edit_file_replace_all_blow_up_is_refused_and_the_file_is_unchanged() {
    let work = Dir::new();
    let original = "l".repeat(100_000);
    work.write("f.txt", &original);
    let edit = json!({
        "path": "f.txt",
        "old_string": "l",
        "new_string": "l".repeat(100_000),
        "replace_all": true,
    });
    let outcome = run_calls(&work, &[("edit_file", args(edit))]);
    let results = outcome.bounded(1);
    assert_contains(
        &results[0],
        "the edit would make f.txt 10000000000 bytes, over the 1 MiB limit",
    );
    assert_contains(&results[0], "write_file");
    assert!(work.read("f.txt") == original, "f.txt changed");
}

#[test]
fn multi_edit_doubling_is_refused_and_the_file_is_unchanged() {
    let work = Dir::new();
    let original = "l".repeat(1000);
    work.write("f.txt", &original);
    let edits: Vec<Value> = (0..2000)
        .map(|_| json!({"old_string": "l", "new_string": "ll", "replace_all": true}))
        .collect();
    let outcome = run_calls(
        &work,
        &[("multi_edit", args(json!({"path": "f.txt", "edits": edits})))],
    );
    let results = outcome.bounded(1);
    // 1000 bytes doubled ten times is 1,024,000 bytes; the eleventh doubling passes 1 MiB.
    assert_contains(
        &results[0],
        "edits[10] failed: the edit would make f.txt 2048000 bytes, over the 1 MiB limit",
    );
    assert_contains(&results[0], "No edits were applied; f.txt is unchanged");
    assert!(work.read("f.txt") == original, "f.txt changed");
}
