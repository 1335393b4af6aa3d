//! rotary_mul_grad (the backward of rotary_mul): its reference against the forward's math (the
//! adjoint identity, independent of the kernel and of the grad reference's code), the kernel on
//! the twin per dtype and mode, the table sums' bits on two core counts, the cancellation cases
//! (plain float32 arithmetic would miss the bar on them), the host's refusals, and broken kernels
//! the gates must catch. The quick sweep of every dtype runs in tests/it/verify_catalogue.rs.

use crate::support::patched_templates;
use ascend_opgen::codegen::render_project;
use ascend_opgen::family::load_selection as load_specs;
use ascend_opgen::family::rotary::mode_of;
use ascend_opgen::plan::soc;
use ascend_opgen::reference::{self, rotary::RotaryMode};
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::compare::{compare, Tolerance};
use ascend_opgen::verify::{build_runner, cases, run_case, BuildOptions, CaseInput, Runner, Sweep};
use ascend_opgen::verify::{case_inputs, run_verify, VerifyOptions};
use ascend_opgen::DType;

const OP: &str = "rotary_mul_grad";

fn spec_and_runner(dtype: DType) -> (OpSpec, Runner) {
    let specs = load_specs(None, &[OP.to_string()]).expect("rotary_mul_grad spec");
    let project = render_project(&specs.iter().collect::<Vec<_>>()).expect("render");
    let spec = specs.into_iter().next().unwrap();
    let column = spec.column_for(dtype).expect("dtype column");
    let opts = BuildOptions { sanitize: false };
    let runner = build_runner(&project, &spec, column, opts).expect("twin runner");
    (spec, runner)
}

/// Deterministic uniform numbers in [-1, 1) (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn tensor(&mut self, shape: &[usize]) -> HostTensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|_| self.next() * 4.0).collect();
        HostTensor::from_f64(DType::Float32, shape, &v)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The forward is linear in x, in r1 and in r2 separately, so for a unit tensor e_j,
/// ∂⟨dy, f(x, r1, r2)⟩/∂x_j = ⟨dy, f(e_j, r1, r2)⟩ exactly (and likewise for r1, r2 with the
/// other two operands fixed): the gradient from the forward's reference alone, compared with
/// the grad reference, for every layout/broadcast and both modes.
#[test]
fn reference_is_the_adjoint_of_the_forward() {
    let layouts: [([usize; 4], [usize; 4], bool); 6] = [
        ([2, 3, 2, 8], [1, 3, 1, 8], true),  // BSND, 1S1D
        ([2, 3, 2, 8], [2, 3, 1, 8], false), // BSND, BS1D
        ([2, 2, 3, 6], [1, 1, 3, 6], true),  // BNSD, 11SD
        ([2, 2, 3, 6], [2, 1, 3, 6], false), // BNSD, B1SD
        ([3, 2, 2, 4], [3, 1, 1, 4], true),  // SBND, S11D
        ([1, 2, 2, 4], [1, 2, 2, 4], false), // no broadcast
    ];
    let mut rng = Rng(7);
    for (xs, ts, interleave_ok) in layouts {
        let modes: &[RotaryMode] =
            if interleave_ok { &[RotaryMode::Half, RotaryMode::Interleave] } else { &[RotaryMode::Half] };
        for &mode in modes {
            let (x, dy, r1, r2) = (rng.tensor(&xs), rng.tensor(&xs), rng.tensor(&ts), rng.tensor(&ts));
            let g = reference::rotary_grad::rotary_mul_grad(&dy, &x, &r1, &r2, mode, true).unwrap();
            let dyv = dy.to_f64();
            let unit = |shape: &[usize], j: usize| {
                let mut v = vec![0.0; shape.iter().product()];
                v[j] = 1.0;
                HostTensor::from_f64(DType::Float32, shape, &v)
            };
            let zeros = HostTensor::zeros(DType::Float32, &ts);
            let fwd = |x: &HostTensor, a: &HostTensor, b: &HostTensor| {
                reference::rotary::rotary_mul(x, a, b, mode).unwrap()
            };
            let close = |a: f64, b: f64, what: &str| {
                assert!(
                    (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                    "{xs:?} {ts:?} {mode:?} {what}: grad {a}, adjoint {b}"
                );
            };
            for j in 0..x.numel() {
                close(g.dx[j], dot(&dyv, &fwd(&unit(&xs, j), &r1, &r2)), &format!("dx[{j}]"));
            }
            for j in 0..r1.numel() {
                close(g.dr1[j], dot(&dyv, &fwd(&x, &unit(&ts, j), &zeros)), &format!("dr1[{j}]"));
                close(g.dr2[j], dot(&dyv, &fwd(&x, &zeros, &unit(&ts, j))), &format!("dr2[{j}]"));
            }
            // And a central difference of the loss in a random direction (no linearity used).
            let dir = rng.tensor(&xs);
            let h = 1e-3;
            let shifted = |s: f64| {
                let v: Vec<f64> = x.to_f64().iter().zip(dir.to_f64()).map(|(a, d)| a + s * d).collect();
                HostTensor::from_f64(DType::Float32, &xs, &v)
            };
            let fd = (dot(&dyv, &fwd(&shifted(h), &r1, &r2)) - dot(&dyv, &fwd(&shifted(-h), &r1, &r2)))
                / (2.0 * h);
            let want = dot(&g.dx, &dir.to_f64());
            assert!(
                (fd - want).abs() <= 1e-3 * (1.0 + want.abs()),
                "{mode:?}: finite difference {fd}, ⟨dx, dir⟩ {want}"
            );
        }
    }
}

/// A case's inputs as verify makes them: the family's own (cancellation cases) or drawn.
fn inputs_of(spec: &OpSpec, column: usize, case: &ascend_opgen::verify::Case) -> Vec<(String, HostTensor)> {
    match ascend_opgen::family::case_inputs(spec, column, case) {
        Some((inputs, _)) => inputs,
        None => case_inputs(spec, column, case),
    }
}

fn attrs(mode: &str, table_grads: bool) -> Vec<(String, AttrValue)> {
    vec![
        ("mode".to_string(), AttrValue::String(mode.to_string())),
        ("table_grads".to_string(), AttrValue::Bool(table_grads)),
    ]
}

fn run(
    runner: &Runner,
    spec: &OpSpec,
    soc: &soc::Soc,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Vec<(String, HostTensor)> {
    run_case(runner, spec, soc, &CaseInput { inputs, attrs, inplace: &[] }, false)
        .unwrap_or_else(|e| panic!("twin run: {e}"))
        .outputs
}

/// Each dtype and mode, with and without the table gradients, against the reference with the
/// op's bars; without table_grads dr1/dr2 are zeros bit for bit.
#[test]
fn kernel_matches_the_reference_per_dtype_and_mode() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let mut rng = Rng(11);
    for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
        let (spec, runner) = spec_and_runner(dtype);
        for (mode, xs, ts) in [
            ("half", vec![2, 5, 3, 72], vec![1, 5, 1, 72]),
            ("interleave", vec![3, 2, 4, 128], vec![3, 1, 1, 128]),
        ] {
            for table_grads in [true, false] {
                let mk = |rng: &mut Rng, s: &[usize]| {
                    let t = rng.tensor(s);
                    HostTensor::from_f64(dtype, s, &t.to_f64())
                };
                let inputs = vec![
                    ("dy".to_string(), mk(&mut rng, &xs)),
                    ("x".to_string(), mk(&mut rng, &xs)),
                    ("r1".to_string(), mk(&mut rng, &ts)),
                    ("r2".to_string(), mk(&mut rng, &ts)),
                ];
                let a = attrs(mode, table_grads);
                let out = run(&runner, &spec, soc, &inputs, &a);
                let want = ascend_opgen::family::expected(&spec, &inputs, &a).unwrap();
                for (e, (name, got)) in want.iter().zip(&out) {
                    assert_eq!(&e.name, name);
                    let c = compare(got, &e.values, e.tolerance);
                    assert!(c.passed(), "{dtype} {mode} table_grads={table_grads} {name}: {}", c);
                    if !table_grads && name != "dx" {
                        assert!((0..got.numel()).all(|i| got.bits(i) == 0), "{dtype} {name}: not +0");
                    }
                }
            }
        }
    }
}

/// A table row's sum runs on the one core that owns it, in one order: the same bits on 48, 7
/// and 1 cores, for shapes whose table rows are summed over many heads and batches.
#[test]
fn table_grads_are_the_same_bits_on_any_core_count() {
    let base = *soc::find(soc::DEFAULT_SOC).unwrap();
    for dtype in [DType::BFloat16, DType::Float32] {
        let (spec, runner) = spec_and_runner(dtype);
        let column = spec.column_for(dtype).unwrap();
        let case = cases(&spec, Sweep::Quick)
            .into_iter()
            .find(|c| {
                c.shapes[1].1 == [1, 32, 16, 128]
                    && c.attrs.iter().any(|(n, v)| n == "table_grads" && *v == AttrValue::Bool(true))
            })
            .expect("the Qwen3-shaped quick case with table grads");
        let inputs = inputs_of(&spec, column, &case);
        let mut seen: Option<Vec<(String, HostTensor)>> = None;
        for cores in [48, 7, 1] {
            let soc = soc::Soc { vector_cores: cores, ..base };
            let out = run(&runner, &spec, &soc, &inputs, &case.attrs);
            if let Some(first) = &seen {
                for ((name, a), (_, b)) in first.iter().zip(&out) {
                    assert!(
                        (0..a.numel()).all(|i| a.bits(i) == b.bits(i)),
                        "{dtype} {name}: bits differ on {cores} cores"
                    );
                }
            } else {
                seen = Some(out);
            }
        }
    }
}

/// The sweep's cancellation cases really cancel: plain float32 arithmetic (rounded products,
/// one rounded sum for dx; a float32 running sum of rounded products for the tables) misses the
/// float32 bar on them, while the kernel meets it.
#[test]
fn cancellation_cases_defeat_plain_float32_but_not_the_kernel() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let (spec, runner) = spec_and_runner(DType::Float32);
    let column = spec.column_for(DType::Float32).unwrap();
    let cancel: Vec<_> =
        cases(&spec, Sweep::Quick).into_iter().filter(|c| (9000..9100).contains(&c.seed)).collect();
    assert!(cancel.len() >= 3);
    let mut plain_missed = 0;
    for case in &cancel {
        let inputs = inputs_of(&spec, column, case);
        let mode = mode_of(&case.attrs).unwrap();
        let want = ascend_opgen::family::expected(&spec, &inputs, &case.attrs).unwrap();
        let out = run(&runner, &spec, soc, &inputs, &case.attrs);
        for (e, (name, got)) in want.iter().zip(&out) {
            let c = compare(got, &e.values, e.tolerance);
            assert!(c.passed(), "{} {name}: {}", case.label(), c);
        }
        let plain = plain_float32(&inputs, mode);
        for (e, p) in want.iter().zip(&plain) {
            if !compare(p, &e.values, Tolerance::ulp(1)).passed() {
                plain_missed += 1;
            }
        }
    }
    assert!(plain_missed >= 3, "only {plain_missed} outputs of the cancellation cases defeat plain float32");
}

/// dx = fl(fl(dy·r1) + fl(dy[π]·s'·r2[π])) and dr = float32 running sums of fl(dy·x), fl(dy·R(x)),
/// for one-table-row-per-position layouts (BSND 1S1D, BNSD 11SD, SBND S11D: r1 index = the x
/// element's position and lane).
fn plain_float32(inputs: &[(String, HostTensor)], mode: RotaryMode) -> Vec<HostTensor> {
    let t = |i: usize| &inputs[i].1;
    let (dy, x, r1, r2) = (t(0).to_f64(), t(1).to_f64(), t(2).to_f64(), t(3).to_f64());
    let xs = &t(1).shape;
    let ts = &t(2).shape;
    let d = xs[3];
    let table_row = |flat: usize| -> usize {
        let idx = [flat / (xs[1] * xs[2] * xs[3]), flat / (xs[2] * xs[3]) % xs[1], flat / xs[3] % xs[2]];
        let mut at = 0;
        for a in 0..3 {
            if ts[a] != 1 {
                at = at * ts[a] + idx[a];
            }
        }
        at
    };
    let partner = |k: usize| match mode {
        RotaryMode::Half if k < d / 2 => (k + d / 2, -1.0f32),
        RotaryMode::Half => (k - d / 2, 1.0f32),
        RotaryMode::Interleave if k % 2 == 0 => (k + 1, -1.0f32),
        RotaryMode::Interleave => (k - 1, 1.0f32),
    };
    let mut dx = vec![0.0; dy.len()];
    let mut dr1 = vec![0.0f32; r1.len()];
    let mut dr2 = vec![0.0f32; r2.len()];
    for k in 0..dy.len() {
        let lane = k % d;
        let (p, s) = partner(lane);
        let pk = k - lane + p;
        let tr = table_row(k) * d;
        // R^T: dx[k] gets dy[pk]·s(pk)·r2[pk], where s(pk) = -s(k).
        let a = dy[k] as f32 * r1[tr + lane] as f32;
        let b = dy[pk] as f32 * (-s * r2[tr + p] as f32);
        dx[k] = f64::from(a + b);
        dr1[tr + lane] += dy[k] as f32 * x[k] as f32;
        dr2[tr + lane] += dy[k] as f32 * (s * x[pk] as f32);
    }
    let f = |shape: &[usize], v: &[f64]| HostTensor::from_f64(DType::Float32, shape, v);
    let widen = |v: &[f32]| v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>();
    vec![f(xs, &dx), f(ts, &widen(&dr1)), f(ts, &widen(&dr2))]
}

/// The host's refusals name the problem: dy not shaped like x, interleave with BS1D tables, an
/// odd head dim.
#[test]
fn host_refuses_bad_shapes_with_reasons() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let (spec, runner) = spec_and_runner(DType::Float16);
    let t = |s: &[usize]| HostTensor::zeros(DType::Float16, s);
    let try_run = |dy: &[usize], x: &[usize], r: &[usize], mode: &str| {
        let inputs = vec![
            ("dy".to_string(), t(dy)),
            ("x".to_string(), t(x)),
            ("r1".to_string(), t(r)),
            ("r2".to_string(), t(r)),
        ];
        match run_case(
            &runner,
            &spec,
            soc,
            &CaseInput { inputs: &inputs, attrs: &attrs(mode, true), inplace: &[] },
            false,
        ) {
            Ok(_) => panic!("{dy:?} {x:?} {r:?} {mode}: accepted"),
            Err(e) => e.to_string(),
        }
    };
    let e = try_run(&[1, 4, 2, 64], &[1, 4, 3, 64], &[1, 4, 1, 64], "half");
    assert!(e.contains("dy must have x's shape"), "{e}");
    let e = try_run(&[2, 4, 2, 64], &[2, 4, 2, 64], &[2, 4, 1, 64], "interleave");
    assert!(e.contains("interleave mode takes"), "{e}");
    let e = try_run(&[1, 4, 2, 63], &[1, 4, 2, 63], &[1, 4, 1, 63], "half");
    assert!(e.contains("even head dim"), "{e}");
}

/// Broken kernels the gates must catch (the same changes are in tests/mutants/mutants.toml):
/// rotate instead of rotate^T in dx (the transpose's sign), a table sum that keeps only the
/// first head of each position, and a removed barrier inside the table sums (the twin's pipe
/// checker).
#[test]
fn broken_kernels_fail_verification() {
    let mutants: [(&str, &str, &str, DType); 3] = [
        (
            "transpose sign",
            "        Muls(sin_, sin_, -1.0f, static_cast<int32_t>(elems));\n",
            "\n",
            DType::Float16,
        ),
        (
            "dropped head reduction",
            "for (uint32_t r = 0; r < rows; ++r) {\n            const LocalTensor<float> h",
            "for (uint32_t r = 0; r < rows; r += heads) {\n            const LocalTensor<float> h",
            DType::BFloat16,
        ),
        (
            "removed barrier",
            "            Add(s, h, v, n);\n            PipeBarrier<PIPE_V>();\n",
            "            Add(s, h, v, n);\n",
            DType::Float32,
        ),
    ];
    for (what, find, replace, dtype) in mutants {
        // `what` names the mutant in a failure below; the patch names the needle.
        let templates = patched_templates("kernel/rotary_grad.cpp.j2", find, replace);
        let opts = VerifyOptions {
            ops: vec![OP.into()],
            dtypes: vec![dtype],
            sanitize: false,
            templates: Some(templates),
            // One failing case is the evidence; the rest of the sweep would only repeat it.
            fail_fast: true,
            ..VerifyOptions::default()
        };
        let report = run_verify(&opts).expect("verify runs");
        assert!(!report.failures.is_empty(), "{what}: the broken kernel passed:\n{}", report.table());
    }
}

/// The cancellation inputs hold what they promise: dx's first lanes are far below their
/// products (16-bit rounding of the chosen partner leaves ~2^-12 of them).
#[test]
fn cancellation_inputs_cancel() {
    let specs = load_specs(None, &[OP.to_string()]).unwrap();
    let spec = &specs[0];
    let column = spec.column_for(DType::Float32).unwrap();
    let case = cases(spec, Sweep::Quick).into_iter().find(|c| c.seed == 9000).unwrap();
    let inputs = inputs_of(spec, column, &case);
    let g = reference::rotary_grad::rotary_mul_grad(
        &inputs[0].1,
        &inputs[1].1,
        &inputs[2].1,
        &inputs[3].1,
        mode_of(&case.attrs).unwrap(),
        true,
    )
    .unwrap();
    let (dy, r1) = (inputs[0].1.to_f64(), inputs[2].1.to_f64());
    let d = inputs[1].1.shape[3];
    let s = inputs[1].1.shape[1];
    // BSND 1S1D: element k's table row is its position.
    let n = inputs[1].1.shape[2];
    let mut worst: f64 = 0.0;
    for (k, dxk) in g.dx.iter().enumerate().filter(|(k, _)| k % d < d / 2) {
        let pos = k / (n * d) % s;
        let prod = (dy[k] * r1[pos * d + k % d]).abs();
        worst = worst.max(dxk.abs() / prod);
    }
    assert!(worst < 1e-3, "dx / dy·r1 reaches {worst}");
}
