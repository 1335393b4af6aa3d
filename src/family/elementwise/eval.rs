//! The f64 evaluator of a body: the reference of user-declared elementwise ops (catalogue ops
//! are checked against the hand-written references in `crate::reference::activation`
//! instead). It evaluates the canonical form (`expr::canonical`), whose rewrites are exact
//! identities, with IEEE f64 arithmetic; erf, erfc and sigmoid come from the reference module,
//! the other functions from Rust's f64 methods.

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
