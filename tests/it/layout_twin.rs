//! The kv_layout ops through the twin runner on hand-made inputs: negative and past-the-cache
//! slots are never written (the whole cache around them compared bit for bit), the same slot
//! twice gives the later token's row on every core count, all-zero and tiny int8 rows, the
//! permutes keep NaN payloads, an int64 slot mapping, the host code's rejections with their
//! reasons, and a kernel that writes past its rows fails verification. The tiling quality
//! (double buffering, transfer sizes, bytes moved) is read from the twin's counters through
//! `opgen report`'s rows.

use crate::support::patched_templates;
use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::reference::kv_layout::{self as reference, Int8KvCache};
use ascend_opgen::report::{self, ReportCase, Row};
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::compare::{compare_tensor, Tolerance};
use ascend_opgen::verify::inputs::Rng;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, CaseInput, CaseRun, Runner, TwinError};
use ascend_opgen::verify::{run_verify, VerifyOptions};
use ascend_opgen::DType;
use std::collections::HashMap;
use std::sync::Mutex;

fn op(name: &str) -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == name).unwrap()
}

/// (op name, spec file, combination).
type RunnerKey = (String, String, usize);

/// One runner per (op, combination), built once for the whole file (tests run on threads; two
/// builds of one runner at the same time would race on the cache files).
fn runner(spec: &OpSpec, column: usize) -> Runner {
    static RUNNERS: Mutex<Option<HashMap<RunnerKey, Runner>>> = Mutex::new(None);
    let mut guard = RUNNERS.lock().unwrap_or_else(|e| e.into_inner());
    let key = (spec.name.clone(), spec.source.display().to_string(), column);
    guard
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| {
            let project = render_project(&[spec]).unwrap();
            build_runner(&project, spec, column, BuildOptions::default()).unwrap()
        })
        .clone()
}

/// The combination whose tensor `name` has `dtype`.
fn column(spec: &OpSpec, name: &str, dtype: DType) -> usize {
    let t = spec.inputs.iter().chain(&spec.outputs).find(|t| t.name == name).unwrap();
    t.dtypes.iter().position(|d| *d == dtype).unwrap()
}

fn run_on(
    spec: &OpSpec,
    column: usize,
    soc_name: &str,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    plan_only: bool,
) -> Result<CaseRun, TwinError> {
    let runner = runner(spec, column);
    let inplace = spec.mutated_inputs();
    run_case(
        &runner,
        spec,
        soc::find(soc_name).unwrap(),
        &CaseInput { inputs, attrs, inplace: &inplace },
        plan_only,
    )
}

fn run(spec: &OpSpec, column: usize, inputs: &[(String, HostTensor)]) -> CaseRun {
    run_on(spec, column, soc::DEFAULT_SOC, inputs, &[], false).unwrap()
}

fn get<'a>(run: &'a CaseRun, name: &str) -> &'a HostTensor {
    &run.outputs.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no `{name}` in the run")).1
}

/// Every bit pattern, NaN payloads and subnormals included.
fn random_bits(dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    let bits: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    HostTensor::from_bits(dtype, shape, &bits)
}

fn assert_bitwise(actual: &HostTensor, expected: &HostTensor, what: &str) {
    let c = compare_tensor(actual, expected, Tolerance::Bitwise);
    assert!(c.passed(), "{what}: {c}");
}

fn named(list: Vec<(&str, HostTensor)>) -> Vec<(String, HostTensor)> {
    list.into_iter().map(|(n, t)| (n.to_string(), t)).collect()
}

struct CacheCase {
    inputs: Vec<(String, HostTensor)>,
    key_cache: HostTensor,
    value_cache: HostTensor,
    past: usize,
}

/// reshape_and_cache inputs of random bits (NaN payloads included) and the reference result.
fn cache_case(
    dtype: DType,
    heads: usize,
    dim: usize,
    blocks: usize,
    block_size: usize,
    slots: &[i64],
) -> CacheCase {
    let tokens = slots.len();
    let key = random_bits(dtype, &[tokens, heads, dim], 1);
    let value = random_bits(dtype, &[tokens, heads, dim], 2);
    let kc = random_bits(dtype, &[blocks, block_size, heads, dim], 3);
    let vc = random_bits(dtype, &[blocks, block_size, heads, dim], 4);
    let slot_mapping = HostTensor::from_i64(DType::Int32, &[tokens], slots);
    let (mut key_cache, mut value_cache) = (kc.clone(), vc.clone());
    let past = reference::reshape_and_cache(
        &key,
        &value,
        &mut key_cache,
        &mut value_cache,
        &slot_mapping,
        block_size,
    )
    .unwrap();
    let inputs = named(vec![
        ("key", key),
        ("value", value),
        ("key_cache", kc),
        ("value_cache", vc),
        ("slot_mapping", slot_mapping),
    ]);
    CacheCase { inputs, key_cache, value_cache, past }
}

fn check_cache_run(run: &CaseRun, case: &CacheCase) {
    assert_eq!(get(run, "out_of_range").to_i64(), vec![case.past as i64], "slots past the cache are counted");
    assert_bitwise(get(run, "key_cache"), &case.key_cache, "key_cache");
    assert_bitwise(get(run, "value_cache"), &case.value_cache, "value_cache");
}

#[test]
fn negative_and_out_of_range_slots_are_never_written() {
    let spec = op("reshape_and_cache");
    let (heads, dim, blocks, block_size) = (2, 72, 6, 16);
    let cache_slots = (blocks * block_size) as i64;
    // 64 tokens: distinct valid slots, padding of several kinds, slots just and far past the cache.
    let mut rng = Rng::new(7);
    let valid = rng.distinct_indices(cache_slots as usize, 64);
    let specials = [-1, -17, i64::from(i32::MIN), cache_slots, cache_slots + 1, 1000, i64::from(i32::MAX)];
    let slots: Vec<i64> = (0..64)
        .map(|i| if i % 5 == 2 { specials[(i / 5) % specials.len()] } else { valid[i] as i64 })
        .collect();
    let past = slots.iter().filter(|s| **s >= cache_slots).count();
    assert!(past >= 5 && slots.iter().any(|s| *s < 0));
    for dtype in [DType::Float16, DType::Int8] {
        let case = cache_case(dtype, heads, dim, blocks, block_size, &slots);
        assert_eq!(case.past, past);
        let out = run(&spec, column(&spec, "key", dtype), &case.inputs);
        assert!(out.report["block_dim"].as_u64().unwrap() > 1, "the case runs on several cores");
        check_cache_run(&out, &case);
        // And explicitly: a slot no token names keeps its old bits, NaN payloads included.
        let (_, before) = &case.inputs[2];
        let row = heads * dim;
        let named: Vec<usize> =
            slots.iter().filter(|s| (0..cache_slots).contains(*s)).map(|s| *s as usize).collect();
        for s in (0..cache_slots as usize).filter(|s| !named.contains(s)) {
            let after = get(&out, "key_cache");
            assert!(
                (s * row..(s + 1) * row).all(|i| after.bits(i) == before.bits(i)),
                "slot {s} was written"
            );
        }
    }
}

#[test]
fn duplicate_slots_the_later_token_wins_on_every_core_count() {
    let spec = op("reshape_and_cache");
    let col = column(&spec, "key", DType::Float16);
    // 100 tokens over 13 slots (each slot named 7 or 8 times, by tokens far apart) and a pair
    // of tokens 0 and 99 on one slot.
    let mut slots: Vec<i64> = (0..100).map(|i| (i * 7 % 13) as i64).collect();
    slots[0] = 40;
    slots[99] = 40;
    let case = cache_case(DType::Float16, 2, 64, 4, 16, &slots);
    // Each written slot holds the last token that names it.
    for (slot, token) in [(40usize, 99usize), (0, 91)] {
        assert_eq!(slots[token], slot as i64);
        let row = 2 * 64;
        let key = &case.inputs[0].1;
        assert!((0..row).all(|j| case.key_cache.bits(slot * row + j) == key.bits(token * row + j)));
    }
    let mut results = Vec::new();
    for soc_name in ["Ascend910B2", "Ascend910B3", "Ascend910B4"] {
        let out = run_on(&spec, col, soc_name, &case.inputs, &[], false).unwrap();
        check_cache_run(&out, &case);
        results.push((out.report["block_dim"].as_u64().unwrap(), get(&out, "key_cache").clone()));
    }
    assert!(results.iter().all(|(_, k)| *k == results[0].1));
    assert!(results.iter().any(|(b, _)| *b != results[0].0), "the SoCs differ in core count: {results:?}");

    // Duplicates across slot-mapping chunks (2048 entries per UB read) and within one run of
    // consecutive slots.
    let mut slots: Vec<i64> = (0..2100).map(|i| (i % 500) as i64).collect();
    slots[5] = 1999;
    slots[2090] = 1999;
    slots[2091] = 2000;
    let case = cache_case(DType::Float16, 1, 64, 130, 16, &slots);
    check_cache_run(&run(&spec, col, &case.inputs), &case);
}

#[test]
fn slot_mapping_may_be_int64() {
    // The catalogue's int64 combination (vLLM's slot dtype): 5e9 is past the cache, and so is
    // 2^32 + 3, whose low word is the valid slot 3.
    let spec = op("reshape_and_cache");
    let column = spec
        .select_column(None, &[("key", DType::BFloat16), ("slot_mapping", DType::Int64)], &[])
        .expect("an int64 slot_mapping combination");
    let slots: Vec<i64> = vec![3, -1, 70, 64, 5_000_000_000, 4, (1 << 32) + 3, 0];
    let mut case = cache_case(DType::BFloat16, 2, 80, 4, 16, &slots);
    case.inputs[4].1 = HostTensor::from_i64(DType::Int64, &[slots.len()], &slots);
    let out = run(&spec, column, &case.inputs);
    check_cache_run(&out, &case);
    assert_eq!(case.past, 4);
}

#[test]
fn all_zero_and_tiny_int8_rows() {
    let spec = op("reshape_and_cache_int8");
    let (tokens, heads, dim, blocks, block_size) = (4, 3, 80, 2, 16);
    for dtype in [DType::Float16, DType::BFloat16] {
        let mut rng = Rng::new(11);
        let mut values: Vec<f64> = (0..tokens * heads * dim).map(|_| rng.uniform(-3.0, 3.0)).collect();
        let row = |t: usize, h: usize| (t * heads + h) * dim..(t * heads + h + 1) * dim;
        for i in row(0, 0) {
            values[i] = 0.0; // all +0
        }
        for (j, i) in row(1, 2).enumerate() {
            values[i] = if j % 3 == 0 { -0.0 } else { 0.0 }; // zeros of both signs
        }
        let tiny = if dtype == DType::BFloat16 { 1e-30 } else { 1e-6 };
        for (j, i) in row(2, 1).enumerate() {
            values[i] = tiny * (j as f64 - 40.0) / 40.0; // absmax below 2^-64 in bfloat16
        }
        if dtype == DType::BFloat16 {
            for (j, i) in row(3, 0).enumerate() {
                values[i] = 1e-39 * (j % 7) as f64; // bfloat16 subnormals
            }
        }
        let key = HostTensor::from_f64(dtype, &[tokens, heads, dim], &values);
        let value = HostTensor::from_f64(dtype, &[tokens, heads, dim], &values);
        let cache = |d: DType| {
            HostTensor::from_bits(
                d,
                &[blocks, block_size, heads, dim],
                &vec![0x80; blocks * block_size * heads * dim],
            )
        };
        let scales = HostTensor::from_f64(
            DType::Float32,
            &[blocks, block_size, heads],
            &vec![-1.0; blocks * block_size * heads],
        );
        let slots = HostTensor::from_i64(DType::Int32, &[tokens], &[9, 0, 31, 17]);
        let inputs = named(vec![
            ("key", key.clone()),
            ("value", value.clone()),
            ("key_cache", cache(DType::Int8)),
            ("value_cache", cache(DType::Int8)),
            ("key_scale", scales.clone()),
            ("value_scale", scales.clone()),
            ("slot_mapping", slots.clone()),
        ]);
        let out = run(&spec, column(&spec, "key", dtype), &inputs);
        let (mut kc, mut vc, mut ks, mut vs) =
            (cache(DType::Int8), cache(DType::Int8), scales.clone(), scales.clone());
        let want = Int8KvCache { key: &mut kc, value: &mut vc, key_scale: &mut ks, value_scale: &mut vs };
        reference::reshape_and_cache_int8(&key, &value, want, &slots, block_size).unwrap();
        for (name, expected, rule) in [
            ("key_cache", &kc, Tolerance::IntWithin(1)),
            ("value_cache", &vc, Tolerance::IntWithin(1)),
            ("key_scale", &ks, Tolerance::ulp(1)),
            ("value_scale", &vs, Tolerance::ulp(1)),
        ] {
            let c = compare_tensor(get(&out, name), expected, rule);
            assert!(c.passed(), "{dtype} {name}: {c}");
        }
        let q = get(&out, "key_cache");
        let s = get(&out, "key_scale");
        // Token 0 (slot 9) head 0 and token 1 (slot 0) head 2 are all zero: q = 0, scale +0.0.
        for (slot, h) in [(9usize, 0usize), (0, 2)] {
            let r = slot * heads + h;
            assert!((r * dim..(r + 1) * dim).all(|i| q.bits(i) == 0), "{dtype}: q of a zero row");
            assert_eq!(s.bits(r), 0, "{dtype}: the scale of a zero row is +0.0, never NaN");
        }
        assert!(s.to_f64().iter().all(|v| !v.is_nan()));
        // The tiny row (token 2 → slot 31, head 1) is quantised over the full int8 range.
        let r = 31 * heads + 1;
        let tiny_q: Vec<i64> = (r * dim..(r + 1) * dim).map(|i| q.get_i64(i)).collect();
        assert_eq!(tiny_q.iter().map(|v| v.abs()).max(), Some(127), "{dtype}: {tiny_q:?}");
        assert!(s.get_f64(r) > 0.0);
    }
}

#[test]
fn permutes_move_every_bit_pattern() {
    let there = op("bsnd_to_bnsd");
    let back = op("bnsd_to_bsnd");
    for (dtype, shape) in
        [(DType::Float16, [2, 5, 3, 72]), (DType::Float32, [1, 33, 7, 80]), (DType::Int8, [3, 4, 9, 40])]
    {
        let x = random_bits(dtype, &shape, 5);
        let y = get(&run(&there, column(&there, "x", dtype), &named(vec![("x", x.clone())])), "y").clone();
        assert_bitwise(&y, &reference::bsnd_to_bnsd(&x).unwrap(), "bsnd_to_bnsd");
        let z = get(&run(&back, column(&back, "x", dtype), &named(vec![("x", y)])), "y").clone();
        assert_eq!(z, x, "{dtype}: bnsd_to_bsnd undoes bsnd_to_bnsd bit for bit");
    }
}

fn rejected(
    spec: &OpSpec,
    column: usize,
    inputs: Vec<(&str, HostTensor)>,
    attrs: &[(String, AttrValue)],
) -> String {
    match run_on(spec, column, soc::DEFAULT_SOC, &named(inputs), attrs, true) {
        Err(TwinError::HostRejected(why)) => why,
        other => panic!("{}: expected a host rejection, got {other:?}", spec.name),
    }
}

fn zeros(dtype: DType, shape: &[usize]) -> HostTensor {
    HostTensor::zeros(dtype, shape)
}

#[test]
fn host_code_rejects_bad_shapes_with_the_reason() {
    let f16 = DType::Float16;
    let cache = op("reshape_and_cache");
    let col = column(&cache, "key", f16);
    let inputs = |t: usize, slots: usize, kh: usize, vh: usize, cache_d: usize| {
        vec![
            ("key", zeros(f16, &[t, kh, 64])),
            ("value", zeros(f16, &[t, vh, 64])),
            ("key_cache", zeros(f16, &[2, 16, kh, cache_d])),
            ("value_cache", zeros(f16, &[2, 16, kh, 64])),
            ("slot_mapping", zeros(DType::Int32, &[slots])),
        ]
    };
    let why = rejected(&cache, col, inputs(4, 5, 2, 2, 64), &[]);
    assert!(why.contains("slot mapping length 5 != tokens 4"), "{why}");
    let why = rejected(&cache, col, inputs(4, 4, 2, 4, 64), &[]);
    assert!(why.contains("disagree on tokens or heads"), "{why}");
    let why = rejected(&cache, col, inputs(4, 4, 2, 2, 72), &[]);
    assert!(why.contains("key_cache [2, 16, 2, 72] must be [num_blocks, block_size, 2, 64]"), "{why}");
    let mut flat = inputs(4, 4, 2, 2, 64);
    flat[0].1 = zeros(f16, &[4, 128]);
    let why = rejected(&cache, col, flat, &[]);
    assert!(why.contains("key has rank 2; it must have rank 3"), "{why}");

    let int8 = op("reshape_and_cache_int8");
    let s = |shape: &[usize]| zeros(DType::Float32, shape);
    let c8 = |shape: &[usize]| zeros(DType::Int8, shape);
    let why = rejected(
        &int8,
        column(&int8, "key", f16),
        vec![
            ("key", zeros(f16, &[3, 2, 80])),
            ("value", zeros(f16, &[3, 2, 80])),
            ("key_cache", c8(&[2, 16, 2, 80])),
            ("value_cache", c8(&[2, 16, 2, 80])),
            ("key_scale", s(&[2, 16, 2])),
            ("value_scale", s(&[2, 16, 2, 80])),
            ("slot_mapping", zeros(DType::Int32, &[3])),
        ],
        &[],
    );
    assert!(why.contains("value_scale must be [2, 16, 2] (or with a trailing 1)"), "{why}");

    let deq = op("dequant_int8");
    let out = |d: &str| vec![("out_dtype".to_string(), AttrValue::String(d.to_string()))];
    let col = column(&deq, "x", f16);
    let why = rejected(&deq, col, vec![("q", c8(&[3, 2, 64])), ("scale", s(&[3, 3]))], &out("float16"));
    assert!(why.contains("scale (rank 2, 9 elements) must have q's leading dims"), "{why}");
    let why = rejected(&deq, col, vec![("q", c8(&[3, 2, 64])), ("scale", s(&[3, 2]))], &out("float64"));
    assert!(why.contains("output dtype `float64` is not float16, bfloat16 or float32"), "{why}");

    let perm = op("bsnd_to_bnsd");
    let why = rejected(&perm, column(&perm, "x", f16), vec![("x", zeros(f16, &[4, 8, 64]))], &[]);
    assert!(why.contains("x has rank 3; it must have rank 4"), "{why}");
}

#[test]
fn dequant_follows_the_output_dtype_attr() {
    let spec = op("dequant_int8");
    let q =
        HostTensor::from_i64(DType::Int8, &[2, 3, 72], &(0..432).map(|i| i % 255 - 127).collect::<Vec<_>>());
    let scale = HostTensor::from_f64(DType::Float32, &[2, 3, 1], &[0.5, 1e-3, 3.0, 0.0, 7.25, 1e-8]);
    let want = reference::dequant_int8(&q, &scale).unwrap();
    for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
        let attrs = vec![("out_dtype".to_string(), AttrValue::String(dtype.name().to_string()))];
        let inputs = named(vec![("q", q.clone()), ("scale", scale.clone())]);
        let out = run_on(&spec, column(&spec, "x", dtype), soc::DEFAULT_SOC, &inputs, &attrs, false).unwrap();
        let x = get(&out, "x");
        assert_eq!((x.dtype, x.shape.clone()), (dtype, vec![2, 3, 72]));
        let bar = if dtype == DType::Float32 { Tolerance::ulp(0) } else { Tolerance::ulp(1) };
        let c = ascend_opgen::verify::compare::compare(x, &want, bar);
        assert!(c.passed(), "{dtype}: {c}");
    }
}

#[test]
fn a_cache_kernel_writing_past_its_rows_fails_verification() {
    // The scales of each run of a pass written one row too far: the row after a run is a slot
    // the reference leaves alone (or past the buffer).
    let templates = patched_templates(
        "kernel/paged_cache.cpp.j2",
        "Burst(static_cast<uint64_t>(segRows_[s]) * sizeof(float))",
        "Burst(static_cast<uint64_t>(segRows_[s] + 1) * sizeof(float))",
    );
    let opts = VerifyOptions {
        ops: vec!["reshape_and_cache_int8".into()],
        dtypes: vec![DType::Float16],
        templates: Some(templates),
        // One failing case is the evidence; the rest of the sweep would only repeat it.
        fail_fast: true,
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    let failed: usize = report.rows.iter().filter(|r| r.output.ends_with("_scale")).map(|r| r.failures).sum();
    assert!(failed > 0, "a kernel writing past its rows passed:\n{}", report.table());
    assert!(
        report.failures.iter().any(|f| f.contains("the reference leaves unchanged were written")),
        "{:#?}",
        report.failures
    );
}

/// The report row of one launch (report inputs: uniform values, token i in slot i) and the run.
fn report_row(spec: &OpSpec, dtype: DType, first: &[usize]) -> (Row, CaseRun) {
    let column = spec.column_for(dtype).unwrap();
    let case = ReportCase::new(spec, "test", first);
    let (inputs, valid) = report::case_inputs(spec, column, &case);
    let run = run_on(spec, column, soc::DEFAULT_SOC, &inputs, &case.attrs, false).unwrap();
    let row =
        report::build_row(soc::find(soc::DEFAULT_SOC).unwrap(), spec, column, &case, &run.report, valid)
            .unwrap();
    let what = format!("{} {dtype} {first:?}", spec.name);
    if spec.name == "reshape_and_cache" {
        let (mut kc, mut vc) = (inputs[2].1.clone(), inputs[3].1.clone());
        let block_size = kc.shape[1];
        let past = reference::reshape_and_cache(
            &inputs[0].1,
            &inputs[1].1,
            &mut kc,
            &mut vc,
            &inputs[4].1,
            block_size,
        )
        .unwrap();
        assert_eq!(get(&run, "out_of_range").to_i64(), vec![past as i64], "{what}");
        assert_bitwise(get(&run, "key_cache"), &kc, &what);
        assert_bitwise(get(&run, "value_cache"), &vc, &what);
    } else {
        // Either permute swaps dims 1 and 2, so one reference serves both.
        assert_bitwise(get(&run, "y"), &reference::bsnd_to_bnsd(&inputs[0].1).unwrap(), &what);
    }
    (row, run)
}

fn met(row: &Row, target: &str) -> Option<bool> {
    row.checks.iter().find(|c| c.target == target).unwrap_or_else(|| panic!("no {target} check")).met
}

#[test]
fn permute_tiles_are_double_buffered_with_long_y_runs() {
    let there = op("bsnd_to_bnsd");
    let back = op("bnsd_to_bsnd");
    let f16 = DType::Float16;
    // (op, dtype, x shape, y transfers must reach 16 KiB): every way a tile moves, each checked
    // bit for bit against the reference.
    let cases: [(&OpSpec, DType, [usize; 4], bool); 8] = [
        // p-major, whole Q per tile: x in one burst, y in N runs of S rows (Qwen2-7B kv).
        (&there, f16, [1, 4096, 4, 128], true),
        // q-major, whole P per tile: x in N runs, y in one run (Qwen2-7B kv).
        (&back, f16, [1, 4, 4096, 128], true),
        // p-major, part of Q: x in one strided transfer, several tiles per core.
        (&there, DType::Float32, [1, 300, 28, 128], true),
        // Rows of 144 bytes (not 32-byte multiples) with part of Q: x in one transfer per s.
        (&there, f16, [1, 512, 64, 72], true),
        // The same rows q-major: y in one transfer of whole-P rows with padding dropped.
        (&there, f16, [3, 5, 64, 72], true),
        // One head per tile: x as single strided rows (every 4th row), y in one run.
        (&there, f16, [1, 128, 4, 96], true),
        // Square: p-major, several tiles on some cores.
        (&back, f16, [1, 100, 100, 256], true),
        // Too small for 16 KiB transfers on any core.
        (&back, DType::Float32, [2, 3, 5, 7], false),
    ];
    for (spec, dtype, shape, long) in cases {
        let (row, _) = report_row(spec, dtype, &shape);
        let what = format!("{} {dtype} {shape:?}: {:?}", spec.name, row.checks);
        assert_eq!(row.bytes_ratio, 1.0, "{what}");
        assert_eq!(row.double_buffered_cores.0, row.double_buffered_cores.1, "{what}");
        assert_ne!(met(&row, "double buffering"), Some(false), "{what}");
        assert_eq!(row.cores_with_work, row.cores_launched, "{what}");
        let (name, mean) = row.main_stream.clone().unwrap();
        assert_eq!(name, "y");
        if long {
            assert!(mean >= 16384.0, "{what}: {mean} bytes per y transfer");
            assert_eq!(met(&row, "transfers"), Some(true), "{what}");
        } else {
            assert_eq!(met(&row, "transfers"), None, "{what}");
        }
    }
    // The Qwen2-7B shapes spread over all 48 cores; the 300 x 28 f32 one needs more tiles than
    // cores (its UB plan), and they overlap.
    for (spec, shape) in [(&there, [1, 4096, 4, 128]), (&back, [1, 4, 4096, 128])] {
        assert_eq!(report_row(spec, f16, &shape).0.cores_launched, 48);
    }
    let (row, _) = report_row(&there, DType::Float32, &[1, 300, 28, 128]);
    assert!(
        row.double_buffered_cores.1 > 0 && met(&row, "double buffering") == Some(true),
        "{:?}",
        row.checks
    );
}

#[test]
fn cache_runs_of_consecutive_slots_move_in_16_kib_transfers() {
    // int8 rows of 4 x 128 bytes: slot groups of 43 tokens (2 per core), so a prefill's run of
    // consecutive slots moves 21.5 KiB per transfer instead of groups of 22 (11 KiB).
    let spec = op("reshape_and_cache");
    let (row, _) = report_row(&spec, DType::Int8, &[2048, 4, 128]);
    for cache in ["key_cache", "value_cache"] {
        let t = &row.tensors[cache].traffic;
        assert!(t.write_bytes as f64 / t.write_transfers as f64 >= 16384.0, "{cache}: {t:?}");
    }
    assert_eq!(met(&row, "transfers"), Some(true), "{:?}", row.checks);
    assert_eq!(met(&row, "double buffering"), Some(true), "{:?}", row.checks);
    // Every core reads the whole slot mapping: the price of the later token winning on every
    // core count (a core cannot know whether another core's token names its slot without
    // reading it). Everything else moves once.
    let slots = &row.tensors["slot_mapping"];
    assert_eq!(slots.traffic.read_bytes, 48 * 2048 * 4);
    assert_eq!(row.gm_bytes - row.min_bytes, 47 * 2048 * 4);
}
