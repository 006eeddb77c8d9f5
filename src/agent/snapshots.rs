//! File snapshots for `/rewind`: before a built-in writer (write_file, edit_file, multi_edit,
//! move_file) runs, the current content of every path it names (or the fact that the path is
//! absent) is kept under `<state>/snapshots/<session id>/`, so a rewind can put the files back
//! the way they were before a turn. Other calls that change things (bash, MCP tools) cannot be
//! undone; they are recorded so a rewind can say so.
//!
//! The store is an append-only index (`index.jsonl`, one [`Entry`] per line, owner-only) next
//! to one blob per kept file, each written atomically before the index line that names it. A
//! torn last index line is skipped. Entries carry the number of the user turn they were taken
//! in (see `Session::turns`); a rewind appends a [`Entry::Rewind`] so a later turn with a
//! reused number is told apart from the one it replaced. Only the process holding the
//! session's lock runs turns, so only it writes here.
//!
//! This module owns the store, the recording hook `dispatch` calls and the restore plan; the
//! chat owns asking the user.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dispatch::Prepared;
use crate::sandbox::beneath::{self, Parents};
use crate::tool::builtin::history::StatePaths;
use crate::tool::{Family, Subjects, ToolContext};

/// Files larger than this are not kept; the rewind list says so.
pub const SIZE_CAP: u64 = 4 * 1024 * 1024;

const INDEX: &str = "index.jsonl";

/// One line of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A path a writer was about to change, as it was just before.
    File {
        turn: usize,
        call: String,
        path: PathBuf,
        /// The blob holding the old content; `None` with no `skipped` means the path was absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
        /// Why the old content was not kept (too large, a directory, unreadable).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skipped: Option<String>,
    },
    /// A call whose changes cannot be undone: a shell command or another tool that writes.
    Command {
        turn: usize,
        call: String,
        text: String,
    },
    /// The conversation was rewound to before turn `to_turn`.
    Rewind { to_turn: usize, at: String },
}

/// `<state>/snapshots/<session id>`; `None` without a state directory or for an id that is
/// not a plain file name.
pub fn session_dir(state: &StatePaths, session: &str) -> Option<PathBuf> {
    let plain = !session.is_empty()
        && session != ".."
        && session != "."
        && !session.contains('/')
        && !session.contains('\0');
    let root = state.projects.parent()?;
    plain.then(|| root.join("snapshots").join(session))
}

/// Records, for one round of calls, what each changing call is about to touch.
pub struct Recorder {
    dir: PathBuf,
    turn: usize,
    /// The call ids of the round's runnable calls, by position.
    ids: Vec<String>,
}

impl Recorder {
    /// `None` when the run has no state directory (nothing can be kept).
    pub fn new(ctx: &ToolContext, session: &str, turn: usize, ids: Vec<String>) -> Option<Self> {
        let dir = session_dir(ctx.state.as_deref()?, session)?;
        Some(Recorder { dir, turn, ids })
    }

    /// Called right before call `i` of the round runs (only for calls that are not
    /// read-only, which run one at a time). A failure to record does not stop the call: the
    /// edit is the user's work, and a missing snapshot only means a rewind cannot offer it.
    pub fn before(&self, i: usize, call: &Prepared, ctx: &ToolContext) {
        let id = self.ids.get(i).cloned().unwrap_or_default();
        let _ = self.record(&id, call, ctx);
    }

    fn record(&self, id: &str, call: &Prepared, ctx: &ToolContext) -> io::Result<()> {
        let profile = call.tool.profile();
        let mut entries = Vec::new();
        match (profile.family, profile.subjects) {
            (Family::Writer, Subjects::Paths { keys, .. }) => {
                for key in keys {
                    let Some(shown) = call.args.get(*key).and_then(Value::as_str) else {
                        continue;
                    };
                    // A path the sandbox refuses is refused to the tool as well: nothing changes.
                    let Ok(path) = ctx.resolve_write_entry(shown) else {
                        continue;
                    };
                    entries.push(self.keep(id, path)?);
                }
            }
            (_, Subjects::Command(key)) => entries.push(Entry::Command {
                turn: self.turn,
                call: id.to_string(),
                text: call
                    .args
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            }),
            // Undeclared tools (MCP, plugins) may change anything; tools that name nothing
            // (todo, memory, questions to the user) do not touch the workspace.
            (_, Subjects::Undeclared) | (Family::Writer | Family::Shell, _) => {
                entries.push(Entry::Command {
                    turn: self.turn,
                    call: id.to_string(),
                    text: format!("{} {}", call.tool.name(), call.args),
                })
            }
            _ => {}
        }
        append(&self.dir, &entries)
    }

    /// Keeps the current content of `path` in a blob.
    fn keep(&self, id: &str, path: PathBuf) -> io::Result<Entry> {
        let (blob, skipped) = match read_current(&path) {
            Ok(None) => (None, None),
            Ok(Some(bytes)) => {
                let name = blob_name(self.turn, id);
                crate::fsutil::create_private_dir(&self.dir)?;
                crate::fsutil::write_private(&self.dir.join(&name), &bytes)?;
                (Some(name), None)
            }
            Err(why) => (None, Some(why)),
        };
        Ok(Entry::File {
            turn: self.turn,
            call: id.to_string(),
            path,
            blob,
            skipped,
        })
    }
}

/// The content of the file at `path` (absolute, symlink-free), `None` when it does not exist,
/// or why it is not kept.
fn read_current(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let entry = match beneath::Entry::open(path, Parents::Existing) {
        Ok(entry) => entry,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("not kept: {e}")),
    };
    let meta = match entry.metadata() {
        Ok(None) => return Ok(None),
        Ok(Some(meta)) => meta,
        Err(e) => return Err(format!("not kept: {e}")),
    };
    if meta.file_type().is_dir() {
        return Err("a directory, not kept".into());
    }
    if !meta.file_type().is_file() {
        return Err("not a regular file, not kept".into());
    }
    if meta.len() > SIZE_CAP {
        return Err(format!(
            "larger than {} MiB, not kept",
            SIZE_CAP / (1024 * 1024)
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let read = entry.open_existing().and_then(|file| match file {
        Some(file) => file.take(SIZE_CAP + 1).read_to_end(&mut bytes).map(Some),
        None => Ok(None),
    });
    match read {
        Ok(Some(_)) if bytes.len() as u64 > SIZE_CAP => Err(format!(
            "larger than {} MiB, not kept",
            SIZE_CAP / (1024 * 1024)
        )),
        Ok(Some(_)) => Ok(Some(bytes)),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("not kept: {e}")),
    }
}

/// A blob name unique within the session: the turn, the call (filesystem-safe) and a stamp.
fn blob_name(turn: usize, call: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let call: String = call
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(40)
        .collect();
    let nanos = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("t{turn}-{call}-{nanos:x}-{}-{n}.blob", std::process::id())
}

/// Appends entries to the index (created 0600 in a 0700 directory).
fn append(dir: &Path, entries: &[Entry]) -> io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    crate::fsutil::create_private_dir(dir)?;
    let mut text = String::new();
    for entry in entries {
        text.push_str(&serde_json::to_string(entry).unwrap_or_default());
        text.push('\n');
    }
    let mut file =
        crate::platform::create_mode(OpenOptions::new().create(true).append(true), 0o600)
            .open(dir.join(INDEX))?;
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

/// What rewinding to before a turn would do to files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Paths to put back, with the blob of their old content (`None`: remove the file).
    pub restore: Vec<(PathBuf, Option<String>)>,
    /// Paths changed since whose old content was not kept, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    /// Commands and other calls since that cannot be undone.
    pub commands: Vec<String>,
}

/// One session's snapshots, read from disk.
pub struct Store {
    dir: PathBuf,
    entries: Vec<Entry>,
}

impl Store {
    /// Reads the index; a missing one is an empty store, unreadable lines are skipped.
    pub fn open(dir: PathBuf) -> Store {
        let entries = fs::read_to_string(dir.join(INDEX))
            .map(|text| {
                text.split_inclusive('\n')
                    .filter(|line| line.ends_with('\n'))
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect()
            })
            .unwrap_or_default();
        Store { dir, entries }
    }

    /// What happened to files since turn `turn` began: for each path, the first snapshot
    /// taken after that point holds its content at that point. Turns since rewound away still
    /// count (their changes stayed on disk unless a rewind restored them, and then the first
    /// snapshot still holds the older content).
    pub fn plan(&self, turn: usize) -> Plan {
        // Entries before the last rewind to this turn or earlier belong to turns that were
        // replaced before this one began.
        let epoch = self
            .entries
            .iter()
            .rposition(|e| matches!(e, Entry::Rewind { to_turn, .. } if *to_turn <= turn))
            .map_or(0, |i| i + 1);
        let start = self.entries[epoch..]
            .iter()
            .position(|e| entry_turn(e).is_some_and(|t| t >= turn))
            .map_or(self.entries.len(), |i| epoch + i);
        let mut plan = Plan::default();
        let mut seen: HashSet<&Path> = HashSet::new();
        for entry in &self.entries[start..] {
            match entry {
                Entry::File {
                    path,
                    blob,
                    skipped,
                    ..
                } => {
                    if !seen.insert(path) {
                        continue;
                    }
                    match skipped {
                        Some(why) => plan.skipped.push((path.clone(), why.clone())),
                        None => plan.restore.push((path.clone(), blob.clone())),
                    }
                }
                Entry::Command { text, .. } => plan.commands.push(text.clone()),
                Entry::Rewind { .. } => {}
            }
        }
        plan
    }

    /// Puts the files of `plan` back through the sandbox's write checks and descriptor-relative
    /// writes; returns one sentence per path that could not be restored.
    pub fn restore(&self, plan: &Plan, ctx: &ToolContext) -> Vec<String> {
        let mut problems = Vec::new();
        for (path, blob) in &plan.restore {
            let done = match blob {
                Some(blob) => self.put_back(path, blob, ctx),
                None => remove_created(path, ctx),
            };
            if let Err(why) = done {
                problems.push(format!("{}: {why}", path.display()));
            }
        }
        problems
    }

    fn put_back(&self, path: &Path, blob: &str, ctx: &ToolContext) -> Result<(), String> {
        let bytes = fs::read(self.dir.join(blob)).map_err(|e| format!("snapshot lost: {e}"))?;
        let checked = ctx.sandbox.check_write(path).map_err(|e| e.to_string())?;
        beneath::Entry::open(&checked, Parents::Create)
            .and_then(|entry| entry.replace(&bytes))
            .map_err(|e| e.to_string())
    }

    /// Records that the conversation went back to before `turn`.
    pub fn rewound(&self, turn: usize) -> io::Result<()> {
        append(
            &self.dir,
            &[Entry::Rewind {
                to_turn: turn,
                at: crate::clock::rfc3339(SystemTime::now()),
            }],
        )
    }
}

/// Removes a file that did not exist before the turn; anything but a regular file is left.
fn remove_created(path: &Path, ctx: &ToolContext) -> Result<(), String> {
    let checked = ctx
        .sandbox
        .check_write_entry(path)
        .map_err(|e| e.to_string())?;
    let entry = match beneath::Entry::open(&checked, Parents::Existing) {
        Ok(entry) => entry,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    match entry.metadata().map_err(|e| e.to_string())? {
        None => Ok(()),
        Some(meta) if meta.file_type().is_file() => entry.remove_tree().map_err(|e| e.to_string()),
        Some(_) => Err("created as something other than a file; left in place".into()),
    }
}

fn entry_turn(entry: &Entry) -> Option<usize> {
    match entry {
        Entry::File { turn, .. } | Entry::Command { turn, .. } => Some(*turn),
        Entry::Rewind { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use crate::tool::builtin;
    use serde_json::json;
    use std::sync::Arc;

    struct Fixture {
        _dir: TempDir,
        work: PathBuf,
        ctx: ToolContext,
        snapshots: PathBuf,
    }

    fn fixture(name: &str) -> Fixture {
        let dir = TempDir::new(name);
        let work = dir.join("work");
        fs::create_dir_all(&work).unwrap();
        let work = work.canonicalize().unwrap();
        let state = dir.join("state");
        let mut ctx = ToolContext::new(work.clone());
        ctx.state = Some(Arc::new(StatePaths::new(
            &state,
            state.join("projects/p/sessions"),
        )));
        let snapshots = state.join("snapshots").join("s1");
        Fixture {
            _dir: dir,
            work,
            ctx,
            snapshots,
        }
    }

    fn tool(name: &str) -> Arc<dyn crate::tool::Tool> {
        builtin::all()
            .into_iter()
            .find(|t| t.name() == name)
            .unwrap()
    }

    /// Runs one call the way a round does: recorded first, then executed.
    fn run(f: &Fixture, turn: usize, id: &str, name: &str, args: Value) {
        let call = Prepared {
            id: String::new(),
            tool: tool(name),
            args,
        };
        let recorder = Recorder::new(&f.ctx, "s1", turn, vec![id.to_string()]).unwrap();
        recorder.before(0, &call, &f.ctx);
        if call.tool.family() != Family::Shell {
            call.tool.execute(&call.args, &f.ctx).unwrap();
        }
    }

    fn edit(path: &str, old: &str, new: &str) -> Value {
        json!({"path": path, "old_string": old, "new_string": new})
    }

    #[test]
    fn a_plan_puts_back_what_files_were_before_a_turn() {
        let f = fixture("snap-plan");
        run(
            &f,
            1,
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "one\n"}),
        );
        run(&f, 2, "c2", "edit_file", edit("a.txt", "one", "two"));
        run(
            &f,
            2,
            "c3",
            "bash",
            json!({"command": "touch made-by-bash"}),
        );
        run(
            &f,
            2,
            "c4",
            "write_file",
            json!({"path": "b.txt", "content": "new\n"}),
        );
        run(&f, 3, "c5", "edit_file", edit("a.txt", "two", "three"));
        let store = Store::open(f.snapshots.clone());
        let plan = store.plan(2);
        assert_eq!(
            plan.restore
                .iter()
                .map(|(p, b)| (p.clone(), b.is_some()))
                .collect::<Vec<_>>(),
            [(f.work.join("a.txt"), true), (f.work.join("b.txt"), false)]
        );
        assert_eq!(plan.commands, ["touch made-by-bash"]);
        assert!(plan.skipped.is_empty());
        assert_eq!(store.restore(&plan, &f.ctx), Vec::<String>::new());
        assert_eq!(fs::read_to_string(f.work.join("a.txt")).unwrap(), "one\n");
        assert!(!f.work.join("b.txt").exists());
        // Before the first turn a.txt did not exist.
        assert_eq!(
            store.plan(1).restore.first(),
            Some(&(f.work.join("a.txt"), None))
        );
        assert_eq!(store.plan(4), Plan::default());
    }

    #[test]
    fn a_turn_after_a_rewind_is_told_apart_from_the_one_it_replaced() {
        let f = fixture("snap-epochs");
        run(
            &f,
            1,
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "v1\n"}),
        );
        run(&f, 2, "c2", "edit_file", edit("a.txt", "v1", "v2"));
        // Rewound without restoring: a.txt stays "v2", the new turn 2 starts from there.
        Store::open(f.snapshots.clone()).rewound(2).unwrap();
        run(&f, 2, "c3", "edit_file", edit("a.txt", "v2", "v3"));
        let store = Store::open(f.snapshots.clone());
        let blob = |plan: Plan| {
            let (_, blob) = plan.restore[0].clone();
            blob.map(|b| fs::read_to_string(f.snapshots.join(b)).unwrap())
        };
        assert_eq!(blob(store.plan(2)).as_deref(), Some("v2\n"));
        // Before turn 1 the file was absent, whatever was rewound since.
        assert_eq!(blob(store.plan(1)), None);
    }

    #[test]
    fn large_files_are_listed_but_not_kept_and_the_store_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let f = fixture("snap-large");
        let big = "x".repeat(SIZE_CAP as usize + 1);
        fs::write(f.work.join("big.txt"), &big).unwrap();
        fs::write(f.work.join("small.txt"), "s\n").unwrap();
        run(
            &f,
            1,
            "c1",
            "write_file",
            json!({"path": "big.txt", "content": "y"}),
        );
        run(
            &f,
            1,
            "c2",
            "write_file",
            json!({"path": "small.txt", "content": "t"}),
        );
        let plan = Store::open(f.snapshots.clone()).plan(1);
        assert_eq!(
            plan.skipped,
            [(
                f.work.join("big.txt"),
                "larger than 4 MiB, not kept".to_string()
            )]
        );
        assert_eq!(plan.restore.len(), 1);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&f.snapshots), 0o700);
        assert_eq!(mode(&f.snapshots.join(INDEX)), 0o600);
        let blob = plan.restore[0].1.clone().unwrap();
        assert_eq!(mode(&f.snapshots.join(blob)), 0o600);
    }

    #[test]
    fn a_torn_index_line_is_skipped() {
        let f = fixture("snap-torn");
        run(
            &f,
            1,
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "v1\n"}),
        );
        let mut index = OpenOptions::new()
            .append(true)
            .open(f.snapshots.join(INDEX))
            .unwrap();
        index
            .write_all(b"{\"kind\":\"file\",\"turn\":1,\"ca")
            .unwrap();
        let plan = Store::open(f.snapshots.clone()).plan(1);
        assert_eq!(plan.restore, [(f.work.join("a.txt"), None)]);
    }

    #[test]
    fn restoring_refuses_paths_the_sandbox_refuses() {
        let f = fixture("snap-sandbox");
        let outside = f.work.parent().unwrap().join("outside.txt");
        fs::write(&outside, "keep\n").unwrap();
        let store = Store::open(f.snapshots.clone());
        let plan = Plan {
            restore: vec![(outside.clone(), None)],
            ..Plan::default()
        };
        let problems = store.restore(&plan, &f.ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(outside.exists());
    }

    /// A tool of family Other that is not read-only, declaring `subjects`.
    struct Other(Subjects);

    impl crate::tool::Tool for Other {
        fn name(&self) -> &str {
            "other"
        }
        fn description(&self) -> &str {
            "test"
        }
        fn schema(&self) -> Value {
            Value::Null
        }
        fn family(&self) -> Family {
            Family::Other
        }
        fn read_only(&self) -> bool {
            false
        }
        fn subjects(&self) -> Subjects {
            self.0
        }
        fn execute(&self, _: &Value, _: &ToolContext) -> Result<String, crate::tool::ToolError> {
            Ok(String::new())
        }
    }

    #[test]
    fn undeclared_tools_are_not_restorable_and_tools_naming_nothing_are_not_listed() {
        let f = fixture("snap-other");
        let recorder = Recorder::new(&f.ctx, "s1", 1, vec!["c1".into(), "c2".into()]).unwrap();
        for (i, subjects) in [Subjects::Nothing, Subjects::Undeclared]
            .into_iter()
            .enumerate()
        {
            let call = Prepared {
                id: String::new(),
                tool: Arc::new(Other(subjects)),
                args: json!({"x": 1}),
            };
            recorder.before(i, &call, &f.ctx);
        }
        let plan = Store::open(f.snapshots.clone()).plan(1);
        assert_eq!(plan.commands, ["other {\"x\":1}"]);
    }

    #[test]
    fn session_ids_that_are_not_file_names_get_no_directory() {
        let state = StatePaths::new(Path::new("/s"), PathBuf::from("/s/projects/p/sessions"));
        assert_eq!(
            session_dir(&state, "abc"),
            Some(PathBuf::from("/s/snapshots/abc"))
        );
        for bad in ["", "..", "a/b"] {
            assert_eq!(session_dir(&state, bad), None, "{bad}");
        }
    }
}
