//! CPU references, written from the math (research/op-semantics.md), never from a spec, a
//! template or the twin: a wrong spec must fail against them.
//!
//! Every reference reads the already-rounded inputs (exact f64 widening of a [`HostTensor`]),
//! computes in f64 and returns **unrounded** f64 outputs; the caller rounds once (RNE) to the
//! output dtype, or hands the f64 values straight to `verify::compare`. Where the semantics
//! round an intermediate (add_rms_norm), the reference does exactly that rounding itself.
//! Layout ops (permute, paged_cache, dequant) move raw element bytes and return tensors, bit for bit.
//!
//! [`HostTensor`]: crate::tensor::HostTensor

pub mod activation;
pub mod kv_layout;
pub mod reverse_scan;
pub mod rotary;
pub mod rotary_grad;
pub mod row_norm;
pub mod vocab_reduce;
pub mod whiten;

use std::fmt;

/// Inputs a reference cannot accept (shapes, dtypes, parameters), with a message naming which
/// input and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceError {
    pub op: &'static str,
    pub message: String,
}

impl ReferenceError {
    pub(crate) fn new(op: &'static str, message: impl Into<String>) -> ReferenceError {
        ReferenceError { op, message: message.into() }
    }
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} reference: {}", self.op, self.message)
    }
}

impl std::error::Error for ReferenceError {}
