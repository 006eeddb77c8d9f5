//! Every bound on what a model server may send, in one place: the byte caps on one SSE line,
//! one event, one message's content, reasoning and tool arguments, the number of tool calls
//! in one reply and a non-streamed body, and the ceiling put on every configured timeout.
//!
//! The caps are far above what a real reply needs (a 100k-token answer is about 400 KB) and
//! low enough that a hostile or broken server costs tens of MiB at most, never the machine.
//! Crossing one ends the reply with [`Overflow`]'s message; the decoders that count the bytes
//! (`sse`, `openai::stream`) only compare against these numbers.

use std::fmt;
use std::time::Duration;

const MIB: usize = 1024 * 1024;

/// One line of an event stream, and a non-streamed body's line (a JSON completion is often
/// one line).
pub const SSE_LINE: usize = 8 * MIB;
/// The `data` of one event, its lines joined.
pub const SSE_EVENT: usize = 8 * MIB;
/// The answer text of one reply (held by the agent and written to the session too).
pub const CONTENT: usize = 6 * MIB;
/// The reasoning text of one reply.
pub const REASONING: usize = 4 * MIB;
/// The arguments of all the tool calls of one reply together.
pub const TOOL_ARGUMENTS: usize = 4 * MIB;
/// Tool calls (distinct indexes) in one reply.
pub const TOOL_CALLS: usize = 256;
/// A reply that is not an event stream (`stream = false`, or a server that ignored it) is
/// kept whole to be decoded at its end; this much of it at most.
pub const UNSTREAMED_BODY: usize = 8 * MIB;
/// Bytes of one reply in all, comments and keep-alives included: a server that streams
/// forever without saying anything is stopped by this before the reply deadline.
pub const REPLY_BYTES: u64 = 256 * MIB as u64;
/// A recording (`--record`) keeps at most this much of one reply.
pub const RECORDED_REPLY: usize = 16 * MIB;

/// No configured timeout is longer than a day: larger values (up to `u64::MAX` seconds from
/// a config file) saturate here, so no deadline computation can overflow.
pub const TIMEOUT_CEILING: Duration = Duration::from_secs(24 * 60 * 60);

/// A configured timeout, saturated at [`TIMEOUT_CEILING`].
pub fn clamp_timeout(timeout: Duration) -> Duration {
    timeout.min(TIMEOUT_CEILING)
}

/// Which cap a reply crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    SseLine,
    SseEvent,
    Content,
    Reasoning,
    ToolArguments,
    ToolCalls,
    UnstreamedBody,
    ReplyBytes,
}

impl Overflow {
    /// What crossed, and the cap, for the message.
    fn parts(self) -> (&'static str, String) {
        match self {
            Overflow::SseLine => ("one line of the reply", size(SSE_LINE)),
            Overflow::SseEvent => ("one event of the reply", size(SSE_EVENT)),
            Overflow::Content => ("the reply's text", size(CONTENT)),
            Overflow::Reasoning => ("the reply's reasoning", size(REASONING)),
            Overflow::ToolArguments => ("the reply's tool arguments", size(TOOL_ARGUMENTS)),
            Overflow::ToolCalls => ("the reply's tool calls", format!("{TOOL_CALLS} calls")),
            Overflow::UnstreamedBody => ("the reply's body", size(UNSTREAMED_BODY)),
            Overflow::ReplyBytes => ("the reply", size(REPLY_BYTES as usize)),
        }
    }
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, cap) = self.parts();
        write!(
            f,
            "{what} passed {cap}; the server sent more than any real reply holds"
        )
    }
}

fn size(bytes: usize) -> String {
    format!("{} MiB", bytes / MIB)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_messages_name_what_crossed_and_the_cap() {
        assert_eq!(
            Overflow::ToolArguments.to_string(),
            "the reply's tool arguments passed 4 MiB; the server sent more than any real reply holds"
        );
        assert!(Overflow::ToolCalls.to_string().contains("256 calls"));
        assert_eq!(clamp_timeout(Duration::MAX), TIMEOUT_CEILING);
        assert_eq!(
            clamp_timeout(Duration::from_secs(5)),
            Duration::from_secs(5)
        );
    }
}
