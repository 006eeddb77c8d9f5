//! The interactive terminal. Leaves: raw mode, window size and signals (`sys`, the only
//! unsafe code here), key decoding (`keys`), display width (`width`), styled lines and colour
//! (`ansi`), sanitizing untrusted text (`sanitize`). Renderers: streaming Markdown
//! (`markdown`), diffs (`diff`), agent events as transcript lines (`transcript`) with the
//! subagents of running calls (`children`), the
//! composer (`editor`), the completion menu (`menu`) and modal overlays (`modal`). `screen`
//! writes frames and `ui` is the chat itself, the one thread that writes to the terminal.
//! Nothing here reads configuration: the caller turns settings into plain terminal values
//! (such as [`ansi::CursorShape`]) before handing them in.

pub mod ansi;
pub mod children;
pub mod diff;
pub mod editor;
pub mod keys;
pub mod markdown;
pub mod menu;
pub mod modal;
pub mod sanitize;
pub mod screen;
#[cfg(unix)]
#[allow(unsafe_code)]
pub mod sys;
#[cfg(not(unix))]
#[path = "sys_other.rs"]
pub mod sys;
pub mod transcript;
pub mod ui;
pub mod width;
