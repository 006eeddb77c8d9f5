//! Serde into a [`Table`]: how the loader learns which keys a parsed file's config knows (the
//! keys that survive a round trip). `None` (and unit) vanish from their table, as a missing key
//! is TOML's only way to say nothing; enums become strings or one-key tables; numbers must fit
//! TOML's 64-bit integers. Writing TOML text is not needed and not offered.

use serde::ser::{self, Serialize};

use super::value::{Table, Value};
use super::Error;

/// The table a struct or map serialises to.
pub fn to_table<T: Serialize + ?Sized>(value: &T) -> Result<Table, Error> {
    match value.serialize(ValueSerializer)? {
        Some(Value::Table(table)) => Ok(table),
        _ => Err(ser::Error::custom("only a struct or a map becomes a table")),
    }
}

/// Serialises into a value; `None` for nothing (an absent `Option`, unit).
struct ValueSerializer;

type Out = Result<Option<Value>, Error>;

fn tagged(variant: Option<&'static str>, value: Value) -> Option<Value> {
    Some(match variant {
        Some(name) => Value::Table(Table::from([(name.to_string(), value)])),
        None => value,
    })
}

impl ser::Serializer for ValueSerializer {
    type Ok = Option<Value>;
    type Error = Error;
    type SerializeSeq = ArraySer;
    type SerializeTuple = ArraySer;
    type SerializeTupleStruct = ArraySer;
    type SerializeTupleVariant = ArraySer;
    type SerializeMap = TableSer;
    type SerializeStruct = TableSer;
    type SerializeStructVariant = TableSer;

    fn serialize_bool(self, v: bool) -> Out {
        Ok(Some(Value::Boolean(v)))
    }

    fn serialize_i8(self, v: i8) -> Out {
        self.serialize_i64(v.into())
    }

    fn serialize_i16(self, v: i16) -> Out {
        self.serialize_i64(v.into())
    }

    fn serialize_i32(self, v: i32) -> Out {
        self.serialize_i64(v.into())
    }

    fn serialize_i64(self, v: i64) -> Out {
        Ok(Some(Value::Integer(v)))
    }

    fn serialize_u8(self, v: u8) -> Out {
        self.serialize_i64(v.into())
    }

    fn serialize_u16(self, v: u16) -> Out {
        self.serialize_i64(v.into())
    }

    fn serialize_u32(self, v: u32) -> Out {
        self.serialize_i64(v.into())
    }

    fn serialize_u64(self, v: u64) -> Out {
        match i64::try_from(v) {
            Ok(v) => self.serialize_i64(v),
            Err(_) => Err(ser::Error::custom(format!(
                "integer `{v}` does not fit in 64 bits"
            ))),
        }
    }

    fn serialize_f32(self, v: f32) -> Out {
        self.serialize_f64(v.into())
    }

    fn serialize_f64(self, v: f64) -> Out {
        Ok(Some(Value::Float(v)))
    }

    fn serialize_char(self, v: char) -> Out {
        Ok(Some(Value::String(v.to_string())))
    }

    fn serialize_str(self, v: &str) -> Out {
        Ok(Some(Value::String(v.to_string())))
    }

    fn serialize_bytes(self, v: &[u8]) -> Out {
        let items = v.iter().map(|&b| Value::Integer(b.into())).collect();
        Ok(Some(Value::Array(items)))
    }

    fn serialize_none(self) -> Out {
        Ok(None)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Out {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Out {
        Ok(None)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Out {
        Ok(None)
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Out {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Out {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Out {
        Ok(value
            .serialize(self)?
            .and_then(|v| tagged(Some(variant), v)))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<ArraySer, Error> {
        Ok(ArraySer {
            items: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<ArraySer, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<ArraySer, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<ArraySer, Error> {
        Ok(ArraySer {
            items: Vec::with_capacity(len),
            variant: Some(variant),
        })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<TableSer, Error> {
        Ok(TableSer::default())
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<TableSer, Error> {
        Ok(TableSer::default())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<TableSer, Error> {
        Ok(TableSer {
            variant: Some(variant),
            ..TableSer::default()
        })
    }
}

/// An array being serialised; `variant` wraps it in a one-key table (a tuple variant).
struct ArraySer {
    items: Vec<Value>,
    variant: Option<&'static str>,
}

impl ArraySer {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match value.serialize(ValueSerializer)? {
            Some(v) => self.items.push(v),
            None => return Err(ser::Error::custom("an array cannot hold a missing value")),
        }
        Ok(())
    }

    fn finish(self) -> Out {
        Ok(tagged(self.variant, Value::Array(self.items)))
    }
}

/// serde's four sequence-like serialisers differ only in the method's name; each pushes an
/// element onto the array.
macro_rules! array_serializer {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for ArraySer {
            type Ok = Option<Value>;
            type Error = Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.push(value)
            }

            fn end(self) -> Out {
                self.finish()
            }
        }
    )*};
}

array_serializer!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A table being serialised; `variant` wraps it in a one-key table (a struct variant).
#[derive(Default)]
struct TableSer {
    table: Table,
    /// A map's key waiting for its value.
    key: Option<String>,
    variant: Option<&'static str>,
}

impl TableSer {
    fn insert<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<(), Error> {
        if let Some(v) = value.serialize(ValueSerializer)? {
            self.table.insert(key, v);
        }
        Ok(())
    }

    fn finish(self) -> Out {
        Ok(tagged(self.variant, Value::Table(self.table)))
    }
}

impl ser::SerializeMap for TableSer {
    type Ok = Option<Value>;
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match key.serialize(ValueSerializer)? {
            Some(Value::String(key)) => self.key = Some(key),
            _ => return Err(ser::Error::custom("a table key must be a string")),
        }
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self.key.take() {
            Some(key) => self.insert(key, value),
            None => Err(ser::Error::custom("a value was given before its key")),
        }
    }

    fn end(self) -> Out {
        self.finish()
    }
}

/// serde's two struct serialisers are the same: each field is a key of the table.
macro_rules! struct_serializer {
    ($($trait:ident),*) => {$(
        impl ser::$trait for TableSer {
            type Ok = Option<Value>;
            type Error = Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.insert(key.to_string(), value)
            }

            fn end(self) -> Out {
                self.finish()
            }
        }
    )*};
}

struct_serializer!(SerializeStruct, SerializeStructVariant);
