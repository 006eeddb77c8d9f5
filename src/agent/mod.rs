//! The agent: sessions, the tool-call loop, context management and the events it reports.
//! Nothing here writes to the terminal; front ends consume [`events::Event`].

pub mod autoresearch;
pub mod compaction;
pub mod coordinator;
pub mod dispatch;
pub mod driver;
pub mod events;
pub mod fallback;
pub mod goal;
pub mod hooks;
pub mod live;
pub mod offered;
pub mod plan;
pub mod probes;
pub mod progress;
pub mod prompt;
pub mod reviewer;
pub mod round_caps;
pub mod runner;
pub mod scheduler;
pub mod session;
pub mod snapshots;
pub mod tokens;
pub mod waiting;
