//! The read-only view of a stored conversation whose composition binding cannot run here
//! (`agent_composition.unavailable`): the browser still shows its transcript, as the chat's
//! history-only view does, but no agent is built, so nothing can be sent from it.

use serde_json::{json, Value};

use super::Factory;
use crate::agent::session;
use crate::composition::CompositionError;

/// What `POST /api/sessions {"resume": …}` answers for a stored session `reference` (id or
/// path) whose binding was refused with `refusal`: the session's shape as a live one is
/// described, with `read_only: true` and the one line saying why and what to do. `None` when
/// the reference is no stored session of this workspace or its file cannot be read; the
/// refusal stands then.
pub fn describe(
    factory: &dyn Factory,
    reference: &str,
    refusal: &CompositionError,
) -> Option<Value> {
    let stored = factory
        .stored()
        .into_iter()
        .find(|s| s.id == reference || s.path.to_string_lossy() == reference)?;
    let (header, messages) = session::load(&stored.path).ok()?;
    let history: Vec<Value> = messages
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect();
    let composition = match &header.composition {
        Some(binding) => json!({
            "id": binding.id, "revision": binding.revision, "bound": true, "locked": true,
        }),
        None => Value::Null,
    };
    Some(json!({
        "id": header.id,
        "read_only": true,
        "read_only_reason": format!(
            "{}: {}; start a new conversation to continue",
            refusal.code.as_str(),
            refusal.message
        ),
        "code": refusal.code.as_str(),
        "running": false,
        "pending": [],
        "history": history,
        "model": format!("{}/{}", header.provider, header.model),
        "title": stored.preview,
        "workspace": factory.cwd(),
        "agentComposition": composition,
    }))
}
