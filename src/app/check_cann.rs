//! `check-cann`: every generated kernel (once per dtype combination) and op_host file,
//! syntax-checked with g++ against a real CANN toolkit's headers.

use super::gen::{load_specs, render};
use super::AppError;
use crate::codegen;
use crate::toolchain::{self, cann::Need, CheckOptions, KernelDefines};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct CheckCannOptions {
    pub cann: Option<PathBuf>,
    pub specs: Option<PathBuf>,
    pub ops: Vec<String>,
}

pub fn check_cann(opts: &CheckCannOptions) -> Result<(), AppError> {
    let toolkit = toolchain::cann::find_toolkit(opts.cann.as_deref(), Need::Headers)
        .map_err(|e| AppError::input(format!("check-cann: {e}")))?;
    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    let project = render(&specs)?;
    // A scratch copy: check-cann never touches the user's output directory.
    let dir = crate::repo_root().join("target").join("opgen-check-cann");
    codegen::write_atomically(&dir, &project).map_err(|e| AppError::failed(e.to_string()))?;
    let kernel_defines = specs
        .iter()
        .map(|spec| {
            let variants = (0..spec.columns())
                .map(|c| {
                    spec.column(c)
                        .into_iter()
                        .map(|(name, dtype)| {
                            (format!("DTYPE_{}", name.to_ascii_uppercase()), dtype.cpp_type().to_string())
                        })
                        .collect()
                })
                .collect();
            KernelDefines::new(Path::new("op_kernel").join(format!("{}.cpp", spec.file_stem())), variants)
        })
        .collect();
    let options = CheckOptions { kernel_defines, ..CheckOptions::default() };
    let report = toolchain::check_project(&dir, &toolkit, &options)
        .map_err(|e| AppError::failed(format!("check-cann: {e}")))?;
    println!("{report}");
    if report.passed() {
        Ok(())
    } else {
        Err(AppError::failed(format!(
            "check-cann: {} of {} checks failed against CANN {} at {}",
            report.failures().count(),
            report.entries.len(),
            toolkit.version,
            toolkit.root.display()
        )))
    }
}
