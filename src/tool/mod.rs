//! The `Tool` trait, the run-time `Registry` and canonical tool schemas.
//!
//! Built-in tools live in `builtin/` and are listed in one explicit table there; the shared
//! file walker (`walk`) and pattern matcher (`glob`) serve ls, glob and grep. Permission checks
//! happen before `execute` is called and are not this module's business.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::provider::ToolSchema;
use crate::sandbox::{Policy, SandboxError};

pub mod args;
pub mod bm25;
pub mod builtin;
pub mod claude_vocabulary;
pub mod collab;
pub mod contract;
pub mod delegate;
pub mod glob;
pub mod memory_store;
pub mod read_limit;
pub mod schema;
pub mod source;
pub mod text;
pub mod walk;

/// What a tool needs from the run it executes in.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root: relative paths resolve against it and bash runs in it.
    pub cwd: PathBuf,
    pub cancel: CancelToken,
    /// `None` means no tool-local cap (`[tools] bash_timeout_seconds = 0`).
    pub bash_timeout: Option<Duration>,
    /// Variable names stripped from every child's environment (provider keys).
    pub secret_env: Arc<Vec<String>>,
    /// The task list `todo_write` replaces; shared with the agent and the UI.
    pub todos: Arc<Mutex<Vec<builtin::todo::TodoItem>>>,
    /// Where file tools may write and read and how bash is jailed. [`ToolContext::new`] uses
    /// [`Policy::workspace_only`] (writers confined to `cwd`, bash not jailed, nothing
    /// announced) so a context built without configuration is still confined; a session
    /// replaces it with the policy built from `[sandbox]`.
    pub sandbox: Arc<Policy>,
    /// Where saved sessions, compaction archives and memory live, for the history and memory
    /// tools; `None` (the default) makes them explain that no state directory is configured.
    pub state: Option<Arc<builtin::history::StatePaths>>,
    /// The permission rules' word on what readers may not see, so ls, glob and grep skip those
    /// paths silently instead of listing or searching them; `None` denies nothing.
    pub read_denials: Option<Arc<dyn ReadDenials>>,
    /// The skills of this session, for the `skill` tool; `None` when there are none.
    pub skills: Option<Arc<crate::skill::store::Store>>,
    /// The person who answers `ask` and reviews plans; `None` in headless runs.
    pub interact: Option<Arc<dyn collab::Interact>>,
    /// Plan mode and the approved-plan window; shared with the agent and the UI.
    pub workflow: Arc<Mutex<collab::Workflow>>,
    /// Who starts child agents for `task` and subagent skills; `None` where none can run
    /// (inside a child, in tests of single tools).
    pub delegate: Option<Arc<dyn delegate::Delegate>>,
    /// The file of the session these calls belong to, kept current by the agent (`/new`,
    /// `/resume`), so a child session is stored under its parent's; `None` outside a session.
    pub session_path: Option<PathBuf>,
    /// The id of the call being executed, set only for tools that [`Tool::reports_live`], so
    /// the subagents they start tag their events with it.
    pub call_id: Option<String>,
    /// The images `view_image` attached this round and whether the model takes them; the
    /// agent starts each round on it and appends the images after the round's results.
    pub images: Arc<builtin::view_image::Tray>,
}

/// What the permission layer denies to a reading tool, asked per path by the walkers (the
/// gate itself only sees the path a call names, not what a search then finds below it).
pub trait ReadDenials: Send + Sync {
    /// Whether `tool` may not read `path` (absolute, as the walker spells it).
    fn denies(&self, tool: &str, path: &Path) -> bool;
}

impl ToolContext {
    pub fn new(cwd: PathBuf) -> Self {
        ToolContext {
            cancel: CancelToken::new(),
            bash_timeout: Some(Duration::from_secs(120)),
            secret_env: Arc::new(Vec::new()),
            todos: Arc::new(Mutex::new(Vec::new())),
            sandbox: Arc::new(Policy::workspace_only(&cwd)),
            state: None,
            read_denials: None,
            skills: None,
            interact: None,
            workflow: Arc::new(Mutex::new(collab::Workflow::default())),
            delegate: None,
            session_path: None,
            call_id: None,
            images: Arc::default(),
            cwd,
        }
    }

    /// What a walk by `tool` (ls, glob, grep) must hide besides `forbid_read` paths: entries a
    /// permission rule denies to `tool`, and hard links to hidden files.
    pub fn walk_veto(&self, tool: &'static str) -> walk::Veto {
        let sandbox = Arc::clone(&self.sandbox);
        let denials = self.read_denials.clone();
        walk::Veto::new(move |path, kind, ino| {
            denials.as_ref().is_some_and(|d| d.denies(tool, path))
                || (kind == walk::EntryKind::File && sandbox.hides_link(path, ino))
        })
    }

    /// Resolves a model-supplied path against the workspace.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let path = std::path::Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }

    /// Resolves a path a writer is about to change and checks it against the sandbox; the
    /// result is absolute and symlink-free, and the tool must use it rather than the input,
    /// through `sandbox::beneath::Entry` so that a concurrent swap cannot redirect the write.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        Ok(self.sandbox.check_write(&self.resolve(path))?)
    }

    /// Like [`ToolContext::resolve_write`] for a path a reader is about to open.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, ToolError> {
        Ok(self.sandbox.check_read(&self.resolve(path))?)
    }

    /// Like [`ToolContext::resolve_write`] for a directory entry that is moved as it is (a
    /// final symlink is not followed).
    pub fn resolve_write_entry(&self, path: &str) -> Result<PathBuf, ToolError> {
        Ok(self.sandbox.check_write_entry(&self.resolve(path))?)
    }
}

impl From<SandboxError> for ToolError {
    fn from(e: SandboxError) -> ToolError {
        ToolError::Failed(e.to_string())
    }
}

/// A failure the model should see and can correct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments are missing, mistyped or not JSON; the call itself was malformed.
    InvalidArgs(String),
    /// The call was well-formed but could not be carried out.
    Failed(String),
    Cancelled,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::InvalidArgs(detail) => write!(f, "invalid arguments: {detail}"),
            ToolError::Failed(detail) => write!(f, "{detail}"),
            ToolError::Cancelled => write!(f, "cancelled by the user"),
        }
    }
}

impl std::error::Error for ToolError {}

/// Which of a call's arguments the permission rules judge. A tool that declares them gets a
/// closed schema (`additionalProperties: false`, enforced before the gate), so no extra
/// argument can stand in for the real subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subjects {
    /// A shell command line, in this argument.
    Command(&'static str),
    /// Every one of these path arguments is checked; an absent one stands for `default` (the
    /// workspace root for the search tools), or is skipped when there is none.
    Paths {
        keys: &'static [&'static str],
        default: Option<&'static str>,
    },
    /// The tool has no path or command a rule could name (todo, history, memory).
    Nothing,
    /// Not declared (MCP and plugin tools): the first of `command`, `source_path` and
    /// `destination_path`, `path` or `file_path`, `pattern` that the call carries.
    Undeclared,
}

/// What a tool does to the world. Permission rules cover tools by family: `Edit(...)` covers
/// every writer and `Read(...)` every reader, so a new tool only has to say what it is to fall
/// under the rules the user already wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Reads or lists files in the workspace.
    Reader,
    /// Creates, changes, moves or removes files.
    Writer,
    /// Runs a command line.
    Shell,
    /// Talks to the network.
    Network,
    /// Anything else (todo, history, memory, MCP tools): covered only by rules naming it.
    Other,
}

/// What the permission gate needs to know about a tool besides its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub family: Family,
    pub read_only: bool,
    pub subjects: Subjects,
}

impl Profile {
    /// A tool whose call touches nothing but waits for a person's decision (`ask`,
    /// `exit_plan_mode`): the gate allows it without an approval prompt (no posture answers a
    /// decision), while the tool's own `read_only()` stays false so dispatch runs it alone,
    /// never inside a parallel batch.
    pub fn decision() -> Profile {
        Profile {
            family: Family::Other,
            read_only: true,
            subjects: Subjects::Nothing,
        }
    }

    /// A tool that declares nothing: an MCP tool or a caller that only knows read-only-ness.
    pub fn undeclared(read_only: bool) -> Profile {
        Profile {
            family: Family::Other,
            read_only,
            subjects: Subjects::Undeclared,
        }
    }
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the parameters object.
    fn schema(&self) -> Value;
    /// Required, so that no new tool can slip past the family rules by forgetting it.
    fn family(&self) -> Family;
    /// Read-only tools may run in parallel and are allowed by default. Every reader is; a
    /// tool of another family that only reads (todo, history, an annotated MCP tool) says so.
    fn read_only(&self) -> bool {
        self.family() == Family::Reader
    }
    /// Everything the gate judges a call of this tool by.
    fn profile(&self) -> Profile {
        Profile {
            family: self.family(),
            read_only: self.read_only(),
            subjects: self.subjects(),
        }
    }
    /// The arguments permission rules judge; see [`Subjects`].
    fn subjects(&self) -> Subjects {
        Subjects::Undeclared
    }
    /// A tool whose every call needs a fresh approval from a person (saving or removing
    /// memory) returns the preview the approver shows. Such calls bypass posture and session
    /// grants and are refused when no person can answer; see `Gate::check_fresh`.
    fn fresh_approval(&self, _args: &Value, _ctx: &ToolContext) -> Option<String> {
        None
    }
    /// A tool that starts subagents reports their progress while it runs: its calls get
    /// `ToolContext::call_id`, and the loop relays events during the round.
    fn reports_live(&self) -> bool {
        false
    }
    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError>;
}

struct Entry {
    tool: Arc<dyn Tool>,
    schema: ToolSchema,
}

/// The tools of one run, in insertion order, each with its schema canonicalised once.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, replacing one of the same name so later sources (plugins) can override.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        let mut parameters = tool.schema();
        if tool.subjects() != Subjects::Undeclared {
            schema::close(&mut parameters);
        }
        let schema = ToolSchema {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            parameters: canonicalize(parameters),
        };
        let entry = Entry { tool, schema };
        match self
            .entries
            .iter_mut()
            .find(|e| e.schema.name == entry.schema.name)
        {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entries
            .iter()
            .find(|e| e.schema.name == name)
            .map(|e| &e.tool)
    }

    /// Refuses arguments the tool's schema does not allow (see [`schema::check`]), before the
    /// permission gate looks at the call. An unknown tool passes; the caller reports it.
    pub fn validate(&self, name: &str, args: &Value) -> Result<(), ToolError> {
        match self.entries.iter().find(|e| e.schema.name == name) {
            Some(entry) => schema::check(&entry.schema.parameters, args).map_err(|detail| {
                ToolError::InvalidArgs(format!(
                    "{detail}; `{name}` takes {}",
                    schema::accepted(&entry.schema.parameters)
                ))
            }),
            None => Ok(()),
        }
    }

    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.entries.iter().map(|e| e.schema.clone()).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.schema.name.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps only the tools whose names pass `keep`, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.entries.retain(|e| keep(&e.schema.name));
    }
}

/// Rebuilds a JSON value with every object's keys sorted, whatever map type produced it, so
/// the bytes of a schema never depend on construction order.
pub fn canonicalize(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut pairs: Vec<(String, Value)> = map.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k, canonicalize(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonicalize).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_schema_bytes_ignore_key_order() {
        let a = canonicalize(
            json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}),
        );
        let b = canonicalize(
            json!({"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "type": "object"}),
        );
        assert_eq!(a.to_string(), b.to_string());
        assert!(a.to_string().starts_with("{\"properties\":{\"a\""));
    }
}
