//! Family reverse_scan: affine reverse recurrences over time (issue 29), per row (one response)
//! walking t = T−1 .. 0 (the loops: `crate::reference::reverse_scan`), [..., T]: rewards and
//! values float16, bfloat16 or float32, the 0/1 mask float32 or int8, outputs and state float32:
//! - gae: token_level_rewards, values, response_mask to advantages and returns, verl's
//!   `compute_gae_advantage_return` before whitening (attrs gamma, lam);
//! - discounted_return: token_level_rewards, response_mask to returns, REINFORCE++'s discounted
//!   sum with a masked token resetting it (attr gamma).
//!
//! Kernel (templates/kernel/reverse_scan.cpp.j2): rows over the cores; per core, groups of up to
//! 64 rows are the vector lanes (one 256-byte repeat per time step); each group walks T backwards
//! in UB chunks of `chunk` steps: the [rows, chunk] blocks of the three inputs come in by one
//! strided DataCopyPad each in their own dtype, are Cast to float32 in UB (int8 through half),
//! a Gather turns them time-major, the recurrence runs one vector
//! instruction per operation per step on float32 state (nextv, last) carried across chunks, and
//! a second Gather turns advantages and returns back row-major for one strided copy-out each.
//! Never the closed form k^-t·Σ k^j·δ_j (it overflows float32 once T ≳ 2000 at k = 0.95).
//!
//! Gates (`gates`): the reference carries a running error bound of the float32 loop per element
//! (see `crate::reference::reverse_scan`); each output passes within 2^k absolute, 2^k the
//! bound's largest value over the case rounded up (so it grows with T when γλ = 1, as the error
//! does), or within 1 float32 ulp.

use super::eager::{self, Builder};
use super::inputs::{derive_seed, generate, Distribution, Rng};
use super::layout::input;
use super::{Case, Expected, Sweep};
use super::{
    CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, PlanReading, Templates,
};
use super::{OutputShape, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference::reverse_scan as reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;

// ---- spec --------------------------------------------------------------------------------

/// The ops of the family, by their signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    Gae,
    DiscountedReturn,
}

/// An op's inputs, outputs and float attrs, by name and in this order (the last input is the
/// 0/1 mask).
struct Signature {
    scan: Scan,
    inputs: &'static [&'static str],
    outputs: &'static [&'static str],
    attrs: &'static [&'static str],
}

const SIGNATURES: [Signature; 2] = [
    Signature {
        scan: Scan::Gae,
        inputs: &["token_level_rewards", "values", "response_mask"],
        outputs: &["advantages", "returns"],
        attrs: &["gamma", "lam"],
    },
    Signature {
        scan: Scan::DiscountedReturn,
        inputs: &["token_level_rewards", "response_mask"],
        outputs: &["returns"],
        attrs: &["gamma"],
    },
];

fn signature(spec: &OpSpec) -> Option<&'static Signature> {
    SIGNATURES.iter().find(|s| spec.inputs.iter().map(|t| t.name.as_str()).eq(s.inputs.iter().copied()))
}

/// Which op of the family `spec` is (gae unless its inputs are discounted_return's).
pub fn scan(spec: &OpSpec) -> Scan {
    signature(spec).map_or(Scan::Gae, |s| s.scan)
}

/// Rewards (and values) of these dtypes, one of them per combination; the mask of these (0/1).
pub const REWARD_DTYPES: [DType; 3] = [DType::Float16, DType::BFloat16, DType::Float32];
pub const MASK_DTYPES: [DType; 2] = [DType::Float32, DType::Int8];

/// Per combination: token_level_rewards in [`REWARD_DTYPES`], values (gae) of the rewards'
/// dtype, response_mask in [`MASK_DTYPES`].
fn check_input_dtypes(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec, label: &str) {
    let raw_inputs = raw.inputs.get_ref();
    let last = spec.inputs.len() - 1;
    for (i, t) in spec.inputs.iter().enumerate() {
        for (c, x) in t.dtypes.iter().enumerate() {
            let rewards = spec.inputs[0].dtypes[c];
            let why = if i == last && !MASK_DTYPES.contains(x) {
                Some("float32 or int8".to_string())
            } else if i == 0 && !REWARD_DTYPES.contains(x) {
                Some("float16, bfloat16 or float32".to_string())
            } else if i != 0 && i != last && *x != rewards {
                Some(format!("token_level_rewards' dtype in each combination ({rewards})"))
            } else {
                None
            };
            if let Some(want) = why {
                r.error(
                    &raw_inputs[i].dtypes.get_ref()[c],
                    &format!("inputs[{i}].dtypes[{c}]"),
                    format!("{label}: `{}` is {want} (found {x})", t.name),
                );
            }
        }
    }
}

/// The inputs of one of the signatures (gae's or discounted_return's), its outputs and float
/// attrs by name and in order; the inputs' dtypes as [`check_input_dtypes`] says, every output
/// float32.
pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let label = "family reverse_scan";
    let Some(sig) = signature(spec) else {
        r.error(
            &raw.inputs,
            "inputs",
            format!(
                "{label} takes inputs (token_level_rewards, values, response_mask) for gae or \
                 (token_level_rewards, response_mask) for discounted_return, in that order"
            ),
        );
        return;
    };
    let names = |ts: &[crate::spec::TensorArg]| ts.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    if names(&spec.outputs) != sig.outputs {
        r.error(
            &raw.outputs,
            "outputs",
            format!("{label} has outputs ({}) in that order", sig.outputs.join(", ")),
        );
        return;
    }
    check_input_dtypes(r, raw, spec, label);
    super::check_float32(r, raw.outputs.get_ref(), &spec.outputs, "outputs", 0, label, "");
    let attrs: Vec<(&str, AttrKind)> = spec.attrs.iter().map(|a| (a.name.as_str(), a.kind)).collect();
    let want: Vec<(&str, AttrKind)> = sig.attrs.iter().map(|a| (*a, AttrKind::Float)).collect();
    if attrs != want {
        let at = raw.attrs.first().map_or(&raw.name, |a| &a.name);
        r.error(
            at,
            "attrs",
            format!("{label} takes attrs {} (float), in that order", sig.attrs.join(" and ")),
        );
    }
}

// ---- plan --------------------------------------------------------------------------------

const FIELDS: &[TilingField] = &[
    TilingField::u32("rows", "rows: the product of the inputs' leading dims"),
    TilingField::u32("steps", "T: the inputs' last dim"),
    TilingField::u32(
        "blockFactor",
        "rows per core (sequential) or per row group (time split); the last may get fewer",
    ),
    TilingField::u32("lanes", "rows per group: the vector lanes of one time step (a multiple of 8, <= 64)"),
    TilingField::u32(
        "chunk",
        "time steps per UB pass (a multiple of 32 bytes of the narrowest input: 8, 16 or 32; the first pass of a row may be shorter)",
    ),
    TilingField::u32("chunks", "UB passes per group and segment (per phase): ceil(segment / chunk)"),
    TilingField::u32("segment", "time steps per segment: T in the sequential mode, less in the time split"),
    TilingField::u32(
        "segments",
        "segments of T per row group: 1 in the sequential mode, >= 4 in the time split (a function of T alone)",
    ),
    TilingField::u32("perCore", "the time split's most items (row group, segment) on a core"),
    TilingField::f32("gamma", "gamma, rounded to float32"),
    TilingField::f32("gammaLam", "gamma * lam (in double), rounded to float32"),
];

// ---- verification ------------------------------------------------------------------------

/// (rows, T) of the quick sweep, 48 cores: every mode with ≥ 3 passes on a core and a
/// remainder, in both ops (discounted_return's chunks are longer: fewer tiles). The time split
/// takes T ≥ 385 (4 segments of 128 steps or more). single-chunk: 6241 rows of T = 7 give 131
/// rows (3 groups: 64, 64, 3) on 47 cores and 84 on the last; multi-chunk: 1500 rows of T = 383
/// give 32 rows (32 lanes, chunks of ≤ 120 steps: ≥ 4 passes) on 46 cores and 28 on the last;
/// time-split: 60 rows (one group of 64 lanes, chunks of ≤ 56 steps) of T = 9000 in 48 segments
/// of 188 steps (≥ 4 passes per phase), the last 164; 400 rows of T = 1000: 7 groups × 8
/// segments, 8 cores with 2 items. Then one row, T = 1, odd T, sequential (130 × 257) and split
/// (97 × 1000, 5 × 4099) row groups.
const QUICK: [(usize, usize); 9] =
    [(1, 1), (3, 9), (6241, 7), (97, 1000), (130, 257), (5, 4099), (1500, 383), (60, 9000), (400, 1000)];
/// Added in the full sweep: the shapes at what the twin runs in reasonable time.
const FULL: [(usize, usize); 5] = [(4096, 33), (300, 2049), (64, 4096), (2, 32768), (49, 777)];

/// The γ, λ of a case: verl's PPO defaults (1, 1) or the textbook (0.99, 0.95); an op without
/// lam takes γ only.
fn case(spec: &OpSpec, rows: usize, t: usize, dist: Distribution, seed: u64, gl: Option<(f64, f64)>) -> Case {
    let mut attrs = super::default_attrs(spec);
    if let Some((g, l)) = gl {
        for (name, value) in attrs.iter_mut() {
            *value = AttrValue::Float(if name == "lam" { l } else { g });
        }
    }
    let shape = vec![rows, t];
    Case { shapes: spec.inputs.iter().map(|a| (a.name.clone(), shape.clone())).collect(), dist, seed, attrs }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let mut shapes = QUICK.to_vec();
    if sweep == Sweep::Full {
        shapes.extend(FULL);
    }
    let textbook = Some((0.99, 0.95));
    let mut out = Vec::new();
    for (i, &(n, t)) in shapes.iter().enumerate() {
        let gl = if i % 2 == 0 { None } else { textbook };
        out.push(case(spec, n, t, Distribution::Uniform5, 6000 + i as u64, gl));
    }
    // Masks with holes and all-masked rows (`case_inputs`: Outlier), a large mean, γλ = 1 long.
    out.push(case(spec, 70, 1001, Distribution::Outlier, 6100, textbook));
    out.push(case(spec, 70, 1001, Distribution::Outlier, 6101, None));
    out.push(case(spec, 9, 2500, Distribution::NormalLargeMean, 6102, Some((1.0, 0.95))));
    out.push(case(spec, 3, 8192, Distribution::Uniform5, 6103, Some((0.5, 0.5))));
    if sweep == Sweep::Full {
        out.push(case(spec, 4, 32768, Distribution::Outlier, 6200, None));
        out.push(case(spec, 3, 32767, Distribution::NormalLargeMean, 6201, None));
        out.push(case(spec, 200, 515, Distribution::Outlier, 6202, textbook));
        out.push(case(spec, 16, 3000, Distribution::Tiny, 6203, textbook));
        out.push(case(spec, 16, 3000, Distribution::Zeros, 6204, textbook));
    }
    out
}

/// The masks of the hostile cases (`Distribution::Outlier`), by row index mod 6; other cases
/// get verl's response mask, ones up to a drawn response length then zeros.
fn mask_row(row: &mut [f64], r: usize, hostile: bool, rng: &mut Rng) {
    let t = row.len();
    let len = rng.below(t as u64 + 1) as usize;
    match r % 6 {
        _ if !hostile => row.iter_mut().enumerate().for_each(|(i, m)| *m = f64::from(u8::from(i < len))),
        // All masked: advantages 0 throughout.
        0 => row.fill(0.0),
        // Holes: about a third of the tokens masked at random (multi-turn observations).
        1 => row.iter_mut().for_each(|m| *m = f64::from(u8::from(rng.below(3) != 0))),
        // Only the last token, only the first token.
        2 => row.iter_mut().enumerate().for_each(|(i, m)| *m = f64::from(u8::from(i + 1 == t))),
        3 => row.iter_mut().enumerate().for_each(|(i, m)| *m = f64::from(u8::from(i == 0))),
        // Alternating runs of 37 (across chunk boundaries).
        4 => row.iter_mut().enumerate().for_each(|(i, m)| *m = f64::from(u8::from((i / 37) % 2 == 0))),
        _ => row.fill(1.0),
    }
}

/// Rewards (and values) from the case's distribution (Outlier: uniform with the hostile masks),
/// the last input, the mask, of 0 and 1 (`mask_row`).
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    let shape = &case.shapes[0].1;
    let t = *shape.last().ok_or("token_level_rewards has rank 0")?;
    let hostile = case.dist == Distribution::Outlier;
    let dist = if hostile { Distribution::Uniform5 } else { case.dist };
    let mut inputs = Vec::new();
    let last = case.shapes.len() - 1;
    for (i, (name, s)) in case.shapes.iter().enumerate().take(last) {
        inputs.push((
            name.clone(),
            generate(dist, spec.inputs[i].dtypes[column], s, derive_seed(case.seed, name)),
        ));
    }
    let (m_name, m_shape) = &case.shapes[last];
    let mut rng = Rng::new(derive_seed(case.seed, m_name));
    let mut mask = vec![0.0; m_shape.iter().product()];
    if t > 0 {
        for (r, row) in mask.chunks_mut(t).enumerate() {
            mask_row(row, r, hostile, &mut rng);
        }
    }
    inputs.push((m_name.clone(), HostTensor::from_f64(spec.inputs[last].dtypes[column], m_shape, &mask)));
    Ok((inputs, case.attrs.clone()))
}

/// An output's gate from its elements' running error bounds (`crate::reference::reverse_scan`):
/// within 1 float32 ulp of RNE(exact), or within 2^k of the exact value, 2^k ≥ the largest bound
/// (at least 2^-126, so a case of zeros has a bar).
pub fn gates(bounds: &[f64]) -> Tolerance {
    let worst = bounds.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
    Tolerance::UlpOrAbs { max_ulp: 1, abs_log2: worst.log2().ceil() as i32, mean: None }
}

pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let r = input(inputs, spec, 0)?;
    let t = *r.shape.last().ok_or("token_level_rewards has rank 0")?;
    let gamma = super::attr_f64(attrs, "gamma")?;
    let out = |o: usize, values: Vec<f64>, bounds: &[f64]| Expected {
        name: spec.outputs[o].name.clone(),
        dtype: DType::Float32,
        shape: r.shape.clone(),
        values,
        tolerance: gates(bounds),
    };
    let mask = input(inputs, spec, spec.inputs.len() - 1)?.to_f64();
    match scan(spec) {
        Scan::Gae => {
            let v = input(inputs, spec, 1)?.to_f64();
            let lam = super::attr_f64(attrs, "lam")?;
            let g = reference::gae(&r.to_f64(), &v, &mask, t, gamma, lam)?;
            Ok(vec![out(0, g.advantages, &g.adv_bound), out(1, g.returns, &g.ret_bound)])
        }
        Scan::DiscountedReturn => {
            let (returns, bound) = reference::discounted_return(&r.to_f64(), &mask, t, gamma)?;
            Ok(vec![out(0, returns, &bound)])
        }
    }
}

/// The time split's gates (`segments` > 1 in the plan): from the running error bound of its
/// evaluation order with the plan's `segment` (`crate::reference::reverse_scan`, the split's
/// section), the same rule as [`gates`]. The sequential mode keeps [`expected`]'s.
pub fn split_gates(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    tiling: &dyn Fn(&str) -> Option<f64>,
    expected: &mut [Expected],
) -> Result<(), FamilyError> {
    if tiling("segments").unwrap_or(1.0) <= 1.0 {
        return Ok(());
    }
    let segment = tiling("segment").ok_or("the time split's tiling has no `segment`")? as usize;
    let r = input(inputs, spec, 0)?;
    let t = *r.shape.last().ok_or("token_level_rewards has rank 0")?;
    let (r, mask) = (r.to_f64(), input(inputs, spec, spec.inputs.len() - 1)?.to_f64());
    let gamma = super::attr_f64(attrs, "gamma")?;
    let bounds = match scan(spec) {
        Scan::Gae => {
            let v = input(inputs, spec, 1)?.to_f64();
            let lam = super::attr_f64(attrs, "lam")?;
            let g = reference::gae_split(&r, &v, &mask, t, gamma, lam, segment)?;
            vec![g.adv_bound, g.ret_bound]
        }
        Scan::DiscountedReturn => {
            let (_, bound) = reference::discounted_return(&r, &mask, t, gamma)?;
            vec![reference::discounted_return_split_bound(&bound, &r, &mask, t, gamma, segment)]
        }
    };
    for (e, b) in expected.iter_mut().zip(&bounds) {
        e.tolerance = gates(b);
    }
    Ok(())
}

/// Rewards' [B, T] as RL trainers batch them (issue 29): a PPO batch of 512 responses of 4096
/// tokens, 64 long-reasoning responses of 32768, and 8 rollouts of 16384 (the small-batch case,
/// where rows alone cannot fill the cores). The whiten family's too: verl whitens the advantages
/// of the same batch.
pub(crate) fn advantage_shapes() -> Vec<(&'static str, Vec<usize>)> {
    vec![
        ("PPO batch", vec![512, 4096]),
        ("long responses", vec![64, 32768]),
        ("few rollouts", vec![8, 16384]),
    ]
}

// ---- the family --------------------------------------------------------------------------

pub struct ReverseScan;

impl FamilyOps for ReverseScan {
    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/reverse_scan.cpp.j2",
            host: "host/reverse_scan.cpp.j2",
            checks: Some("host/reverse_scan_checks.j2"),
        }
    }

    /// `scan`: which recurrence the kernel runs ("gae" or "discounted_return").
    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        let name = match scan(spec) {
            Scan::Gae => "gae",
            Scan::DiscountedReturn => "discounted_return",
        };
        let mut m = serde_json::Map::new();
        m.insert("scan".into(), name.into());
        Ok(m)
    }

    /// Every output has the inputs' shape (the host checks require one shape of all of them).
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        let like = || OutputShape::Like { of: spec.inputs[0].name.clone() };
        Ok(ShapeRule { checks: Vec::new(), outputs: spec.outputs.iter().map(|_| like()).collect() })
    }

    fn derived_shape(&self, _spec: &OpSpec, _i: usize, first: &[usize]) -> Vec<usize> {
        first.to_vec()
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        // A case this family made always has its three shapes; a malformed one panics with why.
        Some(case_inputs(spec, column, case).unwrap_or_else(|e| panic!("{}: {e}", spec.name)))
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    fn plan_gates(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
        tiling: &dyn Fn(&str) -> Option<f64>,
        expected: &mut [Expected],
    ) -> Result<(), FamilyError> {
        split_gates(spec, inputs, attrs, tiling, expected)
    }

    /// [`advantage_shapes`].
    fn model_shapes(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        advantage_shapes()
    }

    fn work_units(&self, _spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        shapes.first().map(|(_, s)| s.iter().product::<usize>() as u64)
    }

    fn read_plan(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>, _dtype: DType) -> PlanReading {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let split = if f("segments") > 1.0 {
            format!(", T in {} segments of {} over cores", f("segments"), f("segment"))
        } else {
            String::new()
        };
        PlanReading {
            label: format!("{} lanes, {} chunk(s) of {} steps{split}", f("lanes"), f("chunks"), f("chunk")),
            two_pass: false,
            transfer_reason: None,
        }
    }

    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        if f("segments") > 1.0 {
            // Each phase walks its items' segments' chunks through the same queues; a remainder:
            // the last segment shorter or the last row group.
            let short = f("steps") % f("segment").max(1.0) != 0.0;
            return PlanCoverage {
                mode: "time-split",
                passes: Some(f("chunks") as u64 * f("perCore") as u64),
                uneven: Some(short || f("rows") % f("blockFactor").max(1.0) != 0.0),
            };
        }
        let core_rows = f("blockFactor").min(f("rows"));
        let groups = super::passes(core_rows, f("lanes").max(1.0));
        PlanCoverage {
            mode: if f("chunks") > 1.0 { "multi-chunk" } else { "single-chunk" },
            passes: Some(groups * f("chunks") as u64),
            uneven: Some(super::uneven(f("rows"), f("blockFactor").max(1.0)) && f("rows") > f("blockFactor")),
        }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        vec!["single-chunk", "multi-chunk", "time-split"]
    }

    /// verl's loop: per time step t = T−1 .. 0, one launch per tensor op over the [B] column t
    /// (gae: twelve, discounted_return: three), then the stack (gae: and returns).
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        let (r, shape) = eager::input(case, 0)?;
        let t = eager::last_dim(shape)?;
        let col = r.with_n(r.n / t);
        if scan(case.spec) == Scan::DiscountedReturn {
            for _ in 0..t {
                let g = b.op("gamma * running_return", &[col], col);
                let run = b.op("token_level_rewards[:, t] + ...", &[col, g], col);
                b.op("running_return * response_mask[:, t]", &[run, col], col);
            }
            b.op("returns[:, t] = running_return (T column writes, one stack)", &[r], r);
            return Ok(
                b.finish("verl compute_reinforce_plus_plus_outcome_advantage, returns (eager loop over T)")
            );
        }
        let (v, _) = eager::input(case, 1)?;
        for _ in 0..t {
            let gn = b.op("gamma * nextvalues", &[col], col);
            let s = b.op("token_level_rewards[:, t] + ...", &[col, gn], col);
            let delta = b.op("... - values[:, t]", &[s, col], col);
            let gl = b.op("gamma * lam * lastgaelam", &[col], col);
            let a = b.op("delta + ...", &[delta, gl], col);
            let vm = b.op("values[:, t] * response_mask[:, t]", &[col, col], col);
            let om = b.op("1 - response_mask[:, t]", &[col], col);
            let on = b.op("(1 - m) * nextvalues", &[om, col], col);
            b.op("nextvalues = ... + ...", &[vm, on], col);
            let am = b.op("lastgaelam_ * response_mask[:, t]", &[a, col], col);
            let ol = b.op("(1 - m) * lastgaelam", &[om, col], col);
            b.op("lastgaelam = ... + ...", &[am, ol], col);
        }
        let adv = b.op("torch.stack(advantages_reversed[::-1], dim=1)", &[r], r);
        b.op("advantages + values", &[adv, v], v);
        Ok(b.finish("verl compute_gae_advantage_return (eager loop over T)"))
    }
}
