//! The built-in tools, listed in one explicit table.

use std::sync::Arc;

use super::{Profile, Tool};

pub mod ask;
pub mod bash;
pub mod edit;
pub mod fleet;
mod glob;
mod grep;
pub mod history;
mod ls;
pub mod memory;
pub mod move_file;
pub mod multi_edit;
pub mod plan;
pub mod read;
pub mod read_only_bash;
pub mod skill;
pub mod step;
pub mod task;
pub mod todo;
pub mod view_image;
pub mod write;

/// Every built-in tool, in the order the model sees them.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadFile),
        Arc::new(write::WriteFile),
        Arc::new(edit::EditFile),
        Arc::new(multi_edit::MultiEdit),
        Arc::new(move_file::MoveFile),
        Arc::new(bash::Bash),
        Arc::new(ls::Ls),
        Arc::new(glob::GlobTool),
        Arc::new(grep::Grep),
        Arc::new(view_image::ViewImage),
        Arc::new(todo::TodoWrite),
        Arc::new(step::CompleteStep),
        Arc::new(ask::Ask),
        Arc::new(plan::ExitPlanMode),
        Arc::new(history::History),
        Arc::new(memory::MemoryTool),
        Arc::new(memory::Remember),
        Arc::new(memory::Forget),
    ]
}

/// The profile of the built-in tool called `name`, for callers that judge a call before (or
/// without) holding the tool: the chat's `!command`, tests of the rule table.
pub fn profile(name: &str) -> Option<Profile> {
    all()
        .into_iter()
        .find(|tool| tool.name() == name)
        .map(|tool| tool.profile())
}
