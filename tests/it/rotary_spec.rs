//! The rotary family's spec rules: each bad spec is rejected with file:line:column, the field
//! and a message that says what is wrong; the catalogue spec and its tiling layout are sane.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::family::rotary::{MODES, TILING_FIELDS};
use ascend_opgen::spec::AttrValue;
use ascend_opgen::DType;
use std::path::Path;

const GOOD: &str = r#"name = "my_rope"
family = "rotary"
summary = "test op"
targets = ["ascend910b"]

[[inputs]]
name = "x"
dtypes = ["float16", "bfloat16", "float32"]

[[inputs]]
name = "r1"
dtypes = ["float16", "bfloat16", "float32"]

[[inputs]]
name = "r2"
dtypes = ["float16", "bfloat16", "float32"]

[[outputs]]
name = "y"
dtypes = ["float16", "bfloat16", "float32"]

[[attrs]]
name = "mode"
type = "string"
default = "half"
"#;

const PATH: &str = "kernels/my_rope.toml";

/// The error for `field` must sit on `line` and its message must contain `words`.
fn assert_error(text: &str, line: usize, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, Some(line), field, words);
}

#[test]
fn the_good_spec_is_accepted_in_both_modes() {
    for mode in MODES {
        let text = GOOD.patched("default = \"half\"", &format!("default = \"{mode}\""));
        let s = family::parse_str(Path::new(PATH), &text).unwrap();
        assert_eq!(s.op_type, "OpgenMyRope");
        assert_eq!(s.columns(), 3);
        assert_eq!(s.attrs[0].default, Some(AttrValue::String(mode.to_string())));
    }
    // No default makes the mode a required attr.
    let text = GOOD.patched("default = \"half\"\n", "");
    assert!(family::parse_str(Path::new(PATH), &text).unwrap().attrs[0].default.is_none());
}

#[test]
fn the_catalogue_spec_is_accepted() {
    let s =
        family::load_file(Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/rotary_mul.toml").as_path())
            .expect("kernels/rotary_mul.toml");
    assert_eq!(s.name, "rotary_mul");
    assert_eq!(s.op_type, "OpgenRotaryMul");
    // float32 is registered (error-free products in the kernel): every tensor in every dtype.
    let all = [DType::Float16, DType::BFloat16, DType::Float32];
    assert!(s.inputs.iter().chain(&s.outputs).all(|t| t.dtypes == all), "{:?}", s.inputs);
    assert_eq!(s.attrs[0].default, Some(AttrValue::String("half".into())));
}

#[test]
fn bad_mode_default() {
    let text = GOOD.patched("default = \"half\"", "default = \"quarter\"");
    assert_error(&text, 25, "attrs[0].default", "mode `quarter` is not supported: use \"half\"");
}

#[test]
fn mode_must_be_the_one_string_attr() {
    let text = GOOD.patched("type = \"string\"\ndefault = \"half\"", "type = \"int\"\ndefault = 0");
    assert_error(&text, 23, "attrs", "takes the string attr `mode`");
    let text = GOOD.patched("name = \"mode\"", "name = \"rotary_mode\"");
    assert_error(&text, 23, "attrs", "takes the string attr `mode`");
    let text = GOOD.patched("\n[[attrs]]\nname = \"mode\"\ntype = \"string\"\ndefault = \"half\"\n", "");
    assert_error(&text, 1, "attrs", "takes the string attr `mode`");
    // A second attr must be the string `rounding`; a third is refused.
    let text = format!("{GOOD}\n[[attrs]]\nname = \"rotate\"\ntype = \"bool\"\n");
    assert_error(
        &text,
        28,
        "attrs[1]",
        "takes a string attr `rounding` (\"once\" or \"hf\") here, found bool attr `rotate`",
    );
    let rounding = "\n[[attrs]]\nname = \"rounding\"\ntype = \"string\"\ndefault = \"once\"\n";
    let text = format!("{GOOD}{rounding}\n[[attrs]]\nname = \"rotate\"\ntype = \"bool\"\n");
    assert_error(&text, 23, "attrs", "optionally followed by the string attr `rounding`");
}

#[test]
fn rounding_is_once_or_hf() {
    for value in ["once", "hf"] {
        let text =
            format!("{GOOD}\n[[attrs]]\nname = \"rounding\"\ntype = \"string\"\ndefault = \"{value}\"\n");
        let spec = family::parse_str(Path::new(PATH), &text).expect("accepted");
        assert_eq!(spec.attrs[1].default, Some(AttrValue::String(value.into())));
    }
    let text = format!("{GOOD}\n[[attrs]]\nname = \"rounding\"\ntype = \"string\"\ndefault = \"twice\"\n");
    assert_error(&text, 30, "attrs[1].default", "rounding `twice` is not supported: use \"once\" or \"hf\"");
}

#[test]
fn wrong_input_count() {
    let text =
        GOOD.patched("[[inputs]]\nname = \"r2\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\"]\n\n", "");
    assert_error(&text, 6, "inputs", "takes 3 inputs (x, r1, r2), found 2");
}

#[test]
fn wrong_output_count() {
    let text =
        format!("{GOOD}\n[[outputs]]\nname = \"y2\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\"]\n");
    assert_error(&text, 18, "outputs", "has 1 output (y), found 2");
}

#[test]
fn unsupported_dtype() {
    let text = GOOD.patched_first(
        "dtypes = [\"float16\", \"bfloat16\", \"float32\"]",
        "dtypes = [\"float16\", \"bfloat16\", \"int8\"]",
        4,
    );
    assert_error(&text, 8, "inputs[0].dtypes[2]", "cannot compute int8");
}

#[test]
fn tables_must_have_x_dtype() {
    let text = GOOD.patched(
        "name = \"r1\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\"]",
        "name = \"r1\"\ndtypes = [\"float32\", \"bfloat16\", \"float32\"]",
    );
    assert_error(&text, 12, "inputs[1].dtypes[0]", "`r1` must have x's dtype float16 in combination 1");
}

#[test]
fn output_must_have_x_dtype() {
    let text = GOOD.patched(
        "name = \"y\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\"]",
        "name = \"y\"\ndtypes = [\"float16\", \"float32\", \"float32\"]",
    );
    assert_error(&text, 20, "outputs[0].dtypes[1]", "must be bfloat16 in combination 2");
}

#[test]
fn nothing_is_updated_in_place() {
    let text = GOOD.patched("name = \"x\"\n", "name = \"x\"\nmutated = true\n");
    assert_error(&text, 8, "inputs[0].mutated", "updates nothing in place");
}

#[test]
fn tiling_fields_are_unique_and_documented() {
    let mut names: Vec<&str> = TILING_FIELDS.iter().map(|f| f.name).collect();
    assert!(TILING_FIELDS.iter().all(|f| !f.doc.is_empty() && f.ctype == "uint32_t"));
    names.sort();
    names.dedup();
    assert_eq!(names.len(), TILING_FIELDS.len());
}
