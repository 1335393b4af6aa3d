//! Rotary position embedding, torch_npu.npu_rotary_mul semantics (op-semantics.md §2.1):
//! y = x·r1 + rotate(x)·r2 over a 4-D x, with r1 (cos) and r2 (sin) full-D and broadcast to
//! x's shape (any dim of r1/r2 may be 1). With D the last dim:
//! - half: x = [x1 | x2] split at D/2, rotate(x) = [−x2 | x1] (HF `rotate_half`);
//! - interleave: rotate(x)[2k] = −x[2k+1], rotate(x)[2k+1] = x[2k].
//!
//! The layout (BSND, BNSD, SBND) only shows in which dims of r1/r2 are 1; the math is the same.
//! r1/r2 are used at the precision they are given in. torch_npu casts r1/r2 to x's dtype before
//! the kernel (§2.1), so a caller modelling that with wider tables rounds them first.

use super::ReferenceError;
use crate::dtype::DType;
use crate::tensor::{c_strides, format_shape, round_to_dtype, HostTensor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RotaryMode {
    /// `rotary_mode='half'` (aclnn mode 0).
    Half,
    /// `rotary_mode='interleave'` (aclnn mode 1).
    Interleave,
}

/// Index within the last dim whose value, with the returned sign, is rotate(x)[j].
fn rotate_source(mode: RotaryMode, d: usize, j: usize) -> (usize, f64) {
    match mode {
        RotaryMode::Half if j < d / 2 => (j + d / 2, -1.0),
        RotaryMode::Half => (j - d / 2, 1.0),
        RotaryMode::Interleave if j % 2 == 0 => (j + 1, -1.0),
        RotaryMode::Interleave => (j - 1, 1.0),
    }
}

/// Strides that read `r` broadcast to `x_shape` (0 along dims where r has 1).
fn broadcast_strides(name: &str, r: &HostTensor, x_shape: &[usize]) -> Result<Vec<usize>, ReferenceError> {
    let ok = r.rank() == x_shape.len() && r.shape.iter().zip(x_shape).all(|(&rd, &xd)| rd == xd || rd == 1);
    if !ok {
        return Err(ReferenceError::new(
            "rotary_mul",
            format!(
                "{name} shape {} does not broadcast to x shape {} (each dim must equal x's or be 1)",
                format_shape(&r.shape),
                format_shape(x_shape)
            ),
        ));
    }
    let strides = c_strides(&r.shape);
    Ok(r.shape.iter().zip(strides).map(|(&dim, s)| if dim == 1 { 0 } else { s }).collect())
}

/// y = x·r1 + rotate(x)·r2, unrounded (two products and one sum in f64 from the rounded
/// inputs; the device computes the same in fp32 and rounds once).
pub fn rotary_mul(
    x: &HostTensor,
    r1: &HostTensor,
    r2: &HostTensor,
    mode: RotaryMode,
) -> Result<Vec<f64>, ReferenceError> {
    rotary_terms(x, r1, r2, mode, |p1, p2| p1 + p2)
}

/// HF transformers' `apply_rotary_pos_emb`, `q * cos + rotate_half(q) * sin` evaluated in x's
/// dtype, with every rounding it makes: each product, then the sum, rounded to x's dtype. torch
/// evaluates a 16-bit multiply or add in float32 and rounds that to the 16-bit dtype, so each
/// step is emulated as float32 RNE then the dtype's RNE (for float32 the second is a no-op; for
/// 16-bit the first is exact for normal products and harmless for sums, as 24 ≥ 2·11 + 2, but
/// is kept so subnormal and overflowing float32 intermediates round as torch's do). rotate_half's
/// negation is exact, so (−x2)·sin and x2·(−sin) are the same value. Returns values exact in x's
/// dtype.
pub fn rotary_mul_hf(
    x: &HostTensor,
    r1: &HostTensor,
    r2: &HostTensor,
    mode: RotaryMode,
) -> Result<Vec<f64>, ReferenceError> {
    let dtype = x.dtype;
    let step = move |v: f64| round_to_dtype(dtype, round_to_dtype(DType::Float32, v));
    rotary_terms(x, r1, r2, mode, move |p1, p2| step(step(p1) + step(p2)))
}

/// `combine(x·r1, rotate(x)·r2)` per element (both products exact in f64 for inputs of at most
/// 24 significant bits).
fn rotary_terms(
    x: &HostTensor,
    r1: &HostTensor,
    r2: &HostTensor,
    mode: RotaryMode,
    combine: impl Fn(f64, f64) -> f64,
) -> Result<Vec<f64>, ReferenceError> {
    if x.rank() != 4 {
        return Err(ReferenceError::new(
            "rotary_mul",
            format!("x must be 4-D, got shape {}", format_shape(&x.shape)),
        ));
    }
    let d = x.shape[3];
    if d % 2 != 0 {
        return Err(ReferenceError::new("rotary_mul", format!("the last dim of x must be even, got {d}")));
    }
    let s1 = broadcast_strides("r1", r1, &x.shape)?;
    let s2 = broadcast_strides("r2", r2, &x.shape)?;
    let xv = x.to_f64();
    let r1v = r1.to_f64();
    let r2v = r2.to_f64();
    let mut y = Vec::with_capacity(xv.len());
    let [n0, n1, n2, _] = [x.shape[0], x.shape[1], x.shape[2], d];
    for i0 in 0..n0 {
        for i1 in 0..n1 {
            for i2 in 0..n2 {
                let row = ((i0 * n1 + i1) * n2 + i2) * d;
                let base1 = i0 * s1[0] + i1 * s1[1] + i2 * s1[2];
                let base2 = i0 * s2[0] + i1 * s2[1] + i2 * s2[2];
                for j in 0..d {
                    let (src, sign) = rotate_source(mode, d, j);
                    let rot = sign * xv[row + src];
                    y.push(combine(xv[row + j] * r1v[base1 + j * s1[3]], rot * r2v[base2 + j * s2[3]]));
                }
            }
        }
    }
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], v: &[f64]) -> HostTensor {
        HostTensor::from_f64(DType::Float32, shape, v)
    }

    #[test]
    fn rotate_patterns() {
        let x = t(&[1, 1, 1, 4], &[1.0, 2.0, 3.0, 4.0]);
        let zero = t(&[1, 1, 1, 4], &[0.0; 4]);
        let one = t(&[1, 1, 1, 4], &[1.0; 4]);
        // r1 = 0, r2 = 1 isolates rotate(x).
        assert_eq!(rotary_mul(&x, &zero, &one, RotaryMode::Half).unwrap(), vec![-3.0, -4.0, 1.0, 2.0]);
        assert_eq!(rotary_mul(&x, &zero, &one, RotaryMode::Interleave).unwrap(), vec![-2.0, 1.0, -4.0, 3.0]);
        // r1 = 1, r2 = 0 is the identity.
        assert_eq!(rotary_mul(&x, &one, &zero, RotaryMode::Half).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn matches_the_neox_and_gptj_pair_formulas() {
        // vLLM's formulas (op-semantics §2.4), written out independently: with per-frequency
        // cos c_k and sin s_k, o1 = x1·c − x2·s, o2 = x2·c + x1·s.
        // Dyadic values, exact in f32, so the f64 formulas below see the same inputs.
        let (c, s) = ([0.625, -0.375], [0.75, 0.9375]);
        let x = [0.5, -1.25, 2.0, 3.5];
        // Neox/half: pairs (x[k], x[k + 2]); tables laid out cat(freqs, freqs).
        let cos_half = t(&[1, 1, 1, 4], &[c[0], c[1], c[0], c[1]]);
        let sin_half = t(&[1, 1, 1, 4], &[s[0], s[1], s[0], s[1]]);
        let y = rotary_mul(&t(&[1, 1, 1, 4], &x), &cos_half, &sin_half, RotaryMode::Half).unwrap();
        let mut want = [0.0; 4];
        for k in 0..2 {
            let (x1, x2) = (x[k], x[k + 2]);
            want[k] = x1 * c[k] - x2 * s[k];
            want[k + 2] = x2 * c[k] + x1 * s[k];
        }
        assert_eq!(y, want);
        // GPT-J/interleave: pairs (x[2k], x[2k+1]); tables repeat_interleave(freqs, 2).
        let cos_il = t(&[1, 1, 1, 4], &[c[0], c[0], c[1], c[1]]);
        let sin_il = t(&[1, 1, 1, 4], &[s[0], s[0], s[1], s[1]]);
        let y = rotary_mul(&t(&[1, 1, 1, 4], &x), &cos_il, &sin_il, RotaryMode::Interleave).unwrap();
        for k in 0..2 {
            let (x1, x2) = (x[2 * k], x[2 * k + 1]);
            want[2 * k] = x1 * c[k] - x2 * s[k];
            want[2 * k + 1] = x2 * c[k] + x1 * s[k];
        }
        assert_eq!(y, want);
    }

    #[test]
    fn broadcasts_over_batch_and_heads() {
        // BSND x (2, 3, 2, 4) with 1S1D tables (1, 3, 1, 4): every (b, n) at position s uses
        // row s of the tables. Compare against per-row calls with 1-row tables.
        let xs: Vec<f64> = (0..48).map(|i| f64::from(i) * 0.25 - 6.0).collect();
        let cs: Vec<f64> = (0..12).map(|i| (f64::from(i) * 0.3).cos()).collect();
        let ss: Vec<f64> = (0..12).map(|i| (f64::from(i) * 0.3).sin()).collect();
        let x = t(&[2, 3, 2, 4], &xs);
        let y = rotary_mul(&x, &t(&[1, 3, 1, 4], &cs), &t(&[1, 3, 1, 4], &ss), RotaryMode::Half).unwrap();
        for b in 0..2 {
            for s in 0..3 {
                for n in 0..2 {
                    let off = ((b * 3 + s) * 2 + n) * 4;
                    let row = t(&[1, 1, 1, 4], &xs[off..off + 4]);
                    let c = t(&[1, 1, 1, 4], &cs[s * 4..s * 4 + 4]);
                    let sn = t(&[1, 1, 1, 4], &ss[s * 4..s * 4 + 4]);
                    let want = rotary_mul(&row, &c, &sn, RotaryMode::Half).unwrap();
                    assert_eq!(&y[off..off + 4], &want[..], "b={b} s={s} n={n}");
                }
            }
        }
    }

    #[test]
    fn hf_rounds_each_product_and_the_sum() {
        // bfloat16 (8 significant bits), half mode, D = 4: rotate(x) = [-x2, -x3, x0, x1].
        // x = [1 + 2^-7, 0, 1, 0], cos = [1 + 2^-7, 1, 1, 1], sin = 1:
        // y0 = fl(fl((1 + 2^-7)^2) - 1) = fl(1 + 2^-6 + 2^-14) - 1 = 2^-6;
        // y2 = fl(1 + (1 + 2^-7)) = 2 + 2^-7, a tie between 2 and 2 + 2^-6: even, 2.
        let bf = |v: &[f64]| HostTensor::from_f64(DType::BFloat16, &[1, 1, 1, 4], v);
        let e = 2f64.powi(-7);
        let c = bf(&[1.0 + e, 1.0, 1.0, 1.0]);
        let s = bf(&[1.0, 1.0, 1.0, 1.0]);
        let hf = rotary_mul_hf(&bf(&[1.0 + e, 0.0, 1.0, 0.0]), &c, &s, RotaryMode::Half).unwrap();
        assert_eq!(hf, vec![2f64.powi(-6), 0.0, 2.0, 0.0]);
        // x0 = 1 + 3·2^-7: the product 1 + 2^-5 + 3·2^-14 rounds to 1 + 2^-5, so HF's y0 is
        // 2^-5, while the exact 2^-5 + 3·2^-14 rounded once is 2^-5 + 2^-12 (ulp 2^-12 there).
        let x = bf(&[1.0 + 3.0 * e, 0.0, 1.0, 0.0]);
        let hf = rotary_mul_hf(&x, &c, &s, RotaryMode::Half).unwrap();
        let once = rotary_mul(&x, &c, &s, RotaryMode::Half).unwrap();
        assert_eq!(hf[0], 2f64.powi(-5));
        assert_eq!(round_to_dtype(DType::BFloat16, once[0]), 2f64.powi(-5) + 2f64.powi(-12));
        // float32, D = 2: rotate(x) = [-x1, x0]. x = [1 + 2^-12, 1], cos = sin = [1 + 2^-12, 1]
        // and [1, 1]: the product 1 + 2^-11 + 2^-24 is a tie, RNE 1 + 2^-11, so y0 = 2^-11
        // where the exact value 2^-11 + 2^-24 is a float32.
        let f = |v: &[f64]| HostTensor::from_f64(DType::Float32, &[1, 1, 1, 2], v);
        let u = 2f64.powi(-12);
        let (x, c, s) = (f(&[1.0 + u, 1.0]), f(&[1.0 + u, 1.0]), f(&[1.0, 1.0]));
        assert_eq!(rotary_mul_hf(&x, &c, &s, RotaryMode::Half).unwrap()[0], 2f64.powi(-11));
        assert_eq!(rotary_mul(&x, &c, &s, RotaryMode::Half).unwrap()[0], 2f64.powi(-11) + 2f64.powi(-24));
    }

    #[test]
    fn rejects_bad_shapes() {
        let x = HostTensor::zeros(DType::Float16, &[1, 2, 1, 4]);
        let r = HostTensor::zeros(DType::Float16, &[1, 3, 1, 4]);
        let err = rotary_mul(&x, &r, &r, RotaryMode::Half).unwrap_err();
        assert!(err.to_string().contains("r1 shape (1, 3, 1, 4) does not broadcast"));
        let x = HostTensor::zeros(DType::Float16, &[1, 1, 1, 3]);
        let r = HostTensor::zeros(DType::Float16, &[1, 1, 1, 3]);
        assert!(rotary_mul(&x, &r, &r, RotaryMode::Half).is_err());
        let x = HostTensor::zeros(DType::Float16, &[2, 4]);
        assert!(rotary_mul(&x, &x, &x, RotaryMode::Half).is_err());
    }
}
