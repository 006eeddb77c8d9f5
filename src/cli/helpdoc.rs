//! The command line as data, read from the help texts `reasonix help` prints: every command,
//! its subcommands, its flags and the values they take. The man page (`reasonix man`) and the
//! shell completions (`reasonix completions`) are generated from this one view, so neither can
//! list a flag `--help` does not, nor miss one it does.

use super::{COMMANDS, GLOBAL_HELP};

/// One flag as a help text documents it: `  -m, --model REF   Model: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    pub short: Option<char>,
    /// Without the dashes.
    pub long: String,
    /// The value's name (`REF`, `FILE`), or `None` for a switch.
    pub value: Option<String>,
    /// The description, continuation lines joined.
    pub about: String,
}

impl Flag {
    /// What kind of word the flag's value is, for completing it.
    pub fn value_kind(&self) -> ValueKind {
        let Some(value) = &self.value else {
            return ValueKind::None;
        };
        if let Some(choices) = choices(&self.long) {
            return ValueKind::Choices(choices);
        }
        match value.as_str() {
            "REF" => ValueKind::Model,
            "DIR" => ValueKind::Dir,
            "FILE" | "F" | "ID|PATH" => ValueKind::File,
            _ => ValueKind::Text,
        }
    }

    /// The first sentence of the description: what completion menus show.
    pub fn short_about(&self) -> String {
        first_sentence(&self.about)
    }
}

/// What a flag's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A switch: no value.
    None,
    /// One of a fixed set.
    Choices(&'static [&'static str]),
    /// A model reference from the config.
    Model,
    Dir,
    File,
    /// Free text (a number, a rule, a prompt).
    Text,
}

/// A word that selects an action of a command (`subagent list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sub {
    pub name: String,
    pub about: String,
}

/// One command of the `COMMANDS` table with what its help text documents.
#[derive(Debug, Clone)]
pub struct CommandDoc {
    pub name: &'static str,
    pub summary: &'static str,
    pub help: &'static str,
    pub subcommands: Vec<Sub>,
    /// The command's own flags, without the global ones.
    pub flags: Vec<Flag>,
    /// What the command takes after its flags, from its usage line (`[PROMPT...]`, `DIR`).
    pub operands: Vec<String>,
}

/// The values of the flags that take one of a fixed set. Each value is checked against the
/// help texts that document the flag (a test fails if none names it).
const CHOICES: &[(&str, &[&str])] = &[
    ("output-format", &["text", "json", "stream-json"]),
    ("permission-mode", &["ask", "auto", "yolo", "strict"]),
];

/// The shells `reasonix completions` writes a script for.
pub const SHELLS: &[&str] = &["bash", "zsh", "fish"];

/// The values `--NAME` takes, when they are a fixed set.
pub fn choices(long: &str) -> Option<&'static [&'static str]> {
    CHOICES
        .iter()
        .find(|(name, _)| *name == long)
        .map(|(_, values)| *values)
}

/// The flags every command accepts (`--config`, `-C`), and `--help`/`--version`, which work
/// before any command.
pub fn global_flags() -> Vec<Flag> {
    flag_table(GLOBAL_HELP)
}

/// Every command in `reasonix help` order, with its subcommands and flags.
pub fn commands() -> Vec<CommandDoc> {
    COMMANDS
        .iter()
        .map(|c| document(c.name, c.summary, c.help))
        .collect()
}

/// Reads one help text. Flags come from its flag tables and its usage lines (`[--json]`);
/// subcommands from the usage lines (`reasonix subagent list`). `subagent try/run` take every
/// `reasonix run` flag, which its help says in prose, so they are inherited here.
fn document(name: &'static str, summary: &'static str, help: &'static str) -> CommandDoc {
    let usage = usage_lines(help, name);
    let mut flags = flag_table(help);
    for flag in usage_flags(&usage) {
        if !flags.iter().any(|f| f.long == flag.long) {
            flags.push(flag);
        }
    }
    if help.contains("accept every `reasonix run` flag") {
        if let Some(run) = COMMANDS.iter().find(|c| c.name == "run") {
            for flag in flag_table(run.help) {
                if !flags.iter().any(|f| f.long == flag.long) {
                    flags.push(flag);
                }
            }
        }
    }
    let global = global_flags();
    flags.retain(|f| !global.iter().any(|g| g.long == f.long));
    let mut subcommands: Vec<Sub> = Vec::new();
    let mut operands = Vec::new();
    for words in &usage {
        let mut rest = words
            .iter()
            .map(|w| w.trim_matches(|c| c == '[' || c == ']'));
        if let Some(first) = rest.clone().next() {
            if is_word(first) && !subcommands.iter().any(|s| s.name == first) {
                subcommands.push(Sub {
                    name: first.to_string(),
                    about: sub_about(help, first),
                });
                rest.next();
            }
        }
        for word in rest {
            let plain = word.trim_end_matches("...");
            if plain.chars().any(|c| c.is_ascii_uppercase())
                && !plain.contains("FLAGS")
                && !words
                    .iter()
                    .any(|w| w.starts_with('-') && w.contains(plain))
                && !operands.iter().any(|o| o == word)
            {
                operands.push(word.to_string());
            }
        }
    }
    CommandDoc {
        name,
        summary,
        help,
        subcommands,
        flags,
        operands,
    }
}

/// A lower-case word that names an action (`list`), not a flag or a placeholder.
fn is_word(word: &str) -> bool {
    !word.is_empty()
        && word.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        && !word.starts_with('-')
}

/// The words after `reasonix NAME` on each usage line.
fn usage_lines(help: &str, name: &str) -> Vec<Vec<String>> {
    let prefix = format!("reasonix {name}");
    let mut lines = Vec::new();
    for (i, line) in help.lines().enumerate() {
        let text = match line.strip_prefix("Usage:") {
            Some(rest) => rest.trim(),
            None if i > 0 && line.starts_with(' ') => line.trim(),
            None => {
                if i > 0 {
                    break;
                }
                continue;
            }
        };
        let Some(rest) = text.strip_prefix(&prefix) else {
            continue;
        };
        if !rest.is_empty() && !rest.starts_with(' ') {
            continue;
        }
        // `(the same chat ...)` after the synopsis is a remark, not part of it.
        let rest = rest.split("  ").next().unwrap_or("");
        lines.push(rest.split_whitespace().map(str::to_string).collect());
    }
    lines
}

/// Flags named in usage lines: `[--force]`, `[--model REF]`, `[--markdown | --json]`.
fn usage_flags(usage: &[Vec<String>]) -> Vec<Flag> {
    let mut flags = Vec::new();
    for words in usage {
        for (i, word) in words.iter().enumerate() {
            let word = word.trim_matches(|c| c == '[' || c == ']');
            let Some(long) = word.strip_prefix("--") else {
                continue;
            };
            // A value follows when the next word is a placeholder inside the same brackets.
            let value = words
                .get(i + 1)
                .filter(|next| next.ends_with(']') && !next.starts_with('['))
                .map(|next| next.trim_end_matches(']').to_string())
                .filter(|v| v.chars().all(|c| c.is_ascii_uppercase() || c == '|'));
            flags.push(Flag {
                short: None,
                long: long.to_string(),
                value,
                about: String::new(),
            });
        }
    }
    flags
}

/// The description of the action `name` in a help's `  name   what it does` table.
fn sub_about(help: &str, name: &str) -> String {
    let mut lines = help.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("  ").and_then(|l| l.strip_prefix(name)) else {
            continue;
        };
        if !rest.starts_with("  ") {
            continue;
        }
        let mut about = rest.trim().to_string();
        for more in lines.by_ref() {
            if more.starts_with("         ") && !more.trim().is_empty() {
                about.push(' ');
                about.push_str(more.trim());
            } else {
                break;
            }
        }
        return about;
    }
    String::new()
}

/// Every flag line in a help text (`  -m, --model REF   Model: ...`), with the indented lines
/// that continue its description.
pub fn flag_table(help: &str) -> Vec<Flag> {
    let mut flags: Vec<Flag> = Vec::new();
    let mut last_was_flag = false;
    for line in help.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent > 0 && trimmed.starts_with('-') {
            if let Some(flag) = parse_flag_line(trimmed) {
                if !flags.iter().any(|f| f.long == flag.long) {
                    flags.push(flag);
                    last_was_flag = true;
                    continue;
                }
            }
        } else if last_was_flag && indent >= 8 && !trimmed.is_empty() {
            if let Some(flag) = flags.last_mut() {
                flag.about.push(' ');
                flag.about.push_str(trimmed);
                continue;
            }
        }
        last_was_flag = false;
    }
    flags
}

/// `-m, --model REF   Model: ...` → the flag. `None` for a line that is not a flag entry.
/// The value name is the upper-case word after the flag (`REF`, `ID|PATH`); the description
/// is the rest, however many spaces come before it (`--append-system-prompt T Append ...`).
fn parse_flag_line(line: &str) -> Option<Flag> {
    let mut short = None;
    let mut long = None;
    let mut value = None;
    let mut rest = line.trim_start();
    loop {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        let flag = word.trim_end_matches(',');
        if let Some(name) = flag.strip_prefix("--").filter(|_| long.is_none()) {
            long = Some(name.to_string());
        } else if let Some(c) = flag
            .strip_prefix('-')
            .filter(|_| long.is_none() && short.is_none())
        {
            let mut chars = c.chars();
            short = Some(chars.next()?).filter(|_| chars.next().is_none());
            short?;
        } else if long.is_some()
            && value.is_none()
            && is_value_name(word)
            && rest[end..].starts_with(' ')
        {
            value = Some(word.to_string());
        } else {
            break;
        }
        rest = rest[end..].trim_start();
        if rest.is_empty() {
            break;
        }
    }
    let long = long.filter(|l| !l.is_empty() && !l.contains('='))?;
    Some(Flag {
        short,
        long,
        value,
        about: rest.to_string(),
    })
}

/// `REF`, `N`, `ID|PATH`: an upper-case placeholder.
fn is_value_name(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '|' || c == '_')
}

/// Up to the first ". " or "; ", or the whole text: what a completion menu shows.
pub fn first_sentence(text: &str) -> String {
    let end = [". ", "; "]
        .iter()
        .filter_map(|sep| text.find(sep))
        .min()
        .unwrap_or(text.len());
    text[..end].trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(name: &str) -> CommandDoc {
        commands().into_iter().find(|c| c.name == name).unwrap()
    }

    fn longs(doc: &CommandDoc) -> Vec<&str> {
        doc.flags.iter().map(|f| f.long.as_str()).collect()
    }

    #[test]
    fn flag_lines_give_short_long_value_and_joined_description() {
        let flags = flag_table(
            "Flags:\n  -m, --model REF   Model: a name\n      --plan        Start in plan\n                    mode\n  --json   JSON\nText -- not a flag\n",
        );
        assert_eq!(
            flags[0],
            Flag {
                short: Some('m'),
                long: "model".into(),
                value: Some("REF".into()),
                about: "Model: a name".into()
            }
        );
        assert_eq!(flags[1].about, "Start in plan mode");
        assert_eq!(flags[1].value, None);
        assert_eq!(flags[2].long, "json");
        assert_eq!(flags.len(), 3);
        let tight = flag_table("  --append T Append to it\n  --list\n  -x, --yes   Yes\n");
        assert_eq!(tight[0].value.as_deref(), Some("T"));
        assert_eq!(tight[0].about, "Append to it");
        assert_eq!(
            (tight[1].long.as_str(), tight[1].value.as_deref()),
            ("list", None)
        );
        assert_eq!(tight[2].short, Some('x'));
    }

    #[test]
    fn commands_read_flags_from_tables_and_usage_lines() {
        let run = command("run");
        for flag in [
            "model",
            "max-steps",
            "output-format",
            "print",
            "allowedTools",
            "plan",
        ] {
            assert!(longs(&run).contains(&flag), "{flag}: {:?}", longs(&run));
        }
        assert!(!longs(&run).contains(&"cd"), "global flags are listed once");
        assert_eq!(longs(&command("doctor")), vec!["model"]);
        assert_eq!(command("doctor").flags[0].value.as_deref(), Some("REF"));
        assert_eq!(
            longs(&command("setup")),
            vec![
                "force",
                "api-key-stdin",
                "base-url",
                "model",
                "api-key-env",
                "no-key",
                "name"
            ]
        );
        let subagent = command("subagent");
        let names: Vec<&str> = subagent
            .subcommands
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            names,
            vec!["list", "try", "run", "create", "edit", "delete"]
        );
        assert!(subagent.subcommands[1].about.starts_with("Runs TASK"));
        assert!(
            longs(&subagent).contains(&"output-format"),
            "inherits run's flags"
        );
        let mcp = command("mcp");
        assert_eq!(mcp.subcommands.len(), 4);
        assert!(command("trust").subcommands.is_empty());
        assert_eq!(command("trust").operands, vec!["DIR"]);
        assert_eq!(command("chat").operands, Vec::<String>::new());
    }

    #[test]
    fn value_kinds_follow_the_value_names() {
        let run = command("run");
        let kind = |long: &str| {
            run.flags
                .iter()
                .find(|f| f.long == long)
                .unwrap()
                .value_kind()
        };
        assert_eq!(kind("model"), ValueKind::Model);
        assert_eq!(kind("record"), ValueKind::File);
        assert_eq!(kind("max-steps"), ValueKind::Text);
        assert_eq!(kind("print"), ValueKind::None);
        assert_eq!(
            kind("output-format"),
            ValueKind::Choices(&["text", "json", "stream-json"])
        );
    }

    #[test]
    fn every_fixed_value_is_one_a_help_documents() {
        for (long, values) in CHOICES {
            let abouts: Vec<String> = commands()
                .iter()
                .flat_map(|doc| doc.flags.iter())
                .filter(|f| f.long == *long)
                .map(|f| f.about.clone())
                .collect();
            assert!(!abouts.is_empty(), "no command documents --{long}");
            for value in *values {
                assert!(
                    abouts.iter().any(|about| about.contains(value)),
                    "`{value}` of --{long} is in no help text"
                );
            }
        }
    }
}
