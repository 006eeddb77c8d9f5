//! The jail's second line, under every backend that works here: what a jailed command could
//! still do after the file rules, as reported in the "Jail hardening" issue. Each test runs
//! the attack as a jailed command (the library's bash tool, or the real binary against the
//! loopback fake model where the attacker needs reasonix as its parent) and a control that
//! must succeed, so a test can only pass because the jail stopped the attack:
//! - pushing keystrokes into a host terminal with `TIOCSTI`;
//! - changing metadata outside the workspace (`chown`, `setxattr`; under bubblewrap also
//!   `chmod` and `touch -d`, which Landlock cannot confine and the README says so);
//! - creating a device node (all capabilities kept as root);
//! - reaching a host unix socket (by path and abstract) or UDP on 127.0.0.1 with the network
//!   off;
//! - reading the provider key from reasonix's own `/proc/<pid>/environ`;
//! - outliving reasonix (SIGKILL, a second Ctrl-C) or the command's timeout through a
//!   background job, `setsid` or a double fork.
//!
//! And what must keep working: denials are `EPERM`, `chmod +x` and `touch` in the workspace.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use reasonix::sandbox::{Backend, BashMode};

use crate::sandbox::{bash, call, gone_soon, jails, running_with_arg, Scene, ORIGINAL};
use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, use_fake_provider, Dir};

fn is_root() -> bool {
    // SAFETY (test code): geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A host terminal: the master side and the path and descriptor of its terminal side.
struct HostPty {
    _master: OwnedFd,
    slave: OwnedFd,
    path: String,
}

impl HostPty {
    fn open() -> HostPty {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY (test code): openpty fills two descriptors we then own.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        for fd in [master, slave] {
            // SAFETY (test code): F_SETFD on descriptors we own, so no child inherits them.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // SAFETY (test code): both descriptors are fresh and owned here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let path = fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd()))
            .unwrap()
            .display()
            .to_string();
        HostPty {
            _master: master,
            slave,
            path,
        }
    }

    /// Bytes waiting in the terminal's input queue (complete lines in canonical mode): what a
    /// shell reading this terminal would execute next.
    fn queued(&self) -> i32 {
        let mut n: libc::c_int = 0;
        // SAFETY (test code): FIONREAD writes one int through a pointer valid for the call.
        let rc = unsafe { libc::ioctl(self.slave.as_raw_fd(), libc::FIONREAD, &mut n) };
        assert_eq!(rc, 0, "FIONREAD: {}", std::io::Error::last_os_error());
        n
    }

    fn flush_input(&self) {
        // SAFETY (test code): tcflush on a descriptor we own.
        unsafe { libc::tcflush(self.slave.as_raw_fd(), libc::TCIFLUSH) };
    }
}

const INJECT: &str = "import fcntl, os, sys, termios\n\
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n\
for c in b'echo PWNED\\n':\n    fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))\n\
print('injected')\n";

#[test]
fn jailed_bash_cannot_push_keystrokes_into_a_host_terminal() {
    let pty = HostPty::open();
    let s = Scene::new();
    fs::write(s.ws.join("inject.py"), INJECT).unwrap();
    let attack = format!("python3 inject.py {}", pty.path);
    // Control: unconfined, the same script fills the host terminal's input.
    let off = s.ctx(s.policy(BashMode::Off, Backend::Auto, false));
    let control = bash(&off, &attack);
    if !control.contains("injected\n") {
        assert!(!is_root(), "the control failed as root: {control}");
        eprintln!("warning: TIOCSTI test skipped: needs root here ({control})");
        return;
    }
    assert_eq!(pty.queued(), "echo PWNED\n".len() as i32, "{control}");
    pty.flush_input();
    for backend in jails() {
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        let text = bash(&ctx, &attack);
        assert!(
            !text.contains("injected"),
            "{}: keystrokes were injected: {text}",
            backend.name()
        );
        assert_eq!(pty.queued(), 0, "{}: {text}", backend.name());
    }
}

const SETXATTR: &str = "import os, sys\nos.setxattr(sys.argv[1], 'user.pwned', b'1')\n";

#[test]
fn jailed_bash_cannot_change_metadata_outside_the_workspace() {
    let s = Scene::new();
    fs::write(s.ws.join("setxattr.py"), SETXATTR).unwrap();
    let victim = s.victim_path().display().to_string();
    let attempts = [
        ("chown", format!("chown $(id -u):$(id -g) {victim}")),
        ("setxattr", format!("python3 setxattr.py {victim}")),
        ("chmod", format!("chmod 600 {victim}")),
        ("touch -d", format!("touch -d 2001-01-01 {victim}")),
    ];
    let escaped = |ctx: &reasonix::tool::ToolContext, command: &str| {
        bash(ctx, &format!("{command} && echo ESCAPED"))
    };
    // Control: every attempt works unconfined, so a refusal below is the jail's.
    let off = s.ctx(s.policy(BashMode::Off, Backend::Auto, false));
    for (what, command) in &attempts {
        let text = escaped(&off, command);
        assert!(text.contains("ESCAPED"), "control {what}: {text}");
    }
    fs::write(s.victim_path(), ORIGINAL).unwrap();
    for backend in jails() {
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        for (what, command) in &attempts {
            // Landlock has no right for mode bits and times (documented in the README).
            if backend == Backend::Landlock && matches!(*what, "chmod" | "touch -d") {
                continue;
            }
            let text = escaped(&ctx, command);
            assert!(
                !text.contains("ESCAPED"),
                "{}: {what} outside the workspace succeeded: {text}",
                backend.name()
            );
        }
    }
    assert_eq!(s.victim(), ORIGINAL);
}

#[test]
fn jailed_bash_has_no_capabilities_and_cannot_make_a_device_node() {
    for backend in jails() {
        let s = Scene::new();
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        let text = bash(&ctx, "mknod disk b 7 0 && echo ESCAPED; ls -l disk");
        assert!(
            !text.contains("ESCAPED") && !s.ws.join("disk").exists(),
            "{}: a block device was created: {text}",
            backend.name()
        );
        let status = bash(
            &ctx,
            "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status",
        );
        let fields: Vec<(&str, &str)> = status
            .lines()
            .filter(|l| !l.starts_with('['))
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k, v.trim()))
            .collect();
        let zero = "0000000000000000";
        // bubblewrap drops every capability but leaves the bounding set as it found it; with
        // no_new_privs (and new user namespaces filtered) nothing can be regained from it.
        let bounding = match backend {
            Backend::Bwrap => fields.get(3).map_or("missing", |f| f.1),
            _ => zero,
        };
        assert_eq!(
            fields,
            vec![
                ("CapInh", zero),
                ("CapPrm", zero),
                ("CapEff", zero),
                ("CapBnd", bounding),
                ("CapAmb", zero),
                ("NoNewPrivs", "1"),
                ("Seccomp", "2"),
            ],
            "{}: {status}",
            backend.name()
        );
    }
}

const UNIX_CONNECT: &str = "import socket, sys\n\
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
s.connect(sys.argv[1].replace('@', '\\0', 1))\n\
s.sendall(b'PWNED')\n\
print('connected')\n";

const UNIX_DGRAM: &str = "import socket, sys\n\
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)\n\
a.sendall(b'pair'); assert b.recv(4) == b'pair'\n\
print('socketpair works')\n\
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n\
s.sendto(b'PWNED', sys.argv[1])\n\
print('sent')\n";

#[test]
fn with_the_network_off_jailed_bash_reaches_no_host_socket_unix_or_udp() {
    let s = Scene::new();
    fs::write(s.ws.join("connect.py"), UNIX_CONNECT).unwrap();
    fs::write(s.ws.join("dgram.py"), UNIX_DGRAM).unwrap();
    let stream_path = s.outside.join("host.sock");
    let stream = UnixListener::bind(&stream_path).unwrap();
    stream.set_nonblocking(true).unwrap();
    let abstract_name = format!("reasonix-hardening-{}", std::process::id());
    let abstract_listener = abstract_unix_listener(&abstract_name);
    let dgram_path = s.outside.join("host.dgram");
    let dgram = std::os::unix::net::UnixDatagram::bind(&dgram_path).unwrap();
    dgram.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let port = udp.local_addr().unwrap().port();

    let attacks = [
        format!("python3 connect.py {}", stream_path.display()),
        format!("python3 connect.py @{abstract_name}"),
        format!("python3 dgram.py {}", dgram_path.display()),
        format!("echo PWNED > /dev/udp/127.0.0.1/{port} && echo sent"),
    ];
    for backend in jails() {
        let closed = s.ctx(s.policy(BashMode::Enforce, backend, false));
        for attack in &attacks {
            let text = bash(&closed, attack);
            assert!(
                !text.contains("connected") && !text.contains("sent"),
                "{}: `{attack}` reached the host: {text}",
                backend.name()
            );
        }
        let pair = bash(&closed, &attacks[2]);
        assert!(
            pair.contains("socketpair works"),
            "{}: {pair}",
            backend.name()
        );
        // Nothing arrived: a connection would be queued and a datagram delivered by now; the
        // trailing datagram from this process must be the first UDP one.
        for listener in [&stream, &abstract_listener] {
            let err = listener.accept().map(|_| ()).unwrap_err();
            assert_eq!(
                err.kind(),
                std::io::ErrorKind::WouldBlock,
                "{}",
                backend.name()
            );
        }
        let mut buf = [0u8; 64];
        assert!(dgram.recv(&mut buf).is_err(), "{}", backend.name());
        udp.send_to(b"control", ("127.0.0.1", port)).unwrap();
        let n = udp.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"control", "{}", backend.name());

        // Control: with the network allowed the same path socket and UDP work.
        let open = s.ctx(s.policy(BashMode::Enforce, backend, true));
        let text = bash(&open, &attacks[0]);
        assert!(text.contains("connected"), "{}: {text}", backend.name());
        stream.accept().unwrap();
        let text = bash(&open, &attacks[3]);
        assert!(text.contains("sent"), "{}: {text}", backend.name());
        let n = udp.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"PWNED\n", "{}", backend.name());
    }
}

fn abstract_unix_listener(name: &str) -> UnixListener {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    listener
}

/// A command that leaves a background job, a `setsid` child and a double-forked child, all
/// running `sleep` with a unique argument so they can be found in /proc.
fn escapers(tag: &str) -> (String, [String; 3]) {
    let markers = [1, 2, 3].map(|i| format!("41{}{i}.{tag}", std::process::id()));
    let [a, b, c] = &markers;
    let command = format!("sleep {a} & setsid sleep {b} & (sleep {c} &); sleep 1000");
    (command, markers)
}

#[test]
fn a_stopped_jailed_command_leaves_no_escaped_descendant() {
    for backend in jails() {
        let s = Scene::new();
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        let (command, markers) = escapers(&format!("{}", backend.name().len()));
        let text = call(&ctx, "bash", json!({"command": command, "timeout": 1})).unwrap();
        assert!(text.contains("[timed out after 1s"), "{text}");
        for marker in &markers {
            assert!(
                gone_soon(marker),
                "{}: `sleep {marker}` survived the timeout",
                backend.name()
            );
        }
    }
}

#[test]
fn jailed_denials_are_eperm_and_chmod_and_touch_still_work_inside() {
    let s = Scene::new();
    fs::write(
        s.ws.join("traceme.py"),
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n\
         print('ptrace', libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\n",
    )
    .unwrap();
    let off = s.ctx(s.policy(BashMode::Off, Backend::Auto, false));
    let control = bash(&off, "python3 traceme.py");
    assert!(control.starts_with("ptrace 0 0\n"), "control: {control}");
    for backend in jails() {
        let ctx = s.ctx(s.policy(BashMode::Enforce, backend, false));
        let text = bash(&ctx, "python3 traceme.py");
        assert!(
            text.starts_with(&format!("ptrace -1 {}\n", libc::EPERM)),
            "{}: {text}",
            backend.name()
        );
        let text = bash(&ctx, "touch mine && chown $(id -u) mine");
        assert!(
            text.contains("Operation not permitted"),
            "{}: {text}",
            backend.name()
        );
        let text = bash(
            &ctx,
            "printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod +x run.sh && ./run.sh \
             && touch -d 2001-01-01 run.sh && stat -c %y run.sh | cut -c1-4",
        );
        assert_eq!(text, "ran\n2001\n[exit code: 0]", "{}", backend.name());
    }
}

// ---------------------------------------------------------------------------------------------
// Through the real binary: reasonix is the jailed command's parent.

fn sandbox_extra(backend: Option<Backend>) -> String {
    match backend {
        Some(backend) => format!(
            "[sandbox]\nbash = \"enforce\"\nbackend = \"{}\"\n",
            backend.name()
        ),
        None => "[sandbox]\nbash = \"off\"\n".to_string(),
    }
}

#[test]
fn jailed_bash_cannot_read_the_key_from_the_reasonix_process() {
    for backend in jails() {
        let home = Dir::new();
        let ws = Dir::new();
        let key = "sk-environ-leak-7788";
        let command =
            "tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/[0-9]*/environ | tr '\\0' '\\n' \
             | grep FAKE_API_KEY; cat /proc/$PPID/cmdline; echo; ls -l /proc/$PPID/fd | head -3";
        let args = json!({ "command": command }).to_string();
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "bash", &args)]),
            Reply::text("done"),
        ]);
        use_fake_provider(&home, &server.base_url(), &sandbox_extra(Some(backend)));
        let out = crate::util::run(reasonix(&home, ws.path()).env("FAKE_API_KEY", key).args([
            "run",
            "--permission-mode",
            "yolo",
            "go",
        ]));
        assert_eq!(out.code, 0, "{}: {out:?}", backend.name());
        let requests = server.requests();
        let result = requests.last().unwrap().body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .unwrap();
        assert!(
            !result.contains(key),
            "{}: the key leaked from /proc: {result}",
            backend.name()
        );
        assert!(
            result.contains("[exit code"),
            "{}: {result}",
            backend.name()
        );
    }
}

/// Opens `fifo` for reading on a thread and returns what the first writer wrote, or `None`
/// when nothing arrives within a minute (a safety net, not synchronisation).
fn read_fifo(fifo: &Path) -> mpsc::Receiver<String> {
    let status = Command::new("mkfifo").arg(fifo).status().unwrap();
    assert!(status.success());
    let (tx, rx) = mpsc::channel();
    let fifo = fifo.to_path_buf();
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Ok(mut file) = File::open(&fifo) {
            let _ = file.read_to_string(&mut text);
        }
        let _ = tx.send(text);
    });
    rx
}

/// Polls (bounded) for a sleeper the command started in the background: the shell may report
/// ready before a forked child has exec'd `sleep`.
fn running_soon(marker: &str) -> bool {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < until {
        if running_with_arg(marker) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A reasonix process killed when the test ends, also when an assertion fails first.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts reasonix with a model that runs `command` in bash (no timeout) and returns once the
/// command wrote to `ready.fifo` in the workspace.
fn reasonix_running(
    home: &Dir,
    ws: &Dir,
    backend: Option<Backend>,
    command: &str,
) -> (Running, FakeOpenAI) {
    let ready = read_fifo(&ws.join("ready.fifo"));
    let args = json!({ "command": command, "timeout": 600 }).to_string();
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "bash", &args)]),
        Reply::text("done"),
    ]);
    use_fake_provider(home, &server.base_url(), &sandbox_extra(backend));
    let child = reasonix(home, ws.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "--permission-mode", "yolo", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = Running(child);
    let said = ready.recv_timeout(Duration::from_secs(60));
    assert_eq!(said.as_deref(), Ok("ready\n"), "the command did not start");
    (child, server)
}

#[test]
fn killing_reasonix_leaves_no_jailed_process_behind() {
    for backend in jails() {
        let home = Dir::new();
        let ws = Dir::new();
        let (command, markers) = escapers(&format!("9{}", backend.name().len()));
        let command = command.replace("; sleep 1000", "; echo ready > ready.fifo; sleep 1000");
        let (mut child, _server) = reasonix_running(&home, &ws, Some(backend), &command);
        for marker in &markers {
            assert!(
                running_soon(marker),
                "{}: {marker} not started",
                backend.name()
            );
        }
        child.0.kill().unwrap();
        child.0.wait().unwrap();
        for marker in &markers {
            assert!(
                gone_soon(marker),
                "{}: `sleep {marker}` outlived reasonix",
                backend.name()
            );
        }
    }
}

#[test]
fn a_second_ctrl_c_kills_the_running_command_before_exiting() {
    let modes: Vec<Option<Backend>> = std::iter::once(None)
        .chain(jails().into_iter().map(Some))
        .collect();
    for backend in modes {
        let home = Dir::new();
        let ws = Dir::new();
        let marker = format!(
            "51{}.{}",
            std::process::id(),
            backend.map_or(0, |b| b.name().len())
        );
        let termed = read_fifo(&ws.join("term.fifo"));
        // The shell reports the first Ctrl-C's SIGTERM and keeps running; its job ignores it.
        let command = format!(
            "trap 'echo term > term.fifo' TERM; (trap '' TERM; exec sleep {marker}) & \
             echo ready > ready.fifo; wait; wait"
        );
        let (mut child, _server) = reasonix_running(&home, &ws, backend, &command);
        let pid = child.0.id() as libc::pid_t;
        // SAFETY (test code): kill on the pid of our own unreaped child.
        unsafe { libc::kill(pid, libc::SIGINT) };
        if backend.is_none() {
            let said = termed.recv_timeout(Duration::from_secs(60));
            assert_eq!(
                said.as_deref(),
                Ok("term\n"),
                "the first Ctrl-C did not reach bash"
            );
        }
        // SAFETY (test code): as above; the child has not been waited for yet.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let status = child.0.wait().unwrap();
        assert!(
            status.code() == Some(130) || backend.is_some(),
            "{backend:?}: {status:?}"
        );
        assert!(
            gone_soon(&marker),
            "{backend:?}: `sleep {marker}` outlived the second Ctrl-C"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Process hygiene: reasonix as PID 1 of a container, and the version probes of a fresh home.

/// The config of a fake-provider run whose system prompt lists tool versions (so a fresh
/// home probes them), with bash jailed by `backend`.
fn config_with_probes(home: &Dir, base_url: &str, backend: Backend) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n{}\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\n\
             model = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n\n\
             [environment]\nenabled = true\n",
            sandbox_extra(Some(backend))
        ),
    );
}

/// Whether `unshare -pf --mount-proc` can make a PID namespace here (root, or a kernel that
/// lets this user unshare one). Missing: skipped with a message, or a failure when
/// `REASONIX_REQUIRE_SANDBOX` is set, like a missing jail.
fn pid_namespaces_work() -> bool {
    let works = Command::new("unshare")
        .args(["-pf", "--mount-proc", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !works {
        assert!(
            std::env::var_os("REASONIX_REQUIRE_SANDBOX").is_none(),
            "REASONIX_REQUIRE_SANDBOX is set but `unshare -pf --mount-proc` does not work here"
        );
        eprintln!("warning: the PID 1 test skipped: `unshare -pf --mount-proc` does not work here");
    }
    works
}

/// The children of every thread of `pid`, from `/proc/<pid>/task/*/children`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Every process below `pid`, each as "pid state (name)" from its `stat` line, children
/// first found first.
fn descendants(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let mut queue = children_of(pid);
    while let Some(child) = queue.pop() {
        let Ok(stat) = fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // "pid (comm) S ...": the name may hold spaces and parentheses, the state follows
        // the last ')'.
        let name = stat
            .find('(')
            .zip(stat.rfind(')'))
            .map(|(open, close)| stat[open + 1..close].to_string())
            .unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|close| stat[close + 1..].split_whitespace().next())
            .unwrap_or("?");
        found.push(format!("{child} {state} ({name})"));
        queue.extend(children_of(child));
    }
    found
}

/// Polls (bounded) until `pid` has no descendant left and returns what was left at the end:
/// a zombie is reaped and a finished probe exits soon after the event, not at it.
fn descendants_after_settling(pid: u32) -> Vec<String> {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let left = descendants(pid);
        if left.is_empty() || std::time::Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn reasonix_as_pid_1_reaps_every_jailed_command_and_leaves_no_zombie() {
    if !pid_namespaces_work() {
        return;
    }
    const CALLS: usize = 50;
    for backend in jails() {
        let home = Dir::new();
        let ws = Dir::new();
        let mut replies: Vec<Reply> = (0..CALLS)
            .map(|i| {
                let args = json!({ "command": format!("echo call {i}") }).to_string();
                Reply::tool_calls(&[(&format!("c{i}"), "bash", &args)])
            })
            .collect();
        let (last, release) = Reply::gated(Reply::text("done"));
        replies.push(last);
        let server = FakeOpenAI::start(replies);
        config_with_probes(&home, &server.base_url(), backend);
        // reasonix itself is PID 1 of the new namespace, as in `docker run image reasonix`.
        let plain = reasonix(&home, ws.path());
        let mut command = Command::new("unshare");
        command
            .args(["-pf", "--mount-proc"])
            .arg(plain.get_program())
            .args(["run", "--permission-mode", "yolo", "go"])
            .current_dir(ws.path())
            .env("FAKE_API_KEY", "k")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in plain.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        let mut child = Running(command.spawn().unwrap());
        for seen in (10..=CALLS + 1).step_by(10).chain([CALLS + 1]) {
            server.wait_for_requests(seen);
        }
        // The last request waits for its answer: every bash call has ended by now.
        let unshare = child.0.id();
        let pid1 = children_of(unshare);
        assert_eq!(
            pid1.len(),
            1,
            "{}: unshare's children: {pid1:?}",
            backend.name()
        );
        let left = descendants_after_settling(pid1[0]);
        release.release();
        let status = child.0.wait().unwrap();
        assert!(
            left.is_empty(),
            "{}: after {CALLS} jailed calls reasonix (PID 1) still has below it: {left:?}",
            backend.name()
        );
        assert!(status.success(), "{}: {status:?}", backend.name());
        assert_eq!(server.requests().len(), CALLS + 1, "{}", backend.name());
    }
}

/// Live processes (not zombies) whose environment holds `HOME=<home>`: a run's children,
/// version probes among them, inherit or are given that `HOME`, and nothing else on the
/// machine uses the test's fresh directory.
fn processes_with_home(home: &Path) -> Vec<String> {
    let needle = format!("HOME={}", home.display());
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            fs::read(entry.path().join("environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
            })
        })
        .filter_map(|entry| {
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
            (!stat.contains(") Z ")).then(|| {
                format!(
                    "{}: {}",
                    entry.file_name().to_string_lossy(),
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                )
            })
        })
        .collect()
}

/// A directory of fake tools for the version probes: a `git` that answers at once and a `go`
/// that never answers (a background `sleep` that only a group kill reaches, and a wait).
fn fake_tools() -> Dir {
    let bin = Dir::new();
    for (name, script) in [
        ("git", "echo 'git version 9.9.9-fake'".to_string()),
        ("go", "/bin/sleep 1000 & wait".to_string()),
    ] {
        let path = bin.write(name, &format!("#!/bin/sh\n{script}\n"));
        let mut perms = fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        fs::set_permissions(&path, perms).unwrap();
    }
    bin
}

#[test]
fn a_fresh_home_run_leaves_no_version_probe_running() {
    let Some(backend) = jails().into_iter().next() else {
        return;
    };
    let bin = fake_tools();
    // Several runs, each in a fresh home and answered at once: shorter than the probes of the
    // real tools on this machine (npm, cargo, a pyenv shim) and of the fake go, which never
    // answers.
    for round in 0..5 {
        let home = Dir::new();
        let ws = Dir::new();
        let server = FakeOpenAI::start(vec![Reply::text("done")]);
        config_with_probes(&home, &server.base_url(), backend);
        let out = crate::util::run(
            reasonix(&home, ws.path())
                .env("FAKE_API_KEY", "k")
                .env("PATH", path_with(&bin))
                .args(["run", "--permission-mode", "yolo", "go"]),
        );
        let left = processes_with_home(home.path());
        assert!(
            left.is_empty(),
            "round {round}: still running after reasonix exited: {left:?}"
        );
        assert_eq!(out.code, 0, "{out:?}");
    }
}

#[test]
fn a_short_run_keeps_the_versions_that_answered_while_a_probe_hangs() {
    let Some(backend) = jails().into_iter().next() else {
        return;
    };
    let bin = fake_tools();
    let home = Dir::new();
    let ws = Dir::new();
    let (reply, release) = Reply::gated(Reply::text("done"));
    let server = FakeOpenAI::start(vec![reply]);
    config_with_probes(&home, &server.base_url(), backend);
    let cache = home.join(".reasonix/cache/tool-versions.json");
    let child = reasonix(&home, ws.path())
        .env("FAKE_API_KEY", "k")
        .env("PATH", path_with(&bin))
        .args(["run", "--permission-mode", "yolo", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Running(child);
    server.wait_for_requests(1);
    // The fake git answers at once; the fake go never does. The run waits until the cache
    // holds git's answer while go is still being probed (a safety net bounds the wait), then
    // ends.
    let go = bin.join("go").display().to_string();
    let until = std::time::Instant::now() + Duration::from_secs(30);
    let mut cached = String::new();
    let mut go_hangs = false;
    while !(cached.contains("9.9.9-fake") && go_hangs) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
        cached = fs::read_to_string(&cache).unwrap_or_default();
        go_hangs = running_with_arg(&go);
    }
    release.release();
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(cached.contains("git version 9.9.9-fake"), "{cached}");
    assert!(go_hangs, "the fake go was never seen probing");
    // Killed on the way out, not failed: nothing recorded, so the next run asks again.
    let after = fs::read_to_string(&cache).unwrap_or_default();
    assert!(after.contains("git version 9.9.9-fake"), "{after}");
    assert!(!after.contains("\"go\\t"), "{after}");
    let left = processes_with_home(home.path());
    assert!(
        left.is_empty(),
        "still running after reasonix exited: {left:?}"
    );
}

/// `PATH` with `bin` first.
fn path_with(bin: &Dir) -> OsString {
    std::env::join_paths(
        std::iter::once(bin.path().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap()
}
