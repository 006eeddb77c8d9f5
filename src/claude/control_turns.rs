//! `reasonix run`'s session as the turns of an Agent SDK session ([`Turns`]): each user
//! message is one turn with its own `result`, the SDK's hooks join the session's, `set_model`
//! switches the provider, `mcp_status` and `get_context_usage` report the session's state,
//! and `set_permission_mode` changes the gate's posture at once.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::{json, Value};

use super::control;
use super::control_session::{self, SdkLink, Turns, Wiring};
use crate::agent::driver::Runner;
use crate::agent::hooks::{Hook, Hooks};
use crate::app::delegate::{Children, Tally};
use crate::cancel::CancelToken;
use crate::cli::error::{exit, Error};
use crate::cli::output::Report;
use crate::cli::run::{finish, Ran, RunArgs};
use crate::config::Config;
use crate::mcp::manager::ServerState;
use crate::permission::{parse_posture, PolicyGate};
use crate::provider::ProviderSettings;

/// The parts of a run an SDK session drives.
pub struct RunTurns<'a> {
    pub agent: &'a mut Runner,
    pub output: &'a mut dyn Report,
    pub args: &'a RunArgs,
    pub tally: &'a Arc<Mutex<Tally>>,
    pub children: &'a Arc<Children>,
    pub config: &'a Config,
    pub cwd: &'a Path,
    pub priced: bool,
    /// The model in use (`set_model` changes it).
    pub settings: ProviderSettings,
    pub mcp: &'a crate::mcp::Host,
}

/// Runs the SDK session on stdin until it ends; the exit code is 0 unless stdout closed.
pub fn serve(
    turns: &mut RunTurns<'_>,
    link: &SdkLink,
    gate: Arc<PolicyGate>,
) -> Result<i32, Error> {
    let wiring = Wiring {
        calls: Arc::clone(&link.calls),
        out: Arc::clone(&link.out),
        current: Arc::clone(&link.current),
        set_mode: Box::new(move |mode| set_mode(&gate, mode)),
        notice: Arc::new(|line| {
            eprintln!("reasonix: {}", crate::term::sanitize::sanitize(&line));
        }),
    };
    let reads = link.take_reads().ok_or_else(|| {
        Error::Failed("control: the SDK session's stdin was already taken".into())
    })?;
    control_session::serve(turns, reads, wiring).map_err(|e| Error::Failed(e.to_string()))?;
    if turns.output.closed() {
        return Ok(exit::OUTPUT_CLOSED);
    }
    Ok(exit::OK)
}

/// `set_permission_mode`: Claude's modes as the gate's postures. `plan` is a way of running
/// a session, chosen when it starts.
fn set_mode(gate: &PolicyGate, mode: &str) -> Result<(), String> {
    if mode == "plan" {
        return Err(
            "reasonix cannot switch to plan mode inside a session; start it with --permission-mode plan"
                .into(),
        );
    }
    gate.set_posture(parse_posture(mode)?);
    Ok(())
}

impl Turns for RunTurns<'_> {
    fn run_turn(&mut self, prompt: String, cancel: CancelToken) {
        let started = Instant::now();
        self.agent.set_cancel(cancel);
        let outcome = self.agent.run(prompt, &mut *self.output);
        let children = self
            .tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let ran = Ran {
            outcome,
            goal: None,
        };
        // The turn's result line is its report; the session goes on whatever it said.
        let _ = finish(
            self.args,
            self.agent,
            &children,
            ran,
            self.priced,
            started,
            &mut *self.output,
        );
    }

    fn add_hooks(&mut self, sdk: Vec<Hook>) {
        if sdk.is_empty() {
            return;
        }
        // The session's own hooks (already reported when the run started) come first.
        let (own, _) = crate::app::hooks::session_hooks(self.config, self.cwd);
        let mut all = own.list().to_vec();
        all.extend(sdk);
        let hooks = Hooks::new(all);
        self.children.set_hooks(&hooks);
        self.agent.set_hooks(hooks);
    }

    fn initialize_answer(&self) -> Value {
        control::initialize_answer(&[], std::slice::from_ref(&self.settings.model))
    }

    fn set_model(&mut self, model: Option<&str>) -> Result<(), String> {
        let mut settings = self
            .config
            .resolve_model(model)
            .map_err(|e| e.to_string())?;
        if self.agent.options().fallback.is_some() {
            crate::agent::fallback::hand_over_early(&mut settings.retry);
        }
        let provider = crate::provider::build(settings.clone()).map_err(|e| e.to_string())?;
        self.agent.set_provider(provider, settings.prices);
        self.output.model_changed(&settings.model);
        self.settings = settings;
        Ok(())
    }

    fn mcp_status(&self) -> Value {
        let servers: Vec<Value> = self
            .mcp
            .handle()
            .statuses()
            .into_iter()
            .map(|status| match status.state {
                ServerState::Connected => json!({"name": status.name, "status": "connected"}),
                ServerState::Failed(error) => {
                    json!({"name": status.name, "status": "failed", "error": error})
                }
                ServerState::Skipped(why) => {
                    json!({"name": status.name, "status": "disabled", "error": why})
                }
            })
            .collect();
        json!({"mcpServers": servers})
    }

    fn context_usage(&self) -> Value {
        let used = self.agent.context_tokens();
        let window = self.settings.context_window.max(1);
        let percentage = (used as f64 * 100.0 / window as f64).min(100.0);
        json!({
            "categories": [{"name": "Messages", "tokens": used, "color": "purple"}],
            "totalTokens": used,
            "maxTokens": window,
            "rawMaxTokens": window,
            "percentage": percentage,
            "model": self.settings.model,
            "isAutoCompactEnabled": true,
            "memoryFiles": [],
            "mcpTools": [],
            "agents": [],
            "gridRows": [],
        })
    }
}
