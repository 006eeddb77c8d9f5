//! The file tools (read_file, write_file, edit_file, multi_edit, move_file) and todo_write,
//! driven through the `Tool` trait on real files in temp dirs; `reasonix tools` through the
//! real binary; and the check that docs/TOOL_CONTRACT.md matches the registry.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Arc;

use reasonix::tool::builtin::todo::{TodoItem, TodoStatus};
use reasonix::tool::{builtin, contract, Registry, Tool, ToolContext, ToolError};
use serde_json::{json, Value};

use crate::util::{reasonix, run, Dir};

fn tool(name: &str) -> Arc<dyn Tool> {
    builtin::all()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no built-in tool {name}"))
}

fn context(dir: &Dir) -> ToolContext {
    ToolContext::new(dir.path().to_path_buf())
}

fn call(dir: &Dir, name: &str, args: Value) -> Result<String, ToolError> {
    tool(name).execute(&args, &context(dir))
}

fn ok(result: Result<String, ToolError>) -> String {
    match result {
        Ok(text) => text,
        Err(e) => panic!("expected success, got {e:?}"),
    }
}

fn failed(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(text)) => text,
        other => panic!("expected ToolError::Failed, got {other:?}"),
    }
}

fn invalid(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArgs(text)) => text,
        other => panic!("expected ToolError::InvalidArgs, got {other:?}"),
    }
}

fn numbered(lines: &[(u64, &str)]) -> String {
    lines
        .iter()
        .map(|(n, l)| format!("{n:>6}\t{l}\n"))
        .collect()
}

fn mode(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

// ---- read_file ----

#[test]
fn read_file_numbers_lines_like_cat_n() {
    let dir = Dir::new();
    dir.write("a.txt", "one\ntwo\n\tthree\n");
    let out = ok(call(&dir, "read_file", json!({"path": "a.txt"})));
    assert_eq!(out, numbered(&[(1, "one"), (2, "two"), (3, "\tthree")]));
    let abs = dir.join("a.txt").display().to_string();
    assert_eq!(ok(call(&dir, "read_file", json!({"path": abs}))), out);
}

#[test]
fn read_file_pages_with_offset_and_limit_and_hints_the_next_offset() {
    let dir = Dir::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    dir.write("ten.txt", &text);
    let out = ok(call(
        &dir,
        "read_file",
        json!({"path": "ten.txt", "offset": 3, "limit": 4}),
    ));
    let mut expected = numbered(&[(3, "line 3"), (4, "line 4"), (5, "line 5"), (6, "line 6")]);
    expected.push_str("... 4 more lines; call read_file with offset=7 to continue\n");
    assert_eq!(out, expected);
    // The last page has no hint; a numeric string is accepted for offset.
    let tail = ok(call(
        &dir,
        "read_file",
        json!({"path": "ten.txt", "offset": "9"}),
    ));
    assert_eq!(tail, numbered(&[(9, "line 9"), (10, "line 10")]));
}

#[test]
fn read_file_defaults_to_2000_lines() {
    let dir = Dir::new();
    let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    dir.write("long.txt", &text);
    let out = ok(call(&dir, "read_file", json!({"path": "long.txt"})));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2001, "{}", lines[lines.len() - 1]);
    assert_eq!(lines[1999], "  2000\t2000");
    assert_eq!(
        lines[2000],
        "... 500 more lines; call read_file with offset=2001 to continue"
    );
}

#[test]
fn read_file_truncates_long_lines_with_a_marker() {
    let dir = Dir::new();
    dir.write("wide.txt", &format!("{}\nshort\n", "x".repeat(2500)));
    let out = ok(call(&dir, "read_file", json!({"path": "wide.txt"})));
    let first = out.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "     1\t{}... [line truncated: 500 more characters]",
            "x".repeat(2000)
        )
    );
    assert!(out.ends_with("     2\tshort\n"), "{out}");
}

#[test]
fn read_file_refuses_directories_missing_files_and_binaries() {
    let dir = Dir::new();
    fs::create_dir(dir.join("sub")).unwrap();
    let err = failed(call(&dir, "read_file", json!({"path": "sub"})));
    assert!(
        err.contains("sub is a directory") && err.contains("use ls"),
        "{err}"
    );

    let err = failed(call(&dir, "read_file", json!({"path": "nope.txt"})));
    assert!(err.contains("nope.txt does not exist"), "{err}");

    fs::write(
        dir.join("prog"),
        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0",
    )
    .unwrap();
    let err = failed(call(&dir, "read_file", json!({"path": "prog"})));
    assert!(err.contains("prog is a binary file"), "{err}");

    fs::write(dir.join("latin1.txt"), b"caf\xe9\n").unwrap();
    let err = failed(call(&dir, "read_file", json!({"path": "latin1.txt"})));
    assert!(
        err.contains("not UTF-8 or UTF-16 text (invalid byte at offset 3)"),
        "{err}"
    );
}

#[test]
fn read_file_validates_its_arguments() {
    let dir = Dir::new();
    dir.write("a.txt", "a\n");
    let err = invalid(call(&dir, "read_file", json!({})));
    assert_eq!(err, "missing required parameter `path`");
    let err = invalid(call(
        &dir,
        "read_file",
        json!({"path": "a.txt", "limit": 0}),
    ));
    assert!(err.contains("`limit` must be at least 1"), "{err}");
    let err = invalid(call(
        &dir,
        "read_file",
        json!({"path": "a.txt", "offset": -2}),
    ));
    assert!(
        err.contains("`offset` must be a non-negative integer"),
        "{err}"
    );
}

#[test]
fn read_file_decodes_boms_and_utf16_and_hides_crlf() {
    let dir = Dir::new();
    fs::write(dir.join("bom.txt"), b"\xEF\xBB\xBFfirst\nsecond\n").unwrap();
    let mut le = vec![0xFF, 0xFE];
    let mut be = vec![0xFE, 0xFF];
    for unit in "h\u{e9}llo\r\nw\u{f6}rld\r\n".encode_utf16() {
        le.extend_from_slice(&unit.to_le_bytes());
        be.extend_from_slice(&unit.to_be_bytes());
    }
    fs::write(dir.join("le.txt"), &le).unwrap();
    fs::write(dir.join("be.txt"), &be).unwrap();
    fs::write(dir.join("crlf.txt"), b"a\r\nb\r\n").unwrap();

    assert_eq!(
        ok(call(&dir, "read_file", json!({"path": "bom.txt"}))),
        numbered(&[(1, "first"), (2, "second")])
    );
    let utf16 = numbered(&[(1, "h\u{e9}llo"), (2, "w\u{f6}rld")]);
    assert_eq!(
        ok(call(&dir, "read_file", json!({"path": "le.txt"}))),
        utf16
    );
    assert_eq!(
        ok(call(&dir, "read_file", json!({"path": "be.txt"}))),
        utf16
    );
    assert_eq!(
        ok(call(&dir, "read_file", json!({"path": "crlf.txt"}))),
        numbered(&[(1, "a"), (2, "b")])
    );
}

#[test]
fn read_file_reports_empty_files_and_offsets_past_the_end() {
    let dir = Dir::new();
    dir.write("empty.txt", "");
    assert_eq!(
        ok(call(&dir, "read_file", json!({"path": "empty.txt"}))),
        "empty.txt is empty (no lines)"
    );
    dir.write("three.txt", "a\nb\nc");
    let err = failed(call(
        &dir,
        "read_file",
        json!({"path": "three.txt", "offset": 10}),
    ));
    assert_eq!(
        err,
        "offset 10 is past the end of three.txt, which has 3 lines; use an offset from 1 to 3"
    );
}

#[test]
fn read_file_pages_a_file_too_large_to_load_whole() {
    let dir = Dir::new();
    // 11 MiB: above the 10 MiB whole-file limit, so it is streamed.
    let line = format!("{}\n", "y".repeat(99));
    let count = 11 * 1024 * 1024 / line.len() + 1;
    let mut text = String::with_capacity(count * line.len());
    for i in 1..=count {
        if i == 70_000 {
            text.push_str("needle\n");
        } else {
            text.push_str(&line);
        }
    }
    dir.write("big.log", &text);
    let out = ok(call(
        &dir,
        "read_file",
        json!({"path": "big.log", "offset": 70_000, "limit": 1}),
    ));
    assert_eq!(
        out,
        format!(
            " 70000\tneedle\n... {} more lines; call read_file with offset=70001 to continue\n",
            count - 70_000
        )
    );
}

// ---- write_file ----

#[test]
fn write_file_creates_parents_and_reports_what_it_did() {
    let dir = Dir::new();
    let out = ok(call(
        &dir,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "x\ny\n"}),
    ));
    assert_eq!(out, "Created a/b/c.txt (2 lines, 4 bytes)");
    assert_eq!(dir.read("a/b/c.txt"), "x\ny\n");

    let out = ok(call(
        &dir,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "z\n"}),
    ));
    assert_eq!(out, "Overwrote a/b/c.txt (1 line, 2 bytes)");
    assert_eq!(dir.read("a/b/c.txt"), "z\n");
}

#[test]
fn write_file_detects_identical_content_and_leaves_the_file_alone() {
    let dir = Dir::new();
    let path = dir.write("same.txt", "keep\n");
    let inode = fs::metadata(&path).unwrap().ino();
    let out = ok(call(
        &dir,
        "write_file",
        json!({"path": "same.txt", "content": "keep\n"}),
    ));
    assert_eq!(
        out,
        "same.txt unchanged: it already has exactly this content"
    );
    // An atomic write would have renamed a new inode into place.
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
}

#[test]
fn write_file_keeps_mode_crlf_and_utf16_of_an_existing_file() {
    let dir = Dir::new();
    let script = dir.write("run.sh", "#!/bin/sh\n");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o754)).unwrap();
    ok(call(
        &dir,
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    ));
    assert_eq!(mode(&script), 0o754);
    assert_eq!(dir.read("run.sh"), "#!/bin/sh\necho hi\n");

    dir.write("win.txt", "a\r\nb\r\n");
    let out = ok(call(
        &dir,
        "write_file",
        json!({"path": "win.txt", "content": "a\nb\nc\n"}),
    ));
    assert!(
        out.ends_with("; kept the file's CRLF line endings"),
        "{out}"
    );
    assert_eq!(dir.read("win.txt"), "a\r\nb\r\nc\r\n");

    fs::write(dir.join("u16.txt"), b"\xFF\xFEo\0l\0d\0").unwrap();
    let out = ok(call(
        &dir,
        "write_file",
        json!({"path": "u16.txt", "content": "new"}),
    ));
    assert!(out.contains("UTF-16LE encoding"), "{out}");
    assert_eq!(fs::read(dir.join("u16.txt")).unwrap(), b"\xFF\xFEn\0e\0w\0");
}

#[test]
fn write_file_through_a_symlink_keeps_the_link() {
    let dir = Dir::new();
    dir.write("real.txt", "old\n");
    std::os::unix::fs::symlink("real.txt", dir.join("link.txt")).unwrap();
    ok(call(
        &dir,
        "write_file",
        json!({"path": "link.txt", "content": "new\n"}),
    ));
    assert!(fs::symlink_metadata(dir.join("link.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(dir.read("real.txt"), "new\n");
}

#[test]
fn write_file_refuses_a_directory_and_validates_arguments() {
    let dir = Dir::new();
    fs::create_dir(dir.join("d")).unwrap();
    let err = failed(call(
        &dir,
        "write_file",
        json!({"path": "d", "content": ""}),
    ));
    assert!(err.contains("d is a directory"), "{err}");
    let err = invalid(call(&dir, "write_file", json!({"path": "x"})));
    assert_eq!(err, "missing required parameter `content`");
}

// ---- edit_file ----

#[test]
fn edit_file_replaces_one_match_and_shows_the_change() {
    let dir = Dir::new();
    dir.write("m.rs", "fn a() {}\nfn b() {\n    1\n}\nfn c() {}\n");
    let out = ok(call(
        &dir,
        "edit_file",
        json!({"path": "m.rs", "old_string": "    1\n", "new_string": "    2\n    3\n"}),
    ));
    assert_eq!(
        dir.read("m.rs"),
        "fn a() {}\nfn b() {\n    2\n    3\n}\nfn c() {}\n"
    );
    let mut expected = String::from("Edited m.rs: replaced 1 occurrence.\n");
    expected.push_str(&numbered(&[
        (1, "fn a() {}"),
        (2, "fn b() {"),
        (3, "    2"),
        (4, "    3"),
        (5, "}"),
        (6, "fn c() {}"),
    ]));
    assert_eq!(out, expected);
}

#[test]
fn edit_file_not_unique_lists_the_lines_and_replace_all_replaces_them() {
    let dir = Dir::new();
    let original = "x = 1\ny = 2\nx = 1\nz = 3\n\nx = 1\n";
    dir.write("v.py", original);
    let err = failed(call(
        &dir,
        "edit_file",
        json!({"path": "v.py", "old_string": "x = 1", "new_string": "x = 9"}),
    ));
    assert!(
        err.starts_with("`old_string` matches 3 times in v.py (lines 1, 3, 6);"),
        "{err}"
    );
    assert!(err.contains("replace_all"), "{err}");
    assert_eq!(dir.read("v.py"), original);

    let out = ok(call(
        &dir,
        "edit_file",
        json!({"path": "v.py", "old_string": "x = 1", "new_string": "x = 9", "replace_all": true}),
    ));
    assert!(
        out.starts_with("Edited v.py: replaced 3 occurrences (the first is shown)."),
        "{out}"
    );
    assert_eq!(dir.read("v.py"), "x = 9\ny = 2\nx = 9\nz = 3\n\nx = 9\n");
}

#[test]
fn edit_file_not_found_says_so_and_hints_at_whitespace_differences() {
    let dir = Dir::new();
    dir.write("t.go", "func main() {\n\tfmt.Println(\"hi\")\n}\n");
    let err = failed(call(
        &dir,
        "edit_file",
        json!({"path": "t.go", "old_string": "    fmt.Println(\"hi\")", "new_string": "x"}),
    ));
    assert!(
        err.starts_with("`old_string` was not found in t.go;"),
        "{err}"
    );
    assert!(
        err.contains("differs only in whitespace or indentation starts at line 2"),
        "{err}"
    );
    let err = failed(call(
        &dir,
        "edit_file",
        json!({"path": "t.go", "old_string": "absent", "new_string": "x"}),
    ));
    assert_eq!(
        err,
        "`old_string` was not found in t.go; read the file again and copy the exact text, \
         including whitespace and indentation"
    );
}

#[test]
fn edit_file_rejects_useless_edits_and_missing_files() {
    let dir = Dir::new();
    dir.write("a.txt", "a\n");
    let err = invalid(call(
        &dir,
        "edit_file",
        json!({"path": "a.txt", "old_string": "a", "new_string": "a"}),
    ));
    assert!(err.contains("identical"), "{err}");
    let err = invalid(call(
        &dir,
        "edit_file",
        json!({"path": "new.txt", "old_string": "", "new_string": "hello"}),
    ));
    assert!(err.contains("use write_file"), "{err}");
    let err = failed(call(
        &dir,
        "edit_file",
        json!({"path": "new.txt", "old_string": "a", "new_string": "b"}),
    ));
    assert!(
        err.contains("new.txt does not exist; use write_file"),
        "{err}"
    );
    assert!(!dir.join("new.txt").exists());
}

#[test]
fn edit_file_keeps_crlf_line_endings() {
    let dir = Dir::new();
    fs::write(dir.join("w.txt"), b"one\r\ntwo\r\nthree\r\n").unwrap();
    ok(call(
        &dir,
        "edit_file",
        json!({"path": "w.txt", "old_string": "one\ntwo\n", "new_string": "1\n2\n2.5\n"}),
    ));
    assert_eq!(
        fs::read(dir.join("w.txt")).unwrap(),
        b"1\r\n2\r\n2.5\r\nthree\r\n"
    );
}

#[test]
fn edit_file_keeps_mode_encoding_and_symlinks() {
    let dir = Dir::new();
    let script = dir.write("s.sh", "echo old\n");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink("s.sh", dir.join("alias.sh")).unwrap();
    ok(call(
        &dir,
        "edit_file",
        json!({"path": "alias.sh", "old_string": "old", "new_string": "new"}),
    ));
    assert_eq!(dir.read("s.sh"), "echo new\n");
    assert_eq!(mode(&script), 0o700);
    assert!(fs::symlink_metadata(dir.join("alias.sh"))
        .unwrap()
        .file_type()
        .is_symlink());

    fs::write(dir.join("be.txt"), b"\xFE\xFF\0a\0b\0c").unwrap();
    ok(call(
        &dir,
        "edit_file",
        json!({"path": "be.txt", "old_string": "b", "new_string": "B"}),
    ));
    assert_eq!(fs::read(dir.join("be.txt")).unwrap(), b"\xFE\xFF\0a\0B\0c");
}

// ---- multi_edit ----

#[test]
fn multi_edit_applies_edits_in_order_on_the_running_result() {
    let dir = Dir::new();
    dir.write("c.txt", "alpha beta\ngamma\n");
    let out = ok(call(
        &dir,
        "multi_edit",
        json!({"path": "c.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "ALPHA beta", "new_string": "AB"},
            {"old_string": "a", "new_string": "4", "replace_all": true}
        ]}),
    ));
    assert_eq!(dir.read("c.txt"), "AB\ng4mm4\n");
    assert!(out.starts_with("Edited c.txt: applied 3 edits"), "{out}");
    assert!(
        out.contains("  edits[2]: 2 replacements at line 2"),
        "{out}"
    );
}

#[test]
fn multi_edit_writes_nothing_when_a_later_edit_fails() {
    let dir = Dir::new();
    let original = "one\ntwo\nthree\n";
    let path = dir.write("f.txt", original);
    let inode = fs::metadata(&path).unwrap().ino();
    let err = failed(call(
        &dir,
        "multi_edit",
        json!({"path": "f.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "four", "new_string": "4"}
        ]}),
    ));
    assert!(
        err.starts_with("edits[1] failed: `old_string` was not found"),
        "{err}"
    );
    assert!(
        err.ends_with("No edits were applied; f.txt is unchanged"),
        "{err}"
    );
    assert_eq!(dir.read("f.txt"), original);
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);

    // Text an earlier edit consumed gets its own explanation.
    let err = failed(call(
        &dir,
        "multi_edit",
        json!({"path": "f.txt", "edits": [
            {"old_string": "two", "new_string": "2"},
            {"old_string": "two\nthree", "new_string": "x"}
        ]}),
    ));
    assert!(err.contains("an earlier edit changed it"), "{err}");
    assert_eq!(dir.read("f.txt"), original);
}

#[test]
fn multi_edit_names_the_malformed_edit() {
    let dir = Dir::new();
    dir.write("f.txt", "a\n");
    let err = invalid(call(
        &dir,
        "multi_edit",
        json!({"path": "f.txt", "edits": []}),
    ));
    assert!(err.contains("`edits` is empty"), "{err}");
    let err = invalid(call(
        &dir,
        "multi_edit",
        json!({"path": "f.txt", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "a"}]}),
    ));
    assert_eq!(err, "edits[1]: missing required parameter `new_string`");
    let err = invalid(call(
        &dir,
        "multi_edit",
        json!({"path": "f.txt", "edits": ["a"]}),
    ));
    assert!(err.starts_with("edits[0] must be an object"), "{err}");
}

// ---- move_file ----

#[test]
fn move_file_moves_into_new_parent_directories() {
    let dir = Dir::new();
    dir.write("src/old.rs", "code\n");
    let out = ok(call(
        &dir,
        "move_file",
        json!({"source_path": "src/old.rs", "destination_path": "lib/deep/new.rs"}),
    ));
    assert_eq!(out, "Moved src/old.rs to lib/deep/new.rs");
    assert_eq!(dir.read("lib/deep/new.rs"), "code\n");
    assert!(!dir.join("src/old.rs").exists());

    dir.write("pkg/a/x.txt", "x");
    ok(call(
        &dir,
        "move_file",
        json!({"source_path": "pkg", "destination_path": "moved/pkg"}),
    ));
    assert_eq!(dir.read("moved/pkg/a/x.txt"), "x");
}

#[test]
fn move_file_refuses_to_overwrite_and_reports_a_missing_source() {
    let dir = Dir::new();
    dir.write("a.txt", "a");
    dir.write("b.txt", "b");
    let err = failed(call(
        &dir,
        "move_file",
        json!({"source_path": "a.txt", "destination_path": "b.txt"}),
    ));
    assert!(
        err.starts_with("destination b.txt already exists (a file) and move_file never overwrites"),
        "{err}"
    );
    assert_eq!(
        (dir.read("a.txt"), dir.read("b.txt")),
        ("a".into(), "b".into())
    );

    let err = failed(call(
        &dir,
        "move_file",
        json!({"source_path": "ghost.txt", "destination_path": "c.txt"}),
    ));
    assert!(err.starts_with("source ghost.txt does not exist"), "{err}");

    fs::create_dir(dir.join("tree")).unwrap();
    let err = failed(call(
        &dir,
        "move_file",
        json!({"source_path": "tree", "destination_path": "tree/inner/tree"}),
    ));
    assert!(err.contains("into itself"), "{err}");
    assert!(dir.join("tree").is_dir() && !dir.join("tree/inner").exists());
}

// ---- todo_write ----

#[test]
fn todo_write_replaces_the_shared_list_and_renders_it() {
    let dir = Dir::new();
    let ctx = context(&dir);
    let todo = tool("todo_write");
    let out = ok(todo.execute(
        &json!({"todos": [
            {"content": "Read the parser", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug", "id": 7},
            {"content": "Run the tests", "status": "pending"}
        ]}),
        &ctx,
    ));
    assert_eq!(
        out,
        "Todo list updated: 1 completed, 1 in progress, 1 pending.\n\
         [x] Read the parser\n[>] Fix the bug\n[ ] Run the tests\n"
    );
    let list = ctx.todos.lock().unwrap().clone();
    assert_eq!(list.len(), 3);
    assert_eq!(
        list[1],
        TodoItem {
            id: "7".into(),
            content: "Fix the bug".into(),
            status: TodoStatus::InProgress,
            active_form: Some("Fixing the bug".into()),
            level: 0,
        }
    );
    assert_eq!(list[2].id, "3");
    assert_eq!(
        serde_json::to_value(&list[1]).unwrap(),
        json!({"id": "7", "content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug", "level": 0})
    );

    let out = ok(todo.execute(
        &json!({"todos": [{"content": "Only", "status": "pending"}]}),
        &ctx,
    ));
    assert!(out.ends_with("[ ] Only\n"), "{out}");
    assert_eq!(ctx.todos.lock().unwrap().len(), 1);
    assert_eq!(
        ok(todo.execute(&json!({"todos": []}), &ctx)),
        "Todo list cleared."
    );
    assert!(ctx.todos.lock().unwrap().is_empty());
}

#[test]
fn todo_write_validation_leaves_the_list_unchanged() {
    let dir = Dir::new();
    let ctx = context(&dir);
    let todo = tool("todo_write");
    ok(todo.execute(
        &json!({"todos": [{"content": "Keep", "status": "pending"}]}),
        &ctx,
    ));
    let cases = [
        (
            json!({"todos": [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "in_progress"}]}),
            "2 tasks are in_progress (todos[0], todos[1]); at most one may be in_progress",
        ),
        (
            json!({"todos": [{"content": "A", "status": "doing"}]}),
            "todos[0]: `status` must be pending, in_progress or completed, got \"doing\"",
        ),
        (
            json!({"todos": [{"content": "  ", "status": "pending"}]}),
            "todos[0]: `content` is empty",
        ),
        (
            json!({"todos": [{"content": "A", "status": "pending", "id": "x"}, {"content": "B", "status": "pending", "id": "x"}]}),
            "todos[0] and todos[1] share the id `x`",
        ),
        (
            json!({"todos": [{"status": "pending"}]}),
            "todos[0]: missing required parameter `content`",
        ),
    ];
    for (args, expected) in cases {
        let err = invalid(todo.execute(&args, &ctx));
        assert!(err.starts_with(expected), "{args}: {err}");
    }
    assert_eq!(ctx.todos.lock().unwrap()[0].content, "Keep");
}

// ---- registry, contract and `reasonix tools` ----

/// Every tool a session can offer the model: what the contract and `reasonix tools` list.
fn builtin_registry() -> Registry {
    reasonix::agent::offered::every_tool()
}

/// Each schema the model can be offered is a closed-enough JSON Schema object the gate can
/// check arguments against: an object type, properties with types, and every required key
/// among the properties.
#[test]
fn every_offered_tool_has_a_checkable_object_schema() {
    let registry = builtin_registry();
    for schema in registry.schemas() {
        let parameters = &schema.parameters;
        assert_eq!(
            parameters["type"], "object",
            "{}: {parameters}",
            schema.name
        );
        let properties = parameters["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{}: no properties: {parameters}", schema.name));
        for (key, property) in properties {
            assert!(
                property.get("type").is_some() || property.get("enum").is_some(),
                "{}.{key} has no type: {property}",
                schema.name
            );
        }
        for required in parameters["required"].as_array().into_iter().flatten() {
            let key = required.as_str().unwrap_or_default();
            assert!(
                properties.contains_key(key),
                "{} requires `{key}`, which is not a property",
                schema.name
            );
        }
        assert!(
            !schema.description.trim().is_empty(),
            "{} has no description",
            schema.name
        );
    }
}

#[test]
fn file_tools_declare_the_right_kind() {
    for (name, read_only) in [
        ("read_file", true),
        ("write_file", false),
        ("edit_file", false),
        ("multi_edit", false),
        ("move_file", false),
        ("todo_write", true),
    ] {
        assert_eq!(tool(name).read_only(), read_only, "{name}");
    }
}

#[test]
fn tool_contract_doc_matches_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/TOOL_CONTRACT.md");
    let on_disk = fs::read_to_string(path).unwrap_or_default();
    let generated = contract::markdown(&builtin_registry());
    assert!(
        on_disk == generated,
        "docs/TOOL_CONTRACT.md is out of date with the tool registry; regenerate it with `{}`",
        contract::REGENERATE
    );
}

#[test]
fn tools_command_lists_prints_markdown_and_json() {
    let home = Dir::new();
    let registry = builtin_registry();

    let out = run(reasonix(&home, home.path()).arg("tools"));
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), registry.names().len(), "{out:?}");
    let read = lines.iter().find(|l| l.starts_with("read_file ")).unwrap();
    assert!(
        read.contains(" read-only ") && read.ends_with("(line number, tab, text)."),
        "{read}"
    );
    let write = lines.iter().find(|l| l.starts_with("write_file ")).unwrap();
    assert!(write.contains(" writer "), "{write}");

    let out = run(reasonix(&home, home.path()).args(["tools", "--markdown"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, contract::markdown(&registry));

    let out = run(reasonix(&home, home.path()).args(["tools", "--json"]));
    assert_eq!(out.code, 0, "{out:?}");
    let parsed: Vec<reasonix::provider::ToolSchema> =
        serde_json::from_str(&out.stdout).expect("--json prints a schema array");
    assert_eq!(parsed, registry.schemas());

    let out = run(reasonix(&home, home.path()).args(["tools", "--json", "--markdown"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("cannot be combined"), "{out:?}");
    let out = run(reasonix(&home, home.path()).args(["tools", "--help"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("Usage: reasonix tools"), "{out:?}");
}

/// Issue 37.5: the contract and `reasonix tools --json` cover every tool a session offers.
/// A planner/executor run with a skill offers the session-added tools (`task`,
/// `read_only_task`, `fleet`, `parallel_tasks`, `skill`, `read_only_skill`, `plan_status`)
/// next to the built-ins; each schema the model received is the listed one, byte for byte.
#[test]
fn every_schema_a_session_offers_is_the_listed_one() {
    use crate::coordinator::{two_model_config, two_model_server, PLANNER};
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = Dir::new();
    work.write("notes.txt", "hello\n");
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    home.write(
        ".reasonix/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write the changelog entry\n---\nWrite it.\n",
    );
    let out = run(reasonix(&home, work.path())
        .args(["run", "report the notes [done]"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let listed = run(reasonix(&home, work.path()).args(["tools", "--json"]));
    let listed: Vec<Value> = serde_json::from_str(&listed.stdout).expect("a schema array");
    let by_name = |name: &str| {
        listed
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` is offered but not listed"))
            .clone()
    };
    let mut offered = std::collections::BTreeSet::new();
    for request in server.requests() {
        for tool in request.body["tools"].as_array().into_iter().flatten() {
            let function = &tool["function"];
            let name = function["name"].as_str().unwrap_or_default().to_string();
            let schema = by_name(&name);
            assert_eq!(function["parameters"], schema["parameters"], "{name}");
            assert_eq!(function["description"], schema["description"], "{name}");
            offered.insert(name);
        }
    }
    for name in [
        "task",
        "read_only_task",
        "fleet",
        "parallel_tasks",
        "skill",
        "read_only_skill",
        "plan_status",
    ] {
        assert!(offered.contains(name), "{name} not offered: {offered:?}");
    }
}
