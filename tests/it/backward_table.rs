//! The `[backward]` table (a backward op with an input mapping): the repository's row norms
//! declare theirs, and every rule names file:line:column and the field — unknown op, unknown
//! names, count and dtype mismatches, attrs that cannot be set.

use crate::support::Patched;
use crate::support::TempDir;
use ascend_opgen::spec::{self, Backward, GradArg};
use std::fs;
use std::path::{Path, PathBuf};

fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")
}

/// rms_norm.toml with its `[backward]` table replaced by `table`, beside the real rms_norm_grad.
fn catalogue(tag: &str, table: &str) -> (TempDir, String, Result<Vec<spec::OpSpec>, spec::SpecErrors>) {
    let dir = TempDir::new(&format!("backward-table-{tag}"));
    let fwd = fs::read_to_string(kernels().join("rms_norm.toml")).unwrap();
    let at = fwd.rfind("\n[backward]").map(|i| i + 1).expect("rms_norm.toml has a [backward] table");
    let text = format!("{}{table}", &fwd[..at]);
    fs::write(dir.join("rms_norm.toml"), &text).unwrap();
    fs::copy(kernels().join("rms_norm_grad.toml"), dir.join("rms_norm_grad.toml")).unwrap();
    let specs = ascend_opgen::family::load_catalogue(&dir);
    (dir, text, specs)
}

/// The error of `table` (one, or one per dtype combination): on the line of `at` (a substring
/// of the spec), for `field`, with `words` in its first message.
fn assert_error(tag: &str, table: &str, at: &str, field: &str, words: &str) {
    let (_dir, text, specs) = catalogue(tag, table);
    let errors = specs.expect_err("the table must be rejected");
    let shown = errors.to_string();
    let e = &errors.0[0];
    assert!(errors.0.iter().all(|o| (o.line, &o.field) == (e.line, &e.field)), "{shown}");
    let offset = text.rfind(at).unwrap_or_else(|| panic!("`{at}` not in the spec"));
    let line = text[..offset].matches('\n').count() + 1;
    assert_eq!((e.line, e.field.as_str()), (line, field), "{shown}");
    assert!(e.column > 0 && e.file.ends_with("rms_norm.toml"), "{shown}");
    assert!(e.message.contains(words), "`{words}` not in:\n{shown}");
}

const GOOD: &str = "[backward]\nop = \"rms_norm_grad\"\ninputs = [\"grad.y\", \"x\", \"rstd\", \"gamma\"]\ngrads = { x = \"dx\", gamma = \"dgamma\" }\n";

#[test]
fn the_row_norms_declare_their_backward_op_and_mapping() {
    let repo = ascend_opgen::family::load_catalogue(&kernels()).unwrap();
    let table = |op: &str| match &repo.iter().find(|s| s.name == op).unwrap().backward {
        Backward::Table(t) => t.clone(),
        other => panic!("{op}: {other:?}"),
    };
    let rms = table("rms_norm");
    assert_eq!(rms.op, "rms_norm_grad");
    let args: Vec<GradArg> = rms.inputs.iter().map(|(a, _)| a.clone()).collect();
    assert_eq!(
        args,
        [
            GradArg::Grad("y".into()),
            GradArg::Saved("x".into()),
            GradArg::Saved("rstd".into()),
            GradArg::Saved("gamma".into())
        ]
    );
    let grads: Vec<(&str, &str)> = rms.grads.iter().map(|(i, o, _)| (i.as_str(), o.as_str())).collect();
    assert_eq!(grads, [("x", "dx"), ("gamma", "dgamma")]);
    let add = table("add_rms_norm");
    assert_eq!(add.op, "add_rms_norm_grad");
    assert_eq!(add.inputs.last().unwrap().0, GradArg::Grad("x_sum".into()));
    let grads: Vec<(&str, &str)> = add.grads.iter().map(|(i, o, _)| (i.as_str(), o.as_str())).collect();
    assert_eq!(grads, [("x1", "dx"), ("x2", "dx"), ("gamma", "dgamma")]);
    // The plain form stays for the permutes.
    let p = repo.iter().find(|s| s.name == "bsnd_to_bnsd").unwrap();
    assert!(matches!(&p.backward, Backward::Op { name, .. } if name == "bnsd_to_bsnd"));
    let (_dir, _, specs) = catalogue("good", GOOD);
    assert!(specs.is_ok(), "{:?}", specs.err().map(|e| e.to_string()));
}

#[test]
fn an_unknown_backward_op_is_named() {
    let t = GOOD.patched("op = \"rms_norm_grad\"", "op = \"rms_norm_bwd\"");
    assert_error(
        "op",
        &t,
        "op = \"rms_norm_bwd\"",
        "backward.op",
        "backward op `rms_norm_bwd` of `rms_norm` is not in the catalogue",
    );
    let t = GOOD.patched("op = \"rms_norm_grad\"", "op = \"rms_norm\"");
    assert_error("self", &t, "op = \"rms_norm\"", "backward.op", "cannot be its own backward op");
}

#[test]
fn unknown_names_are_named() {
    let t = GOOD.patched("\"grad.y\"", "\"grad.z\"");
    assert_error(
        "grad",
        &t,
        "\"grad.z\"",
        "backward.inputs[0]",
        "`z` is not an output of `rms_norm`; its outputs: y, rstd",
    );
    let t = GOOD.patched("\"rstd\", \"gamma\"]", "\"rstd\", \"w\"]");
    assert_error(
        "name",
        &t,
        "\"w\"]",
        "backward.inputs[3]",
        "`w` is neither `grad.<output>` nor an input or output",
    );
    let t = GOOD.patched("x = \"dx\"", "z = \"dx\"");
    assert_error(
        "gradkey",
        &t,
        "z = \"dx\"",
        "backward.grads.z",
        "`z` is not an input of `rms_norm`; its inputs: x, gamma",
    );
    let t = GOOD.patched("x = \"dx\"", "x = \"dz\"");
    assert_error(
        "gradval",
        &t,
        "x = \"dz\"",
        "backward.grads.x",
        "`dz` is not an output of backward op `rms_norm_grad`; its outputs: dx, dgamma",
    );
    let t = format!("{GOOD}request = {{ flag = [\"x\"] }}\n");
    assert_error(
        "request",
        &t,
        "flag",
        "backward.request.flag",
        "backward op `rms_norm_grad` has no attr `flag`",
    );
    let t = format!("{GOOD}request = {{ flag = [\"epsilon\"] }}\n");
    assert_error(
        "request2",
        &t,
        "\"epsilon\"] }",
        "backward.request.flag",
        "`epsilon` gets no gradient in `backward.grads`",
    );
    let t = format!("{GOOD}extra = 1\n");
    assert_error("unknown", &t, "extra", "backward.extra", "unknown field `extra`");
}

#[test]
fn counts_and_dtypes_must_fit_the_backward_op() {
    let t = GOOD.patched(", \"gamma\"]", "]");
    assert_error(
        "count",
        &t,
        "inputs = [",
        "backward.inputs",
        "lists 3 inputs, but backward op `rms_norm_grad` takes 4 (dy, x, rstd, gamma)",
    );
    // rstd (float32) where the backward op takes x (float16 in combination 1).
    let t = GOOD.patched("\"x\", \"rstd\"", "\"rstd\", \"x\"");
    assert_error("dtype", &t, "inputs = [", "backward.inputs", "has no dtype combination taking (float16, float32, float16, float16), what combination 1 of `rms_norm`");
    let t = GOOD.patched("grads = { x = \"dx\", gamma = \"dgamma\" }", "grads = {}");
    assert_error("empty", &t, "grads = {}", "backward.grads", "at least one input must get a gradient");
}

#[test]
fn a_backward_table_contradicts_differentiable_false() {
    let (dir, _, _) = catalogue("diff", GOOD);
    let text = fs::read_to_string(dir.join("rms_norm.toml"))
        .unwrap()
        .patched("targets =", "differentiable = false\ntargets =");
    let e =
        ascend_opgen::family::parse_str(Path::new("kernels/rms_norm.toml"), &text).unwrap_err().to_string();
    assert!(e.contains("field `backward`") && e.contains("contradicts `differentiable = false`"), "{e}");
}
