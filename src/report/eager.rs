//! The eager PyTorch baseline: for each catalogue op, the primitive ops eager PyTorch (torch_npu)
//! runs for the same work, with the GM bytes each reads and writes and its kernel launches,
//! from the same shapes and dtypes as the fused case. Keyed by op name; an op without a
//! sequence here says so in the report.
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

use crate::dtype::DType;
use crate::spec::{KvKind, OpSpec};
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
struct T {
    n: u64,
    dtype: DType,
}

impl T {
    fn bytes(self) -> u64 {
        self.n * self.dtype.size_bytes() as u64
    }
    fn as_dtype(self, dtype: DType) -> T {
        T { n: self.n, dtype }
    }
    fn with_n(self, n: u64) -> T {
        T { n, dtype: self.dtype }
    }
}

struct Builder {
    steps: Vec<EagerStep>,
}

impl Builder {
    /// One kernel that reads `inputs` and writes `output`.
    fn op(&mut self, op: impl Into<String>, inputs: &[T], output: T) -> T {
        self.steps.push(EagerStep {
            op: op.into(),
            launches: 1,
            read_bytes: inputs.iter().map(|t| t.bytes()).sum(),
            write_bytes: output.bytes(),
            elements: output.n,
        });
        output
    }
}

fn input<'a>(case: &EagerCase<'a>, i: usize) -> Result<(T, &'a [usize]), String> {
    let spec = case.spec;
    let arg = spec.inputs.get(i).ok_or_else(|| format!("{} has no input {i}", spec.name))?;
    let shape = case
        .shapes
        .iter()
        .find(|(n, _)| n == &arg.name)
        .map(|(_, s)| s.as_slice())
        .ok_or_else(|| format!("no shape for input `{}`", arg.name))?;
    Ok((T { n: shape_numel(shape) as u64, dtype: arg.dtypes[case.column] }, shape))
}

fn last_dim(shape: &[usize]) -> Result<u64, String> {
    shape
        .last()
        .map(|d| *d as u64)
        .filter(|d| *d > 0)
        .ok_or_else(|| "an input without a last dim".to_string())
}

/// The eager sequence of `case.spec` for the case's shapes, or why there is none.
pub fn sequence(case: &EagerCase) -> Result<EagerSequence, String> {
    let spec = case.spec;
    let mut b = Builder { steps: Vec::new() };
    let mut notes = Vec::new();
    let source = match spec.name.as_str() {
        "rms_norm" => {
            let (x, xs) = input(case, 0)?;
            let (w, _) = input(case, 1)?;
            let rows = x.n / last_dim(xs)?.max(1);
            qwen2_rms_norm(&mut b, x, w, rows.max(1));
            notes.push("eager returns no rstd; the fused op writes it as well".to_string());
            "HF Qwen2RMSNorm: to(float32), pow(2), mean(-1), + eps, rsqrt, *, to(input dtype), weight *"
        }
        "add_rms_norm" => {
            let (x1, _) = input(case, 0)?;
            let (x2, _) = input(case, 1)?;
            let (w, _) = input(case, 2)?;
            let gamma_n = w.n.max(1);
            let sum = b.op("residual + hidden", &[x1, x2], x1);
            qwen2_rms_norm(&mut b, sum, w, (x1.n / gamma_n).max(1));
            notes.push("eager returns no rstd; the fused op writes it as well".to_string());
            "HF decoder residual add, then Qwen2RMSNorm"
        }
        "rotary_mul" => {
            let (x, _) = input(case, 0)?;
            let (r1, _) = input(case, 1)?;
            let (r2, _) = input(case, 2)?;
            let half = x.with_n(x.n / 2);
            let x2 = b.op("contiguous(x[..., D/2:])", &[half], half);
            let neg = b.op("neg", &[x2], half);
            let x1 = b.op("contiguous(x[..., :D/2])", &[half], half);
            let rotated = b.op("cat((-x2, x1), -1)", &[neg, x1], x);
            let a = b.op("x * cos", &[x, r1], x);
            let c = b.op("rotate_half(x) * sin", &[rotated, r2], x);
            b.op("add", &[a, c], x);
            notes.push(
                "the two contiguous() copies are the l0op::Contiguous that aclnnNeg / aclnnCat run on a \
                 sliced (non-contiguous) input; without them eager is 5 launches"
                    .to_string(),
            );
            notes.push("q and k are two calls of this sequence (and two fused launches)".to_string());
            "HF apply_rotary_pos_emb with rotate_half (one tensor)"
        }
        "gelu_tanh" => {
            let (x, _) = input(case, 0)?;
            let half_x = b.op("0.5 * x", &[x], x);
            let cube = b.op("pow(x, 3.0)", &[x], x);
            let k = b.op("0.044715 * x^3", &[cube], x);
            let inner = b.op("x + 0.044715 * x^3", &[x, k], x);
            let scaled = b.op("sqrt(2/pi) * (...)", &[inner], x);
            let t = b.op("tanh", &[scaled], x);
            let one = b.op("1.0 + tanh", &[t], x);
            b.op("0.5 * x * (...)", &[half_x, one], x);
            "HF NewGELUActivation (unfused tanh form)"
        }
        "gelu_erf" => {
            let (x, _) = input(case, 0)?;
            let half_x = b.op("x * 0.5", &[x], x);
            let s = b.op("x / sqrt(2)", &[x], x);
            let e = b.op("erf", &[s], x);
            let one = b.op("1.0 + erf", &[e], x);
            b.op("x * 0.5 * (...)", &[half_x, one], x);
            notes.push(
                "torch.nn.functional.gelu is one kernel on NPU (aclnnGelu, tanh form: research/op-semantics.md §3.2)"
                    .to_string(),
            );
            "HF _gelu_python (unfused erf form)"
        }
        "fast_gelu" => {
            let (x, _) = input(case, 0)?;
            let z = b.op("1.702 * x", &[x], x);
            let s = b.op("sigmoid", &[z], x);
            b.op("x * sigmoid(1.702 x)", &[x, s], x);
            notes.push("torch_npu.npu_fast_gelu is already one kernel".to_string());
            "HF QuickGELUActivation (x * sigmoid(1.702 x))"
        }
        "swiglu" if spec.inputs.len() >= 2 => {
            let (gate, _) = input(case, 0)?;
            let (up, _) = input(case, 1)?;
            let s = b.op("silu(gate)", &[gate], gate);
            b.op("silu(gate) * up", &[s, up], gate);
            "HF LlamaMLP activation: act_fn(gate_proj(x)) * up_proj(x)"
        }
        "swiglu" => {
            let (x, _) = input(case, 0)?;
            let half = x.with_n(x.n / 2);
            let a = b.op("contiguous(x.chunk(2)[0])", &[half], half);
            let s = b.op("silu", &[a], half);
            let g = b.op("contiguous(x.chunk(2)[1])", &[half], half);
            b.op("silu(a) * b", &[s, g], half);
            notes.push(
                "the contiguous() copies materialise the chunk views for aclnnSilu / aclnnMul".to_string(),
            );
            "silu(a) * b from one [.., 2H] tensor (x.chunk(2, -1))"
        }
        _ => {
            let source = kv_sequence(case, &mut b, &mut notes)?;
            return Ok(finish(source, b, notes));
        }
    };
    Ok(finish(source.to_string(), b, notes))
}

fn finish(source: String, b: Builder, notes: Vec<String>) -> EagerSequence {
    EagerSequence { source, steps: b.steps, notes }
}

/// `weight * (x.to(float32) * rsqrt(mean(x^2) + eps)).to(input_dtype)`; the casts vanish for
/// float32 input.
fn qwen2_rms_norm(b: &mut Builder, x: T, w: T, rows: u64) -> T {
    let f32x = if x.dtype == DType::Float32 {
        x
    } else {
        b.op("hidden.to(float32)", &[x], x.as_dtype(DType::Float32))
    };
    let sq = b.op("pow(2)", &[f32x], f32x);
    let r = T { n: rows, dtype: DType::Float32 };
    let mean = b.op("mean(-1, keepdim=True)", &[sq], r);
    let eps = b.op("+ eps", &[mean], r);
    let rstd = b.op("rsqrt", &[eps], r);
    let normed = b.op("hidden * rsqrt(...)", &[f32x, rstd], f32x);
    let back = if x.dtype == DType::Float32 { normed } else { b.op(".to(input_dtype)", &[normed], x) };
    b.op("weight * hidden", &[w, back], x)
}

/// The KV-layout ops, by the spec's kv kind (their tensors found by role: mutated inputs are the
/// caches, the integer rank-1 input the slot mapping).
fn kv_sequence(case: &EagerCase, b: &mut Builder, notes: &mut Vec<String>) -> Result<String, String> {
    let spec = case.spec;
    let kind = spec.kv_kind().ok_or_else(|| format!("no eager sequence for op `{}`", spec.name))?;
    let all: Vec<(T, &[usize], bool, &str)> = (0..spec.inputs.len())
        .map(|i| input(case, i).map(|(t, s)| (t, s, spec.inputs[i].mutated, spec.inputs[i].name.as_str())))
        .collect::<Result<_, _>>()?;
    match kind {
        KvKind::BsndToBnsd | KvKind::BnsdToBsnd => {
            let (x, _, _, _) = all.first().copied().ok_or("no input")?;
            b.op("x.transpose(1, 2).contiguous()", &[x], x);
            Ok("x.transpose(1, 2).contiguous() (one copy kernel)".to_string())
        }
        KvKind::DequantInt8 => {
            let x = all.iter().find(|t| t.0.dtype == DType::Int8).ok_or("no int8 input")?.0;
            let scale = all.iter().find(|t| t.0.dtype.is_float()).ok_or("no scale input")?.0;
            let out = spec.outputs.first().ok_or("no output")?.dtypes[case.column];
            let f = b.op("x.to(float32)", &[x], x.as_dtype(DType::Float32));
            let y = b.op("* scale", &[f, scale], f);
            if out != DType::Float32 {
                b.op(".to(output dtype)", &[y], x.as_dtype(out));
            }
            Ok("x.to(float32) * scale, cast to the output dtype".to_string())
        }
        KvKind::ReshapeAndCache | KvKind::ReshapeAndCacheInt8 => {
            let slot = all
                .iter()
                .find(|t| !t.2 && !t.0.dtype.is_float() && t.1.len() == 1)
                .ok_or("no slot-mapping input")?
                .0;
            // key and value: the other inputs of rank >= 2 (int8 too, for a plain int8 cache).
            let sources: Vec<(T, &[usize])> =
                all.iter().filter(|t| !t.2 && t.1.len() >= 2).map(|t| (t.0, t.1)).collect();
            let caches: Vec<(T, &str)> = all.iter().filter(|t| t.2).map(|t| (t.0, t.3)).collect();
            let tokens = slot.n;
            if kind == KvKind::ReshapeAndCache {
                if sources.len() != caches.len() || sources.is_empty() {
                    return Err(format!(
                        "{} sources for {} caches: no eager sequence written for this signature",
                        sources.len(),
                        caches.len()
                    ));
                }
                for ((src, _), (cache, name)) in sources.iter().zip(&caches) {
                    b.op(
                        format!("{name}.view(-1, row)[slot_mapping] = src (index_put_)"),
                        &[*src, slot],
                        cache.with_n(src.n),
                    );
                }
                let valid = case.valid_slots.map_or(String::new(), |v| format!(" ({v} valid)"));
                notes.push(format!(
                    "{tokens} tokens{valid}; eager index_put_ writes padded (negative) slots too"
                ));
                return Ok("vLLM torch fallback: cache.view(-1, row)[slot_mapping] = key / value".to_string());
            }
            let data: Vec<&(T, &str)> = caches.iter().filter(|c| c.0.dtype == DType::Int8).collect();
            let scales: Vec<&(T, &str)> = caches.iter().filter(|c| c.0.dtype.is_float()).collect();
            if sources.is_empty() || data.len() != sources.len() || scales.len() != sources.len() {
                return Err(format!(
                    "{} sources, {} int8 caches, {} scale caches: no eager sequence written for this signature",
                    sources.len(),
                    data.len(),
                    scales.len()
                ));
            }
            for (((src, shape), q_cache), s_cache) in sources.iter().zip(data).zip(scales) {
                let d = last_dim(shape)?;
                let groups = T { n: src.n / d, dtype: DType::Float32 };
                let f = if src.dtype == DType::Float32 {
                    *src
                } else {
                    b.op("x.to(float32)", &[*src], src.as_dtype(DType::Float32))
                };
                let a = b.op("abs", &[f], f);
                let m = b.op("amax(-1, keepdim=True)", &[a], groups);
                let scale = b.op("absmax / 127", &[m], groups);
                let q = b.op("x / scale", &[f, scale], f);
                let r = b.op("round", &[q], f);
                let c = b.op("clamp(-128, 127)", &[r], f);
                let i8q = b.op(".to(int8)", &[c], f.as_dtype(DType::Int8));
                b.op(format!("{}[slot_mapping] = q (index_put_)", q_cache.1), &[i8q, slot], i8q);
                b.op(format!("{}[slot_mapping] = scale (index_put_)", s_cache.1), &[scale, slot], scale);
            }
            Ok("per-(token, head) absmax int8 quantisation in torch, then index_put_ into the caches"
                .to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Family, FamilyParams, OpSpec, RowNormParams, TensorArg};

    fn tensor(name: &str, dtype: DType) -> TensorArg {
        TensorArg { name: name.into(), dtypes: vec![dtype], mutated: false }
    }

    fn spec(name: &str, inputs: Vec<TensorArg>) -> OpSpec {
        OpSpec {
            name: name.into(),
            op_type: "Opgen".into(),
            family: Family::RowNorm,
            summary: String::new(),
            inputs,
            outputs: vec![tensor("y", DType::Float16)],
            attrs: Vec::new(),
            targets: Vec::new(),
            params: FamilyParams::RowNorm(RowNormParams { fused_residual_add: false }),
            backward: crate::spec::Backward::NotGenerated,
            source: Default::default(),
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
        assert!(err.contains("my_op"), "{err}");
    }
}
