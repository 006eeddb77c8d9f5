//! `move_file`: renames a file or directory, never over an existing destination. Across
//! filesystems, where rename(2) fails with EXDEV, it copies (recursively for directories,
//! keeping modes and symlinks), syncs the copy, then removes the source.
//!
//! Both entries are reached through `sandbox::beneath`, relative to directory descriptors and
//! without following symlinks, so a directory swapped for a symlink after the check cannot
//! send the move elsewhere. The rename itself refuses an existing destination
//! (`RENAME_NOREPLACE`); the earlier existence check only words the refusal.

use std::fs;
use std::io;
use std::path::Path;

use serde_json::{json, Value};

use crate::sandbox::beneath::{Entry, Parents};
use crate::tool::text::io_failure;
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

pub struct MoveFile;

const DESCRIPTION: &str = "\
Moves or renames a file or directory. Never overwrites: fails if `destination_path` already \
exists. Creates missing parent directories of the destination and works across filesystems. \
To move something into a directory, give the full destination path including the name.";

impl Tool for MoveFile {
    fn name(&self) -> &str {
        "move_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "source_path": {
                    "type": "string",
                    "description": "File or directory to move, absolute or relative to the workspace root"
                },
                "destination_path": {
                    "type": "string",
                    "description": "New path, including the file or directory name; must not exist yet"
                }
            },
            "required": ["source_path", "destination_path"]
        })
    }

    fn family(&self) -> Family {
        Family::Writer
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["source_path", "destination_path"],
            default: None,
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let from_shown = args::required_str(args, "source_path")?;
        let to_shown = args::required_str(args, "destination_path")?;
        let from = ctx.resolve_write_entry(from_shown)?;
        let to = ctx.resolve_write_entry(to_shown)?;
        let missing = || {
            ToolError::Failed(format!(
                "source {from_shown} does not exist; use ls or glob to find the right path"
            ))
        };
        let source_failed = |e: io::Error| match e.kind() {
            io::ErrorKind::NotFound => missing(),
            _ => io_failure("cannot move", from_shown, &e),
        };
        let source = Entry::open(&from, Parents::Existing).map_err(source_failed)?;
        let source_meta = source
            .metadata()
            .map_err(source_failed)?
            .ok_or_else(missing)?;
        if source_meta.is_dir() && moves_into_itself(&from, &to) {
            return Err(ToolError::Failed(format!(
                "cannot move the directory {from_shown} into itself ({to_shown})"
            )));
        }
        let exists = |what: &str| {
            ToolError::Failed(format!(
                "destination {to_shown} already exists (a {what}) and move_file never \
                 overwrites; choose a path that does not exist yet (to move into a directory, \
                 append the name: {to_shown}/<name>)"
            ))
        };
        let target = Entry::open(&to, Parents::Create)
            .map_err(|e| io_failure("cannot create the parent directory of", to_shown, &e))?;
        let kind = |entry: &Entry| match entry.metadata() {
            Ok(Some(meta)) if meta.is_dir() => "directory",
            _ => "file",
        };
        if target
            .metadata()
            .map_err(|e| io_failure("cannot move to", to_shown, &e))?
            .is_some()
        {
            return Err(exists(kind(&target)));
        }
        match source.rename_to(&target) {
            Ok(()) => Ok(format!("Moved {from_shown} to {to_shown}")),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(exists(kind(&target))),
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                move_by_copy(&source, &target).map_err(|e| {
                    ToolError::Failed(format!(
                        "cannot move {from_shown} to {to_shown} across filesystems: {e}; the \
                         source is left as it was"
                    ))
                })?;
                Ok(format!(
                    "Moved {from_shown} to {to_shown} (copied across filesystems)"
                ))
            }
            Err(e) => Err(io_failure(
                &format!("cannot move {from_shown} to"),
                to_shown,
                &e,
            )),
        }
    }
}

/// Whether moving the directory `from` to `to` would put it inside itself. Only for a clear
/// message: the kernel refuses such a rename anyway (EINVAL).
fn moves_into_itself(from: &Path, to: &Path) -> bool {
    let from_real = fs::canonicalize(from).unwrap_or_else(|_| from.to_path_buf());
    let to_parent = to
        .parent()
        .and_then(|p| first_existing_ancestor(p).map(|(real, rest)| real.join(rest)));
    to_parent.is_some_and(|p| p.starts_with(&from_real))
}

/// The canonical form of the deepest existing ancestor of `path`, plus the part below it.
fn first_existing_ancestor(path: &Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let mut rest = Vec::new();
    let mut current = path;
    loop {
        if let Ok(real) = fs::canonicalize(current) {
            let tail: std::path::PathBuf = rest.iter().rev().collect();
            return Some((real, tail));
        }
        rest.push(current.file_name()?.to_os_string());
        current = current.parent()?;
    }
}

/// Copies `from` to `to` and then removes `from`. A failed copy removes what it created and
/// leaves the source untouched.
fn move_by_copy(from: &Entry, to: &Entry) -> io::Result<()> {
    from.copy_to(to)?;
    from.remove_tree()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn entry(path: &Path) -> Entry {
        Entry::open(path, Parents::Existing).unwrap()
    }

    // rename(2) cannot be made to fail with EXDEV on demand, so the fallback is driven directly.
    #[test]
    fn copy_fallback_moves_a_tree_with_modes_and_symlinks() {
        // Entries are opened without following symlinks: the scratch path has none.
        let dir = TempDir::new("move-tree");
        let src = dir.join("src");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("sub/run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(src.join("sub/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
        symlink("sub/run.sh", src.join("link")).unwrap();
        let dst = dir.join("dst");
        move_by_copy(&entry(&src), &entry(&dst)).unwrap();
        assert!(!src.exists());
        assert_eq!(
            fs::read_to_string(dst.join("sub/run.sh")).unwrap(),
            "#!/bin/sh\n"
        );
        let mode = fs::metadata(dst.join("sub/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o750);
        assert_eq!(
            fs::read_link(dst.join("link")).unwrap(),
            Path::new("sub/run.sh")
        );
    }

    #[test]
    fn failed_copy_leaves_the_source_and_no_partial_destination() {
        let dir = TempDir::new("move-partial");
        let src = dir.join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("a"), "a").unwrap();
        // A socket cannot be opened for copying, so the copy fails after creating `dst`.
        let _listener = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();
        let dst = dir.join("dst");
        assert!(move_by_copy(&entry(&src), &entry(&dst)).is_err());
        assert!(!dst.exists(), "partial copy left behind");
        assert_eq!(fs::read_to_string(src.join("a")).unwrap(), "a");
    }
}
