//! Shell command analysis for Bash permission rules. This is a conservative lexer, not a shell:
//! it finds the words, operators, redirections and substitutions of a command line so the rule
//! matcher can ask two questions. Is this one plain simple command (the only shape an allow
//! prefix rule may cover)? And which simple commands could this line run at all, wrappers and
//! `sh -c` payloads included (every one of them is checked against deny and ask rules)?
//!
//! Quoting follows POSIX sh: single quotes make everything literal; inside double quotes `$(`,
//! backticks and backslash escapes stay active; a backslash outside quotes escapes the next
//! character and a backslash-newline joins lines. Whatever the lexer cannot follow (an
//! unterminated quote or substitution) makes the command unparseable, which an allow rule
//! never covers. So does a dynamic command (`eval`, `sh -c`, `exec`, `source`, `xargs`, `env`,
//! `sudo`, ...) and one prefixed with variable assignments (`FOO=1 go test`): `PATH=` or
//! `LD_PRELOAD=` changes what the named program does, so only an exact rule covers those. The
//! redirections `N>&M` and `>/dev/null` open no file and are the one exception to "no
//! redirections" for allow rules. Executing the command is the sandbox's business.

/// Substitutions nested deeper than this make a command unparseable.
const MAX_DEPTH: usize = 16;
/// `sh -c` and `eval` strings are analysed this many levels deep. Past any of these bounds
/// the forms are marked truncated and restrictions treat the line as matching.
const MAX_UNWRAP_DEPTH: usize = 4;
/// How many wrappers (`sudo`, `nice`, `env`, ...) one command is unwrapped through.
const MAX_WRAPPERS: usize = 8;
/// Upper bound on the command forms returned for deny/ask checks.
const MAX_FORMS: usize = 512;

/// Words that make a command "dynamic": what finally runs is another command hidden in the
/// arguments, a file or a string, so a prefix rule cannot vouch for it.
const DYNAMIC: &[&str] = &[
    "eval", "exec", "source", ".", "command", "builtin", "env", "sudo", "doas", "su", "xargs",
    "nohup", "nice", "time", "timeout", "watch", "stdbuf", "chroot", "unshare", "setsid",
    "parallel", "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox",
    "trap", "alias", "coproc",
];

/// Shell reserved words; a command starting with one is a compound command.
const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
    "case", "esac", "in", "function", "select", "[[", "]]", "time", "coproc",
];

/// One word of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// The word after quote removal, as the program receives it (substitutions left verbatim).
    pub text: String,
    /// The word as written, quotes included, without backslash-newline continuations.
    pub raw: String,
    /// Contains `$(...)`, backticks or a process substitution that the shell would run.
    pub substitution: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Word(Word),
    /// `;` (also for a newline), `;;`, `&&`, `||`, `|`, `|&`, `&`, `(` or `)`.
    Control(String),
    /// A redirection operator with any leading fd number: `>`, `2>`, `>>`, `&>`, `<<`, `2>&`.
    /// The next word token is its target.
    Redirect(String),
}

/// Why a command is not one plain simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSimple {
    Empty,
    Unparseable(String),
    /// A control operator such as `&&`, `;`, `|`, `&`, a newline or a parenthesis.
    Operator(String),
    /// A redirection that opens a file or a here-document.
    Redirect(String),
    /// `$(...)`, backticks, `<(...)` or `>(...)`.
    Substitution,
    /// An unquoted `#` starts a comment; the command is not shown as it runs.
    Comment,
    /// The command runs another command it does not name up front (eval, sh -c, env, ...),
    /// starts with a variable assignment or is a compound command.
    Dynamic(String),
}

/// The lexed form of one command line.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    tokens: Vec<Token>,
    /// Token lists of every command substitution body, at any depth.
    inner: Vec<Vec<Token>>,
    error: Option<String>,
    comment: bool,
}

impl Analysis {
    pub fn parse(command: &str) -> Analysis {
        Analysis::parse_at(command, 0)
    }

    fn parse_at(command: &str, depth: usize) -> Analysis {
        let mut lexer = Lexer {
            chars: command.chars().collect(),
            pos: 0,
            inner: Vec::new(),
            error: None,
            comment: false,
        };
        let tokens = lexer.tokens(depth, Until::End);
        Analysis {
            tokens,
            inner: lexer.inner,
            error: lexer.error,
            comment: lexer.comment,
        }
    }

    /// Why the command could not be lexed, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    pub fn has_substitution(&self) -> bool {
        !self.inner.is_empty() || words(&self.tokens).any(|w| w.substitution)
    }

    /// The command as written, with whitespace between tokens normalised to one space and a
    /// newline written as `;`. Two commands with equal renderings run the same thing.
    pub fn raw_rendering(&self) -> String {
        render(&self.tokens, |w| w.raw.as_str())
    }

    /// Like [`Analysis::raw_rendering`] but with quotes removed from every word.
    pub fn plain_rendering(&self) -> String {
        render(&self.tokens, |w| w.text.as_str())
    }

    /// The words of the command when it is one plain simple command: parseable, no control
    /// operators, no substitutions, no comment, no redirection except the harmless ones
    /// (`N>&M` and redirecting to `/dev/null`, which are dropped), and not dynamic.
    pub fn simple_command(&self) -> Result<Vec<&Word>, NotSimple> {
        if let Some(error) = &self.error {
            return Err(NotSimple::Unparseable(error.clone()));
        }
        if self.comment {
            return Err(NotSimple::Comment);
        }
        if self.has_substitution() {
            return Err(NotSimple::Substitution);
        }
        let mut words = Vec::new();
        let mut tokens = self.tokens.iter();
        while let Some(token) = tokens.next() {
            match token {
                Token::Word(word) => words.push(word),
                Token::Control(op) => return Err(NotSimple::Operator(op.clone())),
                Token::Redirect(op) => {
                    let target = match tokens.next() {
                        Some(Token::Word(target)) => target,
                        _ => return Err(NotSimple::Redirect(op.clone())),
                    };
                    if !harmless_redirect(op, target) {
                        return Err(NotSimple::Redirect(format!("{op}{}", target.raw)));
                    }
                }
            }
        }
        let first = words.first().ok_or(NotSimple::Empty)?;
        if let Some(why) = dynamic_reason(&first.text) {
            return Err(NotSimple::Dynamic(why));
        }
        Ok(words)
    }

    /// Every simple command this line could run, as plain text (quotes removed, words joined
    /// by one space): each segment between operators, each command substitution body, and the
    /// payload of wrappers (`sudo`, `env`, `timeout`, `xargs`, ...), `sh -c` strings, `eval`
    /// arguments and `find -exec`, each also with its program path reduced to the base name.
    /// Deny and ask rules are checked against all of them.
    pub fn executed_forms(&self) -> Vec<String> {
        self.forms().list
    }

    /// The executed forms, and whether a bound (nesting depth, wrapper chain, form count)
    /// stopped the unwrapping before every form was found.
    pub fn forms(&self) -> Forms {
        let mut forms = Forms::default();
        self.collect_forms(0, &mut forms);
        forms.list.dedup();
        forms
    }

    fn collect_forms(&self, depth: usize, out: &mut Forms) {
        let lists = std::iter::once(&self.tokens).chain(self.inner.iter());
        for tokens in lists {
            for segment in segments(tokens) {
                let words: Vec<String> = segment.iter().map(|w| w.text.clone()).collect();
                unwrap_forms(words, depth, out);
            }
        }
    }
}

/// What [`Analysis::forms`] found.
#[derive(Debug, Default)]
pub struct Forms {
    /// Every simple command found, in order.
    pub list: Vec<String>,
    /// A bound stopped the unwrapping: some command the line runs may be missing from
    /// `list`, so a restriction must treat the line as matching.
    pub truncated: bool,
}

impl Forms {
    fn push(&mut self, form: String) {
        if self.list.len() >= MAX_FORMS {
            self.truncated = true;
        } else {
            self.list.push(form);
        }
    }
}

fn words(tokens: &[Token]) -> impl Iterator<Item = &Word> {
    tokens.iter().filter_map(|t| match t {
        Token::Word(word) => Some(word),
        _ => None,
    })
}

fn render(tokens: &[Token], word: impl Fn(&Word) -> &str) -> String {
    let mut out = String::new();
    let mut glue_next = false;
    for token in tokens {
        let piece = match token {
            Token::Word(w) => word(w),
            Token::Control(op) | Token::Redirect(op) => op.as_str(),
        };
        if !out.is_empty() && !glue_next {
            out.push(' ');
        }
        out.push_str(piece);
        // A redirection target is written against its operator: `2>&1`, `>/dev/null`.
        glue_next = matches!(token, Token::Redirect(_));
    }
    out
}

/// The simple commands of a token list: word lists between control operators, with
/// redirections and their targets removed.
fn segments(tokens: &[Token]) -> Vec<Vec<&Word>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut tokens = tokens.iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) => current.push(word),
            Token::Control(_) => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            Token::Redirect(_) => {
                tokens.next();
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Redirections that open no file a command could abuse: duplicating or closing a descriptor
/// (`2>&1`, `>&2`, `2>&-`) and sending output to `/dev/null`.
fn harmless_redirect(op: &str, target: &Word) -> bool {
    if target.substitution || target.raw != target.text {
        return false;
    }
    let op_kind = op.trim_start_matches(|c: char| c.is_ascii_digit());
    match op_kind {
        ">&" | "<&" => target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()),
        ">" | ">>" | ">|" | "&>" | "&>>" | "<" => target.text == "/dev/null",
        _ => false,
    }
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn dynamic_reason(first: &str) -> Option<String> {
    if is_assignment(first) {
        return Some(format!(
            "starts with the variable assignment `{first}`, which can change what runs"
        ));
    }
    if RESERVED.contains(&first) {
        return Some(format!("`{first}` starts a compound command"));
    }
    let program = basename(first);
    DYNAMIC
        .contains(&program)
        .then(|| format!("`{program}` runs a command that the rule cannot see"))
}

/// Adds `words` and every form hidden behind wrappers to `out`.
fn unwrap_forms(mut words: Vec<String>, depth: usize, out: &mut Forms) {
    for _ in 0..MAX_WRAPPERS {
        if words.is_empty() {
            return;
        }
        if out.list.len() >= MAX_FORMS {
            out.truncated = true;
            return;
        }
        out.push(words.join(" "));
        let base = basename(&words[0]).to_string();
        if base != words[0] {
            words[0] = base;
            continue;
        }
        match unwrap_once(&words, depth, out) {
            Some(next) => words = next,
            None => return,
        }
    }
    // The chain of wrappers is longer than the bound: what the last one runs was not seen.
    out.truncated |= !words.is_empty();
}

/// The command a wrapper runs, or `None` when `words` is not a wrapper. Strings that are
/// themselves shell code (`sh -c`, `eval`) are analysed recursively into `out`.
fn unwrap_once(words: &[String], depth: usize, out: &mut Forms) -> Option<Vec<String>> {
    let first = words[0].as_str();
    let rest = &words[1..];
    if RESERVED.contains(&first) || is_assignment(first) {
        return Some(rest.to_vec());
    }
    match first {
        "sudo" | "doas" => Some(skip_options(
            rest,
            &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U"],
        )),
        "env" => {
            let mut rest = skip_options(rest, &["-u", "-C", "--unset", "--chdir"]);
            while rest.first().is_some_and(|w| is_assignment(w)) {
                rest.remove(0);
            }
            Some(rest)
        }
        "command" | "builtin" | "exec" | "nohup" | "time" | "setsid" | "unbuffer" | "stdbuf"
        | "chroot" | "unshare" => Some(skip_options(rest, &["-a"])),
        "nice" => Some(skip_options(rest, &["-n"])),
        "timeout" => {
            let rest = skip_options(rest, &["-s", "-k", "--signal", "--kill-after"]);
            Some(rest.get(1..).unwrap_or_default().to_vec())
        }
        "xargs" => Some(skip_options(
            rest,
            &[
                "-I", "-i", "-n", "-P", "-L", "-l", "-d", "-a", "-E", "-e", "-s",
            ],
        )),
        "eval" => {
            nested(&rest.join(" "), depth, out);
            None
        }
        "find" => {
            find_exec(rest, depth, out);
            None
        }
        _ if is_shell(first) => {
            if let Some(script) = shell_script(rest) {
                nested(script, depth, out);
            }
            None
        }
        _ => None,
    }
}

fn is_shell(program: &str) -> bool {
    matches!(
        program,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "fish" | "csh" | "tcsh" | "busybox"
    )
}

/// The argument of `-c` (also inside combined flags such as `-lc` or `-ec`).
fn shell_script(args: &[String]) -> Option<&str> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let is_c = arg.starts_with('-') && !arg.starts_with("--") && arg.contains('c');
        if is_c {
            return iter.next().map(String::as_str);
        }
    }
    None
}

fn find_exec(args: &[String], depth: usize, out: &mut Forms) {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if matches!(arg.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let command: Vec<String> = iter
                .by_ref()
                .take_while(|w| w.as_str() != ";" && w.as_str() != "+")
                .cloned()
                .collect();
            unwrap_forms(command, depth + 1, out);
        }
    }
}

fn nested(script: &str, depth: usize, out: &mut Forms) {
    if depth < MAX_UNWRAP_DEPTH {
        Analysis::parse_at(script, 0).collect_forms(depth + 1, out);
    } else {
        out.truncated = true;
    }
}

/// Drops leading options (and the argument of those in `with_arg`) and a `--` terminator.
fn skip_options(words: &[String], with_arg: &[&str]) -> Vec<String> {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if word == "--" {
            i += 1;
            break;
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        i += if with_arg.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    words.get(i..).unwrap_or_default().to_vec()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    End,
    /// Inside `$(`, `<(` or `>(`: stop after the matching `)`.
    CloseParen,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    inner: Vec<Vec<Token>>,
    error: Option<String>,
    comment: bool,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn fail(&mut self, message: &str) {
        self.error.get_or_insert_with(|| message.to_string());
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    fn tokens(&mut self, depth: usize, until: Until) -> Vec<Token> {
        let mut out = Vec::new();
        if depth > MAX_DEPTH {
            self.fail("substitutions are nested too deeply");
            self.pos = self.chars.len();
            return out;
        }
        let mut parens = 0usize;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if until == Until::CloseParen {
                    self.fail("unterminated `$(`");
                }
                return out;
            };
            match c {
                ')' if until == Until::CloseParen && parens == 0 => {
                    self.pos += 1;
                    return out;
                }
                '\n' => {
                    self.pos += 1;
                    out.push(Token::Control(";".into()));
                }
                ';' | '&' | '|' => {
                    let op = self.operator(c);
                    out.push(op);
                }
                '(' => {
                    self.pos += 1;
                    parens += 1;
                    out.push(Token::Control("(".into()));
                }
                ')' => {
                    self.pos += 1;
                    parens = parens.saturating_sub(1);
                    out.push(Token::Control(")".into()));
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    let word = self.process_substitution(depth);
                    out.push(Token::Word(word));
                }
                '<' | '>' => {
                    let op = self.redirect(String::new());
                    out.push(Token::Redirect(op));
                }
                _ => {
                    if c == '#' {
                        self.comment = true;
                    }
                    let word = self.word(depth);
                    let is_fd = !word.text.is_empty()
                        && word.raw == word.text
                        && word.text.chars().all(|c| c.is_ascii_digit());
                    let before_redirect =
                        matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) != Some('(');
                    if is_fd && before_redirect {
                        let op = self.redirect(word.text);
                        out.push(Token::Redirect(op));
                    } else {
                        out.push(Token::Word(word));
                    }
                }
            }
        }
    }

    /// Lexes an operator starting with `;`, `&` or `|`.
    fn operator(&mut self, c: char) -> Token {
        let next = self.peek_at(1);
        let (text, control) = match (c, next) {
            (';', Some(';')) => (";;", true),
            ('&', Some('&')) => ("&&", true),
            ('&', Some('>')) if self.peek_at(2) == Some('>') => ("&>>", false),
            ('&', Some('>')) => ("&>", false),
            ('|', Some('|')) => ("||", true),
            ('|', Some('&')) => ("|&", true),
            (';', _) => (";", true),
            ('&', _) => ("&", true),
            _ => ("|", true),
        };
        self.pos += text.chars().count();
        if control {
            Token::Control(text.into())
        } else {
            Token::Redirect(text.into())
        }
    }

    /// Lexes a redirection operator at `<` or `>`, after an optional fd number.
    fn redirect(&mut self, mut op: String) -> String {
        let candidates: &[&str] = match self.peek() {
            Some('<') => &["<<<", "<<-", "<<", "<>", "<&", "<"],
            _ => &[">>", ">|", ">&", ">"],
        };
        for candidate in candidates {
            let matches = candidate
                .chars()
                .enumerate()
                .all(|(i, c)| self.peek_at(i) == Some(c));
            if matches {
                self.pos += candidate.len();
                op.push_str(candidate);
                return op;
            }
        }
        op
    }

    fn word(&mut self, depth: usize) -> Word {
        let mut word = Word::default();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\\' => self.backslash(&mut word),
                '\'' => self.single_quoted(&mut word),
                '"' => self.double_quoted(&mut word, depth),
                '`' => self.backticks(&mut word, depth),
                '$' => self.dollar(&mut word, depth),
                _ => {
                    self.pos += 1;
                    word.text.push(c);
                    word.raw.push(c);
                }
            }
        }
        word
    }

    fn backslash(&mut self, word: &mut Word) {
        self.pos += 1;
        match self.peek() {
            Some('\n') => self.pos += 1,
            Some(next) => {
                self.pos += 1;
                word.text.push(next);
                word.raw.push('\\');
                word.raw.push(next);
            }
            None => {
                word.text.push('\\');
                word.raw.push('\\');
            }
        }
    }

    fn single_quoted(&mut self, word: &mut Word) {
        self.pos += 1;
        word.raw.push('\'');
        while let Some(c) = self.peek() {
            self.pos += 1;
            word.raw.push(c);
            if c == '\'' {
                return;
            }
            word.text.push(c);
        }
        self.fail("unterminated single quote");
    }

    fn double_quoted(&mut self, word: &mut Word, depth: usize) {
        self.pos += 1;
        word.raw.push('"');
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    word.raw.push('"');
                    return;
                }
                '\\' => {
                    let next = self.peek_at(1);
                    match next {
                        Some('\n') => self.pos += 2,
                        Some(n @ ('$' | '`' | '"' | '\\')) => {
                            self.pos += 2;
                            word.text.push(n);
                            word.raw.push('\\');
                            word.raw.push(n);
                        }
                        _ => {
                            self.pos += 1;
                            word.text.push('\\');
                            word.raw.push('\\');
                        }
                    }
                }
                '`' => self.backticks(word, depth),
                '$' if self.peek_at(1) == Some('(') => self.dollar(word, depth),
                _ => {
                    self.pos += 1;
                    word.text.push(c);
                    word.raw.push(c);
                }
            }
        }
        self.fail("unterminated double quote");
    }

    fn dollar(&mut self, word: &mut Word, depth: usize) {
        match self.peek_at(1) {
            Some('(') => {
                let start = self.pos;
                self.pos += 2;
                let tokens = self.tokens(depth + 1, Until::CloseParen);
                self.inner.push(tokens);
                let source: String = self.chars[start..self.pos].iter().collect();
                word.text.push_str(&source);
                word.raw.push_str(&source);
                word.substitution = true;
            }
            Some('\'') => self.ansi_c_quoted(word),
            Some('"') => {
                self.pos += 1;
                word.raw.push('$');
                self.double_quoted(word, depth);
            }
            _ => {
                self.pos += 1;
                word.text.push('$');
                word.raw.push('$');
            }
        }
    }

    /// `$'...'`: backslash escapes are decoded, nothing else is special.
    fn ansi_c_quoted(&mut self, word: &mut Word) {
        self.pos += 2;
        word.raw.push_str("$'");
        while let Some(c) = self.peek() {
            self.pos += 1;
            word.raw.push(c);
            match c {
                '\'' => return,
                '\\' => {
                    let Some(next) = self.peek() else { break };
                    self.pos += 1;
                    word.raw.push(next);
                    let decoded = self.ansi_c_escape(next, &mut word.raw);
                    word.text.push(decoded);
                }
                _ => word.text.push(c),
            }
        }
        self.fail("unterminated $' quote");
    }

    /// Decodes the escape after a backslash in `$'...'`, so `$'\x72m'` reads as `rm`.
    fn ansi_c_escape(&mut self, c: char, raw: &mut String) -> char {
        let (radix, max_digits, mut value) = match c {
            'x' => (16, 2, 0),
            '0'..='7' => (8, 2, c.to_digit(8).unwrap_or(0)),
            'n' => return '\n',
            't' => return '\t',
            'r' => return '\r',
            'e' | 'E' => return '\u{1b}',
            'a' => return '\u{7}',
            'b' => return '\u{8}',
            'f' => return '\u{c}',
            'v' => return '\u{b}',
            other => return other,
        };
        for _ in 0..max_digits {
            let Some(digit) = self.peek().and_then(|d| d.to_digit(radix)) else {
                break;
            };
            raw.extend(self.peek());
            self.pos += 1;
            value = value * radix + digit;
        }
        char::from_u32(value).unwrap_or('\u{fffd}')
    }

    fn backticks(&mut self, word: &mut Word, depth: usize) {
        let start = self.pos;
        self.pos += 1;
        let mut body = String::new();
        let mut closed = false;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '`' => {
                    closed = true;
                    break;
                }
                '\\' => match self.peek() {
                    Some(n @ ('`' | '\\' | '$')) => {
                        self.pos += 1;
                        body.push(n);
                    }
                    _ => body.push('\\'),
                },
                _ => body.push(c),
            }
        }
        if !closed {
            self.fail("unterminated backtick");
        }
        let sub = Analysis::parse_at(&body, depth + 1);
        self.inner.push(sub.tokens);
        self.inner.extend(sub.inner);
        if let Some(error) = sub.error {
            self.fail(&error);
        }
        self.comment |= sub.comment;
        let source: String = self.chars[start..self.pos].iter().collect();
        word.text.push_str(&source);
        word.raw.push_str(&source);
        word.substitution = true;
    }

    /// `<(...)` or `>(...)`: a word naming a pipe to a command the shell starts.
    fn process_substitution(&mut self, depth: usize) -> Word {
        let start = self.pos;
        self.pos += 2;
        let tokens = self.tokens(depth + 1, Until::CloseParen);
        self.inner.push(tokens);
        let source: String = self.chars[start..self.pos].iter().collect();
        Word {
            text: source.clone(),
            raw: source,
            substitution: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simple(command: &str) -> Result<Vec<String>, NotSimple> {
        Analysis::parse(command)
            .simple_command()
            .map(|words| words.iter().map(|w| w.text.clone()).collect())
    }

    #[test]
    fn plain_commands_are_simple_with_quotes_removed() {
        assert_eq!(simple("go test ./...").unwrap(), ["go", "test", "./..."]);
        assert_eq!(
            simple("git commit -m 'a; b && c'").unwrap(),
            ["git", "commit", "-m", "a; b && c"]
        );
        assert_eq!(
            simple("echo \"x | y\" z\\;").unwrap(),
            ["echo", "x | y", "z;"]
        );
        assert_eq!(simple("ls   -la\t src").unwrap(), ["ls", "-la", "src"]);
        assert_eq!(
            simple("go test \\\n ./...").unwrap(),
            ["go", "test", "./..."]
        );
        assert_eq!(
            simple("echo 'тест' 日本").unwrap(),
            ["echo", "тест", "日本"]
        );
    }

    #[test]
    fn every_operator_breaks_a_simple_command() {
        for command in [
            "go test && rm -rf tmp",
            "go test; rm x",
            "go test || true",
            "go test | tee log",
            "go test |& tee log",
            "go test & rm x",
            "go test\nrm x",
            "(go test)",
            "go test ;; x",
        ] {
            assert!(
                matches!(simple(command), Err(NotSimple::Operator(_))),
                "{command:?}: {:?}",
                simple(command)
            );
        }
    }

    #[test]
    fn substitutions_are_found_outside_and_inside_double_quotes_only() {
        for command in [
            "echo $(rm x)",
            "echo \"$(rm x)\"",
            "echo `rm x`",
            "echo \"`rm x`\"",
            "diff <(ls a) b",
            "tee >(rm x)",
            "echo ${X:-$(rm x)}",
            "echo $((1+2))",
        ] {
            assert_eq!(simple(command), Err(NotSimple::Substitution), "{command:?}");
        }
        assert_eq!(
            simple("echo '$(rm x)' '`rm`'").unwrap(),
            ["echo", "$(rm x)", "`rm`"]
        );
        assert_eq!(simple("echo \\$\\(x\\)").unwrap(), ["echo", "$(x)"]);
        assert!(
            simple("echo \\$(x)").is_err(),
            "an unquoted ( is a syntax error, never simple"
        );
    }

    #[test]
    fn redirections_break_a_simple_command_except_harmless_ones() {
        for command in [
            "go test > out",
            "go test >> out",
            "go test 2> err",
            "go test &> out",
            "cat < in",
            "cat <<EOF",
            "cat <<< word",
            "go test >&file",
            "go test >| out",
            "go test>out",
        ] {
            assert!(
                matches!(simple(command), Err(NotSimple::Redirect(_))),
                "{command:?}: {:?}",
                simple(command)
            );
        }
        assert_eq!(
            simple("go test ./... 2>&1").unwrap(),
            ["go", "test", "./..."]
        );
        assert_eq!(simple("go test 2>/dev/null").unwrap(), ["go", "test"]);
        assert_eq!(simple("go test > /dev/null 2>&1").unwrap(), ["go", "test"]);
        assert_eq!(simple("echo a '>' b").unwrap(), ["echo", "a", ">", "b"]);
    }

    #[test]
    fn unparseable_commands_are_reported() {
        for command in [
            "echo 'abc",
            "echo \"abc",
            "echo $(ls",
            "echo `ls",
            "echo $'x",
        ] {
            assert!(
                matches!(simple(command), Err(NotSimple::Unparseable(_))),
                "{command:?}: {:?}",
                simple(command)
            );
        }
    }

    #[test]
    fn dynamic_commands_are_not_simple() {
        for command in [
            "eval ls",
            "sh -c 'ls'",
            "bash -c ls",
            "/bin/sh -c ls",
            "exec ls",
            "source x.sh",
            ". x.sh",
            "xargs rm",
            "env ls",
            "FOO=1 go test",
            "sudo ls",
            "if true",
            "{ ls",
        ] {
            assert!(
                matches!(simple(command), Err(NotSimple::Dynamic(_))),
                "{command:?}: {:?}",
                simple(command)
            );
        }
        assert_eq!(simple("go test # comment"), Err(NotSimple::Comment));
        assert_eq!(
            simple("echo `ls # hidden`"),
            Err(NotSimple::Comment),
            "inside backticks too"
        );
        assert_eq!(simple(""), Err(NotSimple::Empty));
        assert!(
            simple("echo a#b").is_ok(),
            "a # inside a word is no comment"
        );
    }

    #[test]
    fn renderings_normalise_spacing_and_keep_quotes_apart() {
        let a = Analysis::parse("git  commit -m 'x y'   && ls\nls 2>&1");
        assert_eq!(a.raw_rendering(), "git commit -m 'x y' && ls ; ls 2>&1");
        assert_eq!(a.plain_rendering(), "git commit -m x y && ls ; ls 2>&1");
        assert_ne!(
            Analysis::parse("echo 'a && b'").raw_rendering(),
            Analysis::parse("echo a && b").raw_rendering()
        );
    }

    #[test]
    fn executed_forms_reach_behind_operators_substitutions_and_wrappers() {
        let forms = |c: &str| Analysis::parse(c).executed_forms();
        let has = |c: &str, form: &str| {
            let all = forms(c);
            assert!(
                all.iter().any(|f| f == form),
                "{c:?} -> {all:?} lacks {form:?}"
            );
        };
        has("echo hi && rm -rf /", "rm -rf /");
        has("echo $(rm -rf /)", "rm -rf /");
        has("echo \"`rm -rf /`\"", "rm -rf /");
        // An escaped backtick inside backticks nests a substitution.
        has("echo `echo \\`rm -rf /\\``", "rm -rf /");
        has("sudo -u root rm -rf /", "rm -rf /");
        has("/bin/rm -rf /", "rm -rf /");
        has("FOO=1 rm -rf /", "rm -rf /");
        has("env -i A=b rm -rf /", "rm -rf /");
        has("timeout 5 rm -rf /", "rm -rf /");
        has("sh -c 'cd / && rm -rf /'", "rm -rf /");
        has("bash -lc \"rm -rf /\"", "rm -rf /");
        has("eval 'rm -rf /'", "rm -rf /");
        has("find . -exec rm -rf {} \\;", "rm -rf {}");
        has("xargs -n 1 rm -rf < list", "rm -rf");
        has("(rm -rf /)", "rm -rf /");
        has("{ rm -rf /; }", "rm -rf /");
        has("'rm' \"-rf\" /", "rm -rf /");
        has("diff <(rm -rf /) x", "rm -rf /");
        has("$'\\x72m' -rf /", "rm -rf /");
        has("$'\\162\\155' -rf /", "rm -rf /");
    }

    /// Each operator is one token of its own text, so two lines differ in rendering (and in
    /// what an exact rule matches) exactly when their operators differ.
    #[test]
    fn operators_are_lexed_whole() {
        let controls = |c: &str| -> Vec<String> {
            Analysis::parse(c)
                .tokens()
                .iter()
                .filter_map(|t| match t {
                    Token::Control(op) => Some(op.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(controls("a;;b"), [";;"]);
        assert_eq!(controls("a & b"), ["&"]);
        assert_eq!(
            controls("a && b || c | d |& e ; f"),
            ["&&", "||", "|", "|&", ";"]
        );
        assert_eq!(
            Analysis::parse("sleep 1&rm x").raw_rendering(),
            "sleep 1 & rm x"
        );
    }

    /// A backslash before a newline continues the line, outside quotes and inside double
    /// quotes alike: the two halves are one word.
    #[test]
    fn line_continuations_join_the_lines() {
        assert_eq!(simple("ls \\\n-l").unwrap(), ["ls", "-l"]);
        assert_eq!(simple("echo ab\\\ncd").unwrap(), ["echo", "abcd"]);
        assert_eq!(simple("echo \"ab\\\ncd\"").unwrap(), ["echo", "abcd"]);
    }

    #[test]
    fn assignments_start_with_a_letter_or_underscore() {
        assert!(is_assignment("FOO=1"));
        assert!(is_assignment("_x="));
        assert!(is_assignment("a1_B=x=y"));
        assert!(!is_assignment("1x=y"));
        assert!(!is_assignment("-x=y"));
        assert!(!is_assignment("a-b=1"));
        assert!(!is_assignment("plain"));
        let forms = Analysis::parse("1x=y rm -rf /").executed_forms();
        assert_eq!(
            forms,
            ["1x=y rm -rf /"],
            "not an assignment, so the command is `1x=y`"
        );
    }

    #[test]
    fn wrapper_options_end_at_a_double_dash() {
        let forms = Analysis::parse("sudo -- rm -rf /").executed_forms();
        assert!(forms.iter().any(|f| f == "rm -rf /"), "{forms:?}");
        let forms = Analysis::parse("nice -n 5 -- ls").executed_forms();
        assert!(forms.iter().any(|f| f == "ls"), "{forms:?}");
    }

    /// Every kind of nesting counts towards the bounds, and a line nested past them says so.
    #[test]
    fn unwrapping_past_a_bound_marks_the_forms_truncated() {
        let truncated = |c: &str| Analysis::parse(c).forms().truncated;
        assert!(!truncated("eval eval eval ls"));
        assert!(truncated(&("eval ".repeat(6) + "ls")));
        assert!(!truncated(&("nice ".repeat(7) + "ls")));
        assert!(truncated(&("nice ".repeat(12) + "ls")));
        assert!(!truncated("find . -exec ls ;"));
        assert!(truncated(
            "find . -exec find . -exec find . -exec find . -exec eval ls ; ; ; ;"
        ));
        assert!(truncated("sh -c 'eval eval eval eval ls'"));
        assert!(!truncated("sh -c 'sh -c ls'"));
        // `sh -c sh -c ...` runs the script `sh` with the rest as its arguments: one level.
        assert!(!truncated(&("sh -c ".repeat(50) + "ls")));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let nested = |n: usize| format!("{}x{}", "$(".repeat(n), ")".repeat(n));
        let analysis = Analysis::parse(&nested(40));
        assert!(analysis.error().is_some());
        assert_eq!(Analysis::parse(&nested(MAX_DEPTH)).error(), None);
        assert_eq!(
            Analysis::parse(&nested(MAX_DEPTH + 1)).error(),
            Some("substitutions are nested too deeply")
        );
        let script = "sh -c ".repeat(50) + "ls";
        assert!(Analysis::parse(&script).executed_forms().len() <= MAX_FORMS);
    }
}
