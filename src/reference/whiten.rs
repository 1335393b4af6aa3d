//! masked_whiten in f64, written from verl's `masked_whiten` (verl.utils.torch_functional):
//! over the elements where mask is 1,
//!   mean = Σ x·m / (Σ m + 1e-8),
//!   var  = Σ (x − mean)²·m / (Σ m + 1e-8) · Σ m / (Σ m − 1)   (Bessel's correction),
//!   y    = (x − mean) / sqrt(var + 1e-8),  plus mean again when shift_mean is false,
//! every element written, masked ones too. With fewer than 2 selected elements the unbiased
//! variance is undefined (verl gives NaN for one and x·1e4 for none): this op's result is NaN
//! everywhere then (the kernel cannot know the count before it runs; `opgen_torch.rl` refuses it).
//!
//! Alongside the values, a bound on |float32 evaluation − exact| per element for a kernel that
//! computes per tile of 2^depth elements a pairwise-tree sum of x·m and of m, the tile mean, a
//! tree sum of (m·(x − tile mean))², and joins the tiles' and then the cores' (count, mean, M2)
//! by Chan's formula in float32, `merges` joins on the longest chain (see [`Plan`]); u = 2^-24,
//! X = max |x| over the selected elements, n the count, M2 = Σ m·(x − mean)²:
//!   E_mean ≤ u·X·(depth + 1 + 11·merges) + |mean|·1e-8/n
//!     (a tile's mean: depth roundings of the tree and the division; a join
//!     μ = μa + (μb − μa)·(nb/n), a convex step that does not grow the parts' errors, adds
//!     ≤ 5u·|μb − μa|·w + u·|μ| ≤ 11u·X: δ, both counts as float32 (exact below 2^24), the
//!     ratio and the product rounded once each, then the sum; the last term: verl's + 1e-8 in
//!     the divisor);
//!   E_M2 ≤ (γ(depth + 3) + (2·merges + 6)·u)·M2 + 2·Eδ·√(2n·M2) + 2n·Eδ² + 2n·((depth+1)·u·X)²
//!     with Eδ = 2·E_mean + 2u·X (a join's δ² term's error, summed by Cauchy–Schwarz over
//!     Σ nb ≤ 2n weights; the tiles' squares around their own rounded mean);
//!   the variance's error Ev ≤ E_M2/(n − 1) + 2u·var + var·1e-8/n; the scale
//!   r = rsqrt(var + 1e-8) then within ε_r = Ev/(2·(var + 1e-8)) + 4u relatively;
//!   |y − ŷ| ≤ r·E_mean·(1 + ε_r) + |y|·(ε_r + 2u), and with shift_mean false + E_mean + u·(|y| + |mean|).
//! All first order; the result is multiplied by 1.0625 for the second-order terms.

use super::ReferenceError;

pub mod grpo;

const U: f64 = 1.0 / 16_777_216.0; // 2^-24: float32's unit roundoff
/// verl's guard, in both divisors and under the square root.
const GUARD: f64 = 1e-8;

/// What the error bound needs to know of the kernel's evaluation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// log2 of the tile's element count: the depth of the pairwise tree sums.
    pub depth: u32,
    /// Chan joins on the longest chain: a core's tiles one after another, then the cores'
    /// partials one after another.
    pub merges: u64,
}

/// The whitened values and each element's error bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Whitened {
    pub values: Vec<f64>,
    pub bound: Vec<f64>,
}

/// `x` and `mask` (0/1) of one length, already rounded to the input dtypes.
pub fn masked_whiten(
    x: &[f64],
    mask: &[f64],
    shift_mean: bool,
    plan: Plan,
) -> Result<Whitened, ReferenceError> {
    if x.len() != mask.len() {
        return Err(ReferenceError::new(
            "masked_whiten",
            format!("values has {} elements, response_mask {}", x.len(), mask.len()),
        ));
    }
    let n: f64 = mask.iter().sum();
    if n < 2.0 {
        return Ok(Whitened { values: vec![f64::NAN; x.len()], bound: vec![0.0; x.len()] });
    }
    let sum: f64 = x.iter().zip(mask).map(|(v, m)| v * m).sum();
    let mean = sum / (n + GUARD);
    let m2: f64 = x.iter().zip(mask).map(|(v, m)| (v - mean) * (v - mean) * m).sum();
    let var = m2 / (n + GUARD) * (n / (n - 1.0));
    let r = 1.0 / (var + GUARD).sqrt();
    let big_x = x.iter().zip(mask).filter(|(_, m)| **m != 0.0).fold(0.0f64, |a, (v, _)| a.max(v.abs()));
    let depth = f64::from(plan.depth);
    let merges = plan.merges as f64;
    let e_mean = U * big_x * (depth + 1.0 + 11.0 * merges) + mean.abs() * GUARD / n;
    let e_delta = 2.0 * e_mean + 2.0 * U * big_x;
    let gamma = |k: f64| k * U / (1.0 - k * U);
    let tile_sq = (depth + 1.0) * U * big_x;
    let e_m2 = (gamma(depth + 3.0) + (2.0 * merges + 6.0) * U) * m2
        + 2.0 * e_delta * (2.0 * n * m2).sqrt()
        + 2.0 * n * e_delta * e_delta
        + 2.0 * n * tile_sq * tile_sq;
    let e_var = e_m2 / (n - 1.0) + 2.0 * U * var + var * GUARD / n;
    let eps_r = e_var / (2.0 * (var + GUARD)) + 4.0 * U;
    let mut values = Vec::with_capacity(x.len());
    let mut bound = Vec::with_capacity(x.len());
    for &v in x {
        let y = (v - mean) * r;
        let mut e = r * e_mean * (1.0 + eps_r) + y.abs() * (eps_r + 2.0 * U);
        let out = if shift_mean {
            y
        } else {
            e += e_mean + U * (y.abs() + mean.abs());
            y + mean
        };
        values.push(out);
        bound.push(e * 1.0625);
    }
    Ok(Whitened { values, bound })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: Plan = Plan { depth: 11, merges: 50 };

    #[test]
    fn three_values_by_hand() {
        // x = 1, 2, 6 selected, 100 masked: mean 3, M2 = 4 + 1 + 9 = 14, var = 7.
        let x = [1.0, 2.0, 6.0, 100.0];
        let m = [1.0, 1.0, 1.0, 0.0];
        let w = masked_whiten(&x, &m, true, PLAN).unwrap();
        let mean = 9.0 / (3.0 + 1e-8);
        let var = (x[..3].iter().map(|v| (v - mean) * (v - mean)).sum::<f64>()) / (3.0 + 1e-8) * 1.5;
        let r = 1.0 / (var + 1e-8f64).sqrt();
        assert!((mean - 3.0).abs() < 1e-7 && (var - 7.0).abs() < 1e-6);
        for (i, v) in x.iter().enumerate() {
            assert_eq!(w.values[i], (v - mean) * r, "element {i}");
        }
        let shifted = masked_whiten(&x, &m, false, PLAN).unwrap();
        assert_eq!(shifted.values[3], (100.0 - mean) * r + mean);
    }

    #[test]
    fn fewer_than_two_selected_is_nan() {
        for m in [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
            let w = masked_whiten(&[1.0, 2.0, 3.0], &m, true, PLAN).unwrap();
            assert!(w.values.iter().all(|v| v.is_nan()), "{m:?}");
        }
    }

    #[test]
    fn the_bound_grows_with_the_merges_and_the_mean() {
        let x: Vec<f64> = (0..1000).map(|i| 1000.0 + (i % 7) as f64).collect();
        let m = vec![1.0; 1000];
        let few = masked_whiten(&x, &m, true, Plan { depth: 11, merges: 1 }).unwrap();
        let many = masked_whiten(&x, &m, true, Plan { depth: 11, merges: 100 }).unwrap();
        assert!(many.bound[0] > 10.0 * few.bound[0]);
        // A mean 500x the spread (σ = 2, r = 0.5): at least the mean's error scaled by r,
        // u·1006·(11 + 1 + 11)·0.5 ≈ 6.9e-4 with one join; the mean's error also enters the
        // variance through the joins' δ terms (≈ 2·Eδ/σ relative), so the bound is several times
        // that, still well under 1e-2.
        let floor = U * 1006.0 * 23.0 * 0.5;
        assert!(few.bound[0] > floor && few.bound[0] < 1e-2, "{} against {floor}", few.bound[0]);
        assert!(masked_whiten(&x, &m[..999], true, PLAN).is_err());
    }
}
