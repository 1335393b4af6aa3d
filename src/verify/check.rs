//! The verification policy of one case: its inputs (drawn or family-made), the expected
//! outputs from the reference, the twin's run, and the judgement of every output against its
//! bar (the documented alternates, in-place tensors' untouched elements bitwise, the family's
//! diagnosis of a failure). `check_case` is the policy as a pass/fail answer; the sweep
//! (`run.rs`) keeps the comparisons for its summary.

use super::{inputs, CaseInput, Runner};
use crate::compare::{compare, Comparison, Tolerance};
use crate::family::{Case, PlanCoverage};
use crate::plan::soc;
use crate::spec::OpSpec;
use crate::tensor::{round_to_dtype, HostTensor};
use crate::DType;

/// What one case gave: the comparisons and, where something failed, why.
pub(crate) struct CaseOutcome {
    /// (output name, comparison) per output; empty when the run failed.
    pub(crate) comparisons: Vec<(String, Comparison)>,
    pub(crate) failure: Option<String>,
    /// What the case's plan exercised; `None` when the run failed before a plan.
    pub(crate) coverage: Option<PlanCoverage>,
}

/// The inputs of a case: each input in its dtype of the combination, seeded per input.
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Vec<(String, HostTensor)> {
    case.shapes
        .iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let dtype = spec.input_dtype(name, column).unwrap_or(DType::Float32);
            (
                name.clone(),
                inputs::generate(case.dist, dtype, shape, case.seed.wrapping_mul(31).wrapping_add(i as u64)),
            )
        })
        .collect()
}

/// A case that failed: op, dtype combination, case label and what failed (a gate, a twin
/// rule, the host code, the reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFailure {
    pub op: String,
    pub column: String,
    pub case: String,
    pub why: String,
}

impl std::fmt::Display for CaseFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}: {}", self.op, self.column, self.case, self.why)
    }
}

impl std::error::Error for CaseFailure {}

/// Runs one case and checks every output against its reference: `Err` says what failed.
pub fn check_case(
    spec: &OpSpec,
    column: usize,
    runner: &Runner,
    soc: &soc::Soc,
    case: &Case,
) -> Result<(), CaseFailure> {
    match run_one(spec, column, runner, soc, case).failure {
        None => Ok(()),
        Some(why) => Err(CaseFailure {
            op: spec.name.clone(),
            column: spec.column_label(column),
            case: case.label(),
            why,
        }),
    }
}

pub(crate) fn run_one(
    spec: &OpSpec,
    column: usize,
    runner: &Runner,
    soc: &soc::Soc,
    case: &Case,
) -> CaseOutcome {
    // A family may make its own inputs (paged_cache: slot mappings, pre-filled caches).
    let (inputs, attrs) = match crate::family::case_inputs(spec, column, case) {
        Some(made) => made,
        None => (case_inputs(spec, column, case), case.attrs.clone()),
    };
    let failed = |why: String| CaseOutcome { comparisons: Vec::new(), failure: Some(why), coverage: None };
    let mut expected = match super::expected_outputs(spec, &inputs, &attrs) {
        Ok(e) => e,
        Err(e) => return failed(format!("reference: {e}")),
    };
    // In-place inputs (caches) come back after the outputs and are compared like outputs.
    let inplace = spec.mutated_inputs();
    let run = match super::run_case(
        runner,
        spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &attrs, inplace: &inplace },
        false,
    ) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    let tiling = |name: &str| run.parsed.tiling.get(name).and_then(|v| v.as_f64());
    let coverage = Some(crate::family::plan_coverage(spec, &tiling));
    if let Err(e) = crate::family::plan_gates(spec, &inputs, &attrs, &tiling, &mut expected) {
        return failed(format!("reference: {e}"));
    }
    let mut comparisons = Vec::new();
    let mut problems = Vec::new();
    for exp in &expected {
        let Some((_, actual)) = run.outputs.iter().find(|(n, _)| n == &exp.name) else {
            problems.push(format!("output `{}` missing", exp.name));
            continue;
        };
        if actual.shape != exp.shape || actual.dtype != exp.dtype {
            problems.push(format!(
                "output `{}` is {} {:?}, expected {} {:?}",
                exp.name, actual.dtype, actual.shape, exp.dtype, exp.shape
            ));
            continue;
        }
        let alternates = match crate::family::alternates(spec, &inputs, &attrs, &exp.name) {
            Ok(a) => a,
            Err(e) => return failed(format!("reference: {e}")),
        };
        let tolerance = match runner.perturb {
            Some(_) => exp.tolerance.under_perturbation(exp.dtype),
            None => exp.tolerance,
        };
        let mut c = compare(actual, &closest_allowed(actual, &exp.values, &alternates), tolerance);
        if !alternates.is_empty() {
            // MERE/MARE always measure against the reference itself. The small-value check is
            // an absolute bar per element: an element equal to its documented alternate (the
            // other rounding of an intermediate within float32 error of a 16-bit boundary) is
            // held to that value, since gamma scales the intermediate's one-ulp step past the
            // bar at small |y| (add_rms_norm bf16 4096x896 seed 1057: 2.3e-5 vs 2^-16).
            let plain = compare(actual, &exp.values, Tolerance::CannOnly);
            c.mere = plain.mere;
            c.mare = plain.mare;
            c.cann = plain.cann.map(|gate| match &c.cann {
                Some(allowed) => gate.with_small_values_of(allowed, plain.mere, plain.mare),
                None => gate,
            });
        }
        // A ref output (`OpSpec::refs`) is the op's whole result written over its input: every
        // element is compared above (NaN as NaN, whatever its payload), none is "left
        // unchanged"; the untouched check is for inputs updated in part (a cache's slots).
        let partial = !spec.refs.contains(&exp.name);
        if let Some((_, before)) =
            inputs.iter().find(|(n, _)| partial && inplace.contains(n) && n == &exp.name)
        {
            if let Some(why) = untouched_changed(before, &exp.values, actual) {
                // Counted against the output; the comparison's own report cannot name it.
                c.violations += 1;
                problems.push(format!("in-place `{}`: {why}", exp.name));
            }
        }
        if !c.passed() {
            let at = c.first_violation.as_ref().or(c.worst.as_ref()).map(|e| e.flat);
            let why = at.and_then(|flat| crate::family::diagnose(spec, &inputs, &attrs, &exp.name, flat));
            let why = why.map(|w| format!("; {w}")).unwrap_or_default();
            problems.push(format!("output `{}`: {c}{why}", exp.name));
        }
        comparisons.push((exp.name.clone(), c));
    }
    CaseOutcome { comparisons, failure: (!problems.is_empty()).then(|| problems.join("; ")), coverage }
}

/// An in-place tensor's elements that the reference leaves bit-identical to the input must come
/// back bit-identical, whatever the tolerance of the elements it writes (a cache's untouched
/// slots are checked bitwise even where the written rows are held to int8 ±1). A family whose
/// written values could equal the old contents bit for bit must pre-fill its in-place inputs so
/// they cannot (paged_cache: int8 caches hold −128, scale caches negative values).
fn untouched_changed(before: &HostTensor, expected: &[f64], actual: &HostTensor) -> Option<String> {
    if before.shape != actual.shape || before.dtype != actual.dtype || expected.len() != before.numel() {
        return None; // reported by the comparison
    }
    let mut changed = 0usize;
    let mut first = None;
    for (i, g) in expected.iter().enumerate() {
        let kept = crate::tensor::f64_to_bits(before.dtype, *g) == before.bits(i);
        if kept && actual.bits(i) != before.bits(i) {
            changed += 1;
            first.get_or_insert(i);
        }
    }
    first.map(|i| {
        format!(
            "{changed} element(s) the reference leaves unchanged were written, first {:?} (flat {i}): {} became {}",
            crate::tensor::unravel_index(&before.shape, i),
            before.get_f64(i),
            actual.get_f64(i)
        )
    })
}

/// Per element, the allowed exact value (the reference, or its documented alternate) whose
/// rounding is nearest the actual value. Without alternates this is the reference itself.
fn closest_allowed(actual: &HostTensor, reference: &[f64], alternates: &[f64]) -> Vec<f64> {
    if alternates.is_empty() {
        return reference.to_vec();
    }
    reference
        .iter()
        .zip(alternates)
        .enumerate()
        .map(|(i, (r, alt))| {
            let a = actual.get_f64(i);
            let distance = |v: f64| (round_to_dtype(actual.dtype, v) - a).abs();
            if alt.is_nan() || distance(*r) <= distance(*alt) {
                *r
            } else {
                *alt
            }
        })
        .collect()
}
