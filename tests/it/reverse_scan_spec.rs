//! The reverse_scan family's spec rules (gae): a bad spec is rejected with file:line:column, the
//! field and what is wrong; the catalogue spec loads.

use crate::support::Patched;
use ascend_opgen::family;
use std::path::Path;

const PATH: &str = "kernels/gae.toml";

fn good() -> String {
    std::fs::read_to_string(ascend_opgen::repo_root().join(PATH)).unwrap()
}

fn assert_error(text: &str, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, None, field, words);
}

#[test]
fn the_catalogue_spec_loads() {
    let s = family::parse_str(Path::new(PATH), &good()).unwrap();
    assert_eq!(s.family.name(), "reverse_scan");
    // Rewards and values float16, bfloat16, float32, each with a float32 and an int8 mask.
    assert_eq!(s.columns(), 6);
    let labels: Vec<String> = (0..6).map(|c| s.column_label(c)).collect();
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

const REWARDS: &str =
    "name = \"token_level_rewards\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\", \"float16\",";
const VALUES: &str = "name = \"values\"\ndtypes = [\"float16\", \"bfloat16\", \"float32\", \"float16\",";
const MASK: &str = "name = \"response_mask\"\ndtypes = [\"float32\", \"float32\", \"float32\", \"int8\",";
const RETURNS: &str = "name = \"returns\"\ndtypes = [\"float32\",";

#[test]
fn values_of_another_dtype_than_the_rewards_are_refused() {
    let text = good().patched(
        VALUES,
        "name = \"values\"\ndtypes = [\"bfloat16\", \"bfloat16\", \"float32\", \"float16\",",
    );
    assert_error(
        &text,
        "inputs[1].dtypes[0]",
        "`values` is token_level_rewards' dtype in each combination (float16) (found bfloat16)",
    );
}

#[test]
fn rewards_mask_and_output_dtypes_outside_the_lists_are_refused() {
    let text = good().patched(
        REWARDS,
        "name = \"token_level_rewards\"\ndtypes = [\"int8\", \"bfloat16\", \"float32\", \"float16\",",
    );
    assert_error(
        &text,
        "inputs[0].dtypes[0]",
        "`token_level_rewards` is float16, bfloat16 or float32 (found int8)",
    );
    let text = good().patched(
        MASK,
        "name = \"response_mask\"\ndtypes = [\"bfloat16\", \"float32\", \"float32\", \"int8\",",
    );
    assert_error(&text, "inputs[2].dtypes[0]", "`response_mask` is float32 or int8 (found bfloat16)");
    let text = good().patched(RETURNS, "name = \"returns\"\ndtypes = [\"float16\",");
    assert_error(&text, "outputs[1].dtypes[0]", "`returns` is float32 (found float16)");
}

#[test]
fn inputs_outputs_and_attrs_are_named_and_ordered() {
    let text = good().patched("name = \"response_mask\"", "name = \"mask\"");
    assert_error(&text, "inputs", "takes inputs (token_level_rewards, values, response_mask) for gae or");
    let text = good().patched("name = \"returns\"", "name = \"rets\"");
    assert_error(&text, "outputs", "has outputs (advantages, returns) in that order");
    let text = good().patched("name = \"lam\"", "name = \"lambda_\"");
    assert_error(&text, "attrs", "takes attrs gamma and lam (float), in that order");
}
