//! The models endpoint: the list for `reasonix models` and the one-shot probe for
//! `reasonix doctor`.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::net::{self, Exchange, Limits, Method, Net};
use super::super::{Detail, ProviderError, ProviderSettings, Retry, RetryPolicy};
use super::{models_url, request_headers};
use crate::cancel::CancelToken;

/// A models list larger than this is not a models list.
const MODELS_BODY_LIMIT: u64 = 16 * 1024 * 1024;

/// The model ids the provider's models endpoint lists (OpenAI `{data:[{id}]}`; also
/// `{models:[{id|name}]}` and a bare array), sorted and deduplicated.
pub fn list_models(
    settings: &ProviderSettings,
    cancel: &CancelToken,
    on_retry: &mut dyn FnMut(&Retry),
) -> Result<Vec<String>, ProviderError> {
    let endpoint = Endpoint::new(settings)?;
    let url = &endpoint.url;
    let exchange = endpoint.get(
        settings,
        Limits {
            per_read: Some(settings.timeouts.idle_stream),
            total: None,
        },
    );
    let open = endpoint
        .net
        .send(&exchange, &settings.retry, cancel, &mut |retry, _| {
            on_retry(&retry)
        })
        .map_err(|failure| failure.error)?;
    let mut raw = Vec::new();
    open.reader
        .take(MODELS_BODY_LIMIT)
        .read_to_end(&mut raw)
        .map_err(|e| {
            if cancel.is_cancelled() {
                ProviderError::Cancelled
            } else {
                let text = format!("reading the models list from {url}: {e}");
                ProviderError::Stream(Detail::caused(text, e))
            }
        })?;
    parse_models(&raw).ok_or_else(|| {
        ProviderError::BadResponse(format!(
            "{url} did not return a models list: {}",
            crate::text::one_line(&String::from_utf8_lossy(&raw), 120)
        ))
    })
}

/// The models endpoint of one provider: its URL, request headers and client.
struct Endpoint {
    url: String,
    headers: Vec<(String, String)>,
    net: Net,
}

impl Endpoint {
    fn new(settings: &ProviderSettings) -> Result<Endpoint, ProviderError> {
        let url = models_url(settings)?;
        let headers = request_headers(settings, Method::Get)?;
        let net = Net::new(settings, &url)?;
        Ok(Endpoint { url, headers, net })
    }

    /// The GET of the models list, within `limits`.
    fn get<'a>(&'a self, settings: &'a ProviderSettings, limits: Limits) -> Exchange<'a> {
        Exchange {
            method: Method::Get,
            url: &self.url,
            headers: &self.headers,
            body: &[],
            limits,
            api_key_env: &settings.api_key_env,
            provider: &settings.name,
        }
    }
}

fn parse_models(raw: &[u8]) -> Option<Vec<String>> {
    let value: Value = serde_json::from_slice(raw).ok()?;
    let entries = value
        .get("data")
        .or_else(|| value.get("models"))
        .unwrap_or(&value)
        .as_array()?;
    let mut ids: Vec<String> = entries
        .iter()
        .filter_map(|entry| match entry {
            Value::String(id) => Some(id.clone()),
            other => other
                .get("id")
                .or_else(|| other.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
        })
        .collect();
    ids.sort();
    ids.dedup();
    Some(ids)
}

/// The outcome of one request to the models endpoint, for `reasonix doctor`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    pub url: String,
    pub status: u16,
    pub latency: Duration,
    /// The server's error message when the status is not 2xx.
    pub message: String,
    /// How many models the endpoint listed, when it answered with a models list.
    pub models: Option<usize>,
    /// Where the trusted CA certificates came from.
    pub tls_roots: String,
}

/// One GET of the models endpoint with `timeout` for the whole exchange and no retries.
/// Any HTTP answer is a report; only a failure to get one is an error.
pub fn probe(settings: &ProviderSettings, timeout: Duration) -> Result<ProbeReport, ProviderError> {
    let endpoint = Endpoint::new(settings)?;
    let exchange = endpoint.get(
        settings,
        Limits {
            per_read: Some(timeout),
            total: Some(timeout),
        },
    );
    let no_retries = RetryPolicy {
        max_retries: 0,
        ..settings.retry
    };
    let started = Instant::now();
    let (status, raw) =
        match endpoint
            .net
            .send(&exchange, &no_retries, &CancelToken::new(), &mut |_, _| {})
        {
            Ok(open) => {
                let mut raw = Vec::new();
                // A short read still proves the endpoint answered.
                let _ = open.reader.take(MODELS_BODY_LIMIT).read_to_end(&mut raw);
                (open.status, raw)
            }
            Err(failure) if failure.status != 0 => (failure.status, failure.body.into_bytes()),
            Err(failure) => return Err(failure.error),
        };
    let latency = started.elapsed();
    let success = (200..300).contains(&status);
    Ok(ProbeReport {
        url: endpoint.url.clone(),
        status,
        latency,
        message: if success {
            String::new()
        } else {
            net::error_message(&String::from_utf8_lossy(&raw))
        },
        models: success
            .then(|| parse_models(&raw).map(|m| m.len()))
            .flatten(),
        tls_roots: endpoint.net.roots_description().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_lists_are_parsed_from_common_shapes() {
        assert_eq!(
            parse_models(br#"{"object":"list","data":[{"id":"b"},{"id":"a"},{"id":"a"}]}"#),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(
            parse_models(br#"{"models":[{"name":"llama3:8b"}]}"#),
            Some(vec!["llama3:8b".to_string()])
        );
        assert_eq!(parse_models(b"<html>"), None);
    }
}
