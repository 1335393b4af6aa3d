//! The main job's second half as a test: every catalogue op, every dtype combination, the
//! quick sweep, on the twin built with AddressSanitizer and UBSan, against the references.
//! And the converse: a kernel that computes the wrong thing must fail.

use crate::support::patched_templates;
use ascend_opgen::app::verify::{run_verify, VerifyOptions};

#[test]
fn the_catalogue_passes_the_quick_sweep_under_sanitizers() {
    let report = run_verify(&VerifyOptions::default()).expect("verify runs");
    println!("{}", report.table());
    assert!(report.failures.is_empty(), "failures:\n{}", report.failures.join("\n"));
    assert!(report.rows.iter().all(|r| r.cases > 0));
    // Exactly one row per op, dtype combination and output (or in-place input) of kernels/*.toml:
    // a combination the sweep skipped would be missing here.
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let want: usize = specs
        .iter()
        .map(|s| s.columns() * (s.outputs.len() + s.inputs.iter().filter(|t| t.mutated).count()))
        .sum();
    assert_eq!(report.rows.len(), want, "{}", report.table());
    for s in &specs {
        assert!(report.rows.iter().any(|r| r.op == s.name), "no row for catalogue op {}", s.name);
    }
    // Every 16-bit y is within 1 ULP (the project's bar, not just CANN's), except where the gate
    // is LayerNorm's ULP-or-absolute one: y = (x - mean) * rstd * g + beta cancels to near 0, where
    // no float32 evaluation is within a 16-bit ULP of the tiny exact value, and those elements are
    // held to 8 * 2^-24 of the largest term instead (Tolerance::UlpOrAbs, src/compare.rs).
    for r in
        report.rows.iter().filter(|r| r.output == "y" && r.dtype.size_bytes() == 2 && !r.rule.contains('|'))
    {
        assert!(r.max_ulp <= 1, "{r:?}");
    }
}

#[test]
fn a_kernel_that_skips_gamma_fails_verification() {
    let templates = patched_templates(
        "kernel/row_norm.cpp.j2",
        "Mul(work[r * width], work[r * width], gamma, t_.numCol);",
        "Muls(work[r * width], work[r * width], 1.0f, t_.numCol);",
    );
    let opts = VerifyOptions {
        ops: vec!["rms_norm".into()],
        dtypes: vec![ascend_opgen::DType::Float16],
        templates: Some(templates),
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    let y = report.rows.iter().find(|r| r.output == "y").unwrap();
    assert!(y.failures > 0, "a wrong kernel passed:\n{}", report.table());
}
