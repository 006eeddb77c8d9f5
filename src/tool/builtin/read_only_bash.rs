//! `bash` for read-only subagents (`read_only_task`, `read_only_skill`, read-only profiles):
//! the ordinary bash tool, run in a jail that binds nothing writable (the child's sandbox is
//! fenced to no path, see `sandbox::Policy::fenced`), so `git log`, `grep -r` or a build
//! script's `--dry-run` work while no command, however it is written, can change the
//! workspace. Read-only by the kernel, not by guessing from the command line: where no jail
//! runs (`[sandbox] bash = "off"`, or no backend), it refuses every command.

use serde_json::Value;

use super::bash::Bash;
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

pub struct ReadOnlyBash;

const DESCRIPTION: &str = "Runs a shell command for inspection only (for example `git log`, \
`git diff`, `ls -R`, `rg PATTERN`) with `bash -c` in the workspace root and returns its \
output and exit code. The command runs in a sandbox where the workspace is read-only: \
anything that writes files fails. stdin is closed, there is no terminal, and the command is \
killed at its timeout (default 120 seconds, at most 600). Prefer read_file, grep, glob and ls \
when they do the job.";

impl Tool for ReadOnlyBash {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        Bash.schema()
    }

    fn family(&self) -> Family {
        Family::Shell
    }

    /// The jail makes every command a reader; the gate still applies its bash rules.
    fn read_only(&self) -> bool {
        true
    }

    fn subjects(&self) -> Subjects {
        Subjects::Command("command")
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let fenced_shut = ctx.sandbox.fence.as_ref().is_some_and(Vec::is_empty);
        let jailed = matches!(ctx.sandbox.jail(), Ok(Some(_)));
        if !fenced_shut || !jailed {
            return Err(ToolError::Failed(
                "this read-only shell needs the bash sandbox (bubblewrap or Landlock with \
                 [sandbox] bash = \"enforce\") to keep the workspace read-only, and it is not \
                 running; use read_file, grep, glob and ls instead"
                    .into(),
            ));
        }
        Bash.execute(args, ctx)
    }
}
