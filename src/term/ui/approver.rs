//! The approvers the chat hands to the permission gate and the MCP launcher: each request
//! travels to the UI thread as a [`Msg`] and the asking thread waits for the modal's answer.
//! The launch modal's choices live here too; the UI thread only shows them.

use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, PoisonError};

use super::Msg;
use crate::i18n::{tr, trf, Ui};
use crate::mcp::{LaunchAnswer, LaunchApprover, LaunchRequest};
use crate::permission::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::term::ansi::{Line, Style};
use crate::term::modal::{Choice, Choices};
use crate::term::sanitize::one_row;

/// The permission gate's approver and the MCP launch approver: each request goes to the UI
/// thread as a modal, and the calling thread waits for the answer. A UI that is gone denies.
pub struct UiApprover {
    tx: Mutex<Sender<Msg>>,
}

impl UiApprover {
    pub fn new(tx: Sender<Msg>) -> UiApprover {
        UiApprover { tx: Mutex::new(tx) }
    }

    fn ask<A>(&self, make: impl FnOnce(Sender<A>) -> Msg) -> Option<A> {
        let (reply, answer) = mpsc::channel();
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(make(reply));
        sent.ok()?;
        answer.recv().ok()
    }
}

impl Approver for UiApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.ask(|reply| Msg::Approval(request.clone(), reply))
            .unwrap_or(ApprovalAnswer::Deny)
    }
}

impl LaunchApprover for UiApprover {
    fn approve_launch(&self, request: &LaunchRequest) -> LaunchAnswer {
        self.ask(|reply| Msg::Launch(request.clone(), reply))
            .unwrap_or(LaunchAnswer::Deny)
    }
}

pub(super) fn launch_choices(request: &LaunchRequest) -> Choices<LaunchAnswer> {
    Choices {
        title: trf(Ui::LaunchTitle, &[&one_row(&request.server)]),
        body: vec![
            Line::styled(
                trf(
                    Ui::LaunchDeclared,
                    &[&one_row(&request.origin), &one_row(&request.transport)],
                ),
                Style::Dim,
            ),
            Line::styled(one_row(&request.detail), Style::Bold),
        ],
        items: vec![
            Choice {
                label: tr(Ui::LaunchSession).into(),
                key: Some('y'),
                value: LaunchAnswer::Session,
            },
            Choice {
                label: tr(Ui::LaunchAlways).into(),
                key: Some('a'),
                value: LaunchAnswer::Always,
            },
            Choice {
                label: tr(Ui::LaunchNo).into(),
                key: Some('n'),
                value: LaunchAnswer::Deny,
            },
        ],
        selected: 0,
        on_cancel: Some(LaunchAnswer::Deny),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::channel;
    use super::*;
    use crate::term::keys::Key;
    use crate::term::modal::Outcome;

    #[test]
    fn approver_relays_requests_and_denies_when_the_ui_is_gone() {
        let (tx, rx) = channel();
        let approver = UiApprover::new(tx);
        let request = ApprovalRequest {
            tool: "bash".into(),
            family: crate::tool::Family::Shell,
            subject: Some("ls".into()),
            args: json!({"command": "ls"}),
            rule: None,
            scopes: Vec::new(),
            note: None,
        };
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Approval(req, reply)) = rx.recv() else {
                panic!("expected an approval request");
            };
            assert_eq!(req.tool, "bash");
            reply.send(ApprovalAnswer::Once).unwrap();
            drop(rx);
        });
        assert_eq!(approver.approve(&request), ApprovalAnswer::Once);
        ui.join().unwrap();
        assert_eq!(approver.approve(&request), ApprovalAnswer::Deny);
    }

    #[test]
    fn launch_grants_are_asked_through_the_same_channel() {
        let (tx, rx) = channel();
        let approver = UiApprover::new(tx);
        let request = LaunchRequest {
            server: "docs".into(),
            origin: "reasonix.toml".into(),
            transport: "stdio".into(),
            detail: "npx docs-server".into(),
        };
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Launch(req, reply)) = rx.recv() else {
                panic!("expected a launch request");
            };
            let mut choices = launch_choices(&req);
            let text: Vec<String> = choices.render(60).iter().map(Line::text).collect();
            assert!(
                text.iter().any(|l| l.contains("npx docs-server")),
                "{text:?}"
            );
            let Outcome::Chosen(answer) = choices.key(&Key::Char('a')) else {
                panic!("`a` answers");
            };
            reply.send(answer).unwrap();
        });
        assert_eq!(approver.approve_launch(&request), LaunchAnswer::Always);
        ui.join().unwrap();
    }
}
