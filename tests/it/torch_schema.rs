//! The generated torch extension against the specs: the schema strings registered with
//! `m.def` are read back from the generated C++ and parsed here (independently of the code
//! that wrote them), then checked for names, argument order, types, defaults and mutability;
//! every op has a Meta and an NPU kernel, and the NPU kernel calls aclnn in the aclnn order.

use ascend_opgen::codegen::{render_project, torch, Project};
use ascend_opgen::family;
use ascend_opgen::spec::{AttrKind, AttrValue, OpSpec};
use std::path::Path;

fn catalogue() -> Vec<OpSpec> {
    family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).expect("the catalogue loads")
}

fn render(specs: &[OpSpec]) -> Project {
    let refs: Vec<&OpSpec> = specs.iter().collect();
    render_project(&refs).expect("renders")
}

/// One argument of a parsed schema.
#[derive(Debug)]
struct Arg {
    ty: String,
    /// `Some('a')` for `Tensor(a!)`.
    alias: Option<char>,
    name: String,
    default: Option<String>,
}

#[derive(Debug)]
struct Schema {
    name: String,
    args: Vec<Arg>,
    /// (type, name) of each return; a single unnamed return has an empty name.
    returns: Vec<(String, String)>,
}

/// Splits on commas outside parentheses.
fn split_top(text: &str) -> Vec<String> {
    let (mut depth, mut cur, mut out) = (0, String::new(), Vec::new());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// A minimal reader of the schema grammar the generator uses.
fn parse_schema(text: &str) -> Schema {
    let open = text.find('(').unwrap_or_else(|| panic!("no `(` in {text}"));
    let (head, returns) = text.rsplit_once(" -> ").unwrap_or_else(|| panic!("no ` -> ` in {text}"));
    let name = head[..open].to_string();
    let inner = &head[open + 1..head.len() - 1];
    let args = split_top(inner)
        .into_iter()
        .map(|a| {
            let (decl, default) = match a.split_once('=') {
                Some((d, v)) => (d.to_string(), Some(v.to_string())),
                None => (a.clone(), None),
            };
            let (ty, name) = decl.rsplit_once(' ').unwrap_or_else(|| panic!("argument `{a}` in {text}"));
            let (ty, alias) = match ty.strip_prefix("Tensor(") {
                Some(rest) => {
                    let letter = rest.strip_suffix("!)").unwrap_or_else(|| panic!("alias `{ty}` in {text}"));
                    assert_eq!(letter.len(), 1, "{text}");
                    ("Tensor".to_string(), letter.chars().next())
                }
                None => (ty.to_string(), None),
            };
            Arg { ty, alias, name: name.to_string(), default }
        })
        .collect();
    let returns = if returns == "()" {
        Vec::new()
    } else if let Some(list) = returns.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        split_top(list)
            .into_iter()
            .map(|r| {
                let (t, n) = r.split_once(' ').unwrap_or_else(|| panic!("return `{r}` in {text}"));
                (t.to_string(), n.to_string())
            })
            .collect()
    } else {
        vec![(returns.to_string(), String::new())]
    };
    Schema { name, args, returns }
}

/// The strings of `m.def("...")` in the generated schema file.
fn registered_schemas(project: &Project) -> Vec<String> {
    let file = project.file("torch/opgen_schema.cpp").expect("torch/opgen_schema.cpp is generated");
    file.contents
        .lines()
        .filter_map(|l| l.trim().strip_prefix("m.def(\"").and_then(|r| r.strip_suffix("\");")))
        // The C++ literal's escapes (string defaults are quoted).
        .map(|lit| lit.replace("\\\"", "\"").replace("\\\\", "\\"))
        .collect()
}

fn expected_type(kind: AttrKind) -> &'static str {
    match kind {
        AttrKind::Float => "float",
        AttrKind::Int => "int",
        AttrKind::Bool => "bool",
        AttrKind::String => "str",
    }
}

fn default_matches(text: &str, value: &AttrValue) -> bool {
    match value {
        AttrValue::Float(f) => text.parse::<f64>().is_ok_and(|v| v == *f),
        AttrValue::Int(i) => text.parse::<i64>().is_ok_and(|v| v == *i),
        AttrValue::Bool(b) => text == if *b { "True" } else { "False" },
        AttrValue::String(s) => text == format!("\"{s}\""),
    }
}

/// Everything the schema must say about `spec`.
fn check_schema(spec: &OpSpec, schema: &Schema) {
    let op = &spec.name;
    assert_eq!(&schema.name, op);
    let n_in = spec.inputs.len();
    assert_eq!(schema.args.len(), n_in + spec.attrs.len(), "{op}: inputs then attrs: {schema:?}");
    let mut letters = Vec::new();
    for (arg, t) in schema.args.iter().zip(&spec.inputs) {
        assert_eq!(arg.name, t.name, "{op}: input order");
        assert_eq!(arg.ty, "Tensor", "{op}: {}", t.name);
        assert!(arg.default.is_none(), "{op}: a tensor has no default");
        assert_eq!(arg.alias.is_some(), t.mutated, "{op}: `{}` mutability", t.name);
        if let Some(a) = arg.alias {
            assert!(!letters.contains(&a), "{op}: alias set `{a}` used twice");
            letters.push(a);
        }
    }
    for (arg, a) in schema.args[n_in..].iter().zip(&spec.attrs) {
        assert_eq!(arg.name, a.name, "{op}: attr order");
        assert_eq!(arg.ty, expected_type(a.kind), "{op}: attr `{}` type", a.name);
        assert!(arg.alias.is_none());
        match (&arg.default, &a.default) {
            (None, None) => {}
            (Some(text), Some(value)) => {
                assert!(default_matches(text, value), "{op}: attr `{}` default {text} vs {value:?}", a.name)
            }
            (got, want) => panic!("{op}: attr `{}` default: schema {got:?}, spec {want:?}", a.name),
        }
    }
    assert_eq!(schema.returns.len(), spec.outputs.len(), "{op}: returns");
    for ((ty, name), t) in schema.returns.iter().zip(&spec.outputs) {
        assert_eq!(ty, "Tensor");
        if spec.outputs.len() > 1 {
            assert_eq!(name, &t.name, "{op}: output order");
        }
    }
}

#[test]
fn schemas_match_the_specs() {
    let specs = catalogue();
    let project = render(&specs);
    let schemas = registered_schemas(&project);
    assert_eq!(schemas.len(), specs.len(), "one m.def per op: {schemas:?}");
    for spec in &specs {
        let text = schemas
            .iter()
            .find(|s| s.starts_with(&format!("{}(", spec.name)))
            .unwrap_or_else(|| panic!("no schema for {}: {schemas:?}", spec.name));
        check_schema(spec, &parse_schema(text));
    }
}

#[test]
fn schema_texts_written_by_hand() {
    // From the specs and torch's schema grammar: in-place inputs carry distinct alias sets
    // (`Tensor(a!)`), a str attr keeps its quoted default, one output is an unnamed `Tensor`.
    let specs = catalogue();
    for (op, want) in [
        (
            "rms_norm",
            "rms_norm(Tensor x, Tensor gamma, float epsilon=1e-6, str rounding=\"once\") -> (Tensor y, Tensor rstd)",
        ),
        (
            "add_rms_norm",
            "add_rms_norm(Tensor x1, Tensor x2, Tensor gamma, float epsilon=1e-6, str rounding=\"hf\") \
             -> (Tensor y, Tensor rstd, Tensor x_sum)",
        ),
        ("rotary_mul", "rotary_mul(Tensor x, Tensor r1, Tensor r2, str mode=\"half\", str rounding=\"once\") -> Tensor"),
        (
            "reshape_and_cache",
            "reshape_and_cache(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, \
             Tensor slot_mapping) -> Tensor",
        ),
        ("dequant_int8", "dequant_int8(Tensor q, Tensor scale, str out_dtype=\"float16\") -> Tensor"),
    ] {
        let spec = specs.iter().find(|s| s.name == op).unwrap_or_else(|| panic!("{op} is in the catalogue"));
        assert_eq!(torch::schema(spec), want);
        // The generated registration carries exactly this text.
        let project = render(std::slice::from_ref(spec));
        assert_eq!(registered_schemas(&project), vec![want.to_string()], "{op}");
    }
}

#[test]
fn every_op_has_meta_and_npu_kernels_calling_aclnn_in_order() {
    let specs = catalogue();
    let project = render(&specs);
    let schema_cpp = &project.file("torch/opgen_schema.cpp").unwrap().contents;
    let npu_cpp = &project.file("torch/opgen_npu.cpp").unwrap().contents;
    assert!(schema_cpp.contains("TORCH_LIBRARY(opgen, m)"));
    assert!(schema_cpp.contains("TORCH_LIBRARY_IMPL(opgen, Meta, m)"));
    assert!(npu_cpp.contains("TORCH_LIBRARY_IMPL(opgen, PrivateUse1, m)"));
    assert!(npu_cpp.contains("#include \"op_plugin/include/npu_cpp_extension.h\""));
    for spec in &specs {
        let name = &spec.name;
        assert!(schema_cpp.contains(&format!("m.impl(\"{name}\", TORCH_FN({name}_meta));")), "{name}");
        assert!(npu_cpp.contains(&format!("m.impl(\"{name}\", TORCH_FN({name}_npu));")), "{name}");
        let call_start = npu_cpp
            .find(&format!("EXEC_NPU_CMD_EXT(aclnn{}, ", spec.op_type))
            .unwrap_or_else(|| panic!("{name}: no EXEC_NPU_CMD_EXT(aclnn{}", spec.op_type));
        let call = &npu_cpp[call_start..];
        let call = &call[call.find(", ").unwrap() + 2..call.find(");").unwrap()];
        let mut want: Vec<String> = spec
            .inputs
            .iter()
            .map(|t| if t.mutated { t.name.clone() } else { format!("{}_contig", t.name) })
            .collect();
        want.extend(spec.attrs.iter().map(|a| match a.kind {
            AttrKind::String => format!("{}_chars", a.name),
            _ => a.name.clone(),
        }));
        want.extend(spec.outputs.iter().map(|t| t.name.clone()));
        assert_eq!(
            call.split(", ").collect::<Vec<_>>(),
            want,
            "{name}: aclnn order is inputs, attrs, outputs"
        );
    }
    // The build recipe: C++20 (torch 2.14), the C++11 ABI, the op-plugin include dir, no undefined symbols.
    let cmake = &project.file("torch/CMakeLists.txt").unwrap().contents;
    for needle in [
        "CMAKE_CXX_STANDARD 20",
        "_GLIBCXX_USE_CXX11_ABI=${OPGEN_CXX11_ABI}",
        "set(OPGEN_CXX11_ABI 1",
        "include/third_party/op-plugin",
        "-Wl,--no-undefined",
        "c10 torch torch_cpu torch_python torch_npu",
    ] {
        assert!(cmake.contains(needle), "torch/CMakeLists.txt lacks {needle}");
    }
}

const IN_PLACE_SPEC: &str = r#"
name = "rms_norm_cached"
family = "row_norm"
summary = "rms_norm whose gamma is updated in place (a test of the schema's alias annotations)"
targets = ["ascend910b"]

[[inputs]]
name = "x"
dtypes = ["float16"]

[[inputs]]
name = "gamma"
dtypes = ["float16"]
mutated = true

[[outputs]]
name = "y"
dtypes = ["float16"]

[[outputs]]
name = "rstd"
dtypes = ["float32"]

[[attrs]]
name = "epsilon"
type = "float"
"#;

#[test]
fn in_place_inputs_are_mutable_in_the_schema_and_passed_uncopied() {
    let spec =
        family::parse_str(Path::new("kernels/rms_norm_cached.toml"), IN_PLACE_SPEC).expect("valid spec");
    let schema = torch::schema(&spec);
    assert_eq!(
        schema,
        "rms_norm_cached(Tensor x, Tensor(a!) gamma, float epsilon) -> (Tensor y, Tensor rstd)"
    );
    check_schema(&spec, &parse_schema(&schema));
    let project = render(std::slice::from_ref(&spec));
    let npu = &project.file("torch/opgen_npu.cpp").unwrap().contents;
    assert!(npu.contains("at::Tensor& gamma, double epsilon"), "{npu}");
    assert!(npu.contains("check_contiguous_in_place(op_name, {\"gamma\", &gamma});"), "{npu}");
    assert!(
        npu.contains("EXEC_NPU_CMD_EXT(aclnnOpgenRmsNormCached, x_contig, gamma, epsilon, y, rstd);"),
        "{npu}"
    );
    let ops_py = &project.file("torch/opgen_torch/ops.py").unwrap().contents;
    assert!(ops_py.contains("    epsilon: float,\n"), "a required attr has no default:\n{ops_py}");
    assert!(ops_py.contains("updated in place, must be contiguous"), "{ops_py}");
}

#[test]
fn row_norm_shape_rules_follow_the_op_host_infer_shape() {
    use ascend_opgen::family::{shape_rule, OutputShape, ShapeCheck};
    let specs = catalogue();
    let by_name =
        |n: &str| specs.iter().find(|s| s.name == n).unwrap_or_else(|| panic!("{n} in the catalogue"));
    let s = |t: &str| t.to_string();
    let rule = shape_rule(by_name("rms_norm")).unwrap();
    assert_eq!(rule.checks, vec![ShapeCheck::TrailingDims { tensor: s("gamma"), of: s("x") }]);
    assert_eq!(
        rule.outputs,
        vec![
            OutputShape::Like { of: s("x") },
            OutputShape::TrailingOnes { of: s("x"), count_of: s("gamma") }
        ]
    );
    let rule = shape_rule(by_name("add_rms_norm")).unwrap();
    assert_eq!(
        rule.checks,
        vec![
            ShapeCheck::SameShape { tensor: s("x2"), like: s("x1") },
            ShapeCheck::TrailingDims { tensor: s("gamma"), of: s("x1") },
        ]
    );
    assert_eq!(rule.outputs[1], OutputShape::TrailingOnes { of: s("x1"), count_of: s("gamma") });
    assert_eq!(rule.outputs[2], OutputShape::Like { of: s("x1") });
}

#[test]
fn every_op_has_a_cpu_kernel_a_host_checked_meta_kernel_and_an_autograd_kernel() {
    let specs = catalogue();
    let project = render(&specs);
    let schema_cpp = &project.file("torch/opgen_schema.cpp").unwrap().contents;
    let cpu_cpp = &project.file("torch/opgen_cpu.cpp").unwrap().contents;
    assert!(cpu_cpp.contains("TORCH_LIBRARY_IMPL(opgen, CPU, m)"));
    assert!(schema_cpp.contains("TORCH_LIBRARY_IMPL(opgen, Autograd, m)"));
    for spec in &specs {
        let name = &spec.name;
        assert!(cpu_cpp.contains(&format!("m.impl(\"{name}\", TORCH_FN({name}_cpu));")), "{name}");
        // The CPU kernel runs the kernel built for the op's own stem and type.
        assert!(
            cpu_cpp.contains(&format!(
                "launch(op_name, \"{}\", \"{}\", plan.column,",
                spec.op_type,
                spec.file_stem()
            )),
            "{name}: CPU launch"
        );
        // The Meta kernel asks the op_host (under the op's CANN type) with every attr.
        let meta_start = schema_cpp.find(&format!(" {name}_meta(")).unwrap();
        let meta = &schema_cpp[meta_start..meta_start + schema_cpp[meta_start..].find("\n}\n").unwrap()];
        assert!(meta.contains(&format!("check_with_host(\"opgen::{name}\", \"{}\"", spec.op_type)), "{meta}");
        for a in &spec.attrs {
            assert!(
                meta.contains(&format!("attr_text(\"{0}\", {0})", a.name)),
                "{name}: attr {} in {meta}",
                a.name
            );
        }
        // An op with a backward op (a derived `<name>_grad`, or a declared inverse) registers
        // autograd through it and no refusing kernel; every other op refuses inputs that
        // require grad.
        let refusing = format!(
            "m.impl(\"{name}\", torch::CppFunction::makeFromBoxedFunction<&opgen_torch::not_differentiable>());"
        );
        let ops_py = &project.file("torch/opgen_torch/ops.py").unwrap().contents;
        match torch::backward_of(spec, &specs.iter().collect::<Vec<_>>()) {
            Some(b) => {
                assert!(
                    !schema_cpp.contains(&refusing),
                    "{name}: has backward {} but a refusing kernel",
                    b.op
                );
                assert!(
                    ops_py.contains(&format!(
                        "torch.library.register_autograd(\n        \"opgen::{name}\", _{name}_backward"
                    )),
                    "{name}: no register_autograd"
                );
                assert!(
                    specs.iter().any(|s| s.name == b.op),
                    "{name}: backward op {} not in the catalogue",
                    b.op
                );
            }
            None => assert!(schema_cpp.contains(&refusing), "{name}: Autograd kernel"),
        }
    }
    // The CPU kernels are never part of the NPU build.
    let cmake = &project.file("torch/CMakeLists.txt").unwrap().contents;
    assert!(!cmake.contains("opgen_cpu.cpp"));
}
