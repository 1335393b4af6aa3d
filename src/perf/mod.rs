//! The cycle-level performance model of `opgen report` (issue 14): the twin's per-core event
//! trace ([`trace`]) run through a per-core simulation of the scalar, vector and DMA queues
//! ([`sim`]) with a cycle table whose unknowns are ranges ([`cycles`]), and the same simulation
//! of the CANN built-in kernels' public designs for the same op and shape ([`cann`]).

pub mod cann;
pub mod cycles;
pub mod sim;
pub mod trace;

pub use sim::{Modelled, Times};
