//! The `reasonix` binary: hands the arguments to the CLI and exits with its code.

fn main() {
    // Lossy on purpose: a non-UTF-8 argument becomes visible U+FFFD instead of a panic.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    std::process::exit(reasonix::cli::main(args));
}
