//! layer_norm_grad (and gamma_offset in the row_norm_grad family): the f64 reference against
//! central finite differences of an f64 LayerNorm forward written here, the kernel on the twin
//! against the reference per dtype and mode, with an offset, mutants that must fail, and
//! determinism (two runs, and 48, 40, 7 and 1 cores, give the same bits).

use crate::support::Patched;
use crate::support::{patched_templates, patched_templates_all};
use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::reference::row_norm::layer_norm_grad;
use ascend_opgen::spec::OpSpec;
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::inputs::Distribution;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, Case, CaseInput, CaseRun};
use ascend_opgen::verify::{check_case, run_verify, VerifyOptions};
use ascend_opgen::DType;
use std::path::Path;

fn op(name: &str) -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == name).unwrap()
}

/// A catalogue spec with `[row_norm] gamma_offset = 1.0` added (Gemma's 1 + gamma).
fn with_offset(name: &str) -> OpSpec {
    let path = ascend_opgen::repo_root().join(format!("kernels/{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let text = if text.contains("[row_norm]\n") {
        text.patched("[row_norm]\n", "[row_norm]\ngamma_offset = 1.0\n")
    } else {
        format!("{text}\n[row_norm]\ngamma_offset = 1.0\n")
    };
    family::parse_str(Path::new(&format!("kernels/{name}.toml")), &text).unwrap()
}

/// Multiples of 2^-10 in [-4, 4): x ± 2^-12 is exact, so the finite differences see exactly the
/// perturbed values.
fn grid_values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 8192) as f64 / 1024.0 - 4.0
        })
        .collect()
}

fn f32t(shape: &[usize], v: &[f64]) -> HostTensor {
    HostTensor::from_f64(DType::Float32, shape, v)
}

/// LayerNorm in f64, from its definition: per row of n, μ = Σx/n, σ² = Σ(x − μ)²/n,
/// y = (x − μ)/√(σ² + eps)·(γ + offset) + β. Returns y and the per-row (μ, 1/√(σ² + eps)).
fn layer_norm_f64(
    x: &[f64],
    gamma: &[f64],
    beta: &[f64],
    offset: f64,
    eps: f64,
) -> (Vec<f64>, Vec<(f64, f64)>) {
    let n = gamma.len();
    let mut y = Vec::new();
    let mut stats = Vec::new();
    for row in x.chunks_exact(n) {
        let mu = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / n as f64;
        let r = 1.0 / (var + eps).sqrt();
        stats.push((mu, r));
        y.extend((0..n).map(|j| (row[j] - mu) * r * (gamma[j] + offset) + beta[j]));
    }
    (y, stats)
}

#[test]
fn reference_matches_central_finite_differences_of_an_f64_layer_norm() {
    let (rows, n, eps) = (3usize, 8usize, 1e-5);
    let shape = [rows, n];
    let x = grid_values(rows * n, 11);
    let gamma = grid_values(n, 12);
    let beta = grid_values(n, 13);
    let dy = grid_values(rows * n, 14);
    let loss = |x: &[f64], g: &[f64], b: &[f64], offset: f64| -> f64 {
        let (y, _) = layer_norm_f64(x, g, b, offset, eps);
        y.iter().zip(&dy).map(|(a, d)| a * d).sum()
    };
    let h = 2f64.powi(-12);
    for offset in [0.0, 1.0] {
        // The forward's mean and rstd as the backward receives them (float32).
        let (_, stats) = layer_norm_f64(&x, &gamma, &beta, offset, eps);
        let mean: Vec<f64> = stats.iter().map(|s| s.0).collect();
        let rstd: Vec<f64> = stats.iter().map(|s| s.1).collect();
        let g = layer_norm_grad(
            &f32t(&shape, &dy),
            &f32t(&shape, &x),
            &f32t(&[rows, 1], &mean),
            &f32t(&[rows, 1], &rstd),
            &f32t(&[n], &gamma),
            offset,
        )
        .unwrap();
        // O(h²) truncation plus the float32 rounding of mean and rstd (2^-24 relative).
        let near = |a: f64, fd: f64| (a - fd).abs() <= 1e-5 * (1.0 + fd.abs());
        for i in 0..rows * n {
            let (mut up, mut down) = (x.clone(), x.clone());
            up[i] += h;
            down[i] -= h;
            let fd = (loss(&up, &gamma, &beta, offset) - loss(&down, &gamma, &beta, offset)) / (2.0 * h);
            assert!(near(g.dx[i], fd), "offset {offset}: dx[{i}] = {} vs finite difference {fd}", g.dx[i]);
        }
        for j in 0..n {
            let (mut up, mut down) = (gamma.clone(), gamma.clone());
            up[j] += h;
            down[j] -= h;
            let fd = (loss(&x, &up, &beta, offset) - loss(&x, &down, &beta, offset)) / (2.0 * h);
            assert!(near(g.dgamma[j], fd), "offset {offset}: dgamma[{j}] = {} vs {fd}", g.dgamma[j]);
            let (mut up, mut down) = (beta.clone(), beta.clone());
            up[j] += h;
            down[j] -= h;
            let fd = (loss(&x, &gamma, &up, offset) - loss(&x, &gamma, &down, offset)) / (2.0 * h);
            assert!(near(g.dbeta[j], fd), "offset {offset}: dbeta[{j}] = {} vs {fd}", g.dbeta[j]);
        }
    }
}

/// A LayerNorm backward of a one-row case worked by hand: x = [1, 2, 3, 4] (μ = 2.5, σ² = 1.25),
/// eps = 0, so r = 1/√1.25 and x̂ = [-1.5, -0.5, 0.5, 1.5]·r; dy = [1, 0, 0, 0], γ = 1: g = dy,
/// mean(g) = 1/4, mean(g·x̂) = -1.5r/4, dx_0 = r·(1 − 1/4 − 1.5r·1.5r/4) = r·(0.75 − 2.25/5)
/// = 0.3r; dγ = dy·x̂ = [-1.5r, 0, 0, 0]; dβ = [1, 0, 0, 0].
#[test]
fn reference_hand_worked_row() {
    let r = 1.0 / 1.25f64.sqrt();
    let g = layer_norm_grad(
        &f32t(&[1, 4], &[1.0, 0.0, 0.0, 0.0]),
        &f32t(&[1, 4], &[1.0, 2.0, 3.0, 4.0]),
        &f32t(&[1, 1], &[2.5]),
        &HostTensor::from_f64(DType::Float32, &[1, 1], &[r]),
        &f32t(&[4], &[1.0; 4]),
        0.0,
    )
    .unwrap();
    let rf = f64::from(r as f32);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
    assert!(close(g.dx[0], rf * (1.0 - 0.25 - 1.5 * rf * 1.5 * rf / 4.0)), "{:?}", g.dx);
    // The same as 0.3 r to rstd's float32 rounding.
    assert!((g.dx[0] - 0.3 * r).abs() <= 1e-7 * 0.3 * r, "{} vs {}", g.dx[0], 0.3 * r);
    assert!(close(g.dgamma[0], -1.5 * rf) && g.dgamma[1..].iter().all(|v| *v == 0.0), "{:?}", g.dgamma);
    assert_eq!(g.dbeta, vec![1.0, 0.0, 0.0, 0.0]);
}

fn case(spec: &OpSpec, x: &[usize], dist: Distribution, seed: u64) -> Case {
    let n = *x.last().unwrap();
    let mut stat = x.to_vec();
    *stat.last_mut().unwrap() = 1;
    let names: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
    let mut shapes = vec![(names[0].clone(), x.to_vec()), (names[1].clone(), x.to_vec())];
    let layer = names.len() == 5 && names[2] == "mean";
    shapes.push((names[2].clone(), stat.clone()));
    if layer {
        shapes.push((names[3].clone(), stat));
        shapes.push((names[4].clone(), vec![n]));
    } else {
        shapes.push((names[3].clone(), vec![n]));
        if names.len() == 5 {
            shapes.push((names[4].clone(), x.to_vec()));
        }
    }
    Case { shapes, dist, seed, attrs: Vec::new() }
}

fn run_on(spec: &OpSpec, column: usize, soc: &soc::Soc, c: &Case) -> CaseRun {
    let project = render_project(&[spec]).unwrap();
    let runner = build_runner(&project, spec, column, BuildOptions { sanitize: false }).unwrap();
    let (inputs, attrs) = family::case_inputs(spec, column, c).unwrap();
    run_case(&runner, spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, false).unwrap()
}

/// Every mode (several rows of 128 per pass, whole rows of 2048, split-D rows of 16384) in
/// every dtype against the reference, with aimed rows (a large last element, one-hot rows, a
/// large mean); and the gamma_offset variants of layer_norm_grad and rms_norm_grad.
#[test]
fn twin_matches_the_reference_in_every_mode_and_dtype() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let specs = [op("layer_norm_grad"), with_offset("layer_norm_grad"), with_offset("rms_norm_grad")];
    for (s, spec) in specs.iter().enumerate() {
        let project = render_project(&[spec]).unwrap();
        let dtypes: &[DType] = if s == 0 {
            &[DType::Float16, DType::BFloat16, DType::Float32]
        } else {
            &[DType::Float16, DType::Float32]
        };
        for &dtype in dtypes {
            let column = spec.column_for(dtype).unwrap();
            let runner = build_runner(&project, spec, column, BuildOptions { sanitize: false }).unwrap();
            for (x, mode) in
                [(vec![512usize, 128], 3u64), (vec![64, 1152], 1), (vec![6, 2048], 0), (vec![2, 16384], 2)]
            {
                for (d, dist) in [
                    Distribution::Uniform5,
                    Distribution::RowEnds,
                    Distribution::OneHot,
                    Distribution::NormalLargeMean,
                ]
                .into_iter()
                .enumerate()
                {
                    let c = case(spec, &x, dist, 70 + d as u64);
                    if d == 0 {
                        let (inputs, attrs) = family::case_inputs(spec, column, &c).unwrap();
                        let ci = CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] };
                        let run = run_case(&runner, spec, soc, &ci, false).unwrap();
                        assert_eq!(run.report["tiling"]["mode"], mode, "{} {dtype} {x:?}", spec.name);
                    }
                    check_case(spec, column, &runner, soc, &c).unwrap_or_else(|e| {
                        panic!("{} (offset case {s}) {dtype} {x:?} {dist:?}: {e}", spec.name)
                    });
                }
            }
        }
    }
}

/// The same case twice, and on 48, 40, 7 and 1 vector cores: the same bits in dx, dgamma and
/// dbeta (48 fixed row groups, each summed in row order on one core; after SyncAll each column
/// adds the 48 partials in group order whichever core takes it).
#[test]
fn outputs_are_the_same_bits_on_every_run_and_core_count() {
    let base = *soc::find(soc::DEFAULT_SOC).unwrap();
    let spec = op("layer_norm_grad");
    for dtype in [DType::BFloat16, DType::Float32] {
        let column = spec.column_for(dtype).unwrap();
        for x in [vec![200usize, 128], vec![100, 1152], vec![3, 16384]] {
            let c = case(&spec, &x, Distribution::NormalLargeMean, 5);
            let a = run_on(&spec, column, &base, &c);
            let b = run_on(&spec, column, &base, &c);
            assert_eq!(a.outputs, b.outputs, "{dtype} {x:?}: two runs differ");
            assert_eq!(a.outputs.len(), 3);
            assert_eq!(a.report["block_dim"], 48);
            for cores in [40u32, 7, 1] {
                let o = run_on(&spec, column, &soc::Soc { vector_cores: cores, ..base }, &c);
                assert_eq!(o.report["block_dim"], u64::from(cores), "{x:?}");
                assert_eq!(o.outputs, a.outputs, "{dtype} {x:?}: {cores} cores differ from 48");
            }
        }
    }
}

/// The quick sweep of layer_norm_grad in `dtype` with one template edit (`from` found
/// exactly `count` times, every occurrence replaced);
/// returns the failures per output (dx, dgamma, dbeta).
fn verify_mutant(from: &str, to: &str, count: usize, dtype: DType) -> (usize, usize, usize) {
    let templates = patched_templates_all("kernel/row_norm_grad.cpp.j2", from, to, count);
    let opts = VerifyOptions {
        ops: vec!["layer_norm_grad".into()],
        dtypes: vec![dtype],
        sanitize: false,
        templates: Some(templates),
        // One failing case is the evidence; the rest of the sweep would only repeat it.
        fail_fast: true,
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    let failed = |o: &str| report.rows.iter().filter(|r| r.output == o).map(|r| r.failures).sum();
    (failed("dx"), failed("dgamma"), failed("dbeta"))
}

#[test]
fn a_kernel_without_the_mean_of_g_fails() {
    let (dx, _, _) = verify_mutant(
        "const FF meanTerm = MeanTerm(rstd);",
        "const FF meanTerm{0.0f, 0.0f};",
        3,
        DType::BFloat16,
    );
    assert!(dx > 0, "dx without r * mean(g) passed");
}

#[test]
fn a_kernel_without_the_xhat_term_fails() {
    let (dx, _, _) = verify_mutant(
        "const FF coef = Coefficient(sum, rstd);",
        "const FF coef{0.0f, 0.0f};",
        3,
        DType::BFloat16,
    );
    assert!(dx > 0, "dx without xhat * mean(g * xhat) passed");
}

#[test]
fn a_kernel_skipping_a_row_of_dbeta_fails() {
    // Modes 0/1 (DxDbeta) never store the dbeta accumulator's new high part: every row of those
    // modes is skipped.
    let (_, dgamma, dbeta) =
        verify_mutant("Adds(accBH, sc, 0.0f, len);", "Adds(accBH, accBH, 0.0f, len);", 1, DType::BFloat16);
    assert!(dbeta > 0 && dgamma == 0, "dbeta skipping rows: dbeta {dbeta} dgamma {dgamma} failures");
}

#[test]
fn a_kernel_taking_x_instead_of_x_minus_mean_fails() {
    // The mean subtraction skipped: u = x (dx, dgamma wrong wherever the mean is not ~0).
    let (dx, dgamma, _) = verify_mutant(
        "Adds(u, xs, -rowMean_, len);",
        "Adds(u, xs, 0.0f, len); rowMean_ = 0.0f;",
        1,
        DType::Float32,
    );
    assert!(dx > 0 && dgamma > 0, "u = x passed: dx {dx} dgamma {dgamma} failures");
}

/// SyncAll replaced by a barrier of this core's pipes: the final sums may read dgamma and
/// dbeta partials other cores have not written yet, and the twin stops the kernel.
#[test]
fn a_kernel_without_sync_all_is_stopped_by_the_twin() {
    let templates = patched_templates(
        "kernel/row_norm_grad.cpp.j2",
        "        SyncAll();\n",
        "        PipeBarrier<PIPE_ALL>();\n",
    );
    let spec = op("layer_norm_grad");
    let project = ascend_opgen::codegen::render_project_with(&[&spec], &templates).unwrap();
    let column = spec.column_for(DType::Float32).unwrap();
    let runner = build_runner(&project, &spec, column, BuildOptions { sanitize: false }).unwrap();
    let c = case(&spec, &[200, 128], Distribution::Uniform5, 3);
    let err = check_case(&spec, column, &runner, soc::find(soc::DEFAULT_SOC).unwrap(), &c)
        .expect_err("the mutant must be stopped")
        .to_string();
    assert!(err.contains("between cores without SyncAll") && err.contains("GM 'workspace'"), "{err}");
}
