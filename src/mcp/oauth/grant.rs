//! The requests that get tokens: Dynamic Client Registration (RFC 7591), the authorization
//! URL with PKCE and the `resource` parameter (RFC 8707), and the token endpoint's
//! `authorization_code`, `refresh_token` and `client_credentials` grants with the client
//! authentication the server's metadata allows (`client_secret_basic`, `client_secret_post`,
//! `none`). Also which scope to ask for.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::challenge::Challenge;
use super::discovery::{Discovered, ServerMetadata};
use super::pkce::base64;
use super::url;
use super::web::{Reply, Web};
use super::OAuthError;

/// How the client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    ClientSecretBasic,
    ClientSecretPost,
    None,
}

/// A client identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientId {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub auth_method: AuthMethod,
}

impl ClientId {
    /// A pre-registered client: with a secret, the method the server lists first among the
    /// two secret methods (RFC 8414's default is `client_secret_basic`).
    pub fn configured(id: &str, secret: Option<&str>, server: &ServerMetadata) -> ClientId {
        let methods = server.auth_methods();
        let auth_method = match secret {
            None => AuthMethod::None,
            Some(_) if methods.iter().any(|m| m == "client_secret_basic") => {
                AuthMethod::ClientSecretBasic
            }
            Some(_) if methods.iter().any(|m| m == "client_secret_post") => {
                AuthMethod::ClientSecretPost
            }
            Some(_) => AuthMethod::ClientSecretBasic,
        };
        ClientId {
            client_id: id.to_string(),
            client_secret: secret.map(str::to_string),
            auth_method,
        }
    }
}

/// Tokens as stored; `expires_at` in seconds since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Tokens {
    /// Expired, or expiring within `margin` seconds.
    pub fn expired(&self, now: u64, margin: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now + margin)
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The scope to request: the configured one, else the challenge's, else the resource's
/// `scopes_supported`, else none at all (the server's default). `offline_access` is added
/// when the authorization server lists it, so a refresh token can come back.
pub fn choose_scope(
    configured: Option<&[String]>,
    challenge: &Challenge,
    found: &Discovered,
    interactive: bool,
) -> Option<String> {
    let mut scopes: Vec<String> = match (configured, &challenge.scope, &found.resource_metadata) {
        (Some(list), _, _) if !list.is_empty() => list.to_vec(),
        (_, Some(scope), _) => scope.split_whitespace().map(str::to_string).collect(),
        (_, None, Some(prm)) if !prm.scopes_supported.is_empty() => prm.scopes_supported.clone(),
        _ => Vec::new(),
    };
    let offline = "offline_access";
    if interactive
        && !scopes.is_empty()
        && found.server.scopes_supported.iter().any(|s| s == offline)
        && !scopes.iter().any(|s| s == offline)
    {
        scopes.push(offline.to_string());
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The union of two scope strings, in order, without repeats.
pub fn union_scope(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// Registers reasonix as a public client with `redirect_uri` (RFC 7591).
pub fn register(
    web: &dyn Web,
    server: &ServerMetadata,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<ClientId, OAuthError> {
    let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
        OAuthError::Unsupported(
            "the authorization server offers no dynamic client registration; set \
             `client_id` in the server's [plugins.oauth] table"
                .into(),
        )
    })?;
    let mut request = json!({
        "client_name": "reasonix",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(scope) = scope {
        request["scope"] = json!(scope);
    }
    let reply = web.post(endpoint, "application/json", &request.to_string(), &[])?;
    if !reply.ok() {
        return Err(server_error("client registration", &reply));
    }
    let document = reply
        .json()
        .ok_or_else(|| OAuthError::Server("the registration reply is not a JSON object".into()))?;
    let client_id = document
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| OAuthError::Server("the registration reply has no client_id".into()))?;
    let secret = document.get("client_secret").and_then(Value::as_str);
    let mut client = ClientId::configured(client_id, secret, server);
    match document
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        Some("client_secret_post") if secret.is_some() => {
            client.auth_method = AuthMethod::ClientSecretPost
        }
        Some("client_secret_basic") if secret.is_some() => {
            client.auth_method = AuthMethod::ClientSecretBasic
        }
        _ => {}
    }
    Ok(client)
}

/// What goes into the authorization URL.
pub struct AuthorizationRequest<'a> {
    pub client: &'a ClientId,
    pub redirect_uri: &'a str,
    pub challenge: &'a str,
    pub state: &'a str,
    pub scope: Option<&'a str>,
    pub resource: &'a str,
}

pub fn authorization_url(server: &ServerMetadata, request: &AuthorizationRequest<'_>) -> String {
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", request.client.client_id.as_str()),
        ("redirect_uri", request.redirect_uri),
        ("code_challenge", request.challenge),
        ("code_challenge_method", "S256"),
        ("state", request.state),
        ("resource", request.resource),
    ];
    if let Some(scope) = request.scope {
        pairs.push(("scope", scope));
    }
    url::with_query(&server.authorization_endpoint, &pairs)
}

/// A token request with the client's authentication; the reply becomes [`Tokens`].
pub fn token_request(
    web: &dyn Web,
    server: &ServerMetadata,
    client: &ClientId,
    params: &[(&str, &str)],
) -> Result<Tokens, OAuthError> {
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    let mut headers = Vec::new();
    match (client.auth_method, client.client_secret.as_deref()) {
        (AuthMethod::ClientSecretBasic, Some(secret)) => {
            // RFC 6749 §2.3.1: both parts form-encoded before base64.
            let raw = format!("{}:{}", url::encode(&client.client_id), url::encode(secret));
            headers.push((
                "Authorization".to_string(),
                format!("Basic {}", base64(raw.as_bytes())),
            ));
        }
        (AuthMethod::ClientSecretPost, Some(secret)) => {
            pairs.push(("client_id", &client.client_id));
            pairs.push(("client_secret", secret));
        }
        _ => pairs.push(("client_id", &client.client_id)),
    }
    let reply = web.post(
        &server.token_endpoint,
        "application/x-www-form-urlencoded",
        &url::form(&pairs),
        &headers,
    )?;
    if !reply.ok() {
        return Err(server_error("the token request", &reply));
    }
    parse_tokens(&reply)
}

/// An RFC 8693 token exchange at `endpoint`: the issued token, which must be of `issued`
/// type (its `token_type` is `N_A`: it is a grant, not a bearer token).
pub fn exchange(
    web: &dyn Web,
    endpoint: &str,
    params: &[(&str, &str)],
    issued: &str,
) -> Result<String, OAuthError> {
    let reply = web.post(
        endpoint,
        "application/x-www-form-urlencoded",
        &url::form(params),
        &[],
    )?;
    if !reply.ok() {
        return Err(server_error("the token exchange", &reply));
    }
    let document = reply
        .json()
        .ok_or_else(|| OAuthError::Server("the token exchange reply is not JSON".into()))?;
    let kind = document.get("issued_token_type").and_then(Value::as_str);
    if kind.is_some_and(|k| k != issued) {
        return Err(OAuthError::Server(format!(
            "the token exchange issued a `{}`, not a `{issued}`",
            kind.unwrap_or_default()
        )));
    }
    document
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .ok_or_else(|| OAuthError::Server("the token exchange reply has no access_token".into()))
}

fn parse_tokens(reply: &Reply) -> Result<Tokens, OAuthError> {
    let document = reply
        .json()
        .ok_or_else(|| OAuthError::Server("the token reply is not a JSON object".into()))?;
    let text = |key: &str| {
        document
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let access_token = text("access_token")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::Server("the token reply has no access_token".into()))?;
    match text("token_type") {
        Some(kind) if kind.eq_ignore_ascii_case("bearer") => {}
        Some(kind) => {
            return Err(OAuthError::Unsupported(format!(
                "the server issued a `{kind}` token; reasonix sends Bearer tokens only"
            )))
        }
        None => {}
    }
    let expires_at = document
        .get("expires_in")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .map(|secs| now().saturating_add(secs));
    Ok(Tokens {
        access_token,
        refresh_token: text("refresh_token"),
        expires_at,
        scope: text("scope"),
    })
}

/// An OAuth error reply (`error`, `error_description`) as one line.
fn server_error(what: &str, reply: &Reply) -> OAuthError {
    let detail = match reply.json() {
        Some(document) => {
            let field = |k: &str| document.get(k).and_then(Value::as_str).unwrap_or("");
            match (field("error"), field("error_description")) {
                ("", _) => String::new(),
                (code, "") => code.to_string(),
                (code, description) => format!("{code}: {description}"),
            }
        }
        None => String::new(),
    };
    let detail = crate::text::one_line(&detail, 200);
    match detail.is_empty() {
        true => OAuthError::Server(format!("{what} failed with HTTP {}", reply.status)),
        false => OAuthError::Server(format!(
            "{what} failed with HTTP {}: {detail}",
            reply.status
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::oauth::discovery::ResourceMetadata;
    use std::sync::Mutex;

    fn found(prm_scopes: &[&str], as_scopes: &[&str]) -> Discovered {
        Discovered {
            resource: "https://mcp.example/mcp".into(),
            resource_metadata: Some(ResourceMetadata {
                resource: "https://mcp.example/mcp".into(),
                authorization_servers: vec![],
                scopes_supported: prm_scopes.iter().map(|s| s.to_string()).collect(),
            }),
            server: ServerMetadata {
                scopes_supported: as_scopes.iter().map(|s| s.to_string()).collect(),
                ..ServerMetadata::default()
            },
        }
    }

    #[test]
    fn scope_comes_from_config_then_challenge_then_metadata_else_is_omitted() {
        let challenge = Challenge {
            scope: Some("files:read".into()),
            ..Challenge::default()
        };
        let none = Challenge::default();
        let f = found(&["a", "b"], &[]);
        let configured = vec!["mine".to_string()];
        assert_eq!(
            choose_scope(Some(&configured), &challenge, &f, true).as_deref(),
            Some("mine")
        );
        assert_eq!(
            choose_scope(None, &challenge, &f, true).as_deref(),
            Some("files:read")
        );
        assert_eq!(choose_scope(None, &none, &f, true).as_deref(), Some("a b"));
        assert_eq!(choose_scope(None, &none, &found(&[], &[]), true), None);
        let offline = found(&["a"], &["a", "offline_access"]);
        assert_eq!(
            choose_scope(None, &none, &offline, true).as_deref(),
            Some("a offline_access")
        );
        assert_eq!(
            choose_scope(None, &none, &offline, false).as_deref(),
            Some("a")
        );
        assert_eq!(
            union_scope(Some("a b"), Some("b c")).as_deref(),
            Some("a b c")
        );
        assert_eq!(union_scope(None, None), None);
    }

    /// One POST seen: URL, body, headers.
    type Posted = (String, String, Vec<(String, String)>);

    /// Records the one POST and answers it.
    struct TokenEndpoint {
        reply: Reply,
        seen: Mutex<Vec<Posted>>,
    }

    impl Web for TokenEndpoint {
        fn get(&self, _: &str) -> Result<Reply, OAuthError> {
            unreachable!()
        }
        fn post(
            &self,
            url: &str,
            _: &str,
            body: &str,
            headers: &[(String, String)],
        ) -> Result<Reply, OAuthError> {
            self.seen
                .lock()
                .unwrap()
                .push((url.to_string(), body.to_string(), headers.to_vec()));
            Ok(self.reply.clone())
        }
    }

    fn endpoint(status: u16, body: Value) -> TokenEndpoint {
        TokenEndpoint {
            reply: Reply {
                status,
                body: body.to_string(),
                ..Reply::default()
            },
            seen: Mutex::new(Vec::new()),
        }
    }

    #[test]
    fn client_authentication_follows_the_metadata() {
        let basic_server = ServerMetadata {
            token_endpoint: "https://a.example/token".into(),
            ..ServerMetadata::default()
        };
        let post_server = ServerMetadata {
            token_auth_methods: Some(vec!["client_secret_post".into(), "none".into()]),
            ..basic_server.clone()
        };
        let basic = ClientId::configured("id 1", Some("s:2"), &basic_server);
        assert_eq!(basic.auth_method, AuthMethod::ClientSecretBasic);
        let post = ClientId::configured("id", Some("s"), &post_server);
        assert_eq!(post.auth_method, AuthMethod::ClientSecretPost);
        let public = ClientId::configured("id", None, &post_server);
        assert_eq!(public.auth_method, AuthMethod::None);

        let web = endpoint(
            200,
            json!({"access_token": "at", "token_type": "bearer", "expires_in": 60, "refresh_token": "rt"}),
        );
        let tokens = token_request(
            &web,
            &basic_server,
            &basic,
            &[("grant_type", "client_credentials")],
        )
        .unwrap();
        assert_eq!(tokens.refresh_token.as_deref(), Some("rt"));
        assert!(!tokens.expired(now(), 0) && tokens.expired(now(), 120));
        let (_, body, headers) = web.seen.lock().unwrap()[0].clone();
        assert_eq!(body, "grant_type=client_credentials");
        assert_eq!(headers[0].1, format!("Basic {}", base64(b"id%201:s%3A2")));

        let web = endpoint(200, json!({"access_token": "at", "token_type": "Bearer"}));
        token_request(
            &web,
            &post_server,
            &post,
            &[("grant_type", "refresh_token")],
        )
        .unwrap();
        let (_, body, headers) = web.seen.lock().unwrap()[0].clone();
        assert_eq!(
            body,
            "grant_type=refresh_token&client_id=id&client_secret=s"
        );
        assert!(headers.is_empty());
        let web = endpoint(200, json!({"access_token": "at"}));
        token_request(&web, &post_server, &public, &[]).unwrap();
        assert_eq!(web.seen.lock().unwrap()[0].1, "client_id=id");
    }

    #[test]
    fn error_replies_and_foreign_token_types_are_reported() {
        let server = ServerMetadata::default();
        let client = ClientId::configured("id", None, &server);
        let web = endpoint(
            400,
            json!({"error": "invalid_grant", "error_description": "expired\ncode"}),
        );
        let err = token_request(&web, &server, &client, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "oauth: the token request failed with HTTP 400: invalid_grant: expired code"
        );
        let web = endpoint(200, json!({"access_token": "at", "token_type": "DPoP"}));
        let err = token_request(&web, &server, &client, &[]).unwrap_err();
        assert!(err.to_string().contains("`DPoP`"), "{err}");
    }

    #[test]
    fn a_token_exchange_returns_the_grant_of_the_asked_type_only() {
        let id_jag = "urn:ietf:params:oauth:token-type:id-jag";
        let web = endpoint(
            200,
            json!({"access_token": "jag", "issued_token_type": id_jag, "token_type": "N_A"}),
        );
        let grant = exchange(&web, "https://idp.example/token", &[("a", "b c")], id_jag);
        assert_eq!(
            grant.unwrap(),
            "jag",
            "N_A is not refused as a token type here"
        );
        let (url, body, _) = web.seen.lock().unwrap()[0].clone();
        assert_eq!(
            (url.as_str(), body.as_str()),
            ("https://idp.example/token", "a=b%20c")
        );
        let web = endpoint(
            200,
            json!({"access_token": "at", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
        );
        let err = exchange(&web, "https://idp.example/token", &[], id_jag).unwrap_err();
        assert!(err.to_string().contains("not a"), "{err}");
        let web = endpoint(400, json!({"error": "invalid_grant"}));
        let err = exchange(&web, "https://idp.example/token", &[], id_jag).unwrap_err();
        assert!(err.to_string().contains("invalid_grant"), "{err}");
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_and_resource() {
        let server = ServerMetadata {
            authorization_endpoint: "https://a.example/authorize?tenant=t".into(),
            ..ServerMetadata::default()
        };
        let client = ClientId::configured("cid", None, &server);
        let text = authorization_url(
            &server,
            &AuthorizationRequest {
                client: &client,
                redirect_uri: "http://127.0.0.1:5/callback",
                challenge: "ch",
                state: "st",
                scope: Some("a b"),
                resource: "https://mcp.example/mcp",
            },
        );
        let (base, query) = text.split_once('?').unwrap();
        assert_eq!(base, "https://a.example/authorize");
        let pairs = url::query_pairs(query);
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("tenant"), Some("t"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("https://mcp.example/mcp"));
        assert_eq!(get("scope"), Some("a b"));
        assert_eq!(get("state"), Some("st"));
    }
}
