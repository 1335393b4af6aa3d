//! The ACL runtime from Rust (compiled only with `cfg(opgen_acl)`, i.e. when build.rs found
//! ACL headers and generated [`sys`]): a safe layer over the calls `opgen run --device npu`
//! needs. Every `aclError` becomes a [`Result`] whose error names the call, the code and ACL's
//! own last message; every handle is released on drop, in the order ACL requires.
//!
//! The libraries are loaded at run time ([`libloading`]), so a binary built with the bindings
//! still starts on a machine without CANN and reports which library it could not load.

pub mod aclnn;
mod error;
mod runtime;
#[allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code, clippy::all)]
mod sys {
    include!(concat!(env!("OUT_DIR"), "/acl_bindings.rs"));
}

pub use error::{AclError, Result};
pub use runtime::{Acl, DeviceBuffer, Stream};
