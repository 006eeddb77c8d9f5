//! `ask`: the model puts a structured question to the user. In the chat the person answers
//! on a choice card (`ToolContext::interact`); headless there is no one to ask, so the tool
//! tells the model to go on with its best assumption and to state it. No approval posture
//! answers a question.
//!
//! The result text is the record: it is stored in the session like any tool result and
//! starts with `user answered:`, `user dismissed` or `no user: assumption`, so a later
//! reader (and [`asked`], which builds the front ends' `ask` event from it) can tell a
//! person's decision from the model's assumption.

use serde_json::{json, Value};

use crate::tool::collab::{Answer, Question};
use crate::tool::{args, Family, Profile, Subjects, Tool, ToolContext, ToolError};

pub const NAME: &str = "ask";

const ANSWERED: &str = "user answered: ";
const DISMISSED: &str = "user dismissed the question without answering";
const ASSUMPTION: &str = "no user: assumption";

pub struct Ask;

const DESCRIPTION: &str = "\
Asks the user a question and waits for the answer. Use it when a decision is the user's to \
make (a choice between approaches, a missing requirement) and guessing would waste work; do \
not use it for things you can find out yourself. Give 2-4 short `options`; set \
`allow_free_text` when the user may want to answer in their own words. When no user is \
available the result says so: proceed on your best assumption and state it in your answer.";

impl Tool for Ask {
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
                "question": {
                    "type": "string",
                    "description": "The question, in one or two sentences"
                },
                "options": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The answers the user can choose from"
                },
                "allow_free_text": {
                    "type": "boolean",
                    "description": "Whether the user may type an answer instead (default false)"
                }
            },
            "required": ["question", "options"]
        })
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    /// One question on screen at a time (see [`Profile::decision`]).
    fn profile(&self) -> Profile {
        Profile::decision()
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let question = parse(args)?;
        let Some(interact) = &ctx.interact else {
            return Ok(format!(
                "{ASSUMPTION}. No user is available to answer \"{}\". Proceed on your best \
                 assumption, and state that assumption explicitly in your answer.",
                question.question
            ));
        };
        match interact.ask(&question, &ctx.cancel) {
            Some(Answer::Option(index)) => match question.options.get(index) {
                Some(option) => Ok(format!("{ANSWERED}{option}")),
                None => Err(ToolError::Failed(format!(
                    "internal error: the answer names option {index} of {}",
                    question.options.len()
                ))),
            },
            Some(Answer::Text(text)) => Ok(format!("{ANSWERED}{}", text.trim())),
            Some(Answer::Dismissed) => Ok(format!(
                "{DISMISSED}. Do not ask it again; go on without it or ask the user in plain \
                 text what they want."
            )),
            None => Err(ToolError::Cancelled),
        }
    }
}

fn parse(args: &Value) -> Result<Question, ToolError> {
    let question = args::required_str(args, "question")?.trim();
    if question.is_empty() {
        return Err(ToolError::InvalidArgs("`question` is empty".into()));
    }
    let options = args::required_array(args, "options")?
        .iter()
        .enumerate()
        .map(|(i, value)| match value {
            Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            other => Err(ToolError::InvalidArgs(format!(
                "options[{i}] must be a non-empty string, got {other}"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let allow_free_text = args::optional_bool(args, "allow_free_text")?.unwrap_or(false);
    if options.is_empty() && !allow_free_text {
        return Err(ToolError::InvalidArgs(
            "give at least one option, or set allow_free_text so the user can type an answer"
                .into(),
        ));
    }
    Ok(Question {
        question: question.to_string(),
        options,
        allow_free_text,
    })
}

/// What an `ask` call came to, for the front ends' `ask` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub question: String,
    pub options: Vec<String>,
    /// The person's answer (an option's text or typed text); `None` when dismissed or when
    /// no one could answer.
    pub answer: Option<String>,
    /// No one could answer: the model goes on on an assumption, not on a decision.
    pub assumption: bool,
}

/// The outcome of a finished `ask` call, from its arguments (raw JSON) and its successful
/// result; `None` for any other tool or a call that did not parse.
pub fn asked(tool: &str, arguments: &str, output: &str) -> Option<Asked> {
    if tool != NAME {
        return None;
    }
    let question = parse(&serde_json::from_str(arguments).ok()?).ok()?;
    let (answer, assumption) = if let Some(answer) = output.strip_prefix(ANSWERED) {
        (Some(answer.to_string()), false)
    } else if output.starts_with(DISMISSED) {
        (None, false)
    } else if output.starts_with(ASSUMPTION) {
        (None, true)
    } else {
        return None;
    };
    Some(Asked {
        question: question.question,
        options: question.options,
        answer,
        assumption,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::cancel::CancelToken;
    use crate::tool::collab::{Interact, PlanReview};

    struct Fixed(Option<Answer>);

    impl Interact for Fixed {
        fn ask(&self, _: &Question, _: &CancelToken) -> Option<Answer> {
            self.0.clone()
        }
        fn review_plan(&self, _: &str, _: &CancelToken) -> Option<PlanReview> {
            None
        }
    }

    fn run(answer: Option<Option<Answer>>) -> Result<String, ToolError> {
        let mut ctx = ToolContext::new(PathBuf::from("/"));
        ctx.interact = answer.map(|a| Arc::new(Fixed(a)) as Arc<dyn Interact>);
        let args = json!({"question": "Which?", "options": ["a", "b"], "allow_free_text": true});
        Ask.execute(&args, &ctx)
    }

    #[test]
    fn results_record_who_decided() {
        assert_eq!(
            run(Some(Some(Answer::Option(1)))).unwrap(),
            "user answered: b"
        );
        assert_eq!(
            run(Some(Some(Answer::Text(" typed ".into())))).unwrap(),
            "user answered: typed"
        );
        assert!(run(Some(Some(Answer::Dismissed)))
            .unwrap()
            .starts_with("user dismissed"));
        assert_eq!(run(Some(None)), Err(ToolError::Cancelled));
        let headless = run(None).unwrap();
        assert!(headless.starts_with("no user: assumption"), "{headless}");
        let args = r#"{"question":"Which?","options":["a","b"]}"#;
        let event = asked(NAME, args, &headless).unwrap();
        assert!(event.assumption && event.answer.is_none());
        let event = asked(NAME, args, "user answered: b").unwrap();
        assert_eq!(event.answer.as_deref(), Some("b"));
        assert!(!event.assumption);
        assert_eq!(asked("read_file", args, "user answered: b"), None);
    }

    #[test]
    fn arguments_are_checked() {
        let ctx = ToolContext::new(PathBuf::from("/"));
        for (args, wanted) in [
            (json!({"question": " ", "options": ["a"]}), "empty"),
            (json!({"question": "Q", "options": [1]}), "options[0]"),
            (
                json!({"question": "Q", "options": []}),
                "at least one option",
            ),
        ] {
            let err = Ask.execute(&args, &ctx).unwrap_err().to_string();
            assert!(err.contains(wanted), "{args}: {err}");
        }
        let free = json!({"question": "Q", "options": [], "allow_free_text": true});
        assert!(Ask.execute(&free, &ctx).is_ok());
        // No approval prompt before the card, and never in a parallel batch.
        assert!(Ask.profile().read_only);
        assert!(!Ask.read_only());
    }
}
