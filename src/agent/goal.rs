//! Goal mode (SPEC §3.7, "Collaboration mode is separate from tool approval"): an active goal
//! and the controller that keeps the model working on it. This module owns
//!
//! - the goal block: the objective as a task contract (its Context / Request / Output format /
//!   Constraints / Pause policy sections when present, else a light contract the model
//!   infers), the pause policy, what completion requires, the report protocol, and for a
//!   research goal the AutoResearch protocol (`autoresearch`). It is prepended to user turns,
//!   stored with them, never in the system prompt or the tool list, so the cache-stable prefix
//!   is the same in every mode and the history only grows;
//! - the report protocol and its parser ([`parse_report`]);
//! - the controller ([`Goal::drive`]): it sends a turn, reads the report at the end of the
//!   answer, and sends continuation turns until the model reports completion, the same
//!   blocked state comes back [`BLOCKED_REPEATS`] times (normalised for case, whitespace and
//!   punctuation), the safety continuation limit is reached, or the turn ends some other way
//!   (interrupted, the step limit, a plan). It drives turns through a closure, so it does not
//!   care whether an agent or a coordinator runs them.
//!
//! Showing the goal and stopping it are the front ends' (`cli::goal`, `term::ui::goal`).
//!
//! Why a status block at the end of the answer and not a `goal_status` tool: the tool list is
//! part of the cache-stable prefix. A tool registered only while a goal is active would change
//! that prefix twice per goal (and the tool contract); one registered always would cost every
//! request of every session its schema and invite calls outside goal mode. A tool call also
//! needs one more round trip (its result, then the model's answer). A fenced block in the final
//! answer costs nothing outside goals, is taught by the goal block itself, and is parsed
//! leniently; an answer without one counts as "continue", and the next turn asks for it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

use super::autoresearch::{self, Choice};
use super::events::{Event, EventSink, NoticeLevel};

/// Continuation turns one user turn may lead to, unless the front end sets another limit.
pub const DEFAULT_CONTINUATION_LIMIT: u32 = 20;

/// The same blocked state this many times ends the goal's run.
pub const BLOCKED_REPEATS: u32 = 3;

/// The sections of a task contract, as an objective may spell them.
const SECTIONS: [&str; 5] = [
    "context",
    "request",
    "output format",
    "constraints",
    "pause policy",
];

const OPEN: &str = "<goal-status>";
const CLOSE: &str = "</goal-status>";

#[derive(Debug)]
pub enum GoalError {
    /// `/goal` or `--goal` without an objective.
    EmptyObjective,
    /// The AutoResearch directory could not be created.
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl fmt::Display for GoalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoalError::EmptyObjective => write!(f, "goal: the objective is empty"),
            GoalError::Directory { path, source } => {
                write!(f, "goal: cannot create {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for GoalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GoalError::Directory { source, .. } => Some(source),
            GoalError::EmptyObjective => None,
        }
    }
}

/// What the model said about the goal at the end of an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum State {
    #[default]
    Continue,
    Complete,
    Blocked,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub state: State,
    pub summary: String,
    /// What the model checked, and how (a completion).
    pub verified: Vec<String>,
    /// What it could not check (a completion).
    pub unverified: Vec<String>,
    /// What it needs from the user (blocked).
    pub reason: String,
}

/// How one turn driven by the controller ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn<F> {
    /// The model answered; its final text.
    Answered(String),
    /// The turn ended otherwise (a step limit, a plan, no progress): the goal's run stops.
    Ended(F),
}

/// Why [`Goal::drive`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End<F> {
    /// The model reported the goal complete (the report is [`Goal::last_report`]).
    Complete,
    /// The same blocked state came back [`BLOCKED_REPEATS`] times.
    Blocked,
    /// The safety continuation limit was reached with the goal still open.
    Limit,
    Ended(F),
}

/// An active goal: the objective, its strategy and the controller's audit.
#[derive(Debug, Clone)]
pub struct Goal {
    objective: String,
    /// The AutoResearch directory (relative to the workspace) of a research goal.
    research: Option<String>,
    /// Whether a turn of this goal was sent (the first one states the goal only).
    started: bool,
    /// Each normalised blocked state and how often it was reported.
    blocked: BTreeMap<String, u32>,
    limit: u32,
    /// Continuation turns in the last [`Goal::drive`].
    continuations: u32,
    last: Option<Report>,
}

impl Goal {
    /// A goal for `objective`. A research goal (the classifier's or the user's choice) gets
    /// its directory under `workspace` now.
    pub fn start(
        objective: &str,
        choice: Choice,
        workspace: &Path,
        now: SystemTime,
    ) -> Result<Goal, GoalError> {
        let objective = objective.trim();
        if objective.is_empty() {
            return Err(GoalError::EmptyObjective);
        }
        let research = if autoresearch::for_goal(objective, choice) {
            let dir = autoresearch::create_dir(workspace, objective, now).map_err(|source| {
                GoalError::Directory {
                    path: workspace.join(autoresearch::ROOT),
                    source,
                }
            })?;
            Some(dir)
        } else {
            None
        };
        Ok(Goal {
            objective: objective.to_string(),
            research,
            started: false,
            blocked: BTreeMap::new(),
            limit: DEFAULT_CONTINUATION_LIMIT,
            continuations: 0,
            last: None,
        })
    }

    /// Sets the safety continuation limit (per user turn).
    pub fn with_limit(mut self, limit: u32) -> Goal {
        self.limit = limit;
        self
    }

    pub fn objective(&self) -> &str {
        &self.objective
    }

    /// The AutoResearch directory, relative to the workspace, of a research goal.
    pub fn research_dir(&self) -> Option<&str> {
        self.research.as_deref()
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn last_report(&self) -> Option<&Report> {
        self.last.as_ref()
    }

    /// Sends `message` as a user turn with the goal block before it, then continuation turns
    /// until the goal's run ends (see the module comment). `turn` runs one turn; an error from
    /// it (an interruption) ends the run and leaves the goal active.
    pub fn drive<F, E>(
        &mut self,
        message: String,
        sink: &mut dyn EventSink,
        mut turn: impl FnMut(String, &mut dyn EventSink) -> Result<Turn<F>, E>,
    ) -> Result<End<F>, E> {
        self.continuations = 0;
        let mut input = self.user_turn(message);
        loop {
            let answer = match turn(input, sink)? {
                Turn::Answered(answer) => answer,
                Turn::Ended(finish) => return Ok(End::Ended(finish)),
            };
            let report = parse_report(&answer);
            let state = report.as_ref().map(|r| r.state).unwrap_or_default();
            if let Some(report) = &report {
                self.last = Some(report.clone());
            }
            match state {
                State::Complete => return Ok(End::Complete),
                State::Blocked if self.audit_blocked(report.as_ref()) => return Ok(End::Blocked),
                State::Blocked | State::Continue => {}
            }
            if self.continuations >= self.limit {
                return Ok(End::Limit);
            }
            self.continuations += 1;
            sink.emit(Event::Notice {
                level: NoticeLevel::Info,
                message: self.progress_line(report.as_ref()),
            });
            input = self.continuation(report.as_ref());
        }
    }

    /// Counts a blocked report; true when its state has now come back [`BLOCKED_REPEATS`] times.
    fn audit_blocked(&mut self, report: Option<&Report>) -> bool {
        let Some(report) = report else {
            return false;
        };
        let what = if report.reason.trim().is_empty() {
            &report.summary
        } else {
            &report.reason
        };
        let count = self.blocked.entry(normalise(what)).or_insert(0);
        *count += 1;
        *count >= BLOCKED_REPEATS
    }

    /// The notice of a continuation turn.
    fn progress_line(&self, report: Option<&Report>) -> String {
        let mut line = format!(
            "goal: continuing ({} of {})",
            self.continuations, self.limit
        );
        match report {
            Some(r) if r.state == State::Blocked => line.push_str(&format!(
                "; blocked: {}",
                crate::text::one_line(&r.reason, 160)
            )),
            Some(r) if !r.summary.is_empty() => {
                line.push_str(&format!(": {}", crate::text::one_line(&r.summary, 160)))
            }
            Some(_) => {}
            None => line.push_str("; the answer had no goal status"),
        }
        line
    }

    /// A user turn: the goal block, then what the user said. The goal's first message is
    /// usually the objective itself (the front end sends it), so it is stated once, in the
    /// block.
    fn user_turn(&mut self, message: String) -> String {
        let first = !std::mem::replace(&mut self.started, true);
        if first && message.trim() == self.objective {
            return format!("{}\n\nStart working on the goal now.", self.block());
        }
        // A later message, or the objective with its `@` references resolved.
        format!("{}\n\n{message}", self.block())
    }

    /// The full goal block.
    fn block(&self) -> String {
        let found = contract_sections(&self.objective);
        let contract = if found.is_empty() {
            "The objective has no explicit contract: infer a light one from the conversation and \
             the workspace (what is requested, the form of the result, the constraints, how to \
             verify it) and state it briefly in your first answer."
                .to_string()
        } else {
            format!(
                "The objective is a task contract: its {} section{} bound your autonomous work.",
                found.join(", "),
                if found.len() == 1 { "" } else { "s" }
            )
        };
        let mut block = format!(
            "<active-goal>\n\
             You are working autonomously toward the goal below. After each of your answers the \
             host tells you to continue, until you report the goal complete or blocked.\n\n\
             Objective:\n{}\n\n\
             {contract}\n\n\
             Pause policy: report blocked only for an irreversible or externally visible \
             operation (deleting data, pushing, publishing, sending messages, spending money), \
             a change of scope, or information only the user has. Handle ordinary uncertainty \
             with a sensible default and state it as an assumption.\n\n\
             Completion: report complete only when the request, the output format, the \
             constraints and the relevant verification (tests, builds, running the result) are \
             satisfied, and say what you verified and what you could not verify.\n\n\
             {}",
            self.objective, REPORT_FORMAT
        );
        if let Some(dir) = &self.research {
            block.push_str("\n\n");
            block.push_str(&autoresearch::protocol(dir));
        }
        block.push_str("\n</active-goal>");
        block
    }

    /// A continuation turn: a short reminder of the goal and what to do next.
    fn continuation(&self, report: Option<&Report>) -> String {
        let next = match report {
            None => "Your last answer ended without a <goal-status> block. Continue working \
                     toward the goal, and end your answer with the block."
                .to_string(),
            Some(r) if r.state == State::Blocked => format!(
                "You reported blocked: {}. The user is not available now. If this really is an \
                 irreversible or externally visible operation, a change of scope or information \
                 only the user has, report blocked again with the same reason. Otherwise choose \
                 a sensible default, state it as an assumption and continue.",
                one_paragraph(&r.reason)
            ),
            Some(_) => "Continue with the next step toward the goal.".to_string(),
        };
        let mut reminder = format!(
            "<active-goal>\nContinuation {} of at most {} for the active goal stated in the \
             <active-goal> block above",
            self.continuations, self.limit
        );
        if let Some(dir) = &self.research {
            reminder.push_str(&format!(
                " (AutoResearch: read and update the files in {dir}/)"
            ));
        }
        reminder.push_str(&format!(
            ". End your answer with the <goal-status> block.\n</active-goal>\n\n{next}"
        ));
        reminder
    }

    /// The `goal` object of a headless run's result. `state` is how the run ended:
    /// `complete`, `blocked`, `limit`, `ended` (a step limit, a plan, no progress) or
    /// `stopped` (interrupted or failed).
    pub fn to_json(&self, state: &str) -> Value {
        let report = self.last.clone().unwrap_or_default();
        let mut unverified = report.unverified.clone();
        if state == "complete" && report.verified.is_empty() && unverified.is_empty() {
            unverified.push("the model did not say what it verified".into());
        }
        json!({
            "objective": self.objective,
            "state": state,
            "summary": report.summary,
            "verified": report.verified,
            "unverified": unverified,
            "reason": (state == "blocked").then_some(report.reason),
            "continuations": self.continuations,
            "autoresearch_dir": self.research,
        })
    }
}

/// The report protocol, as the goal block teaches it.
const REPORT_FORMAT: &str = "End every answer with this block (one value per key; lists one \
item per line starting with \"- \"):\n\
<goal-status>\n\
state: continue | complete | blocked\n\
summary: one line on where the work stands\n\
verified: (complete only) what you checked and how\n\
unverified: (complete only) what you could not check, or none\n\
reason: (blocked only) what you need from the user\n\
</goal-status>";

/// The contract sections an objective spells out, as headings or `Name:` lines.
fn contract_sections(objective: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for line in objective.lines() {
        let line = line
            .trim()
            .trim_start_matches(['#', '*', '-', ' '])
            .to_lowercase();
        for section in SECTIONS {
            let Some(rest) = line.strip_prefix(section) else {
                continue;
            };
            let rest = rest.trim_start_matches(['*', ' ']);
            if (rest.is_empty() || rest.starts_with(':')) && !found.contains(&section) {
                found.push(section);
            }
        }
    }
    found
}

/// The last `<goal-status>` block of an answer, read leniently: keys in any case, values on
/// following lines, list markers dropped, "none" as nothing, a missing closing tag.
pub fn parse_report(answer: &str) -> Option<Report> {
    // ASCII lowercasing keeps byte offsets.
    let lower = answer.to_ascii_lowercase();
    let start = lower.rfind(OPEN)? + OPEN.len();
    let end = lower[start..]
        .find(CLOSE)
        .map_or(answer.len(), |i| start + i);
    let mut fields: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut current: Option<&str> = None;
    for line in answer[start..end].lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            let key = key.trim().trim_matches('*').to_ascii_lowercase();
            let known = [
                "state",
                "status",
                "summary",
                "verified",
                "unverified",
                "reason",
            ];
            if let Some(key) = known.into_iter().find(|k| *k == key) {
                let key = if key == "status" { "state" } else { key };
                current = Some(key);
                let entry = fields.entry(key).or_default();
                if !value.trim().is_empty() {
                    entry.push(value.trim().to_string());
                }
                continue;
            }
        }
        if let Some(key) = current {
            fields.entry(key).or_default().push(trimmed.to_string());
        }
    }
    let items = |key: &str| -> Vec<String> {
        fields
            .get(key)
            .into_iter()
            .flatten()
            .map(|v| {
                v.trim_start_matches(['-', '*', '•', ' '])
                    .trim()
                    .to_string()
            })
            .filter(|v| !v.is_empty() && !is_none(v))
            .collect()
    };
    let state_word = items("state").join(" ").to_ascii_lowercase();
    let state = if state_word.contains('|') {
        // The template echoed back.
        State::Continue
    } else if ["complete", "done", "finished"]
        .iter()
        .any(|w| state_word.starts_with(w))
    {
        State::Complete
    } else if state_word.starts_with("blocked") {
        State::Blocked
    } else {
        State::Continue
    };
    Some(Report {
        state,
        summary: items("summary").join(" "),
        verified: items("verified"),
        unverified: items("unverified"),
        reason: items("reason").join(" "),
    })
}

/// The answer without its status block, for a result that shows only the answer.
pub fn strip_report(answer: &str) -> &str {
    let lower = answer.to_ascii_lowercase();
    match lower.rfind(OPEN) {
        Some(at) => answer[..at].trim_end(),
        None => answer,
    }
}

fn is_none(value: &str) -> bool {
    let v = value.trim_end_matches('.').to_ascii_lowercase();
    matches!(v.as_str(), "none" | "n/a" | "nothing" | "-")
}

/// A blocked state for the audit: lowercase, words only, single spaces. "Need the API key."
/// and "need the  API key" are the same state.
pub fn normalise(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out.trim_end().to_string()
}

fn one_paragraph(text: &str) -> String {
    crate::text::collapse_whitespace(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn goal(objective: &str) -> (TempDir, Goal) {
        let dir = TempDir::new("goal");
        let goal = Goal::start(objective, Choice::Simple, dir.path(), SystemTime::now()).unwrap();
        (dir, goal)
    }

    fn status(state: &str, extra: &str) -> String {
        format!("Did things.\n\n<goal-status>\nstate: {state}\n{extra}</goal-status>\n")
    }

    #[test]
    fn reports_are_parsed_leniently() {
        let answer = "Done.\n<GOAL-STATUS>\n**State**: Complete\nsummary: tests pass\n\
                      verified:\n- cargo test (41 passed)\n- read the diff\nunverified: none\n\
                      </goal-status>";
        let report = parse_report(answer).unwrap();
        assert_eq!(report.state, State::Complete);
        assert_eq!(report.summary, "tests pass");
        assert_eq!(report.verified, ["cargo test (41 passed)", "read the diff"]);
        assert!(report.unverified.is_empty());
        assert_eq!(strip_report(answer), "Done.");

        let blocked =
            parse_report("<goal-status>\nstatus: blocked\nreason: need the\n  API key").unwrap();
        assert_eq!(blocked.state, State::Blocked);
        assert_eq!(blocked.reason, "need the API key");

        let echoed = parse_report(&status("continue | complete | blocked", "")).unwrap();
        assert_eq!(echoed.state, State::Continue);
        assert_eq!(parse_report("no block here"), None);
        // The last block counts.
        let two = format!("{}{}", status("blocked", ""), status("complete", ""));
        assert_eq!(parse_report(&two).unwrap().state, State::Complete);
    }

    #[test]
    fn blocked_states_are_normalised() {
        assert_eq!(normalise("Need the API key."), "need the api key");
        assert_eq!(normalise("  need the   api KEY!! "), "need the api key");
        assert_eq!(normalise("need, the api-key"), "need the api key");
        assert_ne!(
            normalise("need the db password"),
            normalise("need the api key")
        );
    }

    #[test]
    fn contract_sections_are_found_as_headings_or_labels() {
        let objective = "## Context\nA CLI.\n**Request:** add --json\nOutput format: a PR\n\
                         constraints - none\nPause policy:\nask before pushing";
        assert_eq!(
            contract_sections(objective),
            ["context", "request", "output format", "pause policy"]
        );
        assert!(contract_sections("fix the request parser").is_empty());
        let (_dir, mut g) = goal("Request: add --json\nConstraints: no new crates");
        let first = g.user_turn("Request: add --json\nConstraints: no new crates".into());
        assert!(
            first.contains("its request, constraints sections bound"),
            "{first}"
        );
        let (_dir, mut g) = goal("fix it");
        assert!(g.user_turn("fix it".into()).contains("infer a light one"));
    }

    /// Drives `goal` with scripted answers; returns the end, the inputs sent and the notices.
    fn drive(goal: &mut Goal, answers: &[&str]) -> (End<&'static str>, Vec<String>, Vec<String>) {
        let mut inputs = Vec::new();
        let mut notices = Vec::new();
        let mut answers = answers.iter();
        let mut sink = |event: Event| {
            if let Event::Notice { message, .. } = event {
                notices.push(message);
            }
        };
        let end = goal
            .drive("the objective".into(), &mut sink, |input, _| {
                inputs.push(input);
                match answers.next() {
                    Some(a) => Ok::<_, ()>(Turn::Answered(a.to_string())),
                    None => Ok(Turn::Ended("out of answers")),
                }
            })
            .unwrap();
        (end, inputs, notices)
    }

    #[test]
    fn the_controller_continues_until_complete() {
        let (_dir, mut g) = goal("the objective");
        let (end, inputs, notices) = drive(
            &mut g,
            &[
                "working",
                &status("continue", "summary: step one\n"),
                &status("complete", "summary: all done\nverified: tests\n"),
            ],
        );
        assert_eq!(end, End::Complete);
        assert_eq!(inputs.len(), 3);
        assert!(inputs[0].starts_with("<active-goal>\n"), "{}", inputs[0]);
        assert!(inputs[0].contains("Objective:\nthe objective\n"));
        assert!(inputs[1].contains("ended without a <goal-status> block"));
        assert!(inputs[2].contains("Continue with the next step"));
        assert_eq!(
            notices,
            [
                "goal: continuing (1 of 20); the answer had no goal status",
                "goal: continuing (2 of 20): step one"
            ]
        );
        let json = g.to_json("complete");
        assert_eq!(json["verified"], json!(["tests"]));
        assert_eq!(json["continuations"], 2);
        assert_eq!(json["reason"], Value::Null);
    }

    #[test]
    fn three_normalised_repeats_of_a_blocked_state_stop_it_and_a_new_goal_starts_fresh() {
        let (_dir, mut g) = goal("the objective");
        let (end, inputs, _) = drive(
            &mut g,
            &[
                &status("blocked", "reason: Need the API key.\n"),
                &status("blocked", "reason: need the db password\n"),
                &status("blocked", "reason: need the  api KEY\n"),
                &status("blocked", "reason: NEED THE API KEY!\n"),
                "never sent",
            ],
        );
        assert_eq!(end, End::Blocked);
        assert_eq!(inputs.len(), 4, "stopped at the third repeat");
        assert!(inputs[1].contains("You reported blocked: Need the API key."));
        assert_eq!(g.to_json("blocked")["reason"], "NEED THE API KEY!");
        // The audit lives with the goal: the same goal driven again stops at once...
        let (end, inputs, _) = drive(&mut g, &[&status("blocked", "reason: need the api key\n")]);
        assert_eq!((end, inputs.len()), (End::Blocked, 1));
        // ...and a restarted goal audits afresh.
        let (_dir, mut g) = goal("the objective");
        let (end, inputs, _) = drive(
            &mut g,
            &[
                &status("blocked", "reason: need the api key\n"),
                &status("complete", ""),
            ],
        );
        assert_eq!((end, inputs.len()), (End::Complete, 2));
        assert_eq!(
            g.to_json("complete")["unverified"],
            json!(["the model did not say what it verified"])
        );
    }

    #[test]
    fn the_continuation_limit_and_other_endings() {
        let (_dir, g) = goal("the objective");
        let mut g = g.with_limit(2);
        let (end, inputs, notices) = drive(&mut g, &["a", "b", "c", "d"]);
        assert_eq!(end, End::Limit);
        assert_eq!(inputs.len(), 3, "the first turn and two continuations");
        assert_eq!(notices.len(), 2);
        assert!(inputs[2].contains("Continuation 2 of at most 2"));
        // Later user turns carry the whole block before the message.
        let (end, inputs, _) = drive(&mut g, &[]);
        assert_eq!(end, End::Ended("out of answers"));
        assert!(inputs[0].starts_with("<active-goal>\n"));
        assert!(inputs[0].ends_with("</active-goal>\n\nthe objective"));
    }

    #[test]
    fn a_research_goal_carries_the_protocol_and_a_simple_one_does_not() {
        let dir = TempDir::new("goal");
        let mut g = Goal::start(
            "optimise the parser",
            Choice::Classify,
            dir.path(),
            SystemTime::now(),
        )
        .unwrap();
        let research = g.research_dir().unwrap().to_string();
        assert!(dir.path().join(&research).is_dir());
        let first = g.user_turn("optimise the parser".into());
        assert!(first.contains(&format!("<autoresearch dir=\"{research}/\">")));
        let mut simple = Goal::start(
            "optimise the parser",
            Choice::Simple,
            dir.path(),
            SystemTime::now(),
        )
        .unwrap();
        assert!(simple.research_dir().is_none());
        assert!(!simple.user_turn("x".into()).contains("autoresearch"));
        assert!(matches!(
            Goal::start(" ", Choice::Simple, dir.path(), SystemTime::now()),
            Err(GoalError::EmptyObjective)
        ));
        assert_eq!(
            GoalError::EmptyObjective.to_string(),
            "goal: the objective is empty"
        );
        // A workspace where the directory cannot be made: the goal does not start.
        let file = dir.write("not-a-dir", "x");
        let err = Goal::start("optimise it", Choice::Research, &file, SystemTime::now())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "goal: cannot create {}/.reasonix/autoresearch: ",
                file.display()
            )),
            "{err}"
        );
    }
}
