//! The frame writer. Output goes to the normal scrollback (no alternate screen): each frame
//! returns to the top of the bottom region drawn last time, clears from there down, prints
//! the lines that became final (they scroll up into history and are never touched again),
//! then redraws the bottom region (live output, menu or modal, composer, status) and puts
//! the cursor in the composer. A frame is one `write` wrapped in synchronized-output
//! escapes, so terminals that support mode 2026 paint it at once and nothing flickers.

use std::io::{self, Write};

use super::ansi::{self, Line, Palette};

pub struct Screen<W: Write> {
    out: W,
    palette: Palette,
    width: usize,
    height: usize,
    /// Widths of the bottom-region rows drawn last, to estimate reflow on resize.
    drawn: Vec<usize>,
    /// The row of the bottom region the cursor was left on.
    cursor_row: usize,
    cursor_shape: &'static str,
}

impl<W: Write> Screen<W> {
    pub fn new(out: W, palette: Palette, size: (usize, usize), cursor_shape: &'static str) -> Self {
        Screen {
            out,
            palette,
            width: size.0.max(10),
            height: size.1.max(3),
            drawn: Vec::new(),
            cursor_row: 0,
            cursor_shape,
        }
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    /// Bracketed paste on, unambiguous key reports where the terminal supports them (so
    /// Shift-Enter can be told from Enter) and the configured cursor shape.
    pub fn start(&mut self) -> io::Result<()> {
        let setup = format!(
            "{}{}{}",
            ansi::BRACKETED_PASTE_ON,
            ansi::KEYBOARD_REPORTS_ON,
            self.cursor_shape
        );
        self.write(&setup)
    }

    /// Records a new window size. When the width shrinks, terminals that reflow wrap the
    /// rows drawn last, so the cursor's distance from the region top grows; that is
    /// estimated here so the next frame clears the whole old region.
    pub fn resize(&mut self, size: (usize, usize)) {
        let (width, height) = (size.0.max(10), size.1.max(3));
        if width < self.width {
            let above: usize = self
                .drawn
                .iter()
                .take(self.cursor_row)
                .map(|w| w.div_ceil(width).max(1))
                .sum();
            self.cursor_row = above.min(height.saturating_sub(1));
        }
        self.width = width;
        self.height = height;
    }

    /// Draws one frame: `commit` goes to scrollback for good, `bottom` replaces the bottom
    /// region, and the cursor is placed at `cursor` (row within `bottom`, column) or hidden.
    pub fn draw(
        &mut self,
        commit: &[Line],
        bottom: &[Line],
        cursor: Option<(usize, usize)>,
    ) -> io::Result<()> {
        let mut frame = String::new();
        frame.push_str(ansi::BEGIN_SYNC);
        frame.push_str(ansi::HIDE_CURSOR);
        frame.push('\r');
        frame.push_str(&ansi::cursor_up(self.cursor_row));
        frame.push_str(ansi::CLEAR_BELOW);
        for line in commit {
            frame.push_str(&self.palette.render(line));
            frame.push_str("\r\n");
        }
        // The region must fit on the screen, or moving back to its top next frame would
        // fail; the oldest live rows give way first.
        let room = self.height.saturating_sub(1).max(1);
        let skip = bottom.len().saturating_sub(room);
        let rows: Vec<Line> = bottom[skip..]
            .iter()
            .map(|l| l.truncated(self.width.saturating_sub(1)))
            .collect();
        for (i, line) in rows.iter().enumerate() {
            if i > 0 {
                frame.push_str("\r\n");
            }
            frame.push_str(&self.palette.render(line));
        }
        let last = rows.len().saturating_sub(1);
        let cursor = cursor
            .filter(|(row, _)| *row >= skip)
            .map(|(row, col)| ((row - skip).min(last), col));
        match cursor {
            Some((row, col)) => {
                frame.push_str(&ansi::cursor_up(last - row));
                frame.push_str(&ansi::cursor_column(col.min(self.width.saturating_sub(1))));
                frame.push_str(ansi::SHOW_CURSOR);
                self.cursor_row = row;
            }
            None => {
                frame.push('\r');
                self.cursor_row = last;
            }
        }
        frame.push_str(ansi::END_SYNC);
        self.drawn = rows.iter().map(Line::width).collect();
        self.write(&frame)
    }

    /// Clears the bottom region and leaves the cursor at the start of a fresh line below the
    /// transcript (before exit or a suspend).
    pub fn leave(&mut self) -> io::Result<()> {
        let frame = format!(
            "{}\r{}{}{}{}{}{}",
            ansi::BEGIN_SYNC,
            ansi::cursor_up(self.cursor_row),
            ansi::CLEAR_BELOW,
            ansi::SHOW_CURSOR,
            ansi::BRACKETED_PASTE_OFF,
            ansi::KEYBOARD_REPORTS_OFF,
            ansi::END_SYNC
        );
        self.cursor_row = 0;
        self.drawn.clear();
        self.write(&frame)
    }

    /// Clears the visible screen (Ctrl-L); the next frame draws at the top.
    pub fn clear(&mut self) -> io::Result<()> {
        self.cursor_row = 0;
        self.drawn.clear();
        self.write("\x1b[H\x1b[2J")
    }

    fn write(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }

    #[cfg(test)]
    fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::ansi::ColorMode;

    /// Counts writes so tests can check a frame is one write.
    #[derive(Default)]
    struct Capture {
        bytes: Vec<u8>,
        writes: usize,
    }

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn screen() -> Screen<Capture> {
        Screen::new(
            Capture::default(),
            Palette::new(ColorMode::Plain),
            (20, 10),
            "",
        )
    }

    #[test]
    fn a_frame_is_one_synchronized_write() {
        let mut s = screen();
        s.draw(
            &[Line::plain("done")],
            &[Line::plain("live"), Line::plain("> hi")],
            Some((1, 4)),
        )
        .unwrap();
        let out = s.into_inner();
        assert_eq!(out.writes, 1);
        let text = String::from_utf8(out.bytes).unwrap();
        assert!(text.starts_with(ansi::BEGIN_SYNC) && text.ends_with(ansi::END_SYNC));
        let done = text.find("done\r\n").unwrap();
        let live = text.find("live\r\n> hi").unwrap();
        assert!(done < live, "{text:?}");
        assert!(
            text.contains("\x1b[5G"),
            "cursor column 4 -> CHA 5: {text:?}"
        );
    }

    #[test]
    fn next_frame_returns_to_the_region_top() {
        let mut s = screen();
        s.draw(
            &[],
            &[Line::plain("a"), Line::plain("b"), Line::plain("c")],
            Some((1, 0)),
        )
        .unwrap();
        s.draw(&[], &[Line::plain("x")], None).unwrap();
        let text = String::from_utf8(s.into_inner().bytes).unwrap();
        let second = text.rfind(ansi::BEGIN_SYNC).unwrap();
        assert!(
            text[second..].contains(&format!("\r{}{}", ansi::cursor_up(1), ansi::CLEAR_BELOW)),
            "cursor was left on row 1: {:?}",
            &text[second..]
        );
    }

    #[test]
    fn oversized_regions_drop_their_oldest_rows_and_rows_are_cut_to_width() {
        let mut s = screen();
        let bottom: Vec<Line> = (0..15)
            .map(|i| Line::plain(format!("row {i} {}", "x".repeat(30))))
            .collect();
        s.draw(&[], &bottom, Some((14, 0))).unwrap();
        assert_eq!(s.drawn.len(), 9);
        assert!(s.drawn.iter().all(|w| *w <= 19));
        assert_eq!(s.cursor_row, 8);
    }

    #[test]
    fn shrinking_estimates_reflowed_rows() {
        let mut s = screen();
        let wide = Line::plain("y".repeat(19));
        s.draw(&[], &[wide.clone(), wide, Line::plain("> ")], Some((2, 2)))
            .unwrap();
        s.resize((10, 10));
        assert_eq!(
            s.cursor_row, 4,
            "two 19-column rows become four at width 10"
        );
        s.resize((30, 10));
        assert_eq!(s.cursor_row, 4, "growing does not reflow hard rows");
    }
}
