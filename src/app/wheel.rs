//! The wheel of the torch package: a staging tree (the generated `pyproject.toml` and
//! `setup.py`, the built package, for the NPU the installed CANN op package under
//! `<package>/_cann_ops_custom/vendors/<vendor>/`, and `_build_info.json`) turned into a wheel
//! by `pip wheel`. The layout follows vllm-ascend's: its build installs the op package into
//! `vllm_ascend/_cann_ops_custom` and ships it in the wheel, and the package puts
//! `<that>/vendors/<vendor>` on ASCEND_CUSTOM_OPP_PATH at import (`vllm_ascend/utils.py`,
//! `bootstrap_custom_op_env`); CANN reads ASCEND_CUSTOM_OPP_PATH, a `:`-separated list of vendor
//! directories, when it loads custom op packages (the install script's `set_env.bash` sets
//! nothing else). Shared by `build-npu` (as commands) and `torch-cpu --wheel` (run here).

use super::AppError;
use crate::codegen::Project;
use crate::spec::ProjectNames;
use crate::toolchain::command::Cmd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes `<out>` (`_build_info.json`) from the Python that built the package: `argv[1]` the
/// file, `argv[2]` the backend (`cpu`/`npu`), `argv[3]` the CANN release (empty for the CPU).
/// torch.__version__ is what the import compares with; torch_npu's version comes from its
/// metadata (importing it needs CANN's libraries).
const BUILD_INFO_SCRIPT: &str = r#"import importlib.metadata as m, json, sys, torch
out, backend, cann = sys.argv[1:4]
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
info = {"backend": backend, "torch": torch.__version__,
        "torch_npu": version("torch_npu") if backend == "npu" else None, "cann": cann or None}
open(out, "w").write(json.dumps(info, indent=1, sort_keys=True) + "\n")
"#;

/// The command that records the versions into `<package_dir>/_build_info.json`.
pub fn build_info_cmd(python: &Path, package_dir: &Path, backend: &str, cann: Option<&str>) -> Cmd {
    Cmd::new(python)
        .arg("-c")
        .arg(BUILD_INFO_SCRIPT)
        .arg(package_dir.join("_build_info.json"))
        .arg(backend)
        .arg(cann.unwrap_or(""))
        .stdin_null()
        .timeout(Duration::from_secs(300))
}

/// `pip wheel` of the staged tree into `dist`: no dependencies (torch is the environment's),
/// the build backend (setuptools) fetched by pip's build isolation.
pub fn wheel_cmd(python: &Path, stage: &Path, dist: &Path) -> Cmd {
    Cmd::new(python)
        .args(["-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir"])
        .arg(dist)
        .arg(stage)
        .stdin_null()
        .timeout(Duration::from_secs(900))
}

/// The generated packaging files (`torch/pyproject.toml`, `torch/setup.py`) of `project`.
fn packaging_files(project: &Project) -> Result<Vec<(&'static str, &str)>, AppError> {
    ["pyproject.toml", "setup.py"]
        .into_iter()
        .map(|name| {
            project
                .file(&format!("torch/{name}"))
                .map(|f| (name, f.contents.as_str()))
                .ok_or_else(|| AppError::failed(format!("wheel: the project has no torch/{name}")))
        })
        .collect()
}

/// Copies `from` into `to` (files and directories; symlinks as the files they point to).
fn copy_tree(from: &Path, to: &Path) -> Result<(), AppError> {
    let io = |p: &Path, e: std::io::Error| AppError::failed(format!("wheel: {}: {e}", p.display()));
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(from).map_err(|e| io(from, e))?.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default();
        // Build caches and link stamps are not part of the package.
        if name.to_string_lossy().ends_with(".key") || name == "__pycache__" {
            continue;
        }
        let target = to.join(name);
        if path.is_dir() {
            copy_tree(&path, &target)?;
        } else {
            std::fs::copy(&path, &target).map_err(|e| io(&path, e))?;
        }
    }
    Ok(())
}

/// Stages the wheel of a built package directory (`package_dir`, e.g. torch-cpu's
/// `<out>/<package>`) in `stage`, replacing what was there.
pub fn stage(
    project: &Project,
    names: &ProjectNames,
    package_dir: &Path,
    stage: &Path,
) -> Result<(), AppError> {
    let io = |p: &Path, e: std::io::Error| AppError::failed(format!("wheel: {}: {e}", p.display()));
    if stage.exists() {
        std::fs::remove_dir_all(stage).map_err(|e| io(stage, e))?;
    }
    copy_tree(package_dir, &stage.join(&names.package))?;
    for (name, text) in packaging_files(project)? {
        std::fs::write(stage.join(name), text).map_err(|e| io(&stage.join(name), e))?;
    }
    Ok(())
}

/// The one `<package>-*.whl` in `dist` (the newest when there are several).
pub fn built_wheel(dist: &Path, names: &ProjectNames) -> Result<PathBuf, AppError> {
    let prefix = format!("{}-", names.package);
    let mut wheels: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dist)
        .map_err(|e| AppError::failed(format!("wheel: {}: {e}", dist.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with(&prefix) && n.ends_with(".whl")
        })
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .collect();
    wheels.sort();
    wheels.pop().map(|(_, p)| p).ok_or_else(|| {
        AppError::failed(format!("wheel: pip wheel left no {prefix}*.whl in {}", dist.display()))
    })
}
