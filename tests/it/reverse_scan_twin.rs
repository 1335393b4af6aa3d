//! gae on the twin with hand-made rows whose answers follow by hand from verl's loop (not from
//! src/reference), exact in float32 (integers and powers of two): the unit-discount suffix count
//! across chunks, the next value carried over masked tokens across a chunk boundary, a lone
//! unmasked token, all-masked rows, a geometric discount; a row's bits independent of its batch;
//! and the host's refusals with their reasons.

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, CaseInput, CaseRun, TwinError};
use ascend_opgen::DType;

fn spec() -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == "gae").unwrap()
}

fn attrs(gamma: f64, lam: f64) -> Vec<(String, AttrValue)> {
    vec![("gamma".into(), AttrValue::Float(gamma)), ("lam".into(), AttrValue::Float(lam))]
}

/// The dtype combination of `spec` with these rewards and mask dtypes.
fn column(spec: &OpSpec, rewards: DType, mask: DType) -> usize {
    let last = spec.inputs.len() - 1;
    (0..spec.columns())
        .find(|&c| spec.inputs[0].dtypes[c] == rewards && spec.inputs[last].dtypes[c] == mask)
        .unwrap_or_else(|| panic!("{}: no combination {rewards}/{mask}", spec.name))
}

/// Runs gae on rows of `t` steps: (rewards, values, mask), each rows × t, row-major, all float32.
fn run_shaped(
    spec: &OpSpec,
    shapes: [&[usize]; 3],
    data: [&[f64]; 3],
    gamma: f64,
    lam: f64,
    plan_only: bool,
) -> Result<CaseRun, TwinError> {
    let f32 = column(spec, DType::Float32, DType::Float32);
    run_in(spec, f32, &shapes, &data, &attrs(gamma, lam), plan_only)
}

/// Runs dtype combination `column` of `spec` on inputs of these shapes and values (each exact in
/// its combination's dtype).
fn run_in(
    spec: &OpSpec,
    column: usize,
    shapes: &[&[usize]],
    data: &[&[f64]],
    attrs: &[(String, AttrValue)],
    plan_only: bool,
) -> Result<CaseRun, TwinError> {
    let project = render_project(&[spec]).unwrap();
    let runner = build_runner(&project, spec, column, BuildOptions::default()).unwrap();
    let inputs: Vec<(String, HostTensor)> = spec
        .inputs
        .iter()
        .zip(shapes.iter().zip(data))
        .map(|(arg, (shape, x))| (arg.name.clone(), HostTensor::from_f64(arg.dtypes[column], shape, x)))
        .collect();
    run_case(
        &runner,
        spec,
        soc::find(soc::DEFAULT_SOC).unwrap(),
        &CaseInput { inputs: &inputs, attrs, inplace: &[] },
        plan_only,
    )
}

fn run(
    spec: &OpSpec,
    t: usize,
    r: &[f64],
    v: &[f64],
    m: &[f64],
    gamma: f64,
    lam: f64,
) -> (Vec<f64>, Vec<f64>) {
    let (adv, ret, _) = run_plan(spec, t, r, v, m, gamma, lam);
    (adv, ret)
}

/// [`run`], and the plan's steps per segment of the time split (0 in the sequential mode).
fn run_plan(
    spec: &OpSpec,
    t: usize,
    r: &[f64],
    v: &[f64],
    m: &[f64],
    gamma: f64,
    lam: f64,
) -> (Vec<f64>, Vec<f64>, usize) {
    let shape = [r.len() / t, t];
    let run = run_shaped(spec, [&shape, &shape, &shape], [r, v, m], gamma, lam, false).unwrap();
    let out = |name: &str| run.outputs.iter().find(|(n, _)| n == name).unwrap().1.to_f64();
    (out("advantages"), out("returns"), split_segment(&run))
}

/// The time split's steps per segment in the plan that ran, 0 in the sequential mode.
fn split_segment(run: &CaseRun) -> usize {
    let field = |n: &str| run.parsed.tiling.get(n).and_then(|v| v.as_u64()).unwrap();
    if field("segments") > 1 {
        field("segment") as usize
    } else {
        0
    }
}

#[test]
fn hand_computed_rows_across_chunks() {
    let spec = spec();
    // T = 1001: more than one chunk (at most 512 steps) per row in the sequential order; the
    // time split's 8 segments of 128 (the first walked 105 long).
    let t = 1001usize;
    let rows = 5usize;
    let (mut r, mut v, mut m) = (vec![0.0; rows * t], vec![0.0; rows * t], vec![0.0; rows * t]);
    // Row 0: r = 1, V = 0, all tokens: with γ = λ = 1, A_t = T − t.
    r[..t].fill(1.0);
    m[..t].fill(1.0);
    // Row 1: r = 0, V_t = t, mask 1 on even t only; γ = 1 and λ = 1: delta_t = V_next − V_t
    // where V_next is the next unmasked value (0 past the last), so at even t < 1000:
    // delta = 2, at t = 1000: delta = −1000; A_t = Σ of deltas from t on = (1000 − t) − 1000 = −t
    // at even t, and a masked (odd) t carries A_{t+1} = −(t + 1). Returns = A + V.
    for i in 0..t {
        v[t + i] = i as f64;
        m[t + i] = f64::from(u8::from(i % 2 == 0));
    }
    // Row 2: all masked: A = 0, returns = V (V_t = 3).
    v[2 * t..3 * t].fill(3.0);
    // Row 3: one token unmasked, at t = 600 (r = 5, V = 2 there, V = 7 elsewhere):
    // A = delta = 5 − 2 = 3 for t ≤ 600, 0 after.
    v[3 * t..4 * t].fill(7.0);
    r[3 * t + 600] = 5.0;
    v[3 * t + 600] = 2.0;
    m[3 * t + 600] = 1.0;
    // Row 4: r = 2 at every token, V = 2: delta = 2 + V_{t+1} − 2 = 2 except delta_{T−1} = 0.
    r[4 * t..5 * t].fill(2.0);
    v[4 * t..5 * t].fill(2.0);
    m[4 * t..5 * t].fill(1.0);
    let (adv, ret, segment) = run_plan(&spec, t, &r, &v, &m, 1.0, 1.0);
    // T = 1001 goes in segments of 128 over the cores: row 1's holes and row 3's lone token
    // cross the joins (segments without an unmasked step are the identity).
    assert_eq!(segment, 128, "the time split");
    for i in 0..t {
        let at = |row: usize| row * t + i;
        assert_eq!(adv[at(0)], (t - i) as f64, "row 0, t = {i}");
        let want1 = if i % 2 == 0 { -(i as f64) } else { -((i + 1) as f64) };
        assert_eq!(adv[at(1)], want1, "row 1 (masked holes), t = {i}");
        assert_eq!(ret[at(1)], want1 + i as f64, "row 1 returns, t = {i}");
        assert_eq!((adv[at(2)], ret[at(2)]), (0.0, 3.0), "row 2 (all masked), t = {i}");
        assert_eq!(adv[at(3)], if i <= 600 { 3.0 } else { 0.0 }, "row 3 (one token), t = {i}");
        assert_eq!(adv[at(4)], 2.0 * (t - 1 - i) as f64, "row 4, t = {i}");
        assert_eq!(ret[at(4)], 2.0 * (t - 1 - i) as f64 + 2.0, "row 4 returns, t = {i}");
    }
}

#[test]
fn a_geometric_discount_halves_per_step() {
    // γ = 0.5, λ = 1, V = 0, r = 1 at the last token: A_t = 0.5^(T−1−t), exact in float32.
    let spec = spec();
    let t = 120usize;
    let mut r = vec![0.0; t];
    r[t - 1] = 1.0;
    let (adv, _) = run(&spec, t, &r, &vec![0.0; t], &vec![1.0; t], 0.5, 1.0);
    for (i, a) in adv.iter().enumerate() {
        assert_eq!(*a, 0.5f64.powi((t - 1 - i) as i32), "t = {i}");
    }
}

#[test]
fn a_rows_bits_do_not_depend_on_the_batch() {
    // Row k of a 200-row batch (5 rows a core, lanes of 8) against the same row alone.
    let spec = spec();
    let t = 77usize;
    let rows = 200usize;
    let f = |i: usize, p: usize| ((i * p % 1013) as f64 - 506.0) / 97.0;
    let r: Vec<f64> = (0..rows * t).map(|i| f(i, 7919)).collect();
    let v: Vec<f64> = (0..rows * t).map(|i| f(i, 104_729)).collect();
    let m: Vec<f64> = (0..rows * t).map(|i| f64::from(u8::from(i % 5 != 0))).collect();
    let (adv, ret) = run(&spec, t, &r, &v, &m, 0.99, 0.95);
    for k in [0usize, 101, 199] {
        let s = k * t..(k + 1) * t;
        let (a1, r1) = run(&spec, t, &r[s.clone()], &v[s.clone()], &m[s.clone()], 0.99, 0.95);
        let bits = |x: &[f64]| x.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a1), bits(&adv[s.clone()]), "row {k}: advantages");
        assert_eq!(bits(&r1), bits(&ret[s]), "row {k}: returns");
    }
}

#[test]
fn host_code_rejects_bad_shapes_and_attrs_with_the_reason() {
    let spec = spec();
    let why = |r: Result<CaseRun, TwinError>| match r {
        Err(TwinError::HostRejected(why)) => why,
        other => panic!("expected a host rejection, got {other:?}"),
    };
    let z = vec![0.0; 30];
    let w = why(run_shaped(&spec, [&[3, 10], &[3, 10], &[10, 3]], [&z, &z, &z], 1.0, 1.0, true));
    assert!(
        w.contains("token_level_rewards (rank 2, 30 elements), values (rank 2, 30) and response_mask"),
        "{w}"
    );
    assert!(w.contains("must have one shape [batch..., T]"), "{w}");
    let w = why(run_shaped(&spec, [&[3, 10]; 3], [&z, &z, &z], f64::INFINITY, 1.0, true));
    assert!(w.contains("gamma inf and lam 1 must be finite"), "{w}");
}

#[test]
fn the_error_at_t_32768_with_unit_discount_stays_within_the_running_bound() {
    // γ = λ = 1 (verl's defaults), every token unmasked: the float32 error grows with T. The
    // kernel's worst error against the f64 loop must lie within the reference's running bound;
    // the figures are printed for the documentation (--nocapture).
    let spec = spec();
    let (rows, t) = (2usize, 32768usize);
    let f = |i: usize, p: usize| ((i * p % 1009) as f64 - 504.0) / 100.0;
    let r: Vec<f64> = (0..rows * t).map(|i| f(i, 7919) as f32 as f64).collect();
    let v: Vec<f64> = (0..rows * t).map(|i| f(i, 104_729) as f32 as f64).collect();
    let m = vec![1.0; rows * t];
    let (adv, ret, segment) = run_plan(&spec, t, &r, &v, &m, 1.0, 1.0);
    // Two rows of T = 32768: the time split, 48 segments of 683 steps over the cores. Its
    // bound: the running bound of the split's evaluation order (the zero-carry scans, the
    // joins, the rescans), not the sequential loop's.
    assert_eq!(segment, 683, "the time split");
    let reference = ascend_opgen::reference::reverse_scan::gae;
    let seq_bound = reference(&r, &v, &m, t, 1.0, 1.0).unwrap().adv_bound.iter().copied().fold(0.0, f64::max);
    let exact = ascend_opgen::reference::reverse_scan::gae_split(&r, &v, &m, t, 1.0, 1.0, segment).unwrap();
    let worst =
        |got: &[f64], want: &[f64]| got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
    let (e_adv, e_ret) = (worst(&adv, &exact.advantages), worst(&ret, &exact.returns));
    let b_adv = exact.adv_bound.iter().copied().fold(0.0, f64::max);
    let scale = exact.advantages.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    eprintln!(
        "gae T = {t}, γ = λ = 1, segments of {segment}: max |A| = {scale:.3}, error {e_adv:.3e} (returns \
         {e_ret:.3e}), bound {b_adv:.3e} (the sequential order's {seq_bound:.3e})"
    );
    for (i, (g, w)) in adv.iter().zip(&exact.advantages).enumerate() {
        // 1.001: the bound's first-order terms only (its products of two roundings left out).
        assert!((g - w).abs() <= exact.adv_bound[i] * 1.001, "element {i}: {g} vs {w}");
    }
    assert!(e_ret <= exact.ret_bound.iter().copied().fold(0.0, f64::max) * 1.001);
}

fn discounted(spec: &OpSpec, t: usize, r: &[f64], m: &[f64], gamma: f64) -> (Vec<f64>, usize) {
    let shape = [r.len() / t, t];
    let attrs = vec![("gamma".to_string(), AttrValue::Float(gamma))];
    let f32 = column(spec, DType::Float32, DType::Float32);
    let run = run_in(spec, f32, &[&shape, &shape], &[r, m], &attrs, false).unwrap();
    (run.outputs.iter().find(|(n, _)| n == "returns").unwrap().1.to_f64(), split_segment(&run))
}

#[test]
fn discounted_returns_reset_at_masked_tokens_across_chunks() {
    // T = 1001, γ = 1, r = 1: R_t counts the tokens from t to the end of t's episode, which ends
    // at the first masked token after t (verl resets the sum after writing a masked token's own
    // return). Row 0: no mask, R_t = T − t. Row 1: masked at t = 0, 300, 600, 900.
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let spec = specs.into_iter().find(|s| s.name == "discounted_return").unwrap();
    let t = 1001usize;
    let r = vec![1.0; 2 * t];
    let mut m = vec![1.0; 2 * t];
    for i in (0..t).step_by(300) {
        m[t + i] = 0.0;
    }
    let (got, segment) = discounted(&spec, t, &r, &m, 1.0);
    // The time split's 8 segments of 128: the resets at 300 and 600 inside segments, the sums
    // carried across the joins.
    assert_eq!(segment, 128, "the time split");
    for i in 0..t {
        assert_eq!(got[i], (t - i) as f64, "row 0, t = {i}");
        // The first masked token after t: the next multiple of 300 (none past 900).
        let next_masked = (i / 300 + 1) * 300;
        let want = if next_masked < t { next_masked - i } else { t - i };
        assert_eq!(got[t + i], want as f64, "row 1, t = {i}");
    }
    // γ = 0.5, one reward at the end: R_t = 0.5^(T−1−t) up to the first reset, 0 before it.
    let (t, mut r, mut m) = (100usize, vec![0.0; 100], vec![1.0; 100]);
    r[t - 1] = 1.0;
    m[40] = 0.0;
    let (got, _) = discounted(&spec, t, &r, &m, 0.5);
    for (i, g) in got.iter().enumerate() {
        let want = if i >= 40 { 0.5f64.powi((t - 1 - i) as i32) } else { 0.0 };
        assert_eq!(*g, want, "γ = 0.5, t = {i}");
    }
}

#[test]
fn every_input_dtype_gives_the_float32_bits_of_the_same_values() {
    // Rewards and values k/8, |k| <= 64 (exact in bfloat16 and float16), a mask with holes and
    // all-masked rows: every combination reads the same numbers, Casts them exactly to float32
    // and runs the same float32 loop, so its outputs are the float32/float32 combination's bits.
    // A Cast from the wrong dtype (bfloat16 bits read as half, int8 as half bits) or a skipped
    // one changes them. 70 rows of T = 1001: several chunks for every chunk unit (8, 16, 32).
    let (rows, t) = (70usize, 1001usize);
    let shape = [rows, t];
    let k = |i: usize, p: usize| ((i * p % 129) as f64 - 64.0) / 8.0;
    let r: Vec<f64> = (0..rows * t).map(|i| k(i, 7919)).collect();
    let v: Vec<f64> = (0..rows * t).map(|i| k(i, 104_729)).collect();
    let m: Vec<f64> = (0..rows * t).map(|i| f64::from(u8::from(i % 7 != 0 && (i / t) % 9 != 4))).collect();
    let catalogue = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    for op in ["gae", "discounted_return"] {
        let spec = catalogue.iter().find(|s| s.name == op).unwrap();
        let gae = op == "gae";
        let data: Vec<&[f64]> = if gae { vec![&r, &v, &m] } else { vec![&r, &m] };
        let shapes: Vec<&[usize]> = data.iter().map(|_| &shape[..]).collect();
        let attrs: Vec<(String, AttrValue)> = spec
            .attrs
            .iter()
            .map(|a| (a.name.clone(), AttrValue::Float(if a.name == "lam" { 0.95 } else { 0.99 })))
            .collect();
        let outputs = |c: usize| {
            let run = run_in(spec, c, &shapes, &data, &attrs, false).unwrap();
            run.outputs.iter().map(|(n, x)| (n.clone(), x.to_f64())).collect::<Vec<_>>()
        };
        let want = outputs(column(spec, DType::Float32, DType::Float32));
        assert!(want.iter().all(|(_, x)| x.iter().any(|e| *e != 0.0)), "{op}: a zero output");
        for rewards in [DType::Float16, DType::BFloat16, DType::Float32] {
            for mask in [DType::Float32, DType::Int8] {
                let c = column(spec, rewards, mask);
                for ((name, got), (_, want)) in outputs(c).iter().zip(&want) {
                    let bits = |x: &[f64]| x.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
                    let first = got.iter().zip(want).position(|(a, b)| a.to_bits() != b.to_bits());
                    assert!(
                        bits(got) == bits(want),
                        "{op} {rewards}/{mask}: {name} differs from float32/float32 first at element {first:?}"
                    );
                }
            }
        }
    }
}
