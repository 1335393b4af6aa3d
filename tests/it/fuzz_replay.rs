//! The fuzz targets' checks (fuzz/checks/*.rs, the same files the cargo-fuzz targets compile)
//! on every file of their seed corpus (fuzz/seeds/<target>/), on stable Rust: CI cannot run
//! libFuzzer (it needs nightly or RUSTC_BOOTSTRAP), but it builds every check and replays the
//! seeds, so a seed that starts failing, or a check that no longer compiles, fails here.

#[path = "../../fuzz/checks/expr_parser.rs"]
mod expr_parser;
#[path = "../../fuzz/checks/spec_parser.rs"]
mod spec_parser;

fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = ascend_opgen::repo_root().join("fuzz/seeds").join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    seeds.sort();
    for seed in &seeds {
        let data = std::fs::read(seed).unwrap();
        if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("{target}: seed {} fails: {}", seed.display(), msg.unwrap_or_default());
        }
    }
    seeds.len()
}

#[test]
fn expr_parser_seeds_pass_the_fuzz_checks() {
    // The exact corpus size: a seed deleted or not picked up fails here.
    assert_eq!(replay("expr_parser", expr_parser::check), 31);
}

#[test]
fn spec_parser_seeds_pass_the_fuzz_checks() {
    assert_eq!(replay("spec_parser", spec_parser::check), 9);
}

/// The raw-vs-canonical assertion can fail: a rewrite that changed the value (here: 1 + erf(u)
/// read as erfc(u) instead of erfc(-u)) is caught at the fixed points.
#[test]
fn a_wrong_rewrite_is_caught_by_the_raw_vs_canonical_check() {
    use ascend_opgen::family::elementwise::expr::{self, Func, Node, Scope};
    let inputs = vec!["x".to_string()];
    let node =
        expr::resolve(&expr::parse("1 + erf(x)").unwrap(), Scope { inputs: &inputs, attrs: &[] }).unwrap();
    let wrong = Node::Call(Func::Erfc, Box::new(Node::Input(0)));
    let point = [-3.5];
    let raw = ascend_opgen::family::elementwise::eval::bounded(&node, &point, &[]);
    let bad = ascend_opgen::family::elementwise::eval::bounded(&wrong, &point, &[]);
    assert!(std::panic::catch_unwind(|| expr_parser::agree("1 + erf(x)", &point, raw, bad)).is_err());
    let good = ascend_opgen::family::elementwise::eval::bounded(&expr::canonical(node.clone()), &point, &[]);
    expr_parser::agree("1 + erf(x)", &point, raw, good);
}
