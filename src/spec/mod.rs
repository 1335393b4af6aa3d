//! Op specs: the declarative `kernels/*.toml` files, parsed into a validated [`OpSpec`].
//!
//! Parsing (`raw`) keeps source spans so every error names file:line:column and the field;
//! validation (`validate`) turns the raw form into the model (`model`) the rest of the
//! pipeline uses, or a list of every problem found.

mod columns;
mod error;
mod idents;
mod model;
mod project;
pub(crate) mod raw;
mod validate;

pub(crate) use error::Reporter;
pub use error::{SpecError, SpecErrors};
pub use idents::{camel_case, is_c_identifier, is_cpp_keyword, snake_case, CANN_BUILTIN_OP_TYPES};
pub use model::{
    Attr, AttrKind, AttrValue, Backward, ElementwiseParams, Family, FamilyParams, KvKind, OpSpec,
    RowNormParams, TensorArg,
};
pub use project::{load_project, parse_project, project_file_for, ProjectNames, PROJECT_FILE};

use std::path::{Path, PathBuf};

/// What validation needs from the families, which sit above the spec layer: their
/// parameters and structure rules. `crate::family` implements it and offers the loading
/// functions users call (`family::load_catalogue`, `family::load_file`, `family::parse_str`).
pub(crate) trait FamilyRules {
    /// The family's parameters from its spec table.
    fn params(&self, family: Family, raw: &raw::RawSpec) -> FamilyParams;
    /// The family's structure rules (run after the generic rules passed).
    fn check(&self, r: &mut Reporter, raw: &raw::RawSpec, spec: &OpSpec);
    /// The ops a validated spec brings with it (an elementwise op's generated backward op).
    fn derived_ops(&self, spec: &OpSpec) -> Vec<OpSpec>;
}

/// Parses and validates one spec file.
pub(crate) fn load_file(
    path: &Path,
    rules: &dyn FamilyRules,
    names: &ProjectNames,
) -> Result<OpSpec, SpecErrors> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SpecErrors::one(SpecError::whole_file(path, format!("cannot read the spec: {e}"))))?;
    parse_str(path, &text, rules, names)
}

/// Parses and validates spec text; `path` is used for messages and the file-stem rule.
pub(crate) fn parse_str(
    path: &Path,
    text: &str,
    rules: &dyn FamilyRules,
    names: &ProjectNames,
) -> Result<OpSpec, SpecErrors> {
    let (raw, mut errors) = raw::parse(path, text);
    let Some(raw) = raw else { return Err(SpecErrors(errors)) };
    // The rule errors of the same file follow its unknown fields, in one report.
    match validate::validate(path, text, raw, rules, names) {
        Ok(spec) if errors.is_empty() => Ok(spec),
        Ok(_) => Err(SpecErrors(errors)),
        Err(rule_errors) => {
            errors.extend(rule_errors.0);
            Err(SpecErrors(errors))
        }
    }
}

/// Loads a catalogue: a directory of `*.toml` specs (not recursive; sorted by file name so
/// the output is deterministic) or a single spec file, with the project names of the
/// directory's `project.toml` (the defaults without one). An empty catalogue is an error, and
/// so are two specs with the same op name.
pub(crate) fn load_catalogue(path: &Path, rules: &dyn FamilyRules) -> Result<Vec<OpSpec>, SpecErrors> {
    let files = spec_files(path)?;
    let mut errors = SpecErrors::default();
    // A bad project file is reported with the specs' errors; the specs are checked against
    // the default names meanwhile.
    let names = load_project(path).unwrap_or_else(|e| {
        errors.extend(e);
        ProjectNames::default()
    });
    let mut specs: Vec<OpSpec> = Vec::new();
    for file in &files {
        match load_file(file, rules, &names) {
            Ok(spec) => {
                if let Some(other) = specs.iter().find(|s| s.name == spec.name) {
                    errors.push(SpecError::whole_file(
                        file,
                        format!("op `{}` is already defined by {}", spec.name, other.source.display()),
                    ));
                } else {
                    specs.push(spec);
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Each op brings the ops its family derives from it (a differentiable elementwise op: its
    // generated backward op), right after it.
    let mut all: Vec<OpSpec> = Vec::new();
    for spec in &specs {
        all.push(spec.clone());
        for grad in rules.derived_ops(spec) {
            if let Some(other) = specs.iter().find(|s| s.name == grad.name) {
                errors.push(SpecError::whole_file(
                &other.source,
                format!(
                    "op `{}` is also the backward op generated from `{}` ({}): rename this op, or set `differentiable = false` in `{}`",
                    grad.name,
                    spec.name,
                    spec.source.display(),
                    spec.name
                ),
            ));
            } else {
                all.push(grad);
            }
        }
    }
    check_backward_ops(&all, &mut errors);
    errors.into_result(all)
}

/// `backward = "op"` names an op of the catalogue whose signature is this op's transposed: its
/// inputs are this op's outputs (the incoming gradients) and its outputs this op's inputs, with
/// a dtype combination for each of this op's combinations.
fn check_backward_ops(specs: &[OpSpec], errors: &mut SpecErrors) {
    for spec in specs {
        let Backward::Op { name, line, column } = &spec.backward else { continue };
        let located = |message: String| SpecError {
            file: spec.source.clone(),
            line: *line,
            column: *column,
            field: "backward".into(),
            message,
        };
        let Some(b) = specs.iter().find(|s| &s.name == name) else {
            let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            errors.push(located(format!(
                "backward op `{name}` of `{}` is not in the catalogue; it has: {}",
                spec.name,
                known.join(", ")
            )));
            continue;
        };
        if b.inputs.len() != spec.outputs.len() || b.outputs.len() != spec.inputs.len() {
            errors.push(located(format!(
                "backward op `{name}` takes {} inputs and gives {} outputs; the backward of `{}` takes one gradient per output ({}) and gives one per input ({})",
                b.inputs.len(),
                b.outputs.len(),
                spec.name,
                spec.outputs.len(),
                spec.inputs.len()
            )));
            continue;
        }
        for c in 0..spec.columns() {
            let grads: Vec<_> = spec.outputs.iter().map(|t| t.dtypes[c]).collect();
            let results: Vec<_> = spec.inputs.iter().map(|t| t.dtypes[c]).collect();
            let fits = (0..b.columns()).any(|k| {
                b.inputs.iter().map(|t| t.dtypes[k]).eq(grads.iter().copied())
                    && b.outputs.iter().map(|t| t.dtypes[k]).eq(results.iter().copied())
            });
            if !fits {
                let show =
                    |v: &[crate::dtype::DType]| v.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
                errors.push(located(format!(
                    "backward op `{name}` has no dtype combination ({}) -> ({}) for combination {} of `{}`",
                    show(&grads),
                    show(&results),
                    c + 1,
                    spec.name
                )));
            }
        }
    }
}

fn spec_files(path: &Path) -> Result<Vec<PathBuf>, SpecErrors> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let read = std::fs::read_dir(path).map_err(|e| {
        SpecErrors::one(SpecError::whole_file(path, format!("cannot read the spec directory: {e}")))
    })?;
    let mut files: Vec<PathBuf> = read
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|ext| ext == "toml"))
        .filter(|p| p.file_name().is_none_or(|n| n != PROJECT_FILE))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(SpecErrors::one(SpecError::whole_file(
            path,
            "the catalogue is empty: no *.toml spec files in this directory".to_string(),
        )));
    }
    Ok(files)
}

/// Keeps the specs whose names are listed; an unknown name is an error listing the known ones.
pub fn select<'a>(specs: &'a [OpSpec], names: &[String]) -> Result<Vec<&'a OpSpec>, String> {
    if names.is_empty() {
        return Ok(specs.iter().collect());
    }
    names
        .iter()
        .map(|name| {
            specs.iter().find(|s| &s.name == name).ok_or_else(|| {
                let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
                format!("unknown op `{name}`; the catalogue has: {}", known.join(", "))
            })
        })
        .collect()
}
