//! CANN SwiGlu on 910B (hicann/ops-nn activation/swi_glu: op_host/swi_glu_tiling.cpp
//! `GluSingleTilingCalculator`, op_kernel/glu_tiling_kernel.hpp, swi_glu_single.hpp,
//! swi_glu_bf16.hpp). The input [rows, 2·cols] holds gate and up as the two halves of each row.
//! The tiling picks one base tile of `base_rows × base_cols`; the grid of tiles (the last row and
//! column of tiles shorter) goes round-robin over the cores (`tileIdx = blockIdx; tileIdx +=
//! blockNum`). Per tile: gate and up in by one strided DMA each (`base_rows` blocks of
//! `base_cols` elements, a row of the input apart), the vector chain, y out by one strided DMA.
//! Our earlier design streamed contiguous tiles of gate and up, which hid the per-row DMA blocks
//! that short rows cost.

use super::{Design, NoDesign, Prog, Que};
use crate::perf::cycles::VecClass;
use crate::perf::sim::{Dir, Pipe};
use crate::plan::soc::Soc;

/// `DataCopy` limits: blocks per transfer, and blockLen / stride (units of 32 B when the rows
/// are 32 B-aligned, else bytes) (swi_glu_tiling.cpp `DISCONTINE_COPY_MAX_*`).
const MAX_BLOCK_COUNT: u64 = 4095;
const MAX_BLOCK_LEN: u64 = 65535;

/// The tiling's choice for one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwiGluTiling {
    pub base_rows: u64,
    pub base_cols: u64,
    /// 2 (double buffer) unless one tile per core fits without it.
    pub buffers: u64,
    pub cores: u64,
    /// Elements per row of a tile in UB: `base_cols` rounded up to 32 B when rows are not aligned.
    pub ub_cols: u64,
}

/// The best base shape found so far (`GluSingleTilingOptParam`).
#[derive(Default, Clone, Copy)]
struct Best {
    rows: u64,
    cols: u64,
    tiles: u64,
    size: u64,
    base_tiles: u64,
    cores: u64,
}

struct Shape {
    rows: u64,
    cols: u64,
    sz: u64,
    aligned: bool,
    block: u64,
    cache_line: u64,
    cores: u64,
}

impl Shape {
    /// `MustBeSingleBaseRowLen`: the GM stride between rows of a tile would overflow DataCopy.
    fn single_row(&self, base_cols: u64) -> bool {
        let gap = self.cols * 2 - base_cols;
        if self.aligned {
            gap > MAX_BLOCK_LEN * self.block
        } else {
            gap * self.sz > MAX_BLOCK_LEN
        }
    }

    /// `SaveOptBaseShape`: more cores, then fewer tiles, then bigger tiles, then more whole ones.
    fn consider(&self, best: &mut Best, rows: u64, cols: u64) {
        let tiles = self.rows.div_ceil(rows) * self.cols.div_ceil(cols);
        let size = rows * cols;
        let base_tiles = (self.rows / rows) * (self.cols / cols);
        let cores = tiles.min(self.cores);
        let better = best.tiles == 0
            || cores > best.cores
            || (cores == best.cores && tiles < best.tiles)
            || (cores == best.cores && tiles == best.tiles && size > best.size)
            || (cores == best.cores
                && tiles == best.tiles
                && size == best.size
                && base_tiles > best.base_tiles);
        if better {
            *best = Best { rows, cols, tiles, size, base_tiles, cores };
        }
    }

    /// `CalcOptBaseShape` for a UB tile of at most `max_tile` elements.
    fn base_shape(&self, max_tile: u64) -> Best {
        let mut best = Best::default();
        let row_bound = self.rows.min(MAX_BLOCK_COUNT);
        let mut cols =
            self.cols.min(max_tile).min(if self.aligned { MAX_BLOCK_LEN } else { MAX_BLOCK_LEN / self.sz });
        if cols < self.cols && cols > self.cache_line {
            cols = cols / self.cache_line * self.cache_line;
        }
        if self.single_row(cols) {
            self.consider(&mut best, 1, cols);
            return best;
        }
        loop {
            let rows = (max_tile / (cols.div_ceil(self.block) * self.block)).min(row_bound);
            if rows < 1 || (rows > 1 && self.single_row(cols)) {
                return best;
            }
            let tail = self.cols % cols;
            if !(rows > 1 && self.single_row(tail)) {
                self.consider(&mut best, rows, cols);
            }
            if cols <= self.cache_line || rows >= row_bound {
                return best;
            }
            cols = if cols % self.cache_line == 0 {
                cols - self.cache_line
            } else {
                cols / self.cache_line * self.cache_line
            };
        }
    }
}

/// The tiling of `rows × cols` (cols: one half) in `sz`-byte elements.
pub fn tiling(soc: &Soc, rows: u64, cols: u64, sz: u64) -> SwiGluTiling {
    let block = 32 / sz;
    let shape = Shape {
        rows,
        cols,
        sz,
        aligned: cols % block == 0,
        block,
        cache_line: 512 / sz,
        cores: u64::from(soc.vector_cores),
    };
    // Bytes per element of UB: three queues (gate, up, y) per buffer, and float32 temporaries
    // (2 for 16-bit inputs, 1 for float32: SWIGLU_TBUF_NUM_*).
    let temps = if sz == 4 { 1 } else { 2 };
    let max_tile = |buffers: u64| soc.ub_bytes / (buffers * 3 * sz + temps * 4) / block * block;
    let per_core = |b: &Best| b.tiles.div_ceil(b.cores.max(1));
    let double = shape.base_shape(max_tile(2));
    let mut chosen = (double, 2);
    if per_core(&double) == 2 {
        let single = shape.base_shape(max_tile(1));
        if single.tiles > 0 && per_core(&single) == 1 && single.cores >= double.cores {
            chosen = (single, 1);
        }
    }
    let (best, buffers) = chosen;
    let ub_cols = if shape.aligned { best.cols } else { best.cols.div_ceil(block) * block };
    SwiGluTiling { base_rows: best.rows, base_cols: best.cols, buffers, cores: best.cores, ub_cols }
}

/// The design: tiles round-robin over the cores, per tile two strided copies in, the vector
/// chain of swi_glu_bf16.hpp (Cast, Muls(−1), Exp, Adds(1), Div, Cast, Mul, Cast; float32 without
/// the Casts), one strided copy out.
pub fn swiglu(soc: &Soc, rows: u64, cols: u64, sz: u64) -> Result<Design, NoDesign> {
    if rows == 0 || cols == 0 {
        return Err(NoDesign(format!("CANN SwiGlu of an empty input ({rows} rows of {cols})")));
    }
    let t = tiling(soc, rows, cols, sz);
    if t.base_rows == 0 || t.base_cols == 0 {
        return Err(NoDesign(format!("CANN SwiGlu tiling finds no base tile for {rows} rows of 2x{cols}")));
    }
    let cast = sz != 4;
    let row_tiles = rows.div_ceil(t.base_rows);
    let col_tiles = cols.div_ceil(t.base_cols);
    let total = row_tiles * col_tiles;
    let buffers = t.buffers as usize;
    let mut launch = Vec::new();
    for core in 0..t.cores {
        let mut p = Prog::default();
        let mut qa = Que::new(0, Pipe::Mte2, Pipe::V, buffers);
        let mut qb = Que::new(1, Pipe::Mte2, Pipe::V, buffers);
        let mut qy = Que::new(2, Pipe::V, Pipe::Mte3, buffers);
        let mut tile = core;
        while tile < total {
            let (rt, ct) = (tile / col_tiles, tile % col_tiles);
            let r = t.base_rows.min(rows - rt * t.base_rows);
            let c = t.base_cols.min(cols - ct * t.base_cols);
            let n = r * if c == t.base_cols { t.ub_cols } else { c.div_ceil(32 / sz) * (32 / sz) };
            let gate = (rt * t.base_rows * 2 * cols + ct * t.base_cols) * sz;
            let out = (rt * t.base_rows * cols + ct * t.base_cols) * sz;
            let ka = qa.alloc(&mut p);
            p.dma(Dir::In, r * c * sz, r, c * sz, gate, 0.0);
            qa.handoff(&mut p, ka);
            let kb = qb.alloc(&mut p);
            p.dma(Dir::In, r * c * sz, r, c * sz, gate + cols * sz, 0.0);
            qb.handoff(&mut p, kb);
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            p.simple(n);
            p.barrier_v();
            p.vec(VecClass::Transcendental, n);
            p.barrier_v();
            p.simple(n);
            p.barrier_v();
            p.vec(VecClass::Transcendental, n);
            p.barrier_v();
            if cast {
                p.simple(n);
                p.barrier_v();
            }
            qa.free(&mut p, ka);
            p.simple(n);
            qb.free(&mut p, kb);
            let ky = qy.alloc(&mut p);
            if cast {
                p.barrier_v();
                p.simple(n);
            }
            qy.handoff(&mut p, ky);
            p.dma(Dir::Out, r * c * sz, r, c * sz, out, 0.0);
            qy.free(&mut p, ky);
            tile += t.cores;
        }
        launch.push(p.ops);
    }
    Ok(Design {
        source: "hicann/ops-nn activation/swi_glu (op_host/swi_glu_tiling.cpp, op_kernel/glu_tiling_kernel.hpp, swi_glu_single.hpp, swi_glu_bf16.hpp)".into(),
        mode: format!("{}x{} tiles", t.base_rows, t.base_cols),
        launches: vec![launch],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::sim::Op;
    use crate::plan::soc::find;

    #[test]
    fn the_tiling_follows_the_base_shape_search() {
        let soc = find("Ascend910B2").unwrap();
        // bf16, 4096 rows of 2x4096: max tile (double-buffered) = 196608 / (2·3·2 + 2·4) = 9830
        // → 9824 elements (16-element blocks). The search narrows the columns by 256 (512 B):
        // 2x4096 gives 2048 tiles, 9x1024 1824, 19x512 and 38x256 1728 each, of equal size;
        // 19x512 has more whole tiles (215·8 = 1720 against 107·16 = 1712) and stays.
        let t = tiling(soc, 4096, 4096, 2);
        assert_eq!((t.base_rows, t.base_cols, t.buffers, t.cores), (19, 512, 2, 48));
        // Half rows of one element (1000003 x 2 bf16): not 32 B-aligned, each row padded to 16
        // elements in UB, so 9824 / 16 = 614 rows a tile, ceil(1000003 / 614) = 1629 tiles.
        let t = tiling(soc, 1_000_003, 1, 2);
        assert_eq!((t.base_rows, t.base_cols, t.cores, t.ub_cols), (614, 1, 48, 16));
    }

    #[test]
    fn each_tile_copies_strided_row_blocks() {
        let soc = find("Ascend910B2").unwrap();
        let d = swiglu(soc, 1_000_003, 1, 2).unwrap();
        let core0 = &d.launches[0][0];
        let ins: Vec<u64> = core0
            .iter()
            .filter_map(|o| match o {
                Op::Dma { dir: Dir::In, blocks, .. } => Some(*blocks),
                _ => None,
            })
            .collect();
        // Core 0 takes tiles 0, 48, ..., 1584 of 1629 (= 48·33 + 45): 34 tiles, all whole, two
        // copies in each of 614 one-element row blocks.
        assert_eq!(ins, vec![614; 68]);
    }
}
