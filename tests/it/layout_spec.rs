//! The KV-layout families' spec rules (permute, paged_cache, dequant): every bad spec is
//! rejected with file:line:column, the field and a message that says what is wrong; the
//! catalogue specs load with their kinds.

use crate::support::Patched;
use ascend_opgen::family;
use ascend_opgen::spec::KvKind;
use std::path::Path;

const CACHE: &str = r#"name = "my_cache"
family = "paged_cache"
summary = "test op"
targets = ["ascend910b"]
differentiable = false

[paged_cache]
kind = "reshape_and_cache"

[[inputs]]
name = "key"
dtypes = ["float16", "bfloat16"]

[[inputs]]
name = "value"
dtypes = ["float16", "bfloat16"]

[[inputs]]
name = "key_cache"
dtypes = ["float16", "bfloat16"]
mutated = true

[[inputs]]
name = "value_cache"
dtypes = ["float16", "bfloat16"]
mutated = true

[[inputs]]
name = "slot_mapping"
dtypes = ["int32", "int64"]

[[outputs]]
name = "out_of_range"
dtypes = ["int32", "int32"]
"#;

const DEQUANT: &str = r#"name = "my_cache"
family = "dequant"
summary = "test op"
targets = ["ascend910b"]
differentiable = false

[[inputs]]
name = "q"
dtypes = ["int8", "int8"]

[[inputs]]
name = "scale"
dtypes = ["float32", "float32"]

[[outputs]]
name = "x"
dtypes = ["float16", "float32"]

[[attrs]]
name = "out_dtype"
type = "string"
default = "float16"
"#;

const PATH: &str = "kernels/my_cache.toml";

/// The error for `field` must sit on `line` and its message must contain `words`.
fn assert_error(text: &str, line: usize, field: &str, words: &str) {
    crate::support::assert_spec_error(PATH, text, Some(line), field, words);
}

#[test]
fn the_good_specs_are_accepted() {
    let s = family::parse_str(Path::new(PATH), CACHE).unwrap();
    assert_eq!(s.kv_kind(), Some(KvKind::ReshapeAndCache));
    assert_eq!(s.mutated_inputs(), vec!["key_cache", "value_cache"]);
    let s = family::parse_str(Path::new(PATH), DEQUANT).unwrap();
    assert_eq!(s.kv_kind(), Some(KvKind::DequantInt8));
}

#[test]
fn an_unknown_kind_lists_the_known_ones() {
    let text = CACHE.patched("kind = \"reshape_and_cache\"", "kind = \"paged_scatter\"");
    assert_error(
        &text,
        8,
        "paged_cache.kind",
        "unknown paged_cache kind `paged_scatter`; known kinds: reshape_and_cache, reshape_and_cache_int8",
    );
    // A permute kind is not a paged_cache kind.
    let text = CACHE.patched("kind = \"reshape_and_cache\"", "kind = \"bsnd_to_bnsd\"");
    assert_error(&text, 8, "paged_cache.kind", "unknown paged_cache kind `bsnd_to_bnsd`");
}

#[test]
fn a_family_table_belongs_to_its_family() {
    let text = CACHE.patched("[paged_cache]", "[permute]");
    assert_error(
        &text,
        7,
        "permute",
        "table [permute] belongs to family permute, but this spec is family paged_cache",
    );
    let text = DEQUANT.patched(
        "differentiable = false\n",
        "differentiable = false\n\n[paged_cache]\nkind = \"reshape_and_cache\"\n",
    );
    assert_error(&text, 7, "paged_cache", "belongs to family paged_cache, but this spec is family dequant");
    let text = CACHE.patched("[paged_cache]\nkind = \"reshape_and_cache\"\n", "");
    assert_error(&text, 2, "paged_cache", "family paged_cache needs a [paged_cache] table with `kind`");
}

#[test]
fn inputs_and_outputs_follow_the_kind() {
    let text = CACHE.patched("[[inputs]]\nname = \"slot_mapping\"\ndtypes = [\"int32\", \"int64\"]\n\n", "");
    assert_error(
        &text,
        10,
        "inputs",
        "family paged_cache (reshape_and_cache) takes 5 inputs (key, value, key_cache, value_cache, slot_mapping), found 4",
    );
    let text = DEQUANT.patched(
        "[[outputs]]\nname = \"x\"",
        "[[outputs]]\nname = \"y\"\ndtypes = [\"float16\", \"float32\"]\n\n[[outputs]]\nname = \"x\"",
    );
    assert_error(&text, 15, "outputs", "family dequant (dequant_int8) has 1 output(s) (x), found 2");
}

#[test]
fn caches_must_be_declared_mutated_and_nothing_else() {
    let text = CACHE.patched_first("mutated = true\n", "", 2);
    assert_error(
        &text,
        19,
        "inputs[2].mutated",
        "`key_cache` (key_cache) is updated in place: declare it with `mutated = true`",
    );
    let text = CACHE.patched(
        "name = \"key\"\ndtypes = [\"float16\", \"bfloat16\"]",
        "name = \"key\"\ndtypes = [\"float16\", \"bfloat16\"]\nmutated = true",
    );
    assert_error(&text, 13, "inputs[0].mutated", "`key` (key) is only read by the kernel; drop `mutated`");
}

#[test]
fn dtypes_follow_the_roles() {
    // The cache copies raw bytes: it must have the key's dtype.
    let text = CACHE.patched(
        "name = \"key_cache\"\ndtypes = [\"float16\", \"bfloat16\"]",
        "name = \"key_cache\"\ndtypes = [\"float16\", \"float32\"]",
    );
    assert_error(
        &text,
        20,
        "inputs[2].dtypes[1]",
        "`key_cache` must have `key`'s dtype bfloat16 in combination 2",
    );
    let text = CACHE.patched("dtypes = [\"int32\", \"int64\"]", "dtypes = [\"int32\", \"float32\"]");
    assert_error(
        &text,
        30,
        "inputs[4].dtypes[1]",
        "`slot_mapping` (slot_mapping) cannot be float32; it takes int32, int64",
    );
    let text = CACHE.patched("dtypes = [\"int32\", \"int32\"]", "dtypes = [\"int32\", \"int64\"]");
    assert_error(
        &text,
        34,
        "outputs[0].dtypes[1]",
        "`out_of_range` (out_of_range) cannot be int64; it takes int32",
    );
    let text = DEQUANT.patched("dtypes = [\"float16\", \"float32\"]", "dtypes = [\"float16\", \"int8\"]");
    assert_error(
        &text,
        17,
        "outputs[0].dtypes[1]",
        "`x` (x) cannot be int8; it takes float16, bfloat16, float32",
    );
}

#[test]
fn attrs_follow_the_kind() {
    let text = format!("{CACHE}\n[[attrs]]\nname = \"block_size\"\ntype = \"int\"\ndefault = 16\n");
    assert_error(&text, 37, "attrs", "family paged_cache (reshape_and_cache) takes no attrs");
    let text = DEQUANT.patched("default = \"float16\"", "default = \"bfloat16\"");
    assert_error(
        &text,
        22,
        "attrs[0].default",
        "default `bfloat16` must be one of the output's dtypes: float16, float32",
    );
    let text = DEQUANT.patched("type = \"string\"\ndefault = \"float16\"", "type = \"int\"\ndefault = 1");
    assert_error(&text, 20, "attrs", "takes exactly one attr: a string naming the output dtype");
}

#[test]
fn the_catalogue_has_the_five_kinds() {
    let specs = family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    for kind in KvKind::ALL {
        let s =
            specs.iter().find(|s| s.name == kind.name()).unwrap_or_else(|| panic!("{} missing", kind.name()));
        assert_eq!(s.kv_kind(), Some(kind));
        let fields = ascend_opgen::family::tiling_fields(s);
        assert!(!fields.is_empty() && fields.iter().all(|f| f.ctype == "uint32_t"), "{}", kind.name());
    }
}
