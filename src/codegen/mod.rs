//! Rendering specs into a CANN custom-op project (msOpGen "framework launch" layout):
//! `op_kernel/<stem>.cpp`, `op_host/<stem>.cpp`, `op_host/<stem>_tiling.h`, `<stem>.json`,
//! plus the project files shared by every op. Output is byte-deterministic.

mod context;
mod env;
mod project;
pub mod torch;
mod write;

pub use context::{banner_source, OpContext};
pub use project::{
    msopgen_json, render_project, render_project_with, render_twin_launch, template_sources, GeneratedFile,
    Project, HOST_COMMON_HEADER, KERNEL_COMMON_HEADER,
};
pub use write::{check_against, write_atomically, CheckOutcome, WriteError};

use std::fmt;

/// Where the default project goes, relative to the repository root.
pub const DEFAULT_OUT_DIR: &str = "target/opgen";
/// Where the golden copy of the catalogue's project lives, relative to the repository root.
pub const GOLDEN_DIR: &str = "tests/golden/project";
/// The project names of `specs` (a catalogue's ops all carry the same, from its
/// `project.toml`): the one place every generated file takes the torch library, package,
/// vendor and op-type prefix from. The defaults for no specs.
pub fn project_names(specs: &[&crate::spec::OpSpec]) -> Result<crate::spec::ProjectNames, RenderError> {
    let Some(first) = specs.first() else { return Ok(crate::spec::ProjectNames::default()) };
    if let Some(other) = specs.iter().find(|s| s.project != first.project) {
        return Err(RenderError {
            op: other.name.clone(),
            template: "(project)".into(),
            message: format!(
                "the ops of one project must share its names; `{}` has vendor `{}`, package `{}`, `{}` has vendor `{}`, package `{}`",
                first.name, first.project.vendor, first.project.package, other.name, other.project.vendor, other.project.package
            ),
        });
    }
    Ok(first.project.clone())
}

#[derive(Debug)]
pub struct RenderError {
    pub op: String,
    pub template: String,
    pub message: String,
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op `{}`: template `{}`: {}", self.op, self.template, self.message)
    }
}

impl std::error::Error for RenderError {}
