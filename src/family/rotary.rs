//! Family rotary.

use crate::plan::TilingField;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, Family, OpSpec, Reporter};
use crate::tensor::HostTensor;
use crate::verify::{Case, Expected, Sweep};

pub const TILING_FIELDS: &[TilingField] = &[];

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, _spec: &OpSpec) {
    super::not_implemented(r, raw, Family::Rotary);
}

pub fn template_extras(_spec: &OpSpec) -> serde_json::Map<String, serde_json::Value> {
    serde_json::Map::new()
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
