//! Model shapes too large for the twin, timed from smaller runs at the same row length.
//!
//! The token log-prob's logits are [4096..16384, 151936]: 0.6 to 2.5 G elements, minutes and
//! gigabytes per run on the twin. Where the family says a launch depends on its shape only
//! through the rows each core gets (`FamilyOps::rows_scale`: independent rows, blocks of
//! ceil(rows / cores), every row the same program), the report runs the real row length with
//! k, k + 2 and k + 4 rows on every core (k = 3 or 4, the parity of the real busiest core's R
//! rows: a double-buffered loop repeats its buffer pattern every two rows when a row has an
//! odd number of tiles; not 1 or 2: a core's fill and drain, the first tile's copy-in and the
//! last tile's compute and copy-out, can make a run of one or two rows core-bound where longer
//! runs are HBM-bound, and the larger of two affine times is not affine) and extends:
//!
//! - times (cycle model low/mid/high, the roofline estimate) to R rows per core on *every* core,
//!   after checking that the three runs are affine in k (the two steps of the mid time agree
//!   within [`LINEAR_TOLERANCE`], of the low and high ends within [`LINEAR_TOLERANCE_ENDS`];
//!   otherwise the row fails with both steps). Uneven splits give the
//!   last core fewer rows, which frees HBM bandwidth for the others: the figure is an upper
//!   bound. A core's rows are finished in groups (≤ 256 rows); the proxies have one group, the
//!   real shape one or two, whose few-KiB row-result writes the extension leaves out;
//! - counts (bytes, transfers, vector calls, waits) to the real N rows, affine in rows;
//! - eager and the CANN design are modelled at the real shape directly (no twin run).
//!
//! The UB check is not judged on a scaled row (a core's row-result buffers grow with the
//! group), per-core counters are not given, and the row's tiling fields are its last proxy's
//! (`rows`, `blockFactor` and `rowsPerGroup` of k + 4 rows per core).

use super::{Check, ReportCase, Row};
use crate::perf::sim::LaunchTime;
use crate::perf::Times;
use crate::plan::soc::Soc;
use crate::spec::OpSpec;
use serde::Serialize;
use std::collections::BTreeMap;

/// Model cases whose largest input has more elements than this run scaled, where the family
/// allows (2^26: a [4096, 151936] float32 logits is 2.5 GB on the host, several times over).
pub const SCALE_ABOVE_ELEMENTS: u64 = 1 << 26;
/// The two steps of the three runs' mid times (the figure the targets judge) may differ by this
/// fraction of the second: a slope error of δ is an error of about δ in the extended time.
pub const LINEAR_TOLERANCE: f64 = 0.005;
/// The same for the low and high ends: HBM-bound runs vary by ~0.3% of their time there (the
/// simulator's engine-cap bisection), which is 1–2% of a step (logprob_entropy_grad bf16 high
/// ends, steps of two rows per core from 2 to 8: 52.06, 51.04, 51.91 µs).
pub const LINEAR_TOLERANCE_ENDS: f64 = 0.03;

/// How a scaled row was made (in the JSON, and one line under the cycle table).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// Rows per core of the three twin runs.
    pub proxy_rows_per_core: [u64; 3],
    /// The busiest core's rows at the real shape, and the cores with rows.
    pub busiest_core_rows: u64,
    pub cores_with_rows: u64,
    /// Mid µs per row per core (the extension's slope), and the two steps' relative difference
    /// at mid and the larger of the low and high ends' (the extension's uncertainty).
    pub mid_us_per_row: f64,
    pub step_difference: f64,
    pub ends_step_difference: f64,
}

/// The scaling of one model case: its real rows and the proxies' rows per core.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub rows: u64,
    pub row_len: usize,
    pub cores: u64,
    pub busiest: u64,
    pub used: u64,
    pub per_core: [u64; 3],
}

impl Plan {
    /// The plan of `case`, or `None` when it runs whole: not a model case, not larger than
    /// [`SCALE_ABOVE_ELEMENTS`], or a family that does not scale by rows.
    pub fn of(soc: &Soc, spec: &OpSpec, case: &ReportCase) -> Option<Plan> {
        if !case.is_model()
            || case.largest_input() <= SCALE_ABOVE_ELEMENTS
            || !crate::family::ops(spec.family).rows_scale(spec)
        {
            return None;
        }
        let first = &case.shapes.first()?.1;
        let row_len = *first.last()?;
        let rows = first[..first.len() - 1].iter().product::<usize>() as u64;
        let cores = u64::from(soc.vector_cores);
        let shares = crate::perf::cann::block_split(rows, cores);
        let busiest = shares.first().copied().unwrap_or(0);
        let per_core = proxy_rows_per_core(busiest)?;
        Some(Plan { rows, row_len, cores, busiest, used: shares.len() as u64, per_core })
    }

    /// The three twin runs: `cores · k` rows of the real row length.
    pub fn proxies(&self, spec: &OpSpec, case: &ReportCase) -> Vec<ReportCase> {
        self.per_core
            .iter()
            .map(|k| {
                let first = vec![(self.cores * k) as usize, self.row_len];
                ReportCase {
                    origin: format!("{}, proxy {k} rows/core", case.origin),
                    shapes: crate::verify::sweep::shapes_from_first(spec, &first, &[]),
                    attrs: case.attrs.clone(),
                }
            })
            .collect()
    }

    /// Elements of the largest input the twin runs.
    pub fn twin_elements(&self) -> u64 {
        self.cores * self.per_core[2] * self.row_len as u64
    }
}

/// Rows per core of the three runs for a busiest core of `busiest` rows: k, k + 2, k + 4 with
/// k of `busiest`'s parity (3 or 4), so R − k is a whole number of two-row periods; `None` when R
/// is not past the runs (the shape is small enough to run whole). Not from 1 or 2 rows: there a
/// core's fill and drain can make the run core-bound where the longer runs are HBM-bound
/// (logprob_entropy_grad 16-bit at 151936: 48.98/89.04/129.55 µs mid at 2/4/6 rows, the 4 and
/// 6 at the HBM time and the 2 above it, steps 1.1% apart).
pub fn proxy_rows_per_core(busiest: u64) -> Option<[u64; 3]> {
    let k = if busiest % 2 == 0 { 4 } else { 3 };
    (busiest > k + 4).then_some([k, k + 2, k + 4])
}

/// Why a model shape's row could not be scaled from its proxies.
#[derive(Debug, Clone, PartialEq)]
pub enum ScaleError {
    /// The three runs are not affine in rows per core: what was timed, its times (µs) at the
    /// rows per core, and the steps' relative difference against the tolerance.
    NotAffine { what: &'static str, times: [f64; 3], rows: [u64; 3], diff: f64, tolerance: f64 },
    /// Not three proxy rows (how many there were).
    ProxyCount(usize),
    /// A proxy row lacks a figure the extension needs (which, and why where known).
    Missing(String),
    /// A proxy case did not run on the twin: its shape and the error.
    Proxy { shape: String, error: String },
}

impl std::fmt::Display for ScaleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScaleError::NotAffine { what, times: t, rows: k, diff, tolerance } => write!(
                f,
                "{what} is not affine in rows per core: {:.2}/{:.2}/{:.2} µs at {}/{}/{} rows per core (steps {:.2} and {:.2} µs differ by {:.2}% > {:.1}%)",
                t[0],
                t[1],
                t[2],
                k[0],
                k[1],
                k[2],
                t[1] - t[0],
                t[2] - t[1],
                100.0 * diff,
                100.0 * tolerance
            ),
            ScaleError::ProxyCount(n) => write!(f, "{n} proxy rows, want 3"),
            ScaleError::Missing(what) => f.write_str(what),
            ScaleError::Proxy { shape, error } => write!(f, "proxy {shape}: {error}"),
        }
    }
}

impl std::error::Error for ScaleError {}

/// The relative difference of the two steps of `t` (times at rows per core `k`), or why the
/// three are not affine.
pub fn steps_agree(what: &'static str, t: [f64; 3], k: [u64; 3], tolerance: f64) -> Result<f64, ScaleError> {
    let (d1, d2) = (t[1] - t[0], t[2] - t[1]);
    let diff = if d2 > 0.0 { (d2 - d1).abs() / d2 } else { f64::INFINITY };
    if diff > tolerance || (k[1] - k[0]) != (k[2] - k[1]) {
        return Err(ScaleError::NotAffine { what, times: t, rows: k, diff, tolerance });
    }
    Ok(diff)
}

/// Affine extension from the runs at `x1` and `x2` (values `y1`, `y2`) to `x`.
fn extend(y1: f64, y2: f64, x1: u64, x2: u64, x: u64) -> f64 {
    y2 + (x as f64 - x2 as f64) * (y2 - y1) / (x2 as f64 - x1 as f64)
}

/// A launch's times extended by `time` (the bound and the launch overhead as the last run's).
fn extend_launch(l1: &LaunchTime, l2: &LaunchTime, time: &dyn Fn(f64, f64) -> f64) -> LaunchTime {
    LaunchTime {
        total_us: time(l1.total_us, l2.total_us),
        core_us: time(l1.core_us, l2.core_us),
        hbm_us: time(l1.hbm_us, l2.hbm_us),
        launch_us: l2.launch_us,
        busiest: std::array::from_fn(|i| time(l1.busiest[i], l2.busiest[i])),
        scalar_blocked_us: time(l1.scalar_blocked_us, l2.scalar_blocked_us),
        bound: l2.bound,
    }
}

/// The scaled row of `case` from its proxies' rows (in the plan's order), or why not.
pub fn combine(
    soc: &Soc,
    spec: &OpSpec,
    column: usize,
    case: &ReportCase,
    plan: &Plan,
    proxies: &[Row],
) -> Result<Row, ScaleError> {
    let [a, b, c] = proxies else { return Err(ScaleError::ProxyCount(proxies.len())) };
    let (ta, tb, tc) = match (a.time_us, b.time_us, c.time_us) {
        (Some(ta), Some(tb), Some(tc)) => (ta, tb, tc),
        _ => {
            return Err(ScaleError::Missing(format!(
                "a proxy has no cycle-model time: {}",
                c.cycle_missing.clone().unwrap_or_default()
            )))
        }
    };
    let [_, k1, k2] = plan.per_core;
    let mid_diff = steps_agree("the mid time", [ta.mid, tb.mid, tc.mid], plan.per_core, LINEAR_TOLERANCE)?;
    let mut ends_diff = 0.0f64;
    for (name, t) in
        [("the low time", [ta.low, tb.low, tc.low]), ("the high time", [ta.high, tb.high, tc.high])]
    {
        ends_diff = ends_diff.max(steps_agree(name, t, plan.per_core, LINEAR_TOLERANCE_ENDS)?);
    }
    let r = plan.busiest;
    let time = |y1: f64, y2: f64| extend(y1, y2, k1, k2, r);
    let (n1, n2) = (plan.cores * k1, plan.cores * k2);
    let count = |y1: u64, y2: u64| extend(y1 as f64, y2 as f64, n1, n2, plan.rows).round().max(0.0) as u64;
    let pair = |p1: (u64, u64), p2: (u64, u64)| (count(p1.0, p2.0), count(p1.1, p2.1));
    let map = |m1: &BTreeMap<String, u64>, m2: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        m2.iter().map(|(k, v)| (k.clone(), count(m1.get(k).copied().unwrap_or(0), *v))).collect()
    };

    let mut row = c.clone();
    row.origin = case.origin.clone();
    row.shapes = case.shapes.clone();
    row.cores_launched = plan.used;
    row.cores_with_work = plan.used;
    row.work_units = super::work_units(spec, &case.shapes);
    row.gm_bytes = count(b.gm_bytes, c.gm_bytes);
    row.min_bytes = count(b.min_bytes, c.min_bytes);
    row.bytes_ratio = if row.min_bytes == 0 { 1.0 } else { row.gm_bytes as f64 / row.min_bytes as f64 };
    for (name, t) in row.tensors.iter_mut() {
        let Some(t1) = b.tensors.get(name) else { continue };
        let t2 = *t;
        t.min_bytes = count(t1.min_bytes, t2.min_bytes);
        t.traffic.read_bytes = count(t1.traffic.read_bytes, t2.traffic.read_bytes);
        t.traffic.write_bytes = count(t1.traffic.write_bytes, t2.traffic.write_bytes);
        t.traffic.read_transfers = count(t1.traffic.read_transfers, t2.traffic.read_transfers);
        t.traffic.write_transfers = count(t1.traffic.write_transfers, t2.traffic.write_transfers);
        t.traffic.cores = t.traffic.cores.min(plan.used);
    }
    let moved = |r: &Row| (r.mean_transfer_bytes * r.transfers as f64).round() as u64;
    row.transfers = count(b.transfers, c.transfers);
    row.mean_transfer_bytes =
        if row.transfers == 0 { 0.0 } else { count(moved(b), moved(c)) as f64 / row.transfers as f64 };
    row.main_stream = c.main_stream.as_ref().map(|(name, mean)| {
        let t = row.tensors.get(name).map(|t| t.traffic);
        let mean = t.filter(|t| t.transfers() > 0).map_or(*mean, |t| t.bytes() as f64 / t.transfers() as f64);
        (name.clone(), mean)
    });
    row.copy_ins_overlapped = pair(b.copy_ins_overlapped, c.copy_ins_overlapped);
    row.vector = c
        .vector
        .iter()
        .map(|(k, v)| (k.clone(), pair(b.vector.get(k).copied().unwrap_or_default(), *v)))
        .collect();
    row.scalar_gm_accesses = count(b.scalar_gm_accesses, c.scalar_gm_accesses);
    row.scalar_ub_accesses = count(b.scalar_ub_accesses, c.scalar_ub_accesses);
    row.flag_waits = map(&b.flag_waits, &c.flag_waits);
    row.hidden_flag_waits = map(&b.hidden_flag_waits, &c.hidden_flag_waits);
    let (f1, f2) = (&b.fused, &c.fused);
    row.fused.hbm_us = time(f1.hbm_us, f2.hbm_us);
    row.fused.core_us = time(f1.core_us, f2.core_us);
    row.fused.mte_in_us = time(f1.mte_in_us, f2.mte_in_us);
    row.fused.mte_out_us = time(f1.mte_out_us, f2.mte_out_us);
    row.fused.vector_us = time(f1.vector_us, f2.vector_us);
    row.fused.total_us = time(f1.total_us, f2.total_us);
    row.roofline_us = super::model::roofline_us(soc, row.min_bytes);
    row.floor_us = super::model::floor_us(soc, row.min_bytes);
    row.roofline_fraction = if row.fused.total_us > 0.0 { row.roofline_us / row.fused.total_us } else { 0.0 };
    let (eager, eager_missing) = super::eager_row(soc, spec, column, &case.shapes, None);
    row.traffic_ratio =
        eager.as_ref().filter(|_| row.gm_bytes > 0).map(|e| e.bytes as f64 / row.gm_bytes as f64);
    row.launch_ratio = eager.as_ref().map(|e| f64::from(e.launches));
    row.speedup = eager.as_ref().map(|e| e.estimate.total_us / row.fused.total_us);
    row.eager = eager;
    row.eager_missing = eager_missing;
    row.time_us =
        Some(Times { low: time(tb.low, tc.low), mid: time(tb.mid, tc.mid), high: time(tb.high, tc.high) });
    row.cycle = match (b.cycle, c.cycle) {
        (Some(l1), Some(l2)) => Some(extend_launch(&l1, &l2, &time)),
        _ => None,
    };
    row.cores = Vec::new();
    row.vs_eager = None;
    row.vs_cann = None;
    // The CANN design's rows are as independent (its split is even at cores · k rows): the same
    // extension from the proxies' designs, checked the same way.
    row.cann = match (&b.cann, &c.cann) {
        (Some(c1), Some(c2)) => {
            let c0 = a
                .cann
                .as_ref()
                .ok_or_else(|| ScaleError::Missing("the first proxy has no CANN design".into()))?;
            let t = [c0.modelled.time_us.mid, c1.modelled.time_us.mid, c2.modelled.time_us.mid];
            steps_agree("the CANN design's mid time", t, plan.per_core, LINEAR_TOLERANCE)?;
            let (m1, m2) = (&c1.modelled, &c2.modelled);
            let mut cann = c2.clone();
            cann.modelled.time_us = Times {
                low: time(m1.time_us.low, m2.time_us.low),
                mid: time(m1.time_us.mid, m2.time_us.mid),
                high: time(m1.time_us.high, m2.time_us.high),
            };
            cann.modelled.mid = extend_launch(&m1.mid, &m2.mid, &time);
            Some(cann)
        }
        _ => None,
    };
    row.cann_missing = c.cann_missing.clone();
    let dtype = spec.column_dtype(column);
    let reading = crate::family::ops(spec.family).read_plan(spec, &|n| row.tiling.get(n).copied(), dtype);
    row.checks = super::checks(spec, &row, soc, &reading);
    for check in row.checks.iter_mut().filter(|ch| ch.target == "UB") {
        *check = Check::new(
            "UB",
            None,
            format!(
                "scaled row: the proxies' {} is not the real group's",
                super::kib(c.ub_high_water_bytes as f64)
            ),
        );
    }
    row.scaled = Some(Scaling {
        proxy_rows_per_core: plan.per_core,
        busiest_core_rows: r,
        cores_with_rows: plan.used,
        mid_us_per_row: (tc.mid - tb.mid) / (k2 - k1) as f64,
        step_difference: mid_diff,
        ends_step_difference: ends_diff,
    });
    super::attach_cann_and_time_targets(&mut row, soc, spec, column);
    Ok(row)
}

/// One line per scaled row: the method and its figures.
pub fn notes(rows: &[Row]) -> String {
    let mut s = String::new();
    for r in rows {
        let Some(sc) = &r.scaled else { continue };
        if s.is_empty() {
            s.push_str(
                "\nScaled rows (src/report/scaled.rs): the twin ran the real row length with k, k+2, k+4 rows on every core; times extended to the busiest core's rows on every core (an upper bound), counts to the real rows\n",
            );
        }
        let [k0, k1, k2] = sc.proxy_rows_per_core;
        s.push_str(&format!(
            "  {} {} {}: proxies {k0}/{k1}/{k2} rows per core, {} rows on the busiest of {} cores, {:.3} µs per row (mid), steps differ by {:.2}% (mid), {:.2}% (low/high)\n",
            r.op,
            r.label,
            super::shape_text(r),
            sc.busiest_core_rows,
            sc.cores_with_rows,
            sc.mid_us_per_row,
            100.0 * sc.step_difference,
            100.0 * sc.ends_step_difference
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_keep_the_busiest_cores_parity() {
        // 4096 rows on 48 cores: 86 on the busiest; 8192: 171.
        assert_eq!(proxy_rows_per_core(86), Some([4, 6, 8]));
        assert_eq!(proxy_rows_per_core(171), Some([3, 5, 7]));
        assert_eq!(proxy_rows_per_core(8), None);
        assert_eq!(proxy_rows_per_core(9), Some([3, 5, 7]));
        assert_eq!(proxy_rows_per_core(10), Some([4, 6, 8]));
    }

    /// Mid times the twin gave logprob_entropy bf16 at 48·k x 151936 (k = 1..5): one row at a
    /// time is not affine (a two-row period), every second row is.
    #[test]
    fn steps_of_a_two_row_period_are_refused_and_same_parity_steps_pass() {
        let mid = [41.925, 78.816, 116.758, 153.649, 191.591];
        let err = steps_agree("the mid time", [mid[0], mid[1], mid[2]], [1, 2, 3], LINEAR_TOLERANCE)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not affine") && err.contains("1/2/3"), "{err}");
        assert!(
            steps_agree("the mid time", [mid[0], mid[2], mid[4]], [1, 3, 5], LINEAR_TOLERANCE).unwrap()
                < 1e-3
        );
        assert!(steps_agree("t", [1.0, 2.0, 3.0], [1, 3, 4], LINEAR_TOLERANCE).is_err(), "unequal row steps");
    }

    #[test]
    fn extension_is_affine_through_both_points() {
        assert_eq!(extend(10.0, 20.0, 1, 3, 3), 20.0);
        assert_eq!(extend(10.0, 20.0, 1, 3, 1), 10.0);
        // 5 per row from row 3: 86 rows → 20 + 83·5.
        assert_eq!(extend(10.0, 20.0, 1, 3, 86), 435.0);
    }
}
