//! The `reasonix` binary: hands the arguments to the CLI and exits with its code.

fn main() {
    // First, before any key is read: other processes of this user (a jailed command among
    // them) may not read our memory, environment or descriptors through /proc. Failing is
    // not fatal (the jail still drops the capabilities that would bypass it), so no message.
    let _ = reasonix::sandbox::sys::protect_self();
    // As PID 1 of a container (or a subreaper) every orphan lands on us: reap them.
    reasonix::sandbox::reaper::start();
    // Lossy on purpose: a non-UTF-8 argument becomes visible U+FFFD instead of a panic.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let code = reasonix::cli::main(args);
    // Whatever is still running (a server a tool left behind, a version probe) goes with us,
    // and is gone, not dying, when we exit.
    reasonix::sandbox::process::shut_down();
    std::process::exit(code);
}
