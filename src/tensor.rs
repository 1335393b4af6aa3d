//! Host-side tensors: raw little-endian element bytes in C order, plus the one rounding rule
//! (round-to-nearest-even, once, from f64) every reference and input generator uses.
//!
//! Why the rounding is written here and not taken from `half`: `half` 2.7's `f16::from_f64` and
//! `bf16::from_f64` are not correctly rounded from f64. The portable fallbacks drop the low 32
//! bits of the f64 mantissa before rounding (a value just above a tie is rounded as a tie), and
//! the x86 F16C path converts through f32 first (double rounding). Example: 1 + 2^-11 + 2^-40
//! must round to 1 + 2^-10 in f16; both `half` paths give 1.0. [`round_to_dtype`] rounds once,
//! directly from the f64, and the result is then exactly representable, so `half`'s exact
//! conversions finish the job.

use crate::dtype::DType;
use half::{bf16, f16};
use std::fmt;

/// A tensor on the host: `dtype`, `shape` (C order) and the elements' little-endian bytes.
/// A rank-0 tensor (`shape == []`) holds one element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

/// The byte buffer does not match `dtype` × `shape`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSizeError {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub expected_bytes: usize,
    pub actual_bytes: usize,
}

impl fmt::Display for TensorSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a {} tensor of shape {} needs {} bytes, got {}",
            self.dtype,
            format_shape(&self.shape),
            self.expected_bytes,
            self.actual_bytes
        )
    }
}

impl std::error::Error for TensorSizeError {}

impl HostTensor {
    /// All elements zero (+0.0 for floats).
    pub fn zeros(dtype: DType, shape: &[usize]) -> HostTensor {
        HostTensor { dtype, shape: shape.to_vec(), bytes: vec![0; shape_numel(shape) * dtype.size_bytes()] }
    }

    /// Rounds each value once (RNE) to `dtype`; see [`round_to_dtype`] for the rule.
    ///
    /// # Panics
    /// When `values.len()` differs from the element count of `shape` (a programming error).
    pub fn from_f64(dtype: DType, shape: &[usize], values: &[f64]) -> HostTensor {
        let numel = shape_numel(shape);
        assert_eq!(
            values.len(),
            numel,
            "HostTensor::from_f64: {} values for shape {} ({numel} elements)",
            values.len(),
            format_shape(shape)
        );
        let mut t = HostTensor::zeros(dtype, shape);
        for (i, &v) in values.iter().enumerate() {
            t.set_f64(i, v);
        }
        t
    }

    /// Builds from raw bit patterns, one per element; only the low `size_bytes` bytes of each
    /// `u64` are used (so an i8 -1 may be given as `0xff` or as `u64::MAX`).
    ///
    /// # Panics
    /// When `bits.len()` differs from the element count of `shape`.
    pub fn from_bits(dtype: DType, shape: &[usize], bits: &[u64]) -> HostTensor {
        let numel = shape_numel(shape);
        assert_eq!(
            bits.len(),
            numel,
            "HostTensor::from_bits: {} values for shape {} ({numel} elements)",
            bits.len(),
            format_shape(shape)
        );
        let mut t = HostTensor::zeros(dtype, shape);
        for (i, &b) in bits.iter().enumerate() {
            t.set_bits(i, b);
        }
        t
    }

    /// Exact integers; each is saturated to the dtype's range (for int dtypes) or rounded (floats).
    pub fn from_i64(dtype: DType, shape: &[usize], values: &[i64]) -> HostTensor {
        let numel = shape_numel(shape);
        assert_eq!(
            values.len(),
            numel,
            "HostTensor::from_i64: {} values for shape {} ({numel} elements)",
            values.len(),
            format_shape(shape)
        );
        let mut t = HostTensor::zeros(dtype, shape);
        for (i, &v) in values.iter().enumerate() {
            match dtype {
                DType::Int8 => t.set_bits(i, v.clamp(i8::MIN.into(), i8::MAX.into()) as u64),
                DType::Int32 => t.set_bits(i, v.clamp(i32::MIN.into(), i32::MAX.into()) as u64),
                DType::Int64 => t.set_bits(i, v as u64),
                _ => t.set_f64(i, v as f64),
            }
        }
        t
    }

    /// Takes ownership of raw bytes, checking their length against `dtype` × `shape`.
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: Vec<u8>) -> Result<HostTensor, TensorSizeError> {
        let expected_bytes = shape_numel(shape) * dtype.size_bytes();
        if bytes.len() != expected_bytes {
            return Err(TensorSizeError {
                dtype,
                shape: shape.to_vec(),
                expected_bytes,
                actual_bytes: bytes.len(),
            });
        }
        Ok(HostTensor { dtype, shape: shape.to_vec(), bytes })
    }

    /// Number of elements (1 for rank 0).
    pub fn numel(&self) -> usize {
        shape_numel(&self.shape)
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The raw bytes of element `i` (flat C-order index).
    pub fn element_bytes(&self, i: usize) -> &[u8] {
        let w = self.dtype.size_bytes();
        &self.bytes[i * w..(i + 1) * w]
    }

    /// The bit pattern of element `i`, zero-extended (an i8 -1 reads as `0xff`).
    pub fn bits(&self, i: usize) -> u64 {
        let mut buf = [0u8; 8];
        let src = self.element_bytes(i);
        buf[..src.len()].copy_from_slice(src);
        u64::from_le_bytes(buf)
    }

    /// Stores the low `size_bytes` bytes of `bits` as element `i`.
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        let w = self.dtype.size_bytes();
        self.bytes[i * w..(i + 1) * w].copy_from_slice(&bits.to_le_bytes()[..w]);
    }

    /// Element `i` widened exactly to f64 (i64 beyond ±2^53 is the only inexact case).
    pub fn get_f64(&self, i: usize) -> f64 {
        bits_to_f64(self.dtype, self.bits(i))
    }

    /// Rounds `value` once to the dtype and stores it as element `i`.
    pub fn set_f64(&mut self, i: usize, value: f64) {
        let b = f64_to_bits(self.dtype, value);
        self.set_bits(i, b);
    }

    /// Element `i` as an integer: exact for int dtypes; floats are truncated toward zero
    /// (saturating, NaN → 0).
    pub fn get_i64(&self, i: usize) -> i64 {
        let b = self.bits(i);
        match self.dtype {
            DType::Int8 => i64::from(b as u8 as i8),
            DType::Int32 => i64::from(b as u32 as i32),
            DType::Int64 => b as i64,
            _ => self.get_f64(i) as i64,
        }
    }

    /// All elements widened exactly to f64.
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.numel()).map(|i| self.get_f64(i)).collect()
    }

    /// All elements as integers (see [`HostTensor::get_i64`]).
    pub fn to_i64(&self) -> Vec<i64> {
        (0..self.numel()).map(|i| self.get_i64(i)).collect()
    }
}

/// Product of the dims (1 for rank 0).
pub fn shape_numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// C-order strides in elements.
pub fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The multi-dimensional index of flat C-order index `flat`.
pub fn unravel_index(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1);
        index[d] = flat % n;
        flat /= n;
    }
    index
}

/// `(2, 3, 4)`-style text for messages; `()` for rank 0 and `(5,)` for rank 1.
pub fn format_shape(shape: &[usize]) -> String {
    match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// Parameters of a binary floating-point format: explicit mantissa bits, min normal exponent,
/// max exponent.
struct FloatFormat {
    mantissa_bits: i32,
    emin: i32,
    emax: i32,
}

const F16_FORMAT: FloatFormat = FloatFormat { mantissa_bits: 10, emin: -14, emax: 15 };
const BF16_FORMAT: FloatFormat = FloatFormat { mantissa_bits: 7, emin: -126, emax: 127 };
const F32_FORMAT: FloatFormat = FloatFormat { mantissa_bits: 23, emin: -126, emax: 127 };

/// 2^k for k in the f64 normal exponent range.
fn pow2(k: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// Rounds a finite f64 to the nearest value of `fmt` (ties to even), overflowing to ±Inf the way
/// IEEE 754 RNE does (|x| ≥ max + ½ulp → Inf). Subnormals of `fmt` are handled; signed zero is
/// kept. Non-finite values pass through.
fn round_to_format(x: f64, fmt: &FloatFormat) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    // f64 subnormals are far below every target's subnormal range: any exponent < emin will do.
    let e = if biased == 0 { -1023 } else { biased - 1023 };
    // The spacing of `fmt`'s values in x's binade (fixed below the normal range).
    let quantum_exp = e.max(fmt.emin) - fmt.mantissa_bits;
    // x / 2^q is exact (a power-of-two scaling that stays normal); the integer part's parity
    // is the parity of the mantissa's last bit, so rounding it ties-to-even is RNE.
    let scaled = x * pow2(-quantum_exp);
    let rounded = scaled.round_ties_even() * pow2(quantum_exp);
    if rounded.abs() >= pow2(fmt.emax + 1) {
        f64::INFINITY.copysign(x)
    } else {
        rounded
    }
}

/// `value` rounded once (RNE) to `dtype`, returned as f64 (exactly representable in `dtype`).
/// Floats: IEEE round-to-nearest-even with overflow to ±Inf; NaN stays NaN. Ints: round half
/// to even, then saturate to the dtype's range; NaN becomes 0.
pub fn round_to_dtype(dtype: DType, value: f64) -> f64 {
    match dtype {
        DType::Float16 => round_to_format(value, &F16_FORMAT),
        DType::BFloat16 => round_to_format(value, &BF16_FORMAT),
        DType::Float32 => round_to_format(value, &F32_FORMAT),
        DType::Int8 | DType::Int32 | DType::Int64 => bits_to_f64(dtype, f64_to_bits(dtype, value)),
    }
}

/// The bit pattern (zero-extended to u64) of `value` rounded once to `dtype`.
/// NaN keeps its sign and the top bits of its payload, and is made quiet.
pub fn f64_to_bits(dtype: DType, value: f64) -> u64 {
    match dtype {
        DType::Float16 | DType::BFloat16 | DType::Float32 if value.is_nan() => nan_bits(dtype, value),
        // The rounded value is exactly representable, so the f32 and half conversions below
        // are exact (no second rounding).
        DType::Float16 => u64::from(f16::from_f32(round_to_dtype(dtype, value) as f32).to_bits()),
        DType::BFloat16 => u64::from(bf16::from_f32(round_to_dtype(dtype, value) as f32).to_bits()),
        DType::Float32 => u64::from((round_to_dtype(dtype, value) as f32).to_bits()),
        // `as` from f64 saturates and maps NaN to 0.
        DType::Int8 => u64::from(value.round_ties_even() as i8 as u8),
        DType::Int32 => u64::from(value.round_ties_even() as i32 as u32),
        DType::Int64 => value.round_ties_even() as i64 as u64,
    }
}

fn nan_bits(dtype: DType, value: f64) -> u64 {
    let b = value.to_bits();
    let sign = b >> 63;
    let payload = b & ((1u64 << 52) - 1);
    match dtype {
        DType::Float16 => (sign << 15) | 0x7c00 | 0x0200 | (payload >> 42),
        DType::BFloat16 => (sign << 15) | 0x7f80 | 0x0040 | (payload >> 45),
        _ => (sign << 31) | 0x7f80_0000 | 0x0040_0000 | (payload >> 29),
    }
}

/// The value of a bit pattern of `dtype`, widened exactly to f64.
pub fn bits_to_f64(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::Float16 => f64::from(f16::from_bits(bits as u16).to_f32()),
        DType::BFloat16 => f64::from(bf16::from_bits(bits as u16).to_f32()),
        DType::Float32 => f64::from(f32::from_bits(bits as u32)),
        DType::Int8 => f64::from(bits as u8 as i8),
        DType::Int32 => f64::from(bits as u32 as i32),
        DType::Int64 => bits as i64 as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_bits(x: f64) -> u16 {
        f64_to_bits(DType::Float16, x) as u16
    }

    fn bf16_bits(x: f64) -> u16 {
        f64_to_bits(DType::BFloat16, x) as u16
    }

    #[test]
    fn f16_ties_round_to_even() {
        let p = pow2;
        // 1 + 2^-11 is halfway between 1 (mantissa 0, even) and 1 + 2^-10 (odd).
        assert_eq!(f16_bits(1.0 + p(-11)), 0x3c00);
        // 1 + 3·2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
        assert_eq!(f16_bits(1.0 + 3.0 * p(-11)), 0x3c02);
        // Negative tie keeps the sign.
        assert_eq!(f16_bits(-(1.0 + p(-11))), 0xbc00);
    }

    #[test]
    fn f16_rounds_once_from_f64() {
        let p = pow2;
        // Just above the tie: must round up. The sticky bit 2^-40 lies in the f64 bits that
        // half's fallback discards and below f32's precision (F16C path): both give 0x3c00.
        assert_eq!(f16_bits(1.0 + p(-11) + p(-40)), 0x3c01);
        // Sticky bit below f32 precision but inside the high f64 word.
        assert_eq!(f16_bits(1.0 + p(-11) + p(-30)), 0x3c01);
        // Just below the tie: down.
        assert_eq!(f16_bits(1.0 + p(-11) - p(-40)), 0x3c00);
    }

    #[test]
    fn f16_overflow_and_subnormals() {
        let p = pow2;
        assert_eq!(f16_bits(65504.0), 0x7bff);
        // max + ulp/2 (ulp at max is 32): the tie goes to the even neighbour, which is 2^16: Inf.
        assert_eq!(f16_bits(65520.0), 0x7c00);
        assert_eq!(f16_bits(65519.999), 0x7bff);
        assert_eq!(f16_bits(-65520.0), 0xfc00);
        assert_eq!(f16_bits(1e300), 0x7c00);
        // Smallest subnormal 2^-24; 2^-25 is a tie between 0 (even) and 2^-24.
        assert_eq!(f16_bits(p(-24)), 0x0001);
        assert_eq!(f16_bits(p(-25)), 0x0000);
        assert_eq!(f16_bits(p(-25) + p(-60)), 0x0001);
        // 3·2^-25 is a tie between 2^-24 (odd) and 2^-23 (even).
        assert_eq!(f16_bits(3.0 * p(-25)), 0x0002);
        // Rounding up out of the subnormal range into the smallest normal 2^-14.
        assert_eq!(f16_bits(p(-14) - p(-26)), 0x0400);
        assert_eq!(f16_bits(-1e-300), 0x8000);
        assert_eq!(f16_bits(-0.0), 0x8000);
        assert_eq!(f16_bits(f64::NEG_INFINITY), 0xfc00);
        let nan = f16_bits(f64::NAN);
        assert_eq!(nan & 0x7c00, 0x7c00);
        assert_ne!(nan & 0x03ff, 0);
    }

    #[test]
    fn bf16_rounding() {
        let p = pow2;
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(1.0 + p(-8)), 0x3f80); // tie → even (1.0)
        assert_eq!(bf16_bits(1.0 + 3.0 * p(-8)), 0x3f82); // tie → even
        assert_eq!(bf16_bits(1.0 + p(-8) + p(-40)), 0x3f81); // sticky bit in the low f64 word
                                                             // Max bf16 (2 - 2^-7)·2^127; halfway to 2^128 rounds to Inf.
        let max = (2.0 - p(-7)) * p(127);
        assert_eq!(bf16_bits(max), 0x7f7f);
        assert_eq!(bf16_bits(max + p(127 - 8)), 0x7f80);
        assert_eq!(bf16_bits(max + p(127 - 8) - p(127 - 30)), 0x7f7f);
        // Smallest bf16 subnormal 2^-133; 2^-134 ties to 0.
        assert_eq!(bf16_bits(p(-133)), 0x0001);
        assert_eq!(bf16_bits(p(-134)), 0x0000);
        assert_eq!(bf16_bits(1.5 * p(-133)), 0x0002);
    }

    #[test]
    fn f32_matches_native_cast() {
        // Rust's f64 → f32 `as` is IEEE RNE; the generic rounding must agree with it.
        let p = pow2;
        let cases = [
            1.0 + p(-24),
            1.0 + 3.0 * p(-24),
            1.0 + p(-24) + p(-70),
            3.4028235677973366e38,
            3.4028235e38 * 1.0000001,
            p(-149),
            p(-150),
            1.5 * p(-149),
            -0.1,
            1e-45,
            123456.789,
        ];
        for x in cases {
            assert_eq!(round_to_dtype(DType::Float32, x), f64::from(x as f32), "x = {x:e}");
            assert_eq!(f64_to_bits(DType::Float32, x), u64::from((x as f32).to_bits()));
        }
    }

    #[test]
    fn int_rounding_half_even_and_saturation() {
        let t =
            HostTensor::from_f64(DType::Int8, &[8], &[0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, f64::NAN]);
        assert_eq!(t.to_i64(), vec![0, 2, 2, 0, -2, 127, -128, 0]);
        let t = HostTensor::from_f64(DType::Int32, &[3], &[1e20, -1e20, 7.5]);
        assert_eq!(t.to_i64(), vec![i64::from(i32::MAX), i64::from(i32::MIN), 8]);
        let t = HostTensor::from_f64(DType::Int64, &[2], &[-3.5, 1e30]);
        assert_eq!(t.to_i64(), vec![-4, i64::MAX]);
        let t = HostTensor::from_i64(DType::Int64, &[2], &[i64::MIN, (1 << 60) + 1]);
        assert_eq!(t.to_i64(), vec![i64::MIN, (1 << 60) + 1]);
        let t = HostTensor::from_i64(DType::Int8, &[2], &[-200, 5]);
        assert_eq!(t.to_i64(), vec![-128, 5]);
    }

    #[test]
    fn layout_and_widening() {
        let t = HostTensor::from_f64(DType::Float16, &[2, 2], &[1.0, -2.0, 0.5, 65504.0]);
        assert_eq!(t.bytes, vec![0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b]);
        assert_eq!(t.to_f64(), vec![1.0, -2.0, 0.5, 65504.0]);
        assert_eq!(t.numel(), 4);
        assert_eq!(t.rank(), 2);
        let t = HostTensor::from_f64(DType::Float32, &[], &[0.1]);
        assert_eq!(t.numel(), 1);
        assert_eq!(t.get_f64(0), f64::from(0.1f32));
        let t = HostTensor::from_bits(DType::Int8, &[2], &[0xff, u64::MAX]);
        assert_eq!(t.to_i64(), vec![-1, -1]);
        assert_eq!(t.bits(0), 0xff);
        let t = HostTensor::from_bits(DType::BFloat16, &[1], &[0x4049]);
        assert_eq!(t.get_f64(0), 3.140625);
        let z = HostTensor::zeros(DType::Int32, &[2, 0, 3]);
        assert_eq!(z.numel(), 0);
        assert!(z.bytes.is_empty());
    }

    #[test]
    fn from_bytes_checks_size() {
        assert!(HostTensor::from_bytes(DType::Float32, &[2], vec![0; 8]).is_ok());
        let err = HostTensor::from_bytes(DType::Float32, &[2, 3], vec![0; 8]).unwrap_err();
        assert_eq!(err.expected_bytes, 24);
        assert_eq!(err.to_string(), "a float32 tensor of shape (2, 3) needs 24 bytes, got 8");
    }

    #[test]
    fn index_helpers() {
        assert_eq!(c_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(unravel_index(&[2, 3, 4], 23), vec![1, 2, 3]);
        assert_eq!(unravel_index(&[2, 3, 4], 13), vec![1, 0, 1]);
        assert_eq!(unravel_index(&[], 0), Vec::<usize>::new());
        assert_eq!(format_shape(&[]), "()");
        assert_eq!(format_shape(&[5]), "(5,)");
        assert_eq!(format_shape(&[2, 3]), "(2, 3)");
    }

    #[test]
    fn exhaustive_f16_round_trip_and_midpoints() {
        // Every finite f16 survives f64 → f16, and every midpoint between neighbours rounds to
        // the even one (checked on the non-negative half; the sign is symmetric).
        for b in 0u16..0x7bff {
            let v = f64::from(f16::from_bits(b).to_f32());
            assert_eq!(f16_bits(v), b);
            let next = f64::from(f16::from_bits(b + 1).to_f32());
            let mid = (v + next) / 2.0; // exact in f64
            let even = if b % 2 == 0 { b } else { b + 1 };
            assert_eq!(f16_bits(mid), even, "midpoint above {b:#06x}");
        }
    }
}
