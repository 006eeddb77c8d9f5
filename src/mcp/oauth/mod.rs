//! OAuth 2.1 for HTTP MCP servers (the MCP authorization spec, 2025-03-26 to 2025-11-25).
//!
//! - `url`: origins, well-known locations, form encoding; `pkce`: base64, randomness, PKCE;
//!   `challenge`: the `WWW-Authenticate` header; `web`: the HTTP exchanges;
//!   `discovery`: protected resource and authorization server metadata, with their checks;
//!   `grant`: registration, the authorization URL and the token requests; `store`: the
//!   private per-server token files; `redirect`: the loopback listener of the browser step.
//! - Here: [`login`] (the interactive authorization code flow of `reasonix mcp login`, or the
//!   client-credentials grant), [`logout`], and the [`Authorizer`] the HTTP transport asks for
//!   a bearer token and tells about a 401 or 403. The transport never opens a browser: a run
//!   refreshes or re-requests tokens it can get on its own, and otherwise reports that the
//!   server needs `reasonix mcp login`.

pub mod challenge;
pub mod discovery;
pub mod grant;
pub mod jwt;
pub mod pkce;
pub mod redirect;
pub mod store;
pub mod url;
pub mod web;

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;

use challenge::Challenge;
use discovery::{Discovered, ServerMetadata};
use grant::{AuthorizationRequest, ClientId, Tokens};
use store::{Saved, TokenStore};
use web::Web;

/// A token expiring within this many seconds is refreshed before use.
const EXPIRY_MARGIN: u64 = 60;
/// Step-up re-authorizations (403 `insufficient_scope`) per connection.
const MAX_STEP_UPS: u32 = 2;
/// How long the browser step may take.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

pub const CLIENT_CREDENTIALS: &str = "client_credentials";
pub const AUTHORIZATION_CODE: &str = "authorization_code";
/// Cross-app access (the `jwt_bearer` setting): an enterprise IdP's ID token exchanged for an
/// identity assertion grant (RFC 8693), which the JWT bearer grant turns into a token.
pub const JWT_BEARER: &str = "jwt_bearer";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

#[derive(Debug)]
pub enum OAuthError {
    /// A server could not be reached or its reply not read.
    Network(String),
    /// Metadata is missing or unusable.
    Discovery(String),
    /// A check failed that protects a code, a secret or a token (see `discovery`).
    Refused(String),
    /// The authorization server answered with an error.
    Server(String),
    /// Something reasonix does not implement.
    Unsupported(String),
    /// The server needs the browser step (`reasonix mcp login`).
    NeedsLogin(String),
    /// The login was abandoned (no redirect, interrupted).
    Cancelled(String),
    Io {
        context: String,
        source: io::Error,
    },
}

impl OAuthError {
    pub fn io(context: impl Into<String>, source: io::Error) -> OAuthError {
        OAuthError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthError::Network(d)
            | OAuthError::Discovery(d)
            | OAuthError::Server(d)
            | OAuthError::Unsupported(d)
            | OAuthError::NeedsLogin(d) => write!(f, "oauth: {d}"),
            OAuthError::Refused(d) => write!(f, "oauth: refused: {d}"),
            OAuthError::Cancelled(d) => write!(f, "oauth: login abandoned: {d}"),
            OAuthError::Io { context, source } => write!(f, "oauth: {context}: {source}"),
        }
    }
}

impl std::error::Error for OAuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OAuthError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `[plugins.oauth]` of one server, `${VAR}` expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    /// `authorization_code` or `client_credentials`.
    pub grant: String,
    pub scopes: Option<Vec<String>>,
    pub callback_port: u16,
    /// `private_key_jwt`: the PEM key (or its path) and `ES256`/`RS256`.
    pub private_key: Option<String>,
    pub signing_algorithm: Option<String>,
    /// Cross-app access: where and with which client the ID token is exchanged.
    pub idp_token_endpoint: Option<String>,
    pub idp_client_id: Option<String>,
    pub id_token: Option<String>,
}

impl Settings {
    /// A grant that needs no browser: tokens are fetched on demand.
    fn machine(&self) -> bool {
        self.grant == CLIENT_CREDENTIALS || self.grant == JWT_BEARER
    }
}

/// What a login needs to know about the server.
pub struct Target<'a> {
    pub name: &'a str,
    pub url: &'a str,
    pub settings: &'a Settings,
    pub home: &'a Path,
}

/// How a login went.
#[derive(Debug, PartialEq, Eq)]
pub enum LoginOutcome {
    /// The server answered without asking for authorization.
    NotNeeded,
    LoggedIn {
        scope: Option<String>,
    },
}

/// Asks the MCP endpoint for its challenge: an unauthenticated `initialize`, and when the
/// server lets the handshake through (some protect only what follows it), `tools/list` in that
/// session. `None` when nothing asked for authorization.
fn probe(web: &dyn Web, url: &str) -> Result<Option<Challenge>, OAuthError> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": crate::mcp::client::PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "reasonix", "version": crate::VERSION},
    }});
    let mut headers = vec![(
        "Accept".to_string(),
        "application/json, text/event-stream".to_string(),
    )];
    let reply = web.post(url, "application/json", &initialize.to_string(), &headers)?;
    if let Some(challenge) = challenged(&reply)? {
        return Ok(Some(challenge));
    }
    if let Some(session) = reply.header("mcp-session-id") {
        headers.push(("Mcp-Session-Id".to_string(), session.to_string()));
    }
    if let Some(version) = negotiated_version(&reply.body) {
        headers.push(("MCP-Protocol-Version".to_string(), version));
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = web.post(url, "application/json", &initialized.to_string(), &headers)?;
    if let Some(challenge) = challenged(&reply)? {
        return Ok(Some(challenge));
    }
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let reply = web.post(url, "application/json", &list.to_string(), &headers)?;
    // Only a challenge counts here: a server without tools may answer tools/list with an error.
    Ok(challenged(&reply).ok().flatten())
}

/// The challenge of a 401 or 403, `None` for a success, an error for anything else.
fn challenged(reply: &web::Reply) -> Result<Option<Challenge>, OAuthError> {
    match reply.status {
        401 | 403 => Ok(Some(challenge::parse(
            reply.header("www-authenticate").unwrap_or(""),
        ))),
        _ if reply.ok() => Ok(None),
        status => Err(OAuthError::Network(format!(
            "the MCP server answered HTTP {status} before any authorization"
        ))),
    }
}

/// The `protocolVersion` of an `initialize` result, in a JSON body or an SSE `data:` line.
fn negotiated_version(body: &str) -> Option<String> {
    let json = match body.trim_start().starts_with('{') {
        true => body.to_string(),
        false => body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.starts_with('{'))?
            .to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&json).ok()?;
    value["result"]["protocolVersion"]
        .as_str()
        .map(str::to_string)
}

/// `reasonix mcp login`: discovery, then the client-credentials grant or the browser step.
/// `show` receives the authorization URL (to print and to open).
pub fn login(
    target: &Target<'_>,
    web: &dyn Web,
    show: &mut dyn FnMut(&str),
) -> Result<LoginOutcome, OAuthError> {
    let Some(challenge) = probe(web, target.url)? else {
        return Ok(LoginOutcome::NotNeeded);
    };
    let found = discovery::discover(web, target.url, &challenge)?;
    let saved = match target.settings.machine() {
        true => machine_login(target, web, &challenge, &found, None)?,
        false => browser_login(target, web, &challenge, &found, show)?,
    };
    TokenStore::new(target.home)
        .save(&saved)
        .map_err(|e| OAuthError::io("saving the tokens", e))?;
    Ok(LoginOutcome::LoggedIn {
        scope: saved.tokens.scope.clone(),
    })
}

fn saved(target: &Target<'_>, found: &Discovered, mut client: ClientId, tokens: Tokens) -> Saved {
    // A configured secret stays in the config: the authorizer reads it from there.
    if target.settings.client_id.as_deref() == Some(client.client_id.as_str()) {
        client.client_secret = None;
    }
    Saved {
        server_url: target.url.to_string(),
        resource: found.resource.clone(),
        issuer: found.server.issuer.clone(),
        token_endpoint: found.server.token_endpoint.clone(),
        client,
        grant: target.settings.grant.clone(),
        tokens,
        wanted_scope: None,
    }
}

/// The grants without a browser: client credentials (with a secret, or a client assertion
/// signed with the configured private key), or cross-app access.
fn machine_login(
    target: &Target<'_>,
    web: &dyn Web,
    challenge: &Challenge,
    found: &Discovered,
    scope: Option<String>,
) -> Result<Saved, OAuthError> {
    let settings = target.settings;
    let scope =
        scope.or_else(|| grant::choose_scope(settings.scopes.as_deref(), challenge, found, false));
    if settings.grant == JWT_BEARER {
        return cross_app_login(target, web, found, scope);
    }
    if let Some(pem) = settings.private_key.as_deref() {
        let client_id = settings.client_id.as_deref().ok_or_else(|| {
            OAuthError::Unsupported("private_key_jwt needs `client_id` in [plugins.oauth]".into())
        })?;
        let alg = settings
            .signing_algorithm
            .as_deref()
            .map(jwt::Alg::parse)
            .transpose()?;
        let key = jwt::Key::load(pem, alg)?;
        let assertion = jwt::client_assertion(&key, client_id, &found.server.issuer)?;
        let client = ClientId::configured(client_id, None, &found.server);
        let mut params = vec![
            ("grant_type", CLIENT_CREDENTIALS),
            ("resource", found.resource.as_str()),
            ("client_assertion_type", jwt::ASSERTION_TYPE),
            ("client_assertion", assertion.as_str()),
        ];
        if let Some(scope) = scope.as_deref() {
            params.push(("scope", scope));
        }
        let tokens = grant::token_request(web, &found.server, &client, &params)?;
        return Ok(saved(target, found, client, tokens));
    }
    let client = configured_client(settings, &found.server)?.ok_or_else(|| {
        OAuthError::Unsupported(
            "the client_credentials grant needs `client_id` and `client_secret` (or \
             `private_key`) in [plugins.oauth]"
                .into(),
        )
    })?;
    if client.client_secret.is_none() {
        return Err(OAuthError::Unsupported(
            "the client_credentials grant needs `client_secret`, or `private_key` for \
             private_key_jwt"
                .into(),
        ));
    }
    let tokens = client_credentials(
        web,
        &found.server,
        &client,
        scope.as_deref(),
        &found.resource,
    )?;
    Ok(saved(target, found, client, tokens))
}

/// Cross-app access (SEP-990): the IdP exchanges the user's ID token for an identity
/// assertion grant for this authorization server and resource (RFC 8693), which the JWT
/// bearer grant (RFC 7523 §2.1) turns into an access token.
fn cross_app_login(
    target: &Target<'_>,
    web: &dyn Web,
    found: &Discovered,
    scope: Option<String>,
) -> Result<Saved, OAuthError> {
    let settings = target.settings;
    let missing = |key: &str| {
        OAuthError::Unsupported(format!(
            "grant = \"jwt_bearer\" needs `{key}` in [plugins.oauth]"
        ))
    };
    let endpoint = settings
        .idp_token_endpoint
        .as_deref()
        .ok_or_else(|| missing("idp_token_endpoint"))?;
    let id_token = settings
        .id_token
        .as_deref()
        .ok_or_else(|| missing("id_token"))?;
    if !url::secure_enough(endpoint) {
        return Err(OAuthError::Refused(format!(
            "the IdP token endpoint {endpoint} is not https"
        )));
    }
    let mut params = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("requested_token_type", ID_JAG),
        ("audience", found.server.issuer.as_str()),
        ("resource", found.resource.as_str()),
        ("subject_token", id_token),
        ("subject_token_type", ID_TOKEN),
    ];
    if let Some(client_id) = settings.idp_client_id.as_deref() {
        params.push(("client_id", client_id));
    }
    if let Some(scope) = scope.as_deref() {
        params.push(("scope", scope));
    }
    let assertion = grant::exchange(web, endpoint, &params, ID_JAG)?;
    let client = configured_client(settings, &found.server)?.ok_or_else(|| missing("client_id"))?;
    let mut params = vec![
        ("grant_type", JWT_BEARER_GRANT),
        ("assertion", assertion.as_str()),
        ("resource", found.resource.as_str()),
    ];
    if let Some(scope) = scope.as_deref() {
        params.push(("scope", scope));
    }
    let tokens = grant::token_request(web, &found.server, &client, &params)?;
    Ok(saved(target, found, client, tokens))
}

fn client_credentials(
    web: &dyn Web,
    server: &ServerMetadata,
    client: &ClientId,
    scope: Option<&str>,
    resource: &str,
) -> Result<Tokens, OAuthError> {
    let mut params = vec![("grant_type", CLIENT_CREDENTIALS), ("resource", resource)];
    if let Some(scope) = scope {
        params.push(("scope", scope));
    }
    grant::token_request(web, server, client, &params)
}

/// The pre-registered client of the config, if any.
fn configured_client(
    settings: &Settings,
    server: &ServerMetadata,
) -> Result<Option<ClientId>, OAuthError> {
    let Some(id) = settings.client_id.as_deref() else {
        return Ok(None);
    };
    let client = ClientId::configured(id, settings.client_secret.as_deref(), server);
    let methods = server.auth_methods();
    if client.client_secret.is_some()
        && !methods.iter().any(|m| m.starts_with("client_secret_"))
        && methods.iter().any(|m| m == "private_key_jwt")
    {
        return Err(OAuthError::Unsupported(
            "the authorization server wants private_key_jwt client authentication: set \
             `private_key` (a PEM key) in [plugins.oauth]"
                .into(),
        ));
    }
    Ok(Some(client))
}

/// The authorization code flow with PKCE through the user's browser.
fn browser_login(
    target: &Target<'_>,
    web: &dyn Web,
    challenge: &Challenge,
    found: &Discovered,
    show: &mut dyn FnMut(&str),
) -> Result<Saved, OAuthError> {
    if !found.server.supports_s256() {
        return Err(OAuthError::Refused(
            "the authorization server does not list PKCE S256 support \
             (code_challenge_methods_supported); the MCP spec forbids continuing"
                .into(),
        ));
    }
    let listener = redirect::Listener::bind(target.settings.callback_port)?;
    let chosen = grant::choose_scope(target.settings.scopes.as_deref(), challenge, found, true);
    // A step-up the server asked for earlier (403 insufficient_scope) joins the request.
    let wanted = TokenStore::new(target.home)
        .load(target.url)
        .and_then(|saved| saved.wanted_scope);
    let scope = grant::union_scope(chosen.as_deref(), wanted.as_deref());
    let client = match configured_client(target.settings, &found.server)? {
        Some(client) => client,
        None => match target.settings.client_metadata_url.as_deref() {
            Some(document) if found.server.client_id_metadata_documents => {
                ClientId::configured(document, None, &found.server)
            }
            _ => grant::register(web, &found.server, &listener.redirect_uri, scope.as_deref())?,
        },
    };
    let pkce = pkce::Pkce::new().map_err(|e| OAuthError::io("reading random bytes", e))?;
    let state = pkce::random_token().map_err(|e| OAuthError::io("reading random bytes", e))?;
    let address = grant::authorization_url(
        &found.server,
        &AuthorizationRequest {
            client: &client,
            redirect_uri: &listener.redirect_uri,
            challenge: &pkce.challenge,
            state: &state,
            scope: scope.as_deref(),
            resource: &found.resource,
        },
    );
    let redirect_uri = listener.redirect_uri.clone();
    show(&address);
    let code = listener.wait(
        redirect::Expect {
            state,
            issuer: found.server.issuer.clone(),
            iss_required: found.server.iss_parameter,
        },
        LOGIN_TIMEOUT,
    )?;
    let tokens = grant::token_request(
        web,
        &found.server,
        &client,
        &[
            ("grant_type", AUTHORIZATION_CODE),
            ("code", &code),
            ("redirect_uri", &redirect_uri),
            ("code_verifier", &pkce.verifier),
            ("resource", &found.resource),
        ],
    )?;
    Ok(saved(target, found, client, tokens))
}

/// `reasonix mcp logout`: forgets the server's credentials; false when there were none.
pub fn logout(home: &Path, url: &str) -> Result<bool, OAuthError> {
    TokenStore::new(home)
        .remove(url)
        .map_err(|e| OAuthError::io("removing the tokens", e))
}

/// What the HTTP transport of one server asks for tokens.
pub struct Authorizer {
    name: String,
    url: String,
    settings: Settings,
    store: TokenStore,
    web: Box<dyn Web>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    saved: Option<Saved>,
    loaded: bool,
    /// Bumped whenever the token changes, so a request that failed with an old token just
    /// retries with the new one another thread fetched meanwhile.
    generation: u64,
    step_ups: u32,
}

/// Names the server only: the tokens stay out of every debug print.
impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Authorizer({})", self.name)
    }
}

impl Authorizer {
    pub fn new(name: &str, url: &str, settings: Settings, home: &Path) -> Authorizer {
        Authorizer::with_web(name, url, settings, home, Box::new(web::Ureq))
    }

    pub fn with_web(
        name: &str,
        url: &str,
        settings: Settings,
        home: &Path,
        web: Box<dyn Web>,
    ) -> Authorizer {
        Authorizer {
            name: name.to_string(),
            url: url.to_string(),
            settings,
            store: TokenStore::new(home),
            web,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bearer token to send (refreshed first when it is about to expire) and its
    /// generation, for [`Authorizer::challenged`].
    pub fn bearer(&self) -> (Option<String>, u64) {
        let mut state = self.lock();
        if !state.loaded {
            state.saved = self.store.load(&self.url);
            state.loaded = true;
        }
        let expiring = state
            .saved
            .as_ref()
            .is_some_and(|s| s.tokens.expired(grant::now(), EXPIRY_MARGIN));
        if expiring {
            // A failed refresh keeps the old token: the server's 401 says what happens next.
            let _ = self.renew(&mut state, None);
        }
        let token = state.saved.as_ref().map(|s| s.tokens.access_token.clone());
        (token, state.generation)
    }

    /// The server refused the token of `generation` with `status` and this
    /// `WWW-Authenticate`: Ok when a new token is ready to retry with.
    pub fn challenged(
        &self,
        status: u16,
        header: Option<&str>,
        generation: u64,
    ) -> Result<(), OAuthError> {
        let mut state = self.lock();
        if state.generation != generation {
            return Ok(());
        }
        let challenge = challenge::parse(header.unwrap_or(""));
        if status == 403 && !challenge.insufficient_scope() {
            return Err(OAuthError::Server(format!(
                "the server `{}` refused the request (HTTP 403)",
                self.name
            )));
        }
        if status == 403 {
            if state.step_ups >= MAX_STEP_UPS {
                return Err(OAuthError::Server(format!(
                    "the server `{}` still wants more scope after {MAX_STEP_UPS} attempts",
                    self.name
                )));
            }
            state.step_ups += 1;
            let scope = grant::union_scope(
                state.saved.as_ref().and_then(|s| s.tokens.scope.as_deref()),
                challenge.scope.as_deref(),
            );
            if !self.settings.machine() {
                // Only the person can grant more; remember what to ask for at the next login.
                if let Some(mut saved) = state.saved.clone() {
                    saved.wanted_scope = scope.clone();
                    let _ = self.store.save(&saved);
                    state.saved = Some(saved);
                }
                return Err(self.needs_login(scope.as_deref()));
            }
            return self.machine_token(&mut state, &challenge, scope);
        }
        let refreshable = state
            .saved
            .as_ref()
            .is_some_and(|s| s.tokens.refresh_token.is_some());
        if refreshable && self.renew(&mut state, None).is_ok() {
            return Ok(());
        }
        if self.settings.machine() {
            return self.machine_token(&mut state, &challenge, None);
        }
        Err(self.needs_login(None))
    }

    fn needs_login(&self, scope: Option<&str>) -> OAuthError {
        let more = scope
            .map(|s| format!(" (it asks for scope `{s}`)"))
            .unwrap_or_default();
        OAuthError::NeedsLogin(format!(
            "the server needs authorization{more}; run `reasonix mcp login {}`",
            self.name
        ))
    }

    /// Refreshes the stored tokens with their refresh token.
    fn renew(&self, state: &mut State, scope: Option<&str>) -> Result<(), OAuthError> {
        let Some(saved) = state.saved.clone() else {
            return Err(self.needs_login(None));
        };
        let Some(refresh) = saved.tokens.refresh_token.as_deref() else {
            return Err(self.needs_login(None));
        };
        let server = ServerMetadata {
            issuer: saved.issuer.clone(),
            token_endpoint: saved.token_endpoint.clone(),
            ..ServerMetadata::default()
        };
        let client = self.client_of(&saved);
        let mut params = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("resource", saved.resource.as_str()),
        ];
        if let Some(scope) = scope {
            params.push(("scope", scope));
        }
        let mut tokens = grant::token_request(self.web.as_ref(), &server, &client, &params)?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = saved.tokens.refresh_token.clone();
        }
        if tokens.scope.is_none() {
            tokens.scope = saved.tokens.scope.clone();
        }
        self.keep(state, Saved { tokens, ..saved })
    }

    /// The stored client, with the configured secret when it is the configured client (the
    /// secret is read from the config, not from the token file, when both exist).
    fn client_of(&self, saved: &Saved) -> ClientId {
        let mut client = saved.client.clone();
        if self.settings.client_id.as_deref() == Some(client.client_id.as_str())
            && self.settings.client_secret.is_some()
        {
            client.client_secret = self.settings.client_secret.clone();
        }
        client
    }

    /// A new client-credentials token (discovering the server again).
    fn machine_token(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scope: Option<String>,
    ) -> Result<(), OAuthError> {
        let found = discovery::discover(self.web.as_ref(), &self.url, challenge)?;
        let target = Target {
            name: &self.name,
            url: &self.url,
            settings: &self.settings,
            home: Path::new(""),
        };
        let saved = machine_login(&target, self.web.as_ref(), challenge, &found, scope)?;
        self.keep(state, saved)
    }

    fn keep(&self, state: &mut State, saved: Saved) -> Result<(), OAuthError> {
        self.store
            .save(&saved)
            .map_err(|e| OAuthError::io("saving the tokens", e))?;
        state.saved = Some(saved);
        state.generation += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use grant::AuthMethod;
    use web::Reply;

    /// A token endpoint that hands out `at-N` for any refresh, and records every form.
    struct Endpoint {
        forms: Mutex<Vec<String>>,
        refuse: bool,
    }

    impl Web for std::sync::Arc<Endpoint> {
        fn get(&self, _: &str) -> Result<Reply, OAuthError> {
            Ok(Reply {
                status: 404,
                ..Reply::default()
            })
        }
        fn post(
            &self,
            _: &str,
            _: &str,
            body: &str,
            _: &[(String, String)],
        ) -> Result<Reply, OAuthError> {
            let mut forms = self.forms.lock().unwrap();
            forms.push(body.to_string());
            let (status, body) = match self.refuse {
                true => (400, json!({"error": "invalid_grant"})),
                false => (
                    200,
                    json!({"access_token": format!("at-{}", forms.len() + 1), "token_type": "Bearer"}),
                ),
            };
            Ok(Reply {
                status,
                body: body.to_string(),
                ..Reply::default()
            })
        }
    }

    const URL: &str = "https://mcp.example/mcp";

    fn stored(home: &Path, expires_at: Option<u64>) {
        let saved = Saved {
            server_url: URL.into(),
            resource: URL.into(),
            issuer: "https://auth.example".into(),
            token_endpoint: "https://auth.example/token".into(),
            client: ClientId {
                client_id: "c".into(),
                client_secret: None,
                auth_method: AuthMethod::None,
            },
            grant: AUTHORIZATION_CODE.into(),
            tokens: Tokens {
                access_token: "at-1".into(),
                refresh_token: Some("rt".into()),
                expires_at,
                scope: Some("read".into()),
            },
            wanted_scope: None,
        };
        TokenStore::new(home).save(&saved).unwrap();
    }

    fn authorizer(home: &Path, refuse: bool) -> (Authorizer, std::sync::Arc<Endpoint>) {
        let endpoint = std::sync::Arc::new(Endpoint {
            forms: Mutex::new(Vec::new()),
            refuse,
        });
        let settings = Settings {
            grant: AUTHORIZATION_CODE.into(),
            ..Settings::default()
        };
        let auth = Authorizer::with_web("vault", URL, settings, home, Box::new(endpoint.clone()));
        (auth, endpoint)
    }

    #[test]
    fn a_401_refreshes_once_per_token_and_keeps_the_refresh_token() {
        let home = TempDir::new("oauth-refresh");
        stored(home.path(), None);
        let (auth, endpoint) = authorizer(home.path(), false);
        let (token, generation) = auth.bearer();
        assert_eq!(token.as_deref(), Some("at-1"));
        auth.challenged(401, Some("Bearer"), generation).unwrap();
        // A second request that failed with the same old token just retries.
        auth.challenged(401, Some("Bearer"), generation).unwrap();
        assert_eq!(endpoint.forms.lock().unwrap().len(), 1);
        let form = endpoint.forms.lock().unwrap()[0].clone();
        assert!(
            form.contains("grant_type=refresh_token&refresh_token=rt"),
            "{form}"
        );
        assert!(
            form.contains("resource=https%3A%2F%2Fmcp.example%2Fmcp"),
            "{form}"
        );
        let (token, _) = auth.bearer();
        assert_eq!(token.as_deref(), Some("at-2"));
        let saved = TokenStore::new(home.path()).load(URL).unwrap();
        assert_eq!(saved.tokens.refresh_token.as_deref(), Some("rt"));
        assert_eq!(saved.tokens.scope.as_deref(), Some("read"));
    }

    #[test]
    fn without_a_working_refresh_the_user_is_sent_to_login() {
        let home = TempDir::new("oauth-login");
        let (auth, _) = authorizer(home.path(), false);
        assert_eq!(auth.bearer().0, None);
        let err = auth.challenged(401, None, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "oauth: the server needs authorization; run `reasonix mcp login vault`"
        );
        stored(home.path(), Some(1));
        let (auth, endpoint) = authorizer(home.path(), true);
        // Expired and the refresh fails: the old token is still offered, the 401 sends the
        // user to login.
        let (token, generation) = auth.bearer();
        assert_eq!(token.as_deref(), Some("at-1"));
        assert!(matches!(
            auth.challenged(401, None, generation),
            Err(OAuthError::NeedsLogin(_))
        ));
        assert_eq!(endpoint.forms.lock().unwrap().len(), 2);
    }

    #[test]
    fn step_up_is_remembered_for_the_next_login_and_limited() {
        let home = TempDir::new("oauth-step-up");
        stored(home.path(), None);
        let (auth, _) = authorizer(home.path(), false);
        let (_, generation) = auth.bearer();
        let www = Some(r#"Bearer error="insufficient_scope", scope="write""#);
        let err = auth.challenged(403, www, generation).unwrap_err();
        assert!(err.to_string().contains("scope `read write`"), "{err}");
        let saved = TokenStore::new(home.path()).load(URL).unwrap();
        assert_eq!(saved.wanted_scope.as_deref(), Some("read write"));
        auth.challenged(403, www, generation).unwrap_err();
        let err = auth.challenged(403, www, generation).unwrap_err();
        assert!(err.to_string().contains("after 2 attempts"), "{err}");
        let plain = auth
            .challenged(403, Some("Bearer"), generation)
            .unwrap_err();
        assert!(plain.to_string().contains("HTTP 403"), "{plain}");
    }
}
