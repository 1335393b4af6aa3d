//! `build-npu`: the dry run prints the whole command sequence (with and without a toolkit) and
//! writes nothing; a real run without CANN exits 2 naming what is missing; SoC names and op
//! targets are validated before anything else.

use ascend_opgen::app::build_npu::{build_npu_in, plan, BuildNpuOptions};
use ascend_opgen::toolchain::cann::SearchEnv;
use std::path::Path;

use crate::support;
use support::{fake_toolkit, Fake, TempDir};

fn options(tmp: &Path, dry_run: bool) -> BuildNpuOptions {
    BuildNpuOptions {
        project: Some(tmp.join("project")),
        install: Some(tmp.join("install")),
        jobs: 2,
        dry_run,
        ..BuildNpuOptions::default()
    }
}

fn run(opts: &BuildNpuOptions, env: &SearchEnv) -> (Result<(), ascend_opgen::app::AppError>, String) {
    let mut out = Vec::new();
    let result = build_npu_in(opts, env, &mut out);
    (result, String::from_utf8(out).unwrap())
}

/// The position of each needle in `text`, in order; panics naming the first one missing or
/// out of order.
fn assert_in_order(text: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        match text[from..].find(needle) {
            Some(i) => from += i + needle.len(),
            None => panic!("`{needle}` missing (or out of order) in:\n{text}"),
        }
    }
}

#[test]
fn dry_run_without_cann_prints_every_command_and_writes_nothing() {
    let tmp = TempDir::new("build-npu-dry");
    let opts = options(tmp.path(), true);
    let (result, out) = run(&opts, &SearchEnv::empty());
    assert!(result.is_ok(), "{result:?}\n{out}");
    let project = tmp.path().join("project");
    let install = tmp.path().join("install");
    assert!(out.contains("no usable CANN toolkit found"), "the reason a real run would stop:\n{out}");
    assert!(out.contains("dry run: nothing is written or run"), "{out}");
    let cd = format!("(cd {} && ", project.display());
    assert_in_order(
        &out,
        &[
            "[1/13] generate the project",
            &cd,
            "rm -rf build_out cmake scripts",
            "cp -rL /usr/local/Ascend/ascend-toolkit/latest/tools/op_project_templates/ascendc/customize/cmake",
            "ASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest",
            "cmake -S . -B build_out --preset=default -DASCEND_CANN_PACKAGE_PATH=/usr/local/Ascend/ascend-toolkit/latest \
             -DASCEND_COMPUTE_UNIT=ascend910b -Dvendor_name=opgen",
            "cmake --build build_out --target binary -j2",
            "cmake --build build_out --target package -j2",
            &format!("bash {}/build_out/custom_opp_", project.display()),
            &format!("_{}.run --quiet --install-path={}", std::env::consts::ARCH, install.display()),
            "cmake -S torch -B torch/build -DPython3_EXECUTABLE=python3",
            "cmake --build torch/build -j2",
            &format!("cmake --install {}/torch/build --prefix {}", project.display(), install.display()),
            "[11/13] stage the wheel",
            "opgen_torch/_cann_ops_custom/vendors/opgen",
            "[12/13] record the torch, torch_npu and CANN versions",
            "[13/13] build the wheel",
            &format!("python3 -m pip wheel --no-deps --quiet --wheel-dir {}/dist {}/torch/wheel", install.display(), project.display()),
            &format!("the wheel: {}/dist/opgen_torch-0.1.0-*.whl", install.display()),
            &format!("export ASCEND_CUSTOM_OPP_PATH={}/vendors/opgen${{ASCEND_CUSTOM_OPP_PATH:+", install.display()),
            &format!("export LD_LIBRARY_PATH={}/vendors/opgen/op_api/lib${{", install.display()),
            &format!("export PYTHONPATH={}/python${{", install.display()),
        ],
    );
    assert!(!project.exists() && !install.exists(), "a dry run writes nothing");
}

#[test]
fn without_cann_a_real_run_exits_2_naming_what_is_missing() {
    let tmp = TempDir::new("build-npu-nocann");
    let opts = options(tmp.path(), false);
    let (result, _) = run(&opts, &SearchEnv::empty());
    let err = result.unwrap_err();
    assert_eq!(err.code, 2, "{err}");
    assert!(err.message.contains("no usable CANN toolkit found"), "{err}");
    assert!(err.message.contains("bisheng compiler"), "names what is missing: {err}");
    assert!(
        err.message.contains("set_env.sh") && err.message.contains("--cann DIR"),
        "and how to get it: {err}"
    );
    assert!(!tmp.path().join("project").exists(), "nothing is written before the toolkit is found");

    // An explicit --cann that is not a toolkit is the only place looked at.
    let bad = BuildNpuOptions { cann: Some(tmp.path().join("no-such-cann")), ..options(tmp.path(), false) };
    let err = run(&bad, &SearchEnv::empty()).0.unwrap_err();
    assert_eq!(err.code, 2);
    assert!(err.message.contains("no-such-cann: rejected: does not exist"), "{err}");
}

#[test]
fn soc_names_are_validated() {
    let tmp = TempDir::new("build-npu-soc");
    let old = BuildNpuOptions { soc: "Ascend910B".into(), ..options(tmp.path(), true) };
    let err = plan(&old, &SearchEnv::empty()).unwrap_err();
    assert_eq!(err.code, 2);
    assert!(err.message.contains("first-generation Ascend 910"), "{err}");
    let unknown = BuildNpuOptions { soc: "Ascend999".into(), ..options(tmp.path(), true) };
    assert!(plan(&unknown, &SearchEnv::empty()).unwrap_err().message.contains("unknown SoC `Ascend999`"));
    // A SoC the ops do not target (310P: no DataCopyPad) is refused before anything runs.
    let p310 = BuildNpuOptions { soc: "Ascend310P3".into(), ..options(tmp.path(), true) };
    let err = plan(&p310, &SearchEnv::empty()).unwrap_err();
    assert_eq!(err.code, 2);
    assert!(err.message.contains("does not target Ascend310P3 (compute unit ascend310p)"), "{err}");
    // A3 parts build for their own compute unit.
    let a3 = BuildNpuOptions { soc: "ascend910_9392".into(), ..options(tmp.path(), true) };
    let (result, out) = run(&a3, &SearchEnv::empty());
    assert!(result.is_ok(), "{result:?}");
    assert!(out.contains("-DASCEND_COMPUTE_UNIT=ascend910_93 "), "{out}");
}

#[test]
fn dry_run_with_a_toolkit_uses_it_and_its_environment() {
    let tmp = TempDir::new("build-npu-fake");
    let root = tmp.path().join("cann/latest");
    fake_toolkit(&root, &Fake::default());
    let opts = BuildNpuOptions { cann: Some(root.clone()), ..options(tmp.path(), true) };
    let (result, out) = run(&opts, &SearchEnv::empty());
    assert!(result.is_ok(), "{result:?}\n{out}");
    assert!(out.contains(&format!("CANN toolkit: {} (8.1.RC1)", root.display())), "{out}");
    assert!(!out.contains("no usable CANN toolkit"), "{out}");
    let configure = out.lines().find(|l| l.contains("--preset=default")).expect("the configure command");
    for needle in [
        format!("ASCEND_OPP_PATH={}/opp", root.display()),
        format!("PATH={}/bin:", root.display()),
        "LD_LIBRARY_PATH=".to_string(),
        format!("-DASCEND_CANN_PACKAGE_PATH={}", root.display()),
    ] {
        assert!(configure.contains(&needle), "`{needle}` missing from {configure}");
    }
    // The torch extension needs no CANN environment.
    let torch = out.lines().find(|l| l.contains("cmake -S torch")).unwrap();
    assert!(!torch.contains("ASCEND_"), "{torch}");
}

#[test]
fn relative_install_dirs_become_absolute() {
    let tmp = TempDir::new("build-npu-rel");
    let opts = BuildNpuOptions { install: Some("some/rel/dir".into()), ..options(tmp.path(), true) };
    let p = plan(&opts, &SearchEnv::empty()).unwrap();
    assert!(p.install_dir.is_absolute() && p.install_dir.ends_with("some/rel/dir"), "{:?}", p.install_dir);
    assert_eq!(p.steps.len(), 12);
    assert!(p.steps[p.install_step].cmd.display().contains("--install-path=/"));
}

#[test]
fn a_failing_step_stops_the_build_naming_the_step_the_command_and_its_exit_code() {
    let tmp = TempDir::new("build-npu-fail");
    // A toolkit with headers and a compiler but no msOpGen template: the copy step fails.
    let root = tmp.path().join("cann/latest");
    fake_toolkit(&root, &Fake::default());
    let opts = BuildNpuOptions { cann: Some(root.clone()), ..options(tmp.path(), false) };
    let (result, out) = run(&opts, &SearchEnv::empty());
    let err = result.unwrap_err();
    if ascend_opgen::toolchain::command::which("cmake").is_none() {
        assert_eq!(err.code, 2, "{err}");
        assert!(err.message.contains("cmake not found on PATH"), "{err}");
        return;
    }
    assert_eq!(err.code, 1, "{err}\n{out}");
    assert!(err.message.contains("step 3/13 (copy the toolkit's msOpGen cmake/ and scripts/"), "{err}");
    assert!(err.message.contains("cp -rL"), "the command line: {err}");
    assert!(err.message.contains("exit"), "the exit status: {err}");
    assert!(err.message.contains("No such file"), "the command's output: {err}");
    // The project was generated before the build started; nothing was installed.
    assert!(tmp.path().join("project/torch/opgen_npu.cpp").is_file());
    assert!(!tmp.path().join("install").exists());
    assert!(out.contains("[2/13] remove the previous build output") && out.contains("done in"), "{out}");
}

/// The wheel's staging step, run on a stand-in install tree (no CANN): the extension's files and
/// the op package inside the package as `_cann_ops_custom/vendors/<vendor>` (where the package
/// looks at import), the generated pyproject.toml and setup.py beside it.
#[test]
fn the_wheel_stage_puts_the_op_package_inside_the_python_package() {
    let tmp = TempDir::new("build-npu-wheel");
    let opts = options(tmp.path(), true);
    let p = plan(&opts, &SearchEnv::empty()).unwrap();
    let install = tmp.path().join("install");
    for f in ["python/opgen_torch/__init__.py", "python/opgen_torch/libopgen_torch.so"] {
        support::write(&install.join(f), "stand-in\n");
    }
    for f in ["op_api/lib/libcust_opapi.so", "op_proto/inc/op_proto.h", "version.info"] {
        support::write(&install.join("vendors/opgen").join(f), "stand-in\n");
    }
    // The project directory holds the generated packaging files at this point of a real run.
    ascend_opgen::codegen::write_atomically(&p.project_dir, &p.project).unwrap();
    let stage = p.steps.iter().find(|s| s.what.starts_with("stage the wheel")).expect("the stage step");
    stage.cmd.run_checked().unwrap_or_else(|e| panic!("{e}"));
    let mut files: Vec<String> = Vec::new();
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    walk(&p.wheel_stage, &p.wheel_stage, &mut files);
    files.sort();
    assert_eq!(
        files,
        [
            "opgen_torch/__init__.py",
            "opgen_torch/_cann_ops_custom/vendors/opgen/op_api/lib/libcust_opapi.so",
            "opgen_torch/_cann_ops_custom/vendors/opgen/op_proto/inc/op_proto.h",
            "opgen_torch/_cann_ops_custom/vendors/opgen/version.info",
            "opgen_torch/libopgen_torch.so",
            "pyproject.toml",
            "setup.py",
        ]
    );
    let pyproject = std::fs::read_to_string(p.wheel_stage.join("pyproject.toml")).unwrap();
    assert!(pyproject.contains("\"_cann_ops_custom/**/*\""), "the op package is package data: {pyproject}");
}
