//! The one comparison helper every op's outputs go through (DESIGN.md "Numerics policy").
//!
//! `expected` is the reference's **unrounded** f64 output g; RNE(g) is g rounded once to the
//! output dtype. Per output the report gives:
//! - **max ULP**: |ord(a) − ord(RNE(g))| on the ordered integer representation of the output
//!   dtype (sign-magnitude folded so ±0 are 0 apart and adjacent values 1 apart); for integer
//!   dtypes the absolute difference;
//! - **MERE / MARE**: mean / max of |a − g|/(|g| + 1e−7) (CANN precision standard,
//!   op-semantics.md §5.3);
//! - the **worst element** (flat index, multi-dim index, actual, expected, RNE(expected));
//! - **NaN/Inf**: NaN must meet NaN, ±Inf must meet the same Inf (RNE(g) overflowing to Inf
//!   counts as Inf); a mismatch fails and is reported with its index; these elements are left
//!   out of ULP and MERE/MARE.
//!
//! Gates ([`Tolerance`]): the CANN single-baseline standard MERE < T and MARE < 10·T, with
//! T = 2^-10 (fp16), 2^-7 (bf16), 2^-13 (fp32), is applied with every float rule except
//! `Bitwise`. Following the CANN/msprobe small-value domain (op-semantics §5.2, §5.3), elements
//! with |g| < S (2^-11 fp16, 2^-8 bf16, 2^-14 fp32) are not part of MERE/MARE — a correctly
//! rounded fp16 subnormal can have a relative error of several percent — and are instead held
//! to |a − g| ≤ A (2^-16 fp16/bf16, 2^-30 fp32), or ≤ 1 ULP from RNE(g), so that the CANN gate
//! never fails an element the project's own 1-ULP bar accepts. The per-element rule (ULP bar,
//! bits, integer distance) applies to every element, small or not.

use crate::dtype::DType;
use crate::tensor::{bits_to_f64, f64_to_bits, format_shape, unravel_index, HostTensor};
use std::fmt;

/// How an output is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// Computing outputs in 16-bit (and int8 quantisation): every element is RNE(expected),
    /// except where the exact value lies within `tie_window` float32 ulps (2^-24·|g| each) of
    /// the output dtype's rounding boundary — the midpoint of two 16-bit neighbours, or k + 0.5
    /// for integers — where a float32 kernel cannot decide the side and the other neighbour is
    /// accepted too (counted in [`Comparison::near_ties`]). Plus the bias gate and, for floats,
    /// the CANN gate.
    Rne { tie_window: u32 },
    /// Every element within `max_ulp` of RNE(expected), plus the bias gate and the CANN gate;
    /// with `mean_ulp`, also the bulk gate ([`BulkGate`]): the mean ULP distance within that bar
    /// (plus its sampling slack), so a kernel uniformly worse than the measured one fails
    /// where its worst element still passes `max_ulp` (float32 bars of hundreds of ULP are set
    /// by a few tail elements).
    Ulp { max_ulp: u32, mean_ulp: Option<f64> },
    /// Only the CANN gate (fp32 outputs of reductions, e.g. rstd, where no ULP bar holds).
    CannOnly,
    /// Outputs whose formula cancels (LayerNorm's y = (x − mean)·rstd·g + β near 0, its mean
    /// near 0): every element within `max_ulp` of RNE(expected), or within 2^`abs_log2` of the
    /// exact value — the float32 evaluation's error bound, absolute since it scales with the
    /// terms (|x − mean|·rstd·|g|, |β|), not with their sum. No CANN gate: its relative errors
    /// (MARE, and the small-value bar of 2^-30 for float32) measure the cancelled elements
    /// against a bound no float32 evaluation of such a formula meets (torch's own float32
    /// layer_norm included). The bias gate as `Ulp`'s. With `mean`, the bulk gate as `Ulp`'s
    /// over each element's distance on the looser of the two scales, in ULP:
    /// min(ulp, max_ulp·|a − g|/2^abs_log2), which lies in [0, max_ulp] for every element the
    /// per-element rule accepts (see [`BulkGate`]).
    UlpOrAbs { max_ulp: u32, abs_log2: i32, mean: Option<f64> },
    /// Every element's bits equal RNE(expected)'s (layout/copy ops). No CANN gate.
    Bitwise,
    /// Integer outputs: |actual − RNE(expected)| ≤ k (int8 quantisation: 1). No CANN gate.
    IntWithin(u32),
}

impl Tolerance {
    /// A `max_ulp` bar without a bulk bar (16-bit outputs, whose bias gate sees a kernel that
    /// leans; tests).
    pub const fn ulp(max_ulp: u32) -> Tolerance {
        Tolerance::Ulp { max_ulp, mean_ulp: None }
    }

    /// A `max_ulp` bar with the bulk bar set from `measured_mean`, the largest per-case mean ULP
    /// of today's kernel over the quick and full sweeps: [`BULK_FACTOR`] times it, and at least
    /// [`BULK_FLOOR`] (float32 outputs: see [`BulkGate`]).
    pub fn ulp_bulk(max_ulp: u32, measured_mean: f64) -> Tolerance {
        Tolerance::Ulp { max_ulp, mean_ulp: Some(bulk_bar(measured_mean)) }
    }

    /// `UlpOrAbs` with the bulk bar set from `measured_mean` as [`Tolerance::ulp_bulk`] does.
    pub fn ulp_or_abs_bulk(max_ulp: u32, abs_log2: i32, measured_mean: f64) -> Tolerance {
        Tolerance::UlpOrAbs { max_ulp, abs_log2, mean: Some(bulk_bar(measured_mean)) }
    }

    /// The gate of an output in the perturbed mode (`verify --perturb K`), where the twin moves
    /// the float32 results of Exp/Ln/Sqrt/Rsqrt/Reciprocal/Div by up to K ulp. The bars above are
    /// what a kernel reaches with libm-exact APIs (measured on the full sweep at K = 0); they
    /// cannot hold once those results move. What must still hold is what the hardware's
    /// acceptance asks of any kernel: CANN's precision standard (MERE/MARE per dtype), 16-bit
    /// outputs faithful (within one ULP of the exact value: either neighbour), the bias gate,
    /// and integers within one. Layout ops stay bitwise. The default mode keeps the tight bars.
    pub fn under_perturbation(self, dtype: DType) -> Tolerance {
        match self {
            Tolerance::Rne { .. } | Tolerance::Ulp { .. } if !dtype.is_float() => Tolerance::IntWithin(1),
            Tolerance::Rne { .. } | Tolerance::Ulp { .. } if dtype == DType::Float32 => Tolerance::CannOnly,
            Tolerance::Rne { .. } => Tolerance::ulp(1),
            // A 16-bit bar wider than one ULP (row_norm_grad's plain float32 path, whose float32
            // sums cancel) stays as wide: perturbed APIs do not make it more accurate.
            Tolerance::Ulp { max_ulp, .. } => Tolerance::ulp(max_ulp.max(1)),
            other => other,
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Rne { tie_window } => write!(f, "rne~{tie_window}"),
            Tolerance::Ulp { max_ulp, mean_ulp: None } => write!(f, "ulp<={max_ulp}+CANN"),
            Tolerance::Ulp { max_ulp, mean_ulp: Some(m) } => write!(f, "ulp<={max_ulp},mean<={m}+CANN"),
            Tolerance::UlpOrAbs { max_ulp, abs_log2, mean: None } => write!(f, "ulp<={max_ulp}|2^{abs_log2}"),
            Tolerance::UlpOrAbs { max_ulp, abs_log2, mean: Some(m) } => {
                write!(f, "ulp<={max_ulp}|2^{abs_log2},mean<={m}")
            }
            Tolerance::CannOnly => f.write_str("CANN"),
            Tolerance::Bitwise => f.write_str("bitwise"),
            Tolerance::IntWithin(k) => write!(f, "int±{k}"),
        }
    }
}

/// The CANN single-baseline threshold T for an output dtype (None for integers).
pub fn cann_threshold(dtype: DType) -> Option<f64> {
    match dtype {
        DType::Float16 => Some(2f64.powi(-10)),
        DType::BFloat16 => Some(2f64.powi(-7)),
        DType::Float32 => Some(2f64.powi(-13)),
        _ => None,
    }
}

/// The small-value domain bound S and its absolute-error threshold A (CANN / msprobe).
pub fn small_value_domain(dtype: DType) -> Option<(f64, f64)> {
    match dtype {
        DType::Float16 => Some((2f64.powi(-11), 2f64.powi(-16))),
        DType::BFloat16 => Some((2f64.powi(-8), 2f64.powi(-16))),
        DType::Float32 => Some((2f64.powi(-14), 2f64.powi(-30))),
        _ => None,
    }
}

/// The bulk gate's room over the measured clean mean ULP. The measured value is the largest
/// per-case mean, set by the cases that sit in a function's tail (NormalLargeMean with a mean
/// near −10: gelu_erf 31.5 against ~1 on uniform inputs), so the factor must stay small for a
/// uniformly worse kernel to fail on the other cases: gelu_erf x1.00001 adds 84-168 ULP per
/// element against a bar of 63. The same distribution's largest mean moved 4.7x between the
/// quick and the full sweep (its mean and σ are drawn per tensor), so a random case deeper in
/// the tail can exceed the bar where the 3.3·k/√n slack is small (large proptest draws).
pub const BULK_FACTOR: f64 = 2.0;

/// The least mean bar: where today's kernel is exact (rotary, the row-norm grads in float32:
/// mean 0.000), one element in 16 may be a ULP off before the bulk gate fails, which the
/// kernel's own 1- or 2-ULP max bar already allows element by element.
pub const BULK_FLOOR: f64 = 1.0 / 16.0;

/// The bulk bar of a measured clean mean: [`BULK_FACTOR`] times it, and at least [`BULK_FLOOR`].
fn bulk_bar(measured_mean: f64) -> f64 {
    (BULK_FACTOR * measured_mean).max(BULK_FLOOR)
}

/// One element, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementReport {
    pub flat: usize,
    pub index: Vec<usize>,
    pub actual: f64,
    /// The unrounded reference value g.
    pub expected: f64,
    /// RNE(g) in the output dtype.
    pub expected_rounded: f64,
    /// ULP distance (integer distance for int dtypes); 0 for NaN/Inf elements.
    pub ulp: u64,
    /// |a − g|/(|g| + 1e−7); 0 for NaN/Inf elements.
    pub rel_err: f64,
}

/// The CANN gate's view of an output (float dtypes only).
#[derive(Debug, Clone, PartialEq)]
pub struct CannGate {
    pub threshold: f64,
    pub passed: bool,
    /// Elements in the small-value domain (|g| < S), left out of MERE/MARE.
    pub small_count: usize,
    pub small_max_abs_err: f64,
    /// Small-value elements with |a − g| > A and more than 1 ULP from RNE(g).
    pub small_violations: usize,
}

impl CannGate {
    /// This gate with `other`'s small-value findings (the same output compared with another
    /// allowed value), the verdict recomputed from `mere` and `mare`.
    pub fn with_small_values_of(self, other: &CannGate, mere: f64, mare: f64) -> CannGate {
        CannGate {
            passed: gate_passes(self.threshold, mere, mare, other.small_violations),
            small_count: other.small_count,
            small_max_abs_err: other.small_max_abs_err,
            small_violations: other.small_violations,
            ..self
        }
    }
}

/// The CANN standard: MERE < T, MARE < 10·T, and no small-value element over its bar.
fn gate_passes(t: f64, mere: f64, mare: f64, small_violations: usize) -> bool {
    mere < t && mare < 10.0 * t && small_violations == 0
}

/// The result of [`compare`]; `passed()` is the verdict, `Display` a one-line summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub rule: Tolerance,
    /// Elements compared.
    pub count: usize,
    /// Over finite elements.
    pub max_ulp: u64,
    /// The mean ULP distance over the elements the per-element rule holds to a ULP bar (finite;
    /// for float32 not a subnormal g, as `Tolerance::Ulp`): how far the bulk of the output is,
    /// where `max_ulp` says how far its worst element is. 0 when there are none. For `UlpOrAbs`,
    /// each element's distance on the looser of its two scales (see [`Tolerance::UlpOrAbs`]).
    pub mean_ulp: f64,
    /// `Ulp` with a mean bar: the bulk gate (see [`BulkGate`]).
    pub bulk: Option<BulkGate>,
    /// Over finite elements outside the small-value domain (all finite elements for ints).
    pub mere: f64,
    pub mare: f64,
    /// Present when the rule applies the CANN gate.
    pub cann: Option<CannGate>,
    /// Largest ULP distance (largest relative error for `CannOnly`).
    pub worst: Option<ElementReport>,
    /// Elements breaking the per-element rule (ULP bar, bits, integer distance).
    pub violations: usize,
    pub first_violation: Option<ElementReport>,
    /// NaN/Inf position or sign mismatches.
    pub special_mismatches: usize,
    pub first_special_mismatch: Option<ElementReport>,
    /// A structural problem (sizes, dtypes, rule vs dtype); the comparison fails.
    pub problem: Option<String>,
    /// `Rne`: elements accepted at the other neighbour of RNE(g) because g is a near tie.
    pub near_ties: usize,
    /// The largest distance, in float32 ulps of g, between g and the rounding boundary over
    /// the elements that landed on the other neighbour (accepted or not): what a tie window
    /// must cover for this kernel.
    pub max_tie_distance: f64,
    /// `Rne`/`Ulp`: the bias gate (see [`BiasGate`]).
    pub bias: Option<BiasGate>,
}

/// The mean signed deviation of a 16-bit or integer output from the correctly rounded
/// reference, in ULP of the output dtype: d = (a − RNE(g))/ulp, over the finite elements; both as it is (a floor/ceil cast
/// leans one way) and folded by the sign of g (a truncating cast leans towards zero, a
/// rounding-away one away from it, whatever the signs).
///
/// Why against RNE(g) and not g: the sweep's references are not random within their ULP (gelu
/// of a tiny 16-bit x is x/2 plus a small positive term, so RNE(g) − g leans one way over a whole
/// case; measured: gelu_erf bf16 at 5 bounds), so only the kernel's own deviation says anything
/// about its rounding.
///
/// The bound: for a correct kernel d is 0 except where the rounding is undecidable in float32
/// (near ties, alternates: d = ±1) or, for a k-ULP bar, within ±k; d then lies in an interval of
/// width R = 2 (RNE rules) or 2k, and an unbiased kernel's deviations are centred on 0.
/// Hoeffding's inequality gives P(|mean| ≥ t) ≤ 2·exp(−2n t²/R²), so t = R·√(ln(2/δ)/2n) =
/// 3.27·R/√n at δ = 1e-9 per output and case (the full sweep compares ~10^4 outputs: a false
/// alarm has odds of ~1e-5). We use 3.3·R/√n. A truncating cast has |mean| ≈ ½ (folded), so it
/// fails from n ≈ 200 elements; a float32 kernel whose error leans one way moves only its near
/// ties (≤ 2·window·2^-24 of a 16-bit ULP: ~0.4% of the elements at a window of 16 in float16),
/// far below the bound at every sweep size.
#[derive(Debug, Clone, PartialEq)]
pub struct BiasGate {
    pub mean: f64,
    pub mean_toward_away: f64,
    pub bound: f64,
    pub count: usize,
}

impl BiasGate {
    pub fn passed(&self) -> bool {
        self.mean.abs() <= self.bound && self.mean_toward_away.abs() <= self.bound
    }
}

/// The bulk gate of a `Ulp` bar with a mean bar m: the mean ULP distance over the n elements the
/// ULP bar holds must be ≤ m + 3.3·k/√n (k the max-ULP bar).
///
/// Why: a float32 bar of hundreds of ULP is set by a few tail elements (gelu_erf's erfc tail,
/// 231 ULP on the full sweep), so a kernel whose every element is 10x worse than today's still
/// passes it; its mean does not. m is the op's measured clean mean (the largest per case over
/// the sweep) times a small documented factor. The slack: each element's distance lies in
/// [0, k], so Hoeffding gives P(mean ≥ E + t) ≤ exp(−2n t²/k²), t = 3.3·k/√n at δ = 1e-9 (as
/// [`BiasGate`]); it keeps small cases (proptest's 1-element rows) from failing by chance and
/// vanishes on the sweep's large ones.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkGate {
    pub mean_ulp: f64,
    pub bound: f64,
    pub count: usize,
}

impl BulkGate {
    pub fn passed(&self) -> bool {
        self.mean_ulp <= self.bound
    }
}

impl Comparison {
    pub fn passed(&self) -> bool {
        self.problem.is_none()
            && self.special_mismatches == 0
            && self.violations == 0
            && self.cann.as_ref().is_none_or(|g| g.passed)
            && self.bias.as_ref().is_none_or(|b| b.passed())
            && self.bulk.as_ref().is_none_or(|b| b.passed())
    }

    fn failed_structurally(actual: &HostTensor, rule: Tolerance, problem: String) -> Comparison {
        Comparison {
            dtype: actual.dtype,
            shape: actual.shape.clone(),
            rule,
            count: 0,
            max_ulp: 0,
            mean_ulp: 0.0,
            bulk: None,
            mere: 0.0,
            mare: 0.0,
            cann: None,
            worst: None,
            violations: 0,
            first_violation: None,
            special_mismatches: 0,
            first_special_mismatch: None,
            problem: Some(problem),
            near_ties: 0,
            max_tie_distance: 0.0,
            bias: None,
        }
    }
}

fn fmt_element(f: &mut fmt::Formatter<'_>, e: &ElementReport) -> fmt::Result {
    let index: Vec<String> = e.index.iter().map(|i| i.to_string()).collect();
    write!(
        f,
        "[{}] (flat {}): actual {} expected {} (RNE {})",
        index.join(", "),
        e.flat,
        e.actual,
        e.expected,
        e.expected_rounded
    )
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        write!(f, "{verdict} {} {} n={} [{}]", self.dtype, format_shape(&self.shape), self.count, self.rule)?;
        if let Some(problem) = &self.problem {
            return write!(f, ": {problem}");
        }
        write!(f, " max_ulp={}", self.max_ulp)?;
        match &self.cann {
            Some(g) => write!(
                f,
                " MERE={:.3e} (<{:.3e}) MARE={:.3e} (<{:.3e})",
                self.mere,
                g.threshold,
                self.mare,
                10.0 * g.threshold
            )?,
            None => write!(f, " MERE={:.3e} MARE={:.3e}", self.mere, self.mare)?,
        }
        if let Some(w) = &self.worst {
            f.write_str("; worst ")?;
            fmt_element(f, w)?;
        }
        if let Some(v) = &self.first_violation {
            write!(f, "; {} element(s) break {}, first ", self.violations, self.rule)?;
            fmt_element(f, v)?;
        }
        if let Some(s) = &self.first_special_mismatch {
            write!(f, "; {} NaN/Inf mismatch(es), first ", self.special_mismatches)?;
            fmt_element(f, s)?;
        }
        if self.near_ties > 0 {
            write!(
                f,
                "; {} near tie(s) accepted (max {:.1} f32 ulps from the boundary)",
                self.near_ties, self.max_tie_distance
            )?;
        }
        if let Some(b) = self.bias.as_ref().filter(|b| !b.passed()) {
            write!(
                f,
                "; biased: mean signed error {:.4} ULP, {:.4} ULP away from zero, over {} elements (bound {:.4})",
                b.mean, b.mean_toward_away, b.count, b.bound
            )?;
        }
        if let Some(b) = self.bulk.as_ref().filter(|b| !b.passed()) {
            write!(
                f,
                "; bulk too far: mean {:.3} ULP over {} elements (bound {:.3})",
                b.mean_ulp, b.count, b.bound
            )?;
        }
        if let Some(g) = self.cann.as_ref().filter(|g| g.small_violations > 0) {
            write!(
                f,
                "; {} of {} small-value element(s) over the abs threshold (max |err| {:.3e})",
                g.small_violations, g.small_count, g.small_max_abs_err
            )?;
        }
        Ok(())
    }
}

/// Compares `actual` with the unrounded reference values `expected` (same count, C order).
pub fn compare(actual: &HostTensor, expected: &[f64], rule: Tolerance) -> Comparison {
    if expected.len() != actual.numel() {
        return Comparison::failed_structurally(
            actual,
            rule,
            format!("actual has {} elements, the reference {}", actual.numel(), expected.len()),
        );
    }
    let bits: Vec<u64> = expected.iter().map(|&g| f64_to_bits(actual.dtype, g)).collect();
    compare_core(actual, expected, &bits, rule)
}

/// Compares with an exact expected tensor (layout ops, whose references move bytes): the
/// expected bits are taken as they are (NaN payloads included) and g is their exact value.
pub fn compare_tensor(actual: &HostTensor, expected: &HostTensor, rule: Tolerance) -> Comparison {
    if actual.dtype != expected.dtype || actual.shape != expected.shape {
        return Comparison::failed_structurally(
            actual,
            rule,
            format!(
                "actual is {} {}, the reference {} {}",
                actual.dtype,
                format_shape(&actual.shape),
                expected.dtype,
                format_shape(&expected.shape)
            ),
        );
    }
    let bits: Vec<u64> = (0..expected.numel()).map(|i| expected.bits(i)).collect();
    compare_core(actual, &expected.to_f64(), &bits, rule)
}

/// One float32 ulp relative to a value (2^-24·|g|): the unit of `Rne`'s tie window.
const TIE_UNIT: f64 = 1.0 / (1u64 << 24) as f64;

/// Hoeffding's t·√n/R at δ = 1e-9 (see [`BiasGate`]).
const BIAS_SIGMAS: f64 = 3.3;

/// The inverse of [`ordered`].
fn from_ordered(o: i64, width_bits: u32) -> u64 {
    if o < 0 {
        (1u64 << (width_bits - 1)) | o.unsigned_abs()
    } else {
        o as u64
    }
}

/// Sign-magnitude float bits folded onto a monotonic integer line (±0 → 0).
fn ordered(bits: u64, width_bits: u32) -> i64 {
    let sign = 1u64 << (width_bits - 1);
    let magnitude = (bits & (sign - 1)) as i64;
    if bits & sign != 0 {
        -magnitude
    } else {
        magnitude
    }
}

fn int_value(dtype: DType, bits: u64) -> i64 {
    match dtype {
        DType::Int8 => i64::from(bits as u8 as i8),
        DType::Int32 => i64::from(bits as u32 as i32),
        _ => bits as i64,
    }
}

fn compare_core(actual: &HostTensor, expected: &[f64], expected_bits: &[u64], rule: Tolerance) -> Comparison {
    let dtype = actual.dtype;
    let is_float = dtype.is_float();
    match rule {
        Tolerance::IntWithin(_) if is_float => {
            return Comparison::failed_structurally(
                actual,
                rule,
                format!("IntWithin is for integer outputs, this one is {dtype}"),
            )
        }
        Tolerance::CannOnly if !is_float => {
            return Comparison::failed_structurally(
                actual,
                rule,
                format!("the CANN gate has no threshold for {dtype}; use IntWithin or Bitwise"),
            )
        }
        _ => {}
    }
    let width = 8 * dtype.size_bytes() as u32;
    let cann_t = match rule {
        Tolerance::Ulp { .. } | Tolerance::CannOnly | Tolerance::Rne { .. } => cann_threshold(dtype),
        _ => None,
    };
    let small = cann_t.and(small_value_domain(dtype));

    let mut out = Comparison {
        dtype,
        shape: actual.shape.clone(),
        rule,
        count: expected.len(),
        max_ulp: 0,
        mean_ulp: 0.0,
        bulk: None,
        mere: 0.0,
        mare: 0.0,
        cann: None,
        worst: None,
        violations: 0,
        first_violation: None,
        special_mismatches: 0,
        first_special_mismatch: None,
        problem: None,
        near_ties: 0,
        max_tie_distance: 0.0,
        bias: None,
    };
    // The bias gate's sums (see BiasGate) and the width R of a correct element's error.
    // Not for float32 outputs: they end in float32 arithmetic, not in a cast whose round mode
    // could lean, and the APIs' float32 results may themselves lean one way within their
    // accuracy (the perturbed mode moves Exp(0) = 1 by a fixed few ULP, so swiglu's float32 y
    // leans 38 ULP at k = 64, inside its ULP bar).
    let bias_range = match rule {
        _ if dtype == DType::Float32 => None,
        Tolerance::Rne { .. } => Some(2.0),
        Tolerance::Ulp { max_ulp, .. } => Some(2.0 * f64::from(max_ulp.max(1))),
        Tolerance::UlpOrAbs { max_ulp, .. } => Some(2.0 * f64::from(max_ulp.max(1))),
        _ => None,
    };
    let (mut bias_sum, mut bias_folded, mut bias_count) = (0.0f64, 0.0f64, 0usize);
    let (mut rel_sum, mut rel_count) = (0.0f64, 0usize);
    let (mut ulp_sum, mut ulp_count) = (0.0f64, 0usize);
    let (mut small_count, mut small_max, mut small_violations) = (0usize, 0.0f64, 0usize);
    // Key of the current worst element: (ulp, rel) or (rel) for CannOnly.
    let mut worst_key = (0u64, -1.0f64);

    for (i, (&g, &ebits)) in expected.iter().zip(expected_bits).enumerate() {
        let abits = actual.bits(i);
        let a = bits_to_f64(dtype, abits);
        let e = bits_to_f64(dtype, ebits);
        let report = |ulp: u64, rel_err: f64| ElementReport {
            flat: i,
            index: unravel_index(&actual.shape, i),
            actual: a,
            expected: g,
            expected_rounded: e,
            ulp,
            rel_err,
        };
        if rule == Tolerance::Bitwise && abits != ebits {
            out.violations += 1;
            if out.first_violation.is_none() {
                out.first_violation = Some(report(0, 0.0));
            }
        }
        if is_float && (!a.is_finite() || !e.is_finite()) {
            let matched = if a.is_nan() || e.is_nan() { a.is_nan() && e.is_nan() } else { a == e };
            if !matched {
                out.special_mismatches += 1;
                if out.first_special_mismatch.is_none() {
                    out.first_special_mismatch = Some(report(0, 0.0));
                }
            }
            continue;
        }
        let ulp = if is_float {
            ordered(abits, width).abs_diff(ordered(ebits, width))
        } else {
            int_value(dtype, abits).abs_diff(int_value(dtype, ebits))
        };
        let rel = (a - g).abs() / (g.abs() + 1e-7);
        out.max_ulp = out.max_ulp.max(ulp);
        let float32_subnormal = dtype == DType::Float32 && g.abs() < f64::from(f32::MIN_POSITIVE);
        if let Tolerance::UlpOrAbs { max_ulp, abs_log2, .. } = rule {
            // The distance on the looser scale (see `Tolerance::UlpOrAbs`): a cancelled
            // element's ULP distance says nothing of the kernel, its absolute error does.
            let abs_units = f64::from(max_ulp) * (a - g).abs() / 2f64.powi(abs_log2);
            ulp_sum += (ulp as f64).min(abs_units);
            ulp_count += 1;
        } else if !float32_subnormal {
            ulp_sum += ulp as f64;
            ulp_count += 1;
        }
        // RNE(g)'s neighbour on g's side, the rounding boundary between them, and g's distance
        // from it in float32 ulps of g.
        let side = (g > e) as i64 * 2 - 1;
        let (neighbour_bits, neighbour) = if is_float {
            let b = from_ordered(ordered(ebits, width) + side, width);
            (b, bits_to_f64(dtype, b))
        } else {
            let v = int_value(dtype, ebits) + side;
            (v as u64, v as f64)
        };
        let on_neighbour =
            if is_float { abits == neighbour_bits } else { int_value(dtype, abits) == neighbour_bits as i64 };
        let tie_distance = if g != e && neighbour.is_finite() {
            ((e + neighbour) / 2.0 - g).abs() / (g.abs() * TIE_UNIT)
        } else {
            f64::INFINITY
        };
        if on_neighbour && ulp == 1 {
            out.max_tie_distance = out.max_tie_distance.max(tie_distance);
        }
        // UlpOrAbs: an element past the ULP bar is accepted on the absolute scale only, where
        // its error is the float32 evaluation's cancellation, not the final cast's rounding, and
        // is shared by its row (logprob_entropy_grad's all-equal rows: every element's
        // log p + H cancels alike, 20 ULP one way). Such elements leave the gate's model (d in
        // [−k, k], independent), so they are not counted; the ones within the bar still are.
        let abs_only = matches!(rule, Tolerance::UlpOrAbs { max_ulp, .. } if ulp > u64::from(max_ulp));
        if bias_range.is_some() && !abs_only {
            let step = (neighbour - e).abs();
            if step.is_finite() && step > 0.0 {
                let err = (a - e) / step;
                bias_sum += err;
                bias_folded += err * g.signum();
                bias_count += 1;
            }
        }
        let breaks = match rule {
            Tolerance::Rne { tie_window } => {
                let near_tie = on_neighbour && ulp == 1 && tie_distance < f64::from(tie_window);
                if near_tie {
                    out.near_ties += 1;
                }
                ulp > 0 && !near_tie
            }
            // A float32 ULP bar states the kernel's relative accuracy, which holds for normal
            // results only: below f32::MIN_POSITIVE a float32 value has fewer significant bits,
            // and a kernel whose intermediates go subnormal there (swiglu's e^min(z, 0) for gate
            // < -87) keeps its absolute accuracy only. Those elements are held to the CANN gate's
            // small-value absolute check below, as CANN's standard holds every small value; the
            // max ULP column still reports them.
            Tolerance::Ulp { max_ulp, .. } => ulp > u64::from(max_ulp) && !float32_subnormal,
            Tolerance::UlpOrAbs { max_ulp, abs_log2, .. } => {
                ulp > u64::from(max_ulp) && (a - g).abs() > 2f64.powi(abs_log2)
            }
            Tolerance::IntWithin(k) => ulp > u64::from(k),
            Tolerance::CannOnly | Tolerance::Bitwise => false,
        };
        if breaks {
            out.violations += 1;
            if out.first_violation.is_none() {
                out.first_violation = Some(report(ulp, rel));
            }
        }
        match small {
            Some((s, abs_max)) if g.abs() < s => {
                small_count += 1;
                let abs_err = (a - g).abs();
                small_max = small_max.max(abs_err);
                if abs_err > abs_max && ulp > 1 {
                    small_violations += 1;
                }
            }
            _ => {
                rel_sum += rel;
                rel_count += 1;
                out.mare = out.mare.max(rel);
            }
        }
        let key = if rule == Tolerance::CannOnly { (0, rel) } else { (ulp, rel) };
        if key.0 > worst_key.0 || (key.0 == worst_key.0 && key.1 > worst_key.1) {
            worst_key = key;
            out.worst = Some(report(ulp, rel));
        }
    }
    if rel_count > 0 {
        out.mere = rel_sum / rel_count as f64;
    }
    if ulp_count > 0 {
        out.mean_ulp = ulp_sum / ulp_count as f64;
    }
    if let Tolerance::Ulp { max_ulp, mean_ulp: Some(bar) }
    | Tolerance::UlpOrAbs { max_ulp, mean: Some(bar), .. } = rule
    {
        out.bulk = Some(BulkGate {
            mean_ulp: out.mean_ulp,
            bound: bar + BIAS_SIGMAS * f64::from(max_ulp) / (ulp_count.max(1) as f64).sqrt(),
            count: ulp_count,
        });
    }
    if let Some(range) = bias_range.filter(|_| bias_count > 0) {
        let n = bias_count as f64;
        out.bias = Some(BiasGate {
            mean: bias_sum / n,
            mean_toward_away: bias_folded / n,
            bound: BIAS_SIGMAS * range / n.sqrt(),
            count: bias_count,
        });
    }
    out.cann = cann_t.map(|t| CannGate {
        threshold: t,
        passed: gate_passes(t, out.mere, out.mare, small_violations),
        small_count,
        small_max_abs_err: small_max,
        small_violations,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_float32_ulp_bar_holds_normal_results_and_leaves_subnormals_to_the_cann_gate() {
        // 300 float32 ULP off: a subnormal result (2.6e-41, ulp 2^-149) passes the ULP bar and
        // the CANN small-value check; a normal one fails the bar.
        let sub = 2.6e-41_f64;
        let off = sub + 300.0 * 2f64.powi(-149);
        let a = HostTensor::from_f64(DType::Float32, &[1], &[off]);
        let c = compare(&a, &[sub], Tolerance::ulp(8));
        assert!(c.passed(), "{c}");
        assert_eq!(c.max_ulp, 300);
        let normal = 1.5_f64;
        let a = HostTensor::from_f64(DType::Float32, &[1], &[normal + 300.0 * 2f64.powi(-23)]);
        assert!(!compare(&a, &[normal], Tolerance::ulp(8)).passed());
    }

    #[test]
    fn ulp_or_abs_bulk_gate_counts_cancelled_elements_by_their_absolute_error() {
        // 4096 elements: half cancelled (g = 1e-6) with an absolute error of 2^-24 against a
        // bound of 2^-20 (1 ULP-equivalent at max_ulp 16), half normal and 2 ULP off. The mean
        // on the looser scale is (1 + 2)/2 = 1.5, not the cancelled elements' ~10^4 ULP.
        let n = 4096;
        let g: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1e-6 } else { 1.5 }).collect();
        let a: Vec<f64> =
            g.iter().map(|&v| if v < 1.0 { v + 2f64.powi(-24) } else { v + 2.0 * 2f64.powi(-23) }).collect();
        let a = HostTensor::from_f64(DType::Float32, &[n], &a);
        let loose = Tolerance::ulp_or_abs_bulk(16, -20, 1.0);
        let c = compare(&a, &g, loose);
        approx::assert_abs_diff_eq!(c.mean_ulp, 1.5, epsilon = 0.01);
        assert!(c.passed(), "{c}");
        // A bar of 2x a clean mean of 0.5 (1.0 + 3.3·16/64 = 1.825) still holds 1.5; 2x 0.25 fails.
        assert!(compare(&a, &g, Tolerance::ulp_or_abs_bulk(16, -20, 0.5)).passed());
        let tight = compare(&a, &g, Tolerance::ulp_or_abs_bulk(16, -20, 0.25));
        assert!(!tight.passed() && tight.violations == 0, "only the bulk gate fails: {tight}");
        assert_eq!(Tolerance::ulp_or_abs_bulk(16, -20, 0.25).to_string(), "ulp<=16|2^-20,mean<=0.5");
    }

    #[test]
    fn ulp_or_abs_takes_either_bar_and_has_no_cann_gate() {
        // A cancelled element (g = 1e-6, off by 2^-22 ≈ 2.4e-7: ~4e6 ULP) passes within the
        // absolute bound 2^-20 and fails at 2^-23; a large element 20 ULP off fails a 16-ULP bar
        // however loose the absolute bound is in ULP of small values.
        let g = 1e-6_f64;
        let a = HostTensor::from_f64(DType::Float32, &[1], &[g + 2f64.powi(-22)]);
        let c = compare(&a, &[g], Tolerance::UlpOrAbs { max_ulp: 16, abs_log2: -20, mean: None });
        assert!(c.passed(), "{c}");
        assert!(c.cann.is_none());
        assert!(!compare(&a, &[g], Tolerance::UlpOrAbs { max_ulp: 16, abs_log2: -23, mean: None }).passed());
        let big = 1.5_f64;
        let a = HostTensor::from_f64(DType::Float32, &[1], &[big + 20.0 * 2f64.powi(-23)]);
        assert!(!compare(&a, &[big], Tolerance::UlpOrAbs { max_ulp: 16, abs_log2: -24, mean: None }).passed());
        assert!(compare(&a, &[big], Tolerance::UlpOrAbs { max_ulp: 20, abs_log2: -24, mean: None }).passed());
        assert_eq!(Tolerance::UlpOrAbs { max_ulp: 1, abs_log2: -18, mean: None }.to_string(), "ulp<=1|2^-18");
    }

    fn f16(values: &[f64]) -> HostTensor {
        HostTensor::from_f64(DType::Float16, &[values.len()], values)
    }

    #[test]
    fn perfect_match_passes() {
        let g = [1.0 / 3.0, -7.3, 1000.123, 0.0, 1e-9];
        let actual = f16(&g);
        let c = compare(&actual, &g, Tolerance::ulp(1));
        assert!(c.passed(), "{c}");
        assert_eq!(c.max_ulp, 0);
        assert_eq!(c.count, 5);
        // 0 and 1e-9 are in the small-value domain (|g| < 2^-11).
        assert_eq!(c.cann.as_ref().unwrap().small_count, 2);
        assert!(c.to_string().starts_with("PASS float16 (5,) n=5 [ulp<=1+CANN] max_ulp=0"));
    }

    #[test]
    fn two_ulp_error_fails_ulp1() {
        // 1.0 + 2 ulps (2^-10 each) in f16 = 1.001953125, bits 0x3c02.
        let g = [0.5, 1.0, 2.0];
        let actual = HostTensor::from_bits(DType::Float16, &[3], &[0x3800, 0x3c02, 0x4000]);
        let c = compare(&actual, &g, Tolerance::ulp(1));
        assert!(!c.passed());
        assert_eq!(c.max_ulp, 2);
        assert_eq!(c.violations, 1);
        let w = c.worst.as_ref().unwrap();
        assert_eq!((w.flat, w.actual, w.expected), (1, 1.001953125, 1.0));
        // The CANN gate alone would pass (rel err 2^-9 < 10·2^-10; mean 2^-9/3 < 2^-10).
        assert!(c.cann.as_ref().unwrap().passed);
        assert!(compare(&actual, &g, Tolerance::ulp(2)).passed());
        let text = c.to_string();
        assert!(text.starts_with("FAIL float16 (3,) n=3 [ulp<=1+CANN] max_ulp=2"), "{text}");
        assert!(text.contains("worst [1] (flat 1): actual 1.001953125 expected 1 (RNE 1)"));
        assert!(text.contains("1 element(s) break ulp<=1+CANN"));
    }

    #[test]
    fn ulp_distance_crosses_zero_and_binades() {
        // -smallest subnormal vs +smallest subnormal: 2 apart; ±0 are 0 apart.
        let a = HostTensor::from_bits(DType::Float16, &[2], &[0x8001, 0x8000]);
        let c = compare(&a, &[2f64.powi(-24), 0.0], Tolerance::Bitwise);
        assert_eq!(c.max_ulp, 2);
        // Bitwise still sees -0 vs +0.
        assert_eq!(c.violations, 2);
        // 0x3bff (largest below 1) vs 1.0: 1 ulp across the binade boundary.
        let a = HostTensor::from_bits(DType::Float16, &[1], &[0x3bff]);
        assert_eq!(compare(&a, &[1.0], Tolerance::ulp(1)).max_ulp, 1);
    }

    #[test]
    fn nan_and_inf_positions_must_match() {
        let g = [1.0, f64::NAN, f64::INFINITY, -1e6];
        // -1e6 overflows f16 to -Inf: RNE(g) is -Inf, so -Inf matches.
        let ok =
            HostTensor::from_f64(DType::Float16, &[2, 2], &[1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
        let c = compare(&ok, &g, Tolerance::ulp(0));
        assert!(c.passed(), "{c}");
        assert_eq!(c.special_mismatches, 0);

        let bad =
            HostTensor::from_f64(DType::Float16, &[2, 2], &[f64::NAN, 2.0, f64::INFINITY, f64::NEG_INFINITY]);
        let c = compare(&bad, &g, Tolerance::ulp(1000));
        assert!(!c.passed());
        assert_eq!(c.special_mismatches, 2);
        let s = c.first_special_mismatch.as_ref().unwrap();
        assert_eq!(s.index, vec![0, 0]);
        assert!(c.to_string().contains("2 NaN/Inf mismatch(es), first [0, 0] (flat 0)"));
        // NaN/Inf never enter MERE/MARE.
        assert_eq!(c.mare, 0.0);

        // Inf of the wrong sign.
        let c = compare(&f16(&[f64::NEG_INFINITY]), &[f64::INFINITY], Tolerance::CannOnly);
        assert_eq!(c.special_mismatches, 1);
    }

    #[test]
    fn bitwise_detects_one_flipped_bit() {
        let expected = HostTensor::from_f64(DType::BFloat16, &[2, 3], &[1.0, -2.5, 3.0, 0.0, 7.0, -0.125]);
        let mut actual = expected.clone();
        assert!(compare_tensor(&actual, &expected, Tolerance::Bitwise).passed());
        actual.bytes[6] ^= 0x01; // lowest mantissa bit of element 3 (0.0 → smallest subnormal)
        let c = compare_tensor(&actual, &expected, Tolerance::Bitwise);
        assert!(!c.passed());
        assert_eq!(c.violations, 1);
        assert_eq!(c.first_violation.as_ref().unwrap().index, vec![1, 0]);
        // Through f64 expectations as well.
        let c = compare(&actual, &expected.to_f64(), Tolerance::Bitwise);
        assert_eq!(c.violations, 1);
        // NaN payloads count for bitwise (compare_tensor keeps them).
        let e = HostTensor::from_bits(DType::Float16, &[1], &[0x7e01]);
        let a = HostTensor::from_bits(DType::Float16, &[1], &[0x7e00]);
        assert!(!compare_tensor(&a, &e, Tolerance::Bitwise).passed());
    }

    #[test]
    fn mere_mare_hand_worked() {
        // fp32 output, g = [1, 2, 4], a = [1, 2.5, 3]:
        // rel = |a−g|/(|g|+1e-7) = [0, 0.5/2.0000001, 1/4.0000001]
        //     = [0, 0.24999998750000062, 0.24999999375000016]
        // MERE = sum/3 = 0.16666666041666693, MARE = 0.24999999375000016.
        let a = HostTensor::from_f64(DType::Float32, &[3], &[1.0, 2.5, 3.0]);
        let c = compare(&a, &[1.0, 2.0, 4.0], Tolerance::CannOnly);
        approx::assert_abs_diff_eq!(c.mere, 0.16666666041666693, epsilon = 1e-15);
        approx::assert_abs_diff_eq!(c.mare, 0.24999999375000016, epsilon = 1e-15);
        assert!(!c.passed());
        // Worst by relative error for CannOnly.
        assert_eq!(c.worst.as_ref().unwrap().flat, 2);
    }

    #[test]
    fn cann_gate_thresholds() {
        // bf16: T = 2^-7. Every element at relative error 2T: MERE = 2T ≥ T fails.
        let t = 2f64.powi(-7);
        let g = vec![1.0; 8];
        let a = HostTensor::from_f64(DType::BFloat16, &[8], &[1.0 + 2.0 * t; 8]);
        let c = compare(&a, &g, Tolerance::CannOnly);
        assert!(!c.passed(), "{c}"); // MERE 2T ≥ T
        let mut vals = vec![1.0; 8];
        vals[0] = 1.0 + 4.0 * t; // one element at rel 4T: MERE 0.5T, MARE 4T < 10T
        let a = HostTensor::from_f64(DType::BFloat16, &[8], &vals);
        assert!(compare(&a, &g, Tolerance::CannOnly).passed());
    }

    #[test]
    fn small_values_use_the_abs_threshold() {
        // fp16 subnormals: g = 3e-6 rounds to 50·2^-24 = 2.98e-6 (rel err ≈ 0.6%, fine) but
        // g = 1e-7 rounds to 2^-24 = 5.96e-8: rel err 0.2, which would break MARE < 10·2^-10.
        let g = [1e-7, 3e-6, 0.5];
        let a = f16(&g);
        let c = compare(&a, &g, Tolerance::ulp(0));
        assert!(c.passed(), "{c}");
        assert_eq!(c.cann.as_ref().unwrap().small_count, 2);
        // An error of 2^-15 at a small value is over A = 2^-16 and many ulps: fails the gate.
        let a = f16(&[1e-7 + 2f64.powi(-15), 3e-6, 0.5]);
        let c = compare(&a, &g, Tolerance::CannOnly);
        assert!(!c.passed());
        assert_eq!(c.cann.as_ref().unwrap().small_violations, 1);
        assert!(c.to_string().contains("1 of 2 small-value element(s) over the abs threshold"));
    }

    #[test]
    fn integers() {
        let a = HostTensor::from_i64(DType::Int8, &[4], &[101, 52, 127, -3]);
        // Expected: unrounded quotients; RNE gives 101, 52, 127, -4.
        let g = [101.04, 51.85, 127.0, -3.6];
        let c = compare(&a, &g, Tolerance::IntWithin(1));
        assert!(c.passed(), "{c}");
        assert_eq!(c.max_ulp, 1);
        assert!(!compare(&a, &g, Tolerance::IntWithin(0)).passed());
        assert!(!compare(&a, &g, Tolerance::Bitwise).passed());
        // Rule/dtype misuse is reported, not silently passed.
        let c = compare(&a, &g, Tolerance::CannOnly);
        assert!(!c.passed());
        assert!(c.problem.as_ref().unwrap().contains("no threshold for int8"));
        let c = compare(&f16(&[1.0]), &[1.0], Tolerance::IntWithin(1));
        assert!(!c.passed());
    }

    #[test]
    fn rne_demands_the_correctly_rounded_value_except_near_ties() {
        // f16 around 1: ULP 2^-10, the boundary between 1 and 1 + 2^-10 is 1 + 2^-11.
        let boundary = 1.0 + 2f64.powi(-11);
        let unit = 2f64.powi(-24); // one float32 ulp of g (relative), the tie window's unit
        let up = HostTensor::from_bits(DType::Float16, &[1], &[0x3c01]);
        let down = HostTensor::from_bits(DType::Float16, &[1], &[0x3c00]);
        // 3 units below the boundary: RNE is 1; 1 + 2^-10 is accepted as a near tie in a window
        // of 4, not in a window of 2.
        let g = [boundary - 3.0 * unit * boundary];
        let c = compare(&up, &g, Tolerance::Rne { tie_window: 4 });
        assert!(c.passed(), "{c}");
        assert_eq!(c.near_ties, 1);
        approx::assert_abs_diff_eq!(c.max_tie_distance, 3.0, epsilon = 1e-6);
        assert!(!compare(&up, &g, Tolerance::Rne { tie_window: 2 }).passed());
        assert!(compare(&down, &g, Tolerance::Rne { tie_window: 2 }).passed());
        // Far from the boundary, one ULP off fails whatever the window (the 1-ULP bar passed it).
        let far = [1.0 + 2f64.powi(-13)];
        assert!(!compare(&up, &far, Tolerance::Rne { tie_window: 64 }).passed());
        assert!(compare(&up, &far, Tolerance::ulp(1)).passed());
        // Window 0: an exact tie must be rounded to even, nothing is a near tie.
        let tie = [boundary];
        assert!(compare(&down, &tie, Tolerance::Rne { tie_window: 0 }).passed());
        assert!(!compare(&up, &tie, Tolerance::Rne { tie_window: 0 }).passed());
        assert!(compare(&up, &tie, Tolerance::Rne { tie_window: 1 }).passed());
    }

    #[test]
    fn int8_rne_accepts_either_side_only_near_a_half() {
        let a = HostTensor::from_i64(DType::Int8, &[3], &[2, -4, 101]);
        // 2.5 + 1e-7 (near the tie: 1e-7/2.5 ≈ 0.67 units), -3.5 exactly, 101.4 (not near).
        let near = [2.5 + 1e-7, -3.5, 101.4];
        let c = compare(&a, &near, Tolerance::Rne { tie_window: 4 });
        assert!(c.passed(), "{c}");
        assert_eq!(c.near_ties, 1); // 2 for 2.5000001, whose RNE is 3; -4 is -3.5's even side
        let trunc = HostTensor::from_i64(DType::Int8, &[3], &[2, -3, 101]);
        assert!(!compare(&trunc, &[2.7, -3.6, 101.4], Tolerance::Rne { tie_window: 4 }).passed());
        assert!(compare(&trunc, &[2.7, -3.6, 101.4], Tolerance::IntWithin(1)).passed());
    }

    #[test]
    fn the_bias_gate_fails_a_truncating_cast_and_passes_rne() {
        // 4096 values spread over [1, 2): a correct RNE output has no deviation at all; a
        // truncating one is one ULP low on the half of them whose fraction is ≥ ½ ULP.
        let g: Vec<f64> = (0..4096).map(|i| 1.0 + (i as f64 + 0.37) / 4096.0).collect();
        let rne = f16(&g);
        let c = compare(&rne, &g, Tolerance::ulp(1));
        assert!(c.passed(), "{c}");
        let b = c.bias.as_ref().unwrap();
        assert_eq!((b.mean, b.count), (0.0, 4096));
        // Hoeffding bound at R = 2 ULP (1-ULP bar): 3.3·2/√4096.
        approx::assert_abs_diff_eq!(b.bound, 3.3 * 2.0 / 64.0, epsilon = 1e-12);
        let truncated: Vec<f64> = g.iter().map(|&v| (v * 1024.0).floor() / 1024.0).collect();
        let t = f16(&truncated);
        let c = compare(&t, &g, Tolerance::ulp(1));
        assert_eq!(c.violations, 0, "every element is within 1 ULP");
        assert!(!c.passed(), "a truncating cast passed: {c}");
        assert!(c.to_string().contains("biased: mean signed error"), "{c}");
        // Mixed signs: truncation leans towards zero, which the folded mean sees.
        let mixed: Vec<f64> = g.iter().enumerate().map(|(i, v)| if i % 2 == 0 { *v } else { -v }).collect();
        let mt: Vec<f64> = mixed.iter().map(|v| v.signum() * (v.abs() * 1024.0).floor() / 1024.0).collect();
        let c = compare(&f16(&mt), &mixed, Tolerance::ulp(1));
        let b = c.bias.as_ref().unwrap();
        assert!(b.mean.abs() < b.bound && b.mean_toward_away.abs() > b.bound, "{b:?}");
        assert!(!c.passed());
    }

    #[test]
    fn the_bias_gate_of_ulp_or_abs_leaves_out_only_the_elements_past_the_ulp_bar() {
        // 4096 values over [1, 2) RNE, then 1024 cancelled ones in [2^-10, 2^-9) (float16 ULP
        // 2^-20), all 20 ULP high and within the absolute bar 2^-14: a correct kernel whose
        // cancellation leans one way.
        let mut g: Vec<f64> = (0..4096).map(|i| 1.0 + (i as f64 + 0.37) / 4096.0).collect();
        let tiny: Vec<f64> = (0..1024).map(|i| 2f64.powi(-10) * (1.0 + i as f64 / 1024.0)).collect();
        let rule = Tolerance::UlpOrAbs { max_ulp: 1, abs_log2: -14, mean: None };
        let mut a = g.clone();
        a.extend(tiny.iter().map(|t| t + 20.0 * 2f64.powi(-20)));
        g.extend(&tiny);
        let c = compare(&f16(&a), &g, rule);
        assert!(c.passed(), "{c}");
        assert_eq!(c.bias.as_ref().unwrap().count, 4096, "the 1024 past the ULP bar are not counted");
        // A truncating cast of the 4096 within the bar still fails it.
        let mut t: Vec<f64> = g[..4096].iter().map(|&v| (v * 1024.0).floor() / 1024.0).collect();
        t.extend(&a[4096..]);
        let c = compare(&f16(&t), &g, rule);
        assert_eq!(c.violations, 0, "every element within 1 ULP or 2^-14");
        assert!(!c.passed(), "a truncating cast passed: {c}");
    }

    #[test]
    fn the_bulk_gate_fails_a_uniformly_worse_float32_kernel_inside_its_max_bar() {
        // 4096 float32 values over [1, 2) (ulp 2^-23): exact, and every element 100 ULP high.
        let ulp = 2f64.powi(-23);
        let g: Vec<f64> = (0..4096).map(|i| 1.0 + (i as f64 * 0.000_2) % 1.0).collect();
        let rule = Tolerance::ulp_bulk(480, 3.0);
        assert_eq!(rule, Tolerance::Ulp { max_ulp: 480, mean_ulp: Some(6.0) }, "2x the measured mean");
        let exact = HostTensor::from_f64(DType::Float32, &[4096], &g);
        let c = compare(&exact, &g, rule);
        assert!(c.passed(), "{c}");
        assert_eq!(c.mean_ulp, 0.0);
        let high: Vec<f64> = g.iter().map(|v| v + 100.0 * ulp).collect();
        let c = compare(&HostTensor::from_f64(DType::Float32, &[4096], &high), &g, rule);
        assert_eq!((c.max_ulp, c.violations), (100, 0), "every element within the max bar");
        approx::assert_abs_diff_eq!(c.mean_ulp, 100.0, epsilon = 1e-9);
        // The bound: 6 + 3.3·480/√4096 = 30.75.
        let b = c.bulk.as_ref().unwrap();
        approx::assert_abs_diff_eq!(b.bound, 6.0 + 3.3 * 480.0 / 64.0, epsilon = 1e-12);
        assert!(!c.passed(), "a kernel 100 ULP off everywhere passed: {c}");
        assert!(c.to_string().contains("bulk too far: mean 100.000 ULP over 4096 elements"), "{c}");
        // The same max bar without a mean bar passes it: the defect the bulk gate is for.
        assert!(
            compare(&HostTensor::from_f64(DType::Float32, &[4096], &high), &g, Tolerance::ulp(480)).passed()
        );
        // Four elements cannot tell a 100-ULP lean from a clean tail (slack 3.3·480/2): they pass.
        let c = compare(&HostTensor::from_f64(DType::Float32, &[4], &high[..4]), &g[..4], rule);
        assert!(c.passed(), "{c}");
        // An exact kernel's floor: 1/16 ULP.
        assert_eq!(Tolerance::ulp_bulk(1, 0.0), Tolerance::Ulp { max_ulp: 1, mean_ulp: Some(BULK_FLOOR) });
        assert_eq!(rule.to_string(), "ulp<=480,mean<=6+CANN");
    }

    #[test]
    fn size_mismatch_is_a_failure() {
        let c = compare(&f16(&[1.0, 2.0]), &[1.0], Tolerance::ulp(1));
        assert!(!c.passed());
        assert_eq!(
            c.to_string(),
            "FAIL float16 (2,) n=0 [ulp<=1+CANN]: actual has 2 elements, the reference 1"
        );
    }

    #[test]
    fn empty_outputs_pass() {
        let a = HostTensor::zeros(DType::Float16, &[0, 4]);
        assert!(compare(&a, &[], Tolerance::ulp(1)).passed());
    }
}
