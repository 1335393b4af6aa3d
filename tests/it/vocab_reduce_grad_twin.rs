//! logprob_entropy_grad on the twin with hand-made rows whose gradients follow in closed form
//! (not from src/reference): all-equal rows (p = 1/V, log p + H = 0: only the one-hot term and
//! −dlogp/V remain) and two-level rows (one logit a, the rest 0) across several tiles, with the
//! target on a tile's first element and in the last tile's tail; masked (−inf) entries give 0;
//! ignore_index rows give 0 even over NaN logits; a row's bits do not depend on its batch; the
//! host's refusals with their reasons.

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::family::vocab_reduce_grad::tile;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::{AttrValue, OpSpec};
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, CaseInput, CaseRun, TwinError};
use ascend_opgen::DType;

fn spec() -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == "logprob_entropy_grad").unwrap()
}

fn attrs(temperature: f64, ignore: i64) -> Vec<(String, AttrValue)> {
    vec![
        ("temperature".into(), AttrValue::Float(temperature)),
        ("ignore_index".into(), AttrValue::Int(ignore)),
    ]
}

/// Per-row inputs: lse, entropy, dlogprob, dentropy.
struct Rows {
    lse: Vec<f64>,
    entropy: Vec<f64>,
    dlogprob: Vec<f64>,
    dentropy: Vec<f64>,
}

fn run(
    spec: &OpSpec,
    dtype: DType,
    logits: HostTensor,
    target: &[i64],
    rows: &Rows,
    attrs: &[(String, AttrValue)],
    plan_only: bool,
) -> Result<CaseRun, TwinError> {
    let col = spec.inputs[0].dtypes.iter().position(|d| *d == dtype).unwrap();
    let project = render_project(&[spec]).unwrap();
    let runner = build_runner(&project, spec, col, BuildOptions::default()).unwrap();
    let n = target.len();
    let f = |v: &[f64]| HostTensor::from_f64(DType::Float32, &[v.len()], v);
    let inputs = vec![
        ("logits".to_string(), logits),
        ("target".to_string(), HostTensor::from_i64(DType::Int32, &[n], target)),
        ("lse".to_string(), f(&rows.lse)),
        ("entropy".to_string(), f(&rows.entropy)),
        ("dlogprob".to_string(), f(&rows.dlogprob)),
        ("dentropy".to_string(), f(&rows.dentropy)),
    ];
    run_case(
        &runner,
        spec,
        soc::find(soc::DEFAULT_SOC).unwrap(),
        &CaseInput { inputs: &inputs, attrs, inplace: &[] },
        plan_only,
    )
}

fn dlogits(run: &CaseRun) -> Vec<f64> {
    run.outputs.iter().find(|(n, _)| n == "dlogits").unwrap().1.to_f64()
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want} (tolerance {tol})");
}

#[test]
fn closed_form_rows_across_tiles_with_ignore_and_temperature() {
    let spec = spec();
    // V = 20011 (prime): several tiles whatever the dtype's tile length (at most 16384).
    let v = 20011usize;
    let vf = v as f64;
    let (a, c, t) = (6.0f64, 1.5f64, 2.0f64);
    // Two levels: z = b = a/T once, 0 else: S = (V-1) + e^b, p* = e^b/S, p0 = 1/S,
    // H = -(p* ln p* + (V-1) p0 ln p0).
    let b = a / t;
    let s = (vf - 1.0) + b.exp();
    let (pb, p0) = (b.exp() / s, 1.0 / s);
    let h2 = -(pb * pb.ln() + (vf - 1.0) * p0 * p0.ln());
    let (dlp, dent) = (0.75f64, -1.25f64);
    // d_j = (1/T)[dlp(δ_jt − p_j) − dent·p_j(ln p_j + H)].
    let d = |p: f64, onehot: f64, h: f64| (dlp * (onehot - p) - dent * p * (p.ln() + h)) / t;
    for dtype in [DType::BFloat16, DType::Float32] {
        // The second tile's first element (the tile as the host picks it: the mirror below
        // holds it to the TilingFunc).
        let edge = tile::plan(v as u64, dtype.size_bytes() as u64, soc::UB_PLAN_BYTES_A2).0 as usize;
        // Row 0: all c, target `edge` (a tile's first element). Row 1: 0 except a at the last
        // element, target there. Row 2: ignored (target 7 = ignore_index) over NaN logits.
        // Row 3: 0 except a at 8195, target 5 (not the odd one), one −inf entry at 100.
        let mut x = vec![0.0; 4 * v];
        x[..v].iter_mut().for_each(|e| *e = c);
        x[2 * v - 1] = a;
        x[2 * v..3 * v].iter_mut().for_each(|e| *e = f64::NAN);
        x[3 * v + 8195] = a;
        x[3 * v + 100] = f64::NEG_INFINITY;
        let logits = HostTensor::from_f64(dtype, &[4, v], &x);
        // Row 3 with the −inf entry: S loses one p0 term.
        let s3 = s - 1.0;
        let (pb3, p03) = (b.exp() / s3, 1.0 / s3);
        let h3 = -(pb3 * pb3.ln() + (vf - 2.0) * p03 * p03.ln());
        let rows = Rows {
            lse: vec![c / t + vf.ln(), s.ln(), 0.0, s3.ln()],
            entropy: vec![vf.ln(), h2, 0.0, h3],
            dlogprob: vec![dlp; 4],
            dentropy: vec![dent; 4],
        };
        let r = run(&spec, dtype, logits, &[edge as i64, (v - 1) as i64, 7, 5], &rows, &attrs(t, 7), false)
            .unwrap();
        let g = dlogits(&r);
        // 16-bit: one rounding of values up to ~0.4 (2^-9 relative), plus float32's ~1e-6.
        let tol = |want: f64| if dtype == DType::Float32 { 1e-6 } else { want.abs() * 2f64.powi(-8) + 1e-6 };
        let check =
            |i: usize, want: f64, what: &str| close(g[i], want, tol(want), &format!("{dtype}: {what}"));
        // All equal: p = 1/V and ln p + H = 0.
        check(0, d(1.0 / vf, 0.0, vf.ln()), "all equal, first element");
        check(edge - 1, d(1.0 / vf, 0.0, vf.ln()), "all equal, a tile's last element");
        check(edge, d(1.0 / vf, 1.0, vf.ln()), "all equal, the target on a tile's first element");
        check(v - 1, d(1.0 / vf, 0.0, vf.ln()), "all equal, last element");
        // Two levels, the target at the odd logit in the last tile's tail.
        check(v, d(p0, 0.0, h2), "two levels, first element");
        check(2 * v - 2, d(p0, 0.0, h2), "two levels, next to the last");
        check(2 * v - 1, d(pb, 1.0, h2), "two levels, the target at the odd logit");
        assert!(g[2 * v..3 * v].iter().all(|e| *e == 0.0), "{dtype}: the ignored row is 0 over NaN logits");
        check(3 * v + 5, d(p03, 1.0, h3), "masked row, the target");
        check(3 * v + 8195, d(pb3, 0.0, h3), "masked row, the odd logit");
        check(3 * v + 9000, d(p03, 0.0, h3), "masked row, another element");
        assert_eq!(g[3 * v + 100], 0.0, "{dtype}: a -inf entry's gradient");
        // Each kept row sums to dlp·(1 − Σp)/T − dent·Σ p(ln p + H)/T = 0.
        for row in [0usize, 1, 3] {
            let sum: f64 = g[row * v..(row + 1) * v].iter().sum();
            close(
                sum,
                0.0,
                if dtype == DType::Float32 { 1e-4 } else { 2e-2 },
                &format!("{dtype}: row {row} sum"),
            );
        }
    }
}

#[test]
fn a_rows_bits_do_not_depend_on_the_batch() {
    // Row r of a 97-row batch (3 rows a core on 33 cores) against the same row alone (the V
    // split: its two 16-bit tiles on two cores): the same bits in both modes.
    let spec = spec();
    let v = 20011usize;
    let n = 97usize;
    let x: Vec<f64> = (0..n * v).map(|i| ((i * 7919 % 1013) as f64 - 506.0) / 97.0).collect();
    let target: Vec<i64> = (0..n).map(|r| (r * 131 % v) as i64).collect();
    let per_row = |k: usize| (0..n).map(|r| ((r * 37 + k * 11) % 19) as f64 / 7.0 - 1.0).collect::<Vec<_>>();
    // Any finite lse and H do: the batch independence does not need them consistent.
    let rows = Rows {
        lse: per_row(0).iter().map(|e| e + 12.0).collect(),
        entropy: per_row(1),
        dlogprob: per_row(2),
        dentropy: per_row(3),
    };
    let batch = HostTensor::from_f64(DType::Float16, &[n, v], &x);
    let all = dlogits(&run(&spec, DType::Float16, batch, &target, &rows, &attrs(1.0, -100), false).unwrap());
    for r in [0usize, 50, 96] {
        let one = HostTensor::from_f64(DType::Float16, &[1, v], &x[r * v..(r + 1) * v]);
        let alone_rows = Rows {
            lse: vec![rows.lse[r]],
            entropy: vec![rows.entropy[r]],
            dlogprob: vec![rows.dlogprob[r]],
            dentropy: vec![rows.dentropy[r]],
        };
        let alone = dlogits(
            &run(&spec, DType::Float16, one, &target[r..r + 1], &alone_rows, &attrs(1.0, -100), false)
                .unwrap(),
        );
        let batch_row = &all[r * v..(r + 1) * v];
        assert!(alone.iter().zip(batch_row).all(|(a, b)| a.to_bits() == b.to_bits()), "row {r}");
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
    let rows = |n: usize, lse: usize| Rows {
        lse: vec![0.0; lse],
        entropy: vec![0.0; n],
        dlogprob: vec![0.0; n],
        dentropy: vec![0.0; n],
    };
    let w = why(run(&spec, DType::Float32, z(&[2, 10]), &[0, 1], &rows(2, 3), &attrs(1.0, -100), true));
    assert!(w.contains("lse (rank 1, 3 elements) must have target's shape (rank 1, 2 elements)"), "{w}");
    let w = why(run(&spec, DType::Float32, z(&[3, 10]), &[0, 1], &rows(2, 2), &attrs(1.0, -100), true));
    assert!(w.contains("target (rank 1, 2 elements) must have logits' leading dims"), "{w}");
    let w = why(run(&spec, DType::Float32, z(&[2, 10]), &[0, 1], &rows(2, 2), &attrs(-1.0, -100), true));
    assert!(w.contains("temperature -1 must be positive and finite"), "{w}");
}

#[test]
fn a_vocabulary_past_the_forwards_64_tiles_is_planned() {
    // The backward keeps no per-tile partials: V = 600000 (the forward refuses it) is 37+ tiles.
    let spec = spec();
    let n = 1usize;
    let v = 600_000usize;
    let rows = Rows {
        lse: vec![(v as f64).ln()],
        entropy: vec![(v as f64).ln()],
        dlogprob: vec![1.0],
        dentropy: vec![1.0],
    };
    let r = run(
        &spec,
        DType::Float32,
        HostTensor::zeros(DType::Float32, &[n, v]),
        &[0],
        &rows,
        &attrs(1.0, -100),
        true,
    );
    assert!(r.is_ok(), "{:?}", r.err());
}

/// The in-place form (dlogits written over the logits' own buffer, which the runner passes as
/// the ref output and marks in place, so a read of a written byte stops the run) gives the
/// out-of-place grad's bits: rows over cores (97 rows of 2 tiles, 3 a core) and the V split (5
/// rows of 3 tiles), 16-bit and float32, ignore_index rows among them.
#[test]
fn the_in_place_form_gives_the_out_of_place_bits() {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let grad = specs.iter().find(|s| s.name == "logprob_entropy_grad").unwrap();
    let inplace = specs.iter().find(|s| s.name == "logprob_entropy_grad_inplace").unwrap();
    for (dtype, n, v) in [(DType::BFloat16, 97usize, 20011usize), (DType::Float32, 5, 20011)] {
        let x: Vec<f64> = (0..n * v).map(|i| ((i * 7919 % 1013) as f64 - 506.0) / 97.0).collect();
        let target: Vec<i64> = (0..n).map(|r| if r % 4 == 2 { -100 } else { (r * 131 % v) as i64 }).collect();
        let per_row =
            |k: usize| (0..n).map(|r| ((r * 37 + k * 11) % 19) as f64 / 7.0 - 1.0).collect::<Vec<_>>();
        let rows = Rows {
            lse: per_row(0).iter().map(|e| e + 12.0).collect(),
            entropy: per_row(1),
            dlogprob: per_row(2),
            dentropy: per_row(3),
        };
        let logits = HostTensor::from_f64(dtype, &[n, v], &x);
        let out = run(grad, dtype, logits.clone(), &target, &rows, &attrs(2.0, -100), false).unwrap();
        let want = out.outputs.iter().find(|(n, _)| n == "dlogits").unwrap().1.clone();
        let col = inplace.column_for(dtype).unwrap();
        let project = render_project(&[inplace]).unwrap();
        let runner = build_runner(&project, inplace, col, BuildOptions::default()).unwrap();
        let f = |v: &[f64]| HostTensor::from_f64(DType::Float32, &[v.len()], v);
        let inputs = vec![
            ("logits".to_string(), logits),
            ("target".to_string(), HostTensor::from_i64(DType::Int32, &[n], &target)),
            ("lse".to_string(), f(&rows.lse)),
            ("entropy".to_string(), f(&rows.entropy)),
            ("dlogprob".to_string(), f(&rows.dlogprob)),
            ("dentropy".to_string(), f(&rows.dentropy)),
        ];
        let inplace_names = inplace.mutated_inputs();
        let got = run_case(
            &runner,
            inplace,
            soc::find(soc::DEFAULT_SOC).unwrap(),
            &CaseInput { inputs: &inputs, attrs: &attrs(2.0, -100), inplace: &inplace_names },
            false,
        )
        .unwrap();
        let got = &got.outputs.iter().find(|(n, _)| n == "logits").unwrap().1;
        assert_eq!(got.bytes, want.bytes, "{dtype} [{n}, {v}]: in place differs from out of place");
        assert!(got.bytes != inputs[0].1.bytes, "{dtype}: the logits were not overwritten");
    }
}

/// The tile the cases aim their targets at (`tile::plan`, Rust) is the one the TilingFunc picks,
/// for every dtype, at the model vocabulary and the sweep's, in both modes (1 row: the V split;
/// 50: rows over cores); and, from the rule itself rather than either implementation: each tile
/// a multiple of 512 bytes, the row in ceil(V / tile) tiles with a non-empty last one, no tile
/// past what the UB holds and no fewer tiles that would fit, and at V = 151936 transfers of at
/// least 16 KiB on average (issue 28).
#[test]
fn the_tile_mirror_is_the_tiling_funcs() {
    let spec = spec();
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let budget = soc::UB_PLAN_BYTES_A2;
    for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
        let col = spec.inputs[0].dtypes.iter().position(|d| *d == dtype).unwrap();
        let project = render_project(&[&spec]).unwrap();
        let runner = build_runner(&project, &spec, col, BuildOptions::default()).unwrap();
        let elem = dtype.size_bytes() as u64;
        for v in [7usize, 1000, 8192, 9001, 11265, 20011, 40009, 151936, 152064, 262144, 600_000] {
            for n in [1usize, 50] {
                let f = |len: usize| HostTensor::zeros(DType::Float32, &[len]);
                let inputs = vec![
                    ("logits".to_string(), HostTensor::zeros(dtype, &[n, v])),
                    ("target".to_string(), HostTensor::zeros(DType::Int32, &[n])),
                    ("lse".to_string(), f(n)),
                    ("entropy".to_string(), f(n)),
                    ("dlogprob".to_string(), f(n)),
                    ("dentropy".to_string(), f(n)),
                ];
                let case = CaseInput { inputs: &inputs, attrs: &attrs(1.0, -100), inplace: &[] };
                let run = run_case(&runner, &spec, soc, &case, true).unwrap();
                let field = |name: &str| run.parsed.tiling.get(name).and_then(|x| x.as_u64()).unwrap();
                let (len, tiles) = (field("tileLen"), field("tilesPerRow"));
                let what = format!("{dtype} [{n}, {v}]: tile {len} x {tiles}");
                assert_eq!((len, tiles), tile::plan(v as u64, elem, budget), "{what}: the mirror differs");
                assert_eq!(len * elem % 512, 0, "{what}: not a multiple of 512 bytes");
                assert_eq!(tiles, (v as u64).div_ceil(len), "{what}: not ceil(V / tile) tiles");
                assert!((tiles - 1) * len < v as u64, "{what}: an empty last tile");
                assert!(tile::ub_bytes(len, elem, 256) <= budget, "{what}: over the UB with a full group");
                // The fewest tiles: one fewer would need a tile the UB does not hold (or past 16384).
                if tiles > 1 {
                    let align = 512 / elem;
                    let fewer = (v as u64).div_ceil(tiles - 1).div_ceil(align) * align;
                    assert!(
                        fewer > 16384 || tile::ub_bytes(fewer, elem, 256) > budget,
                        "{what}: {} tiles of {fewer} would do",
                        tiles - 1
                    );
                }
                if v == 151936 {
                    assert!(v as u64 * elem >= tiles * 16384, "{what}: a mean transfer under 16 KiB");
                }
            }
        }
    }
}
