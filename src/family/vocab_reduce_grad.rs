//! logprob_entropy_grad, the backward of logprob_entropy, a second op of family vocab_reduce
//! (its own kernel template, the forward's tiling fields, host template and checks): logits
//! [..., V], target, and per row the forward's saved lse and entropy and the incoming dlogprob
//! and dentropy (float32) to dlogits [..., V] in logits' dtype:
//! dlogits = (1/T)·[dlogp·(onehot(target) − p) − dent·p·(z − lse + H)], p = e^{z − lse}.
//!
//! Kernel (templates/kernel/vocab_reduce_grad.cpp.j2): rows over the cores, each row's tiles of
//! V through UB once (read logits, write dlogits), float32 arithmetic; ignore_index rows write
//! zeros without reading their logits. With fewer rows than cores (mode `v-split`) the
//! flattened [rows, tilesPerRow] tiles go over the cores in runs, each tile by the same code, so
//! a row's bits do not depend on the mode.
//!
//! Gates (derived in `gates`): every element within u·E_case absolute (float32) or 1 ULP of
//! RNE(exact) or 2·u·E_case (16-bit), E the worst row's error scale, plus the bias gate.

use super::attr_i64;
use super::inputs::{derive_seed, Rng};
use super::layout::input;
use super::vocab_reduce as forward;
use super::{Case, CaseData, Expected, FamilyError, Sweep};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::plan::soc::UB_PLAN_BYTES_A2;
use crate::reference::vocab_reduce::{self as reference, GradRows};
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;

pub(crate) const INPUTS: [&str; 6] = ["logits", "target", "lse", "entropy", "dlogprob", "dentropy"];
pub(crate) const OUTPUTS: [&str; 1] = ["dlogits"];
// The in-place form (kernels/logprob_entropy_grad_inplace.toml) writes dlogits over `logits`:
// the same kernel with the output address the input's (CANN's ref output), see `is_inplace`.

/// Whether `spec` is a backward op of the family (the six inputs) rather than the forward (two).
pub(crate) fn is_grad(spec: &OpSpec) -> bool {
    spec.inputs.len() == INPUTS.len()
}

/// Whether `spec` is the in-place backward (logprob_entropy_grad_inplace): no output of its
/// own, dlogits written over the input `logits` (its ref output).
pub(crate) fn is_inplace(spec: &OpSpec) -> bool {
    !spec.refs.is_empty()
}

/// The tensor dlogits is compared as: the output dlogits, or the input logits it overwrote.
pub(crate) fn result_name(spec: &OpSpec) -> &'static str {
    if is_inplace(spec) {
        INPUTS[0]
    } else {
        OUTPUTS[0]
    }
}

/// Inputs (logits, target, lse, entropy, dlogprob, dentropy), output dlogits in logits' dtype,
/// the four row tensors float32; the attrs as the forward's.
pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let label = "family vocab_reduce (logprob_entropy_grad)";
    let names = |ts: &[crate::spec::TensorArg]| ts.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    if names(&spec.inputs) != INPUTS {
        r.error(&raw.inputs, "inputs", format!("{label} takes inputs ({}) in that order", INPUTS.join(", ")));
        return;
    }
    // The in-place form: logits is its only (ref) output; the validation checked its dtypes.
    if is_inplace(spec) {
        if !spec.outputs.is_empty() || spec.refs != [INPUTS[0]] {
            r.error(
                &raw.outputs,
                "outputs",
                format!("{label}: the in-place form has one output, logits (mutated)"),
            );
            return;
        }
    } else if names(&spec.outputs) != OUTPUTS {
        r.error(&raw.outputs, "outputs", format!("{label} has one output, dlogits"));
        return;
    }
    forward::check_logits_target_attrs(r, raw, spec, label);
    // The four row tensors after logits and target.
    super::check_float32(r, raw.inputs.get_ref(), &spec.inputs, "inputs", 2, label, "");
    if is_inplace(spec) {
        return;
    }
    for c in 0..spec.columns() {
        if spec.outputs[0].dtypes[c] != spec.inputs[0].dtypes[c] {
            r.error(
                &raw.outputs.get_ref()[0].dtypes.get_ref()[c],
                &format!("outputs[0].dtypes[{c}]"),
                format!(
                    "{label}: dlogits has logits' dtype {} (found {})",
                    spec.inputs[0].dtypes[c], spec.outputs[0].dtypes[c]
                ),
            );
        }
    }
}

/// The forward's cases (shapes, hostile rows, temperatures), each with the four row tensors.
/// With the backward's tiles (`tile::plan`) the quick sweep reaches every mode with 3+ passes on
/// a core: 97x20011 is 2 16-bit tiles of 10240 (last 9771) or 3 float32 of 6784 (last 6443) a
/// row, 3 rows a core; the V split's 31x40009 is 4 of 10240 (last 9289) or 6 of 6784 (last
/// 6089) a row, 124 or 186 tiles over 48 cores in runs of 2-3 or 3-4; 2x151936 and 1x262144
/// split one tile a core (262144 in float32: 35 tiles of 7552, the last 5376).
pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    forward::cases(spec, sweep)
        .into_iter()
        .map(|mut c| {
            let rows = c.shapes[1].1.clone();
            c.shapes.extend(INPUTS[2..].iter().map(|n| (n.to_string(), rows.clone())));
            c
        })
        .collect()
}

/// The backward's tile of V as its TilingFunc picks it (templates/host/vocab_reduce.cpp.j2,
/// `grad`), so the cases can aim targets at real tile edges. The host's arithmetic, in Rust:
/// tests/it/vocab_reduce_grad_twin.rs (`the_tile_mirror_is_the_tiling_funcs`) holds the two
/// together at the model shapes and the sweep's.
pub mod tile {
    /// A tile is a multiple of this many bytes (the host's TILE_ALIGN_BYTES, see its comment).
    pub const ALIGN_BYTES: u64 = 512;
    /// The host's MAX_TILE and MAX_GROUP.
    pub const MAX_TILE: u64 = 16384;
    pub const MAX_GROUP: u64 = 256;
    const BUFFER_NUM: u64 = 2;

    fn align_up(x: u64, a: u64) -> u64 {
        x.div_ceil(a) * a
    }

    /// The host's UbBytes (grad): the kernel's buffers at `tile` elements of `elem` bytes and
    /// `group` rows.
    pub fn ub_bytes(tile: u64, elem: u64, group: u64) -> u64 {
        let queues = 2 * BUFFER_NUM * align_up(tile * elem, 32);
        let floats = 2 * tile * 4;
        let rows = 4 * align_up(group, 8) * 4 + align_up(group, 8) * 8;
        queues + floats + rows
    }

    /// (tileLen, tilesPerRow) for rows of `v` > 0 elements of `elem` bytes under a UB planning
    /// budget of `budget` bytes: the largest aligned tile the UB holds with MAX_GROUP rows, then
    /// V in as few tiles as that allows, each its even share rounded up to the alignment.
    pub fn plan(v: u64, elem: u64, budget: u64) -> (u64, u64) {
        let align = ALIGN_BYTES / elem;
        let mut most = MAX_TILE;
        while most > align && ub_bytes(most, elem, MAX_GROUP) > budget {
            most -= align;
        }
        let tiles = v.div_ceil(most);
        (align_up(v.div_ceil(tiles), align), tiles)
    }
}

/// The forward's logits and targets (in rows of two or more tiles, every 11th row from row 3
/// aims at the last tile's first element and every 11th from row 6 at the first tile's last
/// element, so the one-hot term meets both edges of a tile, the last tile's start where the
/// even split's rounding shows); lse and entropy as the forward op gives them (its f64
/// reference rounded to float32: what autograd saves); dlogprob and dentropy uniform in
/// [−2, 2], with dlogprob = 0 on every 7th row (from row 1) and dentropy = 0 on every 7th (from
/// row 2), so rows with one of the two terms absent are in every case.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    let (logits, mut target) = forward::logits_and_targets(spec, column, case)?;
    let v = *logits.shape.last().ok_or("logits has rank 0")?;
    let ignore = attr_i64(&case.attrs, "ignore_index")?;
    // The twin plans on an A2 SoC: its UB less the API scratch.
    let elem = logits.dtype.size_bytes() as u64;
    let (len, tiles) = if v > 0 { tile::plan(v as u64, elem, UB_PLAN_BYTES_A2) } else { (0, 0) };
    let (len, tiles) = (len as i64, tiles as i64);
    for (r, t) in target.iter_mut().enumerate().filter(|(_, t)| **t != ignore) {
        if tiles >= 2 && r % 11 == 3 {
            *t = (tiles - 1) * len;
        } else if tiles >= 2 && r % 11 == 6 {
            *t = len - 1;
        }
    }
    let rows = target.len();
    let temperature = super::attr_f64(&case.attrs, "temperature")?;
    let saved = reference::logprob_entropy(&logits.to_f64(), v, &target, temperature, ignore)?;
    let mut rng = Rng::new(derive_seed(case.seed, "dlogprob"));
    let mut grad = |zero_at: usize| -> Vec<f64> {
        (0..rows).map(|r| if r % 7 == zero_at { 0.0 } else { rng.uniform(-2.0, 2.0) }).collect()
    };
    let (dlogprob, dentropy) = (grad(1), grad(2));
    let row_shape = case.shapes[1].1.clone();
    let float = |values: &[f64]| HostTensor::from_f64(DType::Float32, &row_shape, values);
    let inputs = vec![
        (INPUTS[0].to_string(), logits),
        (INPUTS[1].to_string(), HostTensor::from_i64(spec.inputs[1].dtypes[column], &row_shape, &target)),
        (INPUTS[2].to_string(), float(&saved.lse)),
        (INPUTS[3].to_string(), float(&saved.entropy)),
        (INPUTS[4].to_string(), float(&dlogprob)),
        (INPUTS[5].to_string(), float(&dentropy)),
    ];
    Ok((inputs, case.attrs.clone()))
}

/// The error scale of one row: its largest finite |z| (`a`), H, dlogp, dent, at temperature `t`.
/// The kernel's float32 evaluation (u = 2^-24 per rounding; fl(1/T) one more; Exp within 2 ulp,
/// 4u; lse and H are inputs, exact for the kernel):
/// - z = x·fl(1/T): 2u·|z|; y = z − lse: |δy| ≤ u·(2a + |y|);
/// - p = Exp(y): relative |δy| + 4u; p·|y| = p·|log p| ≤ 1/e < 1 for any p, so tiny p with a
///   huge |log p| stays bounded (p·y² ≤ 4/e² < 1 likewise);
/// - dlogp·(δ − p): p's error times |dlogp| plus two roundings: u·|dlogp|·(2a + 7);
/// - dent·p·(y + H): y + H carries |δy| + u·|y + H|, p·|y + H| ≤ 1 + H, p's relative error
///   times |y + H|·p ≤ u·(2a·(1 + H) + 1 + 5H + 4), three roundings: u·|dent|·(2a·(2 + H) + 7H + 8);
/// - the sum and the final ·fl(1/T): 4u of |result| ≤ |dlogp|·1 + |dent|·(1 + H).
///
/// Total, absolute: (u/T)·[|dlogp|·(2a + 11) + |dent|·(2a·(2 + H) + 11H + 12)].
pub fn row_scale(a: f64, h: f64, dlogp: f64, dent: f64, t: f64) -> f64 {
    (dlogp.abs() * (2.0 * a + 11.0) + dent.abs() * (2.0 * a * (2.0 + h) + 11.0 * h + 12.0)) / t
}

/// The gate of a case whose worst row scale (`row_scale`) is `e`, for dlogits in `dtype`:
/// float32 within u·e absolute (no ULP term: the bound is what the evaluation guarantees);
/// 16-bit within 1 ULP of RNE(exact), or 2·u·e absolute (a float32 result within u·e rounds to
/// RNE(exact) or its neighbour while u·e is below half a 16-bit ULP, and otherwise lands within
/// u·e + ULP/2 ≤ 2·u·e), plus the bias gate either way. The bars go to the next power of two.
pub fn gates(e: f64, dtype: DType) -> Tolerance {
    let u = 2f64.powi(-24);
    let (max_ulp, factor) = if dtype == DType::Float32 { (0, 1.0) } else { (1, 2.0) };
    // A case of only ignored rows or zero gradients has e = 0: the bar is the smallest subnormal.
    let abs_log2 = (factor * u * e).log2().ceil().max(-149.0) as i32;
    Tolerance::UlpOrAbs { max_ulp, abs_log2, mean: None }
}

pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let logits = input(inputs, spec, 0)?;
    let target = input(inputs, spec, 1)?.to_i64();
    let row = |i: usize| input(inputs, spec, i).map(HostTensor::to_f64);
    let (lse, entropy, dlogprob, dentropy) = (row(2)?, row(3)?, row(4)?, row(5)?);
    let v = *logits.shape.last().ok_or("logits has rank 0")?;
    let t = super::attr_f64(attrs, "temperature")?;
    let ignore = attr_i64(attrs, "ignore_index")?;
    let x = logits.to_f64();
    let rows = GradRows { lse: &lse, entropy: &entropy, dlogprob: &dlogprob, dentropy: &dentropy };
    let values = reference::logprob_entropy_grad(&x, v, &target, rows, t, ignore)?;
    let mut e = 0.0f64;
    for r in (0..target.len()).filter(|&r| target[r] != ignore) {
        let a =
            x[r * v..(r + 1) * v].iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max((x / t).abs()));
        let s = row_scale(a, entropy[r], dlogprob[r], dentropy[r], t);
        if s.is_finite() {
            e = e.max(s);
        }
    }
    Ok(vec![Expected {
        name: result_name(spec).into(),
        dtype: logits.dtype,
        shape: logits.shape.clone(),
        values,
        tolerance: gates(e, logits.dtype),
    }])
}
