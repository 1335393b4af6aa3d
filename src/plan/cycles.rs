//! The cycle table of the simulator (`crate::perf::sim`). Every constant names its source; the ones
//! no public document gives are ranges: the report runs the simulation three times, with every
//! unknown at its `low` (fast), `mid` and `high` (slow) value, and prints the three times.
//!
//! Sources: the CANN 8.1 toolkit's `platform_config/Ascend910B2.ini` (`cube_freq`,
//! `vector_core_cnt`, `ub_size`, `[AICoreMemoryRates]`); `ONE_REPEAT_BYTE_SIZE` = 256 of the
//! AscendC headers (asc-devkit `impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h`); the
//! dav_c220 ReduceSum/ReduceMax implementation (same file: a vcadd/vcmax pass, a second pass over
//! the partial results, a scalar store, the V_S/S_V/S_MTE3 pairs); the hiascend Ascend C
//! performance guidance (transfers of 16 KiB and more reach peak; 32 B-aligned GM access can
//! fall to 70% of 512 B-aligned bandwidth). /work/shared/research/cann-kernels-design.md §4.

use crate::plan::soc::Soc;
use serde::Serialize;

/// Which end of every unknown's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Low,
    Mid,
    High,
}

pub const LEVELS: [Level; 3] = [Level::Low, Level::Mid, Level::High];

/// A range of an unknown constant: fast, middle, slow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Range {
    pub low: f64,
    pub mid: f64,
    pub high: f64,
}

impl Range {
    const fn new(low: f64, mid: f64, high: f64) -> Range {
        Range { low, mid, high }
    }
    pub fn at(&self, level: Level) -> f64 {
        match level {
            Level::Low => self.low,
            Level::Mid => self.mid,
            Level::High => self.high,
        }
    }
}

/// Vector APIs by cost class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum VecClass {
    /// One repeat per cycle: Add, Mul, Muls, Cast, Copy, Duplicate, Compare, Select, ...
    Simple,
    /// Exp, Ln, Sqrt, Rsqrt, Reciprocal, Div: a multi-cycle repeat.
    Transcendental,
    /// Level-2 ReduceSum/ReduceMax/ReduceMin: on dav_c220 two vector passes (vcadd/vcmax over
    /// the repeats, then over the partials) plus the scalar store (the hidden waits are in the
    /// trace apart).
    Reduce,
    /// WholeReduceSum/WholeReduceMax, BlockReduce*: the cross-lane reduction of each repeat.
    WholeReduce,
    /// Gather, GatherMask, Brcb: address-driven moves.
    Gather,
}

impl VecClass {
    pub fn of(api: &str) -> VecClass {
        match api {
            "Exp" | "Ln" | "Sqrt" | "Rsqrt" | "Reciprocal" | "Div" => VecClass::Transcendental,
            "ReduceSum" | "ReduceMax" | "ReduceMin" => VecClass::Reduce,
            a if a.starts_with("WholeReduce") || a.starts_with("BlockReduce") => VecClass::WholeReduce,
            "Gather" | "GatherMask" | "Brcb" => VecClass::Gather,
            _ => VecClass::Simple,
        }
    }
}

/// `ONE_REPEAT_BYTE_SIZE`: one vector repeat is 256 bytes (64 float32, 128 fp16 lanes).
pub const REPEAT_BYTES: f64 = 256.0;
/// Hardware vector instructions of a level-2 ReduceSum/ReduceMax on dav_c220 (two reduction
/// passes and the scalar store; kernel_operator_vec_reduce_impl.h `ReduceSumImpl`).
pub const REDUCE_INSTRUCTIONS: f64 = 2.0;

/// One column of the table: every constant at one level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Costs {
    pub level: Level,
    /// Clock (cycles per µs): .ini `cube_freq`.
    pub clock_mhz: f64,
    pub vector_cores: u32,
    /// Vector occupancy of an instruction beyond its repeats (issue, mask and address set-up).
    pub v_issue_cycles: f64,
    /// Vector pipeline depth: an instruction completes this long after its last repeat issued;
    /// a PipeBarrier<PIPE_V> or a V→other flag exposes it.
    pub v_latency_cycles: f64,
    /// Cycles per repeat by class (Simple is 1).
    pub cpr_transcendental: f64,
    pub cpr_reduce: f64,
    pub cpr_gather: f64,
    /// Scalar-unit cycles to issue one instruction of any pipe (address arithmetic, loop).
    pub s_issue_cycles: f64,
    /// Scalar cycles per scalar UB access and per scalar GM access (through the data cache).
    pub s_ub_cycles: f64,
    pub s_gm_cycles: f64,
    /// A flag's set-to-wait latency (SetFlag/WaitFlag, queue hand-offs, an API's inner pairs).
    pub flag_latency_cycles: f64,
    /// A transfer costs its bytes plus this many bytes' worth of time: efficiency
    /// size/(size + s0), near peak from 16 KiB.
    pub dma_setup_bytes: f64,
    /// Extra cycles per burst of a multi-block transfer.
    pub dma_burst_cycles: f64,
    /// Bandwidth factor of transfers not 512 B-aligned in GM (0.7 is the official worst case).
    pub unaligned_efficiency: f64,
    /// GM latency: a transfer completes this long after its last byte left the engine.
    pub gm_latency_cycles: f64,
    /// Per-core engine rates, bytes per cycle: .ini `ddr_read_rate` (MTE2 from HBM),
    /// `l2_read_rate` (MTE2 hits in L2), `ub_to_ddr_rate` or `ddr_write_rate` (MTE3).
    pub mte2_bytes_per_cycle: f64,
    pub l2_bytes_per_cycle: f64,
    pub mte3_bytes_per_cycle: f64,
    /// HBM bandwidth (GB/s, src/plan/soc.rs; an assumption there) and the fraction sustained.
    pub hbm_gbps: f64,
    pub hbm_efficiency: f64,
    /// Device-side cost of a launch, µs.
    pub launch_us: f64,
}

/// The unknowns' ranges (assumptions unless a source is named).
pub mod ranges {
    use super::Range;
    /// Assumption: a few cycles of issue per instruction.
    pub const V_ISSUE: Range = Range::new(1.0, 2.0, 4.0);
    /// research §4 `L_v`: 8–40 cycles per instruction or barrier drain.
    pub const V_LATENCY: Range = Range::new(8.0, 16.0, 40.0);
    /// research §4 `cpr_exp`, `cpr_div`, `cpr_reduce`, `cpr_gather`: 1–4 cycles per repeat.
    pub const CPR_TRANSCENDENTAL: Range = Range::new(1.0, 2.0, 4.0);
    pub const CPR_REDUCE: Range = Range::new(1.0, 2.0, 4.0);
    pub const CPR_GATHER: Range = Range::new(1.0, 2.0, 4.0);
    /// research §4 `c_scalar`: 5–20 cycles per scalar step.
    pub const S_ISSUE: Range = Range::new(5.0, 10.0, 20.0);
    pub const S_UB: Range = Range::new(5.0, 10.0, 20.0);
    /// Assumption: a scalar GM read is a cache miss to HBM most of the time.
    pub const S_GM: Range = Range::new(100.0, 250.0, 500.0);
    /// research §4 `L_vs`: a scalar↔vector round trip of 30–120 cycles.
    pub const FLAG_LATENCY: Range = Range::new(30.0, 60.0, 120.0);
    /// research §4 MTE efficiency `size/(size + s0)`, s0 ≈ 1–4 KiB (≥ 16 KiB near peak).
    pub const DMA_SETUP_BYTES: Range = Range::new(1024.0, 2048.0, 4096.0);
    /// Calibrated (docs/calibration.md): CANN SwiGlu with half rows < 512 B (a DMA block per
    /// row) measures 41–48 cycles per block if its copies' blocks were serial, ~71 if MTE2's two
    /// thirds of them set the time; 30/50/70 brackets that (it was an assumed 0/4/8).
    pub const DMA_BURST: Range = Range::new(30.0, 50.0, 70.0);
    /// hiascend: 32 B- against 512 B-aligned GM access down to 70%.
    pub const UNALIGNED: Range = Range::new(1.0, 0.85, 0.7);
    /// Assumption: 170–560 ns of HBM latency.
    pub const GM_LATENCY: Range = Range::new(300.0, 600.0, 1000.0);
    /// .ini `ub_to_ddr_rate=64` against `ddr_write_rate=32`; which one MTE3 obeys is unknown.
    pub const MTE3_RATE: Range = Range::new(64.0, 64.0, 32.0);
    /// Assumption: sustained HBM traffic below the (itself assumed) peak; research §4: 85–90%.
    pub const HBM_EFFICIENCY: Range = Range::new(0.95, 0.9, 0.8);
    /// Calibrated (docs/calibration.md): the smallest measured CANN kernels (SwiGlu 3x7x13x1018
    /// f32, 1 MB; RmsNorm 11x13x17x67 f16, 0.3 MB) take 9.6–10.9 µs, their work ~2 µs (it was
    /// an assumed 2/3/5).
    pub const LAUNCH_US: Range = Range::new(5.0, 8.0, 11.0);
}

/// .ini `l2_read_rate=110`.
pub const L2_READ_BYTES_PER_CYCLE: f64 = 110.0;

impl Costs {
    pub fn of(soc: &Soc, level: Level) -> Costs {
        use ranges::*;
        Costs {
            level,
            clock_mhz: f64::from(soc.clock_mhz),
            vector_cores: soc.vector_cores,
            v_issue_cycles: V_ISSUE.at(level),
            v_latency_cycles: V_LATENCY.at(level),
            cpr_transcendental: CPR_TRANSCENDENTAL.at(level),
            cpr_reduce: CPR_REDUCE.at(level),
            cpr_gather: CPR_GATHER.at(level),
            s_issue_cycles: S_ISSUE.at(level),
            s_ub_cycles: S_UB.at(level),
            s_gm_cycles: S_GM.at(level),
            flag_latency_cycles: FLAG_LATENCY.at(level),
            dma_setup_bytes: DMA_SETUP_BYTES.at(level),
            dma_burst_cycles: DMA_BURST.at(level),
            unaligned_efficiency: UNALIGNED.at(level),
            gm_latency_cycles: GM_LATENCY.at(level),
            mte2_bytes_per_cycle: f64::from(soc.gm_read_bytes_per_cycle),
            l2_bytes_per_cycle: L2_READ_BYTES_PER_CYCLE,
            mte3_bytes_per_cycle: MTE3_RATE.at(level).min(f64::from(soc.gm_write_bytes_per_cycle)),
            hbm_gbps: soc.hbm_gbps,
            hbm_efficiency: HBM_EFFICIENCY.at(level),
            launch_us: LAUNCH_US.at(level),
        }
    }

    /// Vector occupancy of one instruction of `elements` (counted as float32: the twin does not
    /// record the dtype, and the kernels here compute in float32), and its instruction count.
    pub fn vector_cycles(&self, class: VecClass, elements: u64) -> (f64, f64) {
        let repeats = (elements as f64 * 4.0 / REPEAT_BYTES).ceil().max(1.0);
        let (cpr, instructions) = match class {
            VecClass::Simple => (1.0, 1.0),
            VecClass::Transcendental => (self.cpr_transcendental, 1.0),
            VecClass::Reduce => (self.cpr_reduce, REDUCE_INSTRUCTIONS),
            VecClass::WholeReduce => (self.cpr_reduce, 1.0),
            VecClass::Gather => (self.cpr_gather, 1.0),
        };
        (repeats * cpr + instructions * self.v_issue_cycles, instructions)
    }

    pub fn cycles_to_us(&self, cycles: f64) -> f64 {
        cycles / self.clock_mhz
    }

    /// The sustained HBM bandwidth in bytes per cycle.
    pub fn hbm_bytes_per_cycle(&self) -> f64 {
        self.hbm_gbps * 1e9 * self.hbm_efficiency / (self.clock_mhz * 1e6)
    }
}
