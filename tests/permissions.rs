//! Permission rules, policy and gate through the public surface: a table of rule cases, the
//! approver protocol, and an agent run proving a blocked tool never executes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use reasonix::agent::events::Event;
use reasonix::agent::runner::{Agent, Options};
use reasonix::agent::session::{Header, Session};
use reasonix::app::stream_json::stream_json;
use reasonix::cancel::CancelToken;
use reasonix::permission::{
    parse_posture, split_rule_list, ApprovalAnswer, ApprovalRequest, Approver, Decision, Gate,
    Policy, PolicyGate, Posture, Resolution, Rule,
};
use reasonix::provider::{Chunk, ChunkStream, Provider, ProviderError, Request, Retry, ToolCall};
use reasonix::tool::{builtin, Family, Profile, Registry, Tool, ToolContext, ToolError};

use crate::util::Dir;

const WS: &str = "/ws";
const HOME: &str = "/home/u";

#[derive(Clone, Copy)]
struct Rules {
    allow: &'static [&'static str],
    ask: &'static [&'static str],
    deny: &'static [&'static str],
    mode: Decision,
}

const NONE: Rules = Rules {
    allow: &[],
    ask: &[],
    deny: &[],
    mode: Decision::Ask,
};

const fn allow(rules: &'static [&'static str]) -> Rules {
    Rules {
        allow: rules,
        ..NONE
    }
}

const fn ask(rules: &'static [&'static str]) -> Rules {
    Rules { ask: rules, ..NONE }
}

const fn deny(rules: &'static [&'static str]) -> Rules {
    Rules {
        deny: rules,
        ..NONE
    }
}

const fn mode(mode: Decision) -> Rules {
    Rules { mode, ..NONE }
}

fn policy(rules: Rules) -> Policy {
    let mut policy = Policy::new(rules.mode, WS.into(), Some(HOME.into()));
    policy.allow = Policy::parse_rules(rules.allow).unwrap();
    policy.ask = Policy::parse_rules(rules.ask).unwrap();
    policy.deny = Policy::parse_rules(rules.deny).unwrap();
    policy
}

/// What the gate knows of a tool: the built-in's own profile, or an undeclared tool's.
fn profile(tool: &str) -> Profile {
    builtin::profile(tool).unwrap_or(Profile::undeclared(false))
}

fn bash(command: &str) -> (&'static str, Value) {
    ("bash", json!({ "command": command }))
}

fn path(tool: &'static str, path: &str) -> (&'static str, Value) {
    (tool, json!({ "path": path }))
}

fn mv(from: &str, to: &str) -> (&'static str, Value) {
    (
        "move_file",
        json!({ "source_path": from, "destination_path": to }),
    )
}

fn tool(name: &'static str, args: Value) -> (&'static str, Value) {
    (name, args)
}

use Posture::{Ask, Auto, Strict, Yolo};

/// Expected outcomes: "allow:<resolution>" or "block:<resolution>". Strict is used where a
/// case must show that no allow rule covered the call: the Ask then becomes a visible block.
/// (source line, (tool, args), rules, posture, expected outcome)
type Case = (u32, (&'static str, Value), Rules, Posture, &'static str);

fn cases() -> Vec<Case> {
    const GO: Rules = allow(&["Bash(go test:*)"]);
    const RM: Rules = Rules {
        allow: &["Bash"],
        deny: &["Bash(rm -rf:*)"],
        ..NONE
    };
    const SRC: Rules = allow(&["Edit(src/**)"]);
    vec![
        // Prefix rules and operator injection.
        (line!(), bash("go test ./..."), GO, Strict, "allow:plain"),
        (line!(), bash("go test"), GO, Strict, "allow:plain"),
        (
            line!(),
            bash("go  test   -run 'X|Y' ./..."),
            GO,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test ./... && rm -rf tmp"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test; rm -rf tmp"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test || rm -rf tmp"),
            GO,
            Strict,
            "block:strict",
        ),
        (line!(), bash("go test | sh"), GO, Strict, "block:strict"),
        (
            line!(),
            bash("go test & rm -rf tmp"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test\nrm -rf tmp"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test `rm -rf tmp`"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test $(rm -rf tmp)"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test <(rm -rf tmp)"),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test > /etc/passwd"),
            GO,
            Strict,
            "block:strict",
        ),
        (line!(), bash("go test >> log"), GO, Strict, "block:strict"),
        (
            line!(),
            bash("go test 2> err.log"),
            GO,
            Strict,
            "block:strict",
        ),
        (line!(), bash("go test < input"), GO, Strict, "block:strict"),
        (
            line!(),
            bash("go test ./... 2>&1"),
            GO,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test ./... >/dev/null"),
            GO,
            Strict,
            "allow:plain",
        ),
        (line!(), bash("go testing"), GO, Strict, "block:strict"),
        (line!(), bash("go vet"), GO, Strict, "block:strict"),
        (
            line!(),
            bash("go test ./... # done"),
            GO,
            Strict,
            "block:strict",
        ),
        // Quoting: operators inside single quotes are literal, `$(` inside double quotes is not.
        (
            line!(),
            bash("go test -run 'A; rm -rf tmp'"),
            GO,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test -run \"a && b | c\""),
            GO,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test -run '$(rm -rf tmp)'"),
            GO,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test -run \"$(rm -rf tmp)\""),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test -run \"`rm -rf tmp`\""),
            GO,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("go test -run a\\;b"),
            GO,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test -run 'unterminated"),
            GO,
            Strict,
            "block:strict",
        ),
        // Dynamic commands are never covered by a prefix rule.
        (line!(), bash("FOO=1 go test"), GO, Strict, "block:strict"),
        (
            line!(),
            bash("eval go test"),
            allow(&["Bash(eval:*)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("sh -c 'go test'"),
            allow(&["Bash(sh:*)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("xargs rm < list"),
            allow(&["Bash(xargs:*)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("eval go test"),
            allow(&["Bash(eval go test)"]),
            Strict,
            "allow:plain",
        ),
        // Deny rules reach commands hidden behind operators, substitutions and wrappers.
        (line!(), bash("rm -rf tmp"), RM, Ask, "block:rule"),
        (line!(), bash("echo hi && rm -rf /"), RM, Ask, "block:rule"),
        (line!(), bash("echo $(rm -rf /)"), RM, Ask, "block:rule"),
        (line!(), bash("echo \"`rm -rf /`\""), RM, Ask, "block:rule"),
        (line!(), bash("sudo rm -rf /"), RM, Ask, "block:rule"),
        (line!(), bash("bash -c 'rm -rf /'"), RM, Ask, "block:rule"),
        (line!(), bash("/bin/rm -rf /"), RM, Ask, "block:rule"),
        (line!(), bash("'rm' \"-rf\" /"), RM, Ask, "block:rule"),
        (line!(), bash("ls | xargs rm -rf"), RM, Ask, "block:rule"),
        (
            line!(),
            bash("find . -exec rm -rf {} +"),
            RM,
            Ask,
            "block:rule",
        ),
        (line!(), bash("rm -rf 'unterminated"), RM, Ask, "block:rule"),
        (line!(), bash("echo 'rm -rf /'"), RM, Ask, "allow:plain"),
        (line!(), bash("rm -r tmp"), RM, Ask, "allow:plain"),
        // Legacy forms and lowercase ids.
        (
            line!(),
            bash("go test -v"),
            allow(&["Bash(go test *)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("go test && x"),
            allow(&["Bash(go test *)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("ls"),
            allow(&["bash=ls"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("ls -la"),
            allow(&["bash=ls"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("rm -rf /"),
            deny(&["Bash(rm -rf*)"]),
            Yolo,
            "block:rule",
        ),
        (
            line!(),
            bash("git push --force"),
            deny(&["Bash(git push*)"]),
            Yolo,
            "block:rule",
        ),
        (
            line!(),
            bash("npm run build"),
            allow(&["bash(npm run build)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("npm  run  build"),
            allow(&["Bash(npm run build)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("npm run build && curl x"),
            allow(&["Bash(npm run build)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            bash("npm run build:prod"),
            allow(&["Bash(npm run build)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("write_file", "a.txt"),
            allow(&["write_file"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("edit_file", "a.txt"),
            allow(&["write_file"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("read_file", "secret/k"),
            deny(&["read_file(secret/**)"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            path("write_file", "notes.md"),
            allow(&["write_file=notes.md"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("write_file", "sub/notes.md"),
            allow(&["write_file=notes.md"]),
            Strict,
            "block:strict",
        ),
        // Unicode commands and paths.
        (
            line!(),
            bash("echo 'héllo wörld' 日本語"),
            allow(&["Bash(echo:*)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            bash("echo ✓ && rm файл"),
            deny(&["Bash(rm:*)"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            bash("ls ./données"),
            allow(&["Bash(ls:*)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("write_file", "文档/说明.md"),
            allow(&["Edit(文档/**)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("write_file", "文档x/说明.md"),
            allow(&["Edit(文档/**)"]),
            Strict,
            "block:strict",
        ),
        // MCP names.
        (
            line!(),
            tool("mcp__github__create_issue", json!({})),
            allow(&["mcp__github__create_issue"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            tool("mcp__github__delete_repo", json!({})),
            allow(&["mcp__github__create_issue"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            tool("mcp__github__delete_repo", json!({})),
            allow(&["mcp__github"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            tool("mcp__githubx__list", json!({})),
            allow(&["mcp__github"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            tool("mcp__fs__write", json!({})),
            deny(&["mcp__fs__*"]),
            Yolo,
            "block:rule",
        ),
        (
            line!(),
            tool("mcp__fs__write", json!({"path": "docs/a.md"})),
            allow(&["mcp__fs__write(docs/**)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            tool("mcp__fs__write", json!({"path": "src/a.rs"})),
            allow(&["mcp__fs__write(docs/**)"]),
            Strict,
            "block:strict",
        ),
        // Edit and Read globs.
        (
            line!(),
            path("write_file", "src/a/b/c.rs"),
            SRC,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("write_file", "/ws/src/main.rs"),
            SRC,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("edit_file", "src/../secrets/x"),
            SRC,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("multi_edit", "src/x.rs"),
            SRC,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            mv("src/a.rs", "src/b/a.rs"),
            SRC,
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            mv("src/a.rs", "out/a.rs"),
            SRC,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            mv("out/a.rs", "src/a.rs"),
            SRC,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            mv("secrets/k", "public/k"),
            Rules {
                allow: &["Edit"],
                deny: &["Edit(secrets/**)"],
                ..NONE
            },
            Ask,
            "block:rule",
        ),
        (
            line!(),
            path("write_file", "/elsewhere/x.md"),
            allow(&["Edit(**/*.md)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("write_file", "a/b/x.md"),
            allow(&["Edit(*.md)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("read_file", "config/.env"),
            deny(&["Read(.env)"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            path("read_file", "/etc/passwd"),
            deny(&["Read(/etc/**)"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            path("read_file", "/home/u/.ssh/id_rsa"),
            deny(&["Read(~/.ssh/**)"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            tool("grep", json!({"pattern": "x", "path": "secrets"})),
            deny(&["Read(secrets/**)"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            tool("grep", json!({"pattern": "x"})),
            deny(&["Read(secrets/**)"]),
            Ask,
            "allow:plain",
        ),
        (
            line!(),
            tool("ls", json!({"path": "."})),
            deny(&["LS"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            tool("glob", json!({"pattern": "**/*.rs"})),
            deny(&["Glob"]),
            Ask,
            "block:rule",
        ),
        (
            line!(),
            path("write_file", "docs/a"),
            allow(&["Write(docs/**)"]),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("edit_file", "docs/a"),
            allow(&["Write(docs/**)"]),
            Strict,
            "block:strict",
        ),
        (
            line!(),
            mv("x", "/tmp/y"),
            allow(&["Edit"]),
            Strict,
            "allow:plain",
        ),
        // Precedence: deny > ask > allow > fallback.
        (
            line!(),
            bash("rm x"),
            Rules {
                allow: &["Bash(rm:*)"],
                deny: &["Bash(rm:*)"],
                ..NONE
            },
            Yolo,
            "block:rule",
        ),
        (
            line!(),
            bash("git push"),
            Rules {
                allow: &["Bash"],
                ask: &["Bash(git push:*)"],
                ..NONE
            },
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("write_file", "src/a"),
            Rules {
                allow: &["Edit(src/**)"],
                ask: &["Edit"],
                ..NONE
            },
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("write_file", "src/a"),
            Rules {
                allow: &["Edit(src/**)"],
                mode: Decision::Deny,
                ..NONE
            },
            Strict,
            "allow:plain",
        ),
        // Postures.
        (line!(), path("write_file", "a"), NONE, Auto, "allow:auto"),
        (
            line!(),
            path("write_file", "a"),
            ask(&["Edit"]),
            Auto,
            "allow:headless",
        ),
        (
            line!(),
            path("write_file", "a"),
            ask(&["Edit"]),
            Yolo,
            "allow:yolo",
        ),
        (
            line!(),
            path("write_file", "a"),
            deny(&["Edit"]),
            Yolo,
            "block:rule",
        ),
        (
            line!(),
            path("write_file", "a"),
            NONE,
            Strict,
            "block:strict",
        ),
        (
            line!(),
            path("write_file", "a"),
            NONE,
            Ask,
            "allow:headless",
        ),
        (line!(), path("read_file", "a"), NONE, Strict, "allow:plain"),
        (line!(), bash("ls"), NONE, Ask, "allow:headless"),
        (
            line!(),
            path("write_file", "a"),
            mode(Decision::Deny),
            Yolo,
            "block:mode",
        ),
        (
            line!(),
            path("write_file", "a"),
            mode(Decision::Deny),
            Auto,
            "block:mode",
        ),
        (
            line!(),
            path("write_file", "a"),
            mode(Decision::Allow),
            Strict,
            "allow:plain",
        ),
        (
            line!(),
            path("read_file", "a"),
            mode(Decision::Deny),
            Strict,
            "allow:plain",
        ),
    ]
}

#[test]
fn rules_table() {
    let cases = cases();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for (line, (tool, args), rules, posture, expected) in cases {
        let gate = PolicyGate::new(policy(rules), posture, None);
        let verdict = gate.check_declared(tool, profile(tool), &args);
        let outcome = if verdict.allowed { "allow" } else { "block" };
        let actual = format!("{outcome}:{}", verdict.resolution.as_str());
        if actual != expected {
            failures.push(format!(
                "line {line}: {tool} {args} under {:?}: expected {expected}, got {actual} ({:?})",
                posture, verdict.message
            ));
        }
        if verdict.allowed == verdict.message.is_some() {
            failures.push(format!(
                "line {line}: message {:?} with allowed={}",
                verdict.message, verdict.allowed
            ));
        }
        if actual == "block:rule" {
            let rule = verdict.rule.clone().unwrap_or_default();
            let message = verdict.message.clone().unwrap_or_default();
            if !message.starts_with(&format!("blocked by rule `{rule}`")) {
                failures.push(format!(
                    "line {line}: message {message:?} does not name {rule:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn strict_block_message_names_the_flag() {
    let gate = PolicyGate::new(policy(ask(&["Bash(git push:*)"])), Strict, None);
    let verdict = gate.check_declared("bash", profile("bash"), &json!({"command": "git push"}));
    assert_eq!(
        verdict.message.as_deref(),
        Some(
            "blocked: `bash` (rule `Bash(git push:*)`) requires approval and this run cannot ask \
             (--permission-mode strict); take another approach or report that this step needs approval"
        )
    );
    assert_eq!(verdict.decision, Decision::Ask);
    assert_eq!(verdict.subject.as_deref(), Some("git push"));
}

#[test]
fn cli_helpers_parse_postures_and_rule_lists() {
    assert_eq!(parse_posture("strict"), Ok(Strict));
    assert_eq!(parse_posture("acceptEdits"), Ok(Auto));
    assert_eq!(
        parse_posture("never"),
        Err("unknown permission mode `never`; expected ask, auto, yolo or strict".into())
    );
    let rules = split_rule_list("Bash(git:*) Edit,Read(src/**)");
    assert_eq!(rules, ["Bash(git:*)", "Edit", "Read(src/**)"]);
    for rule in &rules {
        Rule::parse(rule).unwrap();
    }
    let err = Rule::parse("Bash(git status").unwrap_err();
    assert_eq!(err.rule, "Bash(git status");
    assert!(err.to_string().contains("missing the closing `)`"), "{err}");
}

/// Answers from a script and records what it was asked.
struct Scripted {
    answers: Mutex<VecDeque<ApprovalAnswer>>,
    asked: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl Approver for Scripted {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.clone());
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .expect("the approver was asked more often than scripted")
    }
}

fn scripted(answers: Vec<ApprovalAnswer>) -> (Box<Scripted>, Arc<Mutex<Vec<ApprovalRequest>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let approver = Scripted {
        answers: Mutex::new(answers.into()),
        asked: Arc::clone(&asked),
    };
    (Box::new(approver), asked)
}

fn texts(rules: &[Rule]) -> Vec<String> {
    rules.iter().map(|r| r.text().to_string()).collect()
}

#[test]
fn session_grants_cover_later_calls_and_only_them() {
    let (approver, asked) = scripted(vec![
        ApprovalAnswer::Session(Rule::parse("Bash(go test:*)").unwrap()),
        ApprovalAnswer::Deny,
    ]);
    let gate = PolicyGate::new(policy(NONE), Ask, Some(approver));
    let first = gate.check_declared(
        "bash",
        profile("bash"),
        &json!({"command": "go test ./pkg -run X"}),
    );
    assert!(first.allowed);
    assert_eq!(first.resolution.as_str(), "user-session");
    let again = gate.check_declared(
        "bash",
        profile("bash"),
        &json!({"command": "go test ./other"}),
    );
    assert!(again.allowed);
    assert_eq!(again.resolution.as_str(), "session-grant");
    assert_eq!(again.rule.as_deref(), Some("Bash(go test:*)"));
    let injected = gate.check_declared(
        "bash",
        profile("bash"),
        &json!({"command": "go test && rm -rf /"}),
    );
    assert!(
        !injected.allowed,
        "a session prefix grant must not cover operators"
    );
    assert_eq!(injected.resolution.as_str(), "user-deny");
    assert!(injected.message.unwrap().contains("the user declined"));

    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        texts(&asked[0].scopes),
        ["Bash(go test ./pkg -run X)", "Bash(go test:*)"]
    );
    assert_eq!(texts(&asked[1].scopes), ["Bash(go test && rm -rf /)"]);
    assert_eq!(gate.grants(), ["Bash(go test:*)"]);
}

#[test]
fn always_grants_are_persisted_and_failures_reported() {
    let saved = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&saved);
    let (approver, asked) = scripted(vec![
        ApprovalAnswer::Always(Rule::parse("Edit(./docs/a.md)").unwrap()),
        ApprovalAnswer::Always(Rule::parse("Edit").unwrap()),
    ]);
    let gate = PolicyGate::new(policy(NONE), Ask, Some(approver)).with_persist(Box::new(
        move |rule: &str| {
            let mut saved = sink.lock().unwrap();
            saved.push(rule.to_string());
            if saved.len() > 1 {
                Err("reasonix.toml is read-only".into())
            } else {
                Ok(())
            }
        },
    ));
    let first = gate.check_declared(
        "write_file",
        profile("write_file"),
        &json!({"path": "docs/a.md"}),
    );
    assert_eq!(first.resolution.as_str(), "user-always");
    assert_eq!(first.warning, None);
    let repeat = gate.check_declared(
        "edit_file",
        profile("edit_file"),
        &json!({"path": "./docs/a.md"}),
    );
    assert_eq!(repeat.resolution.as_str(), "session-grant");
    let other = gate.check_declared(
        "write_file",
        profile("write_file"),
        &json!({"path": "docs/b.md"}),
    );
    assert!(other.allowed);
    assert_eq!(
        other.warning.as_deref(),
        Some("permission: could not save rule `Edit`: reasonix.toml is read-only")
    );
    assert_eq!(*saved.lock().unwrap(), ["Edit(./docs/a.md)", "Edit"]);

    let asked = asked.lock().unwrap();
    assert_eq!(texts(&asked[0].scopes), ["Edit(./docs/a.md)", "Edit"]);
    assert_eq!(asked[0].session_scope().unwrap().text(), "Edit");
    assert_eq!(asked[0].always_scope().unwrap().text(), "Edit(./docs/a.md)");
}

#[test]
fn the_approver_is_not_asked_when_rules_or_postures_decide() {
    let (approver, asked) = scripted(vec![ApprovalAnswer::Once]);
    let gate = PolicyGate::new(
        policy(Rules {
            deny: &["Bash(rm:*)"],
            ask: &["Bash(git push:*)"],
            ..NONE
        }),
        Auto,
        Some(approver),
    );
    assert_eq!(
        gate.check_declared("write_file", profile("write_file"), &json!({"path": "a"}))
            .resolution
            .as_str(),
        "auto"
    );
    assert_eq!(
        gate.check_declared("bash", profile("bash"), &json!({"command": "rm a"}))
            .resolution
            .as_str(),
        "rule"
    );
    let push = gate.check_declared("bash", profile("bash"), &json!({"command": "git push"}));
    assert_eq!(
        push.resolution.as_str(),
        "user-once",
        "auto keeps explicit ask rules"
    );
    assert_eq!(
        asked.lock().unwrap()[0].rule.as_deref(),
        Some("Bash(git push:*)")
    );
    gate.set_posture(Yolo);
    let push = gate.check_declared("bash", profile("bash"), &json!({"command": "git push"}));
    assert_eq!((push.allowed, push.resolution.as_str()), (true, "yolo"));
    assert_eq!(asked.lock().unwrap().len(), 1);
}

/// A tool that counts its executions.
struct Recorder {
    runs: Arc<AtomicUsize>,
}

impl Tool for Recorder {
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "records calls"
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    fn read_only(&self) -> bool {
        false
    }
    fn family(&self) -> Family {
        Family::Writer
    }
    fn execute(&self, _args: &Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok("written".into())
    }
}

/// Replies with one scripted chunk list per request.
struct FakeProvider {
    replies: Mutex<VecDeque<Vec<Chunk>>>,
}

impl Provider for FakeProvider {
    fn name(&self) -> &str {
        "fake"
    }
    fn model(&self) -> &str {
        "fake-model"
    }
    fn stream(
        &self,
        _request: &Request,
        _cancel: &CancelToken,
        _on_retry: &mut dyn FnMut(&Retry),
    ) -> Result<ChunkStream, ProviderError> {
        let chunks = self.replies.lock().unwrap().pop_front().unwrap_or_default();
        Ok(Box::new(chunks.into_iter().map(Ok)))
    }
}

fn run_agent(dir: &Dir, gate: Box<dyn Gate>, calls: Vec<ToolCall>) -> (usize, Vec<Event>, Session) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tools = Registry::new();
    tools.insert(Arc::new(Recorder {
        runs: Arc::clone(&runs),
    }));
    let replies = vec![
        calls.into_iter().map(Chunk::ToolCall).collect(),
        vec![Chunk::Text("done".into())],
    ];
    let provider = FakeProvider {
        replies: Mutex::new(replies.into()),
    };
    let header = Header::new("s1".into(), "fake", "fake-model", dir.path());
    let session = Session::create(&dir.join("sessions"), header).unwrap();
    let mut agent = Agent::new(
        Box::new(provider),
        tools,
        gate,
        session,
        ToolContext::new(dir.path().to_path_buf()),
        Options::default(),
    );
    let mut events = Vec::new();
    agent
        .run("go".into(), &mut |e: Event| events.push(e))
        .unwrap();
    let path = agent.session().path().to_path_buf();
    // The agent holds the session's lock until it is dropped.
    drop(agent);
    let session = Session::open(&path).unwrap();
    (runs.load(Ordering::SeqCst), events, session)
}

#[test]
fn a_denied_call_never_executes_and_the_model_is_told_why() {
    let dir = Dir::new();
    let mut p = Policy::new(Decision::Ask, dir.path().to_path_buf(), None);
    p.deny = Policy::parse_rules(&["Edit(secrets/**)"]).unwrap();
    let gate = PolicyGate::new(p, Yolo, None);
    let calls = vec![
        ToolCall::new("c1", "write_file", r#"{"path": "secrets/key"}"#),
        ToolCall::new("c2", "write_file", r#"{"path": "notes.md"}"#),
    ];
    let (runs, events, session) = run_agent(&dir, Box::new(gate), calls);
    assert_eq!(runs, 1, "only the allowed call may run");

    let permissions: Vec<Value> = events
        .iter()
        .filter(|e| matches!(e, Event::Permission { .. }))
        .map(|e| stream_json(e).unwrap())
        .collect();
    assert_eq!(
        permissions,
        [
            json!({"type": "permission", "tool": "write_file", "subject": "secrets/key",
                   "decision": "deny", "resolution": "rule", "allowed": false,
                   "rule": "Edit(secrets/**)", "posture": "yolo"}),
            json!({"type": "permission", "tool": "write_file", "subject": "notes.md",
                   "decision": "ask", "resolution": "yolo", "allowed": true,
                   "rule": null, "posture": "yolo"}),
        ]
    );
    let result = session
        .messages()
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c1"))
        .expect("c1 has a result");
    assert!(
        result
            .content
            .starts_with("error: blocked by rule `Edit(secrets/**)`"),
        "{}",
        result.content
    );
}

#[test]
fn strict_headless_blocks_a_writer_visibly() {
    let dir = Dir::new();
    let gate = PolicyGate::new(
        Policy::new(Decision::Ask, dir.path().to_path_buf(), None),
        Strict,
        None,
    );
    let calls = vec![ToolCall::new("c1", "write_file", r#"{"path": "a.txt"}"#)];
    let (runs, events, _) = run_agent(&dir, Box::new(gate), calls);
    assert_eq!(runs, 0);
    let blocked = events.iter().find_map(|e| match e {
        Event::ToolResult {
            output, is_error, ..
        } => Some((output.clone(), *is_error)),
        _ => None,
    });
    let (output, is_error) = blocked.expect("a tool result");
    assert!(is_error);
    assert!(output.contains("--permission-mode strict"), "{output}");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Permission { allowed: false, resolution, posture, .. }
            if *resolution == Resolution::Strict && *posture == Some(Posture::Strict)
    )));
}
