//! `@` references in chat messages (§3.9): `@path` to an existing file or directory and
//! `@server:uri` to a resource of a connected MCP server are resolved into tagged blocks
//! prepended to the message; anything else (an `@mention`, an e-mail address, a path that
//! does not exist) stays literal text. Also the one-level directory listing behind the `@`
//! completion menu, which never walks recursively.
//!
//! Only text a person typed is searched for references; a template (a custom command's body,
//! a skill, an MCP prompt) keeps its `@` words literal, so a repository or a server cannot
//! make us read a file into the conversation (see `input.rs`). Every path reference then goes
//! through [`admit`], the one gate: resolved with its symlinks, it must lie under the
//! workspace root or an `allow_write` root, outside the reasonix home, and not be hidden
//! (`forbid_read` and its defaults); otherwise it is refused with a line saying why.
//!
//! Reads here are user-initiated and read-only, so they do not pass the permission gate.

use std::path::{Path, PathBuf};

use crate::mcp::McpHost;
use crate::sandbox::Policy;
use crate::tool::walk::{self, EntryKind, Walk};

/// A file's content beyond this is cut, with a note saying so.
pub const FILE_CAP: usize = 100 * 1024;
/// A directory listing stops after this many entries.
pub const LISTING_CAP: usize = 500;
/// The completion menu reads at most this many entries of one directory.
const COMPLETION_SCAN: usize = 2000;

/// One `@` token found in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The text after `@`, trailing sentence punctuation removed.
    pub target: String,
}

/// The `@` tokens of `text`. An `@` counts only at the start or after whitespace or an
/// opening bracket, so `user@example.com` is not a reference.
pub fn find(text: &str) -> Vec<Reference> {
    let mut refs: Vec<Reference> = Vec::new();
    let mut previous: Option<char> = None;
    for (i, c) in text.char_indices() {
        let starts = c == '@'
            && previous.is_none_or(|p| p.is_whitespace() || matches!(p, '(' | '[' | '"' | '\''));
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = &text[i + 1..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let target = rest[..end].trim_end_matches([',', ';', '!', '?', ')', ']', '"', '\'']);
        if target.is_empty() {
            continue;
        }
        if !refs.iter().any(|r| r.target == target) {
            refs.push(Reference {
                target: target.to_string(),
            });
        }
    }
    refs
}

/// The outcome of resolving a message's references.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The blocks followed by the original message.
    pub text: String,
    /// Targets that became blocks, for the transcript (`@src/main.rs`).
    pub attached: Vec<String>,
    /// Failures the user should hear about; the message is sent regardless.
    pub notices: Vec<String>,
}

/// Resolves every reference in `message` against `cwd` and the MCP host, within `sandbox`.
pub fn resolve(message: &str, cwd: &Path, sandbox: &Policy, mcp: &dyn McpHost) -> Resolved {
    resolve_typed(message, message, cwd, sandbox, mcp)
}

/// Resolves the references found in `typed` (what the user wrote) and prepends their blocks
/// to `message`, which may hold text from elsewhere (a rendered MCP prompt or custom command)
/// whose own `@` words are left alone.
pub fn resolve_typed(
    message: &str,
    typed: &str,
    cwd: &Path,
    sandbox: &Policy,
    mcp: &dyn McpHost,
) -> Resolved {
    let mut resolved = Resolved::default();
    let servers: Vec<String> = mcp
        .servers()
        .into_iter()
        .filter(|s| s.status == "connected")
        .map(|s| s.name)
        .collect();
    let mut blocks = Vec::new();
    for reference in find(typed) {
        let target = reference.target.as_str();
        // "see @notes.md." : the sentence's full stop is not part of the path.
        let target = match local_path(target, cwd) {
            None if target.ends_with(['.', ':']) => target.trim_end_matches(['.', ':']),
            _ => target,
        };
        if let Some((server, uri)) = mcp_target(target, &servers) {
            match mcp.read_resource(server, uri) {
                Ok(content) => {
                    blocks.push(format!(
                        "<resource ref=\"{}\">\n{}\n</resource>",
                        attribute(target),
                        content.trim_end()
                    ));
                    resolved.attached.push(format!("@{target}"));
                }
                Err(err) => resolved.notices.push(format!(
                    "cannot read @{target}: {}",
                    err.to_string().trim_start_matches("mcp: ")
                )),
            }
            continue;
        }
        let Some(path) = local_path(target, cwd) else {
            continue;
        };
        let path = match admit(&path, sandbox) {
            Ok(path) => path,
            Err(why) => {
                resolved
                    .notices
                    .push(format!("cannot attach @{target}: {why}"));
                continue;
            }
        };
        match block_for_path(target, &path) {
            Ok(block) => {
                blocks.push(block);
                resolved.attached.push(format!("@{target}"));
            }
            Err(err) => resolved
                .notices
                .push(format!("cannot read @{target}: {err}")),
        }
    }
    resolved.text = if blocks.is_empty() {
        message.to_string()
    } else {
        format!("{}\n\n{message}", blocks.join("\n\n"))
    };
    resolved
}

/// The path a reference may attach: `path` with its symlinks resolved, when that lies under
/// the workspace root or an `allow_write` root, outside the reasonix home, and is not hidden
/// by `forbid_read` (its defaults and `<home>/.env` included, hard links by inode). The one
/// check every `@` path passes; the reason is a sentence for "cannot attach @x: …".
pub fn admit(path: &Path, sandbox: &Policy) -> Result<PathBuf, String> {
    let resolved = crate::sandbox::confine::resolve(path).map_err(|e| e.to_string())?;
    if !sandbox.roots().any(|root| resolved.starts_with(root)) {
        return Err(
            "it is outside the workspace (symlinks followed); `@` attaches only files under \
             the workspace and the [sandbox] allow_write roots"
                .into(),
        );
    }
    if sandbox.protects(&resolved).is_some() {
        return Err("it is inside the reasonix home, which holds your keys and sessions".into());
    }
    sandbox
        .check_read(&resolved)
        .map_err(|_| "it is hidden by [sandbox] forbid_read".to_string())
}

/// The boundary of a front end that has no session sandbox at hand: the workspace `cwd`, the
/// reasonix home of the environment protected, and the default hidden paths. It is never
/// wider than a session's.
pub fn workspace_boundary(cwd: &Path) -> Policy {
    let Some(home) = crate::config::paths::home_from(
        std::env::var_os("REASONIX_HOME"),
        std::env::var_os("HOME"),
        cwd,
    ) else {
        return Policy::workspace_only(cwd);
    };
    let config = crate::config::Config {
        home,
        ..crate::config::Config::default()
    };
    match crate::sandbox::Settings::from_config(&config, cwd) {
        Ok(settings) => Policy::new(settings),
        Err(_) => Policy::workspace_only(cwd),
    }
}

fn mcp_target<'a>(target: &'a str, servers: &[String]) -> Option<(&'a str, &'a str)> {
    let (server, uri) = target.split_once(':')?;
    (servers.iter().any(|s| s == server) && !uri.is_empty()).then_some((server, uri))
}

/// The path a target names when it exists: relative to `cwd`, absolute, or `~/…`.
fn local_path(target: &str, cwd: &Path) -> Option<PathBuf> {
    let path = if let Some(rest) = target.strip_prefix("~/") {
        PathBuf::from(std::env::var_os("HOME")?).join(rest)
    } else {
        cwd.join(target)
    };
    std::fs::symlink_metadata(&path).ok()?;
    Some(path)
}

fn attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

fn block_for_path(target: &str, path: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Ok(directory_block(target, path));
    }
    let bytes = read_capped(path, FILE_CAP + 1)?;
    let shown = attribute(target);
    let sniff = &bytes[..bytes.len().min(8192)];
    if sniff.contains(&0) || std::str::from_utf8(&bytes[..valid_utf8_prefix(&bytes)]).is_err() {
        return Ok(format!(
            "<file path=\"{shown}\" binary=\"true\" bytes=\"{}\">(binary file, content not shown)</file>",
            meta.len()
        ));
    }
    let cut = bytes.len() > FILE_CAP;
    let end = if cut {
        valid_utf8_prefix(&bytes[..FILE_CAP])
    } else {
        bytes.len()
    };
    let text = String::from_utf8_lossy(&bytes[..end]);
    let note = if cut {
        format!(
            "\n[… truncated: showing the first {end} of {} bytes]",
            meta.len()
        )
    } else {
        String::new()
    };
    Ok(format!(
        "<file path=\"{shown}\">\n{}{note}\n</file>",
        text.trim_end_matches('\n')
    ))
}

/// The length of the longest prefix that is valid UTF-8 when only the tail may be cut
/// mid-character; a real encoding error earlier makes the whole file binary.
fn valid_utf8_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

fn read_capped(path: &Path, cap: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::open(path)?
        .take(cap as u64)
        .read_to_end(&mut data)?;
    Ok(data)
}

/// A depth-first listing of the directory, skipping `.git`, `node_modules` and the like
/// (and, inside a repository, what its ignore files exclude).
fn directory_block(target: &str, dir: &Path) -> String {
    let mut lines = Vec::new();
    let mut more = false;
    for entry in Walk::new(dir, walk::Options::default()) {
        if lines.len() >= LISTING_CAP {
            more = true;
            break;
        }
        let name = entry
            .path
            .strip_prefix(dir)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let indent = "  ".repeat(entry.depth.saturating_sub(1));
        let leaf = name.rsplit('/').next().unwrap_or(&name).to_string();
        let suffix = if entry.kind == EntryKind::Dir {
            "/"
        } else {
            ""
        };
        lines.push(format!("{indent}{leaf}{suffix}"));
    }
    if more {
        lines.push(format!("[… listing stopped after {LISTING_CAP} entries]"));
    }
    format!(
        "<directory path=\"{}\">\n{}\n</directory>",
        attribute(target),
        lines.join("\n")
    )
}

/// One entry of the `@` completion menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What the menu shows.
    pub label: String,
    /// The text that replaces the token after `@`.
    pub completion: String,
    /// A directory descends (the menu stays open on its contents).
    pub is_dir: bool,
}

/// Entries of one directory level matching what was typed after `@`: `src/ma` lists `src/`
/// entries starting with `ma`. Dot entries show only when the typed name starts with a dot.
/// MCP resources are offered at the top level. Never recursive; at most
/// [`COMPLETION_SCAN`] entries of the directory are read.
pub fn complete(typed: &str, cwd: &Path, mcp: &dyn McpHost) -> Vec<Candidate> {
    let (dir_part, name_part) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let dir = if let Some(rest) = dir_part.strip_prefix("~/") {
        match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Vec::new(),
        }
    } else {
        cwd.join(dir_part)
    };
    let mut candidates = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.take(COMPLETION_SCAN).flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && !name_part.starts_with('.') {
                continue;
            }
            if walk::ALWAYS_SKIPPED.contains(&name.as_str()) {
                continue;
            }
            if !name.to_lowercase().starts_with(&name_part.to_lowercase()) {
                continue;
            }
            let is_dir = entry.path().is_dir();
            let suffix = if is_dir { "/" } else { "" };
            candidates.push(Candidate {
                label: format!("{name}{suffix}"),
                completion: format!("{dir_part}{name}{suffix}"),
                is_dir,
            });
        }
    }
    candidates.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then(a.label.cmp(&b.label)));
    if dir_part.is_empty() {
        for resource in mcp.resources() {
            let reference = resource.reference();
            if reference.starts_with(typed) {
                candidates.push(Candidate {
                    label: format!("{reference}  {}", resource.name),
                    completion: reference,
                    is_dir: false,
                });
            }
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use crate::mcp::host::{ResourceInfo, ServerInfo};
    use crate::mcp::McpError;
    use std::collections::BTreeMap;

    struct FakeMcp;
    impl McpHost for FakeMcp {
        fn servers(&self) -> Vec<ServerInfo> {
            vec![ServerInfo {
                name: "docs".into(),
                status: "connected".into(),
                tools: 0,
                prompts: 0,
                resources: 2,
            }]
        }
        fn prompts(&self) -> Vec<crate::mcp::host::PromptInfo> {
            Vec::new()
        }
        fn get_prompt(
            &self,
            _: &str,
            _: &str,
            _: &BTreeMap<String, String>,
        ) -> Result<String, McpError> {
            Err(McpError::NotConnected("docs".into()))
        }
        fn resources(&self) -> Vec<ResourceInfo> {
            vec![ResourceInfo {
                server: "docs".into(),
                uri: "guide://intro".into(),
                name: "Intro".into(),
            }]
        }
        fn read_resource(&self, _server: &str, uri: &str) -> Result<String, McpError> {
            if uri == "guide://intro" {
                Ok("Welcome.".into())
            } else {
                Err(McpError::Protocol("resource not found".into()))
            }
        }
    }

    #[test]
    fn finds_references_but_not_emails() {
        let refs: Vec<String> = find("see @a.rs, mail bob@example.com (@b/c) @a.rs @ x")
            .into_iter()
            .map(|r| r.target)
            .collect();
        assert_eq!(refs, vec!["a.rs", "b/c"]);
    }

    #[test]
    fn files_directories_resources_and_literals() {
        let dir = TempDir::new("resolve");
        dir.write("src/main.rs", b"fn main() {}\n");
        dir.write("src/lib/util.rs", b"");
        dir.write("node_modules/pkg/index.js", b"");
        dir.write("blob.bin", [0, 1, 2, 3]);
        let r = resolve(
            "explain @src/main.rs and @src, ask @alice, mail a@b.c, read @docs:guide://intro and @docs:missing",
            dir.path(),
            &Policy::workspace_only(dir.path()),
            &FakeMcp,
        );
        assert!(r.text.starts_with("<file path=\"src/main.rs\">\nfn main() {}\n</file>\n\n<directory path=\"src\">\nlib/\n  util.rs\nmain.rs\n</directory>\n\n<resource ref=\"docs:guide://intro\">\nWelcome.\n</resource>\n\nexplain @src/main.rs"), "{}", r.text);
        assert_eq!(
            r.attached,
            vec!["@src/main.rs", "@src", "@docs:guide://intro"]
        );
        assert_eq!(
            r.notices,
            vec!["cannot read @docs:missing: protocol error: resource not found"]
        );
        let r = resolve(
            "@blob.bin @. and @src/main.rs.",
            dir.path(),
            &Policy::workspace_only(dir.path()),
            &FakeMcp,
        );
        assert_eq!(r.attached, vec!["@blob.bin", "@.", "@src/main.rs"]);
        assert!(r.text.contains("binary=\"true\""), "{}", r.text);
        assert!(!r.text.contains("node_modules"), "{}", r.text);
        let plain = resolve(
            "nothing to see @nobody",
            dir.path(),
            &Policy::workspace_only(dir.path()),
            &FakeMcp,
        );
        assert_eq!(plain.text, "nothing to see @nobody");
        assert!(plain.notices.is_empty());
    }

    #[test]
    fn large_files_are_capped_on_a_character_boundary() {
        let dir = TempDir::new("cap");
        let big = "日".repeat(FILE_CAP / 3 + 10);
        dir.write("big.txt", big.as_bytes());
        let r = resolve(
            "@big.txt",
            dir.path(),
            &Policy::workspace_only(dir.path()),
            &FakeMcp,
        );
        assert!(
            r.text.contains("[… truncated: showing the first"),
            "{}",
            &r.text[r.text.len() - 200..]
        );
        assert!(r.text.len() < FILE_CAP + 500);
    }

    #[test]
    fn completion_lists_one_level_dirs_first_and_resources_at_top() {
        let dir = TempDir::new("complete");
        dir.write("src/main.rs", b"");
        dir.write("src/mod/x.rs", b"");
        dir.write("src/.hidden", b"");
        dir.write("README.md", b"");
        let top = complete("", dir.path(), &FakeMcp);
        let labels: Vec<&str> = top.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            vec!["src/", "README.md", "docs:guide://intro  Intro"]
        );
        let inner = complete("src/m", dir.path(), &FakeMcp);
        let completions: Vec<&str> = inner.iter().map(|c| c.completion.as_str()).collect();
        assert_eq!(completions, vec!["src/mod/", "src/main.rs"]);
        assert!(inner[0].is_dir);
        assert_eq!(complete("src/.h", dir.path(), &FakeMcp)[0].label, ".hidden");
        assert!(complete("nope/", dir.path(), &FakeMcp).is_empty());
    }

    #[test]
    fn admit_refuses_outside_the_roots_the_home_and_hidden_paths_after_symlinks() {
        let dir = TempDir::new("admit");
        dir.write("ws/in.txt", b"in");
        dir.write("ws/secret/key", b"k");
        dir.write("out.txt", b"out");
        dir.write("home/config.toml", b"");
        let ws = dir.path().join("ws");
        std::os::unix::fs::symlink(dir.path().join("out.txt"), ws.join("link")).unwrap();
        let settings = crate::sandbox::Settings {
            workspace_root: ws.clone(),
            home: dir.path().join("home"),
            allow_write: Vec::new(),
            forbid_read: vec![ws.join("secret")],
            bash: crate::sandbox::BashMode::Off,
            network: false,
            backend: crate::sandbox::Backend::Auto,
        };
        let policy = Policy::new(settings);
        assert!(admit(&ws.join("in.txt"), &policy).is_ok());
        for outside in [ws.join("link"), ws.join("../out.txt")] {
            let why = admit(&outside, &policy).unwrap_err();
            assert!(why.contains("outside the workspace"), "{why}");
        }
        let why = admit(&ws.join("secret/key"), &policy).unwrap_err();
        assert!(why.contains("forbid_read"), "{why}");
        let inside_home = Policy::new(crate::sandbox::Settings {
            workspace_root: dir.path().to_path_buf(),
            home: dir.path().join("home"),
            allow_write: Vec::new(),
            forbid_read: Vec::new(),
            bash: crate::sandbox::BashMode::Off,
            network: false,
            backend: crate::sandbox::Backend::Auto,
        });
        let why = admit(&dir.path().join("home/config.toml"), &inside_home).unwrap_err();
        assert!(why.contains("reasonix home"), "{why}");
    }
}
