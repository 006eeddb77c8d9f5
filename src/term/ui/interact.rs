//! The chat's [`Interact`]: an `ask` question or a plan to review travels to the UI thread as
//! a [`Msg`] with a reply channel, like an approval, and the tool's thread waits for the
//! modal's answer. Cancelling the asker's token answers `None` at once (a cancel hook sends it
//! on the same channel) and tells the UI with [`Msg::Withdrawn`], which closes the card whose
//! [`Reply`] is withdrawn; a UI that is gone or drops the modal answers `None` too (a [`Reply`]
//! dropped unanswered says `None`: the hook's copy of the sender keeps the channel open, so the
//! waiting side cannot rely on a disconnect).

use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, PoisonError};

use super::Msg;
use crate::cancel::CancelToken;
use crate::tool::collab::{Answer, Interact, PlanReview, Question};

/// Where the UI sends its answer; dropping it unanswered answers `None`.
pub struct Reply<A> {
    tx: Option<Sender<Option<A>>>,
    /// The asker's token: once cancelled, no one waits for the answer.
    asker: CancelToken,
}

impl<A> Reply<A> {
    /// Answers; a second answer is ignored.
    pub fn send(&mut self, answer: A) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Some(answer));
        }
    }

    /// The asker stopped waiting: the card can go.
    pub fn withdrawn(&self) -> bool {
        self.asker.is_cancelled()
    }
}

impl<A> Drop for Reply<A> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(None);
        }
    }
}

pub struct UiInteract {
    tx: Mutex<Sender<Msg>>,
}

impl UiInteract {
    pub fn new(tx: Sender<Msg>) -> UiInteract {
        UiInteract { tx: Mutex::new(tx) }
    }

    fn relay<A: Send + 'static>(
        &self,
        cancel: &CancelToken,
        make: impl FnOnce(Reply<A>) -> Msg,
    ) -> Option<A> {
        let (reply, answer) = mpsc::channel();
        let on_cancel = reply.clone();
        let ui = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // The UI hears of the withdrawal before the asker is released, so it can never see
        // the asker's next card first.
        let _hook = cancel.on_cancel(move || {
            let _ = ui.send(Msg::Withdrawn);
            let _ = on_cancel.send(None);
        });
        if cancel.is_cancelled() {
            return None;
        }
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(make(Reply {
                tx: Some(reply),
                asker: cancel.clone(),
            }));
        sent.ok()?;
        answer.recv().ok().flatten()
    }
}

impl Interact for UiInteract {
    fn ask(&self, question: &Question, cancel: &CancelToken) -> Option<Answer> {
        self.relay(cancel, |reply| Msg::Ask(question.clone(), reply))
    }

    fn review_plan(&self, plan: &str, cancel: &CancelToken) -> Option<PlanReview> {
        self.relay(cancel, |reply| Msg::PlanReview(plan.to_string(), reply))
    }
}

#[cfg(test)]
mod tests {
    use super::super::channel;
    use super::*;

    fn question() -> Question {
        Question {
            question: "Which?".into(),
            options: vec!["a".into(), "b".into()],
            allow_free_text: false,
        }
    }

    #[test]
    fn questions_and_plans_reach_the_ui_and_come_back_answered() {
        let (tx, rx) = channel();
        let interact = UiInteract::new(tx);
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Ask(q, mut reply)) = rx.recv() else {
                panic!("expected a question");
            };
            assert_eq!(q.options, ["a", "b"]);
            reply.send(Answer::Option(1));
            let Ok(Msg::PlanReview(plan, mut reply)) = rx.recv() else {
                panic!("expected a plan");
            };
            assert_eq!(plan, "1. do it");
            reply.send(PlanReview::KeepPlanning("smaller".into()));
            // The UI drops the next request unanswered (the chat is closing).
            let Ok(Msg::Ask(_, reply)) = rx.recv() else {
                panic!("expected a question");
            };
            drop(reply);
        });
        let cancel = CancelToken::new();
        assert_eq!(interact.ask(&question(), &cancel), Some(Answer::Option(1)));
        assert_eq!(
            interact.review_plan("1. do it", &cancel),
            Some(PlanReview::KeepPlanning("smaller".into()))
        );
        assert_eq!(interact.ask(&question(), &cancel), None);
        ui.join().unwrap();
        // A UI that is gone answers nothing.
        assert_eq!(interact.ask(&question(), &cancel), None);
    }

    #[test]
    fn cancelling_the_turn_answers_none_while_the_card_is_open() {
        let (tx, rx) = channel();
        let interact = UiInteract::new(tx);
        let cancel = CancelToken::new();
        let canceller = cancel.clone();
        let ui = std::thread::spawn(move || {
            // The card is open (the request arrived); the user interrupts the turn, and the
            // UI keeps the reply channel without answering.
            let Ok(Msg::Ask(_, reply)) = rx.recv() else {
                panic!("expected a question");
            };
            assert!(!reply.withdrawn());
            canceller.cancel();
            (reply, rx)
        });
        assert_eq!(interact.ask(&question(), &cancel), None);
        let (reply, rx) = ui.join().unwrap();
        // The UI hears of it, and the card's reply says it is withdrawn.
        assert!(matches!(rx.recv(), Ok(Msg::Withdrawn)));
        assert!(reply.withdrawn());
    }
}
