//! The cases a sweep runs, per family: shapes, input distributions, seeds and attrs.
//! `quick` is the default test run; `full` covers the model shapes of the catalogue issue.

use super::inputs::Distribution;
use crate::spec::{AttrValue, Family, OpSpec};

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

/// Attrs at their spec defaults.
fn default_attrs(spec: &OpSpec) -> Vec<(String, AttrValue)> {
    spec.attrs.iter().filter_map(|a| a.default.clone().map(|d| (a.name.clone(), d))).collect()
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    match spec.family {
        Family::RowNorm => row_norm_cases(spec, sweep),
    }
}

/// (x shape, gamma rank) pairs: rows × hidden, including unaligned, one-element, split-D
/// (16384, 32768, 65536 in 16-bit) and multi-dim gamma shapes.
fn row_norm_shapes(sweep: Sweep) -> Vec<(Vec<usize>, usize)> {
    let mut shapes: Vec<(Vec<usize>, usize)> = vec![
        (vec![1, 1], 1),
        (vec![3, 7], 1),
        (vec![4, 896], 1),
        (vec![17, 4097], 1),
        (vec![8, 5120], 1),
        (vec![2, 16384], 1),
        (vec![1, 32768], 1),
        (vec![1, 65536], 1),
        (vec![64, 128], 1),
        (vec![1000, 64], 1),
        (vec![2, 3, 4, 8], 2),
    ];
    if sweep == Sweep::Full {
        for hidden in [1, 7, 896, 1536, 2048, 3584, 4096, 4097, 5120, 8192, 16384] {
            for tokens in [1, 3, 17, 128] {
                shapes.push((vec![tokens, hidden], 1));
            }
        }
        for hidden in [896, 3584, 4096] {
            shapes.push((vec![4096, hidden], 1));
        }
        shapes.push((vec![2, 7, 3, 5, 2, 9], 3));
    }
    shapes
}

fn row_norm_cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    let fused = spec.row_norm().is_some_and(|p| p.fused_residual_add);
    let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
    let attrs = default_attrs(spec);
    let make = |x: &[usize], gamma_rank: usize, dist: Distribution, seed: u64| {
        let gamma = x[x.len() - gamma_rank..].to_vec();
        let mut shapes = vec![(names[0].to_string(), x.to_vec())];
        if fused {
            shapes.push((names[1].to_string(), x.to_vec()));
        }
        shapes.push((names[names.len() - 1].to_string(), gamma));
        Case { shapes, dist, seed, attrs: attrs.clone() }
    };
    let mut out = Vec::new();
    for (i, (x, g)) in row_norm_shapes(sweep).into_iter().enumerate() {
        out.push(make(&x, g, Distribution::Uniform5, 1000 + i as u64));
    }
    let others: &[Distribution] = match sweep {
        Sweep::Quick => &[Distribution::NormalLargeMean, Distribution::Tiny, Distribution::Zeros],
        Sweep::Full => &[
            Distribution::NormalLargeMean,
            Distribution::Tiny,
            Distribution::Outlier,
            Distribution::Zeros,
            Distribution::NanInf,
        ],
    };
    for (i, dist) in others.iter().enumerate() {
        out.push(make(&[4, 896], 1, *dist, 2000 + i as u64));
        if sweep == Sweep::Full {
            out.push(make(&[3, 16384], 1, *dist, 3000 + i as u64));
            out.push(make(&[33, 4097], 1, *dist, 4000 + i as u64));
        }
    }
    out
}

/// The shapes of every input given the first input's shape, by the family's shape rule
/// (row_norm: the other residual input like x, gamma = x's last dim). `explicit` overrides.
pub fn shapes_from_first(
    spec: &OpSpec,
    first: &[usize],
    explicit: &[(String, Vec<usize>)],
) -> Vec<(String, Vec<usize>)> {
    let derived = |i: usize| -> Vec<usize> {
        match spec.family {
            Family::RowNorm => {
                if i + 1 == spec.inputs.len() {
                    first.last().map(|d| vec![*d]).unwrap_or_default()
                } else {
                    first.to_vec()
                }
            }
        }
    };
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
