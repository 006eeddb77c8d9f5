//! The MCP debug log: server stderr, ignored output, progress and log notifications, one line
//! each, appended to the file named by `REASONIX_LOG` when it is set. Stdout and stderr belong
//! to the user interface, so nothing here ever prints.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// A cheap handle; clones append to the same file. The default logs nowhere.
#[derive(Clone, Default)]
pub struct Log {
    file: Option<Arc<Mutex<File>>>,
}

impl Log {
    /// The file named by `REASONIX_LOG`, or no log when it is unset or cannot be opened.
    pub fn from_env() -> Log {
        match std::env::var_os("REASONIX_LOG") {
            Some(path) if !path.is_empty() => Log::to_file(Path::new(&path)),
            _ => Log::default(),
        }
    }

    pub fn to_file(path: &Path) -> Log {
        let file = OpenOptions::new().create(true).append(true).open(path).ok();
        Log {
            file: file.map(|f| Arc::new(Mutex::new(f))),
        }
    }

    /// Appends `mcp[<server>]: <text>` (control characters replaced, so a server cannot forge
    /// extra lines).
    pub fn line(&self, server: &str, text: &str) {
        let Some(file) = &self.file else { return };
        let clean: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        // One write per line: other handles append to the same file.
        let line = format!("mcp[{server}]: {clean}\n");
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = file.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn lines_are_appended_with_control_characters_removed() {
        let dir = TempDir::new("mcp-log");
        let path = dir.join("log.txt");
        let log = Log::to_file(&path);
        log.line("s", "one\ntwo\x1b[31m");
        log.clone().line("s", "three");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "mcp[s]: one two [31m\nmcp[s]: three\n");
        Log::default().line("s", "goes nowhere");
    }
}
