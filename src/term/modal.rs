//! Modal overlays: they own the keyboard and replace the composer while open (§ "CLI
//! modal/composer ownership"). A [`Choices`] list (letters, digits, arrows and Enter, Esc
//! for the cancel answer) underlies the approval prompt, the MCP launch grant, the `/clear`
//! confirmation and the `/resume` picker; [`approval_preview`] shows what a tool call is
//! about to do, with a diff for edits.

use std::path::Path;

use serde_json::Value;

use super::ansi::{Line, Style};
use super::diff;
use super::keys::Key;
use super::sanitize::one_row;
use super::width::truncate;
use crate::i18n::{tr, trf, Ui};
use crate::permission::{ApprovalAnswer, ApprovalRequest};

/// Files larger than this are not read for an approval diff.
const PREVIEW_FILE_CAP: u64 = 1024 * 1024;

pub struct Choice<T> {
    pub label: String,
    /// A letter that picks this choice directly.
    pub key: Option<char>,
    pub value: T,
}

/// A titled list of choices with a selection.
pub struct Choices<T> {
    pub title: String,
    /// Lines shown between the title and the choices (a command, a diff).
    pub body: Vec<Line>,
    pub items: Vec<Choice<T>>,
    pub selected: usize,
    /// The value Esc answers with; `None` means Esc closes without an answer.
    pub on_cancel: Option<T>,
}

/// What a key did to a modal.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<T> {
    Pending,
    Chosen(T),
    /// Closed without a choice.
    Closed,
}

impl<T: Clone> Choices<T> {
    pub fn key(&mut self, key: &Key) -> Outcome<T> {
        match key {
            Key::Up | Key::Ctrl('p') => {
                self.selected = self.selected.saturating_sub(1);
                Outcome::Pending
            }
            Key::Down | Key::Ctrl('n') | Key::Tab => {
                if self.selected + 1 < self.items.len() {
                    self.selected += 1;
                }
                Outcome::Pending
            }
            Key::Enter => match self.items.get(self.selected) {
                Some(item) => Outcome::Chosen(item.value.clone()),
                None => Outcome::Closed,
            },
            Key::Esc | Key::Ctrl('c') => match &self.on_cancel {
                Some(value) => Outcome::Chosen(value.clone()),
                None => Outcome::Closed,
            },
            Key::Char(c) => {
                if let Some(item) = self.items.iter().find(|i| i.key == Some(*c)) {
                    return Outcome::Chosen(item.value.clone());
                }
                match c.to_digit(10) {
                    Some(n) if n >= 1 && (n as usize) <= self.items.len() => {
                        Outcome::Chosen(self.items[n as usize - 1].value.clone())
                    }
                    _ => Outcome::Pending,
                }
            }
            _ => Outcome::Pending,
        }
    }

    pub fn render(&self, width: usize) -> Vec<Line> {
        let bar = || Line::styled("│ ", Style::Frame);
        let mut out = Vec::new();
        let mut top = Line::styled("╭─ ", Style::Frame);
        top.push(one_row(&self.title), Style::Bold);
        out.push(top);
        for line in &self.body {
            let mut row = bar();
            row.extend(line.clone());
            out.push(row.truncated(width));
        }
        if !self.body.is_empty() {
            out.push(bar());
        }
        for (i, item) in self.items.iter().enumerate() {
            let mut row = bar();
            let selected = i == self.selected;
            let marker = if selected { "❯ " } else { "  " };
            row.push(marker, Style::Accent);
            let key = match item.key {
                Some(k) => format!(" ({k})"),
                None => String::new(),
            };
            let text = format!("{}. {}{key}", i + 1, one_row(&item.label));
            row.push(
                text,
                if selected {
                    Style::Selected
                } else {
                    Style::Plain
                },
            );
            out.push(row.truncated(width));
        }
        out.push(Line::styled(tr(Ui::ModalFooter), Style::Frame));
        out
    }
}

/// The approval prompt for one request: allow once, allow a scope for the session (the
/// default scope has the `a` key, other scopes are listed too), always allow (saved to the
/// project config), deny.
pub fn approval_choices(
    request: &ApprovalRequest,
    cwd: &Path,
    width: usize,
    preview_rows: usize,
) -> Choices<ApprovalAnswer> {
    let mut items = vec![Choice {
        label: tr(Ui::ApproveYes).into(),
        key: Some('y'),
        value: ApprovalAnswer::Once,
    }];
    let default_session = request.session_scope().cloned();
    if let Some(scope) = &default_session {
        items.push(Choice {
            label: trf(Ui::ApproveSession, &[&scope.text()]),
            key: Some('a'),
            value: ApprovalAnswer::Session(scope.clone()),
        });
    }
    for scope in &request.scopes {
        if Some(scope) != default_session.as_ref() {
            items.push(Choice {
                label: trf(Ui::ApproveSession, &[&scope.text()]),
                key: None,
                value: ApprovalAnswer::Session(scope.clone()),
            });
        }
    }
    if let Some(scope) = request.always_scope() {
        items.push(Choice {
            label: trf(Ui::ApproveAlways, &[&scope.text()]),
            key: Some('p'),
            value: ApprovalAnswer::Always(scope.clone()),
        });
    }
    items.push(Choice {
        label: tr(Ui::ApproveNo).into(),
        key: Some('n'),
        value: ApprovalAnswer::Deny,
    });
    let title = match &request.rule {
        Some(rule) => trf(Ui::ApproveTitleRule, &[&one_row(&request.tool), rule]),
        None => trf(Ui::ApproveTitle, &[&one_row(&request.tool)]),
    };
    let mut body = approval_preview(request, cwd, width.saturating_sub(2), preview_rows);
    // Why the person is asked although the Guardian was to decide.
    if let Some(note) = &request.note {
        let text = trf(Ui::GuardianNote, &[&one_row(note)]);
        body.insert(0, Line::styled(truncate(&text, width), Style::Warning));
    }
    Choices {
        title,
        body,
        items,
        selected: 0,
        on_cancel: Some(ApprovalAnswer::Deny),
    }
}

/// What the call will do: the command for bash, a diff for edits, the arguments otherwise.
pub fn approval_preview(
    request: &ApprovalRequest,
    cwd: &Path,
    width: usize,
    rows: usize,
) -> Vec<Line> {
    let args = &request.args;
    let get = |key: &str| args.get(key).and_then(Value::as_str);
    if request.tool == "bash" {
        let command = get("command").unwrap_or("");
        let mut out: Vec<Line> = command
            .lines()
            .take(rows.max(1))
            .enumerate()
            .map(|(i, l)| {
                let mut line = Line::styled(if i == 0 { "$ " } else { "  " }, Style::Dim);
                line.push(truncate(&one_row(l), width.saturating_sub(2)), Style::Bold);
                line
            })
            .collect();
        if let Some(description) = get("description") {
            out.push(Line::styled(one_row(description), Style::Dim));
        }
        return out;
    }
    if let Some((path, before, after)) = proposed_change(&request.tool, args, cwd) {
        let mut out = vec![Line::styled(one_row(&path), Style::Bold)];
        if before == after {
            out.push(Line::styled(tr(Ui::NoChange), Style::Dim));
        } else {
            out.extend(diff::render(&before, &after, width, rows.max(3)));
        }
        return out;
    }
    if let Some(subject) = &request.subject {
        return vec![Line::plain(truncate(&one_row(subject), width))];
    }
    let text = serde_json::to_string(args).unwrap_or_default();
    vec![Line::styled(truncate(&one_row(&text), width), Style::Dim)]
}

/// (path, current content, content after the call) for the built-in file writers.
pub fn proposed_change(tool: &str, args: &Value, cwd: &Path) -> Option<(String, String, String)> {
    let path = args.get("path").and_then(Value::as_str)?;
    let full = cwd.join(path);
    let before = read_small(&full).unwrap_or_default();
    let after = after_call(tool, args, &before)?;
    Some((path.to_string(), before, after))
}

/// The text a built-in file writer's call would leave in a file that holds `before`; `None`
/// for another tool or an edit that does not apply. Apart from reading the file, so a caller
/// that must check what it reads (`serve::edits`) diffs exactly the text it checked.
pub fn after_call(tool: &str, args: &Value, before: &str) -> Option<String> {
    Some(match tool {
        "write_file" => args.get("content").and_then(Value::as_str)?.to_string(),
        "edit_file" => apply_edit(before, args)?,
        "multi_edit" => {
            let mut text = before.to_string();
            for edit in args.get("edits").and_then(Value::as_array)? {
                text = apply_edit(&text, edit)?;
            }
            text
        }
        _ => return None,
    })
}

fn apply_edit(text: &str, edit: &Value) -> Option<String> {
    let old = edit.get("old_string").and_then(Value::as_str)?;
    let new = edit.get("new_string").and_then(Value::as_str)?;
    let all = edit
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if old.is_empty() || !text.contains(old) {
        return None;
    }
    Some(if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    })
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > PREVIEW_FILE_CAP {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use crate::permission::Rule;
    use crate::tool::Family;
    use serde_json::json;

    fn request(tool: &str, args: Value, scopes: &[&str]) -> ApprovalRequest {
        ApprovalRequest {
            tool: tool.into(),
            family: crate::tool::builtin::profile(tool).map_or(Family::Other, |p| p.family),
            subject: args
                .get("command")
                .or(args.get("path"))
                .and_then(Value::as_str)
                .map(str::to_string),
            args,
            rule: None,
            scopes: scopes.iter().map(|s| Rule::parse(s).unwrap()).collect(),
            note: None,
        }
    }

    #[test]
    fn bash_choices_offer_exact_and_prefix_scopes() {
        let req = request(
            "bash",
            json!({"command": "git status"}),
            &["Bash(git status)", "Bash(git status:*)"],
        );
        let mut c = approval_choices(&req, Path::new("/"), 80, 10);
        let labels: Vec<String> = c.items.iter().map(|i| i.label.clone()).collect();
        assert_eq!(
            labels,
            vec![
                "Yes",
                "Yes, and allow Bash(git status) for this session",
                "Yes, and allow Bash(git status:*) for this session",
                "Always allow Bash(git status) (saved to ./reasonix.toml)",
                "No, and tell the model what to do instead",
            ]
        );
        assert_eq!(
            c.key(&Key::Char('y')),
            Outcome::Chosen(ApprovalAnswer::Once)
        );
        assert_eq!(c.key(&Key::Esc), Outcome::Chosen(ApprovalAnswer::Deny));
        assert_eq!(
            c.key(&Key::Char('3')),
            Outcome::Chosen(ApprovalAnswer::Session(
                Rule::parse("Bash(git status:*)").unwrap()
            ))
        );
        c.key(&Key::Down);
        c.key(&Key::Down);
        c.key(&Key::Down);
        assert!(matches!(
            c.key(&Key::Enter),
            Outcome::Chosen(ApprovalAnswer::Always(_))
        ));
        let text: Vec<String> = c.render(80).iter().map(Line::text).collect();
        assert!(text.iter().any(|l| l == "│ $ git status"), "{text:?}");
        assert!(
            text.iter().any(|l| l.starts_with("│ ❯ 4. Always allow")),
            "{text:?}"
        );
    }

    #[test]
    fn edit_previews_are_diffs_of_the_real_file() {
        let dir = TempDir::new("modal");
        dir.write("a.txt", "one\ntwo\nthree\n");
        let req = request(
            "edit_file",
            json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
            &["Edit(./a.txt)", "Edit"],
        );
        let preview: Vec<String> = approval_preview(&req, dir.path(), 60, 20)
            .iter()
            .map(Line::text)
            .collect();
        assert_eq!(preview[0], "a.txt");
        assert!(preview.iter().any(|l| l.ends_with("- two")));
        assert!(preview.iter().any(|l| l.ends_with("+ 2")));
        let c = approval_choices(&req, dir.path(), 60, 20);
        assert!(c.items[1].label.contains("allow Edit for this session"));
        assert!(c.items[3].label.contains("Always allow Edit(./a.txt)"));
        let write = request(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
            &["Edit(./new.txt)", "Edit"],
        );
        let preview: Vec<String> = approval_preview(&write, dir.path(), 60, 20)
            .iter()
            .map(Line::text)
            .collect();
        assert!(
            preview.iter().any(|l| l.ends_with("+ fresh")),
            "{preview:?}"
        );
    }
}
