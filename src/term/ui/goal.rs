//! Goal mode in the chat: `/goal [--research|--simple] OBJECTIVE`, `/goal clear` and `/goal`
//! (what is active), the AutoResearch upgrade of an ordinary message with a very strong
//! signal, and the turn thread's side: a turn with an active goal is driven by the controller
//! of `agent::goal` until the goal ends, and how it ended becomes a notice. Normal, plan and
//! goal are one collaboration mode: entering plan mode, Shift-Tab back to normal, and a new,
//! cleared or resumed conversation end the goal; the tool approval posture is left alone.
//!
//! The goal lives in [`Chat::goal`], shared with the turn thread: the thread drives a copy
//! and puts it back when the goal is still open (commands that change it wait for an idle
//! agent, so nothing else writes it meanwhile).

use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::Chat;
use crate::agent::autoresearch::{self, Choice};
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::goal::{End, Goal, Turn, BLOCKED_REPEATS};
use crate::agent::runner::{AgentError, Finish};
use crate::command::input::{self, Input};
use crate::command::CommandError;
use crate::i18n::{tr, trf, Ui};

impl Chat {
    /// `/goal ...`.
    pub(super) fn goal_command(&mut self, args: &str) {
        let args = args.trim();
        if args.is_empty() {
            let active = lock(&self.goal).as_ref().map(|g| g.objective().to_string());
            let text = match active {
                Some(objective) => crate::i18n::trf(
                    crate::i18n::Ui::GoalActive,
                    &[&crate::text::one_line(&objective, 200)],
                ),
                None => crate::i18n::tr(crate::i18n::Ui::GoalNone).into(),
            };
            self.transcript.notice(NoticeLevel::Info, &text);
            return;
        }
        if args == "clear" {
            let text = crate::i18n::tr(if self.clear_goal() {
                crate::i18n::Ui::GoalClearedNormal
            } else {
                crate::i18n::Ui::GoalNoneActive
            });
            self.transcript.notice(NoticeLevel::Info, text);
            return;
        }
        let mut choice = Choice::Classify;
        let mut objective = args;
        while let Some(rest) = objective.strip_prefix("--") {
            let (flag, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            choice = match flag {
                "research" => Choice::Research,
                "simple" => Choice::Simple,
                _ => {
                    self.transcript.error(&trf(Ui::GoalUnknownFlag, &[&flag]));
                    return;
                }
            };
            objective = after.trim_start();
        }
        self.start_goal(objective, choice, "");
    }

    /// Makes `objective` the active goal (leaving plan mode) and sends it as the goal's first
    /// message. `why` prefixes the notice.
    fn start_goal(&mut self, objective: &str, choice: Choice, why: &str) {
        let mut message = match input::interpret(objective, &self.catalog) {
            Some(Ok(Input::Message(message))) => message,
            Some(Ok(Input::Builtin(builtin, _))) => {
                let err = CommandError::NeedsChat(builtin);
                self.transcript.error(&trf(Ui::GoalBuiltin, &[&err]));
                return;
            }
            Some(Ok(Input::Profile { name, .. })) => {
                let err = CommandError::ProfileHere(name);
                return self.transcript.error(&err.to_string());
            }
            Some(Err(err)) => return self.transcript.error(&err.to_string()),
            None => return self.transcript.error(tr(Ui::GoalEmpty)),
        };
        let goal = match Goal::start(objective, choice, &self.cwd, SystemTime::now()) {
            Ok(goal) => goal,
            Err(err) => return self.transcript.error(&err.to_string()),
        };
        if self.planning() && !self.set_planning(false) {
            return;
        }
        let strategy = match goal.research_dir() {
            Some(dir) => trf(Ui::GoalStrategyResearch, &[&dir]),
            None => tr(Ui::GoalStrategyLight).into(),
        };
        self.transcript.notice(
            NoticeLevel::Info,
            &format!("{why}{}", trf(Ui::GoalStarted, &[&strategy, &goal.limit()])),
        );
        *lock(&self.goal) = Some(goal);
        // `/goal` itself is already in the transcript; the objective is not shown twice.
        if message.display == objective {
            message.display.clear();
        }
        self.send(message);
    }

    /// An ordinary message outside goal and plan mode that the strict classifier upgrades
    /// becomes `/goal --research MESSAGE`. Returns whether it did (and sent it).
    pub(super) fn upgrade_to_goal(&mut self, typed: &str) -> bool {
        if self.goal_label().is_some() || self.planning() || !autoresearch::upgrades_prompt(typed) {
            return false;
        }
        self.transcript.user_message(typed);
        self.start_goal(typed, Choice::Research, tr(Ui::GoalAutoresearch));
        true
    }

    /// Ends the active goal, if there is one; returns whether there was.
    pub(super) fn clear_goal(&mut self) -> bool {
        lock(&self.goal).take().is_some()
    }

    /// What the status line shows for the active goal.
    pub(super) fn goal_label(&self) -> Option<&'static str> {
        lock(&self.goal)
            .as_ref()
            .map(|goal| match goal.research_dir() {
                Some(_) => crate::i18n::tr(crate::i18n::Ui::ModeGoalResearch),
                None => crate::i18n::tr(crate::i18n::Ui::ModeGoal),
            })
    }
}

fn lock(goal: &Mutex<Option<Goal>>) -> std::sync::MutexGuard<'_, Option<Goal>> {
    goal.lock().unwrap_or_else(PoisonError::into_inner)
}

/// On the turn thread: runs `text` as a turn through `turn` (one turn: how it finished and
/// the model's final text), driven by the controller while a goal is active. A goal that ends
/// complete is cleared; one that is blocked, at its limit or stopped stays active, and the
/// user's next message continues it.
pub(super) fn run_turn(
    goal: &Mutex<Option<Goal>>,
    text: String,
    sink: &mut dyn EventSink,
    mut turn: impl FnMut(String, &mut dyn EventSink) -> Result<(Finish, String), AgentError>,
) -> Result<Finish, AgentError> {
    let Some(mut active) = lock(goal).clone() else {
        return turn(text, sink).map(|(finish, _)| finish);
    };
    let ended = active.drive(text, sink, |input, sink| {
        Ok(match turn(input, sink)? {
            (Finish::Answered, text) => Turn::Answered(text),
            (other, _) => Turn::Ended(other),
        })
    });
    let report = active.last_report().cloned().unwrap_or_default();
    let notice = |level, message: String| Event::Notice { level, message };
    let (open, result) = match ended {
        Ok(End::Complete) => {
            let mut text = trf(Ui::GoalComplete, &[&report.summary]);
            if !report.verified.is_empty() {
                text.push_str(&trf(Ui::GoalVerified, &[&report.verified.join(", ")]));
            }
            let unverified = if report.verified.is_empty() && report.unverified.is_empty() {
                tr(Ui::GoalNothingVerified).to_string()
            } else {
                report.unverified.join(", ")
            };
            if !unverified.is_empty() {
                text.push_str(&trf(Ui::GoalUnverified, &[&unverified]));
            }
            sink.emit(notice(NoticeLevel::Info, text));
            (false, Ok(Finish::Answered))
        }
        Ok(End::Blocked) => {
            sink.emit(notice(
                NoticeLevel::Warning,
                trf(Ui::GoalBlocked, &[&report.reason, &BLOCKED_REPEATS]),
            ));
            (true, Ok(Finish::Answered))
        }
        Ok(End::Limit) => {
            sink.emit(notice(
                NoticeLevel::Warning,
                trf(Ui::GoalLimit, &[&active.limit()]),
            ));
            (true, Ok(Finish::Answered))
        }
        Ok(End::Ended(finish)) => (true, Ok(finish)),
        Err(err) => (true, Err(err)),
    };
    *lock(goal) = open.then_some(active);
    result
}
