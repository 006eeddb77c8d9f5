//! Test helpers: isolated temp dirs, a `reasonix` command with a clean environment, and (in
//! submodules) fake servers on 127.0.0.1:0.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory removed on drop. Each has a unique name under the system temp dir (or, from
/// [`Dir::outside_temp`], under a directory that is not a temp dir).
pub struct Dir {
    path: PathBuf,
}

impl Dir {
    pub fn new() -> Dir {
        let test = std::thread::current()
            .name()
            .unwrap_or("t")
            .replace("::", "-");
        Dir::under(&std::env::temp_dir(), &format!("test-{test}"))
    }

    /// A directory outside every shared temp directory, for tests of the jail: bwrap gives
    /// a jailed command a private /tmp and Landlock leaves the shared ones writable, so an
    /// "outside" file under /tmp could not show an escape. Its name is short: the tests bind
    /// Unix sockets inside, whose paths must fit in 108 bytes.
    pub fn outside_temp() -> Dir {
        Dir::under(&outside_temp_root(), "jail")
    }

    /// A fresh directory in `root`, unique by process id and a counter; `label` (the test's
    /// name) is for a reader of a leftover tree.
    fn under(root: &Path, label: &str) -> Dir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = root.join(format!("reasonix-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        Dir {
            path: path.canonicalize().expect("canonical temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    /// Writes `content` to `rel`, creating parent directories.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, content).expect("write file");
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).expect("read file")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A directory outside the shared temp directories for the jail tests: the first of
/// `REASONIX_TEST_OUTSIDE_TMP`, cargo's target tmp dir, `$HOME/.cache`, `$XDG_RUNTIME_DIR` and
/// `/var/cache` that is outside them and can be created. A clone and a HOME both under /tmp
/// (as CI may have) leave the last two; with none usable the tests stop with one line saying
/// what to set.
fn outside_temp_root() -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let shared = |p: &Path| {
            ["/tmp", "/var/tmp", "/dev/shm"]
                .iter()
                .any(|t| p.starts_with(t))
        };
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        let candidates = [
            var("REASONIX_TEST_OUTSIDE_TMP"),
            Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
            var("HOME").map(|home| home.join(".cache/reasonix-sandbox-tests")),
            var("XDG_RUNTIME_DIR").map(|run| run.join("reasonix-sandbox-tests")),
            Some(PathBuf::from(format!(
                "/var/cache/reasonix-sandbox-tests-{uid}"
            ))),
        ];
        candidates
            .into_iter()
            .flatten()
            .filter(|dir| dir.is_absolute() && !shared(dir))
            .find(|dir| std::fs::create_dir_all(dir).is_ok() && writable(dir))
            .unwrap_or_else(|| {
                panic!(
                    "the sandbox tests need a writable directory outside /tmp, /var/tmp and \
                     /dev/shm (the clone, HOME, XDG_RUNTIME_DIR and /var/cache gave none): set \
                     REASONIX_TEST_OUTSIDE_TMP=DIR to one"
                )
            })
    })
    .clone()
}

/// Whether a file can be created in `dir` (`create_dir_all` succeeds on an existing
/// directory that is read-only to us).
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Path of the binary under test, built by cargo for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_reasonix"))
}

/// A `reasonix` invocation with HOME and REASONIX_HOME inside `home`, the working directory
/// `cwd`, and no provider keys or proxies inherited from the developer's shell.
pub fn reasonix(home: &Dir, cwd: &Path) -> Command {
    reasonix_binary(&bin(), home, cwd)
}

/// [`reasonix`] for another build of the binary (the static musl one in benches).
pub fn reasonix_binary(binary: &Path, home: &Dir, cwd: &Path) -> Command {
    let mut cmd = Command::new(binary);
    cmd.current_dir(cwd)
        .env("HOME", home.path())
        .env("REASONIX_HOME", home.join(".reasonix"))
        .env_remove("REASONIX_LOG")
        .env_remove("NO_COLOR")
        // English whatever the machine's locale; a test of the Chinese UI overrides it.
        .env("REASONIX_LANG", "en")
        .stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().to_string();
        let upper = key.to_ascii_uppercase();
        if upper.ends_with("_API_KEY") || upper.ends_with("_PROXY") || upper.starts_with("SSL_CERT")
        {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// The finished process with its output decoded, for readable assertions.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(cmd: &mut Command) -> Run {
    cmd.output().expect("spawn reasonix").into()
}

/// Starts `cmd` with its standard input, output and error piped to the test.
pub fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn reasonix")
}

/// Runs `cmd` with `stdin` written to its standard input, which is then closed.
pub fn run_with_stdin(cmd: &mut Command, stdin: &str) -> Run {
    let mut child = spawn_piped(cmd);
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait for reasonix").into()
}

/// The plain line chat: `reasonix chat <args>` in `cwd` with `stdin` piped in and the fake
/// provider's key set.
pub fn piped_chat(home: &Dir, cwd: &Path, args: &[&str], stdin: &str) -> Run {
    run_with_stdin(
        reasonix(home, cwd)
            .arg("chat")
            .args(args)
            .env("FAKE_API_KEY", "k"),
        stdin,
    )
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

pub mod fake_openai;
pub mod http_proxy;
pub mod pty;
pub mod vt;

/// Writes a user config whose only provider is the fake server at `base_url`, with
/// `extra` TOML appended (top-level keys must come before any table in `extra`).
pub fn use_fake_provider(home: &Dir, base_url: &str, extra: &str) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n{extra}\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n\n[environment]\nenabled = false\n"
        ),
    );
}

/// A copy of the program at `program` inside `dir`, for a test whose jailed shell script runs
/// it by path: bubblewrap gives the jail a private `/tmp`, so a binary in a checkout under the
/// host's `/tmp` (CI may clone there) is not visible inside, while the workspace is.
pub fn copy_into(program: &str, dir: &Path) -> PathBuf {
    let target = dir.join(Path::new(program).file_name().expect("a file name"));
    std::fs::copy(program, &target).expect("copy the program");
    target
}

/// Every session file under `home`, most recently written last.
pub fn session_files(home: &Dir) -> Vec<PathBuf> {
    let projects = home.join(".reasonix/projects");
    let mut files = Vec::new();
    for project in std::fs::read_dir(projects).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(project.path().join("sessions"))
            .into_iter()
            .flatten()
            .flatten()
        {
            files.push(entry.path());
        }
    }
    files.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    files
}

/// Parses a session file into (header, messages).
pub fn read_session(path: &Path) -> (serde_json::Value, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(path).expect("read session");
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("session line is JSON"));
    let header = lines.next().expect("session header");
    (header, lines.collect())
}

/// Every file under `dir`, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A `$BROWSER` that writes the URL it is given to a file (atomically, by a rename).
pub fn recording_browser(home: &Dir) -> (PathBuf, PathBuf) {
    let script = home.join("browser");
    let opened = home.join("opened-url");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{}.tmp' && mv '{0}.tmp' '{0}'\n",
            opened.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, opened)
}

/// The URL the browser was given, once it has been.
pub fn opened_url(opened: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Ok(url) = std::fs::read_to_string(opened) {
            return url;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the browser was never opened"
        );
        std::thread::yield_now();
    }
}
