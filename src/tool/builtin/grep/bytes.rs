//! Byte-search primitives for grep: finding a literal (optionally ASCII-case-folded), finding
//! and counting newlines. The release build is optimised for size (`opt-level = "z"`), which
//! turns the loop vectoriser off, and `unsafe` SIMD is not allowed here, so these are written
//! to be fast as plain scalar code: a literal is found with Horspool's skip loop (about one
//! probe per needle length of text), newlines eight bytes at a time in a `u64` (SWAR).
//! Folding is ASCII-only, like regex-lite's case-insensitivity: a non-ASCII byte always
//! compares exactly.

/// A literal to search for, with its skip table built once.
#[derive(Debug, Clone)]
pub struct Finder {
    /// Lowercase when `fold`.
    needle: Vec<u8>,
    fold: bool,
    /// How far the needle may move when the text byte under its last position is `b`: the
    /// distance from `b`'s last occurrence in the needle (its last byte excluded) to the end.
    shift: Box<[u32; 256]>,
}

impl Finder {
    /// Under `fold`, `needle` must be ASCII-lowercased.
    pub fn new(needle: &[u8], fold: bool) -> Finder {
        let n = needle.len();
        let mut shift = Box::new([n.max(1) as u32; 256]);
        for (j, &b) in needle.iter().enumerate().take(n.saturating_sub(1)) {
            let distance = (n - 1 - j) as u32;
            shift[b as usize] = distance;
            if fold {
                shift[b.to_ascii_uppercase() as usize] = distance;
            }
        }
        Finder {
            needle: needle.to_vec(),
            fold,
            shift,
        }
    }

    pub fn len(&self) -> usize {
        self.needle.len()
    }

    fn same(&self, a: u8, b: u8) -> bool {
        a == b || (self.fold && a.eq_ignore_ascii_case(&b))
    }

    /// The offset of the first occurrence in `haystack`.
    pub fn find(&self, haystack: &[u8]) -> Option<usize> {
        let n = self.needle.len();
        if n == 0 || haystack.len() < n {
            return None;
        }
        let last = self.needle[n - 1];
        let mut at = 0;
        while at + n <= haystack.len() {
            let b = haystack[at + n - 1];
            if self.same(b, last) {
                let candidate = &haystack[at..at + n - 1];
                let head = &self.needle[..n - 1];
                let found = match self.fold {
                    true => candidate.eq_ignore_ascii_case(head),
                    false => candidate == head,
                };
                if found {
                    return Some(at);
                }
            }
            at += self.shift[b as usize] as usize;
        }
        None
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `x` that is zero, and no other bit (exact, unlike the usual
/// `(x - ONES) & !x` trick, whose borrows can mark a byte above a zero one).
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

fn word(chunk: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(chunk);
    u64::from_le_bytes(bytes)
}

/// The offset of the first `byte` in `haystack`.
pub fn find_byte(haystack: &[u8], byte: u8) -> Option<usize> {
    let pattern = ONES * byte as u64;
    let mut chunks = haystack.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let hits = zero_bytes(word(chunk) ^ pattern);
        if hits != 0 {
            return Some(at + hits.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == byte)
        .map(|i| at + i)
}

/// The offset of the last `byte` in `haystack`.
pub fn rfind_byte(haystack: &[u8], byte: u8) -> Option<usize> {
    let pattern = ONES * byte as u64;
    let mut chunks = haystack.rchunks_exact(8);
    let mut end = haystack.len();
    for chunk in &mut chunks {
        let hits = zero_bytes(word(chunk) ^ pattern);
        if hits != 0 {
            return Some(end - 8 + (63 - hits.leading_zeros() as usize) / 8);
        }
        end -= 8;
    }
    chunks.remainder().iter().rposition(|&b| b == byte)
}

/// The number of `\n` bytes in `haystack`.
pub fn count_newlines(haystack: &[u8]) -> usize {
    let pattern = ONES * b'\n' as u64;
    let mut chunks = haystack.chunks_exact(8);
    let mut total = 0;
    for chunk in &mut chunks {
        total += zero_bytes(word(chunk) ^ pattern).count_ones() as usize;
    }
    total + chunks.remainder().iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(haystack: &[u8], needle: &[u8], fold: bool) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| match fold {
            true => w.eq_ignore_ascii_case(needle),
            false => w == needle,
        })
    }

    /// Every offset, near chunk edges included, agrees with a naive search.
    #[test]
    fn finder_agrees_with_a_naive_search_at_every_offset() {
        let needles: [&[u8]; 6] = [b"x", b"q_z", b"needle", b"a\xc3\x9f", b"k", b"-{}-"];
        for needle in needles {
            for fold in [false, true] {
                let lowered = needle.to_ascii_lowercase();
                let finder = Finder::new(&lowered, fold);
                for len in [0, 1, 5, 31, 32, 33, 64, 100] {
                    for at in 0..=len {
                        let mut hay: Vec<u8> = (0..len + needle.len())
                            .map(|i| b"abcdefgh ij\n"[i % 12])
                            .collect();
                        if at + needle.len() <= hay.len() {
                            hay[at..at + needle.len()].copy_from_slice(needle);
                        }
                        if fold {
                            hay.make_ascii_uppercase();
                        }
                        let expected = naive(&hay, &lowered, fold);
                        assert_eq!(
                            finder.find(&hay),
                            expected,
                            "{needle:?} fold {fold} len {len} at {at}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn folding_is_ascii_only() {
        let finder = Finder::new("straße".as_bytes(), true);
        assert_eq!(finder.find("STRAßE".as_bytes()), Some(0));
        assert_eq!(finder.find("STRAẞE".as_bytes()), None);
        let kelvin = Finder::new(b"k", true);
        assert_eq!(kelvin.find("\u{212a}".as_bytes()), None);
        assert_eq!(kelvin.find(b"K"), Some(0));
        // `|0x20` must not make '@' match '`' or '[' match '{'.
        assert_eq!(Finder::new(b"`{", true).find(b"@["), None);
    }

    #[test]
    fn newline_helpers_agree_with_iterators() {
        for len in [0, 1, 31, 32, 33, 254, 255, 256, 600] {
            let hay: Vec<u8> = (0..len)
                .map(|i| if i % 7 == 3 { b'\n' } else { b'a' })
                .collect();
            let nl = |b: &&u8| **b == b'\n';
            assert_eq!(count_newlines(&hay), hay.iter().filter(nl).count());
            assert_eq!(find_byte(&hay, b'\n'), hay.iter().position(|&b| b == b'\n'));
            assert_eq!(
                rfind_byte(&hay, b'\n'),
                hay.iter().rposition(|&b| b == b'\n')
            );
        }
    }
}
