//! RMSNorm references (op-semantics.md §1): `rms_norm` (torch_npu.npu_rms_norm on A2/A3) and
//! `add_rms_norm` (torch_npu.npu_add_rms_norm); LayerNorm (`layer_norm`, torch's
//! `layer_norm` with the biased variance). A gamma offset (Gemma's `1 + gamma`) is added to
//! gamma in f64, where it is exact.
//!
//! gamma covers the trailing dims of x: n = gamma.numel(), rows = x.numel() / n. For each row
//! rstd = 1/√(Σx²/n + eps). rstd has x's rank with the normalised dims replaced by 1 (§1.2).
//! Non-finite inputs follow IEEE evaluation of the formula (an Inf in a row gives rstd = 0 and
//! NaN where x is Inf).

use super::ReferenceError;
use crate::tensor::{format_shape, round_to_dtype, HostTensor};

/// Outputs of [`rms_norm`], unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct RmsNormOutputs {
    /// x's shape; round once to x's dtype.
    pub y: Vec<f64>,
    /// One per row, shape `rstd_shape`; fp32 on the device.
    pub rstd: Vec<f64>,
    pub rstd_shape: Vec<usize>,
}

/// Outputs of [`add_rms_norm`].
#[derive(Debug, Clone, PartialEq)]
pub struct AddRmsNormOutputs {
    /// x1's shape; unrounded product of the rounded s·rstd and gamma: round once to x1's dtype.
    pub y: Vec<f64>,
    /// From the rounded sum; shape `rstd_shape`; fp32 on the device.
    pub rstd: Vec<f64>,
    pub rstd_shape: Vec<usize>,
    /// x1 + x2 already rounded to x1's dtype (rounding it again is a no-op).
    pub x_sum: Vec<f64>,
}

/// Checks that gamma is a trailing slice of x and eps is valid; returns (rows, n, rstd shape).
fn row_geometry(
    op: &'static str,
    x: &HostTensor,
    gamma: &HostTensor,
    eps: f64,
) -> Result<(usize, usize, Vec<usize>), ReferenceError> {
    let g = gamma.rank();
    if g == 0 || g > x.rank() || x.shape[x.rank() - g..] != gamma.shape[..] {
        return Err(ReferenceError::new(
            op,
            format!(
                "gamma shape {} must equal the trailing dims of x shape {}",
                format_shape(&gamma.shape),
                format_shape(&x.shape)
            ),
        ));
    }
    let n = gamma.numel();
    if n == 0 {
        return Err(ReferenceError::new(op, "gamma has no elements (n = 0)"));
    }
    if eps.is_nan() || eps < 0.0 {
        return Err(ReferenceError::new(op, format!("epsilon {eps} must be >= 0")));
    }
    let mut rstd_shape = x.shape.clone();
    let lead = x.rank() - g;
    rstd_shape[lead..].fill(1);
    Ok((x.numel() / n, n, rstd_shape))
}

/// rstd = 1/√(mean(row²) + eps), in f64.
fn row_rstd(row: &[f64], eps: f64) -> f64 {
    let sum_sq: f64 = row.iter().map(|v| v * v).sum();
    1.0 / (sum_sq / row.len() as f64 + eps).sqrt()
}

/// Where the row norms round y to a 16-bit dtype (the `rounding` attr of the row_norm family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// y = RNE(x·rstd·gamma): one rounding of the exact value (npu_rms_norm, op-semantics §1.3).
    Once,
    /// y = RNE(RNE(x·rstd)·gamma): the normalised value is rounded to the input dtype before the
    /// multiply by gamma, as HF Qwen2RMSNorm's `weight * hidden.to(input_dtype)` and CANN's
    /// AddRmsNorm. For float32 inputs the inner rounding is to float32.
    Hf,
}

/// The inner rounding of [`Rounding::Hf`] to the input dtype (for float32 the float32 rounding
/// of x·rstd that HF's float32 multiply makes too).
fn inner(dtype: crate::dtype::DType, rounding: Rounding, v: f64) -> f64 {
    if rounding == Rounding::Hf {
        round_to_dtype(dtype, v)
    } else {
        v
    }
}

/// npu_rms_norm (A2/A3): y = x·rstd·gamma with a single final rounding (op-semantics §1.3), so
/// nothing is rounded here.
pub fn rms_norm(x: &HostTensor, gamma: &HostTensor, eps: f64) -> Result<RmsNormOutputs, ReferenceError> {
    rms_norm_rounded(x, gamma, eps, Rounding::Once, 0.0)
}

/// [`rms_norm`] with the rounding points of `rounding`: y is the unrounded product of
/// (x·rstd, rounded to x's dtype for [`Rounding::Hf`]) and gamma; the final rounding is the
/// caller's.
pub fn rms_norm_rounded(
    x: &HostTensor,
    gamma: &HostTensor,
    eps: f64,
    rounding: Rounding,
    gamma_offset: f64,
) -> Result<RmsNormOutputs, ReferenceError> {
    let (rows, n, rstd_shape) = row_geometry("rms_norm", x, gamma, eps)?;
    let xv = x.to_f64();
    let gv = offset_gamma(gamma, gamma_offset);
    let mut y = Vec::with_capacity(xv.len());
    let mut rstd = Vec::with_capacity(rows);
    for row in xv.chunks_exact(n) {
        let r = row_rstd(row, eps);
        rstd.push(r);
        y.extend(row.iter().zip(&gv).map(|(xi, gi)| inner(x.dtype, rounding, xi * r) * gi));
    }
    Ok(RmsNormOutputs { y, rstd, rstd_shape })
}

/// npu_add_rms_norm: outputs (y, rstd, x_sum); x1, x2 share shape and dtype.
///
/// Cast order (op-semantics.md §1.4 and §1.5; the same as HF Qwen2RMSNorm/LlamaRMSNorm on a
/// decoder residual):
/// 1. s = RNE_dtype(x1 + x2): the sum is rounded to the input dtype and used as-is from then
///    on; it is also the x_sum output. (The bf16 NORMAL-mode kernel takes the variance from the
///    unrounded fp32 sum instead; §1.4 recommends the rounded sum and leaves that ≤ 1 ulp
///    difference to the tolerance.)
/// 2. rstd = 1/√(mean(s²) + eps), from the rounded s.
/// 3. y = RNE_dtype(s·rstd) · gamma: the normalised value is rounded to the input dtype before
///    the multiply by gamma (double rounding, like HF `weight * h.to(input_dtype)`); the final
///    rounding of y is the caller's.
///
/// x1 + x2 is exact or correctly rounded in f64 for 16/32-bit floats (53 ≥ 2·24 + 2 bits), so
/// step 1 rounds once, exactly like the device's add in the input dtype.
pub fn add_rms_norm(
    x1: &HostTensor,
    x2: &HostTensor,
    gamma: &HostTensor,
    eps: f64,
) -> Result<AddRmsNormOutputs, ReferenceError> {
    add_rms_norm_rounded(x1, x2, gamma, eps, Rounding::Hf, 0.0)
}

/// [`add_rms_norm`] with the rounding of step 3 chosen: [`Rounding::Hf`] as above,
/// [`Rounding::Once`] y = s·rstd·gamma unrounded (one final rounding, like [`rms_norm`] of the
/// rounded sum).
pub fn add_rms_norm_rounded(
    x1: &HostTensor,
    x2: &HostTensor,
    gamma: &HostTensor,
    eps: f64,
    rounding: Rounding,
    gamma_offset: f64,
) -> Result<AddRmsNormOutputs, ReferenceError> {
    if x1.shape != x2.shape || x1.dtype != x2.dtype {
        return Err(ReferenceError::new(
            "add_rms_norm",
            format!(
                "x1 ({} {}) and x2 ({} {}) must have the same shape and dtype",
                x1.dtype,
                format_shape(&x1.shape),
                x2.dtype,
                format_shape(&x2.shape)
            ),
        ));
    }
    let dtype = x1.dtype;
    let (rows, n, rstd_shape) = row_geometry("add_rms_norm", x1, gamma, eps)?;
    let x_sum: Vec<f64> =
        x1.to_f64().iter().zip(x2.to_f64()).map(|(a, b)| round_to_dtype(dtype, a + b)).collect();
    let gv = offset_gamma(gamma, gamma_offset);
    let mut y = Vec::with_capacity(x_sum.len());
    let mut rstd = Vec::with_capacity(rows);
    for row in x_sum.chunks_exact(n) {
        let r = row_rstd(row, eps);
        rstd.push(r);
        y.extend(row.iter().zip(&gv).map(|(si, gi)| inner(dtype, rounding, si * r) * gi));
    }
    Ok(AddRmsNormOutputs { y, rstd, rstd_shape, x_sum })
}

/// gamma's values plus the offset, in f64 (exact for 16-bit and float32 gamma and the offsets
/// specs use, such as 1).
fn offset_gamma(gamma: &HostTensor, offset: f64) -> Vec<f64> {
    gamma.to_f64().iter().map(|g| g + offset).collect()
}

/// Outputs of [`layer_norm`], unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNormOutputs {
    /// x's shape; round once to x's dtype.
    pub y: Vec<f64>,
    /// One per row (float32 on the device), shape `stat_shape`.
    pub mean: Vec<f64>,
    /// One per row, 1/√(var + eps) with the biased variance; shape `stat_shape`.
    pub rstd: Vec<f64>,
    /// x's shape with the normalised dims set to 1 (as rms_norm's rstd).
    pub stat_shape: Vec<usize>,
}

/// torch.nn.functional.layer_norm over the dims gamma covers: per row of n elements,
/// mean = Σx/n, var = Σ(x − mean)²/n (biased, as torch), rstd = 1/√(var + eps),
/// y = (x − mean)·rstd·(gamma + gamma_offset) + beta (beta absent: 0). Two passes in f64, so a
/// row with a large mean (1000 ± 1) keeps its variance. y is rounded once by the caller (torch
/// computes 16-bit layer_norm in float32 and rounds y once).
pub fn layer_norm(
    x: &HostTensor,
    gamma: &HostTensor,
    beta: Option<&HostTensor>,
    eps: f64,
    gamma_offset: f64,
) -> Result<LayerNormOutputs, ReferenceError> {
    let (rows, n, stat_shape) = row_geometry("layer_norm", x, gamma, eps)?;
    if let Some(b) = beta {
        if b.shape != gamma.shape {
            return Err(ReferenceError::new(
                "layer_norm",
                format!(
                    "beta shape {} must equal gamma's {}",
                    format_shape(&b.shape),
                    format_shape(&gamma.shape)
                ),
            ));
        }
    }
    let xv = x.to_f64();
    let gv = offset_gamma(gamma, gamma_offset);
    let bv = beta.map(|b| b.to_f64()).unwrap_or_else(|| vec![0.0; n]);
    let mut y = Vec::with_capacity(xv.len());
    let (mut mean, mut rstd) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for row in xv.chunks_exact(n) {
        let m = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n as f64;
        let r = 1.0 / (var + eps).sqrt();
        mean.push(m);
        rstd.push(r);
        y.extend(row.iter().zip(&gv).zip(&bv).map(|((xi, gi), bi)| (xi - m) * r * gi + bi));
    }
    Ok(LayerNormOutputs { y, mean, rstd, stat_shape })
}

/// The number of row groups whose dgamma partials the grad kernels sum (in their workspace)
/// before the final cross-core sum: a fixed count, not the core count, so dgamma is the same
/// bits on every core count. Group `g` holds rows [start_g, start_g + len_g) with the balanced split
/// len_g = rows / G + (g < rows % G) (empty groups are zero).
pub const PARTIAL_GROUPS: usize = 48;

/// The rows of group `g` of `rows` split into [`PARTIAL_GROUPS`] balanced groups.
pub fn partial_group(rows: usize, g: usize) -> std::ops::Range<usize> {
    let (q, r) = (rows / PARTIAL_GROUPS, rows % PARTIAL_GROUPS);
    let start = g * q + g.min(r);
    start..start + q + usize::from(g < r)
}

/// Outputs of [`rms_norm_grad`], unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct RmsNormGradOutputs {
    /// x's shape: ∂L/∂x (plus the incoming dx_sum for add_rms_norm_grad); round once.
    pub dx: Vec<f64>,
    /// gamma's shape: Σ over all rows of dy·x·rstd; round once.
    pub dgamma: Vec<f64>,
}

/// The backward of `y = x·rstd·gamma` with rstd = 1/√(mean(x²) + eps) per row of n = gamma's
/// numel elements (the forward of [`rms_norm`]), taking rstd as an input (the forward's output)
/// rather than recomputing it.
///
/// Derivation: y_j = x_j·r·γ_j with r = (Σx²/n + eps)^(-1/2), so ∂r/∂x_i = −r³·x_i/n. With
/// g_j = dy_j·γ_j, dx_i = Σ_j g_j·∂y_j/∂x_i = g_i·r + Σ_j g_j·x_j·(−r³·x_i/n)
/// = r·(g_i − x_i·r²·mean(g·x)), and dγ_j = Σ_rows dy_j·x_j·r.
///
/// `dx_sum` (add_rms_norm_grad) is the gradient that arrives at the forward's x_sum output
/// directly; it adds to dx before the one rounding. The rounding of the forward's s·rstd to 16
/// bits (add_rms_norm) has derivative 1 almost everywhere, so the same formula applies.
pub fn rms_norm_grad(
    dy: &HostTensor,
    x: &HostTensor,
    rstd: &HostTensor,
    gamma: &HostTensor,
    dx_sum: Option<&HostTensor>,
) -> Result<RmsNormGradOutputs, ReferenceError> {
    rms_norm_grad_offset(dy, x, rstd, gamma, dx_sum, 0.0)
}

/// [`rms_norm_grad`] of the forward y = x·rstd·(γ + offset) (Gemma's 1 + γ): the derivation
/// above with γ_j replaced by γ_j + offset in g; dγ_j = Σ_rows dy_j·x_j·r does not involve γ.
pub fn rms_norm_grad_offset(
    dy: &HostTensor,
    x: &HostTensor,
    rstd: &HostTensor,
    gamma: &HostTensor,
    dx_sum: Option<&HostTensor>,
    offset: f64,
) -> Result<RmsNormGradOutputs, ReferenceError> {
    let op = if dx_sum.is_some() { "add_rms_norm_grad" } else { "rms_norm_grad" };
    let (rows, n, rstd_shape) = row_geometry(op, x, gamma, 0.0)?;
    let mut same = vec![("dy", dy)];
    same.extend(dx_sum.map(|t| ("dx_sum", t)));
    for (name, t) in same {
        if t.shape != x.shape {
            return Err(ReferenceError::new(
                op,
                format!("{name} shape {} must equal x's {}", format_shape(&t.shape), format_shape(&x.shape)),
            ));
        }
    }
    if rstd.shape != rstd_shape {
        return Err(ReferenceError::new(
            op,
            format!("rstd shape {} must be {}", format_shape(&rstd.shape), format_shape(&rstd_shape)),
        ));
    }
    let (dyv, xv, rv) = (dy.to_f64(), x.to_f64(), rstd.to_f64());
    let gv: Vec<f64> = gamma.to_f64().iter().map(|g| g + offset).collect();
    let extra = dx_sum.map(|t| t.to_f64());
    let mut dx = Vec::with_capacity(xv.len());
    let mut dgamma = vec![0.0; n];
    for (row, &r) in rv.iter().enumerate().take(rows) {
        let at = row * n;
        let (dyr, xr) = (&dyv[at..at + n], &xv[at..at + n]);
        let mean_gx: f64 = (0..n).map(|j| dyr[j] * gv[j] * xr[j]).sum::<f64>() / n as f64;
        for j in 0..n {
            let mut d = r * (dyr[j] * gv[j] - xr[j] * r * r * mean_gx);
            if let Some(e) = &extra {
                d += e[at + j];
            }
            dx.push(d);
            dgamma[j] += dyr[j] * xr[j] * r;
        }
    }
    Ok(RmsNormGradOutputs { dx, dgamma })
}

/// Outputs of [`layer_norm_grad`], unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNormGradOutputs {
    /// x's shape: ∂L/∂x; round once to x's dtype.
    pub dx: Vec<f64>,
    /// gamma's shape: Σ over all rows of dy·x̂; round once.
    pub dgamma: Vec<f64>,
    /// gamma's shape: Σ over all rows of dy; round once.
    pub dbeta: Vec<f64>,
}

/// The backward of LayerNorm y = x̂·(γ + offset) + β, x̂ = (x − μ)·r, per row of n = gamma's
/// numel elements, with μ = mean(x) and r = 1/√(mean((x − μ)²) + eps), taking the forward's μ
/// and r (its float32 outputs) as inputs rather than recomputing them.
///
/// Derivation: with u = x − μ, ∂μ/∂x_i = 1/n and ∂v/∂x_i = 2·u_i/n (the −2/n·Σu term vanishes:
/// Σu = 0), so ∂r/∂x_i = −r³·u_i/n and ∂x̂_j/∂x_i = r·(δ_ij − 1/n) − r³·u_j·u_i/n. With
/// g_j = dy_j·(γ_j + offset), dx_i = Σ_j g_j·∂x̂_j/∂x_i = r·(g_i − mean(g)) − r³·u_i·mean(g·u)
/// = r·(g_i − mean(g) − x̂_i·mean(g·x̂)); dγ_j = Σ_rows dy_j·x̂_j and dβ_j = Σ_rows dy_j.
/// The x̂ here is formed from the given μ and r, as the kernel sees them.
pub fn layer_norm_grad(
    dy: &HostTensor,
    x: &HostTensor,
    mean: &HostTensor,
    rstd: &HostTensor,
    gamma: &HostTensor,
    offset: f64,
) -> Result<LayerNormGradOutputs, ReferenceError> {
    let op = "layer_norm_grad";
    let (rows, n, stat_shape) = row_geometry(op, x, gamma, 0.0)?;
    if dy.shape != x.shape {
        return Err(ReferenceError::new(
            op,
            format!("dy shape {} must equal x's {}", format_shape(&dy.shape), format_shape(&x.shape)),
        ));
    }
    for (name, t) in [("mean", mean), ("rstd", rstd)] {
        if t.shape != stat_shape {
            return Err(ReferenceError::new(
                op,
                format!("{name} shape {} must be {}", format_shape(&t.shape), format_shape(&stat_shape)),
            ));
        }
    }
    let (dyv, xv, mv, rv) = (dy.to_f64(), x.to_f64(), mean.to_f64(), rstd.to_f64());
    let gv: Vec<f64> = gamma.to_f64().iter().map(|g| g + offset).collect();
    let mut dx = Vec::with_capacity(xv.len());
    let (mut dgamma, mut dbeta) = (vec![0.0; n], vec![0.0; n]);
    for row in 0..rows {
        let (at, m, r) = (row * n, mv[row], rv[row]);
        let (dyr, xr) = (&dyv[at..at + n], &xv[at..at + n]);
        let xhat: Vec<f64> = xr.iter().map(|v| (v - m) * r).collect();
        let g: Vec<f64> = (0..n).map(|j| dyr[j] * gv[j]).collect();
        let mean_g = g.iter().sum::<f64>() / n as f64;
        let mean_gx = (0..n).map(|j| g[j] * xhat[j]).sum::<f64>() / n as f64;
        for j in 0..n {
            dx.push(r * (g[j] - mean_g - xhat[j] * mean_gx));
            dgamma[j] += dyr[j] * xhat[j];
            dbeta[j] += dyr[j];
        }
    }
    Ok(LayerNormGradOutputs { dx, dgamma, dbeta })
}

/// The statistics LayerNorm's forward saves for its backward, per row, unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNormStats {
    pub mean: Vec<f64>,
    pub rstd: Vec<f64>,
    /// x's rank with gamma's dims 1 (as [`rms_norm`]'s rstd).
    pub shape: Vec<usize>,
}

/// mean = Σx/n and rstd = 1/√(Σ(x − mean)²/n + eps) per row (biased variance, as torch's
/// layer_norm). For making the backward's inputs.
pub fn layer_norm_stats(
    x: &HostTensor,
    gamma: &HostTensor,
    eps: f64,
) -> Result<LayerNormStats, ReferenceError> {
    let (_, n, shape) = row_geometry("layer_norm_stats", x, gamma, eps)?;
    let (mut mean, mut rstd) = (Vec::new(), Vec::new());
    for row in x.to_f64().chunks_exact(n) {
        let m = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n as f64;
        mean.push(m);
        rstd.push(1.0 / (var + eps).sqrt());
    }
    Ok(LayerNormStats { mean, rstd, shape })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 4.0 * f64::EPSILON * b.abs()
    }

    #[test]
    fn rms_norm_hand_worked_row() {
        // x = [3, 4], gamma = [1, 2], eps = 0: mean(x²) = 12.5, √12.5 = 3.5355339059327378
        // (= 5/√2), rstd = √2/5 = 0.28284271247461906, y = [3·rstd, 8·rstd]
        // = [0.8485281374238571, 2.2627416997969525] (worked by hand, digits from Python floats).
        let x = HostTensor::from_f64(DType::Float32, &[1, 2], &[3.0, 4.0]);
        let g = HostTensor::from_f64(DType::Float32, &[2], &[1.0, 2.0]);
        let out = rms_norm(&x, &g, 0.0).unwrap();
        assert!(close(out.rstd[0], 0.28284271247461906));
        assert!(close(out.y[0], 0.8485281374238571));
        assert!(close(out.y[1], 2.2627416997969525));
        assert_eq!(out.rstd_shape, vec![1, 1]);
    }

    #[test]
    fn layer_norm_hand_worked_row() {
        // x = [1, 2, 3, 6]: mean 3, deviations [-2, -1, 0, 3], var = (4 + 1 + 0 + 9)/4 = 3.5
        // (biased), eps = 0: rstd = 1/√3.5 = 0.5345224838248488; gamma = [1, 1, 2, 1] with
        // offset 1 → [2, 2, 3, 2]; beta = [0, 0.5, 0, -1]:
        // y = [-4·r, -2·r + 0.5, 0, 6·r − 1].
        let x = HostTensor::from_f64(DType::Float32, &[1, 4], &[1.0, 2.0, 3.0, 6.0]);
        let g = HostTensor::from_f64(DType::Float32, &[4], &[1.0, 1.0, 2.0, 1.0]);
        let b = HostTensor::from_f64(DType::Float32, &[4], &[0.0, 0.5, 0.0, -1.0]);
        let out = layer_norm(&x, &g, Some(&b), 0.0, 1.0).unwrap();
        let r = 0.5345224838248488;
        assert_eq!(out.mean, vec![3.0]);
        assert!(close(out.rstd[0], r));
        assert!(close(out.y[0], -4.0 * r));
        assert!(close(out.y[1], -2.0 * r + 0.5));
        assert_eq!(out.y[2], 0.0);
        assert!(close(out.y[3], 6.0 * r - 1.0));
        assert_eq!(out.stat_shape, vec![1, 1]);
    }

    #[test]
    fn layer_norm_keeps_the_variance_of_a_large_mean_row() {
        // 1000 + [-1, 1, -1, 1]: mean 1000, var 1 exactly; E[x²] − E[x]² in float32 would be
        // 1000001 − 1000000 computed at a float32 ulp of 0.0625 near 10^6.
        let x = HostTensor::from_f64(DType::Float32, &[4], &[999.0, 1001.0, 999.0, 1001.0]);
        let g = HostTensor::from_f64(DType::Float32, &[4], &[1.0; 4]);
        let out = layer_norm(&x, &g, None, 0.0, 0.0).unwrap();
        assert_eq!(out.mean, vec![1000.0]);
        assert_eq!(out.rstd, vec![1.0]);
        assert_eq!(out.y, vec![-1.0, 1.0, -1.0, 1.0]);
    }

    #[test]
    fn rstd_shape_keeps_rank() {
        let x = HostTensor::zeros(DType::Float16, &[2, 3, 4, 8]);
        let g = HostTensor::from_f64(DType::Float16, &[8], &[1.0; 8]);
        let out = rms_norm(&x, &g, 1e-6).unwrap();
        assert_eq!(out.rstd_shape, vec![2, 3, 4, 1]);
        assert_eq!(out.rstd.len(), 24);
        // All-zero rows: rstd = 1/√eps = 1000 (to f64 accuracy), y = 0.
        assert!(close(out.rstd[0], 1000.0));
        assert!(out.y.iter().all(|&v| v == 0.0));

        let g = HostTensor::from_f64(DType::Float32, &[4, 8], &[1.0; 32]);
        let out = rms_norm(&x, &g, 1e-6).unwrap();
        assert_eq!(out.rstd_shape, vec![2, 3, 1, 1]);
        assert_eq!(out.rstd.len(), 6);
    }

    #[test]
    fn multi_dim_gamma_normalises_the_trailing_block() {
        // x (2, 2, 2), gamma (2, 2): two rows of 4. Row 0 = [1, 1, 1, 1] → rstd 1;
        // row 1 = [2, 2, 2, 2] → rstd 1/2. gamma = [1, 2, 3, 4].
        let x = HostTensor::from_f64(DType::BFloat16, &[2, 2, 2], &[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]);
        let g = HostTensor::from_f64(DType::BFloat16, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let out = rms_norm(&x, &g, 0.0).unwrap();
        assert_eq!(out.rstd, vec![1.0, 0.5]);
        assert_eq!(out.y, vec![1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(out.rstd_shape, vec![2, 1, 1]);
    }

    #[test]
    fn bad_shapes_and_eps_are_errors() {
        let x = HostTensor::zeros(DType::Float16, &[2, 4]);
        let g = HostTensor::zeros(DType::Float16, &[3]);
        let err = rms_norm(&x, &g, 1e-6).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rms_norm reference: gamma shape (3,) must equal the trailing dims of x shape (2, 4)"
        );
        let g = HostTensor::zeros(DType::Float16, &[4]);
        assert!(rms_norm(&x, &g, -1.0).is_err());
        let x2 = HostTensor::zeros(DType::Float32, &[2, 4]);
        assert!(add_rms_norm(&x, &x2, &g, 1e-6).is_err());
    }

    #[test]
    fn add_rms_norm_rounds_the_sum_then_the_normalised_value() {
        // f16: 1 + 2^-11 is a tie and rounds to 1.0; 1 + 3·2^-11 rounds to 1 + 2^-9.
        let x1 = HostTensor::from_f64(DType::Float16, &[2, 1], &[1.0, 1.0]);
        let x2 = HostTensor::from_f64(DType::Float16, &[2, 1], &[2f64.powi(-11), 3.0 * 2f64.powi(-11)]);
        let g = HostTensor::from_f64(DType::Float16, &[1], &[3.0]);
        let out = add_rms_norm(&x1, &x2, &g, 1e-6).unwrap();
        assert_eq!(out.x_sum, vec![1.0, 1.0 + 2f64.powi(-9)]);
        // n = 1: s·rstd = s/√(s² + 1e-6) ≈ 1 − 5e-7, which rounds to 1.0 in f16 (the ulp below
        // 1 is 2^-11), so y = 1.0·gamma = 3 exactly, where npu_rms_norm's single rounding keeps
        // 3·(1 − 5e-7).
        assert_eq!(out.y, vec![3.0, 3.0]);
        assert_eq!(out.rstd_shape, vec![2, 1]);
        // rstd from the rounded sum: 1/√(1 + 1e-6).
        assert!(close(out.rstd[0], 1.0 / (1.0f64 + 1e-6).sqrt()));
        let single = rms_norm(&HostTensor::from_f64(DType::Float16, &[1], &[1.0]), &g, 1e-6).unwrap();
        assert!(single.y[0] < 3.0 && single.y[0] > 3.0 - 1e-5);
    }

    #[test]
    fn add_rms_norm_bf16_sum_rounding() {
        // bf16 has 8 significant bits: 1 + 2^-8 ties to 1.0; 1 + 3·2^-8 ties to 1 + 2^-6.
        let x1 = HostTensor::from_f64(DType::BFloat16, &[2], &[1.0, 1.0]);
        let x2 = HostTensor::from_f64(DType::BFloat16, &[2], &[2f64.powi(-8), 3.0 * 2f64.powi(-8)]);
        let g = HostTensor::from_f64(DType::BFloat16, &[2], &[1.0, 1.0]);
        let out = add_rms_norm(&x1, &x2, &g, 0.0).unwrap();
        assert_eq!(out.x_sum, vec![1.0, 1.015625]);
    }

    #[test]
    fn add_rms_norm_fp32_matches_rms_norm_of_the_sum_up_to_the_inner_rounding() {
        let a = [0.25, -1.5, 3.0, 7.75];
        let b = [1.0, 2.0, -0.5, 0.125];
        let x1 = HostTensor::from_f64(DType::Float32, &[4], &a);
        let x2 = HostTensor::from_f64(DType::Float32, &[4], &b);
        let g = HostTensor::from_f64(DType::Float32, &[4], &[0.5, 1.0, 1.5, 2.0]);
        let fused = add_rms_norm(&x1, &x2, &g, 1e-5).unwrap();
        let sum: Vec<f64> = a.iter().zip(b).map(|(p, q)| p + q).collect();
        let plain = rms_norm(&HostTensor::from_f64(DType::Float32, &[4], &sum), &g, 1e-5).unwrap();
        assert_eq!(fused.x_sum, sum);
        assert_eq!(fused.rstd, plain.rstd);
        for (f, p) in fused.y.iter().zip(&plain.y) {
            // Only the f32 rounding of s·rstd separates them.
            assert!((f - p).abs() <= p.abs() * 2f64.powi(-23), "{f} vs {p}");
        }
    }
}
