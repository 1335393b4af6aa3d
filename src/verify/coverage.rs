//! The coverage rule of the quick sweep: for every op and dtype combination it reaches every
//! tiling mode the TilingFunc can choose, and in each mode a case where some core runs three or
//! more UB passes (every double-buffered queue buffer reused at least twice: the races between a
//! pass and the pass two before it show only then) and a case whose cores get uneven shares (a
//! remainder core). What a case exercises is read from the host's plan (the TilingFunc's fields)
//! by the op's family (`FamilyOps::plan_coverage`); the rule itself is generic.

use crate::family::PlanCoverage;
use crate::spec::OpSpec;
use std::collections::BTreeMap;

/// UB passes on one core that reuse each buffer of a depth-2 queue twice.
pub const MIN_PASSES: u64 = 3;

/// What the cases of one mode reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModeSeen {
    pub cases: usize,
    /// The most UB passes one core ran in any case of the mode; `None`: the plan cannot tell.
    pub max_passes: Option<u64>,
    /// A case of the mode gave the cores uneven shares; `None`: the family splits no shares.
    pub uneven: Option<bool>,
}

/// The modes one op × dtype combination's cases reached, against the modes its TilingFunc can
/// choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnCoverage {
    pub op: String,
    pub label: String,
    /// Every mode the family says the TilingFunc can choose here.
    pub modes: Vec<&'static str>,
    pub seen: BTreeMap<&'static str, ModeSeen>,
}

impl ColumnCoverage {
    pub fn new(spec: &OpSpec, column: usize) -> ColumnCoverage {
        ColumnCoverage {
            op: spec.name.clone(),
            label: spec.column_label(column),
            modes: crate::family::plan_modes(spec, column),
            seen: BTreeMap::new(),
        }
    }

    /// One case's plan.
    pub fn add(&mut self, point: PlanCoverage) {
        let seen = self.seen.entry(point.mode).or_default();
        seen.cases += 1;
        seen.max_passes = seen.max_passes.max(point.passes);
        seen.uneven = match (seen.uneven, point.uneven) {
            (None, u) | (u, None) => u,
            (Some(a), Some(b)) => Some(a || b),
        };
    }

    /// What the rule misses, one line each naming the op, dtype and mode; empty: covered.
    pub fn gaps(&self) -> Vec<String> {
        let mut gaps = Vec::new();
        let at = format!("{} {}", self.op, self.label);
        for mode in &self.modes {
            match self.seen.get(mode) {
                None => gaps.push(format!("{at}: no case reaches mode `{mode}`")),
                Some(s) => {
                    if let Some(most) = s.max_passes.filter(|p| *p < MIN_PASSES) {
                        gaps.push(format!(
                            "{at}: mode `{mode}`: at most {most} UB pass(es) on a core, no case with {MIN_PASSES} or more"
                        ));
                    }
                    if s.uneven == Some(false) {
                        gaps.push(format!(
                            "{at}: mode `{mode}`: no case with a remainder core (uneven split)"
                        ));
                    }
                }
            }
        }
        for mode in self.seen.keys() {
            if !self.modes.contains(mode) {
                gaps.push(format!("{at}: a case reaches mode `{mode}`, which the family does not list"));
            }
        }
        gaps
    }

    /// `rms_norm float16: mode 1 (several rows) 5 cases, ≤ 4 passes/core, uneven; ...`
    pub fn line(&self) -> String {
        let modes: Vec<String> = self
            .seen
            .iter()
            .map(|(mode, s)| {
                format!(
                    "{mode}: {} case(s), max {} pass(es)/core{}",
                    s.cases,
                    s.max_passes.map_or("(data-dependent)".to_string(), |p| p.to_string()),
                    if s.uneven == Some(true) { ", uneven split" } else { "" }
                )
            })
            .collect();
        format!("{} {}: {}", self.op, self.label, modes.join("; "))
    }
}
