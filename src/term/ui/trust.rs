//! The trust modal asked before the chat opens, when `./reasonix.toml` would loosen
//! something in an untrusted workspace. It runs on the calling thread with its own raw mode,
//! since the provider and the policy depend on the answer.

use std::io;

use super::draw::terminal_screen;
use crate::i18n::{tr, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::keys::Decoder;
use crate::term::modal::{Choice, Choices, Outcome};
use crate::term::sanitize::one_row;
use crate::term::sys::{self, RawMode, Signal};

/// The answer to the trust modal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAnswer {
    /// Believe the project file for this chat only (like `--trust-project`).
    Session,
    /// Store trust in this workspace (like `reasonix trust`).
    Always,
    No,
}

/// Asks whether to trust the workspace, naming the project keys that are ignored until then.
/// Esc, Ctrl-C and a closed terminal answer no. SIGTERM and SIGHUP restore the terminal and
/// exit, as in the chat.
pub fn ask_trust(untrusted: &[String]) -> io::Result<TrustAnswer> {
    let raw = RawMode::enter(0, 1)?;
    sys::watch_signals(|signal| {
        if let Signal::Terminate(n) = signal {
            sys::restore_terminal();
            std::process::exit(128 + n);
        }
    })?;
    let mut screen = terminal_screen("");
    let mut choices = trust_choices(untrusted);
    let mut decoder = Decoder::new();
    let mut buf = [0u8; 1024];
    let answer = loop {
        screen.draw(&[], &choices.render(screen.width()), None)?;
        let n = sys::read_fd(0, &mut buf)?;
        if n == 0 {
            break TrustAnswer::No;
        }
        let mut keys = decoder.feed(&buf[..n]);
        if decoder.has_pending() && !sys::poll_readable(0, 30)? {
            keys.extend(decoder.flush());
        }
        let chosen = keys.iter().find_map(|key| match choices.key(key) {
            Outcome::Chosen(answer) => Some(answer),
            Outcome::Closed => Some(TrustAnswer::No),
            Outcome::Pending => None,
        });
        if let Some(answer) = chosen {
            break answer;
        }
    };
    let said = match answer {
        TrustAnswer::Session => tr(Ui::TrustedSession),
        TrustAnswer::Always => tr(Ui::TrustedAlways),
        TrustAnswer::No => tr(Ui::NotTrusted),
    };
    screen.draw(&[Line::styled(said, Style::Dim)], &[], None)?;
    screen.leave()?;
    drop(raw);
    Ok(answer)
}

fn trust_choices(untrusted: &[String]) -> Choices<TrustAnswer> {
    Choices {
        title: tr(Ui::TrustTitle).into(),
        body: vec![
            Line::styled(tr(Ui::TrustBody), Style::Dim),
            Line::styled(one_row(&untrusted.join(", ")), Style::Bold),
        ],
        items: vec![
            Choice {
                label: tr(Ui::LaunchSession).into(),
                key: Some('y'),
                value: TrustAnswer::Session,
            },
            Choice {
                label: tr(Ui::LaunchAlways).into(),
                key: Some('a'),
                value: TrustAnswer::Always,
            },
            Choice {
                label: tr(Ui::TrustNo).into(),
                key: Some('n'),
                value: TrustAnswer::No,
            },
        ],
        selected: 2,
        on_cancel: Some(TrustAnswer::No),
    }
}
