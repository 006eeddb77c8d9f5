//! Line diffs for showing edits: Myers' O(ND) algorithm producing an edit script, grouped
//! into unified hunks with context, rendered as coloured lines. Inputs are untrusted file
//! contents and model-written text, so rendering sanitizes every line.

use super::ansi::{Line, Style};
use super::sanitize::one_row;
use super::width::truncate;

/// One line of the edit script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Unchanged: (old index, new index).
    Keep(usize, usize),
    Delete(usize),
    Insert(usize),
}

/// Beyond this many differences the script degrades to "delete all, insert all" rather
/// than spend quadratic memory on two huge unrelated files.
const MAX_EDIT_DISTANCE: usize = 4000;

/// The shortest edit script turning `old` into `new`.
pub fn diff_lines(old: &[&str], new: &[&str]) -> Vec<Op> {
    // Common prefix and suffix are cheap to peel off and make the core search small.
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let a = &old[prefix..old.len() - suffix];
    let b = &new[prefix..new.len() - suffix];
    let mut ops: Vec<Op> = (0..prefix).map(|i| Op::Keep(i, i)).collect();
    let middle = myers(a, b).unwrap_or_else(|| {
        (0..a.len())
            .map(Op::Delete)
            .chain((0..b.len()).map(Op::Insert))
            .collect()
    });
    ops.extend(middle.into_iter().map(|op| match op {
        Op::Keep(i, j) => Op::Keep(i + prefix, j + prefix),
        Op::Delete(i) => Op::Delete(i + prefix),
        Op::Insert(j) => Op::Insert(j + prefix),
    }));
    let (old_tail, new_tail) = (old.len() - suffix, new.len() - suffix);
    ops.extend((0..suffix).map(|k| Op::Keep(old_tail + k, new_tail + k)));
    ops
}

fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    if max == 0 {
        return Some(Vec::new());
    }
    let offset = max as isize;
    let mut v = vec![0isize; 2 * max + 1];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=max.min(MAX_EDIT_DISTANCE) as isize {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let idx = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, a.len(), b.len(), offset));
            }
            k += 2;
        }
    }
    None
}

fn backtrack(trace: &[Vec<isize>], n: usize, m: usize, offset: isize) -> Vec<Op> {
    let (mut x, mut y) = (n as isize, m as isize);
    let mut ops = Vec::new();
    for (d, v) in trace.iter().enumerate().rev() {
        let d = d as isize;
        let k = x - y;
        let idx = (k + offset) as usize;
        let prev_k = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = v[(prev_k + offset) as usize];
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            ops.push(Op::Keep(x as usize, y as usize));
        }
        if d > 0 {
            if x == prev_x {
                ops.push(Op::Insert(prev_y as usize));
            } else {
                ops.push(Op::Delete(prev_x as usize));
            }
        }
        x = prev_x;
        y = prev_y;
    }
    ops.reverse();
    ops
}

/// A unified hunk: 1-based starts and counts plus its script slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub ops: Vec<Op>,
}

/// Groups the script into hunks with `context` unchanged lines around each change.
pub fn hunks(ops: &[Op], context: usize) -> Vec<Hunk> {
    let changes: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Keep(..)))
        .map(|(i, _)| i)
        .collect();
    let mut result = Vec::new();
    let mut i = 0;
    while i < changes.len() {
        let start = changes[i].saturating_sub(context);
        let mut end = changes[i];
        while i < changes.len() && changes[i] <= end + 2 * context + 1 {
            end = changes[i];
            i += 1;
        }
        let end = (end + context + 1).min(ops.len());
        result.push(make_hunk(&ops[start..end]));
    }
    result
}

fn make_hunk(ops: &[Op]) -> Hunk {
    let (mut old_len, mut new_len) = (0, 0);
    let (mut old_start, mut new_start) = (None, None);
    for op in ops {
        match *op {
            Op::Keep(i, j) => {
                old_start.get_or_insert(i);
                new_start.get_or_insert(j);
                old_len += 1;
                new_len += 1;
            }
            Op::Delete(i) => {
                old_start.get_or_insert(i);
                old_len += 1;
            }
            Op::Insert(j) => {
                new_start.get_or_insert(j);
                new_len += 1;
            }
        }
    }
    // An empty side starts where the other would have been (unified diff convention).
    let old_start = old_start.map_or(0, |s| s + 1);
    let new_start = new_start.map_or(0, |s| s + 1);
    Hunk {
        old_start,
        old_len,
        new_start,
        new_len,
        ops: ops.to_vec(),
    }
}

/// Counts of added and removed lines.
pub fn stats(ops: &[Op]) -> (usize, usize) {
    ops.iter().fold((0, 0), |(add, del), op| match op {
        Op::Insert(_) => (add + 1, del),
        Op::Delete(_) => (add, del + 1),
        Op::Keep(..) => (add, del),
    })
}

/// The coloured unified diff of `old` → `new`, at most `max_lines` rows of `width` columns.
pub fn render(old: &str, new: &str, width: usize, max_lines: usize) -> Vec<Line> {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let ops = diff_lines(&old_lines, &new_lines);
    let mut out = Vec::new();
    for hunk in hunks(&ops, 3) {
        out.push(Line::styled(
            format!(
                "@@ -{},{} +{},{} @@",
                hunk.old_start, hunk.old_len, hunk.new_start, hunk.new_len
            ),
            Style::DiffHunk,
        ));
        for op in &hunk.ops {
            let (sign, text, style, number) = match *op {
                Op::Keep(i, j) => (' ', old_lines[i], Style::Dim, j + 1),
                Op::Delete(i) => ('-', old_lines[i], Style::DiffDel, i + 1),
                Op::Insert(j) => ('+', new_lines[j], Style::DiffAdd, j + 1),
            };
            let mut line = Line::styled(format!("{number:>5} "), Style::Dim);
            let body = format!("{sign} {}", one_row(text));
            line.push(truncate(&body, width.saturating_sub(6).max(8)), style);
            out.push(line);
        }
    }
    if out.len() > max_lines {
        let hidden = out.len() - max_lines;
        out.truncate(max_lines);
        out.push(Line::styled(
            crate::i18n::trf(crate::i18n::Ui::MoreDiffLines, &[&hidden]),
            Style::Dim,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a script to check it really turns `old` into `new`.
    fn apply<'a>(ops: &[Op], old: &[&'a str], new: &[&'a str]) -> Vec<&'a str> {
        ops.iter()
            .filter_map(|op| match *op {
                Op::Keep(i, _) => Some(old[i]),
                Op::Insert(j) => Some(new[j]),
                Op::Delete(_) => None,
            })
            .collect()
    }

    #[test]
    fn scripts_are_minimal_and_correct() {
        let cases: &[(&str, &str, usize)] = &[
            ("abcabba", "cbabac", 5),
            ("", "abc", 3),
            ("abc", "", 3),
            ("abc", "abc", 0),
            ("axc", "ayc", 2),
            ("abcdef", "abXdeYf", 3),
        ];
        for (a, b, distance) in cases {
            let old: Vec<&str> = a.split("").filter(|s| !s.is_empty()).collect();
            let new: Vec<&str> = b.split("").filter(|s| !s.is_empty()).collect();
            let ops = diff_lines(&old, &new);
            assert_eq!(apply(&ops, &old, &new), new, "{a} -> {b}");
            let (add, del) = stats(&ops);
            assert_eq!(add + del, *distance, "{a} -> {b}: {ops:?}");
        }
    }

    #[test]
    fn hunks_carry_context_and_unified_numbers() {
        let old: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
        let mut new = old.clone();
        new[4] = "changed 5".into();
        new.insert(15, "inserted".into());
        let o: Vec<&str> = old.iter().map(String::as_str).collect();
        let n: Vec<&str> = new.iter().map(String::as_str).collect();
        let hs = hunks(&diff_lines(&o, &n), 3);
        assert_eq!(hs.len(), 2);
        assert_eq!(
            (
                hs[0].old_start,
                hs[0].old_len,
                hs[0].new_start,
                hs[0].new_len
            ),
            (2, 7, 2, 7)
        );
        assert_eq!(
            (
                hs[1].old_start,
                hs[1].old_len,
                hs[1].new_start,
                hs[1].new_len
            ),
            (13, 6, 13, 7)
        );
    }

    #[test]
    fn rendering_is_coloured_numbered_sanitized_and_capped() {
        let lines = render("a\nb\nc\n", "a\nB\u{1b}[2J\nc\n", 60, 100);
        let text: Vec<String> = lines.iter().map(Line::text).collect();
        assert_eq!(
            text,
            vec![
                "@@ -1,3 +1,3 @@",
                "    1   a",
                "    2 - b",
                "    2 + B^[[2J",
                "    3   c"
            ]
        );
        assert_eq!(lines[2].spans[1].style, Style::DiffDel);
        assert_eq!(lines[3].spans[1].style, Style::DiffAdd);
        let big_old: String = (0..100).map(|i| format!("{i}\n")).collect();
        let capped = render(&big_old, "", 60, 10);
        assert_eq!(capped.len(), 11);
        assert!(capped[10].text().contains("more diff lines"));
    }
}
