//! The flags `reasonix run`, `reasonix chat` and bare `reasonix` share (model, session,
//! effort, permission mode, project trust, plus the global flags), parsed by one function,
//! [`parse`]. Each command hands it a closure for its own flags; what the closure does not
//! take is an unknown flag, with a did-you-mean from the command's help. Only validation
//! happens here: no I/O, no config.

use super::lex::{Arg, Lexer};
use super::{unknown_flag, Global};
use crate::app::assemble::{Attach, SessionChoice};
use crate::cli::error::Error;
use crate::permission::{parse_posture, Posture};

/// What `run` and `chat` both accept.
#[derive(Debug, Clone, Default)]
pub struct CommonFlags {
    pub global: Global,
    /// `-m/--model REF`.
    pub model: Option<String>,
    /// `-c/--continue` or `--resume ID|PATH`.
    pub resume: Option<SessionChoice>,
    /// `--fork-session`.
    pub attach: Attach,
    /// `--effort LEVEL`.
    pub effort: Option<String>,
    /// `--permission-mode MODE`.
    pub posture: Option<Posture>,
    /// `--trust-project`.
    pub trust_project: bool,
    /// `--trust-project-mcp`.
    pub trust_project_mcp: bool,
    /// `--plan`: start in plan mode.
    pub plan: bool,
    /// `--agent-composition ID`: the composition a new conversation is bound to.
    pub agent_composition: Option<String>,
}

impl CommonFlags {
    /// The session to open: the one `--continue`/`--resume` names, else a new one.
    pub fn session(&self) -> SessionChoice {
        self.resume.clone().unwrap_or(SessionChoice::New)
    }

    /// Consumes `arg` if it is a shared or global flag. Returns false for anything else.
    fn accept(&mut self, arg: &Arg, lexer: &mut Lexer) -> Result<bool, Error> {
        if self.global.accept(arg, lexer)? {
            return Ok(true);
        }
        let flag = arg.shown();
        let mut value = || lexer.value(&flag).map_err(Error::Usage);
        match arg {
            Arg::Short('m') => self.model = Some(value()?),
            Arg::Long(n) if n == "model" => self.model = Some(value()?),
            Arg::Short('c') => self.resume = Some(SessionChoice::Newest),
            Arg::Long(n) if n == "continue" => self.resume = Some(SessionChoice::Newest),
            Arg::Long(n) if n == "resume" => self.resume = Some(SessionChoice::Reference(value()?)),
            Arg::Long(n) if n == "fork-session" => self.attach = Attach::Fork,
            Arg::Long(n) if n == "effort" => self.effort = Some(value()?),
            Arg::Long(n) if n == "permission-mode" => {
                self.posture = Some(parse_posture(&value()?).map_err(Error::Usage)?)
            }
            // The whole workspace for the run, `.mcp.json` launches included.
            Arg::Long(n) if n == "trust-project" => {
                self.trust_project = true;
                self.trust_project_mcp = true;
            }
            Arg::Long(n) if n == "trust-project-mcp" => self.trust_project_mcp = true,
            Arg::Long(n) if n == "plan" => self.plan = true,
            Arg::Long(n) if n == "agent-composition" => self.agent_composition = Some(value()?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Parses the rest of the command line into `common`, handing every argument that is not a
/// shared flag to `own` (which returns false for what it does not know either). `command`
/// names the command in errors. On an error, what was parsed before it stays parsed.
pub fn parse(
    command: &str,
    common: &mut CommonFlags,
    lexer: &mut Lexer,
    mut own: impl FnMut(&Arg, &mut Lexer) -> Result<bool, Error>,
) -> Result<(), Error> {
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if !common.accept(&arg, lexer)? && !own(&arg, lexer)? {
            return Err(unknown_flag(command, &arg));
        }
        if lexer.has_inline_value() {
            return Err(Error::Usage(format!(
                "flag `{}` takes no value",
                arg.shown()
            )));
        }
    }
    Ok(common.attach.check(common.resume.as_ref())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(args: &[&str]) -> (Result<(), Error>, CommonFlags, Vec<String>) {
        let mut lexer = Lexer::new(args.iter().map(|s| s.to_string()));
        let mut common = CommonFlags::default();
        let mut words = Vec::new();
        let result = parse("run", &mut common, &mut lexer, |arg, _| match arg {
            Arg::Value(word) => {
                words.push(word.clone());
                Ok(true)
            }
            _ => Ok(false),
        });
        (result, common, words)
    }

    #[test]
    fn shared_flags_land_in_one_struct_and_the_rest_goes_to_the_command() {
        let (result, common, words) = parse_all(&[
            "-m",
            "fake/x",
            "--resume=abc",
            "--fork-session",
            "--effort",
            "high",
            "--permission-mode",
            "yolo",
            "--trust-project",
            "--plan",
            "-C",
            "/tmp",
            "fix",
            "it",
        ]);
        result.unwrap();
        assert_eq!(common.model.as_deref(), Some("fake/x"));
        assert_eq!(common.resume, Some(SessionChoice::Reference("abc".into())));
        assert_eq!(common.attach, Attach::Fork);
        assert_eq!(common.effort.as_deref(), Some("high"));
        assert_eq!(common.posture, Some(Posture::Yolo));
        // `--trust-project` trusts the whole workspace, its `.mcp.json` launches included.
        assert!(common.trust_project && common.trust_project_mcp);
        assert!(common.plan);
        assert_eq!(
            common.global.cd.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert_eq!(words, vec!["fix", "it"]);
    }

    #[test]
    fn unknown_flags_switch_values_and_a_lone_fork_are_usage_errors() {
        let (result, _, _) = parse_all(&["--frobnicate"]);
        assert!(result
            .unwrap_err()
            .to_string()
            .contains("unknown flag `--frobnicate` for `reasonix run`"));
        let (result, _, _) = parse_all(&["--trust-project=yes"]);
        assert!(result.unwrap_err().to_string().contains("takes no value"));
        let (result, _, _) = parse_all(&["--fork-session"]);
        assert!(result.unwrap_err().to_string().contains("--fork-session"));
        let (result, common, _) = parse_all(&["-c", "--permission-mode", "sometimes"]);
        assert!(result.is_err());
        assert_eq!(
            common.resume,
            Some(SessionChoice::Newest),
            "kept what came before"
        );
    }
}
