//! The rotary_grad family's spec rules: each bad spec is rejected with file:line and the field;
//! the catalogue spec loads with the signature the torch glue binds against.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::spec::{AttrKind, AttrValue};
use std::path::Path;

const PATH: &str = "kernels/my_rope_grad.toml";

fn spec(outputs: &[(&str, &str)], attrs: &str) -> String {
    let mut s = String::from(
        "name = \"my_rope_grad\"\nfamily = \"rotary_grad\"\nsummary = \"test op\"\ntargets = [\"ascend910b\"]\n",
    );
    for name in ["dy", "x", "r1", "r2"] {
        s += &format!("\n[[inputs]]\nname = \"{name}\"\ndtypes = [\"float16\", \"float32\"]\n");
    }
    for (name, dtypes) in outputs {
        s += &format!("\n[[outputs]]\nname = \"{name}\"\ndtypes = {dtypes}\n");
    }
    s + attrs
}

const ATTRS: &str = "\n[[attrs]]\nname = \"mode\"\ntype = \"string\"\ndefault = \"half\"\n\n[[attrs]]\nname = \"table_grads\"\ntype = \"bool\"\ndefault = false\n";
const OUTS: [(&str, &str); 3] = [
    ("dx", "[\"float16\", \"float32\"]"),
    ("dr1", "[\"float16\", \"float32\"]"),
    ("dr2", "[\"float16\", \"float32\"]"),
];

fn assert_error(text: &str, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, None, field, words);
}

#[test]
fn the_good_spec_is_accepted() {
    let s = family::parse_str(Path::new(PATH), &spec(&OUTS, ATTRS)).unwrap();
    assert_eq!(s.family.name(), "rotary_grad");
}

#[test]
fn wrong_outputs_and_attrs_are_refused() {
    assert_error(&spec(&OUTS[..2], ATTRS), "outputs", "3 outputs (dx, dr1, dr2)");
    let mixed = [OUTS[0], OUTS[1], ("dr2", "[\"float32\", \"float32\"]")];
    assert_error(&spec(&mixed, ATTRS), "outputs[2].dtypes[0]", "must be float16");
    let one_attr = "\n[[attrs]]\nname = \"mode\"\ntype = \"string\"\ndefault = \"half\"\n";
    assert_error(&spec(&OUTS, one_attr), "attrs", "`table_grads`");
    let bad_mode = ATTRS.patched("default = \"half\"", "default = \"full\"");
    assert_error(&spec(&OUTS, &bad_mode), "attrs[0].default", "not supported");
}

#[test]
fn the_catalogue_op_has_the_agreed_signature() {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let s = specs.iter().find(|s| s.name == "rotary_mul_grad").expect("catalogue op");
    let names = |v: &[ascend_opgen::spec::TensorArg]| v.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&s.inputs), ["dy", "x", "r1", "r2"]);
    assert_eq!(names(&s.outputs), ["dx", "dr1", "dr2"]);
    assert_eq!(s.attrs[0].name, "mode");
    assert_eq!(s.attrs[0].default, Some(AttrValue::String("half".into())));
    assert_eq!((s.attrs[1].name.as_str(), s.attrs[1].kind), ("table_grads", AttrKind::Bool));
    assert_eq!(s.attrs[1].default, Some(AttrValue::Bool(false)));
}
