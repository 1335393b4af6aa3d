//! Element types that specs, kernels, the twin and references share.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An element type as msOpGen spells it in its JSON (`float16`, `bfloat16`, `float32`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Float16,
    BFloat16,
    Float32,
    Int8,
    Int32,
    Int64,
}

/// A dtype list as errors print it: `float16, bfloat16`.
pub fn names(list: &[DType]) -> String {
    list.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

impl DType {
    pub const ALL: [DType; 6] =
        [DType::Float16, DType::BFloat16, DType::Float32, DType::Int8, DType::Int32, DType::Int64];

    /// The spelling used in specs and in the msOpGen JSON.
    pub fn name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Int8 => "int8",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
        }
    }

    /// Short spelling accepted on command lines (`f16`, `bf16`, `f32`, `i8`, `i32`, `i64`).
    pub fn short_name(self) -> &'static str {
        match self {
            DType::Float16 => "f16",
            DType::BFloat16 => "bf16",
            DType::Float32 => "f32",
            DType::Int8 => "i8",
            DType::Int32 => "i32",
            DType::Int64 => "i64",
        }
    }

    /// Parses either the long (`float16`) or the short (`f16`) spelling.
    pub fn parse(text: &str) -> Option<DType> {
        let text = text.trim().to_ascii_lowercase();
        DType::ALL.into_iter().find(|d| d.name() == text || d.short_name() == text).or(match text.as_str() {
            "float" | "fp32" => Some(DType::Float32),
            "half" | "fp16" => Some(DType::Float16),
            _ => None,
        })
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::Int8 => 1,
            DType::Float16 | DType::BFloat16 => 2,
            DType::Float32 | DType::Int32 => 4,
            DType::Int64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::Float16 | DType::BFloat16 | DType::Float32)
    }

    /// The AscendC element type name (kernel side).
    pub fn cpp_type(self) -> &'static str {
        match self {
            DType::Float16 => "half",
            DType::BFloat16 => "bfloat16_t",
            DType::Float32 => "float",
            DType::Int8 => "int8_t",
            DType::Int32 => "int32_t",
            DType::Int64 => "int64_t",
        }
    }

    /// The graph-engine enumerator (op_host side).
    pub fn ge_type(self) -> &'static str {
        match self {
            DType::Float16 => "ge::DT_FLOAT16",
            DType::BFloat16 => "ge::DT_BF16",
            DType::Float32 => "ge::DT_FLOAT",
            DType::Int8 => "ge::DT_INT8",
            DType::Int32 => "ge::DT_INT32",
            DType::Int64 => "ge::DT_INT64",
        }
    }

    /// The torch dtype name (`torch.<name>`).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Int8 => "int8",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
        }
    }

    /// The numpy `descr` this project stores the type as. bfloat16 has no numpy type: it is
    /// stored as its raw bit pattern, `<u2`.
    pub fn npy_descr(self) -> &'static str {
        match self {
            DType::Float16 => "<f2",
            DType::BFloat16 => "<u2",
            DType::Float32 => "<f4",
            DType::Int8 => "|i1",
            DType::Int32 => "<i4",
            DType::Int64 => "<i8",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
