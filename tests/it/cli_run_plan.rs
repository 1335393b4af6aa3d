//! `opgen run` and `opgen plan` as a user runs them: .npy in, .npy out, checked against the
//! reference; the plan names the mode the generated TilingFunc picks.

use crate::support::TempDir;
use ascend_opgen::npy;
use ascend_opgen::reference::row_norm::rms_norm;
use ascend_opgen::tensor::round_to_dtype;
use ascend_opgen::toolchain::command::Cmd;
use ascend_opgen::verify::inputs::{generate, Distribution};
use ascend_opgen::DType;
use std::fs;

fn opgen(args: &[&str]) -> ascend_opgen::toolchain::command::Output {
    Cmd::new(env!("CARGO_BIN_EXE_opgen")).args(args).stdin_null().run().expect("opgen runs")
}

#[test]
fn run_rms_norm_bf16_from_npy_files() {
    let dir = scratch("bf16");
    let x = generate(Distribution::Uniform5, DType::BFloat16, &[5, 300], 7);
    let gamma = generate(Distribution::Uniform5, DType::BFloat16, &[300], 8);
    let out = dir.join("out");
    let r = opgen(&[
        "run",
        "rms_norm",
        "--dtype",
        "bf16",
        "--input",
        &input_arg(&dir, "x", &x),
        "--input",
        &input_arg(&dir, "gamma", &gamma),
        "--attr",
        "epsilon=1e-5",
        "--out",
        &out.display().to_string(),
    ]);
    assert!(r.success(), "{}", r.combined_lossy());
    let y = npy::read_npy(&out.join("y.npy"), Some(DType::BFloat16)).unwrap();
    let rstd = npy::read_npy(&out.join("rstd.npy"), Some(DType::Float32)).unwrap();
    assert_eq!(y.shape, vec![5, 300]);
    assert_eq!(rstd.shape, vec![5, 1]);
    let want = rms_norm(&x, &gamma, 1e-5).unwrap();
    // bfloat16 stored as '<u2' bit patterns, one rounding from the f64 reference: ≤ 1 ULP.
    let bf16_ulp = |v: f64| 2f64.powi((v.abs().log2().floor() as i32) - 7);
    for (i, w) in want.y.iter().enumerate() {
        let got = y.get_f64(i);
        assert!(
            (got - round_to_dtype(DType::BFloat16, *w)).abs() <= bf16_ulp(*w) * 1.0001,
            "y[{i}] {got} vs {w}"
        );
    }
    let header = fs::read(out.join("y.npy")).unwrap();
    assert!(String::from_utf8_lossy(&header[..80]).contains("'<u2'"));
}

#[test]
fn plan_prints_split_d_for_a_16k_bf16_row() {
    let r = opgen(&["plan", "rms_norm", "--dtype", "bf16", "--shape", "4x16384"]);
    assert!(r.success(), "{}", r.combined_lossy());
    let text = r.stdout_lossy();
    assert!(text.contains("block dim: 4"), "{text}");
    assert!(text.contains("2 (split-D, two passes)"), "{text}");
    // One row per core: the row stays in UB between the passes, and so does gamma, as with two
    // rows per core (read once per core, not per row): the same chunks on any batch size, so a
    // row's sums are added in the same order (batch invariance).
    assert!(text.contains("rowResident    1"), "{text}");
    assert!(text.contains("gammaResident  1"), "{text}");
    let two = opgen(&["plan", "rms_norm", "--dtype", "bf16", "--shape", "96x16384"]);
    let two = two.stdout_lossy();
    assert!(two.contains("rowResident    1") && two.contains("gammaResident  1"), "{two}");
    let chunk = |t: &str| t.lines().find(|l| l.contains("colFactor")).map(str::to_string);
    assert_eq!(chunk(&text), chunk(&two), "the chunk depends on the rows per core");
    let rows = opgen(&["plan", "rms_norm", "--dtype", "f16", "--shape", "1000x896"]);
    assert!(rows.stdout_lossy().contains("1 (several rows per UB pass)"), "{}", rows.combined_lossy());
    // Rows of at most 512 elements: the batched mode (one vector instruction per step for a pass).
    let short = opgen(&["plan", "rms_norm", "--dtype", "f16", "--shape", "1000x64"]);
    assert!(short.stdout_lossy().contains("3 (batched short rows)"), "{}", short.combined_lossy());
}

/// The families name their own mode-like fields (`FamilyOps::tiling_value_label`): rotary's
/// rotate mode and a permute's UB layout print with their words, as row_norm's `mode` does.
#[test]
fn plan_names_the_rotate_mode_and_the_permute_layout() {
    let r = opgen(&["plan", "rotary_mul", "--dtype", "f16", "--shape", "2x8x16x64"]);
    let text = r.stdout_lossy();
    assert!(text.contains("rotateMode     0 (half, rotate_half) "), "{}", r.combined_lossy());
    let r = opgen(&["plan", "bsnd_to_bnsd", "--dtype", "f16", "--shape", "2x16x8x64"]);
    let text = r.stdout_lossy();
    assert!(text.contains("layout         1 (q-major, tileP = P) "), "{}", r.combined_lossy());
    // A count stays a bare number.
    assert!(text.contains("tileP          16 "), "{text}");
}

#[test]
fn plan_spreads_rows_over_every_core_with_one_more_row_on_the_first() {
    // 64 rows on 48 cores: 16 cores take 2 rows, 32 take 1 (not 32 cores of 2 rows).
    let r = opgen(&["plan", "rms_norm", "--dtype", "f16", "--shape", "64x128"]);
    let text = r.stdout_lossy();
    assert!(text.contains("block dim: 48"), "{}", r.combined_lossy());
    assert!(text.contains("blockFactor    1 "), "{text}");
    assert!(text.contains("blockRemainder 16 "), "{text}");
}

#[test]
fn plan_computes_the_float_work_in_sub_tiles_when_it_limits_the_pass() {
    // Qwen2-7B hidden 3584 in float16: with the float32 work of every row of the pass, 2 rows
    // (14 KiB transfers) fit; computed one row at a time, 4 rows per pass.
    let r = opgen(&["plan", "rms_norm", "--dtype", "f16", "--shape", "4096x3584"]);
    let text = r.stdout_lossy();
    assert!(text.contains("rowFactor      4 "), "{}", r.combined_lossy());
    assert!(text.contains("subRows        1 "), "{text}");
}

#[test]
fn plan_rejects_a_gamma_that_is_not_a_trailing_slice() {
    let r = opgen(&["plan", "rms_norm", "--dtype", "f32", "--shape", "4x64", "--shape", "gamma=32"]);
    assert_eq!(r.code(), Some(2), "{}", r.combined_lossy());
    assert!(r.stderr_lossy().contains("gamma must equal the trailing dims of x"), "{}", r.stderr_lossy());
}

/// A fresh temporary directory per test, removed when it drops (on a panic too).
fn scratch(tag: &str) -> TempDir {
    TempDir::new(&format!("run-{tag}"))
}

fn input_arg(dir: &std::path::Path, name: &str, t: &ascend_opgen::tensor::HostTensor) -> String {
    let path = dir.join(format!("{name}.npy"));
    npy::write_npy(&path, t).unwrap();
    format!("{name}={}", path.display())
}

#[test]
fn run_reshape_and_cache_writes_the_updated_caches() {
    // Token 0 to slot 5 (block 1, offset 1), token 1 skipped, token 2 past the 8 slots.
    run_reshape_and_cache(DType::Int32, &[5, -1, 100], "cache");
}

/// vLLM's int64 slot_mapping picks the int64 combination; 2^32 + 2 is past the cache (and
/// slot 2 in its low word, which must stay as it was).
#[test]
fn run_reshape_and_cache_reads_an_int64_slot_mapping() {
    run_reshape_and_cache(DType::Int64, &[5, -1, (1 << 32) + 2], "cache64");
}

fn run_reshape_and_cache(slot_dtype: DType, slot_values: &[i64], label: &str) {
    use ascend_opgen::tensor::HostTensor;
    let dir = scratch(label);
    let (tokens, heads, dim, blocks, block_size) = (3usize, 2usize, 72usize, 2usize, 4usize);
    let key = generate(Distribution::Uniform5, DType::Float16, &[tokens, heads, dim], 1);
    let value = generate(Distribution::Uniform5, DType::Float16, &[tokens, heads, dim], 2);
    let cache_shape = [blocks, block_size, heads, dim];
    let key_cache = generate(Distribution::Uniform5, DType::Float16, &cache_shape, 3);
    let value_cache = generate(Distribution::Uniform5, DType::Float16, &cache_shape, 4);
    let slots = HostTensor::from_i64(slot_dtype, &[tokens], slot_values);
    let out = dir.join("out");
    let mut args = vec!["run".to_string(), "reshape_and_cache".to_string()];
    for (name, t) in [
        ("key", &key),
        ("value", &value),
        ("key_cache", &key_cache),
        ("value_cache", &value_cache),
        ("slot_mapping", &slots),
    ] {
        args.push("--input".into());
        args.push(input_arg(&dir, name, t));
    }
    args.extend(["--out".to_string(), out.display().to_string()]);
    let r = opgen(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(r.success(), "{}", r.combined_lossy());
    assert!(
        r.stdout_lossy().contains("key_cache.npy (float16 [2, 4, 2, 72], updated in place)"),
        "{}",
        r.stdout_lossy()
    );

    let row = heads * dim;
    for (name, src, before) in [("key_cache", &key, &key_cache), ("value_cache", &value, &value_cache)] {
        let after = npy::read_npy(&out.join(format!("{name}.npy")), Some(DType::Float16)).unwrap();
        assert_eq!(after.shape, cache_shape.to_vec());
        for i in 0..after.numel() {
            // Slot 5 holds token 0's row; every other element is the cache as it was.
            let slot = i / row;
            let want = if slot == 5 { src.bits(i % row) } else { before.bits(i) };
            assert_eq!(after.bits(i), want, "{name}[{i}] (slot {slot})");
        }
    }
    let count = npy::read_npy(&out.join("out_of_range.npy"), Some(DType::Int32)).unwrap();
    assert_eq!(count.to_i64().iter().sum::<i64>(), 1, "one slot past the cache");
}

#[test]
fn run_dequant_int8_follows_out_dtype_or_dtype() {
    use ascend_opgen::tensor::HostTensor;
    let dir = scratch("dequant");
    let q = HostTensor::from_i64(DType::Int8, &[2, 3], &[-128, -1, 0, 1, 64, 127]);
    let scale = HostTensor::from_f64(DType::Float32, &[2], &[0.5, 1.0 / 3.0]);
    let inputs = [input_arg(&dir, "q", &q), input_arg(&dir, "scale", &scale)];
    let run = |extra: &[&str], out: &str| {
        let out = dir.join(out);
        let mut args = vec!["run", "dequant_int8", "--input", &inputs[0], "--input", &inputs[1]];
        args.extend_from_slice(extra);
        let out_arg = out.display().to_string();
        args.extend(["--out", &out_arg]);
        (opgen(&args), out.join("x.npy"))
    };
    // x = q * scale from the math (scale as the float32 the file holds), rounded once.
    let q_values = [-128.0, -1.0, 0.0, 1.0, 64.0, 127.0];
    let scales = [0.5, round_to_dtype(DType::Float32, 1.0 / 3.0)];
    for (extra, dtype) in [
        (&[][..], DType::Float16),
        (&["--attr", "out_dtype=bfloat16"][..], DType::BFloat16),
        (&["--dtype", "f32"][..], DType::Float32),
    ] {
        let (r, path) = run(extra, &format!("out-{}", dtype.name()));
        assert!(r.success(), "{extra:?}: {}", r.combined_lossy());
        let x = npy::read_npy(&path, Some(dtype)).unwrap();
        for (i, v) in q_values.iter().enumerate() {
            assert_eq!(x.get_f64(i), round_to_dtype(dtype, v * scales[i / 3]), "{dtype} x[{i}]");
        }
    }
    let (r, _) = run(&["--dtype", "f32", "--attr", "out_dtype=float16"], "out-conflict");
    assert_eq!(r.code(), Some(2), "{}", r.combined_lossy());
    assert!(r.stderr_lossy().contains("no dtype combination with dtype float32"), "{}", r.stderr_lossy());
}

#[test]
fn plan_picks_dequants_combination_by_its_output_dtype() {
    let r = opgen(&["plan", "dequant_int8", "--dtype", "bf16", "--shape", "4x128"]);
    assert!(r.success(), "{}", r.combined_lossy());
    let bad = opgen(&["plan", "dequant_int8", "--dtype", "i8", "--shape", "4x128"]);
    assert_eq!(bad.code(), Some(2), "{}", bad.combined_lossy());
    assert!(
        bad.stderr_lossy().contains("registered: float16 (q int8, scale float32 -> x float16)"),
        "{}",
        bad.stderr_lossy()
    );
}

/// `--dtype` leaves logprob_entropy_grad two combinations (an int32 or int64 target):
/// `--input-dtype target=...` picks one, and the plan shows the backward's tile at Qwen's
/// vocabulary (14 even tiles of 11008 16-bit elements, a multiple of 512 bytes).
#[test]
fn plan_picks_a_combination_by_another_inputs_dtype() {
    let args = ["plan", "logprob_entropy_grad", "--dtype", "f16", "--shape", "8x151936"];
    let ambiguous = opgen(&args);
    assert_eq!(ambiguous.code(), Some(2), "{}", ambiguous.combined_lossy());
    let r = opgen(&[&args[..], &["--input-dtype", "target=i64"]].concat());
    assert!(r.success(), "{}", r.combined_lossy());
    let out = r.stdout_lossy();
    assert!(out.contains("input target: [8]"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().take(2).eq(["tileLen", "11008"])), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().take(2).eq(["tilesPerRow", "14"])), "{out}");
    let bad = opgen(&[&args[..], &["--input-dtype", "target"]].concat());
    assert_eq!(bad.code(), Some(2), "{}", bad.combined_lossy());
    assert!(
        bad.stderr_lossy().contains("--input-dtype target: expected name=dtype"),
        "{}",
        bad.stderr_lossy()
    );
}
