//! The literal extractor: reads off a regex-lite pattern a set of strings one of which every
//! match must contain (`_mut(` in `fn \w+_mut\(`, `todo` or `fixme` in `(?i)todo|fixme`), so the
//! search can skip, with a fast byte search, every line holding none of them before the
//! (literal-unaware) regex engine runs.
//!
//! The reading of the syntax is deliberately small and conservative: anything it does not
//! understand (Unicode escapes, mid-pattern flag changes, verbose mode, an empty alternative)
//! gives `None`, which means "no prefilter", never a wrong one. Under case-insensitivity the
//! literals are ASCII-lowercased and searched ASCII-case-folded, which is exact because
//! regex-lite folds ASCII letters only (`(?i)k` does not match the Kelvin sign, `(?i)ß` does not
//! match `ẞ`). How the literals are searched belongs to `bytes` and `matcher`.

/// Literal strings one of which every match must contain.
#[derive(Debug, PartialEq, Eq)]
pub struct Literals {
    /// Sorted, deduplicated, none empty; ASCII-lowercased when `fold`.
    pub needles: Vec<String>,
    /// Search ASCII-case-insensitively.
    pub fold: bool,
}

/// A set of literals, one of which every match of `pattern` contains, or `None` when the
/// pattern is beyond this deliberately small reading of the syntax. Each top-level
/// alternative contributes its longest run of characters that must appear verbatim.
pub fn required_literals(pattern: &str, case_insensitive: bool) -> Option<Literals> {
    let mut chars: Vec<char> = pattern.chars().collect();
    let mut fold = case_insensitive;
    if let Some(flags) = leading_flags(&chars) {
        if flags.contains('x') || flags.contains('-') {
            return None;
        }
        fold |= flags.contains('i');
        chars.drain(..flags.chars().count() + 3);
    }
    let mut needles = Vec::new();
    for alternative in split_alternatives(&chars)? {
        let literal = longest_required_run(alternative)?;
        if literal.is_empty() {
            return None;
        }
        needles.push(match fold {
            true => literal.to_ascii_lowercase(),
            false => literal,
        });
    }
    needles.sort_unstable();
    needles.dedup();
    Some(Literals { needles, fold })
}

/// The letters of a leading `(?flags)` group.
fn leading_flags(chars: &[char]) -> Option<String> {
    if chars.len() < 3 || chars[0] != '(' || chars[1] != '?' {
        return None;
    }
    let close = chars.iter().position(|&c| c == ')')?;
    let flags: String = chars[2..close].iter().collect();
    flags
        .chars()
        .all(|c| "imsRUx-".contains(c))
        .then_some(flags)
        .filter(|f| !f.is_empty())
}

/// Splits on `|` outside groups and classes; `None` on anything unbalanced.
fn split_alternatives(chars: &[char]) -> Option<Vec<&[char]>> {
    let mut parts = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '[' => i = skip_class(chars, i)?,
            '(' => i = skip_group(chars, i)?,
            '|' => {
                parts.push(&chars[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    parts.push(chars.get(start..)?);
    Some(parts)
}

/// The longest run of characters one alternative must match verbatim.
fn longest_required_run(chars: &[char]) -> Option<String> {
    let mut best = String::new();
    let mut run = String::new();
    let mut i = 0;
    while i < chars.len() {
        let (literal, next) = match chars[i] {
            '\\' => {
                let c = *chars.get(i + 1)?;
                if "xupPU".contains(c) || (c == 'b' && chars.get(i + 2) == Some(&'{')) {
                    return None;
                }
                let literal = (c.is_ascii_punctuation() && c != '<' && c != '>').then_some(c);
                (literal, i + 2)
            }
            '[' => (None, skip_class(chars, i)?),
            '(' => {
                let end = skip_group(chars, i)?;
                if chars.get(i + 1) == Some(&'?') && chars[i + 1..end].iter().all(|c| *c != ':') {
                    return None; // an inline flag change such as `(?i)` mid-pattern
                }
                (None, end)
            }
            '.' | '^' | '$' => (None, i + 1),
            '*' | '+' | '?' | '{' | ')' => return None, // a quantifier without an atom
            c => (Some(c), i + 1),
        };
        let (quantifier, after) = quantifier_at(chars, next)?;
        match (literal, quantifier) {
            (Some(c), Quantifier::None) => run.push(c),
            (Some(c), Quantifier::OneOrMore) => {
                run.push(c);
                keep_longest(&mut best, &mut run);
            }
            _ => keep_longest(&mut best, &mut run),
        }
        i = after;
    }
    keep_longest(&mut best, &mut run);
    Some(best)
}

fn keep_longest(best: &mut String, run: &mut String) {
    if run.len() > best.len() {
        *best = std::mem::take(run);
    } else {
        run.clear();
    }
}

enum Quantifier {
    None,
    /// `+`: the atom appears at least once, but what follows need not be adjacent to it.
    OneOrMore,
    /// `*`, `?`, `{n,m}`: the atom may be absent.
    Optional,
}

/// The quantifier starting at `i` (with an optional lazy `?`) and the index after it.
fn quantifier_at(chars: &[char], i: usize) -> Option<(Quantifier, usize)> {
    let (quantifier, mut next) = match chars.get(i) {
        Some('+') => (Quantifier::OneOrMore, i + 1),
        Some('*') | Some('?') => (Quantifier::Optional, i + 1),
        Some('{') => {
            let close = chars[i..].iter().position(|&c| c == '}')?;
            (Quantifier::Optional, i + close + 1)
        }
        _ => return Some((Quantifier::None, i)),
    };
    if chars.get(next) == Some(&'?') {
        next += 1;
    }
    Some((quantifier, next))
}

/// Index just past the class opening at `open`, nested classes included.
fn skip_class(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => {
                depth += 1;
                // A `]` right after `[` or `[^` is a literal member, not the end.
                if chars.get(i + 1) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    i += 1;
                }
            }
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index just past the group opening at `open`.
fn skip_group(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => {
                i = skip_class(chars, i)?;
                continue;
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_literals_table() {
        let needles =
            |pattern: &str, ci: bool| required_literals(pattern, ci).map(|n| (n.needles, n.fold));
        let some = |list: &[&str], fold: bool| {
            Some((list.iter().map(|s| s.to_string()).collect::<Vec<_>>(), fold))
        };
        assert_eq!(needles(r"fn \w+_mut\(", false), some(&["_mut("], false));
        assert_eq!(
            needles(r"(?i)todo|fixme", false),
            some(&["fixme", "todo"], true)
        );
        assert_eq!(needles("TODO|Fixme", true), some(&["fixme", "todo"], true));
        assert_eq!(needles(r"abc*d", false), some(&["ab"], false));
        assert_eq!(needles(r"ab+cde", false), some(&["cde"], false));
        assert_eq!(needles(r"xa?yz", false), some(&["yz"], false));
        assert_eq!(needles(r"a{2}bcd", false), some(&["bcd"], false));
        assert_eq!(needles(r"^impl\s+Foo$", false), some(&["impl"], false));
        assert_eq!(needles(r"foo(bar|baz)+quux", false), some(&["quux"], false));
        assert_eq!(needles(r"[a|b]zz|y\.y", false), some(&["y.y", "zz"], false));
        assert_eq!(needles(r"[]|]x", false), some(&["x"], false));
        assert_eq!(needles(r"(?:a|b)cc", false), some(&["cc"], false));
        assert_eq!(needles(r"\bword\b", false), some(&["word"], false));
        assert_eq!(needles(r"(ab)?cd", false), some(&["cd"], false));
        assert_eq!(needles(r"(?i)Stra\x{df}e", false), None);
        assert_eq!(needles(r"caf\u{e9}", false), None);
        assert_eq!(needles(r"a(?i)bc", false), None);
        assert_eq!(needles(r"(?-i)abc", true), None);
        assert_eq!(needles(r"(?x)a b", false), None);
        assert_eq!(needles(r"foo|", false), None);
        assert_eq!(needles(r"\w+", false), None);
        assert_eq!(needles(r".*", false), None);
    }
}
