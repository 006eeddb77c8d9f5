//! The hooks of a session, gathered from configuration: `[[hooks]]` (the loader already
//! dropped a project file's entries in an untrusted workspace) and the `hooks` of Claude
//! Code's settings files (`config::claude::settings_files`): the user's
//! `~/.claude/settings.json`, believed while it lies outside everything the session may write,
//! and the workspace's `.claude/settings.json` and `.claude/settings.local.json`, read only
//! when the workspace is trusted with that file as it is now (`config::trust::Bound`) or for a
//! `--trust-project` run, since a repository, or a model writing in the workspace, could
//! otherwise make reasonix run its commands. A conversation bound to a composition takes the
//! settings files' non-blocking hooks the way it takes `[[hooks]]`: only the selected events,
//! and from its retained bundle when it has one (`config::BoundClaudeHooks`).

use std::path::Path;
use std::time::Duration;

use crate::agent::hooks::{self, Hook, Hooks};
use crate::config::{self, BoundClaudeHooks, Config};

/// The hooks, and one line per problem or skipped source.
pub fn session_hooks(config: &Config, workspace: &Path) -> (Hooks, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for (index, entry) in config.hooks.iter().enumerate() {
        let origin = format!("[[hooks]] #{}", index + 1);
        let timeout =
            (entry.timeout_seconds > 0).then(|| Duration::from_secs(entry.timeout_seconds));
        match Hook::new(
            &entry.event,
            &entry.matcher,
            &entry.command,
            timeout,
            &origin,
        ) {
            Ok(hook) => found.push(hook),
            Err(problem) => problems.push(format!("hooks: {problem}; skipped")),
        }
    }
    let (claude, mut trouble) = claude_settings_hooks(config, workspace);
    found.extend(
        claude
            .into_iter()
            .filter(|hook| match &config.bound_claude_hooks {
                BoundClaudeHooks::Live => true,
                BoundClaudeHooks::Events(kept) => {
                    is_safety(hook) || kept.iter().any(|e| e == hook.event.as_str())
                }
                BoundClaudeHooks::Retained => is_safety(hook),
            }),
    );
    problems.append(&mut trouble);
    (Hooks::new(found), problems)
}

fn is_safety(hook: &Hook) -> bool {
    crate::composition::SAFETY_HOOKS.contains(&hook.event.as_str())
}

/// The non-blocking hooks of Claude Code's settings files that a binding selecting `keeps`
/// retains, as `[[hooks]]` entries (both match tools by our and Claude's names alike).
pub fn claude_hooks_to_retain(
    config: &Config,
    workspace: &Path,
    keeps: impl Fn(&str) -> bool,
) -> Vec<config::HookConfig> {
    let (claude, _) = claude_settings_hooks(config, workspace);
    claude
        .into_iter()
        .filter(|hook| !is_safety(hook) && keeps(hook.event.as_str()))
        .map(|hook| config::HookConfig {
            event: hook.event.as_str().to_string(),
            matcher: hook.matcher_text,
            command: hook.command,
            timeout_seconds: hook.timeout.as_secs(),
        })
        .collect()
}

/// The command hooks of the Claude Code settings files that are believed (see the module
/// documentation), and one line per problem or file whose hooks are ignored.
fn claude_settings_hooks(config: &Config, workspace: &Path) -> (Vec<Hook>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for file in config::claude::settings_files(config, workspace) {
        // The same bounded read as the files' permissions: a repository's settings file is
        // read before its trust is judged.
        let text = match config::load::read_bounded(&file.path) {
            Ok(text) => text,
            Err(config::ConfigError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                continue
            }
            Err(err) => {
                problems.push(format!("hooks: {err}; its hooks are not read"));
                continue;
            }
        };
        let origin = file.path.display().to_string();
        let (claude, mut trouble) = hooks::from_claude_settings(&text, &origin);
        if claude.is_empty() || file.believed() {
            found.extend(claude);
            problems.append(&mut trouble);
            continue;
        }
        let why = match file.standing {
            config::trust::Standing::Changed => "the file changed since you trusted the workspace (review it; `reasonix trust` runs them)",
            _ => "the workspace is not trusted (`reasonix trust` runs them)",
        };
        problems.push(format!(
            "hooks: the {} hooks of {origin} are ignored: {why}",
            claude.len()
        ));
    }
    (found, problems)
}

/// Gives the session's hooks to the agent and its children; each problem is a warning event.
pub fn install(
    agent: &mut crate::agent::runner::Agent,
    children: &super::delegate::Children,
    config: &Config,
    workspace: &Path,
    sink: &mut dyn crate::agent::events::EventSink,
) {
    let (hooks, problems) = session_hooks(config, workspace);
    for message in problems {
        sink.emit(crate::agent::events::Event::Notice {
            level: crate::agent::events::NoticeLevel::Warning,
            message,
        });
    }
    children.set_hooks(&hooks);
    agent.set_hooks(hooks);
}
