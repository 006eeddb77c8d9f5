//! The tool versions the environment summary lists (`git`, `node`, `cargo`, `gcc`, `docker`,
//! …): found on `PATH` by `stat` alone, their `--version` answers kept in a cache in the
//! reasonix home and refreshed in the background, never on the path to the first request.
//!
//! The probes must not outlive reasonix nor cost a run more than a moment:
//! - They run in parallel within one total budget, [`PROBE_BUDGET`], after which the slow
//!   ones are killed with their process groups and remembered as failed (listed by path until
//!   their binary changes, so a slow tool is not probed at every start).
//! - Each answer is written to the cache as soon as it arrives (merged with the file as it is
//!   then), so a run shorter than the slowest probe still keeps what the fast ones said and
//!   the next run probes only the rest.
//! - On the way out `process::shut_down` kills every probe still running and refuses to start
//!   more; a probe killed that way is not recorded (it did not fail), so a later run tries it
//!   again. Nothing a probe started is left running when reasonix exits.
//!
//! Which programs may be probed: only those found in `PATH` entries that are absolute and
//! outside the workspace and the write roots (where the model or the repository could plant a
//! `git`), started with an environment that carries nothing but `PATH`, `HOME` and `LANG`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;
use crate::sandbox::process::{self, CommandSpec, Exit, Stop};

/// Tools whose versions are reported when found on PATH.
const PROBED_TOOLS: &[&str] = &[
    "git", "python3", "node", "npm", "cargo", "rustc", "go", "java", "gcc", "make", "docker",
];

/// Tools whose `--version` starts a heavyweight runtime (a JVM): listed by path only.
const NEVER_RUN: &[&str] = &["java"];

/// How long all the probes of one run may take together, from the first one's start. They run
/// off the path to the first request, so this bounds wasted work and how long a wedged tool
/// runs, not start-up time.
pub const PROBE_BUDGET: Duration = Duration::from_secs(2);

/// The versions of the probed tools found on `path` (a `PATH` value, filtered by
/// [`trusted_path`] against `writable`), each with its cached version or, until a probe has
/// answered, its path. Nothing waits for a program here: the tools missing from the cache are
/// probed on a background thread that fills the cache for the next session (a session's prompt
/// never changes once built, so this one shows paths).
pub fn tool_versions(
    home: &Path,
    path: Option<OsString>,
    writable: &[PathBuf],
) -> Vec<(String, String)> {
    let search = trusted_path(path, writable);
    let cache_path = home.join("cache").join("tool-versions.json");
    let cache = read_cache(&cache_path);
    let found: Vec<Found> = PROBED_TOOLS
        .iter()
        .filter_map(|name| Found::on(name, &search))
        .collect();
    let fresh = |tool: &Found| {
        cache
            .get(&tool.key())
            .filter(|c| c.mtime == tool.mtime && c.size == tool.size)
    };
    let stale: Vec<Found> = found
        .iter()
        .filter(|tool| fresh(tool).is_none() && !NEVER_RUN.contains(&tool.name))
        .cloned()
        .collect();
    let listed = found
        .iter()
        .map(|tool| {
            let shown = fresh(tool)
                .and_then(|c| c.version.clone())
                .unwrap_or_else(|| tool.path.display().to_string());
            (tool.name.to_string(), shown)
        })
        .collect();
    if !stale.is_empty() {
        let search = std::env::join_paths(search).unwrap_or_default();
        let _ = std::thread::Builder::new()
            .name("probe-versions".into())
            .spawn(move || probe_all(&cache_path, stale, &search));
    }
    listed
}

/// `path` (a `PATH` value) without the entries a probe must not trust: relative ones (they
/// resolve against the workspace) and those inside a `writable` directory. Symlinked entries
/// are judged by where they lead.
fn trusted_path(path: Option<OsString>, writable: &[PathBuf]) -> Vec<PathBuf> {
    let writable: Vec<PathBuf> = writable
        .iter()
        .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.clone()))
        .collect();
    let Some(path) = path else {
        return Vec::new();
    };
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            !writable
                .iter()
                .any(|w| real.starts_with(w) || dir.starts_with(w))
        })
        .collect()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct CachedVersion {
    mtime: u64,
    size: u64,
    /// `None`: the probe failed or ran out of the budget; the tool is listed by its path until
    /// the binary changes.
    version: Option<String>,
}

/// The version cache, keyed by `name` and resolved path together, so a `PATH` that alternates
/// between two installs (a version-manager shim) keeps both answers.
type VersionCache = BTreeMap<String, CachedVersion>;

fn read_cache(cache_path: &Path) -> VersionCache {
    std::fs::read(cache_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// A probed tool found on `PATH` (by `stat` only).
#[derive(Clone)]
struct Found {
    name: &'static str,
    path: PathBuf,
    mtime: u64,
    size: u64,
}

impl Found {
    /// The first executable `name` in `search`, with its identity for the cache.
    fn on(name: &'static str, search: &[PathBuf]) -> Option<Found> {
        let path = search
            .iter()
            .map(|dir| dir.join(name))
            .find(|candidate| crate::platform::is_executable(candidate))?;
        let meta = std::fs::metadata(&path).ok()?;
        let mtime = meta
            .modified()
            .ok()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_secs();
        Some(Found {
            name,
            path,
            mtime,
            size: meta.len(),
        })
    }

    fn key(&self) -> String {
        format!("{}\t{}", self.name, self.path.display())
    }
}

/// How one probe ended, as far as the cache is concerned.
#[derive(Debug, PartialEq)]
enum Answer {
    /// The first line of a successful `--version`.
    Version(String),
    /// It failed, printed nothing or ran out of the budget: remembered as failed.
    Failed,
    /// It was stopped because reasonix is exiting (or could not start for that reason):
    /// nothing is learnt, the next run tries again.
    Interrupted,
}

/// Probes `stale` in parallel within [`PROBE_BUDGET`], recording each answer as it arrives.
fn probe_all(cache_path: &Path, stale: Vec<Found>, search: &OsString) {
    probe_within(cache_path, stale, search, PROBE_BUDGET, &CancelToken::new());
}

/// [`probe_all`] with the budget and a cancel token given, so a test can hold a probe open.
fn probe_within(
    cache_path: &Path,
    stale: Vec<Found>,
    search: &OsString,
    budget: Duration,
    cancel: &CancelToken,
) {
    let deadline = Instant::now().checked_add(budget);
    std::thread::scope(|scope| {
        for tool in stale {
            let cancel = cancel.clone();
            let _ = std::thread::Builder::new()
                .name(format!("probe-{}", tool.name))
                .spawn_scoped(scope, move || {
                    let answer = probe_version(&tool.path, search, deadline, &cancel);
                    let version = match answer {
                        Answer::Version(version) => Some(version),
                        Answer::Failed => None,
                        Answer::Interrupted => return,
                    };
                    record(
                        cache_path,
                        tool.key(),
                        CachedVersion {
                            mtime: tool.mtime,
                            size: tool.size,
                            version,
                        },
                    );
                });
        }
    });
}

/// Adds one answer to the cache file: read, merge, atomic write, under a lock so the probe
/// threads of this process do not drop each other's answers (another reasonix writing at the
/// same moment may; its tools are then probed again next time).
fn record(cache_path: &Path, key: String, entry: CachedVersion) {
    static WRITING: Mutex<()> = Mutex::new(());
    let _writing = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
    let mut cache = read_cache(cache_path);
    cache.insert(key, entry);
    if let Ok(bytes) = serde_json::to_vec_pretty(&cache) {
        // Only the `cache` folder itself: a home removed while a probe ran (a CI job's
        // temporary home, a test's) is not brought back by a late answer.
        if let Some(dir) = cache_path.parent() {
            let _ = std::fs::create_dir(dir);
        }
        let _ = crate::fsutil::write_atomic(cache_path, &bytes, None);
    }
}

/// `path --version` with a scrubbed environment (only the trusted `PATH`, `HOME` and `LANG`,
/// so no provider key or `*_OPTIONS` variable reaches the program), killed with its process
/// group when it has not answered by `deadline` (`None`: the budget overflowed the clock,
/// so no deadline).
fn probe_version(
    path: &Path,
    search: &OsString,
    deadline: Option<Instant>,
    cancel: &CancelToken,
) -> Answer {
    let mut spec = CommandSpec::new(path, "/");
    spec.args = vec!["--version".into()];
    spec.env_remove = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    spec.env_set = vec![
        ("PATH".into(), search.to_string_lossy().into_owned()),
        ("LANG".into(), "C".into()),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        spec.env_set
            .push(("HOME".into(), home.to_string_lossy().into_owned()));
    }
    spec.timeout = deadline.map(|at| at.saturating_duration_since(Instant::now()));
    spec.kill_grace = Duration::ZERO;
    let finished = match process::run(&spec, cancel) {
        Ok(finished) => finished,
        Err(_) if process::is_exiting() => return Answer::Interrupted,
        Err(_) => return Answer::Failed,
    };
    if finished.stopped.is_none() && finished.exit == Exit::Code(0) {
        let text = finished.output.to_text();
        if let Some(first) = text.lines().next().map(str::trim).filter(|l| !l.is_empty()) {
            return Answer::Version(first.to_string());
        }
    }
    // Killed on the way out (its SIGKILL shows as the exit) or cancelled: that says nothing
    // about the tool.
    if process::is_exiting() || finished.stopped == Some(Stop::Cancelled) {
        return Answer::Interrupted;
    }
    Answer::Failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    /// A fake tool in `bin` that runs `script` (a `/bin/sh` body).
    fn tool(bin: &TempDir, name: &'static str, script: &str) -> Found {
        let path = bin.write(name, format!("#!/bin/sh\n{script}\n"));
        crate::platform::set_path_mode(&path, 0o755).unwrap();
        Found::on(name, &[bin.path().to_path_buf()]).unwrap()
    }

    /// A tool that starts a background `sleep`, writes its pid to `pid_file` and waits: it
    /// never answers, and the sleeper is a grandchild only a group kill reaches.
    fn hanging(bin: &TempDir, name: &'static str, pid_file: &Path) -> Found {
        tool(
            bin,
            name,
            &format!("/bin/sleep 1000 & echo $! > '{}'; wait", pid_file.display()),
        )
    }

    fn running(pid_file: &Path) -> Option<bool> {
        let pid = std::fs::read_to_string(pid_file).ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        Some(stat.is_ok_and(|stat| !stat.contains(") Z ")))
    }

    /// Polls (bounded) for `ready`: what it waits for happens on other threads.
    fn soon(ready: impl Fn() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            if ready() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        ready()
    }

    #[test]
    fn a_late_answer_does_not_bring_back_a_removed_home() {
        let home = TempDir::new("probe-removed-home");
        let gone = home.join("home");
        let entry = CachedVersion {
            mtime: 1,
            size: 1,
            version: Some("1.0".into()),
        };
        record(
            &gone.join("cache/tool-versions.json"),
            "git".into(),
            entry.clone(),
        );
        assert!(!gone.exists(), "the removed home was created again");
        std::fs::create_dir(&gone).unwrap();
        let cache_path = gone.join("cache/tool-versions.json");
        record(&cache_path, "git".into(), entry.clone());
        assert_eq!(read_cache(&cache_path).get("git"), Some(&entry));
    }

    #[test]
    fn each_answer_is_cached_as_it_arrives_and_a_cancelled_probe_is_not() {
        let bin = TempDir::new("probe-bin");
        let home = TempDir::new("probe-home");
        let cache_path = home.join("cache/tool-versions.json");
        let pid_file = home.join("node.pid");
        let git = tool(&bin, "git", "echo 'git version 9.9.9-fake'");
        let node = hanging(&bin, "node", &pid_file);
        let (git_key, node_key) = (git.key(), node.key());
        let search = bin.path().as_os_str().to_os_string();
        let cancel = CancelToken::new();
        std::thread::scope(|scope| {
            let probing = {
                let (cache_path, cancel) = (&cache_path, &cancel);
                scope.spawn(move || {
                    probe_within(
                        cache_path,
                        vec![git, node],
                        &search,
                        Duration::from_secs(600),
                        cancel,
                    )
                })
            };
            assert!(
                soon(|| read_cache(&cache_path).contains_key(&git_key)),
                "git's answer was not cached while node was still running"
            );
            assert!(soon(|| running(&pid_file) == Some(true)));
            let cache = read_cache(&cache_path);
            assert_eq!(
                cache[&git_key].version.as_deref(),
                Some("git version 9.9.9-fake")
            );
            assert!(!cache.contains_key(&node_key), "{cache:?}");
            cancel.cancel();
            probing.join().unwrap();
        });
        assert_eq!(
            running(&pid_file),
            Some(false),
            "node's sleeper outlived it"
        );
        assert!(!read_cache(&cache_path).contains_key(&node_key));
    }

    #[test]
    fn a_probe_past_the_budget_is_killed_and_remembered_as_failed() {
        let bin = TempDir::new("probe-bin-slow");
        let home = TempDir::new("probe-home-slow");
        let cache_path = home.join("cache/tool-versions.json");
        let pid_file = home.join("go.pid");
        let go = hanging(&bin, "go", &pid_file);
        let key = go.key();
        let search = bin.path().as_os_str().to_os_string();
        probe_within(
            &cache_path,
            vec![go],
            &search,
            Duration::from_millis(300),
            &CancelToken::new(),
        );
        assert_eq!(
            running(&pid_file),
            Some(false),
            "the sleeper outlived the budget"
        );
        let cache = read_cache(&cache_path);
        assert_eq!(cache.get(&key).map(|c| c.version.clone()), Some(None));
    }

    #[test]
    fn only_absolute_entries_outside_the_writable_roots_are_searched() {
        let root = TempDir::new("probe-path");
        let (ws, outside) = (root.join("ws"), root.join("outside"));
        std::fs::create_dir_all(ws.join("bin")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let path = std::env::join_paths([ws.join("bin"), outside.clone(), "rel".into()]).ok();
        assert_eq!(trusted_path(path, &[ws]), vec![outside]);
    }
}
