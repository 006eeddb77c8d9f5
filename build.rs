//! Stamps the git commit and the target triple into the binary so `reasonix --version` names
//! the exact build.
use std::process::Command;

fn main() {
    let commit = std::env::var("REASONIX_GIT_COMMIT").ok().or_else(|| {
        let out = Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?;
        Some(text.trim().to_string()).filter(|s| !s.is_empty())
    });
    if let Some(commit) = commit {
        println!("cargo:rustc-env=REASONIX_GIT_COMMIT={commit}");
    }
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo:rustc-env=REASONIX_TARGET={target}");
    }
    println!("cargo:rerun-if-env-changed=REASONIX_GIT_COMMIT");
    // In a linked worktree `.git` is a file, and a path that never exists makes cargo run
    // this script (and rebuild the crate) every time: ask git where HEAD and the refs live.
    for name in ["HEAD", "refs/heads"] {
        let path = git_path(name).unwrap_or_else(|| format!(".git/{name}"));
        println!("cargo:rerun-if-changed={path}");
    }
}

fn git_path(name: &str) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--git-path", name])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_string()).filter(|s| out.status.success() && !s.is_empty())
}
