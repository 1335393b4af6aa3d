//! The catalogue's elementwise ops on hostile values, through the twin runner: ±0, NaN, ±Inf,
//! the largest float16, subnormals, and the deep negative tails where a naive 1 + erf(·) or
//! 1/(1 + e^−z) would lose the bfloat16 result; every element within the family's bar of the
//! hand-written reference, NaN/Inf positions equal. Also: shapes the host code refuses, and
//! empty tensors.

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::OpSpec;
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::compare::compare;
use ascend_opgen::verify::{
    build_runner, expected_outputs, run_case, BuildOptions, CaseInput, CaseRun, TwinError,
};
use ascend_opgen::DType;

fn op(name: &str) -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == name).unwrap_or_else(|| panic!("`{name}` is not in the catalogue"))
}

fn run(spec: &OpSpec, dtype: DType, inputs: &[(String, HostTensor)]) -> Result<CaseRun, TwinError> {
    let project = render_project(&[spec]).unwrap();
    let column = spec.column_for(dtype).unwrap();
    let runner = build_runner(&project, spec, column, BuildOptions::default()).unwrap();
    run_case(
        &runner,
        spec,
        soc::find(soc::DEFAULT_SOC).unwrap(),
        &CaseInput { inputs, attrs: &[], inplace: &[] },
        false,
    )
}

/// Values every dtype can hold (rounded to it), plus dtype-specific extremes.
fn hostile(dtype: DType) -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.5,
        -0.5,
        3.0,
        -3.0,
        1e-4,
        -1e-4,
        5.0,
        -5.0,
        -7.5,
        -10.0,
        -10.2,
        -13.0,
        -20.0,
        -40.0,
        -88.0,
        -90.0,
        -100.0,
        90.0,
        1000.0,
        -1000.0,
    ];
    match dtype {
        DType::Float16 => v.extend([65504.0, -65504.0, 2f64.powi(-24), -(2f64.powi(-20)), 6.1e-5]),
        _ => v.extend([3e38, -3e38, 1e-39, -1e-39, 1e-30, 12345.0]),
    }
    while v.len() % 8 != 7 {
        v.push(v.len() as f64 * -0.37);
    }
    v
}

fn tensor(dtype: DType, values: &[f64]) -> HostTensor {
    HostTensor::from_f64(dtype, &[1, values.len()], values)
}

#[test]
fn hostile_values_meet_the_bar_and_nan_inf_propagate() {
    for name in ["gelu_tanh", "gelu_erf", "fast_gelu", "swiglu"] {
        let spec = op(name);
        for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
            let values = hostile(dtype);
            let mut inputs = vec![(spec.inputs[0].name.clone(), tensor(dtype, &values))];
            if spec.inputs.len() == 2 {
                // up: the same values, rotated, so NaN/Inf meet finite gates and the reverse.
                // Finite magnitudes above 1e4 become ±7: silu(-100) = -3.7e-42 is a float32
                // subnormal with a few significant bits, and an `up` of 3e38 would scale that
                // loss into a normal bfloat16 result (any float32 evaluation has it).
                let mut up: Vec<f64> = values
                    .iter()
                    .map(|v| if v.is_finite() && v.abs() > 1e4 { 7f64.copysign(*v) } else { *v })
                    .collect();
                up.rotate_left(5);
                inputs.push((spec.inputs[1].name.clone(), tensor(dtype, &up)));
            }
            let out = run(&spec, dtype, &inputs).unwrap_or_else(|e| panic!("{name} {dtype}: {e}"));
            let expected = expected_outputs(&spec, &inputs, &[]).unwrap();
            let actual = &out.outputs[0].1;
            let c = compare(actual, &expected[0].values, expected[0].tolerance);
            assert!(c.passed(), "{name} {dtype}: {c}");
            // NaN in, NaN out; +Inf in gives +Inf, -Inf gives NaN (x * sigmoid(x) at -inf).
            if spec.inputs.len() == 1 {
                assert!(actual.get_f64(4).is_nan(), "{name} {dtype}: NaN");
                assert_eq!(actual.get_f64(5), f64::INFINITY, "{name} {dtype}: +Inf");
                assert!(actual.get_f64(6).is_nan(), "{name} {dtype}: -Inf");
            }
        }
    }
}

#[test]
fn inputs_of_different_shapes_are_refused_with_the_reason() {
    let spec = op("swiglu");
    let inputs = vec![
        ("gate".to_string(), HostTensor::from_f64(DType::Float32, &[2, 8], &[1.0; 16])),
        ("up".to_string(), HostTensor::from_f64(DType::Float32, &[2, 4], &[1.0; 8])),
    ];
    match run(&spec, DType::Float32, &inputs) {
        Err(TwinError::HostRejected(m)) => {
            assert!(m.contains("input up must have the shape of input gate"), "{m}")
        }
        other => panic!("expected a host rejection, got {other:?}"),
    }
}

#[test]
fn empty_tensors_launch_nothing() {
    let spec = op("gelu_erf");
    let inputs = vec![("x".to_string(), HostTensor::from_f64(DType::Float16, &[0, 7], &[]))];
    let out = run(&spec, DType::Float16, &inputs).unwrap();
    assert_eq!(out.outputs[0].1.shape, vec![0, 7]);
    assert_eq!(out.report["launched"], false, "{}", out.report);
}
