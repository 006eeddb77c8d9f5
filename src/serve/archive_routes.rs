//! The session routes of AGENT_COMPOSITIONS.md under `/api/tree/sessions/`: `export` (a
//! stored conversation as the `reasonix-native-session` v2 envelope), `import-native` (an
//! archive, as the original file or as `{workspace, content}`, saved as a new conversation)
//! and `move-to` (an unbound conversation into another workspace's session directory).
//!
//! The envelope, its one decoder and its limits are `app::session_archive`'s; this file only
//! carries them over HTTP. A `path` from the client is confined to the session files
//! reasonix keeps under its home (see [`session_file`]): nothing else is read, moved or
//! deleted. Import trusts nothing and starts nothing, and gives the archive's history no
//! authority (`session_archive::imported_history`), as on the command line. An archive is
//! also bounded by the HTTP parser's body limit (`http::Limits`, 1 MiB), which refuses a
//! larger request with 413 before any route sees it; `reasonix session import` takes the
//! full 192 MiB.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{Request, Response};
use super::Factory;
use crate::agent::session::{self, Session};
use crate::app::session_archive::{self, Decoded, Refusal};
use crate::config::paths;

/// `/api/tree/sessions/…`; `rest` is the path after `sessions`.
pub fn route(factory: &dyn Factory, request: &Request, method: &str, rest: &[&str]) -> Response {
    let result = match (method, rest) {
        ("POST", ["export"]) => export(factory, request),
        ("POST", ["import-native"]) => import(factory, request),
        ("POST", ["move-to"]) => move_to(factory, request),
        _ => return Response::error(404, "no such route"),
    };
    result.unwrap_or_else(|refused| refused)
}

/// `{path}` → `{name, content}`: the envelope of a stored conversation, with its binding.
fn export(factory: &dyn Factory, request: &Request) -> Result<Response, Response> {
    let file = session_file(factory, &text_field(request, "path")?)?;
    let (header, messages) =
        session::load(&file).map_err(|e| Response::error(404, &e.to_string()))?;
    Ok(Response::json(
        200,
        &json!({
            "name": format!("{}.json", header.id),
            "content": session_archive::encode(&factory.home(), &header, &messages)
                .map_err(|e| Response::error(409, &format!("agent_composition.unavailable: {e}")))?,
        }),
    ))
}

/// The JSON request form of an import; an archive itself has neither field.
#[derive(Deserialize)]
struct Wrapped {
    content: Option<String>,
    workspace: Option<String>,
}

/// The archive as the body (`?workspace=` names the workspace), or `{workspace, content}`;
/// saved as a new conversation of that workspace (this server's when none is named).
fn import(factory: &dyn Factory, request: &Request) -> Result<Response, Response> {
    let wrapped = serde_json::from_slice::<Wrapped>(&request.body).ok();
    let (bytes, named) = match wrapped {
        Some(Wrapped {
            content: Some(content),
            workspace,
        }) => (content.into_bytes(), workspace),
        _ => (request.body.clone(), None),
    };
    let workspace = match request.query_param("workspace").or(named) {
        Some(dir) => workspace_dir(&dir)?,
        None => factory.cwd(),
    };
    let decoded = session_archive::decode(&bytes).map_err(|r| refusal(&r))?;
    // The archive's retained skills are read by the prompt built next.
    session_archive::install_resources(&factory.home(), &decoded)
        .map_err(|e| Response::error(500, &e.to_string()))?;
    let binding = decoded.header.composition.as_ref().map(
        |b| json!({"id": b.id, "revision": b.revision, "bound": true, "imported": b.imported}),
    );
    // No authority of its own, as on the command line: today's prompt for the workspace it
    // lands in leads, and the archive's system text stays only as quoted history.
    let system = factory
        .system_prompt(&workspace, decoded.header.composition.as_ref())
        .map_err(|e| Response::error(500, &e))?;
    let decoded = Decoded {
        messages: session_archive::imported_history(system, decoded.messages),
        ..decoded
    };
    let dir = paths::sessions_dir(&factory.home(), &workspace);
    let id = session_archive::save(decoded, &factory.home(), &dir, &workspace)
        .map_err(|e| Response::error(500, &e.to_string()))?;
    Ok(Response::json(
        201,
        &json!({
            "id": id,
            "path": dir.join(format!("{id}.jsonl")),
            "agentComposition": binding,
        }),
    ))
}

/// `{path, target}`: an unbound conversation saved in the workspace `target` under its id
/// (a new one if that is taken) and its file removed. A bound one is refused before anything
/// is copied or deleted, and so is one another session holds open.
fn move_to(factory: &dyn Factory, request: &Request) -> Result<Response, Response> {
    let file = session_file(factory, &text_field(request, "path")?)?;
    let target = workspace_dir(&text_field(request, "target")?)?;
    let (header, _) = session::load(&file).map_err(|e| Response::error(404, &e.to_string()))?;
    if header.composition.is_some() {
        return Err(Response::json(
            409,
            &json!({
                "error": "agent_composition.workspace_bound: this conversation is bound to an \
                          agent composition and stays in its project; start a new \
                          conversation in the target project",
                "code": "agent_composition.workspace_bound",
            }),
        ));
    }
    let dir = paths::sessions_dir(&factory.home(), &target);
    if file.parent() == dir.canonicalize().ok().as_deref() {
        return Err(Response::error(
            409,
            "the conversation is already in that workspace",
        ));
    }
    // Held to the end: no other session appends to the file while it is copied and removed.
    let held = Session::open(&file).map_err(|e| Response::error(409, &e.to_string()))?;
    let decoded = Decoded {
        header: held.header.clone(),
        messages: held.messages().to_vec(),
        resources: Default::default(),
    };
    let id = session_archive::save(decoded, &factory.home(), &dir, &target)
        .map_err(|e| Response::error(500, &e.to_string()))?;
    std::fs::remove_file(&file).map_err(|e| {
        Response::error(
            500,
            &format!("copied as {id}, but cannot remove {}: {e}", file.display()),
        )
    })?;
    drop(held);
    Ok(Response::json(
        200,
        &json!({"id": id, "path": dir.join(format!("{id}.jsonl")), "workspace": target}),
    ))
}

/// A refused archive: its stable code beside an HTTP status.
fn refusal(refusal: &Refusal) -> Response {
    let status = match refusal {
        Refusal::Invalid(_) => 400,
        Refusal::Unsupported(_) => 422,
        Refusal::TooLarge(_) => 413,
    };
    Response::json(
        status,
        &json!({"error": refusal.to_string(), "code": refusal.code()}),
    )
}

fn text_field(request: &Request, key: &str) -> Result<String, Response> {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    body.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Response::error(400, &format!("send {{\"{key}\": \"…\"}}")))
}

/// A workspace named by the client: an existing directory, by its canonical path (the one
/// its session directory is named after).
fn workspace_dir(text: &str) -> Result<PathBuf, Response> {
    let dir = Path::new(text);
    match dir.canonicalize() {
        Ok(real) if dir.is_absolute() && real.is_dir() => Ok(real),
        _ => Err(Response::error(
            400,
            "the workspace must be the absolute path of an existing directory",
        )),
    }
}

/// The session file `reference` names: a bare id is looked up in this server's workspace; a
/// path must be absolute, not itself a symlink, and once every symlink on the way is resolved
/// be `<home>/projects/<slug>/sessions/<id>.jsonl`. Anything else (`..`, a file elsewhere, a
/// symlink out of the home) is refused, so a client reads and moves only conversations.
fn session_file(factory: &dyn Factory, reference: &str) -> Result<PathBuf, Response> {
    let home = factory.home();
    let named = if session_archive::valid_id(reference) {
        paths::sessions_dir(&home, &factory.cwd()).join(format!("{reference}.jsonl"))
    } else {
        PathBuf::from(reference)
    };
    if !named.is_absolute() {
        return Err(Response::error(
            400,
            "path: a session id or the absolute path of a session file",
        ));
    }
    let meta =
        std::fs::symlink_metadata(&named).map_err(|_| Response::error(404, "no such session"))?;
    let real = named
        .canonicalize()
        .map_err(|_| Response::error(404, "no such session"))?;
    let managed = meta.file_type().is_file() && session_archive::kept_in_home(&home, &real);
    if !managed {
        return Err(Response::error(
            403,
            "path: not a session file of this reasonix home",
        ));
    }
    Ok(real)
}
