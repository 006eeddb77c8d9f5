//! Enforcement beneath the permission layer: child processes with deadlines and process-group
//! kills, path confinement for the file tools, and the OS jail for bash.
//!
//! - [`Policy`] is the `[sandbox]` configuration in resolved form: the workspace root, the
//!   write roots (`allow_write`), the protected paths (the reasonix home: read-only for every
//!   tool and for jailed commands, even where it lies inside a write root), the `forbid_read`
//!   paths (always with the home's secrets, `config::paths::home_secrets`), whether bash is
//!   jailed, whether the jail keeps the network, and which backend to use. [`settings`] maps config into [`Settings`]; [`Policy::new`] resolves the
//!   paths once. MCP stdio servers run under a policy of their own built from the same settings.
//! - [`confine`] decides what the file tools may write and read, on absolute, symlink-free
//!   paths; [`beneath`] then performs the writes relative to directory descriptors, refusing
//!   every symlink, so a concurrent swap cannot redirect what was checked.
//! - [`bwrap`] and [`landlock`] are the two bash jails; [`Policy::confine_command`] picks one
//!   (see [`Policy::select`]) and rewrites a [`process::CommandSpec`] with it, so no tool needs
//!   to know whether it runs confined.
//! - [`process`] owns every child the agent starts: how a spec becomes a command, the process
//!   group it runs in, the pipes drained on threads, the deadline, the output cap, and killing
//!   the whole group on timeout, cancel and drop.
//! - [`sys`] holds the few libc calls std lacks; it is the only module here with `unsafe`.
//!   Without Unix, `sys_other.rs` stands in for it and refuses what needs a Unix kernel.
//!
//! Deciding whether a call may run at all is the permission layer's job, not this one's: the
//! sandbox is what still holds when a permission rule was too generous.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

pub mod beneath;
pub mod bwrap;
pub mod confine;
pub mod inodes;
pub mod landlock;
pub mod private_tmp;
pub mod process;
pub mod reaper;
pub mod seccomp;
pub mod settings;
#[cfg(unix)]
#[allow(unsafe_code)]
pub mod sys;
#[cfg(not(unix))]
#[path = "sys_other.rs"]
pub mod sys;

use process::CommandSpec;

/// `[sandbox] bash`: whether each bash command runs in a jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BashMode {
    /// Jail every command; refuse to run bash when no backend works.
    Enforce,
    /// Run commands unconfined (the file tools stay confined).
    Off,
}

/// `[sandbox] backend`: which jail bash runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// bubblewrap when it works here, else Landlock when the kernel supports it.
    Auto,
    Bwrap,
    Landlock,
}

impl Backend {
    /// The name used in `[sandbox] backend` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Bwrap => "bwrap",
            Backend::Landlock => "landlock",
        }
    }
}

/// The `[sandbox]` settings as plain values, before any path is resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where file writers are confined and bash may write; usually the cwd.
    pub workspace_root: PathBuf,
    /// The reasonix home (configuration, keys, grants, sessions, memory): never writable by a
    /// tool or a jailed command, and its secrets (`config::paths::home_secrets`) are always
    /// hidden. reasonix itself writes there.
    pub home: PathBuf,
    /// `[sandbox] allow_write`; relative entries are taken relative to the workspace root.
    pub allow_write: Vec<PathBuf>,
    /// `[sandbox] forbid_read`, with `${VAR}` already expanded by the caller.
    pub forbid_read: Vec<PathBuf>,
    pub bash: BashMode,
    /// `[sandbox] network`: whether jailed commands may use the network.
    pub network: bool,
    pub backend: Backend,
}

/// The sandbox of one session, shared by every tool call (`ToolContext::sandbox`). All paths
/// are absolute and symlink-free (see [`confine::resolve`]).
#[derive(Debug)]
pub struct Policy {
    pub workspace_root: PathBuf,
    /// The `allow_write` roots.
    pub write_roots: Vec<PathBuf>,
    /// A subagent's `write_paths`: when set, the only places writers and jailed commands may
    /// change (each lies under a root); `None` leaves every root writable. See
    /// [`Policy::fenced`].
    pub fence: Option<Vec<PathBuf>>,
    /// Paths no tool or jailed command may change even where they lie under a write root: the
    /// reasonix home, so that neither a repository nor the model can rewrite the user's
    /// configuration, grants, keys, sessions or memory (see [`Policy::protects`]).
    pub protected: Vec<PathBuf>,
    /// Paths no tool may read and the bash jail hides; always includes [`Policy::secrets`].
    pub forbid_read: Vec<PathBuf>,
    /// The reasonix home, resolved; `None` for [`Policy::workspace_only`].
    pub home: Option<PathBuf>,
    /// The home's secrets (`config::paths::home_secrets`), resolved: hidden like `forbid_read`
    /// whether they exist yet or not, and named as secrets in refusals.
    pub secrets: Vec<PathBuf>,
    pub bash: BashMode,
    pub network: bool,
    pub backend: Backend,
    /// The session's private temp directory for jailed commands, made on first use and shared
    /// with the policies [`Policy::fenced`] derives (see [`private_tmp`]).
    private_tmp: Arc<OnceLock<private_tmp::PrivateTmp>>,
    /// Whether [`Policy::take_notice`] still has to say how bash runs.
    notice_pending: AtomicBool,
    /// The files `forbid_read` hides, by inode, collected on first use (see [`inodes`]).
    hidden_inodes: OnceLock<inodes::HiddenInodes>,
    /// See [`Policy::jail_hidden`].
    jail_hidden: OnceLock<Vec<PathBuf>>,
}

impl Policy {
    /// Resolves the settings' paths (relative ones against the workspace root), protects the
    /// home and adds its secrets to the hidden paths.
    pub fn new(settings: Settings) -> Policy {
        let workspace_root = resolve_or_keep(&absolute_from_cwd(&settings.workspace_root));
        let under_workspace = |p: &Path| resolve_or_keep(&workspace_root.join(p));
        let mut write_roots = Vec::new();
        for root in &settings.allow_write {
            push_unique(&mut write_roots, under_workspace(root));
        }
        let home = under_workspace(&settings.home);
        let protected = vec![home.clone()];
        let secrets: Vec<PathBuf> = crate::config::paths::home_secrets(&home)
            .iter()
            .map(|secret| resolve_entry_of_resolved(secret))
            .collect();
        let mut forbid_read = Vec::new();
        for hidden in &settings.forbid_read {
            push_unique(&mut forbid_read, under_workspace(hidden));
        }
        for secret in &secrets {
            push_unique(&mut forbid_read, secret.clone());
        }
        Policy {
            workspace_root,
            write_roots,
            fence: None,
            protected,
            forbid_read,
            home: Some(home),
            secrets,
            private_tmp: Arc::new(OnceLock::new()),
            bash: settings.bash,
            network: settings.network,
            backend: settings.backend,
            notice_pending: AtomicBool::new(true),
            hidden_inodes: OnceLock::new(),
            jail_hidden: OnceLock::new(),
        }
    }

    /// The default of `ToolContext::new`: writers confined to `cwd`, nothing hidden, bash not
    /// jailed and nothing announced. Meant for tests and embedders that set no `[sandbox]`; a
    /// session built from configuration uses [`Policy::new`].
    pub fn workspace_only(cwd: &Path) -> Policy {
        Policy {
            workspace_root: resolve_or_keep(&absolute_from_cwd(cwd)),
            write_roots: Vec::new(),
            fence: None,
            protected: Vec::new(),
            forbid_read: Vec::new(),
            home: None,
            secrets: Vec::new(),
            private_tmp: Arc::new(OnceLock::new()),
            bash: BashMode::Off,
            network: true,
            backend: Backend::Auto,
            notice_pending: AtomicBool::new(false),
            hidden_inodes: OnceLock::new(),
            jail_hidden: OnceLock::new(),
        }
    }

    /// This policy with writes narrowed to `paths` (relative ones against the workspace), for
    /// a subagent given `write_paths`: file writers refuse everything else and the bash jail
    /// binds only these read-write. Each path must lie under a root, outside the protected
    /// home and every hidden path; an empty list leaves nothing writable (a read-only child's
    /// shell). What the fence cannot narrow: a path that does not exist yet is writable by the
    /// file tools but not bindable in a jail, so a command can only create files inside fenced
    /// directories that exist.
    pub fn fenced(&self, paths: &[PathBuf]) -> Result<Policy, SandboxError> {
        let mut fence = Vec::new();
        for path in paths {
            let resolved = self.check_write(path)?;
            push_unique(&mut fence, resolved);
        }
        Ok(Policy {
            workspace_root: self.workspace_root.clone(),
            write_roots: self.write_roots.clone(),
            fence: Some(fence),
            protected: self.protected.clone(),
            forbid_read: self.forbid_read.clone(),
            home: self.home.clone(),
            secrets: self.secrets.clone(),
            private_tmp: Arc::clone(&self.private_tmp),
            bash: self.bash,
            network: self.network,
            backend: self.backend,
            notice_pending: AtomicBool::new(false),
            hidden_inodes: OnceLock::new(),
            jail_hidden: OnceLock::new(),
        })
    }

    /// The jail bash runs in on `host`: `None` when `bash = "off"`, an error when `enforce`
    /// finds no usable backend (the message names the fixes).
    pub fn select(&self, host: &Host) -> Result<Option<Jail>, SandboxError> {
        if self.bash == BashMode::Off {
            return Ok(None);
        }
        let bwrap = || host.bwrap.clone().map(Jail::Bwrap);
        let landlock = || host.landlock.clone().map(Jail::Landlock);
        let unusable = |backend, why| SandboxError::BackendUnusable { backend, why };
        match self.backend {
            Backend::Bwrap => bwrap()
                .map(Some)
                .map_err(|why| unusable(Backend::Bwrap, why)),
            Backend::Landlock => landlock()
                .map(Some)
                .map_err(|why| unusable(Backend::Landlock, why)),
            Backend::Auto => match (bwrap(), landlock()) {
                (Ok(jail), _) | (Err(_), Ok(jail)) => Ok(Some(jail)),
                (Err(bwrap), Err(landlock)) => Err(SandboxError::Unavailable { bwrap, landlock }),
            },
        }
    }

    /// Rewrites `spec` to run in this policy's jail on this machine (see [`Host::current`]).
    pub fn confine_command(&self, spec: CommandSpec) -> Result<CommandSpec, SandboxError> {
        self.confine_command_on(spec, self.host())
    }

    /// The jail commands run in on this machine (see [`Policy::select`]).
    pub fn jail(&self) -> Result<Option<Jail>, SandboxError> {
        self.select(self.host())
    }

    /// The host to select a jail on: probed (once per process, see [`Host::current`]) only
    /// when this policy jails commands, so `bash = "off"` never starts `bwrap` just to learn
    /// what it will not use. [`Policy::select`] never looks at the host under `"off"`.
    fn host(&self) -> &'static Host {
        static NOT_PROBED: Host = Host {
            bwrap: Err(String::new()),
            landlock: Err(String::new()),
        };
        match self.bash {
            BashMode::Off => &NOT_PROBED,
            BashMode::Enforce => Host::current(),
        }
    }

    /// [`Policy::confine_command`] on a given host, so tests can hide bwrap.
    pub fn confine_command_on(
        &self,
        spec: CommandSpec,
        host: &Host,
    ) -> Result<CommandSpec, SandboxError> {
        match self.select(host)? {
            None => Ok(spec),
            Some(Jail::Bwrap(program)) => {
                let filter = match seccomp::Arch::native() {
                    Some(arch) => Some(Arc::new(
                        sys::Filter::for_bwrap(&seccomp::program(arch, self.network))
                            .map_err(SandboxError::Seccomp)?,
                    )),
                    None => None,
                };
                let mut spec = spec;
                // The jail's own /tmp, whatever the host's TMPDIR names.
                spec.env_set.push(("TMPDIR".into(), "/tmp".into()));
                Ok(bwrap::wrap(spec, &program, self, filter))
            }
            Some(Jail::Landlock(abi)) => {
                let mut spec = spec;
                spec.seccomp = seccomp::Arch::native()
                    .map(|arch| Arc::new(sys::Filter::new(&seccomp::program(arch, self.network))));
                // Made before the ruleset, which grants writes only to what exists.
                let tmp = self.private_tmp().map_err(SandboxError::Landlock)?;
                spec.env_set
                    .push(("TMPDIR".into(), tmp.to_string_lossy().into_owned()));
                let ruleset = landlock::prepare(self, abi, &tmp).map_err(SandboxError::Landlock)?;
                spec.landlock_ruleset = Some(ruleset);
                Ok(spec)
            }
        }
    }

    /// The session's private temp directory for jailed commands, made on first use (see
    /// [`private_tmp`]).
    pub fn private_tmp(&self) -> io::Result<PathBuf> {
        if let Some(tmp) = self.private_tmp.get() {
            return Ok(tmp.path().to_path_buf());
        }
        let home = self.home.as_ref().ok_or_else(|| {
            io::Error::other("this sandbox has no reasonix home for a private temp directory")
        })?;
        let made = private_tmp::PrivateTmp::create(&home.join(crate::config::paths::JAIL_TMP_DIR))?;
        // When another thread won the race, `made` is dropped here and its directory removed.
        let _ = self.private_tmp.set(made);
        self.private_tmp
            .get()
            .map(|tmp| tmp.path().to_path_buf())
            .ok_or_else(|| io::Error::other("the private temp directory vanished"))
    }

    /// A one-time remark for the model or the user about how bash runs, when it runs with less
    /// confinement than asked for: unconfined (`bash = "off"`), or under Landlock without
    /// network confinement on a kernel older than Landlock ABI 4. `None` afterwards, and always
    /// for [`Policy::workspace_only`].
    pub fn take_notice(&self) -> Option<String> {
        if !self.notice_pending.load(Ordering::SeqCst) {
            return None;
        }
        let notice = self.notice(self.host())?;
        self.notice_pending
            .swap(false, Ordering::SeqCst)
            .then_some(notice)
    }

    fn notice(&self, host: &Host) -> Option<String> {
        match self.select(host) {
            Ok(None) => Some(
                "sandbox: bash runs unconfined because [sandbox] bash = \"off\"; commands can \
                 read and write anything this user can"
                    .into(),
            ),
            Ok(Some(Jail::Landlock(abi))) if !landlock::confines_network(self, abi) => {
                Some(landlock::network_gap(abi))
            }
            _ => None,
        }
    }
}

/// A jail that works on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jail {
    /// bubblewrap, at this path.
    Bwrap(PathBuf),
    /// Landlock, with this kernel ABI version.
    Landlock(u32),
}

/// Which jails work on this machine, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The bwrap that passed the probe, or why there is none.
    pub bwrap: Result<PathBuf, String>,
    /// The kernel's Landlock ABI version, or why Landlock is unavailable.
    pub landlock: Result<u32, String>,
}

impl Host {
    /// This process's host, probed once: bwrap on `PATH` (run once to see that it works) and
    /// the kernel's Landlock ABI.
    pub fn current() -> &'static Host {
        static HOST: OnceLock<Host> = OnceLock::new();
        HOST.get_or_init(|| Host::probe(std::env::var_os("PATH").as_deref()))
    }

    /// Probes with `path` as the search path for bwrap, without caching.
    pub fn probe(path: Option<&OsStr>) -> Host {
        let bwrap = match bwrap::locate(path) {
            Some(program) => bwrap::probe(&program).map(|()| program),
            None => Err("bwrap is not installed (not found on PATH)".to_string()),
        };
        Host {
            bwrap,
            landlock: landlock::probe(),
        }
    }
}

/// What `reasonix doctor` shows about the bash jail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendReport {
    /// The backend bash commands run in; `None` when they run unconfined or not at all.
    pub active: Option<Backend>,
    /// One line saying why.
    pub reason: String,
}

/// Which backend jails bash under `policy` on this machine, and why.
pub fn describe_backend(policy: &Policy) -> BackendReport {
    describe_backend_on(policy, policy.host())
}

/// [`describe_backend`] on a given host.
pub fn describe_backend_on(policy: &Policy, host: &Host) -> BackendReport {
    let (active, mut reason) = match policy.select(host) {
        Ok(None) => (
            None,
            "[sandbox] bash = \"off\": bash commands run unconfined".to_string(),
        ),
        Ok(Some(Jail::Bwrap(program))) => (
            Some(Backend::Bwrap),
            format!(
                "bubblewrap at {} works ([sandbox] backend = \"{}\")",
                program.display(),
                policy.backend.name()
            ),
        ),
        Ok(Some(Jail::Landlock(abi))) => {
            let mut reason = format!("Landlock ABI {abi} is supported by this kernel");
            if let Err(why) = &host.bwrap {
                reason = format!("{reason}; bubblewrap is unusable: {why}");
            }
            if !landlock::confines_network(policy, abi) {
                reason = format!("{reason}; {}", landlock::network_gap(abi));
            }
            (Some(Backend::Landlock), reason)
        }
        Err(e) => (None, e.to_string()),
    };
    if let Some(rest) = reason.strip_prefix("sandbox: ") {
        reason = rest.to_string();
    }
    BackendReport { active, reason }
}

/// What `reasonix doctor` lists about the jail bash runs in: the protections in force, and for
/// the Landlock fallback a short, honest list of what it cannot stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protections {
    pub active: Vec<String>,
    pub gaps: Vec<String>,
}

/// The protections of the jail `policy` selects on `host`; `None` when bash runs unjailed or
/// not at all.
pub fn protections_on(policy: &Policy, host: &Host) -> Option<Protections> {
    let jail = policy.select(host).ok()??;
    let filter = match seccomp::Arch::native() {
        Some(arch) => format!(
            "seccomp filter ({} instructions; denials return EPERM)",
            seccomp::program(arch, policy.network).len()
        ),
        None => "no seccomp filter (unsupported architecture)".to_string(),
    };
    let network = if policy.network {
        "network allowed ([sandbox] network = true)"
    } else {
        "network off: no TCP, UDP or unix socket reaches the host"
    };
    let mut active = Vec::new();
    let mut gaps = Vec::new();
    match jail {
        Jail::Bwrap(program) => {
            active.push(format!("backend bwrap ({})", program.display()));
            active.push(filter);
            active.push(
                "capabilities dropped (bounding set kept, unusable under no_new_privs)".into(),
            );
            active.push("no_new_privs".into());
            active.push(if sys::is_root() {
                "no user namespace (run as root: bwrap uses root's privileges, then drops them)"
                    .into()
            } else {
                "user namespace".into()
            });
            active.push("mount, PID and IPC namespaces".into());
            active.push(network.into());
        }
        Jail::Landlock(abi) => {
            active.push(format!("backend landlock (ABI {abi})"));
            active.push(filter);
            active.push("every capability dropped, bounding set included".into());
            active.push("no_new_privs".into());
            active.push("no user namespace".into());
            active.push(
                "a supervisor kills every descendant when the command ends, times out or \
                 reasonix dies"
                    .into(),
            );
            if landlock::confines_network(policy, abi) {
                active.push(network.into());
            }
            gaps.push(
                "chmod and touch can change mode bits and times of files outside the \
                 workspace that this user owns (as root: any file)"
                    .into(),
            );
            active.push(
                "a private TMPDIR in the reasonix home; no writes to the host's /tmp, \
                 /var/tmp or /dev/shm, no access to its terminals (/dev/pts)"
                    .into(),
            );
            gaps.push(
                "no mount namespace: every file not hidden by forbid_read or the home's \
                 secrets is readable, the host's /tmp and /var/tmp included; programs that \
                 write to /tmp by name instead of $TMPDIR fail"
                    .into(),
            );
            gaps.push(
                "no pseudo-terminals: the command cannot open /dev/pts, so programs that \
                 allocate one (script, expect) fail"
                    .into(),
            );
            gaps.push("the names of the home's secrets can be listed (not read)".into());
            gaps.push(
                "no PID namespace: other processes are visible in /proc (their memory and \
                 environment are not readable)"
                    .into(),
            );
            if abi < 6 {
                gaps.push(format!(
                    "Landlock ABI {abi} has no signal scoping: the command can signal other \
                     processes of this user, its supervisor included (ABI 6 is needed)"
                ));
            }
            if !landlock::confines_network(policy, abi) {
                gaps.push(landlock::network_gap(abi).replace("sandbox: ", ""));
            }
            gaps.push("install bubblewrap for the stronger jail".into());
        }
    }
    Some(Protections { active, gaps })
}

/// Why the sandbox refused a path or a command.
#[derive(Debug)]
pub enum SandboxError {
    /// A writer's path resolves outside the workspace and every write root.
    OutsideWrite {
        path: PathBuf,
        workspace: PathBuf,
    },
    /// A subagent's writer path lies outside the `write_paths` it was given.
    OutsideFence {
        path: PathBuf,
        fence: Vec<PathBuf>,
    },
    /// The path resolves under a protected path (the reasonix home), or moving it would move one.
    Protected {
        path: PathBuf,
        protected: PathBuf,
    },
    /// The path resolves under a `forbid_read` path.
    Forbidden {
        path: PathBuf,
        hidden: PathBuf,
    },
    /// The path resolves under a secret of the reasonix home (`config::paths::home_secrets`).
    Secret {
        path: PathBuf,
        secret: PathBuf,
    },
    /// The path is a hard link to a file `forbid_read` hides.
    HardLinkToHidden {
        path: PathBuf,
    },
    /// Moving this entry would move a `forbid_read` path inside it.
    ContainsForbidden {
        path: PathBuf,
        hidden: PathBuf,
    },
    /// The path could not be resolved (a permission error, a file used as a directory).
    Resolve {
        path: PathBuf,
        source: io::Error,
    },
    SymlinkLoop {
        path: PathBuf,
    },
    /// `bash = "enforce"` with `backend = "auto"`, and neither backend works.
    Unavailable {
        bwrap: String,
        landlock: String,
    },
    /// The backend named in `[sandbox] backend` does not work here.
    BackendUnusable {
        backend: Backend,
        why: String,
    },
    /// Building the Landlock ruleset failed.
    Landlock(io::Error),
    /// Preparing the seccomp filter for bubblewrap failed.
    Seccomp(io::Error),
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::OutsideWrite { path, workspace } => write!(
                f,
                "sandbox: path {} is outside the workspace {} and the allowed write roots; \
                 [sandbox] allow_write can add a root",
                path.display(),
                workspace.display()
            ),
            SandboxError::OutsideFence { path, fence } if fence.is_empty() => write!(
                f,
                "sandbox: path {} cannot be changed: this subagent is read-only",
                path.display()
            ),
            SandboxError::OutsideFence { path, fence } => write!(
                f,
                "sandbox: path {} is outside this subagent's write_paths ({}); write only \
                 there, or report back what else needs changing",
                path.display(),
                fence
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            SandboxError::Protected { path, protected } => write!(
                f,
                "sandbox: path {} touches the reasonix home {} (configuration, keys, grants, \
                 sessions); no tool may change it, edit it yourself outside reasonix",
                path.display(),
                protected.display()
            ),
            SandboxError::Secret { path, secret } => write!(
                f,
                "sandbox: path {} is a secret of the reasonix home ({}: keys, tokens, grants, \
                 credentials in the config); no tool, reference or jailed command may read it",
                path.display(),
                secret.display()
            ),
            SandboxError::Forbidden { path, hidden } => write!(
                f,
                "sandbox: path {} is hidden by [sandbox] forbid_read ({}); it may not be read \
                 or changed by any tool",
                path.display(),
                hidden.display()
            ),
            SandboxError::HardLinkToHidden { path } => write!(
                f,
                "sandbox: path {} is a hard link to a file hidden by [sandbox] forbid_read; it \
                 may not be read or changed by any tool",
                path.display()
            ),
            SandboxError::ContainsForbidden { path, hidden } => write!(
                f,
                "sandbox: cannot move {}: it contains {}, which [sandbox] forbid_read hides",
                path.display(),
                hidden.display()
            ),
            SandboxError::Resolve { path, source } => {
                write!(f, "sandbox: cannot resolve {}: {source}", path.display())
            }
            SandboxError::SymlinkLoop { path } => write!(
                f,
                "sandbox: too many symbolic links while resolving {}",
                path.display()
            ),
            SandboxError::Unavailable { bwrap, landlock } => write!(
                f,
                "sandbox: bash is disabled: [sandbox] bash = \"enforce\" needs bubblewrap or \
                 Landlock and neither works here (bwrap: {bwrap}; landlock: {landlock}); \
                 install bubblewrap (apt-get install bubblewrap) or set [sandbox] bash = \"off\""
            ),
            SandboxError::BackendUnusable { backend, why } => write!(
                f,
                "sandbox: bash is disabled: [sandbox] backend = \"{}\" does not work here \
                 ({why}); set [sandbox] backend = \"auto\", install bubblewrap (apt-get install \
                 bubblewrap) or set [sandbox] bash = \"off\"",
                backend.name()
            ),
            SandboxError::Landlock(e) => {
                write!(f, "sandbox: cannot prepare the Landlock ruleset: {e}")
            }
            SandboxError::Seccomp(e) => {
                write!(f, "sandbox: cannot prepare the seccomp filter: {e}")
            }
        }
    }
}

impl std::error::Error for SandboxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SandboxError::Resolve { source, .. }
            | SandboxError::Landlock(source)
            | SandboxError::Seccomp(source) => Some(source),
            _ => None,
        }
    }
}

/// `path` made absolute against the process's working directory.
fn absolute_from_cwd(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| Path::new("/").join(path))
}

/// The resolved form of a configured root; the path as given when it cannot be resolved
/// (checks against it then still work on the literal path).
fn resolve_or_keep(path: &Path) -> PathBuf {
    confine::resolve(path).unwrap_or_else(|_| path.to_path_buf())
}

/// [`resolve_or_keep`] for an entry of a directory that is already resolved (the home's
/// secrets): only the entry itself can be a symlink, so one `lstat` answers instead of one per
/// component of the path, for every secret of every policy built at start-up.
fn resolve_entry_of_resolved(entry: &Path) -> PathBuf {
    match std::fs::symlink_metadata(entry) {
        Ok(meta) if meta.file_type().is_symlink() => resolve_or_keep(entry),
        _ => entry.to_path_buf(),
    }
}

fn push_unique(paths: &mut Vec<PathBuf>, path: PathBuf) {
    if !paths.contains(&path) {
        paths.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(bwrap: Result<&str, &str>, landlock: Result<u32, &str>) -> Host {
        Host {
            bwrap: bwrap.map(PathBuf::from).map_err(String::from),
            landlock: landlock.map_err(String::from),
        }
    }

    fn policy(bash: BashMode, backend: Backend, network: bool) -> Policy {
        Policy::new(Settings {
            workspace_root: PathBuf::from("/nonexistent-ws"),
            home: PathBuf::from("/nonexistent-home"),
            allow_write: vec![PathBuf::from("extra")],
            forbid_read: vec![PathBuf::from("/nonexistent-secret")],
            bash,
            network,
            backend,
        })
    }

    #[test]
    fn settings_become_resolved_roots() {
        let p = policy(BashMode::Enforce, Backend::Auto, false);
        assert_eq!(p.workspace_root, PathBuf::from("/nonexistent-ws"));
        assert_eq!(p.write_roots, vec![PathBuf::from("/nonexistent-ws/extra")]);
        assert_eq!(p.protected, vec![PathBuf::from("/nonexistent-home")]);
        assert_eq!(
            p.forbid_read,
            [
                "/nonexistent-secret",
                "/nonexistent-home/.env",
                "/nonexistent-home/config.toml",
                "/nonexistent-home/mcp-auth",
                "/nonexistent-home/serve-auth.json",
                "/nonexistent-home/mcp-grants.json",
                "/nonexistent-home/trusted-workspaces.json",
                "/nonexistent-home/tmp",
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn auto_prefers_bwrap_then_landlock_then_refuses_naming_both_fixes() {
        let p = policy(BashMode::Enforce, Backend::Auto, false);
        let both = host(Ok("/usr/bin/bwrap"), Ok(4));
        assert_eq!(
            p.select(&both).unwrap(),
            Some(Jail::Bwrap("/usr/bin/bwrap".into()))
        );
        let no_bwrap = host(Err("not found"), Ok(4));
        assert_eq!(p.select(&no_bwrap).unwrap(), Some(Jail::Landlock(4)));
        let neither = host(Err("not found"), Err("kernel too old"));
        let err = p.select(&neither).unwrap_err().to_string();
        assert_eq!(
            err,
            "sandbox: bash is disabled: [sandbox] bash = \"enforce\" needs bubblewrap or \
             Landlock and neither works here (bwrap: not found; landlock: kernel too old); \
             install bubblewrap (apt-get install bubblewrap) or set [sandbox] bash = \"off\""
        );
        let report = describe_backend_on(&p, &neither);
        assert_eq!(report.active, None);
        assert!(report.reason.starts_with("bash is disabled"), "{report:?}");
    }

    #[test]
    fn an_explicit_backend_never_falls_back() {
        let p = policy(BashMode::Enforce, Backend::Bwrap, false);
        let err = p
            .select(&host(Err("no userns"), Ok(5)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("backend = \"bwrap\" does not work here (no userns)"),
            "{err}"
        );
        let p = policy(BashMode::Enforce, Backend::Landlock, false);
        assert_eq!(
            p.select(&host(Ok("/bin/bwrap"), Ok(2))).unwrap(),
            Some(Jail::Landlock(2))
        );
    }

    #[test]
    fn off_runs_unconfined_and_reports_it() {
        let p = policy(BashMode::Off, Backend::Auto, false);
        let h = host(Ok("/usr/bin/bwrap"), Ok(4));
        assert_eq!(p.select(&h).unwrap(), None);
        assert!(p.notice(&h).unwrap().contains("unconfined"));
        assert_eq!(describe_backend_on(&p, &h).active, None);
    }

    #[test]
    fn old_landlock_reports_the_network_gap() {
        let p = policy(BashMode::Enforce, Backend::Auto, false);
        let h = host(Err("not found"), Ok(3));
        let report = describe_backend_on(&p, &h);
        assert_eq!(report.active, Some(Backend::Landlock));
        assert!(
            report.reason.contains("network is not confined"),
            "{report:?}"
        );
        assert!(p.notice(&h).unwrap().contains("network is not confined"));
        assert_eq!(p.notice(&host(Err("not found"), Ok(4))), None);
        let open = policy(BashMode::Enforce, Backend::Auto, true);
        assert_eq!(open.notice(&h), None);
    }

    #[test]
    fn doctor_lists_the_protections_and_landlock_admits_its_limits() {
        let p = policy(BashMode::Enforce, Backend::Auto, false);
        let bwrap = protections_on(&p, &host(Ok("/usr/bin/bwrap"), Ok(7))).unwrap();
        assert!(bwrap.active[0].starts_with("backend bwrap"), "{bwrap:?}");
        assert!(
            bwrap.active.iter().any(|a| a == "no_new_privs"),
            "{bwrap:?}"
        );
        assert!(bwrap.gaps.is_empty(), "{bwrap:?}");
        let landlock = protections_on(&p, &host(Err("not found"), Ok(5))).unwrap();
        assert_eq!(landlock.active[0], "backend landlock (ABI 5)");
        assert!(
            landlock.gaps[0].starts_with("chmod and touch"),
            "{landlock:?}"
        );
        assert!(
            landlock.gaps.iter().any(|g| g.contains("signal scoping")),
            "{landlock:?}"
        );
        // Issue 32.7: what Landlock holds about temp dirs and terminals, and what it cannot.
        assert!(
            landlock
                .active
                .iter()
                .any(|a| a.contains("private TMPDIR") && a.contains("/dev/pts")),
            "{landlock:?}"
        );
        for gap in [
            "pseudo-terminals",
            "write to /tmp by name",
            "names of the home's secrets",
        ] {
            assert!(
                landlock.gaps.iter().any(|g| g.contains(gap)),
                "{gap}: {landlock:?}"
            );
        }
        assert_eq!(
            landlock.gaps.last().unwrap(),
            "install bubblewrap for the stronger jail"
        );
        let off = policy(BashMode::Off, Backend::Auto, false);
        assert_eq!(
            protections_on(&off, &host(Ok("/usr/bin/bwrap"), Ok(7))),
            None
        );
    }

    #[test]
    fn the_default_policy_announces_nothing() {
        let p = Policy::workspace_only(Path::new("/"));
        assert_eq!(p.take_notice(), None);
        assert_eq!(p.bash, BashMode::Off);
    }
}
