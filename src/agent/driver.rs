//! The [`Runner`] the front ends drive: one [`Agent`], or a [`Coordinator`] pairing a planner
//! with an executor (§3.4, §3.5), so `run` and `chat` do not care which. A runner derefs to
//! the agent the user talks to (the executor of a pair): the model, the session, plan mode,
//! tools and compaction are that agent's. What a pair does differently (a turn, replanning,
//! switching or rewinding the session, the cancel token, the per-model figures) is a method
//! here.

use std::ops::{Deref, DerefMut};

use super::coordinator::{self, Coordinator, ModelStats};
use super::events::EventSink;
use super::runner::{Agent, AgentError, Finish, ReviewerStats, Stats};
use super::session::Session;
use crate::cancel::CancelToken;

pub enum Runner {
    Agent(Box<Agent>),
    Coordinator(Box<Coordinator>),
}

impl From<Agent> for Runner {
    fn from(agent: Agent) -> Runner {
        Runner::Agent(Box::new(agent))
    }
}

impl From<Coordinator> for Runner {
    fn from(coordinator: Coordinator) -> Runner {
        Runner::Coordinator(Box::new(coordinator))
    }
}

impl Deref for Runner {
    type Target = Agent;

    fn deref(&self) -> &Agent {
        match self {
            Runner::Agent(agent) => agent,
            Runner::Coordinator(pair) => pair.executor(),
        }
    }
}

impl DerefMut for Runner {
    fn deref_mut(&mut self) -> &mut Agent {
        match self {
            Runner::Agent(agent) => agent,
            Runner::Coordinator(pair) => pair.executor_mut(),
        }
    }
}

impl Runner {
    /// Sends `input` as a user turn.
    pub fn run(&mut self, input: String, sink: &mut dyn EventSink) -> Result<Finish, AgentError> {
        match self {
            Runner::Agent(agent) => agent.run(input, sink),
            Runner::Coordinator(pair) => pair.run(input, sink),
        }
    }

    /// `/<profile> TASK`, run host-side (see [`Agent::run_profile`]); in a pair the
    /// executor's conversation gets the answer, the planner is not asked.
    pub fn run_profile(
        &mut self,
        profile: &str,
        task: String,
        sink: &mut dyn EventSink,
    ) -> Result<Finish, AgentError> {
        match self {
            Runner::Agent(agent) => agent.run_profile(profile, task, sink),
            Runner::Coordinator(pair) => pair.executor_mut().run_profile(profile, task, sink),
        }
    }

    /// `/replan [TEXT]`; `None` when there is no planner to ask.
    pub fn replan(
        &mut self,
        input: String,
        sink: &mut dyn EventSink,
    ) -> Option<Result<Finish, AgentError>> {
        match self {
            Runner::Agent(_) => None,
            Runner::Coordinator(pair) => Some(pair.replan(input, sink)),
        }
    }

    pub fn coordinator(&self) -> Option<&Coordinator> {
        match self {
            Runner::Agent(_) => None,
            Runner::Coordinator(pair) => Some(pair),
        }
    }

    /// A fresh cancel token for the next turn, shared by both models of a pair.
    pub fn reset_cancel(&mut self) -> CancelToken {
        match self {
            Runner::Agent(agent) => agent.reset_cancel(),
            Runner::Coordinator(pair) => pair.reset_cancel(),
        }
    }

    /// Continues in another session; a pair's planner follows (see
    /// [`Coordinator::replace_session`]).
    pub fn replace_session(&mut self, session: Session) -> Session {
        match self {
            Runner::Agent(agent) => agent.replace_session(session),
            Runner::Coordinator(pair) => pair.replace_session(session),
        }
    }

    /// `/rewind`: keeps the first `to` messages of the conversation.
    pub fn rewind(&mut self, to: usize) -> Result<(), AgentError> {
        match self {
            Runner::Agent(agent) => agent.rewind(to),
            Runner::Coordinator(pair) => pair.rewind(to),
        }
    }

    /// Each model's requests, usage and cost: one entry for an agent, the planner's and the
    /// executor's for a pair.
    pub fn models(&self) -> Vec<ModelStats> {
        let mut models = match self {
            Runner::Agent(agent) => coordinator::agent_stats("agent", agent),
            Runner::Coordinator(pair) => pair.models(),
        };
        let reviews = self.reviews();
        if reviews.requests > 0 {
            models.push(ModelStats {
                role: "reviewer",
                model: reviews.model,
                requests: reviews.requests,
                usage: reviews.usage,
                cost_usd: reviews.cost_usd,
            });
        }
        models
    }

    /// What the Guardian reviewer spent on the calls of every agent here.
    fn reviews(&self) -> ReviewerStats {
        let mut total = self.deref().stats().reviews.clone();
        if let Runner::Coordinator(pair) = self {
            if let Some(planner) = pair.planner() {
                let theirs = &planner.stats().reviews;
                if total.model.is_empty() {
                    total.model.clone_from(&theirs.model);
                }
                total.requests = total.requests.saturating_add(theirs.requests);
                total.usage.add(&theirs.usage);
                total.cost_usd += theirs.cost_usd;
            }
        }
        total
    }

    /// The run's totals: the talking agent's stats (its answer, context) with the requests,
    /// usage and cost of every model added up.
    pub fn total_stats(&self) -> Stats {
        let mut stats = self.deref().stats().clone();
        if let Runner::Coordinator(pair) = self {
            if let Some(planner) = pair.planner() {
                let theirs = planner.stats();
                stats.requests += theirs.requests;
                stats.summary_requests += theirs.summary_requests;
                stats.usage.add(&theirs.usage);
                stats.cost_usd += theirs.cost_usd;
            }
        }
        // The reviewer's tokens and cost are the run's, though not its requests or context.
        let reviews = self.reviews();
        stats.usage.add(&reviews.usage);
        stats.cost_usd += reviews.cost_usd;
        stats
    }
}
