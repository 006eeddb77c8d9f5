//! Skills: reusable workflows kept as folders with a `SKILL.md` (the format Claude Code and
//! Codex read). This module owns what a skill is and how its file is read; `store` finds them
//! in their roots and decides which one a name means.

pub mod builtin;
pub mod frontmatter;
pub mod index;
pub mod store;
pub mod write;

use std::fmt;
use std::path::{Path, PathBuf};

use frontmatter::{Document, Value};

/// How a skill runs when invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// Its body is loaded into the conversation.
    Inline,
    /// Its body is the full system prompt of a child agent (a subagent profile).
    Subagent,
}

/// Whether the model may discover a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation {
    /// Listed in the pinned skill index; the model may load it.
    Auto,
    /// Only an explicit `/<name>` runs it; never in the index.
    Manual,
}

/// Where a skill was found, nearest first: a nearer scope shadows a farther one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `<workspace>/.reasonix/skills/`: repository content.
    Project,
    /// `<home>/skills/`.
    User,
    /// `~/.agents/skills/`, read only.
    Agents,
    /// `<workspace>/.claude/skills/`, read only; repository content.
    Claude,
    /// `~/.claude/skills/`, the user's Claude Code skills, read only.
    ClaudeUser,
    /// `~/.claude/agents/*.md`, the user's Claude Code subagent definitions, read only as
    /// subagent profiles.
    ClaudeAgents,
    /// `<workspace>/.claude/agents/*.md`, the repository's Claude Code subagent definitions:
    /// read only while the workspace is trusted; repository content.
    ClaudeProjectAgents,
    /// A `[skills] paths` entry, as written.
    Custom(String),
    /// Shipped in the binary (the `explore` and `review` profiles); no file, lowest rank.
    Builtin,
}

impl Scope {
    pub fn label(&self) -> &str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Agents => "agents",
            Scope::Claude => "claude",
            Scope::ClaudeUser => "claude-user",
            Scope::ClaudeAgents => "claude-agents",
            Scope::ClaudeProjectAgents => "claude-project-agents",
            Scope::Custom(_) => "custom",
            Scope::Builtin => "built-in",
        }
    }

    /// Scopes inside the workspace hold whatever the repository brings.
    pub fn is_repository(&self) -> bool {
        matches!(
            self,
            Scope::Project | Scope::Claude | Scope::ClaudeProjectAgents
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub run_as: RunAs,
    pub invocation: Invocation,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub allowed_tools: Vec<String>,
    pub body: String,
    /// The skill's folder.
    pub dir: PathBuf,
    pub scope: Scope,
    /// Repository content in a workspace that is not trusted: its body may be read, its
    /// scripts never run outside the ordinary permission path.
    pub trusted: bool,
    /// Files under `references/`, relative to the folder, sorted.
    pub references: Vec<String>,
    /// Whether the folder has a `scripts/` directory.
    pub has_scripts: bool,
}

/// A problem found while reading skills, reported as `path:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// The longest description the index shows; longer ones are refused so the index stays small.
pub const MAX_DESCRIPTION: usize = 1024;
const MAX_NAME: usize = 64;

/// The frontmatter fields of a skill, checked; `file` names the `SKILL.md` in errors.
pub fn from_document(
    doc: Document,
    file: &Path,
    folder_name: &str,
) -> Result<(Skill, Vec<Diagnostic>), Diagnostic> {
    let error = |line: usize, message: String| Diagnostic {
        path: file.to_path_buf(),
        line: Some(line),
        message,
    };
    let text = |key: &str| -> Result<Option<(String, usize)>, Diagnostic> {
        match doc.keys.get(key) {
            None => Ok(None),
            Some(entry) => match &entry.value {
                Value::Text(t) => Ok(Some((t.trim().to_string(), entry.line))),
                Value::List(_) => Err(error(
                    entry.line,
                    format!("`{key}` must be text, not a list"),
                )),
            },
        }
    };
    let mut warnings = Vec::new();
    let (name, name_line) = text("name")?
        .filter(|(n, _)| !n.is_empty())
        .ok_or_else(|| error(1, "the frontmatter has no `name`".into()))?;
    if name.len() > MAX_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || name.starts_with(['-', '.'])
    {
        return Err(error(
            name_line,
            format!(
                "`{name}` is not a valid skill name: use at most {MAX_NAME} letters, digits, `-`, `_` or `.`"
            ),
        ));
    }
    if name != folder_name {
        warnings.push(error(
            name_line,
            format!("the name `{name}` differs from the folder name `{folder_name}`; `/{name}` invokes it"),
        ));
    }
    let (description, description_line) = text("description")?
        .filter(|(d, _)| !d.is_empty())
        .ok_or_else(|| error(1, "the frontmatter has no `description`; the index needs one line saying when to use the skill".into()))?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(error(
            description_line,
            format!("the description is longer than {MAX_DESCRIPTION} characters; shorten it"),
        ));
    }
    let run_as = match text("runAs")? {
        None => RunAs::Inline,
        Some((v, line)) => match v.as_str() {
            "inline" => RunAs::Inline,
            "subagent" => RunAs::Subagent,
            other => {
                return Err(error(
                    line,
                    format!("`runAs` must be inline or subagent, got `{other}`"),
                ))
            }
        },
    };
    let invocation = match text("invocation")? {
        None => Invocation::Auto,
        Some((v, line)) => match v.as_str() {
            "auto" => Invocation::Auto,
            "manual" => Invocation::Manual,
            other => {
                return Err(error(
                    line,
                    format!("`invocation` must be auto or manual, got `{other}`"),
                ))
            }
        },
    };
    let allowed_tools = match doc.keys.get("allowed-tools") {
        None => Vec::new(),
        Some(entry) => match &entry.value {
            Value::List(items) => items.clone(),
            // Claude Code writes `allowed-tools: Read, Grep, Bash(git:*)`.
            Value::Text(t) => split_tools(t),
        },
    };
    let skill = Skill {
        name,
        description: one_line(&description),
        run_as,
        invocation,
        model: text("model")?.map(|(v, _)| v).filter(|v| !v.is_empty()),
        effort: text("effort")?.map(|(v, _)| v).filter(|v| !v.is_empty()),
        allowed_tools,
        body: doc.body,
        dir: file.parent().map(Path::to_path_buf).unwrap_or_default(),
        scope: Scope::User,
        trusted: true,
        references: Vec::new(),
        has_scripts: false,
    };
    Ok((skill, warnings))
}

/// `Read, Grep, Bash(git add:*)`: commas outside parentheses separate.
fn split_tools(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The index shows one line per skill.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<(Skill, Vec<Diagnostic>), Diagnostic> {
        let doc = frontmatter::parse(text).map_err(|e| Diagnostic {
            path: "x/SKILL.md".into(),
            line: Some(e.line),
            message: e.message,
        })?;
        from_document(doc, Path::new("/s/review/SKILL.md"), "review")
    }

    #[test]
    fn fields_are_read_with_their_defaults() {
        let (skill, warnings) = read(
            "---\nname: review\ndescription: >\n  Review the\n  staged diff\nallowed-tools: Read, Bash(git diff:*), Grep\n---\nBody\n",
        )
        .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(skill.description, "Review the staged diff");
        assert_eq!(skill.run_as, RunAs::Inline);
        assert_eq!(skill.invocation, Invocation::Auto);
        assert_eq!(skill.allowed_tools, ["Read", "Bash(git diff:*)", "Grep"]);
        assert_eq!(skill.dir, Path::new("/s/review"));
        assert_eq!(skill.body, "Body\n");
    }

    #[test]
    fn bad_values_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("---\ndescription: d\n---\n", 1, "no `name`"),
            ("---\nname: review\n---\n", 1, "no `description`"),
            (
                "---\nname: review\ndescription: d\nrunAs: child\n---\n",
                4,
                "inline or subagent",
            ),
            (
                "---\nname: review\ndescription: d\ninvocation: never\n---\n",
                4,
                "auto or manual",
            ),
            (
                "---\nname: ../etc\ndescription: d\n---\n",
                2,
                "not a valid skill name",
            ),
            ("---\nname: [a]\ndescription: d\n---\n", 2, "must be text"),
        ];
        for (input, line, fragment) in cases {
            let err = read(input).unwrap_err();
            assert_eq!(err.line, Some(*line), "{input:?}: {err}");
            assert!(err.message.contains(fragment), "{input:?}: {err}");
        }
    }

    #[test]
    fn a_name_other_than_the_folder_is_a_warning() {
        let (skill, warnings) = read("---\nname: other\ndescription: d\n---\n").unwrap();
        assert_eq!(skill.name, "other");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0]
            .to_string()
            .contains("SKILL.md:2: the name `other` differs"));
    }
}
