//! `reasonix subagent create | edit | delete NAME`: managing simple profiles in the two
//! writable scopes, the project's `.reasonix/skills/` and `<home>/skills/`. A profile this
//! command manages is one folder holding only a `SKILL.md` whose frontmatter has only the
//! managed keys (`skill::write` owns that format). Everything else is refused with the reason
//! and the fix: the convention roots and `[skills] paths` (shared with other tools, not ours
//! to rewrite), built-in profiles (no file), inline skills, unmanaged frontmatter and folders
//! with more files.
//!
//! A repository decides what its `.reasonix/skills/` holds, so nothing here follows a
//! symlink: the project root must resolve inside the workspace, a profile folder or
//! `SKILL.md` that is a link is refused, and every read, write and unlink goes through
//! `sandbox::beneath`, relative to directory descriptors that refuse links, so a swap after
//! the check fails instead of reaching the link's target. A new profile is staged in a hidden
//! folder and renamed into place, so a failed or interrupted create leaves no half profile.

use std::fs;
use std::io::{BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::sandbox::beneath::{Entry, Parents};
use crate::skill::store::{self, Roots, MAX_SKILL_FILE};
use crate::skill::write::{self, Profile};
use crate::skill::Scope;

/// Which of the three commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Edit,
    Delete,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Edit => "edit",
            Action::Delete => "delete",
        }
    }
}

/// The scopes this command writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writable {
    Project,
    User,
}

impl Writable {
    fn scope(self) -> Scope {
        match self {
            Writable::Project => Scope::Project,
            Writable::User => Scope::User,
        }
    }
}

/// Where a new prompt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PromptSource {
    Text(String),
    /// A file, or standard input for `-`.
    File(PathBuf),
}

/// The validated command line, before any file is looked at.
#[derive(Debug, Default)]
struct Args {
    name: Option<String>,
    scope: Option<Writable>,
    description: Option<String>,
    /// `Some("")` removes the key (edit).
    model: Option<String>,
    effort: Option<String>,
    prompt: Option<PromptSource>,
    yes: bool,
}

impl Args {
    fn changes_anything(&self) -> bool {
        self.description.is_some()
            || self.model.is_some()
            || self.effort.is_some()
            || self.prompt.is_some()
    }
}

pub fn main(action: Action, mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let args = parse(action, &mut global, lexer)?;
    let Some(name) = args.name.clone() else {
        return Err(Error::Usage(format!(
            "`reasonix subagent {}` needs a profile NAME",
            action.word()
        )));
    };
    write::check_name(&name).map_err(|e| Error::Usage(e.to_string()))?;
    let (cwd, home, loaded) = global.load_workspace()?;
    let trusted = loaded.trusted && crate::app::skills::skills_trusted(&loaded.config, &cwd);
    let roots = crate::app::skills::roots(&loaded.config, &home, &cwd, trusted);
    match action {
        Action::Create => create(&name, &args, &roots),
        Action::Edit => edit(&name, &args, &roots),
        Action::Delete => delete(&name, &args, &roots),
    }
}

fn parse(action: Action, global: &mut Global, lexer: &mut Lexer) -> Result<Args, Error> {
    let mut args = Args::default();
    let writes = action != Action::Delete;
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        let mut value = |flag: &str| lexer.value(flag).map_err(Error::Usage);
        match &arg {
            Arg::Long(n) if n == "project" => args.scope = Some(Writable::Project),
            Arg::Long(n) if n == "user" => args.scope = Some(Writable::User),
            Arg::Long(n) if n == "yes" && !writes => args.yes = true,
            Arg::Short('y') if !writes => args.yes = true,
            Arg::Long(n) if n == "description" && writes => {
                args.description = Some(value("--description")?)
            }
            Arg::Long(n) if n == "model" && writes => args.model = Some(value("--model")?),
            Arg::Long(n) if n == "effort" && writes => args.effort = Some(value("--effort")?),
            Arg::Long(n) if n == "prompt" && writes => {
                args.prompt = Some(PromptSource::Text(value("--prompt")?))
            }
            Arg::Long(n) if n == "prompt-file" && writes => {
                args.prompt = Some(PromptSource::File(PathBuf::from(value("--prompt-file")?)))
            }
            Arg::Value(word) if args.name.is_none() => args.name = Some(word.clone()),
            Arg::Value(word) => {
                return Err(Error::Usage(format!(
                    "unexpected `{word}`: `reasonix subagent {}` takes one NAME",
                    action.word()
                )))
            }
            _ => return Err(unknown_flag("subagent", &arg)),
        }
    }
    if action == Action::Create && args.model.as_deref() == Some("") {
        args.model = None;
    }
    if action == Action::Create && args.effort.as_deref() == Some("") {
        args.effort = None;
    }
    Ok(args)
}

/// Stdin and stdout on a terminal: a person is there to use an editor or answer a question.
fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

fn create(name: &str, args: &Args, roots: &Roots) -> Result<i32, Error> {
    // A project profile is repository content: written by default only where the workspace
    // is trusted, since elsewhere it would run read-only; a user profile needs no trust.
    let scope = args.scope.unwrap_or(if roots.workspace_trusted {
        Writable::Project
    } else {
        Writable::User
    });
    let root = root_of(roots, scope.scope())?;
    if root.excluded {
        return Err(Error::Usage(format!(
            "the {} skills folder {} is hidden by [skills] excluded_paths, so a profile there would never load; remove it from excluded_paths or pick the other scope",
            root.scope.label(),
            root.path.display()
        )));
    }
    let real_root = resolve_root(&root, &roots.workspace)?;
    let folder = real_root.join(name);
    if fs::symlink_metadata(&folder).is_ok() {
        return Err(Error::Usage(format!(
            "a {} skill `{name}` already exists at {}; change it with `reasonix subagent edit {name}`",
            root.scope.label(),
            folder.display()
        )));
    }
    let mut profile = Profile {
        name: name.to_string(),
        description: args.description.clone().unwrap_or_default(),
        model: args.model.clone(),
        effort: args.effort.clone(),
        prompt: String::new(),
    };
    let text = match &args.prompt {
        Some(source) => {
            profile.prompt = read_prompt(source)?;
            render(&profile)?
        }
        None if interactive() => {
            let template = write::template(
                name,
                args.description.as_deref(),
                args.model.as_deref(),
                args.effort.as_deref(),
            );
            let Some(edited) = in_editor(name, &template, None)? else {
                print_out(&format!("Left unchanged; no profile `{name}` created.\n"));
                return Ok(exit::OK);
            };
            edited
        }
        None if std::io::stdin().is_terminal() => {
            return Err(Error::Usage(
                "give the prompt with --prompt TEXT or --prompt-file PATH (the editor needs stdin and stdout on a terminal, and a terminal's stdin is not read as the prompt)".into(),
            ))
        }
        None => {
            if args.description.is_none() {
                return Err(Error::Usage(
                    "a new profile needs --description TEXT (one line saying what it is for)"
                        .into(),
                ));
            }
            profile.prompt = read_prompt(&PromptSource::File("-".into()))?;
            render(&profile)?
        }
    };
    stage_and_publish(&real_root, name, &text)?;
    print_out(&format!(
        "Created {} profile `{name}`: {}\n",
        root.scope.label(),
        folder.join("SKILL.md").display()
    ));
    notes(name, &root, roots);
    Ok(exit::OK)
}

fn edit(name: &str, args: &Args, roots: &Roots) -> Result<i32, Error> {
    let found = locate(name, args.scope, roots)?;
    let Opened {
        entry,
        text: old_text,
        ..
    } = open_profile(&found)?;
    let old = write::read(&old_text, &found.folder.join("SKILL.md"), name)
        .map_err(|e| Error::Usage(e.to_string()))?;
    let text = if args.changes_anything() {
        let mut new = old.clone();
        if let Some(description) = &args.description {
            new.description = description.clone();
        }
        if let Some(model) = &args.model {
            new.model = Some(model.clone()).filter(|m| !m.is_empty());
        }
        if let Some(effort) = &args.effort {
            new.effort = Some(effort.clone()).filter(|e| !e.is_empty());
        }
        if let Some(source) = &args.prompt {
            new.prompt = read_prompt(source)?;
        }
        // Values that render as the old ones do are no change, whatever the old layout.
        let rendered = render(&new)?;
        if write::render(&old).ok().as_ref() == Some(&rendered) {
            old_text.clone()
        } else {
            rendered
        }
    } else if interactive() {
        match in_editor(name, &old_text, Some(&old))? {
            Some(text) => text,
            None => old_text.clone(),
        }
    } else {
        return Err(Error::Usage(
            "nothing to change: give --description, --model, --effort, --prompt or --prompt-file (on a terminal, `edit NAME` alone opens $VISUAL or $EDITOR)".into(),
        ));
    };
    let path = found.folder.join("SKILL.md");
    if text == old_text {
        print_out(&format!(
            "No change to {} profile `{name}`: {}\n",
            found.scope.label(),
            path.display()
        ));
        return Ok(exit::OK);
    }
    entry
        .replace(text.as_bytes())
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    print_out(&format!(
        "Updated {} profile `{name}`: {}\n",
        found.scope.label(),
        path.display()
    ));
    Ok(exit::OK)
}

fn delete(name: &str, args: &Args, roots: &Roots) -> Result<i32, Error> {
    let found = locate(name, args.scope, roots)?;
    let opened = open_profile(&found)?;
    write::read(&opened.text, &found.folder.join("SKILL.md"), name)
        .map_err(|e| Error::Usage(e.to_string()))?;
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::Usage(format!(
                "deleting needs --yes when stdin is not a terminal: `reasonix subagent delete {name} --yes`"
            )));
        }
        eprint!(
            "Delete the {} profile `{name}` ({})? [y/N] ",
            found.scope.label(),
            found.folder.display()
        );
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| Error::io("reading the answer", e))?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            print_out(&format!("Kept profile `{name}`.\n"));
            return Ok(exit::OK);
        }
    }
    for leftover in &opened.leftovers {
        let path = found.folder.join(leftover);
        Entry::open(&path, Parents::Existing)
            .and_then(|e| e.remove_tree())
            .map_err(|e| Error::io(format!("deleting {}", path.display()), e))?;
    }
    opened.entry.remove_tree().map_err(|e| {
        Error::io(
            format!("deleting {}", found.folder.join("SKILL.md").display()),
            e,
        )
    })?;
    // rmdir, never recursive: a file added since the check keeps the folder, and a folder
    // swapped for a link fails here rather than being followed.
    fs::remove_dir(&found.folder)
        .map_err(|e| Error::io(format!("removing the folder {}", found.folder.display()), e))?;
    print_out(&format!(
        "Deleted {} profile `{name}`: {}\n",
        found.scope.label(),
        found.folder.display()
    ));
    Ok(exit::OK)
}

fn render(profile: &Profile) -> Result<String, Error> {
    write::render(profile).map_err(|e| Error::Usage(e.to_string()))
}

fn read_prompt(source: &PromptSource) -> Result<String, Error> {
    match source {
        PromptSource::Text(text) => Ok(text.clone()),
        PromptSource::File(path) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .lock()
                .take(MAX_SKILL_FILE + 1)
                .read_to_string(&mut text)
                .map_err(|e| Error::io("reading the prompt from stdin", e))?;
            Ok(text)
        }
        PromptSource::File(path) => {
            let len = fs::metadata(path)
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?
                .len();
            if len > MAX_SKILL_FILE {
                return Err(Error::Usage(format!(
                    "profile prompt: {} is {len} bytes, more than the {} KiB a SKILL.md may have",
                    path.display(),
                    MAX_SKILL_FILE / 1024
                )));
            }
            fs::read_to_string(path)
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))
        }
    }
}

/// The root of `scope` among the configured roots (the user's needs a reasonix home).
fn root_of(roots: &Roots, scope: Scope) -> Result<store::Root, Error> {
    roots
        .list()
        .into_iter()
        .find(|r| r.scope == scope)
        .ok_or_else(|| {
            Error::Usage(format!(
                "there is no {} skills folder without a reasonix home; set REASONIX_HOME or HOME",
                scope.label()
            ))
        })
}

/// The root with its existing part resolved (`<home>/skills` may be a link into a dotfiles
/// folder: the user's own choice). The project's must stay inside the workspace.
fn resolve_root(root: &store::Root, workspace: &Path) -> Result<PathBuf, Error> {
    let mut existing = root.path.clone();
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    while fs::symlink_metadata(&existing).is_err() {
        let (Some(parent), Some(last)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        missing.push(last.to_os_string());
        existing = parent.to_path_buf();
    }
    let mut real = fs::canonicalize(&existing)
        .map_err(|e| Error::io(format!("resolving {}", existing.display()), e))?;
    for part in missing.iter().rev() {
        real.push(part);
    }
    if root.scope == Scope::Project && !real.starts_with(workspace) {
        return Err(Error::Usage(format!(
            "the project skills folder {} resolves to {} outside the workspace; a repository may not point it elsewhere, so nothing is written there (remove the link, or use --user)",
            root.path.display(),
            real.display()
        )));
    }
    Ok(real)
}

/// A profile folder found for edit or delete.
struct Found {
    scope: Scope,
    /// `<resolved root>/<NAME>`.
    folder: PathBuf,
}

/// The folder NAME means: in the given scope, else the nearest root (not hidden by
/// `excluded_paths`) that has it, as the store ranks them. Read-only scopes, built-ins and
/// unknown names are refused here.
fn locate(name: &str, scope: Option<Writable>, roots: &Roots) -> Result<Found, Error> {
    let root = match scope {
        Some(scope) => {
            let root = root_of(roots, scope.scope())?;
            if fs::symlink_metadata(root.path.join(name)).is_err() {
                return Err(Error::Usage(format!(
                    "there is no {} profile `{name}` (no folder {})",
                    root.scope.label(),
                    root.path.join(name).display()
                )));
            }
            root
        }
        None => {
            let found = roots
                .list()
                .into_iter()
                .filter(|r| !r.excluded)
                .find(|r| fs::symlink_metadata(r.path.join(name)).is_ok());
            match found {
                Some(root) => root,
                None => return Err(not_found(name, roots)),
            }
        }
    };
    let path = root.path.join(name).join("SKILL.md");
    match &root.scope {
        Scope::Project | Scope::User => {}
        Scope::Agents
        | Scope::Claude
        | Scope::ClaudeUser
        | Scope::ClaudeAgents
        | Scope::ClaudeProjectAgents => {
            return Err(Error::Usage(format!(
                "`{name}` lives in the {} convention root ({}), which other tools share and reasonix only reads; edit it by hand, or copy it with `reasonix subagent create {name} --user`",
                root.scope.label(),
                path.display()
            )))
        }
        Scope::Custom(configured) => {
            return Err(Error::Usage(format!(
                "`{name}` lives in the [skills] paths root `{configured}` ({}), which reasonix only reads; edit it by hand",
                path.display()
            )))
        }
        Scope::Builtin => return Err(not_found(name, roots)),
    }
    let real_root = resolve_root(&root, &roots.workspace)?;
    Ok(Found {
        scope: root.scope,
        folder: real_root.join(name),
    })
}

/// Why no folder NAME exists in any root: a built-in, a skill whose folder has another name,
/// or nothing at all.
fn not_found(name: &str, roots: &Roots) -> Error {
    let store = store::load(roots);
    if let Some(skill) = store.get(name) {
        return Error::Usage(format!(
            "the skill `{name}` in {} has a folder of another name; rename the folder to `{name}` by hand first",
            skill.dir.display()
        ));
    }
    if crate::skill::builtin::profile(name).is_some() {
        return Error::Usage(format!(
            "`{name}` is a built-in profile with no file; set its model or effort with agent.subagent_models / agent.subagent_efforts in config, or replace it with `reasonix subagent create {name}`"
        ));
    }
    Error::Usage(format!(
        "there is no subagent profile `{name}`; `reasonix subagent list` shows them"
    ))
}

/// A profile's `SKILL.md`, opened and read.
struct Opened {
    /// The file, for the write or unlink that follows.
    entry: Entry,
    text: String,
    /// Temp files an interrupted write of ours left in the folder.
    leftovers: Vec<String>,
}

/// Our temp files beside `SKILL.md` (`fsutil::temp_name`): left only by a crash mid-write.
const LEFTOVER_PREFIX: &str = ".SKILL.md.reasonix-tmp-";

/// Checks that the folder is a plain directory holding only a plain `SKILL.md` (links
/// refused, leftovers of an interrupted write of ours set apart), then opens and reads that
/// file without following links.
fn open_profile(found: &Found) -> Result<Opened, Error> {
    let folder = &found.folder;
    let refuse = |why: String| Error::Usage(format!("{}: {why}", folder.display()));
    let meta = fs::symlink_metadata(folder)
        .map_err(|e| Error::io(format!("reading {}", folder.display()), e))?;
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "the profile folder is a symlink; reasonix changes profiles only in place, never through a link, so edit its target by hand".into(),
        ));
    }
    if !meta.is_dir() {
        return Err(refuse("not a folder".into()));
    }
    let (leftovers, mut others): (Vec<String>, Vec<String>) = fs::read_dir(folder)
        .map_err(|e| Error::io(format!("reading {}", folder.display()), e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "SKILL.md")
        .partition(|n| n.starts_with(LEFTOVER_PREFIX));
    if !others.is_empty() {
        others.sort();
        return Err(refuse(format!(
            "the folder holds more than SKILL.md ({}); reasonix manages only single-file profiles, so change this one by hand",
            others.join(", ")
        )));
    }
    let file = folder.join("SKILL.md");
    let entry = Entry::open(&file, Parents::Existing)
        .map_err(|e| Error::io(format!("opening {}", file.display()), e))?;
    match entry
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", file.display()), e))?
    {
        None => return Err(refuse("the folder has no SKILL.md".into())),
        Some(meta) if meta.file_type().is_symlink() => {
            return Err(refuse(
                "its SKILL.md is a symlink; reasonix changes profiles only in place, never through a link, so edit its target by hand".into(),
            ))
        }
        Some(meta) if !meta.is_file() => return Err(refuse("its SKILL.md is not a file".into())),
        Some(meta) if meta.len() > MAX_SKILL_FILE => {
            return Err(refuse(format!(
                "its SKILL.md is {} bytes, more than the {} KiB the store reads",
                meta.len(),
                MAX_SKILL_FILE / 1024
            )))
        }
        Some(_) => {}
    }
    let mut text = String::new();
    entry
        .open_existing()
        .and_then(|f| {
            f.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?
                .take(MAX_SKILL_FILE)
                .read_to_string(&mut text)
        })
        .map_err(|e| Error::io(format!("reading {}", file.display()), e))?;
    Ok(Opened {
        entry,
        text,
        leftovers,
    })
}

/// Writes the new profile into a hidden folder beside its final place, then renames the
/// folder into place, refusing to replace one created meanwhile. On failure the staging
/// folder is removed: NAME either appears whole or not at all.
fn stage_and_publish(real_root: &Path, name: &str, text: &str) -> Result<(), Error> {
    let staging = real_root.join(crate::fsutil::temp_name(name.as_ref()));
    let fail = |e: std::io::Error| {
        Error::io(
            format!("creating the profile in {}", real_root.display()),
            e,
        )
    };
    let result = (|| {
        Entry::open(&staging.join("SKILL.md"), Parents::Create)?.replace(text.as_bytes())?;
        let from = Entry::open(&staging, Parents::Existing)?;
        from.rename_to(&Entry::open(&real_root.join(name), Parents::Existing)?)
    })();
    if let Err(e) = result {
        if let Ok(entry) = Entry::open(&staging, Parents::Existing) {
            let _ = entry.remove_tree();
        }
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            return Err(Error::Usage(format!(
                "`{name}` appeared in {} while it was being created; nothing was replaced",
                real_root.display()
            )));
        }
        return Err(fail(e));
    }
    Ok(())
}

/// Opens `$VISUAL` (else `$EDITOR`, else `vi`) on `text` in a private temp folder and
/// returns the saved text once it reads as a managed profile of NAME; `None` when it was
/// saved unchanged. A text that does not read is kept in the temp folder, named in the error,
/// so nothing typed is lost. The editor owns the terminal until it exits, so it gets no
/// deadline or pipes: the person ends it.
fn in_editor(name: &str, text: &str, old: Option<&Profile>) -> Result<Option<String>, Error> {
    let dir = std::env::temp_dir().join(crate::fsutil::temp_name(
        format!("reasonix-{name}").as_ref(),
    ));
    crate::fsutil::create_private_dir(&dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let file = dir.join("SKILL.md");
    let cleanup = || {
        let _ = fs::remove_dir_all(&dir);
    };
    if let Err(e) = crate::fsutil::write_atomic(&file, text.as_bytes(), Some(0o600)) {
        cleanup();
        return Err(Error::io(format!("writing {}", file.display()), e));
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    // As git does: the variable is shell text (`code --wait` works), the file its argument.
    // Registered, so that as PID 1 the orphan reaper leaves the editor's status to us.
    let status = crate::sandbox::process::PlainChild::spawn(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$@\""))
            .arg(&editor)
            .arg(&file),
    )
    .and_then(|child| child.wait());
    let saved = match status {
        Ok(s) if s.success() => fs::read_to_string(&file),
        Ok(s) => {
            cleanup();
            return Err(Error::Failed(format!(
                "the editor `{editor}` exited with {s}; nothing was changed"
            )));
        }
        Err(e) => {
            cleanup();
            return Err(Error::io(format!("starting the editor `{editor}`"), e));
        }
    };
    let saved = match saved {
        Ok(saved) => saved,
        Err(e) => {
            cleanup();
            return Err(Error::io(format!("reading {}", file.display()), e));
        }
    };
    if saved == text {
        cleanup();
        return Ok(None);
    }
    let profile = match write::parse_edited(&saved, name) {
        Ok(profile) => profile,
        Err(e) => {
            return Err(Error::Usage(format!(
                "{e} (your text is kept in {})",
                file.display()
            )))
        }
    };
    cleanup();
    if old == Some(&profile) {
        return Ok(None);
    }
    render(&profile).map(Some)
}

/// What the user should know about the profile just created: another skill that wins the
/// name, a disabled name, a replaced built-in, a project that is not trusted.
fn notes(name: &str, root: &store::Root, roots: &Roots) {
    let store = store::load(roots);
    let ours = root.path.join(name);
    let mut notes = Vec::new();
    match store.get(name) {
        Some(winner) if winner.dir != ours => notes.push(format!(
            "the {} skill in {} has the same name and wins over it",
            winner.scope.label(),
            winner.dir.display()
        )),
        Some(_) if crate::skill::builtin::profile(name).is_some() => {
            notes.push(format!("it replaces the built-in profile `{name}`"))
        }
        _ => {}
    }
    if store.disabled.iter().any(|d| d == name) {
        notes.push("[skills] disabled_skills hides it".into());
    }
    if root.scope == Scope::Project && !roots.workspace_trusted {
        notes.push(
            "the workspace is not trusted, so this project profile runs read-only until you trust it (`reasonix trust`)".into(),
        );
    }
    for note in notes {
        // Skill folders named by a repository may hold any bytes.
        eprintln!("reasonix: note: {}", crate::term::sanitize::sanitize(&note));
    }
}
