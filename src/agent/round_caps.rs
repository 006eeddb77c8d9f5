//! The caps on what one round of tool calls may multiply, besides the subagent budgets the
//! [`scheduler`](super::scheduler) keeps: MCP calls per model reply, and the image bytes one
//! request may carry (the history's images together, which every later request repeats).
//!
//! A call past a cap is refused before it runs (before the permission gate too, so a flood
//! never reaches a person as a flood of approvals), with a text the model reads that names the
//! cap and its config key. Images past the request's budget are refused, never dropped from
//! the history: the request prefix only changes at compaction.

use crate::config::limits::{DEFAULT_IMAGE_BYTES_PER_REQUEST, DEFAULT_MCP_CALLS_PER_ROUND};
use crate::provider::Message;

/// The caps, from `[agent]` in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundCaps {
    /// MCP tool calls one reply may make (`agent.max_mcp_calls_per_round`).
    pub mcp_calls: usize,
    /// Decoded image bytes one request may carry (`agent.max_image_bytes_per_request`).
    pub image_bytes_per_request: u64,
}

impl Default for RoundCaps {
    fn default() -> Self {
        RoundCaps {
            mcp_calls: DEFAULT_MCP_CALLS_PER_ROUND as usize,
            image_bytes_per_request: DEFAULT_IMAGE_BYTES_PER_REQUEST,
        }
    }
}

/// Whether `tool` is served by an MCP server: the registry names every such tool
/// `mcp__SERVER__TOOL` (configured servers and a Claude SDK's in-process ones alike).
pub fn is_mcp(tool: &str) -> bool {
    tool.starts_with("mcp__")
}

/// Counts one reply's MCP calls against [`RoundCaps::mcp_calls`].
pub struct McpCalls {
    cap: usize,
    admitted: usize,
}

impl McpCalls {
    pub fn new(caps: &RoundCaps) -> McpCalls {
        McpCalls {
            cap: caps.mcp_calls,
            admitted: 0,
        }
    }

    /// Admits a call of `tool`, or says why not (the text the model reads as its result).
    /// Calls of other tools always pass and are not counted.
    pub fn admit(&mut self, tool: &str) -> Result<(), String> {
        if !is_mcp(tool) {
            return Ok(());
        }
        if self.admitted >= self.cap {
            return Err(format!(
                "refused: this reply already makes {} MCP calls, the most one round may \
                 (agent.max_mcp_calls_per_round = {}); make the rest in a later round",
                self.admitted, self.cap
            ));
        }
        self.admitted += 1;
        Ok(())
    }
}

/// The bytes of the images `message` carries, decoded: what the model's server receives
/// once it undoes the base64 of each `data:` URL.
pub fn image_bytes(message: &Message) -> u64 {
    message.images.iter().map(|url| decoded_len(url)).sum()
}

/// The decoded length of a `data:...;base64,` URL; any other URL counts by its length, a
/// bound that never undercounts what it carries.
fn decoded_len(url: &str) -> u64 {
    let Some((_, payload)) = url.split_once(";base64,") else {
        return url.len() as u64;
    };
    let padding = payload
        .bytes()
        .rev()
        .take_while(|b| *b == b'=')
        .count()
        .min(2);
    ((payload.len() / 4) * 3).saturating_sub(padding) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base64::base64;

    #[test]
    fn mcp_calls_past_the_cap_are_refused_with_the_key_and_others_pass() {
        let mut calls = McpCalls::new(&RoundCaps {
            mcp_calls: 2,
            ..RoundCaps::default()
        });
        assert_eq!(calls.admit("mcp__a__x"), Ok(()));
        assert_eq!(calls.admit("read_file"), Ok(()));
        assert_eq!(calls.admit("mcp__b__y"), Ok(()));
        let refused = calls.admit("mcp__a__x").unwrap_err();
        assert!(
            refused.contains("agent.max_mcp_calls_per_round = 2"),
            "{refused}"
        );
        assert_eq!(calls.admit("bash"), Ok(()), "only MCP calls are counted");
    }

    #[test]
    fn a_data_url_counts_its_decoded_bytes() {
        for len in [0usize, 1, 2, 3, 4, 5, 1000, 1001, 1002] {
            let url = format!("data:image/png;base64,{}", base64(&vec![7u8; len]));
            assert_eq!(decoded_len(&url), len as u64, "{len} bytes");
        }
        let mut message = Message::user("look".to_string());
        message
            .images
            .push(format!("data:image/png;base64,{}", base64(&[1; 30])));
        message
            .images
            .push(format!("data:image/gif;base64,{}", base64(&[1; 12])));
        assert_eq!(image_bytes(&message), 42);
    }
}
