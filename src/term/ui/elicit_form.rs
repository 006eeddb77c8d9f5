//! An MCP server's request for input (elicitation) in the chat: the form becomes a series of
//! choice cards, one per field, through the same [`UiInteract`] path as the model's `ask`
//! (enums and booleans as options with the default marked, text and numbers typed or the
//! default taken), re-asked with the reason while the value does not validate, then one card
//! to send or decline the answers. Esc on any card cancels the whole request.

use serde_json::{Map, Value};

use super::UiInteract;
use crate::cancel::CancelToken;
use crate::i18n::{tr, trf, Ui};
use crate::mcp::elicit::{self, Answer, Elicitor, Field, Kind, Mode, Request};
use crate::term::sanitize::one_row;
use crate::tool::collab::{self, Interact, Question};

/// The chat's [`Elicitor`].
pub struct UiElicitor {
    interact: UiInteract,
}

impl UiElicitor {
    pub fn new(interact: UiInteract) -> UiElicitor {
        UiElicitor { interact }
    }

    /// `None` when the person dismissed the card or the UI is gone.
    fn ask(&self, question: Question) -> Option<collab::Answer> {
        match self.interact.ask(&question, &CancelToken::new())? {
            collab::Answer::Dismissed => None,
            answer => Some(answer),
        }
    }

    /// One field, asked until it validates; `Err(())` when dismissed.
    fn field(&self, heading: &str, field: &Field) -> Result<Option<Value>, ()> {
        let (options, free_text) = field_options(field);
        let mut problem = String::new();
        loop {
            let mut text = format!("{heading}\n{}", one_row(&field.title));
            if !field.description.is_empty() {
                text.push_str(&format!(" — {}", one_row(&field.description)));
            }
            if let Kind::MultiEnum(choices) = &field.kind {
                let listed: Vec<String> = choices
                    .iter()
                    .enumerate()
                    .map(|(i, o)| format!("{}) {}", i + 1, one_row(o)))
                    .collect();
                text.push('\n');
                text.push_str(&trf(Ui::ElicitTypeChoices, &[&listed.join(" ")]));
            }
            if !problem.is_empty() {
                text.push_str(&format!("\n{problem}"));
            }
            let question = Question {
                question: text,
                options: options.iter().map(|(label, _)| label.clone()).collect(),
                allow_free_text: free_text,
            };
            let typed = match self.ask(question).ok_or(())? {
                collab::Answer::Option(i) => match options.get(i) {
                    Some((_, typed)) => typed.clone(),
                    None => continue,
                },
                collab::Answer::Text(text) => text,
                collab::Answer::Dismissed => return Err(()),
            };
            match elicit::value_of(field, &typed) {
                Ok(value) => return Ok(value),
                Err(why) => problem = why,
            }
        }
    }
}

/// The options of a field's card, each with the text it stands for, and whether typing is
/// allowed.
fn field_options(field: &Field) -> (Vec<(String, String)>, bool) {
    let default_text = field.default.as_ref().map(|d| match d {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| i.to_string())
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    });
    let marked = |option: &str| match &default_text {
        Some(d) if d == option => trf(Ui::ElicitDefault, &[&one_row(option)]),
        _ => one_row(option),
    };
    match &field.kind {
        Kind::Enum(options) => (
            options.iter().map(|o| (marked(o), o.clone())).collect(),
            false,
        ),
        Kind::Boolean => (
            vec![
                (
                    marked("true").replace("true", tr(Ui::ElicitYes)),
                    "yes".into(),
                ),
                (
                    marked("false").replace("false", tr(Ui::ElicitNo)),
                    "no".into(),
                ),
            ],
            false,
        ),
        Kind::MultiEnum(_) => {
            let keep = default_text
                .as_ref()
                .map(|d| (trf(Ui::ElicitKeepDefault, &[&one_row(d)]), String::new()));
            (keep.into_iter().collect(), true)
        }
        Kind::String | Kind::Number | Kind::Integer => {
            let mut items = Vec::new();
            if let Some(d) = &default_text {
                items.push((trf(Ui::ElicitDefault, &[&one_row(d)]), String::new()));
            } else if !field.required {
                items.push((tr(Ui::ElicitLeaveEmpty).to_string(), String::new()));
            }
            (items, true)
        }
    }
}

impl Elicitor for UiElicitor {
    fn elicit(&self, request: &Request) -> Answer {
        let heading = trf(
            Ui::ElicitAsks,
            &[&one_row(&request.server), &one_row(&request.message)],
        );
        let fields = match &request.mode {
            Mode::Url { url } => {
                let question = Question {
                    question: format!("{heading}\n{}", trf(Ui::ElicitOpen, &[&one_row(url)])),
                    options: vec![tr(Ui::ElicitDone).into(), tr(Ui::ElicitDecline).into()],
                    allow_free_text: false,
                };
                return match self.ask(question) {
                    Some(collab::Answer::Option(0)) => Answer::Accept(Map::new()),
                    Some(_) => Answer::Decline,
                    None => Answer::Cancel,
                };
            }
            Mode::Form(fields) => fields,
        };
        let mut content = Map::new();
        for field in fields {
            match self.field(&heading, field) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                }
                Ok(None) => {}
                Err(()) => return Answer::Cancel,
            }
        }
        let summary: Vec<String> = content
            .iter()
            .map(|(k, v)| format!("{}: {}", one_row(k), one_row(&v.to_string())))
            .collect();
        let question = Question {
            question: format!(
                "{heading}\n{}",
                trf(Ui::ElicitSendSummary, &[&summary.join(", ")])
            ),
            options: vec![tr(Ui::ElicitSend).into(), tr(Ui::ElicitDecline).into()],
            allow_free_text: false,
        };
        match self.ask(question) {
            Some(collab::Answer::Option(0)) => Answer::Accept(content),
            Some(_) => Answer::Decline,
            None => Answer::Cancel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{channel, Msg};
    use super::*;
    use serde_json::json;

    fn request() -> Request {
        elicit::parse(
            "srv",
            &json!({"message": "Book", "requestedSchema": {"properties": {
                "guests": {"type": "integer", "default": 2},
                "time": {"type": "string", "enum": ["18:00", "20:00"], "default": "20:00"},
                "name": {"type": "string"}
            }, "required": ["name"]}}),
        )
        .unwrap()
    }

    #[test]
    fn each_field_is_a_card_and_invalid_input_is_asked_again() {
        let (tx, rx) = channel();
        let elicitor = UiElicitor::new(UiInteract::new(tx));
        let ui = std::thread::spawn(move || {
            let mut seen = Vec::new();
            // Fields come in name order: guests, name, time.
            let answers = [
                collab::Answer::Text("many".into()),
                collab::Answer::Option(0),
                collab::Answer::Text("Ann".into()),
                collab::Answer::Option(1),
                collab::Answer::Option(0),
            ];
            for answer in answers {
                let Ok(Msg::Ask(question, mut reply)) = rx.recv() else {
                    panic!("expected a card");
                };
                seen.push(question);
                reply.send(answer);
            }
            seen
        });
        let answer = elicitor.elicit(&request());
        let seen = ui.join().unwrap();
        assert_eq!(
            answer,
            Answer::Accept(
                json!({"guests": 2, "time": "20:00", "name": "Ann"})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        assert!(seen[0].question.contains("MCP server srv asks: Book"));
        assert_eq!(seen[0].options, ["2 (default)"]);
        assert!(
            seen[1].question.contains("must be a whole number"),
            "{:?}",
            seen[1]
        );
        assert!(
            seen[2].options.is_empty() && seen[2].allow_free_text,
            "required text"
        );
        assert_eq!(seen[3].options, ["18:00", "20:00 (default)"]);
        assert!(!seen[3].allow_free_text);
        assert!(seen[4].question.contains("Send"), "{:?}", seen[4]);
    }

    #[test]
    fn esc_cancels_and_a_gone_ui_cancels() {
        let (tx, rx) = channel();
        let elicitor = UiElicitor::new(UiInteract::new(tx));
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Ask(_, mut reply)) = rx.recv() else {
                panic!("expected a card");
            };
            reply.send(collab::Answer::Dismissed);
        });
        assert_eq!(elicitor.elicit(&request()), Answer::Cancel);
        ui.join().unwrap();
        assert_eq!(elicitor.elicit(&request()), Answer::Cancel);
    }
}
