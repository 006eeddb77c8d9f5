//! Custom slash commands: Markdown files under `<home>/commands/` and
//! `.reasonix/commands/`, with optional `---` frontmatter (`description`, `argument-hint`)
//! and a body template. A subdirectory namespaces the command (`git/commit.md` is
//! `/git:commit`). Loading reads files but decides nothing else; rendering is a pure
//! substitution of `$ARGUMENTS`, `$1`…`$N` and `$$`, with the arguments split by the one
//! quoting rule of [`super::words`].

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::words::split_words;
use crate::text::unquote;

/// Directories nested deeper than this under a commands root are not searched.
const MAX_DEPTH: usize = 4;
/// A command file larger than this is skipped: a prompt template is never that big.
const MAX_FILE_BYTES: u64 = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// Without the slash: `review`, `git:commit`.
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    pub body: String,
    pub path: PathBuf,
    /// A subagent profile's `/NAME`: the front end runs the profile host-side with the typed
    /// task instead of sending `body` to the model.
    pub profile: bool,
}

/// Why a command file was skipped. It reads as the detail of the notice "skipped command file
/// `<path>`: …", which names the area and the file.
#[derive(Debug)]
pub enum FileError {
    Io(io::Error),
    TooLarge,
    /// Not a regular file (a FIFO, a device, a socket).
    NotRegular,
    NotUtf8,
    OutsideRoot,
    /// A path component with characters a command name may not hold.
    BadName(String),
    /// Frontmatter opened with `---` and never closed.
    Unclosed,
    /// A frontmatter line without a colon.
    NotKeyValue(String),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io(err) => write!(f, "{err}"),
            FileError::TooLarge => write!(f, "larger than {MAX_FILE_BYTES} bytes"),
            FileError::NotRegular => write!(f, "not a regular file"),
            FileError::NotUtf8 => write!(f, "not UTF-8 text"),
            FileError::OutsideRoot => write!(f, "outside its commands directory"),
            FileError::BadName(part) => write!(
                f,
                "`{part}` is not a valid command name (use letters, digits, `-`, `_` and `.`)"
            ),
            FileError::Unclosed => write!(f, "frontmatter opened with `---` is never closed"),
            FileError::NotKeyValue(line) => {
                write!(f, "frontmatter line `{line}` is not `key: value`")
            }
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Io(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for FileError {
    fn from(err: io::Error) -> FileError {
        FileError::Io(err)
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// Sorted by name.
    pub commands: Vec<CustomCommand>,
    /// One line per skipped file, for the user.
    pub notices: Vec<String>,
    /// Names of the project's commands loaded while `.reasonix/commands` is not trusted: they
    /// shadow nothing of the user's (neither a command nor a skill).
    pub untrusted: Vec<String>,
}

/// The commands of a workspace: the user's (`<home>/commands`) and the project's
/// (`.reasonix/commands`). The project's override the user's of the same name only while the
/// workspace is trusted with that folder as it is now (`config::trust`); otherwise a
/// repository, or a model that wrote a file there, could swap the text of a command the user
/// relies on, and the user's command wins with a notice.
pub fn load_for(config: &crate::config::Config, cwd: &Path) -> Loaded {
    let user = config.home.join("commands");
    let project = cwd.join(".reasonix/commands");
    let store = crate::config::trust::TrustStore::for_session(config);
    if store.covers(cwd, crate::config::trust::Bound::Commands) {
        return load(&[&user, &project]);
    }
    let mut loaded = load(&[&user]);
    let from_project = load(&[&project]);
    loaded.notices.extend(from_project.notices);
    for command in from_project.commands {
        if loaded.commands.iter().any(|c| c.name == command.name) {
            loaded.notices.push(format!(
                "the project's /{} ({}) is ignored: your command of that name wins while \
                 .reasonix/commands is not trusted (`reasonix trust`)",
                command.name,
                command.path.display()
            ));
            continue;
        }
        loaded.untrusted.push(command.name.clone());
        loaded.commands.push(command);
    }
    loaded.commands.sort_by(|a, b| a.name.cmp(&b.name));
    loaded
}

/// Loads every `*.md` under each directory; a later directory overrides an earlier one on a
/// name clash, so pass the user directory first and the project directory last. Missing
/// directories are fine; a malformed file is skipped with a notice.
pub fn load(dirs: &[&Path]) -> Loaded {
    let mut loaded = Loaded::default();
    for dir in dirs {
        let mut found = Vec::new();
        collect(dir, dir, 0, &mut found, &mut loaded.notices);
        for command in found {
            match loaded.commands.iter_mut().find(|c| c.name == command.name) {
                Some(existing) => *existing = command,
                None => loaded.commands.push(command),
            }
        }
    }
    loaded.commands.sort_by(|a, b| a.name.cmp(&b.name));
    loaded
}

fn collect(
    root: &Path,
    dir: &Path,
    depth: usize,
    found: &mut Vec<CustomCommand>,
    notices: &mut Vec<String>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect(root, &path, depth + 1, found, notices);
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        match parse_file(root, &path) {
            Ok(command) => found.push(command),
            Err(why) => notices.push(format!("skipped command file {}: {why}", path.display())),
        }
    }
}

fn parse_file(root: &Path, path: &Path) -> Result<CustomCommand, FileError> {
    let name = command_name(root, path)?;
    let meta = std::fs::metadata(path)?;
    // A FIFO or a device named `*.md` would block the read or never end.
    if !meta.is_file() {
        return Err(FileError::NotRegular);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(FileError::TooLarge);
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path)?, MAX_FILE_BYTES + 1),
        &mut bytes,
    )?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(FileError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotUtf8)?;
    let parsed = parse(&text)?;
    Ok(CustomCommand {
        name,
        description: parsed.description,
        argument_hint: parsed.argument_hint,
        body: parsed.body,
        path: path.to_path_buf(),
        profile: false,
    })
}

/// `git/commit.md` under the root → `git:commit`. Names are limited to characters that are
/// safe to type and to show.
fn command_name(root: &Path, path: &Path) -> Result<String, FileError> {
    let relative = path
        .strip_prefix(root)
        .map_err(|_| FileError::OutsideRoot)?
        .with_extension("");
    let mut parts = Vec::new();
    for part in relative.components() {
        let part = part.as_os_str().to_string_lossy().into_owned();
        let valid = !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(FileError::BadName(part));
        }
        parts.push(part);
    }
    Ok(parts.join(":"))
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub description: String,
    pub argument_hint: String,
    pub body: String,
}

/// Splits optional frontmatter (simple `key: value` lines between `---` fences) from the
/// body. Unknown keys are ignored (other tools put more there); an unterminated block or a
/// line without a colon makes the file malformed.
pub fn parse(text: &str) -> Result<Parsed, FileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parsed = Parsed::default();
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        parsed.body = text.to_string();
        return Ok(parsed);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim() == "---" {
            parsed.body = rest[offset..].to_string();
            return Ok(parsed);
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| FileError::NotKeyValue(line.to_string()))?;
        let value = unquote(value.trim()).to_string();
        match key.trim() {
            "description" => parsed.description = value,
            "argument-hint" => parsed.argument_hint = value,
            _ => {}
        }
    }
    Err(FileError::Unclosed)
}

/// Substitutes the arguments into `body` (`"two words"` is one argument, its quotes removed):
/// `$ARGUMENTS` is every argument space-joined, `$1`…`$N` one each (empty when absent), `$$` a literal `$`. When the body uses no
/// placeholder, non-empty arguments are appended as a paragraph so they are not lost.
pub fn render(body: &str, arguments: &str) -> String {
    let args = split_words(arguments);
    let all = args.join(" ");
    let mut out = String::with_capacity(body.len() + all.len());
    let mut used_placeholder = false;
    let mut rest = body;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(&all);
            used_placeholder = true;
            rest = tail;
        } else {
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            match after[..digits].parse::<usize>() {
                Ok(n) if n >= 1 => {
                    out.push_str(args.get(n - 1).map_or("", String::as_str));
                    used_placeholder = true;
                    rest = &after[digits..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
    }
    out.push_str(rest);
    if !used_placeholder && !all.is_empty() {
        out = format!("{}\n\n{all}", out.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn frontmatter_and_body_split() {
        let parsed = parse(
            "---\ndescription: Review the staged diff\nargument-hint: \"[focus-area]\"\nallowed-tools: Bash\n---\nReview. Focus on $ARGUMENTS.\n",
        )
        .unwrap();
        assert_eq!(parsed.description, "Review the staged diff");
        assert_eq!(parsed.argument_hint, "[focus-area]");
        assert_eq!(parsed.body, "Review. Focus on $ARGUMENTS.\n");
        assert_eq!(parse("no frontmatter").unwrap().body, "no frontmatter");
        assert_eq!(
            parse("---\ndescription: x\n").unwrap_err().to_string(),
            "frontmatter opened with `---` is never closed"
        );
        assert_eq!(
            parse("---\njust words\n---\nbody").unwrap_err().to_string(),
            "frontmatter line `just words` is not `key: value`"
        );
    }

    #[test]
    fn substitution_of_arguments_positions_and_dollars() {
        assert_eq!(render("Focus on $ARGUMENTS.", "  a   b "), "Focus on a b.");
        assert_eq!(render("$1 then $2, not $3.", "x y"), "x then y, not .");
        assert_eq!(render("$1|$2|$ARGUMENTS", "\"a  b\" c"), "a  b|c|a  b c");
        assert_eq!(render("$1", "don't"), "don't");
        assert_eq!(render("costs $$5 and $x", ""), "costs $5 and $x");
        assert_eq!(render("$10|$1", "1 2 3 4 5 6 7 8 9 ten"), "ten|1");
        assert_eq!(
            render("Plain body.\n", "extra words"),
            "Plain body.\n\nextra words"
        );
        assert_eq!(render("Plain body.\n", ""), "Plain body.\n");
        assert_eq!(render("end $", "a"), "end $\n\na");
    }

    #[test]
    fn loading_namespaces_overrides_and_skips_malformed_files() {
        let user = TempDir::new("user");
        let project = TempDir::new("project");
        user.write(
            "review.md",
            b"---\ndescription: user review\n---\nUser body",
        );
        user.write("only-user.md", b"U");
        project.write(
            "review.md",
            b"---\ndescription: project review\n---\nProject body",
        );
        project.write("git/commit.md", b"Commit $ARGUMENTS");
        project.write("broken.md", b"---\ndescription: never closed\n");
        project.write("binary.md", [0xff, 0xfe, 0x00]);
        project.write("notes.txt", b"ignored");
        project.write("bad name.md", b"x");
        let loaded = load(&[
            user.path(),
            project.path(),
            Path::new("/nonexistent/reasonix"),
        ]);
        let names: Vec<&str> = loaded.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["git:commit", "only-user", "review"]);
        let review = &loaded.commands[2];
        assert_eq!(review.description, "project review");
        assert_eq!(review.body, "Project body");
        assert_eq!(loaded.notices.len(), 3, "{:?}", loaded.notices);
        assert!(loaded.notices.iter().any(|n| n.contains("broken.md")));
        assert!(loaded.notices.iter().any(|n| n.contains("not UTF-8")));
        assert!(loaded.notices.iter().any(|n| n.contains("bad name")));
    }
}
