//! Every number of the config schema against hostile values, through the real binary: each is
//! saturated at its documented maximum or refused at load with `file:line:col`, and nothing
//! panics or hangs. The keys are read from the schema itself (a serde walk of `Config`), so a
//! numeric key added later is covered without touching this file.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, Dir};

/// One step of a key's path in the schema.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Field(&'static str),
    /// The one entry of an array (of tables).
    Entry,
    /// The one key of a map; written as the model's name, so `model_overrides` and `prices`
    /// apply to the model the run uses.
    Key,
}

/// A numeric key of the schema.
#[derive(Debug, Clone)]
struct NumericKey {
    path: Vec<Seg>,
}

const MAP_KEY: &str = "fake-model";

impl NumericKey {
    /// The array of tables it lives in (`providers`, `plugins`, `hooks`) and its dotted key
    /// inside one entry; `None` and the full dotted key at the top level.
    fn placement(&self) -> (Option<String>, String) {
        let dotted = |segs: &[Seg]| {
            segs.iter()
                .map(|s| match s {
                    Seg::Field(name) => name.to_string(),
                    Seg::Key => MAP_KEY.to_string(),
                    Seg::Entry => panic!("{self:?}: an array inside an array of tables"),
                })
                .collect::<Vec<_>>()
                .join(".")
        };
        match self.path.iter().position(|s| *s == Seg::Entry) {
            None => (None, dotted(&self.path)),
            Some(at) => (Some(dotted(&self.path[..at])), dotted(&self.path[at + 1..])),
        }
    }
}

/// The numeric keys of `Config`, found by deserialising it from a tracer that offers every
/// field of every struct, one entry of every array and map, and `Some` for every option.
fn numeric_keys() -> Vec<NumericKey> {
    let found = RefCell::new(Vec::new());
    reasonix::config::Config::deserialize(Tracer {
        path: Vec::new(),
        found: &found,
    })
    .expect("the tracer walks the whole schema");
    found.into_inner()
}

#[derive(Debug)]
struct TraceError(String);

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

impl de::Error for TraceError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        TraceError(msg.to_string())
    }
}

struct Tracer<'a> {
    path: Vec<Seg>,
    found: &'a RefCell<Vec<NumericKey>>,
}

impl<'a> Tracer<'a> {
    fn at(&self, seg: Seg) -> Tracer<'a> {
        let mut path = self.path.clone();
        path.push(seg);
        Tracer {
            path,
            found: self.found,
        }
    }

    fn number(&self) {
        self.found.borrow_mut().push(NumericKey {
            path: self.path.clone(),
        });
    }
}

macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
            self.number();
            visitor.visit_u8(1)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Tracer<'_> {
    type Error = TraceError;

    /// A type that decides by the value (`PluginSandbox`, a TOML value in `extra_body`) gets
    /// an empty table: every such type in the schema accepts one.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_map(de::value::MapDeserializer::new(std::iter::empty::<(
            &str,
            &str,
        )>()))
    }

    integers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.number();
        visitor.visit_f32(0.5)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.number();
        visitor.visit_f64(0.5)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_bool(false)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_char('x')
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_str("x")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_str("x")
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_bytes(b"x")
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_bytes(b"x")
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_seq(OneEntry(Some(self.at(Seg::Entry))))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_map(Fields {
            names: &[MAP_KEY],
            next: 0,
            tracer: self,
            map: true,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_map(Fields {
            names: fields,
            next: 0,
            tracer: self,
            map: false,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_enum(variants[0].into_deserializer())
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_str("x")
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_unit()
    }
}

struct OneEntry<'a>(Option<Tracer<'a>>);

impl<'de> SeqAccess<'de> for OneEntry<'_> {
    type Error = TraceError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TraceError> {
        self.0.take().map(|t| seed.deserialize(t)).transpose()
    }
}

/// A struct's fields, or a map's one key.
struct Fields<'a> {
    names: &'static [&'static str],
    next: usize,
    tracer: Tracer<'a>,
    map: bool,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = TraceError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TraceError> {
        let Some(name) = self.names.get(self.next) else {
            return Ok(None);
        };
        seed.deserialize((*name).into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TraceError> {
        let name = self.names[self.next];
        self.next += 1;
        let seg = if self.map { Seg::Key } else { Seg::Field(name) };
        seed.deserialize(self.tracer.at(seg))
    }
}

/// The values each key is given: zero, negative, the largest TOML integer, one past it (a
/// literal TOML cannot hold in 64 signed bits), the largest float and not-a-number.
const HOSTILE: &[&str] = &[
    "0",
    "-1",
    "9223372036854775807",
    "18446744073709551615",
    "1e308",
    "nan",
];

/// A user config holding every key in `keys` set to `value`, on top of a fake provider, an
/// MCP server that exits at once and a hook, so that each key is read by what uses it. Returns
/// the text and the key on each line that holds one.
fn document(
    keys: &[NumericKey],
    value: &str,
    base_url: &str,
) -> (String, BTreeMap<usize, NumericKey>) {
    let mut blocks: BTreeMap<String, Vec<&NumericKey>> = BTreeMap::new();
    let mut root = Vec::new();
    for key in keys {
        match key.placement() {
            (None, _) => root.push(key),
            (Some(array), _) => blocks.entry(array).or_default().push(key),
        }
    }
    let bases: BTreeMap<&str, String> = BTreeMap::from([
        (
            "providers",
            format!(
                "name = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\n"
            ),
        ),
        ("plugins", "name = \"quits\"\ncommand = \"true\"\n".to_string()),
        (
            "hooks",
            "event = \"PreToolUse\"\ncommand = \"true\"\n".to_string(),
        ),
    ]);
    for array in blocks.keys() {
        assert!(
            bases.contains_key(array.as_str()),
            "a numeric key in [[{array}]]: give this test a base entry for it"
        );
    }
    let mut text = String::from("default_model = \"fake\"\nenvironment.enabled = false\n");
    let mut lines = BTreeMap::new();
    let mut put = |text: &mut String, key: &NumericKey| {
        lines.insert(text.lines().count() + 1, key.clone());
        text.push_str(&format!("{} = {value}\n", key.placement().1));
    };
    for key in root {
        put(&mut text, key);
    }
    for (array, base) in &bases {
        text.push_str(&format!("\n[[{array}]]\n{base}"));
        for key in blocks.get(*array).into_iter().flatten() {
            put(&mut text, key);
        }
    }
    (text, lines)
}

#[test]
fn the_schema_walk_finds_the_numeric_keys() {
    let keys: Vec<String> = numeric_keys()
        .iter()
        .map(|k| match k.placement() {
            (None, dotted) => dotted,
            (Some(array), dotted) => format!("{array}[].{dotted}"),
        })
        .collect();
    for expected in [
        "tools.bash_timeout_seconds",
        "agent.temperature",
        "providers[].timeouts.connect_seconds",
        "providers[].prices.fake-model.input",
        "plugins[].tool_timeout_seconds.fake-model",
        "plugins[].oauth.callback_port",
        "hooks[].timeout_seconds",
    ] {
        assert!(keys.iter().any(|k| k == expected), "{expected}: {keys:#?}");
    }
}

/// Each hostile value in every numeric key at once, in the user config (where every key
/// counts): a run whose model calls bash either finishes, every value saturated, or stops at
/// load on one line naming `config.toml:line:col` of a key, which is then dropped and the run
/// repeated, until it finishes. It once crashed (exit 101, "overflow when adding duration to
/// instant") at the first bash call with `bash_timeout_seconds = 9223372036854775807`.
#[test]
fn every_numeric_key_saturates_or_is_refused_with_its_place_never_a_panic() {
    let all = numeric_keys();
    let home = Dir::new();
    let work = Dir::new();
    let config = home.join(".reasonix/config.toml");
    let mut report = Vec::new();
    for value in HOSTILE {
        let mut keys = all.clone();
        loop {
            let server = FakeOpenAI::start(vec![
                Reply::tool_calls(&[("c1", "bash", r#"{"command":"echo ran"}"#)]),
                Reply::text("done"),
            ]);
            let (text, lines) = document(&keys, value, &server.base_url());
            home.write(".reasonix/config.toml", &text);
            let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
                "run",
                "--permission-mode",
                "yolo",
                "go",
            ]));
            assert_ne!(out.code, 101, "{value}: a panic\n{text}\n{out:?}");
            assert!(!out.stderr.contains("panicked"), "{value}\n{text}\n{out:?}");
            if out.code == 0 {
                let requests = server.wait_for_requests(2);
                assert!(
                    requests[1].body.to_string().contains("ran"),
                    "{value}: the bash call ran\n{out:?}"
                );
                report.push(format!("{value}: {} keys accepted", keys.len()));
                break;
            }
            assert_eq!(out.code, 2, "{value}\n{text}\n{out:?}");
            assert_eq!(out.stderr.lines().count(), 1, "{value}\n{text}\n{out:?}");
            let prefix = format!("reasonix: config: {}:", config.display());
            let line: usize = out
                .stderr
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split(':').next())
                .and_then(|line| line.parse().ok())
                .unwrap_or_else(|| panic!("{value}: no file:line\n{text}\n{out:?}"));
            let refused = lines
                .get(&line)
                .unwrap_or_else(|| panic!("{value}: line {line} holds no key\n{text}\n{out:?}"));
            report.push(format!("{value}: refused {:?}", refused.placement()));
            let before = keys.len();
            keys.retain(|k| k.path != refused.path);
            assert_eq!(keys.len(), before - 1, "{value}: {refused:?} dropped once");
        }
    }
    println!("{}", report.join("\n"));
}

/// The attack as first seen: an untrusted repository's reasonix.toml sets the bash timeout to
/// the largest TOML integer, and the first bash call crashed reasonix (exit 101, "overflow when
/// adding duration to instant"). The timeout saturates at a day; the call runs.
#[test]
fn an_untrusted_project_bash_timeout_of_i64_max_does_not_crash_the_first_bash_call() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "bash", r#"{"command":"echo ran"}"#)]),
        Reply::text("done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    crate::util::use_fake_provider(&home, &server.base_url(), "");
    work.write(
        "reasonix.toml",
        "[tools]\nbash_timeout_seconds = 9223372036854775807\n",
    );
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    assert!(requests[1].body.to_string().contains("ran"), "{out:?}");
}
