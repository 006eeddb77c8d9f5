//! Benchmarks printed by `make bench` (ignored in `make test`): start-up to first request,
//! a cold start in a fresh home, harness overhead per tool round, peak memory of a plain
//! headless run, grep against rg on a large tree, the per-call cost of each bash jail, and what
//! the first bash round costs with the jail off; also how the cost of a round grows over long
//! sessions (agent time, wall, CPU, memory and memory-mapping calls; the glibc build against
//! the static musl one), the CPU of a streamed answer against curl, and how often compaction
//! breaks the prompt cache. Figures are printed with their targets, never asserted. Build with
//! `--release` for meaningful numbers; the fake server answers instantly.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::context::{
    common_prefix, conversation_server, fact, harness, paired_main_requests, prompt_text,
    user_texts, write_data, FEW_TOOLS,
};
use crate::util::fake_openai::{FakeOpenAI, PrefixCache, Reply};
use crate::util::{reasonix, reasonix_binary, session_files, use_fake_provider, Dir};
use reasonix::permission::AllowAll;

/// Waits for `child` and returns its exit code and peak resident set size in KiB, its own
/// `VmHWM` (see [`watch_peak_rss`]).
fn wait_with_peak_rss(child: std::process::Child) -> (i32, i64) {
    let peak = watch_peak_rss(child.id());
    let usage = wait_with_usage(child);
    (usage.code, peak.join().unwrap())
}

/// What the kernel reports for a child that has exited.
struct ChildUsage {
    code: i32,
    peak_rss_kib: i64,
    /// User plus system time.
    cpu: Duration,
}

fn wait_with_usage(child: std::process::Child) -> ChildUsage {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for a child we spawned and have not reaped.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    ChildUsage {
        code: libc::WEXITSTATUS(status),
        peak_rss_kib: usage.ru_maxrss,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `home` is shared across samples so caches (tool versions) are as warm as on a user's
/// machine after the first run.
fn startup_sample(binary: &Path, home: &Dir, environment: bool) -> Duration {
    let (reply, release) = Reply::stall();
    let server = FakeOpenAI::start(vec![reply]);
    let work = Dir::new();
    use_fake_provider(home, &server.base_url(), "");
    if environment {
        let path = home.join(".reasonix/config.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("enabled = false", "enabled = true")).unwrap();
    }
    let mut cmd = reasonix_binary(binary, home, work.path());
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

/// The build the start-up and round figures are compared with: `REASONIX_BENCH_BEFORE`, a
/// saved binary of an earlier revision (`make bench BENCH_BEFORE=path`). Its samples alternate
/// with this build's, so a busy moment of the shared machine falls on both.
fn before_binary() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("REASONIX_BENCH_BEFORE").filter(|p| !p.is_empty())?);
    if path.is_file() {
        Some(path)
    } else {
        println!(
            "REASONIX_BENCH_BEFORE={} is not a file; no before figures",
            path.display()
        );
        None
    }
}

/// This build and, when given, the one before it, each with its label.
fn builds() -> Vec<(&'static str, PathBuf)> {
    let mut builds = vec![("this build", crate::util::bin())];
    builds.extend(before_binary().map(|path| ("before", path)));
    builds
}

/// `figure` of this build against the build before, when there is one: " (before X ms,
/// ratio R)".
fn against_before(figures: &[Duration]) -> String {
    match figures {
        [now, before] => format!(
            " (before: {:.2} ms; ratio {:.2})",
            ms(*before),
            now.as_secs_f64() / before.as_secs_f64()
        ),
        _ => String::new(),
    }
}

#[test]
#[ignore]
fn bench_startup_to_first_request() {
    let builds = builds();
    for environment in [false, true] {
        let mut medians = Vec::new();
        for (what, binary) in &builds {
            let home = Dir::new();
            // The first run fills the tool-version cache (a one-time cost, reported separately).
            let cold = startup_sample(binary, &home, environment);
            let samples: Vec<Duration> = (0..15)
                .map(|_| startup_sample(binary, &home, environment))
                .collect();
            if environment {
                println!(
                    "first run with [environment] enabled (probes tool versions), {what}: {:.1} ms",
                    ms(cold)
                );
            }
            medians.push((median(samples.clone()), *samples.iter().min().unwrap()));
        }
        let (median_now, min_now) = medians[0];
        let before: Vec<Duration> = medians.iter().map(|(m, _)| *m).collect();
        println!(
            "startup to first request ([environment] enabled = {environment}): median {:.2} ms, min {:.2} ms over 15 runs{}",
            ms(median_now),
            ms(min_now),
            against_before(&before)
        );
    }
}

/// Every CI job starts with an empty home: nothing is cached, so nothing may wait for a probe.
#[test]
#[ignore]
fn bench_cold_start_in_a_fresh_home() {
    let builds = builds();
    let mut samples = vec![Vec::new(); builds.len()];
    for _ in 0..15 {
        for ((_, binary), taken) in builds.iter().zip(&mut samples) {
            taken.push(startup_sample(binary, &Dir::new(), true));
        }
    }
    let medians: Vec<Duration> = samples.iter().map(|s| median(s.clone())).collect();
    let median_now = ms(medians[0]);
    println!(
        "cold start, fresh home, [environment] enabled: median {median_now:.2} ms, min {:.2} ms over 15 runs (target <= 20 ms: {}){}",
        ms(*samples[0].iter().min().unwrap()),
        verdict(median_now <= 20.0),
        against_before(&medians)
    );
}

/// A fake model that reads `a0.txt` … `a3.txt` for `rounds` rounds, then answers: the server, the home
/// configured for it and the workspace.
fn read_file_loop(rounds: usize) -> (FakeOpenAI, Dir, Dir) {
    read_file_loop_of(rounds, "hello\n")
}

/// [`read_file_loop`] reading a file of this content every round.
/// The rounds cycle through four files, one more than the loop guard's window, so a long
/// session is work, not a repeated round; the step budget is lifted for the same reason.
fn read_file_loop_of(rounds: usize, content: &str) -> (FakeOpenAI, Dir, Dir) {
    const FILES: usize = 4;
    let work = Dir::new();
    for n in 0..FILES {
        work.write(&format!("a{n}.txt"), content);
    }
    let mut replies: Vec<Reply> = (0..rounds)
        .map(|i| {
            let args = format!(r#"{{"path":"a{}.txt"}}"#, i % FILES);
            Reply::tool_calls(&[(&format!("c{i}"), "read_file", &args)])
        })
        .collect();
    replies.push(Reply::text("done"));
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    use_fake_provider(
        &home,
        &server.base_url(),
        "[agent]\nmax_steps_headless = 0\n",
    );
    (server, home, work)
}

#[test]
#[ignore]
fn bench_tool_round_overhead_and_peak_memory() {
    const ROUNDS: usize = 200;
    let mut medians = Vec::new();
    for (what, binary) in builds() {
        let (server, home, work) = read_file_loop(ROUNDS);
        let mut cmd = reasonix_binary(&binary, &home, work.path());
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
        medians.push(median(gaps.clone()));
        println!(
            "tool round overhead, {what}: median {:.3} ms, mean {:.3} ms per round over {ROUNDS} rounds (whole run {:.0} ms); peak RSS {:.1} MiB",
            ms(median(gaps.clone())),
            gaps.iter().sum::<Duration>().as_secs_f64() * 1000.0 / gaps.len() as f64,
            ms(total),
            peak_kib as f64 / 1024.0,
        );
    }
    if medians.len() == 2 {
        println!("tool round overhead, median{}", against_before(&medians));
    }
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

/// Files of the grep bench's tree beside the big log, and the log's size.
const GREP_BENCH_FILES: usize = 36_000;
const GREP_BENCH_LOG_BYTES: usize = 1 << 30;
/// The rare literal: in three source files, at the end of the big log, and in the ignored
/// `target/` directory (which neither grep nor rg may report).
const GREP_BENCH_NEEDLE: &str = "needle_in_the_haystack";

/// A large repository: 36,000 source-like files of 3–22 KiB (~450 MB) in 300 directories, a
/// `.gitignore`d `target/`, and one 1 GiB log. A third of the files open with a copyright
/// line; every 50th has `COPYRIGHT` in its body; the log has `Copyright` every 100,000 lines.
fn grep_bench_tree() -> Dir {
    use std::io::Write;
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    dir.write(".gitignore", "target/\n");
    let line = |i: usize, f: usize| match i % 7 {
        0 => format!("fn handler_{i}(ctx: &mut Context) -> Result<(), Error> {{\n"),
        1 => "    let value = ctx.lookup(\"key\").unwrap_or_default();\n".to_string(),
        2 => "    // TODO: handle the error path properly\n".to_string(),
        3 => format!("    if value.len() > {f} {{ return Err(Error::TooLong); }}\n"),
        4 => "    ctx.store(value.trim().to_string());\n".to_string(),
        5 => "    Ok(())\n".to_string(),
        _ => "}\n".to_string(),
    };
    for f in 0..GREP_BENCH_FILES {
        let mut text = String::new();
        if f % 3 == 0 {
            text.push_str("// Copyright (c) 2024 Example Corp. All rights reserved.\n");
        }
        let lines = 60 + (f * 37) % 400;
        for i in 0..lines {
            text.push_str(&line(i, f));
            if i == lines / 2 && f % 50 == 0 {
                text.push_str("    // COPYRIGHT NOTICE: see LICENSE\n");
            }
            if i == lines / 3 && [1234, 20_000, GREP_BENCH_FILES - 1].contains(&f) {
                text.push_str(&format!("    let {GREP_BENCH_NEEDLE} = 1;\n"));
            }
        }
        dir.write(
            &format!("src/p{:02}/m{:03}/f{f:05}.rs", f % 30, f % 300),
            &text,
        );
    }
    for f in 0..300 {
        dir.write(
            &format!("target/debug/gen{f}.rs"),
            &format!("{GREP_BENCH_NEEDLE}\n"),
        );
    }
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let mut log = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(dir.join("logs/huge.log")).unwrap(),
    );
    let (mut written, mut i) = (0, 0usize);
    while written < GREP_BENCH_LOG_BYTES {
        let entry = match i % 100_000 {
            99_999 => format!("2024-05-01T12:00:{:02} INFO Copyright check {i}\n", i % 60),
            _ => format!(
                "2024-05-01T12:00:{:02} INFO request {i} served in {} ms\n",
                i % 60,
                i % 997
            ),
        };
        log.write_all(entry.as_bytes()).unwrap();
        written += entry.len();
        i += 1;
    }
    writeln!(log, "2024-05-01T12:00:00 ERROR {GREP_BENCH_NEEDLE}").unwrap();
    log.flush().unwrap();
    dir.write("small/one_mb.log", &{
        let mut small = String::new();
        while small.len() < 1 << 20 {
            small.push_str("2024-05-01T12:00:00 INFO request served, Copyright check\n");
        }
        small.push_str(&format!("{GREP_BENCH_NEEDLE}\n"));
        small
    });
    dir
}

/// One grep run in a child process (this test binary re-run on [`grep_child_for_bench`]), so
/// its wall time includes a process start as rg's does and its peak RSS is its own.
struct ChildGrep {
    wall: Duration,
    /// `VmHWM` read by the child itself just before it exits, KiB.
    peak_rss_kib: i64,
    output: String,
}

fn run_grep_child(cwd: &Path, args: &Value) -> ChildGrep {
    let out = cwd
        .parent()
        .unwrap()
        .join(format!("grep-child-{}.out", std::process::id()));
    let started = Instant::now();
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "bench::grep_child_for_bench",
            "--ignored",
            "--quiet",
        ])
        .args(["--test-threads", "1"])
        .env("REASONIX_GREP_CHILD_CWD", cwd)
        .env("REASONIX_GREP_CHILD_ARGS", args.to_string())
        .env("REASONIX_GREP_CHILD_OUT", &out)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed();
    assert!(status.success(), "grep child failed for {args}");
    let written = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let (hwm, output) = written.split_once('\n').unwrap();
    ChildGrep {
        wall,
        peak_rss_kib: hwm.parse().unwrap(),
        output: output.to_string(),
    }
}

/// The child half of [`run_grep_child`]: runs one grep and writes its own `VmHWM` and the
/// tool's output. Does nothing when run without the bench's environment.
#[test]
#[ignore]
fn grep_child_for_bench() {
    use reasonix::tool::{builtin, ToolContext};
    let (Some(cwd), Some(args), Some(out)) = (
        std::env::var_os("REASONIX_GREP_CHILD_CWD"),
        std::env::var("REASONIX_GREP_CHILD_ARGS").ok(),
        std::env::var_os("REASONIX_GREP_CHILD_OUT"),
    ) else {
        return;
    };
    let grep = builtin::all()
        .into_iter()
        .find(|t| t.name() == "grep")
        .unwrap();
    let args: Value = serde_json::from_str(&args).unwrap();
    let output = grep
        .execute(&args, &ToolContext::new(PathBuf::from(cwd)))
        .unwrap();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().to_string())
        .unwrap();
    std::fs::write(out, format!("{hwm}\n{output}")).unwrap();
}

/// `rg` over `cwd` with `args`: wall time, stdout and peak RSS polled from `/proc` (its
/// `ru_maxrss` would start from this large test process's RSS, inherited at spawn); `None`
/// when rg is not installed.
fn run_rg(cwd: &Path, args: &[&str]) -> Option<(Duration, String, i64)> {
    let started = Instant::now();
    let child = Command::new("rg")
        .arg("--no-config")
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let peak = watch_peak_rss(child.id());
    let out = child.wait_with_output().unwrap();
    let wall = started.elapsed();
    Some((
        wall,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        peak.join().unwrap(),
    ))
}

/// Matching files and lines in a grep output (files or count mode, nothing capped) or in
/// rg's `-l` / `-c` output: (files, lines), lines 0 in files mode.
fn grep_totals(output: &str) -> (usize, usize) {
    let mut files = 0;
    let mut lines = 0;
    for line in output.lines().filter(|l| !l.starts_with('(')) {
        files += 1;
        if let Some((_, n)) = line.rsplit_once(':') {
            lines += n.parse::<usize>().unwrap_or(0);
        }
    }
    (files, lines)
}

const MIB: f64 = 1024.0;

#[test]
#[ignore]
fn bench_grep() {
    const RUNS: usize = 5;
    let started = Instant::now();
    let dir = grep_bench_tree();
    let root = dir.path();
    println!(
        "grep bench tree: {GREP_BENCH_FILES} source files (~450 MB) + a 1 GiB log, built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let rg_present = Command::new("rg").arg("--version").output().is_ok();
    if !rg_present {
        println!("rg not found: no comparison (install ripgrep to compare)");
    }
    let all = 1_000_000;
    let cases: [(&str, Value, &[&str]); 4] = [
        (
            "rare literal, files",
            serde_json::json!({"pattern": GREP_BENCH_NEEDLE, "head_limit": all}),
            &["-l", GREP_BENCH_NEEDLE],
        ),
        (
            "rare literal, count",
            serde_json::json!({"pattern": GREP_BENCH_NEEDLE, "output_mode": "count", "head_limit": all}),
            &["-c", GREP_BENCH_NEEDLE],
        ),
        (
            "(?i)copyright, files",
            serde_json::json!({"pattern": "(?i)copyright", "head_limit": all}),
            &["-l", "(?i)copyright"],
        ),
        (
            "(?i)copyright, count",
            serde_json::json!({"pattern": "(?i)copyright", "output_mode": "count", "head_limit": all}),
            &["-c", "(?i)copyright"],
        ),
    ];
    // One untimed pass of each so both read from the page cache.
    for (_, args, rg_args) in &cases {
        run_grep_child(root, args);
        run_rg(root, rg_args);
    }
    for (label, args, rg_args) in &cases {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut peak = 0;
        let mut rg_peak = 0;
        let mut totals = (0, 0);
        let mut rg_totals = None;
        for _ in 0..RUNS {
            let run = run_grep_child(root, args);
            ours.push(run.wall);
            peak = peak.max(run.peak_rss_kib);
            totals = grep_totals(&run.output);
            if let Some((wall, out, rss)) = run_rg(root, rg_args) {
                theirs.push(wall);
                rg_peak = rg_peak.max(rss);
                rg_totals = Some(grep_totals(&out));
            }
        }
        let ours = median(ours);
        print!(
            "grep {label}: {:.0} ms, peak RSS {:.1} MiB ({} files, {} lines)",
            ms(ours),
            peak as f64 / MIB,
            totals.0,
            totals.1
        );
        match rg_totals {
            None => println!(),
            Some(rg_totals) => {
                let rg = median(theirs);
                let ratio = ours.as_secs_f64() / rg.as_secs_f64();
                println!(
                    "; rg {:.0} ms, peak RSS {:.1} MiB: {ratio:.2}x rg (target <= 1.5x: {})",
                    ms(rg),
                    rg_peak as f64 / MIB,
                    verdict(ratio <= 1.5)
                );
                assert_eq!(totals, rg_totals, "grep and rg disagree on {label}");
            }
        }
    }
    // Memory must not follow file size: one 1 MiB file against the 1 GiB log.
    for pattern in [GREP_BENCH_NEEDLE, "(?i)copyright"] {
        for (file, label) in [("small/one_mb.log", "1 MiB"), ("logs/huge.log", "1 GiB")] {
            let args =
                serde_json::json!({"pattern": pattern, "path": file, "output_mode": "count"});
            let run = run_grep_child(root, &args);
            println!(
                "grep {pattern:?} over one {label} file: {:.0} ms, peak RSS {:.1} MiB (target <= 32 MiB: {})",
                ms(run.wall),
                run.peak_rss_kib as f64 / MIB,
                verdict(run.peak_rss_kib as f64 / MIB <= 32.0)
            );
        }
    }
    let floor = run_grep_child(
        root,
        &serde_json::json!({"pattern": "x", "path": ".gitignore"}),
    );
    println!(
        "  (the child process alone, grepping one tiny file: {:.0} ms, peak RSS {:.1} MiB)",
        ms(floor.wall),
        floor.peak_rss_kib as f64 / MIB
    );
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

// ---------------------------------------------------------------------------------------
// Long sessions: cost per round against the history's length.

/// The glibc build: the one cargo made for these tests, or `REASONIX_BENCH_GLIBC` (to
/// measure a saved build of another revision against the same benches).
fn glibc_binary() -> PathBuf {
    std::env::var_os("REASONIX_BENCH_GLIBC")
        .map(PathBuf::from)
        .unwrap_or_else(crate::util::bin)
}

/// The static musl binary `make bench` passes in; `None` (with a note) when unset.
fn static_binary() -> Option<PathBuf> {
    match std::env::var_os("REASONIX_BENCH_STATIC") {
        Some(path) if Path::new(&path).is_file() => Some(PathBuf::from(path)),
        Some(path) => {
            println!(
                "REASONIX_BENCH_STATIC={} is not a file; static musl figures skipped",
                Path::new(&path).display()
            );
            None
        }
        None => {
            println!(
                "REASONIX_BENCH_STATIC unset; static musl figures skipped (`make bench` sets it)"
            );
            None
        }
    }
}

/// One headless run of `rounds` `read_file` rounds, measured from outside.
struct LongRun {
    wall: Duration,
    usage: ChildUsage,
    /// Per round: from the end of a reply to the arrival of the next request, the agent's
    /// whole share (parse the reply, run the tool, persist, build and send the request).
    agent_times: Vec<Duration>,
    /// The fake server's own share of the wall: from each request's arrival to the end of
    /// its reply (it parses and checks every body, which grows with the history).
    server_time: Duration,
    /// Bytes of the session file, header included.
    session_bytes: u64,
    /// Bytes of the last request body.
    last_request_bytes: usize,
    /// The polled peak of private (anonymous) memory, KiB (see [`Peaks`]).
    peak_anon_kib: i64,
}

fn long_run(binary: &Path, rounds: usize) -> LongRun {
    long_run_of(binary, rounds, "hello\n")
}

fn long_run_of(binary: &Path, rounds: usize, content: &str) -> LongRun {
    let (server, home, work) = read_file_loop_of(rounds, content);
    let mut cmd = reasonix_binary(binary, &home, work.path());
    cmd.args(["run", "--output-format", "json", "loop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let peak = std::thread::spawn(move || poll_peaks(pid));
    let mut usage = wait_with_usage(child);
    let wall = started.elapsed();
    assert_eq!(usage.code, 0, "{} failed", binary.display());
    let peaks = peak.join().unwrap();
    usage.peak_rss_kib = peaks.hwm_kib;
    let requests = server.requests();
    assert_eq!(requests.len(), rounds + 1);
    let answered = server.answer_times();
    let agent_times = (1..requests.len())
        .map(|i| {
            let end = answered[i - 1].expect("every reply was written");
            requests[i].arrived.saturating_duration_since(end)
        })
        .collect();
    let server_time = requests
        .iter()
        .zip(&answered)
        .map(|(r, end)| end.map_or(Duration::ZERO, |e| e.saturating_duration_since(r.arrived)))
        .sum();
    let session_bytes = session_files(&home)
        .last()
        .map_or(0, |p| std::fs::metadata(p).map_or(0, |m| m.len()));
    let last_request_bytes = serde_json::to_vec(&requests[rounds].body).map_or(0, |b| b.len());
    LongRun {
        wall,
        usage,
        agent_times,
        server_time,
        session_bytes,
        last_request_bytes,
        peak_anon_kib: peaks.anon_kib,
    }
}

/// The peak RSS (`VmHWM`, KiB) of process `pid`, polled until it exits. `ru_maxrss` will not
/// do for a child of a large test process: Linux starts it from the parent's RSS at fork.
fn watch_peak_rss(pid: u32) -> std::thread::JoinHandle<i64> {
    std::thread::spawn(move || poll_peaks(pid).hwm_kib)
}

/// Peaks of a process's memory, KiB.
#[derive(Clone, Copy, Default)]
struct Peaks {
    /// `VmHWM`: the kernel's own high-water mark of the whole resident set.
    hwm_kib: i64,
    /// The largest `RssAnon` seen: the heap, stacks and other private memory, without the
    /// program's and the libraries' code. Which code pages are resident (and how many
    /// neighbours a fault maps with them) moves the resident set by a few hundred KiB from
    /// run to run, as much as 800 rounds of a small history add; this does not move.
    anon_kib: i64,
}

/// [`Peaks`] of process `pid`, polled every 2 ms until it exits.
fn poll_peaks(pid: u32) -> Peaks {
    let field = |status: &str, name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
    };
    let mut peaks = Peaks::default();
    loop {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return peaks;
        };
        let Some(hwm) = field(&status, "VmHWM:") else {
            // A zombie has no memory left to report.
            return peaks;
        };
        peaks.hwm_kib = peaks.hwm_kib.max(hwm);
        peaks.anon_kib = peaks.anon_kib.max(field(&status, "RssAnon:").unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}

/// Median agent time of the rounds around `round` (counted from 1).
fn agent_time_near(run: &LongRun, round: usize) -> Duration {
    let from = round.saturating_sub(5).max(1) - 1;
    let to = (round + 5).min(run.agent_times.len());
    median(run.agent_times[from..to].to_vec())
}

#[test]
#[ignore]
fn bench_long_session_cost_per_round() {
    let binary = glibc_binary();
    // Each figure is the median of LONG_RUNS runs of each length, run alternately: a single run's
    // wall moves by a third with whatever else the shared machine does.
    let (mut shorts, mut longs) = (Vec::new(), Vec::new());
    for _ in 0..LONG_RUNS {
        shorts.push(long_run(&binary, 200));
        longs.push(long_run(&binary, 1_000));
    }
    let median_of = |runs: &[LongRun], figure: &dyn Fn(&LongRun) -> Duration| {
        median(runs.iter().map(figure).collect())
    };
    let early = median_of(&longs, &|run| agent_time_near(run, 10));
    let late = median_of(&longs, &|run| agent_time_near(run, 1_000));
    let growth = late.as_secs_f64() / early.as_secs_f64();
    println!(
        "agent time per round (end of reply to next request, median of 10 rounds, median of {LONG_RUNS} runs): round 10 {:.3} ms, round 1000 {:.3} ms; ratio {growth:.2} (target <= 1.5: {}); last request {:.2} MB",
        ms(early),
        ms(late),
        verdict(growth <= 1.5),
        longs[0].last_request_bytes as f64 / 1e6
    );
    let own = |run: &LongRun| run.wall.saturating_sub(run.server_time);
    let (own_short, own_long) = (median_of(&shorts, &own), median_of(&longs, &own));
    let own_ratio = own_long.as_secs_f64() / own_short.as_secs_f64();
    println!(
        "wall without the fake server's share (it parses and checks every body), median of {LONG_RUNS} runs: 200 rounds {:.0} ms, 1000 rounds {:.0} ms; ratio {own_ratio:.2} (target <= 5.5: {})",
        ms(own_short),
        ms(own_long),
        verdict(own_ratio <= 5.5)
    );
    let (wall_short, wall_long) = (
        median_of(&shorts, &|run| run.wall),
        median_of(&longs, &|run| run.wall),
    );
    let (cpu_short, cpu_long) = (
        median_of(&shorts, &|run| run.usage.cpu),
        median_of(&longs, &|run| run.usage.cpu),
    );
    let wall_ratio = wall_long.as_secs_f64() / wall_short.as_secs_f64();
    let cpu_ratio = cpu_long.as_secs_f64() / cpu_short.as_secs_f64();
    println!(
        "wall: 200 rounds {:.0} ms, 1000 rounds {:.0} ms; ratio {wall_ratio:.2} (target <= 5.5: {}); CPU {:.0} ms vs {:.0} ms, ratio {cpu_ratio:.2}",
        ms(wall_short),
        ms(wall_long),
        verdict(wall_ratio <= 5.5),
        ms(cpu_short),
        ms(cpu_long)
    );
    print_rss_growth("6-byte file per round", &binary, "hello\n", [shorts, longs]);
    // Rounds whose results carry real text (a 2 KiB file), where the content, not the
    // fixed cost of a message, is what the history holds.
    let line = "let value = compute(input, &options).unwrap_or_default(); // 64 bytes\n";
    let content = line.repeat(32);
    print_rss_growth(
        "2 KiB file per round",
        &binary,
        &content,
        [Vec::new(), Vec::new()],
    );
}

/// Runs of each length the long-session figures take the median of: a single run's resident
/// set moves by a few hundred KiB (see [`Peaks`]), and its wall by a third.
const LONG_RUNS: usize = 3;

/// Peak RSS growth per round from 200 to 1,000 rounds, against the transcript's growth: the
/// medians of [`LONG_RUNS`] runs of each length (`made` holds those already run), for `VmHWM`
/// and for private memory.
fn print_rss_growth(what: &str, binary: &Path, content: &str, made: [Vec<LongRun>; 2]) {
    let mut runs = made;
    while runs[0].len() < LONG_RUNS || runs[1].len() < LONG_RUNS {
        runs[0].push(long_run_of(binary, 200, content));
        runs[1].push(long_run_of(binary, 1_000, content));
    }
    let transcript_per_round = (runs[1][0].session_bytes - runs[0][0].session_bytes) as f64 / 800.0;
    let median_of = |runs: &[LongRun], kib: fn(&LongRun) -> i64| {
        let mut values: Vec<i64> = runs.iter().map(kib).collect();
        values.sort();
        values[values.len() / 2]
    };
    let figure = |kib: fn(&LongRun) -> i64| {
        let (short, long) = (median_of(&runs[0], kib), median_of(&runs[1], kib));
        let per_round = (long - short) as f64 * 1024.0 / 800.0;
        (short, long, per_round, per_round / transcript_per_round)
    };
    let (short, long, rss_per_round, rss_ratio) = figure(|run| run.usage.peak_rss_kib);
    println!(
        "peak RSS ({what}, median of {LONG_RUNS} runs): 200 rounds {:.1} MiB, 1000 rounds {:.1} MiB; growth {rss_per_round:.0} B per round for {transcript_per_round:.0} B of transcript per round; ratio {rss_ratio:.2} (target <= 2: {})",
        short as f64 / 1024.0,
        long as f64 / 1024.0,
        verdict(rss_ratio <= 2.0)
    );
    let (short, long, anon_per_round, anon_ratio) = figure(|run| run.peak_anon_kib);
    println!(
        "  private memory (RssAnon, no code pages; median of {LONG_RUNS}): 200 rounds {:.1} MiB, 1000 rounds {:.1} MiB; growth {anon_per_round:.0} B per round; ratio {anon_ratio:.2}",
        short as f64 / 1024.0,
        long as f64 / 1024.0,
    );
}

#[test]
#[ignore]
fn bench_static_musl_cpu_against_glibc_over_500_rounds() {
    const SAMPLES: usize = 5;
    let figures = |runs: &[LongRun]| {
        let cpu = median(runs.iter().map(|r| r.usage.cpu).collect());
        let rss = runs.iter().map(|r| r.usage.peak_rss_kib).max().unwrap_or(0);
        (cpu, rss)
    };
    let static_bin = static_binary();
    // The two builds run alternately, so that a busy moment of the shared machine falls on
    // both rather than on one build's every sample.
    let (mut glibc_runs, mut musl_runs) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        glibc_runs.push(long_run(&glibc_binary(), 500));
        if let Some(binary) = &static_bin {
            musl_runs.push(long_run(binary, 500));
        }
    }
    let (glibc, glibc_rss) = figures(&glibc_runs);
    println!(
        "500 rounds, glibc build: CPU {:.0} ms (median of {SAMPLES}), peak RSS {:.1} MiB",
        ms(glibc),
        glibc_rss as f64 / 1024.0
    );
    if musl_runs.is_empty() {
        return;
    }
    let (musl, musl_rss) = figures(&musl_runs);
    let ratio = musl.as_secs_f64() / glibc.as_secs_f64();
    println!(
        "500 rounds, static musl build: CPU {:.0} ms (median of {SAMPLES}, alternating with the glibc build), peak RSS {:.1} MiB; musl / glibc {ratio:.2} (target <= 1.3: {})",
        ms(musl),
        musl_rss as f64 / 1024.0,
        verdict(ratio <= 1.3)
    );
}

/// `strace -c` counts of the memory-mapping calls of one `rounds`-round run of `binary`, or
/// `None` when strace is not installed.
fn mapping_calls(binary: &Path, rounds: usize) -> Option<std::collections::BTreeMap<String, u64>> {
    let (server, home, work) = read_file_loop_of(rounds, "hello\n");
    let out = home.join("strace.txt");
    let mut cmd = reasonix_binary(Path::new("strace"), &home, work.path());
    cmd.args(["-f", "-c", "-e", "trace=mmap,munmap,mremap,brk", "-o"])
        .arg(&out)
        .arg(binary)
        .args(["run", "--output-format", "json", "loop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = cmd.status().ok()?;
    assert!(status.success(), "{} under strace failed", binary.display());
    assert_eq!(server.requests().len(), rounds + 1);
    let text = std::fs::read_to_string(&out).ok()?;
    // Rows: % time, seconds, usecs/call, calls, [errors,] syscall.
    let calls = text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let calls = fields.get(3)?.parse::<u64>().ok()?;
            Some((fields.last()?.to_string(), calls))
        })
        .filter(|(name, _)| name != "total")
        .collect();
    Some(calls)
}

/// Memory-mapping calls per round of a `read_file` loop, from the difference between a
/// 100-round and a 500-round run (start-up and exit cancel out).
fn print_mapping_calls_per_round(what: &str, binary: &Path) {
    let (Some(short), Some(long)) = (mapping_calls(binary, 100), mapping_calls(binary, 500)) else {
        println!("{what}: strace not found; mmap/munmap calls per round not measured");
        return;
    };
    let per_round = |name: &str| {
        let count = |calls: &std::collections::BTreeMap<String, u64>| {
            calls.get(name).copied().unwrap_or(0) as f64
        };
        (count(&long) - count(&short)) / 400.0
    };
    println!(
        "{what}: per round {:.1} mmap, {:.1} munmap, {:.1} mremap, {:.1} brk (strace, 500 rounds minus 100)",
        per_round("mmap"),
        per_round("munmap"),
        per_round("mremap"),
        per_round("brk"),
    );
}

#[test]
#[ignore]
fn bench_mmap_churn_per_round() {
    print_mapping_calls_per_round("glibc build", &glibc_binary());
    if let Some(static_bin) = static_binary() {
        print_mapping_calls_per_round("static musl build", &static_bin);
    }
}

// ---------------------------------------------------------------------------------------
// Streamed output against curl.

/// Tokens of the streamed answer in [`bench_streamed_output_against_curl`].
const STREAM_BENCH_TOKENS: usize = 100_000;

/// A 100k-token answer as the fake streams it: one text delta per event (one chunked piece
/// each), then finish, usage and `[DONE]`.
fn streamed_answer_events() -> Vec<String> {
    use crate::util::fake_openai::{done, sse_finish, sse_text, sse_usage};
    let mut events: Vec<String> = (0..STREAM_BENCH_TOKENS)
        .map(|i| sse_text(&format!("t{i} ")))
        .collect();
    events.push(sse_finish("stop"));
    events.push(sse_usage(100, STREAM_BENCH_TOKENS as u64, 0));
    events.push(done());
    events
}

/// Runs `cmd` with its stdout drained from a pipe: the child's usage and the bytes it wrote.
fn run_into_pipe(cmd: &mut Command) -> (ChildUsage, usize) {
    use std::io::Read;
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut total = 0;
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
        }
        total
    });
    let usage = wait_with_usage(child);
    (usage, reader.join().unwrap())
}

/// CPU (user + system, from `wait4`) of `reasonix run` printing a 100k-token streamed answer
/// to a pipe against `curl -sN` fetching the same event stream from the same fake server to a
/// pipe. The fake server runs in this process, so its CPU is in neither figure.
#[test]
#[ignore]
fn bench_streamed_output_against_curl() {
    const SAMPLES: usize = 5;
    if Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        println!("streamed output against curl: curl not found; comparison skipped");
        return;
    }
    let events = streamed_answer_events();
    let expected_text: usize = (0..STREAM_BENCH_TOKENS)
        .map(|i| format!("t{i} ").len())
        .sum();
    let home = Dir::new();
    let work = Dir::new();
    // The test build (glibc) always; the shipped static musl binary when `make bench` names it.
    let mut binaries = vec![("reasonix run", crate::util::bin())];
    binaries.extend(static_binary().map(|b| ("static musl reasonix run", b)));
    let mut ours = vec![Vec::new(); binaries.len()];
    let mut theirs = Vec::new();
    let (mut our_bytes, mut their_bytes) = (0, 0);
    for _ in 0..SAMPLES {
        for ((_, binary), samples) in binaries.iter().zip(&mut ours) {
            let server = FakeOpenAI::start(vec![Reply::events(events.clone())]);
            use_fake_provider(&home, &server.base_url(), "");
            let mut cmd = reasonix_binary(binary, &home, work.path());
            cmd.env("FAKE_API_KEY", "k")
                .args(["run", "--output-format", "text", "go"])
                .stderr(Stdio::null());
            let (usage, bytes) = run_into_pipe(&mut cmd);
            assert_eq!(usage.code, 0, "{} failed", binary.display());
            assert!(bytes >= expected_text, "reasonix printed {bytes} bytes");
            samples.push(usage.cpu);
            our_bytes = bytes;
        }

        let server = FakeOpenAI::start(vec![Reply::events(events.clone())]);
        let mut cmd = Command::new("curl");
        cmd.args([
            "-sN",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
        ])
        .arg(r#"{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"go"}]}"#)
        .arg(format!("{}/chat/completions", server.base_url()))
        .stdin(Stdio::null())
        .stderr(Stdio::null());
        let (usage, bytes) = run_into_pipe(&mut cmd);
        assert_eq!(usage.code, 0, "curl failed");
        theirs.push(usage.cpu);
        their_bytes = bytes;
    }
    let theirs = median(theirs);
    for ((what, _), samples) in binaries.iter().zip(ours) {
        let ours = median(samples);
        let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
        println!(
            "streamed output, {STREAM_BENCH_TOKENS} tokens to a pipe: {what} CPU {:.1} ms ({our_bytes} B of text), curl -sN CPU {:.1} ms ({their_bytes} B of events); median of {SAMPLES}; ratio {ratio:.2} (target <= 2.5: {})",
            ms(ours),
            ms(theirs),
            verdict(ratio <= 2.5)
        );
    }
}

// ---------------------------------------------------------------------------------------
// Compaction and the prompt cache.

/// How well a run's requests share their prefixes, for a prompt cache.
///
/// Two shares of common prefixes, `cp_i = common_prefix(req_i, req_{i-1})`:
/// - `repeated = Σ cp_i / Σ len(req_i)`: the share of each request's bytes that a cache
///   holding the previous request serves. The bytes appended since the previous request (a
///   12k-token result, the user's turn) are never in a cache, so it cannot exceed
///   `1 - Σ appended_i / Σ len(req_i)` (`repeated_ceiling`).
/// - `kept = Σ cp_i / Σ len(req_{i-1})`: the share of the previous request that the next one
///   keeps as its prefix. Appending never lowers it; only a rewrite of the history does, so
///   it measures what compaction breaks. Its ceiling: every result that is shortened was in
///   the previous request in full when it was shortened, and no request exceeds the window,
///   so `kept <= 1 - Σ shortened results / (pairs × window)` for any policy that shows each
///   result once in full (`kept_ceiling`).
///
/// Over a long run both shares are nearly equal: what is appended must, once the window is
/// full, be removed again, and `Σ appended - Σ lost = len(last) - len(first)`.
struct PrefixFigures {
    repeated: f64,
    repeated_ceiling: f64,
    kept: f64,
    kept_ceiling: f64,
    /// Requests that do not start with the whole previous request.
    changes: Vec<usize>,
}

fn prefix_figures(requests: &[Value], window: u64) -> PrefixFigures {
    let texts: Vec<String> = requests.iter().map(prompt_text).collect();
    let cp: Vec<usize> = texts
        .windows(2)
        .map(|pair| common_prefix(&pair[0], &pair[1]))
        .collect();
    let shared: usize = cp.iter().sum();
    let later: usize = texts[1..].iter().map(String::len).sum();
    let earlier: usize = texts[..texts.len() - 1].iter().map(String::len).sum();
    let appended: usize = requests
        .windows(2)
        .map(|pair| appended_bytes(&pair[0], &pair[1]))
        .sum();
    let changes = texts
        .windows(2)
        .enumerate()
        .filter(|(_, pair)| !pair[1].starts_with(&pair[0][..pair[0].len() - 1]))
        .map(|(i, _)| i + 1)
        .collect();
    let window_bytes = window as f64 * PrefixCache::BYTES_PER_TOKEN as f64;
    PrefixFigures {
        repeated: shared as f64 / later as f64,
        repeated_ceiling: 1.0 - appended as f64 / later as f64,
        kept: shared as f64 / earlier as f64,
        kept_ceiling: 1.0
            - shortened_result_bytes(requests) as f64 / (cp.len() as f64 * window_bytes),
        changes,
    }
}

/// Bytes of the messages `after` carries past the last message of `before`.
fn appended_bytes(before: &Value, after: &Value) -> usize {
    let (old, new) = (
        before["messages"].as_array().expect("messages"),
        after["messages"].as_array().expect("messages"),
    );
    let from = old
        .last()
        .and_then(|last| new.iter().rposition(|m| m == last))
        .map_or(0, |i| i + 1);
    new[from..].iter().map(|m| m.to_string().len() + 1).sum()
}

/// Bytes (as JSON strings) of the tool results sent in full at some point and not in the
/// last request.
fn shortened_result_bytes(requests: &[Value]) -> usize {
    let mut full: std::collections::BTreeMap<String, usize> = Default::default();
    for body in requests {
        for m in body["messages"].as_array().expect("messages") {
            if let Some(id) = m["tool_call_id"].as_str() {
                let len = m["content"].to_string().len();
                let entry = full.entry(id.to_string()).or_default();
                *entry = (*entry).max(len);
            }
        }
    }
    let last = requests.last().expect("a request")["messages"]
        .as_array()
        .expect("messages");
    full.iter()
        .filter(|(id, len)| {
            !last.iter().any(|m| {
                m["tool_call_id"].as_str() == Some(id.as_str())
                    && m["content"].to_string().len() == **len
            })
        })
        .map(|(_, len)| len)
        .sum()
}

/// A chat of `turns` turns in which each turn reads a file of about `result_tokens` tokens
/// (four bytes each, as the fake counts them): every figure of [`PrefixFigures`], the
/// append-only stretches between prefix changes, summary calls per 10 rounds and the cache-hit
/// ratio the DeepSeek-like fake reports. User facts verbatim and valid pairing are asserted.
fn compaction_scenario(
    name: &str,
    window: u64,
    result_tokens: usize,
    turns: usize,
    kept_target: f64,
    summaries_per_10_target: Option<f64>,
) {
    let mut h = harness(
        conversation_server("Noted."),
        window,
        Box::new(AllowAll),
        FEW_TOOLS,
    );
    write_data(&h.work, 20, result_tokens * PrefixCache::BYTES_PER_TOKEN);
    for turn in 0..turns {
        h.turn(fact(turn));
    }
    let requests = paired_main_requests(&h.server);
    // Every user message of the run, byte for byte, in the last request.
    let users = user_texts(requests.last().unwrap());
    let kept = (0..turns)
        .filter(|&t| users.contains(&fact(t).as_str()))
        .count();
    assert_eq!(kept, turns, "user facts lost");
    let tiers = crate::context::compactions(&h.events());
    let count = |tier: &str| tiers.iter().filter(|(_, t)| t == tier).count();
    let figures = prefix_figures(&requests, window);
    let mut stretches: Vec<usize> = figures
        .changes
        .windows(2)
        .map(|pair| pair[1] - pair[0] - 1)
        .collect();
    stretches.sort_unstable();
    let stats = h.agent.stats();
    let per_10 = stats.summary_requests as f64 * 10.0 / turns as f64;
    let summary_note = match summaries_per_10_target {
        Some(target) => format!(" (target <= {target}: {})", verdict(per_10 <= target)),
        None => String::new(),
    };
    println!(
        "{name}, {turns} rounds, {} requests: {} prefix changes ({} snips, {} prunes, {} folds); \
         append-only requests between two changes: fewest {}, median {}",
        requests.len(),
        figures.changes.len(),
        count("snip"),
        count("prune"),
        count("fold"),
        stretches.first().copied().unwrap_or(0),
        stretches.get(stretches.len() / 2).copied().unwrap_or(0),
    );
    println!(
        "{name}: (b) previous request kept as the next one's prefix {:.1}% (target >= {:.0}%: {}; \
         ceiling for any policy that shows each result once in full {:.1}%; the target is judged \
         on (b), the share compaction can break, since (a) also counts the appended bytes)",
        figures.kept * 100.0,
        kept_target * 100.0,
        verdict(figures.kept >= kept_target),
        figures.kept_ceiling * 100.0
    );
    println!(
        "{name}: (a) request bytes that repeat the previous request {:.1}% (ceiling {:.1}%: \
         appended bytes are never cached); cache-hit ratio reported by the DeepSeek-like fake {:.1}%",
        figures.repeated * 100.0,
        figures.repeated_ceiling * 100.0,
        stats.usage.cache_hit_ratio().unwrap_or(0.0) * 100.0
    );
    println!(
        "{name}: {} summary calls, {per_10:.2} per 10 rounds{summary_note}; \
         user facts kept verbatim {kept}/{turns}; tool-call pairing valid in all {} requests",
        stats.summary_requests,
        requests.len()
    );
}

#[test]
#[ignore]
fn bench_compaction_128k_window_12k_token_results() {
    compaction_scenario(
        "128k window, 12k-token results",
        128_000,
        12_000,
        200,
        0.95,
        None,
    );
}

#[test]
#[ignore]
fn bench_compaction_16k_window_6k_token_results() {
    compaction_scenario(
        "16k window, 6k-token results",
        16_000,
        6_000,
        40,
        0.85,
        Some(1.0),
    );
}

/// A server for the fleet bench: the parent's first request gets `first` (one call, or four
/// `task` calls), its second an answer; each child lists the workspace, reads a file, then
/// answers, so a child is three instant requests and two tool rounds.
fn delegation_server(first: Vec<(String, String, String)>) -> FakeOpenAI {
    FakeOpenAI::start_with(move |requests| {
        let body = &requests.last().unwrap().body;
        let messages = body["messages"].as_array().unwrap();
        let tool_results = messages.iter().filter(|m| m["role"] == "tool").count();
        let is_parent = messages[1]["content"] == "go";
        match (is_parent, tool_results) {
            (true, 0) => {
                let calls: Vec<(&str, &str, &str)> = first
                    .iter()
                    .map(|(id, name, args)| (id.as_str(), name.as_str(), args.as_str()))
                    .collect();
                Reply::tool_calls(&calls)
            }
            (true, _) => Reply::text("parent done"),
            (false, 0) => Reply::tool_calls(&[("l", "ls", "{}")]),
            (false, 1) => Reply::tool_calls(&[("r", "read_file", r#"{"path":"notes.txt"}"#)]),
            (false, _) => Reply::text("child answer"),
        }
    })
}

#[test]
#[ignore]
fn bench_fleet_against_sequential_tasks() {
    const SAMPLES: usize = 5;
    let prompts = ["survey a", "survey b", "survey c", "survey d"];
    let fleet_args = serde_json::json!({
        "tasks": prompts.iter().map(|p| serde_json::json!({"prompt": p, "read_only": true})).collect::<Vec<_>>()
    })
    .to_string();
    let fleet = vec![("f".to_string(), "fleet".to_string(), fleet_args)];
    let sequential: Vec<(String, String, String)> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let args = serde_json::json!({"prompt": p}).to_string();
            (format!("t{i}"), "read_only_task".to_string(), args)
        })
        .collect();
    let time = |first: &Vec<(String, String, String)>, max_parallel: &str| {
        let mut samples = Vec::new();
        for _ in 0..SAMPLES {
            let server = delegation_server(first.clone());
            let home = Dir::new();
            let work = Dir::new();
            work.write("notes.txt", "some notes\n");
            use_fake_provider(&home, &server.base_url(), max_parallel);
            let started = Instant::now();
            let out =
                crate::util::run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
                    "run",
                    "--permission-mode",
                    "yolo",
                    "go",
                ]));
            samples.push(started.elapsed());
            assert_eq!(out.code, 0, "{}", out.stderr);
            assert_eq!(server.requests().len(), 2 + 4 * 3);
        }
        median(samples)
    };
    // Four read_only_task calls in one round would run side by side too; one at a time is
    // the sequential baseline.
    let one_by_one = time(&sequential, "[agent]\nmax_parallel_tools = 1\n");
    let together = time(&fleet, "");
    println!(
        "fleet of 4 tasks (3 requests, 2 tool rounds each; instant fake model): median {:.1} ms; \
         4 sequential tasks: {:.1} ms; ratio {:.2}x ({} cores)",
        together.as_secs_f64() * 1000.0,
        one_by_one.as_secs_f64() * 1000.0,
        together.as_secs_f64() / one_by_one.as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
}

/// A 20-turn chat of a planner/executor pair against the fake's DeepSeek-like prefix cache,
/// one cache per model: the user reports the plan done every fifth turn, so the planner plans
/// four times and the executor works all twenty turns. Prints each model's cache-hit ratio.
#[test]
#[ignore]
fn bench_coordinator_cache_hits_over_20_turns() {
    use crate::coordinator::{two_model_config, two_model_server, DONE, EXECUTOR, PLANNER};
    let (server, tally) = two_model_server();
    let home = Dir::new();
    let work = Dir::new();
    work.write("notes.txt", "hello\n");
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let turns: String = (1..=20)
        .map(|n| {
            let done = if n % 5 == 0 { DONE } else { "" };
            format!("turn {n}: look at the notes again {done}\n")
        })
        .collect();
    let out = crate::util::piped_chat(&home, work.path(), &[], &turns);
    assert_eq!(out.code, 0, "{out:?}");
    let tally = tally.lock().unwrap();
    println!("coordinator, 20 turns (plan reported done every 5th turn):");
    for (role, model) in [("planner", PLANNER), ("executor", EXECUTOR)] {
        let (prompt, hit) = tally.get(model).copied().unwrap_or_default();
        let requests = server
            .requests()
            .iter()
            .filter(|r| r.body["model"] == model)
            .count();
        println!(
            "  {role:8} {model}: {requests} requests, {prompt} prompt tokens, {hit} cache hits = {:.1}%",
            hit as f64 * 100.0 / prompt.max(1) as f64
        );
    }
}

/// The server's resident set now and at its peak, in MiB (`VmRSS`, `VmHWM`).
fn serve_memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[test]
#[ignore]
fn bench_serve_fifty_sse_clients_on_one_session() {
    const CLIENTS: usize = 50;
    let answer = "word ".repeat(400);
    let fake = FakeOpenAI::start(vec![Reply::text(&answer)]);
    let server = crate::serve::start(&fake, "", &[]);
    let id = crate::serve::new_session(&server);
    let (idle, _) = serve_memory(server.child.id());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| crate::serve::Events::open(&server, &id))
        .collect();
    let started = Instant::now();
    let readers: Vec<_> = clients
        .into_iter()
        .map(|mut events| {
            std::thread::spawn(move || {
                let mut seen = events.until("text");
                let first = started.elapsed();
                seen.extend(events.until("turn_end"));
                let texts = seen.iter().filter(|e| e["type"] == "text").count();
                (
                    first,
                    started.elapsed(),
                    crate::serve::text_of(&seen).len(),
                    texts,
                )
            })
        })
        .collect();
    let sent = crate::serve::post(
        &server,
        &format!("/api/sessions/{id}/messages"),
        serde_json::json!({"text": "go"}),
    );
    assert_eq!(sent.status, 200);
    let mut firsts = Vec::new();
    let mut latencies = Vec::new();
    let mut events = 0;
    for reader in readers {
        let (first, latency, chars, texts) = reader.join().unwrap();
        assert_eq!(chars, answer.len());
        firsts.push(first);
        latencies.push(latency);
        events = texts;
    }
    let (now, peak) = serve_memory(server.child.id());
    firsts.sort();
    latencies.sort();
    println!(
        "serve: {CLIENTS} SSE clients on one session, {events} text events each: first text seen after median {:.1} ms, max {:.1} ms; turn end seen after median {:.1} ms, max {:.1} ms; RSS {:.1} MiB idle, {:.1} MiB after, peak {:.1} MiB",
        ms(firsts[firsts.len() / 2]),
        ms(firsts[firsts.len() - 1]),
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() - 1]),
        idle,
        now,
        peak
    );
}

#[test]
#[ignore]
fn bench_serve_twenty_sessions_at_once() {
    const SESSIONS: usize = 20;
    let answer = "word ".repeat(100);
    let fake = FakeOpenAI::start((0..SESSIONS).map(|_| Reply::text(&answer)).collect());
    let server = crate::serve::start(&fake, "", &[]);
    let (idle, _) = serve_memory(server.child.id());
    let ids: Vec<String> = (0..SESSIONS)
        .map(|_| crate::serve::new_session(&server))
        .collect();
    let started = Instant::now();
    let readers: Vec<_> = ids
        .iter()
        .map(|id| {
            let mut events = crate::serve::Events::open(&server, id);
            std::thread::spawn(move || {
                let seen = events.until("turn_end");
                (started.elapsed(), seen.last().unwrap()["outcome"] == "done")
            })
        })
        .collect();
    for id in &ids {
        let sent = crate::serve::post(
            &server,
            &format!("/api/sessions/{id}/messages"),
            serde_json::json!({"text": "go"}),
        );
        assert_eq!(sent.status, 200);
    }
    let mut latencies = Vec::new();
    for reader in readers {
        let (latency, done) = reader.join().unwrap();
        assert!(done);
        latencies.push(latency);
    }
    let wall = started.elapsed();
    let (now, peak) = serve_memory(server.child.id());
    latencies.sort();
    println!(
        "serve: {SESSIONS} sessions, one turn each at once: all done in {:.1} ms (median turn {:.1} ms, max {:.1} ms); RSS {:.1} MiB idle, {:.1} MiB with {SESSIONS} sessions, peak {:.1} MiB",
        ms(wall),
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() - 1]),
        idle,
        now,
        peak
    );
}

/// Loading a hostile project reasonix.toml (deny rules, unknown keys and providers, `n` of
/// each, trusted so every provider is merged): linear work means 3x the entries take about 3x
/// the time. It once grew quadratically (129 s for 30,000 of each in a debug build).
#[test]
#[ignore]
fn bench_config_load_of_a_huge_project_file() {
    let time = |n: usize| {
        let fx = crate::config::huge_project_fixture(n);
        let options = reasonix::config::LoadOptions {
            trust_project: true,
            ..fx.options(None)
        };
        let runs: Vec<Duration> = (0..3)
            .map(|_| {
                let started = Instant::now();
                reasonix::config::load(&options).expect("the huge file loads");
                started.elapsed()
            })
            .collect();
        median(runs)
    };
    let (small, large) = (time(10_000), time(30_000));
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    println!(
        "config load of a project file with 10,000 / 30,000 deny rules, unknown keys and providers each: {:.0} / {:.0} ms; ratio {ratio:.2} (linear is about 3)",
        ms(small),
        ms(large)
    );
}
