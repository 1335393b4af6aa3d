//! The vocab_reduce family's spec rules (logprob_entropy): a bad spec is rejected with
//! file:line:column, the field and what is wrong; the catalogue spec loads.

use crate::support::Patched;
use ascend_opgen::family;
use std::path::Path;

const PATH: &str = "kernels/logprob_entropy.toml";

fn good() -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(PATH)).unwrap()
}

fn assert_error(text: &str, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, None, field, words);
}

#[test]
fn the_catalogue_spec_loads() {
    let s = family::parse_str(Path::new(PATH), &good()).unwrap();
    assert_eq!(s.family.name(), "vocab_reduce");
    assert_eq!(s.columns(), 6);
}

#[test]
fn a_target_that_is_not_int32_or_int64_is_refused() {
    let text = good().patched(
        "dtypes = [\"int32\", \"int32\", \"int32\", \"int64\"",
        "dtypes = [\"int32\", \"int8\", \"int32\", \"int64\"",
    );
    assert_error(&text, "inputs[1].dtypes[1]", "target is int32 or int64 (found int8)");
}

#[test]
fn a_16_bit_output_is_refused() {
    let text = good().patched(
        "[[outputs]]\nname = \"entropy\"\ndtypes = [\"float32\", \"float32\"",
        "[[outputs]]\nname = \"entropy\"\ndtypes = [\"float32\", \"bfloat16\"",
    );
    assert_error(&text, "outputs[1].dtypes[1]", "`entropy` is float32 (found bfloat16)");
}

#[test]
fn inputs_outputs_and_attrs_are_named_and_ordered() {
    // The [backward] table names the renamed tensor too (renamed with it: its own check passes).
    let backward = "inputs = [\"logits\", \"target\", \"lse\", \"entropy\"";
    let text = good()
        .patched("name = \"target\"", "name = \"labels\"")
        .patched(backward, "inputs = [\"logits\", \"labels\", \"lse\", \"entropy\"");
    assert_error(&text, "inputs", "takes inputs (logits, target) in that order");
    let text = good()
        .patched("name = \"lse\"", "name = \"logsumexp\"")
        .patched(backward, "inputs = [\"logits\", \"target\", \"logsumexp\", \"entropy\"");
    assert_error(&text, "outputs", "has outputs (logprob, entropy, lse) in that order");
    let text =
        good().patched("type = \"int\"", "type = \"float\"").patched("default = -100", "default = -100.0");
    assert_error(&text, "attrs", "temperature (float) and ignore_index (int)");
}

// ---- logprob_entropy_grad ----------------------------------------------------------------------

const GRAD_PATH: &str = "kernels/logprob_entropy_grad.toml";

fn grad_errors(text: &str) -> String {
    family::parse_str(Path::new(GRAD_PATH), text).expect_err("the spec must be rejected").to_string()
}

fn grad_good() -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(GRAD_PATH)).unwrap()
}

#[test]
fn the_backward_spec_loads() {
    let s = family::parse_str(Path::new(GRAD_PATH), &grad_good()).unwrap();
    assert_eq!((s.family.name(), s.columns(), s.outputs.len()), ("vocab_reduce", 6, 1));
}

#[test]
fn the_backward_refuses_a_dlogits_dtype_other_than_the_logits_and_16_bit_rows() {
    let text = grad_good()
        .patched("name = \"dlogits\"\ndtypes = [\"float16\"", "name = \"dlogits\"\ndtypes = [\"float32\"");
    let shown = grad_errors(&text);
    assert!(
        shown.contains("outputs[0].dtypes[0]")
            && shown.contains("dlogits has logits' dtype float16 (found float32)"),
        "{shown}"
    );
    let text =
        grad_good().patched("name = \"lse\"\ndtypes = [\"float32\"", "name = \"lse\"\ndtypes = [\"float16\"");
    let shown = grad_errors(&text);
    assert!(
        shown.contains("inputs[2].dtypes[0]") && shown.contains("`lse` is float32 (found float16)"),
        "{shown}"
    );
    let text = grad_good().patched("name = \"dentropy\"", "name = \"dent\"");
    let shown = grad_errors(&text);
    assert!(
        shown.contains("takes inputs (logits, target, lse, entropy, dlogprob, dentropy) in that order"),
        "{shown}"
    );
}

// ---- logprob_entropy_grad_inplace: CANN's ref output ---------------------------------------------

const INPLACE_PATH: &str = "kernels/logprob_entropy_grad_inplace.toml";

fn inplace_good() -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(INPLACE_PATH)).unwrap()
}

fn inplace_errors(text: &str) -> String {
    family::parse_str(Path::new(INPLACE_PATH), text).expect_err("the spec must be rejected").to_string()
}

/// The output `logits` marked mutated is the input's in-place form: logits becomes a mutated
/// input, the op has no output of its own, and `refs` names it (the OpDef's same-named output).
#[test]
fn the_in_place_spec_loads_with_logits_as_its_ref_output() {
    let s = family::parse_str(Path::new(INPLACE_PATH), &inplace_good()).unwrap();
    assert_eq!((s.family.name(), s.columns(), s.outputs.len()), ("vocab_reduce", 6, 0));
    assert_eq!(s.refs, vec!["logits".to_string()]);
    assert_eq!(s.mutated_inputs(), vec!["logits".to_string()]);
    assert_eq!(s.ref_outputs()[0].dtypes, s.inputs[0].dtypes);
}

#[test]
fn an_in_place_output_with_other_dtypes_or_naming_no_input_is_refused() {
    let out = "name = \"logits\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\", \"float16\", \"bfloat16\", \"float32\"]\nmutated = true";
    let text = inplace_good().patched(
        out,
        "name = \"logits\"\ndtypes = [\"float32\", \"bfloat16\", \"float16\", \"float16\", \"bfloat16\", \"float32\"]\nmutated = true",
    );
    let shown = inplace_errors(&text);
    assert!(
        shown.contains("logprob_entropy_grad_inplace.toml")
            && shown.contains("outputs[0].dtypes")
            && shown.contains("the in-place output `logits` has dtypes [float32, bfloat16, float16")
            && shown.contains("its input has [float16, bfloat16, float32"),
        "{shown}"
    );
    let text = inplace_good().patched(out, &out.replace("name = \"logits\"", "name = \"scores\""));
    let shown = inplace_errors(&text);
    assert!(
        shown.contains("outputs[0].name")
            && shown
                .contains("output `scores` is marked mutated (an input updated in place) but names no input"),
        "{shown}"
    );
    // Without `mutated`, a same-named output is a second tensor of one name.
    let text = inplace_good().patched(out, &out.replace("\nmutated = true", ""));
    let shown = inplace_errors(&text);
    assert!(shown.contains("outputs[0].name") && shown.contains("name `logits` is already used"), "{shown}");
}

/// Only a family whose kernel takes the `<name>_ref` argument may declare an in-place output:
/// the forward's kernel has none, so a mutated output there is refused at validation, not
/// found later as a kernel entry that does not match its launch.
#[test]
fn an_in_place_output_on_a_kernel_without_one_is_refused() {
    let text = format!(
        "{}\n[[outputs]]\nname = \"logits\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\", \"float16\", \"bfloat16\", \"float32\"]\nmutated = true\n",
        good()
    );
    let shown = family::parse_str(Path::new(PATH), &text).expect_err("the spec must be rejected").to_string();
    assert!(
        shown.contains("logprob_entropy.toml")
            && shown.contains("output `logits` is marked mutated (an in-place output), but family vocab_reduce's kernels take no in-place output"),
        "{shown}"
    );
}
