//! The row_norm_grad family's spec rules: each bad spec is rejected
//! with file:line:column, the field and a message that says what is wrong; the catalogue's
//! forward specs name their backward ops.

use ascend_opgen::family;
use ascend_opgen::spec::SpecErrors;
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

fn errors(text: &str) -> SpecErrors {
    family::parse_str(Path::new(PATH), text).expect_err("the spec must be rejected")
}

/// The error for `field` must sit on `line` and its message must contain `words`.
fn assert_error(text: &str, line: usize, field: &str, words: &str) {
    let errs = errors(text);
    let shown = errs.to_string();
    let e = errs
        .0
        .iter()
        .find(|e| e.field == field)
        .unwrap_or_else(|| panic!("no error for `{field}` in:\n{shown}"));
    assert_eq!(e.line, line, "line of `{field}` in:\n{shown}");
    assert!(e.column > 0, "column missing in:\n{shown}");
    assert!(e.message.contains(words), "`{words}` not in:\n{shown}");
    assert!(shown.contains(PATH), "file missing in:\n{shown}");
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
    let text = GOOD.replacen("dtypes = [\"float32\", \"float32\"]", "dtypes = [\"float16\", \"float32\"]", 1);
    assert_error(&text, 16, "inputs[2].dtypes[0]", "rstd is the forward's float32 output");
    // gamma (line 20) in another dtype than x.
    let text = GOOD.replacen(
        "name = \"gamma\"\ndtypes = [\"float16\", \"float32\"]",
        "name = \"gamma\"\ndtypes = [\"float32\", \"float32\"]",
        1,
    );
    assert_error(&text, 20, "inputs[3].dtypes[0]", "x's dtype");
    // dgamma (line 28) in float32 for float16 gamma.
    let text = GOOD.replacen(
        "name = \"dgamma\"\ndtypes = [\"float16\", \"float32\"]",
        "name = \"dgamma\"\ndtypes = [\"float32\", \"float32\"]",
        1,
    );
    assert_error(&text, 28, "outputs[1].dtypes[0]", "gamma's dtype");
}

#[test]
fn input_and_output_counts_and_attrs_are_checked() {
    let text = GOOD.replacen("[[inputs]]\nname = \"rstd\"\ndtypes = [\"float32\", \"float32\"]\n\n", "", 1);
    assert_error(&text, 6, "inputs", "takes 4 inputs");
    let text = format!("{GOOD}\n[[outputs]]\nname = \"extra\"\ndtypes = [\"float16\", \"float32\"]\n");
    assert_error(&text, 22, "outputs", "has 2 outputs");
    let text = format!("{GOOD}\n[[attrs]]\nname = \"epsilon\"\ntype = \"float\"\ndefault = 1e-6\n");
    assert_error(&text, 31, "attrs", "takes no attrs");
}
