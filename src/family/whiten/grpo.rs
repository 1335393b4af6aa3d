//! grpo_advantage, the whiten family's per-group normalisation (issue 29): GRPO's outcome
//! advantage, verl's `compute_grpo_outcome_advantage` (the math: `crate::reference::whiten::grpo`).
//! Inputs token_level_rewards [B, T] (float16, bfloat16 or float32), response_mask [B, T]
//! (float32 or int8 0/1), index int32 [B] (group ids in [0, 2^24)); attrs epsilon (float) and
//! norm_by_std (bool); advantages float32 [B, T]. B ≤ [`MAX_BATCH`]: every core holds all the
//! batch's scores and ids in UB.
//!
//! Kernel (templates/kernel/grpo_advantage.cpp.j2): phase 1 sums each row by tiles of
//! [`row_tile`]`(T)` elements (added element by element in order, then one pairwise tree: bits
//! independent of the batch), the scores to the workspace, SyncAll; phase 2 on every core: all scores and ids in
//! UB, per distinct id among its rows a 0/1 selection vector and tree sums over the padded batch
//! (count, Σ s, then Σ (s − mean)²), the same instructions on every core.
//!
//! Gates: the reference's per-element bound for this order (`GrpoPlan` from the shape), the
//! case's largest rounded up to 2^k absolute, or 1 float32 ulp (`reverse_scan::gates`).

use super::super::eager::{self, Builder};
use super::super::inputs::{derive_seed, generate, Distribution, Rng};
use super::super::layout::input;
use super::super::reverse_scan::{MASK_DTYPES, REWARD_DTYPES};
use super::super::{
    Case, CaseData, EagerCase, EagerSequence, Expected, FamilyError, PlanCoverage, ReportInputs, Sweep,
};
use super::super::{OutputShape, ShapeRule};
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference::whiten::grpo as reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;

/// The most rows: five float32 vectors of the padded batch (scores, ids, the selection, two
/// trees) take 80 KiB of UB at 4096, beside the row tiles.
pub const MAX_BATCH: u32 = 4096;
/// The largest row tile (elements per UB pass of a row; a power of two).
pub const ROW_TILE: u32 = 2048;

pub(super) const INPUTS: [&str; 3] = ["token_level_rewards", "response_mask", "index"];

/// Whether `spec` is grpo_advantage's signature (the whiten family's other op is masked_whiten).
pub(super) fn is_grpo(spec: &OpSpec) -> bool {
    spec.inputs.iter().map(|t| t.name.as_str()).eq(INPUTS)
}

/// The row tile of the TilingFunc's `RowTile` (templates/host/grpo_advantage.cpp.j2): the power
/// of two ≥ T, at least 8, at most [`ROW_TILE`]; `grpo_twin` checks the plan's against it.
pub fn row_tile(t: usize) -> usize {
    t.next_power_of_two().clamp(8, ROW_TILE as usize)
}

/// The batch padded to a power of two, at least 8 (the TilingFunc's `PadRows`).
pub fn pad_rows(b: usize) -> usize {
    b.next_power_of_two().max(8)
}

/// The bound's view of the kernel at [B, T].
pub fn bound_plan(b: usize, t: usize) -> reference::GrpoPlan {
    let tile = row_tile(t);
    reference::GrpoPlan {
        tile_depth: tile.trailing_zeros(),
        tiles: t.div_ceil(tile) as u64,
        group_depth: pad_rows(b).trailing_zeros(),
    }
}

// ---- spec --------------------------------------------------------------------------------

pub(super) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let label = "family whiten (grpo_advantage)";
    if spec.outputs.len() != 1 || spec.outputs[0].name != "advantages" {
        r.error(&raw.outputs, "outputs", format!("{label} has one output, `advantages`"));
        return;
    }
    super::check_input_dtypes(
        r,
        raw,
        spec,
        label,
        &[
            (&REWARD_DTYPES, "float16, bfloat16 or float32"),
            (&MASK_DTYPES, "float32 or int8"),
            (&[DType::Int32], "int32"),
        ],
    );
    super::super::check_float32(r, raw.outputs.get_ref(), &spec.outputs, "outputs", 0, label, "");
    let attrs: Vec<(&str, AttrKind)> = spec.attrs.iter().map(|a| (a.name.as_str(), a.kind)).collect();
    if attrs != [("epsilon", AttrKind::Float), ("norm_by_std", AttrKind::Bool)] {
        let at = raw.attrs.first().map_or(&raw.name, |a| &a.name);
        r.error(at, "attrs", format!("{label} takes two attrs, epsilon (float) and norm_by_std (bool)"));
    }
}

// ---- plan --------------------------------------------------------------------------------

pub(super) const FIELDS: &[TilingField] = &[
    TilingField::u32("rows", "B: rows (responses), each with a group id"),
    TilingField::u32("cols", "T: tokens per row"),
    TilingField::u32("tile", "row elements per UB pass (a power of two from T alone)"),
    TilingField::u32("padRows", "B padded to a power of two: the group trees' length"),
    TilingField::u32("cores", "cores used: phase 1 in units of 8 rows, phase 2 row by row"),
    TilingField::u32("normByStd", "1: divide by std + epsilon; 0: subtract the mean only"),
    TilingField::f32("epsilon", "added to the group's std"),
];

/// One mode; UB passes per core: phase 1's rows (units of 8) and phase 2's, T / tile each;
/// uneven: the rows do not split evenly over the cores, or a row's last tile is short.
pub(super) fn plan_coverage(tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
    let f = |n: &str| tiling(n).unwrap_or(0.0);
    let cores = f("cores").max(1.0);
    let tile = f("tile").max(1.0);
    let rows = f("rows");
    let per_row = super::super::passes(f("cols"), tile);
    let phase1 = (super::super::largest_share((rows / 8.0).ceil(), cores) * 8.0).min(rows);
    let phase2 = super::super::largest_share(rows, cores);
    PlanCoverage {
        mode: "two-phase",
        passes: Some((phase1 + phase2) as u64 * per_row),
        uneven: Some(super::super::uneven(rows, cores) || super::super::uneven(f("cols"), tile)),
    }
}

// ---- verification ------------------------------------------------------------------------

/// How a case's rows are grouped, chosen by its seed mod 6 (so a replayed or drawn case has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Groups {
    /// Blocks of 4 in row order (verl's rollouts of a prompt, interleaved), the last shorter.
    Blocks,
    /// Blocks of 5 shuffled over the batch (verl may reorder it).
    Shuffled,
    /// Every row its own group (mean 0, std 1).
    Singletons,
    /// One group of every row.
    One,
    /// Pairs, shuffled.
    Pairs,
    /// Ids drawn in [0, B/3): groups of random sizes, singletons among them, ids left unused.
    Random,
}

/// Every kind, in the order a seed picks them ([`groups`], [`seed_for`]).
const GROUPS: [Groups; 6] =
    [Groups::Blocks, Groups::Shuffled, Groups::Singletons, Groups::One, Groups::Pairs, Groups::Random];

fn groups(seed: u64) -> Groups {
    GROUPS[(seed % GROUPS.len() as u64) as usize]
}

fn shuffle(v: &mut [i64], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

fn group_ids(kind: Groups, b: usize, rng: &mut Rng) -> Vec<i64> {
    let blocks = |n: usize| (0..b).map(|i| (i / n) as i64).collect::<Vec<_>>();
    match kind {
        Groups::Blocks => blocks(4),
        Groups::Shuffled | Groups::Pairs => {
            let mut ids = blocks(if kind == Groups::Pairs { 2 } else { 5 });
            shuffle(&mut ids, rng);
            ids
        }
        Groups::Singletons => (0..b).rev().map(|i| i as i64).collect(),
        Groups::One => vec![(b - 1) as i64; b],
        Groups::Random => (0..b).map(|_| rng.below((b as u64 / 3).max(1)) as i64).collect(),
    }
}

/// `QUICK` and `FULL` rows: (B, T, distribution, the groups' kind, norm_by_std).
type Row = (usize, usize, Distribution, Groups, bool);

/// The quick sweep: B = 1, T = 1, odd sizes, rows of several tiles (T = 4099: 3 tiles of 2048,
/// the last short), the largest batch; every kind of grouping; verl's rewards on the last
/// response token (Outlier here) and equal scores within each group (OneHot here: std 0).
const QUICK: [Row; 12] = [
    (1, 1, Distribution::Uniform5, Groups::Singletons, true),
    (7, 1, Distribution::Uniform5, Groups::Blocks, true),
    (33, 257, Distribution::Uniform5, Groups::Shuffled, true),
    (5, 4099, Distribution::Uniform5, Groups::One, true),
    (64, 100, Distribution::Outlier, Groups::Blocks, true),
    (61, 33, Distribution::Outlier, Groups::Pairs, false),
    (200, 63, Distribution::Uniform5, Groups::Random, false),
    (100, 20, Distribution::NormalLargeMean, Groups::Shuffled, true),
    (48, 17, Distribution::OneHot, Groups::Blocks, true),
    (4096, 3, Distribution::Uniform5, Groups::Random, true),
    (9, 9, Distribution::Zeros, Groups::Pairs, true),
    (50, 40, Distribution::Tiny, Groups::Blocks, true),
];

/// Added in the full sweep: the batch shapes as far as the twin runs them quickly.
const FULL: [Row; 7] = [
    (512, 1025, Distribution::Outlier, Groups::Blocks, true),
    (8, 16384, Distribution::Uniform5, Groups::Pairs, true),
    (2, 32768, Distribution::Uniform5, Groups::One, true),
    (1000, 77, Distribution::Uniform5, Groups::Random, true),
    (4095, 5, Distribution::Outlier, Groups::Shuffled, true),
    (333, 2049, Distribution::NormalLargeMean, Groups::Blocks, false),
    (96, 64, Distribution::OneHot, Groups::Shuffled, true),
];

fn seed_for(i: usize, kind: Groups) -> u64 {
    let k = GROUPS.iter().position(|g| *g == kind).unwrap_or(0);
    9000 + GROUPS.len() as u64 * i as u64 + k as u64
}

pub(super) fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let mut rows = QUICK.to_vec();
    if sweep == Sweep::Full {
        rows.extend(FULL);
    }
    rows.iter()
        .enumerate()
        .map(|(i, &(b, t, dist, kind, norm))| {
            let mut attrs = super::super::default_attrs(spec);
            for (name, v) in attrs.iter_mut() {
                if name == "norm_by_std" {
                    *v = AttrValue::Bool(norm);
                }
            }
            Case {
                shapes: vec![
                    (INPUTS[0].to_string(), vec![b, t]),
                    (INPUTS[1].to_string(), vec![b, t]),
                    (INPUTS[2].to_string(), vec![b]),
                ],
                dist,
                seed: seed_for(i, kind),
                attrs,
            }
        })
        .collect()
}

/// The inputs of a case: group ids by the seed's kind ([`groups`]); verl's response masks
/// (ones up to a drawn length per row); rewards from the distribution, except Outlier: one
/// reward in [−5, 5] on each row's last response token (verl's outcome reward), and OneHot: the
/// same, one value per group (equal scores: std 0).
pub(super) fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    let [(r_name, shape), (m_name, _), (i_name, _)] = &case.shapes[..] else {
        return Err(format!("grpo_advantage case has {} shapes, not 3", case.shapes.len()).into());
    };
    let (b, t) = match shape[..] {
        [b, t] => (b, t),
        _ => return Err(format!("token_level_rewards has shape {shape:?}, not [B, T]").into()),
    };
    let mut rng = Rng::new(derive_seed(case.seed, i_name));
    let ids = if b == 0 { Vec::new() } else { group_ids(groups(case.seed), b, &mut rng) };
    let mut mrng = Rng::new(derive_seed(case.seed, m_name));
    let lens: Vec<usize> = (0..b).map(|_| mrng.below(t as u64 + 1) as usize).collect();
    let mask: Vec<f64> = (0..b * t).map(|k| f64::from(u8::from(k % t < lens[k / t]))).collect();
    let r_dtype = spec.inputs[0].dtypes[column];
    let rewards = match case.dist {
        Distribution::Outlier | Distribution::OneHot => {
            let mut rrng = Rng::new(derive_seed(case.seed, r_name));
            let per_group: Vec<f64> = (0..b).map(|_| rrng.uniform(-5.0, 5.0)).collect();
            let mut v = vec![0.0; b * t];
            for i in 0..b {
                let last = lens[i].max(1) - 1;
                v[i * t + last] = if case.dist == Distribution::OneHot {
                    per_group[ids[i] as usize % b]
                } else {
                    rrng.uniform(-5.0, 5.0)
                };
            }
            HostTensor::from_f64(r_dtype, shape, &v)
        }
        dist => generate(dist, r_dtype, shape, derive_seed(case.seed, r_name)),
    };
    let ids_f: Vec<f64> = ids.iter().map(|&g| g as f64).collect();
    Ok((
        vec![
            (r_name.clone(), rewards),
            (m_name.clone(), HostTensor::from_f64(spec.inputs[1].dtypes[column], shape, &mask)),
            (i_name.clone(), HostTensor::from_f64(DType::Int32, &[b], &ids_f)),
        ],
        case.attrs.clone(),
    ))
}

pub(super) fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let r = input(inputs, spec, 0)?;
    let m = input(inputs, spec, 1)?;
    let ids = input(inputs, spec, 2)?;
    let (b, t) = match r.shape[..] {
        [b, t] => (b, t),
        _ => return Err(format!("token_level_rewards has shape {:?}, not [B, T]", r.shape).into()),
    };
    let ids: Vec<i64> = ids.to_f64().iter().map(|&g| g as i64).collect();
    let a = reference::grpo_advantage(
        &r.to_f64(),
        &m.to_f64(),
        &ids,
        t,
        super::super::attr_f64(attrs, "epsilon")?,
        super::super::attr_bool(attrs, "norm_by_std")?,
        bound_plan(b, t),
    )?;
    Ok(vec![Expected {
        name: spec.outputs[0].name.clone(),
        dtype: DType::Float32,
        shape: r.shape.clone(),
        values: a.values,
        tolerance: super::super::reverse_scan::gates(&a.bound),
    }])
}

/// advantages has token_level_rewards' shape (the host checks the mask's and index's).
pub(super) fn shape_rule(spec: &OpSpec) -> ShapeRule {
    ShapeRule { checks: Vec::new(), outputs: vec![OutputShape::Like { of: spec.inputs[0].name.clone() }] }
}

/// The mask has the rewards' shape, index the rows.
pub(super) fn derived_shape(i: usize, first: &[usize]) -> Vec<usize> {
    if i == 2 {
        first.first().map(|&b| vec![b]).unwrap_or_default()
    } else {
        first.to_vec()
    }
}

/// The report's shapes: gae's PPO batch and long responses, and a large GRPO batch of short
/// responses at the batch bound (4096 × 1024).
pub(super) fn model_shapes() -> Vec<(&'static str, Vec<usize>)> {
    vec![
        ("PPO batch", vec![512, 4096]),
        ("long responses", vec![64, 32768]),
        ("GRPO batch", vec![4096, 1024]),
    ]
}

/// The report's group ids: verl's rollouts, n = 8 per prompt, in row order (uniform int32
/// draws would make ids in [−5, 5]: a handful of groups, and −1 is the kernel's padding id).
pub(super) fn report_inputs(
    spec: &OpSpec,
    column: usize,
    shapes: &[(String, Vec<usize>)],
) -> Option<ReportInputs> {
    let b = *shapes.iter().find(|(n, _)| n == INPUTS[2])?.1.first()?;
    let ids: Vec<i64> = (0..b as i64).map(|i| i / 8).collect();
    let tensor = HostTensor::from_i64(spec.inputs[2].dtypes[column], &[b], &ids);
    Some(ReportInputs { tensors: vec![(2, tensor)], valid_slots: None })
}

/// verl's compute_grpo_outcome_advantage in eager torch: the scores (one sum), then a Python
/// loop: per group torch.stack of its scores, mean and std (3 launches), per row
/// (score − mean) / (std + ε) (3: sub, add, div, in place), then scores.unsqueeze(-1) * mask.
/// Counted with groups of 8 rollouts, verl's usual n (the case has no ids).
pub(super) fn eager_sequence(case: &EagerCase) -> Result<EagerSequence, FamilyError> {
    let mut b = Builder::default();
    let (r, shape) = eager::input(case, 0)?;
    let (m, _) = eager::input(case, 1)?;
    let t = eager::last_dim(shape)?;
    let rows = r.n / t.max(1);
    let col = r.with_n(rows).as_dtype(DType::Float32);
    let one = col.with_n(1);
    let scores = b.op("token_level_rewards.sum(dim=-1)", &[r], col);
    for _ in 0..rows.div_ceil(8) {
        let g = b.op("torch.stack(id2score[idx])", &[col.with_n(8)], col.with_n(8));
        b.op("torch.mean(...)", &[g], one);
        b.op("torch.std(...)", &[g], one);
    }
    for _ in 0..rows {
        let d = b.op("scores[i] - id2mean[index[i]]", &[one, one], one);
        let e = b.op("id2std[index[i]] + epsilon", &[one], one);
        b.op("... / ... (into scores[i])", &[d, e], one);
    }
    b.op("scores.unsqueeze(-1) * response_mask", &[scores, m], r.as_dtype(DType::Float32));
    b.note(
        "verl also reads every score to the host (scores[i] in a Python dict): one sync per row, not counted",
    );
    Ok(b.finish("verl compute_grpo_outcome_advantage (verl.trainer.ppo.core_algos)"))
}
