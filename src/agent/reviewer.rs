//! The Guardian reviewer's model session (SPEC §3.7, `approvals_reviewer = "auto_review"`):
//! one bounded request per review through the session's provider code, on the reviewer's
//! model (`[agent] reviewer_model`, else the executor's). What is asked and how a reply
//! becomes a verdict is `permission::guardian`'s; what a missing verdict degrades to is the
//! gate's. This module owns the request: its deadline, its output caps and what it cost.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::tokens;
use crate::cancel::CancelToken;
use crate::config::{AgentConfig, ApprovalsReviewer, Config, ConfigError};
use crate::permission::guardian::{self, MAX_REPLY_BYTES};
use crate::permission::{Review, ReviewOutcome, ReviewRequest, ReviewSpend, Reviewer};
use crate::provider::{Chunk, Prices, Provider, ProviderError, ProviderSettings, Request, Usage};

/// The most retries of one review request: a review that keeps failing goes to a person
/// rather than holding the call up.
const MAX_REVIEW_RETRIES: u32 = 2;

/// The reviewer's provider settings when any server of `config` asks for `auto_review`:
/// `[agent] reviewer_model` resolved (else the executor's `executor`), with every timeout
/// held to the review's timeout and few retries. `None` when no server asks for review.
pub fn settings(
    config: &Config,
    executor: &ProviderSettings,
) -> Result<Option<ProviderSettings>, ConfigError> {
    let wanted = config
        .plugins
        .iter()
        .any(|p| p.approvals_reviewer == ApprovalsReviewer::AutoReview);
    if !wanted {
        return Ok(None);
    }
    let reference = config
        .agent
        .reviewer_model
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    let mut settings = match reference {
        Some(reference) => config.resolve_model(Some(reference))?,
        None => executor.clone(),
    };
    // The recording of a run is the executor's; a review is not replayed from it.
    settings.record_file = None;
    let limit = timeout(&config.agent);
    let timeouts = &mut settings.timeouts;
    timeouts.connect = timeouts.connect.min(limit);
    timeouts.idle_stream = timeouts.idle_stream.min(limit);
    timeouts.head = timeouts.head.min(limit);
    timeouts.reply = timeouts.reply.min(limit);
    let retry = &mut settings.retry;
    retry.max_retries = retry.max_retries.min(MAX_REVIEW_RETRIES);
    retry.max_total_wait = retry.max_total_wait.min(limit);
    Ok(Some(settings))
}

/// `[agent] reviewer_timeout_seconds`, at least a second (the loader saturates it too).
fn timeout(agent: &AgentConfig) -> Duration {
    Duration::from_secs(
        agent
            .reviewer_timeout_seconds
            .clamp(1, crate::config::MAX_TIMEOUT_SECONDS),
    )
}

/// A [`Reviewer`] asking a model: one request per review, on its own thread so the review
/// ends at its deadline whatever the connection does.
pub struct ModelReviewer {
    provider: Arc<dyn Provider>,
    prices: Option<Prices>,
    timeout: Duration,
    max_tokens: u64,
}

impl ModelReviewer {
    /// The reviewer over `provider` (built from [`settings`]), bounded by `agent`'s
    /// `reviewer_timeout_seconds` and `reviewer_max_tokens`.
    pub fn new(provider: Box<dyn Provider>, prices: Option<Prices>, agent: &AgentConfig) -> Self {
        ModelReviewer {
            provider: Arc::from(provider),
            prices,
            timeout: timeout(agent),
            max_tokens: agent.reviewer_max_tokens.clamp(
                crate::config::MIN_REVIEWER_TOKENS,
                crate::config::MAX_REVIEWER_TOKENS,
            ),
        }
    }
}

/// What came back from one review request.
struct Answer {
    text: String,
    usage: Usage,
    /// The reply went past [`MAX_REPLY_BYTES`] and was not read further.
    too_long: bool,
}

impl Reviewer for ModelReviewer {
    fn review(&self, request: &ReviewRequest) -> Review {
        let body = guardian::review_request(request, self.max_tokens);
        let cancel = CancelToken::new();
        // An interrupted turn ends its review: the worker's request is cancelled and the wait
        // below ends with the worker's answer.
        let relay = cancel.clone();
        let _interrupt = request.cancel.on_cancel(move || relay.cancel());
        let (tx, rx) = mpsc::channel();
        let provider = Arc::clone(&self.provider);
        let worker_cancel = cancel.clone();
        let spawned = thread::Builder::new()
            .name("reasonix-reviewer".into())
            .spawn(move || {
                let _ = tx.send(ask(provider.as_ref(), &body, &worker_cancel));
            });
        if let Err(err) = spawned {
            return Review::failed(format!("the reviewer could not start: {err}"));
        }
        let answer = match rx.recv_timeout(self.timeout) {
            Ok(_) if request.cancel.is_cancelled() => {
                return Review::failed("the turn was interrupted during the review")
            }
            Ok(Ok(answer)) => answer,
            Ok(Err(err)) => return Review::failed(format!("the reviewer's request failed: {err}")),
            Err(RecvTimeoutError::Timeout) => {
                // The worker's connection is shut by the cancel; it ends on its own.
                cancel.cancel();
                return Review::failed(format!(
                    "the reviewer gave no verdict within {} s",
                    self.timeout.as_secs()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Review::failed("the reviewer stopped without an answer")
            }
        };
        let spend = ReviewSpend {
            model: self.provider.model().to_string(),
            usage: answer.usage,
            cost_usd: self.prices.map(|p| p.cost(&answer.usage)),
        };
        let outcome = if answer.too_long {
            ReviewOutcome::Failed(format!(
                "the reviewer's reply is longer than {MAX_REPLY_BYTES} bytes"
            ))
        } else {
            guardian::parse_verdict(&answer.text)
        };
        Review {
            outcome,
            spend: Some(spend),
        }
    }
}

/// One review request, read to its end (or to the reply cap).
fn ask(
    provider: &dyn Provider,
    request: &Request,
    cancel: &CancelToken,
) -> Result<Answer, ProviderError> {
    let stream = provider.stream(request, cancel, &mut |_| {})?;
    let mut text = String::new();
    let mut usage = None;
    let mut too_long = false;
    for chunk in stream {
        match chunk? {
            Chunk::Text(piece) if text.len() + piece.len() <= MAX_REPLY_BYTES => {
                text.push_str(&piece)
            }
            Chunk::Text(_) => {
                too_long = true;
                break;
            }
            Chunk::Usage(reported) => usage = Some(reported),
            Chunk::Reasoning(_) | Chunk::ToolCall(_) | Chunk::Done { .. } => {}
        }
    }
    let usage = usage.unwrap_or_else(|| Usage {
        prompt_tokens: tokens::estimate_messages(&request.messages),
        completion_tokens: tokens::estimate_text(&text),
        estimated: true,
        ..Usage::default()
    });
    Ok(Answer {
        text,
        usage,
        too_long,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PluginConfig;
    use serde_json::json;
    use std::sync::Mutex;

    /// Answers with `reply` (or never, until cancelled), and remembers the requests.
    struct Scripted {
        reply: Option<&'static str>,
        seen: Mutex<Vec<Request>>,
    }

    impl Provider for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }
        fn model(&self) -> &str {
            "judge"
        }
        fn stream(
            &self,
            request: &Request,
            cancel: &CancelToken,
            _: &mut dyn FnMut(&crate::provider::Retry),
        ) -> Result<crate::provider::ChunkStream, ProviderError> {
            self.seen.lock().unwrap().push(request.clone());
            let Some(reply) = self.reply else {
                // A reply that never comes: wait for the cancel the deadline sends.
                let (tx, rx) = mpsc::channel::<()>();
                let _guard = cancel.on_cancel(move || {
                    let _ = tx.send(());
                });
                let _ = rx.recv();
                return Err(ProviderError::Cancelled);
            };
            let usage = Usage {
                prompt_tokens: 40,
                completion_tokens: 5,
                ..Usage::default()
            };
            let chunks = vec![Ok(Chunk::Text(reply.to_string())), Ok(Chunk::Usage(usage))];
            Ok(Box::new(chunks.into_iter()))
        }
    }

    fn reviewer(
        reply: Option<&'static str>,
        agent: &AgentConfig,
    ) -> (ModelReviewer, Arc<Scripted>) {
        let provider = Arc::new(Scripted {
            reply,
            seen: Mutex::new(Vec::new()),
        });
        let mut reviewer = ModelReviewer::new(Box::new(NoProvider), None, agent);
        reviewer.provider = Arc::clone(&provider) as Arc<dyn Provider>;
        (reviewer, provider)
    }

    struct NoProvider;

    impl Provider for NoProvider {
        fn name(&self) -> &str {
            "none"
        }
        fn model(&self) -> &str {
            "none"
        }
        fn stream(
            &self,
            _: &Request,
            _: &CancelToken,
            _: &mut dyn FnMut(&crate::provider::Retry),
        ) -> Result<crate::provider::ChunkStream, ProviderError> {
            Err(ProviderError::Cancelled)
        }
    }

    fn request() -> ReviewRequest {
        ReviewRequest {
            tool: "mcp__s__send".into(),
            subject: None,
            args: json!({"to": "x"}),
            why: "approval_mode = prompt".into(),
            context: String::new(),
            cancel: CancelToken::new(),
        }
    }

    #[test]
    fn a_verdict_comes_with_its_cost_and_the_request_is_bounded() {
        let agent = AgentConfig {
            reviewer_max_tokens: u64::MAX,
            ..AgentConfig::default()
        };
        let (reviewer, provider) =
            reviewer(Some(r#"{"decision":"deny","reason":"not asked"}"#), &agent);
        let review = reviewer.review(&request());
        assert_eq!(review.outcome, ReviewOutcome::Deny("not asked".into()));
        let spend = review.spend.expect("a cost");
        assert_eq!(
            (spend.model.as_str(), spend.usage.prompt_tokens),
            ("judge", 40)
        );
        let seen = provider.seen.lock().unwrap();
        assert_eq!(
            seen[0].max_tokens,
            Some(crate::config::MAX_REVIEWER_TOKENS),
            "the output cap is clamped"
        );
        assert!(seen[0].tools.is_empty(), "a reviewer calls no tools");
    }

    #[test]
    fn a_reply_that_never_comes_fails_at_the_deadline() {
        let agent = AgentConfig {
            reviewer_timeout_seconds: 0,
            ..AgentConfig::default()
        };
        let (reviewer, _) = reviewer(None, &agent);
        let review = reviewer.review(&request());
        match review.outcome {
            ReviewOutcome::Failed(why) => assert!(why.contains("within 1 s"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(review.spend, None);
    }

    #[test]
    fn an_interrupted_turn_ends_its_review_at_once() {
        let agent = AgentConfig {
            reviewer_timeout_seconds: crate::config::MAX_TIMEOUT_SECONDS,
            ..AgentConfig::default()
        };
        let (reviewer, _) = reviewer(None, &agent);
        let request = request();
        request.cancel.cancel();
        match reviewer.review(&request).outcome {
            ReviewOutcome::Failed(why) => assert!(why.contains("interrupted"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn settings_exist_only_when_a_server_asks_for_review_and_are_bounded() {
        let mut config = Config::default();
        let executor = ProviderSettings {
            model: "exec".into(),
            ..ProviderSettings::default()
        };
        assert_eq!(settings(&config, &executor).unwrap(), None);
        let mut plugin: PluginConfig =
            toml::from_str("name = \"s\"\ncommand = \"x\"\napprovals_reviewer = \"auto_review\"")
                .unwrap();
        plugin.origin = crate::config::Layer::User;
        config.plugins.push(plugin);
        config.agent.reviewer_timeout_seconds = 5;
        let reviewer = settings(&config, &executor).unwrap().expect("settings");
        assert_eq!(reviewer.model, "exec", "the executor's model by default");
        assert_eq!(reviewer.timeouts.reply, Duration::from_secs(5));
        assert_eq!(reviewer.timeouts.head, Duration::from_secs(5));
        assert!(reviewer.retry.max_retries <= MAX_REVIEW_RETRIES);
    }
}
