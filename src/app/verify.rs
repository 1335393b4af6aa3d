//! `verify`: every op × dtype combination × sweep case on the CPU twin, compared with the
//! references; a table of max ULP / MERE / MARE; non-zero exit on any failure.

use super::gen::{load_specs, render};
use super::AppError;
use crate::plan::soc;
use crate::spec::OpSpec;
use crate::tensor::{round_to_dtype, HostTensor};
use crate::verify::compare::{compare, Comparison, Tolerance};
use crate::verify::{self, inputs, BuildOptions, Case, CaseInput, Sweep};
use crate::DType;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub specs: Option<PathBuf>,
    pub ops: Vec<String>,
    /// Only combinations whose first input has one of these dtypes (empty: all).
    pub dtypes: Vec<DType>,
    pub sweep: Sweep,
    pub sanitize: bool,
    pub soc: String,
    /// Parallel runner processes.
    pub jobs: usize,
    /// Render with these templates instead of the embedded ones (tests prove that a broken
    /// kernel fails verification).
    pub templates: Option<Vec<(&'static str, String)>>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            specs: None,
            ops: Vec::new(),
            dtypes: Vec::new(),
            sweep: Sweep::Quick,
            sanitize: true,
            soc: soc::DEFAULT_SOC.to_string(),
            jobs: 2,
            templates: None,
        }
    }
}

/// The summary of one op, dtype combination and output.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub op: String,
    pub dtype: DType,
    pub output: String,
    pub cases: usize,
    pub max_ulp: u64,
    pub max_mere: f64,
    pub max_mare: f64,
    pub failures: usize,
}

#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    pub rows: Vec<Row>,
    /// One line per failed case: op, dtype, case, what failed.
    pub failures: Vec<String>,
    pub cases_run: usize,
    pub seconds: f64,
}

impl VerifyReport {
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<22} {:<9} {:<8} {:>6} {:>8} {:>11} {:>11}  {}\n",
            "op", "dtype", "output", "cases", "max ULP", "MERE", "MARE", "result"
        );
        for r in &self.rows {
            s.push_str(&format!(
                "{:<22} {:<9} {:<8} {:>6} {:>8} {:>11.3e} {:>11.3e}  {}\n",
                r.op,
                r.dtype.name(),
                r.output,
                r.cases,
                r.max_ulp,
                r.max_mere,
                r.max_mare,
                if r.failures == 0 { "pass".to_string() } else { format!("FAIL ({})", r.failures) }
            ));
        }
        s
    }
}

struct CaseOutcome {
    /// (output name, comparison) per output; empty when the run failed.
    comparisons: Vec<(String, Comparison)>,
    failure: Option<String>,
}

/// Runs the sweep and returns the report; the caller decides how to print it.
pub fn run_verify(opts: &VerifyOptions) -> Result<VerifyReport, AppError> {
    let started = Instant::now();
    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    let project = match &opts.templates {
        None => render(&specs)?,
        Some(templates) => {
            let refs: Vec<&OpSpec> = specs.iter().collect();
            crate::codegen::render_project_with(&refs, templates)
                .map_err(|e| AppError::input(e.to_string()))?
        }
    };
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let mut report = VerifyReport::default();
    for spec in &specs {
        for column in 0..spec.columns() {
            let dtype = spec.inputs[0].dtypes[column];
            if !opts.dtypes.is_empty() && !opts.dtypes.contains(&dtype) {
                continue;
            }
            eprintln!("verify: {} {}: building the twin runner", spec.name, dtype);
            let runner =
                verify::build_runner(&project, spec, column, BuildOptions { sanitize: opts.sanitize })
                    .map_err(|e| AppError::failed(format!("{} {}: {e}", spec.name, dtype)))?;
            let cases = verify::cases(spec, opts.sweep);
            let outcomes = run_cases(spec, column, &runner, soc, &cases, opts.jobs);
            summarise(spec, dtype, &cases, outcomes, &mut report);
            let failed = report.rows.iter().rev().take(spec.outputs.len()).map(|r| r.failures).sum::<usize>();
            eprintln!("verify: {} {}: {} cases, {} failed", spec.name, dtype, cases.len(), failed);
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

pub fn verify(opts: &VerifyOptions) -> Result<(), AppError> {
    let report = run_verify(opts)?;
    print!("{}", report.table());
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
            let dtype = spec
                .inputs
                .iter()
                .find(|t| &t.name == name)
                .map(|t| t.dtypes[column])
                .unwrap_or(DType::Float32);
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
) -> Vec<CaseOutcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseOutcome>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cases.len() {
                    break;
                }
                let outcome = run_one(spec, column, runner, soc, &cases[i]);
                results.lock().expect("results lock")[i] = Some(outcome);
            });
        }
    });
    results.into_inner().expect("results lock").into_iter().map(|o| o.expect("every case ran")).collect()
}

fn run_one(
    spec: &OpSpec,
    column: usize,
    runner: &verify::Runner,
    soc: &soc::Soc,
    case: &Case,
) -> CaseOutcome {
    let inputs = case_inputs(spec, column, case);
    let failed = |why: String| CaseOutcome { comparisons: Vec::new(), failure: Some(why) };
    let expected = match verify::expected_outputs(spec, &inputs, &case.attrs) {
        Ok(e) => e,
        Err(e) => return failed(format!("reference: {e}")),
    };
    let run = match verify::run_case(
        runner,
        spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &case.attrs, inplace: &[] },
        false,
    ) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
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
        let alternates = match crate::family::alternates(spec, &inputs, &case.attrs, &exp.name) {
            Ok(a) => a,
            Err(e) => return failed(format!("reference: {e}")),
        };
        let mut c = compare(actual, &closest_allowed(actual, &exp.values, &alternates), exp.tolerance);
        if !alternates.is_empty() {
            // The CANN gate and MERE/MARE always measure against the reference itself.
            let plain = compare(actual, &exp.values, Tolerance::CannOnly);
            c.mere = plain.mere;
            c.mare = plain.mare;
            c.cann = plain.cann;
        }
        if !c.passed() {
            problems.push(format!("output `{}`: {c}", exp.name));
        }
        comparisons.push((exp.name.clone(), c));
    }
    CaseOutcome { comparisons, failure: (!problems.is_empty()).then(|| problems.join("; ")) }
}

fn summarise(
    spec: &OpSpec,
    dtype: DType,
    cases: &[Case],
    outcomes: Vec<CaseOutcome>,
    report: &mut VerifyReport,
) {
    let mut rows: Vec<Row> = spec
        .outputs
        .iter()
        .map(|o| Row {
            op: spec.name.clone(),
            dtype,
            output: o.name.clone(),
            cases: 0,
            max_ulp: 0,
            max_mere: 0.0,
            max_mare: 0.0,
            failures: 0,
        })
        .collect();
    for (case, outcome) in cases.iter().zip(outcomes) {
        report.cases_run += 1;
        for row in rows.iter_mut() {
            row.cases += 1;
            match outcome.comparisons.iter().find(|(n, _)| *n == row.output) {
                Some((_, c)) => {
                    row.max_ulp = row.max_ulp.max(c.max_ulp);
                    row.max_mere = row.max_mere.max(c.mere);
                    row.max_mare = row.max_mare.max(c.mare);
                    if !c.passed() {
                        row.failures += 1;
                    }
                }
                None => row.failures += 1,
            }
        }
        if let Some(why) = outcome.failure {
            report.failures.push(format!("{} {} {}: {why}", spec.name, dtype, case.label()));
        }
    }
    report.rows.extend(rows);
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
