//! Escape attempts against the sandbox with real files and real processes: the file tools'
//! confinement (symlinked directories, `..`, absolute paths, dangling symlinks, hard links,
//! move_file in both directions, hidden paths) and the bash jail under every backend that works
//! on this machine (bubblewrap and Landlock), including bwrap hidden from PATH. Every attempt
//! must fail closed and leave the outside file untouched; each jail test also runs a control
//! that must succeed, so a jail that merely breaks everything cannot pass.
//!
//! The scene lives under Cargo's target tmp dir, not under /tmp: bwrap gives commands a private
//! /tmp and Landlock lets them write the shared one, so an "outside" directory under /tmp would
//! prove nothing. Where a backend is unusable the tests print why and skip it, except when
//! `REASONIX_REQUIRE_SANDBOX` is set (CI sets it after installing bubblewrap): then a missing
//! backend is a failure.

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use reasonix::cancel::CancelToken;
use reasonix::sandbox::process::{self, CommandSpec, Stop};
use reasonix::sandbox::{
    describe_backend_on, sys, Backend, BashMode, Host, Jail, Policy, SandboxError, Settings,
};
use reasonix::tool::{builtin, ToolContext, ToolError};

use crate::util::Dir;

pub(crate) const ORIGINAL: &str = "original outside content\n";
const SECRET: &str = "TOPSECRET-KEY-4242";
const ENV_SECRET: &str = "TOPSECRET-ENV-9191";

/// A workspace, a reasonix home, a directory outside both with a victim file, and a hidden
/// directory holding a secret; all removed on drop.
pub(crate) struct Scene {
    pub(crate) base: Dir,
    pub(crate) ws: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) secrets: PathBuf,
}

impl Scene {
    pub(crate) fn new() -> Scene {
        // Not under a temp directory: see `Dir::outside_temp`.
        let base = Dir::outside_temp();
        let scene = Scene {
            ws: base.join("ws"),
            home: base.join("home"),
            outside: base.join("outside"),
            secrets: base.join("secrets"),
            base,
        };
        for dir in [&scene.ws, &scene.home, &scene.outside, &scene.secrets] {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(scene.victim_path(), ORIGINAL).unwrap();
        fs::write(scene.secrets.join("key"), SECRET).unwrap();
        fs::write(scene.home.join(".env"), format!("SOME_KEY={ENV_SECRET}\n")).unwrap();
        scene
    }

    pub(crate) fn victim_path(&self) -> PathBuf {
        self.outside.join("victim.txt")
    }

    /// The victim file's content; every test ends by checking it is still [`ORIGINAL`].
    pub(crate) fn victim(&self) -> String {
        fs::read_to_string(self.victim_path()).unwrap()
    }

    pub(crate) fn policy(&self, bash: BashMode, backend: Backend, network: bool) -> Policy {
        Policy::new(Settings {
            workspace_root: self.ws.clone(),
            home: self.home.clone(),
            allow_write: Vec::new(),
            forbid_read: vec![self.secrets.clone()],
            bash,
            network,
            backend,
        })
    }

    pub(crate) fn ctx(&self, policy: Policy) -> ToolContext {
        let mut ctx = ToolContext::new(self.ws.clone());
        ctx.sandbox = Arc::new(policy);
        ctx
    }

    /// A context for the file tools (bash jailed by whatever works).
    fn files(&self) -> ToolContext {
        self.ctx(self.policy(BashMode::Enforce, Backend::Auto, false))
    }
}

pub(crate) fn call(ctx: &ToolContext, name: &str, args: Value) -> Result<String, ToolError> {
    let tool = builtin::all()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no built-in tool {name}"));
    tool.execute(&args, ctx)
}

/// The refusal text of a call that must fail.
fn refused(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn assert_outside_refusal(text: &str) {
    assert!(
        text.contains("is outside the workspace") && text.contains("allow_write"),
        "unexpected refusal: {text}"
    );
}

pub(crate) fn bash(ctx: &ToolContext, command: &str) -> String {
    match call(ctx, "bash", json!({ "command": command })) {
        Ok(text) => text,
        Err(e) => panic!("bash refused to run {command:?}: {e}"),
    }
}

/// The jails that work here. A missing one is skipped with a message, or fails when
/// `REASONIX_REQUIRE_SANDBOX` is set.
pub(crate) fn jails() -> Vec<Backend> {
    let host = Host::current();
    let mut usable = Vec::new();
    match &host.bwrap {
        Ok(_) => usable.push(Backend::Bwrap),
        Err(why) => missing("bwrap", why),
    }
    match &host.landlock {
        Ok(_) => usable.push(Backend::Landlock),
        Err(why) => missing("landlock", why),
    }
    eprintln!(
        "sandbox escape tests run under: {:?}",
        usable.iter().map(|b| b.name()).collect::<Vec<_>>()
    );
    usable
}

fn missing(backend: &str, why: &str) {
    if std::env::var_os("REASONIX_REQUIRE_SANDBOX").is_some() {
        panic!("REASONIX_REQUIRE_SANDBOX is set but the {backend} backend is unusable: {why}");
    }
    eprintln!("warning: {backend} escape tests skipped: {why} (install bubblewrap to run them)");
}

// ---------------------------------------------------------------------------------------------
// File tools

#[test]
fn writers_refuse_a_symlinked_directory_pointing_outside() {
    let s = Scene::new();
    let ctx = s.files();
    symlink(&s.outside, s.ws.join("link")).unwrap();
    let text = refused(call(
        &ctx,
        "write_file",
        json!({"path": "link/victim.txt", "content": "pwned"}),
    ));
    assert_outside_refusal(&text);
    refused(call(
        &ctx,
        "write_file",
        json!({"path": "link/new.txt", "content": "pwned"}),
    ));
    refused(call(
        &ctx,
        "edit_file",
        json!({"path": "link/victim.txt", "old_string": "original", "new_string": "pwned"}),
    ));
    refused(call(
        &ctx,
        "multi_edit",
        json!({"path": "link/victim.txt", "edits": [{"old_string": "original", "new_string": "pwned"}]}),
    ));
    assert_eq!(s.victim(), ORIGINAL);
    assert!(!s.outside.join("new.txt").exists());
}

#[test]
fn writers_refuse_dot_dot_traversal_and_absolute_paths() {
    let s = Scene::new();
    let ctx = s.files();
    let up = "../".repeat(s.ws.components().count());
    let relative = format!(
        "{up}{}",
        s.victim_path().strip_prefix("/").unwrap().display()
    );
    for path in [
        relative,
        "sub/../../outside/victim.txt".to_string(),
        s.victim_path().display().to_string(),
    ] {
        let text = refused(call(
            &ctx,
            "write_file",
            json!({"path": path, "content": "pwned"}),
        ));
        assert_outside_refusal(&text);
    }
    assert_eq!(
        refused(call(
            &ctx,
            "write_file",
            json!({"path": "/etc/passwd", "content": "x"})
        )),
        format!(
            "sandbox: path /etc/passwd is outside the workspace {} and the allowed write roots; \
             [sandbox] allow_write can add a root",
            s.ws.display()
        )
    );
    assert_eq!(s.victim(), ORIGINAL);
    // Control: the workspace is writable, and `..` that stays inside is fine.
    call(
        &ctx,
        "write_file",
        json!({"path": "sub/../inside.txt", "content": "ok"}),
    )
    .unwrap();
    assert_eq!(fs::read_to_string(s.ws.join("inside.txt")).unwrap(), "ok");
    // The reasonix home is the user's, never a write root.
    let in_home = s.home.join("notes.md");
    let text = refused(call(
        &ctx,
        "write_file",
        json!({"path": in_home, "content": "ok"}),
    ));
    assert!(text.contains("reasonix home"), "{text}");
    assert!(!in_home.exists());
}

#[test]
fn a_dangling_symlink_created_in_the_workspace_cannot_be_written_through() {
    let s = Scene::new();
    let ctx = s.files();
    let target = s.outside.join("created.txt");
    // Created by a tool that may write the workspace, as a model would try it.
    symlink(&target, s.ws.join("dangling")).unwrap();
    assert_outside_refusal(&refused(call(
        &ctx,
        "write_file",
        json!({"path": "dangling", "content": "pwned"}),
    )));
    // A chain: a dangling link to a link that dangles outside.
    symlink("dangling", s.ws.join("chain")).unwrap();
    refused(call(
        &ctx,
        "write_file",
        json!({"path": "chain", "content": "pwned"}),
    ));
    assert!(!target.exists(), "the write went through the dangling link");
    assert!(fs::symlink_metadata(s.ws.join("dangling"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Control: a dangling link that stays inside is written through, and the link survives.
    symlink(s.ws.join("later.txt"), s.ws.join("inner-link")).unwrap();
    call(
        &ctx,
        "write_file",
        json!({"path": "inner-link", "content": "ok"}),
    )
    .unwrap();
    assert_eq!(fs::read_to_string(s.ws.join("later.txt")).unwrap(), "ok");
}

#[test]
fn writing_a_hard_link_replaces_the_link_and_leaves_the_outside_file_untouched() {
    let s = Scene::new();
    let ctx = s.files();
    fs::hard_link(s.victim_path(), s.ws.join("hard.txt")).unwrap();
    assert_eq!(fs::metadata(s.victim_path()).unwrap().nlink(), 2);
    call(
        &ctx,
        "write_file",
        json!({"path": "hard.txt", "content": "new content\n"}),
    )
    .unwrap();
    assert_eq!(s.victim(), ORIGINAL);
    assert_eq!(
        fs::read_to_string(s.ws.join("hard.txt")).unwrap(),
        "new content\n"
    );
    assert_eq!(fs::metadata(s.victim_path()).unwrap().nlink(), 1);

    fs::remove_file(s.ws.join("hard.txt")).unwrap();
    fs::hard_link(s.victim_path(), s.ws.join("hard.txt")).unwrap();
    call(
        &ctx,
        "edit_file",
        json!({"path": "hard.txt", "old_string": "original", "new_string": "edited"}),
    )
    .unwrap();
    assert_eq!(s.victim(), ORIGINAL);
    assert_eq!(
        fs::read_to_string(s.ws.join("hard.txt")).unwrap(),
        "edited outside content\n"
    );
}

#[test]
fn move_file_refuses_an_outside_destination_or_source() {
    let s = Scene::new();
    let ctx = s.files();
    fs::write(s.ws.join("a.txt"), "mine").unwrap();
    symlink(&s.outside, s.ws.join("link")).unwrap();
    for destination in [
        s.outside.join("a.txt").display().to_string(),
        "link/a.txt".to_string(),
        "../outside/a.txt".to_string(),
    ] {
        assert_outside_refusal(&refused(call(
            &ctx,
            "move_file",
            json!({"source_path": "a.txt", "destination_path": destination}),
        )));
    }
    assert!(s.ws.join("a.txt").exists());
    assert!(!s.outside.join("a.txt").exists());
    // Moving a file in from outside removes it from a directory we may not change.
    assert_outside_refusal(&refused(call(
        &ctx,
        "move_file",
        json!({"source_path": s.victim_path(), "destination_path": "stolen.txt"}),
    )));
    assert_outside_refusal(&refused(call(
        &ctx,
        "move_file",
        json!({"source_path": "link/victim.txt", "destination_path": "stolen.txt"}),
    )));
    // The workspace root itself cannot be moved away either.
    refused(call(
        &ctx,
        "move_file",
        json!({"source_path": s.ws, "destination_path": "inner"}),
    ));
    assert_eq!(s.victim(), ORIGINAL);
    assert!(!s.ws.join("stolen.txt").exists());
    // Control: a move inside the workspace, and moving a symlink (not its target) inside.
    call(
        &ctx,
        "move_file",
        json!({"source_path": "link", "destination_path": "sub/link"}),
    )
    .unwrap();
    assert!(fs::symlink_metadata(s.ws.join("sub/link")).is_ok());
}

#[test]
fn hidden_paths_cannot_be_read_or_changed_by_the_file_tools() {
    let s = Scene::new();
    let ctx = s.files();
    symlink(&s.secrets, s.ws.join("peek")).unwrap();
    let key = s.secrets.join("key");
    for path in [
        key.display().to_string(),
        "peek/key".to_string(),
        s.home.join(".env").display().to_string(),
    ] {
        let text = refused(call(&ctx, "read_file", json!({ "path": path })));
        assert!(
            text.contains("forbid_read") || text.contains("a secret of the reasonix home"),
            "{text}"
        );
        assert!(!text.contains(SECRET) && !text.contains(ENV_SECRET));
    }
    // The home is writable, but its .env may neither be edited (which would reveal it) nor
    // overwritten.
    let env = s.home.join(".env");
    refused(call(
        &ctx,
        "edit_file",
        json!({"path": env, "old_string": "SOME", "new_string": "X"}),
    ));
    refused(call(
        &ctx,
        "write_file",
        json!({"path": env, "content": "x"}),
    ));
    assert!(fs::read_to_string(&env).unwrap().contains(ENV_SECRET));
    // A directory that holds a hidden path cannot be moved out from over it.
    let policy = Policy::new(Settings {
        forbid_read: vec![s.ws.join("conf/key")],
        ..settings(&s)
    });
    fs::create_dir_all(s.ws.join("conf")).unwrap();
    fs::write(s.ws.join("conf/key"), SECRET).unwrap();
    let ctx = s.ctx(policy);
    let text = refused(call(
        &ctx,
        "move_file",
        json!({"source_path": "conf", "destination_path": "conf2"}),
    ));
    assert!(text.contains("forbid_read"), "{text}");
    assert!(s.ws.join("conf/key").exists());
    // Control: an ordinary file outside the workspace is readable.
    assert!(call(&ctx, "read_file", json!({"path": s.victim_path()}))
        .unwrap()
        .contains("original"));
}

fn settings(s: &Scene) -> Settings {
    Settings {
        workspace_root: s.ws.clone(),
        home: s.home.clone(),
        allow_write: Vec::new(),
        forbid_read: vec![s.secrets.clone()],
        bash: BashMode::Enforce,
        network: false,
        backend: Backend::Auto,
    }
}

#[test]
fn allow_write_adds_a_root() {
    let s = Scene::new();
    let ctx = s.ctx(Policy::new(Settings {
        allow_write: vec![s.outside.clone()],
        ..settings(&s)
    }));
    call(
        &ctx,
        "write_file",
        json!({"path": s.outside.join("ok.txt"), "content": "ok"}),
    )
    .unwrap();
    assert!(s.outside.join("ok.txt").exists());
}

#[test]
fn writers_follow_a_symlinked_directory_that_stays_inside() {
    let s = Scene::new();
    let ctx = s.files();
    fs::create_dir_all(s.ws.join("real")).unwrap();
    symlink("real", s.ws.join("alias")).unwrap();
    symlink(s.ws.join("real"), s.ws.join("absolute-alias")).unwrap();
    call(
        &ctx,
        "write_file",
        json!({"path": "alias/new/a.txt", "content": "one two\n"}),
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(s.ws.join("real/new/a.txt")).unwrap(),
        "one two\n"
    );
    call(
        &ctx,
        "edit_file",
        json!({"path": "absolute-alias/new/a.txt", "old_string": "one", "new_string": "1"}),
    )
    .unwrap();
    call(
        &ctx,
        "multi_edit",
        json!({"path": "alias/new/a.txt", "edits": [{"old_string": "two", "new_string": "2"}]}),
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(s.ws.join("real/new/a.txt")).unwrap(),
        "1 2\n"
    );
    call(
        &ctx,
        "move_file",
        json!({"source_path": "alias/new/a.txt", "destination_path": "absolute-alias/b.txt"}),
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(s.ws.join("real/b.txt")).unwrap(),
        "1 2\n"
    );
    assert!(!s.ws.join("real/new/a.txt").exists());
    for link in ["alias", "absolute-alias"] {
        assert!(fs::symlink_metadata(s.ws.join(link))
            .unwrap()
            .file_type()
            .is_symlink());
    }
    assert_eq!(s.victim(), ORIGINAL);
}

// ---------------------------------------------------------------------------------------------
// Races between the check and the write: a process that may write the workspace (a jailed bash
// command) swaps a real directory `d` with a symlink `d2 -> outside` while the tools run.

/// How many tool calls each race test makes. The check-then-write code this replaced let a
/// write escape within the first few hundred.
const RACE_ATTEMPTS: usize = 2_000;

/// What the tools say when a swap was caught during the write.
const CHANGED: &str = "the path changed while it was being written";

/// A thread exchanging `ws/d` and `ws/d2` with renameat2(RENAME_EXCHANGE) until stopped.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(ws: &Path) -> Swapper {
        let dir = sys::Dir::open(ws).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("swapper".into())
            .spawn(move || {
                let mut swaps = 0;
                while !flag.load(Ordering::Relaxed) {
                    dir.rename("d".as_ref(), &dir, "d2".as_ref(), sys::Rename::Exchange)
                        .expect("exchange d and d2");
                    swaps += 1;
                }
                swaps
            })
            .unwrap();
        Swapper {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the thread and returns how many swaps it made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A scene with a real directory `ws/d` holding `victim.txt` (the same name as the outside
/// victim) and a symlink `ws/d2 -> outside`, for [`RaceScene::run`].
struct RaceScene {
    s: Scene,
    ctx: ToolContext,
    /// The real directory, held open so the test can reach it whatever it is called now.
    real: fs::File,
}

const INSIDE: &str = "original inside content\n";

impl RaceScene {
    fn new() -> RaceScene {
        let s = Scene::new();
        fs::create_dir(s.ws.join("d")).unwrap();
        fs::write(s.ws.join("d/victim.txt"), INSIDE).unwrap();
        symlink(&s.outside, s.ws.join("d2")).unwrap();
        let real = fs::File::open(s.ws.join("d")).unwrap();
        let ctx = s.files();
        RaceScene { s, ctx, real }
    }

    /// `name` in the real directory, through `/proc/self/fd`, so no swap can redirect it.
    fn real_path(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/{name}", self.real.as_raw_fd()))
    }

    /// Why the outside directory no longer holds exactly the untouched victim, if it does not.
    fn outside_changed(&self) -> Option<String> {
        let mut names: Vec<String> = fs::read_dir(&self.s.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        if names != ["victim.txt"] {
            return Some(format!("the outside directory holds {names:?}"));
        }
        let content = self.s.victim();
        (content != ORIGINAL).then(|| format!("the outside victim now reads {content:?}"))
    }

    /// Calls `attempt` [`RACE_ATTEMPTS`] times while a [`Swapper`] runs. Fails at the first
    /// attempt after which anything outside changed, when a failure is not a clean refusal
    /// (the check saw the symlink, or the write saw the swap), and when no attempt succeeded
    /// (a tool that refuses everything must not pass).
    fn run(&self, mut attempt: impl FnMut(usize) -> Result<String, ToolError>) {
        let swapper = Swapper::start(&self.s.ws);
        let mut succeeded = 0;
        let mut escaped = None;
        let mut unexpected = Vec::new();
        for i in 0..RACE_ATTEMPTS {
            let result = attempt(i);
            if let Some(why) = self.outside_changed() {
                escaped = Some((i + 1, why));
                break;
            }
            match result {
                Ok(_) => succeeded += 1,
                Err(ToolError::Failed(text))
                    if text.contains("is outside the workspace") || text.contains(CHANGED) => {}
                Err(other) => unexpected.push(other.to_string()),
            }
        }
        let swaps = swapper.stop();
        if let Some((attempt, why)) = escaped {
            panic!("attempt {attempt} of {RACE_ATTEMPTS} wrote outside the workspace: {why}");
        }
        eprintln!("race: {succeeded} of {RACE_ATTEMPTS} attempts succeeded during {swaps} swaps");
        assert!(
            unexpected.is_empty(),
            "failures other than clean refusals: {unexpected:?}"
        );
        assert!(succeeded > 0, "no attempt succeeded during {swaps} swaps");
    }
}

#[test]
fn write_file_racing_a_directory_symlink_swap_never_writes_outside() {
    let r = RaceScene::new();
    r.run(|i| {
        call(
            &r.ctx,
            "write_file",
            json!({"path": "d/victim.txt", "content": format!("attempt {i}\n")}),
        )
    });
    // A new file in a new subdirectory of the swapped directory takes more steps.
    r.run(|i| {
        call(
            &r.ctx,
            "write_file",
            json!({"path": format!("d/new-{i}/file.txt"), "content": "new\n"}),
        )
    });
    assert!(fs::read_to_string(r.real_path("victim.txt"))
        .unwrap()
        .starts_with("attempt "));
}

#[test]
fn edit_file_racing_a_directory_symlink_swap_never_writes_outside() {
    let r = RaceScene::new();
    r.run(|_| {
        call(
            &r.ctx,
            "edit_file",
            json!({"path": "d/victim.txt", "old_string": "content", "new_string": "content+"}),
        )
    });
    assert!(fs::read_to_string(r.real_path("victim.txt"))
        .unwrap()
        .contains("content+"));
}

#[test]
fn multi_edit_racing_a_directory_symlink_swap_never_writes_outside() {
    let r = RaceScene::new();
    r.run(|_| {
        call(
            &r.ctx,
            "multi_edit",
            json!({"path": "d/victim.txt", "edits": [
                {"old_string": "content", "new_string": "content+"},
                {"old_string": "content+", "new_string": "content++"}
            ]}),
        )
    });
    assert!(fs::read_to_string(r.real_path("victim.txt"))
        .unwrap()
        .contains("content+"));
}

#[test]
fn move_file_racing_a_directory_symlink_swap_never_moves_outside_entries() {
    let r = RaceScene::new();
    // As the source: the outside victim must not be pulled into the workspace.
    r.run(|i| {
        fs::write(r.real_path("victim.txt"), INSIDE).unwrap();
        call(
            &r.ctx,
            "move_file",
            json!({"source_path": "d/victim.txt", "destination_path": format!("moved-{i}.txt")}),
        )
    });
    // As the destination: nothing may be moved into the outside directory.
    r.run(|i| {
        let name = format!("a-{i}.txt");
        fs::write(r.s.ws.join(&name), "mine\n").unwrap();
        call(
            &r.ctx,
            "move_file",
            json!({"source_path": name, "destination_path": format!("d/{name}")}),
        )
    });
}

// ---------------------------------------------------------------------------------------------
// The bash jail

#[test]
fn jailed_bash_cannot_write_outside_but_works_inside() {
    for backend in jails() {
        let s = Scene::new();
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        symlink(&s.outside, s.ws.join("link")).unwrap();
        let victim = s.victim_path();
        let attempts = [
            format!("echo pwned > {}", victim.display()),
            format!("echo pwned >> {}", victim.display()),
            "echo pwned > link/victim.txt".to_string(),
            format!("touch {}/new.txt", s.outside.display()),
            format!("rm -f {}", victim.display()),
            format!("mv {} stolen.txt", victim.display()),
            format!("ln -s {} {}/link-out", s.ws.display(), s.outside.display()),
            format!("ln {} hard.txt && echo pwned > hard.txt", victim.display()),
            format!("cd {} && echo pwned > ../outside/dots.txt", s.ws.display()),
        ];
        for attempt in &attempts {
            let text = bash(&ctx, attempt);
            assert!(
                !text.ends_with("[exit code: 0]"),
                "{}: `{attempt}` succeeded: {text}",
                backend.name()
            );
        }
        assert_eq!(s.victim(), ORIGINAL, "{}", backend.name());
        let leftovers: Vec<_> = fs::read_dir(&s.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec!["victim.txt"], "{}", backend.name());

        // Control: ordinary work inside the workspace, /tmp and /dev/null.
        let text = bash(
            &ctx,
            "echo ok > inside.txt && mkdir -p d/e && mv inside.txt d/e/ && cat d/e/inside.txt \
             && t=$(mktemp) && echo tmp > \"$t\" && cat \"$t\" && echo quiet > /dev/null \
             && ls / > /dev/null && echo done > /dev/stdout",
        );
        assert_eq!(text, "ok\ntmp\ndone\n[exit code: 0]", "{}", backend.name());
        eprintln!(
            "{}: {} write escapes refused",
            backend.name(),
            attempts.len()
        );
    }
}

#[test]
fn jailed_bash_cannot_read_hidden_files() {
    for backend in jails() {
        let s = Scene::new();
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        symlink(&s.secrets, s.ws.join("peek")).unwrap();
        for attempt in [
            format!("cat {}/key", s.secrets.display()),
            "cat peek/key".to_string(),
            format!("cat {}/.env", s.home.display()),
            format!("cp {}/key copied && cat copied", s.secrets.display()),
            format!("grep -r TOPSECRET {}", s.base.path().display()),
            format!("cat /proc/1/root{}/key", s.secrets.display()),
            format!("cat /proc/self/root{}/.env", s.home.display()),
            format!("mv {}/.env leaked; cat leaked", s.home.display()),
            format!("ln {}/.env hardlinked; cat hardlinked", s.home.display()),
        ] {
            let text = bash(&ctx, &attempt);
            assert!(
                !text.contains(SECRET) && !text.contains(ENV_SECRET),
                "{}: `{attempt}` revealed a secret: {text}",
                backend.name()
            );
        }
        let env = fs::read_to_string(s.home.join(".env")).unwrap();
        assert!(
            env.contains(ENV_SECRET),
            "{}: .env was moved",
            backend.name()
        );
        // Control: an ordinary file outside the workspace is readable.
        let text = bash(&ctx, &format!("cat {}", s.victim_path().display()));
        assert_eq!(
            text,
            format!("{ORIGINAL}[exit code: 0]"),
            "{}",
            backend.name()
        );
    }
}

/// Connects from bash to a listener in this process; true when bash reports a connection.
fn bash_connects(ctx: &ToolContext, listener: &TcpListener) -> bool {
    let port = listener.local_addr().unwrap().port();
    let text = bash(
        ctx,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    );
    text.contains("connected\n")
}

#[test]
fn jailed_bash_cannot_reach_a_loopback_listener_unless_the_network_is_allowed() {
    for backend in jails() {
        let s = Scene::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();

        let closed = s.ctx(s.policy(BashMode::Enforce, backend, false));
        assert!(
            !bash_connects(&closed, &listener),
            "{}: connected with the network off",
            backend.name()
        );
        // Nothing reached the listener (the connection would be queued by now).
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            ErrorKind::WouldBlock,
            "{}",
            backend.name()
        );

        let open = s.ctx(s.policy(BashMode::Enforce, backend, true));
        assert!(
            bash_connects(&open, &listener),
            "{}: control with network = true did not connect",
            backend.name()
        );
        assert!(listener.accept().is_ok(), "{}", backend.name());
    }
}

#[test]
fn jailed_bash_does_not_receive_secret_variables() {
    let name = ["CARGO_MANIFEST_DIR", "HOME", "USER"]
        .into_iter()
        .find(|name| std::env::var_os(name).is_some())
        .expect("the test environment has CARGO_MANIFEST_DIR, HOME or USER");
    for backend in jails() {
        let s = Scene::new();
        let mut ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        ctx.secret_env = Arc::new(vec![name.to_string()]);
        assert_eq!(
            bash(&ctx, &format!("echo \"${{{name}-unset}}\" $TERM")),
            "unset dumb\n[exit code: 0]",
            "{}",
            backend.name()
        );
    }
}

#[test]
fn a_timed_out_jailed_command_leaves_nothing_running() {
    for backend in jails() {
        let s = Scene::new();
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        // A unique argument finds the sleeper in /proc whatever PID namespace it runs in.
        let marker = format!("31{}.{}", std::process::id(), backend.name().len());
        let started = Instant::now();
        let text = call(
            &ctx,
            "bash",
            json!({"command": format!("sleep {marker} & sleep {marker}"), "timeout": 1}),
        )
        .unwrap();
        assert!(text.contains("[timed out after 1s"), "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "took {:?}",
            started.elapsed()
        );
        assert!(
            gone_soon(&marker),
            "{}: a sleeper survived the timeout",
            backend.name()
        );
    }
}

/// Polls (bounded) because the kernel delivers the kills asynchronously after the runner
/// returned; this is not synchronisation with the code under test.
pub(crate) fn gone_soon(marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if !running_with_arg(marker) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

pub(crate) fn running_with_arg(marker: &str) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            return false;
        };
        let alive = fs::read_to_string(entry.path().join("stat"))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false);
        alive
            && cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == marker.as_bytes())
    })
}

#[test]
fn with_bwrap_hidden_from_path_auto_falls_back_to_landlock() {
    if let Err(why) = &Host::current().landlock {
        missing("landlock", why);
        return;
    }
    // The real PATH without any directory that holds bwrap.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let without: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !dir.join("bwrap").exists())
        .collect();
    let without = std::env::join_paths(without).unwrap();
    let host = Host::probe(Some(&without));
    assert!(host.bwrap.is_err(), "{host:?}");

    let s = Scene::new();
    let policy = s.policy(BashMode::Enforce, Backend::Auto, false);
    assert_eq!(
        policy
            .select(&host)
            .unwrap()
            .map(|j| matches!(j, Jail::Landlock(_))),
        Some(true)
    );
    let report = describe_backend_on(&policy, &host);
    assert_eq!(report.active, Some(Backend::Landlock), "{report:?}");
    assert!(
        report.reason.contains("bubblewrap is unusable"),
        "{report:?}"
    );

    let run = |script: &str| {
        let mut spec = CommandSpec::new("/bin/sh", &s.ws);
        spec.args = vec!["-c".into(), script.into()];
        spec.timeout = Some(Duration::from_secs(60));
        let spec = policy.confine_command_on(spec, &host).unwrap();
        assert!(spec.landlock_ruleset.is_some());
        let finished = process::run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(finished.stopped, None::<Stop>);
        finished
    };
    let escape = run(&format!("echo pwned > {}", s.victim_path().display()));
    assert_ne!(escape.exit, process::Exit::Code(0));
    let peek = run(&format!("cat {}/key", s.secrets.display()));
    assert!(!peek.output.to_text().contains(SECRET));
    let inside = run("echo ok > inside.txt && cat inside.txt");
    assert_eq!(inside.output.to_text(), "ok\n");
    assert_eq!(s.victim(), ORIGINAL);

    // An explicit bwrap backend does not fall back; it refuses, naming the fixes.
    let strict = s.policy(BashMode::Enforce, Backend::Bwrap, false);
    let err = strict
        .confine_command_on(CommandSpec::new("/bin/sh", &s.ws), &host)
        .unwrap_err();
    assert!(matches!(err, SandboxError::BackendUnusable { .. }), "{err}");
    assert!(
        err.to_string().contains("apt-get install bubblewrap"),
        "{err}"
    );
}

#[test]
fn bash_off_runs_unconfined_and_says_so_once() {
    let s = Scene::new();
    let ctx = s.ctx(s.policy(BashMode::Off, Backend::Auto, false));
    let first = bash(&ctx, "echo hi");
    assert!(
        first.starts_with("hi\n[exit code: 0]\n[sandbox: bash runs unconfined"),
        "{first}"
    );
    assert_eq!(bash(&ctx, "echo hi"), "hi\n[exit code: 0]");
    // Unconfined means unconfined: the file tools stay confined, bash does not.
    let outside = s.outside.join("off.txt");
    bash(&ctx, &format!("echo written > {}", outside.display()));
    assert!(outside.exists());
}

#[test]
fn search_tools_neither_list_nor_search_hidden_paths() {
    let s = Scene::new();
    let hidden_inside = s.ws.join("private");
    fs::create_dir_all(&hidden_inside).unwrap();
    fs::write(hidden_inside.join("token.txt"), SECRET).unwrap();
    fs::write(s.ws.join("notes.txt"), "public words\n").unwrap();
    let ctx = s.ctx(Policy::new(Settings {
        forbid_read: vec![s.secrets.clone(), hidden_inside.clone()],
        ..settings(&s)
    }));
    let listing = call(&ctx, "ls", json!({"path": ".", "recursive": true})).unwrap();
    assert!(
        listing.contains("notes.txt") && !listing.contains("private"),
        "{listing}"
    );
    let flat = call(&ctx, "ls", json!({"path": "."})).unwrap();
    assert!(!flat.contains("private"), "{flat}");
    let globbed = call(&ctx, "glob", json!({"pattern": "**/*.txt"})).unwrap();
    assert!(
        globbed.contains("notes.txt") && !globbed.contains("token"),
        "{globbed}"
    );
    let grepped = match call(
        &ctx,
        "grep",
        json!({"pattern": SECRET, "output_mode": "content"}),
    ) {
        Ok(text) | Err(ToolError::Failed(text)) => text,
        other => panic!("{other:?}"),
    };
    assert!(grepped.starts_with("No matches"), "{grepped}");
    for (tool, args) in [
        ("ls", json!({"path": "private"})),
        ("ls", json!({"path": s.secrets})),
        ("glob", json!({"pattern": "*", "path": s.secrets})),
        (
            "grep",
            json!({"pattern": "x", "path": s.secrets.join("key")}),
        ),
    ] {
        let text = refused(call(&ctx, tool, args));
        assert!(text.contains("forbid_read"), "{tool}: {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Secrets at rest and host-shared places (issue 32.2 and 32.7)

#[test]
fn a_home_secret_created_after_the_jail_was_built_stays_hidden() {
    for backend in jails() {
        let s = Scene::new();
        fs::create_dir_all(s.home.join("skills/demo")).unwrap();
        fs::write(s.home.join("skills/demo/SKILL.md"), "SKILL-VISIBLE\n").unwrap();
        // Neither a dangling symlink nor one to a secret may break or open the home's view.
        symlink("/nonexistent-target", s.home.join("dangling")).unwrap();
        symlink(s.home.join(".env"), s.home.join("alias")).unwrap();
        let policy = s.policy(BashMode::Enforce, backend, false);
        let mut spec = CommandSpec::new("/bin/sh", &s.ws);
        spec.args = vec![
            "-c".into(),
            format!(
                "cat {0}/serve-auth.json {0}/mcp-auth/late.json {0}/later.toml {0}/alias; \
                 cat {0}/skills/demo/SKILL.md",
                s.home.display()
            )
            .into(),
        ];
        spec.timeout = Some(Duration::from_secs(60));
        let spec = policy.confine_command(spec).unwrap();
        // The jail is built; the secrets appear afterwards, as when `reasonix serve` starts
        // or an OAuth login finishes while an MCP server keeps running.
        fs::write(s.home.join("serve-auth.json"), "LATE-SECRET-SERVE").unwrap();
        fs::create_dir_all(s.home.join("mcp-auth")).unwrap();
        fs::write(s.home.join("mcp-auth/late.json"), "LATE-SECRET-OAUTH").unwrap();
        fs::write(s.home.join("later.toml"), "LATE-SECRET-ANY").unwrap();
        let text = process::run(&spec, &CancelToken::new())
            .unwrap()
            .output
            .to_text();
        assert!(
            !text.contains("LATE-SECRET") && !text.contains(ENV_SECRET),
            "{}: a secret created after the jail was built is visible: {text}",
            backend.name()
        );
        assert!(text.contains("SKILL-VISIBLE"), "{}: {text}", backend.name());
    }
}

/// A pseudo-terminal of this (host) process, standing for the user's terminal; returns the
/// master descriptor (closed on drop) and the path of its slave side.
fn host_terminal() -> (std::fs::File, PathBuf) {
    use std::os::fd::FromRawFd;
    // SAFETY (test code): posix_openpt returns a descriptor we own; grantpt, unlockpt and
    // ptsname_r only read it and write into the buffer we pass with its length.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = std::fs::File::from_raw_fd(fd);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let name = std::ffi::CStr::from_ptr(name.as_ptr());
        (master, PathBuf::from(name.to_string_lossy().into_owned()))
    }
}

#[test]
fn a_read_only_child_cannot_write_host_temp_dirs_or_terminals() {
    let (_master, pts) = host_terminal();
    for backend in jails() {
        let s = Scene::new();
        let policy = s.policy(BashMode::Enforce, backend, false);
        let ctx = s.ctx(policy.fenced(&[]).unwrap());
        let mark = format!("reasonix-escape-{}-{}", std::process::id(), backend.name());
        let planted: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
            .iter()
            .map(|dir| Path::new(dir).join(&mark))
            .collect();
        // bwrap gives the command a /tmp and a /dev/shm of its own, where writing is harmless;
        // Landlock has no mount namespace, so it must refuse them.
        let private = |path: &PathBuf| backend == Backend::Bwrap && !path.starts_with("/var/tmp");
        let mut attempts: Vec<String> = planted
            .iter()
            .filter(|path| !private(path))
            .map(|path| format!("echo pwned > {}", path.display()))
            .collect();
        for path in planted.iter().filter(|path| private(path)) {
            bash(&ctx, &format!("echo pwned > {}", path.display()));
        }
        attempts.push(format!("echo pwned > {}", pts.display()));
        attempts.push(format!("exec 3< {} && echo opened", pts.display()));
        for attempt in &attempts {
            let text = bash(&ctx, attempt);
            assert!(
                !text.ends_with("[exit code: 0]"),
                "{}: `{attempt}` succeeded: {text}",
                backend.name()
            );
        }
        for path in &planted {
            assert!(
                !path.exists(),
                "{}: {} was written on the host",
                backend.name(),
                path.display()
            );
            let _ = fs::remove_file(path);
        }
        // Control: the command's own temp directory works, and lies outside the host's.
        let text = bash(
            &ctx,
            "echo ok > \"$TMPDIR/f\" && cat \"$TMPDIR/f\" && t=$(mktemp) && echo \"$TMPDIR\"",
        );
        assert!(
            text.starts_with("ok\n") && text.ends_with("[exit code: 0]"),
            "{}: {text}",
            backend.name()
        );
        let tmpdir = text.lines().nth(1).unwrap_or("").to_string();
        match backend {
            Backend::Landlock => {
                assert!(
                    Path::new(&tmpdir).starts_with(&s.home),
                    "landlock: TMPDIR {tmpdir} is not under the reasonix home {}",
                    s.home.display()
                );
                drop(ctx);
                drop(policy);
                assert!(
                    !Path::new(&tmpdir).exists(),
                    "landlock: the private TMPDIR {tmpdir} outlived its session"
                );
            }
            _ => assert_eq!(tmpdir, "/tmp", "{}: the private /tmp", backend.name()),
        }
    }
}
