//! Family whiten: masked whitening over the whole tensor (issue 29's second phase),
//! masked_whiten: values [...] float16, bfloat16 or float32 and a 0/1 response_mask [...] of
//! the same shape, float32 or int8, to whitened [...] float32, verl's `masked_whiten` (the math:
//! `crate::reference::whiten`; attr shift_mean).
//!
//! Kernel (templates/kernel/whiten.cpp.j2): the elements split over the cores (each core a
//! contiguous share). Phase 1: per UB tile of [`TILE`] elements the core sums x·m and m by a
//! pairwise tree, takes the tile's mean, sums (m·(x − tile mean))² by the same tree (two passes
//! over data already in UB: no cancellation of a Σx² − n·mean² form), and joins the tile into its
//! running (count, mean, M2) by Chan's formula; it writes that partial to the GM workspace,
//! SyncAll, and every core joins all partials in core order 0, 1, ... (the same bits on every
//! core). Phase 2 reads the values again and writes (x − mean)·rsqrt(var + 1e-8) (+ mean).
//! The count is not known before the kernel runs, so a mask selecting fewer than 2 elements is not
//! refused by the host: the result is NaN everywhere (the variance is taken as −1, whose rsqrt is
//! NaN); `opgen_torch.rl.masked_whiten` refuses it before the launch.
//!
//! grpo_advantage, GRPO's per-group normalisation on the same building blocks (tree sums,
//! a GM workspace and SyncAll; its own templates), is [`grpo`].
//!
//! Gates (`gates`): the reference's per-element error bound for this evaluation order
//! (`crate::reference::whiten`, with a tree depth of log2 [`TILE`] and a chain of at most
//! 2·ceil(n / TILE) joins: `bound_plan`), the case's largest bound rounded up to 2^k absolute,
//! or 1 float32 ulp.

pub mod grpo;

use super::eager::{self, Builder};
// The values (advantages) and masks come in the dtypes the reverse scans take theirs in.
use super::inputs::{derive_seed, generate, Distribution, Rng};
use super::layout::input;
use super::reverse_scan::{MASK_DTYPES, REWARD_DTYPES as VALUE_DTYPES};
use super::{Case, Expected, Sweep};
use super::{
    CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, PlanReading, Templates,
};
use super::{OutputShape, ShapeRule};
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference::whiten as reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;

/// Elements per UB pass (a power of two: the tree sums halve it down to 8). Fixed, so the error
/// bound's tree depth is known without the plan: 4096 elements, 16 KiB float32 transfers (the
/// report's large-transfer target), 162 KiB of UB with float32 values and mask.
pub const TILE: u32 = 4096;
/// The most cores the TilingFunc uses (the partials' workspace slots; the bound's chain).
pub const MAX_CORES: u32 = 64;

const INPUTS: [&str; 2] = ["values", "response_mask"];

// ---- spec --------------------------------------------------------------------------------

/// Each input's dtypes against its allowed list, in input order (`allowed[i]`: the dtypes of
/// input i and how a message words them), one error per dtype outside it.
pub(super) fn check_input_dtypes(
    r: &mut Reporter,
    raw: &RawSpec,
    spec: &OpSpec,
    label: &str,
    allowed: &[(&[DType], &str)],
) {
    let raw_inputs = raw.inputs.get_ref();
    for (i, (t, (dtypes, want))) in spec.inputs.iter().zip(allowed).enumerate() {
        for (c, x) in t.dtypes.iter().enumerate() {
            if !dtypes.contains(x) {
                r.error(
                    &raw_inputs[i].dtypes.get_ref()[c],
                    &format!("inputs[{i}].dtypes[{c}]"),
                    format!("{label}: `{}` is {want} (found {x})", t.name),
                );
            }
        }
    }
}

/// Inputs (values, response_mask), output (whitened), attr shift_mean (bool), in that order;
/// values float16/bfloat16/float32, the mask float32 or int8, the output float32.
fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let label = "family whiten";
    if grpo::is_grpo(spec) {
        return grpo::check(r, raw, spec);
    }
    if !spec.inputs.iter().map(|t| t.name.as_str()).eq(INPUTS) {
        r.error(
            &raw.inputs,
            "inputs",
            format!(
                "{label} takes inputs (values, response_mask) for masked_whiten or (token_level_rewards, \
                 response_mask, index) for grpo_advantage, in that order"
            ),
        );
        return;
    }
    if spec.outputs.len() != 1 || spec.outputs[0].name != "whitened" {
        r.error(&raw.outputs, "outputs", format!("{label} has one output, `whitened`"));
        return;
    }
    check_input_dtypes(
        r,
        raw,
        spec,
        label,
        &[(&VALUE_DTYPES, "float16, bfloat16 or float32"), (&MASK_DTYPES, "float32 or int8")],
    );
    super::check_float32(r, raw.outputs.get_ref(), &spec.outputs, "outputs", 0, label, "");
    let attrs: Vec<(&str, AttrKind)> = spec.attrs.iter().map(|a| (a.name.as_str(), a.kind)).collect();
    if attrs != [("shift_mean", AttrKind::Bool)] {
        let at = raw.attrs.first().map_or(&raw.name, |a| &a.name);
        r.error(at, "attrs", format!("{label} takes one attr, shift_mean (bool)"));
    }
}

// ---- plan --------------------------------------------------------------------------------

const FIELDS: &[TilingField] = &[
    TilingField::u32("elements", "n: every element of values (the whitening is over all of them)"),
    TilingField::u32("cores", "cores used: each takes whole tiles (the first tiles % cores one more)"),
    TilingField::u32("tile", "elements per UB pass (a power of two)"),
    TilingField::u32("shiftMean", "1: subtract the mean; 0: add it back after scaling"),
];

// ---- verification ------------------------------------------------------------------------

/// Shapes of the quick sweep on 48 cores: one element, odd small ones, then 61 x 4099 = 250039
/// elements: 62 tiles, 2 on 14 cores (4 UB passes: 2 of each phase), 1 on the others, the last
/// one short; 5 x 4099 = 20495: 6 tiles on 6 cores.
const QUICK: [(usize, usize); 5] = [(1, 1), (3, 9), (61, 4099), (5, 4099), (64, 257)];
/// Added in the full sweep: the batch shapes as far as the twin runs them quickly.
const FULL: [(usize, usize); 4] = [(512, 1025), (8, 16384), (2, 32768), (49, 777)];

fn case(spec: &OpSpec, rows: usize, t: usize, dist: Distribution, seed: u64, shift_mean: bool) -> Case {
    let shape = vec![rows, t];
    Case {
        shapes: spec.inputs.iter().map(|a| (a.name.clone(), shape.clone())).collect(),
        dist,
        seed,
        attrs: vec![("shift_mean".to_string(), AttrValue::Bool(shift_mean))],
    }
}

fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let mut shapes = QUICK.to_vec();
    if sweep == Sweep::Full {
        shapes.extend(FULL);
    }
    let mut out = Vec::new();
    for (i, &(n, t)) in shapes.iter().enumerate() {
        out.push(case(spec, n, t, Distribution::Uniform5, 7000 + i as u64, i % 2 == 0));
    }
    // A large mean against the spread (the mean's error dominates); masks with holes and
    // all-masked rows; zeros (var 0: the scale is 1e4); one selected element and none (NaN).
    out.push(case(spec, 41, 3001, Distribution::NormalLargeMean, 7100, true));
    out.push(case(spec, 41, 3001, Distribution::NormalLargeMean, 7101, false));
    out.push(case(spec, 70, 1001, Distribution::Outlier, 7102, true));
    out.push(case(spec, 9, 100, Distribution::Zeros, 7103, true));
    out.push(case(spec, 9, 100, Distribution::OneHot, 7104, true));
    out.push(case(spec, 1, 300, Distribution::Outlier, 7105, false));
    if sweep == Sweep::Full {
        out.push(case(spec, 200, 2600, Distribution::Outlier, 7200, false));
        out.push(case(spec, 64, 4096, Distribution::NormalLargeMean, 7201, true));
        out.push(case(spec, 16, 3000, Distribution::Tiny, 7202, true));
    }
    out
}

/// The values from the case's distribution and verl's response masks (`reverse_scan`'s
/// generator: ones up to a drawn length per row; hostile masks for Outlier, where one row alone
/// is all masked); OneHot: uniform values and one selected element in the whole tensor.
fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    if case.dist != Distribution::OneHot {
        return super::reverse_scan::case_inputs(spec, column, case);
    }
    let (x_name, shape) = &case.shapes[0];
    let x = generate(
        Distribution::Uniform5,
        spec.inputs[0].dtypes[column],
        shape,
        derive_seed(case.seed, x_name),
    );
    let n: usize = shape.iter().product();
    let mut mask = vec![0.0; n];
    if n > 0 {
        mask[Rng::new(derive_seed(case.seed, "one")).below(n as u64) as usize] = 1.0;
    }
    let m = HostTensor::from_f64(spec.inputs[1].dtypes[column], &case.shapes[1].1, &mask);
    Ok((vec![(x_name.clone(), x), (case.shapes[1].0.clone(), m)], case.attrs.clone()))
}

/// The bound's view of the kernel: trees of depth log2(TILE); a chain of at most 2·ceil(n / TILE)
/// joins: a core's tiles, then the cores' partials, each at most the tile count (the TilingFunc
/// gives every core at least a tile).
pub fn bound_plan(n: usize) -> reference::Plan {
    reference::Plan { depth: TILE.trailing_zeros(), merges: 2 * n.div_ceil(TILE as usize) as u64 }
}

fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let x = input(inputs, spec, 0)?;
    let m = input(inputs, spec, 1)?;
    let w = reference::masked_whiten(
        &x.to_f64(),
        &m.to_f64(),
        super::attr_bool(attrs, "shift_mean")?,
        bound_plan(x.numel()),
    )?;
    Ok(vec![Expected {
        name: spec.outputs[0].name.clone(),
        dtype: DType::Float32,
        shape: x.shape.clone(),
        values: w.values,
        tolerance: super::reverse_scan::gates(&w.bound),
    }])
}

// ---- the family --------------------------------------------------------------------------

pub struct Whiten;

impl FamilyOps for Whiten {
    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, spec: &OpSpec) -> &'static [TilingField] {
        if grpo::is_grpo(spec) {
            return grpo::FIELDS;
        }
        FIELDS
    }

    fn templates(&self, spec: &OpSpec) -> Templates {
        if grpo::is_grpo(spec) {
            return Templates {
                kernel: "kernel/grpo_advantage.cpp.j2",
                host: "host/grpo_advantage.cpp.j2",
                checks: Some("host/grpo_advantage.cpp.j2"),
            };
        }
        Templates {
            kernel: "kernel/whiten.cpp.j2",
            host: "host/whiten.cpp.j2",
            checks: Some("host/whiten.cpp.j2"),
        }
    }

    /// `tile` and `max_cores`: [`TILE`] and [`MAX_CORES`], one source for the host, the kernel
    /// and the bound; grpo_advantage's `row_tile` and `max_batch` likewise.
    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        let mut m = serde_json::Map::new();
        if grpo::is_grpo(spec) {
            m.insert("row_tile".into(), grpo::ROW_TILE.into());
            m.insert("max_batch".into(), grpo::MAX_BATCH.into());
            return Ok(m);
        }
        m.insert("tile".into(), TILE.into());
        m.insert("max_cores".into(), MAX_CORES.into());
        Ok(m)
    }

    /// whitened has values' shape (the host checks require the mask's to be the same).
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        if grpo::is_grpo(spec) {
            return Ok(grpo::shape_rule(spec));
        }
        Ok(ShapeRule {
            checks: Vec::new(),
            outputs: vec![OutputShape::Like { of: spec.inputs[0].name.clone() }],
        })
    }

    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        if grpo::is_grpo(spec) {
            return grpo::derived_shape(i, first);
        }
        first.to_vec()
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        if grpo::is_grpo(spec) {
            return grpo::cases(spec, sweep);
        }
        cases(spec, sweep)
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        // A case this family made always has its two shapes; a malformed one panics with why.
        let data = if grpo::is_grpo(spec) {
            grpo::case_inputs(spec, column, case)
        } else {
            case_inputs(spec, column, case)
        };
        Some(data.unwrap_or_else(|e| panic!("{}: {e}", spec.name)))
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        if grpo::is_grpo(spec) {
            return grpo::expected(spec, inputs, attrs);
        }
        expected(spec, inputs, attrs)
    }

    /// The advantages' [B, T] of gae's model shapes (issue 29): verl whitens them right after.
    fn model_shapes(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        if grpo::is_grpo(spec) {
            return grpo::model_shapes();
        }
        super::reverse_scan::advantage_shapes()
    }

    fn read_plan(&self, spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>, _dtype: DType) -> PlanReading {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let rows = if grpo::is_grpo(spec) { format!(", {} rows in UB", f("padRows")) } else { String::new() };
        PlanReading {
            label: format!("{} cores, tiles of {}{rows}", f("cores"), f("tile")),
            two_pass: true,
            transfer_reason: None,
        }
    }

    /// One mode; UB passes per core: the tiles of its share, once per phase; uneven: some core
    /// has fewer tiles, or the last tile is short.
    fn plan_coverage(&self, spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        if grpo::is_grpo(spec) {
            return grpo::plan_coverage(tiling);
        }
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let cores = f("cores").max(1.0);
        let tile = f("tile").max(1.0);
        let tiles = super::passes(f("elements"), tile) as f64;
        PlanCoverage {
            mode: "two-phase",
            passes: Some(2 * super::largest_share(tiles, cores) as u64),
            uneven: Some(super::uneven(tiles, cores) || super::uneven(f("elements"), tile)),
        }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        vec!["two-phase"]
    }

    /// verl's masked_whiten in eager torch: masked_mean (mul, sum, sum, add, div), then
    /// masked_var (sub, pow, mul, sum, div, sub, div, mul), rsqrt and the scaled result.
    /// grpo_advantage's group ids as verl lays them out (masked_whiten: uniform inputs).
    fn report_inputs(
        &self,
        spec: &OpSpec,
        column: usize,
        shapes: &[(String, Vec<usize>)],
    ) -> Option<super::ReportInputs> {
        grpo::is_grpo(spec).then(|| grpo::report_inputs(spec, column, shapes)).flatten()
    }

    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        if grpo::is_grpo(case.spec) {
            return grpo::eager_sequence(case);
        }
        let mut b = Builder::default();
        let (x, _) = eager::input(case, 0)?;
        let (m, _) = eager::input(case, 1)?;
        let one = x.with_n(1);
        let xm = b.op("values * mask", &[x, m], x);
        let s = b.op("(values * mask).sum()", &[xm], one);
        let c = b.op("mask.sum()", &[m], one);
        let c8 = b.op("mask.sum() + 1e-8", &[c], one);
        let mean = b.op("mean = ... / ...", &[s, c8], one);
        let d = b.op("values - mean", &[x, mean], x);
        let d2 = b.op("(values - mean) ** 2", &[d], x);
        let d2m = b.op("... * mask", &[d2, m], x);
        let s2 = b.op("(...).sum()", &[d2m], one);
        let v = b.op("... / (mask.sum() + 1e-8)", &[s2, c8], one);
        let cm1 = b.op("mask_sum - 1", &[c], one);
        let bessel = b.op("mask_sum / (mask_sum - 1)", &[c, cm1], one);
        let var = b.op("variance * bessel", &[v, bessel], one);
        let ve = b.op("var + 1e-8", &[var], one);
        let r = b.op("torch.rsqrt(var + 1e-8)", &[ve], one);
        let d = b.op("values - mean", &[x, mean], x);
        b.op("(values - mean) * torch.rsqrt(...)", &[d, r], x);
        b.note("the shift_mean=False path adds the mean back: one more launch");
        Ok(b.finish("verl masked_whiten (verl.utils.torch_functional)"))
    }
}
