//! rotary_mul on the CPU twin: the quick verify sweep (1 ULP for 16-bit outputs, the CANN gate),
//! the kernel's arithmetic bit for bit against a model of CANN's (every dtype, float32
//! included), and the host tiling's rejections, each with its reason.

use ascend_opgen::app::gen::{load_specs, render};
use ascend_opgen::app::verify::{case_inputs, run_verify, VerifyOptions};
use ascend_opgen::family::rotary::mode_of;
use ascend_opgen::plan::soc;
use ascend_opgen::reference::rotary::RotaryMode;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::{c_strides, HostTensor};
use ascend_opgen::verify::{
    build_runner, cases, run_case, BuildOptions, CaseInput, Runner, Sweep, TwinError,
};
use ascend_opgen::DType;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn catalogue() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels").join("rotary_mul.toml")
}

/// The catalogue spec with every dtype column the kernel template supports (float32 included,
/// whatever the catalogue registers), written to a scratch directory.
fn all_dtypes_spec_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let text = std::fs::read_to_string(catalogue()).expect("kernels/rotary_mul.toml");
        let all = "dtypes = [\"float16\", \"bfloat16\", \"float32\"]";
        let text: String = text
            .lines()
            .map(|l| if l.starts_with("dtypes = ") { all.to_string() } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
        let dir = std::env::temp_dir().join(format!("opgen-rotary-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rotary_mul.toml"), text + "\n").unwrap();
        dir
    })
}

fn spec_and_runner(dir: Option<&Path>, dtype: DType) -> (OpSpec, Runner) {
    let specs = load_specs(dir, &["rotary_mul".to_string()]).expect("rotary_mul spec");
    let project = render(&specs).expect("render");
    let spec = specs.into_iter().next().unwrap();
    let column = spec.column_for(dtype).expect("dtype column");
    let runner = build_runner(&project, &spec, column, BuildOptions::default()).expect("twin runner");
    (spec, runner)
}

#[test]
fn quick_sweep_passes() {
    let report = run_verify(&VerifyOptions { ops: vec!["rotary_mul".into()], ..VerifyOptions::default() })
        .expect("verify runs");
    print!("{}", report.table());
    assert!(report.failures.is_empty(), "failures:\n{}", report.failures.join("\n"));
    assert!(report.rows.iter().all(|r| r.failures == 0 && r.cases > 0));
    for r in &report.rows {
        if matches!(r.dtype, DType::Float16 | DType::BFloat16) {
            assert!(r.max_ulp <= 1, "{} {}: {} ULP", r.op, r.dtype, r.max_ulp);
        }
    }
}

/// CANN's arithmetic (op-semantics §2.1) in f32, rounded once to the output dtype:
/// y = RNE(fl(fl(x·r1) + fl(x_rot·r2_signed))), two products and a sum, no FMA.
fn cann_model(x: &HostTensor, r1: &HostTensor, r2: &HostTensor, mode: RotaryMode) -> HostTensor {
    let d = x.shape[3];
    let strides = |r: &HostTensor| -> Vec<usize> {
        c_strides(&r.shape).into_iter().zip(&r.shape).map(|(s, &n)| if n == 1 { 0 } else { s }).collect()
    };
    let (s1, s2) = (strides(r1), strides(r2));
    let (xv, c, s) = (x.to_f64(), r1.to_f64(), r2.to_f64());
    let xs = c_strides(&x.shape);
    let mut y = Vec::with_capacity(xv.len());
    for flat in 0..xv.len() {
        let idx: Vec<usize> = (0..4).map(|k| flat / xs[k] % x.shape[k]).collect();
        let j = idx[3];
        let (partner, negative) = match mode {
            RotaryMode::Half if j < d / 2 => (j + d / 2, true),
            RotaryMode::Half => (j - d / 2, false),
            RotaryMode::Interleave if j % 2 == 0 => (j + 1, true),
            RotaryMode::Interleave => (j - 1, false),
        };
        let at = |st: &[usize]| idx.iter().zip(st).map(|(i, s)| i * s).sum::<usize>();
        let (cj, sj) = (c[at(&s1)] as f32, s[at(&s2)] as f32);
        let xj = xv[flat] as f32;
        let xp = xv[flat - j + partner] as f32;
        let p1 = xj * cj;
        let p2 = xp * if negative { -sj } else { sj };
        y.push(f64::from(p1 + p2));
    }
    HostTensor::from_f64(x.dtype, &x.shape, &y)
}

/// Every quick-sweep case in every dtype (float32 too) equals the model bit for bit: the kernel
/// computes exactly CANN's formula, whatever the tolerance of the comparison with the exact
/// reference.
#[test]
fn kernel_matches_cann_arithmetic_bit_for_bit() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
        let (spec, runner) = spec_and_runner(Some(all_dtypes_spec_dir()), dtype);
        let column = spec.column_for(dtype).unwrap();
        for case in cases(&spec, Sweep::Quick) {
            let inputs = case_inputs(&spec, column, &case);
            let run = run_case(
                &runner,
                &spec,
                soc,
                &CaseInput { inputs: &inputs, attrs: &case.attrs, inplace: &[] },
                false,
            )
            .unwrap_or_else(|e| panic!("{dtype} {}: {e}", case.label()));
            let y = &run.outputs[0].1;
            let want = cann_model(&inputs[0].1, &inputs[1].1, &inputs[2].1, mode_of(&case.attrs).unwrap());
            assert_eq!(y.shape, want.shape);
            for i in 0..y.numel() {
                let (a, b) = (y.get_f64(i), want.get_f64(i));
                let same = (a.is_nan() && b.is_nan()) || y.bits(i) == want.bits(i);
                assert!(same, "{dtype} {} element {i}: kernel {a:e}, CANN arithmetic {b:e}", case.label());
            }
        }
    }
}

/// Runs x, r1, r2 of the given shapes (zeros) with `mode` and returns the host's rejection.
fn rejection(runner: &Runner, spec: &OpSpec, x: &[usize], r1: &[usize], r2: &[usize], mode: &str) -> String {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let dtype = DType::Float16;
    let inputs = vec![
        ("x".to_string(), HostTensor::zeros(dtype, x)),
        ("r1".to_string(), HostTensor::zeros(dtype, r1)),
        ("r2".to_string(), HostTensor::zeros(dtype, r2)),
    ];
    let attrs = vec![("mode".to_string(), AttrValue::String(mode.to_string()))];
    match run_case(runner, spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, true) {
        Err(TwinError::HostRejected(why)) => why,
        Err(other) => panic!("x {x:?} r1 {r1:?} r2 {r2:?} {mode}: expected a host rejection, got {other}"),
        Ok(_) => panic!("x {x:?} r1 {r1:?} r2 {r2:?} {mode}: accepted, but the host must reject it"),
    }
}

/// A shape the host must refuse, and the words of its reason.
struct Refused {
    x: &'static [usize],
    r1: &'static [usize],
    r2: &'static [usize],
    mode: &'static str,
    reason: &'static str,
}

const fn refused(
    x: &'static [usize],
    r1: &'static [usize],
    r2: &'static [usize],
    mode: &'static str,
    reason: &'static str,
) -> Refused {
    Refused { x, r1, r2, mode, reason }
}

#[test]
fn host_rejects_bad_shapes_and_modes_with_reasons() {
    let (spec, runner) = spec_and_runner(None, DType::Float16);
    let cases = [
        refused(&[1, 4, 2, 63], &[1, 4, 1, 63], &[1, 4, 1, 63], "half", "needs an even head dim"),
        refused(&[1, 4, 2, 64], &[1, 4, 1, 64], &[1, 1, 4, 64], "half", "r1 and r2 must have the same shape"),
        refused(
            &[2, 4, 2, 64],
            &[1, 3, 1, 64],
            &[1, 3, 1, 64],
            "half",
            "does not broadcast to x [2, 4, 2, 64]: dim 1 is 3",
        ),
        refused(
            &[2, 4, 8, 64],
            &[2, 4, 8, 64],
            &[2, 4, 8, 64],
            "interleave",
            "interleave mode takes r1/r2 broadcast over batch and heads",
        ),
        refused(&[2, 4, 8, 64], &[2, 4, 1, 64], &[2, 4, 1, 64], "interleave", "(1S1D, 11SD or S11D"),
        refused(
            &[1, 4, 2, 64],
            &[1, 4, 1, 32],
            &[1, 4, 1, 32],
            "half",
            "r1's last dim is 32 but x's head dim is 64",
        ),
        refused(&[4, 2, 64], &[4, 1, 64], &[4, 1, 64], "half", "x must be 4-D"),
        refused(&[1, 4, 2, 64], &[4, 1, 64], &[4, 1, 64], "half", "must be 4-D like x"),
        refused(
            &[1, 4, 2, 64],
            &[1, 4, 1, 64],
            &[1, 4, 1, 64],
            "quarter",
            "mode \"quarter\" is not supported",
        ),
        refused(&[1, 1, 1, 8192], &[1, 1, 1, 8192], &[1, 1, 1, 8192], "half", "head dim 8192 is too large"),
    ];
    for c in &cases {
        let why = rejection(&runner, &spec, c.x, c.r1, c.r2, c.mode);
        assert!(why.contains(c.reason), "x {:?} r1 {:?} {}: `{}` not in: {why}", c.x, c.r1, c.mode, c.reason);
        assert!(why.contains("OpgenRotaryMul"), "the op is not named in: {why}");
    }
}

/// The shapes the brief calls out that torch_npu refuses run here: D above 896 and a large B·N
/// in BNSD and interleave (plan only; the sweeps run them).
#[test]
fn host_accepts_what_torch_npu_refuses() {
    let (spec, runner) = spec_and_runner(None, DType::Float16);
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let shapes: &[(&[usize], &[usize], &str)] = &[
        (&[1, 17, 4, 1024], &[1, 17, 1, 1024], "half"),
        (&[32, 64, 3, 64], &[1, 1, 3, 64], "half"),
        (&[256, 1, 8, 128], &[1, 1, 1, 128], "interleave"),
        (&[2, 3, 4, 72], &[2, 3, 4, 72], "half"),
    ];
    for (x, r, mode) in shapes {
        let inputs = vec![
            ("x".to_string(), HostTensor::zeros(DType::Float16, x)),
            ("r1".to_string(), HostTensor::zeros(DType::Float16, r)),
            ("r2".to_string(), HostTensor::zeros(DType::Float16, r)),
        ];
        let attrs = vec![("mode".to_string(), AttrValue::String(mode.to_string()))];
        let run =
            run_case(&runner, &spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, true)
                .unwrap_or_else(|e| panic!("x {x:?} r {r:?} {mode}: {e}"));
        assert!(run.report["block_dim"].as_u64().unwrap() >= 1);
    }
}

/// The converse: a kernel that forgets the sign of the rotation fails the sweep.
#[test]
fn a_kernel_without_the_rotation_sign_fails_verification() {
    let templates: Vec<(&'static str, String)> = ascend_opgen::codegen::template_sources()
        .into_iter()
        .map(|(name, text)| {
            let text = if name == "kernel/rotary.cpp.j2" {
                let broken = text.replace(
                    "Muls(sin_[r * t_.rowStride], sin_[r * t_.rowStride], -1.0f,",
                    "Muls(sin_[r * t_.rowStride], sin_[r * t_.rowStride], 1.0f,",
                );
                assert_ne!(broken, text, "the mutation must apply");
                broken
            } else {
                text
            };
            (name, text)
        })
        .collect();
    let opts = VerifyOptions {
        ops: vec!["rotary_mul".into()],
        dtypes: vec![DType::Float16],
        templates: Some(templates),
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    assert!(report.rows.iter().all(|r| r.failures > 0), "a wrong kernel passed:\n{}", report.table());
}

/// Empty tensors (no batch, or a head dim of 0) give empty outputs and no error.
#[test]
fn empty_tensors_give_empty_outputs() {
    let (spec, runner) = spec_and_runner(None, DType::Float16);
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let shapes: &[(&[usize], &[usize])] = &[(&[0, 3, 2, 64], &[1, 3, 1, 64]), (&[1, 3, 2, 0], &[1, 3, 1, 0])];
    for (x, r) in shapes {
        let inputs = vec![
            ("x".to_string(), HostTensor::zeros(DType::Float16, x)),
            ("r1".to_string(), HostTensor::zeros(DType::Float16, r)),
            ("r2".to_string(), HostTensor::zeros(DType::Float16, r)),
        ];
        let attrs = vec![("mode".to_string(), AttrValue::String("half".into()))];
        let run =
            run_case(&runner, &spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, false)
                .unwrap_or_else(|e| panic!("x {x:?}: {e}"));
        assert_eq!(run.outputs[0].1.shape, x.to_vec());
        assert_eq!(run.outputs[0].1.numel(), 0);
    }
}
