//! Family row_norm_grad: the backward of the row norms, rms_norm_grad (dy, x, rstd, gamma),
//! add_rms_norm_grad (dy, x_sum, rstd, gamma, dx_sum) and, with `[row_norm] norm = "layer"`,
//! layer_norm_grad (dy, x, mean, rstd, gamma). Outputs dx (x's dtype) and dgamma (gamma's
//! shape and dtype), and for LayerNorm dbeta (likewise). `[row_norm] gamma_offset` (the
//! forward's gamma + offset, Gemma's 1 + gamma) enters dx only.
//!
//! dgamma is a sum over every row, i.e. across cores. The kernel sums each of 48 fixed groups of
//! rows (rows split evenly, each group's rows in row order on one core) into a float-float
//! partial in the workspace, waits in SyncAll for every core, then the cores split gamma's
//! columns and each adds its columns' 48 partials in group order (float-float) and rounds once
//! to float32 and then to gamma's dtype. The groups and the order do not depend on the core
//! count, so dgamma is the same bits on every run, core count and SoC for a given shape
//! (tests/it/row_norm_grad.rs runs 48, 40, 7 and 1 cores). dbeta takes the same road beside it.

use super::eager::{input, Builder, T};
use super::inputs::{derive_seed, generate, Distribution};
use super::row_norm::compute_tolerance;
use super::CannBuiltin;
use super::Sharding;
use super::{Case, Expected, Sweep};
use super::{CaseData, FamilyError, FamilyOps, PlanCoverage, PlanReading, Templates};
use super::{EagerCase, EagerSequence, OutputShape, ShapeCheck, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference;
use crate::reference::row_norm::PARTIAL_GROUPS;
use crate::spec::raw::RawSpec;
use crate::spec::SpecTables;
use crate::spec::{AttrValue, FamilyParams, NormKind, OpSpec, Reporter, RowNormGradParams};
use crate::tensor::HostTensor;

/// The forward's epsilon used to make a realistic rstd input for the sweeps (rms_norm's default).
const CASE_EPSILON: f64 = 1e-6;
/// LayerNorm's (torch's layer_norm default).
const LAYER_CASE_EPSILON: f64 = 1e-5;

fn params_of(spec: &OpSpec) -> RowNormGradParams {
    spec.row_norm_grad().cloned().unwrap_or(RowNormGradParams { norm: NormKind::Rms, gamma_offset: 0.0 })
}

fn is_layer(spec: &OpSpec) -> bool {
    params_of(spec).norm == NormKind::Layer
}

/// add_rms_norm_grad has the fifth input, the incoming gradient of x_sum.
fn has_dx_sum(spec: &OpSpec) -> bool {
    !is_layer(spec) && spec.inputs.len() == 5
}

/// Input positions: (mean, rstd, gamma); mean only for LayerNorm.
fn roles(spec: &OpSpec) -> (Option<usize>, usize, usize) {
    if is_layer(spec) {
        (Some(2), 3, 4)
    } else {
        (None, 2, 3)
    }
}

/// `[row_norm] norm` and `gamma_offset`, as the forward spells them; a bad value is reported
/// by [`check`] (and the spec refused), so the params here only need to be well-formed.
fn params(raw: &RawSpec) -> FamilyParams {
    let table = raw.row_norm.as_ref().map(|t| t.get_ref());
    FamilyParams::RowNormGrad(RowNormGradParams {
        norm: table.map_or(NormKind::Rms, |t| t.norm_kind()),
        gamma_offset: table.map_or(0.0, |t| t.gamma_offset_value()),
    })
}

// ---- spec --------------------------------------------------------------------------------

/// The `[row_norm]` table: what this family can build of the forward's parameters.
fn check_table(r: &mut Reporter, raw: &RawSpec) {
    let Some(table) = raw.row_norm.as_ref() else { return };
    let t = table.get_ref();
    if t.fused_residual_add {
        r.error(
            table,
            "row_norm.fused_residual_add",
            "family row_norm_grad takes the residual's gradient as a fifth input (dx_sum), not `fused_residual_add`"
                .to_string(),
        );
    }
    if let Some(norm) = &t.norm {
        if NormKind::parse(norm.get_ref()).is_none() {
            r.error(
                norm,
                "row_norm.norm",
                format!("unknown norm `{}`; family row_norm_grad builds `rms` and `layer`", norm.get_ref()),
            );
        }
    }
    if let Some(offset) = &t.gamma_offset {
        let v = *offset.get_ref();
        // The kernel adds it to gamma in float32: it must be a finite float32 value.
        if !v.is_finite() || v.abs() > f64::from(f32::MAX) || f64::from(v as f32) != v {
            r.error(
                offset,
                "row_norm.gamma_offset",
                format!("gamma_offset {v} is not a finite float32 value"),
            );
        }
    }
}

/// LayerNorm's backward: dy, x, mean, rstd, gamma in; dx, dgamma, dbeta out.
fn check_layer(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) -> bool {
    if spec.inputs.len() != 5 {
        r.error(
            &raw.inputs,
            "inputs",
            format!(
                "family row_norm_grad with norm = \"layer\" takes 5 inputs (dy, x, mean, rstd, gamma), found {}",
                spec.inputs.len()
            ),
        );
        return false;
    }
    if spec.outputs.len() != 3 {
        r.error(
            &raw.outputs,
            "outputs",
            format!(
                "family row_norm_grad with norm = \"layer\" has 3 outputs (dx, dgamma, dbeta), found {}",
                spec.outputs.len()
            ),
        );
        return false;
    }
    true
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    check_table(r, raw);
    let layer = is_layer(spec);
    if layer && !check_layer(r, raw, spec) {
        return;
    }
    if !(layer || spec.inputs.len() == 4 || spec.inputs.len() == 5) {
        r.error(
            &raw.inputs,
            "inputs",
            format!(
                "family row_norm_grad takes 4 inputs (dy, x, rstd, gamma) or 5 (dy, x_sum, rstd, gamma, dx_sum), found {}",
                spec.inputs.len()
            ),
        );
        return;
    }
    if !layer && spec.outputs.len() != 2 {
        r.error(
            &raw.outputs,
            "outputs",
            format!("family row_norm_grad has 2 outputs (dx, dgamma), found {}", spec.outputs.len()),
        );
        return;
    }
    for (c, x) in spec.inputs[1].dtypes.iter().enumerate() {
        if !super::FLOATS.contains(x) {
            r.error(
                &raw.inputs.get_ref()[1].dtypes.get_ref()[c],
                &format!("inputs[1].dtypes[{c}]"),
                format!("family row_norm_grad cannot compute {x}; it supports float16, bfloat16, float32"),
            );
            continue;
        }
        let (mean, rstd, _) = roles(spec);
        for (i, t) in spec.inputs.iter().enumerate() {
            let stat = i == rstd || Some(i) == mean;
            let want = if stat { DType::Float32 } else { *x };
            if t.dtypes[c] != want {
                let role = match (stat, Some(i) == mean) {
                    (true, true) => "mean is the forward's float32 output",
                    (true, false) => "rstd is the forward's float32 output",
                    _ => "it has x's dtype",
                };
                r.error(
                    &raw.inputs.get_ref()[i].dtypes.get_ref()[c],
                    &format!("inputs[{i}].dtypes[{c}]"),
                    format!("`{}` must be {want} in combination {}: {role}", t.name, c + 1),
                );
            }
        }
        for (o, t) in spec.outputs.iter().enumerate() {
            let want = *x;
            if t.dtypes[c] != want {
                let role = if o > 0 { "dgamma and dbeta have gamma's dtype" } else { "dx has x's dtype" };
                r.error(
                    &raw.outputs.get_ref()[o].dtypes.get_ref()[c],
                    &format!("outputs[{o}].dtypes[{c}]"),
                    format!("`{}` must be {want} in combination {}: {role}", t.name, c + 1),
                );
            }
        }
    }
    check_attrs(r, raw, spec);
}

/// The one attr the family takes: `arithmetic` (string, default "float-float" or "float32").
pub const ARITHMETIC_ATTR: &str = "arithmetic";
pub const ARITHMETICS: [&str; 2] = ["float-float", "float32"];
const ARITHMETICS_TEXT: &str = "\"float-float\" or \"float32\"";

fn check_attrs(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    for (i, a) in spec.attrs.iter().enumerate() {
        if i > 0 || a.name != ARITHMETIC_ATTR || a.kind != crate::spec::AttrKind::String {
            r.error(
                &raw.attrs[i].name,
                &format!("attrs[{i}]"),
                format!(
                    "family row_norm_grad takes only the string attr `arithmetic` ({ARITHMETICS_TEXT}) (rstd is an input), found {} attr `{}`",
                    a.kind.name(),
                    a.name
                ),
            );
            continue;
        }
        super::row_norm::check_choice_default(r, raw, i, a, &ARITHMETICS, ARITHMETICS_TEXT);
    }
}

/// How the kernel computes: float-float (error-free products and TwoSum, 1-ULP faithful: the
/// default) or plain float32 vector arithmetic (CANN's RmsNormGrad design; gated by the CANN
/// precision standard, op-semantics.md §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arithmetic {
    FloatFloat,
    Float32,
}

fn has_arithmetic(spec: &OpSpec) -> bool {
    spec.attr(ARITHMETIC_ATTR).is_some()
}

/// The spec's default: float-float unless the spec says "float32".
fn default_arithmetic(spec: &OpSpec) -> Arithmetic {
    match spec.attr(ARITHMETIC_ATTR).and_then(|a| a.default.as_ref()) {
        Some(AttrValue::String(v)) if v == "float32" => Arithmetic::Float32,
        _ => Arithmetic::FloatFloat,
    }
}

pub fn arithmetic_of(spec: &OpSpec, attrs: &[(String, AttrValue)]) -> Result<Arithmetic, FamilyError> {
    match attrs.iter().find(|(n, _)| n == ARITHMETIC_ATTR).map(|(_, v)| v) {
        None => Ok(default_arithmetic(spec)),
        Some(AttrValue::String(v)) if v == "float-float" => Ok(Arithmetic::FloatFloat),
        Some(AttrValue::String(v)) if v == "float32" => Ok(Arithmetic::Float32),
        Some(other) => Err(FamilyError::new(format!(
            "op `{}`: attr arithmetic {other:?} is neither \"float-float\" nor \"float32\"",
            spec.name
        ))),
    }
}

/// Whether `arithmetic = "float32"` computes in plain float32 for inputs of `dtype`: 16-bit
/// only. At float32 the plain arithmetic's error where dx's O(1) terms cancel (~2^-24 of the
/// terms) is over the CANN standard's float32 bars on plain uniform inputs — measured on the
/// quick sweep: add_rms_norm_grad 2048x128 MARE 1.4e-3 (10·T = 1.2e-3), layer_norm_grad rows
/// with a large last element MARE 1.4e-2, and the small-value bar 2^-30 missed by 2^-25 errors
/// in every op — so float32 inputs keep the float-float kernel (the host's PlanPlain is 16-bit
/// only). In 16 bits the one rounding to the output dominates and the standard holds.
pub fn plain_applies(dtype: DType) -> bool {
    dtype != DType::Float32
}

/// Whether the default arithmetic takes mode 5 (exact 16-bit products,
/// kernel/row_norm_grad_exact.j2) for 16-bit rows it holds whole and aligned: RMS norms (with
/// or without dx_sum, which enters the one rounding) without a gamma offset (g = dy·gamma exact).
pub fn exact_applies(spec: &OpSpec) -> bool {
    !is_layer(spec) && params_of(spec).gamma_offset == 0.0
}

/// The attrs of a case or report row that selects `arithmetic`.
fn arithmetic_attrs(value: &str) -> Vec<(String, AttrValue)> {
    vec![(ARITHMETIC_ATTR.to_string(), AttrValue::String(value.to_string()))]
}

// ---- plan and templates ------------------------------------------------------------------

pub const TILING_FIELDS: &[TilingField] = &[
    TilingField::u32(
        "mode",
        "0 whole row per UB pass, 1 several rows per pass, 2 split-D, 3 batched short rows, 4 plain float32 arithmetic (attr arithmetic \"float32\"), 5 exact 16-bit products (the default for 16-bit RMS rows held whole)",
    ),
    TilingField::u32("numRow", "rows: product of x's leading dims"),
    TilingField::u32("numCol", "elements per row: product of gamma's dims"),
    TilingField::u32("numColAlign", "numCol rounded up to 32 bytes of x's dtype"),
    TilingField::u32(
        "groups",
        "dgamma partials (fixed, 48) in the workspace: rows are split evenly into groups",
    ),
    TilingField::u32("groupFactor", "groups per core: groups / block dim"),
    TilingField::u32("groupRemainder", "groups % block dim: cores below this index take one group more"),
    TilingField::u32("rowFactor", "rows per UB pass in modes 0, 1, 3, 4 and 5"),
    TilingField::u32("colFactor", "elements per chunk in mode 2; mode 5: 1 when dx's queue is single (rows of 4096), 2 when dx_sum's is too and gamma stays in T (add_rms_norm_grad's rows of 4096)"),
    TilingField::u32(
        "workFactor",
        "elements the float-float work takes at a time (mode 3: a whole pass, rows rounded up to 8; modes 4 and 5: a pass's float32 work row)",
    ),
    TilingField::u32("finalCols", "dgamma columns per core in the final sum (whole 64-column blocks)"),
    TilingField::u32("finalFactor", "dgamma columns per UB pass of the final sum"),
    TilingField::f32("avgFactor", "1/numCol in float32"),
];

// ---- verification ------------------------------------------------------------------------

/// (x shape, gamma rank). Qwen2-7B hidden 3584 and 4096, Qwen3 q/k-norm rows of 128
/// (tokens × heads: [4096·32, 128] in the full sweep, [64·32, 128] in the quick one), split-D
/// rows (16384 and up in 16-bit), unaligned rows and a multi-dim gamma. Fewer rows than groups
/// (empty groups write zero partials) and more.
fn shapes(sweep: Sweep) -> Vec<(Vec<usize>, usize)> {
    let mut shapes: Vec<(Vec<usize>, usize)> = vec![
        (vec![3, 7], 1),
        (vec![4, 896], 1),
        (vec![17, 4097], 1),
        (vec![8, 3584], 1),
        (vec![8, 4096], 1),
        (vec![2, 16384], 1),
        (vec![1, 32768], 1),
        (vec![64 * 32, 128], 1),
        (vec![100, 3584], 1),
        (vec![50, 16384], 1),
        (vec![2, 3, 4, 8], 2),
    ];
    if sweep == Sweep::Full {
        for hidden in [896, 1536, 2048, 3584, 4096, 5120, 8192, 65536] {
            for tokens in [1, 17, 128] {
                shapes.push((vec![tokens, hidden], 1));
            }
        }
        shapes.push((vec![4096, 3584], 1));
        shapes.push((vec![4096, 4096], 1));
        shapes.push((vec![4096 * 32, 128], 1));
        shapes.push((vec![4096 * 4, 128], 1));
    }
    shapes
}

/// x's shape with the gamma-covered dims set to 1 (the forward's rstd shape).
fn rstd_shape(x: &[usize], gamma_rank: usize) -> Vec<usize> {
    let mut s = x.to_vec();
    let lead = s.len() - gamma_rank;
    s[lead..].fill(1);
    s
}

/// LayerNorm's extra shapes: Qwen3-VL's vision tower (hidden 1152), rows near the largest
/// that modes 0/1 hold at a few rows (16-bit 3996, float32 3269: `opgen plan`) and just past
/// them (split-D).
fn layer_shapes(sweep: Sweep) -> Vec<(Vec<usize>, usize)> {
    let mut shapes = vec![
        (vec![64, 1152], 1),
        (vec![5, 3968], 1),
        (vec![6, 3264], 1),
        (vec![3, 4160], 1),
        (vec![3, 12288], 1),
    ];
    if sweep == Sweep::Full {
        shapes.push((vec![1024, 1152], 1));
        shapes.push((vec![4096, 1152], 1));
    }
    shapes
}

/// The named input shapes of a case whose x has `x`'s shape and gamma its last `gamma_rank`
/// dims (dy and dx_sum as x, mean and rstd as x with gamma's dims 1): the sweep's cases and the
/// property tests' build them here.
pub fn case_shapes(spec: &OpSpec, x: &[usize], gamma_rank: usize) -> Vec<(String, Vec<usize>)> {
    let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let (mean, rstd, gamma_at) = roles(spec);
    let gamma = x[x.len() - gamma_rank..].to_vec();
    let mut shapes = vec![(names[0].to_string(), x.to_vec()), (names[1].to_string(), x.to_vec())];
    if let Some(m) = mean {
        shapes.push((names[m].to_string(), rstd_shape(x, gamma_rank)));
    }
    shapes.push((names[rstd].to_string(), rstd_shape(x, gamma_rank)));
    shapes.push((names[gamma_at].to_string(), gamma));
    if has_dx_sum(spec) {
        shapes.push((names[4].to_string(), x.to_vec()));
    }
    shapes
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let make = |x: &[usize], gamma_rank: usize, dist: Distribution, seed: u64| Case {
        shapes: case_shapes(spec, x, gamma_rank),
        dist,
        seed,
        attrs: Vec::new(),
    };
    let mut all = shapes(sweep);
    if is_layer(spec) {
        all.extend(layer_shapes(sweep));
    }
    let mut out = Vec::new();
    for (i, (x, g)) in all.into_iter().enumerate() {
        out.push(make(&x, g, Distribution::Uniform5, 5000 + i as u64));
    }
    let others: &[Distribution] = match sweep {
        Sweep::Quick => &[Distribution::NormalLargeMean, Distribution::Tiny, Distribution::Zeros],
        Sweep::Full => &[
            Distribution::NormalLargeMean,
            Distribution::Tiny,
            Distribution::Outlier,
            Distribution::Zeros,
            Distribution::NanInf,
        ],
    };
    for (i, dist) in others.iter().enumerate() {
        out.push(make(&[4, 896], 1, *dist, 6000 + i as u64));
        if sweep == Sweep::Full {
            out.push(make(&[3, 16384], 1, *dist, 7000 + i as u64));
            out.push(make(&[256, 128], 1, *dist, 8000 + i as u64));
        }
    }
    if is_layer(spec) {
        // Aimed rows: a large last element (a row's tail left out of either sum, or of the
        // last chunk in split-D, moves the mean by far more than an ULP), one-hot rows (each sum
        // is one element) and a large mean (x - mean must not lose x's low bits), in modes 0/1
        // and split-D.
        let aimed = [Distribution::RowEnds, Distribution::OneHot, Distribution::NormalLargeMean];
        for (i, dist) in aimed.into_iter().enumerate() {
            out.push(make(&[48, 1152], 1, dist, 6100 + i as u64));
            out.push(make(&[2, 16384], 1, dist, 6200 + i as u64));
        }
    }
    // Aimed at the batched short-row mode (3; rows of 16..~256 aligned elements, `opgen plan`:
    // 16 rows/pass at 128 for the RMS grads, 12 for add_rms_norm_grad float32, 8 for LayerNorm,
    // 86 at 16): 1015 rows of 128 give every group 21 rows and the first 7 groups 22, so each
    // group has a full pass and a remainder pass (no pass boundary falls on a group's); a large
    // last element (a row sum that drops or misplaces its tail) and one-hot rows (each row sum
    // is one element: row r's sum applied to row r + 1 shows at once); rows of 16 at 86 rows a
    // pass (the most the UB holds, fold straight to 8 lanes) with a remainder, and rows of 192
    // (three 64-lane chunks, a non-power-of-two fold).
    for (i, dist) in
        [Distribution::Uniform5, Distribution::RowEnds, Distribution::OneHot].into_iter().enumerate()
    {
        out.push(make(&[1015, 128], 1, dist, 6300 + i as u64));
    }
    out.push(make(&[48 * 86 + 29, 16], 1, Distribution::Uniform5, 6310));
    out.push(make(&[48 * 9 + 5, 192], 1, Distribution::Uniform5, 6311));
    // The coverage rule (src/verify/coverage.rs): three or more UB passes on a core, with a
    // remainder group, in the modes the shapes above leave short. 1633 rows of 640: several rows
    // a pass (mode 1; 17 rows at 16 bits, 9 at float32 for rms_norm_grad), 35 rows in a group;
    // 100 rows of 6144: split-D with three rows in the first four groups; 100 rows of 2048:
    // add_rms_norm_grad's float32 mode 0 (one row a pass), three rows in a group.
    out.push(make(&[48 * 34 + 1, 640], 1, Distribution::Uniform5, 6320));
    out.push(make(&[100, 6144], 1, Distribution::Uniform5, 6321));
    out.push(make(&[100, 2048], 1, Distribution::Uniform5, 6322));
    // The 16-bit RMS grads take mode 5 for aligned rows held whole, so modes 0/1 only for
    // unaligned rows: 1633 rows of 650 (16 rows a pass, 35 rows in a group) and 100 rows of
    // 4097 (one row a pass, three rows in the first four groups).
    out.push(make(&[48 * 34 + 1, 650], 1, Distribution::Uniform5, 6323));
    out.push(make(&[100, 4097], 1, Distribution::Uniform5, 6324));
    // Mode 5's tight layouts at Qwen3-8B's hidden size (rows of 4096: dx's queue single;
    // add_rms_norm_grad: dx_sum's too and gamma in T), three passes on the first four groups.
    out.push(make(&[100, 4096], 1, Distribution::Uniform5, 6325));
    // The final sum with more than one piece on a core (finalCols > 2048, so past 96K columns at
    // 48 cores): rows of 100000 give each core 2112 columns, a piece of 2048 and one of 64, so
    // the partials' copy for the next piece (a shorter one) is issued while the last groups of
    // this piece are summed; the last core takes 736 in one piece. Split-D, two rows.
    out.push(make(&[2, 100_000], 1, Distribution::Uniform5, 6326));
    if has_arithmetic(spec) {
        out.extend(float32_cases(spec, &make));
    }
    out
}

/// `arithmetic = "float32"` (the spec's other value): the plain kernel's passes — short rows
/// batched (Qwen3's 128, and a large last element: a row sum that drops its tail or lands on
/// the wrong row shows at once), Qwen2-7B's long rows (3584, 4096), unaligned rows (4097, and 7
/// with fewer rows than groups), and a split-D row (16-bit 16384: the plain path does not hold
/// it whole, the float-float kernel computes it); float32 inputs run the float-float kernel
/// under either value (`plain_applies`). Not here: the one-hot and large-mean rows, where g is
/// nearly parallel to x and dx's two terms cancel — plain float32 fails the CANN standard there
/// (rms_norm_grad f16 one-hot 1015x128: MERE 7.3e-3 against T = 9.8e-4; layer_norm_grad
/// large mean 64x1152: f16 MARE 9.7e-3 and a small value 3.3e-5 off against 2^-16, bf16 a
/// small value 2.2e-5 off), which the attr's documentation says; both stay in the float-float
/// default's sweep above.
/// A case from (x shape, gamma rank, distribution, seed), as `cases` builds them.
type MakeCase<'a> = &'a dyn Fn(&[usize], usize, Distribution, u64) -> Case;

fn float32_cases(spec: &OpSpec, make: MakeCase<'_>) -> Vec<Case> {
    let other = match default_arithmetic(spec) {
        Arithmetic::FloatFloat => "float32",
        Arithmetic::Float32 => "float-float",
    };
    let mut out = vec![
        make(&[64 * 32, 128], 1, Distribution::Uniform5, 6400),
        make(&[1015, 128], 1, Distribution::RowEnds, 6401),
        make(&[100, 3584], 1, Distribution::Uniform5, 6403),
        make(&[8, 4096], 1, Distribution::Uniform5, 6404),
        make(&[17, 4097], 1, Distribution::Uniform5, 6405),
        make(&[3, 7], 1, Distribution::Uniform5, 6406),
        make(&[2, 16384], 1, Distribution::Uniform5, 6407),
    ];
    if is_layer(spec) {
        out.push(make(&[64, 1152], 1, Distribution::Uniform5, 6408));
    }
    for c in &mut out {
        c.attrs = arithmetic_attrs(other);
    }
    out
}

/// dy, x (or x_sum), gamma and dx_sum drawn from the case's distribution; rstd is what the
/// forward writes for that x (f64 rms_norm reference with epsilon 1e-6, rounded to float32), so
/// the mean term cancels as it does in training. LayerNorm: mean and rstd from the f64 row
/// statistics (epsilon 1e-5), rounded to float32 as the forward writes them.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    let dtype = spec.inputs[1].dtypes[column];
    let draw = |i: usize| {
        let (name, shape) = &case.shapes[i];
        (name.clone(), generate(case.dist, dtype, shape, derive_seed(case.seed, name)))
    };
    let (mean_at, rstd_at, gamma_at) = roles(spec);
    let dy = draw(0);
    let x = draw(1);
    let gamma = draw(gamma_at);
    let named = |i: usize, shape: &[usize], v: &[f64]| {
        (case.shapes[i].0.clone(), HostTensor::from_f64(DType::Float32, shape, v))
    };
    let mut inputs = vec![dy];
    if let Some(m) = mean_at {
        let stats = reference::row_norm::layer_norm_stats(&x.1, &gamma.1, LAYER_CASE_EPSILON)?;
        inputs.push(x);
        inputs.push(named(m, &stats.shape, &stats.mean));
        inputs.push(named(rstd_at, &stats.shape, &stats.rstd));
    } else {
        let fwd = reference::row_norm::rms_norm(&x.1, &gamma.1, CASE_EPSILON)?;
        inputs.push(x);
        inputs.push(named(rstd_at, &fwd.rstd_shape, &fwd.rstd));
    }
    inputs.push(gamma);
    if has_dx_sum(spec) {
        inputs.push(draw(4));
    }
    Ok((inputs, case.attrs.clone()))
}

/// dy/x/gamma/dx_sum are shaped from x: rstd (and mean) is x's shape with the last dim 1, gamma
/// x's last.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    let (mean, rstd, gamma) = roles(spec);
    if i == rstd || Some(i) == mean {
        rstd_shape(first, 1.min(first.len()))
    } else if i == gamma {
        first.last().map(|d| vec![*d]).unwrap_or_default()
    } else {
        first.to_vec()
    }
}

pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let t = |i: usize| &inputs[i].1;
    // "float32" is the semantic alternative of CANN's RmsNormGrad (plain float32 arithmetic,
    // cann-kernels-design.md) for 16-bit inputs: gated by the CANN precision standard (MERE < T,
    // MARE < 10 T and the small-value bar per output, op-semantics.md §5.3) instead of the
    // float-float kernel's 1-ULP bars. float32 inputs compute in float-float whatever the attr
    // (plain float32 fails the standard there: see `plain_applies`), so they keep those bars.
    let plain = arithmetic_of(spec, attrs)? == Arithmetic::Float32 && plain_applies(t(1).dtype);
    let offset = params_of(spec).gamma_offset;
    let (sums, x, gamma, dx) = if is_layer(spec) {
        let r = reference::row_norm::layer_norm_grad(t(0), t(1), t(2), t(3), t(4), offset)?;
        (vec![r.dgamma, r.dbeta], t(1), t(4), r.dx)
    } else {
        let dx_sum = has_dx_sum(spec).then(|| t(4));
        let r = reference::row_norm::rms_norm_grad_offset(t(0), t(1), t(2), t(3), dx_sum, offset)?;
        (vec![r.dgamma], t(1), t(3), r.dx)
    };
    let mut out = vec![Expected {
        name: spec.outputs[0].name.clone(),
        dtype: x.dtype,
        shape: x.shape.clone(),
        values: dx,
        tolerance: if plain { plain_dx_tolerance(spec, inputs, offset) } else { dx_tolerance(x.dtype) },
    }];
    for (o, values) in sums.into_iter().enumerate() {
        out.push(Expected {
            name: spec.outputs[1 + o].name.clone(),
            dtype: gamma.dtype,
            shape: gamma.shape.clone(),
            values,
            tolerance: if plain { plain_tolerance(&spec.name, 1 + o) } else { dgamma_tolerance(gamma.dtype) },
        });
    }
    Ok(out)
}

/// dgamma (and dbeta): the kernel's float-float sum (exact products, TwoSum per row and per group: within a
/// few 2^-44 of the sum's magnitude) rounded once to float32, then once to 16 bits. float32: one
/// rounding, 1 ULP with 1 ULP of room for the sum's own error under cancellation; 16-bit: RNE of
/// the exact value except within 2 float32 ulps of a 16-bit midpoint (the double rounding).
/// float32: the bulk gate's measured mean 0 (quick sweep 2026-12-05: every element of every
/// case exact), so its floor (`Tolerance::ulp_bulk`).
fn dgamma_tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::Float16 | DType::BFloat16 => Tolerance::Rne { tie_window: 2 },
        _ => Tolerance::ulp_bulk(2, 0.0),
    }
}

/// dx under float-float: the forward y's bars (16-bit RNE except near ties; float32
/// `Y_F32_ULP`), and float32's bulk gate from its own measurement: mean 0.000 over every quick
/// sweep case (2026-12-05; max 1 ULP), so the floor.
fn dx_tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::Float32 => Tolerance::ulp_bulk(super::row_norm::Y_F32_ULP, 0.0),
        _ => compute_tolerance(dtype),
    }
}

/// dx of `arithmetic = "float32"`: rstd·(dy·γ − x̂·c) (LayerNorm: rstd·(dy·γ − mean(dy·γ) −
/// x̂·c)), c the row's mean of dy·γ·x̂, each term a few float32 roundings from exact. Where the
/// terms cancel, dx has no relative accuracy bound in float32 arithmetic (as LayerNorm's y, see
/// `row_norm::layer_tolerances`): an element near 0 of a random row is off by a few 2^-24 of the
/// terms, tens of 16-bit ULPs of itself (bfloat16 rms_norm_grad [100, 3584] Uniform5: 12 ULP
/// at 7.6e-8, terms ~1). So the bar of [`plain_tolerance`], or within K·2^-24·S
/// (`row_norm::abs_log2`), S = the largest rstd·(|dy·γ| + |mean(dy·γ)| + |x̂|·|c|) over the rows
/// (inputs found by `roles`). A truncating final cast still fails the bias gate, and a wrong
/// term misses by far more than 2^-21·S.
fn plain_dx_tolerance(spec: &OpSpec, inputs: &[(String, HostTensor)], offset: f64) -> Tolerance {
    let layer = is_layer(spec);
    let (mean_at, rstd_at, gamma_at) = roles(spec);
    let dy = inputs[0].1.to_f64();
    let x = inputs[1].1.to_f64();
    let mean = mean_at.map(|m| inputs[m].1.to_f64());
    let (rstd, gamma) = (inputs[rstd_at].1.to_f64(), inputs[gamma_at].1.to_f64());
    let n = gamma.len().max(1);
    let mut scale = 0.0f64;
    for (row, (dys, xs)) in dy.chunks_exact(n).zip(x.chunks_exact(n)).enumerate() {
        let r = rstd[row];
        let m = mean.as_ref().map_or(0.0, |m| m[row]);
        let g = |j: usize| dys[j] * (gamma[j] + offset);
        let xhat = |j: usize| (xs[j] - m) * r;
        let mean_g = (0..n).map(g).sum::<f64>() / n as f64;
        let c = (0..n).map(|j| g(j) * xhat(j)).sum::<f64>() / n as f64;
        for j in 0..n {
            let term = r * (g(j).abs() + if layer { mean_g.abs() } else { 0.0 } + xhat(j).abs() * c.abs());
            if term.is_finite() {
                scale = scale.max(term);
            }
        }
    }
    Tolerance::UlpOrAbs {
        max_ulp: plain_max_ulp(&spec.name, 0),
        abs_log2: super::row_norm::abs_log2(scale),
        mean: None,
    }
}

/// The 16-bit outputs of `arithmetic = "float32"` (mode 4: plain float32, one rounding at the
/// end): within the op/output's max ULP, plus the bias gate (a truncating or floor final cast
/// fails it, each element within the bar or not) and the CANN gate. The bars: the quick sweep's
/// max ULP over every 16-bit case (2026-12-05, `--no-sanitize`; the float-float cases are within
/// 1 ULP, so the plain ones set it) with 2x room. `output`: 0 dx, 1 dgamma, 2 dbeta.
fn plain_tolerance(op: &str, output: usize) -> Tolerance {
    Tolerance::ulp(plain_max_ulp(op, output))
}

/// The bars of [`plain_tolerance`] (dx's also serves [`plain_dx_tolerance`]).
fn plain_max_ulp(op: &str, output: usize) -> u32 {
    match (op, output) {
        ("rms_norm_grad", _) => 2,      // dx 1, dgamma 1
        ("add_rms_norm_grad", 0) => 12, // dx 6
        ("add_rms_norm_grad", _) => 70, // dgamma 35: float32 sums of rows that cancel
        ("layer_norm_grad", 0) => 8,    // dx 4
        _ => 2,                         // layer_norm_grad dgamma 1, dbeta 0
    }
}

// ---- the family --------------------------------------------------------------------------

pub struct RowNormGrad;

impl FamilyOps for RowNormGrad {
    /// The backward takes the forward's parameters, spelt the same: its `[row_norm]` table.
    fn spec_tables(&self) -> SpecTables {
        SpecTables { accepts: &["row_norm"], requires: None }
    }

    fn sharding(&self, _spec: &OpSpec) -> Sharding {
        Sharding::Rows { whole_from_rule: true, reduces: true }
    }

    fn params(&self, raw: &RawSpec) -> FamilyParams {
        params(raw)
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        TILING_FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/row_norm_grad.cpp.j2",
            host: "host/row_norm_grad.cpp.j2",
            checks: Some("host/row_norm_grad_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        let mut m = serde_json::Map::new();
        m.insert("with_dx_sum".into(), serde_json::Value::Bool(has_dx_sum(spec)));
        m.insert("layer".into(), serde_json::Value::Bool(is_layer(spec)));
        // Checked by `check` to be a float32 value, so the f32 literal is exact.
        m.insert("gamma_offset".into(), serde_json::Value::from(params_of(spec).gamma_offset));
        m.insert("partial_groups".into(), serde_json::Value::from(PARTIAL_GROUPS));
        m.insert("has_arithmetic".into(), serde_json::Value::Bool(has_arithmetic(spec)));
        m.insert(
            "default_plain".into(),
            serde_json::Value::Bool(default_arithmetic(spec) == Arithmetic::Float32),
        );
        Ok(m)
    }

    /// dy (and dx_sum) have x's shape, gamma x's trailing dims, rstd x's shape with gamma's
    /// dims 1; dx is shaped like x, dgamma like gamma.
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        let (mean, rstd, gamma) = roles(spec);
        if spec.inputs.len() <= gamma {
            return Err(FamilyError::new(
                "row_norm_grad needs inputs (dy, x, rstd, gamma[, dx_sum]) or (dy, x, mean, rstd, gamma)",
            ));
        }
        let n = |i: usize| spec.inputs[i].name.clone();
        let mut checks = vec![
            ShapeCheck::SameShape { tensor: n(0), like: n(1) },
            ShapeCheck::TrailingDims { tensor: n(gamma), of: n(1) },
        ];
        if has_dx_sum(spec) {
            checks.push(ShapeCheck::SameShape { tensor: n(4), like: n(1) });
        }
        if let Some(m) = mean {
            checks.push(ShapeCheck::SameShape { tensor: n(m), like: n(rstd) });
        }
        let mut outputs = vec![OutputShape::Like { of: n(1) }, OutputShape::Like { of: n(gamma) }];
        if mean.is_some() {
            outputs.push(OutputShape::Like { of: n(gamma) });
        }
        Ok(ShapeRule { checks, outputs })
    }

    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        derived_shape(spec, i, first)
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        // The shapes come from this family's cases, so the forward reference cannot refuse them.
        Some(case_inputs(spec, column, case).expect("row_norm_grad cases have valid shapes"))
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    /// Qwen2-7B's hidden size and Qwen3's q-norm rows (tokens × 32 heads of 128) at 4096 tokens.
    /// LayerNorm: Qwen3-VL's vision tower (hidden 1152) at 4096 patches.
    fn model_shapes(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        if is_layer(spec) {
            return vec![("Qwen3-VL vision", vec![4096, 1152])];
        }
        vec![("Qwen2-7B", vec![4096, 3584]), ("Qwen3 q-norm", vec![4096 * 32, 128])]
    }

    fn cann_builtin(&self, spec: &OpSpec) -> Option<CannBuiltin> {
        // RmsNormGrad takes (dy, x, rstd, gamma) as rms_norm_grad does, LayerNormGradV3 (dy, x,
        // rstd, mean, gamma) the same tensors as layer_norm_grad. ops-nn has no AddRmsNormGrad
        // kernel: add_rms_norm_grad's baseline is RmsNormGrad of x_sum, then the Add of dx_sum.
        Some(if is_layer(spec) {
            CannBuiltin::LayerNormGrad
        } else if has_dx_sum(spec) {
            CannBuiltin::AddRmsNormGrad
        } else {
            CannBuiltin::RmsNormGrad
        })
    }
    /// The plain float32 arithmetic beside the float-float default, at the same shapes.
    fn report_variants(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<(String, AttrValue)>)> {
        match (has_arithmetic(spec), default_arithmetic(spec)) {
            (false, _) => Vec::new(),
            (true, Arithmetic::FloatFloat) => vec![("arithmetic float32", arithmetic_attrs("float32"))],
            (true, Arithmetic::Float32) => vec![("arithmetic float-float", arithmetic_attrs("float-float"))],
        }
    }
    /// The float32 row is the float-float kernel at float32 inputs (`plain_applies`).
    fn report_variant_applies(&self, spec: &OpSpec, dtype: DType, attrs: &[(String, AttrValue)]) -> bool {
        plain_applies(dtype) || arithmetic_of(spec, attrs).is_ok_and(|a| a == default_arithmetic(spec))
    }
    fn work_units(&self, spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        let numel = |i: usize| shapes.get(i).map(|(_, s)| crate::tensor::shape_numel(s) as u64);
        let gamma = numel(roles(spec).2)?;
        (gamma > 0).then(|| numel(1).unwrap_or(0) / gamma)
    }

    fn tiling_value_label(&self, _spec: &OpSpec, field: &str, value: u64) -> Option<&'static str> {
        // The forward's words for the modes the two share (this kernel has no batched mode 3).
        match (field, value) {
            ("mode", 0) => Some("whole row per UB pass"),
            ("mode", 1) => Some("several rows per UB pass"),
            ("mode", 2) => Some("split-D, two passes"),
            ("mode", 4) => Some("plain float32 arithmetic, several rows per UB pass"),
            ("mode", 5) => Some("exact 16-bit products, several rows per UB pass"),
            _ => None,
        }
    }

    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let core_groups = f("groupFactor") + if f("groupRemainder") > 0.0 { 1.0 } else { 0.0 };
        let group_rows = super::largest_share(f("numRow"), f("groups"));
        let (mode, per_group) = match f("mode") as u32 {
            0 => ("0 whole row", super::passes(group_rows, f("rowFactor"))),
            1 => ("1 several rows", super::passes(group_rows, f("rowFactor"))),
            3 => ("3 batched", super::passes(group_rows, f("rowFactor"))),
            4 => ("4 plain", super::passes(group_rows, f("rowFactor"))),
            5 => ("5 exact", super::passes(group_rows, f("rowFactor"))),
            // Split-D: a row's chunk loops run inside its pass.
            _ => ("2 split-D", group_rows as u64),
        };
        PlanCoverage {
            mode,
            passes: Some(core_groups as u64 * per_group),
            uneven: Some(f("groupRemainder") > 0.0 || super::uneven(f("numRow"), f("groups"))),
        }
    }

    fn plan_modes(&self, spec: &OpSpec, column: usize) -> Vec<&'static str> {
        let sixteen = spec.column_dtype(column).size_bytes() == 2;
        // 16-bit RMS rows without an offset take mode 5 when aligned, so never mode 3
        // (aligned short rows); unaligned rows keep modes 0/1.
        let exact = sixteen && exact_applies(spec);
        let mut modes = vec!["0 whole row", "1 several rows", "2 split-D"];
        if !exact {
            modes.push("3 batched");
        }
        // The plain float32 arithmetic is taken for 16-bit inputs only.
        if sixteen && spec.attr(ARITHMETIC_ATTR).is_some() {
            modes.push("4 plain");
        }
        if exact {
            modes.push("5 exact");
        }
        modes
    }

    fn read_plan(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>, _dtype: DType) -> PlanReading {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let mode = f("mode") as u32;
        let label = match mode {
            0 => "1 row/pass".to_string(),
            1 => format!("{} rows/pass", f("rowFactor")),
            3 => format!("batched {} rows/pass", f("rowFactor")),
            4 => format!("float32 {} rows/pass", f("rowFactor")),
            5 => format!("exact {} rows/pass", f("rowFactor")),
            _ => format!("split-D {}", f("colFactor")),
        };
        PlanReading { label, two_pass: mode == 2, transfer_reason: None }
    }

    /// Not LayerNorm: torch's eager backward of F.layer_norm is already one fused kernel
    /// (native_layer_norm_backward), so there is no launch sequence to beat.
    fn fusion_target(&self, spec: &OpSpec) -> bool {
        !is_layer(spec)
    }

    /// What torch autograd runs for HF Qwen2RMSNorm's backward (derivatives.yaml formulas of
    /// each forward op, in reverse order), with the residual add's gradient for add_rms_norm.
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        if is_layer(case.spec) {
            // aten::native_layer_norm_backward: one kernel reads dy, x, mean, rstd and gamma
            // and writes dx, dgamma and dbeta.
            let reads: Vec<T> = (0..5).map(|i| input(case, i).map(|(t, _)| t)).collect::<Result<_, _>>()?;
            b.op("native_layer_norm_backward", &reads, reads[1]);
            b.note(
                "one fused kernel in eager too; its dgamma and dbeta writes (gamma-sized) are not counted",
            );
            return Ok(
                b.finish("torch autograd of F.layer_norm (derivatives.yaml: native_layer_norm_backward)")
            );
        }
        let (dy, _) = input(case, 0)?;
        let (x, _) = input(case, 1)?;
        let (rstd, _) = input(case, 2)?;
        let (w, _) = input(case, 3)?;
        let f32x = x.as_dtype(DType::Float32);
        let rows = T { n: rstd.n, dtype: DType::Float32 };
        let sixteen = x.dtype != DType::Float32;
        // out = weight * h (h = normed.to(dtype)): MulBackward0.
        let dwx = b.op("grad * h (weight's grad)", &[dy, x], x);
        b.op("sum to weight's shape", &[dwx], w);
        let dh = b.op("grad * weight", &[dy, w], x);
        // h = normed.to(input_dtype): ToCopyBackward0.
        let dn = if sixteen { b.op("grad.to(float32)", &[dh], f32x) } else { dh };
        // normed = h32 * rsqrt(var + eps): MulBackward0, both operands.
        let da = b.op("grad * rsqrt", &[dn, rows], f32x);
        let gh = b.op("grad * h32", &[dn, f32x], f32x);
        let dr = b.op("sum(-1, keepdim) to rsqrt's shape", &[gh], rows);
        // rsqrt: RsqrtBackward0 = -0.5 * grad * result^3.
        let p3 = b.op("result.pow(3)", &[rows], rows);
        let t = b.op("grad * result^3", &[dr, p3], rows);
        let dv = b.op("* -0.5", &[t], rows);
        // mean(-1): MeanBackward1 = grad.expand(shape) / n.
        let dsq = b.op("grad.expand / n", &[dv], f32x);
        // pow(2): PowBackward0 = grad * 2 * h32^1.
        let p1 = b.op("h32.pow(1)", &[f32x], f32x);
        let p1x2 = b.op("2 * h32", &[p1], f32x);
        let db = b.op("grad * 2 * h32", &[dsq, p1x2], f32x);
        let dh32 = b.op("accumulate the two grads of h32", &[da, db], f32x);
        let dx = if sixteen { b.op("grad.to(input_dtype)", &[dh32], x) } else { dh32 };
        if has_dx_sum(case.spec) {
            let (ds, _) = input(case, 4)?;
            b.op("accumulate the grad of the residual sum", &[dx, ds], x);
            b.note("both residual inputs get the same gradient tensor (AddBackward0: no copy)");
        }
        b.note(
            "the fused op finishes dgamma in the kernel too: 48 row-group partials, SyncAll, a column split",
        );
        Ok(b.finish("torch autograd of HF Qwen2RMSNorm (derivatives.yaml: mul, _to_copy, rsqrt, mean, pow)"))
    }
}
