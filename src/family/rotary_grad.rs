//! Family rotary_grad: rotary_mul_grad, the backward of rotary_mul (family rotary). Inputs dy,
//! x, r1, r2 (one dtype); attrs `mode` ("half" / "interleave", as the forward) and
//! `table_grads` (bool); outputs dx (x's shape), dr1 and dr2 (r1's / r2's shapes).
//!
//! Math. The forward is y = x·r1 + R(x)·r2 with R the rotation, a signed permutation that is
//! antisymmetric in both modes (half: [[0, −I], [I, 0]]; interleave: [[0, −1], [1, 0]] per pair),
//! so Rᵀ = −R and
//!   dx  = dy·r1 + Rᵀ(dy·r2) = dy·r1 − R(dy·r2),
//!   dr1 = Σ_bcast dy·x,   dr2 = Σ_bcast dy·R(x)   (summed over the dims where r1/r2 are 1).
//! The kernel evaluates dx lane by lane as dy·r1 + swap(dy)·r2t with the table row
//! r2t = −s·swap(r2) (s: the forward's signs, −1 on the first half / the even lanes), built once
//! per table block, so dx has the forward's shape of computation: two products and one sum.
//! dr2 = s·Σ dy·swap(x): the sign is applied once per table row at the end (exact).
//!
//! Numerics, as the forward. 16-bit: every product is exact in float32, dx is one float32 sum
//! then one rounding; the table sums accumulate those exact products in float-float (TwoSum
//! into a hi/lo pair per table element), then round hi + lo. float32: dx is Dot2 (error-free
//! products with Veltkamp/Dekker, TwoSum), and each table product dy·x enters the sum with its
//! exact rounding error (Dekker), summed in three parts (hi, lo, lo2: each TwoSum's error goes a
//! part down; one lo part lost up to 6 ULP where random heads cancel to 2^-27 of their terms),
//! so dr is the exact sum rounded. NaN and Inf: where the corrections are NaN but the plain value is
//! not, the plain value is output (dx: s; dr: hi).
//!
//! Cores and determinism. Each core owns whole table rows (positions, the forward's g·t
//! index): it reads every x/dy row that uses them, in the order (bcastOuter, bcastInner), and
//! sums each table row's products in that order, row by row. No sum crosses cores, and the order
//! does not depend on the core count or the tile size, so dr1/dr2 are the same bits on every
//! core count and SoC (tested on 48 and 7 cores). The price: a shape with fewer table rows than
//! cores leaves cores idle (a decode step, one position, runs on one core); training shapes have
//! thousands of positions. `table_grads = false` (what autograd asks when the tables do not
//! require grad) reads no x, does no table sums, and writes dr1 = dr2 = 0: the shape rule
//! cannot see attrs, so the outputs keep r1's shape, and zeros are the honest content (the
//! caller discards them); the zero rows cost 2·|r1| bytes, 1/(B·N) of x's.

use super::default_attrs;
use super::eager::{input, Builder};
use super::inputs::{derive_seed, Distribution, Rng};
use super::rotary::{mode_of, Layout, MODES};
use super::CannBuiltin;
use super::Sharding;
use super::{Case, Expected, Sweep};
use super::{
    CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, PlanReading, Templates,
};
use super::{OutputShape, ShapeCheck, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::{c_strides, round_to_dtype, HostTensor};

// ---- spec --------------------------------------------------------------------------------

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    if spec.inputs.len() != 4 {
        r.error(
            &raw.inputs,
            "inputs",
            format!("family rotary_grad takes 4 inputs (dy, x, r1, r2), found {}", spec.inputs.len()),
        );
        return;
    }
    if spec.outputs.len() != 3 {
        r.error(
            &raw.outputs,
            "outputs",
            format!("family rotary_grad has 3 outputs (dx, dr1, dr2), found {}", spec.outputs.len()),
        );
        return;
    }
    let valid = super::check_inputs_share_a_float(
        r,
        raw,
        spec,
        "rotary_grad",
        "the forward's tables have x's dtype, and so does dy",
    );
    for (c, x) in valid {
        for (o, t) in spec.outputs.iter().enumerate() {
            if t.dtypes[c] != x {
                let span = &raw.outputs.get_ref()[o].dtypes.get_ref()[c];
                r.error(
                    span,
                    &format!("outputs[{o}].dtypes[{c}]"),
                    format!("must be {x} in combination {}: `{}` has its operand's dtype", c + 1, t.name),
                );
            }
        }
    }
    for (i, t) in spec.inputs.iter().enumerate() {
        if t.mutated {
            let span = raw.inputs.get_ref()[i].mutated.as_ref().expect("mutated was given");
            r.error(
                span,
                &format!("inputs[{i}].mutated"),
                "family rotary_grad updates nothing in place".into(),
            );
        }
    }
    let ok = match spec.attrs.as_slice() {
        [mode, tg] => {
            mode.kind == AttrKind::String
                && mode.name == "mode"
                && tg.kind == AttrKind::Bool
                && tg.name == "table_grads"
        }
        _ => false,
    };
    if !ok {
        let message =
            "family rotary_grad takes exactly two attrs: the string `mode` (\"half\" or \"interleave\") \
                       and the bool `table_grads`"
                .to_string();
        match raw.attrs.first() {
            Some(a) => r.error(&a.name, "attrs", message),
            None => r.error(&raw.name, "attrs", message),
        }
        return;
    }
    if let Some(AttrValue::String(v)) = &spec.attrs[0].default {
        if !MODES.contains(&v.as_str()) {
            r.error(
                raw.attrs[0].default.as_ref().expect("default present"),
                "attrs[0].default",
                format!("mode `{v}` is not supported: use \"half\" (rotate_half) or \"interleave\""),
            );
        }
    }
}

// ---- plan and templates ------------------------------------------------------------------

/// The tiling-data layout. x's rows are ((g·bcastOuter + bo)·positions + t)·bcastInner + bi
/// (the forward's view) and use table row g·positions + t; cores split the table rows only.
pub const TILING_FIELDS: &[TilingField] = &[
    TilingField::u32("rotateMode", "0 half (rotate_half), 1 interleave (pair swap)"),
    TilingField::u32("tableGrads", "1: compute dr1/dr2 (reads x), 0: write them as zeros"),
    TilingField::u32("headDim", "D: elements per row of dy, x, r1, r2, dx, dr1, dr2"),
    TilingField::u32("rowStride", "D rounded up to 32 bytes of the dtype: UB elements per row"),
    TilingField::u32("groups", "g: outer dims where the tables vary (B of B1SD tables in BNSD)"),
    TilingField::u32(
        "bcastOuter",
        "bo: dims between, where the tables are broadcast (B of 1S1D, B*N of 11SD)",
    ),
    TilingField::u32("positions", "t: table rows per group (S, or B*S of BS1D tables)"),
    TilingField::u32(
        "bcastInner",
        "bi: innermost broadcast dims, rows sharing a table row (N, or B*N of S11D)",
    ),
    TilingField::u32(
        "cores",
        "block dim: min(table rows, vector cores) cores along the table rows (g*positions); each takes n / cores, \
         the first n % cores one more, and owns them with every x row that uses them (no sum crosses cores)",
    ),
    TilingField::u32("tileRows", "dy (and x) rows per UB tile (one DataCopyPad each way)"),
    TilingField::u32(
        "tableRows",
        "table rows per block: r1/r2 loaded once, and the dr1/dr2 accumulators of these rows kept over all their x rows",
    ),
    TilingField::u32(
        "tableBuffers",
        "UB buffers per table input (2: the next block loads while this one is used; 1 for head dims too large for 2)",
    ),
    TilingField::u32(
        "tileBuffers",
        "UB buffers per tile queue (dy, x, dx): 2, or 1 for head dims whose rows do not fit twice",
    ),
    TilingField::u32(
        "rotateByCopy",
        "1: half mode swaps the half rows by block copies (D % 16 == 0), 0: Gather",
    ),
];

pub fn template_extras(spec: &OpSpec) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let input = |i: usize| serde_json::to_value(spec.inputs.get(i)).expect("plain data");
    let output = |i: usize| serde_json::to_value(spec.outputs.get(i)).expect("plain data");
    m.insert("dy".into(), input(0));
    m.insert("x".into(), input(1));
    m.insert("r1".into(), input(2));
    m.insert("r2".into(), input(3));
    m.insert("dx".into(), output(0));
    m.insert("dr1".into(), output(1));
    m.insert("dr2".into(), output(2));
    m
}

// ---- verification ------------------------------------------------------------------------

/// One shape of the sweep: layout, mode, (batch, seq, heads, head_dim), table_grads.
#[derive(Debug, Clone, Copy)]
struct Shape {
    layout: Layout,
    mode: &'static str,
    dims: (usize, usize, usize, usize),
    table_grads: bool,
}

const ALL_LAYOUTS: [Layout; 6] =
    [Layout::Bsnd1s1d, Layout::BsndBs1d, Layout::Bnsd11sd, Layout::BnsdB1sd, Layout::Sbnd, Layout::Full];

/// Cases whose seed is in [CANCEL_SEED, CANCEL_SEED + 100) get family-made cancellation inputs (`case_inputs`):
/// dx's two products cancel to the last bits, and so do the table sums over paired rows.
const CANCEL_SEED: u64 = 9000;
/// Seeds of the coverage rule's cases (COVERAGE_SEED + index).
const COVERAGE_SEED: u64 = 9600;

fn shapes(sweep: Sweep) -> Vec<Shape> {
    let s = |layout, mode, dims, table_grads| Shape { layout, mode, dims, table_grads };
    let mut out = Vec::new();
    // Every layout/broadcast in half mode and the broadcast layouts in interleave (the forward
    // refuses interleave with tables varying along two dims, as torch_npu), with and without the
    // table gradients. Odd dims: D = 72 is not 32-byte aligned in 16-bit, 80's half is not
    // 64-byte aligned, 3/5/7 heads and tokens split unevenly over cores.
    let dims = [(2, 3, 4, 64), (2, 5, 3, 72), (2, 3, 2, 80), (2, 3, 7, 96), (3, 2, 5, 128), (1, 3, 2, 128)];
    for (i, layout) in ALL_LAYOUTS.into_iter().enumerate() {
        out.push(s(layout, "half", dims[i], true));
        out.push(s(layout, "half", dims[(i + 1) % dims.len()], false));
        if layout.interleave_ok() {
            out.push(s(layout, "interleave", dims[(i + 2) % dims.len()], true));
            out.push(s(layout, "interleave", dims[(i + 3) % dims.len()], false));
        }
    }
    // Qwen2-7B (28 q heads, 4 kv heads of 128) and Qwen3 (head_dim 128, 32/8 and 16/8 heads),
    // shortened to 64 tokens in the quick sweep; a decode step; heads that do not fit one tile
    // with their table row (chunks of one position); D above torch_npu's 896.
    let tokens = if sweep == Sweep::Full { 4096 } else { 64 };
    out.push(s(Layout::Bsnd1s1d, "half", (1, tokens, 28, 128), false));
    out.push(s(Layout::Bsnd1s1d, "half", (1, tokens, 4, 128), true));
    out.push(s(Layout::Bnsd11sd, "half", (1, tokens / 4, 32, 128), true));
    out.push(s(Layout::Bsnd1s1d, "interleave", (1, 4, 14, 64), true));
    out.push(s(Layout::Sbnd, "half", (2, 8, 64, 256), true));
    out.push(s(Layout::Bnsd11sd, "interleave", (1, 2, 3, 1536), true));
    if sweep == Sweep::Full {
        out.push(s(Layout::Bsnd1s1d, "half", (1, 4096, 28, 128), true));
        out.push(s(Layout::Bsnd1s1d, "interleave", (1, 4096, 4, 128), false));
        out.push(s(Layout::Bnsd11sd, "half", (1, 4096, 8, 128), false));
        out.push(s(Layout::Bsnd1s1d, "half", (2, 1024, 16, 128), true));
        out.push(s(Layout::BsndBs1d, "half", (4, 512, 8, 128), true));
        out.push(s(Layout::Sbnd, "interleave", (1024, 2, 4, 96), true));
        out.push(s(Layout::BnsdB1sd, "half", (2, 512, 2, 72), true));
        out.push(s(Layout::Full, "half", (2, 64, 4, 80), true));
        out.push(s(Layout::Bsnd1s1d, "half", (1, 17, 4, 1024), true));
        // D = 3000 with the table gradients does not fit UB (refused with the reason: the
        // accumulators, scratch rows and table copies need ~1.5 KiB of UB per table element
        // pair at this D; about 1536 is the largest float32 D, 2560 in 16-bit); without them it
        // fits.
        out.push(s(Layout::Sbnd, "half", (5, 1, 3, 3000), false));
        out.push(s(Layout::Bsnd1s1d, "half", (2, 5, 3, 1536), true));
        out.push(s(Layout::Bsnd1s1d, "interleave", (64, 1, 8, 128), true));
        out.push(s(Layout::Bnsd11sd, "half", (32, 64, 3, 64), true));
    }
    out
}

fn case(spec: &OpSpec, shape: Shape, dist: Distribution, seed: u64) -> Case {
    let (b, s, n, d) = shape.dims;
    let (x, table) = shape.layout.shapes(b, s, n, d);
    let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let mut attrs = default_attrs(spec);
    attrs.retain(|(name, _)| name != "mode" && name != "table_grads");
    attrs.push(("mode".to_string(), AttrValue::String(shape.mode.to_string())));
    attrs.push(("table_grads".to_string(), AttrValue::Bool(shape.table_grads)));
    Case {
        shapes: vec![
            (names[0].to_string(), x.clone()),
            (names[1].to_string(), x),
            (names[2].to_string(), table.clone()),
            (names[3].to_string(), table),
        ],
        dist,
        seed,
        attrs,
    }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, shape) in shapes(sweep).into_iter().enumerate() {
        out.push(case(spec, shape, Distribution::Uniform5, 3000 + i as u64));
    }
    let others: &[Distribution] = match sweep {
        Sweep::Quick => &[
            Distribution::NormalLargeMean,
            Distribution::Tiny,
            Distribution::Zeros,
            Distribution::NanInf,
            Distribution::RowEnds,
        ],
        Sweep::Full => &[
            Distribution::NormalLargeMean,
            Distribution::Tiny,
            Distribution::Outlier,
            Distribution::Zeros,
            Distribution::NanInf,
            Distribution::RowEnds,
            Distribution::OneHot,
        ],
    };
    let s = |layout, mode, dims, table_grads| Shape { layout, mode, dims, table_grads };
    let mut probes = vec![
        s(Layout::Bsnd1s1d, "half", (2, 3, 4, 72), true),
        s(Layout::Sbnd, "interleave", (3, 2, 4, 128), true),
        s(Layout::BnsdB1sd, "half", (2, 3, 3, 64), false),
    ];
    if sweep == Sweep::Full {
        probes.push(s(Layout::Bnsd11sd, "half", (2, 4, 17, 256), true));
        probes.push(s(Layout::Bsnd1s1d, "interleave", (1, 128, 8, 128), true));
    }
    for (i, dist) in others.iter().enumerate() {
        for (j, shape) in probes.iter().enumerate() {
            out.push(case(spec, *shape, *dist, 4000 + (i * 10 + j) as u64));
        }
    }
    // Near-full UB (both sweeps), RowEnds (±64 at every row's last element: where a head, a tile
    // and a core's share end). By the kernel's InitBuffer sizes for the tiling `opgen plan`
    // prints, these fill at least 178 KiB of the 184 KiB budget in the dtype noted, so a buffer
    // planned 16 KiB too large overflows the 192 KiB UB: without the table gradients 1x1920x14x64
    // (16-bit 183 KiB, float32 182); half mode by Gather 1x48x48x72 (float32 181); interleave
    // 1x960x1x128 (16-bit 182, float32 178); half mode by block copies 1x97x28x128 (the busiest
    // core's three positions take a block of two, 16-bit 180; float32 blocks of one, 179: a
    // share of at most one tile is cut in two, research K8, so 1x64x28x128 no longer fills UB
    // in 16-bit), whose two-row blocks of D = 128 also catch a wrong repeat stride of the sign.
    // The shapes above already fill UB in chunks of one position (2x8x64x256, 16-bit 181) and
    // with single-buffered tables and tiles (1x2x3x1536 interleave, float32 180).
    let aimed = [
        (s(Layout::Bsnd1s1d, "half", (1, 1920, 14, 64), false), Distribution::RowEnds),
        (s(Layout::Bsnd1s1d, "half", (1, 48, 48, 72), true), Distribution::RowEnds),
        (s(Layout::Bsnd1s1d, "interleave", (1, 960, 1, 128), true), Distribution::RowEnds),
        (s(Layout::Sbnd, "interleave", (3, 2, 4, 128), true), Distribution::OneHot),
        (s(Layout::Bsnd1s1d, "half", (1, 97, 28, 128), false), Distribution::RowEnds),
    ];
    for (j, (shape, dist)) in aimed.into_iter().enumerate() {
        out.push(case(spec, shape, dist, 6000 + j as u64));
    }
    // The coverage rule (src/verify/coverage.rs): 6289 positions over 48 cores (132 rows on one
    // core, 131 on the rest), three or more tiles a core (16-bit tiles of 58 and 33 rows) in the
    // paths the shapes above leave short: half by Gather (D 72), interleave with a remainder core.
    let coverage = [
        s(Layout::Bsnd1s1d, "half", (1, 6289, 1, 72), true),
        s(Layout::Bsnd1s1d, "interleave", (1, 6289, 1, 128), true),
    ];
    for (j, shape) in coverage.into_iter().enumerate() {
        out.push(case(spec, shape, Distribution::Uniform5, COVERAGE_SEED + j as u64));
    }
    // Cancellation (every dtype; it matters for float32, where rounded products would leave no
    // relative accuracy): see `cancellation_inputs`.
    let mut cancel = vec![
        s(Layout::Bsnd1s1d, "half", (2, 3, 4, 64), true),
        s(Layout::Bnsd11sd, "interleave", (2, 3, 4, 72), true),
        s(Layout::Sbnd, "half", (2, 4, 6, 80), true),
    ];
    if sweep == Sweep::Full {
        cancel.push(s(Layout::Bsnd1s1d, "half", (1, 256, 28, 128), true));
        cancel.push(s(Layout::BsndBs1d, "half", (2, 16, 4, 128), true));
    }
    for (j, shape) in cancel.into_iter().enumerate() {
        out.push(case(spec, shape, Distribution::Uniform5, CANCEL_SEED + j as u64));
    }
    out
}

/// For each x row (flat row index), the table row it uses, from the shapes (rows of D).
fn table_rows(x: &[usize], table: &[usize]) -> Vec<usize> {
    let (xs, ts) = (c_strides(x), c_strides(table));
    let rows: usize = x[..x.len() - 1].iter().product();
    let d = x[x.len() - 1];
    (0..rows)
        .map(|r| {
            let flat = r * d;
            let at: usize =
                (0..x.len() - 1).map(|a| if table[a] == 1 { 0 } else { flat / xs[a] % x[a] * ts[a] }).sum();
            at / d
        })
        .collect()
}

/// Inputs where the results cancel: r1, r2 uniform in [-5, 5] (no zeros); dy the same for every
/// row of a table row, its second lane of each rotation pair chosen so that dx's two products
/// nearly cancel: dy[π(k)] = RNE(dy[k]·r1[k] / (s'·r2[π(k)]) · (1 + u·2^-12)), s' the sign dx
/// gives that term; x of every second row using a table row is minus the previous such row's,
/// perturbed by (1 + u·2^-10), so the table sums over the pairs cancel to ~2^-10 of their terms.
fn cancellation_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    let dtype = spec.inputs[1].dtypes[column];
    let mode = mode_of(&case.attrs)?;
    let shape = |i: usize| case.shapes[i].1.clone();
    let (xs, ts) = (shape(1), shape(2));
    let d = *xs.last().ok_or("x has no dims")?;
    let h = d / 2;
    let mut rng = Rng::new(derive_seed(case.seed, "cancel"));
    let nonzero = |rng: &mut Rng| {
        let v = rng.uniform(0.5, 5.0);
        if rng.below(2) == 0 {
            -v
        } else {
            v
        }
    };
    let table_n: usize = ts.iter().product();
    let r1: Vec<f64> = (0..table_n).map(|_| round_to_dtype(dtype, nonzero(&mut rng))).collect();
    let r2: Vec<f64> = (0..table_n).map(|_| round_to_dtype(dtype, nonzero(&mut rng))).collect();
    // (first lane, partner, s') of each pair; dx[k] = dy[k]·r1[k] + s'·dy[π]·r2[π].
    let pairs: Vec<(usize, usize, f64)> = match mode {
        reference::rotary::RotaryMode::Half => (0..h).map(|k| (k, k + h, 1.0)).collect(),
        reference::rotary::RotaryMode::Interleave => (0..h).map(|i| (2 * i, 2 * i + 1, 1.0)).collect(),
    };
    let rows = table_rows(&xs, &ts);
    let positions = table_n / d;
    let mut dy_pos = vec![0.0; table_n];
    for p in 0..positions {
        for &(k, pk, sign) in &pairs {
            let g = round_to_dtype(dtype, nonzero(&mut rng));
            let (c, s) = (r1[p * d + k], r2[p * d + pk]);
            let partner = -g * c / (sign * s) * (1.0 + rng.uniform(-1.0, 1.0) * 2f64.powi(-12));
            dy_pos[p * d + k] = g;
            dy_pos[p * d + pk] = round_to_dtype(dtype, partner);
        }
    }
    let mut dy = Vec::with_capacity(rows.len() * d);
    let mut x = Vec::with_capacity(rows.len() * d);
    let mut seen = vec![0usize; positions];
    let mut last = vec![0.0; table_n];
    for &p in &rows {
        dy.extend_from_slice(&dy_pos[p * d..(p + 1) * d]);
        for j in 0..d {
            let v = if seen[p] % 2 == 1 {
                -last[p * d + j] * (1.0 + rng.uniform(-1.0, 1.0) * 2f64.powi(-10))
            } else {
                rng.uniform(-5.0, 5.0)
            };
            let v = round_to_dtype(dtype, v);
            last[p * d + j] = v;
            x.push(v);
        }
        seen[p] += 1;
    }
    let t =
        |i: usize, v: &[f64]| (case.shapes[i].0.clone(), HostTensor::from_f64(dtype, &case.shapes[i].1, v));
    Ok((vec![t(0, &dy), t(1, &x), t(2, &r1), t(3, &r2)], case.attrs.clone()))
}

/// The case's `table_grads` attr.
pub fn table_grads_of(attrs: &[(String, AttrValue)]) -> Result<bool, FamilyError> {
    super::attr_bool(attrs, "table_grads")
}

/// dx: as the forward's y (two exact products and one float32 sum in 16-bit: window 2; Dot2 in
/// float32: 1 ULP). dr1/dr2: the float-float sum of exact products, rounded to float32 and then
/// (16-bit) to the dtype: the same bars. Without table_grads the outputs are zeros, bit for bit.
/// float32's bulk gate: measured mean 0 for dx, dr1, dr2 (quick sweep 2026-12-05), its floor.
fn tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::Float16 | DType::BFloat16 => Tolerance::Rne { tie_window: 2 },
        _ => Tolerance::ulp_bulk(1, 0.0),
    }
}

pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    if spec.name != "rotary_mul_grad" {
        return Err(FamilyError::new(format!(
            "no reference for rotary_grad op `{}`: catalogue ops are checked against src/reference",
            spec.name
        )));
    }
    let t = |i: usize| &inputs[i].1;
    let tg = table_grads_of(attrs)?;
    let r = reference::rotary_grad::rotary_mul_grad(t(0), t(1), t(2), t(3), mode_of(attrs)?, tg)?;
    let table_bar = if tg { tolerance(t(1).dtype) } else { Tolerance::Bitwise };
    let out = |o: usize, shape: &[usize], values: Vec<f64>, tolerance: Tolerance| Expected {
        name: spec.outputs[o].name.clone(),
        dtype: t(1).dtype,
        shape: shape.to_vec(),
        values,
        tolerance,
    };
    Ok(vec![
        out(0, &t(1).shape, r.dx, tolerance(t(1).dtype)),
        out(1, &t(2).shape, r.dr1, table_bar),
        out(2, &t(3).shape, r.dr2, table_bar),
    ])
}

// ---- the family --------------------------------------------------------------------------

pub struct RotaryGrad;

impl FamilyOps for RotaryGrad {
    fn sharding(&self, _spec: &OpSpec) -> Sharding {
        Sharding::Rows { whole_from_rule: false, reduces: true }
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        TILING_FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/rotary_grad.cpp.j2",
            host: "host/rotary_grad.cpp.j2",
            checks: Some("host/rotary_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        Ok(template_extras(spec))
    }

    /// dy has x's shape, r2 r1's; dx is shaped like x, dr1/dr2 like r1/r2. How r1 broadcasts
    /// over x is checked by the op_host TilingFunc (the forward's rules).
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        match spec.inputs.as_slice() {
            [dy, x, r1, r2] => Ok(ShapeRule {
                checks: vec![
                    ShapeCheck::SameShape { tensor: dy.name.clone(), like: x.name.clone() },
                    ShapeCheck::SameShape { tensor: r2.name.clone(), like: r1.name.clone() },
                ],
                outputs: vec![
                    OutputShape::Like { of: x.name.clone() },
                    OutputShape::Like { of: r1.name.clone() },
                    OutputShape::Like { of: r2.name.clone() },
                ],
            }),
            _ => Err(FamilyError::new("rotary_grad needs inputs (dy, x, r1, r2)")),
        }
    }

    /// dy and x share the first input's shape; r1/r2 by the BSND 1S1D rule ([1,S,1,D]).
    fn derived_shape(&self, _spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        match (i, first) {
            (2 | 3, [_, s, _, d]) => vec![1, *s, 1, *d],
            _ => first.to_vec(),
        }
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        (CANCEL_SEED..CANCEL_SEED + 100).contains(&case.seed).then(|| {
            // The shapes come from this family's cases, which the input maker accepts.
            cancellation_inputs(spec, column, case).expect("rotary_grad cancellation cases are well formed")
        })
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    /// Qwen2-7B's q (28 heads) and k (4 heads) of D 128 at 4096 tokens, BSND (table_grads off:
    /// autograd's usual call, cos/sin need no gradient).
    fn model_shapes(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        vec![("Qwen2-7B q", vec![1, 4096, 28, 128]), ("Qwen2-7B k", vec![1, 4096, 4, 128])]
    }

    /// npu_rotary_mul's backward; the design covers rotate_half on BSND with [1, S, 1, D]
    /// tables and says so for other shapes.
    fn cann_builtin(&self, _spec: &OpSpec) -> Option<CannBuiltin> {
        Some(CannBuiltin::RotaryMulGrad)
    }

    /// x only feeds the table gradients: with `table_grads = false` the kernel never reads it,
    /// so the floor does not count it.
    fn inputs_not_read(&self, _spec: &OpSpec, attrs: &[(String, AttrValue)]) -> Vec<&'static str> {
        if table_grads_of(attrs) == Ok(false) {
            vec!["x"]
        } else {
            Vec::new()
        }
    }

    fn work_units(&self, _spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        let (_, r1) = shapes.get(2)?;
        let d = *r1.last()? as u64;
        (d > 0).then(|| crate::tensor::shape_numel(r1) as u64 / d)
    }

    fn tiling_value_label(&self, _spec: &OpSpec, field: &str, value: u64) -> Option<&'static str> {
        match (field, value) {
            ("rotateMode", 0) => Some("half, rotate_half"),
            ("rotateMode", 1) => Some("interleave, pair swap"),
            _ => None,
        }
    }

    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let table_rows = f("groups") * f("positions");
        // The busiest core's dy rows (cores split the table rows only); a tile holds at most
        // tileRows of them (a lower bound on its tiles).
        let rows = super::largest_share(table_rows, f("cores")) * f("bcastOuter") * f("bcastInner");
        PlanCoverage {
            mode: super::rotary::rotary_mode(tiling),
            passes: Some(super::passes(rows, f("tileRows"))),
            uneven: Some(super::uneven(table_rows, f("cores"))),
        }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        super::rotary::ROTARY_MODES.to_vec()
    }

    fn read_plan(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>, _dtype: DType) -> PlanReading {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let label = format!(
            "{} table rows/block, {} rows/tile{}",
            f("tableRows"),
            f("tileRows"),
            if f("tableGrads") != 0.0 { ", table grads" } else { "" }
        );
        PlanReading { label, two_pass: false, transfer_reason: None }
    }

    fn fusion_target(&self, _spec: &OpSpec) -> bool {
        true
    }

    /// torch autograd of HF `apply_rotary_pos_emb` (q·cos + rotate_half(q)·sin) for q, with cos
    /// and sin not requiring grad (the report's call, table_grads off): MulBackward0 of each
    /// product, the add's gradient passed through, CatBackward0 (two slices of the gradient),
    /// NegBackward0, the slices' SliceBackward0 (zero-filled full-size gradients) and the
    /// accumulation of x's three gradient contributions.
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        let (dy, _) = input(case, 0)?;
        let (r1, _) = input(case, 2)?;
        let (r2, _) = input(case, 3)?;
        let half = dy.with_n(dy.n / 2);
        let g1 = b.op("grad * cos (MulBackward0)", &[dy, r1], dy);
        let g2 = b.op("grad * sin (MulBackward0)", &[dy, r2], dy);
        let g2_half = g2.with_n(g2.n / 2);
        let a = b.op("contiguous(grad[..., :D/2]) (CatBackward0)", &[g2_half], half);
        let c = b.op("contiguous(grad[..., D/2:]) (CatBackward0)", &[g2_half], half);
        let n = b.op("neg (NegBackward0)", &[a], half);
        let s1 = b.op("zeros + slice_scatter (SliceBackward0 of x[..., D/2:])", &[n], dy);
        let s2 = b.op("zeros + slice_scatter (SliceBackward0 of x[..., :D/2])", &[c], dy);
        let acc = b.op("accumulate x's grads", &[g1, s1], dy);
        b.op("accumulate x's grads", &[acc, s2], dy);
        b.note("the table gradients (dr1 = sum(grad * x), dr2 = sum(grad * rotate_half(x))) are not asked for here");
        b.note("q and k are two calls of this sequence (and two fused launches)");
        Ok(b.finish("torch autograd of HF apply_rotary_pos_emb with rotate_half (derivatives.yaml: mul, add, cat, neg, slice)"))
    }
}
