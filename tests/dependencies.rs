//! The direct dependencies in `Cargo.toml` are the design's list: a crate added (or one of the
//! design's dropped) fails here until [`DESIGN`] is changed, and a change to that list needs
//! its reason in the commit message.
//!
//! `Cargo.toml` is read with a small line reader rather than a TOML parser, so this test does
//! not depend on which TOML reader the crate uses.

use std::collections::BTreeSet;

/// The design's direct dependencies (SPEC: serde, serde_json, toml, ureq with rustls), plus
/// libc and regex-lite. Changing this list needs a reason in the commit that changes it.
const DESIGN: &[&str] = &[
    "serde",
    "serde_json",
    "toml",
    "ureq",
    "rustls",
    "libc",
    "regex-lite",
];

/// Allowed beside [`DESIGN`] but not required: none. ureq's own bundled Mozilla roots are the
/// fallback, so `webpki-roots` is not named directly.
const TOLERATED: &[&str] = &[];

/// Named by the design but not a dependency yet: empty, so the check is exact. A name here
/// needs a reason in the commit that adds it.
const NOT_YET: &[&str] = &[];

/// The names declared in every `[*dependencies]` table of `manifest` (including
/// `[target.'…'.dependencies]`, `[build-dependencies]` and `[dev-dependencies]`: each is a
/// crate this project pulls in), and dotted-table forms like `[dependencies.serde]`.
fn declared_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.trim_end();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            // `[dependencies.serde]` declares `serde` as a table of its own.
            if let Some((table, name)) = header.rsplit_once('.') {
                if table.ends_with("dependencies") {
                    names.insert(name.trim_matches(['"', '\'']).to_string());
                    in_dependencies = false;
                    continue;
                }
            }
            in_dependencies = header.ends_with("dependencies");
            continue;
        }
        // An entry (`name = …` or `"name" = …`) starts at the line's first column;
        // continuation lines of a multi-line value are indented, or hold no `=`.
        let starts_entry = line.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '"');
        if in_dependencies && starts_entry {
            if let Some((key, _)) = line.split_once('=') {
                names.insert(key.trim().trim_matches(['"', '\'']).to_string());
            }
        }
    }
    names
}

#[test]
fn direct_dependencies_are_the_designs_list() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .expect("Cargo.toml");
    let present = declared_dependencies(&manifest);
    let allowed: BTreeSet<String> = DESIGN
        .iter()
        .chain(TOLERATED)
        .map(|name| name.to_string())
        .collect();
    let unexpected: Vec<&String> = present.difference(&allowed).collect();
    assert!(
        unexpected.is_empty(),
        "dependencies outside the design's list: {unexpected:?}; a new dependency needs the \
         list in tests/dependencies.rs changed, with the reason in the commit"
    );
    let missing: Vec<&&str> = DESIGN
        .iter()
        .filter(|name| !present.contains(**name) && !NOT_YET.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "the design's dependencies {missing:?} are missing from Cargo.toml"
    );
}

#[test]
fn the_line_reader_finds_every_form_of_dependency() {
    let manifest = r#"
[package]
name = "x"
version = "1"

[dependencies]
serde = { version = "1", features = [
    "derive",
] }
# a comment = "no"
"regex-lite" = "0.1"

[target.'cfg(unix)'.dependencies]
libc = "0.2"

[dependencies.ureq]
version = "3"
features = ["rustls"]

[dev-dependencies]
extra = "1"

[profile.release]
lto = "fat"
"#;
    let names: Vec<String> = declared_dependencies(manifest).into_iter().collect();
    assert_eq!(names, ["extra", "libc", "regex-lite", "serde", "ureq"]);
}
