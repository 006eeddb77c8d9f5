//! The agent composition routes of AGENT_COMPOSITIONS.md that concern the catalog:
//! `/api/agent-presets` (list, show, save with an expected revision, delete, default, export,
//! import preview), over `composition::store`. Its checks are the ones the CLI gets: the
//! authority table decides what each scope may set, and a refusal keeps its stable
//! `agent_composition.*` code, which the response carries beside an HTTP status. Binding a
//! session is `sessions::Hub::rebind`; its route is in `routes`.

use serde_json::{json, Value};

use super::http::{percent_decode, Request, Response};
use super::Factory;
use crate::composition::store::{self, Catalog};
use crate::composition::{Code, CompositionError, Id, Scope};

/// The HTTP status of a refusal; the body carries the stable code.
pub fn refusal(err: &CompositionError) -> Response {
    let status = match err.code {
        Code::Invalid => 400,
        Code::NotFound => 404,
        Code::ReadOnly => 403,
        Code::Conflict | Code::Locked | Code::Unavailable => 409,
    };
    Response::json(
        status,
        &json!({"error": err.to_string(), "code": err.code.as_str()}),
    )
}

/// The refusal of a preset or binding change without the provider-edit grant, given before
/// the store is touched or anything is selected.
pub fn editing_disabled() -> Response {
    Response::json(
        403,
        &json!({
            "error": "config.editing_disabled: this server does not let the page change agent \
                      presets or bindings; restart it with `reasonix serve --allow-config-edits`",
            "code": "config.editing_disabled",
        }),
    )
}

/// `/api/agent-presets…`; `rest` is the path after `agent-presets`.
pub fn route(
    factory: &dyn Factory,
    request: &Request,
    method: &str,
    rest: &[&str],
    body: &Value,
) -> Response {
    // Reads (catalog, detail, export) stay open; every change needs the grant.
    if !matches!(method, "GET" | "HEAD") && !factory.config_editing() {
        return editing_disabled();
    }
    let (catalog, available) = factory.compositions();
    let result = match (method, rest) {
        ("GET", []) => Ok(list(&catalog, &available)),
        ("POST", []) => save(&catalog, body),
        ("POST", ["default"]) => id_in(body).and_then(|id| {
            // `{id, workspace}`: the id is looked up in that workspace's catalog (a
            // `project:` one lives there and becomes that workspace's default only).
            let elsewhere = match body.get("workspace") {
                None | Some(Value::Null) => None,
                Some(value) => Some(Catalog::new(&factory.home(), &workspace_in(value)?)),
            };
            elsewhere.as_ref().unwrap_or(&catalog).set_default(&id)?;
            Ok(Response::json(200, &json!({"id": id.to_string()})))
        }),
        ("POST", ["import"]) => preview(body, &available),
        ("GET", [id]) => parse_id(id).and_then(|id| {
            let definition = catalog.get(&id)?;
            Ok(Response::json(
                200,
                &json!({"id": id.to_string(), "revision": definition.revision, "definition": definition}),
            ))
        }),
        ("GET", [id, "export"]) => parse_id(id).and_then(|id| {
            let text = store::export(&catalog.get(&id)?);
            Ok(Response::new(200, "application/json", text)
                .with("Content-Disposition", &format!("attachment; filename=\"{}.json\"", id.name)))
        }),
        ("DELETE", [id]) => parse_id(id).and_then(|id| {
            let revision = match request.query_param("revision") {
                None => None,
                Some(text) => Some(text.parse::<u64>().map_err(|_| {
                    CompositionError::new(
                        Code::Invalid,
                        format!("revision={text}: expected a whole number"),
                    )
                })?),
            };
            catalog.delete(&id, revision)?;
            Ok(Response::json(200, &json!({"deleted": id.to_string()})))
        }),
        _ => return Response::error(404, "no such route"),
    };
    result.unwrap_or_else(|err| refusal(&err))
}

fn parse_id(segment: &str) -> Result<Id, CompositionError> {
    Id::parse(&percent_decode(segment))
}

/// The `workspace` of a request: the absolute path of an existing directory, canonical.
fn workspace_in(value: &Value) -> Result<std::path::PathBuf, CompositionError> {
    let dir = value.as_str().map(std::path::Path::new);
    match dir.map(|d| (d, d.canonicalize())) {
        Some((dir, Ok(real))) if dir.is_absolute() && real.is_dir() => Ok(real),
        _ => Err(CompositionError::new(
            Code::Invalid,
            format!("workspace {value}: the absolute path of an existing directory"),
        )),
    }
}

fn id_in(body: &Value) -> Result<Id, CompositionError> {
    let text = body
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| CompositionError::new(Code::Invalid, "send {\"id\": \"user:NAME\", …}"))?;
    Id::parse(text)
}

/// The catalog grouped by source, the saved default, what this machine offers to select,
/// and one diagnostic per definition file that could not be read.
fn list(catalog: &Catalog, available: &crate::composition::resolve::Available) -> Response {
    let (entries, problems) = catalog.list();
    let presets: Vec<Value> = entries
        .iter()
        .map(|entry| {
            json!({
                "id": entry.id.to_string(),
                "scope": entry.id.scope.prefix(),
                "name": entry.definition.name,
                "description": entry.definition.description,
                "revision": entry.definition.revision,
                "readOnly": entry.id.scope == Scope::Builtin,
                "modules": entry.definition.modules,
            })
        })
        .collect();
    let servers: Vec<Value> = available
        .mcp_servers
        .iter()
        .map(|(name, authorised)| json!({"name": name, "authorised": authorised}))
        .collect();
    Response::json(
        200,
        &json!({
            "presets": presets,
            "default": catalog.default_id(),
            "modules": {
                "tools": available.tools,
                "skills": available.skills,
                "mcpServers": servers,
                "hooks": available.hooks,
                "commands": available.commands,
            },
            "diagnostics": problems,
        }),
    )
}

/// `{id, definition, expectedRevision}`: `expectedRevision` null or absent creates (201),
/// a number saves over that revision (200); a stale one is `agent_composition.conflict`.
fn save(catalog: &Catalog, body: &Value) -> Result<Response, CompositionError> {
    let id = id_in(body)?;
    let definition = body.get("definition").ok_or_else(|| {
        CompositionError::new(Code::Invalid, "send {\"definition\": {…}} to save")
    })?;
    let definition = crate::composition::parse(&definition.to_string())?;
    let expected = match body.get("expectedRevision") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_u64().ok_or_else(|| {
            CompositionError::new(
                Code::Invalid,
                "expectedRevision is a whole number, or null for a new definition",
            )
        })?),
    };
    let saved = catalog.save(&id, definition, expected)?;
    let status = if expected.is_none() { 201 } else { 200 };
    Ok(Response::json(
        status,
        &json!({"id": id.to_string(), "revision": saved.revision, "definition": saved}),
    ))
}

/// `{content, id?}`: the definition and its diagnostics, checked for the scope of `id`
/// (personal when absent). Nothing is written and nothing starts.
fn preview(
    body: &Value,
    available: &crate::composition::resolve::Available,
) -> Result<Response, CompositionError> {
    let content = body.get("content").and_then(Value::as_str).ok_or_else(|| {
        CompositionError::new(Code::Invalid, "send {\"content\": \"…definition JSON…\"}")
    })?;
    let scope = match body.get("id") {
        Some(_) => id_in(body)?.scope,
        None => Scope::User,
    };
    let (definition, diagnostics) = store::preview(content, scope, available)?;
    Ok(Response::json(
        200,
        &json!({"definition": definition, "diagnostics": diagnostics}),
    ))
}
