//! Everything that touches the world outside the crate: external commands (one runner for
//! all of them, [`command::Cmd`]), CANN toolkit discovery ([`cann`]), the syntax check of a
//! generated project against a real toolkit ([`check_cann`]), `opgen doctor` ([`doctor`]),
//! scratch directories removed on drop ([`scratch`]), the per-user cache all clones share
//! ([`user_cache`]) and the worker pool that runs jobs in
//! parallel ([`pool`]).

pub mod cann;
pub mod check_cann;
pub mod command;
pub mod doctor;
pub mod pool;
pub mod scratch;
pub mod user_cache;

pub use cann::{CannNotFound, CannToolkit, Discovery, Need};
pub use check_cann::{check_project, CheckOptions, CheckReport, KernelDefines};
pub use command::{Cmd, CommandError, Output};
pub use doctor::{doctor_report, DoctorReport};
