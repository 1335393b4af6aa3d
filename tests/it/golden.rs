//! The generated project: golden copy freshness, byte determinism, banners, and that a
//! template edit is caught by the staleness check.

use ascend_opgen::codegen::{self, render_project, render_project_with, GOLDEN_DIR};
use ascend_opgen::family;
use ascend_opgen::spec::OpSpec;

fn catalogue() -> Vec<OpSpec> {
    family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).expect("the catalogue loads")
}

#[test]
fn golden_copy_is_fresh() {
    let specs = catalogue();
    let refs: Vec<&OpSpec> = specs.iter().collect();
    let project = render_project(&refs).unwrap();
    let outcome = codegen::check_against(&ascend_opgen::repo_root().join(GOLDEN_DIR), &project);
    assert!(
        outcome.is_fresh(),
        "the golden copy in {GOLDEN_DIR} is stale (run `cargo xtask gen-ops` and commit): {outcome:?}"
    );
}

#[test]
fn rendering_is_byte_deterministic() {
    let specs = catalogue();
    let refs: Vec<&OpSpec> = specs.iter().collect();
    let a = render_project(&refs).unwrap();
    let b = render_project(&refs).unwrap();
    assert_eq!(a, b);
}

#[test]
fn every_generated_file_has_a_banner_naming_its_spec_and_the_command() {
    let specs = catalogue();
    let refs: Vec<&OpSpec> = specs.iter().collect();
    let project = render_project(&refs).unwrap();
    for file in &project.files {
        // msOpGen's op JSON cannot hold a comment; CMakePresets.json carries it in `vendor`.
        if file.path.ends_with(".json") && file.path != "CMakePresets.json" {
            continue;
        }
        let head: String = file.contents.lines().take(3).collect::<Vec<_>>().join("\n");
        assert!(
            head.contains("cargo xtask gen-ops") || file.contents.contains("cargo xtask gen-ops"),
            "{}",
            file.path
        );
        assert!(file.contents.contains("kernels/"), "{} does not name its spec", file.path);
    }
}

#[test]
fn editing_a_template_makes_the_check_fail() {
    let specs = catalogue();
    let refs: Vec<&OpSpec> = specs.iter().collect();
    let templates =
        crate::support::patched_templates("kernel/row_norm.cpp.j2", "REDUCE_SLOT = 8;", "REDUCE_SLOT = 8; ");
    let edited = render_project_with(&refs, &templates).unwrap();
    let outcome = codegen::check_against(&ascend_opgen::repo_root().join(GOLDEN_DIR), &edited);
    assert!(!outcome.is_fresh());
    assert!(outcome.stale.iter().any(|p| p.starts_with("op_kernel/")), "{outcome:?}");
}
