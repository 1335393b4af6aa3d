//! Planning data shared by codegen, the twin runner and reports: the SoC table and the tiling-field type
//! each family's layout is made of.

pub mod cycles;
pub mod soc;

use serde::Serialize;

/// One field of a generated tiling-data struct. Every field is 4 bytes so the host class
/// (BEGIN_TILING_DATA_DEF) and the kernel's mirror struct have the same layout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TilingField {
    pub name: &'static str,
    pub ctype: &'static str,
    pub doc: &'static str,
}

impl TilingField {
    pub const fn u32(name: &'static str, doc: &'static str) -> Self {
        TilingField { name, ctype: "uint32_t", doc }
    }
    pub const fn f32(name: &'static str, doc: &'static str) -> Self {
        TilingField { name, ctype: "float", doc }
    }
}
