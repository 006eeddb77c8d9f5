//! Building a session's parts from configuration, shared by `reasonix run` and `reasonix
//! chat`: the working directory, the loaded config, the key check, the tool registry, the
//! session (new or resumed) with its system prompt, the tool context with the sandbox, the
//! permission policy, the agent options, and saving "always allow" rules into
//! `./reasonix.toml` without disturbing the rest of the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::Global;
use crate::agent::compaction::ContextOptions;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::prompt::{self, PromptInputs};
use crate::agent::runner::Options;
use crate::agent::session::{self, Header, Session};
use crate::config::{self, Config, LoadOptions, Loaded, PermissionMode};
use crate::error::Error;
use crate::permission::{Decision, Gate, Policy, PolicyGate, Posture, Verdict};
use crate::provider::{Message, ProviderError, ProviderSettings};
use crate::tool::{builtin, Profile, Registry, ToolContext};

/// The canonical working directory (after `-C`).
pub fn working_dir() -> Result<PathBuf, Error> {
    std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| Error::io("reading the working directory", e))
}

/// What the command line says about the project file.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProjectFlags {
    /// `--trust-project`: believe the project file for this run only.
    pub trust: bool,
    /// `--permission-mode strict`: the project file's allow rules and wider mode are ignored.
    pub strict: bool,
}

/// Loads the layered config; warnings go to stderr.
pub fn load_config(global: &Global, cwd: &Path, project: ProjectFlags) -> Result<Loaded, Error> {
    let mut options = LoadOptions::from_env(cwd.to_path_buf(), global.config.clone())?;
    options.trust_project = project.trust;
    options.strict = project.strict;
    let loaded = config::load(&options)?;
    for warning in &loaded.warnings {
        eprintln!("reasonix: warning: {warning}");
    }
    Ok(loaded)
}

/// A key is required unless the endpoint is a plain-http server (a local model) or a replay.
pub fn check_key(settings: &ProviderSettings) -> Result<(), Error> {
    let local = settings.base_url.starts_with("http://")
        || settings
            .chat_url
            .as_deref()
            .is_some_and(|u| u.starts_with("http://"));
    if settings.api_key.is_none() && settings.kind != "replay" && !local {
        return Err(Error::Provider(ProviderError::MissingKey {
            provider: settings.name.clone(),
            api_key_env: settings.api_key_env.clone(),
        }));
    }
    Ok(())
}

/// The enabled built-in tools; unknown names in `[tools] enabled` become warnings.
pub fn registry(config: &Config, sink: &mut dyn EventSink) -> Registry {
    let enabled = &config.tools.enabled;
    let mut registry = Registry::new();
    let all = builtin::all();
    for name in enabled {
        if !all.iter().any(|t| t.name() == name) {
            sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("[tools] enabled names unknown tool `{name}` (ignored)"),
            });
        }
    }
    for tool in all {
        if enabled.is_empty() || enabled.iter().any(|n| n == tool.name()) {
            registry.insert(tool);
        }
    }
    registry
}

/// Which session to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    New,
    /// `--continue`: the newest session of this workspace.
    Newest,
    /// `--resume ID|PATH`.
    Reference(String),
}

/// How an existing session is continued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Attach {
    /// In place, holding its lock: a second process on the same session fails at once.
    #[default]
    InPlace,
    /// `--fork-session`: a copy under a new id, leaving the original to whoever has it.
    Fork,
}

impl Attach {
    /// The flag's check: forking needs a session to fork.
    pub fn check(self, choice: Option<&SessionChoice>) -> Result<(), Error> {
        match (self, choice) {
            (Attach::Fork, None | Some(SessionChoice::New)) => Err(Error::Usage(
                "--fork-session copies an existing session; add `--resume ID` or `--continue`"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

/// Flags that shape the system prompt of a new session.
#[derive(Debug, Clone, Default)]
pub struct PromptFlags {
    pub system_prompt: Option<String>,
    pub append_system_prompt: Vec<String>,
}

/// The session a run or chat works in: new, or an existing one continued in place (locked)
/// or forked. What loading repaired is in [`Session::repair_notice`] for the caller to show.
pub fn open_session(
    choice: &SessionChoice,
    attach: Attach,
    flags: &PromptFlags,
    config: &Config,
    settings: &ProviderSettings,
    cwd: &Path,
    command: &str,
) -> Result<Session, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let path = match choice {
        SessionChoice::New => return new_session(flags, config, settings, cwd),
        SessionChoice::Newest => session::latest(&dir).ok_or_else(|| {
            Error::Usage(format!(
                "no session to continue in {}; start one with `reasonix {command}`",
                cwd.display()
            ))
        })?,
        SessionChoice::Reference(reference) => find_session(reference, config, cwd)?,
    };
    let session_err = |e: session::SessionError| Error::Failed(e.to_string());
    match attach {
        Attach::InPlace => Session::open(&path).map_err(session_err),
        Attach::Fork => {
            let header = Header::new(session::new_id(), &settings.name, &settings.model, cwd);
            Session::fork(&path, &dir, header).map_err(session_err)
        }
    }
}

/// Resolves `--resume ID|PATH|prefix` to a session file.
pub fn find_session(reference: &str, config: &Config, cwd: &Path) -> Result<PathBuf, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let projects = config::paths::state_dir(&config.home).join("projects");
    session::find(reference, &dir, &projects).map_err(|e| match e {
        session::SessionError::NotFound(_) | session::SessionError::Ambiguous { .. } => {
            Error::Usage(e.to_string())
        }
        other => Error::Failed(other.to_string()),
    })
}

/// A fresh session file with the system prompt as its first message.
pub fn new_session(
    flags: &PromptFlags,
    config: &Config,
    settings: &ProviderSettings,
    cwd: &Path,
) -> Result<Session, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let header = Header::new(session::new_id(), &settings.name, &settings.model, cwd);
    let mut session = Session::create(&dir, header).map_err(|e| Error::Failed(e.to_string()))?;
    let system = system_prompt(flags, config, cwd)?;
    session
        .push(Message::system(system))
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(session)
}

pub fn system_prompt(flags: &PromptFlags, config: &Config, cwd: &Path) -> Result<String, Error> {
    let agent = &config.agent;
    let base = match (
        &flags.system_prompt,
        &agent.system_prompt_file,
        &agent.system_prompt,
    ) {
        (Some(text), _, _) => Some(text.clone()),
        (None, Some(file), _) => Some(std::fs::read_to_string(file).map_err(|e| {
            Error::io(
                format!("reading agent.system_prompt_file {}", file.display()),
                e,
            )
        })?),
        (None, None, text) => text.clone(),
    };
    let mut append: Vec<String> = agent.append_system_prompt.iter().cloned().collect();
    append.extend(flags.append_system_prompt.iter().cloned());
    let sandbox = crate::sandbox::Policy::new(sandbox_settings(config, cwd)?);
    let writable: Vec<PathBuf> = sandbox.roots().cloned().collect();
    Ok(prompt::system_prompt(&PromptInputs {
        base,
        append,
        cwd,
        home: &config.home,
        environment: config.environment.enabled,
        extra_tools: &config.environment.tools,
        writable: &writable,
    }))
}

/// The tool context from `[tools]` (bash timeout) and the secret variable names, without a
/// sandbox from config (writers confined to the working directory).
pub fn tool_context(config: &Config, cwd: &Path) -> Result<ToolContext, Error> {
    let mut ctx = ToolContext::new(cwd.to_path_buf());
    ctx.bash_timeout = match config.tools.bash_timeout_seconds {
        0 => None,
        secs => Some(std::time::Duration::from_secs(secs)),
    };
    ctx.secret_env = Arc::new(config.secret_env_names());
    ctx.sandbox = Arc::new(crate::sandbox::Policy::new(sandbox_settings(config, cwd)?));
    ctx.state = Some(Arc::new(builtin::history::StatePaths::new(
        &config::paths::state_dir(&config.home),
        config::paths::sessions_dir(&config.home, cwd),
    )));
    Ok(ctx)
}

/// The `[sandbox]` table as sandbox settings, `${VAR}` expanded in `forbid_read`.
pub fn sandbox_settings(config: &Config, cwd: &Path) -> Result<crate::sandbox::Settings, Error> {
    Ok(crate::sandbox::Settings::from_config(config, cwd)?)
}

/// The static permission policy from `[permissions]`.
pub fn permission_policy(config: &Config, cwd: &Path) -> Result<Policy, Error> {
    permission_policy_with(config, cwd, &PermissionFlags::default())
}

/// Permission settings given on the command line.
#[derive(Debug, Clone, Default)]
pub struct PermissionFlags {
    pub posture: Option<Posture>,
    /// `--allow` / `--allowedTools` rules, added to `[permissions] allow`.
    pub allow: Vec<String>,
    /// `--deny` / `--disallowedTools` rules, added to `[permissions] deny`.
    pub deny: Vec<String>,
}

impl PermissionFlags {
    pub fn set_posture(&mut self, value: &str) -> Result<(), Error> {
        self.posture = Some(crate::permission::parse_posture(value).map_err(Error::Usage)?);
        Ok(())
    }
}

/// The config's rules plus the command line's.
fn permission_policy_with(
    config: &Config,
    cwd: &Path,
    flags: &PermissionFlags,
) -> Result<Policy, Error> {
    let perms = &config.permissions;
    let mode = match perms.mode {
        PermissionMode::Ask => Decision::Ask,
        PermissionMode::Allow => Decision::Allow,
        PermissionMode::Deny => Decision::Deny,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut policy = Policy::new(mode, cwd.to_path_buf(), home);
    let parse = |lists: &[&[String]], key: &str| {
        let all: Vec<&String> = lists.iter().flat_map(|l| l.iter()).collect();
        Policy::parse_rules(&all).map_err(|e| {
            Error::Usage(format!(
                "{e} (in [permissions] {key} or --{key}); fix the rule"
            ))
        })
    };
    policy.allow = parse(&[&perms.allow, &flags.allow], "allow")?;
    policy.ask = parse(&[&perms.ask], "ask")?;
    policy.deny = parse(&[&perms.deny, &flags.deny], "deny")?;
    Ok(policy)
}

/// The gate for a headless run or a chat: rules from config and flags, the posture from
/// the flags (default ask), and the approver when the front end can ask.
pub fn gate(
    config: &Config,
    cwd: &Path,
    flags: &PermissionFlags,
    approver: Option<Box<dyn crate::permission::Approver>>,
) -> Result<PolicyGate, Error> {
    Ok(PolicyGate::new(
        permission_policy_with(config, cwd, flags)?,
        flags.posture.unwrap_or(Posture::Ask),
        approver,
    ))
}

/// The agent options from config, the resolved model and flags.
pub fn options(
    config: &Config,
    settings: &ProviderSettings,
    max_steps: Option<u32>,
    effort: Option<String>,
) -> Options {
    Options {
        max_steps,
        max_parallel_tools: config.agent.max_parallel_tools as usize,
        temperature: config.agent.temperature,
        max_tokens: config.agent.max_tokens,
        reasoning_effort: effort.or(config.agent.reasoning_effort.clone()),
        prices: settings.prices,
        context: ContextOptions {
            window: settings.context_window,
            snip_ratio: config.agent.tool_result_snip_ratio,
            compact_ratio: config.agent.compact_ratio,
            force_ratio: config.agent.compact_force_ratio,
            archive_dir: Some(config::paths::state_dir(&config.home).join("archive")),
        },
    }
}

/// Lets the UI keep a handle on the gate it gives the agent (posture changes, `!cmd`).
pub struct SharedGate(pub Arc<PolicyGate>);

impl Gate for SharedGate {
    fn check_declared(&self, tool: &str, profile: Profile, args: &Value) -> Verdict {
        self.0.check_declared(tool, profile, args)
    }

    fn check_fresh(&self, tool: &str, args: &Value, preview: &str) -> Verdict {
        self.0.check_fresh(tool, args, preview)
    }

    fn read_denials(&self) -> Option<Arc<dyn crate::tool::ReadDenials>> {
        self.0.read_denials()
    }
}

/// Adds `rule` to `[permissions] allow` in the TOML file at `path`, creating the file or
/// the table when missing. The file is edited as text so comments, key order and every
/// other setting survive; the result is parsed back to make sure it says what we meant
/// before it atomically replaces the original.
pub fn persist_allow_rule(path: &Path, rule: &str) -> Result<(), String> {
    let original = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let parsed: toml::Table = toml::from_str(&original).map_err(|e| {
        format!(
            "{} is not valid TOML ({}); fix it, then allow again",
            path.display(),
            e.message()
        )
    })?;
    if allow_list(&parsed).is_some_and(|list| list.iter().any(|r| r == rule)) {
        return Ok(());
    }
    let edited = add_allow_rule(&original, rule);
    let check: Result<toml::Table, _> = toml::from_str(&edited);
    let ok = check
        .ok()
        .and_then(|t| allow_list(&t))
        .is_some_and(|list| list.iter().any(|r| r == rule));
    if !ok {
        return Err(format!(
            "could not add the rule to {} automatically; add `{rule}` to [permissions] allow yourself",
            path.display()
        ));
    }
    crate::fsutil::write_atomic(path, edited.as_bytes(), None)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn allow_list(table: &toml::Table) -> Option<Vec<String>> {
    let allow = table
        .get("permissions")?
        .as_table()?
        .get("allow")?
        .as_array()?;
    Some(
        allow
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
    )
}

/// The text edit behind [`persist_allow_rule`]: appends to an existing `allow` array of
/// `[permissions]`, else adds the key under the table header, else appends the table.
fn add_allow_rule(text: &str, rule: &str) -> String {
    let quoted = serde_json::Value::String(rule.to_string()).to_string();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let header = lines.iter().position(|l| is_table_header(l, "permissions"));
    let Some(header) = header else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("[permissions]\nallow = [{quoted}]\n"));
        return out;
    };
    let table_end = lines[header + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| header + 1 + i);
    let offset_of = |line: usize| lines[..line].iter().map(|l| l.len()).sum::<usize>();
    for (i, line) in lines.iter().enumerate().take(table_end).skip(header + 1) {
        let trimmed = line.trim_start();
        let is_allow = trimmed
            .strip_prefix("allow")
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if !is_allow {
            continue;
        }
        let start = offset_of(i) + line.find('[').unwrap_or(line.len());
        if let Some(insert) = array_insert_point(text, start) {
            let (at, sep) = insert;
            return format!("{}{sep}{quoted}{}", &text[..at], &text[at..]);
        }
        return text.to_string();
    }
    let at = offset_of(header + 1);
    let mut out = text[..at].to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("allow = [{quoted}]\n"));
    out.push_str(&text[at..]);
    out
}

fn is_table_header(line: &str, name: &str) -> bool {
    let line = line.split('#').next().unwrap_or("").trim();
    line.strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .is_some_and(|inner| inner.trim() == name)
}

/// Scans the array starting at `open` (a `[`) to its closing bracket, skipping strings and
/// comments; returns where to insert a new element and the separator it needs.
fn array_insert_point(text: &str, open: usize) -> Option<(usize, &'static str)> {
    let bytes = text.as_bytes();
    if bytes.get(open) != Some(&b'[') {
        return None;
    }
    let mut depth = 0;
    let mut i = open;
    let mut last_significant = open;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if quote == b'"' && bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                last_significant = i;
            }
            b'[' => {
                depth += 1;
                last_significant = i;
            }
            b']' => {
                depth -= 1;
                if depth == 0 {
                    let sep = match bytes[last_significant] {
                        b'[' => "",
                        b',' => " ",
                        _ => ", ",
                    };
                    return Some((last_significant + 1, sep));
                }
                last_significant = i;
            }
            b if b.is_ascii_whitespace() => {}
            _ => last_significant = i,
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_in(text: &str) -> Vec<String> {
        allow_list(&toml::from_str(text).unwrap()).unwrap_or_default()
    }

    #[test]
    fn creates_the_table_in_an_empty_or_missing_file() {
        assert_eq!(
            add_allow_rule("", "Bash(git status)"),
            "[permissions]\nallow = [\"Bash(git status)\"]\n"
        );
        let text = "# my project\ndefault_model = \"x\" # pinned\n\n[agent]\ntemperature = 0.2";
        let out = add_allow_rule(text, "Edit(./a.rs)");
        assert!(out.starts_with(text), "{out}");
        assert_eq!(rules_in(&out), vec!["Edit(./a.rs)"]);
    }

    #[test]
    fn appends_to_existing_arrays_keeping_comments() {
        let text = "[permissions]\n# rules we trust\nmode = \"ask\"\nallow = [\n  \"Bash(ls)\",  # listing\n  \"Read\" # reading ] bracket in comment\n]\ndeny = [\"Bash(rm -rf*)\"]\n\n[ui]\ncursor_shape = \"block\"\n";
        let out = add_allow_rule(text, "Bash(go test:*)");
        assert_eq!(rules_in(&out), vec!["Bash(ls)", "Read", "Bash(go test:*)"]);
        assert!(out.contains("# listing") && out.contains("# rules we trust"));
        assert!(out.contains("cursor_shape = \"block\""));
        let inline = add_allow_rule("[permissions]\nallow = []\n", "Edit");
        assert_eq!(inline, "[permissions]\nallow = [\"Edit\"]\n");
        let trailing = add_allow_rule("[permissions]\nallow = [\"A\",]\n", "B");
        assert_eq!(rules_in(&trailing), vec!["A", "B"]);
        let tricky = add_allow_rule("[permissions]\nallow = [\"Bash(echo \\\"]\\\")\"]\n", "C");
        assert_eq!(rules_in(&tricky), vec!["Bash(echo \"]\")", "C"]);
    }

    #[test]
    fn adds_the_key_under_an_existing_table() {
        let text = "[permissions] # ours\nmode = \"ask\"\n[sandbox]\nnetwork = true\n";
        let out = add_allow_rule(text, "Bash(make)");
        assert_eq!(
            out,
            "[permissions] # ours\nallow = [\"Bash(make)\"]\nmode = \"ask\"\n[sandbox]\nnetwork = true\n"
        );
    }

    #[test]
    fn persisting_writes_once_and_refuses_broken_files() {
        let dir = std::env::temp_dir().join(format!("reasonix-persist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("reasonix.toml");
        std::fs::write(&file, "# keep me\n[ui]\ncursor_shape = \"bar\"\n").unwrap();
        persist_allow_rule(&file, "Bash(cargo test:*)").unwrap();
        persist_allow_rule(&file, "Bash(cargo test:*)").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# keep me\n"));
        assert_eq!(text.matches("cargo test").count(), 1, "{text}");
        std::fs::write(&file, "[permissions\n").unwrap();
        let err = persist_allow_rule(&file, "X").unwrap_err();
        assert!(err.contains("not valid TOML"), "{err}");
        let missing = dir.join("new/reasonix.toml");
        assert!(
            persist_allow_rule(&missing, "X").is_err(),
            "no parent directory"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
