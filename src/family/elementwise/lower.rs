//! Lowering a canonical body to AscendC count-form vector calls on float32, with planned
//! temporaries.
//!
//! 1. **Instruction selection** (`Builder`): the tree is walked child-with-the-larger-need
//!    first (Sethi–Ullman order, so fewer values are live at once) into SSA instructions, one
//!    per vector call. Scalars fold into the scalar forms (`Adds`, `Muls`, `Mins`, `Maxs`);
//!    identical instructions are shared (CSE). erf, erfc, tanh and sigmoid expand into basic
//!    APIs whose arithmetic the twin reproduces exactly (see [`approximations`](self#approximations)).
//! 2. **Temporaries** (`allocate`): every value gets a UB register by linear-scan liveness. The
//!    registers are the inputs' float homes `in<i>` (free once the input's last use is passed),
//!    float temporaries `t<k>` (one TBuf each) and uint8 compare masks `m<k>`. A call may write
//!    over an operand that dies at that call (the vector APIs allow dst == src), else the
//!    lowest free register is reused, and only then a new temporary is planned. The last call
//!    writes `res`: the output tensor itself for float32 outputs, the register the allocator
//!    chose (`result`) for 16-bit outputs, which the kernel then rounds once with CAST_RINT.
//!
//! # Approximations
//!
//! All in float32, from Exp, Reciprocal, Div, Muls, Adds, Mul, Sub, Abs, Mins, CompareScalar
//! and Select (no high-level API):
//!
//! - **x · sigmoid(z)** (forward bodies) = x / (1 + e^−z): one Exp and one Div, and no
//!   intermediate below float32's normal range while the product is not (the quotient form's
//!   e^z is subnormal from z < −87.3). Where e^−z would overflow (z < −80) the Exp takes
//!   −z − 61 instead (exact there) and the result is scaled back by fl(e^−61) — after the
//!   caller's further product in `rne(x · sigmoid(z)) · v` (swiglu), so that product is not
//!   formed from a subnormal either (`RoundScaledOut` scales back first only when it rounds).
//! - **sigmoid(z)** otherwise = e^min(z,0) / (1 + e^−|z|) from one Exp, t = e^−|z|: the
//!   numerator is Select(z < 0, t, 1) (for z < 0, −|z| is z exactly, so this is bit for bit
//!   the two-Exp form), both exponents ≤ 0 (no overflow), 0 at −∞, 1 at +∞; a backward op's
//!   slope e^−|z| / (1 + e^−|z|)² shares t and 1 + t.
//! - **erfc(z)** for z ≥ 0: W. H. Press et al., *Numerical Recipes* (2nd ed., §6.2, `erfcc`):
//!   erfc(z) ≈ t·exp(−z² − 1.26551223 + t·(1.00002368 + t·(0.37409196 + … + t·0.17087277))),
//!   t = 1/(1 + z/2), a Chebyshev fit with **relative** error < 1.2e−7 for every z ≥ 0 (measured
//!   here against mpmath: ≤ 1.05e−7 on [0, 10]), so the tail keeps its relative accuracy;
//!   erfc(z) = 2 − erfc(−z) for z < 0 (Select on z ≥ 0).
//! - **erf(z)** = 1 − erfc(z) (sign by Select), except for |z| < 0.5 where it is the Maclaurin
//!   series (2/√π)·z·Σ (−1)ⁿz²ⁿ/(n!(2n+1)) to n = 6 (truncation < 1e−9 relative), which keeps
//!   relative accuracy for tiny z where 1 − erfc(z) would cancel.
//! - **tanh(u)** = 1 − 2/(1 + e^2u) (±1 at ±∞), except for |u| < 0.25 where it is the Taylor
//!   series u·(1 − u²/3 + 2u⁴/15 − 17u⁶/315 + 62u⁸/2835) (truncation < 1e−8 relative).
//! - **log1p(y)**: for |y| < 0.5, log(u) − ((u − 1) − y)/u with u = 1 + y in float32: u − 1 is
//!   exact there (Sterbenz) and (u − 1) − y is exactly the rounding error δ of 1 + y (as in
//!   TwoSum), so log(1 + y) = log(u − δ) ≈ log(u) − δ/u keeps y's low bits (for tiny y, u = 1
//!   and the result is y itself); elsewhere Ln(1 + y).
//! - **softplus(u)** = max(u, 0) + log1p(e^−|u|): the exponent is ≤ 0 (no overflow), and for
//!   u ≪ 0 the value is log1p(e^u) ≈ e^u with full relative accuracy where log(1 + e^u) is 0.
//! - **expm1(u)**: for |u| < 0.5 the Maclaurin series u·Σ uᵏ/(k+1)! to k = 8 (truncation
//!   < 6e−10 relative), which keeps relative accuracy where e^u − 1 cancels; elsewhere
//!   Exp(u) − 1.
//! - **step(u)** = Select(u > 0, 1, 0) and **sign(u)** = Select(u > 0, 1, Select(u < 0, −1, u))
//!   on Duplicate'd constants (sign keeps ±0 and NaN).
//! - **pow(x, n)**: binary exponentiation by Mul (n < 0: then Reciprocal; n = 0: Duplicate 1).
//! - **rsqrt** → Rsqrt, **log** → Ln, the rest map one to one.

use super::expr::{BinOp, Func, Node};
use crate::dtype::DType;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;

/// At most this many distinct attr-dependent scalars (tiling fields scalar0..).
pub const SCALAR_SLOTS: usize = 4;

/// At most this many temporaries and masks: each is a TBuf, and a TPipe manages 64 buffers
/// (the queues of up to 4 inputs and the output, and the inputs' float copies, take up to 14).
pub const MAX_REGISTERS: usize = 48;

/// The buffer name of Select's hidden scratch (dav_c220 TMP_UB_OFFSET) in [`Call::writes`].
const SELECT_SCRATCH: &str = "TMP_UB";

/// Why a body cannot be lowered.
#[derive(Debug, Clone, PartialEq)]
pub struct LowerError(pub String);

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One vector call of the program, as C++ (`count` is the kernel's element count `n`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Call {
    pub call: String,
    /// What the call computes, for the comment beside it.
    pub note: String,
    /// The UB buffers the call reads and writes (register names; `res<k>` counts as both its
    /// register and the output tile `y<k>`, which it is for a float32 output): what
    /// [`super::schedule`] orders calls by.
    #[serde(skip)]
    pub reads: Vec<String>,
    #[serde(skip)]
    pub writes: Vec<String>,
    /// A PipeBarrier<PIPE_V> follows the call: a later call depends on it or on a call beside
    /// it. Every call has one until [`super::schedule`] groups independent calls.
    pub barrier: bool,
}

/// An attr-dependent scalar the TilingFunc computes in double and stores as float.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScalarSlot {
    pub slot: usize,
    /// A C++ double expression over `attr<i>` variables.
    pub expr: String,
}

/// The lowered body.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Program {
    pub calls: Vec<Call>,
    /// Float32 temporaries t0.. (each one tile of floats).
    pub temps: usize,
    /// uint8 compare masks m0.. (each tile/8 bytes).
    pub masks: usize,
    /// Per output k, the register `res<k>` aliases when that output is 16-bit (`in<i>` or
    /// `t<k>`); a float32 output is written in place instead.
    pub results: Vec<String>,
    pub scalars: Vec<ScalarSlot>,
    /// Indexes of the attrs the scalars read.
    pub attrs_used: Vec<usize>,
    /// A backward op's underflow rescue, run only in tiles that need it (see [`Guard`]).
    pub guard: Option<Guard>,
}

/// `calls[at..]`, the underflow rescues of a backward op's outputs (dy · x · e^-|u| formed
/// again from exponentials shifted by 2^64, where the plain value is below 2^-100), are about
/// a third of its calls and change a value only where its plain value is below 2^-100, so the
/// kernel runs them only in a tile that may have one: when the `ReduceMin` of `src`, the least
/// square of the plain values (0 for |value| < 2^-100), is not at least `below` (2^-100; NaN
/// runs them too). Otherwise every rescued output is its plain value: `skip`, the copies the
/// rescue's final Selects would have made.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Guard {
    pub at: usize,
    pub src: String,
    pub skip: Vec<String>,
    /// 2^-100 as a float literal.
    pub below: String,
}

// ---- scalars -----------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Lit(f64),
    /// A C++ double expression over attr<i> (computed by the TilingFunc).
    Host(String),
}

fn double_literal(v: f64) -> String {
    let s = format!("{v:?}");
    if v < 0.0 || s.starts_with('-') {
        format!("({s})")
    } else {
        s
    }
}

impl Scalar {
    fn host(&self) -> String {
        match self {
            Scalar::Lit(v) => double_literal(*v),
            Scalar::Host(e) => e.clone(),
        }
    }
    fn neg(&self) -> Scalar {
        match self {
            Scalar::Lit(v) => Scalar::Lit(-v),
            Scalar::Host(e) => Scalar::Host(format!("(-{e})")),
        }
    }
    fn is(&self, v: f64) -> bool {
        matches!(self, Scalar::Lit(c) if *c == v)
    }
}

fn lit(v: f64) -> Scalar {
    Scalar::Lit(v)
}

// ---- instructions ------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct V(usize);

#[derive(Debug, Clone, PartialEq)]
enum Inst {
    Unary(&'static str, V),
    Binary(&'static str, V, V),
    WithScalar(&'static str, V, Scalar),
    Dup(Scalar),
    /// Produces a mask: bit i = (src[i] <mode> scalar).
    Cmp(V, &'static str, Scalar),
    /// mask ? a : b
    Select(V, V, V),
    /// mask ? a : scalar (VSEL_TENSOR_SCALAR_MODE)
    SelectScalar(V, V, Scalar),
    /// The mask of a sigmoid product's tail that a `RoundScaled` clears: a compare of its own
    /// (never shared by CSE), `z < -SIGMOID_TAIL`.
    TailMask(V),
    /// rne(q) of a sigmoid product q scaled by e^SHIFT where the mask is set (the kernel's
    /// `RoundScaledOut`): under rounding = "hf" with a 16-bit output, q scaled back, rounded
    /// through the output dtype, and the mask cleared (the value is no longer scaled); otherwise
    /// q itself, still scaled, for the caller's multiplication to scale back after.
    RoundScaled(V, V),
}

impl Inst {
    fn operands(&self) -> Vec<V> {
        match self {
            Inst::Unary(_, a) | Inst::WithScalar(_, a, _) | Inst::Cmp(a, _, _) => vec![*a],
            Inst::Binary(_, a, b) => vec![*a, *b],
            Inst::Dup(_) => vec![],
            Inst::Select(m, a, b) => vec![*m, *a, *b],
            Inst::SelectScalar(m, a, _) => vec![*m, *a],
            Inst::TailMask(a) => vec![*a],
            Inst::RoundScaled(q, m) => vec![*q, *m],
        }
    }
    fn is_mask(&self) -> bool {
        matches!(self, Inst::Cmp(..) | Inst::TailMask(_))
    }
}

struct Def {
    inst: Inst,
    note: String,
}

enum Operand {
    Vector(V),
    Scalar(Scalar),
}

struct Builder {
    /// The 16-bit dtype the program is for, if one: root windows it needs not
    /// (`roots::Window::lean`) are left out.
    lean: Option<DType>,
    /// Lower x * sigmoid(z) as one quotient (`sigmoid_product`). Forward bodies only: a
    /// backward op needs sigmoid(z) itself too, which the product form would not share.
    sigmoid_products: bool,
    n_inputs: usize,
    input_names: Vec<String>,
    defs: Vec<Def>,
    memo: HashMap<String, V>,
}

// Coefficients (see the module doc).
const ERFCC_C0: f64 = -1.265_512_23;
/// 1.00002368 … 0.17087277 in ascending powers of t.
const ERFCC: [f64; 9] = [
    1.000_023_68,
    0.374_091_96,
    0.096_784_18,
    -0.186_288_06,
    0.278_868_07,
    -1.135_203_98,
    1.488_515_87,
    -0.822_152_23,
    0.170_872_77,
];
const ERF_SMALL: f64 = 0.5;
const LOG1P_SMALL: f64 = 0.5;
/// 2^-100: below it a backward op's value is taken from its shifted exponentials.
const UNDERFLOW: f64 = 7.888_609_052_210_118e-31;
const EXPM1_SMALL: f64 = 0.5;
/// x * sigmoid(z) takes its shifted tail below z = -SIGMOID_TAIL (e^-z overflows from 88.7).
const SIGMOID_TAIL: f64 = 80.0;
/// The tail's shift: an integer (so w - SHIFT is exact for |w| >= 64), >= TAIL - 61 = 19 below
/// the tail so 1 + e^(w - SHIFT) is e^(w - SHIFT) in float32, with e^-61 the integer in [40, 63]
/// whose float32 rounding is closest (0.05 of a float32 ulp), so the scale back adds no bias.
const SIGMOID_SHIFT: f64 = 61.0;

/// fl(e^-SIGMOID_SHIFT), the float32 constant that scales the tail back.
fn sigmoid_unshift() -> f64 {
    f64::from((-SIGMOID_SHIFT).exp() as f32)
}

/// 1/(k+1)!, k = 0..8: expm1(u) = u·Σ cₖuᵏ.
fn expm1_taylor() -> [f64; 9] {
    let mut out = [0.0; 9];
    let mut fact = 1.0;
    for (k, c) in out.iter_mut().enumerate() {
        fact *= (k + 1) as f64;
        *c = 1.0 / fact;
    }
    out
}
const TANH_SMALL: f64 = 0.25;

fn erf_taylor() -> [f64; 7] {
    // (2/√π)·(−1)ⁿ/(n!(2n+1)), n = 0..6, in ascending powers of z².
    let k = std::f64::consts::FRAC_2_SQRT_PI;
    let mut out = [0.0; 7];
    let mut fact = 1.0;
    for (n, c) in out.iter_mut().enumerate() {
        if n > 0 {
            fact *= n as f64;
        }
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        *c = k * sign / (fact * (2 * n + 1) as f64);
    }
    out
}

const TANH_TAYLOR: [f64; 5] = [1.0, -1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0];

/// (x, z) when a * b is x * sigmoid(z) (either order).
fn sigmoid_factor<'n>(a: &'n Node, b: &'n Node) -> Option<(&'n Node, &'n Node)> {
    match (a, b) {
        (x, Node::Call(Func::Sigmoid, z)) | (Node::Call(Func::Sigmoid, z), x) => Some((x, &**z)),
        _ => None,
    }
}

/// The rne(...) factor of a * b.
fn rounded<'n>(a: &'n Node, b: &'n Node) -> &'n Node {
    if matches!(a, Node::Call(Func::Rne | Func::RoundTo(_), _)) {
        a
    } else {
        b
    }
}

/// (x, z, v) when a * b is rne(x * sigmoid(z)) * v (either order).
fn rounded_sigmoid_factor<'n>(a: &'n Node, b: &'n Node) -> Option<(&'n Node, &'n Node, &'n Node)> {
    let (r, v) = match (a, b) {
        (r @ Node::Call(Func::Rne | Func::RoundTo(_), _), v)
        | (v, r @ Node::Call(Func::Rne | Func::RoundTo(_), _)) => (r, v),
        _ => return None,
    };
    match r {
        Node::Call(_, inner) => match &**inner {
            Node::Bin(BinOp::Mul, p, q) => sigmoid_factor(p, q).map(|(x, z)| (x, z, v)),
            _ => None,
        },
        _ => None,
    }
}

/// Registers a value is worth (Sethi–Ullman estimate), to order operands.
fn need(n: &Node) -> usize {
    if n.is_scalar() {
        return 0;
    }
    match n {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) => 0,
        Node::Neg(a) => need(a).max(1),
        Node::Call(f, a) => need(a).max(match f {
            Func::Sigmoid | Func::Expm1 | Func::Step => 2,
            Func::Tanh | Func::Erfc | Func::Log1p | Func::Softplus | Func::Sign => 3,
            Func::Erf => 4,
            _ => 1,
        }),
        Node::Powi(a, _) => need(a).max(2),
        Node::Patched(p) => need(&p.base).max(4),
        Node::Rescued(a, b) => need(a).max(need(b)) + 1,
        Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) => {
            let (x, y) = (need(a), need(b));
            if x == y {
                x + 1
            } else {
                x.max(y)
            }
        }
    }
}

/// The body as text, for comments.
pub fn show(n: &Node, inputs: &[String], attrs: &[String]) -> String {
    let s = |n: &Node| show(n, inputs, attrs);
    let atom = |n: &Node| match n {
        Node::Bin(..) => format!("({})", s(n)),
        Node::Const(c) if *c < 0.0 => format!("({})", s(n)),
        _ => s(n),
    };
    match n {
        Node::Input(i) => inputs.get(*i).cloned().unwrap_or_else(|| format!("in{i}")),
        Node::Attr(i) => attrs.get(*i).cloned().unwrap_or_else(|| format!("attr{i}")),
        Node::Const(c) => format!("{}", *c as f32),
        Node::Neg(a) => format!("-{}", atom(a)),
        Node::Bin(op, a, b) => {
            let sym = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "/",
            };
            let prec = |o: &BinOp| if matches!(o, BinOp::Add | BinOp::Sub) { 1 } else { 2 };
            let left = match &**a {
                Node::Bin(o, ..) if prec(o) >= prec(op) => s(a),
                _ => atom(a),
            };
            let right = match &**b {
                Node::Bin(o, ..) if prec(o) > prec(op) => s(b),
                _ => atom(b),
            };
            format!("{left} {sym} {right}")
        }
        Node::Min(a, b) => format!("min({}, {})", s(a), s(b)),
        Node::Max(a, b) => format!("max({}, {})", s(a), s(b)),
        Node::Call(f, a) => format!("{}({})", f.name(), s(a)),
        Node::Powi(a, k) => format!("pow({}, {k})", s(a)),
        Node::Patched(p) => {
            let roots: Vec<String> = p.windows.iter().map(|w| format!("{}", (w.hi + w.lo) as f32)).collect();
            format!("[{}; series near {} = {}]", s(&p.base), s(&Node::Input(p.input)), roots.join(", "))
        }
        Node::Rescued(a, _) => format!("{} [rescued from underflow]", s(a)),
    }
}

fn clip(text: String) -> String {
    const MAX: usize = 72;
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX - 3).collect();
        format!("{cut}...")
    }
}

impl Builder {
    fn emit(&mut self, inst: Inst, note: impl Into<String>) -> V {
        let key = format!("{inst:?}");
        if let Some(v) = self.memo.get(&key) {
            return *v;
        }
        let v = V(self.n_inputs + self.defs.len());
        self.defs.push(Def { inst, note: note.into() });
        self.memo.insert(key, v);
        v
    }
    fn unary(&mut self, api: &'static str, a: V, note: impl Into<String>) -> V {
        self.emit(Inst::Unary(api, a), note)
    }
    fn binary(&mut self, api: &'static str, a: V, b: V, note: impl Into<String>) -> V {
        self.emit(Inst::Binary(api, a, b), note)
    }
    fn with_scalar(&mut self, api: &'static str, a: V, s: Scalar, note: impl Into<String>) -> V {
        self.emit(Inst::WithScalar(api, a, s), note)
    }
    fn cmp(&mut self, a: V, mode: &'static str, s: Scalar, note: impl Into<String>) -> V {
        self.emit(Inst::Cmp(a, mode, s), note)
    }
    fn select(&mut self, m: V, a: V, b: V, note: impl Into<String>) -> V {
        self.emit(Inst::Select(m, a, b), note)
    }

    /// c[0] + x·(c[1] + x·(… + x·c[n])) by Muls/Adds/Mul.
    fn horner(&mut self, x: V, c: &[f64], what: &str) -> V {
        let n = c.len() - 1;
        let mut p = self.with_scalar("Muls", x, lit(c[n]), format!("{what}: Horner, degree {n}"));
        p = self.with_scalar("Adds", p, lit(c[n - 1]), "");
        for k in (0..n - 1).rev() {
            p = self.binary("Mul", p, x, "");
            p = self.with_scalar("Adds", p, lit(c[k]), "");
        }
        p
    }

    /// One Exp: t = e^-|z| (never overflows), sigmoid(z) = (z < 0 ? t : 1) / (1 + t), bit for
    /// bit the former e^min(z, 0) / (1 + e^-|z|) (for z < 0, -|z| is z exactly) without its
    /// second Exp. A backward op's sigmoid slope e^-|z| / (1 + e^-|z|)^2 shares t and 1 + t.
    fn sigmoid(&mut self, z: V) -> V {
        let b = self.unary("Abs", z, "|z|");
        let b = self.with_scalar("Muls", b, lit(-1.0), "-|z|");
        let t = self.unary("Exp", b, "e^-|z|");
        let d = self.with_scalar("Adds", t, lit(1.0), "1 + e^-|z|");
        let m = self.cmp(z, "LT", lit(0.0), "z < 0");
        let num = self.emit(Inst::SelectScalar(m, t, lit(1.0)), "e^min(z, 0) = z < 0 ? e^-|z| : 1");
        self.binary("Div", num, d, "sigmoid(z) = e^min(z, 0) / (1 + e^-|z|)")
    }

    /// x * sigmoid(z) = x / (1 + e^-z) with one Exp, one Div and no intermediate below float32's
    /// normal range where the product is not: the quotient of the sigmoid form is e^z, which
    /// is subnormal for z < -87.3 and loses its relative accuracy there, while x / (1 + e^-z)
    /// stays normal until the product itself underflows. e^-z overflows for z < -88.7, so there
    /// (mask z < -TAIL) the Exp takes -z - SHIFT instead, exact because |z| >= 64 makes SHIFT a
    /// multiple of z's ulp, and the quotient is x * e^(z + SHIFT) (1 + e^(w - SHIFT) is
    /// e^(w - SHIFT) in float32 from w - SHIFT >= 19). Returns (quotient, tail mask): the caller
    /// scales the tail back by fl(e^-SHIFT) ([`Builder::unshift_tail`]), after its own further
    /// product if it has one. `own_mask`: a mask no other value shares (RoundScaled clears it).
    fn sigmoid_product(&mut self, x: V, z: V, own_mask: bool) -> (V, V) {
        let w = self.negate(z, "sigmoid product: w = -z");
        let note = format!("z < -{SIGMOID_TAIL}: e^-z would overflow");
        let m = if own_mask {
            self.emit(Inst::TailMask(z), note)
        } else {
            self.cmp(z, "LT", lit(-SIGMOID_TAIL), note)
        };
        let ws = self.with_scalar(
            "Adds",
            w,
            lit(-SIGMOID_SHIFT),
            format!("w - {SIGMOID_SHIFT} (exact for |w| >= 64)"),
        );
        let a = self.select(m, ws, w, "the Exp argument, shifted in the tail");
        let e = self.unary("Exp", a, "e^w, or e^(w - shift) in the tail");
        let d = self.with_scalar("Adds", e, lit(1.0), "1 + e^w");
        let q = self.binary("Div", x, d, "x / (1 + e^-z), times e^shift in the tail");
        (q, m)
    }

    /// The tail's scale of [`Builder::sigmoid_product`] undone: value * fl(e^-SHIFT) where m.
    fn unshift_tail(&mut self, v: V, m: V) -> V {
        let s = self.with_scalar("Muls", v, lit(sigmoid_unshift()), format!("times e^-{SIGMOID_SHIFT}"));
        self.select(m, s, v, "x * sigmoid(z), the tail scaled back")
    }

    /// -v, folding into v's own Muls by a constant when it is one (exact either way).
    fn negate(&mut self, v: V, note: &str) -> V {
        if let Some(Def { inst: Inst::WithScalar("Muls", a, Scalar::Lit(c)), .. }) = self.def(v) {
            let (a, c) = (*a, *c);
            if c == -1.0 {
                return a;
            }
            return self.with_scalar("Muls", a, lit(-c), note.to_string());
        }
        self.with_scalar("Muls", v, lit(-1.0), note.to_string())
    }

    fn def(&self, v: V) -> Option<&Def> {
        v.0.checked_sub(self.n_inputs).and_then(|k| self.defs.get(k))
    }

    fn tanh(&mut self, u: V) -> V {
        let e = self.with_scalar("Muls", u, lit(2.0), "tanh: 2u");
        let e = self.unary("Exp", e, "e^2u");
        let e = self.with_scalar("Adds", e, lit(1.0), "1 + e^2u");
        let e = self.unary("Reciprocal", e, "1 / (1 + e^2u)");
        let e = self.with_scalar("Muls", e, lit(-2.0), "");
        let large = self.with_scalar("Adds", e, lit(1.0), "tanh(u) = 1 - 2 / (1 + e^2u)");
        let a = self.unary("Abs", u, "|u|");
        let m = self.cmp(a, "LT", lit(TANH_SMALL), format!("|u| < {TANH_SMALL}"));
        let u2 = self.binary("Mul", u, u, "u^2");
        let p = self.horner(u2, &TANH_TAYLOR, "tanh series in u^2");
        let small = self.binary("Mul", p, u, format!("tanh(u) for |u| < {TANH_SMALL}"));
        self.select(m, small, large, "tanh(u)")
    }

    /// erfc(a) for a = |z| (Numerical Recipes erfcc).
    fn erfc_abs(&mut self, a: V) -> V {
        let t = self.with_scalar("Muls", a, lit(0.5), "erfc: |z| / 2");
        let t = self.with_scalar("Adds", t, lit(1.0), "");
        let t = self.unary("Reciprocal", t, "t = 1 / (1 + |z| / 2)");
        let q = self.horner(t, &ERFCC, "erfcc polynomial in t");
        let q = self.binary("Mul", q, t, "");
        let q = self.with_scalar("Adds", q, lit(ERFCC_C0), "");
        let s = self.binary("Mul", a, a, "z^2");
        let q = self.binary("Sub", q, s, "");
        let q = self.unary("Exp", q, "");
        self.binary("Mul", t, q, "erfc(|z|) = t * e^(-z^2 - 1.26551223 + t * P(t))")
    }

    fn erfc(&mut self, z: V) -> V {
        let m = self.cmp(z, "GE", lit(0.0), "z >= 0");
        let a = self.unary("Abs", z, "|z|");
        let ans = self.erfc_abs(a);
        let neg = self.with_scalar("Muls", ans, lit(-1.0), "");
        let neg = self.with_scalar("Adds", neg, lit(2.0), "erfc(z) = 2 - erfc(|z|) for z < 0");
        self.select(m, ans, neg, "erfc(z)")
    }

    fn erf(&mut self, z: V) -> V {
        let a = self.unary("Abs", z, "|z|");
        let small_mask = self.cmp(a, "LT", lit(ERF_SMALL), format!("|z| < {ERF_SMALL}"));
        let sign_mask = self.cmp(z, "GE", lit(0.0), "z >= 0");
        let ans = self.erfc_abs(a);
        let pos = self.with_scalar("Muls", ans, lit(-1.0), "");
        let pos = self.with_scalar("Adds", pos, lit(1.0), "1 - erfc(|z|)");
        let neg = self.with_scalar("Adds", ans, lit(-1.0), "erfc(|z|) - 1");
        let large = self.select(sign_mask, pos, neg, "erf(z) for |z| >= 0.5");
        let z2 = self.binary("Mul", z, z, "z^2");
        let p = self.horner(z2, &erf_taylor(), "erf series in z^2");
        let small = self.binary("Mul", p, z, format!("erf(z) for |z| < {ERF_SMALL}"));
        self.select(small_mask, small, large, "erf(z)")
    }

    fn log1p(&mut self, y: V) -> V {
        let u = self.with_scalar("Adds", y, lit(1.0), "log1p: u = 1 + y");
        let large = self.unary("Ln", u, "log(u)");
        let d = self.with_scalar("Adds", u, lit(-1.0), "u - 1 (exact for |y| < 0.5)");
        let d = self.binary("Sub", d, y, "delta = (u - 1) - y, the rounding error of 1 + y");
        let d = self.binary("Div", d, u, "delta / u");
        let small = self.binary("Sub", large, d, "log1p(y) = log(u) - delta / u");
        let a = self.unary("Abs", y, "|y|");
        let m = self.cmp(a, "LT", lit(LOG1P_SMALL), format!("|y| < {LOG1P_SMALL}"));
        self.select(m, small, large, "log1p(y)")
    }

    fn softplus(&mut self, u: V) -> V {
        let a = self.unary("Abs", u, "softplus: |u|");
        let a = self.with_scalar("Muls", a, lit(-1.0), "-|u|");
        let e = self.unary("Exp", a, "e^-|u| (no overflow)");
        let l = self.log1p(e);
        let m = self.with_scalar("Maxs", u, lit(0.0), "max(u, 0)");
        self.binary("Add", m, l, "softplus(u) = max(u, 0) + log1p(e^-|u|)")
    }

    fn expm1(&mut self, u: V) -> V {
        let e = self.unary("Exp", u, "expm1: e^u");
        let large = self.with_scalar("Adds", e, lit(-1.0), "e^u - 1 for |u| >= 0.5");
        let a = self.unary("Abs", u, "|u|");
        let m = self.cmp(a, "LT", lit(EXPM1_SMALL), format!("|u| < {EXPM1_SMALL}"));
        let p = self.horner(u, &expm1_taylor(), "expm1 series in u");
        let small = self.binary("Mul", p, u, format!("expm1(u) for |u| < {EXPM1_SMALL}"));
        self.select(m, small, large, "expm1(u)")
    }

    /// The underflow rescue's mask: |p| < 2^-100.
    fn tiny(&mut self, p: V) -> V {
        let a = self.unary("Abs", p, "underflow rescue: |value|");
        self.cmp(a, "LT", lit(UNDERFLOW), "|value| < 2^-100: an exponential underflowed")
    }

    /// p, or where m is set the shifted value q scaled back.
    fn rescue(&mut self, m: V, p: V, q: V) -> V {
        let r = self.with_scalar(
            "Muls",
            q,
            lit(super::diff::unshift()),
            "the value from exponentials shifted by 2^64, scaled back",
        );
        self.select(m, r, p, "the value, rescued from float32 underflow")
    }

    /// A sum near its roots: Select(|t| < r, t·G(t/r), sum) per window (`roots.rs`).
    fn patched(&mut self, base: V, x: V, windows: &[super::roots::Window]) -> V {
        let mut out = base;
        let lean = self.lean;
        for w in windows.iter().filter(|w| !lean.is_some_and(|d| w.lean.contains(&d))) {
            let root = (w.hi + w.lo) as f32;
            let t = self.with_scalar(
                "Adds",
                x,
                lit(-w.hi),
                format!("series near the root {root}: x - x0_hi (exact)"),
            );
            let t = self.with_scalar("Adds", t, lit(-w.lo), "t = (x - x0_hi) - x0_lo");
            let a = self.unary("Abs", t, "|t|");
            let m = self.cmp(a, "LT", lit(super::roots::RADIUS), format!("|t| < {}", super::roots::RADIUS));
            // G(u) at u = t / r evaluated in t: r is a power of two, so the coefficients
            // c_k / r^k and every Horner step are those of u scaled exactly (one Muls fewer).
            let in_t: Vec<f64> =
                w.coeffs.iter().enumerate().map(|(k, c)| c / super::roots::RADIUS.powi(k as i32)).collect();
            let g = self.horner(t, &in_t, "G(t / r), the sum / t near the root");
            let p = self.binary("Mul", g, t, "t * G(t / r)");
            out = self.select(
                m,
                p,
                out,
                format!("the sum, by its series within {} of {root}", super::roots::RADIUS),
            );
        }
        out
    }

    fn step(&mut self, z: V) -> V {
        let one = self.emit(Inst::Dup(lit(1.0)), "1");
        let zero = self.emit(Inst::Dup(lit(0.0)), "0");
        let m = self.cmp(z, "GT", lit(0.0), "u > 0");
        self.select(m, one, zero, "step(u) = u > 0 ? 1 : 0")
    }

    fn sign(&mut self, z: V) -> V {
        let one = self.emit(Inst::Dup(lit(1.0)), "1");
        let minus = self.emit(Inst::Dup(lit(-1.0)), "-1");
        let pos = self.cmp(z, "GT", lit(0.0), "u > 0");
        let negm = self.cmp(z, "LT", lit(0.0), "u < 0");
        let inner = self.select(negm, minus, z, "u < 0 ? -1 : u (keeps +-0 and NaN)");
        self.select(pos, one, inner, "sign(u)")
    }

    fn powi(&mut self, x: V, n: i32, note: &str) -> V {
        if n == 0 {
            return self.emit(Inst::Dup(lit(1.0)), format!("{note} = 1"));
        }
        let mut k = n.unsigned_abs();
        // Binary exponentiation: square the base, multiply into the result at set bits.
        let mut base = x;
        let mut acc: Option<V> = None;
        loop {
            if k & 1 == 1 {
                acc = Some(match acc {
                    None => base,
                    Some(a) => self.binary("Mul", a, base, ""),
                });
            }
            k >>= 1;
            if k == 0 {
                break;
            }
            base = self.binary("Mul", base, base, "");
        }
        let v = acc.expect("n != 0");
        if n < 0 {
            self.unary("Reciprocal", v, note.to_string())
        } else {
            v
        }
    }

    fn lower(&mut self, n: &Node, attrs: &[String]) -> Result<Operand, LowerError> {
        let note = clip(show(n, &self.input_names, attrs));
        Ok(match n {
            Node::Input(i) => Operand::Vector(V(*i)),
            Node::Attr(i) => Operand::Scalar(Scalar::Host(format!("attr{i}"))),
            Node::Const(c) => Operand::Scalar(lit(*c)),
            Node::Neg(a) => match self.lower(a, attrs)? {
                Operand::Scalar(s) => Operand::Scalar(s.neg()),
                Operand::Vector(v) => Operand::Vector(self.with_scalar("Muls", v, lit(-1.0), note)),
            },
            Node::Call(Func::Rne | Func::RoundTo(_), a) if a.is_scalar() => {
                return Err(LowerError(format!(
                    "rne({}) rounds a constant or attr expression; rne applies to values of the inputs",
                    show(a, &self.input_names, attrs)
                )))
            }
            Node::Call(f, a) => match self.lower(a, attrs)? {
                Operand::Scalar(s) => Operand::Scalar(Scalar::Host(host_call(*f, &s.host()))),
                Operand::Vector(v) => Operand::Vector(match f {
                    Func::Exp => self.unary("Exp", v, note),
                    Func::Log => self.unary("Ln", v, note),
                    Func::Sqrt => self.unary("Sqrt", v, note),
                    Func::Rsqrt => self.unary("Rsqrt", v, note),
                    Func::Abs => self.unary("Abs", v, note),
                    Func::Tanh => self.tanh(v),
                    Func::Erf => self.erf(v),
                    Func::Erfc => self.erfc(v),
                    Func::Sigmoid => self.sigmoid(v),
                    Func::Softplus => self.softplus(v),
                    Func::Log1p => self.log1p(v),
                    Func::Expm1 => self.expm1(v),
                    Func::Sign => self.sign(v),
                    Func::Step => self.step(v),
                    // The kernel's RoundOut: through the output dtype under rounding = "hf".
                    Func::Rne | Func::RoundTo(_) => self.unary("RoundOut", v, note),
                }),
            },
            Node::Powi(a, k) => match self.lower(a, attrs)? {
                Operand::Scalar(s) => Operand::Scalar(Scalar::Host(format!("OpgenPowi({}, {k})", s.host()))),
                Operand::Vector(v) => Operand::Vector(self.powi(v, *k, &note)),
            },
            // rne(x * sigmoid(z)) * v (swiglu): the tail's scale is kept through the rounding (when
            // it does not round) and v's product, so neither x * sigmoid(z) nor its product with
            // v is formed below float32's normal range while the final value is not.
            Node::Bin(BinOp::Mul, a, b)
                if self.sigmoid_products && rounded_sigmoid_factor(a, b).is_some() =>
            {
                let (x, z, v) = rounded_sigmoid_factor(a, b).expect("checked");
                let rne_note = clip(show(rounded(a, b), &self.input_names, attrs));
                let (xo, zo) = self.pair(x, z, attrs)?;
                let vo = self.lower(v, attrs)?;
                match (xo, zo, vo) {
                    (Operand::Vector(xv), Operand::Vector(zv), Operand::Vector(vv)) => {
                        let (q, m) = self.sigmoid_product(xv, zv, true);
                        let r = self.emit(Inst::RoundScaled(q, m), rne_note);
                        let y = self.binary("Mul", r, vv, note);
                        Operand::Vector(self.unshift_tail(y, m))
                    }
                    // A scalar operand: the plain lowering (what was emitted here is dead code,
                    // which `live_defs` drops).
                    _ => self.binop(BinOp::Mul, a, b, note, attrs)?,
                }
            }
            Node::Bin(BinOp::Mul, a, b) if self.sigmoid_products && sigmoid_factor(a, b).is_some() => {
                let (x, z) = sigmoid_factor(a, b).expect("checked");
                match self.pair(x, z, attrs)? {
                    (Operand::Vector(xv), Operand::Vector(zv)) => {
                        let (q, m) = self.sigmoid_product(xv, zv, false);
                        Operand::Vector(self.unshift_tail(q, m))
                    }
                    // A scalar factor: the plain sigmoid and Muls.
                    _ => self.binop(BinOp::Mul, a, b, note, attrs)?,
                }
            }
            Node::Bin(op, a, b) => self.binop(*op, a, b, note, attrs)?,
            Node::Rescued(plain, scaled) => match (self.lower(plain, attrs)?, self.lower(scaled, attrs)?) {
                (Operand::Vector(p), Operand::Vector(q)) => {
                    let m = self.tiny(p);
                    Operand::Vector(self.rescue(m, p, q))
                }
                (p, _) => p,
            },
            Node::Patched(p) => match self.lower(&p.base, attrs)? {
                Operand::Scalar(s) => Operand::Scalar(s),
                Operand::Vector(base) => Operand::Vector(self.patched(base, V(p.input), &p.windows)),
            },
            Node::Min(a, b) | Node::Max(a, b) => {
                let is_min = matches!(n, Node::Min(..));
                let (x, y) = self.pair(a, b, attrs)?;
                match (x, y) {
                    (Operand::Scalar(p), Operand::Scalar(q)) => Operand::Scalar(Scalar::Host(format!(
                        "{}({}, {})",
                        if is_min { "OpgenMin" } else { "OpgenMax" },
                        p.host(),
                        q.host()
                    ))),
                    (Operand::Vector(v), Operand::Scalar(s)) | (Operand::Scalar(s), Operand::Vector(v)) => {
                        Operand::Vector(self.with_scalar(if is_min { "Mins" } else { "Maxs" }, v, s, note))
                    }
                    (Operand::Vector(p), Operand::Vector(q)) => {
                        Operand::Vector(self.binary(if is_min { "Min" } else { "Max" }, p, q, note))
                    }
                }
            }
        })
    }

    /// Lowers both operands, the one needing more registers first.
    fn pair(&mut self, a: &Node, b: &Node, attrs: &[String]) -> Result<(Operand, Operand), LowerError> {
        if need(b) > need(a) {
            let y = self.lower(b, attrs)?;
            let x = self.lower(a, attrs)?;
            Ok((x, y))
        } else {
            let x = self.lower(a, attrs)?;
            let y = self.lower(b, attrs)?;
            Ok((x, y))
        }
    }

    fn binop(
        &mut self,
        op: BinOp,
        a: &Node,
        b: &Node,
        note: String,
        attrs: &[String],
    ) -> Result<Operand, LowerError> {
        let (x, y) = self.pair(a, b, attrs)?;
        use Operand::{Scalar as S, Vector as Vv};
        Ok(match (op, x, y) {
            (_, S(p), S(q)) => {
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                };
                S(Scalar::Host(format!("({} {sym} {})", p.host(), q.host())))
            }
            (BinOp::Add, Vv(v), S(s)) | (BinOp::Add, S(s), Vv(v)) => Vv(self.with_scalar("Adds", v, s, note)),
            (BinOp::Sub, Vv(v), S(s)) => Vv(self.with_scalar("Adds", v, s.neg(), note)),
            (BinOp::Sub, S(s), Vv(v)) => {
                let negated = self.with_scalar("Muls", v, lit(-1.0), "");
                if s.is(0.0) {
                    Vv(negated)
                } else {
                    Vv(self.with_scalar("Adds", negated, s, note))
                }
            }
            (BinOp::Mul, Vv(v), S(s)) | (BinOp::Mul, S(s), Vv(v)) => {
                if s.is(1.0) {
                    Vv(v)
                } else {
                    Vv(self.with_scalar("Muls", v, s, note))
                }
            }
            (BinOp::Div, Vv(_), S(s)) if s.is(0.0) => {
                return Err(LowerError(format!("`{note}` divides by the constant 0")));
            }
            (BinOp::Div, Vv(v), S(s)) if s.is(1.0) => Vv(v),
            (BinOp::Div, Vv(v), S(s)) => match s {
                Scalar::Lit(c) => Vv(self.with_scalar("Muls", v, lit(1.0 / c), note)),
                Scalar::Host(e) => {
                    Vv(self.with_scalar("Muls", v, Scalar::Host(format!("(1.0 / {e})")), note))
                }
            },
            (BinOp::Div, S(s), Vv(v)) => {
                let r = self.unary("Reciprocal", v, "");
                if s.is(1.0) {
                    Vv(r)
                } else {
                    Vv(self.with_scalar("Muls", r, s, note))
                }
            }
            (_, Vv(p), Vv(q)) => {
                let api = match op {
                    BinOp::Add => "Add",
                    BinOp::Sub => "Sub",
                    BinOp::Mul => "Mul",
                    BinOp::Div => "Div",
                };
                Vv(self.binary(api, p, q, note))
            }
        })
    }
}

/// A function of an attr-dependent scalar, as C++ double arithmetic (cmath).
fn host_call(f: Func, a: &str) -> String {
    match f {
        Func::Exp => format!("std::exp({a})"),
        Func::Log => format!("std::log({a})"),
        Func::Sqrt => format!("std::sqrt({a})"),
        Func::Rsqrt => format!("(1.0 / std::sqrt({a}))"),
        Func::Abs => format!("std::fabs({a})"),
        Func::Tanh => format!("std::tanh({a})"),
        Func::Erf => format!("std::erf({a})"),
        Func::Erfc => format!("std::erfc({a})"),
        Func::Sigmoid => format!("(1.0 / (1.0 + std::exp(-{a})))"),
        Func::Softplus => format!("(std::fmax({a}, 0.0) + std::log1p(std::exp(-std::fabs({a}))))"),
        Func::Log1p => format!("std::log1p({a})"),
        Func::Expm1 => format!("std::expm1({a})"),
        Func::Sign => format!("(({a}) > 0.0 ? 1.0 : (({a}) < 0.0 ? -1.0 : ({a})))"),
        Func::Step => format!("(({a}) > 0.0 ? 1.0 : 0.0)"),
        // Unreachable: `lower` refuses rne of a scalar before it gets here.
        Func::Rne | Func::RoundTo(_) => format!("({a})"),
    }
}

/// A float32 literal of `v` (RNE from f64), or why it cannot be one.
pub fn float_literal(v: f64) -> Result<String, LowerError> {
    let f = v as f32;
    if !v.is_finite() || !f.is_finite() {
        return Err(LowerError(format!("the constant {v} is not a finite float32 value")));
    }
    let s = format!("{f:?}");
    let s = if s.contains('.') || s.contains('e') { s } else { format!("{s}.0") };
    Ok(format!("{s}f"))
}

// ---- registers ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reg {
    Home(usize),
    Temp(usize),
    Mask(usize),
}

impl Reg {
    fn name(self) -> String {
        match self {
            Reg::Home(i) => format!("in{i}"),
            Reg::Temp(k) => format!("t{k}"),
            Reg::Mask(k) => format!("m{k}"),
        }
    }
}

/// Lowers a canonical body over `n_inputs` inputs (one output, `res0`).
pub fn lower(node: &Node, inputs: &[String], attrs: &[String]) -> Result<Program, LowerError> {
    lower_with(std::slice::from_ref(node), inputs, attrs, true, None)
}

/// Lowers several canonical bodies over the same inputs into one program whose output k is
/// written to `res<k>`. One builder lowers them all, so a subexpression the outputs share (a
/// backward op's sigmoid, for every partial derivative) is computed once.
pub fn lower_many(nodes: &[Node], inputs: &[String], attrs: &[String]) -> Result<Program, LowerError> {
    lower_with(nodes, inputs, attrs, false, None)
}

/// [`lower_many`] for a kernel whose patched inputs are `dtype` (16-bit): without the root
/// windows that dtype needs not (`roots::Window::lean`).
pub fn lower_many_lean(
    nodes: &[Node],
    inputs: &[String],
    attrs: &[String],
    dtype: DType,
) -> Result<Program, LowerError> {
    lower_with(nodes, inputs, attrs, false, Some(dtype))
}

fn lower_with(
    nodes: &[Node],
    inputs: &[String],
    attrs: &[String],
    sigmoid_products: bool,
    lean: Option<DType>,
) -> Result<Program, LowerError> {
    let n_inputs = inputs.len();
    let mut b = Builder {
        lean,
        sigmoid_products,
        n_inputs,
        input_names: inputs.to_vec(),
        defs: Vec::new(),
        memo: HashMap::new(),
    };
    let mut roots: Vec<V> = Vec::new();
    // Outputs with an underflow rescue: (output, plain value, shifted form). Their plain values
    // come first, the rescues last, behind the guard.
    let mut rescued: Vec<(usize, V, &Node)> = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        if let Node::Rescued(plain, scaled) = node {
            if let Operand::Vector(p) = b.lower(plain, attrs)? {
                rescued.push((k, p, scaled));
                roots.push(p);
                continue;
            }
        }
        let v = match b.lower(node, attrs)? {
            Operand::Vector(v) => v,
            Operand::Scalar(_) => return Err(LowerError("the body reads no input".into())),
        };
        roots.push(v);
    }
    // Each output is a value of its own, defined by a call: an input, or a value an earlier
    // output already is, is copied. With one output the root is then the last call.
    let is_rescued = |k: usize| rescued.iter().any(|r| r.0 == k);
    for k in 0..roots.len() {
        let v = roots[k];
        let earlier = (0..k).any(|j| !is_rescued(j) && roots[j] == v);
        if !is_rescued(k) && (v.0 < n_inputs || earlier) {
            let def = Def { inst: Inst::WithScalar("Muls", v, lit(1.0)), note: "copy to the output".into() };
            b.defs.push(def);
            roots[k] = V(n_inputs + b.defs.len() - 1);
        }
    }
    let guard = if rescued.is_empty() { None } else { Some(b.guarded_rescues(&rescued, &mut roots, attrs)?) };
    // The guard's source is read by its ReduceMin, not by a call.
    let needed: Vec<V> = roots.iter().copied().chain(guard.map(|(_, src)| src)).collect();
    let defs = live_defs(&b.defs, n_inputs, &needed);
    let guard = guard.map(|(first, src)| {
        let at = defs.iter().position(|(v, _)| v.0 >= first).unwrap_or(defs.len());
        let plains: Vec<(V, V)> = rescued.iter().map(|(k, p, _)| (roots[*k], *p)).collect();
        GuardPlan { at, src, plains }
    });
    // Independent chains side by side (the rescue stays behind the guard) need fewer barriers
    // but keep more values alive, so a smaller tile: the program order is the one of the two
    // that the cost model prices lower.
    let at = guard.as_ref().map_or(defs.len(), |g| g.at);
    let mut paired = defs.clone();
    let rescue = paired.split_off(at);
    // The rescue keeps its SSA order and, in `allocate`, registers are reused at once there: it
    // rarely runs, so its barriers cost little and its registers would shrink every tile.
    let paired: Vec<(V, &Def)> = interleaved(paired).into_iter().chain(rescue).collect();
    let plain = allocate(&defs, n_inputs, &roots, attrs, guard.clone(), 1)?;
    let paired = allocate(&paired, n_inputs, &roots, attrs, guard, super::schedule::WIDTH)?;
    Ok(super::schedule::cheaper(plain, paired, n_inputs))
}

/// `defs` in [`super::schedule::interleave`]'s order (operands defined outside them are ready).
fn interleaved(defs: Vec<(V, &Def)>) -> Vec<(V, &Def)> {
    let at: HashMap<V, usize> = defs.iter().enumerate().map(|(k, (v, _))| (*v, k)).collect();
    let preds: Vec<Vec<usize>> = defs
        .iter()
        .map(|(_, d)| d.inst.operands().iter().filter_map(|o| at.get(o).copied()).collect())
        .collect();
    let mut defs: Vec<Option<(V, &Def)>> = defs.into_iter().map(Some).collect();
    super::schedule::interleave(&preds).into_iter().map(|k| defs[k].take().expect("each def once")).collect()
}

impl Builder {
    /// The rescues of `rescued` behind one guard: the guard's source min_k p_k² (the squares
    /// die there, so the guard keeps no value alive), then, from the returned value id on, each
    /// output's mask, shifted form and Select, which become the outputs.
    fn guarded_rescues(
        &mut self,
        rescued: &[(usize, V, &Node)],
        roots: &mut [V],
        attrs: &[String],
    ) -> Result<(usize, V), LowerError> {
        let mut src: Option<V> = None;
        for (_, p, _) in rescued {
            let sq = self.binary("Mul", *p, *p, "rescue guard: value^2 (0 where |value| < 2^-100)");
            src = Some(match src {
                None => sq,
                Some(s) => self.binary("Min", s, sq, "rescue guard: the outputs' least square"),
            });
        }
        let first = self.n_inputs + self.defs.len();
        // The rescue recomputes what it needs from the inputs (e^-|u|, 1 + e^-|u|, ...) rather
        // than share the plain values' registers: sharing would keep them live through every
        // tile's plain path for a rescue that rarely runs, and shrink the tile.
        self.memo.clear();
        for (k, p, scaled) in rescued {
            if let Operand::Vector(q) = self.lower(scaled, attrs)? {
                let m = self.tiny(*p);
                roots[*k] = self.rescue(m, *p, q);
            }
        }
        Ok((first, src.expect("one rescue at least")))
    }
}

/// The defs the roots need, in program order (value ids unchanged).
fn live_defs<'d>(defs: &'d [Def], n_inputs: usize, roots: &[V]) -> Vec<(V, &'d Def)> {
    let mut needed = vec![false; n_inputs + defs.len()];
    for r in roots {
        needed[r.0] = true;
    }
    for (k, d) in defs.iter().enumerate().rev() {
        if needed[n_inputs + k] {
            for o in d.inst.operands() {
                needed[o.0] = true;
            }
        }
    }
    defs.iter().enumerate().filter(|(k, _)| needed[n_inputs + k]).map(|(k, d)| (V(n_inputs + k), d)).collect()
}

/// A guard as `allocate` sees it: the index of the first guarded def, the guard's source, and
/// (output, plain value) per rescued output.
#[derive(Clone)]
struct GuardPlan {
    at: usize,
    src: V,
    plains: Vec<(V, V)>,
}

fn allocate(
    defs: &[(V, &Def)],
    n_inputs: usize,
    roots: &[V],
    attrs: &[String],
    guard: Option<GuardPlan>,
    width: usize,
) -> Result<Program, LowerError> {
    let mut last_use: HashMap<V, usize> = HashMap::new();
    for (idx, (_, d)) in defs.iter().enumerate() {
        for o in d.inst.operands() {
            last_use.insert(o, idx);
        }
    }
    // The guard's ReduceMin reads its source just before the first guarded call.
    if let Some(g) = &guard {
        last_use.insert(g.src, g.at);
    }
    let mut guard_src = String::new();
    let mut skip = Vec::new();
    // An output lives to the end: its register is what a 16-bit output is rounded from.
    for r in roots {
        last_use.insert(*r, usize::MAX);
    }
    let mut reg: HashMap<V, Reg> = (0..n_inputs).map(|i| (V(i), Reg::Home(i))).collect();
    let mut free_float: BTreeSet<Reg> = BTreeSet::new();
    let mut free_mask: BTreeSet<Reg> = BTreeSet::new();
    // Registers the last calls stopped reading, one entry per call, oldest first.
    let mut cooling: VecDeque<Vec<Reg>> = VecDeque::new();
    let (mut temps, mut masks) = (0usize, 0usize);
    // An input nothing reads frees its home at once.
    for i in 0..n_inputs {
        if !last_use.contains_key(&V(i)) {
            free_float.insert(Reg::Home(i));
        }
    }
    let mut slots: Vec<String> = Vec::new();
    let mut calls = Vec::new();
    let mut results = vec![String::new(); roots.len()];
    // Outputs are read and written by their names `res<k>` (a float32 output's register is the
    // output tensor itself).
    let out_name = |v: &V| roots.iter().position(|r| r == v).map(|k| format!("res{k}"));
    for (idx, (v, d)) in defs.iter().enumerate() {
        if let Some(g) = guard.as_ref().filter(|g| g.at == idx) {
            guard_src = reg[&g.src].name();
        }
        // A skipped rescue leaves each output its plain value, which is still in its register;
        // the rescue's Select writes over it, so for a 16-bit output that register is `res<k>`
        // and only a float32 output (the output tile) takes a copy.
        let rescued_plain = guard.as_ref().and_then(|g| g.plains.iter().find(|(out, _)| out == v));
        if let Some((out, plain)) = rescued_plain {
            let k = roots.iter().position(|r| r == out).expect("an output");
            skip.push(format!(
                "if constexpr (sizeof(TOut{k}) != 2) {{ Muls(res{k}, {}, 1.0f, n); }}",
                reg[plain].name()
            ));
        }
        let operands = d.inst.operands();
        let mut dying: Vec<Reg> = Vec::new();
        for o in &operands {
            if last_use.get(o) == Some(&idx) {
                let r = reg[o];
                if !dying.contains(&r) {
                    dying.push(r);
                }
            }
        }
        // A register the previous `width` - 1 calls stopped reading is not written yet: the
        // write would have to wait for that read (WAR), and the calls of an interleaved level
        // could not share it (super::schedule).
        // The rescue behind the guard is planned for the fewest registers (width 1).
        let width = if guard.as_ref().is_some_and(|g| idx >= g.at) { 1 } else { width };
        while cooling.len() >= width {
            for r in cooling.pop_front().expect("a cooling step") {
                match r {
                    Reg::Mask(_) => free_mask.insert(r),
                    _ => free_float.insert(r),
                };
            }
        }
        cooling.push_back(dying.clone());
        // RoundScaledOut reads its source after writing dst: they must differ.
        let avoid = match &d.inst {
            Inst::RoundScaled(q, _) => Some(reg[q]),
            _ => None,
        };
        let dst = if d.inst.is_mask() {
            let r = dying
                .iter()
                .copied()
                .find(|r| matches!(r, Reg::Mask(_)))
                .or_else(|| free_mask.first().copied());
            let r = r.unwrap_or_else(|| {
                masks += 1;
                Reg::Mask(masks - 1)
            });
            free_mask.remove(&r);
            r
        } else if let Some(r) = rescued_plain.map(|(_, plain)| reg[plain]) {
            // Its plain value dies here (the Select is its last use).
            free_float.remove(&r);
            r
        } else {
            let r = dying
                .iter()
                .copied()
                .find(|r| !matches!(r, Reg::Mask(_)) && Some(*r) != avoid)
                .or_else(|| free_float.iter().copied().find(|r| Some(*r) != avoid));
            let r = r.unwrap_or_else(|| {
                temps += 1;
                Reg::Temp(temps - 1)
            });
            free_float.remove(&r);
            r
        };
        // The call may write over an operand of its own that dies there (dst == src is allowed).
        if let Some(last) = cooling.back_mut() {
            last.retain(|r| *r != dst);
        }
        reg.insert(*v, dst);
        let dst_name = match out_name(v) {
            Some(res) => {
                let k = roots.iter().position(|r| r == v).expect("an output");
                results[k] = dst.name();
                res
            }
            None => dst.name(),
        };
        let name = |x: &V| out_name(x).unwrap_or_else(|| reg[x].name());
        let mut scalar = |s: &Scalar| -> Result<String, LowerError> {
            match s {
                Scalar::Lit(c) => float_literal(*c),
                Scalar::Host(e) => {
                    let k = match slots.iter().position(|x| x == e) {
                        Some(k) => k,
                        None => {
                            slots.push(e.clone());
                            slots.len() - 1
                        }
                    };
                    if k >= SCALAR_SLOTS {
                        return Err(LowerError(format!(
                            "the body needs more than {SCALAR_SLOTS} distinct attr-dependent scalars"
                        )));
                    }
                    Ok(format!("t_.scalar{k}"))
                }
            }
        };
        let call = match &d.inst {
            // rne: the output tile y0 is the 16-bit scratch (the final Cast overwrites it).
            Inst::Unary("RoundOut", a) => format!("RoundOut({dst_name}, {}, y0, n);", name(a)),
            Inst::Unary(api, a) => format!("{api}({dst_name}, {}, n);", name(a)),
            Inst::Binary(api, a, b2) => format!("{api}({dst_name}, {}, {}, n);", name(a), name(b2)),
            Inst::WithScalar(api, a, s) => format!("{api}({dst_name}, {}, {}, n);", name(a), scalar(s)?),
            Inst::Dup(s) => format!("Duplicate({dst_name}, {}, n);", scalar(s)?),
            Inst::Cmp(a, mode, s) => {
                format!("CompareScalar({dst_name}, {}, {}, CMPMODE::{mode}, n);", name(a), scalar(s)?)
            }
            Inst::Select(m, a, b2) => format!(
                "Select({dst_name}, {}, {}, {}, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);",
                name(m),
                name(a),
                name(b2)
            ),
            Inst::TailMask(a) => format!(
                "CompareScalar({dst_name}, {}, {}, CMPMODE::LT, n);",
                name(a),
                float_literal(-SIGMOID_TAIL)?
            ),
            Inst::RoundScaled(q, m) => format!(
                "RoundScaledOut({dst_name}, {}, {}, y0, {}, n);",
                name(q),
                name(m),
                float_literal(sigmoid_unshift())?
            ),
            Inst::SelectScalar(m, a, s) => format!(
                "Select({dst_name}, {}, {}, {}, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);",
                name(m),
                name(a),
                scalar(s)?
            ),
        };
        // The buffers behind the names: res<k> is its register (16-bit output) or the output
        // tile y<k> (float32); RoundOut and RoundScaledOut also write y0 (their 16-bit scratch),
        // and RoundScaledOut clears its mask.
        let buffers = |x: &V| -> Vec<String> {
            match roots.iter().position(|r| r == x) {
                Some(k) => vec![reg[x].name(), format!("y{k}")],
                None => vec![reg[x].name()],
            }
        };
        let reads: Vec<String> = operands.iter().flat_map(buffers).collect();
        let mut writes = buffers(v);
        // Select also writes 32 B at TMP_UB_OFFSET (dav_c220 stores its mask address or
        // scalar there; twin cmpsel.h): two Selects are never independent.
        match &d.inst {
            Inst::Unary("RoundOut", _) => writes.push("y0".into()),
            Inst::RoundScaled(_, m) => writes.extend([reg[m].name(), "y0".into(), SELECT_SCRATCH.into()]),
            Inst::Select(..) | Inst::SelectScalar(..) => writes.push(SELECT_SCRATCH.into()),
            _ => {}
        }
        calls.push(Call { call, note: d.note.clone(), reads, writes, barrier: true });
    }
    if temps + masks > MAX_REGISTERS {
        return Err(LowerError(format!(
            "the body needs {temps} temporaries and {masks} masks at once; at most {MAX_REGISTERS} fit: split it into several ops"
        )));
    }
    let attrs_used: Vec<usize> =
        (0..attrs.len()).filter(|i| slots.iter().any(|s| uses_attr(s, *i))).collect();
    Ok(Program {
        calls,
        temps,
        masks,
        results,
        scalars: slots.into_iter().enumerate().map(|(slot, expr)| ScalarSlot { slot, expr }).collect(),
        attrs_used,
        guard: match guard {
            Some(g) => Some(Guard { at: g.at, src: guard_src, skip, below: float_literal(UNDERFLOW)? }),
            None => None,
        },
    })
}

/// Whether a host expression reads `attr<i>` (as a whole word).
fn uses_attr(expr: &str, i: usize) -> bool {
    let word = format!("attr{i}");
    expr.match_indices(&word).any(|(at, _)| {
        let next = expr[at + word.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::super::expr::{canonical, parse, resolve, Scope};
    use super::*;

    fn program(body: &str, inputs: &[&str], attrs: &[&str]) -> Program {
        let inputs: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
        let attrs: Vec<String> = attrs.iter().map(|s| s.to_string()).collect();
        let node =
            canonical(resolve(&parse(body).unwrap(), Scope { inputs: &inputs, attrs: &attrs }).unwrap());
        lower(&node, &inputs, &attrs).unwrap()
    }

    fn calls(p: &Program) -> Vec<&str> {
        p.calls.iter().map(|c| c.call.as_str()).collect()
    }

    #[test]
    fn silu_is_one_quotient_with_one_exp() {
        let p = program("x * sigmoid(x)", &["x"], &[]);
        assert_eq!(
            calls(&p),
            [
                "Muls(t0, in0, -1.0f, n);",
                "CompareScalar(m0, in0, -80.0f, CMPMODE::LT, n);",
                "Adds(t1, t0, -61.0f, n);",
                "Select(t1, m0, t1, t0, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);",
                "Exp(t1, t1, n);",
                "Adds(t1, t1, 1.0f, n);",
                "Div(in0, in0, t1, n);",
                "Muls(t0, in0, 3.2213403e-27f, n);",
                "Select(res0, m0, t0, in0, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);",
            ]
        );
        assert_eq!((p.temps, p.masks), (2, 1));
    }

    #[test]
    fn a_sigmoid_alone_takes_one_exp() {
        // A backward op's bodies (lower_many) keep sigmoid(z) itself, to share it.
        let inputs = vec!["x".to_string()];
        let node = canonical(
            resolve(&parse("x * sigmoid(x)").unwrap(), Scope { inputs: &inputs, attrs: &[] }).unwrap(),
        );
        let p = lower_many(&[node], &inputs, &[]).unwrap();
        assert_eq!(
            calls(&p),
            [
                "Abs(t0, in0, n);",
                "Muls(t0, t0, -1.0f, n);",
                "Exp(t0, t0, n);",
                "Adds(t1, t0, 1.0f, n);",
                "CompareScalar(m0, in0, 0.0f, CMPMODE::LT, n);",
                "Select(t0, m0, t0, 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);",
                "Div(t0, t0, t1, n);",
                "Mul(res0, in0, t0, n);",
            ]
        );
    }

    #[test]
    fn the_tail_shift_is_exact_and_its_scale_unbiased() {
        // w - 61 is exact for every float32 w >= 64 (a multiple of w's ulp), and 1 + e^(w - 61)
        // is e^(w - 61) in float32 from w = 80 (1 < half an ulp of e^19).
        for w in [64.0f32, 80.0, 80.00001, 97.3, 127.99999, 149.0] {
            assert_eq!(f64::from(w - 61.0), f64::from(w) - 61.0, "{w}");
        }
        let e19 = 19f32.exp();
        assert_eq!(e19 + 1.0, e19);
        // fl(e^-61) is within 0.05 float32 ulp of e^-61 (the closest integer shift in [40, 63]).
        let rel = (sigmoid_unshift() / (-61f64).exp() - 1.0).abs();
        assert!(rel < 0.06 * 2f64.powi(-24), "{rel:e}");
    }

    #[test]
    fn scalars_fold_into_scalar_forms() {
        let p = program("(x - 3) / 2 + 1 / y - 2 * max(x, 0.5)", &["x", "y"], &[]);
        let c = calls(&p);
        assert!(c.contains(&"Adds(t0, in0, -3.0f, n);"), "{c:?}");
        assert!(c.contains(&"Muls(t0, t0, 0.5f, n);"), "{c:?}");
        assert!(c.iter().any(|s| s.starts_with("Reciprocal(")), "{c:?}");
        assert!(c.iter().any(|s| s.starts_with("Maxs(") && s.contains("0.5f")), "{c:?}");
    }

    #[test]
    fn pow_is_unrolled() {
        let p = program("pow(x, 5)", &["x"], &[]);
        assert_eq!(calls(&p), ["Mul(t0, in0, in0, n);", "Mul(t0, t0, t0, n);", "Mul(res0, in0, t0, n);"]);
        let p = program("pow(x, -2)", &["x"], &[]);
        assert_eq!(calls(&p), ["Mul(in0, in0, in0, n);", "Reciprocal(res0, in0, n);"]);
        let p = program("x + pow(x, 0)", &["x"], &[]);
        assert_eq!(calls(&p)[0], "Duplicate(t0, 1.0f, n);");
    }

    #[test]
    fn an_input_alone_is_copied_and_attrs_become_tiling_scalars() {
        let p = program("x", &["x"], &[]);
        assert_eq!(calls(&p), ["Muls(res0, in0, 1.0f, n);"]);
        let p = program("x * exp(-alpha) + beta", &["x"], &["alpha", "beta"]);
        assert_eq!(calls(&p), ["Muls(in0, in0, t_.scalar0, n);", "Adds(res0, in0, t_.scalar1, n);"]);
        assert_eq!(p.scalars[0].expr, "std::exp((-attr0))");
        assert_eq!(p.scalars[1].expr, "attr1");
        assert_eq!(p.attrs_used, [0, 1]);
        assert_eq!(p.temps, 0);
    }

    #[test]
    fn erf_uses_masks_and_select() {
        let p = program("erf(x)", &["x"], &[]);
        let c = calls(&p);
        assert_eq!(c.iter().filter(|s| s.starts_with("CompareScalar(")).count(), 2);
        assert_eq!(c.iter().filter(|s| s.starts_with("Select(")).count(), 2);
        assert!(c.last().unwrap().starts_with("Select(res0, "));
        assert_eq!(p.masks, 2);
        assert!(p.temps <= 4, "{p:?}");
    }

    #[test]
    fn two_selects_never_share_a_level() {
        // Select writes its mask address or scalar to the same 32 B at TMP_UB_OFFSET (twin
        // cmpsel.h), so the scheduler must keep a barrier between any two of them, even when
        // their registers differ (erf's two Selects: the sign and the series window).
        let p = super::super::schedule::schedule(program("erf(x) + sign(x)", &["x"], &[]));
        let mut selects_in_level = 0;
        for c in &p.calls {
            if c.call.starts_with("Select(") {
                assert!(c.writes.iter().any(|w| w == SELECT_SCRATCH), "{c:?}");
                selects_in_level += 1;
                assert!(selects_in_level <= 1, "two Selects between the same barriers: {:?}", p.calls);
            }
            if c.barrier {
                selects_in_level = 0;
            }
        }
    }

    #[test]
    fn division_by_a_zero_constant_is_an_error() {
        let inputs = vec!["x".to_string()];
        let node = canonical(
            resolve(&parse("x / (1 - 1)").unwrap(), Scope { inputs: &inputs, attrs: &[] }).unwrap(),
        );
        assert!(lower(&node, &inputs, &[]).unwrap_err().0.contains("divides by the constant 0"));
    }

    #[test]
    fn literals() {
        assert_eq!(float_literal(1.0).unwrap(), "1.0f");
        assert_eq!(float_literal(-0.5).unwrap(), "-0.5f");
        assert_eq!(float_literal(1e-6).unwrap(), "1e-6f");
        assert_eq!(float_literal(std::f64::consts::FRAC_1_SQRT_2).unwrap(), "0.70710677f");
        assert!(float_literal(1e39).is_err());
    }
}
