//! logprob_entropy in f64, from the definition (research/rl-workloads.md §2): per row of
//! z = logits / temperature, lse = log Σ_v e^{z_v}, logprob = z[target] − lse and
//! entropy = −Σ_v p_v log p_v with p = e^{z − lse}. Written from the math, not from the kernel's
//! online (max, sum) recurrence.
//!
//! Conventions (the op's contract, the same in the spec's comment):
//! - a target equal to `ignore_index` gives logprob = entropy = 0 (lse as any row);
//! - a target outside [0, V) otherwise gives logprob NaN;
//! - −inf logits are masked vocabulary (p = 0); a row with a NaN or +inf logit gives NaN for
//!   all three (log_softmax's inf − inf), and a row of only −inf gives lse = −inf and NaN
//!   logprob and entropy (0/0).

use super::ReferenceError;

/// The three outputs of one batch, each one value per row.
#[derive(Debug, Clone, PartialEq)]
pub struct LogprobEntropy {
    pub logprob: Vec<f64>,
    pub entropy: Vec<f64>,
    pub lse: Vec<f64>,
}

/// `logits`: rows of `vocab` values (row-major, already rounded to the input dtype);
/// `target`: one index per row.
pub fn logprob_entropy(
    logits: &[f64],
    vocab: usize,
    target: &[i64],
    temperature: f64,
    ignore_index: i64,
) -> Result<LogprobEntropy, ReferenceError> {
    const OP: &str = "logprob_entropy";
    if vocab == 0 && !logits.is_empty() {
        return Err(ReferenceError::new(OP, "logits has a zero last dim but elements"));
    }
    let rows = logits.len().checked_div(vocab).unwrap_or(target.len());
    if vocab != 0 && logits.len() % vocab != 0 || rows != target.len() {
        return Err(ReferenceError::new(
            OP,
            format!(
                "logits holds {} values of rows of {vocab}; target has {} rows",
                logits.len(),
                target.len()
            ),
        ));
    }
    if !(temperature > 0.0 && temperature.is_finite()) {
        return Err(ReferenceError::new(
            OP,
            format!("temperature {temperature} is not a positive finite number"),
        ));
    }
    let mut out = LogprobEntropy { logprob: Vec::new(), entropy: Vec::new(), lse: Vec::new() };
    for (r, &t) in target.iter().enumerate() {
        let z: Vec<f64> = logits[r * vocab..(r + 1) * vocab].iter().map(|x| x / temperature).collect();
        let (lp, h, lse) = row(&z, t);
        let ignored = t == ignore_index;
        out.logprob.push(if ignored { 0.0 } else { lp });
        out.entropy.push(if ignored { 0.0 } else { h });
        out.lse.push(lse);
    }
    Ok(out)
}

/// (logprob, entropy, lse) of one row of z.
fn row(z: &[f64], target: i64) -> (f64, f64, f64) {
    if z.iter().any(|v| v.is_nan() || *v == f64::INFINITY) {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return (f64::NAN, f64::NAN, f64::NEG_INFINITY);
    }
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    let lse = m + s.ln();
    // H = −Σ p log p = Σ p·(lse − z); masked entries (p = 0, z = −inf) contribute 0.
    let h: f64 = z.iter().filter(|v| v.is_finite()).map(|v| (v - lse).exp() * (lse - v)).sum();
    let lp = usize::try_from(target).ok().and_then(|i| z.get(i)).map_or(f64::NAN, |zt| zt - lse);
    (lp, h, lse)
}

/// The per-row tensors the backward takes besides logits and target, one value per row:
/// the forward's saved lse and entropy, and the incoming gradients of logprob and entropy.
#[derive(Debug, Clone, Copy)]
pub struct GradRows<'a> {
    pub lse: &'a [f64],
    pub entropy: &'a [f64],
    pub dlogprob: &'a [f64],
    pub dentropy: &'a [f64],
}

/// dlogits of logprob_entropy (research/rl-workloads.md §3): with z = logits / T and
/// p_j = e^{z_j − lse} (the saved lse, as the kernel takes it), ∂logp/∂z_j = δ_jt − p_j and
/// ∂H/∂z_j = −p_j (log p_j + H), log p_j = z_j − lse, so
/// dlogits_j = (1/T)·[dlogp·(δ_jt − p_j) − dent·p_j·(z_j − lse + H)].
/// Conventions: an ignore_index row gives 0 everywhere; a target outside [0, V) adds no
/// one-hot term; a −inf logit (masked vocabulary) has p = 0 and p·log p = 0 (its limit), so
/// with a finite lse its entry is dlogp·δ_jt/T + 0·H (NaN only when H is); NaN in lse, H, the
/// gradients or the row's logits propagates.
pub fn logprob_entropy_grad(
    logits: &[f64],
    vocab: usize,
    target: &[i64],
    rows: GradRows<'_>,
    temperature: f64,
    ignore_index: i64,
) -> Result<Vec<f64>, ReferenceError> {
    const OP: &str = "logprob_entropy_grad";
    let n = target.len();
    let lens = [rows.lse.len(), rows.entropy.len(), rows.dlogprob.len(), rows.dentropy.len()];
    if logits.len() != n * vocab || lens.iter().any(|&l| l != n) {
        return Err(ReferenceError::new(
            OP,
            format!(
                "logits holds {} values (rows of {vocab}); target has {n} rows; lse, entropy, dlogprob, dentropy have {lens:?}",
                logits.len()
            ),
        ));
    }
    if !(temperature > 0.0 && temperature.is_finite()) {
        return Err(ReferenceError::new(
            OP,
            format!("temperature {temperature} is not a positive finite number"),
        ));
    }
    let mut out = vec![0.0; logits.len()];
    for (r, &t) in target.iter().enumerate() {
        if t == ignore_index {
            continue;
        }
        let (lse, h, dlp, dent) = (rows.lse[r], rows.entropy[r], rows.dlogprob[r], rows.dentropy[r]);
        for (j, d) in out[r * vocab..(r + 1) * vocab].iter_mut().enumerate() {
            let z = logits[r * vocab + j] / temperature;
            let onehot = if i64::try_from(j).is_ok_and(|j| j == t) { 1.0 } else { 0.0 };
            let (p, p_log_p_h) = if z == f64::NEG_INFINITY && lse.is_finite() {
                (0.0, 0.0 * h)
            } else {
                let y = z - lse;
                let p = y.exp();
                (p, p * (y + h))
            };
            *d = (dlp * (onehot - p) - dent * p_log_p_h) / temperature;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_row_has_entropy_log_v() {
        let r = logprob_entropy(&[2.0; 8], 8, &[3], 1.0, -100).unwrap();
        assert!((r.entropy[0] - 8f64.ln()).abs() < 1e-15);
        assert!((r.logprob[0] + 8f64.ln()).abs() < 1e-15);
        assert!((r.lse[0] - (2.0 + 8f64.ln())).abs() < 1e-15);
    }

    #[test]
    fn two_logits_by_hand() {
        // z = (0, ln 3)/1: p = (1/4, 3/4), lse = ln 4, H = −(¼ ln ¼ + ¾ ln ¾).
        let r = logprob_entropy(&[0.0, 3f64.ln() * 2.0], 2, &[1], 2.0, -100).unwrap();
        assert!((r.lse[0] - 4f64.ln()).abs() < 1e-15);
        assert!((r.logprob[0] - (0.75f64).ln()).abs() < 1e-15);
        let h = -(0.25 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
        assert!((r.entropy[0] - h).abs() < 1e-15);
    }

    #[test]
    fn masked_ignored_out_of_range_and_nan_rows() {
        let ninf = f64::NEG_INFINITY;
        let logits = [1.0, ninf, 1.0, 5.0, 5.0, 5.0, 0.0, f64::NAN, 0.0, 1.0, 2.0, 3.0];
        let r = logprob_entropy(&logits, 3, &[0, -100, 1, 3], 1.0, -100).unwrap();
        assert!((r.logprob[0] + 2f64.ln()).abs() < 1e-15 && (r.entropy[0] - 2f64.ln()).abs() < 1e-15);
        assert_eq!((r.logprob[1], r.entropy[1]), (0.0, 0.0));
        assert!(r.logprob[2].is_nan() && r.entropy[2].is_nan() && r.lse[2].is_nan());
        assert!(r.logprob[3].is_nan() && r.entropy[3].is_finite());
    }

    #[test]
    fn grad_of_two_logits_by_hand() {
        // z = (0, ln 3): p = (1/4, 3/4), lse = ln 4, H = −(¼ ln ¼ + ¾ ln ¾), target 1, T = 1.
        // ∂logp_1/∂z = (−¼, ¼); ∂H/∂z_j = −p_j (ln p_j + H).
        let h = -(0.25 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
        let (lse, ent) = ([4f64.ln()], [h]);
        let rows = GradRows { lse: &lse, entropy: &ent, dlogprob: &[2.0], dentropy: &[3.0] };
        let d = logprob_entropy_grad(&[0.0, 3f64.ln()], 2, &[1], rows, 1.0, -100).unwrap();
        let want0 = 2.0 * -0.25 + 3.0 * -0.25 * (0.25f64.ln() + h);
        let want1 = 2.0 * 0.25 + 3.0 * -0.75 * (0.75f64.ln() + h);
        assert!((d[0] - want0).abs() < 1e-15 && (d[1] - want1).abs() < 1e-15, "{d:?}");
        // The entries sum to 0 (Σ p = 1, Σ p (log p + H) = 0), and T scales z and the result.
        assert!((d[0] + d[1]).abs() < 1e-15);
        let (lse2, ent2) = ([4f64.ln()], [h]);
        let rows = GradRows { lse: &lse2, entropy: &ent2, dlogprob: &[2.0], dentropy: &[3.0] };
        let d2 = logprob_entropy_grad(&[0.0, 2.0 * 3f64.ln()], 2, &[1], rows, 2.0, -100).unwrap();
        assert!((d2[0] - want0 / 2.0).abs() < 1e-15 && (d2[1] - want1 / 2.0).abs() < 1e-15, "{d2:?}");
    }

    #[test]
    fn grad_ignored_masked_and_out_of_range_rows() {
        let ninf = f64::NEG_INFINITY;
        // Row 0 ignored (zeros even with NaN logits), row 1 masked entry 1 (target 1: p = 0 there,
        // only the one-hot term), row 2 target out of range (no one-hot: the row sums to 0).
        let logits = [f64::NAN, 1.0, 0.0, ninf, 0.0, 0.0];
        let l2 = 2f64.ln();
        let rows = GradRows {
            lse: &[0.0, 0.0, l2],
            entropy: &[0.0, 0.0, l2],
            dlogprob: &[5.0, 1.0, 1.0],
            dentropy: &[1.0, 1.0, 1.0],
        };
        let d = logprob_entropy_grad(&logits, 2, &[-100, 1, 7], rows, 1.0, -100).unwrap();
        assert_eq!(&d[..2], &[0.0, 0.0]);
        // Row 1: p = (1, 0), H = 0: entry 0 = −1·1 − 1·1·(0 + 0) = −1; entry 1 = 1·(1 − 0) = 1.
        assert_eq!(&d[2..4], &[-1.0, 1.0]);
        // Row 2: p = ½ each, log p + H = 0: −½ each.
        assert!((d[4] + 0.5).abs() < 1e-15 && (d[5] + 0.5).abs() < 1e-15, "{d:?}");
    }
}
