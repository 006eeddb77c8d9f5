//! The static policy: rule lists and the writer fallback, evaluated with the precedence
//! deny > ask > allow > fallback. Pure, no I/O; resolving an Ask (postures, the approver,
//! session grants) is the gate's business.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::rules::{Call, MatchContext, Polarity, Rule, RuleError};
use crate::tool::{Family, Profile, ReadDenials};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    /// Parses `[permissions] mode`: `ask`, `allow` or `deny`.
    pub fn parse(value: &str) -> Result<Decision, String> {
        match value {
            "ask" => Ok(Decision::Ask),
            "allow" => Ok(Decision::Allow),
            "deny" => Ok(Decision::Deny),
            other => Err(format!(
                "permission: unknown mode `{other}`; expected ask, allow or deny"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// Why the policy decided what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// A rule from the deny, ask or allow list; carries the rule as written.
    Rule(String),
    /// No rule matched and the tool is read-only.
    ReadOnly,
    /// No rule matched and the tool writes: `[permissions] mode` decided.
    Mode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub decision: Decision,
    pub basis: Basis,
}

impl Ruling {
    pub fn rule(&self) -> Option<&str> {
        match &self.basis {
            Basis::Rule(rule) => Some(rule),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Policy {
    /// The writer fallback when no rule matches.
    pub mode: Decision,
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
    pub context: MatchContext,
}

impl Policy {
    /// A policy with no rules. `workspace` should be absolute; relative rule globs resolve
    /// against it, `~/` against `home`.
    pub fn new(mode: Decision, workspace: PathBuf, home: Option<PathBuf>) -> Policy {
        Policy {
            mode,
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            context: MatchContext::new(workspace, home),
        }
    }

    /// Parses every rule; the first bad one is the error.
    pub fn parse_rules<S: AsRef<str>>(rules: &[S]) -> Result<Vec<Rule>, RuleError> {
        rules.iter().map(|r| Rule::parse(r.as_ref())).collect()
    }

    pub fn decide(&self, tool: &str, profile: Profile, args: &Value) -> Ruling {
        self.decide_call(&Call::new(tool, profile.family, args), profile.read_only)
    }

    pub fn decide_call(&self, call: &Call, read_only: bool) -> Ruling {
        let lists = [
            (&self.deny, Polarity::Restrict, Decision::Deny),
            (&self.ask, Polarity::Restrict, Decision::Ask),
            (&self.allow, Polarity::Grant, Decision::Allow),
        ];
        for (rules, polarity, decision) in lists {
            if let Some(rule) = rules
                .iter()
                .find(|r| r.matches(call, polarity, &self.context))
            {
                return Ruling {
                    decision,
                    basis: Basis::Rule(rule.text().to_string()),
                };
            }
        }
        if read_only {
            Ruling {
                decision: Decision::Allow,
                basis: Basis::ReadOnly,
            }
        } else {
            Ruling {
                decision: self.mode,
                basis: Basis::Mode,
            }
        }
    }

    /// Whether any grant in `rules` covers the call (used for session grants).
    pub fn granted_by<'r>(&self, rules: &'r [Rule], call: &Call) -> Option<&'r Rule> {
        rules
            .iter()
            .find(|r| r.matches(call, Polarity::Grant, &self.context))
    }
}

/// A path a walker found is denied to `tool` when a deny rule matches it. Walker paths are real
/// entries (the walk follows no symlinks), so the lexical form is the resolved one; the tools
/// that walk are all readers.
impl ReadDenials for Policy {
    fn denies(&self, tool: &str, path: &Path) -> bool {
        let family = Family::Reader;
        if !self
            .deny
            .iter()
            .any(|rule| rule.target().covers(tool, family))
        {
            return false;
        }
        let call = Call::for_paths(tool, family, vec![path.to_string_lossy().into_owned()]);
        self.deny
            .iter()
            .any(|rule| rule.matches(&call, Polarity::Restrict, &self.context))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profile(family: Family, read_only: bool) -> Profile {
        Profile {
            family,
            ..Profile::undeclared(read_only)
        }
    }

    fn policy() -> Policy {
        let mut p = Policy::new(Decision::Ask, "/ws".into(), None);
        p.allow = Policy::parse_rules(&["Bash"]).unwrap();
        p.deny = Policy::parse_rules(&["Bash(rm -rf*)"]).unwrap();
        p
    }

    #[test]
    fn deny_carves_a_broad_allow() {
        let ruling = policy().decide(
            "bash",
            profile(Family::Shell, false),
            &json!({"command": "rm -rf /"}),
        );
        assert_eq!(ruling.decision, Decision::Deny);
        assert_eq!(ruling.rule(), Some("Bash(rm -rf*)"));
        let ruling = policy().decide(
            "bash",
            profile(Family::Shell, false),
            &json!({"command": "ls"}),
        );
        assert_eq!(ruling.decision, Decision::Allow);
        assert_eq!(ruling.rule(), Some("Bash"));
    }

    #[test]
    fn fallback_depends_on_read_only() {
        let p = policy();
        let ruling = p.decide(
            "read_file",
            profile(Family::Reader, true),
            &json!({"path": "a"}),
        );
        assert_eq!(
            (ruling.decision, ruling.basis),
            (Decision::Allow, Basis::ReadOnly)
        );
        let ruling = p.decide(
            "write_file",
            profile(Family::Writer, false),
            &json!({"path": "a"}),
        );
        assert_eq!(
            (ruling.decision, ruling.basis),
            (Decision::Ask, Basis::Mode)
        );
    }

    #[test]
    fn mode_parsing() {
        assert_eq!(Decision::parse("deny"), Ok(Decision::Deny));
        let err = Decision::parse("yes").unwrap_err();
        assert_eq!(
            err,
            "permission: unknown mode `yes`; expected ask, allow or deny"
        );
    }
}
