//! Generated backward ops of elementwise specs: the differentiation rules, simplification, CSE
//! across the partial derivatives, the derivatives against central finite differences of the
//! forward written here in Rust, the hand-written catalogue references against both, the
//! stable rewrites (the mish case), the spec rules (`differentiable`, `backward`), and a user's
//! own spec getting a verified `_grad` op through the twin.

use crate::support::Patched;
use crate::support::TempDir;
use ascend_opgen::family::elementwise::{analyse_backward, analyse_body, diff, eval, expr, lower};
use ascend_opgen::reference::activation;
use ascend_opgen::spec::{self, Backward};
use ascend_opgen::toolchain::command::Cmd;
use std::fs;
use std::path::Path;
use std::time::Duration;

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// ∂body/∂(input i) at `point` (dy = 1), from the generated backward op's trees.
fn partial(body: &str, inputs: &[&str], i: usize, point: &[f64]) -> f64 {
    let b = analyse_backward(body, "dy", &names(inputs), &[]).unwrap_or_else(|e| panic!("{body}: {e}"));
    let mut at = vec![1.0];
    at.extend_from_slice(point);
    eval::eval(&b.outputs[i], &at, &[])
}

/// Central difference of `f` in coordinate i, with Richardson extrapolation (error O(h^4)).
fn central(f: &dyn Fn(&[f64]) -> f64, point: &[f64], i: usize) -> f64 {
    let d = |h: f64| {
        let (mut p, mut m) = (point.to_vec(), point.to_vec());
        p[i] += h;
        m[i] -= h;
        (f(&p) - f(&m)) / (2.0 * h)
    };
    let h = 1e-3 * point[i].abs().max(1.0);
    (4.0 * d(h / 2.0) - d(h)) / 3.0
}

fn close(a: f64, b: f64, rel: f64, what: &str) {
    let scale = a.abs().max(b.abs()).max(1e-3);
    assert!((a - b).abs() <= rel * scale, "{what}: {a} vs {b}");
}

fn sig(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

#[test]
fn each_rule_against_finite_differences_of_the_forward_written_here() {
    type F = fn(&[f64]) -> f64;
    type Case<'a> = (&'a str, F, Vec<&'a str>, Vec<Vec<f64>>);
    // (body, the same function in Rust, input names, points): the points avoid the kinks of
    // abs/min/max.
    let cases: Vec<Case> = vec![
        ("exp(x)", |v| v[0].exp(), vec!["x"], vec![vec![-2.0], vec![0.3], vec![3.0]]),
        ("log(x)", |v| v[0].ln(), vec!["x"], vec![vec![0.2], vec![5.0]]),
        ("sqrt(x)", |v| v[0].sqrt(), vec!["x"], vec![vec![0.3], vec![7.0]]),
        ("rsqrt(x)", |v| 1.0 / v[0].sqrt(), vec!["x"], vec![vec![0.3], vec![7.0]]),
        ("abs(x) * x", |v| v[0].abs() * v[0], vec!["x"], vec![vec![-1.5], vec![2.0]]),
        ("tanh(x)", |v| v[0].tanh(), vec!["x"], vec![vec![-3.0], vec![0.1], vec![12.0]]),
        ("erf(x)", |v| activation::erf(v[0]), vec!["x"], vec![vec![-1.2], vec![0.4]]),
        ("erfc(x)", |v| activation::erfc(v[0]), vec!["x"], vec![vec![-0.7], vec![2.5]]),
        ("sigmoid(x)", |v| sig(v[0]), vec!["x"], vec![vec![-4.0], vec![0.0], vec![6.0]]),
        ("softplus(x)", |v| (1.0 + v[0].exp()).ln(), vec!["x"], vec![vec![-3.0], vec![2.0]]),
        ("log1p(x)", |v| v[0].ln_1p(), vec!["x"], vec![vec![-0.5], vec![1e-3], vec![4.0]]),
        ("expm1(x)", |v| v[0].exp_m1(), vec!["x"], vec![vec![-0.2], vec![1.5]]),
        ("pow(x, 3) - pow(x, -2)", |v| v[0].powi(3) - v[0].powi(-2), vec!["x"], vec![vec![0.7], vec![-2.0]]),
        ("x / (1 + x * x)", |v| v[0] / (1.0 + v[0] * v[0]), vec!["x"], vec![vec![-0.4], vec![3.0]]),
        (
            "max(x, 0) + 2 * min(x, 1)",
            |v| v[0].max(0.0) + 2.0 * v[0].min(1.0),
            vec!["x"],
            vec![vec![-0.5], vec![0.5], vec![2.0]],
        ),
        (
            "-x * sign(x) + step(x)",
            |v| -v[0].abs() + if v[0] > 0.0 { 1.0 } else { 0.0 },
            vec!["x"],
            vec![vec![-2.0], vec![3.0]],
        ),
        (
            "x * y / (x - y)",
            |v| v[0] * v[1] / (v[0] - v[1]),
            vec!["x", "y"],
            vec![vec![2.0, 0.5], vec![-1.0, 3.0]],
        ),
        (
            "max(x, y) * exp(-y)",
            |v| v[0].max(v[1]) * (-v[1]).exp(),
            vec!["x", "y"],
            vec![vec![2.0, 0.5], vec![-1.0, 3.0]],
        ),
        // The user's mish as written and SwiGLU with three inputs.
        (
            "x * tanh(log(1 + exp(x)))",
            |v| v[0] * (1.0 + v[0].exp()).ln().tanh(),
            vec!["x"],
            vec![vec![-1.19], vec![-9.0], vec![0.7], vec![4.0]],
        ),
        (
            "gate * sigmoid(gate) * up + 0.5 * w",
            |v| v[0] * sig(v[0]) * v[1] + 0.5 * v[2],
            vec!["gate", "up", "w"],
            vec![vec![-1.3, 2.0, 0.1], vec![3.0, -0.5, 7.0]],
        ),
    ];
    for (body, f, inputs, points) in &cases {
        for point in points {
            for i in 0..inputs.len() {
                let got = partial(body, inputs, i, point);
                let want = central(f, point, i);
                close(got, want, 1e-7, &format!("d({body})/d{} at {point:?}", inputs[i]));
            }
        }
    }
}

#[test]
fn the_catalogue_references_match_the_differentiated_bodies_and_finite_differences() {
    type Unary = fn(f64) -> f64;
    let bodies: [(&str, Unary, Unary); 3] = [
        (
            "x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))",
            activation::gelu_tanh,
            activation::gelu_tanh_grad,
        ),
        ("0.5 * x * (1 + erf(x / sqrt(2)))", activation::gelu_erf, activation::gelu_erf_grad),
        ("x * sigmoid(1.702 * x)", activation::fast_gelu, activation::fast_gelu_grad),
    ];
    for (body, forward, grad) in bodies {
        for k in 0..=160 {
            let x = -8.0 + 0.1 * f64::from(k) + 0.013;
            let tree = partial(body, &["x"], 0, &[x]);
            close(grad(x), tree, 1e-12, &format!("{body} at {x}: reference vs tree"));
            close(grad(x), central(&|v: &[f64]| forward(v[0]), &[x], 0), 1e-7, &format!("{body} at {x}: FD"));
        }
        assert!(grad(f64::NAN).is_nan() && grad(f64::INFINITY).is_nan() && grad(f64::NEG_INFINITY).is_nan());
    }
    for (g, u) in [(-1.3, 2.0), (0.4, -3.0), (6.0, 0.25)] {
        let (dg, du) = activation::swiglu_grad(g, u);
        let body = "gate * sigmoid(gate) * up";
        close(dg, partial(body, &["gate", "up"], 0, &[g, u]), 1e-12, "dgate tree");
        close(du, partial(body, &["gate", "up"], 1, &[g, u]), 1e-12, "dup tree");
        let f = |v: &[f64]| activation::swiglu(v[0], v[1]);
        close(dg, central(&f, &[g, u], 0), 1e-7, "dgate FD");
        close(du, central(&f, &[g, u], 1), 1e-7, "dup FD");
    }
}

fn show_grad(body: &str, inputs: &[&str]) -> Vec<String> {
    let b = analyse_backward(body, "dy", &names(inputs), &[]).unwrap();
    b.outputs.iter().map(|o| lower::show(o, &b.inputs, &[])).collect()
}

#[test]
fn derivatives_are_simplified() {
    // No `* 1`, `+ 0`, `0 *` left over; constants folded and gathered.
    assert_eq!(show_grad("2 * x + 1", &["x"]), ["2 * dy"]);
    assert_eq!(show_grad("x * 1 + 0 * exp(x)", &["x"]), ["dy"]);
    assert_eq!(show_grad("3 * (2 * x) - x", &["x"]), ["5 * dy"]);
    assert_eq!(show_grad("x * y", &["x", "y"]), ["dy * y", "dy * x"]);
    assert_eq!(show_grad("-exp(x)", &["x"]), ["-(dy * exp(x))"]);
    assert_eq!(show_grad("pow(x, 2)", &["x"]), ["dy * (2 * x)"]);
    // Structural zeros: an input the body uses only through a constant factor.
    use expr::Node;
    assert_eq!(diff::simplify(diff::mul(Node::Const(0.0), Node::Input(0))), Node::Const(0.0));
    assert_eq!(diff::add(Node::Input(0), Node::Const(0.0)), Node::Input(0));
    // The differentiated trees use the stable forms: sigmoid' is e^-|u| / (1 + e^-|u|)^2, not
    // s * (1 - s); tanh' likewise, not 1 - tanh^2.
    let silu = show_grad("x * sigmoid(x)", &["x"]).remove(0);
    assert!(silu.contains("exp(-abs(x)) / pow(1 + exp(-abs(x)), 2)"), "{silu}");
    let t = show_grad("tanh(x)", &["x"]).remove(0);
    assert!(!t.contains("tanh"), "{t}");
}

#[test]
fn shared_subexpressions_are_computed_once_across_outputs() {
    let body = "gate * sigmoid(gate) * up";
    let both = analyse_backward(body, "dy", &names(&["gate", "up"]), &[]).unwrap();
    let alone: usize =
        both.outputs.iter().map(|o| lower::lower(o, &both.inputs, &[]).unwrap().calls.len()).sum();
    let shared = both.program.calls.len();
    // sigmoid(gate) (7 calls) is in both outputs; lowered together it is computed once.
    assert!(shared + 7 <= alone, "one program {shared} calls, separately {alone}");
    let exps = |calls: &[lower::Call]| calls.iter().filter(|c| c.call.starts_with("Exp(")).count();
    // e^-|g| once for both outputs (the sigmoid is Select(g < 0, t, 1) / (1 + t) with t = e^-|g|),
    // and the underflow rescue's two exponentials shifted by 2^64, e^(min(g, 0) + 64 ln 2) and
    // e^(-|g| + 64 ln 2), also shared by both outputs. The rescue (behind its guard, rarely run)
    // recomputes e^-|g| rather than keep it live through the plain path.
    let at = both.program.guard.as_ref().expect("a guarded rescue").at;
    let (plain, rescue) = both.program.calls.split_at(at);
    assert_eq!((exps(plain), exps(rescue)), (1, 3), "{:#?}", both.program.calls);
    // gelu_tanh's backward: the sigmoid's e^-|z| is the slope's too.
    let g = analyse_backward(
        "x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))",
        "dy",
        &names(&["x"]),
        &[],
    )
    .unwrap();
    // e^-|z| once (the sigmoid's and the slope's); behind the guard it again and the two shifted
    // ones of the underflow rescue.
    let (plain, rescue) = g.program.calls.split_at(g.program.guard.as_ref().expect("a guarded rescue").at);
    assert_eq!((exps(plain), exps(rescue)), (1, 3), "{:#?}", g.program.calls);
    assert_eq!(g.program.results.len(), 1);
}

#[test]
fn cancelling_sums_get_a_series_at_their_roots() {
    // GeLU' = 0 near x = -0.7518: the sum is patched there, the f64 value is unchanged.
    let body = "x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))";
    let b = analyse_backward(body, "dy", &names(&["x"]), &[]).unwrap();
    let shown = lower::show(&b.outputs[0], &b.inputs, &[]);
    assert!(shown.contains("series near x = -0.75"), "{shown}");
    // The series in float32 (what the kernel's Adds/Muls/Horner do) keeps relative accuracy at
    // the root where the plain float32 sum has none.
    let expr::Node::Rescued(plain, _) = &b.outputs[0] else { panic!("rescued: {shown}") };
    let expr::Node::Bin(_, _, patched) = &**plain else { panic!("dy * (..): {shown}") };
    let expr::Node::Patched(p) = &**patched else { panic!("{shown}") };
    let w = &p.windows[0];
    for k in -20..=20 {
        let x = (w.hi + f64::from(k) * 1e-6) as f32;
        let t = (x - w.hi as f32) - w.lo as f32;
        let u = t * (1.0 / ascend_opgen::family::elementwise::roots::RADIUS as f32);
        let g = w.coeffs.iter().rev().fold(0.0f32, |acc, c| acc * u + *c as f32);
        let series = f64::from(g * t);
        let exact = activation::gelu_tanh_grad(f64::from(x));
        assert!((series - exact).abs() <= 1e-5 * exact.abs() + 1e-30, "x = {x}: {series} vs {exact}");
    }
    // A sum whose terms vanish at its root (x + x^3 at 0) is not patched.
    let plain = show_grad("x * x + pow(x, 4)", &["x"]).remove(0);
    assert!(!plain.contains("series"), "{plain}");
}

#[test]
fn unstable_forms_are_rewritten() {
    let canon = |body: &str| {
        let b = analyse_body(body, &names(&["x", "y"]), &[]).unwrap();
        lower::show(&b.node, &b.inputs, &[])
    };
    assert_eq!(canon("x * tanh(log(1 + exp(x)))"), "x * tanh(softplus(x))");
    assert_eq!(canon("log(exp(x) + 1) + y"), "softplus(x) + y");
    assert_eq!(canon("log1p(exp(x))"), "softplus(x)");
    assert_eq!(canon("log(1 + x * y)"), "log1p(x * y)");
    assert_eq!(canon("log(1 - x)"), "log1p(-x)");
    assert_eq!(canon("exp(x) - 1"), "expm1(x)");
    assert_eq!(canon("1 - exp(x)"), "-expm1(x)");
    assert_eq!(canon("exp(x) + -1"), "expm1(x)");
    assert_eq!(canon("log(sigmoid(x))"), "-softplus(-x)");
    // The rewritten forms hold their value where the written ones lose it in float32.
    let f32_mish = |x: f32| x * (1.0 + x.exp()).ln().tanh();
    assert_eq!(f32_mish(-17.0), -0.0, "the user's report: 1 + e^-17 rounds to 1");
    let sp = eval::softplus(-17.0);
    assert!((sp - (-17f64).exp()).abs() < 1e-7 * sp, "softplus(-17) = {sp}, about e^-17");
    // The lowerings use only the basic APIs the twin reproduces.
    let b = analyse_body("softplus(x) + log1p(y) + expm1(x)", &names(&["x", "y"]), &[]).unwrap();
    for c in &b.program.calls {
        let api = c.call.split('(').next().unwrap();
        assert!(
            [
                "Abs",
                "Muls",
                "Adds",
                "Exp",
                "Ln",
                "Sub",
                "Div",
                "Mul",
                "Add",
                "Maxs",
                "CompareScalar",
                "Select"
            ]
            .contains(&api),
            "{}",
            c.call
        );
    }
}

// ---- spec rules -------------------------------------------------------------------------------

/// A fresh directory, removed when it drops (on a panic too).
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("grad-{name}"))
}

fn act(name: &str, body: &str, extra: &str) -> String {
    format!(
        "name = \"{name}\"\nfamily = \"elementwise\"\nsummary = \"s\"\ntargets = [\"ascend910b\"]\n{extra}\n[[inputs]]\nname = \"x\"\ndtypes = [\"float16\", \"float32\"]\n\n[[outputs]]\nname = \"y\"\ndtypes = [\"float16\", \"float32\"]\n\n[elementwise]\nbody = \"{body}\"\ncompute = \"float32\"\n"
    )
}

fn layout(name: &str, kind: &str, extra: &str, dtypes: &str) -> String {
    format!(
        "name = \"{name}\"\nfamily = \"permute\"\nsummary = \"s\"\ntargets = [\"ascend910b\"]\n{extra}\n[permute]\nkind = \"{kind}\"\n\n[[inputs]]\nname = \"x\"\ndtypes = [{dtypes}]\n\n[[outputs]]\nname = \"y\"\ndtypes = [{dtypes}]\n"
    )
}

fn catalogue(files: &[(&str, String)]) -> Result<Vec<spec::OpSpec>, spec::SpecErrors> {
    let dir = scratch(files[0].0);
    for (name, text) in files {
        fs::write(dir.join(format!("{name}.toml")), text).unwrap();
    }
    ascend_opgen::family::load_catalogue(&dir)
}

fn one_error(text: &str, name: &str) -> String {
    let e = ascend_opgen::family::parse_str(Path::new(&format!("kernels/{name}.toml")), text)
        .expect_err("rejected");
    assert_eq!(e.0.len(), 1, "{e}");
    e.0[0].to_string()
}

#[test]
fn a_differentiable_activation_brings_its_grad_and_differentiable_false_opts_out() {
    let specs = catalogue(&[
        ("quick", act("quick", "x * sigmoid(1.702 * x)", "")),
        ("relu", act("relu", "max(x, 0)", "differentiable = false")),
    ])
    .unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["quick", "quick_grad", "relu"]);
    let g = &specs[1];
    assert_eq!(g.op_type, "OpgenQuickGrad");
    let ins: Vec<&str> = g.inputs.iter().map(|t| t.name.as_str()).collect();
    let outs: Vec<&str> = g.outputs.iter().map(|t| t.name.as_str()).collect();
    assert_eq!((ins, outs), (vec!["dy", "x"], vec!["dx"]));
    assert_eq!(g.backward, Backward::NotGenerated, "no second derivatives");
    assert_eq!(specs[2].backward, Backward::NotDifferentiable);
    // The repository's catalogue: every activation has its grad, the layout ops name theirs.
    let repo =
        ascend_opgen::family::load_catalogue(&Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")).unwrap();
    for op in ["gelu_tanh_grad", "gelu_erf_grad", "fast_gelu_grad", "swiglu_grad"] {
        assert!(repo.iter().any(|s| s.name == op), "{op}");
    }
    let b = repo.iter().find(|s| s.name == "bsnd_to_bnsd").unwrap();
    assert!(matches!(&b.backward, Backward::Op { name, .. } if name == "bnsd_to_bsnd"));
    for op in ["reshape_and_cache", "reshape_and_cache_int8", "dequant_int8"] {
        assert_eq!(repo.iter().find(|s| s.name == op).unwrap().backward, Backward::NotDifferentiable, "{op}");
    }
    assert!(
        matches!(&repo.iter().find(|s| s.name == "rms_norm").unwrap().backward, Backward::Table(t) if t.op == "rms_norm_grad")
    );
    assert!(
        matches!(&repo.iter().find(|s| s.name == "rotary_mul").unwrap().backward, Backward::Table(t) if t.op == "rotary_mul_grad")
    );
}

#[test]
fn backward_declarations_are_validated_with_locations() {
    // differentiable must be a bool.
    let e = one_error(&act("a", "x", "differentiable = \"no\""), "a");
    assert!(e.contains("kernels/a.toml:5:") && e.contains("differentiable"), "{e}");
    // Elementwise ops derive theirs.
    let e = one_error(&act("a", "exp(x)", "backward = \"b\""), "a");
    assert!(
        e.contains("kernels/a.toml:5:12: field `backward`") && e.contains("differentiating the body"),
        "{e}"
    );
    // A layout op must say.
    let e = one_error(&layout("p", "bsnd_to_bnsd", "", "\"float16\""), "p");
    assert!(e.contains("kernels/p.toml:2:") && e.contains("`backward = \"<op>\"`"), "{e}");
    // Both at once.
    let e = one_error(
        &layout("p", "bsnd_to_bnsd", "backward = \"q\"\ndifferentiable = false", "\"float16\""),
        "p",
    );
    assert!(e.contains(":5:12: field `backward`") && e.contains("contradicts"), "{e}");
    let e = one_error(&layout("p", "bsnd_to_bnsd", "backward = \"p\"", "\"float16\""), "p");
    assert!(e.contains("its own backward"), "{e}");
    // Four inputs leave no room for dy.
    let four = "name = \"f\"\nfamily = \"elementwise\"\nsummary = \"s\"\ntargets = [\"ascend910b\"]\n[[inputs]]\nname = \"a\"\ndtypes = [\"float32\"]\n[[inputs]]\nname = \"b\"\ndtypes = [\"float32\"]\n[[inputs]]\nname = \"c\"\ndtypes = [\"float32\"]\n[[inputs]]\nname = \"d\"\ndtypes = [\"float32\"]\n[[outputs]]\nname = \"y\"\ndtypes = [\"float32\"]\n[elementwise]\nbody = \"a * b + c * d\"\ncompute = \"float32\"\n";
    let e = one_error(four, "f");
    assert!(e.contains("field `differentiable`") && e.contains("differentiable = false"), "{e}");
    assert!(ascend_opgen::family::parse_str(
        Path::new("kernels/f.toml"),
        &four.patched("targets", "differentiable = false\ntargets")
    )
    .is_ok());
    // A gradient name that is already taken (input dx next to x).
    let clash = act("c", "x * dx", "").patched(
        "[[outputs]]",
        "[[inputs]]\nname = \"dx\"\ndtypes = [\"float16\", \"float32\"]\n\n[[outputs]]",
    );
    let e = one_error(&clash, "c");
    assert!(e.contains("`dx`") && e.contains("differentiable = false"), "{e}");
}

#[test]
fn named_backward_ops_must_exist_and_fit() {
    let f = "\"float16\", \"float32\"";
    let e =
        catalogue(&[("p", layout("p", "bsnd_to_bnsd", "backward = \"nope\"", f))]).unwrap_err().to_string();
    assert!(
        e.contains("p.toml:5:12: field `backward`: backward op `nope` of `p` is not in the catalogue"),
        "{e}"
    );
    // The backward takes one gradient per output and gives one per input, dtype for dtype.
    let e = catalogue(&[
        ("p", layout("p", "bsnd_to_bnsd", "backward = \"q\"", f)),
        ("q", layout("q", "bnsd_to_bsnd", "backward = \"p\"", "\"float16\"")),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("p.toml:5:12")
            && e.contains("no dtype combination (float32) -> (float32) for combination 2 of `p`"),
        "{e}"
    );
    let e = catalogue(&[
        ("p", layout("p", "bsnd_to_bnsd", "backward = \"q\"", f)),
        ("q", act("q", "x", "differentiable = false")),
    ]);
    assert!(e.is_ok(), "a one-in one-out op with the dtypes fits");
    // An op named like a generated backward op.
    let e =
        catalogue(&[("s", act("s", "x * x", "")), ("s_grad", act("s_grad", "x", "differentiable = false"))])
            .unwrap_err()
            .to_string();
    assert!(e.contains("s_grad.toml") && e.contains("also the backward op generated from `s`"), "{e}");
}

// ---- through the twin -------------------------------------------------------------------------

const MISH: &str = r#"# mish as a user wrote it (issue 12 point 7).
name = "mish"
family = "elementwise"
summary = "y = x * tanh(log(1 + exp(x)))"
targets = ["ascend910b"]

[[inputs]]
name = "x"
dtypes = ["float16", "bfloat16", "float32"]

[[outputs]]
name = "y"
dtypes = ["float16", "bfloat16", "float32"]

[elementwise]
body = "x * tanh(log(1 + exp(x)))"
compute = "float32"
"#;

#[test]
fn a_users_mish_and_quick_gelu_verify_with_their_grads_on_the_twin() {
    let dir = scratch("twin");
    fs::write(dir.join("mish.toml"), MISH).unwrap();
    let quick = MISH.patched_all("mish", "quick_gelu", 2).patched_all(
        "x * tanh(log(1 + exp(x)))",
        "x * sigmoid(1.702 * x)",
        2,
    );
    fs::write(dir.join("quick_gelu.toml"), quick).unwrap();
    let out = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["verify", "--specs", dir.to_str().unwrap(), "--no-sanitize"])
        .stdin_null()
        .timeout(Duration::from_secs(1800))
        .run()
        .expect("opgen runs");
    let text = format!("{}{}", out.stdout_lossy(), out.stderr_lossy());
    assert!(out.success(), "{text}");
    for op in ["mish", "mish_grad", "quick_gelu", "quick_gelu_grad"] {
        for dtype in ["float16", "bfloat16", "float32"] {
            let row = text
                .lines()
                .find(|l| l.split_whitespace().take(2).eq([op, dtype]))
                .unwrap_or_else(|| panic!("no row {op} {dtype}:\n{text}"));
            assert!(row.ends_with("pass"), "{row}");
        }
    }
}

#[test]
fn the_subexpression_that_loses_the_precision_is_named() {
    // The user's mish as written (before the canonical rewrite) at x = -17: 1 + e^-17 is within
    // float32 rounding, the log of it is not.
    let inputs = names(&["x"]);
    let node = expr::resolve(
        &expr::parse("x * tanh(log(1 + exp(x)))").unwrap(),
        expr::Scope { inputs: &inputs, attrs: &[] },
    )
    .unwrap();
    let loss = eval::precision_loss(&node, &[-17.0], &[]).expect("a loss");
    assert_eq!(lower::show(&loss.node, &inputs, &[]), "log(1 + exp(x))");
    assert_eq!(loss.float32, 0.0);
    assert!(loss.operand_rel_err < 1e-7 && loss.rel_err == 1.0, "{loss:?}");
    // The canonical form has no such loss there.
    let canon = expr::canonical(node);
    assert_eq!(eval::precision_loss(&canon, &[-17.0], &[]), None);
    // A cancellation.
    let node =
        expr::resolve(&expr::parse("(x + 100) - 100").unwrap(), expr::Scope { inputs: &inputs, attrs: &[] })
            .unwrap();
    let loss = eval::precision_loss(&node, &[4.7e-4], &[]).expect("a loss");
    assert_eq!(lower::show(&loss.node, &inputs, &[]), "x + 100 - 100");
}

#[test]
fn products_with_an_underflowing_exponential_are_rescued() {
    // swiglu's dgate at gate = -103: e^gate is a float32 subnormal with a bit or two, but dy * up
    // (10^4) brings the product back into bfloat16's range. The backward op's tree carries the
    // same product from exponentials shifted by 2^64 (arguments <= 0, so no overflow).
    let b = analyse_backward("gate * sigmoid(gate) * up", "dy", &names(&["gate", "up"]), &[]).unwrap();
    let expr::Node::Rescued(plain, scaled) = &b.outputs[0] else { panic!("{:?}", b.outputs[0]) };
    let point = [-80.0, -103.0, -95.0];
    let exact = eval::eval(plain, &point, &[]);
    let (dg, _) = activation::swiglu_grad(-103.0, -95.0);
    close(exact, -80.0 * dg, 1e-12, "the value is the plain tree's");
    let shifted = eval::eval(scaled, &point, &[]) * diff::unshift();
    close(shifted, exact, 1e-6, "the shifted tree, scaled back, is the same value");
    assert!(exact.abs() > 1e-41 && (exact as f32).abs() < f32::MIN_POSITIVE, "a float32 subnormal: {exact}");
    let program = &b.program.calls;
    assert!(program.iter().any(|c| c.call.contains("44.36142f")), "the shifted exponent");
    assert!(program.iter().any(|c| c.call.starts_with("Select(") && c.note.contains("underflow")));
}

#[test]
fn the_underflow_rescue_runs_behind_a_guard_that_sees_every_rescued_output() {
    // The rescue is about a third of swiglu_grad's calls and changes a value only where its
    // plain value is below 2^-100: the program computes both outputs' plain values, then the
    // guard (the least square of both), and only then the rescue, which a tile without such a
    // value skips for copies of the plain values.
    let b = analyse_backward("gate * sigmoid(gate) * up", "dy", &names(&["gate", "up"]), &[]).unwrap();
    let p = &b.program;
    let guard = p.guard.as_ref().expect("a guarded rescue");
    let (plain, rescue) = p.calls.split_at(guard.at);
    let exps = |calls: &[lower::Call]| calls.iter().filter(|c| c.call.starts_with("Exp(")).count();
    // The plain path's e^-|g|; behind the guard the two shifted exponentials and e^-|g| again
    // (recomputed there, not kept live through every tile).
    assert_eq!((exps(plain), exps(rescue)), (1, 3), "the shifted exponentials only behind the guard");
    assert!(plain.iter().all(|c| !c.call.contains("44.36142f")), "{plain:#?}");
    // The guard's source: both outputs' squares, their Min the last call before the rescue.
    let squares: Vec<&lower::Call> =
        plain.iter().filter(|c| c.note.contains("rescue guard: value^2")).collect();
    assert_eq!(squares.len(), 2, "{plain:#?}");
    let last = plain.last().expect("calls before the guard");
    assert!(last.call.starts_with(&format!("Min({}, ", guard.src)), "{last:?} / {}", guard.src);
    for sq in &squares {
        let reg = sq.call.split(['(', ',']).nth(1).unwrap().trim();
        assert!(last.call.contains(reg), "{last:?} reads {reg}");
    }
    // Every output is written behind the guard, over the register of the plain value its Select
    // keeps (a 16-bit output's res<k>), and, when the guard skips, a float32 output by a copy of
    // that very value.
    for k in 0..2 {
        let res = format!("res{k}");
        let select =
            rescue.iter().find(|c| c.call.starts_with(&format!("Select({res}, "))).expect("a Select");
        let kept = select.call.split(", ").nth(3).unwrap();
        assert_eq!(p.results[k], kept, "{select:?}");
        let copy = format!("if constexpr (sizeof(TOut{k}) != 2) {{ Muls({res}, {kept}, 1.0f, n); }}");
        assert!(guard.skip.contains(&copy), "{:?} vs {select:?}", guard.skip);
        assert!(plain.iter().all(|c| !c.call.starts_with(&format!("Select({res}, "))));
    }
    assert_eq!(guard.below, "7.888609e-31f");
    // A forward body has nothing to rescue: no guard.
    let fwd = analyse_body("gate * sigmoid(gate) * up", &names(&["gate", "up"]), &[]).unwrap();
    assert!(fwd.program.guard.is_none());
}
