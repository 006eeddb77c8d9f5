//! The routes: the embedded page and its script, style and icon, login and logout, and the JSON
//! API over the live sessions (create, resume, send, interrupt, answer approvals, `ask` cards
//! and plan reviews, the event stream, what is typed, the model, the composition binding),
//! models, MCP status, the composition catalog (`presets`) and the stored sessions' export,
//! import and move (`archive_routes`). Every response carries the
//! security headers; every API request passes the auth check, and every state-changing one
//! the CSRF check.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{json, Value};

use super::auth::{self, Auth, Bearer, Login, Mode};
use super::http::{Request, Response};
use super::sessions::{Hub, Live};
use super::{archive_routes, commands, history_view, presets, Open, Refused};
use crate::tool::collab::{Answer, PlanReview};

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");
const ICON: &str = include_str!("page/favicon.svg");

/// What a request gets: a response, or the event stream of a session from an event id on.
pub enum Reply {
    Response(Response),
    Events(Arc<Live>, Option<u64>),
}

pub struct Router {
    pub auth: Auth,
    pub hub: Arc<Hub>,
}

const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
];

impl Router {
    pub fn security_headers(&self) -> &'static [(&'static str, &'static str)] {
        SECURITY_HEADERS
    }

    /// Adds the security headers every response carries.
    pub fn finish(&self, mut response: Response) -> Response {
        for (name, value) in SECURITY_HEADERS {
            response.headers.push((name.to_string(), value.to_string()));
        }
        if !response.headers.iter().any(|(n, _)| n == "Cache-Control") {
            response
                .headers
                .push(("Cache-Control".into(), "no-store".into()));
        }
        response
    }

    pub fn handle(&self, request: &Request, peer: SocketAddr) -> Reply {
        match self.route(request, peer) {
            Reply::Response(response) => Reply::Response(self.finish(response)),
            events => events,
        }
    }

    fn route(&self, request: &Request, peer: SocketAddr) -> Reply {
        let respond = Reply::Response;
        // Auth mode none answers only to a Host naming loopback: a site that rebinds its DNS
        // name to 127.0.0.1 gets nowhere, even before the token is looked at.
        if matches!(self.auth.mode, Mode::None(_)) && !auth::loopback_host(request) {
            return respond(Response::error(
                403,
                "auth_mode none answers only to a loopback Host",
            ));
        }
        let bearer = self.auth.bearer(request);
        let method = request.method.as_str();
        let reading = matches!(method, "GET" | "HEAD");
        // A bearer token is not ambient authority, so such a request needs no CSRF check.
        if !reading && bearer != Bearer::Valid && !auth::same_origin(request) {
            return respond(Response::error(
                403,
                "cross-origin request refused (Origin must match Host)",
            ));
        }
        let path = request.path.as_str();
        match (method, path) {
            ("GET" | "HEAD", "/") => return respond(self.page(request, peer)),
            ("GET" | "HEAD", "/app.js") => {
                return respond(Response::new(200, "text/javascript; charset=utf-8", SCRIPT))
            }
            ("GET" | "HEAD", "/app.css") => {
                return respond(Response::new(200, "text/css; charset=utf-8", STYLE))
            }
            // The page links the icon; `/favicon.ico` is where a browser looks without a link.
            ("GET" | "HEAD", "/favicon.svg" | "/favicon.ico") => {
                return respond(Response::new(200, "image/svg+xml", ICON))
            }
            ("GET", "/api/auth") => {
                return respond(Response::json(
                    200,
                    &json!({"mode": self.auth.mode.name(), "authenticated": self.auth.allowed(request, &bearer)}),
                ))
            }
            // The page's strings in the server's language (the catalog in `src/i18n`); the
            // login form needs them, so they are served before authentication.
            ("GET", "/api/messages") => {
                return respond(Response::json(
                    200,
                    &crate::i18n::page::messages(crate::i18n::lang()),
                ))
            }
            ("POST", "/api/login") => return respond(self.login(request, peer)),
            ("POST", "/api/logout") => {
                self.auth.logout(request);
                return respond(
                    Response::json(200, &json!({"ok": true}))
                        .with("Set-Cookie", &self.auth.clear_cookie(request)),
                );
            }
            _ => {}
        }
        if !path.starts_with("/api/") {
            return respond(Response::error(404, "not found"));
        }
        if !self.auth.allowed(request, &bearer) {
            return respond(Response::error(401, "log in first"));
        }
        self.api(request, method, path)
    }

    /// The page; `/?token=…` (the URL printed at startup) logs in and redirects to `/`, so
    /// the token leaves the address bar and the history. A wrong token is not counted (the
    /// module header of `auth` says why).
    fn page(&self, request: &Request, peer: SocketAddr) -> Response {
        let token = request.query_param("token");
        if let (Some(token), Some(_)) = (token, self.auth.mode.token()) {
            let client = self.auth.client_ip(request, peer);
            return match self.auth.login(client, &token) {
                Login::Ok(id) => Response::new(303, "text/plain", "")
                    .with("Location", "/")
                    .with("Set-Cookie", &self.auth.set_cookie(request, &id)),
                Login::Wrong => Response::new(401, "text/plain", "wrong token"),
                Login::Limited(after) => Response::new(429, "text/plain", "too many attempts")
                    .with("Retry-After", &after.to_string()),
            };
        }
        let lang = format!("<html lang=\"{}\">", crate::i18n::lang().tag());
        Response::new(
            200,
            "text/html; charset=utf-8",
            PAGE.replacen("<html lang=\"en\">", &lang, 1),
        )
    }

    fn login(&self, request: &Request, peer: SocketAddr) -> Response {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let Some(secret) = body
            .get("password")
            .or_else(|| body.get("token"))
            .and_then(Value::as_str)
        else {
            return Response::error(400, "send {\"password\": …} or {\"token\": …}");
        };
        let client = self.auth.client_ip(request, peer);
        match self.auth.login(client, secret) {
            Login::Ok(id) => Response::json(200, &json!({"ok": true}))
                .with("Set-Cookie", &self.auth.set_cookie(request, &id)),
            Login::Wrong => Response::error(401, "wrong password or token"),
            Login::Limited(after) => {
                Response::error(429, "too many failed attempts; wait and try again")
                    .with("Retry-After", &after.to_string())
            }
        }
    }

    fn api(&self, request: &Request, method: &str, path: &str) -> Reply {
        let respond = Reply::Response;
        let parts: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
        let body = || -> Value { serde_json::from_slice(&request.body).unwrap_or(Value::Null) };
        let factory = self.hub.factory();
        match (method, parts.as_slice()) {
            ("GET", ["models"]) => respond(Response::json(200, &factory.models())),
            ("GET", ["mcp"]) => {
                let mut status = factory.mcp();
                status["sessions"] = self
                    .hub
                    .all()
                    .iter()
                    .map(|l| json!({"id": l.id, "servers": l.mcp_status["servers"]}))
                    .collect();
                respond(Response::json(200, &status))
            }
            (_, ["agent-presets", rest @ ..]) => {
                respond(presets::route(factory, request, method, rest, &body()))
            }
            (_, ["tree", "sessions", rest @ ..]) => {
                respond(archive_routes::route(factory, request, method, rest))
            }
            ("GET", ["sessions"]) => {
                let live: Vec<Value> = self
                    .hub
                    .all()
                    .iter()
                    .map(|l| {
                        let described = l.describe();
                        json!({
                            "id": l.id,
                            "running": described["running"],
                            "title": l.title(),
                            "agentComposition": described["agentComposition"],
                        })
                    })
                    .collect();
                let stored: Vec<Value> = factory
                    .stored()
                    .into_iter()
                    .map(|s| {
                        json!({"id": s.id, "path": s.path, "started": s.started, "preview": s.preview})
                    })
                    .collect();
                respond(Response::json(
                    200,
                    &json!({"live": live, "stored": stored}),
                ))
            }
            ("POST", ["sessions"]) => {
                let body = body();
                let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
                if text("agentComposition").is_some() && !factory.config_editing() {
                    return respond(presets::editing_disabled());
                }
                let open = Open {
                    resume: text("resume"),
                    composition: text("agentComposition"),
                    model: text("model"),
                };
                match self.hub.open(&open) {
                    Ok(live) => respond(Response::json(201, &live.describe())),
                    // A stored conversation whose binding cannot run here opens as history.
                    Err(Refused::Composition(err)) => {
                        let view = open
                            .resume
                            .as_deref()
                            .filter(|_| err.code == crate::composition::Code::Unavailable)
                            .and_then(|reference| history_view::describe(factory, reference, &err));
                        match view {
                            Some(view) => respond(Response::json(200, &view)),
                            None => respond(presets::refusal(&err)),
                        }
                    }
                    Err(Refused::Other(err)) => respond(Response::error(400, &err)),
                }
            }
            (_, ["sessions", id, rest @ ..]) => {
                let Some(live) = self.hub.get(id) else {
                    return respond(Response::error(
                        404,
                        "no such live session; POST /api/sessions {\"resume\": id} first",
                    ));
                };
                self.session(request, method, &live, rest, body())
            }
            _ => respond(Response::error(404, "no such route")),
        }
    }

    fn session(
        &self,
        request: &Request,
        method: &str,
        live: &Arc<Live>,
        rest: &[&str],
        body: Value,
    ) -> Reply {
        let respond = Reply::Response;
        let ok = |result: Result<(), String>| match result {
            Ok(()) => Response::json(200, &json!({"ok": true})),
            Err(err) => Response::error(409, &err),
        };
        let number = |text: &str| text.parse::<u64>().ok();
        match (method, rest) {
            ("GET", []) => respond(Response::json(200, &live.describe())),
            ("GET", ["events"]) => {
                let after = request
                    .header("last-event-id")
                    .map(str::to_string)
                    .or_else(|| request.query_param("after"))
                    .and_then(|v| v.parse().ok());
                Reply::Events(Arc::clone(live), after)
            }
            ("POST", ["messages"]) => match body.get("text").and_then(Value::as_str) {
                Some(text) if !text.trim().is_empty() => {
                    respond(commands::typed(&self.hub, live, text))
                }
                _ => respond(Response::error(400, "send {\"text\": \"…\"}")),
            },
            ("GET", ["mcp"]) => respond(Response::json(200, &live.mcp_status)),
            ("POST", ["model"]) => {
                let Some(reference) = body.get("model").and_then(Value::as_str) else {
                    return respond(Response::error(400, "send {\"model\": \"provider/model\"}"));
                };
                match self.hub.factory().switch_model(reference) {
                    Ok(switch) => {
                        let name = switch.name.clone();
                        match live.set_model(switch) {
                            Ok(()) => respond(Response::json(200, &json!({"model": name}))),
                            Err(err) => respond(Response::error(409, &err)),
                        }
                    }
                    Err(err) => respond(Response::error(400, &err)),
                }
            }
            ("GET", ["agent-composition"]) => respond(Response::json(200, &live.composition())),
            ("POST", ["agent-composition"]) if !self.hub.factory().config_editing() => {
                respond(presets::editing_disabled())
            }
            ("POST", ["agent-composition"]) => {
                let Some(id) = body.get("id").and_then(Value::as_str) else {
                    return respond(Response::error(400, "send {\"id\": \"user:NAME\"}"));
                };
                match self.hub.rebind(live, id) {
                    Ok(next) => respond(Response::json(
                        200,
                        &json!({"session": next.describe(), "agentComposition": next.composition()}),
                    )),
                    Err(Refused::Composition(err)) => respond(presets::refusal(&err)),
                    Err(Refused::Other(err)) => respond(Response::error(409, &err)),
                }
            }
            ("POST", ["mode"]) => {
                if let Some(posture) = body.get("posture").and_then(Value::as_str) {
                    let result = crate::permission::parse_posture(posture)
                        .and_then(|posture| live.set_posture(posture));
                    if let Err(err) = result {
                        return respond(Response::error(400, &err));
                    }
                }
                if let Some(planning) = body.get("planning").and_then(Value::as_bool) {
                    if let Err(err) = live.set_planning(planning) {
                        return respond(Response::error(409, &err));
                    }
                }
                respond(Response::json(200, &json!({"ok": true})))
            }
            // The page's rename: one line, cut to the title's length.
            ("POST", ["title"]) => match body.get("title").and_then(Value::as_str) {
                Some(title) => {
                    live.set_title(title);
                    respond(Response::json(200, &json!({"title": live.title()})))
                }
                None => respond(Response::error(400, "send {\"title\": \"…\"}")),
            },
            ("POST", ["interrupt"]) => respond(Response::json(
                200,
                &json!({"interrupted": live.interrupt()}),
            )),
            ("POST", ["approvals", n]) => {
                let answer = body.get("answer").and_then(Value::as_str).unwrap_or("");
                match number(n) {
                    Some(n) => respond(ok(live.answer_approval(n, answer))),
                    None => respond(Response::error(404, "no such approval")),
                }
            }
            ("POST", ["asks", n]) => {
                let answer = if let Some(i) = body.get("option").and_then(Value::as_u64) {
                    Answer::Option(i as usize)
                } else if let Some(text) = body.get("text").and_then(Value::as_str) {
                    Answer::Text(text.to_string())
                } else {
                    Answer::Dismissed
                };
                match number(n) {
                    Some(n) => respond(ok(live.answer_ask(n, answer))),
                    None => respond(Response::error(404, "no such question")),
                }
            }
            ("POST", ["plans", n]) => {
                let feedback = body
                    .get("feedback")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let review = match body.get("decision").and_then(Value::as_str) {
                    Some("approve") => PlanReview::Approve,
                    Some("approve_accept_edits") => PlanReview::ApproveAcceptEdits,
                    Some("keep_planning") => PlanReview::KeepPlanning(feedback),
                    _ => {
                        return respond(Response::error(
                            400,
                            "decision: approve, approve_accept_edits or keep_planning",
                        ))
                    }
                };
                match number(n) {
                    Some(n) => respond(ok(live.answer_plan(n, review))),
                    None => respond(Response::error(404, "no such plan review")),
                }
            }
            _ => respond(Response::error(404, "no such route")),
        }
    }
}
