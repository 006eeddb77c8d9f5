//! What is typed in the page's composer, through the chat's one input path
//! (`command::input`): a custom command or an MCP prompt renders and `@` references attach
//! exactly as in the chat (on the session's thread, see `sessions`), and the built-ins that
//! make sense in a browser run here: `/help`, `/new`, `/clear`, `/compact`, `/model`, `/plan`,
//! `/mcp`, `/status`, `/agent`, and `/mode` for the approval posture (the chat switches it
//! with a key). They never reach the model; their answer is a `command` event. An unknown
//! `/name`, or a built-in that needs the terminal, is a clear error and nothing is sent.

use std::sync::Arc;

use serde_json::{json, Value};

use super::http::Response;
use super::presets::refusal;
use super::sessions::{Hub, Live};
use super::Refused;
use crate::command::input::{self, Input};
use crate::command::{split_invocation, Builtin};

/// The page's `/mode`: the approval posture the chat switches with Shift+Tab.
const MODE: &str = "mode";

/// Handles one typed line for `live`.
pub fn typed(hub: &Hub, live: &Arc<Live>, text: &str) -> Response {
    if let Some((name, args)) = split_invocation(text.trim()) {
        if name == MODE && live.catalog.lookup(MODE).is_none() {
            return mode(live, text, args.trim());
        }
    }
    match input::interpret(text, &live.catalog) {
        None => Response::error(400, "send {\"text\": \"…\"}"),
        Some(Err(err)) => Response::error(400, &err.to_string()),
        Some(Ok(Input::Message(message))) => match live.send(message) {
            Ok(()) => Response::json(200, &json!({"ok": true})),
            Err(err) => Response::error(409, &err),
        },
        Some(Ok(Input::Profile { name, task })) if task.is_empty() => Response::error(
            400,
            &format!("/{name} needs a task: /{name} TASK runs the `{name}` subagent on it"),
        ),
        Some(Ok(Input::Profile { name, task })) => match live.run_profile(name, task) {
            Ok(()) => Response::json(200, &json!({"ok": true})),
            Err(err) => Response::error(409, &err),
        },
        Some(Ok(Input::Builtin(builtin, args))) => {
            if builtin.needs_idle(&args) && live.describe()["running"] == true {
                return Response::error(
                    409,
                    &format!(
                        "/{} waits for the running turn; interrupt it or wait",
                        builtin.name()
                    ),
                );
            }
            self::builtin(hub, live, builtin, args.trim(), text.trim())
        }
    }
}

/// The answer of a built-in: a `command` event for every page on the session, and the same
/// in the response.
fn answer(live: &Live, command: &str, typed: &str, text: String) -> Response {
    let event = json!({"type": "command", "command": command, "typed": typed, "text": text});
    live.publish(event.clone());
    Response::json(200, &event)
}

fn builtin(hub: &Hub, live: &Arc<Live>, builtin: Builtin, args: &str, typed: &str) -> Response {
    let name = builtin.name();
    match builtin {
        Builtin::Help => answer(live, name, typed, help(live)),
        Builtin::New | Builtin::Clear => match hub.replace(live, builtin == Builtin::Clear) {
            Ok(next) => Response::json(200, &json!({"ok": true, "session": next.describe()})),
            Err(err) => refused(&err),
        },
        Builtin::Compact => match live.compact() {
            Ok(()) => Response::json(200, &json!({"ok": true})),
            Err(err) => Response::error(409, &err),
        },
        Builtin::Model if args.is_empty() => {
            let models = hub.factory().models();
            let current = live.model();
            let mut text = String::from("Models (/model NAME switches from the next turn):\n");
            for model in models["models"].as_array().into_iter().flatten() {
                let model = model.as_str().unwrap_or_default();
                let mark = if model == current { "*" } else { " " };
                text.push_str(&format!("{mark} {model}\n"));
            }
            answer(live, name, typed, text)
        }
        Builtin::Model => match hub.factory().switch_model(args) {
            Ok(switch) => {
                let model = switch.name.clone();
                match live.set_model(switch) {
                    Ok(()) => answer(live, name, typed, format!("now using {model}")),
                    Err(err) => Response::error(409, &err),
                }
            }
            Err(err) => Response::error(400, &err),
        },
        Builtin::Plan => {
            let planning = live.describe()["planning"] != true;
            match live.set_planning(planning) {
                Ok(()) => Response::json(200, &json!({"ok": true, "planning": planning})),
                Err(err) => Response::error(409, &err),
            }
        }
        Builtin::Mcp => answer(live, name, typed, mcp(live)),
        Builtin::Status => answer(live, name, typed, status(live)),
        Builtin::Agent if args.is_empty() => {
            let (catalog, _) = hub.factory().compositions();
            let (entries, problems) = catalog.list();
            let bound = live.composition();
            let mut text = format!("bound: {}\n", bound["id"].as_str().unwrap_or_default());
            text.push_str(&crate::app::catalog_table::render_list(
                &entries,
                catalog.default_id().as_deref(),
            ));
            for problem in problems {
                text.push_str(&format!("problem: {problem}\n"));
            }
            text.push_str("(* = your default; `/agent ID` chooses before the first prompt)\n");
            answer(live, name, typed, text)
        }
        Builtin::Agent if !hub.factory().config_editing() => super::presets::editing_disabled(),
        Builtin::Agent => match hub.rebind(live, args) {
            Ok(next) => Response::json(200, &json!({"ok": true, "session": next.describe()})),
            Err(err) => refused(&err),
        },
        Builtin::Effort
        | Builtin::Tools
        | Builtin::Cost
        | Builtin::Resume
        | Builtin::Memory
        | Builtin::Rewind
        | Builtin::Verbose
        | Builtin::Goal
        | Builtin::Replan
        | Builtin::Persona
        | Builtin::Exit => Response::error(
            400,
            &format!(
                "/{name} is not available in the browser; /help lists what is (the terminal chat has the rest)"
            ),
        ),
    }
}

fn refused(err: &Refused) -> Response {
    match err {
        Refused::Composition(err) => refusal(err),
        Refused::Other(message) => Response::error(409, message),
    }
}

/// `/mode [ask|auto|yolo]`: shows or switches the approval posture.
fn mode(live: &Live, typed: &str, args: &str) -> Response {
    if args.is_empty() {
        let posture = live.describe()["posture"].clone();
        return answer(
            live,
            MODE,
            typed,
            format!(
                "approvals: {} (/mode ask, auto or yolo)",
                posture.as_str().unwrap_or("")
            ),
        );
    }
    match crate::permission::parse_posture(args).and_then(|p| live.set_posture(p)) {
        Ok(()) => Response::json(200, &json!({"ok": true})),
        Err(err) => Response::error(400, &err),
    }
}

/// Whether the page runs a built-in (the rest need the terminal chat).
fn in_browser(builtin: Builtin) -> bool {
    matches!(
        builtin,
        Builtin::Help
            | Builtin::New
            | Builtin::Clear
            | Builtin::Compact
            | Builtin::Model
            | Builtin::Plan
            | Builtin::Mcp
            | Builtin::Status
            | Builtin::Agent
    )
}

/// The commands this page understands, one a line: built-ins, `/mode`, custom commands and
/// MCP prompts.
fn help(live: &Live) -> String {
    let mut text = String::from("Commands:\n");
    let line = |name: &str, hint: &str, description: &str| {
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!(" {hint}")
        };
        format!("  /{name}{hint}  {description}\n")
    };
    for entry in live.catalog.entries() {
        if let crate::command::Kind::Builtin(builtin) = entry.kind {
            if !in_browser(builtin) {
                continue;
            }
        }
        text.push_str(&line(&entry.name, &entry.argument_hint, &entry.description));
    }
    text.push_str(&line(
        MODE,
        "[ask|auto|yolo]",
        "Show or switch the approval posture",
    ));
    text.push_str("Type @path to attach a file of the workspace.\n");
    text
}

/// `/mcp`: each server's state and tools.
fn mcp(live: &Live) -> String {
    let servers = live.mcp_status["servers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if servers.is_empty() {
        return "no MCP servers are configured ([[plugins]] in the config, or .mcp.json)".into();
    }
    let mut text = String::new();
    for server in servers {
        let tools = server["tools"].as_array().map_or(0, Vec::len);
        text.push_str(&format!(
            "{}  {}{}  {tools} tools\n",
            server["name"].as_str().unwrap_or_default(),
            server["state"].as_str().unwrap_or_default(),
            server["detail"]
                .as_str()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default(),
        ));
    }
    text
}

/// `/status`: model, session, file, approvals, plan mode, composition.
fn status(live: &Live) -> String {
    let described: Value = live.describe();
    format!(
        "model: {}\nsession: {}\nfile: {}\napprovals: {}\nplan mode: {}\ncomposition: {}{}\n",
        described["model"].as_str().unwrap_or_default(),
        live.id,
        live.path.display(),
        described["posture"].as_str().unwrap_or_default(),
        if described["planning"] == true {
            "on"
        } else {
            "off"
        },
        described["agentComposition"]["id"]
            .as_str()
            .unwrap_or_default(),
        match &described["agentComposition"] {
            c if c["bound"] == true => format!(
                " · revision {} · {}",
                c["revision"],
                c["name"].as_str().unwrap_or_default()
            ),
            _ => " (unbound)".into(),
        },
    )
}
