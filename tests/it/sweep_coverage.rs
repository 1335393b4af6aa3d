//! The coverage rule (src/verify/coverage.rs) on made-up plans: it names a mode no case reaches,
//! a mode whose cores never run three UB passes, a mode without a remainder core, and a mode the
//! family does not list. The catalogue's quick sweeps are held to it by the sanitized sweep
//! tests (verify_catalogue.rs), which read every case's plan.

use ascend_opgen::family::PlanCoverage;
use ascend_opgen::verify::coverage::{ColumnCoverage, MIN_PASSES};

fn rms_norm_f16() -> ColumnCoverage {
    let specs = ascend_opgen::family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
    let spec = specs.iter().find(|s| s.name == "rms_norm").expect("rms_norm in the catalogue");
    ColumnCoverage::new(spec, 0)
}

fn point(mode: &'static str, passes: u64, uneven: bool) -> PlanCoverage {
    PlanCoverage { mode, passes: Some(passes), uneven: Some(uneven) }
}

/// Every rms_norm mode with three passes and, in another case, a remainder core.
fn covered() -> ColumnCoverage {
    let mut c = rms_norm_f16();
    for mode in c.modes.clone() {
        c.add(point(mode, MIN_PASSES, false));
        c.add(point(mode, 1, true));
    }
    c
}

#[test]
fn rms_norm_lists_the_four_modes_of_its_tiling_func() {
    let c = rms_norm_f16();
    assert_eq!(c.modes, ["0 whole row", "1 several rows", "2 split-D", "3 batched"]);
}

#[test]
fn a_sweep_reaching_every_mode_with_three_passes_and_a_remainder_core_has_no_gap() {
    let c = covered();
    assert_eq!(c.gaps(), Vec::<String>::new());
    assert!(c.line().contains("2 split-D: 2 case(s), max 3 pass(es)/core, uneven split"), "{}", c.line());
}

#[test]
fn a_sweep_missing_a_mode_is_a_gap_naming_op_dtype_and_mode() {
    let mut c = rms_norm_f16();
    for mode in ["0 whole row", "1 several rows", "3 batched"] {
        c.add(point(mode, 4, true));
    }
    assert_eq!(c.gaps(), ["rms_norm float16: no case reaches mode `2 split-D`"]);
}

#[test]
fn a_mode_whose_cores_run_two_passes_at_most_is_a_gap() {
    let mut c = rms_norm_f16();
    for mode in c.modes.clone() {
        c.add(point(mode, if mode == "2 split-D" { 2 } else { 3 }, true));
    }
    assert_eq!(
        c.gaps(),
        ["rms_norm float16: mode `2 split-D`: at most 2 UB pass(es) on a core, no case with 3 or more"]
    );
}

#[test]
fn a_mode_without_a_remainder_core_is_a_gap() {
    let mut c = rms_norm_f16();
    for mode in c.modes.clone() {
        c.add(point(mode, 3, mode != "1 several rows"));
    }
    assert_eq!(
        c.gaps(),
        ["rms_norm float16: mode `1 several rows`: no case with a remainder core (uneven split)"]
    );
}

#[test]
fn a_mode_the_family_does_not_list_is_a_gap() {
    let mut c = covered();
    c.add(point("5 unknown", 3, true));
    assert_eq!(
        c.gaps(),
        ["rms_norm float16: a case reaches mode `5 unknown`, which the family does not list"]
    );
}

#[test]
fn a_mode_whose_passes_the_plan_cannot_tell_needs_only_to_be_reached() {
    let mut c = covered();
    c.modes.push("data-dependent");
    c.add(PlanCoverage { mode: "data-dependent", passes: None, uneven: None });
    assert_eq!(c.gaps(), Vec::<String>::new());
    assert!(
        c.line().contains("data-dependent: 1 case(s), max (data-dependent) pass(es)/core"),
        "{}",
        c.line()
    );
}
