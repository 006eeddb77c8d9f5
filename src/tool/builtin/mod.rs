//! The built-in tools, listed in one explicit table.

use std::sync::Arc;

use super::Tool;

mod bash;

/// Every built-in tool, in the order the model sees them.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(bash::Bash)]
}
