//! `reasonix tools`.

use super::lex::Lexer;
use super::Global;
use crate::error::Error;

pub const HELP: &str = "Usage: reasonix tools\n";

pub fn main(_global: Global, _lexer: &mut Lexer) -> Result<i32, Error> {
    Err(Error::Failed("`reasonix tools` is not built yet".into()))
}
