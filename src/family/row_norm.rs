//! Family row_norm: rms_norm and add_rms_norm (fused residual add). Rows over the vector
//! cores; whole-row, multi-row and split-D modes chosen by the generated TilingFunc.

use super::eager::{input, last_dim, Builder, T};
use super::CannBuiltin;
use super::Sharding;
use super::{
    attr_f64, default_attrs, CaseData, FamilyError, FamilyOps, PlanCoverage, PlanReading, Templates,
};
use super::{Case, Expected, Sweep};
use super::{EagerCase, EagerSequence, OutputShape, ShapeCheck, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::Distribution;
use crate::plan::TilingField;
use crate::reference;
use crate::spec::raw::RawSpec;
use crate::spec::SpecTables;
use crate::spec::{AttrValue, FamilyParams, NormKind, OpSpec, Reporter, RowNormParams, TensorArg};
use crate::tensor::{round_to_dtype, HostTensor};

// ---- spec --------------------------------------------------------------------------------

pub(crate) fn params(raw: &RawSpec) -> FamilyParams {
    let table = raw.row_norm.as_ref().map(|p| p.get_ref());
    FamilyParams::RowNorm(RowNormParams {
        fused_residual_add: table.is_some_and(|p| p.fused_residual_add),
        norm: table.map_or(NormKind::Rms, |p| p.norm_kind()),
        gamma_offset: table.map_or(0.0, |p| p.gamma_offset_value()),
    })
}

fn is_fused(spec: &OpSpec) -> bool {
    spec.row_norm().is_some_and(|p| p.fused_residual_add)
}

fn is_layer(spec: &OpSpec) -> bool {
    spec.row_norm().is_some_and(|p| p.norm == NormKind::Layer)
}

fn gamma_offset(spec: &OpSpec) -> f64 {
    spec.row_norm().map_or(0.0, |p| p.gamma_offset)
}

/// Where each tensor of a row_norm op sits in the spec's lists. rms: (x, gamma) → (y, rstd);
/// fused residual add: (x1, x2, gamma) → (y, rstd, x_sum); layer: (x, gamma[, beta]) →
/// (y, mean, rstd).
#[derive(Debug, Clone, Copy)]
struct Roles {
    x2: Option<usize>,
    gamma: usize,
    beta: Option<usize>,
    mean: Option<usize>,
    rstd: usize,
    sum: Option<usize>,
}

fn roles(spec: &OpSpec) -> Roles {
    if is_layer(spec) {
        let beta = (spec.inputs.len() == 3).then_some(2);
        Roles { x2: None, gamma: 1, beta, mean: Some(1), rstd: 2, sum: None }
    } else if is_fused(spec) {
        Roles { x2: Some(1), gamma: 2, beta: None, mean: None, rstd: 1, sum: Some(2) }
    } else {
        Roles { x2: None, gamma: 1, beta: None, mean: None, rstd: 1, sum: None }
    }
}

/// The `[row_norm]` table's fields: a known norm, a finite gamma_offset, and only combinations
/// the kernel implements (LayerNorm has no fused residual add). A summary that says `1 + gamma`
/// needs gamma_offset, so a Gemma-style spec is never generated as plain rms_norm.
fn check_table(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let table = raw.row_norm.as_ref();
    let norm = table.and_then(|t| t.get_ref().norm.as_ref());
    if let Some(n) = norm {
        if NormKind::parse(n.get_ref()).is_none() {
            let known: Vec<String> = NormKind::ALL.iter().map(|(k, _)| format!("\"{k}\"")).collect();
            r.error(
                n,
                "row_norm.norm",
                format!("norm `{}` is not supported: use {}", n.get_ref(), known.join(" or ")),
            );
        }
    }
    if let (Some(t), Some(n)) = (table, norm) {
        if is_layer(spec) && t.get_ref().fused_residual_add {
            r.error(
                n,
                "row_norm.norm",
                "norm \"layer\" with fused_residual_add = true is not implemented (the fused residual add is RMSNorm only: add_rms_norm)".into(),
            );
        }
    }
    if let Some(o) = table.and_then(|t| t.get_ref().gamma_offset.as_ref()) {
        if !o.get_ref().is_finite() {
            r.error(
                o,
                "row_norm.gamma_offset",
                format!("gamma_offset {} must be a finite number", o.get_ref()),
            );
        }
    }
    let summary: String =
        spec.summary.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_lowercase();
    let says_one_plus = ["1+gamma", "gamma+1", "1+weight", "weight+1", "1.0+gamma", "1.0+weight"]
        .iter()
        .any(|p| summary.contains(p));
    if says_one_plus && gamma_offset(spec) != 1.0 {
        r.error(
            &raw.summary,
            "summary",
            format!(
                "the summary says 1 + gamma but [row_norm] gamma_offset is {}: set `gamma_offset = 1.0` (y then uses gamma + 1), or reword the summary",
                gamma_offset(spec)
            ),
        );
    }
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    check_table(r, raw, spec);
    let fused = is_fused(spec);
    let layer = is_layer(spec);
    let (want_inputs, want_outputs) = if layer {
        ("(x, gamma) or (x, gamma, beta)", "(y, mean, rstd)")
    } else if fused {
        ("(x1, x2, gamma)", "(y, rstd, x_sum)")
    } else {
        ("(x, gamma)", "(y, rstd)")
    };
    let inputs_ok = if layer {
        matches!(spec.inputs.len(), 2 | 3)
    } else {
        spec.inputs.len() == if fused { 3 } else { 2 }
    };
    let n_out = if fused || layer { 3 } else { 2 };
    let kind = if layer { " with norm = \"layer\"" } else { fused_note(fused) };
    if !inputs_ok {
        r.error(
            &raw.inputs,
            "inputs",
            format!("family row_norm{kind} takes inputs {want_inputs}, found {}", spec.inputs.len()),
        );
        return;
    }
    if spec.outputs.len() != n_out {
        r.error(
            &raw.outputs,
            "outputs",
            format!("family row_norm{kind} has {n_out} outputs {want_outputs}, found {}", spec.outputs.len()),
        );
        return;
    }
    let roles = roles(spec);
    let valid =
        super::check_inputs_share_a_float(r, raw, spec, "row_norm", "mixed-dtype row_norm is not supported");
    for (c, x) in valid {
        for (o, t) in spec.outputs.iter().enumerate() {
            let stat = o == roles.rstd || Some(o) == roles.mean;
            let want = if stat { DType::Float32 } else { x };
            if t.dtypes[c] != want {
                let span = &raw.outputs.get_ref()[o].dtypes.get_ref()[c];
                let role = if stat {
                    format!("`{}` (a per-row statistic) is always float32", t.name)
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
                if layer && matches!(&rounding.default, Some(AttrValue::String(v)) if v == "hf") {
                    r.error(
                        raw.attrs[1].default.as_ref().expect("default present"),
                        "attrs[1].default",
                        "rounding \"hf\" is RMSNorm's (HF Qwen2RMSNorm rounds x*rstd before gamma); LayerNorm computes in float32 and rounds y once, as torch's layer_norm: use \"once\"".into(),
                    );
                }
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
    check_choice_default(r, raw, i, a, &ROUNDINGS, ROUNDINGS_TEXT);
}

/// Checks string attr `i`'s default is one of `choices` (`choices_text` lists them for the
/// message), naming the attr (file:line:column): rounding here, row_norm_grad's arithmetic.
pub(crate) fn check_choice_default(
    r: &mut Reporter,
    raw: &RawSpec,
    i: usize,
    a: &crate::spec::Attr,
    choices: &[&str],
    choices_text: &str,
) {
    let name = &a.name;
    match &a.default {
        Some(AttrValue::String(v)) if choices.contains(&v.as_str()) => {}
        Some(other) => {
            let shown = match other {
                AttrValue::String(v) => format!("`{v}`"),
                v => format!("{v:?}"),
            };
            r.error(
                raw.attrs[i].default.as_ref().expect("default present"),
                &format!("attrs[{i}].default"),
                format!("{name} {shown} is not supported: use {choices_text}"),
            )
        }
        None => r.error(
            &raw.attrs[i].name,
            &format!("attrs[{i}].default"),
            format!("the {name} attr needs a default ({choices_text})"),
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
    let ro = roles(spec);
    let mut m = serde_json::Map::new();
    m.insert("fused".into(), serde_json::Value::Bool(is_fused(spec)));
    m.insert("layer".into(), serde_json::Value::Bool(is_layer(spec)));
    m.insert("has_beta".into(), serde_json::Value::Bool(ro.beta.is_some()));
    // A C++ float literal; 0 leaves gamma as it is (no extra vector op).
    m.insert("gamma_offset".into(), format!("{:?}f", gamma_offset(spec) as f32).into());
    m.insert("has_gamma_offset".into(), serde_json::Value::Bool(gamma_offset(spec) != 0.0));
    m.insert("gamma".into(), serde_json::to_value(&spec.inputs[ro.gamma]).expect("plain data"));
    m.insert("gamma_index".into(), ro.gamma.into());
    let name = |t: Option<&TensorArg>| t.map_or(serde_json::Value::Null, |t| t.name.clone().into());
    m.insert("x2_name".into(), name(ro.x2.map(|i| &spec.inputs[i])));
    m.insert("beta_name".into(), name(ro.beta.map(|i| &spec.inputs[i])));
    m.insert("mean_name".into(), name(ro.mean.map(|i| &spec.outputs[i])));
    m.insert("rstd_name".into(), name(Some(&spec.outputs[ro.rstd])));
    m.insert("rstd_index".into(), ro.rstd.into());
    m.insert("mean_index".into(), ro.mean.map_or(serde_json::Value::Null, |i| i.into()));
    m.insert("sum_name".into(), name(ro.sum.map(|i| &spec.outputs[i])));
    // The host reads attr 1 when the spec declares `rounding`; otherwise the family default.
    m.insert("has_rounding".into(), serde_json::Value::Bool(spec.attrs.len() > 1));
    m.insert("default_round_hf".into(), serde_json::Value::Bool(default_rounding(spec) == Rounding::Hf));
    m
}

// ---- verification ------------------------------------------------------------------------

/// Seeds of the coverage rule's cases (COVERAGE_SEED + index).
const COVERAGE_SEED: u64 = 9500;

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

/// LayerNorm's extra shapes: Qwen3-VL's vision tower (hidden 1152) and its merger (4608), after
/// the shared ones so their seeds stay.
fn layer_shapes(sweep: Sweep) -> Vec<(Vec<usize>, usize)> {
    // 100x8192: split-D with three rows on some cores, where WriteStats reuses a stats buffer
    // whose copy two rows earlier only its MTE3_S pair orders (mutant layer_norm-stats-no-mte3-s).
    let mut shapes = vec![(vec![64, 1152], 1), (vec![16, 4608], 1), (vec![100, 8192], 1)];
    if sweep == Sweep::Full {
        shapes.push((vec![4096, 1152], 1));
        shapes.push((vec![1024, 4608], 1));
    }
    shapes
}

/// The named input shapes of a case whose x has `x`'s shape and gamma its last `gamma_rank`
/// dims (x2 as x, beta as gamma): the sweep's cases and the property tests' build them here.
pub fn case_shapes(spec: &OpSpec, x: &[usize], gamma_rank: usize) -> Vec<(String, Vec<usize>)> {
    let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let gamma = x[x.len() - gamma_rank..].to_vec();
    let ro = roles(spec);
    let mut shapes = vec![(names[0].to_string(), x.to_vec())];
    if let Some(i) = ro.x2 {
        shapes.push((names[i].to_string(), x.to_vec()));
    }
    shapes.push((names[ro.gamma].to_string(), gamma.clone()));
    if let Some(i) = ro.beta {
        shapes.push((names[i].to_string(), gamma));
    }
    shapes
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let attrs = default_attrs(spec);
    let make = |x: &[usize], gamma_rank: usize, dist: Distribution, seed: u64| Case {
        shapes: case_shapes(spec, x, gamma_rank),
        dist,
        seed,
        attrs: attrs.clone(),
    };
    let mut out = Vec::new();
    let mut all = shapes(sweep);
    if is_layer(spec) {
        all.extend(layer_shapes(sweep));
    }
    for (i, (x, g)) in all.into_iter().enumerate() {
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
    if is_layer(spec) {
        // Rows of mean 1000 and std 1 (`case_inputs`), where E[x²] − E[x]² in float32 cancels:
        // one case per tiling mode and both split-D variants.
        for (i, x) in LARGE_MEAN_SHAPES.iter().enumerate() {
            out.push(make(x, 1, Distribution::Uniform5, LARGE_MEAN_SEED + i as u64));
        }
        // NaN and ±Inf in the quick sweep too, in rows of modes 0/1 (about three specials a row,
        // so some rows hold one infinity and no NaN: their mean is that infinity, which the
        // kernel's vector select of m0 over m0 + c gives, mutant
        // layer_norm-rows-no-finite-mean-select).
        if sweep == Sweep::Quick {
            out.push(make(&[64, 1000], 1, Distribution::NanInf, NAN_INF_SEED));
        }
    }
    // The coverage rule's cases (src/verify/coverage.rs): every mode with three UB passes on a
    // core and a remainder core (rms_norm's plans): 100x8192, three rows on 4 of 48 cores, one
    // pass each (16-bit: mode 0; float32: split-D, where rstd's buffer is rewritten by the
    // scalar unit two rows after its copy-out; LayerNorm has it among its shapes); 385x3584,
    // mode 1 with 9 rows on a core (4 a pass at 16 bits, 2 at float32); 100x5120, float32 mode
    // 0 with three rows (add_rms_norm: 16-bit too); 100x10240, 16-bit split-D with three rows;
    // 400x2048, add_rms_norm's float32 mode 1 (2 rows a pass, 9 on a core).
    if is_layer(spec) {
        // LayerNorm's 16-bit mode 0 (one row of 6144 a pass, three rows on a core).
        out.push(make(&[100, 6144], 1, Distribution::Uniform5, COVERAGE_SEED));
    } else {
        out.push(make(&[100, 8192], 1, Distribution::Uniform5, COVERAGE_SEED));
    }
    for (i, x) in [[385, 3584], [100, 5120], [100, 10240], [400, 2048]].into_iter().enumerate() {
        out.push(make(&x, 1, Distribution::Uniform5, COVERAGE_SEED + 1 + i as u64));
    }
    // The other rounding (the spec's default is the rest): one case per tiling mode and the
    // split-D paths, so both branches of every pass the kernel has are run. LayerNorm has one.
    if let Some(other) = other_rounding(spec).filter(|_| !is_layer(spec)) {
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

/// LayerNorm's large-mean cases: x = 1000 + u with u uniform of std 1 (from `Uniform5` / √(25/3)),
/// rounded to x's dtype, in modes 0, 1, split-D with the row resident and streamed.
const LARGE_MEAN_SHAPES: [&[usize]; 4] = [&[4, 896], &[1000, 64], &[2, 16384], &[2, 98304]];
const LARGE_MEAN_SEED: u64 = 9000;
const NAN_INF_SEED: u64 = 9100;

/// x of a large-mean case (seed LARGE_MEAN_SEED..); other inputs as the distribution draws them.
fn large_mean_inputs(spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
    if !is_layer(spec)
        || !(LARGE_MEAN_SEED..LARGE_MEAN_SEED + LARGE_MEAN_SHAPES.len() as u64).contains(&case.seed)
    {
        return None;
    }
    let inputs = case
        .shapes
        .iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let dtype = spec.inputs[i].dtypes[column];
            let t = crate::family::inputs::generate(
                case.dist,
                dtype,
                shape,
                crate::family::inputs::derive_seed(case.seed, name),
            );
            if i == 0 {
                let scale = (25.0f64 / 3.0).sqrt();
                let v: Vec<f64> = t.to_f64().iter().map(|u| 1000.0 + u / scale).collect();
                (name.clone(), HostTensor::from_f64(dtype, shape, &v))
            } else {
                (name.clone(), t)
            }
        })
        .collect();
    Some((inputs, case.attrs.clone()))
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

/// The residual input is shaped like x; gamma (and beta) cover x's last dim.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    let ro = roles(spec);
    if i == ro.gamma || Some(i) == ro.beta {
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
        _ => Tolerance::ulp_bulk(Y_F32_ULP, Y_F32_MEAN_ULP),
    }
}

/// float32 y's largest per-case mean ULP (2026-12-05, `--no-sanitize`): quick sweep rms_norm 0.83,
/// add_rms_norm 1.10 (4x896 NormalLargeMean); full sweep rms_norm 1.32 (add_rms_norm's full
/// sweep passed 2x 1.10). One value for both ops, the largest: the bulk gate's measured value
/// (`Tolerance::ulp_bulk`).
const Y_F32_MEAN_ULP: f64 = 1.32;

/// rstd's largest per-case mean ULP (2026-12-05): quick sweep rms_norm and layer_norm 1.0,
/// add_rms_norm 1.125; full sweep rms_norm 1.33, layer_norm 2.0 — all on cases of a few rows
/// (0.49 over cases of 1000 rows or more), where the 3.3·k/√n slack dominates anyway.
const RSTD_MEAN_ULP: f64 = 2.0;

/// rstd's bars: the max (`RSTD_ULP`) and the bulk gate.
fn rstd_tolerance() -> Tolerance {
    Tolerance::ulp_bulk(RSTD_ULP, RSTD_MEAN_ULP)
}

/// float32 y: the full sweep's max ULP (2026-12-01, 76 cases per dtype: rms_norm 5,
/// add_rms_norm 6) with 2x room; float32 arithmetic of x·rstd·gamma after a float32 sum of
/// squares (tree per repeat, repeats in order).
pub(crate) const Y_F32_ULP: u32 = 12;

/// rstd (float32 in every combination): the full sweep's max ULP (rms_norm 3, add_rms_norm 5)
/// with 2x room. The sum of squares in float32 over up to 16384 elements, ·1/n, + eps, sqrt,
/// 1/x: the relative error of the sum (a few 2^-24 for the tree order) halves through the
/// square root.
const RSTD_ULP: u32 = 10;

/// LayerNorm's y and mean have no relative accuracy bound in float32 arithmetic: y =
/// (x − mean)·rstd·g + β cancels where y is near 0, and the mean of a row whose values cancel
/// is near 0 with the error of its terms. torch's own float32 layer_norm has the same property.
/// So both are held to `UlpOrAbs`: within `y_ulp` (16-bit: 1, faithful; float32: 16) of
/// RNE(g), or within the float32 evaluation's absolute error bound, K·2^-24·S, K =
/// `LAYER_ERROR_UNITS`, with S the largest term of the output:
/// - y: S = max over elements of (|x − mean|·rstd + 1)·|g| + |β| (the kernel forms
///   ((x − m0) − c)·rstd·g + β: x − m0 exact or rounded once, c = Σ(x − m0)/n within
///   ~log2(n)·2^-24 of the row's spread, i.e. within that many units of 1/rstd, then three
///   roundings and rstd's few units);
/// - mean: S = max over rows of |mean| + log2(n)·mean(|x − mean|) (m0 rounded once, the
///   correction c as above).
///
/// Measured (quick sweep, 2026-12-01): y within 0.4 units of S, mean within 0.15; K = 8 gives
/// 20x room and is still 2^-19·S, far below what a missing or doubled mean subtraction leaves.
/// rstd (a sum of squares of centred values, no cancellation) keeps the RMSNorm ULP bar.
const LAYER_ERROR_UNITS: f64 = 8.0;

/// float32 y's largest per-case mean distance on the looser scale of `UlpOrAbs` (the bulk gate,
/// `Tolerance::ulp_or_abs_bulk`), measured 2026-12-05 with `opgen verify --ops layer_norm
/// --no-sanitize` (quick sweep: 0.191) and `--sweep full` (104 float32 cases: 0.297).
const LAYER_Y_F32_MEAN: f64 = 0.297;

/// The mean output's (float32 for every x dtype) largest per-case mean distance, measured as
/// `LAYER_Y_F32_MEAN`: quick and full sweep 0.238 (bfloat16 x), float16 0.114, float32 0.161.
const LAYER_MEAN_MEAN: f64 = 0.238;

/// log2 of the float32 evaluation's absolute error bound K·2^-24·S (K = `LAYER_ERROR_UNITS`)
/// for outputs whose largest term is `scale`; shared with row_norm_grad's plain float32 dx.
pub(crate) fn abs_log2(scale: f64) -> i32 {
    let bound = LAYER_ERROR_UNITS * scale * 2f64.powi(-24);
    if bound.is_finite() && bound > 0.0 {
        bound.log2().ceil() as i32
    } else {
        -1074
    }
}

/// The tolerances of LayerNorm's y and mean for these inputs (see `LAYER_ERROR_UNITS`).
fn layer_tolerances(
    x: &HostTensor,
    g: &[f64],
    beta: Option<&HostTensor>,
    r: &reference::row_norm::LayerNormOutputs,
) -> (Tolerance, Tolerance) {
    let n = g.len();
    let xv = x.to_f64();
    let bv = beta.map(|b| b.to_f64());
    let (mut sy, mut sm) = (0.0f64, 0.0f64);
    for (row, xs) in xv.chunks_exact(n).enumerate() {
        let (m, rs) = (r.mean[row], r.rstd[row]);
        let mut spread = 0.0;
        for (j, xi) in xs.iter().enumerate() {
            let b = bv.as_ref().map_or(0.0, |b| b[j].abs());
            let term = ((xi - m).abs() * rs + 1.0) * g[j].abs() + b;
            if term.is_finite() {
                sy = sy.max(term);
            }
            spread += (xi - m).abs();
        }
        let term = m.abs() + (n as f64).log2() * spread / n as f64;
        if term.is_finite() {
            sm = sm.max(term);
        }
    }
    let y_ulp = if x.dtype == DType::Float32 { 16 } else { 1 };
    (
        match x.dtype {
            DType::Float32 => Tolerance::ulp_or_abs_bulk(y_ulp, abs_log2(sy), LAYER_Y_F32_MEAN),
            _ => Tolerance::UlpOrAbs { max_ulp: y_ulp, abs_log2: abs_log2(sy), mean: None },
        },
        Tolerance::ulp_or_abs_bulk(16, abs_log2(sm), LAYER_MEAN_MEAN),
    )
}

/// By the op's params (norm, fused add, gamma_offset), not its name: rms against
/// npu_rms_norm's math, the fused add against AddRmsNorm's, layer against torch's layer_norm.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let out = |i: usize| spec.outputs[i].name.clone();
    let eps = attr_f64(attrs, "epsilon")?;
    let rounding = rounding_of(spec, attrs)?;
    let ro = roles(spec);
    let offset = gamma_offset(spec);
    if is_layer(spec) {
        let (x, gamma) = (&inputs[0].1, &inputs[ro.gamma].1);
        let beta = ro.beta.map(|i| &inputs[i].1);
        let r = reference::row_norm::layer_norm(x, gamma, beta, eps, offset)?;
        let g: Vec<f64> = gamma.to_f64().iter().map(|v| v + offset).collect();
        let (y_tolerance, mean_tolerance) = layer_tolerances(x, &g, beta, &r);
        let stat = |name: String, values: Vec<f64>, tolerance: Tolerance| Expected {
            name,
            dtype: DType::Float32,
            shape: r.stat_shape.clone(),
            values,
            tolerance,
        };
        return Ok(vec![
            Expected {
                name: out(0),
                dtype: x.dtype,
                shape: x.shape.clone(),
                values: r.y.clone(),
                tolerance: y_tolerance,
            },
            stat(out(ro.mean.expect("layer has a mean")), r.mean.clone(), mean_tolerance),
            stat(out(ro.rstd), r.rstd.clone(), rstd_tolerance()),
        ]);
    }
    if !is_fused(spec) {
        let (x, gamma) = (&inputs[0].1, &inputs[1].1);
        let r = reference::row_norm::rms_norm_rounded(x, gamma, eps, rounding, offset)?;
        return Ok(vec![
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
                tolerance: rstd_tolerance(),
            },
        ]);
    }
    let (x1, x2, gamma) = (&inputs[0].1, &inputs[1].1, &inputs[2].1);
    let r = reference::row_norm::add_rms_norm_rounded(x1, x2, gamma, eps, rounding, offset)?;
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
            tolerance: rstd_tolerance(),
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
    if output != spec.outputs[0].name || is_layer(spec) || rounding_of(spec, attrs)? != Rounding::Hf {
        return Ok(Vec::new());
    }
    let gamma = &inputs[roles(spec).gamma].1;
    let dtype = inputs[0].1.dtype;
    if !matches!(dtype, DType::Float16 | DType::BFloat16) {
        return Ok(Vec::new());
    }
    let eps = attr_f64(attrs, "epsilon")?;
    // The row values the kernel normalises (x, or the rounded sum) and their rstd, in f64.
    let (values, rstd) = if is_fused(spec) {
        let (x1, x2) = (&inputs[0].1, &inputs[1].1);
        let r =
            reference::row_norm::add_rms_norm_rounded(x1, x2, gamma, eps, Rounding::Hf, gamma_offset(spec))?;
        (r.x_sum, r.rstd)
    } else {
        let x = &inputs[0].1;
        let r = reference::row_norm::rms_norm_rounded(x, gamma, eps, Rounding::Hf, gamma_offset(spec))?;
        (x.to_f64(), r.rstd)
    };
    let n = gamma.numel();
    let g: Vec<f64> = gamma.to_f64().iter().map(|v| v + gamma_offset(spec)).collect();
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
    fn spec_tables(&self) -> SpecTables {
        SpecTables { accepts: &["row_norm"], requires: None }
    }

    fn sharding(&self, _spec: &OpSpec) -> Sharding {
        Sharding::Rows { whole_from_rule: true, reduces: false }
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
            kernel: "kernel/row_norm.cpp.j2",
            host: "host/row_norm.cpp.j2",
            checks: Some("host/row_norm_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        Ok(template_extras(spec))
    }

    /// Inputs (x[, x2], gamma[, beta]), outputs (y, rstd[, x_sum]) or (y, mean, rstd). gamma
    /// (and beta) cover x's trailing dims; the residual has x's shape; y and x_sum are shaped
    /// like x; mean and rstd are x's shape with the gamma-covered dims set to 1 (rank
    /// preserved, as torch_npu's npu_rms_norm).
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        if spec.inputs.len() < 2 {
            return Err(FamilyError::new("row_norm needs inputs (x, [residual,] gamma[, beta])"));
        }
        let ro = roles(spec);
        let x = spec.inputs[0].name.clone();
        let gamma = spec.inputs[ro.gamma].name.clone();
        let mut checks = Vec::new();
        if let Some(i) = ro.x2 {
            checks.push(ShapeCheck::SameShape { tensor: spec.inputs[i].name.clone(), like: x.clone() });
        }
        checks.push(ShapeCheck::TrailingDims { tensor: gamma.clone(), of: x.clone() });
        if let Some(i) = ro.beta {
            checks.push(ShapeCheck::SameShape { tensor: spec.inputs[i].name.clone(), like: gamma.clone() });
        }
        let outputs = (0..spec.outputs.len())
            .map(|i| {
                if i == ro.rstd || Some(i) == ro.mean {
                    OutputShape::TrailingOnes { of: x.clone(), count_of: gamma.clone() }
                } else {
                    OutputShape::Like { of: x.clone() }
                }
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

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        large_mean_inputs(spec, column, case)
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
    /// LayerNorm: Qwen3-VL-8B's vision tower (hidden 1152, a 1024x1024 image = 64x64 patches of
    /// 16) and its deepstack merger's post-shuffle LayerNorm over 4 merged patches (4608, 1024
    /// tokens); vision_config of Qwen3-VL-8B: hidden_size 1152, patch_size 16, spatial_merge_size 2.
    fn model_shapes(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        if is_layer(spec) {
            return vec![("Qwen3-VL vision", vec![4096, 1152]), ("Qwen3-VL merger", vec![1024, 4608])];
        }
        let mut out = vec![("Qwen2-7B", vec![4096, 3584]), ("Qwen3-8B", vec![4096, 4096])];
        if spec.name == "rms_norm" {
            out.push(("Qwen3 q-norm", vec![4096 * 32, 128]));
        }
        out
    }

    /// Rows: x's elements / gamma's.
    fn cann_builtin(&self, spec: &OpSpec) -> Option<CannBuiltin> {
        if is_layer(spec) {
            None
        } else if is_fused(spec) {
            Some(CannBuiltin::AddRmsNorm)
        } else {
            Some(CannBuiltin::RmsNorm)
        }
    }
    fn work_units(&self, spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        let numel = |i: usize| shapes.get(i).map(|(_, s)| crate::tensor::shape_numel(s) as u64);
        let gamma = numel(roles(spec).gamma)?;
        (gamma > 0).then(|| numel(0).unwrap_or(0) / gamma)
    }

    fn tiling_value_label(&self, _spec: &OpSpec, field: &str, value: u64) -> Option<&'static str> {
        match (field, value) {
            ("mode", 0) => Some("whole row per UB pass"),
            ("mode", 1) => Some("several rows per UB pass"),
            ("mode", 2) => Some("split-D, two passes"),
            ("mode", 3) => Some("batched short rows"),
            _ => None,
        }
    }

    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let core_rows = f("blockFactor") + if f("blockRemainder") > 0.0 { 1.0 } else { 0.0 };
        let (mode, passes) = match f("mode") as u32 {
            0 => ("0 whole row", super::passes(core_rows, f("rowFactor"))),
            1 => ("1 several rows", super::passes(core_rows, f("rowFactor"))),
            3 => ("3 batched", super::passes(core_rows, f("rowFactor"))),
            // Split-D: the chunk loops run inside each row's pass; the row's stats buffers
            // (rstd, LayerNorm's mean) are taken once per row.
            _ => ("2 split-D", core_rows as u64),
        };
        PlanCoverage { mode, passes: Some(passes), uneven: Some(f("blockRemainder") > 0.0) }
    }

    fn plan_modes(&self, spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        // The batched mode computes RMSNorm's rstd on the vector unit; LayerNorm has no mode 3.
        let mut modes = vec!["0 whole row", "1 several rows", "2 split-D"];
        if !is_layer(spec) {
            modes.push("3 batched");
        }
        modes
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

    /// RMSNorm replaces HF's eager sequence of 6–8 kernels; LayerNorm's eager form is one
    /// native_layer_norm kernel, so there is nothing to fuse and no fusion target.
    fn fusion_target(&self, spec: &OpSpec) -> bool {
        !is_layer(spec)
    }

    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        if is_layer(case.spec) {
            // torch's F.layer_norm is one native_layer_norm kernel (it writes mean and rstd too).
            let (x, _) = input(case, 0)?;
            let (w, _) = input(case, 1)?;
            let mut args = vec![x, w];
            if case.spec.inputs.len() == 3 {
                args.push(input(case, 2)?.0);
            }
            b.op("F.layer_norm", &args, x);
            return Ok(b.finish("torch.nn.functional.layer_norm (one native_layer_norm kernel)"));
        }
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
