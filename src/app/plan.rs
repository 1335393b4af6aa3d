//! `plan`: what the generated TilingFunc decides for a shape (run on the twin, no launch).

use super::gen::{load_specs, render};
use super::AppError;
use crate::family::{tiling_fields, tiling_value_label};
use crate::plan::soc;
use crate::spec::{AttrValue, OpSpec};
use crate::tensor::HostTensor;
use crate::verify::protocol::RunnerReport;
use crate::verify::{self, sweep::shapes_from_first, BuildOptions, CaseInput};
use crate::DType;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub specs: Option<PathBuf>,
    pub op: String,
    pub dtype: DType,
    /// The first input's shape, then optional `name=shape` overrides.
    pub shapes: Vec<String>,
    /// Other inputs' dtypes, `name=dtype`: they pick among the combinations `dtype` leaves.
    pub input_dtypes: Vec<String>,
    pub attrs: Vec<String>,
    pub soc: String,
}

/// `4x16384` or `4,16384` → [4, 16384]; `scalar` → [].
pub fn parse_shape(text: &str) -> Result<Vec<usize>, AppError> {
    if text == "scalar" {
        return Ok(Vec::new());
    }
    text.split(['x', ','])
        .map(|d| {
            d.trim()
                .parse::<usize>()
                .map_err(|_| AppError::input(format!("bad shape `{text}`: expected dims like 4x896")))
        })
        .collect()
}

/// `name=value` attrs typed by the spec's declaration; the rest take their defaults.
pub fn parse_attrs(spec: &OpSpec, given: &[String]) -> Result<Vec<(String, AttrValue)>, AppError> {
    let mut out: Vec<(String, AttrValue)> = Vec::new();
    for a in &spec.attrs {
        let text = given.iter().find_map(|g| g.strip_prefix(&format!("{}=", a.name)));
        let value = match text {
            None => a.default.clone().ok_or_else(|| {
                AppError::input(format!("op `{}` needs --attr {}=<{}>", spec.name, a.name, a.kind.name()))
            })?,
            Some(t) => {
                let bad = || AppError::input(format!("--attr {}={t}: not a {}", a.name, a.kind.name()));
                match a.kind {
                    crate::spec::AttrKind::Float => AttrValue::Float(t.parse().map_err(|_| bad())?),
                    crate::spec::AttrKind::Int => AttrValue::Int(t.parse().map_err(|_| bad())?),
                    crate::spec::AttrKind::Bool => AttrValue::Bool(t.parse().map_err(|_| bad())?),
                    crate::spec::AttrKind::String => AttrValue::String(t.to_string()),
                }
            }
        };
        out.push((a.name.clone(), value));
    }
    for g in given {
        let name = g.split('=').next().unwrap_or("");
        if spec.attr(name).is_none() {
            let known: Vec<&str> = spec.attrs.iter().map(|a| a.name.as_str()).collect();
            return Err(AppError::input(format!(
                "op `{}` has no attr `{name}`; it has: {}",
                spec.name,
                known.join(", ")
            )));
        }
    }
    Ok(out)
}

/// The dtype combination a call means (from `--dtype`, the inputs' dtypes and an explicit
/// output-dtype attr, else its default: see `OpSpec::select_column`) and the call's attrs: the given ones, the
/// spec's defaults for the rest, the output-dtype attr set to the combination's.
pub fn combination(
    spec: &OpSpec,
    dtype: Option<DType>,
    inputs: &[(&str, DType)],
    given_attrs: &[String],
) -> Result<(usize, Vec<(String, AttrValue)>), AppError> {
    let attrs = parse_attrs(spec, given_attrs)?;
    // Given attrs count; so does the output-dtype attr's default when no --dtype says otherwise
    // (a torch call without out_dtype gets the default's dtype too).
    let dtype_attr = spec.output_dtype_attr().map(|a| a.name.as_str());
    let stated: Vec<(String, AttrValue)> = attrs
        .iter()
        .filter(|(name, _)| {
            given_attrs.iter().any(|g| g.split('=').next() == Some(name.as_str()))
                || (dtype.is_none() && dtype_attr == Some(name.as_str()))
        })
        .cloned()
        .collect();
    let column = spec.select_column(dtype, inputs, &stated).map_err(AppError::input)?;
    Ok((column, spec.attrs_for_column(column, &attrs)))
}

pub fn plan(opts: &PlanOptions) -> Result<(), AppError> {
    let specs = load_specs(opts.specs.as_deref(), std::slice::from_ref(&opts.op))?;
    let spec = &specs[0];
    let input_dtypes = parse_input_dtypes(&opts.input_dtypes)?;
    let named: Vec<(&str, DType)> = input_dtypes.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let (column, attrs) = combination(spec, Some(opts.dtype), &named, &opts.attrs)?;
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let (first, explicit) = split_shapes(&opts.shapes)?;
    let shapes = shapes_from_first(spec, &first, &explicit);
    let project = render(&specs)?;
    let runner = verify::build_runner(&project, spec, column, BuildOptions { sanitize: false })
        .map_err(|e| AppError::failed(e.to_string()))?;
    // The TilingFunc reads shapes and dtypes only: zero-filled inputs are enough.
    let inputs: Vec<(String, HostTensor)> = shapes
        .iter()
        .map(|(name, shape)| {
            let dtype = spec.input_dtype(name, column).unwrap_or(DType::Float32);
            (name.clone(), HostTensor::zeros(dtype, shape))
        })
        .collect();
    let run = verify::run_case(
        &runner,
        spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &spec.refs },
        true,
    )
    .map_err(|e| AppError::input(e.to_string()))?;
    println!("{}", format_plan(spec, soc, &shapes, &run.parsed));
    Ok(())
}

/// `--input-dtype name=dtype` arguments.
fn parse_input_dtypes(given: &[String]) -> Result<Vec<(String, DType)>, AppError> {
    given
        .iter()
        .map(|g| {
            let (name, text) = g
                .split_once('=')
                .ok_or_else(|| AppError::input(format!("--input-dtype {g}: expected name=dtype")))?;
            let dtype = crate::app::args::parse_dtype(text)
                .map_err(|e| AppError::input(format!("--input-dtype {g}: {e}")))?;
            Ok((name.to_string(), dtype))
        })
        .collect()
}

/// Input shapes by name.
pub type NamedShapes = Vec<(String, Vec<usize>)>;

/// The unnamed first `--shape` and the `name=dims` overrides.
pub(crate) fn split_shapes(given: &[String]) -> Result<(Vec<usize>, NamedShapes), AppError> {
    let mut first = None;
    let mut explicit = Vec::new();
    for s in given {
        match s.split_once('=') {
            Some((name, shape)) => explicit.push((name.to_string(), parse_shape(shape)?)),
            None if first.is_none() => first = Some(parse_shape(s)?),
            None => {
                return Err(AppError::input(format!(
                    "a second unnamed --shape `{s}`: name it, e.g. --shape gamma={s}"
                )))
            }
        }
    }
    let first = first
        .ok_or_else(|| AppError::input("--shape <dims> is needed (the first input's shape, e.g. 4x896)"))?;
    Ok((first, explicit))
}

/// The plan as people read it: block dim, then each tiling field with its meaning.
pub fn format_plan(
    spec: &OpSpec,
    soc: &soc::Soc,
    shapes: &[(String, Vec<usize>)],
    report: &RunnerReport,
) -> String {
    let mut s = format!(
        "{} ({}) on {} ({} vector cores, {} KiB UB)\n",
        spec.name,
        spec.op_type,
        soc.name,
        soc.vector_cores,
        soc.ub_bytes / 1024
    );
    for (name, shape) in shapes {
        s.push_str(&format!("  input {name}: {shape:?}\n"));
    }
    s.push_str(&format!("  block dim: {}\n", report.block_dim));
    s.push_str(&format!("  workspace: {} bytes\n", report.workspace_bytes));
    for field in tiling_fields(spec) {
        // A field the runner did not report shows as JSON's null, as it always has.
        let value = report.tiling.get(field.name).cloned().unwrap_or_default();
        // The family names what a mode-like value means; the rest print as numbers.
        let words = value.as_u64().and_then(|v| tiling_value_label(spec, field.name, v).map(|w| (v, w)));
        let shown = match words {
            Some((v, words)) => format!("{v} ({words})"),
            None => value.to_string(),
        };
        s.push_str(&format!("  {:<14} {:<28} {}\n", field.name, shown, field.doc));
    }
    s.trim_end().to_string()
}
