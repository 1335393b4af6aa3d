//! `opgen gen` as a user runs it: output written whole, identical on a second run, and a bad
//! spec writes nothing (the previous output stays byte for byte), exit code 2.

use crate::support::TempDir;
use ascend_opgen::toolchain::command::Cmd;
use std::fs;
use std::path::{Path, PathBuf};

fn opgen(args: &[&str]) -> ascend_opgen::toolchain::command::Output {
    Cmd::new(env!("CARGO_BIN_EXE_opgen")).args(args).stdin_null().run().expect("opgen runs")
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn gen_twice_gives_identical_bytes_and_a_bad_spec_changes_nothing() {
    let specs = TempDir::new("cli-specs");
    let out_parent = TempDir::new("cli-out");
    let out = out_parent.join("project");
    let good = ascend_opgen::repo_root().join("kernels/rms_norm.toml");
    fs::copy(&good, specs.join("rms_norm.toml")).unwrap();
    // rms_norm names its backward op, which a catalogue must hold too.
    let grad = ascend_opgen::repo_root().join("kernels/rms_norm_grad.toml");
    fs::copy(&grad, specs.join("rms_norm_grad.toml")).unwrap();
    let specs_arg = specs.display().to_string();
    let out_arg = out.display().to_string();

    let first = opgen(&["gen", "--specs", &specs_arg, "--out", &out_arg]);
    assert!(first.success(), "{}", first.combined_lossy());
    let a = snapshot(&out);
    assert!(a.iter().any(|(p, _)| p == Path::new("op_kernel/opgen_rms_norm.cpp")));
    assert!(a.iter().any(|(p, _)| p == Path::new("op_host/opgen_rms_norm_tiling.h")));
    let second = opgen(&["gen", "--specs", &specs_arg, "--out", &out_arg]);
    assert!(second.success());
    assert_eq!(a, snapshot(&out), "a second run must give identical bytes");

    // A second, broken spec: nothing may be written, the old output stays.
    fs::write(specs.join("broken.toml"), "name = \"broken\"\nfamily = \"row_norm\"\nsummary = 3\n").unwrap();
    let bad = opgen(&["gen", "--specs", &specs_arg, "--out", &out_arg]);
    assert_eq!(bad.code(), Some(2), "{}", bad.combined_lossy());
    let msg = bad.stderr_lossy();
    assert!(msg.contains("broken.toml:3:"), "{msg}");
    assert!(msg.contains("summary"), "{msg}");
    assert_eq!(a, snapshot(&out), "a failed run must leave the previous output as it was");
    let leftovers: Vec<_> =
        fs::read_dir(out.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no staging directories may remain: {leftovers:?}");
}

#[test]
fn an_empty_catalogue_is_an_error() {
    let specs = TempDir::new("cli-empty");
    let out_parent = TempDir::new("cli-empty-out");
    let out = out_parent.join("project");
    let r = opgen(&["gen", "--specs", &specs.display().to_string(), "--out", &out.display().to_string()]);
    assert_eq!(r.code(), Some(2));
    assert!(r.stderr_lossy().contains("the catalogue is empty"));
    assert!(!out.exists());
}

#[test]
fn unknown_op_names_the_known_ones() {
    let dir = TempDir::new("cli-unknown");
    let r = opgen(&["gen", "--ops", "no_such_op", "--out", &dir.arg("p")]);
    assert_eq!(r.code(), Some(2));
    let msg = r.stderr_lossy();
    assert!(
        msg.contains("unknown op `no_such_op`; the catalogue has: ") && msg.contains("rms_norm"),
        "{msg}"
    );
}

#[test]
fn golden_check_refuses_a_selection_instead_of_ignoring_it() {
    use ascend_opgen::app::gen::{gen_ops, GenOptions};
    let opts = GenOptions { ops: vec!["rms_norm".into()], check: true, ..Default::default() };
    let err = gen_ops(&opts).expect_err("--check --ops must not pass silently");
    assert_eq!(err.code, 2);
    assert!(err.message.contains("takes no --ops or --specs"), "{}", err.message);
}
