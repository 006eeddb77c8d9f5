//! Stamps the git commit and the target triple into the binary so `reasonix --version` names
//! the exact build. The commit comes from the source tree's own `.git` when it has one, else
//! from `REASONIX_COMMIT` (a distribution building from a release tarball sets it), else the
//! version names none.
use std::path::Path;
use std::process::Command;

/// The variable a build without `.git` takes the commit from.
const COMMIT_VAR: &str = "REASONIX_COMMIT";

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let source = Path::new(&manifest_dir);
    // `.git` is a directory in a clone and a file in a linked worktree. Only the tree's own
    // counts: a tarball unpacked inside some other repository must not take that one's commit.
    let has_git = source.join(".git").exists();
    let stamped = commit(
        has_git,
        || git(source, &["rev-parse", "--short=12", "HEAD"]),
        std::env::var(COMMIT_VAR).ok(),
    );
    if let Some(commit) = stamped {
        println!("cargo:rustc-env=REASONIX_GIT_COMMIT={commit}");
    }
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo:rustc-env=REASONIX_TARGET={target}");
    }
    println!("cargo:rerun-if-env-changed={COMMIT_VAR}");
    if has_git {
        // In a linked worktree `.git` is a file, and a path that never exists makes cargo run
        // this script (and rebuild the crate) every time: ask git where HEAD and the refs live.
        for name in ["HEAD", "refs/heads"] {
            let path = git(source, &["rev-parse", "--git-path", name])
                .map(|p| source.join(p).display().to_string())
                .unwrap_or_else(|| format!("{manifest_dir}/.git/{name}"));
            println!("cargo:rerun-if-changed={path}");
        }
    } else {
        // Without `.git` only the variable can change the answer.
        println!("cargo:rerun-if-changed=build.rs");
    }
}

/// The commit `--version` names: git's answer when the source tree has `.git` (asked only
/// then), else a non-blank `from_env`, else none.
pub fn commit(
    has_git: bool,
    from_git: impl FnOnce() -> Option<String>,
    from_env: Option<String>,
) -> Option<String> {
    let clean = |text: String| Some(text.trim().to_string()).filter(|s| !s.is_empty());
    let from_git = if has_git { from_git() } else { None };
    from_git
        .and_then(clean)
        .or_else(|| from_env.and_then(clean))
}

/// What `git ARGS` prints in `dir`, trimmed; `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_string()).filter(|s| out.status.success() && !s.is_empty())
}
