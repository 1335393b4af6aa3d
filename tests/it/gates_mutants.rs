//! Issue 11's gates, poisoned outputs, `verify --from` and the mutation suite, end to end:
//! a generated project edited by hand is verified as it is (CLI, exit codes), and a fixed
//! subset of tests/mutants/mutants.toml — one mutant per bug class the quick sweep used to
//! miss — must be killed. The whole list runs with `cargo xtask mutants`.

use crate::support::TempDir;
use ascend_opgen::app::mutants::{run_mutants, MutantsOptions, Verdict};
use ascend_opgen::toolchain::command::Cmd;
use std::fs;

/// A fresh directory, removed when it drops (on a panic too).
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("gates-{name}"))
}

fn opgen(args: &[&str]) -> ascend_opgen::toolchain::command::Output {
    Cmd::new(env!("CARGO_BIN_EXE_opgen")).args(args).stdin_null().run().expect("opgen runs")
}

#[test]
fn verify_from_checks_the_project_as_edited() {
    let tmp = scratch("from");
    let dir = tmp.join("project");
    let out = opgen(&["gen", "--ops", "dequant_int8", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.code(), Some(0), "{}", out.combined_lossy());
    let args = |d: &str| {
        vec!["verify", "--from", d, "--ops", "dequant_int8", "--dtypes", "f16", "--no-sanitize"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let run = |d: &str| {
        let a = args(d);
        opgen(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let ok = run(dir.to_str().unwrap());
    assert_eq!(ok.code(), Some(0), "{}", ok.combined_lossy());
    assert!(
        ok.stdout_lossy().contains("dequant_int8") && ok.stdout_lossy().contains("pass"),
        "{}",
        ok.combined_lossy()
    );

    // A hand edit: truncate instead of rounding to nearest even. The 1-ULP bar let this pass.
    let kernel = dir.join("op_kernel/opgen_dequant_int8.cpp");
    let text = fs::read_to_string(&kernel).unwrap();
    let edited = crate::support::patch(
        &kernel.display().to_string(),
        &text,
        "Cast(x, f, RoundMode::CAST_RINT, elems);",
        "Cast(x, f, RoundMode::CAST_TRUNC, elems);",
    );
    fs::write(&kernel, edited).unwrap();
    let bad = run(dir.to_str().unwrap());
    assert_eq!(bad.code(), Some(1), "{}", bad.combined_lossy());
    assert!(bad.stdout_lossy().contains("FAIL"), "{}", bad.combined_lossy());

    // A project without the op's files is bad input, named.
    fs::remove_file(&kernel).unwrap();
    let missing = run(dir.to_str().unwrap());
    assert_eq!(missing.code(), Some(2), "{}", missing.combined_lossy());
    assert!(
        missing.stderr_lossy().contains("dequant_int8")
            && missing.stderr_lossy().contains("opgen_dequant_int8.cpp"),
        "{}",
        missing.combined_lossy()
    );
}

#[test]
fn the_ci_subset_of_mutants_is_killed() {
    // One per class the issue found surviving: a truncating cast (1-ULP and CANN gates), int8
    // quantisation by truncation (±1 gate), a split-D sum skipping each row's last element
    // (quick sweep without aimed inputs), a skipped write whose expected value is 0 (zero-filled
    // outputs), a work buffer 16 KiB too large (no near-full UB case); and one synchronisation
    // removal per kind (a SetFlag/WaitFlag pair, a PipeBarrier, a queue hand-off, the cross-core
    // SyncAll), which the twin ran in program order before its pipe-ordering and cross-core
    // checkers; a float32 kernel uniformly worse inside its max-ULP bar (issue 23: the bulk gate).
    let ids = [
        "rms_norm-cast-trunc",
        "reshape_and_cache_int8-trunc",
        "rms_norm-splitd-skip-last",
        "reshape_and_cache-count-skipped",
        "rms_norm-work-16k",
        "dequant_int8-scale-sync",
        "rms_norm-square-barrier",
        "reshape_and_cache-queue-bypass",
        "row_norm_grad-no-sync-all",
        "gelu_erf-f32-scaled",
    ];
    let report = run_mutants(&MutantsOptions {
        ids: ids.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
    .expect("mutants run");
    println!("{}", report.table());
    assert_eq!(report.outcomes.len(), ids.len());
    for o in &report.outcomes {
        assert_eq!(o.verdict, Verdict::Killed, "{} survived:\n{}", o.mutant.id, report.table());
    }
}
