//! Family elementwise: `[elementwise] body = "..."` is an expression over the op's inputs,
//! numeric attrs and constants, evaluated per element in float32 (16-bit inputs are cast up
//! and the result is rounded once with CAST_RINT). The body is parsed and canonicalised
//! (`expr`), lowered to AscendC vector calls with planned temporaries (`lower`), and — for ops
//! outside the catalogue — evaluated in f64 as the reference (`eval`). Catalogue ops
//! (gelu_tanh, gelu_erf, fast_gelu, swiglu) are checked against the hand-written references in
//! `crate::reference::activation` instead, so a wrong catalogue body fails.
//!
//! Tiling: the inputs (all of one shape, no broadcasting) are flattened to N elements and cut
//! into tiles of `tileLength` elements (a multiple of 256, sized from the UB budget with
//! double-buffered queues); the tiles are dealt to the vector cores in contiguous runs.

pub mod eval;
pub mod expr;
pub mod lower;

use super::FLOATS;
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference::activation;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;
use crate::verify::compare::Tolerance;
use crate::verify::inputs::Distribution;
use crate::verify::{Case, Expected, Sweep};
use expr::{ExprError, Node, Scope};
use lower::{LowerError, Program};

// ---- spec --------------------------------------------------------------------------------

pub(crate) fn params(raw: &RawSpec) -> crate::spec::FamilyParams {
    let Some(t) = &raw.elementwise else { return crate::spec::FamilyParams::None };
    let t = t.get_ref();
    crate::spec::FamilyParams::Elementwise(crate::spec::ElementwiseParams {
        body: t.body.get_ref().clone(),
        compute: crate::DType::parse(t.compute.get_ref()).unwrap_or(crate::DType::Float32),
        body_offset: t.body.span().start + 1,
    })
}

/// Inputs a kernel may read: each is a double-buffered VECIN queue, and a queue position holds
/// at most 8 buffers.
pub const MAX_INPUTS: usize = 4;

/// The body of a spec, understood: the canonical tree and its lowering.
#[derive(Debug, Clone)]
pub struct Body {
    pub node: Node,
    pub program: Program,
    /// Names of the inputs and attrs, by index.
    pub inputs: Vec<String>,
    pub attrs: Vec<String>,
}

/// What can be wrong with a body.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyError {
    /// Parse and name errors, at byte offsets of the body.
    Expr(Vec<ExprError>),
    Lower(LowerError),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Expr(errors) => {
                let all: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                f.write_str(&all.join("; "))
            }
            BodyError::Lower(e) => write!(f, "{e}"),
        }
    }
}

/// Parses, resolves, canonicalises and lowers a body over the given input and attr names.
pub fn analyse_body(body: &str, inputs: &[String], attrs: &[String]) -> Result<Body, BodyError> {
    let syntax = expr::parse(body).map_err(|e| BodyError::Expr(vec![e]))?;
    let node = expr::resolve(&syntax, Scope { inputs, attrs }).map_err(BodyError::Expr)?;
    let node = expr::canonical(node);
    let program = lower::lower(&node, inputs, attrs).map_err(BodyError::Lower)?;
    Ok(Body { node, program, inputs: inputs.to_vec(), attrs: attrs.to_vec() })
}

/// The body of an elementwise spec.
pub fn analyse(spec: &OpSpec) -> Result<Body, String> {
    let p = spec.elementwise().ok_or_else(|| format!("op `{}` is not an elementwise op", spec.name))?;
    let inputs: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
    let attrs: Vec<String> = spec.attrs.iter().map(|a| a.name.clone()).collect();
    analyse_body(&p.body, &inputs, &attrs).map_err(|e| format!("op `{}`: body: {e}", spec.name))
}

/// Maps a byte offset of the body string to a byte offset of the spec text: the body's
/// characters are found right after the string's opening delimiter (`"`, `'`, `"""` or
/// `'''`, a multi-line string also skipping its first newline). A string with escapes does not
/// match, and then errors point at the string's start.
fn body_text_offset(text: &str, span_start: usize, body: &str, pos: usize) -> usize {
    for skip in [1, 3, 4, 5] {
        let start = span_start + skip;
        if text.get(start..start + body.len()) == Some(body) {
            return start + pos.min(body.len());
        }
    }
    span_start
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let Some(table) = raw.elementwise.as_ref().map(|t| t.get_ref()) else {
        r.error(&raw.family, "elementwise", "family elementwise needs an [elementwise] table".into());
        return;
    };
    if spec.outputs.len() != 1 {
        r.error(
            &raw.outputs,
            "outputs",
            format!(
                "family elementwise has exactly one output (the body's value), found {}",
                spec.outputs.len()
            ),
        );
    }
    if spec.inputs.is_empty() || spec.inputs.len() > MAX_INPUTS {
        r.error(
            &raw.inputs,
            "inputs",
            format!("family elementwise takes 1 to {MAX_INPUTS} inputs, found {}", spec.inputs.len()),
        );
    }
    let tensors = raw
        .inputs
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("inputs[{i}]"), t))
        .chain(raw.outputs.get_ref().iter().enumerate().map(|(i, t)| (format!("outputs[{i}]"), t)));
    for (field, t) in tensors {
        for (c, d) in t.dtypes.get_ref().iter().enumerate() {
            if !FLOATS.iter().any(|f| f.name() == d.get_ref()) {
                r.error(
                    d,
                    &format!("{field}.dtypes[{c}]"),
                    format!(
                        "family elementwise computes float16, bfloat16 and float32 tensors, not {}",
                        d.get_ref()
                    ),
                );
            }
        }
    }
    // InferDataType picks the output dtype from the input dtypes, so they must decide it.
    let columns = spec.columns();
    for c in 0..columns {
        let key = |k: usize| spec.inputs.iter().map(|t| t.dtypes[k]).collect::<Vec<_>>();
        if let Some(first) = (0..c).find(|k| key(*k) == key(c)) {
            r.error(
                &raw.inputs.get_ref()[0].dtypes.get_ref()[c],
                &format!("inputs[0].dtypes[{c}]"),
                format!(
                    "combinations {} and {} have the same input dtypes: the output dtype must follow from the inputs'",
                    first + 1,
                    c + 1
                ),
            );
        }
    }
    match DType::parse(table.compute.get_ref()) {
        Some(DType::Float32) => {}
        Some(other) => r.error(
            &table.compute,
            "elementwise.compute",
            format!(
                "compute dtype {other} is not supported: bodies are computed in float32 (A2 has no bfloat16 arithmetic, and float16 would not meet the 1-ULP bar)"
            ),
        ),
        None => r.error(
            &table.compute,
            "elementwise.compute",
            format!("unknown compute dtype `{}`; the supported one is float32", table.compute.get_ref()),
        ),
    }
    for (i, a) in spec.attrs.iter().enumerate() {
        if !matches!(a.kind, AttrKind::Float | AttrKind::Int) {
            r.error(
                &raw.attrs[i].kind,
                &format!("attrs[{i}].type"),
                format!(
                    "attr `{}` is a {}: elementwise attrs are numbers the body can use (float or int)",
                    a.name,
                    a.kind.name()
                ),
            );
        }
    }

    let body = table.body.get_ref();
    let at = |pos: usize| body_text_offset(r.text, table.body.span().start, body, pos);
    let inputs: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
    let attrs: Vec<String> = spec.attrs.iter().map(|a| a.name.clone()).collect();
    let field = "elementwise.body";
    let syntax = match expr::parse(body) {
        Ok(s) => s,
        Err(e) => {
            let offset = at(e.pos);
            r.error_at(offset, field, format!("the body does not parse: {}", e.message));
            return;
        }
    };
    let node = match expr::resolve(&syntax, Scope { inputs: &inputs, attrs: &attrs }) {
        Ok(n) => n,
        Err(errors) => {
            for e in errors {
                let offset = at(e.pos);
                r.error_at(offset, field, e.message);
            }
            return;
        }
    };
    let mut used = vec![false; inputs.len()];
    node.inputs_used(&mut used);
    for (i, u) in used.iter().enumerate() {
        if !u {
            r.error(
                &raw.inputs.get_ref()[i].name,
                &format!("inputs[{i}].name"),
                format!("input `{}` is not used by the body `{body}`", inputs[i]),
            );
        }
    }
    if used.iter().any(|u| !u) {
        return;
    }
    if let Err(e) = lower::lower(&expr::canonical(node), &inputs, &attrs) {
        let offset = at(0);
        r.error_at(offset, field, e.0);
    }
}

// ---- plan and templates ------------------------------------------------------------------

/// The tiling-data layout: the generated TilingFunc fills it, the kernel reads it, `opgen
/// plan` names the fields.
pub const TILING_FIELDS: &[TilingField] = &[
    TilingField::u32("totalLength", "elements of each input and of the output (the shape flattened)"),
    TilingField::u32("tileLength", "elements per UB pass: a multiple of 256 that fits the UB budget"),
    TilingField::u32("tileCount", "tiles in all: ceil(totalLength / tileLength)"),
    TilingField::u32("usedCores", "cores with work: min(tileCount, vector cores)"),
    TilingField::u32("tilesPerCore", "contiguous tiles per core; the first extraTiles cores take one more"),
    TilingField::u32("extraTiles", "tileCount mod usedCores"),
    TilingField::f32(
        "scalar0",
        "attr-dependent scalar 0 of the body, computed by the TilingFunc (0 if unused)",
    ),
    TilingField::f32("scalar1", "attr-dependent scalar 1 (0 if unused)"),
    TilingField::f32("scalar2", "attr-dependent scalar 2 (0 if unused)"),
    TilingField::f32("scalar3", "attr-dependent scalar 3 (0 if unused)"),
];

pub fn template_extras(spec: &OpSpec) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let body = analyse(spec)?;
    let mut m = serde_json::Map::new();
    let text = spec.elementwise().map(|p| p.body.clone()).unwrap_or_default();
    m.insert("body".into(), text.into());
    m.insert("body_canonical".into(), lower::show(&body.node, &body.inputs, &body.attrs).into());
    m.insert("program".into(), serde_json::to_value(&body.program).map_err(|e| e.to_string())?);
    m.insert("output".into(), serde_json::to_value(&spec.outputs[0]).map_err(|e| e.to_string())?);
    let columns: Vec<serde_json::Value> = (0..spec.columns())
        .map(|c| {
            serde_json::json!({
                "inputs": spec.inputs.iter().map(|t| t.dtypes[c].name()).collect::<Vec<_>>(),
                "output": spec.outputs[0].dtypes[c].name(),
            })
        })
        .collect();
    m.insert("columns".into(), columns.into());
    let attrs_used: Vec<serde_json::Value> = body
        .program
        .attrs_used
        .iter()
        .map(|&i| {
            let a = &spec.attrs[i];
            let ctype = if a.kind == AttrKind::Int { "int64_t" } else { "float" };
            serde_json::json!({ "index": i, "name": a.name, "ctype": ctype })
        })
        .collect();
    m.insert("attrs_used".into(), attrs_used.into());
    m.insert("scalar_slots".into(), lower::SCALAR_SLOTS.into());
    Ok(m)
}

// ---- verification ------------------------------------------------------------------------

/// Shapes of the sweep: every input has the shape. Quick: a dozen cases covering one element,
/// odd and unaligned tails, one core, all cores, several tiles per core, rank 3. Full: the
/// model hidden sizes by the token counts of the catalogue issue.
fn shapes(sweep: Sweep) -> Vec<Vec<usize>> {
    let mut shapes: Vec<Vec<usize>> = vec![
        vec![1, 1],
        vec![3, 7],
        vec![4, 896],
        vec![17, 4097],
        vec![1, 16384],
        vec![96, 5120],
        vec![2, 3, 5],
    ];
    if sweep == Sweep::Full {
        shapes.clear();
        for hidden in [1, 7, 896, 1536, 2048, 3584, 4096, 4097, 5120, 8192, 16384] {
            for tokens in [1, 3, 17, 128] {
                shapes.push(vec![tokens, hidden]);
            }
        }
        for hidden in [896, 4097] {
            shapes.push(vec![4096, hidden]);
        }
        shapes.push(vec![2, 7, 3, 5, 2, 9]);
    }
    shapes
}

/// Attr values of the cases: the spec defaults, 1 for an attr without one.
fn case_attrs(spec: &OpSpec) -> Vec<(String, AttrValue)> {
    spec.attrs
        .iter()
        .map(|a| {
            let v = a.default.clone().unwrap_or(match a.kind {
                AttrKind::Int => AttrValue::Int(1),
                _ => AttrValue::Float(1.0),
            });
            (a.name.clone(), v)
        })
        .collect()
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let attrs = case_attrs(spec);
    let make = |shape: &[usize], dist: Distribution, seed: u64| Case {
        shapes: spec.inputs.iter().map(|t| (t.name.clone(), shape.to_vec())).collect(),
        dist,
        seed,
        attrs: attrs.clone(),
    };
    let mut out = Vec::new();
    for (i, s) in shapes(sweep).iter().enumerate() {
        out.push(make(s, Distribution::Uniform5, 5000 + i as u64));
    }
    let others = [
        Distribution::NormalLargeMean,
        Distribution::Tiny,
        Distribution::Outlier,
        Distribution::Zeros,
        Distribution::NanInf,
    ];
    for (i, dist) in others.into_iter().enumerate() {
        let seed = 6000 + 10 * i as u64;
        match sweep {
            Sweep::Quick => {
                let shape: &[usize] = if i % 2 == 0 { &[3, 4097] } else { &[4, 896] };
                out.push(make(shape, dist, seed));
            }
            Sweep::Full => {
                out.push(make(&[4, 896], dist, seed));
                out.push(make(&[3, 16384], dist, seed + 1));
                out.push(make(&[33, 4097], dist, seed + 2));
                out.push(make(&[128, 5120], dist, seed + 3));
            }
        }
    }
    out
}

pub fn derived_shape(_spec: &OpSpec, _i: usize, first: &[usize]) -> Vec<usize> {
    first.to_vec()
}

/// The bars of the catalogue activations: (16-bit tie window in float32 ulps of g, float32
/// ULP bar), from the full sweep (`opgen verify --sweep full --no-sanitize`, largest near-tie
/// distance and max ULP over every case; the bars leave about 2x room). The float32 error of
/// these bodies grows with the Exp argument (e^u carries |u|·2^-24 relative error from rounding
/// u), so the windows are wider than a few roundings would need, and the float32 ULP bars are
/// set by the tails where the result is small (x·sigmoid(z) for very negative x; gelu_erf's
/// erfc there): relative error of a few 2^-24 per step times the conditioning of the step.
fn catalogue_bars(name: &str) -> Option<(u32, u32)> {
    Some(match name {
        // Full sweep 2026-12-01 (67 cases per dtype): largest near-tie distance f16/bf16, max ULP
        // float32.
        "gelu_tanh" => (4, 300),  // 1.5 / 0.0, 151
        "gelu_erf" => (6, 480),   // 2.5 / 0.0, 231
        "fast_gelu" => (40, 220), // 2.0 / 16.6, 104
        // 2.5 (f16), 3 ULP float32 over the quick sweep; the full sweep's NormalLargeMean cases
        // with gate < -87 fail (bf16 1 ULP off, float32 4187 ULP): e^min(z, 0) underflows into
        // float32 subnormals and loses its relative accuracy, a kernel defect (not a tie).
        "swiglu" => (6, 8),
        _ => return None,
    })
}

/// Catalogue ops: 16-bit outputs exactly RNE except near ties (window per op), float32 within
/// the op's measured ULP bar, both with the bias gate and the CANN gate. User-declared bodies
/// have no measurement: 16-bit within 1 ULP, float32 the CANN standard, plus the bias gate.
fn tolerance(spec: &OpSpec, dtype: DType) -> Tolerance {
    let sixteen = matches!(dtype, DType::Float16 | DType::BFloat16);
    match (catalogue_bars(&spec.name), sixteen) {
        (Some((window, _)), true) => Tolerance::Rne { tie_window: window },
        (Some((_, ulp)), false) => Tolerance::Ulp { max_ulp: ulp },
        (None, true) => Tolerance::Ulp { max_ulp: 1 },
        (None, false) => Tolerance::CannOnly,
    }
}

/// The catalogue ops and their hand-written references (one or two inputs).
enum Reference {
    Unary(fn(f64) -> f64),
    Binary(fn(f64, f64) -> f64),
}

fn catalogue_reference(name: &str) -> Option<Reference> {
    Some(match name {
        "gelu_tanh" => Reference::Unary(activation::gelu_tanh),
        "gelu_erf" => Reference::Unary(activation::gelu_erf),
        "fast_gelu" => Reference::Unary(activation::fast_gelu),
        "swiglu" => Reference::Binary(activation::swiglu),
        _ => return None,
    })
}

/// Catalogue ops by name against `crate::reference::activation`; any other op against the f64
/// evaluation of its own body.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, String> {
    let first = &inputs.first().ok_or("no inputs")?.1;
    if let Some((name, t)) = inputs.iter().find(|(_, t)| t.shape != first.shape) {
        return Err(format!("input `{name}` has shape {:?}, the first input {:?}", t.shape, first.shape));
    }
    let column = (0..spec.columns())
        .find(|&c| spec.inputs.iter().zip(inputs).all(|(t, (_, v))| t.dtypes[c] == v.dtype))
        .ok_or("the inputs' dtypes match no dtype combination of the spec")?;
    let out_dtype = spec.outputs[0].dtypes[column];
    let values = match catalogue_reference(&spec.name) {
        Some(Reference::Unary(f)) => {
            let [(_, x)] = inputs else {
                return Err(format!(
                    "catalogue op `{}` takes one input, the spec declares {}",
                    spec.name,
                    inputs.len()
                ));
            };
            activation::unary(x, f)
        }
        Some(Reference::Binary(f)) => {
            let [(_, a), (_, b)] = inputs else {
                return Err(format!(
                    "catalogue op `{}` takes two inputs, the spec declares {}",
                    spec.name,
                    inputs.len()
                ));
            };
            activation::binary(a, b, f).map_err(|e| e.to_string())?
        }
        None => {
            let body = analyse(spec)?;
            let attr_values: Vec<f64> = spec
                .attrs
                .iter()
                .map(|a| {
                    attrs
                        .iter()
                        .find(|(n, _)| n == &a.name)
                        .and_then(|(_, v)| v.as_f64())
                        .ok_or_else(|| format!("attr `{}` missing", a.name))
                })
                .collect::<Result<_, _>>()?;
            let columns: Vec<Vec<f64>> = inputs.iter().map(|(_, t)| t.to_f64()).collect();
            eval::eval_all(&body.node, &columns, &attr_values)
        }
    };
    Ok(vec![Expected {
        name: spec.outputs[0].name.clone(),
        dtype: out_dtype,
        shape: first.shape.clone(),
        values,
        tolerance: tolerance(spec, out_dtype),
    }])
}
