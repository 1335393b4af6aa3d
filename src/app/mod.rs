//! The commands behind `opgen` and `cargo xtask`: both binaries parse arguments and call
//! these, so the two stay in step.

pub mod args;
pub mod build_npu;
pub mod check_cann;
pub mod gen;
pub mod host_checks;
pub mod mutants;
pub mod plan;
pub mod report;
pub mod run;
pub mod run_npu;
pub mod test_suite;
pub mod torch_cpu;
pub mod verify;
pub mod wheel;

use std::fmt;

/// A command's failure, with the process exit code it maps to.
#[derive(Debug)]
pub struct AppError {
    pub code: i32,
    pub message: String,
}

impl AppError {
    /// Bad input: a spec, an argument, a shape. Exit code 2.
    pub fn input(message: impl fmt::Display) -> Self {
        AppError { code: 2, message: message.to_string() }
    }
    /// The command ran and found a failure (stale output, failed numerics). Exit code 1.
    pub fn failed(message: impl fmt::Display) -> Self {
        AppError { code: 1, message: message.to_string() }
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}

/// Runs a command body and turns its result into an exit code, printing the error.
pub fn exit_code(result: Result<(), AppError>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{e}");
            e.code
        }
    }
}
