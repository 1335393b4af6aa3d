//! The per-core event simulation: four in-order queues, S (the scalar unit, which issues every
//! instruction in program order), V, MTE2 (GM→UB) and MTE3 (UB→GM).
//!
//! - An instruction of V/MTE2/MTE3 is issued when the scalar unit reaches it (after
//!   `s_issue_cycles`) and starts when its pipe is free and every flag its pipe waits for is set.
//!   It occupies its pipe for its cost; it *completes* later by the pipe's latency (vector pipeline
//!   depth, GM latency), which only a flag or a barrier exposes.
//! - `SetFlag<A_B>` is set when every instruction A had been given completed (or when the scalar
//!   unit issues it, for A = S), plus the flag latency; `WaitFlag<A_B>` holds back B's later
//!   instructions until then; for B = S it blocks the scalar unit, so nothing after it is issued
//!   (this is how the V_S wait inside ReduceSum defeats double buffering).
//! - `PipeBarrier<PIPE_X>`: X's next instruction waits for its earlier ones to complete;
//!   `PIPE_ALL`: the scalar unit waits for every pipe.
//! - Transfers share HBM: every engine moves HBM bytes at most at a common cap (bytes per cycle),
//!   the largest cap at which the launch's average HBM demand (all its HBM bytes over the slowest
//!   core's time) stays within the sustained bandwidth. Cores that are computing leave bandwidth
//!   to the ones that are copying, so a kernel that alternates copy and compute copies faster
//!   than a fair share of all cores, and a streaming one gets exactly the bandwidth. L2 hits move
//!   at the .ini L2 rate and take no HBM bandwidth.

use super::cycles::{Costs, Level, VecClass, LEVELS};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Pipe {
    S,
    V,
    Mte2,
    Mte3,
}

impl Pipe {
    pub fn parse(name: &str) -> Option<Pipe> {
        match name {
            "S" => Some(Pipe::S),
            "V" => Some(Pipe::V),
            "MTE2" => Some(Pipe::Mte2),
            "MTE3" => Some(Pipe::Mte3),
            _ => None,
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Dir {
    /// GM → UB (MTE2).
    In,
    /// UB → GM (MTE3).
    Out,
}

/// One step of a core's program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Vector {
        api: VecClass,
        elements: u64,
    },
    /// `l2_hit`: the fraction of the bytes served by L2 instead of HBM (for a write: the bytes
    /// that stay in L2, such as atomic adds into a small workspace).
    Dma {
        dir: Dir,
        bytes: u64,
        blocks: u64,
        aligned: bool,
        l2_hit: f64,
    },
    /// A scalar-unit step with its scalar UB and GM accesses.
    Scalar {
        gm: u64,
        ub: u64,
    },
    Set {
        from: Pipe,
        to: Pipe,
        key: i64,
    },
    Wait {
        from: Pipe,
        to: Pipe,
        key: i64,
    },
    /// A set/wait pair inside an API.
    Hidden {
        from: Pipe,
        to: Pipe,
    },
    /// `None`: PIPE_ALL.
    Barrier(Option<Pipe>),
}

/// A program the simulator cannot run.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// A WaitFlag whose SetFlag never came first (the twin refuses such kernels; a synthetic
    /// program can still have one).
    WaitWithoutSet { core: usize, index: usize, from: Pipe, to: Pipe, key: i64 },
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::WaitWithoutSet { core, index, from, to, key } => write!(
                f,
                "cycle model: core {core}, event {index}: WaitFlag<{from:?}_{to:?}> (key {key}) without an earlier SetFlag"
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// One core's simulated run, cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CoreTime {
    pub cycles: f64,
    /// Busy cycles of S, V, MTE2, MTE3.
    pub busy: [f64; 4],
    /// Cycles the scalar unit stood blocked at waits (flags, hidden pairs, PIPE_ALL).
    pub scalar_blocked: f64,
    pub hbm_bytes: f64,
}

/// The HBM bytes of a DMA op.
fn hbm_bytes(op: &Op) -> (f64, f64) {
    match op {
        Op::Dma { dir: Dir::In, bytes, l2_hit, .. } => (*bytes as f64 * (1.0 - l2_hit), 0.0),
        Op::Dma { dir: Dir::Out, bytes, l2_hit, .. } => (0.0, *bytes as f64 * (1.0 - l2_hit)),
        _ => (0.0, 0.0),
    }
}

/// Simulates one core whose engines move HBM bytes at most at `cap` bytes per cycle.
pub fn simulate_core(core: usize, ops: &[Op], c: &Costs, cap: f64) -> Result<CoreTime, SimError> {
    let (rd, wr) = ops.iter().map(hbm_bytes).fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let rate_in = c.mte2_bytes_per_cycle.min(cap);
    let rate_out = c.mte3_bytes_per_cycle.min(cap);
    let mut t = CoreTime { hbm_bytes: rd + wr, ..CoreTime::default() };
    let mut ts = 0.0f64;
    let mut free = [0.0f64; 4];
    let mut done = [0.0f64; 4];
    let mut flags: HashMap<(Pipe, Pipe, i64), VecDeque<f64>> = HashMap::new();
    // When a flag set now by `from` fires.
    let fire = |from: Pipe, ts: f64, done: &[f64; 4]| {
        let ready = if from == Pipe::S { ts } else { ts.max(done[from.index()]) };
        ready + c.flag_latency_cycles
    };
    for (index, op) in ops.iter().enumerate() {
        match op {
            Op::Vector { api, elements } => {
                ts += c.s_issue_cycles;
                let (cost, instructions) = c.vector_cycles(*api, *elements);
                let v = Pipe::V.index();
                let start = ts.max(free[v]);
                free[v] = start + cost;
                done[v] = done[v].max(free[v] + c.v_latency_cycles);
                let _ = instructions;
                t.busy[v] += cost;
            }
            Op::Dma { dir, bytes, blocks, aligned, l2_hit } => {
                ts += c.s_issue_cycles;
                let (p, rate) = match dir {
                    Dir::In => (Pipe::Mte2.index(), rate_in),
                    Dir::Out => (Pipe::Mte3.index(), rate_out),
                };
                let b = *bytes as f64;
                // Bytes served by L2: reads at the .ini L2 rate; writes that stay in L2 (atomic
                // adds into a small workspace) at the engine's own rate, outside the HBM share.
                let l2 = b * l2_hit;
                let l2_rate = if *dir == Dir::In { c.l2_bytes_per_cycle } else { c.mte3_bytes_per_cycle };
                let eff = if *aligned { 1.0 } else { c.unaligned_efficiency };
                let cost = ((b - l2) + c.dma_setup_bytes) / (rate * eff)
                    + l2 / l2_rate
                    + (*blocks as f64 - 1.0).max(0.0) * c.dma_burst_cycles;
                let start = ts.max(free[p]);
                free[p] = start + cost;
                done[p] = done[p].max(free[p] + c.gm_latency_cycles);
                t.busy[p] += cost;
            }
            Op::Scalar { gm, ub } => {
                let cost = c.s_issue_cycles + *ub as f64 * c.s_ub_cycles + *gm as f64 * c.s_gm_cycles;
                ts += cost;
                t.busy[Pipe::S.index()] += cost;
            }
            Op::Set { from, to, key } => {
                ts += c.s_issue_cycles;
                let at = fire(*from, ts, &done);
                flags.entry((*from, *to, *key)).or_default().push_back(at);
            }
            Op::Wait { from, to, key } => {
                ts += c.s_issue_cycles;
                let at = flags
                    .get_mut(&(*from, *to, *key))
                    .and_then(|q| q.pop_front())
                    .ok_or(SimError::WaitWithoutSet { core, index, from: *from, to: *to, key: *key })?;
                wait(*to, at, &mut ts, &mut free, &mut t);
            }
            Op::Hidden { from, to } => {
                let at = fire(*from, ts, &done);
                wait(*to, at, &mut ts, &mut free, &mut t);
            }
            Op::Barrier(Some(p)) => {
                let p = p.index();
                free[p] = free[p].max(done[p]);
            }
            Op::Barrier(None) => {
                let all = done.iter().chain(free.iter()).fold(ts, |a, b| a.max(*b));
                t.scalar_blocked += all - ts;
                ts = all;
                for f in free.iter_mut() {
                    *f = f.max(ts);
                }
            }
        }
    }
    t.cycles = done.iter().chain(free.iter()).fold(ts, |a, b| a.max(*b));
    Ok(t)
}

fn wait(to: Pipe, at: f64, ts: &mut f64, free: &mut [f64; 4], t: &mut CoreTime) {
    if to == Pipe::S {
        if at > *ts {
            t.scalar_blocked += at - *ts;
            *ts = at;
        }
    } else {
        let p = to.index();
        free[p] = free[p].max(at);
    }
}

/// One launch at one level of the cycle table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LaunchTime {
    pub total_us: f64,
    /// The slowest core.
    pub core_us: f64,
    /// All HBM bytes at the sustained bandwidth.
    pub hbm_us: f64,
    pub launch_us: f64,
    /// The slowest core's pipes (µs busy: S, V, MTE2, MTE3) and scalar blocked time.
    pub busiest: [f64; 4],
    pub scalar_blocked_us: f64,
    /// What limits it: "HBM", "V", "MTE2", "MTE3", "S", "sync" (the slowest core's critical
    /// path is none of its pipes' busy time) or "launch".
    pub bound: &'static str,
}

/// Every core at one cap: (all HBM bytes, the slowest core).
fn run_cores(cores: &[Vec<Op>], c: &Costs, cap: f64) -> Result<(f64, CoreTime), SimError> {
    let mut hbm = 0.0;
    let mut slowest = CoreTime::default();
    for (i, ops) in cores.iter().enumerate() {
        let t = simulate_core(i, ops, c, cap)?;
        hbm += t.hbm_bytes;
        if t.cycles > slowest.cycles {
            slowest = t;
        }
    }
    Ok((hbm, slowest))
}

/// Simulates a launch at the largest engine cap whose average HBM demand fits the sustained
/// bandwidth (bisection: the demand grows with the cap).
pub fn simulate_launch(cores: &[Vec<Op>], c: &Costs) -> Result<LaunchTime, SimError> {
    let bw = c.hbm_bytes_per_cycle();
    let top = c.mte2_bytes_per_cycle.max(c.mte3_bytes_per_cycle);
    let fits = |(hbm, t): &(f64, CoreTime)| t.cycles <= 0.0 || hbm / t.cycles <= bw * (1.0 + 1e-9);
    let mut best = run_cores(cores, c, top)?;
    // The engines were slowed until the launch's HBM demand fits: HBM is what limits it, even
    // where the bisection leaves the slowest core a hair above the HBM time.
    let throttled = !fits(&best);
    if throttled {
        let (mut lo, mut hi) = (0.0, top);
        // The fair share of every moving core always fits: start there.
        let moving =
            cores.iter().filter(|ops| ops.iter().any(|o| matches!(o, Op::Dma { .. }))).count().max(1);
        lo = f64::max(lo, bw / moving as f64 / 2.0);
        best = run_cores(cores, c, lo)?;
        for _ in 0..24 {
            let mid = 0.5 * (lo + hi);
            let r = run_cores(cores, c, mid)?;
            if fits(&r) {
                lo = mid;
                best = r;
            } else {
                hi = mid;
            }
            if hi - lo < 2e-3 * lo.max(1e-3) {
                break;
            }
        }
    }
    let (hbm, slowest) = best;
    let mut out = LaunchTime { launch_us: c.launch_us, ..LaunchTime::default() };
    out.core_us = c.cycles_to_us(slowest.cycles);
    out.hbm_us = c.cycles_to_us(hbm / c.hbm_bytes_per_cycle());
    out.busiest = slowest.busy.map(|b| c.cycles_to_us(b));
    out.scalar_blocked_us = c.cycles_to_us(slowest.scalar_blocked);
    let body = out.core_us.max(out.hbm_us);
    out.total_us = body + out.launch_us;
    let (pipe, busy) = ["S", "V", "MTE2", "MTE3"].into_iter().zip(out.busiest).fold(("S", 0.0), |a, b| {
        if b.1 > a.1 {
            b
        } else {
            a
        }
    });
    out.bound = if out.launch_us > body {
        "launch"
    } else if throttled || out.hbm_us >= out.core_us {
        "HBM"
    } else if busy >= 0.8 * out.core_us {
        pipe
    } else {
        "sync"
    };
    Ok(out)
}

/// A time at the three levels of the cycle table, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Times {
    pub low: f64,
    pub mid: f64,
    pub high: f64,
}

/// The launch at every level; `detail` is the mid level's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Modelled {
    pub time_us: Times,
    pub mid: LaunchTime,
}

impl Modelled {
    /// Several launches one after another (a two-kernel baseline).
    pub fn then(self, next: Modelled) -> Modelled {
        let t = |a: f64, b: f64| a + b;
        Modelled {
            time_us: Times {
                low: t(self.time_us.low, next.time_us.low),
                mid: t(self.time_us.mid, next.time_us.mid),
                high: t(self.time_us.high, next.time_us.high),
            },
            mid: LaunchTime {
                total_us: self.mid.total_us + next.mid.total_us,
                core_us: self.mid.core_us + next.mid.core_us,
                hbm_us: self.mid.hbm_us + next.mid.hbm_us,
                launch_us: self.mid.launch_us + next.mid.launch_us,
                ..self.mid
            },
        }
    }
}

/// Where a launch's outputs go when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Residency {
    /// Through to HBM: a launch inside a step, whose successor is another kernel (the report).
    Step,
    /// The same launch repeated alone, as a kernel benchmark times it (hicann/cann-bench, the
    /// calibration's points): when its input and output bytes fit 1.5 × the L2, its outputs
    /// stay in the L2 and are written back under the next repetition, so its writes cost the
    /// engine's time and no HBM share (docs/calibration.md: measured streams above the HBM peak).
    RepeatedAlone,
}

/// `cores` with every Out transfer an L2 write when `residency` keeps the launch's outputs in
/// the L2; `None` when nothing changes.
fn with_residency(
    cores: &[Vec<Op>],
    soc: &crate::plan::soc::Soc,
    residency: Residency,
) -> Option<Vec<Vec<Op>>> {
    let bytes: u64 =
        cores.iter().flatten().map(|o| if let Op::Dma { bytes, .. } = o { *bytes } else { 0 }).sum();
    if residency == Residency::Step || bytes as f64 > 1.5 * soc.l2_bytes as f64 {
        return None;
    }
    let in_l2 = |o: &Op| match *o {
        Op::Dma { dir: Dir::Out, bytes, blocks, aligned, .. } => {
            Op::Dma { dir: Dir::Out, bytes, blocks, aligned, l2_hit: 1.0 }
        }
        ref o => o.clone(),
    };
    Some(cores.iter().map(|ops| ops.iter().map(in_l2).collect()).collect())
}

/// The launch inside a step ([`Residency::Step`]).
pub fn model(cores: &[Vec<Op>], soc: &crate::plan::soc::Soc) -> Result<Modelled, SimError> {
    model_as(cores, soc, Residency::Step)
}

pub fn model_as(
    cores: &[Vec<Op>],
    soc: &crate::plan::soc::Soc,
    residency: Residency,
) -> Result<Modelled, SimError> {
    let changed = with_residency(cores, soc, residency);
    let cores = changed.as_deref().unwrap_or(cores);
    let mut out = Modelled::default();
    for level in LEVELS {
        let t = simulate_launch(cores, &Costs::of(soc, level))?;
        match level {
            Level::Low => out.time_us.low = t.total_us,
            Level::Mid => {
                out.time_us.mid = t.total_us;
                out.mid = t;
            }
            Level::High => out.time_us.high = t.total_us,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::soc::find;

    /// Costs where only sizes cost: a vector instruction of 64·k elements takes k cycles, a
    /// transfer of n bytes n cycles (1 B/cycle, no set-up, no latency), everything else 0.
    fn unit() -> Costs {
        Costs {
            v_issue_cycles: 0.0,
            v_latency_cycles: 0.0,
            s_issue_cycles: 0.0,
            s_ub_cycles: 0.0,
            s_gm_cycles: 0.0,
            flag_latency_cycles: 0.0,
            dma_setup_bytes: 0.0,
            dma_burst_cycles: 0.0,
            unaligned_efficiency: 1.0,
            gm_latency_cycles: 0.0,
            mte2_bytes_per_cycle: 1.0,
            mte3_bytes_per_cycle: 1.0,
            l2_bytes_per_cycle: 4.0,
            hbm_efficiency: 1.0,
            ..Costs::of(find("Ascend910B2").unwrap(), Level::Mid)
        }
    }

    const IN: i64 = 1_000_000;
    const OUT: i64 = 2_000_000;

    fn dma(dir: Dir, bytes: u64) -> Op {
        Op::Dma { dir, bytes, blocks: 1, aligned: true, l2_hit: 0.0 }
    }
    fn vec(cycles: u64) -> Op {
        Op::Vector { api: VecClass::Simple, elements: 64 * cycles }
    }
    fn set(from: Pipe, to: Pipe, key: i64) -> Op {
        Op::Set { from, to, key }
    }
    fn wait(from: Pipe, to: Pipe, key: i64) -> Op {
        Op::Wait { from, to, key }
    }

    /// The standard CopyIn / Compute / CopyOut loop over `n` tiles with `buffers` buffers per
    /// queue, as the queues' flag pairs make it: AllocTensor waits for the buffer's FreeTensor,
    /// EnQue/DeQue hand the tile to the next pipe. `inside` runs after the compute (e.g. the
    /// hidden V_S wait of a ReduceSum).
    fn pipeline(n: usize, buffers: usize, a: u64, b: u64, c: u64, inside: &[Op]) -> Vec<Op> {
        let mut ops = Vec::new();
        for i in 0..n {
            let k = (i % buffers) as i64;
            if i >= buffers {
                ops.push(wait(Pipe::V, Pipe::Mte2, IN + k));
            }
            ops.push(dma(Dir::In, a));
            ops.push(set(Pipe::Mte2, Pipe::V, IN + k));
            ops.push(wait(Pipe::Mte2, Pipe::V, IN + k));
            if i >= buffers {
                ops.push(wait(Pipe::Mte3, Pipe::V, OUT + k));
            }
            ops.push(vec(b));
            ops.extend_from_slice(inside);
            ops.push(set(Pipe::V, Pipe::Mte2, IN + k));
            ops.push(set(Pipe::V, Pipe::Mte3, OUT + k));
            ops.push(wait(Pipe::V, Pipe::Mte3, OUT + k));
            ops.push(dma(Dir::Out, c));
            ops.push(set(Pipe::Mte3, Pipe::V, OUT + k));
        }
        ops
    }

    fn cycles(ops: &[Op]) -> f64 {
        simulate_core(0, ops, &unit(), f64::INFINITY).unwrap().cycles
    }

    #[test]
    fn a_double_buffered_pipeline_takes_its_slowest_stage_per_tile_plus_the_fill() {
        // Copy-in 10, compute 20, copy-out 5 cycles, 4 tiles: V is the bottleneck, so
        // 4 * 20 + the first copy-in (10) + the last copy-out (5) = 95.
        assert_eq!(cycles(&pipeline(4, 2, 10, 20, 5, &[])), 95.0);
        // MTE2-bound: copy-in 30, compute 20, copy-out 5, 3 tiles: 3 * 30 + 20 + 5 = 115.
        assert_eq!(cycles(&pipeline(3, 2, 30, 20, 5, &[])), 115.0);
    }

    #[test]
    fn one_buffer_serialises_copy_in_and_compute_and_a_full_barrier_everything() {
        // Single-buffered: tile i+1's copy-in waits for tile i's compute to free the buffer:
        // 4 * (10 + 20) + the last copy-out 5 = 125 (the copy-out overlaps the next copy-in).
        assert_eq!(cycles(&pipeline(4, 1, 10, 20, 5, &[])), 125.0);
        // A PipeBarrier<PIPE_ALL> after each tile: the sum, 4 * (10 + 20 + 5) = 140.
        let mut ops = Vec::new();
        for _ in 0..4 {
            ops.push(dma(Dir::In, 10));
            ops.push(set(Pipe::Mte2, Pipe::V, 0));
            ops.push(wait(Pipe::Mte2, Pipe::V, 0));
            ops.push(vec(20));
            ops.push(set(Pipe::V, Pipe::Mte3, 0));
            ops.push(wait(Pipe::V, Pipe::Mte3, 0));
            ops.push(dma(Dir::Out, 5));
            ops.push(Op::Barrier(None));
        }
        assert_eq!(cycles(&ops), 140.0);
    }

    #[test]
    fn a_hidden_v_s_wait_inside_the_compute_stops_the_prefetch() {
        // ReduceSum's inner V_S pair blocks the scalar unit until the vector pipe is done, so
        // tile i+1's copy-in is issued only then: 4 * (10 + 20) + 5 = 125 instead of 95, even
        // with two buffers.
        let hidden = [Op::Hidden { from: Pipe::V, to: Pipe::S }];
        assert_eq!(cycles(&pipeline(4, 2, 10, 20, 5, &hidden)), 125.0);
    }

    #[test]
    fn latencies_show_only_where_a_flag_or_barrier_waits() {
        let c = Costs { v_latency_cycles: 7.0, ..unit() };
        // Two back-to-back vector instructions pipeline (2 + 3 cycles, + 7 to complete).
        let plain = [vec(2), vec(3)];
        assert_eq!(simulate_core(0, &plain, &c, f64::INFINITY).unwrap().cycles, 12.0);
        // A PipeBarrier<PIPE_V> between them exposes the first one's latency: 2 + 7 + 3 + 7.
        let barrier = [vec(2), Op::Barrier(Some(Pipe::V)), vec(3)];
        assert_eq!(simulate_core(0, &barrier, &c, f64::INFINITY).unwrap().cycles, 19.0);
        // A V_S wait blocks the scalar unit for the vector work and its latency (2 + 7), and a
        // scalar step of 3 UB accesses at 4 cycles follows: 21.
        let c = Costs { s_ub_cycles: 4.0, ..c };
        let vs = [vec(2), set(Pipe::V, Pipe::S, 0), wait(Pipe::V, Pipe::S, 0), Op::Scalar { gm: 0, ub: 3 }];
        let t = simulate_core(0, &vs, &c, f64::INFINITY).unwrap();
        assert_eq!(t.cycles, 21.0);
        assert_eq!(t.scalar_blocked, 9.0);
    }

    #[test]
    fn cores_share_hbm_and_l2_hits_do_not() {
        // Two cores each read 1000 B, then write 1000 B; HBM gives 10 B/cycle in all. The two
        // cores' 4000 B take 400 cycles at 10 B/cycle, and that is each core's time: 5 B/cycle
        // for its read, then 5 B/cycle for its write.
        let mut c = unit();
        c.mte2_bytes_per_cycle = 100.0;
        c.mte3_bytes_per_cycle = 100.0;
        c.l2_bytes_per_cycle = 10.0;
        c.hbm_gbps = 10.0 * c.clock_mhz * 1e6 / 1e9;
        // No launch overhead, so the bound label is about the cores and HBM alone.
        c.launch_us = 0.0;
        let core_ops = || {
            vec![
                dma(Dir::In, 1000),
                set(Pipe::Mte2, Pipe::Mte3, 0),
                wait(Pipe::Mte2, Pipe::Mte3, 0),
                dma(Dir::Out, 1000),
            ]
        };
        let t = simulate_launch(&[core_ops(), core_ops()], &c).unwrap();
        assert!(
            approx::abs_diff_eq!(t.core_us, c.cycles_to_us(400.0), epsilon = 5e-3 * c.cycles_to_us(400.0)),
            "{t:?}"
        );
        assert!(approx::abs_diff_eq!(t.hbm_us, c.cycles_to_us(400.0), epsilon = 1e-9), "{t:?}");
        assert_eq!(t.bound, "HBM", "{t:?}");
        // One core copies while the other computes for 300 cycles first: the copying core has
        // HBM to itself until the other one starts (the cap settles where the launch's demand
        // fits): core A reads+writes 2000 B at cap k, core B computes 300 then copies 2000 B:
        // T = 300 + 2000/k and (4000 B)/T <= 10 B/cycle, so k = 2000/100 = 20 B/cycle: T = 400.
        let late =
            [vec![vec(300), set(Pipe::V, Pipe::Mte2, 9), wait(Pipe::V, Pipe::Mte2, 9)], core_ops()].concat();
        let t = simulate_launch(&[core_ops(), late], &c).unwrap();
        assert!(
            approx::abs_diff_eq!(t.core_us, c.cycles_to_us(400.0), epsilon = 5e-3 * c.cycles_to_us(400.0)),
            "{t:?}"
        );
        // Three quarters of a read hit L2: 250 B from HBM at the cap of 5 B/cycle = 50 cycles,
        // + 750 B from L2 at 10 B/cycle = 75.
        let hit = vec![Op::Dma { dir: Dir::In, bytes: 1000, blocks: 1, aligned: true, l2_hit: 0.75 }];
        let t = simulate_core(0, &hit, &c, 5.0).unwrap();
        assert_eq!(t.cycles, 125.0);
        assert_eq!(t.hbm_bytes, 250.0);
        // A write half kept in L2 (atomic adds into a small workspace): 500 B to HBM at the cap
        // of 5 B/cycle = 100 cycles, + 500 B at the MTE3 engine's own 100 B/cycle = 5.
        let kept = vec![Op::Dma { dir: Dir::Out, bytes: 1000, blocks: 1, aligned: true, l2_hit: 0.5 }];
        let t = simulate_core(0, &kept, &c, 5.0).unwrap();
        assert_eq!(t.cycles, 105.0);
        assert_eq!(t.hbm_bytes, 500.0);
    }

    #[test]
    fn a_wait_without_its_set_is_an_error_and_the_levels_are_ordered() {
        let err = simulate_core(2, &[wait(Pipe::V, Pipe::S, 3)], &unit(), 1.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cycle model: core 2, event 0: WaitFlag<V_S> (key 3) without an earlier SetFlag"
        );
        let soc = find("Ascend910B2").unwrap();
        let hidden = [Op::Hidden { from: Pipe::V, to: Pipe::S }];
        let cores: Vec<Vec<Op>> = (0..4).map(|_| pipeline(8, 2, 4096, 64, 4096, &hidden)).collect();
        let m = model(&cores, soc).unwrap();
        assert!(m.time_us.low < m.time_us.mid && m.time_us.mid < m.time_us.high, "{m:?}");
    }
}
