//! A verification case and what it must produce: the vocabulary between a family (which makes
//! cases and expectations) and `crate::verify` (which runs them on the twin and compares).
//! `quick` is the default test run; `full` covers the model shapes of the catalogue issue.

use super::inputs::Distribution;
use crate::compare::Tolerance;
use crate::spec::AttrValue;
use crate::DType;

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

/// One output's expected values (unrounded f64) and the bar it must clear.
#[derive(Debug, Clone)]
pub struct Expected {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
    pub tolerance: Tolerance,
}
