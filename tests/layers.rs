//! The layer table of `docs/ARCHITECTURE.md`, enforced: every `crate::<module>` path in
//! `src/` (imports and inline paths alike, tests included) must name a module of the same
//! layer or a lower one, and the table must list every top-level module, so a new module
//! has to be placed before it can be used.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules by layer, lowest first; a module may use its own layer and those below.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "leaves",
        &[
            "text", "clock", "cancel", "fsutil", "platform", "hash", "i18n", "base64",
        ],
    ),
    ("provider", &["provider"]),
    ("config", &["config"]),
    ("skill", &["skill"]),
    ("sandbox", &["sandbox"]),
    ("tool", &["tool"]),
    ("permission", &["permission"]),
    ("mcp", &["mcp"]),
    ("composition", &["composition"]),
    ("agent", &["agent"]),
    ("command", &["command"]),
    ("app", &["app"]),
    ("term", &["term"]),
    ("serve", &["serve"]),
    ("cli", &["cli", "claude"]),
];

/// Items of the crate root (`lib.rs`) that any module may use.
const ROOT_ITEMS: &[&str] = &["VERSION", "GIT_COMMIT", "user_agent"];

fn rank(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under `src/` belongs to; `None` for the crate root and the
/// binaries, which may use anything.
fn owner(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "main.rs" | "bin" => None,
        name => Some(name.trim_end_matches(".rs").to_string()),
    }
}

/// Drops `//` comments (doc comments included) so prose that names a module does not count.
/// String literals are left alone: none of them starts with `crate::`.
fn code_of(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// The top-level modules named by `crate::x` and `crate::{x, y::z}` paths in `code`.
fn named_modules(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `reasonix_crate::` or similar: not our crate root.
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                found.extend(first_ident(item.trim()));
            }
        } else {
            found.extend(first_ident(rest));
        }
    }
    found
}

fn first_ident(path: &str) -> Option<String> {
    let ident: String = path
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!ident.is_empty()).then_some(ident)
}

#[test]
fn imports_only_go_down_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    let mut modules = BTreeMap::new();
    for file in &files {
        let Some(owner) = owner(&src, file) else {
            continue;
        };
        let Some(own_rank) = rank(&owner) else {
            violations.push(format!(
                "{}: module `{owner}` is not in the layer table",
                file.display()
            ));
            continue;
        };
        modules.insert(owner.clone(), own_rank);
        let text = fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            for named in named_modules(code_of(line)) {
                if named == owner || ROOT_ITEMS.contains(&named.as_str()) {
                    continue;
                }
                match rank(&named) {
                    Some(r) if r <= own_rank => {}
                    Some(_) => violations.push(format!(
                        "{}:{}: `{owner}` uses `crate::{named}`, which is in a higher layer",
                        file.strip_prefix(&src).unwrap().display(),
                        number + 1
                    )),
                    None => violations.push(format!(
                        "{}:{}: `crate::{named}` is not in the layer table",
                        file.strip_prefix(&src).unwrap().display(),
                        number + 1
                    )),
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "{} layer violations (see docs/ARCHITECTURE.md):\n{}",
        violations.len(),
        violations.join("\n")
    );
    assert!(modules.len() >= 10, "found only {modules:?}");
}

#[test]
fn the_scanner_sees_every_form_of_path() {
    assert_eq!(named_modules("use crate::agent::events::Event;"), ["agent"]);
    assert_eq!(
        named_modules("use crate::{tool::Tool, mcp::McpError};"),
        ["tool", "mcp"]
    );
    assert_eq!(
        named_modules("let x = crate::clock::now(); crate::text::one_line(y)"),
        ["clock", "text"]
    );
    assert_eq!(
        named_modules(code_of("// see crate::term")),
        Vec::<String>::new()
    );
    assert_eq!(named_modules("my_crate::term::x"), Vec::<String>::new());
}

#[test]
fn the_architecture_document_lists_the_layer_table_and_every_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md exists");
    for (layer, modules) in LAYERS {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {layer} |")))
            .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no row for layer `{layer}`"));
        for module in *modules {
            assert!(
                row.contains(&format!("`{module}`")),
                "the `{layer}` row does not list `{module}`"
            );
        }
    }
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let missing: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .filter(|f| !doc.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not describe: {}",
        missing.join(", ")
    );
    let stale: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|token| token.ends_with(".rs") && !token.contains(' '))
        .filter(|token| !src.join(token).is_file() && !root.join(token).is_file())
        .collect();
    assert!(
        stale.is_empty(),
        "docs/ARCHITECTURE.md names files that do not exist: {}",
        stale.join(", ")
    );
}

/// Issue 36.5: the assembly sits below every front end and `serve` below `cli`, so reordering
/// the table to let `app` reach up into a front end, or `serve` into the command line's code
/// (as it once did for the session envelope, the composition table and the stream-json
/// encoder), fails here and not only in review.
#[test]
fn app_sits_below_the_front_ends_and_serve_below_cli() {
    let rank_of =
        |module: &str| rank(module).unwrap_or_else(|| panic!("`{module}` is not in the table"));
    for front in ["term", "serve", "cli"] {
        assert!(
            rank_of("app") < rank_of(front),
            "`app` must sit below `{front}`"
        );
    }
    assert!(
        rank_of("command") < rank_of("app"),
        "`app` reads typed input through `command`"
    );
    assert!(
        rank_of("serve") < rank_of("cli"),
        "`serve` must not be able to use `cli`"
    );
}
