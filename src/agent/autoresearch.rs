//! AutoResearch, a goal strategy (SPEC §3.7): which objectives get it, the protocol text the
//! goal block carries for them, and the project-local directory their state lives in,
//! `.reasonix/autoresearch/YYYYMMDD-HHMMSS-slug/`. The model writes its hypotheses,
//! experiments, results and next steps there with the ordinary file tools, so the state
//! survives compaction and a resumed session, and nothing of it reaches REASONIX.md, AGENTS.md,
//! memory, tool schemas or the system prompt (the protocol rides in the transient goal block
//! of `goal`, in user turns).
//!
//! Two classifiers, both deterministic keyword tests (a table test pins each):
//! - [`for_goal`], lenient, decides inside `/goal`: any sign of research, debugging,
//!   optimisation or implementation work;
//! - [`upgrades_prompt`], strict, decides whether an ordinary prompt becomes a research goal:
//!   the word "autoresearch", or a long horizon AND an experimental method AND a
//!   research/debug/optimise aim together. One weak word ("long term", "optimize",
//!   "research", "verify") never creates durable task state on its own.

use std::io;
use std::path::Path;
use std::time::SystemTime;

/// Where the runs live, relative to the workspace root.
pub const ROOT: &str = ".reasonix/autoresearch";

/// The user's choice for a goal: `--research`, `--simple`, or neither (the classifier decides).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Choice {
    #[default]
    Classify,
    Research,
    Simple,
}

/// Naming the strategy outright.
const EXPLICIT: &[&str] = &["autoresearch", "auto research", "自动研究"];

/// A long horizon: work that goes on for a while without the user.
const HORIZON: &[&str] = &[
    "long term",
    "long horizon",
    "overnight",
    "for hours",
    "for days",
    "keep going",
    "keep iterating",
    "keep trying",
    "iterate*",
    "until",
    "as long as it takes",
    "don t stop",
    "do not stop",
    "without stopping",
    "autonomously",
    "many iterations",
    "长期",
    "持续",
    "直到",
];

/// An experimental method.
const METHOD: &[&str] = &[
    "experiment*",
    "hypothes*",
    "benchmark*",
    "ablation*",
    "profil*",
    "bisect*",
    "reproduc*",
    "measure*",
    "try different",
    "compare approaches",
    "实验",
    "假设",
    "基准",
];

/// A research, debugging or optimisation aim.
const AIM: &[&str] = &[
    "research*",
    "investigat*",
    "debug*",
    "root cause",
    "diagnos*",
    "optimi*",
    "speed up",
    "faster",
    "slow*",
    "performance",
    "latency",
    "throughput",
    "memory usage",
    "flaky",
    "intermittent*",
    "find out why",
    "figure out why",
    "regression*",
    "调研",
    "研究",
    "调试",
    "优化",
    "性能",
];

/// Implementation work of some size (the lenient classifier only).
const BUILD: &[&str] = &[
    "implement*",
    "port",
    "porting",
    "migrat*",
    "refactor*",
    "rewrit*",
    "re architect*",
    "add support for",
    "实现",
    "重构",
    "迁移",
];

/// `/goal`'s classifier: whether a goal gets the AutoResearch protocol.
pub fn for_goal(objective: &str, choice: Choice) -> bool {
    match choice {
        Choice::Research => true,
        Choice::Simple => false,
        Choice::Classify => {
            let text = normalise(objective);
            [EXPLICIT, METHOD, AIM, BUILD]
                .iter()
                .any(|words| mentions(&text, words))
        }
    }
}

/// The host's classifier for an ordinary prompt (outside goal mode): whether to run it as
/// `/goal --research PROMPT`. Stricter than [`for_goal`] on purpose.
pub fn upgrades_prompt(prompt: &str) -> bool {
    let text = normalise(prompt);
    mentions(&text, EXPLICIT)
        || (mentions(&text, HORIZON) && mentions(&text, METHOD) && mentions(&text, AIM))
}

/// Lowercase words separated by single spaces, padded with a space at each end, so a keyword
/// is matched at word boundaries by a substring search.
fn normalise(text: &str) -> String {
    let mut out = String::from(" ");
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

/// Whether `text` (normalised) contains one of `words`: a word or phrase whole, a `stem*` at
/// the start of a word, and CJK anywhere (it has no spaces between words).
fn mentions(text: &str, words: &[&str]) -> bool {
    words.iter().any(|word| {
        if !word.is_ascii() {
            text.contains(word)
        } else if let Some(stem) = word.strip_suffix('*') {
            text.contains(&format!(" {stem}"))
        } else {
            text.contains(&format!(" {word} "))
        }
    })
}

/// A short file-name-safe summary of the objective: up to six ASCII words, at most 40 bytes.
pub fn slug(objective: &str) -> String {
    let mut slug = String::new();
    for word in objective
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
    {
        let word = word.to_ascii_lowercase();
        if !slug.is_empty() && slug.len() + 1 + word.len() > 40 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word[..word.len().min(40)]);
    }
    if slug.is_empty() {
        slug.push_str("goal");
    }
    slug
}

/// `20261203-172200-fix-the-flaky-test`.
pub fn dir_name(now: SystemTime, objective: &str) -> String {
    let stamp = crate::clock::compact_stamp(now).replace('T', "-");
    format!("{stamp}-{}", slug(objective))
}

/// Creates the run's directory under `workspace` and returns its path relative to it (with
/// `/`, as the model names it). A name already taken (two goals in one second) gets `-2`, `-3`.
pub fn create_dir(workspace: &Path, objective: &str, now: SystemTime) -> io::Result<String> {
    let root = workspace.join(ROOT);
    std::fs::create_dir_all(&root)?;
    let name = dir_name(now, objective);
    for n in 1..=100 {
        let candidate = if n == 1 {
            name.clone()
        } else {
            format!("{name}-{n}")
        };
        match std::fs::create_dir(root.join(&candidate)) {
            Ok(()) => return Ok(format!("{ROOT}/{candidate}")),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{ROOT}/{name}: a hundred runs of that name already exist"),
    ))
}

/// The protocol added to the goal block of a research goal whose state lives in `dir`.
pub fn protocol(dir: &str) -> String {
    format!(
        "<autoresearch dir=\"{dir}/\">\n\
         This goal is long-horizon work: use the AutoResearch protocol. Keep the run's state in \
         files in {dir}/, written with your normal file tools:\n\
         - hypotheses.md: what you believe about the problem and why, each with a status \
         (open, confirmed, refuted);\n\
         - experiments.md: each experiment before you run it: the hypothesis it tests, the \
         exact command or change, the result you expect;\n\
         - results.md: what each experiment showed, with figures and the command that \
         produced them;\n\
         - next-steps.md: what to try next, in order.\n\
         Read these files before each step (they outlast the conversation's context), change \
         one thing per experiment, and record the result before you move on. Keep this state \
         in {dir}/ only: not in REASONIX.md, AGENTS.md or memory.\n\
         </autoresearch>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn the_goal_classifier_table() {
        let table: &[(&str, bool)] = &[
            ("fix the typo in README", false),
            ("add a --verbose flag and test it", false),
            ("verify the tests pass", false),
            ("update the changelog for 1.2", false),
            ("rename foo to bar everywhere", false),
            ("research which TOML crate fits best", true),
            ("make the parser faster", true),
            ("optimize the hot loop in grep", true),
            ("debug the flaky socket test", true),
            ("find the root cause of the crash on resume", true),
            ("implement the planner/executor coordinator", true),
            ("migrate the config to the new schema", true),
            ("benchmark the three allocators", true),
            ("investigate why startup takes 2s", true),
            ("autoresearch: the best chunk size", true),
            ("优化启动速度", true),
            ("修正 README 的错别字", false),
            // A stem matches at a word's start only.
            ("report the results", false),
            ("support the new flag", false),
        ];
        for (objective, research) in table {
            assert_eq!(
                for_goal(objective, Choice::Classify),
                *research,
                "for_goal({objective:?})"
            );
        }
        assert!(for_goal("fix the typo", Choice::Research));
        assert!(!for_goal("optimize everything", Choice::Simple));
    }

    #[test]
    fn the_prompt_classifier_table_is_stricter() {
        let table: &[(&str, bool)] = &[
            // Weak words alone never upgrade.
            ("long term", false),
            ("optimize", false),
            ("research", false),
            ("verify", false),
            ("optimize this function", false),
            ("research the long term roadmap", false),
            ("verify the build and optimize the long term plan", false),
            ("make the parser faster", false),
            ("debug the flaky socket test", false),
            ("benchmark the allocators", false),
            ("implement the coordinator", false),
            // All three together, or the strategy by name.
            (
                "run benchmark experiments overnight to optimize the JSON parser; keep \
                 iterating until it is twice as fast",
                true,
            ),
            (
                "investigate the flaky test: form hypotheses and run experiments until you \
                 find the root cause",
                true,
            ),
            ("autoresearch why startup is slow", true),
            ("Auto-research the cache hit ratio", true),
            ("长期实验优化启动性能", true),
        ];
        for (prompt, upgrade) in table {
            assert_eq!(
                upgrades_prompt(prompt),
                *upgrade,
                "upgrades_prompt({prompt:?})"
            );
        }
        // Whatever upgrades a prompt also makes a research goal.
        for (prompt, upgrade) in table {
            if *upgrade {
                assert!(for_goal(prompt, Choice::Classify), "{prompt:?}");
            }
        }
    }

    #[test]
    fn slugs_and_names() {
        assert_eq!(slug("Fix the flaky test!"), "fix-the-flaky-test");
        assert_eq!(slug("优化"), "goal");
        assert_eq!(
            slug("one two three four five six seven eight"),
            "one-two-three-four-five-six"
        );
        let long = "a".repeat(80);
        assert_eq!(slug(&long).len(), 40);
        assert!(slug("supercalifragilistic expialidocious-and-more words").len() <= 40);
        let t = UNIX_EPOCH + Duration::from_millis(1_796_224_837_123);
        assert_eq!(
            dir_name(t, "Speed up grep"),
            "20261202-152037-speed-up-grep"
        );
    }

    #[test]
    fn the_directory_is_created_under_the_workspace_and_never_reused() {
        let dir = TempDir::new("autoresearch");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_224_837);
        let first = create_dir(dir.path(), "speed up grep", t).unwrap();
        assert_eq!(
            first,
            ".reasonix/autoresearch/20261202-152037-speed-up-grep"
        );
        assert!(dir.path().join(&first).is_dir());
        let second = create_dir(dir.path(), "speed up grep", t).unwrap();
        assert_eq!(second, format!("{first}-2"));
        assert!(protocol(&first).contains(&format!("{first}/")));
    }
}
