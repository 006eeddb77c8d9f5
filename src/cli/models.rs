//! `reasonix models`.

use super::lex::Lexer;
use super::Global;
use crate::error::Error;

pub const HELP: &str = "Usage: reasonix models\n";

pub fn main(_global: Global, _lexer: &mut Lexer) -> Result<i32, Error> {
    Err(Error::Failed("`reasonix models` is not built yet".into()))
}
