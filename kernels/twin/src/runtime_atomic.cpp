// Atomic copy-outs (SetAtomicAdd / SetAtomicNone).
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
using namespace rt;

namespace kern {

// ---------------------------------------------------------------- atomic
//
// SetAtomicAdd<T>() (CANN 8.1 impl/dav_c220/kernel_operator_set_atomic_impl.h: set_atomic_add()
// then SetAtomicTypeImpl<T>) makes the following copy-outs to GM add element-wise in T instead of
// storing, until SetAtomicNone(). The A2 types are half / float / int16_t / int32_t / int8_t /
// bfloat16_t (the ASCENDC_ASSERT there; the SetAtomicAdd API reference lists the same for Atlas
// A2, data path VECOUT/L0C/L1 -> GM). The twin models the vector core's path: DataCopy and
// DataCopyPad UB -> GM (MTE3); scalar GlobalTensor stores are not affected.
// Numerics (assumptions, the docs do not say): a float add is one IEEE single add, half and
// bfloat16_t adds are exact sums rounded once to nearest even (as the vector adds, vector_common.h);
// an integer add that leaves its type's range fails, since whether the hardware wraps or
// saturates is not documented. Cross-core order: see "cores".

namespace {
bool atomic_dtype_ok(DType t) {
    return t == DType::F16 || t == DType::F32 || t == DType::I16 || t == DType::I32 || t == DType::I8 ||
           t == DType::BF16;
}

template <typename I>
void add_int(const char* api, uint8_t* to, const uint8_t* from, uint64_t bytes, uint64_t gm_off, const char* name) {
    for (uint64_t i = 0; i < bytes; i += sizeof(I)) {
        const int64_t v = int64_t(kern::load<I>(to + i)) + int64_t(kern::load<I>(from + i));
        if (v < int64_t(std::numeric_limits<I>::min()) || v > int64_t(std::numeric_limits<I>::max())) {
            fail(api, "atomic add overflows the integer type",
                 "GM '" + std::string(name) + "' byte " + str(gm_off + i) + ": " + str(int64_t(kern::load<I>(to + i))) +
                     " + " + str(int64_t(kern::load<I>(from + i))) + " leaves " +
                     dtype_name(dtype_of<I>()) + " (the A2 docs do not say whether atomic adds wrap or saturate)");
        }
        kern::store<I>(to + i, I(v));
    }
}

template <typename F>
void add_float16(uint8_t* to, const uint8_t* from, uint64_t bytes) {
    for (uint64_t i = 0; i < bytes; i += 2) {
        const F a = kern::load<F>(to + i), b = kern::load<F>(from + i);
        kern::store<F>(to + i, F(static_cast<double>(a.exact() + b.exact())));
    }
}
}  // namespace

void atomic_set(const char* api, DType t, bool type_only, const Here& here) {
    Core& c = core(api);
    if (!atomic_dtype_ok(t)) {
        fail(api, "atomic dtype not supported on A2",
             std::string("T = ") + dtype_name(t) + " at " + base_name(here.file) + ":" + str(here.line) +
                 "; dav_c220 supports half, float, int16_t, int32_t, int8_t and bfloat16_t");
    }
    c.atomic_type = t;
    if (!type_only) {
        c.atomic_add = true;
        c.atomic_at = here;
    }
}

void atomic_none() { core("SetAtomicNone").atomic_add = false; }

void copy_out_row(const char* api, uint8_t* to, const uint8_t* from, uint64_t bytes, DType t) {
    Core& c = core(api);
    if (!c.atomic_add) {
        std::memcpy(to, from, bytes);
        return;
    }
    if (t != c.atomic_type) {
        fail(api, "atomic copy-out dtype differs from the atomic mode's",
             std::string("a copy-out of ") + dtype_name(t) + " while SetAtomicAdd<" + dtype_name(c.atomic_type) +
                 "> (at " + base_name(c.atomic_at.file) + ":" + str(c.atomic_at.line) +
                 ") is on: the hardware would add the bytes as " + dtype_name(c.atomic_type));
    }
    const GmBuffer* g = gm_find(to, bytes);
    const char* name = g != nullptr ? g->name : "?";
    const uint64_t off = g != nullptr ? uint64_t(to - g->base) : 0;
    switch (t) {
        case DType::F32:
            for (uint64_t i = 0; i < bytes; i += 4) store<float>(to + i, load<float>(to + i) + load<float>(from + i));
            counters().float_atomic_adds += bytes / 4;
            break;
        case DType::F16:
            add_float16<half>(to, from, bytes);
            counters().float_atomic_adds += bytes / 2;
            break;
        case DType::BF16:
            add_float16<bfloat16_t>(to, from, bytes);
            counters().float_atomic_adds += bytes / 2;
            break;
        case DType::I8: add_int<int8_t>(api, to, from, bytes, off, name); break;
        case DType::I16: add_int<int16_t>(api, to, from, bytes, off, name); break;
        case DType::I32: add_int<int32_t>(api, to, from, bytes, off, name); break;
        default:
            // twin rule untested: atomic_set refuses every other dtype, so no copy-out can reach this
            fail(api, "twin: atomic add of an unchecked dtype", dtype_name(t));
    }
}

}  // namespace kern
}  // namespace opgen_twin
