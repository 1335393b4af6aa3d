//! Everything that differs between op families, one module per family: the spec rules
//! (roles of inputs/outputs/attrs, dtypes it can compute), the tiling-data layout, the
//! templates and their extra context, the verification cases, the shape rule, and which
//! reference checks it. The shared machinery (spec parsing, codegen, the twin, verify)
//! dispatches here; adding a family means a module here, its templates, and an arm in each
//! `match` below.

pub mod elementwise;
pub mod kv_layout;
pub mod rotary;
pub mod row_norm;

use crate::dtype::DType;
use crate::plan::TilingField;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, Family, FamilyParams, OpSpec, Reporter};
use crate::tensor::HostTensor;
use crate::verify::{Case, Expected, Sweep};

/// The family's parameters from its spec table.
pub(crate) fn params(family: Family, raw: &RawSpec) -> FamilyParams {
    match family {
        Family::RowNorm => row_norm::params(raw),
        Family::Rotary => FamilyParams::Rotary,
        Family::Elementwise => elementwise::params(raw),
        Family::KvLayout => kv_layout::params(raw),
    }
}

/// The family's structure rules (run after the generic rules passed).
pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, family: Family, spec: &OpSpec) {
    match family {
        Family::RowNorm => row_norm::check(r, raw, spec),
        Family::Rotary => rotary::check(r, raw, spec),
        Family::Elementwise => elementwise::check(r, raw, spec),
        Family::KvLayout => kv_layout::check(r, raw, spec),
    }
}

pub fn tiling_fields(spec: &OpSpec) -> &'static [TilingField] {
    match spec.family {
        Family::RowNorm => row_norm::TILING_FIELDS,
        Family::Rotary => rotary::TILING_FIELDS,
        Family::Elementwise => elementwise::TILING_FIELDS,
        Family::KvLayout => kv_layout::tiling_fields(spec),
    }
}

/// (kernel template, op_host template).
pub fn templates(family: Family) -> (&'static str, &'static str) {
    match family {
        Family::RowNorm => ("kernel/row_norm.cpp.j2", "host/row_norm.cpp.j2"),
        Family::Rotary => ("kernel/rotary.cpp.j2", "host/rotary.cpp.j2"),
        Family::Elementwise => ("kernel/elementwise.cpp.j2", "host/elementwise.cpp.j2"),
        Family::KvLayout => ("kernel/kv_layout.cpp.j2", "host/kv_layout.cpp.j2"),
    }
}

/// Extra template context, merged into the op's context (e.g. the lowered expression).
pub fn template_extras(spec: &OpSpec) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match spec.family {
        Family::RowNorm => Ok(row_norm::template_extras(spec)),
        Family::Rotary => Ok(rotary::template_extras(spec)),
        Family::Elementwise => elementwise::template_extras(spec),
        Family::KvLayout => Ok(kv_layout::template_extras(spec)),
    }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    match spec.family {
        Family::RowNorm => row_norm::cases(spec, sweep),
        Family::Rotary => rotary::cases(spec, sweep),
        Family::Elementwise => elementwise::cases(spec, sweep),
        Family::KvLayout => kv_layout::cases(spec, sweep),
    }
}

/// The shape of input `i` given the first input's shape, by the family's shape rule.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    match spec.family {
        Family::RowNorm => row_norm::derived_shape(spec, i, first),
        Family::Rotary => rotary::derived_shape(spec, i, first),
        Family::Elementwise => first.to_vec(),
        Family::KvLayout => kv_layout::derived_shape(spec, i, first),
    }
}

/// Expected outputs of a case. The reference is picked by the op's name (catalogue ops) or,
/// for user-declared elementwise ops, by evaluating the declared expression in f64.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, String> {
    match spec.family {
        Family::RowNorm => row_norm::expected(spec, inputs, attrs),
        Family::Rotary => rotary::expected(spec, inputs, attrs),
        Family::Elementwise => elementwise::expected(spec, inputs, attrs),
        Family::KvLayout => kv_layout::expected(spec, inputs, attrs),
    }
}

/// Per output element, a second value the semantics allow (NaN where there is none), or an
/// empty vector. Where an op rounds an intermediate (add_rms_norm's RNE(s·rstd) to 16 bits)
/// and the exact intermediate lies within float32 error of a rounding boundary, a correct
/// float32 kernel may land on either side; both roundings are then accepted, and nothing else.
pub fn alternates(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    output: &str,
) -> Result<Vec<f64>, String> {
    match spec.family {
        Family::RowNorm => row_norm::alternates(spec, inputs, attrs, output),
        _ => Ok(Vec::new()),
    }
}

/// For a failed output at element `flat`: where the computation loses its precision, when the
/// family can tell (elementwise: the subexpression, from f64 vs float32 emulation).
pub fn diagnose(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    output: &str,
    flat: usize,
) -> Option<String> {
    match spec.family {
        Family::Elementwise => elementwise::diagnose(spec, inputs, attrs, output, flat),
        _ => None,
    }
}

/// A case's inputs and attrs, by name.
pub type CaseData = (Vec<(String, HostTensor)>, Vec<(String, AttrValue)>);

/// The inputs and attrs of a case in dtype combination `column` when the family makes its own
/// (kv_layout: slot mappings by pattern, pre-filled caches, dequant_int8's output-dtype attr);
/// `None`: every input is drawn from the case's distribution (`app::verify::case_inputs`).
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
    match spec.family {
        Family::KvLayout => Some(kv_layout::case_inputs(spec, column, case)),
        _ => None,
    }
}

/// The dtypes the float families compute (in float32 for the 16-bit ones).
pub(crate) const FLOATS: [DType; 3] = [DType::Float16, DType::BFloat16, DType::Float32];

/// The dtype rule of families whose inputs all share the first input's float dtype (row_norm,
/// rotary): per combination, the first input must be one of [`FLOATS`] and every other input
/// must have its dtype (`mixed` says why, in the family's terms). Returns the combinations whose
/// first input is valid, with that dtype, for the family's output rules.
pub(crate) fn check_inputs_share_a_float(
    r: &mut Reporter,
    raw: &RawSpec,
    spec: &OpSpec,
    family: &str,
    mixed: &str,
) -> Vec<(usize, DType)> {
    let mut valid = Vec::new();
    for (c, x) in spec.inputs[0].dtypes.iter().enumerate() {
        if !FLOATS.contains(x) {
            r.error(
                &raw.inputs.get_ref()[0].dtypes.get_ref()[c],
                &format!("inputs[0].dtypes[{c}]"),
                format!("family {family} cannot compute {x}; it supports float16, bfloat16, float32"),
            );
            continue;
        }
        for (i, t) in spec.inputs.iter().enumerate().skip(1) {
            if t.dtypes[c] != *x {
                r.error(
                    &raw.inputs.get_ref()[i].dtypes.get_ref()[c],
                    &format!("inputs[{i}].dtypes[{c}]"),
                    format!("`{}` must have x's dtype {x} in combination {} ({mixed})", t.name, c + 1),
                );
            }
        }
        valid.push((c, *x));
    }
    valid
}

/// Attrs at their spec defaults.
pub(crate) fn default_attrs(spec: &OpSpec) -> Vec<(String, AttrValue)> {
    spec.attrs.iter().filter_map(|a| a.default.clone().map(|d| (a.name.clone(), d))).collect()
}

/// A numeric attr of a case.
pub(crate) fn attr_f64(attrs: &[(String, AttrValue)], name: &str) -> Result<f64, String> {
    attrs
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.as_f64())
        .ok_or_else(|| format!("attr `{name}` missing"))
}
