//! The cases a sweep runs (each family's, `crate::family::Case`), and the input shapes of a
//! call given the first input's.

use crate::family::{Case, Sweep};
use crate::spec::OpSpec;

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    crate::family::cases(spec, sweep)
}

/// The shapes of every input given the first input's shape, by the family's shape rule
/// (row_norm: the other residual input like x, gamma = x's last dim). `explicit` overrides.
pub fn shapes_from_first(
    spec: &OpSpec,
    first: &[usize],
    explicit: &[(String, Vec<usize>)],
) -> Vec<(String, Vec<usize>)> {
    let derived = |i: usize| crate::family::derived_shape(spec, i, first);
    spec.inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let shape = explicit
                .iter()
                .find(|(n, _)| n == &t.name)
                .map(|(_, s)| s.clone())
                .unwrap_or_else(|| if i == 0 { first.to_vec() } else { derived(i) });
            (t.name.clone(), shape)
        })
        .collect()
}
