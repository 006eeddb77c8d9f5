//! Keys at the composer and in modals: editing, the completion menu, interrupting, the
//! mode (posture and plan) and verbosity toggles, the task panel, and answering (or denying)
//! the open modal; an input-owned overlay (free text for `ask`, plan feedback) lends the
//! composer's editing keys to its modal.

use super::ask_card::CardKey;
use super::plan_review::PlanKey;
use super::{Chat, Modal};
use crate::agent::events::NoticeLevel;
use crate::i18n::{tr, Ui};
use crate::permission::{ApprovalAnswer, Posture};
use crate::term::editor::Editor;
use crate::term::keys::Key;
use crate::term::menu::{Menu, MenuKind};
use crate::term::modal::Outcome;

/// How a menu item was accepted: Enter runs an argument-less command at once, Tab only
/// completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accept {
    Enter,
    Tab,
}

impl Chat {
    pub(super) fn open_modal(&mut self, modal: Modal) {
        self.menu = None;
        if self.modal.is_some() {
            self.waiting_modals.push_back(modal);
        } else {
            self.modal = Some(modal);
        }
    }

    pub(super) fn close_modal(&mut self) {
        self.restore_draft();
        self.modal = self.waiting_modals.pop_front();
    }

    /// Drops the cards whose asker stopped waiting (an MCP server finished what the card
    /// waited for), the open one included.
    pub(super) fn close_withdrawn_modals(&mut self) {
        self.waiting_modals.retain(|modal| !modal.withdrawn());
        if self.modal.as_ref().is_some_and(Modal::withdrawn) {
            self.close_modal();
        }
    }

    /// An overlay borrows the composer: the user's unsent draft waits aside meanwhile.
    fn lend_composer(&mut self) {
        self.menu = None;
        if self.draft.is_none() {
            self.draft = Some(self.editor.text().to_string());
        }
        self.editor.clear();
    }

    fn restore_draft(&mut self) {
        if let Some(draft) = self.draft.take() {
            self.editor.set_text(&draft);
        }
    }

    pub(super) fn on_key(&mut self, key: Key) {
        if self.modal.is_some() {
            self.modal_key(key);
            return;
        }
        if key != Key::Ctrl('c') {
            self.exit_armed = false;
        }
        match key {
            Key::Ctrl('c') => self.ctrl_c(),
            Key::Ctrl('d') if self.editor.is_empty() => self.request_exit(0),
            Key::Ctrl('d') | Key::Delete => self.edit(Editor::delete),
            Key::Esc => self.escape(),
            Key::BackTab => self.cycle_mode(),
            Key::Ctrl('o') => self.toggle_verbose(),
            Key::Ctrl('t') => self.toggle_todo_panel(),
            Key::Ctrl('l') => {
                let _ = self.screen.clear();
            }
            Key::Ctrl('z') => self.suspend(),
            Key::Enter if self.menu_is_complete() => self.submit(),
            Key::Enter if self.menu.is_some() => self.accept_menu(Accept::Enter),
            Key::Enter => self.submit(),
            Key::Tab if self.menu.is_some() => self.accept_menu(Accept::Tab),
            Key::Up => match &mut self.menu {
                Some(menu) => menu.up(),
                None => {
                    self.editor.up();
                }
            },
            Key::Down => match &mut self.menu {
                Some(menu) => menu.down(),
                None => {
                    self.editor.down();
                }
            },
            other => self.compose_key(other),
        }
    }

    /// The composer's editing keys, also lent to an input-owned overlay.
    fn compose_key(&mut self, key: Key) {
        match key {
            Key::Up => {
                self.editor.up();
            }
            Key::Down => {
                self.editor.down();
            }
            Key::Delete => self.edit(Editor::delete),
            Key::Newline | Key::Ctrl('j') => self.edit(|e| e.insert_char('\n')),
            Key::Char(c) if !c.is_control() => self.edit(|e| e.insert_char(c)),
            Key::Paste(text) => self.edit(|e| e.insert(&text)),
            Key::Backspace | Key::Ctrl('h') => self.edit(Editor::backspace),
            Key::Left => self.editor.left(),
            Key::Right => self.editor.right(),
            Key::Home | Key::Ctrl('a') => self.editor.line_start(),
            Key::End | Key::Ctrl('e') => self.editor.line_end(),
            Key::WordLeft | Key::Alt('b') => self.editor.word_left(),
            Key::WordRight | Key::Alt('f') => self.editor.word_right(),
            Key::Ctrl('b') => self.editor.left(),
            Key::Ctrl('f') => self.editor.right(),
            Key::Ctrl('k') => self.edit(Editor::kill_to_end),
            Key::Ctrl('u') => self.edit(Editor::kill_to_start),
            Key::Ctrl('w') | Key::DeleteWordBack => self.edit(Editor::delete_word_back),
            Key::Ctrl('p') => {
                self.editor.up();
            }
            Key::Ctrl('n') => {
                self.editor.down();
            }
            _ => {}
        }
    }

    /// Applies an edit and recomputes the completion menu (a discrete action).
    pub(super) fn edit(&mut self, change: impl FnOnce(&mut Editor)) {
        change(&mut self.editor);
        self.refresh_menu();
    }

    fn refresh_menu(&mut self) {
        let (start, word) = self.editor.current_word();
        self.menu = Menu::for_token(start, word, &self.catalog, &self.cwd, self.mcp.as_ref());
    }

    /// Whether the word being completed already is the highlighted completion, so Enter
    /// should send rather than complete again.
    fn menu_is_complete(&self) -> bool {
        let Some(item) = self.menu.as_ref().and_then(Menu::chosen) else {
            return false;
        };
        let (_, word) = self.editor.current_word();
        !item.descend && word == item.completion.trim_end()
    }

    fn accept_menu(&mut self, how: Accept) {
        let Some(menu) = self.menu.take() else {
            return;
        };
        let Some(item) = menu.chosen().cloned() else {
            return;
        };
        if menu.kind == MenuKind::Slash && how == Accept::Enter && item.runs_alone {
            self.editor.set_text(item.completion.trim_end());
            self.submit();
            return;
        }
        self.editor
            .replace_before_cursor(menu.start, &item.completion);
        if item.descend {
            self.refresh_menu();
        }
    }

    fn ctrl_c(&mut self) {
        if self.busy() {
            self.cancel_work();
        } else if !self.editor.is_empty() {
            self.editor.clear();
            self.menu = None;
        } else if self.exit_armed {
            self.request_exit(0);
        } else {
            self.exit_armed = true;
        }
    }

    fn escape(&mut self) {
        if self.menu.take().is_some() {
            return;
        }
        if self.busy() {
            self.cancel_work();
        }
    }

    /// Cancels the running turn or shell command; queued messages wait for the next turn.
    pub(super) fn cancel_work(&mut self) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
        }
        if let Some((cancel, _, _)) = &self.shell {
            cancel.cancel();
        }
    }

    /// Shift-Tab: ask → auto → yolo → plan → ask. Entering plan keeps the posture; leaving
    /// it returns to ask. Plan mode changes between turns, so during a turn only the posture
    /// cycles (ask → auto → yolo → ask).
    fn cycle_mode(&mut self) {
        // Goal mode steps back to normal, the posture kept.
        if !self.busy() && self.clear_goal() {
            self.transcript
                .notice(NoticeLevel::Info, tr(Ui::GoalClearedNormal));
            return;
        }
        let posture = self.gate.posture();
        if self.planning() {
            if self.set_planning(false) {
                self.gate.set_posture(Posture::Ask);
            }
            return;
        }
        match posture {
            Posture::Ask => self.gate.set_posture(Posture::Auto),
            Posture::Auto => self.gate.set_posture(Posture::Yolo),
            Posture::Yolo | Posture::Strict if self.busy() => self.gate.set_posture(Posture::Ask),
            Posture::Yolo | Posture::Strict => {
                self.set_planning(true);
            }
        }
    }

    /// Enters or leaves plan mode through the idle agent; returns whether it changed.
    pub(super) fn set_planning(&mut self, planning: bool) -> bool {
        let Some(mut agent) = self.agent_or_notice() else {
            return false;
        };
        agent.set_planning(planning);
        drop(agent);
        // Plan and goal are two collaboration modes: entering one leaves the other.
        if planning && self.clear_goal() {
            self.transcript
                .notice(NoticeLevel::Info, tr(Ui::GoalClearedPlan));
        }
        let text = tr(if planning { Ui::PlanOn } else { Ui::PlanOff });
        self.transcript.notice(NoticeLevel::Info, text);
        true
    }

    fn toggle_todo_panel(&mut self) {
        self.todo_panel.toggle();
    }

    pub(super) fn toggle_verbose(&mut self) {
        let verbose = !self.transcript.verbose();
        self.transcript.set_verbose(verbose);
        let text = tr(if verbose {
            Ui::VerboseOn
        } else {
            Ui::VerboseOff
        });
        self.transcript.notice(NoticeLevel::Info, text);
    }

    fn modal_key(&mut self, key: Key) {
        let Some(modal) = self.modal.as_mut() else {
            return;
        };
        let interrupt = key == Key::Ctrl('c');
        match modal {
            Modal::Approval(choices, reply) => {
                if let Outcome::Chosen(answer) = choices.key(&key) {
                    let _ = reply.send(answer);
                    self.close_modal();
                }
            }
            Modal::Launch(choices, reply) => {
                if let Outcome::Chosen(answer) = choices.key(&key) {
                    let _ = reply.send(answer);
                    self.close_modal();
                }
            }
            Modal::ConfirmClear(choices) => match choices.key(&key) {
                Outcome::Chosen(true) => {
                    self.close_modal();
                    self.clear_conversation();
                }
                Outcome::Chosen(false) | Outcome::Closed => self.close_modal(),
                Outcome::Pending => {}
            },
            Modal::Resume(choices) => match choices.key(&key) {
                Outcome::Chosen(Some(path)) => {
                    self.close_modal();
                    self.resume(&path);
                }
                Outcome::Chosen(None) | Outcome::Closed => self.close_modal(),
                Outcome::Pending => {}
            },
            Modal::Info(choices) => {
                if !matches!(choices.key(&key), Outcome::Pending) {
                    self.close_modal();
                }
            }
            Modal::Memory(view) => match view.key(&key) {
                super::memory::Outcome::Pending => {}
                super::memory::Outcome::Closed => self.close_modal(),
                super::memory::Outcome::Notice(level, text) => self.transcript.notice(level, &text),
            },
            Modal::Rewind(_) => self.rewind_key(&key),
            Modal::Ask(card, reply) => match card.key(key.clone(), self.editor.text()) {
                CardKey::Answer(answer) => {
                    reply.send(answer);
                    self.editor.clear();
                    self.close_modal();
                }
                CardKey::StartTyping => self.lend_composer(),
                CardKey::BackToCard => self.restore_draft(),
                CardKey::Edit(key) => self.overlay_edit(key),
                CardKey::Pending => {}
            },
            Modal::Plan(card, reply) => match card.key(key.clone(), self.editor.text()) {
                // The agent acts on the review (the window, auto for accept-edits).
                PlanKey::Review(review) => {
                    reply.send(review);
                    self.editor.clear();
                    self.close_modal();
                }
                PlanKey::StartTyping => self.lend_composer(),
                PlanKey::BackToPlan => self.restore_draft(),
                PlanKey::Edit(key) => self.overlay_edit(key),
                PlanKey::Pending => {}
            },
        }
        if interrupt && self.busy() {
            self.cancel_work();
            self.deny_waiting_approvals();
        }
    }

    /// An editing key in an input-owned overlay: the composer without the completion menu.
    fn overlay_edit(&mut self, key: Key) {
        self.compose_key(key);
        self.menu = None;
    }

    /// Answers every open and queued tool approval with Deny and drops open questions and
    /// plan reviews, whose tools then see no answer (the turn is being cancelled). Launch
    /// grants are not part of a turn; they stay open.
    pub(super) fn deny_waiting_approvals(&mut self) {
        let mut modals: Vec<Modal> = self.modal.take().into_iter().collect();
        modals.extend(self.waiting_modals.drain(..));
        for modal in modals {
            match modal {
                Modal::Approval(_, reply) => {
                    let _ = reply.send(ApprovalAnswer::Deny);
                }
                other if other.belongs_to_turn() => {}
                other => self.waiting_modals.push_back(other),
            }
        }
        self.close_modal();
    }
}
