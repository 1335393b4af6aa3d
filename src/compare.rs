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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tolerance {
    /// Every element within `max_ulp` of RNE(expected), plus the CANN gate.
    Ulp { max_ulp: u32 },
    /// Only the CANN gate (fp32 outputs of reductions, e.g. rstd, where no ULP bar holds).
    CannOnly,
    /// Every element's bits equal RNE(expected)'s (layout/copy ops). No CANN gate.
    Bitwise,
    /// Integer outputs: |actual − RNE(expected)| ≤ k (int8 quantisation: 1). No CANN gate.
    IntWithin(u32),
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Ulp { max_ulp } => write!(f, "ulp<={max_ulp}+CANN"),
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
}

impl Comparison {
    pub fn passed(&self) -> bool {
        self.problem.is_none()
            && self.special_mismatches == 0
            && self.violations == 0
            && self.cann.as_ref().is_none_or(|g| g.passed)
    }

    fn failed_structurally(actual: &HostTensor, rule: Tolerance, problem: String) -> Comparison {
        Comparison {
            dtype: actual.dtype,
            shape: actual.shape.clone(),
            rule,
            count: 0,
            max_ulp: 0,
            mere: 0.0,
            mare: 0.0,
            cann: None,
            worst: None,
            violations: 0,
            first_violation: None,
            special_mismatches: 0,
            first_special_mismatch: None,
            problem: Some(problem),
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
        Tolerance::Ulp { .. } | Tolerance::CannOnly => cann_threshold(dtype),
        _ => None,
    };
    let small = cann_t.and(small_value_domain(dtype));

    let mut out = Comparison {
        dtype,
        shape: actual.shape.clone(),
        rule,
        count: expected.len(),
        max_ulp: 0,
        mere: 0.0,
        mare: 0.0,
        cann: None,
        worst: None,
        violations: 0,
        first_violation: None,
        special_mismatches: 0,
        first_special_mismatch: None,
        problem: None,
    };
    let (mut rel_sum, mut rel_count) = (0.0f64, 0usize);
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
        let breaks = match rule {
            Tolerance::Ulp { max_ulp } => ulp > u64::from(max_ulp),
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

    fn f16(values: &[f64]) -> HostTensor {
        HostTensor::from_f64(DType::Float16, &[values.len()], values)
    }

    #[test]
    fn perfect_match_passes() {
        let g = [1.0 / 3.0, -7.3, 1000.123, 0.0, 1e-9];
        let actual = f16(&g);
        let c = compare(&actual, &g, Tolerance::Ulp { max_ulp: 1 });
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
        let c = compare(&actual, &g, Tolerance::Ulp { max_ulp: 1 });
        assert!(!c.passed());
        assert_eq!(c.max_ulp, 2);
        assert_eq!(c.violations, 1);
        let w = c.worst.as_ref().unwrap();
        assert_eq!((w.flat, w.actual, w.expected), (1, 1.001953125, 1.0));
        // The CANN gate alone would pass (rel err 2^-9 < 10·2^-10; mean 2^-9/3 < 2^-10).
        assert!(c.cann.as_ref().unwrap().passed);
        assert!(compare(&actual, &g, Tolerance::Ulp { max_ulp: 2 }).passed());
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
        assert_eq!(compare(&a, &[1.0], Tolerance::Ulp { max_ulp: 1 }).max_ulp, 1);
    }

    #[test]
    fn nan_and_inf_positions_must_match() {
        let g = [1.0, f64::NAN, f64::INFINITY, -1e6];
        // -1e6 overflows f16 to -Inf: RNE(g) is -Inf, so -Inf matches.
        let ok =
            HostTensor::from_f64(DType::Float16, &[2, 2], &[1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
        let c = compare(&ok, &g, Tolerance::Ulp { max_ulp: 0 });
        assert!(c.passed(), "{c}");
        assert_eq!(c.special_mismatches, 0);

        let bad =
            HostTensor::from_f64(DType::Float16, &[2, 2], &[f64::NAN, 2.0, f64::INFINITY, f64::NEG_INFINITY]);
        let c = compare(&bad, &g, Tolerance::Ulp { max_ulp: 1000 });
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
        assert!((c.mere - 0.16666666041666693).abs() < 1e-15, "{}", c.mere);
        assert!((c.mare - 0.24999999375000016).abs() < 1e-15, "{}", c.mare);
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
        let c = compare(&a, &g, Tolerance::Ulp { max_ulp: 0 });
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
    fn size_mismatch_is_a_failure() {
        let c = compare(&f16(&[1.0, 2.0]), &[1.0], Tolerance::Ulp { max_ulp: 1 });
        assert!(!c.passed());
        assert_eq!(
            c.to_string(),
            "FAIL float16 (2,) n=0 [ulp<=1+CANN]: actual has 2 elements, the reference 1"
        );
    }

    #[test]
    fn empty_outputs_pass() {
        let a = HostTensor::zeros(DType::Float16, &[0, 4]);
        assert!(compare(&a, &[], Tolerance::Ulp { max_ulp: 1 }).passed());
    }
}
