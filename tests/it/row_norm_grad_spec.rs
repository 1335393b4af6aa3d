//! The row_norm_grad family's spec rules: each bad spec is rejected
//! with file:line:column, the field and a message that says what is wrong; the catalogue's
//! forward specs name their backward ops.

use crate::support::Patched;
use ascend_opgen::family;
use std::path::Path;

const GOOD: &str = r#"name = "my_norm_grad"
family = "row_norm_grad"
summary = "test op"
targets = ["ascend910b"]

[[inputs]]
name = "dy"
dtypes = ["float16", "float32"]

[[inputs]]
name = "x"
dtypes = ["float16", "float32"]

[[inputs]]
name = "rstd"
dtypes = ["float32", "float32"]

[[inputs]]
name = "gamma"
dtypes = ["float16", "float32"]

[[outputs]]
name = "dx"
dtypes = ["float16", "float32"]

[[outputs]]
name = "dgamma"
dtypes = ["float16", "float32"]
"#;

const PATH: &str = "kernels/my_norm_grad.toml";

/// The error for `field` must sit on `line` and its message must contain `words`.
fn assert_error(text: &str, line: usize, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, Some(line), field, words);
}

#[test]
fn the_good_spec_is_accepted() {
    let spec = family::parse_str(Path::new(PATH), GOOD).unwrap();
    assert_eq!(spec.family.name(), "row_norm_grad");
    assert_eq!(spec.backward, ascend_opgen::spec::Backward::NotGenerated);
}

#[test]
fn rstd_must_be_float32_and_the_rest_x_dtype() {
    // rstd (line 16) in 16-bit.
    let text = GOOD.patched("dtypes = [\"float32\", \"float32\"]", "dtypes = [\"float16\", \"float32\"]");
    assert_error(&text, 16, "inputs[2].dtypes[0]", "rstd is the forward's float32 output");
    // gamma (line 20) in another dtype than x.
    let text = GOOD.patched(
        "name = \"gamma\"\ndtypes = [\"float16\", \"float32\"]",
        "name = \"gamma\"\ndtypes = [\"float32\", \"float32\"]",
    );
    assert_error(&text, 20, "inputs[3].dtypes[0]", "x's dtype");
    // dgamma (line 28) in float32 for float16 gamma.
    let text = GOOD.patched(
        "name = \"dgamma\"\ndtypes = [\"float16\", \"float32\"]",
        "name = \"dgamma\"\ndtypes = [\"float32\", \"float32\"]",
    );
    assert_error(&text, 28, "outputs[1].dtypes[0]", "gamma's dtype");
}

#[test]
fn input_and_output_counts_and_attrs_are_checked() {
    let text = GOOD.patched("[[inputs]]\nname = \"rstd\"\ndtypes = [\"float32\", \"float32\"]\n\n", "");
    assert_error(&text, 6, "inputs", "takes 4 inputs");
    let text = format!("{GOOD}\n[[outputs]]\nname = \"extra\"\ndtypes = [\"float16\", \"float32\"]\n");
    assert_error(&text, 22, "outputs", "has 2 outputs");
    let text = format!("{GOOD}\n[[attrs]]\nname = \"epsilon\"\ntype = \"float\"\ndefault = 1e-6\n");
    assert_error(&text, 31, "attrs[0]", "takes only the string attr `arithmetic`");
}

/// The one attr, `arithmetic`: "float-float" or "float32" as its default; anything else is
/// refused at the default's line with both values named.
#[test]
fn the_arithmetic_attr_takes_float_float_or_float32() {
    for value in ["float-float", "float32"] {
        let text =
            format!("{GOOD}\n[[attrs]]\nname = \"arithmetic\"\ntype = \"string\"\ndefault = \"{value}\"\n");
        let spec = family::parse_str(Path::new(PATH), &text).unwrap();
        assert_eq!(spec.attrs[0].name, "arithmetic");
    }
    let text = format!("{GOOD}\n[[attrs]]\nname = \"arithmetic\"\ntype = \"string\"\ndefault = \"fp64\"\n");
    assert_error(
        &text,
        33,
        "attrs[0].default",
        "arithmetic `fp64` is not supported: use \"float-float\" or \"float32\"",
    );
    let text = format!("{GOOD}\n[[attrs]]\nname = \"arithmetic\"\ntype = \"string\"\n");
    assert_error(&text, 31, "attrs[0].default", "needs a default");
}

/// layer_norm_grad's shape of spec: dy, x, mean, rstd, gamma in; dx, dgamma, dbeta out.
const LAYER: &str = r#"name = "my_norm_grad"
family = "row_norm_grad"
summary = "test op"
targets = ["ascend910b"]

[row_norm]
norm = "layer"
gamma_offset = 1.0

[[inputs]]
name = "dy"
dtypes = ["float16"]

[[inputs]]
name = "x"
dtypes = ["float16"]

[[inputs]]
name = "mean"
dtypes = ["float32"]

[[inputs]]
name = "rstd"
dtypes = ["float32"]

[[inputs]]
name = "gamma"
dtypes = ["float16"]

[[outputs]]
name = "dx"
dtypes = ["float16"]

[[outputs]]
name = "dgamma"
dtypes = ["float16"]

[[outputs]]
name = "dbeta"
dtypes = ["float16"]
"#;

#[test]
fn the_layer_spec_is_accepted_with_its_parameters() {
    let spec = family::parse_str(Path::new(PATH), LAYER).unwrap();
    let p = spec.row_norm_grad().unwrap();
    assert_eq!(p.norm, ascend_opgen::spec::NormKind::Layer);
    assert_eq!(p.gamma_offset, 1.0);
    // The catalogue's layer_norm_grad: LayerNorm without an offset; rms_norm_grad: RMS.
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let params = |n: &str| specs.iter().find(|s| s.name == n).unwrap().row_norm_grad().unwrap().clone();
    assert_eq!(params("layer_norm_grad").norm, ascend_opgen::spec::NormKind::Layer);
    assert_eq!(params("layer_norm_grad").gamma_offset, 0.0);
    assert_eq!(params("rms_norm_grad").norm, ascend_opgen::spec::NormKind::Rms);
}

/// Combinations the family cannot build are refused where they are written.
#[test]
fn combinations_the_family_cannot_build_are_refused() {
    assert_error(
        &LAYER.patched("norm = \"layer\"", "norm = \"group\""),
        7,
        "row_norm.norm",
        "unknown norm `group`",
    );
    assert_error(
        &LAYER.patched("gamma_offset = 1.0", "gamma_offset = 0.1"),
        8,
        "row_norm.gamma_offset",
        "not a finite float32 value",
    );
    assert_error(
        &LAYER.patched("gamma_offset = 1.0", "fused_residual_add = true"),
        6,
        "row_norm.fused_residual_add",
        "fifth input (dx_sum)",
    );
    // LayerNorm without the mean input: 4 inputs.
    let no_mean = LAYER.patched("[[inputs]]\nname = \"mean\"\ndtypes = [\"float32\"]\n\n", "");
    assert_error(&no_mean, 10, "inputs", "takes 5 inputs (dy, x, mean, rstd, gamma)");
    // LayerNorm without dbeta.
    let no_dbeta = LAYER.patched("\n[[outputs]]\nname = \"dbeta\"\ndtypes = [\"float16\"]\n", "");
    assert_error(&no_dbeta, 30, "outputs", "has 3 outputs (dx, dgamma, dbeta)");
    // mean in 16-bit.
    let text =
        LAYER.patched("name = \"mean\"\ndtypes = [\"float32\"]", "name = \"mean\"\ndtypes = [\"float16\"]");
    assert_error(&text, 20, "inputs[2].dtypes[0]", "mean is the forward's float32 output");
}

/// `gen` refuses such a spec with exit 2 and file:line:column, and writes nothing.
#[test]
fn gen_refuses_an_unbuildable_combination_with_exit_2() {
    use ascend_opgen::toolchain::command::Cmd;
    let dir = crate::support::TempDir::new("lngrad-spec");
    let file = dir.join("my_norm_grad.toml");
    std::fs::write(&file, LAYER.patched("norm = \"layer\"", "norm = \"batch\"")).unwrap();
    let out_dir = dir.join("out");
    let run = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["gen", "--specs", &file.display().to_string(), "--out", &out_dir.display().to_string()])
        .stdin_null()
        .run()
        .expect("opgen runs");
    assert_eq!(run.code(), Some(2), "{}", run.combined_lossy());
    let text = run.combined_lossy();
    assert!(text.contains(&format!("{}:7:8: field `row_norm.norm`", file.display())), "{text}");
    assert!(!out_dir.exists(), "nothing may be written");
}
