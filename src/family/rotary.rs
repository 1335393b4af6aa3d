//! Family rotary: rotary_mul, y = x·r1 + rotate(x)·r2 (torch_npu.npu_rotary_mul), modes `half`
//! (rotate_half) and `interleave` (pair swap), r1/r2 broadcast over x's batch and head dims.
//!
//! The layout is inferred from r1's shape by the generated TilingFunc (dims of r1 that are 1
//! are broadcast), as CANN's RotaryPositionEmbedding does: BSND with 1S1D or BS1D tables, BNSD
//! with 11SD or B1SD, SBND with S11D, and in `half` mode any other per-dim broadcast (full
//! tables included). `interleave` takes tables broadcast over batch and heads only (at most one
//! of r1's first three dims above 1), like torch_npu. The kernel rotates with block copies of
//! the half rows, or with a Gather over a precomputed permutation (interleave, and any even D
//! whose half is not whole 32-byte blocks), and loads each cos/sin row once per core for every
//! head and batch copy that uses it (level-0 Mul with a zero repeat stride on the table row).
//!
//! Numerics. For 16-bit inputs the kernel computes CANN's formula,
//! y = RNE(fl(fl(x·r1) + fl(x_rot·r2_signed))) in float32: both products are exact in float32
//! (11+11 or 8+8 significant bits), so y is the exact value rounded to float32 and then to the
//! output dtype: always within 1 ULP of the reference, even where the two products cancel (checked
//! bit for bit against a model of CANN's arithmetic in tests/it/rotary_twin.rs). For float32 inputs
//! CANN's products round (relative 2^-24 each), so where x·r1 ≈ −x_rot·r2 that formula has no
//! relative accuracy (69 of the 243 full-sweep float32 cases missed the CANN gate with it). The
//! float32 kernel therefore computes the two-term dot product as Ogita–Rump–Oishi Dot2 with
//! error-free transformations on IEEE float32 vector arithmetic: Veltkamp splits (of the table
//! rows once per table block, of x once per tile, its halves rotated), Dekker products, TwoSum,
//! y = s + (t + (e1 + e2)): as accurate as the sum in twice the precision, then rounded. Where
//! the corrections are NaN but the plain sum s is not (the split overflows for |x| above ~8e34,
//! Inf − Inf inside the corrections of an infinite product) the kernel outputs s, so NaN and Inf
//! come out as the reference has them. float32 is judged like every float32 output, by the CANN
//! gate (`compute_tolerance`); the full sweep measures max 1 ULP from the exact value rounded
//! once. The price is 4–6x the vector work of the 16-bit path (`opgen report`: 36–48 vector
//! element operations per element against 6–12), three more float work rows and a mask bit of
//! UB per x row, and the hi/lo halves of the table rows.
//!
//! Cores. The TilingFunc spreads x's rows over a grid of cores along table rows × bcastOuter ×
//! bcastInner with balanced shares (n / c each, the first n % c one more): the grid whose busiest
//! core moves the fewest x and table rows, then the fewest table re-reads; idle cores then join
//! along table rows only, where they read nothing twice. The search is bounded (at most
//! 2·sqrt(cores) core counts along table rows, each with at most 2·sqrt(cores) splits of the
//! rest, most of them pruned); tests/it/rotary_twin.rs checks it against the exhaustive one.

use super::default_attrs;
use super::eager::{input, Builder};
use super::CannBuiltin;
use super::Sharding;
use super::{Case, Expected, Sweep};
use super::{EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, Templates};
use super::{OutputShape, ShapeCheck, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::Distribution;
use crate::plan::TilingField;
pub use crate::reference::row_norm::Rounding;
use crate::reference::{self, rotary::RotaryMode};
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;

// ---- spec --------------------------------------------------------------------------------

/// The values of the `mode` attr.
pub const MODES: [&str; 2] = ["half", "interleave"];

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    if spec.inputs.len() != 3 {
        r.error(
            &raw.inputs,
            "inputs",
            format!("family rotary takes 3 inputs (x, r1, r2), found {}", spec.inputs.len()),
        );
        return;
    }
    if spec.outputs.len() != 1 {
        r.error(
            &raw.outputs,
            "outputs",
            format!("family rotary has 1 output (y), found {}", spec.outputs.len()),
        );
        return;
    }
    let valid = super::check_inputs_share_a_float(
        r,
        raw,
        spec,
        "rotary",
        "torch_npu casts the tables to x's dtype first",
    );
    for (c, x) in valid {
        if spec.outputs[0].dtypes[c] != x {
            let span = &raw.outputs.get_ref()[0].dtypes.get_ref()[c];
            r.error(
                span,
                &format!("outputs[0].dtypes[{c}]"),
                format!("must be {x} in combination {}: `{}` has x's dtype", c + 1, spec.outputs[0].name),
            );
        }
    }
    for (i, t) in spec.inputs.iter().enumerate() {
        if t.mutated {
            let span = raw.inputs.get_ref()[i].mutated.as_ref().expect("mutated was given");
            r.error(span, &format!("inputs[{i}].mutated"), "family rotary updates nothing in place".into());
        }
    }
    match spec.attrs.as_slice() {
        [mode, ..] if spec.attrs.len() <= 2 && mode.kind == AttrKind::String && mode.name == "mode" => {
            if let Some(rounding) = spec.attrs.get(1) {
                super::row_norm::check_rounding_attr(r, raw, 1, rounding, "rotary");
            }
            if let Some(AttrValue::String(v)) = &mode.default {
                if !MODES.contains(&v.as_str()) {
                    r.error(
                        raw.attrs[0].default.as_ref().expect("default present"),
                        "attrs[0].default",
                        format!("mode `{v}` is not supported: use \"half\" (rotate_half) or \"interleave\""),
                    );
                }
            }
        }
        _ => {
            let message =
                "family rotary takes the string attr `mode` (\"half\" or \"interleave\"), optionally followed by the string attr `rounding` (\"once\" or \"hf\")"
                    .to_string();
            match raw.attrs.first() {
                Some(a) => r.error(&a.name, "attrs", message),
                None => r.error(&raw.name, "attrs", message),
            }
        }
    }
}

// ---- plan and templates ------------------------------------------------------------------

/// The tiling-data layout: the generated TilingFunc fills it, the kernel reads it, `opgen
/// plan` names the fields. x's rows are ((g·bcastOuter + bo)·positions + t)·bcastInner + bi
/// and use table row g·positions + t.
pub const TILING_FIELDS: &[TilingField] = &[
    TilingField::u32("rotateMode", "0 half (rotate_half), 1 interleave (pair swap)"),
    TilingField::u32("headDim", "D: elements per row of x, r1, r2 and y"),
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
        "coresPos",
        "cores along the table rows (positions over all groups); along each dim of n rows with c \
         cores, a core takes n / c and the first n % c cores one more",
    ),
    TilingField::u32("coresBo", "cores along bcastOuter (core = (pos * coresBo + bo) * coresBi + bi)"),
    TilingField::u32("coresBi", "cores along bcastInner"),
    TilingField::u32("tileRows", "x rows per UB tile (one DataCopyPad each way)"),
    TilingField::u32("tableRows", "cos/sin rows per table block, loaded once and kept for all its x rows"),
    TilingField::u32(
        "tableBuffers",
        "UB buffers per table (2: the next block loads while this one is used; 1 for head dims too large for 2)",
    ),
    TilingField::u32(
        "rotateByCopy",
        "1: half mode swaps the half rows by block copies (D % 16 == 0), 0: Gather",
    ),
    TilingField::u32(
        "roundHf",
        "attr rounding: 0 once (one rounding from float32; float32 Dot2), 1 hf (each product and the sum rounded to x's dtype, as HF apply_rotary_pos_emb)",
    ),
];

/// The kernel paths the rotary TilingFuncs choose (forward and backward alike): the rotate mode
/// and, in half mode, how the half rows are swapped.
pub(crate) const ROTARY_MODES: [&str; 3] = ["half, block copy", "half, Gather", "interleave"];

/// The path of a plan, one of [`ROTARY_MODES`].
pub(crate) fn rotary_mode(tiling: &dyn Fn(&str) -> Option<f64>) -> &'static str {
    match (tiling("rotateMode").unwrap_or(0.0) as u32, tiling("rotateByCopy").unwrap_or(0.0) as u32) {
        (0, 1) => ROTARY_MODES[0],
        (0, _) => ROTARY_MODES[1],
        _ => ROTARY_MODES[2],
    }
}

pub fn template_extras(spec: &OpSpec) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let input = |i: usize| serde_json::to_value(spec.inputs.get(i)).expect("plain data");
    m.insert("x".into(), input(0));
    m.insert("r1".into(), input(1));
    m.insert("r2".into(), input(2));
    m.insert("y".into(), serde_json::to_value(spec.outputs.first()).expect("plain data"));
    // The host reads attr 1 when the spec declares `rounding` (else "once"), and the shared
    // checks refuse other values in the op_host and the Meta kernel alike.
    m.insert("has_rounding".into(), serde_json::Value::Bool(has_rounding(spec)));
    m
}

/// Whether the spec declares the `rounding` attr (attr 1).
fn has_rounding(spec: &OpSpec) -> bool {
    spec.attrs.get(1).is_some_and(|a| a.name == "rounding")
}

/// The rounding of a case: its `rounding` attr, else "once" (the family's order without it).
pub fn rounding_of(spec: &OpSpec, attrs: &[(String, AttrValue)]) -> Result<Rounding, FamilyError> {
    match attrs.iter().find(|(n, _)| n == "rounding").map(|(_, v)| v) {
        None => Ok(Rounding::Once),
        Some(AttrValue::String(v)) if v == "once" => Ok(Rounding::Once),
        Some(AttrValue::String(v)) if v == "hf" => Ok(Rounding::Hf),
        Some(other) => Err(FamilyError::new(format!(
            "op `{}`: attr rounding {other:?} is neither \"once\" nor \"hf\"",
            spec.name
        ))),
    }
}

// ---- verification ------------------------------------------------------------------------

/// How x is laid out and which dims of r1/r2 are broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// x [B,S,N,D], tables [1,S,1,D].
    Bsnd1s1d,
    /// x [B,S,N,D], tables [B,S,1,D] (half mode only).
    BsndBs1d,
    /// x [B,N,S,D], tables [1,1,S,D].
    Bnsd11sd,
    /// x [B,N,S,D], tables [B,1,S,D] (half mode only).
    BnsdB1sd,
    /// x [S,B,N,D], tables [S,1,1,D].
    Sbnd,
    /// x [B,S,N,D], tables [B,S,N,D]: no broadcast (half mode only).
    Full,
}

impl Layout {
    /// x's and the tables' shapes for `batch` sequences of `seq` tokens, `heads` heads of `d`.
    pub fn shapes(self, batch: usize, seq: usize, heads: usize, d: usize) -> (Vec<usize>, Vec<usize>) {
        let (b, s, n) = (batch, seq, heads);
        match self {
            Layout::Bsnd1s1d => (vec![b, s, n, d], vec![1, s, 1, d]),
            Layout::BsndBs1d => (vec![b, s, n, d], vec![b, s, 1, d]),
            Layout::Bnsd11sd => (vec![b, n, s, d], vec![1, 1, s, d]),
            Layout::BnsdB1sd => (vec![b, n, s, d], vec![b, 1, s, d]),
            Layout::Sbnd => (vec![s, b, n, d], vec![s, 1, 1, d]),
            Layout::Full => (vec![b, s, n, d], vec![b, s, n, d]),
        }
    }

    /// torch_npu's interleave mode broadcasts over batch and heads only.
    pub fn interleave_ok(self) -> bool {
        matches!(self, Layout::Bsnd1s1d | Layout::Bnsd11sd | Layout::Sbnd)
    }
}

const ALL_LAYOUTS: [Layout; 6] =
    [Layout::Bsnd1s1d, Layout::BsndBs1d, Layout::Bnsd11sd, Layout::BnsdB1sd, Layout::Sbnd, Layout::Full];

/// One shape of the sweep: layout, mode, (batch, seq, heads, head_dim).
#[derive(Debug, Clone, Copy)]
struct Shape {
    layout: Layout,
    mode: &'static str,
    dims: (usize, usize, usize, usize),
}

/// The (q, kv) head counts of the catalogue issue (Qwen2 0.5B/1.5B/7B-like and 72B-like).
const HEADS: [(usize, usize); 4] = [(14, 2), (28, 4), (32, 8), (64, 8)];
const HEAD_DIMS: [usize; 6] = [64, 72, 80, 96, 128, 256];
const TOKENS: [usize; 4] = [1, 3, 17, 128];

fn shapes(sweep: Sweep) -> Vec<Shape> {
    let s = |layout, mode, dims| Shape { layout, mode, dims };
    let mut out = vec![
        // Every layout in half mode, the broadcast layouts in interleave; D = 72 is not 32-byte
        // aligned in 16-bit (DataCopyPad row slots), 80's half is not 64-byte aligned.
        s(Layout::Bsnd1s1d, "half", (2, 3, 4, 64)),
        s(Layout::Bsnd1s1d, "interleave", (2, 3, 4, 72)),
        s(Layout::BsndBs1d, "half", (2, 5, 3, 72)),
        s(Layout::Bnsd11sd, "half", (2, 3, 2, 80)),
        s(Layout::Bnsd11sd, "interleave", (1, 17, 2, 128)),
        s(Layout::BnsdB1sd, "half", (2, 3, 7, 96)),
        s(Layout::Sbnd, "half", (3, 2, 5, 128)),
        s(Layout::Sbnd, "interleave", (4, 3, 2, 80)),
        s(Layout::Full, "half", (1, 3, 2, 128)),
        // Decode: one token, many heads spread over the cores.
        s(Layout::Bsnd1s1d, "interleave", (4, 1, 14, 64)),
        // Heads that do not fit one tile with their table row: chunks of one position.
        s(Layout::Sbnd, "half", (2, 8, 64, 256)),
        // D above torch_npu's 896 limit.
        s(Layout::Bsnd1s1d, "half", (1, 3, 2, 1024)),
        s(Layout::Bnsd11sd, "interleave", (1, 2, 3, 1536)),
    ];
    if sweep == Sweep::Full {
        // Model shapes: every head count (q and kv), head dim and token count, with the layout
        // and mode turning over so that every (layout, mode) pair sees many shapes.
        let mut i = 0usize;
        for &(q, kv) in &HEADS {
            for &d in &HEAD_DIMS {
                for &tokens in &TOKENS {
                    for heads in [q, kv] {
                        let layout = ALL_LAYOUTS[i % ALL_LAYOUTS.len()];
                        let mode = if layout.interleave_ok() && (i / ALL_LAYOUTS.len()) % 2 == 1 {
                            "interleave"
                        } else {
                            "half"
                        };
                        // Tokens as S (batch 1), or as B·S with B = 2 when they split evenly.
                        let (b, seq) =
                            if i % 3 == 2 && tokens % 2 == 0 { (2, tokens / 2) } else { (1, tokens) };
                        out.push(s(layout, mode, (b, seq, heads, d)));
                        i += 1;
                    }
                }
            }
        }
        // 4096 tokens: prefill of q and kv heads, as S and as B·S.
        out.push(s(Layout::Bsnd1s1d, "half", (1, 4096, 32, 128)));
        out.push(s(Layout::Bsnd1s1d, "interleave", (1, 4096, 8, 128)));
        out.push(s(Layout::Bnsd11sd, "half", (1, 4096, 8, 64)));
        out.push(s(Layout::BsndBs1d, "half", (4, 1024, 4, 128)));
        out.push(s(Layout::Sbnd, "interleave", (4096, 1, 2, 96)));
        out.push(s(Layout::BnsdB1sd, "half", (2, 2048, 2, 72)));
        // D > 896 (torch_npu rejects it).
        out.push(s(Layout::Bsnd1s1d, "half", (1, 17, 4, 1024)));
        out.push(s(Layout::Bnsd11sd, "interleave", (2, 3, 4, 2048)));
        out.push(s(Layout::Sbnd, "half", (5, 1, 3, 3000)));
        // Large B·N (torch_npu rejects B·N ≥ 1000 in BNSD/interleave).
        out.push(s(Layout::Bsnd1s1d, "interleave", (256, 1, 8, 128)));
        out.push(s(Layout::Bnsd11sd, "half", (32, 64, 3, 64)));
        out.push(s(Layout::Sbnd, "half", (1, 64, 32, 128)));
        out.push(s(Layout::Bnsd11sd, "interleave", (16, 128, 1, 128)));
    }
    out
}

fn case(spec: &OpSpec, shape: Shape, dist: Distribution, seed: u64) -> Case {
    let (b, s, n, d) = shape.dims;
    let (x, table) = shape.layout.shapes(b, s, n, d);
    let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let mut attrs = default_attrs(spec);
    attrs.retain(|(name, _)| name != "mode");
    attrs.push(("mode".to_string(), AttrValue::String(shape.mode.to_string())));
    Case {
        shapes: vec![
            (names[0].to_string(), x),
            (names[1].to_string(), table.clone()),
            (names[2].to_string(), table),
        ],
        dist,
        seed,
        attrs,
    }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, shape) in shapes(sweep).into_iter().enumerate() {
        out.push(case(spec, shape, Distribution::Uniform5, 1000 + i as u64));
    }
    let others: &[Distribution] = match sweep {
        Sweep::Quick => {
            &[Distribution::NormalLargeMean, Distribution::Tiny, Distribution::Zeros, Distribution::NanInf]
        }
        Sweep::Full => &[
            Distribution::NormalLargeMean,
            Distribution::Tiny,
            Distribution::Outlier,
            Distribution::Zeros,
            Distribution::NanInf,
        ],
    };
    let s = |layout, mode, dims| Shape { layout, mode, dims };
    let mut probes =
        vec![s(Layout::Bsnd1s1d, "half", (2, 3, 4, 72)), s(Layout::Sbnd, "interleave", (3, 2, 4, 128))];
    if sweep == Sweep::Full {
        probes.push(s(Layout::Bnsd11sd, "half", (2, 4, 17, 256)));
        probes.push(s(Layout::Bsnd1s1d, "interleave", (1, 128, 8, 128)));
        probes.push(s(Layout::BnsdB1sd, "half", (2, 14, 3, 80)));
    }
    for (i, dist) in others.iter().enumerate() {
        for (j, shape) in probes.iter().enumerate() {
            out.push(case(spec, *shape, *dist, 2000 + (i * 10 + j) as u64));
        }
    }
    for (i, (shape, dist)) in aimed_cases().into_iter().enumerate() {
        out.push(case(spec, shape, dist, 5000 + i as u64));
    }
    // The coverage rule (src/verify/coverage.rs): 6289 positions over 48 cores (132 rows on one
    // core, 131 on the rest), so a core runs three or more tiles (every 16-bit tile of these is
    // at most 65 rows) in each path: half by block copies, half by Gather (D 72), interleave.
    let coverage = [
        s(Layout::Bsnd1s1d, "half", (1, 6289, 1, 128)),
        s(Layout::Bsnd1s1d, "half", (1, 6289, 1, 72)),
        s(Layout::Bsnd1s1d, "interleave", (1, 6289, 1, 128)),
    ];
    for (i, shape) in coverage.into_iter().enumerate() {
        out.push(case(spec, shape, Distribution::Uniform5, COVERAGE_SEED + i as u64));
    }
    // rounding "hf" when the spec declares it (its default is "once"): every layout and mode
    // (the quick shapes), the NaN/Inf and large-mean probes, and the aimed cases (row ends,
    // one-hot rows, the UB-filling tiles of every tiling mode). float32 "hf" is the plain path,
    // whose lighter UB plan makes larger tiles: its near-full shapes are the last ones below.
    if has_rounding(spec) {
        let mut hf: Vec<(Shape, Distribution)> =
            shapes(Sweep::Quick).into_iter().map(|s| (s, Distribution::Uniform5)).collect();
        for dist in [Distribution::NanInf, Distribution::NormalLargeMean, Distribution::Tiny] {
            hf.extend(probes.iter().map(|s| (*s, dist)));
        }
        hf.extend(aimed_cases());
        hf.extend(HF_FP32_FULL_UB.iter().map(|s| (*s, Distribution::RowEnds)));
        for (i, (shape, dist)) in hf.into_iter().enumerate() {
            let mut c = case(spec, shape, dist, 6000 + i as u64);
            c.attrs.retain(|(n, _)| n != "rounding");
            c.attrs.push(("rounding".into(), AttrValue::String("hf".into())));
            out.push(c);
        }
    }
    out
}

/// Seeds of the coverage rule's cases (COVERAGE_SEED + index).
const COVERAGE_SEED: u64 = 9500;

/// A shape whose float32 "hf" tile (the plain path: no work rows, no hi/lo tables) nearly fills
/// the UB budget: whole positions, half mode by block copies, 15 positions of 9 heads of 64 per
/// tile = 183.75 KiB of the 184 KiB plan by the kernel's InitBuffer sizes (x in and y out double
/// buffered, the rotated row, two table buffers of cos and sin), so a buffer 16 KiB too large
/// overflows the 192 KiB UB (the rotary_mul-hf-outy-16k mutant). The other tiling modes' float32
/// "hf" tiles are left to the 16-bit and "once" aimed cases (not covered for float32 "hf").
const HF_FP32_FULL_UB: [Shape; 1] = [Shape { layout: Layout::Bsnd1s1d, mode: "half", dims: (1, 960, 9, 64) }];

/// Cases aimed at positions and at UB capacity (both sweeps). RowEnds puts ±64 at the last
/// element of every row, which is where a head, a tile (UB pass) and a core's share end, so a
/// tail left out or computed from the wrong lane is far off; OneHot rows make each output lane
/// one product. Each tiling mode of the TilingFunc gets a shape whose tile nearly fills the
/// 184 KiB UB budget (by the kernel's InitBuffer sizes for the tiling `opgen plan` prints: at
/// least 178 KiB in the dtype noted), so a buffer planned 16 KiB too large overflows the
/// 192 KiB UB (the rotary_mul-xrot-16k mutant dies on these and on no other case):
/// - whole positions per tile, half mode by block copies: 1x1008x8x64 (16-bit 180 KiB, float32 181);
/// - whole positions, half mode by Gather (D % 16 != 0): 1x960x8x72 (16-bit 179, float32 181);
/// - whole positions, interleave: 1x960x1x256 (16-bit 180, float32 180);
/// - one position per block in chunks of heads, half / interleave: 1x48x48x256 (16-bit 184 /
///   180) and 1x48x48x128 (float32 181 / 181);
/// - single-buffered tables (a head dim too large for two), float32: half 1x2x1x3296 (181),
///   interleave 1x2x1x2880 (180). 16-bit inputs switch to one table buffer only above D = 5888
///   (half), which float32 refuses, and every case runs in every dtype: not covered.
///
/// Shares of at most one UB tile are cut into two blocks (research K8), so the whole-position
/// shapes above give the busiest core more than one tile's worth (1008 positions: 21 per core
/// against the 20 of a 16-bit 1x1008x8x64 tile; 960: 20 against at most 18).
fn aimed_cases() -> Vec<(Shape, Distribution)> {
    let s = |layout, mode, dims| Shape { layout, mode, dims };
    let b = Layout::Bsnd1s1d;
    vec![
        (s(b, "half", (1, 1008, 8, 64)), Distribution::RowEnds),
        (s(b, "half", (1, 960, 8, 72)), Distribution::RowEnds),
        (s(b, "interleave", (1, 960, 1, 256)), Distribution::RowEnds),
        (s(b, "half", (1, 48, 48, 256)), Distribution::RowEnds),
        (s(b, "interleave", (1, 48, 48, 256)), Distribution::RowEnds),
        (s(b, "half", (1, 48, 48, 128)), Distribution::RowEnds),
        (s(b, "interleave", (1, 48, 48, 128)), Distribution::RowEnds),
        (s(b, "half", (1, 2, 1, 3296)), Distribution::RowEnds),
        (s(b, "interleave", (1, 2, 1, 2880)), Distribution::RowEnds),
        (s(Layout::Sbnd, "half", (3, 2, 5, 128)), Distribution::OneHot),
        (s(Layout::Bnsd11sd, "interleave", (2, 3, 2, 80)), Distribution::OneHot),
        // More than 255 table rows per block (16-bit: 360 of D = 16, one head): the sign's
        // level-0 Muls takes its rows in repeats of at most 255.
        (s(Layout::Bnsd11sd, "half", (1, 19200, 1, 16)), Distribution::Uniform5),
    ]
}

/// r1 and r2 for x [B,S,N,D] by the BSND 1S1D rule ([1,S,1,D]); pass `r1=`/`r2=` shapes
/// explicitly for other layouts.
pub fn derived_shape(_spec: &OpSpec, _i: usize, first: &[usize]) -> Vec<usize> {
    match first {
        [_, s, _, d] => vec![1, *s, 1, *d],
        other => other.to_vec(),
    }
}

/// The mode of a case's attrs.
pub fn mode_of(attrs: &[(String, AttrValue)]) -> Result<RotaryMode, FamilyError> {
    match attrs.iter().find(|(n, _)| n == "mode").map(|(_, v)| v) {
        Some(AttrValue::String(m)) if m == "half" => Ok(RotaryMode::Half),
        Some(AttrValue::String(m)) if m == "interleave" => Ok(RotaryMode::Interleave),
        Some(other) => {
            Err(FamilyError::new(format!("mode {other:?} is neither \"half\" nor \"interleave\"")))
        }
        None => Err(FamilyError::new("attr `mode` missing")),
    }
}

/// 16-bit: the float32 result is the exact value rounded once to float32 (exact products, one
/// sum), so it is within ½ float32 ulp (≤ 1 unit of 2^-24·|g|) of g: a window of 2. float32:
/// Dot2 is as accurate as the sum in twice the precision, then rounded once: the full sweep
/// measures max 1 ULP (module doc); the bar is 1, and the bulk gate's measured mean 0 (quick
/// sweep 2026-12-05: every float32 element exact), so its floor (1/16 ULP) holds.
fn tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::Float16 | DType::BFloat16 => Tolerance::Rne { tie_window: 2 },
        _ => Tolerance::ulp_bulk(1, 0.0),
    }
}

/// Checked by name: rotary_mul against npu_rotary_mul's math (src/reference/rotary.rs).
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    match spec.name.as_str() {
        "rotary_mul" => {
            let (x, r1, r2) = (&inputs[0].1, &inputs[1].1, &inputs[2].1);
            let mode = mode_of(attrs)?;
            // "hf": HF's roundings emulated one by one, so the gate is bit-exact (0 ULP; NaN
            // matches NaN whatever its payload).
            let (values, tolerance) = match rounding_of(spec, attrs)? {
                Rounding::Once => (reference::rotary::rotary_mul(x, r1, r2, mode)?, tolerance(x.dtype)),
                Rounding::Hf => (reference::rotary::rotary_mul_hf(x, r1, r2, mode)?, Tolerance::ulp(0)),
            };
            Ok(vec![Expected {
                name: spec.outputs[0].name.clone(),
                dtype: x.dtype,
                shape: x.shape.clone(),
                values,
                tolerance,
            }])
        }
        other => Err(FamilyError::new(format!(
            "no reference for rotary op `{other}`: catalogue ops are checked against src/reference"
        ))),
    }
}

// ---- the family --------------------------------------------------------------------------

pub struct Rotary;

impl FamilyOps for Rotary {
    fn sharding(&self, _spec: &OpSpec) -> Sharding {
        Sharding::Rows { whole_from_rule: false, reduces: false }
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        TILING_FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/rotary.cpp.j2",
            host: "host/rotary.cpp.j2",
            checks: Some("host/rotary_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        Ok(template_extras(spec))
    }

    /// Inputs (x, r1, r2), output y shaped like x. r2 has r1's shape; how r1 broadcasts over x
    /// (layout inference, mode restrictions) is checked by the op_host TilingFunc, which says
    /// why a shape is refused.
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        match spec.inputs.as_slice() {
            [x, r1, r2] => Ok(ShapeRule {
                checks: vec![ShapeCheck::SameShape { tensor: r2.name.clone(), like: r1.name.clone() }],
                outputs: vec![OutputShape::Like { of: x.name.clone() }],
            }),
            _ => Err(FamilyError::new("rotary needs inputs (x, r1, r2)")),
        }
    }

    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        derived_shape(spec, i, first)
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    /// Qwen2-7B's q (28 heads) and k (4 heads) and Qwen3-8B's q (32 heads) of D 128 at 4096
    /// tokens, BSND (Qwen3-8B's k, 8 heads, lies between the two k/q shapes).
    fn model_shapes(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        vec![
            ("Qwen2-7B q", vec![1, 4096, 28, 128]),
            ("Qwen2-7B k", vec![1, 4096, 4, 128]),
            ("Qwen3-8B q", vec![1, 4096, 32, 128]),
        ]
    }

    /// rounding "hf" (when the spec declares it) next to the default "once": in float32 it is
    /// the plain Mul/Mul/Add kernel, the like-for-like comparison with CANN's design.
    fn cann_builtin(&self, _spec: &OpSpec) -> Option<CannBuiltin> {
        Some(CannBuiltin::RotaryMul)
    }
    fn report_variants(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<(String, AttrValue)>)> {
        if has_rounding(spec) {
            vec![("rounding hf", vec![("rounding".to_string(), AttrValue::String("hf".into()))])]
        } else {
            Vec::new()
        }
    }

    fn work_units(&self, _spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        let (_, x) = shapes.first()?;
        let d = *x.last()? as u64;
        (d > 0).then(|| crate::tensor::shape_numel(x) as u64 / d)
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
        // The busiest core's x rows; a tile holds at most tileRows of them (a lower bound on its
        // tiles: table blocks and group ends cut more).
        let rows = super::largest_share(table_rows, f("coresPos"))
            * super::largest_share(f("bcastOuter"), f("coresBo"))
            * super::largest_share(f("bcastInner"), f("coresBi"));
        let uneven = super::uneven(table_rows, f("coresPos"))
            || super::uneven(f("bcastOuter"), f("coresBo"))
            || super::uneven(f("bcastInner"), f("coresBi"));
        PlanCoverage {
            mode: rotary_mode(tiling),
            passes: Some(super::passes(rows, f("tileRows"))),
            uneven: Some(uneven),
        }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        ROTARY_MODES.to_vec()
    }

    fn fusion_target(&self, _spec: &OpSpec) -> bool {
        true
    }

    /// HF `apply_rotary_pos_emb` with `rotate_half`.
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        let (x, _) = input(case, 0)?;
        let (r1, _) = input(case, 1)?;
        let (r2, _) = input(case, 2)?;
        let half = x.with_n(x.n / 2);
        let x2 = b.op("contiguous(x[..., D/2:])", &[half], half);
        let neg = b.op("neg", &[x2], half);
        let x1 = b.op("contiguous(x[..., :D/2])", &[half], half);
        let rotated = b.op("cat((-x2, x1), -1)", &[neg, x1], x);
        let a = b.op("x * cos", &[x, r1], x);
        let c = b.op("rotate_half(x) * sin", &[rotated, r2], x);
        b.op("add", &[a, c], x);
        b.note(
            "the two contiguous() copies are the l0op::Contiguous that aclnnNeg / aclnnCat run on a \
             sliced (non-contiguous) input; without them eager is 5 launches",
        );
        b.note("q and k are two calls of this sequence (and two fused launches)");
        Ok(b.finish("HF apply_rotary_pos_emb with rotate_half (one tensor)"))
    }
}
