//! Adding an activation is one new spec file and nothing else: a user writes silu.toml into a
//! directory of their own, `opgen verify --specs` builds and checks it on the CPU twin (against
//! the f64 evaluation of its body: silu is not a catalogue op) and `opgen gen --specs` writes its
//! project; nothing in the repository's specs, templates or golden copy changes.

use crate::support::Patched;
use crate::support::TempDir;
use ascend_opgen::toolchain::command::Cmd;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SILU: &str = r#"# SiLU (swish), declared by a user: one spec file, no code.
name = "silu"
family = "elementwise"
summary = "y = x * sigmoid(x)"
targets = ["ascend910b", "ascend910_93"]

[[inputs]]
name = "x"
dtypes = ["float16", "bfloat16", "float32"]

[[outputs]]
name = "y"
dtypes = ["float16", "bfloat16", "float32"]

[elementwise]
body = "x * sigmoid(x)"
compute = "float32"
"#;

/// A fresh directory, removed when it drops (on a panic too).
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("elementwise-{name}"))
}

fn opgen(args: &[&str]) -> ascend_opgen::toolchain::command::Output {
    Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(args)
        .stdin_null()
        .timeout(Duration::from_secs(900))
        .run()
        .expect("opgen runs")
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn repository_state() -> Vec<(PathBuf, Vec<u8>)> {
    let root = ascend_opgen::repo_root();
    ["kernels", "templates", "tests/golden"].iter().flat_map(|d| snapshot(&root.join(d))).collect()
}

#[test]
fn a_user_declared_silu_verifies_on_the_twin_and_generates() {
    let dir = scratch("silu");
    let specs = dir.join("specs");
    fs::create_dir_all(&specs).unwrap();
    fs::write(specs.join("silu.toml"), SILU).unwrap();
    let out = dir.join("out").join("project");
    let before = repository_state();

    let specs_arg = specs.display().to_string();
    let verify = opgen(&["verify", "--specs", &specs_arg]);
    assert!(verify.success(), "verify failed:\n{}", verify.combined_lossy());
    let table = verify.stdout_lossy();
    for dtype in ["float16", "bfloat16", "float32"] {
        let row = table
            .lines()
            .find(|l| l.starts_with("silu") && l.contains(dtype))
            .unwrap_or_else(|| panic!("no {dtype} row in:\n{table}"));
        assert!(row.trim_end().ends_with("pass"), "{row}");
    }

    let gen = opgen(&["gen", "--specs", &specs_arg, "--out", &out.display().to_string()]);
    assert!(gen.success(), "gen failed:\n{}", gen.combined_lossy());
    for file in ["op_kernel/opgen_silu.cpp", "op_host/opgen_silu.cpp"] {
        let text = fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.contains("x * sigmoid(x)"), "{file} does not show the body");
    }
    assert!(out.join("op_host/opgen_silu_tiling.h").is_file());
    let kernel = fs::read_to_string(out.join("op_kernel/opgen_silu.cpp")).unwrap();
    assert!(kernel.contains("Exp(") && kernel.contains("Div("), "silu lowers to basic vector APIs");

    assert!(before == repository_state(), "verify/gen of a user spec changed files in the repository");
}

#[test]
fn a_user_spec_with_a_bad_body_fails_with_its_location() {
    let dir = scratch("bad");
    fs::write(dir.join("silu.toml"), SILU.patched("body = \"x * sigmoid(x)\"", "body = \"x * sigmoid(z)\""))
        .unwrap();
    let r = opgen(&[
        "gen",
        "--specs",
        &dir.display().to_string(),
        "--out",
        &dir.join("out").display().to_string(),
    ]);
    assert_eq!(r.code(), Some(2), "{}", r.combined_lossy());
    let msg = r.stderr_lossy();
    assert!(msg.contains("silu.toml:16:21: field `elementwise.body`"), "{msg}");
    assert!(msg.contains("`z` is not defined"), "{msg}");
    assert!(!dir.join("out").exists());
}

/// A user op's reference is its body as written, not the canonical form the kernel is built
/// from: `1 - erf(x)` is rewritten to `erfc(x)` for the kernel, but the reference evaluates
/// 1 - erf(x) in f64 with a proven error bound, and takes the canonical value only where it lies
/// inside that bound (the same value, known more precisely). At x = 10, erf(10) rounds to 1.0 in
/// f64, so the expression as written is 0 ± a few f64 ulps of 1 there, and erfc(10) ≈ 2.088e-45
/// (Abramowitz & Stegun 7.1.13 bounds it within [2.07e-45, 2.09e-45]) lies inside: the reference
/// is the accurate value, not the as-written f64 rounding to 0. At x = 0.5 both forms give
/// 1 - erf(0.5) = 0.4795001221869535 (erfc(0.5), A&S table 7.1).
#[test]
fn a_user_op_is_checked_against_its_body_as_written() {
    use ascend_opgen::dtype::DType;
    use ascend_opgen::tensor::HostTensor;
    let text = SILU
        .patched("name = \"silu\"", "name = \"one_minus_erf\"")
        .patched("body = \"x * sigmoid(x)\"", "body = \"1 - erf(x)\"");
    let spec = ascend_opgen::family::parse_str(Path::new("one_minus_erf.toml"), &text).unwrap();
    let x = HostTensor::from_f64(DType::Float32, &[2], &[10.0, 0.5]);
    let expected = ascend_opgen::family::elementwise::expected(&spec, &[("x".to_string(), x)], &[]).unwrap();
    assert_eq!(expected.len(), 1);
    let at_10 = expected[0].values[0];
    assert!((2.07e-45..=2.09e-45).contains(&at_10), "erfc(10) within the as-written bound: {at_10:e}");
    approx::assert_abs_diff_eq!(expected[0].values[1], 0.479_500_122_186_953_5, epsilon = 1e-15);
    // The kernel's form is the canonical one: erfc(x).
    let body = ascend_opgen::family::elementwise::analyse(&spec).unwrap();
    assert!(
        matches!(body.node, ascend_opgen::family::elementwise::expr::Node::Call(_, _)),
        "{:?}",
        body.node
    );
}
