//! The `bash` tool: runs one shell command in the workspace and reports its combined output and
//! how it ended.
//!
//! Building the [`CommandSpec`] ([`shell_command`]) is kept apart from running it so the sandbox
//! rewrites the spec (`Policy::confine_command`: wrap it in bubblewrap or attach a Landlock
//! ruleset) without this tool knowing how. Process lifetime, output capture and group kills
//! belong to `sandbox::process`; whether the command may run at all is decided by the
//! permission gate before `execute`.
//!
//! The child's environment is the inherited one minus the secret variables of the run
//! (`ToolContext::secret_env`), plus a few non-interactive defaults ([`NON_INTERACTIVE_ENV`]):
//! stdin is closed and there is no controlling terminal, so pagers and prompts could only hang
//! or fail, and colour escapes would only cost tokens.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::{ShellConfig, ShellPrefer, POWERSHELL_ELSEWHERE};
use crate::sandbox::process::{self, CommandSpec, Exit, Finished, OutputCap, Stop, Stragglers};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

/// The largest timeout the model may ask for, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// Output kept from a command: the first 30 KiB and the last 10 KiB.
pub const OUTPUT_CAP: OutputCap = OutputCap {
    head_bytes: 30 * 1024,
    tail_bytes: 10 * 1024,
};

/// Set in every command's environment: pagers print straight through (`git log` would otherwise
/// try `less`), `TERM=dumb` turns off colour and cursor tricks in tools that look at it rather
/// than at isatty, and git fails fast instead of asking for credentials.
pub const NON_INTERACTIVE_ENV: [(&str, &str); 4] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("TERM", "dumb"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

const DESCRIPTION: &str = "Runs a shell command with `bash -c` (or `sh -c` when bash is not installed) in the workspace root and returns its stdout and stderr, interleaved in the order they were written, followed by a line with the exit code. A non-zero exit code is reported, not treated as a failure of the tool. stdin is closed and there is no terminal: pass flags such as `--yes` or `--no-pager` and avoid interactive programs. Each call starts a fresh shell, so `cd` and variables do not carry over; use absolute paths or chain commands with `&&`. The command and all its child processes are killed when the timeout expires (the configured default, 120 seconds unless changed; at most 600 seconds when given). Output longer than 40 KiB keeps the first 30 KiB and the last 10 KiB and states how many bytes were left out. Background jobs that still write to the output when the command ends are killed; redirect their output to a file (`server > server.log 2>&1 &`) to keep them running. Prefer the dedicated file tools for reading, searching and editing files when they are available.";

pub struct Bash;

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line, run with `bash -c` in the workspace root."
                },
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_SECS,
                    "description": "Seconds before the command and its children are killed. Omit to use the configured default."
                },
                "description": {
                    "type": "string",
                    "description": "A short summary of what the command does, shown to the user (for example \"Run the unit tests\")."
                }
            },
            "required": ["command"]
        })
    }

    fn family(&self) -> Family {
        Family::Shell
    }

    fn subjects(&self) -> Subjects {
        Subjects::Command("command")
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let command = args::required_str(args, "command")?;
        if command.trim().is_empty() {
            return Err(ToolError::InvalidArgs(
                "`command` is empty; pass the shell command to run".into(),
            ));
        }
        let timeout = timeout(args, ctx)?;
        // Only shown by the UI, but a wrong type is still the model's mistake to hear about.
        args::optional_str(args, "description")?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let spec = ctx
            .sandbox
            .confine_command(shell_command(command, timeout, ctx))?;
        let finished =
            process::run(&spec, &ctx.cancel).map_err(|e| ToolError::Failed(e.to_string()))?;
        if finished.stopped == Some(Stop::Cancelled) {
            return Err(ToolError::Cancelled);
        }
        let mut text = render(&finished, timeout);
        if let Some(notice) = ctx.sandbox.take_notice() {
            text.push_str(&format!("\n[{notice}]"));
        }
        Ok(text)
    }
}

/// The model's `timeout`, capped at [`MAX_TIMEOUT_SECS`], or the run's default.
fn timeout(args: &Value, ctx: &ToolContext) -> Result<Option<Duration>, ToolError> {
    match args::optional_u64(args, "timeout")? {
        Some(0) => Err(ToolError::InvalidArgs(
            "`timeout` must be at least 1 second; omit it to use the default".into(),
        )),
        Some(secs) => Ok(Some(Duration::from_secs(secs.min(MAX_TIMEOUT_SECS)))),
        None => Ok(ctx.bash_timeout),
    }
}

/// What running `command` means, before any sandbox rewrites it.
pub fn shell_command(command: &str, timeout: Option<Duration>, ctx: &ToolContext) -> CommandSpec {
    let shell = ctx
        .shell
        .clone()
        .unwrap_or_else(|| select_shell(std::env::var_os("PATH").as_deref()));
    let mut spec = CommandSpec::new(shell, &ctx.cwd);
    spec.args = vec![OsString::from("-c"), OsString::from(command)];
    spec.env_remove = ctx.secret_env.iter().cloned().collect();
    spec.env_set = NON_INTERACTIVE_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    spec.timeout = timeout;
    spec.output_cap = OUTPUT_CAP;
    spec
}

/// The first `bash` on `path`, else the first `sh`, else `/bin/sh` (which POSIX systems have
/// even when PATH is empty or unset).
pub fn select_shell(path: Option<&OsStr>) -> PathBuf {
    find_on(path, &["bash", "sh"]).unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// The first executable named one of `names` (in that order of preference) on `path`.
fn find_on(path: Option<&OsStr>, names: &[&str]) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    names.iter().find_map(|name| {
        dirs.iter()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    })
}

/// The interpreter `[tools.shell]` asks for, given the search `path`: `path` when set (an
/// absolute, executable file), else the first `bash` (`prefer = "bash"`, which must exist) or
/// `sh` (`prefer = "sh"`, else `/bin/sh`) on it; `None` for `auto`, which keeps
/// [`select_shell`]. PowerShell is for Windows and refused here. The error is one line naming
/// the key and the fix.
pub fn chosen_shell(
    shell: &ShellConfig,
    search: Option<&OsStr>,
) -> Result<Option<PathBuf>, String> {
    if let Some(path) = shell.path.as_ref().filter(|p| !p.as_os_str().is_empty()) {
        if !path.is_absolute() || !is_executable(path) {
            return Err(format!(
                "`tools.shell.path` `{}` is not an executable file given by its absolute path; \
                 fix it or remove it",
                path.display()
            ));
        }
        return Ok(Some(path.clone()));
    }
    match shell.prefer {
        ShellPrefer::Auto => Ok(None),
        ShellPrefer::Bash => find_on(search, &["bash"]).map(Some).ok_or_else(|| {
            "`tools.shell.prefer = \"bash\"` but no bash is on PATH; install it, set \
             `tools.shell.path`, or use \"sh\" or \"auto\""
                .to_string()
        }),
        ShellPrefer::Sh => Ok(Some(
            find_on(search, &["sh"]).unwrap_or_else(|| PathBuf::from("/bin/sh")),
        )),
        ShellPrefer::Powershell | ShellPrefer::Pwsh => Err(POWERSHELL_ELSEWHERE.to_string()),
    }
}

fn is_executable(path: &Path) -> bool {
    crate::platform::is_executable(path)
}

/// The output, then one line saying how the command ended, then notes the model can act on.
fn render(finished: &Finished, timeout: Option<Duration>) -> String {
    let mut text = finished.output.to_text();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    match (finished.stopped, timeout) {
        (Some(Stop::TimedOut), Some(limit)) => {
            text.push_str(&format!(
                "[timed out after {}; process group killed]\n[hint: pass a larger `timeout` (at most {MAX_TIMEOUT_SECS} seconds), or start long jobs in the background with their output redirected to a file]",
                format_duration(limit)
            ));
        }
        _ => text.push_str(&exit_line(finished.exit)),
    }
    match finished.stragglers {
        Stragglers::None => {}
        Stragglers::Killed => text.push_str(
            "\n[background processes still writing to the output were killed when the command ended; redirect their output to a file (`cmd > cmd.log 2>&1 &`) to keep them running]",
        ),
        Stragglers::Abandoned => text.push_str(
            "\n[a process outside the command's process group kept the output open; anything it writes later is lost]",
        ),
    }
    text
}

fn exit_line(exit: Exit) -> String {
    match exit {
        Exit::Code(code) => format!("[exit code: {code}]"),
        Exit::Signal(_) => format!("[killed by {exit}]"),
    }
}

fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn falls_back_to_sh_when_bash_is_not_on_path() {
        let only_sh = TempDir::new("only-sh");
        symlink("/bin/sh", only_sh.join("sh")).unwrap();
        let not_executable = TempDir::new("noexec");
        std::fs::write(not_executable.join("bash"), "").unwrap();
        let path = std::env::join_paths([not_executable.path(), only_sh.path()]).unwrap();
        assert_eq!(select_shell(Some(&path)), only_sh.join("sh"));
    }

    #[test]
    fn prefers_bash_anywhere_on_path_over_an_earlier_sh() {
        let sh_dir = TempDir::new("sh-first");
        symlink("/bin/sh", sh_dir.join("sh")).unwrap();
        let bash_dir = TempDir::new("bash-later");
        std::fs::write(bash_dir.join("bash"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            bash_dir.join("bash"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let path = std::env::join_paths([sh_dir.path(), bash_dir.path()]).unwrap();
        assert_eq!(select_shell(Some(&path)), bash_dir.join("bash"));
    }

    #[test]
    fn the_shell_setting_chooses_the_interpreter() {
        let dir = TempDir::new("shells");
        for name in ["bash", "sh"] {
            symlink("/bin/sh", dir.join(name)).unwrap();
        }
        let search = Some(dir.path().as_os_str());
        let config = |prefer, path: Option<&str>| ShellConfig {
            prefer,
            path: path.map(PathBuf::from),
        };
        assert_eq!(
            chosen_shell(&config(ShellPrefer::Auto, None), search),
            Ok(None)
        );
        assert_eq!(
            chosen_shell(&config(ShellPrefer::Bash, None), search),
            Ok(Some(dir.join("bash")))
        );
        assert_eq!(
            chosen_shell(&config(ShellPrefer::Sh, None), search),
            Ok(Some(dir.join("sh")))
        );
        assert_eq!(
            chosen_shell(&config(ShellPrefer::Sh, None), None),
            Ok(Some(PathBuf::from("/bin/sh")))
        );
        // `path` wins over `prefer`; it must be absolute and executable.
        assert_eq!(
            chosen_shell(&config(ShellPrefer::Bash, Some("/bin/sh")), None),
            Ok(Some(PathBuf::from("/bin/sh")))
        );
        for bad in ["sh", "/nonexistent/zsh"] {
            let err = chosen_shell(&config(ShellPrefer::Auto, Some(bad)), search).unwrap_err();
            assert!(err.starts_with("`tools.shell.path`"), "{err}");
        }
        let err = chosen_shell(&config(ShellPrefer::Bash, None), None).unwrap_err();
        assert!(err.contains("no bash is on PATH"), "{err}");
        for prefer in [ShellPrefer::Powershell, ShellPrefer::Pwsh] {
            let err = chosen_shell(&config(prefer, None), search).unwrap_err();
            assert_eq!(err, POWERSHELL_ELSEWHERE);
        }
    }

    #[test]
    fn empty_or_missing_path_uses_bin_sh() {
        assert_eq!(select_shell(None), PathBuf::from("/bin/sh"));
        assert_eq!(select_shell(Some(OsStr::new(""))), PathBuf::from("/bin/sh"));
    }

    #[test]
    fn timeout_is_validated_and_capped() {
        let ctx = ToolContext::new(PathBuf::from("/"));
        assert_eq!(
            timeout(&json!({"timeout": 5000}), &ctx).unwrap(),
            Some(Duration::from_secs(MAX_TIMEOUT_SECS))
        );
        assert_eq!(timeout(&json!({}), &ctx).unwrap(), ctx.bash_timeout);
        assert!(timeout(&json!({"timeout": 0}), &ctx).is_err());
        assert!(timeout(&json!({"timeout": "soon"}), &ctx).is_err());
    }
}
