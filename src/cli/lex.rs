//! A small command-line tokenizer in the style of lexopt: it splits arguments into long flags,
//! short flags and values, and leaves meaning to the caller. No I/O, no allocation beyond the
//! argument strings themselves.

use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// `--name` or `--name=value` (the value is kept for [`Lexer::value`]).
    Long(String),
    /// `-x`; clustered `-abc` yields `a`, `b`, `c`.
    Short(char),
    /// A positional argument, or anything after `--`.
    Value(String),
}

impl Arg {
    /// The argument as the user typed it, for error messages: `--name`, `-x` or the value.
    pub fn shown(&self) -> String {
        match self {
            Arg::Long(name) => format!("--{name}"),
            Arg::Short(c) => format!("-{c}"),
            Arg::Value(v) => v.clone(),
        }
    }
}

pub struct Lexer {
    args: VecDeque<String>,
    /// An argument handed back with [`Lexer::push_back`], returned before anything else.
    pushed: Option<Arg>,
    /// The rest of a short cluster (`-abc` after `a`) or the `=value` of a long flag.
    pending: Option<Pending>,
    after_double_dash: bool,
}

enum Pending {
    Shorts(String),
    LongValue(String),
}

impl Lexer {
    pub fn new(args: impl IntoIterator<Item = String>) -> Self {
        Lexer {
            args: args.into_iter().collect(),
            pushed: None,
            pending: None,
            after_double_dash: false,
        }
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Arg>, String> {
        if let Some(arg) = self.pushed.take() {
            return Ok(Some(arg));
        }
        match self.pending.take() {
            Some(Pending::Shorts(rest)) => return Ok(Some(self.take_short(rest))),
            Some(Pending::LongValue(value)) => {
                return Err(format!("unexpected value `{value}`"));
            }
            None => {}
        }
        let Some(arg) = self.args.pop_front() else {
            return Ok(None);
        };
        if self.after_double_dash {
            return Ok(Some(Arg::Value(arg)));
        }
        if arg == "--" {
            self.after_double_dash = true;
            return self.next();
        }
        if let Some(long) = arg.strip_prefix("--") {
            return Ok(Some(match long.split_once('=') {
                Some((name, value)) => {
                    self.pending = Some(Pending::LongValue(value.to_string()));
                    Arg::Long(name.to_string())
                }
                None => Arg::Long(long.to_string()),
            }));
        }
        if arg.len() > 1 && arg.starts_with('-') {
            return Ok(Some(self.take_short(arg[1..].to_string())));
        }
        Ok(Some(Arg::Value(arg)))
    }

    fn take_short(&mut self, cluster: String) -> Arg {
        let mut chars = cluster.chars();
        let first = chars.next().unwrap_or('-');
        let rest: String = chars.collect();
        if !rest.is_empty() {
            self.pending = Some(Pending::Shorts(rest));
        }
        Arg::Short(first)
    }

    /// The value of the flag just returned: `--x=v`, `-xv`, or the next argument.
    pub fn value(&mut self, flag: &str) -> Result<String, String> {
        match self.pending.take() {
            Some(Pending::LongValue(value)) => Ok(value),
            Some(Pending::Shorts(rest)) => Ok(rest.strip_prefix('=').unwrap_or(&rest).to_string()),
            None => self
                .args
                .pop_front()
                .ok_or_else(|| format!("flag `{flag}` needs a value")),
        }
    }

    /// Returns `arg` (just taken) to the front, for a later parser to see first: bare
    /// `reasonix -c` hands its first flag on to the chat. Its `=value` or the rest of its
    /// short cluster stays where it was.
    pub fn push_back(&mut self, arg: Arg) {
        self.pushed = Some(arg);
    }

    /// True when the flag just returned carried `=value`, which a switch must reject.
    pub fn has_inline_value(&self) -> bool {
        matches!(self.pending, Some(Pending::LongValue(_)))
    }

    /// Whether `--help` or `-h` is among the arguments not yet taken (before any `--`).
    pub fn asks_for_help(&self) -> bool {
        self.args
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == "--help" || a == "-h")
    }

    /// Everything not yet consumed, as raw strings.
    pub fn rest(&mut self) -> Vec<String> {
        self.pending = None;
        self.args.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(args: &[&str]) -> Lexer {
        Lexer::new(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn splits_long_short_and_values() {
        let mut l = lex(&["--model=x", "-C", "dir", "-pv", "--", "-z", "word"]);
        assert_eq!(l.next().unwrap(), Some(Arg::Long("model".into())));
        assert_eq!(l.value("--model").unwrap(), "x");
        assert_eq!(l.next().unwrap(), Some(Arg::Short('C')));
        assert_eq!(l.value("-C").unwrap(), "dir");
        assert_eq!(l.next().unwrap(), Some(Arg::Short('p')));
        assert_eq!(l.next().unwrap(), Some(Arg::Short('v')));
        assert_eq!(l.next().unwrap(), Some(Arg::Value("-z".into())));
        assert_eq!(l.next().unwrap(), Some(Arg::Value("word".into())));
        assert_eq!(l.next().unwrap(), None);
    }

    #[test]
    fn lone_dash_is_a_value_and_missing_values_are_errors() {
        let mut l = lex(&["-", "--cd"]);
        assert_eq!(l.next().unwrap(), Some(Arg::Value("-".into())));
        assert_eq!(l.next().unwrap(), Some(Arg::Long("cd".into())));
        assert_eq!(l.value("--cd").unwrap_err(), "flag `--cd` needs a value");
    }

    #[test]
    fn a_pushed_back_flag_comes_first_and_keeps_its_value() {
        let mut l = lex(&["--model=x", "-cv"]);
        let first = l.next().unwrap().unwrap();
        l.push_back(first);
        assert_eq!(l.next().unwrap(), Some(Arg::Long("model".into())));
        assert_eq!(l.value("--model").unwrap(), "x");
        let c = l.next().unwrap().unwrap();
        l.push_back(c);
        assert_eq!(l.next().unwrap(), Some(Arg::Short('c')));
        assert_eq!(l.next().unwrap(), Some(Arg::Short('v')));
        assert_eq!(l.next().unwrap(), None);
    }

    #[test]
    fn help_is_asked_for_anywhere_before_a_double_dash() {
        assert!(lex(&["--model", "x", "--help"]).asks_for_help());
        assert!(lex(&["-h"]).asks_for_help());
        assert!(!lex(&["--", "-h"]).asks_for_help());
        assert!(!lex(&["--helpful"]).asks_for_help());
    }

    #[test]
    fn switch_with_inline_value_is_detected() {
        let mut l = lex(&["--print=yes"]);
        assert_eq!(l.next().unwrap(), Some(Arg::Long("print".into())));
        assert!(l.has_inline_value());
        assert_eq!(l.next().unwrap_err(), "unexpected value `yes`");
    }
}
