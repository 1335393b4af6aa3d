//! The performance model of `opgen report`: exact counts from the twin (or the eager sequence's
//! byte counts) turned into an estimated device time on a SoC of src/plan/soc.rs. Every
//! constant is documented there and in ARCHITECTURE.md ("Performance model"); the model is a
//! roofline, not a simulator:
//!
//! - fused kernel: `max(GM bytes / HBM bandwidth, busiest core) + one launch`, where a core takes
//!   `max(MTE2, MTE3, vector)` plus one tile's worth of pipeline fill when the twin saw its
//!   multi-tile loop double-buffered, and `MTE2 + vector + MTE3` (nothing overlaps) otherwise;
//! - eager sequence: the sum over its kernels of `max(bytes / HBM, bytes spread evenly over every
//!   core's MTE, elements spread evenly over every core's vector unit) + one launch each` (each
//!   eager kernel is assumed perfectly parallel and perfectly overlapped: generous to eager);
//! - roofline bound: the op's minimum bytes (every input read once, every output written once) at
//!   the full HBM bandwidth, no launch cost. `fraction` = bound / modeled time.
//!
//! Not modelled: L2 hits (the 910B's 192 MiB L2 can serve an eager intermediate that fits it,
//! so eager figures are pessimistic there), DMA burst efficiency of small transfers (reported
//! as transfer sizes instead), scalar-unit time (scalar GM/UB accesses and flag waits are
//! reported), host-side dispatch (the seeds' problem; see the TilingFunc bench).

use super::counters::Launch;
use crate::family::{EagerSequence, EagerStep};
use crate::plan::soc::Soc;
use serde::Serialize;

/// Device-side cost of one kernel launch (launch, block scheduling, tail), µs: the cycle
/// table's calibrated middle (`ranges::LAUNCH_US`, docs/calibration.md: the smallest measured
/// CANN kernels take 9.6–10.9 µs). The same constant is charged to the fused kernel and to
/// every eager kernel, so it only matters where launches differ.
pub const LAUNCH_OVERHEAD_US: f64 = crate::plan::cycles::ranges::LAUNCH_US.mid;

/// Transfers below this size are flagged (the target of issue #5: large transfers); not a model
/// input.
pub const LARGE_TRANSFER_BYTES: f64 = 16.0 * 1024.0;

/// A modeled time and its parts, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Estimate {
    /// All GM bytes at the HBM bandwidth.
    pub hbm_us: f64,
    /// The busiest core (fused) or the per-core bound summed over kernels (eager).
    pub core_us: f64,
    /// That core's MTE2 (GM→UB), MTE3 (UB→GM) and vector times.
    pub mte_in_us: f64,
    pub mte_out_us: f64,
    pub vector_us: f64,
    /// Whether the busiest core's copies overlap its compute (double buffering seen).
    pub overlapped: bool,
    pub launches: u32,
    pub launch_us: f64,
    pub total_us: f64,
    /// What limits it: "HBM", "MTE2", "MTE3", "vector", "serial core" or "launch".
    pub bound: &'static str,
}

fn clock_hz(soc: &Soc) -> f64 {
    f64::from(soc.clock_mhz) * 1e6
}

fn hbm_us(soc: &Soc, bytes: f64) -> f64 {
    bytes / (soc.hbm_gbps * 1e9) * 1e6
}

/// The time of moving `bytes` through one core's MTE2 / MTE3, µs.
fn mte_in_us(soc: &Soc, bytes: f64) -> f64 {
    bytes / (f64::from(soc.gm_read_bytes_per_cycle) * clock_hz(soc)) * 1e6
}

fn mte_out_us(soc: &Soc, bytes: f64) -> f64 {
    bytes / (f64::from(soc.gm_write_bytes_per_cycle) * clock_hz(soc)) * 1e6
}

/// `elements` through one core's vector unit at 64 float32 lanes per cycle, µs. The twin's
/// element counts do not carry the dtype; counting every element as float32 overstates 16-bit
/// work by up to 2x (the kernels here compute in float32 anyway).
fn vector_us(soc: &Soc, elements: f64) -> f64 {
    elements / (soc.vector_f32_per_cycle() * clock_hz(soc)) * 1e6
}

/// The fused kernel of one launch, from the twin's counters.
pub fn fused(soc: &Soc, launch: &Launch) -> Estimate {
    let all_bytes: u64 = launch.traffic().values().map(|t| t.bytes()).sum();
    let mut est = Estimate { hbm_us: hbm_us(soc, all_bytes as f64), launches: 1, ..Estimate::default() };
    for core in &launch.cores {
        let t_in = mte_in_us(soc, core.transfer_in_bytes as f64);
        let t_out = mte_out_us(soc, core.transfer_out_bytes as f64);
        let t_vec = vector_us(soc, core.vector_elements_total() as f64);
        let serial = t_in + t_out + t_vec;
        let slowest = t_in.max(t_out).max(t_vec);
        let overlapped = core.double_buffered() == Some(true);
        // Pipelined: the slowest stage, plus one tile's share of the other stages (fill/drain).
        let t = if overlapped { slowest + (serial - slowest) / core.tiles() as f64 } else { serial };
        if t > est.core_us {
            est.core_us = t;
            est.mte_in_us = t_in;
            est.mte_out_us = t_out;
            est.vector_us = t_vec;
            est.overlapped = overlapped;
        }
    }
    est.launch_us = LAUNCH_OVERHEAD_US;
    est.total_us = est.hbm_us.max(est.core_us) + est.launch_us;
    est.bound = if est.hbm_us >= est.core_us {
        "HBM"
    } else if !est.overlapped {
        "serial core"
    } else if est.vector_us >= est.mte_in_us.max(est.mte_out_us) {
        "vector"
    } else if est.mte_in_us >= est.mte_out_us {
        "MTE2"
    } else {
        "MTE3"
    };
    if est.launch_us > est.hbm_us.max(est.core_us) {
        est.bound = "launch";
    }
    est
}

/// One eager kernel, spread perfectly over every vector core.
pub fn eager_step(soc: &Soc, step: &EagerStep) -> Estimate {
    let cores = f64::from(soc.vector_cores);
    let t_in = mte_in_us(soc, step.read_bytes as f64 / cores);
    let t_out = mte_out_us(soc, step.write_bytes as f64 / cores);
    let t_vec = vector_us(soc, step.elements as f64 / cores);
    let hbm = hbm_us(soc, (step.read_bytes + step.write_bytes) as f64);
    let core = t_in.max(t_out).max(t_vec);
    let launch_us = LAUNCH_OVERHEAD_US * f64::from(step.launches);
    let body = hbm.max(core);
    let bound = if launch_us > body {
        "launch"
    } else if hbm >= core {
        "HBM"
    } else if t_vec >= t_in.max(t_out) {
        "vector"
    } else if t_in >= t_out {
        "MTE2"
    } else {
        "MTE3"
    };
    Estimate {
        hbm_us: hbm,
        core_us: core,
        mte_in_us: t_in,
        mte_out_us: t_out,
        vector_us: t_vec,
        overlapped: true,
        launches: step.launches,
        launch_us,
        total_us: body + launch_us,
        bound,
    }
}

/// The eager sequence: its kernels one after another.
pub fn eager(soc: &Soc, seq: &EagerSequence) -> Estimate {
    let steps: Vec<Estimate> = seq.steps.iter().map(|s| eager_step(soc, s)).collect();
    let sum = |f: fn(&Estimate) -> f64| steps.iter().map(f).sum::<f64>();
    let mut est = Estimate {
        hbm_us: sum(|e| e.hbm_us),
        core_us: sum(|e| e.core_us),
        mte_in_us: sum(|e| e.mte_in_us),
        mte_out_us: sum(|e| e.mte_out_us),
        vector_us: sum(|e| e.vector_us),
        overlapped: true,
        launches: steps.iter().map(|e| e.launches).sum(),
        launch_us: sum(|e| e.launch_us),
        total_us: sum(|e| e.total_us),
        bound: "HBM",
    };
    let body = est.total_us - est.launch_us;
    est.bound = if est.launch_us > body {
        "launch"
    } else if est.hbm_us >= est.core_us {
        "HBM"
    } else {
        "core"
    };
    est
}

/// The roofline bound: `min_bytes` at the full HBM bandwidth, µs.
pub fn roofline_us(soc: &Soc, min_bytes: u64) -> f64 {
    hbm_us(soc, min_bytes as f64)
}

/// The time floor of a single-kernel op, µs: its minimum bytes at the full HBM bandwidth plus
/// the one launch every single-kernel implementation pays (the fused kernel, CANN's built-in;
/// the eager figures include theirs). Without the launch a small op could never come near its
/// floor however well its kernel streams (docs/calibration.md: 8 µs of launch is 22% of
/// rms_norm's 36.7 µs byte floor at 4096x3584).
pub fn floor_us(soc: &Soc, min_bytes: u64) -> f64 {
    roofline_us(soc, min_bytes) + LAUNCH_OVERHEAD_US
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::soc::find;
    use crate::report::counters::CoreCounters;

    fn core(in_bytes: u64, out_bytes: u64, elems: u64, total: u64, overlapped: u64) -> CoreCounters {
        CoreCounters {
            transfers_in: 1,
            transfer_in_bytes: in_bytes,
            transfer_out_bytes: out_bytes,
            gm_read_bytes: [("x".to_string(), in_bytes)].into(),
            gm_write_bytes: [("y".to_string(), out_bytes)].into(),
            vector_elements: [("Muls".to_string(), elems)].into(),
            copy_in_total: total,
            copy_in_overlapped: overlapped,
            copy_in_queues: 1,
            ..CoreCounters::default()
        }
    }

    #[test]
    fn a_big_fused_copy_is_hbm_bound_and_a_tiny_one_launch_bound() {
        let soc = find("Ascend910B2").unwrap();
        // 48 cores x 1.6 MB in and out, double-buffered over 100 tiles: 153.6 MB at 1.6 TB/s.
        let cores = (0..48).map(|_| core(1_600_000, 1_600_000, 400_000, 100, 99)).collect();
        let big = fused(soc, &Launch { block_dim: 48, tiling: Default::default(), cores });
        assert!(approx::abs_diff_eq!(big.hbm_us, 96.0, epsilon = 1e-6), "{big:?}");
        assert_eq!(big.bound, "HBM");
        approx::assert_abs_diff_eq!(big.total_us, 96.0 + LAUNCH_OVERHEAD_US, epsilon = 1e-6);
        // The calibrated launch (docs/calibration.md): 8 µs.
        approx::assert_abs_diff_eq!(LAUNCH_OVERHEAD_US, 8.0);
        let tiny = fused(
            soc,
            &Launch { block_dim: 1, tiling: Default::default(), cores: vec![core(64, 64, 16, 1, 0)] },
        );
        assert_eq!(tiny.bound, "launch");
    }

    #[test]
    fn without_double_buffering_a_core_is_serial() {
        let soc = find("Ascend910B2").unwrap();
        let one = |overlapped| {
            let launch = Launch {
                block_dim: 1,
                tiling: Default::default(),
                cores: vec![core(5_760_000, 0, 0, 10, overlapped)],
            };
            fused(soc, &launch)
        };
        // 5.76 MB through one core's MTE2 at 57.6 GB/s = 100 µs either way; nothing to overlap.
        approx::assert_abs_diff_eq!(one(9).mte_in_us, 100.0, epsilon = 1e-6);
        assert!(one(9).overlapped && !one(3).overlapped);
    }

    #[test]
    fn eager_sums_its_launches() {
        let soc = find("Ascend910B2").unwrap();
        let step =
            EagerStep { op: "mul".into(), launches: 1, read_bytes: 1_600_000, write_bytes: 0, elements: 0 };
        let seq = EagerSequence { source: "t".into(), steps: vec![step.clone(), step], notes: Vec::new() };
        let e = eager(soc, &seq);
        assert_eq!(e.launches, 2);
        assert!(approx::abs_diff_eq!(e.total_us, 2.0 * (1.0 + LAUNCH_OVERHEAD_US), epsilon = 1e-6), "{e:?}");
        approx::assert_abs_diff_eq!(roofline_us(soc, 1_600_000), 1.0, epsilon = 1e-9);
        // The floor: those bytes plus one launch of 8 µs.
        approx::assert_abs_diff_eq!(floor_us(soc, 1_600_000), 9.0, epsilon = 1e-9);
    }
}
