//! The assembly layer's one error type. The wrapped errors of the layers below keep their own
//! messages; what `app` itself refuses reads "app: detail". A front end turns it into its own
//! error (the CLI's exit codes, the browser's refusals) and says it; `app` prints nothing.

use std::fmt;

use crate::agent::session::SessionError;
use crate::composition::CompositionError;
use crate::config::ConfigError;
use crate::mcp::McpError;
use crate::provider::ProviderError;

#[derive(Debug)]
pub enum Error {
    /// Options that cannot be honoured as given (no session to continue, a malformed rule,
    /// a budget without prices): the front end reports it as a usage error.
    Usage(String),
    Config(ConfigError),
    Provider(ProviderError),
    /// A session file that cannot be created, opened, locked or written.
    Session(SessionError),
    /// An MCP server that failed a request the session depended on.
    Mcp(McpError),
    /// An agent composition refusal (`agent_composition.*`).
    Composition(CompositionError),
    /// A file or other I/O failure, with what was being done.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// Anything else that stops the session from opening.
    Failed(String),
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(detail) | Error::Failed(detail) => write!(f, "app: {detail}"),
            Error::Io { context, source } => write!(f, "app: {context}: {source}"),
            Error::Config(err) => write!(f, "{err}"),
            Error::Provider(err) => write!(f, "{err}"),
            Error::Session(err) => write!(f, "{err}"),
            Error::Mcp(err) => write!(f, "{err}"),
            Error::Composition(err) => write!(f, "{err}"),
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
            Error::Usage(_) | Error::Failed(_) => None,
        }
    }
}

/// `From<$source> for Error`, wrapping it in `Error::$variant`, so `?` lifts each lower
/// layer's error into this one.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_refusals_name_the_area_and_wrapped_errors_keep_theirs() {
        assert_eq!(
            Error::Usage("no session to continue".into()).to_string(),
            "app: no session to continue"
        );
        let io = Error::io(
            "reading the working directory",
            std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        );
        assert_eq!(io.to_string(), "app: reading the working directory: gone");
        let missing = Error::from(ProviderError::MissingKey {
            provider: "deepseek".into(),
            api_key_env: "DEEPSEEK_API_KEY".into(),
        });
        assert!(!missing.to_string().starts_with("app: "), "{missing}");
    }
}
