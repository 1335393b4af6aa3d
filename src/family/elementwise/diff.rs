//! Symbolic differentiation of a canonical body, for the generated backward ops
//! (`<name>_grad`: dx_i = dy · ∂body/∂x_i).
//!
//! The chain rule runs over the tree with the derivative of each function written in a form
//! that keeps its accuracy in float32 (the same care as the canonical rewrites of the forward):
//!
//! | f(u) | f'(u) | why this form |
//! |---|---|---|
//! | sigmoid | e^−\|u\| / (1 + e^−\|u\|)² | s·(1 − s) cancels to 0 for u ≫ 0, where the value is e^−u; the two exponentials are the ones sigmoid(u) computes, so the lowering shares them |
//! | tanh | 4 · e^−\|2u\| / (1 + e^−\|2u\|)² | 1 − tanh² is 0 in float32 for \|u\| > 9, the value 4e^−2\|u\| is not |
//! | softplus | sigmoid(u) | |
//! | erf, erfc | ±(2/√π) · e^(−u²) | |
//! | log, log1p | 1/u, 1/(1 + u) | |
//! | exp, expm1 | e^u | |
//! | sqrt, rsqrt | 0.5 · rsqrt(u), −0.5 · rsqrt(u) / u | |
//! | abs | sign(u) | torch's abs backward: sgn(0) = 0 |
//! | max(a, b), min(a, b) | b' + step(a − b)·(a' − b'), b' + step(b − a)·(a' − b') | relu'(0) = 0, as torch's threshold_backward |
//! | sign, step | 0 | |
//!
//! Products of a/b use a'/b − (a/b)·(b'/b) rather than (a'b − ab')/b², which would overflow
//! for |b| > 1.8e19 in float32. The result is simplified as it is built (structural zeros and
//! ones, folded constants; see [`simplify`]) and then put in canonical form; the lowering shares
//! what the partial derivatives have in common (CSE), so a backward op computes e.g. its
//! sigmoid once for every output. Two float32 hazards are handled on the way: sums that cancel
//! at a root (`roots.rs`) and exponentials that underflow before the other factors would bring
//! the product back into range ([`rescue_underflow`]).

use super::expr::{canonical, is_const, neg, BinOp, Func, Node};
use std::f64::consts::FRAC_2_SQRT_PI;

fn c(v: f64) -> Node {
    Node::Const(v)
}

fn call(f: Func, a: Node) -> Node {
    Node::Call(f, Box::new(a))
}

fn is_zero(n: &Node) -> bool {
    is_const(n, 0.0)
}

/// a + b with zeros dropped and constants folded.
pub fn add(a: Node, b: Node) -> Node {
    match (a, b) {
        (Node::Const(p), Node::Const(q)) => c(p + q),
        (a, b) if is_zero(&b) => a,
        (a, b) if is_zero(&a) => b,
        (a, Node::Neg(b)) => sub(a, *b),
        (a, b) => Node::Bin(BinOp::Add, Box::new(a), Box::new(b)),
    }
}

/// a − b with zeros dropped and constants folded.
pub fn sub(a: Node, b: Node) -> Node {
    match (a, b) {
        (Node::Const(p), Node::Const(q)) => c(p - q),
        (a, b) if is_zero(&b) => a,
        (a, b) if is_zero(&a) => neg(b),
        (a, Node::Neg(b)) => add(a, *b),
        (a, b) => Node::Bin(BinOp::Sub, Box::new(a), Box::new(b)),
    }
}

/// a · b: a structural zero absorbs (a derivative term that does not exist), ones vanish,
/// constants fold and gather on the left (`c1 · (c2 · x)` → `(c1·c2) · x`), and a negation moves
/// out (it is exact).
pub fn mul(a: Node, b: Node) -> Node {
    match (a, b) {
        (Node::Const(p), Node::Const(q)) => c(p * q),
        (a, b) if is_zero(&a) || is_zero(&b) => c(0.0),
        (a, b) if is_const(&a, 1.0) => b,
        (a, b) if is_const(&b, 1.0) => a,
        (a, b) if is_const(&a, -1.0) => neg(b),
        (a, b) if is_const(&b, -1.0) => neg(a),
        (Node::Neg(a), b) => neg(mul(*a, b)),
        (a, Node::Neg(b)) => neg(mul(a, *b)),
        (x, Node::Const(q)) => mul(c(q), x),
        (Node::Const(p), Node::Bin(BinOp::Mul, l, r)) if matches!(*l, Node::Const(_)) => {
            let Node::Const(q) = *l else { unreachable!("matched above") };
            mul(c(p * q), *r)
        }
        (a, b) => Node::Bin(BinOp::Mul, Box::new(a), Box::new(b)),
    }
}

/// a / b with 0/b = 0 (structural), a/1 = a and folded constants.
pub fn div(a: Node, b: Node) -> Node {
    match (a, b) {
        (Node::Const(p), Node::Const(q)) if q != 0.0 => c(p / q),
        (a, _) if is_zero(&a) => c(0.0),
        (a, b) if is_const(&b, 1.0) => a,
        (a, b) => Node::Bin(BinOp::Div, Box::new(a), Box::new(b)),
    }
}

/// Rebuilds a tree through the simplifying constructors (bottom up).
pub fn simplify(n: Node) -> Node {
    match n {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) | Node::Patched(_) | Node::Rescued(..) => n,
        Node::Neg(a) => neg(simplify(*a)),
        Node::Bin(op, a, b) => {
            let (a, b) = (simplify(*a), simplify(*b));
            match op {
                BinOp::Add => add(a, b),
                BinOp::Sub => sub(a, b),
                BinOp::Mul => mul(a, b),
                BinOp::Div => div(a, b),
            }
        }
        Node::Min(a, b) => Node::Min(Box::new(simplify(*a)), Box::new(simplify(*b))),
        Node::Max(a, b) => Node::Max(Box::new(simplify(*a)), Box::new(simplify(*b))),
        Node::Call(f, a) => call(f, simplify(*a)),
        Node::Powi(a, k) => match (simplify(*a), k) {
            (_, 0) => c(1.0),
            (a, 1) => a,
            (a, k) => Node::Powi(Box::new(a), k),
        },
    }
}

/// sigmoid'(u) = sigmoid(u)·sigmoid(−u) = e^−|u| / (1 + e^−|u|)²: no cancellation, no overflow.
fn sigmoid_slope(u: Node) -> Node {
    let e = call(Func::Exp, neg(call(Func::Abs, u)));
    div(e.clone(), Node::Powi(Box::new(add(c(1.0), e)), 2))
}

/// f'(u) for one function, in its accurate form (the module table).
fn func_derivative(f: Func, u: &Node) -> Node {
    let s = |v: Node| call(Func::Sigmoid, v);
    match f {
        Func::Exp | Func::Expm1 => call(Func::Exp, u.clone()),
        Func::Log => div(c(1.0), u.clone()),
        Func::Log1p => div(c(1.0), add(c(1.0), u.clone())),
        Func::Sqrt => mul(c(0.5), call(Func::Rsqrt, u.clone())),
        Func::Rsqrt => div(mul(c(-0.5), call(Func::Rsqrt, u.clone())), u.clone()),
        Func::Abs => call(Func::Sign, u.clone()),
        Func::Tanh => mul(c(4.0), sigmoid_slope(mul(c(2.0), u.clone()))),
        Func::Erf => mul(c(FRAC_2_SQRT_PI), call(Func::Exp, neg(Node::Powi(Box::new(u.clone()), 2)))),
        Func::Erfc => mul(c(-FRAC_2_SQRT_PI), call(Func::Exp, neg(Node::Powi(Box::new(u.clone()), 2)))),
        Func::Sigmoid => sigmoid_slope(u.clone()),
        Func::Softplus => s(u.clone()),
        Func::Sign | Func::Step => c(0.0),
        // A rounding point passes the gradient straight through (derivative 1 almost everywhere).
        Func::Rne | Func::RoundTo(_) => c(1.0),
    }
}

/// ∂n/∂(input `wrt`), simplified but not yet canonical.
pub fn derivative(n: &Node, wrt: usize) -> Node {
    let d = |m: &Node| derivative(m, wrt);
    match n {
        Node::Input(i) => c(if *i == wrt { 1.0 } else { 0.0 }),
        Node::Attr(_) | Node::Const(_) => c(0.0),
        Node::Neg(a) => neg(d(a)),
        Node::Bin(op, a, b) => {
            let (da, db) = (d(a), d(b));
            match op {
                BinOp::Add => add(da, db),
                BinOp::Sub => sub(da, db),
                BinOp::Mul => add(mul(da, (**b).clone()), mul((**a).clone(), db)),
                BinOp::Div => {
                    let quotient = div((**a).clone(), (**b).clone());
                    sub(div(da, (**b).clone()), mul(quotient, div(db, (**b).clone())))
                }
            }
        }
        Node::Max(a, b) | Node::Min(a, b) => {
            let (da, db) = (d(a), d(b));
            if is_zero(&da) && is_zero(&db) {
                return c(0.0);
            }
            let gap = if matches!(n, Node::Max(..)) {
                sub((**a).clone(), (**b).clone())
            } else {
                sub((**b).clone(), (**a).clone())
            };
            add(db.clone(), mul(call(Func::Step, gap), sub(da, db)))
        }
        Node::Call(f, a) => {
            let da = d(a);
            if is_zero(&da) {
                return c(0.0);
            }
            mul(func_derivative(*f, a), da)
        }
        Node::Patched(p) => d(&p.base),
        Node::Rescued(plain, _) => d(plain),
        Node::Powi(a, k) => {
            let da = d(a);
            if is_zero(&da) || *k == 0 {
                return c(0.0);
            }
            let power = if *k == 1 { c(1.0) } else { Node::Powi(a.clone(), k - 1) };
            mul(mul(c(f64::from(*k)), power), da)
        }
    }
}

/// Every input index shifted by `by` (the forward's inputs follow dy in the backward op).
pub fn shift_inputs(n: &Node, by: usize) -> Node {
    let s = |m: &Node| Box::new(shift_inputs(m, by));
    match n {
        Node::Input(i) => Node::Input(i + by),
        Node::Attr(_) | Node::Const(_) => n.clone(),
        Node::Neg(a) => Node::Neg(s(a)),
        Node::Bin(op, a, b) => Node::Bin(*op, s(a), s(b)),
        Node::Min(a, b) => Node::Min(s(a), s(b)),
        Node::Max(a, b) => Node::Max(s(a), s(b)),
        Node::Call(f, a) => Node::Call(*f, s(a)),
        Node::Powi(a, k) => Node::Powi(s(a), *k),
        Node::Patched(p) => Node::Patched(Box::new(super::roots::Patch {
            base: shift_inputs(&p.base, by),
            input: p.input + by,
            windows: p.windows.clone(),
        })),
        Node::Rescued(a, b) => Node::Rescued(s(a), s(b)),
    }
}

/// The backward op's outputs for a canonical forward body over `n_inputs` inputs: output i is
/// dy · ∂body/∂x_i in the backward op's scope (input 0 is dy, input i + 1 is x_i), canonical,
/// with its cancelling one-input sums patched near their roots (`roots.rs`).
pub fn gradients(body: &Node, n_inputs: usize) -> Vec<Node> {
    (0..n_inputs)
        .map(|i| {
            let partial = simplify(derivative(body, i));
            let g = canonical(simplify(mul(Node::Input(0), shift_inputs(&partial, 1))));
            rescue_underflow(super::roots::patch(g, n_inputs + 1))
        })
        .collect()
}

/// 64·ln 2 as float32: e^(v + SHIFT) = e^v · e^SHIFT ≈ e^v · 2^64.
pub const SHIFT: f64 = 44.361_419_555_836_5;

/// The factor undoing the shift: e^-SHIFT for the float32 SHIFT, rounded once to float32.
pub fn unshift() -> f64 {
    f64::from((-f64::from(SHIFT as f32)).exp() as f32)
}

/// dy · up · x · e^-|u| (a backward op's product with the slope of a sigmoid) underflows in
/// float32 once e^-|u| does (|u| > 87, subnormal; > 104, zero) although the product is still a
/// bfloat16 value: dy · up can be 10^4. Where the plain value is below 2^-100, the same
/// product is taken from exponentials shifted by 2^64 (their arguments are ≤ 0 by
/// construction: -|u|, min(u, 0), so the shifted ones stay ≤ 1.8e19) and scaled back at the
/// end. The shift adds one float32 rounding of the exponent (≤ 2^-19 relative), far below a
/// bfloat16 ULP; the plain value is kept everywhere else.
pub fn rescue_underflow(node: Node) -> Node {
    match scaled(&node) {
        Some(s) => Node::Rescued(Box::new(node), Box::new(s)),
        None => node,
    }
}

/// `n · e^SHIFT` from shifted exponentials, when every path to `n`'s value goes through one
/// (sums: both terms; products and quotients: the numerator or one factor).
fn scaled(n: &Node) -> Option<Node> {
    let shift = |v: Node| call(Func::Exp, Node::Bin(BinOp::Add, Box::new(v), Box::new(c(SHIFT))));
    let nonpositive = |u: &Node| {
        matches!(u, Node::Neg(a) if matches!(**a, Node::Call(Func::Abs, _)))
            || matches!(u, Node::Min(_, b) if is_const(b, 0.0))
    };
    match n {
        Node::Bin(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            Some(Node::Bin(*op, Box::new(scaled(a)?), Box::new(scaled(b)?)))
        }
        Node::Bin(BinOp::Mul, a, b) => match scaled(a) {
            Some(s) => Some(Node::Bin(BinOp::Mul, Box::new(s), b.clone())),
            None => Some(Node::Bin(BinOp::Mul, a.clone(), Box::new(scaled(b)?))),
        },
        Node::Bin(BinOp::Div, a, b) => Some(Node::Bin(BinOp::Div, Box::new(scaled(a)?), b.clone())),
        Node::Neg(a) => Some(Node::Neg(Box::new(scaled(a)?))),
        Node::Patched(p) => scaled(&p.base),
        Node::Call(Func::Exp, u) if nonpositive(u) => Some(shift((**u).clone())),
        // sigmoid(u) = e^min(u, 0) / (1 + e^-|u|), its lowering's form.
        Node::Call(Func::Sigmoid, u) => {
            let num = shift(Node::Min(u.clone(), Box::new(c(0.0))));
            let den = add(c(1.0), call(Func::Exp, neg(call(Func::Abs, (**u).clone()))));
            Some(Node::Bin(BinOp::Div, Box::new(num), Box::new(den)))
        }
        _ => None,
    }
}
