//! Any bytes as an elementwise body (`[elementwise] body`): parsing, name resolution,
//! canonicalisation and lowering must return a value or errors, never panic (nor overflow the
//! stack), and every error must point at a character boundary inside the body, because spec
//! validation maps it to a line and column of the spec file. A body that resolves is also
//! evaluated in f64 (the reference of user-declared ops), raw and canonical, at fixed points
//! including NaN, ±Inf and extremes, and rendered as the comment text the kernel carries.
//!
//! Shared by the cargo-fuzz target (fuzz/fuzz_targets/) and the stable replay of the seed
//! corpus in `tests/fuzz_replay.rs`, so CI runs the same checks on every seed.

use ascend_opgen::family::elementwise::expr::{self, BinOp, ExprError, Func, Node, Scope};
use ascend_opgen::family::elementwise::{analyse_body, eval, lower};

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

/// One f64 rounding, with a margin for libm's functions (a few ulps, not correctly rounded).
const EPS: f64 = 4.0 * f64::EPSILON;

/// The value of `node` at a point and a bound on its absolute error against the exact value of
/// the same expression (running error analysis: each operation adds its rounding, and carries
/// its operands' errors through its derivative).
pub fn bounded(node: &Node, x: &[f64], a: &[f64]) -> (f64, f64) {
    let (v, e) = match node {
        Node::Input(i) => (x[*i], 0.0),
        Node::Attr(i) => (a[*i], 0.0),
        Node::Const(c) => (*c, 0.0),
        Node::Neg(p) => {
            let (v, e) = bounded(p, x, a);
            return (-v, e);
        }
        Node::Bin(op, p, q) => {
            let ((u, eu), (w, ew)) = (bounded(p, x, a), bounded(q, x, a));
            match op {
                BinOp::Add => (u + w, eu + ew),
                BinOp::Sub => (u - w, eu + ew),
                BinOp::Mul => (u * w, u.abs() * ew + w.abs() * eu + eu * ew),
                // |u/w| error: (eu + |u/w| ew) / (|w| - ew) while w is bounded away from 0.
                BinOp::Div => (
                    u / w,
                    if ew < w.abs() { (eu + (u / w).abs() * ew) / (w.abs() - ew) } else { f64::INFINITY },
                ),
            }
        }
        Node::Min(p, q) | Node::Max(p, q) => {
            let ((u, eu), (w, ew)) = (bounded(p, x, a), bounded(q, x, a));
            let v = if matches!(node, Node::Min(..)) { eval::min(u, w) } else { eval::max(u, w) };
            (v, eu.max(ew))
        }
        Node::Powi(p, n) => {
            let (u, eu) = bounded(p, x, a);
            let n = *n;
            // |d/du u^n| = |n u^(n-1)|, taken at the larger end of u's interval.
            let far = u.abs() + eu;
            let slope = if n == 0 {
                0.0
            } else {
                (n as f64).abs() * if n > 0 { far.powi(n - 1) } else { (u.abs() - eu).max(0.0).powi(n - 1) }
            };
            (
                eval::powi(u, n),
                if eu == 0.0 { 0.0 } else { slope * eu }
                    + (n.unsigned_abs() as f64) * EPS * eval::powi(u, n).abs(),
            )
        }
        // Only generated derivatives hold these (a root series, an underflow rescue); a body
        // as parsed never does, so no bound is claimed.
        Node::Patched(_) | Node::Rescued(..) => (eval::eval(node, x, a), f64::INFINITY),
        Node::Call(f, p) => {
            let (u, eu) = bounded(p, x, a);
            let v = eval::apply(*f, u);
            // The largest |f'| over [u - eu, u + eu], bounded generously.
            let slope = match f {
                Func::Exp => (u + eu).exp(),
                Func::Log => 1.0 / (u.abs() - eu).max(0.0),
                Func::Sqrt => 0.5 / (u - eu).max(0.0).sqrt(),
                Func::Rsqrt => 0.5 / (u - eu).max(0.0).powf(1.5),
                Func::Abs | Func::Tanh | Func::Sigmoid | Func::Softplus => 1.0,
                Func::Erf | Func::Erfc => 2.0 / std::f64::consts::PI.sqrt(),
                Func::Log1p => 1.0 / (1.0 + u - eu).max(0.0),
                Func::Expm1 => (u + eu).exp(),
                // Steps: flat, but an interval that reaches 0 may land on either side.
                Func::Sign | Func::Step => {
                    if u.abs() <= eu {
                        f64::INFINITY
                    } else {
                        0.0
                    }
                }
            };
            (v, if eu == 0.0 { 0.0 } else { slope * eu })
        }
    };
    (v, e + EPS * v.abs())
}

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
        let raw = bounded(&node, &point, &ATTR_VALUES);
        let canon = bounded(&canonical, &point, &ATTR_VALUES);
        assert!(
            raw.0.to_bits() == eval::eval(&node, &point, &ATTR_VALUES).to_bits() || raw.0.is_nan(),
            "bounded() evaluates differently from eval::eval"
        );
        agree(body, &point, raw, canon);
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
}
