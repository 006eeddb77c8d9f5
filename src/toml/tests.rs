//! The TOML module against the spec: every syntax feature, every error class with its span,
//! the nesting bound, never panicking on broken input, serde both ways, and a differential
//! check against Python's `tomllib` when a Python 3.11+ is on the PATH.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::*;

/// Every feature at once; also the seed of the broken-input tests.
const RICH: &str = "\u{feff}# A comment, then every kind of value.\r
title = \"TOML \\\"rich\\\" \\u00e9\\U0001F600\\b\\t\\n\\f\\r\\\\\"\r
literal = 'C:\\Users\\nodejs'\r
\"quoted key\" = 1\r
'literal key' = 2\r
\"\" = \"empty key\"\r
dotted . \"and quoted\".key = true\r
1234 = \"bare digits\"\r
multi = \"\"\"\r
Roses are red\r
Violets are \\\r
   blue \"\"quoted\"\" \"\"\"\"\r
multi_lit = '''\r
first newline trimmed ''two'' '''''\r
ints = [+99, -17, 0, +0, -0, 1_000, 0xDEAD_beef, 0o755, 0b1101, 9223372036854775807, -9223372036854775808]\r
floats = [+1.0, 2.5, -0.01, 5e+22, 1e06, -2E-2, 6.626e-34, 224_617.445_991, 0.0, -0.0]\r
specials = [inf, +inf, -inf, nan, +nan, -nan]\r
bools = [true, false]\r
dates = [1979-05-27T07:32:00Z, 1979-05-27T00:32:00-07:00, 1979-05-27 07:32:00.999999+01:30, 1979-05-27t07:32:00z, 1979-05-27T07:32:00, 1979-05-27, 07:32:00, 00:32:00.5, 2000-02-29]\r
mixed = [ 1, 'two', [3.0, { four = 4 }], # a comment inside\r
  \"five\", ]\r
inline = { a = 1, b.c = \"dotted\", d = { e = [] }, f = {} }\r
\r
[server]\r
host = \"localhost\"\r
port.number = 8080\r
\r
[ server . \"tls settings\" ]   # whitespace in the header\r
enabled = false\r
\r
[[fruit]]\r
name = \"apple\"\r
\r
[fruit.physical]\r
color = \"red\"\r
\r
[[fruit.variety]]\r
name = \"red delicious\"\r
\r
[[fruit.variety]]\r
name = \"granny smith\"\r
\r
[[fruit]]\r
name = \"banana\"\r
\r
[x.y.z]\r
deep = 1\r
[x]   # defining a super-table after its sub-table\r
shallow = 2\r
";

fn table(text: &str) -> Table {
    from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
}

fn s(text: &str) -> Value {
    Value::String(text.to_string())
}

fn get<'a>(table: &'a Table, path: &str) -> &'a Value {
    let mut parts = path.split('/');
    let first = parts.next().unwrap_or_default();
    let mut value = table
        .get(first)
        .unwrap_or_else(|| panic!("no {first} in {table:?}"));
    for part in parts {
        value = match part.parse::<usize>() {
            Ok(i) => &value
                .as_array()
                .unwrap_or_else(|| panic!("{path}: {value:?}"))[i],
            Err(_) => value
                .get(part)
                .unwrap_or_else(|| panic!("{path}: no {part} in {value:?}")),
        };
    }
    value
}

#[test]
fn the_rich_document_reads_as_the_spec_says() {
    let t = table(RICH);
    assert_eq!(
        get(&t, "title"),
        &s("TOML \"rich\" \u{e9}\u{1F600}\u{8}\t\n\u{c}\r\\")
    );
    assert_eq!(get(&t, "literal"), &s("C:\\Users\\nodejs"));
    assert_eq!(get(&t, "quoted key"), &Value::Integer(1));
    assert_eq!(get(&t, "literal key"), &Value::Integer(2));
    assert_eq!(get(&t, ""), &s("empty key"));
    assert_eq!(get(&t, "dotted/and quoted/key"), &Value::Boolean(true));
    assert_eq!(get(&t, "1234"), &s("bare digits"));
    // CRLF becomes LF inside multi-line strings; a line-ending backslash eats the break and
    // the indentation; up to two quotes may touch the closing delimiter.
    assert_eq!(
        get(&t, "multi"),
        &s("Roses are red\nViolets are blue \"\"quoted\"\" \"")
    );
    assert_eq!(get(&t, "multi_lit"), &s("first newline trimmed ''two'' ''"));
    let ints: Vec<i64> = get(&t, "ints")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_integer().unwrap())
        .collect();
    assert_eq!(
        ints,
        [
            99,
            -17,
            0,
            0,
            0,
            1000,
            0xDEAD_BEEF,
            0o755,
            0b1101,
            i64::MAX,
            i64::MIN
        ]
    );
    let floats: Vec<f64> = get(&t, "floats")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Float(f) => *f,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        floats,
        [
            1.0,
            2.5,
            -0.01,
            5e22,
            1e6,
            -2e-2,
            6.626e-34,
            224_617.445_991,
            0.0,
            -0.0
        ]
    );
    assert!(floats[9].is_sign_negative());
    let specials = get(&t, "specials").as_array().unwrap();
    let specials: Vec<f64> = specials
        .iter()
        .map(|v| match v {
            Value::Float(f) => *f,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        &specials[..3],
        [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY]
    );
    assert!(specials[3..].iter().all(|f| f.is_nan()));
    assert!(specials[5].is_sign_negative());
    assert_eq!(
        get(&t, "bools"),
        &Value::Array(vec![Value::Boolean(true), Value::Boolean(false)])
    );
    assert_eq!(get(&t, "dates/2"), &s("1979-05-27 07:32:00.999999+01:30"));
    assert_eq!(get(&t, "dates/6"), &s("07:32:00"));
    assert_eq!(get(&t, "mixed/2/1/four"), &Value::Integer(4));
    assert_eq!(get(&t, "mixed/3"), &s("five"));
    assert_eq!(get(&t, "inline/b/c"), &s("dotted"));
    assert_eq!(get(&t, "inline/d/e"), &Value::Array(vec![]));
    assert_eq!(get(&t, "inline/f"), &Value::Table(Table::new()));
    assert_eq!(get(&t, "server/port/number"), &Value::Integer(8080));
    assert_eq!(
        get(&t, "server/tls settings/enabled"),
        &Value::Boolean(false)
    );
    assert_eq!(get(&t, "fruit/0/physical/color"), &s("red"));
    assert_eq!(get(&t, "fruit/0/variety/1/name"), &s("granny smith"));
    assert_eq!(get(&t, "fruit/1/name"), &s("banana"));
    assert_eq!(get(&t, "x/y/z/deep"), &Value::Integer(1));
    assert_eq!(get(&t, "x/shallow"), &Value::Integer(2));
}

#[test]
fn date_times_keep_their_text_in_the_document() {
    let doc = parse(RICH).unwrap();
    let Some(DocValue::Array(dates)) = doc.table().get("dates").map(|e| &e.item.value) else {
        panic!("no dates");
    };
    let texts: Vec<&str> = dates
        .iter()
        .map(|d| match &d.value {
            DocValue::Datetime(text) => text.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "1979-05-27T07:32:00Z",
            "1979-05-27T00:32:00-07:00",
            "1979-05-27 07:32:00.999999+01:30",
            "1979-05-27t07:32:00z",
            "1979-05-27T07:32:00",
            "1979-05-27",
            "07:32:00",
            "00:32:00.5",
            "2000-02-29",
        ]
    );
}

#[test]
fn tables_may_be_reached_as_the_spec_allows() {
    for text in [
        "[a.b.c]\n[a]\nx = 1\n",
        "[a.b]\n[a]\n",
        "[fruit]\napple.color = 'red'\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true\n",
        "[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n",
        "[[a]]\n[a.b]\nx = 1\n[[a]]\n[a.b]\nx = 2\n",
        "a.b = 1\na.c = 2\n[a.d]\n",
        "[a.b.c]\n[a]\nb.d = 1\n",
        "t = {a.b = 1, a.c = 2}\n",
        "\u{feff}",
        "",
        "\n\r\n# only a comment",
    ] {
        table(text);
    }
}

/// (document, message, span of the error).
const ERRORS: &[(&str, &str, Range<usize>)] = &[
    ("model = 1\nmodel = 2\n", "duplicate key `model`", 10..15),
    ("a.b = 1\na.b = 2\n", "duplicate key `a.b`", 10..11),
    ("a = { b = 1, b = 2 }", "duplicate key `b`", 13..14),
    ("a = 1\n[a]\n", "duplicate table `a`", 7..8),
    ("[a]\n[a]\n", "duplicate table `a`", 5..6),
    ("[a]\nb.c = 1\n[a.b]\n", "duplicate table `a.b`", 15..16),
    ("a.b = 1\n[a]\n", "duplicate table `a`", 9..10),
    ("[[a]]\n[a]\n", "duplicate table `a`", 7..8),
    ("a = {}\n[a]\n", "duplicate table `a`", 8..9),
    ("a = [1]\n[[a]]\n", "`a` is not an array of tables", 10..11),
    ("[a]\n[[a]]\n", "`a` is not an array of tables", 6..7),
    ("a = 1\n[a.b]\n", "`a` is not a table", 7..8),
    ("a = 1\na.b = 2\n", "`a` is not a table", 6..7),
    ("a = [{}]\n[a.b]\n", "`a` is not a table", 10..11),
    (
        "a = { b = 1 }\n[a.c]\n",
        "inline table `a` cannot be extended",
        15..16,
    ),
    (
        "a = { b = 1 }\na.c = 2\n",
        "inline table `a` cannot be extended",
        14..15,
    ),
    (
        "a = { b = { c = 1 }, b.d = 2 }",
        "inline table `b` cannot be extended",
        21..22,
    ),
    (
        "[a.b]\nx = 1\n[a]\nb.y = 2\n",
        "table `b` is defined by a header; dotted keys cannot extend it",
        16..17,
    ),
    ("a b = 1", "expected `=` after a key", 2..3),
    ("a", "expected `=` after a key", 1..1),
    ("a = { b 1 }", "expected `=` after a key", 8..9),
    ("= 1", "expected a key", 0..1),
    ("a. = 1", "expected a key", 3..4),
    ("a = { b = 1, }", "expected a key", 13..14),
    (
        "\"\"\"k\"\"\" = 1",
        "a key cannot be a multi-line string",
        0..1,
    ),
    (
        "[\"\"\"k\"\"\"]",
        "a key cannot be a multi-line string",
        1..2,
    ),
    ("a =", "expected a value", 3..3),
    ("a = # nothing", "expected a value", 4..5),
    ("a = [1,,2]", "expected a value", 7..8),
    ("a = \"\\q\"", "invalid escape `\\q`", 5..7),
    ("a = \"\\ \"", "invalid escape `\\ `", 5..7),
    ("a = \"\\é\"", "invalid escape `\\é`", 5..8),
    ("a = \"\"\"\\x\"\"\"", "invalid escape `\\x`", 7..9),
    ("a = \"\\uD800\"", "invalid unicode escape `\\uD800`", 5..11),
    ("a = \"\\u12\"", "invalid unicode escape `\\u12\"`", 5..10),
    // The span and the text shown end at a character boundary, not inside the `é`.
    ("a = \"\\u000é\"", "invalid unicode escape `\\u000é`", 5..12),
    (
        "a = \"\\u\u{1b}[2J\"",
        "invalid unicode escape `\\u\\u{1b}[2J`",
        5..11,
    ),
    (
        "a = \"\\U00110000\"",
        "invalid unicode escape `\\U00110000`",
        5..15,
    ),
    ("a = \"abc", "unterminated string", 4..5),
    ("a = \"abc\nb = 1", "unterminated string", 4..5),
    ("a = 'abc\n'", "unterminated string", 4..5),
    ("a = \"\"\"abc\"\"", "unterminated string", 4..5),
    ("a = '''abc", "unterminated string", 4..5),
    ("a = \"\\", "unterminated string", 5..6),
    ("a = \"x\u{1}\"", "control character in a string", 6..7),
    ("a = 'x\u{7f}'", "control character in a string", 6..7),
    (
        "a = \"\"\"x\u{0}\"\"\"",
        "control character in a string",
        8..9,
    ),
    ("a = \"\"\"x\ry\"\"\"", "unterminated string", 4..5),
    (
        "a = \"\"\"x\"\"\"\"\"\"",
        "too many quotes at the end of a multi-line string",
        8..9,
    ),
    ("# \u{7f}\n", "control character in a comment", 2..3),
    ("a = 1 # \u{0}", "control character in a comment", 8..9),
    (
        "a = 1\r",
        "a carriage return must be followed by a line feed",
        5..6,
    ),
    (
        "a = 1\rb = 2",
        "a carriage return must be followed by a line feed",
        5..6,
    ),
    ("a = 1 b = 2", "expected a new line after a value", 6..7),
    (
        "[a] b = 1",
        "expected a new line after a table header",
        4..5,
    ),
    ("[a\nb = 1", "unclosed table, expected `]`", 2..3),
    ("[a.]", "expected a key", 3..4),
    ("[]", "expected a key", 1..2),
    ("[[a]\n", "unclosed array of tables, expected `]]`", 3..4),
    ("[[a] ]\n", "unclosed array of tables, expected `]]`", 3..4),
    ("a = [1 2]", "expected `,` or `]` in an array", 7..8),
    ("a = [1", "expected `,` or `]` in an array", 6..6),
    (
        "a = { b = 1\n}",
        "expected `,` or `}` in an inline table",
        11..12,
    ),
    (
        "a = { b = 1 c = 2 }",
        "expected `,` or `}` in an inline table",
        12..13,
    ),
    ("a = {\nb = 1}", "expected a key", 5..6),
    ("a = 01", "invalid number `01`", 4..6),
    ("a = 1__0", "invalid number `1__0`", 4..8),
    ("a = _1", "invalid value `_1` (a string needs quotes)", 4..6),
    ("a = 1_", "invalid number `1_`", 4..6),
    ("a = 0x", "invalid number `0x`", 4..6),
    ("a = 0xG", "invalid number `0xG`", 4..7),
    ("a = 0o8", "invalid number `0o8`", 4..7),
    ("a = 0b2", "invalid number `0b2`", 4..7),
    ("a = +0x1", "invalid number `+0x1`", 4..8),
    ("a = 0X1", "invalid number `0X1`", 4..7),
    ("a = 1.", "invalid number `1.`", 4..6),
    ("a = .5", "invalid value `.5` (a string needs quotes)", 4..6),
    ("a = 1e", "invalid number `1e`", 4..6),
    ("a = 1.e5", "invalid number `1.e5`", 4..8),
    ("a = 03.14", "invalid number `03.14`", 4..9),
    ("a = 1_.0", "invalid number `1_.0`", 4..8),
    ("a = 1e_1", "invalid number `1e_1`", 4..8),
    ("a = ++1", "invalid number `++1`", 4..7),
    (
        "a = infinity",
        "invalid value `infinity` (a string needs quotes)",
        4..12,
    ),
    (
        "a = Inf",
        "invalid value `Inf` (a string needs quotes)",
        4..7,
    ),
    (
        "a = True",
        "invalid value `True` (a string needs quotes)",
        4..8,
    ),
    (
        "a = hello",
        "invalid value `hello` (a string needs quotes)",
        4..9,
    ),
    (
        "a = 9223372036854775808",
        "integer `9223372036854775808` does not fit in 64 bits",
        4..23,
    ),
    (
        "a = -9223372036854775809",
        "integer `-9223372036854775809` does not fit in 64 bits",
        4..24,
    ),
    (
        "a = 0x8000000000000000",
        "integer `0x8000000000000000` does not fit in 64 bits",
        4..22,
    ),
    ("a = 1979-02-29", "invalid date or time `1979-02-29`", 4..14),
    ("a = 1979-13-01", "invalid date or time `1979-13-01`", 4..14),
    ("a = 1979-05-00", "invalid date or time `1979-05-00`", 4..14),
    ("a = 1979-5-27", "invalid date or time `1979-5-27`", 4..13),
    ("a = 24:00:00", "invalid date or time `24:00:00`", 4..12),
    ("a = 07:60:00", "invalid date or time `07:60:00`", 4..12),
    ("a = 07:32", "invalid date or time `07:32`", 4..9),
    ("a = 07:32:00.", "invalid date or time `07:32:00.`", 4..13),
    (
        "a = 1979-05-27T07:32:00+24:00",
        "invalid date or time `1979-05-27T07:32:00+24:00`",
        4..29,
    ),
    (
        "a = 1979-05-27T07:32:00+0700",
        "invalid date or time `1979-05-27T07:32:00+0700`",
        4..28,
    ),
    (
        "a = 1979-05-27 07:32",
        "invalid date or time `1979-05-27 07:32`",
        4..20,
    ),
    (
        "a = 1979-05-27T07:32:00Zz",
        "invalid date or time `1979-05-27T07:32:00Zz`",
        4..25,
    ),
    (
        "a = 1979-05-27X",
        "invalid date or time `1979-05-27X`",
        4..15,
    ),
];

#[test]
fn every_error_is_one_line_with_the_span_it_is_about() {
    let mut wrong = Vec::new();
    for (text, message, span) in ERRORS {
        match parse(text) {
            Ok(_) => wrong.push(format!("{text:?} parses")),
            Err(err) if (err.message(), err.span()) != (*message, Some(span.clone())) => {
                wrong.push(format!("{text:?}: {:?} at {:?}", err.message(), err.span()));
            }
            Err(err) => {
                assert_eq!(err.to_string(), format!("toml: {message}"));
                // A caller may cut the text at the span.
                assert!(text.get(span.clone()).is_some(), "{text:?}: {span:?}");
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "expected as listed, got:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn nesting_is_bounded_and_deep_input_does_not_overflow_the_stack() {
    let arrays = |n: usize| format!("a = {}{}", "[".repeat(n), "]".repeat(n));
    table(&arrays(MAX_DEPTH - 1));
    let err = parse(&arrays(MAX_DEPTH)).unwrap_err();
    assert_eq!(err.message(), "nesting deeper than 64 levels");
    assert_eq!(err.span(), Some(4 + MAX_DEPTH - 1..4 + MAX_DEPTH));
    assert!(parse(&arrays(1_000_000)).is_err());
    let inline = |n: usize| format!("a = {}1{}", "{b = ".repeat(n), "}".repeat(n));
    table(&inline(MAX_DEPTH - 1));
    assert!(parse(&inline(MAX_DEPTH)).is_err());
    assert!(parse(&inline(1_000_000)).is_err());
    let mixed = format!("a = {}", "[{b = ".repeat(100_000));
    assert!(parse(&mixed).is_err());
    // Keys count too: a header, then a dotted key, then a value.
    let key = |n: usize| vec!["k"; n].join(".");
    table(&format!("{} = 1", key(MAX_DEPTH)));
    assert_eq!(
        parse(&format!("{} = 1", key(MAX_DEPTH + 1)))
            .unwrap_err()
            .message(),
        "a key of more than 64 parts"
    );
    assert!(parse(&format!("[{}]", key(MAX_DEPTH + 1))).is_err());
    assert!(parse(&format!("[{}]\n{} = [[1]]", key(40), key(23))).is_err());
    table(&format!("[{}]\n{} = [1]", key(40), key(23)));
    table(&format!("[{}]\n{} = 1", key(40), key(24)));
    let too_deep = format!("[{}]\n{} = 1", key(MAX_DEPTH), key(MAX_DEPTH));
    assert_eq!(
        parse(&too_deep).unwrap_err().message(),
        "nesting deeper than 64 levels",
        "a scalar under a full header and a full dotted key"
    );
    assert!(parse(&format!("a = {{ {} = 1 }}", key(MAX_DEPTH))).is_err());
}

/// Bytes that matter to the grammar, for the mutation test.
const PROBES: &[u8] = b"\"'[]{}=,.#\\\n\r\t 0a+-_:eZT\x00\x7f";

fn survives(text: &str) {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Some_ {
        title: Option<String>,
        ints: Option<Vec<i64>>,
        server: Option<BTreeMap<String, Value>>,
    }
    match parse(text) {
        Ok(doc) => {
            let _ = from_document::<Table>(&doc);
            let _ = from_document::<Some_>(&doc);
        }
        // A caller may cut the text at an error's span.
        Err(err) => {
            let span = err.span().unwrap_or_default();
            assert!(text.get(span.clone()).is_some(), "{text:?}: {span:?}");
        }
    }
}

#[test]
fn no_prefix_or_single_byte_change_of_a_document_panics() {
    for end in 0..=RICH.len() {
        if let Some(prefix) = RICH.get(..end) {
            survives(prefix);
        }
    }
    let bytes = RICH.as_bytes();
    for i in 0..bytes.len() {
        for &probe in PROBES {
            let mut changed = bytes.to_vec();
            changed[i] = probe;
            if let Ok(text) = std::str::from_utf8(&changed) {
                survives(text);
            }
        }
        let mut removed = bytes.to_vec();
        removed.remove(i);
        if let Ok(text) = std::str::from_utf8(&removed) {
            survives(text);
        }
    }
}

#[test]
fn random_garbage_is_an_error_not_a_panic() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..2_000 {
        let len = (seed % 200) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                PROBES[(seed % PROBES.len() as u64) as usize]
            })
            .collect();
        survives(&String::from_utf8_lossy(&bytes));
        // Multi-byte characters where escapes and tokens end.
        survives(
            &String::from_utf8_lossy(&bytes)
                .replace('a', "é")
                .replace('0', "\\u0é"),
        );
    }
}

#[test]
fn spans_point_at_keys_values_and_the_headers_that_define_tables() {
    let text = "name = \"x\"\n[t.u]\n[t]\nk = [1, { a = 2 }]\n[[aot]]\nb.c = 3\n";
    let doc = parse(text).unwrap();
    let at = |span: &Range<usize>| &text[span.clone()];
    let root = doc.table();
    assert_eq!(at(&root["name"].key), "name");
    assert_eq!(at(&root["name"].item.span), "\"x\"");
    // `t` was named by `[t.u]` first and defined by `[t]`: the definition counts.
    assert_eq!(root["t"].key, 18..19);
    assert_eq!(at(&root["t"].item.span), "[t]");
    let DocValue::Table(t) = &root["t"].item.value else {
        panic!()
    };
    assert_eq!(at(&t["u"].item.span), "[t.u]");
    assert_eq!(at(&t["k"].item.span), "[1, { a = 2 }]");
    let DocValue::Array(k) = &t["k"].item.value else {
        panic!()
    };
    assert_eq!(at(&k[1].span), "{ a = 2 }");
    let DocValue::Array(aot) = &root["aot"].item.value else {
        panic!()
    };
    assert_eq!(at(&aot[0].span), "[[aot]]");
    let DocValue::Table(first) = &aot[0].value else {
        panic!()
    };
    assert_eq!(at(&first["b"].key), "b");
    let bom = parse("\u{feff}a = 1").unwrap();
    assert_eq!(bom.table()["a"].key, 3..4, "spans count the BOM's bytes");
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Ask,
    Allow,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Id(u64);

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Inner {
    values: Vec<u8>,
    when: Option<String>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Conf {
    name: String,
    port: u16,
    ratio: f64,
    mode: Mode,
    opt: Option<u8>,
    none: Option<u8>,
    id: Id,
    inner: Inner,
    list: Vec<Inner>,
    map: BTreeMap<String, u32>,
    hash: HashMap<String, bool>,
    extra: Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Strict {
    a: i32,
    b: Option<i32>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Needs {
    need: Strict,
}

fn de_err<T: serde::de::DeserializeOwned + std::fmt::Debug>(text: &str) -> (String, Option<&str>) {
    let err = from_str::<T>(text).unwrap_err();
    let span = err.span().map(|s| &text[s]);
    (err.message().to_string(), span)
}

#[test]
fn documents_deserialise_into_the_shapes_config_uses() {
    let text = "name = \"n\"\nport = 8080\nratio = 1\nmode = \"allow\"\nopt = 7\nid = 42\n\
        inner = { values = [1, 2], when = 1979-05-27 }\n[[list]]\nvalues = [3]\n\
        [map]\nx = 1\n[hash]\ny = true\n[extra]\nz = { deep = [1.5, \"s\"] }\n";
    let conf: Conf = from_str(text).unwrap();
    assert_eq!(
        conf,
        Conf {
            name: "n".into(),
            port: 8080,
            ratio: 1.0,
            mode: Mode::Allow,
            opt: Some(7),
            none: None,
            id: Id(42),
            inner: Inner {
                values: vec![1, 2],
                when: Some("1979-05-27".into()),
            },
            list: vec![Inner {
                values: vec![3],
                when: None
            }],
            map: BTreeMap::from([("x".into(), 1)]),
            hash: HashMap::from([("y".into(), true)]),
            extra: Table::from([(
                "z".into(),
                Value::Table(Table::from([(
                    "deep".into(),
                    Value::Array(vec![Value::Float(1.5), s("s")])
                )]))
            )]),
        }
    );
    // The same through a plain table (the merged layers) and back.
    let plain: Table = from_str(text).unwrap();
    assert_eq!(from_table::<Conf>(plain.clone()).unwrap(), conf);
    assert_eq!(to_table(&plain).unwrap(), plain);
    assert_eq!(from_value::<Mode>(s("ask")).unwrap(), Mode::Ask);
}

#[test]
fn type_errors_use_serdes_words_and_the_innermost_span() {
    assert_eq!(
        de_err::<Conf>("port = 70000"),
        (
            "invalid value: integer `70000`, expected u16".into(),
            Some("70000")
        )
    );
    assert_eq!(
        de_err::<Conf>("port = -1"),
        (
            "invalid value: integer `-1`, expected u16".into(),
            Some("-1")
        )
    );
    assert_eq!(
        de_err::<Conf>("port = \"80\""),
        (
            "invalid type: string \"80\", expected u16".into(),
            Some("\"80\"")
        )
    );
    assert_eq!(
        de_err::<Conf>("port = 1.5"),
        (
            "invalid type: floating point `1.5`, expected u16".into(),
            Some("1.5")
        )
    );
    assert_eq!(
        de_err::<Conf>("mode = \"maybe\""),
        (
            "unknown variant `maybe`, expected `ask` or `allow`".into(),
            Some("\"maybe\"")
        )
    );
    assert_eq!(
        de_err::<Conf>("mode = { ask = 1 }"),
        (
            "invalid type: map, expected enum Mode".into(),
            Some("{ ask = 1 }")
        )
    );
    assert_eq!(
        de_err::<Conf>("[[list]]\nvalues = [1]\n[[list]]\nvalues = [1, 2, 300]\n"),
        (
            "invalid value: integer `300`, expected u8".into(),
            Some("300")
        )
    );
    assert_eq!(
        de_err::<Conf>("inner = { when = [1] }"),
        (
            "invalid type: sequence, expected a string".into(),
            Some("[1]")
        )
    );
    assert_eq!(
        de_err::<Conf>("map = { x = true }"),
        (
            "invalid type: boolean `true`, expected u32".into(),
            Some("true")
        )
    );
    assert_eq!(
        de_err::<Strict>("b = 1"),
        ("missing field `a`".into(), None),
        "the root has no span"
    );
    assert_eq!(
        de_err::<Needs>("[need]\nb = 1\n"),
        ("missing field `a`".into(), Some("[need]"))
    );
    assert_eq!(
        de_err::<Strict>("a = 1\nc = 2\n"),
        ("unknown field `c`, expected `a` or `b`".into(), Some("c"))
    );
    let plain = from_table::<Conf>(Table::from([("port".into(), s("x"))])).unwrap_err();
    assert_eq!(plain.span(), None, "plain values have no spans");
    assert_eq!(plain.message(), "invalid type: string \"x\", expected u16");
}

#[derive(Serialize)]
enum Shape {
    Unit,
    Newtype(u8),
    Tuple(u8, u8),
    Struct { side: u8 },
}

#[test]
fn serialising_makes_tables_and_drops_what_is_absent() {
    let conf = Conf {
        name: "n".into(),
        opt: Some(1),
        mode: Mode::Allow,
        id: Id(9),
        list: vec![Inner::default()],
        map: BTreeMap::from([("k".into(), 2)]),
        ..Conf::default()
    };
    let t = to_table(&conf).unwrap();
    assert_eq!(get(&t, "mode"), &s("allow"));
    assert_eq!(get(&t, "id"), &Value::Integer(9));
    assert_eq!(get(&t, "opt"), &Value::Integer(1));
    assert!(!t.contains_key("none"), "None vanishes: {t:?}");
    assert_eq!(
        get(&t, "list/0"),
        &Value::Table(Table::from([("values".into(), Value::Array(vec![]))]))
    );
    assert_eq!(get(&t, "map/k"), &Value::Integer(2));
    assert_eq!(from_table::<Conf>(t).unwrap(), conf);
    let shapes = BTreeMap::from([
        ("a", Shape::Unit),
        ("b", Shape::Newtype(1)),
        ("c", Shape::Tuple(1, 2)),
        ("d", Shape::Struct { side: 3 }),
    ]);
    assert_eq!(
        Value::Table(to_table(&shapes).unwrap()),
        Value::Table(table(
            "a = 'Unit'\nb = { Newtype = 1 }\nc = { Tuple = [1, 2] }\nd = { Struct = { side = 3 } }"
        ))
    );
    let too_big = to_table(&BTreeMap::from([("n", u64::MAX)])).unwrap_err();
    assert_eq!(
        too_big.message(),
        "integer `18446744073709551615` does not fit in 64 bits"
    );
    assert!(to_table(&5).is_err());
    assert!(to_table(&BTreeMap::from([("v", vec![Some(1), None])])).is_err());
    assert!(to_table(&BTreeMap::from([(1, 2)])).is_err());
}

/// Valid documents for the differential test, beyond [`RICH`].
const VALID: &[&str] = &[
    "a = 1\nb = -0\nc = +0.0\nd = -0.0\ne = 1E3\nf = 0.1e-1_0",
    "s = \"\\u0000\\u001f\\U0010FFFF\"",
    "m = \"\"\"\n\n  two lines\\\n\n\n  joined\"\"\"",
    "m = \"\"\"\\\n   \\\n   x\"\"\"",
    "m = '''\n\n'''",
    "m = \"\"\"\"\"\"",
    "m = ''''''",
    "m = \"\"\"a\"\"b\"\"\"",
    "t = 1979-05-27T07:32:00.123456789Z\nu = 1979-05-27 07:32:00\nv = 23:59:59.999",
    "a = [[1, 2], [\"a\", 'b'], [[[]]], {}]",
    "a = [\n  1,\n  2, # two\n]\n",
    "[a]\n[a.b]\n[a.b.c]\n[a.d]\n",
    "[[a.b]]\nx = 1\n[[a.b]]\nx = 2\n[a.c]\ny = 3",
    "\"a.b\" = 1\na.b = 2\n'a' . \"c\" = 3",
    "key = \"value\" # comment with 'quotes' and \"more\" and é",
    "a = {x = 1, y = {z = [1, {w = 2}]}}",
    "a = 0xffff_ffff\nb = 0o0_7\nc = 0b0\nd = 0x0",
    "a = 5e+22\nb = -2E-2\nc = 6.626e-34\nd = 1e1000\ne = -1e1000",
    "\t a \t = \t 1 \t",
    "[ \"quoted . key\" . 'x' ]\nv = 1",
    "a.\"\".b = 1",
    "a = 2000-02-29\nb = 1900-02-28\nc = 2024-12-31T23:59:59+14:00",
    "x = [ 'a', \"b\", '''c''', \"\"\"d\"\"\" ]",
    "a = \"\\\\ \\\" \\b \\f \\n \\r \\t \\u00E9 \\U0001F600\"",
];

/// Tagged JSON of a document value: every node a one-key object, so the Python side can tell
/// a table from a leaf and compare floats and date-times by meaning rather than spelling.
fn tagged(value: &DocValue) -> serde_json::Value {
    use serde_json::json;
    match value {
        DocValue::String(s) => json!({ "s": s }),
        DocValue::Integer(i) => json!({ "i": i }),
        DocValue::Float(f) => json!({ "f": format!("{f:?}") }),
        DocValue::Boolean(b) => json!({ "b": b }),
        DocValue::Datetime(d) => json!({ "d": d }),
        DocValue::Array(items) => {
            json!({ "a": items.iter().map(|i| tagged(&i.value)).collect::<Vec<_>>() })
        }
        DocValue::Table(t) => {
            let map: serde_json::Map<_, _> = t
                .iter()
                .map(|(k, e)| (k.clone(), tagged(&e.item.value)))
                .collect();
            json!({ "t": map })
        }
    }
}

/// Reads `[[document, ours]]` (ours `null` when we reject it) and prints one line per
/// disagreement with tomllib.
const COMPARE: &str = r#"
import json, sys, tomllib
def norm(v):
    if isinstance(v, bool): return {"b": v}
    if isinstance(v, int): return {"i": v}
    if isinstance(v, float): return {"f": repr(v)}
    if isinstance(v, str): return {"s": v}
    if isinstance(v, list): return {"a": [norm(x) for x in v]}
    if isinstance(v, dict): return {"t": {k: norm(x) for k, x in v.items()}}
    return {"d": v.isoformat()}
def ours(v):
    (tag, x), = v.items()
    if tag == "f": return {"f": repr(float(x))}
    if tag == "d": return norm(tomllib.loads("x = " + x)["x"])
    if tag == "a": return {"a": [ours(i) for i in x]}
    if tag == "t": return {"t": {k: ours(i) for k, i in x.items()}}
    return v
for doc, mine in json.load(sys.stdin):
    try:
        theirs = norm(tomllib.loads(doc))
    except Exception as e:
        theirs = None
        why = str(e)
    if mine is None and theirs is not None:
        print("we reject, tomllib accepts:", repr(doc[:300]))
    elif mine is not None and theirs is None:
        print("we accept, tomllib rejects (" + why + "):", repr(doc[:300]))
    elif mine is not None and ours(mine) != theirs:
        print("values differ:", repr(doc[:300]), json.dumps(ours(mine))[:500], json.dumps(theirs)[:500])
"#;

fn python_with_tomllib() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import tomllib"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// What tomllib says about each document, where it disagrees with us.
fn disagreements(docs: &[String]) -> Vec<String> {
    use std::io::Write;
    let cases: Vec<serde_json::Value> = docs
        .iter()
        .map(|doc| {
            let ours = parse(doc).ok().map(|d| tagged(&d.root.value));
            // `tomllib.loads` takes text, in which a byte order mark has no place.
            serde_json::json!([doc.strip_prefix('\u{feff}').unwrap_or(doc), ours])
        })
        .collect();
    let mut child = std::process::Command::new("python3")
        .args(["-c", COMPARE])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(&cases).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Written from a thread while the output is read here, so neither pipe can fill up.
    let writer = std::thread::Builder::new()
        .name("tomllib-input".into())
        .spawn(move || stdin.write_all(&input))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the comparison script failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The spec's reference reader for Python agrees with us on valid documents and on the
/// documents we reject (except the nesting bound, which is ours). With `TOML_TEST_DIR` set to
/// a checkout of toml-lang/toml-test's `tests` folder, its TOML 1.0 corpus is checked too.
#[test]
fn python_tomllib_reads_the_same_documents_the_same_way() {
    if !python_with_tomllib() {
        eprintln!("skipped: no python3 with tomllib (Python 3.11+) on the PATH");
        return;
    }
    let mut docs: Vec<String> = VALID.iter().map(|d| d.to_string()).collect();
    docs.push(RICH.to_string());
    for doc in &docs {
        parse(doc).unwrap_or_else(|e| panic!("{doc:?}: {e:?}"));
    }
    // tomllib's integers have no limit; the spec asks for an error past 64 bits.
    docs.extend(
        ERRORS
            .iter()
            .filter(|(_, message, _)| !message.contains("does not fit in 64 bits"))
            .map(|(text, _, _)| text.to_string()),
    );
    let mut problems = disagreements(&docs);
    if let Some(dir) = std::env::var_os("TOML_TEST_DIR") {
        let dir = std::path::PathBuf::from(dir);
        let list = std::fs::read_to_string(dir.join("files-toml-1.0.0")).unwrap();
        let mut corpus = Vec::new();
        for name in list.lines().filter(|l| l.ends_with(".toml")) {
            // tomllib cannot take invalid UTF-8; neither can `read_to_string`, which is how
            // the loader reads config files.
            if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
                if name.starts_with("invalid/") && parse(&text).is_ok() {
                    problems.push(format!("we accept {name}"));
                }
                corpus.push(text);
            }
        }
        eprintln!("toml-test: {} documents", corpus.len());
        problems.extend(disagreements(&corpus));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
