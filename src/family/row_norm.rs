//! Family row_norm: rms_norm and add_rms_norm (fused residual add). Rows over the vector
//! cores; whole-row, multi-row and split-D modes chosen by the generated TilingFunc.

use super::eager::{input, last_dim, Builder, T};
use super::{
    attr_f64, default_attrs, CaseData, FamilyError, FamilyOps, PlanReading, ReportInputs, Templates,
};
use super::{Case, Expected, Sweep};
use super::{EagerCase, EagerSequence, OutputShape, ShapeCheck, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::Distribution;
use crate::plan::TilingField;
use crate::reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, FamilyParams, OpSpec, Reporter, RowNormParams, TensorArg};
use crate::tensor::{round_to_dtype, HostTensor};

// ---- spec --------------------------------------------------------------------------------

pub(crate) fn params(raw: &RawSpec) -> FamilyParams {
    let fused = raw.row_norm.as_ref().is_some_and(|p| p.get_ref().fused_residual_add);
    FamilyParams::RowNorm(RowNormParams { fused_residual_add: fused })
}

fn is_fused(spec: &OpSpec) -> bool {
    spec.row_norm().is_some_and(|p| p.fused_residual_add)
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let fused = is_fused(spec);
    let (want_inputs, want_outputs) =
        if fused { ("(x1, x2, gamma)", "(y, rstd, x_sum)") } else { ("(x, gamma)", "(y, rstd)") };
    let n_in = if fused { 3 } else { 2 };
    let n_out = if fused { 3 } else { 2 };
    if spec.inputs.len() != n_in {
        r.error(
            &raw.inputs,
            "inputs",
            format!(
                "family row_norm{} takes {n_in} inputs {want_inputs}, found {}",
                fused_note(fused),
                spec.inputs.len()
            ),
        );
        return;
    }
    if spec.outputs.len() != n_out {
        r.error(
            &raw.outputs,
            "outputs",
            format!(
                "family row_norm{} has {n_out} outputs {want_outputs}, found {}",
                fused_note(fused),
                spec.outputs.len()
            ),
        );
        return;
    }
    let valid =
        super::check_inputs_share_a_float(r, raw, spec, "row_norm", "mixed-dtype row_norm is not supported");
    for (c, x) in valid {
        for (o, t) in spec.outputs.iter().enumerate() {
            let want = if o == 1 { DType::Float32 } else { x };
            if t.dtypes[c] != want {
                let span = &raw.outputs.get_ref()[o].dtypes.get_ref()[c];
                let role = if o == 1 {
                    "rstd is always float32".to_string()
                } else {
                    format!("`{}` has x's dtype", t.name)
                };
                r.error(
                    span,
                    &format!("outputs[{o}].dtypes[{c}]"),
                    format!("must be {want} in combination {}: {role}", c + 1),
                );
            }
        }
    }
    let eps_ok = |eps: &crate::spec::Attr| eps.kind == crate::spec::AttrKind::Float;
    match spec.attrs.as_slice() {
        [eps] | [eps, _] if eps_ok(eps) => {
            if let Some(v) = eps.default.as_ref().and_then(|v| v.as_f64()) {
                if v < 0.0 {
                    r.error(
                        raw.attrs[0].default.as_ref().expect("default present"),
                        "attrs[0].default",
                        format!("epsilon default {v} must not be negative"),
                    );
                }
            }
            if let Some(rounding) = spec.attrs.get(1) {
                check_rounding_attr(r, raw, 1, rounding, "row_norm");
            }
        }
        _ => {
            let span = raw.attrs.first().map(|a| &a.name);
            let message = format!(
                "family row_norm takes the float attr epsilon, optionally followed by the string attr `rounding` ({})",
                ROUNDINGS_TEXT
            );
            match span {
                Some(s) => r.error(s, "attrs", message),
                None => r.error(&raw.name, "attrs", message),
            }
        }
    }
}

/// The values of the `rounding` attr (row_norm and elementwise): `once` rounds the float32
/// result to the output dtype once; `hf` also rounds where HF transformers' eager code rounds
/// to the 16-bit dtype (Qwen2RMSNorm's `hidden.to(input_dtype)` before `weight *`; an
/// elementwise body's `rne(...)` points). For float32 tensors both are the same arithmetic.
pub const ROUNDINGS: [&str; 2] = ["once", "hf"];
const ROUNDINGS_TEXT: &str = "\"once\" or \"hf\"";

/// Checks attr `i` is the string attr `rounding` with a known default (file:line:column).
pub(crate) fn check_rounding_attr(
    r: &mut Reporter,
    raw: &RawSpec,
    i: usize,
    a: &crate::spec::Attr,
    family: &str,
) {
    if a.name != "rounding" || a.kind != crate::spec::AttrKind::String {
        r.error(
            &raw.attrs[i].name,
            &format!("attrs[{i}]"),
            format!(
                "family {family} takes a string attr `rounding` ({ROUNDINGS_TEXT}) here, found {} attr `{}`",
                a.kind.name(),
                a.name
            ),
        );
        return;
    }
    match &a.default {
        Some(AttrValue::String(v)) if ROUNDINGS.contains(&v.as_str()) => {}
        Some(other) => {
            let shown = match other {
                AttrValue::String(v) => format!("`{v}`"),
                v => format!("{v:?}"),
            };
            r.error(
                raw.attrs[i].default.as_ref().expect("default present"),
                &format!("attrs[{i}].default"),
                format!("rounding {shown} is not supported: use {ROUNDINGS_TEXT}"),
            )
        }
        None => r.error(
            &raw.attrs[i].name,
            &format!("attrs[{i}].default"),
            format!("the rounding attr needs a default ({ROUNDINGS_TEXT})"),
        ),
    }
}

pub use crate::reference::row_norm::Rounding;

/// A spec without the attr keeps the family's fixed order: once for rms_norm (CANN's RmsNorm),
/// hf for the fused residual add (CANN's AddRmsNorm).
pub fn default_rounding(spec: &OpSpec) -> Rounding {
    if is_fused(spec) {
        Rounding::Hf
    } else {
        Rounding::Once
    }
}

/// The rounding of a case (its `rounding` attr, else the family default).
pub fn rounding_of(spec: &OpSpec, attrs: &[(String, AttrValue)]) -> Result<Rounding, FamilyError> {
    match attrs.iter().find(|(n, _)| n == "rounding").map(|(_, v)| v) {
        None => Ok(default_rounding(spec)),
        Some(AttrValue::String(v)) if v == "once" => Ok(Rounding::Once),
        Some(AttrValue::String(v)) if v == "hf" => Ok(Rounding::Hf),
        Some(other) => Err(FamilyError::new(format!(
            "op `{}`: attr rounding {other:?} is neither \"once\" nor \"hf\"",
            spec.name
        ))),
    }
}

fn fused_note(fused: bool) -> &'static str {
    if fused {
        " with fused_residual_add"
    } else {
        ""
    }
}

// ---- plan and templates ------------------------------------------------------------------

/// The tiling-data layout: the generated TilingFunc fills it, the kernel reads it, `opgen
/// plan` names the fields.
pub const TILING_FIELDS: &[TilingField] = &[
    TilingField::u32(
        "mode",
        "0 whole row per UB pass, 1 several rows per pass, 2 split-D two-pass, 3 batched short rows (one vector instruction per step for the pass)",
    ),
    TilingField::u32("numRow", "rows: product of x's leading dims"),
    TilingField::u32("numCol", "elements per row: product of gamma's dims"),
    TilingField::u32("numColAlign", "numCol rounded up to 32 bytes of x's dtype"),
    TilingField::u32("blockFactor", "rows per core: numRow / block dim"),
    TilingField::u32("blockRemainder", "numRow % block dim: cores below this index take one row more"),
    TilingField::u32("rowFactor", "rows per UB pass in modes 0, 1 and 3"),
    TilingField::u32("subRows", "modes 0/1/3: rows per float32 sub-tile of a pass (<= rowFactor; 3: = rowFactor)"),
    TilingField::u32("colFactor", "elements per chunk in mode 2"),
    TilingField::u32("gammaResident", "mode 2: 1 when gamma stays in UB for every row"),
    TilingField::u32("rowResident", "mode 2: 1 when the row (x, or add's sum) stays in UB for pass 2"),
    TilingField::f32("epsilon", "added to mean(x^2) before the square root"),
    TilingField::f32("avgFactor", "1/numCol in float32"),
    TilingField::u32(
        "roundHf",
        "attr rounding: 0 once (y = RNE(x*rstd*gamma), mean = sum*avgFactor), 1 hf (y = RNE(RNE(x*rstd)*gamma), mean = sum/numCol, as HF Qwen2RMSNorm)",
    ),
];

pub fn template_extras(spec: &OpSpec) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("fused".into(), serde_json::Value::Bool(is_fused(spec)));
    m.insert("gamma".into(), serde_json::to_value(spec.inputs.last()).expect("plain data"));
    // The host reads attr 1 when the spec declares `rounding`; otherwise the family default.
    m.insert("has_rounding".into(), serde_json::Value::Bool(spec.attrs.len() > 1));
    m.insert("default_round_hf".into(), serde_json::Value::Bool(default_rounding(spec) == Rounding::Hf));
    m
}

// ---- verification ------------------------------------------------------------------------

/// (x shape, gamma rank): rows × hidden, including unaligned, one-element, split-D (16384,
/// 32768, 65536 in 16-bit) and multi-dim gamma shapes. On the 48 cores of the default SoC,
/// 100x3584 gives cores more rows than fit one pass, so the float32 work runs in sub-tiles of
/// the pass (16-bit), and 50x16384 gives two cores two split-D rows each (the resident row and
/// gamma reused across rows); 64x128 spreads 64 rows over all 48 cores.
fn shapes(sweep: Sweep) -> Vec<(Vec<usize>, usize)> {
    let mut shapes: Vec<(Vec<usize>, usize)> = vec![
        (vec![1, 1], 1),
        (vec![3, 7], 1),
        (vec![4, 896], 1),
        (vec![17, 4097], 1),
        (vec![8, 5120], 1),
        (vec![2, 16384], 1),
        (vec![1, 32768], 1),
        (vec![1, 65536], 1),
        (vec![64, 128], 1),
        (vec![1000, 64], 1),
        (vec![2, 3, 4, 8], 2),
    ];
    if sweep == Sweep::Full {
        for hidden in [1, 7, 896, 1536, 2048, 3584, 4096, 4097, 5120, 8192, 16384] {
            for tokens in [1, 3, 17, 128] {
                shapes.push((vec![tokens, hidden], 1));
            }
        }
        for hidden in [896, 3584, 4096] {
            shapes.push((vec![4096, hidden], 1));
        }
        shapes.push((vec![2, 7, 3, 5, 2, 9], 3));
    }
    // Appended after the full sweep's shapes so the seeds (1000 + index) of every other case stay.
    shapes.push((vec![100, 3584], 1));
    shapes.push((vec![50, 16384], 1));
    shapes
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let attrs = default_attrs(spec);
    let make = |x: &[usize], gamma_rank: usize, dist: Distribution, seed: u64| {
        let gamma = x[x.len() - gamma_rank..].to_vec();
        let mut shapes = vec![(names[0].to_string(), x.to_vec())];
        if is_fused(spec) {
            shapes.push((names[1].to_string(), x.to_vec()));
        }
        shapes.push((names[names.len() - 1].to_string(), gamma));
        Case { shapes, dist, seed, attrs: attrs.clone() }
    };
    let mut out = Vec::new();
    for (i, (x, g)) in shapes(sweep).into_iter().enumerate() {
        out.push(make(&x, g, Distribution::Uniform5, 1000 + i as u64));
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
        out.push(make(&[4, 896], 1, *dist, 2000 + i as u64));
        if sweep == Sweep::Full {
            out.push(make(&[3, 16384], 1, *dist, 3000 + i as u64));
            out.push(make(&[33, 4097], 1, *dist, 4000 + i as u64));
        }
    }
    for (i, (x, dist)) in aimed_cases().into_iter().enumerate() {
        out.push(make(&x, 1, dist, 7000 + i as u64));
    }
    // The other rounding (the spec's default is the rest): one case per tiling mode and the
    // split-D paths, so both branches of every pass the kernel has are run.
    if let Some(other) = other_rounding(spec) {
        let flipped = [
            (vec![4, 896], Distribution::Uniform5),
            (vec![3, 7], Distribution::Uniform5),
            (vec![1000, 64], Distribution::Uniform5),
            (vec![3, 8192], Distribution::RowEnds),
            (vec![96, 4800], Distribution::Uniform5),
            (vec![2, 16384], Distribution::Uniform5),
            (vec![2, 98304], Distribution::Uniform5),
            (vec![4, 896], Distribution::NormalLargeMean),
            (vec![9637, 128], Distribution::RowEnds),
            (vec![500, 200], Distribution::Uniform5),
        ];
        for (i, (x, dist)) in flipped.into_iter().enumerate() {
            let mut case = make(&x, 1, dist, 8000 + i as u64);
            case.attrs.retain(|(n, _)| n != "rounding");
            case.attrs.push(("rounding".into(), AttrValue::String(other.into())));
            out.push(case);
        }
    }
    out
}

/// The rounding the spec's default is not, when the spec declares the attr.
fn other_rounding(spec: &OpSpec) -> Option<&'static str> {
    let a = spec.attrs.iter().find(|a| a.name == "rounding")?;
    match &a.default {
        Some(AttrValue::String(v)) if v == "hf" => Some("once"),
        _ => Some("hf"),
    }
}

/// Cases aimed at positions and at UB capacity (both sweeps). Row ends carry ±64 (RowEnds), so
/// a sum that leaves out a row's, a chunk's, a core's or a pass's last element is far off; a
/// shape per tiling mode nearly fills the 184 KiB UB budget, so a buffer planned a little too
/// large overflows the 192 KiB UB (by the buffer sizes of the kernel's InitBuffer calls, not a
/// twin measurement: rms_norm f16 3x8192 mode 0 ~176 KiB, 96x4800 mode 1 with 2 rows a pass
/// ~178 KiB; float32 3x7000 mode 0 ~164 KiB; the rms_norm-work-16k mutant, +16 KiB, dies on
/// them); split-D with the row resident
/// (2x16384) and streamed in 16-bit (2x98304: 192 KiB of x per row, more than UB); one-hot rows.
///
/// The batched short-row mode (3, rows of <= 512): short rows with a large last element
/// (300x128: 6-7 rows a core, split into two passes); rows that straddle passes with a
/// remainder pass and pass sizes that are not a multiple of 8 (9637x128: 201 rows a core, three
/// passes of 67); one-hot rows; the most rows per pass (24480x8: 510 rows a core, two passes of
/// the 255-row limit); a pass limited by UB (2200x512: 46 rows a core, two of 23); chunk tails of
/// 8 and 1 lanes after full 64-lane chunks (500x200, 777x129).
fn aimed_cases() -> Vec<(Vec<usize>, Distribution)> {
    vec![
        (vec![3, 8192], Distribution::RowEnds),
        (vec![96, 4800], Distribution::RowEnds),
        (vec![3, 7000], Distribution::RowEnds),
        (vec![2, 16384], Distribution::RowEnds),
        (vec![2, 98304], Distribution::RowEnds),
        (vec![5, 1000], Distribution::OneHot),
        (vec![3, 8192], Distribution::OneHot),
        (vec![300, 128], Distribution::RowEnds),
        (vec![9637, 128], Distribution::RowEnds),
        (vec![5000, 128], Distribution::OneHot),
        (vec![24480, 8], Distribution::RowEnds),
        (vec![2200, 512], Distribution::RowEnds),
        (vec![500, 200], Distribution::RowEnds),
        (vec![777, 129], Distribution::OneHot),
    ]
}

/// The residual input is shaped like x; gamma covers x's last dim.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    if i + 1 == spec.inputs.len() {
        first.last().map(|d| vec![*d]).unwrap_or_default()
    } else {
        first.to_vec()
    }
}

/// y of the row norms: 16-bit exactly RNE except near ties, float32 within `Y_F32_ULP`.
///
/// The tie window: y = x·rstd·gamma in float32, where rstd carries the reduction's error (the
/// full sweep measures rstd within 5 float32 ULP, i.e. ≤ 10 units of 2^-24 relative) and the two
/// products one rounding each (≤ 1 unit each): ≤ 12 units; the window is 16 (the full sweep's
/// largest near-tie distance: 4.5).
pub(crate) fn compute_tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::Float16 | DType::BFloat16 => Tolerance::Rne { tie_window: 16 },
        _ => Tolerance::Ulp { max_ulp: Y_F32_ULP },
    }
}

/// float32 y: the full sweep's max ULP (2026-12-01, 76 cases per dtype: rms_norm 5,
/// add_rms_norm 6) with 2x room; float32 arithmetic of x·rstd·gamma after a float32 sum of
/// squares (tree per repeat, repeats in order).
const Y_F32_ULP: u32 = 12;

/// rstd (float32 in every combination): the full sweep's max ULP (rms_norm 3, add_rms_norm 5)
/// with 2x room. The sum of squares in float32 over up to 16384 elements, ·1/n, + eps, sqrt,
/// 1/x: the relative error of the sum (a few 2^-24 for the tree order) halves through the
/// square root.
const RSTD_ULP: u32 = 10;

/// Checked by name: rms_norm against npu_rms_norm's math, add_rms_norm against AddRmsNorm's.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let out = |i: usize| spec.outputs[i].name.clone();
    let eps = attr_f64(attrs, "epsilon")?;
    let rounding = rounding_of(spec, attrs)?;
    match spec.name.as_str() {
        "rms_norm" => {
            let (x, gamma) = (&inputs[0].1, &inputs[1].1);
            let r = reference::row_norm::rms_norm_rounded(x, gamma, eps, rounding)?;
            Ok(vec![
                Expected {
                    name: out(0),
                    dtype: x.dtype,
                    shape: x.shape.clone(),
                    values: r.y,
                    tolerance: compute_tolerance(x.dtype),
                },
                Expected {
                    name: out(1),
                    dtype: DType::Float32,
                    shape: r.rstd_shape,
                    values: r.rstd,
                    tolerance: Tolerance::Ulp { max_ulp: RSTD_ULP },
                },
            ])
        }
        "add_rms_norm" => {
            let (x1, x2, gamma) = (&inputs[0].1, &inputs[1].1, &inputs[2].1);
            let r = reference::row_norm::add_rms_norm_rounded(x1, x2, gamma, eps, rounding)?;
            Ok(vec![
                Expected {
                    name: out(0),
                    dtype: x1.dtype,
                    shape: x1.shape.clone(),
                    values: r.y,
                    tolerance: compute_tolerance(x1.dtype),
                },
                Expected {
                    name: out(1),
                    dtype: DType::Float32,
                    shape: r.rstd_shape,
                    values: r.rstd,
                    tolerance: Tolerance::Ulp { max_ulp: RSTD_ULP },
                },
                Expected {
                    name: out(2),
                    dtype: x1.dtype,
                    shape: x1.shape.clone(),
                    values: r.x_sum,
                    // x1 + x2 of two 16-bit values is exact in float32: one rounding,
                    // decidable, so no tie window.
                    tolerance: Tolerance::Rne { tie_window: 0 },
                },
            ])
        }
        other => Err(FamilyError::new(format!(
            "no reference for row_norm op `{other}`: catalogue ops are checked against src/reference"
        ))),
    }
}

/// y, 16-bit, `rounding = "hf"` (both ops): where m = x·rstd (add_rms_norm: s·rstd) is within
/// float32 error of a 16-bit rounding boundary, y may also be (the other rounding of m)·gamma.
/// The window is 8 float32 ulps of m (the kernel's rstd carries a few ulps of reduction error),
/// far below one 16-bit ulp.
pub fn alternates(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    output: &str,
) -> Result<Vec<f64>, FamilyError> {
    if output != spec.outputs[0].name || rounding_of(spec, attrs)? != Rounding::Hf {
        return Ok(Vec::new());
    }
    let gamma = &inputs[inputs.len() - 1].1;
    let dtype = inputs[0].1.dtype;
    if !matches!(dtype, DType::Float16 | DType::BFloat16) {
        return Ok(Vec::new());
    }
    let eps = attr_f64(attrs, "epsilon")?;
    // The row values the kernel normalises (x, or the rounded sum) and their rstd, in f64.
    let (values, rstd) = if is_fused(spec) {
        let (x1, x2) = (&inputs[0].1, &inputs[1].1);
        let r = reference::row_norm::add_rms_norm_rounded(x1, x2, gamma, eps, Rounding::Hf)?;
        (r.x_sum, r.rstd)
    } else {
        let x = &inputs[0].1;
        let r = reference::row_norm::rms_norm_rounded(x, gamma, eps, Rounding::Hf)?;
        (x.to_f64(), r.rstd)
    };
    let n = gamma.numel();
    let g = gamma.to_f64();
    let window = 8.0 * f64::from(f32::EPSILON) / 2.0;
    Ok(values
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let m = s * rstd[i / n];
            let rounded = round_to_dtype(dtype, m);
            // The neighbour on m's side of `rounded`, and the boundary between them.
            let step = if m >= rounded { next_up(dtype, rounded) } else { next_down(dtype, rounded) };
            let boundary = (rounded + step) / 2.0;
            if m.is_finite() && (m - boundary).abs() <= window * m.abs() {
                step * g[i % n]
            } else {
                f64::NAN
            }
        })
        .collect())
}

/// The next representable value of `dtype` above / below `v` (finite `v`).
fn next_up(dtype: DType, v: f64) -> f64 {
    neighbour(dtype, v, 1.0)
}

fn next_down(dtype: DType, v: f64) -> f64 {
    neighbour(dtype, v, -1.0)
}

fn neighbour(dtype: DType, v: f64, direction: f64) -> f64 {
    // One ulp of `dtype` at v: 2^(exponent - mantissa bits), halved just below a power of two
    // when stepping down.
    let mantissa_bits = if dtype == DType::Float16 { 10 } else { 7 };
    let min_exp = if dtype == DType::Float16 { -14 } else { -126 };
    let a = v.abs();
    let mut e = if a == 0.0 { min_exp } else { (a.log2().floor() as i32).max(min_exp) };
    if direction * v.signum() < 0.0 && a == 2f64.powi(e) && e > min_exp {
        e -= 1;
    }
    v + direction * 2f64.powi(e - mantissa_bits)
}

// ---- the family --------------------------------------------------------------------------

pub struct RowNorm;

impl FamilyOps for RowNorm {
    fn params(&self, raw: &RawSpec) -> FamilyParams {
        params(raw)
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn derived_ops(&self, _spec: &OpSpec) -> Vec<OpSpec> {
        Vec::new()
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        TILING_FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates { kernel: "kernel/row_norm.cpp.j2", host: "host/row_norm.cpp.j2" }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        Ok(template_extras(spec))
    }

    /// Inputs (x[, x2], gamma), outputs (y, rstd[, x_sum]). gamma covers x's trailing dims; the
    /// residual has x's shape; y and x_sum are shaped like x; rstd is x's shape with the
    /// gamma-covered dims set to 1 (rank preserved, as torch_npu's npu_rms_norm).
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        let name = |ts: &[TensorArg], i: usize| ts.get(i).map(|t| t.name.clone());
        let (x, gamma) = match (name(&spec.inputs, 0), spec.inputs.last().map(|t| t.name.clone())) {
            (Some(x), Some(g)) if spec.inputs.len() >= 2 => (x, g),
            _ => return Err(FamilyError::new("row_norm needs inputs (x, [residual,] gamma)")),
        };
        let mut checks = Vec::new();
        for t in &spec.inputs[1..spec.inputs.len() - 1] {
            checks.push(ShapeCheck::SameShape { tensor: t.name.clone(), like: x.clone() });
        }
        checks.push(ShapeCheck::TrailingDims { tensor: gamma.clone(), of: x.clone() });
        let outputs = (0..spec.outputs.len())
            .map(|i| match i {
                1 => OutputShape::TrailingOnes { of: x.clone(), count_of: gamma.clone() },
                _ => OutputShape::Like { of: x.clone() },
            })
            .collect();
        Ok(ShapeRule { checks, outputs })
    }

    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        derived_shape(spec, i, first)
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn case_inputs(&self, _spec: &OpSpec, _column: usize, _case: &Case) -> Option<CaseData> {
        None
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    fn alternates(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
        output: &str,
    ) -> Result<Vec<f64>, FamilyError> {
        alternates(spec, inputs, attrs, output)
    }

    /// Qwen2-7B's and Qwen3-8B's hidden sizes at 4096 tokens; for rms_norm also Qwen3-8B's
    /// q_norm (RMSNorm over head_dim 128 of every (token, head), 32 heads; k_norm is the same
    /// row structure at a quarter of the rows).
    fn model_shapes(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        let mut out = vec![("Qwen2-7B", vec![4096, 3584]), ("Qwen3-8B", vec![4096, 4096])];
        if spec.name == "rms_norm" {
            out.push(("Qwen3 q-norm", vec![4096 * 32, 128]));
        }
        out
    }

    /// Rows: x's elements / gamma's.
    fn work_units(&self, spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        let numel = |i: usize| shapes.get(i).map(|(_, s)| crate::tensor::shape_numel(s) as u64);
        let gamma = numel(spec.inputs.len() - 1)?;
        (gamma > 0).then(|| numel(0).unwrap_or(0) / gamma)
    }

    fn read_plan(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>, dtype: DType) -> PlanReading {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let mode = f("mode") as u32;
        let resident = if f("rowResident") != 0.0 { ", next to the resident row" } else { "" };
        let (label, transfer_reason) = match mode {
            0 | 1 | 3 => (
                match mode {
                    0 => "1 row/pass".to_string(),
                    1 => format!("{} rows/pass", f("rowFactor")),
                    _ => format!("batched {} rows/pass", f("rowFactor")),
                },
                format!(
                    ": the UB plan fits {} row(s) of {:.1} KiB per pass (double-buffered T streams per row + float32 work of {} row(s))",
                    f("rowFactor"),
                    f("numCol") * dtype.size_bytes() as f64 / 1024.0,
                    f("subRows")
                ),
            ),
            _ => (
                format!(
                    "split-D {}{}{}",
                    f("colFactor"),
                    if f("rowResident") != 0.0 { " row" } else { "" },
                    if f("gammaResident") != 0.0 { " γres" } else { "" }
                ),
                format!(
                    ": split-D chunks of {} elements (UB per chunk element: double-buffered T streams + float32 work{resident})",
                    f("colFactor")
                ),
            ),
        };
        PlanReading { label, two_pass: mode == 2, transfer_reason: Some(transfer_reason) }
    }

    fn fusion_target(&self, _spec: &OpSpec) -> bool {
        true
    }

    fn report_inputs(
        &self,
        _spec: &OpSpec,
        _column: usize,
        _shapes: &[(String, Vec<usize>)],
    ) -> Option<ReportInputs> {
        None
    }

    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        b.note("eager returns no rstd; the fused op writes it as well");
        if is_fused(case.spec) {
            let (x1, _) = input(case, 0)?;
            let (x2, _) = input(case, 1)?;
            let (w, _) = input(case, 2)?;
            let gamma_n = w.n.max(1);
            let sum = b.op("residual + hidden", &[x1, x2], x1);
            qwen2_rms_norm(&mut b, sum, w, (x1.n / gamma_n).max(1));
            Ok(b.finish("HF decoder residual add, then Qwen2RMSNorm"))
        } else {
            let (x, xs) = input(case, 0)?;
            let (w, _) = input(case, 1)?;
            let rows = x.n / last_dim(xs)?.max(1);
            qwen2_rms_norm(&mut b, x, w, rows.max(1));
            Ok(b.finish(
                "HF Qwen2RMSNorm: to(float32), pow(2), mean(-1), + eps, rsqrt, *, to(input dtype), weight *",
            ))
        }
    }
}

/// `weight * (x.to(float32) * rsqrt(mean(x^2) + eps)).to(input_dtype)`; the casts vanish for
/// float32 input.
fn qwen2_rms_norm(b: &mut Builder, x: T, w: T, rows: u64) -> T {
    let f32x = if x.dtype == DType::Float32 {
        x
    } else {
        b.op("hidden.to(float32)", &[x], x.as_dtype(DType::Float32))
    };
    let sq = b.op("pow(2)", &[f32x], f32x);
    let r = T { n: rows, dtype: DType::Float32 };
    let mean = b.op("mean(-1, keepdim=True)", &[sq], r);
    let eps = b.op("+ eps", &[mean], r);
    let rstd = b.op("rsqrt", &[eps], r);
    let normed = b.op("hidden * rsqrt(...)", &[f32x, rstd], f32x);
    let back = if x.dtype == DType::Float32 { normed } else { b.op(".to(input_dtype)", &[normed], x) };
    b.op("weight * hidden", &[w, back], x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_bit_neighbours() {
        assert_eq!(next_up(DType::Float16, 1.0), 1.0 + 2f64.powi(-10));
        assert_eq!(next_down(DType::Float16, 1.0), 1.0 - 2f64.powi(-11));
        assert_eq!(next_down(DType::Float16, -1.0), -1.0 - 2f64.powi(-10));
        assert_eq!(next_up(DType::Float16, -1.0), -1.0 + 2f64.powi(-11));
        assert_eq!(next_up(DType::BFloat16, 3.0), 3.0 + 2f64.powi(-6));
        assert_eq!(next_up(DType::Float16, 0.0), 2f64.powi(-24));
    }
}
