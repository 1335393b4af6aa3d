//! Family dequant: dequant_int8, x = q·scale with one float32 scale per row of q's last dim, in
//! the float dtype the string attr names (research/op-semantics.md §4). It has one kind, so no
//! family table.

use super::eager::{self, Builder};
use super::layout::{self, Role};
use super::{Case, Expected, Sweep};
use super::{CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, Templates};
use super::{OutputShape, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::{derive_seed, generate, Distribution, Rng};
use crate::plan::TilingField;
use crate::reference::kv_layout as reference;
use crate::spec::raw::RawSpec;
use crate::spec::BackwardRule;
use crate::spec::{AttrKind, AttrValue, FamilyParams, KvKind, OpSpec, Reporter};
use crate::tensor::HostTensor;

// ---- spec --------------------------------------------------------------------------------

const DEQUANT_IN: &[Role] = &[layout::role("q", layout::INT8), layout::role("scale", layout::FLOAT32)];
const DEQUANT_OUT: &[Role] = &[layout::role("x", layout::FLOATS)];

pub(crate) fn params(_raw: &RawSpec) -> FamilyParams {
    FamilyParams::Layout { kind: Some(KvKind::DequantInt8) }
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let label = "family dequant (dequant_int8)";
    layout::check_roles(r, raw, spec, label, (DEQUANT_IN, DEQUANT_OUT));
    check_attrs(r, raw, spec, label);
}

/// One string attr naming the output dtype, whose default is one of the output's dtypes.
fn check_attrs(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec, label: &str) {
    let message = format!(
        "{label} takes exactly one attr: a string naming the output dtype ({})",
        crate::dtype::names(layout::FLOATS)
    );
    match spec.attrs.as_slice() {
        [a] if a.kind == AttrKind::String => {
            if let Some(AttrValue::String(v)) = &a.default {
                let allowed: Vec<DType> = spec.outputs[0].dtypes.clone();
                let ok = DType::parse(v).is_some_and(|d| allowed.contains(&d) && d.name() == v);
                if !ok {
                    r.error(
                        raw.attrs[0].default.as_ref().expect("default present"),
                        "attrs[0].default",
                        format!(
                            "default `{v}` must be one of the output's dtypes: {}",
                            crate::dtype::names(&allowed)
                        ),
                    );
                }
            }
        }
        _ => match raw.attrs.first() {
            Some(a) => r.error(&a.name, "attrs", message),
            None => r.error(&raw.name, "attrs", message),
        },
    }
}

// ---- plan --------------------------------------------------------------------------------

/// dequant_int8: rows of q over the cores.
const DEQUANT_FIELDS: &[TilingField] = &[
    TilingField::u32("rows", "rows of q: the product of its leading dims (= elements of scale)"),
    TilingField::u32("headDim", "D: last dim of q and x"),
    TilingField::u32("blockFactor", "rows per core (the last core may get fewer)"),
    TilingField::u32("rowsPerPass", "rows per UB pass"),
];

// ---- verification ------------------------------------------------------------------------

/// q shapes of dequant_int8 (scale covers the leading dims).
fn dequant_shapes(sweep: Sweep) -> Vec<Vec<usize>> {
    let mut out = vec![
        vec![1, 2, 64],
        vec![3, 2, 72],
        vec![17, 4, 80],
        vec![128, 8, 128],
        vec![5, 14, 256],
        vec![2, 3, 4, 96],
        vec![7],
    ];
    if sweep == Sweep::Full {
        for t in layout::TOKENS {
            for n in layout::KV_HEADS.into_iter().chain(layout::Q_HEADS) {
                for d in layout::HEAD_DIMS {
                    if t * n * d <= layout::MAX_FULL_ELEMENTS {
                        out.push(vec![t, n, d]);
                    }
                }
            }
        }
    }
    // 97 rows of 8192: one row per UB pass, three passes on 32 cores and one on the last, so
    // each scale buffer is reused twice (its next copy-in waits for the scalar reads: S_MTE2).
    out.push(vec![97, 8192]);
    out
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let attrs = super::default_attrs(spec);
    let mut out = Vec::new();
    let names: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
    let make = |q: &[usize], dist, seed| Case {
        shapes: vec![(names[0].clone(), q.to_vec()), (names[1].clone(), q[..q.len() - 1].to_vec())],
        dist,
        seed,
        attrs: attrs.clone(),
    };
    let shapes = dequant_shapes(sweep);
    for (i, q) in shapes.iter().enumerate() {
        out.push(make(q, Distribution::Uniform5, 3000 + i as u64));
    }
    for (i, dist) in layout::other_dists(sweep, true).into_iter().enumerate() {
        out.push(make(&shapes[2], dist, 4000 + i as u64));
    }
    out
}

/// scale covers the leading dims of q.
pub fn derived_shape(_spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    if i == 1 {
        first[..first.len().saturating_sub(1)].to_vec()
    } else {
        first.to_vec()
    }
}

/// q uniform over [-127, 127], scales from the case's distribution, and the output-dtype attr
/// set to the combination's.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> CaseData {
    let seed = |name: &str| derive_seed(case.seed, name);
    let mut attrs = case.attrs.clone();
    let mut inputs: Vec<(String, HostTensor)> = Vec::new();
    let (q_name, q_shape) = &case.shapes[0];
    let (s_name, s_shape) = &case.shapes[1];
    let n: usize = q_shape.iter().product();
    let mut rng = Rng::new(seed(q_name));
    let q: Vec<i64> = (0..n)
        .map(|_| if case.dist == Distribution::Zeros { 0 } else { rng.below(255) as i64 - 127 })
        .collect();
    inputs.push((q_name.clone(), HostTensor::from_i64(DType::Int8, q_shape, &q)));
    // Scales: magnitudes of the case's distribution (absmax / 127 ≥ 0), sign kept for NaN/Inf.
    let mut s = generate(case.dist, DType::Float32, s_shape, seed(s_name));
    let v: Vec<f64> = s.to_f64().into_iter().map(|x| if x.is_nan() { x } else { x.abs() / 127.0 }).collect();
    s = HostTensor::from_f64(DType::Float32, s_shape, &v);
    inputs.push((s_name.clone(), s));
    if let Some(a) = spec.attrs.first() {
        let want = AttrValue::String(spec.outputs[0].dtypes[column].name().to_string());
        attrs.retain(|(n, _)| n != &a.name);
        attrs.push((a.name.clone(), want));
    }
    (inputs, attrs)
}

/// Checked against src/reference/kv_layout.rs: 16-bit outputs within 1 ULP, float32 the CANN
/// standard.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let (q, scale) = (layout::input(inputs, spec, 0)?, layout::input(inputs, spec, 1)?);
    let values = reference::dequant_int8(q, scale)?;
    let attr = spec.attrs.first().ok_or("dequant_int8 has no output-dtype attr")?;
    let dtype = match attrs.iter().find(|(n, _)| n == &attr.name).map(|(_, v)| v).or(attr.default.as_ref()) {
        Some(AttrValue::String(s)) => DType::parse(s)
            .ok_or_else(|| FamilyError::new(format!("attr `{}` = `{s}` is not a dtype", attr.name)))?,
        _ => return Err(FamilyError::new(format!("attr `{}` (the output dtype) is missing", attr.name))),
    };
    let tolerance = match dtype {
        // q·scale (8 × 24 significant bits) rounds once to float32, within ½ float32
        // ulp (≤ 1 unit) of the exact product: a 16-bit window of 2; float32 output is
        // that one rounding, exactly RNE.
        DType::Float16 | DType::BFloat16 => Tolerance::Rne { tie_window: 2 },
        _ => Tolerance::Rne { tie_window: 0 },
    };
    Ok(vec![Expected {
        name: spec.outputs[0].name.clone(),
        dtype,
        shape: q.shape.clone(),
        values,
        tolerance,
    }])
}
// ---- the family --------------------------------------------------------------------------

pub struct Dequant;

impl FamilyOps for Dequant {
    fn backward_rule(&self) -> BackwardRule {
        BackwardRule::Declared
    }

    fn params(&self, raw: &RawSpec) -> FamilyParams {
        params(raw)
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        DEQUANT_FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/dequant.cpp.j2",
            host: "host/dequant.cpp.j2",
            checks: Some("host/dequant_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        Ok(layout::kind_context(spec))
    }

    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        derived_shape(spec, i, first)
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        Some(case_inputs(spec, column, case))
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let core_rows = f("blockFactor").min(f("rows"));
        PlanCoverage {
            mode: "rows",
            passes: Some(super::passes(core_rows, f("rowsPerPass"))),
            uneven: Some(f("blockFactor") > 0.0 && f("rows") % f("blockFactor") != 0.0),
        }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        vec!["rows"]
    }

    /// x is shaped like q.
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        let first = spec.inputs.first().ok_or("dequant needs inputs")?.name.clone();
        Ok(ShapeRule { checks: Vec::new(), outputs: vec![OutputShape::Like { of: first }] })
    }

    fn model_shapes(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        Vec::new()
    }

    /// `x.to(float32) * scale`, cast to the output dtype.
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        let (x, _) = eager::input(case, 0)?;
        let (scale, _) = eager::input(case, 1)?;
        let out = case.spec.outputs.first().ok_or(FamilyError::new("no output"))?.dtypes[case.column];
        let f = b.op("x.to(float32)", &[x], x.as_dtype(DType::Float32));
        let y = b.op("* scale", &[f, scale], f);
        if out != DType::Float32 {
            b.op(".to(output dtype)", &[y], x.as_dtype(out));
        }
        Ok(b.finish("x.to(float32) * scale, cast to the output dtype"))
    }
}
