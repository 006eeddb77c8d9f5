//! The gate the agent consults before every tool call: the static policy, then the posture,
//! session grants and the approver turn an Ask into a yes or a no. The interactive approver
//! (the terminal prompt) and the persistence of "always" rules into the project config are
//! supplied by the front end; without an approver the run is headless. While an approved
//! plan is carried out the gate's approved-plan window lets the writer fallback through
//! without asking; the agent opens and closes it ([`Gate::set_plan_window`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::guardian::{CallContext, Review, ReviewOutcome, ReviewRequest, ReviewSpend, Reviewer};
use super::policy::{Basis, Decision, Policy};
use super::rules::{exact_command_rule, prefix_command_rule, Call, Rule, Subject};
use crate::cancel::CancelToken;
use crate::config::ApprovalMode;
use crate::tool::{Family, Profile, ReadDenials};

/// How Ask decisions are resolved (§3.7 tool approval posture).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posture {
    /// Follow the policy: Ask prompts the approver (headless: allowed without a user).
    Ask,
    /// The writer fallback is allowed; explicit ask and deny rules still apply.
    Auto,
    /// Every Ask is allowed; deny rules still block.
    Yolo,
    /// Headless runs on untrusted input: every Ask is denied, approver or not (the CLI offers
    /// it for `reasonix run` only).
    Strict,
}

impl Posture {
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::Ask => "ask",
            Posture::Auto => "auto",
            Posture::Yolo => "yolo",
            Posture::Strict => "strict",
        }
    }
}

/// Parses `--permission-mode`. Claude Code's names are accepted as aliases: `default` (ask),
/// `acceptEdits` (auto), `bypassPermissions` (yolo) and `dontAsk` (strict).
pub fn parse_posture(value: &str) -> Result<Posture, String> {
    match value {
        "ask" | "default" => Ok(Posture::Ask),
        "auto" | "acceptEdits" => Ok(Posture::Auto),
        "yolo" | "bypassPermissions" => Ok(Posture::Yolo),
        "strict" | "dontAsk" => Ok(Posture::Strict),
        other => Err(format!(
            "unknown permission mode `{other}`; expected ask, auto, yolo or strict"
        )),
    }
}

/// How the final answer was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// The policy allowed the call outright (allow rule, read-only fallback, `mode = "allow"`).
    Plain,
    /// A deny rule matched.
    Rule,
    /// `mode = "deny"` and no rule matched.
    Mode,
    /// Auto posture allowed the writer fallback.
    Auto,
    /// Yolo posture skipped the prompt.
    Yolo,
    /// Strict posture denied the Ask.
    Strict,
    /// No approver: the Ask was allowed without a user (a model assumption, not a decision).
    Headless,
    /// An earlier "this session" or "always" answer covers the call.
    SessionGrant,
    /// The approved-plan window allowed the writer fallback.
    PlanWindow,
    UserOnce,
    UserSession,
    UserAlways,
    UserDeny,
    /// A `PermissionRequest` hook denied the call before anyone was asked.
    Hook,
    /// The Guardian reviewer's verdict (`approvals_reviewer = "auto_review"`), final.
    Guardian,
    /// The Guardian gave no verdict and no person could be asked: refused (fail closed).
    GuardianFailed,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Plain => "plain",
            Resolution::Rule => "rule",
            Resolution::Mode => "mode",
            Resolution::Auto => "auto",
            Resolution::Yolo => "yolo",
            Resolution::Strict => "strict",
            Resolution::Headless => "headless",
            Resolution::SessionGrant => "session-grant",
            Resolution::PlanWindow => "plan_window",
            Resolution::UserOnce => "user-once",
            Resolution::UserSession => "user-session",
            Resolution::UserAlways => "user-always",
            Resolution::UserDeny => "user-deny",
            Resolution::Hook => "hook",
            Resolution::Guardian => "guardian",
            Resolution::GuardianFailed => "guardian-failed",
        }
    }
}

/// The gate's answer for one call, with what the event stream needs to report it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allowed: bool,
    /// What the static policy said before the posture and approver were consulted.
    pub decision: Decision,
    pub resolution: Resolution,
    /// The rule that decided (a deny/ask/allow rule, a session grant or the scope just granted).
    pub rule: Option<String>,
    pub subject: Option<String>,
    /// `None` from gates without a posture ([`AllowAll`]).
    pub posture: Option<Posture>,
    /// The tool result the model sees when the call is blocked.
    pub message: Option<String>,
    /// Something the user should hear about, e.g. an "always" rule that could not be saved.
    pub warning: Option<String>,
    /// The Guardian reviewer's reason for its verdict, or why it gave none.
    pub reason: Option<String>,
    /// What a Guardian review of this call cost, when one was answered.
    pub review: Option<ReviewSpend>,
    /// The arguments the call runs with when the approver allowed it with changed ones (an
    /// Agent SDK's `updatedInput`); they were judged as a call of their own before this
    /// verdict allowed them. `None`: the call runs as the model made it.
    pub args: Option<Value>,
}

impl Verdict {
    pub fn allow() -> Verdict {
        Verdict {
            allowed: true,
            decision: Decision::Allow,
            resolution: Resolution::Plain,
            rule: None,
            subject: None,
            posture: None,
            message: None,
            warning: None,
            reason: None,
            review: None,
            args: None,
        }
    }

    /// Everything except a plain allow is reported in the event stream.
    pub fn is_reportable(&self) -> bool {
        self.resolution != Resolution::Plain
    }
}

/// What the agent consults before executing a tool.
pub trait Gate: Send + Sync {
    /// Judges a call by the arguments its tool declared as subjects (see [`Subjects`]); what
    /// the agent calls for every tool.
    fn check_declared(&self, tool: &str, profile: Profile, args: &Value) -> Verdict;

    /// [`Gate::check_declared`] with what a Guardian review of the call needs (the recent
    /// conversation, built only when the call is reviewed; the turn's cancellation). A gate
    /// without a reviewer ignores it.
    fn check_in_context(
        &self,
        tool: &str,
        profile: Profile,
        args: &Value,
        _context: &CallContext,
    ) -> Verdict {
        self.check_declared(tool, profile, args)
    }

    /// What this gate denies to readers, for the search tools' walks (see
    /// `ToolContext::read_denials`); `None` denies nothing.
    fn read_denials(&self) -> Option<Arc<dyn ReadDenials>> {
        None
    }

    /// [`Gate::check_declared`] for a tool that declares no subjects (MCP, plugins).
    fn check(&self, tool: &str, read_only: bool, args: &Value) -> Verdict {
        self.check_declared(tool, Profile::undeclared(read_only), args)
    }

    /// For calls that need a fresh approval from a person every time (`remember`, `forget`):
    /// no posture, grant or allow rule answers them. Without a person to ask, as here, the
    /// call is refused.
    fn check_fresh(&self, tool: &str, _args: &Value, _preview: &str) -> Verdict {
        refused_headless(tool, Decision::Ask)
    }

    /// What plan mode must know about an MCP tool by its registry name (its hints and
    /// whether the user trusts it as read-only); `None` for other tools or without MCP.
    fn mcp_policy(&self, _tool: &str) -> Option<McpToolPolicy> {
        None
    }

    /// Opens or closes the approved-plan window: while open, the writer fallback is allowed
    /// without asking. A gate without a posture has nothing to open.
    fn set_plan_window(&self, _open: bool) {}

    /// Changes the posture (an approved plan with "auto-accept edits"); a gate without a
    /// posture ignores it.
    fn set_posture(&self, _posture: Posture) {}

    /// Installs what runs before an Ask is put to a person or resolved without one (the
    /// `PermissionRequest` and `Notification` hooks); a gate that never asks ignores it.
    fn set_request_hook(&self, _hook: RequestHook) {}
}

/// Called with a request that is about to be put to a person (`true`) or resolved without
/// one (`false`); `Some(reason)` denies the call. It can only deny: allowing stays with the
/// policy, the posture and the person.
pub type RequestHook = Arc<dyn Fn(&ApprovalRequest, bool) -> Option<String> + Send + Sync>;

/// The refusal of a fresh-approval call when no person can answer.
fn refused_headless(tool: &str, decision: Decision) -> Verdict {
    Verdict {
        allowed: false,
        decision,
        resolution: Resolution::Headless,
        rule: None,
        subject: None,
        posture: None,
        message: Some(format!(
            "refused: `{tool}` changes long-term memory and needs a fresh approval from a person \
             every time; this run is non-interactive, so no one can approve it. Do not retry; \
             tell the user what you wanted to save or remove so they can do it themselves"
        )),
        warning: None,
        reason: None,
        review: None,
        args: None,
    }
}

/// The refusal a denying `PermissionRequest` hook gives the model.
fn hook_message(reason: &str) -> String {
    format!("blocked by a PermissionRequest hook: {reason}")
}

/// What a person (or the request hook) is asked about a call the policy resolved to Ask.
fn approval_request(
    call: &Call,
    args: &Value,
    base: &Verdict,
    scopes: Vec<Rule>,
) -> ApprovalRequest {
    ApprovalRequest {
        tool: call.tool.clone(),
        family: call.family,
        subject: base.subject.clone(),
        args: args.clone(),
        rule: base.rule.clone(),
        scopes,
        note: None,
    }
}

/// The pass-through gate, for sub-agents and tests that need no policy.
pub struct AllowAll;

impl Gate for AllowAll {
    fn check_declared(&self, _: &str, _: Profile, _: &Value) -> Verdict {
        Verdict::allow()
    }
}

/// What the approver is asked.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub tool: String,
    pub family: Family,
    pub subject: Option<String>,
    pub args: Value,
    /// The ask rule that forced the prompt, when it was not the writer fallback.
    pub rule: Option<String>,
    /// Grant scopes to offer, narrowest first: for Bash the exact command, then a
    /// conservative `Bash(prefix:*)` when the command is one plain simple command; for file
    /// writers `Edit(<path>)` (when there is a single path) then `Edit`; otherwise the tool.
    pub scopes: Vec<Rule>,
    /// Why a person is asked although someone else was to decide (the Guardian reviewer
    /// gave no verdict); shown with the request.
    pub note: Option<String>,
}

impl ApprovalRequest {
    /// The default scope for "allow for this session": for file writers every edit, for
    /// anything else the narrowest scope.
    pub fn session_scope(&self) -> Option<&Rule> {
        if self.family == Family::Writer {
            self.scopes.last()
        } else {
            self.scopes.first()
        }
    }

    /// The default scope for "always allow": the narrowest, path-scoped for file writers.
    pub fn always_scope(&self) -> Option<&Rule> {
        self.scopes.first()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    Once,
    /// Allow calls the rule covers for the rest of the session.
    Session(Rule),
    /// Like `Session`, and the rule is saved to the project config.
    Always(Rule),
    Deny,
    /// Deny, with the reason the model reads (a program's permission callback gives one).
    DenyBecause(String),
    /// Allow once, with these arguments instead of the model's (a program's permission
    /// callback rewrote the call). The gate judges them as a call of their own: the answer
    /// stands in for the approval only where that call would be asked too.
    OnceWith(Value),
}

/// The interactive side of the gate; the terminal UI implements it.
pub trait Approver: Send + Sync {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

/// Saves an "always" rule (the CLI appends it to `./reasonix.toml`).
pub type Persist = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// What the gate must know about an MCP tool (§3.7 MCP approval policy): local metadata from
/// the server's annotations and the plugin config, never part of the provider-visible schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpToolPolicy {
    /// The server declared `annotations.destructiveHint: true`.
    pub destructive: bool,
    /// The server declared `annotations.readOnlyHint: true` (a claim, not a trust).
    pub read_only: bool,
    /// The user listed the tool in `trusted_read_only_tools`: callable while planning.
    pub trusted_read_only: bool,
    /// The tool's `approval_mode`, else the server's `default_tools_approval_mode`.
    pub mode: ApprovalMode,
    /// The server's `approvals_reviewer = "auto_review"`: its calls that need review go to
    /// the Guardian reviewer, not the user.
    pub auto_review: bool,
}

/// Finds the MCP policy of a tool by its registry name; `None` for every other tool.
pub type McpLookup = Box<dyn Fn(&str) -> Option<McpToolPolicy> + Send + Sync>;

/// The gate built from a [`Policy`], a [`Posture`] and an optional [`Approver`].
pub struct PolicyGate {
    policy: Policy,
    posture: Mutex<Posture>,
    approver: Option<Box<dyn Approver>>,
    persist: Option<Persist>,
    grants: Mutex<Vec<Rule>>,
    mcp: Option<McpLookup>,
    /// The approved-plan window is open.
    plan_window: AtomicBool,
    request_hook: Mutex<Option<RequestHook>>,
    /// The Guardian reviewer for calls of `auto_review` servers; without one, such calls go
    /// to a fresh human approval (headless: refused).
    reviewer: Option<Arc<dyn Reviewer>>,
}

impl PolicyGate {
    pub fn new(policy: Policy, posture: Posture, approver: Option<Box<dyn Approver>>) -> Self {
        PolicyGate {
            policy,
            posture: Mutex::new(posture),
            approver,
            persist: None,
            grants: Mutex::new(Vec::new()),
            mcp: None,
            plan_window: AtomicBool::new(false),
            request_hook: Mutex::new(None),
            reviewer: None,
        }
    }

    /// Sends the calls of `auto_review` servers that need review to `reviewer` (`None`: no
    /// reviewer, so such calls go to a fresh human approval).
    pub fn with_reviewer(mut self, reviewer: Option<Arc<dyn Reviewer>>) -> Self {
        self.reviewer = reviewer;
        self
    }

    /// Applies MCP approval modes and `destructiveHint` to the tools `lookup` knows.
    pub fn with_mcp(mut self, lookup: McpLookup) -> Self {
        self.mcp = Some(lookup);
        self
    }

    /// Sets where "always" answers are saved.
    pub fn with_persist(mut self, persist: Persist) -> Self {
        self.persist = Some(persist);
        self
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn posture(&self) -> Posture {
        *self.posture.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The UI switches posture mid-session (ask/auto/yolo).
    pub fn set_posture(&self, posture: Posture) {
        *self.posture.lock().unwrap_or_else(PoisonError::into_inner) = posture;
    }

    /// The session grants so far, as rule text.
    pub fn grants(&self) -> Vec<String> {
        self.lock_grants()
            .iter()
            .map(|r| r.text().to_string())
            .collect()
    }

    fn lock_grants(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_ask(
        &self,
        call: &Call,
        profile: Profile,
        basis: &Basis,
        args: &Value,
        base: Verdict,
        review: Option<&CallContext>,
        approved: bool,
    ) -> Verdict {
        let granted = {
            let grants = self.lock_grants();
            self.policy
                .granted_by(&grants, call)
                .map(|r| r.text().to_string())
        };
        if let Some(grant) = granted {
            return Verdict {
                rule: Some(grant),
                ..allowed(base, Resolution::SessionGrant)
            };
        }
        let posture = base.posture.unwrap_or(Posture::Ask);
        // The window answers only the writer fallback: an explicit ask rule or an MCP
        // prompt/writes mode (both `Basis::Rule`) still asks, in any posture.
        let window = self.plan_window.load(Ordering::SeqCst);
        match (posture, basis) {
            (Posture::Yolo, _) => return allowed(base, Resolution::Yolo),
            (Posture::Auto, Basis::Mode) => return allowed(base, Resolution::Auto),
            (_, Basis::Mode) if window => return allowed(base, Resolution::PlanWindow),
            (Posture::Strict, _) => {
                let message = strict_message(&call.tool, base.rule.as_deref());
                return blocked(base, Resolution::Strict, message);
            }
            _ => {}
        }
        let person = self.approver.is_some() && review.is_none();
        if let Some(reason) = self.request_denied(call, args, &base, person) {
            return blocked(base, Resolution::Hook, hook_message(&reason));
        }
        if let Some(context) = review {
            return self.guardian_review(call, args, base, context);
        }
        match &self.approver {
            None => allowed(base, Resolution::Headless),
            // The approver already allowed this changed call (see `changed_call`).
            Some(_) if approved => allowed(base, Resolution::UserOnce),
            Some(approver) => self.ask_user(approver.as_ref(), call, profile, args, base),
        }
    }

    /// What the request hook says of the Ask about to be resolved; `None` lets it go on.
    fn request_denied(
        &self,
        call: &Call,
        args: &Value,
        base: &Verdict,
        person: bool,
    ) -> Option<String> {
        self.hook_denies(&approval_request(call, args, base, Vec::new()), person)
    }

    /// What the request hook says of `request`; `None` lets it go on (or there is no hook).
    fn hook_denies(&self, request: &ApprovalRequest, person: bool) -> Option<String> {
        let hook = self
            .request_hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        hook(request, person)
    }

    fn ask_user(
        &self,
        approver: &dyn Approver,
        call: &Call,
        profile: Profile,
        args: &Value,
        base: Verdict,
    ) -> Verdict {
        let request = approval_request(call, args, &base, suggest_scopes(call, &self.policy));
        match approver.approve(&request) {
            ApprovalAnswer::Once => allowed(base, Resolution::UserOnce),
            ApprovalAnswer::OnceWith(changed) => self.changed_call(&call.tool, profile, changed),
            ApprovalAnswer::Session(scope) => {
                let text = scope.text().to_string();
                self.lock_grants().push(scope);
                Verdict {
                    rule: Some(text),
                    ..allowed(base, Resolution::UserSession)
                }
            }
            ApprovalAnswer::Always(scope) => {
                let text = scope.text().to_string();
                self.lock_grants().push(scope);
                let warning = match &self.persist {
                    Some(persist) => persist(&text)
                        .err()
                        .map(|e| format!("permission: could not save rule `{text}`: {e}")),
                    None => Some(format!(
                        "permission: rule `{text}` applies to this session only; this run has no config to save it to"
                    )),
                };
                Verdict {
                    rule: Some(text),
                    warning,
                    ..allowed(base, Resolution::UserAlways)
                }
            }
            ApprovalAnswer::Deny => {
                let message = format!(
                    "blocked: the user declined this `{}` call; do not retry it unchanged, \
                     take another approach or ask the user",
                    call.tool
                );
                blocked(base, Resolution::UserDeny, message)
            }
            ApprovalAnswer::DenyBecause(reason) => blocked(
                base,
                Resolution::UserDeny,
                denied_because(&call.tool, &reason),
            ),
        }
    }
}

/// The refusal the model reads when the approver gave its reason.
fn denied_because(tool: &str, reason: &str) -> String {
    format!("blocked: the `{tool}` call was denied: {reason}")
}

/// The refusal of changed arguments where only the model's own call can be approved (a
/// fresh approval, a failed review): what was approved must be what was shown.
fn changed_refused(tool: &str) -> String {
    format!(
        "blocked: the `{tool}` call was allowed only with changed arguments, and this call \
         needs an approval of exactly what was asked; it was not made"
    )
}

/// The first path a writer call would change outside the workspace, as resolved.
fn outside_workspace(call: &Call, policy: &Policy) -> Option<String> {
    if call.family != Family::Writer {
        return None;
    }
    call.resolved_paths()
        .iter()
        .find(|path| !std::path::Path::new(path).starts_with(&policy.context.workspace))
        .cloned()
}

impl PolicyGate {
    /// The approver allowed a call with other arguments (an Agent SDK's `updatedInput`).
    /// Those are judged as the call they are: deny rules, MCP policies and the request hook
    /// apply to them, and the approver's answer stands in for the approval only where the
    /// changed call would be asked as well. A changed writer may not leave the workspace:
    /// what was approved was a call inside it.
    fn changed_call(&self, tool: &str, profile: Profile, changed: Value) -> Verdict {
        let cancel = CancelToken::new();
        let context = CallContext {
            recent: &String::new,
            cancel: &cancel,
        };
        let mut verdict = self.judge(tool, profile, &changed, &context, true);
        if verdict.allowed {
            verdict.args = Some(changed);
        }
        verdict
    }
}

impl PolicyGate {
    /// A destructive MCP call: a fresh human answer every time (no grant, posture, allow rule
    /// or reviewer answers it). Without a human the run fails closed, as the spec has
    /// non-interactive sessions do: an allow rule naming the tool does not let it through.
    fn check_destructive(
        &self,
        call: &Call,
        profile: Profile,
        args: &Value,
        base: Verdict,
        approved: bool,
    ) -> Verdict {
        let posture = base.posture.unwrap_or(Posture::Ask);
        let Some(approver) = self
            .approver
            .as_ref()
            .filter(|_| posture != Posture::Strict)
        else {
            let message = format!(
                "blocked: `{tool}` is marked destructive by its MCP server and this run cannot \
                 ask the user; do not retry it, report that this step needs a person to approve \
                 it in an interactive session",
                tool = call.tool
            );
            return blocked(base, Resolution::Strict, message);
        };
        let request = ApprovalRequest {
            tool: call.tool.clone(),
            family: call.family,
            subject: base.subject.clone(),
            args: args.clone(),
            rule: Some("destructiveHint".into()),
            scopes: Vec::new(),
            note: None,
        };
        if let Some(reason) = self.hook_denies(&request, true) {
            return blocked(base, Resolution::Hook, hook_message(&reason));
        }
        if approved {
            return allowed(base, Resolution::UserOnce);
        }
        match approver.approve(&request) {
            ApprovalAnswer::Deny => {
                let message = format!(
                    "blocked: the user declined this destructive `{}` call; do not retry \
                     it unchanged, take another approach or ask the user",
                    call.tool
                );
                blocked(base, Resolution::UserDeny, message)
            }
            ApprovalAnswer::OnceWith(changed) => self.changed_call(&call.tool, profile, changed),
            ApprovalAnswer::DenyBecause(reason) => blocked(
                base,
                Resolution::UserDeny,
                denied_because(&call.tool, &reason),
            ),
            _ => allowed(base, Resolution::UserOnce),
        }
    }
}

impl PolicyGate {
    /// A call of an `auto_review` server that needs review: the Guardian's allow or deny is
    /// final. Without a verdict (no reviewer, a timeout, a failed request, an unreadable
    /// reply) a person decides this one call afresh; without a person the call is refused.
    fn guardian_review(
        &self,
        call: &Call,
        args: &Value,
        base: Verdict,
        context: &CallContext,
    ) -> Verdict {
        let review = match &self.reviewer {
            Some(reviewer) => reviewer.review(&ReviewRequest {
                tool: call.tool.clone(),
                subject: base.subject.clone(),
                args: args.clone(),
                why: base
                    .rule
                    .clone()
                    .unwrap_or_else(|| "the permission fallback asks for writers".into()),
                context: (context.recent)(),
                cancel: context.cancel.clone(),
            }),
            None => Review::failed("this session has no Guardian reviewer"),
        };
        let base = Verdict {
            review: review.spend,
            ..base
        };
        match review.outcome {
            ReviewOutcome::Allow(reason) => Verdict {
                reason: Some(reason),
                ..allowed(base, Resolution::Guardian)
            },
            ReviewOutcome::Deny(reason) => {
                let message = format!(
                    "blocked by the Guardian reviewer: {reason}; do not retry it unchanged, \
                     take another approach or ask the user"
                );
                Verdict {
                    reason: Some(reason),
                    ..blocked(base, Resolution::Guardian, message)
                }
            }
            // An interrupted turn runs nothing more and asks no one.
            ReviewOutcome::Failed(why) if context.cancel.is_cancelled() => {
                let message = "blocked: the turn was interrupted during the review".to_string();
                Verdict {
                    reason: Some(why),
                    ..blocked(base, Resolution::GuardianFailed, message)
                }
            }
            ReviewOutcome::Failed(why) => self.fresh_after_review(call, args, base, why),
        }
    }

    /// The fresh human approval a failed review degrades to: asked even in Auto or Yolo,
    /// with no grant scopes to offer, and any yes counts for this call only.
    fn fresh_after_review(&self, call: &Call, args: &Value, base: Verdict, why: String) -> Verdict {
        let Some(approver) = &self.approver else {
            let message = format!(
                "blocked: `{tool}` needs review, the Guardian reviewer gave no verdict ({why}) \
                 and this run cannot ask a person; do not retry it, report that this step \
                 needs approval",
                tool = call.tool
            );
            return Verdict {
                reason: Some(why),
                ..blocked(base, Resolution::GuardianFailed, message)
            };
        };
        let request = ApprovalRequest {
            note: Some(format!("the Guardian reviewer gave no verdict: {why}")),
            ..approval_request(call, args, &base, Vec::new())
        };
        let base = Verdict {
            reason: Some(why),
            ..base
        };
        match approver.approve(&request) {
            ApprovalAnswer::Deny => {
                let message = format!(
                    "blocked: the user declined this `{}` call; do not retry it unchanged, \
                     take another approach or ask the user",
                    call.tool
                );
                blocked(base, Resolution::UserDeny, message)
            }
            ApprovalAnswer::OnceWith(_) => {
                blocked(base, Resolution::UserDeny, changed_refused(&call.tool))
            }
            _ => allowed(base, Resolution::UserOnce),
        }
    }
}

impl Gate for PolicyGate {
    /// Deny rules still block; the strict posture and a missing approver refuse; otherwise
    /// the approver is asked with the preview as the subject, and any yes counts for this
    /// call only.
    fn check_fresh(&self, tool: &str, args: &Value, preview: &str) -> Verdict {
        let call = Call::new(tool, Family::Other, args);
        let ruling = self.policy.decide_call(&call, false);
        if let (Decision::Deny, Basis::Rule(_)) = (ruling.decision, &ruling.basis) {
            return self.check(tool, false, args);
        }
        let posture = self.posture();
        let approver = match &self.approver {
            Some(approver) if posture != Posture::Strict => approver,
            _ => {
                return Verdict {
                    posture: Some(posture),
                    ..refused_headless(tool, ruling.decision)
                }
            }
        };
        let request = ApprovalRequest {
            tool: tool.to_string(),
            family: call.family,
            subject: Some(preview.to_string()),
            args: args.clone(),
            rule: None,
            scopes: Vec::new(),
            note: None,
        };
        let base = Verdict {
            allowed: false,
            decision: ruling.decision,
            resolution: Resolution::Plain,
            rule: None,
            subject: Some(preview.to_string()),
            posture: Some(posture),
            message: None,
            warning: None,
            reason: None,
            review: None,
            args: None,
        };
        if let Some(reason) = self.hook_denies(&request, true) {
            return blocked(base, Resolution::Hook, hook_message(&reason));
        }
        match approver.approve(&request) {
            ApprovalAnswer::Deny => {
                let message = format!(
                    "blocked: the user declined this `{tool}` call; do not retry it unchanged"
                );
                blocked(base, Resolution::UserDeny, message)
            }
            ApprovalAnswer::DenyBecause(reason) => {
                blocked(base, Resolution::UserDeny, denied_because(tool, &reason))
            }
            ApprovalAnswer::OnceWith(_) => {
                blocked(base, Resolution::UserDeny, changed_refused(tool))
            }
            _ => allowed(base, Resolution::UserOnce),
        }
    }

    fn read_denials(&self) -> Option<Arc<dyn ReadDenials>> {
        Some(Arc::new(self.policy.clone()))
    }

    fn mcp_policy(&self, tool: &str) -> Option<McpToolPolicy> {
        self.mcp.as_ref().and_then(|lookup| lookup(tool))
    }

    fn set_plan_window(&self, open: bool) {
        self.plan_window.store(open, Ordering::SeqCst);
    }

    fn set_posture(&self, posture: Posture) {
        PolicyGate::set_posture(self, posture);
    }

    fn set_request_hook(&self, hook: RequestHook) {
        *self
            .request_hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(hook);
    }

    fn check_declared(&self, tool: &str, profile: Profile, args: &Value) -> Verdict {
        let cancel = CancelToken::new();
        let context = CallContext {
            recent: &String::new,
            cancel: &cancel,
        };
        self.check_in_context(tool, profile, args, &context)
    }

    fn check_in_context(
        &self,
        tool: &str,
        profile: Profile,
        args: &Value,
        context: &CallContext,
    ) -> Verdict {
        self.judge(tool, profile, args, context, false)
    }
}

impl PolicyGate {
    /// The gate's judgement of one call; `approved`: the approver already allowed it (it is
    /// the changed call of an earlier answer, see `changed_call`).
    fn judge(
        &self,
        tool: &str,
        profile: Profile,
        args: &Value,
        context: &CallContext,
        approved: bool,
    ) -> Verdict {
        let read_only = profile.read_only;
        let call = Call::declared(
            tool,
            profile.family,
            profile.subjects,
            args,
            &self.policy.context,
        );
        let mut ruling = self.policy.decide_call(&call, read_only);
        let mcp = self.mcp.as_ref().and_then(|lookup| lookup(tool));
        // §3.7 precedence: explicit deny, destructiveHint, the tool's mode, the server's.
        let destructive = mcp.is_some_and(|m| m.destructive) && ruling.decision != Decision::Deny;
        let explicit_deny = ruling.decision == Decision::Deny && ruling.rule().is_some();
        if let Some(mcp) = mcp.filter(|m| !m.destructive && !explicit_deny) {
            match mcp.mode {
                ApprovalMode::Prompt | ApprovalMode::Writes
                    if mcp.mode == ApprovalMode::Prompt || !read_only =>
                {
                    ruling.decision = Decision::Ask;
                    ruling.basis = Basis::Rule(format!("approval_mode = {}", mode_name(mcp.mode)));
                }
                ApprovalMode::Approve => ruling.decision = Decision::Allow,
                _ => {}
            }
        }
        let base = Verdict {
            allowed: false,
            decision: ruling.decision,
            resolution: Resolution::Plain,
            rule: ruling.rule().map(str::to_string),
            subject: call.subject.as_ref().map(Subject::display),
            posture: Some(self.posture()),
            message: None,
            warning: None,
            reason: None,
            review: None,
            args: None,
        };
        if approved {
            if let Some(path) = outside_workspace(&call, &self.policy) {
                let message = format!(
                    "blocked: the call was allowed with its path changed to {path}, outside the \
                     workspace; a changed call may not leave the workspace, so it was not made"
                );
                return blocked(base, Resolution::UserDeny, message);
            }
        }
        if destructive {
            return self.check_destructive(&call, profile, args, base, approved);
        }
        match (ruling.decision, &ruling.basis) {
            (Decision::Allow, _) => allowed(base, Resolution::Plain),
            (Decision::Deny, Basis::Rule(rule)) => {
                let message = format!(
                    "blocked by rule `{rule}`: the user's permission rules forbid this call; \
                     do not retry it, take another approach or ask the user"
                );
                blocked(base, Resolution::Rule, message)
            }
            (Decision::Deny, _) => {
                let message = format!(
                    "blocked: `{tool}` calls are denied unless an allow rule covers them \
                     ([permissions] mode = \"deny\"); take another approach or ask the user \
                     to add an allow rule"
                );
                blocked(base, Resolution::Mode, message)
            }
            (Decision::Ask, basis) => {
                // Destructive calls returned above: they never reach the reviewer.
                let review = mcp.is_some_and(|m| m.auto_review).then_some(context);
                self.resolve_ask(&call, profile, basis, args, base, review, approved)
            }
        }
    }
}

fn mode_name(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Auto => "auto",
        ApprovalMode::Prompt => "prompt",
        ApprovalMode::Writes => "writes",
        ApprovalMode::Approve => "approve",
    }
}

fn allowed(base: Verdict, resolution: Resolution) -> Verdict {
    Verdict {
        allowed: true,
        resolution,
        ..base
    }
}

fn blocked(base: Verdict, resolution: Resolution, message: String) -> Verdict {
    Verdict {
        allowed: false,
        resolution,
        message: Some(message),
        ..base
    }
}

fn strict_message(tool: &str, rule: Option<&str>) -> String {
    let why = match rule {
        Some(rule) => format!(" (rule `{rule}`)"),
        None => String::new(),
    };
    format!(
        "blocked: `{tool}`{why} requires approval and this run cannot ask \
         (--permission-mode strict); take another approach or report that this step needs approval"
    )
}

/// The grant scopes offered for a call, narrowest first.
pub fn suggest_scopes(call: &Call, policy: &Policy) -> Vec<Rule> {
    let mut scopes = Vec::new();
    match &call.subject {
        Some(Subject::Command(command)) if call.family == Family::Shell => {
            scopes.extend(exact_command_rule(command));
            scopes.extend(prefix_command_rule(command));
        }
        Some(Subject::Paths(paths)) if call.family == Family::Writer => {
            if let [path] = paths.as_slice() {
                scopes.extend(path_scope(path, policy));
            }
            scopes.extend(Rule::parse("Edit").ok());
        }
        _ => scopes.extend(Rule::parse(&call.tool).ok()),
    }
    scopes.dedup();
    scopes
}

/// `Edit(<path>)` naming exactly this file: relative to the workspace when inside it
/// (`./name` anchors a top-level file), absolute otherwise; the literal form when the path
/// contains glob characters.
fn path_scope(path: &str, policy: &Policy) -> Option<Rule> {
    let workspace = &policy.context.workspace;
    let absolute = super::rules::normalize(&workspace.join(path));
    let shown = match absolute.strip_prefix(workspace) {
        Ok(relative) if relative.as_os_str().is_empty() => return None,
        Ok(relative) => format!("./{}", relative.to_string_lossy()),
        Err(_) => absolute.to_string_lossy().into_owned(),
    };
    let text = if shown.contains(['*', '?', ')']) {
        format!("Edit={shown}")
    } else {
        format!("Edit({shown})")
    };
    Rule::parse(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    /// Answers every request with `answer` and counts the questions.
    struct Counting {
        answer: ApprovalAnswer,
        asked: Arc<Mutex<Vec<String>>>,
    }

    impl Approver for Counting {
        fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
            self.asked.lock().unwrap().push(request.tool.clone());
            self.answer.clone()
        }
    }

    fn lookup() -> McpLookup {
        Box::new(|tool| {
            let (destructive, mode) = match tool {
                "mcp__s__rm" | "mcp__g__rm" => (true, ApprovalMode::Approve),
                "mcp__s__approve" => (false, ApprovalMode::Approve),
                "mcp__s__prompt" | "mcp__g__prompt" => (false, ApprovalMode::Prompt),
                "mcp__s__writes" | "mcp__g__writes" => (false, ApprovalMode::Writes),
                "mcp__s__auto" | "mcp__g__auto" => (false, ApprovalMode::Auto),
                _ => return None,
            };
            Some(McpToolPolicy {
                destructive,
                read_only: false,
                trusted_read_only: false,
                mode,
                // Server `g` hands its reviews to the Guardian.
                auto_review: tool.starts_with("mcp__g__"),
            })
        })
    }

    /// A reviewer answering `outcome` every time, counting the reviews and keeping the last.
    struct Judge {
        outcome: ReviewOutcome,
        seen: Arc<Mutex<Vec<ReviewRequest>>>,
    }

    impl Reviewer for Judge {
        fn review(&self, request: &ReviewRequest) -> Review {
            self.seen.lock().unwrap().push(request.clone());
            Review {
                outcome: self.outcome.clone(),
                spend: Some(ReviewSpend {
                    model: "judge".into(),
                    usage: Default::default(),
                    cost_usd: None,
                }),
            }
        }
    }

    type Reviews = Arc<Mutex<Vec<ReviewRequest>>>;

    /// A gate whose server `g` is reviewed by a judge answering `outcome`.
    fn judged(
        outcome: ReviewOutcome,
        posture: Posture,
        answer: Option<ApprovalAnswer>,
    ) -> (PolicyGate, Reviews, Arc<Mutex<Vec<String>>>) {
        let (gate, asked) = gate(&[], &[], posture, answer);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let judge = Judge {
            outcome,
            seen: Arc::clone(&seen),
        };
        (gate.with_reviewer(Some(Arc::new(judge))), seen, asked)
    }

    fn check_g(gate: &PolicyGate, tool: &str, read_only: bool) -> Verdict {
        let recent = || "the user asked for it".to_string();
        let cancel = CancelToken::new();
        let context = CallContext {
            recent: &recent,
            cancel: &cancel,
        };
        gate.check_in_context(
            tool,
            Profile::undeclared(read_only),
            &json!({"to": "x"}),
            &context,
        )
    }

    #[test]
    fn the_guardians_verdict_is_final_and_no_person_is_asked() {
        let allow = ReviewOutcome::Allow("the user asked".into());
        for answer in [Some(ApprovalAnswer::Deny), None] {
            let (g, seen, asked) = judged(allow.clone(), Posture::Ask, answer);
            let verdict = check_g(&g, "mcp__g__prompt", true);
            assert_eq!(
                (
                    verdict.allowed,
                    verdict.resolution,
                    verdict.reason.as_deref()
                ),
                (true, Resolution::Guardian, Some("the user asked"))
            );
            assert_eq!(
                verdict.review.as_ref().map(|r| r.model.as_str()),
                Some("judge")
            );
            let request = seen.lock().unwrap()[0].clone();
            assert_eq!(request.why, "approval_mode = prompt");
            assert_eq!(request.context, "the user asked for it");
            assert!(asked.lock().unwrap().is_empty());
        }
        let (g, _, asked) = judged(
            ReviewOutcome::Deny("sends mail".into()),
            Posture::Ask,
            Some(ApprovalAnswer::Once),
        );
        let verdict = check_g(&g, "mcp__g__writes", false);
        assert_eq!(
            (verdict.allowed, verdict.resolution),
            (false, Resolution::Guardian)
        );
        assert!(verdict.message.unwrap().contains("sends mail"));
        assert!(asked.lock().unwrap().is_empty(), "a deny is final too");
        // Readers under `writes` and servers without auto_review never reach the judge.
        let (g, seen, _) = judged(allow.clone(), Posture::Ask, Some(ApprovalAnswer::Once));
        assert_eq!(
            check_g(&g, "mcp__g__writes", true).resolution,
            Resolution::Plain
        );
        assert_eq!(
            check_g(&g, "mcp__s__prompt", true).resolution,
            Resolution::UserOnce
        );
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn a_failed_review_goes_to_a_fresh_person_and_headless_fails_closed() {
        let failed = ReviewOutcome::Failed("timed out".into());
        // Session and always answers grant nothing: the next call is reviewed and asked again.
        let scope = Rule::parse("mcp__g__prompt").unwrap();
        let (g, seen, asked) = judged(
            failed.clone(),
            Posture::Ask,
            Some(ApprovalAnswer::Session(scope)),
        );
        for _ in 0..2 {
            let verdict = check_g(&g, "mcp__g__prompt", true);
            assert_eq!(
                (
                    verdict.allowed,
                    verdict.resolution,
                    verdict.reason.as_deref()
                ),
                (true, Resolution::UserOnce, Some("timed out"))
            );
        }
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert_eq!(asked.lock().unwrap().len(), 2);
        assert!(g.grants().is_empty());
        // Auto: the writer fallback of an auto-mode tool is the posture's, never reviewed;
        // prompt mode still is, and a failure still asks the person.
        let (g, seen, asked) = judged(failed.clone(), Posture::Auto, Some(ApprovalAnswer::Deny));
        assert_eq!(
            check_g(&g, "mcp__g__auto", false).resolution,
            Resolution::Auto
        );
        let verdict = check_g(&g, "mcp__g__prompt", true);
        assert_eq!(
            (verdict.allowed, verdict.resolution),
            (false, Resolution::UserDeny)
        );
        assert_eq!(
            (seen.lock().unwrap().len(), asked.lock().unwrap().len()),
            (1, 1)
        );
        // Headless: refused, in the ask posture that would otherwise allow without a person.
        let (g, _, _) = judged(failed, Posture::Ask, None);
        let verdict = check_g(&g, "mcp__g__auto", false);
        assert_eq!(
            (verdict.allowed, verdict.resolution),
            (false, Resolution::GuardianFailed)
        );
        assert!(verdict.message.unwrap().contains("timed out"));
        // No reviewer at all is a failed review too.
        let (g, _) = gate(&[], &[], Posture::Ask, None);
        let verdict = check_g(&g, "mcp__g__prompt", true);
        assert_eq!(verdict.resolution, Resolution::GuardianFailed);
    }

    #[test]
    fn destructive_calls_never_reach_the_guardian() {
        let allow = ReviewOutcome::Allow("fine".into());
        let (g, seen, asked) = judged(allow.clone(), Posture::Ask, Some(ApprovalAnswer::Deny));
        let verdict = check_g(&g, "mcp__g__rm", false);
        assert_eq!(
            (verdict.allowed, verdict.resolution),
            (false, Resolution::UserDeny)
        );
        assert_eq!(asked.lock().unwrap().len(), 1);
        let (h, _, _) = judged(allow, Posture::Yolo, None);
        assert!(
            !check_g(&h, "mcp__g__rm", false).allowed,
            "headless: refused"
        );
        assert!(seen.lock().unwrap().is_empty());
    }

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let mut policy = Policy::new(Decision::Ask, "/ws".into(), None);
        policy.allow = Policy::parse_rules(allow).unwrap();
        policy.deny = Policy::parse_rules(deny).unwrap();
        policy
    }

    fn gate(
        allow: &[&str],
        deny: &[&str],
        posture: Posture,
        answer: Option<ApprovalAnswer>,
    ) -> (PolicyGate, Arc<Mutex<Vec<String>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let approver = answer.map(|answer| {
            Box::new(Counting {
                answer,
                asked: Arc::clone(&asked),
            }) as Box<dyn Approver>
        });
        let gate = PolicyGate::new(policy(allow, deny), posture, approver).with_mcp(lookup());
        (gate, asked)
    }

    /// A verdict names what let the call through (the event stream and the result's denials
    /// report it): the scope the user chose, then the session grant it became; an "always"
    /// answer with nowhere to save it says so. Only a plain allow goes unreported.
    #[test]
    fn verdicts_name_the_scope_or_grant_that_allowed_them() {
        assert!(!Verdict::allow().is_reportable());
        let args = json!({});
        let scope = Rule::parse("mytool").unwrap();
        let (g, asked) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Session(scope)));
        let first = g.check_declared("mytool", Profile::undeclared(false), &args);
        assert!(first.allowed && first.is_reportable(), "{first:?}");
        assert_eq!(first.resolution, Resolution::UserSession);
        assert_eq!(first.rule.as_deref(), Some("mytool"));
        let again = g.check_declared("mytool", Profile::undeclared(false), &args);
        assert_eq!(again.resolution, Resolution::SessionGrant);
        assert_eq!(again.rule.as_deref(), Some("mytool"));
        assert_eq!(
            asked.lock().unwrap().len(),
            1,
            "the grant answered the second"
        );

        let scope = Rule::parse("other").unwrap();
        let (g, _) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Always(scope)));
        let always = g.check_declared("other", Profile::undeclared(false), &args);
        assert_eq!(always.resolution, Resolution::UserAlways);
        assert_eq!(always.rule.as_deref(), Some("other"));
        assert!(
            always
                .warning
                .as_deref()
                .is_some_and(|w| w.contains("this session only")),
            "{always:?}"
        );
    }

    /// A fresh approval nobody can give is refused under the posture it was judged in (the
    /// denial report names it), and the gate answers for its MCP tools' policies.
    #[test]
    fn fresh_refusals_name_their_posture_and_the_gate_reports_mcp_policies() {
        let args = json!({});
        let (headless, _) = gate(&[], &[], Posture::Ask, None);
        let refused = headless.check_fresh("remember", &args, "a fact");
        assert!(!refused.allowed);
        assert_eq!(refused.posture, Some(Posture::Ask), "{refused:?}");
        let (strict, asked) = gate(&[], &[], Posture::Strict, Some(ApprovalAnswer::Once));
        let refused = strict.check_fresh("remember", &args, "a fact");
        assert!(!refused.allowed);
        assert_eq!(refused.posture, Some(Posture::Strict), "{refused:?}");
        assert!(asked.lock().unwrap().is_empty());

        let policy = Gate::mcp_policy(&headless, "mcp__s__rm").expect("a declared MCP tool");
        assert!(policy.destructive);
        assert_eq!(policy.mode, ApprovalMode::Approve);
        assert!(Gate::mcp_policy(&headless, "mcp__s__nothing").is_none());
    }

    /// The scopes offered with a question: a shell command's own exact and prefix rules, a
    /// writer's file and then every edit, any other tool by its name.
    #[test]
    fn suggested_scopes_follow_the_family_of_the_call() {
        let policy = policy(&[], &[]);
        let texts = |call: &Call| -> Vec<String> {
            suggest_scopes(call, &policy)
                .iter()
                .map(|r| r.text().to_string())
                .collect()
        };
        let command = "cargo test --all";
        let shell = Call::new("bash", Family::Shell, &json!({"command": command}));
        let expected: Vec<String> = [exact_command_rule(command), prefix_command_rule(command)]
            .into_iter()
            .flatten()
            .map(|r| r.text().to_string())
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(texts(&shell), expected);
        let other = Call::new("mytool", Family::Other, &json!({"command": command}));
        assert_eq!(texts(&other), ["mytool"]);
        let writer = Call::new("write_file", Family::Writer, &json!({"path": "a.txt"}));
        assert_eq!(texts(&writer), ["Edit(./a.txt)", "Edit"]);
    }

    #[test]
    fn the_request_hook_is_asked_before_every_person_and_can_only_deny() {
        let args = json!({"command": "x"});
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook = |deny: bool, seen: Arc<Mutex<Vec<String>>>| -> RequestHook {
            Arc::new(move |request: &ApprovalRequest, person: bool| {
                seen.lock()
                    .unwrap()
                    .push(format!("{} {person}", request.tool));
                deny.then(|| "not today".to_string())
            })
        };
        // A person would allow all three; the hook denies them first.
        let (g, asked) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Once));
        Gate::set_request_hook(&g, hook(true, Arc::clone(&seen)));
        let ask = g.check_declared("bash", Profile::undeclared(false), &args);
        let destructive = g.check("mcp__s__rm", false, &args);
        let fresh = g.check_fresh("remember", &args, "a fact");
        for verdict in [&ask, &destructive, &fresh] {
            assert!(!verdict.allowed);
            assert_eq!(verdict.resolution, Resolution::Hook);
            assert!(verdict.message.as_deref().unwrap().contains("not today"));
        }
        assert!(
            asked.lock().unwrap().is_empty(),
            "the person was asked anyway"
        );
        assert_eq!(
            *seen.lock().unwrap(),
            ["bash true", "mcp__s__rm true", "remember true"]
        );
        // Headless, the Ask it would allow without a person goes through the hook too; a hook
        // that says nothing changes nothing.
        seen.lock().unwrap().clear();
        let (g, _) = gate(&[], &[], Posture::Ask, None);
        Gate::set_request_hook(&g, hook(false, Arc::clone(&seen)));
        let verdict = g.check_declared("bash", Profile::undeclared(false), &args);
        assert_eq!(verdict.resolution, Resolution::Headless);
        assert_eq!(*seen.lock().unwrap(), ["bash false"]);
    }

    #[test]
    fn headless_runs_deny_destructive_tools_even_when_an_allow_rule_names_them() {
        let args = json!({});
        for (allow, posture) in [
            (&[][..], Posture::Ask),
            (&["mcp__s"][..], Posture::Yolo),
            (&["mcp__s__rm"][..], Posture::Ask),
            (&["mcp__s__rm"][..], Posture::Yolo),
        ] {
            let (g, _) = gate(allow, &[], posture, None);
            let verdict = g.check("mcp__s__rm", false, &args);
            assert!(!verdict.allowed, "{allow:?} {posture:?}");
            let message = verdict.message.unwrap();
            assert!(message.contains("marked destructive"), "{message}");
        }
        let (g, _) = gate(&["mcp__s__rm"], &["mcp__s__rm"], Posture::Ask, None);
        assert_eq!(
            g.check("mcp__s__rm", false, &args).resolution,
            Resolution::Rule,
            "an explicit deny still names its rule"
        );
    }

    #[test]
    fn interactive_runs_ask_for_every_destructive_call_whatever_the_posture() {
        let args = json!({});
        let (g, asked) = gate(
            &["mcp__s__rm"],
            &[],
            Posture::Yolo,
            Some(ApprovalAnswer::Session(Rule::parse("mcp__s__rm").unwrap())),
        );
        assert!(g.check("mcp__s__rm", false, &args).allowed);
        assert!(g.check("mcp__s__rm", false, &args).allowed);
        assert_eq!(
            asked.lock().unwrap().len(),
            2,
            "no grant answers a destructive call"
        );
        assert!(g.grants().is_empty());
        let (g, _) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Deny));
        let verdict = g.check("mcp__s__rm", false, &args);
        assert_eq!(
            (verdict.allowed, verdict.resolution),
            (false, Resolution::UserDeny)
        );
    }

    #[test]
    fn approval_modes_feed_the_decision() {
        let args = json!({});
        let (g, asked) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Once));
        // approve: a writer runs without a question.
        assert_eq!(
            g.check("mcp__s__approve", false, &args).resolution,
            Resolution::Plain
        );
        // prompt: even a reader is reviewed.
        let verdict = g.check("mcp__s__prompt", true, &args);
        assert_eq!(verdict.rule.as_deref(), Some("approval_mode = prompt"));
        // writes: readers pass, writers are reviewed.
        assert_eq!(
            g.check("mcp__s__writes", true, &args).resolution,
            Resolution::Plain
        );
        g.check("mcp__s__writes", false, &args);
        // auto: the ordinary decision (a writer falls back to ask).
        g.check("mcp__s__auto", false, &args);
        assert_eq!(
            *asked.lock().unwrap(),
            ["mcp__s__prompt", "mcp__s__writes", "mcp__s__auto"]
        );
        // An explicit deny still wins over approve.
        let (g, _) = gate(&[], &["mcp__s__approve"], Posture::Ask, None);
        assert!(!g.check("mcp__s__approve", false, &args).allowed);
        // Tools the lookup does not know are unaffected.
        let (g, asked) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Once));
        assert!(g.check("read_file", true, &json!({"path": "a"})).allowed);
        assert!(asked.lock().unwrap().is_empty());
    }

    #[test]
    fn the_plan_window_allows_the_writer_fallback_and_nothing_else() {
        let write = json!({"path": "a.txt"});
        let writer = crate::tool::builtin::profile("write_file").unwrap();
        let (g, asked) = gate(&[], &[], Posture::Ask, Some(ApprovalAnswer::Deny));
        let mut strict = PolicyGate::new(policy(&[], &[]), Posture::Strict, None);
        strict.policy.ask = Policy::parse_rules(&["Edit(secret.txt)"]).unwrap();
        assert!(!g.check_declared("write_file", writer, &write).allowed);
        assert!(!strict.check_declared("write_file", writer, &write).allowed);
        asked.lock().unwrap().clear();
        Gate::set_plan_window(&g, true);
        Gate::set_plan_window(&strict, true);
        // The writer fallback: allowed without a question, in ask and in strict.
        for gate in [&g, &strict] {
            let verdict = gate.check_declared("write_file", writer, &write);
            assert_eq!(
                (verdict.allowed, verdict.resolution),
                (true, Resolution::PlanWindow)
            );
            assert_eq!(verdict.resolution.as_str(), "plan_window");
        }
        assert!(asked.lock().unwrap().is_empty());
        // An explicit ask rule still asks (strict: still refused).
        let secret = json!({"path": "secret.txt"});
        let verdict = strict.check_declared("write_file", writer, &secret);
        assert_eq!(
            (verdict.allowed, verdict.resolution),
            (false, Resolution::Strict)
        );
        // A destructive MCP call and an MCP prompt mode still go to the person.
        assert!(!g.check("mcp__s__rm", false, &json!({})).allowed);
        assert!(!g.check("mcp__s__prompt", true, &json!({})).allowed);
        assert!(!g.check("mcp__s__writes", false, &json!({})).allowed);
        assert_eq!(
            *asked.lock().unwrap(),
            ["mcp__s__rm", "mcp__s__prompt", "mcp__s__writes"]
        );
        // So do fresh reviews: no window answers them.
        let verdict = g.check_fresh("remember", &json!({}), "a note");
        assert_eq!(verdict.resolution, Resolution::UserDeny);
        // Closed, the fallback asks again.
        Gate::set_plan_window(&g, false);
        let verdict = g.check_declared("write_file", writer, &write);
        assert_eq!(verdict.resolution, Resolution::UserDeny);
    }
}
