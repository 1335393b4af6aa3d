//! row_norm's `[row_norm]` table: `norm = "rms" | "layer"`, `gamma_offset`, and every
//! combination the family cannot implement refused with file:line:column and the field —
//! by `gen` with exit 2, never generated as something else.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::spec::{NormKind, SpecErrors};
use std::path::Path;

/// A LayerNorm spec: `norm` on line 6, `summary` on line 3, beta optional (`{beta}`).
fn layer(table: &str, beta: bool, rounding: Option<&str>) -> String {
    let beta = if beta { "\n[[inputs]]\nname = \"beta\"\ndtypes = [\"float16\", \"float32\"]\n" } else { "" };
    let rounding = rounding
        .map(|d| format!("\n[[attrs]]\nname = \"rounding\"\ntype = \"string\"\ndefault = \"{d}\"\n"))
        .unwrap_or_default();
    format!(
        r#"name = "my_norm"
family = "row_norm"
summary = "test op"
targets = ["ascend910b"]
[row_norm]
{table}

[[inputs]]
name = "x"
dtypes = ["float16", "float32"]

[[inputs]]
name = "gamma"
dtypes = ["float16", "float32"]
{beta}
[[outputs]]
name = "y"
dtypes = ["float16", "float32"]

[[outputs]]
name = "mean"
dtypes = ["float32", "float32"]

[[outputs]]
name = "rstd"
dtypes = ["float32", "float32"]

[[attrs]]
name = "epsilon"
type = "float"
default = 1e-5
{rounding}"#
    )
}

/// An RMSNorm spec with a `[row_norm]` table on line 6 and the given summary (line 3).
fn rms(table: &str, summary: &str) -> String {
    format!(
        r#"name = "my_norm"
family = "row_norm"
summary = "{summary}"
targets = ["ascend910b"]
[row_norm]
{table}

[[inputs]]
name = "x"
dtypes = ["float16", "float32"]

[[inputs]]
name = "gamma"
dtypes = ["float16", "float32"]

[[outputs]]
name = "y"
dtypes = ["float16", "float32"]

[[outputs]]
name = "rstd"
dtypes = ["float32", "float32"]

[[attrs]]
name = "epsilon"
type = "float"
default = 1e-6
"#
    )
}

fn errors(text: &str) -> SpecErrors {
    crate::support::spec_errors("kernels/my_norm.toml", text)
}

fn assert_error(text: &str, line: usize, field: &str, words: &str) {
    crate::support::assert_spec_error("kernels/my_norm.toml", text, Some(line), field, words);
}

#[test]
fn layer_norm_with_and_without_beta_is_accepted() {
    for beta in [true, false] {
        let s = family::parse_str(Path::new("kernels/my_norm.toml"), &layer("norm = \"layer\"", beta, None))
            .unwrap();
        let p = s.row_norm().expect("row_norm params");
        assert_eq!(p.norm, NormKind::Layer);
        assert_eq!(p.gamma_offset, 0.0);
        assert_eq!(s.inputs.len(), if beta { 3 } else { 2 });
    }
    // `rounding = "once"` is LayerNorm's own order and accepted.
    family::parse_str(Path::new("kernels/my_norm.toml"), &layer("norm = \"layer\"", true, Some("once")))
        .unwrap();
}

#[test]
fn unknown_norm_is_refused_at_its_value() {
    assert_error(
        &layer("norm = \"group\"", true, None),
        6,
        "row_norm.norm",
        "norm `group` is not supported: use \"rms\" or \"layer\"",
    );
}

#[test]
fn layer_with_the_fused_add_is_refused() {
    assert_error(
        &layer("norm = \"layer\"\nfused_residual_add = true", true, None),
        6,
        "row_norm.norm",
        "fused_residual_add = true is not implemented",
    );
}

#[test]
fn layer_with_hf_rounding_is_refused() {
    // The rounding attr's default is on the last line of the spec.
    let text = layer("norm = \"layer\"", true, Some("hf"));
    let line = text.lines().count();
    assert_error(&text, line, "attrs[1].default", "LayerNorm computes in float32 and rounds y once");
}

#[test]
fn layer_needs_the_mean_output_and_float32_statistics() {
    // Two outputs (RMSNorm's y, rstd) with norm = "layer".
    let text = layer("norm = \"layer\"", false, None)
        .patched("[[outputs]]\nname = \"mean\"\ndtypes = [\"float32\", \"float32\"]\n\n", "");
    let errs = errors(&text);
    assert!(errs.to_string().contains("has 3 outputs (y, mean, rstd), found 2"), "{errs}");
    // mean in x's dtype.
    let text = layer("norm = \"layer\"", false, None).patched(
        "name = \"mean\"\ndtypes = [\"float32\", \"float32\"]",
        "name = \"mean\"\ndtypes = [\"float16\", \"float32\"]",
    );
    let errs = errors(&text);
    assert!(errs.to_string().contains("`mean` (a per-row statistic) is always float32"), "{errs}");
}

#[test]
fn gamma_offset_is_parsed_and_must_be_finite() {
    let s = family::parse_str(
        Path::new("kernels/my_norm.toml"),
        &rms("gamma_offset = 1.0", "y = x * rstd * (1 + gamma)"),
    )
    .unwrap();
    assert_eq!(s.row_norm().unwrap().gamma_offset, 1.0);
    assert_eq!(s.row_norm().unwrap().norm, NormKind::Rms);
    // An integer is a number too.
    let s =
        family::parse_str(Path::new("kernels/my_norm.toml"), &rms("gamma_offset = 1", "test op")).unwrap();
    assert_eq!(s.row_norm().unwrap().gamma_offset, 1.0);
    assert_error(
        &rms("gamma_offset = inf", "test op"),
        6,
        "row_norm.gamma_offset",
        "must be a finite number",
    );
    assert_error(
        &rms("gamma_offset = nan", "test op"),
        6,
        "row_norm.gamma_offset",
        "must be a finite number",
    );
}

/// Issue 15: a Gemma-style spec whose summary says 1 + gamma generated plain rms_norm with exit
/// 0. Now it is refused at the summary until gamma_offset says so.
#[test]
fn one_plus_gamma_without_gamma_offset_is_refused() {
    for summary in
        ["y = x * rstd * (1 + gamma)", "Gemma RMSNorm: (1.0 + weight) * x * rstd", "gamma+1 scaling"]
    {
        assert_error(
            &rms("", summary),
            3,
            "summary",
            "the summary says 1 + gamma but [row_norm] gamma_offset is 0",
        );
    }
}

/// `opgen gen` over the Gemma spec without gamma_offset: exit 2, file:line:column, nothing written.
#[test]
fn gen_refuses_the_gemma_spec_with_exit_2() {
    use ascend_opgen::toolchain::command::Cmd;
    let dir = crate::support::TempDir::new("row-norm-spec");
    let spec = dir.join("gemma_rms_norm.toml");
    std::fs::write(&spec, rms("", "y = x * rstd * (1 + gamma)").patched("my_norm", "gemma_rms_norm"))
        .unwrap();
    let out = dir.join("out");
    let r = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .arg("gen")
        .arg("--specs")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .stdin_null()
        .run()
        .expect("opgen runs");
    let text = r.combined_lossy();
    assert_eq!(r.code(), Some(2), "{text}");
    assert!(text.contains("gemma_rms_norm.toml:3:"), "{text}");
    assert!(text.contains("field `summary`"), "{text}");
    assert!(!out.exists(), "a refused gen wrote {}", out.display());
    // With the offset it generates, and the kernel adds it.
    std::fs::write(
        &spec,
        rms("gamma_offset = 1.0", "y = x * rstd * (1 + gamma)").patched("my_norm", "gemma_rms_norm"),
    )
    .unwrap();
    let r = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .arg("gen")
        .arg("--specs")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .stdin_null()
        .run()
        .expect("opgen runs");
    assert_eq!(r.code(), Some(0), "{}", r.combined_lossy());
    let kernel = std::fs::read_to_string(out.join("op_kernel/opgen_gemma_rms_norm.cpp")).unwrap();
    assert!(kernel.contains("constexpr bool kGammaOffset = true;"), "{kernel}");
    assert!(kernel.contains("constexpr float kGammaOffsetValue = 1.0f;"), "{kernel}");
}
