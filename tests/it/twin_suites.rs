//! The CPU twin's own C++ suites, run under AddressSanitizer and UBSan: one deliberately
//! broken kernel per strictness rule (each must stop with exit 3 and a message naming the API
//! and the rule), positive numeric tests, and the op_host/runner tests.

use ascend_opgen::toolchain::command::Cmd;
use std::time::Duration;

#[path = "twin_rules_support/mod.rs"]
mod rules;

/// Runs a suite script; `with_cann` keeps CANN_TOOLKIT so the script's real-header half runs
/// (the ignored `*_cann_headers` tests), else the twin half alone runs, whatever the machine has.
fn run_script(script: &str, with_cann: bool) -> String {
    let mut cmd = Cmd::new("bash").arg(ascend_opgen::repo_root().join(script)).cwd(ascend_opgen::repo_root());
    if !with_cann {
        cmd = cmd.env_remove("CANN_TOOLKIT").env_remove("ASCEND_HOME_PATH");
    }
    let out = cmd
        .timeout(Duration::from_secs(900))
        .stdin_null()
        .run_checked()
        .unwrap_or_else(|e| panic!("{script} failed:\n{e}"));
    out.combined_lossy()
}

/// The meta-test: every rule text the twin's source can stop with (read from its `fail` and
/// planner `rule` calls, not from a list kept here) is expected by at least one negative test
/// (a kernel test's `// expect:` line or a host_registry_test check), and every `rNN_` kernel
/// test expects a stop. The suites below then prove each expectation holds.
#[test]
fn every_rule_the_twin_can_stop_on_has_a_negative_test() {
    let root = ascend_opgen::repo_root();
    let (sites, errors) = rules::stop_sites(root);
    assert!(errors.is_empty(), "unreadable stop sites:\n{}", errors.join("\n"));
    let expectations = rules::expectations(root);
    let mut missing = Vec::new();
    let mut exempt = Vec::new();
    let mut distinct = std::collections::BTreeSet::new();
    for site in &sites {
        for rule in &site.rules {
            distinct.insert(rule.clone());
            if let Some(why) = &site.untested {
                exempt.push(format!("{} `{rule}`: {why}", site.at));
            } else if !expectations.iter().any(|e| e.text.contains(rule.as_str())) {
                missing.push(format!("{} `{rule}`", site.at));
            }
        }
    }
    // A sanity floor against a parser that finds nothing: the twin has had 80+ rules since
    // rule 12; the exact figure is printed, not pinned, so new rules need no edit here.
    assert!(distinct.len() >= 80, "only {} rules read from the twin's source: {distinct:?}", distinct.len());
    println!(
        "{} stop sites, {} distinct rules, {} expectations",
        sites.len(),
        distinct.len(),
        expectations.len()
    );
    for e in &exempt {
        println!("untested (exempted at the site): {e}");
    }
    assert!(missing.is_empty(), "rules without a negative test ({}):\n{}", missing.len(), missing.join("\n"));

    // Every expectation names a rule that exists (a test of a renamed rule would otherwise
    // keep passing on some other stop whose message happens to contain its text).
    for e in &expectations {
        assert!(
            distinct.iter().any(|r| e.text.contains(r.as_str())),
            "{}: expects `{}`, which contains no rule text of the twin",
            e.test,
            e.text
        );
    }
    for (test, expect) in rules::kernel_tests(root) {
        let name = test.rsplit('/').next().unwrap();
        let expect = expect.unwrap_or_else(|| panic!("{test}: the first line is not `// expect: ...`"));
        if name.starts_with('r') {
            assert!(
                expect != "ok" && !expect.starts_with("compile error: "),
                "{test}: an r<NN>_ test must expect a rule's stop (got `{expect}`); positive tests are pos_*"
            );
        }
    }
}

#[test]
fn all_kernel_tests_pass_under_the_sanitizers() {
    let text = run_script("kernels/twin/tests/run_negative.sh", false);
    let tests = rules::kernel_tests(ascend_opgen::repo_root()).len();
    let want = format!("twin tests: {tests} passed, 0 failed");
    assert!(text.contains(&want), "want `{want}`:\n{text}");
}

/// The same kernel tests against the real CANN 8.1 headers (`CANN_TOOLKIT`): each compiles, or
/// is rejected where it is marked so. Needs a toolkit, so it is ignored by default and fails
/// (never passes silently) when run without one.
#[test]
#[ignore = "needs a CANN 8.1 toolkit: CANN_TOOLKIT=<.../ascend-toolkit/8.1.RC1> cargo test --test it twin_suites:: -- --ignored"]
fn kernel_tests_compile_against_the_cann_headers() {
    let cann = std::env::var("CANN_TOOLKIT").expect("CANN_TOOLKIT must name a CANN 8.1 toolkit root");
    let toolkit = std::path::Path::new(&cann);
    assert!(
        toolkit.join("aarch64-linux").is_dir() || toolkit.join("x86_64-linux").is_dir(),
        "{cann} holds no <arch>-linux directory"
    );
    let text = run_script("kernels/twin/tests/run_negative.sh", true);
    let root = ascend_opgen::repo_root();
    let kernel_tests = rules::kernel_tests(root);
    let tests = kernel_tests.len();
    // Tests of the twin's own machinery say so (`// cann: twin only: <why>`); every other test
    // must compile (or be rejected where marked) against the real headers too.
    let twin_only = kernel_tests
        .iter()
        .filter(|(path, _)| {
            let text = std::fs::read_to_string(root.join(path)).unwrap();
            text.lines().any(|l| l.starts_with("// cann: twin only"))
        })
        .count();
    assert!(twin_only <= 3, "{twin_only} tests skip the CANN headers: each needs a reason reviewed here");
    let want = format!(
        "twin tests: {} passed, 0 failed, {twin_only} skipped against the CANN headers",
        2 * tests - twin_only
    );
    assert!(text.contains(&want), "want `{want}`:\n{text}");
}

#[test]
fn op_host_registry_and_runner_suite_passes() {
    let text = run_script("kernels/twin/tests/run_host_tests.sh", false);
    assert!(text.contains("run_host_tests.sh: ok"), "{text}");
}

/// The op_host suite's real-header half: the sample op_host file against a CANN toolkit's
/// headers (`CANN_TOOLKIT`). Ignored by default; run without a toolkit it fails.
#[test]
#[ignore = "needs a CANN 8.1 toolkit: CANN_TOOLKIT=<.../ascend-toolkit/8.1.RC1> cargo test --test it twin_suites:: -- --ignored"]
fn op_host_sample_compiles_against_the_cann_headers() {
    let cann = std::env::var("CANN_TOOLKIT").expect("CANN_TOOLKIT must name a CANN 8.1 toolkit root");
    let text = run_script("kernels/twin/tests/run_host_tests.sh", true);
    assert!(text.contains(&format!("== compiling the sample op_host file against {cann}")), "{text}");
    assert!(!text.contains("real-header check skipped"), "{text}");
}

/// The meta-test's reader on a made-up twin: a literal rule with a test, one without, an
/// annotated dynamic rule covered by a host check, and a dynamic rule with no annotation.
#[test]
fn the_rule_reader_finds_uncovered_and_unreadable_stops() {
    let root = crate::support::TempDir::new("rule-reader");
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "kernels/twin/include/opgen_twin/x.h",
        "[[noreturn]] void fail(const char* api, const char* rule, const std::string& d);\n",
    );
    write(
        "kernels/twin/src/x.cpp",
        r#"// fail() in a comment is no call: fail("a", "commented rule", "d")
void f(const char* api, const std::string& r) {
    fail("A", "covered rule", "d");
    opgen_twin::fail(api, "uncovered rule",
                     std::string("d, with (parens") + ")");
    // twin rule: "annotated rule" "other annotated rule"
    fail(api, r.c_str(), "d");
    fail(api, r.c_str(), "no annotation");
}
bool rule(const char* api, const char* rule, const std::string& d) { return false; }
"#,
    );
    write("kernels/twin/tests/r01_covered.cpp", "// expect: covered rule\nint main() {}\n");
    write("kernels/twin/tests/pos_fine.cpp", "// expect: ok\nint main() {}\n");
    write(
        "kernels/twin/tests/host_registry_test.cpp",
        "void t() {\n    check_fails(\"x\", [] {\n        g();\n    }, \"A: annotated rule: \"\n       \"detail\");\n}\n",
    );
    let (sites, errors) = rules::stop_sites(&root);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("kernels/twin/src/x.cpp:8: fail()"), "{errors:?}");
    let found: Vec<Vec<String>> = sites.iter().map(|s| s.rules.clone()).collect();
    assert_eq!(
        found,
        vec![
            vec!["covered rule".to_string()],
            vec!["uncovered rule".to_string()],
            vec!["annotated rule".to_string(), "other annotated rule".to_string()],
        ]
    );
    let texts: Vec<String> = rules::expectations(&root).into_iter().map(|e| e.text).collect();
    assert_eq!(texts, vec!["covered rule".to_string(), "A: annotated rule: detail".to_string()]);
}
