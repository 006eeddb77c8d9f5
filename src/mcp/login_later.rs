//! The chat's login on first use: a server that answered "needs authorization" at startup
//! gets the browser step on a thread of its own (the URL shown as a server notice, `$BROWSER`
//! opened when set, the loopback redirect awaited), and once logged in it is connected and
//! joins the run's late servers, whose tools the [`super::watch::ToolWatch`] hands to the
//! agent before its next request. The chat's input never waits for any of it.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};

use super::client::ServerEvent;
use super::config::{Endpoint, ServerSpec};
use super::oauth::{self, redirect, web, OAuthError, Target};
use super::server::{Launch, Server};
use super::McpError;

/// Servers connected after startup, shared by the handle and its tool watches.
pub type Late = Arc<Mutex<Vec<Arc<Server>>>>;

/// Whether this startup failure is one a login in the browser can fix.
pub fn wants_login(spec: &ServerSpec, err: &McpError) -> bool {
    matches!(spec.endpoint, Endpoint::Http { .. })
        && spec.oauth.grant == oauth::AUTHORIZATION_CODE
        && matches!(err, McpError::Auth(OAuthError::NeedsLogin(_)))
}

/// Logs in to `spec` and connects it, on its own thread; every step is told through `events`.
pub fn start(spec: ServerSpec, launch: Launch, late: Late, events: Option<Sender<ServerEvent>>) {
    let (name, report) = (spec.name.clone(), events.clone());
    let spawned = std::thread::Builder::new()
        .name(super::thread_name(&spec.name, "login"))
        .spawn(move || login_and_connect(spec, &launch, &late, events.as_ref()));
    if let (Err(e), Some(report)) = (spawned, report) {
        let _ = report.send(ServerEvent::Log {
            server: name.clone(),
            level: "warning".into(),
            text: format!("cannot start the login ({e}); run `reasonix mcp login {name}`"),
        });
    }
}

fn login_and_connect(
    spec: ServerSpec,
    launch: &Launch,
    late: &Late,
    events: Option<&Sender<ServerEvent>>,
) {
    let name = spec.name.clone();
    let say = |level: &str, text: String| {
        if let Some(events) = events {
            let _ = events.send(ServerEvent::Log {
                server: name.clone(),
                level: level.to_string(),
                text,
            });
        }
    };
    let Endpoint::Http { url, .. } = &spec.endpoint else {
        return;
    };
    let target = Target {
        name: &spec.name,
        url,
        settings: &spec.oauth,
        home: &launch.home,
    };
    let mut show = |address: &str| {
        say("info", format!("log in to use its tools: {address}"));
        if !redirect::open_browser(address) {
            say(
                "warning",
                "could not run $BROWSER; open the link yourself".into(),
            );
        }
    };
    if let Err(err) = oauth::login(&target, &web::Ureq, &mut show) {
        let text = err.to_string();
        say(
            "warning",
            format!(
                "login failed ({}); run `reasonix mcp login {name}`",
                text.trim_start_matches("oauth: "),
            ),
        );
        return;
    }
    match Server::connect(spec, launch) {
        Ok(server) => {
            let count = server.tools().len();
            late.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Arc::new(server));
            let noun = if count == 1 { "tool" } else { "tools" };
            say("info", format!("logged in; {count} {noun} available"));
        }
        Err(err) => say(
            "warning",
            format!(
                "logged in, but `{name}` failed to start: {}",
                err.to_string().trim_start_matches("mcp: ")
            ),
        ),
    }
}
