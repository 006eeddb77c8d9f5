//! What the chat shows of a conversation it resumes (`chat -c`, `--resume`, `/resume`): the
//! last few exchanges, so the user sees where they left off. An exchange is the user's
//! message, one line per tool call and the first rows of the final answer. The text comes
//! from the session file, so it is sanitized like live model output.

use crate::i18n::{tr, trf, Ui};
use crate::provider::{Message, Role};
use crate::term::ansi::{Line, Style};
use crate::term::markdown::Markdown;
use crate::term::sanitize::one_row;
use crate::term::transcript::tool_title;

/// How many exchanges are reprinted; older ones are counted in one line.
const EXCHANGES: usize = 3;
/// Rows of an answer reprinted; the rest is counted in one line.
const ANSWER_ROWS: usize = 8;
/// Tool calls listed per exchange; the rest are counted in one line.
const TOOL_LINES: usize = 6;

/// The last [`EXCHANGES`] exchanges of `messages`, oldest first; empty when the user has not
/// said anything yet.
pub(super) fn last_exchanges(messages: &[Message], width: usize) -> Vec<Line> {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
        .collect();
    let first = starts.len().saturating_sub(EXCHANGES);
    let mut out = Vec::new();
    if first > 0 {
        let text = if first == 1 {
            tr(Ui::EarlierExchange).to_string()
        } else {
            trf(Ui::EarlierExchanges, &[&first])
        };
        out.push(Line::styled(text, Style::Dim));
        out.push(Line::new());
    }
    for (k, &start) in starts.iter().enumerate().skip(first) {
        let end = starts.get(k + 1).copied().unwrap_or(messages.len());
        if k > first {
            out.push(Line::new());
        }
        exchange(&messages[start..end], width, &mut out);
    }
    out
}

/// One exchange: `messages` starts with the user's message and runs up to the next one.
fn exchange(messages: &[Message], width: usize, out: &mut Vec<Line>) {
    let mut user = Line::styled("› ", Style::Accent);
    user.push(one_row(&messages[0].content), Style::User);
    out.push(user.truncated(width));
    let calls: Vec<_> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.tool_calls)
        .collect();
    for call in calls.iter().take(TOOL_LINES) {
        let mut line = Line::styled("  • ", Style::Dim);
        let title = tool_title(
            &call.function.name,
            &call.function.arguments,
            width.saturating_sub(8),
        );
        line.spans.extend(title.spans);
        out.push(line.truncated(width));
    }
    if calls.len() > TOOL_LINES {
        out.push(Line::styled(
            trf(Ui::MoreToolCalls, &[&(calls.len() - TOOL_LINES)]),
            Style::Dim,
        ));
    }
    let answer = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty());
    if let Some(answer) = answer {
        let mut md = Markdown::new(width);
        let mut rows = md.push(&answer.content);
        rows.extend(md.finish());
        while rows.last().is_some_and(|row| row.text().trim().is_empty()) {
            rows.pop();
        }
        let more = rows.len().saturating_sub(ANSWER_ROWS);
        out.extend(rows.into_iter().take(ANSWER_ROWS));
        if more > 0 {
            out.push(Line::styled(trf(Ui::MoreAnswerLines, &[&more]), Style::Dim));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    fn asking(id: &str, name: &str, arguments: &str) -> Message {
        let mut message = Message::assistant("");
        message.tool_calls = vec![ToolCall::new(id, name, arguments)];
        message
    }

    #[test]
    fn a_conversation_without_a_user_message_shows_nothing() {
        assert!(last_exchanges(&[Message::system("sys")], 80).is_empty());
    }

    #[test]
    fn the_last_exchanges_show_prompts_tool_calls_and_answers() {
        let mut messages = vec![Message::system("sys")];
        for n in 1..=4 {
            messages.push(Message::user(format!("question {n}\nsecond line")));
            messages.push(asking(&format!("c{n}"), "read_file", r#"{"path":"a.rs"}"#));
            messages.push(Message::tool_result(format!("c{n}"), "contents"));
            messages.push(Message::assistant(format!("answer **{n}**")));
        }
        let shown = texts(&last_exchanges(&messages, 60));
        assert_eq!(
            shown,
            vec![
                "… 1 earlier exchange",
                "",
                "› question 2⏎second line",
                "  • read_file  a.rs",
                "answer 2",
                "",
                "› question 3⏎second line",
                "  • read_file  a.rs",
                "answer 3",
                "",
                "› question 4⏎second line",
                "  • read_file  a.rs",
                "answer 4",
            ]
        );
    }

    #[test]
    fn long_answers_and_many_calls_are_folded_and_text_is_sanitized() {
        let mut messages = vec![Message::user("go \x1b[2J")];
        for n in 0..8 {
            messages.push(asking(&format!("c{n}"), "bash", r#"{"command":"ls"}"#));
            messages.push(Message::tool_result(format!("c{n}"), "out"));
        }
        let answer: Vec<String> = (1..=10).map(|n| format!("line {n}\n")).collect();
        messages.push(Message::assistant(format!(
            "\x1b]0;title\x07{}",
            answer.join("\n")
        )));
        let lines = last_exchanges(&messages, 40);
        let shown = texts(&lines);
        assert_eq!(shown[0], "› go ^[[2J");
        assert_eq!(
            shown
                .iter()
                .filter(|l| l.as_str() == "  • bash  ls")
                .count(),
            TOOL_LINES
        );
        assert!(
            shown.contains(&"    … 2 more tool calls".to_string()),
            "{shown:?}"
        );
        assert!(
            shown.last().is_some_and(|l| l.contains("more lines")),
            "{shown:?}"
        );
        assert!(
            !shown
                .iter()
                .any(|l| l.contains('\x1b') || l.contains('\x07')),
            "{shown:?}"
        );
    }
}
