//! Property tests: random shapes (1-sized and unaligned dims included), dtype combinations,
//! attrs, distributions and seeds for every catalogue op, twin (built with ASan/UBSan) against
//! the reference, through the same `check_case` as `opgen verify`.
//!
//! The default run keeps a small budget (6 cases per op) from a fixed seed, so CI draws the same
//! cases every run and a failure reproduces; failures are saved in
//! tests/proptest-regressions/proptest_ops.txt (committed) and replayed first. The long run:
//! `OPGEN_PROPTEST_CASES=2000 OPGEN_PROPTEST_SEED=$RANDOM cargo test --release --test
//! proptest_ops -- --test-threads 2` (~25 min on 2 cores; a failure reruns with the same seed, and is saved). Shapes are drawn
//! here, independently of the families' sweep lists; kv_layout's inputs (slot mappings by
//! pattern, pre-filled caches) are made by the family from the case seed (`case_inputs`), so
//! the seed strategies below pick the slot pattern explicitly.

use ascend_opgen::codegen::{render_project, Project};
use ascend_opgen::family;
use ascend_opgen::family::paged_cache::SlotPattern;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::AttrKind;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::verify::check_case;
use ascend_opgen::verify::inputs::Distribution;
use ascend_opgen::verify::{build_runner, BuildOptions, Case, Runner};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

fn cases_per_op() -> u32 {
    std::env::var("OPGEN_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(6)
}

/// The seed of the case stream: fixed (so a CI failure reproduces with the same command), or
/// `OPGEN_PROPTEST_SEED=<u64>` for another stream (a long run: `OPGEN_PROPTEST_SEED=$RANDOM`),
/// or `OPGEN_PROPTEST_SEED=random` for proptest's fresh random seed. Each op mixes its name in,
/// so ops do not share the stream.
fn rng_seed(op: &str) -> RngSeed {
    const DEFAULT_SEED: u64 = 0x0f6e_2026;
    let base = match std::env::var("OPGEN_PROPTEST_SEED").ok().as_deref() {
        Some("random") => return RngSeed::Random,
        Some(v) => v.parse().unwrap_or_else(|_| panic!("OPGEN_PROPTEST_SEED={v}: not a u64 or `random`")),
        None => DEFAULT_SEED,
    };
    // FNV-1a of the op name, a stable mix (std's hasher is not stable across releases).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in op.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    RngSeed::Fixed(base ^ h)
}

/// Failures are appended here (by proptest) and every saved case is replayed first on every
/// run, fixed seed or not: commit the file when it gains a line.
const REGRESSIONS: &str = "tests/proptest-regressions/proptest_ops.txt";

struct Catalogue {
    specs: Vec<OpSpec>,
    project: Project,
    runners: Mutex<HashMap<(String, usize), Runner>>,
}

fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
        let refs: Vec<&OpSpec> = specs.iter().collect();
        let project = render_project(&refs).unwrap();
        Catalogue { specs, project, runners: Mutex::new(HashMap::new()) }
    })
}

fn runner(spec: &OpSpec, column: usize) -> Runner {
    let cat = catalogue();
    let key = (spec.name.clone(), column);
    if let Some(r) = cat.runners.lock().unwrap().get(&key) {
        return r.clone();
    }
    let r = build_runner(&cat.project, spec, column, BuildOptions::default())
        .unwrap_or_else(|e| panic!("{} column {column}: {e}", spec.name));
    cat.runners.lock().unwrap().insert(key, r.clone());
    r
}

fn op(name: &str) -> OpSpec {
    catalogue().specs.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("catalogue op {name}")).clone()
}

/// Runs `cases_per_op()` random cases of `name`: `strategy` draws the parameters, `case` turns
/// them into (dtype combination, case). A failure names op, dtype, shapes, distribution, seed
/// and attrs (proptest then prints the shrunk parameters).
fn check_op<S: Strategy>(name: &str, strategy: S, case: impl Fn(&OpSpec, S::Value) -> (usize, Case)) {
    let spec = op(name);
    let mut runner_ = TestRunner::new(Config {
        cases: cases_per_op(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        rng_seed: rng_seed(name),
        // Every shrink step is a twin run; a bounded walk still ends at a readable case.
        max_shrink_iters: 64,
        ..Config::default()
    });
    runner_
        .run(&strategy, |params| {
            let (column, case) = case(&spec, params);
            let soc = soc::find(soc::DEFAULT_SOC).unwrap();
            check_case(&spec, column, &runner(&spec, column), soc, &case)
                .map_err(|e| TestCaseError::fail(format!("{e} (seed {}, attrs {:?})", case.seed, case.attrs)))
        })
        .unwrap();
}

/// Every distribution of the sweeps, uniform most often.
fn distribution() -> impl Strategy<Value = Distribution> {
    prop_oneof![
        4 => Just(Distribution::Uniform5),
        1 => Just(Distribution::NormalLargeMean),
        1 => Just(Distribution::Tiny),
        1 => Just(Distribution::Outlier),
        1 => Just(Distribution::Zeros),
        1 => Just(Distribution::NanInf),
    ]
}

/// The distributions without NaN/Inf (int8 quantisation of a row with NaN/Inf is not a contract,
/// op-semantics §7.8).
fn finite_distribution() -> impl Strategy<Value = Distribution> {
    distribution().prop_filter("finite inputs", |d| *d != Distribution::NanInf)
}

fn column(spec: &OpSpec) -> impl Strategy<Value = usize> {
    0..spec.columns()
}

fn named(spec: &OpSpec, shapes: Vec<Vec<usize>>) -> Vec<(String, Vec<usize>)> {
    spec.inputs.iter().map(|t| t.name.clone()).zip(shapes).collect()
}

/// One attr's draw: a string attr's choice by index (resolved per dtype combination, as
/// dequant_int8's `out_dtype` has one value per combination), a bool, a float.
#[derive(Debug, Clone)]
enum AttrDraw {
    Choice(Index),
    Bool(bool),
    Float(f64),
    Int(i64),
}

/// A draw of every attr `spec` declares: string attrs from the values the families accept
/// (`family::string_attr_choices`), bools either way, `epsilon` over [1e-8, 1e-2] (log-uniform:
/// every decade as often). An attr the draw does not know fails here, so a new attr is drawn
/// too rather than left at its default.
fn attr_draws(spec: &OpSpec) -> Vec<BoxedStrategy<AttrDraw>> {
    spec.attrs
        .iter()
        .map(|a| match (a.kind, a.name.as_str()) {
            (AttrKind::String, name) => {
                assert!(
                    family::string_attr_choices(spec, name, 0).is_some(),
                    "{}: string attr `{name}` has no list of values to draw from (family::string_attr_choices)",
                    spec.name
                );
                any::<Index>().prop_map(AttrDraw::Choice).boxed()
            }
            (AttrKind::Bool, _) => any::<bool>().prop_map(AttrDraw::Bool).boxed(),
            (AttrKind::Float, "epsilon") => (-8.0f64..-2.0).prop_map(|e| AttrDraw::Float(10f64.powf(e))).boxed(),
            // logprob_entropy: temperature log-uniform over [1e-2, 10]; ignore_index the usual
            // -100 or a small index some drawn targets hit.
            (AttrKind::Float, "temperature") => (-2.0f64..1.0).prop_map(|e| AttrDraw::Float(10f64.powf(e))).boxed(),
            (AttrKind::Int, "ignore_index") => select(vec![-100i64, 0, 3]).prop_map(AttrDraw::Int).boxed(),
            // gae: verl's defaults (1), the textbook values and anything in [0.5, 1].
            (AttrKind::Float, "gamma" | "lam") => {
                prop_oneof![select(vec![1.0f64, 0.99, 0.95]), 0.5f64..1.0].prop_map(AttrDraw::Float).boxed()
            }
            (kind, name) => panic!("{}: attr `{name}` ({}) has no drawing range here", spec.name, kind.name()),
        })
        .collect()
}

/// The case's attrs: each drawn value (`overrides` replacing some: a test that draws an attr
/// together with the shapes it constrains, as rotary's mode with its layouts).
fn drawn_attrs(
    spec: &OpSpec,
    column: usize,
    draws: &[AttrDraw],
    overrides: &[(&str, AttrValue)],
) -> Vec<(String, AttrValue)> {
    spec.attrs
        .iter()
        .zip(draws)
        .map(|(a, draw)| {
            let value = match overrides.iter().find(|(n, _)| *n == a.name) {
                Some((_, v)) => v.clone(),
                None => match draw {
                    AttrDraw::Choice(i) => {
                        let choices =
                            family::string_attr_choices(spec, &a.name, column).expect("checked when drawn");
                        AttrValue::String(i.get(&choices).clone())
                    }
                    AttrDraw::Bool(b) => AttrValue::Bool(*b),
                    AttrDraw::Float(x) => AttrValue::Float(*x),
                    AttrDraw::Int(x) => AttrValue::Int(*x),
                },
            };
            (a.name.clone(), value)
        })
        .collect()
}

/// Every catalogue op has a property test here: the list comes from the catalogue, so a new op
/// without one fails.
#[test]
fn every_catalogue_op_has_a_property_test() {
    let source = include_str!("proptest_ops.rs");
    let missing: Vec<&str> = catalogue()
        .specs
        .iter()
        .map(|s| s.name.as_str())
        .filter(|name| !source.contains(&format!("fn {name}_random_cases_match_the_reference()")))
        .collect();
    assert!(
        missing.is_empty(),
        "catalogue ops without a property test in tests/it/proptest_ops.rs: {missing:?}"
    );
    // And every attr of every op can be drawn (attr_draws panics on one it cannot).
    for spec in &catalogue().specs {
        assert_eq!(attr_draws(spec).len(), spec.attrs.len());
    }
}

// ---- row_norm: rms_norm, add_rms_norm ----------------------------------------------------------

/// A row length: mostly small and unaligned, sometimes one element, sometimes past the UB
/// budget (split-D).
fn row_len() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 1usize..700, 1 => Just(1usize), 1 => 9000usize..20000]
}

/// x's shape and gamma's rank for the row norms.
fn row_norm_shape() -> impl Strategy<Value = (Vec<usize>, usize)> {
    (prop::collection::vec(1usize..5, 0..3), prop::collection::vec(row_len(), 1..3)).prop_map(
        |(lead, tail)| {
            let rank = tail.len();
            let mut shape = lead;
            // Keep the launch small: a split-D row is only paired with few rows.
            let tail_elems: usize = tail.iter().product();
            if tail_elems > 4096 {
                shape.truncate(1);
            }
            shape.extend(&tail);
            if tail_elems > 40_000 {
                // Two trailing dims of a split-D size: fold to one.
                let n = shape.len();
                shape.truncate(n - 1);
                return (shape, 1);
            }
            (shape, rank)
        },
    )
}

/// The row norms and their backward ops: x's shape and gamma's rank drawn, every input's shape
/// as the family's sweep builds it (`case_shapes`), every attr drawn (epsilon, rounding,
/// arithmetic).
/// A family's named input shapes from x's shape and gamma's rank (`row_norm::case_shapes`,
/// `row_norm_grad::case_shapes`).
type CaseShapes = fn(&OpSpec, &[usize], usize) -> Vec<(String, Vec<usize>)>;

fn check_row_norm(name: &str, case_shapes: CaseShapes) {
    let spec = op(name);
    let strategy = (row_norm_shape(), column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op(name, strategy, |spec, ((x, gamma_rank), column, dist, seed, draws)| {
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: case_shapes(spec, &x, gamma_rank), dist, seed, attrs })
    });
}

#[test]
fn rms_norm_random_cases_match_the_reference() {
    check_row_norm("rms_norm", family::row_norm::case_shapes);
}

#[test]
fn add_rms_norm_random_cases_match_the_reference() {
    check_row_norm("add_rms_norm", family::row_norm::case_shapes);
}

#[test]
fn layer_norm_random_cases_match_the_reference() {
    check_row_norm("layer_norm", family::row_norm::case_shapes);
}

#[test]
fn rms_norm_grad_random_cases_match_the_reference() {
    check_row_norm("rms_norm_grad", family::row_norm_grad::case_shapes);
}

#[test]
fn add_rms_norm_grad_random_cases_match_the_reference() {
    check_row_norm("add_rms_norm_grad", family::row_norm_grad::case_shapes);
}

#[test]
fn layer_norm_grad_random_cases_match_the_reference() {
    check_row_norm("layer_norm_grad", family::row_norm_grad::case_shapes);
}

// ---- rotary: rotary_mul -------------------------------------------------------------------------

/// x's layout and the tables' broadcast (research/op-semantics.md §2.1).
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// x [B,S,N,D], r [1,S,1,D].
    Bsnd1s1d,
    /// x [B,S,N,D], r [B,S,1,D] (half only).
    BsndBs1d,
    /// x [B,N,S,D], r [1,1,S,D].
    Bnsd11sd,
    /// x [B,N,S,D], r [B,1,S,D] (half only).
    BnsdB1sd,
    /// x [S,B,N,D], r [S,1,1,D].
    Sbnd,
    /// x [B,S,N,D], r [B,S,N,D]: nothing broadcast (half only).
    Full,
}

impl Layout {
    fn shapes(self, b: usize, s: usize, n: usize, d: usize) -> (Vec<usize>, Vec<usize>) {
        match self {
            Layout::Bsnd1s1d => (vec![b, s, n, d], vec![1, s, 1, d]),
            Layout::BsndBs1d => (vec![b, s, n, d], vec![b, s, 1, d]),
            Layout::Bnsd11sd => (vec![b, n, s, d], vec![1, 1, s, d]),
            Layout::BnsdB1sd => (vec![b, n, s, d], vec![b, 1, s, d]),
            Layout::Sbnd => (vec![s, b, n, d], vec![s, 1, 1, d]),
            Layout::Full => (vec![b, s, n, d], vec![b, s, n, d]),
        }
    }
}

/// (mode, layout): interleave takes tables broadcast over batch and heads only (torch_npu).
fn rotary_mode_layout() -> impl Strategy<Value = (&'static str, Layout)> {
    use Layout::*;
    prop_oneof![
        (Just("half"), select(vec![Bsnd1s1d, BsndBs1d, Bnsd11sd, BnsdB1sd, Sbnd, Full])),
        (Just("interleave"), select(vec![Bsnd1s1d, Bnsd11sd, Sbnd])),
    ]
}

/// An even head dim: the model ones (72, 80, 96: halves that are not whole 32-byte blocks in
/// 16-bit), tiny ones, and any even D up to 320.
fn head_dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        2 => select(vec![2usize, 4, 8, 16, 64, 72, 80, 96, 128, 136, 256]),
        1 => (1usize..=160).prop_map(|h| 2 * h),
    ]
}

#[test]
fn rotary_mul_random_cases_match_the_reference() {
    let spec = op("rotary_mul");
    let dims = (1usize..4, 1usize..7, 1usize..6, head_dim());
    let strategy =
        (rotary_mode_layout(), dims, column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op("rotary_mul", strategy, |spec, ((mode, layout), (b, s, n, d), column, dist, seed, draws)| {
        let (x, table) = layout.shapes(b, s, n, d);
        let attrs = drawn_attrs(spec, column, &draws, &[("mode", AttrValue::String(mode.to_string()))]);
        (column, Case { shapes: named(spec, vec![x, table.clone(), table]), dist, seed, attrs })
    });
}

#[test]
fn rotary_mul_grad_random_cases_match_the_reference() {
    let spec = op("rotary_mul_grad");
    let dims = (1usize..4, 1usize..7, 1usize..6, head_dim());
    let strategy =
        (rotary_mode_layout(), dims, column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op(
        "rotary_mul_grad",
        strategy,
        |spec, ((mode, layout), (b, s, n, d), column, dist, seed, draws)| {
            let (x, table) = layout.shapes(b, s, n, d);
            // table_grads is drawn with the other attrs.
            let attrs = drawn_attrs(spec, column, &draws, &[("mode", AttrValue::String(mode.to_string()))]);
            (
                column,
                Case { shapes: named(spec, vec![x.clone(), x, table.clone(), table]), dist, seed, attrs },
            )
        },
    );
}

// ---- elementwise: gelu_tanh, gelu_erf, fast_gelu, swiglu ---------------------------------------

/// A shape of rank 1 to 4 (rarely up to 8): dims mostly small and unaligned, one dim sometimes
/// large enough for several tiles per core, at most ~300k elements in all.
fn elementwise_shape() -> impl Strategy<Value = Vec<usize>> {
    let dim = prop_oneof![6 => 1usize..40, 2 => Just(1usize), 1 => 40usize..5000];
    let small = prop::collection::vec(dim, 1..5);
    let ranked = prop_oneof![
        8 => small,
        1 => prop::collection::vec(1usize..4, 5..9),
        1 => (1usize..8, 20_000usize..40_000).prop_map(|(a, b)| vec![a, b]),
    ];
    ranked.prop_map(|mut shape| {
        // Cap the element count (the twin runs under ASan): shrink the largest dim.
        while shape.iter().product::<usize>() > 300_000 {
            let i = (0..shape.len()).max_by_key(|&i| shape[i]).expect("rank >= 1");
            shape[i] /= 2;
        }
        shape
    })
}

fn check_elementwise(name: &str) {
    let spec = op(name);
    let strategy = (elementwise_shape(), column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op(name, strategy, |spec, (shape, column, dist, seed, draws)| {
        // Every input (swiglu's gate and up) has the one shape: elementwise ops do not broadcast.
        let shapes = vec![shape; spec.inputs.len()];
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, shapes), dist, seed, attrs })
    });
}

#[test]
fn gelu_tanh_random_cases_match_the_reference() {
    check_elementwise("gelu_tanh");
}

#[test]
fn gelu_erf_random_cases_match_the_reference() {
    check_elementwise("gelu_erf");
}

#[test]
fn fast_gelu_random_cases_match_the_reference() {
    check_elementwise("fast_gelu");
}

#[test]
fn swiglu_random_cases_match_the_reference() {
    check_elementwise("swiglu");
}

// The generated backward ops (dy and the forward's inputs, all of one shape).
#[test]
fn gelu_tanh_grad_random_cases_match_the_reference() {
    check_elementwise("gelu_tanh_grad");
}

#[test]
fn gelu_erf_grad_random_cases_match_the_reference() {
    check_elementwise("gelu_erf_grad");
}

#[test]
fn fast_gelu_grad_random_cases_match_the_reference() {
    check_elementwise("fast_gelu_grad");
}

#[test]
fn swiglu_grad_random_cases_match_the_reference() {
    check_elementwise("swiglu_grad");
}

// ---- kv_layout: permutes ------------------------------------------------------------------------

/// (B, P, Q, D) of a permute's x: odd sizes, head dims incl. 72 (not 32-byte rows in fp16) and
/// odd ones, sometimes enough rows for many tiles.
fn permute_dims() -> impl Strategy<Value = [usize; 4]> {
    let d = prop_oneof![
        2 => select(vec![1usize, 3, 7, 16, 64, 72, 80, 96, 128, 256]),
        1 => 1usize..300,
    ];
    let pq = prop_oneof![6 => 1usize..24, 1 => 24usize..300];
    (1usize..4, pq.clone(), pq, d).prop_map(|(b, p, q, d)| {
        let mut dims = [b, p, q, d];
        // At most ~400k elements: shrink P or Q.
        while dims.iter().product::<usize>() > 400_000 {
            let i = if dims[1] >= dims[2] { 1 } else { 2 };
            dims[i] = dims[i].div_ceil(2);
        }
        dims
    })
}

fn check_permute(name: &str) {
    let spec = op(name);
    let strategy = (permute_dims(), column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op(name, strategy, |spec, (dims, column, dist, seed, draws)| {
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, vec![dims.to_vec()]), dist, seed, attrs })
    });
}

#[test]
fn bsnd_to_bnsd_random_cases_match_the_reference() {
    check_permute("bsnd_to_bnsd");
}

#[test]
fn bnsd_to_bsnd_random_cases_match_the_reference() {
    check_permute("bnsd_to_bsnd");
}

// ---- kv_layout: paged caches --------------------------------------------------------------------

/// One paged-cache case: tokens, heads, key/value head dims, block size, blocks, whether the
/// int8 scale caches carry a trailing 1, the slot pattern and the seed.
#[derive(Debug, Clone)]
struct CacheParams {
    tokens: usize,
    heads: usize,
    key_dim: usize,
    value_dim: usize,
    block_size: usize,
    num_blocks: usize,
    trailing_one: bool,
    pattern: SlotPattern,
    seed: u64,
}

/// The slot pattern is read from `seed % 8` by the family's `case_inputs` (prefill runs, decode,
/// padding with negative and past-the-cache slots, duplicates).
fn pattern_seed() -> impl Strategy<Value = (SlotPattern, u64)> {
    (0u64..4, 0u64..1 << 40).prop_map(|(code, high)| {
        let seed = high * 8 + code;
        (SlotPattern::of_seed(seed), seed)
    })
}

fn cache_params() -> impl Strategy<Value = CacheParams> {
    let dim = prop_oneof![2 => select(vec![1usize, 16, 20, 36, 64, 72, 80, 96, 128, 256]), 1 => 1usize..300];
    let block_size = prop_oneof![2 => Just(16usize), 1 => Just(128usize), 2 => 1usize..20];
    let tokens = prop_oneof![4 => 1usize..40, 1 => 40usize..200];
    (tokens, 1usize..6, dim.clone(), dim, block_size, 0usize..5, any::<bool>(), any::<bool>(), pattern_seed())
        .prop_map(
            |(tokens, heads, key_dim, value_dim, block_size, extra, short, trailing_one, (pattern, seed))| {
                let needed = tokens.div_ceil(block_size);
                // Decode draws distinct slots, so it needs a slot per token; the other
                // patterns may also run on fewer blocks than tokens need (prefill then wraps
                // its block table: the same slot twice, the later token wins).
                let num_blocks = if short && pattern != SlotPattern::Decode {
                    1 + extra.min(needed.saturating_sub(1))
                } else {
                    needed + extra
                };
                CacheParams {
                    tokens,
                    heads,
                    key_dim,
                    value_dim,
                    block_size,
                    num_blocks,
                    trailing_one,
                    pattern,
                    seed,
                }
            },
        )
}

fn cache_case(spec: &OpSpec, p: &CacheParams, dist: Distribution, attrs: Vec<(String, AttrValue)>) -> Case {
    assert_eq!(SlotPattern::of_seed(p.seed), p.pattern, "the seed encodes the pattern drawn");
    let (nb, bs, n) = (p.num_blocks, p.block_size, p.heads);
    let mut shapes = vec![
        vec![p.tokens, n, p.key_dim],
        vec![p.tokens, n, p.value_dim],
        vec![nb, bs, n, p.key_dim],
        vec![nb, bs, n, p.value_dim],
    ];
    if spec.inputs.len() == 7 {
        // int8: the float32 scale caches, one per (slot, head), optionally with a trailing 1.
        shapes.push(vec![nb, bs, n]);
        shapes.push(if p.trailing_one { vec![nb, bs, n, 1] } else { vec![nb, bs, n] });
    }
    shapes.push(vec![p.tokens]);
    Case { shapes: named(spec, shapes), dist, seed: p.seed, attrs }
}

#[test]
fn reshape_and_cache_random_cases_match_the_reference() {
    let spec = op("reshape_and_cache");
    let strategy = (cache_params(), column(&spec), distribution(), attr_draws(&spec));
    check_op("reshape_and_cache", strategy, |spec, (p, column, dist, draws)| {
        (column, cache_case(spec, &p, dist, drawn_attrs(spec, column, &draws, &[])))
    });
}

#[test]
fn reshape_and_cache_int8_random_cases_match_the_reference() {
    let spec = op("reshape_and_cache_int8");
    let strategy = (cache_params(), column(&spec), finite_distribution(), attr_draws(&spec));
    check_op("reshape_and_cache_int8", strategy, |spec, (p, column, dist, draws)| {
        (column, cache_case(spec, &p, dist, drawn_attrs(spec, column, &draws, &[])))
    });
}

// ---- kv_layout: dequant_int8 --------------------------------------------------------------------

#[test]
fn dequant_int8_random_cases_match_the_reference() {
    let spec = op("dequant_int8");
    let lead = prop::collection::vec(prop_oneof![4 => 1usize..20, 1 => 20usize..300], 0..4);
    let d = prop_oneof![2 => select(vec![1usize, 7, 16, 64, 72, 80, 96, 128, 256]), 1 => 1usize..600];
    let strategy = (lead, d, any::<bool>(), column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op("dequant_int8", strategy, |spec, (mut lead, d, trailing_one, column, dist, seed, draws)| {
        while lead.iter().product::<usize>() * d > 300_000 {
            let i = (0..lead.len()).max_by_key(|&i| lead[i]).expect("non-empty when over the cap");
            lead[i] = lead[i].div_ceil(2);
        }
        let mut q = lead.clone();
        q.push(d);
        let mut scale = lead;
        if trailing_one {
            scale.push(1);
        }
        // out_dtype's one value per combination is its output dtype (string_attr_choices; a
        // mismatch is a host rejection, not a numerics property).
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, vec![q, scale]), dist, seed, attrs })
    });
}

// ---- vocab_reduce: logprob_entropy ----------------------------------------------------------------

#[test]
fn logprob_entropy_random_cases_match_the_reference() {
    let spec = op("logprob_entropy");
    let rows = prop_oneof![4 => 1usize..20, 1 => 20usize..200];
    // One tile or several, powers of two and their neighbours, odd and prime lengths.
    let v =
        prop_oneof![2 => select(vec![1usize, 7, 64, 65, 1000, 8191, 8192, 8193, 20011]), 1 => 1usize..3000];
    let strategy = (rows, v, column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op("logprob_entropy", strategy, |spec, (mut rows, v, column, dist, seed, draws)| {
        while rows > 1 && rows * v > 300_000 {
            rows = rows.div_ceil(2);
        }
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, vec![vec![rows, v], vec![rows]]), dist, seed, attrs })
    });
}

/// logprob_entropy_grad's random cases for `name` (the grad or its in-place form, which writes
/// the same dlogits over the logits).
fn logprob_entropy_grad_random_cases(name: &str) {
    // The forward's shapes; the family makes the saved lse and entropy from the drawn logits
    // (case_inputs), so the four row tensors only need target's shape.
    let spec = op(name);
    let rows = prop_oneof![4 => 1usize..20, 1 => 20usize..200];
    let v = prop_oneof![2 => select(vec![1usize, 7, 64, 65, 1000, 8191, 8192, 8193, 16385, 20011]), 1 => 1usize..3000];
    let strategy = (rows, v, column(&spec), distribution(), any::<u64>(), attr_draws(&spec));
    check_op(name, strategy, |spec, (mut rows, v, column, dist, seed, draws)| {
        while rows > 1 && rows * v > 300_000 {
            rows = rows.div_ceil(2);
        }
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        let row = vec![rows];
        let shapes = vec![vec![rows, v], row.clone(), row.clone(), row.clone(), row.clone(), row];
        (column, Case { shapes: named(spec, shapes), dist, seed, attrs })
    });
}

#[test]
fn logprob_entropy_grad_random_cases_match_the_reference() {
    logprob_entropy_grad_random_cases("logprob_entropy_grad");
}

#[test]
fn logprob_entropy_grad_inplace_random_cases_match_the_reference() {
    logprob_entropy_grad_random_cases("logprob_entropy_grad_inplace");
}

// ---- reverse_scan: gae ---------------------------------------------------------------------------

#[test]
fn gae_random_cases_match_the_reference() {
    let spec = op("gae");
    let rows = prop_oneof![4 => 1usize..20, 1 => 20usize..300];
    // One chunk or several, chunk-sized and odd lengths.
    let t = prop_oneof![2 => select(vec![1usize, 7, 8, 9, 511, 512, 513, 2049]), 1 => 1usize..3000];
    let strategy = (rows, t, column(&spec), finite_distribution(), any::<u64>(), attr_draws(&spec));
    check_op("gae", strategy, |spec, (mut rows, t, column, dist, seed, draws)| {
        while rows > 1 && rows * t > 100_000 {
            rows = rows.div_ceil(2);
        }
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, vec![vec![rows, t]; 3]), dist, seed, attrs })
    });
}

#[test]
fn discounted_return_random_cases_match_the_reference() {
    let spec = op("discounted_return");
    let rows = prop_oneof![4 => 1usize..20, 1 => 20usize..300];
    let t = prop_oneof![2 => select(vec![1usize, 7, 8, 9, 511, 512, 513, 2049]), 1 => 1usize..3000];
    let strategy = (rows, t, column(&spec), finite_distribution(), any::<u64>(), attr_draws(&spec));
    check_op("discounted_return", strategy, |spec, (mut rows, t, column, dist, seed, draws)| {
        while rows > 1 && rows * t > 100_000 {
            rows = rows.div_ceil(2);
        }
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, vec![vec![rows, t]; 2]), dist, seed, attrs })
    });
}

// ---- whiten: masked_whiten -----------------------------------------------------------------------

#[test]
fn masked_whiten_random_cases_match_the_reference() {
    let spec = op("masked_whiten");
    let rows = prop_oneof![4 => 1usize..20, 1 => 20usize..300];
    // One tile or several per core, tile-sized and odd lengths.
    let t = prop_oneof![2 => select(vec![1usize, 2, 7, 8, 4095, 4096, 4097, 8193]), 1 => 1usize..3000];
    let strategy = (rows, t, column(&spec), finite_distribution(), any::<u64>(), attr_draws(&spec));
    check_op("masked_whiten", strategy, |spec, (mut rows, t, column, dist, seed, draws)| {
        while rows > 1 && rows * t > 250_000 {
            rows = rows.div_ceil(2);
        }
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (column, Case { shapes: named(spec, vec![vec![rows, t]; 2]), dist, seed, attrs })
    });
}

// ---- whiten: grpo_advantage ----------------------------------------------------------------------

#[test]
fn grpo_advantage_random_cases_match_the_reference() {
    let spec = op("grpo_advantage");
    // Up to the batch bound; one row tile or several (2048), tile-sized and odd lengths. The
    // seed mod 6 picks the grouping (blocks, shuffled, singletons, one group, pairs, random).
    let rows = prop_oneof![4 => 1usize..40, 1 => 40usize..4097];
    let t = prop_oneof![2 => select(vec![1usize, 2, 7, 8, 9, 2047, 2048, 2049, 4097]), 1 => 1usize..3000];
    let strategy = (rows, t, column(&spec), finite_distribution(), any::<u64>(), attr_draws(&spec));
    check_op("grpo_advantage", strategy, |spec, (mut rows, t, column, dist, seed, draws)| {
        while rows > 1 && rows * t > 250_000 {
            rows = rows.div_ceil(2);
        }
        let attrs = drawn_attrs(spec, column, &draws, &[]);
        (
            column,
            Case { shapes: named(spec, vec![vec![rows, t], vec![rows, t], vec![rows]]), dist, seed, attrs },
        )
    });
}
