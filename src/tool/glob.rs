//! Glob patterns over `/`-separated relative paths, compiled once and matched many times.
//!
//! Syntax: `*` (any run of characters except `/`), `?` (one character except `/`), `[...]`
//! classes with ranges, `[!...]`/`[^...]` negation and `[:alpha:]`-style names, `**` as a whole
//! path segment (`**/x`, `a/**/b`, `a/**`: any number of directories), `{a,b}` alternation
//! (nesting allowed; [`Dialect::Glob`] only) and `\` escapes. Anywhere else `**` acts like `*`.
//!
//! A pattern compiles to a tiny NFA whose epsilon closures are precomputed as bitsets, so
//! matching is one pass over the path with no backtracking and no regex dependency; the common
//! shapes (a literal, `*.ext`, `**`) skip the NFA entirely. How a pattern is anchored (basename
//! or whole path) is the caller's business: `walk` applies gitignore rules, the tools theirs.

use std::fmt;

/// Which syntax a pattern is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Shell-style globs with `{a,b}` alternation, as the glob and grep tools accept.
    Glob,
    /// `.gitignore` lines: braces are ordinary characters, as in git.
    Gitignore,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobError {
    UnclosedClass(String),
    UnclosedBrace(String),
    TrailingBackslash(String),
    TooComplex(String),
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlobError::UnclosedClass(p) => write!(f, "glob: unclosed `[` in `{p}`"),
            GlobError::UnclosedBrace(p) => write!(f, "glob: unclosed `{{` in `{p}`"),
            GlobError::TrailingBackslash(p) => {
                write!(f, "glob: `{p}` ends with a lone backslash")
            }
            GlobError::TooComplex(p) => write!(f, "glob: `{p}` is too long or too nested"),
        }
    }
}

impl std::error::Error for GlobError {}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Glob {
    source: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Literal(String),
    /// `*` followed by a literal without `/`: a suffix test.
    Suffix(String),
    Everything,
    Nfa(Nfa),
}

impl Glob {
    pub fn new(pattern: &str, dialect: Dialect) -> Result<Glob, GlobError> {
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(GlobError::TooComplex(pattern.to_string()));
        }
        let mut parser = Parser {
            chars: pattern.chars().collect(),
            pos: 0,
            dialect,
            source: pattern,
            depth: 0,
        };
        let seq = parser.sequence(Nesting::Top)?;
        let kind = match shortcut(&seq) {
            Some(kind) => kind,
            None => Kind::Nfa(Nfa::compile(&seq, pattern)?),
        };
        Ok(Glob {
            source: pattern.to_string(),
            kind,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `path` matches.
    pub fn is_match(&self, path: &str) -> bool {
        match &self.kind {
            Kind::Literal(lit) => path == lit,
            Kind::Suffix(suffix) => {
                path.ends_with(suffix.as_str()) && {
                    !path[..path.len() - suffix.len()].contains('/')
                }
            }
            Kind::Everything => true,
            Kind::Nfa(nfa) => nfa.is_match(path),
        }
    }
}

/// Whether `s` contains any character that is special in a glob (so a path component without
/// one can be taken literally).
pub fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '{', '\\'])
}

const MAX_PATTERN_LEN: usize = 1024;
const MAX_NESTING: usize = 32;
const MAX_INSTS: usize = 4096;

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    AnyOne,
    Star,
    /// `**/`: zero or more whole directories.
    DirsStar,
    /// A trailing or lone `**`: anything, `/` included.
    AnyRest,
    Class(Class),
    Alt(Vec<Vec<Node>>),
}

#[derive(Debug, Clone)]
struct Class {
    negated: bool,
    items: Vec<ClassItem>,
}

#[derive(Debug, Clone)]
enum ClassItem {
    Range(char, char),
    Named(fn(char) -> bool),
}

impl Class {
    fn matches(&self, c: char) -> bool {
        if c == '/' {
            return false;
        }
        let hit = self.items.iter().any(|item| match item {
            ClassItem::Range(lo, hi) => *lo <= c && c <= *hi,
            ClassItem::Named(test) => test(c),
        });
        hit != self.negated
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Nesting {
    Top,
    InBrace,
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    dialect: Dialect,
    source: &'a str,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn braces(&self) -> bool {
        self.dialect == Dialect::Glob
    }

    /// Parses until the end, or (inside braces) until an unescaped `,` or `}`.
    fn sequence(&mut self, nesting: Nesting) -> Result<Vec<Node>, GlobError> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if nesting == Nesting::InBrace && (c == ',' || c == '}') {
                break;
            }
            self.pos += 1;
            match c {
                '\\' => match self.peek() {
                    Some(escaped) => {
                        self.pos += 1;
                        seq.push(Node::Char(escaped));
                    }
                    None => return Err(GlobError::TrailingBackslash(self.source.to_string())),
                },
                '?' => seq.push(Node::AnyOne),
                '*' => seq.push(self.stars(nesting)),
                '[' => seq.push(Node::Class(self.class()?)),
                '{' if self.braces() => seq.push(self.alternation()?),
                other => seq.push(Node::Char(other)),
            }
        }
        Ok(seq)
    }

    /// Called after one `*`; swallows the run and decides whether it is a `**` segment.
    fn stars(&mut self, nesting: Nesting) -> Node {
        let start = self.pos - 1;
        while self.peek() == Some('*') {
            self.pos += 1;
        }
        if self.pos - start < 2 {
            return Node::Star;
        }
        let boundary_before = match start.checked_sub(1).map(|i| self.chars[i]) {
            None | Some('/') => true,
            Some('{') | Some(',') => nesting == Nesting::InBrace,
            _ => false,
        };
        if !boundary_before {
            return Node::Star;
        }
        match self.peek() {
            Some('/') => {
                self.pos += 1;
                Node::DirsStar
            }
            None => Node::AnyRest,
            Some(',') | Some('}') if nesting == Nesting::InBrace => Node::AnyRest,
            _ => Node::Star,
        }
    }

    fn class(&mut self) -> Result<Class, GlobError> {
        let unclosed = || GlobError::UnclosedClass(self.source.to_string());
        let negated = matches!(self.peek(), Some('!') | Some('^'));
        if negated {
            self.pos += 1;
        }
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek().ok_or_else(unclosed)?;
            self.pos += 1;
            if c == ']' && !first {
                break;
            }
            first = false;
            if c == '[' && self.peek() == Some(':') {
                if let Some(test) = self.named_class() {
                    items.push(ClassItem::Named(test));
                    continue;
                }
            }
            let lo = self.class_char(c)?;
            let is_range =
                self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&n| n != ']');
            if is_range {
                self.pos += 1;
                let raw = self.peek().ok_or_else(unclosed)?;
                self.pos += 1;
                let hi = self.class_char(raw)?;
                items.push(ClassItem::Range(lo, hi));
            } else {
                items.push(ClassItem::Range(lo, lo));
            }
        }
        Ok(Class { negated, items })
    }

    fn class_char(&mut self, c: char) -> Result<char, GlobError> {
        if c != '\\' {
            return Ok(c);
        }
        let escaped = self
            .peek()
            .ok_or_else(|| GlobError::UnclosedClass(self.source.to_string()))?;
        self.pos += 1;
        Ok(escaped)
    }

    /// `[:name:]` inside a class, the cursor just past `[`. Unknown names are left as text.
    fn named_class(&mut self) -> Option<fn(char) -> bool> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let end = rest.get(1..)?.find(":]")? + 1;
        let test: fn(char) -> bool = match &rest[1..end] {
            "alpha" => |c| c.is_alphabetic(),
            "digit" => |c| c.is_ascii_digit(),
            "alnum" => |c| c.is_alphanumeric(),
            "upper" => |c| c.is_uppercase(),
            "lower" => |c| c.is_lowercase(),
            "space" => |c| c.is_whitespace(),
            "punct" => |c| c.is_ascii_punctuation(),
            "xdigit" => |c| c.is_ascii_hexdigit(),
            _ => return None,
        };
        self.pos += rest[..end + 2].chars().count();
        Some(test)
    }

    fn alternation(&mut self) -> Result<Node, GlobError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(GlobError::TooComplex(self.source.to_string()));
        }
        let mut alternatives = Vec::new();
        loop {
            alternatives.push(self.sequence(Nesting::InBrace)?);
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(GlobError::UnclosedBrace(self.source.to_string())),
            }
        }
        self.depth -= 1;
        Ok(Node::Alt(alternatives))
    }
}

fn shortcut(seq: &[Node]) -> Option<Kind> {
    let literal = |nodes: &[Node]| -> Option<String> {
        nodes
            .iter()
            .map(|n| match n {
                Node::Char(c) => Some(*c),
                _ => None,
            })
            .collect()
    };
    match seq {
        [Node::AnyRest] => Some(Kind::Everything),
        [Node::Star, rest @ ..] => literal(rest).filter(|s| !s.contains('/')).map(Kind::Suffix),
        _ => literal(seq).map(Kind::Literal),
    }
}

#[derive(Debug, Clone)]
enum Inst {
    Char(char),
    AnyButSlash,
    Any,
    Class(Class),
    Split(usize, usize),
    Jmp(usize),
    Match,
}

/// Thompson NFA with each state's epsilon closure stored as a bitset row.
#[derive(Debug, Clone)]
struct Nfa {
    insts: Vec<Inst>,
    /// `words` u64s per instruction: the consuming or `Match` states reachable for free.
    closures: Vec<u64>,
    words: usize,
}

impl Nfa {
    fn compile(seq: &[Node], source: &str) -> Result<Nfa, GlobError> {
        let mut insts = Vec::new();
        emit_seq(seq, &mut insts);
        insts.push(Inst::Match);
        if insts.len() > MAX_INSTS {
            return Err(GlobError::TooComplex(source.to_string()));
        }
        let words = insts.len().div_ceil(64);
        let mut closures = vec![0u64; insts.len() * words];
        let mut stack = Vec::new();
        for pc in 0..insts.len() {
            let row = &mut closures[pc * words..(pc + 1) * words];
            stack.push(pc);
            let mut seen = vec![false; insts.len()];
            while let Some(at) = stack.pop() {
                if std::mem::replace(&mut seen[at], true) {
                    continue;
                }
                match insts[at] {
                    Inst::Split(a, b) => stack.extend([b, a]),
                    Inst::Jmp(to) => stack.push(to),
                    _ => row[at / 64] |= 1 << (at % 64),
                }
            }
        }
        Ok(Nfa {
            insts,
            closures,
            words,
        })
    }

    fn row(&self, pc: usize) -> &[u64] {
        &self.closures[pc * self.words..(pc + 1) * self.words]
    }

    fn is_match(&self, path: &str) -> bool {
        let mut current = self.row(0).to_vec();
        let mut next = vec![0u64; self.words];
        for c in path.chars() {
            next.iter_mut().for_each(|w| *w = 0);
            let mut alive = false;
            for (word_index, &word) in current.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let pc = word_index * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if self.consumes(pc, c) {
                        for (n, r) in next.iter_mut().zip(self.row(pc + 1)) {
                            *n |= r;
                        }
                        alive = true;
                    }
                }
            }
            if !alive {
                return false;
            }
            std::mem::swap(&mut current, &mut next);
        }
        let last = self.insts.len() - 1;
        current[last / 64] & (1 << (last % 64)) != 0
    }

    fn consumes(&self, pc: usize, c: char) -> bool {
        match &self.insts[pc] {
            Inst::Char(want) => *want == c,
            Inst::AnyButSlash => c != '/',
            Inst::Any => true,
            Inst::Class(class) => class.matches(c),
            Inst::Split(..) | Inst::Jmp(_) | Inst::Match => false,
        }
    }
}

fn emit_seq(seq: &[Node], out: &mut Vec<Inst>) {
    for node in seq {
        emit(node, out);
    }
}

fn emit(node: &Node, out: &mut Vec<Inst>) {
    match node {
        Node::Char(c) => out.push(Inst::Char(*c)),
        Node::AnyOne => out.push(Inst::AnyButSlash),
        Node::Class(class) => out.push(Inst::Class(class.clone())),
        Node::Star => emit_loop(Inst::AnyButSlash, out),
        Node::AnyRest => emit_loop(Inst::Any, out),
        Node::DirsStar => {
            // Optional `.*/`: skip it entirely, or any run of characters ending in `/`.
            let split = out.len();
            out.push(Inst::Split(split + 1, 0));
            emit_loop(Inst::Any, out);
            out.push(Inst::Char('/'));
            out[split] = Inst::Split(split + 1, out.len());
        }
        Node::Alt(alternatives) => emit_alt(alternatives, out),
    }
}

/// `inst*`: loop while `inst` consumes, leave at any point.
fn emit_loop(inst: Inst, out: &mut Vec<Inst>) {
    let top = out.len();
    out.push(Inst::Split(top + 1, top + 3));
    out.push(inst);
    out.push(Inst::Jmp(top));
}

fn emit_alt(alternatives: &[Vec<Node>], out: &mut Vec<Inst>) {
    let mut exits = Vec::new();
    for (i, alt) in alternatives.iter().enumerate() {
        if i + 1 == alternatives.len() {
            emit_seq(alt, out);
            break;
        }
        let split = out.len();
        out.push(Inst::Split(split + 1, 0));
        emit_seq(alt, out);
        exits.push(out.len());
        out.push(Inst::Jmp(0));
        out[split] = Inst::Split(split + 1, out.len());
    }
    let end = out.len();
    for exit in exits {
        out[exit] = Inst::Jmp(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(dialect: Dialect, cases: &[(&str, &str, bool)]) {
        let mut failures = Vec::new();
        for &(pattern, path, expected) in cases {
            let glob = Glob::new(pattern, dialect)
                .unwrap_or_else(|e| panic!("{pattern:?} failed to compile: {e}"));
            if glob.is_match(path) != expected {
                failures.push(format!(
                    "{pattern:?} vs {path:?}: expected {expected}, got {}",
                    !expected
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn glob_dialect_table() {
        check(
            Dialect::Glob,
            &[
                // literals and shortcuts
                ("main.rs", "main.rs", true),
                ("main.rs", "src/main.rs", false),
                ("main.rs", "main.rsx", false),
                ("src/main.rs", "src/main.rs", true),
                // `*`
                ("*.rs", "main.rs", true),
                ("*.rs", ".rs", true),
                ("*.rs", "src/main.rs", false),
                ("*", "", true),
                ("*", "a/b", false),
                ("src/*", "src/a.rs", true),
                ("src/*", "src/a/b.rs", false),
                ("a*b*c", "aXXbYYc", true),
                ("a*b*c", "abc", true),
                ("a*b*c", "acb", false),
                ("*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
                // `?`
                ("?.rs", "a.rs", true),
                ("?.rs", "ab.rs", false),
                ("a?b", "a/b", false),
                ("??", "é!", true),
                // classes
                ("[abc].txt", "b.txt", true),
                ("[abc].txt", "d.txt", false),
                ("[a-c]x", "cx", true),
                ("[a-c]x", "dx", false),
                ("[!a-c]x", "dx", true),
                ("[!a-c]x", "ax", false),
                ("[^a-c]x", "bx", false),
                ("[]]", "]", true),
                ("[!]]", "a", true),
                ("[a-]", "-", true),
                ("[[:digit:]]*", "7up", true),
                ("[[:digit:]]*", "up7", false),
                ("[[:upper:][:digit:]]", "Q", true),
                ("a[/]b", "a/b", false),
                ("[\\]]", "]", true),
                // `**`
                ("**", "a/b/c", true),
                ("**/*.rs", "main.rs", true),
                ("**/*.rs", "src/a/b/main.rs", true),
                ("**/*.rs", "src/main.ts", false),
                ("src/**/*.rs", "src/main.rs", true),
                ("src/**/*.rs", "src/a/b/c.rs", true),
                ("src/**/*.rs", "srcx/a.rs", false),
                ("src/**/*.rs", "lib/src/a.rs", false),
                ("a/**/b", "a/b", true),
                ("a/**/b", "a/x/y/b", true),
                ("a/**/b", "a/xb", false),
                ("a/**", "a/x/y", true),
                ("a/**", "a", false),
                ("a**b", "axxb", true),
                ("a**b", "ax/xb", false),
                ("**a", "xa", true),
                ("**a", "x/a", false),
                // braces
                ("*.{ts,tsx}", "app.ts", true),
                ("*.{ts,tsx}", "app.tsx", true),
                ("*.{ts,tsx}", "app.js", false),
                ("**/*.{ts,tsx}", "web/src/app.tsx", true),
                ("{src,tests}/**/*.rs", "tests/a/b.rs", true),
                ("{src,tests}/**/*.rs", "benches/b.rs", false),
                ("a{b,c{d,e}}f", "acef", true),
                ("a{b,c{d,e}}f", "abf", true),
                ("a{b,c{d,e}}f", "acf", false),
                ("x{,.bak}", "x", true),
                ("x{,.bak}", "x.bak", true),
                ("{**/,}lib.rs", "a/b/lib.rs", true),
                ("}{a,b}", "}a", true),
                ("a,b", "a,b", true),
                // escapes
                ("\\*.rs", "*.rs", true),
                ("\\*.rs", "a.rs", false),
                ("\\{a,b\\}", "{a,b}", true),
                ("a\\?", "a?", true),
                ("a\\?", "ab", false),
                // unicode
                ("日本*", "日本語.txt", true),
            ],
        );
    }

    #[test]
    fn gitignore_dialect_treats_braces_as_text() {
        check(
            Dialect::Gitignore,
            &[
                ("{a,b}", "{a,b}", true),
                ("{a,b}", "a", false),
                ("*.o", "x.o", true),
                ("\\#file", "#file", true),
                ("\\!important", "!important", true),
                ("trail\\ ", "trail ", true),
            ],
        );
    }

    #[test]
    fn malformed_patterns_are_errors_with_readable_messages() {
        let cases = [
            ("[abc", "glob: unclosed `[` in `[abc`"),
            ("{a,b", "glob: unclosed `{` in `{a,b`"),
            ("a\\", "glob: `a\\` ends with a lone backslash"),
        ];
        for (pattern, message) in cases {
            let err = Glob::new(pattern, Dialect::Glob).unwrap_err();
            assert_eq!(err.to_string(), message);
        }
        let deep = "{".repeat(40) + &"}".repeat(40);
        assert!(matches!(
            Glob::new(&deep, Dialect::Glob),
            Err(GlobError::TooComplex(_))
        ));
        assert!(Glob::new("{a,b", Dialect::Gitignore).is_ok());
    }

    #[test]
    fn large_patterns_use_multiword_state_sets() {
        let pattern = "*a".repeat(40) + "*";
        let glob = Glob::new(&pattern, Dialect::Glob).unwrap();
        assert!(glob.is_match(&"a".repeat(40)));
        assert!(!glob.is_match(&"a".repeat(39)));
        assert!(glob.is_match(&"ba".repeat(45)));
    }

    #[test]
    fn has_meta_spots_special_characters() {
        assert!(has_meta("*.rs"));
        assert!(has_meta("{a,b}"));
        assert!(!has_meta("src"));
    }
}
