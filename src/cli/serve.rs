//! `reasonix serve`: the flags, the auth mode from flags, `[serve]` and `serve-auth.json`,
//! the password from stdin or a file (never argv), `--hash-password`, `--migrate-auth`, and
//! the [`Factory`] that builds each browser session's agent the way `reasonix run` does
//! (the built-in tools, skills, subagents, hooks, the planner pair, the MCP servers the user
//! configured or granted, the agent composition). The server itself is `crate::serve`.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::flags::{self, CommonFlags};
use super::lex::{Arg, Lexer};
use super::Global;
use crate::agent::session::{self, Summary};
use crate::app::assemble;
use crate::app::conversation::{self, ConversationOptions};
use crate::cli::error::Error;
use crate::command::Catalog as Commands;
use crate::composition::resolve::Available;
use crate::composition::store::Catalog;
use crate::config::{AuthMode, Config};
use crate::mcp::manager::ServerState;
use crate::mcp::{McpHandle, McpHost};
use crate::permission::{Approver, Posture};
use crate::provider::{self, ProviderSettings};
use crate::serve::{self, auth, auth_file, bcrypt, Built, Factory, Open, Refused, Switch};
use crate::tool::collab::Interact;

pub const HELP: &str = "\
Usage: reasonix serve [--listen ADDR] [--auth none|token|password]
                      [--password-stdin | --password-file FILE] [FLAGS]
       reasonix serve --hash-password (--password-stdin | --password-file FILE) [--cost N]
       reasonix serve --migrate-auth

Serves the agent to a browser: open the printed URL, which carries this run's token (the page
trades it for a cookie and drops it from the address bar). Each conversation in the page is a
session of this workspace, with the same tools, approvals, plan mode and `ask` cards as the
chat. Ctrl-C (or SIGTERM) interrupts running turns and stops; the sessions are saved.

Flags:
      --listen ADDR            Address to listen on (default 127.0.0.1:8787; port 0 picks one)
      --auth MODE              none (loopback only), token or password; default [serve] auth_mode
      --password-stdin         Password mode, the password read from the first line of stdin
      --password-file FILE     Password mode, the password read from FILE (its first line)
      --hash-password          Store a bcrypt hash of the password in <home>/serve-auth.json
      --cost N                 bcrypt cost for --hash-password (10 to 31, default 12)
      --migrate-auth           Move [serve] token and password_hash from config.toml to
                               <home>/serve-auth.json
  -m, --model REF              Model: provider name, model name or provider/model
      --effort LEVEL           Reasoning effort sent to the model
      --permission-mode MODE   ask (default), auto or yolo
      --trust-project          Believe ./reasonix.toml as if the workspace were trusted
      --trust-project-mcp      Launch MCP servers declared by project files without a grant
      --agent-composition ID   The composition new conversations are bound to (the page can
                               choose another before the first prompt)

Each conversation starts the MCP servers of the configuration: those declared by the project
(.mcp.json, an untrusted reasonix.toml) only with a grant stored by the chat or with
--trust-project-mcp; the page cannot grant one.

Every mode needs a secret: any process on this machine reaches loopback, jailed commands
and MCP servers with the network on among them. With auth none (loopback only) the secret is
a random token made for this run, held in memory only and printed once inside the URL; an
API client sends it as `Authorization: Bearer`. Binding an address other than loopback needs
--auth token or --auth password. In token mode the token is the `token` of
<home>/serve-auth.json (at least 32 characters) or a random one. A password is never taken
from the command line, where `ps` shows it to every user. Behind a TLS reverse proxy set [serve] behind_proxy = true so cookies are marked Secure and the
client address comes from X-Forwarded-For.
";

#[derive(Default)]
struct ServeArgs {
    common: CommonFlags,
    listen: Option<String>,
    auth: Option<String>,
    password: Option<PasswordFrom>,
    hash_password: bool,
    migrate_auth: bool,
    cost: Option<u32>,
}

/// Where the password is read from: never argv, which `ps` shows to every user.
enum PasswordFrom {
    Stdin,
    File(PathBuf),
}

fn parse(global: Global, lexer: &mut Lexer) -> Result<ServeArgs, Error> {
    let mut args = ServeArgs {
        common: CommonFlags {
            global,
            ..CommonFlags::default()
        },
        ..ServeArgs::default()
    };
    let mut own = ServeArgs::default();
    flags::parse("serve", &mut args.common, lexer, |arg, lexer| {
        let Arg::Long(name) = arg else {
            return Ok(false);
        };
        let mut value = || lexer.value(&arg.shown()).map_err(Error::Usage);
        match name.as_str() {
            "listen" => own.listen = Some(value()?),
            "auth" => own.auth = Some(value()?),
            "password" => {
                return Err(Error::Usage(
                    "--password P would show the password to every user in `ps`: use --password-stdin or --password-file FILE".into(),
                ))
            }
            "password-stdin" => own.password = Some(PasswordFrom::Stdin),
            "password-file" => own.password = Some(PasswordFrom::File(PathBuf::from(value()?))),
            "hash-password" => own.hash_password = true,
            "migrate-auth" => own.migrate_auth = true,
            "cost" => {
                let cost = value()?;
                own.cost = Some(
                    cost.parse()
                        .ok()
                        .filter(|c| (bcrypt::MIN_COST..=31).contains(c))
                        .ok_or_else(|| Error::Usage(format!("--cost {cost}: use 10 to 31")))?,
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if args.common.resume.is_some() || args.common.plan {
        return Err(Error::Usage(
            "serve opens and resumes sessions from the page; --continue, --resume and --plan do not apply".into(),
        ));
    }
    if args.common.posture == Some(Posture::Strict) {
        return Err(Error::Usage(
            "--permission-mode strict is for `reasonix run`".into(),
        ));
    }
    args.listen = own.listen;
    args.auth = own.auth;
    args.password = own.password;
    args.hash_password = own.hash_password;
    args.migrate_auth = own.migrate_auth;
    args.cost = own.cost;
    Ok(args)
}

pub fn main(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let args = parse(global, lexer)?;
    let password = match &args.password {
        Some(from) => Some(read_password(from)?),
        None => None,
    };
    if args.hash_password {
        let Some(password) = &password else {
            return Err(Error::Usage(
                "--hash-password needs --password-stdin or --password-file FILE".into(),
            ));
        };
        return store_hash(&args, password);
    }
    if args.migrate_auth {
        return migrate_auth(&args);
    }
    args.common.global.enter_dir()?;
    let cwd = assemble::working_dir()?;
    let project = assemble::ProjectFlags {
        trust: args.common.trust_project,
        strict: false,
        claude_setting_sources: None,
    };
    let loaded = assemble::load_config(args.common.global.config.as_deref(), &cwd, project)?;
    super::print_warnings(&loaded.warnings);
    let config = loaded.config;
    // Who may connect is settled before the model: a refused listen address or a weak stored
    // hash is the first thing the user hears of, not a missing API key.
    let listen = args
        .listen
        .clone()
        .unwrap_or_else(|| "127.0.0.1:8787".into());
    let listen = resolve_listen(&listen)?;
    let stored = auth_file::load(&config.home).map_err(|e| Error::Usage(e.to_string()))?;
    if config.serve.token.is_some() || config.serve.password_hash.is_some() {
        eprintln!(
            "reasonix: warning: [serve] token and password_hash in config.toml are readable from the jail; run `reasonix serve --migrate-auth` to move them to {}",
            auth_file::path(&config.home).display()
        );
    }
    let mode = auth_mode(&args, password, &stored, &config)?;
    serve::check_listen(&listen, &mode).map_err(Error::Usage)?;
    let settings = config.resolve_model(args.common.model.as_deref())?;
    assemble::check_key(&settings)?;
    let options = serve::Options {
        listen,
        mode: mode.clone(),
        behind_proxy: config.serve.behind_proxy,
        workers: serve::WORKERS,
        reserved_workers: serve::RESERVED_WORKERS,
        queue: serve::QUEUE,
        max_sessions: serve::MAX_SESSIONS,
        max_streams_per_session: serve::MAX_STREAMS_PER_SESSION,
        max_streams: serve::MAX_STREAMS,
    };
    let bound = serve::bind(&options).map_err(Error::Usage)?;
    // The only place the token leaves the process: the user's own terminal. No browser is
    // started and nothing is written to a file, where a jailed command could read it.
    let url = match mode.token() {
        Some(token) => format!("http://{}/?token={token}", bound.addr),
        None => format!("http://{}/", bound.addr),
    };
    super::print_out(&format!(
        "reasonix serve: open {url} (auth: {})\n",
        mode.name()
    ));
    let stop = crate::cancel::CancelToken::new();
    if let Err(err) = crate::term::sys::cancel_on_interrupt(stop.clone()) {
        eprintln!(
            "reasonix: warning: cannot install signal handlers ({err}); Ctrl-C will not save state"
        );
    }
    let factory = Arc::new(ServeFactory {
        config,
        settings,
        cwd,
        posture: args.common.posture.unwrap_or(Posture::Ask),
        effort: args.common.effort.clone(),
        trust_project_mcp: args.common.trust_project_mcp,
        composition: args.common.agent_composition.clone(),
    });
    serve::run(bound, options, factory, stop);
    Ok(super::error::exit::OK)
}

/// `HOST:PORT` (a name such as `localhost` is looked up) into one socket address.
fn resolve_listen(text: &str) -> Result<std::net::SocketAddr, Error> {
    use std::net::ToSocketAddrs;
    text.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--listen {text}: expected HOST:PORT such as 127.0.0.1:8787"
            ))
        })
}

/// The password from stdin (its first line) or a file (its first line), at most
/// [`MAX_PASSWORD`] bytes; never empty.
fn read_password(from: &PasswordFrom) -> Result<String, Error> {
    use std::io::{BufRead, Read};
    let (what, mut reader): (String, Box<dyn Read>) = match from {
        PasswordFrom::Stdin => ("stdin".into(), Box::new(std::io::stdin())),
        PasswordFrom::File(path) => {
            let shown = format!("--password-file {}", path.display());
            let meta = std::fs::metadata(path).map_err(|e| Error::io(&shown, e))?;
            if !meta.is_file() {
                return Err(Error::Usage(format!("{shown}: not a regular file")));
            }
            let file = std::fs::File::open(path).map_err(|e| Error::io(&shown, e))?;
            (shown, Box::new(file))
        }
    };
    // The first line only: stdin may stay open (a pipe the caller keeps), so no read past it.
    let mut bytes = Vec::new();
    std::io::BufReader::new(reader.by_ref().take(MAX_PASSWORD as u64 + 2))
        .read_until(b'\n', &mut bytes)
        .map_err(|e| Error::io(&what, e))?;
    let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_PASSWORD {
        return Err(Error::Usage(format!(
            "{what}: the password is longer than {MAX_PASSWORD} bytes"
        )));
    }
    let password = String::from_utf8(line.to_vec())
        .map_err(|_| Error::Usage(format!("{what}: the password is not UTF-8")))?;
    if password.is_empty() {
        return Err(Error::Usage(format!("{what}: the password is empty")));
    }
    Ok(password)
}

/// The longest password read; bcrypt looks at 72 bytes, this only bounds the read.
const MAX_PASSWORD: usize = 1024;

/// `--hash-password`: a new bcrypt hash of `password` into `<home>/serve-auth.json`.
fn store_hash(args: &ServeArgs, password: &str) -> Result<i32, Error> {
    let home = home(args)?;
    let salt =
        auth::random_salt().map_err(|e| Error::io("reading random bytes from the kernel", e))?;
    let cost = args.cost.unwrap_or(bcrypt::DEFAULT_COST);
    let mut stored = auth_file::load(&home).map_err(|e| Error::Usage(e.to_string()))?;
    stored.password_hash = Some(bcrypt::hash_with_salt(password.as_bytes(), &salt, cost));
    auth_file::save(&home, &stored).map_err(|e| Error::Usage(e.to_string()))?;
    super::print_out(&format!(
        "stored a password hash in {}; start with `reasonix serve --auth password`\n",
        auth_file::path(&home).display()
    ));
    Ok(super::error::exit::OK)
}

/// `--migrate-auth`: `[serve] token` and `password_hash` of config.toml into
/// `<home>/serve-auth.json` (what the file already holds wins), then out of config.toml.
fn migrate_auth(args: &ServeArgs) -> Result<i32, Error> {
    let (_, home, loaded) = args.common.global.load_workspace()?;
    let legacy = loaded.config.serve;
    let config_path = crate::config::paths::config_file(&home);
    let shown = config_path.display().to_string();
    if legacy.token.is_none() && legacy.password_hash.is_none() {
        super::print_out(
            "nothing to move: the configuration holds no [serve] token or password_hash\n",
        );
        return Ok(super::error::exit::OK);
    }
    let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&shown, e))?;
    let stripped = auth_file::strip_legacy_keys(&text).filter(|stripped| *stripped != text);
    let Some(stripped) = stripped else {
        return Err(Error::Usage(format!(
            "{shown}: [serve] token or password_hash is not there as a plain line (an inline table, a multi-line string, or another --config file); move it to {} by hand",
            auth_file::path(&home).display()
        )));
    };
    let mut stored = auth_file::load(&home).map_err(|e| Error::Usage(e.to_string()))?;
    stored.token = stored.token.or(legacy.token);
    stored.password_hash = stored.password_hash.or(legacy.password_hash);
    auth_file::save(&home, &stored).map_err(|e| Error::Usage(e.to_string()))?;
    crate::fsutil::write_atomic(&config_path, stripped.as_bytes(), None)
        .map_err(|e| Error::io(&shown, e))?;
    super::print_out(&format!(
        "moved [serve] token/password_hash from {shown} to {}\n",
        auth_file::path(&home).display()
    ));
    Ok(super::error::exit::OK)
}

/// The reasonix home, as the configuration would find it.
fn home(args: &ServeArgs) -> Result<PathBuf, Error> {
    let cwd = assemble::working_dir()?;
    Ok(crate::config::LoadOptions::from_env(cwd, args.common.global.config.clone())?.home)
}

/// The auth mode from `--auth`/the password flags and `[serve]`, with the credentials of
/// `serve-auth.json` (or, until migrated, the legacy `[serve]` keys).
fn auth_mode(
    args: &ServeArgs,
    password: Option<String>,
    stored: &auth_file::Stored,
    config: &Config,
) -> Result<auth::Mode, Error> {
    let mode = match args.auth.as_deref() {
        Some("none") => AuthMode::NoAuth,
        Some("token") => AuthMode::Token,
        Some("password") => AuthMode::Password,
        Some(other) => {
            return Err(Error::Usage(format!(
                "--auth {other}: use none, token or password"
            )))
        }
        None if password.is_some() => AuthMode::Password,
        None => config.serve.auth_mode,
    };
    let random = || {
        auth::random_hex(auth::TOKEN_BYTES)
            .map_err(|e| Error::io("reading random bytes from the kernel", e))
    };
    let present = |value: &Option<String>| value.clone().filter(|v| !v.trim().is_empty());
    Ok(match mode {
        AuthMode::NoAuth => auth::Mode::None(random()?),
        AuthMode::Token => {
            let configured = present(&stored.token).or_else(|| present(&config.serve.token));
            let token = match configured {
                Some(token) if token.len() < auth::MIN_TOKEN_LEN => {
                    return Err(Error::Usage(format!(
                        "the token of {} is shorter than {} characters: use a long random one (`head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`) or remove it for a new random one each run",
                        auth_file::FILE,
                        auth::MIN_TOKEN_LEN
                    )))
                }
                Some(token) => token,
                None => random()?,
            };
            auth::Mode::Token(token)
        }
        AuthMode::Password => {
            if let Some(password) = password {
                auth::Mode::Password(auth::Secret::Plain(password))
            } else if let Some(hash) =
                present(&stored.password_hash).or_else(|| present(&config.serve.password_hash))
            {
                let cost = bcrypt::check(&hash).map_err(|e| {
                    Error::Usage(format!("{}: password_hash: {e}", auth_file::FILE))
                })?;
                if cost < bcrypt::MIN_COST {
                    return Err(Error::Usage(format!(
                        "{}: password_hash has bcrypt cost {cost}, below {}: make a new one with `reasonix serve --hash-password --password-stdin`",
                        auth_file::FILE,
                        bcrypt::MIN_COST
                    )));
                }
                auth::Mode::Password(auth::Secret::Hash(hash))
            } else {
                return Err(Error::Usage(format!(
                    "password mode needs --password-stdin, --password-file FILE or a password_hash in {} (store one with `reasonix serve --hash-password --password-stdin`)",
                    auth_file::FILE
                )));
            }
        }
    })
}

struct ServeFactory {
    config: Config,
    settings: ProviderSettings,
    cwd: PathBuf,
    posture: Posture,
    effort: Option<String>,
    trust_project_mcp: bool,
    /// `--agent-composition`: what a new conversation is bound to unless the page says.
    composition: Option<String>,
}

impl ServeFactory {
    /// The same assembly as `reasonix run` (`app::conversation`): the composition binding
    /// first (it edits the configuration), then the MCP servers it keeps, started under the
    /// usual launch rules (no one can answer a launch approval here), then the tools, the
    /// session and the agent.
    fn build_runner(
        &self,
        open: &Open,
        approver: Box<dyn Approver>,
        interact: Arc<dyn Interact>,
    ) -> Result<Built, Error> {
        let composition = match (&open.composition, &open.resume) {
            (Some(id), _) => Some(id.clone()),
            (None, None) => self.composition.clone(),
            (None, Some(_)) => None,
        };
        let options = ConversationOptions {
            model: open.model.clone(),
            composition,
            resume: open.resume.clone(),
            posture: self.posture,
            effort: self.effort.clone(),
            trust_project_mcp: self.trust_project_mcp,
        };
        let opened =
            conversation::open(&self.config, &self.settings, &self.cwd, &options, approver)?;
        let mut runner = opened.runner;
        runner.set_interact(interact);
        let mcp_status = mcp_status(opened.mcp.handle(), &opened.registered, opened.notices);
        let commands = Commands::new(opened.commands.commands, opened.mcp.prompts());
        Ok(Built {
            runner,
            gate: opened.gate,
            commands,
            mcp: opened.mcp,
            mcp_status,
            binding: opened.binding,
            model: format!("{}/{}", opened.settings.name, opened.settings.model),
            cwd: self.cwd.clone(),
        })
    }
}

/// Each declared server of a session: its state (`connected`, `failed`, `skipped` when it
/// may not launch), why, and the tools it gave the session; plus the start-up notices.
fn mcp_status(handle: &McpHandle, names: &[String], notices: Vec<String>) -> Value {
    let servers: Vec<Value> = handle
        .statuses()
        .iter()
        .map(|status| {
            let (state, detail) = match &status.state {
                ServerState::Connected => ("connected", None),
                ServerState::Failed(why) => ("failed", Some(why.clone())),
                ServerState::Skipped(why) => ("skipped", Some(why.clone())),
            };
            let prefix = format!("mcp__{}__", crate::mcp::adapter::sanitize(&status.name));
            let tools: Vec<&String> = names.iter().filter(|n| n.starts_with(&prefix)).collect();
            json!({
                "name": status.name,
                "transport": status.transport,
                "origin": status.origin.describe(),
                "state": state,
                "detail": detail,
                "tools": tools,
            })
        })
        .collect();
    json!({"servers": servers, "notices": notices})
}

impl Factory for ServeFactory {
    fn build(
        &self,
        open: &Open,
        approver: Box<dyn Approver>,
        interact: Arc<dyn Interact>,
    ) -> Result<Built, Refused> {
        self.build_runner(open, approver, interact)
            .map_err(|e| match e {
                Error::Composition(err) => Refused::Composition(err),
                other => Refused::Other(other.to_string()),
            })
    }

    fn home(&self) -> PathBuf {
        self.config.home.clone()
    }

    fn cwd(&self) -> PathBuf {
        self.cwd.clone()
    }

    fn stored(&self) -> Vec<Summary> {
        session::list(&crate::config::paths::sessions_dir(
            &self.config.home,
            &self.cwd,
        ))
    }

    fn models(&self) -> Value {
        let mut models = Vec::new();
        for provider in &self.config.providers {
            for model in provider.model_names() {
                models.push(format!("{}/{model}", provider.name));
            }
        }
        json!({
            "current": format!("{}/{}", self.settings.name, self.settings.model),
            "models": models,
            "context_window": self.settings.context_window,
        })
    }

    fn switch_model(&self, reference: &str) -> Result<Switch, String> {
        let settings = self
            .config
            .resolve_model(Some(reference))
            .map_err(|e| e.to_string())?;
        assemble::check_key(&settings).map_err(|e| e.to_string())?;
        let name = format!("{}/{}", settings.name, settings.model);
        let prices = settings.prices;
        let provider = provider::build(settings).map_err(|e| e.to_string())?;
        Ok(Switch {
            provider,
            prices,
            name,
        })
    }

    fn mcp(&self) -> Value {
        let declared = crate::mcp::config::declared(&self.config, &self.cwd);
        let servers: Vec<Value> = declared
            .servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "transport": s.transport_name(),
                    "origin": s.origin.describe(),
                    "needs_grant": s.origin.needs_grant() && !self.trust_project_mcp,
                })
            })
            .collect();
        json!({"servers": servers, "problems": declared.problems})
    }

    fn compositions(&self) -> (Catalog, Available) {
        (
            Catalog::new(&self.config.home, &self.cwd),
            crate::app::binding::available(&self.config, &self.cwd),
        )
    }
}
