//! Retained resources (AGENT_COMPOSITIONS "Files and retained resources"): binding a
//! conversation freezes the files of the skills its composition selected into a bundle under
//! `<state>/trusted/agent-presets/retained/<digest>/`, and the bound conversation reads its
//! skills from there, so a later edit of a skill does not follow into it. Its selected
//! non-blocking hooks are kept as they were, each script file a hook's command names frozen
//! with the folder it lives in (its sibling bundle) and the command pointed at the copy (an
//! imported binding's hooks never run: `resolve::apply` keeps the machine's own). The binding records
//! the bundle ([`Retained`]): each file's sha256 and one digest over the list, which names
//! the directory. A bundle is content-addressed and never rewritten.
//!
//! What a bundle may hold is fixed: regular files only (every entry is looked at with
//! `lstat` and opened with `O_NOFOLLOW`; a symbolic link, a FIFO or a device is refused), no
//! credential file ([`credential_name`]), at most [`MAX_FILE_BYTES`] a file, [`MAX_FILES`]
//! files and [`MAX_BUNDLE_BYTES`] in all. Binding refuses a skill that breaks a rule, with one
//! line naming the file, rather than dropping the file: the bundle travels with the
//! conversation's archive, and a silently thinned skill is not the one the user selected.
//! The same rules judge a bundle carried in by an archive ([`check_resources`]), whose
//! paths must also stay inside the bundle.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Code, CompositionError};
use crate::skill::store::Store;
use crate::skill::Scope;

/// The largest file a bundle holds.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most bytes a bundle holds in all.
pub const MAX_BUNDLE_BYTES: u64 = 16 * 1024 * 1024;
/// The most files a bundle holds.
pub const MAX_FILES: usize = 1024;
/// How deep a skill folder is walked.
const MAX_DEPTH: usize = 8;
/// The bundle's own copy of its [`Retained`] record, read when the skills are loaded.
const MANIFEST: &str = "manifest.json";

/// A conversation's retained bundle, as its binding records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retained {
    /// sha256 of the skills and files below; the bundle's directory name.
    pub digest: String,
    pub skills: Vec<RetainedSkill>,
    /// The selected non-blocking `[[hooks]]` as they were at binding, their script files
    /// pointing into the bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<RetainedHook>,
    /// Path inside the bundle (`skills/NAME/...`, `agents/NAME.md`) to the file's sha256.
    pub files: BTreeMap<String, String>,
}

/// One frozen skill: where its main file is in the bundle, and the standing it had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetainedSkill {
    pub name: String,
    /// The scope it was found in (`user`, `project`, `custom:PATH`, ...).
    pub scope: String,
    /// Whether it was trusted then (a repository skill of an untrusted workspace is not).
    pub trusted: bool,
    /// `skills/NAME/SKILL.md`, or `agents/NAME.md` for a Claude Code agent file.
    pub file: String,
}

/// One selected non-blocking hook as it was at binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetainedHook {
    pub event: String,
    pub matcher: String,
    /// The command, each script file it named replaced by its copy in the bundle.
    pub command: String,
    pub timeout_seconds: u64,
}

impl RetainedHook {
    fn to_config(&self, dir: &Path) -> crate::config::file::HookConfig {
        let quoted = format!("'{}'", dir.display().to_string().replace('\'', "'\\''"));
        crate::config::file::HookConfig {
            event: self.event.clone(),
            matcher: self.matcher.clone(),
            command: self.command.replace(PLACEHOLDER, &quoted),
            timeout_seconds: self.timeout_seconds,
        }
    }
}

impl Retained {
    fn compute_digest(
        skills: &[RetainedSkill],
        hooks: &[RetainedHook],
        files: &BTreeMap<String, String>,
    ) -> String {
        let bytes = serde_json::to_vec(&(skills, hooks, files)).unwrap_or_default();
        crate::hash::sha256_hex(&bytes)
    }

    /// No skill was frozen: nothing is written, and the conversation has no skills.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty() && self.files.is_empty()
    }

    /// The retained hooks as `[[hooks]]` entries running the bundle's copies in `dir`.
    pub fn hook_configs(&self, dir: &Path) -> Vec<crate::config::file::HookConfig> {
        self.hooks.iter().map(|h| h.to_config(dir)).collect()
    }

    /// Whether the recorded digest is that of the recorded skills and files.
    pub fn digest_matches(&self) -> bool {
        self.digest == Self::compute_digest(&self.skills, &self.hooks, &self.files)
    }
}

/// `<state>/trusted/agent-presets/retained`.
pub fn root(home: &Path) -> PathBuf {
    crate::config::paths::state_dir(home)
        .join("trusted")
        .join("agent-presets")
        .join("retained")
}

/// The directory of the bundle `retained` names.
pub fn bundle_dir(home: &Path, retained: &Retained) -> PathBuf {
    root(home).join(&retained.digest)
}

fn unavailable(message: String) -> CompositionError {
    CompositionError::new(Code::Unavailable, message)
}

/// Freezes the files of the skills `selected` names (as `store` has them) into a bundle
/// under `home` and returns its record. Built-in profiles have no files and are not frozen.
pub fn freeze(
    binding_id: &str,
    selected: &Selected,
    home: &Path,
) -> Result<Retained, CompositionError> {
    let mut skills = Vec::new();
    let mut contents: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut total = 0u64;
    let store = selected.store;
    for name in selected.skills {
        let Some(skill) = store.get(name) else {
            continue;
        };
        let refuse = |what: String| {
            unavailable(format!(
                "{binding_id}: skill `{name}` cannot be retained: {what}; a retained bundle holds \
                 only regular files and no credentials. Move it out of {}, or leave the skill \
                 out of the composition",
                skill.dir.display()
            ))
        };
        let (main, sources) = match skill.scope {
            Scope::Builtin => continue,
            Scope::ClaudeAgents => {
                let file = crate::skill::store::agent_file(&skill.dir, name)
                    .ok_or_else(|| refuse("its agent file was not found again".into()))?;
                let main = format!("agents/{name}.md");
                (main.clone(), vec![(main, file)])
            }
            _ => {
                let mut found = Vec::new();
                walk(&skill.dir, &format!("skills/{name}"), 0, &mut found).map_err(refuse)?;
                (format!("skills/{name}/SKILL.md"), found)
            }
        };
        if !sources.iter().any(|(path, _)| *path == main) {
            return Err(refuse(format!("{main} is not a regular file")));
        }
        add_files(&mut contents, &mut total, sources).map_err(refuse)?;
        skills.push(RetainedSkill {
            name: name.clone(),
            scope: scope_label(&skill.scope),
            trusted: skill.trusted,
            file: main,
        });
    }
    let mut hooks = Vec::new();
    for (index, hook) in selected.hooks.iter().enumerate() {
        let refuse = |what: String| {
            unavailable(format!(
                "{binding_id}: the {} hook `{}` cannot be retained: {what}; a retained bundle \
                 holds only regular files and no credentials. Keep hook code in a dedicated \
                 directory, or leave the {} hooks out of the composition",
                hook.event, hook.command, hook.event
            ))
        };
        let mut command = String::new();
        let mut scripts = 0;
        let mut rest = hook.command.as_str();
        while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
            command.push_str(&rest[..start]);
            let token_len = rest[start..]
                .find(char::is_whitespace)
                .unwrap_or(rest.len() - start);
            let token = &rest[start..start + token_len];
            rest = &rest[start + token_len..];
            let Some(file) = script_file(token, selected.cwd, selected.user_home.as_deref()) else {
                command.push_str(token);
                continue;
            };
            let meta = fs::symlink_metadata(&file)
                .map_err(|e| refuse(format!("cannot read {}: {e}", file.display())))?;
            if meta.file_type().is_symlink() {
                return Err(refuse(format!("{} is a symbolic link", file.display())));
            }
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // The spec retains a script with its sibling bundle: every file of the folder it
            // lives in (its modules, data, a package.json), so that the frozen copy runs as
            // the original did. Hence the advice to keep hook code in a folder of its own.
            let folder = format!("hooks/{index}/{scripts}");
            scripts += 1;
            let path = format!("{folder}/{name}");
            check_path(&path).map_err(|_| refuse(format!("`{name}` is not a plain file name")))?;
            let mut siblings = Vec::new();
            let dir = file.parent().unwrap_or(selected.cwd);
            walk(dir, &folder, 0, &mut siblings)
                .map_err(|why| refuse(format!("its folder {}: {why}", dir.display())))?;
            for (sibling_path, _) in &siblings {
                check_path(sibling_path).map_err(&refuse)?;
            }
            add_files(&mut contents, &mut total, siblings).map_err(refuse)?;
            command.push_str(&format!("{PLACEHOLDER}/{path}"));
        }
        command.push_str(rest);
        hooks.push(RetainedHook {
            event: hook.event.clone(),
            matcher: hook.matcher.clone(),
            command,
            timeout_seconds: hook.timeout_seconds,
        });
    }
    let files: BTreeMap<String, String> = contents
        .iter()
        .map(|(path, bytes)| (path.clone(), crate::hash::sha256_hex(bytes)))
        .collect();
    let retained = Retained {
        digest: Retained::compute_digest(&skills, &hooks, &files),
        skills,
        hooks,
        files,
    };
    install(home, &retained, &contents).map_err(|e| {
        unavailable(format!(
            "{binding_id}: cannot write its retained bundle under {}: {e}",
            root(home).display()
        ))
    })?;
    Ok(retained)
}

/// Reads `files` (bundle path, file) into `contents`, refusing when the bundle would pass
/// its limits; `total` is the bundle's size so far.
fn add_files(
    contents: &mut BTreeMap<String, Vec<u8>>,
    total: &mut u64,
    files: Vec<(String, PathBuf)>,
) -> Result<(), String> {
    for (path, file) in files {
        let bytes = read_regular(&file)?;
        *total += bytes.len() as u64;
        if *total > MAX_BUNDLE_BYTES || contents.len() >= MAX_FILES {
            return Err(format!(
                "the bundle would pass its limits ({MAX_FILES} files, {} MiB in all)",
                MAX_BUNDLE_BYTES / (1024 * 1024)
            ));
        }
        contents.insert(path, bytes);
    }
    Ok(())
}

/// What a binding selected to retain, as this machine has it.
pub struct Selected<'a> {
    /// The selected skill names and the store they are read from.
    pub skills: &'a [String],
    pub store: &'a Store,
    /// The `[[hooks]]` entries of the selected non-blocking events (never the safety hooks,
    /// which always load from the current configuration).
    pub hooks: &'a [crate::config::file::HookConfig],
    /// Where a hook's relative script path is resolved: the workspace, where hooks run.
    pub cwd: &'a Path,
    /// For `~/` in a hook's command.
    pub user_home: Option<PathBuf>,
}

/// Stands for the bundle's directory in a retained hook's command; [`RetainedHook::to_config`]
/// puts the quoted path in its place.
const PLACEHOLDER: &str = "{{reasonix-retained}}";

/// The file of a script format a hook command's word names, when it exists: the word as a
/// whole (no quotes, variables or globs), ending in a common script extension, resolved
/// against `~` and the workspace.
fn script_file(token: &str, cwd: &Path, user_home: Option<&Path>) -> Option<PathBuf> {
    const SCRIPTS: &[&str] = &[
        "sh", "bash", "zsh", "py", "js", "mjs", "cjs", "ts", "rb", "pl", "lua", "php",
    ];
    if token.contains([
        '\'', '"', '$', '`', '*', '?', '[', '=', ';', '|', '&', '<', '>',
    ]) {
        return None;
    }
    let extension = Path::new(token).extension()?.to_str()?;
    if !SCRIPTS.contains(&extension) {
        return None;
    }
    let file = match token.strip_prefix("~/") {
        Some(rest) => user_home?.join(rest),
        None => cwd.join(token),
    };
    fs::symlink_metadata(&file).ok().map(|_| file)
}

/// Every file under `dir` as (bundle path, file), refusing links, special files, credential
/// names and folders deeper than [`MAX_DEPTH`].
fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    found: &mut Vec<(String, PathBuf)>,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{prefix} is nested deeper than {MAX_DEPTH} folders"
        ));
    }
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    // A folder holding more entries than a bundle may is refused without listing the rest
    // (a hook script at the top of a large workspace must not make binding read all of it).
    let mut entries: Vec<_> = entries.filter_map(Result::ok).take(MAX_FILES + 1).collect();
    if entries.len() > MAX_FILES {
        return Err(format!("{prefix} holds more than {MAX_FILES} entries"));
    }
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}/{name}");
        if credential_name(&name) {
            return Err(format!("`{name}` ({path}) is a credential file"));
        }
        let meta = fs::symlink_metadata(entry.path())
            .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
        if meta.file_type().is_symlink() {
            return Err(format!("`{name}` ({path}) is a symbolic link"));
        } else if meta.is_dir() {
            walk(&entry.path(), &path, depth + 1, found)?;
        } else if meta.is_file() {
            if found.len() >= MAX_FILES {
                return Err(format!("it has more than {MAX_FILES} files"));
            }
            found.push((path, entry.path()));
        } else {
            return Err(format!("`{name}` ({path}) is not a regular file"));
        }
    }
    Ok(())
}

/// A regular file's bytes, opened without following a link and checked on what was opened.
fn read_regular(file: &Path) -> Result<Vec<u8>, String> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let shown = file.display();
    let handle = options
        .open(file)
        .map_err(|e| format!("cannot open {shown} without following a link: {e}"))?;
    let meta = handle
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} has {} bytes, more than the {} KiB a retained file may have",
            meta.len(),
            MAX_FILE_BYTES / 1024
        ));
    }
    let mut bytes = Vec::new();
    handle
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("{shown} grew past the limit while it was read"));
    }
    Ok(bytes)
}

/// Writes the bundle: into a private temp directory beside it, then renamed into place, so
/// a bundle directory is either whole or absent. One already there (the same digest) is
/// checked instead of rewritten.
pub fn install(
    home: &Path,
    retained: &Retained,
    contents: &BTreeMap<String, Vec<u8>>,
) -> std::io::Result<()> {
    // A selection without skill files needs no bundle: the conversation has no skills.
    if retained.is_empty() {
        return Ok(());
    }
    let target = bundle_dir(home, retained);
    if target.exists() {
        return verify(home, retained)
            .map(|_| ())
            .map_err(std::io::Error::other);
    }
    let root = root(home);
    crate::fsutil::create_private_dir(&root)?;
    let temp = root.join(crate::fsutil::temp_name(retained.digest.as_ref()));
    let written = (|| {
        crate::fsutil::create_private_dir(&temp)?;
        for (path, bytes) in contents {
            let file = temp.join(path);
            if let Some(parent) = file.parent() {
                crate::fsutil::create_private_dir(parent)?;
            }
            crate::fsutil::write_atomic(&file, bytes, Some(0o600))?;
        }
        let manifest = serde_json::to_vec_pretty(retained).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(&temp.join(MANIFEST), &manifest, Some(0o600))?;
        fs::rename(&temp, &target)?;
        crate::fsutil::sync_dir(&root)
    })();
    if written.is_err() {
        let _ = fs::remove_dir_all(&temp);
        // Another process may have installed the same bundle meanwhile.
        if verify(home, retained).is_ok() {
            return Ok(());
        }
    }
    written
}

/// Checks the bundle of `retained` under `home`: its record's digest, its manifest, and each
/// file's bytes against the sha256 recorded, read without following links. Its directory.
pub fn verify(home: &Path, retained: &Retained) -> Result<PathBuf, String> {
    if !retained.digest_matches() {
        return Err("its record does not match its digest".into());
    }
    let dir = bundle_dir(home, retained);
    if retained.is_empty() {
        return Ok(dir);
    }
    let manifest = read_regular(&dir.join(MANIFEST))
        .map_err(|e| format!("its retained bundle is missing or unreadable ({e})"))?;
    let on_disk: Retained = serde_json::from_slice(&manifest)
        .map_err(|e| format!("its retained bundle's manifest is malformed ({e})"))?;
    if on_disk != *retained {
        return Err(format!(
            "its retained bundle at {} records other files",
            dir.display()
        ));
    }
    for (path, sha256) in &retained.files {
        let bytes = read_regular(&dir.join(path))?;
        if crate::hash::sha256_hex(&bytes) != *sha256 {
            return Err(format!(
                "the retained file {path} changed since the conversation was bound"
            ));
        }
    }
    Ok(dir)
}

/// The store a bound conversation sees: its frozen skills, read from the bundle at `dir`
/// (none when there is no bundle, since nothing was frozen), with the scope and trust they
/// had when frozen (`untrusted`: a bundle an archive brought,
/// none of which is trusted).
pub fn load_store(dir: &Path, untrusted: bool) -> Store {
    let mut store = Store::default();
    let Ok(manifest) = read_regular(&dir.join(MANIFEST)) else {
        return store;
    };
    let Ok(retained) = serde_json::from_slice::<Retained>(&manifest) else {
        return store;
    };
    for frozen in &retained.skills {
        let file = dir.join(&frozen.file);
        let read = if frozen.file.starts_with("agents/") {
            crate::skill::store::read_agent(&file)
        } else {
            crate::skill::store::read_folder(file.parent().unwrap_or(dir))
        };
        match read {
            Ok(mut skill) => {
                skill.scope = scope_from_label(&frozen.scope);
                skill.trusted = frozen.trusted && !untrusted;
                skill.name = frozen.name.clone();
                store.skills.push(skill);
            }
            Err(diagnostic) => store.diagnostics.push(diagnostic),
        }
    }
    store.skills.sort_by(|a, b| a.name.cmp(&b.name));
    store
}

/// The bundle's files as archive resources: `{path, sha256, base64}` each, in path order,
/// after the bundle is checked.
pub fn export_resources(home: &Path, retained: &Retained) -> Result<Vec<Value>, String> {
    let dir = verify(home, retained)?;
    let mut resources = Vec::new();
    for (path, sha256) in &retained.files {
        let bytes = read_regular(&dir.join(path))?;
        resources.push(json!({
            "path": path,
            "sha256": sha256,
            "base64": crate::base64::base64(&bytes),
        }));
    }
    Ok(resources)
}

/// Why an archive's resources were refused.
#[derive(Debug, PartialEq, Eq)]
pub enum ResourceError {
    Invalid(String),
    TooLarge(String),
}

/// One archive resource as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Resource {
    path: String,
    sha256: String,
    base64: String,
}

/// Checks an archive's resources against its binding's record: limits first (each file's
/// size from its encoded length, before anything is decoded, then the total), then each path
/// (inside the bundle, no credential names), each file's bytes against its sha256 and the
/// record, and finally that the files are exactly those recorded.
pub fn check_resources(
    retained: &Retained,
    resources: Vec<Value>,
) -> Result<BTreeMap<String, Vec<u8>>, ResourceError> {
    use ResourceError::{Invalid, TooLarge};
    if !retained.digest_matches() {
        return Err(Invalid(
            "binding: its retained digest does not match its files".into(),
        ));
    }
    if resources.len() > MAX_FILES {
        return Err(TooLarge(format!(
            "{} retained files; the limit is {MAX_FILES}",
            resources.len()
        )));
    }
    for skill in &retained.skills {
        check_path(&skill.file).map_err(Invalid)?;
        if !retained.files.contains_key(&skill.file) || !is_skill_name(&skill.name) {
            return Err(Invalid(format!(
                "binding: the retained skill `{}` is malformed",
                skill.name
            )));
        }
    }
    for hook in &retained.hooks {
        let mut rest = hook.command.as_str();
        while let Some(at) = rest.find(PLACEHOLDER) {
            rest = &rest[at + PLACEHOLDER.len()..];
            let path = rest
                .strip_prefix('/')
                .map(|p| p.split(char::is_whitespace).next().unwrap_or(""))
                .unwrap_or("");
            if !path.starts_with("hooks/") || !retained.files.contains_key(path) {
                return Err(Invalid(format!(
                    "binding: the retained {} hook names a file the bundle does not hold",
                    hook.event
                )));
            }
        }
    }
    let mut total = 0u64;
    let mut files = BTreeMap::new();
    for (i, value) in resources.into_iter().enumerate() {
        let n = i + 1;
        let resource: Resource =
            serde_json::from_value(value).map_err(|e| Invalid(format!("resource {n}: {e}")))?;
        let size = resource.base64.len() as u64 / 4 * 3;
        if size > MAX_FILE_BYTES + 3 {
            return Err(TooLarge(format!(
                "resource {n} ({}) has about {size} bytes; a retained file may have {} KiB",
                resource.path,
                MAX_FILE_BYTES / 1024
            )));
        }
        total += size;
        if total > MAX_BUNDLE_BYTES + 3 * n as u64 {
            return Err(TooLarge(format!(
                "the retained files pass {} MiB in all",
                MAX_BUNDLE_BYTES / (1024 * 1024)
            )));
        }
        check_path(&resource.path).map_err(|e| Invalid(format!("resource {n}: {e}")))?;
        let bytes = crate::base64::decode(&resource.base64)
            .ok_or_else(|| Invalid(format!("resource {n} ({}): not base64", resource.path)))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(TooLarge(format!(
                "resource {n} ({}) has {} bytes; a retained file may have {} KiB",
                resource.path,
                bytes.len(),
                MAX_FILE_BYTES / 1024
            )));
        }
        let sha256 = crate::hash::sha256_hex(&bytes);
        if sha256 != resource.sha256 {
            return Err(Invalid(format!(
                "resource {n} ({}): its bytes do not match its sha256",
                resource.path
            )));
        }
        if retained.files.get(&resource.path) != Some(&sha256) {
            return Err(Invalid(format!(
                "resource {n} ({}): not a file the binding's sha256 list records",
                resource.path
            )));
        }
        if files.insert(resource.path.clone(), bytes).is_some() {
            return Err(Invalid(format!(
                "resource {n} ({}) appears twice",
                resource.path
            )));
        }
    }
    if let Some(missing) = retained.files.keys().find(|p| !files.contains_key(*p)) {
        return Err(Invalid(format!(
            "the retained file {missing} the binding records is not in the archive"
        )));
    }
    Ok(files)
}

/// A path inside a bundle: `skills/...` or `agents/...`, relative, each part a plain name
/// (no `.`, `..`, empty part, backslash or control character), no credential name.
pub fn check_path(path: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "`{path}` is not a path inside a retained bundle: {why}"
        ))
    };
    if path.is_empty() || path.len() > 512 {
        return bad("empty or too long");
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return bad("a control character or a backslash");
    }
    let parts: Vec<&str> = path.split('/').collect();
    if !matches!(parts[0], "skills" | "agents" | "hooks") || parts.len() < 2 {
        return bad("it must be under skills/, agents/ or hooks/");
    }
    for part in &parts {
        if part.is_empty() || *part == "." || *part == ".." {
            return bad("an empty, `.` or `..` part");
        }
        if credential_name(part) {
            return bad("a credential file's name");
        }
    }
    Ok(())
}

fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
        && !name.starts_with('.')
}

/// Whether a file or folder name is where credentials live: the places
/// `[sandbox] default_forbid_read` hides by default (`config::file::DEFAULT_FORBID_READ`),
/// the provider key store's `.env` (and `.env.*`), and private keys by their usual names.
pub fn credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    const NAMES: &[&str] = &[
        ".env",
        ".ssh",
        ".gnupg",
        ".aws",
        "gcloud",
        ".azure",
        ".kube",
        ".docker",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        "credentials",
        "credentials.toml",
        "credentials.json",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
    ];
    const SUFFIXES: &[&str] = &[".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"];
    NAMES.contains(&name.as_str())
        || name.starts_with(".env.")
        || SUFFIXES.iter().any(|s| name.ends_with(s))
}

fn scope_label(scope: &Scope) -> String {
    match scope {
        Scope::Custom(path) => format!("custom:{path}"),
        other => other.label().to_string(),
    }
}

fn scope_from_label(label: &str) -> Scope {
    match label {
        "project" => Scope::Project,
        "user" => Scope::User,
        "agents" => Scope::Agents,
        "claude" => Scope::Claude,
        "claude-user" => Scope::ClaudeUser,
        "claude-agents" => Scope::ClaudeAgents,
        other => match other.strip_prefix("custom:") {
            Some(path) => Scope::Custom(path.to_string()),
            // An unknown word is read as the repository's: the least trusted standing.
            None => Scope::Project,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with more entries than a bundle may hold is refused after reading one more
    /// than the limit, not after listing all of it.
    #[test]
    fn a_folder_past_the_file_limit_is_refused_when_listed() {
        let dir = crate::fsutil::scratch::TempDir::new("retain-many");
        for n in 0..=MAX_FILES {
            fs::write(dir.join(format!("f{n}")), "").unwrap();
        }
        let mut found = Vec::new();
        let err = walk(dir.path(), "hooks/0/0", 0, &mut found).unwrap_err();
        assert!(err.contains("holds more than 1024 entries"), "{err}");
        assert!(found.is_empty());
    }

    #[test]
    fn every_default_forbidden_location_is_a_credential_name() {
        for entry in crate::config::file::DEFAULT_FORBID_READ {
            let rest = entry.trim_start_matches("${HOME}/");
            assert!(
                rest.split('/').any(credential_name),
                "{entry} is hidden from tools but could be retained"
            );
        }
        for ok in ["SKILL.md", "deploy.sh", "env.md", "keys.md", "config.json"] {
            assert!(!credential_name(ok), "{ok}");
        }
        for bad in [".env", ".env.local", "server.PEM", "id_ed25519", "tls.key"] {
            assert!(credential_name(bad), "{bad}");
        }
    }

    #[test]
    fn bundle_paths_stay_inside_the_bundle() {
        for ok in [
            "skills/deploy/SKILL.md",
            "skills/a/references/b.md",
            "agents/x.md",
        ] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "skills/../x",
            "skills/./x",
            "skills//x",
            "other/x",
            "skills",
            "skills/a\\..\\b",
            "skills/a/.ssh/config",
            "skills/a/\u{1b}[2J",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }

    fn record(files: &[(&str, &[u8])]) -> (Retained, Vec<Value>) {
        let files: BTreeMap<String, String> = files
            .iter()
            .map(|(p, b)| (p.to_string(), crate::hash::sha256_hex(b)))
            .collect();
        let skills = vec![RetainedSkill {
            name: "a".into(),
            scope: "user".into(),
            trusted: true,
            file: "skills/a/SKILL.md".into(),
        }];
        let retained = Retained {
            digest: Retained::compute_digest(&skills, &[], &files),
            skills,
            hooks: Vec::new(),
            files,
        };
        (retained, Vec::new())
    }

    fn resource(path: &str, bytes: &[u8]) -> Value {
        json!({"path": path, "sha256": crate::hash::sha256_hex(bytes), "base64": crate::base64::base64(bytes)})
    }

    #[test]
    fn archive_resources_must_be_exactly_the_recorded_files() {
        let (retained, _) = record(&[("skills/a/SKILL.md", b"body")]);
        let good = vec![resource("skills/a/SKILL.md", b"body")];
        assert_eq!(
            check_resources(&retained, good).unwrap()["skills/a/SKILL.md"],
            b"body"
        );
        let other = vec![resource("skills/a/SKILL.md", b"other")];
        assert!(matches!(
            check_resources(&retained, other),
            Err(ResourceError::Invalid(_))
        ));
        assert!(matches!(
            check_resources(&retained, Vec::new()),
            Err(ResourceError::Invalid(_))
        ));
        let mut forged = retained.clone();
        forged.skills[0].trusted = false;
        assert!(!forged.digest_matches());
        let big = vec![json!({"path": "skills/a/SKILL.md", "sha256": "x",
            "base64": "A".repeat(MAX_FILE_BYTES as usize * 2)})];
        assert!(matches!(
            check_resources(&retained, big),
            Err(ResourceError::TooLarge(_))
        ));
    }
}
