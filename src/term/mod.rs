//! The interactive terminal: raw mode and signals (`sys`, the only unsafe code here), input
//! decoding (`keys`), the composer (`editor`), styled text and colour (`ansi`, `width`),
//! sanitizing untrusted text (`sanitize`), streaming Markdown (`markdown`) and diffs
//! (`diff`).

pub mod ansi;
pub mod diff;
pub mod editor;
pub mod keys;
pub mod markdown;
pub mod menu;
pub mod modal;
pub mod sanitize;
pub mod screen;
pub mod sys;
pub mod transcript;
pub mod ui;
pub mod width;
