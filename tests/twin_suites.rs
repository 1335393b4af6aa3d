//! The CPU twin's own C++ suites, run under AddressSanitizer and UBSan: one deliberately
//! broken kernel per strictness rule (each must stop with exit 3 and a message naming the API
//! and the rule), positive numeric tests, and the op_host/runner tests.

use ascend_opgen::toolchain::command::Cmd;
use std::time::Duration;

fn run_script(script: &str) -> String {
    let out = Cmd::new("bash")
        .arg(ascend_opgen::repo_root().join(script))
        .cwd(ascend_opgen::repo_root())
        // CI has no CANN: the real-header half of the suites is for `check-cann` machines.
        .env_remove("CANN_TOOLKIT")
        .env_remove("ASCEND_HOME_PATH")
        .timeout(Duration::from_secs(900))
        .stdin_null()
        .run_checked()
        .unwrap_or_else(|e| panic!("{script} failed:\n{e}"));
    out.combined_lossy()
}

#[test]
fn every_twin_rule_has_a_failing_kernel_and_all_pass() {
    let dir = ascend_opgen::repo_root().join("kernels/twin/tests");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // Every rule number up to the highest one in use has a test (13: pipe ordering, 14: the
    // dav_c220 API scratch are the newest).
    let highest = names
        .iter()
        .filter_map(|n| n.strip_prefix('r').and_then(|r| r.get(..2)).and_then(|d| d.parse::<u32>().ok()))
        .max()
        .unwrap_or(0);
    assert!(highest >= 14, "the twin's rule tests stop at r{highest:02}");
    for rule in 1..=highest {
        let prefix = format!("r{rule:02}_");
        assert!(names.iter().any(|n| n.starts_with(&prefix)), "no negative test for twin rule {rule}");
    }
    let text = run_script("kernels/twin/tests/run_negative.sh");
    assert!(text.contains("0 failed"), "{text}");
}

#[test]
fn op_host_registry_and_runner_suite_passes() {
    let text = run_script("kernels/twin/tests/run_host_tests.sh");
    assert!(text.contains("run_host_tests.sh: ok"), "{text}");
}
