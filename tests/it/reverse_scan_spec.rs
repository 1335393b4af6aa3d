//! The reverse_scan family's spec rules (gae): a bad spec is rejected with file:line:column, the
//! field and what is wrong; the catalogue spec loads.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::spec::Family;
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
    assert_eq!(s.family, Family::ReverseScan);
    assert_eq!(s.columns(), 1);
}

#[test]
fn a_16_bit_input_or_output_is_refused() {
    let text = good()
        .patched("name = \"values\"\ndtypes = [\"float32\"]", "name = \"values\"\ndtypes = [\"bfloat16\"]");
    assert_error(&text, "inputs[1].dtypes[0]", "`values` is float32 (found bfloat16");
    let text = good()
        .patched("name = \"returns\"\ndtypes = [\"float32\"]", "name = \"returns\"\ndtypes = [\"float16\"]");
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
