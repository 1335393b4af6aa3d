//! Command-line value parsers shared by `opgen` and `cargo xtask`, so both accept and reject
//! the same spellings with the same message.

use crate::verify::Sweep;
use crate::DType;

pub fn parse_dtype(text: &str) -> Result<DType, String> {
    DType::parse(text).ok_or_else(|| format!("unknown dtype `{text}` (f16, bf16, f32, i8, i32, i64)"))
}

pub fn parse_sweep(text: &str) -> Result<Sweep, String> {
    Sweep::parse(text).ok_or_else(|| format!("unknown sweep `{text}` (quick, full)"))
}
