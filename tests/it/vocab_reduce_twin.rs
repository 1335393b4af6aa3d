//! logprob_entropy on the twin with hand-made rows whose answers follow in closed form (not
//! from src/reference): all-equal rows (lse = c + ln V, entropy = ln V) and two-level rows
//! (one logit a, the rest 0) across several tiles with the odd one in the last tile's tail;
//! ignore_index and temperature; a row's bits independent of the batch it is in; and the host's
//! refusals with their reasons.

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, CaseInput, CaseRun, TwinError};
use ascend_opgen::DType;

fn spec() -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == "logprob_entropy").unwrap()
}

fn column(spec: &OpSpec, dtype: DType) -> usize {
    spec.inputs[0].dtypes.iter().position(|d| *d == dtype).unwrap()
}

fn attrs(temperature: f64, ignore: i64) -> Vec<(String, AttrValue)> {
    vec![
        ("temperature".into(), AttrValue::Float(temperature)),
        ("ignore_index".into(), AttrValue::Int(ignore)),
    ]
}

fn run(
    spec: &OpSpec,
    dtype: DType,
    logits: HostTensor,
    target: &[i64],
    attrs: &[(String, AttrValue)],
    plan_only: bool,
) -> Result<CaseRun, TwinError> {
    let col = column(spec, dtype);
    let project = render_project(&[spec]).unwrap();
    let runner = build_runner(&project, spec, col, BuildOptions::default()).unwrap();
    let t = HostTensor::from_i64(DType::Int32, &[target.len()], target);
    let inputs = vec![("logits".to_string(), logits), ("target".to_string(), t)];
    run_case(
        &runner,
        spec,
        soc::find(soc::DEFAULT_SOC).unwrap(),
        &CaseInput { inputs: &inputs, attrs, inplace: &[] },
        plan_only,
    )
}

fn out(run: &CaseRun, name: &str) -> Vec<f64> {
    run.outputs.iter().find(|(n, _)| n == name).unwrap().1.to_f64()
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want} (tolerance {tol})");
}

#[test]
fn closed_form_rows_across_tiles_with_ignore_and_temperature() {
    let spec = spec();
    // V = 20011 (prime): three tiles of 8192, the last one 3627 long.
    let v = 20011usize;
    let (a, c, t) = (6.0f64, 1.5f64, 2.0f64);
    for dtype in [DType::BFloat16, DType::Float32] {
        // Row 0: all c. Row 1: 0 except a at the last element. Row 2: ignored (target 7 =
        // ignore_index, all 0). Row 3: 0 except a at its target, element 8195 (second tile's start + 3).
        let mut x = vec![0.0; 4 * v];
        x[..v].iter_mut().for_each(|e| *e = c);
        x[2 * v - 1] = a;
        x[3 * v + 8195] = a;
        let logits = HostTensor::from_f64(dtype, &[4, v], &x);
        let r = run(&spec, dtype, logits, &[5, (v - 1) as i64, 7, 8195], &attrs(t, 7), false).unwrap();
        let (lp, ent, lse) = (out(&r, "logprob"), out(&r, "entropy"), out(&r, "lse"));
        let vf = v as f64;
        let tol = 1e-5;
        // All equal: z = c/T everywhere.
        close(lse[0], c / t + vf.ln(), tol, "lse, all equal");
        close(lp[0], -vf.ln(), tol, "logprob, all equal");
        close(ent[0], vf.ln(), tol, "entropy, all equal");
        // Two levels: z = a/T once, 0 else: S = (V-1) + e^(a/T), p* = e^(a/T)/S, p0 = 1/S,
        // H = -(p* ln p* + (V-1) p0 ln p0).
        let b = a / t;
        let s = (vf - 1.0) + b.exp();
        let (pb, p0) = (b.exp() / s, 1.0 / s);
        let h = -(pb * pb.ln() + (vf - 1.0) * p0 * p0.ln());
        for row in [1, 3] {
            close(lse[row], s.ln(), tol, "lse, two levels");
            close(lp[row], b - s.ln(), tol, "logprob at the odd logit");
            close(ent[row], h, tol, "entropy, two levels");
        }
        assert_eq!((lp[2], ent[2]), (0.0, 0.0), "{dtype}: the ignored row");
        close(lse[2], vf.ln(), tol, "lse of the ignored row, all 0 (computed as any row)");
    }
}

#[test]
fn a_rows_bits_do_not_depend_on_the_batch() {
    // Row r of a 97-row batch (3 rows a core on 33 cores) against the same row alone (1 core).
    let spec = spec();
    let v = 9001usize;
    let rows = 97usize;
    let x: Vec<f64> = (0..rows * v).map(|i| ((i * 7919 % 1013) as f64 - 506.0) / 97.0).collect();
    let target: Vec<i64> = (0..rows).map(|r| (r * 131 % v) as i64).collect();
    let batch = HostTensor::from_f64(DType::Float16, &[rows, v], &x);
    let all = run(&spec, DType::Float16, batch, &target, &attrs(1.0, -100), false).unwrap();
    for r in [0usize, 50, 96] {
        let one = HostTensor::from_f64(DType::Float16, &[1, v], &x[r * v..(r + 1) * v]);
        let alone = run(&spec, DType::Float16, one, &target[r..r + 1], &attrs(1.0, -100), false).unwrap();
        for name in ["logprob", "entropy", "lse"] {
            assert_eq!(out(&alone, name)[0].to_bits(), out(&all, name)[r].to_bits(), "row {r}: {name}");
        }
    }
}

#[test]
fn host_code_rejects_bad_shapes_and_attrs_with_the_reason() {
    let spec = spec();
    let z = |shape: &[usize]| HostTensor::zeros(DType::Float32, shape);
    let why = |r: Result<CaseRun, TwinError>| match r {
        Err(TwinError::HostRejected(why)) => why,
        other => panic!("expected a host rejection, got {other:?}"),
    };
    let w = why(run(&spec, DType::Float32, z(&[3, 10]), &[0, 1], &attrs(1.0, -100), true));
    assert!(w.contains("target (rank 1, 2 elements) must have logits' leading dims"), "{w}");
    let w = why(run(&spec, DType::Float32, z(&[2, 10]), &[0, 1], &attrs(0.0, -100), true));
    assert!(w.contains("temperature 0 must be positive and finite"), "{w}");
    let w = why(run(&spec, DType::Float32, z(&[1, 600_000]), &[0], &attrs(1.0, -100), true));
    assert!(w.contains("V = 600000 needs 74 tiles of 8192"), "{w}");
}
