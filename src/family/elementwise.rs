//! Family elementwise.

use crate::plan::TilingField;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, Family, OpSpec, Reporter};
use crate::tensor::HostTensor;
use crate::verify::{Case, Expected, Sweep};

pub const TILING_FIELDS: &[TilingField] = &[];

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, _spec: &OpSpec) {
    super::not_implemented(r, raw, Family::Elementwise);
}

pub fn template_extras(_spec: &OpSpec) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    Ok(serde_json::Map::new())
}

pub fn cases(_spec: &OpSpec, _sweep: Sweep) -> Vec<Case> {
    Vec::new()
}

pub fn derived_shape(_spec: &OpSpec, _i: usize, first: &[usize]) -> Vec<usize> {
    first.to_vec()
}

pub fn expected(
    spec: &OpSpec,
    _inputs: &[(String, HostTensor)],
    _attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, String> {
    Err(format!("no reference for op `{}`", spec.name))
}

pub(crate) fn params(raw: &RawSpec) -> crate::spec::FamilyParams {
    let Some(t) = &raw.elementwise else { return crate::spec::FamilyParams::None };
    let t = t.get_ref();
    crate::spec::FamilyParams::Elementwise(crate::spec::ElementwiseParams {
        body: t.body.get_ref().clone(),
        compute: crate::DType::parse(t.compute.get_ref()).unwrap_or(crate::DType::Float32),
        body_offset: t.body.span().start + 1,
    })
}
