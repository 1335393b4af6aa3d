//! `opgen run --device npu`: a build without the ACL bindings says so (exit 2) instead of
//! running anything; a build with them (CI builds one against the torch_npu wheel's ACL
//! headers) reaches the ACL runtime and, on a machine without CANN, names the library it could
//! not load and how to get it.

use ascend_opgen::app::run_npu::{aclnn_pattern, available, CALLABLE_PATTERNS, UNAVAILABLE};
use ascend_opgen::npy::write_npy;
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::toolchain::command::Cmd;
use ascend_opgen::DType;

use crate::support;
use support::TempDir;

#[test]
fn npu_run_reports_what_this_build_and_machine_lack() {
    let tmp = TempDir::new("run-npu");
    let x = HostTensor::from_f64(DType::Float16, &[4, 8], &[1.0; 32]);
    let gamma = HostTensor::from_f64(DType::Float16, &[8], &[1.0; 8]);
    write_npy(&tmp.path().join("x.npy"), &x).unwrap();
    write_npy(&tmp.path().join("gamma.npy"), &gamma).unwrap();
    let arg = |name: &str| format!("{name}={}", tmp.path().join(format!("{name}.npy")).display());
    let out = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["run", "rms_norm", "--device", "npu", "--input", &arg("x"), "--input", &arg("gamma"), "--out"])
        .arg(tmp.path().join("out"))
        .env_remove("ASCEND_CUSTOM_OPP_PATH")
        .stdin_null()
        .run()
        .expect("opgen runs");
    let stderr = out.stderr_lossy();
    if !available() {
        assert_eq!(out.code(), Some(2), "{}", out.combined_lossy());
        assert_eq!(stderr.trim(), UNAVAILABLE);
        assert!(stderr.contains("built without ACL: rebuild with CANN or OPGEN_ACL_INCLUDE set"));
        return;
    }
    // With the bindings: on a machine without CANN the runtime cannot be loaded.
    let cann = ["/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
        || std::env::var_os("ASCEND_HOME_PATH").is_some();
    if cann {
        eprintln!("a CANN install is present: the no-CANN message is not checked here");
        return;
    }
    assert_eq!(out.code(), Some(1), "{}", out.combined_lossy());
    assert!(stderr.contains("ACL setup: cannot load libascendcl.so"), "{stderr}");
    assert!(stderr.contains("set_env.sh"), "{stderr}");
    assert!(!tmp.path().join("out").exists(), "nothing is written when nothing ran");
}

#[test]
fn unknown_devices_are_rejected() {
    let out = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["run", "rms_norm", "--device", "gpu", "--out", "/nonexistent"])
        .stdin_null()
        .run()
        .expect("opgen runs");
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr_lossy().contains("unknown device `gpu` (twin, npu, npu:N)"),
        "{}",
        out.combined_lossy()
    );
}

#[test]
fn every_catalogue_op_has_a_typed_aclnn_call() {
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    for spec in &specs {
        let p = aclnn_pattern(spec);
        assert!(
            CALLABLE_PATTERNS.contains(&p.as_str()),
            "op `{}`: aclnn pattern {p} is not callable",
            spec.name
        );
    }
    let rms = specs.iter().find(|s| s.name == "rms_norm").unwrap();
    assert_eq!(aclnn_pattern(rms), "TTDSTT");
}
