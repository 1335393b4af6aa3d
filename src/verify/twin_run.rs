//! Runs one case on a built twin runner: writes the inputs as raw bytes, calls the runner
//! (the generated InferShape, TilingFunc and kernel run inside it), reads the outputs and
//! the report (plan + counters).

use super::protocol::RunnerReport;
use super::twin_build::Runner;
use super::TwinError;
use crate::plan::soc::Soc;
use crate::spec::{AttrValue, OpSpec};
use crate::tensor::HostTensor;
use crate::toolchain::command::{Cmd, CommandError};
use crate::toolchain::scratch::ScratchDir;
use crate::DType;
use std::fs;
use std::path::Path;
use std::time::Duration;

/// What one launch produced.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// In the spec's output order (in-place inputs follow, in input order).
    pub outputs: Vec<(String, HostTensor)>,
    /// The runner's report: block_dim, tiling fields, output shapes, counters; checked against
    /// the protocol (`parsed`) on every run, kept as JSON for printing and for tests.
    pub report: serde_json::Value,
    /// The same report as the protocol's types.
    pub parsed: RunnerReport,
}

/// A case to run: inputs by name (the spec's order), attrs by name.
#[derive(Debug, Clone)]
pub struct CaseInput<'a> {
    pub inputs: &'a [(String, HostTensor)],
    pub attrs: &'a [(String, AttrValue)],
    /// Inputs the kernel updates in place (caches); their final contents come back in
    /// `CaseRun::outputs` after the outputs.
    pub inplace: &'a [String],
}

/// A fresh per-case directory, removed when the guard drops (also when the run panics).
fn scratch_dir() -> Result<ScratchDir, TwinError> {
    ScratchDir::new("case").map_err(|e| TwinError::Io(e.to_string()))
}

fn attr_arg(name: &str, value: &AttrValue) -> String {
    match value {
        AttrValue::Float(v) => format!("{name}:float:{v:?}"),
        AttrValue::Int(v) => format!("{name}:int:{v}"),
        AttrValue::Bool(v) => format!("{name}:bool:{}", if *v { 1 } else { 0 }),
        AttrValue::String(v) => format!("{name}:string:{v}"),
    }
}

fn dims(shape: &[usize]) -> String {
    if shape.is_empty() {
        "scalar".to_string()
    } else {
        shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
    }
}

/// Builds the runner's command line for a case (inputs written to `dir`).
fn command(
    runner: &Runner,
    spec: &OpSpec,
    soc: &Soc,
    case: &CaseInput,
    dir: &Path,
    plan_only: bool,
    trace: bool,
) -> Result<Cmd, TwinError> {
    let mut cmd = Cmd::new(&runner.exe)
        .args(["--op", &spec.op_type, "--soc", soc.name])
        .args(["--vector-cores", &soc.vector_cores.to_string(), "--ub-bytes", &soc.ub_bytes.to_string()])
        .stdin_null()
        .timeout(Duration::from_secs(600))
        // Leak checks need ptrace-free LSan; a leak in the twin is a bug worth failing on.
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=86")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=87");
    if let Some((k, seed)) = runner.perturb {
        cmd = cmd.env("OPGEN_TWIN_PERTURB", format!("{k}:{seed}"));
    }
    if !runner.profiles.is_empty() {
        let names: Vec<&str> = runner.profiles.iter().map(|p| p.name()).collect();
        cmd = cmd.env("OPGEN_TWIN_PROFILE", names.join(","));
    }
    // The event trace for the cycle model (kernels/twin/include/opgen_twin/trace.h).
    cmd = if trace {
        cmd.env("OPGEN_TWIN_TRACE", dir.join("trace.json"))
    } else {
        cmd.env_remove("OPGEN_TWIN_TRACE")
    };
    for (name, tensor) in case.inputs {
        let path = dir.join(format!("in_{name}.bin"));
        fs::write(&path, &tensor.bytes).map_err(|e| TwinError::Io(format!("{}: {e}", path.display())))?;
        cmd = cmd.arg("--input").arg(format!(
            "{name}:{}:{}:{}",
            tensor.dtype.name(),
            dims(&tensor.shape),
            path.display()
        ));
    }
    for name in case.inplace {
        cmd = cmd.arg("--inplace").arg(name);
    }
    for out in &spec.outputs {
        cmd = cmd.arg("--output").arg(format!(
            "{}:{}",
            out.name,
            dir.join(format!("out_{}.bin", out.name)).display()
        ));
    }
    for (name, value) in case.attrs {
        cmd = cmd.arg("--attr").arg(attr_arg(name, value));
    }
    // Empty tensors launch nothing (the NPU rejects a zero block dim): outputs come back empty.
    cmd = cmd.arg("--report").arg(dir.join("report.json")).arg("--skip-launch-if-empty");
    if plan_only {
        cmd = cmd.arg("--plan-only");
    }
    Ok(cmd)
}

/// Runs the case. Host rejections (exit 2), twin rule violations (exit 3) and sanitizer
/// reports come back as distinct errors carrying the runner's message.
pub fn run_case(
    runner: &Runner,
    spec: &OpSpec,
    soc: &Soc,
    case: &CaseInput,
    plan_only: bool,
) -> Result<CaseRun, TwinError> {
    let dir = scratch_dir()?;
    run_in(runner, spec, soc, case, dir.path(), plan_only, false)
}

/// Runs the case with the twin's event trace on (`OPGEN_TWIN_TRACE`) and returns the run and
/// the trace's JSON text (read by `crate::perf::trace`).
pub fn run_case_traced(
    runner: &Runner,
    spec: &OpSpec,
    soc: &Soc,
    case: &CaseInput,
) -> Result<(CaseRun, String), TwinError> {
    let dir = scratch_dir()?;
    run_in(runner, spec, soc, case, dir.path(), false, true).and_then(|run| {
        let path = dir.path().join("trace.json");
        let text =
            fs::read_to_string(&path).map_err(|e| TwinError::Io(format!("{}: {e}", path.display())))?;
        Ok((run, text))
    })
}

fn run_in(
    runner: &Runner,
    spec: &OpSpec,
    soc: &Soc,
    case: &CaseInput,
    dir: &Path,
    plan_only: bool,
    trace: bool,
) -> Result<CaseRun, TwinError> {
    let cmd = command(runner, spec, soc, case, dir, plan_only, trace)?;
    match cmd.run_checked() {
        Ok(_) => {}
        Err(CommandError::NonZeroExit { command, code, stdout, stderr }) => {
            let text = if stderr.trim().is_empty() { stdout } else { stderr };
            return Err(match code {
                2 => TwinError::HostRejected(text.trim().to_string()),
                3 => TwinError::RuleBroken(text.trim().to_string()),
                86 | 87 => TwinError::Sanitizer(format!("{command}\n{text}")),
                _ => TwinError::Crashed(format!("{command}\nexit code {code}\n{text}")),
            });
        }
        Err(e) => return Err(TwinError::Crashed(e.to_string())),
    }
    let report_path = dir.join("report.json");
    let text = fs::read_to_string(&report_path)
        .map_err(|e| TwinError::Io(format!("{}: {e}", report_path.display())))?;
    let report: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| TwinError::Io(format!("{}: bad JSON: {e}", report_path.display())))?;
    let parsed = RunnerReport::parse(&text)
        .map_err(|e| TwinError::Protocol(format!("{}: op `{}`: {e}", report_path.display(), spec.name)))?;
    if plan_only {
        return Ok(CaseRun { outputs: Vec::new(), report, parsed });
    }
    let mut outputs = Vec::new();
    for out in &spec.outputs {
        let desc = parsed.outputs.iter().find(|d| d.name == out.name).ok_or_else(|| {
            TwinError::Protocol(format!("the report does not describe output `{}`", out.name))
        })?;
        let dtype = DType::parse(&desc.dtype).ok_or_else(|| {
            TwinError::Protocol(format!(
                "output `{}`: unknown dtype `{}` in the report",
                out.name, desc.dtype
            ))
        })?;
        let shape = desc.shape.clone();
        let path = dir.join(format!("out_{}.bin", out.name));
        let bytes = fs::read(&path).map_err(|e| TwinError::Io(format!("{}: {e}", path.display())))?;
        let tensor = HostTensor::from_bytes(dtype, &shape, bytes)
            .map_err(|e| TwinError::Io(format!("output `{}`: {e}", out.name)))?;
        outputs.push((out.name.clone(), tensor));
    }
    for name in case.inplace {
        let input = case.inputs.iter().find(|(n, _)| n == name).map(|(_, t)| t);
        let input =
            input.ok_or_else(|| TwinError::Io(format!("in-place tensor `{name}` is not an input")))?;
        let path = dir.join(format!("in_{name}.bin"));
        let bytes = fs::read(&path).map_err(|e| TwinError::Io(format!("{}: {e}", path.display())))?;
        let tensor = HostTensor::from_bytes(input.dtype, &input.shape, bytes)
            .map_err(|e| TwinError::Io(format!("`{name}`: {e}")))?;
        outputs.push((name.clone(), tensor));
    }
    Ok(CaseRun { outputs, report, parsed })
}
