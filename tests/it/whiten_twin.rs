//! masked_whiten on the twin with inputs whose answers follow by hand from verl's formula (not
//! from src/reference), exact in float32: three selected values 1, 3, 5 (mean 3, unbiased
//! variance 4, so the scale rsqrt(4 + 1e-8) rounds to 0.5) spread over tiles and cores among
//! masked integers; NaN everywhere below 2 selected elements; every core's result from the same
//! mean and scale bits; and the host's refusal with its reason.

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, CaseInput, CaseRun, TwinError};
use ascend_opgen::DType;

fn spec() -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == "masked_whiten").unwrap()
}

fn column(spec: &OpSpec, values: DType, mask: DType) -> usize {
    (0..spec.columns())
        .find(|&c| spec.inputs[0].dtypes[c] == values && spec.inputs[1].dtypes[c] == mask)
        .unwrap_or_else(|| panic!("{}: no combination {values}/{mask}", spec.name))
}

/// Runs combination (values, mask dtypes) on inputs of these shapes and values (exact in them).
fn run_in(
    spec: &OpSpec,
    dtypes: (DType, DType),
    shapes: [&[usize]; 2],
    x: &[f64],
    m: &[f64],
    shift_mean: bool,
) -> Result<CaseRun, TwinError> {
    let c = column(spec, dtypes.0, dtypes.1);
    let project = render_project(&[spec]).unwrap();
    let runner = build_runner(&project, spec, c, BuildOptions::default()).unwrap();
    let inputs = vec![
        ("values".to_string(), HostTensor::from_f64(spec.inputs[0].dtypes[c], shapes[0], x)),
        ("response_mask".to_string(), HostTensor::from_f64(spec.inputs[1].dtypes[c], shapes[1], m)),
    ];
    let attrs = vec![("shift_mean".to_string(), AttrValue::Bool(shift_mean))];
    run_case(
        &runner,
        spec,
        soc::find(soc::DEFAULT_SOC).unwrap(),
        &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] },
        false,
    )
}

fn whitened(run: &CaseRun) -> Vec<f64> {
    run.outputs.iter().find(|(n, _)| n == "whitened").unwrap().1.to_f64()
}

/// 48 tiles and a bit: 49 tiles of 4096 on 48 cores, core 0 two of them, the last one short.
const N: usize = 48 * 4096 + 77;

/// Masked values k mod 17 (integers), selected 1, 3 and 5 at the first, a middle and the last
/// element (three different cores).
fn three_selected() -> (Vec<f64>, Vec<f64>) {
    let mut x: Vec<f64> = (0..N).map(|k| (k % 17) as f64).collect();
    let mut m = vec![0.0; N];
    for (at, v) in [(0, 1.0), (N / 2, 3.0), (N - 1, 5.0)] {
        x[at] = v;
        m[at] = 1.0;
    }
    (x, m)
}

#[test]
fn three_selected_values_across_cores_by_hand() {
    let spec = spec();
    let (x, m) = three_selected();
    for (dtypes, shift_mean) in [
        ((DType::Float32, DType::Float32), true),
        ((DType::Float16, DType::Int8), false),
        ((DType::BFloat16, DType::Int8), true),
    ] {
        let got = whitened(&run_in(&spec, dtypes, [&[N], &[N]], &x, &m, shift_mean).unwrap());
        // mean 3, var ((1-3)² + 0 + (5-3)²) / 2 = 4, fl(4 + 1e-8) = 4, rsqrt 0.5: y = (x - 3) / 2.
        for (k, (g, v)) in got.iter().zip(&x).enumerate() {
            let want = (v - 3.0) / 2.0 + if shift_mean { 0.0 } else { 3.0 };
            assert_eq!(*g, want, "{dtypes:?} shift_mean {shift_mean}: element {k} (x = {v})");
        }
    }
}

#[test]
fn fewer_than_two_selected_elements_give_nan_everywhere() {
    let spec = spec();
    let x: Vec<f64> = (0..5000).map(|k| (k % 9) as f64).collect();
    for selected in [vec![], vec![4321]] {
        let mut m = vec![0.0; x.len()];
        selected.iter().for_each(|&i| m[i] = 1.0);
        let got = whitened(
            &run_in(&spec, (DType::Float32, DType::Int8), [&[50, 100], &[50, 100]], &x, &m, false).unwrap(),
        );
        assert!(got.iter().all(|v| v.is_nan()), "{} selected: {:?}", selected.len(), &got[..4]);
    }
}

#[test]
fn every_core_whitens_with_the_same_mean_and_scale_bits() {
    // Selected values whose mean and variance round differently in different join orders; the
    // masked elements all 0.7: each core writes fl(fl(0.7 - mean)·scale) for them, so one bit
    // pattern throughout only when every core joined the partials in the same order.
    let spec = spec();
    let mut x = vec![0.7; N];
    let mut m = vec![0.0; N];
    for k in (0..N).step_by(3) {
        x[k] = ((k * 7919) % 1000) as f64 / 997.0 + (k as f64) * 1e-4;
        m[k] = 1.0;
    }
    let got = whitened(&run_in(&spec, (DType::Float32, DType::Float32), [&[N], &[N]], &x, &m, true).unwrap());
    let masked: Vec<u32> = (0..N).filter(|k| k % 3 != 0).map(|k| (got[k] as f32).to_bits()).collect();
    let first = masked[0];
    let other = masked.iter().position(|b| *b != first);
    assert_eq!(other, None, "masked element {other:?}'s bits differ from the first's ({first:#x})");
}

#[test]
fn host_code_rejects_mismatched_shapes_with_the_reason() {
    let spec = spec();
    let z = vec![0.0; 30];
    match run_in(&spec, (DType::Float32, DType::Float32), [&[3, 10], &[10, 3]], &z, &z, true) {
        Err(TwinError::HostRejected(why)) => assert!(
            why.contains("values (rank 2, 30 elements) and response_mask (rank 2, 30) must have one shape"),
            "{why}"
        ),
        other => panic!("expected a host rejection, got {other:?}"),
    }
}
