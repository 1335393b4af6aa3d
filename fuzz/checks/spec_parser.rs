//! Any bytes as a spec file: the parser and validator must return a spec or located errors,
//! never panic, and every error must name a line inside the text.
//!
//! Shared by the cargo-fuzz target (fuzz/fuzz_targets/) and the stable replay of the seed
//! corpus in `tests/it/fuzz_replay.rs`, so CI runs the same checks on every seed.

use std::path::Path;

/// The checks on one input; panics on a finding.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match ascend_opgen::family::parse_str(Path::new("kernels/fuzz.toml"), text) {
        Ok(spec) => {
            // A spec that validates must also render.
            let _ = ascend_opgen::codegen::render_project(&[&spec]);
        }
        Err(errors) => {
            let lines = text.lines().count().max(1) + 1;
            for e in &errors.0 {
                assert!(e.line <= lines, "error line {} past the text's {lines} lines: {e}", e.line);
            }
            let _ = errors.to_string();
        }
    }
}
