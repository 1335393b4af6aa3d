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
//! No family knowledge lives here: the shape rule comes from the op's family
//! (`crate::family::shape_rule`).

use super::context::banner_source;
use super::project::GeneratedFile;
use super::RenderError;
use crate::dtype::DType;
use crate::family::{shape_rule, OutputShape, ShapeCheck, ShapeRule, Sharding};
use crate::spec::ProjectNames;
use crate::spec::{Attr, AttrKind, AttrValue, Backward, GradArg, OpSpec, TensorArg};
use minijinja::{context, Environment, Value};
use serde::Serialize;

// The torch library namespace (`torch.ops.<library>.<name>`), the Python package (also the
// extension's library stem, `lib<package>.so`) and the vendor come from the project's names
// (`crate::spec::ProjectNames`, `project.toml`); the defaults are `opgen`, `opgen_torch`, `opgen`.

/// (generated path, template) of every file of the extension; `{package}` is the Python
/// package's directory.
const FILES: &[(&str, &str)] = &[
    ("torch/CMakeLists.txt", "torch/CMakeLists.txt.j2"),
    ("torch/opgen_torch.h", "torch/opgen_torch.h.j2"),
    ("torch/opgen_schema.cpp", "torch/opgen_schema.cpp.j2"),
    ("torch/opgen_npu.cpp", "torch/opgen_npu.cpp.j2"),
    ("torch/opgen_cpu.cpp", "torch/opgen_cpu.cpp.j2"),
    ("torch/{package}/__init__.py", "torch/package_init.py.j2"),
    ("torch/{package}/ops.py", "torch/package_ops.py.j2"),
    ("torch/{package}/transformers.py", "torch/package_transformers.py.j2"),
    ("torch/{package}/rl.py", "torch/package_rl.py.j2"),
    ("torch/pyproject.toml", "torch/pyproject.toml.j2"),
    ("torch/setup.py", "torch/setup.py.j2"),
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
    /// The generated sources' stem (`opgen_rms_norm`): the CPU backend's kernel library names.
    stem: String,
    /// The autograd formula's ingredients, or None: the op refuses inputs that require grad.
    backward: Option<TorchBackward>,
    /// Its DTensor sharding rule (the package's `register_sharding`).
    sharding: TorchSharding,
    /// The family's shared host checks (`Templates::checks`) rendered with the op's context: the
    /// very text its op_host carries, or None (the shape rule only).
    host_checks: Option<String>,
    /// The arguments of that `HostChecks` call after the input views: the attrs (string attrs
    /// as `<name>_text.c_str()`, float attrs rounded to float as the op_host reads them).
    check_attrs: Vec<String>,
}

/// What the autograd formula of a differentiable op calls and saves: the one place the torch
/// templates read it from (the Python package's `register_autograd`, and the C++ Autograd
/// kernels, which are generated only for ops without one).
///
/// The backward op is called with its tensor inputs in its order (`args`: incoming gradients,
/// zeros for an unused output, and saved forward tensors), then its attrs by keyword (`attrs`:
/// a forward attr of the same name, or a request flag); its output `grads[i].output` is reduced
/// to forward input `grads[i].input`'s shape (`sum_to_size`) and cast to its dtype.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchBackward {
    /// The backward op's name in the `opgen` library (e.g. `rms_norm_grad`).
    pub op: String,
    /// Forward inputs and outputs saved for backward, in save order.
    pub saved: Vec<String>,
    /// The backward op's tensor inputs in order.
    pub args: Vec<TorchGradArg>,
    /// The backward op's attrs the formula sets (the others keep their defaults).
    pub attrs: Vec<TorchGradAttr>,
    /// Which backward-op output is which forward input's gradient.
    pub grads: Vec<TorchGrad>,
    /// Tensor inputs that get no gradient: the formula refuses them when they require grad.
    pub no_grad: Vec<TorchIndexed>,
    /// Outputs whose incoming gradient the backward op does not take (rms_norm's rstd): marked
    /// non-differentiable, so a loss through them is refused instead of getting a wrong gradient.
    pub non_differentiable: Vec<String>,
    /// Per schema argument (inputs, then attrs): its gradient, or None.
    pub returns: Vec<Option<TorchGrad>>,
}

/// How the DTensor sharding rule of an op (ops.py's `register_sharding`) places its tensors,
/// from its family and shape rule. Every op also accepts all tensors replicated (the fallback).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchSharding {
    /// `rows`: any dim of the first input before its whole trailing dims may be sharded; an
    /// input of the first input's rank and size there is sharded with it, the others (gamma,
    /// beta, a broadcast rotary table) replicated. `elementwise`: any dim, every tensor alike.
    /// `replicate`: all tensors replicated only (permute, paged cache, dequant).
    pub rule: &'static str,
    /// For `rows`: the input whose rank is the number of whole trailing dims (gamma: the dims a
    /// row norm reduces over), or None: the last dim alone (rotary's rotated head dim).
    pub whole_of: Option<usize>,
    /// Per output: the input whose placement it takes (its shape rule's `of`).
    pub outputs: Vec<usize>,
    /// Whether an output shaped like a replicated input sums over the sharded dim (the
    /// gradient families' dgamma, dbeta, dr1, dr2): a Partial(sum) output.
    pub reduces: bool,
}

/// The sharding rule of `spec` (see [`TorchSharding`]).
pub fn sharding_of(spec: &OpSpec, rule: &ShapeRule) -> TorchSharding {
    let input = |name: &str| spec.inputs.iter().position(|t| t.name == name);
    let outputs: Option<Vec<usize>> = rule
        .outputs
        .iter()
        .map(|o| match o {
            OutputShape::Like { of } | OutputShape::TrailingOnes { of, .. } => input(of),
            OutputShape::SwapDims { .. } | OutputShape::Stacked { .. } | OutputShape::Fixed { .. } => None,
        })
        .collect();
    let whole_of = rule.checks.iter().find_map(|c| match c {
        ShapeCheck::TrailingDims { tensor, .. } => input(tensor),
        ShapeCheck::SameShape { .. } => None,
    });
    let (rule, whole_of, reduces) = match crate::family::sharding(spec) {
        Sharding::Rows { whole_from_rule, reduces } => {
            ("rows", whole_of.filter(|_| whole_from_rule), reduces)
        }
        Sharding::Elementwise => ("elementwise", None, false),
        Sharding::Replicate => ("replicate", None, false),
    };
    let mutates = spec.inputs.iter().any(|t| t.mutated);
    match outputs {
        // An in-place op keeps its tensors whole: its mutated inputs are not outputs to place.
        Some(outputs) if !mutates => TorchSharding { rule, whole_of, outputs, reduces },
        _ => TorchSharding {
            rule: "replicate",
            whole_of: None,
            outputs: vec![0; spec.outputs.len()],
            reduces: false,
        },
    }
}

/// A name with its position (an output's among the outputs, an input's among the schema's
/// arguments: the index of `ctx.needs_input_grad`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchIndexed {
    pub name: String,
    pub index: usize,
}

/// One tensor input of the backward op: the incoming gradient of output `grad` (its index
/// among the forward's outputs), or saved tensor number `saved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchGradArg {
    pub grad: Option<TorchIndexed>,
    pub saved: Option<usize>,
}

/// An attr of the backward op: the forward attr of the same name (`from`), or true when any of
/// the forward inputs at `request` (indices of `ctx.needs_input_grad`) needs a gradient.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchGradAttr {
    pub name: String,
    pub from: Option<String>,
    pub request: Vec<usize>,
}

/// Forward input `input` (at schema position `index`) gets the backward op's output `output`;
/// `meta` is its place in the saved input shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchGrad {
    pub input: String,
    pub index: usize,
    pub output: usize,
    pub meta: usize,
}

/// The backward of `spec`, from its spec's declaration: a generated `<name>_grad` takes the
/// incoming gradient then the forward's inputs (saved) and gives one gradient per input; a
/// declared backward op (`backward = "op"`, a layout op's inverse) takes the incoming gradients
/// only and gives one per input; a `[backward]` table says which tensors it takes and which of
/// its outputs is whose gradient. Ops that are not differentiable, whose backward op is not
/// generated yet, or whose backward op is not among `specs` (an `--ops` subset) get none (their
/// Autograd kernel refuses inputs that require grad).
pub fn backward_of(spec: &OpSpec, specs: &[&OpSpec]) -> Option<TorchBackward> {
    let inputs: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let grad = |out: &str| GradArg::Grad(out.to_string());
    let (op, args, grads): (&str, Vec<GradArg>, Vec<(String, String)>) = match &spec.backward {
        Backward::Derived => {
            let name = format!("{}_grad", spec.name);
            let b = specs.iter().find(|s| s.name == name)?;
            let args = std::iter::once(grad(&spec.outputs[0].name))
                .chain(inputs.iter().map(|n| GradArg::Saved(n.to_string())))
                .collect();
            let grads = inputs.iter().zip(&b.outputs).map(|(i, o)| (i.to_string(), o.name.clone())).collect();
            (b.name.as_str(), args, grads)
        }
        Backward::Op { name, .. } => {
            let b = specs.iter().find(|s| &s.name == name)?;
            let args = spec.outputs.iter().map(|o| grad(&o.name)).collect();
            let grads = inputs.iter().zip(&b.outputs).map(|(i, o)| (i.to_string(), o.name.clone())).collect();
            (b.name.as_str(), args, grads)
        }
        Backward::Table(t) => {
            let b = specs.iter().find(|s| s.name == t.op)?;
            let grads = t.grads.iter().map(|(i, o, _)| (i.clone(), o.clone())).collect();
            (b.name.as_str(), t.inputs.iter().map(|(a, _)| a.clone()).collect(), grads)
        }
        Backward::NotDifferentiable | Backward::NotGenerated => return None,
    };
    let b = specs.iter().find(|s| s.name == op)?;
    let input_index = |n: &str| inputs.iter().position(|i| *i == n).expect("validated: a forward input");
    let output_index =
        |n: &str| spec.outputs.iter().position(|o| o.name == n).expect("validated: a forward output");
    let mut saved: Vec<String> = Vec::new();
    let args: Vec<TorchGradArg> = args
        .iter()
        .map(|a| match a {
            GradArg::Grad(out) => TorchGradArg {
                grad: Some(TorchIndexed { name: out.clone(), index: output_index(out) }),
                saved: None,
            },
            GradArg::Saved(n) => {
                let k = saved.iter().position(|s| s == n).unwrap_or_else(|| {
                    saved.push(n.clone());
                    saved.len() - 1
                });
                TorchGradArg { grad: None, saved: Some(k) }
            }
        })
        .collect();
    let requests: Vec<(String, Vec<String>)> = match &spec.backward {
        Backward::Table(t) => t.request.iter().map(|(a, ins, _)| (a.clone(), ins.clone())).collect(),
        _ => Vec::new(),
    };
    let attrs = b
        .attrs
        .iter()
        .filter_map(|a| {
            if let Some((_, ins)) = requests.iter().find(|(r, _)| r == &a.name) {
                return Some(TorchGradAttr {
                    name: a.name.clone(),
                    from: None,
                    request: ins.iter().map(|n| input_index(n)).collect(),
                });
            }
            spec.attr(&a.name).map(|f| TorchGradAttr {
                name: a.name.clone(),
                from: Some(f.name.clone()),
                request: vec![],
            })
        })
        .collect();
    let grads: Vec<TorchGrad> = grads
        .iter()
        .enumerate()
        .map(|(meta, (input, output))| TorchGrad {
            input: input.clone(),
            index: input_index(input),
            output: b
                .outputs
                .iter()
                .position(|o| &o.name == output)
                .expect("validated: an output of the backward op"),
            meta,
        })
        .collect();
    let no_grad = spec
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, t)| !grads.iter().any(|g| g.input == t.name))
        .map(|(index, t)| TorchIndexed { name: t.name.clone(), index })
        .collect();
    let taken = |o: &str| args.iter().any(|a| a.grad.as_ref().is_some_and(|g| g.name == o));
    let non_differentiable =
        spec.outputs.iter().filter(|o| !taken(&o.name)).map(|o| o.name.clone()).collect();
    let returns = (0..spec.inputs.len() + spec.attrs.len())
        .map(|k| grads.iter().find(|g| g.index == k).cloned())
        .collect();
    Some(TorchBackward {
        op: op.to_string(),
        saved,
        args,
        attrs,
        grads,
        no_grad,
        non_differentiable,
        returns,
    })
}

/// Names a Python wrapper parameter cannot have.
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// Locals the generated kernels declare beside the arguments.
const KERNEL_LOCALS: &[&str] = &["op_name", "plan", "guard", "registered", "matched", "m"];

fn torch_op(spec: &OpSpec, specs: &[&OpSpec]) -> Result<TorchOp, RenderError> {
    let err =
        |message: String| RenderError { op: spec.name.clone(), template: "torch (context)".into(), message };
    let names: Vec<&String> = spec
        .inputs
        .iter()
        .map(|t| &t.name)
        .chain(spec.attrs.iter().map(|a| &a.name))
        .chain(spec.outputs.iter().map(|t| &t.name))
        .collect();
    for n in &names {
        if PYTHON_KEYWORDS.contains(&n.as_str()) {
            return Err(err(format!(
                "`{n}` is a Python keyword: the torch schema and wrapper cannot use it"
            )));
        }
        if KERNEL_LOCALS.contains(&n.as_str()) {
            return Err(err(format!(
                "`{n}` collides with a local of the generated torch kernels; rename it"
            )));
        }
        for suffix in ["_contig", "_text", "_chars"] {
            if let Some(base) = n.strip_suffix(suffix) {
                if names.iter().any(|m| m.as_str() == base) {
                    return Err(err(format!(
                        "`{n}` collides with the generated torch kernels' name for `{base}`{suffix}; rename it"
                    )));
                }
            }
        }
    }
    if let Some(i) = spec.attrs.iter().position(|a| a.default.is_some()) {
        if let Some(late) = spec.attrs[i..].iter().find(|a| a.default.is_none()) {
            return Err(err(format!(
                "attr `{}` has no default but follows `{}`, which has one: the Python wrapper needs \
                 required attrs first",
                late.name, spec.attrs[i].name
            )));
        }
    }
    let rule = shape_rule(spec).map_err(|e| err(e.to_string()))?;
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
    let check_attrs = spec
        .attrs
        .iter()
        .map(|a| match a.kind {
            AttrKind::String => format!("{}_text.c_str()", a.name),
            // The op_host reads a float attr as float (GetAttrPointer<float>): the value it sees.
            AttrKind::Float => format!("static_cast<float>({})", a.name),
            _ => a.name.clone(),
        })
        .collect();
    Ok(TorchOp {
        host_checks: None,
        check_attrs,
        stem: spec.file_stem(),
        backward: backward_of(spec, specs),
        sharding: sharding_of(spec, &rule),
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
    let mut ops = specs.iter().map(|s| torch_op(s, specs)).collect::<Result<Vec<TorchOp>, RenderError>>()?;
    for (op, spec) in ops.iter_mut().zip(specs) {
        op.host_checks = host_checks(env, spec)?;
    }
    render_ops_named(env, &ops, &super::project_names(specs)?)
}

/// The family's shared host checks of `spec`, rendered exactly as its op_host has them (same
/// template, same context), or None when the family has none: the `checks` block of the
/// template the family names (its op_host template itself, so a family needs no checks file),
/// or the whole of a template without that block (a checks file the op_host includes).
fn host_checks(env: &Environment<'static>, spec: &OpSpec) -> Result<Option<String>, RenderError> {
    let Some(template) = crate::family::templates(spec).checks else {
        return Ok(None);
    };
    let error =
        |message: String| RenderError { op: spec.name.clone(), template: template.to_string(), message };
    let cx = super::context::OpContext::new(spec).map_err(|e| error(e.to_string()))?;
    let mut whole = env
        .get_template(template)
        .and_then(|t| t.render_captured(Value::from_serialize(&cx)))
        .map_err(|e| error(format!("{e:#}")))?;
    match whole.with_state_mut(|state| state.render_block(CHECKS_BLOCK)) {
        Err(e) if e.kind() == minijinja::ErrorKind::UnknownBlock => Ok(Some(whole.into_output())),
        block => block.map(Some).map_err(|e| error(format!("{e:#}"))),
    }
}

/// The block of a family's op_host template that holds its shared host checks.
const CHECKS_BLOCK: &str = "checks";

#[cfg(test)]
fn render_ops(env: &Environment<'static>, ops: &[TorchOp]) -> Result<Vec<GeneratedFile>, RenderError> {
    render_ops_named(env, ops, &ProjectNames::default())
}

fn render_ops_named(
    env: &Environment<'static>,
    ops: &[TorchOp],
    names: &ProjectNames,
) -> Result<Vec<GeneratedFile>, RenderError> {
    let sources: Vec<&str> = ops.iter().map(|o| o.source.as_str()).collect();
    let cx = context! {
        ops => Value::from_serialize(ops),
        library => names.library.as_str(),
        extension => names.package.as_str(),
        vendor => names.vendor.as_str(),
        twin_library => names.twin_library(),
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
            Ok(GeneratedFile { path: path.replace("{package}", &names.package), contents })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The torch files of `rendered`, their backward ops looked up in `specs`.
    fn render_catalogue(rendered: &[&OpSpec], specs: &[&OpSpec]) -> Vec<GeneratedFile> {
        let ops: Vec<TorchOp> = rendered.iter().map(|s| torch_op(s, specs).expect("context")).collect();
        let mut env =
            super::super::env::environment(&super::super::project::template_sources()).expect("environment");
        env.add_function("banner", super::super::project::banner);
        render_ops(&env, &ops).expect("renders")
    }

    fn parses_as_python(py: &str) {
        let parsed = crate::toolchain::command::Cmd::new("python3")
            .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
            .stdin_bytes(py.as_bytes().to_vec())
            .run_checked();
        assert!(parsed.is_ok(), "ops.py is not valid Python: {parsed:?}");
    }

    /// rotary_mul's `[backward]` table names rotary_mul_grad (inputs dy, x, r1, r2; attrs mode,
    /// table_grads; outputs dx, dr1, dr2): the catalogue check accepts it, and the glue passes
    /// `mode` through and sets `table_grads` when r1 or r2 needs grad.
    #[test]
    fn the_rotary_table_validates_and_requests_the_table_grads() {
        let specs = crate::family::load_catalogue(&crate::repo_root().join("kernels")).expect("catalogue");
        let find = |name: &str| specs.iter().find(|s| s.name == name).expect(name).clone();
        let rotary = find("rotary_mul");
        let grad = find("rotary_mul_grad");
        let mut errors = crate::spec::SpecErrors::default();
        crate::spec::check_backward_ops(&[rotary.clone(), grad.clone()], &mut errors);
        assert!(errors.is_empty(), "{errors}");
        // A request of an attr the backward op lacks is refused with the table's location.
        let mut wrong = grad.clone();
        wrong.attrs.retain(|a| a.name != "table_grads");
        crate::spec::check_backward_ops(&[rotary.clone(), wrong], &mut errors);
        let shown = errors.to_string();
        assert!(
            shown.contains("field `backward.request.table_grads`")
                && shown.contains("has no attr `table_grads`"),
            "{shown}"
        );

        let files = render_catalogue(&[&rotary], &[&rotary, &grad]);
        let py = &files.iter().find(|f| f.path == "torch/opgen_torch/ops.py").expect("ops.py").contents;
        for want in [
            "torch.ops.opgen.rotary_mul_grad(",
            "mode=ctx.attrs[\"mode\"],",
            "table_grads=bool(ctx.needs_input_grad[1] or ctx.needs_input_grad[2]),",
            "_outgoing(result[1], inputs[1]) if ctx.needs_input_grad[1] else None,  # r1",
            "\"rotary_mul\": \"rotary_mul_grad\",",
        ] {
            assert!(py.contains(want), "`{want}` not in:\n{py}");
        }
        parses_as_python(py);
    }

    /// The row norms' glue from their tables: saved tensors in the backward op's order, rstd
    /// marked non-differentiable, x_sum's incoming gradient (zeros when unused) passed, dx given
    /// to both x1 and x2, no refusing C++ Autograd kernel; an `--ops` subset without the
    /// backward op keeps the refusing kernel.
    /// Each family's sharding rule, by the specs' tensor order (gamma is rms_norm_grad's input
    /// 3 and layer_norm_grad's input 4; dgamma/dbeta are summed over the rows, so Partial).
    #[test]
    fn every_op_gets_its_family_sharding_rule() {
        let specs = crate::family::load_catalogue(&crate::repo_root().join("kernels")).expect("catalogue");
        let rule = |name: &str| {
            let spec = specs.iter().find(|s| s.name == name).expect(name);
            sharding_of(spec, &shape_rule(spec).expect("shape rule"))
        };
        let sharding = |rule: &'static str, whole_of: Option<usize>, outputs: &[usize], reduces: bool| {
            TorchSharding { rule, whole_of, outputs: outputs.to_vec(), reduces }
        };
        assert_eq!(rule("rms_norm"), sharding("rows", Some(1), &[0, 0], false));
        assert_eq!(rule("rms_norm_grad"), sharding("rows", Some(3), &[1, 3], true));
        assert_eq!(rule("layer_norm_grad"), sharding("rows", Some(4), &[1, 4, 4], true));
        assert_eq!(rule("rotary_mul"), sharding("rows", None, &[0], false));
        assert_eq!(rule("rotary_mul_grad"), sharding("rows", None, &[1, 2, 3], true));
        assert_eq!(rule("swiglu"), sharding("elementwise", None, &[0], false));
        for name in ["reshape_and_cache", "bnsd_to_bsnd", "dequant_int8"] {
            assert_eq!(rule(name).rule, "replicate", "{name}");
        }
    }

    #[test]
    fn the_row_norm_tables_render_their_glue() {
        let specs = crate::family::load_catalogue(&crate::repo_root().join("kernels")).expect("catalogue");
        let all: Vec<&OpSpec> = specs.iter().collect();
        let files = render_catalogue(&all, &all);
        let text = |path: &str| files.iter().find(|f| f.path == path).expect(path).contents.clone();
        let py = text("torch/opgen_torch/ops.py");
        for want in [
            "\"opgen::rms_norm\", _rms_norm_backward, setup_context=_rms_norm_setup_context",
            "ctx.save_for_backward(x, rstd, gamma, )",
            "ctx.mark_non_differentiable(rstd, )",
            "ctx.save_for_backward(x_sum, rstd, gamma, )",
            "_incoming(grads[2], outputs[2], grads),  # grad of x_sum",
            "_outgoing(result[0], inputs[0]) if ctx.needs_input_grad[0] else None,  # x1",
            "_outgoing(result[0], inputs[1]) if ctx.needs_input_grad[1] else None,  # x2",
            "_outgoing(result[1], inputs[2]) if ctx.needs_input_grad[2] else None,  # gamma",
        ] {
            assert!(py.contains(want), "`{want}` not in ops.py");
        }
        parses_as_python(&py);
        let schema = text("torch/opgen_schema.cpp");
        let refusing = |op: &str| format!("m.impl(\"{op}\", torch::CppFunction::makeFromBoxedFunction");
        assert!(!schema.contains(&refusing("rms_norm")) && !schema.contains(&refusing("add_rms_norm")));
        assert!(!schema.contains(&refusing("rotary_mul")), "rotary_mul calls rotary_mul_grad");
        assert!(schema.contains(&refusing("dequant_int8")), "dequant_int8 is not differentiable");
        // An input the table gives no gradient is refused when it requires grad.
        let mut partial = specs.iter().find(|s| s.name == "rms_norm").expect("rms_norm").clone();
        if let Backward::Table(t) = &mut partial.backward {
            t.grads.retain(|(input, _, _)| input == "x");
        }
        let grad = specs.iter().find(|s| s.name == "rms_norm_grad").expect("rms_norm_grad");
        let files = render_catalogue(&[&partial], &[&partial, grad]);
        let py = &files.iter().find(|f| f.path == "torch/opgen_torch/ops.py").expect("ops.py").contents;
        assert!(py.contains("if ctx.needs_input_grad[1]:\n        raise RuntimeError(\n            \"opgen::rms_norm: input `gamma` requires grad, but the backward op rms_norm_grad gives it no \""), "{py}");
        assert!(py.contains("        None,  # gamma\n"), "{py}");
        parses_as_python(py);
        let alone: Vec<&OpSpec> = specs.iter().filter(|s| s.name == "rms_norm").collect();
        assert_eq!(backward_of(alone[0], &alone), None, "no rms_norm_grad to call");
    }

    /// The shared host checks are one text in two places: each op whose family has them carries
    /// in its op_host exactly the block opgen_torch.h carries (rendered once per file from one
    /// template), its op_host calls them, and the Meta and NPU kernels call them
    /// through `<op>_host_checks`. Families without them get no call.
    #[test]
    fn the_host_checks_are_one_text_in_the_op_host_and_the_torch_header() {
        let specs = crate::family::load_catalogue(&crate::repo_root().join("kernels")).expect("catalogue");
        let all: Vec<&OpSpec> = specs.iter().collect();
        let project = super::super::project::render_project(&all).expect("renders");
        let text = |path: &str| project.file(path).unwrap_or_else(|| panic!("{path}")).contents.clone();
        let header = text("torch/opgen_torch.h");
        let (schema, npu) = (text("torch/opgen_schema.cpp"), text("torch/opgen_npu.cpp"));
        let mut with_checks = Vec::new();
        for spec in &specs {
            let call = format!("opgen_torch::{}_host_checks(", spec.name);
            let Some(_) = crate::family::templates(spec).checks else {
                assert!(!schema.contains(&call) && !npu.contains(&call), "{}: no checks to call", spec.name);
                continue;
            };
            let stem = spec.file_stem();
            let host = text(&format!("op_host/{stem}.cpp"));
            let start = host
                .find("// ---- the shape")
                .unwrap_or_else(|| panic!("{stem}: no shared checks in its op_host"));
            let end_marker = format!("}}  // namespace {stem}_checks\n");
            let end = host.find(&end_marker).expect("the block's end") + end_marker.len();
            let block = &host[start..end];
            assert!(header.contains(block), "{stem}: opgen_torch.h lacks its op_host's check block");
            // The op_host calls HostChecks itself or its parts (dequant's InferShape and
            // InferDataType, the row norms' InferShape and TilingFunc, ...): each a function of
            // the block, and every refusal of the block's goes through one of them.
            let prefix = format!("{stem}_checks::");
            let called: Vec<&str> = host
                .match_indices(&prefix)
                .filter_map(|(at, _)| {
                    let rest = &host[at + prefix.len()..];
                    let name = &rest[..rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len())];
                    rest[name.len()..].starts_with('(').then_some(name)
                })
                .collect();
            assert!(!called.is_empty(), "{stem}: the op_host does not call them");
            for f in &called {
                assert!(
                    block.contains(&format!(" {f}(")),
                    "{stem}: the op_host calls {f}, which the block lacks"
                );
            }
            assert!(!host[end..].contains("OPGEN_CHECK_FAIL"), "{stem}: a refusal outside the shared block");
            assert!(
                schema.contains(&call) && npu.contains(&call),
                "{}: a kernel does not call them",
                spec.name
            );
            with_checks.push(spec.name.clone());
        }
        // Every family of the catalogue has them now.
        with_checks.sort();
        let mut all_ops: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        all_ops.sort();
        assert_eq!(with_checks, all_ops);
        for family in
            ["rms_norm", "add_rms_norm_grad", "swiglu", "gelu_erf_grad", "bsnd_to_bnsd", "rotary_mul"]
        {
            assert!(with_checks.iter().any(|n| n == family), "{family}");
        }
    }

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
