//! `reasonix setup`.

use super::lex::Lexer;
use super::Global;
use crate::error::Error;

pub const HELP: &str = "Usage: reasonix setup\n";

pub fn main(_global: Global, _lexer: &mut Lexer) -> Result<i32, Error> {
    Err(Error::Failed("`reasonix setup` is not built yet".into()))
}
