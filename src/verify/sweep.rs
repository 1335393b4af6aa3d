//! The cases a sweep runs, per family: shapes, input distributions, seeds and attrs.
//! `quick` is the default test run; `full` covers the model shapes of the catalogue issue.

use super::inputs::Distribution;
use crate::spec::{AttrValue, OpSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    Quick,
    Full,
}

impl Sweep {
    pub fn parse(text: &str) -> Option<Sweep> {
        match text {
            "quick" => Some(Sweep::Quick),
            "full" => Some(Sweep::Full),
            _ => None,
        }
    }
}

/// One launch: a shape per input, an input distribution, a seed, the attrs.
#[derive(Debug, Clone)]
pub struct Case {
    pub shapes: Vec<(String, Vec<usize>)>,
    pub dist: Distribution,
    pub seed: u64,
    pub attrs: Vec<(String, AttrValue)>,
}

impl Case {
    /// `x=[4,896] gamma=[896] uniform`.
    pub fn label(&self) -> String {
        let shapes: Vec<String> = self
            .shapes
            .iter()
            .map(|(n, s)| format!("{n}=[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")))
            .collect();
        format!("{} {:?}", shapes.join(" "), self.dist)
    }
}

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
