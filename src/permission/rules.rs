//! Permission rules: parsing the textual forms and matching one rule against one tool call.
//! Precedence between rule lists is the policy's business; what a rule is allowed to cover
//! depends on whether it grants (allow) or restricts (deny, ask), see [`Polarity`].
//!
//! Accepted forms:
//! - `Tool` (bare): every call of that tool or family;
//! - `Tool(specifier)`: calls whose subject matches the specifier;
//! - `Tool=literal` (legacy): calls whose subject equals the literal, no wildcards;
//! - `Bash(prefix:*)` and legacy `Bash(prefix *)`: commands starting with `prefix` at a word
//!   boundary; `Bash(exact command)`; a `*` elsewhere in a Bash specifier matches any text;
//! - `Edit(glob)`: every tool of the writer family (today write_file, edit_file, multi_edit,
//!   move_file); `Read(glob)`: every reader (read_file, ls, glob, grep); `Bash(...)`: the shell;
//!   a tool declares its family (`Tool::family`), so a new one cannot fall outside these;
//! - lowercase tool ids (`bash(...)`, `write_file`, `read_file(...)`) and every other Claude
//!   Code name of one of our tools (`Write`, `MultiEdit`, `Glob`, `Grep`, `LS`, `Task`,
//!   `TodoWrite`, ..., see `tool::claude_vocabulary`);
//! - `mcp__server__tool` for one MCP tool and `mcp__server` (or `mcp__server__*`) for all of a
//!   server's tools.
//!
//! Path globs support `*` and `?` within one path segment and `**` across segments. A glob
//! starting with `/` (or Claude Code's `//`) is absolute, `~/` is the home directory, anything
//! else is relative to the workspace root; a relative glob without a `/` matches the file name
//! at any depth (as in .gitignore) and one ending in `/` covers everything below. The private
//! matcher here only serves rule specifiers; `tool::glob` serves the glob tool.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::shell::Analysis;
use crate::sandbox::confine;
use crate::tool::{claude_vocabulary, Family, Subjects};

const ACCEPTED_FORMS: &str = "accepted forms: Tool, Tool(specifier), Tool=literal, \
Bash(prefix:*), Bash(exact command), Edit(glob), Read(glob), mcp__server__tool, mcp__server";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub rule: String,
    pub detail: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "permission: invalid rule `{}`: {}; {ACCEPTED_FORMS}",
            self.rule, self.detail
        )
    }
}

impl std::error::Error for RuleError {}

/// Whether a rule grants or restricts, which decides how much of a call it must cover.
///
/// A grant (allow rule, session grant) must cover the whole call: a Bash prefix rule only
/// matches one plain simple command, and for `move_file` both paths must match. A restriction
/// (deny or ask rule) matches as soon as any part of the call matches: any simple command the
/// line could run (behind `&&`, inside `$(...)`, behind `sudo` or `sh -c`), or either path of
/// a move. Erring towards "not covered" for grants and "covered" for restrictions means a
/// rule can only ever make the outcome stricter than the user wrote, never looser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polarity {
    Grant,
    Restrict,
}

/// What paths in rules and calls are resolved against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchContext {
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
}

impl MatchContext {
    pub fn new(workspace: PathBuf, home: Option<PathBuf>) -> MatchContext {
        MatchContext {
            workspace: normalize(&workspace),
            home: home.map(|h| normalize(&h)),
        }
    }

    /// `path` (relative to the workspace, or absolute) resolved through the filesystem, spelled
    /// with the workspace and home prefixes as the rules know them (a workspace reached through
    /// a symlink keeps its configured name). A path that cannot be resolved keeps its lexical
    /// form: the tool refuses it anyway.
    fn resolve(&self, path: &str) -> String {
        let lexical = normalize(&self.workspace.join(path));
        let Ok(real) = confine::resolve(&lexical) else {
            return lexical.to_string_lossy().into_owned();
        };
        let anchors = std::iter::once(&self.workspace).chain(self.home.iter());
        for anchor in anchors {
            if let Ok(real_anchor) = confine::resolve(anchor) {
                if let Ok(rest) = real.strip_prefix(&real_anchor) {
                    return anchor.join(rest).to_string_lossy().into_owned();
                }
            }
        }
        real.to_string_lossy().into_owned()
    }
}

/// The part of a call's arguments that rules look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// `command`.
    Command(String),
    /// `source_path` and `destination_path`, or `path`, or `file_path`.
    Paths(Vec<String>),
    /// `pattern`, when no path is given.
    Pattern(String),
}

impl Subject {
    /// The subject a tool declared (see [`Subjects`]); only undeclared tools fall back to
    /// [`Subject::extract`]. A declared path argument that is missing or not a string is left
    /// out (the tool then refuses the call itself); a declared default stands in for it.
    pub fn declared(subjects: Subjects, args: &Value) -> Option<Subject> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        match subjects {
            Subjects::Command(key) => text(key).map(Subject::Command),
            Subjects::Paths { keys, default } => {
                let paths: Vec<String> = keys
                    .iter()
                    .filter_map(|key| text(key).or_else(|| default.map(str::to_string)))
                    .collect();
                (!paths.is_empty()).then_some(Subject::Paths(paths))
            }
            Subjects::Nothing => None,
            Subjects::Undeclared => Subject::extract(args),
        }
    }

    /// Extracts the subject by the known argument keys, in order of preference.
    pub fn extract(args: &Value) -> Option<Subject> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        if let Some(command) = text("command") {
            return Some(Subject::Command(command));
        }
        let moved: Vec<String> = ["source_path", "destination_path"]
            .iter()
            .filter_map(|key| text(key))
            .collect();
        if !moved.is_empty() {
            return Some(Subject::Paths(moved));
        }
        if let Some(path) = text("path").or_else(|| text("file_path")) {
            return Some(Subject::Paths(vec![path]));
        }
        text("pattern").map(Subject::Pattern)
    }

    /// One line for events and prompts.
    pub fn display(&self) -> String {
        match self {
            Subject::Command(command) => command.trim().to_string(),
            Subject::Paths(paths) => paths.join(" -> "),
            Subject::Pattern(pattern) => pattern.clone(),
        }
    }
}

/// A tool call as rules see it; the command analysis is done once per call.
#[derive(Debug, Clone)]
pub struct Call {
    pub tool: String,
    /// Decides which family rules (`Bash`, `Edit`, `Read`) cover the call.
    pub family: Family,
    pub subject: Option<Subject>,
    analysis: Option<Analysis>,
    /// For a [`Subject::Paths`] built by [`Call::declared`]: each path as the filesystem
    /// resolves it (symlinks followed), in the same order. Empty when not resolved.
    resolved: Vec<String>,
}

impl Call {
    /// Each path of a [`Call::declared`] call as the filesystem resolves it, spelled with the
    /// workspace prefix when inside it; empty for calls on no path.
    pub fn resolved_paths(&self) -> &[String] {
        &self.resolved
    }

    /// A call whose subject is found by [`Subject::extract`], matched lexically; for tools
    /// that do not declare their subjects and for tests of the rule grammar.
    pub fn new(tool: &str, family: Family, args: &Value) -> Call {
        Call::with_subject(tool, family, Subject::extract(args))
    }

    /// A call judged by the arguments its tool declared, with each path also resolved through
    /// the filesystem, so that a symlink is judged by what it points to: a restriction matches
    /// when either form matches, a grant only when both do.
    pub fn declared(
        tool: &str,
        family: Family,
        subjects: Subjects,
        args: &Value,
        ctx: &MatchContext,
    ) -> Call {
        let mut call = Call::with_subject(tool, family, Subject::declared(subjects, args));
        if let Some(Subject::Paths(paths)) = &call.subject {
            call.resolved = paths.iter().map(|p| ctx.resolve(p)).collect();
        }
        call
    }

    /// A call on these paths, taken as already resolved.
    pub fn for_paths(tool: &str, family: Family, paths: Vec<String>) -> Call {
        Call::with_subject(tool, family, Some(Subject::Paths(paths)))
    }

    fn with_subject(tool: &str, family: Family, subject: Option<Subject>) -> Call {
        let analysis = match &subject {
            Some(Subject::Command(command)) => Some(Analysis::parse(command)),
            _ => None,
        };
        Call {
            tool: tool.to_string(),
            family,
            subject,
            analysis,
            resolved: Vec::new(),
        }
    }

    pub fn analysis(&self) -> Option<&Analysis> {
        self.analysis.as_ref()
    }
}

/// Which tools a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every shell tool ([`Family::Shell`]).
    Bash,
    /// Every tool that changes files ([`Family::Writer`]).
    Edit,
    /// Every tool that reads or lists files ([`Family::Reader`]).
    Read,
    /// One tool by its exact name.
    Tool(String),
    /// Every tool whose name starts with this prefix (`mcp__server__`).
    Server(String),
}

impl Target {
    fn from_name(name: &str) -> Result<Target, String> {
        let target = match name {
            "Bash" | "bash" => Target::Bash,
            "Edit" | "edit" => Target::Edit,
            "Read" | "read" => Target::Read,
            // Every other Claude Code name is the one tool it maps to (`Write` is
            // `write_file`); the vocabulary is the only place that knows the pairs.
            _ => match claude_vocabulary::our_name(name) {
                Some(ours) => Target::Tool(ours.into()),
                None => return Target::named(name),
            },
        };
        Ok(target)
    }

    fn named(name: &str) -> Result<Target, String> {
        let server_wildcard = name.starts_with("mcp__") && name.ends_with("__*");
        let plain = name
            .strip_suffix("__*")
            .filter(|_| server_wildcard)
            .unwrap_or(name);
        let valid = plain
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && plain
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err(format!(
                "`{name}` is not a tool name (letters, digits, `_`, `-`, `.`)"
            ));
        }
        let Some(server) = plain.strip_prefix("mcp__") else {
            return Ok(Target::Tool(name.to_string()));
        };
        if server.is_empty() || server.starts_with("__") {
            return Err("an MCP rule needs a server name: mcp__server or mcp__server__tool".into());
        }
        if server_wildcard || !server.contains("__") {
            Ok(Target::Server(format!("mcp__{server}__")))
        } else {
            Ok(Target::Tool(name.to_string()))
        }
    }

    pub fn covers(&self, tool: &str, family: Family) -> bool {
        match self {
            Target::Bash => family == Family::Shell,
            Target::Edit => family == Family::Writer,
            Target::Read => family == Family::Reader,
            Target::Tool(name) => tool == name,
            Target::Server(prefix) => tool.starts_with(prefix.as_str()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Spec {
    Any,
    Bash(BashPattern),
    Path(PathPattern),
    /// A specifier on any other tool: matched by the kind of subject the call exposes.
    Generic {
        bash: Option<BashPattern>,
        path: PathPattern,
        text: Pattern,
    },
}

/// One parsed permission rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    target: Target,
    spec: Spec,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Specifier,
    Literal,
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let trimmed = text.trim();
        let error = |detail: String| RuleError {
            rule: trimmed.to_string(),
            detail,
        };
        if trimmed.is_empty() {
            return Err(error("the rule is empty".into()));
        }
        let paren = trimmed.find('(');
        let equals = trimmed.find('=');
        let literal_form = match (paren, equals) {
            (Some(open), Some(eq)) => eq < open,
            (None, Some(_)) => true,
            _ => false,
        };
        let (name, spec) = if let (true, Some(eq)) = (literal_form, equals) {
            let literal = &trimmed[eq + 1..];
            if literal.trim().is_empty() {
                return Err(error("nothing follows `=`".into()));
            }
            (&trimmed[..eq], Some((literal, Form::Literal)))
        } else if let Some(open) = paren {
            let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                return Err(error("missing the closing `)`".into()));
            };
            if inner.trim().is_empty() {
                return Err(error(
                    "the specifier in `()` is empty; write the bare tool name to match every call"
                        .into(),
                ));
            }
            (&trimmed[..open], Some((inner, Form::Specifier)))
        } else {
            (trimmed, None)
        };
        let target = Target::from_name(name.trim()).map_err(&error)?;
        let spec = match spec {
            None => Spec::Any,
            Some((spec, form)) => Rule::spec(&target, spec, form).map_err(&error)?,
        };
        Ok(Rule {
            text: trimmed.to_string(),
            target,
            spec,
        })
    }

    fn spec(target: &Target, spec: &str, form: Form) -> Result<Spec, String> {
        if form == Form::Specifier && spec.trim() == "*" {
            return Ok(Spec::Any);
        }
        Ok(match target {
            Target::Bash => Spec::Bash(BashPattern::parse(spec, form)?),
            Target::Edit | Target::Read => Spec::Path(PathPattern::parse(spec, form)),
            Target::Tool(_) | Target::Server(_) => Spec::Generic {
                bash: BashPattern::parse(spec, form).ok(),
                path: PathPattern::parse(spec, form),
                text: Pattern::new(spec.trim(), form, Stars::Wildcards),
            },
        })
    }

    /// The rule as written (trimmed); this is what events and error messages quote.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Whether the rule has no specifier and so covers every call of its tools.
    pub fn is_bare(&self) -> bool {
        self.spec == Spec::Any
    }

    pub fn matches(&self, call: &Call, polarity: Polarity, ctx: &MatchContext) -> bool {
        if !self.target.covers(&call.tool, call.family) {
            return false;
        }
        let subject = match (&self.spec, &call.subject) {
            (Spec::Any, _) => return true,
            (_, None) => return false,
            (_, Some(subject)) => subject,
        };
        match (&self.spec, subject) {
            (Spec::Bash(pattern), Subject::Command(_)) => call
                .analysis()
                .is_some_and(|a| pattern.matches(a, polarity)),
            (Spec::Path(pattern), Subject::Paths(paths)) => {
                pattern.matches_call(paths, &call.resolved, polarity, ctx)
            }
            (Spec::Generic { bash, .. }, Subject::Command(_)) => bash
                .as_ref()
                .zip(call.analysis())
                .is_some_and(|(pattern, a)| pattern.matches(a, polarity)),
            (Spec::Generic { path, .. }, Subject::Paths(paths)) => {
                path.matches_call(paths, &call.resolved, polarity, ctx)
            }
            (Spec::Generic { text, .. }, Subject::Pattern(value)) => text.matches(value),
            _ => false,
        }
    }
}

/// Splits a Claude Code style list (`"Bash(git:*) Edit,Read"`) on commas and whitespace that
/// are outside parentheses.
pub fn split_rule_list(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A Claude Code tool list (`--allowedTools "Bash(git log:*) Read,Grep"`) as rules, each
/// naming a tool Claude Code, reasonix or an MCP server has; `flag` names the flag in the
/// error. An unknown name is refused rather than kept as a rule that matches nothing, so a
/// typo cannot leave a pipeline less restricted than its author wrote.
pub fn claude_tool_list(
    list: &str,
    flag: &str,
) -> Result<Vec<String>, claude_vocabulary::VocabularyError> {
    let rules = split_rule_list(list);
    for rule in &rules {
        claude_vocabulary::check_rule_name(rule, flag)?;
    }
    Ok(rules)
}

/// The rule a user would save to allow exactly this command again.
pub fn exact_command_rule(command: &str) -> Option<Rule> {
    let analysis = Analysis::parse(command);
    if analysis.error().is_some() || analysis.has_substitution() {
        return None;
    }
    let rendered = analysis.raw_rendering();
    if rendered.is_empty() {
        return None;
    }
    // A `*` in the specifier form is a wildcard; the literal form keeps it literal.
    let text = if rendered.contains('*') {
        format!("Bash={rendered}")
    } else {
        format!("Bash({rendered})")
    };
    Rule::parse(&text).ok()
}

/// Tools whose second word names the real subcommand, so a prefix approval keeps two words
/// (three for `npm run <script>` and the like).
const MULTI_WORD: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "npx",
    "cargo",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "gh",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "rustup",
    "dotnet",
    "mvn",
    "gradle",
    "make",
    "just",
    "brew",
    "apt",
    "apt-get",
    "systemctl",
    "python",
    "python3",
];

/// A conservative `Bash(prefix:*)` rule for this command, when it is one plain simple command.
pub fn prefix_command_rule(command: &str) -> Option<Rule> {
    let analysis = Analysis::parse(command);
    let words = analysis.simple_command().ok()?;
    let first = words.first()?;
    let mut take = 1;
    if MULTI_WORD.contains(&first.text.as_str()) {
        if let Some(second) = words.get(1) {
            // `git -C dir status`: a one-word prefix would cover every git command.
            if second.text.starts_with('-') {
                return None;
            }
            take = 2;
            let runs_script = matches!(second.text.as_str(), "run" | "exec");
            if runs_script && words.get(2).is_some_and(|w| !w.text.starts_with('-')) {
                take = 3;
            }
        }
    }
    let prefix: Vec<&str> = words.iter().take(take).map(|w| w.raw.as_str()).collect();
    let prefix = prefix.join(" ");
    if prefix.contains(['*', '(', ')']) {
        return None;
    }
    Rule::parse(&format!("Bash({prefix}:*)")).ok()
}

/// A Bash specifier compiled for both polarities.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BashPattern {
    /// Against the raw rendering of a plain simple command (or the whole line for exact
    /// rules); only unquoted `*` are wildcards.
    grant: Pattern,
    /// Against the quote-removed form of every command the line could run; every `*` is a
    /// wildcard, so quoting cannot hide a command from a deny rule.
    restrict: Pattern,
    prefix: bool,
}

impl BashPattern {
    fn parse(spec: &str, form: Form) -> Result<BashPattern, String> {
        let spec = spec.trim();
        let (body, prefix) = match form {
            Form::Literal => (spec, false),
            Form::Specifier => match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
                Some(body) => (body.trim_end(), true),
                None => (spec, false),
            },
        };
        if body.is_empty() {
            return Err("the command prefix before `:*` is empty".into());
        }
        let analysis = Analysis::parse(body);
        if let Some(error) = analysis.error() {
            return Err(format!("the command does not parse ({error})"));
        }
        let has_control = analysis
            .tokens()
            .iter()
            .any(|t| matches!(t, super::shell::Token::Control(_)));
        if prefix && has_control {
            return Err(
                "a prefix rule cannot contain shell operators; write one rule per command".into(),
            );
        }
        Ok(BashPattern {
            grant: Pattern::new(&analysis.raw_rendering(), form, Stars::Unquoted),
            restrict: Pattern::new(&analysis.plain_rendering(), form, Stars::Wildcards),
            prefix,
        })
    }

    fn matches(&self, analysis: &Analysis, polarity: Polarity) -> bool {
        match polarity {
            Polarity::Grant => self.grants(analysis),
            Polarity::Restrict => self.restricts(analysis),
        }
    }

    fn grants(&self, analysis: &Analysis) -> bool {
        if analysis.error().is_some() || analysis.has_substitution() {
            return false;
        }
        if !self.prefix && !self.grant.has_wildcard() {
            return self.grant.matches(&analysis.raw_rendering());
        }
        let Ok(words) = analysis.simple_command() else {
            return false;
        };
        let line: Vec<&str> = words.iter().map(|w| w.raw.as_str()).collect();
        self.fits(&self.grant, &line.join(" "))
    }

    /// A restriction (deny or ask) matches when the line or any command it runs fits, and
    /// also when the analysis could not unwrap every command (nesting past its bounds):
    /// wrapping a command deeper must not take it out of a deny rule's reach.
    fn restricts(&self, analysis: &Analysis) -> bool {
        if self.fits(&self.restrict, &analysis.plain_rendering()) {
            return true;
        }
        let forms = analysis.forms();
        forms.truncated
            || forms
                .list
                .iter()
                .any(|form| self.fits(&self.restrict, form))
    }

    fn fits(&self, pattern: &Pattern, line: &str) -> bool {
        pattern.matches(line) || self.prefix && pattern.matches_prefix_of(line)
    }
}

/// How `*` in a specifier is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stars {
    /// Every `*` is a wildcard.
    Wildcards,
    /// Only `*` outside shell quotes is a wildcard.
    Unquoted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Char(char),
    /// `*`: any run of characters.
    Any,
    /// `?` in path globs: one character.
    One,
}

/// A string pattern with `*` wildcards, matched against a whole string.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    pieces: Vec<Piece>,
}

impl Pattern {
    fn new(text: &str, form: Form, stars: Stars) -> Pattern {
        if form == Form::Literal {
            return Pattern {
                pieces: text.chars().map(Piece::Char).collect(),
            };
        }
        let mut pieces = Vec::new();
        let mut quote: Option<char> = None;
        let mut escaped = false;
        for c in text.chars() {
            let quoted = quote.is_some() || escaped;
            pieces.push(if c == '*' && (stars == Stars::Wildcards || !quoted) {
                Piece::Any
            } else {
                Piece::Char(c)
            });
            if stars == Stars::Unquoted {
                (quote, escaped) = next_quote_state(quote, escaped, c);
            }
        }
        Pattern { pieces }
    }

    fn has_wildcard(&self) -> bool {
        self.pieces.iter().any(|p| !matches!(p, Piece::Char(_)))
    }

    fn matches(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        wildcard_match(&self.pieces, &chars)
    }

    /// Whether `text` is this pattern followed by a space and anything.
    fn matches_prefix_of(&self, text: &str) -> bool {
        let mut pieces = self.pieces.clone();
        pieces.push(Piece::Char(' '));
        pieces.push(Piece::Any);
        let chars: Vec<char> = text.chars().collect();
        wildcard_match(&pieces, &chars)
    }
}

fn next_quote_state(quote: Option<char>, escaped: bool, c: char) -> (Option<char>, bool) {
    match (quote, c) {
        _ if escaped => (quote, false),
        (Some('\''), '\'') => (None, false),
        (Some('\''), _) => (quote, false),
        (_, '\\') => (quote, true),
        (Some('"'), '"') => (None, false),
        (None, '\'' | '"') => (Some(c), false),
        _ => (quote, false),
    }
}

/// Classic greedy wildcard matching with one backtrack point; linear in practice.
fn wildcard_match(pieces: &[Piece], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pieces.get(p) {
            Some(Piece::Any) => {
                backtrack = Some((p, t));
                p += 1;
            }
            Some(Piece::One) => {
                p += 1;
                t += 1;
            }
            Some(Piece::Char(c)) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match backtrack {
                Some((star, matched)) => {
                    p = star + 1;
                    t = matched + 1;
                    backtrack = Some((star, matched + 1));
                }
                None => return false,
            },
        }
    }
    pieces[p.min(pieces.len())..]
        .iter()
        .all(|piece| *piece == Piece::Any)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Anchor {
    Workspace,
    Home,
    Root,
}

/// A path glob from an `Edit(...)`/`Read(...)` specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PathPattern {
    anchor: Anchor,
    /// One pattern per path segment; `None` is `**`.
    segments: Vec<Option<Pattern>>,
}

impl PathPattern {
    fn parse(spec: &str, form: Form) -> PathPattern {
        let spec = spec.trim();
        let (anchor, mut rest) = if let Some(rest) = spec.strip_prefix("~/") {
            (Anchor::Home, rest.to_string())
        } else if let Some(rest) = spec.strip_prefix('/') {
            (Anchor::Root, rest.trim_start_matches('/').to_string())
        } else {
            let mut rest = spec;
            while let Some(stripped) = rest.strip_prefix("./") {
                rest = stripped;
            }
            (Anchor::Workspace, rest.to_string())
        };
        let is_glob = form == Form::Specifier;
        if is_glob && rest.ends_with('/') {
            rest.push_str("**");
        }
        // `./name` anchors at the workspace root like a path with a directory part.
        let any_depth = is_glob && anchor == Anchor::Workspace && !spec.contains('/');
        let mut segments: Vec<Option<Pattern>> = Vec::new();
        if any_depth {
            segments.push(None);
        }
        for segment in rest.split('/').filter(|s| !s.is_empty() && *s != ".") {
            segments.push(if is_glob && segment == "**" {
                None
            } else {
                Some(segment_pattern(segment, form))
            });
        }
        PathPattern { anchor, segments }
    }

    /// `paths` as given and, when resolved, as the filesystem resolves them: a grant must cover
    /// every form of every path, a restriction matches any form of any path.
    fn matches_call(
        &self,
        paths: &[String],
        resolved: &[String],
        polarity: Polarity,
        ctx: &MatchContext,
    ) -> bool {
        let mut forms = paths.iter().chain(resolved.iter());
        match polarity {
            Polarity::Grant => forms.all(|p| self.matches(p, ctx)),
            Polarity::Restrict => forms.any(|p| self.matches(p, ctx)),
        }
    }

    fn matches(&self, path: &str, ctx: &MatchContext) -> bool {
        let absolute = normalize(&ctx.workspace.join(path));
        let base = match self.anchor {
            Anchor::Workspace => ctx.workspace.clone(),
            Anchor::Home => match &ctx.home {
                Some(home) => home.clone(),
                None => return false,
            },
            Anchor::Root => PathBuf::from("/"),
        };
        let Ok(relative) = absolute.strip_prefix(&base) else {
            return false;
        };
        let names: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        segments_match(&self.segments, &names)
    }
}

fn segment_pattern(segment: &str, form: Form) -> Pattern {
    if form == Form::Literal {
        return Pattern::new(segment, form, Stars::Wildcards);
    }
    Pattern {
        pieces: segment
            .chars()
            .map(|c| match c {
                '*' => Piece::Any,
                '?' => Piece::One,
                other => Piece::Char(other),
            })
            .collect(),
    }
}

fn segments_match(pattern: &[Option<Pattern>], names: &[String]) -> bool {
    match pattern.split_first() {
        None => names.is_empty(),
        Some((None, rest)) => (0..=names.len()).any(|skip| segments_match(rest, &names[skip..])),
        Some((Some(segment), rest)) => names
            .split_first()
            .is_some_and(|(name, tail)| segment.matches(name) && segments_match(rest, tail)),
    }
}

/// Resolves `.` and `..` lexically. The policy is pure: symlinks are the sandbox's concern.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> MatchContext {
        MatchContext::new("/ws".into(), Some("/home/u".into()))
    }

    /// The family the built-in of that name declares; any other name is an MCP-like tool.
    fn family(tool: &str) -> Family {
        crate::tool::builtin::profile(tool).map_or(Family::Other, |p| p.family)
    }

    /// Each Claude Code alias names exactly its tool or family. Without its arm in
    /// `Target::from_name`, `Grep(secrets/**)` would be a rule for a tool called `Grep`,
    /// which no call is, and a deny rule would silently stop applying.
    #[test]
    fn every_claude_tool_alias_targets_its_tool() {
        let tool = |name: &str| Target::Tool(name.into());
        let aliases = [
            ("Bash", Target::Bash),
            ("bash", Target::Bash),
            ("Edit", Target::Edit),
            ("edit", Target::Edit),
            ("Read", Target::Read),
            ("read", Target::Read),
            ("Write", tool("write_file")),
            ("MultiEdit", tool("multi_edit")),
            ("Glob", tool("glob")),
            ("Grep", tool("grep")),
            ("LS", tool("ls")),
        ];
        for (name, target) in aliases {
            assert_eq!(Target::from_name(name), Ok(target.clone()), "{name}");
            let rule = Rule::parse(&format!("{name}(secrets/**)")).unwrap();
            assert_eq!(rule.target(), &target, "{name}");
        }
        let grep = Call::new("grep", family("grep"), &json!({"path": "secrets/key"}));
        let rule = Rule::parse("Grep(secrets/**)").unwrap();
        assert!(rule.matches(&grep, Polarity::Restrict, &ctx()));
    }

    #[test]
    fn family_rules_cover_any_tool_of_the_family_whatever_its_name() {
        let rule = |text: &str| Rule::parse(text).unwrap();
        let call = |family| Call::new("new_tool", family, &json!({"path": "secret/x"}));
        let (edit, read) = (rule("Edit(secret/**)"), rule("Read(secret/**)"));
        assert!(edit.matches(&call(Family::Writer), Polarity::Restrict, &ctx()));
        assert!(!edit.matches(&call(Family::Reader), Polarity::Restrict, &ctx()));
        assert!(read.matches(&call(Family::Reader), Polarity::Restrict, &ctx()));
        assert!(!read.matches(&call(Family::Other), Polarity::Restrict, &ctx()));
        let shell = Call::new("sh", Family::Shell, &json!({"command": "rm -rf /"}));
        assert!(rule("Bash(rm:*)").matches(&shell, Polarity::Restrict, &ctx()));
    }

    #[test]
    fn every_builtin_that_takes_a_path_and_changes_files_is_a_writer() {
        for tool in crate::tool::builtin::all() {
            let profile = tool.profile();
            let takes_paths = matches!(profile.subjects, Subjects::Paths { .. });
            if takes_paths && !profile.read_only {
                assert_eq!(profile.family, Family::Writer, "{}", tool.name());
            }
            if takes_paths && profile.read_only {
                assert_eq!(profile.family, Family::Reader, "{}", tool.name());
            }
        }
    }

    fn matches(rule: &str, tool: &str, args: Value, polarity: Polarity) -> bool {
        Rule::parse(rule)
            .unwrap()
            .matches(&Call::new(tool, family(tool), &args), polarity, &ctx())
    }

    #[test]
    fn wildcards_match_whole_strings() {
        let p = Pattern::new("rm -rf*", Form::Specifier, Stars::Wildcards);
        assert!(p.matches("rm -rf /"));
        assert!(p.matches("rm -rf"));
        assert!(!p.matches("sudo rm -rf /"));
        let p = Pattern::new("git * main", Form::Specifier, Stars::Wildcards);
        assert!(p.matches("git push origin main"));
        assert!(!p.matches("git push origin main2"));
        let p = Pattern::new("echo '*'", Form::Specifier, Stars::Unquoted);
        assert!(p.matches("echo '*'"));
        assert!(!p.matches("echo 'x'"));
    }

    /// `=` before `(` is the literal form, whose text may hold parentheses; `(` first is a
    /// specifier, whose text may hold `=`.
    #[test]
    fn the_form_is_chosen_by_whichever_of_equals_and_paren_comes_first() {
        let write = |path: &str| json!({"path": path});
        assert!(matches(
            "write_file=notes(1).md",
            "write_file",
            write("notes(1).md"),
            Polarity::Grant
        ));
        assert!(!matches(
            "write_file=notes(1).md",
            "write_file",
            write("notes1.md"),
            Polarity::Grant
        ));
        let env = json!({"command": "FOO=1 make"});
        assert!(matches("Bash(FOO=1 make)", "bash", env, Polarity::Grant));
    }

    /// `(*)` is the bare rule; a literal `*` is only itself.
    #[test]
    fn a_star_specifier_is_bare_and_a_literal_star_is_not() {
        let rule = |text: &str| Rule::parse(text).unwrap();
        assert!(rule("Bash").is_bare());
        assert!(rule("Bash(*)").is_bare());
        assert!(rule("mcp__s__t(*)").is_bare());
        assert!(!rule("Bash(git:*)").is_bare());
        let literal = rule("lookup=*");
        assert!(!literal.is_bare());
        let call = |value: &str| {
            Call::with_subject(
                "lookup",
                Family::Other,
                Some(Subject::Pattern(value.into())),
            )
        };
        assert!(literal.matches(&call("*"), Polarity::Grant, &ctx()));
        assert!(!literal.matches(&call("anything"), Polarity::Grant, &ctx()));
    }

    /// A rule on a tool that is not `Bash` but runs commands (a shell-family tool of its own
    /// name) matches its command like a `Bash` rule does.
    #[test]
    fn a_named_shell_tool_rule_matches_the_command() {
        let run = |command: &str| Call::new("sh", Family::Shell, &json!({"command": command}));
        let rule = Rule::parse("sh(git status)").unwrap();
        assert!(rule.matches(&run("git status"), Polarity::Grant, &ctx()));
        assert!(rule.matches(&run("git status"), Polarity::Restrict, &ctx()));
        assert!(!rule.matches(&run("git push"), Polarity::Grant, &ctx()));
    }

    /// A grant with a prefix or a wildcard is matched word by word on the simple command; only
    /// a plain rule is compared as a whole string.
    #[test]
    fn prefix_and_wildcard_grants_match_the_simple_command() {
        let bash = |command: &str| json!({"command": command});
        assert!(matches(
            "Bash(git:*)",
            "bash",
            bash("git status"),
            Polarity::Grant
        ));
        assert!(matches(
            "Bash(git * main)",
            "bash",
            bash("git push origin main"),
            Polarity::Grant
        ));
        assert!(!matches(
            "Bash(git:*)",
            "bash",
            bash("gitx status"),
            Polarity::Grant
        ));
        assert!(matches(
            "Bash(ls -l)",
            "bash",
            bash("ls -l"),
            Polarity::Grant
        ));
        assert!(!matches(
            "Bash(ls -l)",
            "bash",
            bash("ls -la"),
            Polarity::Grant
        ));
    }

    /// In a command pattern a quoted `*` is a character and an unquoted one a wildcard, also
    /// after a quoted or escaped part.
    #[test]
    fn only_unquoted_stars_are_wildcards_in_command_patterns() {
        let p = Pattern::new("echo 'a*' *", Form::Specifier, Stars::Unquoted);
        assert!(p.matches("echo 'a*' anything"));
        assert!(!p.matches("echo 'abc' anything"));
        let p = Pattern::new("echo \\* \"*\" *", Form::Specifier, Stars::Unquoted);
        assert!(p.matches("echo \\* \"*\" x y"));
        assert!(!p.matches("echo \\x \"*\" x"));
        assert!(Pattern::new("ls *", Form::Specifier, Stars::Unquoted).matches("ls src"));
    }

    /// A deny rule cannot be evaded by nesting the command deeper than the analysis unwraps:
    /// past its bounds the call counts as matching every restriction on its tool.
    #[test]
    fn restrictions_hold_past_the_unwrapping_bounds() {
        let deny = |command: &str| {
            matches(
                "Bash(rm:*)",
                "bash",
                json!({"command": command}),
                Polarity::Restrict,
            )
        };
        assert!(deny(&("nice ".repeat(12) + "rm -rf /")));
        assert!(deny(&("eval ".repeat(8) + "rm -rf /")));
        assert!(deny(&("find . -exec ".repeat(8) + "rm -rf / ;")));
        assert!(deny(
            "sh -c 'sh -c \"sh -c \\\"sh -c \\\\\\\"sh -c rm\\\\\\\"\\\"\"'"
        ));
        assert!(
            !deny("nice nice ls"),
            "a shallow command is judged by what it runs"
        );
    }

    #[test]
    fn normalize_resolves_dots_lexically() {
        let n = |p: &str| normalize(Path::new(p)).display().to_string();
        assert_eq!(n("a/../b"), "b");
        assert_eq!(n("a/./b/../c"), "a/c");
        assert_eq!(n("../x"), "../x");
        assert_eq!(n("a/../../x"), "../x");
        assert_eq!(n("/../x"), "/x");
    }

    #[test]
    fn path_globs() {
        let m = |rule: &str, path: &str| {
            matches(rule, "write_file", json!({"path": path}), Polarity::Grant)
        };
        assert!(m("Edit(src/**)", "src/a/b.rs"));
        assert!(m("Edit(src/**)", "/ws/src/x"));
        assert!(!m("Edit(src/**)", "srcx/a"));
        assert!(m("Edit(src/**/*.rs)", "src/main.rs"));
        assert!(!m("Edit(src/*.rs)", "src/a/main.rs"));
        assert!(m("Edit(*.md)", "docs/deep/README.md"));
        assert!(m("Edit(docs/)", "docs/a/b"));
        assert!(m("Edit(fil?.txt)", "file.txt"));
        assert!(!m("Edit(src/**)", "src/../../etc/passwd"));
        assert!(m("Edit(/tmp/**)", "/tmp/x/y"));
        assert!(m("Edit(//tmp/**)", "/tmp/x"));
        assert!(m("Edit(~/notes/*)", "/home/u/notes/a"));
        assert!(
            !m("Edit(**)", "/etc/passwd"),
            "relative globs stay inside the workspace"
        );
        assert!(matches(
            "write_file=src/a.rs",
            "write_file",
            json!({"path": "./src/a.rs"}),
            Polarity::Grant
        ));
    }

    #[test]
    fn rule_list_splitting_respects_parentheses() {
        assert_eq!(
            split_rule_list("Bash(git commit -m \"a, b\") Edit,Read  mcp__x"),
            ["Bash(git commit -m \"a, b\")", "Edit", "Read", "mcp__x"]
        );
        assert!(split_rule_list(" , ").is_empty());
    }

    #[test]
    fn suggested_scopes() {
        let prefix = |c: &str| prefix_command_rule(c).map(|r| r.text().to_string());
        assert_eq!(
            prefix("git status --short").as_deref(),
            Some("Bash(git status:*)")
        );
        assert_eq!(
            prefix("npm run build -- --x").as_deref(),
            Some("Bash(npm run build:*)")
        );
        assert_eq!(
            prefix("cargo test -p x").as_deref(),
            Some("Bash(cargo test:*)")
        );
        assert_eq!(prefix("ls -la").as_deref(), Some("Bash(ls:*)"));
        assert_eq!(prefix("git -C x status"), None);
        assert_eq!(prefix("ls && rm x"), None);
        assert_eq!(prefix("eval ls"), None);
        let exact = |c: &str| exact_command_rule(c).map(|r| r.text().to_string());
        assert_eq!(
            exact("npm  run build").as_deref(),
            Some("Bash(npm run build)")
        );
        assert_eq!(exact("rm *.o").as_deref(), Some("Bash=rm *.o"));
        assert_eq!(exact("echo $(date)"), None);
        let rule = exact_command_rule("rm *.o").unwrap();
        let call = Call::new("bash", Family::Shell, &json!({"command": "rm *.o"}));
        assert!(rule.matches(&call, Polarity::Grant, &ctx()));
        let call = Call::new("bash", Family::Shell, &json!({"command": "rm -rf / x.o"}));
        assert!(!rule.matches(&call, Polarity::Grant, &ctx()));
    }

    #[test]
    fn errors_name_the_rule_and_the_forms() {
        for (rule, detail) in [
            ("", "empty"),
            ("Bash(go test", "closing"),
            ("Bash()", "empty"),
            ("Bash(:*)", "prefix"),
            ("Bash('go:*)", "parse"),
            ("Bash(a && b:*)", "operators"),
            ("bash=", "nothing follows"),
            ("9lives", "not a tool name"),
            ("mcp__", "server"),
        ] {
            let err = Rule::parse(rule).unwrap_err().to_string();
            assert!(err.starts_with("permission: invalid rule `"), "{err}");
            assert!(err.contains(detail), "{rule:?}: {err}");
            assert!(
                err.contains("accepted forms: Tool, Tool(specifier)"),
                "{err}"
            );
        }
    }
}
