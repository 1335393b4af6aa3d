//! Family kv_layout.

use crate::plan::TilingField;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, Family, OpSpec, Reporter};
use crate::tensor::HostTensor;
use crate::verify::{Case, Expected, Sweep};

pub const TILING_FIELDS: &[TilingField] = &[];

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, _spec: &OpSpec) {
    super::not_implemented(r, raw, Family::KvLayout);
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

pub(crate) fn params(raw: &RawSpec) -> crate::spec::FamilyParams {
    let kind = raw
        .kv_layout
        .as_ref()
        .and_then(|t| crate::spec::KvKind::ALL.into_iter().find(|k| k.name() == t.get_ref().kind.get_ref()));
    crate::spec::FamilyParams::KvLayout { kind }
}
