//! Performance evidence (`opgen report`): the generated kernels run on the CPU twin with real
//! shapes, their exact per-core counters ([`counters`]) are turned into GM traffic, transfer
//! sizes, UB use, core use and a roofline estimate ([`model`]), and set beside the eager PyTorch
//! sequence for the same work (`crate::family::eager`). Tables for people, JSON for machines, an SVG chart
//! ([`svg`]). The targets of issue #5 are checked per row ([`Check`]).

pub mod calibration;
pub mod counters;
pub mod model;
pub mod scaled;
pub mod step;
pub mod svg;

use crate::dtype::DType;
use crate::family::inputs::{self, Distribution};
use crate::family::{self, CannBuiltin, EagerCase, EagerSequence, PlanReading};
use crate::perf::sim::LaunchTime;
use crate::perf::{CannModelled, Times};
use crate::plan::soc::{Soc, UB_PLAN_BYTES_A2};
use crate::spec::{AttrValue, OpSpec};
use crate::tensor::{shape_numel, HostTensor};
use crate::verify::protocol::{ProtocolError, RunnerReport};
use crate::verify::{Sweep, TwinError};
use counters::{Launch, TensorTraffic, RUNNER_BUFFERS};
use model::Estimate;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Why a report row could not be made.
#[derive(Debug)]
pub enum ReportError {
    /// The runner ran nothing (an empty launch).
    NotLaunched,
    /// The runner launched but its report has no counters.
    NoCounters,
    /// The runner's report does not match the protocol.
    Protocol(ProtocolError),
    /// An output's dtype the runner reported is not one opgen knows.
    UnknownDtype { output: String, dtype: String },
    /// Building or running the case on the twin failed.
    Twin(TwinError),
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::NotLaunched => {
                f.write_str("the runner did not launch the kernel (nothing to compute)")
            }
            ReportError::NoCounters => f.write_str("the runner's report has no counters"),
            ReportError::Protocol(e) => write!(f, "{e}"),
            ReportError::UnknownDtype { output, dtype } => {
                write!(f, "output `{output}`: unknown dtype `{dtype}` in the runner's report")
            }
            ReportError::Twin(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReportError {}

/// Which shapes a report covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeSet {
    /// The quick verify sweep's shapes (one case per distinct shape set).
    Sweep,
    /// The model shapes (Qwen2-7B) of [`model_shapes`].
    Model,
    All,
}

impl ShapeSet {
    pub fn parse(text: &str) -> Option<ShapeSet> {
        match text {
            "sweep" => Some(ShapeSet::Sweep),
            "model" => Some(ShapeSet::Model),
            "all" => Some(ShapeSet::All),
            _ => None,
        }
    }
}

/// One launch of the report: the shapes of every input and where they come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportCase {
    /// `sweep` or the model case (`Qwen2-7B q`).
    pub origin: String,
    pub shapes: Vec<(String, Vec<usize>)>,
    #[serde(skip)]
    pub attrs: Vec<(String, AttrValue)>,
}

impl ReportCase {
    /// A case from the first input's shape (the others by the family's shape rule) with the
    /// spec's default attrs.
    pub fn new(spec: &OpSpec, origin: &str, first: &[usize]) -> ReportCase {
        ReportCase {
            origin: origin.to_string(),
            shapes: crate::verify::sweep::shapes_from_first(spec, first, &[]),
            attrs: crate::family::default_attrs(spec),
        }
    }

    /// Elements of the case's largest input (what a run on the twin costs).
    pub fn largest_input(&self) -> u64 {
        self.shapes.iter().map(|(_, s)| shape_numel(s) as u64).max().unwrap_or(0)
    }

    pub fn is_model(&self) -> bool {
        self.origin != "sweep"
    }
    /// The first input's shape, `4096x3584`.
    pub fn shape_label(&self) -> String {
        self.shapes
            .first()
            .map(|(_, s)| s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"))
            .unwrap_or_default()
    }
}

/// The family's model shapes (Qwen2-7B): the first input's shape of each op, the others by the
/// family's shape rule.
pub fn model_shapes(spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
    crate::family::ops(spec.family).model_shapes(spec)
}

/// The report's cases of one op.
pub fn cases(spec: &OpSpec, set: ShapeSet) -> Vec<ReportCase> {
    let mut out: Vec<ReportCase> = Vec::new();
    if set != ShapeSet::Model {
        for case in crate::family::cases(spec, Sweep::Quick) {
            if !out.iter().any(|c| c.shapes == case.shapes) {
                out.push(ReportCase { origin: "sweep".to_string(), shapes: case.shapes, attrs: case.attrs });
            }
        }
    }
    if set != ShapeSet::Sweep {
        let variants = crate::family::ops(spec.family).report_variants(spec);
        for (origin, first) in model_shapes(spec) {
            let base = ReportCase::new(spec, origin, &first);
            out.push(base.clone());
            for (label, attrs) in &variants {
                let mut case = base.clone();
                case.origin = format!("{origin}, {label}");
                for (name, value) in attrs {
                    case.attrs.retain(|(n, _)| n != name);
                    case.attrs.push((name.clone(), value.clone()));
                }
                out.push(case);
            }
        }
    }
    out
}

/// The inputs of a case: uniform [-5, 5] (the counters do not depend on values, except that a
/// backward elementwise op's underflow rescue runs only in tiles with a value below 2^-100,
/// which these inputs do not have: the report times the plain path), except those
/// whose values change the traffic, which the family makes (a paged cache's slot mapping).
/// Returns the valid slot count with them.
pub fn case_inputs(
    spec: &OpSpec,
    column: usize,
    case: &ReportCase,
) -> (Vec<(String, HostTensor)>, Option<u64>) {
    let made = crate::family::ops(spec.family).report_inputs(spec, column, &case.shapes);
    let tensors = case
        .shapes
        .iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let idx = spec.inputs.iter().position(|t| &t.name == name);
            if let Some((_, t)) = made.as_ref().and_then(|m| m.tensors.iter().find(|(j, _)| Some(*j) == idx))
            {
                return (name.clone(), t.clone());
            }
            let dtype = idx.map(|i| spec.inputs[i].dtypes[column]).unwrap_or(DType::Float32);
            (name.clone(), inputs::generate(Distribution::Uniform5, dtype, shape, 7000 + i as u64))
        })
        .collect();
    (tensors, made.and_then(|m| m.valid_slots))
}

/// The minimum GM traffic of the op for a case, per tensor: every input its result depends on
/// (all but the family's `inputs_not_read` at the case's attrs) read once, every output
/// written once; an in-place cache counts only the rows its valid slots address (written once).
/// Independent of the kernel: from the spec, the input shapes and the output shapes InferShape
/// gave.
pub fn minimum_bytes(
    spec: &OpSpec,
    column: usize,
    shapes: &[(String, Vec<usize>)],
    outputs: &[(String, DType, Vec<usize>)],
    valid_slots: Option<u64>,
    attrs: &[(String, AttrValue)],
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let not_read = crate::family::ops(spec.family).inputs_not_read(spec, attrs);
    for t in &spec.inputs {
        if not_read.contains(&t.name.as_str()) {
            continue;
        }
        let Some((_, shape)) = shapes.iter().find(|(n, _)| n == &t.name) else { continue };
        let size = t.dtypes[column].size_bytes() as u64;
        let n = shape_numel(shape) as u64;
        let bytes = match (t.mutated, valid_slots) {
            (true, Some(valid)) if shape.len() >= 2 && shape[0] * shape[1] > 0 => {
                valid * (n / (shape[0] * shape[1]) as u64) * size
            }
            _ => n * size,
        };
        out.insert(t.name.clone(), bytes);
    }
    for (name, dtype, shape) in outputs {
        let bytes = shape_numel(shape) as u64 * dtype.size_bytes() as u64;
        if spec.refs.contains(name) {
            // A ref output is its input's buffer: read once and written once.
            *out.entry(name.clone()).or_insert(0) += bytes;
        } else {
            out.insert(name.clone(), bytes);
        }
    }
    out
}

/// Independent work units a kernel can spread over cores, where the family defines them
/// (row_norm rows, rotary rows of D).
pub fn work_units(spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
    crate::family::ops(spec.family).work_units(spec, shapes)
}

/// The family's reading of the plan the generated TilingFunc chose.
fn read_plan(spec: &OpSpec, column: usize, launch: &Launch) -> PlanReading {
    crate::family::ops(spec.family).read_plan(spec, &|n| launch.tiling_field(n), spec.column_dtype(column))
}

/// A target of issue #5 checked on one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub target: &'static str,
    /// `None`: not applicable to this row (the detail says why).
    pub met: Option<bool>,
    pub detail: String,
}

impl Check {
    fn new(target: &'static str, met: Option<bool>, detail: impl Into<String>) -> Check {
        Check { target, met, detail: detail.into() }
    }
}

/// The eager side of a row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EagerRow {
    pub sequence: EagerSequence,
    pub launches: u32,
    pub bytes: u64,
    pub estimate: Estimate,
}

/// Per-tensor traffic next to its minimum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TensorRow {
    #[serde(flatten)]
    pub traffic: TensorTraffic,
    pub min_bytes: u64,
}

/// One op × dtype × shape of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub op: String,
    pub dtype: DType,
    /// The combination's short name in tables: the dtype's, plus those of the tensors that
    /// tell it apart from another combination of the same dtype (`f16/i64`: reshape_and_cache
    /// with an int64 slot_mapping).
    pub label: String,
    pub origin: String,
    pub shapes: Vec<(String, Vec<usize>)>,
    pub plan: String,
    pub tiling: BTreeMap<String, f64>,
    pub vector_cores: u32,
    pub cores_launched: u64,
    pub cores_with_work: u64,
    pub work_units: Option<u64>,
    pub gm_bytes: u64,
    pub min_bytes: u64,
    pub bytes_ratio: f64,
    pub split_d: bool,
    pub tensors: BTreeMap<String, TensorRow>,
    /// The runner's own buffers (tiling data, workspace), not counted in gm_bytes.
    pub runner_bytes: u64,
    pub transfers: u64,
    pub mean_transfer_bytes: f64,
    /// The tensor with the most GM bytes and its mean transfer size.
    pub main_stream: Option<(String, f64)>,
    pub ub_high_water_bytes: u64,
    /// (cores whose multi-tile loops were double-buffered, cores with a multi-tile loop).
    pub double_buffered_cores: (u64, u64),
    /// (copy-ins that went to the other buffer of their queue, copy-ins that had a predecessor
    /// in their queue), all cores.
    pub copy_ins_overlapped: (u64, u64),
    /// Per vector API: (instructions, elements), all cores.
    pub vector: BTreeMap<String, (u64, u64)>,
    pub vector_elements_per_output_element: f64,
    pub scalar_gm_accesses: u64,
    pub scalar_ub_accesses: u64,
    pub flag_waits: BTreeMap<String, u64>,
    /// Waits inside AscendC APIs (ReduceSum/ReduceMax/ReduceMin on dav_c220), all cores.
    pub hidden_flag_waits: BTreeMap<String, u64>,
    pub fused: Estimate,
    /// `min_bytes` at the full HBM bandwidth (the plain byte floor).
    pub roofline_us: f64,
    /// The op's time floor: `roofline_us` plus one launch (`model::floor_us`); the time/floor
    /// target and the tables' floor columns use it.
    pub floor_us: f64,
    pub roofline_fraction: f64,
    pub eager: Option<EagerRow>,
    /// Why there is no eager sequence.
    pub eager_missing: Option<String>,
    pub traffic_ratio: Option<f64>,
    pub launch_ratio: Option<f64>,
    pub speedup: Option<f64>,
    pub checks: Vec<Check>,
    /// The cycle model (src/perf, issue 14): the launch simulated from the twin's event trace
    /// at the low / mid / high ends of the cycle table, µs; `cycle` is the mid level's detail.
    pub time_us: Option<Times>,
    pub cycle: Option<LaunchTime>,
    /// Why there is no cycle-model time.
    pub cycle_missing: Option<String>,
    /// The CANN built-in's design for the same op and shape, through the same simulator.
    pub cann: Option<CannModelled>,
    pub cann_missing: Option<String>,
    /// Eager (roofline model) µs / fused mid µs, and CANN mid µs / fused mid µs.
    pub vs_eager: Option<f64>,
    pub vs_cann: Option<f64>,
    /// Per core, for machines.
    pub cores: Vec<counters::CoreCounters>,
    /// A model shape too large for the twin, timed from smaller runs ([`scaled`]): how.
    pub scaled: Option<scaled::Scaling>,
}

/// The eager sequence of the same work at `shapes`, modelled, or why there is none.
pub(crate) fn eager_row(
    soc: &Soc,
    spec: &OpSpec,
    column: usize,
    shapes: &[(String, Vec<usize>)],
    valid_slots: Option<u64>,
) -> (Option<EagerRow>, Option<String>) {
    match crate::family::ops(spec.family).eager_sequence(&EagerCase { spec, column, shapes, valid_slots }) {
        Ok(sequence) => {
            let estimate = model::eager(soc, &sequence);
            let row = EagerRow { launches: sequence.launches(), bytes: sequence.bytes(), estimate, sequence };
            (Some(row), None)
        }
        Err(why) => (None, Some(why.to_string())),
    }
}

/// Builds a row from the runner's report of the case.
pub fn build_row(
    soc: &Soc,
    spec: &OpSpec,
    column: usize,
    case: &ReportCase,
    report: &Value,
    valid_slots: Option<u64>,
) -> Result<Row, ReportError> {
    let report = RunnerReport::from_value(report).map_err(ReportError::Protocol)?;
    let launch = Launch::from_report(&report)?;
    let outputs = report
        .outputs
        .iter()
        .map(|o| {
            let dtype = DType::parse(&o.dtype).ok_or_else(|| ReportError::UnknownDtype {
                output: o.name.clone(),
                dtype: o.dtype.clone(),
            })?;
            Ok((o.name.clone(), dtype, o.shape.clone()))
        })
        .collect::<Result<Vec<(String, DType, Vec<usize>)>, ReportError>>()?;
    let mins = minimum_bytes(spec, column, &case.shapes, &outputs, valid_slots, &case.attrs);
    let traffic = launch.traffic();
    let mut tensors: BTreeMap<String, TensorRow> = BTreeMap::new();
    for (name, min) in &mins {
        tensors.insert(
            name.clone(),
            TensorRow { traffic: traffic.get(name).copied().unwrap_or_default(), min_bytes: *min },
        );
    }
    for (name, t) in &traffic {
        if !RUNNER_BUFFERS.contains(&name.as_str()) && !tensors.contains_key(name) {
            tensors.insert(name.clone(), TensorRow { traffic: *t, min_bytes: 0 });
        }
    }
    let runner_bytes =
        traffic.iter().filter(|(n, _)| RUNNER_BUFFERS.contains(&n.as_str())).map(|(_, t)| t.bytes()).sum();
    let gm_bytes = launch.tensor_bytes();
    let min_bytes: u64 = mins.values().sum();
    let bytes_ratio = if min_bytes == 0 { 1.0 } else { gm_bytes as f64 / min_bytes as f64 };
    let fused = model::fused(soc, &launch);
    let roofline_us = model::roofline_us(soc, min_bytes);
    // Elements written: the outputs (ref outputs among them), and the rows written into in-place
    // caches.
    let output_elements: u64 = outputs.iter().map(|(_, _, s)| shape_numel(s) as u64).sum::<u64>()
        + spec
            .inputs
            .iter()
            .filter(|t| t.mutated && !spec.refs.contains(&t.name))
            .map(|t| mins.get(&t.name).copied().unwrap_or(0) / t.dtypes[column].size_bytes() as u64)
            .sum::<u64>();
    let vector = launch.vector();
    let plan = read_plan(spec, column, &launch);
    let vector_elements: u64 = vector.values().map(|(_, e)| e).sum();

    let (eager, eager_missing) = eager_row(soc, spec, column, &case.shapes, valid_slots);
    let traffic_ratio = eager.as_ref().filter(|_| gm_bytes > 0).map(|e| e.bytes as f64 / gm_bytes as f64);
    let launch_ratio = eager.as_ref().map(|e| f64::from(e.launches));
    let speedup = eager.as_ref().map(|e| e.estimate.total_us / fused.total_us);

    let mut row = Row {
        op: spec.name.clone(),
        dtype: spec.column_dtype(column),
        label: column_short_label(spec, column),
        origin: case.origin.clone(),
        shapes: case.shapes.clone(),
        plan: plan.label.clone(),
        tiling: launch.tiling.clone(),
        vector_cores: soc.vector_cores,
        cores_launched: launch.cores.len() as u64,
        cores_with_work: launch.cores_with_work(),
        work_units: crate::family::ops(spec.family)
            .plan_work_units(spec, &|n| launch.tiling_field(n))
            .or_else(|| work_units(spec, &case.shapes)),
        gm_bytes,
        min_bytes,
        bytes_ratio,
        split_d: plan.two_pass,
        tensors,
        runner_bytes,
        transfers: launch.transfers(),
        mean_transfer_bytes: launch.mean_transfer_bytes(),
        main_stream: launch.main_stream(),
        ub_high_water_bytes: launch.ub_high_water_bytes(),
        double_buffered_cores: launch.double_buffering(),
        copy_ins_overlapped: (
            launch.cores.iter().map(|c| c.copy_in_overlapped).sum(),
            launch.cores.iter().map(|c| c.copy_in_followers()).sum(),
        ),
        vector,
        vector_elements_per_output_element: if output_elements == 0 {
            0.0
        } else {
            vector_elements as f64 / output_elements as f64
        },
        scalar_gm_accesses: launch.scalar_accesses().0,
        scalar_ub_accesses: launch.scalar_accesses().1,
        flag_waits: launch.flag_waits(),
        hidden_flag_waits: launch.hidden_flag_waits(),
        fused,
        roofline_us,
        floor_us: model::floor_us(soc, min_bytes),
        roofline_fraction: if fused.total_us > 0.0 { roofline_us / fused.total_us } else { 0.0 },
        eager,
        eager_missing,
        traffic_ratio,
        launch_ratio,
        speedup,
        checks: Vec::new(),
        time_us: None,
        cycle: None,
        cycle_missing: Some("no event trace was taken".to_string()),
        cann: None,
        cann_missing: None,
        vs_eager: None,
        vs_cann: None,
        cores: launch.cores.clone(),
        scaled: None,
    };
    row.checks = checks(spec, &row, soc, &plan);
    Ok(row)
}

/// Adds the cycle model to a row: the generated kernel's launch from the twin's event trace, the
/// CANN design for the same op and shape, their ratios and issue 14's two targets.
pub fn attach_cycle_model(row: &mut Row, soc: &Soc, spec: &OpSpec, column: usize, trace_text: &str) {
    let sizes: BTreeMap<String, u64> = spec
        .inputs
        .iter()
        .filter(|t| !t.mutated)
        .filter_map(|t| row.tensors.get(&t.name).map(|r| (t.name.clone(), r.min_bytes)))
        .collect();
    match crate::perf::fused(soc, trace_text, &sizes) {
        Ok(m) => {
            row.time_us = Some(m.time_us);
            row.cycle = Some(m.mid);
            row.cycle_missing = None;
        }
        Err(e) => row.cycle_missing = Some(e.to_string()),
    }
    attach_cann_and_time_targets(row, soc, spec, column);
}

/// The CANN design for the row's op and shapes (a scaled row has its own), the ratios to it and to eager, and the
/// time targets, once the row has its cycle-model time.
pub(crate) fn attach_cann_and_time_targets(row: &mut Row, soc: &Soc, spec: &OpSpec, column: usize) {
    let first = spec.inputs.first().map(|t| t.dtypes[column]).unwrap_or(DType::Float32);
    let sz = first.size_bytes() as u64;
    let builtin = family::cann_builtin(spec);
    // A scaled row brings its CANN figure extended from the proxies' (`scaled::combine`).
    match builtin {
        _ if row.scaled.is_some() => {}
        None => row.cann_missing = Some(format!("no CANN built-in design is modelled for {}", spec.name)),
        Some(b) => match crate::perf::cann::design(soc, b, &row.shapes, sz, first == DType::Float16) {
            Ok(design) => match crate::perf::cann_design(soc, &design) {
                Ok(c) => row.cann = Some(c),
                Err(e) => row.cann_missing = Some(e.to_string()),
            },
            Err(why) => row.cann_missing = Some(why.to_string()),
        },
    }
    let Some(mid) = row.time_us.map(|t| t.mid) else { return };
    row.vs_eager = row.eager.as_ref().map(|e| e.estimate.total_us / mid);
    row.vs_cann = row.cann.as_ref().map(|c| c.modelled.time_us.mid / mid);
    if row.origin == "sweep" || row.origin == "user" {
        return;
    }
    let bound = row.cycle.map_or("", |c| c.bound);
    if let Some(target) = builtin.and_then(CannBuiltin::floor_target).filter(|_| row.roofline_us > 0.0) {
        let ratio = mid / row.floor_us;
        row.checks.push(Check::new(
            "time/floor",
            Some(ratio <= target),
            format!(
                "mid {mid:.1} µs = {ratio:.2}x the floor {:.1} µs (HBM {:.1} + one launch; target ≤ {target}x; bound: {bound})",
                row.floor_us, row.roofline_us
            ),
        ));
    }
    if let Some(c) = &row.cann {
        let theirs = c.modelled.time_us.mid;
        row.checks.push(Check::new(
            "vs CANN",
            Some(mid <= theirs),
            format!(
                "mid {mid:.1} µs against the CANN design's {theirs:.1} µs ({}, bound: {})",
                c.mode, c.modelled.mid.bound
            ),
        ));
    }
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

/// The targets of issue #5 on one row.
fn checks(spec: &OpSpec, row: &Row, soc: &Soc, plan: &PlanReading) -> Vec<Check> {
    let mut out = Vec::new();
    // 1. Bytes moved / minimum.
    let excess: Vec<String> = row
        .tensors
        .iter()
        .filter(|(_, t)| t.traffic.bytes() > t.min_bytes)
        .map(|(n, t)| {
            let times =
                if t.min_bytes > 0 { t.traffic.bytes() as f64 / t.min_bytes as f64 } else { f64::INFINITY };
            let by = if t.traffic.cores > 1 && (times - t.traffic.cores as f64).abs() < 1e-9 {
                format!(": once by each of {} cores", t.traffic.cores)
            } else {
                String::new()
            };
            format!("{n} moved {times:.2}x its minimum{by}")
        })
        .collect();
    let (limit, what) = match (row.split_d, row.tiling.get("rowResident").copied().unwrap_or(0.0) != 0.0) {
        (true, true) => (1.5, "split-D, row resident in UB"),
        (true, false) => (1.5, "split-D: x read twice by design"),
        _ => (1.0, "single pass"),
    };
    let met = row.bytes_ratio <= limit + 0.005;
    let detail = if excess.is_empty() {
        format!("{what}: {:.3}", row.bytes_ratio)
    } else {
        format!("{what}: {:.3} ({})", row.bytes_ratio, excess.join(", "))
    };
    out.push(Check::new("bytes/min", Some(met), detail));

    // 2. Fused vs eager at the model shapes.
    if crate::family::ops(spec.family).fusion_target(spec) && row.origin != "sweep" {
        match (&row.eager, row.traffic_ratio) {
            (Some(e), Some(ratio)) => out.push(Check::new(
                "fusion",
                Some(ratio >= 4.0 && e.launches >= 6),
                format!("{ratio:.2}x fewer GM bytes, 1 launch vs {}", e.launches),
            )),
            _ => out.push(Check::new("fusion", Some(false), "no eager sequence to compare with")),
        }
    }

    // 3. Cores with work.
    let cores = u64::from(soc.vector_cores);
    let idle = row.cores_launched - row.cores_with_work;
    match row.work_units {
        Some(units) => {
            let want = units.min(cores).max(1);
            out.push(Check::new(
                "cores",
                Some(row.cores_with_work == want && idle == 0),
                format!(
                    "{} with work of {} launched; min({units} units, {cores} cores) = {want}",
                    row.cores_with_work, row.cores_launched
                ),
            ));
        }
        None => out.push(Check::new(
            "cores",
            Some(idle == 0),
            format!(
                "{} with work of {} launched (no work-unit rule for this family: idle launches only)",
                row.cores_with_work, row.cores_launched
            ),
        )),
    }

    // 4. Large transfers, where the shape allows.
    match &row.main_stream {
        Some((name, mean)) => {
            let per_core = row.tensors.get(name).map_or(0, |t| t.traffic.bytes()) as f64
                / row.cores_with_work.max(1) as f64;
            let met = if *mean >= model::LARGE_TRANSFER_BYTES {
                Some(true)
            } else if per_core < model::LARGE_TRANSFER_BYTES {
                None
            } else {
                Some(false)
            };
            let why = match met {
                None => format!("each core moves {} of `{name}` in all", kib(per_core)),
                Some(false) => format!(
                    "{} per transfer of `{name}` ({} per core){}",
                    kib(*mean),
                    kib(per_core),
                    transfer_reason(plan, row)
                ),
                Some(true) => format!("{} per transfer of `{name}`", kib(*mean)),
            };
            out.push(Check::new("transfers", met, why));
        }
        None => out.push(Check::new("transfers", None, "no transfers")),
    }

    // 5. Double buffering.
    let (db, multi) = row.double_buffered_cores;
    out.push(if multi == 0 {
        Check::new("double buffering", None, "one tile per core: nothing to overlap")
    } else {
        let (overlapped, followers) = row.copy_ins_overlapped;
        Check::new(
            "double buffering",
            Some(db == multi),
            format!(
                "{db} of {multi} multi-tile cores; {overlapped} of {followers} follow-up copy-ins went to another buffer of their queue"
            ),
        )
    });

    // 6. UB high-water.
    out.push(Check::new(
        "UB",
        Some(row.ub_high_water_bytes <= UB_PLAN_BYTES_A2),
        format!("{} of {} planned", kib(row.ub_high_water_bytes as f64), kib(UB_PLAN_BYTES_A2 as f64)),
    ));
    out
}

/// Why the kernel's transfers of its main stream are small: the family's reason, else whether
/// larger tiles would have fit in UB.
fn transfer_reason(plan: &PlanReading, row: &Row) -> String {
    if let Some(reason) = &plan.transfer_reason {
        return reason.clone();
    }
    let ub = row.ub_high_water_bytes;
    if ub < UB_PLAN_BYTES_A2 / 2 {
        format!(
            ": the kernel uses {} of {} UB, so larger tiles would fit",
            kib(ub as f64),
            kib(UB_PLAN_BYTES_A2 as f64)
        )
    } else {
        String::new()
    }
}

// ---------------------------------------------------------------- text output

fn human_bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1024.0 / 1024.0)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// [`OpSpec::column_label`] with short dtype names (`f16/i64`).
fn column_short_label(spec: &OpSpec, column: usize) -> String {
    let mut label = spec.column_dtype(column).short_name().to_string();
    for (_, d) in spec.column_variant(column) {
        label.push('/');
        label.push_str(d.short_name());
    }
    label
}

pub(crate) fn shape_text(row: &Row) -> String {
    let first =
        row.shapes.first().map(|(_, s)| s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"));
    let first = first.unwrap_or_default();
    if row.origin == "sweep" {
        first
    } else {
        format!("{first} ({})", row.origin)
    }
}

/// The identity of one check of one row, as the known-misses list names it:
/// `op dtype shape target` (`rms_norm f16 4096x3584 (Qwen2-7B) bytes/min`).
pub fn check_key(row: &Row, check: &Check) -> String {
    format!("{} {} {} {}", row.op, row.label, shape_text(row), check.target)
}

/// A missed target accepted with its reason: the check's [`check_key`] and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownMiss {
    pub key: String,
    pub reason: String,
}

/// How many of the rows' missed checks the list accepts.
pub fn accepted_misses(rows: &[Row], accepted: &[KnownMiss]) -> usize {
    rows.iter()
        .flat_map(|r| r.checks.iter().map(move |c| (r, c)))
        .filter(|(r, c)| c.met == Some(false) && accepted.iter().any(|k| k.key == check_key(r, c)))
        .count()
}

/// The two tables: the fused kernel's counters and model, then fused vs eager.
pub fn tables(soc: &Soc, rows: &[Row]) -> String {
    let w = rows.iter().map(|r| r.op.len()).max().unwrap_or(2).max(2);
    let mut s = format!(
        "Fused kernels on the CPU twin ({}: {} vector cores, {:.0} GB/s HBM assumed, {:.1}/{:.1} GB/s MTE2/MTE3 per core)\n",
        soc.name,
        soc.vector_cores,
        soc.hbm_gbps,
        soc.gm_read_gbps_per_core(),
        soc.gm_write_gbps_per_core()
    );
    s.push_str(&format!(
        "{:<w$} {:<5} {:<30} {:<15} {:>8} {:>10} {:>9} {:>9} {:>6} {:>9} {:>18} {:>7} {:>9} {:<11} {:>5}\n",
        "op",
        "dtype",
        "shape",
        "plan",
        "cores",
        "GM bytes",
        "moved/min",
        "UB",
        "vec/el",
        "xfer",
        "main xfer",
        "dbl-buf",
        "fused µs",
        "bound",
        "roof"
    ));
    for r in rows {
        let main =
            r.main_stream.as_ref().map_or("-".to_string(), |(n, m)| format!("{} {n}", human_bytes(*m)));
        let (db, multi) = r.double_buffered_cores;
        s.push_str(&format!(
            "{:<w$} {:<5} {:<30} {:<15} {:>8} {:>10} {:>9.3} {:>9} {:>6.1} {:>9} {:>18} {:>7} {:>9} {:<11} {:>4.0}%\n",
            r.op,
            r.label,
            shape_text(r),
            r.plan,
            format!("{}/{}", r.cores_with_work, r.cores_launched),
            human_bytes(r.gm_bytes as f64),
            r.bytes_ratio,
            human_bytes(r.ub_high_water_bytes as f64),
            r.vector_elements_per_output_element,
            human_bytes(r.mean_transfer_bytes),
            main,
            if multi == 0 { "-".to_string() } else { format!("{db}/{multi}") },
            us(r.fused.total_us),
            r.fused.bound,
            100.0 * r.roofline_fraction
        ));
    }
    s.push_str(&cycle_table(rows, w));
    s.push_str(&scaled::notes(rows));
    s.push_str("\nFused vs eager PyTorch (same shapes; eager = sum over its kernels, same model)\n");
    s.push_str(&format!(
        "{:<w$} {:<5} {:<30} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:>8}\n",
        "op",
        "dtype",
        "shape",
        "fused GM",
        "eager GM",
        "traffic",
        "launches",
        "fused µs",
        "eager µs",
        "speedup"
    ));
    for r in rows {
        match &r.eager {
            Some(e) => s.push_str(&format!(
                "{:<w$} {:<5} {:<30} {:>10} {:>10} {:>7.2}x {:>9} {:>9} {:>9} {:>7.2}x\n",
                r.op,
                r.label,
                shape_text(r),
                human_bytes(r.gm_bytes as f64),
                human_bytes(e.bytes as f64),
                r.traffic_ratio.unwrap_or(0.0),
                format!("1 vs {}", e.launches),
                us(r.fused.total_us),
                us(e.estimate.total_us),
                r.speedup.unwrap_or(0.0)
            )),
            None => s.push_str(&format!(
                "{:<w$} {:<5} {:<30} {:>10}  no eager sequence: {}\n",
                r.op,
                r.label,
                shape_text(r),
                human_bytes(r.gm_bytes as f64),
                r.eager_missing.as_deref().unwrap_or("")
            )),
        }
    }
    s
}

/// The cycle model's table: time low/mid/high, HBM floor, vs eager, vs the CANN design.
fn cycle_table(rows: &[Row], w: usize) -> String {
    let mut s = format!(
        "\nCycle model (src/perf: the twin's event trace on S/V/MTE2/MTE3 queues; low/mid/high ends of the cycle table; \
         floor = minimum bytes at the HBM bandwidth + one launch, {} µs)\n",
        model::LAUNCH_OVERHEAD_US
    );
    s.push_str(&format!(
        "{:<w$} {:<5} {:<30} {:>8} {:>8} {:>8} {:>8} {:>6} {:<6} {:>9} {:>8} {:>9} {:>8}  {}\n",
        "op",
        "dtype",
        "shape",
        "low µs",
        "mid µs",
        "high µs",
        "floor µs",
        "xfloor",
        "bound",
        "eager µs",
        "vs eager",
        "CANN µs",
        "vs CANN",
        "CANN design"
    ));
    for r in rows {
        let Some(t) = r.time_us else {
            s.push_str(&format!(
                "{:<w$} {:<5} {:<30} no cycle model: {}\n",
                r.op,
                r.dtype.short_name(),
                shape_text(r),
                r.cycle_missing.as_deref().unwrap_or("")
            ));
            continue;
        };
        let opt = |v: Option<f64>, suffix: &str| v.map_or("-".to_string(), |v| format!("{}{suffix}", us(v)));
        let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}x"));
        s.push_str(&format!(
            "{:<w$} {:<5} {:<30} {:>8} {:>8} {:>8} {:>8} {:>5.2}x {:<6} {:>9} {:>8} {:>9} {:>8}  {}\n",
            r.op,
            r.dtype.short_name(),
            shape_text(r),
            us(t.low),
            us(t.mid),
            us(t.high),
            us(r.floor_us),
            if r.roofline_us > 0.0 { t.mid / r.floor_us } else { 0.0 },
            r.cycle.map_or("", |c| c.bound),
            opt(r.eager.as_ref().map(|e| e.estimate.total_us), ""),
            ratio(r.vs_eager),
            opt(r.cann.as_ref().map(|c| c.modelled.time_us.mid), ""),
            ratio(r.vs_cann),
            match &r.cann {
                Some(c) =>
                    format!("{} ({} launch{})", c.mode, c.launches, if c.launches == 1 { "" } else { "es" }),
                None => r.cann_missing.clone().unwrap_or_default(),
            }
        ));
    }
    s
}

/// Per target: rows met / missed / not applicable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetSummary {
    pub target: &'static str,
    pub met: usize,
    pub missed: usize,
    pub not_applicable: usize,
    /// `op dtype shape: detail` per missed row.
    pub misses: Vec<String>,
}

pub fn summarise(rows: &[Row]) -> Vec<TargetSummary> {
    let mut out: Vec<TargetSummary> = Vec::new();
    for r in rows {
        for c in &r.checks {
            let i = match out.iter().position(|t| t.target == c.target) {
                Some(i) => i,
                None => {
                    out.push(TargetSummary {
                        target: c.target,
                        met: 0,
                        missed: 0,
                        not_applicable: 0,
                        misses: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let t = &mut out[i];
            match c.met {
                Some(true) => t.met += 1,
                Some(false) => {
                    t.missed += 1;
                    t.misses.push(format!("{} {} {}: {}", r.op, r.label, shape_text(r), c.detail));
                }
                None => t.not_applicable += 1,
            }
        }
    }
    out
}

/// The targets section of the text report.
pub fn targets_text(summary: &[TargetSummary]) -> String {
    let mut s = String::from("\nTargets (issue #5)\n");
    for t in summary {
        s.push_str(&format!(
            "  {:<17} {} met, {} missed, {} not applicable\n",
            t.target, t.met, t.missed, t.not_applicable
        ));
        for m in &t.misses {
            s.push_str(&format!("      missed: {m}\n"));
        }
    }
    s
}

/// The chart's bars: per op, in the first dtype the report has for it, its model-shape rows
/// (else its largest sweep row).
pub fn chart_bars(rows: &[Row]) -> Vec<svg::Bar> {
    let mut ops: Vec<&str> = Vec::new();
    for r in rows {
        if !ops.contains(&r.op.as_str()) {
            ops.push(&r.op);
        }
    }
    let bar = |r: &Row| svg::Bar {
        label: format!("{} {} {}", r.op, r.label, shape_text(r)),
        fused_us: r.fused.total_us,
        eager_us: r.eager.as_ref().map(|e| e.estimate.total_us),
    };
    let mut bars = Vec::new();
    for op in ops {
        let Some(dtype) = rows.iter().find(|r| r.op == op).map(|r| r.dtype) else { continue };
        let same: Vec<&Row> = rows.iter().filter(|r| r.op == op && r.dtype == dtype).collect();
        let model: Vec<&Row> = same.iter().copied().filter(|r| r.origin != "sweep").collect();
        if model.is_empty() {
            bars.extend(same.iter().max_by_key(|r| r.min_bytes).map(|r| bar(r)));
        } else {
            bars.extend(model.into_iter().map(bar));
        }
    }
    bars
}

/// The model's constants, for the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct ModelConstants {
    pub launch_overhead_us: f64,
    pub hbm_gbps: f64,
    pub hbm_gbps_sourced: bool,
    pub gm_read_gbps_per_core: f64,
    pub gm_write_gbps_per_core: f64,
    pub vector_f32_elements_per_cycle: f64,
    pub clock_mhz: u32,
    pub large_transfer_bytes: f64,
    pub ub_plan_bytes: u64,
}

impl ModelConstants {
    pub fn of(soc: &Soc) -> ModelConstants {
        ModelConstants {
            launch_overhead_us: model::LAUNCH_OVERHEAD_US,
            hbm_gbps: soc.hbm_gbps,
            hbm_gbps_sourced: soc.hbm_gbps_sourced,
            gm_read_gbps_per_core: soc.gm_read_gbps_per_core(),
            gm_write_gbps_per_core: soc.gm_write_gbps_per_core(),
            vector_f32_elements_per_cycle: soc.vector_f32_per_cycle(),
            clock_mhz: soc.clock_mhz,
            large_transfer_bytes: model::LARGE_TRANSFER_BYTES,
            ub_plan_bytes: UB_PLAN_BYTES_A2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(10.0), "10 B");
        assert_eq!(human_bytes(16384.0), "16.0 KiB");
        assert_eq!(human_bytes(58.0 * 1024.0 * 1024.0), "58.0 MiB");
    }
}
