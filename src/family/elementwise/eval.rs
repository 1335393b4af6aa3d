//! The f64 evaluator of a body: the reference of user-declared elementwise ops (catalogue ops
//! are checked against the hand-written references in `crate::reference::activation`
//! instead). The reference evaluates the tree as written (`as_written`: parsed and resolved,
//! before `expr::canonical`), so a fold or rewrite bug is not shared by kernel and reference;
//! constant folding also uses it. IEEE f64 arithmetic; erf, erfc and sigmoid come from the
//! reference module, the other functions from Rust's f64 methods.

use super::expr::{BinOp, Func, Node};
use crate::reference::activation;

/// The value of one function at `v`.
pub fn apply(f: Func, v: f64) -> f64 {
    match f {
        Func::Exp => v.exp(),
        Func::Log => v.ln(),
        Func::Sqrt => v.sqrt(),
        Func::Rsqrt => 1.0 / v.sqrt(),
        Func::Abs => v.abs(),
        Func::Tanh => v.tanh(),
        Func::Erf => activation::erf(v),
        Func::Erfc => activation::erfc(v),
        Func::Sigmoid => activation::sigmoid(v),
        Func::Softplus => softplus(v),
        Func::Log1p => v.ln_1p(),
        Func::Expm1 => v.exp_m1(),
        Func::Sign => {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        }
        Func::Step => {
            if v > 0.0 {
                1.0
            } else {
                0.0
            }
        }
        // Unbound rne is the `once` meaning; `expr::bind_rounding` gives the `hf` one.
        Func::Rne => v,
        Func::RoundTo(d) => crate::tensor::round_to_dtype(d, v),
    }
}

/// log(1 + e^v) = max(v, 0) + log1p(e^-|v|): no overflow for large v, no cancellation for
/// v ≪ 0 (where it is e^v).
pub fn softplus(v: f64) -> f64 {
    if v.is_nan() {
        return v;
    }
    v.max(0.0) + (-v.abs()).exp().ln_1p()
}

/// min/max with NaN propagation (the vector Min/Max of the twin propagate NaN too).
pub fn min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

pub fn max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

/// x^n for an integer n (x^0 = 1, also for NaN, as IEEE pown).
pub fn powi(x: f64, n: i32) -> f64 {
    x.powi(n)
}

/// The body at one point: `inputs[i]` is input i's value, `attrs[i]` numeric attr i's.
pub fn eval(node: &Node, inputs: &[f64], attrs: &[f64]) -> f64 {
    match node {
        Node::Input(i) => inputs[*i],
        Node::Attr(i) => attrs[*i],
        Node::Const(c) => *c,
        Node::Neg(a) => -eval(a, inputs, attrs),
        Node::Bin(op, a, b) => {
            let (p, q) = (eval(a, inputs, attrs), eval(b, inputs, attrs));
            match op {
                BinOp::Add => p + q,
                BinOp::Sub => p - q,
                BinOp::Mul => p * q,
                BinOp::Div => p / q,
            }
        }
        Node::Min(a, b) => min(eval(a, inputs, attrs), eval(b, inputs, attrs)),
        Node::Max(a, b) => max(eval(a, inputs, attrs), eval(b, inputs, attrs)),
        Node::Call(f, a) => apply(*f, eval(a, inputs, attrs)),
        Node::Powi(a, n) => powi(eval(a, inputs, attrs), *n),
        // The math of a patched sum is the sum (the series is how float32 evaluates it).
        Node::Patched(p) => eval(&p.base, inputs, attrs),
        Node::Rescued(plain, _) => eval(plain, inputs, attrs),
    }
}

/// The body over whole tensors of equal length (the inputs' values, widened exactly).
pub fn eval_all(node: &Node, inputs: &[Vec<f64>], attrs: &[f64]) -> Vec<f64> {
    let n = inputs.first().map_or(0, Vec::len);
    let mut point = vec![0.0; inputs.len()];
    (0..n)
        .map(|k| {
            for (p, values) in point.iter_mut().zip(inputs) {
                *p = values[k];
            }
            eval(node, &point, attrs)
        })
        .collect()
}

/// Where float32 evaluation of a body loses its accuracy at one point: the subexpression
/// whose float32 result is much worse than its operands' (e.g. `log(1 + exp(x))` at x = −17,
/// whose operand 1 + e^−17 is within 4e−8 but rounds to 1, so the log is 0). Each node is
/// evaluated in f64 and in a float32 emulation (every operation and function rounded to float32
/// once; the kernel's approximations are at least that close, and a patched sum counts as
/// exact); the node with the largest growth of relative error over its operands is named.
#[derive(Debug, Clone, PartialEq)]
pub struct Loss {
    /// The subexpression (canonical form) and its operands, with values.
    pub node: Node,
    pub exact: f64,
    pub float32: f64,
    pub rel_err: f64,
    /// The worst relative error among its operands.
    pub operand_rel_err: f64,
}

fn rel(a: f64, exact: f64) -> f64 {
    if a == exact || (a.is_nan() && exact.is_nan()) {
        0.0
    } else if exact == 0.0 || !exact.is_finite() {
        f64::INFINITY
    } else {
        ((a - exact) / exact).abs()
    }
}

fn r32(v: f64) -> f64 {
    f64::from(v as f32)
}

/// (f64 value, float32-emulated value, relative error) of `node`, recording the worst loss.
fn walk(node: &Node, inputs: &[f64], attrs: &[f64], worst: &mut Option<Loss>) -> (f64, f64, f64) {
    let mut sub = |n: &Node| walk(n, inputs, attrs, worst);
    let (exact, f32v, operand) = match node {
        Node::Input(i) => (inputs[*i], r32(inputs[*i]), 0.0),
        Node::Attr(i) => (attrs[*i], r32(attrs[*i]), 0.0),
        Node::Const(c) => (*c, r32(*c), 0.0),
        Node::Patched(p) => {
            let e = eval(&p.base, inputs, attrs);
            (e, r32(e), 0.0)
        }
        Node::Rescued(plain, _) => return walk(plain, inputs, attrs, worst),
        Node::Neg(a) => {
            let (e, f, r) = sub(a);
            (-e, -f, r)
        }
        Node::Call(func, a) => {
            let (e, f, r) = sub(a);
            (apply(*func, e), r32(apply(*func, f)), r)
        }
        Node::Powi(a, k) => {
            let (e, f, r) = sub(a);
            (powi(e, *k), r32(powi(f, *k)), r)
        }
        Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) => {
            let ((ea, fa, ra), (eb, fb, rb)) = (sub(a), sub(b));
            let go = |p: f64, q: f64| match node {
                Node::Bin(BinOp::Add, ..) => p + q,
                Node::Bin(BinOp::Sub, ..) => p - q,
                Node::Bin(BinOp::Mul, ..) => p * q,
                Node::Bin(BinOp::Div, ..) => p / q,
                Node::Min(..) => min(p, q),
                _ => max(p, q),
            };
            (go(ea, eb), r32(go(fa, fb)), ra.max(rb))
        }
    };
    let r = rel(f32v, exact);
    let growth = |l: &Loss| l.rel_err / l.operand_rel_err.max(f64::from(f32::EPSILON));
    let candidate = Loss { node: node.clone(), exact, float32: f32v, rel_err: r, operand_rel_err: operand };
    if r > 1e-4 && worst.as_ref().is_none_or(|w| growth(&candidate) > growth(w)) {
        *worst = Some(candidate);
    }
    (exact, f32v, r)
}

/// The subexpression of `node` that loses the most accuracy in float32 at this point, if any
/// loses more than 1e-4 relative.
pub fn precision_loss(node: &Node, inputs: &[f64], attrs: &[f64]) -> Option<Loss> {
    let mut worst = None;
    walk(node, inputs, attrs, &mut worst);
    worst
}

/// One f64 rounding, with a margin for libm's functions (a few ulps, not correctly rounded).
const BOUND_EPS: f64 = 4.0 * f64::EPSILON;

/// The value of `node` at a point and a bound on its absolute error against the exact value of
/// the same expression (running error analysis: each operation adds its rounding, and carries
/// its operands' errors through its derivative).
pub fn bounded(node: &Node, x: &[f64], a: &[f64]) -> (f64, f64) {
    let eps = Eps { basic: BOUND_EPS, transcendental: BOUND_EPS, composite: BOUND_EPS };
    bounded_with(node, x, a, eps)
}

/// The relative error each kind of operation adds in [`bounded_with`].
#[derive(Debug, Clone, Copy)]
pub struct Eps {
    /// +, -, *, powers, abs, min/max: one rounding.
    pub basic: f64,
    /// Division, exp, log, sqrt, rsqrt: one call of the hardware's approximation.
    pub transcendental: f64,
    /// sigmoid, tanh, erf, erfc, softplus, log1p, expm1: functions built of several calls.
    pub composite: f64,
}

/// [`bounded`] for an evaluation whose operations round with the relative errors `eps` (a
/// float32 kernel's: `roots::lean_dtypes`).
pub fn bounded_with(node: &Node, x: &[f64], a: &[f64], eps: Eps) -> (f64, f64) {
    let bounded = |n: &Node, x: &[f64], a: &[f64]| bounded_with(n, x, a, eps);
    let own = match node {
        Node::Bin(BinOp::Div, ..) => eps.transcendental,
        Node::Call(Func::Exp | Func::Log | Func::Sqrt | Func::Rsqrt, _) => eps.transcendental,
        Node::Call(
            Func::Sigmoid | Func::Tanh | Func::Erf | Func::Erfc | Func::Softplus | Func::Log1p | Func::Expm1,
            _,
        ) => eps.composite,
        _ => eps.basic,
    };
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
            let v = if matches!(node, Node::Min(..)) { min(u, w) } else { max(u, w) };
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
                powi(u, n),
                if eu == 0.0 { 0.0 } else { slope * eu }
                    + (n.unsigned_abs() as f64) * eps.basic * powi(u, n).abs(),
            )
        }
        // Only generated derivatives hold these (a root series, an underflow rescue); a body
        // as parsed never does, so no bound is claimed.
        Node::Patched(_) | Node::Rescued(..) => (eval(node, x, a), f64::INFINITY),
        Node::Call(f, p) => {
            let (u, eu) = bounded(p, x, a);
            let v = apply(*f, u);
            // The largest |f'| over [u - eu, u + eu], bounded generously.
            let slope = match f {
                Func::Exp => (u + eu).exp(),
                Func::Log => 1.0 / (u.abs() - eu).max(0.0),
                Func::Sqrt => 0.5 / (u - eu).max(0.0).sqrt(),
                Func::Rsqrt => 0.5 / (u - eu).max(0.0).powf(1.5),
                Func::Abs | Func::Tanh | Func::Sigmoid | Func::Softplus | Func::Rne => 1.0,
                Func::Erf | Func::Erfc => 2.0 / std::f64::consts::PI.sqrt(),
                Func::Log1p => 1.0 / (1.0 + u - eu).max(0.0),
                Func::Expm1 => (u + eu).exp(),
                // A rounding is exact where the whole interval rounds to one value.
                Func::RoundTo(d) => {
                    let same = crate::tensor::round_to_dtype(*d, u - eu)
                        == crate::tensor::round_to_dtype(*d, u + eu);
                    if same {
                        0.0
                    } else {
                        f64::INFINITY
                    }
                }
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
    (v, e + own * v.abs())
}
