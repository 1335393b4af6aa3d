//! KV layout references (op-semantics.md §4): BSND ↔ BNSD permutes, the paged-cache scatter
//! `reshape_and_cache`, its per-(token, head) dynamic int8 variant, and int8 dequantisation.
//!
//! Copies move raw element bytes (bit-exact, NaN payloads included). Shapes:
//! - key [T, N, Dk], value [T, N, Dv] (token-major, vLLM);
//! - key_cache [num_blocks, block_size, N, Dk], value_cache [num_blocks, block_size, N, Dv]
//!   (vllm-ascend A2/A3 ND layout, §4.2);
//! - slots int32 or int64 [T]: token i goes to block slots[i] / block_size, offset
//!   slots[i] % block_size;
//! - int8 scale caches float32 [num_blocks, block_size, N] (a trailing 1 is accepted).

use super::ReferenceError;
use crate::dtype::DType;
use crate::tensor::{format_shape, HostTensor};

fn err(op: &'static str, message: impl Into<String>) -> ReferenceError {
    ReferenceError::new(op, message)
}

/// Swaps dims 1 and 2 of a 4-D tensor (permute(0, 2, 1, 3)), copying element bytes.
fn swap_dims_1_2(op: &'static str, x: &HostTensor) -> Result<HostTensor, ReferenceError> {
    let [b, p, q, d] = x.shape[..] else {
        return Err(err(op, format!("x must be 4-D, got shape {}", format_shape(&x.shape))));
    };
    let w = x.dtype.size_bytes();
    let row = d * w;
    let mut out = HostTensor::zeros(x.dtype, &[b, q, p, d]);
    for ib in 0..b {
        for ip in 0..p {
            for iq in 0..q {
                let src = ((ib * p + ip) * q + iq) * row;
                let dst = ((ib * q + iq) * p + ip) * row;
                out.bytes[dst..dst + row].copy_from_slice(&x.bytes[src..src + row]);
            }
        }
    }
    Ok(out)
}

/// [B, S, N, D] → [B, N, S, D], bit-exact.
pub fn bsnd_to_bnsd(x: &HostTensor) -> Result<HostTensor, ReferenceError> {
    swap_dims_1_2("bsnd_to_bnsd", x)
}

/// [B, N, S, D] → [B, S, N, D], bit-exact.
pub fn bnsd_to_bsnd(x: &HostTensor) -> Result<HostTensor, ReferenceError> {
    swap_dims_1_2("bnsd_to_bsnd", x)
}

/// Geometry shared by both cache writers, after validation.
struct CacheGeometry {
    tokens: usize,
    heads: usize,
    key_dim: usize,
    value_dim: usize,
    cache_slots: usize,
}

fn check_cache_shapes(
    op: &'static str,
    key: &HostTensor,
    value: &HostTensor,
    key_cache: &HostTensor,
    value_cache: &HostTensor,
    slots: &HostTensor,
    block_size: usize,
) -> Result<CacheGeometry, ReferenceError> {
    let [t, n, dk] = key.shape[..] else {
        return Err(err(op, format!("key must be [T, N, D], got {}", format_shape(&key.shape))));
    };
    let [tv, nv, dv] = value.shape[..] else {
        return Err(err(op, format!("value must be [T, N, D], got {}", format_shape(&value.shape))));
    };
    if (tv, nv) != (t, n) {
        return Err(err(
            op,
            format!(
                "key {} and value {} disagree on tokens or heads",
                format_shape(&key.shape),
                format_shape(&value.shape)
            ),
        ));
    }
    if block_size == 0 {
        return Err(err(op, "block_size must be > 0"));
    }
    let [nb, bs, kn, kd] = key_cache.shape[..] else {
        return Err(err(
            op,
            format!(
                "key_cache must be [num_blocks, block_size, N, D], got {}",
                format_shape(&key_cache.shape)
            ),
        ));
    };
    if bs != block_size || kn != n || kd != dk {
        return Err(err(
            op,
            format!(
                "key_cache {} does not match block_size {block_size} and key {}",
                format_shape(&key_cache.shape),
                format_shape(&key.shape)
            ),
        ));
    }
    if value_cache.shape != [nb, block_size, n, dv] {
        return Err(err(
            op,
            format!(
                "value_cache {} must be {} for value {}",
                format_shape(&value_cache.shape),
                format_shape(&[nb, block_size, n, dv]),
                format_shape(&value.shape)
            ),
        ));
    }
    if !matches!(slots.dtype, DType::Int32 | DType::Int64) || slots.shape != [t] {
        return Err(err(
            op,
            format!(
                "slot_mapping must be int32/int64 of shape ({t},), got {} {}",
                slots.dtype,
                format_shape(&slots.shape)
            ),
        ));
    }
    Ok(CacheGeometry { tokens: t, heads: n, key_dim: dk, value_dim: dv, cache_slots: nb * block_size })
}

/// The cache slot of each token: `Some(slot)` to write, `None` to skip (negative slot = padding,
/// or past the cache, which is counted).
fn slot_targets(slots: &HostTensor, cache_slots: usize) -> (Vec<Option<usize>>, usize) {
    let mut past = 0;
    let targets = slots
        .to_i64()
        .into_iter()
        .map(|s| match usize::try_from(s) {
            Err(_) => None,
            Ok(s) if s >= cache_slots => {
                past += 1;
                None
            }
            Ok(s) => Some(s),
        })
        .collect();
    (targets, past)
}

/// Paged-cache scatter, in place: for each token i (in order) with s = slots[i],
/// `key_cache[s / block_size, s % block_size] = key[i]` and the same for value.
/// - s < 0: skipped (padding; vLLM's kernels and the ATB golden skip it, §4.3);
/// - s ≥ num_blocks·block_size: never written; the return value counts these tokens;
/// - the same slot twice: the later token wins. (npu_scatter_pa_kv_cache calls duplicates
///   undefined; the reference fixes "last writer wins" so a sequential twin can be compared,
///   but sweeps must not depend on duplicates for the device.)
///
/// The copy is bytewise: key and key_cache share a dtype, value and value_cache too.
pub fn reshape_and_cache(
    key: &HostTensor,
    value: &HostTensor,
    key_cache: &mut HostTensor,
    value_cache: &mut HostTensor,
    slots: &HostTensor,
    block_size: usize,
) -> Result<usize, ReferenceError> {
    const OP: &str = "reshape_and_cache";
    let g = check_cache_shapes(OP, key, value, key_cache, value_cache, slots, block_size)?;
    if key.dtype != key_cache.dtype || value.dtype != value_cache.dtype {
        return Err(err(
            OP,
            format!(
                "key/key_cache ({}/{}) and value/value_cache ({}/{}) must share dtypes",
                key.dtype, key_cache.dtype, value.dtype, value_cache.dtype
            ),
        ));
    }
    let (targets, past) = slot_targets(slots, g.cache_slots);
    let krow = g.heads * g.key_dim * key.dtype.size_bytes();
    let vrow = g.heads * g.value_dim * value.dtype.size_bytes();
    for (i, target) in targets.iter().enumerate() {
        if let Some(s) = *target {
            key_cache.bytes[s * krow..(s + 1) * krow].copy_from_slice(&key.bytes[i * krow..(i + 1) * krow]);
            value_cache.bytes[s * vrow..(s + 1) * vrow]
                .copy_from_slice(&value.bytes[i * vrow..(i + 1) * vrow]);
        }
    }
    Ok(past)
}

/// Symmetric int8 quantisation of one row (the D values of one (token, head)):
/// - xf = f32(x), absmax = max |xf| (f32, exact);
/// - scale = absmax / 127 as an f32 division;
/// - q = round_half_even(xf·127/absmax) computed in f64 from the f32 values (exact up to the
///   final f64 division, which cannot create or hide a tie for these operand sizes), clamped
///   to [−127, 127];
/// - absmax = 0 (an all-zero row): q = 0, scale = 0.
///
/// Rows with NaN or Inf are not a tested contract (op-semantics §7.8); here NaN is ignored by
/// the max, an Inf absmax gives scale Inf, and a NaN quotient becomes q = 0.
pub fn quantize_int8_row(row: &[f32]) -> (Vec<i8>, f32) {
    let absmax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if absmax == 0.0 {
        return (vec![0; row.len()], 0.0);
    }
    let scale = absmax / 127.0;
    let m = f64::from(absmax);
    let q = row
        .iter()
        .map(|&v| (f64::from(v) * 127.0 / m).round_ties_even().clamp(-127.0, 127.0) as i8)
        .collect();
    (q, scale)
}

/// The unrounded quotients x·127/absmax of [`quantize_int8_row`] (0 for an all-zero row), so
/// a comparison can tell a .5 tie, where a float32 kernel cannot decide, from a wrong rounding.
pub fn quantize_int8_row_quotients(row: &[f32]) -> Vec<f64> {
    let absmax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if absmax == 0.0 {
        return vec![0.0; row.len()];
    }
    let m = f64::from(absmax);
    row.iter().map(|&v| (f64::from(v) * 127.0 / m).clamp(-127.0, 127.0)).collect()
}

/// The unrounded int8 values [`reshape_and_cache_int8`] writes into key_cache and value_cache
/// (`cache_elems` elements each, `key_cache_shape`/`value_cache_shape` as the caches), NaN where
/// no token writes; the later token of a slot wins, as there.
pub fn reshape_and_cache_int8_quotients(
    key: &HostTensor,
    value: &HostTensor,
    key_cache: &HostTensor,
    value_cache: &HostTensor,
    slots: &HostTensor,
    block_size: usize,
) -> Result<(Vec<f64>, Vec<f64>), ReferenceError> {
    const OP: &str = "reshape_and_cache_int8";
    let g = check_cache_shapes(OP, key, value, key_cache, value_cache, slots, block_size)?;
    let kf = float_row_f32(key, OP)?;
    let vf = float_row_f32(value, OP)?;
    let (targets, _) = slot_targets(slots, g.cache_slots);
    let mut out = [vec![f64::NAN; key_cache.numel()], vec![f64::NAN; value_cache.numel()]];
    for (part, (src, d)) in [(&kf, g.key_dim), (&vf, g.value_dim)].into_iter().enumerate() {
        for i in 0..g.tokens {
            let Some(s) = targets[i] else { continue };
            for h in 0..g.heads {
                let row = &src[(i * g.heads + h) * d..(i * g.heads + h + 1) * d];
                let base = (s * g.heads + h) * d;
                out[part][base..base + d].copy_from_slice(&quantize_int8_row_quotients(row));
            }
        }
    }
    let [k, v] = out;
    Ok((k, v))
}

fn float_row_f32(x: &HostTensor, op: &'static str) -> Result<Vec<f32>, ReferenceError> {
    if !x.dtype.is_float() {
        return Err(err(op, format!("input must be float16/bfloat16/float32, got {}", x.dtype)));
    }
    // Every element of these dtypes is exactly an f32.
    Ok(x.to_f64().into_iter().map(|v| v as f32).collect())
}

/// Per-row (last dim) dynamic int8 quantisation of a float tensor: returns q (int8, x's shape)
/// and the f32 scales (shape x.shape[..-1]). See [`quantize_int8_row`].
pub fn quantize_int8(x: &HostTensor) -> Result<(HostTensor, HostTensor), ReferenceError> {
    const OP: &str = "quantize_int8";
    let Some((&d, lead)) = x.shape.split_last() else {
        return Err(err(OP, "x must have at least one dim"));
    };
    let xf = float_row_f32(x, OP)?;
    let mut q = HostTensor::zeros(DType::Int8, &x.shape);
    let mut scale = HostTensor::zeros(DType::Float32, lead);
    if d > 0 {
        for (r, row) in xf.chunks_exact(d).enumerate() {
            let (qr, s) = quantize_int8_row(row);
            for (j, v) in qr.into_iter().enumerate() {
                q.set_bits(r * d + j, u64::from(v as u8));
            }
            scale.set_bits(r, u64::from(s.to_bits()));
        }
    }
    Ok((q, scale))
}

/// The int8 caches and their per-(slot, head) f32 scales, written in place by
/// [`reshape_and_cache_int8`].
#[derive(Debug)]
pub struct Int8KvCache<'a> {
    /// int8 [num_blocks, block_size, N, Dk]
    pub key: &'a mut HostTensor,
    /// int8 [num_blocks, block_size, N, Dv]
    pub value: &'a mut HostTensor,
    /// float32 [num_blocks, block_size, N] (or with a trailing 1)
    pub key_scale: &'a mut HostTensor,
    /// float32 [num_blocks, block_size, N] (or with a trailing 1)
    pub value_scale: &'a mut HostTensor,
}

/// [`reshape_and_cache`] with dynamic int8 quantisation of every (token, head) row of D
/// ([`quantize_int8_row`]) on the way into the cache; the f32 scale goes to the same
/// (slot, head) of the scale caches. Slot rules and the return value are those of
/// [`reshape_and_cache`].
pub fn reshape_and_cache_int8(
    key: &HostTensor,
    value: &HostTensor,
    cache: Int8KvCache<'_>,
    slots: &HostTensor,
    block_size: usize,
) -> Result<usize, ReferenceError> {
    const OP: &str = "reshape_and_cache_int8";
    let g = check_cache_shapes(OP, key, value, cache.key, cache.value, slots, block_size)?;
    if cache.key.dtype != DType::Int8 || cache.value.dtype != DType::Int8 {
        return Err(err(OP, "key_cache and value_cache must be int8"));
    }
    let nb = cache.key.shape[0];
    for (name, s) in [("key_scale", &*cache.key_scale), ("value_scale", &*cache.value_scale)] {
        let ok_shape = s.shape == [nb, block_size, g.heads] || s.shape == [nb, block_size, g.heads, 1];
        if s.dtype != DType::Float32 || !ok_shape {
            return Err(err(
                OP,
                format!(
                    "{name} must be float32 {}, got {} {}",
                    format_shape(&[nb, block_size, g.heads]),
                    s.dtype,
                    format_shape(&s.shape)
                ),
            ));
        }
    }
    let kf = float_row_f32(key, OP)?;
    let vf = float_row_f32(value, OP)?;
    let (targets, past) = slot_targets(slots, g.cache_slots);
    let parts: [(&[f32], &mut HostTensor, &mut HostTensor, usize); 2] =
        [(&kf, cache.key, cache.key_scale, g.key_dim), (&vf, cache.value, cache.value_scale, g.value_dim)];
    for (src, data, scales, d) in parts {
        for i in 0..g.tokens {
            let Some(s) = targets[i] else { continue };
            for h in 0..g.heads {
                let row = &src[(i * g.heads + h) * d..(i * g.heads + h + 1) * d];
                let (q, scale) = quantize_int8_row(row);
                let base = (s * g.heads + h) * d;
                for (j, v) in q.into_iter().enumerate() {
                    data.set_bits(base + j, u64::from(v as u8));
                }
                scales.set_bits(s * g.heads + h, u64::from(scale.to_bits()));
            }
        }
    }
    Ok(past)
}

/// x̂ = q·scale in f64 (exact: an 8-bit times a 24-bit significand), with one f32 scale per
/// row of q's last dim; `scale.numel()` must be q.numel() / D.
pub fn dequant_int8(q: &HostTensor, scale: &HostTensor) -> Result<Vec<f64>, ReferenceError> {
    const OP: &str = "dequant_int8";
    if q.dtype != DType::Int8 {
        return Err(err(OP, format!("q must be int8, got {}", q.dtype)));
    }
    let d = q.shape.last().copied().unwrap_or(1);
    let rows = q.numel().checked_div(d).unwrap_or(0);
    if scale.numel() != rows && d != 0 {
        return Err(err(
            OP,
            format!(
                "scale {} must hold one value per row of q {} ({rows})",
                format_shape(&scale.shape),
                format_shape(&q.shape)
            ),
        ));
    }
    let qs = q.to_f64();
    let ss = scale.to_f64();
    Ok(qs.iter().enumerate().map(|(i, v)| v * ss[i / d]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutes_are_bit_exact_inverses() {
        // Each element's bits encode its BSND index, so the mapping is checked exactly; the
        // patterns include bf16 NaNs with payloads (0x7f81.., 0xff..), which must survive.
        let (b, s, n, d) = (2, 3, 4, 5);
        let bits: Vec<u64> = (0..b * s * n * d).map(|i| 0x7f00 + i as u64 * 0x101).collect();
        let x = HostTensor::from_bits(DType::BFloat16, &[b, s, n, d], &bits);
        let y = bsnd_to_bnsd(&x).unwrap();
        assert_eq!(y.shape, vec![b, n, s, d]);
        for ib in 0..b {
            for is in 0..s {
                for i_n in 0..n {
                    for id in 0..d {
                        let src = ((ib * s + is) * n + i_n) * d + id;
                        let dst = ((ib * n + i_n) * s + is) * d + id;
                        assert_eq!(y.bits(dst), x.bits(src));
                    }
                }
            }
        }
        assert_eq!(bnsd_to_bsnd(&y).unwrap(), x);
        assert!(bsnd_to_bnsd(&HostTensor::zeros(DType::Float16, &[2, 3])).is_err());
    }

    fn seq(dtype: DType, shape: &[usize], start: f64) -> HostTensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|i| start + i as f64).collect();
        HostTensor::from_f64(dtype, shape, &v)
    }

    #[test]
    fn reshape_and_cache_slot_rules() {
        // T = 4 tokens, N = 2 heads, Dk = 3, Dv = 2; 2 blocks of 2 slots.
        let key = seq(DType::Float16, &[4, 2, 3], 1.0);
        let value = seq(DType::Float16, &[4, 2, 2], 100.0);
        let sentinel = -7.0;
        let mut kc = HostTensor::from_f64(DType::Float16, &[2, 2, 2, 3], &[sentinel; 24]);
        let mut vc = HostTensor::from_f64(DType::Float16, &[2, 2, 2, 2], &[sentinel; 16]);
        // token 0 → slot 3 (block 1, offset 1); token 1 padding; token 2 → slot 0; token 3 is
        // past the cache (4 slots).
        let slots = HostTensor::from_i64(DType::Int32, &[4], &[3, -1, 0, 4]);
        let past = reshape_and_cache(&key, &value, &mut kc, &mut vc, &slots, 2).unwrap();
        assert_eq!(past, 1);
        let k = kc.to_f64();
        assert_eq!(&k[18..24], &key.to_f64()[0..6]); // slot 3
        assert_eq!(&k[0..6], &key.to_f64()[12..18]); // slot 0
        assert!(k[6..18].iter().all(|&v| v == sentinel)); // slots 1, 2 untouched
        let v = vc.to_f64();
        assert_eq!(&v[12..16], &value.to_f64()[0..4]);
        assert_eq!(&v[0..4], &value.to_f64()[8..12]);
        assert!(v[4..12].iter().all(|&x| x == sentinel));
    }

    #[test]
    fn duplicate_slots_last_token_wins() {
        let key = seq(DType::Float32, &[2, 1, 2], 1.0);
        let value = seq(DType::Float32, &[2, 1, 2], 10.0);
        let mut kc = HostTensor::zeros(DType::Float32, &[1, 4, 1, 2]);
        let mut vc = HostTensor::zeros(DType::Float32, &[1, 4, 1, 2]);
        let slots = HostTensor::from_i64(DType::Int64, &[2], &[1, 1]);
        assert_eq!(reshape_and_cache(&key, &value, &mut kc, &mut vc, &slots, 4).unwrap(), 0);
        assert_eq!(&kc.to_f64()[2..4], &[3.0, 4.0]);
        assert_eq!(&vc.to_f64()[2..4], &[12.0, 13.0]);
    }

    #[test]
    fn reshape_and_cache_rejects_mismatches() {
        let key = HostTensor::zeros(DType::Float16, &[2, 1, 4]);
        let mut kc = HostTensor::zeros(DType::Float16, &[2, 4, 1, 4]);
        let mut vc = HostTensor::zeros(DType::Float16, &[2, 4, 1, 4]);
        let slots = HostTensor::zeros(DType::Int32, &[2]);
        // block_size disagrees with the cache
        assert!(reshape_and_cache(&key, &key, &mut kc, &mut vc, &slots, 8).is_err());
        // float slots
        let fslots = HostTensor::zeros(DType::Float32, &[2]);
        assert!(reshape_and_cache(&key, &key, &mut kc, &mut vc, &fslots, 4).is_err());
        // dtype mismatch between key and cache
        let key32 = HostTensor::zeros(DType::Float32, &[2, 1, 4]);
        let err = reshape_and_cache(&key32, &key32, &mut kc, &mut vc, &slots, 4).unwrap_err();
        assert!(err.to_string().contains("must share dtypes"));
    }

    #[test]
    fn int8_row_quantisation() {
        // torch_npu.npu_dynamic_quant doc example (op-semantics §4.4): fp16 [0.7261, 0.3726,
        // 0.9126] → y [101, 52, 127], scale ≈ 0.0072. As fp16 the inputs are 0.72607421875,
        // 0.37255859375, 0.91259765625; 127·x/absmax = 101.04…, 51.85…, 127.
        let x = HostTensor::from_f64(DType::Float16, &[1, 3], &[0.7261, 0.3726, 0.9126]);
        let (q, s) = quantize_int8(&x).unwrap();
        assert_eq!(q.to_i64(), vec![101, 52, 127]);
        assert_eq!(s.shape, vec![1]);
        assert_eq!(x.get_f64(2), 0.912_597_656_25);
        assert_eq!(s.get_f64(0), f64::from(x.get_f64(2) as f32 / 127.0));
        approx::assert_abs_diff_eq!(s.get_f64(0), 0.0072, epsilon = 5e-5);

        // absmax 127 makes x·127/absmax = x: exact ties go to even.
        let (q, scale) = quantize_int8_row(&[127.0, 0.5, 1.5, 2.5, -0.5, -2.5, -126.5]);
        assert_eq!(q, vec![127, 0, 2, 2, 0, -2, -126]);
        assert_eq!(scale, 1.0);
        // All-zero row.
        assert_eq!(quantize_int8_row(&[0.0, -0.0]), (vec![0, 0], 0.0));
        // Symmetric range: −absmax maps to −127, never −128.
        assert_eq!(quantize_int8_row(&[-3.0, 1.0]).0, vec![-127, 42]);
    }

    #[test]
    fn dequant_is_q_times_scale() {
        let q = HostTensor::from_i64(DType::Int8, &[2, 2], &[127, -64, 0, 1]);
        let s = HostTensor::from_f64(DType::Float32, &[2], &[0.5, 0.25]);
        assert_eq!(dequant_int8(&q, &s).unwrap(), vec![63.5, -32.0, 0.0, 0.25]);
        let s_bad = HostTensor::zeros(DType::Float32, &[3]);
        assert!(dequant_int8(&q, &s_bad).is_err());
    }

    #[test]
    fn int8_cache_writes_rows_and_scales() {
        // 2 tokens, 2 heads, D = 4; one block of 2 slots. Token 0 → slot 1, token 1 → slot 0.
        let kv: Vec<f64> = vec![
            1.0, -2.0, 4.0, 0.5, // t0 h0
            0.0, 0.0, 0.0, 0.0, // t0 h1 (all zero)
            -8.0, 2.0, 1.0, 3.0, // t1 h0
            0.25, 0.125, -0.0625, 0.03125, // t1 h1
        ];
        let key = HostTensor::from_f64(DType::BFloat16, &[2, 2, 4], &kv);
        let value = HostTensor::from_f64(DType::BFloat16, &[2, 2, 4], &kv);
        let mut kc = HostTensor::zeros(DType::Int8, &[1, 2, 2, 4]);
        let mut vc = HostTensor::zeros(DType::Int8, &[1, 2, 2, 4]);
        let mut ks = HostTensor::zeros(DType::Float32, &[1, 2, 2]);
        let mut vs = HostTensor::zeros(DType::Float32, &[1, 2, 2, 1]);
        let slots = HostTensor::from_i64(DType::Int64, &[2], &[1, 0]);
        let cache = Int8KvCache { key: &mut kc, value: &mut vc, key_scale: &mut ks, value_scale: &mut vs };
        assert_eq!(reshape_and_cache_int8(&key, &value, cache, &slots, 2).unwrap(), 0);
        // Slot 0 holds token 1: h0 absmax 8 → q = round(127·x/8) = [-127, 32 (31.75), 16
        // (15.875), 48 (47.625)]; h1 absmax 0.25 → [127, 64 (63.5 → even 64), -32 (-31.75),
        // 16 (15.875)].
        assert_eq!(kc.to_i64()[..8], [-127, 32, 16, 48, 127, 64, -32, 16]);
        // Slot 1 holds token 0: h0 absmax 4 → [32 (31.75), -64 (-63.5 → even -64), 127, 16
        // (15.875)]; h1 all zero.
        assert_eq!(kc.to_i64()[8..], [32, -64, 127, 16, 0, 0, 0, 0]);
        assert_eq!(vc, kc);
        let want_scales = [8.0f32 / 127.0, 0.25 / 127.0, 4.0 / 127.0, 0.0];
        for (i, w) in want_scales.iter().enumerate() {
            assert_eq!(ks.get_f64(i), f64::from(*w));
            assert_eq!(vs.get_f64(i), f64::from(*w));
        }
    }
}
