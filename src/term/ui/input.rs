//! Keys at the composer and in modals: editing, the completion menu, interrupting, the
//! posture and verbosity toggles, and answering (or denying) the open modal.

use super::{Chat, Modal};
use crate::agent::events::NoticeLevel;
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
        self.modal = self.waiting_modals.pop_front();
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
            Key::BackTab => self.cycle_posture(),
            Key::Ctrl('o') => self.toggle_verbose(),
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

    fn cycle_posture(&mut self) {
        let next = match self.gate.posture() {
            Posture::Ask => Posture::Auto,
            Posture::Auto => Posture::Yolo,
            Posture::Yolo | Posture::Strict => Posture::Ask,
        };
        self.gate.set_posture(next);
    }

    pub(super) fn toggle_verbose(&mut self) {
        let verbose = !self.transcript.verbose();
        self.transcript.set_verbose(verbose);
        let text = if verbose {
            "verbose: reasoning and long tool output are shown in full"
        } else {
            "verbose off: reasoning is summarised and long output folded"
        };
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
        }
        if interrupt && self.busy() {
            self.cancel_work();
            self.deny_waiting_approvals();
        }
    }

    /// Answers every open and queued tool approval with Deny (the turn is being cancelled).
    /// Launch grants are not part of a turn; they stay open.
    pub(super) fn deny_waiting_approvals(&mut self) {
        let mut modals: Vec<Modal> = self.modal.take().into_iter().collect();
        modals.extend(self.waiting_modals.drain(..));
        for modal in modals {
            match modal {
                Modal::Approval(_, reply) => {
                    let _ = reply.send(ApprovalAnswer::Deny);
                }
                other => self.waiting_modals.push_back(other),
            }
        }
        self.close_modal();
    }
}
