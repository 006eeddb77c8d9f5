//! `--fallback-model`: when the model stays overloaded, the turn goes on with a second model
//! instead of failing, as Claude Code's flag of that name does. Only a request that failed
//! before any of its reply arrived is sent again, so nothing already shown is repeated; the
//! next turn tries the primary model first again.
//!
//! What counts is an HTTP status the provider gave up on: 529 and 503 (overloaded: with a
//! fallback, the provider gives up after [`AFTER_OVERLOADS`] of them in a row, as Claude Code
//! does, not after its whole retry budget), another 5xx once the retries are spent (a server
//! error), 404 (the model is unknown there). A 429 is the
//! account's rate limit, which another model on the same account would meet too, and an
//! authentication, request or connection error is not the model's: none of them switches.

use std::fmt;
use std::sync::Arc;

use crate::provider::{Prices, Provider, ProviderError, RetryPolicy};

/// The second model and its prices.
#[derive(Clone)]
pub struct Fallback {
    pub provider: Arc<dyn Provider>,
    pub prices: Option<Prices>,
}

impl fmt::Debug for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fallback")
            .field("provider", &self.provider.name())
            .field("model", &self.provider.model())
            .field("prices", &self.prices)
            .finish()
    }
}

/// Why a turn switched, in Claude Code's words for its `model_fallback` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// 529 or 503 after the retries.
    Overloaded,
    /// Another 5xx after the retries.
    ServerError,
    /// 404: the server does not know the model.
    ModelNotFound,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Overloaded => "overloaded",
            Trigger::ServerError => "server_error",
            Trigger::ModelNotFound => "model_not_found",
        }
    }
}

/// Whether `err`, the final error of a request to the primary model, switches the turn to the
/// fallback model, and why.
pub fn trigger(err: &ProviderError) -> Option<Trigger> {
    match err {
        ProviderError::Http {
            status: 503 | 529, ..
        } => Some(Trigger::Overloaded),
        ProviderError::Http { status, .. } if (500..=599).contains(status) => {
            Some(Trigger::ServerError)
        }
        ProviderError::Http { status: 404, .. } => Some(Trigger::ModelNotFound),
        _ => None,
    }
}

/// Overloaded answers in a row after which a request stops retrying and the fallback takes
/// over, as Claude Code's does (it switches after the third 529).
pub const AFTER_OVERLOADS: u32 = 3;

/// The retries of a model that has a fallback: an overloaded server is not waited out for the
/// whole retry budget; after [`AFTER_OVERLOADS`] overloaded answers the fallback answers.
pub fn hand_over_early(policy: &mut RetryPolicy) {
    policy.overloaded_attempts = Some(AFTER_OVERLOADS);
}

/// Claude Code's `content` of its `model_fallback` message for `trigger`.
pub fn claude_content(trigger: &str, from: &str, to: &str, reason: &str) -> String {
    match trigger {
        "model_not_found" => format!("Switched to {to} because {from} is not available ({reason})"),
        _ => format!("Switched to {to} due to high demand for {from}"),
    }
}

/// The line a front end shows when a turn switches.
pub fn describe(from: &str, to: &str, reason: &str) -> String {
    format!("model `{from}` failed ({reason}); this turn goes on with the fallback model `{to}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16) -> ProviderError {
        ProviderError::Http {
            status,
            message: "busy".into(),
        }
    }

    #[test]
    fn only_an_overloaded_failing_or_unknown_model_switches() {
        assert_eq!(trigger(&http(529)), Some(Trigger::Overloaded));
        assert_eq!(trigger(&http(503)), Some(Trigger::Overloaded));
        assert_eq!(trigger(&http(500)), Some(Trigger::ServerError));
        assert_eq!(trigger(&http(502)), Some(Trigger::ServerError));
        assert_eq!(trigger(&http(599)), Some(Trigger::ServerError));
        assert_eq!(trigger(&http(404)), Some(Trigger::ModelNotFound));
        for status in [400, 401, 403, 408, 413, 429, 600] {
            assert_eq!(trigger(&http(status)), None, "HTTP {status}");
        }
        assert_eq!(
            trigger(&ProviderError::Auth {
                status: 401,
                api_key_env: "K".into(),
                message: "no".into()
            }),
            None
        );
        assert_eq!(trigger(&ProviderError::Cancelled), None);
        assert_eq!(
            trigger(&ProviderError::Connect("refused".into())),
            None,
            "a dead endpoint is not an overloaded model"
        );
    }

    #[test]
    fn triggers_read_as_claude_codes() {
        assert_eq!(Trigger::Overloaded.as_str(), "overloaded");
        assert_eq!(Trigger::ServerError.as_str(), "server_error");
        assert_eq!(Trigger::ModelNotFound.as_str(), "model_not_found");
    }
}
