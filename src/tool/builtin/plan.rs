//! `exit_plan_mode {plan}`: the model ends planning by proposing a plan. A person reviews it
//! through `ToolContext::interact` (approve, approve and auto-accept edits, keep planning with
//! feedback); a headless run has no one to ask, so the plan is left in
//! `Workflow::proposed` and the agent ends the run with it. No approval posture answers the
//! review. The agent reports each review and acts on it (posture, the gate's approved-plan
//! window) after the round, from `Workflow::decisions`.

use std::sync::PoisonError;

use serde_json::{json, Value};

use crate::tool::collab::{PlanDecision, PlanOutcome, PlanReview};
use crate::tool::{args, Family, Profile, Subjects, Tool, ToolContext, ToolError};

pub struct ExitPlanMode;

pub const NAME: &str = "exit_plan_mode";

const DESCRIPTION: &str = "\
Ends plan mode by proposing your plan to the user for review. Call it only in plan mode, \
once your research is done: `plan` is the complete plan in Markdown (the steps, the files \
each touches, how you will verify the result). Call it alone, not together with other tools. \
The result says whether the user approved the plan (carry it out then), wants more planning \
(their feedback is included) or did not answer.";

impl Tool for ExitPlanMode {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {
                    "type": "string",
                    "description": "The plan, in Markdown"
                }
            },
            "required": ["plan"]
        })
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    /// Its answer changes how the calls after it are judged, so it runs alone, in order
    /// (see [`Profile::decision`]).
    fn profile(&self) -> Profile {
        Profile::decision()
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let plan = args::required_str(args, "plan")?.trim();
        if plan.is_empty() {
            return Err(ToolError::InvalidArgs(
                "`plan` is empty; write the plan the user should review".into(),
            ));
        }
        let planning = ctx
            .workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .planning;
        if !planning {
            return Err(ToolError::Failed(
                "not in plan mode: there is no plan to hand in; carry on with the task \
                 (plan mode is entered by the user, not by this tool)"
                    .into(),
            ));
        }
        let Some(interact) = &ctx.interact else {
            record(ctx, plan, PlanOutcome::Proposed, |w| {
                w.proposed = Some(plan.to_string())
            });
            return Ok(
                "Plan recorded. No one can review it in this run, so the run ends \
                       here with the plan as its result; do not continue with the task."
                    .into(),
            );
        };
        // The review blocks until the person answers; the workflow is not locked meanwhile.
        match interact.review_plan(plan, &ctx.cancel) {
            Some(PlanReview::Approve) => {
                record(ctx, plan, PlanOutcome::Approved, open_window);
                Ok(approved_message(""))
            }
            Some(PlanReview::ApproveAcceptEdits) => {
                record(ctx, plan, PlanOutcome::ApprovedAcceptEdits, open_window);
                Ok(approved_message(
                    " The user also switched tool approvals to auto for the rest of the session.",
                ))
            }
            Some(PlanReview::KeepPlanning(feedback)) => {
                let reply = keep_planning_message(&feedback);
                record(ctx, plan, PlanOutcome::KeepPlanning(feedback), |_| {});
                Ok(reply)
            }
            None => {
                record(ctx, plan, PlanOutcome::Cancelled, |_| {});
                Err(ToolError::Cancelled)
            }
        }
    }
}

/// Applies `change` to the workflow and leaves the decision for the agent to report.
fn record(
    ctx: &ToolContext,
    plan: &str,
    outcome: PlanOutcome,
    change: impl FnOnce(&mut crate::tool::collab::Workflow),
) {
    let mut workflow = ctx.workflow.lock().unwrap_or_else(PoisonError::into_inner);
    change(&mut workflow);
    workflow.decisions.push(PlanDecision {
        plan: plan.to_string(),
        outcome,
    });
}

fn open_window(workflow: &mut crate::tool::collab::Workflow) {
    workflow.planning = false;
    workflow.plan_window = true;
}

fn approved_message(extra: &str) -> String {
    format!(
        "The user approved the plan. Plan mode is off: carry the plan out now, step by step, \
         without asking again. Track its steps with todo_write (marking each done as you go, \
         with complete_step where it is available). File edits the plan needs are allowed \
         without a prompt until the task list is complete or this turn ends; the user's \
         explicit permission rules still apply.{extra}"
    )
}

fn keep_planning_message(feedback: &str) -> String {
    let feedback = feedback.trim();
    let said = if feedback.is_empty() {
        "The user gave no details.".to_string()
    } else {
        format!("The user's feedback:\n{feedback}")
    };
    format!(
        "The user did not approve the plan yet and wants more planning. {said}\n\
         You are still in plan mode: make no changes; research what the feedback asks, revise \
         the plan and call exit_plan_mode again with the whole revised plan."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;
    use crate::tool::collab::{Answer, Interact, Question};
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    struct Reviewer(Mutex<Option<PlanReview>>);

    impl Interact for Reviewer {
        fn ask(&self, _: &Question, _: &CancelToken) -> Option<Answer> {
            None
        }
        fn review_plan(&self, _: &str, _: &CancelToken) -> Option<PlanReview> {
            self.0.lock().unwrap().take()
        }
    }

    fn ctx(planning: bool, review: Option<Option<PlanReview>>) -> ToolContext {
        let mut ctx = ToolContext::new(PathBuf::from("/"));
        ctx.workflow.lock().unwrap().planning = planning;
        ctx.interact = review.map(|r| Arc::new(Reviewer(Mutex::new(r))) as Arc<dyn Interact>);
        ctx
    }

    fn call(ctx: &ToolContext) -> Result<String, ToolError> {
        ExitPlanMode.execute(&json!({"plan": " 1. do it "}), ctx)
    }

    #[test]
    fn outside_plan_mode_it_is_an_error() {
        let ctx = ctx(false, None);
        let err = call(&ctx).unwrap_err().to_string();
        assert!(err.contains("not in plan mode"), "{err}");
        assert!(ctx.workflow.lock().unwrap().decisions.is_empty());
    }

    #[test]
    fn each_review_sets_the_workflow_and_is_recorded() {
        let ctx1 = ctx(true, None);
        assert!(call(&ctx1).unwrap().contains("run ends here"));
        let w = ctx1.workflow.lock().unwrap().clone();
        assert_eq!(w.proposed.as_deref(), Some("1. do it"));
        assert!(w.planning && !w.plan_window);
        assert_eq!(w.decisions[0].outcome, PlanOutcome::Proposed);

        for (review, outcome) in [
            (PlanReview::Approve, PlanOutcome::Approved),
            (
                PlanReview::ApproveAcceptEdits,
                PlanOutcome::ApprovedAcceptEdits,
            ),
        ] {
            let c = ctx(true, Some(Some(review)));
            assert!(call(&c).unwrap().contains("carry the plan out now"));
            let w = c.workflow.lock().unwrap().clone();
            assert!(!w.planning && w.plan_window && w.proposed.is_none());
            assert_eq!(w.decisions[0].outcome, outcome);
        }

        let c = ctx(
            true,
            Some(Some(PlanReview::KeepPlanning("check the docs".into()))),
        );
        let reply = call(&c).unwrap();
        assert!(reply.contains("check the docs") && reply.contains("still in plan mode"));
        let w = c.workflow.lock().unwrap().clone();
        assert!(w.planning && !w.plan_window);

        let c = ctx(true, Some(None));
        assert_eq!(call(&c), Err(ToolError::Cancelled));
        let w = c.workflow.lock().unwrap().clone();
        assert!(w.planning);
        assert_eq!(w.decisions[0].outcome, PlanOutcome::Cancelled);
    }
}
