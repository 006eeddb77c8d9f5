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
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
}
