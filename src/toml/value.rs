//! Plain TOML values without spans: what the loader merges layer over layer and what a config
//! field such as `extra_body` holds. Date-times arrive here as strings (they deserialise as
//! strings); keys are sorted. Reading one back into a type goes through `de.rs` by turning it
//! into a span-less document, so there is a single deserializer to compile.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::parse::{DocTable, DocValue, Entry, Item, Kind};

/// A table, keys sorted.
pub type Table = BTreeMap<String, Value>;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Array(Vec<Value>),
    Table(Table),
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Value::Integer(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_table(&self) -> Option<&Table> {
        match self {
            Value::Table(table) => Some(table),
            _ => None,
        }
    }

    /// The value of `key` when this is a table that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_table()?.get(key)
    }
}

/// A span-less document item, for deserialising plain values.
impl From<Value> for Item {
    fn from(value: Value) -> Item {
        let value = match value {
            Value::String(s) => DocValue::String(s),
            Value::Integer(i) => DocValue::Integer(i),
            Value::Float(f) => DocValue::Float(f),
            Value::Boolean(b) => DocValue::Boolean(b),
            Value::Array(items) => DocValue::Array(items.into_iter().map(Item::from).collect()),
            Value::Table(table) => DocValue::Table(
                table
                    .into_iter()
                    .map(|(k, v)| {
                        let entry = Entry {
                            key: 0..0,
                            item: Item::from(v),
                        };
                        (k, entry)
                    })
                    .collect::<DocTable>(),
            ),
        };
        Item {
            value,
            span: 0..0,
            kind: Kind::Literal,
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::String(s) => serializer.serialize_str(s),
            Value::Integer(i) => serializer.serialize_i64(*i),
            Value::Float(f) => serializer.serialize_f64(*f),
            Value::Boolean(b) => serializer.serialize_bool(*b),
            Value::Array(items) => items.serialize(serializer),
            Value::Table(table) => table.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a TOML value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Boolean(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Integer(i))
    }

    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::Integer)
            .map_err(|_| E::custom(format!("integer `{u}` does not fit in 64 bits")))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut table = Table::new();
        while let Some((key, value)) = map.next_entry()? {
            table.insert(key, value);
        }
        Ok(Value::Table(table))
    }
}
