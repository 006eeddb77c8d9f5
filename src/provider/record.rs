//! The recording format shared by `--record` and the `replay` provider: one JSON object per
//! line, `{"request": <body sent>, "status": <u16>, "response": "<raw reply body>"}`, plus
//! `"error"` when no HTTP response arrived (status 0), and `"retried": true` on an attempt
//! that failed and was tried again (every attempt is kept; a replay skips those). Lines are
//! appended and fsynced one exchange at a time so a killed run keeps everything it had
//! received.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Detail, ProviderError};

/// What a cancelled exchange records in `error`, so a replay reproduces the interruption.
pub const CANCELLED: &str = "cancelled";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedExchange {
    /// The request body exactly as sent.
    pub request: serde_json::Value,
    /// The HTTP status, 0 when the exchange failed before any response.
    pub status: u16,
    /// The raw reply body as received (SSE text for a stream).
    #[serde(default)]
    pub response: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// This attempt failed and the request was sent again: kept for the record, skipped by a
    /// replay, which serves the attempt that counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retried: bool,
}

/// Appends exchanges to a recording file; shared by every stream of one provider.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    /// One line per write, never interleaved between concurrent streams.
    lock: Mutex<()>,
}

impl Recorder {
    pub fn new(path: &Path) -> Recorder {
        Recorder {
            path: path.to_path_buf(),
            lock: Mutex::new(()),
        }
    }

    pub fn append(&self, exchange: &RecordedExchange) -> Result<(), ProviderError> {
        let fail = |e: std::io::Error| {
            let text = format!(
                "cannot append to the recording {}: {e}",
                self.path.display()
            );
            ProviderError::Record(Detail::caused(text, e))
        };
        let mut line = serde_json::to_vec(exchange).map_err(|e| {
            ProviderError::Record(Detail::caused(format!("cannot encode an exchange: {e}"), e))
        })?;
        line.push(b'\n');
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(fail)?;
        file.write_all(&line).map_err(fail)?;
        file.sync_data().map_err(fail)
    }
}

/// Reads a whole recording; a malformed line is an error naming its number.
pub fn read(path: &Path) -> Result<Vec<RecordedExchange>, ProviderError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let text = format!("cannot read the recording {}: {e}", path.display());
        ProviderError::Config(Detail::caused(text, e))
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|e| {
                let text = format!(
                    "the recording {} line {} is not an exchange: {e}",
                    path.display(),
                    n + 1
                );
                ProviderError::Config(Detail::caused(text, e))
            })
        })
        .collect()
}
