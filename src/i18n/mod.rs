//! The message catalog of the user interface: every string the chat, `/help`, the slash
//! command list, `reasonix doctor` and the browser page show, in English and Chinese, and
//! which language is in force. English lives here, next to each key; `zh.rs` holds the
//! Chinese table, and a test fails when a key has no translation there; `page.rs` names the
//! browser page's share.
//!
//! Only what a person reads goes through here. What the model sees (system prompt, tool
//! descriptions and results) stays English so the prompt cache does not depend on the reader.
//! The language is one process-wide setting, set once by the CLI after the config is loaded,
//! because the strings are read from every corner of the chat and from worker threads.

use std::fmt::Display;
use std::sync::atomic::{AtomicU8, Ordering};

pub mod page;
mod zh;

/// A language the interface speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    /// The language for the `language` setting: the setting when it is not empty, else
    /// `$REASONIX_LANG`, then the locale (`$LC_ALL`, `$LC_MESSAGES`, `$LANG`, the first one
    /// set). A tag starting with `zh` (`zh`, `zh_CN.UTF-8`, `zh-Hans`), `chinese` or `中文`
    /// is Chinese; anything else is English.
    pub fn detect(setting: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Lang {
        let setting = setting.map(str::trim).filter(|s| !s.is_empty());
        let chosen = setting.map(str::to_string).or_else(|| {
            ["REASONIX_LANG", "LC_ALL", "LC_MESSAGES", "LANG"]
                .iter()
                .filter_map(|name| env(name))
                .map(|v| v.trim().to_string())
                .find(|v| !v.is_empty())
        });
        match chosen {
            Some(tag) if Lang::is_chinese(&tag) => Lang::Zh,
            _ => Lang::En,
        }
    }

    /// [`Lang::detect`] with the process environment.
    pub fn from_env(setting: Option<&str>) -> Lang {
        Lang::detect(setting, |name| std::env::var(name).ok())
    }

    /// The language's tag (`en`, `zh`), as the page's `<html lang>` takes it.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    fn is_chinese(tag: &str) -> bool {
        let lower = tag.to_ascii_lowercase();
        lower.starts_with("zh") || lower == "chinese" || tag == "中文"
    }
}

static CURRENT: AtomicU8 = AtomicU8::new(0);

/// Makes `lang` the language of every later lookup.
pub fn set(lang: Lang) {
    CURRENT.store(lang as u8, Ordering::Relaxed);
}

/// The language in force (English until [`set`] says otherwise).
pub fn lang() -> Lang {
    match CURRENT.load(Ordering::Relaxed) {
        1 => Lang::Zh,
        _ => Lang::En,
    }
}

/// `key` in the language in force.
pub fn tr(key: Ui) -> &'static str {
    text(lang(), key)
}

/// `key` in the language in force with each `{}` replaced by the next of `args`.
pub fn trf(key: Ui, args: &[&dyn Display]) -> String {
    fill(tr(key), args)
}

/// `key` in `lang`; a key missing from a translation falls back to English.
pub fn text(lang: Lang, key: Ui) -> &'static str {
    match lang {
        Lang::En => key.en(),
        Lang::Zh => zh::ZH
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(key.en(), |(_, text)| text),
    }
}

/// `template` with each `{}` replaced by the next of `args` (a missing argument leaves `{}`).
pub fn fill(template: &str, args: &[&dyn Display]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut args = args.iter();
    let mut rest = template;
    while let Some(at) = rest.find("{}") {
        out.push_str(&rest[..at]);
        match args.next() {
            Some(arg) => out.push_str(&arg.to_string()),
            None => out.push_str("{}"),
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

/// Declares the keys with their English text; `Ui::ALL` lists them for the completeness test.
macro_rules! catalog {
    ($($key:ident => $en:expr,)*) => {
        /// One string of the interface.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Ui {
            $($key,)*
        }

        impl Ui {
            /// Every key, in declaration order.
            pub const ALL: &'static [Ui] = &[$(Ui::$key,)*];

            /// The English text.
            pub fn en(self) -> &'static str {
                match self {
                    $(Ui::$key => $en,)*
                }
            }
        }
    };
}

catalog! {
    // Postures and collaboration modes (the spec's labels).
    PostureAsk => "ask",
    PostureAuto => "auto",
    PostureYolo => "yolo",
    PostureStrict => "strict",
    // English keeps the status line as it was: the normal mode is the one not named.
    ModeNormal => "",
    ModePlan => "plan",
    ModeGoal => "goal",
    ModeGoalResearch => "goal (research)",
    // The status line, the composer and the banner.
    StatusCache => "cache {}%",
    StatusContext => "ctx {}%",
    StatusExitArmed => "   press Ctrl-C again to exit",
    StatusHint => "   shift-tab: mode · /help",
    Placeholder => "Ask anything · / commands · @ files · ! shell",
    Preparing => "preparing the message",
    StartingServers => "starting MCP servers",
    ShellRunning => "! {}  {} · esc to interrupt",
    Queued => "  ↳ queued: {}",
    BannerHint => "/help for commands · esc interrupts · ctrl-c twice or ctrl-d exits",
    Attached => "  ⎿ attached {}",
    // Modals and the approval card.
    ModalFooter => "╰─ ↑↓ to move · enter to choose · esc to cancel",
    ApproveYes => "Yes",
    ApproveSession => "Yes, and allow {} for this session",
    ApproveAlways => "Always allow {} (saved to ./reasonix.toml)",
    ApproveNo => "No, and tell the model what to do instead",
    ApproveTitle => "Allow {}?",
    ApproveTitleRule => "Allow {}? (rule {} asks)",
    NoChange => "(no change to the file)",
    LaunchTitle => "Start MCP server {}?",
    LaunchDeclared => "declared in {} · {}",
    LaunchSession => "Yes, for this session",
    LaunchAlways => "Yes, and remember it for this workspace",
    LaunchNo => "No",
    // The ask card.
    AskTitle => "The model asks",
    AskTypeAnswer => "Type an answer…",
    AskTextFooter => "╰─ type your answer · enter to send · esc back to the choices",
    AskFooter => "╰─ 1-9 or ↑↓ and enter to answer · esc to dismiss the question",
    // The plan review.
    PlanTitle => "Plan ready for review",
    PlanApprove => "Approve and start",
    PlanApproveAuto => "Approve, and auto-accept edits from now on",
    PlanKeep => "Keep planning (tell the model what to change)",
    PlanKeepTitle => "Keep planning",
    PlanKeepFooter => "╰─ type what to change in the plan · enter to send · esc back to the plan",
    PlanRows => "── rows {}-{} of {} · pgup/pgdn to scroll",
    PlanFooter => "╰─ ↑↓ and enter to choose · esc to keep planning",
    PlanApproved => "plan approved: leaving plan mode to carry it out",
    // The transcript.
    GrantSession => "allowed {} for this session",
    GrantAlways => "always allowing {}",
    BlockedByRule => "{} blocked by rule {}",
    GuardianAllowed => "guardian allowed {}: {}",
    GuardianDenied => "guardian denied {}: {}",
    GuardianFailedAllowed => "guardian gave no verdict on {} ({}); you allowed it once",
    GuardianFailedDenied => "guardian gave no verdict on {} ({}); not run",
    GuardianNote => "asking you: {}",
    Thinking => "✻ Thinking",
    ThinkingFor => "✻ Thinking… {}",
    ThoughtFor => "✻ Thought for {} (ctrl-o shows reasoning)",
    NotFinished => "  (not finished)",
    StepLimit => "stopped: the step limit was reached; send a message to continue",
    Interrupted => "⎿ interrupted — the partial answer is kept; tell the model what to do instead",
    InterruptedBeforeAnswer => "⎿ interrupted; tell the model what to do instead",
    Working => "{} Working… {} · esc to interrupt",
    NoOutput => "  ⎿ (no output)",
    ReadOneLine => "  ⎿ read {} line",
    ReadLines => "  ⎿ read {} lines",
    MoreLines => "    … {} more lines (ctrl-o for more)",
    // The todo panel.
    TodoHeader => "  Tasks {}/{} · ctrl-t hides",
    TodoMore => "    +{} more",
    // Notices the chat writes.
    GoalClearedNormal => "goal cleared; back to normal mode",
    GoalClearedPlan => "goal cleared: plan mode replaces it",
    PlanOn => "plan mode: the model researches and proposes a plan for you to review before it edits",
    PlanOff => "plan mode off",
    VerboseOn => "verbose: reasoning and long tool output are shown in full",
    VerboseOff => "verbose off: reasoning is summarised and long output folded",
    ServersStillStarting => "MCP servers are still starting; send /{} again once they are up",
    WaitsForTurn => "/{} waits for the running turn; press esc to interrupt it",
    NewConversation => "new conversation; the previous one ({}) is saved, /resume returns to it",
    ConversationCleared => "conversation cleared; the context is empty",
    NowUsing => "now using {}/{}",
    ResumedConversation => "resumed conversation {}",
    ClearTitle => "Clear the conversation?",
    ClearBody => "The context is discarded and this conversation is not kept for /resume.",
    ClearYes => "Yes, clear it",
    // Other slash commands.
    ModelsHeading => "Configured models",
    ModelsHint => "  /model REF switches: a provider name, a model name or provider/model",
    EffortIs => "reasoning effort: {}",
    EffortDefault => "reasoning effort: the model's default",
    EffortUnknown => "unknown effort `{}`; use low, medium, high, max or default",
    EffortSet => "reasoning effort set to {}",
    McpTitle => "MCP servers",
    McpStarting => "MCP servers are still starting.",
    McpNone => "No MCP servers are connected.",
    McpDeclare => "Declare them as [[plugins]] in reasonix.toml or in .mcp.json.",
    McpCounts => "  {} tools · {} prompts · {} resources",
    Close => "Close",
    ToolsHeading => "Tools",
    ReadOnly => "  read-only",
    ReplanNeedsPlanner => "/replan needs a planner model: set agent.planner_model to a model other than this one",
    NoEarlierConversations => "no earlier conversations in this workspace",
    ResumeTitle => "Resume a conversation",
    // The trust modal before the chat.
    TrustTitle => "Trust this workspace?",
    TrustBody => "./reasonix.toml wants to loosen your settings; until you trust the workspace it may only tighten them. Ignored:",
    TrustNo => "No, keep ignoring those settings",
    TrustedSession => "trusted for this chat",
    TrustedAlways => "trusted; remembered for this workspace",
    NotTrusted => "not trusted",
    // Goal mode.
    GoalActive => "active goal: {}; /goal clear ends it",
    GoalNone => "no active goal; /goal OBJECTIVE starts one",
    GoalNoneActive => "no active goal",
    // `/status` and `/cost`.
    StatusHeading => "Status",
    StatusModel => "model",
    StatusSession => "session",
    StatusFile => "file",
    StatusDirectory => "directory",
    StatusPermissions => "permissions",
    StatusContextRow => "context",
    StatusMcp => "mcp",
    StatusComposition => "composition",
    StatusSessionValue => "{} ({} messages)",
    StatusPermissionsValue => "posture {} · writer fallback {} · {} allow, {} ask, {} deny rules · {} session grants",
    StatusContextValue => "{} of {} tokens ({}%)",
    StatusContextNoWindow => "{} tokens (no context window configured)",
    StatusMcpValue => "{} servers",
    StatusCompositionBound => "{} · revision {} · {}",
    StatusCompositionUnbound => "{} (unbound)",
    CostTotal => "this conversation: {} prompt tokens ({} from cache), {} completion tokens",
    CostUnknown => "; cost unknown (no prices configured for this model)",
    CostEstimated => " (estimated)",
    CostModel => "\n  {} {}: {} requests, {} prompt tokens ({} from cache), {} completion tokens",
    // `/help`.
    HelpCommands => "Commands",
    HelpKeys => "Keys",
    KeyEnter => "send (queued while a turn runs)",
    KeyNewLine => "new line (shift-enter where the terminal reports it)",
    KeyEsc => "interrupt the turn · close the menu",
    KeyCtrlC => "interrupt · clear the input · twice to exit",
    KeyCtrlD => "exit on an empty prompt",
    KeyShiftTab => "cycle the mode: ask → auto → yolo → plan → ask (a goal → normal)",
    KeyCtrlT => "show or hide the task list above the input",
    KeyCtrlO => "toggle verbose (reasoning, long output)",
    KeyUpDown => "move between lines · history",
    KeyEditing => "line start/end · kill to end/start · delete word",
    KeyTab => "accept the completion",
    KeyCtrlL => "clear the screen",
    KeyCtrlZ => "suspend",
    KeyPrefixes => "commands · attach files · run a shell command",
    // Slash command descriptions.
    CmdHelp => "Show commands and keys",
    CmdNew => "Save this conversation and start a fresh one",
    CmdClear => "Discard this conversation (asks first)",
    CmdCompact => "Summarise older turns to free context",
    CmdModel => "Show configured models or switch to one",
    CmdEffort => "Show or set the reasoning effort",
    CmdMcp => "Show MCP servers and what they offer",
    CmdTools => "List the tools the model can call",
    CmdCost => "Tokens and cost of this session",
    CmdStatus => "Model, session, permissions and context",
    CmdResume => "Pick an earlier conversation of this workspace",
    CmdMemory => "Browse, search, forget and restore saved memory",
    CmdRewind => "Go back to before an earlier turn, optionally restoring files",
    CmdVerbose => "Toggle showing reasoning and long tool output",
    CmdPlan => "Toggle plan mode: agree a plan before the edits",
    CmdGoal => "Work toward an objective until it is done (/goal clear ends it)",
    CmdReplan => "Ask the planner model (agent.planner_model) for a new plan",
    CmdAgent => "List agent compositions, or choose one before the first prompt",
    CmdPersona => "Show or edit the persona builtin:general uses (user config)",
    CmdExit => "Leave the chat",
    // `reasonix doctor`.
    DoctorCheck => "CHECK",
    DoctorStatus => "STATUS",
    DoctorDetail => "DETAIL",
    DoctorPass => "pass",
    DoctorWarn => "warn",
    DoctorFail => "FAIL",
    CheckVersion => "version",
    CheckConfig => "config",
    CheckModel => "model",
    CheckApiKey => "api key",
    CheckEndpoint => "endpoint",
    CheckSandbox => "sandbox",
    CheckJail => "jail",
    CheckJailLimits => "jail limits",
    CheckSessions => "sessions",
    DoctorHome => "home {}",
    DoctorWarnings => "{} warning(s); first: {}",
    KeyFromEnv => "found in the environment variable {}",
    KeyFromStore => "found as {} in {}",
    KeyNoneNeeded => "none needed: provider `{}` has no api_key_env (a local server without auth)",
    KeyNoEnvName => "provider `{}` has no api_key_env; name the variable that holds its key in the config",
    KeyMissingLocal => "{} is not set in the environment or {} (fine for a local server without auth)",
    KeyMissing => "{} is not set in the environment or {}; export it or run `reasonix setup --api-key-stdin`",
    // `/memory`.
    MemoryTitle => "Memory",
    MemoryCounts => " · {} active · {} archived",
    MemorySearch => "search: ",
    MemorySearchHint => "press / to search",
    MemoryNoState => "No state directory is configured for this run, so there is no saved memory.",
    MemoryEmpty => "No saved memory yet. The model saves facts with the remember tool, asking you each time.",
    MemoryNoMatch => "No fact matches the search.",
    MemoryArchivedTag => "  [archived]",
    MemorySearchFooter => "╰─ type to search · enter or ↓ to the list · esc to the list",
    MemoryListFooter => "╰─ ↑↓ move · enter read · f forget · r restore · / search · esc close",
    MemoryUpdated => "{} · updated {}",
    MemoryFactFooter => "╰─ ↑↓ pgup pgdn scroll · esc back · lines {}-{} of {}",
    MemoryAlreadyArchived => "`{}` is already archived; r restores it",
    MemoryForgot => "forgot `{}`; archived as {}",
    MemoryIsActive => "`{}` is active; f forgets it",
    MemoryRestored => "restored `{}` to the active memory",
    // `/rewind`.
    RewindIntro => "The conversation goes back to before the turn you choose.",
    RewindCompacted => "{} earlier turns were compacted into a digest and cannot be rewound to.",
    RewindTitle => "Rewind to before which turn?",
    RewindBackTo => "Back to before turn #{}: {}",
    RewindAndMore => "  and {} more",
    RewindFilesRestored => "Files restored:",
    RewindRemoved => "{} (removed: it did not exist)",
    RewindSkipped => "Changed but not kept, not restored:",
    RewindCommands => "Not restorable (commands are not undone):",
    RewindNoChanges => "No file changes by the agent were recorded since then.",
    RewindHow => "Rewind how?",
    RewindConversationOnly => "Rewind the conversation only",
    RewindAndRestore => "Rewind the conversation and restore files",
    Cancel => "Cancel",
    RewindAllCompacted => "nothing to rewind: every turn so far was compacted into a digest",
    RewindNoTurns => "nothing to rewind: this conversation has no turns yet",
    Rewound => "rewound the conversation to before turn #{}",
    RewoundRestoredOne => "; restored 1 file",
    RewoundRestored => "; restored {} files",
    RewoundFilesLeft => "; files were left as they are",
    RewoundTextBack => "; the turn's text is back in the input",
    NotRestored => "not restored: {}",
    NotRestoredWhy => "not restored: {} ({})",
    NotUndone => "not undone: {}",
    RewindNotRecorded => "snapshots: could not record the rewind ({})",
    // Goal mode's notices.
    GoalUnknownFlag => "/goal: unknown flag --{}; use --research or --simple",
    GoalBuiltin => "/goal: the objective cannot be a built-in command ({})",
    GoalEmpty => "/goal: the objective is empty",
    GoalStrategyResearch => "AutoResearch, its state in {}/",
    GoalStrategyLight => "lightweight",
    GoalStarted => "goal mode ({}): the model works until it reports the goal complete, at most {} continuation turns per message; esc stops it, /goal clear ends it",
    GoalAutoresearch => "autoresearch: this message asks for long-horizon research, so it runs as a goal. ",
    GoalComplete => "goal complete: {}",
    GoalVerified => "; verified: {}",
    GoalUnverified => "; unverified: {}",
    GoalNothingVerified => "the model did not say what it verified",
    GoalBlocked => "goal blocked: {} (the same blocked state {} times); answer to continue, or /goal clear",
    GoalLimit => "goal paused after {} continuation turns (the safety limit); send a message to continue, or /goal clear",
    // Errors and notices of the chat itself.
    ShellWhileTurn => "a turn is running; run ! commands after it (esc interrupts it)",
    ShellNoBash => "the bash tool is not available",
    ShellBlocked => "blocked by the permission policy",
    ShellNoThread => "could not start the shell thread",
    ServersLost => "starting the MCP servers failed (an internal error); the chat goes on without them",
    ServersNoThread => "could not start a thread for the MCP servers; the chat goes on without them",
    NothingToCompact => "nothing to compact yet",
    TurnNoThread => "could not start the agent thread",
    PrepareNoThread => "could not start a thread to prepare the message",
    TurnLost => "the turn stopped unexpectedly (an internal error); the conversation is saved up to it",
    AgentUnavailable => "agent compositions are not available in this chat",
    AgentSwitchBusy => "the chat is still starting MCP servers or has queued messages; choose a composition once it is idle",
    ResumeBusy => "the chat is still starting MCP servers or has queued messages; resume once it is idle",
    HistoryOnlyOpened => "opened as history only: {}",
    HistoryOnlyNotSent => "not sent: this conversation is history only ({}); /new starts a new conversation, /resume opens another",
    ElicitDefault => "{} (default)",
    ElicitYes => "Yes",
    ElicitNo => "No",
    ElicitKeepDefault => "Keep the default: {}",
    ElicitLeaveEmpty => "Leave it empty",
    ElicitAsks => "MCP server {} asks: {}",
    ElicitOpen => "Open {}",
    ElicitHost => "Host: {}",
    ElicitPunycode => "The host is written in Punycode and may imitate another name; check it.",
    ElicitOpenBrowser => "Open in the browser",
    ElicitOpenYourself => "open this URL in a browser to continue: {}",
    ElicitWaiting => "Waiting for {} to confirm the step in the browser ({}).",
    ElicitRetryNow => "It is done: try again",
    ElicitCancel => "Cancel",
    ElicitDecline => "Decline",
    ElicitSend => "Send",
    ElicitSendSummary => "Send {}?",
    ElicitTypeChoices => "Type numbers or names, comma-separated: {}",
    ElicitRequired => "`{}` is required",
    ElicitNumber => "`{}` must be a number",
    ElicitWhole => "`{}` must be a whole number",
    ElicitYesNo => "`{}` is yes or no",
    ElicitOneOf => "`{}` is one of: {}",
    PersonaUnavailable => "the persona cannot be edited in this chat",
    AgentBusy => "the agent is busy with a turn; try again when it ends (esc interrupts it)",
    Compacted => "context {} ({}): {} → {} tokens",
    TitleTodo => "update the task list",
    TitlePlan => "propose the plan for review",
    MoreSubagents => "    … {} more subagents (ctrl-o shows all)",
    MoreDiffLines => "… {} more diff lines",
    MoreTableRows => "… {} more table rows",
    EarlierExchange => "… 1 earlier exchange",
    EarlierExchanges => "… {} earlier exchanges",
    MoreToolCalls => "    … {} more tool calls",
    MoreAnswerLines => "  … {} more lines",
    NoProgress => "paused: {} rounds went by with nothing completed on the task list and only repeated calls; all work so far is kept, say how to go on",
    HookRan => "hook {} `{}` {}",
    CommandUnknown => "command: unknown command /{}; /help lists the commands",
    CommandNeedsChat => "command: /{} needs the interactive chat (a terminal)",
    CommandMissing => "command: {} needs {}; usage: {}",
    CommandExtra => "command: /{} takes no arguments; got `{}`",
    CommandFailed => "command: /{} failed: {}",
    ChildQueued => "queued",
    ChildStopped => "stopped · {}",
    ChildFacts => " · {} tools · {} tokens · {}",
    // `reasonix doctor`'s endpoint row.
    EndpointAnswered => "HTTP {} in {} ms from {}",
    EndpointModels => ", {} models",
    EndpointTlsRoots => "; TLS roots: {}",
    EndpointWantsKey => ": the server wants a key; name its variable in the provider's api_key_env",
    EndpointRejectedKey => ": the server rejected the key in ${}",
    // The browser page (`src/serve/page`): `page.rs` maps the page's message ids to these.
    // Their placeholders are named (`{tool}`), as the page's `t(id, args)` fills them.
    PageLoginPassword => "Password",
    PageLoginToken => "Access token",
    PageLoginSubmit => "Log in",
    PageLoginWrong => "Wrong password or token.",
    PageLoginLimited => "Too many attempts; wait a minute and try again.",
    PageSessionsNew => "New conversation",
    PageSessionsLive => "Open",
    PageSessionsStored => "Earlier",
    PageSessionsUntitled => "(new conversation)",
    PageComposerPlaceholder => "Ask reasonix… (Enter sends, Shift+Enter for a new line, Esc interrupts)",
    PageComposerSend => "Send",
    PageComposerInterrupt => "Interrupt",
    PageApprovalTitle => "Allow {tool}?",
    PageApprovalOnce => "Allow once",
    PageApprovalSession => "Allow for this session",
    PageApprovalAlways => "Always allow",
    PageApprovalDeny => "Deny",
    PageAskTitle => "The agent asks",
    PageAskAnswer => "Answer",
    PageAskDismiss => "Dismiss",
    PagePlanTitle => "Proposed plan",
    PagePlanApprove => "Approve",
    PagePlanApproveEdits => "Approve and auto-accept edits",
    PagePlanKeep => "Keep planning",
    PagePlanFeedback => "What should change?",
    PageToolRunning => "running…",
    PageTurnInterrupted => "Interrupted.",
    PageTurnError => "The turn failed: {error}",
    PageServerShutdown => "The server stopped.",
    PageDiffNone => "(no change to the file)",
    PageDiffMore => "… {lines} more diff lines",
    PageStreamRefused => "Live updates for this conversation were refused (the server may have too many open; close other tabs showing it) or the login expired; reload the page.",
    PageReadOnly => "History only, nothing can be sent: {reason}.",
    PageStatusTokens => "{tokens} tokens",
    PageStatusCache => "cache {ratio}",
    PageStatusContext => "context {tokens}",
    PageStatusCost => "${cost}",
    PageErrorRequest => "Request failed: {error}",
    PageModePosture => "Approvals",
    PageModeAsk => "Ask",
    PageModeAuto => "Auto",
    PageModeYolo => "YOLO",
    PageModePlanning => "Plan mode",
    PageModeChanged => "Approvals: {posture}",
    PageModePlanOn => "Plan mode on: the agent researches and proposes a plan first.",
    PageModePlanOff => "Plan mode off.",
    PageModelLabel => "Model",
    PageModelChanged => "Model: {model} (from the next turn).",
    PageCompositionLabel => "Agent",
    PageCompositionLocked => "{name} (locked)",
    PageCompositionBound => "Agent: {id}.",
    PageCommandClearConfirm => "Clear this conversation? Its file is deleted.",
    PageSessionReplaced => "Continued in conversation {id}.",
    PageToolWaiting => "waiting for approval…",
    PageTitleRename => "Rename",
    PageTitleHint => "Double-click or press Rename to rename this conversation",
    PageEmptyHeading => "What should reasonix do?",
    PageEmptyWorkspace => "Workspace",
    PageEmptyModel => "Model",
    PageEmptyExample1 => "Explain how this project is laid out and where to start reading",
    PageEmptyExample2 => "Run the tests and fix the first failure",
    PageEmptyExample3 => "Review the uncommitted changes and point out bugs",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_a_chinese_translation_and_only_one() {
        let missing: Vec<&Ui> = Ui::ALL
            .iter()
            .filter(|key| !zh::ZH.iter().any(|(k, text)| k == *key && !text.is_empty()))
            .collect();
        assert!(missing.is_empty(), "keys without Chinese: {missing:?}");
        for (key, _) in zh::ZH {
            let count = zh::ZH.iter().filter(|(k, _)| k == key).count();
            assert_eq!(count, 1, "{key:?} translated {count} times");
        }
    }

    /// The `{}` and `{name}` placeholders of `text`, sorted.
    fn placeholders(text: &str) -> Vec<&str> {
        let mut found = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find('{') {
            rest = &rest[at..];
            let end = rest.find('}').map_or(0, |e| e + 1);
            let name = &rest[..end];
            if end > 0
                && name[1..end - 1]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_')
            {
                found.push(name);
                rest = &rest[end..];
            } else {
                rest = &rest[1..];
            }
        }
        found.sort_unstable();
        found
    }

    #[test]
    fn translations_keep_the_placeholders_of_the_english() {
        for key in Ui::ALL {
            let (en, zh) = (text(Lang::En, *key), text(Lang::Zh, *key));
            assert_eq!(
                placeholders(en),
                placeholders(zh),
                "{key:?}: {en:?} / {zh:?}"
            );
        }
    }

    #[test]
    fn the_spec_labels_for_postures_and_modes() {
        let zh = |key| text(Lang::Zh, key);
        assert_eq!(zh(Ui::PostureAsk), "需要批准");
        assert_eq!(zh(Ui::PostureAuto), "自动批准");
        assert_eq!(zh(Ui::PostureYolo), "Yolo批准");
        assert_eq!(zh(Ui::ModeNormal), "正常模式");
        assert_eq!(zh(Ui::ModePlan), "计划模式");
        assert_eq!(zh(Ui::ModeGoal), "目标模式");
    }

    #[test]
    fn the_setting_wins_then_reasonix_lang_then_the_locale() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            Lang::detect(Some("zh"), env(&[("LANG", "en_US.UTF-8")])),
            Lang::Zh
        );
        assert_eq!(
            Lang::detect(Some("en"), env(&[("LANG", "zh_CN.UTF-8")])),
            Lang::En
        );
        assert_eq!(
            Lang::detect(Some(""), env(&[("LANG", "zh_CN.UTF-8")])),
            Lang::Zh
        );
        assert_eq!(
            Lang::detect(None, env(&[("LC_ALL", "zh_TW.UTF-8")])),
            Lang::Zh
        );
        assert_eq!(
            Lang::detect(
                None,
                env(&[("REASONIX_LANG", "en"), ("LANG", "zh_CN.UTF-8")])
            ),
            Lang::En
        );
        assert_eq!(
            Lang::detect(None, env(&[("LC_ALL", ""), ("LANG", "zh_CN.UTF-8")])),
            Lang::Zh
        );
        assert_eq!(Lang::detect(None, env(&[("LANG", "C.UTF-8")])), Lang::En);
        assert_eq!(Lang::detect(None, env(&[])), Lang::En);
        assert_eq!(Lang::detect(Some("中文"), env(&[])), Lang::Zh);
        assert_eq!(Lang::detect(Some("Chinese"), env(&[])), Lang::Zh);
    }

    #[test]
    fn placeholders_are_filled_in_order() {
        assert_eq!(fill("{} of {}", &[&1, &"two"]), "1 of two");
        assert_eq!(fill("{} and {}", &[&1]), "1 and {}");
        assert_eq!(text(Lang::Zh, Ui::ApproveTitle), "允许 {}？");
    }
}
