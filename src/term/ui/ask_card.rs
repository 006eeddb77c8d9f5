//! The `ask` choice card: a modal listing the model's options (number keys pick, arrows and
//! Enter choose, Esc dismisses the question) and, when free text is allowed, a last "Type an
//! answer…" choice that switches to an input-owned overlay: the question stays above the
//! composer, Enter sends what was typed, Esc goes back to the card. Plain state and key
//! handling; the chat owns the composer and the reply channel.

use crate::i18n::{tr, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::keys::Key;
use crate::term::modal::{Choice, Choices, Outcome};
use crate::term::sanitize::{for_display, one_row};
use crate::tool::collab::{Answer, Question};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    Option(usize),
    Type,
    Dismiss,
}

/// What a key did to the card.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CardKey {
    Pending,
    Answer(Answer),
    /// The free-text overlay opened: the composer takes the keys.
    StartTyping,
    /// The overlay closed; the card is back.
    BackToCard,
    /// A key for the composer (the overlay is open).
    Edit(Key),
}

pub(super) struct AskCard {
    question: Question,
    choices: Choices<Pick>,
    /// The free-text overlay is open.
    typing: bool,
}

impl AskCard {
    /// The question and its options come from the model or an MCP server (an elicitation's
    /// texts, and its reasons for asking again, which quote them): they are made inert here,
    /// where they reach the terminal, whoever wrote them.
    pub(super) fn new(question: Question) -> AskCard {
        let question = Question {
            question: for_display(&question.question),
            options: question.options.iter().map(|o| one_row(o)).collect(),
            allow_free_text: question.allow_free_text,
        };
        let mut items: Vec<Choice<Pick>> = question
            .options
            .iter()
            .enumerate()
            .map(|(i, option)| Choice {
                label: option.clone(),
                key: None,
                value: Pick::Option(i),
            })
            .collect();
        if question.allow_free_text {
            items.push(Choice {
                label: tr(Ui::AskTypeAnswer).into(),
                key: None,
                value: Pick::Type,
            });
        }
        AskCard {
            choices: Choices {
                title: tr(Ui::AskTitle).into(),
                body: Vec::new(),
                items,
                selected: 0,
                on_cancel: Some(Pick::Dismiss),
            },
            question,
            typing: false,
        }
    }

    /// Whether the composer is showing (the free-text overlay) rather than the card.
    pub(super) fn owns_input(&self) -> bool {
        self.typing
    }

    /// Handles `key`; `typed` is the composer's text, sent as the answer on Enter while the
    /// overlay is open. Ctrl-C is the chat's (it interrupts the turn) and does nothing here.
    pub(super) fn key(&mut self, key: Key, typed: &str) -> CardKey {
        if key == Key::Ctrl('c') {
            return CardKey::Pending;
        }
        if self.typing {
            return match key {
                Key::Enter if typed.trim().is_empty() => CardKey::Pending,
                Key::Enter => CardKey::Answer(Answer::Text(typed.trim().to_string())),
                Key::Esc => {
                    self.typing = false;
                    CardKey::BackToCard
                }
                other => CardKey::Edit(other),
            };
        }
        match self.choices.key(&key) {
            Outcome::Chosen(Pick::Option(i)) => CardKey::Answer(Answer::Option(i)),
            Outcome::Chosen(Pick::Type) => {
                self.typing = true;
                CardKey::StartTyping
            }
            Outcome::Chosen(Pick::Dismiss) | Outcome::Closed => CardKey::Answer(Answer::Dismissed),
            Outcome::Pending => CardKey::Pending,
        }
    }

    fn question_lines(&self, width: usize) -> Vec<Line> {
        self.question
            .question
            .lines()
            .flat_map(|l| Line::styled(l, Style::Bold).wrap(width.saturating_sub(2).max(10), ""))
            .collect()
    }

    /// The card (modal), or while typing the lines shown above the composer.
    pub(super) fn render(&self, width: usize) -> Vec<Line> {
        let bar = |line: Line| {
            let mut row = Line::styled("│ ", Style::Frame);
            row.extend(line);
            row.truncated(width)
        };
        if self.typing {
            let mut out = vec![Line::styled(
                format!("╭─ {}", tr(Ui::AskTitle)),
                Style::Frame,
            )];
            out.extend(self.question_lines(width).into_iter().map(bar));
            out.push(Line::styled(tr(Ui::AskTextFooter), Style::Frame));
            return out;
        }
        let mut choices = Choices {
            title: self.choices.title.clone(),
            body: self.question_lines(width),
            items: Vec::new(),
            selected: self.choices.selected,
            on_cancel: None,
        };
        choices.items = self
            .choices
            .items
            .iter()
            .map(|item| Choice {
                label: item.label.clone(),
                key: item.key,
                value: (),
            })
            .collect();
        let mut out = choices.render(width);
        out.pop();
        out.push(Line::styled(tr(Ui::AskFooter), Style::Frame));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(free: bool) -> AskCard {
        AskCard::new(Question {
            question: "Which database?".into(),
            options: vec!["Postgres".into(), "SQLite".into()],
            allow_free_text: free,
        })
    }

    fn text(card: &AskCard) -> Vec<String> {
        card.render(60).iter().map(Line::text).collect()
    }

    #[test]
    fn number_keys_and_arrows_pick_options() {
        let mut c = card(false);
        assert_eq!(
            c.key(Key::Char('2'), ""),
            CardKey::Answer(Answer::Option(1))
        );
        assert_eq!(c.key(Key::Char('3'), ""), CardKey::Pending);
        assert_eq!(c.key(Key::Down, ""), CardKey::Pending);
        assert_eq!(c.key(Key::Down, ""), CardKey::Pending);
        assert_eq!(c.key(Key::Up, ""), CardKey::Pending);
        assert_eq!(c.key(Key::Enter, ""), CardKey::Answer(Answer::Option(0)));
        let lines = text(&c);
        assert!(
            lines.contains(&"│ Which database?".to_string()),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l == "│ ❯ 1. Postgres"), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("Type an answer")));
    }

    #[test]
    fn the_models_question_and_options_reach_the_terminal_inert() {
        let c = AskCard::new(Question {
            question: "Pick\u{1b}]0;pwned\u{7} \u{202e}one\nsecond line".into(),
            options: vec!["a\u{9b}2J".into(), "b\nc".into()],
            allow_free_text: true,
        });
        let lines = text(&c);
        let all = lines.join("\n");
        assert!(
            !all.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
            "{lines:?}"
        );
        assert!(all.contains("Pick^[]0;pwned^G \\u{202e}one"), "{lines:?}");
        assert!(all.contains("second line"), "the question keeps its lines");
        assert!(all.contains("b⏎c"), "an option stays on its row: {lines:?}");
    }

    #[test]
    fn esc_dismisses_and_ctrl_c_is_left_to_the_chat() {
        let mut c = card(true);
        assert_eq!(c.key(Key::Ctrl('c'), ""), CardKey::Pending);
        assert_eq!(c.key(Key::Esc, ""), CardKey::Answer(Answer::Dismissed));
    }

    #[test]
    fn free_text_opens_an_overlay_that_esc_closes() {
        let mut c = card(true);
        assert!(text(&c).iter().any(|l| l.ends_with("3. Type an answer…")));
        assert_eq!(c.key(Key::Char('3'), ""), CardKey::StartTyping);
        assert!(c.owns_input());
        let lines = text(&c);
        assert!(!lines.iter().any(|l| l.contains("Postgres")), "{lines:?}");
        assert!(
            lines.contains(&"│ Which database?".to_string()),
            "{lines:?}"
        );
        assert_eq!(c.key(Key::Char('x'), ""), CardKey::Edit(Key::Char('x')));
        assert_eq!(c.key(Key::Enter, "  "), CardKey::Pending);
        assert_eq!(c.key(Key::Esc, "draft"), CardKey::BackToCard);
        assert!(!c.owns_input());
        c.key(Key::Down, "");
        c.key(Key::Down, "");
        assert_eq!(c.key(Key::Enter, ""), CardKey::StartTyping);
        assert_eq!(
            c.key(Key::Enter, " MariaDB "),
            CardKey::Answer(Answer::Text("MariaDB".into()))
        );
    }
}
