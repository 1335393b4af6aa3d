//! The cycle-level performance model of `opgen report` (issue 14): the twin's per-core event
//! trace ([`trace`]) run through a per-core simulation of the scalar, vector and DMA queues
//! ([`sim`]) with a cycle table whose unknowns are ranges ([`cycles`]), and the same simulation
//! of the CANN built-in kernels' public designs for the same op and shape ([`cann`]).

pub mod cann;
/// The cycle table is a hardware fact like the SoC constants, so it lives in the plan layer (the
/// elementwise family prices its register plans with it); `perf::cycles` is the same module.
pub use crate::plan::cycles;
pub mod sim;
pub mod trace;

pub use sim::{Modelled, Times};

use crate::plan::soc::Soc;
use serde::Serialize;
use std::collections::BTreeMap;

/// Why the cycle model could not time a launch.
#[derive(Debug, Clone, PartialEq)]
pub enum PerfError {
    Trace(trace::TraceError),
    Sim(sim::SimError),
}

impl std::fmt::Display for PerfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PerfError::Trace(e) => e.fmt(f),
            PerfError::Sim(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PerfError {}

/// The generated kernel's launch from the twin's trace; `sizes` are the bytes of each input
/// tensor (reads beyond them are L2 hits).
pub fn fused(soc: &Soc, trace_text: &str, sizes: &BTreeMap<String, u64>) -> Result<Modelled, PerfError> {
    let doc = trace::parse(trace_text).map_err(PerfError::Trace)?;
    let hits = trace::l2_hit_fractions(&doc, sizes);
    let cores = trace::lower(&doc, &hits).map_err(PerfError::Trace)?;
    sim::model(&cores, soc).map_err(PerfError::Sim)
}

/// The CANN design's launches one after another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CannModelled {
    pub source: String,
    pub mode: String,
    pub launches: usize,
    #[serde(flatten)]
    pub modelled: Modelled,
}

pub fn cann_design(soc: &Soc, design: &cann::Design) -> Result<CannModelled, PerfError> {
    cann_design_as(soc, design, sim::Residency::Step)
}

/// [`cann_design`] with the launches' outputs where `residency` puts them (the calibration's
/// benchmark points: [`sim::Residency::RepeatedAlone`]).
pub fn cann_design_as(
    soc: &Soc,
    design: &cann::Design,
    residency: sim::Residency,
) -> Result<CannModelled, PerfError> {
    let mut total: Option<Modelled> = None;
    for launch in &design.launches {
        let m = sim::model_as(launch, soc, residency).map_err(PerfError::Sim)?;
        total = Some(match total {
            None => m,
            Some(t) => t.then(m),
        });
    }
    Ok(CannModelled {
        source: design.source.clone(),
        mode: design.mode.clone(),
        launches: design.launches.len(),
        modelled: total.unwrap_or_default(),
    })
}
