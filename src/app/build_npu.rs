//! `build-npu`: the generated project built with the CANN toolkit into the vendor package
//! `custom_opp_<os>_<arch>.run`, installed with `--install-path` into a directory, and the torch
//! extension built and installed beside it (`<install>/python/opgen_torch`), then both staged
//! into the package's wheel (`<install>/dist/<package>-*.whl`, see [`super::wheel`]):
//! `pip install` it and `import <package>` works with no exported variables.
//!
//! Every step is one external command run through [`Cmd`]. The plan is made first, whole
//! ([`plan`]), then either printed (`--dry-run`: each command with its working directory and
//! environment, nothing written or run; works without CANN) or run in order. Without a CANN
//! toolkit and without `--dry-run` the command fails with exit code 2 and the discovery report:
//! what is missing, where it was looked for, how to get it.

use super::gen::{load_specs, render};
use super::AppError;
use crate::codegen;
use crate::plan::soc::{self, Soc};
use crate::spec::ProjectNames;
use crate::toolchain::cann::{self, CannNotFound, CannToolkit, Need, SearchEnv};
use crate::toolchain::command::{shell_quote, which, Cmd};
use crate::toolchain::doctor::{cmake_version_verdict, run_version};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where the project is generated for the build, relative to the repository.
pub const DEFAULT_PROJECT_DIR: &str = "target/opgen/npu-project";
/// Where the package and the torch extension are installed, relative to the repository.
pub const DEFAULT_INSTALL_DIR: &str = "target/opgen/install";
use crate::toolchain::cann::MSOPGEN_TEMPLATE;

#[derive(Debug, Clone)]
pub struct BuildNpuOptions {
    pub specs: Option<PathBuf>,
    pub ops: Vec<String>,
    /// SOC_VERSION spelling, e.g. `Ascend910B2`.
    pub soc: String,
    /// The toolkit root (`--cann`); default: discovery.
    pub cann: Option<PathBuf>,
    /// Default: [`DEFAULT_INSTALL_DIR`].
    pub install: Option<PathBuf>,
    /// Where the project is generated and built; default: [`DEFAULT_PROJECT_DIR`].
    pub project: Option<PathBuf>,
    pub python: String,
    pub jobs: usize,
    pub dry_run: bool,
}

impl Default for BuildNpuOptions {
    fn default() -> Self {
        BuildNpuOptions {
            specs: None,
            ops: Vec::new(),
            soc: soc::DEFAULT_SOC.to_string(),
            cann: None,
            install: None,
            project: None,
            python: "python3".to_string(),
            jobs: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            dry_run: false,
        }
    }
}

/// One command of the build.
#[derive(Debug, Clone)]
pub struct Step {
    pub what: String,
    pub cmd: Cmd,
}

/// Everything `build-npu` will do.
#[derive(Debug)]
pub struct BuildPlan {
    pub soc: &'static Soc,
    pub ops: Vec<String>,
    pub project_dir: PathBuf,
    pub install_dir: PathBuf,
    /// The toolkit; `None` only in a dry run without one (the commands then show
    /// [`BuildPlan::cann_root`] in its place).
    pub toolkit: Option<CannToolkit>,
    pub cann_root: PathBuf,
    /// Why no toolkit was usable (dry run only).
    pub missing_toolkit: Option<CannNotFound>,
    /// The project, rendered.
    pub project: codegen::Project,
    /// The project's names (vendor, Python package, torch library).
    pub names: ProjectNames,
    /// The package the CANN build produces (its name as msOpGen's cmake derives it).
    pub package: PathBuf,
    pub steps: Vec<Step>,
    /// Index in `steps` of the package installation (its path is checked before it runs).
    pub install_step: usize,
    /// Where the wheel is staged and where it is written.
    pub wheel_stage: PathBuf,
    pub dist_dir: PathBuf,
}

impl BuildPlan {
    /// The vendor directory the package installs into.
    pub fn vendor_dir(&self) -> PathBuf {
        self.install_dir.join("vendors").join(&self.names.vendor)
    }

    /// The shell lines that make the installed ops usable.
    pub fn env_lines(&self) -> Vec<String> {
        let vendor = self.vendor_dir();
        let line = |var: &str, value: &Path| {
            format!("export {var}={}${{{var}:+:${var}}}", shell_quote(value.as_os_str()))
        };
        vec![
            line("ASCEND_CUSTOM_OPP_PATH", &vendor),
            line("LD_LIBRARY_PATH", &vendor.join("op_api/lib")),
            line("PYTHONPATH", &self.install_dir.join("python")),
        ]
    }
}

/// `ID=` of /etc/os-release, as msOpGen's `get_system_info` reads it (quotes dropped).
fn os_id() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                k.eq_ignore_ascii_case("id").then(|| v.trim().trim_matches('"').to_string())
            })
        })
        .unwrap_or_else(|| "linux".to_string())
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Makes the plan: validates the SoC and the ops, renders the project, finds the toolkit and
/// lists the commands. Nothing is written or run.
pub fn plan(opts: &BuildNpuOptions, env: &SearchEnv) -> Result<BuildPlan, AppError> {
    let soc = soc::find(&opts.soc).map_err(|e| AppError::input(format!("build-npu: --soc: {e}")))?;
    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    for spec in &specs {
        if !spec.targets.iter().any(|t| t == soc.compute_unit) {
            return Err(AppError::input(format!(
                "build-npu: op `{}` does not target {} (compute unit {}); its targets in {}: {}",
                spec.name,
                soc.name,
                soc.compute_unit,
                spec.source.display(),
                spec.targets.join(", ")
            )));
        }
    }
    let project = render(&specs)?;
    let names = codegen::project_names(&specs.iter().collect::<Vec<_>>())
        .map_err(|e| AppError::input(format!("build-npu: {e}")))?;
    let vendor = names.vendor.clone();
    let discovery = cann::discover_in(opts.cann.as_deref(), Need::Build, env);
    let (toolkit, missing_toolkit) = match discovery.into_result() {
        Ok(t) => (Some(t), None),
        Err(e) if opts.dry_run => (None, Some(e)),
        Err(e) => return Err(AppError::input(format!("build-npu: {e}"))),
    };
    let cann_root = match &toolkit {
        Some(t) => t.root.clone(),
        None => opts.cann.clone().unwrap_or_else(|| PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest")),
    };
    let root = crate::repo_root();
    let project_dir = absolute(&opts.project.clone().unwrap_or_else(|| root.join(DEFAULT_PROJECT_DIR)));
    // The package's installer takes only an absolute --install-path.
    let install_dir = absolute(&opts.install.clone().unwrap_or_else(|| root.join(DEFAULT_INSTALL_DIR)));
    let package =
        project_dir.join("build_out").join(format!("custom_opp_{}_{}.run", os_id(), std::env::consts::ARCH));

    // The toolkit's environment (what its set_env.sh gives) for every CANN step.
    let cann_env: Vec<(String, std::ffi::OsString)> = match &toolkit {
        Some(t) => {
            // set_env.sh also puts the toolkit's Python packages on PYTHONPATH: the kernel
            // build's scripts import them.
            let mut env = cann::toolkit_env(t);
            let mut paths =
                vec![t.root.join("python/site-packages"), t.root.join("opp/built-in/op_impl/ai_core/tbe")];
            paths.extend(std::env::var_os("PYTHONPATH").iter().flat_map(std::env::split_paths));
            env.push(("PYTHONPATH".into(), std::env::join_paths(paths).unwrap_or_default()));
            env
        }
        None => vec![
            ("ASCEND_HOME_PATH".into(), cann_root.clone().into()),
            ("ASCEND_TOOLKIT_HOME".into(), cann_root.clone().into()),
        ],
    };
    let jobs = format!("-j{}", opts.jobs.max(1));
    let template = cann_root.join(MSOPGEN_TEMPLATE);
    let in_project = |program: &str| Cmd::new(program).cwd(&project_dir);
    let cann_cmd = |program: &str| in_project(program).envs(cann_env.iter().map(|(k, v)| (k, v)));
    let mut steps = vec![
        Step {
            what: "remove the previous build output and msOpGen files".into(),
            cmd: in_project("rm").args(["-rf", "build_out", "cmake", "scripts"]),
        },
        Step {
            what: "copy the toolkit's msOpGen cmake/ and scripts/ into the project".into(),
            cmd: in_project("cp")
                .arg("-rL")
                .arg(template.join("cmake"))
                .arg(template.join("scripts"))
                .arg("."),
        },
        Step {
            what: format!(
                "configure for {} (ASCEND_COMPUTE_UNIT={}), vendor {vendor}",
                soc.name, soc.compute_unit
            ),
            cmd: cann_cmd("cmake")
                .args(["-S", ".", "-B", "build_out", "--preset=default"])
                .arg(format!("-DASCEND_CANN_PACKAGE_PATH={}", cann_root.display()))
                .arg(format!("-DASCEND_COMPUTE_UNIT={}", soc.compute_unit))
                .arg(format!("-Dvendor_name={vendor}")),
        },
        Step {
            what: "compile the kernels (target binary)".into(),
            cmd: cann_cmd("cmake").args(["--build", "build_out", "--target", "binary", &jobs]),
        },
        Step {
            what: format!("build the package {}", package.file_name().unwrap_or_default().to_string_lossy()),
            cmd: cann_cmd("cmake").args(["--build", "build_out", "--target", "package", &jobs]),
        },
    ];
    let install_step = steps.len();
    steps.push(Step {
        what: format!("install the package into {}", install_dir.display()),
        cmd: install_cmd(&package, &install_dir, &project_dir, &cann_env),
    });
    let torch_build = project_dir.join("torch/build");
    steps.extend([
        Step {
            what: "configure the torch extension (torch and torch_npu from this Python)".into(),
            cmd: in_project("cmake")
                .args(["-S", "torch", "-B", "torch/build"])
                .arg(format!("-DPython3_EXECUTABLE={}", opts.python)),
        },
        Step {
            what: "compile and link the torch extension".into(),
            cmd: in_project("cmake").args(["--build", "torch/build", &jobs]),
        },
        Step {
            what: format!("install the torch extension into {}", install_dir.join("python").display()),
            cmd: in_project("cmake").arg("--install").arg(&torch_build).arg("--prefix").arg(&install_dir),
        },
    ]);
    // The wheel: the installed extension, and the op package inside it as vllm-ascend ships
    // its own (<package>/_cann_ops_custom/vendors/<vendor>), found by the package at import.
    let wheel_stage = project_dir.join("torch/wheel");
    let dist_dir = install_dir.join("dist");
    let python = Path::new(&opts.python);
    let cann_version = toolkit.as_ref().map(|t| t.version.clone()).unwrap_or_else(|| "<CANN version>".into());
    steps.extend([
        Step {
            what: format!(
                "stage the wheel in {}: the extension, the op package as {}/_cann_ops_custom/vendors/{vendor}, pyproject.toml, setup.py",
                wheel_stage.display(),
                names.package
            ),
            cmd: in_project("bash")
                .arg("-c")
                .arg(
                    "set -e; rm -rf \"$1\"; mkdir -p \"$1/$3/_cann_ops_custom/vendors\"; \
                     cp -a \"$2/python/$3/.\" \"$1/$3/\"; cp -a \"$2/vendors/$4\" \"$1/$3/_cann_ops_custom/vendors/\"; \
                     cp torch/pyproject.toml torch/setup.py \"$1/\"",
                )
                .arg("stage")
                .arg(&wheel_stage)
                .arg(&install_dir)
                .arg(&names.package)
                .arg(&vendor),
        },
        Step {
            what: "record the torch, torch_npu and CANN versions the wheel is built for (_build_info.json)".into(),
            cmd: super::wheel::build_info_cmd(python, &wheel_stage.join(&names.package), "npu", Some(&cann_version))
                .cwd(&project_dir),
        },
        Step {
            what: format!("build the wheel into {}", dist_dir.display()),
            cmd: super::wheel::wheel_cmd(python, &wheel_stage, &dist_dir).cwd(&project_dir),
        },
    ]);
    Ok(BuildPlan {
        soc,
        ops: specs.iter().map(|s| s.name.clone()).collect(),
        project_dir,
        install_dir,
        toolkit,
        cann_root,
        missing_toolkit,
        project,
        names,
        package,
        steps,
        install_step,
        wheel_stage,
        dist_dir,
    })
}

fn install_cmd(
    package: &Path,
    install_dir: &Path,
    project_dir: &Path,
    env: &[(String, std::ffi::OsString)],
) -> Cmd {
    Cmd::new("bash")
        .arg(package)
        .arg("--quiet")
        .arg(format!("--install-path={}", install_dir.display()))
        .cwd(project_dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
}

/// `cargo xtask build-npu` in this process's environment, printing to stdout.
pub fn build_npu(opts: &BuildNpuOptions) -> Result<(), AppError> {
    build_npu_in(opts, &SearchEnv::from_process(), &mut std::io::stdout())
}

/// [`build_npu`] with the given discovery inputs and output.
pub fn build_npu_in(opts: &BuildNpuOptions, env: &SearchEnv, out: &mut dyn Write) -> Result<(), AppError> {
    let plan = plan(opts, env)?;
    let io = |e: std::io::Error| AppError::failed(format!("build-npu: cannot write the report: {e}"));
    writeln!(
        out,
        "build-npu: {} (compute unit {}), ops: {}",
        plan.soc.name,
        plan.soc.compute_unit,
        plan.ops.join(", ")
    )
    .map_err(io)?;
    match (&plan.toolkit, &plan.missing_toolkit) {
        (Some(t), _) => writeln!(out, "CANN toolkit: {} ({})", t.root.display(), t.version).map_err(io)?,
        (None, Some(why)) => writeln!(
            out,
            "CANN toolkit: none usable, the commands show {} in its place; a real run would stop here:\n{}",
            plan.cann_root.display(),
            indent(&why.to_string())
        )
        .map_err(io)?,
        (None, None) => {}
    }
    let cmake = which("cmake");
    if opts.dry_run {
        writeln!(out, "dry run: nothing is written or run").map_err(io)?;
    } else {
        let Some(cmake) = cmake else {
            return Err(AppError::input(
                "build-npu: cmake not found on PATH (the CANN project and the torch extension build with it): \
                 install it (apt-get install cmake, or pip install cmake)",
            ));
        };
        // The same verdict as `opgen doctor`: the project configures with `--preset` (3.19+).
        if let Err(why) = cmake_version_verdict(&run_version(&cmake)) {
            return Err(AppError::input(format!("build-npu: {}: {why}", cmake.display())));
        }
    }
    let total = plan.steps.len() + 1;
    writeln!(
        out,
        "[1/{total}] generate the project: {} files into {}",
        plan.project.files.len(),
        plan.project_dir.display()
    )
    .map_err(io)?;
    if !opts.dry_run {
        codegen::write_atomically(&plan.project_dir, &plan.project)
            .map_err(|e| AppError::failed(format!("build-npu: {e}")))?;
    }
    let started = Instant::now();
    for (i, step) in plan.steps.iter().enumerate() {
        let mut cmd = step.cmd.clone();
        writeln!(out, "[{}/{total}] {}", i + 2, step.what).map_err(io)?;
        if i == plan.install_step && !opts.dry_run {
            cmd =
                install_cmd(&built_package(&plan)?, &plan.install_dir, &plan.project_dir, &cann_env_of(&cmd));
        }
        writeln!(out, "    {}", cmd.display()).map_err(io)?;
        if opts.dry_run {
            continue;
        }
        out.flush().map_err(io)?;
        let t = Instant::now();
        cmd.run_checked().map_err(|e| {
            AppError::failed(format!("build-npu: step {}/{total} ({}) failed:\n{e}", i + 2, step.what))
        })?;
        writeln!(out, "    done in {:.1} s", t.elapsed().as_secs_f64()).map_err(io)?;
    }
    if !opts.dry_run {
        writeln!(out, "build-npu: built and installed in {:.0} s", started.elapsed().as_secs_f64())
            .map_err(io)?;
        writeln!(out, "  vendor package: {}", plan.vendor_dir().display()).map_err(io)?;
        writeln!(
            out,
            "  torch extension: {}",
            plan.install_dir.join("python").join(&plan.names.package).display()
        )
        .map_err(io)?;
        let wheel = super::wheel::built_wheel(&plan.dist_dir, &plan.names)?;
        writeln!(out, "  wheel: {}", wheel.display()).map_err(io)?;
        writeln!(
            out,
            "to use the ops anywhere: `pip install {}`, then `import {}` (no variables to export)",
            wheel.display(),
            plan.names.package
        )
        .map_err(io)?;
    } else {
        writeln!(
            out,
            "the wheel: {}/{}-0.1.0-*.whl (`pip install` it, then `import {}`: no variables to export)",
            plan.dist_dir.display(),
            plan.names.package,
            plan.names.package
        )
        .map_err(io)?;
    }
    writeln!(
        out,
        "or, from the install directory (torch.ops.{}.*, or `import {}`), in each shell:",
        plan.names.library, plan.names.package
    )
    .map_err(io)?;
    for line in plan.env_lines() {
        writeln!(out, "  {line}").map_err(io)?;
    }
    Ok(())
}

/// The package the build produced: the expected name, else the one `custom_opp_*.run` there.
fn built_package(plan: &BuildPlan) -> Result<PathBuf, AppError> {
    if plan.package.is_file() {
        return Ok(plan.package.clone());
    }
    let dir = plan.package.parent().unwrap_or(&plan.project_dir);
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    name.starts_with("custom_opp_") && name.ends_with(".run")
                })
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(AppError::failed(format!(
            "build-npu: the package step finished but {} is not there ({} custom_opp_*.run files in {})",
            plan.package.display(),
            found.len(),
            dir.display()
        ))),
    }
}

fn cann_env_of(cmd: &Cmd) -> Vec<(String, std::ffi::OsString)> {
    cmd.get_envs()
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_string_lossy().into_owned(), v.clone())))
        .collect()
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}
