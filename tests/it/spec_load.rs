use ascend_opgen::family;
#[test]
fn catalogue_loads() {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    assert!(specs.iter().any(|s| s.name == "rms_norm" && s.op_type == "OpgenRmsNorm"));
}
