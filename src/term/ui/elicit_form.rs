//! An MCP server's request for input (elicitation) in the chat: the form becomes a series of
//! choice cards, one per field, through the same [`UiInteract`] path as the model's `ask`
//! (enums and booleans as options with the default marked, text and numbers typed or the
//! default taken), re-asked with the reason while the value does not validate, then one card
//! to send or decline the answers. Esc on any card cancels the whole request. A URL request is
//! one card showing the whole URL and its host (with a warning for Punycode): the browser
//! opens only when the person agrees. While the server's completion notice for a URL it
//! required is awaited, a card offers to try again now or to cancel, and closes by itself when
//! the notice arrives.

use std::sync::mpsc::Sender;
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

use super::{Msg, UiInteract};
use crate::cancel::CancelToken;
use crate::i18n::{tr, trf, Ui};
use crate::mcp::client::ServerEvent;
use crate::mcp::elicit::{self, Answer, Elicitor, Field, Kind, Mode, Request, Waited};
use crate::term::sanitize::one_row;
use crate::tool::collab::{self, Interact, Question};

/// The chat's [`Elicitor`].
pub struct UiElicitor {
    interact: UiInteract,
    /// Where a URL the browser did not open is shown, as a notice.
    notices: Mutex<Sender<Msg>>,
}

impl UiElicitor {
    pub fn new(interact: UiInteract, notices: Sender<Msg>) -> UiElicitor {
        UiElicitor {
            interact,
            notices: Mutex::new(notices),
        }
    }

    /// `None` when the person dismissed the card or the UI is gone.
    fn ask(&self, question: Question) -> Option<collab::Answer> {
        self.ask_until(question, &CancelToken::new())
    }

    /// [`UiElicitor::ask`], withdrawn when `until` is cancelled.
    fn ask_until(&self, question: Question, until: &CancelToken) -> Option<collab::Answer> {
        match self.interact.ask(&question, until)? {
            collab::Answer::Dismissed => None,
            answer => Some(answer),
        }
    }

    /// The consent card of a URL request; the browser opens on the person's yes.
    fn url(&self, heading: &str, request: &Request, url: &str, host: &str) -> Answer {
        let mut text = format!(
            "{heading}\n{}\n{}",
            trf(Ui::ElicitOpen, &[&one_row(url)]),
            trf(Ui::ElicitHost, &[&one_row(host)])
        );
        if elicit::punycode(host) {
            text.push_str(&format!("\n{}", tr(Ui::ElicitPunycode)));
        }
        let question = Question {
            question: text,
            options: vec![
                tr(Ui::ElicitOpenBrowser).into(),
                tr(Ui::ElicitDecline).into(),
            ],
            allow_free_text: false,
        };
        match self.ask(question) {
            Some(collab::Answer::Option(0)) => {
                let set = std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty());
                if !set || !crate::mcp::oauth::redirect::open_browser(url) {
                    let notice = ServerEvent::Log {
                        server: request.server.clone(),
                        level: "info".into(),
                        text: trf(Ui::ElicitOpenYourself, &[&one_row(url)]),
                    };
                    let _ = self
                        .notices
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .send(Msg::Mcp(notice));
                }
                Answer::Opened
            }
            Some(_) => Answer::Decline,
            None => Answer::Cancel,
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
                // The reason quotes the server's title and options.
                text.push_str(&format!("\n{}", one_row(&problem)));
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
            Mode::Url { url, host, .. } => return self.url(&heading, request, url, host),
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

    fn wait(&self, request: &Request, complete: &CancelToken) -> Waited {
        let host = match &request.mode {
            Mode::Url { host, .. } => host.as_str(),
            Mode::Form(_) => "",
        };
        let question = Question {
            question: format!(
                "{}\n{}",
                trf(
                    Ui::ElicitAsks,
                    &[&one_row(&request.server), &one_row(&request.message)]
                ),
                trf(
                    Ui::ElicitWaiting,
                    &[&one_row(&request.server), &one_row(host)]
                )
            ),
            options: vec![tr(Ui::ElicitRetryNow).into(), tr(Ui::ElicitCancel).into()],
            allow_free_text: false,
        };
        let answer = self.ask_until(question, complete);
        if complete.is_cancelled() {
            return Waited::Complete;
        }
        match answer {
            Some(collab::Answer::Option(0)) => Waited::Retry,
            _ => Waited::Cancel,
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
        let elicitor = UiElicitor::new(UiInteract::new(tx.clone()), tx);
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
        let elicitor = UiElicitor::new(UiInteract::new(tx.clone()), tx);
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

    fn url_request(host: &str) -> Request {
        elicit::parse(
            "pay",
            &json!({"mode": "url", "elicitationId": "e", "message": "Connect",
                "url": format!("https://{host}/connect?x=1")}),
        )
        .unwrap()
    }

    #[test]
    fn a_url_card_shows_the_whole_url_and_its_host_before_anything_opens() {
        let (tx, rx) = channel();
        let elicitor = UiElicitor::new(UiInteract::new(tx.clone()), tx);
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Ask(question, mut reply)) = rx.recv() else {
                panic!("expected a card");
            };
            reply.send(collab::Answer::Option(1));
            (question, rx)
        });
        let answer = elicitor.elicit(&url_request("xn--pple-43d.example"));
        let (question, rx) = ui.join().unwrap();
        assert_eq!(answer, Answer::Decline);
        assert!(
            question
                .question
                .contains("Open https://xn--pple-43d.example/connect?x=1"),
            "{}",
            question.question
        );
        assert!(question.question.contains("Host: xn--pple-43d.example"));
        assert!(question.question.contains("Punycode"));
        assert_eq!(question.options, ["Open in the browser", "Decline"]);
        assert!(rx.try_recv().is_err(), "declined: no notice, no browser");
        let plain = url_request("pay.example");
        let (tx, rx) = channel();
        let elicitor = UiElicitor::new(UiInteract::new(tx.clone()), tx);
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Ask(question, reply)) = rx.recv() else {
                panic!("expected a card");
            };
            drop(reply);
            question
        });
        assert_eq!(elicitor.elicit(&plain), Answer::Cancel);
        assert!(!ui.join().unwrap().question.contains("Punycode"));
    }

    #[test]
    fn the_waiting_card_closes_itself_on_the_notice_or_retries_on_request() {
        let (tx, rx) = channel();
        let elicitor = UiElicitor::new(UiInteract::new(tx.clone()), tx);
        let complete = CancelToken::new();
        let notice = complete.clone();
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Ask(question, reply)) = rx.recv() else {
                panic!("expected a card");
            };
            assert_eq!(question.options, ["It is done: try again", "Cancel"]);
            assert!(question.question.contains("Waiting for pay"));
            notice.cancel();
            assert!(matches!(rx.recv(), Ok(Msg::Withdrawn)));
            assert!(reply.withdrawn(), "the UI can close the card");
            let Ok(Msg::Ask(_, mut reply)) = rx.recv() else {
                panic!("expected a card");
            };
            reply.send(collab::Answer::Option(0));
            let Ok(Msg::Ask(_, mut reply)) = rx.recv() else {
                panic!("expected a card");
            };
            reply.send(collab::Answer::Dismissed);
        });
        let request = url_request("pay.example");
        assert_eq!(elicitor.wait(&request, &complete), Waited::Complete);
        assert_eq!(elicitor.wait(&request, &CancelToken::new()), Waited::Retry);
        assert_eq!(elicitor.wait(&request, &CancelToken::new()), Waited::Cancel);
        ui.join().unwrap();
    }
}
