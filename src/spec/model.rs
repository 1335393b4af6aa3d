//! The validated op model every later stage reads. Built only by `validate`.

use crate::dtype::DType;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    RowNorm,
    RowNormGrad,
    Rotary,
    Elementwise,
    Permute,
    PagedCache,
    Dequant,
}

impl Family {
    pub const ALL: [Family; 7] = [
        Family::RowNorm,
        Family::RowNormGrad,
        Family::Rotary,
        Family::Elementwise,
        Family::Permute,
        Family::PagedCache,
        Family::Dequant,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::RowNorm => "row_norm",
            Family::RowNormGrad => "row_norm_grad",
            Family::Rotary => "rotary",
            Family::Elementwise => "elementwise",
            Family::Permute => "permute",
            Family::PagedCache => "paged_cache",
            Family::Dequant => "dequant",
        }
    }

    pub fn parse(text: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == text)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorArg {
    pub name: String,
    /// One dtype per supported combination ("column"), msOpGen style.
    pub dtypes: Vec<DType>,
    /// An input the kernel updates in place (a cache): `Tensor(a!)` in the torch schema.
    pub mutated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrKind {
    Float,
    Int,
    Bool,
    String,
}

impl AttrKind {
    pub fn name(self) -> &'static str {
        match self {
            AttrKind::Float => "float",
            AttrKind::Int => "int",
            AttrKind::Bool => "bool",
            AttrKind::String => "string",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AttrValue {
    Float(f64),
    Int(i64),
    Bool(bool),
    String(String),
}

impl AttrValue {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AttrValue::Float(v) => Some(*v),
            AttrValue::Int(v) => Some(*v as f64),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attr {
    pub name: String,
    pub kind: AttrKind,
    /// `None` makes the attr required.
    pub default: Option<AttrValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowNormParams {
    /// add_rms_norm: y = norm(x1 + x2), and the rounded sum is a third output.
    pub fused_residual_add: bool,
}

/// The elementwise family: `body` over the inputs, attrs and constants, evaluated in
/// `compute`. The expression is parsed by `crate::family::elementwise`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElementwiseParams {
    pub body: String,
    pub compute: DType,
    /// Byte offset of the body string's first character in the spec text (for errors).
    #[serde(skip)]
    pub body_offset: usize,
}

/// Which KV-cache layout operation a spec of the permute, paged_cache or dequant family is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvKind {
    BsndToBnsd,
    BnsdToBsnd,
    ReshapeAndCache,
    ReshapeAndCacheInt8,
    DequantInt8,
}

impl KvKind {
    pub const ALL: [KvKind; 5] = [
        KvKind::BsndToBnsd,
        KvKind::BnsdToBsnd,
        KvKind::ReshapeAndCache,
        KvKind::ReshapeAndCacheInt8,
        KvKind::DequantInt8,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KvKind::BsndToBnsd => "bsnd_to_bnsd",
            KvKind::BnsdToBsnd => "bnsd_to_bsnd",
            KvKind::ReshapeAndCache => "reshape_and_cache",
            KvKind::ReshapeAndCacheInt8 => "reshape_and_cache_int8",
            KvKind::DequantInt8 => "dequant_int8",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum FamilyParams {
    RowNorm(RowNormParams),
    /// The row_norm backward: rms_norm_grad (4 inputs) or add_rms_norm_grad (5, with dx_sum).
    RowNormGrad,
    Rotary,
    Elementwise(ElementwiseParams),
    /// The KV-layout families (permute, paged_cache, dequant): which operation.
    Layout {
        kind: Option<KvKind>,
    },
    /// Only while a spec with an unknown family is being rejected.
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpSpec {
    /// snake_case op name: file stem of the spec, `torch.ops.opgen.<name>`.
    pub name: String,
    /// The CANN op type (UpperCamelCase, vendor-prefixed so it never collides with a built-in).
    pub op_type: String,
    pub family: Family,
    pub summary: String,
    pub inputs: Vec<TensorArg>,
    pub outputs: Vec<TensorArg>,
    pub attrs: Vec<Attr>,
    /// CANN compute units (`ascend910b`, `ascend910_93`).
    pub targets: Vec<String>,
    pub params: FamilyParams,
    /// The catalogue op computing this op's gradients (`backward = "..."`), if declared.
    pub backward: Option<String>,
    /// Byte offset of the `backward` value in the spec text (for the catalogue's check).
    #[serde(skip)]
    pub backward_offset: usize,
    /// The spec file, as given (used in banners and messages).
    #[serde(skip)]
    pub source: PathBuf,
}

impl OpSpec {
    /// msOpGen file stem of the op type: `OpgenRmsNorm` → `opgen_rms_norm`.
    pub fn file_stem(&self) -> String {
        super::idents::snake_case(&self.op_type)
    }

    /// Number of dtype combinations.
    pub fn columns(&self) -> usize {
        self.inputs.first().map_or(0, |t| t.dtypes.len())
    }

    /// Every tensor (inputs then outputs) with its dtype in combination `column`.
    pub fn column(&self, column: usize) -> Vec<(&str, DType)> {
        self.inputs.iter().chain(&self.outputs).map(|t| (t.name.as_str(), t.dtypes[column])).collect()
    }

    /// The dtype of input `name` in combination `column`.
    pub fn input_dtype(&self, name: &str, column: usize) -> Option<DType> {
        self.inputs.iter().find(|t| t.name == name).map(|t| t.dtypes[column])
    }

    /// The combination whose first input has `dtype`, if any.
    pub fn column_for(&self, dtype: DType) -> Option<usize> {
        self.inputs.first()?.dtypes.iter().position(|d| *d == dtype)
    }

    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }

    pub fn row_norm(&self) -> Option<&RowNormParams> {
        match &self.params {
            FamilyParams::RowNorm(p) => Some(p),
            _ => None,
        }
    }

    pub fn elementwise(&self) -> Option<&ElementwiseParams> {
        match &self.params {
            FamilyParams::Elementwise(p) => Some(p),
            _ => None,
        }
    }

    pub fn kv_kind(&self) -> Option<KvKind> {
        match &self.params {
            FamilyParams::Layout { kind } => *kind,
            _ => None,
        }
    }

    /// Inputs the kernel writes in place.
    pub fn mutated_inputs(&self) -> Vec<String> {
        self.inputs.iter().filter(|t| t.mutated).map(|t| t.name.clone()).collect()
    }
}
