//! Executes one round of tool calls: consecutive read-only calls run in parallel on a bounded
//! set of scoped threads, writers run one at a time in order, and results come back in the
//! order the model asked for them. Right before a call that changes things runs, the round's
//! snapshot [`Recorder`] (if any) keeps what it is about to change, for `/rewind`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use super::snapshots::Recorder;
use crate::tool::{Tool, ToolContext, ToolError};

/// A call whose tool was found and whose arguments parsed.
pub struct Prepared {
    /// The model's id for the call, which a tool reporting live progress tags it with.
    pub id: String,
    pub tool: Arc<dyn Tool>,
    pub args: Value,
}

/// What one call produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: Result<String, ToolError>,
    pub duration_ms: u64,
}

fn execute_one(call: &Prepared, ctx: &ToolContext) -> Outcome {
    let started = Instant::now();
    let result = if ctx.cancel.is_cancelled() {
        Err(ToolError::Cancelled)
    } else if call.tool.reports_live() {
        // Only these calls need to know their id (to tag what they report); cloning the
        // context for every call would cost each round for nothing.
        let mut own = ctx.clone();
        own.call_id = Some(call.id.clone());
        call.tool.execute(&call.args, &own)
    } else {
        call.tool.execute(&call.args, ctx)
    };
    Outcome {
        result,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// Runs `calls` and returns one outcome per call, in order. `max_parallel` bounds how many
/// read-only calls run at once (at least 1).
pub fn run_round(
    calls: &[Prepared],
    ctx: &ToolContext,
    max_parallel: usize,
    snapshots: Option<&Recorder>,
) -> Vec<Outcome> {
    if let Some(delegate) = &ctx.delegate {
        delegate.begin_round();
    }
    let mut outcomes: Vec<Option<Outcome>> = (0..calls.len()).map(|_| None).collect();
    let mut start = 0;
    while start < calls.len() {
        if !calls[start].tool.read_only() {
            if let Some(recorder) = snapshots.filter(|_| !ctx.cancel.is_cancelled()) {
                recorder.before(start, &calls[start], ctx);
            }
            outcomes[start] = Some(execute_one(&calls[start], ctx));
            start += 1;
            continue;
        }
        let end = calls[start..]
            .iter()
            .position(|c| !c.tool.read_only())
            .map_or(calls.len(), |offset| start + offset);
        let batch = run_parallel(&calls[start..end], ctx, max_parallel.max(1));
        for (slot, outcome) in outcomes[start..end].iter_mut().zip(batch) {
            *slot = Some(outcome);
        }
        start = end;
    }
    outcomes
        .into_iter()
        .map(|o| {
            o.unwrap_or(Outcome {
                result: Err(ToolError::Failed(
                    "internal error: call was not executed".into(),
                )),
                duration_ms: 0,
            })
        })
        .collect()
}

fn run_parallel(batch: &[Prepared], ctx: &ToolContext, max_parallel: usize) -> Vec<Outcome> {
    if batch.len() == 1 {
        return vec![execute_one(&batch[0], ctx)];
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..batch.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for n in 0..max_parallel.min(batch.len()) {
            let (next, results) = (&next, &results);
            let spawned = std::thread::Builder::new()
                .name(format!("tool-{n}"))
                .spawn_scoped(scope, move || loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(call) = batch.get(index) else { break };
                    let outcome = execute_one(call, ctx);
                    if let Ok(mut slots) = results.lock() {
                        slots[index] = Some(outcome);
                    }
                });
            // Without a thread the remaining calls still run: the loop below picks them up.
            if spawned.is_err() {
                break;
            }
        }
    });
    let mut slots = results.into_inner().unwrap_or_else(|p| p.into_inner());
    for (index, slot) in slots.iter_mut().enumerate() {
        if slot.is_none() {
            *slot = Some(execute_one(&batch[index], ctx));
        }
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Family;
    use std::path::PathBuf;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Read-only tool that announces it started, then waits for its partner to start. Run
    /// sequentially, the first one would time out: the only way both succeed is overlap.
    struct Rendezvous {
        name: &'static str,
        announce: Mutex<mpsc::Sender<&'static str>>,
        partner_started: Mutex<mpsc::Receiver<&'static str>>,
    }

    impl Tool for Rendezvous {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "test"
        }
        fn schema(&self) -> Value {
            Value::Null
        }
        fn read_only(&self) -> bool {
            true
        }
        fn family(&self) -> Family {
            Family::Other
        }
        fn execute(&self, _: &Value, _: &ToolContext) -> Result<String, ToolError> {
            self.announce.lock().unwrap().send(self.name).unwrap();
            match self
                .partner_started
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(20))
            {
                Ok(partner) => Ok(format!("{} saw {partner}", self.name)),
                Err(_) => Err(ToolError::Failed("partner never started".into())),
            }
        }
    }

    struct Recorder {
        name: &'static str,
        read_only: bool,
        log: Arc<Mutex<Vec<String>>>,
    }

    impl Tool for Recorder {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "test"
        }
        fn schema(&self) -> Value {
            Value::Null
        }
        fn read_only(&self) -> bool {
            self.read_only
        }
        fn family(&self) -> Family {
            Family::Other
        }
        fn execute(&self, args: &Value, _: &ToolContext) -> Result<String, ToolError> {
            self.log
                .lock()
                .unwrap()
                .push(format!("{}:{args}", self.name));
            Ok(args.to_string())
        }
    }

    fn ctx() -> ToolContext {
        ToolContext::new(PathBuf::from("/"))
    }

    #[test]
    fn consecutive_read_only_calls_overlap() {
        let (a_tx, a_rx) = mpsc::channel();
        let (b_tx, b_rx) = mpsc::channel();
        let a: Arc<dyn Tool> = Arc::new(Rendezvous {
            name: "a",
            announce: Mutex::new(a_tx),
            partner_started: Mutex::new(b_rx),
        });
        let b: Arc<dyn Tool> = Arc::new(Rendezvous {
            name: "b",
            announce: Mutex::new(b_tx),
            partner_started: Mutex::new(a_rx),
        });
        let calls = vec![
            Prepared {
                id: String::new(),
                tool: a,
                args: Value::Null,
            },
            Prepared {
                id: String::new(),
                tool: b,
                args: Value::Null,
            },
        ];
        let out = run_round(&calls, &ctx(), 4, None);
        assert_eq!(out[0].result, Ok("a saw b".to_string()));
        assert_eq!(out[1].result, Ok("b saw a".to_string()));
    }

    #[test]
    fn writers_run_in_order_and_results_keep_call_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let tool = |name, read_only| -> Arc<dyn Tool> {
            Arc::new(Recorder {
                name,
                read_only,
                log: log.clone(),
            })
        };
        let calls: Vec<Prepared> = [
            ("w", false),
            ("w", false),
            ("r", true),
            ("r", true),
            ("w", false),
        ]
        .iter()
        .enumerate()
        .map(|(i, (name, ro))| Prepared {
            id: String::new(),
            tool: tool(name, *ro),
            args: Value::from(i),
        })
        .collect();
        let out = run_round(&calls, &ctx(), 2, None);
        let results: Vec<String> = out.into_iter().map(|o| o.result.unwrap()).collect();
        assert_eq!(results, ["0", "1", "2", "3", "4"]);
        let log = log.lock().unwrap().clone();
        let writers: Vec<&String> = log.iter().filter(|l| l.starts_with('w')).collect();
        assert_eq!(writers, ["w:0", "w:1", "w:4"]);
        // The writer after the read-only batch ran after both readers finished.
        assert_eq!(log.last().map(String::as_str), Some("w:4"));
    }

    #[test]
    fn a_cancelled_context_executes_nothing() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let ctx = ctx();
        ctx.cancel.cancel();
        let calls = vec![Prepared {
            id: String::new(),
            tool: Arc::new(Recorder {
                name: "w",
                read_only: false,
                log: log.clone(),
            }),
            args: Value::Null,
        }];
        let out = run_round(&calls, &ctx, 1, None);
        assert_eq!(out[0].result, Err(ToolError::Cancelled));
        assert!(log.lock().unwrap().is_empty());
    }
}
