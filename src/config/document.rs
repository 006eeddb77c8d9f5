//! The config's one serde `Deserializer`: it reads the merged, spanned document (the `toml`
//! crate's `DeValue`, every layer's spans moved to that layer's place, see `load.rs`) into
//! [`Config`](super::Config) in one pass. A struct's table yields only the fields serde asks
//! for; every other key is recorded as unknown (where it is and its dotted path) and skipped, so
//! the loader can warn about it without serialising the config back. An error carries the span
//! and key path of the value it arose in. Layering, trust and the warnings' wording are
//! `load.rs`'s.

use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use toml::de::{DeInteger, DeValue};
use toml::Spanned;

/// A dotted key path such as `providers[1].model_overrides."v4".context_window`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct KeyPath(pub(super) Vec<Seg>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

impl KeyPath {
    pub(super) fn key(parts: &[&str]) -> KeyPath {
        KeyPath(parts.iter().map(|p| Seg::Key((*p).to_string())).collect())
    }

    pub(super) fn at(mut self, seg: Seg) -> KeyPath {
        self.0.push(seg);
        self
    }

    /// The path in the schema, without array indices: `plugins.tools` for `plugins[2].tools`.
    pub(super) fn schema(&self) -> String {
        let keys: Vec<&str> = self
            .0
            .iter()
            .filter_map(|seg| match seg {
                Seg::Key(k) => Some(k.as_str()),
                Seg::Index(_) => None,
            })
            .collect();
        keys.join(".")
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    let bare = !k.is_empty()
                        && k.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if bare {
                        f.write_str(k)?;
                    } else {
                        write!(f, "{k:?}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A key of the document that no struct of the schema has: where it starts and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unknown {
    pub offset: usize,
    pub(super) path: KeyPath,
}

/// Why the document does not fit the type, at the innermost value that said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub(super) message: String,
    /// `None` only for an error about the whole document.
    pub(super) span: Option<Range<usize>>,
    pub(super) path: KeyPath,
}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Error {
        Error {
            message: message.to_string(),
            span: None,
            path: KeyPath::default(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.0.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "`{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Error {}

/// A TOML text read into `T` through this same deserializer, ignoring keys `T` does not
/// know: for an edited config file read back, or a config written for the user checked
/// against the schema. The error is one line; it has no span, which the loader alone turns
/// into `file:line:col`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    let doc = toml::de::DeTable::parse(text).map_err(|err| Error {
        message: err.message().trim().replace('\n', "; "),
        span: None,
        path: KeyPath::default(),
    })?;
    let root = DeValue::Table(doc.into_inner());
    let (typed, _) = read::<T>(&root).map_err(|err| Error { span: None, ..err })?;
    Ok(typed)
}

/// Reads `value` into `T`, with the keys `T` does not know, in document order per table.
pub(super) fn read<T: DeserializeOwned>(value: &DeValue) -> Result<(T, Vec<Unknown>), Error> {
    let mut walk = Walk::default();
    let typed = T::deserialize(Node {
        value,
        walk: &mut walk,
    })?;
    Ok((typed, walk.unknown))
}

/// Where the reading stands: the path of the value being read and the unknown keys so far.
#[derive(Default)]
struct Walk {
    path: KeyPath,
    unknown: Vec<Unknown>,
    /// Where the key of the entry being read starts, for an unknown key found only when its
    /// value is ignored.
    key_offset: usize,
}

impl Walk {
    /// Gives an error from below its place, the first time it passes a value.
    fn place(&self, mut err: Error, span: Range<usize>) -> Error {
        if err.span.is_none() {
            err.span = Some(span);
            err.path = self.path.clone();
        }
        err
    }
}

/// One value of the document being read.
struct Node<'a, 'i> {
    value: &'a DeValue<'i>,
    walk: &'a mut Walk,
}

/// TOML integers are 64-bit signed; the crate reads larger literals, no TOML value holds them.
fn integer(n: &DeInteger) -> Result<i64, Error> {
    i64::from_str_radix(n.as_str(), n.radix()).map_err(|_| {
        de::Error::custom(if n.as_str().starts_with('-') {
            format!(
                "the number is smaller than {}, the smallest TOML integer",
                i64::MIN
            )
        } else {
            format!(
                "the number is larger than {}, the largest TOML integer",
                i64::MAX
            )
        })
    })
}

impl<'de> de::Deserializer<'de> for Node<'_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            DeValue::String(text) => visitor.visit_str(text),
            DeValue::Integer(n) => visitor.visit_i64(integer(n)?),
            DeValue::Float(x) => match x.as_str().parse::<f64>() {
                Ok(x) => visitor.visit_f64(x),
                Err(_) => Err(de::Error::custom("the number is not a 64-bit float")),
            },
            DeValue::Boolean(b) => visitor.visit_bool(*b),
            // No key of the schema takes a date; free-form tables (`extra_body`) keep its text.
            DeValue::Datetime(when) => visitor.visit_string(when.to_string()),
            DeValue::Array(items) => visitor.visit_seq(Items {
                iter: items.iter().enumerate(),
                walk: self.walk,
            }),
            DeValue::Table(table) => visitor.visit_map(Entries {
                iter: table.iter(),
                fields: None,
                next: None,
                walk: self.walk,
            }),
        }
    }

    // `None` is an absent key, so a present one is always `Some`.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            DeValue::Table(table) => visitor.visit_map(Entries {
                iter: table.iter(),
                fields: Some(fields),
                next: None,
                walk: self.walk,
            }),
            _ => self.deserialize_any(visitor),
        }
    }

    /// The schema's enums are all unit variants, written as strings.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            DeValue::String(text) => visitor.visit_enum(text.as_ref().into_deserializer()),
            _ => self.deserialize_any(visitor),
        }
    }

    /// A value nobody reads is a key the schema does not know. A struct's table read as a
    /// struct skips such keys before their value (see [`Entries`]); one read through
    /// `deserialize_any` (a key that is a string or a table, like `[plugins.sandbox]`) hands
    /// every key to the struct's visitor, which ignores the unknown ones here.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.walk.unknown.push(Unknown {
            offset: self.walk.key_offset,
            path: self.walk.path.clone(),
        });
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool u8 u16 u32 u64 u128 i8 i16 i32 i64 i128 f32 f64 char str string seq
        bytes byte_buf map unit unit_struct tuple_struct tuple identifier
    }
}

/// A table's entries. For a struct (`fields` is its field names) an entry it has no field for
/// is recorded as unknown and skipped.
struct Entries<'a, 'i> {
    iter: toml::map::Iter<'a, Spanned<std::borrow::Cow<'i, str>>, Spanned<DeValue<'i>>>,
    fields: Option<&'static [&'static str]>,
    /// The entry whose key was read last (its name, where the key starts, its value), for
    /// `next_value_seed`.
    next: Option<(&'a str, usize, &'a Spanned<DeValue<'i>>)>,
    walk: &'a mut Walk,
}

impl<'de> de::MapAccess<'de> for Entries<'_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        for (key, value) in self.iter.by_ref() {
            let name: &str = key.get_ref();
            if self.fields.is_some_and(|fields| !fields.contains(&name)) {
                let path = self.walk.path.clone().at(Seg::Key(name.to_string()));
                self.walk.unknown.push(Unknown {
                    offset: key.span().start,
                    path,
                });
                continue;
            }
            self.next = Some((name, key.span().start, value));
            return seed.deserialize(name.into_deserializer()).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some((name, key_offset, value)) = self.next.take() else {
            return Err(de::Error::custom("config: a value was read before its key"));
        };
        self.walk.path.0.push(Seg::Key(name.to_string()));
        self.walk.key_offset = key_offset;
        let read = seed
            .deserialize(Node {
                value: value.get_ref(),
                walk: &mut *self.walk,
            })
            .map_err(|err| self.walk.place(err, value.span()));
        self.walk.path.0.pop();
        read
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An array's items.
struct Items<'a, 'i> {
    iter: std::iter::Enumerate<std::slice::Iter<'a, Spanned<DeValue<'i>>>>,
    walk: &'a mut Walk,
}

impl<'de> de::SeqAccess<'de> for Items<'_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((index, item)) = self.iter.next() else {
            return Ok(None);
        };
        self.walk.path.0.push(Seg::Index(index));
        let read = seed
            .deserialize(Node {
                value: item.get_ref(),
                walk: &mut *self.walk,
            })
            .map_err(|err| self.walk.place(err, item.span()));
        self.walk.path.0.pop();
        read.map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// The document of `text` as one value, for the tests here and in `load.rs`.
#[cfg(test)]
pub(super) fn parse(text: &str) -> DeValue<'_> {
    DeValue::Table(toml::de::DeTable::parse(text).unwrap().into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, PermissionMode};

    #[test]
    fn unknown_keys_of_structs_are_recorded_and_maps_take_every_key() {
        let doc = parse(
            "colour = 1\n[agent]\nfoo = 2\nsubagent_models = { any = \"m\" }\n[[providers]]\nname = \"p\"\nmodel = \"m\"\nbase_url = \"u\"\nextra_body = { free = 1 }\nmodel_overrides = { m = { x = 1 } }\n",
        );
        let (config, unknown) = read::<Config>(&doc).unwrap();
        let paths: Vec<String> = unknown.iter().map(|u| u.path.to_string()).collect();
        assert_eq!(
            paths,
            vec!["agent.foo", "colour", "providers[0].model_overrides.m.x"]
        );
        assert_eq!(config.agent.subagent_models["any"], "m");
        assert!(config.providers[0].extra_body.contains_key("free"));
    }

    #[test]
    fn unknown_keys_of_a_struct_read_through_a_custom_visitor_are_recorded_too() {
        // `[plugins.sandbox]` is `"off"` or a table, so it is read with `deserialize_any`
        // and its struct's field names never reach the table's entries.
        let text = "[[plugins]]\nname = \"s\"\ncommand = \"x\"\n[plugins.sandbox]\nnetwork = false\nalow_write = [\"/etc\"]\n";
        let (config, unknown) = read::<Config>(&parse(text)).unwrap();
        let paths: Vec<String> = unknown.iter().map(|u| u.path.to_string()).collect();
        assert_eq!(paths, vec!["plugins[0].sandbox.alow_write"]);
        assert_eq!(&text[unknown[0].offset..][..10], "alow_write");
        assert!(config.plugins[0].sandbox.is_some());
    }

    #[test]
    fn errors_carry_the_innermost_span_and_path() {
        let text = "[[providers]]\nname = \"a\"\ncontext_window = \"big\"\n";
        let err = read::<Config>(&parse(text)).unwrap_err();
        assert_eq!(err.path.to_string(), "providers[0].context_window");
        assert_eq!(&text[err.span.clone().unwrap()], "\"big\"");
        assert!(
            err.message.starts_with("invalid type: string \"big\""),
            "{err}"
        );
        let err = read::<Config>(&parse(
            "[tools]\nbash_timeout_seconds = -9223372036854775809\n",
        ))
        .unwrap_err();
        assert_eq!(
            err.message,
            "the number is smaller than -9223372036854775808, the smallest TOML integer"
        );
    }

    #[test]
    fn enums_read_from_strings_and_refuse_other_types() {
        let doc = parse("m = \"deny\"\n");
        let DeValue::Table(table) = &doc else {
            unreachable!()
        };
        let mode = read::<PermissionMode>(table["m"].get_ref()).unwrap().0;
        assert_eq!(mode, PermissionMode::Deny);
        let doc = parse("[permissions]\nmode = 1\n");
        let err = read::<Config>(&doc).unwrap_err();
        assert_eq!(err.path.to_string(), "permissions.mode");
    }
}
