//! Batch invariance, a contract of every row-wise op (issue 28): a row's outputs are the same
//! bits whatever the batch it runs in — its size (1 to 4096 rows), the row's position in it and
//! the number of vector cores (48, 40, 7, 1). RL needs it: the rollout scores a response in one
//! batch, the trainer in another, and a GRPO step stalls when their log-probs disagree. The
//! tiling modes a batch size selects (several short rows per pass, one row per pass, split rows,
//! row groups per core) must not change a row's arithmetic.
//!
//! Each case draws a pool of rows once, runs it whole on 48 cores (the reference), then runs
//! slices of it — every batch size of the list, taken from the middle of the pool so each row
//! sits at another position than in the pool — and the pool again on 40, 7 and 1 cores, and
//! compares each row's outputs byte for byte, and a batch of a few rows on each of those core
//! counts (logprob_entropy and its backward split V over the cores when rows < cores). Inputs with the pool's row count as their first
//! dim are sliced with the rows; the others (gamma, beta) are shared. Reductions over the rows
//! (dgamma, dbeta) are not row outputs and are not compared here (their own tests check that
//! they are the same bits on every core count).

use ascend_opgen::codegen::render_project;
use ascend_opgen::family;
use ascend_opgen::plan::soc;
use ascend_opgen::spec::OpSpec;
use ascend_opgen::tensor::HostTensor;
use ascend_opgen::verify::inputs::Distribution;
use ascend_opgen::verify::{build_runner, case_inputs, run_case, BuildOptions, Case, CaseInput, CaseRun};
use ascend_opgen::DType;

/// One row-wise op at one dtype and row width.
struct RowCase {
    op: &'static str,
    dtype: DType,
    /// The first input's shape is [rows, width].
    width: usize,
    /// The pool's rows: the largest batch.
    pool: usize,
    /// The outputs that are one row per input row.
    row_outputs: &'static [&'static str],
    /// A tiling mode the batch sizes must reach (`FamilyOps::plan_coverage`'s name).
    reaches: Option<&'static str>,
}

/// Batch sizes tried (those below the pool's): single rows, a few, around the core count, and
/// sizes where the row norms change tiling mode or rows per core.
const BATCH_SIZES: [usize; 12] = [1, 2, 3, 7, 47, 48, 49, 97, 143, 300, 1000, 2049];
const CORE_COUNTS: [u32; 3] = [40, 7, 1];
/// The batch run on each of CORE_COUNTS too: fewer rows than 40 and 7 cores.
const FEW_ROWS: usize = 5;

const LOGPROB: &[&str] = &["logprob", "entropy", "lse"];

fn cases() -> Vec<RowCase> {
    use DType::{BFloat16, Float32};
    let rc =
        |op, dtype, width, pool, row_outputs| RowCase { op, dtype, width, pool, row_outputs, reaches: None };
    let split = |dtype, width, pool| RowCase {
        reaches: Some("v-split"),
        ..rc("logprob_entropy", dtype, width, pool, LOGPROB)
    };
    vec![
        // Qwen3's q/k-norm rows (many short rows per pass) and Qwen2-7B's hidden size.
        rc("rms_norm", BFloat16, 128, 4096, &["y", "rstd"]),
        rc("rms_norm", BFloat16, 3584, 320, &["y", "rstd"]),
        // float32 rows of 8192 split across UB passes (three or more rows per core past 144).
        rc("rms_norm", Float32, 8192, 160, &["y", "rstd"]),
        rc("add_rms_norm", BFloat16, 3584, 320, &["y", "rstd", "x_sum"]),
        rc("layer_norm", BFloat16, 1152, 400, &["y", "mean", "rstd"]),
        rc("layer_norm", Float32, 128, 4096, &["y", "mean", "rstd"]),
        rc("rms_norm_grad", BFloat16, 128, 4096, &["dx"]),
        rc("rms_norm_grad", BFloat16, 3584, 320, &["dx"]),
        rc("add_rms_norm_grad", BFloat16, 3584, 320, &["dx"]),
        rc("layer_norm_grad", BFloat16, 1152, 400, &["dx"]),
        // One UB tile of the vocabulary per row, and many.
        // (rows < cores: V split over the cores, rows in whole tiles of V), Qwen's vocabulary.
        rc("logprob_entropy", BFloat16, 1000, 2100, LOGPROB),
        split(Float32, 40000, 60),
        split(BFloat16, 40009, 100),
        split(BFloat16, 151936, 50),
        rc("logprob_entropy_grad", BFloat16, 1000, 2100, &["dlogits"]),
        // The backward's V split (rows < cores: runs of tiles, no combine) against its rows.
        RowCase { reaches: Some("v-split"), ..rc("logprob_entropy_grad", Float32, 40000, 60, &["dlogits"]) },
        // Responses as rows (64 per vector group) over time chunks.
        rc("gae", Float32, 1000, 2100, &["advantages", "returns"]),
        rc("discounted_return", Float32, 3000, 400, &["returns"]),
    ]
}

fn op<'a>(catalogue: &'a [OpSpec], name: &str) -> &'a OpSpec {
    catalogue.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no op {name} in kernels/"))
}

/// Rows [start, start + n) of a tensor whose first dim is the pool's rows.
fn rows(t: &HostTensor, start: usize, n: usize) -> HostTensor {
    let per_row = t.bytes.len() / t.shape[0];
    let mut shape = t.shape.clone();
    shape[0] = n;
    HostTensor { dtype: t.dtype, shape, bytes: t.bytes[start * per_row..(start + n) * per_row].to_vec() }
}

/// The pool's inputs with the row-wise ones cut to rows [start, start + n).
fn batch(inputs: &[(String, HostTensor)], pool: usize, start: usize, n: usize) -> Vec<(String, HostTensor)> {
    inputs
        .iter()
        .map(|(name, t)| {
            let cut = if t.shape.first() == Some(&pool) { rows(t, start, n) } else { t.clone() };
            (name.clone(), cut)
        })
        .collect()
}

fn output<'a>(run: &'a CaseRun, name: &str) -> &'a HostTensor {
    &run.outputs.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no output {name}")).1
}

/// The first row (of `n`) that differs between `got` and rows [start, start + n) of the
/// reference, if any: its index in `got` and how it differs.
fn first_differing_row(
    got: &HostTensor,
    reference: &HostTensor,
    start: usize,
    n: usize,
) -> Option<(usize, String)> {
    let per_row = reference.numel() / reference.shape[0];
    assert_eq!(got.numel(), n * per_row, "output size");
    (0..n).find_map(|r| {
        let (a, b) = (r * per_row, (start + r) * per_row);
        let gap = |k: usize| (got.get_f64(a + k) - reference.get_f64(b + k)).abs();
        let differing: Vec<usize> =
            (0..per_row).filter(|&k| got.bits(a + k) != reference.bits(b + k)).collect();
        let &worst = differing.iter().max_by(|&&k, &&l| gap(k).total_cmp(&gap(l)))?;
        let (here, there) = (got.get_f64(a + worst), reference.get_f64(b + worst));
        Some((
            r,
            format!(
                "{} of {per_row} elements differ, the most at {worst}: {here:e} here, {there:e} there",
                differing.len()
            ),
        ))
    })
}

#[test]
fn a_rows_outputs_are_the_same_bits_in_any_batch_and_on_any_core_count() {
    let base = *soc::find(soc::DEFAULT_SOC).unwrap();
    let catalogue = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    for c in cases() {
        let spec = op(&catalogue, c.op);
        let column = spec.column_for(c.dtype).unwrap();
        let project = render_project(&[spec]).unwrap();
        let runner = build_runner(&project, spec, column, BuildOptions { sanitize: false }).unwrap();
        let shapes = (0..spec.inputs.len())
            .map(|i| (spec.inputs[i].name.clone(), family::derived_shape(spec, i, &[c.pool, c.width])))
            .collect();
        let pool_case =
            Case { shapes, dist: Distribution::Uniform5, seed: 2026, attrs: family::default_attrs(spec) };
        let (inputs, attrs) = family::case_inputs(spec, column, &pool_case)
            .unwrap_or_else(|| (case_inputs(spec, column, &pool_case), pool_case.attrs.clone()));
        let run = |inputs: &[(String, HostTensor)], soc: &soc::Soc| {
            run_case(&runner, spec, soc, &CaseInput { inputs, attrs: &attrs, inplace: &[] }, false)
                .unwrap_or_else(|e| panic!("{} {} [{}, {}]: {e}", c.op, c.dtype, c.pool, c.width))
        };
        let reference = run(&inputs, &base);
        let what = |n: usize, cores: u32| {
            format!("{} {} width {}: {n} rows on {cores} cores", c.op, c.dtype, c.width)
        };
        // The tiling modes the batch sizes selected, in the family's words (the coverage rule's).
        let mode = |run: &CaseRun| {
            family::plan_coverage(spec, &|name: &str| run.parsed.tiling.get(name).and_then(|v| v.as_f64()))
                .mode
        };
        let mut modes = std::collections::BTreeSet::new();
        modes.insert(mode(&reference));
        for n in BATCH_SIZES.into_iter().filter(|&n| n < c.pool) {
            let start = (c.pool - n) / 2;
            let got = run(&batch(&inputs, c.pool, start, n), &base);
            modes.insert(mode(&got));
            for name in c.row_outputs {
                if let Some((r, how)) =
                    first_differing_row(output(&got, name), output(&reference, name), start, n)
                {
                    panic!(
                        "{}: `{name}` of row {} (at {r} in the batch) differs from the whole pool's: {how}",
                        what(n, 48),
                        start + r
                    );
                }
            }
        }
        for cores in CORE_COUNTS {
            let got = run(&inputs, &soc::Soc { vector_cores: cores, ..base });
            assert!(
                got.parsed.block_dim <= u64::from(cores),
                "{}: block_dim {}",
                what(c.pool, cores),
                got.parsed.block_dim
            );
            for name in c.row_outputs {
                if let Some((r, how)) =
                    first_differing_row(output(&got, name), output(&reference, name), 0, c.pool)
                {
                    panic!("{}: `{name}` of row {r} differs from 48 cores': {how}", what(c.pool, cores));
                }
            }
            let start = (c.pool - FEW_ROWS) / 3;
            let got =
                run(&batch(&inputs, c.pool, start, FEW_ROWS), &soc::Soc { vector_cores: cores, ..base });
            modes.insert(mode(&got));
            for name in c.row_outputs {
                if let Some((r, how)) =
                    first_differing_row(output(&got, name), output(&reference, name), start, FEW_ROWS)
                {
                    panic!(
                        "{}: `{name}` of row {} (at {r} in the batch) differs from the whole pool's on 48 cores: {how}",
                        what(FEW_ROWS, cores),
                        start + r
                    );
                }
            }
        }
        if let Some(m) = c.reaches {
            assert!(
                modes.contains(m),
                "{} {} width {}: no batch reached mode {m}: {modes:?}",
                c.op,
                c.dtype,
                c.width
            );
        }
        let sizes = BATCH_SIZES.iter().filter(|&&n| n < c.pool).count() + 1;
        println!(
            "{} {} width {}: {sizes} batch sizes, 4 core counts, tiling modes {modes:?}: the same bits",
            c.op, c.dtype, c.width
        );
    }
}
