//! Any bytes as an elementwise body (`[elementwise] body`): parsing, name resolution,
//! canonicalisation and lowering must return a value or errors, never panic (nor overflow the
//! stack), and every error must point at a character boundary inside the body, because spec
//! validation maps it to a line and column of the spec file. A body that resolves is also
//! evaluated in f64 (the reference of user-declared ops), raw and canonical, at fixed points
//! including NaN, ±Inf and extremes, and rendered as the comment text the kernel carries.
#![no_main]

use ascend_opgen::family::elementwise::expr::{self, ExprError, Scope};
use ascend_opgen::family::elementwise::{analyse_body, eval, lower};
use libfuzzer_sys::fuzz_target;

/// Input names of the catalogue bodies (x; gate, up) and two attrs.
const INPUTS: [&str; 3] = ["x", "gate", "up"];
const ATTRS: [&str; 2] = ["alpha", "beta"];

/// Values of (x, gate, up), with the attrs at (alpha, beta) = (1.702, -0.5).
const POINTS: [[f64; 3]; 6] = [
    [0.0, -0.0, 1.0],
    [-3.5, 2.25, -1e-3],
    [1e-30, -1e30, 65504.0],
    [f64::NAN, 1.0, -1.0],
    [f64::INFINITY, f64::NEG_INFINITY, 0.5],
    [f64::MIN_POSITIVE, f64::MAX, -f64::MAX],
];

fn check_position(body: &str, e: &ExprError) {
    assert!(e.pos <= body.len(), "error at byte {} past the body's {} bytes: {e}", e.pos, body.len());
    assert!(body.is_char_boundary(e.pos), "error at byte {} inside a character: {e}", e.pos);
    assert!(!e.message.is_empty(), "an error without a message at byte {}", e.pos);
}

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else { return };
    let inputs: Vec<String> = INPUTS.iter().map(|s| s.to_string()).collect();
    let attrs: Vec<String> = ATTRS.iter().map(|s| s.to_string()).collect();

    // Stage by stage, as the spec validator runs them (family::elementwise::check).
    let syntax = match expr::parse(body) {
        Ok(s) => s,
        Err(e) => {
            check_position(body, &e);
            assert!(analyse_body(body, &inputs, &attrs).is_err(), "analyse_body accepts what parse refuses");
            return;
        }
    };
    let node = match expr::resolve(&syntax, Scope { inputs: &inputs, attrs: &attrs }) {
        Ok(n) => n,
        Err(errors) => {
            assert!(!errors.is_empty(), "resolve failed without an error");
            for e in &errors {
                check_position(body, e);
            }
            return;
        }
    };
    let canonical = expr::canonical(node.clone());
    for point in POINTS {
        let _ = eval::eval(&node, &point, &[1.702, -0.5]);
        let _ = eval::eval(&canonical, &point, &[1.702, -0.5]);
    }
    let _ = lower::show(&canonical, &inputs, &attrs);
    let lowered = lower::lower(&canonical, &inputs, &attrs);

    // The one entry point the rest of the crate uses must agree with the stages.
    match (analyse_body(body, &inputs, &attrs), lowered) {
        (Ok(b), Ok(p)) => {
            assert_eq!(b.program, p, "analyse_body lowers differently from the stages");
            assert!(!b.program.calls.is_empty(), "a lowered body without a vector call");
            assert!(
                b.program.calls.last().is_some_and(|c| c.call.contains("(res0, ")),
                "the last call must write res"
            );
        }
        (Err(e), Err(_)) => {
            let _ = e.to_string();
        }
        (a, b) => panic!("analyse_body ({}) and the stages ({}) disagree", a.is_ok(), b.is_ok()),
    }
});
