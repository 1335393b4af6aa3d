//! The row_norm_grad family's spec rules and the `backward` field: each bad spec is rejected
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
name = "dgamma_partials"
dtypes = ["float32", "float32"]
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
    assert_eq!(spec.backward, None);
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
    // The partials (line 28) in 16-bit.
    let text = GOOD.replacen(
        "name = \"dgamma_partials\"\ndtypes = [\"float32\", \"float32\"]",
        "name = \"dgamma_partials\"\ndtypes = [\"float16\", \"float32\"]",
        1,
    );
    assert_error(&text, 28, "outputs[1].dtypes[0]", "float32 sums");
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

#[test]
fn backward_must_be_an_op_name_and_not_the_op_itself() {
    let with = |b: &str| {
        GOOD.replacen(
            "targets = [\"ascend910b\"]\n",
            &format!("targets = [\"ascend910b\"]\nbackward = \"{b}\"\n"),
            1,
        )
    };
    assert_error(&with("Not-A-Name"), 5, "backward", "is not an op name");
    assert_error(&with("my_norm_grad"), 5, "backward", "cannot be its own backward");
    let spec = family::parse_str(Path::new(PATH), &with("other_op")).unwrap();
    assert_eq!(spec.backward.as_deref(), Some("other_op"));
}

#[test]
fn a_backward_missing_from_the_catalogue_is_an_error_at_its_line() {
    let dir = std::env::temp_dir().join(format!("opgen_backward_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = GOOD.replacen(
        "targets = [\"ascend910b\"]\n",
        "targets = [\"ascend910b\"]\nbackward = \"no_such_op\"\n",
        1,
    );
    std::fs::write(dir.join("my_norm_grad.toml"), &text).unwrap();
    let errs = family::load_catalogue(&dir).expect_err("an unknown backward op must be rejected");
    std::fs::remove_dir_all(&dir).unwrap();
    let e = errs.0.iter().find(|e| e.field == "backward").expect("a backward error");
    assert_eq!((e.line, e.column), (5, 12), "{errs}");
    assert!(e.message.contains("`no_such_op`, which is not in the catalogue"), "{errs}");
}

#[test]
fn the_catalogue_forwards_name_their_backward_ops() {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let backward = |n: &str| specs.iter().find(|s| s.name == n).and_then(|s| s.backward.clone());
    assert_eq!(backward("rms_norm").as_deref(), Some("rms_norm_grad"));
    assert_eq!(backward("add_rms_norm").as_deref(), Some("add_rms_norm_grad"));
}
