//! Benchmarks printed by `make bench` (ignored in `make test`): start-up to first request,
//! a cold start in a fresh home, harness overhead per tool round, peak memory of a plain
//! headless run, grep on a mid-sized tree, the per-call cost of each bash jail, and what the
//! first bash round costs with the jail off. Build with `--release` for meaningful numbers; the fake server answers instantly.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, use_fake_provider, Dir};

/// Waits for `child` and returns its exit code and peak resident set size in KiB.
fn wait_with_peak_rss(child: std::process::Child) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for a child we spawned and have not reaped.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `home` is shared across samples so caches (tool versions) are as warm as on a user's
/// machine after the first run.
fn startup_sample(home: &Dir, environment: bool) -> Duration {
    let (reply, release) = Reply::stall();
    let server = FakeOpenAI::start(vec![reply]);
    let work = Dir::new();
    use_fake_provider(home, &server.base_url(), "");
    if environment {
        let path = home.join(".reasonix/config.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("enabled = false", "enabled = true")).unwrap();
    }
    let mut cmd = reasonix(home, work.path());
    cmd.args(["run", "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let request = server.wait_for_requests(1).remove(0);
    let elapsed = request.at.duration_since(started);
    let _ = child.kill();
    let _ = child.wait();
    release.release();
    elapsed
}

#[test]
#[ignore]
fn bench_startup_to_first_request() {
    for environment in [false, true] {
        let home = Dir::new();
        // The first run fills the tool-version cache (a one-time cost, reported separately).
        let cold = startup_sample(&home, environment);
        let samples: Vec<Duration> = (0..15)
            .map(|_| startup_sample(&home, environment))
            .collect();
        if environment {
            println!(
                "first run with [environment] enabled (probes tool versions): {:.1} ms",
                cold.as_secs_f64() * 1000.0
            );
        }
        println!(
            "startup to first request ([environment] enabled = {environment}): median {:.2} ms, min {:.2} ms over {} runs",
            median(samples.clone()).as_secs_f64() * 1000.0,
            samples.iter().min().unwrap().as_secs_f64() * 1000.0,
            samples.len()
        );
    }
}

/// Every CI job starts with an empty home: nothing is cached, so nothing may wait for a probe.
#[test]
#[ignore]
fn bench_cold_start_in_a_fresh_home() {
    let samples: Vec<Duration> = (0..15).map(|_| startup_sample(&Dir::new(), true)).collect();
    let median = median(samples.clone()).as_secs_f64() * 1000.0;
    println!(
        "cold start, fresh home, [environment] enabled: median {median:.2} ms, min {:.2} ms over {} runs (target <= 20 ms: {})",
        samples.iter().min().unwrap().as_secs_f64() * 1000.0,
        samples.len(),
        if median <= 20.0 { "met" } else { "NOT met" }
    );
}

#[test]
#[ignore]
fn bench_tool_round_overhead_and_peak_memory() {
    const ROUNDS: usize = 200;
    let work = Dir::new();
    work.write("a.txt", "hello\n");
    let mut replies: Vec<Reply> = (0..ROUNDS)
        .map(|i| Reply::tool_calls(&[(&format!("c{i}"), "read_file", r#"{"path":"a.txt"}"#)]))
        .collect();
    replies.push(Reply::text("done"));
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["run", "--output-format", "json", "loop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    let (code, peak_kib) = wait_with_peak_rss(child);
    let total = started.elapsed();
    assert_eq!(code, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), ROUNDS + 1);
    // Time from one request's arrival to the next: the harness's whole share of a round
    // (parse the reply, run the tool, persist, build and send the next request).
    let gaps: Vec<Duration> = requests
        .windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .collect();
    println!(
        "tool round overhead: median {:.3} ms, mean {:.3} ms per round over {ROUNDS} rounds (whole run {:.0} ms); peak RSS {:.1} MiB",
        median(gaps.clone()).as_secs_f64() * 1000.0,
        gaps.iter().sum::<Duration>().as_secs_f64() * 1000.0 / gaps.len() as f64,
        total.as_secs_f64() * 1000.0,
        peak_kib as f64 / 1024.0
    );
}

#[test]
#[ignore]
fn bench_plain_headless_run_memory() {
    let server = FakeOpenAI::start(vec![Reply::text("a short answer")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["run", "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let (code, peak_kib) = wait_with_peak_rss(cmd.spawn().unwrap());
    assert_eq!(code, 0);
    println!(
        "plain headless run: peak RSS {:.1} MiB",
        peak_kib as f64 / 1024.0
    );
    let static_bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/x86_64-unknown-linux-musl/release/reasonix");
    match std::fs::metadata(&static_bin) {
        Ok(meta) => {
            let server = FakeOpenAI::start(vec![Reply::text("a short answer")]);
            use_fake_provider(&home, &server.base_url(), "");
            let mut cmd = Command::new(&static_bin);
            cmd.current_dir(work.path())
                .env("HOME", home.path())
                .env("REASONIX_HOME", home.join(".reasonix"))
                .args(["run", "hi"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let (code, peak_kib) = wait_with_peak_rss(cmd.spawn().unwrap());
            assert_eq!(code, 0);
            println!(
                "static musl binary: {} bytes ({:.2} MiB); plain headless run peak RSS {:.1} MiB",
                meta.len(),
                meta.len() as f64 / 1048576.0,
                peak_kib as f64 / 1024.0
            );
        }
        Err(_) => println!("static musl binary not built (run `make static` first to measure it)"),
    }
}

/// A tree like a mid-sized repository: 3,000 source-like files of about 16 KiB in nested
/// directories, and one 64 MiB log.
fn grep_bench_tree() -> Dir {
    let dir = Dir::new();
    let line = |i: usize| match i % 7 {
        0 => format!("fn handler_{i}(ctx: &mut Context) -> Result<(), Error> {{\n"),
        1 => "    let value = ctx.lookup(\"key\").unwrap_or_default();\n".to_string(),
        2 => "    // TODO: handle the error path properly\n".to_string(),
        3 => format!("    if value.len() > {i} {{ return Err(Error::TooLong); }}\n"),
        4 => "    ctx.store(value.trim().to_string());\n".to_string(),
        5 => "    Ok(())\n".to_string(),
        _ => "}\n".to_string(),
    };
    let file: String = (0..400).map(line).collect();
    for i in 0..3000 {
        dir.write(&format!("src/m{}/d{}/f{i}.rs", i % 10, i % 37), &file);
    }
    let mut log = String::with_capacity(64 << 20);
    let mut i = 0;
    while log.len() < 64 << 20 {
        log.push_str(&format!(
            "2024-05-01T12:00:{:02} INFO request {i} served in {} ms\n",
            i % 60,
            i % 997
        ));
        i += 1;
    }
    log.push_str("2024-05-01T12:00:00 ERROR needle_in_the_log\n");
    dir.write("logs/big.log", &log);
    dir
}

#[test]
#[ignore]
fn bench_grep() {
    use reasonix::tool::{builtin, ToolContext};
    use serde_json::json;
    let dir = grep_bench_tree();
    let grep = builtin::all()
        .into_iter()
        .find(|t| t.name() == "grep")
        .unwrap();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    let cases = [
        ("literal, files", json!({"pattern": "needle_in_the_log"})),
        (
            "regex, content",
            json!({"pattern": r"fn handler_\d+7\(", "output_mode": "content", "head_limit": 50}),
        ),
        (
            "case-insensitive, count",
            json!({"pattern": "todo", "case_insensitive": true, "output_mode": "count"}),
        ),
        (
            "context 2, content",
            json!({"pattern": "TooLong", "output_mode": "content", "context": 2, "head_limit": 20}),
        ),
        (
            "regex without literal, files",
            json!({"pattern": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d ERROR"}),
        ),
    ];
    for (label, args) in cases {
        let samples: Vec<Duration> = (0..5)
            .map(|_| {
                let started = Instant::now();
                grep.execute(&args, &ctx).unwrap();
                started.elapsed()
            })
            .collect();
        println!(
            "grep {label}: median {:.1} ms over {} runs (3,000 files of 16 KiB + a 64 MiB log)",
            median(samples).as_secs_f64() * 1000.0,
            5
        );
    }
}

/// Wall time of one `bash -c true` through `process::run` under `policy`, confining included
/// (what the bash tool does per call; Landlock builds its ruleset here): the median of `runs`.
fn bash_call(policy: &reasonix::sandbox::Policy, cwd: &std::path::Path, runs: usize) -> Duration {
    use reasonix::sandbox::process::{self, CommandSpec, Exit};
    let samples = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let mut spec = CommandSpec::new("bash", cwd);
            spec.args = vec!["-c".into(), "true".into()];
            let spec = policy.confine_command(spec).expect("the jail works here");
            let finished = process::run(&spec, &reasonix::cancel::CancelToken::new()).unwrap();
            assert_eq!(finished.exit, Exit::Code(0), "{:?}", finished.output);
            started.elapsed()
        })
        .collect();
    median(samples)
}

#[test]
#[ignore]
fn bench_jail_cost_per_bash_call() {
    use reasonix::sandbox::{Backend, BashMode, Host, Policy, Settings};
    const RUNS: usize = 40;
    let home = Dir::new();
    let ws = Dir::new();
    // The settings a default config gives, hidden credential paths included: Landlock's
    // ruleset grows with them.
    let config = reasonix::config::Config {
        home: home.join(".reasonix"),
        ..Default::default()
    };
    let base = Settings::from_config(&config, ws.path()).unwrap();
    let with = |bash, backend| {
        Policy::new(Settings {
            bash,
            backend,
            ..base.clone()
        })
    };
    let unjailed = bash_call(&with(BashMode::Off, Backend::Auto), ws.path(), RUNS);
    println!(
        "bash -c true per call, median of {RUNS}: unjailed {:.2} ms",
        unjailed.as_secs_f64() * 1000.0
    );
    let host = Host::current();
    for (backend, usable) in [
        (Backend::Bwrap, host.bwrap.as_ref().err()),
        (Backend::Landlock, host.landlock.as_ref().err()),
    ] {
        if let Some(why) = usable {
            println!("  {}: unusable here ({why})", backend.name());
            continue;
        }
        let jailed = bash_call(&with(BashMode::Enforce, backend), ws.path(), RUNS);
        println!(
            "  {}: {:.2} ms ({:.1}x unjailed, +{:.2} ms)",
            backend.name(),
            jailed.as_secs_f64() * 1000.0,
            jailed.as_secs_f64() / unjailed.as_secs_f64(),
            (jailed.as_secs_f64() - unjailed.as_secs_f64()) * 1000.0
        );
    }
}

/// The time from the first request to the second of a `reasonix run` whose model calls bash
/// once: the first tool round, which is where the backend is probed when it is probed at all.
fn first_bash_round(bash: &str) -> Duration {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "bash", r#"{"command":"true"}"#)]),
        Reply::text("done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(
        &home,
        &server.base_url(),
        &format!("[sandbox]\nbash = \"{bash}\"\n"),
    );
    let out = reasonix(&home, work.path())
        .args(["run", "--permission-mode", "yolo", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(out.success());
    let requests = server.wait_for_requests(2);
    requests[1].at.duration_since(requests[0].at)
}

#[test]
#[ignore]
fn bench_bash_off_costs_no_probe() {
    const RUNS: usize = 15;
    for bash in ["off", "enforce"] {
        let rounds: Vec<Duration> = (0..RUNS).map(|_| first_bash_round(bash)).collect();
        println!(
            "first bash round of a run with [sandbox] bash = \"{bash}\": median {:.2} ms over {RUNS} runs",
            median(rounds).as_secs_f64() * 1000.0
        );
    }
    // What every process paid on its first bash call before the probe became lazy, bash =
    // "off" included: finding bwrap and running `bwrap ... true` once, plus the Landlock query.
    let path = std::env::var_os("PATH");
    let probes: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let _ = reasonix::sandbox::Host::probe(path.as_deref());
            started.elapsed()
        })
        .collect();
    println!(
        "backend probe (paid once per process, now only when something is jailed): median {:.2} ms over {RUNS} probes",
        median(probes).as_secs_f64() * 1000.0
    );
}
