//! The OpenAI-compatible `/chat/completions` provider: the [`OpenAiProvider`] that the
//! factory table builds, its endpoints and its request headers.
//!
//! The work is split by job: `body` writes the request bytes, `stream` decodes the streamed
//! reply into [`Chunk`](super::Chunk)s (sans-IO, shared with replays), `exchange` runs one
//! request and decodes the reply as the caller pulls chunks, `models` lists and
//! probes the models endpoint. `net` owns the sockets and the retries before a reply
//! starts, `record` the recording format.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::net::{self, Method, Net};
use super::record::Recorder;
use super::{ChunkStream, Provider, ProviderError, ProviderSettings, Request, Retry};
use crate::cancel::CancelToken;
use body::{estimate_tokens, streams};
use exchange::{Job, Recording};

mod body;
mod exchange;
mod models;
mod stream;

pub(crate) use body::message_json;
pub use body::{request_body, stable_hash, write_request_body, BodyWriter};
pub use models::{list_models, probe, ProbeReport};
pub use stream::{normalise_usage, StreamParser};

/// A provider of kind `openai`.
pub struct OpenAiProvider {
    settings: ProviderSettings,
    net: Net,
    chat_url: String,
    headers: Vec<(String, String)>,
    recorder: Option<Arc<Recorder>>,
    bodies: BodyWriter,
}

/// The `openai` row of the factory table.
pub fn factory(settings: ProviderSettings) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(Box::new(OpenAiProvider::new(settings)?))
}

impl OpenAiProvider {
    pub fn new(settings: ProviderSettings) -> Result<OpenAiProvider, ProviderError> {
        let chat_url = chat_url(&settings)?;
        let headers = request_headers(&settings, Method::Post)?;
        let net = Net::new(&settings, &chat_url)?;
        let recorder = settings
            .record_file
            .as_deref()
            .map(|path| Arc::new(Recorder::new(path)));
        Ok(OpenAiProvider {
            settings,
            net,
            chat_url,
            headers,
            recorder,
            bodies: BodyWriter::default(),
        })
    }
}

impl Provider for OpenAiProvider {
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
        on_retry: &mut dyn FnMut(&Retry),
    ) -> Result<ChunkStream, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let body = self.bodies.write(&self.settings, request);
        debug_assert!(
            body.to_vec()
                == serde_json::to_vec(&request_body(&self.settings, request)).unwrap_or_default(),
            "the assembled body differs from the one built from scratch"
        );
        debug_assert_eq!(body.hash, stable_hash(&body.to_vec()));
        let id_seed = body.hash;
        // Recordings keep the request as JSON; only they pay for building it.
        let recording = Recording(self.recorder.as_ref().map(|recorder| {
            (
                Arc::clone(recorder),
                Arc::new(request_body(&self.settings, request)),
            )
        }));
        let job = Job {
            net: self.net.clone(),
            url: self.chat_url.clone(),
            headers: self.headers.clone(),
            id_seed,
            prompt_estimate: estimate_tokens(body.len()),
            body,
            timeouts: self.settings.timeouts,
            policy: self.settings.retry,
            api_key_env: self.settings.api_key_env.clone(),
            provider: self.settings.name.clone(),
            recording,
        };
        exchange::start(job, cancel, on_retry)
    }
}

/// `chat_url`, else `base_url` + `/chat/completions`.
pub fn chat_url(settings: &ProviderSettings) -> Result<String, ProviderError> {
    endpoint(settings, settings.chat_url.as_deref(), "chat/completions")
}

/// `models_url`, else `base_url` + `/models`.
pub fn models_url(settings: &ProviderSettings) -> Result<String, ProviderError> {
    endpoint(settings, settings.models_url.as_deref(), "models")
}

fn endpoint(
    settings: &ProviderSettings,
    explicit: Option<&str>,
    suffix: &str,
) -> Result<String, ProviderError> {
    let url = match explicit.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => url.to_string(),
        None if settings.base_url.trim().is_empty() => {
            return Err(ProviderError::Config(
                format!("provider `{}` has no base_url", settings.name).into(),
            ))
        }
        None => format!(
            "{}/{suffix}",
            settings.base_url.trim().trim_end_matches('/')
        ),
    };
    net::parse_url(&url)?;
    Ok(url)
}

/// Final request headers; `settings.headers` override ours (case-insensitively).
fn request_headers(
    settings: &ProviderSettings,
    method: Method,
) -> Result<Vec<(String, String)>, ProviderError> {
    let mut headers: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut set = |name: &str, value: String| {
        headers.insert(name.to_ascii_lowercase(), (name.to_string(), value));
    };
    if let Some(key) = settings.api_key.as_deref().filter(|k| !k.trim().is_empty()) {
        set("Authorization", format!("Bearer {}", key.trim()));
    }
    match method {
        Method::Post => {
            set("Content-Type", "application/json".into());
            let accept = match streams(settings) {
                true => "text/event-stream",
                false => "application/json",
            };
            set("Accept", accept.into());
        }
        Method::Get => set("Accept", "application/json".into()),
    }
    set("User-Agent", crate::user_agent());
    // Nothing here decodes a compressed body; a server or proxy that compresses anyway gets
    // a clear error naming its encoding (`net`).
    set("Accept-Encoding", "identity".into());
    for (name, value) in &settings.headers {
        set(name, value.clone());
    }
    let headers: Vec<(String, String)> = headers.into_values().collect();
    for (name, value) in &headers {
        let valid_name = ureq::http::HeaderName::from_bytes(name.as_bytes()).is_ok();
        let valid_value = ureq::http::HeaderValue::from_str(value).is_ok();
        if !valid_name || !valid_value {
            let what = if name.eq_ignore_ascii_case("authorization") {
                format!("the API key from ${}", settings.api_key_env)
            } else {
                format!("header `{name}`")
            };
            return Err(ProviderError::Config(
                format!(
                    "{what} of provider `{}` is not a valid HTTP header",
                    settings.name
                )
                .into(),
            ));
        }
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_join_base_url_with_or_without_trailing_slash() {
        let mut settings = ProviderSettings {
            name: "p".into(),
            base_url: "https://api.example.com/v1/".into(),
            ..ProviderSettings::default()
        };
        assert_eq!(
            chat_url(&settings).unwrap(),
            "https://api.example.com/v1/chat/completions"
        );
        assert_eq!(
            models_url(&settings).unwrap(),
            "https://api.example.com/v1/models"
        );
        settings.chat_url = Some("http://gw.local/x/chat".into());
        assert_eq!(chat_url(&settings).unwrap(), "http://gw.local/x/chat");
        settings.base_url = String::new();
        let err = models_url(&settings).unwrap_err();
        assert!(err.to_string().contains("no base_url"), "{err}");
    }
}
