//! `report`: performance evidence. Every op × dtype × shape runs on the CPU twin (sanitizers off:
//! counters do not need them), and its counters become a table row with the roofline estimate and
//! the eager PyTorch comparison (src/report). `--json` writes every figure, `--svg` a chart.

use super::gen::{load_specs, render};
use super::AppError;
use crate::plan::soc;
use crate::report::step::{self, Step, StepSummary};
use crate::report::{self, calibration, scaled, ReportCase, ReportError, Row, ShapeSet, TargetSummary};
use crate::spec::OpSpec;
use crate::verify::{self, BuildOptions, CaseInput};
use crate::DType;
use serde::Serialize;
use std::path::{Path, PathBuf};
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
    /// Exit 1 when a target is missed (and not accepted in `known_misses`).
    pub check: bool,
    /// Accepted misses (`op dtype shape target | reason` per line); see [`check_known_misses`].
    pub known_misses: Option<PathBuf>,
    /// Skip cases whose largest input has more elements than this.
    pub max_elements: Option<u64>,
    /// One user shape in `plan`'s syntax (the first input's dims, then `name=dims` overrides)
    /// instead of the shape sets; needs exactly one op.
    pub shape: Vec<String>,
    /// One layer's training step (`--step MODEL --tokens N`) instead of the shape sets: the
    /// step's ops at its shapes, then the step's table ([`report::step`]).
    pub step: Option<Step>,
    /// `--table FILE [--table-check]`: the step's Markdown table kept in a file (the README).
    pub table: Option<StepTable>,
    /// `--calibration FILE`: the cycle model of CANN's designs against the measured kernel
    /// durations in FILE ([`report::calibration`]) instead of the twin's rows.
    pub calibration: Option<PathBuf>,
}

/// Where the step's Markdown table lives, and whether to write it or check it.
#[derive(Debug, Clone)]
pub struct StepTable {
    pub path: PathBuf,
    /// Compare instead of writing: a stale table is an error naming the file.
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
            known_misses: None,
            max_elements: None,
            shape: Vec::new(),
            step: None,
            table: None,
            calibration: None,
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
    /// `--step`: the layer's step, one per dtype.
    pub steps: Vec<StepSummary>,
    pub seconds: f64,
}

#[derive(Serialize)]
struct ReportJson<'a> {
    soc: &'a soc::Soc,
    model: report::ModelConstants,
    rows: &'a [Row],
    targets: &'a [TargetSummary],
    steps: &'a [StepSummary],
    failures: &'a [String],
    seconds: f64,
}

/// A result of the report: one job's row, or a model case scaled from its proxy jobs.
enum Slot<'a> {
    Row(usize),
    Scaled { spec: &'a OpSpec, column: usize, case: ReportCase, plan: scaled::Plan, proxies: Vec<usize> },
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
    let ops = match &opts.step {
        Some(step) if !opts.ops.is_empty() || !opts.shape.is_empty() => {
            return Err(AppError::input(format!(
                "report --step {} runs its layer's own ops and shapes: drop --ops / --shape",
                step.model.cli_name()
            )))
        }
        Some(step) => step.ops(),
        None => opts.ops.clone(),
    };
    let specs = load_specs(opts.specs.as_deref(), &ops)?;
    let project = render(&specs)?;
    let soc = soc::find(&opts.soc).map_err(AppError::input)?;
    let user = if opts.shape.is_empty() {
        None
    } else {
        if specs.len() != 1 {
            return Err(AppError::input(format!(
                "report --shape needs exactly one op (--ops), found {}",
                specs.len()
            )));
        }
        Some(super::plan::split_shapes(&opts.shape)?)
    };
    let mut pending = Vec::new();
    let mut jobs = Vec::new();
    let mut build_failures = Vec::new();
    for spec in &specs {
        for column in 0..spec.columns() {
            let dtype = spec.column_dtype(column);
            if !opts.dtypes.is_empty() && !opts.dtypes.contains(&dtype) {
                continue;
            }
            let all = match (&user, &opts.step) {
                (Some((first, explicit)), _) => vec![ReportCase {
                    origin: "user".to_string(),
                    shapes: crate::verify::sweep::shapes_from_first(spec, first, explicit),
                    attrs: crate::family::default_attrs(spec),
                }],
                (None, Some(step)) => step
                    .launches()
                    .iter()
                    .filter(|l| l.op == spec.name)
                    .map(|l| ReportCase::new(spec, &l.origin(step.model), &l.first))
                    .collect(),
                (None, None) => report::cases(spec, opts.shapes),
            };
            let family = crate::family::ops(spec.family);
            // A scaled case (report::scaled) costs the twin its largest proxy.
            let twin_elements = |c: &ReportCase| {
                scaled::Plan::of(soc, spec, c).map_or(c.largest_input(), |p| p.twin_elements())
            };
            let (cases, skipped): (Vec<ReportCase>, Vec<ReportCase>) = all
                .into_iter()
                .filter(|c| c.origin == "sweep" || family.report_variant_applies(spec, dtype, &c.attrs))
                .map(|c| ReportCase { attrs: spec.attrs_for_column(column, &c.attrs), ..c })
                .partition(|c| opts.max_elements.is_none_or(|max| twin_elements(c) <= max));
            for c in &skipped {
                eprintln!(
                    "report: {} {}: {} skipped: the twin would run {} elements of its largest input (--max-elements {})",
                    spec.name,
                    dtype,
                    c.shape_label(),
                    twin_elements(c),
                    opts.max_elements.unwrap_or(0)
                );
            }
            if cases.is_empty() {
                continue;
            }
            pending.push((spec, column, cases));
        }
    }
    // The runners build in parallel (on a cold cache the compiler is most of a report's time).
    let built = crate::toolchain::pool::map_in_order(&pending, opts.jobs, |(spec, column, _)| {
        eprintln!(
            "report: {} {}: building the twin runner (no sanitizers)",
            spec.name,
            spec.column_dtype(*column)
        );
        verify::build_runner(&project, spec, *column, BuildOptions { sanitize: false })
    });
    // What each result slot becomes: a row of its own job, or a scaled row from proxy jobs.
    let mut slots: Vec<Slot> = Vec::new();
    for ((spec, column, cases), runner) in pending.into_iter().zip(built) {
        match runner {
            Ok(runner) => {
                for case in cases {
                    let Some(plan) = scaled::Plan::of(soc, spec, &case) else {
                        slots.push(Slot::Row(jobs.len()));
                        jobs.push(Job { spec, column, runner: runner.clone(), case });
                        continue;
                    };
                    // The proxies of a dtype's model shapes are often the same runs: once each.
                    let mut proxies = Vec::new();
                    for proxy in plan.proxies(spec, &case) {
                        let same = |j: &Job| {
                            j.spec.name == spec.name
                                && j.column == column
                                && j.case.shapes == proxy.shapes
                                && j.case.attrs == proxy.attrs
                        };
                        proxies.push(jobs.iter().position(same).unwrap_or_else(|| {
                            jobs.push(Job { spec, column, runner: runner.clone(), case: proxy });
                            jobs.len() - 1
                        }));
                    }
                    slots.push(Slot::Scaled { spec, column, case, plan, proxies });
                }
            }
            // One op that does not build does not hide the others' evidence.
            Err(e) => {
                let first = e.to_string().lines().take(3).collect::<Vec<_>>().join(" / ");
                build_failures.push(format!(
                    "{} {}: {first}",
                    spec.name,
                    spec.column_dtype(column).short_name()
                ));
            }
        }
    }
    let results = crate::toolchain::pool::map_in_order(&jobs, opts.jobs, |job| run_one(soc, job));
    let mut out = Report { failures: build_failures, ..Report::default() };
    let failure = |spec: &OpSpec, column: usize, case: &ReportCase, why: &dyn std::fmt::Display| {
        format!(
            "{} {} {} ({}): {why}",
            spec.name,
            spec.column_dtype(column).short_name(),
            case.shape_label(),
            case.origin
        )
    };
    for slot in &slots {
        match slot {
            Slot::Row(i) => match &results[*i] {
                Ok(row) => out.rows.push(row.clone()),
                Err(why) => out.failures.push(failure(jobs[*i].spec, jobs[*i].column, &jobs[*i].case, why)),
            },
            Slot::Scaled { spec, column, case, plan, proxies } => {
                let rows: Result<Vec<Row>, scaled::ScaleError> = proxies
                    .iter()
                    .map(|&i| {
                        results[i].as_ref().map(Row::clone).map_err(|e| scaled::ScaleError::Proxy {
                            shape: jobs[i].case.shape_label(),
                            error: e.to_string(),
                        })
                    })
                    .collect();
                match rows.and_then(|rows| scaled::combine(soc, spec, *column, case, plan, &rows)) {
                    Ok(row) => out.rows.push(row),
                    Err(why) => out.failures.push(failure(spec, *column, case, &why)),
                }
            }
        }
    }
    out.targets = report::summarise(&out.rows);
    if let Some(step) = &opts.step {
        let mut dtypes: Vec<DType> = Vec::new();
        for r in &out.rows {
            if !dtypes.contains(&r.dtype) {
                dtypes.push(r.dtype);
            }
        }
        out.steps = dtypes.into_iter().map(|d| step::summarise(step, d, &out.rows)).collect();
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

fn run_one(soc: &soc::Soc, job: &Job) -> Result<Row, ReportError> {
    let started = Instant::now();
    let (inputs, valid_slots) = report::case_inputs(job.spec, job.column, &job.case);
    // A ref output's input must be passed in place (the runner refuses it otherwise).
    let inplace: Vec<String> = job.spec.refs.clone();
    let (run, trace) = verify::run_case_traced(
        &job.runner,
        job.spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &job.case.attrs, inplace: &inplace },
    )
    .map_err(ReportError::Twin)?;
    let mut row = report::build_row(soc, job.spec, job.column, &job.case, &run.report, valid_slots)?;
    report::attach_cycle_model(&mut row, soc, job.spec, job.column, &trace);
    drop(trace);
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
    for step in &report.steps {
        s.push_str(&step::text(step));
    }
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
        steps: &report.steps,
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
    if let Some(path) = &opts.calibration {
        return calibration(opts, soc, path);
    }
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
    if let Some(table) = &opts.table {
        step_table(table, &report.steps)?;
    }
    if !opts.check {
        return Ok(());
    }
    let accepted = match &opts.known_misses {
        Some(path) => read_known_misses(path)?,
        None => Vec::new(),
    };
    let mut problems = check_known_misses(&report.rows, &accepted);
    problems.extend(check_steps(&report.steps, &accepted));
    if !problems.is_empty() {
        return Err(AppError::failed(format!(
            "report: {} target check(s) fail:\n{}",
            problems.len(),
            problems.join("\n")
        )));
    }
    let listed = report::accepted_misses(&report.rows, &accepted);
    if listed > 0 {
        println!("report: {listed} missed target(s) accepted in the known-misses list, each with its reason");
    }
    Ok(())
}

/// `report --calibration FILE`: no twin runs, only the CANN designs at the fixture's shapes, so
/// the flags that choose twin rows are refused rather than ignored.
fn calibration(opts: &ReportOptions, soc: &'static soc::Soc, path: &PathBuf) -> Result<(), AppError> {
    if !opts.ops.is_empty()
        || !opts.shape.is_empty()
        || opts.step.is_some()
        || opts.check
        || opts.svg.is_some()
    {
        return Err(AppError::input(format!(
            "report --calibration {} models the fixture's points only: drop --ops / --shape / --step / --check / --svg",
            path.display()
        )));
    }
    let file = path.display().to_string();
    let fixture = std::fs::read_to_string(path).map_err(|e| AppError::input(format!("{file}: {e}")))?;
    let points = calibration::parse_fixture(&file, &fixture).map_err(|e| AppError::input(e.to_string()))?;
    let result = calibration::compare(soc, &points);
    print!("{}", calibration::text(&file, &result));
    if let Some(json) = &opts.json {
        let body =
            serde_json::to_string_pretty(&result).map_err(|e| AppError::failed(format!("{file}: {e}")))?;
        write(json, &body)?;
        println!("report: JSON written to {}", json.display());
    }
    Ok(())
}

/// Writes (or, with `check`, compares) each step's Markdown table between its markers in the
/// file: the README's step table is the report's output, never typed by hand.
fn step_table(table: &StepTable, steps: &[StepSummary]) -> Result<(), AppError> {
    let path = &table.path;
    let old =
        std::fs::read_to_string(path).map_err(|e| AppError::input(format!("{}: {e}", path.display())))?;
    let mut new = old.clone();
    for s in steps {
        new =
            step::replace_table(&new, s).map_err(|e| AppError::input(format!("{}: {e}", path.display())))?;
    }
    if new == old {
        println!("report: the step table in {} is up to date", path.display());
        return Ok(());
    }
    if table.check {
        return Err(AppError::failed(format!(
            "report: the step table in {} is stale (the model or a kernel changed): run the same \
             `opgen report --step ... --table {}` without --table-check and commit the result",
            path.display(),
            path.display()
        )));
    }
    write(path, &new)?;
    println!("report: the step table in {} updated", path.display());
    Ok(())
}

/// The step targets through the same list: a missed target needs its line
/// (`step qwen2-7b bf16 4096 time/floor | reason`), a listed one that is now met fails, and one
/// that cannot be judged (a launch did not run, no eager sequence) is said, not passed.
fn check_steps(steps: &[StepSummary], accepted: &[report::KnownMiss]) -> Vec<String> {
    let checks: Vec<(String, Option<bool>, String)> = steps
        .iter()
        .flat_map(|s| s.checks.iter().map(move |c| (s.check_key(c), c.met, c.detail.clone())))
        .collect();
    gate_with(&checks, accepted, Unjudged::Fails)
}

/// Reads `op dtype shape target | reason` lines (`#` comments, blank lines skipped). A line
/// without a reason is an error: a miss is accepted only with its explanation.
pub fn read_known_misses(path: &Path) -> Result<Vec<report::KnownMiss>, AppError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        AppError::input(format!("{}: cannot read the known-misses list: {e}", path.display()))
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once('|') {
            Some((key, reason)) if !key.trim().is_empty() && !reason.trim().is_empty() => {
                out.push(report::KnownMiss { key: key.trim().to_string(), reason: reason.trim().to_string() })
            }
            _ => {
                return Err(AppError::input(format!(
                    "{}:{}: want `op dtype shape target | reason`, found `{line}`",
                    path.display(),
                    i + 1
                )))
            }
        }
    }
    Ok(out)
}

/// What fails the gate: a missed target that is not accepted, and an accepted miss whose row ran
/// and now meets its target (the list must shrink as the kernels improve).
/// An accepted miss naming a row that ran but no check of it (a renamed target or relabelled
/// dtype combination) fails too: a stale entry would otherwise accept nothing, silently.
pub fn check_known_misses(rows: &[report::Row], accepted: &[report::KnownMiss]) -> Vec<String> {
    let checks: Vec<(String, Option<bool>, String)> = rows
        .iter()
        .flat_map(|row| row.checks.iter().map(move |c| (report::check_key(row, c), c.met, c.detail.clone())))
        .collect();
    // A row's key without the target: what an entry for that row starts with.
    let ran: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            row.checks.iter().map(move |c| {
                let key = report::check_key(row, c);
                key.strip_suffix(c.target).unwrap_or(&key).to_string()
            })
        })
        .collect();
    let mut problems = gate(&checks, accepted);
    problems.extend(stale(&checks, &ran, accepted));
    problems
}

/// Entries whose row ran (their key starts with a row's key) but that match none of its checks.
fn stale(
    checks: &[(String, Option<bool>, String)],
    ran: &[String],
    accepted: &[report::KnownMiss],
) -> Vec<String> {
    accepted
        .iter()
        .filter(|k| ran.iter().any(|row| k.key.starts_with(row.as_str())))
        .filter(|k| !checks.iter().any(|(key, _, _)| key == &k.key))
        .map(|k| format!("no check of the report has this key (its row ran): {}", k.key))
        .collect()
}

/// What a check that cannot be judged (`met: None`) means to the known-misses gate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unjudged {
    /// A row's check that does not apply: fine unlisted; listed, a stale entry ("now met").
    NotApplicable,
    /// A step target whose figures are missing: a problem unless listed with its reason.
    Fails,
}

/// [`check_known_misses`] over (key, met, detail) triples.
fn gate(checks: &[(String, Option<bool>, String)], accepted: &[report::KnownMiss]) -> Vec<String> {
    gate_with(checks, accepted, Unjudged::NotApplicable)
}

/// The gate: an unlisted miss fails, a listed target that is met fails (the list only shrinks),
/// and an unjudged check as `unjudged` says.
fn gate_with(
    checks: &[(String, Option<bool>, String)],
    accepted: &[report::KnownMiss],
    unjudged: Unjudged,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (key, met, detail) in checks {
        let listed = accepted.iter().any(|k| &k.key == key);
        match (met, listed, unjudged) {
            (Some(false), false, _) => problems.push(format!("missed: {key}: {detail}")),
            (None, false, Unjudged::Fails) => problems.push(format!("cannot be judged: {key}: {detail}")),
            (Some(true), true, _) | (None, true, Unjudged::NotApplicable) => {
                problems.push(format!("now met, remove it from the known-misses list: {key}"))
            }
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod known_misses_tests {
    use super::*;

    fn miss(key: &str) -> report::KnownMiss {
        report::KnownMiss { key: key.into(), reason: "why".into() }
    }

    #[test]
    fn an_unlisted_miss_and_a_listed_met_target_fail_the_gate() {
        let checks = vec![
            ("a f16 4x8 bytes/min".to_string(), Some(false), "1.2".to_string()),
            ("b f16 4x8 bytes/min".to_string(), Some(false), "1.3".to_string()),
            ("c f16 4x8 cores".to_string(), Some(true), "48".to_string()),
            ("d f16 4x8 transfers".to_string(), None, "small".to_string()),
        ];
        // a is accepted; b is not; c is listed but met; the list's entry for a row that did
        // not run (e) is no problem.
        let accepted = vec![miss("a f16 4x8 bytes/min"), miss("c f16 4x8 cores"), miss("e f32 1x1 UB")];
        let problems = gate(&checks, &accepted);
        assert_eq!(
            problems,
            vec![
                "missed: b f16 4x8 bytes/min: 1.3".to_string(),
                "now met, remove it from the known-misses list: c f16 4x8 cores".to_string(),
            ]
        );
        assert!(gate(&checks[..1], &accepted[..1]).is_empty());
    }

    #[test]
    fn an_unjudged_step_target_fails_unless_listed_where_a_row_check_passes() {
        let checks = vec![("step qwen2-7b bf16 4096 vs eager".to_string(), None, "no eager".to_string())];
        assert_eq!(
            gate_with(&checks, &[], Unjudged::Fails),
            vec!["cannot be judged: step qwen2-7b bf16 4096 vs eager: no eager".to_string()]
        );
        let listed = vec![miss("step qwen2-7b bf16 4096 vs eager")];
        assert!(gate_with(&checks, &listed, Unjudged::Fails).is_empty());
        assert!(gate(&checks, &[]).is_empty());
        assert_eq!(gate(&checks, &listed).len(), 1, "a listed row check that does not apply is stale");
    }

    #[test]
    fn an_entry_for_a_row_that_ran_but_no_check_of_it_is_stale() {
        let checks = vec![("c f16/i32 4x8 bytes/min".to_string(), Some(false), "1.2".to_string())];
        let ran = vec!["c f16/i32 4x8 ".to_string()];
        // The old label (f16 without the slot dtype) matches no row: not this gate's business;
        // a wrong target name on a row that ran is.
        let accepted =
            vec![miss("c f16/i32 4x8 bytes/min"), miss("c f16 4x8 bytes/min"), miss("c f16/i32 4x8 bytes")];
        assert_eq!(
            stale(&checks, &ran, &accepted),
            vec!["no check of the report has this key (its row ran): c f16/i32 4x8 bytes".to_string()]
        );
    }

    #[test]
    fn a_known_miss_needs_its_reason() {
        let dir = crate::toolchain::scratch::ScratchDir::new("known-misses").unwrap();
        let good = dir.path().join("good.txt");
        std::fs::write(
            &good,
            "# comment\n\nrms_norm f16 4096x3584 (Qwen2-7B) transfers | two rows per pass\n",
        )
        .unwrap();
        let list = read_known_misses(&good).unwrap();
        assert_eq!(
            list,
            vec![report::KnownMiss {
                key: "rms_norm f16 4096x3584 (Qwen2-7B) transfers".into(),
                reason: "two rows per pass".into()
            }]
        );
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, "rms_norm f16 4096x3584 (Qwen2-7B) transfers |  \n").unwrap();
        let err = read_known_misses(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.txt:1"), "{err}");
    }
}
