//! Finding the authorization server of an MCP server and what it supports: Protected Resource
//! Metadata (RFC 9728: the `resource_metadata` of the challenge, then the path-based and root
//! well-known URLs), then Authorization Server Metadata (RFC 8414 with path insertion, then
//! OpenID Connect discovery), and the 2025-03-26 fallback (the MCP server's origin as the
//! authorization server, its default `/authorize`, `/token`, `/register` endpoints).
//!
//! Every document is checked before it is used: a metadata URL on another origin than the MCP
//! server, a `resource` that does not cover the server, an `issuer` that is not the server
//! asked, or an endpoint over plain http to another machine is refused, since each would
//! send a code, a secret or a token to someone else.

use serde_json::{Map, Value};

use super::challenge::Challenge;
use super::url;
use super::web::Web;
use super::OAuthError;

/// RFC 9728 Protected Resource Metadata, the parts we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
}

/// RFC 8414 Authorization Server Metadata, the parts we use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Vec<String>,
    /// `None` when the document does not say.
    pub code_challenge_methods: Option<Vec<String>>,
    /// `None` = RFC 8414's default (`client_secret_basic`).
    pub token_auth_methods: Option<Vec<String>>,
    pub client_id_metadata_documents: bool,
    /// RFC 9207: the redirect carries `iss`, which must then be checked.
    pub iss_parameter: bool,
    /// No document was found: the 2025-03-26 default endpoints.
    pub defaults: bool,
}

impl ServerMetadata {
    pub fn supports_s256(&self) -> bool {
        match &self.code_challenge_methods {
            Some(methods) => methods.iter().any(|m| m == "S256"),
            // The 2025-03-26 fallback has no document to ask; PKCE is mandatory there.
            None => self.defaults,
        }
    }

    pub fn auth_methods(&self) -> Vec<String> {
        self.token_auth_methods
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_string()])
    }
}

/// Everything discovery found.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The `resource` parameter of every authorization and token request (RFC 8707).
    pub resource: String,
    pub resource_metadata: Option<ResourceMetadata>,
    pub server: ServerMetadata,
}

/// Where Protected Resource Metadata is looked for, in order.
pub fn resource_metadata_urls(
    server_url: &str,
    challenge: &Challenge,
) -> Result<Vec<String>, OAuthError> {
    if let Some(link) = &challenge.resource_metadata {
        if !url::same_origin(link, server_url) {
            return Err(OAuthError::Refused(format!(
                "the server points at resource metadata on another origin ({link}); only \
                 {} may describe itself",
                url::parts(server_url).map(|p| p.origin).unwrap_or_default()
            )));
        }
        return Ok(vec![link.clone()]);
    }
    let mut urls = Vec::new();
    let parts = url::parts(server_url).ok_or_else(|| bad_url(server_url))?;
    if !parts.path.is_empty() {
        urls.extend(url::well_known(server_url, "oauth-protected-resource"));
    }
    urls.extend(url::well_known_root(server_url, "oauth-protected-resource"));
    Ok(urls)
}

/// Where Authorization Server Metadata is looked for, in order (2025-11-25 §2.3.1).
pub fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let has_path = url::parts(issuer).is_some_and(|p| !p.path.is_empty());
    let mut urls = Vec::new();
    if has_path {
        urls.extend(url::well_known(issuer, "oauth-authorization-server"));
        urls.extend(url::well_known(issuer, "openid-configuration"));
        urls.extend(url::well_known_appended(issuer, "openid-configuration"));
    } else {
        urls.extend(url::well_known_root(issuer, "oauth-authorization-server"));
        urls.extend(url::well_known_root(issuer, "openid-configuration"));
    }
    urls
}

fn bad_url(text: &str) -> OAuthError {
    OAuthError::Discovery(format!("`{text}` is not an http(s) URL"))
}

/// Runs discovery for the MCP server at `server_url` after it answered with `challenge`.
pub fn discover(
    web: &dyn Web,
    server_url: &str,
    challenge: &Challenge,
) -> Result<Discovered, OAuthError> {
    let resource_metadata = find_resource_metadata(web, server_url, challenge)?;
    let canonical = url::canonical(server_url).ok_or_else(|| bad_url(server_url))?;
    let Some(metadata) = resource_metadata else {
        // 2025-03-26: no protected resource metadata; the MCP server's origin is the
        // authorization server.
        let origin = url::parts(server_url)
            .ok_or_else(|| bad_url(server_url))?
            .origin;
        let server = match find_server_metadata(web, &origin, Issuer::SameOrigin)? {
            Some(server) => server,
            None => default_endpoints(&origin),
        };
        return Ok(Discovered {
            resource: canonical,
            resource_metadata: None,
            server,
        });
    };
    let issuer = metadata
        .authorization_servers
        .first()
        .cloned()
        .ok_or_else(|| {
            OAuthError::Discovery(
                "the protected resource metadata names no authorization server".into(),
            )
        })?;
    if !url::secure_enough(&issuer) {
        return Err(OAuthError::Refused(format!(
            "the authorization server {issuer} is not https"
        )));
    }
    let server = find_server_metadata(web, &issuer, Issuer::Exact)?.ok_or_else(|| {
        OAuthError::Discovery(format!(
            "the authorization server {issuer} publishes no metadata (tried {})",
            server_metadata_urls(&issuer).join(", ")
        ))
    })?;
    Ok(Discovered {
        resource: metadata.resource.clone(),
        resource_metadata: Some(metadata),
        server,
    })
}

fn find_resource_metadata(
    web: &dyn Web,
    server_url: &str,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, OAuthError> {
    for candidate in resource_metadata_urls(server_url, challenge)? {
        let reply = web.get(&candidate)?;
        let Some(document) = reply.json().filter(|_| reply.ok()) else {
            continue;
        };
        return parse_resource_metadata(&document, server_url).map(Some);
    }
    Ok(None)
}

pub fn parse_resource_metadata(
    document: &Map<String, Value>,
    server_url: &str,
) -> Result<ResourceMetadata, OAuthError> {
    let resource = match document.get("resource").and_then(Value::as_str) {
        Some(resource) => resource.to_string(),
        None => url::canonical(server_url).ok_or_else(|| bad_url(server_url))?,
    };
    if !url::resource_covers(&resource, server_url) {
        return Err(OAuthError::Refused(format!(
            "the protected resource metadata is for {resource}, not {server_url}; a token \
             for it would be meant for another server"
        )));
    }
    Ok(ResourceMetadata {
        resource,
        authorization_servers: strings(document, "authorization_servers").unwrap_or_default(),
        scopes_supported: strings(document, "scopes_supported").unwrap_or_default(),
    })
}

/// How the `issuer` of a metadata document is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Issuer {
    /// RFC 8414 §3.3: exactly the issuer the metadata URL was built from.
    Exact,
    /// 2025-03-26: the metadata URL came from the MCP server's origin, not from an issuer;
    /// any issuer on that origin is the server's own (a path such as `/oauth` is common).
    SameOrigin,
}

fn find_server_metadata(
    web: &dyn Web,
    issuer: &str,
    check: Issuer,
) -> Result<Option<ServerMetadata>, OAuthError> {
    for candidate in server_metadata_urls(issuer) {
        let reply = web.get(&candidate)?;
        let Some(document) = reply.json().filter(|_| reply.ok()) else {
            continue;
        };
        if check == Issuer::SameOrigin {
            let said = document.get("issuer").and_then(Value::as_str).unwrap_or("");
            if url::same_origin(said, issuer) {
                return parse_server_metadata(&document, said).map(Some);
            }
        }
        return parse_server_metadata(&document, issuer).map(Some);
    }
    Ok(None)
}

pub fn parse_server_metadata(
    document: &Map<String, Value>,
    issuer: &str,
) -> Result<ServerMetadata, OAuthError> {
    let text = |key: &str| {
        document
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let said = text("issuer").unwrap_or_default();
    if said.trim_end_matches('/') != issuer.trim_end_matches('/') {
        return Err(OAuthError::Refused(format!(
            "the metadata of {issuer} names another issuer ({said}); refusing a mixed-up \
             authorization server"
        )));
    }
    let endpoint = |key: &str| -> Result<Option<String>, OAuthError> {
        match text(key) {
            Some(found) if url::secure_enough(&found) => Ok(Some(found)),
            Some(found) => Err(OAuthError::Refused(format!(
                "the authorization server's {key} ({found}) is not https"
            ))),
            None => Ok(None),
        }
    };
    let required = |key: &str| {
        endpoint(key)?
            .ok_or_else(|| OAuthError::Discovery(format!("the metadata of {issuer} has no {key}")))
    };
    Ok(ServerMetadata {
        issuer: said,
        authorization_endpoint: required("authorization_endpoint")?,
        token_endpoint: required("token_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint")?,
        scopes_supported: strings(document, "scopes_supported").unwrap_or_default(),
        code_challenge_methods: strings(document, "code_challenge_methods_supported"),
        token_auth_methods: strings(document, "token_endpoint_auth_methods_supported"),
        client_id_metadata_documents: document
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        iss_parameter: document
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        defaults: false,
    })
}

/// The 2025-03-26 default endpoints at the MCP server's origin.
fn default_endpoints(origin: &str) -> ServerMetadata {
    ServerMetadata {
        issuer: origin.to_string(),
        authorization_endpoint: format!("{origin}/authorize"),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        defaults: true,
        ..ServerMetadata::default()
    }
}

fn strings(document: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    document.get(key).and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::oauth::web::Reply;
    use serde_json::json;
    use std::sync::Mutex;

    /// Answers GETs from a table (404 for the rest) and records every URL asked.
    struct Table {
        docs: Vec<(String, Value)>,
        asked: Mutex<Vec<String>>,
    }

    impl Table {
        fn new(docs: &[(&str, Value)]) -> Table {
            Table {
                docs: docs
                    .iter()
                    .map(|(u, d)| (u.to_string(), d.clone()))
                    .collect(),
                asked: Mutex::new(Vec::new()),
            }
        }
        fn asked(&self) -> Vec<String> {
            self.asked.lock().unwrap().clone()
        }
    }

    impl Web for Table {
        fn get(&self, url: &str) -> Result<Reply, OAuthError> {
            self.asked.lock().unwrap().push(url.to_string());
            Ok(match self.docs.iter().find(|(u, _)| u == url) {
                Some((_, doc)) => Reply {
                    status: 200,
                    body: doc.to_string(),
                    ..Reply::default()
                },
                None => Reply {
                    status: 404,
                    ..Reply::default()
                },
            })
        }
        fn post(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: &[(String, String)],
        ) -> Result<Reply, OAuthError> {
            unreachable!("discovery only reads")
        }
    }

    fn as_doc(issuer: &str) -> Value {
        json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
               "token_endpoint": format!("{issuer}/token"),
               "code_challenge_methods_supported": ["S256"]})
    }

    #[test]
    fn metadata_is_tried_path_first_then_root_then_openid() {
        let web = Table::new(&[
            (
                "https://mcp.example/.well-known/oauth-protected-resource",
                json!({"resource": "https://mcp.example", "authorization_servers": ["https://auth.example/tenant"],
                       "scopes_supported": ["read"]}),
            ),
            (
                "https://auth.example/tenant/.well-known/openid-configuration",
                as_doc("https://auth.example/tenant"),
            ),
        ]);
        let found = discover(&web, "https://mcp.example/api/mcp", &Challenge::default()).unwrap();
        assert_eq!(found.resource, "https://mcp.example");
        assert_eq!(
            found.server.token_endpoint,
            "https://auth.example/tenant/token"
        );
        assert_eq!(
            web.asked(),
            [
                "https://mcp.example/.well-known/oauth-protected-resource/api/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource",
                "https://auth.example/.well-known/oauth-authorization-server/tenant",
                "https://auth.example/.well-known/openid-configuration/tenant",
                "https://auth.example/tenant/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_challenges_metadata_link_comes_first_and_must_stay_on_the_servers_origin() {
        let link = "https://mcp.example/meta/prm";
        let web = Table::new(&[
            (
                link,
                json!({"resource": "https://mcp.example/mcp", "authorization_servers": ["https://mcp.example"]}),
            ),
            (
                "https://mcp.example/.well-known/oauth-authorization-server",
                as_doc("https://mcp.example"),
            ),
        ]);
        let challenge = Challenge {
            resource_metadata: Some(link.into()),
            ..Challenge::default()
        };
        let found = discover(&web, "https://mcp.example/mcp", &challenge).unwrap();
        assert_eq!(web.asked()[0], link);
        assert_eq!(found.resource, "https://mcp.example/mcp");
        let elsewhere = Challenge {
            resource_metadata: Some("https://evil.example/prm".into()),
            ..Challenge::default()
        };
        let web = Table::new(&[]);
        let err = discover(&web, "https://mcp.example/mcp", &elsewhere).unwrap_err();
        assert!(matches!(err, OAuthError::Refused(_)), "{err}");
        assert!(
            web.asked().is_empty(),
            "nothing fetched from the other origin"
        );
    }

    #[test]
    fn without_resource_metadata_the_2025_03_26_defaults_apply() {
        let web = Table::new(&[]);
        let found = discover(&web, "http://127.0.0.1:9/mcp", &Challenge::default()).unwrap();
        assert!(found.server.defaults && found.server.supports_s256());
        assert_eq!(
            found.server.authorization_endpoint,
            "http://127.0.0.1:9/authorize"
        );
        assert_eq!(
            found.server.registration_endpoint.as_deref(),
            Some("http://127.0.0.1:9/register")
        );
        assert_eq!(found.resource, "http://127.0.0.1:9/mcp");
        assert_eq!(
            web.asked(),
            [
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource",
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_2025_03_26_metadata_at_the_servers_origin_may_name_an_issuer_there() {
        // The 2025-03-26 client derives the metadata URL from the MCP server, not from an
        // issuer it was told: an issuer with a path on that same origin is the server's own.
        let web = Table::new(&[(
            "https://mcp.example/.well-known/oauth-authorization-server",
            as_doc("https://mcp.example/oauth"),
        )]);
        let found = discover(&web, "https://mcp.example/mcp", &Challenge::default()).unwrap();
        assert!(!found.server.defaults);
        assert_eq!(
            found.server.token_endpoint,
            "https://mcp.example/oauth/token"
        );
        // An issuer on another origin is still a mix-up.
        let web = Table::new(&[(
            "https://mcp.example/.well-known/oauth-authorization-server",
            as_doc("https://evil.example"),
        )]);
        let err = discover(&web, "https://mcp.example/mcp", &Challenge::default()).unwrap_err();
        assert!(err.to_string().contains("another issuer"), "{err}");
    }

    #[test]
    fn documents_for_another_resource_or_issuer_are_refused() {
        let doc = json!({"resource": "https://other.example/mcp", "authorization_servers": ["https://a.example"]});
        let err = parse_resource_metadata(doc.as_object().unwrap(), "https://mcp.example/mcp")
            .unwrap_err();
        assert!(err.to_string().contains("another server"), "{err}");
        let doc = as_doc("https://evil.example");
        let err =
            parse_server_metadata(doc.as_object().unwrap(), "https://auth.example").unwrap_err();
        assert!(err.to_string().contains("another issuer"), "{err}");
        let mut doc = as_doc("https://auth.example");
        doc["token_endpoint"] = json!("http://auth.example/token");
        let err =
            parse_server_metadata(doc.as_object().unwrap(), "https://auth.example").unwrap_err();
        assert!(err.to_string().contains("not https"), "{err}");
        let plain = ServerMetadata::default();
        assert!(!plain.supports_s256(), "no methods listed: no PKCE assumed");
        assert_eq!(plain.auth_methods(), ["client_secret_basic"]);
    }
}
