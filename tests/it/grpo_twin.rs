//! grpo_advantage on the twin with inputs whose answers follow by hand from verl's formula (not
//! from src/reference): a group spread over ten cores with scores 1 and 3 (mean 2, unbiased
//! std √(10/9)) among one-row groups (mean 0, std 1); the rows of one group all get the same
//! bits; a row's score has the same bits whatever the batch, its position and the core count;
//! and the host's refusals with their reasons.

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::family::whiten::grpo;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, CaseInput, CaseRun, Runner, TwinError};
use ascend_opgen::DType;

fn spec() -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == "grpo_advantage").unwrap()
}

fn runner(spec: &OpSpec, rewards: DType, mask: DType) -> (Runner, usize) {
    let c = (0..spec.columns())
        .find(|&c| spec.inputs[0].dtypes[c] == rewards && spec.inputs[1].dtypes[c] == mask)
        .unwrap_or_else(|| panic!("no combination {rewards}/{mask}"));
    let project = render_project(&[spec]).unwrap();
    (build_runner(&project, spec, c, BuildOptions::default()).unwrap(), c)
}

/// One run: rewards and mask [ids.len(), t] row-major, on `cores` vector cores.
#[allow(clippy::too_many_arguments)]
fn run(
    spec: &OpSpec,
    (runner, c): &(Runner, usize),
    t: usize,
    r: &[f64],
    m: &[f64],
    ids: &[f64],
    norm_by_std: bool,
    cores: u32,
) -> Result<CaseRun, TwinError> {
    let b = ids.len();
    let inputs = vec![
        ("token_level_rewards".to_string(), HostTensor::from_f64(spec.inputs[0].dtypes[*c], &[b, t], r)),
        ("response_mask".to_string(), HostTensor::from_f64(spec.inputs[1].dtypes[*c], &[b, t], m)),
        ("index".to_string(), HostTensor::from_f64(DType::Int32, &[b], ids)),
    ];
    let attrs = vec![
        ("epsilon".to_string(), AttrValue::Float(1e-6)),
        ("norm_by_std".to_string(), AttrValue::Bool(norm_by_std)),
    ];
    let soc = soc::Soc { vector_cores: cores, ..*soc::find(soc::DEFAULT_SOC).unwrap() };
    run_case(runner, spec, &soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, false)
}

fn advantages(run: &CaseRun) -> Vec<f64> {
    run.outputs.iter().find(|(n, _)| n == "advantages").unwrap().1.to_f64()
}

const B: usize = 96;
const T: usize = 5;

/// Group 3 at rows 0, 10, ..., 90 (ten rows, one per core on 48 cores) with scores 1 and 3
/// alternately, split over two tokens; every other row alone in its group (id 100 + row) with
/// score row − 40. Row r's mask: its first 1 + r mod 5 tokens.
fn spread_group() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut r = vec![0.0; B * T];
    let mut m = vec![0.0; B * T];
    let mut ids = vec![0.0; B];
    for row in 0..B {
        let score = if row % 10 == 0 { [1.0, 3.0][(row / 10) % 2] } else { row as f64 - 40.0 };
        r[row * T] = score - 0.5;
        r[row * T + T - 1] = 0.5;
        (0..=row % T).for_each(|k| m[row * T + k] = 1.0);
        ids[row] = if row % 10 == 0 { 3.0 } else { 100.0 + row as f64 };
    }
    (r, m, ids)
}

fn within_ulps(got: f64, want: f64, ulps: f64) -> bool {
    (got - want).abs() <= ulps * f64::from(f32::EPSILON) * want.abs()
}

#[test]
fn a_group_over_ten_cores_and_singletons_by_hand() {
    let spec = spec();
    let (r, m, ids) = spread_group();
    let std = (10.0f64 / 9.0).sqrt(); // mean 2, Σ(s − 2)² = 10, unbiased var 10/9
    for dtypes in [(DType::Float32, DType::Float32), (DType::BFloat16, DType::Int8)] {
        let runner = runner(&spec, dtypes.0, dtypes.1);
        let normed = advantages(&run(&spec, &runner, T, &r, &m, &ids, true, 48).unwrap());
        let plain = advantages(&run(&spec, &runner, T, &r, &m, &ids, false, 48).unwrap());
        for row in 0..B {
            let s = r[row * T] + r[row * T + T - 1];
            let (want, want_plain) =
                if row % 10 == 0 { ((s - 2.0) / (std + 1e-6), s - 2.0) } else { (s / (1.0 + 1e-6), s) };
            for k in 0..T {
                let at = row * T + k;
                if m[at] == 0.0 {
                    assert_eq!((normed[at], plain[at]), (0.0, 0.0), "{dtypes:?} row {row} token {k}: masked");
                    continue;
                }
                assert!(within_ulps(normed[at], want, 4.0), "{dtypes:?} row {row}: {} vs {want}", normed[at]);
                assert_eq!(plain[at], want_plain, "{dtypes:?} row {row}: score − mean is exact here");
            }
        }
    }
}

#[test]
fn every_row_of_a_group_gets_the_same_bits() {
    // A group of 31 rows spread over the batch (every 3rd of 93 rows: cores of both parities on
    // 48 cores), five scores 0.47 + 0.1·k repeated: the count 31 makes the mean and std round,
    // and each core computes them itself; rows with equal scores must get equal bits. Shuffled
    // singleton ids in between.
    let spec = spec();
    let b = 93;
    let t = 3;
    let mut r = vec![0.0; b * t];
    let mut ids = vec![0.0; b];
    for row in 0..b {
        r[row * t] = 0.17 + 0.1 * ((row / 3) % 5) as f64 + (row % 3) as f64 * 1e-3;
        r[row * t + 1] = 0.3;
        ids[row] = if row % 3 == 0 { 7.0 } else { (1000 + (row * 37) % 500) as f64 };
    }
    let m = vec![1.0; b * t];
    let runner = runner(&spec, DType::Float32, DType::Float32);
    let got = advantages(&run(&spec, &runner, t, &r, &m, &ids, true, 48).unwrap());
    for k in 0..5 {
        let rows: Vec<usize> = (0..b).filter(|row| row % 3 == 0 && (row / 3) % 5 == k).collect();
        let bits: Vec<u32> = rows.iter().map(|row| (got[row * t] as f32).to_bits()).collect();
        assert!(bits.iter().all(|x| *x == bits[0]), "score class {k}, rows {rows:?}: {bits:x?}");
    }
    assert!(got[0] < 0.0 && got[12 * t] > 0.0, "{} {}", got[0], got[12 * t]);
}

#[test]
fn a_rows_score_has_the_same_bits_in_any_batch_and_on_any_core_count() {
    // One-row groups without the std: advantages = score · mask, the score's own bits. Rows of
    // 4099 tokens (three tiles, the last short) of rewards that round differently in any other
    // summation order.
    let spec = spec();
    let t = 4099;
    let pool = 50;
    let r: Vec<f64> = (0..pool * t)
        .map(|k| ((k * 7919 % 10007) as f64 / 10007.0 - 0.5) * (1.0 + (k % 13) as f64))
        .collect();
    let m = vec![1.0; pool * t];
    let ids: Vec<f64> = (0..pool).map(|i| i as f64).collect();
    let runner = runner(&spec, DType::Float32, DType::Float32);
    let whole = advantages(&run(&spec, &runner, t, &r, &m, &ids, false, 48).unwrap());
    let score_bits = |a: &[f64], row: usize| (a[row * t] as f32).to_bits();
    for cores in [7, 1] {
        let got = advantages(&run(&spec, &runner, t, &r, &m, &ids, false, cores).unwrap());
        for row in 0..pool {
            assert_eq!(score_bits(&got, row), score_bits(&whole, row), "row {row} on {cores} cores");
        }
    }
    for (from, n) in [(20, 1), (10, 3), (1, 47)] {
        let slice = |v: &[f64], w: usize| v[from * w..(from + n) * w].to_vec();
        let got = advantages(
            &run(&spec, &runner, t, &slice(&r, t), &slice(&m, t), &slice(&ids, 1), false, 48).unwrap(),
        );
        for row in 0..n {
            assert_eq!(
                score_bits(&got, row),
                score_bits(&whole, from + row),
                "row {} in a batch of {n}",
                from + row
            );
        }
    }
    // And the TilingFunc's row tile is the one the reference's bound assumes.
    let plan = run(&spec, &runner, t, &r[..t], &m[..t], &[0.0], false, 48).unwrap().parsed;
    assert_eq!(plan.tiling.get("tile").and_then(|v| v.as_u64()), Some(grpo::row_tile(t) as u64));
}

#[test]
fn host_code_rejects_bad_shapes_and_epsilon_with_the_reason() {
    let spec = spec();
    let runner = runner(&spec, DType::Float32, DType::Float32);
    let expect = |res: Result<CaseRun, TwinError>, text: &str| match res {
        Err(TwinError::HostRejected(why)) => assert!(why.contains(text), "{why}"),
        other => panic!("expected a host rejection naming {text:?}, got {other:?}"),
    };
    let b = 4097;
    let z = vec![0.0; b];
    expect(
        run(&spec, &runner, 1, &z, &z, &z, true, 48),
        "token_level_rewards [4097, 1] has 4097 rows; at most 4096",
    );
    let z = vec![0.0; 6];
    // index with 2 rows against rewards [3, 2]: run() sizes index by ids.
    let inputs = vec![
        ("token_level_rewards".to_string(), HostTensor::from_f64(DType::Float32, &[3, 2], &z)),
        ("response_mask".to_string(), HostTensor::from_f64(DType::Float32, &[3, 2], &z)),
        ("index".to_string(), HostTensor::from_f64(DType::Int32, &[2], &z[..2])),
    ];
    let mut attrs = vec![
        ("epsilon".to_string(), AttrValue::Float(1e-6)),
        ("norm_by_std".to_string(), AttrValue::Bool(true)),
    ];
    let soc = *soc::find(soc::DEFAULT_SOC).unwrap();
    let go = |attrs: &[(String, AttrValue)], inputs: &[(String, HostTensor)]| {
        run_case(&runner.0, &spec, &soc, &CaseInput { inputs, attrs, inplace: &[] }, false)
    };
    expect(go(&attrs, &inputs), "index has 2 group ids; token_level_rewards [3, 2] has 3 rows");
    attrs[0].1 = AttrValue::Float(-1.0);
    let ok_inputs = vec![
        inputs[0].clone(),
        inputs[1].clone(),
        ("index".to_string(), HostTensor::from_f64(DType::Int32, &[3], &z[..3])),
    ];
    expect(go(&attrs, &ok_inputs), "epsilon -1 must be finite and >= 0");
}
