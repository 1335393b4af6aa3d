// Element types and API enums. half and bfloat16_t are 16-bit storage classes: they convert from
// numbers by value (rounding to nearest even, like the NPU's scalar unit and tikicpulib's classes)
// and to float exactly. There is deliberately no half arithmetic operator: scalar expressions
// promote to float, which avoids overload ambiguities and makes every rounding point explicit.
#ifndef OPGEN_TWIN_KERNEL_TYPES_H
#define OPGEN_TWIN_KERNEL_TYPES_H

#include <cstdint>
#include <type_traits>

#include "opgen_twin/kernel/globals.h"
#include "opgen_twin/kernel/numeric.h"

namespace opgen_twin {

// Shared body of half and bfloat16_t, selected by the format's significand width.
template <int Precision>
class Float16Storage {
    static constexpr num::Format F = Precision == num::kHalf.precision ? num::kHalf : num::kBf16;


public:
    Float16Storage() = default;
    Float16Storage(float value) : bits_(round(value)) {}
    Float16Storage(double value) : bits_(round(value)) {}
    template <typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
    Float16Storage(I value) : bits_(round(static_cast<long double>(value))) {}

    operator float() const { return static_cast<float>(num::decode16(bits_, F)); }

    static Float16Storage from_bits(uint16_t bits) {
        Float16Storage out;
        out.bits_ = bits;
        return out;
    }
    uint16_t bits() const { return bits_; }
    long double exact() const { return num::decode16(bits_, F); }

private:
    static uint16_t round(long double v) { return num::encode16(num::round_to_format(v, F, num::Mode::Rint), F); }
    uint16_t bits_ = 0;
};

}  // namespace opgen_twin

using half = opgen_twin::Float16Storage<opgen_twin::num::kHalf.precision>;
using bfloat16_t = opgen_twin::Float16Storage<opgen_twin::num::kBf16.precision>;

static_assert(sizeof(half) == 2 && std::is_trivially_copyable<half>::value, "half must be 16-bit POD-like storage");
static_assert(sizeof(bfloat16_t) == 2 && std::is_trivially_copyable<bfloat16_t>::value, "bf16 storage");

namespace AscendC {

enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;

enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

// Event types are named source-pipe_destination-pipe; the order matters to code that indexes by it.
enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};

using TEventID = int8_t;

// The twin has no TensorTrait, so the primitive type of an element type is itself.
template <typename T>
using PrimT = T;

template <typename T, typename U>
struct IsSameType : std::is_same<T, U> {};

constexpr uint16_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr int32_t MAX_REPEAT_TIMES = 255;
// The mask argument of a level-0 call with isSetMask = false (CANN 8.1 impl/kernel_reg.h).
constexpr uint64_t MASK_PLACEHOLDER = 0;
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr uint8_t DEFAULT_DATA_COPY_NBURST = 1;
constexpr uint8_t DEFAULT_DATA_COPY_STRIDE = 0;

// Integer helpers CANN 8.1 declares in namespace AscendC (impl/utils/kernel_utils_ceil_oom_que.h,
// reached from kernel_operator.h), with its parameter types. A kernel sees them through `using
// namespace AscendC`, so a helper of its own with one of these names and parameters makes the
// call ambiguous on the NPU (grpo_advantage's AlignUp did, in check-cann): declared here too, the
// twin build fails the same way (twin test cf_align_up_ambiguous.cpp).
__aicore__ inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t AlignUp(uint32_t a, uint32_t b) { return DivCeil(a, b) * b; }
__aicore__ constexpr inline uint32_t ConstCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Ceil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

}  // namespace AscendC

namespace opgen_twin {

// Element type codes, used in the A2 dtype tables and in messages.
enum class DType : uint8_t { F16, BF16, F32, F64, I8, U8, I16, U16, I32, U32, I64, U64, Other };

template <typename T>
constexpr DType dtype_of() {
    if (std::is_same<T, half>::value) return DType::F16;
    if (std::is_same<T, bfloat16_t>::value) return DType::BF16;
    if (std::is_same<T, float>::value) return DType::F32;
    if (std::is_same<T, double>::value) return DType::F64;
    if (std::is_same<T, int8_t>::value) return DType::I8;
    if (std::is_same<T, uint8_t>::value) return DType::U8;
    if (std::is_same<T, int16_t>::value) return DType::I16;
    if (std::is_same<T, uint16_t>::value) return DType::U16;
    if (std::is_same<T, int32_t>::value) return DType::I32;
    if (std::is_same<T, uint32_t>::value) return DType::U32;
    if (std::is_same<T, int64_t>::value) return DType::I64;
    if (std::is_same<T, uint64_t>::value) return DType::U64;
    return DType::Other;
}

const char* dtype_name(DType t);

template <typename T>
constexpr bool is_float16_storage() {
    return std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value;
}

// The exact value of any element type, for rounding code.
template <typename T>
inline long double exact_value(T v) {
    if constexpr (is_float16_storage<T>()) {
        return v.exact();
    } else {
        return static_cast<long double>(v);
    }
}

}  // namespace opgen_twin

#endif
