//! rms_norm_grad and add_rms_norm_grad: the f64 reference against central finite differences
//! of the forward reference, the kernels on the twin against the reference per dtype and mode
//! (through the `check_case` verify uses), mutants that must fail, and determinism (two runs,
//! and two core counts, give the same bits).

use crate::support::{patched_templates, patched_templates_all};
use ascend_opgen::codegen::{render_project, template_sources};
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::reference::row_norm::{partial_group, rms_norm, rms_norm_grad, PARTIAL_GROUPS};
use ascend_opgen::spec::OpSpec;
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::inputs::Distribution;
use ascend_opgen::verify::{build_runner, run_case, BuildOptions, Case, CaseInput, CaseRun, Runner};
use ascend_opgen::verify::{check_case, run_verify, VerifyOptions};
use ascend_opgen::DType;

fn op(name: &str) -> OpSpec {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    specs.into_iter().find(|s| s.name == name).unwrap()
}

/// Multiples of 2^-10 in [-4, 4): x ± 2^-12 is exact in float32, so the finite differences
/// see exactly the perturbed values.
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

/// L = Σ dy·rms_norm(x, gamma).y (+ Σ ds·x for the residual's direct gradient), in f64.
fn loss(x: &[f64], gamma: &[f64], dy: &[f64], ds: Option<&[f64]>, shape: &[usize], eps: f64) -> f64 {
    let y = rms_norm(&f32t(shape, x), &f32t(&[gamma.len()], gamma), eps).unwrap().y;
    let direct: f64 = ds.map(|d| d.iter().zip(x).map(|(a, b)| a * b).sum()).unwrap_or(0.0);
    y.iter().zip(dy).map(|(a, b)| a * b).sum::<f64>() + direct
}

#[test]
fn reference_matches_central_finite_differences_of_the_forward() {
    let (rows, n, eps) = (3usize, 8usize, 1e-6);
    let shape = [rows, n];
    let x = grid_values(rows * n, 1);
    let gamma = grid_values(n, 2);
    let dy = grid_values(rows * n, 3);
    let ds = grid_values(rows * n, 4);
    // The forward's rstd, as the backward receives it (float32).
    let fwd = rms_norm(&f32t(&shape, &x), &f32t(&[n], &gamma), eps).unwrap();
    let rstd = f32t(&fwd.rstd_shape, &fwd.rstd);
    let h = 2f64.powi(-12);
    for with_ds in [false, true] {
        let dsv = with_ds.then_some(ds.as_slice());
        let ds_t = f32t(&shape, &ds);
        let g = rms_norm_grad(
            &f32t(&shape, &dy),
            &f32t(&shape, &x),
            &rstd,
            &f32t(&[n], &gamma),
            with_ds.then_some(&ds_t),
        )
        .unwrap();
        for i in 0..rows * n {
            let (mut up, mut down) = (x.clone(), x.clone());
            up[i] += h;
            down[i] -= h;
            let fd = (loss(&up, &gamma, &dy, dsv, &shape, eps) - loss(&down, &gamma, &dy, dsv, &shape, eps))
                / (2.0 * h);
            // O(h²) truncation plus the float32 rounding of rstd (2^-24 relative).
            assert!(
                (g.dx[i] - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                "dx[{i}] = {} vs finite difference {fd}",
                g.dx[i]
            );
        }
        for j in 0..n {
            let (mut up, mut down) = (gamma.clone(), gamma.clone());
            up[j] += h;
            down[j] -= h;
            let fd =
                (loss(&x, &up, &dy, dsv, &shape, eps) - loss(&x, &down, &dy, dsv, &shape, eps)) / (2.0 * h);
            assert!(
                (g.dgamma[j] - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                "dgamma[{j}] = {} vs {fd}",
                g.dgamma[j]
            );
        }
    }
}

#[test]
fn groups_split_the_rows_evenly_in_order() {
    for rows in [0usize, 1, 3, 47, 48, 49, 100, 131072] {
        let mut next = 0;
        for k in 0..PARTIAL_GROUPS {
            let g = partial_group(rows, k);
            assert_eq!(g.start, next, "rows {rows} group {k}");
            assert!(g.len() == rows / PARTIAL_GROUPS || g.len() == rows / PARTIAL_GROUPS + 1);
            next = g.end;
        }
        assert_eq!(next, rows);
    }
}

fn case(spec: &OpSpec, x: &[usize], dist: Distribution, seed: u64) -> Case {
    let n = *x.last().unwrap();
    let mut rstd = x.to_vec();
    *rstd.last_mut().unwrap() = 1;
    let names: Vec<String> = spec.inputs.iter().map(|t| t.name.clone()).collect();
    let mut shapes = vec![
        (names[0].clone(), x.to_vec()),
        (names[1].clone(), x.to_vec()),
        (names[2].clone(), rstd),
        (names[3].clone(), vec![n]),
    ];
    if names.len() == 5 {
        shapes.push((names[4].clone(), x.to_vec()));
    }
    Case { shapes, dist, seed, attrs: Vec::new() }
}

/// Bits, not memory safety, are the point here (the sanitized catalogue sweep runs the same
/// kernels): the unsanitized runner, about twice as fast.
fn run_on(spec: &OpSpec, column: usize, soc: &soc::Soc, c: &Case) -> CaseRun {
    let project = render_project(&[spec]).unwrap();
    let runner = build_runner(&project, spec, column, BuildOptions { sanitize: false }).unwrap();
    run_built(&runner, spec, column, soc, c)
}

/// One case on a runner already built: its inputs drawn as verify draws them.
fn run_built(runner: &Runner, spec: &OpSpec, column: usize, soc: &soc::Soc, c: &Case) -> CaseRun {
    let (inputs, attrs) = family::case_inputs(spec, column, c).unwrap();
    run_case(runner, spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, false).unwrap()
}

/// Every mode (several rows of 128 per pass, whole rows of 2048 in two pieces of float work, split-D
/// rows of 16384) in every dtype, for both ops, against the reference.
#[test]
fn twin_matches_the_reference_in_every_mode_and_dtype() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    for name in ["rms_norm_grad", "add_rms_norm_grad"] {
        let spec = op(name);
        let project = render_project(&[&spec]).unwrap();
        for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
            let column = spec.column_for(dtype).unwrap();
            let runner = build_runner(&project, &spec, column, BuildOptions::default()).unwrap();
            for (x, mode) in
                [(vec![512usize, 128], 3u64), (vec![64, 1152], 1), (vec![6, 2048], 0), (vec![2, 16384], 2)]
            {
                // 16-bit rows held whole and aligned take mode 5 (exact 16-bit products; with
                // dx_sum too) instead of modes 0, 1 and 3.
                let exact = dtype != DType::Float32 && mode != 2;
                let mode = if exact { 5 } else { mode };
                let c = case(&spec, &x, Distribution::Uniform5, 77);
                let run = run_built(&runner, &spec, column, soc, &c);
                assert_eq!(
                    run.report["tiling"]["mode"], mode,
                    "{name} {dtype} {x:?}: {}",
                    run.report["tiling"]
                );
                check_case(&spec, column, &runner, soc, &c).unwrap();
            }
        }
    }
}

/// The quick sweep reaches the final sum with several pieces on a core at 48 cores (the
/// batched, prefetched copies of the group partials carry over to the next, shorter piece), for
/// the RMS grads and LayerNorm's dgamma and dbeta, and the case passes against the reference.
#[test]
fn the_quick_sweep_runs_several_final_sum_pieces_on_a_core() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    for (name, dtype) in [("rms_norm_grad", DType::BFloat16), ("layer_norm_grad", DType::Float32)] {
        let spec = op(name);
        let column = spec.column_for(dtype).unwrap();
        let project = render_project(&[&spec]).unwrap();
        let runner = build_runner(&project, &spec, column, BuildOptions { sanitize: false }).unwrap();
        let mut reached = 0;
        // A core's final-sum columns are at most the row's, so rows of <= 2048 (one piece) are skipped.
        for c in family::cases(&spec, family::Sweep::Quick)
            .into_iter()
            .filter(|c| *c.shapes[0].1.last().unwrap() > 2048)
        {
            let run = run_built(&runner, &spec, column, soc, &c);
            let tiling = &run.report["tiling"];
            let (cols, piece) =
                (tiling["finalCols"].as_u64().unwrap(), tiling["finalFactor"].as_u64().unwrap());
            if cols > piece {
                assert!(cols % piece != 0, "{name} {:?}: the next piece should be shorter", c.shapes);
                check_case(&spec, column, &runner, soc, &c).unwrap();
                reached += 1;
            }
        }
        assert!(reached > 0, "{name} {dtype}: no quick-sweep case runs several final-sum pieces on a core");
    }
}

/// The same case twice, and on 48, 40 (the A2 parts), 7 and 1 vector cores (the twin's
/// --vector-cores; 7 leaves cores with no columns in the final sum, 1 runs every group on one
/// core): the same bits, dx and dgamma. The 48 row groups do not depend on the core count, each
/// group's rows are summed in row order on one core, and after SyncAll each column adds the 48
/// partials in group order whichever core takes it.
#[test]
fn outputs_are_the_same_bits_on_every_run_and_core_count() {
    let base = *soc::find(soc::DEFAULT_SOC).unwrap();
    for name in ["rms_norm_grad", "add_rms_norm_grad"] {
        let spec = op(name);
        for dtype in [DType::BFloat16, DType::Float32] {
            let column = spec.column_for(dtype).unwrap();
            for x in [vec![200usize, 128], vec![100, 3584], vec![3, 16384]] {
                let c = case(&spec, &x, Distribution::NormalLargeMean, 5);
                let a = run_on(&spec, column, &base, &c);
                let b = run_on(&spec, column, &base, &c);
                assert_eq!(a.outputs, b.outputs, "{name} {dtype} {x:?}: two runs differ");
                assert_eq!(a.report["block_dim"], 48);
                for cores in [40u32, 7, 1] {
                    let o = run_on(&spec, column, &soc::Soc { vector_cores: cores, ..base }, &c);
                    assert_eq!(o.report["block_dim"], u64::from(cores), "{name} {x:?}");
                    assert_eq!(o.outputs, a.outputs, "{name} {dtype} {x:?}: {cores} cores differ from 48");
                }
            }
        }
    }
}

/// `arithmetic = "float32"` (16-bit inputs: the plain kernel, mode 4): the same bits on a second
/// run and on 40, 7 and 1 cores. Each group's pass sums are a tree fixed by rowFactor, the
/// passes added in order, and the 48 partials keep the float-float final sum in group order.
/// Short rows batched (2887x128: 60-61 rows a group, passes and a remainder) and Qwen2-7B's 3584
/// (per-row forms).
#[test]
fn plain_float32_outputs_are_the_same_bits_on_every_run_and_core_count() {
    let base = *soc::find(soc::DEFAULT_SOC).unwrap();
    for name in ["rms_norm_grad", "layer_norm_grad"] {
        let spec = op(name);
        let project = render_project(&[&spec]).unwrap();
        let column = spec.column_for(DType::BFloat16).unwrap();
        // Unsanitized, as run_on: bits are the point.
        let runner = build_runner(&project, &spec, column, BuildOptions { sanitize: false }).unwrap();
        for x in [vec![60usize * 48 + 7, 128], vec![100, 3584]] {
            let mut c = family::cases(&spec, ascend_opgen::family::Sweep::Quick)
                .into_iter()
                .find(|c| c.attrs.iter().any(|(n, _)| n == "arithmetic"))
                .expect("the sweep has float32-arithmetic cases");
            let first = c.shapes[1].1.clone();
            for (_, shape) in c.shapes.iter_mut() {
                if *shape == first {
                    *shape = x.clone();
                } else if shape.len() == 2 && shape[1] == 1 {
                    *shape = vec![x[0], 1];
                } else {
                    *shape = vec![x[1]];
                }
            }
            c.dist = Distribution::Uniform5;
            let (inputs, attrs) = family::case_inputs(&spec, column, &c).unwrap();
            let run = |soc: &soc::Soc| {
                run_case(
                    &runner,
                    &spec,
                    soc,
                    &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] },
                    false,
                )
                .unwrap()
            };
            let a = run(&base);
            assert_eq!(a.report["tiling"]["mode"], 4, "{name} {x:?}: {}", a.report["tiling"]);
            check_case(&spec, column, &runner, &base, &c).unwrap();
            assert_eq!(run(&base).outputs, a.outputs, "{name} {x:?}: two runs differ");
            for cores in [40u32, 7, 1] {
                let o = run(&soc::Soc { vector_cores: cores, ..base });
                assert_eq!(o.report["block_dim"], u64::from(cores), "{name} {x:?}");
                assert_eq!(o.outputs, a.outputs, "{name} {x:?}: {cores} cores differ from 48");
            }
        }
    }
}

/// SyncAll replaced by a barrier of this core's pipes only: the final sum may read partials
/// other cores have not written yet, and the twin stops the kernel (cross-core RAW on the
/// workspace). (Deleting the SyncAll outright is caught earlier, by the core's own MTE3 -> MTE2
/// order on its partials.)
#[test]
fn a_kernel_without_sync_all_is_stopped_by_the_twin() {
    let templates = patched_templates(
        "kernel/row_norm_grad.cpp.j2",
        "        SyncAll();\n",
        "        PipeBarrier<PIPE_ALL>();\n",
    );
    let spec = op("rms_norm_grad");
    let project = ascend_opgen::codegen::render_project_with(&[&spec], &templates).unwrap();
    let column = spec.column_for(DType::Float32).unwrap();
    let runner = build_runner(&project, &spec, column, BuildOptions { sanitize: false }).unwrap();
    let c = case(&spec, &[200, 128], Distribution::Uniform5, 3);
    let err = check_case(&spec, column, &runner, soc::find(soc::DEFAULT_SOC).unwrap(), &c)
        .expect_err("the mutant must be stopped");
    let err = err.to_string();
    assert!(err.contains("between cores without SyncAll") && err.contains("GM 'workspace'"), "{err}");
}

/// Runs the quick bfloat16 sweep of rms_norm_grad with one template edit (`from` found exactly
/// `count` times, every occurrence replaced); returns the failures
/// per output.
fn verify_mutant(from: &str, to: &str, count: usize) -> (usize, usize) {
    let templates = patched_templates_all("kernel/row_norm_grad.cpp.j2", from, to, count);
    let opts = VerifyOptions {
        ops: vec!["rms_norm_grad".into()],
        dtypes: vec![DType::BFloat16],
        sanitize: false,
        templates: Some(templates),
        // One failing case is the evidence; the rest of the sweep would only repeat it.
        fail_fast: true,
        ..VerifyOptions::default()
    };
    let report = run_verify(&opts).expect("verify runs");
    let failed = |o: &str| report.rows.iter().filter(|r| r.output == o).map(|r| r.failures).sum();
    (failed("dx"), failed("dgamma"))
}

#[test]
fn a_kernel_without_the_mean_term_fails() {
    let (dx, _) = verify_mutant("const FF coef = Coefficient(sum, rstd);", "const FF coef{0.0f, 0.0f};", 3);
    assert!(dx > 0, "dx without the mean term passed");
}

#[test]
fn a_kernel_skipping_a_row_of_dgamma_fails() {
    // The first row of each pass in modes 0/1 (RowOutputs: the row at base 0).
    let (_, dgamma) = verify_mutant(
        "            AccumulateDgamma(accH_.Get<float>()[col], accL_.Get<float>()[col], len, rstd);",
        "            if (base > 0) AccumulateDgamma(accH_.Get<float>()[col], accL_.Get<float>()[col], len, rstd);",
        1,
    );
    assert!(dgamma > 0, "dgamma skipping rows passed");
}

#[test]
fn a_kernel_dropping_the_float_float_low_parts_fails() {
    // dx = hi only: the plain float32 difference r g - x c, which cancels (1-ULP bar broken).
    let (dx, _) = verify_mutant("        Add(p, hi, t2, len);", "        Adds(p, hi, 0.0f, len);", 1);
    assert!(dx > 0, "dx without the low parts passed");
}

/// NaN and ±Inf inputs (the full sweep's nan_inf and outlier cases, in every mode): where an
/// Inf makes the float-float corrections NaN, the kernels fall back to the plain float32 value,
/// so NaN/Inf follow the reference's IEEE evaluation.
#[test]
fn non_finite_and_outlier_inputs_match_the_reference() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    for name in ["rms_norm_grad", "add_rms_norm_grad"] {
        let spec = op(name);
        let project = render_project(&[&spec]).unwrap();
        for dtype in [DType::Float16, DType::BFloat16, DType::Float32] {
            let column = spec.column_for(dtype).unwrap();
            let runner = build_runner(&project, &spec, column, BuildOptions::default()).unwrap();
            for x in [vec![256usize, 128], vec![4, 896], vec![3, 16384]] {
                for (i, dist) in [Distribution::NanInf, Distribution::Outlier].into_iter().enumerate() {
                    check_case(&spec, column, &runner, soc, &case(&spec, &x, dist, 90 + i as u64)).unwrap();
                }
            }
        }
    }
}

/// dgamma of a [64, 128] float16 case whose dy has one +Inf, at row 0 column 5 (x there set to 1,
/// rstd > 0): from the math dgamma[5] = +Inf (one +Inf term, the rest finite) and every other
/// column is finite. The Inf term's TwoSum corrections are Inf - Inf = NaN.
fn dgamma_with_an_inf_term(templates: &[(&'static str, String)]) -> Vec<f64> {
    let spec = op("rms_norm_grad");
    let project = ascend_opgen::codegen::render_project_with(&[&spec], templates).unwrap();
    let column = spec.column_for(DType::Float16).unwrap();
    let runner = build_runner(&project, &spec, column, BuildOptions { sanitize: false }).unwrap();
    let c = case(&spec, &[64, 128], Distribution::Uniform5, 90);
    let (mut inputs, attrs) = family::case_inputs(&spec, column, &c).unwrap();
    for (i, v) in [(0usize, f64::INFINITY), (1, 1.0)] {
        let t = &inputs[i].1;
        let mut values = t.to_f64();
        values[5] = v;
        inputs[i].1 = HostTensor::from_f64(t.dtype, &t.shape.clone(), &values);
    }
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let run =
        run_case(&runner, &spec, soc, &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &[] }, false)
            .unwrap();
    run.outputs.iter().find(|(n, _)| n == "dgamma").unwrap().1.to_f64()
}

/// The final sum keeps the plain sum where the float-float corrections are NaN: dgamma[5] is
/// +Inf; without that fallback it is NaN.
#[test]
fn a_kernel_without_the_final_nan_fallback_fails_on_an_inf_term() {
    let good = dgamma_with_an_inf_term(&template_sources());
    assert_eq!(good[5], f64::INFINITY, "dgamma[5] of the kernel");
    assert!(good.iter().enumerate().all(|(j, v)| j == 5 || v.is_finite()), "{good:?}");
    let templates =
        patched_templates("kernel/row_norm_grad.cpp.j2", "            KeepUnlessNan(s, h, len);\n", "");
    let broken = dgamma_with_an_inf_term(&templates);
    assert!(broken[5].is_nan(), "the mutant must give NaN at the Inf term, got {}", broken[5]);
}
