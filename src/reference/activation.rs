//! Activations (op-semantics.md §3), written from the formulas in f64, plus erf/erfc.
//!
//! | fn | formula |
//! |---|---|
//! | [`gelu_tanh`] | x·σ(2·√(2/π)·(x + 0.044715·x³)), the sigmoid form of 0.5x(1 + tanh(·)) |
//! | [`gelu_erf`] | 0.5·x·(1 + erf(x/√2)), evaluated as 0.5·x·erfc(−x/√2) (no cancellation for x < 0) |
//! | [`fast_gelu`] | x/(1 + e^(−1.702|x|))·e^(0.851(x − |x|)) = x·σ(1.702x) |
//! | [`silu`] | x·σ(x) |
//! | [`swiglu`] | silu(gate)·up |
//!
//! The derivatives, written from the closed forms (σ' = σ(z)·σ(−z), φ the normal density), for
//! the generated backward ops (`<name>_grad`: dx = dy·f'(x)):
//!
//! | fn | formula |
//! |---|---|
//! | [`gelu_tanh_grad`] | σ(z) + x·σ(z)σ(−z)·2β(1 + 3κx²), z = 2β(x + κx³) |
//! | [`gelu_erf_grad`] | Φ(x) + x·φ(x) = 0.5·erfc(−x/√2) + x·e^(−x²/2)/√(2π) |
//! | [`fast_gelu_grad`] | σ(kx) + kx·σ(kx)σ(−kx), k = 1.702 |
//! | [`swiglu_grad`] | ∂/∂gate = up·(σ(g) + g·σ(g)σ(−g)), ∂/∂up = silu(gate) |
//!
//! At ±∞ every one of these derivatives is NaN: the IEEE value of the x·σ'(·) term (±∞·0),
//! which torch's own backward formulas (e.g. GeLU's `x * pdf`) produce as well.
//! Non-finite inputs: NaN → NaN, +Inf → +Inf, −Inf → NaN. The last is the IEEE value of every
//! x·σ(·) form at −∞ (−∞·0), which is what torch and the fp32 sigmoid-form kernels produce; the
//! mathematical limit would be 0. (fast_gelu's rearranged form would give NaN at +∞ from ∞ − ∞;
//! the convention above keeps the x·σ(1.702x) value, +∞.)

use super::ReferenceError;
use crate::tensor::{format_shape, HostTensor};
use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI, PI};

/// The values every activation here takes at NaN and ±Inf (see the module doc).
fn non_finite(x: f64) -> Option<f64> {
    if x.is_finite() {
        None
    } else if x == f64::INFINITY {
        Some(f64::INFINITY)
    } else {
        Some(f64::NAN)
    }
}

/// The logistic function 1/(1 + e^−z), evaluated without overflow on either side.
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// GeLU, tanh approximation, in its sigmoid form (what the CANN kernel evaluates, §3.2):
/// x·σ(2β(x + κx³)) with β = √(2/π), κ = 0.044715.
pub fn gelu_tanh(x: f64) -> f64 {
    if let Some(v) = non_finite(x) {
        return v;
    }
    let two_beta = (8.0 / PI).sqrt();
    x * sigmoid(two_beta * (x + 0.044715 * x * x * x))
}

/// Exact GeLU: 0.5·x·(1 + erf(x/√2)) = 0.5·x·erfc(−x/√2).
pub fn gelu_erf(x: f64) -> f64 {
    if let Some(v) = non_finite(x) {
        return v;
    }
    0.5 * x * erfc(-x * FRAC_1_SQRT_2)
}

/// fast_gelu, the 910/310P stable rearrangement (§3.3): x/(1 + e^(−1.702|x|))·e^(0.851(x − |x|)),
/// equal to x/(1 + e^(−1.702x)) (A2/A3 doc form) for every finite x.
pub fn fast_gelu(x: f64) -> f64 {
    if let Some(v) = non_finite(x) {
        return v;
    }
    let a = x.abs();
    x / (1.0 + (-1.702 * a).exp()) * (0.851 * (x - a)).exp()
}

/// SiLU (swish): x·σ(x).
pub fn silu(x: f64) -> f64 {
    if let Some(v) = non_finite(x) {
        return v;
    }
    x * sigmoid(x)
}

/// SwiGLU: gate·σ(gate)·up.
pub fn swiglu(gate: f64, up: f64) -> f64 {
    silu(gate) * up
}

/// SwiGLU as HF's MLP computes it on 16-bit tensors (`act_fn(gate_proj(x)) * up_proj(x)`):
/// silu(gate) is stored in `dtype` (one RNE), then multiplied by up; the final rounding is the
/// caller's.
pub fn swiglu_hf(dtype: crate::dtype::DType, gate: f64, up: f64) -> f64 {
    crate::tensor::round_to_dtype(dtype, silu(gate)) * up
}

const GELU_KAPPA: f64 = 0.044715;
const FAST_GELU_K: f64 = 1.702;

/// σ'(z) = σ(z)·σ(−z), without cancellation.
fn sigmoid_slope(z: f64) -> f64 {
    sigmoid(z) * sigmoid(-z)
}

/// d/dx of [`gelu_tanh`]: σ(z) + x·σ'(z)·2β(1 + 3κx²), z = 2β(x + κx³).
pub fn gelu_tanh_grad(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let two_beta = (8.0 / PI).sqrt();
    let z = two_beta * (x + GELU_KAPPA * x * x * x);
    sigmoid(z) + x * sigmoid_slope(z) * two_beta * (1.0 + 3.0 * GELU_KAPPA * x * x)
}

/// d/dx of [`gelu_erf`]: Φ(x) + x·φ(x).
pub fn gelu_erf_grad(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let pdf = (-0.5 * x * x).exp() / (2.0 * PI).sqrt();
    0.5 * erfc(-x * FRAC_1_SQRT_2) + x * pdf
}

/// d/dx of [`fast_gelu`] = x·σ(kx): σ(kx) + kx·σ'(kx).
pub fn fast_gelu_grad(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let z = FAST_GELU_K * x;
    sigmoid(z) + z * sigmoid_slope(z)
}

/// The partial derivatives of [`swiglu`] = gate·σ(gate)·up: (∂/∂gate, ∂/∂up).
pub fn swiglu_grad(gate: f64, up: f64) -> (f64, f64) {
    let dgate = if gate.is_finite() { up * (sigmoid(gate) + gate * sigmoid_slope(gate)) } else { f64::NAN };
    (dgate, silu(gate))
}

/// `f` applied to every element of `x` (exactly widened), unrounded.
pub fn unary(x: &HostTensor, f: impl Fn(f64) -> f64) -> Vec<f64> {
    x.to_f64().into_iter().map(f).collect()
}

/// `f` applied element-wise to two tensors of the same shape (e.g. [`swiglu`]), unrounded.
pub fn binary(
    a: &HostTensor,
    b: &HostTensor,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Vec<f64>, ReferenceError> {
    if a.shape != b.shape {
        return Err(ReferenceError::new(
            "binary activation",
            format!("operand shapes {} and {} differ", format_shape(&a.shape), format_shape(&b.shape)),
        ));
    }
    Ok(a.to_f64().into_iter().zip(b.to_f64()).map(|(p, q)| f(p, q)).collect())
}

/// e^(−x²) for x ≥ 0 without the error of rounding x²: x = xh + xl with xh a multiple of 1/16,
/// so xh² is exact and x² − xh² = (x − xh)(x + xh) is small (W. J. Cody's trick, CALERF).
fn exp_neg_square(x: f64) -> f64 {
    let xh = (x * 16.0).trunc() / 16.0;
    let del = (x - xh) * (x + xh);
    (-xh * xh).exp() * (-del).exp()
}

/// erf(x) = (2/√π)·e^(−x²)·Σ_{n≥0} 2ⁿx^(2n+1)/(1·3·…·(2n+1)). All terms share x's sign, so
/// there is no cancellation; used for |x| ≤ 1.5 (≤ ~25 terms).
fn erf_series(x: f64) -> f64 {
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0;
    for _ in 0..200 {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
        if term.abs() <= 1e-17 * sum.abs() {
            break;
        }
    }
    FRAC_2_SQRT_PI * exp_neg_square(x.abs()) * sum
}

/// erfc(x) for x ≥ 1 from Laplace's continued fraction
/// erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))),
/// evaluated with the modified Lentz method (~190 steps at x = 1, ~90 at 1.5, 10 at 10).
fn erfc_continued_fraction(x: f64) -> f64 {
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..=500 {
        let a = f64::from(k) * 0.5;
        d = 1.0 / (x + a * d);
        c = x + a / c;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() <= 1e-16 {
            break;
        }
    }
    exp_neg_square(x) * (0.5 * FRAC_2_SQRT_PI) / f
}

/// The error function. Relative error ≤ ~1.0e-15 (measured against mpmath on 20 000 random
/// points in [0, 6]; the worst case is the series near |x| = 1.5).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a <= 1.5 {
        erf_series(x)
    } else if a >= 6.0 {
        // erfc(6) ≈ 2.2e-17 < ulp(1)/2: erf rounds to ±1.
        1.0f64.copysign(x)
    } else {
        (1.0 - erfc_continued_fraction(a)).copysign(x)
    }
}

/// The complementary error function 1 − erf(x), accurate in relative terms in the tail.
/// Relative error (measured against mpmath on random points): ≤ ~5e-16 for x < 0.5, ≤ ~4.5e-15
/// for 0.5 ≤ x < 1.5 (where 1 − erf amplifies erf's error, or the continued fraction runs long),
/// ≤ ~2.5e-15 for 1.5 ≤ x ≤ 26 (underflow below ~1e-308 beyond).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 1.0 {
        // erfc > 0.157 here: 1 − erf amplifies erf's error by at most erf/erfc ≈ 5.4.
        1.0 - erf(x)
    } else if x >= 27.5 {
        // erfc(27.3) ≈ 4e-326 already underflows f64.
        0.0
    } else {
        erfc_continued_fraction(x)
    }
}

#[cfg(test)]
// Reference values are kept with all the digits mpmath printed; each literal rounds to the
// nearest f64.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn assert_rel(actual: f64, expected: f64, tol: f64) {
        let rel = ((actual - expected) / expected).abs();
        assert!(rel <= tol, "actual {actual:e} expected {expected:e} rel err {rel:e} > {tol:e}");
    }

    // Reference values in these tests were computed with mpmath 1.3 at 40 significant digits
    // (mp.dps = 40; 120 for the x = −10 tails, where 1 + tanh/erf cancels), from the formulas
    // as written in each comment, independently of this code.

    #[test]
    fn erf_known_values() {
        // mpmath erf(x)
        let cases = [
            (0.5, 0.52049987781304653768),
            (1.0, 0.84270079294971486934),
            (2.0, 0.99532226501895273416),
            (-3.0, -0.99997790950300141456),
            (3.0, 0.99997790950300141456),
            (5.0, 0.99999999999846254021),
            (0.1, 0.1124629160182848984),
            (1e-10, 1.128379167095512615e-10),
        ];
        for (x, want) in cases {
            assert_rel(erf(x), want, 1.2e-15);
        }
        assert_eq!(erf(6.0), 1.0);
        assert_eq!(erf(f64::INFINITY), 1.0);
        assert_eq!(erf(f64::NEG_INFINITY), -1.0);
        assert_eq!(erf(0.0), 0.0);
        assert!(erf(-0.0).is_sign_negative());
        assert!(erf(f64::NAN).is_nan());
    }

    #[test]
    fn erfc_tails() {
        // mpmath erfc(x)
        let cases = [
            (0.5, 0.47950012218695346232),
            (1.0, 0.15729920705028513066),
            (2.0, 0.0046777349810472658379),
            (3.0, 0.000022090496998585441373),
            (5.0, 1.5374597944280348502e-12),
            (6.0, 2.1519736712498913117e-17),
            (10.0, 2.088487583762544757e-45),
            (-1.0, 1.8427007929497148693),
            (-5.0, 1.9999999999984625402),
        ];
        for (x, want) in cases {
            assert_rel(erfc(x), want, if (0.5..1.5).contains(&x) { 5e-15 } else { 2.5e-15 });
        }
        // Near the bottom of the normal range.
        assert_rel(erfc(26.5), 2.2109076642637342759e-307, 1e-13);
        assert_eq!(erfc(30.0), 0.0);
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert_eq!(erfc(f64::NEG_INFINITY), 2.0);
    }

    #[test]
    fn erf_is_smooth_across_the_method_switches() {
        // erf + erfc = 1 on both sides of every switch (erfc at 1, erf at 1.5 and 6).
        for x in [0.9999999, 1.0, 1.0000001, 1.4999999, 1.5, 1.5000001, 5.9999, 6.0] {
            assert!(approx::abs_diff_eq!(erf(x) + erfc(x), 1.0, epsilon = 4.0 * f64::EPSILON), "x = {x}");
        }
    }

    #[test]
    fn gelu_erf_values() {
        // mpmath 0.5·x·(1 + erf(x/√2))
        let cases = [
            (-3.0, -0.00404969409489028358),
            (-0.5, -0.15426876936299344818),
            (0.1, 0.053982783727702901364),
            (1.0, 0.84134474606854294859),
            (2.5, 2.4844758366855596621),
            (1e-8, 5.0000000398942281448e-9),
        ];
        for (x, want) in cases {
            assert_rel(gelu_erf(x), want, 4e-15);
        }
        // Deep negative tail: the erfc form keeps relative accuracy where 1 + erf(·) would not.
        assert_rel(gelu_erf(-10.0), -7.619853024160526066e-23, 1e-13);
    }

    #[test]
    fn gelu_tanh_values() {
        // mpmath 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715x³))) — the tanh form, so this also checks
        // the sigmoid rewrite.
        let cases = [
            (-3.0, -0.0036373920817730188378),
            (-0.5, -0.15428599017485607796),
            (0.1, 0.053982751045435167588),
            (1.0, 0.84119199060827670478),
            (2.5, 2.4849157339100014179),
            (1e-8, 5.0000000398942281448e-9),
        ];
        for (x, want) in cases {
            assert_rel(gelu_tanh(x), want, 4e-15);
        }
        assert_rel(gelu_tanh(-10.0), -1.2040923482098059937e-37, 1e-13);
    }

    #[test]
    fn fast_gelu_values() {
        // mpmath x/(1 + exp(−1.702x)) (the A2/A3 doc form, so this checks the rearrangement).
        let cases = [
            (-3.0, -0.018071309707785966513),
            (-0.5, -0.14961156339361987683),
            (0.1, 0.054244758083618189608),
            (1.0, 0.84579576593282129571),
            (2.0, 1.9356586231442081498),
            (3.0, 2.9819286902922140335),
            (4.0, 3.9955852758604189386),
            (-10.0, -4.0579612948553099903e-7),
        ];
        for (x, want) in cases {
            assert_rel(fast_gelu(x), want, 4e-15);
        }
        // op-plugin's test_npu_fast_gelu expectations for 1..4 (4 decimals, op-semantics §3.3).
        for (x, want) in [(1.0, 0.8458), (2.0, 1.9357), (3.0, 2.9819), (4.0, 3.9956)] {
            assert!(approx::abs_diff_eq!(fast_gelu(x), want, epsilon = 5e-5), "x = {x}");
        }
    }

    #[test]
    fn silu_and_swiglu_values() {
        // mpmath x/(1 + exp(−x))
        let cases = [
            (-3.0, -0.14227761953270034264),
            (-0.5, -0.18877033439907271768),
            (0.1, 0.052497918747894001663),
            (1.0, 0.73105857863000487925),
            (2.5, 2.310354549946891122),
            (-10.0, -0.00045397868702434394505),
        ];
        for (x, want) in cases {
            assert_rel(silu(x), want, 4e-15);
        }
        // mpmath 1.5/(1 + e^−1.5)·(−2.25) and −4/(1 + e^4)·0.5
        assert_rel(swiglu(1.5, -2.25), -2.7593138571535473512, 4e-15);
        assert_rel(swiglu(-4.0, 0.5), -0.035972419924183116054, 4e-15);
    }

    #[test]
    fn non_finite_inputs() {
        for f in [gelu_tanh, gelu_erf, fast_gelu, silu] {
            assert_eq!(f(f64::INFINITY), f64::INFINITY);
            assert!(f(f64::NEG_INFINITY).is_nan());
            assert!(f(f64::NAN).is_nan());
            // Large finite negative inputs underflow to −0, not NaN.
            assert_eq!(f(-1e6), 0.0);
            assert_eq!(f(1e6), 1e6);
        }
    }

    #[test]
    fn tensor_helpers() {
        let x = HostTensor::from_f64(DType::Float16, &[2], &[1.0, -0.5]);
        let y = unary(&x, gelu_erf);
        assert_eq!(y, vec![gelu_erf(1.0), gelu_erf(-0.5)]);
        let up = HostTensor::from_f64(DType::Float16, &[2], &[2.0, 4.0]);
        assert_eq!(binary(&x, &up, swiglu).unwrap(), vec![swiglu(1.0, 2.0), swiglu(-0.5, 4.0)]);
        let bad = HostTensor::zeros(DType::Float16, &[3]);
        assert!(binary(&x, &bad, swiglu).is_err());
    }
}
