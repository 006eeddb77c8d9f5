//! JSON text for a [`serde_json::Value`], byte for byte what `serde_json::to_writer` writes
//! (a leaf: it uses nothing else in the crate).
//!
//! serde_json escapes a string one byte at a time, and in the size-optimised release build
//! that costs about 26 instructions per byte; a long reply is written twice (the request
//! transcript and the session file). Here a string is scanned eight bytes at a time for the
//! bytes JSON must escape (`"`, `\` and the controls below 0x20) and each clean run between
//! them is copied with one `extend_from_slice`.
//!
//! The output is serde_json's compact form: no whitespace, object keys in the map's order,
//! the two-character escapes `\"` `\\` `\b` `\f` `\n` `\r` `\t`, `\u00xx` (lowercase hex) for
//! the other control bytes, nothing else escaped; numbers are written by serde_json itself.

use serde_json::Value;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Appends `value` as JSON to `out`.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// How many bytes [`write_value`] appends for `value`, found without writing them (strings
/// are scanned for escapes the same eight bytes at a time).
pub fn value_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => {
            let mut text = Vec::new();
            write_number(&mut text, number);
            text.len()
        }
        Value::String(text) => str_len(text),
        // Brackets and the commas between items.
        Value::Array(items) => {
            2 + items.len().saturating_sub(1) + items.iter().map(value_len).sum::<usize>()
        }
        // Braces, the commas between entries and a colon per entry.
        Value::Object(map) => {
            2 + map.len().saturating_sub(1)
                + map
                    .iter()
                    .map(|(key, item)| str_len(key) + 1 + value_len(item))
                    .sum::<usize>()
        }
    }
}

/// Numbers are rare in what is written here and short: serde_json writes them, so they are
/// its digits exactly (integers as they are, floats in their shortest form).
fn write_number(out: &mut Vec<u8>, number: &serde_json::Number) {
    if serde_json::to_writer(&mut *out, number).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Appends `text` as a JSON string: quoted, escaped as serde_json escapes it.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let end = clean_run_end(bytes, start);
        out.extend_from_slice(&bytes[start..end]);
        let Some(&byte) = bytes.get(end) else {
            break;
        };
        push_escape(out, byte);
        start = end + 1;
    }
    out.push(b'"');
}

/// How many bytes [`write_str`] appends for `text`.
pub fn str_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut len = bytes.len() + 2;
    let mut at = clean_run_end(bytes, 0);
    while let Some(&byte) = bytes.get(at) {
        len += escape_len(byte) - 1;
        at = clean_run_end(bytes, at + 1);
    }
    len
}

/// Whether JSON needs `byte` escaped.
#[inline(always)]
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The high bit of every byte of `word` that is below 0x20, `"` or `\`, and possibly of
/// bytes above such a byte (a borrow carries upwards); the lowest set bit is always exact.
#[inline(always)]
fn escape_mask(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & HIGHS
}

/// The first byte at or after `at` that needs escaping, or the end of `bytes`: where a plain
/// run of a JSON string ends, whether it is being written or read.
#[inline(always)]
pub fn clean_run_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mask = escape_mask(word_at(chunk));
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    if at >= bytes.len() {
        return at;
    }
    // Fewer than eight bytes left: the slice's last eight, when it has that many, with the
    // ones before `at` made plain (a byte there that needs escaping would make the mask of
    // the bytes above it inexact).
    if let Some(last) = bytes.len().checked_sub(8) {
        let before = 8 * (at - last);
        let below = (1u64 << before) - 1;
        let word = (word_at(&bytes[last..]) & !below) | ((ONES * u64::from(b'a')) & below);
        let mask = escape_mask(word);
        return match mask {
            0 => bytes.len(),
            _ => last + (mask.trailing_zeros() / 8) as usize,
        };
    }
    while at < bytes.len() && !needs_escape(bytes[at]) {
        at += 1;
    }
    at
}

/// The first eight bytes of `bytes` as a word, in little-endian order, so the lowest set bit
/// of a mask is the first byte in memory. (Callers pass at least eight bytes.)
#[inline(always)]
fn word_at(bytes: &[u8]) -> u64 {
    bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The escape serde_json writes for `byte`, one that [`needs_escape`].
fn push_escape(out: &mut Vec<u8>, byte: u8) {
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let hex = |nibble: u8| HEX[usize::from(nibble & 0xf)];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex(byte >> 4), hex(byte)]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// How many bytes [`push_escape`] writes for `byte`.
fn escape_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 2,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A small deterministic generator, so a failure is reproducible.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// What serde_json writes, and what this module writes and measures, agree.
    fn check(value: &Value) {
        let expected = serde_json::to_vec(value).unwrap();
        let mut written = Vec::new();
        write_value(&mut written, value);
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&expected),
            "for {value:?}"
        );
        assert_eq!(written, expected);
        assert_eq!(value_len(value), expected.len(), "length of {value:?}");
        // Appending keeps what was there.
        let mut after = b"prefix".to_vec();
        write_value(&mut after, value);
        assert_eq!(&after[6..], &expected[..]);
    }

    /// Characters of every kind the escaper must tell apart.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "0",
        " ",
        "\"",
        "\\",
        "/",
        "\n",
        "\r",
        "\t",
        "\u{8}",
        "\u{c}",
        "\u{0}",
        "\u{1}",
        "\u{b}",
        "\u{1f}",
        "\u{7f}",
        "\u{80}",
        "é",
        "中",
        "\u{2028}",
        "\u{2029}",
        "\u{feff}",
        "\u{1f600}",
        "\u{10ffff}",
        "!",
        "~",
        "\u{1b}[0m",
    ];

    #[test]
    fn every_byte_below_0x80_is_written_as_serde_writes_it() {
        for byte in 0u8..0x80 {
            let alone = char::from(byte).to_string();
            check(&Value::String(alone.clone()));
            // At every position of an eight-byte word, in runs long enough for the fast scan.
            for at in 0..20 {
                let mut text = "x".repeat(20);
                text.replace_range(at..at + 1, &alone);
                check(&Value::String(text));
            }
        }
    }

    #[test]
    fn generated_strings_are_written_as_serde_writes_them() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..3000 {
            let pieces = match round % 4 {
                0 => rng.below(8),
                1 => rng.below(40),
                2 => rng.below(200),
                _ => rng.below(1200),
            };
            let mut text = String::new();
            for _ in 0..pieces {
                // Mostly plain text with the odd special character, as real text is.
                if rng.below(4) == 0 {
                    text.push_str(PIECES[rng.below(PIECES.len())]);
                } else {
                    let run = rng.below(24);
                    text.extend((0..run).map(|i| char::from(b'a' + (i % 26) as u8)));
                }
            }
            check(&Value::String(text.clone()));
            check(&json!({ text.clone(): text }));
        }
    }

    /// The word scan finds what a byte-by-byte scan finds, from every starting point (after
    /// a byte that needs escaping too, whose borrow could spoil the mask above it), over
    /// bytes of every value.
    #[test]
    fn the_word_scan_stops_where_a_byte_scan_stops() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let interesting = [
            0u8, 0x1f, 0x20, b'"', b'\\', 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff, b'a',
        ];
        for round in 0..4000 {
            let len = rng.below(40);
            let bytes: Vec<u8> = (0..len)
                .map(|_| match round % 3 {
                    0 => interesting[rng.below(interesting.len())],
                    1 => rng.below(256) as u8,
                    // Mostly plain, so the scan runs over whole words.
                    _ if rng.below(12) == 0 => interesting[rng.below(5)],
                    _ => b'a' + rng.below(26) as u8,
                })
                .collect();
            for from in 0..=len {
                let expected = (from..len)
                    .find(|&at| needs_escape(bytes[at]))
                    .unwrap_or(len);
                assert_eq!(
                    clean_run_end(&bytes, from),
                    expected,
                    "{bytes:?} from {from}"
                );
            }
        }
    }

    #[test]
    fn long_strings_cross_every_alignment() {
        for lead in 0..17 {
            for special in ["\"", "\\", "\n", "\u{1}", "\u{1f}", "é", "\u{1f600}"] {
                for tail in [0, 1, 7, 8, 9, 64] {
                    let text = format!("{}{special}{}", "p".repeat(lead), "q".repeat(tail));
                    check(&Value::String(text));
                }
            }
        }
        check(&Value::String("long clean text ".repeat(5000)));
        check(&Value::String("\"\\\n".repeat(3000)));
    }

    #[test]
    fn numbers_and_structures_are_written_as_serde_writes_them() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(0.1),
            json!(-0.0),
            json!(1e300),
            json!(-1.5e-300),
            json!(f64::MAX),
            json!(f64::MIN_POSITIVE),
            json!(1.0),
            json!(123456789.125),
            json!(f64::NAN),
            json!([]),
            json!({}),
            json!([[]]),
            json!([{}, [], "", 0]),
            json!({"": ""}),
            json!({"b": 1, "a": [1, 2.5, {"z\n": null, "é": [true, false]}], "c": {}}),
            json!({"role": "assistant", "content": "x\ty", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "ls", "arguments": "{\"path\":\"a\\\\b\"}"}}
            ]}),
        ];
        for value in &values {
            check(value);
        }
        let mut rng = Rng(7);
        let mut deep = json!("leaf");
        for level in 0..40 {
            deep = match rng.below(3) {
                0 => json!([deep, level, -level, f64::from(level) / 3.0]),
                1 => json!({ format!("k{level}\u{1}"): deep, "n": null }),
                _ => json!([deep]),
            };
            check(&deep);
        }
    }
}
