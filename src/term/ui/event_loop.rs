//! The chat's event loop: waits for the next [`Msg`], handles every waiting one, draws one
//! frame. Also the input thread that decodes keys into messages, and what signals do
//! (interrupt, leave, suspend, resize).

use std::io;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use super::approver::launch_choices;
use super::ask_card::AskCard;
use super::plan_review::PlanCard;
use super::turn::turn_end;
use super::{Chat, Modal, Msg};
use crate::i18n::{tr, Ui};
use crate::term::keys::{Decoder, Key};
use crate::term::modal::approval_choices;
use crate::term::sys::{self, Signal};
use crate::term::transcript::TurnEnd;

/// How often the live area animates while something runs.
const TICK: Duration = Duration::from_millis(80);

impl Chat {
    pub(super) fn event_loop(&mut self, rx: &Receiver<Msg>) -> i32 {
        self.draw();
        loop {
            let animate = self.busy() || self.starting.is_some() || self.transcript.animating();
            let first = if animate {
                match rx.recv_timeout(TICK) {
                    Ok(msg) => Some(msg),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return 1,
                }
            } else {
                match rx.recv() {
                    Ok(msg) => Some(msg),
                    Err(_) => return 1,
                }
            };
            if let Some(msg) = first {
                self.handle(msg);
            }
            while let Ok(msg) = rx.try_recv() {
                self.handle(msg);
                if self.quit.is_some() {
                    break;
                }
            }
            if let Some(code) = self.quit {
                self.draw();
                return code;
            }
            self.draw();
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Keys(keys) => {
                for key in keys {
                    self.on_key(key);
                }
            }
            Msg::InputClosed => self.request_exit(0),
            Msg::Signal(signal) => self.on_signal(signal),
            Msg::Agent(event) => self.on_agent_event(event),
            Msg::File { id, stage, content } => self.transcript.file_snapshot(&id, stage, content),
            Msg::TurnDone(result) => self.finish_turn(turn_end(result)),
            Msg::TurnLost => self.finish_turn(TurnEnd::Failed(tr(Ui::TurnLost).into())),
            Msg::Approval(request, reply) => {
                let rows = self.screen.height().saturating_sub(14).max(4);
                let choices = approval_choices(&request, &self.cwd, self.screen.width(), rows);
                self.open_modal(Modal::Approval(choices, reply));
            }
            Msg::Launch(request, reply) => {
                self.open_modal(Modal::Launch(launch_choices(&request), reply))
            }
            Msg::Ask(question, reply) => self.open_modal(Modal::Ask(AskCard::new(question), reply)),
            Msg::PlanReview(plan, reply) => {
                self.open_modal(Modal::Plan(PlanCard::new(plan), reply))
            }
            Msg::Withdrawn => self.close_withdrawn_modals(),
            Msg::Prepared(prepared) => self.on_prepared(prepared),
            Msg::ShellDone(result) => self.on_shell_done(result),
            Msg::Started(started) => self.on_started(started),
            Msg::Mcp(event) => self.on_mcp_event(event),
        }
    }

    fn on_signal(&mut self, signal: Signal) {
        match signal {
            Signal::Interrupt => self.on_key(Key::Ctrl('c')),
            Signal::Terminate(n) => self.request_exit(128 + n),
            Signal::Suspend => self.suspend(),
            Signal::Continue => {
                let _ = self.raw.apply_raw();
                let _ = self.screen.start();
            }
            Signal::Resize => {
                if let Some((w, h)) = sys::window_size(1) {
                    self.screen.resize((w as usize, h as usize));
                    self.transcript.set_width(self.screen.width());
                }
            }
        }
    }

    /// Ctrl-Z: gives the terminal back to the shell until we are continued.
    pub(super) fn suspend(&mut self) {
        let _ = self.screen.leave();
        self.raw.restore();
        let _ = sys::suspend_self();
        let _ = self.raw.apply_raw();
        let _ = self.screen.start();
    }

    pub(super) fn request_exit(&mut self, code: i32) {
        if self.turn.is_some() {
            // Leave once the turn has stopped and its partial answer is saved.
            self.exiting = Some(code);
            self.cancel_work();
            self.deny_waiting_approvals();
        } else {
            self.cancel_work();
            self.quit = Some(code);
        }
    }
}

pub(super) fn spawn_input(tx: Sender<Msg>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("term-input".into())
        .spawn(move || {
            let mut decoder = Decoder::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = match sys::read_fd(0, &mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Msg::InputClosed);
                        return;
                    }
                    Ok(n) => n,
                };
                let mut keys = decoder.feed(&buf[..n]);
                // A lone ESC is the Esc key only if nothing follows it promptly.
                while decoder.has_pending() {
                    match sys::poll_readable(0, 30) {
                        Ok(true) => match sys::read_fd(0, &mut buf) {
                            Ok(n) if n > 0 => keys.extend(decoder.feed(&buf[..n])),
                            _ => keys.extend(decoder.flush()),
                        },
                        _ => keys.extend(decoder.flush()),
                    }
                }
                if !keys.is_empty() && tx.send(Msg::Keys(keys)).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}
