//! Root-local series for sums that cancel: the derivative of an activation is typically a sum
//! whose terms are O(1) and cancel where the derivative crosses zero (GeLU's minimum near
//! x = −0.75: σ(z) + x·σ'(z)·z' = 0; mish's near −1.19; silu's near −1.28). There float32
//! evaluation has an absolute error of a few 1e-8 while the value goes to 0, so near the root
//! the relative error is unbounded: the 16-bit 1-ULP bar and the float32 small-value bar
//! (|err| ≤ 2^-30 where |g| < 2^-14) fail.
//!
//! A sum `S` over one input x (no attrs) whose f64 values change sign at x0 — with terms that do
//! not vanish there, i.e. a cancellation — is therefore evaluated, for |x − x0| < r, as
//! S(x) = t·G(t/r) with t = (x − x0_hi) − x0_lo (x0 split into two float32 values; x − x0_hi is
//! exact near x0 by Sterbenz) and G the polynomial of least degree (at most 11) interpolating
//! S(x0 + t)/t at Chebyshev nodes within 1e-9 of it, fitted in f64 from the evaluator: every
//! degree is two vector calls per element of every tile, and silu's and GeLU's quotients are
//! that smooth by degree 6-8. t carries the root's exact position, G
//! has no cancellation (it is ≈ S'(x0) ≠ 0 in the window), so the product keeps float32
//! relative accuracy through the root. Outside the windows, and for NaN/Inf, the sum itself
//! is used. The f64 reference is never patched: it evaluates the sum as written.

use super::eval;
use super::expr::{BinOp, Node};
use crate::dtype::DType;
use crate::tensor::bits_to_f64;

/// Half-width of a window around a root (a power of two, so t/r is exact).
pub const RADIUS: f64 = 0.125;
/// Interpolation nodes (polynomial degree + 1): the fewest of these that fit.
const MIN_NODES: usize = 2;
const MAX_NODES: usize = 12;
/// Roots are searched on [-SEARCH, SEARCH] in steps of 1/64.
const SEARCH: f64 = 32.0;
/// At most this many windows per sum (each is 6 + 2·degree vector calls).
const MAX_WINDOWS: usize = 4;

/// One window: S(x) = t·Σ coeffs[k]·(t/r)^k for |t| < r, t = (x − hi) − lo.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The root x0 ≈ hi + lo, both float32 values.
    pub hi: f64,
    pub lo: f64,
    pub coeffs: Vec<f64>,
    /// The 16-bit input dtypes for which the window is left out ([`lean_dtypes`]): every value
    /// of the dtype in it is far enough from the root for the sum itself.
    pub lean: Vec<DType>,
}

/// The relative errors of the float32 operations in [`lean_dtypes`]' bound: a rounding (2^-24)
/// for the basic ones; 8.5 ulps (2^-23 each) for a division or an exponential, the perturbed
/// twin's moves (`opgen verify --perturb 8`, which the NPU's vector units need not beat) and
/// the rounding; twice that for a function built of two of them (sigmoid: Exp and Div).
const LEAN_EPS: eval::Eps = eval::Eps {
    basic: f32::EPSILON as f64 / 2.0,
    transcendental: 8.5 * f32::EPSILON as f64,
    composite: 17.0 * f32::EPSILON as f64,
};

/// The 16-bit dtypes whose values never need the window around `x0` (the sum over `input` of
/// `n` inputs): at each of their values within RADIUS of x0, the float32 sum's running error
/// bound (`eval::bounded_with` with LEAN_EPS) is below half an ulp of the dtype relative to the
/// sum (2^-p of a p-bit significand), so with the output's own rounding the 16-bit result stays
/// within the 1-ULP bar without the series. Their values are discrete: bfloat16's nearest to
/// silu's root -1.2785 are 0.0028 away, where the bound is 1.8e-3 relative (half an ulp: 3.9e-3);
/// float16 has one 1.4e-4 away, where it is 3e-2 (the window stays).
pub fn lean_dtypes(sum: &Node, input: usize, n: usize, x0: f64) -> Vec<DType> {
    [DType::BFloat16, DType::Float16]
        .into_iter()
        .filter(|&d| {
            let p = if d == DType::BFloat16 { 8 } else { 11 };
            let half_ulp = 2f64.powi(-p);
            (0..=u16::MAX).map(|b| bits_to_f64(d, u64::from(b))).filter(|x| (x - x0).abs() < RADIUS).all(
                |x| {
                    let mut point = vec![0.0; n];
                    point[input] = x;
                    let (v, e) = eval::bounded_with(sum, &point, &[], LEAN_EPS);
                    v != 0.0 && e <= half_ulp * v.abs()
                },
            )
        })
        .collect()
}

/// A sum with its windows.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    pub base: Node,
    /// The one input the sum reads.
    pub input: usize,
    pub windows: Vec<Window>,
}

/// `node` with every cancelling one-input sum patched (top down: a patched sum is not looked
/// into again). `n_inputs` is the op's input count.
pub fn patch(node: Node, n_inputs: usize) -> Node {
    if let Node::Bin(op @ (BinOp::Add | BinOp::Sub), a, b) = &node {
        if let Some(input) = single_input(&node, n_inputs) {
            let windows = find_windows(&node, *op, a, b, input, n_inputs);
            if !windows.is_empty() {
                return Node::Patched(Box::new(Patch { base: node, input, windows }));
            }
        }
    }
    let p = |m: Box<Node>| Box::new(patch(*m, n_inputs));
    match node {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) | Node::Patched(_) | Node::Rescued(..) => node,
        Node::Neg(a) => Node::Neg(p(a)),
        Node::Bin(op, a, b) => Node::Bin(op, p(a), p(b)),
        Node::Min(a, b) => Node::Min(p(a), p(b)),
        Node::Max(a, b) => Node::Max(p(a), p(b)),
        Node::Call(f, a) => Node::Call(f, p(a)),
        Node::Powi(a, k) => Node::Powi(p(a), k),
    }
}

/// The inputs of `node`'s patched sums with a window left out for `dtype` (ascending): a kernel
/// whose those inputs are `dtype` may take the program without those windows.
pub fn lean_inputs(node: &Node, dtype: DType, out: &mut Vec<usize>) {
    match node {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) => {}
        Node::Patched(p) => {
            if p.windows.iter().any(|w| w.lean.contains(&dtype)) && !out.contains(&p.input) {
                out.push(p.input);
                out.sort_unstable();
            }
        }
        Node::Neg(a) | Node::Call(_, a) | Node::Powi(a, _) => lean_inputs(a, dtype, out),
        Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) | Node::Rescued(a, b) => {
            lean_inputs(a, dtype, out);
            lean_inputs(b, dtype, out);
        }
    }
}

/// The input a node reads when it reads exactly one and no attr.
fn single_input(node: &Node, n_inputs: usize) -> Option<usize> {
    let mut used = vec![false; n_inputs];
    node.inputs_used(&mut used);
    let mut attrs = vec![false; 64];
    node.attrs_used(&mut attrs);
    if attrs.iter().any(|u| *u) {
        return None;
    }
    let mut it = used.iter().enumerate().filter(|(_, u)| **u);
    let (i, _) = it.next()?;
    it.next().is_none().then_some(i)
}

fn at(node: &Node, input: usize, n_inputs: usize, x: f64) -> f64 {
    let mut point = vec![0.0; n_inputs];
    point[input] = x;
    eval::eval(node, &point, &[])
}

fn find_windows(sum: &Node, _op: BinOp, a: &Node, b: &Node, input: usize, n: usize) -> Vec<Window> {
    let f = |x: f64| at(sum, input, n, x);
    let steps = (2.0 * SEARCH * 64.0) as i64;
    let mut windows: Vec<Window> = Vec::new();
    let mut prev_x = -SEARCH;
    let mut prev = f(prev_x);
    for k in 1..=steps {
        let x = -SEARCH + k as f64 / 64.0;
        let v = f(x);
        if prev.is_finite() && v.is_finite() && prev != 0.0 && v != 0.0 && (prev < 0.0) != (v < 0.0) {
            let x0 = bisect(&f, prev_x, x);
            let (ta, tb) = (at(a, input, n, x0).abs(), at(b, input, n, x0).abs());
            // A root of the sum where its terms are O(ulp) is no cancellation (x + κx³ at 0); a
            // sign change through a pole is no root.
            let cancels = ta > 1e-6 && f(x0).abs() <= 1e-9 * (ta + tb);
            let apart = windows.iter().all(|w| (w.hi + w.lo - x0).abs() > 2.0 * RADIUS);
            if cancels && apart && windows.len() < MAX_WINDOWS {
                if let Some(mut w) = (MIN_NODES..=MAX_NODES).find_map(|nodes| fit(&f, x0, nodes)) {
                    w.lean = lean_dtypes(sum, input, n, x0);
                    windows.push(w);
                }
            }
        }
        prev_x = x;
        prev = v;
    }
    windows
}

fn bisect(f: &impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    let neg_lo = f(lo) < 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if (f(mid) < 0.0) == neg_lo {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// G(u) = S(x0 + r·u)/(r·u) interpolated at `nodes` Chebyshev nodes on [-1, 1], as monomial
/// coefficients in u. `None` when the quotient changes sign in the window (a second root) or
/// the interpolant is not within 1e-9 of it.
fn fit(f: &impl Fn(f64) -> f64, x0: f64, nodes: usize) -> Option<Window> {
    let hi = f64::from(x0 as f32);
    let lo = f64::from((x0 - hi) as f32);
    let n = nodes;
    let nodes: Vec<f64> =
        (0..n).map(|j| (std::f64::consts::PI * (j as f64 + 0.5) / n as f64).cos()).collect();
    let values: Vec<f64> = nodes.iter().map(|u| f(x0 + RADIUS * u) / (RADIUS * u)).collect();
    if values.iter().any(|v| !v.is_finite()) || values.iter().any(|v| (*v < 0.0) != (values[0] < 0.0)) {
        return None;
    }
    // Vandermonde solve (Gaussian elimination with partial pivoting); well conditioned enough
    // in f64 for up to 12 Chebyshev nodes on [-1, 1].
    let mut m: Vec<Vec<f64>> = nodes
        .iter()
        .zip(&values)
        .map(|(u, v)| (0..n).map(|k| u.powi(k as i32)).chain([*v]).collect())
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        m.swap(col, pivot);
        let p = m[col][col];
        if p == 0.0 {
            return None;
        }
        let pivot_row = m[col].clone();
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let factor = r[col] / p;
                for (x, y) in r.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= factor * y;
                }
            }
        }
    }
    let coeffs: Vec<f64> = (0..n).map(|k| m[k][n] / m[k][k]).collect();
    // Root x0 ≈ hi + lo as the lowering sees it, and the fit within 1e-9 of the sum between
    // the nodes (relative to the quotient), or no window.
    let g = |u: f64| coeffs.iter().rev().fold(0.0, |acc, c| acc * u + c);
    let ok = (0..64).all(|k| {
        let u = -1.0 + (k as f64 + 0.5) / 32.0;
        let exact = f(x0 + RADIUS * u) / (RADIUS * u);
        (g(u) - exact).abs() <= 1e-9 * exact.abs()
    });
    ok.then_some(Window { hi, lo, coeffs, lean: Vec::new() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn bfloat16_leaves_silus_window_out_and_float16_keeps_it() {
        let inputs: Vec<String> = vec!["gate".into(), "up".into()];
        let body = super::super::analyse_backward("gate * sigmoid(gate) * up", "dy", &inputs, &[]).unwrap();
        let dtypes: Vec<&str> = body.variants.iter().map(|v| v.dtype).collect();
        assert_eq!(dtypes, ["bfloat16"], "{:?}", body.variants);
        assert_eq!(body.variants[0].inputs, [1]);
        assert!(body.variants[0].program.calls.len() < body.program.calls.len());
    }
}
