//! Layering: built-in defaults < user `<home>/config.toml` < project `./reasonix.toml` <
//! `--config FILE`. Flags are applied above this by the `cli` layer.
//!
//! Each file is parsed into the `toml` crate's spanned document, `DeTable` (syntax errors carry
//! a span), after refusing a file over [`MAX_FILE_BYTES`]; the crate bounds nesting itself.
//! Every span of a file is then moved past the files before it, so one offset names one place
//! in one file (see [`Sources`]). On each file's document:
//! 1. retired keys are dropped silently and unsupported ones with a warning;
//! 2. the project file loses its user-only keys, with a warning each, and, until the user
//!    trusts the workspace, everything that would loosen the layers beneath (see
//!    [`restrain_project`]);
//! 3. relative paths are resolved against the file's directory.
//!
//! The documents are merged: tables key by key, plain arrays replaced, `[[providers]]` and
//! `[[plugins]]` by `name`, and the restricting lists (`permissions.deny`, `permissions.ask`,
//! `sandbox.forbid_read`) accumulated so no later file can drop an earlier file's restriction.
//! The merged document is read into [`Config`] once, by `document.rs`: a type error names the
//! key and the `file:line:col` of the layer that set it, and every key no struct has comes back
//! as an unknown-key warning. Last, what serde cannot express is validated (a provider must
//! name a model, ratios are fractions), pointing at the key in the same way.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use super::document::{self, KeyPath, Seg};
use super::file::{builtin_provider, Config, Layer, PermissionMode, PluginType};
use super::trust::{Standing, TrustStore};
use super::{paths, ConfigError};

/// Where to look for config files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// The reasonix home; its `config.toml` is the user layer.
    pub home: PathBuf,
    /// The working directory; its `reasonix.toml` is the project layer.
    pub cwd: PathBuf,
    /// `--config FILE`, the top file layer; relative paths are taken against `cwd`.
    pub extra: Option<PathBuf>,
    /// `--trust-project`: believe the project file for this run as if the workspace were
    /// trusted (nothing is stored). Otherwise the trust list in `home` decides.
    pub trust_project: bool,
    /// `--permission-mode strict`: flags beat project files, so the project's allow rules and
    /// a wider `[permissions] mode` are ignored even in a trusted workspace.
    pub strict: bool,
    /// Claude print mode's `--setting-sources` (see `Config::claude_setting_sources`).
    pub claude_setting_sources: Option<Vec<String>>,
}

impl LoadOptions {
    /// home = `$REASONIX_HOME`, else `$HOME/.reasonix`.
    pub fn from_env(cwd: PathBuf, extra: Option<PathBuf>) -> Result<LoadOptions, ConfigError> {
        let home = paths::home_from(
            std::env::var_os("REASONIX_HOME"),
            std::env::var_os("HOME"),
            &cwd,
        )
        .ok_or(ConfigError::NoHome)?;
        Ok(LoadOptions {
            home,
            cwd,
            extra,
            trust_project: false,
            strict: false,
            claude_setting_sources: None,
        })
    }
}

/// The layered config plus everything worth telling the user that did not stop loading.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// One line each, `path:line:col: detail`.
    pub warnings: Vec<String>,
    /// The project file was believed: the workspace is trusted or `--trust-project` was given.
    pub trusted: bool,
    /// The project-file keys ignored because the workspace is not trusted (trusting it would
    /// apply them), e.g. `permissions.allow`. Also reported in `warnings`.
    pub untrusted: Vec<String>,
}

/// Keys from older versions: accepted and ignored. The user config file is rewritten once
/// without them (see [`retire_keys`]); a project or `--config` file is not ours to rewrite,
/// so there they are ignored without a word.
const RETIRED: &[&str] = &[
    "agent.max_steps",
    "agent.planner_max_steps",
    "planner_max_steps",
];

/// Keys of the schema that nothing implements yet, by path (`plugins.x` is `x` in any
/// `[[plugins]]` entry; a table stands for everything in it). Setting one is ignored with one
/// warning each, so no key silently does nothing; an issue that implements a key removes it
/// here. Listed in `reasonix.example.toml` and the README too. None is left: `ui.shortcut_layout`
/// left the list as a compatibility setting (the spec gives it no key maps for a terminal), so it
/// is accepted and has no effect. The unit tests list a made-up key so the warning stays tested.
#[cfg(not(test))]
pub const UNSUPPORTED: &[&str] = &[];
#[cfg(test)]
pub const UNSUPPORTED: &[&str] = &["ui.not_implemented_here"];

/// Keys a project file may not set: a repository must not loosen its own jail or pick the binary
/// we execute. Listed in `reasonix.example.toml` too.
pub const USER_ONLY: &[&str] = &[
    "agent.reviewer_model",
    "sandbox.workspace_root",
    "sandbox.allow_write",
    "sandbox.default_forbid_read",
    "sandbox.bash",
    "sandbox.network",
    "sandbox.backend",
    "tools.shell.path",
    "tools.shell.prefer",
    "serve",
];

/// Provider keys a project file may not set.
const PROVIDER_USER_ONLY: &[&str] = &["api_key_env", "headers"];

/// Arrays that accumulate across layers instead of being replaced: restrictions, so a later
/// file can add to them but never drop an earlier file's entries.
const ACCUMULATE: &[&str] = &[
    "permissions.deny",
    "permissions.ask",
    "sandbox.forbid_read",
    "hooks",
];

/// Arrays of tables merged by their `name` key.
const NAMED: &[&str] = &["providers", "plugins"];

pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let store = TrustStore::new(&opts.home);
    let standing = store.standing(&opts.cwd);
    let trusted = opts.trust_project || standing == Standing::Trusted;
    let changed = !opts.trust_project && standing == Standing::Changed;
    let review = store.review(&opts.cwd);
    if !review.changed.is_empty() {
        // One line for every front end that loads the config: which files lost their trust
        // and how to give it back.
        warnings.push(format!(
            "{}: {} changed since you trusted this workspace; until you review and run \
             'reasonix trust' again, they count as untrusted (hooks, skills, commands and \
             settings from them are not used)",
            super::trust::identity(&opts.cwd),
            review.changed_paths()
        ));
    }
    let mut files = Vec::new();
    for (layer, path) in layer_files(opts) {
        let Some(text) = read_layer(&path, layer)? else {
            continue;
        };
        if layer == Layer::User {
            warnings.extend(retire_keys(&path, &text));
        }
        files.push((layer, path, text));
    }
    let sources = Sources::new(&files);
    let mut merged = DeTable::new();
    let mut origins = Origins::new();
    // (offset, text): each file's keys iterate alphabetically, users read top-down.
    let mut found = Vec::new();
    let mut untrusted = Vec::new();
    for (at, (layer, _, _)) in files.iter().enumerate() {
        let mut check = (*layer == Layer::Project).then(|| ProjectCheck {
            trusted,
            changed,
            strict: opts.strict,
            below: &merged,
            cwd: &opts.cwd,
            ignored: Vec::new(),
        });
        let doc = parse_layer(&sources, at, check.as_mut(), &mut found)?;
        if let Some(mut check) = check {
            // In file order, like the warnings.
            check.ignored.sort_unstable();
            untrusted.extend(check.ignored.into_iter().map(|(_, key)| key));
        }
        merge_layer(&mut merged, doc, *layer, &mut origins);
    }
    let config = settle(&sources, merged, &mut found)?;
    found.sort_by_key(|(offset, _)| *offset);
    warnings.extend(found.into_iter().map(|(_, warning)| warning));
    let sources = files.into_iter().map(|(_, path, _)| path).collect();
    let mut config = finish(config, opts, sources, &origins);
    super::claude::merge_permissions(
        &mut config,
        &opts.cwd,
        opts.strict,
        &mut warnings,
        &mut untrusted,
    );
    Ok(Loaded {
        config,
        warnings,
        trusted,
        untrusted,
    })
}

/// Reads the merged document into [`Config`] and validates it: an unknown key becomes a
/// warning in `found`, a type or validation error the one error, at the place that set it.
fn settle(
    sources: &Sources,
    merged: DeTable,
    found: &mut Vec<(usize, String)>,
) -> Result<Config, ConfigError> {
    let root = DeValue::Table(merged);
    let (config, unknown) =
        document::read::<Config>(&root).map_err(|err| type_error(sources, err))?;
    for key in unknown {
        found.push((
            key.offset,
            format!(
                "{}: unknown key `{}` (ignored)",
                sources.location(Some(key.offset..key.offset)),
                key.path
            ),
        ));
    }
    if let (Some((key_path, message)), DeValue::Table(doc)) =
        (validate(&config).into_iter().next(), &root)
    {
        return Err(sources.error(locate(doc, &key_path.0), message));
    }
    Ok(config)
}

/// The one-time migration of the user config: removes the [`RETIRED`] keys from the file
/// with a text edit that keeps everything else, and says so. `None` when there were none (so
/// the next run says nothing) or the file does not parse (its error comes next).
fn retire_keys(path: &Path, text: &str) -> Option<String> {
    if !RETIRED
        .iter()
        .any(|key| text.contains(key.rsplit('.').next().unwrap_or(key)))
    {
        return None;
    }
    DeTable::parse(text).ok()?;
    match super::edit::remove_keys(path, text, RETIRED) {
        Ok(removed) if removed.is_empty() => None,
        Ok(removed) => Some(format!(
            "{}: removed the retired {} {} (the step caps they set no longer exist: a task \
             list's progress lease stops a stuck model; `reasonix run --max-steps` still \
             bounds a run)",
            path.display(),
            if removed.len() == 1 { "key" } else { "keys" },
            removed
                .iter()
                .map(|key| format!("`{key}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Err(err) => Some(format!("{err} (they are ignored)")),
    }
}

fn layer_files(opts: &LoadOptions) -> Vec<(Layer, PathBuf)> {
    let mut files = vec![
        (Layer::User, paths::config_file(&opts.home)),
        (Layer::Project, paths::project_file(&opts.cwd)),
    ];
    if let Some(extra) = &opts.extra {
        files.push((Layer::Extra, opts.cwd.join(extra)));
    }
    files
}

/// The largest config file read, in bytes: a project file comes from the repository, and the
/// parser keeps a token per word of it in memory, so a hostile 100 MB file is refused before a
/// byte is read rather than parsed. Real files are a few KiB; 8 MiB leaves room for generated
/// ones (tens of thousands of rules).
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// The file's text; `None` for an absent user or project file.
fn read_layer(path: &Path, layer: Layer) -> Result<Option<String>, ConfigError> {
    match read_bounded(path) {
        Ok(text) => Ok(Some(text)),
        Err(ConfigError::Read { source, .. })
            if source.kind() == io::ErrorKind::NotFound && layer == Layer::Extra =>
        {
            Err(ConfigError::MissingFile(path.to_path_buf()))
        }
        Err(ConfigError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// Reads a config file of at most [`MAX_FILE_BYTES`], judged on its size before reading and
/// held to it while reading (the file may grow meanwhile, or be a pipe).
pub(crate) fn read_bounded(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let read_error = |source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_big = || ConfigError::At {
        location: path.display().to_string(),
        message: format!(
            "the file is larger than {} MiB; a config file is a few KiB, so this one is \
             refused unread (shorten it)",
            MAX_FILE_BYTES >> 20
        ),
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    if file.metadata().map_err(read_error)?.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|_| ConfigError::At {
        location: path.display().to_string(),
        message: "the file is not UTF-8 text; save it as UTF-8".into(),
    })
}

/// The files being layered, for turning offsets into `path:line:col`. Each file's spans are
/// moved past the files before it (by [`Source::base`]), so one offset names one place in one
/// file and the merged document needs no note of where each value came from.
struct Sources<'a> {
    files: Vec<Source<'a>>,
}

struct Source<'a> {
    path: &'a Path,
    text: &'a str,
    /// Where this file's offsets start: one past the end of the file before it.
    base: usize,
    /// Where lines and columns stand every [`LineIndex::STEP`] bytes, made at the first
    /// location asked for.
    index: std::cell::OnceCell<LineIndex>,
}

impl<'a> Sources<'a> {
    fn new(files: &'a [(Layer, PathBuf, String)]) -> Sources<'a> {
        let mut base = 0;
        let files = files
            .iter()
            .map(|(_, path, text)| {
                let source = Source {
                    path,
                    text,
                    base,
                    index: std::cell::OnceCell::new(),
                };
                base += text.len() + 1;
                source
            })
            .collect();
        Sources { files }
    }

    /// `path:line:col` of an offset; the last file's path for an error about no place.
    fn location(&self, span: Option<Range<usize>>) -> String {
        let Some(span) = span else {
            return self.files.last().map_or_else(
                || "the config files".into(),
                |f| f.path.display().to_string(),
            );
        };
        let at = self.files.partition_point(|f| f.base <= span.start);
        let Some(file) = self.files.get(at.saturating_sub(1)) else {
            return "the config files".into();
        };
        let index = file.index.get_or_init(|| LineIndex::new(file.text));
        let (line, col) = index.line_col(file.text, span.start - file.base);
        format!("{}:{line}:{col}", file.path.display())
    }

    fn error(&self, span: Option<Range<usize>>, message: String) -> ConfigError {
        ConfigError::At {
            location: self.location(span),
            message,
        }
    }
}

/// Line and column checkpoints through a file, so each location costs at most
/// [`LineIndex::STEP`] bytes of counting. A project file comes from the repository and may
/// earn one warning per key: counting from the top for each would be quadratic in its size.
struct LineIndex {
    /// `(byte offset, line, column)`, 1-based, at a character boundary; the first at 0.
    marks: Vec<(usize, usize, usize)>,
}

impl LineIndex {
    const STEP: usize = 1024;

    fn new(text: &str) -> LineIndex {
        let mut marks = vec![(0, 1, 1)];
        let (mut line, mut col) = (1, 1);
        let mut next = LineIndex::STEP;
        for (at, c) in text.char_indices() {
            if at >= next {
                marks.push((at, line, col));
                next = at + LineIndex::STEP;
            }
            if c == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        LineIndex { marks }
    }

    /// 1-based line and column (in characters) of a byte offset.
    fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let at = self.marks.partition_point(|&(byte, _, _)| byte <= offset);
        let (start, mut line, mut col) = self.marks[at.saturating_sub(1)];
        for c in text.get(start..offset).unwrap_or_default().chars() {
            if c == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        (line, col)
    }
}

/// 1-based line and column (in characters) of a byte offset.
#[cfg(test)]
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(text, offset)
}

/// A parser message on one line, its lines joined with "; " (they are separate statements).
fn joined_lines(message: &str) -> String {
    message.trim().replace('\n', "; ")
}

/// The document of file `at` of `sources`, checked on its own; `project` is `Some` for the
/// project file: what it may do and what lies beneath it.
fn parse_layer<'a>(
    sources: &Sources<'a>,
    at: usize,
    project: Option<&mut ProjectCheck>,
    found: &mut Vec<(usize, String)>,
) -> Result<DeTable<'a>, ConfigError> {
    let file = &sources.files[at];
    let parsed = DeTable::parse(file.text).map_err(|e| syntax_error(sources, file, &e))?;
    let mut doc = shift_table(parsed.into_inner(), file.base);
    drop_listed(sources, &mut doc, &mut KeyPath::default(), found);
    if let Some(check) = project {
        strip_user_only(sources, &mut doc, found);
        restrain_project(sources, file, &mut doc, check, found);
    }
    if let Some(dir) = file.path.parent() {
        resolve_relative_paths(&mut doc, dir);
    }
    Ok(doc)
}

/// `table` with every span moved `by` bytes on: keys, values and everything inside them.
fn shift_table(table: DeTable<'_>, by: usize) -> DeTable<'_> {
    table
        .into_iter()
        .map(|(key, item)| (shift(key, by), shift_value(item, by)))
        .collect()
}

fn shift_value(item: Spanned<DeValue<'_>>, by: usize) -> Spanned<DeValue<'_>> {
    let item = shift(item, by);
    let span = item.span();
    let value = match item.into_inner() {
        DeValue::Table(table) => DeValue::Table(shift_table(table, by)),
        DeValue::Array(items) => DeValue::Array(
            items
                .into_iter()
                .map(|item| shift_value(item, by))
                .collect(),
        ),
        other => other,
    };
    Spanned::new(span, value)
}

fn shift<T>(item: Spanned<T>, by: usize) -> Spanned<T> {
    let span = item.span();
    Spanned::new(span.start + by..span.end + by, item.into_inner())
}

/// The crate's syntax error at its place. Its nesting limit (80 levels of arrays, inline tables
/// and dotted key parts, which keeps a hostile file from exhausting the stack) is reported in
/// its own words and, for a key, without a span: that error is reworded and points at the line
/// that nests deepest.
fn syntax_error(sources: &Sources, file: &Source, err: &toml::de::Error) -> ConfigError {
    let message = err.message();
    let at = |span: Range<usize>| Some(span.start + file.base..span.end + file.base);
    if !message.contains("recursion") {
        return sources.error(err.span().and_then(at), joined_lines(message));
    }
    let span = err.span().unwrap_or_else(|| {
        let start = deepest_line(file.text);
        start..start
    });
    sources.error(
        at(span),
        "nested too deeply (arrays, inline tables and the parts of a dotted key or header \
         may nest at most 80 levels); flatten it"
            .into(),
    )
}

/// The offset of the line with the most nesting characters (`.`, `[`, `{`).
fn deepest_line(text: &str) -> usize {
    let mut best = (0, 0);
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let depth = line.bytes().filter(|b| b".[{".contains(b)).count();
        if depth > best.0 {
            best = (depth, start);
        }
        start += line.len();
    }
    best.1
}

/// A serde error with the dotted key it arose at named, so "unknown variant" says which key.
fn type_error(sources: &Sources, err: document::Error) -> ConfigError {
    let message = joined_lines(&err.message);
    let message = if err.path.0.is_empty() {
        message
    } else {
        format!("`{}`: {message}", err.path)
    };
    sources.error(err.span, message)
}

/// The span of the deepest existing part of `path`: the key itself, or the nearest ancestor
/// when the key is absent (a validation error about a missing key points at its table).
fn locate(doc: &DeTable, path: &[Seg]) -> Option<Range<usize>> {
    let mut best = None;
    let mut table = Some(doc);
    let mut value: Option<&DeValue> = None;
    for seg in path {
        match seg {
            Seg::Key(name) => {
                let (key, item) = table?.get_key_value(name.as_str())?;
                best = Some(key.span());
                value = Some(item.get_ref());
            }
            Seg::Index(i) => {
                let DeValue::Array(items) = value? else {
                    return best;
                };
                let item = items.get(*i)?;
                best = Some(item.span());
                value = Some(item.get_ref());
            }
        }
        table = match value {
            Some(DeValue::Table(t)) => Some(t),
            _ => None,
        };
    }
    best
}

/// Removes the [`RETIRED`] keys silently and the [`UNSUPPORTED`] ones with a warning each,
/// wherever they are (a key inside `[[plugins]]` in every entry).
fn drop_listed(
    sources: &Sources,
    table: &mut DeTable,
    path: &mut KeyPath,
    found: &mut Vec<(usize, String)>,
) {
    let mut dropped = Vec::new();
    for (key, item) in table.iter_mut() {
        path.0.push(Seg::Key(key.get_ref().to_string()));
        let dotted = path.to_string();
        if RETIRED.contains(&dotted.as_str()) {
            dropped.push(key.get_ref().to_string());
        } else if UNSUPPORTED.contains(&path.schema().as_str()) {
            found.push((
                key.span().start,
                format!(
                    "{}: `{dotted}` is not supported yet (ignored)",
                    sources.location(Some(key.span()))
                ),
            ));
            dropped.push(key.get_ref().to_string());
        } else {
            drop_listed_within(sources, item.get_mut(), path, found);
        }
        path.0.pop();
    }
    for key in dropped {
        table.remove(key.as_str());
    }
}

fn drop_listed_within(
    sources: &Sources,
    value: &mut DeValue,
    path: &mut KeyPath,
    found: &mut Vec<(usize, String)>,
) {
    match value {
        DeValue::Table(table) => drop_listed(sources, table, path, found),
        DeValue::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.0.push(Seg::Index(i));
                drop_listed_within(sources, item.get_mut(), path, found);
                path.0.pop();
            }
        }
        _ => {}
    }
}

fn strip_user_only(sources: &Sources, doc: &mut DeTable, found: &mut Vec<(usize, String)>) {
    for dotted in USER_ONLY {
        let parts: Vec<&str> = dotted.split('.').collect();
        let Some(span) = remove_path(doc, &parts) else {
            continue;
        };
        found.push((
            span.start,
            format!(
                "{}: `{dotted}` can only be set in the user config; ignored in the project file",
                sources.location(Some(span))
            ),
        ));
    }
    strip_provider_secrets(sources, doc, found);
}

/// A repository's reasonix.toml may point a provider at any URL, so it must not be able to
/// attach the user's key (or secret-bearing headers) to it: those stay user-only.
fn strip_provider_secrets(sources: &Sources, doc: &mut DeTable, found: &mut Vec<(usize, String)>) {
    let Some(DeValue::Array(providers)) = doc.get_mut("providers").map(Spanned::get_mut) else {
        return;
    };
    for provider in providers.iter_mut() {
        let DeValue::Table(provider) = provider.get_mut() else {
            continue;
        };
        for key in PROVIDER_USER_ONLY {
            let Some((name, _)) = provider.remove_entry(*key) else {
                continue;
            };
            found.push((
                name.span().start,
                format!(
                    "{}: `providers.{key}` can only be set in the user config (a project file must not send your key to its own endpoint); ignored",
                    sources.location(Some(name.span()))
                ),
            ));
        }
    }
}

/// What the project file may do, and the layers beneath it to compare with.
struct ProjectCheck<'a, 'i> {
    /// The workspace is trusted (or `--trust-project`).
    trusted: bool,
    /// It was trusted, but its project file has changed since.
    changed: bool,
    /// `--permission-mode strict` was given.
    strict: bool,
    /// The layers below the project file, merged.
    below: &'a DeTable<'i>,
    cwd: &'a Path,
    /// Keys ignored because the workspace is not trusted, with their offset in the file.
    ignored: Vec<(usize, String)>,
}

/// Why a project key was ignored.
#[derive(Clone, Copy)]
enum Overruled {
    /// The workspace is not trusted.
    Untrusted,
    /// `--permission-mode strict` beats the project file, trusted or not.
    Strict,
}

/// Until the user trusts the workspace, a project file may only tighten what the layers
/// beneath it (the user's config) allow. Ignored, each with one warning naming the key:
/// - `permissions.allow` (any non-empty list: an allow rule can only make a call run);
/// - `permissions.mode` when it is wider than the mode beneath (deny < ask < allow);
/// - every `[[providers]]` entry, new or overriding one of the user's by name (a provider is an
///   endpoint: every prompt and file the model sees goes there);
/// - `default_model` unless it resolves among the providers beneath;
/// - `tools.enabled` when it names a tool the user's own non-empty list leaves out (or is empty,
///   which means every tool);
/// - `agent.system_prompt_file` outside the workspace (its text goes to the model);
/// - `[[hooks]]` (each is a command that would run by itself).
///
/// Tightening always applies: `deny` and `ask` rules (which accumulate), a narrower `mode`,
/// `sandbox.forbid_read`, a shorter `tools.enabled`. With `--permission-mode strict` the two
/// permission keys are ignored even in a trusted workspace: flags beat project files.
fn restrain_project(
    sources: &Sources,
    file: &Source,
    doc: &mut DeTable,
    check: &mut ProjectCheck,
    found: &mut Vec<(usize, String)>,
) {
    let mut out = Overrule {
        sources,
        found,
        ignored: &mut check.ignored,
        changed: check.changed,
    };
    let below = {
        let below = DeValue::Table(check.below.clone());
        let mut config: Config = document::read(&below).map_or_else(|_| Config::default(), |r| r.0);
        if config.providers.is_empty() {
            config.providers.push(builtin_provider());
        }
        config
    };
    let permissions_why = if check.strict {
        Some(Overruled::Strict)
    } else {
        (!check.trusted).then_some(Overruled::Untrusted)
    };
    if let Some(why) = permissions_why {
        let allow = value_at(doc, &["permissions", "allow"]).and_then(DeValue::as_array);
        if allow.is_some_and(|rules| !rules.is_empty()) {
            out.ignore(doc, &["permissions", "allow"], why);
        }
        let mode = value_at(doc, &["permissions", "mode"])
            .and_then(|mode| document::read::<PermissionMode>(mode).ok());
        if mode.is_some_and(|(m, _)| strictness(m) < strictness(below.permissions.mode)) {
            out.ignore(doc, &["permissions", "mode"], why);
        }
    }
    if check.trusted {
        return;
    }
    let why = Overruled::Untrusted;
    if let Some(DeValue::Array(providers)) = value_at(doc, &["providers"]) {
        for provider in providers.iter() {
            let name = entry_name(provider.get_ref()).unwrap_or_default();
            out.report(
                Some(provider.span()),
                format!("[[providers]] {name:?}"),
                why,
            );
        }
    }
    doc.remove("providers");
    let model = value_at(doc, &["default_model"]).and_then(DeValue::as_str);
    if model.is_some_and(|model| below.find_model(Some(model)).is_err()) {
        out.ignore(doc, &["default_model"], why);
    }
    let enabled: Option<Vec<&str>> = value_at(doc, &["tools", "enabled"])
        .and_then(DeValue::as_array)
        .map(|list| list.iter().filter_map(|t| t.get_ref().as_str()).collect());
    let mine = &below.tools.enabled;
    let wider = enabled.is_some_and(|list| {
        !mine.is_empty() && (list.is_empty() || list.iter().any(|t| !mine.iter().any(|m| m == t)))
    });
    if wider {
        out.ignore(doc, &["tools", "enabled"], why);
    }
    let prompt_file = value_at(doc, &["agent", "system_prompt_file"])
        .and_then(DeValue::as_str)
        .filter(|f| !f.is_empty())
        .map(|f| file.path.parent().unwrap_or(check.cwd).join(f));
    if prompt_file.is_some_and(|file| !inside(&file, check.cwd)) {
        out.ignore(doc, &["agent", "system_prompt_file"], why);
    }
    // A hook is a command reasonix runs by itself, at every turn.
    let hooks = value_at(doc, &["hooks"]).and_then(DeValue::as_array);
    if hooks.is_some_and(|hooks| !hooks.is_empty()) {
        out.ignore(doc, &["hooks"], why);
    }
}

/// The value at `a.b.c` in nested tables.
fn value_at<'d, 'i>(table: &'d DeTable<'i>, parts: &[&str]) -> Option<&'d DeValue<'i>> {
    let (first, rest) = parts.split_first()?;
    let value = table.get(*first)?.get_ref();
    match (rest, value) {
        ([], value) => Some(value),
        (rest, DeValue::Table(inner)) => value_at(inner, rest),
        _ => None,
    }
}

/// Removes overruled project keys, with a warning each, and records the ones trust would
/// apply.
struct Overrule<'a> {
    sources: &'a Sources<'a>,
    found: &'a mut Vec<(usize, String)>,
    ignored: &'a mut Vec<(usize, String)>,
    /// The workspace was trusted with another version of the file.
    changed: bool,
}

impl Overrule<'_> {
    fn ignore(&mut self, doc: &mut DeTable, key: &[&str], why: Overruled) {
        let span = remove_path(doc, key);
        self.report(span, key.join("."), why);
    }

    fn report(&mut self, span: Option<Range<usize>>, name: String, why: Overruled) {
        let offset = span.as_ref().map_or(0, |s| s.start);
        let reason = match why {
            Overruled::Untrusted if self.changed => {
                "this file changed since you trusted the workspace; review it, then run \
                 'reasonix trust' again or pass --trust-project"
            }
            Overruled::Untrusted => {
                "this workspace is not trusted; run 'reasonix trust' or pass --trust-project"
            }
            Overruled::Strict => "--permission-mode strict beats the project file, trusted or not",
        };
        self.found.push((
            offset,
            format!("{}: {name} ignored: {reason}", self.sources.location(span)),
        ));
        if let Overruled::Untrusted = why {
            self.ignored.push((offset, name));
        }
    }
}

/// How narrow a writer fallback is: allow (0) < ask (1) < deny (2).
fn strictness(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Allow => 0,
        PermissionMode::Ask => 1,
        PermissionMode::Deny => 2,
    }
}

/// Whether `path` lies inside `dir` once symlinks and `..` are resolved. A file that does not
/// exist yet counts as inside only when its path has no `..` and starts with `dir`.
fn inside(path: &Path, dir: &Path) -> bool {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match path.canonicalize() {
        Ok(real) => real.starts_with(&dir),
        Err(_) => {
            path.starts_with(&dir)
                && !path
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
        }
    }
}

/// Removes `a.b.c` from nested tables; the span of the removed key.
fn remove_path(table: &mut DeTable, parts: &[&str]) -> Option<Range<usize>> {
    match parts {
        [] => None,
        [last] => table.remove_entry(*last).map(|(key, _)| key.span()),
        [first, rest @ ..] => match table.get_mut(*first).map(Spanned::get_mut) {
            Some(DeValue::Table(inner)) => remove_path(inner, rest),
            _ => None,
        },
    }
}

/// Rules serde cannot express. Returns the offending key paths with messages.
fn validate(config: &Config) -> Vec<(KeyPath, String)> {
    let mut problems = Vec::new();
    let agent = &config.agent;
    for (key, value) in [
        ("tool_result_snip_ratio", agent.tool_result_snip_ratio),
        ("compact_ratio", agent.compact_ratio),
        ("compact_force_ratio", agent.compact_force_ratio),
    ] {
        if !(value > 0.0 && value <= 1.0) {
            problems.push((
                KeyPath::key(&["agent", key]),
                format!("`agent.{key}` must be a fraction in (0, 1], got {value}"),
            ));
        }
    }
    if agent
        .temperature
        .is_some_and(|t| !(t.is_finite() && t >= 0.0))
    {
        problems.push((
            KeyPath::key(&["agent", "temperature"]),
            "`agent.temperature` must be a number of at least 0".into(),
        ));
    }
    for (key, value) in [
        ("max_parallel_tools", agent.max_parallel_tools),
        ("max_subagent_concurrency", agent.max_subagent_concurrency),
        ("max_parallel_writers", agent.max_parallel_writers),
    ] {
        if value == 0 {
            problems.push((
                KeyPath::key(&["agent", key]),
                format!("`agent.{key}` must be at least 1"),
            ));
        }
    }
    for (i, provider) in config.providers.iter().enumerate() {
        let here = KeyPath::key(&["providers"]).at(Seg::Index(i));
        if let Some((key, problem)) = provider_problem(provider) {
            // A dotted key points at its last part.
            let at = key
                .into_iter()
                .flat_map(|key| key.split('.'))
                .fold(here, |at, part| at.at(Seg::Key(part.into())));
            problems.push((at, format!("provider `{}`: {problem}", provider.name)));
        }
    }
    // The shell tool runs POSIX shells off Windows: a PowerShell interpreter is refused here,
    // with the file and line, rather than failing every command later.
    if !cfg!(windows)
        && matches!(
            config.tools.shell.prefer,
            super::ShellPrefer::Powershell | super::ShellPrefer::Pwsh
        )
    {
        problems.push((
            KeyPath::key(&["tools", "shell", "prefer"]),
            super::POWERSHELL_ELSEWHERE.into(),
        ));
    }
    for (i, plugin) in config.plugins.iter().enumerate() {
        let here = KeyPath::key(&["plugins"]).at(Seg::Index(i));
        if let Some((key, problem)) = plugin_problem(plugin) {
            let at = match key {
                Some(key) => here.at(Seg::Key(key.into())),
                None => here,
            };
            problems.push((at, format!("plugin `{}`: {problem}", plugin.name)));
        }
    }
    problems
}

/// The first thing wrong with a provider entry, and the key to point at (`None` = the entry;
/// a dotted key for one inside a table).
fn provider_problem(p: &super::ProviderConfig) -> Option<(Option<&'static str>, String)> {
    for (key, secs) in [
        ("timeouts.connect_seconds", p.timeouts.connect_seconds),
        ("timeouts.idle_seconds", p.timeouts.idle_seconds),
    ] {
        if secs == Some(0) {
            return Some((
                Some(key),
                format!("`{key}` must be at least 1 (leave it out for the default)"),
            ));
        }
    }
    let price_ok = |usd: f64| usd.is_finite() && (0.0..=super::MAX_PRICE).contains(&usd);
    let bad_price = p.prices.values().any(|price| {
        !price_ok(price.input)
            || !price_ok(price.output)
            || price.input_cache_hit.is_some_and(|usd| !price_ok(usd))
    });
    if bad_price {
        return Some((
            Some("prices"),
            format!(
                "prices must be numbers from 0 to {} (USD per million tokens)",
                super::MAX_PRICE
            ),
        ));
    }
    if p.name.trim().is_empty() || p.name.contains('/') {
        return Some((
            Some("name"),
            "`name` must be non-empty and contain no `/` (it prefixes `provider/model`)".into(),
        ));
    }
    if p.model.is_some() && !p.models.is_empty() {
        return Some((
            Some("model"),
            "set either `model` or `models`, not both".into(),
        ));
    }
    if p.model_names().iter().all(|m| m.trim().is_empty()) {
        return Some((None, "declares no model; set `model` or `models`".into()));
    }
    if let Some(default) = &p.default {
        if !p.model_names().contains(&default.as_str()) {
            return Some((
                Some("default"),
                format!(
                    "`default` = `{default}` is not one of its models ({})",
                    p.model_names().join(", ")
                ),
            ));
        }
    }
    if p.kind == "openai" && p.base_url.as_deref().is_none_or(|u| u.trim().is_empty()) {
        return Some((
            None,
            "needs `base_url` (e.g. https://api.deepseek.com)".into(),
        ));
    }
    None
}

/// The first thing wrong with a plugin entry, and the key to point at (`None` = the entry).
fn plugin_problem(p: &super::PluginConfig) -> Option<(Option<&'static str>, String)> {
    if p.name.trim().is_empty() {
        return Some((Some("name"), "`name` must not be empty".into()));
    }
    let timeouts = [
        ("startup_timeout_seconds", Some(p.startup_timeout_seconds)),
        ("call_timeout_seconds", p.call_timeout_seconds),
        (
            "tool_timeout_seconds",
            p.tool_timeout_seconds.values().max().copied(),
        ),
    ];
    if let Some((key, _)) = timeouts
        .iter()
        .find(|(_, secs)| secs.is_some_and(|s| s > super::MAX_MCP_TIMEOUT_SECONDS))
    {
        return Some((
            Some(key),
            format!(
                "`{key}` may be at most {} seconds (one day)",
                super::MAX_MCP_TIMEOUT_SECONDS
            ),
        ));
    }
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    let problem = match p.kind {
        PluginType::Stdio if blank(&p.command) => "a stdio server needs `command`",
        PluginType::Http | PluginType::StreamableHttp | PluginType::Sse if blank(&p.url) => {
            "a remote server needs `url`"
        }
        _ => return None,
    };
    Some((None, problem.into()))
}

/// `agent.system_prompt_file` and `providers[].ca_file` are relative to the file that set them.
fn resolve_relative_paths(doc: &mut DeTable, dir: &Path) {
    if let Some(DeValue::Table(agent)) = doc.get_mut("agent").map(Spanned::get_mut) {
        absolutize(agent, "system_prompt_file", dir);
    }
    if let Some(DeValue::Array(providers)) = doc.get_mut("providers").map(Spanned::get_mut) {
        for provider in providers.iter_mut() {
            if let DeValue::Table(provider) = provider.get_mut() {
                absolutize(provider, "ca_file", dir);
            }
        }
    }
}

fn absolutize(table: &mut DeTable, key: &str, dir: &Path) {
    if let Some(DeValue::String(path)) = table.get_mut(key).map(Spanned::get_mut) {
        if !path.is_empty() && Path::new(path.as_ref()).is_relative() {
            *path = dir
                .join(path.as_ref())
                .to_string_lossy()
                .into_owned()
                .into();
        }
    }
}

/// Which layer last defined each named provider and plugin: `(section, name) -> layer`.
type Origins = BTreeMap<(String, String), Layer>;

type Key<'i> = Spanned<std::borrow::Cow<'i, str>>;
type Item<'i> = Spanned<DeValue<'i>>;

fn merge_layer<'i>(base: &mut DeTable<'i>, over: DeTable<'i>, layer: Layer, origins: &mut Origins) {
    for (key, value) in over {
        if NAMED.contains(&key.get_ref().as_ref()) {
            merge_named(base, key, value, layer, origins);
        } else {
            merge_value(base, key, value, "");
        }
    }
}

fn merge_value<'i>(base: &mut DeTable<'i>, key: Key<'i>, value: Item<'i>, parent: &str) {
    let path = if parent.is_empty() {
        key.get_ref().to_string()
    } else {
        format!("{parent}.{}", key.get_ref())
    };
    match (
        base.get_mut(key.get_ref().as_ref()).map(Spanned::get_mut),
        value.get_ref(),
    ) {
        (Some(DeValue::Table(existing)), DeValue::Table(_)) => {
            let DeValue::Table(over) = value.into_inner() else {
                return;
            };
            if path == "agent"
                && (over.contains_key("system_prompt") || over.contains_key("system_prompt_file"))
            {
                // The pair is one setting: a later file choosing either replaces both.
                existing.remove("system_prompt");
                existing.remove("system_prompt_file");
            }
            for (k, v) in over {
                merge_value(existing, k, v, &path);
            }
        }
        (Some(DeValue::Array(existing)), DeValue::Array(_))
            if ACCUMULATE.contains(&path.as_str()) =>
        {
            let DeValue::Array(over) = value.into_inner() else {
                return;
            };
            // A set of what is there already: a project file's list may be long, and searching
            // the list for each item would be quadratic in it.
            let mut seen: HashSet<String> = existing.iter().map(|v| plain(v.get_ref())).collect();
            let added: Vec<Item<'i>> = over
                .into_iter()
                .filter(|item| seen.insert(plain(item.get_ref())))
                .collect();
            if !added.is_empty() {
                let kept = std::mem::replace(existing, DeArray::new());
                *existing = kept.into_iter().chain(added).collect();
            }
        }
        _ => {
            // Replacing a key keeps the later file's key span, so errors point at it.
            base.remove(key.get_ref().as_ref());
            base.insert(key, value);
        }
    }
}

/// A value as text without its spans, to compare values from different files.
fn plain(value: &DeValue) -> String {
    match value {
        DeValue::String(text) => format!("{text:?}"),
        DeValue::Integer(n) => n.to_string(),
        DeValue::Float(x) => x.to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(when) => when.to_string(),
        DeValue::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| plain(i.get_ref())).collect();
            format!("[{}]", items.join(","))
        }
        DeValue::Table(table) => {
            let entries: Vec<String> = table
                .iter()
                .map(|(k, v)| format!("{:?}={}", k.get_ref(), plain(v.get_ref())))
                .collect();
            format!("{{{}}}", entries.join(","))
        }
    }
}

fn merge_named<'i>(
    base: &mut DeTable<'i>,
    section: Key<'i>,
    value: Item<'i>,
    layer: Layer,
    origins: &mut Origins,
) {
    let section_name = section.get_ref().to_string();
    let span = value.span();
    let DeValue::Array(items) = value.into_inner() else {
        return;
    };
    if !matches!(
        base.get(section_name.as_str()).map(Spanned::get_ref),
        Some(DeValue::Array(_))
    ) {
        base.remove(section_name.as_str());
        base.insert(section, Spanned::new(span, DeValue::Array(DeArray::new())));
    }
    let Some(DeValue::Array(existing)) = base.get_mut(section_name.as_str()).map(Spanned::get_mut)
    else {
        return;
    };
    let mut entries: Vec<Item<'i>> = std::mem::replace(existing, DeArray::new())
        .into_iter()
        .collect();
    // Where each name is, the first entry of that name (so the search is not quadratic in a
    // long list of entries).
    let mut at: HashMap<String, usize> = HashMap::new();
    for (pos, e) in entries.iter().enumerate() {
        if let Some(name) = entry_name(e.get_ref()) {
            at.entry(name.to_string()).or_insert(pos);
        }
    }
    for item in items {
        let named = entry_name(item.get_ref()).map(str::to_string);
        let name = named.clone().unwrap_or_default();
        match at.get(&name) {
            Some(&pos) => {
                if named.is_none() {
                    // A nameless entry took the place of one named "".
                    at.remove(&name);
                }
                entries[pos] = item;
            }
            None => {
                if named.is_some() {
                    at.insert(name.clone(), entries.len());
                }
                entries.push(item);
            }
        }
        origins.insert((section_name.clone(), name), layer);
    }
    *existing = entries.into_iter().collect();
}

fn entry_name<'d>(item: &'d DeValue) -> Option<&'d str> {
    item.as_table()?.get("name")?.get_ref().as_str()
}

fn finish(
    mut config: Config,
    opts: &LoadOptions,
    sources: Vec<PathBuf>,
    origins: &Origins,
) -> Config {
    config.saturate();
    config.home = opts.home.clone();
    config.sources = sources;
    config.trust_project = opts.trust_project;
    config.claude_setting_sources = opts.claude_setting_sources.clone();
    let origin = |section: &str, name: &str| {
        origins
            .get(&(section.to_string(), name.to_string()))
            .copied()
            .unwrap_or_default()
    };
    for provider in &mut config.providers {
        provider.origin = origin("providers", &provider.name);
    }
    for plugin in &mut config.plugins {
        plugin.origin = origin("plugins", &plugin.name);
    }
    if config.providers.is_empty() {
        config.providers.push(builtin_provider());
    }
    if config
        .sandbox
        .workspace_root
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        config.sandbox.workspace_root = None;
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    use toml::Table;

    #[test]
    fn an_unsupported_key_is_dropped_with_one_warning_naming_file_and_line() {
        let (config, warnings) = check("[ui]\ncursor_shape = \"bar\"\nnot_implemented_here = 1\n");
        assert!(config.is_ok(), "{config:?}");
        assert_eq!(
            warnings,
            vec!["/p/r.toml:3:1: `ui.not_implemented_here` is not supported yet (ignored)"]
        );
    }

    /// One file, as the loader holds it.
    fn one(path: &str, text: &str) -> Vec<(Layer, PathBuf, String)> {
        vec![(Layer::Project, PathBuf::from(path), text.to_string())]
    }

    /// A document as the `toml` crate's plain table, for looking at what survived.
    fn plain_table(doc: DeTable) -> Table {
        use serde::Deserialize;
        Table::deserialize(toml::de::Deserializer::from(Spanned::new(0..0, doc))).unwrap()
    }

    /// The whole check of one file on its own: its config and warnings, in file order.
    fn check(text: &str) -> (Result<Config, ConfigError>, Vec<String>) {
        let files = one("/p/r.toml", text);
        let sources = Sources::new(&files);
        let mut found = Vec::new();
        let result = parse_layer(&sources, 0, None, &mut found)
            .and_then(|doc| settle(&sources, doc, &mut found));
        found.sort_by_key(|(offset, _)| *offset);
        (result, found.into_iter().map(|(_, w)| w).collect())
    }

    /// The project file `text` over the user layer `below`: what survives, the warnings and
    /// the keys ignored for want of trust.
    fn project(below: &str, text: &str, trusted: bool, strict: bool) -> (Table, Vec<String>) {
        let below = DeTable::parse(below).unwrap().into_inner();
        let mut check = ProjectCheck {
            trusted,
            changed: false,
            strict,
            below: &below,
            cwd: Path::new("/p"),
            ignored: Vec::new(),
        };
        let files = one("/p/reasonix.toml", text);
        let sources = Sources::new(&files);
        let mut found = Vec::new();
        let doc = parse_layer(&sources, 0, Some(&mut check), &mut found).unwrap();
        let table = plain_table(doc);
        found.sort_by_key(|(offset, _)| *offset);
        let warnings: Vec<String> = found.into_iter().map(|(_, w)| w).collect();
        // "/p/reasonix.toml:1:1: default_model ignored: ..." -> "default_model"
        let keys: Vec<String> = warnings
            .iter()
            .filter_map(|w| w.split(": ").nth(1)?.strip_suffix(" ignored"))
            .map(str::to_string)
            .collect();
        assert_eq!(keys.len(), warnings.len(), "{warnings:?}");
        if !strict {
            check.ignored.sort_unstable();
            let ignored: Vec<String> = check.ignored.iter().map(|(_, k)| k.clone()).collect();
            assert_eq!(
                keys, ignored,
                "every untrusted warning is recorded, in order"
            );
        }
        (table, keys)
    }

    #[test]
    fn an_untrusted_project_may_narrow_the_mode_but_not_widen_it() {
        for (user, proj, kept) in [
            ("", "ask", true),
            ("", "deny", true),
            ("", "allow", false),
            ("mode = \"deny\"", "ask", false),
            ("mode = \"deny\"", "allow", false),
            ("mode = \"allow\"", "ask", true),
            ("mode = \"ask\"", "ask", true),
        ] {
            let below = format!("[permissions]\n{user}\n");
            let text = format!("[permissions]\nmode = \"{proj}\"\n");
            let (table, ignored) = project(&below, &text, false, false);
            let survived = table["permissions"].get("mode").is_some();
            assert_eq!(survived, kept, "user {user:?}, project {proj}: {ignored:?}");
            let (table, ignored) = project(&below, &text, true, false);
            assert!(table["permissions"].get("mode").is_some() && ignored.is_empty());
        }
    }

    #[test]
    fn allow_rules_need_trust_and_never_beat_strict() {
        let text = "[permissions]\nallow = [\"Bash\"]\ndeny = [\"Edit\"]\nask = [\"Read\"]\n";
        let (table, ignored) = project("", text, false, false);
        assert_eq!(ignored, vec!["permissions.allow"]);
        assert!(table["permissions"].get("allow").is_none());
        assert!(table["permissions"].get("deny").is_some());
        assert!(table["permissions"].get("ask").is_some());
        let (table, ignored) = project("", text, true, false);
        assert!(ignored.is_empty());
        assert!(table["permissions"].get("allow").is_some());
        let (table, ignored) = project("", text, true, true);
        assert_eq!(ignored, vec!["permissions.allow"]);
        assert!(table["permissions"].get("allow").is_none());
        let (_, ignored) = project("", "[permissions]\nallow = []\n", false, false);
        assert!(ignored.is_empty(), "an empty list allows nothing");
    }

    #[test]
    fn an_untrusted_project_keeps_no_provider_and_only_a_model_of_the_users() {
        let user =
            "[[providers]]\nname = \"mine\"\nbase_url = \"https://a\"\nmodels = [\"m1\", \"m2\"]\n";
        let text = "default_model = \"theirs\"\n[[providers]]\nname = \"theirs\"\nbase_url = \"http://evil\"\nmodel = \"x\"\n[[providers]]\nname = \"mine\"\nbase_url = \"http://evil\"\nmodel = \"m1\"\n";
        let (table, ignored) = project(user, text, false, false);
        assert_eq!(
            ignored,
            vec![
                "default_model",
                "[[providers]] \"theirs\"",
                "[[providers]] \"mine\""
            ]
        );
        assert!(!table.contains_key("providers") && !table.contains_key("default_model"));
        for model in ["mine/m2", "m2", "mine"] {
            let text = format!("default_model = \"{model}\"\n");
            let (table, ignored) = project(user, &text, false, false);
            assert!(ignored.is_empty(), "{model}: {ignored:?}");
            assert_eq!(table["default_model"].as_str(), Some(model));
        }
        let (_, ignored) = project("", "default_model = \"deepseek-v4-pro\"\n", false, false);
        assert!(
            ignored.is_empty(),
            "the built-in provider is the user's: {ignored:?}"
        );
        let (table, ignored) = project(user, text, true, false);
        assert!(ignored.is_empty());
        assert_eq!(table["providers"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn an_untrusted_project_may_only_shorten_the_users_tool_list() {
        let user = "[tools]\nenabled = [\"bash\", \"read_file\"]\n";
        for (below, proj, kept) in [
            ("", "[\"bash\"]", true),
            ("", "[]", true),
            (user, "[\"read_file\"]", true),
            (user, "[\"read_file\", \"write_file\"]", false),
            (user, "[]", false),
        ] {
            let text = format!("[tools]\nenabled = {proj}\n");
            let (table, ignored) = project(below, &text, false, false);
            let survived = table["tools"].get("enabled").is_some();
            assert_eq!(survived, kept, "{below:?} {proj}: {ignored:?}");
        }
    }

    #[test]
    fn an_untrusted_project_reads_no_prompt_file_outside_the_workspace() {
        for (file, kept) in [
            ("prompt.md", true),
            ("docs/prompt.md", true),
            ("../prompt.md", false),
            ("/etc/passwd", false),
            ("~/.ssh/id_rsa", true),
        ] {
            let text = format!("[agent]\nsystem_prompt_file = \"{file}\"\n");
            let (table, ignored) = project("", &text, false, false);
            let survived = table["agent"].get("system_prompt_file").is_some();
            assert_eq!(survived, kept, "{file}: {ignored:?}");
            let (table, _) = project("", &text, true, false);
            assert!(table["agent"].get("system_prompt_file").is_some());
        }
    }

    #[test]
    fn line_col_counts_characters_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 3));
        assert_eq!(line_col(text, 999), (3, 1));
        // Across the index's checkpoints, inside characters too: the same as counting.
        let long: String = (0..3000).map(|i| format!("k{i} = \"é€😀\"\n")).collect();
        let index = LineIndex::new(&long);
        for offset in (0..long.len() + 2).step_by(7) {
            let mut at = offset.min(long.len());
            while !long.is_char_boundary(at) {
                at -= 1;
            }
            let before = &long[..at];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            assert_eq!(
                index.line_col(&long, offset),
                (line, col),
                "offset {offset}"
            );
        }
    }

    #[test]
    fn key_paths_quote_keys_that_are_not_bare() {
        let path = KeyPath::key(&["providers"])
            .at(Seg::Index(1))
            .at(Seg::Key("model_overrides".into()))
            .at(Seg::Key("a.b".into()));
        assert_eq!(path.to_string(), "providers[1].model_overrides.\"a.b\"");
    }

    #[test]
    fn type_errors_name_the_key_inside_arrays_of_tables() {
        let text = "[[providers]]\nname = \"a\"\nmodel = \"m\"\nbase_url = \"u\"\n\n[[providers]]\nname = \"b\"\ncontext_window = \"big\"\n";
        let err = check(text).0.unwrap_err().to_string();
        assert!(
            err.starts_with("config: /p/r.toml:8:18: `providers[1].context_window`: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn vision_is_a_boolean_on_a_provider_and_its_model_overrides() {
        let text = "[[providers]]\nname = \"a\"\nmodel = \"m\"\nbase_url = \"u\"\nvision = true\nmodel_overrides = { m = { vision = false } }\n";
        let (table, warnings) = check(text);
        assert!(table.is_ok() && warnings.is_empty(), "{warnings:?}");
        let text =
            "[[providers]]\nname = \"a\"\nmodel = \"m\"\nbase_url = \"u\"\nvision = \"yes\"\n";
        let err = check(text).0.unwrap_err().to_string();
        assert!(
            err.starts_with("config: /p/r.toml:5:10: `providers[0].vision`: invalid type"),
            "{err}"
        );
        let text = "[[providers]]\nname = \"a\"\nmodel = \"m\"\nbase_url = \"u\"\nmodel_overrides = { m = { vision = 1 } }\n";
        let err = check(text).0.unwrap_err().to_string();
        assert!(
            err.contains("`providers[0].model_overrides.m.vision`: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_in_nested_maps_are_found_and_skipped() {
        let text = "[[providers]]\nname = \"a\"\nmodel = \"m\"\nbase_url = \"u\"\nmodel_overrides = { m = { context_window = 5, colour = 1 } }\n[agent]\nmax_steps = 3\n";
        let (config, warnings) = check(text);
        let config = config.unwrap();
        assert_eq!(
            warnings,
            vec!["/p/r.toml:5:47: unknown key `providers[0].model_overrides.m.colour` (ignored)"]
        );
        assert_eq!(
            config.providers[0].model_overrides["m"].context_window,
            Some(5)
        );
    }

    #[test]
    fn validation_points_at_the_offending_entry() {
        let text = "[[plugins]]\nname = \"x\"\ntype = \"http\"\n";
        let err = check(text).0.unwrap_err().to_string();
        assert_eq!(
            err,
            "config: /p/r.toml:1:1: plugin `x`: a remote server needs `url`"
        );
        let text = "[agent]\ncompact_ratio = 1.5\n";
        let err = check(text).0.unwrap_err().to_string();
        assert_eq!(
            err,
            "config: /p/r.toml:2:1: `agent.compact_ratio` must be a fraction in (0, 1], got 1.5"
        );
    }

    #[test]
    fn merging_replaces_arrays_accumulates_deny_lists_and_keys_named_entries() {
        let base_text = "[tools]\nenabled = [\"a\"]\n[permissions]\ndeny = [\"X\"]\n[[providers]]\nname = \"p\"\nmodel = \"1\"\n[agent]\nsystem_prompt_file = \"/f\"\ntemperature = 0.5\n";
        let over_text = "[tools]\nenabled = [\"b\"]\n[permissions]\ndeny = [\"Y\", \"X\"]\n[[providers]]\nname = \"p\"\nmodel = \"2\"\n[[providers]]\nname = \"q\"\nmodel = \"3\"\n[agent]\nsystem_prompt = \"inline\"\n";
        let mut base = DeTable::parse(base_text).unwrap().into_inner();
        let over = DeTable::parse(over_text).unwrap().into_inner();
        let mut origins = Origins::new();
        merge_layer(&mut base, over, Layer::Project, &mut origins);
        let merged: Config = document::read(&DeValue::Table(base)).unwrap().0;
        assert_eq!(merged.tools.enabled, vec!["b"]);
        assert_eq!(merged.permissions.deny, vec!["X", "Y"]);
        let models: Vec<_> = merged
            .providers
            .iter()
            .map(|p| (p.name.as_str(), p.model.as_deref()))
            .collect();
        assert_eq!(models, vec![("p", Some("2")), ("q", Some("3"))]);
        assert_eq!(merged.agent.system_prompt.as_deref(), Some("inline"));
        assert_eq!(merged.agent.system_prompt_file, None);
        assert_eq!(merged.agent.temperature, Some(0.5));
        assert_eq!(
            origins.get(&("providers".to_string(), "q".to_string())),
            Some(&Layer::Project)
        );
    }

    /// Every prefix and single-byte change of a config file goes through the whole check of a
    /// project file (parse, types, unknown keys, trust, validation) without a panic, and every
    /// error is one line: the walks over the crate's spans must hold whatever it parsed.
    #[test]
    fn no_prefix_or_single_byte_change_of_a_config_file_panics() {
        const DOC: &str = "default_model = \"p/m\" # c\n[agent]\ncompact_ratio = 0.5\nsubagent_models = { a = \"b\" }\n[[providers]]\nname = \"p\"\nbase_url = \"http://h\"\nmodels = [\"m\", 'n']\nmodel_overrides.m = { context_window = 5, colour = 1 }\n[permissions]\nallow = [\"\"\"Bash\"\"\"]\nmode = \"allow\"\n[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout_seconds = 9\n[tools]\nbash_timeout_seconds = 1979-05-27\n";
        const PROBES: &[u8] = b"\"'[]{}=,.#\\\n\r\t 0a+-_:eZT\x00\x7f";
        let below = DeTable::new();
        let survives = |text: &str| {
            let mut check = ProjectCheck {
                trusted: false,
                changed: false,
                strict: false,
                below: &below,
                cwd: Path::new("/p"),
                ignored: Vec::new(),
            };
            let files = one("/p/reasonix.toml", text);
            let sources = Sources::new(&files);
            let mut warnings = Vec::new();
            let result = parse_layer(&sources, 0, Some(&mut check), &mut warnings)
                .and_then(|doc| settle(&sources, doc, &mut warnings));
            if let Err(err) = result {
                assert_eq!(err.to_string().lines().count(), 1, "{text:?}: {err}");
            }
            assert!(
                warnings.iter().all(|(_, w)| w.lines().count() == 1),
                "{text:?}"
            );
        };
        let bytes = DOC.as_bytes();
        for end in 0..=bytes.len() {
            survives(&String::from_utf8_lossy(&bytes[..end]));
        }
        for i in 0..bytes.len() {
            for &probe in PROBES {
                let mut changed = bytes.to_vec();
                changed[i] = probe;
                survives(&String::from_utf8_lossy(&changed));
            }
            let mut removed = bytes.to_vec();
            removed.remove(i);
            survives(&String::from_utf8_lossy(&removed));
        }
    }

    #[test]
    fn an_integer_past_i64_names_its_key_and_the_limit() {
        let text = "[tools]\nbash_timeout_seconds = 18446744073709551615\n";
        let err = check(text).0.unwrap_err().to_string();
        assert_eq!(
            err,
            "config: /p/r.toml:2:24: `tools.bash_timeout_seconds`: the number is larger than 9223372036854775807, the largest TOML integer"
        );
    }

    #[test]
    fn the_nesting_limit_points_at_the_deepest_line() {
        let keys = vec!["k"; 100].join(".");
        let text = format!("a = 1\n[t]\n{keys} = 1\nb = 2\n");
        let err = check(&text).0.unwrap_err().to_string();
        assert!(
            err.starts_with("config: /p/r.toml:3:1: nested too deeply"),
            "{err}"
        );
        let text = format!("a = 1\nb = {}{}\n", "[".repeat(100), "]".repeat(100));
        let err = check(&text).0.unwrap_err().to_string();
        assert!(err.starts_with("config: /p/r.toml:2:"), "{err}");
        assert!(err.contains("nested too deeply"), "{err}");
    }
}
