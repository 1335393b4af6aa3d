//! Everything that touches the world outside the crate: external commands (one runner for
//! all of them, [`command::Cmd`]), CANN toolkit discovery ([`cann`]), the syntax check of a
//! generated project against a real toolkit ([`check_cann`]), `opgen doctor` ([`doctor`]) and
//! scratch directories removed on drop ([`scratch`]).

pub mod cann;
pub mod check_cann;
pub mod command;
pub mod doctor;
pub mod scratch;

pub use cann::{CannNotFound, CannToolkit, Discovery, Need};
pub use check_cann::{check_project, CheckOptions, CheckReport, KernelDefines};
pub use command::{Cmd, CommandError, Output};
pub use doctor::{doctor_report, DoctorReport};
