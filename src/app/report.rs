//! `report`: performance evidence. Every op × dtype × shape runs on the CPU twin (sanitizers off:
//! counters do not need them), and its counters become a table row with the roofline estimate and
//! the eager PyTorch comparison (src/report). `--json` writes every figure, `--svg` a chart.

use super::gen::{load_specs, render};
use super::AppError;
use crate::plan::soc;
use crate::report::{self, ReportCase, Row, ShapeSet, TargetSummary};
use crate::spec::OpSpec;
use crate::verify::{self, BuildOptions, CaseInput};
use crate::DType;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub specs: Option<PathBuf>,
    pub ops: Vec<String>,
    /// Only combinations whose first input has one of these dtypes (empty: all).
    pub dtypes: Vec<DType>,
    pub soc: String,
    pub shapes: ShapeSet,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    /// Parallel runner processes.
    pub jobs: usize,
    /// Exit 1 when a target is missed.
    pub check: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            specs: None,
            ops: Vec::new(),
            dtypes: Vec::new(),
            soc: soc::DEFAULT_SOC.to_string(),
            shapes: ShapeSet::All,
            json: None,
            svg: None,
            jobs: 2,
            check: false,
        }
    }
}

/// What `run_report` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    /// One line per case the twin could not run (`op dtype shape: why`).
    pub failures: Vec<String>,
    pub targets: Vec<TargetSummary>,
    pub seconds: f64,
}

#[derive(Serialize)]
struct ReportJson<'a> {
    soc: &'a soc::Soc,
    model: report::ModelConstants,
    rows: &'a [Row],
    targets: &'a [TargetSummary],
    failures: &'a [String],
    seconds: f64,
}

struct Job<'a> {
    spec: &'a OpSpec,
    column: usize,
    runner: verify::Runner,
    case: ReportCase,
}

/// Builds the runners, runs every case and returns the rows (in op, dtype, case order).
pub fn run_report(opts: &ReportOptions) -> Result<Report, AppError> {
    let started = Instant::now();
    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    let project = render(&specs)?;
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let mut jobs = Vec::new();
    let mut build_failures = Vec::new();
    for spec in &specs {
        for column in 0..spec.columns() {
            let dtype = spec.column_dtype(column);
            if !opts.dtypes.is_empty() && !opts.dtypes.contains(&dtype) {
                continue;
            }
            let cases: Vec<ReportCase> = report::cases(spec, opts.shapes)
                .into_iter()
                .map(|c| ReportCase { attrs: spec.attrs_for_column(column, &c.attrs), ..c })
                .collect();
            if cases.is_empty() {
                continue;
            }
            eprintln!("report: {} {}: building the twin runner (no sanitizers)", spec.name, dtype);
            match verify::build_runner(&project, spec, column, BuildOptions { sanitize: false }) {
                Ok(runner) => {
                    for case in cases {
                        jobs.push(Job { spec, column, runner: runner.clone(), case });
                    }
                }
                // One op that does not build does not hide the others' evidence.
                Err(e) => {
                    let first = e.to_string().lines().take(3).collect::<Vec<_>>().join(" / ");
                    build_failures.push(format!("{} {}: {first}", spec.name, dtype.short_name()));
                }
            }
        }
    }
    let results = run_jobs(soc, &jobs, opts.jobs);
    let mut out = Report { failures: build_failures, ..Report::default() };
    for (job, result) in jobs.iter().zip(results) {
        match result {
            Ok(row) => out.rows.push(row),
            Err(why) => out.failures.push(format!(
                "{} {} {} ({}): {why}",
                job.spec.name,
                job.spec.column_dtype(job.column).short_name(),
                job.case.shape_label(),
                job.case.origin
            )),
        }
    }
    out.targets = report::summarise(&out.rows);
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

fn run_jobs(soc: &soc::Soc, jobs: &[Job], parallel: usize) -> Vec<Result<Row, String>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Row, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..parallel.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() {
                    break;
                }
                let result = run_one(soc, &jobs[i]);
                results.lock().expect("results lock")[i] = Some(result);
            });
        }
    });
    results.into_inner().expect("results lock").into_iter().map(|r| r.expect("every job ran")).collect()
}

fn run_one(soc: &soc::Soc, job: &Job) -> Result<Row, String> {
    let started = Instant::now();
    let (inputs, valid_slots) = report::case_inputs(job.spec, job.column, &job.case);
    let run = verify::run_case(
        &job.runner,
        job.spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &job.case.attrs, inplace: &[] },
        false,
    )
    .map_err(|e| e.to_string())?;
    let row = report::build_row(soc, job.spec, job.column, &job.case, &run.report, valid_slots)?;
    let seconds = started.elapsed().as_secs_f64();
    if seconds > 1.0 {
        eprintln!(
            "report: {} {} {} ({}): {seconds:.1} s on the twin",
            job.spec.name,
            row.dtype.short_name(),
            job.case.shape_label(),
            job.case.origin
        );
    }
    Ok(row)
}

/// The text report: both tables, the targets, the failures and the time taken.
pub fn text(soc: &soc::Soc, report: &Report) -> String {
    let mut s = report::tables(soc, &report.rows);
    s.push_str(&report::targets_text(&report.targets));
    if !report.failures.is_empty() {
        s.push_str("\nCases the twin could not run\n");
        for f in &report.failures {
            s.push_str(&format!("  {f}\n"));
        }
    }
    s.push_str(&format!(
        "\n{} cases in {:.1} s\n",
        report.rows.len() + report.failures.len(),
        report.seconds
    ));
    s
}

pub fn json(soc: &soc::Soc, report: &Report) -> String {
    let doc = ReportJson {
        soc,
        model: report::ModelConstants::of(soc),
        rows: &report.rows,
        targets: &report.targets,
        failures: &report.failures,
        seconds: report.seconds,
    };
    serde_json::to_string_pretty(&doc).expect("plain data serialises")
}

pub fn svg(soc: &soc::Soc, report: &Report) -> String {
    report::svg::chart(
        "Fused vs eager PyTorch: modeled device time",
        &format!(
            "{} ({} vector cores, {:.0} GB/s HBM assumed, {} µs per launch assumed); counts from the CPU twin",
            soc.name,
            soc.vector_cores,
            soc.hbm_gbps,
            report::model::LAUNCH_OVERHEAD_US
        ),
        &report::chart_bars(&report.rows),
    )
}

fn write(path: &PathBuf, text: &str) -> Result<(), AppError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| AppError::failed(format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(path, text).map_err(|e| AppError::failed(format!("{}: {e}", path.display())))
}

pub fn report(opts: &ReportOptions) -> Result<(), AppError> {
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let report = run_report(opts)?;
    print!("{}", text(soc, &report));
    if let Some(path) = &opts.json {
        write(path, &json(soc, &report))?;
        println!("report: JSON written to {}", path.display());
    }
    if let Some(path) = &opts.svg {
        write(path, &svg(soc, &report))?;
        println!("report: chart written to {}", path.display());
    }
    if !report.failures.is_empty() {
        return Err(AppError::failed(format!(
            "report: {} case(s) did not run on the twin",
            report.failures.len()
        )));
    }
    let missed: usize = report.targets.iter().map(|t| t.missed).sum();
    if opts.check && missed > 0 {
        return Err(AppError::failed(format!("report: {missed} target check(s) missed")));
    }
    Ok(())
}
