//! What the page shows of a file edit: the unified diff of the file's text before and after,
//! with line numbers, as JSON the page renders line by line. An approval shows the file as it
//! is against the text the call would leave (the chat's `term::modal::after_call`); a
//! result shows snapshots taken around the call, as the chat's transcript does. The edit
//! script is `term::diff`'s. Only files inside the workspace are read, and only small UTF-8
//! ones: the path is the model's choice, and the page must not become a way to read files the
//! user never opened to it (a diff of `~/.ssh/id_rsa` would show the key).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::agent::events::Event;
use crate::term::diff::{self, Op};

/// Files larger than this are not diffed.
const FILE_CAP: u64 = 1024 * 1024;
/// Lines of a diff the page gets; the rest are counted.
const LINES_CAP: usize = 400;
/// Unchanged lines around each change.
const CONTEXT: usize = 3;

/// `path` resolved against the workspace `cwd`, when it names a place inside it (symbolic
/// links resolved, so a link inside cannot point out); a file that does not exist yet counts
/// when its directory is inside.
fn inside(cwd: &Path, path: &str) -> Option<PathBuf> {
    let root = cwd.canonicalize().ok()?;
    let full = cwd.join(path);
    let resolved = match full.canonicalize() {
        Ok(resolved) => resolved,
        Err(_) => full.parent()?.canonicalize().ok()?.join(full.file_name()?),
    };
    resolved.starts_with(&root).then_some(resolved)
}

/// The text of a file inside the workspace; `""` for one that does not exist yet. `None`:
/// outside the workspace, too large, not UTF-8 or not readable.
fn read(cwd: &Path, path: &str) -> Option<String> {
    let full = inside(cwd, path)?;
    match std::fs::metadata(&full) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(String::new()),
        Err(_) => None,
        Ok(meta) if !meta.is_file() || meta.len() > FILE_CAP => None,
        Ok(_) => {
            // At most the cap is read even if the file grew since its size was looked at.
            let mut bytes = Vec::new();
            let file = std::fs::File::open(&full).ok()?;
            // A folder on the way may have been swapped for a link since `inside` looked: what
            // counts is where the opened file really is.
            if !opened_inside(&file, cwd) {
                return None;
            }
            file.take(FILE_CAP + 1).read_to_end(&mut bytes).ok()?;
            if bytes.len() as u64 > FILE_CAP {
                return None;
            }
            String::from_utf8(bytes).ok()
        }
    }
}

/// Whether the open `file` lies inside the workspace `cwd`, judged by the path the kernel
/// holds for it (`/proc/self/fd`), so no rename or link after the path was checked counts.
/// Where that path cannot be read the answer is no: nothing is shown.
#[cfg(unix)]
fn opened_inside(file: &std::fs::File, cwd: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(root) = cwd.canonicalize() else {
        return false;
    };
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .is_ok_and(|real| real.starts_with(&root))
}

/// Without `/proc` the opened file's place cannot be confirmed, so no file is shown.
#[cfg(not(unix))]
fn opened_inside(_file: &std::fs::File, _cwd: &Path) -> bool {
    false
}

/// The diff an approval of `tool` with `args` shows: the file now against what the call would
/// leave. `None` for a tool that edits no file, or a file that is not shown.
pub fn proposed(tool: &str, args: &Value, cwd: &Path) -> Option<Value> {
    let path = args.get("path").and_then(Value::as_str)?;
    // The text checked by `read` is the one diffed: reading the path again could follow a
    // link swapped in meanwhile.
    let before = read(cwd, path)?;
    let after = crate::term::modal::after_call(tool, args, &before)?;
    Some(diff_json(path, &before, &after))
}

/// `{"path", "added", "removed", "lines": [{"kind": "hunk"|"keep"|"del"|"add", "line", "text"}],
/// "omitted"}`: a line's number is in the new text, or in the old one for a deleted line.
pub fn diff_json(path: &str, before: &str, after: &str) -> Value {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let ops = diff::diff_lines(&old, &new);
    let (added, removed) = diff::stats(&ops);
    let mut lines = Vec::new();
    for hunk in diff::hunks(&ops, CONTEXT) {
        lines.push(json!({
            "kind": "hunk",
            "text": format!(
                "@@ -{},{} +{},{} @@",
                hunk.old_start, hunk.old_len, hunk.new_start, hunk.new_len
            ),
        }));
        for op in &hunk.ops {
            let (kind, line, text) = match *op {
                Op::Keep(_, j) => ("keep", j + 1, new[j]),
                Op::Delete(i) => ("del", i + 1, old[i]),
                Op::Insert(j) => ("add", j + 1, new[j]),
            };
            lines.push(json!({"kind": kind, "line": line, "text": text}));
        }
    }
    let omitted = lines.len().saturating_sub(LINES_CAP);
    lines.truncate(LINES_CAP);
    json!({
        "path": path,
        "added": added,
        "removed": removed,
        "lines": lines,
        "omitted": omitted,
    })
}

/// The files a turn's calls are editing, read when each call starts, so its result can carry
/// the diff of what it did.
pub struct Snapshots {
    cwd: PathBuf,
    /// Call id -> (the path as the call named it, its text before).
    before: HashMap<String, (String, String)>,
}

impl Snapshots {
    pub fn new(cwd: &Path) -> Snapshots {
        Snapshots {
            cwd: cwd.to_path_buf(),
            before: HashMap::new(),
        }
    }

    /// Reads the file a starting call edits; at a result, the diff of what the call did.
    pub fn watch(&mut self, event: &Event) -> Option<Value> {
        match event {
            Event::ToolUse {
                id,
                arguments,
                family,
                ..
            } => {
                let path = crate::term::transcript::edited_path(*family, arguments)?;
                let before = read(&self.cwd, &path)?;
                self.before.insert(id.clone(), (path, before));
                None
            }
            Event::ToolResult { id, is_error, .. } => {
                let (path, before) = self.before.remove(id)?;
                if *is_error {
                    return None;
                }
                let after = read(&self.cwd, &path)?;
                Some(diff_json(&path, &before, &after))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn lines(diff: &Value) -> Vec<String> {
        diff["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| match l["kind"].as_str().unwrap() {
                "hunk" => l["text"].as_str().unwrap().to_string(),
                kind => format!("{kind} {} {}", l["line"], l["text"].as_str().unwrap()),
            })
            .collect()
    }

    #[test]
    fn a_diff_has_hunks_context_and_line_numbers() {
        let before: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let after = before.replace("l5\n", "five\n");
        let diff = diff_json("a.txt", &before, &after);
        assert_eq!(diff["path"], "a.txt");
        assert_eq!(
            (diff["added"].as_u64(), diff["removed"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(
            lines(&diff),
            vec![
                "@@ -2,7 +2,7 @@",
                "keep 2 l2",
                "keep 3 l3",
                "keep 4 l4",
                "del 5 l5",
                "add 5 five",
                "keep 6 l6",
                "keep 7 l7",
                "keep 8 l8",
            ]
        );
        assert_eq!(diff["omitted"], 0);
        assert!(lines(&diff_json("a.txt", "same\n", "same\n")).is_empty());
    }

    #[test]
    fn a_long_diff_is_cut_and_counted() {
        let after: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let diff = diff_json("big.txt", "", &after);
        assert_eq!(diff["lines"].as_array().unwrap().len(), LINES_CAP);
        assert_eq!(diff["omitted"], 1001 - LINES_CAP);
        assert_eq!(diff["added"], 1000);
    }

    #[test]
    fn approvals_diff_the_real_file() {
        let dir = TempDir::new("edits");
        dir.write("a.txt", "one\ntwo\nthree\n");
        let args = json!({"path": "a.txt", "old_string": "two", "new_string": "2"});
        let diff = proposed("edit_file", &args, dir.path()).unwrap();
        assert_eq!(
            lines(&diff),
            vec![
                "@@ -1,3 +1,3 @@",
                "keep 1 one",
                "del 2 two",
                "add 2 2",
                "keep 3 three"
            ]
        );
        let new = json!({"path": "sub/new.txt", "content": "fresh\n"});
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let diff = proposed("write_file", &new, dir.path()).unwrap();
        assert_eq!(lines(&diff), vec!["@@ -0,0 +1,1 @@", "add 1 fresh"]);
        assert!(proposed("bash", &json!({"command": "ls"}), dir.path()).is_none());
    }

    #[test]
    fn large_and_non_utf8_files_are_not_diffed() {
        let dir = TempDir::new("edits-kinds");
        let big = "x".repeat(FILE_CAP as usize) + "\n";
        dir.write("big.txt", big);
        let args = json!({"path": "big.txt", "content": "small\n"});
        assert!(proposed("write_file", &args, dir.path()).is_none());
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        let args = json!({"path": "latin1.txt", "content": "cafe\n"});
        assert!(proposed("write_file", &args, dir.path()).is_none());
        // At the cap exactly, the file is still shown.
        dir.write("edge.txt", "y".repeat(FILE_CAP as usize));
        let args = json!({"path": "edge.txt", "content": "small\n"});
        assert!(proposed("write_file", &args, dir.path()).is_some());
    }

    #[test]
    fn files_outside_the_workspace_are_never_read() {
        let outside = TempDir::new("edits-outside");
        outside.write("secret", "the key\n");
        let work = TempDir::new("edits-work");
        let secret = outside.path().join("secret");
        let absolute = json!({"path": secret.to_str().unwrap(), "content": "x\n"});
        assert!(proposed("write_file", &absolute, work.path()).is_none());
        let up = format!(
            "../{}/secret",
            outside.path().file_name().unwrap().to_str().unwrap()
        );
        let dotted = json!({"path": up, "content": "x\n"});
        assert!(proposed("write_file", &dotted, work.path()).is_none());
        std::os::unix::fs::symlink(&secret, work.path().join("link")).unwrap();
        let linked = json!({"path": "link", "old_string": "the key", "new_string": "x"});
        assert!(proposed("edit_file", &linked, work.path()).is_none());
    }
}
