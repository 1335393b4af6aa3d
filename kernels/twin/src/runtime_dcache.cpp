// The scalar DataCache of each core. On a 910B a GlobalTensor GetValue/SetValue goes through the
// core's scalar DataCache (64-byte lines; research/ascendc-api.md 3, SetValue): a SetValue only
// dirties the core's line, and MTE (DataCopy/DataCopyPad) and the other cores read GM, not that
// cache, so they see the old bytes until DataCacheCleanAndInvalid writes the line back (dcci,
// CANN 8.1 impl/kernel_reg.h DcciGMImpl). Likewise a line the scalar unit cached keeps its bytes
// when MTE or another core changes GM: a later GetValue reads the stale copy until the core
// invalidates it. The twin keeps, per GM buffer and 64-byte line (buffer-relative: CANN's GM
// allocations are at least 64-byte aligned), which cores hold the line, which of its bytes each
// dirtied, and whether GM changed under a cached copy. Nothing is recorded until a kernel makes a
// scalar GM access, so kernels without one pay one empty-map test per DMA row.
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
namespace rt {
namespace {

constexpr uint64_t kLine = 64;

// One core's copy of one line.
struct DCopy {
    int64_t core = -1;
    uint64_t dirty = 0;  // bit i: byte i of the line written by SetValue and not written back
    XAcc dirty_at;       // the latest SetValue into the line
    XAcc stale_at;       // core -1: GM still holds what the copy holds; else the write that changed GM
};
using DLine = std::vector<DCopy>;                       // one entry per core holding the line
std::map<const uint8_t*, std::map<uint64_t, DLine>> g_dcache;  // per GM buffer (by base), line index

uint64_t line_mask(uint64_t line, uint64_t a, uint64_t b) {
    const uint64_t lo = std::max(a, line * kLine) - line * kLine;
    const uint64_t hi = std::min(b, (line + 1) * kLine) - line * kLine;
    return hi - lo == 64 ? ~0ull : ((1ull << (hi - lo)) - 1) << lo;
}

XAcc now_acc() {
    const Acc& cur = g_core->pipes.cur;
    return XAcc{g_core->idx, g_core->syncs, cur.api, cur.file, cur.line, DType::Other};
}

std::string bytes_desc(const char* name, uint64_t line, uint64_t mask) {
    const uint64_t lo = line * kLine + uint64_t(__builtin_ctzll(mask));
    const uint64_t hi = line * kLine + 64 - uint64_t(__builtin_clzll(mask));
    return "GM '" + std::string(name) + "' bytes [" + str(lo) + ", " + str(hi) + ")";
}

DCopy* copy_of(DLine& l, int64_t core) {
    for (DCopy& c : l) {
        if (c.core == core) return &c;
    }
    return nullptr;
}

}  // namespace

void dcache_reset() { g_dcache.clear(); }

// A GM access of [a, b) of buffer `base`: `scalar` on the running core's S pipe, else a DMA.
void dcache_access(const uint8_t* base, const char* name, uint64_t a, uint64_t b, bool write, bool scalar) {
    // The fast path: a DMA of a buffer no core has cached a line of yet.
    auto buf = scalar ? g_dcache.try_emplace(base).first : g_dcache.find(base);
    if (buf == g_dcache.end()) return;
    auto& lines = buf->second;
    const int64_t me = g_core->idx;
    const XAcc now = now_acc();
    const char* how = write ? "written" : "read";
    const auto visit = [&](uint64_t line, DLine& copies) {
        const uint64_t mask = line_mask(line, a, b);
        for (DCopy& c : copies) {
            // A line another cache (or this one, for a DMA) holds dirty: MTE and the other cores
            // do not see its dirty bytes, and its write-back, a whole 64-byte line (SetValue 功能
            // 说明), would overwrite whatever they store anywhere in the line.
            const uint64_t hit = write ? c.dirty : c.dirty & mask;
            if (hit != 0 && (!scalar || c.core != me)) {
                fail(now.api ? now.api : "?", "GM access to bytes dirty in a scalar DataCache",
                     bytes_desc(name, line, hit) + ": written by SetValue of " + xacc_desc(c.dirty_at) +
                         " into its scalar DataCache, then " + how + " by " + (scalar ? "" : "DMA of ") +
                         xacc_desc(now) + ", which does not see that cache (needs DataCacheCleanAndInvalid" +
                         "<T, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT> of the line on core " +
                         str(uint64_t(c.dirty_at.core)) + " after the write" +
                         (c.core != me ? ", then SyncAll)" : ", then S_MTE2/S_MTE3 order)"));
            }
            if (write && !(scalar && c.core == me)) c.stale_at = now;  // GM (or another cache) changes
        }
        if (!scalar) return;
        DCopy* mine = copy_of(copies, me);
        if (mine == nullptr) {
            copies.push_back(DCopy{me, 0, XAcc{}, XAcc{}});  // the line is fetched fresh from GM
            mine = &copies.back();
        } else if (!write && mine->stale_at.core != -1) {
            fail(now.api ? now.api : "?", "scalar GM read of a stale DataCache line",
                 bytes_desc(name, line, mask) + ": core " + str(uint64_t(me)) +
                     " cached the line on an earlier scalar access, then GM was written by " +
                     xacc_desc(mine->stale_at) + ", then read by GetValue of " + xacc_desc(now) +
                     ", which returns the cached bytes (needs DataCacheCleanAndInvalid of the line on core " +
                     str(uint64_t(me)) + " between the write and the read)");
        }
        if (write && mine->stale_at.core != -1) {
            // The copy holds bytes of the line GM has changed since; the whole-line write-back
            // would put those old bytes back.
            fail(now.api ? now.api : "?", "scalar GM write into a stale DataCache line",
                 bytes_desc(name, line, mask) + ": core " + str(uint64_t(me)) +
                     " cached the line on an earlier scalar access, then GM was written by " +
                     xacc_desc(mine->stale_at) + ", then SetValue of " + xacc_desc(now) +
                     " dirtied the stale copy, whose 64-byte write-back would undo that write (needs "
                     "DataCacheCleanAndInvalid of the line on core " +
                     str(uint64_t(me)) + " between the two)");
        }
        if (write) {
            mine->dirty |= mask;
            mine->dirty_at = now;
        }
    };
    if (scalar) {  // its 1-2 lines, cached from now on
        for (uint64_t line = a / kLine; line * kLine < b; ++line) visit(line, lines[line]);
        return;
    }
    // A DMA visits the cached lines in its range only.
    for (auto it = lines.lower_bound(a / kLine); it != lines.end() && it->first * kLine < b; ++it) {
        visit(it->first, it->second);
    }
}

namespace {
// One core's copy of one line leaves its cache; its dirty bytes (each run of them) are written to
// GM by this core now, and the other cores' copies of the line no longer match GM.
void write_back(const uint8_t* base, uint64_t line, DLine& copies, int64_t core) {
    for (size_t i = 0; i < copies.size(); ++i) {
        if (copies[i].core != core) continue;
        const uint64_t dirty = copies[i].dirty;
        copies.erase(copies.begin() + std::ptrdiff_t(i));
        const GmBuffer* buf = gm_find(base, 0);
        for (uint64_t at = 0; at < kLine;) {
            if ((dirty >> at & 1) == 0) {
                ++at;
                continue;
            }
            uint64_t end = at;
            while (end < kLine && (dirty >> end & 1) != 0) ++end;
            for (DCopy& other : copies) other.stale_at = now_acc();
            cross_access(base, buf ? buf->name : "?", line * kLine + at, line * kLine + end, true, false);
            at = end;
        }
        return;
    }
}

}  // namespace

// DataCacheCleanAndInvalid on the running core: writes back its dirty bytes of the line holding
// `addr` (every line with `entire`) and drops the lines from its cache. The write-back is a GM
// write of this core at this point, so the other cores see it only after a later SyncAll.
void dcache_clean_invalidate(const uint8_t* addr, bool entire) {
    const int64_t me = g_core->idx;
    if (entire) {
        for (auto& [base, lines] : g_dcache) {
            for (auto& [line, copies] : lines) write_back(base, line, copies, me);
        }
        return;
    }
    const GmBuffer* g = gm_find(addr, 1);
    if (g == nullptr) return;  // the API checked the address (gm_operand)
    auto buf = g_dcache.find(g->base);
    if (buf == g_dcache.end()) return;
    const uint64_t line = uint64_t(addr - g->base) / kLine;
    if (auto it = buf->second.find(line); it != buf->second.end()) write_back(g->base, line, it->second, me);
}

}  // namespace rt

namespace kern {

void data_cache_clean_invalid(const void* addr, bool entire, bool gm_lines, const Here& here) {
    const Call call("DataCacheCleanAndInvalid", Pipe::S, here);
    // DcciDst::CACHELINE_UB / CACHELINE_ATOMIC name other caches: GM's scalar lines stay as they are.
    if (gm_lines) rt::dcache_clean_invalidate(static_cast<const uint8_t*>(addr), entire);
}

}  // namespace kern
}  // namespace opgen_twin
