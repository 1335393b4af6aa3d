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
    Attr, AttrKind, AttrValue, Backward, BackwardTable, ElementwiseParams, Family, FamilyParams, GradArg,
    KvKind, Loc, NormKind, OpSpec, RowNormGradParams, RowNormParams, TensorArg,
};
pub use project::{load_project, parse_project, project_file_for, ProjectNames, PROJECT_FILE};

use std::path::{Path, PathBuf};

/// What validation needs from the families, which sit above the spec layer: their
/// parameters, structure rules, backward rule and tables (the spec layer names no family). `crate::family` implements it and offers the loading
/// functions users call (`family::load_catalogue`, `family::load_file`, `family::parse_str`).
pub(crate) trait FamilyRules {
    /// The family registered as `name`, if one is.
    fn family(&self, name: &str) -> Option<Family>;
    /// Every registered family, in the registry's order (for messages).
    fn families(&self) -> Vec<Family>;
    /// The family's parameters from its spec table.
    fn params(&self, family: Family, raw: &raw::RawSpec) -> FamilyParams;
    /// The family's structure rules (run after the generic rules passed).
    fn check(&self, r: &mut Reporter, raw: &raw::RawSpec, spec: &OpSpec);
    /// The ops a validated spec brings with it (an elementwise op's generated backward op).
    fn derived_ops(&self, spec: &OpSpec) -> Vec<OpSpec>;
    /// How the family's ops get their backward op.
    fn backward_rule(&self, family: Family) -> BackwardRule;
    /// The family tables a spec of the family may carry, and the one it must.
    fn spec_tables(&self, family: Family) -> SpecTables;
}

/// How a family's ops get their backward op (the rules on `backward` and `differentiable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackwardRule {
    /// Generated from the op itself (an elementwise body's derivative): a declared `backward`
    /// is refused, `differentiable = false` opts out.
    Derived,
    /// A layout op's: the spec names the op that computes the gradient, or says it has none.
    Declared,
    /// The spec may name a backward op; without one none is generated.
    Optional,
}

/// The family tables (`[row_norm]`, `[elementwise]`, ...) a family's specs may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpecTables {
    pub accepts: &'static [&'static str],
    /// The table a spec of the family must have, and what it must hold (for the message).
    pub requires: Option<(&'static str, &'static str)>,
}

impl SpecTables {
    /// No family table (most families: everything is in the inputs, outputs and attrs).
    pub(crate) const NONE: SpecTables = SpecTables { accepts: &[], requires: None };
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
pub(crate) fn check_backward_ops(specs: &[OpSpec], errors: &mut SpecErrors) {
    for spec in specs {
        if let Backward::Table(t) = &spec.backward {
            check_backward_table(spec, t, specs, errors);
            continue;
        }
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
                let show = crate::dtype::names;
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

/// A `[backward]` table against the backward op it names: the op exists, `inputs` has one
/// entry per input of it, `grads` names its outputs, `request` its bool attrs, every attr it
/// requires is passed through (a forward attr of the same name and type) or requested, and
/// each dtype combination of the forward gives one of its combinations (the gradients' dtypes
/// may differ from the inputs': the glue reduces and casts them).
fn check_backward_table(spec: &OpSpec, t: &BackwardTable, specs: &[OpSpec], errors: &mut SpecErrors) {
    let at = |loc: Loc, field: String, message: String| SpecError {
        file: spec.source.clone(),
        line: loc.line,
        column: loc.column,
        field,
        message,
    };
    let Some(b) = specs.iter().find(|s| s.name == t.op) else {
        let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        errors.push(at(
            t.op_at,
            "backward.op".into(),
            format!(
                "backward op `{}` of `{}` is not in the catalogue; it has: {}",
                t.op,
                spec.name,
                known.join(", ")
            ),
        ));
        return;
    };
    let names = |ts: &[TensorArg]| ts.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
    if t.inputs.len() != b.inputs.len() {
        errors.push(at(
            t.inputs_at,
            "backward.inputs".into(),
            format!(
                "lists {} inputs, but backward op `{}` takes {} ({})",
                t.inputs.len(),
                b.name,
                b.inputs.len(),
                names(&b.inputs)
            ),
        ));
    }
    for (input, output, loc) in &t.grads {
        if !b.outputs.iter().any(|o| &o.name == output) {
            errors.push(at(
                *loc,
                format!("backward.grads.{input}"),
                format!(
                    "`{output}` is not an output of backward op `{}`; its outputs: {}",
                    b.name,
                    names(&b.outputs)
                ),
            ));
        }
    }
    for (attr, _, loc) in &t.request {
        match b.attr(attr) {
            Some(a) if a.kind == AttrKind::Bool => {}
            Some(a) => errors.push(at(
                *loc,
                format!("backward.request.{attr}"),
                format!("attr `{attr}` of backward op `{}` is a {}, not a bool", b.name, a.kind.name()),
            )),
            None => errors.push(at(
                *loc,
                format!("backward.request.{attr}"),
                format!(
                    "backward op `{}` has no attr `{attr}`; its attrs: {}",
                    b.name,
                    b.attrs.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }
    for a in &b.attrs {
        let requested = t.request.iter().any(|(r, _, _)| r == &a.name);
        match spec.attr(&a.name) {
            Some(f) if f.kind != a.kind => errors.push(at(
                t.op_at,
                "backward.op".into(),
                format!(
                    "attr `{}` is a {} in `{}` but a {} in backward op `{}`: a forward attr passes through to the attr of the same name",
                    a.name,
                    f.kind.name(),
                    spec.name,
                    a.kind.name(),
                    b.name
                ),
            )),
            Some(_) => {}
            None if requested || a.default.is_some() => {}
            None => errors.push(at(
                t.op_at,
                "backward.op".into(),
                format!(
                    "backward op `{}` requires attr `{}`, which `{}` has not (no forward attr of that name) and `backward.request` does not set",
                    b.name, a.name, spec.name
                ),
            )),
        }
    }
    if t.inputs.len() != b.inputs.len() {
        return;
    }
    let dtype_of = |arg: &GradArg, c: usize| {
        let (list, name) = match arg {
            GradArg::Grad(out) => (&spec.outputs, out),
            GradArg::Saved(n) => {
                (if spec.inputs.iter().any(|t| &t.name == n) { &spec.inputs } else { &spec.outputs }, n)
            }
        };
        list.iter().find(|t| &t.name == name).map(|t| t.dtypes[c])
    };
    for c in 0..spec.columns() {
        let Some(want) = t.inputs.iter().map(|(arg, _)| dtype_of(arg, c)).collect::<Option<Vec<_>>>() else {
            return; // an unknown name, already reported by validate
        };
        let fits = (0..b.columns()).any(|k| b.inputs.iter().map(|t| t.dtypes[k]).eq(want.iter().copied()));
        if !fits {
            let show = crate::dtype::names(&want);
            errors.push(at(
                t.inputs_at,
                "backward.inputs".into(),
                format!(
                    "backward op `{}` has no dtype combination taking ({show}), what combination {} of `{}` ({}) gives it",
                    b.name,
                    c + 1,
                    spec.name,
                    spec.column(c).iter().map(|(n, d)| format!("{n}={}", d.name())).collect::<Vec<_>>().join(", ")
                ),
            ));
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

/// An op name the catalogue does not have, with the names it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOp {
    pub name: String,
    pub known: Vec<String>,
}

impl std::fmt::Display for UnknownOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown op `{}`; the catalogue has: {}", self.name, self.known.join(", "))
    }
}

impl std::error::Error for UnknownOp {}

/// Keeps the specs whose names are listed; an unknown name is an error listing the known ones.
pub fn select<'a>(specs: &'a [OpSpec], names: &[String]) -> Result<Vec<&'a OpSpec>, UnknownOp> {
    if names.is_empty() {
        return Ok(specs.iter().collect());
    }
    names
        .iter()
        .map(|name| {
            specs.iter().find(|s| &s.name == name).ok_or_else(|| UnknownOp {
                name: name.clone(),
                known: specs.iter().map(|s| s.name.clone()).collect(),
            })
        })
        .collect()
}
