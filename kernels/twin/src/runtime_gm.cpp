// The twin's GM: the registry of buffers with poisoned guards around each, GM operand checks,
// and the launch workspace (its system part).
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
namespace rt {

std::map<const uint8_t*, std::vector<int32_t>> g_in_place;

void in_place_access(const uint8_t* base, const char* name, uint64_t a, uint64_t b, bool write) {
    auto it = g_in_place.find(base);
    if (it == g_in_place.end() || a >= b) return;
    std::vector<int32_t>& writer = it->second;
    const int32_t core = int32_t(g_core->idx);
    if (write) {
        for (uint64_t i = a; i < b && i < writer.size(); ++i) writer[i] = core + 1;
        return;
    }
    for (uint64_t i = a; i < b && i < writer.size(); ++i) {
        if (writer[i] == 0) continue;
        uint64_t end = i;
        while (end < b && end < writer.size() && writer[end] != 0) ++end;
        const Acc& cur = g_core->pipes.cur;
        fail(cur.api ? cur.api : "?", "in-place input read after it was overwritten",
             "GM '" + std::string(name) + "' bytes [" + str(i) + ", " + str(end) + ") were written by core " +
                 str(uint64_t(writer[i] - 1)) + ", then read by core " + str(uint64_t(core)) + " (" +
                 (cur.api ? cur.api : "?") + " at " + base_name(cur.file) + ":" + str(cur.line) +
                 "): the input and its ref output are one buffer, so the read gets results, not the input " +
                 "(read every byte before it is written: a tile into UB before its results go out)");
    }
}

const GmBuffer* launch_workspace() {
    for (const GmEntry& e : g_gm) {
        if (e.name == "workspace") return &e.view;
    }
    return nullptr;
}

}  // namespace rt

using namespace rt;

uint8_t* gm_alloc(const char* name, size_t bytes) {
    GmEntry e;
    e.name = name;
    // The extra 32 bytes let the buffer start on a 32-byte boundary whatever new[] returns.
    e.storage_bytes = kGuard + round_up(bytes, 32) + kGuard + 32;
    e.storage.reset(new uint8_t[e.storage_bytes]);
    std::memset(e.storage.get(), kGuardByte, e.storage_bytes);
    const uintptr_t raw = reinterpret_cast<uintptr_t>(e.storage.get()) + kGuard;
    uint8_t* base = e.storage.get() + (round_up(raw, 32) - reinterpret_cast<uintptr_t>(e.storage.get()));
    std::memset(base, 0, bytes);
    g_gm.push_back(std::move(e));
    GmEntry& stored = g_gm.back();
    stored.view = GmBuffer{stored.name.c_str(), base, bytes};
    return base;
}

void gm_check_guards() {
    for (const GmEntry& e : g_gm) {
        const uint8_t* begin = e.storage.get();
        const uint8_t* end = begin + e.storage_bytes;
        const uint8_t* base = e.view.base;
        for (const uint8_t* p = begin; p < end; ++p) {
            if (p >= base && p < base + e.view.bytes) {
                p = base + e.view.bytes - 1;
                continue;
            }
            if (*p == kGuardByte) continue;
            const std::string where = p < base ? "-" + str(uint64_t(base - p)) : "+" + str(uint64_t(p - base));
            fail("gm_check_guards", "GM guard damaged",
                 "GM buffer '" + e.name + "' (" + str(e.view.bytes) + " B): the guard byte at offset " + where +
                     " was written (a write outside the buffer, e.g. through a raw __gm__ pointer)");
        }
    }
}

void gm_mark_in_place(const uint8_t* base) {
    const GmBuffer* g = gm_find(base, 0);
    if (g == nullptr || g->base != base) {
        // twin rule untested: a runner bug (it marks only buffers it just allocated)
        fail("gm_mark_in_place", "in-place mark of no GM buffer", "the address is no registered buffer's start");
    }
    g_in_place[base].assign(g->bytes, 0);
}

void gm_free_all() {
    g_in_place.clear();
    g_gm.clear();
    g_xgm.clear();
    dcache_reset();
}

const GmBuffer* gm_find(const void* addr, size_t bytes) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (const GmEntry& e : g_gm) {
        const uintptr_t base = reinterpret_cast<uintptr_t>(e.view.base);
        if (a >= base && a <= base + e.view.bytes && bytes <= base + e.view.bytes - a) return &e.view;
    }
    return nullptr;
}

namespace kern {

const char* gm_operand(const char* api, const char* role, const GmView& view, const void* addr, uint64_t bytes,
                       const char* size_rule) {
    core(api);
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t region = reinterpret_cast<uintptr_t>(view.region);
    if (view.region_bytes > 0 && (a < region || a + bytes > region + view.region_bytes)) {
        const GmBuffer* owner = gm_find(view.region, 0);
        const std::string in_buffer =
            owner ? std::string(" starting at '") + owner->name + "' +" +
                        str(region - reinterpret_cast<uintptr_t>(owner->base)) + " B"
                  : std::string();
        // twin rule: "GM access beyond the GlobalTensor size" "index out of bounds" (the callers' size_rule)
        fail(api, size_rule,
             std::string(role) + ": bytes [" + std::to_string(int64_t(a - region)) + ", " +
                 std::to_string(int64_t(a - region + bytes)) + ") of a GlobalTensor of " + str(view.region_bytes) +
                 " B" + in_buffer + " (the size given to SetGlobalBuffer)");
    }
    const GmBuffer* g = gm_find(addr, bytes);
    if (g == nullptr) {
        const GmBuffer* start = gm_find(addr, 0);
        fail(api, "GM access outside the registered buffer",
             std::string(role) + ": " + str(bytes) + " B " +
                 (start ? "at +" + str(a - reinterpret_cast<uintptr_t>(start->base)) + " run past the end of GM buffer '" +
                              start->name + "' (" + str(start->bytes) + " B)"
                        : std::string("at an address in no registered GM buffer")));
    }
    return g->name;
}

uint8_t* user_workspace(uint8_t* workspace) {
    core("GetUserWorkspace");
    const GmBuffer* g = gm_find(workspace, 0);
    if (g == nullptr || g->base != workspace || g->bytes < kSysWorkspaceBytes) {
        fail("GetUserWorkspace", "workspace smaller than the system workspace",
             std::string("the workspace ") + (g ? "'" + std::string(g->name) + "' has " + str(g->bytes) + " B" :
                                                  std::string("is no registered GM buffer")) +
                 "; on the NPU the user's part starts " + str(kSysWorkspaceBytes) +
                 " B in (dav_c220 RESERVED_WORKSPACE), so the TilingFunc must add " +
                 "GetLibApiWorkSpaceSize() to the bytes it asks for");
    }
    return workspace + kSysWorkspaceBytes;
}

}  // namespace kern
}  // namespace opgen_twin
