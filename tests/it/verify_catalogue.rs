//! The main job's second half as a test: every catalogue op, every dtype combination, the
//! quick sweep on the strict twin against the references (a test per family), with each
//! combination's coverage witnesses (per tiling mode: its first case, its most UB passes on a
//! core, its remainder core) again on the twin built with AddressSanitizer and UBSan. The main
//! job (`cargo xtask verify`) runs every case sanitized; here that would be ~4x the CPU time of
//! the whole sweep, most of `cargo test`'s. And the converse: a kernel that computes the wrong
//! thing must fail.

use crate::support::patched_templates;
use ascend_opgen::verify::{run_verify, VerifyOptions};

/// The quick sweep of one family's catalogue ops, its coverage witnesses sanitized: every dtype combination, one row
/// per output. One test per family (below), so the test harness's threads share the catalogue
/// instead of one test running it alone at the end of the run.
fn family_passes_the_quick_sweep(family: &str) {
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let specs: Vec<_> = specs.into_iter().filter(|s| s.family.name() == family).collect();
    assert!(!specs.is_empty(), "the catalogue has no {family} op");
    let ops = specs.iter().map(|s| s.name.clone()).collect();
    let report = run_verify(&VerifyOptions {
        ops,
        sanitize: false,
        sanitize_witnesses: true,
        ..VerifyOptions::default()
    })
    .expect("verify runs");
    println!("{}", report.table());
    print!("{}", report.coverage_table());
    assert!(report.failures.is_empty(), "failures:\n{}", report.failures.join("\n"));
    // Every combination ran its witnesses (at least one per mode reached) on the sanitized twin.
    let modes: usize = report.coverage.iter().map(|c| c.seen.len()).sum();
    assert!(
        report.sanitized_cases >= modes,
        "{} sanitized witness cases for {modes} modes",
        report.sanitized_cases
    );
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
const SWEPT: [&str; 11] = [
    "row_norm",
    "row_norm_grad",
    "rotary",
    "rotary_grad",
    "elementwise",
    "permute",
    "paged_cache",
    "dequant",
    "vocab_reduce",
    "reverse_scan",
    "whiten",
];

#[test]
fn every_catalogue_family_has_its_sanitized_sweep_test() {
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    for s in &specs {
        assert!(
            SWEPT.contains(&s.family.name()),
            "{}: family {} has no sweep test here",
            s.name,
            s.family.name()
        );
    }
}

#[test]
fn the_row_norm_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("row_norm");
}

#[test]
fn the_row_norm_grad_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("row_norm_grad");
}

#[test]
fn the_rotary_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("rotary");
}

#[test]
fn the_rotary_grad_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("rotary_grad");
}

#[test]
fn the_elementwise_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("elementwise");
}

#[test]
fn the_permute_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("permute");
}

#[test]
fn the_paged_cache_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("paged_cache");
}

#[test]
fn the_dequant_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("dequant");
}

#[test]
fn the_vocab_reduce_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("vocab_reduce");
}

#[test]
fn the_reverse_scan_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("reverse_scan");
}

#[test]
fn the_whiten_ops_pass_the_quick_sweep_with_sanitized_witnesses() {
    family_passes_the_quick_sweep("whiten");
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

/// A defect only the sanitizers see (a read past a stack array: the twin checks UB and GM, not
/// the kernel's own C++ objects) fails the sweep through the coverage witnesses, while the
/// unsanitized run of every case passes.
#[test]
fn a_kernel_error_only_asan_sees_fails_through_the_sanitized_witnesses() {
    let templates = patched_templates(
        "kernel/dequant.cpp.j2",
        "            Compute(n);\n",
        "            {\n                volatile uint32_t probe[2] = {0, 0};\n                const uint32_t at = 2 + (n == 0 ? 1 : 0);\n                volatile uint32_t sink = probe[at];\n                (void)sink;\n            }\n            Compute(n);\n",
    );
    let opts = VerifyOptions {
        ops: vec!["dequant_int8".into()],
        dtypes: vec![ascend_opgen::DType::Float16],
        sanitize: false,
        sanitize_witnesses: true,
        templates: Some(templates),
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    assert!(
        report.rows.iter().all(|r| r.failures == 0),
        "the unsanitized run must pass:\n{}",
        report.table()
    );
    assert!(report.sanitized_cases > 0);
    assert!(
        !report.failures.is_empty() && report.failures.iter().all(|f| f.contains("(sanitized twin)")),
        "want the witnesses to fail on the sanitized twin: {:?}",
        report.failures
    );
}
