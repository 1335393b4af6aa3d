//! gae in f64, written from verl's `compute_gae_advantage_return` loop (research/rl-workloads.md
//! §3), never from the kernel: per row, for t = T−1 .. 0 with nextv = last = 0 beyond T,
//! delta = r_t + γ·nextv − V_t, a = delta + γλ·last, nextv = V_t·m_t + (1 − m_t)·nextv,
//! last = a·m_t + (1 − m_t)·last, advantages_t = last, returns_t = last + V_t.
//!
//! Alongside the values it carries a running error bound (the classic running error analysis of
//! a recurrence): for each output, a bound on |float32 evaluation − exact| for a kernel that
//! evaluates the same loop in float32 with γ and γλ rounded to float32, each operation rounded
//! once (relative error ≤ u = 2^-24) and masks exactly 0 or 1 (so the blends are exact and
//! nextv, a copy of an input, carries no error). Per step, with magnitudes of the exact values:
//!   E_delta ≤ u·(2|γ·nextv| + |r + γ·nextv| + |delta|)            (γ's rounding + 3 roundings)
//!   E_a     ≤ E_delta + γλ·E_last + u·(4|γλ·last| + |a|)   (fl(fl(γ)·fl(λ)): 3u, then 2 roundings)
//!   E_last  ← E_a where m = 1, carried where m = 0;  E_ret ≤ E_last + u·|returns|.
//! With γλ = 1 the bound is u·Σ|terms| of the row's suffix: it grows with T, as the error does.

use super::ReferenceError;

const U: f64 = 1.0 / 16_777_216.0; // 2^-24: float32's unit roundoff

/// The two outputs of a batch of rows and each element's running error bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Gae {
    pub advantages: Vec<f64>,
    pub returns: Vec<f64>,
    /// Bound on a float32 evaluation's absolute error of `advantages[i]` (and `returns[i]`).
    pub adv_bound: Vec<f64>,
    pub ret_bound: Vec<f64>,
}

/// `rewards`, `values`, `mask`: rows of `t` values each, row-major, already rounded to the
/// input dtypes. A mask value other than 0 or 1 is blended as verl does (the bound then assumes
/// exact blends, which it is not: the gates are for 0/1 masks).
pub fn gae(
    rewards: &[f64],
    values: &[f64],
    mask: &[f64],
    t: usize,
    gamma: f64,
    lam: f64,
) -> Result<Gae, ReferenceError> {
    const OP: &str = "gae";
    let n = rewards.len();
    if values.len() != n || mask.len() != n {
        return Err(ReferenceError::new(
            OP,
            format!(
                "token_level_rewards, values and response_mask must have one shape ({n}, {} and {} elements)",
                values.len(),
                mask.len()
            ),
        ));
    }
    if t == 0 && n != 0 || t != 0 && n % t != 0 {
        return Err(ReferenceError::new(OP, format!("{n} elements are not rows of T = {t}")));
    }
    let gl = gamma * lam;
    let mut out = Gae {
        advantages: vec![0.0; n],
        returns: vec![0.0; n],
        adv_bound: vec![0.0; n],
        ret_bound: vec![0.0; n],
    };
    for row in 0..n.checked_div(t).unwrap_or(0) {
        let (mut nextv, mut last, mut e_last) = (0.0f64, 0.0f64, 0.0f64);
        for i in (row * t..(row + 1) * t).rev() {
            let (r, v, m) = (rewards[i], values[i], mask[i]);
            let gnv = gamma * nextv;
            let delta = r + gnv - v;
            let e_delta = U * (2.0 * gnv.abs() + (r + gnv).abs() + delta.abs());
            let gll = gl * last;
            let a = delta + gll;
            let e_a = e_delta + gl.abs() * e_last + U * (4.0 * gll.abs() + a.abs());
            nextv = v * m + (1.0 - m) * nextv;
            last = a * m + (1.0 - m) * last;
            if m != 0.0 {
                e_last = e_a;
            }
            out.advantages[i] = last;
            out.returns[i] = last + v;
            out.adv_bound[i] = e_last;
            out.ret_bound[i] = e_last + U * (last + v).abs();
        }
    }
    Ok(out)
}

/// discounted_return (REINFORCE++'s returns, verl's `compute_reinforce_plus_plus_outcome_advantage`
/// before whitening) in f64 with its running error bound, per row for t = T−1 .. 0 with
/// running = 0 beyond T: running = r_t + γ·running, returns_t = running, then
/// running = running·m_t (a masked token ends the sum: an episode boundary). Bound of a float32
/// evaluation (γ rounded to float32, masks 0/1): E_t ≤ γ·m_{t+1}·E_{t+1} + u·(2|γ·running| + |returns_t|).
pub fn discounted_return(
    rewards: &[f64],
    mask: &[f64],
    t: usize,
    gamma: f64,
) -> Result<(Vec<f64>, Vec<f64>), ReferenceError> {
    const OP: &str = "discounted_return";
    let n = rewards.len();
    if mask.len() != n {
        return Err(ReferenceError::new(
            OP,
            format!(
                "token_level_rewards and response_mask must have one shape ({n} and {} elements)",
                mask.len()
            ),
        ));
    }
    if t == 0 && n != 0 || t != 0 && n % t != 0 {
        return Err(ReferenceError::new(OP, format!("{n} elements are not rows of T = {t}")));
    }
    let (mut returns, mut bound) = (vec![0.0; n], vec![0.0; n]);
    for row in 0..n.checked_div(t).unwrap_or(0) {
        let (mut running, mut e) = (0.0f64, 0.0f64);
        for i in (row * t..(row + 1) * t).rev() {
            let g = gamma * running;
            running = rewards[i] + g;
            e = gamma.abs() * e + U * (2.0 * g.abs() + running.abs());
            returns[i] = running;
            bound[i] = e;
            running *= mask[i];
            e *= mask[i].abs();
        }
    }
    Ok((returns, bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed from the loop: T = 3, γ = 0.5, λ = 0.5, mask [1, 0, 1].
    /// t=2: delta = 1 + 0 − 2 = −1, a = −1, nextv = 2, last = −1.
    /// t=1 (masked): carried, advantages = −1.
    /// t=0: delta = 4 + 0.5·2 − 1 = 4, a = 4 + 0.25·(−1) = 3.75.
    #[test]
    fn a_masked_token_carries_nextv_and_last() {
        let g = gae(&[4.0, 9.0, 1.0], &[1.0, 7.0, 2.0], &[1.0, 0.0, 1.0], 3, 0.5, 0.5).unwrap();
        assert_eq!(g.advantages, vec![3.75, -1.0, -1.0]);
        assert_eq!(g.returns, vec![4.75, 6.0, 1.0]);
    }

    /// γ = λ = 1 and r = 1, V = 0: the advantage is the count of tokens to the row's end, and the
    /// bound grows with it.
    #[test]
    fn with_unit_discount_the_advantage_sums_the_suffix() {
        let g = gae(&[1.0; 4], &[0.0; 4], &[1.0; 4], 4, 1.0, 1.0).unwrap();
        assert_eq!(g.advantages, vec![4.0, 3.0, 2.0, 1.0]);
        assert!(g.adv_bound[0] > g.adv_bound[3]);
    }

    /// γ = 0.5, rewards 1, mask [1, 0, 1, 1]: from the end 1, 1.5, then the masked token at
    /// t = 1 resets the sum before t = 0: returns = [1, 1.75, 1.5, 1].
    #[test]
    fn a_masked_token_resets_the_discounted_sum() {
        let (r, _) = discounted_return(&[1.0; 4], &[1.0, 0.0, 1.0, 1.0], 4, 0.5).unwrap();
        assert_eq!(r, vec![1.0, 1.75, 1.5, 1.0]);
    }

    #[test]
    fn mismatched_lengths_are_refused() {
        assert!(gae(&[1.0; 4], &[0.0; 3], &[1.0; 4], 4, 1.0, 1.0).is_err());
        assert!(gae(&[1.0; 4], &[0.0; 4], &[1.0; 4], 3, 1.0, 1.0).is_err());
    }
}
