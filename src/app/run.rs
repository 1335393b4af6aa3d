//! `run`: one op on the CPU twin with .npy inputs and outputs.

use super::gen::{load_specs, render};
use super::plan::{combination, format_plan};
use super::AppError;
use crate::npy;
use crate::plan::soc;
use crate::spec::OpSpec;
use crate::tensor::HostTensor;
use crate::verify::{self, BuildOptions, CaseInput};
use crate::DType;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub specs: Option<PathBuf>,
    pub op: String,
    /// The dtype combination (the first input's dtype; dequant_int8: the output's); default:
    /// the one the inputs' .npy files and the attrs select.
    pub dtype: Option<DType>,
    /// `name=path.npy`, one per input.
    pub inputs: Vec<String>,
    pub attrs: Vec<String>,
    pub out: PathBuf,
    pub soc: String,
    pub sanitize: bool,
}

/// Every input of `spec` from its `name=path.npy` argument, as the file holds it ('<u2' is
/// bfloat16); the combination is picked from these dtypes afterwards. Shared by the twin and NPU
/// paths of `opgen run`.
pub(crate) fn read_inputs(spec: &OpSpec, given: &[String]) -> Result<Vec<(String, HostTensor)>, AppError> {
    let given: Vec<(String, PathBuf)> = given
        .iter()
        .map(|s| {
            s.split_once('=')
                .map(|(n, p)| (n.to_string(), PathBuf::from(p)))
                .ok_or_else(|| AppError::input(format!("--input `{s}`: expected name=path.npy")))
        })
        .collect::<Result<_, _>>()?;
    for (name, _) in &given {
        if !spec.inputs.iter().any(|t| &t.name == name) {
            let known: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
            return Err(AppError::input(format!(
                "op `{}` has no input `{name}`; its inputs: {}",
                spec.name,
                known.join(", ")
            )));
        }
    }
    spec.inputs
        .iter()
        .map(|t| {
            let path = given.iter().find(|(n, _)| n == &t.name).map(|(_, p)| p).ok_or_else(|| {
                AppError::input(format!("op `{}` needs --input {}=<file.npy>", spec.name, t.name))
            })?;
            let tensor =
                npy::read_npy(path, None).map_err(|e| AppError::input(format!("input `{}`: {e}", t.name)))?;
            Ok((t.name.clone(), tensor))
        })
        .collect()
}

pub fn run(opts: &RunOptions) -> Result<(), AppError> {
    let specs = load_specs(opts.specs.as_deref(), std::slice::from_ref(&opts.op))?;
    let spec = &specs[0];
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let inputs = read_inputs(spec, &opts.inputs)?;
    let dtypes: Vec<(&str, DType)> = inputs.iter().map(|(n, t)| (n.as_str(), t.dtype)).collect();
    let (column, attrs) = combination(spec, opts.dtype, &dtypes, &opts.attrs)?;
    let project = render(&specs)?;
    // Caches the kernel updates in place come back after the outputs, written like them.
    let inplace = spec.mutated_inputs();
    let runner = verify::build_runner(&project, spec, column, BuildOptions { sanitize: opts.sanitize })
        .map_err(|e| AppError::failed(e.to_string()))?;
    let result = verify::run_case(
        &runner,
        spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &inplace },
        false,
    )
    .map_err(|e| match e {
        verify::TwinError::HostRejected(_) => AppError::input(e.to_string()),
        _ => AppError::failed(e.to_string()),
    })?;
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| AppError::failed(format!("{}: {e}", opts.out.display())))?;
    let shapes: Vec<(String, Vec<usize>)> =
        inputs.iter().map(|(n, t)| (n.clone(), t.shape.clone())).collect();
    println!("{}", format_plan(spec, soc, &shapes, &result.report));
    for (name, tensor) in &result.outputs {
        let path = opts.out.join(format!("{name}.npy"));
        npy::write_npy(&path, tensor).map_err(|e| AppError::failed(e.to_string()))?;
        let how = if inplace.contains(name) { ", updated in place" } else { "" };
        println!("wrote {} ({} {:?}{how})", path.display(), tensor.dtype, tensor.shape);
    }
    Ok(())
}
