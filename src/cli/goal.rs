//! Goal mode in `reasonix run`: the `--goal`, `--research`, `--simple` and
//! `--max-continuations` flags, the goal a run starts (also the AutoResearch upgrade of an
//! ordinary prompt with a very strong signal), driving it through the controller of
//! `agent::goal`, and how its end becomes the result object's `goal`, subtype and exit code.

use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use super::lex::{Arg, Lexer};
use crate::agent::autoresearch::{self, Choice};
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::goal::{End, Goal, Turn};
use crate::agent::runner::{AgentError, Finish};
use crate::cli::error::{exit, Error};

/// `run`'s goal flags.
#[derive(Debug, Default)]
pub struct GoalFlags {
    /// `--goal`: the prompt is a goal's objective.
    pub goal: bool,
    /// `--research` (implies `--goal`) or `--simple` (no AutoResearch, and no upgrade).
    pub choice: Choice,
    /// `--max-continuations N`: the safety limit on continuation turns.
    pub max_continuations: Option<u32>,
}

impl GoalFlags {
    /// Consumes `arg` if it is a goal flag.
    pub fn accept(&mut self, arg: &Arg, lexer: &mut Lexer) -> Result<bool, Error> {
        let Arg::Long(name) = arg else {
            return Ok(false);
        };
        let choice = match name.as_str() {
            "goal" => {
                self.goal = true;
                return Ok(true);
            }
            "research" => Choice::Research,
            "simple" => Choice::Simple,
            "max-continuations" => {
                let value = lexer.value(&arg.shown()).map_err(Error::Usage)?;
                self.max_continuations = Some(value.parse().map_err(|_| {
                    Error::Usage(format!(
                        "--max-continuations needs a whole number, got `{value}`"
                    ))
                })?);
                return Ok(true);
            }
            _ => return Ok(false),
        };
        if self.choice != Choice::Classify && self.choice != choice {
            return Err(Error::Usage(
                "--research and --simple exclude each other".into(),
            ));
        }
        self.choice = choice;
        Ok(true)
    }

    /// Goal mode and plan mode are two collaboration modes; a run has one.
    pub fn check(&self, plan: bool) -> Result<(), Error> {
        if plan && (self.goal || self.choice == Choice::Research) {
            return Err(Error::Usage(
                "--goal and --plan are two collaboration modes; choose one".into(),
            ));
        }
        Ok(())
    }
}

/// The goal this run works on, if any: `--goal`/`--research`, or an ordinary prompt the
/// strict classifier upgrades (unless `--simple`, or `upgrade` is off: plan mode, a
/// subagent profile).
pub fn start(
    flags: &GoalFlags,
    prompt: &str,
    cwd: &Path,
    upgrade: bool,
    sink: &mut dyn EventSink,
) -> Result<Option<Goal>, Error> {
    let explicit = flags.goal || flags.choice == Choice::Research;
    let upgraded = !explicit
        && upgrade
        && flags.choice == Choice::Classify
        && autoresearch::upgrades_prompt(prompt);
    if !explicit && !upgraded {
        return Ok(None);
    }
    let choice = if upgraded {
        Choice::Research
    } else {
        flags.choice
    };
    let goal = Goal::start(prompt, choice, cwd, SystemTime::now())
        .map_err(|e| Error::Failed(e.to_string()))?;
    let goal = match flags.max_continuations {
        Some(limit) => goal.with_limit(limit),
        None => goal,
    };
    let strategy = match goal.research_dir() {
        Some(dir) => format!("AutoResearch, its state in {dir}/"),
        None => "lightweight".to_string(),
    };
    let message = if upgraded {
        format!(
            "autoresearch: this prompt asks for long-horizon research, so it runs as a goal \
             ({strategy}); --simple runs it as one ordinary turn"
        )
    } else {
        format!(
            "goal mode ({strategy}): continuing until the model reports the goal complete, at \
             most {} continuation turns",
            goal.limit()
        )
    };
    sink.emit(Event::Notice {
        level: NoticeLevel::Info,
        message,
    });
    Ok(Some(goal))
}

/// How a goal's run ended, for the result: the `goal` object and, when the goal decides the
/// outcome, the subtype, exit code and error it gives.
pub struct GoalRun {
    pub json: Value,
    pub verdict: Option<(&'static str, i32, String)>,
}

/// Drives `goal` from `prompt` with `turn` (one user or continuation turn, returning how it
/// finished and the model's final text). The agent's own outcome stays what it was for the
/// endings the agent decides (a step limit, an interruption); a blocked goal and the
/// continuation limit are the goal's.
pub fn drive(
    goal: &mut Goal,
    prompt: String,
    sink: &mut dyn EventSink,
    mut turn: impl FnMut(String, &mut dyn EventSink) -> Result<(Finish, String), AgentError>,
) -> (Result<Finish, AgentError>, GoalRun) {
    let ended = goal.drive(prompt, sink, |input, sink| {
        Ok(match turn(input, sink)? {
            (Finish::Answered, text) => Turn::Answered(text),
            (other, _) => Turn::Ended(other),
        })
    });
    let (outcome, state, verdict) = match ended {
        Ok(End::Complete) => (Ok(Finish::Answered), "complete", None),
        Ok(End::Blocked) => {
            let reason = goal
                .last_report()
                .map(|r| r.reason.clone())
                .unwrap_or_default();
            let verdict = (
                "error_goal_blocked",
                exit::NO_PROGRESS,
                format!(
                    "goal: blocked: {reason} (the same blocked state {} times)",
                    crate::agent::goal::BLOCKED_REPEATS
                ),
            );
            (Ok(Finish::Answered), "blocked", Some(verdict))
        }
        Ok(End::Limit) => {
            let verdict = (
                "error_goal_limit",
                exit::MAX_STEPS,
                format!(
                    "goal: stopped after {} continuation turns (the safety limit, \
                     --max-continuations) with the goal not complete",
                    goal.limit()
                ),
            );
            (Ok(Finish::Answered), "limit", Some(verdict))
        }
        Ok(End::Ended(finish)) => (Ok(finish), "ended", None),
        Err(err) => (Err(err), "stopped", None),
    };
    let json = goal.to_json(state);
    (outcome, GoalRun { json, verdict })
}
