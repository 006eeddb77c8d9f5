//! MCP prompts as slash commands: binding what the user typed after `/mcp__<server>__<prompt>`
//! to the prompt's declared arguments. The host types the chat asks MCP through live in
//! [`crate::mcp::host`], below this layer.

use std::collections::BTreeMap;

use super::words::split_words;
use super::CommandError;
use crate::mcp::host::{PromptArg, PromptInfo};

/// Maps typed arguments onto a prompt's declared arguments. Words follow the one quoting
/// rule ([`split_words`]); a `name=value` word sets a declared argument by name, the other
/// words fill the arguments not yet set in order, and the last of those takes every word left
/// (`/review error handling` with one argument is `error handling`). A word with no argument
/// left to fill, or a missing required argument, is an error naming the usage.
pub fn map_prompt_arguments(
    prompt: &PromptInfo,
    typed: &str,
) -> Result<BTreeMap<String, String>, CommandError> {
    let mut named = BTreeMap::new();
    let mut positional = Vec::new();
    for word in split_words(typed) {
        match word.split_once('=') {
            Some((name, value)) if prompt.arguments.iter().any(|a| a.name == name) => {
                named.insert(name.to_string(), value.to_string());
            }
            _ => positional.push(word),
        }
    }
    let open: Vec<&PromptArg> = prompt
        .arguments
        .iter()
        .filter(|a| !named.contains_key(&a.name))
        .collect();
    if open.is_empty() && !positional.is_empty() {
        return Err(CommandError::ExtraArguments {
            command: prompt.command_name(),
            extra: positional.join(" "),
        });
    }
    for (i, arg) in open.iter().enumerate() {
        if i >= positional.len() {
            break;
        }
        let value = if i + 1 == open.len() {
            positional[i..].join(" ")
        } else {
            positional[i].clone()
        };
        named.insert(arg.name.clone(), value);
    }
    let missing: Vec<String> = prompt
        .arguments
        .iter()
        .filter(|a| a.required && !named.contains_key(&a.name))
        .map(|a| a.name.clone())
        .collect();
    if !missing.is_empty() {
        return Err(CommandError::MissingArguments {
            missing,
            usage: prompt.usage(),
        });
    }
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(args: &[(&str, bool)]) -> PromptInfo {
        PromptInfo {
            server: "my server".into(),
            name: "review code".into(),
            description: String::new(),
            arguments: args
                .iter()
                .map(|(n, r)| PromptArg {
                    name: n.to_string(),
                    description: String::new(),
                    required: *r,
                })
                .collect(),
        }
    }

    #[test]
    fn names_normalise_like_tool_names() {
        assert_eq!(prompt(&[]).command_name(), "mcp__my_server__review_code");
        let p = prompt(&[("city", true), ("state", false)]);
        assert_eq!(p.usage(), "/mcp__my_server__review_code CITY [STATE]");
    }

    #[test]
    fn arguments_map_by_name_and_position_with_quotes() {
        let p = prompt(&[("file", true), ("focus", false), ("style", false)]);
        let m = map_prompt_arguments(&p, "style=terse a.rs security bugs").unwrap();
        assert_eq!(m["file"], "a.rs");
        assert_eq!(m["focus"], "security bugs");
        assert_eq!(m["style"], "terse");
        let m = map_prompt_arguments(&p, "focus=perf main.rs").unwrap();
        assert_eq!(m["file"], "main.rs");
        assert!(!m.contains_key("style"));
        let m = map_prompt_arguments(&p, "\"my file.rs\" \"two words\" x").unwrap();
        assert_eq!(m["file"], "my file.rs");
        assert_eq!(m["focus"], "two words");
        assert_eq!(m["style"], "x");
        // A quoted word can carry a name: `"focus=a b"`.
        let m = map_prompt_arguments(&p, "\"focus=a b\" f").unwrap();
        assert_eq!((m["focus"].as_str(), m["file"].as_str()), ("a b", "f"));
        // An unknown name=value is just a positional word.
        let m = map_prompt_arguments(&p, "x=1").unwrap();
        assert_eq!(m["file"], "x=1");
        let one = prompt(&[("focus", false)]);
        let m = map_prompt_arguments(&one, "\"error handling\"").unwrap();
        assert_eq!(m["focus"], "error handling");
    }

    #[test]
    fn argument_errors_name_the_usage() {
        let p = prompt(&[("file", true), ("focus", false)]);
        assert_eq!(
            map_prompt_arguments(&p, "focus=x").unwrap_err().to_string(),
            "command: /mcp__my_server__review_code needs file; usage: /mcp__my_server__review_code FILE [FOCUS]"
        );
        let none = prompt(&[]);
        assert!(map_prompt_arguments(&none, "").unwrap().is_empty());
        assert_eq!(
            map_prompt_arguments(&none, "stray words")
                .unwrap_err()
                .to_string(),
            "command: /mcp__my_server__review_code takes no arguments; got `stray words`"
        );
    }
}
