//! `reasonix doctor`: checks config, model resolution, the provider key, endpoint
//! reachability and the session store, and prints a pass/fail table.

use std::time::Duration;

use super::lex::Lexer;
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::config::{self, LoadOptions};
use crate::i18n::{tr, trf, Lang, Ui};
use crate::term::width::str_width;

pub const HELP: &str = "\
Usage: reasonix doctor [-m, --model REF]

Checks the configuration, model resolution, the provider key, that the endpoint answers
(one request to its models URL, 10 s timeout), which jail bash runs in with the protections
in force (and, under Landlock, what it cannot stop), and that the session store is writable.
Prints one row per check; exits 1 when any check fails.
";

const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Pass,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Pass => tr(Ui::DoctorPass),
            Status::Warn => tr(Ui::DoctorWarn),
            Status::Fail => tr(Ui::DoctorFail),
        }
    }
}

struct Row {
    check: Ui,
    status: Status,
    detail: String,
}

/// The rows under a header, columns padded by display width (Chinese labels are two columns
/// a character).
fn table(rows: &[Row]) -> String {
    let pad = |text: &str, width: usize| {
        format!(
            "{text}{}",
            " ".repeat(width.saturating_sub(str_width(text)))
        )
    };
    let header = tr(Ui::DoctorCheck);
    let width = rows
        .iter()
        .map(|r| str_width(tr(r.check)))
        .chain([str_width(header)])
        .max()
        .unwrap_or(5);
    let status = tr(Ui::DoctorStatus);
    let status_width = [Status::Pass, Status::Warn, Status::Fail]
        .iter()
        .map(|s| str_width(s.label()))
        .chain([str_width(status)])
        .max()
        .unwrap_or(6);
    let mut text = format!(
        "{}  {}  {}\n",
        pad(header, width),
        pad(status, status_width),
        tr(Ui::DoctorDetail)
    );
    for row in rows {
        text.push_str(&format!(
            "{}  {}  {}\n",
            pad(tr(row.check), width),
            pad(row.status.label(), status_width),
            crate::term::sanitize::sanitize(&row.detail)
        ));
    }
    text
}

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut model = None;
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match arg {
            // `-m` as `run`, `chat` and `serve` take it.
            super::lex::Arg::Long(ref n) if n == "model" => {
                model = Some(lexer.value("--model").map_err(Error::Usage)?)
            }
            super::lex::Arg::Short('m') => model = Some(lexer.value("-m").map_err(Error::Usage)?),
            other => return Err(unknown_flag("doctor", &other)),
        }
    }
    global.enter_dir()?;
    let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
    let rows = checks(&global, cwd, model.as_deref());
    print_out(&table(&rows));
    let failed = rows.iter().any(|r| r.status == Status::Fail);
    Ok(if failed { exit::FAILURE } else { exit::OK })
}

fn checks(global: &Global, cwd: std::path::PathBuf, model: Option<&str>) -> Vec<Row> {
    let mut rows = vec![Row {
        check: Ui::CheckVersion,
        status: Status::Pass,
        detail: super::version_line(),
    }];
    let options = match LoadOptions::from_env(cwd.clone(), global.config.clone()) {
        Ok(options) => options,
        Err(err) => {
            rows.push(Row {
                check: Ui::CheckConfig,
                status: Status::Fail,
                detail: err.to_string(),
            });
            return rows;
        }
    };
    let loaded = match config::load(&options) {
        Ok(loaded) => {
            crate::i18n::set(Lang::from_env(loaded.config.language.as_deref()));
            loaded
        }
        Err(err) => {
            rows.push(Row {
                check: Ui::CheckConfig,
                status: Status::Fail,
                detail: err.to_string(),
            });
            return rows;
        }
    };
    rows.push(Row {
        check: Ui::CheckConfig,
        status: if loaded.warnings.is_empty() {
            Status::Pass
        } else {
            Status::Warn
        },
        detail: match loaded.warnings.first() {
            None => trf(Ui::DoctorHome, &[&options.home.display()]),
            Some(first) => trf(Ui::DoctorWarnings, &[&loaded.warnings.len(), first]),
        },
    });
    let settings = match loaded.config.resolve_model(model) {
        Ok(settings) => settings,
        Err(err) => {
            rows.push(Row {
                check: Ui::CheckModel,
                status: Status::Fail,
                detail: err.to_string(),
            });
            return rows;
        }
    };
    rows.push(Row {
        check: Ui::CheckModel,
        status: Status::Pass,
        detail: format!(
            "{}/{} ({})",
            settings.name, settings.model, settings.base_url
        ),
    });
    rows.push(key_row(&settings, &options.home));
    rows.push(
        match crate::provider::openai::probe(&settings, PROBE_TIMEOUT) {
            Ok(report) => endpoint_row(&report, &settings.api_key_env),
            Err(err) => Row {
                check: Ui::CheckEndpoint,
                status: Status::Fail,
                detail: err.to_string(),
            },
        },
    );
    rows.extend(sandbox_rows(&loaded.config, &cwd));
    let sessions = config::paths::sessions_dir(&loaded.config.home, &cwd);
    rows.push(match std::fs::create_dir_all(&sessions) {
        Ok(()) => Row {
            check: Ui::CheckSessions,
            status: Status::Pass,
            detail: sessions.display().to_string(),
        },
        Err(err) => Row {
            check: Ui::CheckSessions,
            status: Status::Fail,
            detail: format!("{}: {err}", sessions.display()),
        },
    });
    rows
}

/// The bash jail: which backend, the protections in force and, for the Landlock fallback, what
/// it cannot stop (a warning that recommends bubblewrap).
fn sandbox_rows(config: &config::Config, cwd: &std::path::Path) -> Vec<Row> {
    let settings = match crate::app::assemble::sandbox_settings(config, cwd) {
        Ok(settings) => settings,
        Err(err) => {
            return vec![Row {
                check: Ui::CheckSandbox,
                status: Status::Fail,
                detail: err.to_string(),
            }]
        }
    };
    let policy = crate::sandbox::Policy::new(settings);
    let report = crate::sandbox::describe_backend(&policy);
    let status = match (report.active, policy.bash) {
        (Some(_), _) => Status::Pass,
        (None, crate::sandbox::BashMode::Off) => Status::Warn,
        (None, crate::sandbox::BashMode::Enforce) => Status::Fail,
    };
    let mut rows = vec![Row {
        check: Ui::CheckSandbox,
        status,
        detail: report.reason,
    }];
    if let Some(protections) =
        crate::sandbox::protections_on(&policy, crate::sandbox::Host::current())
    {
        rows.push(Row {
            check: Ui::CheckJail,
            status: Status::Pass,
            detail: protections.active.join("; "),
        });
        if !protections.gaps.is_empty() {
            rows.push(Row {
                check: Ui::CheckJailLimits,
                status: Status::Warn,
                detail: protections.gaps.join("; "),
            });
        }
    }
    rows
}

/// Where the key came from: the environment variable, or the key store in the reasonix home
/// (the order `config::resolve` looks them up in).
fn key_row(settings: &crate::provider::ProviderSettings, home: &std::path::Path) -> Row {
    let local = settings.base_url.starts_with("http://");
    let name = &settings.api_key_env;
    let store = config::paths::env_file(home);
    let (status, detail) = match &settings.api_key {
        Some(_) if std::env::var_os(name).is_some_and(|v| !v.is_empty()) => {
            (Status::Pass, trf(Ui::KeyFromEnv, &[name]))
        }
        Some(_) => (
            Status::Pass,
            trf(Ui::KeyFromStore, &[name, &store.display()]),
        ),
        None if name.is_empty() && local => {
            (Status::Pass, trf(Ui::KeyNoneNeeded, &[&settings.name]))
        }
        None if name.is_empty() => (Status::Fail, trf(Ui::KeyNoEnvName, &[&settings.name])),
        None if local => (
            Status::Warn,
            trf(Ui::KeyMissingLocal, &[name, &store.display()]),
        ),
        None => (Status::Fail, trf(Ui::KeyMissing, &[name, &store.display()])),
    };
    Row {
        check: Ui::CheckApiKey,
        status,
        detail,
    }
}

fn endpoint_row(report: &crate::provider::openai::ProbeReport, api_key_env: &str) -> Row {
    let mut detail = trf(
        Ui::EndpointAnswered,
        &[&report.status, &report.latency.as_millis(), &report.url],
    );
    if let Some(count) = report.models {
        detail.push_str(&trf(Ui::EndpointModels, &[&count]));
    }
    if report.url.starts_with("https://") {
        detail.push_str(&trf(Ui::EndpointTlsRoots, &[&report.tls_roots]));
    }
    let status = match report.status {
        200..=299 => Status::Pass,
        401 | 403 if api_key_env.is_empty() => {
            detail.push_str(tr(Ui::EndpointWantsKey));
            Status::Fail
        }
        401 | 403 => {
            detail.push_str(&trf(Ui::EndpointRejectedKey, &[&api_key_env]));
            Status::Fail
        }
        // The server answered but has no models listing; chat may still work.
        404 | 405 => Status::Warn,
        _ => Status::Fail,
    };
    if !report.message.is_empty() {
        detail.push_str(&format!(" ({})", report.message));
    }
    Row {
        check: Ui::CheckEndpoint,
        status,
        detail,
    }
}
