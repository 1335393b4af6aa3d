//! Verification on the CPU twin: build the runner of each op and dtype combination, run a
//! shape/dtype/distribution sweep, compare every output with the reference written from the
//! math, and summarise.

pub mod check;
pub mod coverage;
pub mod protocol;
mod run;
mod summary;
pub mod sweep;
pub(crate) mod twin_build;
mod twin_run;

pub use crate::compare;
pub use crate::family::expected as expected_outputs;
pub use crate::family::inputs;
pub use crate::family::{Case, Expected, Sweep};
pub use check::{case_inputs, check_case, CaseFailure};
pub use run::{project_from_dir, run_verify, VerifyError, VerifyOptions};
pub use summary::{Row, VerifyReport};
pub use sweep::cases;
pub use twin_build::{build_runner, cache_dir, twin_dir, BuildOptions, NumericProfile, Runner, TwinFlags};
pub use twin_run::{run_case, run_case_traced, CaseInput, CaseRun};

use std::fmt;

/// How a twin run failed.
#[derive(Debug, Clone, PartialEq)]
pub enum TwinError {
    /// Compiling or linking the twin runner failed (the compiler's output is included).
    Build(String),
    /// The generated InferShape/InferDataType/TilingFunc returned GRAPH_FAILED (its reason).
    HostRejected(String),
    /// The kernel broke a rule of the twin (which API, core, tensor and rule).
    RuleBroken(String),
    /// AddressSanitizer or UndefinedBehaviorSanitizer reported an error.
    Sanitizer(String),
    /// The runner died another way.
    Crashed(String),
    /// Reading or writing case files.
    Io(String),
    /// The runner's report does not match the protocol (src/verify/protocol.rs): a field
    /// renamed, added or dropped on one side.
    Protocol(String),
}

impl fmt::Display for TwinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TwinError::Build(m) => write!(f, "twin build failed: {m}"),
            TwinError::HostRejected(m) => write!(f, "the host code rejected the case: {m}"),
            TwinError::RuleBroken(m) => write!(f, "twin rule broken: {m}"),
            TwinError::Sanitizer(m) => write!(f, "sanitizer report: {m}"),
            TwinError::Crashed(m) => write!(f, "twin runner crashed: {m}"),
            TwinError::Io(m) => write!(f, "twin I/O: {m}"),
            TwinError::Protocol(m) => write!(f, "twin protocol: {m}"),
        }
    }
}

impl std::error::Error for TwinError {}
