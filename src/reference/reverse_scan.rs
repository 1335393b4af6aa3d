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

/// The carried state of the gae loop (exact, in f64) and the running error bound of `last`
/// (nextv, a copy of an input or 0, carries none).
#[derive(Debug, Clone, Copy, Default)]
struct GaeState {
    nextv: f64,
    last: f64,
    e_last: f64,
}

impl GaeState {
    /// One step t of the loop (module comment), `gl` = γλ.
    fn step(&mut self, r: f64, v: f64, m: f64, gamma: f64, gl: f64) {
        let gnv = gamma * self.nextv;
        let delta = r + gnv - v;
        let e_delta = U * (2.0 * gnv.abs() + (r + gnv).abs() + delta.abs());
        let gll = gl * self.last;
        let a = delta + gll;
        let e_a = e_delta + gl.abs() * self.e_last + U * (4.0 * gll.abs() + a.abs());
        self.nextv = v * m + (1.0 - m) * self.nextv;
        self.last = a * m + (1.0 - m) * self.last;
        if m != 0.0 {
            self.e_last = e_a;
        }
    }
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
        let mut st = GaeState::default();
        for i in (row * t..(row + 1) * t).rev() {
            st.step(rewards[i], values[i], mask[i], gamma, gl);
            out.advantages[i] = st.last;
            out.returns[i] = st.last + values[i];
            out.adv_bound[i] = st.e_last;
            out.ret_bound[i] = st.e_last + U * (st.last + values[i]).abs();
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
        let mut st = ReturnState::default();
        for i in (row * t..(row + 1) * t).rev() {
            let (ret, e) = st.step(rewards[i], mask[i], gamma);
            returns[i] = ret;
            bound[i] = e;
        }
    }
    Ok((returns, bound))
}

/// The carried sum of the discounted_return loop (after the mask) and its running error bound.
#[derive(Debug, Clone, Copy, Default)]
struct ReturnState {
    running: f64,
    e: f64,
}

impl ReturnState {
    /// One step t: returns_t and its bound, then the carry for t − 1.
    fn step(&mut self, r: f64, m: f64, gamma: f64) -> (f64, f64) {
        let g = gamma * self.running;
        let running = r + g;
        let e = gamma.abs() * self.e + U * (2.0 * g.abs() + running.abs());
        self.running = running * m;
        self.e = e * m.abs();
        (running, e)
    }
}

// ---- the time split's evaluation order ---------------------------------------------------
//
// The kernel's time split (templates/kernel/reverse_scan.cpp.j2) evaluates each row in segments
// [b, e) of `segment` steps (the last shorter): (a) per segment, the loop from a zero carry-in
// with the carry-in's coefficients by repeated multiplication; (b) the carry into segment s
// joined from zero through the summaries of the segments after it, last first; (c) the loop
// over the segment again from that carry. In exact arithmetic it is the sequential loop. Its
// float32 error, first order in u, by the same running analysis:
// - phase (c) is the sequential step from a carry with error E_in: the same bound recurrence
//   started from E_in (`GaeState::step`);
// - the join of segment s (gae: last_out = (L0 + A·nextv_in) + B·last_in, nextv exact):
//   E_out ≤ E0 + c·(|A·nextv_in| + |B·last_in|) + |B|·E_in
//           + u·(|A·nextv_in| + |B·last_in| + |L0 + A·nextv_in| + |last_out|)
//   with E0 the zero-carry loop's own running bound at the segment's first step and c = u·(4k + 1)
//   the relative error of the coefficients, products of k factors (k: the segment's unmasked
//   steps; each factor fl(γλ), 3u, times one rounding; A also γ's rounding). discounted_return:
//   running_out = R0 + P·running_in, P a product of k factors fl(γ)·m (2u each):
//   E_out ≤ E0 + u·(2k + 1)·|P·running_in| + |P|·E_in + u·(|P·running_in| + |running_out|).
// The join adds a few roundings of the carry's magnitude per segment boundary, and the zero-
// carry loop's E0 is over magnitudes that differ from the sequential ones by the carry's
// contribution: so the bound grows with the carry's magnitude and, when γλ = 1, with T.

/// The exact states of one row's loop of `t` steps (`step` takes the state through step i):
/// [i], the state after step i (the carry into step i − 1); [t], zero (beyond T).
fn carries<S: Copy + Default>(t: usize, mut step: impl FnMut(&mut S, usize)) -> Vec<S> {
    let mut st = S::default();
    let mut carries = vec![st; t + 1];
    for i in (0..t).rev() {
        step(&mut st, i);
        carries[i] = st;
    }
    carries
}

/// [`gae`] with the running error bounds of advantages and returns for the time split with
/// segments of `segment` steps (see above) in place of the sequential loop's (kept when
/// `segment` ≥ T: no split).
pub fn gae_split(
    rewards: &[f64],
    values: &[f64],
    mask: &[f64],
    t: usize,
    gamma: f64,
    lam: f64,
    segment: usize,
) -> Result<Gae, ReferenceError> {
    let mut g = gae(rewards, values, mask, t, gamma, lam)?;
    let gl = gamma * lam;
    if t == 0 || segment == 0 || segment >= t {
        return Ok(g);
    }
    let (adv, ret) = (&mut g.adv_bound, &mut g.ret_bound);
    for row in 0..rewards.len() / t {
        let at = row * t;
        let (r, v, m) = (&rewards[at..at + t], &values[at..at + t], &mask[at..at + t]);
        // carries[i]: the exact state after step i (the carry into step i − 1); carries[t]: 0.
        let carries = carries(t, |st: &mut GaeState, i| st.step(r[i], v[i], m[i], gamma, gl));
        let mut e_in = 0.0;
        let mut end = t;
        while end > 0 {
            let begin = (end - 1) / segment * segment;
            let carry = carries[end];
            // (c) the segment from the computed carry.
            let mut st = GaeState { e_last: e_in, ..carry };
            for i in (begin..end).rev() {
                st.step(r[i], v[i], m[i], gamma, gl);
                adv[at + i] = st.e_last;
                ret[at + i] = st.e_last + U * (st.last + v[i]).abs();
            }
            // (a) and the join: the carry into the segment before.
            let mut zero = GaeState::default();
            let mut k = 0u32;
            for i in (begin..end).rev() {
                zero.step(r[i], v[i], m[i], gamma, gl);
                k += u32::from(m[i] != 0.0);
            }
            if k > 0 {
                let b = gl.powi(k as i32);
                let a = gamma * gl.powi(k as i32 - 1);
                let (an, bl) = ((a * carry.nextv).abs(), (b * carry.last).abs());
                let c = U * (4.0 * f64::from(k) + 1.0);
                let partial = (zero.last + a * carry.nextv).abs();
                e_in = zero.e_last
                    + c * (an + bl)
                    + b.abs() * e_in
                    + U * (an + bl + partial + carries[begin].last.abs());
            }
            end = begin;
        }
    }
    Ok(g)
}

/// The running error bound of discounted_return's returns for the time split with segments of
/// `segment` steps (see above); the values are [`discounted_return`]'s.
pub fn discounted_return_split_bound(
    bound: &[f64],
    rewards: &[f64],
    mask: &[f64],
    t: usize,
    gamma: f64,
    segment: usize,
) -> Vec<f64> {
    let mut out = bound.to_vec();
    if t == 0 || segment == 0 || segment >= t {
        return out;
    }
    for row in 0..rewards.len() / t {
        let at = row * t;
        let (r, m) = (&rewards[at..at + t], &mask[at..at + t]);
        let carries = carries(t, |st: &mut ReturnState, i| {
            st.step(r[i], m[i], gamma);
        });
        let mut e_in = 0.0;
        let mut end = t;
        while end > 0 {
            let begin = (end - 1) / segment * segment;
            let mut st = ReturnState { e: e_in, ..carries[end] };
            for i in (begin..end).rev() {
                out[at + i] = st.step(r[i], m[i], gamma).1;
            }
            let mut zero = ReturnState::default();
            let mut p = 1.0;
            for i in (begin..end).rev() {
                zero.step(r[i], m[i], gamma);
                p *= gamma * m[i];
            }
            let k = (end - begin) as f64;
            let pr = (p * carries[end].running).abs();
            e_in =
                zero.e + U * (2.0 * k + 1.0) * pr + p.abs() * e_in + U * (pr + carries[begin].running.abs());
            end = begin;
        }
    }
    out
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

    /// The time split's order evaluated in float32 (written from its definition: per segment the
    /// loop from zero with the carry-in's coefficients by repeated multiplication, the joins last
    /// first, the loop again from the joined carry) stays within `gae_split`'s bound, which stays
    /// within a few times the sequential bound (not vacuous).
    #[test]
    fn the_split_orders_float32_error_lies_within_its_bound() {
        let t = 3000;
        let f = |i: usize, p: usize| ((i * p % 1009) as f64 - 504.0) / 100.0;
        let r: Vec<f64> = (0..t).map(|i| f(i, 7919) as f32 as f64).collect();
        let v: Vec<f64> = (0..t).map(|i| f(i, 104_729) as f32 as f64).collect();
        let m: Vec<f64> =
            (0..t).map(|i| f64::from(u8::from(i % 7 != 3 && !(1200..1500).contains(&i)))).collect();
        for (gamma, lam, segment) in [(1.0, 1.0, 128), (0.99, 0.95, 128), (1.0, 0.95, 704), (1.0, 1.0, 2999)]
        {
            let (g32, gl32) = (gamma as f32, (gamma * lam) as f32);
            // One step of the loop in float32 on (nextv, last).
            let step = |nv: &mut f32, last: &mut f32, i: usize| {
                let (ri, vi, mi) = (r[i] as f32, v[i] as f32, m[i] as f32);
                let a = ((ri + g32 * *nv) - vi) + gl32 * *last;
                *nv = vi * mi + (1.0 - mi) * *nv;
                *last = a * mi + *last * (1.0 - mi);
            };
            let bounds: Vec<usize> = (0..t).step_by(segment).chain([t]).collect();
            let mut summaries = Vec::new();
            for w in bounds.windows(2) {
                let (mut nv, mut last, mut ni, mut a, mut b) = (0.0f32, 0.0f32, 1.0f32, 0.0f32, 1.0f32);
                for i in (w[0]..w[1]).rev() {
                    let f = m[i] as f32 * gl32 + (1.0 - m[i] as f32);
                    a = a * f + g32 * (m[i] as f32 * ni);
                    b *= f;
                    ni *= 1.0 - m[i] as f32;
                    step(&mut nv, &mut last, i);
                }
                summaries.push((nv, last, ni, a, b));
            }
            let mut got = vec![0.0f64; t];
            for (s, w) in bounds.windows(2).enumerate() {
                let (mut nv, mut last) = (0.0f32, 0.0f32);
                for &(nc, l0, ni, a, b) in summaries[s + 1..].iter().rev() {
                    (nv, last) = (nc + ni * nv, (l0 + a * nv) + b * last);
                }
                for i in (w[0]..w[1]).rev() {
                    step(&mut nv, &mut last, i);
                    got[i] = f64::from(last);
                }
            }
            let exact = gae(&r, &v, &m, t, gamma, lam).unwrap();
            let bound = gae_split(&r, &v, &m, t, gamma, lam, segment).unwrap().adv_bound;
            for i in 0..t {
                let err = (got[i] - exact.advantages[i]).abs();
                assert!(
                    err <= bound[i] * 1.001,
                    "γ {gamma} λ {lam} segment {segment} t {i}: error {err:e}, bound {:e}",
                    bound[i]
                );
                assert!(
                    bound[i] <= 4.0 * exact.adv_bound[i] + 1e-6,
                    "t {i}: the split bound {:e} vacuous",
                    bound[i]
                );
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_refused() {
        assert!(gae(&[1.0; 4], &[0.0; 3], &[1.0; 4], 4, 1.0, 1.0).is_err());
        assert!(gae(&[1.0; 4], &[0.0; 4], &[1.0; 4], 3, 1.0, 1.0).is_err());
    }
}
