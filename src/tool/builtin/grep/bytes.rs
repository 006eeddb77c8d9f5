//! Byte-search primitives for grep: finding a literal (optionally ASCII-case-folded), finding
//! and counting newlines. The release build is optimised for size (`opt-level = "z"`), which
//! turns the loop vectoriser off, and `unsafe` SIMD is not allowed here, so these work eight
//! bytes at a time in a `u64` (SWAR), which is fast as plain scalar code.
//!
//! A literal is found the way the memchr crate's "packed pair" finder does it: two of its
//! bytes that are rare in source text are looked for at their offsets, and only positions
//! where both agree are compared in full. The rarer one is tested for 32 candidate positions
//! per branch; the other only in a block where the first is present. This beat Horspool's
//! skip loop in the size-optimised build even for a 22-byte literal (each Horspool probe waits
//! on the last; these tests do not depend on each other). Folding is ASCII-only, like
//! regex-lite's case-insensitivity: a non-ASCII byte always compares exactly.
//!
//! The byte loops test 32 bytes per branch with the cheap zero-byte test (which can only err
//! towards a false hit, above a real one) and locate the byte exactly only in a block that
//! has one; words are loaded through `first_chunk`, which the size-optimised build compiles
//! to one load (a `copy_from_slice` stays a call).

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
}

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
        Finder {
            needle: needle.to_vec(),
            fold,
            rare: [first, second],
            patterns: [ONES * byte(first) as u64, ONES * byte(second) as u64],
            masks: [mask(first), mask(second)],
        }
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

    /// The first of the eight starts from `base` where the rarer byte is present (`first`
    /// has a zero byte there), the other rare byte too, and then the whole needle.
    #[inline(always)]
    fn confirm(&self, haystack: &[u8], base: usize, i2: usize, first: u64) -> Option<usize> {
        let second = (load(haystack, base + i2) | self.masks[1]) ^ self.patterns[1];
        let mut hits = zero_bytes(first) & zero_bytes(second);
        while hits != 0 {
            let j = hits.trailing_zeros() as usize / 8;
            if self.is_at(haystack, base + j) {
                return Some(base + j);
            }
            hits &= hits - 1;
        }
        None
    }

    /// The offset of the first occurrence in `haystack`.
    pub fn find(&self, haystack: &[u8]) -> Option<usize> {
        let n = self.needle.len();
        if n == 0 || haystack.len() < n {
            return None;
        }
        let last = haystack.len() - n;
        let [i1, i2] = self.rare;
        let [p1, m1] = [self.patterns[0], self.masks[0]];
        let mut at = 0;
        // 32 candidate starts per step, while all are valid (so every word loaded lies inside
        // `haystack`); one branch unless the rarer byte is somewhere among them.
        while at + 32 <= last + 1 {
            let a = (load(haystack, at + i1) | m1) ^ p1;
            let b = (load(haystack, at + i1 + 8) | m1) ^ p1;
            let c = (load(haystack, at + i1 + 16) | m1) ^ p1;
            let d = (load(haystack, at + i1 + 24) | m1) ^ p1;
            if has_zero(a) | has_zero(b) | has_zero(c) | has_zero(d) != 0 {
                let found = self
                    .confirm(haystack, at, i2, a)
                    .or_else(|| self.confirm(haystack, at + 8, i2, b))
                    .or_else(|| self.confirm(haystack, at + 16, i2, c))
                    .or_else(|| self.confirm(haystack, at + 24, i2, d));
                if found.is_some() {
                    return found;
                }
            }
            at += 32;
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
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` that is zero, and no other bit (exact, unlike the usual
/// `(x - ONES) & !x` trick, whose borrows can mark a byte above a zero one).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

/// Nonzero when `x` has a zero byte (the cheap test: it may also mark a byte above a zero
/// one, never misses one), to decide whether to look closer.
#[inline(always)]
fn has_zero(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// The word starting at `at` (little-endian); 0 if fewer than eight bytes are left.
#[inline(always)]
fn load(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        Some(chunk) => u64::from_le_bytes(*chunk),
        None => 0,
    }
}

/// The four words of a 32-byte block, each XORed with `pattern` (a byte's zero then marks it).
#[inline(always)]
fn block_words(block: &[u8], pattern: u64) -> [u64; 4] {
    // Spelled out: `array::map` stays a call in the size-optimised build.
    [
        load(block, 0) ^ pattern,
        load(block, 8) ^ pattern,
        load(block, 16) ^ pattern,
        load(block, 24) ^ pattern,
    ]
}

/// The offset of the first `byte` in `haystack`.
pub fn find_byte(haystack: &[u8], byte: u8) -> Option<usize> {
    let pattern = ONES * byte as u64;
    // Index loops: a `chunks_exact` iterator's `next` stays a call in this build.
    let mut at = 0;
    while at + 32 <= haystack.len() {
        let w = block_words(&haystack[at..], pattern);
        if has_zero(w[0]) | has_zero(w[1]) | has_zero(w[2]) | has_zero(w[3]) != 0 {
            for (i, x) in w.into_iter().enumerate() {
                let hits = zero_bytes(x);
                if hits != 0 {
                    return Some(at + i * 8 + hits.trailing_zeros() as usize / 8);
                }
            }
        }
        at += 32;
    }
    haystack[at..]
        .iter()
        .position(|&b| b == byte)
        .map(|i| at + i)
}

/// The offset of the last `byte` in `haystack`.
pub fn rfind_byte(haystack: &[u8], byte: u8) -> Option<usize> {
    let pattern = ONES * byte as u64;
    let mut end = haystack.len();
    while end >= 32 {
        let w = block_words(&haystack[end - 32..], pattern);
        if has_zero(w[0]) | has_zero(w[1]) | has_zero(w[2]) | has_zero(w[3]) != 0 {
            for (i, x) in w.into_iter().enumerate().rev() {
                let hits = zero_bytes(x);
                if hits != 0 {
                    let in_word = (63 - hits.leading_zeros() as usize) / 8;
                    return Some(end - 32 + i * 8 + in_word);
                }
            }
        }
        end -= 32;
    }
    haystack[..end].iter().rposition(|&b| b == byte)
}

/// The number of `\n` bytes in `haystack`.
pub fn count_newlines(haystack: &[u8]) -> usize {
    let pattern = ONES * b'\n' as u64;
    let (mut at, mut total) = (0, 0);
    while at + 32 <= haystack.len() {
        let w = block_words(&haystack[at..], pattern);
        let hits = [
            zero_bytes(w[0]),
            zero_bytes(w[1]),
            zero_bytes(w[2]),
            zero_bytes(w[3]),
        ];
        total += hits.iter().map(|h| h.count_ones() as usize).sum::<usize>();
        at += 32;
    }
    total + haystack[at..].iter().filter(|&&b| b == b'\n').count()
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
        // Short and long, and non-ASCII bytes that folding must leave exact.
        let needles: [&[u8]; 10] = [
            b"x",
            b"q_z",
            b"needle",
            b"a\xc3\x9f",
            b"k",
            b"-{}-",
            b"needle_in_the_haystack",
            b"abcabcab",
            b"copyright_x",
            b"stra\xc3\x9fe_stra\xc3\x9fe",
        ];
        for needle in needles {
            for fold in [false, true] {
                let lowered = needle.to_ascii_lowercase();
                let finder = Finder::new(&lowered, fold);
                for len in [0, 1, 5, 15, 16, 17, 31, 32, 33, 47, 64, 100] {
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

    /// One or two newlines at every offset of blocks around the 32-byte step, among bytes
    /// (`\x0b` is `\n` with its low bit set) that would fool an inexact zero-byte test.
    #[test]
    fn byte_helpers_agree_with_iterators_at_every_offset() {
        for len in [0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100] {
            for at in 0..=len {
                for second in [None, Some(at + 1), Some(at + 9), Some(at + 40)] {
                    let mut hay: Vec<u8> = (0..len).map(|i| b"a\x0b\x09b"[i % 4]).collect();
                    for i in [Some(at), second].into_iter().flatten() {
                        if i < len {
                            hay[i] = b'\n';
                        }
                    }
                    let nl = |b: &&u8| **b == b'\n';
                    let case = format!("len {len} at {at} second {second:?}");
                    assert_eq!(
                        count_newlines(&hay),
                        hay.iter().filter(nl).count(),
                        "{case}"
                    );
                    let first = hay.iter().position(|&b| b == b'\n');
                    assert_eq!(find_byte(&hay, b'\n'), first, "{case}");
                    let last = hay.iter().rposition(|&b| b == b'\n');
                    assert_eq!(rfind_byte(&hay, b'\n'), last, "{case}");
                }
            }
        }
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
