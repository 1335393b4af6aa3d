//! rotary_mul on the CPU twin: the quick verify sweep (1 ULP for 16-bit outputs, the CANN gate),
//! the 16-bit kernels' arithmetic bit for bit against a model of CANN's, the float32 kernel's
//! error-free products where CANN's formula cancels (and its NaN/Inf behaviour), the core split,
//! and the host tiling's rejections, each with its reason.

use crate::support::patched_templates;
use ascend_opgen::codegen::render_project;
use ascend_opgen::family::load_selection as load_specs;
use ascend_opgen::family::rotary::mode_of;
use ascend_opgen::plan::soc;
use ascend_opgen::reference::{self, rotary::RotaryMode};
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::{c_strides, HostTensor};
use ascend_opgen::verify::compare::{compare, Comparison, Tolerance};
use ascend_opgen::verify::{
    build_runner, cases, run_case, BuildOptions, CaseInput, Runner, Sweep, TwinError,
};
use ascend_opgen::verify::{case_inputs, run_verify, VerifyOptions};
use ascend_opgen::DType;

fn spec_and_runner(dtype: DType) -> (OpSpec, Runner) {
    let specs = load_specs(None, &["rotary_mul".to_string()]).expect("rotary_mul spec");
    let project = render_project(&specs.iter().collect::<Vec<_>>()).expect("render");
    let spec = specs.into_iter().next().unwrap();
    let column = spec.column_for(dtype).expect("dtype column");
    let runner = build_runner(&project, &spec, column, BuildOptions::default()).expect("twin runner");
    (spec, runner)
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

/// Every quick-sweep case in float16 and bfloat16 equals the model bit for bit: for 16-bit inputs
/// the kernel computes exactly CANN's formula (its products are exact in float32).
#[test]
fn kernel_matches_cann_arithmetic_bit_for_bit_in_16_bit() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    for dtype in [DType::Float16, DType::BFloat16] {
        let (spec, runner) = spec_and_runner(dtype);
        let column = spec.column_for(dtype).unwrap();
        for case in cases(&spec, Sweep::Quick) {
            let inputs = case_inputs(&spec, column, &case);
            let y = run(&runner, &spec, soc, &inputs, mode_of(&case.attrs).unwrap())
                .unwrap_or_else(|e| panic!("{dtype} {}: {e}", case.label()));
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

/// Runs the kernel on (x, r1, r2) and returns y.
fn run(
    runner: &Runner,
    spec: &OpSpec,
    soc: &soc::Soc,
    inputs: &[(String, HostTensor)],
    mode: RotaryMode,
) -> Result<HostTensor, TwinError> {
    let mode = match mode {
        RotaryMode::Half => "half",
        RotaryMode::Interleave => "interleave",
    };
    let attrs = vec![("mode".to_string(), AttrValue::String(mode.to_string()))];
    let run = run_case(runner, spec, soc, &CaseInput { inputs, attrs: &attrs, inplace: &[] }, false)?;
    Ok(run.outputs.into_iter().next().expect("y").1)
}

/// Deterministic uniform numbers in [0, 1) (splitmix64): the tests pick their own inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// ±m·2^k with m in [1, 2) and k uniform in [lo, hi].
    fn signed_pow2(&mut self, lo: i32, hi: i32) -> f64 {
        let k = lo + (self.next() * f64::from(hi - lo + 1)) as i32;
        let sign = if self.next() < 0.5 { -1.0 } else { 1.0 };
        sign * (1.0 + self.next()) * 2f64.powi(k)
    }
}

/// rotate(x)[j] = sign · x[partner] (the reference's definition, op-semantics §2.1).
fn partner(mode: RotaryMode, d: usize, j: usize) -> (usize, f64) {
    match mode {
        RotaryMode::Half if j < d / 2 => (j + d / 2, -1.0),
        RotaryMode::Half => (j - d / 2, 1.0),
        RotaryMode::Interleave if j % 2 == 0 => (j + 1, -1.0),
        RotaryMode::Interleave => (j - 1, 1.0),
    }
}

/// float32 inputs where x·r1 and rotate(x)·r2 cancel: x [1, S, 2, D] (BSND, tables [1, S, 1, D],
/// head 1 = 8 · head 0 so both heads of a table row cancel), |x| from 2^-2 to 2^14 (results on
/// both sides of the CANN small-value bound 2^-14), r1 in [-1, 1), and
/// r2 = RNE(−x·r1 / rotate(x) · (1 + δ)) with δ = 0 or ±2^-k, k in [8, 24]: cancellation of
/// every depth down to the last bit.
fn cancelling_inputs(mode: RotaryMode, seq: usize, d: usize, seed: u64) -> Vec<(String, HostTensor)> {
    let mut rng = Rng(seed);
    let f32_of = |v: f64| f64::from(v as f32);
    let mut x = vec![0.0; seq * 2 * d];
    let mut r1 = vec![0.0; seq * d];
    let mut r2 = vec![0.0; seq * d];
    for s in 0..seq {
        let row = &mut x[s * 2 * d..(s * 2 + 1) * d];
        for v in row.iter_mut() {
            *v = f32_of(rng.signed_pow2(-2, 13));
        }
        for j in 0..d {
            r1[s * d + j] = f32_of(2.0 * rng.next() - 1.0);
        }
        for j in 0..d {
            let (src, sign) = partner(mode, d, j);
            let (xj, rot) = (x[s * 2 * d + j], sign * x[s * 2 * d + src]);
            let delta = if rng.next() < 0.25 { 0.0 } else { rng.signed_pow2(-24, -9) };
            r2[s * d + j] = f32_of(-xj * r1[s * d + j] / rot * (1.0 + delta));
        }
        for j in 0..d {
            x[(s * 2 + 1) * d + j] = 8.0 * x[s * 2 * d + j];
        }
    }
    vec![
        ("x".to_string(), HostTensor::from_f64(DType::Float32, &[1, seq, 2, d], &x)),
        ("r1".to_string(), HostTensor::from_f64(DType::Float32, &[1, seq, 1, d], &r1)),
        ("r2".to_string(), HostTensor::from_f64(DType::Float32, &[1, seq, 1, d], &r2)),
    ]
}

fn exact(inputs: &[(String, HostTensor)], mode: RotaryMode) -> Vec<f64> {
    reference::rotary::rotary_mul(&inputs[0].1, &inputs[1].1, &inputs[2].1, mode).expect("reference")
}

/// Where CANN's formula fails the CANN float32 gate (its products cancel), the kernel's
/// error-free products pass it within 1 ULP of the exact value rounded once, in both modes,
/// with the rotation by block copies (D = 64) and by Gather (D = 72, 40).
#[test]
fn float32_error_free_products_survive_cancellation() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let (spec, runner) = spec_and_runner(DType::Float32);
    let shapes = [(RotaryMode::Half, 64), (RotaryMode::Half, 72), (RotaryMode::Interleave, 40)];
    for (k, (mode, d)) in shapes.into_iter().enumerate() {
        let inputs = cancelling_inputs(mode, 24, d, 7 + k as u64);
        let want = exact(&inputs, mode);
        let naive = cann_model(&inputs[0].1, &inputs[1].1, &inputs[2].1, mode);
        let plain: Comparison = compare(&naive, &want, Tolerance::CannOnly);
        assert!(
            !plain.passed(),
            "{mode:?} D={d}: the inputs do not cancel enough to fail CANN's formula: {plain}"
        );
        let y = run(&runner, &spec, soc, &inputs, mode).unwrap_or_else(|e| panic!("{mode:?} D={d}: {e}"));
        let got = compare(&y, &want, Tolerance::CannOnly);
        assert!(got.passed(), "{mode:?} D={d}: {got}");
        assert!(got.max_ulp <= 1, "{mode:?} D={d}: {got}");
    }
}

/// NaN and ±Inf come out where the reference has them, and where the compensated terms are NaN
/// but the plain sum is not (|x| above ~8e34: the split's 4097·x overflows), y is the plain sum.
#[test]
fn float32_nan_and_inf_propagate_like_the_reference() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let (spec, runner) = spec_and_runner(DType::Float32);
    for mode in [RotaryMode::Half, RotaryMode::Interleave] {
        let d = 64;
        let mut inputs = cancelling_inputs(mode, 4, d, 99);
        let mut set = |i: usize, at: usize, v: f64| inputs[i].1.set_f64(at, v);
        // x row 0 (head 0 of position 0): infinities, NaN, and huge finite values.
        set(0, 0, f64::INFINITY);
        set(0, 3, f64::NEG_INFINITY);
        set(0, 5, f64::NAN);
        set(0, 7, 1e36);
        set(0, 10, -3e38);
        // x row 2 (head 0 of position 1): a zero times an infinite table entry is NaN.
        set(0, 2 * d + 12, 0.0);
        // Tables: an infinite cos and a NaN sin at position 1.
        set(1, d + 12, f64::INFINITY);
        set(2, d + 20, f64::NAN);
        let want = exact(&inputs, mode);
        let y = run(&runner, &spec, soc, &inputs, mode).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        let got = compare(&y, &want, Tolerance::CannOnly);
        assert!(got.passed() && got.special_mismatches == 0, "{mode:?}: {got}");
        assert!(want.iter().filter(|g| !g.is_finite()).count() >= 6, "{mode:?}: too few specials");
        let naive = cann_model(&inputs[0].1, &inputs[1].1, &inputs[2].1, mode);
        for at in [7, 10] {
            assert!(y.get_f64(at).is_finite(), "{mode:?} element {at}: {}", y.get_f64(at));
            assert_eq!(y.bits(at), naive.bits(at), "{mode:?} element {at}: not the plain sum");
        }
    }
}

/// The TilingFunc's core split (plan only): BSND x [B, S, N, 64] with tables [1, S, 1, 64] has
/// rows (b · S + s) · N + n of table row s. Against an exhaustive search over every grid of
/// cores: its busiest core moves the fewest rows (x rows plus table rows,
/// `ceil(S/cs) · (ceil(B/cb) · ceil(N/cn) + 1)`); among those grids it reads each table row the
/// fewest times (cb · cn); and idle cores join along S, where they cost no table reads. So the
/// decode shape 4x1x14x64 (56 rows of one table row) keeps 28 cores of 2 rows: 48 would read the
/// table row 48 times for the same busiest core.
#[test]
fn core_split_is_as_good_as_the_exhaustive_search() {
    let (spec, runner) = spec_and_runner(DType::Float16);
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let cores = soc.vector_cores as usize;
    let plan = |x: &[usize]| {
        let table = [1, x[1], 1, x[3]];
        let inputs = vec![
            ("x".to_string(), HostTensor::zeros(DType::Float16, x)),
            ("r1".to_string(), HostTensor::zeros(DType::Float16, &table)),
            ("r2".to_string(), HostTensor::zeros(DType::Float16, &table)),
        ];
        let attrs = vec![("mode".to_string(), AttrValue::String("half".into()))];
        let run =
            run_case(&runner, &spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, true)
                .unwrap_or_else(|e| panic!("x {x:?}: {e}"));
        let field =
            |name: &str| run.report["tiling"][name].as_u64().unwrap_or_else(|| panic!("{name}")) as usize;
        let split = (field("coresPos"), field("coresBo"), field("coresBi"));
        (split, run.report["block_dim"].as_u64().unwrap() as usize)
    };
    let busiest = |(s, b, n): (usize, usize, usize), (cs, cb, cn): (usize, usize, usize)| {
        s.div_ceil(cs) * (b.div_ceil(cb) * n.div_ceil(cn) + 1)
    };
    for b in [2, 3, 7] {
        for s in [2, 3, 5, 47, 49, 100] {
            for n in [2, 4, 9, 28] {
                let (split, block_dim) = plan(&[b, s, n, 64]);
                let (cs, cb, cn) = split;
                assert!(cs <= s && cb <= b && cn <= n && block_dim == cs * cb * cn && block_dim <= cores);
                // (busiest rows, table reads) of the best grids.
                let mut best = (usize::MAX, usize::MAX);
                for ts in 1..=s.min(cores) {
                    for tb in 1..=b.min(cores / ts) {
                        for tn in 1..=n.min(cores / (ts * tb)) {
                            best = best.min((busiest((s, b, n), (ts, tb, tn)), tb * tn));
                        }
                    }
                }
                let x = format!("x [{b}, {s}, {n}, 64]: split {split:?}");
                assert_eq!((busiest((s, b, n), split), cb * cn), best, "{x}");
                assert_eq!(cs, s.min(cores / (cb * cn)), "{x}: idle cores left along S");
            }
        }
    }
    assert_eq!(plan(&[4, 1, 14, 64]), ((1, 1, 28), 28));
    // 50 positions of 2 heads: the busiest core takes 2 positions (2 · (2 + 1) rows) either way;
    // shares of ceil(50 / 48) = 2 positions fill 25 cores, balanced shares all 48 (2 take 2).
    assert_eq!(plan(&[1, 50, 2, 64]).1, 48);
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
    let (spec, runner) = spec_and_runner(DType::Float16);
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

/// float32's work rows (x's and the tables' hi/lo halves) cost UB: D = 3000 (the full sweep's
/// largest) still plans, with one buffer per table; D = 3400 is refused, saying why.
#[test]
fn float32_large_head_dims_plan_or_are_refused_with_the_reason() {
    let (spec, runner) = spec_and_runner(DType::Float32);
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let plan = |d: usize| {
        let inputs = vec![
            ("x".to_string(), HostTensor::zeros(DType::Float32, &[1, 2, 3, d])),
            ("r1".to_string(), HostTensor::zeros(DType::Float32, &[1, 2, 1, d])),
            ("r2".to_string(), HostTensor::zeros(DType::Float32, &[1, 2, 1, d])),
        ];
        let attrs = vec![("mode".to_string(), AttrValue::String("half".into()))];
        run_case(&runner, &spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, true)
    };
    let run = plan(3000).expect("D = 3000 plans");
    assert_eq!(run.report["tiling"]["tableBuffers"].as_u64(), Some(1), "{}", run.report["tiling"]);
    assert_eq!(plan(128).expect("D = 128").report["tiling"]["tableBuffers"].as_u64(), Some(2));
    match plan(3400) {
        Err(TwinError::HostRejected(why)) => {
            assert!(why.contains("head dim 3400 is too large") && why.contains("hi/lo halves"), "{why}")
        }
        Err(other) => panic!("D = 3400: expected a host rejection, got {other}"),
        Ok(_) => panic!("D = 3400 float32 does not fit the UB, but was accepted"),
    }
}

/// The shapes the brief calls out that torch_npu refuses run here: D above 896 and a large B·N
/// in BNSD and interleave. Each is run on random inputs and must equal CANN's arithmetic
/// (`cann_model`) bit for bit, so the plan the host accepts also covers every element.
#[test]
fn host_accepts_what_torch_npu_refuses() {
    let (spec, runner) = spec_and_runner(DType::Float16);
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let shapes: &[(&[usize], &[usize], RotaryMode)] = &[
        (&[1, 17, 4, 1024], &[1, 17, 1, 1024], RotaryMode::Half),
        (&[32, 64, 3, 64], &[1, 1, 3, 64], RotaryMode::Half),
        (&[256, 1, 8, 128], &[1, 1, 1, 128], RotaryMode::Interleave),
        (&[2, 3, 4, 72], &[2, 3, 4, 72], RotaryMode::Half),
    ];
    let mut rng = Rng(0x7a11);
    for (x, r, mode) in shapes {
        let mut tensor = |shape: &[usize]| {
            let n = shape.iter().product();
            let values: Vec<f64> = (0..n).map(|_| rng.next() * 4.0 - 2.0).collect();
            HostTensor::from_f64(DType::Float16, shape, &values)
        };
        let inputs =
            vec![("x".to_string(), tensor(x)), ("r1".to_string(), tensor(r)), ("r2".to_string(), tensor(r))];
        let y = run(&runner, &spec, soc, &inputs, *mode)
            .unwrap_or_else(|e| panic!("x {x:?} r {r:?} {mode:?}: {e}"));
        let want = cann_model(&inputs[0].1, &inputs[1].1, &inputs[2].1, *mode);
        assert_eq!(y.shape, x.to_vec());
        let differ = (0..y.numel()).filter(|&i| y.bits(i) != want.bits(i)).count();
        assert_eq!(
            differ,
            0,
            "x {x:?} r {r:?} {mode:?}: {differ} of {} elements differ from CANN's arithmetic",
            y.numel()
        );
    }
}

/// The converse: a kernel that forgets the sign of the rotation fails the sweep.
#[test]
fn a_kernel_without_the_rotation_sign_fails_verification() {
    let templates = patched_templates(
        "kernel/rotary_dot2.j2",
        "Muls(v[r * width + j], v[r * width + j], -1.0f,",
        "Muls(v[r * width + j], v[r * width + j], 1.0f,",
    );
    let opts = VerifyOptions {
        ops: vec!["rotary_mul".into()],
        dtypes: vec![DType::Float16],
        templates: Some(templates),
        // One failing case is the evidence; the rest of the sweep would only repeat it.
        fail_fast: true,
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    assert!(report.rows.iter().all(|r| r.failures > 0), "a wrong kernel passed:\n{}", report.table());
}

/// Empty tensors (no batch, or a head dim of 0) give empty outputs and no error.
#[test]
fn empty_tensors_give_empty_outputs() {
    let (spec, runner) = spec_and_runner(DType::Float16);
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
