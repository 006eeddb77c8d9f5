//! Where reasonix keeps things: the home (`$REASONIX_HOME`, else `$HOME/.reasonix`) with the
//! user config and the key store, and per-project state (sessions) under it. Pure path
//! arithmetic: nothing here touches the filesystem.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The user config file inside the home.
pub const CONFIG_FILE: &str = "config.toml";
/// The project config file inside the working directory.
pub const PROJECT_FILE: &str = "reasonix.toml";
/// The provider-key store inside the home.
pub const ENV_FILE: &str = ".env";
/// The OAuth tokens of MCP servers inside the home, one file per server.
pub const MCP_AUTH_DIR: &str = "mcp-auth";
/// The credentials of `reasonix serve` (its token and password hash) inside the home.
pub const SERVE_AUTH_FILE: &str = "serve-auth.json";
/// The launch grants of project MCP servers inside the home.
pub const MCP_GRANTS_FILE: &str = "mcp-grants.json";
/// The trusted workspaces inside the home.
pub const TRUST_FILE: &str = "trusted-workspaces.json";
/// Where jailed commands get their private temp directories, one per session, inside the home.
pub const JAIL_TMP_DIR: &str = "tmp";

/// Everything in the home that no tool, `@` reference or jailed command may read: the one list
/// the sandbox hides (see `sandbox::Policy::new`). Credentials: the provider keys (`.env`), the
/// MCP OAuth tokens, the serve credentials, and `config.toml`, which may hold credentials
/// inline (`client_secret`, `private_key`, `id_token`, an MCP server's `env` and `headers`)
/// and so is hidden whole. Authority: the MCP launch grants and the trusted workspaces, which
/// say what runs without asking. Other sessions' temp files. A path here that does not exist
/// yet is hidden as soon as it is created: the file tools check by path on every call, and
/// the jails show only the home's entries that existed, minus these, when a command started.
/// Sessions, memory, skills and commands stay readable (hooks read their transcript).
pub fn home_secrets(home: &Path) -> Vec<PathBuf> {
    [
        ENV_FILE,
        CONFIG_FILE,
        MCP_AUTH_DIR,
        SERVE_AUTH_FILE,
        MCP_GRANTS_FILE,
        TRUST_FILE,
        JAIL_TMP_DIR,
    ]
    .iter()
    .map(|name| home.join(name))
    .collect()
}

/// Picks the home from `$REASONIX_HOME` (relative values are taken against `cwd`), else
/// `$HOME/.reasonix`. Empty values count as unset.
pub fn home_from(
    reasonix_home: Option<OsString>,
    home: Option<OsString>,
    cwd: &Path,
) -> Option<PathBuf> {
    let non_empty = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty(reasonix_home) {
        return Some(cwd.join(dir));
    }
    non_empty(home).map(|h| h.join(".reasonix"))
}

pub fn config_file(home: &Path) -> PathBuf {
    home.join(CONFIG_FILE)
}

pub fn project_file(cwd: &Path) -> PathBuf {
    cwd.join(PROJECT_FILE)
}

pub fn env_file(home: &Path) -> PathBuf {
    home.join(ENV_FILE)
}

/// Root of everything reasonix writes besides config: sessions, archives, memory.
pub fn state_dir(home: &Path) -> PathBuf {
    home.to_path_buf()
}

/// `<state>/projects/<slug>/sessions`.
pub fn sessions_dir(home: &Path, cwd: &Path) -> PathBuf {
    state_dir(home)
        .join("projects")
        .join(project_slug(cwd))
        .join("sessions")
}

/// Longest readable part of a slug; longer paths keep their tail, which names the project.
const MAX_SLUG: usize = 80;

/// A stable, filesystem-safe, readable directory name for a working directory: `/work/main`
/// becomes `-work-main`. Every byte outside `[A-Za-z0-9._]` maps to `-`, so distinct paths can
/// collide (`/a-b` and `/a/b`); whenever the mapping lost information (a `-` or another
/// replaced character in the path, or truncation) a short hash of the full path is appended.
/// Callers should pass a canonical path so one directory always gets one slug.
pub fn project_slug(cwd: &Path) -> String {
    let raw = cwd.to_string_lossy();
    let mut lossy = false;
    let mut slug: String = raw
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' => c,
            '/' => '-',
            _ => {
                lossy = true;
                '-'
            }
        })
        .collect();
    if slug.len() > MAX_SLUG {
        lossy = true;
        // Every char is ASCII by now, so byte slicing is safe.
        slug = slug[slug.len() - MAX_SLUG..].to_string();
    }
    if slug.chars().all(|c| c == '.') {
        // "." and ".." are not usable directory names.
        lossy = true;
    }
    if lossy {
        slug.push_str(&format!(
            "-{:08x}",
            crate::hash::fnv1a(cwd.as_os_str().as_encoded_bytes()) as u32
        ));
    }
    slug
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_paths_read_like_the_path() {
        assert_eq!(project_slug(Path::new("/work/main")), "-work-main");
        assert_eq!(
            project_slug(Path::new("/home/u/proj.rs")),
            "-home-u-proj.rs"
        );
    }

    #[test]
    fn ambiguous_paths_get_distinct_stable_hashes() {
        let a = project_slug(Path::new("/a-b"));
        let b = project_slug(Path::new("/a/b"));
        assert_ne!(a, b);
        assert!(a.starts_with("-a-b-"), "{a}");
        assert_eq!(a, project_slug(Path::new("/a-b")));
        let spaced = project_slug(Path::new("/my docs/x"));
        assert!(spaced.starts_with("-my-docs-x-"), "{spaced}");
    }

    #[test]
    fn long_paths_are_truncated_but_distinct() {
        let long_a = format!("/{}/a", "x".repeat(200));
        let long_b = format!("/{}/b", "x".repeat(200));
        let a = project_slug(Path::new(&long_a));
        let b = project_slug(Path::new(&long_b));
        assert!(a.len() <= MAX_SLUG + 9, "{a}");
        assert_ne!(a, b);
        assert!(a.ends_with(&format!("-a-{}", &a[a.len() - 8..])), "{a}");
    }

    #[test]
    fn sessions_live_under_the_project_slug() {
        assert_eq!(
            sessions_dir(Path::new("/h/.reasonix"), Path::new("/work/main")),
            PathBuf::from("/h/.reasonix/projects/-work-main/sessions")
        );
    }

    #[test]
    fn the_secret_list_names_the_files_the_stores_write() {
        let home = Path::new("/h");
        let secrets = home_secrets(home);
        for store in [
            env_file(home),
            config_file(home),
            crate::config::trust::TrustStore::new(home)
                .path()
                .to_path_buf(),
        ] {
            assert!(
                secrets.contains(&store),
                "{} is not hidden",
                store.display()
            );
        }
    }

    #[test]
    fn home_prefers_reasonix_home_then_home() {
        let cwd = Path::new("/cwd");
        assert_eq!(
            home_from(Some("/rh".into()), Some("/u".into()), cwd),
            Some(PathBuf::from("/rh"))
        );
        assert_eq!(
            home_from(Some("rel".into()), None, cwd),
            Some(PathBuf::from("/cwd/rel"))
        );
        assert_eq!(
            home_from(Some("".into()), Some("/u".into()), cwd),
            Some(PathBuf::from("/u/.reasonix"))
        );
        assert_eq!(home_from(None, None, cwd), None);
    }
}
