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
use crate::family::{shape_rule, ShapeRule};
use crate::spec::ProjectNames;
use crate::spec::{Attr, AttrKind, AttrValue, Backward, OpSpec, TensorArg};
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
}

/// What the autograd formula of a differentiable op calls and saves: the one place the torch
/// templates read it from (the Python package's `register_autograd`, and the C++ Autograd
/// kernels, which are generated only for ops without one).
///
/// Convention of the backward op: `torch.ops.opgen.<op>(grads of every output, saved tensors,
/// attrs) -> the gradients of `differentiable`, in that order`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchBackward {
    /// The backward op's name in the `opgen` library (e.g. `rms_norm_grad`).
    pub op: String,
    /// Forward inputs and outputs saved for backward, in the order the backward op takes them.
    pub saved: Vec<String>,
    /// The inputs that get a gradient; the others (integer inputs, caches) get None.
    pub differentiable: Vec<String>,
}

/// The backward of `spec`, from its spec's declaration: a generated `<name>_grad` takes the
/// incoming gradient then the forward's inputs (saved) and attrs, and gives one gradient per
/// input; a declared backward op (`backward = "op"`, a layout op's inverse) takes the incoming
/// gradients only. Ops that are not differentiable, or whose backward op is not generated yet,
/// get none (their Autograd kernel refuses inputs that require grad).
pub fn backward_of(spec: &OpSpec) -> Option<TorchBackward> {
    let inputs: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
    match &spec.backward {
        Backward::Derived => Some(TorchBackward {
            op: format!("{}_grad", spec.name),
            saved: inputs.clone(),
            differentiable: inputs,
        }),
        Backward::Op { name, .. } => {
            Some(TorchBackward { op: name.clone(), saved: Vec::new(), differentiable: inputs })
        }
        Backward::NotDifferentiable | Backward::NotGenerated => None,
    }
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
    let rule = shape_rule(spec).map_err(|e| e.to_string())?;
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
        stem: spec.file_stem(),
        backward: backward_of(spec),
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
    render_ops_named(env, &ops, &super::project_names(specs)?)
}

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

    /// The autograd plumbing for an op with a backward op (none exists yet, so the catalogue
    /// never renders it): rms_norm given one here gets a register_autograd call with the names
    /// from TorchBackward, valid Python, and no C++ Autograd kernel of its own.
    #[test]
    fn an_op_with_a_backward_gets_register_autograd_and_no_refusing_kernel() {
        let specs = crate::family::load_catalogue(&crate::repo_root().join("kernels")).expect("catalogue");
        let mut ops: Vec<TorchOp> = specs.iter().map(|s| torch_op(s).expect("context")).collect();
        let rms = ops.iter_mut().find(|o| o.name == "rms_norm").expect("rms_norm");
        rms.backward = Some(TorchBackward {
            op: "rms_norm_grad".into(),
            saved: vec!["x".into(), "gamma".into(), "rstd".into()],
            differentiable: vec!["x".into(), "gamma".into()],
        });
        let mut env =
            super::super::env::environment(&super::super::project::template_sources()).expect("environment");
        env.add_function("banner", super::super::project::banner);
        let files = render_ops(&env, &ops).expect("renders");
        let text = |path: &str| files.iter().find(|f| f.path == path).expect(path).contents.clone();
        let py = text("torch/opgen_torch/ops.py");
        assert!(
            py.contains("\"opgen::rms_norm\", _rms_norm_backward, setup_context=_rms_norm_setup_context"),
            "{py}"
        );
        assert!(py.contains("torch.ops.opgen.rms_norm_grad(*grads, *ctx.saved_tensors, *ctx.attrs)"), "{py}");
        assert!(py.contains("ctx.save_for_backward(x, gamma, rstd, )"), "{py}");
        assert!(py.contains("(\"x\", \"gamma\", )"), "{py}");
        let parsed = crate::toolchain::command::Cmd::new("python3")
            .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
            .stdin_bytes(py.into_bytes())
            .run_checked();
        assert!(parsed.is_ok(), "ops.py with a backward is not valid Python: {parsed:?}");
        let schema = text("torch/opgen_schema.cpp");
        assert!(
            !schema.contains("m.impl(\"rms_norm\", torch::CppFunction::makeFromBoxedFunction"),
            "{schema}"
        );
        // rotary_mul declares no backward op: it keeps its refusing Autograd kernel.
        assert!(schema.contains("m.impl(\"rotary_mul\", torch::CppFunction::makeFromBoxedFunction"));
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
