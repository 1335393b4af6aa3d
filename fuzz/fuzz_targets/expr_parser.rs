//! cargo-fuzz target: the checks live in fuzz/checks/expr_parser.rs (also replayed on the seed
//! corpus by `tests/it/fuzz_replay.rs` on stable).
#![no_main]

#[path = "../checks/expr_parser.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
