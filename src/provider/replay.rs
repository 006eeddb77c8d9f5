//! The `replay` provider kind: serves the replies of a `--record` file in order, with no
//! network, through the same stream decoder as live replies. Each request is checked against
//! the recorded one on what must match for the replies to make sense (message count, roles,
//! which tool call each tool result answers), not on text that legitimately differs between
//! machines (system prompt, tool output).

use std::sync::Mutex;

use serde_json::Value;

use super::net;
use super::openai::{request_body, stable_hash, StreamParser};
use super::record::{self, RecordedExchange};
use super::{Chunk, ChunkStream, Provider, ProviderError, ProviderSettings, Request, Retry};
use crate::cancel::CancelToken;

pub struct ReplayProvider {
    settings: ProviderSettings,
    exchanges: Vec<RecordedExchange>,
    next: Mutex<usize>,
}

/// The `replay` row of the factory table.
pub fn factory(settings: ProviderSettings) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(Box::new(ReplayProvider::new(settings)?))
}

impl ReplayProvider {
    pub fn new(settings: ProviderSettings) -> Result<ReplayProvider, ProviderError> {
        let path = settings.replay_file.clone().ok_or_else(|| {
            ProviderError::Config(
                format!(
                    "provider `{}` is of kind replay but names no recording (--replay FILE)",
                    settings.name
                )
                .into(),
            )
        })?;
        let mut exchanges = record::read(&path)?;
        exchanges.retain(|exchange| !exchange.retried);
        Ok(ReplayProvider {
            settings,
            exchanges,
            next: Mutex::new(0),
        })
    }

    /// How many recorded exchanges have been served.
    pub fn served(&self) -> usize {
        *self.next.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn vision(&self) -> bool {
        self.settings.vision
    }

    fn stream(
        &self,
        request: &Request,
        cancel: &CancelToken,
        _on_retry: &mut dyn FnMut(&Retry),
    ) -> Result<ChunkStream, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let number = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            *next += 1;
            *next
        };
        let Some(recorded) = self.exchanges.get(number - 1) else {
            return Err(ProviderError::ReplayDiverged(format!(
                "request {number}: the recording holds only {} exchanges",
                self.exchanges.len()
            )));
        };
        let live = request_body(&self.settings, request);
        compare(number, &live, &recorded.request)?;
        let items = replay_exchange(recorded, &self.settings.api_key_env, live_size(&live))?;
        Ok(Box::new(ReplayStream {
            items: items.into_iter(),
            cancel: cancel.clone(),
            finished: false,
        }))
    }
}

fn live_size(body: &Value) -> usize {
    serde_json::to_vec(body).map(|b| b.len()).unwrap_or(0)
}

/// The recorded outcome: an error before the body, or the chunks the body decodes to.
fn replay_exchange(
    recorded: &RecordedExchange,
    api_key_env: &str,
    live_bytes: usize,
) -> Result<Vec<Result<Chunk, ProviderError>>, ProviderError> {
    match recorded.status {
        0 => Err(match recorded.error.as_deref() {
            Some(record::CANCELLED) => ProviderError::Cancelled,
            Some(detail) => ProviderError::Connect(detail.into()),
            None => ProviderError::Connect("the recorded exchange got no response".into()),
        }),
        200..=299 => {
            // Synthetic tool-call ids derive from the recorded request, so they match the
            // ids the recorded session used even where the live prompt text differs.
            let seed = stable_hash(&serde_json::to_vec(&recorded.request).unwrap_or_default());
            let mut parser = StreamParser::new(seed, (live_bytes as u64).div_ceil(4));
            let mut out = Vec::new();
            let cancelled = recorded.error.as_deref() == Some(record::CANCELLED);
            let mut result = parser.feed(recorded.response.as_bytes(), &mut out);
            if !cancelled {
                result = result.and_then(|_| parser.finish(&mut out));
            }
            let mut items: Vec<Result<Chunk, ProviderError>> = out.into_iter().map(Ok).collect();
            match result {
                Err(err) => items.push(Err(err)),
                // The recorded run was interrupted mid-reply: so is the replay.
                Ok(()) if cancelled => items.push(Err(ProviderError::Cancelled)),
                Ok(()) => {}
            }
            Ok(items)
        }
        status => Err(net::status_error(
            status,
            &recorded.response,
            api_key_env,
            None,
        )),
    }
}

/// Why `live` cannot be answered by the reply recorded for `recorded`, if it cannot.
fn compare(number: usize, live: &Value, recorded: &Value) -> Result<(), ProviderError> {
    let diverged =
        |reason: String| ProviderError::ReplayDiverged(format!("request {number}: {reason}"));
    let empty = Vec::new();
    let live = live["messages"].as_array().unwrap_or(&empty);
    let recorded = recorded["messages"].as_array().unwrap_or(&empty);
    if live.len() != recorded.len() {
        return Err(diverged(format!(
            "it has {} messages, the recording has {}",
            live.len(),
            recorded.len()
        )));
    }
    for (i, (l, r)) in live.iter().zip(recorded).enumerate() {
        let (live_role, recorded_role) = (l["role"].as_str(), r["role"].as_str());
        if live_role != recorded_role {
            return Err(diverged(format!(
                "message {} is from {}, the recording has {}",
                i + 1,
                live_role.unwrap_or("?"),
                recorded_role.unwrap_or("?")
            )));
        }
        if live_role == Some("tool") && l["tool_call_id"] != r["tool_call_id"] {
            return Err(diverged(format!(
                "message {} answers tool call {}, the recording answers {}",
                i + 1,
                l["tool_call_id"],
                r["tool_call_id"]
            )));
        }
    }
    Ok(())
}

struct ReplayStream {
    items: std::vec::IntoIter<Result<Chunk, ProviderError>>,
    cancel: CancelToken,
    finished: bool,
}

impl Iterator for ReplayStream {
    type Item = Result<Chunk, ProviderError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        if self.cancel.is_cancelled() {
            self.finished = true;
            return Some(Err(ProviderError::Cancelled));
        }
        let item = self.items.next();
        if !matches!(item, Some(Ok(_))) {
            self.finished = true;
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comparison_ignores_text_but_not_shape_roles_or_call_ids() {
        let recorded = json!({"messages": [
            {"role": "system", "content": "machine A"},
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "output A"}
        ]});
        let mut live = recorded.clone();
        live["messages"][0]["content"] = json!("machine B");
        live["messages"][3]["content"] = json!("output B");
        assert!(compare(1, &live, &recorded).is_ok());

        let mut other_id = live.clone();
        other_id["messages"][3]["tool_call_id"] = json!("c2");
        let err = compare(4, &other_id, &recorded).unwrap_err().to_string();
        assert!(err.contains("message 4 answers tool call \"c2\""), "{err}");

        let mut other_role = live.clone();
        other_role["messages"][3]["role"] = json!("user");
        let err = compare(4, &other_role, &recorded).unwrap_err().to_string();
        assert_eq!(
            err,
            "replay: request diverged: request 4: message 4 is from user, the recording has tool"
        );

        let mut longer = live.clone();
        longer["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user"}));
        let err = compare(4, &longer, &recorded).unwrap_err().to_string();
        assert_eq!(
            err,
            "replay: request diverged: request 4: it has 5 messages, the recording has 4"
        );
    }

    #[test]
    fn recorded_failures_replay_as_the_same_errors() {
        let exchange = |status, response: &str, error: Option<&str>| RecordedExchange {
            request: json!({}),
            status,
            response: response.into(),
            error: error.map(str::to_string),
            retried: false,
        };
        let err = replay_exchange(
            &exchange(401, r#"{"error":{"message":"bad key"}}"#, None),
            "K",
            0,
        )
        .unwrap_err();
        assert!(
            matches!(err, ProviderError::Auth { status: 401, .. }),
            "{err}"
        );
        let err = replay_exchange(&exchange(0, "", Some("cancelled")), "K", 0).unwrap_err();
        assert!(matches!(err, ProviderError::Cancelled), "{err}");
        let err = replay_exchange(&exchange(0, "", Some("refused")), "K", 0).unwrap_err();
        assert!(
            matches!(err, ProviderError::Connect(ref d) if d.text == "refused"),
            "{err}"
        );
        let partial = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n";
        let items = replay_exchange(&exchange(200, partial, None), "K", 0).unwrap();
        assert!(
            matches!(items.last(), Some(Err(ProviderError::Stream(_)))),
            "{items:?}"
        );
        let items = replay_exchange(&exchange(200, partial, Some("cancelled")), "K", 0).unwrap();
        assert!(
            matches!(
                items.as_slice(),
                [Ok(Chunk::Text(_)), Err(ProviderError::Cancelled)]
            ),
            "{items:?}"
        );
    }
}
