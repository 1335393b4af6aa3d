//! Issue 15 point 2: the project's names (torch library, Python package, vendor, op-type prefix)
//! come from one place, `project.toml` beside the specs; every generated file and build step
//! takes them from there, and the defaults leave the golden copy as it is (tests/it/golden.rs).

use crate::support::TempDir;
use ascend_opgen::app::build_npu::{build_npu_in, BuildNpuOptions};
use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::toolchain::cann::SearchEnv;
use ascend_opgen::toolchain::command::Cmd;
use std::path::{Path, PathBuf};

const ACME: &str =
    "library = \"acme\"\npackage = \"acme_torch\"\nvendor = \"acme_ops\"\nop_type_prefix = \"Acme\"\n";

/// A fresh directory, removed when it drops (on a panic too).
fn scratch(tag: &str) -> TempDir {
    TempDir::new(&format!("names-{tag}"))
}

/// A specs directory with the catalogue's rms_norm (and its backward op rms_norm_grad) and gelu_tanh (which brings its generated
/// gelu_tanh_grad) and the given project file; the directory lives as long as the `TempDir`.
fn specs_dir(tag: &str, project: Option<&str>) -> (TempDir, PathBuf) {
    let tmp = scratch(tag);
    let dir = tmp.subdir("specs");
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    for op in ["rms_norm", "rms_norm_grad", "gelu_tanh"] {
        std::fs::copy(kernels.join(format!("{op}.toml")), dir.join(format!("{op}.toml"))).unwrap();
    }
    if let Some(text) = project {
        std::fs::write(dir.join("project.toml"), text).unwrap();
    }
    (tmp, dir)
}

#[test]
fn every_generated_file_takes_the_names_from_project_toml() {
    let (_tmp, dir) = specs_dir("render", Some(ACME));
    let specs = family::load_catalogue(&dir).unwrap();
    let names: Vec<(&str, &str)> = specs.iter().map(|s| (s.name.as_str(), s.op_type.as_str())).collect();
    assert_eq!(
        names,
        [
            ("gelu_tanh", "AcmeGeluTanh"),
            ("gelu_tanh_grad", "AcmeGeluTanhGrad"),
            ("rms_norm", "AcmeRmsNorm"),
            ("rms_norm_grad", "AcmeRmsNormGrad")
        ]
    );
    let refs: Vec<_> = specs.iter().collect();
    let project = render_project(&refs).unwrap();
    let paths: Vec<&str> = project.files.iter().map(|f| f.path.as_str()).collect();
    for p in [
        "op_kernel/acme_rms_norm.cpp",
        "op_host/acme_gelu_tanh_grad.cpp",
        "acme_rms_norm.json",
        "torch/acme_torch/__init__.py",
        "torch/acme_torch/ops.py",
        "torch/acme_torch/transformers.py",
    ] {
        assert!(paths.contains(&p), "{p} not generated: {paths:?}");
    }
    let text = |p: &str| project.file(p).unwrap_or_else(|| panic!("{p}")).contents.clone();
    assert!(text("torch/opgen_schema.cpp").contains("TORCH_LIBRARY(acme, m)"));
    assert!(text("torch/opgen_cpu.cpp").contains("TORCH_LIBRARY_IMPL(acme, CPU, m)"));
    assert!(text("torch/opgen_npu.cpp").contains("TORCH_LIBRARY_IMPL(acme, PrivateUse1, m)"));
    assert!(text("torch/opgen_cpu.cpp").contains("libacme_twin.so"));
    assert!(text("torch/CMakeLists.txt").contains("add_library(acme_torch SHARED"));
    let init = text("torch/acme_torch/__init__.py");
    assert!(init.contains("VENDOR = \"acme_ops\"") && init.contains("LIBRARY = \"acme\""), "{init}");
    assert!(init.contains("libacme_torch_cpu.so"), "{init}");
    assert!(text("torch/acme_torch/ops.py").contains("torch.ops.acme.rms_norm("));
    assert!(text("build.sh").contains("-Dvendor_name=acme_ops"));
    assert!(text("CMakePresets.json").contains("\"value\": \"acme_ops\""));
    assert!(text("op_host/acme_rms_norm.cpp").contains("AcmeRmsNorm"));
    // Nothing still names the default library, package, vendor or op types.
    for f in &project.files {
        for stale in [
            "torch.ops.opgen.",
            "\"opgen::",
            "vendors/opgen",
            "OpgenRmsNorm",
            "OpgenGelu",
            "opgen_torch/",
            "libopgen_torch",
        ] {
            assert!(!f.contents.contains(stale), "{} still has `{stale}`", f.path);
        }
    }
}

#[test]
fn without_project_toml_the_names_are_the_defaults() {
    let (_tmp, dir) = specs_dir("defaults", None);
    let specs = family::load_catalogue(&dir).unwrap();
    assert!(specs.iter().all(|s| s.project.is_default() && s.op_type.starts_with("Opgen")));
    // project.toml is never read as an op spec, even when it is empty.
    let (_tmp, dir) = specs_dir("empty", Some(""));
    assert_eq!(family::load_catalogue(&dir).unwrap().len(), 4);
}

#[test]
fn build_npu_dry_run_uses_the_vendor_and_package() {
    let (_tmp, dir) = specs_dir("npu", Some(ACME));
    let tmp = scratch("npu-out");
    let opts = BuildNpuOptions {
        specs: Some(dir),
        project: Some(tmp.join("project")),
        install: Some(tmp.join("install")),
        jobs: 2,
        dry_run: true,
        ..BuildNpuOptions::default()
    };
    let mut out = Vec::new();
    build_npu_in(&opts, &SearchEnv::empty(), &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("vendor acme_ops") && out.contains("-Dvendor_name=acme_ops"), "{out}");
    assert!(
        out.contains(&format!("ASCEND_CUSTOM_OPP_PATH={}", tmp.join("install/vendors/acme_ops").display())),
        "{out}"
    );
    assert!(out.contains("torch.ops.acme.*, or `import acme_torch`"), "{out}");
    assert!(!tmp.join("project").exists(), "a dry run wrote the project");
}

#[test]
fn a_bad_project_file_is_a_spec_error_with_its_place_and_gen_writes_nothing() {
    let (_tmp, dir) = specs_dir("bad", Some("library = \"acme\"\npackage = \"acme-torch\"\nvendr = \"x\"\n"));
    let errs = family::load_catalogue(&dir).unwrap_err().to_string();
    assert!(errs.contains("project.toml:3:1: field `vendr`: unknown field `vendr`"), "{errs}");
    // (an unknown key stops the project file's own checks; fix it and the next shows)
    std::fs::write(dir.join("project.toml"), "library = \"acme\"\npackage = \"acme-torch\"\n").unwrap();
    let errs = family::load_catalogue(&dir).unwrap_err().to_string();
    assert!(
        errs.contains("project.toml:2:11: field `package`: package `acme-torch` must be snake_case"),
        "{errs}"
    );
    let out = dir.parent().unwrap().join("out");
    let r = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .arg("gen")
        .arg("--specs")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .stdin_null()
        .run()
        .unwrap();
    assert_eq!(r.code(), Some(2), "{}", r.combined_lossy());
    assert!(r.combined_lossy().contains("package `acme-torch` must be snake_case"));
    assert!(!out.exists());
}
