//! `opgen run` and `opgen plan` as a user runs them: .npy in, .npy out, checked against the
//! reference; the plan names the mode the generated TilingFunc picks.

use ascend_opgen::npy;
use ascend_opgen::reference::row_norm::rms_norm;
use ascend_opgen::tensor::round_to_dtype;
use ascend_opgen::toolchain::command::Cmd;
use ascend_opgen::verify::inputs::{generate, Distribution};
use ascend_opgen::DType;
use std::fs;

fn opgen(args: &[&str]) -> ascend_opgen::toolchain::command::Output {
    Cmd::new(env!("CARGO_BIN_EXE_opgen")).args(args).stdin_null().run().expect("opgen runs")
}

#[test]
fn run_rms_norm_bf16_from_npy_files() {
    let dir = std::env::temp_dir().join(format!("opgen-run-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let x = generate(Distribution::Uniform5, DType::BFloat16, &[5, 300], 7);
    let gamma = generate(Distribution::Uniform5, DType::BFloat16, &[300], 8);
    npy::write_npy(&dir.join("x.npy"), &x).unwrap();
    npy::write_npy(&dir.join("g.npy"), &gamma).unwrap();
    let out = dir.join("out");
    let r = opgen(&[
        "run",
        "rms_norm",
        "--dtype",
        "bf16",
        "--input",
        &format!("x={}", dir.join("x.npy").display()),
        "--input",
        &format!("gamma={}", dir.join("g.npy").display()),
        "--attr",
        "epsilon=1e-5",
        "--out",
        &out.display().to_string(),
    ]);
    assert!(r.success(), "{}", r.combined_lossy());
    let y = npy::read_npy(&out.join("y.npy"), Some(DType::BFloat16)).unwrap();
    let rstd = npy::read_npy(&out.join("rstd.npy"), Some(DType::Float32)).unwrap();
    assert_eq!(y.shape, vec![5, 300]);
    assert_eq!(rstd.shape, vec![5, 1]);
    let want = rms_norm(&x, &gamma, 1e-5).unwrap();
    // bfloat16 stored as '<u2' bit patterns, one rounding from the f64 reference: ≤ 1 ULP.
    let bf16_ulp = |v: f64| 2f64.powi((v.abs().log2().floor() as i32) - 7);
    for (i, w) in want.y.iter().enumerate() {
        let got = y.get_f64(i);
        assert!(
            (got - round_to_dtype(DType::BFloat16, *w)).abs() <= bf16_ulp(*w) * 1.0001,
            "y[{i}] {got} vs {w}"
        );
    }
    let header = fs::read(out.join("y.npy")).unwrap();
    assert!(String::from_utf8_lossy(&header[..80]).contains("'<u2'"));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plan_prints_split_d_for_a_16k_bf16_row() {
    let r = opgen(&["plan", "rms_norm", "--dtype", "bf16", "--shape", "4x16384"]);
    assert!(r.success(), "{}", r.combined_lossy());
    let text = r.stdout_lossy();
    assert!(text.contains("block dim: 4"), "{text}");
    assert!(text.contains("2 (split-D, two passes)"), "{text}");
    assert!(text.contains("gammaResident  1"), "{text}");
    let short = opgen(&["plan", "rms_norm", "--dtype", "f16", "--shape", "1000x64"]);
    assert!(short.stdout_lossy().contains("1 (several rows per UB pass)"), "{}", short.combined_lossy());
}

#[test]
fn plan_rejects_a_gamma_that_is_not_a_trailing_slice() {
    let r = opgen(&["plan", "rms_norm", "--dtype", "f32", "--shape", "4x64", "--shape", "gamma=32"]);
    assert_eq!(r.code(), Some(2), "{}", r.combined_lossy());
    assert!(r.stderr_lossy().contains("gamma must equal the trailing dims of x"), "{}", r.stderr_lossy());
}
