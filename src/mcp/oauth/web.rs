//! The HTTP exchanges of OAuth (metadata documents, registration, token requests, the probe of
//! the MCP endpoint) behind the [`Web`] trait, so discovery and the grants are tested against
//! scripted replies; [`Ureq`] is the real one, with the provider's trust roots and proxy
//! rules. Redirects are never followed: a token request that a server bounces elsewhere fails.

use std::io::Read;
use std::time::Duration;

use super::OAuthError;
use crate::provider::net::{self, Limits, Net};

/// A body larger than this is refused: metadata and token replies are small.
const MAX_BODY: u64 = 1024 * 1024;

/// Every OAuth exchange completes within this.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One reply, whatever its status.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub status: u16,
    /// Header names in lowercase.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as a JSON object, if it is one.
    pub fn json(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match serde_json::from_str(&self.body) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        }
    }
}

/// What the OAuth code needs of HTTP.
pub trait Web: Send + Sync {
    fn get(&self, url: &str) -> Result<Reply, OAuthError>;
    /// POSTs `body` of `content_type` with extra `headers`.
    fn post(
        &self,
        url: &str,
        content_type: &str,
        body: &str,
        headers: &[(String, String)],
    ) -> Result<Reply, OAuthError>;
}

/// The real transport.
pub struct Ureq;

impl Ureq {
    fn agent(url: &str) -> Result<ureq::Agent, OAuthError> {
        let describe = |e: crate::provider::ProviderError| OAuthError::Network(e.to_string());
        let net = Net::for_url(url, None, CONNECT_TIMEOUT).map_err(describe)?;
        let limits = Limits {
            per_read: None,
            total: Some(EXCHANGE_TIMEOUT),
        };
        net.agent(url, limits).map_err(describe)
    }

    fn finish(
        url: &str,
        result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Reply, OAuthError> {
        let response =
            result.map_err(|e| OAuthError::Network(net::describe_transport_error(&e, url)))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = String::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_BODY)
            .read_to_string(&mut body)
            .map_err(|e| OAuthError::Network(format!("reading the reply of {url}: {e}")))?;
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

impl Web for Ureq {
    fn get(&self, url: &str) -> Result<Reply, OAuthError> {
        let agent = Ureq::agent(url)?;
        let result = agent
            .get(url)
            .header("Accept", "application/json")
            .header("User-Agent", crate::user_agent())
            .header("MCP-Protocol-Version", crate::mcp::client::PROTOCOL_VERSION)
            .call();
        Ureq::finish(url, result)
    }

    fn post(
        &self,
        url: &str,
        content_type: &str,
        body: &str,
        headers: &[(String, String)],
    ) -> Result<Reply, OAuthError> {
        let agent = Ureq::agent(url)?;
        let mut request = agent
            .post(url)
            .header("Content-Type", content_type)
            .header("User-Agent", crate::user_agent());
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("accept"))
        {
            request = request.header("Accept", "application/json");
        }
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        Ureq::finish(url, request.send(body.as_bytes()))
    }
}
