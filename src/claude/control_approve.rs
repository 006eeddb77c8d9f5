//! The SDK's `can_use_tool` callback as the approver of the session's gate: every call the
//! gate resolves to Ask is put to the SDK in Claude's vocabulary (`Write {file_path,
//! content}`), and its answer comes back as allow once, allow with a changed input, or deny
//! with the SDK's message. Posture, rules and hooks are judged before this, as for any
//! approver, so the callback only ever decides what would otherwise be asked. A changed input
//! (`updatedInput`) is mapped back to our arguments and judged by the gate as a call of its
//! own (deny rules, the workspace boundary), then runs in place of the model's. A deny is
//! final for that call; no answer (timeout, error, stdin closed, interrupt) is a deny too.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};

use super::control_calls::Calls;
use super::control_session::CurrentTurn;
use crate::cancel::CancelToken;
use crate::permission::{ApprovalAnswer, ApprovalRequest, Approver};

/// How long the SDK may take to answer a permission ask before it counts as a deny: a person
/// may sit behind the callback, so the bound is long but finite.
pub const PERMISSION_TIMEOUT: Duration = Duration::from_secs(600);

/// Our tool name and arguments into Claude's (`write_file {path}` into `Write {file_path}`).
pub type ToClaude = fn(&str, &Value) -> (String, Value);
/// Claude's input keys for our tool `ours` back into our arguments.
pub type FromClaude = fn(&str, &Value) -> Value;

/// What the SDK answered to one ask.
#[derive(Debug, Clone, PartialEq)]
pub enum SdkDecision {
    /// Allowed as asked (no `updatedInput`, or one equal to the input once mapped back).
    Allow,
    /// Allowed with other arguments, already in our vocabulary.
    AllowChanged(Value),
    /// Denied; `message` is for the model.
    Deny { message: String, interrupt: bool },
}

/// Reads the body of a `can_use_tool` answer for our tool `ours` called with `args`.
pub fn read_decision(answer: &Value, ours: &str, args: &Value, back: FromClaude) -> SdkDecision {
    match answer.get("behavior").and_then(Value::as_str) {
        Some("allow") => match answer.get("updatedInput").filter(|v| v.is_object()) {
            None => SdkDecision::Allow,
            Some(updated) => {
                let mapped = back(ours, updated);
                if &mapped == args {
                    SdkDecision::Allow
                } else {
                    SdkDecision::AllowChanged(mapped)
                }
            }
        },
        Some("deny") => SdkDecision::Deny {
            message: answer
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .unwrap_or("denied by the SDK's permission callback")
                .to_string(),
            interrupt: answer.get("interrupt") == Some(&Value::Bool(true)),
        },
        _ => SdkDecision::Deny {
            message: "the SDK's permission callback answered neither allow nor deny".into(),
            interrupt: false,
        },
    }
}

/// The approver that asks the SDK.
pub struct SdkApprover {
    calls: Arc<Calls>,
    to_claude: ToClaude,
    from_claude: FromClaude,
    /// The running turn's token: an interrupt ends the wait, and a deny with `interrupt`
    /// stops the turn.
    current: CurrentTurn,
}

impl SdkApprover {
    pub fn new(
        calls: Arc<Calls>,
        to_claude: ToClaude,
        from_claude: FromClaude,
        current: CurrentTurn,
    ) -> SdkApprover {
        SdkApprover {
            calls,
            to_claude,
            from_claude,
            current,
        }
    }

    fn turn(&self) -> CancelToken {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Asks the SDK about `request`.
    pub fn decide(&self, request: &ApprovalRequest) -> SdkDecision {
        let (name, input) = (self.to_claude)(&request.tool, &request.args);
        let body = json!({
            "subtype": "can_use_tool",
            "tool_name": name,
            "input": input,
            "permission_suggestions": null,
            "blocked_path": null,
            "decision_reason": request.rule.clone().unwrap_or_else(|| "the tool needs approval".into()),
        });
        match self
            .calls
            .call(body, PERMISSION_TIMEOUT, Some(&self.turn()))
        {
            Ok(answer) => read_decision(&answer, &request.tool, &request.args, self.from_claude),
            Err(e) => SdkDecision::Deny {
                message: e.to_string(),
                interrupt: false,
            },
        }
    }
}

impl Approver for SdkApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        match self.decide(request) {
            SdkDecision::Allow => ApprovalAnswer::Once,
            // The gate judges the changed call as one of its own before it runs.
            SdkDecision::AllowChanged(changed) => ApprovalAnswer::OnceWith(changed),
            SdkDecision::Deny { message, interrupt } => {
                if interrupt {
                    self.turn().cancel();
                }
                ApprovalAnswer::DenyBecause(message)
            }
        }
    }
}

/// Print mode's own answer first (`acceptEdits` allows file edits), then the SDK for the
/// rest: `--permission-prompt-tool stdio` puts to the SDK only what print mode would deny.
pub struct AfterPrintMode {
    pub first: Box<dyn Approver>,
    pub sdk: SdkApprover,
}

impl Approver for AfterPrintMode {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        match self.first.approve(request) {
            ApprovalAnswer::Deny => self.sdk.approve(request),
            allowed => allowed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Decision, Gate, Policy, PolicyGate, Posture};
    use std::sync::mpsc::{self, Receiver, Sender};
    use std::sync::Mutex;

    /// The Claude side of two tools, enough to see the mapping go both ways.
    fn to_claude(ours: &str, args: &Value) -> (String, Value) {
        match ours {
            "write_file" => (
                "Write".into(),
                json!({"file_path": args["path"], "content": args["content"]}),
            ),
            other => (other.to_string(), args.clone()),
        }
    }

    fn from_claude(ours: &str, input: &Value) -> Value {
        match ours {
            "write_file" => json!({"path": input["file_path"], "content": input["content"]}),
            _ => input.clone(),
        }
    }

    use crate::claude::control_calls::test_pipe::Pipe;

    fn policy() -> Policy {
        Policy::new(Decision::Ask, "/ws".into(), None)
    }

    /// A gate whose approver is the SDK, and the SDK's end of the channel, answered by `sdk`.
    fn gate_answered_by(
        sdk: impl Fn(&Value) -> Value + Send + 'static,
    ) -> (PolicyGate, std::thread::JoinHandle<Vec<Value>>) {
        gate_answered_by_with(&[], sdk)
    }

    /// [`gate_answered_by`] under these deny rules.
    fn gate_answered_by_with(
        deny: &[&str],
        sdk: impl Fn(&Value) -> Value + Send + 'static,
    ) -> (PolicyGate, std::thread::JoinHandle<Vec<Value>>) {
        let (tx, rx): (Sender<String>, Receiver<String>) = mpsc::channel();
        let calls = Arc::new(Calls::new(Arc::new(Pipe(Mutex::new(tx)))));
        let approver = SdkApprover::new(
            Arc::clone(&calls),
            to_claude,
            from_claude,
            Default::default(),
        );
        // Answers the one ask the test makes.
        let peer = std::thread::spawn(move || {
            let request: Value = serde_json::from_str(&rx.recv().unwrap()).unwrap();
            let id = request["request_id"].as_str().unwrap().to_string();
            calls.deliver(&id, Ok(sdk(&request["request"])));
            vec![request["request"].clone()]
        });
        let mut policy = policy();
        policy.deny = Policy::parse_rules(deny).unwrap();
        let gate = PolicyGate::new(policy, Posture::Ask, Some(Box::new(approver)));
        (gate, peer)
    }

    /// A `write_file` call as the runner puts it to the gate: a writer whose subject is `path`.
    fn write_call(gate: &PolicyGate) -> crate::permission::Verdict {
        let profile = crate::tool::Profile {
            family: crate::tool::Family::Writer,
            read_only: false,
            subjects: crate::tool::Subjects::Paths {
                keys: &["path"],
                default: None,
            },
        };
        gate.check_declared(
            "write_file",
            profile,
            &json!({"path": "notes.txt", "content": "hi"}),
        )
    }

    #[test]
    fn the_sdk_is_asked_in_claude_names_and_its_allow_runs_the_call() {
        // The SDK always echoes the input back as updatedInput: that must count as unchanged.
        let (gate, peer) = gate_answered_by(
            |req| json!({"behavior": "allow", "updatedInput": req["input"].clone()}),
        );
        let verdict = write_call(&gate);
        drop(gate);
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(verdict.args, None, "the model's own call runs");
        let asked = peer.join().unwrap();
        assert_eq!(asked[0]["subtype"], "can_use_tool");
        assert_eq!(asked[0]["tool_name"], "Write");
        assert_eq!(
            asked[0]["input"],
            json!({"file_path": "notes.txt", "content": "hi"})
        );
    }

    #[test]
    fn a_deny_is_final_and_its_message_reaches_the_model() {
        let (gate, peer) =
            gate_answered_by(|_| json!({"behavior": "deny", "message": "not in this repo"}));
        let verdict = write_call(&gate);
        drop(gate);
        peer.join().unwrap();
        assert!(!verdict.allowed);
        assert_eq!(
            verdict.message.as_deref(),
            Some("blocked: the `write_file` call was denied: not in this repo")
        );
    }

    /// What the gate says of a write of `notes.txt` the SDK allows as a write of `file_path`,
    /// under a policy denying `Edit(secret/**)`.
    fn rewritten_to(file_path: &'static str) -> crate::permission::Verdict {
        let (gate, peer) = gate_answered_by_with(
            &["Edit(secret/**)"],
            move |_| json!({"behavior": "allow", "updatedInput": {"file_path": file_path, "content": "x"}}),
        );
        let verdict = write_call(&gate);
        drop(gate);
        assert_eq!(peer.join().unwrap().len(), 1, "the SDK is asked once");
        verdict
    }

    #[test]
    fn a_changed_input_is_judged_as_its_own_call_and_runs_in_place_of_the_models() {
        let verdict = rewritten_to("other.txt");
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(
            verdict.args,
            Some(json!({"path": "other.txt", "content": "x"}))
        );
    }

    #[test]
    fn a_changed_input_a_deny_rule_covers_stays_denied() {
        let verdict = rewritten_to("secret/key.txt");
        assert!(!verdict.allowed, "{verdict:?}");
        assert_eq!(verdict.rule.as_deref(), Some("Edit(secret/**)"));
        assert_eq!(verdict.args, None);
        assert!(verdict.message.unwrap().contains("blocked by rule"));
    }

    #[test]
    fn a_changed_input_may_not_leave_the_workspace() {
        for path in ["/elsewhere/notes.txt", "../notes.txt"] {
            let verdict = rewritten_to(path);
            assert!(!verdict.allowed, "{path}: {verdict:?}");
            assert_eq!(verdict.args, None);
            assert!(
                verdict.message.unwrap().contains("outside the workspace"),
                "{path}"
            );
        }
    }

    #[test]
    fn answers_map_back_through_the_vocabulary() {
        let args = json!({"path": "a", "content": "b"});
        let same = json!({"behavior": "allow", "updatedInput": {"file_path": "a", "content": "b"}});
        assert_eq!(
            read_decision(&same, "write_file", &args, from_claude),
            SdkDecision::Allow
        );
        let changed =
            json!({"behavior": "allow", "updatedInput": {"file_path": "c", "content": "b"}});
        assert_eq!(
            read_decision(&changed, "write_file", &args, from_claude),
            SdkDecision::AllowChanged(json!({"path": "c", "content": "b"}))
        );
        let bare = json!({"behavior": "allow"});
        assert_eq!(
            read_decision(&bare, "write_file", &args, from_claude),
            SdkDecision::Allow
        );
        let odd = json!({"behavior": "maybe"});
        assert!(matches!(
            read_decision(&odd, "write_file", &args, from_claude),
            SdkDecision::Deny {
                interrupt: false,
                ..
            }
        ));
        let stop = json!({"behavior": "deny", "message": "", "interrupt": true});
        assert_eq!(
            read_decision(&stop, "write_file", &args, from_claude),
            SdkDecision::Deny {
                message: "denied by the SDK's permission callback".into(),
                interrupt: true
            }
        );
    }

    #[test]
    fn no_answer_is_a_deny() {
        let (tx, _rx) = mpsc::channel();
        let calls = Arc::new(Calls::new(Arc::new(Pipe(Mutex::new(tx)))));
        calls.close("stdin closed");
        let approver = SdkApprover::new(calls, to_claude, from_claude, Default::default());
        let gate = PolicyGate::new(policy(), Posture::Ask, Some(Box::new(approver)));
        let verdict = write_call(&gate);
        assert!(!verdict.allowed);
        assert_eq!(
            verdict.message.as_deref(),
            Some("blocked: the `write_file` call was denied: control: the SDK connection closed (stdin closed)")
        );
    }
}
