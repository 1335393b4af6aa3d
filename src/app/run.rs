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
    /// How bfloat16 outputs are spelt; default: as the first bfloat16 input was ('<u2' when
    /// no input is bfloat16).
    pub bf16_npy: Option<npy::Bf16Npy>,
}

/// Every input of `spec` from its `name=path.npy` argument, as the file holds it ('<u2' is
/// bfloat16); the combination is picked from these dtypes afterwards. Shared by the twin and NPU
/// paths of `opgen run`.
#[cfg_attr(not(opgen_acl), allow(dead_code))] // the NPU path's, built with ACL only
pub(crate) fn read_inputs(spec: &OpSpec, given: &[String]) -> Result<Vec<(String, HostTensor)>, AppError> {
    Ok(read_input_files(spec, given)?.into_iter().map(|(n, f)| (n, f.tensor)).collect())
}

/// [`read_inputs`], keeping each file's bfloat16 spelling.
fn read_input_files(spec: &OpSpec, given: &[String]) -> Result<Vec<(String, npy::NpyFile)>, AppError> {
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
            let file = npy::read_npy_file(path, None)
                .map_err(|e| AppError::input(format!("input `{}`: {e}", t.name)))?;
            Ok((t.name.clone(), file))
        })
        .collect()
}

pub fn run(opts: &RunOptions) -> Result<(), AppError> {
    let specs = load_specs(opts.specs.as_deref(), std::slice::from_ref(&opts.op))?;
    let spec = &specs[0];
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let files = read_input_files(spec, &opts.inputs)?;
    // Outputs are written the way the user's own bfloat16 files are, unless told otherwise.
    let bf16_npy =
        opts.bf16_npy.or_else(|| files.iter().find_map(|(_, f)| f.bf16)).unwrap_or(npy::Bf16Npy::U2);
    let inputs: Vec<(String, HostTensor)> = files.into_iter().map(|(n, f)| (n, f.tensor)).collect();
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
    println!("{}", format_plan(spec, soc, &shapes, &result.parsed));
    for (name, tensor) in &result.outputs {
        let path = opts.out.join(format!("{name}.npy"));
        npy::write_npy_as(&path, tensor, bf16_npy).map_err(|e| AppError::failed(e.to_string()))?;
        let how = if inplace.contains(name) { ", updated in place" } else { "" };
        let spelt = if tensor.dtype == DType::BFloat16 {
            format!(" as '{}'", bf16_npy.descr())
        } else {
            String::new()
        };
        println!("wrote {} ({} {:?}{spelt}{how})", path.display(), tensor.dtype, tensor.shape);
    }
    Ok(())
}
