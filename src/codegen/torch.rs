//! The torch_npu extension of the generated project, under `torch/`:
//!
//! - `opgen_torch.h`: per op, the argument checks (dtype combinations the op registered,
//!   shapes by its family's rule) and the output shapes and dtypes, shared by both kernels so
//!   fake tensors see exactly what the device path does;
//! - `opgen_schema.cpp`: `TORCH_LIBRARY(opgen, m)` with every op's schema, and the Meta kernels
//!   (torch.compile, fake tensors);
//! - `opgen_npu.cpp`: the PrivateUse1 kernels, calling `aclnn<OpType>` through torch_npu's
//!   `EXEC_NPU_CMD_EXT` (inputs, attrs, outputs: the aclnn argument order);
//! - `CMakeLists.txt`: the build recipe (C++17, `_GLIBCXX_USE_CXX11_ABI=1`, torch + torch_npu);
//! - `opgen_torch/`: the Python package that sets the environment, loads the library and wraps
//!   every op in a typed function with a docstring.
//!
//! The family knowledge here is the shape rule ([`shape_rule`]): one small function per family.

use super::context::banner_source;
use super::project::GeneratedFile;
use super::{RenderError, VENDOR};
use crate::dtype::DType;
use crate::spec::{Attr, AttrKind, AttrValue, Family, KvKind, OpSpec, TensorArg};
use minijinja::{context, Environment, Value};
use serde::Serialize;

/// The torch library namespace: ops are `torch.ops.opgen.<name>`.
pub const LIBRARY: &str = "opgen";

/// The extension's shared library name (`lib<it>.so`), loaded by the Python package.
pub const EXTENSION: &str = "opgen_torch";

/// (generated path, template) of every file of the extension.
const FILES: &[(&str, &str)] = &[
    ("torch/CMakeLists.txt", "torch/CMakeLists.txt.j2"),
    ("torch/opgen_torch.h", "torch/opgen_torch.h.j2"),
    ("torch/opgen_schema.cpp", "torch/opgen_schema.cpp.j2"),
    ("torch/opgen_npu.cpp", "torch/opgen_npu.cpp.j2"),
    ("torch/opgen_torch/__init__.py", "torch/package_init.py.j2"),
    ("torch/opgen_torch/ops.py", "torch/package_ops.py.j2"),
];

/// The aclnn entry point opbuild generates for the op (research §3): `aclnn<OpType>`.
pub fn aclnn_name(spec: &OpSpec) -> String {
    format!("aclnn{}", spec.op_type)
}

/// The op's schema as registered with `m.def`: inputs (in-place ones as `Tensor(a!)`, with
/// one alias set per tensor), then attrs with their defaults, returning the outputs.
pub fn schema(spec: &OpSpec) -> String {
    let mut args: Vec<String> = Vec::new();
    for (t, alias) in spec.inputs.iter().zip(aliases(spec)) {
        match alias {
            Some(a) => args.push(format!("Tensor({a}!) {}", t.name)),
            None => args.push(format!("Tensor {}", t.name)),
        }
    }
    for a in &spec.attrs {
        let ty = schema_type(a.kind);
        match &a.default {
            Some(d) => args.push(format!("{ty} {}={}", a.name, schema_literal(a.kind, d))),
            None => args.push(format!("{ty} {}", a.name)),
        }
    }
    let returns = match spec.outputs.as_slice() {
        [] => "()".to_string(),
        [_] => "Tensor".to_string(),
        many => {
            format!("({})", many.iter().map(|t| format!("Tensor {}", t.name)).collect::<Vec<_>>().join(", "))
        }
    };
    format!("{}({}) -> {returns}", spec.name, args.join(", "))
}

/// The alias-set letter of each input: `a`, `b`, ... for the mutated ones in order.
fn aliases(spec: &OpSpec) -> Vec<Option<char>> {
    let mut next = b'a';
    spec.inputs
        .iter()
        .map(|t| {
            t.mutated.then(|| {
                let c = next as char;
                next += 1;
                c
            })
        })
        .collect()
}

fn schema_type(kind: AttrKind) -> &'static str {
    match kind {
        AttrKind::Float => "float",
        AttrKind::Int => "int",
        AttrKind::Bool => "bool",
        AttrKind::String => "str",
    }
}

/// The C++ type of an attr in the kernel signature (what the dispatcher passes for the schema
/// type) and, for float and int, also what aclnn takes: `double`, `int64_t` (research §3).
fn cpp_type(kind: AttrKind) -> &'static str {
    match kind {
        AttrKind::Float => "double",
        AttrKind::Int => "int64_t",
        AttrKind::Bool => "bool",
        AttrKind::String => "c10::string_view",
    }
}

fn python_type(kind: AttrKind) -> &'static str {
    match kind {
        AttrKind::Float => "float",
        AttrKind::Int => "int",
        AttrKind::Bool => "bool",
        AttrKind::String => "str",
    }
}

/// A default as the schema parser reads it (Python-like literals).
fn schema_literal(kind: AttrKind, value: &AttrValue) -> String {
    python_literal(kind, value)
}

/// A default as Python source: `1e-06` style floats always with a `.` or exponent, `True`,
/// double-quoted strings.
fn python_literal(kind: AttrKind, value: &AttrValue) -> String {
    match (kind, value) {
        (AttrKind::Float, v) => {
            let f = v.as_f64().unwrap_or(f64::NAN);
            let text = format!("{f:?}");
            if text.contains(['.', 'e', 'E']) || !f.is_finite() {
                text
            } else {
                format!("{text}.0")
            }
        }
        (_, AttrValue::Int(i)) => i.to_string(),
        (_, AttrValue::Float(f)) => format!("{f:?}"),
        (_, AttrValue::Bool(b)) => if *b { "True" } else { "False" }.to_string(),
        (_, AttrValue::String(s)) => format!("\"{}\"", s.escape_default()),
    }
}

/// `at::ScalarType` constant of a dtype.
fn scalar_type(d: DType) -> &'static str {
    match d {
        DType::Float16 => "at::kHalf",
        DType::BFloat16 => "at::kBFloat16",
        DType::Float32 => "at::kFloat",
        DType::Int8 => "at::kChar",
        DType::Int32 => "at::kInt",
        DType::Int64 => "at::kLong",
    }
}

// ---- shape rules ------------------------------------------------------------------------------

/// A check on input shapes, rendered as a call of a helper in `opgen_torch.h`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShapeCheck {
    /// `tensor` has exactly `like`'s shape.
    SameShape { tensor: String, like: String },
    /// `tensor` has 1..=rank(of) dims, equal to `of`'s trailing dims.
    TrailingDims { tensor: String, of: String },
}

/// How an output's shape follows from the inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutputShape {
    /// `of`'s shape.
    Like { of: String },
    /// `of`'s shape with its last rank(`count_of`) dims set to 1.
    TrailingOnes { of: String, count_of: String },
    /// `of`'s shape with dims `a` and `b` swapped; `of` must have `rank` dims (kv_layout's
    /// BSND <-> BNSD permutes).
    SwapDims { of: String, rank: usize, a: usize, b: usize },
    /// A fixed shape (kv_layout's int32 count of slots past the cache: [1]).
    Fixed { dims: Vec<usize> },
}

/// What the torch kernels check on the inputs and how they size the outputs (one entry per
/// output, in order). The same rule as the op_host InferShape of the family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShapeRule {
    pub checks: Vec<ShapeCheck>,
    pub outputs: Vec<OutputShape>,
}

/// The family's shape rule for `spec`. A family without one is an error naming it: the
/// extension is never generated with guessed shapes.
pub fn shape_rule(spec: &OpSpec) -> Result<ShapeRule, String> {
    let rule = match spec.family {
        Family::RowNorm => row_norm_rule(spec),
        Family::Rotary => rotary_rule(spec),
        Family::Elementwise => elementwise_rule(spec),
        Family::KvLayout => kv_layout_rule(spec),
    }?;
    if rule.outputs.len() != spec.outputs.len() {
        return Err(format!(
            "the {} shape rule gives {} output shapes, the op has {} outputs",
            spec.family.name(),
            rule.outputs.len(),
            spec.outputs.len()
        ));
    }
    Ok(rule)
}

/// row_norm: inputs (x[, x2], gamma), outputs (y, rstd[, x_sum]). gamma covers x's trailing
/// dims; the residual has x's shape; y and x_sum are shaped like x; rstd is x's shape with the
/// gamma-covered dims set to 1 (rank preserved, as torch_npu's npu_rms_norm).
fn row_norm_rule(spec: &OpSpec) -> Result<ShapeRule, String> {
    let name = |ts: &[TensorArg], i: usize| ts.get(i).map(|t| t.name.clone());
    let (x, gamma) = match (name(&spec.inputs, 0), spec.inputs.last().map(|t| t.name.clone())) {
        (Some(x), Some(g)) if spec.inputs.len() >= 2 => (x, g),
        _ => return Err("row_norm needs inputs (x, [residual,] gamma)".into()),
    };
    let mut checks = Vec::new();
    for t in &spec.inputs[1..spec.inputs.len() - 1] {
        checks.push(ShapeCheck::SameShape { tensor: t.name.clone(), like: x.clone() });
    }
    checks.push(ShapeCheck::TrailingDims { tensor: gamma.clone(), of: x.clone() });
    let outputs = (0..spec.outputs.len())
        .map(|i| match i {
            1 => OutputShape::TrailingOnes { of: x.clone(), count_of: gamma.clone() },
            _ => OutputShape::Like { of: x.clone() },
        })
        .collect();
    Ok(ShapeRule { checks, outputs })
}

/// rotary: inputs (x, r1, r2), output y shaped like x. r2 has r1's shape; how r1 broadcasts
/// over x (layout inference, mode restrictions) is checked by the op_host TilingFunc, which says
/// why a shape is refused.
fn rotary_rule(spec: &OpSpec) -> Result<ShapeRule, String> {
    match spec.inputs.as_slice() {
        [x, r1, r2] => Ok(ShapeRule {
            checks: vec![ShapeCheck::SameShape { tensor: r2.name.clone(), like: r1.name.clone() }],
            outputs: vec![OutputShape::Like { of: x.name.clone() }],
        }),
        _ => Err("rotary needs inputs (x, r1, r2)".into()),
    }
}

/// elementwise: every input has the first input's shape (no broadcasting); every output (one
/// for a forward op, one per forward input for a generated backward op) is shaped like it.
fn elementwise_rule(spec: &OpSpec) -> Result<ShapeRule, String> {
    let first = spec.inputs.first().ok_or("elementwise needs at least one input")?;
    Ok(ShapeRule {
        checks: spec.inputs[1..]
            .iter()
            .map(|t| ShapeCheck::SameShape { tensor: t.name.clone(), like: first.name.clone() })
            .collect(),
        outputs: spec.outputs.iter().map(|_| OutputShape::Like { of: first.name.clone() }).collect(),
    })
}

/// kv_layout: the permutes swap dims 1 and 2 of a 4-D x; the cache writers update their caches
/// in place and return the int32 count [1]; dequant_int8's x is shaped like q. The cache
/// geometry (slot mapping length, cache shapes) is checked by the op_host, which says why a
/// shape is refused.
fn kv_layout_rule(spec: &OpSpec) -> Result<ShapeRule, String> {
    let first = spec.inputs.first().ok_or("kv_layout needs inputs")?.name.clone();
    let output = match spec.kv_kind() {
        Some(KvKind::BsndToBnsd | KvKind::BnsdToBsnd) => {
            OutputShape::SwapDims { of: first, rank: 4, a: 1, b: 2 }
        }
        Some(KvKind::ReshapeAndCache | KvKind::ReshapeAndCacheInt8) => OutputShape::Fixed { dims: vec![1] },
        Some(KvKind::DequantInt8) => OutputShape::Like { of: first },
        None => return Err("a kv_layout spec without a known kind".into()),
    };
    Ok(ShapeRule { checks: Vec::new(), outputs: vec![output] })
}

// ---- template context -------------------------------------------------------------------------

#[derive(Debug, Serialize)]
struct TorchTensor {
    name: String,
    mutated: bool,
    /// The `at::Tensor` parameter type of the kernels.
    cpp_type: &'static str,
    /// Torch dtype names of every registered combination (`float16`), for docstrings.
    dtypes: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct TorchAttr {
    name: String,
    kind: &'static str,
    schema_type: &'static str,
    cpp_type: &'static str,
    py_type: &'static str,
    /// Python literal of the default, when the attr has one.
    py_default: Option<String>,
}

#[derive(Debug, Serialize)]
struct Column {
    inputs: Vec<&'static str>,
    outputs: Vec<&'static str>,
    /// `x=float16, gamma=float16 -> y=float16, rstd=float32`, for docstrings.
    text: String,
}

#[derive(Debug, Serialize)]
struct TorchOp {
    name: String,
    op_type: String,
    aclnn: String,
    summary: String,
    source: String,
    schema: String,
    inputs: Vec<TorchTensor>,
    attrs: Vec<TorchAttr>,
    outputs: Vec<TorchTensor>,
    columns: Vec<Column>,
    rule: ShapeRule,
    /// The kernels' C++ return type.
    cpp_return: String,
    /// The kernels' C++ parameter list.
    cpp_params: String,
    /// The Python wrapper's return annotation.
    py_return: String,
    /// The arguments of `EXEC_NPU_CMD_EXT` after the API name: inputs (contiguous copies, or the
    /// in-place tensor itself), attrs, outputs.
    aclnn_args: Vec<String>,
    /// The schema's argument names in order (the wrapper passes them on).
    call_args: Vec<String>,
    /// The summary, safe inside a Python docstring.
    py_summary: String,
    /// The schema as a C++ string literal (quotes of string defaults escaped).
    schema_cpp: String,
    /// The string attr naming the output dtype (dequant_int8's `out_dtype`): the dtype check
    /// and the output dtype follow it, not the inputs alone.
    dtype_attr: Option<String>,
    /// The arguments of `<op>_plan`: the inputs, then the output-dtype attr if any.
    plan_args: Vec<String>,
}

/// Names a Python wrapper parameter cannot have.
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// Locals the generated kernels declare beside the arguments.
const KERNEL_LOCALS: &[&str] = &["op_name", "plan", "guard", "registered", "matched", "m"];

fn torch_op(spec: &OpSpec) -> Result<TorchOp, String> {
    let names: Vec<&String> = spec
        .inputs
        .iter()
        .map(|t| &t.name)
        .chain(spec.attrs.iter().map(|a| &a.name))
        .chain(spec.outputs.iter().map(|t| &t.name))
        .collect();
    for n in &names {
        if PYTHON_KEYWORDS.contains(&n.as_str()) {
            return Err(format!("`{n}` is a Python keyword: the torch schema and wrapper cannot use it"));
        }
        if KERNEL_LOCALS.contains(&n.as_str()) {
            return Err(format!("`{n}` collides with a local of the generated torch kernels; rename it"));
        }
        for suffix in ["_contig", "_text", "_chars"] {
            if let Some(base) = n.strip_suffix(suffix) {
                if names.iter().any(|m| m.as_str() == base) {
                    return Err(format!(
                        "`{n}` collides with the generated torch kernels' name for `{base}`{suffix}; rename it"
                    ));
                }
            }
        }
    }
    if let Some(i) = spec.attrs.iter().position(|a| a.default.is_some()) {
        if let Some(late) = spec.attrs[i..].iter().find(|a| a.default.is_none()) {
            return Err(format!(
                "attr `{}` has no default but follows `{}`, which has one: the Python wrapper needs \
                 required attrs first",
                late.name, spec.attrs[i].name
            ));
        }
    }
    let rule = shape_rule(spec)?;
    let tensor = |t: &TensorArg, output: bool| TorchTensor {
        name: t.name.clone(),
        mutated: t.mutated,
        cpp_type: if output || !t.mutated { "const at::Tensor&" } else { "at::Tensor&" },
        dtypes: t.dtypes.iter().map(|d| d.torch_name()).collect(),
    };
    let attr = |a: &Attr| TorchAttr {
        name: a.name.clone(),
        kind: a.kind.name(),
        schema_type: schema_type(a.kind),
        cpp_type: cpp_type(a.kind),
        py_type: python_type(a.kind),
        py_default: a.default.as_ref().map(|d| python_literal(a.kind, d)),
    };
    let columns = (0..spec.columns())
        .map(|c| {
            let side = |ts: &[TensorArg]| {
                ts.iter().map(|t| format!("{}={}", t.name, t.dtypes[c].torch_name())).collect::<Vec<_>>()
            };
            let mut text = side(&spec.inputs).join(", ");
            if !spec.outputs.is_empty() {
                text.push_str(" -> ");
                text.push_str(&side(&spec.outputs).join(", "));
            }
            Column {
                inputs: spec.inputs.iter().map(|t| scalar_type(t.dtypes[c])).collect(),
                outputs: spec.outputs.iter().map(|t| scalar_type(t.dtypes[c])).collect(),
                text,
            }
        })
        .collect();
    let cpp_return = match spec.outputs.len() {
        0 => "void".to_string(),
        1 => "at::Tensor".to_string(),
        n => format!("std::tuple<{}>", vec!["at::Tensor"; n].join(", ")),
    };
    let py_return = match spec.outputs.len() {
        0 => "None".to_string(),
        1 => "torch.Tensor".to_string(),
        n => format!("Tuple[{}]", vec!["torch.Tensor"; n].join(", ")),
    };
    let inputs: Vec<TorchTensor> = spec.inputs.iter().map(|t| tensor(t, false)).collect();
    let attrs: Vec<TorchAttr> = spec.attrs.iter().map(attr).collect();
    let cpp_params = inputs
        .iter()
        .map(|t| format!("{} {}", t.cpp_type, t.name))
        .chain(attrs.iter().map(|a| format!("{} {}", a.cpp_type, a.name)))
        .collect::<Vec<_>>()
        .join(", ");
    let aclnn_args = spec
        .inputs
        .iter()
        .map(|t| if t.mutated { t.name.clone() } else { format!("{}_contig", t.name) })
        .chain(spec.attrs.iter().map(|a| match a.kind {
            // EXEC_NPU_CMD_EXT binds its arguments to lvalue references: a named char*.
            AttrKind::String => format!("{}_chars", a.name),
            _ => a.name.clone(),
        }))
        .chain(spec.outputs.iter().map(|t| t.name.clone()))
        .collect();
    let dtype_attr = spec.output_dtype_attr().map(|a| a.name.clone());
    let plan_args = spec.inputs.iter().map(|t| t.name.clone()).chain(dtype_attr.clone()).collect();
    Ok(TorchOp {
        dtype_attr,
        plan_args,
        name: spec.name.clone(),
        op_type: spec.op_type.clone(),
        aclnn: aclnn_name(spec),
        summary: spec.summary.clone(),
        source: banner_source(&spec.source),
        schema: schema(spec),
        inputs,
        attrs,
        outputs: spec.outputs.iter().map(|t| tensor(t, true)).collect(),
        columns,
        rule,
        cpp_return,
        cpp_params,
        py_return,
        aclnn_args,
        call_args: names.iter().take(spec.inputs.len() + spec.attrs.len()).map(|n| n.to_string()).collect(),
        schema_cpp: format!("\"{}\"", schema(spec).replace('\\', "\\\\").replace('"', "\\\"")),
        py_summary: spec.summary.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\""),
    })
}

/// The extension's files for `specs`, rendered with `env` (which has the `banner` function).
pub(crate) fn render(
    env: &Environment<'static>,
    specs: &[&OpSpec],
) -> Result<Vec<GeneratedFile>, RenderError> {
    let ops = specs
        .iter()
        .map(|s| {
            torch_op(s).map_err(|message| RenderError {
                op: s.name.clone(),
                template: "torch (context)".into(),
                message,
            })
        })
        .collect::<Result<Vec<TorchOp>, RenderError>>()?;
    let sources: Vec<&str> = ops.iter().map(|o| o.source.as_str()).collect();
    let cx = context! {
        ops => Value::from_serialize(&ops),
        library => LIBRARY,
        extension => EXTENSION,
        vendor => VENDOR,
        source => sources.join(", "),
    };
    FILES
        .iter()
        .map(|(path, template)| {
            let contents =
                env.get_template(template).and_then(|t| t.render(&cx)).map_err(|e| RenderError {
                    op: "(torch extension)".into(),
                    template: template.to_string(),
                    message: format!("{e:#}"),
                })?;
            Ok(GeneratedFile { path: path.to_string(), contents })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals() {
        assert_eq!(python_literal(AttrKind::Float, &AttrValue::Float(1e-6)), "1e-6");
        assert_eq!(python_literal(AttrKind::Float, &AttrValue::Float(2.0)), "2.0");
        assert_eq!(python_literal(AttrKind::Float, &AttrValue::Int(2)), "2.0");
        assert_eq!(python_literal(AttrKind::Int, &AttrValue::Int(-3)), "-3");
        assert_eq!(python_literal(AttrKind::Bool, &AttrValue::Bool(true)), "True");
        assert_eq!(python_literal(AttrKind::String, &AttrValue::String("half".into())), "\"half\"");
    }
}
