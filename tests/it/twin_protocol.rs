//! The twin ↔ Rust protocol (src/verify/protocol.rs): the runner's report is read into serde
//! structs that refuse unknown and missing fields, and the keys the C++ writers emit
//! (kernels/twin/src/runtime_counters.cpp `write_counters`, host_report.cpp `plan_json`) are the
//! structs' fields. A counter renamed on one side fails here, without running the twin.

use ascend_opgen::verify::protocol::{CoreCounters, Counters, OutputPlan, RunnerReport};
use std::collections::BTreeSet;

fn core_json() -> serde_json::Value {
    serde_json::to_value(CoreCounters::default()).unwrap()
}

fn report_json() -> serde_json::Value {
    serde_json::json!({
        "op": "OpgenRmsNorm", "soc": "Ascend910B2", "block_dim": 2, "tiling_key": 0,
        "workspace_bytes": 16777216, "tiling_data_bytes": 40, "tiling": {"mode": 1, "eps": 1e-6},
        "outputs": [{"name": "y", "dtype": "float16", "shape": [4, 128]}],
        "launched": true, "counters": {"cores": [core_json()]}
    })
}

fn error_of(doc: &serde_json::Value) -> String {
    RunnerReport::parse(&doc.to_string()).expect_err("the report must be refused").to_string()
}

#[test]
fn a_well_formed_report_is_read() {
    let r = RunnerReport::parse(&report_json().to_string()).unwrap();
    assert_eq!(r.block_dim, 2);
    assert_eq!(
        r.outputs,
        vec![OutputPlan { name: "y".into(), dtype: "float16".into(), shape: vec![4, 128] }]
    );
    assert_eq!(r.counters, Some(Counters { cores: vec![CoreCounters::default()] }));
    // Not launched: no counters, and that is allowed.
    let mut plan = report_json();
    plan.as_object_mut().unwrap().remove("counters");
    plan["launched"] = false.into();
    assert_eq!(RunnerReport::parse(&plan.to_string()).unwrap().counters, None);
}

#[test]
fn a_renamed_counter_is_refused_naming_it() {
    let mut doc = report_json();
    let core = doc["counters"]["cores"][0].as_object_mut().unwrap();
    let v = core.remove("barriers").unwrap();
    core.insert("pipe_barriers".into(), v);
    let err = error_of(&doc);
    assert!(err.contains("unknown field `pipe_barriers`"), "{err}");
}

#[test]
fn a_missing_counter_is_refused_naming_it() {
    let mut doc = report_json();
    doc["counters"]["cores"][0].as_object_mut().unwrap().remove("copy_in_total");
    let err = error_of(&doc);
    assert!(err.contains("missing field `copy_in_total`"), "{err}");
}

#[test]
fn unknown_and_missing_report_fields_are_refused_naming_them() {
    let mut doc = report_json();
    doc["block_dims"] = 2.into();
    assert!(error_of(&doc).contains("unknown field `block_dims`"), "{}", error_of(&doc));
    let mut doc = report_json();
    doc.as_object_mut().unwrap().remove("workspace_bytes");
    assert!(error_of(&doc).contains("missing field `workspace_bytes`"), "{}", error_of(&doc));
    let mut doc = report_json();
    doc["outputs"][0]["format"] = 2.into();
    assert!(error_of(&doc).contains("unknown field `format`"), "{}", error_of(&doc));
}

/// The string literals passed as keys in the body of C++ function `name` of `source`
/// (`json.key("x")`, `json_map(json, "x", ...)`), up to the next function at column 0.
fn cpp_keys(source: &str, signature: &str) -> BTreeSet<String> {
    let start = source.find(signature).unwrap_or_else(|| panic!("`{signature}` not in the source"));
    let body = &source[start..];
    let end = body[1..].find("\n}\n").map_or(body.len(), |i| i + 1);
    let mut keys = BTreeSet::new();
    for marker in ["key(\"", "json_map(json, \""] {
        let mut rest = &body[..end];
        while let Some(at) = rest.find(marker) {
            let after = &rest[at + marker.len()..];
            let close = after.find('"').expect("a closed literal");
            keys.insert(after[..close].to_string());
            rest = &after[close..];
        }
    }
    keys
}

fn rust_keys(value: &serde_json::Value) -> BTreeSet<String> {
    value.as_object().unwrap().keys().cloned().collect()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(rel)).unwrap()
}

/// What differs between the C++ writer's keys and the Rust struct's fields.
fn differences(cpp: &BTreeSet<String>, rust: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = cpp.difference(rust).map(|k| format!("written by C++ only: `{k}`")).collect();
    out.extend(rust.difference(cpp).map(|k| format!("read by Rust only: `{k}`")));
    out
}

#[test]
fn the_counters_writer_writes_exactly_the_protocol_fields() {
    let mut cpp =
        cpp_keys(&read("kernels/twin/src/runtime_counters.cpp"), "void write_counters(JsonWriter& json) {");
    // The document's one key around the per-core objects.
    assert!(cpp.remove("cores"), "write_counters writes no `cores`");
    let diff = differences(&cpp, &rust_keys(&core_json()));
    assert!(
        diff.is_empty(),
        "runtime_counters.cpp write_counters vs protocol::CoreCounters:\n{}",
        diff.join("\n")
    );
}

#[test]
fn the_plan_writer_writes_exactly_the_protocol_fields() {
    let cpp = cpp_keys(&read("kernels/twin/src/host_report.cpp"), "std::string plan_json(");
    let report = RunnerReport::parse(&report_json().to_string()).unwrap();
    let mut rust = rust_keys(&serde_json::to_value(&report).unwrap());
    rust.extend(rust_keys(&serde_json::to_value(&report.outputs[0]).unwrap()));
    let diff = differences(&cpp, &rust);
    assert!(diff.is_empty(), "host_report.cpp plan_json vs protocol::RunnerReport:\n{}", diff.join("\n"));
}

#[test]
fn the_key_comparison_sees_a_renamed_counter() {
    // The mutant: the C++ side renames `barriers`; the comparison must name both spellings.
    let source = crate::support::patch(
        "kernels/twin/src/runtime_counters.cpp",
        &read("kernels/twin/src/runtime_counters.cpp"),
        "key(\"barriers\")",
        "key(\"pipe_barriers\")",
    );
    let mut cpp = cpp_keys(&source, "void write_counters(JsonWriter& json) {");
    cpp.remove("cores");
    let diff = differences(&cpp, &rust_keys(&core_json()));
    assert_eq!(diff, vec!["written by C++ only: `pipe_barriers`", "read by Rust only: `barriers`"]);
}
