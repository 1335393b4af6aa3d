// Internal to the twin's runtime (src/runtime*.cpp, split by concern): the per-core state
// they share (GM registry, UB arena with its buffer and queue records, events, pipe and
// cross-core histories, counters) and the helpers more than one of them uses. Not kernel API:
// no kernel header includes it. It lives under include/ so the twin build's cache key (a hash
// of include/) covers it.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "opgen_twin/kernel/cast.h"
#include "opgen_twin/json_writer.h"
#include "opgen_twin/kernel/state.h"
#include "opgen_twin/runtime.h"
#include "opgen_twin/trace.h"

namespace opgen_twin {
namespace rt {

// ---------------------------------------------------------------- state

struct GmEntry {
    std::string name;
    std::unique_ptr<uint8_t[]> storage;
    size_t storage_bytes = 0;
    GmBuffer view{};
};

// Bytes of poisoned guard before each GM buffer; after it the guard runs from the buffer's end
// through its round-up to 32 bytes and another kGuard bytes.
constexpr size_t kGuard = 256;
constexpr uint8_t kGuardByte = 0xA5;
// 0xFF in every byte is NaN in float, half and bf16, so reads of uninitialised UB show up.
constexpr uint8_t kPoison = 0xFF;
constexpr int kEventIds = 8;
constexpr int kEventTypes = int(AscendC::HardEvent::MAX);
constexpr int kMaxPerPosition = 8;
constexpr int kMaxBuffers = 64;
// dav_c220 RESERVED_WORKSPACE (CANN 8.1 impl/utils/kernel_utils_constants.h): the system part at
// the workspace's start; GetUserWorkspace returns the address after it.
constexpr uint64_t kSysWorkspaceBytes = 16ull * 1024 * 1024;

enum class BufState : uint8_t { Free, Allocated, Enqueued, Dequeued, Fixed, Released };

// A vector timestamp over the pipes: c[q] is the last instruction of pipe q known to have
// completed (see "pipes" below).
struct Clock {
    uint64_t c[kern::kPipes] = {};
};

struct BufRec {
    int32_t queue = -1;  // -1: a TBuf
    uint8_t pos = 0;
    uint32_t index = 0;  // inside its queue
    uint32_t ordinal = 0;
    uint32_t ub_off = 0;
    uint32_t bytes = 0;
    BufState state = BufState::Free;
    uint32_t gen = 0;  // bumped by every AllocTensor, so older views are recognisably stale
    Clock enq_snap;         // what the EnQue event carried (the producer pipe's clock at EnQue)
    Clock free_snap;        // what the FreeTensor event carried (the consumer pipe's clock)
    bool free_set = false;  // a FreeTensor event the next AllocTensor of this buffer waits for
    int8_t enq_id = -1;     // the event ids EnQue and FreeTensor took from the pool
    int8_t free_id = -1;
};

struct QueRec {
    uint8_t pos = 0;
    int32_t depth = 0;
    int32_t first = 0;
    int32_t num = 0;
    int32_t cursor = 0;
    uint32_t ordinal = 0;
    std::deque<int32_t> fifo;
    uint8_t enq_evt = 0;   // HardEvent of EnQue -> DeQue (from the positions, as CANN's GetQueEvt)
    uint8_t free_evt = 0;  // HardEvent of FreeTensor -> AllocTensor
    int32_t last_copy_in = -1;  // the buffer the previous GM->UB copy of this queue went into
    uint32_t last_copy_gen = 0;  // and its allocation (BufRec::gen)
};

struct Counters {
    std::map<std::string, uint64_t, std::less<>> gm_read, gm_write, vec_instr, vec_elems;
    // DMA instructions per GM tensor (one DataCopy / DataCopyPad call = one transfer, whatever its
    // blockCount), and the flag waits per HardEvent (WaitFlag, e.g. V_S: the scalar unit waits).
    std::map<std::string, uint64_t, std::less<>> read_transfers, write_transfers, flag_waits;
    // Waits inside AscendC APIs on dav_c220 (e.g. ReduceSum's V_S, S_V, S_MTE3), per HardEvent.
    std::map<std::string, uint64_t, std::less<>> hidden_waits;
    uint64_t transfers_in = 0, transfer_in_bytes = 0, transfers_out = 0, transfer_out_bytes = 0;
    uint64_t transfer_in_min = 0, transfer_in_max = 0, transfer_out_min = 0, transfer_out_max = 0;
    uint64_t scalar_gm = 0, scalar_ub = 0, ub_high = 0, handoffs = 0, barriers = 0;
    uint64_t copy_in_overlapped = 0, copy_in_total = 0, copy_in_queues = 0;
    // Elements added into GM by float atomic copy-outs (float, half, bfloat16_t): their sum
    // depends on the order the cores reach GM, which the hardware leaves unspecified.
    uint64_t float_atomic_adds = 0;
};

// One access of an instruction: its time on its pipe (0 = none) and where the kernel made it.
struct Acc {
    uint64_t t = 0;
    const char* api = nullptr;
    const char* file = nullptr;
    uint32_t line = 0;
};

// The access history of a byte range: its last writer and, per pipe, the latest read since.
struct Seg {
    uint64_t end = 0;
    uint8_t wpipe = 0;
    Acc w;
    Acc r[kern::kPipes];
};
using Shadow = std::map<uint64_t, Seg>;  // keyed by the range's first byte; ranges are disjoint

struct Pipes {
    uint64_t cnt[kern::kPipes] = {};  // instructions issued per pipe
    Clock vc[kern::kPipes];           // what the next instruction of each pipe is ordered after
    Clock flag_snap[int(AscendC::HardEvent::MAX)][8];
    int depth = 0;  // nesting of kern::Call
    kern::Pipe pipe = kern::Pipe::S;
    Acc cur;  // the running instruction
    Shadow ub;
    std::map<const uint8_t*, Shadow> gm;  // per registered GM buffer (by base), offsets from base
};

enum class IdHolder : uint8_t { None, Kernel, Queue };

struct Core {
    bool active = false;
    int64_t idx = -1;
    std::vector<uint8_t> ub;
    uint64_t top = 0;
    std::vector<BufRec> bufs;
    std::vector<QueRec> ques;
    uint32_t epoch = 0;
    const void* pipe = nullptr;
    int per_pos[3] = {0, 0, 0};
    int total = 0;
    uint32_t next_que = 0;
    uint32_t next_tbuf = 0;
    bool flags[kEventTypes][kEventIds] = {};
    // The TPipe's event id pool, one per HardEvent (CANN's eventPool_: AllocEventID takes the
    // lowest free id; TQue EnQue/FreeTensor take theirs from it too), and where each set flag
    // was set (see runtime_pipes.cpp "events").
    IdHolder holder[kEventTypes][kEventIds] = {};
    Acc flag_at[kEventTypes][kEventIds];
    // The vector mask register (runtime_mask.cpp): its two words in normal mode, whether the
    // twin knows them, counter mode, and the call that set or clobbered it last.
    uint64_t vmask[2] = {0, 0};  // [0] lanes 0..63, [1] lanes 64..127
    bool vmask_known = false;
    bool vmask_counter = false;
    Acc vmask_at;
    Counters* counters = nullptr;
    Pipes pipes;
    uint32_t syncs = 0;  // SyncAll calls passed (the core's phase, see "cores")
    kern::Here sync_at{nullptr, 0};  // where it called SyncAll last
    // The atomic mode of copy-outs (SetAtomicAdd<T> / SetAtomicType<T> / SetAtomicNone, see
    // "atomic"): add = MTE3 copy-outs add into GM in `type` instead of storing.
    bool atomic_add = false;
    DType atomic_type = DType::Other;
    kern::Here atomic_at{nullptr, 0};  // where SetAtomicAdd was called last
};


extern SocConfig g_soc;
extern std::deque<GmEntry> g_gm;
// The running core. Outside run_cores it is the one sequential slot; inside, the core that holds
// the baton (run_cores switches it with the baton, so only one thread ever touches it).
extern Core g_sequential_core;
extern Core* g_core;
extern std::map<int64_t, Counters> g_counters;
extern uint32_t g_epochs;
extern FailHandler g_fail_handler;
extern const char* const kEventNames[kEventTypes];
// Compiler auto-sync (runtime_pipes.cpp): off unless OPGEN_TWIN_AUTO_SYNC=1 or set_auto_sync.
extern bool g_auto_sync;

using kern::Pipe;
constexpr int kP = kern::kPipes;

// ---------------------------------------------------------------- helpers (runtime.cpp)

std::string str(uint64_t v);
std::string count_of(uint64_t n, const char* noun);
std::string hex(uint64_t v);
inline uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }
std::string base_name(const char* file);
Core& core(const char* api);
Counters& counters();

// ---------------------------------------------------------------- UB and queues (runtime_ub.cpp)

const char* position_name(uint8_t pos);
std::string que_desc(const QueRec& q);
std::string buf_name(const BufRec& b);
void poison(uint32_t off, uint64_t bytes);
BufRec& live_buffer(const char* api, const char* role, const kern::TensorRef& t);
void audit_leaks(const char* api);
void release_all();

// ---------------------------------------------------------------- pipes (runtime_pipes.cpp)

const char* pipe_name(int p);
Clock flag_carries(uint8_t evt);
// An SetFlag/WaitFlag pair of `evt` (a queue hand-off or an API's internal pair).
void flag_pair(uint8_t evt, const Clock& carried);
// A queue's hand-off flag: EnQue/FreeTensor take the lowest free id of `evt` from the pool and
// set it; DeQue/AllocTensor wait for it and give it back (CANN 8.1 kernel_tquebind_impl.h).
int8_t queue_flag_set(const char* api, uint8_t evt, const kern::Here& here);
void queue_flag_wait(uint8_t evt, int8_t id);
// Names the UB buffer that holds byte `off` (the newest one, after a TPipe::Reset).
std::string ub_region(uint64_t off);

// Splits the segment containing x so that a segment starts at x (if x is inside one).
template <typename Segment>
void split_at(std::map<uint64_t, Segment>& sh, uint64_t x) {
    auto it = sh.upper_bound(x);
    if (it == sh.begin()) return;
    --it;
    if (it->first < x && x < it->second.end) {
        Segment tail = it->second;
        it->second.end = x;
        sh.emplace(x, tail);
    }
}

// ---------------------------------------------------------------- cores (runtime_cores.cpp)

// The cross-core history of a GM byte range: its last plain write, its latest atomic adds and
// its latest reads (core and phase; core -2 = several cores in that phase).
//
// Atomic adds (SetAtomicAdd, see "atomic"): on the NPU the add of an atomic copy-out happens in
// the memory system, so atomic copy-outs of several cores to the same bytes in one phase are
// not a race: each lands whole, in an order the hardware does not specify. The twin adds them in
// baton order (core 0's phase first, ...), so its float result is one of the sums the NPU may
// produce; the counters report how many float elements were added that way (a kernel whose
// output must be bitwise reproducible cannot rely on them). Everything else about those bytes
// in that phase still races: a plain write of another core (which of store and add lands first
// is unspecified), a read of another core (it sees a partial sum), and adds of another dtype.
struct XAcc {
    int64_t core = -1;
    uint32_t phase = 0;
    const char* api = nullptr;
    const char* file = nullptr;
    uint32_t line = 0;
    DType type = DType::Other;  // the atomic dtype of an atomic add
};
struct XSeg {
    uint64_t end = 0;
    XAcc w;  // the last plain write
    XAcc a;  // the latest atomic add (-2: several cores in its phase)
    XAcc r;
};
using XShadow = std::map<uint64_t, XSeg>;
extern std::map<const uint8_t*, XShadow> g_xgm;  // per registered GM buffer (by base)

void cross_access(const uint8_t* base, const char* name, uint64_t a, uint64_t b, bool write, bool atomic);
// In-place inputs (gm_mark_in_place): per byte, 0 while unwritten, else the writing core + 1.
extern std::map<const uint8_t*, std::vector<int32_t>> g_in_place;
// Fails a read of bytes of an in-place input that were written; records writes.
void in_place_access(const uint8_t* base, const char* name, uint64_t a, uint64_t b, bool write);
// "core <i> (<api> at <file>:<line>)".
std::string xacc_desc(const XAcc& a);

// ---------------------------------------------------------------- scalar DataCache (runtime_dcache.cpp)

// Forgets every core's cached lines (a new launch).
void dcache_reset();
// A GM access of bytes [a, b) of the buffer at `base`: `scalar` (GetValue/SetValue) goes through
// the running core's DataCache, else it is a DMA; refuses accesses the caches make wrong.
void dcache_access(const uint8_t* base, const char* name, uint64_t a, uint64_t b, bool write, bool scalar);
// DataCacheCleanAndInvalid on the running core: the line holding `addr`, or every line (`entire`).
void dcache_clean_invalidate(const uint8_t* addr, bool entire);

// ---------------------------------------------------------------- GM (runtime_gm.cpp)

// The launch's workspace buffer (registered as "workspace"), or null.
const GmBuffer* launch_workspace();

}  // namespace rt
}  // namespace opgen_twin
