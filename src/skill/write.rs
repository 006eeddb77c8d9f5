//! A subagent profile as `reasonix subagent create | edit` manages it: a `SKILL.md` whose
//! frontmatter holds only the managed keys (`name`, `description`, `runAs: subagent`,
//! `invocation: manual`, and optionally `model` and `effort`) and whose body is the child's
//! system prompt. Managed profiles are manual (SPEC §3.10): the pinned skill index leaves them
//! out, so a profile's name never reaches the parent's prompt and the model cannot discover
//! it; `task`, `reasonix subagent try | run` and an explicit `/NAME` still run it. This module
//! reads such a file (refusing anything it could not rewrite without losing what a person
//! wrote) and renders one; it does no I/O. Where the file lives, symlinks and the atomic
//! write are the command's business (`cli/subagent_edit.rs`).
//!
//! Every rendered file is read back through the same parser the store uses before it is
//! returned, so what `create` writes is exactly what `list` and `run` will see.

use std::fmt;
use std::path::Path;

use super::frontmatter;
use super::store::MAX_SKILL_FILE;
use super::{from_document, Invocation, RunAs, MAX_DESCRIPTION};

/// The frontmatter keys `edit` can rewrite without losing anything, in the order written.
pub const MANAGED_KEYS: &[&str] = &[
    "name",
    "description",
    "runAs",
    "invocation",
    "model",
    "effort",
];

/// The reasoning efforts a profile may ask for (the chat's `/effort` offers the same).
pub const EFFORTS: &[&str] = &["minimal", "low", "medium", "high", "max", "xhigh"];

/// A managed profile's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The body: the child agent's full system prompt.
    pub prompt: String,
}

/// Why a profile cannot be read as managed or written, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileError {
    /// The file does not parse, or a field fails the store's own checks (`file:line: ...`).
    Invalid(String),
    /// A skill without `runAs: subagent`.
    Inline { name: String },
    /// A profile without `invocation: manual`, which the model may discover.
    NotManual { name: String },
    /// Frontmatter keys outside [`MANAGED_KEYS`].
    Unmanaged { name: String, keys: Vec<String> },
    /// `#` comment lines in the frontmatter, which a rewrite would drop.
    Comments { name: String },
    /// A `name` other than the folder's, which `/NAME` and the folder would disagree on.
    NameDiffers { name: String, folder: String },
    /// A value the command line gave that the file cannot hold.
    BadValue { field: &'static str, reason: String },
    /// An empty body: a profile without a system prompt.
    EmptyPrompt,
    /// More than the store reads.
    TooLarge { bytes: usize },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Invalid(detail) => write!(f, "{detail}"),
            ProfileError::Inline { name } => write!(
                f,
                "profile `{name}`: it is an inline skill (no `runAs: subagent`), not a subagent profile; edit its SKILL.md by hand"
            ),
            ProfileError::NotManual { name } => write!(
                f,
                "profile `{name}`: it is not a manual profile (no `invocation: manual`), so the skill index shows it to the model; add `invocation: manual` by hand to manage it here"
            ),
            ProfileError::Unmanaged { name, keys } => write!(
                f,
                "profile `{name}`: its frontmatter has keys `reasonix subagent` does not manage ({}); edit its SKILL.md by hand",
                keys.join(", ")
            ),
            ProfileError::Comments { name } => write!(
                f,
                "profile `{name}`: its frontmatter has `#` comment lines, which a rewrite would drop; edit its SKILL.md by hand"
            ),
            ProfileError::NameDiffers { name, folder } => write!(
                f,
                "profile `{name}`: its name differs from its folder `{folder}`; rename one of them by hand first"
            ),
            ProfileError::BadValue { field, reason } => write!(f, "profile {field}: {reason}"),
            ProfileError::EmptyPrompt => write!(
                f,
                "profile prompt: it is empty; give the child's system prompt with --prompt, --prompt-file or on stdin"
            ),
            ProfileError::TooLarge { bytes } => write!(
                f,
                "profile prompt: the SKILL.md would be {bytes} bytes, more than the {} KiB the store reads; shorten the prompt",
                MAX_SKILL_FILE / 1024
            ),
        }
    }
}

impl std::error::Error for ProfileError {}

/// Reads a `SKILL.md` as a managed profile of the folder `folder_name`; `file` names it in
/// errors.
pub fn read(text: &str, file: &Path, folder_name: &str) -> Result<Profile, ProfileError> {
    let doc = frontmatter::parse(text).map_err(|e| {
        ProfileError::Invalid(format!("{}:{}: {}", file.display(), e.line, e.message))
    })?;
    let name_hint = match doc.keys.get("name").map(|e| &e.value) {
        Some(frontmatter::Value::Text(name)) => name.trim().to_string(),
        _ => folder_name.to_string(),
    };
    let unmanaged: Vec<String> = doc
        .keys
        .keys()
        .filter(|k| !MANAGED_KEYS.contains(&k.as_str()))
        .cloned()
        .collect();
    if !unmanaged.is_empty() {
        return Err(ProfileError::Unmanaged {
            name: name_hint,
            keys: unmanaged,
        });
    }
    // The frontmatter is the lines between the fences (the parser found both).
    let commented = text
        .lines()
        .skip(1)
        .take_while(|l| l.trim_end() != "---")
        .any(|l| l.trim_start().starts_with('#'));
    if commented {
        return Err(ProfileError::Comments { name: name_hint });
    }
    let (skill, _) =
        from_document(doc, file, folder_name).map_err(|d| ProfileError::Invalid(d.to_string()))?;
    if skill.run_as != RunAs::Subagent {
        return Err(ProfileError::Inline { name: skill.name });
    }
    if skill.invocation != Invocation::Manual {
        return Err(ProfileError::NotManual { name: skill.name });
    }
    if skill.name != folder_name {
        return Err(ProfileError::NameDiffers {
            name: skill.name,
            folder: folder_name.to_string(),
        });
    }
    Ok(Profile {
        name: skill.name,
        description: skill.description,
        model: skill.model,
        effort: skill.effort,
        prompt: skill.body,
    })
}

/// The `SKILL.md` text of `profile`, checked by reading it back as the store would.
pub fn render(profile: &Profile) -> Result<String, ProfileError> {
    check(profile)?;
    let mut text = String::from("---\n");
    text.push_str(&format!("name: {}\n", scalar(&profile.name)));
    text.push_str(&format!("description: {}\n", scalar(&profile.description)));
    text.push_str("runAs: subagent\ninvocation: manual\n");
    if let Some(model) = &profile.model {
        text.push_str(&format!("model: {}\n", scalar(model)));
    }
    if let Some(effort) = &profile.effort {
        text.push_str(&format!("effort: {effort}\n"));
    }
    text.push_str("---\n");
    text.push_str(&normalised_prompt(&profile.prompt));
    if text.len() as u64 > MAX_SKILL_FILE {
        return Err(ProfileError::TooLarge { bytes: text.len() });
    }
    let back = read(&text, Path::new("SKILL.md"), &profile.name)?;
    let expected = Profile {
        prompt: normalised_prompt(&profile.prompt),
        ..profile.clone()
    };
    if back != expected {
        // The emitter and the parser disagree: a bug here, never a file written wrongly.
        return Err(ProfileError::Invalid(format!(
            "profile `{}`: the SKILL.md would not read back as written; please report this",
            profile.name
        )));
    }
    Ok(text)
}

/// The template an editor opens for a new profile: the fields given so far, an empty
/// description when none was, and a placeholder body. It is not a valid profile until the
/// person fills it in; leaving it unchanged creates nothing.
pub fn template(
    name: &str,
    description: Option<&str>,
    model: Option<&str>,
    effort: Option<&str>,
) -> String {
    let mut text = format!("---\nname: {}\n", scalar(name));
    text.push_str(&format!(
        "description: {}\n",
        description.map(scalar).unwrap_or_default()
    ));
    text.push_str("runAs: subagent\ninvocation: manual\n");
    if let Some(model) = model {
        text.push_str(&format!("model: {}\n", scalar(model)));
    }
    if let Some(effort) = effort {
        text.push_str(&format!("effort: {effort}\n"));
    }
    text.push_str(
        "---\nReplace this text with the subagent's instructions: who it is, what it does with the \
         task it is given, and what its final answer must contain. The whole body is its system \
         prompt.\n",
    );
    text
}

/// Whether `name` may name a profile: the parser's own rules for a skill name, applied to a
/// minimal file, so the two can never disagree.
pub fn check_name(name: &str) -> Result<(), ProfileError> {
    let probe = format!(
        "---\nname: {}\ndescription: d\nrunAs: subagent\ninvocation: manual\n---\nx\n",
        scalar(name)
    );
    read(&probe, Path::new("NAME"), name)
        .map(|_| ())
        .map_err(|e| match e {
            ProfileError::Invalid(detail) => ProfileError::BadValue {
                field: "name",
                reason: detail
                    .split_once(": ")
                    .map_or(detail.as_str(), |(_, reason)| reason)
                    .to_string(),
            },
            other => other,
        })
}

/// The checks the parser would not make, with messages that name the flag.
fn check(profile: &Profile) -> Result<(), ProfileError> {
    let bad = |field: &'static str, reason: String| Err(ProfileError::BadValue { field, reason });
    let description = profile.description.trim();
    if description.is_empty() {
        return bad(
            "description",
            "it is empty; say in one line what the profile is for (--description)".into(),
        );
    }
    if description.chars().any(char::is_control) {
        return bad(
            "description",
            "it must be one line without control characters".into(),
        );
    }
    if description.chars().count() > MAX_DESCRIPTION {
        return bad(
            "description",
            format!("it is longer than {MAX_DESCRIPTION} characters; shorten it"),
        );
    }
    if let Some(model) = &profile.model {
        if model.is_empty() || model.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad(
                "model",
                format!("`{model}` is not a model name (one word, as in `reasonix models`)"),
            );
        }
    }
    if let Some(effort) = &profile.effort {
        if !EFFORTS.contains(&effort.as_str()) {
            return bad(
                "effort",
                format!("`{effort}` is not one of {}", EFFORTS.join(", ")),
            );
        }
    }
    if profile.prompt.trim().is_empty() {
        return Err(ProfileError::EmptyPrompt);
    }
    Ok(())
}

/// The body as written: no trailing blank lines, one final newline.
fn normalised_prompt(prompt: &str) -> String {
    format!("{}\n", prompt.trim_end())
}

/// A one-line value, plain when every YAML reader takes it as the same text, else
/// double-quoted with the escapes the frontmatter reader knows.
fn scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value.trim() == value
        && value
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '(' | '/' | '.'))
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.ends_with(':')
        && !value
            .chars()
            .any(|c| c.is_control() || matches!(c, '"' | '\\'));
    if plain {
        return value.to_string();
    }
    let mut quoted = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A profile parsed from the text a person saved in the editor; the same rules as [`read`].
pub fn parse_edited(text: &str, folder_name: &str) -> Result<Profile, ProfileError> {
    let profile = read(text, Path::new("SKILL.md"), folder_name)?;
    check(&profile)?;
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile {
            name: "helper".into(),
            description: "Counts things".into(),
            model: Some("fake-model".into()),
            effort: Some("high".into()),
            prompt: "You help.\n\n".into(),
        }
    }

    #[test]
    fn renders_the_managed_layout_and_reads_it_back() {
        let text = render(&profile()).unwrap();
        assert_eq!(
            text,
            "---\nname: helper\ndescription: Counts things\nrunAs: subagent\ninvocation: manual\nmodel: fake-model\neffort: high\n---\nYou help.\n"
        );
        let back = read(&text, Path::new("SKILL.md"), "helper").unwrap();
        assert_eq!(back.prompt, "You help.\n");
        assert_eq!(back.model.as_deref(), Some("fake-model"));
    }

    #[test]
    fn awkward_descriptions_are_quoted_and_survive_the_round_trip() {
        for description in [
            "Review: the diff",
            "- starts like a list",
            "[not a list]",
            "ends with a colon:",
            "has a # comment marker",
            "quotes \"inside\" and \\ backslash",
            "'single'",
            "| pipe",
            "> fold",
            "中文描述",
        ] {
            let p = Profile {
                description: description.into(),
                ..profile()
            };
            let text = render(&p).unwrap_or_else(|e| panic!("{description:?}: {e}"));
            let back = read(&text, Path::new("SKILL.md"), "helper").unwrap();
            assert_eq!(back.description, description, "{text}");
        }
    }

    #[test]
    fn a_body_with_fence_lines_stays_the_body() {
        let p = Profile {
            prompt: "Intro\n---\nname: not-a-key\n---\nEnd\n".into(),
            ..profile()
        };
        let text = render(&p).unwrap();
        let back = read(&text, Path::new("SKILL.md"), "helper").unwrap();
        assert_eq!(back.prompt, p.prompt);
        assert_eq!(back.name, "helper");
    }

    #[test]
    fn bad_values_are_refused_with_the_field() {
        let cases: Vec<(Profile, &str)> = vec![
            (
                Profile {
                    name: "../x".into(),
                    ..profile()
                },
                "not a valid skill name",
            ),
            (
                Profile {
                    description: "two\nlines".into(),
                    ..profile()
                },
                "profile description: it must be one line",
            ),
            (
                Profile {
                    description: " ".into(),
                    ..profile()
                },
                "profile description: it is empty",
            ),
            (
                Profile {
                    effort: Some("hgih".into()),
                    ..profile()
                },
                "profile effort: `hgih` is not one of minimal, low",
            ),
            (
                Profile {
                    model: Some("a b".into()),
                    ..profile()
                },
                "profile model: `a b` is not a model name",
            ),
            (
                Profile {
                    prompt: "\n \n".into(),
                    ..profile()
                },
                "profile prompt: it is empty",
            ),
            (
                Profile {
                    prompt: "x".repeat(MAX_SKILL_FILE as usize),
                    ..profile()
                },
                "more than the 256 KiB",
            ),
        ];
        for (p, fragment) in cases {
            let err = render(&p).unwrap_err().to_string();
            assert!(err.contains(fragment), "{fragment:?} not in {err:?}");
        }
    }

    #[test]
    fn unmanaged_files_are_refused_with_the_reason() {
        let cases: &[(&str, &str)] = &[
            (
                "---\nname: helper\ndescription: d\nrunAs: subagent\nallowed-tools: Read\nx-extra: 1\ninvocation: manual\n---\nx\n",
                "profile `helper`: its frontmatter has keys `reasonix subagent` does not manage (allowed-tools, x-extra)",
            ),
            (
                "---\nname: helper\ndescription: d\nrunAs: subagent\n---\nx\n",
                "profile `helper`: it is not a manual profile",
            ),
            (
                "---\nname: helper\ndescription: d\nrunAs: subagent\ninvocation: auto\n---\nx\n",
                "profile `helper`: it is not a manual profile",
            ),
            (
                "---\nname: helper\ndescription: d\n---\nx\n",
                "profile `helper`: it is an inline skill",
            ),
            (
                "---\nname: helper\n# why this exists\ndescription: d\nrunAs: subagent\ninvocation: manual\n---\n# Heading\n",
                "profile `helper`: its frontmatter has `#` comment lines",
            ),
            (
                "---\nname: other\ndescription: d\nrunAs: subagent\ninvocation: manual\n---\nx\n",
                "profile `other`: its name differs from its folder `helper`",
            ),
            (
                "---\nname: helper\nrunAs: subagent\n---\nx\n",
                "dir/SKILL.md:1: the frontmatter has no `description`",
            ),
            ("no frontmatter\n", "dir/SKILL.md:1: a SKILL.md must start"),
        ];
        for (text, expected) in cases {
            let err = read(text, Path::new("dir/SKILL.md"), "helper")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(expected), "{expected:?} vs {err:?}");
        }
    }

    #[test]
    fn names_follow_the_parsers_rules() {
        for good in ["helper", "a.b_c-1", "X"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "-x",
            "two words",
            "a\nb",
            &"x".repeat(65),
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.starts_with("profile name: "), "{bad:?}: {err}");
        }
    }

    #[test]
    fn the_template_is_not_a_profile_until_filled_in() {
        let text = template("helper", None, Some("m"), None);
        assert!(text.contains("model: m\n"), "{text}");
        let err = parse_edited(&text, "helper").unwrap_err().to_string();
        assert!(err.contains("no `description`"), "{err}");
        let filled = text.replace("description: \n", "description: Helps\n");
        assert_eq!(
            parse_edited(&filled, "helper").unwrap().description,
            "Helps"
        );
    }
}
