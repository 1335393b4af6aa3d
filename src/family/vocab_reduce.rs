//! Family vocab_reduce: reductions over a long last axis (the vocabulary), one op today,
//! logprob_entropy (issue 28): logits [..., V] and target [...] (int32 or int64) to logprob, entropy and
//! lse, float32, one value per row, of z = logits / temperature.
//!
//! Kernel (templates/kernel/vocab_reduce.cpp.j2): rows over the cores; each row streams through
//! UB in tiles of `tileLen` elements of V (one read of the logits), each tile reduced to its max
//! m, s = Σ e^{z−m} and u = Σ e^{z−m}·(z−m) with pairwise vector sums, the tiles combined per
//! row as S = Σ_t e^{m_t−M} s_t, U = Σ_t e^{m_t−M}(u_t + (m_t−M) s_t); then
//! lse = M + ln S, logprob = (z_t − M) − ln S, entropy = ln S − U/S (both terms ≥ 0: U ≤ 0).
//! With fewer rows than cores (mode `v-split`) the same tiles go over the cores instead, their
//! partials through the workspace to the row's core, which combines them as above (the same bits).
//! The backward (vocab_reduce_grad.rs) has the same modes; its V split needs no combine.
//!
//! Gates (derived in `gates`): absolute error of logprob and lse against
//! u·(12·A + 8·log2 V + 32) and entropy's error against u·(8·A + 4·log2 V + 32) relative plus
//! u·(4·log2 V + 32) absolute, u = 2^-24, A the case's largest finite |z|.

use super::attr_i64;
use super::eager::{self, Builder};
use super::inputs::{derive_seed, generate, Distribution, Rng};
use super::layout::input;
use super::vocab_reduce_grad as grad;
use super::{
    CannBuiltin, CaseData, EagerCase, EagerSequence, FamilyError, FamilyOps, PlanCoverage, PlanReading,
    Templates,
};
use super::{Case, Expected, Sweep};
use super::{OutputShape, ShapeRule};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::plan::TilingField;
use crate::reference::vocab_reduce as reference;
use crate::spec::raw::RawSpec;
use crate::spec::{AttrKind, AttrValue, OpSpec, Reporter};
use crate::tensor::HostTensor;

// ---- spec --------------------------------------------------------------------------------

const INPUTS: [&str; 2] = ["logits", "target"];
const OUTPUTS: [&str; 3] = ["logprob", "entropy", "lse"];
const ATTRS: [(&str, AttrKind); 2] = [("temperature", AttrKind::Float), ("ignore_index", AttrKind::Int)];

/// Inputs logits (a float dtype) and target (int32 or int64), outputs logprob, entropy, lse (float32),
/// attrs temperature (float) and ignore_index (int), by name and in this order.
pub(crate) fn check(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
    let label = "family vocab_reduce (logprob_entropy)";
    let names = |ts: &[crate::spec::TensorArg]| ts.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    if names(&spec.inputs) != INPUTS {
        r.error(&raw.inputs, "inputs", format!("{label} takes inputs (logits, target) in that order"));
        return;
    }
    if names(&spec.outputs) != OUTPUTS {
        r.error(
            &raw.outputs,
            "outputs",
            format!("{label} has outputs (logprob, entropy, lse) in that order"),
        );
        return;
    }
    check_logits_target_attrs(r, raw, spec, label);
    super::check_float32(r, raw.outputs.get_ref(), &spec.outputs, "outputs", 0, label, "");
}

/// What the forward and the backward share: logits a float dtype, target int32 or int64, the
/// attrs temperature (float) and ignore_index (int) in that order.
pub(crate) fn check_logits_target_attrs(r: &mut Reporter, raw: &RawSpec, spec: &OpSpec, label: &str) {
    for (c, x) in spec.inputs[0].dtypes.iter().enumerate() {
        if !super::FLOATS.contains(x) {
            r.error(
                &raw.inputs.get_ref()[0].dtypes.get_ref()[c],
                &format!("inputs[0].dtypes[{c}]"),
                format!("{label} cannot compute {x}; logits is float16, bfloat16 or float32"),
            );
        }
        if !matches!(spec.inputs[1].dtypes[c], DType::Int32 | DType::Int64) {
            r.error(
                &raw.inputs.get_ref()[1].dtypes.get_ref()[c],
                &format!("inputs[1].dtypes[{c}]"),
                format!("{label}: target is int32 or int64 (found {})", spec.inputs[1].dtypes[c]),
            );
        }
    }
    let attrs: Vec<(&str, AttrKind)> = spec.attrs.iter().map(|a| (a.name.as_str(), a.kind)).collect();
    if attrs != ATTRS {
        let at = raw.attrs.first().map_or(&raw.name, |a| &a.name);
        r.error(
            at,
            "attrs",
            format!("{label} takes attrs temperature (float) and ignore_index (int), in that order"),
        );
    }
}

// ---- plan --------------------------------------------------------------------------------

/// The tiling fields of both ops (the same struct), with tileLen's doc: how the op picks it.
const fn fields(tile_len: &'static str) -> [TilingField; 9] {
    [
        TilingField::u32("rows", "rows: the product of logits' leading dims (= elements of target)"),
        TilingField::u32("vocab", "V: logits' last dim"),
        TilingField::u32("blockFactor", "rows per core (the last busy core may get fewer)"),
        TilingField::u32("rowsPerGroup", "rows whose results are finished and written together"),
        TilingField::u32("tileLen", tile_len),
        TilingField::u32("tilesPerRow", "UB passes per row: ceil(V / tileLen)"),
        TilingField::u32(
            "splitCores",
            "the V split: cores the [rows, tilesPerRow] tiles go over (the first rows·tilesPerRow mod splitCores one more); 0: rows over cores",
        ),
        TilingField::f32("invTemperature", "1 / temperature, rounded to float32: z = logits * invTemperature"),
        TilingField::u32("ignoreIndex", "the ignore_index attr as an int32 bit pattern"),
    ]
}

const FIELDS: &[TilingField] =
    &fields("elements of V per UB pass (2^k, or 3·2^k in the forward; a row's last tile may be shorter)");
const GRAD_FIELDS: &[TilingField] = &fields(
    "elements of V per UB pass: V split evenly into the fewest tiles the UB holds, each a multiple of 512 bytes (a row's last tile may be shorter)",
);

// ---- verification ------------------------------------------------------------------------

/// (rows, V) of the quick sweep: every mode with ≥ 3 passes on a core and a remainder core
/// (48 cores: 145 rows give 4 rows on 36 cores and 1 on the last; 97 rows of 20011 give 3 rows
/// of 3 float32 tiles or 2 16-bit ones; the V split's 31 rows of 40009 put the 124 16-bit tiles
/// on 48 cores in runs of 3 or 2, the 155 float32 ones in runs of 4 or 3, across row ends), odd
/// and prime V, one and two tiles, the model vocabularies.
const QUICK: [(usize, usize); 9] =
    [(1, 1), (3, 7), (5, 64), (145, 1000), (9, 8192), (97, 20011), (31, 40009), (2, 151936), (1, 262144)];
/// Added in the full sweep: model vocabularies at modest N, small V with many rows.
const FULL: [(usize, usize); 7] =
    [(7, 151936), (5, 152064), (3, 262144), (300, 4096), (1000, 777), (50, 32000), (4096, 17)];

fn case(
    spec: &OpSpec,
    rows: usize,
    v: usize,
    dist: Distribution,
    seed: u64,
    temperature: Option<f64>,
) -> Case {
    let mut attrs = super::default_attrs(spec);
    if let Some(t) = temperature {
        attrs.retain(|(n, _)| n != "temperature");
        attrs.push(("temperature".into(), AttrValue::Float(t)));
    }
    Case {
        shapes: vec![(INPUTS[0].into(), vec![rows, v]), (INPUTS[1].into(), vec![rows])],
        dist,
        seed,
        attrs,
    }
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let mut out = Vec::new();
    let mut shapes = QUICK.to_vec();
    if sweep == Sweep::Full {
        shapes.extend(FULL);
    }
    for (i, &(n, v)) in shapes.iter().enumerate() {
        out.push(case(spec, n, v, Distribution::Uniform5, 5000 + i as u64, None));
    }
    // Hostile rows (see `case_inputs`: Outlier means the row patterns), NaN/Inf, a large mean.
    // 50 rows (more than the cores): the rows-over-cores path's target reads see row 7's int64
    // target past 2^32 at every dtype (fewer rows of V > 8192 take the V split in float32).
    out.push(case(spec, 50, 9001, Distribution::Outlier, 5100, None));
    // The hostile rows over several tiles at every dtype (16-bit tiles are 12288): the masked
    // last quarter leaves the last tile only -inf, and the masked rows' -inf every 7th entry
    // sends each of their tiles through the clamped redo (the kernel's RedoMasked), 3 or more
    // a core in both modes: 31 rows take the V split (runs of 2-3 16-bit tiles, 3-4 float32
    // ones), 50 rows the rows over cores (2 a core, a masked row's 4 or 5 tiles on one core).
    out.push(case(spec, 31, 40009, Distribution::Outlier, 5105, None));
    out.push(case(spec, 50, 40009, Distribution::Outlier, 5106, None));
    out.push(case(spec, 16, 3001, Distribution::NanInf, 5101, None));
    out.push(case(spec, 8, 12289, Distribution::NormalLargeMean, 5102, None));
    out.push(case(spec, 8, 9000, Distribution::Uniform5, 5103, Some(1e-3)));
    out.push(case(spec, 8, 9000, Distribution::Outlier, 5104, Some(10.0)));
    if sweep == Sweep::Full {
        for (i, dist) in
            [Distribution::Outlier, Distribution::NanInf, Distribution::Tiny, Distribution::Zeros]
                .into_iter()
                .enumerate()
        {
            out.push(case(spec, 6, 151936, dist, 5200 + i as u64, None));
            out.push(case(spec, 200, 515, dist, 5300 + i as u64, Some(0.7)));
        }
    }
    out
}

/// target (and the backward's row tensors) cover logits' leading dims.
pub fn derived_shape(i: usize, first: &[usize]) -> Vec<usize> {
    if i >= 1 {
        first[..first.len().saturating_sub(1)].to_vec()
    } else {
        first.to_vec()
    }
}

/// The patterns of the hostile rows (`Distribution::Outlier`), by row index mod 6.
fn hostile_row(row: &mut [f64], r: usize, rng: &mut Rng) {
    let v = row.len();
    match r % 6 {
        // One huge logit: p ≈ 1 there, entropy ≈ 0.
        0 => row[rng.below(v as u64) as usize] = 60.0,
        // All equal: lse = z + ln V, entropy = ln V.
        1 => row.iter_mut().for_each(|x| *x = 1.5),
        // Masked vocabulary: the last quarter and every 7th entry −inf (one finite entry kept).
        2 => {
            for (i, x) in row.iter_mut().enumerate().skip(1) {
                if i >= v - v / 4 || i % 7 == 0 {
                    *x = f64::NEG_INFINITY;
                }
            }
        }
        // The max in the last element (the last tile's tail).
        3 => row[v - 1] = 30.0,
        _ => {}
    }
}

/// Logits from the case's distribution (Outlier: the hostile row patterns instead), targets
/// uniform in [0, V), with ignore_index on every 5th row and one target out of range in the
/// hostile cases (int64: 2^32 + 1, which a kernel reading 32 bits takes for 1).
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Result<CaseData, FamilyError> {
    let (logits, target) = logits_and_targets(spec, column, case)?;
    let (l_name, _) = &case.shapes[0];
    let (t_name, t_shape) = &case.shapes[1];
    let inputs = vec![
        (l_name.clone(), logits),
        (t_name.clone(), HostTensor::from_i64(spec.inputs[1].dtypes[column], t_shape, &target)),
    ];
    Ok((inputs, case.attrs.clone()))
}

/// The logits and targets of a case (see `case_inputs`), the backward's too.
pub(crate) fn logits_and_targets(
    spec: &OpSpec,
    column: usize,
    case: &Case,
) -> Result<(HostTensor, Vec<i64>), FamilyError> {
    let (l_name, l_shape) = &case.shapes[0];
    let (t_name, t_shape) = &case.shapes[1];
    let dtype = spec.inputs[0].dtypes[column];
    let v = *l_shape.last().ok_or("logits has rank 0")?;
    let rows: usize = t_shape.iter().product();
    let hostile = case.dist == Distribution::Outlier;
    let dist = if hostile { Distribution::Uniform5 } else { case.dist };
    let mut logits = generate(dist, dtype, l_shape, derive_seed(case.seed, l_name));
    let mut rng = Rng::new(derive_seed(case.seed, t_name));
    if hostile && v > 0 {
        let mut values = logits.to_f64();
        for (r, row) in values.chunks_mut(v).enumerate() {
            hostile_row(row, r, &mut rng);
        }
        logits = HostTensor::from_f64(dtype, l_shape, &values);
    }
    let ignore = attr_i64(&case.attrs, "ignore_index")?;
    let wide = spec.inputs[1].dtypes[column] == DType::Int64;
    let target: Vec<i64> = (0..rows)
        .map(|r| match r {
            _ if v == 0 => ignore,
            _ if hostile && r % 5 == 4 => ignore,
            // Out of range: past V, and for int64 past 2^32 (truncated to 32 bits it is 1).
            _ if hostile && r == 7 && wide => (1i64 << 32) + 1,
            _ if hostile && r == 7 => v as i64,
            // Masked rows aim at their one kept finite entry half the time.
            _ if hostile && r % 6 == 2 && r % 2 == 0 => 0,
            _ => rng.below(v as u64) as i64,
        })
        .collect();
    Ok((logits, target))
}

/// The bars of one case, from its largest finite |z| (`a`) and V. The kernel's float32 errors
/// (u = 2^-24, each rounding ≤ u relative; Exp and Ln within 2 ulp):
/// - z = logits·fl(1/T): 2u·|z|; lse moves by at most max |δz| (∂lse/∂z_v = p_v, Σ p = 1): 2u·A;
/// - y = z − m (tile max m): u·|y| ≤ 2u·A, which Exp turns into a relative error of the terms:
///   2u·A, plus Exp's 4u; the tiles' shift δ = m_t − M the same: 2u·A + 4u;
/// - S sums positive terms pairwise within a tile (log2 tileLen levels), by WholeReduceSum's tree
///   (6) and over ≤ 64 tiles (6): ≤ (log2 V + 13)·u relative, an absolute error of ln S, plus
///   Ln's 4u·|ln S| ≤ 4u·log V;
/// - lse = M + ln S and logprob = (z_t − M) − ln S: two more roundings, u·(|lse| + |z_t − M|).
///
/// Summed with |lse| ≤ A + ln V: ≤ u·(12·A + 8·log2 V + 32). Entropy H = ln S + |U|/S, both
/// terms ≥ 0: U's terms e^y·y carry the relative errors above plus u for the product, so
/// |ΔH| ≤ u·(8·A + 4·log2 V + 32)·H relative plus S's error in ln S, u·(4·log2 V + 32), absolute
/// (H ≈ 0 when one logit dominates). Per case: A over all its rows, so a row is held to its
/// case's worst scale. The abs bars go to the next power of two (`UlpOrAbs` takes 2^k).
pub fn gates(a: f64, vocab: usize) -> (Tolerance, Tolerance) {
    let u = 2f64.powi(-24);
    let lg = (vocab.max(2) as f64).log2();
    let log2_ceil = |x: f64| x.log2().ceil() as i32;
    // Derived bars only: no bulk bar (`Tolerance::ulp_or_abs_bulk`) from measured means yet.
    let lp =
        Tolerance::UlpOrAbs { max_ulp: 0, abs_log2: log2_ceil(u * (12.0 * a + 8.0 * lg + 32.0)), mean: None };
    // A relative error r is below r·2^24 float32 ulps of H (ulp(H) > 2^-24·|H|), plus one for
    // the distance being measured from RNE(H), not H.
    let rel_ulps = (u * (8.0 * a + 4.0 * lg + 32.0) * 2f64.powi(24)).ceil() as u32 + 1;
    let ent =
        Tolerance::UlpOrAbs { max_ulp: rel_ulps, abs_log2: log2_ceil(u * (4.0 * lg + 32.0)), mean: None };
    (lp, ent)
}

pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    let logits = input(inputs, spec, 0)?;
    let target = input(inputs, spec, 1)?;
    let v = *logits.shape.last().ok_or("logits has rank 0")?;
    let temperature = super::attr_f64(attrs, "temperature")?;
    let ignore = attr_i64(attrs, "ignore_index")?;
    let x = logits.to_f64();
    let r = reference::logprob_entropy(&x, v, &target.to_i64(), temperature, ignore)?;
    let a = x.iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max((x / temperature).abs()));
    let (lp_bar, ent_bar) = gates(a, v);
    let out = |name: &str, values: Vec<f64>, tolerance| Expected {
        name: name.into(),
        dtype: DType::Float32,
        shape: target.shape.clone(),
        values,
        tolerance,
    };
    Ok(vec![
        out(OUTPUTS[0], r.logprob, lp_bar),
        out(OUTPUTS[1], r.entropy, ent_bar),
        out(OUTPUTS[2], r.lse, lp_bar),
    ])
}

// ---- the family --------------------------------------------------------------------------

/// The V split's (tiles of all rows, cores they go over), from the TilingFunc's fields; `None`:
/// rows over cores.
fn split_tiles(tiling: &dyn Fn(&str) -> Option<f64>) -> Option<(u64, u64)> {
    let f = |n: &str| tiling(n).unwrap_or(0.0) as u64;
    let cores = f("splitCores");
    (cores > 0).then(|| (f("rows") * f("tilesPerRow"), cores))
}

/// The vocabulary of Qwen2, Qwen2.5 and Qwen3 (their configs' `vocab_size`).
const QWEN_VOCAB: usize = 151936;
/// The models whose logits the report's model shapes are.
const MODEL_LABEL: &str = "Qwen2.5-0.5B/Qwen2-7B/Qwen3-8B";

pub struct VocabReduce;

impl FamilyOps for VocabReduce {
    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        if grad::is_grad(spec) {
            grad::check(r, raw, spec)
        } else {
            check(r, raw, spec)
        }
    }

    /// The backward's kernel takes `logits_ref` (logprob_entropy_grad_inplace); the forward's
    /// takes none.
    fn in_place_outputs(&self, spec: &OpSpec) -> bool {
        grad::is_grad(spec)
    }

    fn tiling_fields(&self, spec: &OpSpec) -> &'static [TilingField] {
        if grad::is_grad(spec) {
            GRAD_FIELDS
        } else {
            FIELDS
        }
    }

    /// The backward has its own kernel; the op_host and checks templates serve both (`grad`).
    fn templates(&self, spec: &OpSpec) -> Templates {
        Templates {
            kernel: if grad::is_grad(spec) {
                "kernel/vocab_reduce_grad.cpp.j2"
            } else {
                "kernel/vocab_reduce.cpp.j2"
            },
            host: "host/vocab_reduce.cpp.j2",
            checks: Some("host/vocab_reduce_checks.j2"),
        }
    }

    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
        let mut extras = serde_json::Map::new();
        extras.insert("grad".into(), grad::is_grad(spec).into());
        Ok(extras)
    }

    /// The forward's outputs have target's shape (logits' leading dims; the host checks say
    /// so); the backward's dlogits has logits' shape.
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
        let like = |of: &str| OutputShape::Like { of: of.into() };
        let outputs = if grad::is_inplace(spec) {
            Vec::new() // dlogits is written over logits
        } else if grad::is_grad(spec) {
            vec![like(INPUTS[0])]
        } else {
            vec![like(INPUTS[1]), like(INPUTS[1]), like(INPUTS[1])]
        };
        Ok(ShapeRule { checks: Vec::new(), outputs })
    }

    fn derived_shape(&self, _spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
        derived_shape(i, first)
    }

    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
        if grad::is_grad(spec) {
            grad::cases(spec, sweep)
        } else {
            cases(spec, sweep)
        }
    }

    fn case_inputs(&self, spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
        // A case this family made always has its shapes; a malformed one panics with why.
        let data = if grad::is_grad(spec) {
            grad::case_inputs(spec, column, case)
        } else {
            case_inputs(spec, column, case)
        };
        Some(data.unwrap_or_else(|e| panic!("{}: {e}", spec.name)))
    }

    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError> {
        if grad::is_grad(spec) {
            grad::expected(spec, inputs, attrs)
        } else {
            expected(spec, inputs, attrs)
        }
    }

    /// Issue 28 point 7: the RL micro-batch's tokens over the vocabulary that Qwen2.5-0.5B,
    /// Qwen2-7B and Qwen3-8B share (V = 151936; the logits' shape does not depend on the
    /// hidden size). The twin runs them scaled (`rows_scale`).
    fn model_shapes(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)> {
        [4096, 8192, 16384].into_iter().map(|n| (MODEL_LABEL, vec![n, QWEN_VOCAB])).collect()
    }

    /// Rows over the cores in blocks of ceil(rows / cores), each row the same tiles of V.
    fn rows_scale(&self, _spec: &OpSpec) -> bool {
        true
    }

    /// The forward replaces torch_npu's CrossEntropyLoss (what verl calls, log_prob [N, V]
    /// and no entropy), the backward its CrossEntropyLossGrad.
    fn cann_builtin(&self, spec: &OpSpec) -> Option<CannBuiltin> {
        Some(if grad::is_grad(spec) {
            CannBuiltin::CrossEntropyLossGrad
        } else {
            CannBuiltin::CrossEntropyLoss
        })
    }

    fn work_units(&self, _spec: &OpSpec, shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        shapes.get(1).map(|(_, s)| s.iter().product::<usize>() as u64)
    }

    /// The V split spreads tiles, not rows.
    fn plan_work_units(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> Option<u64> {
        split_tiles(tiling).map(|(all, _)| all)
    }

    fn read_plan(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>, _dtype: DType) -> PlanReading {
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let split = match split_tiles(tiling) {
            Some((all, cores)) => format!(", V split: {all} tiles over {cores} cores"),
            None => String::new(),
        };
        PlanReading {
            label: format!("{} tile(s) of {} per row{split}", f("tilesPerRow"), f("tileLen")),
            two_pass: false,
            transfer_reason: None,
        }
    }

    /// The V split's passes are a core's run of tiles, uneven when some runs are one longer.
    fn plan_coverage(&self, _spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
        if let Some((all, cores)) = split_tiles(tiling) {
            return PlanCoverage {
                mode: "v-split",
                passes: Some(all.div_ceil(cores)),
                uneven: Some(all % cores != 0),
            };
        }
        let f = |n: &str| tiling(n).unwrap_or(0.0);
        let core_rows = f("blockFactor").min(f("rows"));
        PlanCoverage {
            mode: if f("tilesPerRow") > 1.0 { "multi-tile" } else { "single-tile" },
            passes: Some((core_rows * f("tilesPerRow")) as u64),
            uneven: Some(super::uneven(f("rows"), f("blockFactor").max(1.0)) && f("rows") > f("blockFactor")),
        }
    }

    /// Both ops: the backward splits V too (its tiles need no combine).
    fn plan_modes(&self, _spec: &OpSpec, _column: usize) -> Vec<&'static str> {
        vec!["single-tile", "multi-tile", "v-split"]
    }

    /// verl's eager path: log_softmax, gather, softmax, p·log p, sum (float32 upcast first);
    /// the backward: torch autograd of that path.
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        let mut b = Builder::default();
        let (x, _) = eager::input(case, 0)?;
        let (t, _) = eager::input(case, 1)?;
        let f = if x.dtype == DType::Float32 {
            x
        } else {
            b.op("logits.float()", &[x], x.as_dtype(DType::Float32))
        };
        if grad::is_grad(case.spec) {
            // Autograd's saved log_softmax and softmax are the forward's; their backward kernels.
            let rows = t.as_dtype(DType::Float32);
            let g_gather = b.op("gather backward (zeros, scatter dlogprob)", &[rows], f);
            let g_p = b.op("mul backward: -dentropy * log_softmax", &[f, rows], f);
            let g_ls = b.op("mul backward: -dentropy * softmax", &[f, rows], f);
            let sb = b.op("softmax backward", &[g_p, f], f);
            let g = b.op("add (gather grad + log_softmax grad)", &[g_gather, g_ls], f);
            let lb = b.op("log_softmax backward", &[g, f], f);
            let sum = b.op("add", &[lb, sb], f);
            let out = b.op("/ temperature", &[sum], f);
            if x.dtype != DType::Float32 {
                b.op("grad.to(logits.dtype)", &[out], x);
            }
            return Ok(b.finish("torch autograd of verl logprobs_from_logits + entropy_from_logits (eager)"));
        }
        let ls = b.op("log_softmax", &[f], f);
        b.op("gather(target)", &[ls, t], t.as_dtype(DType::Float32));
        let p = b.op("softmax", &[f], f);
        let pl = b.op("p * log_softmax", &[p, ls], f);
        b.op("-sum(-1)", &[pl], t.as_dtype(DType::Float32));
        Ok(b.finish("verl logprobs_from_logits + entropy_from_logits (eager)"))
    }
}
