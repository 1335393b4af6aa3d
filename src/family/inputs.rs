//! Seeded input generators for the numerics sweeps (DESIGN.md "Numerics policy"; the CANN test
//! data of op-semantics.md §5.3).
//!
//! Values are drawn in f64 and rounded once (RNE) to the dtype. The stream is bit-for-bit the
//! same on every platform: the generator is xoshiro256** seeded through splitmix64, uniforms
//! take the top 53 bits, and normals use the Marsaglia polar method with this module's own
//! `ln` built from +, −, ×, ÷ only (IEEE-exact operations; Rust never contracts them into FMA)
//! and `sqrt` (also correctly rounded by IEEE 754). No libm transcendental is involved, so the
//! system's libm cannot change a draw.

use crate::dtype::DType;
use crate::tensor::{round_to_dtype, shape_numel, HostTensor};
use std::collections::BTreeSet;
use std::f64::consts::{LN_2, SQRT_2};

/// Input distributions of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Distribution {
    /// Uniform in [−5, 5].
    Uniform5,
    /// Normal with a mean drawn uniformly in [−100, 100] and σ drawn in [1, 25] (once per
    /// tensor).
    NormalLargeMean,
    /// Uniform in (−1e−3, 1e−3), redrawn until |x| < 1e−3 holds after rounding.
    Tiny,
    /// Uniform in [−1, 1] with ⌈0.1%⌉ of the elements (distinct, seeded positions) ×1000.
    Outlier,
    /// All +0.
    Zeros,
    /// Uniform in [−5, 5] with NaN, +Inf and −Inf (in turn) at max(1, numel/1000) seeded
    /// positions each. Integer dtypes get 0 for NaN and saturate ±Inf.
    NanInf,
    /// Aimed at positions: uniform in [−1, 1] with ±64 (seeded sign) at the last element of
    /// every row of the last dim. Row ends are where a reduction's tail, a split-D pass's last
    /// chunk, a core's share and a UB pass end, so a kernel that leaves any of them out of a sum
    /// of squares or a max is off by far more than an ULP (a missing ±64 among ~d/3 of about
    /// 1/3 changes rstd by ~50% at d = 8192; an int8 row's absmax is that element).
    RowEnds,
    /// One-hot rows: every row of the last dim is 0 except one element of ±[1, 5], at column
    /// d−1−(r mod d) of row r, so the last column is hot in row 0 and every column in some row
    /// when there are ≥ d rows. A reduction over a row is then exactly one element.
    OneHot,
}

impl Distribution {
    pub const ALL: [Distribution; 6] = [
        Distribution::Uniform5,
        Distribution::NormalLargeMean,
        Distribution::Tiny,
        Distribution::Outlier,
        Distribution::Zeros,
        Distribution::NanInf,
    ];

    /// The position-aimed distributions (not in [`Distribution::ALL`], which the random
    /// property tests draw from: their shapes are too small for aimed positions to matter).
    pub const AIMED: [Distribution; 2] = [Distribution::RowEnds, Distribution::OneHot];

    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform5 => "uniform5",
            Distribution::NormalLargeMean => "normal_large_mean",
            Distribution::Tiny => "tiny",
            Distribution::Outlier => "outlier",
            Distribution::Zeros => "zeros",
            Distribution::NanInf => "nan_inf",
            Distribution::RowEnds => "row_ends",
            Distribution::OneHot => "one_hot",
        }
    }

    pub fn parse(text: &str) -> Option<Distribution> {
        let text = text.trim().to_ascii_lowercase();
        Distribution::ALL.into_iter().chain(Distribution::AIMED).find(|d| d.name() == text)
    }
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One splitmix64 step (Vigna's reference `next()`): advances `state`, returns the output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed for one named input of a case (e.g. `derive_seed(case_seed, "x1")`), so that two
/// inputs generated from one case seed are independent.
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    // FNV-1a of the label, then one splitmix64 step to mix it with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut state = seed ^ h;
    splitmix64(&mut state)
}

/// xoshiro256** (Blackman & Vigna), seeded from one u64 through splitmix64.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
    spare_normal: Option<f64>,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut state = seed;
        let s =
            [splitmix64(&mut state), splitmix64(&mut state), splitmix64(&mut state), splitmix64(&mut state)];
        Rng { s, spare_normal: None }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), multiples of 2^-53.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }

    /// Uniform integer in [0, n), without modulo bias (rejection). `n` must be > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        // Accept x in [2^64 mod n, 2^64): a range whose size is a multiple of n.
        let threshold = n.wrapping_neg() % n;
        loop {
            let x = self.next_u64();
            if x >= threshold {
                return x % n;
            }
        }
    }

    /// Standard normal, Marsaglia polar method (platform-independent: see the module doc).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        loop {
            let u = 2.0 * self.next_f64() - 1.0;
            let v = 2.0 * self.next_f64() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                let factor = (-2.0 * ln(s) / s).sqrt();
                self.spare_normal = Some(v * factor);
                return u * factor;
            }
        }
    }

    /// `k` distinct indices in [0, n), sorted (Floyd's algorithm; k is clamped to n).
    pub fn distinct_indices(&mut self, n: usize, k: usize) -> Vec<usize> {
        let k = k.min(n);
        let mut chosen = BTreeSet::new();
        for j in n - k..n {
            let t = self.below(j as u64 + 1) as usize;
            if !chosen.insert(t) {
                chosen.insert(j);
            }
        }
        chosen.into_iter().collect()
    }
}

/// Natural logarithm of a positive finite normal f64, from IEEE-exact operations only:
/// x = 2^e·m with m in (√½, √2], ln m = 2·atanh(s) = 2(s + s³/3 + s⁵/5 + …), s = (m−1)/(m+1),
/// |s| ≤ 0.1716 so 14 terms reach below 1e-19 relative. Accurate to a few ulp.
fn ln(x: f64) -> f64 {
    debug_assert!(x.is_finite() && x > 0.0 && x.is_normal());
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // Horner over the odd-power coefficients 1/(2k+1), k = 13 down to 0.
    let mut poly = 0.0;
    for k in (0..14).rev() {
        poly = poly * s2 + 1.0 / f64::from(2 * k + 1);
    }
    2.0 * s * poly + f64::from(e) * LN_2
}

/// A tensor of `shape` drawn from `dist` with `seed`, each value rounded once to `dtype`.
/// Deterministic: the same arguments give the same bytes on every platform.
pub fn generate(dist: Distribution, dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    let n = shape_numel(shape);
    let mut rng = Rng::new(seed);
    let values: Vec<f64> = match dist {
        Distribution::Uniform5 => (0..n).map(|_| rng.uniform(-5.0, 5.0)).collect(),
        Distribution::NormalLargeMean => {
            let mean = rng.uniform(-100.0, 100.0);
            let sigma = rng.uniform(1.0, 25.0);
            (0..n).map(|_| mean + sigma * rng.normal()).collect()
        }
        Distribution::Tiny => (0..n)
            .map(|_| loop {
                let v = round_to_dtype(dtype, rng.uniform(-1e-3, 1e-3));
                if v.abs() < 1e-3 {
                    break v;
                }
            })
            .collect(),
        Distribution::Outlier => {
            let mut v: Vec<f64> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
            for i in rng.distinct_indices(n, n.div_ceil(1000)) {
                v[i] *= 1000.0;
            }
            v
        }
        Distribution::Zeros => vec![0.0; n],
        Distribution::NanInf => {
            let mut v: Vec<f64> = (0..n).map(|_| rng.uniform(-5.0, 5.0)).collect();
            let per_kind = (n / 1000).max(1);
            let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
            for (j, i) in rng.distinct_indices(n, 3 * per_kind).into_iter().enumerate() {
                v[i] = specials[j % 3];
            }
            v
        }
        Distribution::RowEnds => {
            let d = shape.last().copied().unwrap_or(1).max(1);
            let mut v: Vec<f64> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
            for end in (d - 1..n).step_by(d) {
                v[end] = if rng.below(2) == 0 { 64.0 } else { -64.0 };
            }
            v
        }
        Distribution::OneHot => {
            let d = shape.last().copied().unwrap_or(1).max(1);
            let mut v = vec![0.0; n];
            for (r, row) in v.chunks_mut(d).enumerate() {
                let magnitude = rng.uniform(1.0, 5.0);
                row[d - 1 - r % d] = if rng.below(2) == 0 { magnitude } else { -magnitude };
            }
            v
        }
    };
    HostTensor::from_f64(dtype, shape, &values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aimed_distributions_hit_row_ends() {
        let t = generate(Distribution::RowEnds, DType::Float16, &[3, 5], 1).to_f64();
        for r in 0..3 {
            assert_eq!(t[r * 5 + 4].abs(), 64.0, "{t:?}");
            assert!(t[r * 5..r * 5 + 4].iter().all(|v| v.abs() <= 1.0), "{t:?}");
        }
        let h = generate(Distribution::OneHot, DType::Float32, &[6, 4], 2).to_f64();
        for (r, row) in h.chunks(4).enumerate() {
            let hot: Vec<usize> = (0..4).filter(|&c| row[c] != 0.0).collect();
            assert_eq!(hot, vec![3 - r % 4], "row {r}: {row:?}");
            assert!((1.0..=5.0).contains(&row[hot[0]].abs()));
        }
        for d in Distribution::AIMED {
            assert_eq!(Distribution::parse(d.name()), Some(d));
        }
    }

    #[test]
    fn prng_reference_values() {
        // splitmix64 from seed 0 and xoshiro256** seeded by it, checked against an independent
        // Python transcription of Vigna's reference C code (splitmix64.c, xoshiro256starstar.c);
        // 0xe220a8397b1dcdaf is splitmix64's well-known first output for seed 0.
        let mut st = 0u64;
        let sm: Vec<u64> = (0..4).map(|_| splitmix64(&mut st)).collect();
        assert_eq!(sm, vec![0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, 0xf88bb8a8724c81ec]);
        let mut rng = Rng::new(0);
        let xs: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
        assert_eq!(
            xs,
            vec![
                0x99ec5f36cb75f2b4,
                0xbf6e1f784956452a,
                0x1a5f849d4933e6e0,
                0x6aa594f1262d2d2c,
                0xbba5ad4a1f842e59
            ]
        );
    }

    #[test]
    fn own_ln_matches_libm_closely() {
        let mut rng = Rng::new(5);
        for _ in 0..10_000 {
            let x = rng.next_f64().max(1e-300) * [1e-200, 1e-5, 1.0, 1e10][rng.below(4) as usize];
            let want = x.ln();
            let got = ln(x);
            assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1.0), "ln({x:e})");
        }
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn deterministic_and_seed_sensitive() {
        for dist in Distribution::ALL {
            let a = generate(dist, DType::Float16, &[4, 257], 42);
            let b = generate(dist, DType::Float16, &[4, 257], 42);
            assert_eq!(a, b, "{dist}");
            if dist != Distribution::Zeros {
                assert_ne!(a, generate(dist, DType::Float16, &[4, 257], 43), "{dist}");
            }
        }
        assert_ne!(derive_seed(7, "x1"), derive_seed(7, "x2"));
    }

    #[test]
    fn one_rounding_from_the_same_draws() {
        // The draws do not depend on the dtype: every dtype's tensor is the same f64 draws,
        // each rounded once (never via another dtype, which could double-round).
        let mut rng = Rng::new(9);
        let draws: Vec<f64> = (0..1000).map(|_| rng.uniform(-5.0, 5.0)).collect();
        let t = generate(Distribution::Uniform5, DType::Float16, &[1000], 9);
        assert_eq!(t, HostTensor::from_f64(DType::Float16, &[1000], &draws));
        let t = generate(Distribution::Uniform5, DType::BFloat16, &[1000], 9);
        assert_eq!(t, HostTensor::from_f64(DType::BFloat16, &[1000], &draws));
    }

    #[test]
    fn distribution_shapes() {
        let n = 100_000;
        let u = generate(Distribution::Uniform5, DType::Float32, &[n], 1).to_f64();
        assert!(u.iter().all(|v| (-5.0..=5.0).contains(v)));
        let mean = u.iter().sum::<f64>() / n as f64;
        approx::assert_abs_diff_eq!(mean, 0.0, epsilon = 0.05);

        let g = generate(Distribution::NormalLargeMean, DType::Float32, &[n], 2).to_f64();
        let mean = g.iter().sum::<f64>() / n as f64;
        let sd = (g.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let mut rng = Rng::new(2);
        let (want_mean, want_sd) = (rng.uniform(-100.0, 100.0), rng.uniform(1.0, 25.0));
        approx::assert_abs_diff_eq!(mean, want_mean, epsilon = 0.05 * want_sd);
        assert!(approx::abs_diff_eq!(sd / want_sd, 1.0, epsilon = 0.02), "{sd} vs {want_sd}");
        // Roughly 68% within one sigma.
        let within = g.iter().filter(|v| (*v - want_mean).abs() < want_sd).count();
        approx::assert_abs_diff_eq!(within as f64 / n as f64, 0.6827, epsilon = 0.01);

        for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
            let t = generate(Distribution::Tiny, dtype, &[n], 3).to_f64();
            assert!(t.iter().all(|v| v.abs() < 1e-3), "{dtype}");
            assert!(t.iter().filter(|v| **v != 0.0).count() > n * 99 / 100);
        }

        let o = generate(Distribution::Outlier, DType::Float16, &[n], 4).to_f64();
        let big = o.iter().filter(|v| v.abs() > 1.0).count();
        assert!((99..=100).contains(&big), "{big}"); // 100 scaled; one could have had |v| < 1e-3
        assert!(o.iter().all(|v| v.abs() <= 1000.0));
        assert_eq!(
            generate(Distribution::Outlier, DType::Float16, &[10], 4)
                .to_f64()
                .iter()
                .filter(|v| v.abs() > 1.0)
                .count(),
            1
        );

        let z = generate(Distribution::Zeros, DType::BFloat16, &[3, 5], 5);
        assert!(z.bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn nan_inf_placement() {
        let t = generate(Distribution::NanInf, DType::Float16, &[5000], 6).to_f64();
        let nan = t.iter().filter(|v| v.is_nan()).count();
        let pinf = t.iter().filter(|v| **v == f64::INFINITY).count();
        let ninf = t.iter().filter(|v| **v == f64::NEG_INFINITY).count();
        assert_eq!((nan, pinf, ninf), (5, 5, 5));
        assert!(t.iter().filter(|v| v.is_finite()).all(|v| v.abs() <= 5.0));
        let small = generate(Distribution::NanInf, DType::Float32, &[2], 6).to_f64();
        assert_eq!(small.iter().filter(|v| !v.is_finite()).count(), 2);
        // Integers: NaN → 0, ±Inf saturate.
        let i = generate(Distribution::NanInf, DType::Int8, &[3], 6).to_i64();
        let mut sorted = i.clone();
        sorted.sort();
        assert_eq!(sorted, vec![-128, 0, 127]);
    }

    #[test]
    fn distinct_indices_are_distinct_and_in_range() {
        let mut rng = Rng::new(8);
        let idx = rng.distinct_indices(50, 50);
        assert_eq!(idx, (0..50).collect::<Vec<_>>());
        let idx = rng.distinct_indices(1_000_000, 1000);
        assert_eq!(idx.len(), 1000);
        assert!(idx.windows(2).all(|w| w[0] < w[1]) && idx[999] < 1_000_000);
        assert!(rng.distinct_indices(0, 3).is_empty());
    }

    #[test]
    fn names_round_trip() {
        for d in Distribution::ALL {
            assert_eq!(Distribution::parse(d.name()), Some(d));
        }
        assert_eq!(Distribution::parse("bogus"), None);
    }
}
