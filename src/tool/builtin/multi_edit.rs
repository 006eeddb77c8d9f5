//! `multi_edit`: several `edit_file` replacements on one file, applied in order in memory and
//! written once, only if every edit succeeds. The matching rules are `edit`'s.

use serde_json::{json, Value};

use super::edit::{self, Edit};
use crate::tool::text;
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

pub struct MultiEdit;

const DESCRIPTION: &str = "\
Applies several exact-text replacements to one file in a single atomic step. Edits run in \
order, each on the result of the previous ones, with the rules of edit_file: each \
`old_string` must match exactly once unless its `replace_all` is true. If any edit fails \
nothing is written and the error names the failing edit. Prefer it to repeated edit_file \
calls on the same file; make sure an earlier edit does not change text a later one looks for.";

impl Tool for MultiEdit {
    fn name(&self) -> &str {
        "multi_edit"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to edit, absolute or relative to the workspace root"
                },
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Replacements to apply in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {
                                "type": "string",
                                "description": "The exact text to replace"
                            },
                            "new_string": {
                                "type": "string",
                                "description": "The text to put in its place"
                            },
                            "replace_all": {
                                "type": "boolean",
                                "description": "Replace every occurrence (default false)"
                            }
                        },
                        "required": ["old_string", "new_string"]
                    }
                }
            },
            "required": ["path", "edits"]
        })
    }

    fn family(&self) -> Family {
        Family::Writer
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["path"],
            default: None,
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args::required_str(args, "path")?;
        let edits = parse_edits(args::required_array(args, "edits")?)?;
        let file = text::load(&ctx.resolve_write(shown)?, shown)?;
        // Every step is held to the limit of the original size, so edits cannot compound.
        let limit = edit::result_limit(file.text.len());
        let mut current = file.text.clone();
        let mut report = Vec::with_capacity(edits.len());
        for (index, edit) in edits.iter().enumerate() {
            let applied = edit::apply(&current, edit, limit)
                .map_err(|failure| failed_edit(index, edit, &failure, &file.text, shown))?;
            report.push(format!(
                "  edits[{index}]: {} replacement{} at line {}",
                applied.count,
                if applied.count == 1 { "" } else { "s" },
                applied.first_line
            ));
            current = applied.text;
        }
        if current == file.text {
            return Ok(format!(
                "{shown} unchanged: the edits cancel each other out; nothing was written"
            ));
        }
        text::save(&file, &current, file.encoding, shown)?;
        Ok(format!(
            "Edited {shown}: applied {} edit{} (line numbers as of each edit):\n{}",
            edits.len(),
            if edits.len() == 1 { "" } else { "s" },
            report.join("\n")
        ))
    }
}

fn parse_edits(items: &[Value]) -> Result<Vec<Edit<'_>>, ToolError> {
    if items.is_empty() {
        return Err(ToolError::InvalidArgs(
            "`edits` is empty; give at least one {old_string, new_string} object".into(),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            if !item.is_object() {
                return Err(ToolError::InvalidArgs(format!(
                    "edits[{index}] must be an object with old_string and new_string, got {item}"
                )));
            }
            Edit::parse(item).map_err(|e| ToolError::InvalidArgs(format!("edits[{index}]: {e}")))
        })
        .collect()
}

fn failed_edit(
    index: usize,
    edit: &Edit,
    failure: &edit::EditFailure,
    original: &str,
    shown: &str,
) -> ToolError {
    let after = (index > 0).then_some("the earlier edits");
    let mut detail = failure.describe(shown, after);
    let consumed_earlier = index > 0
        && matches!(failure, edit::EditFailure::NotFound { .. })
        && original.contains(edit.old);
    if consumed_earlier {
        detail.push_str(&format!(
            " (it is in the original file, so an earlier edit changed it: write edits[{index}] \
             against the text as the earlier edits leave it)"
        ));
    }
    ToolError::Failed(format!(
        "edits[{index}] failed: {detail}. No edits were applied; {shown} is unchanged"
    ))
}
