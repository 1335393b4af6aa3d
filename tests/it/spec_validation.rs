//! One test per spec validation rule: each bad spec must be rejected with file:line:column,
//! the field, and a message that says what is wrong.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::spec::SpecErrors;
use std::path::Path;

const GOOD: &str = r#"name = "my_norm"
family = "row_norm"
summary = "test op"
targets = ["ascend910b"]

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
"#;

fn errors(text: &str) -> SpecErrors {
    family::parse_str(Path::new("kernels/my_norm.toml"), text).expect_err("the spec must be rejected")
}

/// The single error's "line:column: field `..`: message" must contain all the parts.
fn assert_error(text: &str, line: usize, field: &str, words: &str) {
    let errs = errors(text);
    let shown = errs.to_string();
    let hit = errs.0.iter().find(|e| e.field == field);
    let e = hit.unwrap_or_else(|| panic!("no error for field `{field}` in:\n{shown}"));
    assert_eq!(e.line, line, "line of `{field}` in:\n{shown}");
    assert!(e.column > 0, "column missing in:\n{shown}");
    assert!(e.message.contains(words), "`{words}` not in:\n{shown}");
    assert!(shown.contains("kernels/my_norm.toml:"), "file missing in:\n{shown}");
}

#[test]
fn the_good_spec_is_accepted() {
    let s = family::parse_str(Path::new("kernels/my_norm.toml"), GOOD).unwrap();
    assert_eq!(s.op_type, "OpgenMyNorm");
    assert_eq!(s.file_stem(), "opgen_my_norm");
    assert_eq!(s.columns(), 2);
}

#[test]
fn unknown_key() {
    let text = GOOD.patched("name = \"gamma\"", "name = \"gamma\"\nshape = [4]");
    assert_error(&text, 12, "inputs[1].shape", "unknown field `shape`");
}

#[test]
fn missing_field() {
    let text = GOOD.patched("summary = \"test op\"\n", "");
    assert_error(&text, 1, "name", "missing field `summary`");
}

#[test]
fn wrong_type() {
    let text = GOOD.patched("targets = [\"ascend910b\"]", "targets = \"ascend910b\"");
    assert_error(&text, 4, "targets", "invalid type");
}

#[test]
fn dtype_lists_of_unequal_length() {
    let text = GOOD.patched("dtypes = [\"float32\", \"float32\"]", "dtypes = [\"float32\"]");
    assert_error(&text, 20, "outputs[1].dtypes", "has 1 dtypes but `inputs[0].dtypes` has 2");
}

#[test]
fn dtype_the_family_cannot_do() {
    let text =
        GOOD.patched_first("dtypes = [\"float16\", \"float32\"]", "dtypes = [\"int8\", \"float32\"]", 3);
    assert_error(&text, 8, "inputs[0].dtypes[0]", "cannot compute int8");
}

#[test]
fn unknown_dtype() {
    let text = GOOD.patched_first("\"float16\", \"float32\"", "\"float64\", \"float32\"", 3);
    assert_error(&text, 8, "inputs[0].dtypes[0]", "unknown dtype `float64`");
}

#[test]
fn duplicate_names() {
    let text = GOOD.patched("name = \"rstd\"", "name = \"x\"");
    assert_error(&text, 19, "outputs[1].name", "already used by `inputs[0].name`");
}

#[test]
fn name_not_a_c_identifier() {
    let text = GOOD.patched("name = \"gamma\"", "name = \"gam-ma\"");
    assert_error(&text, 11, "inputs[1].name", "not a C identifier");
}

#[test]
fn name_is_a_cpp_keyword() {
    let text = GOOD.patched("name = \"gamma\"", "name = \"class\"");
    assert_error(&text, 11, "inputs[1].name", "C++ keyword");
}

#[test]
fn op_type_collides_with_a_cann_builtin() {
    let text = GOOD.patched("family = \"row_norm\"", "family = \"row_norm\"\nop_type = \"RmsNorm\"");
    assert_error(&text, 3, "op_type", "collides with the CANN built-in");
}

#[test]
fn attr_default_of_the_wrong_type() {
    let text = GOOD.patched("default = 1e-6", "default = \"small\"");
    assert_error(&text, 25, "attrs[0].default", "is a string, but the attr's type is float");
}

#[test]
fn unknown_family() {
    let text = GOOD.patched("family = \"row_norm\"", "family = \"layer_norm\"");
    assert_error(&text, 2, "family", "unknown family `layer_norm`");
}

#[test]
fn op_name_must_match_the_file() {
    let text = GOOD.patched("name = \"my_norm\"", "name = \"other_norm\"");
    assert_error(&text, 1, "name", "must equal the spec's file stem `my_norm`");
}

#[test]
fn unknown_compute_unit() {
    let text = GOOD.patched("[\"ascend910b\"]", "[\"ascend910b\", \"ascend999\"]");
    assert_error(&text, 4, "targets[1]", "unknown compute unit `ascend999`");
}

#[test]
fn duplicate_dtype_combination() {
    let text = GOOD.patched_all("[\"float16\", \"float32\"]", "[\"float16\", \"float16\"]", 3);
    assert_error(&text, 8, "inputs[0].dtypes[1]", "listed twice");
}

#[test]
fn not_toml_at_all() {
    let errs = errors("name = \"my_norm\"\nfamily = [\n");
    assert_eq!(errs.0.len(), 1);
    assert!(errs.0[0].line >= 2, "{errs}");
}

#[test]
fn empty_catalogue() {
    let dir = crate::support::TempDir::new("empty");
    let err = family::load_catalogue(&dir).unwrap_err();
    assert!(err.to_string().contains("the catalogue is empty"), "{err}");
}

#[test]
fn all_errors_are_reported_at_once() {
    let text =
        GOOD.patched("name = \"gamma\"", "name = \"class\"").patched("default = 1e-6", "default = true");
    assert!(errors(&text).0.len() >= 2);
}

/// Issue 15 point 5: every unknown field of a file (top level, in a table, in an array of
/// tables) and the rule errors after them, each located, in one run.
#[test]
fn every_unknown_field_and_the_rule_errors_in_one_run() {
    let text = GOOD
        .patched("summary = \"test op\"", "summary = \"test op\"\ncolour = \"red\"")
        .patched("name = \"gamma\"", "name = \"gamma\"\nshape = [4]")
        .patched("type = \"float\"", "type = \"float\"\nunit = \"s\"")
        .patched("name = \"rstd\"", "name = \"x\"");
    let errs = errors(&text);
    let shown = errs.to_string();
    let find = |field: &str| {
        errs.0
            .iter()
            .find(|e| e.field == field)
            .unwrap_or_else(|| panic!("no error for `{field}` in:\n{shown}"))
    };
    let colour = find("colour");
    assert_eq!((colour.line, colour.column), (4, 1), "{shown}");
    assert!(colour.message.contains("unknown field `colour`"), "{shown}");
    let shape = find("inputs[1].shape");
    assert_eq!((shape.line, shape.column), (13, 1), "{shown}");
    assert!(shape.message.contains("unknown field `shape`"), "{shown}");
    let unit = find("attrs[0].unit");
    assert_eq!(unit.line, 27, "{shown}");
    // Unknown fields in the order of the file, then the rule errors.
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["colour", "inputs[1].shape", "attrs[0].unit", "outputs[1].name"], "{shown}");
    // The rule error of the same file, found after the unknown fields were set aside.
    let dup = find("outputs[1].name");
    assert_eq!(dup.line, 21, "{shown}");
    assert!(dup.message.contains("already used by `inputs[0].name`"), "{shown}");
    assert_eq!(errs.0.len(), 4, "{shown}");
    for line in shown.lines() {
        assert!(line.starts_with("error: kernels/my_norm.toml:"), "{shown}");
    }
}

/// An unknown field beside a type error: both reported; no rule errors (there is no spec to
/// check them on), and nothing else invented.
#[test]
fn unknown_fields_beside_a_type_error() {
    let text = GOOD
        .patched("summary = \"test op\"", "summary = \"test op\"\ncolour = \"red\"")
        .patched("targets = [\"ascend910b\"]", "targets = \"ascend910b\"");
    let errs = errors(&text);
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["colour", "targets"], "{errs}");
}

/// A directory: every file's errors, each file named.
#[test]
fn a_directory_reports_every_files_errors() {
    let dir = crate::support::TempDir::new("multi");
    let a = GOOD.patched("my_norm", "norm_a").patched("name = \"gamma\"", "name = \"gamma\"\nshape = [4]");
    let b = GOOD.patched("my_norm", "norm_b").patched("default = 1e-6", "default = \"small\"\nunit = \"s\"");
    std::fs::write(dir.join("norm_a.toml"), a).unwrap();
    std::fs::write(dir.join("norm_b.toml"), b).unwrap();
    let errs = family::load_catalogue(&dir).unwrap_err();
    let shown = errs.to_string();
    let of = |file: &str| {
        errs.0.iter().filter(|e| e.file.ends_with(file)).map(|e| e.field.as_str()).collect::<Vec<_>>()
    };
    assert_eq!(of("norm_a.toml"), ["inputs[1].shape"], "{shown}");
    assert_eq!(of("norm_b.toml"), ["attrs[0].unit", "attrs[0].default"], "{shown}");
    assert!(shown.contains("norm_b.toml:26:1: field `attrs[0].unit`"), "{shown}");
}

/// `opgen gen` over a directory with two bad specs and a good one: every file's errors on
/// stderr, exit 2, and no output directory written.
#[test]
fn gen_over_a_directory_reports_every_file_and_writes_nothing() {
    use ascend_opgen::toolchain::command::Cmd;
    let dir = crate::support::TempDir::new("multi-cli");
    let specs = dir.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    std::fs::write(
        specs.join("norm_a.toml"),
        GOOD.patched("my_norm", "norm_a").patched("summary", "colour = 1\nsummary"),
    )
    .unwrap();
    std::fs::write(
        specs.join("norm_b.toml"),
        GOOD.patched("my_norm", "norm_b").patched("name = \"rstd\"", "name = \"x\""),
    )
    .unwrap();
    std::fs::write(specs.join("norm_c.toml"), GOOD.patched("my_norm", "norm_c")).unwrap();
    let out = dir.join("out");
    let r = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .arg("gen")
        .arg("--specs")
        .arg(&specs)
        .arg("--out")
        .arg(&out)
        .stdin_null()
        .run()
        .expect("opgen runs");
    let text = r.combined_lossy();
    assert_eq!(r.code(), Some(2), "{text}");
    assert!(text.contains("norm_a.toml:3:1: field `colour`: unknown field `colour`"), "{text}");
    assert!(text.contains("norm_b.toml:19:8: field `outputs[1].name`"), "{text}");
    assert!(!text.contains("norm_c.toml"), "{text}");
    assert!(!out.exists(), "a failed gen wrote {}", out.display());
}

/// GOOD (25 lines) with a second attr appended: `name` on line 28, `default` on line 30.
fn with_rounding(kind: &str, default: &str) -> String {
    format!("{GOOD}\n[[attrs]]\nname = \"rounding\"\ntype = \"{kind}\"\ndefault = {default}\n")
}

#[test]
fn row_norm_rounding_attr() {
    // Accepted: "once" and "hf".
    for v in ["\"once\"", "\"hf\""] {
        let s = family::parse_str(Path::new("kernels/my_norm.toml"), &with_rounding("string", v)).unwrap();
        assert_eq!(s.attrs.len(), 2);
    }
    // An unknown value: at the default's line.
    assert_error(
        &with_rounding("string", "\"twice\""),
        30,
        "attrs[1].default",
        "rounding `twice` is not supported",
    );
    // Not a string attr.
    assert_error(&with_rounding("float", "1.0"), 28, "attrs[1]", "string attr `rounding`");
}
