//! The whiten family's spec rules (masked_whiten, grpo_advantage): a bad spec is rejected with
//! file:line:column, the field and what is wrong; the catalogue specs load.

use crate::support::Patched;
use ascend_opgen::family;
use std::path::Path;

const PATH: &str = "kernels/masked_whiten.toml";

fn good() -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(PATH)).unwrap()
}

fn assert_error(text: &str, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, None, field, words);
}

#[test]
fn the_catalogue_spec_loads() {
    let s = family::parse_str(Path::new(PATH), &good()).unwrap();
    assert_eq!(s.family.name(), "whiten");
    let labels: Vec<String> = (0..s.columns()).map(|c| s.column_label(c)).collect();
    assert_eq!(
        labels,
        [
            "float16/float32",
            "bfloat16/float32",
            "float32/float32",
            "float16/int8",
            "bfloat16/int8",
            "float32/int8"
        ]
    );
}

#[test]
fn dtypes_outside_the_lists_are_refused() {
    let values = "name = \"values\"\ndtypes = [\"float16\",";
    let text = good().patched(values, "name = \"values\"\ndtypes = [\"int8\",");
    assert_error(&text, "inputs[0].dtypes[0]", "`values` is float16, bfloat16 or float32 (found int8)");
    let mask = "name = \"response_mask\"\ndtypes = [\"float32\",";
    let text = good().patched(mask, "name = \"response_mask\"\ndtypes = [\"bfloat16\",");
    assert_error(&text, "inputs[1].dtypes[0]", "`response_mask` is float32 or int8 (found bfloat16)");
    let out = "name = \"whitened\"\ndtypes = [\"float32\",";
    let text = good().patched(out, "name = \"whitened\"\ndtypes = [\"float16\",");
    assert_error(&text, "outputs[0].dtypes[0]", "`whitened` is float32 (found float16)");
}

#[test]
fn inputs_outputs_and_attrs_are_named() {
    let text = good().patched("name = \"response_mask\"", "name = \"mask\"");
    assert_error(
        &text,
        "inputs",
        "takes inputs (values, response_mask) for masked_whiten or (token_level_rewards, response_mask, index) \
         for grpo_advantage, in that order",
    );
    let text = good().patched("name = \"whitened\"", "name = \"advantages\"");
    assert_error(&text, "outputs", "has one output, `whitened`");
    let text = good().patched("type = \"bool\"\ndefault = true", "type = \"float\"\ndefault = 1.0");
    assert_error(&text, "attrs", "takes one attr, shift_mean (bool)");
}

const GRPO: &str = "kernels/grpo_advantage.toml";

fn grpo() -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(GRPO)).unwrap()
}

#[test]
fn grpo_advantage_loads_and_its_rules_name_the_field() {
    let s = family::parse_str(Path::new(GRPO), &grpo()).unwrap();
    assert_eq!((s.family.name(), s.columns()), ("whiten", 6));
    let err = |text: &str, field: &str, words: &str| {
        crate::support::assert_spec_error(GRPO, text, None, field, words)
    };
    let ids = "name = \"index\"\ndtypes = [\"int32\",";
    let text = grpo().patched(ids, "name = \"index\"\ndtypes = [\"int8\",");
    err(&text, "inputs[2].dtypes[0]", "`index` is int32 (found int8)");
    let rewards = "name = \"token_level_rewards\"\ndtypes = [\"float16\",";
    let text = grpo().patched(rewards, "name = \"token_level_rewards\"\ndtypes = [\"int8\",");
    err(&text, "inputs[0].dtypes[0]", "`token_level_rewards` is float16, bfloat16 or float32 (found int8)");
    let text = grpo().patched("name = \"advantages\"", "name = \"whitened\"");
    err(&text, "outputs", "has one output, `advantages`");
    let text = grpo().patched("name = \"norm_by_std\"", "name = \"norm\"");
    err(&text, "attrs", "takes two attrs, epsilon (float) and norm_by_std (bool)");
}
