//! The gitignore-aware walker and the ls, glob and grep tools, driven through their public
//! surface on real temp trees.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use reasonix::tool::walk::{EntryKind, Hidden, Ignores, Options, Walk};
use reasonix::tool::{builtin, Tool, ToolContext, ToolError};
use serde_json::{json, Value};

use crate::util::Dir;

fn tool(name: &str) -> Arc<dyn Tool> {
    builtin::all()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no built-in tool named {name}"))
}

fn call(name: &str, dir: &Dir, args: Value) -> Result<String, ToolError> {
    tool(name).execute(&args, &ToolContext::new(dir.path().to_path_buf()))
}

fn ok(name: &str, dir: &Dir, args: Value) -> String {
    call(name, dir, args.clone()).unwrap_or_else(|e| panic!("{name} {args} failed: {e}"))
}

fn failure(name: &str, dir: &Dir, args: Value) -> String {
    match call(name, dir, args.clone()) {
        Ok(out) => panic!("{name} {args} should fail, got:\n{out}"),
        Err(e) => e.to_string(),
    }
}

/// Relative paths of every entry the walker yields, directories with a trailing `/`.
fn walked(root: &Path, options: Options) -> Vec<String> {
    Walk::new(root, options)
        .map(|e| {
            let rel = e
                .path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            match e.kind {
                EntryKind::Dir => format!("{rel}/"),
                _ => rel,
            }
        })
        .collect()
}

fn files(root: &Path, options: Options) -> Vec<String> {
    walked(root, options)
        .into_iter()
        .filter(|p| !p.ends_with('/'))
        .collect()
}

fn git_repo() -> Dir {
    let dir = Dir::new();
    fs::create_dir_all(dir.join(".git/info")).unwrap();
    dir
}

fn set_mtime(path: &Path, secs_after_epoch: u64) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs_after_epoch))
        .unwrap();
}

// ---------------------------------------------------------------- walker: gitignore semantics

#[test]
fn walker_applies_nested_gitignores_negation_dir_patterns_and_anchoring() {
    let dir = git_repo();
    dir.write(
        ".gitignore",
        "*.log\n!keep.log\nbuild/\n/only_root.txt\ndocs/*.tmp\n",
    );
    dir.write("a.log", "");
    dir.write("keep.log", "");
    dir.write("only_root.txt", "");
    dir.write("sub/only_root.txt", "");
    dir.write("build/out.o", "");
    dir.write("sub/build/out.o", "");
    dir.write("build.rs", "");
    dir.write("docs/x.tmp", "");
    dir.write("docs/deep/x.tmp", "");
    // A deeper file wins: it re-includes what the root ignored and ignores something new.
    dir.write("sub/.gitignore", "!*.log\nsecret.txt\n");
    dir.write("sub/b.log", "");
    dir.write("sub/secret.txt", "");
    dir.write("secret.txt", "");
    let got = files(dir.path(), Options::default());
    let expected = vec![
        ".gitignore",
        "build.rs",
        "docs/deep/x.tmp",
        "keep.log",
        "secret.txt",
        "sub/.gitignore",
        "sub/b.log",
        "sub/only_root.txt",
    ];
    assert_eq!(got, expected);
}

#[test]
fn walker_cannot_reinclude_a_file_below_an_ignored_directory() {
    let dir = git_repo();
    dir.write(".gitignore", "vendor/\n!vendor/keep.rs\n");
    dir.write("vendor/keep.rs", "");
    dir.write("main.rs", "");
    assert_eq!(
        files(dir.path(), Options::default()),
        vec![".gitignore", "main.rs"]
    );
}

#[test]
fn walker_honours_info_exclude_below_gitignore_and_global_excludes_lowest() {
    let dir = git_repo();
    dir.write(".git/info/exclude", "*.local\nshared.txt\n");
    dir.write(".gitignore", "!shared.txt\n");
    let global = dir.write("global-ignore", "*.bak\nglobal-ignore\n");
    dir.write("a.local", "");
    dir.write("shared.txt", "");
    dir.write("old.bak", "");
    dir.write("main.c", "");
    let options = Options {
        global_excludes: Some(global),
        ..Options::default()
    };
    assert_eq!(
        files(dir.path(), options),
        vec![".gitignore", "main.c", "shared.txt"]
    );
}

#[test]
fn walker_reads_info_exclude_through_a_worktree_git_file() {
    let main = git_repo();
    main.write(".git/info/exclude", "*.scratch\n");
    fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
    fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
    let wt = Dir::new();
    let gitdir = main.join(".git/worktrees/wt");
    wt.write(".git", &format!("gitdir: {}\n", gitdir.display()));
    wt.write("notes.scratch", "");
    wt.write("lib.rs", "");
    assert_eq!(files(wt.path(), Options::default()), vec!["lib.rs"]);
}

#[test]
fn walker_applies_ancestor_gitignores_when_rooted_in_a_subdirectory() {
    let dir = git_repo();
    dir.write(".gitignore", "*.gen\n/src/skip/\n");
    dir.write("src/.gitignore", "local.txt\n");
    dir.write("src/a.gen", "");
    dir.write("src/local.txt", "");
    dir.write("src/skip/x.rs", "");
    dir.write("src/keep.rs", "");
    assert_eq!(
        files(&dir.join("src"), Options::default()),
        vec![".gitignore", "keep.rs"]
    );
}

#[test]
fn walker_outside_a_repository_ignores_gitignore_files_like_ripgrep() {
    let dir = Dir::new();
    dir.write(".gitignore", "*.log\n");
    dir.write("a.log", "");
    assert_eq!(
        files(dir.path(), Options::default()),
        vec![".gitignore", "a.log"]
    );
    // A nested repository inside the walked tree is recognised when the walk enters it.
    dir.write("inner/.git/HEAD", "");
    dir.write("inner/.gitignore", "*.log\n");
    dir.write("inner/b.log", "");
    dir.write("inner/c.rs", "");
    assert_eq!(
        files(dir.path(), Options::default()),
        vec![".gitignore", "a.log", "inner/.gitignore", "inner/c.rs"]
    );
}

#[test]
fn walker_disregard_mode_and_overrides() {
    let dir = git_repo();
    dir.write(".gitignore", "*.log\n");
    dir.write("a.log", "");
    dir.write("b.lock", "");
    dir.write("c.rs", "");
    let disregard = Options {
        ignores: Ignores::Disregard,
        overrides: vec!["*.lock".to_string()],
        ..Options::default()
    };
    assert_eq!(
        files(dir.path(), disregard),
        vec![".gitignore", "a.log", "c.rs"]
    );
    let whitelist = Options {
        overrides: vec!["!a.log".to_string()],
        ..Options::default()
    };
    assert_eq!(
        files(dir.path(), whitelist),
        vec![".gitignore", "a.log", "b.lock", "c.rs"]
    );
}

// ---------------------------------------------------------------- walker: policy

#[test]
fn walker_always_skips_vcs_and_dependency_dirs_but_not_unignored_build_dirs() {
    let dir = Dir::new();
    for noise in [
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
    ] {
        dir.write(&format!("{noise}/x"), "");
        dir.write(&format!("pkg/{noise}/y"), "");
    }
    dir.write("target/debug/app", "");
    dir.write("dist/app.js", "");
    dir.write("pkg/index.js", "");
    assert_eq!(
        walked(dir.path(), Options::default()),
        vec![
            "dist/",
            "dist/app.js",
            "pkg/",
            "pkg/index.js",
            "target/",
            "target/debug/",
            "target/debug/app"
        ]
    );
}

#[test]
fn walker_hidden_files_are_included_by_default_and_can_be_skipped() {
    let dir = Dir::new();
    dir.write(".github/workflows/ci.yml", "");
    dir.write(".env.example", "");
    dir.write("src/.hidden", "");
    dir.write("src/main.rs", "");
    assert_eq!(
        files(dir.path(), Options::default()),
        vec![
            ".env.example",
            ".github/workflows/ci.yml",
            "src/.hidden",
            "src/main.rs"
        ]
    );
    let skip = Options {
        hidden: Hidden::Skip,
        ..Options::default()
    };
    assert_eq!(files(dir.path(), skip), vec!["src/main.rs"]);
}

#[test]
fn walker_order_is_depth_first_and_sorted_by_name_bytes() {
    let dir = Dir::new();
    for rel in ["b/2", "b/1", "a", "B", "c/z/y", "_", "a.d/x"] {
        dir.write(rel, "");
    }
    let expected = vec![
        "B", "_", "a", "a.d/", "a.d/x", "b/", "b/1", "b/2", "c/", "c/z/", "c/z/y",
    ];
    assert_eq!(walked(dir.path(), Options::default()), expected);
    assert_eq!(walked(dir.path(), Options::default()), expected);
}

#[test]
fn walker_respects_max_depth_exclude_and_never_follows_symlinks() {
    let dir = Dir::new();
    dir.write("a/b/c/deep.txt", "");
    dir.write("secret/key", "");
    dir.write("top.txt", "");
    std::os::unix::fs::symlink(dir.path(), dir.join("a/loop")).unwrap();
    let shallow = Options {
        max_depth: Some(2),
        ..Options::default()
    };
    assert_eq!(
        walked(dir.path(), shallow),
        vec!["a/", "a/b/", "a/loop", "secret/", "secret/key", "top.txt"]
    );
    let excluded = Options {
        exclude: vec![dir.join("secret"), dir.join("a/b")],
        ..Options::default()
    };
    assert_eq!(
        walked(dir.path(), excluded),
        vec!["a/", "a/loop", "top.txt"]
    );
    let kinds: Vec<EntryKind> = Walk::new(&dir.join("a"), Options::default())
        .map(|e| e.kind)
        .collect();
    assert!(kinds.contains(&EntryKind::Symlink));
    let everything = Options {
        exclude: vec![dir.path().to_path_buf()],
        ..Options::default()
    };
    assert!(walked(dir.path(), everything).is_empty());
}

#[test]
fn walker_yields_a_file_root_itself_and_nothing_for_a_missing_root() {
    let dir = Dir::new();
    let file = dir.write("one.txt", "x");
    let entries: Vec<_> = Walk::new(&file, Options::default()).collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].path, file);
    assert_eq!(entries[0].depth, 0);
    let mut missing = Walk::new(&dir.join("nope"), Options::default());
    assert!(missing.next().is_none());
    assert_eq!(missing.unreadable(), 1);
}

#[test]
fn walker_skips_and_counts_unreadable_directories() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    dir.write("locked/inside.txt", "");
    dir.write("open.txt", "");
    fs::set_permissions(dir.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let readable_anyway = fs::read_dir(dir.join("locked")).is_ok();
    let mut walk = Walk::new(dir.path(), Options::default());
    let names: Vec<PathBuf> = walk.by_ref().map(|e| e.path).collect();
    fs::set_permissions(dir.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    if readable_anyway {
        println!("running with CAP_DAC_OVERRIDE (root): permission bits do not hide the directory");
        assert_eq!(walk.unreadable(), 0);
        return;
    }
    assert_eq!(names, vec![dir.join("locked"), dir.join("open.txt")]);
    assert_eq!(walk.unreadable(), 1);
}

#[test]
fn walker_streams_without_listing_the_whole_tree_first() {
    // Taking the first entry must not read the sibling subtree; a directory created after
    // the first `next()` in a not-yet-visited subtree still shows up.
    let dir = Dir::new();
    dir.write("a/1", "");
    dir.write("z/1", "");
    let mut walk = Walk::new(dir.path(), Options::default());
    assert_eq!(walk.next().unwrap().path, dir.join("a"));
    dir.write("z/late", "");
    let rest: Vec<PathBuf> = walk.map(|e| e.path).collect();
    assert!(rest.contains(&dir.join("z/late")), "{rest:?}");
}

// ---------------------------------------------------------------- ls

#[test]
fn ls_lists_direct_children_sorted_with_dir_slashes_and_without_noise() {
    let dir = git_repo();
    dir.write(".gitignore", "target/\n");
    dir.write("src/main.rs", "");
    dir.write("target/debug/app", "");
    dir.write("node_modules/x/index.js", "");
    dir.write("README.md", "");
    std::os::unix::fs::symlink("README.md", dir.join("link")).unwrap();
    let out = ok("ls", &dir, json!({}));
    assert_eq!(
        out,
        ".gitignore\nREADME.md\nlink -> README.md\nsrc/\ntarget/\n"
    );
}

#[test]
fn ls_recursive_honours_gitignore_and_ignore_patterns() {
    let dir = git_repo();
    dir.write(".gitignore", "target/\n");
    dir.write("src/main.rs", "");
    dir.write("src/main.rs.orig", "");
    dir.write("target/debug/app", "");
    let out = ok(
        "ls",
        &dir,
        json!({"path": ".", "recursive": true, "ignore": ["*.orig"]}),
    );
    assert_eq!(out, ".gitignore\nsrc/\nsrc/main.rs\n");
    let sub = ok("ls", &dir, json!({"path": "src"}));
    assert_eq!(sub, "main.rs\nmain.rs.orig\n");
    let absolute = ok(
        "ls",
        &dir,
        json!({"path": dir.join("src").to_str().unwrap()}),
    );
    assert_eq!(absolute, sub);
}

#[test]
fn ls_caps_entries_and_says_how_many_more() {
    let dir = Dir::new();
    for i in 0..1005 {
        dir.write(&format!("f{i:04}"), "");
    }
    let out = ok("ls", &dir, json!({}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1001);
    assert_eq!(lines[999], "f0999");
    assert_eq!(
        lines[1000],
        "... 5 more entries; narrow the path or use glob"
    );
}

#[test]
fn ls_errors_name_the_problem() {
    let dir = Dir::new();
    dir.write("file.txt", "x");
    fs::create_dir(dir.join("empty")).unwrap();
    assert_eq!(
        failure("ls", &dir, json!({"path": "missing"})),
        "path not found: missing; check the spelling or list its parent directory"
    );
    assert_eq!(
        failure("ls", &dir, json!({"path": "file.txt"})),
        "file.txt is a file, not a directory; use read_file to read it"
    );
    assert_eq!(
        failure("ls", &dir, json!({"recursive": "yes"})),
        "invalid arguments: `recursive` must be true or false, got \"yes\""
    );
    assert_eq!(
        failure("ls", &dir, json!({"ignore": [1]})),
        "invalid arguments: `ignore` must be an array of strings, got 1"
    );
    assert_eq!(
        ok("ls", &dir, json!({"path": "empty"})),
        "(empty directory)\n"
    );
}

// ---------------------------------------------------------------- glob

fn glob_tree() -> Dir {
    let dir = git_repo();
    dir.write(".gitignore", "target/\n*.gen.rs\n");
    dir.write("Cargo.toml", "");
    dir.write("build.rs", "");
    dir.write("src/main.rs", "");
    dir.write("src/lib.rs", "");
    dir.write("src/tool/walk.rs", "");
    dir.write("src/tool/schema.gen.rs", "");
    dir.write("web/app.ts", "");
    dir.write("web/view.tsx", "");
    dir.write("web/old.js", "");
    dir.write("target/debug/build.rs", "");
    dir
}

#[test]
fn glob_patterns_anchor_like_ripgrep_and_honour_gitignore() {
    let dir = glob_tree();
    let by_path = |pattern: &str| ok("glob", &dir, json!({"pattern": pattern, "sort": "path"}));
    assert_eq!(
        by_path("**/*.rs"),
        "build.rs\nsrc/lib.rs\nsrc/main.rs\nsrc/tool/walk.rs\n"
    );
    assert_eq!(by_path("*.rs"), by_path("**/*.rs"));
    assert_eq!(by_path("src/*.rs"), "src/lib.rs\nsrc/main.rs\n");
    assert_eq!(by_path("/*.rs"), "build.rs\n");
    assert_eq!(by_path("./src/**/w?lk.rs"), "src/tool/walk.rs\n");
    assert_eq!(by_path("**/*.{ts,tsx}"), "web/app.ts\nweb/view.tsx\n");
    assert_eq!(by_path("web/[a-o]*"), "web/app.ts\nweb/old.js\n");
    assert_eq!(by_path("Cargo.toml"), "Cargo.toml\n");
    let absolute = format!("{}/src/**/*.rs", dir.path().display());
    assert_eq!(
        by_path(&absolute),
        "src/lib.rs\nsrc/main.rs\nsrc/tool/walk.rs\n"
    );
    let in_web = ok(
        "glob",
        &dir,
        json!({"pattern": "*", "path": "web", "sort": "path"}),
    );
    assert_eq!(in_web, "web/app.ts\nweb/old.js\nweb/view.tsx\n");
}

#[test]
fn glob_sorts_newest_first_by_default_with_ties_by_path() {
    let dir = glob_tree();
    set_mtime(&dir.join("src/lib.rs"), 3_000);
    set_mtime(&dir.join("src/main.rs"), 1_000);
    set_mtime(&dir.join("src/tool/walk.rs"), 2_000);
    set_mtime(&dir.join("build.rs"), 1_000);
    let out = ok("glob", &dir, json!({"pattern": "**/*.rs"}));
    assert_eq!(out, "src/lib.rs\nsrc/tool/walk.rs\nbuild.rs\nsrc/main.rs\n");
}

#[test]
fn glob_caps_results_and_reports_no_match_and_bad_input() {
    let dir = Dir::new();
    for i in 0..503 {
        dir.write(&format!("d{}/f{i}.txt", i % 7), "");
    }
    let out = ok("glob", &dir, json!({"pattern": "**/*.txt", "sort": "path"}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 501);
    assert_eq!(
        lines[500],
        "(3 more files not shown; narrow the pattern or path)"
    );
    assert_eq!(
        ok("glob", &dir, json!({"pattern": "*.md"})),
        "No files match `*.md` under . (files ignored by .gitignore are skipped)."
    );
    assert_eq!(
        ok("glob", &dir, json!({"pattern": "nodir/*.txt"})),
        "No files match `nodir/*.txt` under . (files ignored by .gitignore are skipped)."
    );
    assert_eq!(
        failure("glob", &dir, json!({"pattern": "src/[ab"})),
        "invalid arguments: `pattern` is not a valid glob pattern: glob: unclosed `[` in `[ab`"
    );
    assert_eq!(
        failure("glob", &dir, json!({"pattern": "*", "sort": "size"})),
        "invalid arguments: `sort` must be \"modified\" or \"path\", got \"size\""
    );
    assert_eq!(
        failure("glob", &dir, json!({})),
        "invalid arguments: missing required parameter `pattern`"
    );
    assert_eq!(
        failure("glob", &dir, json!({"pattern": "*", "path": "d0/f0.txt"})),
        "d0/f0.txt is a file, not a directory; use read_file to read it"
    );
}

// ---------------------------------------------------------------- grep

fn grep_tree() -> Dir {
    let dir = git_repo();
    dir.write(".gitignore", "ignored/\n");
    dir.write(
        "src/a.rs",
        "fn main() {\n    let x = 1;\n    todo!();\n}\n\nfn helper() {}\n",
    );
    dir.write("src/b.rs", "// TODO: later\nfn b() {}\n");
    dir.write("web/c.ts", "function main() {}\n");
    dir.write("ignored/d.rs", "fn main() {}\n");
    fs::write(dir.join("blob.bin"), b"fn main\0binary").unwrap();
    dir
}

#[test]
fn grep_files_with_matches_is_the_default_and_skips_ignored_and_binary_files() {
    let dir = grep_tree();
    assert_eq!(
        ok("grep", &dir, json!({"pattern": "fn main|function main"})),
        "src/a.rs\nweb/c.ts\n"
    );
    assert_eq!(
        ok("grep", &dir, json!({"pattern": "main", "glob": "*.rs"})),
        "src/a.rs\n"
    );
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "main", "glob": "web/**/*.{ts,tsx}"})
        ),
        "web/c.ts\n"
    );
    assert_eq!(
        ok("grep", &dir, json!({"pattern": "main", "path": "blob.bin"})),
        "blob.bin is a binary file; grep skips binary files"
    );
}

#[test]
fn grep_content_mode_prints_line_numbers_context_and_separators() {
    let dir = grep_tree();
    let out = ok(
        "grep",
        &dir,
        json!({"pattern": "fn \\w+", "output_mode": "content", "path": "src"}),
    );
    assert_eq!(
        out,
        "src/a.rs:1:fn main() {\nsrc/a.rs:6:fn helper() {}\nsrc/b.rs:2:fn b() {}\n"
    );
    let out = ok(
        "grep",
        &dir,
        json!({"pattern": "fn", "output_mode": "content", "path": "src", "context": 1}),
    );
    assert_eq!(
        out,
        "src/a.rs:1:fn main() {\nsrc/a.rs-2-    let x = 1;\n--\nsrc/a.rs-5-\nsrc/a.rs:6:fn helper() {}\n--\nsrc/b.rs-1-// TODO: later\nsrc/b.rs:2:fn b() {}\n"
    );
    let out = ok(
        "grep",
        &dir,
        json!({"pattern": "todo", "output_mode": "content", "-B": 1, "after": 0, "path": "src/a.rs"}),
    );
    assert_eq!(out, "src/a.rs-2-    let x = 1;\nsrc/a.rs:3:    todo!();\n");
}

#[test]
fn grep_count_mode_case_insensitivity_and_multiline() {
    let dir = grep_tree();
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "todo", "output_mode": "count", "case_insensitive": true})
        ),
        "src/a.rs:1\nsrc/b.rs:1\n(2 matching lines in 2 files)\n"
    );
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "todo", "output_mode": "count"})
        ),
        "src/a.rs:1\n(1 matching line in 1 file)\n"
    );
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "x = 1;\\s+todo", "multiline": true, "output_mode": "content"})
        ),
        "src/a.rs:2:    let x = 1;\nsrc/a.rs:3:    todo!();\n"
    );
    assert!(ok("grep", &dir, json!({"pattern": "x = 1;\\s+todo"})).starts_with("No matches"));
}

#[test]
fn grep_caps_results_with_a_narrowing_hint() {
    let dir = Dir::new();
    let body: String = (0..30).map(|i| format!("hit {i}\n")).collect();
    for f in 0..8 {
        dir.write(&format!("f{f}.txt"), &body);
    }
    let out = ok(
        "grep",
        &dir,
        json!({"pattern": "hit", "output_mode": "content", "head_limit": 45}),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 46);
    assert_eq!(lines[44], "f1.txt:15:hit 14");
    assert_eq!(
        lines[45],
        "[195 more matching lines not shown; narrow your search with path or glob, or raise head_limit]"
    );
    let out = ok("grep", &dir, json!({"pattern": "hit", "head_limit": 3}));
    assert_eq!(
        out,
        "f0.txt\nf1.txt\nf2.txt\n[5 more files not shown; narrow your search with path or glob, or raise head_limit]\n"
    );
    let default_cap = ok(
        "grep",
        &dir,
        json!({"pattern": "hit", "output_mode": "content"}),
    );
    assert_eq!(default_cap.lines().count(), 201);
}

#[test]
fn grep_errors_and_empty_results_are_worded_for_the_model() {
    let dir = grep_tree();
    assert_eq!(
        failure("grep", &dir, json!({"pattern": "fn (main"})),
        "invalid arguments: `pattern` is not a valid regular expression: found open group \
         without closing ')'; put a backslash before ( ) [ ] { } . * + ? | ^ $ to match them \
         literally"
    );
    assert_eq!(
        failure("grep", &dir, json!({"pattern": "x", "path": "nope"})),
        "path not found: nope; check the spelling or search a parent directory"
    );
    assert_eq!(
        failure("grep", &dir, json!({"pattern": "x", "output_mode": "lines"})),
        "invalid arguments: `output_mode` must be \"files_with_matches\", \"content\" or \"count\", got \"lines\""
    );
    assert_eq!(
        failure("grep", &dir, json!({"pattern": "x", "glob": "{a,b"})),
        "invalid arguments: `glob` is not a valid pattern: glob: unclosed `{` in `{a,b`"
    );
    assert_eq!(
        ok("grep", &dir, json!({"pattern": "nowhere", "glob": "*.rs"})),
        "No matches for `nowhere` in . (files matching `*.rs`)."
    );
}

#[test]
fn grep_truncates_long_lines_around_the_match() {
    let dir = Dir::new();
    let line = format!("{}NEEDLE{}\n", "a".repeat(5000), "b".repeat(5000));
    dir.write("min.js", &line);
    let out = ok(
        "grep",
        &dir,
        json!({"pattern": "NEEDLE", "output_mode": "content"}),
    );
    assert!(out.starts_with("min.js:1:…"), "{out}");
    assert!(out.contains("NEEDLE"), "{out}");
    assert!(
        out.trim_end().ends_with("[line truncated: 10006 bytes]"),
        "{out}"
    );
    assert!(out.len() < 600, "{} bytes", out.len());
}

#[test]
fn grep_output_is_deterministic_and_paths_outside_the_workspace_are_absolute() {
    let dir = Dir::new();
    for name in ["z", "a", "m/q", "m/b", "B"] {
        dir.write(&format!("{name}.txt"), "needle\n");
    }
    let first = ok("grep", &dir, json!({"pattern": "needle"}));
    assert_eq!(first, "B.txt\na.txt\nm/b.txt\nm/q.txt\nz.txt\n");
    for _ in 0..3 {
        assert_eq!(ok("grep", &dir, json!({"pattern": "needle"})), first);
    }
    let other = Dir::new();
    let out = ok(
        "grep",
        &other,
        json!({"pattern": "needle", "path": dir.join("m").to_str().unwrap()}),
    );
    assert_eq!(
        out,
        format!("{0}/m/b.txt\n{0}/m/q.txt\n", dir.path().display())
    );
}

/// A match past the first buffer-full of a line many times longer than grep's buffer: the
/// line used to be searched in its first block only.
#[test]
fn grep_finds_a_match_deep_in_a_line_longer_than_the_buffer() {
    let dir = Dir::new();
    let line = format!("{}NEEDLE{}", "a".repeat(3 << 20), "b".repeat(1000));
    dir.write("min.js", &format!("{line}\nNEEDLE again\n"));
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "NEEDLE", "output_mode": "count"})
        ),
        "min.js:2\n(2 matching lines in 1 file)\n"
    );
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "(?i)a{3}needleb", "output_mode": "count"})
        ),
        "min.js:1\n(1 matching line in 1 file)\n"
    );
    assert_eq!(
        ok("grep", &dir, json!({"pattern": "a\\bNEEDLE"}))
            .lines()
            .next(),
        Some("No matches for `a\\bNEEDLE` in ..")
    );
    let expected = format!(
        "min.js:1:…{}NEEDLE{}… [line truncated: {} bytes]\nmin.js:2:NEEDLE again\n",
        "a".repeat(100),
        "b".repeat(294),
        line.len()
    );
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "NEEDLE", "output_mode": "content"})
        ),
        expected
    );
}

/// (?i) is ASCII-only in regex-lite; the literal prefilter must neither drop a line the regex
/// matches nor add one it does not.
#[test]
fn grep_case_insensitive_prefilter_agrees_with_regex_lite_folding() {
    let dir = Dir::new();
    dir.write(
        "f.txt",
        "Kelvin\n\u{212a}elvin\nSTRASSE\nstraße\nSTRAßE\nSTRAẞE\nCOPYRIGHT\nCopyRight\ncopy right\n",
    );
    let lines = |pattern: &str| {
        ok(
            "grep",
            &dir,
            json!({"pattern": pattern, "output_mode": "content"}),
        )
    };
    assert_eq!(lines("(?i)kelvin"), "f.txt:1:Kelvin\n");
    assert_eq!(
        lines("(?i)stra(ß|ss)e"),
        "f.txt:3:STRASSE\nf.txt:4:straße\nf.txt:5:STRAßE\n"
    );
    assert_eq!(
        lines("(?i)copyright|kelvin"),
        "f.txt:1:Kelvin\nf.txt:7:COPYRIGHT\nf.txt:8:CopyRight\n"
    );
    assert_eq!(
        lines("(?i)copy ?right"),
        "f.txt:7:COPYRIGHT\nf.txt:8:CopyRight\nf.txt:9:copy right\n"
    );
    assert_eq!(
        lines("[Cc]opy(right)?"),
        "f.txt:8:CopyRight\nf.txt:9:copy right\n"
    );
}

/// Many files searched in parallel, one large file first so the others finish before it:
/// the output is the sequential one (walk order, the cap cut at the same match) every time.
#[test]
fn grep_output_is_identical_across_parallel_runs() {
    let dir = Dir::new();
    let big: String = (0..200_000)
        .map(|i| match i % 50_000 {
            7 => format!("hit big {i}\n"),
            _ => format!("filler line {i}\n"),
        })
        .collect();
    dir.write("a_big.txt", &big);
    for f in 0..600 {
        let body: String = (0..20)
            .map(|l| match (f + l) % 7 {
                0 => format!("hit {f} {l}\n"),
                _ => format!("miss {f} {l}\n"),
            })
            .collect();
        dir.write(&format!("d{}/f{f:03}.txt", f % 7), &body);
    }
    let mut files: Vec<String> = vec!["a_big.txt".into()];
    let mut names: Vec<(usize, String)> = (0..600)
        .map(|f| (f, format!("d{}/f{f:03}.txt", f % 7)))
        .collect();
    names.sort_by(|a, b| a.1.cmp(&b.1));
    let mut count_lines = vec!["a_big.txt:4".to_string()];
    let mut content = vec![
        "a_big.txt:8:hit big 7".to_string(),
        "a_big.txt:50008:hit big 50007".to_string(),
        "a_big.txt:100008:hit big 100007".to_string(),
        "a_big.txt:150008:hit big 150007".to_string(),
    ];
    let mut total = 4;
    for (f, name) in &names {
        let hits: Vec<usize> = (0..20).filter(|l| (f + l) % 7 == 0).collect();
        files.push(name.clone());
        count_lines.push(format!("{name}:{}", hits.len()));
        total += hits.len();
        content.extend(hits.iter().map(|l| format!("{name}:{}:hit {f} {l}", l + 1)));
    }
    let expected_files = files[..100].join("\n") + "\n[501 more files not shown; narrow your search with path or glob, or raise head_limit]\n";
    let expected_count =
        count_lines.join("\n") + &format!("\n({total} matching lines in 601 files)\n");
    let expected_content = content[..150].join("\n") + &format!("\n[{} more matching lines not shown; narrow your search with path or glob, or raise head_limit]\n", total - 150);
    for _ in 0..5 {
        assert_eq!(
            ok("grep", &dir, json!({"pattern": "hit", "head_limit": 100})),
            expected_files
        );
        assert_eq!(
            ok(
                "grep",
                &dir,
                json!({"pattern": "hit", "output_mode": "count", "head_limit": 10000})
            ),
            expected_count
        );
        assert_eq!(
            ok(
                "grep",
                &dir,
                json!({"pattern": "h[i]t", "output_mode": "content", "head_limit": 150})
            ),
            expected_content
        );
    }
    // Context groups across files, cut mid-file.
    let with_context = ok(
        "grep",
        &dir,
        json!({"pattern": "hit \\d", "output_mode": "content", "context": 1, "head_limit": 40}),
    );
    for _ in 0..3 {
        assert_eq!(
            ok(
                "grep",
                &dir,
                json!({"pattern": "hit \\d", "output_mode": "content", "context": 1, "head_limit": 40})
            ),
            with_context
        );
    }
    assert_eq!(
        with_context.lines().filter(|l| l.contains(":hit ")).count(),
        40,
        "{with_context}"
    );
}

/// Files mode stops a file at its first match and count mode counts every matching line,
/// however the file falls into buffers.
#[test]
fn grep_files_and_count_modes_agree_on_files_larger_than_the_buffer() {
    let dir = Dir::new();
    let body: String = (0..100_000)
        .map(|i| match i % 1000 {
            999 => format!("match {i}\n"),
            _ => format!("{i:08} of the filler that pushes matches across buffer boundaries\n"),
        })
        .collect();
    dir.write("one.txt", &body);
    dir.write("two.txt", &format!("{body}last match"));
    dir.write("none.txt", &body.replace("match", "other"));
    assert_eq!(
        ok("grep", &dir, json!({"pattern": "match"})),
        "one.txt\ntwo.txt\n"
    );
    assert_eq!(
        ok(
            "grep",
            &dir,
            json!({"pattern": "match \\d+|last", "output_mode": "count"})
        ),
        "one.txt:100\ntwo.txt:101\n(201 matching lines in 2 files)\n"
    );
}

/// Count mode's literal fast paths (a short case-folded literal and a long exact one) on a
/// file several buffers long: CRLF lines, matches cut by a buffer's end, every case mix,
/// non-ASCII letters that regex-lite's ASCII-only folding leaves unmatched, and a binary file
/// holding the literal, which is skipped. Every figure is checked against a count made here.
#[test]
fn grep_count_of_folded_and_long_literals_agrees_across_buffers_crlf_and_binary_files() {
    let dir = Dir::new();
    let spellings = ["copyright", "COPYRIGHT", "CopyRight", "cOPYRIGHt"];
    let mut body = String::new();
    let (mut folded, mut exact, mut long, mut strasse) = (0, 0, 0, 0);
    let mut i = 0usize;
    while body.len() < 900 * 1024 {
        // A match every 61 lines lands at every offset of the 256 KiB buffer over the file.
        let line = match i % 61 {
            0 => {
                let word = spellings[(i / 61) % 4];
                folded += 1;
                exact += usize::from(word == "copyright");
                format!("{i:07} {word} line\r\n")
            }
            17 => {
                long += 1;
                format!("{i:07} needle_in_the_haystack\r\n")
            }
            29 => {
                strasse += 1;
                format!("{i:07} STRAßE\r\n")
            }
            // Near misses: a Kelvin sign, a capital sharp s, a split word.
            43 => format!("{i:07} \u{212a}opyright STRAẞE copy right needle_in_the_haystac\r\n"),
            _ => format!("{i:07} filler text with a few rare bytes: y g k q z\r\n"),
        };
        body.push_str(&line);
        i += 1;
    }
    dir.write("big.txt", &body);
    let mut blob = body.clone().into_bytes();
    blob.insert(10, 0);
    fs::write(dir.join("blob.dat"), blob).unwrap();
    let count = |pattern: &str| {
        ok(
            "grep",
            &dir,
            json!({"pattern": pattern, "output_mode": "count"}),
        )
    };
    let expect = |n: usize| format!("big.txt:{n}\n({n} matching lines in 1 file)\n");
    assert!(
        folded > 100 && long > 100 && strasse > 100,
        "{folded} {long}"
    );
    assert_eq!(count("(?i)copyright"), expect(folded));
    assert_eq!(count("copyright"), expect(exact));
    assert_eq!(count("needle_in_the_haystack"), expect(long));
    assert_eq!(count("(?i)NEEDLE_IN_THE_HAYSTACK"), expect(long));
    assert_eq!(count("(?i)straße"), expect(strasse));
    assert_eq!(count("(?i)copyright line$"), expect(folded));
    assert_eq!(
        count("(?i)copyright|needle_in_the_haystack"),
        expect(folded + long)
    );
}

#[test]
fn search_tools_are_read_only_with_object_schemas() {
    for name in ["ls", "glob", "grep"] {
        let t = tool(name);
        assert!(t.read_only(), "{name}");
        assert_eq!(t.schema()["type"], "object", "{name}");
        assert!(!t.description().is_empty());
    }
    assert_eq!(tool("grep").schema()["required"], json!(["pattern"]));
}

#[test]
fn search_tools_stop_when_cancelled() {
    let dir = grep_tree();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    ctx.cancel.cancel();
    for (name, args) in [
        ("ls", json!({"recursive": true})),
        ("glob", json!({"pattern": "**/*"})),
        ("grep", json!({"pattern": "fn"})),
    ] {
        assert_eq!(
            tool(name).execute(&args, &ctx),
            Err(ToolError::Cancelled),
            "{name}"
        );
    }
}

// ---------------------------------------------------------------- bench

/// A synthetic repository: `dirs` directories of `per_dir` files, with a root .gitignore, a
/// .gitignore in every tenth directory, and an ignored build directory.
fn synthetic_tree(dirs: usize, per_dir: usize) -> Dir {
    let dir = git_repo();
    dir.write(".gitignore", "*.log\ntarget/\n/generated/\n");
    for d in 0..dirs {
        let sub = format!("pkg{:02}/mod{d:03}", d % 20);
        fs::create_dir_all(dir.join(&sub)).unwrap();
        if d % 10 == 0 {
            dir.write(&format!("{sub}/.gitignore"), "*.tmp\n!keep.tmp\n");
        }
        for f in 0..per_dir {
            let ext = match f % 10 {
                0 => "log",
                1 => "tmp",
                _ => "rs",
            };
            fs::write(dir.join(&format!("{sub}/file{f:03}.{ext}")), "").unwrap();
        }
        fs::write(dir.join(&format!("{sub}/keep.tmp")), "").unwrap();
    }
    for f in 0..500 {
        dir.write(&format!("target/debug/obj{f}.o"), "");
        dir.write(&format!("generated/g{f}.rs"), "");
    }
    dir
}

#[test]
#[ignore]
fn bench_walker_vs_rg() {
    let tree = synthetic_tree(400, 50);
    let rounds = 5;
    let mut ours = Duration::MAX;
    let mut count = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        count = Walk::new(tree.path(), Options::default())
            .filter(|e| e.kind == EntryKind::File)
            .count();
        ours = ours.min(start.elapsed());
    }
    println!(
        "walker: {count} files in {:.1} ms (best of {rounds})",
        ours.as_secs_f64() * 1e3
    );
    let rg_files = |threads: &str| {
        std::process::Command::new("rg")
            .args([
                "--files",
                "--hidden",
                "--no-config",
                "--glob",
                "!.git",
                "-j",
                threads,
            ])
            .current_dir(tree.path())
            .output()
    };
    if rg_files("1").is_err() {
        println!("rg: ripgrep is not installed; no comparison");
    }
    for threads in ["1", "0"] {
        let mut best = Duration::MAX;
        let mut rg_count = 0;
        for _ in 0..rounds {
            let start = Instant::now();
            let Ok(out) = rg_files(threads) else { break };
            best = best.min(start.elapsed());
            rg_count = out.stdout.iter().filter(|&&b| b == b'\n').count();
        }
        if best == Duration::MAX {
            break;
        }
        let label = if threads == "1" {
            "1 thread"
        } else {
            "default threads"
        };
        println!(
            "rg --files ({label}): {rg_count} files in {:.1} ms (best of {rounds}, includes process start)",
            best.as_secs_f64() * 1e3
        );
        assert_eq!(
            count, rg_count,
            "walker and ripgrep disagree on the file count"
        );
    }
    // 400 dirs x 50 files: 5 of every 50 are .log (ignored); .tmp are ignored only in the 40
    // directories with their own .gitignore; keep.tmp is re-included there.
    let expected = 1 + 40 + 400 * (50 - 5 + 1) - 40 * 5;
    assert_eq!(count, expected);
}

/// Source-like text: 2,000 files of 300 lines (about 20 MB) in a repository.
fn synthetic_sources() -> Dir {
    let dir = git_repo();
    dir.write(".gitignore", "target/\n");
    let words = [
        "alpha", "beta", "gamma", "delta", "self", "value", "index", "buffer",
    ];
    for f in 0..2000 {
        let mut text = String::new();
        for l in 0..300 {
            let w = words[(f * 7 + l * 13) % words.len()];
            let v = words[(f + l) % words.len()];
            match (f + l) % 50 {
                0 => text.push_str(&format!(
                    "    fn {w}_mut(&mut self) -> &mut {v} {{ // TODO\n"
                )),
                1 => text.push_str(&format!("    unsafe {{ {w}.{v}_unchecked({l}) }}\n")),
                _ => text.push_str(&format!(
                    "    let {w}_{l} = {v}.get({l}).map(|x| x + {f});\n"
                )),
            }
        }
        dir.write(&format!("src/m{:02}/file{f:04}.rs", f % 40), &text);
    }
    dir
}

#[test]
#[ignore]
fn bench_grep_vs_rg() {
    let tree = synthetic_sources();
    let ctx = ToolContext::new(tree.path().to_path_buf());
    let cases: [(&str, bool); 4] = [
        ("unsafe", false),
        ("fn \\w+_mut\\(", false),
        ("(?i)todo|fixme", false),
        ("\\.get\\(\\d+\\)", false),
    ];
    let rg_installed = std::process::Command::new("rg")
        .arg("--version")
        .output()
        .is_ok();
    if !rg_installed {
        println!("rg: ripgrep is not installed; no comparison");
    }
    for (pattern, ci) in cases {
        let args = json!({"pattern": pattern, "output_mode": "count", "case_insensitive": ci, "head_limit": 100000});
        let start = Instant::now();
        let out = tool("grep").execute(&args, &ctx).unwrap();
        let ours = start.elapsed();
        let summary = out.lines().last().unwrap_or("").to_string();
        let lines: usize = summary
            .trim_start_matches('(')
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        println!(
            "grep {pattern:?}: {:.1} ms, {summary}",
            ours.as_secs_f64() * 1e3
        );
        if rg_installed {
            let start = Instant::now();
            let rg = std::process::Command::new("rg")
                .args(["-c", "--no-config", "--hidden", "-j1", pattern])
                .current_dir(tree.path())
                .output()
                .unwrap();
            let rg_time = start.elapsed();
            let rg_lines: usize = String::from_utf8_lossy(&rg.stdout)
                .lines()
                .filter_map(|l| l.rsplit(':').next()?.parse::<usize>().ok())
                .sum();
            println!(
                "  rg -c -j1: {:.1} ms, {rg_lines} matching lines",
                rg_time.as_secs_f64() * 1e3
            );
            assert_eq!(lines, rg_lines, "grep and ripgrep disagree for {pattern:?}");
        }
    }
}
