//! The skill store a session sees, built from configuration: the roots in precedence order
//! with the workspace's trust, read once per process and workspace, and the skills and
//! subagent profiles as `/NAME` commands. Listing them is `cli::skills`'s job.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::command::custom;
use crate::config::{self, Config};
use crate::skill::store::{self, Roots, Store};
use crate::skill::{RunAs, Scope, Skill};

/// A workspace, whether it was trusted when its skills were read, and the retained bundle a
/// bound conversation reads instead (with whether it is untrusted).
type StoreKey = (PathBuf, bool, Option<(PathBuf, bool)>);

/// The store a session uses, with the workspace's trust as the trust list records it. It is
/// read once per process (and trust standing): the system prompt's index, the `skill` tool,
/// the chat's commands and the subagent profiles see the same skills, and start-up reads the
/// roots once. A skill added later appears in the next run or chat.
pub fn session_store(config: &Config, workspace: &Path) -> Arc<Store> {
    static STORES: Mutex<Vec<(StoreKey, Arc<Store>)>> = Mutex::new(Vec::new());
    let trusted = skills_trusted(config, workspace);
    let retained = config
        .skills
        .retained
        .clone()
        .map(|dir| (dir, config.skills.retained_untrusted));
    let key = (workspace.to_path_buf(), trusted, retained.clone());
    let mut stores = STORES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, store)) = stores.iter().find(|(k, _)| *k == key) {
        return Arc::clone(store);
    }
    // A bound conversation's skills are those frozen when it was bound.
    let store = Arc::new(match retained {
        Some((dir, untrusted)) => crate::composition::retain::load_store(&dir, untrusted),
        None => store::load(&roots(config, &config.home, workspace, trusted)),
    });
    stores.push((key, Arc::clone(&store)));
    store
}

/// Each inline skill as a `/<name>` command whose text loads the skill with the typed
/// arguments, and each subagent profile (stored or built-in) as one the front end runs
/// host-side with the typed task (`Agent::run_profile`), never through the model's `task`.
/// The profile's name is in the user's turn only, never in a schema or the system prompt. A custom command of the same name wins
/// (it is the user's explicit file), with a notice.
pub fn add_commands(commands: &mut custom::Loaded, store: &Store) {
    let profiles = profiles(&store.skills);
    let inline = store.skills.iter().filter(|s| s.run_as == RunAs::Inline);
    for skill in inline.chain(profiles.iter()) {
        // An untrusted project command does not hide a skill the user installed (the
        // shipped profiles rank below any file, as before).
        let installed = !skill.scope.is_repository() && skill.scope != Scope::Builtin;
        if installed && commands.untrusted.contains(&skill.name) {
            commands.commands.retain(|c| c.name != skill.name);
            commands.untrusted.retain(|n| *n != skill.name);
            commands.notices.push(format!(
                "the project's /{name} is ignored: your skill `{name}` wins while \
                 .reasonix/commands is not trusted (`reasonix trust`)",
                name = skill.name
            ));
        }
        if commands.commands.iter().any(|c| c.name == skill.name) {
            commands.notices.push(format!(
                "skill `{}` has no /{} command: a custom command of that name comes first",
                skill.name, skill.name
            ));
            continue;
        }
        let (description, body) = match skill.run_as {
            RunAs::Inline => (
                format!("skill: {}", skill.description),
                crate::tool::builtin::skill::render(skill, "$ARGUMENTS"),
            ),
            // Run host-side by the front end (`command::input::Input::Profile`); no text of
            // it goes to the model as a prompt.
            RunAs::Subagent => (format!("subagent: {}", skill.description), String::new()),
        };
        commands.commands.push(custom::CustomCommand {
            name: skill.name.clone(),
            description,
            argument_hint: String::new(),
            body,
            path: skill.dir.join("SKILL.md"),
            profile: skill.run_as == RunAs::Subagent,
        });
    }
    commands.commands.sort_by(|a, b| a.name.cmp(&b.name));
}

/// The workspace folders whose skills and profiles share one name space, so one trust:
/// a changed one may shadow a skill of another.
const SKILL_FOLDERS: [config::trust::Bound; 3] = [
    config::trust::Bound::Skills,
    config::trust::Bound::ClaudeSkills,
    config::trust::Bound::ClaudeAgents,
];

/// Whether the workspace's skill folders are trusted as they are now: all of them.
pub fn skills_trusted(config: &Config, workspace: &Path) -> bool {
    let store = config::trust::TrustStore::for_session(config);
    SKILL_FOLDERS
        .into_iter()
        .all(|bound| store.covers(workspace, bound))
}

/// The line for a workspace's `.claude/agents/*.md` left unread because the workspace's
/// skill folders are not trusted; `None` when there are none, or they are read.
pub fn untrusted_agents_notice(config: &Config, workspace: &Path) -> Option<String> {
    if skills_trusted(config, workspace) {
        return None;
    }
    let dir = workspace.join(".claude").join("agents");
    let count = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .count();
    if count == 0 {
        return None;
    }
    let store = config::trust::TrustStore::for_session(config);
    let why = match store.standing_of(workspace, config::trust::Bound::ClaudeAgents) {
        config::trust::Standing::Changed => {
            "the folder changed since you trusted the workspace (review it; `reasonix trust` reads them)"
        }
        config::trust::Standing::Trusted => {
            "another skill folder of the workspace changed since you trusted it (review it; `reasonix trust` reads them)"
        }
        config::trust::Standing::Untrusted => {
            "the workspace is not trusted (`reasonix trust` or --trust-project reads them)"
        }
    };
    Some(format!(
        "subagents: the {count} agents of {} are ignored: {why}",
        dir.display()
    ))
}

/// Where the store looks, from `[skills]`, the home and the workspace's trust.
pub fn roots(config: &Config, home: &Path, workspace: &Path, trusted: bool) -> Roots {
    Roots {
        workspace: workspace.to_path_buf(),
        home: Some(home.to_path_buf()),
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(Into::into),
        paths: config.skills.paths.clone(),
        excluded_paths: config.skills.excluded_paths.clone(),
        disabled: config.skills.disabled_skills.clone(),
        workspace_trusted: trusted,
        claude_skills: config::claude::user_path(config, workspace, "skills"),
        claude_agents: config::claude::user_path(config, workspace, "agents"),
    }
}

/// The stored subagent skills, then each built-in no stored skill shadows, by name.
pub fn profiles(stored: &[Skill]) -> Vec<Skill> {
    let mut all: Vec<Skill> = stored
        .iter()
        .filter(|s| s.run_as == RunAs::Subagent)
        .cloned()
        .collect();
    for builtin in crate::skill::builtin::profiles() {
        if !stored.iter().any(|s| s.name == builtin.name) {
            all.push(builtin);
        }
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}
