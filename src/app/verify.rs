//! `verify`: the command. The sweep and its pass/fail policy are the library's
//! (`crate::verify::run_verify`, `crate::verify::check`); this prints the report and turns a
//! failure into the exit code.

use super::AppError;
use crate::verify::{run_verify, VerifyError, VerifyOptions};

/// Runs the sweep, prints the table and the coverage, and fails on any failed case.
pub fn verify(opts: &VerifyOptions) -> Result<(), AppError> {
    let report = run_verify(opts).map_err(|e| match e {
        VerifyError::Input(m) => AppError::input(m),
        VerifyError::Build(m) | VerifyError::Failed(m) => AppError::failed(m),
    })?;
    print!("{}", report.table());
    print!("{}", report.coverage_table());
    for gap in report.coverage_gaps() {
        println!("coverage gap: {gap}");
    }
    println!("{} cases in {:.1} s", report.cases_run, report.seconds);
    if report.failures.is_empty() {
        return Ok(());
    }
    let mut message = format!("verify: {} case(s) failed:", report.failures.len());
    for f in report.failures.iter().take(20) {
        message.push_str(&format!("\n  {f}"));
    }
    if report.failures.len() > 20 {
        message.push_str(&format!("\n  ... and {} more", report.failures.len() - 20));
    }
    Err(AppError::failed(message))
}
