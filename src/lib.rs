//! ascend-opgen: declarative op specs → AscendC kernels, op_host code, a CANN custom-op project
//! and torch glue, with the generated kernels checked on a CPU twin of the AscendC API.
//!
//! The pipeline: [`spec`] (parse + validate) → [`plan`] (SoC table, family constants) →
//! [`codegen`] (render templates, write the project atomically) → [`verify`] (build the twin
//! runner, run sweeps, compare with [`reference`]) or [`toolchain`] (CANN, external commands).

#[cfg(opgen_acl)]
pub mod acl;
pub mod app;
pub mod codegen;
pub mod compare;
pub mod dtype;
pub mod family;
pub mod npy;
pub mod perf;
pub mod plan;
pub mod reference;
pub mod report;
pub mod spec;
pub mod tensor;
pub mod toolchain;
pub mod verify;

pub use dtype::DType;

/// The repository root (where `kernels/`, `templates/` live), known at compile time.
pub fn repo_root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}
