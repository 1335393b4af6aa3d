//! What a template sees of an op.

use crate::family;
use crate::family::tiling_fields;
use crate::plan::TilingField;
use crate::spec::{Attr, OpSpec, TensorArg};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct OpContext<'a> {
    pub spec: &'a OpSpec,
    pub name: &'a str,
    pub op_type: &'a str,
    /// msOpGen file stem and kernel entry name (`opgen_rms_norm`).
    pub stem: String,
    pub tiling_class: String,
    pub tiling_fields: &'static [TilingField],
    pub inputs: &'a [TensorArg],
    pub outputs: &'a [TensorArg],
    pub attrs: &'a [Attr],
    pub targets: &'a [String],
    /// The spec file as the banner names it.
    pub source: String,
    /// Inputs the kernel updates in place.
    pub mutated: Vec<String>,
    /// The ref outputs (`OpSpec::refs`): declared in the OpDef after `outputs`, and passed to
    /// the kernel entry after them as the input's address again.
    pub refs: Vec<RefOutput>,
    /// The UB the host's plans leave to the APIs' scratch (the SoC table's, not a template's).
    pub ub_reserved_bytes: u64,
    /// What the family adds (row_norm: `fused`, `gamma`; elementwise: the lowered program).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A ref output: the input of the same name (`tensor`) and its index among the inputs.
#[derive(Debug, Serialize)]
pub struct RefOutput {
    #[serde(flatten)]
    pub tensor: TensorArg,
    pub input: usize,
}

impl<'a> OpContext<'a> {
    pub fn new(spec: &'a OpSpec) -> Result<Self, family::FamilyError> {
        Ok(OpContext {
            spec,
            name: &spec.name,
            op_type: &spec.op_type,
            stem: spec.file_stem(),
            tiling_class: format!("{}TilingData", spec.op_type),
            tiling_fields: tiling_fields(spec),
            inputs: &spec.inputs,
            outputs: &spec.outputs,
            attrs: &spec.attrs,
            targets: &spec.targets,
            source: banner_source(&spec.source),
            mutated: spec.mutated_inputs(),
            refs: spec
                .ref_outputs()
                .into_iter()
                .map(|t| RefOutput {
                    input: spec.inputs.iter().position(|i| i.name == t.name).expect("a ref names an input"),
                    tensor: t,
                })
                .collect(),
            ub_reserved_bytes: crate::plan::soc::UB_API_SCRATCH_BYTES_A2,
            extra: family::template_extras(spec)?,
        })
    }
}

/// The spec path as written in banners: relative to the repository when inside it (so the
/// output does not depend on where the checkout lives), else the file name alone.
pub fn banner_source(path: &Path) -> String {
    let root = crate::repo_root();
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    let canonical = absolute.canonicalize().unwrap_or(absolute);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match canonical.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
    }
}
