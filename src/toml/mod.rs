//! TOML 1.0 for the config files, in-tree: the `toml` crate's per-struct deserializers were
//! the largest single cost in the release binary. This module owns the syntax, the spanned
//! document, serde in both directions and its error type; what the keys mean is `config`'s.
//!
//! - `parse.rs`: text into a [`Document`] whose keys and values keep their byte spans;
//! - `de.rs`: the one serde `Deserializer`, over that document, so each config struct's
//!   `Deserialize` is compiled once; plain [`Value`]s reach it through a span-less document;
//! - `value.rs`: [`Value`] and [`Table`], the plain tree the loader merges;
//! - `ser.rs`: serde `Serializer` into a [`Table`] (the loader's known-keys check).
//!
//! The input may come from a repository an attacker controls: nothing here panics on it,
//! nesting is bounded by [`MAX_DEPTH`] and the work is linear in its length.

mod de;
mod parse;
mod ser;
mod value;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;

use serde::de::DeserializeOwned;

pub use parse::{parse, DocTable, DocValue, Document, Entry, Item};
pub use ser::to_table;
pub use value::{Table, Value};

/// How deep a value may lie, so a hostile file cannot exhaust the stack of any recursive walk
/// over the tree: each part of its header and of its key counts one level, each array around
/// it one more. An array of tables counts as its key only, so no tree is more than twice this
/// deep.
pub const MAX_DEPTH: usize = 64;

/// A syntax, type or encoding error: one line of text and, when it came from a document, the
/// bytes it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
    span: Option<Range<usize>>,
}

impl Error {
    fn new(message: impl Into<String>, span: Range<usize>) -> Error {
        Error {
            message: message.into(),
            span: Some(span),
        }
    }

    /// What is wrong, in serde's wording for type errors.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The bytes of the document the error is about: the innermost value that failed.
    pub fn span(&self) -> Option<Range<usize>> {
        self.span.clone()
    }

    /// Points a span-less error at `span`; errors pass outwards through every enclosing
    /// value, so the first span given is the innermost one. Values not read from text have
    /// empty spans and give none.
    fn at(mut self, span: &Range<usize>) -> Error {
        if self.span.is_none() && !span.is_empty() {
            self.span = Some(span.clone());
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "toml: {}", self.message)
    }
}

impl std::error::Error for Error {}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error {
            message: msg.to_string(),
            span: None,
        }
    }
}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        <Error as serde::de::Error>::custom(msg)
    }
}

/// Parses `text` and deserialises it into `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    from_document(&parse(text)?)
}

/// Deserialises a parsed document; errors carry the span of the value that failed.
pub fn from_document<T: DeserializeOwned>(doc: &Document) -> Result<T, Error> {
    T::deserialize(&doc.root)
}

/// Deserialises a plain table (such as the merged layers); errors carry no span.
pub fn from_table<T: DeserializeOwned>(table: Table) -> Result<T, Error> {
    from_value(Value::Table(table))
}

/// Deserialises one plain value.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(&Item::from(value))
}
