//! Validation of elementwise specs: one test per rule. Every error names the file, the line and
//! the column (inside the body for body errors: the column of the offending character) and the
//! field.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::spec::SpecErrors;
use std::path::Path;

const GOOD: &str = r#"name = "my_act"
family = "elementwise"
summary = "test op"
targets = ["ascend910b"]

[[inputs]]
name = "x"
dtypes = ["float16", "bfloat16", "float32"]

[[inputs]]
name = "up"
dtypes = ["float16", "bfloat16", "float32"]

[[outputs]]
name = "y"
dtypes = ["float16", "bfloat16", "float32"]

[[attrs]]
name = "alpha"
type = "float"
default = 1.5

[elementwise]
body = "x * sigmoid(alpha * x) * up"
compute = "float32"
"#;

const PATH: &str = "kernels/my_act.toml";
/// Line of `body = "` in GOOD, and the column of the body's first character.
const BODY_LINE: usize = 24;
const BODY_COL: usize = 9;

fn errors(text: &str) -> SpecErrors {
    family::parse_str(Path::new(PATH), text).expect_err("the spec must be rejected")
}

fn with_body(body: &str) -> String {
    GOOD.patched("x * sigmoid(alpha * x) * up", body)
}

/// The error of `field` must be at line:column, and its rendering must name all the parts.
fn assert_error_at(text: &str, field: &str, line: usize, column: usize, words: &str) {
    let errs = errors(text);
    let shown = errs.to_string();
    let e = errs
        .0
        .iter()
        .find(|e| e.field == field)
        .unwrap_or_else(|| panic!("no error for `{field}` in:\n{shown}"));
    assert_eq!((e.line, e.column), (line, column), "position of `{field}` in:\n{shown}");
    assert!(e.message.contains(words), "`{words}` not in:\n{shown}");
    let located = format!("{PATH}:{line}:{column}: field `{field}`");
    assert!(shown.contains(&located), "`{located}` not in:\n{shown}");
}

#[test]
fn the_good_spec_is_accepted() {
    let s = family::parse_str(Path::new(PATH), GOOD).unwrap();
    assert_eq!(s.op_type, "OpgenMyAct");
    assert_eq!(s.columns(), 3);
}

#[test]
fn a_body_that_does_not_parse_names_the_column_of_the_error() {
    // `x * (up +` ends where an operand is missing: column of the end of the body.
    let body = "x * (up + alpha";
    assert_error_at(&with_body(body), "elementwise.body", BODY_LINE, BODY_COL + body.len(), "does not parse");
    // A stray character: its own column.
    assert_error_at(&with_body("x * up ^ 2"), "elementwise.body", BODY_LINE, BODY_COL + 7, "pow(x, n)");
    // Two operands with no operator between them.
    assert_error_at(&with_body("x up"), "elementwise.body", BODY_LINE, BODY_COL + 2, "operator is missing");
}

#[test]
fn an_unknown_function_is_named_at_its_column() {
    let body = "x * up * gelu(x)";
    assert_error_at(&with_body(body), "elementwise.body", BODY_LINE, BODY_COL + 9, "unknown function `gelu`");
    let errs = errors(&with_body(body)).to_string();
    assert!(errs.contains("known functions: exp, log, sqrt"), "{errs}");
}

#[test]
fn a_reference_to_an_undefined_input_is_named_at_its_column() {
    let body = "x * sigmoid(gate) * up";
    assert_error_at(&with_body(body), "elementwise.body", BODY_LINE, BODY_COL + 12, "`gate` is not defined");
    let errs = errors(&with_body(body)).to_string();
    assert!(errs.contains("not an input (x, up)"), "{errs}");
}

#[test]
fn columns_count_characters_in_a_multi_line_body() {
    let text =
        GOOD.patched("body = \"x * sigmoid(alpha * x) * up\"", "body = \"\"\"\nx * up +\n   foo(x)\"\"\"");
    assert_error_at(&text, "elementwise.body", BODY_LINE + 2, 4, "unknown function `foo`");
}

#[test]
fn every_input_must_be_used() {
    let text = with_body("x * sigmoid(x)");
    assert_error_at(&text, "inputs[1].name", 11, 8, "input `up` is not used");
}

#[test]
fn pow_needs_an_integer_literal_exponent() {
    assert_error_at(
        &with_body("pow(x, 2.5) * up"),
        "elementwise.body",
        BODY_LINE,
        BODY_COL + 7,
        "integer literal",
    );
    assert_error_at(&with_body("pow(x, up)"), "elementwise.body", BODY_LINE, BODY_COL + 7, "integer literal");
}

#[test]
fn wrong_arity() {
    assert_error_at(
        &with_body("max(x) * up"),
        "elementwise.body",
        BODY_LINE,
        BODY_COL,
        "takes 2 arguments, found 1",
    );
}

#[test]
fn compute_must_be_float32() {
    let text = GOOD.patched("compute = \"float32\"", "compute = \"float16\"");
    assert_error_at(&text, "elementwise.compute", 25, 11, "computed in float32");
    let text = GOOD.patched("compute = \"float32\"", "compute = \"fp64\"");
    assert_error_at(&text, "elementwise.compute", 25, 11, "unknown compute dtype");
}

#[test]
fn exactly_one_output() {
    let text = GOOD.patched(
        "[[attrs]]",
        "[[outputs]]\nname = \"z\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\"]\n\n[[attrs]]",
    );
    let errs = errors(&text);
    let e = errs.0.iter().find(|e| e.field == "outputs").expect("an outputs error");
    assert!(e.message.contains("exactly one output"), "{errs}");
    assert!(e.line > 0);
}

#[test]
fn dtypes_must_be_float() {
    let text = GOOD.patched_first(
        "dtypes = [\"float16\", \"bfloat16\", \"float32\"]",
        "dtypes = [\"float16\", \"bfloat16\", \"int32\"]",
        3,
    );
    assert_error_at(&text, "inputs[0].dtypes[2]", 8, 34, "not int32");
}

#[test]
fn attrs_must_be_numbers() {
    let text = GOOD.patched("type = \"float\"\ndefault = 1.5", "type = \"bool\"\ndefault = true");
    assert_error_at(&text, "attrs[0].type", 20, 8, "float or int");
}

#[test]
fn division_by_a_zero_constant() {
    assert_error_at(
        &with_body("x * up / (2 - 2)"),
        "elementwise.body",
        BODY_LINE,
        BODY_COL,
        "divides by the constant 0",
    );
}

#[test]
fn the_output_dtype_must_follow_from_the_inputs() {
    let text = GOOD
        .patched_all(
            "dtypes = [\"float16\", \"bfloat16\", \"float32\"]",
            "dtypes = [\"float16\", \"float16\"]",
            3,
        )
        .patched(
            "name = \"y\"\ndtypes = [\"float16\", \"float16\"]",
            "name = \"y\"\ndtypes = [\"float16\", \"float32\"]",
        );
    let errs = errors(&text);
    assert!(errs.0.iter().any(|e| e.message.contains("same input dtypes")), "{errs}");
}

#[test]
fn the_rounding_attr_is_a_string_the_body_does_not_read() {
    let rounding = "[[attrs]]\nname = \"rounding\"\ntype = \"string\"\ndefault = \"hf\"\n\n[elementwise]";
    let text = GOOD
        .patched("[elementwise]", rounding)
        .patched("x * sigmoid(alpha * x) * up", "rne(x * sigmoid(alpha * x)) * up");
    let spec = family::parse_str(Path::new(PATH), &text).unwrap();
    assert_eq!(spec.attrs[1].name, "rounding");
    // Read as a number: refused at the body.
    let bad = text.patched("rne(x * sigmoid(alpha * x)) * up", "x * rounding * up");
    let errs = errors(&bad).to_string();
    assert!(errs.contains("the body reads `rounding`, a string attr"), "{errs}");
    // An unknown value: refused at its default.
    let errs = errors(&text.patched("default = \"hf\"", "default = \"twice\"")).to_string();
    assert!(errs.contains("field `attrs[1].default`: rounding `twice` is not supported"), "{errs}");
    // rne of a constant: refused (it rounds tensors).
    let errs = errors(&text.patched("rne(x * sigmoid(alpha * x))", "rne(alpha) * x")).to_string();
    assert!(errs.contains("rne(alpha) rounds a constant or attr expression"), "{errs}");
}
