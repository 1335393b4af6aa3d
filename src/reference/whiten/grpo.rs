//! grpo_advantage in f64, written from verl's `compute_grpo_outcome_advantage`
//! (verl.trainer.ppo.core_algos, epsilon and norm_adv_by_std_in_grpo):
//!   s_i = Σ_t r[i, t]                      (every token, masked or not);
//!   per group g (the rows with one id): n = 1: mean 0, std 1; n ≥ 2: mean = Σ s / n,
//!     std = sqrt(Σ (s − mean)² / (n − 1))   (torch.std, unbiased);
//!   y_i = (s_i − mean) / (std + ε) when norm_by_std, else s_i − mean;
//!   advantages[i, t] = y_i · m[i, t].
//!
//! Alongside, a bound on |float32 evaluation − exact| per element for a kernel that sums a row
//! by tiles of 2^tile_depth elements (the tiles added element by element in order, then one
//! pairwise tree: at most k = tiles − 1 + tile_depth roundings on a chain), and a group's Σ s, then
//! Σ (s − mean)², by pairwise trees of depth `group_depth` over the batch (the count exact),
//! the mean and the variance M2 / (n − 1) by one division each, the std by a square root
//! (4u: 1 rounding plus the twin's perturbation up to 3 ulp), std + ε and the quotient rounded
//! once each; u = 2^-24, γ_k = k·u / (1 − k·u), A_i = Σ_t |r[i, t]|:
//!   E_s(i)  ≤ γ_k·A_i;
//!   E_mean  ≤ (Σ_g E_s(j) + γ_D·Σ_g |s_j|) / n + u·|mean|          (D = group_depth);
//!   e_i     ≤ E_s(i) + E_mean + u·|s_i − mean|   (the difference ŝ_i − m̂);
//!   E_M2    ≤ Σ_g (2|d_j|·e_j + e_j²) + (u + γ_D)·M2,  d_j = s_j − mean;
//!   E_var   ≤ E_M2 / (n − 1) + u·var;
//!   E_std   ≤ min(E_var / std, √E_var) + 4u·std   (|√a − √b| ≤ |a − b| / √b and ≤ √|a − b|);
//!   E_den   ≤ E_std + u·(std + ε);  the computed std + ε is at least
//!   D_lo = max(std + ε − E_den, ε·(1 − u)), so with y = d_i / D:
//!   |ŷ − y| ≤ e_i / D_lo + |d_i|·E_den / (D·D_lo) + u·(|y| + that)   (norm_by_std);
//!   |ŷ − y| ≤ e_i                                                      (without);
//! a singleton group: mean 0 exact (E_mean = 0, d_i = s_i), D = 1 + ε with E_den = u·D.
//! The mask (0/1) multiplies exactly: a masked element's bound is 0. All first order; the
//! result is multiplied by 1.0625 for the second-order terms. A group whose scores are equal
//! (std = 0) divides the rounding of ŝ − m̂ by ε alone: its bound is about γ_k·A/ε, which is
//! what the kernel's output may be (verl's float32 torch gives such values too).

use super::super::ReferenceError;
use std::collections::HashMap;

const U: f64 = 1.0 / 16_777_216.0; // 2^-24: float32's unit roundoff

/// What the error bound needs to know of the kernel's evaluation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpoPlan {
    /// log2 of the row-sum tile: the depth of each tile's pairwise tree.
    pub tile_depth: u32,
    /// Tiles per row (their sums added one after another).
    pub tiles: u64,
    /// log2 of the batch padded to a power of two: the depth of the group trees.
    pub group_depth: u32,
}

/// The advantages [B, T] and each element's error bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Advantages {
    pub values: Vec<f64>,
    pub bound: Vec<f64>,
}

fn gamma(k: f64) -> f64 {
    k * U / (1.0 - k * U)
}

/// `rewards` and `mask` row-major [ids.len(), t] (already rounded to the input dtypes), `ids`
/// one group id per row (any values: rows with equal ids form a group).
pub fn grpo_advantage(
    rewards: &[f64],
    mask: &[f64],
    ids: &[i64],
    t: usize,
    epsilon: f64,
    norm_by_std: bool,
    plan: GrpoPlan,
) -> Result<Advantages, ReferenceError> {
    let b = ids.len();
    if rewards.len() != b * t || mask.len() != b * t {
        return Err(ReferenceError::new(
            "grpo_advantage",
            format!(
                "token_level_rewards has {} elements and response_mask {}; index has {b} rows of T = {t}: {} each",
                rewards.len(),
                mask.len(),
                b * t
            ),
        ));
    }
    let row = |i: usize| &rewards[i * t..(i + 1) * t];
    let score: Vec<f64> = (0..b).map(|i| row(i).iter().sum()).collect();
    let k = f64::from(plan.tile_depth) + plan.tiles.saturating_sub(1) as f64 + 1.0;
    let e_s: Vec<f64> = (0..b).map(|i| gamma(k) * row(i).iter().map(|r| r.abs()).sum::<f64>()).collect();
    let mut groups: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, &g) in ids.iter().enumerate() {
        groups.entry(g).or_default().push(i);
    }
    let gd = gamma(f64::from(plan.group_depth));
    let mut y = vec![0.0; b];
    let mut ey = vec![0.0; b];
    for rows in groups.values() {
        let n = rows.len() as f64;
        if rows.len() == 1 {
            let i = rows[0];
            let den = 1.0 + epsilon;
            (y[i], ey[i]) = if norm_by_std {
                let v = score[i] / den;
                let e = e_s[i] / (den * (1.0 - U)) + score[i].abs() * U * den / (den * den * (1.0 - U));
                (v, e + U * (v.abs() + e))
            } else {
                (score[i], e_s[i])
            };
            continue;
        }
        let mean = rows.iter().map(|&j| score[j]).sum::<f64>() / n;
        let abs_sum: f64 = rows.iter().map(|&j| score[j].abs()).sum();
        let e_mean = (rows.iter().map(|&j| e_s[j]).sum::<f64>() + gd * abs_sum) / n + U * mean.abs();
        let d = |j: usize| score[j] - mean;
        let e = |j: usize| e_s[j] + e_mean + U * d(j).abs();
        let m2: f64 = rows.iter().map(|&j| d(j) * d(j)).sum();
        let e_m2: f64 =
            rows.iter().map(|&j| 2.0 * d(j).abs() * e(j) + e(j) * e(j)).sum::<f64>() + (U + gd) * m2;
        let var = m2 / (n - 1.0);
        let std = var.sqrt();
        let e_var = e_m2 / (n - 1.0) + U * var;
        let e_std = if std > 0.0 { (e_var / std).min(e_var.sqrt()) } else { e_var.sqrt() } + 4.0 * U * std;
        let den = std + epsilon;
        let e_den = e_std + U * den;
        let den_lo = (den - e_den).max(epsilon * (1.0 - U));
        for &i in rows {
            (y[i], ey[i]) = if norm_by_std {
                let v = d(i) / den;
                let err = e(i) / den_lo + d(i).abs() * e_den / (den * den_lo);
                (v, err + U * (v.abs() + err))
            } else {
                (d(i), e(i))
            };
        }
    }
    let mut values = Vec::with_capacity(b * t);
    let mut bound = Vec::with_capacity(b * t);
    for i in 0..b {
        for &m in &mask[i * t..(i + 1) * t] {
            values.push(y[i] * m);
            bound.push(ey[i] * m.abs() * 1.0625);
        }
    }
    Ok(Advantages { values, bound })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: GrpoPlan = GrpoPlan { tile_depth: 3, tiles: 1, group_depth: 3 };

    #[test]
    fn a_group_of_three_and_a_singleton_by_hand() {
        // Rows (T = 2): scores 1, 2, 6 in group 5 (mean 3, M2 = 4 + 1 + 9 = 14, std √7) and 4
        // alone in group 9 (mean 0, std 1). The second token of row 0 masked.
        let r = [0.5, 0.5, 2.0, 0.0, 1.0, 5.0, 4.0, 0.0];
        let m = [1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let ids = [5, 5, 5, 9];
        let eps = 1e-6;
        let a = grpo_advantage(&r, &m, &ids, 2, eps, true, PLAN).unwrap();
        let s7 = 7.0f64.sqrt();
        let want = [-2.0 / (s7 + eps), 0.0, -1.0 / (s7 + eps), -1.0 / (s7 + eps)];
        for (i, w) in want.iter().enumerate() {
            assert!((a.values[i] - w).abs() < 1e-15, "element {i}: {} vs {w}", a.values[i]);
        }
        assert!((a.values[4] - 3.0 / (s7 + eps)).abs() < 1e-15);
        assert!((a.values[6] - 4.0 / (1.0 + eps)).abs() < 1e-15);
        assert_eq!(a.bound[1], 0.0, "a masked element is exactly 0");
        let plain = grpo_advantage(&r, &m, &ids, 2, eps, false, PLAN).unwrap();
        assert_eq!(plain.values[..4], [-2.0, 0.0, -1.0, -1.0]);
        assert_eq!(plain.values[6], 4.0, "a singleton keeps its score");
    }

    #[test]
    fn equal_scores_give_zero_with_a_bound_over_epsilon() {
        let r = [3.0, 3.0, 3.0];
        let a = grpo_advantage(&r, &[1.0; 3], &[1, 1, 1], 1, 1e-6, true, PLAN).unwrap();
        assert!(a.values.iter().all(|v| *v == 0.0));
        // ŝ − m̂ may be off by about γ·3 = 2.4e-7 (+ the mean's), divided by ε = 1e-6: ~0.5.
        assert!(a.bound[0] > 0.1 && a.bound[0].is_finite(), "{}", a.bound[0]);
    }

    #[test]
    fn mismatched_lengths_are_refused() {
        assert!(grpo_advantage(&[1.0; 4], &[1.0; 4], &[0, 0, 1], 2, 1e-6, true, PLAN).is_err());
    }
}
