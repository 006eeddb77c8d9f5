//! A tiny VT100 interpreter for end-to-end tests: enough of what the chat writes (text with
//! wide characters, CR/LF, cursor moves, erase in display/line) to rebuild the screen and
//! the scrollback, so tests assert on what a user would see. Styles, modes and OSC strings
//! are parsed and ignored.

use reasonix::term::width::char_width;

/// The right half of a wide character.
const CONTINUATION: char = '\0';

pub struct Vt {
    cols: usize,
    rows: usize,
    grid: Vec<Vec<char>>,
    row: usize,
    col: usize,
    pending_wrap: bool,
    scrollback: Vec<String>,
    state: State,
    params: String,
    utf8: Vec<u8>,
    /// Inside a synchronized-output frame (`CSI ? 2026 h` … `l`).
    in_frame: bool,
}

#[derive(PartialEq)]
enum State {
    Ground,
    Escape,
    Csi,
    Osc,
    OscEscape,
    /// ESC followed by an intermediate byte (`ESC ( B` and the like): one more byte.
    EscapeIntermediate,
}

impl Vt {
    pub fn new(cols: usize, rows: usize) -> Vt {
        Vt {
            cols,
            rows,
            grid: vec![vec![' '; cols]; rows],
            row: 0,
            col: 0,
            pending_wrap: false,
            scrollback: Vec::new(),
            state: State::Ground,
            params: String::new(),
            utf8: Vec::new(),
            in_frame: false,
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        match self.state {
            State::Ground => self.ground(b),
            State::Escape => match b {
                b'[' => {
                    self.params.clear();
                    self.state = State::Csi;
                }
                b']' => self.state = State::Osc,
                b'(' | b')' | b'#' | b' ' => self.state = State::EscapeIntermediate,
                _ => self.state = State::Ground,
            },
            State::EscapeIntermediate => self.state = State::Ground,
            State::Csi => {
                if (0x40..=0x7e).contains(&b) {
                    self.csi(b);
                    self.state = State::Ground;
                } else {
                    self.params.push(b as char);
                }
            }
            State::Osc => match b {
                0x07 => self.state = State::Ground,
                0x1b => self.state = State::OscEscape,
                _ => {}
            },
            State::OscEscape => self.state = State::Ground,
        }
    }

    fn ground(&mut self, b: u8) {
        if !self.utf8.is_empty() || b >= 0x80 {
            self.utf8.push(b);
            match std::str::from_utf8(&self.utf8) {
                Ok(s) => {
                    let c = s.chars().next().unwrap_or(' ');
                    self.utf8.clear();
                    self.print(c);
                }
                Err(e) if e.error_len().is_some() => self.utf8.clear(),
                Err(_) => {}
            }
            return;
        }
        match b {
            0x1b => self.state = State::Escape,
            b'\r' => {
                self.col = 0;
                self.pending_wrap = false;
            }
            b'\n' | 0x0b | 0x0c => {
                self.linefeed();
                self.pending_wrap = false;
            }
            0x08 => {
                self.col = self.col.saturating_sub(1);
                self.pending_wrap = false;
            }
            b'\t' => self.col = ((self.col / 8 + 1) * 8).min(self.cols - 1),
            0x20..=0x7e => self.print(b as char),
            _ => {}
        }
    }

    fn print(&mut self, c: char) {
        let w = char_width(c);
        if w == 0 {
            return;
        }
        if self.pending_wrap || self.col + w > self.cols {
            self.col = 0;
            self.linefeed();
            self.pending_wrap = false;
        }
        self.grid[self.row][self.col] = c;
        if w == 2 && self.col + 1 < self.cols {
            self.grid[self.row][self.col + 1] = CONTINUATION;
        }
        self.col += w;
        if self.col >= self.cols {
            self.col = self.cols - 1;
            self.pending_wrap = true;
        }
    }

    fn linefeed(&mut self) {
        if self.row + 1 < self.rows {
            self.row += 1;
        } else {
            let top = self.grid.remove(0);
            self.scrollback.push(row_text(&top));
            self.grid.push(vec![' '; self.cols]);
        }
    }

    fn csi(&mut self, last: u8) {
        let private = self.params.starts_with('?');
        if private && self.params == "?2026" {
            self.in_frame = last == b'h';
        }
        if private || self.params.contains(' ') {
            return;
        }
        let nums: Vec<usize> = self
            .params
            .split(';')
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let n = nums.first().copied().unwrap_or(0).max(1);
        self.pending_wrap = false;
        match last {
            b'A' => self.row = self.row.saturating_sub(n),
            b'B' => self.row = (self.row + n).min(self.rows - 1),
            b'C' => self.col = (self.col + n).min(self.cols - 1),
            b'D' => self.col = self.col.saturating_sub(n),
            b'G' => self.col = (n - 1).min(self.cols - 1),
            b'H' | b'f' => {
                self.row = (n - 1).min(self.rows - 1);
                self.col = (nums.get(1).copied().unwrap_or(1).max(1) - 1).min(self.cols - 1);
            }
            b'J' => match nums.first().copied().unwrap_or(0) {
                0 => {
                    for c in self.col..self.cols {
                        self.grid[self.row][c] = ' ';
                    }
                    for r in self.row + 1..self.rows {
                        self.grid[r] = vec![' '; self.cols];
                    }
                }
                _ => self.grid = vec![vec![' '; self.cols]; self.rows],
            },
            b'K' => match nums.first().copied().unwrap_or(0) {
                0 => {
                    for c in self.col..self.cols {
                        self.grid[self.row][c] = ' ';
                    }
                }
                _ => self.grid[self.row] = vec![' '; self.cols],
            },
            _ => {}
        }
    }

    /// A new size; like xterm, the grid is cut or padded rather than reflowed.
    pub fn resize(&mut self, cols: usize, rows: usize) {
        for row in &mut self.grid {
            row.resize(cols, ' ');
        }
        while self.grid.len() > rows {
            let top = self.grid.remove(0);
            self.scrollback.push(row_text(&top));
            self.row = self.row.saturating_sub(1);
        }
        while self.grid.len() < rows {
            self.grid.push(vec![' '; cols]);
        }
        self.cols = cols;
        self.rows = rows;
        self.row = self.row.min(rows - 1);
        self.col = self.col.min(cols - 1);
    }

    /// The visible rows, trailing blanks trimmed.
    pub fn lines(&self) -> Vec<String> {
        self.grid.iter().map(|r| row_text(r)).collect()
    }

    pub fn screen(&self) -> String {
        self.lines().join("\n")
    }

    /// Scrollback and screen, oldest first.
    pub fn history(&self) -> String {
        let mut all = self.scrollback.clone();
        all.extend(self.lines());
        all.join("\n")
    }

    /// Whether a synchronized frame has started and not yet ended: the screen is half drawn.
    pub fn in_frame(&self) -> bool {
        self.in_frame
    }

    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }
}

fn row_text(row: &[char]) -> String {
    row.iter()
        .filter(|c| **c != CONTINUATION)
        .collect::<String>()
        .trim_end()
        .to_string()
}
