//! Family paged_cache: reshape_and_cache, the paged-cache scatter (key/value [T, N, D] into
//! caches [num_blocks, block_size, N, D] updated in place; negative slots skipped, slots past the
//! cache never written and counted in an int32 output; the same slot twice: the later token
//! wins, on every core count), and reshape_and_cache_int8, the same quantising each (token,
//! head) row of D to int8 with scale = absmax/127 into float32 scale caches
//! [num_blocks, block_size, N] (research/op-semantics.md §4). `[paged_cache] kind` names which.
//!
//! Verification makes its own inputs ([`case_inputs`]): slot mappings by pattern (prefill runs
//! across blocks, decode, padding and past-the-cache slots, duplicates), caches pre-filled so
//! that every slot the reference leaves alone is checked bit for bit (int8 caches hold −128 and
//! scale caches negative values, which no quantisation writes).

use super::eager::{self, last_dim, Builder, T};
use super::layout::{self, kind, Role};
use super::CannBuiltin;
use super::{Case, Expected, Sweep};
use super::{
    CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, ReportInputs, Templates,
};
use super::{OutputShape, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::{derive_seed, Distribution, Rng};
use crate::plan::TilingField;
use crate::reference::kv_layout::{self as reference, Int8KvCache};
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, FamilyParams, KvKind, OpSpec, Reporter};
use crate::spec::{BackwardRule, SpecTables};
use crate::tensor::HostTensor;

// ---- spec --------------------------------------------------------------------------------

const KINDS: [KvKind; 2] = [KvKind::ReshapeAndCache, KvKind::ReshapeAndCacheInt8];
const CACHE_IN: &[Role] = &[
    layout::role("key", &DType::ALL),
    layout::role("value", &DType::ALL),
    layout::cache("key_cache", &DType::ALL, Some(0)),
    layout::cache("value_cache", &DType::ALL, Some(1)),
    layout::role("slot_mapping", layout::SLOTS),
];
const CACHE_OUT: &[Role] = &[layout::role("out_of_range", layout::INT32)];
const INT8_IN: &[Role] = &[
    layout::role("key", layout::FLOATS),
    layout::role("value", layout::FLOATS),
    layout::cache("key_cache", layout::INT8, None),
    layout::cache("value_cache", layout::INT8, None),
    layout::cache("key_scale", layout::FLOAT32, None),
    layout::cache("value_scale", layout::FLOAT32, None),
    layout::role("slot_mapping", layout::SLOTS),
];

pub(crate) fn params(raw: &RawSpec) -> FamilyParams {
    FamilyParams::Layout { kind: layout::kind_of_table(raw.paged_cache.as_ref(), &KINDS) }
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let Some(kind) = layout::check_kind(r, raw, spec, "paged_cache", raw.paged_cache.as_ref(), &KINDS) else {
        return;
    };
    let label = format!("family paged_cache ({})", kind.name());
    let roles =
        if kind == KvKind::ReshapeAndCacheInt8 { (INT8_IN, CACHE_OUT) } else { (CACHE_IN, CACHE_OUT) };
    layout::check_roles(r, raw, spec, &label, roles);
    layout::check_no_attrs(r, raw, &label);
}

// ---- plan --------------------------------------------------------------------------------

/// The tiling fields both scatters share, in order, followed by the op's own
/// (`paged_cache_fields![extra, ..]`).
macro_rules! paged_cache_fields {
    ($($extra:expr),* $(,)?) => {
        &[
            TilingField::u32("tokens", "T: rows of key, value and slot_mapping"),
            TilingField::u32("heads", "N: heads of key, value and the caches"),
            TilingField::u32("keyDim", "Dk: last dim of key and key_cache"),
            TilingField::u32("valueDim", "Dv: last dim of value and value_cache"),
            TilingField::u32("cacheSlots", "num_blocks * block_size: slots of each cache"),
            TilingField::u32(
                "slotPeriodLog2",
                "slot s belongs to the core c with c * P / blockDim <= s mod P < (c + 1) * P / blockDim, P = 2^slotPeriodLog2",
            ),
            TilingField::u32("slotChunk", "slot-mapping entries read into UB at a time (a multiple of 64)"),
            TilingField::u32(
                "scanMode",
                "0: slots copied to UB and tested by the scalar unit; 1: owned slots found by vector ops (int32 slots, cacheSlots <= 2^23); 2: slots read from GM by the scalar unit (few tokens)",
            ),
            $($extra),*
        ]
    };
}

/// reshape_and_cache: every core scans the slot mapping and copies the tokens whose slots it
/// owns (a residue range of slot mod 2^slotPeriodLog2).
const CACHE_FIELDS: &[TilingField] = paged_cache_fields![TilingField::u32(
    "chunkBytes",
    "bytes per UB copy of a run of key or value rows (a multiple of 32)"
)];

/// reshape_and_cache_int8: as reshape_and_cache, quantising rowsPerPass (token, head) rows per UB
/// pass (at most 255: one repeat of each level-0 instruction per row).
const INT8_FIELDS: &[TilingField] = paged_cache_fields![
    TilingField::u32("rowsPerPass", "(token, head) rows quantised per UB pass"),
    TilingField::u32("rowStride", "UB elements per row: max(Dk, Dv) rounded up to 32"),
];

// ---- verification: shapes ------------------------------------------------------------------

/// One cache case: tokens, heads, key/value head dims, block size, the slot pattern.
#[derive(Debug, Clone, Copy)]
struct CacheShape {
    tokens: usize,
    heads: usize,
    key_dim: usize,
    value_dim: usize,
    block_size: usize,
    pattern: SlotPattern,
}

/// How a case's slot mapping is drawn (encoded in the case seed: `seed % 8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotPattern {
    /// Sequences of consecutive positions through a shuffled block table (prefill).
    Prefill,
    /// Distinct random slots (decode).
    Decode,
    /// Prefill with padding (negative slots) and slots past the cache mixed in.
    Padded,
    /// Slots drawn with replacement from a few values: duplicates, and some padding.
    Duplicates,
    /// Aimed at the ownership scan: the first half of the tokens writes slots 0, 1, 2, ... (every
    /// residue of the ownership period, so every core's range boundaries, and runs that cross
    /// from one core's range into the next), the second half rewrites a shuffled half of those
    /// slots (duplicates across cores' ranges: the later token wins); padding at the last entry
    /// of every 1024-entry slot chunk and at the last token, and slots past the cache.
    Rewrite,
    /// Every token names one slot (all tokens in one core's range; the last token wins), with
    /// some padding and slots past the cache.
    OneSlot,
}

impl SlotPattern {
    const ALL: [SlotPattern; 6] = [
        SlotPattern::Prefill,
        SlotPattern::Decode,
        SlotPattern::Padded,
        SlotPattern::Duplicates,
        SlotPattern::Rewrite,
        SlotPattern::OneSlot,
    ];

    fn code(self) -> u64 {
        SlotPattern::ALL.iter().position(|p| *p == self).expect("listed") as u64
    }

    /// The pattern a case seed encodes.
    pub fn of_seed(seed: u64) -> SlotPattern {
        SlotPattern::ALL[(seed % 8) as usize % SlotPattern::ALL.len()]
    }
}

/// A case seed that encodes `pattern`.
fn cache_seed(index: usize, pattern: SlotPattern) -> u64 {
    5000 + 8 * index as u64 + pattern.code()
}

/// Blocks enough for every token plus four spare blocks (a prefill of up to three sequences
/// never wraps its block table), so prefill spans blocks and decode finds
/// distinct slots.
fn num_blocks(tokens: usize, block_size: usize) -> usize {
    tokens.div_ceil(block_size) + 4
}

const BLOCK_SIZES: [usize; 2] = [16, 128];

fn cache_shapes(sweep: Sweep) -> Vec<CacheShape> {
    let s = |tokens, heads, key_dim, value_dim, block_size, pattern| CacheShape {
        tokens,
        heads,
        key_dim,
        value_dim,
        block_size,
        pattern,
    };
    use SlotPattern::*;
    let mut out = vec![
        s(1, 2, 64, 64, 16, Decode),
        s(3, 2, 72, 72, 16, Padded),
        s(17, 4, 80, 80, 16, Prefill),
        s(17, 8, 96, 64, 128, Duplicates),
        s(128, 8, 128, 128, 128, Prefill),
        s(33, 2, 256, 256, 16, Padded),
        s(40, 4, 72, 72, 16, Decode),
        // Rows whose bytes are not a multiple of 32 in every dtype, key and value dims apart.
        s(5, 3, 36, 20, 16, Padded),
        // The vector ownership scan: every residue and range boundary, duplicates across cores'
        // ranges, a second slot chunk with a remainder (1100 = 1024 + 76), padding in chunks' last
        // lanes; all tokens on one slot (one core's range).
        s(1100, 1, 32, 32, 16, Rewrite),
        s(96, 2, 64, 64, 16, Rewrite),
        s(200, 1, 32, 32, 16, OneSlot),
    ];
    if sweep == Sweep::Full {
        let mut i = 0;
        for tokens in layout::TOKENS {
            for heads in layout::KV_HEADS {
                for dim in layout::HEAD_DIMS {
                    for block_size in BLOCK_SIZES {
                        if tokens * heads * dim > layout::MAX_FULL_ELEMENTS {
                            continue;
                        }
                        out.push(s(tokens, heads, dim, dim, block_size, SlotPattern::ALL[i % 4]));
                        i += 1;
                    }
                }
            }
        }
        // Key and value head dims that differ (MLA-like), and the q-head counts.
        out.push(s(128, 2, 256, 128, 16, Padded));
        out.push(s(17, 14, 72, 72, 16, Duplicates));
        out.push(s(128, 64, 128, 128, 128, Prefill));
    }
    out
}

fn cache_case(spec: &OpSpec, c: &CacheShape, dist: Distribution, seed: u64) -> Case {
    let nb = num_blocks(c.tokens, c.block_size);
    let name = |i: usize| spec.inputs[i].name.clone();
    let mut shapes = vec![
        (name(0), vec![c.tokens, c.heads, c.key_dim]),
        (name(1), vec![c.tokens, c.heads, c.value_dim]),
        (name(2), vec![nb, c.block_size, c.heads, c.key_dim]),
        (name(3), vec![nb, c.block_size, c.heads, c.value_dim]),
    ];
    if kind(spec) == KvKind::ReshapeAndCacheInt8 {
        shapes.push((name(4), vec![nb, c.block_size, c.heads]));
        // The scale caches may carry a trailing 1 (the reference and the op_host accept both).
        let trailing =
            if seed % 16 >= 8 { vec![nb, c.block_size, c.heads, 1] } else { vec![nb, c.block_size, c.heads] };
        shapes.push((name(5), trailing));
    }
    shapes.push((spec.inputs.last().expect("slot_mapping").name.clone(), vec![c.tokens]));
    Case { shapes, dist, seed, attrs: Vec::new() }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let kind = kind(spec);
    let mut out = Vec::new();
    let shapes = cache_shapes(sweep);
    for (i, c) in shapes.iter().enumerate() {
        out.push(cache_case(spec, c, Distribution::Uniform5, cache_seed(i, c.pattern)));
    }
    // Rows with NaN/Inf are not a quantisation contract (op-semantics §7.8).
    let nan_inf = kind == KvKind::ReshapeAndCache;
    let base = shapes.len();
    for (j, dist) in layout::other_dists(sweep, nan_inf).into_iter().enumerate() {
        let c = shapes[2 + j % 3];
        out.push(cache_case(spec, &c, dist, cache_seed(base + j, c.pattern)));
    }
    // A row's absmax at its last element (RowEnds) and one-hot rows, with padding.
    let base = base + layout::other_dists(sweep, nan_inf).len();
    for (j, dist) in Distribution::AIMED.into_iter().enumerate() {
        let c = shapes[1 + 4 * j];
        out.push(cache_case(spec, &c, dist, cache_seed(base + j, SlotPattern::Padded)));
    }
    // The coverage rule (src/verify/coverage.rs): 2113 = 2 x 1024 + 65 tokens are three slot
    // chunks of the vector scan, so each core's slot buffer is reused twice.
    let c = CacheShape {
        tokens: 2113,
        heads: 1,
        key_dim: 32,
        value_dim: 32,
        block_size: 16,
        pattern: SlotPattern::Rewrite,
    };
    out.push(cache_case(spec, &c, Distribution::Uniform5, cache_seed(COVERAGE_INDEX, c.pattern)));
    out
}

/// The seed index of the coverage rule's case (past every sweep's other cases).
const COVERAGE_INDEX: usize = 1000;

/// The shapes of the other inputs from key's (`opgen run` / `opgen plan` with one shape): caches
/// of block size 16 with four spare blocks, one slot per token.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    let (t, n, d) = match first {
        [t, n, d] => (*t, *n, *d),
        _ => return first.to_vec(),
    };
    let nb = num_blocks(t, 16);
    let last = spec.inputs.len() - 1;
    match i {
        0 | 1 => vec![t, n, d],
        2 | 3 => vec![nb, 16, n, d],
        _ if i == last => vec![t],
        _ => vec![nb, 16, n],
    }
}

// ---- verification: inputs ------------------------------------------------------------------

/// `tokens` slots into a cache of `cache_slots` slots in blocks of `block_size`, by `pattern`.
/// Negative entries are padding; entries ≥ `cache_slots` are past the cache. `wide` (an int64
/// slot_mapping) adds slots whose low 32 bits are a valid slot (2^32 + 1, −2^32 + 3) and the
/// int64 extremes, so a kernel that reads only the low word writes where it must not.
pub fn slot_mapping(
    pattern: SlotPattern,
    tokens: usize,
    cache_slots: usize,
    block_size: usize,
    seed: u64,
    wide: bool,
) -> Vec<i64> {
    let mut rng = Rng::new(seed);
    let blocks = cache_slots / block_size.max(1);
    let prefill = |rng: &mut Rng| -> Vec<i64> {
        // 1 to 3 sequences through one shuffled block table, each taking fresh blocks.
        let mut table: Vec<usize> = (0..blocks).collect();
        for k in (1..table.len()).rev() {
            table.swap(k, rng.below(k as u64 + 1) as usize);
        }
        let seqs = 1 + rng.below(3) as usize;
        let mut out = Vec::with_capacity(tokens);
        let mut next_block = 0;
        let mut left = tokens;
        for q in 0..seqs {
            let len = if q + 1 == seqs { left } else { rng.below(left as u64 + 1) as usize };
            left -= len;
            // The first sequence continues an earlier prefill; the others start a block.
            let start = if q == 0 { rng.below(block_size as u64) as usize } else { 0 };
            for p in start..start + len {
                let b = table[(next_block + p / block_size) % blocks];
                out.push((b * block_size + p % block_size) as i64);
            }
            next_block += (start + len).div_ceil(block_size);
        }
        out
    };
    let mut slots = match pattern {
        SlotPattern::Prefill | SlotPattern::Padded => prefill(&mut rng),
        SlotPattern::Decode => {
            rng.distinct_indices(cache_slots, tokens).into_iter().map(|s| s as i64).collect::<Vec<_>>()
        }
        SlotPattern::Duplicates => {
            let pool: Vec<i64> =
                (0..tokens.div_ceil(3).max(1)).map(|_| rng.below(cache_slots as u64) as i64).collect();
            (0..tokens).map(|_| pool[rng.below(pool.len() as u64) as usize]).collect()
        }
        SlotPattern::Rewrite => {
            let first = tokens.div_ceil(2);
            let mut again: Vec<i64> = (0..first as i64).collect();
            for k in (1..again.len()).rev() {
                again.swap(k, rng.below(k as u64 + 1) as usize);
            }
            (0..first as i64).chain(again.into_iter().take(tokens - first)).collect()
        }
        SlotPattern::OneSlot => {
            let slot = rng.below(cache_slots as u64) as i64;
            vec![slot; tokens]
        }
    };
    if matches!(pattern, SlotPattern::Rewrite | SlotPattern::OneSlot) && tokens > 0 {
        // Padding in the last lane of each slot chunk the kernels read (1024 entries) and of the
        // last (partial) chunk; slots past the cache at a few random tokens.
        for at in (SLOT_CHUNK - 1..tokens).step_by(SLOT_CHUNK).chain([tokens - 1]) {
            slots[at] = -1;
        }
        for at in rng.distinct_indices(tokens, (tokens / 16).min(tokens)) {
            slots[at] = if at % 2 == 0 { cache_slots as i64 } else { cache_slots as i64 + 7 };
        }
    }
    if matches!(pattern, SlotPattern::Decode) {
        // distinct_indices sorts; decode batches are in request order.
        for k in (1..slots.len()).rev() {
            slots.swap(k, rng.below(k as u64 + 1) as usize);
        }
    }
    if matches!(pattern, SlotPattern::Padded | SlotPattern::Duplicates) && tokens > 0 {
        let mut specials: Vec<i64> = vec![
            -1,
            cache_slots as i64,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            -(block_size as i64),
            cache_slots as i64 + block_size as i64,
        ];
        if wide {
            specials.extend(WIDE_SPECIALS);
        }
        // Every special value in each case with enough tokens (padding, the first slot past
        // the cache, the int32 extremes, a negative block, a block past the cache).
        let all = specials.len().min(tokens);
        let count =
            if pattern == SlotPattern::Padded { (tokens / 4).max(all) } else { (tokens / 8).max(all) };
        for (j, at) in rng.distinct_indices(tokens, count).into_iter().enumerate() {
            slots[at] = specials[j % specials.len()];
        }
    }
    slots
}

/// Slot-mapping entries the kernels read into UB at a time (the op_host's MAX_SLOT_CHUNK).
const SLOT_CHUNK: usize = 1024;

/// The int64-only special slots: past the cache and negative, but valid slots (1, 3) in their
/// low 32 bits; the int64 extremes.
const WIDE_SPECIALS: [i64; 4] = [(1 << 32) + 1, -(1 << 32) + 3, i64::MIN, i64::MAX];

/// The inputs of a case in dtype combination `column`, made by the family: the slot mapping by
/// the case's [`SlotPattern`], caches pre-filled with values no write of the case produces, one
/// all-zero row and (float32, bfloat16) one row of absmax below 2^-64 per quantised tensor, int8
/// data over its whole range.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> CaseData {
    let kind = kind(spec);
    let dtype = |name: &str| {
        spec.inputs.iter().find(|t| t.name == name).map(|t| t.dtypes[column]).unwrap_or(DType::Float32)
    };
    let seed = |name: &str| derive_seed(case.seed, name);
    let mut inputs: Vec<(String, HostTensor)> = Vec::new();
    let int8 = kind == KvKind::ReshapeAndCacheInt8;
    let cache_shape = &case.shapes[2].1;
    let (cache_slots, block_size) = (cache_shape[0] * cache_shape[1], cache_shape[1]);
    let last = case.shapes.len() - 1;
    for (i, (name, shape)) in case.shapes.iter().enumerate() {
        let d = dtype(name);
        let t = match i {
            0 | 1 => {
                let mut t = layout::data(case.dist, d, shape, seed(name));
                if int8 {
                    zero_one_row(&mut t, i);
                    tiny_one_row(&mut t, i);
                }
                t
            }
            _ if i == last => {
                let slots = slot_mapping(
                    SlotPattern::of_seed(case.seed),
                    shape[0],
                    cache_slots,
                    block_size,
                    seed(name),
                    d == DType::Int64,
                );
                HostTensor::from_i64(d, shape, &slots)
            }
            // int8 caches: −128 everywhere, a value the symmetric quantisation never writes.
            2 | 3 if int8 => HostTensor::from_bits(d, shape, &vec![0x80; shape.iter().product()]),
            // Scale caches: negative, which no scale (absmax / 127 ≥ 0) is.
            4 | 5 => {
                let n: usize = shape.iter().product();
                let mut rng = Rng::new(seed(name));
                let v: Vec<f64> = (0..n).map(|_| -1.0 - rng.uniform(0.0, 4.0)).collect();
                HostTensor::from_f64(d, shape, &v)
            }
            // Caches of the copy: finite values unlike the case's (so a misplaced row shows).
            _ => layout::data(Distribution::Uniform5, d, shape, seed(name)),
        };
        inputs.push((name.clone(), t));
    }
    (inputs, case.attrs.clone())
}

/// Zeroes one (token, head) row of a [T, N, D] tensor (key: the first token's last head; value:
/// the last token's first head), with a −0.0 in it: the all-zero row must give q = 0, scale 0.
fn zero_one_row(t: &mut HostTensor, which: usize) {
    let [tokens, heads, dim] = t.shape[..] else { return };
    if tokens == 0 || heads == 0 || dim == 0 {
        return;
    }
    let row = if which == 0 { heads - 1 } else { (tokens - 1) * heads };
    for j in 0..dim {
        t.set_f64(row * dim + j, if j == dim / 2 { -0.0 } else { 0.0 });
    }
}

/// Scales one (token, head) row of a float32 or bfloat16 [T, N, D] tensor to subnormals of
/// absmax 2^-128 (key: the first token's first head; value: the last token's last head; never
/// the all-zero row): there 127 / absmax overflows unless the kernel first scales the row by
/// 2^64 (it does below 2^-64). float16 has no such values (its smallest subnormal is 2^-24).
fn tiny_one_row(t: &mut HostTensor, which: usize) {
    let [tokens, heads, dim] = t.shape[..] else { return };
    if heads < 2 || dim == 0 || !matches!(t.dtype, DType::Float32 | DType::BFloat16) {
        return;
    }
    let row = if which == 0 { 0 } else { tokens * heads - 1 };
    for j in 0..dim {
        // Multiples of 2^-130 up to 4: exact bfloat16 and float32 subnormals.
        t.set_f64(row * dim + j, ((j % 9) as f64 - 4.0) * 2f64.powi(-130));
    }
}

// ---- verification: references ---------------------------------------------------------------

/// The written elements of an int8 cache at their unrounded quotients (`q`, NaN where no token
/// writes: those keep the cache's bits, which `verify` also holds bitwise), under `Rne`.
fn quotients(name: &str, cache: &HostTensor, q: &[f64], tie_window: u32) -> Expected {
    let values =
        cache.to_f64().into_iter().zip(q).map(|(old, q)| if q.is_nan() { old } else { *q }).collect();
    Expected {
        name: name.to_string(),
        dtype: cache.dtype,
        shape: cache.shape.clone(),
        values,
        tolerance: Tolerance::Rne { tie_window },
    }
}

/// int8 quantisation: q = RINT(x · (127/absmax)) in float32 is two roundings (the reciprocal
/// and the product), each at most ½ float32 ulp, i.e. at most 2^-24 relative: the float32
/// quotient is within 2·2^-24·|g| (+ second-order terms) of g. Where g is nearer than that to a
/// .5 tie the kernel may round either way; 4 units covers that with 2x room.
const INT8_TIE_WINDOW: u32 = 4;

fn count(spec: &OpSpec, past: usize) -> Expected {
    Expected {
        name: spec.outputs[0].name.clone(),
        dtype: DType::Int32,
        shape: vec![1],
        values: vec![past as f64],
        tolerance: Tolerance::Bitwise,
    }
}

/// Checked against src/reference/kv_layout.rs. In-place caches are expected outputs too,
/// compared over their whole extent: bitwise for copies; for the quantised cache the int8
/// values RNE of the unrounded quotient except near .5 ties, and the scales (absmax/127, one
/// float32 division) exactly (the untouched slots are held bitwise by `verify`).
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    _attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let name = |i: usize| spec.inputs[i].name.as_str();
    match kind(spec) {
        KvKind::ReshapeAndCache => {
            let (key, value, slots) = (
                layout::input(inputs, spec, 0)?,
                layout::input(inputs, spec, 1)?,
                layout::input(inputs, spec, 4)?,
            );
            let mut kc = layout::input(inputs, spec, 2)?.clone();
            let mut vc = layout::input(inputs, spec, 3)?.clone();
            let block_size = kc.shape.get(1).copied().unwrap_or(0);
            let past = reference::reshape_and_cache(key, value, &mut kc, &mut vc, slots, block_size)?;
            Ok(vec![
                count(spec, past),
                layout::exact(name(2), &kc, Tolerance::Bitwise),
                layout::exact(name(3), &vc, Tolerance::Bitwise),
            ])
        }
        KvKind::ReshapeAndCacheInt8 => {
            let (key, value, slots) = (
                layout::input(inputs, spec, 0)?,
                layout::input(inputs, spec, 1)?,
                layout::input(inputs, spec, 6)?,
            );
            let mut kc = layout::input(inputs, spec, 2)?.clone();
            let mut vc = layout::input(inputs, spec, 3)?.clone();
            let block_size = kc.shape.get(1).copied().unwrap_or(0);
            let (kq, vq) =
                reference::reshape_and_cache_int8_quotients(key, value, &kc, &vc, slots, block_size)?;
            let mut ks = layout::input(inputs, spec, 4)?.clone();
            let mut vs = layout::input(inputs, spec, 5)?.clone();
            let cache =
                Int8KvCache { key: &mut kc, value: &mut vc, key_scale: &mut ks, value_scale: &mut vs };
            let past = reference::reshape_and_cache_int8(key, value, cache, slots, block_size)?;
            Ok(vec![
                count(spec, past),
                quotients(name(2), &kc, &kq, INT8_TIE_WINDOW),
                quotients(name(3), &vc, &vq, INT8_TIE_WINDOW),
                layout::exact(name(4), &ks, Tolerance::Rne { tie_window: 0 }),
                layout::exact(name(5), &vs, Tolerance::Rne { tie_window: 0 }),
            ])
        }
        other => Err(FamilyError::new(format!("paged_cache has no kind {}", other.name()))),
    }
}
// ---- the family --------------------------------------------------------------------------

pub struct PagedCache;

impl FamilyOps for PagedCache {
    fn backward_rule(&self) -> BackwardRule {
        BackwardRule::Declared
    }

    fn spec_tables(&self) -> SpecTables {
        SpecTables { accepts: &["paged_cache"], requires: None }
    }

    fn params(&self, raw: &RawSpec) -> FamilyParams {
        params(raw)
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, spec: &OpSpec) -> &'static [TilingField] {
        if kind(spec) == KvKind::ReshapeAndCacheInt8 {
            INT8_FIELDS
        } else {
            CACHE_FIELDS
        }
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/paged_cache.cpp.j2",
            host: "host/paged_cache.cpp.j2",
            checks: Some("host/paged_cache_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        Ok(layout::kind_context(spec))
    }

    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        derived_shape(spec, i, first)
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        cases(spec, sweep)
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        Some(case_inputs(spec, column, case))
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        expected(spec, inputs, attrs)
    }

    fn cann_builtin(&self, spec: &OpSpec) -> Option<CannBuiltin> {
        // The family's kinds are these two (KINDS); the spec check refuses any other.
        Some(if kind(spec) == KvKind::ReshapeAndCacheInt8 {
            CannBuiltin::ReshapeAndCacheInt8
        } else {
            CannBuiltin::ReshapeAndCache
        })
    }
    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        // Every core scans the whole slot mapping (no shares to be uneven); the scan's UB passes
        // are slot chunks, except in GM-read mode (no scan buffer). The copies each core makes
        // depend on the slots, which the plan does not see.
        let (mode, passes) = match f("scanMode") as u32 {
            0 => ("scan in UB", Some(super::passes(f("tokens"), f("slotChunk")))),
            1 => ("vector scan", Some(super::passes(f("tokens"), f("slotChunk")))),
            _ => ("GM reads", None),
        };
        PlanCoverage { mode, passes, uneven: None }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        // Every slot dtype takes each scan (the TilingFunc picks by tokens and cache slots).
        vec!["scan in UB", "vector scan", "GM reads"]
    }

    /// The caches are updated in place and the int32 count [1] returned. The cache geometry
    /// (slot mapping length, cache shapes) is checked by the op_host, which says why a shape is
    /// refused.
    fn shape_rule(&self, _spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        Ok(ShapeRule { checks: Vec::new(), outputs: vec![OutputShape::Fixed { dims: vec![1] }] })
    }

    /// Qwen2-7B's and Qwen3-8B's KV heads (4 and 8 of D 128): a 4096-token prefill each, and
    /// Qwen2-7B decode steps of 1 and 64 tokens (one per request of the batch).
    fn model_shapes(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        vec![
            ("Qwen2-7B kv", vec![4096, 4, 128]),
            ("Qwen3-8B kv", vec![4096, 8, 128]),
            ("Qwen2-7B kv decode", vec![1, 4, 128]),
            ("Qwen2-7B kv decode", vec![64, 4, 128]),
        ]
    }

    /// The slot mapping is realistic: token i goes to slot i (a prefill filling fresh blocks),
    /// wrapping at the cache's capacity; the valid slot count comes with it.
    fn report_inputs(
        &self,
        spec: &OpSpec,
        column: usize,
        shapes: &[(String, Vec<usize>)],
    ) -> Option<ReportInputs> {
        let shape_of = |name: &str| shapes.iter().find(|(n, _)| n == name).map(|(_, s)| s.as_slice());
        let cache = shape_of(&spec.inputs.iter().find(|t| t.mutated)?.name)?;
        let capacity = (cache.len() >= 2).then(|| (cache[0] * cache[1]) as u64)?;
        let slot = spec.inputs.len() - 1;
        let tokens = crate::tensor::shape_numel(shape_of(&spec.inputs[slot].name)?) as u64;
        let slots: Vec<i64> = (0..tokens).map(|t| (t % capacity.max(1)) as i64).collect();
        let valid = slots.iter().filter(|v| **v >= 0 && (**v as u64) < capacity).count() as u64;
        let tensor = HostTensor::from_i64(spec.inputs[slot].dtypes[column], &[tokens as usize], &slots);
        Some(ReportInputs { tensors: vec![(slot, tensor)], valid_slots: Some(valid) })
    }

    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        eager_sequence(case)
    }
}

/// The vLLM torch fallback of the paged-cache write (the tensors found by role: mutated inputs
/// are the caches, the integer rank-1 input the slot mapping).
fn eager_sequence(case: &EagerCase) -> Result<EagerSequence, FamilyError> {
    let spec = case.spec;
    let b = &mut Builder::default();
    let kind = spec
        .kv_kind()
        .ok_or_else(|| FamilyError::new(format!("no eager sequence for op `{}`", spec.name)))?;
    let all: Vec<(T, &[usize], bool, &str)> = (0..spec.inputs.len())
        .map(|i| {
            eager::input(case, i).map(|(t, s)| (t, s, spec.inputs[i].mutated, spec.inputs[i].name.as_str()))
        })
        .collect::<Result<_, _>>()?;
    let slot = all
        .iter()
        .find(|t| !t.2 && !t.0.dtype.is_float() && t.1.len() == 1)
        .ok_or(FamilyError::new("no slot-mapping input"))?
        .0;
    // key and value: the other inputs of rank >= 2 (int8 too, for a plain int8 cache).
    let sources: Vec<(T, &[usize])> =
        all.iter().filter(|t| !t.2 && t.1.len() >= 2).map(|t| (t.0, t.1)).collect();
    let caches: Vec<(T, &str)> = all.iter().filter(|t| t.2).map(|t| (t.0, t.3)).collect();
    let tokens = slot.n;
    if kind == KvKind::ReshapeAndCache {
        if sources.len() != caches.len() || sources.is_empty() {
            return Err(FamilyError::new(format!(
                "{} sources for {} caches: no eager sequence written for this signature",
                sources.len(),
                caches.len()
            )));
        }
        for ((src, _), (cache, name)) in sources.iter().zip(&caches) {
            b.op(
                format!("{name}.view(-1, row)[slot_mapping] = src (index_put_)"),
                &[*src, slot],
                cache.with_n(src.n),
            );
        }
        let valid = case.valid_slots.map_or(String::new(), |v| format!(" ({v} valid)"));
        b.note(format!("{tokens} tokens{valid}; eager index_put_ writes padded (negative) slots too"));
        return Ok(
            std::mem::take(b).finish("vLLM torch fallback: cache.view(-1, row)[slot_mapping] = key / value")
        );
    }
    let data: Vec<&(T, &str)> = caches.iter().filter(|c| c.0.dtype == DType::Int8).collect();
    let scales: Vec<&(T, &str)> = caches.iter().filter(|c| c.0.dtype.is_float()).collect();
    if sources.is_empty() || data.len() != sources.len() || scales.len() != sources.len() {
        return Err(FamilyError::new(format!(
            "{} sources, {} int8 caches, {} scale caches: no eager sequence written for this signature",
            sources.len(),
            data.len(),
            scales.len()
        )));
    }
    for (((src, shape), q_cache), s_cache) in sources.iter().zip(data).zip(scales) {
        let d = last_dim(shape)?;
        let groups = T { n: src.n / d, dtype: DType::Float32 };
        let f = if src.dtype == DType::Float32 {
            *src
        } else {
            b.op("x.to(float32)", &[*src], src.as_dtype(DType::Float32))
        };
        let a = b.op("abs", &[f], f);
        let m = b.op("amax(-1, keepdim=True)", &[a], groups);
        let scale = b.op("absmax / 127", &[m], groups);
        let q = b.op("x / scale", &[f, scale], f);
        let r = b.op("round", &[q], f);
        let c = b.op("clamp(-128, 127)", &[r], f);
        let i8q = b.op(".to(int8)", &[c], f.as_dtype(DType::Int8));
        b.op(format!("{}[slot_mapping] = q (index_put_)", q_cache.1), &[i8q, slot], i8q);
        b.op(format!("{}[slot_mapping] = scale (index_put_)", s_cache.1), &[scale, slot], scale);
    }
    Ok(std::mem::take(b)
        .finish("per-(token, head) absmax int8 quantisation in torch, then index_put_ into the caches"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_patterns_have_their_properties() {
        let (tokens, bs) = (200, 16);
        let cache_slots = num_blocks(tokens, bs) * bs;
        let prefill = slot_mapping(SlotPattern::Prefill, tokens, cache_slots, bs, 1, false);
        assert_eq!(prefill.len(), tokens);
        assert!(prefill.iter().all(|s| (0..cache_slots as i64).contains(s)));
        let mut sorted = prefill.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), tokens, "prefill slots are distinct");
        // Runs of consecutive slots (within blocks) dominate.
        let runs = prefill.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(runs > tokens / 2, "{runs}");

        let decode = slot_mapping(SlotPattern::Decode, tokens, cache_slots, bs, 2, false);
        let mut sorted = decode.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), tokens);

        let padded = slot_mapping(SlotPattern::Padded, tokens, cache_slots, bs, 3, false);
        assert!(padded.iter().any(|s| *s < 0));
        assert!(padded.iter().any(|s| *s >= cache_slots as i64));

        let dup = slot_mapping(SlotPattern::Duplicates, tokens, cache_slots, bs, 4, false);
        let mut sorted: Vec<i64> = dup.iter().copied().filter(|s| *s >= 0).collect();
        let before = sorted.len();
        sorted.sort();
        sorted.dedup();
        assert!(sorted.len() < before, "duplicates present");
        assert!(dup.iter().any(|s| *s < 0));

        for (i, p) in SlotPattern::ALL.into_iter().enumerate() {
            assert_eq!(SlotPattern::of_seed(cache_seed(i, p)), p);
        }
    }

    #[test]
    fn padded_and_duplicate_patterns_carry_every_special_slot() {
        let bs = 16;
        for tokens in [10, 17, 33] {
            let cache_slots = num_blocks(tokens, bs) * bs;
            let specials = [
                -1,
                cache_slots as i64,
                i64::from(i32::MIN),
                i64::from(i32::MAX),
                -(bs as i64),
                (cache_slots + bs) as i64,
            ];
            for pattern in [SlotPattern::Padded, SlotPattern::Duplicates] {
                let slots = slot_mapping(pattern, tokens, cache_slots, bs, tokens as u64, false);
                for s in specials {
                    assert!(slots.contains(&s), "{pattern:?} {tokens} tokens lacks {s}: {slots:?}");
                }
                assert!(!slots.iter().any(|s| WIDE_SPECIALS.contains(s)), "int32 slots hold int64 values");
                let wide = slot_mapping(pattern, tokens, cache_slots, bs, tokens as u64, true);
                for s in specials.into_iter().chain(WIDE_SPECIALS) {
                    assert!(wide.contains(&s), "{pattern:?} {tokens} wide tokens lacks {s}: {wide:?}");
                }
            }
        }
    }
}
