//! The shape rule of an op: what the torch kernels (Meta included) check on the inputs and how
//! they size the outputs, the same rule as the family's op_host InferShape. Each family states
//! its rule (`FamilyOps::shape_rule`); the torch codegen renders it.

use serde::Serialize;

/// A check on input shapes, rendered as a call of a helper in `opgen_torch.h`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShapeCheck {
    /// `tensor` has exactly `like`'s shape.
    SameShape { tensor: String, like: String },
    /// `tensor` has 1..=rank(of) dims, equal to `of`'s trailing dims.
    TrailingDims { tensor: String, of: String },
}

/// How an output's shape follows from the inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutputShape {
    /// `of`'s shape.
    Like { of: String },
    /// `of`'s shape with its last rank(`count_of`) dims set to 1.
    TrailingOnes { of: String, count_of: String },
    /// `of`'s shape with dims `a` and `b` swapped; `of` must have `rank` dims (permute's
    /// BSND <-> BNSD permutes).
    SwapDims { of: String, rank: usize, a: usize, b: usize },
    /// `[count, of's dims...]`: `count` stacked copies of `of`'s shape (row_norm_grad's dgamma
    /// partials, a fixed number of rows of gamma's shape).
    Stacked { count: usize, of: String },
    /// A fixed shape (paged_cache's int32 count of slots past the cache: [1]).
    Fixed { dims: Vec<usize> },
}

/// What the torch kernels check on the inputs and how they size the outputs (one entry per
/// output, in order). The same rule as the op_host InferShape of the family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShapeRule {
    pub checks: Vec<ShapeCheck>,
    pub outputs: Vec<OutputShape>,
}
