//! The main job's second half as a test: every catalogue op, every dtype combination, the
//! quick sweep, on the twin built with AddressSanitizer and UBSan, against the references (a
//! test per family). And the converse: a kernel that computes the wrong thing must fail.

use crate::support::patched_templates;
use ascend_opgen::spec::Family;
use ascend_opgen::verify::{run_verify, VerifyOptions};

/// The sanitized quick sweep of one family's catalogue ops: every dtype combination, one row
/// per output. One test per family (below), so the test harness's threads share the catalogue
/// instead of one test running it alone at the end of the run.
fn family_passes_the_quick_sweep_under_sanitizers(family: Family) {
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let specs: Vec<_> = specs.into_iter().filter(|s| s.family == family).collect();
    assert!(!specs.is_empty(), "the catalogue has no {} op", family.name());
    let ops = specs.iter().map(|s| s.name.clone()).collect();
    let report = run_verify(&VerifyOptions { ops, ..VerifyOptions::default() }).expect("verify runs");
    println!("{}", report.table());
    print!("{}", report.coverage_table());
    assert!(report.failures.is_empty(), "failures:\n{}", report.failures.join("\n"));
    // The coverage rule, from every case's plan: each mode the TilingFunc can choose, with three
    // UB passes on a core and a remainder core (src/verify/coverage.rs). A gap not in the
    // known-gaps file fails, and so does a listed gap of these ops that is now covered.
    let gaps = report.coverage_gaps();
    let known = known_coverage_gaps();
    let ours: Vec<&String> =
        known.iter().filter(|k| specs.iter().any(|s| k.starts_with(&format!("{} ", s.name)))).collect();
    let new: Vec<&String> = gaps.iter().filter(|g| !ours.contains(g)).collect();
    assert!(new.is_empty(), "the quick sweep misses the coverage rule (add cases):\n{}", join(&new));
    let closed: Vec<&&String> = ours.iter().filter(|k| !gaps.contains(k)).collect();
    assert!(closed.is_empty(), "covered now; delete from {KNOWN_GAPS}:\n{}", join(&closed));
    assert!(report.rows.iter().all(|r| r.cases > 0));
    // Exactly one row per op, dtype combination and output (or in-place input) of kernels/*.toml:
    // a combination the sweep skipped would be missing here.
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

/// The coverage gaps still accepted, one line each as `ColumnCoverage::gaps` words it.
const KNOWN_GAPS: &str = "tests/coverage-known-gaps.txt";

fn known_coverage_gaps() -> Vec<String> {
    let text = std::fs::read_to_string(ascend_opgen::repo_root().join(KNOWN_GAPS)).expect(KNOWN_GAPS);
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

fn join<T: std::fmt::Display>(lines: &[T]) -> String {
    lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n")
}

/// The families the tests below cover: every family of the catalogue has its test.
const SWEPT: [Family; 9] = [
    Family::RowNorm,
    Family::RowNormGrad,
    Family::Rotary,
    Family::RotaryGrad,
    Family::Elementwise,
    Family::Permute,
    Family::PagedCache,
    Family::Dequant,
    Family::VocabReduce,
];

#[test]
fn every_catalogue_family_has_its_sanitized_sweep_test() {
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    for s in &specs {
        assert!(SWEPT.contains(&s.family), "{}: family {} has no sweep test here", s.name, s.family.name());
    }
}

#[test]
fn the_row_norm_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::RowNorm);
}

#[test]
fn the_row_norm_grad_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::RowNormGrad);
}

#[test]
fn the_rotary_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::Rotary);
}

#[test]
fn the_rotary_grad_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::RotaryGrad);
}

#[test]
fn the_elementwise_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::Elementwise);
}

#[test]
fn the_permute_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::Permute);
}

#[test]
fn the_paged_cache_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::PagedCache);
}

#[test]
fn the_dequant_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::Dequant);
}

#[test]
fn the_vocab_reduce_ops_pass_the_quick_sweep_under_sanitizers() {
    family_passes_the_quick_sweep_under_sanitizers(Family::VocabReduce);
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
        sanitize: false,
        templates: Some(templates),
        // One failing case is the evidence; the rest of the sweep would only repeat it.
        fail_fast: true,
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    let y = report.rows.iter().find(|r| r.output == "y").unwrap();
    assert!(y.failures > 0, "a wrong kernel passed:\n{}", report.table());
}
