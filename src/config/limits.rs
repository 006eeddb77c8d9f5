//! The bounds of the numbers in the config files, in one place: a repository's reasonix.toml
//! is untrusted input, and a duration or count far beyond any real use (a timeout of 2^63
//! seconds) must not overflow the arithmetic that consumes it. Every such number saturates
//! here at a documented maximum once the layers are merged; what cannot be given a meaning
//! (a negative or non-finite price, a zero connect timeout) is refused by the loader with the
//! file's `path:line:col` instead. Consumers may still clamp (values also arrive from
//! compositions and `.claude/settings.json`), with the same constants.

use super::file::Config;

/// The longest timeout any configuration may set, in seconds: the provider's one-day ceiling,
/// so the config and the HTTP layer hold one number. Longer is a mistake, or a repository
/// holding a run open on something that never answers.
pub const MAX_TIMEOUT_SECONDS: u64 = crate::provider::limits::TIMEOUT_CEILING.as_secs();

/// The longest retry backoff, in milliseconds: one day, as for timeouts.
pub const MAX_BACKOFF_MS: u64 = MAX_TIMEOUT_SECONDS * 1000;

/// The most retries of one model request.
pub const MAX_RETRIES: u32 = 100;

/// The largest token count (a context window, `max_tokens`): a thousand times today's largest
/// windows, small enough that sums and products of token counts cannot overflow.
pub const MAX_TOKENS: u64 = 1_000_000_000;

/// The most tokens a Guardian review's reply may take: a verdict is one sentence, and a
/// reasoning model's thinking fits well below this.
pub const MAX_REVIEWER_TOKENS: u64 = 32_768;

/// The fewest: below this even a terse verdict is cut off.
pub const MIN_REVIEWER_TOKENS: u64 = 64;

/// The most threads one setting may ask for (parallel tools, subagents, writers).
pub const MAX_CONCURRENCY: u32 = 64;

/// The default of `agent.max_mcp_calls_per_round`: more than a round needs, few enough that
/// a reply of hundreds of calls cannot tie up a server (or memory) with them.
pub const DEFAULT_MCP_CALLS_PER_ROUND: u32 = 32;

/// The default of `agent.max_image_bytes_per_request`: 20 MiB decoded (about 27 MB as base64),
/// under the request size limits of the providers that take images.
pub const DEFAULT_IMAGE_BYTES_PER_REQUEST: u64 = 20 * 1024 * 1024;

/// The most MCP calls one round may be allowed: a reply asking for more is a flood whatever
/// the config says.
pub const MAX_MCP_CALLS_PER_ROUND: u32 = 1024;

/// The most image bytes one request may be allowed to carry: 1 GiB, far past what any
/// provider accepts in one request.
pub const MAX_IMAGE_BYTES_PER_REQUEST: u64 = 1024 * 1024 * 1024;

/// The highest price, in USD per million tokens.
pub const MAX_PRICE: f64 = 1_000_000.0;

impl Config {
    /// Saturates every number at its maximum. The loader calls it on the merged layers.
    pub fn saturate(&mut self) {
        let agent = &mut self.agent;
        agent.max_tokens = agent.max_tokens.map(|t| t.min(MAX_TOKENS));
        agent.reviewer_max_tokens = agent
            .reviewer_max_tokens
            .clamp(MIN_REVIEWER_TOKENS, MAX_REVIEWER_TOKENS);
        // A review that may not take a second never answers: at least one.
        agent.reviewer_timeout_seconds = agent.reviewer_timeout_seconds.max(1);
        for threads in [
            &mut agent.max_parallel_tools,
            &mut agent.max_subagent_concurrency,
            &mut agent.max_parallel_writers,
        ] {
            *threads = (*threads).min(MAX_CONCURRENCY);
        }
        agent.max_mcp_calls_per_round = agent.max_mcp_calls_per_round.min(MAX_MCP_CALLS_PER_ROUND);
        agent.max_image_bytes_per_request = agent
            .max_image_bytes_per_request
            .min(MAX_IMAGE_BYTES_PER_REQUEST);
        let mut seconds: Vec<&mut u64> = vec![
            &mut self.agent.reviewer_timeout_seconds,
            &mut self.tools.bash_timeout_seconds,
            &mut self.tools.mcp_call_timeout_seconds,
        ];
        seconds.extend(self.hooks.iter_mut().map(|h| &mut h.timeout_seconds));
        for provider in &mut self.providers {
            let tokens = |t: Option<u64>| t.map(|t| t.min(MAX_TOKENS));
            provider.context_window = tokens(provider.context_window);
            for model in provider.model_overrides.values_mut() {
                model.context_window = tokens(model.context_window);
            }
            let retry = &mut provider.retry;
            retry.max_retries = retry.max_retries.map(|n| n.min(MAX_RETRIES));
            retry.initial_backoff_ms = retry.initial_backoff_ms.map(|ms| ms.min(MAX_BACKOFF_MS));
            seconds.extend(retry.max_backoff_seconds.as_mut());
            seconds.extend(provider.timeouts.connect_seconds.as_mut());
            seconds.extend(provider.timeouts.idle_seconds.as_mut());
        }
        for plugin in &mut self.plugins {
            seconds.push(&mut plugin.startup_timeout_seconds);
            seconds.extend(plugin.call_timeout_seconds.as_mut());
            seconds.extend(plugin.tool_timeout_seconds.values_mut());
        }
        for value in seconds {
            *value = (*value).min(MAX_TIMEOUT_SECONDS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::{builtin_provider, HookConfig};

    #[test]
    fn every_number_saturates_at_its_maximum() {
        let mut config = Config::default();
        config.agent.max_tokens = Some(u64::MAX);
        config.agent.max_parallel_tools = u32::MAX;
        config.agent.max_mcp_calls_per_round = u32::MAX;
        config.agent.max_image_bytes_per_request = u64::MAX;
        config.agent.reviewer_max_tokens = u64::MAX;
        config.agent.reviewer_timeout_seconds = u64::MAX;
        config.tools.bash_timeout_seconds = i64::MAX as u64;
        config.hooks.push(HookConfig {
            timeout_seconds: u64::MAX,
            ..HookConfig::default()
        });
        let mut provider = builtin_provider();
        provider.timeouts.connect_seconds = Some(u64::MAX);
        provider.retry.initial_backoff_ms = Some(u64::MAX);
        provider.retry.max_retries = Some(u32::MAX);
        config.providers.push(provider);
        config.saturate();
        assert_eq!(config.agent.max_tokens, Some(MAX_TOKENS));
        assert_eq!(config.agent.max_parallel_tools, MAX_CONCURRENCY);
        assert_eq!(config.agent.reviewer_max_tokens, MAX_REVIEWER_TOKENS);
        assert_eq!(config.agent.reviewer_timeout_seconds, MAX_TIMEOUT_SECONDS);
        assert_eq!(config.tools.bash_timeout_seconds, MAX_TIMEOUT_SECONDS);
        assert_eq!(
            config.agent.max_mcp_calls_per_round,
            MAX_MCP_CALLS_PER_ROUND
        );
        assert_eq!(
            config.agent.max_image_bytes_per_request,
            MAX_IMAGE_BYTES_PER_REQUEST
        );
        assert_eq!(config.hooks[0].timeout_seconds, MAX_TIMEOUT_SECONDS);
        let provider = &config.providers[0];
        assert_eq!(provider.timeouts.connect_seconds, Some(MAX_TIMEOUT_SECONDS));
        assert_eq!(provider.retry.initial_backoff_ms, Some(MAX_BACKOFF_MS));
        assert_eq!(provider.retry.max_retries, Some(MAX_RETRIES));
        assert_eq!(provider.context_window, Some(1_000_000), "in bounds: kept");
        // The reviewer's floors: a zero timeout or a handful of tokens could never answer.
        let mut config = Config::default();
        config.agent.reviewer_max_tokens = 0;
        config.agent.reviewer_timeout_seconds = 0;
        config.saturate();
        assert_eq!(config.agent.reviewer_max_tokens, MIN_REVIEWER_TOKENS);
        assert_eq!(config.agent.reviewer_timeout_seconds, 1);
    }
}
