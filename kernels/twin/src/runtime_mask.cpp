// The vector mask register of the running core. On dav_c220 a level-0 vector call runs the lanes
// the register enables: with isSetMask = true the API first sets it to its `mask` argument
// (AscendCUtils::SetMask), with isSetMask = false it runs whatever the register holds and the
// argument must be MASK_PLACEHOLDER (the level-0 API references). The TPipe constructor sets all
// lanes in normal mode (InitSocState: set_vector_mask(-1, -1), set_mask_norm), as ResetMask does;
// SetVectorMask sets it. The count forms set counter mode and end with ResetMask/SetMaskNorm
// (impl/dav_c220/*_impl.h), but not every API is known to leave it defined, so after any
// non-level-0 vector API the twin takes it as undefined: an isSetMask = false call then stops
// the run (strict), where the kernel should SetVectorMask first.
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
using namespace rt;
namespace kern {

void mask_set(const char* api, uint64_t high, uint64_t low, bool counter) {
    Core& c = core(api);
    c.vmask[0] = low;
    c.vmask[1] = high;
    c.vmask_known = true;
    c.vmask_counter = counter;
    // The call site when an API call sets it (SetVectorMask, a level-0 call), none for TPipe.
    c.vmask_at = c.pipes.depth > 0 ? c.pipes.cur : Acc{};
    c.vmask_at.api = api;
}

void mask_set_prefix(const char* api, uint64_t lanes) {
    const uint64_t low = lanes >= 64 ? ~uint64_t(0) : (uint64_t(1) << lanes) - 1;
    const uint64_t high = lanes >= 128 ? ~uint64_t(0) : lanes > 64 ? (uint64_t(1) << (lanes - 64)) - 1 : 0;
    mask_set(api, high, low, false);
}

void mask_mode(const char* api, bool counter) {
    Core& c = core(api);
    c.vmask_counter = counter;
    c.vmask_at = c.pipes.cur;
}

uint64_t mask_lanes(const char* api, uint64_t lanes_per_repeat) {
    const Core& c = core(api);
    const std::string last = std::string(c.vmask_at.api ? c.vmask_at.api : "the kernel's start") +
                             (c.vmask_at.file ? " at " + base_name(c.vmask_at.file) + ":" + str(c.vmask_at.line) : "");
    if (!c.vmask_known) {
        fail(api, "isSetMask = false with the vector mask register undefined",
             std::string("at ") + call_site() + ": the call runs the lanes the mask register holds, last changed by " +
                 last + "; set it with SetVectorMask (or ResetMask) before the isSetMask = false calls");
    }
    if (c.vmask_counter) {
        fail(api, "isSetMask = false in counter mask mode not modelled",
             std::string("at ") + call_site() + ": the register is in counter mode (" + last +
                 "); the twin models level-0 calls in normal mode only");
    }
    uint64_t n = 0;
    while (n < lanes_per_repeat && ((c.vmask[n / 64] >> (n % 64)) & 1u) != 0) ++n;
    for (uint64_t i = n; i < lanes_per_repeat; ++i) {
        if (((c.vmask[i / 64] >> (i % 64)) & 1u) != 0 || n == 0) {
            fail(api, "vector mask not a lane prefix",
                 std::string("at ") + call_site() + ": the mask register (set by " + last + ") holds " + hex(c.vmask[1]) +
                     ":" + hex(c.vmask[0]) + "; the twin models masks that enable lanes 0..n-1 of a repeat only");
        }
    }
    if (n == 0) {
        fail(api, "vector mask not a lane prefix",
             std::string("at ") + call_site() + ": the mask register (set by " + last + ") enables no lane");
    }
    return n;
}

}  // namespace kern
}  // namespace opgen_twin
