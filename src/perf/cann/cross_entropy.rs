//! The CANN designs of CrossEntropyLoss and CrossEntropyLossGrad (the backward is at the end of
//! this file).
//!
//! CrossEntropyLoss (aclnnCrossEntropyLoss, what torch_npu's
//! `npu_cross_entropy_loss` calls), the 910B kernel of hicann/ops-nn `loss/cross_entropy_loss`
//! (op_host/cross_entropy_loss_tiling.cpp, op_kernel/cross_entropy_loss_base.h,
//! cross_entropy_loss.h, cross_entropy_loss_fp32.h; not the arch35 "regbase" kernels), at
//! reduction "none", no class weight, no label smoothing: facts from those sources, no code.
//!
//! - Rows over the cores: `frontCoreNum = N % cores` (all cores when it divides) take
//!   `ceil(N / cores)` rows, the rest `floor`; N < cores: one row on each of N cores.
//! - One UB chunk of V per copy (`inQueue` single-buffered: `DOUBEL_BUFFER = 1`):
//!   `reserve = 3·align32(4·frontBatchNum) + 32 + 32 + 4096` bytes; float32 chunks of
//!   `floor512(UB − reserve)` bytes, 16-bit chunks of `floor512((UB − reserve) / 4)` bytes (the
//!   cast buffer takes twice, the log_prob staging once more), at most one row.
//! - Three passes over each row's chunks: GetRowMax (CopyIn, ReduceMax per 8192 elements),
//!   GetExpSum (CopyIn, Adds −max, Exp, ReduceSum per 8192 elements, each sum read by the scalar
//!   unit after a V_S wait), GetLogProbOut (CopyIn, Adds −lse, the target's value read by the
//!   scalar unit, CopyOut of log_prob [N, V] in the input dtype). CopyIn/CopyOut synchronise with
//!   explicit set/wait flag pairs (MTE2_V, V_MTE2, V_MTE3, MTE3_V; MTE3_MTE2 before each float32
//!   pass-3 copy), so copies and compute never overlap. 16-bit: a Cast after each copy-in and
//!   before each copy-out.
//! - The per-row lse: `Log` of the scalar sum in a one-element vector call, read back by the
//!   scalar unit; the target read from GM by the scalar unit per row; loss written per core at
//!   the end (Muls −1, Cast in 16-bit, one copy).
//!
//! Assumptions (not read): GetReduceMax is GetReduceSum's cascade (BlockReduce 8192 → 1024 → 128,
//! WholeReduce of 16; ≤ 4096: WholeReduce per repeat then over the partials) with a one-block
//! Max into the running result and no scalar wait; passes 2 and 3 re-read the row from L2 (a
//! core's row is ≤ 1.2 MiB, all cores' rows ≤ 58 MiB of the 192 MiB L2); the scalar write of
//! the sum before `Log` is followed by an S_V wait. The kernel computes no entropy: verl's
//! entropy costs further passes this design leaves out, so it is a lower bound on CANN's path.

use super::{ceil_div, Design, NoDesign, Prog, Que};
use crate::perf::cycles::VecClass;
use crate::perf::sim::{Dir, Op, Pipe};
use crate::plan::soc::Soc;

/// `FP32_128_REPEAT`: the reductions work in groups of 128 repeats of 64 floats.
const REDUCE_GROUP: u64 = 8192;

/// CoresSplitTiling: the rows of each busy core.
fn front_tail_split(rows: u64, cores: u64) -> Vec<u64> {
    if rows < cores {
        return vec![1; rows as usize];
    }
    let front = if rows % cores == 0 { cores } else { rows % cores };
    (0..cores).map(|c| if c < front { ceil_div(rows, cores) } else { rows / cores }).collect()
}

/// UbSplitTiling: elements of V per chunk.
fn chunk_elements(soc: &Soc, v: u64, sz: u64, front_rows: u64) -> u64 {
    let align = |b: u64, a: u64| ceil_div(b, a) * a;
    let reserve = 3 * align(4 * front_rows, 32) + 32 + 32 + 4096;
    let free = soc.ub_bytes.saturating_sub(reserve);
    let bytes = if sz == 4 { free / 512 * 512 } else { free / 4 / 512 * 512 };
    bytes.min(align(v * sz, 32)) / sz
}

/// GetReduceSum / (assumed) GetReduceMax over `len` float32 elements.
fn reduce(p: &mut Prog, len: u64) {
    let small = |p: &mut Prog, len: u64| {
        p.vec(VecClass::WholeReduce, len);
        p.barrier_v();
        p.vec(VecClass::WholeReduce, ceil_div(len, 64));
    };
    if len == REDUCE_GROUP {
        for n in [8192, 1024, 128] {
            p.vec(VecClass::WholeReduce, n);
            p.barrier_v();
        }
        p.vec(VecClass::WholeReduce, 16);
        p.barrier_v();
    } else if len <= 4096 {
        small(p, len);
    } else {
        for n in [4096, 512] {
            p.vec(VecClass::WholeReduce, n);
            p.barrier_v();
        }
        p.vec(VecClass::WholeReduce, 64);
        p.barrier_v();
        small(p, len - 4096);
    }
}

/// The 8192-element groups of a chunk of `len`.
fn groups(len: u64) -> impl Iterator<Item = u64> {
    (0..ceil_div(len, REDUCE_GROUP)).map(move |g| REDUCE_GROUP.min(len - g * REDUCE_GROUP))
}

/// CopyIn of `len` elements at byte offset `off`, as float32 in UB afterwards.
fn copy_in(p: &mut Prog, len: u64, sz: u64, off: u64, l2_hit: f64) {
    if sz == 4 {
        p.sync(Pipe::V, Pipe::Mte2);
        p.dma(Dir::In, len * 4, 1, len * 4, off, l2_hit);
        p.sync(Pipe::Mte2, Pipe::V);
    } else {
        p.dma(Dir::In, len * sz, 1, len * sz, off, l2_hit);
        p.sync(Pipe::Mte2, Pipe::V);
        p.simple(len); // Cast to float32
        p.sync(Pipe::V, Pipe::Mte2);
        p.barrier_v();
    }
}

/// CopyOut of `len` float32 elements as the input dtype.
fn copy_out(p: &mut Prog, len: u64, sz: u64, off: u64) {
    if sz == 4 {
        p.sync(Pipe::V, Pipe::Mte3);
        p.dma(Dir::Out, len * 4, 1, len * 4, off, 0.0);
        p.sync(Pipe::Mte3, Pipe::V);
    } else {
        p.sync(Pipe::Mte3, Pipe::V);
        p.simple(len); // Cast back (CAST_RINT)
        p.sync(Pipe::V, Pipe::Mte3);
        p.dma(Dir::Out, len * sz, 1, len * sz, off, 0.0);
    }
}

/// CrossEntropyLoss (reduction "none") on logits [rows, v] of `sz`-byte elements.
pub fn cross_entropy_loss(soc: &Soc, rows: u64, v: u64, sz: u64) -> Result<Design, NoDesign> {
    if rows == 0 || v == 0 {
        return Err(NoDesign(format!("CrossEntropyLoss at {rows}x{v}: nothing to compute")));
    }
    let shares = front_tail_split(rows, u64::from(soc.vector_cores));
    let chunk = chunk_elements(soc, v, sz, shares[0]);
    let chunks: Vec<u64> = (0..ceil_div(v, chunk)).map(|c| chunk.min(v - c * chunk)).collect();
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in shares {
        let mut p = Prog::default();
        for r in start..start + share {
            let row = r * v * sz;
            // Pass 1: the row max.
            let mut off = row;
            for &len in &chunks {
                copy_in(&mut p, len, sz, off, 0.0);
                for g in groups(len) {
                    reduce(&mut p, g);
                    p.simple(8); // the running Max
                    p.barrier_v();
                }
                off += len * sz;
            }
            p.sync(Pipe::V, Pipe::S);
            p.ops.push(Op::Scalar { gm: 1, ub: 1 }); // rowMax, the target from GM
                                                     // Pass 2: Σ e^(x − max), each group's sum read by the scalar unit.
            let mut off = row;
            for &len in &chunks {
                copy_in(&mut p, len, sz, off, 1.0);
                p.simple(len); // Adds −max
                p.barrier_v();
                p.vec(VecClass::Transcendental, len); // Exp
                p.barrier_v();
                for g in groups(len) {
                    reduce(&mut p, g);
                    p.sync(Pipe::V, Pipe::S);
                    p.ops.push(Op::Scalar { gm: 0, ub: 1 });
                }
                off += len * sz;
            }
            // lse = max + Log(sum): a one-element vector Log between two scalar hand-offs.
            p.ops.push(Op::Scalar { gm: 0, ub: 1 });
            p.sync(Pipe::S, Pipe::V);
            p.vec(VecClass::Transcendental, 1);
            p.sync(Pipe::V, Pipe::S);
            p.ops.push(Op::Scalar { gm: 0, ub: 1 });
            // Pass 3: log_prob = x − lse written out, the target's value read.
            let mut off = row;
            for &len in &chunks {
                if sz == 4 {
                    p.sync(Pipe::Mte3, Pipe::Mte2);
                }
                copy_in(&mut p, len, sz, off, 1.0);
                p.simple(len); // Adds −lse
                p.barrier_v();
                p.ops.push(Op::Scalar { gm: 0, ub: 1 });
                copy_out(&mut p, len, sz, off);
                off += len * sz;
            }
            p.ops.push(Op::Scalar { gm: 0, ub: 3 }); // weight, ln, smoothing slots
        }
        // GetNoneLoss: Mul by the weights, Muls −1, (Cast), one copy of the core's losses.
        p.simple(share);
        p.simple(share);
        if sz != 4 {
            p.simple(share);
        }
        p.sync(Pipe::V, Pipe::Mte3);
        p.dma(Dir::Out, share * sz, 1, share * sz, start * sz, 0.0);
        launch.push(p.ops);
        start += share;
    }
    Ok(Design {
        source: "hicann/ops-nn loss/cross_entropy_loss (910B kernel)".into(),
        mode: format!(
            "3 passes of {} chunk(s) of {chunk} per row, single-buffered, log_prob [N, V] written",
            chunks.len()
        ),
        launches: vec![launch],
    })
}

/// CrossEntropyLossGrad (aclnnCrossEntropyLossGrad, reduction "none", no weight, no label
/// smoothing): hicann/ops-nn `loss/cross_entropy_loss_grad/op_host/cross_entropy_loss_grad_tiling.cpp`
/// and the 910B `op_kernel/cross_entropy_loss_grad_base.h`, `cross_entropy_loss_grad_weight_none.h`
/// (not arch35). dlogits = (e^log_prob − onehot)·dloss from the forward's log_prob [N, V]:
/// - rows split as the forward's (`frontCoreNum = N % cores`, `ceil`/`floor` rows);
/// - chunks of `alignColLoopNum` = (UB − the per-row buffers) / 12 (float32) or / 8 (16-bit)
///   elements, aligned down to 512 bytes, at most the row; `BUFFER_NUM = 1`: the log_prob in-queue
///   and the dlogits out-queue are single-buffered;
/// - per core first: the targets in (int64), Cast, Duplicate, Compare, Duplicate, Select (the
///   ignore mask), dloss in, (Cast,) Muls, Mul;
/// - per chunk: CopyIn (queue hand-off), the target read from GM by the scalar unit, (Cast,) Exp,
///   Muls by the row's dloss (a scalar UB read), the one-hot term by scalar GetValue/SetValue
///   when the target is in the chunk, Cast (16-bit) or Copy (float32), CopyOut; the row's last,
///   shorter chunk between two PIPE_ALL barriers.
///
/// Assumed: the scalar UB reads after vector writes wait V_S (the source shows no flag).
pub fn cross_entropy_loss_grad(soc: &Soc, rows: u64, v: u64, sz: u64) -> Result<Design, NoDesign> {
    if rows == 0 || v == 0 {
        return Err(NoDesign(format!("CrossEntropyLossGrad at {rows}x{v}: nothing to compute")));
    }
    let shares = front_tail_split(rows, u64::from(soc.vector_cores));
    let front = shares[0];
    let a32 = |b: u64| ceil_div(b, 32) * 32;
    let row_bufs = a32(8 * front) + a32(4 * front) + a32(sz * front) + a32(4 * front) + a32(front);
    let (split, grad32) = if sz == 4 { (12, 0) } else { (8, a32(4 * front)) };
    let per_512 = 512 / sz;
    let fit = soc.ub_bytes.saturating_sub(row_bufs + grad32) / split;
    let chunk = if fit < v { fit / per_512 * per_512 } else { v / per_512 * per_512 };
    if chunk == 0 {
        return Err(NoDesign(format!(
            "CrossEntropyLossGrad at V = {v}: a row shorter than 512 bytes is not modelled"
        )));
    }
    let mut chunks = vec![chunk; (v / chunk) as usize];
    if v % chunk != 0 {
        chunks.push(v % chunk);
    }
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in shares {
        let mut p = Prog::default();
        let mut q_in = Que::new(0, Pipe::Mte2, Pipe::V, 1);
        let mut q_out = Que::new(1, Pipe::V, Pipe::Mte3, 1);
        let mut q_rows = Que::new(2, Pipe::Mte2, Pipe::V, 1);
        // The ignore mask from the targets, then dloss per row.
        for bytes in [8, sz] {
            let k = q_rows.alloc(&mut p);
            p.dma(Dir::In, share * bytes, 1, share * bytes, start * bytes, 0.0);
            q_rows.handoff(&mut p, k);
            let ops = if bytes == 8 {
                5
            } else if sz == 4 {
                2
            } else {
                3
            };
            for _ in 0..ops {
                p.simple(share);
            }
            q_rows.free(&mut p, k);
        }
        for r in start..start + share {
            let mut off = r * v * sz;
            for (c, &len) in chunks.iter().enumerate() {
                let tail = c + 1 == chunks.len() && v % chunk != 0;
                let k = q_in.alloc(&mut p);
                p.dma(Dir::In, len * sz, 1, len * sz, off, 0.0);
                q_in.handoff(&mut p, k);
                if tail {
                    p.ops.push(Op::Barrier(None));
                }
                let ko = q_out.alloc(&mut p);
                p.ops.push(Op::Scalar { gm: 1, ub: 0 }); // the row's target from GM
                if sz != 4 {
                    p.simple(len); // Cast
                }
                q_in.free(&mut p, k);
                p.vec(VecClass::Transcendental, len); // Exp
                p.sync(Pipe::V, Pipe::S);
                p.ops.push(Op::Scalar { gm: 0, ub: 1 }); // the row's dloss
                p.simple(len); // Muls
                p.sync(Pipe::V, Pipe::S);
                p.ops.push(Op::Scalar { gm: 0, ub: 2 }); // the one-hot term (in one chunk of the row)
                p.sync(Pipe::S, Pipe::V);
                p.simple(len); // Cast (16-bit) or Copy
                q_out.handoff(&mut p, ko);
                p.dma(Dir::Out, len * sz, 1, len * sz, off, 0.0);
                q_out.free(&mut p, ko);
                if tail {
                    p.ops.push(Op::Barrier(None));
                }
                off += len * sz;
            }
        }
        launch.push(p.ops);
        start += share;
    }
    Ok(Design {
        source: "hicann/ops-nn loss/cross_entropy_loss_grad (910B kernel)".into(),
        mode: format!("{} chunk(s) of {chunk} per row, single-buffered, from log_prob [N, V]", chunks.len()),
        launches: vec![launch],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::soc::find;

    #[test]
    fn rows_split_front_and_tail_as_the_tiling_does() {
        // 100 rows on 48 cores: 100 % 48 = 4 front cores of 3 rows, 44 of 2.
        let s = front_tail_split(100, 48);
        assert_eq!((s.len(), s[0], s[3], s[4], s.iter().sum::<u64>()), (48, 3, 3, 2, 100));
        assert_eq!(front_tail_split(96, 48), vec![2; 48]);
        assert_eq!(front_tail_split(5, 48), vec![1; 5]);
    }

    #[test]
    fn chunks_follow_the_ub_split() {
        let soc = find("Ascend910B2").unwrap();
        // 196608 − (3·352 + 64 + 4096) = 191392 B; float32 floor512: 190976 B = 47744 floats;
        // 16-bit: 191392 / 4 = 47848 → 47616 B = 23808 elements.
        assert_eq!(chunk_elements(soc, 151936, 4, 86), 47744);
        assert_eq!(chunk_elements(soc, 151936, 2, 86), 23808);
        // A short row is one chunk of the row.
        assert_eq!(chunk_elements(soc, 1000, 2, 1), 1008);
    }

    #[test]
    fn every_row_reads_the_logits_three_times_and_writes_log_prob_once() {
        let soc = find("Ascend910B2").unwrap();
        let d = cross_entropy_loss(soc, 96, 151936, 2).unwrap();
        let (mut read, mut hbm_read, mut written) = (0u64, 0.0f64, 0u64);
        for op in d.launches.iter().flatten().flatten() {
            if let Op::Dma { dir, bytes, l2_hit, .. } = op {
                match dir {
                    Dir::In => {
                        read += bytes;
                        hbm_read += *bytes as f64 * (1.0 - l2_hit);
                    }
                    Dir::Out => written += bytes,
                }
            }
        }
        let row = 151936 * 2;
        assert_eq!(read, 3 * 96 * row);
        assert_eq!(hbm_read as u64, 96 * row);
        assert_eq!(written, 96 * row + 96 * 2);
    }

    #[test]
    fn the_grad_reads_log_prob_once_and_writes_dlogits_once_in_tiling_chunks() {
        let soc = find("Ascend910B2").unwrap();
        let d = cross_entropy_loss_grad(soc, 96, 151936, 2).unwrap();
        // 2 rows per core: buffers 32 + 32 + 32 + 32 + 32 + 32 (float32 dloss) = 192 B;
        // (196608 − 192) / 8 = 24552 → 24320 (a multiple of 256 elements): 6 chunks + 6016.
        assert!(d.mode.starts_with("7 chunk(s) of 24320 "), "{}", d.mode);
        let (mut read, mut written) = (0u64, 0u64);
        for op in d.launches.iter().flatten().flatten() {
            if let Op::Dma { dir, bytes, .. } = op {
                match dir {
                    Dir::In => read += bytes,
                    Dir::Out => written += bytes,
                }
            }
        }
        let row = 151936 * 2;
        // log_prob once, the targets (int64) and dloss once per row.
        assert_eq!(read, 96 * row + 96 * (8 + 2));
        assert_eq!(written, 96 * row);
    }
}
