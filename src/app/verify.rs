//! `verify`: every op × dtype combination × sweep case on the CPU twin, compared with the
//! references; a table of max ULP / MERE / MARE; non-zero exit on any failure.

use super::gen::{load_specs, render};
use super::AppError;
use crate::codegen::{GeneratedFile, Project};
use crate::compare::{compare, Comparison, Tolerance};
use crate::family::PlanCoverage;
use crate::plan::soc;
use crate::spec::OpSpec;
use crate::tensor::{round_to_dtype, HostTensor};
use crate::verify::coverage::ColumnCoverage;
use crate::verify::{self, inputs, BuildOptions, Case, CaseInput, Sweep};
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
    pub sanitize: bool,
    pub soc: String,
    /// Parallel runner processes.
    pub jobs: usize,
    /// Perturbed numerics: Exp/Ln/Sqrt/Rsqrt/Reciprocal/Div float32 results moved by up to
    /// this many float32 ULP (deterministic per operands and seed); None: libm results.
    pub perturb: Option<u32>,
    /// Numeric profiles (`ftz`, `saturate`) for every run; empty: the default modes.
    pub profiles: Vec<verify::NumericProfile>,
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
            soc: soc::DEFAULT_SOC.to_string(),
            jobs: 2,
            templates: None,
            fail_fast: false,
        }
    }
}

/// The summary of one op, dtype combination and output (or in-place input: a cache the kernel
/// updates is compared like an output).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub op: String,
    pub dtype: DType,
    /// The combination's name in tables: the dtype, plus the dtypes that tell it apart from
    /// another combination of the same dtype (`float16/int64`: slot_mapping int64).
    pub label: String,
    pub output: String,
    pub cases: usize,
    pub max_ulp: u64,
    /// The largest per-case mean ULP distance (`Comparison::mean_ulp`): what a bulk bar must cover.
    pub max_mean_ulp: f64,
    pub max_mere: f64,
    pub max_mare: f64,
    pub failures: usize,
    /// The bar the output is held to (`bitwise`, `ulp<=1+CANN`, `int±1`, `CANN`).
    pub rule: String,
    /// Wall time of the combination: building its runner and running every case.
    pub seconds: f64,
    /// Near-tie acceptances over the cases (`rne` rules), and the largest distance of a
    /// near-tie element from its rounding boundary in float32 ulps of g.
    pub near_ties: usize,
    pub max_tie_distance: f64,
    /// The largest |mean signed error| / bound of the bias gate over the cases (≤ 1 passes).
    pub max_bias_ratio: f64,
}

#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    pub rows: Vec<Row>,
    /// One line per failed case: op, dtype, case, what failed.
    pub failures: Vec<String>,
    pub cases_run: usize,
    pub seconds: f64,
    /// Per op and dtype combination, the tiling modes and UB passes its cases reached (read
    /// from each case's plan; `crate::verify::coverage`).
    pub coverage: Vec<ColumnCoverage>,
}

impl VerifyReport {
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<22} {:<13} {:<11} {:>6} {:<26} {:>8} {:>9} {:>11} {:>11} {:>12} {:>5} {:>7}  {}\n",
            "op",
            "dtype",
            "output",
            "cases",
            "rule",
            "max ULP",
            "mean ULP",
            "MERE",
            "MARE",
            "ties (dist)",
            "bias",
            "time",
            "result"
        );
        for r in &self.rows {
            s.push_str(&format!(
                "{:<22} {:<13} {:<11} {:>6} {:<26} {:>8} {:>9.3} {:>11.3e} {:>11.3e} {:>12} {:>5.2} {:>6.1}s  {}\n",
                r.op,
                r.label,
                r.output,
                r.cases,
                r.rule,
                r.max_ulp,
                r.max_mean_ulp,
                r.max_mere,
                r.max_mare,
                format!("{} ({:.1})", r.near_ties, r.max_tie_distance),
                r.max_bias_ratio,
                r.seconds,
                if r.failures == 0 { "pass".to_string() } else { format!("FAIL ({})", r.failures) }
            ));
        }
        s
    }

    /// Per op and dtype combination, the modes and most UB passes per core its cases reached.
    pub fn coverage_table(&self) -> String {
        self.coverage.iter().map(|c| format!("coverage: {}\n", c.line())).collect()
    }

    /// Where the cases miss the coverage rule (a mode, three UB passes, a remainder core).
    pub fn coverage_gaps(&self) -> Vec<String> {
        self.coverage.iter().flat_map(ColumnCoverage::gaps).collect()
    }
}

struct CaseOutcome {
    /// (output name, comparison) per output; empty when the run failed.
    comparisons: Vec<(String, Comparison)>,
    failure: Option<String>,
    /// What the case's plan exercised; `None` when the run failed before a plan.
    coverage: Option<PlanCoverage>,
}

/// Runs the sweep and returns the report; the caller decides how to print it.
pub fn run_verify(opts: &VerifyOptions) -> Result<VerifyReport, AppError> {
    let started = Instant::now();
    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    let project = match (&opts.from, &opts.templates) {
        (Some(dir), _) => project_from_dir(dir, &specs)?,
        (None, None) => render(&specs)?,
        (None, Some(templates)) => {
            let refs: Vec<&OpSpec> = specs.iter().collect();
            crate::codegen::render_project_with(&refs, templates)
                .map_err(|e| AppError::input(e.to_string()))?
        }
    };
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let mut report = VerifyReport::default();
    let columns: Vec<(&OpSpec, usize)> = specs
        .iter()
        .flat_map(|spec| (0..spec.columns()).map(move |column| (spec, column)))
        .filter(|(spec, column)| opts.dtypes.is_empty() || opts.dtypes.contains(&spec.column_dtype(*column)))
        .collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| -> Result<(), AppError> {
        // The next combination's runner is built while this one's cases run: on a cold cache
        // the compiler is otherwise the only thing running for most of a sweep.
        let (built_tx, built_rx) = std::sync::mpsc::sync_channel(1);
        let project = &project;
        let columns = &columns;
        s.spawn(move || {
            for &(spec, column) in columns {
                eprintln!("verify: {} {}: building the twin runner", spec.name, spec.column_label(column));
                let runner =
                    verify::build_runner(project, spec, column, BuildOptions { sanitize: opts.sanitize });
                // The receiver is gone when the sweep stopped early (an error, --fail-fast).
                if built_tx.send(runner).is_err() {
                    break;
                }
            }
        });
        for &(spec, column) in columns {
            let label = spec.column_label(column);
            let column_started = Instant::now();
            let mut runner = built_rx
                .recv()
                .expect("the builder sends one runner per combination")
                .map_err(|e| AppError::failed(format!("{} {label}: {e}", spec.name)))?;
            runner.perturb = opts.perturb.map(|k| (k, PERTURB_SEED));
            runner.profiles = opts.profiles.clone();
            let cases = verify::cases(spec, opts.sweep);
            let outcomes =
                run_cases(spec, column, &runner, soc, &cases, opts.jobs, opts.fail_fast.then_some(&stop));
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
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        Ok(())
    })?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The seed of `verify --perturb` (fixed, so a perturbed run is reproducible).
const PERTURB_SEED: u64 = 0x5eed;

/// The files the twin builds of each op (op_host, tiling header, kernel), read from an existing
/// generated project; a missing file is bad input (exit 2) naming the op and the path.
pub fn project_from_dir(dir: &Path, specs: &[OpSpec]) -> Result<Project, AppError> {
    if !dir.is_dir() {
        return Err(AppError::input(format!("verify --from {}: not a directory", dir.display())));
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
                AppError::input(format!("verify --from: op {}: {}: {e}", spec.name, path.display()))
            })?;
            files.push(GeneratedFile { path: rel, contents });
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Project { files })
}

pub fn verify(opts: &VerifyOptions) -> Result<(), AppError> {
    let report = run_verify(opts)?;
    print!("{}", report.table());
    print!("{}", report.coverage_table());
    for gap in report.coverage_gaps() {
        println!("coverage gap: {gap}");
    }
    println!("{} cases in {:.1} s", report.cases_run, report.seconds);
    if report.failures.is_empty() {
        return Ok(());
    }
    let mut message = format!("verify: {} case(s) failed:", report.failures.len());
    for f in report.failures.iter().take(20) {
        message.push_str(&format!("\n  {f}"));
    }
    if report.failures.len() > 20 {
        message.push_str(&format!("\n  ... and {} more", report.failures.len() - 20));
    }
    Err(AppError::failed(message))
}

/// The inputs of a case: each input in its dtype of the combination, seeded per input.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Vec<(String, HostTensor)> {
    case.shapes
        .iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let dtype = spec.input_dtype(name, column).unwrap_or(DType::Float32);
            (
                name.clone(),
                inputs::generate(case.dist, dtype, shape, case.seed.wrapping_mul(31).wrapping_add(i as u64)),
            )
        })
        .collect()
}

fn run_cases(
    spec: &OpSpec,
    column: usize,
    runner: &verify::Runner,
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

/// A case that failed: op, dtype combination, case label and what failed (a gate, a twin
/// rule, the host code, the reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFailure {
    pub op: String,
    pub column: String,
    pub case: String,
    pub why: String,
}

impl std::fmt::Display for CaseFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}: {}", self.op, self.column, self.case, self.why)
    }
}

impl std::error::Error for CaseFailure {}

/// Runs one case and checks every output against its reference: `Err` says what failed.
pub fn check_case(
    spec: &OpSpec,
    column: usize,
    runner: &verify::Runner,
    soc: &soc::Soc,
    case: &Case,
) -> Result<(), CaseFailure> {
    match run_one(spec, column, runner, soc, case).failure {
        None => Ok(()),
        Some(why) => Err(CaseFailure {
            op: spec.name.clone(),
            column: spec.column_label(column),
            case: case.label(),
            why,
        }),
    }
}

fn run_one(
    spec: &OpSpec,
    column: usize,
    runner: &verify::Runner,
    soc: &soc::Soc,
    case: &Case,
) -> CaseOutcome {
    // A family may make its own inputs (paged_cache: slot mappings, pre-filled caches).
    let (inputs, attrs) = match crate::family::case_inputs(spec, column, case) {
        Some(made) => made,
        None => (case_inputs(spec, column, case), case.attrs.clone()),
    };
    let failed = |why: String| CaseOutcome { comparisons: Vec::new(), failure: Some(why), coverage: None };
    let expected = match verify::expected_outputs(spec, &inputs, &attrs) {
        Ok(e) => e,
        Err(e) => return failed(format!("reference: {e}")),
    };
    // In-place inputs (caches) come back after the outputs and are compared like outputs.
    let inplace = spec.mutated_inputs();
    let run = match verify::run_case(
        runner,
        spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &inplace },
        false,
    ) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    let tiling = |name: &str| run.parsed.tiling.get(name).and_then(|v| v.as_f64());
    let coverage = Some(crate::family::plan_coverage(spec, &tiling));
    let mut comparisons = Vec::new();
    let mut problems = Vec::new();
    for exp in &expected {
        let Some((_, actual)) = run.outputs.iter().find(|(n, _)| n == &exp.name) else {
            problems.push(format!("output `{}` missing", exp.name));
            continue;
        };
        if actual.shape != exp.shape || actual.dtype != exp.dtype {
            problems.push(format!(
                "output `{}` is {} {:?}, expected {} {:?}",
                exp.name, actual.dtype, actual.shape, exp.dtype, exp.shape
            ));
            continue;
        }
        let alternates = match crate::family::alternates(spec, &inputs, &attrs, &exp.name) {
            Ok(a) => a,
            Err(e) => return failed(format!("reference: {e}")),
        };
        let tolerance = match runner.perturb {
            Some(_) => exp.tolerance.under_perturbation(exp.dtype),
            None => exp.tolerance,
        };
        let mut c = compare(actual, &closest_allowed(actual, &exp.values, &alternates), tolerance);
        if !alternates.is_empty() {
            // MERE/MARE always measure against the reference itself. The small-value check is
            // an absolute bar per element: an element equal to its documented alternate (the
            // other rounding of an intermediate within float32 error of a 16-bit boundary) is
            // held to that value, since gamma scales the intermediate's one-ulp step past the
            // bar at small |y| (add_rms_norm bf16 4096x896 seed 1057: 2.3e-5 vs 2^-16).
            let plain = compare(actual, &exp.values, Tolerance::CannOnly);
            c.mere = plain.mere;
            c.mare = plain.mare;
            c.cann = plain.cann.map(|gate| match &c.cann {
                Some(allowed) => gate.with_small_values_of(allowed, plain.mere, plain.mare),
                None => gate,
            });
        }
        if let Some((_, before)) = inputs.iter().find(|(n, _)| inplace.contains(n) && n == &exp.name) {
            if let Some(why) = untouched_changed(before, &exp.values, actual) {
                // Counted against the output; the comparison's own report cannot name it.
                c.violations += 1;
                problems.push(format!("in-place `{}`: {why}", exp.name));
            }
        }
        if !c.passed() {
            let at = c.first_violation.as_ref().or(c.worst.as_ref()).map(|e| e.flat);
            let why = at.and_then(|flat| crate::family::diagnose(spec, &inputs, &attrs, &exp.name, flat));
            let why = why.map(|w| format!("; {w}")).unwrap_or_default();
            problems.push(format!("output `{}`: {c}{why}", exp.name));
        }
        comparisons.push((exp.name.clone(), c));
    }
    CaseOutcome { comparisons, failure: (!problems.is_empty()).then(|| problems.join("; ")), coverage }
}

/// An in-place tensor's elements that the reference leaves bit-identical to the input must come
/// back bit-identical, whatever the tolerance of the elements it writes (a cache's untouched
/// slots are checked bitwise even where the written rows are held to int8 ±1). A family whose
/// written values could equal the old contents bit for bit must pre-fill its in-place inputs so
/// they cannot (paged_cache: int8 caches hold −128, scale caches negative values).
fn untouched_changed(before: &HostTensor, expected: &[f64], actual: &HostTensor) -> Option<String> {
    if before.shape != actual.shape || before.dtype != actual.dtype || expected.len() != before.numel() {
        return None; // reported by the comparison
    }
    let mut changed = 0usize;
    let mut first = None;
    for (i, g) in expected.iter().enumerate() {
        let kept = crate::tensor::f64_to_bits(before.dtype, *g) == before.bits(i);
        if kept && actual.bits(i) != before.bits(i) {
            changed += 1;
            first.get_or_insert(i);
        }
    }
    first.map(|i| {
        format!(
            "{changed} element(s) the reference leaves unchanged were written, first {:?} (flat {i}): {} became {}",
            crate::tensor::unravel_index(&before.shape, i),
            before.get_f64(i),
            actual.get_f64(i)
        )
    })
}

fn summarise(spec: &OpSpec, column: usize, ran: Vec<(&Case, CaseOutcome)>, report: &mut VerifyReport) {
    let (dtype, label) = (spec.column_dtype(column), spec.column_label(column));
    let mut rows: Vec<Row> = spec
        .outputs
        .iter()
        .map(|o| o.name.clone())
        .chain(spec.mutated_inputs())
        .map(|output| Row {
            op: spec.name.clone(),
            dtype,
            label: label.clone(),
            output,
            cases: 0,
            max_ulp: 0,
            max_mean_ulp: 0.0,
            max_mere: 0.0,
            max_mare: 0.0,
            failures: 0,
            rule: String::new(),
            seconds: 0.0,
            near_ties: 0,
            max_tie_distance: 0.0,
            max_bias_ratio: 0.0,
        })
        .collect();
    let mut coverage = ColumnCoverage::new(spec, column);
    for (case, outcome) in ran {
        report.cases_run += 1;
        if let Some(point) = outcome.coverage {
            coverage.add(point);
        }
        for row in rows.iter_mut() {
            row.cases += 1;
            match outcome.comparisons.iter().find(|(n, _)| *n == row.output) {
                Some((_, c)) => {
                    if row.rule.is_empty() {
                        row.rule = c.rule.to_string();
                    }
                    row.max_ulp = row.max_ulp.max(c.max_ulp);
                    row.max_mean_ulp = row.max_mean_ulp.max(c.mean_ulp);
                    row.max_mere = row.max_mere.max(c.mere);
                    row.max_mare = row.max_mare.max(c.mare);
                    row.near_ties += c.near_ties;
                    row.max_tie_distance = row.max_tie_distance.max(c.max_tie_distance);
                    if let Some(b) = &c.bias {
                        let ratio = b.mean.abs().max(b.mean_toward_away.abs()) / b.bound;
                        row.max_bias_ratio = row.max_bias_ratio.max(ratio);
                    }
                    if !c.passed() {
                        row.failures += 1;
                    }
                }
                None => row.failures += 1,
            }
        }
        if let Some(why) = outcome.failure {
            report.failures.push(format!("{} {label} {}: {why}", spec.name, case.label()));
        }
    }
    report.rows.extend(rows);
    report.coverage.push(coverage);
}

/// Per element, the allowed exact value (the reference, or its documented alternate) whose
/// rounding is nearest the actual value. Without alternates this is the reference itself.
fn closest_allowed(actual: &HostTensor, reference: &[f64], alternates: &[f64]) -> Vec<f64> {
    if alternates.is_empty() {
        return reference.to_vec();
    }
    reference
        .iter()
        .zip(alternates)
        .enumerate()
        .map(|(i, (r, alt))| {
            let a = actual.get_f64(i);
            let distance = |v: f64| (round_to_dtype(actual.dtype, v) - a).abs();
            if alt.is_nan() || distance(*r) <= distance(*alt) {
                *r
            } else {
                *alt
            }
        })
        .collect()
}
