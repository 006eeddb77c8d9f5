//! The top-level error type and its mapping to exit codes. Every module's error converts into
//! it; only `cli` turns it into a message and an exit code.

use std::fmt;

use crate::agent::session::SessionError;
use crate::composition::CompositionError;
use crate::config::ConfigError;
use crate::mcp::McpError;
use crate::provider::ProviderError;

/// Exit codes, documented in the README.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILURE: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const AUTH: i32 = 3;
    pub const MAX_STEPS: i32 = 4;
    /// The progress lease ran out: a todo was active and rounds went by with nothing new.
    pub const NO_PROGRESS: i32 = 5;
    /// An agent composition refused (`agent_composition.*` codes).
    pub const COMPOSITION: i32 = 6;
    pub const INTERRUPTED: i32 = crate::cancel::INTERRUPTED_EXIT;
    /// Stdout was a pipe whose reader went away (`reasonix run ... | head -1`): the run
    /// stopped quietly, with the status a shell shows for a command killed by SIGPIPE.
    pub const OUTPUT_CLOSED: i32 = 141;
}

#[derive(Debug)]
pub enum Error {
    /// Bad command line: unknown flag, missing value, empty prompt.
    Usage(String),
    Config(ConfigError),
    Provider(ProviderError),
    /// A session file that cannot be created, opened, locked or written.
    Session(SessionError),
    /// An MCP server that failed a request the command depended on.
    Mcp(McpError),
    /// An agent composition refusal, printed as `code: message`.
    Composition(CompositionError),
    /// A file or other I/O failure, with what we were doing.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// Anything else that ends the run with status 1.
    Failed(String),
    Interrupted,
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Config(_) => exit::USAGE,
            Error::Provider(err) => provider_exit_code(err),
            Error::Interrupted => exit::INTERRUPTED,
            Error::Composition(_) => exit::COMPOSITION,
            Error::Mcp(McpError::Cancelled) => exit::INTERRUPTED,
            Error::Io { .. } | Error::Failed(_) | Error::Session(_) | Error::Mcp(_) => {
                exit::FAILURE
            }
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// Authentication failures exit 3 so CI can tell a bad key from a failed task.
pub fn provider_exit_code(err: &ProviderError) -> i32 {
    match err {
        ProviderError::Auth { .. } | ProviderError::MissingKey { .. } => exit::AUTH,
        ProviderError::Cancelled => exit::INTERRUPTED,
        ProviderError::Config(_) => exit::USAGE,
        _ => exit::FAILURE,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(detail) => write!(f, "{detail}"),
            Error::Config(err) => write!(f, "{err}"),
            Error::Provider(err) => write!(f, "{err}"),
            Error::Session(err) => write!(f, "{err}"),
            Error::Mcp(err) => write!(f, "{err}"),
            Error::Composition(err) => write!(f, "{err}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Failed(detail) => write!(f, "{detail}"),
            Error::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Config(err) => Some(err),
            Error::Provider(err) => Some(err),
            Error::Session(err) => Some(err),
            Error::Mcp(err) => Some(err),
            Error::Composition(err) => Some(err),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `From<$source> for Error`, wrapping it in `Error::$variant`, so `?` lifts each module's
/// error into the top-level one.
macro_rules! wrap_errors {
    ($($source:ty => $variant:ident),* $(,)?) => {$(
        impl From<$source> for Error {
            fn from(err: $source) -> Self {
                Error::$variant(err)
            }
        }
    )*};
}

wrap_errors! {
    ConfigError => Config,
    ProviderError => Provider,
    SessionError => Session,
    McpError => Mcp,
    CompositionError => Composition,
}

/// The assembly layer's refusals keep their detail without its "app: " area: the CLI says
/// them as its own, "reasonix: detail", with the exit code of their kind.
impl From<crate::app::Error> for Error {
    fn from(err: crate::app::Error) -> Self {
        use crate::app::Error as App;
        match err {
            App::Usage(detail) => Error::Usage(detail),
            App::Failed(detail) => Error::Failed(detail),
            App::Io { context, source } => Error::Io { context, source },
            App::Config(err) => Error::Config(err),
            App::Provider(err) => Error::Provider(err),
            App::Session(err) => Error::Session(err),
            App::Mcp(err) => Error::Mcp(err),
            App::Composition(err) => Error::Composition(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_failures_exit_3_and_usage_exits_2() {
        let auth = Error::Provider(ProviderError::Auth {
            status: 401,
            api_key_env: "DEEPSEEK_API_KEY".into(),
            message: "bad key".into(),
        });
        assert_eq!(auth.exit_code(), 3);
        assert!(auth.to_string().contains("$DEEPSEEK_API_KEY"));
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Interrupted.exit_code(), 130);
    }

    #[test]
    fn app_refusals_are_said_as_the_cli_s_own_with_their_exit_codes() {
        let usage = Error::from(crate::app::Error::Usage("no session to continue".into()));
        assert_eq!(usage.to_string(), "no session to continue");
        assert_eq!(usage.exit_code(), exit::USAGE);
        let io = Error::from(crate::app::Error::io(
            "reading the working directory",
            std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        ));
        assert_eq!(io.to_string(), "reading the working directory: gone");
        assert_eq!(io.exit_code(), exit::FAILURE);
        let composition = Error::from(crate::app::Error::Composition(CompositionError::new(
            crate::composition::Code::Locked,
            "bound".to_string(),
        )));
        assert_eq!(composition.exit_code(), exit::COMPOSITION);
    }
}
