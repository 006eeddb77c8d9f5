//! `/rewind`: a modal listing this conversation's user turns, newest first; choosing one asks
//! whether to rewind the conversation only or to restore files too (showing which files come
//! back and which commands cannot be undone), then truncates the session, restores files from
//! the snapshots and puts the chosen turn's text back into the composer. Only between turns.
//! The session's marker and the snapshot store are `agent::session` and `agent::snapshots`.

use std::path::Path;

use super::{Chat, Modal};
use crate::agent::events::NoticeLevel;
use crate::agent::session::{self, UserTurn};
use crate::agent::snapshots::{self, Plan, Store};
use crate::i18n::{tr, trf, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::keys::Key;
use crate::term::modal::{Choice, Choices, Outcome};
use crate::term::sanitize::one_row;

/// How much of a plan's lists the modal shows before "and N more".
const LIST_ROWS: usize = 8;

/// The open `/rewind` modal.
pub(super) struct Rewind {
    /// Rewindable turns, oldest first.
    turns: Vec<UserTurn>,
    store: Option<Store>,
    stage: Stage,
}

enum Stage {
    /// Which turn (an index into `turns`).
    Turn(Choices<Option<usize>>),
    /// How, for the chosen turn.
    How(usize, Plan, Choices<How>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Conversation,
    Files,
    Cancel,
}

/// What a key did.
pub(super) enum Step {
    Pending,
    Closed,
    /// Rewind to before `turn`, restoring the files of `restore` when given.
    Rewind {
        turn: UserTurn,
        restore: Option<Plan>,
        store: Option<Store>,
    },
}

impl Rewind {
    fn new(turns: Vec<UserTurn>, store: Option<Store>, compacted: usize) -> Rewind {
        let items = turns
            .iter()
            .enumerate()
            .rev()
            .map(|(i, turn)| Choice {
                label: format!(
                    "#{}  {}",
                    turn.number,
                    one_row(turn.text.lines().next().unwrap_or(""))
                ),
                key: None,
                value: Some(i),
            })
            .collect();
        let mut body = vec![Line::styled(tr(Ui::RewindIntro), Style::Dim)];
        if compacted > 0 {
            body.push(Line::styled(
                trf(Ui::RewindCompacted, &[&compacted]),
                Style::Dim,
            ));
        }
        Rewind {
            turns,
            store,
            stage: Stage::Turn(Choices {
                title: tr(Ui::RewindTitle).into(),
                body,
                items,
                selected: 0,
                on_cancel: Some(None),
            }),
        }
    }

    pub(super) fn render(&self, width: usize) -> Vec<Line> {
        match &self.stage {
            Stage::Turn(choices) => choices.render(width),
            Stage::How(_, _, choices) => choices.render(width),
        }
    }

    pub(super) fn key(&mut self, key: &Key, cwd: &Path) -> Step {
        match &mut self.stage {
            Stage::Turn(choices) => match choices.key(key) {
                Outcome::Chosen(Some(i)) => {
                    let plan = self
                        .store
                        .as_ref()
                        .map(|s| s.plan(self.turns[i].number))
                        .unwrap_or_default();
                    let choices = how_choices(&self.turns[i], &plan, cwd);
                    self.stage = Stage::How(i, plan, choices);
                    Step::Pending
                }
                Outcome::Chosen(None) | Outcome::Closed => Step::Closed,
                Outcome::Pending => Step::Pending,
            },
            Stage::How(i, plan, choices) => match choices.key(key) {
                Outcome::Chosen(how @ (How::Conversation | How::Files)) => Step::Rewind {
                    turn: self.turns[*i].clone(),
                    restore: (how == How::Files).then(|| std::mem::take(plan)),
                    store: self.store.take(),
                },
                Outcome::Chosen(How::Cancel) | Outcome::Closed => Step::Closed,
                Outcome::Pending => Step::Pending,
            },
        }
    }
}

/// The second question, with what restoring would do.
fn how_choices(turn: &UserTurn, plan: &Plan, cwd: &Path) -> Choices<How> {
    let shown = |path: &Path| one_row(&path.strip_prefix(cwd).unwrap_or(path).to_string_lossy());
    let mut body = vec![Line::plain(trf(
        Ui::RewindBackTo,
        &[
            &turn.number,
            &one_row(turn.text.lines().next().unwrap_or("")),
        ],
    ))];
    let mut section = |title: &str, rows: Vec<String>, style: Style| {
        if rows.is_empty() {
            return;
        }
        body.push(Line::styled(title.to_string(), Style::Bold));
        for row in rows.iter().take(LIST_ROWS) {
            body.push(Line::styled(format!("  {row}"), style));
        }
        if rows.len() > LIST_ROWS {
            body.push(Line::styled(
                trf(Ui::RewindAndMore, &[&(rows.len() - LIST_ROWS)]),
                Style::Dim,
            ));
        }
    };
    section(
        tr(Ui::RewindFilesRestored),
        plan.restore
            .iter()
            .map(|(path, blob)| match blob {
                Some(_) => shown(path),
                None => trf(Ui::RewindRemoved, &[&shown(path)]),
            })
            .collect(),
        Style::Plain,
    );
    section(
        tr(Ui::RewindSkipped),
        plan.skipped
            .iter()
            .map(|(path, why)| format!("{} ({})", shown(path), one_row(why)))
            .collect(),
        Style::Warning,
    );
    section(
        tr(Ui::RewindCommands),
        plan.commands.iter().map(|c| one_row(c)).collect(),
        Style::Warning,
    );
    if plan == &Plan::default() {
        body.push(Line::styled(tr(Ui::RewindNoChanges), Style::Dim));
    }
    Choices {
        title: tr(Ui::RewindHow).into(),
        body,
        items: vec![
            Choice {
                label: tr(Ui::RewindConversationOnly).into(),
                key: Some('c'),
                value: How::Conversation,
            },
            Choice {
                label: tr(Ui::RewindAndRestore).into(),
                key: Some('f'),
                value: How::Files,
            },
            Choice {
                label: tr(Ui::Cancel).into(),
                key: None,
                value: How::Cancel,
            },
        ],
        selected: 0,
        on_cancel: Some(How::Cancel),
    }
}

impl Chat {
    /// `/rewind`: opens the turn picker.
    pub(super) fn rewind_picker(&mut self) {
        let Some(agent) = self.agent_or_notice() else {
            return;
        };
        let messages = agent.session().messages();
        let turns = session::user_turns(messages);
        let total = agent.session().turns();
        let id = agent.session().id().to_string();
        drop(agent);
        if turns.is_empty() {
            let why = if total > 0 {
                tr(Ui::RewindAllCompacted)
            } else {
                tr(Ui::RewindNoTurns)
            };
            self.transcript.notice(NoticeLevel::Info, why);
            return;
        }
        let compacted = total.saturating_sub(turns.len());
        let store = self
            .ctx
            .state
            .as_deref()
            .and_then(|state| snapshots::session_dir(state, &id))
            .map(Store::open);
        self.open_modal(Modal::Rewind(Box::new(Rewind::new(
            turns, store, compacted,
        ))));
    }

    /// Removes a discarded conversation's snapshots (`/clear`): nothing can rewind it now.
    pub(super) fn forget_snapshots(&self, id: &str) {
        if let Some(dir) = self
            .ctx
            .state
            .as_deref()
            .and_then(|state| snapshots::session_dir(state, id))
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// A key in the open `/rewind` modal.
    pub(super) fn rewind_key(&mut self, key: &Key) {
        let Some(Modal::Rewind(rewind)) = self.modal.as_mut() else {
            return;
        };
        match rewind.key(key, &self.cwd) {
            Step::Pending => {}
            Step::Closed => self.close_modal(),
            Step::Rewind {
                turn,
                restore,
                store,
            } => {
                self.close_modal();
                self.rewind_to(turn, restore, store);
            }
        }
    }

    /// Truncates the conversation, restores files when asked, and gives the turn's text back.
    fn rewind_to(&mut self, turn: UserTurn, restore: Option<Plan>, store: Option<Store>) {
        let Some(mut agent) = self.agent_or_notice() else {
            return;
        };
        let rewound = agent.rewind(turn.index);
        drop(agent);
        if let Err(err) = rewound {
            self.transcript.error(&err.to_string());
            return;
        }
        let mut notice = trf(Ui::Rewound, &[&turn.number]);
        let mut warnings = Vec::new();
        match (&restore, &store) {
            (Some(plan), Some(store)) => {
                let problems = store.restore(plan, &self.ctx);
                let restored = plan.restore.len() - problems.len();
                notice.push_str(&if restored == 1 {
                    tr(Ui::RewoundRestoredOne).to_string()
                } else {
                    trf(Ui::RewoundRestored, &[&restored])
                });
                warnings.extend(problems.iter().map(|p| trf(Ui::NotRestored, &[p])));
                warnings.extend(
                    plan.skipped
                        .iter()
                        .map(|(path, why)| trf(Ui::NotRestoredWhy, &[&path.display(), why])),
                );
                if !plan.commands.is_empty() {
                    let commands: Vec<String> =
                        plan.commands.iter().map(|c| format!("`{c}`")).collect();
                    warnings.push(trf(Ui::NotUndone, &[&commands.join(", ")]));
                }
            }
            _ => notice.push_str(tr(Ui::RewoundFilesLeft)),
        }
        // The store learns of the rewind too, so the next turn, which reuses the number, is
        // not mistaken for the one it replaces.
        if let Some(Err(err)) = store.map(|store| store.rewound(turn.number)) {
            warnings.push(trf(Ui::RewindNotRecorded, &[&err]));
        }
        notice.push_str(tr(Ui::RewoundTextBack));
        self.interrupted = false;
        self.editor.set_text(&turn.text);
        self.transcript.notice(NoticeLevel::Info, &notice);
        for warning in warnings {
            self.transcript
                .notice(NoticeLevel::Warning, &one_row(&warning));
        }
        self.transcript.gap();
    }
}
