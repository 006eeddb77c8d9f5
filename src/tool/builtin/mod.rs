//! The built-in tools, listed in one explicit table.

use std::sync::Arc;

use super::Tool;

mod glob;
mod grep;
mod ls;

/// Every built-in tool, in the order the model sees them.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ls::Ls),
        Arc::new(glob::GlobTool),
        Arc::new(grep::Grep),
    ]
}
