//! `gen-ops`: specs → project directory, and the golden copy's staleness check.

use super::AppError;
use crate::codegen::{self, Project};
use crate::family;
use crate::spec::OpSpec;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct GenOptions {
    /// A spec file or directory; default: the repository's `kernels/`.
    pub specs: Option<PathBuf>,
    /// Output directory; default: `target/opgen` under the repository.
    pub out: Option<PathBuf>,
    /// Only these ops (empty: all).
    pub ops: Vec<String>,
    /// Compare the golden copy with a fresh rendering instead of writing anything.
    pub check: bool,
}

pub use crate::family::catalogue_dir;

/// Loads the specs a command works on, as one error message on failure (exit code 2).
pub fn load_specs(specs: Option<&Path>, ops: &[String]) -> Result<Vec<OpSpec>, AppError> {
    family::load_selection(specs, ops).map_err(AppError::input)
}

pub fn render(specs: &[OpSpec]) -> Result<Project, AppError> {
    let refs: Vec<&OpSpec> = specs.iter().collect();
    codegen::render_project(&refs).map_err(|e| AppError::input(format!("error: {e}")))
}

pub fn gen_ops(opts: &GenOptions) -> Result<(), AppError> {
    let root = crate::repo_root();
    let golden = root.join(codegen::GOLDEN_DIR);
    if opts.check {
        // The golden copy is the whole catalogue's project: checking a part of it against a
        // selection would report every other op's files as stale, so a selection is refused.
        if !opts.ops.is_empty() || opts.specs.is_some() {
            return Err(AppError::input(
                "gen-ops --check compares the whole catalogue with the golden copy; it takes no \
                 --ops or --specs (drop them, or run gen-ops with them to write a project)",
            ));
        }
        let project = render(&load_specs(None, &[])?)?;
        let outcome = codegen::check_against(&golden, &project);
        if outcome.is_fresh() {
            println!("gen-ops --check: {} golden files are up to date", project.files.len());
            return Ok(());
        }
        let mut message = format!("gen-ops --check: the golden copy in {} is stale:", codegen::GOLDEN_DIR);
        for path in &outcome.stale {
            message.push_str(&format!("\n  differs or missing: {path}"));
        }
        for path in &outcome.extra {
            message.push_str(&format!("\n  no longer generated: {path}"));
        }
        message.push_str("\nrun `cargo xtask gen-ops` and commit the result");
        return Err(AppError::failed(message));
    }

    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    let project = render(&specs)?;
    let out = opts.out.clone().unwrap_or_else(|| root.join(codegen::DEFAULT_OUT_DIR));
    codegen::write_atomically(&out, &project).map_err(|e| AppError::failed(format!("error: {e}")))?;
    println!("gen-ops: {} ops, {} files written to {}", specs.len(), project.files.len(), out.display());
    // The golden copy follows the full catalogue only.
    if opts.specs.is_none() && opts.ops.is_empty() {
        let outcome = codegen::check_against(&golden, &project);
        if outcome.is_fresh() {
            println!("gen-ops: golden copy {} is up to date", codegen::GOLDEN_DIR);
        } else {
            codegen::write_atomically(&golden, &project)
                .map_err(|e| AppError::failed(format!("error: {e}")))?;
            println!(
                "gen-ops: golden copy {} updated ({} files changed, {} removed)",
                codegen::GOLDEN_DIR,
                outcome.stale.len(),
                outcome.extra.len()
            );
        }
    }
    Ok(())
}
