//! Byte-search primitives for grep: finding a literal (optionally ASCII-case-folded), finding
//! and counting newlines. The release build is optimised for size (`opt-level = "z"`), which
//! turns the loop vectoriser off, and `unsafe` SIMD is not allowed here, so these work eight
//! bytes at a time in a `u64` (SWAR), which is fast as plain scalar code.
//!
//! A literal is found the way the memchr crate's "packed pair" finder does it: two of its
//! bytes that are rare in source text are tested at their offsets for eight candidate
//! positions at once, and only positions where both agree are compared in full. A literal of
//! [`HORSPOOL_MIN`] bytes or more uses Horspool's skip loop instead, which measured several
//! times faster in the size-optimised build (it probes one byte per few bytes of text). Folding is ASCII-only, like
//! regex-lite's case-insensitivity: a non-ASCII byte always compares exactly.

/// A literal to search for, with its two rare bytes chosen once.
#[derive(Debug, Clone)]
pub struct Finder {
    /// Lowercase when `fold`.
    needle: Vec<u8>,
    fold: bool,
    /// Offsets in `needle` of the two bytes tested first (equal for a one-byte needle).
    rare: [usize; 2],
    /// Each rare byte repeated in every byte of a word.
    patterns: [u64; 2],
    /// `0x20` in every byte for a rare byte compared case-folded (an ASCII letter under
    /// `fold`), else 0: a byte ORed with it equals the lowercase letter exactly when it is
    /// that letter in either case.
    masks: [u64; 2],
    /// For a long needle: Horspool's shift for each byte under the needle's last position
    /// (0 for the last byte itself, in either case under `fold`, which stops the skip for a
    /// comparison).
    skip: Option<Box<[u32; 256]>>,
    /// Horspool's shift after a failed comparison.
    last_shift: usize,
}

/// Needles at least this long use Horspool.
const HORSPOOL_MIN: usize = 4;

impl Finder {
    /// Under `fold`, `needle` must be ASCII-lowercased.
    pub fn new(needle: &[u8], fold: bool) -> Finder {
        let rank = |i: &usize| frequency_rank(needle[*i]);
        let first = (0..needle.len()).min_by_key(rank).unwrap_or(0);
        let second = (0..needle.len())
            .filter(|&i| i != first)
            .min_by_key(rank)
            .unwrap_or(first);
        let byte = |i: usize| needle.get(i).copied().unwrap_or(0);
        let mask = |i: usize| match fold && byte(i).is_ascii_lowercase() {
            true => ONES * 0x20,
            false => 0,
        };
        let n = needle.len();
        let mut last_shift = n;
        let skip = (n >= HORSPOOL_MIN).then(|| {
            let mut shift = Box::new([n as u32; 256]);
            let mut set = |b: u8, value: u32| {
                shift[b as usize] = value;
                if fold {
                    shift[b.to_ascii_uppercase() as usize] = value;
                }
            };
            for (j, &b) in needle[..n - 1].iter().enumerate() {
                set(b, (n - 1 - j) as u32);
            }
            last_shift = shift[needle[n - 1] as usize] as usize;
            shift[needle[n - 1] as usize] = 0;
            if fold {
                shift[needle[n - 1].to_ascii_uppercase() as usize] = 0;
            }
            shift
        });
        Finder {
            needle: needle.to_vec(),
            fold,
            rare: [first, second],
            patterns: [ONES * byte(first) as u64, ONES * byte(second) as u64],
            masks: [mask(first), mask(second)],
            skip,
            last_shift,
        }
    }

    fn horspool(&self, haystack: &[u8], shift: &[u32; 256]) -> Option<usize> {
        let n = self.needle.len();
        let head = &self.needle[..n - 1];
        let mut at = 0;
        while at + n <= haystack.len() {
            let step = shift[haystack[at + n - 1] as usize] as usize;
            if step != 0 {
                at += step;
                continue;
            }
            let candidate = &haystack[at..at + n - 1];
            let found = match self.fold {
                true => candidate.eq_ignore_ascii_case(head),
                false => candidate == head,
            };
            if found {
                return Some(at);
            }
            at += self.last_shift;
        }
        None
    }

    pub fn len(&self) -> usize {
        self.needle.len()
    }

    fn is_at(&self, haystack: &[u8], at: usize) -> bool {
        let candidate = &haystack[at..at + self.needle.len()];
        match self.fold {
            true => candidate.eq_ignore_ascii_case(&self.needle),
            false => candidate == self.needle.as_slice(),
        }
    }

    /// The offset of the first occurrence in `haystack`.
    pub fn find(&self, haystack: &[u8]) -> Option<usize> {
        let n = self.needle.len();
        if n == 0 || haystack.len() < n {
            return None;
        }
        if let Some(shift) = &self.skip {
            return self.horspool(haystack, shift);
        }
        let last = haystack.len() - n;
        let [i1, i2] = self.rare;
        let [p1, p2] = self.patterns;
        let [m1, m2] = self.masks;
        let mut at = 0;
        // Eight candidate positions per step, while all eight are valid starts.
        while at + 8 <= last + 1 {
            let a = word(&haystack[at + i1..at + i1 + 8]);
            let b = word(&haystack[at + i2..at + i2 + 8]);
            let mut hits = zero_bytes((a | m1) ^ p1) & zero_bytes((b | m2) ^ p2);
            while hits != 0 {
                let j = hits.trailing_zeros() as usize / 8;
                if self.is_at(haystack, at + j) {
                    return Some(at + j);
                }
                hits &= hits - 1;
            }
            at += 8;
        }
        (at..=last).find(|&i| self.is_at(haystack, i))
    }
}

/// How common a byte is in source text and prose, lower is rarer: a rough order after the
/// table the memchr crate derives from a corpus. Only the order matters.
fn frequency_rank(b: u8) -> u8 {
    const COMMON: &[u8] = b" etaoinsrlhdcu\n\tmpf.,g(y)_=w;b\"v-:k/0x1'*2{}>3<[]j4#589q67z";
    match COMMON.iter().position(|&c| c == b) {
        Some(i) => 255 - i as u8,
        // Uppercase is rarer than any listed byte, other bytes rarer still.
        None if b.is_ascii_uppercase() => 100,
        None => 0,
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `x` that is zero, and no other bit (exact, unlike the usual
/// `(x - ONES) & !x` trick, whose borrows can mark a byte above a zero one).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

#[inline(always)]
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
        let needles: [&[u8]; 8] = [
            b"x",
            b"q_z",
            b"needle",
            b"a\xc3\x9f",
            b"k",
            b"-{}-",
            b"needle_in_the_haystack",
            b"abcabcab",
        ];
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
