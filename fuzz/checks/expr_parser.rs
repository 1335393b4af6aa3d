//! Any bytes as an elementwise body (`[elementwise] body`): parsing, name resolution,
//! canonicalisation and lowering must return a value or errors, never panic (nor overflow the
//! stack), and every error must point at a character boundary inside the body, because spec
//! validation maps it to a line and column of the spec file. A body that resolves is also
//! evaluated in f64 (the reference of user-declared ops), raw and canonical, at fixed points
//! including NaN, ±Inf and extremes, and rendered as the comment text the kernel carries.
//!
//! Shared by the cargo-fuzz target (fuzz/fuzz_targets/) and the stable replay of the seed
//! corpus in `tests/it/fuzz_replay.rs`, so CI runs the same checks on every seed.

use ascend_opgen::family::elementwise::expr::{self, ExprError, Scope};
use ascend_opgen::family::elementwise::{analyse_body, eval, lower, schedule};

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

const ATTR_VALUES: [f64; 2] = [1.702, -0.5];

/// The raw and canonical values of a body at one point agree: the same NaN/Inf class, and
/// finite values within the sum of their error bounds.
pub fn agree(body: &str, point: &[f64], (r, er): (f64, f64), (c, ec): (f64, f64)) {
    let what = || {
        format!("body {body:?} at {point:?}: as written {r:e} (error <= {er:e}), canonical {c:e} (error <= {ec:e})")
    };
    if r.is_nan() || c.is_nan() {
        // An error bound that is itself NaN or infinite means the f64 evaluation says nothing.
        assert!(r.is_nan() == c.is_nan() || !(er + ec).is_finite(), "NaN on one side only: {}", what());
        return;
    }
    if r.is_infinite() || c.is_infinite() {
        assert!(r == c || !(er + ec).is_finite(), "infinities differ: {}", what());
        return;
    }
    // A NaN bound (0 * Inf in the bound's own arithmetic) says as little as an infinite one.
    let bound = er + ec;
    assert!(bound.is_nan() || (r - c).abs() <= bound, "the rewrite changed the value: {}", what());
}

fn check_position(body: &str, e: &ExprError) {
    assert!(e.pos <= body.len(), "error at byte {} past the body's {} bytes: {e}", e.pos, body.len());
    assert!(body.is_char_boundary(e.pos), "error at byte {} inside a character: {e}", e.pos);
    assert!(!e.message.is_empty(), "an error without a message at byte {}", e.pos);
}

/// The checks on one input; panics on a finding.
pub fn check(data: &[u8]) {
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
        // The tree as written is the reference of user ops; the canonical form is what the
        // kernel computes. Its rewrites are exact identities, so the two agree up to the
        // rounding errors of their f64 evaluations, which `bounded` bounds.
        let raw = eval::bounded(&node, &point, &ATTR_VALUES);
        let canon = eval::bounded(&canonical, &point, &ATTR_VALUES);
        assert!(
            raw.0.to_bits() == eval::eval(&node, &point, &ATTR_VALUES).to_bits() || raw.0.is_nan(),
            "eval::bounded() evaluates differently from eval::eval"
        );
        agree(body, &point, raw, canon);
    }
    let _ = lower::show(&canonical, &inputs, &attrs);
    // analyse_body's program is the lowering with its barriers placed between levels.
    let lowered = lower::lower(&canonical, &inputs, &attrs).map(schedule::schedule);

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
}
