//! bfloat16 .npy files as numpy users have them: `<V2` written by `np.save` of an
//! `ml_dtypes.bfloat16` array, and `<u2` bit patterns. The fixtures were written by numpy and
//! ml_dtypes themselves (tests/npy/README.md has the command); the expected bits follow from the
//! values, which are all exact in bfloat16.

use crate::support::TempDir;
use ascend_opgen::npy::{self, Bf16Npy};
use ascend_opgen::toolchain::command::Cmd;
use ascend_opgen::DType;
use std::path::{Path, PathBuf};

/// 1.0, -2.5, 3.140625, 0.0, -0.0, inf, 2^-133, the largest finite bfloat16.
const BITS: [u16; 8] = [0x3f80, 0xc020, 0x4049, 0x0000, 0x8000, 0x7f80, 0x0001, 0x7f7f];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npy").join(name)
}

fn bits_of(t: &ascend_opgen::tensor::HostTensor) -> Vec<u16> {
    t.bytes.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

#[test]
fn reads_both_spellings_with_the_same_bits() {
    for (name, spelling) in [("bf16_ml_dtypes.npy", Bf16Npy::MlDtypes), ("bf16_u2.npy", Bf16Npy::U2)] {
        let f = npy::read_npy_file(&fixture(name), Some(DType::BFloat16)).unwrap();
        assert_eq!(f.bf16, Some(spelling), "{name}");
        assert_eq!(f.tensor.dtype, DType::BFloat16);
        assert_eq!(f.tensor.shape, vec![2, 4]);
        assert_eq!(bits_of(&f.tensor), BITS, "{name}");
    }
}

#[test]
fn writes_each_spelling_byte_for_byte_as_numpy_does() {
    for (name, spelling) in [("bf16_ml_dtypes.npy", Bf16Npy::MlDtypes), ("bf16_u2.npy", Bf16Npy::U2)] {
        let numpy_bytes = std::fs::read(fixture(name)).unwrap();
        let t = npy::read_npy(&fixture(name), None).unwrap();
        assert_eq!(npy::encode_npy_as(&t, spelling), numpy_bytes, "{name}");
    }
}

#[test]
fn a_two_byte_void_is_not_float16_and_other_voids_are_refused() {
    let err = npy::read_npy(&fixture("bf16_ml_dtypes.npy"), Some(DType::Float16)).unwrap_err();
    assert!(
        err.to_string().contains("expected float16 (descr '<f2'), but the file holds descr '<V2'"),
        "{err}"
    );
    let err = npy::read_npy(&fixture("bf16_u2.npy"), Some(DType::Float32)).unwrap_err();
    assert!(err.to_string().contains("descr '<u2'"), "{err}");
    // A float16 file where bfloat16 is expected names both bfloat16 spellings.
    let f16 = ascend_opgen::tensor::HostTensor::zeros(DType::Float16, &[2]);
    let err = npy::decode_npy(&npy::encode_npy(&f16), Path::new("h.npy"), Some(DType::BFloat16)).unwrap_err();
    assert!(err.to_string().contains("'<V2' (ml_dtypes) or '<u2' (bits)"), "{err}");
    // A 4-byte void (not ml_dtypes' bfloat16) is not guessed at.
    let mut bytes = std::fs::read(fixture("bf16_ml_dtypes.npy")).unwrap();
    let at = bytes.windows(3).position(|w| w == b"<V2").unwrap();
    bytes[at + 2] = b'4';
    bytes.truncate(128 + 8); // 2x4 elements of 2 bytes is 16 bytes, half of 2x4 of 4
    let err = npy::decode_npy(&bytes, Path::new("v4.npy"), None).unwrap_err();
    assert!(err.to_string().contains("unsupported dtype descr '<V4'"), "{err}");
}

/// A fresh directory, removed when it drops (on a panic too).
fn scratch(tag: &str) -> TempDir {
    TempDir::new(&format!("npy-bf16-{tag}"))
}

fn descr_of(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&bytes[10..bytes.len().min(128)]).into_owned();
    let start = text.find("'descr': '").unwrap() + 10;
    text[start..start + 3].to_string()
}

/// `opgen run` on ml_dtypes inputs writes ml_dtypes outputs; `--bf16-npy u2` the bits; a
/// non-bf16 output (rstd, float32) is the same either way.
#[test]
fn run_writes_the_spelling_it_read_or_the_one_asked_for() {
    let dir = scratch("run");
    // x [2, 4] is the fixture (with inf: use the finite half only, a row norm of inf is NaN).
    let finite = [0x3f80u16, 0xc020, 0x4049, 0x0000, 0x8000, 0x3f00, 0x0001, 0x4000];
    let x = ascend_opgen::tensor::HostTensor::from_bits(
        DType::BFloat16,
        &[2, 4],
        &finite.iter().map(|&b| u64::from(b)).collect::<Vec<_>>(),
    );
    let gamma = ascend_opgen::tensor::HostTensor::from_bits(DType::BFloat16, &[4], &[0x3f80; 4]);
    npy::write_npy_as(&dir.join("x.npy"), &x, Bf16Npy::MlDtypes).unwrap();
    npy::write_npy_as(&dir.join("g.npy"), &gamma, Bf16Npy::MlDtypes).unwrap();
    let run = |out: &str, extra: &[&str]| {
        let r = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
            .args(["run", "rms_norm", "--no-sanitize", "--input"])
            .arg(format!("x={}", dir.join("x.npy").display()))
            .arg("--input")
            .arg(format!("gamma={}", dir.join("g.npy").display()))
            .arg("--out")
            .arg(dir.join(out))
            .args(extra)
            .stdin_null()
            .run()
            .expect("opgen runs");
        assert_eq!(r.code(), Some(0), "{}", r.combined_lossy());
        dir.join(out)
    };
    let same = run("same", &[]);
    assert_eq!(descr_of(&same.join("y.npy")), "<V2");
    assert_eq!(descr_of(&same.join("rstd.npy")), "<f4");
    let bits = run("bits", &["--bf16-npy", "u2"]);
    assert_eq!(descr_of(&bits.join("y.npy")), "<u2");
    let y_ml = npy::read_npy(&same.join("y.npy"), Some(DType::BFloat16)).unwrap();
    let y_u2 = npy::read_npy(&bits.join("y.npy"), Some(DType::BFloat16)).unwrap();
    assert_eq!(y_ml, y_u2);
    // Row 0 is (1, -2.5, 3.140625, 0): rstd = 1/sqrt(mean(x^2) + 1e-6), y = x * rstd (gamma 1),
    // rounded to bfloat16 once; checked here from the math for the first element.
    let ms: f64 = (1.0 + 6.25 + 3.140625f64 * 3.140625) / 4.0;
    let y0 = 1.0 / (ms + 1e-6).sqrt();
    let got = f64::from(f32::from_bits(u32::from(bits_of(&y_ml)[0]) << 16));
    assert!((got - y0).abs() <= y0 * 2f64.powi(-8), "y[0] = {got}, math {y0}");
    let err = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["run", "rms_norm", "--bf16-npy", "f16", "--out", "x"])
        .stdin_null()
        .run()
        .unwrap();
    assert_eq!(err.code(), Some(2));
    assert!(err.combined_lossy().contains("unknown bfloat16 spelling `f16` (ml_dtypes, u2)"));
}
