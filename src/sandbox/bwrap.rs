//! The bubblewrap jail for bash: finding `bwrap` on PATH, checking once that it can create its
//! namespaces here, and rewriting a [`CommandSpec`] to run inside it.
//!
//! The sandbox a command sees, in the order the arguments build it:
//! - the whole filesystem read-only (`--ro-bind / /`), a minimal `/dev`, a fresh `/proc`, and a
//!   private, empty `/tmp` that disappears with the command (`TMPDIR` points there);
//! - read-write binds of the workspace and each write root that exists, and in place of the
//!   reasonix home an empty tmpfs holding read-only binds of the home's entries that exist and
//!   are not secrets (`config::paths::home_secrets`, symlinks and hard links to them included),
//!   shallowest first, so a root under `/tmp` is still reachable and the home stays read-only
//!   even inside the workspace. A secret the home gains later (`reasonix serve` starting, an
//!   OAuth login finishing while a server runs) never appears inside: the command sees the
//!   home as it was when it started, minus its secrets. The tmpfs is made read-only last;
//! - every existing `forbid_read` path, and every hard link to a hidden file found in the
//!   workspace and write roots, masked: an empty tmpfs over a directory, `/dev/null`
//!   (read-only) over anything else. Masks come last so they also cover hidden paths inside a
//!   writable root, such as `<home>/.env`;
//! - new PID and IPC namespaces (the command cannot see or signal processes outside, and
//!   `/proc/<pid>/root` of an unconfined process is out of reach), a new network namespace
//!   with only a loopback device unless `[sandbox] network = true`, `--die-with-parent` so
//!   nothing outlives reasonix, and `--new-session` so the command cannot push keystrokes into
//!   a terminal with TIOCSTI. As root, `--cap-drop ALL` as well: otherwise the command would keep
//!   CAP_SYS_ADMIN inside the namespace and could simply remount `/` read-write.
//!
//! Consequence of the PID namespace: when the command's shell exits, bwrap's init exits and
//! the kernel kills everything left in the namespace, so background jobs do not outlive the
//! command even when their output is redirected. The environment is passed through unchanged,
//! which means the secret variables `CommandSpec::env_remove` drops are absent inside too.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::process::{self, CommandSpec, Exit};
use super::{sys, Policy};
use crate::cancel::CancelToken;

/// How long the probe may take; bwrap starts in milliseconds, so only a wedged host hits this.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first executable `bwrap` in the directories of `path` (a `PATH` value).
pub fn locate(path: Option<&OsStr>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| crate::platform::is_executable(candidate))
}

/// Runs `true` in a sandbox with the namespaces a real command gets. bwrap fails here on hosts
/// that restrict unprivileged user namespaces (some container runtimes, Ubuntu's AppArmor
/// policy); the error carries bwrap's own explanation.
pub fn probe(program: &Path) -> Result<(), String> {
    let mut spec = CommandSpec::new(program, "/");
    spec.args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        .iter()
        .map(OsString::from)
        .chain(isolation(Network::Unshared))
        .chain(["--", "true"].iter().map(OsString::from))
        .collect();
    spec.timeout = Some(PROBE_TIMEOUT);
    let finished = process::run(&spec, &CancelToken::new())
        .map_err(|e| format!("{} cannot be started: {e}", program.display()))?;
    if finished.exit == Exit::Code(0) && finished.stopped.is_none() {
        return Ok(());
    }
    let text = finished.output.to_text();
    let said = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    Err(format!(
        "{} does not work here ({}): {}",
        program.display(),
        finished.exit,
        said.trim()
    ))
}

/// `spec` rewritten to run inside bwrap at `program` under `policy`. The environment, the
/// deadline and the output cap stay as they were.
pub fn wrap(
    spec: CommandSpec,
    program: &Path,
    policy: &Policy,
    filter: Option<Arc<sys::Filter>>,
) -> CommandSpec {
    let mut args = args(policy, &spec.cwd);
    let mut command = spec.program.clone();
    if let Some(program) = program_in_private_tmp(&spec.program, policy) {
        // The jail's /tmp is a fresh tmpfs, so a program kept under the host's /tmp (an MCP
        // server built in a checkout there) would not exist inside: bind that one file
        // read-only, unless it is hidden.
        args.extend([
            OsString::from("--ro-bind"),
            program.as_os_str().into(),
            program.as_os_str().into(),
        ]);
        command = program.into_os_string();
    }
    if let Some(fd) = filter.as_ref().and_then(|f| f.descriptor()) {
        args.extend([OsString::from("--seccomp"), OsString::from(fd.to_string())]);
    }
    args.push(OsString::from("--"));
    args.push(command);
    args.extend(spec.args.iter().cloned());
    CommandSpec {
        program: program.as_os_str().to_os_string(),
        args,
        seccomp: filter,
        ..spec
    }
}

/// `program`, resolved, when it is an absolute path under `/tmp` that is not hidden.
fn program_in_private_tmp(program: &std::ffi::OsStr, policy: &Policy) -> Option<PathBuf> {
    let path = Path::new(program);
    if !path.is_absolute() {
        return None;
    }
    let resolved = super::confine::resolve(path).ok()?;
    let visible = !policy.hides(&resolved) && !policy.jail_hidden().contains(&resolved);
    (resolved.starts_with("/tmp") && visible && resolved.is_file()).then_some(resolved)
}

/// The bwrap options (everything before `--`) for a command run in `cwd` under `policy`.
pub fn args(policy: &Policy, cwd: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    // Read-write binds for the roots and read-only ones for the protected paths, shallowest
    // first so a deeper bind wins: the home stays read-only inside the workspace, and a
    // workspace inside the home stays writable. At equal depth the root (read-write) comes
    // last, matching `Policy::protects`.
    // A subagent's fence leaves the roots read-only, but they are still bound: a root under
    // `/tmp` would otherwise vanish under the private `/tmp`.
    let fenced_roots = policy.fence.is_some().then(|| policy.roots()).into_iter();
    let mut binds: Vec<(&PathBuf, &str)> = policy
        .protected
        .iter()
        .map(|path| (path, HOME_VIEW))
        .chain(fenced_roots.flatten().map(|root| (root, "--ro-bind")))
        .chain(policy.writable().map(|root| (root, "--bind")))
        .filter(|(path, _)| path.exists())
        .collect();
    binds.sort_by_key(|(path, _)| path.components().count());
    binds.dedup_by(|later, earlier| later.0 == earlier.0 && later.1 == earlier.1);
    for (path, kind) in binds {
        if kind == HOME_VIEW {
            args.extend(home_view(policy, path));
            continue;
        }
        args.extend([
            OsString::from(kind),
            path.as_os_str().into(),
            path.as_os_str().into(),
        ]);
    }
    for hidden in policy.jail_hidden() {
        match std::fs::symlink_metadata(hidden) {
            Ok(meta) if meta.is_dir() => {
                args.extend([OsString::from("--tmpfs"), hidden.as_os_str().into()]);
            }
            Ok(_) => args.extend([
                OsString::from("--ro-bind"),
                OsString::from("/dev/null"),
                hidden.as_os_str().into(),
            ]),
            // Nothing to hide yet; a command that creates it owns what it wrote.
            Err(_) => {}
        }
    }
    for home in policy.protected.iter().filter(|home| home.exists()) {
        args.extend([OsString::from("--remount-ro"), home.as_os_str().into()]);
    }
    let network = if policy.network {
        Network::Shared
    } else {
        Network::Unshared
    };
    args.extend(isolation(network));
    args.extend([OsString::from("--chdir"), cwd.as_os_str().into()]);
    args
}

/// The bind kind that stands for [`home_view`].
const HOME_VIEW: &str = "home";

/// The reasonix home as a command sees it: an empty tmpfs with read-only binds of the entries
/// that exist now and that a tool could read ([`Policy::check_read`]: no secret, nothing that
/// leads to one through a symlink or a hard link), in name order.
fn home_view(policy: &Policy, home: &Path) -> Vec<OsString> {
    let mut args = vec![OsString::from("--tmpfs"), home.as_os_str().into()];
    let Ok(entries) = std::fs::read_dir(home) else {
        return args;
    };
    let mut visible: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|entry| policy.check_read(entry).is_ok())
        .collect();
    visible.sort();
    for entry in visible {
        // `-try`: an entry removed since it was listed, or a dangling symlink, is skipped
        // instead of failing the command.
        args.extend([
            OsString::from("--ro-bind-try"),
            entry.as_os_str().into(),
            entry.as_os_str().into(),
        ]);
    }
    args
}

/// Whether the sandbox keeps the host's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Network {
    Shared,
    Unshared,
}

/// The namespace and lifetime options shared by real commands and the probe.
fn isolation(network: Network) -> Vec<OsString> {
    let mut args = vec!["--unshare-pid", "--unshare-ipc"];
    if network == Network::Unshared {
        args.push("--unshare-net");
    }
    args.extend(["--die-with-parent", "--new-session"]);
    if sys::is_root() {
        args.extend(["--cap-drop", "ALL"]);
    }
    args.into_iter().map(OsString::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use crate::sandbox::{Backend, BashMode, Settings};

    #[test]
    fn a_program_under_the_hosts_tmp_is_bound_into_the_private_tmp_unless_hidden() {
        let dir = TempDir::new("bwrap-prog");
        std::fs::create_dir_all(dir.join("secret")).unwrap();
        if !dir.path().starts_with("/tmp") {
            return; // TMPDIR elsewhere: the private /tmp does not hide it.
        }
        std::fs::write(dir.join("server"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.join("secret/server"), "#!/bin/sh\n").unwrap();
        let policy = Policy::new(Settings {
            workspace_root: PathBuf::from("/nonexistent-ws"),
            home: PathBuf::from("/nonexistent-home"),
            allow_write: Vec::new(),
            forbid_read: vec![dir.join("secret")],
            bash: BashMode::Enforce,
            network: false,
            backend: Backend::Bwrap,
        });
        let joined = |program: PathBuf| {
            let spec = CommandSpec::new(program, "/");
            wrap(spec, Path::new("/usr/bin/bwrap"), &policy, None)
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let server = dir.join("server").display().to_string();
        let args = joined(dir.join("server"));
        assert!(
            args.contains(&format!("--ro-bind {server} {server}"))
                && args.ends_with(&format!("-- {server}")),
            "{args}"
        );
        let hidden = dir.join("secret/server").display().to_string();
        assert!(!joined(dir.join("secret/server")).contains(&format!("--ro-bind {hidden}")));
    }

    #[test]
    fn masks_follow_binds_and_network_is_unshared_by_default() {
        let scratch = TempDir::new("bwrap-masks");
        let home = scratch.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".env"), "KEY=1").unwrap();
        let secret_dir = scratch.join("secrets");
        std::fs::create_dir_all(&secret_dir).unwrap();
        let policy = Policy::new(Settings {
            workspace_root: scratch.path().to_path_buf(),
            home: home.clone(),
            allow_write: vec![PathBuf::from("/nonexistent-root")],
            forbid_read: vec![secret_dir.clone()],
            bash: BashMode::Enforce,
            network: false,
            backend: Backend::Bwrap,
        });
        let args: Vec<String> = args(&policy, scratch.path())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let joined = args.join(" ");
        let ws = policy.workspace_root.display().to_string();
        let home = policy.protected[0].display().to_string();
        let expected_binds = format!("--tmpfs /tmp --bind {ws} {ws} --tmpfs {home} ");
        assert!(joined.contains(&expected_binds), "{joined}");
        assert!(!joined.contains("nonexistent-root"), "{joined}");
        let masks = format!(
            "--tmpfs {} --ro-bind /dev/null {}/.env",
            policy.forbid_read[0].display(),
            home
        );
        assert!(joined.contains(&masks), "{joined}");
        assert!(joined.find(&masks) > joined.find(&expected_binds));
        assert!(joined.contains("--unshare-net"), "{joined}");
        assert!(joined.ends_with(&format!("--chdir {}", scratch.path().display())));
    }

    #[test]
    fn a_fence_binds_the_roots_read_only_and_only_its_paths_writable() {
        let scratch = TempDir::new("bwrap-fence");
        std::fs::create_dir_all(scratch.join("src")).unwrap();
        std::fs::create_dir_all(scratch.join("docs")).unwrap();
        let policy = Policy::new(Settings {
            workspace_root: scratch.path().to_path_buf(),
            home: scratch.join("home"),
            allow_write: Vec::new(),
            forbid_read: Vec::new(),
            bash: BashMode::Enforce,
            network: false,
            backend: Backend::Bwrap,
        });
        let fenced = policy.fenced(&[PathBuf::from("src")]).unwrap();
        let ws = policy.workspace_root.display().to_string();
        let joined = args(&fenced, scratch.path())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            joined.contains(&format!("--ro-bind {ws} {ws} --bind {ws}/src {ws}/src")),
            "{joined}"
        );
        assert!(!joined.contains(&format!("--bind {ws} {ws}")), "{joined}");
        // The file tools agree with the jail.
        assert!(fenced.check_write(Path::new("src/a.rs")).is_ok());
        let outside = fenced.check_write(Path::new("docs/b.md")).unwrap_err();
        assert!(
            outside
                .to_string()
                .contains("outside this subagent's write_paths"),
            "{outside}"
        );
        assert!(fenced.check_write_entry(Path::new("src")).is_err());
        // A fence cannot reach past the roots, and nothing at all is writable in an empty one.
        assert!(policy.fenced(&[PathBuf::from("../elsewhere")]).is_err());
        let shut = policy.fenced(&[]).unwrap();
        assert!(shut
            .check_write(Path::new("src/a.rs"))
            .unwrap_err()
            .to_string()
            .contains("read-only"));
    }
}
