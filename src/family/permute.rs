//! Family permute: bsnd_to_bnsd and bnsd_to_bsnd, x [B, P, Q, D] → y [B, Q, P, D]
//! (permute(0, 2, 1, 3) made contiguous), copies of raw element bytes, bit-exact
//! (research/op-semantics.md §4). `[permute] kind` names the direction.

use super::eager::{self, Builder};
use super::layout::{self, kind, Role};
use super::{Case, Expected, Sweep};
use super::{CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, Templates};
use super::{OutputShape, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::{derive_seed, Distribution};
use crate::plan::TilingField;
use crate::reference::kv_layout as reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrValue, FamilyParams, KvKind, OpSpec, Reporter};
use crate::spec::{BackwardRule, SpecTables};
use crate::tensor::HostTensor;

// ---- spec --------------------------------------------------------------------------------

const KINDS: [KvKind; 2] = [KvKind::BsndToBnsd, KvKind::BnsdToBsnd];
const PERMUTE_IN: &[Role] = &[layout::role("x", &DType::ALL)];
const PERMUTE_OUT: &[Role] = &[Role { name: "y", dtypes: &DType::ALL, same_as: Some(0), mutated: false }];

pub(crate) fn params(raw: &RawSpec) -> FamilyParams {
    FamilyParams::Layout { kind: layout::kind_of_table(raw.permute.as_ref(), &KINDS) }
}

pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let Some(kind) = layout::check_kind(r, raw, spec, "permute", raw.permute.as_ref(), &KINDS) else {
        return;
    };
    let label = format!("family permute ({})", kind.name());
    layout::check_roles(r, raw, spec, &label, (PERMUTE_IN, PERMUTE_OUT));
    layout::check_no_attrs(r, raw, &label);
}

// ---- plan --------------------------------------------------------------------------------

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

// ---- verification ------------------------------------------------------------------------

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
        for s in layout::TOKENS {
            for n in layout::KV_HEADS.into_iter().chain(layout::Q_HEADS) {
                for d in layout::HEAD_DIMS {
                    let b = if s <= 17 { 2 } else { 1 };
                    if b * s * n * d <= layout::MAX_FULL_ELEMENTS {
                        out.push([b, s, n, d]);
                    }
                }
            }
        }
    }
    out
}

fn permute_x_shape(kind: KvKind, [b, s, n, d]: [usize; 4]) -> Vec<usize> {
    match kind {
        KvKind::BsndToBnsd => vec![b, s, n, d],
        _ => vec![b, n, s, d],
    }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let kind = kind(spec);
    let attrs = super::default_attrs(spec);
    let mut out = Vec::new();
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
    for (i, dist) in layout::other_dists(sweep, true).into_iter().enumerate() {
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
    // The coverage rule (src/verify/coverage.rs): 97 tiles, so one core takes three (each UB
    // buffer reused twice) and the others two, in each layout: q-major (y runs of P = 2 rows
    // shorter than 16 KiB) and p-major (a y run of P = 1024 rows of 16 is 16 KiB even in int8).
    for (i, shape) in [[97, 2, 3, 16], [97, 1024, 1, 16]].into_iter().enumerate() {
        out.push(Case {
            shapes: vec![(x.clone(), shape.to_vec())],
            dist: Distribution::Uniform5,
            seed: 2200 + i as u64,
            attrs: attrs.clone(),
        });
    }
    out
}

pub fn derived_shape(_spec: &OpSpec, _i: usize, first: &[usize]) -> Vec<usize> {
    first.to_vec()
}

/// The inputs of a case: floats from the case's distribution, int8 data over its whole range
/// (random bits), so a copy is checked on every bit pattern.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> CaseData {
    let dtype = |name: &str| {
        spec.inputs.iter().find(|t| t.name == name).map(|t| t.dtypes[column]).unwrap_or(DType::Float32)
    };
    let inputs = case
        .shapes
        .iter()
        .map(|(name, shape)| {
            (name.clone(), layout::data(case.dist, dtype(name), shape, derive_seed(case.seed, name)))
        })
        .collect();
    (inputs, case.attrs.clone())
}

/// Checked against src/reference/kv_layout.rs, bit for bit.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    _attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let x = layout::input(inputs, spec, 0)?;
    let y = if kind(spec) == KvKind::BsndToBnsd {
        reference::bsnd_to_bnsd(x)
    } else {
        reference::bnsd_to_bsnd(x)
    }?;
    Ok(vec![layout::exact(&spec.outputs[0].name, &y, Tolerance::Bitwise)])
}

// ---- the family --------------------------------------------------------------------------

pub struct Permute;

impl FamilyOps for Permute {
    fn backward_rule(&self) -> BackwardRule {
        BackwardRule::Declared
    }

    fn spec_tables(&self) -> SpecTables {
        SpecTables { accepts: &["permute"], requires: None }
    }

    fn params(&self, raw: &RawSpec) -> FamilyParams {
        params(raw)
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        check(r, raw, spec)
    }

    fn tiling_fields(&self, _spec: &OpSpec) -> &'static [TilingField] {
        PERMUTE_FIELDS
    }

    fn templates(&self, _spec: &OpSpec) -> Templates {
        Templates {
            kernel: "kernel/permute.cpp.j2",
            host: "host/permute.cpp.j2",
            checks: Some("host/permute_checks.j2"),
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

    fn tiling_value_label(&self, _spec: &OpSpec, field: &str, value: u64) -> Option<&'static str> {
        match (field, value) {
            ("layout", 0) => Some("p-major"),
            ("layout", 1) => Some("q-major, tileP = P"),
            _ => None,
        }
    }

    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let extra = f("extraTiles") > 0.0;
        PlanCoverage {
            mode: if f("layout") == 0.0 { "p-major" } else { "q-major" },
            passes: Some(f("tilesPerCore") as u64 + u64::from(extra)),
            uneven: Some(extra),
        }
    }

    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        vec!["p-major", "q-major"]
    }

    /// The permutes swap dims 1 and 2 of a 4-D x.
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        let first = spec.inputs.first().ok_or("permute needs an input")?.name.clone();
        Ok(ShapeRule {
            checks: Vec::new(),
            outputs: vec![OutputShape::SwapDims { of: first, rank: 4, a: 1, b: 2 }],
        })
    }

    /// Qwen2-7B's KV heads (4 of D 128) at 4096 tokens.
    fn model_shapes(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        match kind(spec) {
            KvKind::BsndToBnsd => vec![("Qwen2-7B kv", vec![1, 4096, 4, 128])],
            _ => vec![("Qwen2-7B kv", vec![1, 4, 4096, 128])],
        }
    }

    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        let (x, _) = eager::input(case, 0)?;
        b.op("x.transpose(1, 2).contiguous()", &[x], x);
        Ok(b.finish("x.transpose(1, 2).contiguous() (one copy kernel)"))
    }
}
