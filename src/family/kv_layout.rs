//! Family kv_layout: the KV-cache layout operations of the catalogue (research/op-semantics.md
//! §4). One kernel template and one op_host template branch on `[kv_layout] kind`:
//!
//! - `bsnd_to_bnsd`, `bnsd_to_bsnd`: x [B, P, Q, D] → y [B, Q, P, D] (permute(0, 2, 1, 3)
//!   made contiguous), copies of raw element bytes, bit-exact;
//! - `reshape_and_cache`: the paged-cache scatter (key/value [T, N, D] into caches
//!   [num_blocks, block_size, N, D] updated in place; negative slots skipped, slots past the
//!   cache never written and counted in an int32 output; the same slot twice: the later token
//!   wins, on every core count);
//! - `reshape_and_cache_int8`: the same, quantising each (token, head) row of D to int8 with
//!   scale = absmax/127 into float32 scale caches [num_blocks, block_size, N];
//! - `dequant_int8`: x = q·scale (one float32 scale per row of q's last dim) in the float dtype
//!   the string attr names.
//!
//! Verification makes its own inputs ([`case_inputs`]): slot mappings by pattern (prefill runs
//! across blocks, decode, padding and past-the-cache slots, duplicates), caches pre-filled so
//! that every slot the reference leaves alone is checked bit for bit (int8 caches hold −128 and
//! scale caches negative values, which no quantisation writes).

use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference::kv_layout::{self as reference, Int8KvCache};
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, FamilyParams, KvKind, OpSpec, Reporter};
use crate::tensor::HostTensor;
use crate::verify::compare::Tolerance;
use crate::verify::inputs::{derive_seed, generate, Distribution, Rng};
use crate::verify::{Case, Expected, Sweep};

// ---- spec --------------------------------------------------------------------------------

pub(crate) fn params(raw: &RawSpec) -> FamilyParams {
    let kind = raw
        .kv_layout
        .as_ref()
        .and_then(|t| KvKind::ALL.into_iter().find(|k| k.name() == t.get_ref().kind.get_ref()));
    FamilyParams::KvLayout { kind }
}

const FLOATS: &[DType] = &[DType::Float16, DType::BFloat16, DType::Float32];
const SLOTS: &[DType] = &[DType::Int32, DType::Int64];
const INT8: &[DType] = &[DType::Int8];
const INT32: &[DType] = &[DType::Int32];
const FLOAT32: &[DType] = &[DType::Float32];

/// What a tensor of a kind is: its role name (for messages), the dtypes it may have, whether it
/// must have another input's dtype, and whether the kernel writes it in place.
struct Role {
    name: &'static str,
    dtypes: &'static [DType],
    /// Index of the input whose dtype this tensor shares in every combination.
    same_as: Option<usize>,
    mutated: bool,
}

const fn role(name: &'static str, dtypes: &'static [DType]) -> Role {
    Role { name, dtypes, same_as: None, mutated: false }
}

const fn cache(name: &'static str, dtypes: &'static [DType], same_as: Option<usize>) -> Role {
    Role { name, dtypes, same_as, mutated: true }
}

const PERMUTE_IN: &[Role] = &[role("x", &DType::ALL)];
const PERMUTE_OUT: &[Role] = &[Role { name: "y", dtypes: &DType::ALL, same_as: Some(0), mutated: false }];
const CACHE_IN: &[Role] = &[
    role("key", &DType::ALL),
    role("value", &DType::ALL),
    cache("key_cache", &DType::ALL, Some(0)),
    cache("value_cache", &DType::ALL, Some(1)),
    role("slot_mapping", SLOTS),
];
const CACHE_OUT: &[Role] = &[role("out_of_range", INT32)];
const INT8_IN: &[Role] = &[
    role("key", FLOATS),
    role("value", FLOATS),
    cache("key_cache", INT8, None),
    cache("value_cache", INT8, None),
    cache("key_scale", FLOAT32, None),
    cache("value_scale", FLOAT32, None),
    role("slot_mapping", SLOTS),
];
const DEQUANT_IN: &[Role] = &[role("q", INT8), role("scale", FLOAT32)];
const DEQUANT_OUT: &[Role] = &[role("x", FLOATS)];

fn roles(kind: KvKind) -> (&'static [Role], &'static [Role]) {
    match kind {
        KvKind::BsndToBnsd | KvKind::BnsdToBsnd => (PERMUTE_IN, PERMUTE_OUT),
        KvKind::ReshapeAndCache => (CACHE_IN, CACHE_OUT),
        KvKind::ReshapeAndCacheInt8 => (INT8_IN, CACHE_OUT),
        KvKind::DequantInt8 => (DEQUANT_IN, DEQUANT_OUT),
    }
}

fn names(roles: &[Role]) -> String {
    format!("({})", roles.iter().map(|r| r.name).collect::<Vec<_>>().join(", "))
}

fn dtype_names(list: &[DType]) -> String {
    list.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

/// The kind of a validated kv_layout spec.
fn kind(spec: &OpSpec) -> KvKind {
    spec.kv_kind().expect("a validated kv_layout spec has a known kind")
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let Some(kind) = spec.kv_kind() else {
        let known: Vec<&str> = KvKind::ALL.iter().map(|k| k.name()).collect();
        match raw.kv_layout.as_ref() {
            Some(table) => {
                let k = &table.get_ref().kind;
                r.error(
                    k,
                    "kv_layout.kind",
                    format!("unknown kv_layout kind `{}`; known kinds: {}", k.get_ref(), known.join(", ")),
                );
            }
            None => r.error(
                &raw.family,
                "kv_layout",
                "family kv_layout needs a [kv_layout] table with `kind`".into(),
            ),
        }
        return;
    };
    let label = format!("family kv_layout ({})", kind.name());
    let (ins, outs) = roles(kind);
    if spec.inputs.len() != ins.len() {
        r.error(
            &raw.inputs,
            "inputs",
            format!("{label} takes {} inputs {}, found {}", ins.len(), names(ins), spec.inputs.len()),
        );
        return;
    }
    if spec.outputs.len() != outs.len() {
        r.error(
            &raw.outputs,
            "outputs",
            format!("{label} has {} output(s) {}, found {}", outs.len(), names(outs), spec.outputs.len()),
        );
        return;
    }
    for (i, (t, role)) in spec.inputs.iter().zip(ins).enumerate() {
        let raw_t = &raw.inputs.get_ref()[i];
        if t.mutated && !role.mutated {
            let span = raw_t.mutated.as_ref().expect("mutated was written");
            r.error(
                span,
                &format!("inputs[{i}].mutated"),
                format!("`{}` ({}) is only read by the kernel; drop `mutated`", t.name, role.name),
            );
        } else if !t.mutated && role.mutated {
            r.error(
                &raw_t.name,
                &format!("inputs[{i}].mutated"),
                format!("`{}` ({}) is updated in place: declare it with `mutated = true`", t.name, role.name),
            );
        }
    }
    let tensors: Vec<(&str, usize, &Role)> = ins
        .iter()
        .enumerate()
        .map(|(i, role)| ("inputs", i, role))
        .chain(outs.iter().enumerate().map(|(i, role)| ("outputs", i, role)))
        .collect();
    for c in 0..spec.columns() {
        for (field, i, role) in &tensors {
            let (t, raw_t) = if *field == "inputs" {
                (&spec.inputs[*i], &raw.inputs.get_ref()[*i])
            } else {
                (&spec.outputs[*i], &raw.outputs.get_ref()[*i])
            };
            let d = t.dtypes[c];
            let span = &raw_t.dtypes.get_ref()[c];
            let path = format!("{field}[{i}].dtypes[{c}]");
            if !role.dtypes.contains(&d) {
                r.error(
                    span,
                    &path,
                    format!(
                        "{label}: `{}` ({}) cannot be {d}; it takes {}",
                        t.name,
                        role.name,
                        dtype_names(role.dtypes)
                    ),
                );
            } else if let Some(other) = role.same_as {
                let want = spec.inputs[other].dtypes[c];
                if d != want {
                    r.error(
                        span,
                        &path,
                        format!(
                            "{label}: `{}` must have `{}`'s dtype {want} in combination {} (the copy moves raw bytes)",
                            t.name,
                            spec.inputs[other].name,
                            c + 1
                        ),
                    );
                }
            }
        }
    }
    check_attrs(r, raw, spec, kind, &label);
}

fn check_attrs(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec, kind: KvKind, label: &str) {
    if kind != KvKind::DequantInt8 {
        if let Some(a) = raw.attrs.first() {
            r.error(&a.name, "attrs", format!("{label} takes no attrs"));
        }
        return;
    }
    let message =
        format!("{label} takes exactly one attr: a string naming the output dtype ({})", dtype_names(FLOATS));
    match spec.attrs.as_slice() {
        [a] if a.kind == AttrKind::String => {
            if let Some(AttrValue::String(v)) = &a.default {
                let allowed: Vec<DType> = spec.outputs[0].dtypes.clone();
                let ok = DType::parse(v).is_some_and(|d| allowed.contains(&d) && d.name() == v);
                if !ok {
                    r.error(
                        raw.attrs[0].default.as_ref().expect("default present"),
                        "attrs[0].default",
                        format!(
                            "default `{v}` must be one of the output's dtypes: {}",
                            dtype_names(&allowed)
                        ),
                    );
                }
            }
        }
        _ => match raw.attrs.first() {
            Some(a) => r.error(&a.name, "attrs", message),
            None => r.error(&raw.name, "attrs", message),
        },
    }
}

// ---- plan and templates ------------------------------------------------------------------

/// The permutes: x [B, P, Q, D] → y [B, Q, P, D], tiles of tileP × tileQ rows of D.
const PERMUTE_FIELDS: &[TilingField] = &[
    TilingField::u32("batch", "B: dim 0 of x and y"),
    TilingField::u32("dimP", "P: dim 1 of x (S for bsnd_to_bnsd, N for bnsd_to_bsnd), dim 2 of y"),
    TilingField::u32("dimQ", "Q: dim 2 of x, dim 1 of y"),
    TilingField::u32("headDim", "D: elements of one row (the last dim)"),
    TilingField::u32(
        "layout",
        "0: UB rows p-major (x read in one transfer, y written as tileQ runs), 1: q-major with tileP = P (y written as one run)",
    ),
    TilingField::u32("tileP", "rows of a tile along P"),
    TilingField::u32("tileQ", "rows of a tile along Q"),
    TilingField::u32("tilesP", "ceil(P / tileP)"),
    TilingField::u32("tilesQ", "ceil(Q / tileQ)"),
    TilingField::u32("tileCount", "B * tilesP * tilesQ"),
    TilingField::u32("tilesPerCore", "tiles of every core: tileCount / blockDim"),
    TilingField::u32("extraTiles", "tileCount % blockDim: cores below this index take one tile more"),
    TilingField::u32("slotBytes", "UB bytes of one row: D * sizeof(T) rounded up to 32"),
];

/// reshape_and_cache: every core scans the slot mapping and copies the tokens whose slot group
/// it owns.
const CACHE_FIELDS: &[TilingField] = &[
    TilingField::u32("tokens", "T: rows of key, value and slot_mapping"),
    TilingField::u32("heads", "N: heads of key, value and the caches"),
    TilingField::u32("keyDim", "Dk: last dim of key and key_cache"),
    TilingField::u32("valueDim", "Dv: last dim of value and value_cache"),
    TilingField::u32("cacheSlots", "num_blocks * block_size: slots of each cache"),
    TilingField::u32("slotGroup", "slot s belongs to core (s / slotGroup) % blockDim"),
    TilingField::u32("slotChunk", "slot-mapping entries read into UB at a time"),
    TilingField::u32("chunkBytes", "bytes per UB copy of a run of key or value rows (a multiple of 32)"),
];

/// reshape_and_cache_int8: as reshape_and_cache, quantising rowsPerPass (token, head) rows per UB pass.
const INT8_FIELDS: &[TilingField] = &[
    TilingField::u32("tokens", "T: rows of key, value and slot_mapping"),
    TilingField::u32("heads", "N: heads of key, value and the caches"),
    TilingField::u32("keyDim", "Dk: last dim of key and key_cache"),
    TilingField::u32("valueDim", "Dv: last dim of value and value_cache"),
    TilingField::u32("cacheSlots", "num_blocks * block_size: slots of each cache"),
    TilingField::u32("slotGroup", "slot s belongs to core (s / slotGroup) % blockDim"),
    TilingField::u32("slotChunk", "slot-mapping entries read into UB at a time"),
    TilingField::u32("rowsPerPass", "(token, head) rows quantised per UB pass"),
    TilingField::u32("rowStride", "UB elements per row: max(Dk, Dv) rounded up to 32"),
    TilingField::u32("reduceTmpFloats", "floats of the ReduceMax work tensor"),
];

/// dequant_int8: rows of q over the cores.
const DEQUANT_FIELDS: &[TilingField] = &[
    TilingField::u32("rows", "rows of q: the product of its leading dims (= elements of scale)"),
    TilingField::u32("headDim", "D: last dim of q and x"),
    TilingField::u32("blockFactor", "rows per core (the last core may get fewer)"),
    TilingField::u32("rowsPerPass", "rows per UB pass"),
];

/// The tiling-data layout of the spec's kind.
pub fn tiling_fields(spec: &OpSpec) -> &'static [TilingField] {
    match spec.kv_kind() {
        Some(KvKind::BsndToBnsd | KvKind::BnsdToBsnd) | None => PERMUTE_FIELDS,
        Some(KvKind::ReshapeAndCache) => CACHE_FIELDS,
        Some(KvKind::ReshapeAndCacheInt8) => INT8_FIELDS,
        Some(KvKind::DequantInt8) => DEQUANT_FIELDS,
    }
}

pub fn template_extras(spec: &OpSpec) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let kind = spec.kv_kind().map(|k| k.name()).unwrap_or("");
    m.insert("kind".into(), serde_json::Value::String(kind.to_string()));
    m
}

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
}

impl SlotPattern {
    const ALL: [SlotPattern; 4] =
        [SlotPattern::Prefill, SlotPattern::Decode, SlotPattern::Padded, SlotPattern::Duplicates];

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

const KV_HEADS: [usize; 3] = [2, 4, 8];
const Q_HEADS: [usize; 4] = [14, 28, 32, 64];
const HEAD_DIMS: [usize; 6] = [64, 72, 80, 96, 128, 256];
const TOKENS: [usize; 5] = [1, 3, 17, 128, 4096];
const BLOCK_SIZES: [usize; 2] = [16, 128];
/// Full-sweep tensors stay at or below this many elements (the twin runs under ASan).
const MAX_FULL_ELEMENTS: usize = 1 << 23;

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
    ];
    if sweep == Sweep::Full {
        let mut i = 0;
        for tokens in TOKENS {
            for heads in KV_HEADS {
                for dim in HEAD_DIMS {
                    for block_size in BLOCK_SIZES {
                        if tokens * heads * dim > MAX_FULL_ELEMENTS {
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

/// (B, S, N, D) of the permutes.
fn permute_shapes(sweep: Sweep) -> Vec<[usize; 4]> {
    let mut out = vec![
        [1, 1, 1, 64],
        [2, 3, 2, 72],
        [1, 17, 14, 64],
        [2, 17, 8, 80],
        [1, 128, 4, 96],
        [1, 33, 2, 256],
        [1, 300, 28, 128],
        [3, 5, 64, 72],
        [1, 100, 100, 256],
        [2, 5, 3, 7],
    ];
    if sweep == Sweep::Full {
        for s in TOKENS {
            for n in KV_HEADS.into_iter().chain(Q_HEADS) {
                for d in HEAD_DIMS {
                    let b = if s <= 17 { 2 } else { 1 };
                    if b * s * n * d <= MAX_FULL_ELEMENTS {
                        out.push([b, s, n, d]);
                    }
                }
            }
        }
    }
    out
}

/// q shapes of dequant_int8 (scale covers the leading dims).
fn dequant_shapes(sweep: Sweep) -> Vec<Vec<usize>> {
    let mut out = vec![
        vec![1, 2, 64],
        vec![3, 2, 72],
        vec![17, 4, 80],
        vec![128, 8, 128],
        vec![5, 14, 256],
        vec![2, 3, 4, 96],
        vec![7],
    ];
    if sweep == Sweep::Full {
        for t in TOKENS {
            for n in KV_HEADS.into_iter().chain(Q_HEADS) {
                for d in HEAD_DIMS {
                    if t * n * d <= MAX_FULL_ELEMENTS {
                        out.push(vec![t, n, d]);
                    }
                }
            }
        }
    }
    out
}

fn other_dists(sweep: Sweep, nan_inf: bool) -> Vec<Distribution> {
    let mut d = vec![Distribution::NormalLargeMean, Distribution::Tiny, Distribution::Zeros];
    if sweep == Sweep::Full {
        d.push(Distribution::Outlier);
    }
    if nan_inf {
        d.push(Distribution::NanInf);
    }
    d
}

fn permute_x_shape(kind: KvKind, [b, s, n, d]: [usize; 4]) -> Vec<usize> {
    match kind {
        KvKind::BsndToBnsd => vec![b, s, n, d],
        _ => vec![b, n, s, d],
    }
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
    let attrs = super::default_attrs(spec);
    let mut out = Vec::new();
    match kind {
        KvKind::BsndToBnsd | KvKind::BnsdToBsnd => {
            let x = spec.inputs[0].name.clone();
            let shapes = permute_shapes(sweep);
            for (i, s) in shapes.iter().enumerate() {
                out.push(Case {
                    shapes: vec![(x.clone(), permute_x_shape(kind, *s))],
                    dist: Distribution::Uniform5,
                    seed: 1000 + i as u64,
                    attrs: attrs.clone(),
                });
            }
            for (i, dist) in other_dists(sweep, true).into_iter().enumerate() {
                out.push(Case {
                    shapes: vec![(x.clone(), permute_x_shape(kind, [2, 17, 8, 72]))],
                    dist,
                    seed: 2000 + i as u64,
                    attrs: attrs.clone(),
                });
            }
            // More tiles than cores, not a multiple of them, in every dtype (x [1, 1000, 100, 16]:
            // 50 tiles for 1-2-byte dtypes, 75 with a short last tile along P for float32), so
            // the cores that take one tile more and the tail tile are exercised; no other
            // quick shape has tileCount > 48.
            out.push(Case {
                shapes: vec![(x.clone(), vec![1, 1000, 100, 16])],
                dist: Distribution::Uniform5,
                seed: 2100,
                attrs: attrs.clone(),
            });
        }
        KvKind::ReshapeAndCache | KvKind::ReshapeAndCacheInt8 => {
            let shapes = cache_shapes(sweep);
            for (i, c) in shapes.iter().enumerate() {
                out.push(cache_case(spec, c, Distribution::Uniform5, cache_seed(i, c.pattern)));
            }
            // Rows with NaN/Inf are not a quantisation contract (op-semantics §7.8).
            let nan_inf = kind == KvKind::ReshapeAndCache;
            let base = shapes.len();
            for (j, dist) in other_dists(sweep, nan_inf).into_iter().enumerate() {
                let c = shapes[2 + j % 3];
                out.push(cache_case(spec, &c, dist, cache_seed(base + j, c.pattern)));
            }
            // A row's absmax at its last element (RowEnds) and one-hot rows, with padding.
            let base = base + other_dists(sweep, nan_inf).len();
            for (j, dist) in Distribution::AIMED.into_iter().enumerate() {
                let c = shapes[1 + 4 * j];
                out.push(cache_case(spec, &c, dist, cache_seed(base + j, SlotPattern::Padded)));
            }
        }
        KvKind::DequantInt8 => {
            let names: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
            let make = |q: &[usize], dist, seed| Case {
                shapes: vec![(names[0].clone(), q.to_vec()), (names[1].clone(), q[..q.len() - 1].to_vec())],
                dist,
                seed,
                attrs: attrs.clone(),
            };
            let shapes = dequant_shapes(sweep);
            for (i, q) in shapes.iter().enumerate() {
                out.push(make(q, Distribution::Uniform5, 3000 + i as u64));
            }
            for (i, dist) in other_dists(sweep, true).into_iter().enumerate() {
                out.push(make(&shapes[2], dist, 4000 + i as u64));
            }
        }
    }
    out
}

/// The shapes of the other inputs from the first one's (`opgen run` / `opgen plan` with one
/// shape): caches of block size 16 with four spare blocks, one slot per token, scales over the
/// leading dims of q.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    match spec.kv_kind() {
        Some(KvKind::ReshapeAndCache | KvKind::ReshapeAndCacheInt8) => {
            let (t, n, d) = match first {
                [t, n, d] => (*t, *n, *d),
                _ => return first.to_vec(),
            };
            let nb = num_blocks(t, 16);
            let last = spec.inputs.len() - 1;
            match i {
                1 => vec![t, n, d],
                2 | 3 => vec![nb, 16, n, d],
                _ if i == last => vec![t],
                _ => vec![nb, 16, n],
            }
        }
        Some(KvKind::DequantInt8) if i == 1 => first[..first.len().saturating_sub(1)].to_vec(),
        _ => first.to_vec(),
    }
}

// ---- verification: inputs ------------------------------------------------------------------

/// A tensor of `dtype`: floats drawn from `dist` (one rounding), integers uniform over their
/// whole range (random bits), so a copy of int8 data is checked on every bit pattern.
fn data(dist: Distribution, dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    if dtype.is_float() {
        return generate(dist, dtype, shape, seed);
    }
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    let bits: Vec<u64> =
        (0..n).map(|_| if dist == Distribution::Zeros { 0 } else { rng.next_u64() }).collect();
    HostTensor::from_bits(dtype, shape, &bits)
}

/// `tokens` slots into a cache of `cache_slots` slots in blocks of `block_size`, by `pattern`.
/// Negative entries are padding; entries ≥ `cache_slots` are past the cache.
pub fn slot_mapping(
    pattern: SlotPattern,
    tokens: usize,
    cache_slots: usize,
    block_size: usize,
    seed: u64,
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
    };
    if matches!(pattern, SlotPattern::Decode) {
        // distinct_indices sorts; decode batches are in request order.
        for k in (1..slots.len()).rev() {
            slots.swap(k, rng.below(k as u64 + 1) as usize);
        }
    }
    if matches!(pattern, SlotPattern::Padded | SlotPattern::Duplicates) && tokens > 0 {
        let specials: [i64; 6] = [
            -1,
            cache_slots as i64,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            -(block_size as i64),
            cache_slots as i64 + block_size as i64,
        ];
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

/// The inputs (and attrs) of a case in dtype combination `column`, made by the family:
/// the slot mapping by the case's [`SlotPattern`], caches pre-filled with values no write of
/// the case produces, one all-zero row per int8 tensor, int8 data over its whole range, and the
/// output dtype attr of dequant_int8 set to the combination's.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> super::CaseData {
    let kind = kind(spec);
    let dtype = |name: &str| {
        spec.inputs.iter().find(|t| t.name == name).map(|t| t.dtypes[column]).unwrap_or(DType::Float32)
    };
    let seed = |name: &str| derive_seed(case.seed, name);
    let mut attrs = case.attrs.clone();
    let mut inputs: Vec<(String, HostTensor)> = Vec::new();
    match kind {
        KvKind::BsndToBnsd | KvKind::BnsdToBsnd => {
            for (name, shape) in &case.shapes {
                inputs.push((name.clone(), data(case.dist, dtype(name), shape, seed(name))));
            }
        }
        KvKind::ReshapeAndCache | KvKind::ReshapeAndCacheInt8 => {
            let int8 = kind == KvKind::ReshapeAndCacheInt8;
            let cache_shape = &case.shapes[2].1;
            let (cache_slots, block_size) = (cache_shape[0] * cache_shape[1], cache_shape[1]);
            let last = case.shapes.len() - 1;
            for (i, (name, shape)) in case.shapes.iter().enumerate() {
                let d = dtype(name);
                let t = match i {
                    0 | 1 => {
                        let mut t = data(case.dist, d, shape, seed(name));
                        if int8 {
                            zero_one_row(&mut t, i);
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
                    _ => data(Distribution::Uniform5, d, shape, seed(name)),
                };
                inputs.push((name.clone(), t));
            }
        }
        KvKind::DequantInt8 => {
            let (q_name, q_shape) = &case.shapes[0];
            let (s_name, s_shape) = &case.shapes[1];
            let n: usize = q_shape.iter().product();
            let mut rng = Rng::new(seed(q_name));
            let q: Vec<i64> = (0..n)
                .map(|_| if case.dist == Distribution::Zeros { 0 } else { rng.below(255) as i64 - 127 })
                .collect();
            inputs.push((q_name.clone(), HostTensor::from_i64(DType::Int8, q_shape, &q)));
            // Scales: magnitudes of the case's distribution (absmax / 127 ≥ 0), sign kept for NaN/Inf.
            let mut s = generate(case.dist, DType::Float32, s_shape, seed(s_name));
            let v: Vec<f64> =
                s.to_f64().into_iter().map(|x| if x.is_nan() { x } else { x.abs() / 127.0 }).collect();
            s = HostTensor::from_f64(DType::Float32, s_shape, &v);
            inputs.push((s_name.clone(), s));
            if let Some(a) = spec.attrs.first() {
                let want = AttrValue::String(spec.outputs[0].dtypes[column].name().to_string());
                attrs.retain(|(n, _)| n != &a.name);
                attrs.push((a.name.clone(), want));
            }
        }
    }
    (inputs, attrs)
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

// ---- verification: references ---------------------------------------------------------------

fn reference_error(e: crate::reference::ReferenceError) -> String {
    e.to_string()
}

fn input<'a>(inputs: &'a [(String, HostTensor)], spec: &OpSpec, i: usize) -> Result<&'a HostTensor, String> {
    let name = &spec.inputs[i].name;
    inputs.iter().find(|(n, _)| n == name).map(|(_, t)| t).ok_or_else(|| format!("input `{name}` missing"))
}

fn exact(name: &str, t: &HostTensor, tolerance: Tolerance) -> Expected {
    Expected { name: name.to_string(), dtype: t.dtype, shape: t.shape.clone(), values: t.to_f64(), tolerance }
}

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

/// Checked by kind against src/reference/kv_layout.rs. In-place caches are expected outputs
/// too, compared over their whole extent: bitwise for copies; for the quantised cache the int8
/// values RNE of the unrounded quotient except near .5 ties, and the scales (absmax/127, one
/// float32 division) exactly (the untouched slots are held bitwise by `verify`).
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, String> {
    let name = |i: usize| spec.inputs[i].name.as_str();
    match kind(spec) {
        k @ (KvKind::BsndToBnsd | KvKind::BnsdToBsnd) => {
            let x = input(inputs, spec, 0)?;
            let y =
                if k == KvKind::BsndToBnsd { reference::bsnd_to_bnsd(x) } else { reference::bnsd_to_bsnd(x) }
                    .map_err(reference_error)?;
            Ok(vec![exact(&spec.outputs[0].name, &y, Tolerance::Bitwise)])
        }
        KvKind::ReshapeAndCache => {
            let (key, value, slots) =
                (input(inputs, spec, 0)?, input(inputs, spec, 1)?, input(inputs, spec, 4)?);
            let mut kc = input(inputs, spec, 2)?.clone();
            let mut vc = input(inputs, spec, 3)?.clone();
            let block_size = kc.shape.get(1).copied().unwrap_or(0);
            let past = reference::reshape_and_cache(key, value, &mut kc, &mut vc, slots, block_size)
                .map_err(reference_error)?;
            Ok(vec![
                count(spec, past),
                exact(name(2), &kc, Tolerance::Bitwise),
                exact(name(3), &vc, Tolerance::Bitwise),
            ])
        }
        KvKind::ReshapeAndCacheInt8 => {
            let (key, value, slots) =
                (input(inputs, spec, 0)?, input(inputs, spec, 1)?, input(inputs, spec, 6)?);
            let mut kc = input(inputs, spec, 2)?.clone();
            let mut vc = input(inputs, spec, 3)?.clone();
            let block_size = kc.shape.get(1).copied().unwrap_or(0);
            let (kq, vq) =
                reference::reshape_and_cache_int8_quotients(key, value, &kc, &vc, slots, block_size)
                    .map_err(reference_error)?;
            let mut ks = input(inputs, spec, 4)?.clone();
            let mut vs = input(inputs, spec, 5)?.clone();
            let cache =
                Int8KvCache { key: &mut kc, value: &mut vc, key_scale: &mut ks, value_scale: &mut vs };
            let past = reference::reshape_and_cache_int8(key, value, cache, slots, block_size)
                .map_err(reference_error)?;
            Ok(vec![
                count(spec, past),
                quotients(name(2), &kc, &kq, INT8_TIE_WINDOW),
                quotients(name(3), &vc, &vq, INT8_TIE_WINDOW),
                exact(name(4), &ks, Tolerance::Rne { tie_window: 0 }),
                exact(name(5), &vs, Tolerance::Rne { tie_window: 0 }),
            ])
        }
        KvKind::DequantInt8 => {
            let (q, scale) = (input(inputs, spec, 0)?, input(inputs, spec, 1)?);
            let values = reference::dequant_int8(q, scale).map_err(reference_error)?;
            let attr = spec.attrs.first().ok_or("dequant_int8 has no output-dtype attr")?;
            let dtype =
                match attrs.iter().find(|(n, _)| n == &attr.name).map(|(_, v)| v).or(attr.default.as_ref()) {
                    Some(AttrValue::String(s)) => DType::parse(s)
                        .ok_or_else(|| format!("attr `{}` = `{s}` is not a dtype", attr.name))?,
                    _ => return Err(format!("attr `{}` (the output dtype) is missing", attr.name)),
                };
            let tolerance = match dtype {
                // q·scale (8 × 24 significant bits) rounds once to float32, within ½ float32
                // ulp (≤ 1 unit) of the exact product: a 16-bit window of 2; float32 output is
                // that one rounding, exactly RNE.
                DType::Float16 | DType::BFloat16 => Tolerance::Rne { tie_window: 2 },
                _ => Tolerance::Rne { tie_window: 0 },
            };
            Ok(vec![Expected {
                name: spec.outputs[0].name.clone(),
                dtype,
                shape: q.shape.clone(),
                values,
                tolerance,
            }])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_patterns_have_their_properties() {
        let (tokens, bs) = (200, 16);
        let cache_slots = num_blocks(tokens, bs) * bs;
        let prefill = slot_mapping(SlotPattern::Prefill, tokens, cache_slots, bs, 1);
        assert_eq!(prefill.len(), tokens);
        assert!(prefill.iter().all(|s| (0..cache_slots as i64).contains(s)));
        let mut sorted = prefill.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), tokens, "prefill slots are distinct");
        // Runs of consecutive slots (within blocks) dominate.
        let runs = prefill.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(runs > tokens / 2, "{runs}");

        let decode = slot_mapping(SlotPattern::Decode, tokens, cache_slots, bs, 2);
        let mut sorted = decode.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), tokens);

        let padded = slot_mapping(SlotPattern::Padded, tokens, cache_slots, bs, 3);
        assert!(padded.iter().any(|s| *s < 0));
        assert!(padded.iter().any(|s| *s >= cache_slots as i64));

        let dup = slot_mapping(SlotPattern::Duplicates, tokens, cache_slots, bs, 4);
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
        for tokens in [6, 17, 33] {
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
                let slots = slot_mapping(pattern, tokens, cache_slots, bs, tokens as u64);
                for s in specials {
                    assert!(slots.contains(&s), "{pattern:?} {tokens} tokens lacks {s}: {slots:?}");
                }
            }
        }
    }
}
