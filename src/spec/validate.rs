//! Raw spec → validated [`OpSpec`]. Every rule reports file:line:column and the field, and
//! all problems are collected before returning.

use super::error::{Reporter, SpecErrors};
use super::idents::{camel_case, is_c_identifier, is_cpp_keyword, CANN_BUILTIN_OP_TYPES};
use super::model::*;
use super::raw::{RawAttr, RawBackward, RawBackwardTable, RawSpec, RawTensor};
use crate::dtype::DType;
use std::path::Path;
use toml::Spanned;

/// Compute units a spec may target, with whether DataCopyPad (unaligned copies, which every
/// family relies on) exists there.
const COMPUTE_UNITS: &[(&str, bool)] = &[("ascend910b", true), ("ascend910_93", true), ("ascend310p", false)];

type Ctx<'a> = Reporter<'a>;

pub(super) fn validate(
    path: &Path,
    text: &str,
    raw: RawSpec,
    rules: &dyn super::FamilyRules,
    names: &super::ProjectNames,
) -> Result<OpSpec, SpecErrors> {
    let mut cx = Ctx { path, text, errors: SpecErrors::default() };

    let name = raw.name.get_ref().clone();
    check_op_name(&mut cx, &raw.name);
    let family = rules.family(raw.family.get_ref());
    if family.is_none() {
        let known: Vec<&str> = rules.families().iter().map(|f| f.name()).collect();
        cx.error(
            &raw.family,
            "family",
            format!("unknown family `{}`; known families: {}", raw.family.get_ref(), known.join(", ")),
        );
    }
    if raw.summary.get_ref().trim().is_empty() {
        cx.error(&raw.summary, "summary", "the summary must not be empty".into());
    }
    let op_type = check_op_type(&mut cx, &raw, &names.op_type_prefix);
    let targets = check_targets(&mut cx, &raw);

    let mut inputs = tensors(&mut cx, &raw.inputs, "inputs");
    let all_outputs = tensors(&mut cx, &raw.outputs, "outputs");
    check_columns(&mut cx, &raw);
    let attrs = attrs(&mut cx, &raw.attrs);
    check_unique_names(&mut cx, &raw);
    let (refs, outputs) = ref_outputs(&mut cx, &raw, &mut inputs, all_outputs);

    let params = family.map(|f| rules.params(f, &raw)).unwrap_or(FamilyParams::None);
    let backward = check_backward(&mut cx, &raw, family, rules);

    let spec = OpSpec {
        name,
        op_type,
        // An unknown family is an error above: the spec is never returned, any family serves.
        family: family.or_else(|| rules.families().first().copied()).expect("a registered family"),
        summary: raw.summary.get_ref().trim().to_string(),
        inputs,
        outputs,
        refs,
        attrs,
        targets,
        params,
        backward,
        source: path.to_path_buf(),
        project: names.clone(),
    };
    if let Some(family) = family {
        check_family_tables(&mut cx, &raw, family, rules.spec_tables(family));
    }
    if cx.errors.is_empty() && family.is_some() {
        rules.check(&mut cx, &raw, &spec);
    }
    cx.errors.into_result(spec)
}

fn check_op_name(cx: &mut Ctx, name: &Spanned<String>) {
    let n = name.get_ref();
    let snake = !n.is_empty()
        && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && n.starts_with(|c: char| c.is_ascii_lowercase());
    if !snake {
        cx.error(name, "name", format!("op name `{n}` must be snake_case: [a-z][a-z0-9_]*"));
    } else if is_cpp_keyword(n) {
        cx.error(
            name,
            "name",
            format!("op name `{n}` is a C++ keyword or a name the generated code reserves"),
        );
    }
    let stem = cx.path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if snake && stem != n {
        cx.error(name, "name", format!("op name `{n}` must equal the spec's file stem `{stem}`"));
    }
}

fn check_op_type(cx: &mut Ctx, raw: &RawSpec, prefix: &str) -> String {
    let Some(op_type) = &raw.op_type else {
        return format!("{prefix}{}", camel_case(raw.name.get_ref()));
    };
    let t = op_type.get_ref();
    if !is_c_identifier(t) || !t.starts_with(|c: char| c.is_ascii_uppercase()) || t.contains('_') {
        cx.error(
            op_type,
            "op_type",
            format!("op type `{t}` must be UpperCamelCase (a C identifier, no underscores)"),
        );
    } else if CANN_BUILTIN_OP_TYPES.contains(&t.as_str()) {
        cx.error(
            op_type,
            "op_type",
            format!("op type `{t}` collides with the CANN built-in operator of that name; keep a vendor prefix such as `{prefix}{t}`"),
        );
    }
    t.clone()
}

fn check_targets(cx: &mut Ctx, raw: &RawSpec) -> Vec<String> {
    if raw.targets.get_ref().is_empty() {
        cx.error(&raw.targets, "targets", "at least one compute unit is needed (e.g. \"ascend910b\")".into());
    }
    let mut out = Vec::new();
    for (i, target) in raw.targets.get_ref().iter().enumerate() {
        let t = target.get_ref();
        match COMPUTE_UNITS.iter().find(|(unit, _)| unit == t) {
            None => {
                let known: Vec<&str> = COMPUTE_UNITS.iter().map(|(u, _)| *u).collect();
                cx.error(target, &format!("targets[{i}]"), format!("unknown compute unit `{t}`; known: {}", known.join(", ")));
            }
            Some((_, false)) => cx.error(
                target,
                &format!("targets[{i}]"),
                format!("compute unit `{t}` has no DataCopyPad (unaligned GM copies), which every generated kernel relies on"),
            ),
            Some(_) if out.contains(t) => cx.error(target, &format!("targets[{i}]"), format!("compute unit `{t}` is listed twice")),
            Some(_) => out.push(t.clone()),
        }
    }
    out
}

fn tensors(cx: &mut Ctx, list: &Spanned<Vec<RawTensor>>, field: &str) -> Vec<TensorArg> {
    if list.get_ref().is_empty() {
        cx.error(list, field, format!("at least one entry is needed in `{field}`"));
    }
    list.get_ref()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let path = format!("{field}[{i}]");
            check_arg_name(cx, &t.name, &format!("{path}.name"));
            if t.dtypes.get_ref().is_empty() {
                cx.error(&t.dtypes, &format!("{path}.dtypes"), "the dtype list must not be empty".into());
            }
            let dtypes = t
                .dtypes
                .get_ref()
                .iter()
                .enumerate()
                .filter_map(|(j, d)| {
                    let parsed = DType::ALL.into_iter().find(|k| k.name() == d.get_ref());
                    if parsed.is_none() {
                        let known: Vec<&str> = DType::ALL.iter().map(|k| k.name()).collect();
                        cx.error(
                            d,
                            &format!("{path}.dtypes[{j}]"),
                            format!("unknown dtype `{}`; known: {}", d.get_ref(), known.join(", ")),
                        );
                    }
                    parsed
                })
                .collect();
            let mutated = t.is_mutated();
            TensorArg { name: t.name.get_ref().clone(), dtypes, mutated }
        })
        .collect()
}

/// The ref outputs (`mutated = true` on an output): each names an input (its own name, CANN's
/// in-place convention) and has that input's dtype list (its bytes are the input's buffer, so
/// its shape is the input's by construction: InferShape copies it). The input becomes a mutated
/// one; the other outputs are returned as the op's own.
fn ref_outputs(
    cx: &mut Ctx,
    raw: &RawSpec,
    inputs: &mut [TensorArg],
    outputs: Vec<TensorArg>,
) -> (Vec<String>, Vec<TensorArg>) {
    let mut refs = Vec::new();
    let mut own = Vec::new();
    for (i, t) in outputs.into_iter().enumerate() {
        if !t.mutated {
            own.push(t);
            continue;
        }
        let at = &raw.outputs.get_ref()[i];
        let path = format!("outputs[{i}]");
        match inputs.iter_mut().find(|x| x.name == t.name) {
            None => cx.error(
                &at.name,
                &format!("{path}.name"),
                format!("output `{}` is marked mutated (an input updated in place) but names no input; an in-place output has its input's name", t.name),
            ),
            Some(x) if x.dtypes != t.dtypes => cx.error(
                &at.dtypes,
                &format!("{path}.dtypes"),
                format!("the in-place output `{}` has dtypes [{}] but its input has [{}]: it is the input's buffer, so the lists must be equal", t.name, crate::dtype::names(&t.dtypes), crate::dtype::names(&x.dtypes)),
            ),
            Some(x) => {
                x.mutated = true;
                refs.push(t.name);
            }
        }
    }
    (refs, own)
}

fn check_arg_name(cx: &mut Ctx, name: &Spanned<String>, field: &str) {
    let n = name.get_ref();
    if !is_c_identifier(n) {
        cx.error(name, field, format!("`{n}` is not a C identifier"));
    } else if is_cpp_keyword(n) {
        cx.error(name, field, format!("`{n}` is a C++ keyword or a name the generated code reserves"));
    } else if n.starts_with('_') || n.chars().any(|c| c.is_ascii_uppercase()) {
        cx.error(name, field, format!("`{n}` must be snake_case starting with a letter (it becomes a torch argument and an aclnn parameter name)"));
    }
}

/// msOpGen's column rule: the i-th dtype of every tensor forms one combination, so all
/// lists have the same length, and no combination may appear twice.
fn check_columns(cx: &mut Ctx, raw: &RawSpec) {
    let all: Vec<(String, &RawTensor)> = raw
        .inputs
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("inputs[{i}]"), t))
        .chain(raw.outputs.get_ref().iter().enumerate().map(|(i, t)| (format!("outputs[{i}]"), t)))
        .collect();
    let Some((first_field, first)) = all.first() else { return };
    let n = first.dtypes.get_ref().len();
    for (field, t) in &all[1..] {
        let len = t.dtypes.get_ref().len();
        if len != n {
            cx.error(
                &t.dtypes,
                &format!("{field}.dtypes"),
                format!("has {len} dtypes but `{first_field}.dtypes` has {n}: every tensor lists one dtype per supported combination (msOpGen's column rule)"),
            );
        }
    }
    if all.iter().any(|(_, t)| t.dtypes.get_ref().len() != n) {
        return;
    }
    let columns: Vec<Vec<&str>> =
        (0..n).map(|c| all.iter().map(|(_, t)| t.dtypes.get_ref()[c].get_ref().as_str()).collect()).collect();
    for c in 0..n {
        if columns[..c].contains(&columns[c]) {
            cx.error(
                &first.dtypes.get_ref()[c],
                &format!("{first_field}.dtypes[{c}]"),
                format!("dtype combination {} is listed twice", c + 1),
            );
        }
    }
}

fn attrs(cx: &mut Ctx, raw: &[RawAttr]) -> Vec<Attr> {
    raw.iter()
        .enumerate()
        .map(|(i, a)| {
            let path = format!("attrs[{i}]");
            check_arg_name(cx, &a.name, &format!("{path}.name"));
            let kind = match a.kind.get_ref().as_str() {
                "float" => AttrKind::Float,
                "int" => AttrKind::Int,
                "bool" => AttrKind::Bool,
                "string" => AttrKind::String,
                other => {
                    cx.error(
                        &a.kind,
                        &format!("{path}.type"),
                        format!("unknown attr type `{other}`; known: float, int, bool, string"),
                    );
                    AttrKind::Float
                }
            };
            let default = a.default.as_ref().and_then(|d| {
                let value = match (kind, d.get_ref()) {
                    (AttrKind::Float, toml::Value::Float(v)) => Some(AttrValue::Float(*v)),
                    (AttrKind::Float, toml::Value::Integer(v)) => Some(AttrValue::Float(*v as f64)),
                    (AttrKind::Int, toml::Value::Integer(v)) => Some(AttrValue::Int(*v)),
                    (AttrKind::Bool, toml::Value::Boolean(v)) => Some(AttrValue::Bool(*v)),
                    (AttrKind::String, toml::Value::String(v)) => Some(AttrValue::String(v.clone())),
                    _ => None,
                };
                if value.is_none() {
                    cx.error(
                        d,
                        &format!("{path}.default"),
                        format!(
                            "default {} is a {}, but the attr's type is {}",
                            d.get_ref(),
                            d.get_ref().type_str(),
                            kind.name()
                        ),
                    );
                }
                if let Some(AttrValue::Float(v)) = value {
                    if !v.is_finite() {
                        cx.error(
                            d,
                            &format!("{path}.default"),
                            format!("default {v} is not a finite number"),
                        );
                    }
                }
                value
            });
            Attr { name: a.name.get_ref().clone(), kind, default }
        })
        .collect()
}

fn check_unique_names(cx: &mut Ctx, raw: &RawSpec) {
    let mut seen: Vec<(String, String)> = Vec::new();
    let names = raw
        .inputs
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("inputs[{i}].name"), &t.name))
        // An in-place output has its input's name (ref_outputs checks it names one).
        .chain(
            raw.outputs
                .get_ref()
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.is_mutated())
                .map(|(i, t)| (format!("outputs[{i}].name"), &t.name)),
        )
        .chain(raw.attrs.iter().enumerate().map(|(i, a)| (format!("attrs[{i}].name"), &a.name)));
    for (field, name) in names {
        if let Some((first, _)) = seen.iter().find(|(_, n)| n == name.get_ref()) {
            let message = format!("name `{}` is already used by `{first}`", name.get_ref());
            cx.error(name, &field, message);
        } else {
            seen.push((field, name.get_ref().clone()));
        }
    }
}

/// `differentiable` and `backward`, by the family's [`BackwardRule`](super::BackwardRule):
/// elementwise ops derive their backward op from the body (`differentiable = false` opts
/// out); layout ops name theirs or say they have none; the others may name one. Whether a
/// named backward op exists and fits is checked with the whole catalogue
/// (`spec::check_backward_ops`).
fn check_backward(
    cx: &mut Ctx,
    raw: &RawSpec,
    family: Option<Family>,
    rules: &dyn super::FamilyRules,
) -> Backward {
    use super::BackwardRule;
    let rule = family.map(|f| rules.backward_rule(f));
    let differentiable = raw.differentiable.as_ref().map(|d| *d.get_ref());
    if let Some(b) = &raw.backward {
        let (field, shown) = match b.get_ref() {
            RawBackward::Name(name) => ("backward", format!("backward = \"{name}\"")),
            RawBackward::Table(t) => ("backward", format!("[backward] op = \"{}\"", t.op.get_ref())),
        };
        if differentiable == Some(false) {
            cx.error(b, field, format!("`{shown}` contradicts `differentiable = false`"));
        }
        if let (Some(BackwardRule::Derived), Some(f)) = (rule, family) {
            cx.error(
                b,
                field,
                format!("{} ops get their backward op (`{}_grad`) by differentiating the body; remove `backward`, or set `differentiable = false` to have none", f.name(), raw.name.get_ref()),
            );
        }
        return match b.get_ref() {
            RawBackward::Name(name) => {
                check_backward_op_name(cx, raw, name, b.span().start, "backward");
                let (line, column) = super::error::line_column(cx.text, b.span().start);
                Backward::Op { name: name.clone(), line, column }
            }
            RawBackward::Table(t) => Backward::Table(backward_table(cx, raw, t)),
        };
    }
    match (differentiable, rule) {
        (Some(false), _) => Backward::NotDifferentiable,
        (_, Some(BackwardRule::Derived)) => Backward::Derived,
        (_, Some(BackwardRule::Declared)) => {
            let declaring: Vec<&str> = rules
                .families()
                .iter()
                .filter(|f| rules.backward_rule(**f) == BackwardRule::Declared)
                .map(|f| f.name())
                .collect();
            let at = raw.differentiable.as_ref().map_or(raw.family.span().start, |d| d.span().start);
            cx.error_at(
                at,
                "backward",
                format!("a layout op ({}) declares its gradient: `backward = \"<op>\"` (the op that computes it, e.g. the inverse permutation) or `differentiable = false`", declaring.join(", ")),
            );
            Backward::NotDifferentiable
        }
        _ => Backward::NotGenerated,
    }
}

fn check_backward_op_name(cx: &mut Ctx, raw: &RawSpec, name: &str, at: usize, field: &str) {
    let snake = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !snake {
        cx.error_at(at, field, format!("`{name}` is not an op name (snake_case: [a-z][a-z0-9_]*)"));
    }
    if name == raw.name.get_ref() {
        cx.error_at(at, field, format!("op `{name}` cannot be its own backward op"));
    }
}

/// The `[backward]` table's names against this spec's own inputs and outputs; the backward
/// op's side (its inputs, outputs, attrs, dtypes) is checked with the catalogue
/// (`spec::check_backward_ops`).
fn backward_table(cx: &mut Ctx, raw: &RawSpec, t: &RawBackwardTable) -> BackwardTable {
    let loc = |cx: &Ctx, at: usize| {
        let (line, column) = super::error::line_column(cx.text, at);
        Loc { line, column }
    };
    let ins: Vec<&str> = raw.inputs.get_ref().iter().map(|i| i.name.get_ref().as_str()).collect();
    let outs: Vec<&str> = raw.outputs.get_ref().iter().map(|o| o.name.get_ref().as_str()).collect();
    check_backward_op_name(cx, raw, t.op.get_ref(), t.op.span().start, "backward.op");

    if t.inputs.get_ref().is_empty() {
        cx.error(&t.inputs, "backward.inputs", "the backward op's inputs must not be empty".into());
    }
    let mut inputs = Vec::new();
    for (i, name) in t.inputs.get_ref().iter().enumerate() {
        let field = format!("backward.inputs[{i}]");
        let n = name.get_ref();
        let arg = if let Some(out) = n.strip_prefix("grad.") {
            if !outs.contains(&out) {
                cx.error(
                    name,
                    &field,
                    format!(
                        "`{n}`: `{out}` is not an output of `{}`; its outputs: {}",
                        raw.name.get_ref(),
                        outs.join(", ")
                    ),
                );
            }
            GradArg::Grad(out.to_string())
        } else {
            if !ins.contains(&n.as_str()) && !outs.contains(&n.as_str()) {
                cx.error(
                    name,
                    &field,
                    format!(
                        "`{n}` is neither `grad.<output>` nor an input or output of `{}` (inputs: {}; outputs: {})",
                        raw.name.get_ref(),
                        ins.join(", "),
                        outs.join(", ")
                    ),
                );
            }
            GradArg::Saved(n.clone())
        };
        inputs.push((arg, loc(cx, name.span().start)));
    }

    if t.grads.get_ref().is_empty() {
        cx.error(
            &t.grads,
            "backward.grads",
            "at least one input must get a gradient (`grads = { x = \"dx\" }`)".into(),
        );
    }
    let mut grads = Vec::new();
    for (input, output) in t.grads.get_ref() {
        let field = format!("backward.grads.{}", input.get_ref());
        if !ins.contains(&input.get_ref().as_str()) {
            cx.error(
                input,
                &field,
                format!(
                    "`{}` is not an input of `{}`; its inputs: {}",
                    input.get_ref(),
                    raw.name.get_ref(),
                    ins.join(", ")
                ),
            );
        }
        grads.push((input.get_ref().clone(), output.get_ref().clone(), loc(cx, output.span().start)));
    }
    // File order, not the map's sorted order: the README and the glue list them as written.
    grads.sort_by_key(|(_, _, at)| (at.line, at.column));

    let mut request = Vec::new();
    if let Some(r) = &t.request {
        for (attr, list) in r.get_ref() {
            let field = format!("backward.request.{}", attr.get_ref());
            if list.get_ref().is_empty() {
                cx.error(list, &field, "list the inputs whose needing a gradient sets the attr".into());
            }
            for name in list.get_ref() {
                if !t.grads.get_ref().keys().any(|k| k.get_ref() == name.get_ref()) {
                    cx.error(
                        name,
                        &field,
                        format!(
                            "`{}` gets no gradient in `backward.grads`, so it cannot request one",
                            name.get_ref()
                        ),
                    );
                }
            }
            request.push((
                attr.get_ref().clone(),
                list.get_ref().iter().map(|n| n.get_ref().clone()).collect(),
                loc(cx, attr.span().start),
            ));
        }
        request.sort_by_key(|(_, _, at)| (at.line, at.column));
    }
    BackwardTable {
        op: t.op.get_ref().clone(),
        op_at: loc(cx, t.op.span().start),
        inputs,
        inputs_at: loc(cx, t.inputs.span().start),
        grads,
        request,
    }
}

/// A family table (`[row_norm]`, `[elementwise]`, `[permute]`, `[paged_cache]`) only with a
/// family that reads it, and the one a family needs.
fn check_family_tables(cx: &mut Ctx, raw: &RawSpec, family: Family, tables: super::SpecTables) {
    for (name, at) in raw.family_tables() {
        if let Some(at) = at {
            if !tables.accepts.contains(&name) {
                cx.error_at(
                    at,
                    name,
                    format!(
                        "table [{name}] belongs to family {name}, but this spec is family {}",
                        family.name()
                    ),
                );
            }
        }
    }
    if let Some((name, holds)) = tables.requires {
        let present = raw.family_tables().iter().any(|(n, at)| *n == name && at.is_some());
        if !present {
            cx.error(
                &raw.family,
                name,
                format!("family {} needs an [{name}] table with {holds}", family.name()),
            );
        }
    }
}
