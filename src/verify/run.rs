//! `verify`'s sweep as a library call: load the specs, render (or read) the project, build each
//! combination's runner while the previous one's cases run, judge every case (`check.rs`) and
//! summarise (`summary.rs`). `app::verify` parses the command line and prints the report.

use super::check::{run_one, CaseOutcome};
use super::summary::{summarise, VerifyReport};
use super::{BuildOptions, Case, Sweep};
use crate::codegen::{GeneratedFile, Project, HOST_COMMON_HEADER, KERNEL_COMMON_HEADER};
use crate::plan::soc;
use crate::spec::OpSpec;
use crate::DType;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub specs: Option<PathBuf>,
    /// Verify this generated project's kernels and op_host files instead of rendering them.
    pub from: Option<PathBuf>,
    pub ops: Vec<String>,
    /// Only combinations whose first input has one of these dtypes (empty: all).
    pub dtypes: Vec<DType>,
    pub sweep: Sweep,
    /// Every case on the twin built with AddressSanitizer + UBSan (about 4x the CPU time).
    pub sanitize: bool,
    /// With `sanitize` off: the coverage rule's witnesses of each combination also run on the
    /// sanitized twin (`coverage_witnesses`: per tiling mode reached, its first case, its first
    /// case with the most UB passes on a core and its first remainder-core case), so every mode's
    /// code path and buffer reuse runs under the sanitizers at a fraction of the cost of
    /// sanitizing every case. `cargo test`'s catalogue sweep; the main job sanitizes every case.
    pub sanitize_witnesses: bool,
    pub soc: String,
    /// Parallel runner processes.
    pub jobs: usize,
    /// Perturbed numerics: Exp/Ln/Sqrt/Rsqrt/Reciprocal/Div float32 results moved by up to
    /// this many float32 ULP (deterministic per operands and seed); None: libm results.
    pub perturb: Option<u32>,
    /// Numeric profiles (`ftz`, `saturate`) for every run; empty: the default modes.
    pub profiles: Vec<super::NumericProfile>,
    /// Render with these templates instead of the embedded ones (tests prove that a broken
    /// kernel fails verification).
    pub templates: Option<Vec<(&'static str, String)>>,
    /// Stop at the first failing case: later cases and dtype combinations are not run, and the
    /// report counts only the cases that ran. For the mutation suite and the tests of broken
    /// kernels, which need one failure, not all of them.
    pub fail_fast: bool,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            specs: None,
            from: None,
            perturb: None,
            profiles: Vec::new(),
            ops: Vec::new(),
            dtypes: Vec::new(),
            sweep: Sweep::Quick,
            sanitize: true,
            sanitize_witnesses: false,
            soc: soc::DEFAULT_SOC.to_string(),
            jobs: 2,
            templates: None,
            fail_fast: false,
        }
    }
}

/// Why a sweep could not run: bad input (a spec, an op name, a `--from` directory, a SoC) or a
/// runner that failed to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The request cannot be served as given (exit code 2 on the command line).
    Input(String),
    /// A twin runner could not be built (`TwinError::Build`): the op, the combination and the
    /// compiler's words. `app::mutants` counts it as a mutant that does not compile.
    Build(String),
    /// Setting a runner up failed another way (writing its sources): the op and why.
    Failed(String),
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyError::Input(m) | VerifyError::Build(m) | VerifyError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Runs the sweep and returns the report; the caller decides how to print it.
pub fn run_verify(opts: &VerifyOptions) -> Result<VerifyReport, VerifyError> {
    let started = Instant::now();
    let specs = crate::family::load_selection(opts.specs.as_deref(), &opts.ops)
        .map_err(|e| VerifyError::Input(e.to_string()))?;
    let project = match &opts.from {
        Some(dir) => project_from_dir(dir, &specs)?,
        None => {
            let refs: Vec<&OpSpec> = specs.iter().collect();
            let rendered = match &opts.templates {
                None => crate::codegen::render_project(&refs),
                Some(templates) => crate::codegen::render_project_with(&refs, templates),
            };
            rendered.map_err(|e| VerifyError::Input(format!("error: {e}")))?
        }
    };
    let soc = soc::find(&opts.soc).map_err(|e| VerifyError::Input(e.to_string()))?;
    let mut report = VerifyReport::default();
    let columns: Vec<(&OpSpec, usize)> = specs
        .iter()
        .flat_map(|spec| (0..spec.columns()).map(move |column| (spec, column)))
        .filter(|(spec, column)| opts.dtypes.is_empty() || opts.dtypes.contains(&spec.column_dtype(*column)))
        .collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| -> Result<(), VerifyError> {
        // The next combination's runner is built while this one's cases run: on a cold cache
        // the compiler is otherwise the only thing running for most of a sweep.
        let (built_tx, built_rx) = std::sync::mpsc::sync_channel(1);
        let project = &project;
        let columns = &columns;
        s.spawn(move || {
            for &(spec, column) in columns {
                eprintln!("verify: {} {}: building the twin runner", spec.name, spec.column_label(column));
                let runner =
                    super::build_runner(project, spec, column, BuildOptions { sanitize: opts.sanitize });
                // The receiver is gone when the sweep stopped early (an error, --fail-fast).
                if built_tx.send(runner).is_err() {
                    break;
                }
            }
        });
        for &(spec, column) in columns {
            let label = spec.column_label(column);
            let column_started = Instant::now();
            let built = built_rx.recv().expect("the builder sends one runner per combination");
            let runner = configured(built, opts, || format!("{} {label}", spec.name))?;
            let cases = super::cases(spec, opts.sweep);
            let outcomes =
                run_cases(spec, column, &runner, soc, &cases, opts.jobs, opts.fail_fast.then_some(&stop));
            let witnesses = if opts.sanitize_witnesses && !opts.sanitize && !stop.load(Ordering::Relaxed) {
                coverage_witnesses(&outcomes)
            } else {
                Vec::new()
            };
            let ran: Vec<(&Case, CaseOutcome)> =
                cases.iter().zip(outcomes).filter_map(|(c, o)| o.map(|o| (c, o))).collect();
            let ran_count = ran.len();
            let first_row = report.rows.len();
            summarise(spec, column, ran, &mut report);
            let seconds = column_started.elapsed().as_secs_f64();
            report.rows[first_row..].iter_mut().for_each(|r| r.seconds = seconds);
            let failed = report.rows[first_row..].iter().map(|r| r.failures).sum::<usize>();
            if ran_count < cases.len() {
                eprintln!(
                    "verify: {} {label}: {ran_count} of {} cases run, {failed} failed (--fail-fast: stopped)",
                    spec.name,
                    cases.len()
                );
            } else {
                eprintln!("verify: {} {label}: {} cases, {} failed", spec.name, cases.len(), failed);
            }
            if !witnesses.is_empty() {
                let chosen: Vec<Case> = witnesses.iter().map(|&i| cases[i].clone()).collect();
                let failed = run_sanitized(project, spec, column, soc, &chosen, opts, &mut report)?;
                report.sanitized_cases += chosen.len();
                eprintln!(
                    "verify: {} {label}: {} coverage witness case(s) on the sanitized twin, {failed} failed",
                    spec.name,
                    chosen.len()
                );
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        Ok(())
    })?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The indices of the cases that witness the coverage rule (`VerifyOptions::sanitize_witnesses`):
/// per mode, in case order, its first case, its first case with the most UB passes on a core
/// and its first case with a remainder core; each index once.
fn coverage_witnesses(outcomes: &[Option<CaseOutcome>]) -> Vec<usize> {
    let points: Vec<(usize, &crate::family::PlanCoverage)> = outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.as_ref().and_then(|o| o.coverage.as_ref()).map(|c| (i, c)))
        .collect();
    let mut chosen = std::collections::BTreeSet::new();
    let mut modes: Vec<&str> = points.iter().map(|(_, c)| c.mode).collect();
    modes.sort_unstable();
    modes.dedup();
    for mode in modes {
        let of_mode: Vec<&(usize, &crate::family::PlanCoverage)> =
            points.iter().filter(|(_, c)| c.mode == mode).collect();
        chosen.insert(of_mode[0].0);
        let most = of_mode.iter().filter_map(|(_, c)| c.passes).max();
        if let Some(&&(i, _)) = of_mode.iter().find(|(_, c)| most.is_some() && c.passes == most) {
            chosen.insert(i);
        }
        if let Some(&&(i, _)) = of_mode.iter().find(|(_, c)| c.uneven == Some(true)) {
            chosen.insert(i);
        }
    }
    chosen.into_iter().collect()
}

/// Runs `cases` of one combination on the sanitized twin; a case that fails there (a sanitizer
/// report, a twin rule, a value) is a failure of the sweep like any other, marked as such.
/// Returns how many failed.
fn run_sanitized(
    project: &Project,
    spec: &OpSpec,
    column: usize,
    soc: &soc::Soc,
    cases: &[Case],
    opts: &VerifyOptions,
    report: &mut VerifyReport,
) -> Result<usize, VerifyError> {
    let label = spec.column_label(column);
    let built = super::build_runner(project, spec, column, BuildOptions { sanitize: true });
    let runner = configured(built, opts, || format!("{} {label} (sanitized)", spec.name))?;
    let mut failed = 0;
    for (case, outcome) in cases.iter().zip(run_cases(spec, column, &runner, soc, cases, opts.jobs, None)) {
        let Some(outcome) = outcome else { continue };
        let why = outcome.failure.clone().or_else(|| {
            outcome.comparisons.iter().find(|(_, c)| !c.passed()).map(|(name, c)| format!("{name}: {c}"))
        });
        if let Some(why) = why {
            failed += 1;
            report.failures.push(format!("{} {label} {} (sanitized twin): {why}", spec.name, case.label()));
        }
    }
    Ok(failed)
}

/// A built runner with the sweep's numerics (perturbation, profiles), or why it could not be
/// built, naming the op and combination (`what`): a compile error is `VerifyError::Build`.
fn configured(
    built: Result<super::Runner, super::TwinError>,
    opts: &VerifyOptions,
    what: impl Fn() -> String,
) -> Result<super::Runner, VerifyError> {
    let mut runner = built.map_err(|e| {
        let message = format!("{}: {e}", what());
        match e {
            super::TwinError::Build(_) => VerifyError::Build(message),
            _ => VerifyError::Failed(message),
        }
    })?;
    runner.perturb = opts.perturb.map(|k| (k, PERTURB_SEED));
    runner.profiles = opts.profiles.clone();
    Ok(runner)
}

/// The seed of `verify --perturb` (fixed, so a perturbed run is reproducible).
const PERTURB_SEED: u64 = 0x5eed;

/// The files the twin builds of each op (op_host, tiling header, kernel) and the common helper
/// headers, read from an existing generated project; a missing file is bad input (exit 2)
/// naming the op and the path.
pub fn project_from_dir(dir: &Path, specs: &[OpSpec]) -> Result<Project, VerifyError> {
    if !dir.is_dir() {
        return Err(VerifyError::Input(format!("verify --from {}: not a directory", dir.display())));
    }
    let mut files = Vec::new();
    for spec in specs {
        let stem = spec.file_stem();
        for rel in [
            format!("op_host/{stem}.cpp"),
            format!("op_host/{stem}_tiling.h"),
            format!("op_kernel/{stem}.cpp"),
        ] {
            let path = dir.join(&rel);
            let contents = std::fs::read_to_string(&path).map_err(|e| {
                VerifyError::Input(format!("verify --from: op {}: {}: {e}", spec.name, path.display()))
            })?;
            files.push(GeneratedFile { path: rel, contents });
        }
    }
    // The helper headers every op's sources include.
    for rel in [HOST_COMMON_HEADER, KERNEL_COMMON_HEADER] {
        let path = dir.join(rel);
        let contents = std::fs::read_to_string(&path)
            .map_err(|e| VerifyError::Input(format!("verify --from: {}: {e}", path.display())))?;
        files.push(GeneratedFile { path: rel.to_string(), contents });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Project { files })
}

fn run_cases(
    spec: &OpSpec,
    column: usize,
    runner: &super::Runner,
    soc: &soc::Soc,
    cases: &[Case],
    jobs: usize,
    stop: Option<&AtomicBool>,
) -> Vec<Option<CaseOutcome>> {
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    // None: not run (the sweep stopped at a failure).
    crate::toolchain::pool::map_in_order(cases, jobs, |case| {
        if stopped() {
            return None;
        }
        let outcome = run_one(spec, column, runner, soc, case);
        if let (Some(stop), Some(_)) = (stop, &outcome.failure) {
            stop.store(true, Ordering::Relaxed);
        }
        Some(outcome)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::PlanCoverage;

    fn outcome(mode: &'static str, passes: Option<u64>, uneven: Option<bool>) -> Option<CaseOutcome> {
        Some(CaseOutcome {
            comparisons: Vec::new(),
            failure: None,
            coverage: Some(PlanCoverage { mode, passes, uneven }),
        })
    }

    #[test]
    fn witnesses_are_per_mode_its_first_case_most_passes_and_first_remainder_core() {
        let outcomes = vec![
            outcome("b", Some(1), Some(false)), // 0: first of b
            outcome("a", Some(1), Some(false)), // 1: first of a
            None,                               // 2: not run
            outcome("a", Some(5), Some(false)), // 3: most passes of a
            outcome("a", Some(5), Some(true)), // 4: a's first remainder core (5 passes again: not chosen for that)
            outcome("b", None, Some(true)),    // 5: b's first remainder core; b's most passes is case 0
            outcome("a", Some(2), Some(true)), // 6: a later remainder core of a
        ];
        assert_eq!(coverage_witnesses(&outcomes), vec![0, 1, 3, 4, 5]);
        assert!(coverage_witnesses(&[None, None]).is_empty());
    }
}
