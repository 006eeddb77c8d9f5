//! The serde `Deserializer` over a parsed document: the only one, so every config struct's
//! `Deserialize` is compiled once whether it reads a file or the merged layers. The value
//! decides what to visit (self-describing, like JSON); the few hints that matter are options
//! (a present key is `Some`), enums (a string names a unit variant) and ignored values.
//!
//! An error leaving a value is given that value's span unless it already has one, so it
//! points at the innermost value that failed; the message is serde's own wording.

use std::collections::btree_map;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::parse::{DocValue, Entry, Item};
use super::Error;

impl<'de> de::Deserializer<'de> for &'de Item {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            DocValue::String(s) | DocValue::Datetime(s) => visitor.visit_borrowed_str(s),
            DocValue::Integer(i) => visitor.visit_i64(*i),
            DocValue::Float(f) => visitor.visit_f64(*f),
            DocValue::Boolean(b) => visitor.visit_bool(*b),
            DocValue::Array(items) => visitor.visit_seq(Items(items.iter())),
            DocValue::Table(table) => visitor.visit_map(Entries {
                iter: table.iter(),
                value: None,
            }),
        }
        .map_err(|e| e.at(&self.span))
    }

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

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.value {
            DocValue::String(s) => visitor
                .visit_enum(s.as_str().into_deserializer())
                .map_err(|e: Error| e.at(&self.span)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

struct Items<'de>(std::slice::Iter<'de, Item>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|item| seed.deserialize(item)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries<'de> {
    iter: btree_map::Iter<'de, String, Entry>,
    /// The value of the key just read.
    value: Option<&'de Item>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((name, entry)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(&entry.item);
        seed.deserialize(BorrowedStrDeserializer::new(name))
            .map(Some)
            .map_err(|e: Error| e.at(&entry.key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(item) => seed.deserialize(item),
            None => Err(de::Error::custom("a value was asked for before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}
