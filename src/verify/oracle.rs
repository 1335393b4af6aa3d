//! The expected outputs of a case, from the references in `crate::reference`. The reference
//! is chosen by the op's name, never by what the spec says the op does: a spec that declares
//! the wrong semantics must fail verification, not be checked against itself.

use super::compare::Tolerance;
use crate::reference::{self, ReferenceError};
use crate::spec::{AttrValue, OpSpec};
use crate::tensor::HostTensor;
use crate::DType;

/// One output's expected values (unrounded f64) and the bar it must clear.
#[derive(Debug, Clone)]
pub struct Expected {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
    pub tolerance: Tolerance,
}

fn attr_f64(attrs: &[(String, AttrValue)], name: &str) -> Result<f64, String> {
    attrs
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.as_f64())
        .ok_or_else(|| format!("attr `{name}` missing"))
}

fn input<'a>(inputs: &'a [(String, HostTensor)], i: usize) -> &'a HostTensor {
    &inputs[i].1
}

/// The project's bar for 16-bit outputs of computing ops: 1 ULP; float32 outputs and
/// reductions: the CANN standard (MERE < T, MARE < 10·T).
fn compute_tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::Float16 | DType::BFloat16 => Tolerance::Ulp { max_ulp: 1 },
        _ => Tolerance::CannOnly,
    }
}

fn err(e: ReferenceError) -> String {
    e.to_string()
}

pub fn expected_outputs(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, String> {
    let out = |i: usize| &spec.outputs[i];
    match spec.name.as_str() {
        "rms_norm" => {
            let (x, gamma) = (input(inputs, 0), input(inputs, 1));
            let r = reference::row_norm::rms_norm(x, gamma, attr_f64(attrs, "epsilon")?).map_err(err)?;
            Ok(vec![
                Expected { name: out(0).name.clone(), dtype: x.dtype, shape: x.shape.clone(), values: r.y, tolerance: compute_tolerance(x.dtype) },
                Expected { name: out(1).name.clone(), dtype: DType::Float32, shape: r.rstd_shape, values: r.rstd, tolerance: Tolerance::CannOnly },
            ])
        }
        "add_rms_norm" => {
            let (x1, x2, gamma) = (input(inputs, 0), input(inputs, 1), input(inputs, 2));
            let r = reference::row_norm::add_rms_norm(x1, x2, gamma, attr_f64(attrs, "epsilon")?).map_err(err)?;
            Ok(vec![
                Expected { name: out(0).name.clone(), dtype: x1.dtype, shape: x1.shape.clone(), values: r.y, tolerance: compute_tolerance(x1.dtype) },
                Expected { name: out(1).name.clone(), dtype: DType::Float32, shape: r.rstd_shape, values: r.rstd, tolerance: Tolerance::CannOnly },
                Expected { name: out(2).name.clone(), dtype: x1.dtype, shape: x1.shape.clone(), values: r.x_sum, tolerance: Tolerance::Ulp { max_ulp: 0 } },
            ])
        }
        other => Err(format!(
            "no reference for op `{other}`: catalogue ops are checked against hand-written references in src/reference"
        )),
    }
}
