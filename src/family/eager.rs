//! The vocabulary of the eager PyTorch baseline: the primitive ops eager PyTorch (torch_npu)
//! runs for the same work as a fused op, with the GM bytes each reads and writes and its kernel
//! launches, from the same shapes and dtypes as the fused case. Each family writes its ops'
//! sequences with [`Builder`] (`FamilyOps::eager_sequence`); an op without one says so in the
//! report.
//!
//! Rules (ARCHITECTURE.md "Performance model"):
//! - every primitive reads each of its inputs once and writes its output once, in the dtype it
//!   works in (a `.to(float32)` makes every later op move 4 bytes per element);
//! - views (slices, `unsqueeze`, `view`) move nothing, but an aclnn op given a non-contiguous
//!   view first materialises it: every aclnn L2 API calls `l0op::Contiguous` on its inputs (e.g.
//!   hicann/ops-math `math/neg/op_api/aclnn_neg.cpp`), which for a slice is one copy kernel.
//!   That is counted as its own launch ("contiguous(...)");
//! - scalar operands (`+ eps`, `* 0.5`) are attributes, not tensors;
//! - a reduction's output is the reduced tensor (`mean(-1, keepdim=True)` writes rows values).
//!
//! Sources of the sequences: research/op-semantics.md §1.5 (HF `Qwen2RMSNorm`, residual add),
//! §2.3 (HF `rotate_half` / `apply_rotary_pos_emb`), §3 (GeLU forms), §4 (KV cache, int8
//! quantisation).

use super::FamilyError;
use crate::dtype::DType;
use crate::spec::OpSpec;
use crate::tensor::shape_numel;
use serde::Serialize;

/// One primitive op of the eager sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EagerStep {
    /// What eager PyTorch calls, e.g. `pow(2)`.
    pub op: String,
    /// Kernel launches (1 for every primitive here).
    pub launches: u32,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Elements the op computes (its output's), for the vector term of the model.
    pub elements: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EagerSequence {
    /// Which eager code this is (`HF Qwen2RMSNorm`).
    pub source: String,
    pub steps: Vec<EagerStep>,
    /// What the sequence does differently from the fused op (outputs it does not produce ...).
    pub notes: Vec<String>,
}

impl EagerSequence {
    pub fn launches(&self) -> u32 {
        self.steps.iter().map(|s| s.launches).sum()
    }
    pub fn bytes(&self) -> u64 {
        self.steps.iter().map(|s| s.read_bytes + s.write_bytes).sum()
    }
}

/// The shapes of one case, and how many slots of a paged-cache op are valid (data dependent).
#[derive(Debug, Clone)]
pub struct EagerCase<'a> {
    pub spec: &'a OpSpec,
    pub column: usize,
    /// One shape per input, the spec's order.
    pub shapes: &'a [(String, Vec<usize>)],
    pub valid_slots: Option<u64>,
}

/// A tensor of the case: elements and dtype.
#[derive(Debug, Clone, Copy)]
pub(crate) struct T {
    pub(crate) n: u64,
    pub(crate) dtype: DType,
}

impl T {
    pub(crate) fn bytes(self) -> u64 {
        self.n * self.dtype.size_bytes() as u64
    }
    pub(crate) fn as_dtype(self, dtype: DType) -> T {
        T { n: self.n, dtype }
    }
    pub(crate) fn with_n(self, n: u64) -> T {
        T { n, dtype: self.dtype }
    }
}

#[derive(Default)]
pub(crate) struct Builder {
    steps: Vec<EagerStep>,
    notes: Vec<String>,
}

impl Builder {
    /// One kernel that reads `inputs` and writes `output`.
    pub(crate) fn op(&mut self, op: impl Into<String>, inputs: &[T], output: T) -> T {
        self.steps.push(EagerStep {
            op: op.into(),
            launches: 1,
            read_bytes: inputs.iter().map(|t| t.bytes()).sum(),
            write_bytes: output.bytes(),
            elements: output.n,
        });
        output
    }

    /// What the sequence does differently from the fused op.
    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The sequence, named by the eager code it models.
    pub(crate) fn finish(self, source: impl Into<String>) -> EagerSequence {
        EagerSequence { source: source.into(), steps: self.steps, notes: self.notes }
    }
}

/// Input `i` of the case: its elements and dtype, and its shape.
pub(crate) fn input<'a>(case: &EagerCase<'a>, i: usize) -> Result<(T, &'a [usize]), FamilyError> {
    let spec = case.spec;
    let arg =
        spec.inputs.get(i).ok_or_else(|| FamilyError::new(format!("{} has no input {i}", spec.name)))?;
    let shape = case
        .shapes
        .iter()
        .find(|(n, _)| n == &arg.name)
        .map(|(_, s)| s.as_slice())
        .ok_or_else(|| FamilyError::new(format!("no shape for input `{}`", arg.name)))?;
    Ok((T { n: shape_numel(shape) as u64, dtype: arg.dtypes[case.column] }, shape))
}

pub(crate) fn last_dim(shape: &[usize]) -> Result<u64, FamilyError> {
    shape
        .last()
        .map(|d| *d as u64)
        .filter(|d| *d > 0)
        .ok_or_else(|| FamilyError::new("an input without a last dim"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::spec::{ElementwiseParams, FamilyParams, OpSpec, RowNormParams, TensorArg};

    fn sequence(case: &EagerCase) -> Result<EagerSequence, FamilyError> {
        crate::family::ops(case.spec.family).eager_sequence(case)
    }

    fn tensor(name: &str, dtype: DType) -> TensorArg {
        TensorArg { name: name.into(), dtypes: vec![dtype], mutated: false }
    }

    fn spec(name: &str, inputs: Vec<TensorArg>) -> OpSpec {
        let (family, params) = match name {
            "rms_norm" => (
                "row_norm",
                FamilyParams::RowNorm(RowNormParams {
                    fused_residual_add: false,
                    norm: crate::spec::NormKind::Rms,
                    gamma_offset: 0.0,
                }),
            ),
            "rotary_mul" => ("rotary", FamilyParams::None),
            _ => (
                "elementwise",
                FamilyParams::Elementwise(ElementwiseParams {
                    body: "x".into(),
                    compute: DType::Float32,
                    body_offset: 0,
                    derivative_of: None,
                }),
            ),
        };
        let family = crate::family::family(family).expect("a registered family");
        OpSpec {
            name: name.into(),
            op_type: "Opgen".into(),
            family,
            summary: String::new(),
            inputs,
            outputs: vec![tensor("y", DType::Float16)],
            refs: Vec::new(),
            attrs: Vec::new(),
            targets: Vec::new(),
            params,
            backward: crate::spec::Backward::NotGenerated,
            source: Default::default(),
            project: Default::default(),
        }
    }

    #[test]
    fn qwen2_rms_norm_is_eight_launches_and_36_bytes_per_element_in_half() {
        let s = spec("rms_norm", vec![tensor("x", DType::Float16), tensor("gamma", DType::Float16)]);
        let shapes = vec![("x".to_string(), vec![4096, 3584]), ("gamma".to_string(), vec![3584])];
        let seq = sequence(&EagerCase { spec: &s, column: 0, shapes: &shapes, valid_slots: None }).unwrap();
        assert_eq!(seq.launches(), 8);
        let n = 4096u64 * 3584;
        let rows = 4096u64;
        // cast 2+4, pow 4+4, mean 4 + 4/row, eps and rsqrt 8/row each, mul 4+4 + 4/row, cast 4+2,
        // weight * (2 per element + the weight once) 2+2.
        let want = 36 * n + (4 + 8 + 8 + 4) * rows + 2 * 3584;
        assert_eq!(seq.bytes(), want);
    }

    #[test]
    fn float32_rms_norm_drops_the_casts() {
        let s = spec("rms_norm", vec![tensor("x", DType::Float32), tensor("gamma", DType::Float32)]);
        let shapes = vec![("x".to_string(), vec![2, 8]), ("gamma".to_string(), vec![8])];
        let seq = sequence(&EagerCase { spec: &s, column: 0, shapes: &shapes, valid_slots: None }).unwrap();
        assert_eq!(seq.launches(), 6);
    }

    #[test]
    fn rotate_half_counts_its_contiguous_copies() {
        let s = spec(
            "rotary_mul",
            vec![tensor("x", DType::BFloat16), tensor("r1", DType::BFloat16), tensor("r2", DType::BFloat16)],
        );
        let shapes = vec![
            ("x".to_string(), vec![1, 4096, 28, 128]),
            ("r1".to_string(), vec![1, 4096, 1, 128]),
            ("r2".to_string(), vec![1, 4096, 1, 128]),
        ];
        let seq = sequence(&EagerCase { spec: &s, column: 0, shapes: &shapes, valid_slots: None }).unwrap();
        assert_eq!(seq.launches(), 7);
        let x = 2 * 4096u64 * 28 * 128;
        let r = 2 * 4096u64 * 128;
        // copies 2 x (x/2 + x/2), neg x/2 + x/2, cat x + x, muls 2 x (x + r + x), add 3x.
        assert_eq!(seq.bytes(), 2 * x + x + 2 * x + 2 * (2 * x + r) + 3 * x);
    }

    #[test]
    fn an_unknown_op_has_no_sequence() {
        let s = spec("my_op", vec![tensor("x", DType::Float16)]);
        let shapes = vec![("x".to_string(), vec![4])];
        let err =
            sequence(&EagerCase { spec: &s, column: 0, shapes: &shapes, valid_slots: None }).unwrap_err();
        assert!(err.to_string().contains("my_op"), "{err}");
    }
}
