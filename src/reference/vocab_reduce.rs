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
}
