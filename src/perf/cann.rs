//! The second baseline: the CANN built-in kernel's *design* for the same op and shape, written as
//! a synthetic event program per core and run through the same simulator ([`super::sim`]). Each
//! design follows the public kernel's structure (core split, tile sizes, buffering, the vector
//! calls per tile, where the scalar unit waits), as summarised with file references in
//! ARCHITECTURE.md ("The CANN baseline") and /work/shared/research/cann-kernels-design.md; no code
//! of those kernels is used. Where a tiling constant was not read, the design says what it
//! assumes. Shapes a design does not cover (split-D norms, interleaved rotary, non-BSND layouts)
//! and kernels with no public source (the 910B gelu grads) get no baseline rather than a guess;
//! the backward designs are in [`grad`].

mod cross_entropy;
mod grad;
mod swiglu;

pub use cross_entropy::{cross_entropy_loss, cross_entropy_loss_grad};
pub use grad::{
    add_rms_norm_grad, gelu_grad, layer_norm_grad, rms_norm_grad, rotary_half_grad_bsnd, swiglu_grad,
};
pub use swiglu::{swiglu, tiling as swiglu_tiling, SwiGluTiling};

use super::cycles::VecClass;
use super::sim::{Dir, Op, Pipe};
use crate::family::CannBuiltin;
use crate::plan::soc::Soc;
use serde::Serialize;

/// The CANN design of one op at one shape: its launches (each a program per core).
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// `repo path` of the kernel(s) the design follows, and its mode.
    pub source: String,
    pub mode: String,
    pub launches: Vec<Vec<Vec<Op>>>,
}

/// Why an op or shape has no CANN baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoDesign(pub String);

impl std::fmt::Display for NoDesign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A program under construction.
#[derive(Default)]
struct Prog {
    ops: Vec<Op>,
}

impl Prog {
    fn vec(&mut self, api: VecClass, elements: u64) {
        self.ops.push(Op::Vector { api, elements });
    }
    fn simple(&mut self, elements: u64) {
        self.vec(VecClass::Simple, elements);
    }
    fn dma(&mut self, dir: Dir, bytes: u64, blocks: u64, block_bytes: u64, gm_offset: u64, l2_hit: f64) {
        let aligned = gm_offset % 512 == 0 && (blocks <= 1 || block_bytes % 512 == 0);
        self.ops.push(Op::Dma { dir, bytes, blocks: blocks.max(1), aligned, l2_hit });
    }
    /// SetFlag + WaitFlag right after it (an explicit sync point).
    fn sync(&mut self, from: Pipe, to: Pipe) {
        self.ops.push(Op::Set { from, to, key: 7 });
        self.ops.push(Op::Wait { from, to, key: 7 });
    }
    fn barrier_v(&mut self) {
        self.ops.push(Op::Barrier(Some(Pipe::V)));
    }
    /// A level-2 ReduceSum (count form) on dav_c220: its vector passes, then the V_S pair inside
    /// the API, the scalar store of the sum and the S_V and S_MTE3 pairs (as the twin's
    /// kernel/reduce.h records the same call).
    fn reduce_sum(&mut self, elements: u64) {
        self.vec(VecClass::Reduce, elements);
        self.ops.push(Op::Hidden { from: Pipe::V, to: Pipe::S });
        self.ops.push(Op::Scalar { gm: 0, ub: 1 });
        self.ops.push(Op::Hidden { from: Pipe::S, to: Pipe::V });
        self.ops.push(Op::Hidden { from: Pipe::S, to: Pipe::Mte3 });
    }
}

/// A TQue's flag pairs: AllocTensor waits for the buffer's FreeTensor, EnQue/DeQue hand the
/// buffer from producer to consumer (as the twin's trace shows for the generated kernels).
struct Que {
    producer: Pipe,
    consumer: Pipe,
    buffers: usize,
    base: i64,
    next: usize,
    freed: Vec<bool>,
}

impl Que {
    fn new(id: i64, producer: Pipe, consumer: Pipe, buffers: usize) -> Que {
        Que { producer, consumer, buffers, base: 1_000_000 + 100 * id, next: 0, freed: vec![false; buffers] }
    }
    fn alloc(&mut self, p: &mut Prog) -> usize {
        let k = self.next % self.buffers;
        self.next += 1;
        if self.freed[k] {
            p.ops.push(Op::Wait { from: self.consumer, to: self.producer, key: self.base + k as i64 });
            self.freed[k] = false;
        }
        k
    }
    fn handoff(&self, p: &mut Prog, k: usize) {
        p.ops.push(Op::Set { from: self.producer, to: self.consumer, key: self.base + k as i64 });
        p.ops.push(Op::Wait { from: self.producer, to: self.consumer, key: self.base + k as i64 });
    }
    fn free(&mut self, p: &mut Prog, k: usize) {
        p.ops.push(Op::Set { from: self.consumer, to: self.producer, key: self.base + k as i64 });
        self.freed[k] = true;
    }
}

fn ceil_div(a: u64, b: u64) -> u64 {
    if b == 0 {
        0
    } else {
        a.div_ceil(b)
    }
}

/// `blockFactor = ceil(rows / cores)`, the last core takes the rest: the shares of the cores
/// that get any.
pub(crate) fn block_split(units: u64, cores: u64) -> Vec<u64> {
    let factor = ceil_div(units, cores).max(1);
    let used = ceil_div(units, factor);
    (0..used).map(|i| if i + 1 < used { factor } else { units - factor * (used - 1) }).collect()
}

/// ReduceSumHalfInterval-style halving Adds down to 64 lanes: the upper part of the live
/// elements added onto the lower part until at most 64 remain; the element count of each Add.
fn halving_adds(cols: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut n = cols;
    while n > 64 {
        let h = n.div_ceil(2);
        out.push(n - h);
        n = h;
    }
    out
}

/// How MergeN moves `rows` rows of `row_bytes` (rms_norm_merge_n.h `CopyIn`/`CopyOutY`): one
/// contiguous DataCopy when the row is a whole number of 32-byte blocks, else DataCopyPad with a
/// block per row (each padded to 32 B in UB). Returns (blocks, bytes per block).
fn row_blocks(rows: u64, row_bytes: u64) -> (u64, u64) {
    if row_bytes % 32 == 0 {
        (1, rows * row_bytes)
    } else {
        (rows, row_bytes)
    }
}

/// rms_norm_tiling.cpp's `isPerformance` on the 910B: 16-bit x of two dims (the first ≤ 512)
/// or three (≤ 512, ≤ 8), D ≤ 5120; then MergeN multiplies by rstd and gamma row by row
/// (repeatByRow) instead of broadcasting them to [rows, D].
fn merge_n_performance(x: &[u64], sz: u64) -> bool {
    let d = x.last().copied().unwrap_or(0);
    let dims = match x {
        [a, _] => *a <= 512,
        [a, b, _] => *a <= 512 && *b <= 8,
        _ => false,
    };
    sz == 2 && d <= 5120 && dims
}

/// `n` split into calls of at most `max` (repeat limits).
fn chunks(n: u64, max: u64) -> Vec<u64> {
    (0..n.div_ceil(max)).map(|i| max.min(n - i * max)).collect()
}

/// BroadCast<float, 2, axis> of v220 (broadcast_v220_impl.h, aligned last dim): Brcb into one
/// block per row, then a Copy of [rows, cols] with the block as its source.
fn broadcast_rows(p: &mut Prog, rows: u64, cols: u64) {
    for chunk in chunks(rows, 255 * 8) {
        p.vec(VecClass::Gather, chunk * 8);
    }
    p.barrier_v();
    for chunk in chunks(rows, 255) {
        p.simple(chunk * cols);
    }
    p.barrier_v();
}

/// repeatByRow's Mul of [rows, cols] by one value per row (or one gamma row): a Mul per 64
/// columns and one for the tail, each over the rows (255 a call).
fn by_row(p: &mut Prog, rows: u64, cols: u64) {
    for chunk in chunks(rows, 255) {
        for _ in 0..cols.div_ceil(64) {
            p.simple(chunk * 64);
        }
    }
}

/// ReduceSumMultiN (reduce_common.h) of [rows, D]: Duplicate of a [rows, 64] accumulator, then
/// per 255 rows one Add per 64 columns (each after a barrier: they accumulate into the same
/// repeat) and the tail's, and WholeReduceSum of the rows' 64 lanes.
fn reduce_sum_multi_n(p: &mut Prog, rows: u64, d: u64) {
    p.simple(rows * 64);
    p.barrier_v();
    for chunk in chunks(rows, 255) {
        for _ in 0..d / 64 {
            p.simple(chunk * 64);
            p.barrier_v();
        }
        if d % 64 != 0 {
            p.simple(chunk * 64);
        }
        p.barrier_v();
        p.vec(VecClass::WholeReduce, chunk * 64);
    }
}

/// ops-nn norm/rms_norm (910B): Normal mode (one row per DMA, single-buffered, scalar rstd after
/// V_S) for 2000 < aligned D ≤ 12288 (16-bit) / 10240 (float32); MergeN (rowFactor rows per
/// pass, vector rstd, no scalar round trip) at ≤ 2000. `x`: x's shape (rows × D, D last).
pub fn rms_norm(soc: &Soc, x: &[u64], sz: u64) -> Result<Design, NoDesign> {
    let d = x.last().copied().unwrap_or(0);
    let rows = x.iter().product::<u64>().checked_div(d).unwrap_or(0);
    let align = d.div_ceil(32 / sz) * (32 / sz);
    let split_d = if sz == 4 { align > 10240 } else { align > 12288 };
    if split_d {
        return Err(NoDesign(format!("CANN RmsNorm splits D = {d} (split-D mode is not modelled)")));
    }
    let shares = block_split(rows, u64::from(soc.vector_cores));
    let cores = shares.len() as f64;
    let gamma_hit = (cores - 1.0) / cores;
    let cast = sz != 4;
    let performance = merge_n_performance(x, sz);
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in shares {
        let mut p = Prog::default();
        let mut qx = Que::new(0, Pipe::Mte2, Pipe::V, 1);
        let mut qy = Que::new(1, Pipe::V, Pipe::Mte3, 1);
        let mut qr = Que::new(2, Pipe::V, Pipe::Mte3, 1);
        // gamma once per core (its re-reads by the other cores hit L2).
        p.dma(Dir::In, d * sz, 1, d * sz, 0, gamma_hit);
        p.sync(Pipe::Mte2, Pipe::V);
        if align <= 2000 {
            // MergeN (rms_norm_merge_n.h): rowFactor = ub / (16·numColAlign + 260) rows per pass
            // (rms_norm_tiling.cpp), gamma cast once; outside the "performance" shapes also
            // broadcast once to rowFactor rows (BroadCast<float, 2, 0>).
            let row_factor = (soc.ub_bytes / (16 * align + 260)).max(1);
            if cast {
                p.simple(align);
                p.barrier_v();
            }
            if !performance {
                broadcast_rows(&mut p, row_factor, align);
            }
            let mut r = 0;
            while r < share {
                let n = row_factor.min(share - r);
                let off = (start + r) * d * sz;
                let k = qx.alloc(&mut p);
                let (blocks, block) = row_blocks(n, d * sz);
                p.dma(Dir::In, n * d * sz, blocks, block, off, 0.0);
                qx.handoff(&mut p, k);
                if cast {
                    p.simple(n * align);
                    p.barrier_v();
                }
                p.simple(n * align); // x²
                p.barrier_v();
                reduce_sum_multi_n(&mut p, n, d);
                p.barrier_v();
                for api in [VecClass::Simple, VecClass::Simple, VecClass::Transcendental] {
                    p.vec(api, n); // Muls(avg), Adds(eps), Sqrt: rstd of every row
                    p.barrier_v();
                }
                p.simple(n); // Duplicate(1) beside the Sqrt
                p.vec(VecClass::Transcendental, n); // Div
                p.barrier_v();
                let kr = qr.alloc(&mut p);
                qr.handoff(&mut p, kr);
                p.dma(Dir::Out, n * 4, 1, n * 4, (start + r) * 4, 0.0); // CopyOutRstd: one block
                qr.free(&mut p, kr);
                if performance {
                    // Brcb of rstd (240 rows a call), then x · rstd and · gamma by repeatByRow:
                    // one Mul per 64 columns (and the tail), repeat = rows (255 a call).
                    for chunk in chunks(n, 240) {
                        p.vec(VecClass::Gather, chunk * 8);
                        p.barrier_v();
                    }
                    by_row(&mut p, n, align);
                    p.barrier_v();
                    by_row(&mut p, n, align);
                } else {
                    broadcast_rows(&mut p, n, align); // rstd to [rows, numColAlign]
                    p.simple(n * align); // x · rstd
                    p.barrier_v();
                    p.simple(n * align); // · gamma (pre-broadcast)
                }
                qx.free(&mut p, k);
                p.barrier_v();
                let ky = qy.alloc(&mut p);
                if cast {
                    p.simple(n * align);
                }
                p.barrier_v();
                qy.handoff(&mut p, ky);
                p.dma(Dir::Out, n * d * sz, blocks, block, off, 0.0);
                qy.free(&mut p, ky);
                r += n;
            }
        } else {
            // Normal: per row CopyIn, Cast, Mul, halving Adds, WholeReduceSum, V_S (twice, back
            // to back: inside ReduceSumHalfInterval and in Compute), scalar 1/sqrt, S_V, Cast
            // of gamma (every row), Mul, Muls, Cast, CopyOut; rstd written every 64 rows.
            let mut kr = None;
            for r in 0..share {
                let off = (start + r) * d * sz;
                let k = qx.alloc(&mut p);
                p.dma(Dir::In, d * sz, 1, d * sz, off, 0.0);
                qx.handoff(&mut p, k);
                if cast {
                    p.simple(align);
                    p.barrier_v();
                }
                p.simple(align);
                p.barrier_v();
                for e in halving_adds(align) {
                    p.simple(e);
                    p.barrier_v();
                }
                p.vec(VecClass::WholeReduce, 64);
                p.sync(Pipe::V, Pipe::S);
                p.sync(Pipe::V, Pipe::S);
                p.ops.push(Op::Scalar { gm: 0, ub: 1 });
                p.ops.push(Op::Scalar { gm: 0, ub: 0 }); // 1 / sqrt(sum · avg + eps)
                if r % 64 == 0 {
                    kr = Some(qr.alloc(&mut p));
                }
                p.ops.push(Op::Scalar { gm: 0, ub: 1 }); // rstd into the batch
                p.sync(Pipe::S, Pipe::V);
                if cast {
                    p.simple(align); // gamma cast again
                }
                p.simple(align); // · gamma
                p.barrier_v();
                p.simple(align); // · rstd
                p.barrier_v();
                qx.free(&mut p, k);
                let ky = qy.alloc(&mut p);
                if cast {
                    p.simple(align);
                }
                qy.handoff(&mut p, ky);
                p.dma(Dir::Out, d * sz, 1, d * sz, off, 0.0);
                qy.free(&mut p, ky);
                if r % 64 == 63 || r + 1 == share {
                    let kr = kr.take().unwrap_or(0);
                    let n = r % 64 + 1;
                    qr.handoff(&mut p, kr);
                    p.dma(Dir::Out, n * 4, 1, n * 4, (start + r + 1 - n) * 4, 0.0);
                    qr.free(&mut p, kr);
                }
            }
        }
        start += share;
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-nn norm/rms_norm (op_host/rms_norm_tiling.cpp, op_kernel/rms_norm.h, rms_norm_merge_n.h)"
            .into(),
        mode: if align <= 2000 { "MergeN" } else { "Normal" }.into(),
        launches: vec![launch],
    })
}

/// ops-nn norm/add_rms_norm (910B): MultiN for 16-bit float16 rows (x1/x2 in one 2-buffer queue,
/// x_sum/y in another, rowFactor rows per pass, a vector-only ReduceSumCustom per row, vector
/// rstd; add_rms_norm_multi_n.h), else Normal (one row per pass, single-buffered, vector rstd of
/// the single sum, then V_S + GetValue + S_V per row; add_rms_norm.h) for D > 2000, MergeN
/// below. rowFactor of MultiN is assumed UB / (16·D) rows (the tiling's value was not read).
pub fn add_rms_norm(soc: &Soc, rows: u64, d: u64, sz: u64, float16: bool) -> Result<Design, NoDesign> {
    let align = d.div_ceil(32 / sz) * (32 / sz);
    if d > 12288 {
        return Err(NoDesign(format!("CANN AddRmsNorm splits D = {d} (split-D mode is not modelled)")));
    }
    let shares = block_split(rows, u64::from(soc.vector_cores));
    let cores = shares.len() as f64;
    let gamma_hit = (cores - 1.0) / cores;
    let cast = sz != 4;
    let merge = align <= 2000;
    let multi = !merge && float16 && d == align;
    let row_factor = if merge {
        (soc.ub_bytes / (16 * align + 260)).max(1)
    } else if multi {
        (soc.ub_bytes / (16 * align + 64)).max(1)
    } else {
        1
    };
    let buffers = if merge || multi { 2 } else { 1 };
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in shares {
        let mut p = Prog::default();
        let mut qx = Que::new(0, Pipe::Mte2, Pipe::V, buffers);
        let mut qy = Que::new(1, Pipe::V, Pipe::Mte3, buffers);
        let mut qr = Que::new(2, Pipe::V, Pipe::Mte3, 1);
        p.dma(Dir::In, d * sz, 1, d * sz, 0, gamma_hit);
        p.sync(Pipe::Mte2, Pipe::V);
        let mut r = 0;
        while r < share {
            let n = row_factor.min(share - r);
            let off = (start + r) * d * sz;
            let e = n * align;
            let k1 = qx.alloc(&mut p);
            p.dma(Dir::In, n * d * sz, 1, n * d * sz, off, 0.0);
            qx.handoff(&mut p, k1);
            let k2 = qx.alloc(&mut p);
            p.dma(Dir::In, n * d * sz, 1, n * d * sz, off, 0.0);
            qx.handoff(&mut p, k2);
            let ks = qy.alloc(&mut p);
            if cast && !multi {
                p.simple(e); // x1, x2 to float32, add, round the sum back
                p.simple(e);
                p.simple(e);
                p.simple(e);
            } else {
                p.simple(e);
            }
            p.barrier_v();
            qx.free(&mut p, k1);
            qx.free(&mut p, k2);
            qy.handoff(&mut p, ks);
            p.dma(Dir::Out, n * d * sz, 1, n * d * sz, off, 0.0);
            qy.free(&mut p, ks);
            if cast {
                p.simple(e);
                p.barrier_v();
            }
            p.simple(e); // x²
            p.barrier_v();
            if multi || merge {
                p.simple(e); // · 1/D
                p.barrier_v();
                for _ in 0..n {
                    // ReduceSumCustom: Duplicate, one level-0 Add over the repeats, WholeReduceSum.
                    p.simple(64);
                    p.simple(align);
                    p.vec(VecClass::WholeReduce, 64);
                }
                for api in
                    [VecClass::Simple, VecClass::Transcendental, VecClass::Simple, VecClass::Transcendental]
                {
                    p.vec(api, n * 8); // Adds(eps), Sqrt, Duplicate, Div
                    p.barrier_v();
                }
                let kr = qr.alloc(&mut p);
                qr.handoff(&mut p, kr);
                p.dma(Dir::Out, n * 4, n, 4, (start + r) * 4, 0.0);
                qr.free(&mut p, kr);
                p.vec(VecClass::Gather, n * 8);
                p.barrier_v();
                for _ in 0..n {
                    p.simple(align); // · rstd, per row
                }
                p.barrier_v();
                let ky = qy.alloc(&mut p);
                if cast {
                    p.simple(e);
                    p.barrier_v();
                }
                for _ in 0..n {
                    p.simple(align); // · gamma, per row
                }
                p.barrier_v();
                qy.handoff(&mut p, ky);
                p.dma(Dir::Out, n * d * sz, 1, n * d * sz, off, 0.0);
                qy.free(&mut p, ky);
            } else {
                // ReduceSumFP32 then the rstd of the one sum on the vector unit, read back.
                p.simple(64);
                p.simple(align);
                p.vec(VecClass::WholeReduce, 64);
                p.barrier_v();
                for api in [VecClass::Simple, VecClass::Transcendental, VecClass::Transcendental] {
                    p.vec(api, 8);
                    p.barrier_v();
                }
                p.sync(Pipe::V, Pipe::S);
                p.ops.push(Op::Scalar { gm: 0, ub: 1 });
                p.sync(Pipe::S, Pipe::V);
                let kr = qr.alloc(&mut p);
                qr.handoff(&mut p, kr);
                p.dma(Dir::Out, 4, 1, 4, (start + r) * 4, 0.0);
                qr.free(&mut p, kr);
                p.simple(align); // · rstd
                p.barrier_v();
                let ky = qy.alloc(&mut p);
                if cast {
                    p.simple(align);
                    p.simple(align);
                    p.barrier_v();
                }
                p.simple(align); // · gamma
                p.barrier_v();
                qy.handoff(&mut p, ky);
                p.dma(Dir::Out, d * sz, 1, d * sz, off, 0.0);
                qy.free(&mut p, ky);
            }
            r += n;
        }
        start += share;
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-nn norm/add_rms_norm (op_host/add_rms_norm_tiling.cpp, op_kernel/add_rms_norm.h, add_rms_norm_multi_n.h, add_rms_norm_merge_n.h)".into(),
        mode: if merge { "MergeN" } else if multi { "MultiN" } else { "Normal" }.into(),
        launches: vec![launch],
    })
}

/// ops-transformer posembedding/rotary_position_embedding, rotate_half on BSND x [B, S, N, D]
/// with [1, S, 1, D] tables: positions over cores; tiles of `storeSLines = ((ub − 2 KiB) / 24) /
/// (2·D)` positions (rope_rotate_half_tiling.cpp); per tile the two table blocks in and cast,
/// the sign by one Muls; per head one strided DMA of sLines rows of D (x in, y out),
/// Cast, two half-row Copies, Mul, Mul, Add, Cast; double-buffered x and y.
pub fn rotary_half_bsnd(soc: &Soc, b: u64, s: u64, n: u64, d: u64, sz: u64) -> Result<Design, NoDesign> {
    let cast = sz != 4;
    let lines = (((soc.ub_bytes - 2048) / 24) / (2 * d)).max(1);
    let row = d * sz;
    let shares = block_split(b * s, u64::from(soc.vector_cores));
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in shares {
        let mut p = Prog::default();
        let mut qt = Que::new(0, Pipe::Mte2, Pipe::V, 1);
        let mut qx = Que::new(1, Pipe::Mte2, Pipe::V, 2);
        let mut qy = Que::new(2, Pipe::V, Pipe::Mte3, 2);
        let mut t = 0;
        while t < share {
            let l = lines.min(share - t);
            let pos = start + t;
            let kt = qt.alloc(&mut p);
            p.dma(Dir::In, l * row, 1, l * row, (pos % s) * row, 0.0);
            p.dma(Dir::In, l * row, 1, l * row, (pos % s) * row, 0.0);
            qt.handoff(&mut p, kt);
            if cast {
                p.simple(l * d);
                p.simple(l * d);
            }
            p.simple(l * d / 2); // the sign of the first half of sin
            p.barrier_v();
            for h in 0..n {
                let off = (pos * n + h) * row;
                let kx = qx.alloc(&mut p);
                p.dma(Dir::In, l * row, l, row, off, 0.0);
                qx.handoff(&mut p, kx);
                if cast {
                    p.simple(l * d);
                    p.barrier_v();
                }
                p.simple(l * d / 2);
                p.simple(l * d / 2);
                p.barrier_v();
                p.simple(l * d);
                p.simple(l * d);
                p.barrier_v();
                qx.free(&mut p, kx);
                let ky = qy.alloc(&mut p);
                p.simple(l * d);
                if cast {
                    p.barrier_v();
                    p.simple(l * d);
                }
                qy.handoff(&mut p, ky);
                p.dma(Dir::Out, l * row, l, row, off, 0.0);
                qy.free(&mut p, ky);
            }
            qt.free(&mut p, kt);
            t += l;
        }
        start += share;
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-transformer posembedding/rotary_position_embedding (op_host/rope_rotate_half_tiling.cpp, op_kernel/rotate_half_bf16.h, rotate_half_base.h)".into(),
        mode: "rotate_half BSND".into(),
        launches: vec![launch],
    })
}

/// One tile's queues in [`binary_stream`]: the design's compute frees the two inputs and takes
/// the output buffer where its kernel does (the order sets when the next copy-in may start).
struct TileIo<'a> {
    qa: &'a mut Que,
    qb: &'a mut Que,
    qy: &'a mut Que,
    ka: usize,
    kb: usize,
    ky: Option<usize>,
}

impl TileIo<'_> {
    fn free_a(&mut self, p: &mut Prog) {
        self.qa.free(p, self.ka);
    }
    fn free_b(&mut self, p: &mut Prog) {
        self.qb.free(p, self.kb);
    }
    fn alloc_out(&mut self, p: &mut Prog) {
        self.ky = Some(self.qy.alloc(p));
    }
}

/// The elementwise designs' skeleton: `elements` over the cores (`block_split`), two inputs in
/// and one output out through double-buffered queues, `tile` elements a pass; `compute(p, n,
/// io)` issues a tile's vector work between its copy-in and copy-out.
fn binary_stream(
    soc: &Soc,
    elements: u64,
    sz: u64,
    tile: u64,
    compute: impl Fn(&mut Prog, u64, &mut TileIo),
) -> Vec<Vec<Op>> {
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in block_split(elements, u64::from(soc.vector_cores)) {
        let mut p = Prog::default();
        let mut qa = Que::new(0, Pipe::Mte2, Pipe::V, 2);
        let mut qb = Que::new(1, Pipe::Mte2, Pipe::V, 2);
        let mut qy = Que::new(2, Pipe::V, Pipe::Mte3, 2);
        let mut e = 0;
        while e < share {
            let n = tile.min(share - e);
            let off = (start + e) * sz;
            let ka = qa.alloc(&mut p);
            p.dma(Dir::In, n * sz, 1, n * sz, off, 0.0);
            qa.handoff(&mut p, ka);
            let kb = qb.alloc(&mut p);
            p.dma(Dir::In, n * sz, 1, n * sz, off, 0.0);
            qb.handoff(&mut p, kb);
            let mut io = TileIo { qa: &mut qa, qb: &mut qb, qy: &mut qy, ka, kb, ky: None };
            compute(&mut p, n, &mut io);
            let ky = io.ky.expect("a design's compute takes the output buffer");
            qy.handoff(&mut p, ky);
            p.dma(Dir::Out, n * sz, 1, n * sz, off, 0.0);
            qy.free(&mut p, ky);
            e += n;
        }
        start += share;
        launch.push(p.ops);
    }
    launch
}

/// ascend-transformer-boost ReshapeAndCacheNd: tokens over cores (`blockDim = min(T, cores)`);
/// per token a scalar GM read of its slot, then the key row and the value row through UB into
/// the cache, with a 2-buffer queue between MTE2 and MTE3 (reshape_and_cache_tiling.cpp,
/// reshape_and_cache_base.h). `row` is one token's bytes of key (and of value).
fn kv_scatter(soc: &Soc, tokens: u64, row: u64) -> Vec<Vec<Op>> {
    let shares = block_split(tokens, u64::from(soc.vector_cores));
    let mut launch = Vec::new();
    let mut start = 0;
    for share in shares {
        let mut p = Prog::default();
        let mut q = Que::new(0, Pipe::Mte2, Pipe::Mte3, 2);
        for t in 0..share {
            p.ops.push(Op::Scalar { gm: 1, ub: 0 });
            for _ in 0..2 {
                let k = q.alloc(&mut p);
                p.dma(Dir::In, row, 1, row, (start + t) * row, 0.0);
                q.handoff(&mut p, k);
                p.dma(Dir::Out, row, 1, row, (start + t) * row, 0.0);
                q.free(&mut p, k);
            }
        }
        start += share;
        launch.push(p.ops);
    }
    launch
}

const ATB_RESHAPE: &str =
    "hicann/ascend-transformer-boost src/kernels/mixkernels/reshape_and_cache (tiling/reshape_and_cache_tiling.cpp, op_kernel/reshape_and_cache_base.h)";

pub fn reshape_and_cache(soc: &Soc, tokens: u64, heads: u64, d: u64, sz: u64) -> Result<Design, NoDesign> {
    Ok(Design {
        source: ATB_RESHAPE.into(),
        mode: "tokens over cores".into(),
        launches: vec![kv_scatter(soc, tokens, heads * d * sz)],
    })
}

/// The unfused int8 path: DynamicQuant of key and of value per (token, head) row (ops-nn
/// quant/dynamic_quant/op_kernel/dynamic_quant_multi_row.h: rows per pass, level-0 Max folds and
/// one WholeReduceMax with repeat = rows, one Div for every row, the Cast chain
/// f32→s16→f16→s8), then ReshapeAndCache of the int8 rows and of the scales: four launches.
pub fn reshape_and_cache_int8(
    soc: &Soc,
    tokens: u64,
    heads: u64,
    d: u64,
    sz: u64,
) -> Result<Design, NoDesign> {
    let rows = tokens * heads;
    let per_row = 2 * d * sz + 2 * d + 3 * 4 * d + 64;
    let pass = (soc.ub_bytes / per_row).clamp(1, 255);
    let quant = || {
        let shares = block_split(rows, u64::from(soc.vector_cores));
        let mut launch = Vec::new();
        let mut start = 0;
        for share in shares {
            let mut p = Prog::default();
            let mut qx = Que::new(0, Pipe::Mte2, Pipe::V, 2);
            let mut qy = Que::new(1, Pipe::V, Pipe::Mte3, 2);
            let mut r = 0;
            while r < share {
                let n = pass.min(share - r);
                let kx = qx.alloc(&mut p);
                p.dma(Dir::In, n * d * sz, 1, n * d * sz, (start + r) * d * sz, 0.0);
                qx.handoff(&mut p, kx);
                if sz != 4 {
                    p.simple(n * d);
                    p.barrier_v();
                }
                p.simple(n * d); // Abs
                p.barrier_v();
                let mut w = d;
                while w > 64 {
                    w /= 2;
                    p.simple(n * w); // level-0 Max folds
                    p.barrier_v();
                }
                p.vec(VecClass::WholeReduce, n * 64);
                p.barrier_v();
                p.simple(n * 8); // scale = max / 127
                p.barrier_v();
                p.vec(VecClass::Gather, n * 8); // Brcb
                p.vec(VecClass::Transcendental, n * d); // x / scale
                p.barrier_v();
                qx.free(&mut p, kx);
                let ky = qy.alloc(&mut p);
                for _ in 0..3 {
                    p.simple(n * d); // f32→s16→f16→s8
                    p.barrier_v();
                }
                qy.handoff(&mut p, ky);
                p.dma(Dir::Out, n * d, 1, n * d, (start + r) * d, 0.0);
                p.dma(Dir::Out, n * 4, 1, n * 4, (start + r) * 4, 0.0);
                qy.free(&mut p, ky);
                r += n;
            }
            start += share;
            launch.push(p.ops);
        }
        launch
    };
    Ok(Design {
        source: format!("hicann/ops-nn quant/dynamic_quant (op_kernel/dynamic_quant_multi_row.h) twice, then {ATB_RESHAPE} for the int8 rows and for the scales"),
        mode: "DynamicQuant ×2 + ReshapeAndCache ×2".into(),
        launches: vec![quant(), quant(), kv_scatter(soc, tokens, heads * d), kv_scatter(soc, tokens, heads * 4)],
    })
}

/// The design of CANN built-in `builtin` at `shapes` (the replacing op's inputs, first input
/// first).
pub fn design(
    soc: &Soc,
    builtin: CannBuiltin,
    shapes: &[(String, Vec<usize>)],
    sz: u64,
    float16: bool,
) -> Result<Design, NoDesign> {
    let dims = |i: usize| shapes.get(i).map(|(_, s)| s.iter().map(|d| *d as u64).collect::<Vec<u64>>());
    let x = dims(0).unwrap_or_default();
    let last = x.last().copied().unwrap_or(0);
    let rows = x.iter().product::<u64>().checked_div(last).unwrap_or(0);
    match builtin {
        CannBuiltin::RmsNorm => rms_norm(soc, &x, sz),
        CannBuiltin::AddRmsNorm => add_rms_norm(soc, rows, last, sz, float16),
        CannBuiltin::RotaryMul => {
            let table = dims(1).unwrap_or_default();
            match (x.as_slice(), table.as_slice()) {
                ([b, s, n, d], [1, ts, 1, td]) if ts == s && td == d => rotary_half_bsnd(soc, *b, *s, *n, *d, sz),
                _ => Err(NoDesign(format!(
                    "CANN rotate_half modelled for BSND x with [1, S, 1, D] tables only (x {x:?}, r1 {table:?})"
                ))),
            }
        }
        CannBuiltin::SwiGlu => swiglu(soc, rows, last, sz),
        CannBuiltin::RmsNormGrad => rms_norm_grad(soc, rows, last, sz),
        CannBuiltin::SwiGluGrad => swiglu_grad(soc, rows, last, sz),
        CannBuiltin::LayerNormGrad => layer_norm_grad(soc, rows, last, sz),
        CannBuiltin::AddRmsNormGrad => add_rms_norm_grad(soc, rows, last, sz),
        CannBuiltin::RotaryMulGrad => {
            let table = shapes
                .iter()
                .find(|(n, _)| n == "r1")
                .map(|(_, s)| s.iter().map(|d| *d as u64).collect::<Vec<u64>>())
                .unwrap_or_default();
            match (x.as_slice(), table.as_slice()) {
                ([b, s, n, d], [1, ts, 1, td]) if ts == s && td == d => rotary_half_grad_bsnd(soc, *b, *s, *n, *d, sz),
                _ => Err(NoDesign(format!(
                    "CANN rotate_half grad modelled for BSND dy with [1, S, 1, D] tables only (dy {x:?}, r1 {table:?})"
                ))),
            }
        }
        CannBuiltin::GeluGrad => gelu_grad(),
        CannBuiltin::ReshapeAndCache | CannBuiltin::ReshapeAndCacheInt8 => match x.as_slice() {
            [t, n, d] if builtin == CannBuiltin::ReshapeAndCache => reshape_and_cache(soc, *t, *n, *d, sz),
            [t, n, d] => reshape_and_cache_int8(soc, *t, *n, *d, sz),
            _ => Err(NoDesign(format!("ReshapeAndCache modelled for key [T, N, D] only (key {x:?})"))),
        },
        CannBuiltin::CrossEntropyLoss => cross_entropy_loss(soc, rows, last, sz),
        CannBuiltin::CrossEntropyLossGrad => cross_entropy_loss_grad(soc, rows, last, sz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::sim;
    use crate::plan::soc::find;

    fn count(ops: &[Op], f: impl Fn(&Op) -> bool) -> usize {
        ops.iter().filter(|o| f(o)).count()
    }

    fn shapes(list: &[(&str, &[usize])]) -> Vec<(String, Vec<usize>)> {
        list.iter().map(|(n, s)| (n.to_string(), s.to_vec())).collect()
    }

    #[test]
    fn rms_norm_follows_the_tilings_core_split_and_mode_thresholds() {
        let soc = find("Ascend910B2").unwrap();
        // 131072 rows of 128: blockFactor = ceil(131072 / 48) = 2731, so 48 cores (the last
        // 131072 - 47·2731 = 2715 rows); MergeN with rowFactor = 196608 / (16·128 + 260) = 85,
        // so ceil(2731 / 85) = 33 passes: 33 x-reads + gamma.
        let d = rms_norm(soc, &[131072, 128], 2).unwrap();
        assert_eq!(d.mode, "MergeN");
        let cores = &d.launches[0];
        assert_eq!(cores.len(), 48);
        assert_eq!(count(&cores[0], |o| matches!(o, Op::Dma { dir: Dir::In, .. })), 34);
        // Normal at 3584: one row per DMA, 86 rows on core 0 (ceil(4096/48)), two V_S per row.
        let d = rms_norm(soc, &[4096, 3584], 2).unwrap();
        assert_eq!(d.mode, "Normal");
        assert_eq!(count(&d.launches[0][0], |o| matches!(o, Op::Dma { dir: Dir::In, .. })), 87);
        assert_eq!(
            count(&d.launches[0][0], |o| matches!(o, Op::Wait { from: Pipe::V, to: Pipe::S, .. })),
            2 * 86
        );
        // MergeN rows that are not whole 32-byte blocks (1023 halves) move by DataCopyPad with a
        // block per row; rowFactor = 196608 / (16·1024 + 260) = 11 rows per pass covers core 0's
        // ceil(480 / 48) = 10 rows in one copy of 10 blocks. Aligned rows (1024) stay one block.
        let d = rms_norm(soc, &[480, 1023], 2).unwrap();
        let blocks: Vec<u64> = d.launches[0][0]
            .iter()
            .filter_map(|o| match o {
                Op::Dma { dir: Dir::In, blocks, bytes, .. } if *bytes > 1023 * 2 => Some(*blocks),
                _ => None,
            })
            .collect();
        assert_eq!(blocks, vec![10]);
        let d = rms_norm(soc, &[480, 1024], 2).unwrap();
        assert!(d.launches[0][0].iter().all(|o| !matches!(o, Op::Dma { dir: Dir::In, blocks: 2.., .. })));
        // Split-D above 12288 aligned 16-bit columns: no baseline.
        assert!(rms_norm(soc, &[4, 12304], 2).is_err());
        assert!(rms_norm(soc, &[4, 12288], 2).is_ok());
    }

    #[test]
    fn merge_n_broadcasts_rstd_and_gamma_outside_the_performance_shapes() {
        // rms_norm_tiling.cpp: isPerformance for 16-bit x [≤ 512, D] or [≤ 512, ≤ 8, D], D ≤ 5120.
        assert!(merge_n_performance(&[512, 128], 2));
        assert!(merge_n_performance(&[4, 8, 128], 2));
        assert!(!merge_n_performance(&[513, 128], 2));
        assert!(!merge_n_performance(&[4, 9, 128], 2));
        assert!(!merge_n_performance(&[2, 2, 2, 128], 2));
        assert!(!merge_n_performance(&[512, 128], 4));
        assert!(!merge_n_performance(&[512, 5136], 2));
        // The same 480 rows of 128 either way: core 0 has ceil(480 / 48) = 10 rows, one pass
        // (rowFactor 85). Outside the performance shapes the kernel pays two broadcast Copies,
        // gamma's to [rowFactor, 128] once and rstd's to [10, 128] per pass; inside, rstd and
        // gamma go row by row: a Mul per 64 columns each, the same elements as one full Mul.
        let soc = find("Ascend910B2").unwrap();
        let simple = |x: &[u64]| -> u64 {
            rms_norm(soc, x, 2).unwrap().launches[0][0]
                .iter()
                .map(|o| match o {
                    Op::Vector { api: VecClass::Simple, elements } => *elements,
                    _ => 0,
                })
                .sum()
        };
        let muls = |x: &[u64]| {
            count(&rms_norm(soc, x, 2).unwrap().launches[0][0], |o| {
                matches!(o, Op::Vector { api: VecClass::Simple, elements: 640 })
            })
        };
        assert_eq!(simple(&[2, 240, 128]) - simple(&[480, 128]), 85 * 128 + 10 * 128);
        // repeatByRow: 2 columns' Muls for rstd and 2 for gamma, each of 10 rows x 64 lanes;
        // ReduceSumMultiN's Duplicate and two column Adds are [10, 64] too.
        assert_eq!(muls(&[480, 128]), 4 + 3);
        assert_eq!(muls(&[2, 240, 128]), 3);
    }

    #[test]
    fn every_design_runs_on_the_simulator_at_the_model_shapes() {
        let soc = find("Ascend910B2").unwrap();
        type Case = (CannBuiltin, Vec<(String, Vec<usize>)>, bool);
        let cases: Vec<Case> = vec![
            (CannBuiltin::RmsNorm, shapes(&[("x", &[4096, 3584]), ("gamma", &[3584])]), false),
            (
                CannBuiltin::AddRmsNorm,
                shapes(&[("x1", &[4096, 4096]), ("x2", &[4096, 4096]), ("gamma", &[4096])]),
                true,
            ),
            (
                CannBuiltin::AddRmsNorm,
                shapes(&[("x1", &[4096, 3584]), ("x2", &[4096, 3584]), ("gamma", &[3584])]),
                false,
            ),
            (CannBuiltin::RotaryMul, shapes(&[("x", &[1, 4096, 8, 128]), ("r1", &[1, 4096, 1, 128])]), false),
            (CannBuiltin::SwiGlu, shapes(&[("gate", &[64, 12288]), ("up", &[64, 12288])]), false),
            (CannBuiltin::ReshapeAndCache, shapes(&[("key", &[4096, 8, 128])]), false),
            (
                CannBuiltin::RmsNormGrad,
                shapes(&[("dy", &[4096, 3584]), ("x", &[4096, 3584]), ("rstd", &[4096]), ("gamma", &[3584])]),
                false,
            ),
            (
                CannBuiltin::RmsNormGrad,
                shapes(&[
                    ("dy", &[4096 * 32, 128]),
                    ("x", &[4096 * 32, 128]),
                    ("rstd", &[4096 * 32]),
                    ("gamma", &[128]),
                ]),
                false,
            ),
            (
                CannBuiltin::SwiGluGrad,
                shapes(&[("dy", &[64, 18944]), ("gate", &[64, 18944]), ("up", &[64, 18944])]),
                false,
            ),
            (CannBuiltin::ReshapeAndCacheInt8, shapes(&[("key", &[4096, 8, 128])]), false),
            (CannBuiltin::CrossEntropyLoss, shapes(&[("logits", &[48, 60000]), ("target", &[48])]), false),
            (
                CannBuiltin::CrossEntropyLossGrad,
                shapes(&[("logits", &[48, 60000]), ("target", &[48])]),
                false,
            ),
            (
                CannBuiltin::LayerNormGrad,
                shapes(&[
                    ("dy", &[4096, 1152]),
                    ("x", &[4096, 1152]),
                    ("mean", &[4096]),
                    ("rstd", &[4096]),
                    ("gamma", &[1152]),
                ]),
                false,
            ),
            (
                CannBuiltin::RotaryMulGrad,
                shapes(&[
                    ("dy", &[1, 4096, 28, 128]),
                    ("x", &[1, 4096, 28, 128]),
                    ("r1", &[1, 4096, 1, 128]),
                    ("r2", &[1, 4096, 1, 128]),
                ]),
                false,
            ),
            (
                CannBuiltin::AddRmsNormGrad,
                shapes(&[
                    ("dy", &[4096, 3584]),
                    ("x_sum", &[4096, 3584]),
                    ("rstd", &[4096]),
                    ("gamma", &[3584]),
                    ("dx_sum", &[4096, 3584]),
                ]),
                false,
            ),
        ];
        for (op, s, f16) in cases {
            let d = design(soc, op, &s, 2, f16).unwrap_or_else(|e| panic!("{op:?}: {e}"));
            let m = crate::perf::cann_design(soc, &d).unwrap_or_else(|e| panic!("{op:?}: {e}"));
            assert!(m.modelled.time_us.low <= m.modelled.time_us.mid, "{op:?}");
            assert!(m.modelled.time_us.mid <= m.modelled.time_us.high, "{op:?}");
            for launch in &d.launches {
                assert!(sim::simulate_launch(
                    launch,
                    &crate::perf::cycles::Costs::of(soc, crate::perf::cycles::Level::Mid)
                )
                .is_ok());
            }
        }
        // The gelu grads have none (closed kernels), nor has a rotary grad with BNSD tables.
        let gelu = shapes(&[("dy", &[4096, 4304]), ("x", &[4096, 4304])]);
        assert!(design(soc, CannBuiltin::GeluGrad, &gelu, 2, false).is_err());
        let bnsd = shapes(&[("dy", &[1, 8, 16, 128]), ("x", &[1, 8, 16, 128]), ("r1", &[1, 1, 16, 128])]);
        assert!(design(soc, CannBuiltin::RotaryMulGrad, &bnsd, 2, false).is_err());
        // Interleaved or BNSD tables have no design.
        assert!(design(
            soc,
            CannBuiltin::RotaryMul,
            &shapes(&[("x", &[1, 8, 16, 128]), ("r1", &[1, 1, 16, 128])]),
            2,
            false
        )
        .is_err());
    }
}
