// The CPU twin's runtime (runtime.h) and the per-core machinery behind the kernel API
// (opgen_twin/kernel/state.h), split by concern: this file holds failure reporting, the state
// every part shares and the common helpers; runtime_gm.cpp the GM registry and its guards,
// runtime_ub.cpp the UB arena, TPipe/TQue/TBuf and the operand checks, runtime_pipes.cpp the
// pipes' happens-before model and events, runtime_cores.cpp concurrent cores and SyncAll,
// runtime_atomic.cpp atomic copy-outs, runtime_mask.cpp the vector mask register,
// runtime_counters.cpp the counters.
//
// Build with -ffp-contract=off: nothing here may fuse floating-point operations.
#include "opgen_twin/runtime_state.h"

int64_t block_idx = 0;
int64_t block_num = 0;

namespace opgen_twin {
namespace rt {

SocConfig g_soc;
std::deque<GmEntry> g_gm;
// The running core. Outside run_cores it is the one sequential slot; inside, the core that holds
// the baton (run_cores switches it with the baton, so only one thread ever touches it).
Core g_sequential_core;
Core* g_core = &g_sequential_core;
std::map<int64_t, Counters> g_counters;
uint32_t g_epochs = 0;
FailHandler g_fail_handler = nullptr;

const char* const kEventNames[] = {
    "MTE2_MTE1", "MTE1_MTE2", "MTE1_M",    "M_MTE1",   "MTE2_V",    "V_MTE2",    "MTE3_V",    "V_MTE3",   "M_V",
    "V_M",       "V_V",       "MTE3_MTE1", "MTE1_MTE3", "MTE1_V",   "MTE2_M",    "M_MTE2",    "V_MTE1",   "M_FIX",
    "FIX_M",     "MTE3_MTE2", "MTE2_MTE3", "S_V",       "V_S",      "S_MTE2",    "MTE2_S",    "S_MTE3",   "MTE3_S",
    "MTE2_FIX",  "FIX_MTE2",  "FIX_S",     "M_S",       "FIX_MTE3", "MTE1_FIX",  "FIX_MTE1",  "FIX_FIX"};
static_assert(sizeof(kEventNames) / sizeof(kEventNames[0]) == size_t(kEventTypes), "one name per HardEvent");

std::string str(uint64_t v) { return std::to_string(v); }

std::string count_of(uint64_t n, const char* noun) { return str(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%05" PRIx64, v);
    return buf;
}

Core& core(const char* api) {
    if (!g_core->active) fail(api, "called outside a core", "no simulated core is running (begin_core was not called)");
    return *g_core;
}

Counters& counters() { return *core("counter").counters; }

std::string base_name(const char* file) {
    if (file == nullptr) return "?";
    const char* slash = std::strrchr(file, '/');
    return slash != nullptr ? slash + 1 : file;
}

}  // namespace rt

using namespace rt;

void fail(const char* api, const char* rule, const std::string& detail) {
    if (g_fail_handler != nullptr) {
        const std::string where = g_core->active ? "core " + std::to_string(g_core->idx) : std::string("host");
        g_fail_handler(where + ": " + api + ": " + rule + ": " + detail);
    }
    if (g_core->active) {
        std::fprintf(stderr, "opgen-twin: core %" PRId64 ": %s: %s: %s\n", g_core->idx, api, rule, detail.c_str());
    } else {
        std::fprintf(stderr, "opgen-twin: host: %s: %s: %s\n", api, rule, detail.c_str());
    }
    std::fflush(stderr);
    std::fflush(stdout);
    std::exit(EXIT_TWIN_RULE);
}

void set_fail_handler(FailHandler handler) { g_fail_handler = handler; }

void set_soc(const SocConfig& soc) { g_soc = soc; }
const SocConfig& soc() { return g_soc; }

const char* dtype_name(DType t) {
    switch (t) {
        case DType::F16: return "half";
        case DType::BF16: return "bfloat16_t";
        case DType::F32: return "float";
        case DType::F64: return "double";
        case DType::I8: return "int8_t";
        case DType::U8: return "uint8_t";
        case DType::I16: return "int16_t";
        case DType::U16: return "uint16_t";
        case DType::I32: return "int32_t";
        case DType::U32: return "uint32_t";
        case DType::I64: return "int64_t";
        case DType::U64: return "uint64_t";
        case DType::Other: return "an unsupported type";
    }
    return "?";
}

namespace kern {

const char* round_mode_name(num::Mode m) {
    static const char* const names[] = {"CAST_NONE",  "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                        "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    return unsigned(m) < 7 ? names[unsigned(m)] : "an unknown RoundMode";
}

}  // namespace kern
}  // namespace opgen_twin
