//! The CANN designs of the backward built-ins: RmsNormGrad, SwiGluGrad and LayerNormGradV3
//! (hicann/ops-nn) and RotaryPositionEmbeddingGrad (hicann/ops-transformer), the 910B kernels,
//! not the arch35 "regbase" ones, written as the forward designs in the parent module are: facts
//! from the public sources with file references, what was not read said as an assumption, and no
//! baseline for shapes a design does not cover. AddRmsNormGrad has no CANN kernel (neither repo
//! has one): its baseline is what a torch_npu step runs instead, RmsNormGrad then the gradient
//! accumulation Add. The 910B GeluGrad / GeluGradV2 / FastGeluGrad are closed TBE kernels: the
//! gelu grads get no baseline, with that reason.

use super::{binary_stream, block_split, ceil_div, Design, NoDesign, Prog, Que};
use crate::perf::cycles::VecClass;
use crate::perf::sim::{Dir, Op, Pipe};
use crate::plan::soc::Soc;

/// `USED_UB = (192 − 1) · 1024` bytes and the split-N row limit `BUFFER_SIZE_SPLIT_N_HIGH_PRECISION
/// = 6080` columns (norm/rms_norm_grad/op_host/rms_norm_grad_tiling.cpp).
const RMS_GRAD_USED_UB: u64 = 195_584;
const RMS_GRAD_SPLIT_N_MAX_D: u64 = 6080;
/// `SMALLD_THRESHOLD`: at most this many aligned columns, several rows per pass.
const RMS_GRAD_SMALL_D: u64 = 640;

/// ReduceSumHalfInterval of rms_norm_grad (op_kernel/reduce_common.h): the tail beyond the
/// largest power of two ≤ cols added onto the body, then halving Adds down to 64 lanes; the
/// element count of each Add.
fn power_of_two_halving_adds(cols: u64) -> Vec<u64> {
    let mut out = Vec::new();
    if cols <= 64 {
        return out;
    }
    let mut body = 1u64 << (63 - cols.leading_zeros());
    if cols > body {
        out.push(cols - body);
    }
    while body > 64 {
        body /= 2;
        out.push(body);
    }
    out
}

/// Rows per pass of the small-D split-N path: `CalcSmallDBufferSize` (rms_norm_grad_tiling.cpp)
/// gives `(USED_UB − 10·D) / (24·D + 268)` rows of the aligned D, capped by the core's rows
/// (`LargeNSmallD`).
fn rms_grad_small_d_rows(align: u64, block_factor: u64) -> u64 {
    ((RMS_GRAD_USED_UB - 10 * align) / (24 * align + 268)).clamp(1, block_factor.max(1))
}

/// ops-nn norm/rms_norm_grad on 910B (tiling key 1, `RmsNormGradSplitNHighPrecision`, in
/// op_kernel/rms_norm_grad_split_n_high_precision.h), in torch's default non-deterministic mode
/// (`fixed_output = 0`: dgamma by atomic add). Rows over cores (`block_factor = ceil(rows /
/// cores)`); core 0 zero-fills dgamma and every core meets in SyncAll before its rows; gamma in
/// and cast once, a float32 dgamma partial per core in UB; dy, x and rstd double-buffered
/// (`BUFFER_NUM_DB = 2`).
/// - aligned D > 640: one row per pass; per row V_S + GetValue of rstd, S_V, Cast x, Muls,
///   Cast dy, Mul, Add (dgamma), Mul (gamma), Mul, ReduceSumHalfInterval (Adds, WholeReduceSum,
///   V_S + GetValue), S_V, Muls, Sub, Muls, Cast, dx out;
/// - aligned D ≤ 640 (`ComputeSmallD`): rows per pass from `CalcSmallDBufferSize`; BroadCast of
///   rstd, Cast, Mul, Cast, Mul, one Add per row into dgamma, BroadCast of gamma, Mul, Mul,
///   ReduceSumMultiN (Duplicate, one Add per 64 columns with repeat = rows, WholeReduceSum),
///   Muls, BroadCast, Mul, Sub, BroadCast, Mul, Cast. A BroadCast is counted as one Gather-class
///   pass over its output (its internal Brcb/Copy steps were not read);
/// - at the end each core's dgamma partial goes out with SetAtomicAdd (one D·4-byte write).
///
/// SyncAll is no simulator op: it is modelled as core 0's zero-fill write and a PIPE_ALL on core
/// 0, and one scalar GM access (the flag) on every core; the other cores do not wait for core
/// 0's write (generous to CANN). Aligned D > 6080 (split-D, tiling key 2): no baseline.
pub fn rms_norm_grad(soc: &Soc, rows: u64, d: u64, sz: u64) -> Result<Design, NoDesign> {
    let lanes = 32 / sz;
    let align = d.div_ceil(lanes) * lanes;
    if d > RMS_GRAD_SPLIT_N_MAX_D {
        return Err(NoDesign(format!(
            "CANN RmsNormGrad splits D = {d} > {RMS_GRAD_SPLIT_N_MAX_D} (split-D mode is not modelled)"
        )));
    }
    let shares = block_split(rows, u64::from(soc.vector_cores));
    let block_factor = shares.first().copied().unwrap_or(0);
    let cores = shares.len() as f64;
    let gamma_hit = (cores - 1.0) / cores;
    let cast = sz != 4;
    let small = align <= RMS_GRAD_SMALL_D;
    let pass_rows = if small { rms_grad_small_d_rows(align, block_factor) } else { 1 };
    let mut launch = Vec::new();
    let mut start = 0u64;
    for (core, share) in shares.into_iter().enumerate() {
        let mut p = Prog::default();
        if core == 0 {
            p.dma(Dir::Out, d * 4, 1, d * 4, 0, 0.0); // InitOutput: dgamma = 0
            p.ops.push(Op::Barrier(None));
        }
        p.ops.push(Op::Scalar { gm: 1, ub: 0 }); // SyncAll
        let mut qr = Que::new(0, Pipe::Mte2, Pipe::V, 2);
        let mut qx = Que::new(1, Pipe::Mte2, Pipe::V, 2);
        let mut qdy = Que::new(2, Pipe::Mte2, Pipe::V, 2);
        let mut qdx = Que::new(3, Pipe::V, Pipe::Mte3, 2);
        p.dma(Dir::In, d * sz, 1, d * sz, 0, gamma_hit);
        p.sync(Pipe::Mte2, Pipe::V);
        if cast {
            p.simple(align);
            p.barrier_v();
        }
        p.simple(align); // Duplicate: the dgamma partial = 0
        p.barrier_v();
        let mut r = 0;
        while r < share {
            let n = pass_rows.min(share - r);
            let e = n * align;
            let off = (start + r) * d * sz;
            let kr = qr.alloc(&mut p);
            p.dma(Dir::In, n * 4, 1, n * 4, (start + r) * 4, 0.0);
            qr.handoff(&mut p, kr);
            let kx = qx.alloc(&mut p);
            p.dma(Dir::In, n * d * sz, n, d * sz, off, 0.0);
            qx.handoff(&mut p, kx);
            let kdy = qdy.alloc(&mut p);
            p.dma(Dir::In, n * d * sz, n, d * sz, off, 0.0);
            qdy.handoff(&mut p, kdy);
            let kdx = qdx.alloc(&mut p);
            if small {
                small_d_pass(&mut p, n, d, align, cast);
                qr.free(&mut p, kr);
            } else {
                // rstd read by the scalar unit, the Cast of x overlapping the S_V flag.
                p.sync(Pipe::V, Pipe::S);
                p.ops.push(Op::Scalar { gm: 0, ub: 1 });
                p.ops.push(Op::Set { from: Pipe::S, to: Pipe::V, key: 8 });
                qr.free(&mut p, kr);
                if cast {
                    p.simple(e);
                    p.barrier_v();
                }
                p.ops.push(Op::Wait { from: Pipe::S, to: Pipe::V, key: 8 });
                p.simple(e); // x · rstd
                p.barrier_v();
                if cast {
                    p.simple(e);
                    p.barrier_v();
                }
                p.simple(e); // dy · x̂
                p.barrier_v();
                p.simple(e); // dgamma += dy · x̂
                p.simple(e); // dy · gamma
                p.barrier_v();
                p.simple(e); // dy·gamma · x̂
                p.barrier_v();
                for a in power_of_two_halving_adds(d) {
                    p.simple(a);
                    p.barrier_v();
                }
                p.vec(VecClass::WholeReduce, 64);
                p.sync(Pipe::V, Pipe::S);
                p.ops.push(Op::Scalar { gm: 0, ub: 1 }); // GetValue(0)
                p.ops.push(Op::Scalar { gm: 0, ub: 0 }); // · avg
                p.sync(Pipe::S, Pipe::V);
                for _ in 0..3 {
                    p.simple(e); // Muls(mean), Sub, Muls(rstd)
                    p.barrier_v();
                }
                if cast {
                    p.simple(e);
                    p.barrier_v();
                }
            }
            qx.free(&mut p, kx);
            qdy.free(&mut p, kdy);
            qdx.handoff(&mut p, kdx);
            p.dma(Dir::Out, n * d * sz, n, d * sz, off, 0.0);
            qdx.free(&mut p, kdx);
            r += n;
        }
        p.sync(Pipe::V, Pipe::Mte3);
        p.dma(Dir::Out, d * 4, 1, d * 4, 0, 0.0); // SetAtomicAdd: the partial onto dgamma
        start += share;
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-nn norm/rms_norm_grad (op_host/rms_norm_grad_tiling.cpp, op_kernel/rms_norm_grad_split_n_high_precision.h, reduce_common.h)".into(),
        mode: if small { "split N, small D" } else { "split N" }.into(),
        launches: vec![launch],
    })
}

/// The vector calls of one `ComputeSmallD` pass of `n` rows.
fn small_d_pass(p: &mut Prog, n: u64, d: u64, align: u64, cast: bool) {
    let e = n * align;
    p.vec(VecClass::Gather, e); // BroadCast rstd to [n, D]
    p.barrier_v();
    if cast {
        p.simple(e);
        p.barrier_v();
    }
    p.simple(e); // x̂ = x · rstd
    p.barrier_v();
    if cast {
        p.simple(e);
        p.barrier_v();
    }
    p.simple(e); // dy · x̂
    p.barrier_v();
    for _ in 0..n {
        p.simple(align); // dgamma += row
        p.barrier_v();
    }
    p.vec(VecClass::Gather, e); // BroadCast gamma
    p.barrier_v();
    p.simple(e); // dy · gamma
    p.barrier_v();
    p.simple(e); // · x̂
    p.barrier_v();
    p.simple(n * 64); // ReduceSumMultiN: Duplicate
    p.barrier_v();
    for _ in 0..ceil_div(d, 64) {
        p.simple(n * 64); // an Add per 64 columns, repeat = rows
        p.barrier_v();
    }
    p.vec(VecClass::WholeReduce, n * 64);
    p.barrier_v();
    p.simple(n); // · avg
    p.barrier_v();
    p.vec(VecClass::Gather, e); // BroadCast the means
    p.barrier_v();
    p.simple(e); // x̂ · mean
    p.barrier_v();
    p.simple(e); // Sub
    p.barrier_v();
    p.vec(VecClass::Gather, e); // BroadCast rstd
    p.barrier_v();
    p.simple(e); // · rstd
    p.barrier_v();
    if cast {
        p.simple(e);
        p.barrier_v();
    }
}

/// The SwiGluGrad tile: `maxTileLen = ub / (bufferNum · 5 queues · size + tbufs · 4)` (5 float32
/// TBufs for 16-bit, 2 for float32; `GetBufferNumAndDataLenPerUB`, SWIGLU_GRAD_SINGLE, in
/// activation/swi_glu/op_host/swi_glu_tiling.cpp), aligned down to 32 B, double-buffered.
/// Assumed base shape (`SaveOptBaseShape`'s search was not replayed): a row longer than the
/// tile is cut into 512-B multiples (`getBaseColLenUpBound`), one row per tile; shorter rows
/// are packed whole, as many as fit, but no more than a core's share.
fn swiglu_grad_tile(soc: &Soc, rows: u64, h: u64, sz: u64) -> (u64, u64) {
    let tbufs = if sz == 4 { 2 } else { 5 };
    let per_elem = 2 * 5 * sz + tbufs * 4;
    let lanes = 32 / sz;
    let max_tile = (soc.ub_bytes / per_elem) / lanes * lanes;
    if h > max_tile {
        let line = 512 / sz;
        let col = if max_tile > line { max_tile / line * line } else { max_tile };
        (1, col)
    } else {
        let per_core = ceil_div(rows, u64::from(soc.vector_cores));
        (((max_tile / h).min(per_core)).max(1), h)
    }
}

/// ops-nn activation/swi_glu_grad on 910B (op_kernel/swi_glu_grad.cpp →
/// `SwiGluGradSingle<SwiGluGradBF16 / SwiGluGradVector>`, swi_glu_grad_single.hpp,
/// swi_glu_grad_bf16.hpp, swi_glu_grad_float.hpp): the built-in takes x = [gate | up] as one
/// [.., 2H] tensor and writes [dgate | dup]; the same bytes as the two-tensor op. Tiles of
/// [`swiglu_grad_tile`] over cores (`tileNumPerCore = ceil(tiles / cores)`); per tile A (gate),
/// L (dy) and B (up) in, then Cast A, Muls(−1), Exp, Adds(1), Duplicate(1), Div (the sigmoid),
/// Mul, Cast L, Mul, Cast (dup out), Muls(−1), Adds(1), Mul, Mul, Muls, Add, Cast B, Mul, Mul,
/// Cast (dgate out); the casts only for 16-bit.
pub fn swiglu_grad(soc: &Soc, rows: u64, h: u64, sz: u64) -> Result<Design, NoDesign> {
    let cast = sz != 4;
    let (tile_rows, tile_cols) = swiglu_grad_tile(soc, rows, h, sz);
    let col_tiles = ceil_div(h, tile_cols);
    let tiles = ceil_div(rows, tile_rows) * col_tiles;
    let shares = block_split(tiles, u64::from(soc.vector_cores));
    let mut launch = Vec::new();
    let mut start = 0u64;
    for share in shares {
        let mut p = Prog::default();
        let mut qa = Que::new(0, Pipe::Mte2, Pipe::V, 2);
        let mut ql = Que::new(1, Pipe::Mte2, Pipe::V, 2);
        let mut qb = Que::new(2, Pipe::Mte2, Pipe::V, 2);
        let mut qm = Que::new(3, Pipe::V, Pipe::Mte3, 2);
        let mut qn = Que::new(4, Pipe::V, Pipe::Mte3, 2);
        for t in start..start + share {
            let (rb, cb) = (t / col_tiles, t % col_tiles);
            let r = tile_rows.min(rows - rb * tile_rows);
            let c = tile_cols.min(h - cb * tile_cols);
            let n = r * c;
            let row0 = rb * tile_rows;
            let x_off = (row0 * 2 * h + cb * tile_cols) * sz;
            let dy_off = (row0 * h + cb * tile_cols) * sz;
            let ka = qa.alloc(&mut p);
            p.dma(Dir::In, n * sz, r, c * sz, x_off, 0.0);
            qa.handoff(&mut p, ka);
            let kl = ql.alloc(&mut p);
            p.dma(Dir::In, n * sz, if c == h { 1 } else { r }, c * sz, dy_off, 0.0);
            ql.handoff(&mut p, kl);
            let kb = qb.alloc(&mut p);
            p.dma(Dir::In, n * sz, r, c * sz, x_off + h * sz, 0.0);
            qb.handoff(&mut p, kb);
            // The sigmoid.
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            qa.free(&mut p, ka);
            for api in [VecClass::Simple, VecClass::Transcendental, VecClass::Simple, VecClass::Simple] {
                p.vec(api, n); // Muls(−1), Exp, Adds(1), Duplicate(1)
                p.barrier_v();
            }
            p.vec(VecClass::Transcendental, n); // Div
            p.barrier_v();
            // dup = dy · silu(gate).
            p.simple(n);
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            ql.free(&mut p, kl);
            let kn = qn.alloc(&mut p);
            p.simple(n);
            p.barrier_v();
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            // dgate = dy · up · σ(1 + gate(1 − σ)).
            for _ in 0..5 {
                p.simple(n); // Muls, Adds, Mul, Mul, Muls
                p.barrier_v();
            }
            p.simple(n); // Add
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            p.simple(n);
            p.barrier_v();
            let km = qm.alloc(&mut p);
            p.simple(n);
            qb.free(&mut p, kb);
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            // CopyOut: dgate, then dup.
            qm.handoff(&mut p, km);
            p.dma(Dir::Out, n * sz, r, c * sz, x_off, 0.0);
            qm.free(&mut p, km);
            qn.handoff(&mut p, kn);
            p.dma(Dir::Out, n * sz, r, c * sz, x_off + h * sz, 0.0);
            qn.free(&mut p, kn);
        }
        start += share;
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-nn activation/swi_glu_grad (op_kernel/swi_glu_grad.cpp, swi_glu_grad_single.hpp, swi_glu_grad_bf16.hpp, swi_glu_grad_float.hpp; tiling activation/swi_glu/op_host/swi_glu_tiling.cpp)".into(),
        mode: "double-buffered tiles".into(),
        launches: vec![launch],
    })
}

/// The column range of LayerNormGradV3's SingleRead template (`LNG_MIN_COL`, `LNG_MAX_COL` in
/// norm/layer_norm_grad_v3/op_host/layer_norm_grad_v3_single_read_tiling.cpp). The tiling
/// registry tries the 910B templates in ascending priority (SingleRead 1000, Transpose 2000,
/// Common 3000, Workspace 4000) and takes the first that is capable.
const LNG_SINGLE_READ_COLS: std::ops::RangeInclusive<u64> = 768..=12176;

/// Rows per pass of SingleRead (`ubFormer`): four float32 row buffers share
/// `(UB − 64·5 − 512·2) / 4` bytes, so a buffer holds `(UB − 1344) / 16` floats, divided by the
/// row aligned to 16 elements for 16-bit (8 for float32) (`colAlignM`).
fn layer_norm_grad_rows_per_pass(ub: u64, col: u64, sz: u64) -> u64 {
    let align_m = if sz == 4 { col.div_ceil(8) * 8 } else { col.div_ceil(16) * 16 };
    ((ub - 64 * 5 - 512 * 2) / 4 / 4) / align_m.max(1)
}

/// `n` vector calls of `elements` each: the kernel's per-row loops (an inline broadcast of a
/// per-row scalar or of gamma over one row, one call a row).
fn per_row(p: &mut Prog, n: u64, elements: u64) {
    for _ in 0..n {
        p.simple(elements);
    }
    p.barrier_v();
}

/// ops-nn norm/layer_norm_grad_v3 on 910B, the SingleRead template (768 ≤ D ≤ 12176;
/// op_kernel/layer_norm_grad_v3_single_read.h), in torch's default non-deterministic mode.
/// Rows over cores (`blockFormer = ceil(rows / cores)`), [`layer_norm_grad_rows_per_pass`] rows a
/// pass, every queue single-buffered but mean and rstd (2 buffers, loaded a pass ahead).
/// Each core zero-fills its workspace (two float32 rows: the dgamma and dbeta partials), core 0
/// zero-fills dgamma and dbeta, then a cross-core flag and PIPE_ALL. Per pass:
/// - dy in, a UB copy and Cast to float32, then one atomic-add DMA **per row** of dy into the
///   dbeta partial;
/// - mean and rstd broadcast by Brcb; x in and cast; x − mean and · rstd one call a row;
///   dy · x̂ for the whole pass, then one atomic-add DMA per row into the dgamma partial;
/// - gamma in again (every pass) and cast; dy · gamma one call a row; · x̂; a level-2 ReduceSum
///   **per row** (each with its hidden V_S / S_V pairs), Muls(1/D), Brcb, · x̂ a call a row;
///   the second per-row ReduceSum round of dy·gamma, Muls, Brcb; Sub; − mean one call a row,
///   · rstd one call a row; Cast; dx out.
///
/// At the end each core reads its two partials back and atomically adds them onto dgamma and
/// dbeta after waiting for core 0's zero-fill (the cross-core flag is modelled as one scalar
/// GM access). The workspace stays in L2 (48 cores × 2 rows), so its zero-fill, the per-row
/// atomic adds and the read-back are modelled as L2 traffic, not HBM: generous to CANN.
/// Other column counts pick the Transpose / Common / Workspace templates: no baseline.
pub fn layer_norm_grad(soc: &Soc, rows: u64, col: u64, sz: u64) -> Result<Design, NoDesign> {
    if !LNG_SINGLE_READ_COLS.contains(&col) {
        return Err(NoDesign(format!(
            "CANN LayerNormGradV3 takes D = {col} outside SingleRead's {}..={} to another template (not modelled)",
            LNG_SINGLE_READ_COLS.start(),
            LNG_SINGLE_READ_COLS.end()
        )));
    }
    let cast = sz != 4;
    let align = col.div_ceil(8) * 8;
    let pass_rows = layer_norm_grad_rows_per_pass(soc.ub_bytes, col, sz).max(1);
    let shares = block_split(rows, u64::from(soc.vector_cores));
    let cores = shares.len() as f64;
    let gamma_hit = (cores - 1.0) / cores;
    let ws_row = align * 4;
    let mut launch = Vec::new();
    let mut start = 0u64;
    for (core, share) in shares.into_iter().enumerate() {
        let mut p = Prog::default();
        p.dma(Dir::Out, 2 * ws_row, 1, 2 * ws_row, 0, 1.0); // the core's partials = 0
        if core == 0 {
            p.dma(Dir::Out, col * 4, 1, col * 4, 0, 0.0); // dgamma = 0
            p.dma(Dir::Out, col * 4, 1, col * 4, 0, 0.0); // dbeta = 0
        }
        p.ops.push(Op::Barrier(None));
        let mut qx = Que::new(0, Pipe::Mte2, Pipe::V, 1);
        let mut qdy = Que::new(1, Pipe::Mte2, Pipe::V, 1);
        let mut qdg = Que::new(2, Pipe::V, Pipe::Mte3, 1);
        let mut qdx = Que::new(3, Pipe::V, Pipe::Mte3, 1);
        let mut qmean = Que::new(4, Pipe::Mte2, Pipe::V, 2);
        let mut qrstd = Que::new(5, Pipe::Mte2, Pipe::V, 2);
        let mut r = 0;
        while r < share {
            let n = pass_rows.min(share - r);
            let e = n * align;
            let off = (start + r) * col * sz;
            let km = qmean.alloc(&mut p);
            p.dma(Dir::In, n * 4, 1, n * 4, (start + r) * 4, 0.0);
            qmean.handoff(&mut p, km);
            let kr = qrstd.alloc(&mut p);
            p.dma(Dir::In, n * 4, 1, n * 4, (start + r) * 4, 0.0);
            qrstd.handoff(&mut p, kr);
            // dy: in, to float32, each row atomically onto the dbeta partial.
            let kdy = qdy.alloc(&mut p);
            p.dma(Dir::In, n * col * sz, 1, n * col * sz, off, 0.0);
            qdy.handoff(&mut p, kdy);
            let kdx = qdx.alloc(&mut p);
            p.simple(e); // the UB copy
            p.barrier_v();
            if cast {
                p.simple(e);
                p.barrier_v();
            }
            qdy.free(&mut p, kdy);
            qdx.handoff(&mut p, kdx);
            for _ in 0..n {
                p.dma(Dir::Out, ws_row, 1, ws_row, 0, 1.0);
            }
            qdx.free(&mut p, kdx);
            // x̂ = (x − mean) · rstd, dy · x̂ atomically onto the dgamma partial.
            let kx = qx.alloc(&mut p);
            p.dma(Dir::In, n * col * sz, 1, n * col * sz, off, 0.0);
            qx.handoff(&mut p, kx);
            p.vec(VecClass::Gather, n * 8); // Brcb mean
            p.barrier_v();
            qmean.free(&mut p, km);
            if cast {
                p.simple(e);
                p.barrier_v();
            }
            per_row(&mut p, n, align); // − mean
            p.vec(VecClass::Gather, n * 8); // Brcb rstd
            p.barrier_v();
            qrstd.free(&mut p, kr);
            let kg = qdy.alloc(&mut p);
            let hit = if r == 0 { gamma_hit } else { 1.0 };
            p.dma(Dir::In, col * sz, 1, col * sz, 0, hit);
            qdy.handoff(&mut p, kg);
            per_row(&mut p, n, align); // · rstd
            let kdg = qdg.alloc(&mut p);
            let kdx = qdx.alloc(&mut p);
            p.simple(e); // dy · x̂
            p.barrier_v();
            qdg.handoff(&mut p, kdg);
            for _ in 0..n {
                p.dma(Dir::Out, ws_row, 1, ws_row, 0, 1.0);
            }
            qdg.free(&mut p, kdg);
            // dx = rstd · (dy·γ − x̂·mean(dy·γ·x̂) − mean(dy·γ)).
            if cast {
                p.simple(align); // gamma to float32
                p.barrier_v();
            }
            per_row(&mut p, n, align); // dy · γ
            p.simple(e); // · x̂
            p.barrier_v();
            for _ in 0..n {
                p.reduce_sum(align);
            }
            p.barrier_v();
            p.simple(n); // · 1/D
            p.barrier_v();
            qdy.free(&mut p, kg);
            p.vec(VecClass::Gather, n * 8);
            p.barrier_v();
            let kdg = qdg.alloc(&mut p);
            per_row(&mut p, n, align); // x̂ · mean
            qx.free(&mut p, kx);
            for _ in 0..n {
                p.reduce_sum(align);
            }
            p.barrier_v();
            p.simple(n);
            p.barrier_v();
            p.vec(VecClass::Gather, n * 8);
            p.barrier_v();
            p.simple(e); // Sub
            qdg.free(&mut p, kdg);
            p.barrier_v();
            per_row(&mut p, n, align); // − mean(dy·γ)
            per_row(&mut p, n, align); // · rstd
            if cast {
                p.simple(e);
                p.barrier_v();
            }
            qdx.handoff(&mut p, kdx);
            p.dma(Dir::Out, n * col * sz, 1, n * col * sz, off, 0.0);
            qdx.free(&mut p, kdx);
            r += n;
        }
        // The partials read back and added onto dgamma and dbeta once core 0 has zeroed them.
        p.ops.push(Op::Barrier(None));
        p.ops.push(Op::Scalar { gm: 1, ub: 0 });
        for _ in 0..2 {
            p.dma(Dir::In, col * 4, 1, col * 4, 0, 1.0);
            p.sync(Pipe::Mte2, Pipe::Mte3);
            p.dma(Dir::Out, col * 4, 1, col * 4, 0, 0.0);
        }
        start += share;
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-nn norm/layer_norm_grad_v3 (op_host/layer_norm_grad_v3_single_read_tiling.cpp, op_kernel/layer_norm_grad_v3_single_read.h)".into(),
        mode: "SingleRead".into(),
        launches: vec![launch],
    })
}

/// Positions per tile of RotaryPositionEmbeddingGrad's rotate_half kernel without x (no dcos /
/// dsin wanted): `(UB − 20 KiB) / (4 tensors · size + float32 temporaries · 4)` elements, with
/// 7 temporaries for 16-bit and 3 for float32 (`IN_OUT_TENSOR_SINGLE_NUM`, `TENSOR_*_SINGLE_NUM`
/// in op_host/rope_half_grad_tiling.cpp), in whole rows of D (D a multiple of 64).
fn rotary_grad_tile_positions(ub: u64, d: u64, sz: u64) -> u64 {
    let temps = if sz == 4 { 3 } else { 7 };
    ((ub - 20 * 1024) / (4 * sz + temps * 4)) / d
}

/// hicann/ops-transformer posembedding/rotary_position_embedding_grad, rotate_half on BSND dy
/// [B, S, N, D] with [1, S, 1, D] tables, x not passed (dx only: the catalogue op's default
/// `table_grads = false`; with table grads CANN also reads x and writes dcos/dsin, slower, so
/// this is the generous choice). The tiling (op_host/rope_half_grad_tiling.cpp) splits the
/// table's S·D elements over cores in whole positions (`coreData`), tiles of
/// [`rotary_grad_tile_positions`]; the kernel (op_kernel/rotate_half_grad.h, every queue
/// single-buffered) per tile loads cos and sin and casts them, then per (batch, head) one
/// strided DMA of the tile's rows of dy, Cast, Mul (cos), Mul (sin), Muls(−1), the two half-row
/// UB copies that rotate, Add, Cast, and one strided DMA of dx out.
pub fn rotary_half_grad_bsnd(soc: &Soc, b: u64, s: u64, n: u64, d: u64, sz: u64) -> Result<Design, NoDesign> {
    if d % 64 != 0 || d > 896 {
        return Err(NoDesign(format!(
            "CANN rotate_half grad modelled for D a multiple of 64 up to 896 (D = {d}: the padded path is not modelled)"
        )));
    }
    let cast = sz != 4;
    let lines = rotary_grad_tile_positions(soc.ub_bytes, d, sz).max(1);
    let row = d * sz;
    let positions_per_core = ceil_div(s, u64::from(soc.vector_cores));
    let cores = ceil_div(s, positions_per_core);
    let mut launch = Vec::new();
    for core in 0..cores {
        let first = core * positions_per_core;
        let share = positions_per_core.min(s - first);
        let mut p = Prog::default();
        let mut qcos = Que::new(0, Pipe::Mte2, Pipe::V, 1);
        let mut qsin = Que::new(1, Pipe::Mte2, Pipe::V, 1);
        let mut qdy = Que::new(2, Pipe::Mte2, Pipe::V, 1);
        let mut qdx = Que::new(3, Pipe::V, Pipe::Mte3, 1);
        let mut t = 0;
        while t < share {
            let l = lines.min(share - t);
            let e = l * d;
            let pos = first + t;
            let kc = qcos.alloc(&mut p);
            let ks = qsin.alloc(&mut p);
            p.dma(Dir::In, l * row, 1, l * row, pos * row, 0.0);
            p.dma(Dir::In, l * row, 1, l * row, pos * row, 0.0);
            qcos.handoff(&mut p, kc);
            qsin.handoff(&mut p, ks);
            if cast {
                p.simple(e);
                p.simple(e);
            }
            for bh in 0..b * n {
                let off = ((bh / n) * s * n + pos * n + bh % n) * row;
                let kdy = qdy.alloc(&mut p);
                p.dma(Dir::In, l * row, l, row, off, 0.0);
                qdy.handoff(&mut p, kdy);
                let kdx = qdx.alloc(&mut p);
                if cast {
                    p.simple(e);
                    qdy.free(&mut p, kdy);
                    p.barrier_v();
                }
                p.simple(e); // dy · cos
                p.simple(e); // dy · sin
                if !cast {
                    qdy.free(&mut p, kdy);
                }
                p.barrier_v();
                p.simple(e); // Muls(−1)
                p.barrier_v();
                p.simple(e / 2); // the rotation: two half-row copies
                p.simple(e / 2);
                p.barrier_v();
                p.simple(e); // Add
                if cast {
                    p.barrier_v();
                    p.simple(e);
                }
                qdx.handoff(&mut p, kdx);
                p.dma(Dir::Out, l * row, l, row, off, 0.0);
                qdx.free(&mut p, kdx);
            }
            qcos.free(&mut p, kc);
            qsin.free(&mut p, ks);
            t += l;
        }
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-transformer posembedding/rotary_position_embedding_grad (op_host/rope_half_grad_tiling.cpp, op_kernel/rotate_half_grad.h)".into(),
        mode: "rotate_half BSND, dx only".into(),
        launches: vec![launch],
    })
}

/// The elementwise Add autograd runs to accumulate two gradients (`a + b` of `elements` each).
/// On 910B it is a prebuilt kernel whose source is not public; assumed a streaming kernel at
/// its best: elements over cores, double-buffered tiles filling UB (two inputs and the output,
/// 16-bit computed in float32 through three Casts), so it moves at the HBM rate.
fn grad_accumulate_add(soc: &Soc, elements: u64, sz: u64) -> Vec<Vec<Op>> {
    let cast = sz != 4;
    let per_elem = 2 * 3 * sz + if cast { 3 * 4 } else { 0 };
    let tile = (soc.ub_bytes / per_elem / 256 * 256).max(256);
    binary_stream(soc, elements, sz, tile, |p, n, io| {
        io.alloc_out(p);
        if cast {
            p.simple(n);
            p.simple(n);
            p.barrier_v();
        }
        p.simple(n);
        io.free_a(p);
        io.free_b(p);
        if cast {
            p.barrier_v();
            p.simple(n);
        }
    })
}

/// npu_add_rms_norm's backward. ops-nn has no AddRmsNormGrad kernel (norm/ holds add_rms_norm
/// and its quant/cast variants, rms_norm_grad, no add_rms_norm_grad; nor has ops-transformer), so
/// a torch_npu user's step runs [`rms_norm_grad`] on the sum (RmsNormGrad: dx of the norm,
/// dgamma) and then the Add autograd uses to accumulate the gradient arriving at the sum
/// directly ([`grad_accumulate_add`]): two launches, the norm's dx written and read back.
pub fn add_rms_norm_grad(soc: &Soc, rows: u64, d: u64, sz: u64) -> Result<Design, NoDesign> {
    let norm = rms_norm_grad(soc, rows, d, sz)?;
    let mut launches = norm.launches;
    launches.push(grad_accumulate_add(soc, rows * d, sz));
    Ok(Design {
        source: format!(
            "{}, then the gradient accumulation Add (no AddRmsNormGrad kernel in ops-nn)",
            norm.source
        ),
        mode: format!("RmsNormGrad {} + Add", norm.mode),
        launches,
    })
}

/// The gelu grads have no baseline: on 910B GeluGrad, GeluGradV2 and FastGeluGrad are prebuilt
/// TBE kernels whose source is not public (ops-nn activation/gelu_grad, gelu_grad_v2 and
/// fast_gelu_grad hold only the Ascend 950 "arch35" kernels; experimental/activation/gelu_grad
/// is a community AscendC kernel, not the one torch_npu runs).
pub fn gelu_grad() -> Result<Design, NoDesign> {
    Err(NoDesign(
        "CANN's 910B GeluGrad / FastGeluGrad are closed TBE kernels (ops-nn has only the Ascend 950 ones): no design"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::soc::find;

    fn count(ops: &[Op], f: impl Fn(&Op) -> bool) -> usize {
        ops.iter().filter(|o| f(o)).count()
    }

    fn dma(dir: Dir) -> impl Fn(&Op) -> bool {
        move |o| matches!(o, Op::Dma { dir: d, .. } if *d == dir)
    }

    #[test]
    fn power_of_two_halving_adds_fold_the_tail_then_halve_to_64() {
        // 3584 = 2048 + 1536: the tail, then 1024 .. 64.
        assert_eq!(power_of_two_halving_adds(3584), vec![1536, 1024, 512, 256, 128, 64]);
        assert_eq!(power_of_two_halving_adds(128), vec![64]);
        assert!(power_of_two_halving_adds(64).is_empty());
    }

    #[test]
    fn rms_norm_grad_splits_rows_over_cores_with_one_row_per_pass_at_qwen2_d() {
        let soc = find("Ascend910B2").unwrap();
        // 4096 rows of 3584 (≤ 6080: split N, > 640: one row per pass): block_factor =
        // ceil(4096 / 48) = 86, so 48 cores (the last 4096 − 47·86 = 54 rows).
        let d = rms_norm_grad(soc, 4096, 3584, 2).unwrap();
        assert_eq!(d.mode, "split N");
        assert_eq!(d.launches.len(), 1);
        let cores = &d.launches[0];
        assert_eq!(cores.len(), 48);
        // Per row rstd, x and dy in, plus gamma once: 3·86 + 1 on core 0, 3·54 + 1 on the last.
        assert_eq!(count(&cores[0], dma(Dir::In)), 3 * 86 + 1);
        assert_eq!(count(&cores[47], dma(Dir::In)), 3 * 54 + 1);
        // Out: a dx row each, the atomic dgamma partial, and core 0's zero-fill of dgamma.
        assert_eq!(count(&cores[0], dma(Dir::Out)), 86 + 2);
        assert_eq!(count(&cores[1], dma(Dir::Out)), 86 + 1);
        // The scalar unit waits on V twice a row: rstd's GetValue and the row sum's.
        assert_eq!(count(&cores[0], |o| matches!(o, Op::Wait { from: Pipe::V, to: Pipe::S, .. })), 2 * 86);
        // Split-D above 6080 columns: no baseline.
        assert!(rms_norm_grad(soc, 4096, 6081, 2).is_err());
        assert!(rms_norm_grad(soc, 4096, 6080, 2).is_ok());
    }

    #[test]
    fn rms_norm_grad_packs_rows_at_small_d_without_scalar_waits() {
        let soc = find("Ascend910B2").unwrap();
        // Qwen3's q-norm rows: 131072 of 128. block_factor = ceil(131072 / 48) = 2731; rows per
        // pass (195584 − 10·128) / (24·128 + 268) = 194304 / 3340 = 58, so ceil(2731 / 58) = 48
        // passes of rstd, x and dy.
        let d = rms_norm_grad(soc, 131072, 128, 2).unwrap();
        assert_eq!(d.mode, "split N, small D");
        let core0 = &d.launches[0][0];
        assert_eq!(count(core0, dma(Dir::In)), 3 * 48 + 1);
        assert_eq!(count(core0, |o| matches!(o, Op::Wait { from: Pipe::V, to: Pipe::S, .. })), 0);
        // One dgamma Add per row (2731) among the 128-element vector calls.
        assert!(count(core0, |o| matches!(o, Op::Vector { elements: 128, .. })) >= 2731);
    }

    #[test]
    fn swiglu_grad_tiles_long_rows_in_512_byte_multiples() {
        let soc = find("Ascend910B2").unwrap();
        // bf16: 196608 / (2·5·2 + 5·4) = 4915, aligned to 16 → 4912 < 18944, so one row per tile
        // and 4912 aligned down to 256 elements (512 B) = 4864 columns: ceil(18944 / 4864) = 4
        // tiles a row, 4·4096 = 16384 tiles, ceil(16384 / 48) = 342 on each core but the last
        // (16384 − 47·342 = 310).
        assert_eq!(swiglu_grad_tile(soc, 4096, 18944, 2), (1, 4864));
        let d = swiglu_grad(soc, 4096, 18944, 2).unwrap();
        let cores = &d.launches[0];
        assert_eq!(cores.len(), 48);
        assert_eq!(count(&cores[0], dma(Dir::In)), 3 * 342);
        assert_eq!(count(&cores[0], dma(Dir::Out)), 2 * 342);
        assert_eq!(count(&cores[47], dma(Dir::In)), 3 * 310);
        // Two transcendental calls a tile (Exp, Div), none on the scalar unit.
        assert_eq!(
            count(&cores[0], |o| matches!(o, Op::Vector { api: VecClass::Transcendental, .. })),
            2 * 342
        );
        assert_eq!(count(&cores[0], |o| matches!(o, Op::Scalar { .. })), 0);
        // float32: 196608 / (2·5·4 + 2·4) = 4096 columns; rows of 1024 pack 4 to a tile, capped
        // by a core's share: 64 rows over 48 cores is 2 a core.
        assert_eq!(swiglu_grad_tile(soc, 64, 1024, 4), (2, 1024));
        assert_eq!(swiglu_grad_tile(soc, 4096, 1024, 4), (4, 1024));
    }

    #[test]
    fn layer_norm_grad_picks_single_read_with_ten_rows_a_pass_at_qwen3_vl_vision() {
        let soc = find("Ascend910B2").unwrap();
        // layer_norm_grad_v3_single_read_tiling.cpp: capable for 768 ≤ D ≤ 12176, priority 1000
        // (tried first); a buffer is (196608 − 64·5 − 512·2) / 4 / 4 = 12204 floats, so
        // ubFormer = 12204 / 1152 = 10 rows (1152 is aligned to 16 and to 8 already).
        assert_eq!(layer_norm_grad_rows_per_pass(196_608, 1152, 2), 10);
        assert_eq!(layer_norm_grad_rows_per_pass(196_608, 1152, 4), 10);
        // 4608 columns (the merger): 12204 / 4608 = 2 rows.
        assert_eq!(layer_norm_grad_rows_per_pass(196_608, 4608, 2), 2);
        assert!(layer_norm_grad(soc, 4096, 767, 2).is_err());
        assert!(layer_norm_grad(soc, 4096, 768, 2).is_ok());
        assert!(layer_norm_grad(soc, 4096, 12176, 2).is_ok());
        assert!(layer_norm_grad(soc, 4096, 12177, 2).is_err());
        // blockFormer = ceil(4096 / 48) = 86: 48 cores, the last 4096 − 47·86 = 54 rows; core 0
        // runs ceil(86 / 10) = 9 passes, the last core ceil(54 / 10) = 6.
        let d = layer_norm_grad(soc, 4096, 1152, 2).unwrap();
        assert_eq!(d.mode, "SingleRead");
        let cores = &d.launches[0];
        assert_eq!(cores.len(), 48);
        // Each pass reads mean, rstd, dy, x and gamma; the end reads the two partials back.
        assert_eq!(count(&cores[0], dma(Dir::In)), 5 * 9 + 2);
        assert_eq!(count(&cores[47], dma(Dir::In)), 5 * 6 + 2);
        // Out: the workspace zero-fill, core 0's dgamma and dbeta zero-fill, two atomic-add
        // rows per row (dbeta's dy, dgamma's dy·x̂), dx per pass, the two final atomic adds.
        assert_eq!(count(&cores[0], dma(Dir::Out)), 1 + 2 + 2 * 86 + 9 + 2);
        assert_eq!(count(&cores[1], dma(Dir::Out)), 1 + 2 * 86 + 9 + 2);
        // Two level-2 ReduceSums a row, each with its hidden V_S wait.
        assert_eq!(count(&cores[0], |o| matches!(o, Op::Vector { api: VecClass::Reduce, .. })), 2 * 86);
        assert_eq!(count(&cores[0], |o| matches!(o, Op::Hidden { from: Pipe::V, to: Pipe::S })), 2 * 86);
        // The workspace traffic stays in L2: of the writes only dx and core 0's dgamma/dbeta
        // (zero-fill and atomic add) reach HBM.
        let hbm_out: f64 = cores
            .iter()
            .flatten()
            .map(|o| match o {
                Op::Dma { dir: Dir::Out, bytes, l2_hit, .. } => *bytes as f64 * (1.0 - l2_hit),
                _ => 0.0,
            })
            .sum();
        assert_eq!(hbm_out, (4096.0 * 1152.0 * 2.0) + 2.0 * 1152.0 * 4.0 + 48.0 * 2.0 * 1152.0 * 4.0);
    }

    #[test]
    fn rotary_grad_tiles_whole_positions_from_the_ub_split_without_x() {
        let soc = find("Ascend910B2").unwrap();
        // rope_half_grad_tiling.cpp without x: (196608 − 20·1024) / (2·4 + 4·7) = 4892 bf16
        // elements, 38 positions of 128; float32: 176128 / (4·4 + 4·3) = 6290, 49 positions.
        assert_eq!(rotary_grad_tile_positions(196_608, 128, 2), 38);
        assert_eq!(rotary_grad_tile_positions(196_608, 128, 4), 49);
        // coreData = ceil(ceil(4096·128 / 48) / 128) = 86 positions: 48 cores, the last 54.
        // Core 0: tiles of 38, 38, 10; each loads cos and sin, then one dy block in and one dx
        // block out per head (28).
        let d = rotary_half_grad_bsnd(soc, 1, 4096, 28, 128, 2).unwrap();
        let cores = &d.launches[0];
        assert_eq!(cores.len(), 48);
        assert_eq!(count(&cores[0], dma(Dir::In)), 3 * (2 + 28));
        assert_eq!(count(&cores[0], dma(Dir::Out)), 3 * 28);
        assert_eq!(count(&cores[47], dma(Dir::In)), 2 * (2 + 28));
        // No scalar round trip: the kernel is vector and MTE only.
        assert_eq!(count(&cores[0], |o| matches!(o, Op::Scalar { .. } | Op::Hidden { .. })), 0);
        // D not a multiple of 64 (the padded path) or above 896: no baseline.
        assert!(rotary_half_grad_bsnd(soc, 1, 4096, 28, 96, 2).is_err());
        assert!(rotary_half_grad_bsnd(soc, 1, 4096, 1, 960, 2).is_err());
    }

    #[test]
    fn add_rms_norm_grad_is_rms_norm_grad_then_the_accumulation_add() {
        let soc = find("Ascend910B2").unwrap();
        let d = add_rms_norm_grad(soc, 4096, 3584, 2).unwrap();
        assert_eq!(d.launches.len(), 2);
        assert_eq!(d.launches[0], rms_norm_grad(soc, 4096, 3584, 2).unwrap().launches[0]);
        // The Add reads the norm's dx and dx_sum and writes their sum: 2 + 1 tensors of
        // 4096·3584 bf16.
        let bytes = |dir: Dir| -> u64 {
            d.launches[1]
                .iter()
                .flatten()
                .map(|o| match o {
                    Op::Dma { dir: d, bytes, .. } if *d == dir => *bytes,
                    _ => 0,
                })
                .sum()
        };
        assert_eq!(bytes(Dir::In), 2 * 4096 * 3584 * 2);
        assert_eq!(bytes(Dir::Out), 4096 * 3584 * 2);
        // No AddRmsNormGrad beyond RmsNormGrad's range either.
        assert!(add_rms_norm_grad(soc, 4096, 6081, 2).is_err());
    }

    #[test]
    fn the_gelu_grads_say_why_they_have_no_baseline() {
        let why = gelu_grad().unwrap_err().to_string();
        assert!(why.contains("closed TBE"), "{why}");
    }
}
