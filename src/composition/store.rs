//! The catalog on disk: user definitions in `<home>/agent-presets/definitions/<name>.json`,
//! project definitions in `<workspace>/.reasonix/agent-presets/definitions/<name>.json`, the
//! user's saved default in `<home>/agent-presets/default.json` and every saved revision in
//! `<home>/agent-presets/revisions/`. Writes are atomic and carry the revision the writer
//! read; a stale one is refused (`agent_composition.conflict`) and the file is left as it
//! was. Scopes coexist: `user:x` and `project:x` are two entries.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use super::{
    builtin, check_authority, parse, Code, CompositionError, Definition, Id, Scope, SCHEMA_VERSION,
};

/// Definition files larger than this are refused unread.
const MAX_DEFINITION_BYTES: u64 = 256 * 1024;

/// Where the catalog lives for one workspace.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub home: PathBuf,
    pub workspace: PathBuf,
}

/// One catalog entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: Id,
    pub definition: Definition,
}

fn io_error(what: &str, path: &Path, err: std::io::Error) -> CompositionError {
    CompositionError::new(
        Code::Unavailable,
        format!("{what} {}: {err}", path.display()),
    )
}

impl Catalog {
    pub fn new(home: &Path, workspace: &Path) -> Catalog {
        Catalog {
            home: home.to_path_buf(),
            workspace: workspace.to_path_buf(),
        }
    }

    fn root(&self) -> PathBuf {
        self.home.join("agent-presets")
    }

    /// The definitions directory of a writable scope.
    pub fn dir(&self, scope: Scope) -> Option<PathBuf> {
        match scope {
            Scope::Builtin => None,
            Scope::User => Some(self.root().join("definitions")),
            Scope::Project => Some(
                self.workspace
                    .join(".reasonix")
                    .join("agent-presets")
                    .join("definitions"),
            ),
        }
    }

    fn path(&self, id: &Id) -> Option<PathBuf> {
        self.dir(id.scope)
            .map(|dir| dir.join(format!("{}.json", id.name)))
    }

    /// Every entry (built-ins, then user, then project, each by name) and one line per file
    /// that could not be read.
    pub fn list(&self) -> (Vec<Entry>, Vec<String>) {
        let mut entries: Vec<Entry> = builtin::all()
            .into_iter()
            .map(|definition| Entry {
                id: Id {
                    scope: Scope::Builtin,
                    name: definition.id.clone(),
                },
                definition,
            })
            .collect();
        let mut problems = Vec::new();
        for scope in [Scope::User, Scope::Project] {
            let Some(dir) = self.dir(scope) else { continue };
            let Ok(read) = fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = read
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".json").map(str::to_string)
                })
                .collect();
            names.sort_unstable();
            for name in names {
                let id = Id {
                    scope,
                    name: name.clone(),
                };
                match self.get(&id) {
                    Ok(definition) => entries.push(Entry { id, definition }),
                    Err(err) => problems.push(format!("{id}: {err}")),
                }
            }
        }
        (entries, problems)
    }

    /// A definition by ID, checked against its scope's authority.
    pub fn get(&self, id: &Id) -> Result<Definition, CompositionError> {
        if id.scope == Scope::Builtin {
            return builtin::get(&id.name).ok_or_else(|| {
                CompositionError::new(
                    Code::NotFound,
                    format!("there is no built-in composition `{id}` (builtin:general, builtin:minimal)"),
                )
            });
        }
        super::check_name(&id.name)?;
        let path = self.path(id).unwrap_or_default();
        let text = match read_capped(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(CompositionError::new(
                    Code::NotFound,
                    format!("no composition `{id}` ({} does not exist)", path.display()),
                ))
            }
            Err(err) => return Err(io_error("reading", &path, err)),
        };
        let mut definition = parse(&text).map_err(|e| {
            CompositionError::new(e.code, format!("{}: {}", path.display(), e.message))
        })?;
        check_authority(id.scope, &definition).map_err(|e| {
            CompositionError::new(e.code, format!("{}: {}", path.display(), e.message))
        })?;
        definition.id = id.name.clone();
        Ok(definition)
    }

    /// Saves `definition` as `id`. `expected` is the revision the writer read (`None`: the
    /// definition must not exist yet). Returns the saved definition with its new revision.
    /// Built-ins are read-only.
    pub fn save(
        &self,
        id: &Id,
        mut definition: Definition,
        expected: Option<u64>,
    ) -> Result<Definition, CompositionError> {
        let Some(path) = self.path(id) else {
            return Err(CompositionError::new(
                Code::ReadOnly,
                format!("{id} is a shipped template; copy it to user:NAME to change it"),
            ));
        };
        definition.schema_version = SCHEMA_VERSION;
        definition.id = id.name.clone();
        check_authority(id.scope, &definition)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::fsutil::create_private_dir(dir).map_err(|e| io_error("creating", dir, e))?;
        let _lock = self.lock(id)?;
        let current = match self.get(id) {
            Ok(d) => Some(d.revision),
            Err(e) if e.code == Code::NotFound => None,
            // A broken file may be replaced by a writer that read it as broken: revision 0.
            Err(_) => Some(0),
        };
        if current != expected {
            let found = match current {
                Some(r) => format!("revision {r}"),
                None => "no definition".into(),
            };
            let wanted = match expected {
                Some(r) => format!("revision {r}"),
                None => "a new definition".into(),
            };
            return Err(CompositionError::new(
                Code::Conflict,
                format!(
                    "{id} changed since it was read: expected {wanted}, found {found}; nothing was \
                     written (read it again with `reasonix agent show {id}`)"
                ),
            ));
        }
        definition.revision = current.unwrap_or(0) + 1;
        let mut text = serde_json::to_string_pretty(&definition).unwrap_or_default();
        text.push('\n');
        crate::fsutil::write_atomic(&path, text.as_bytes(), Some(0o600))
            .map_err(|e| io_error("writing", &path, e))?;
        if id.scope == Scope::User {
            // The revision history is a courtesy copy; the definition is already saved.
            let history = self.root().join("revisions").join(&id.name);
            let _ = crate::fsutil::create_private_dir(&history).and_then(|()| {
                crate::fsutil::write_atomic(
                    &history.join(format!("{}.json", definition.revision)),
                    text.as_bytes(),
                    Some(0o600),
                )
            });
        }
        Ok(definition)
    }

    /// Deletes a definition; with `revision`, only if it is still that revision. Sessions
    /// bound to it keep their binding.
    pub fn delete(&self, id: &Id, revision: Option<u64>) -> Result<(), CompositionError> {
        let Some(path) = self.path(id) else {
            return Err(CompositionError::new(
                Code::ReadOnly,
                format!("{id} is a shipped template and cannot be deleted"),
            ));
        };
        let _lock = self.lock(id)?;
        let current = match self.get(id) {
            Ok(d) => d.revision,
            Err(e) if e.code == Code::NotFound => return Err(e),
            Err(_) => 0,
        };
        if revision.is_some_and(|r| r != current) {
            return Err(CompositionError::new(
                Code::Conflict,
                format!(
                    "{id} is at revision {current}, not the revision given; nothing was deleted"
                ),
            ));
        }
        fs::remove_file(&path).map_err(|e| io_error("deleting", &path, e))
    }

    /// An exclusive lock for one definition's read-compare-write, so two savers cannot both
    /// pass the revision check. Held until the returned file is dropped.
    fn lock(&self, id: &Id) -> Result<DefinitionLock, CompositionError> {
        let dir = self.root().join("locks");
        crate::fsutil::create_private_dir(&dir).map_err(|e| io_error("creating", &dir, e))?;
        let slug = crate::config::paths::project_slug(&self.workspace);
        let name = match id.scope {
            Scope::Project => format!("project-{slug}-{}.lock", id.name),
            _ => format!("{}-{}.lock", id.scope.prefix(), id.name),
        };
        let path = dir.join(name);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("opening", &path, e))?;
        match crate::sandbox::sys::try_lock_exclusive(&file) {
            Ok(true) => Ok(DefinitionLock(file)),
            Ok(false) => Err(CompositionError::new(
                Code::Conflict,
                format!("{id} is being saved by another process; try again"),
            )),
            Err(e) => Err(io_error("locking", &path, e)),
        }
    }

    fn default_path(&self) -> PathBuf {
        self.root().join("default.json")
    }

    /// The user's saved default for this workspace, if any. Only personal state holds it: a
    /// project file cannot choose it. A `project:` default is the user's choice for the one
    /// workspace it was chosen in (`projects`, by workspace path); elsewhere the personal or
    /// built-in default (`id`) applies, never another repository's entry of the same name.
    pub fn default_id(&self) -> Option<String> {
        let saved = self.saved_default();
        let here = self.workspace.display().to_string();
        let project = saved
            .get("projects")
            .and_then(|p| p.get(here.as_str()))
            .and_then(|id| id.as_str());
        let global = saved
            .get("id")
            .and_then(|id| id.as_str())
            .filter(|id| !id.starts_with("project:"));
        project.or(global).map(str::to_string)
    }

    fn saved_default(&self) -> serde_json::Value {
        fs::read_to_string(self.default_path())
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .filter(serde_json::Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}))
    }

    /// Saves the default after checking the entry exists here: a `project:` entry as this
    /// workspace's default, any other as the default everywhere else.
    pub fn set_default(&self, id: &Id) -> Result<(), CompositionError> {
        self.get(id)?;
        let root = self.root();
        crate::fsutil::create_private_dir(&root).map_err(|e| io_error("creating", &root, e))?;
        let mut saved = self.saved_default();
        let here = self.workspace.display().to_string();
        match id.scope {
            Scope::Project => {
                if !saved.get("projects").is_some_and(|p| p.is_object()) {
                    saved["projects"] = serde_json::json!({});
                }
                saved["projects"][here.as_str()] = serde_json::json!(id.to_string());
            }
            _ => {
                saved["id"] = serde_json::json!(id.to_string());
                // This workspace now follows the personal default too.
                if let Some(projects) = saved.get_mut("projects").and_then(|p| p.as_object_mut()) {
                    projects.remove(here.as_str());
                }
            }
        }
        let text = saved.to_string() + "\n";
        let path = self.default_path();
        crate::fsutil::write_atomic(&path, text.as_bytes(), Some(0o600))
            .map_err(|e| io_error("writing", &path, e))
    }
}

fn read_capped(path: &Path) -> std::io::Result<String> {
    let meta = fs::metadata(path)?;
    if meta.len() > MAX_DEFINITION_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_DEFINITION_BYTES} bytes"
        )));
    }
    fs::read_to_string(path)
}

/// The portable form of a definition: no revision (the importer's store assigns one).
/// Credentials are already references: [`check_authority`] refuses anything else.
pub fn export(definition: &Definition) -> String {
    let mut portable = definition.clone();
    portable.revision = 0;
    let mut text = serde_json::to_string_pretty(&portable).unwrap_or_default();
    text.push('\n');
    text
}

/// An import preview: the parsed definition checked for `scope`, plus diagnostics for what
/// it selects that this machine does not have. Never starts a program, never writes an
/// authorisation record.
pub fn preview(
    text: &str,
    scope: Scope,
    available: &super::resolve::Available,
) -> Result<(Definition, Vec<String>), CompositionError> {
    let definition = parse(text)?;
    check_authority(scope, &definition)?;
    let diagnostics = available.missing(&definition);
    Ok((definition, diagnostics))
}

/// A definition's lock, released when dropped, also while a child forked by another thread
/// still shares the descriptor (the kernel would keep it until that child execs).
struct DefinitionLock(fs::File);

impl Drop for DefinitionLock {
    fn drop(&mut self) {
        crate::sandbox::sys::unlock(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composition::{Modules, Selection};
    use crate::fsutil::scratch::TempDir;

    fn draft() -> Definition {
        Definition {
            schema_version: 1,
            name: "Mine".into(),
            modules: Modules {
                tools: Selection::Only(vec!["bash".into()]),
                ..Modules::default()
            },
            ..Definition::default()
        }
    }

    #[test]
    fn saves_bump_revisions_and_a_stale_save_is_refused_without_loss() {
        let home = TempDir::new("compose-home");
        let work = TempDir::new("compose-work");
        let catalog = Catalog::new(home.path(), work.path());
        let id = Id::parse("user:mine").unwrap();
        let first = catalog.save(&id, draft(), None).unwrap();
        assert_eq!(first.revision, 1);
        let mut second = draft();
        second.persona.prefix = "Second".into();
        assert_eq!(catalog.save(&id, second, Some(1)).unwrap().revision, 2);
        let mut stale = draft();
        stale.persona.prefix = "Stale".into();
        let err = catalog.save(&id, stale, Some(1)).unwrap_err();
        assert_eq!(err.code, Code::Conflict, "{err}");
        let kept = catalog.get(&id).unwrap();
        assert_eq!((kept.revision, kept.persona.prefix.as_str()), (2, "Second"));
        assert_eq!(
            catalog.save(&id, draft(), None).unwrap_err().code,
            Code::Conflict
        );
        assert!(home
            .path()
            .join("agent-presets/revisions/mine/2.json")
            .exists());
    }

    #[test]
    fn scopes_coexist_and_built_ins_are_read_only() {
        let home = TempDir::new("compose-home");
        let work = TempDir::new("compose-work");
        let catalog = Catalog::new(home.path(), work.path());
        for id in ["user:same", "project:same"] {
            catalog
                .save(&Id::parse(id).unwrap(), draft(), None)
                .unwrap();
        }
        let (entries, problems) = catalog.list();
        assert!(problems.is_empty(), "{problems:?}");
        let ids: Vec<String> = entries.iter().map(|e| e.id.to_string()).collect();
        assert_eq!(
            ids,
            [
                "builtin:general",
                "builtin:minimal",
                "user:same",
                "project:same"
            ]
        );
        let builtin = Id::parse("builtin:minimal").unwrap();
        assert_eq!(
            catalog.save(&builtin, draft(), Some(1)).unwrap_err().code,
            Code::ReadOnly
        );
        assert_eq!(
            catalog.delete(&builtin, None).unwrap_err().code,
            Code::ReadOnly
        );
        assert_eq!(
            catalog
                .get(&Id::parse("user:none").unwrap())
                .unwrap_err()
                .code,
            Code::NotFound
        );
        catalog
            .delete(&Id::parse("user:same").unwrap(), Some(1))
            .unwrap();
        assert!(catalog.get(&Id::parse("project:same").unwrap()).is_ok());
    }

    #[test]
    fn a_project_file_with_a_launch_override_is_refused_when_read() {
        let home = TempDir::new("compose-home");
        let work = TempDir::new("compose-work");
        let catalog = Catalog::new(home.path(), work.path());
        let dir = catalog.dir(Scope::Project).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("evil.json"),
            r#"{"schemaVersion":1,"modules":{"mcpServers":["docs"]},"mcp":{"docs":{"args":[]}}}"#,
        )
        .unwrap();
        let err = catalog
            .get(&Id::parse("project:evil").unwrap())
            .unwrap_err();
        assert_eq!(err.code, Code::Invalid);
        let (_, problems) = catalog.list();
        assert_eq!(problems.len(), 1, "{problems:?}");
    }
}
