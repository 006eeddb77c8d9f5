//! The parallel search of a directory: one thread walks the tree (the shared walker, with its
//! `.gitignore`, deny-rule and hidden-inode vetoes) and numbers the files it yields, worker
//! threads (one per core, at most [`MAX_WORKERS`]) each open and search one file at a time,
//! and this thread adds the outcomes to the report strictly in walk order, holding back those
//! that arrive early. The output is therefore byte-for-byte the sequential one, whatever the
//! scheduling. Files travel in batches of [`BATCH`], so a tree of small files costs a channel
//! message and a wake-up per batch rather than per file.
//!
//! Memory stays bounded: the walker may run at most [`REORDER_WINDOW`] batches ahead of the
//! oldest outcome not yet added (one huge file at the head cannot make the others pile up
//! outcomes without limit), and in content mode a worker renders only as many matches of a
//! file as the output can still show.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Mutex;
use std::thread;

use super::report::Report;
use super::scan::{Cancelled, Outcome, Searcher};
use super::Request;
use crate::tool::read_limit::Opener;
use crate::tool::walk::{display_path, EntryKind, Options, Walk};
use crate::tool::{ToolContext, ToolError};

/// Worker threads at most, whatever the core count: each holds a buffer.
const MAX_WORKERS: usize = 8;
/// A multiline search holds a larger window per worker.
const MAX_MULTILINE_WORKERS: usize = 4;
/// Files per batch.
const BATCH: usize = 32;
/// Batches the walk may be ahead of the report.
const REORDER_WINDOW: usize = 128;
/// Batches queued for the workers.
const JOB_QUEUE: usize = 16;

/// Files to search: the batch's place in the walk and their paths.
struct Job {
    seq: usize,
    paths: Vec<PathBuf>,
}

/// A searched batch: each file's outcome, or the word that the search was cancelled.
struct Done {
    seq: usize,
    files: Vec<(PathBuf, Result<Outcome, Cancelled>)>,
}

/// Searches every file below `root` the walk yields (and `glob` admits) into `report`.
pub fn search_tree(
    root: &Path,
    request: &Request,
    report: &mut Report,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    let options = Options {
        exclude: ctx.sandbox.forbid_read.clone(),
        veto: Some(ctx.walk_veto("grep")),
        ..Options::with_user_excludes()
    };
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let workers = match request.matcher.is_multiline() {
        true => cores.min(MAX_MULTILINE_WORKERS),
        false => cores.min(MAX_WORKERS),
    };
    // Matching lines the report has shown, for content mode's render budgets.
    let shown = AtomicUsize::new(0);
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(JOB_QUEUE);
    let job_rx = Mutex::new(job_rx);
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let (credit_tx, credit_rx) = mpsc::sync_channel::<()>(REORDER_WINDOW);
    for _ in 0..REORDER_WINDOW {
        let _ = credit_tx.try_send(());
    }
    let cancelled = thread::scope(|scope| -> Result<bool, ToolError> {
        // Workers first: should the walker fail to start, dropping its job sender ends them.
        for i in 0..workers {
            let (job_rx, done_tx, shown) = (&job_rx, done_tx.clone(), &shown);
            thread::Builder::new()
                .name(format!("grep-search-{i}"))
                .spawn_scoped(scope, move || {
                    search_jobs(job_rx, done_tx, request, shown, ctx)
                })
                .map_err(spawn_failed)?;
        }
        drop(done_tx);
        thread::Builder::new()
            .name("grep-walk".into())
            .spawn_scoped(scope, move || {
                walk(root, options, request, job_tx, credit_rx, ctx);
            })
            .map_err(spawn_failed)?;
        Ok(merge(done_rx, &credit_tx, report, &shown, ctx))
    })?;
    if cancelled || ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(())
}

fn spawn_failed(e: std::io::Error) -> ToolError {
    ToolError::Failed(format!("grep: cannot start a search thread: {e}"))
}

/// The walker thread: batches the files to search, numbers the batches and queues them, a
/// credit per batch.
fn walk(
    root: &Path,
    options: Options,
    request: &Request,
    jobs: SyncSender<Job>,
    credits: Receiver<()>,
    ctx: &ToolContext,
) {
    let mut seq = 0;
    let mut send = |paths: Vec<PathBuf>| {
        if credits.recv().is_err() || ctx.cancel.is_cancelled() {
            return false;
        }
        let sent = jobs.send(Job { seq, paths }).is_ok();
        seq += 1;
        sent
    };
    let mut paths = Vec::with_capacity(BATCH);
    for entry in Walk::new(root, options) {
        if ctx.cancel.is_cancelled() {
            return;
        }
        if entry.kind != EntryKind::File {
            continue;
        }
        if let Some(include) = &request.include {
            let rel = entry.path.strip_prefix(root).unwrap_or(&entry.path);
            if !include.admits(&rel.to_string_lossy()) {
                continue;
            }
        }
        paths.push(entry.path);
        if paths.len() == BATCH {
            let batch = std::mem::replace(&mut paths, Vec::with_capacity(BATCH));
            if !send(batch) {
                return;
            }
        }
    }
    if !paths.is_empty() {
        send(paths);
    }
}

/// A worker thread: searches queued files until the queue closes.
fn search_jobs(
    jobs: &Mutex<Receiver<Job>>,
    done: Sender<Done>,
    request: &Request,
    shown: &AtomicUsize,
    ctx: &ToolContext,
) {
    let mut searcher = Searcher::new(request);
    let mut opener = Opener::default();
    loop {
        let job = match jobs.lock() {
            Ok(jobs) => jobs.recv(),
            Err(_) => return,
        };
        let Ok(Job { seq, paths }) = job else { return };
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            // Files that cannot or must not be read (pseudo-files, a file swapped for a FIFO
            // since the listing) are skipped like binary ones.
            let outcome = match opener.open_listed(&path) {
                Ok(file) => {
                    let budget = request.limit.saturating_sub(shown.load(Ordering::Relaxed));
                    searcher.search(file, budget, &ctx.cancel)
                }
                Err(_) => Ok(Outcome::default()),
            };
            let stop = outcome.is_err();
            files.push((path, outcome));
            if stop {
                break;
            }
        }
        if done.send(Done { seq, files }).is_err() {
            return;
        }
    }
}

/// Adds outcomes to the report in walk order as they arrive, returning a credit to the walker
/// for each; says whether a search was cancelled.
fn merge(
    done: Receiver<Done>,
    credits: &SyncSender<()>,
    report: &mut Report,
    shown: &AtomicUsize,
    ctx: &ToolContext,
) -> bool {
    let mut pending: BTreeMap<usize, Done> = BTreeMap::new();
    let mut next = 0;
    let mut cancelled = false;
    // Every outcome is received, even after a cancellation, so no thread is left waiting.
    for finished in done {
        pending.insert(finished.seq, finished);
        while let Some(finished) = pending.remove(&next) {
            next += 1;
            let _ = credits.try_send(());
            for (path, outcome) in &finished.files {
                match outcome {
                    Ok(outcome) if !cancelled => {
                        // Most files match nothing: their path is never printed, so not made.
                        if outcome.matches > 0 || outcome.partial {
                            report.add(outcome, &display_path(path, &ctx.cwd));
                            shown.store(report.shown(), Ordering::Relaxed);
                        }
                    }
                    Ok(_) => {}
                    Err(Cancelled) => cancelled = true,
                }
            }
        }
    }
    cancelled
}
