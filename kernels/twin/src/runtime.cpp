// The CPU twin's runtime (runtime.h) and the per-core machinery behind the kernel API
// (opgen_twin/kernel/state.h): failure reporting, the GM registry with guard bytes, the UB arena
// of the running core with its buffer and queue records, events, and the counters.
//
// Build with -ffp-contract=off: nothing here may fuse floating-point operations.
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

int64_t block_idx = 0;
int64_t block_num = 0;

namespace opgen_twin {
namespace {

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
    bool reserved[kEventTypes][kEventIds] = {};
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

// ---------------------------------------------------------------- helpers

std::string str(uint64_t v) { return std::to_string(v); }

std::string count_of(uint64_t n, const char* noun) { return str(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%05" PRIx64, v);
    return buf;
}

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

const char* position_name(uint8_t pos) {
    switch (AscendC::TPosition(pos)) {
        case AscendC::TPosition::VECIN: return "VECIN";
        case AscendC::TPosition::VECOUT: return "VECOUT";
        case AscendC::TPosition::VECCALC: return "VECCALC";
        default: return "non-UB position";
    }
}

int position_slot(uint8_t pos) {
    switch (AscendC::TPosition(pos)) {
        case AscendC::TPosition::VECIN: return 0;
        case AscendC::TPosition::VECOUT: return 1;
        case AscendC::TPosition::VECCALC: return 2;
        default: return -1;
    }
}

Core& core(const char* api) {
    if (!g_core->active) fail(api, "called outside a core", "no simulated core is running (begin_core was not called)");
    return *g_core;
}

std::string que_name(const QueRec& q) {
    return std::string(position_name(q.pos)) + " queue #" + str(q.ordinal);
}

std::string que_desc(const QueRec& q) {
    return que_name(q) + " (depth " + str(uint64_t(q.depth)) + ", " + count_of(uint64_t(q.num), "buffer") + ")";
}

std::string buf_name(const BufRec& b) {
    if (b.queue < 0) return std::string(position_name(b.pos)) + " TBuf #" + str(b.ordinal);
    const QueRec& q = g_core->ques[size_t(b.queue)];
    return que_name(q) + " buffer " + str(b.index) + "/" + str(uint64_t(q.num));
}

void poison(uint32_t off, uint64_t bytes) { std::memset(g_core->ub.data() + off, kPoison, bytes); }

void note_high_water() {
    if (g_core->counters != nullptr) g_core->counters->ub_high = std::max(g_core->counters->ub_high, g_core->top);
}

QueRec& que_of(const kern::Handle& h, const char* api) {
    Core& c = core(api);
    if (h.epoch != c.epoch || h.rec < 0 || size_t(h.rec) >= c.ques.size()) {
        fail(api, "queue used before InitBuffer", "this TQue has no buffers in the current TPipe");
    }
    return c.ques[size_t(h.rec)];
}

BufRec& tbuf_of(const kern::Handle& h, const char* api) {
    Core& c = core(api);
    if (h.epoch != c.epoch || h.rec < 0 || size_t(h.rec) >= c.bufs.size()) {
        fail(api, "TBuf used before InitBuffer", "this TBuf has no buffer in the current TPipe");
    }
    return c.bufs[size_t(h.rec)];
}

bool in_queue(const QueRec& q, int32_t buf) { return buf >= q.first && buf < q.first + q.num; }

const char* state_name(BufState s) {
    switch (s) {
        case BufState::Free: return "free";
        case BufState::Allocated: return "allocated";
        case BufState::Enqueued: return "in the queue";
        case BufState::Dequeued: return "dequeued";
        case BufState::Fixed: return "a TBuf";
        case BufState::Released: return "released";
    }
    return "?";
}

// Fails unless the view's buffer may be read or written now.
BufRec& live_buffer(const char* api, const char* role, const kern::TensorRef& t) {
    Core& c = core(api);
    if (t.buf < 0 || size_t(t.buf) >= c.bufs.size()) {
        fail(api, "operand is not a UB tensor",
             std::string(role) + ": a LocalTensor that no AllocTensor, DeQue or TBuf::Get produced");
    }
    BufRec& b = c.bufs[size_t(t.buf)];
    const auto who = [&] { return std::string(role) + " " + kern::tensor_desc(t); };
    if (b.state == BufState::Released) fail(api, "use of a buffer released by TPipe::Reset", who());
    if (b.queue >= 0 && (b.state == BufState::Free || t.gen != b.gen)) {
        fail(api, "use of a tensor after FreeTensor",
             who() + ": its buffer was freed (the NPU may already be refilling it for the next tile)");
    }
    if (b.state == BufState::Enqueued) {
        fail(api, "use of a tensor between EnQue and DeQue",
             who() + ": an EnQue'd tensor belongs to the consumer pipe until DeQue");
    }
    return b;
}

void audit_leaks(const char* api) {
    for (const BufRec& b : g_core->bufs) {
        if (b.queue < 0) continue;
        if (b.state == BufState::Allocated || b.state == BufState::Dequeued || b.state == BufState::Enqueued) {
            fail(api, "tensor not freed at kernel end",
                 buf_name(b) + " is still " + state_name(b.state) +
                     " (every AllocTensor needs a FreeTensor; a leak hangs the next AllocTensor on the NPU)");
        }
    }
}

void release_all() {
    for (BufRec& b : g_core->bufs) b.state = BufState::Released;
    g_core->epoch = ++g_epochs;
    g_core->top = 0;
    g_core->per_pos[0] = g_core->per_pos[1] = g_core->per_pos[2] = 0;
    g_core->total = 0;
    std::memset(g_core->reserved, 0, sizeof g_core->reserved);
}

// Bump allocation shared by queues and TBufs; count and capacity are the A2 limits.
uint32_t ub_reserve(const char* api, const std::string& what, uint8_t pos, uint32_t num, uint32_t len, bool queue) {
    Core& c = core(api);
    const int slot = position_slot(pos);
    if (slot < 0) {
        fail(api, "position not modelled", what + ": only the UB positions VECIN, VECOUT and VECCALC exist on the twin");
    }
    if (num == 0 || len == 0) fail(api, "empty buffer", what + ": num " + str(num) + ", len " + str(len));
    if (queue && c.per_pos[slot] + int(num) > kMaxPerPosition) {
        fail(api, "more than 8 buffers in one queue position",
             what + " adds " + count_of(num, "buffer") + " to " + str(uint64_t(c.per_pos[slot])) + " already at " +
                 position_name(pos) + " (A2 has 8 event ids per position; AllocTensor/FreeTensor would hang)");
    }
    if (c.total + int(num) > kMaxBuffers) {
        fail(api, "more than 64 buffers in total",
             what + " adds " + count_of(num, "buffer") + " to " + str(uint64_t(c.total)) + " already allocated");
    }
    const uint64_t bytes = round_up(len, 32);
    const uint64_t end = c.top + bytes * num;
    if (end > g_soc.ub_bytes) {
        fail(api, "UB capacity exceeded",
             what + ": " + str(num) + " x " + str(bytes) + " B at UB " + hex(c.top) + " would end at " + str(end) +
                 " B, past the " + str(g_soc.ub_bytes) + " B UB of " + g_soc.name);
    }
    if (queue) c.per_pos[slot] += int(num);
    c.total += int(num);
    const uint32_t start = uint32_t(c.top);
    poison(start, bytes * num);
    c.top = end;
    note_high_water();
    return start;
}

Counters& counters() { return *core("counter").counters; }

void json_map(JsonWriter& json, const char* key, const std::map<std::string, uint64_t, std::less<>>& m) {
    json.key(key).begin_object();
    for (const auto& kv : m) {
        json.key(kv.first).uint(kv.second);
    }
    json.end_object();
}

void check_event(const char* api, uint8_t evt, int32_t id) {
    if (evt >= kEventTypes) fail(api, "invalid HardEvent", "HardEvent value " + str(evt));
    if (id < 0 || id >= kEventIds) {
        fail(api, "event id out of range 0..7",
             std::string("HardEvent::") + kEventNames[evt] + " id " + std::to_string(id) + " (A2 has ids 0..7)");
    }
}

std::string event_desc(uint8_t evt, int32_t id) {
    return std::string("HardEvent::") + kEventNames[evt] + " id " + std::to_string(id);
}

// ---------------------------------------------------------------- pipes
//
// The happens-before model. On the NPU the scalar unit only issues instructions; MTE2 (GM->UB),
// MTE3 (UB->GM), V (vector) and S (scalar loads/stores) then run concurrently, and an instruction
// is ordered after another one only by (research/ascendc-api.md 5, twin-fidelity.md 2, CANN 8.1
// headers):
//  - SetFlag<A_B>(id) -> WaitFlag<A_B>(id): B's later instructions start after A's earlier ones
//    completed (a vector clock travels with the flag);
//  - a queue hand-off, which is such a pair with the event fixed by the queue's positions
//    (pipe.h que_event): EnQue -> DeQue and FreeTensor -> next AllocTensor of that buffer;
//  - PipeBarrier<PIPE_X>: X's later instructions start after its earlier ones completed; the
//    same pipe is NOT otherwise ordered for memory (the docs require PipeBarrier<PIPE_V> between
//    dependent vector instructions and PipeBarrier<PIPE_MTE2/MTE3> between copies with
//    overlapping destinations: DataCopy 约束说明, PipeBarrier(ISASI).md); PIPE_ALL orders all;
//  - scalar program order: S accesses are ordered among themselves, and an instruction of any
//    pipe is issued by S after every wait S has passed, so it inherits what S knows of the other
//    pipes (not S's own stores: those need S_V / S_MTE2 / S_MTE3);
//  - compiler auto-sync (--cce-auto-sync), only when switched on (OPGEN_TWIN_AUTO_SYNC=1 or
//    set_auto_sync): a PipeBarrier<PIPE_V> before every vector instruction and S <-> {V, MTE2,
//    MTE3} waits around every scalar access (ascendc-api.md 5: never MTE2 <-> V, V <-> MTE3 or
//    overlapping same-pipe copies). Off by default: the generated kernels must be correct
//    without it.
// Every UB and GM byte range keeps its last writer and the latest read per pipe since; an access
// that conflicts (RAW, WAR, WAW) with one it is not ordered after stops the run.

bool g_auto_sync = [] {
    const char* v = std::getenv("OPGEN_TWIN_AUTO_SYNC");
    return v != nullptr && v[0] == '1';
}();

using kern::Pipe;
constexpr int kP = kern::kPipes;

const char* pipe_name(int p) {
    static const char* const names[] = {"S", "V", "MTE2", "MTE3", "MTE1", "M", "FIX"};
    return p >= 0 && p < kP ? names[p] : "?";
}

int pipe_of_name(const std::string& n) {
    for (int p = 0; p < kP; ++p) {
        if (n == pipe_name(p)) return p;
    }
    return -1;
}

// The source and destination pipes of each HardEvent, from its name ("MTE2_V": MTE2 sets, V waits).
struct EventPipes {
    int src = -1, dst = -1;
};
const EventPipes& event_pipes(uint8_t evt) {
    static const std::vector<EventPipes> table = [] {
        std::vector<EventPipes> t(kEventTypes);
        for (int e = 0; e < kEventTypes; ++e) {
            const std::string n = kEventNames[e];
            const size_t cut = n.find('_');
            t[size_t(e)] = EventPipes{pipe_of_name(n.substr(0, cut)), pipe_of_name(n.substr(cut + 1))};
        }
        return t;
    }();
    return table[evt];
}

Pipes& pipes() { return g_core->pipes; }

// Pipe p's clock as a flag set now would carry it: every instruction p has issued is complete.
Clock snapshot(int p) {
    Clock s = pipes().vc[p];
    s.c[p] = pipes().cnt[p];
    return s;
}

void merge(int p, const Clock& s) {
    Clock& v = pipes().vc[p];
    for (int q = 0; q < kP; ++q) v.c[q] = std::max(v.c[q], s.c[q]);
}

// An SetFlag/WaitFlag pair of `evt` (a queue hand-off or an API's internal pair).
void flag_pair(uint8_t evt, const Clock& carried) {
    const EventPipes& ep = event_pipes(evt);
    if (ep.dst >= 0) merge(ep.dst, carried);
}

Clock flag_carries(uint8_t evt) {
    const EventPipes& ep = event_pipes(evt);
    return ep.src >= 0 ? snapshot(ep.src) : Clock{};
}

void start_instruction(Pipe pipe, const char* api, const kern::Here& here) {
    Pipes& ps = pipes();
    const int p = int(pipe);
    const int s = int(Pipe::S);
    if (g_auto_sync) {
        if (pipe == Pipe::V) ps.vc[p].c[p] = ps.cnt[p];
        if (pipe == Pipe::S) {
            for (Pipe q : {Pipe::V, Pipe::MTE2, Pipe::MTE3}) merge(s, snapshot(int(q)));
        } else if (pipe == Pipe::V || pipe == Pipe::MTE2 || pipe == Pipe::MTE3) {
            merge(p, snapshot(s));
        }
    }
    if (p != s) {
        for (int q = 0; q < kP; ++q) {
            if (q != s) ps.vc[p].c[q] = std::max(ps.vc[p].c[q], ps.vc[s].c[q]);
        }
    }
    ps.pipe = pipe;
    ps.cur = Acc{++ps.cnt[p], api, here.file, here.line};
    trace::instruction(p, api);
}

bool ordered(int q, const Acc& prior, int p) {
    if (prior.t == 0) return true;
    if (q == p && prior.t == pipes().cur.t) return true;  // the same instruction
    if (q == int(Pipe::S) && p == int(Pipe::S)) return true;
    return pipes().vc[p].c[q] >= prior.t;
}

std::string base_name(const char* file) {
    if (file == nullptr) return "?";
    const char* slash = std::strrchr(file, '/');
    return slash != nullptr ? slash + 1 : file;
}

std::string acc_desc(int pipe, const Acc& a) {
    return std::string(pipe_name(pipe)) + " (" + (a.api ? a.api : "?") + " at " + base_name(a.file) + ":" +
           str(a.line) + ")";
}

// Names the UB buffer that holds byte `off` (the newest one, after a TPipe::Reset).
std::string ub_region(uint64_t off) {
    for (size_t i = g_core->bufs.size(); i-- > 0;) {
        const BufRec& b = g_core->bufs[i];
        if (off >= b.ub_off && off < uint64_t(b.ub_off) + b.bytes) return buf_name(b);
    }
    return "unallocated UB";
}

std::string event_between(int from, int to) {
    if (from == to) return std::string("PipeBarrier<PIPE_") + pipe_name(from) + ">";
    const std::string want = std::string(pipe_name(from)) + "_" + pipe_name(to);
    for (int e = 0; e < kEventTypes; ++e) {
        if (want == kEventNames[e]) return "SetFlag/WaitFlag<HardEvent::" + want + "> (or a queue hand-off)";
    }
    return "a chain of SetFlag/WaitFlag pairs from " + std::string(pipe_name(from)) + " to " + pipe_name(to);
}

[[noreturn]] void race(const char* kind, int prior_pipe, const Acc& prior, bool prior_write, bool write,
                       const std::string& where) {
    const Pipes& ps = pipes();
    const int p = int(ps.pipe);
    const bool same = prior_pipe == p;
    const std::string rule = std::string(kind) + (same ? " on one pipe without PipeBarrier" : " across pipes without synchronisation");
    // twin rule: "RAW across pipes without synchronisation" "WAR across pipes without synchronisation" "WAW across pipes without synchronisation" "RAW on one pipe without PipeBarrier" "WAR on one pipe without PipeBarrier" "WAW on one pipe without PipeBarrier"
    fail(ps.cur.api ? ps.cur.api : "?", rule.c_str(),
         where + ": " + (prior_write ? "written" : "read") + " by " + acc_desc(prior_pipe, prior) + ", then " +
             (write ? "written" : "read") + " by " + acc_desc(p, ps.cur) + " with nothing ordering them (needs " +
             event_between(prior_pipe, p) + (g_auto_sync ? "" : "; strict mode: no compiler auto-sync") + ")");
}

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

// Records an access of the running instruction to [a, b) of `sh`, after checking it against the
// history. `describe` names a byte range for the message.
template <typename Describe>
void access(Shadow& sh, uint64_t a, uint64_t b, bool write, Describe describe) {
    if (a >= b) return;
    Pipes& ps = pipes();
    const int p = int(ps.pipe);
    // The checks of one segment against this access; [lo, hi) names its bytes in a report.
    const auto check = [&](const Seg& g, uint64_t lo, uint64_t hi) {
        // A write checks the reads since the last write first: they are the nearer hazard.
        if (write) {
            for (int q = 0; q < kP; ++q) {
                if (!ordered(q, g.r[q], p)) race("WAR", q, g.r[q], false, true, describe(lo, hi));
            }
        }
        if (!ordered(g.wpipe, g.w, p)) race(write ? "WAW" : "RAW", g.wpipe, g.w, true, write, describe(lo, hi));
    };
    // The segment a write leaves: everything earlier is ordered before it, so it alone
    // describes [a, b) now.
    const auto written = [&] {
        Seg g;
        g.end = b;
        g.wpipe = uint8_t(p);
        g.w = ps.cur;
        return g;
    };
    // Fast path, the common case of a buffer accessed again as a whole: [a, b) is exactly one
    // segment. The same checks and the same update as below, without splitting, erasing and
    // re-inserting (the map operations were a third of a twin run's time).
    if (auto one = sh.find(a); one != sh.end() && one->second.end == b) {
        check(one->second, a, b);
        if (write) {
            one->second = written();
        } else {
            one->second.r[p] = ps.cur;
        }
        return;
    }
    split_at(sh, a);
    split_at(sh, b);
    for (auto it = sh.lower_bound(a); it != sh.end() && it->first < b; ++it) {
        check(it->second, std::max(a, it->first), std::min(b, it->second.end));
    }
    if (write) {
        sh.erase(sh.lower_bound(a), sh.lower_bound(b));
        sh.emplace(a, written());
        return;
    }
    uint64_t at = a;
    auto it = sh.lower_bound(a);
    while (at < b) {
        if (it == sh.end() || it->first > at) {
            // A gap nobody accessed yet: give it a segment to hold the read.
            const uint64_t end = (it == sh.end() || it->first >= b) ? b : it->first;
            Seg g;
            g.end = end;
            it = sh.emplace_hint(it, at, g);
        }
        Seg& g = it->second;
        g.r[p] = ps.cur;
        at = g.end;
        ++it;
    }
}

// ---------------------------------------------------------------- cores
//
// Concurrent cores (run_cores). On the NPU the cores of a launch run at the same time and share
// GM; nothing orders one core's GM accesses against another's except a cross-core barrier,
// SyncAll (dav_c220 SyncAllImpl: PipeBarrier<PIPE_ALL>, then an FFTS cross-core flag every AIV
// core sets and waits for). The twin runs each core as its own thread but hands a baton from
// one to the next, so exactly one runs at a time (no data races in the twin itself, the same
// interleaving on every run): core 0 runs until its first SyncAll (or its end), then core 1, ...;
// when every core that has not returned waits in its k-th SyncAll, they all go on, again in
// index order. A core's "phase" is the number of SyncAlls it has passed. Two GM accesses of
// different cores are ordered only when their phases differ (all of phase k completes before
// any core passes SyncAll k+1: the barrier drains every pipe first); in the same phase they
// race when one of them writes. That is what the cross-core shadow below checks, on top of
// each core's own pipe-level shadow.

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
std::map<const uint8_t*, XShadow> g_xgm;  // per registered GM buffer (by base)

std::string xacc_desc(const XAcc& a) {
    const std::string who = a.core == -2 ? std::string("several cores (the latest") : "core " + std::to_string(a.core);
    return who + (a.core == -2 ? ": " : " (") + (a.api ? a.api : "?") + " at " + base_name(a.file) + ":" +
           str(a.line) + ")";
}

[[noreturn]] void cross_race(const char* kind, const XAcc& prior, const char* prior_how, const XAcc& now,
                             const char* how, const std::string& where) {
    const std::string rule = std::string(kind) + " between cores without SyncAll";
    // twin rule: "RAW between cores without SyncAll" "WAR between cores without SyncAll" "WAW between cores without SyncAll" "plain and atomic writes between cores without SyncAll"
    fail(now.api ? now.api : "?", rule.c_str(),
         where + ": " + prior_how + " by " + xacc_desc(prior) + ", then " + how + " by " + xacc_desc(now) +
             " in the same SyncAll phase (" + str(now.phase) + " SyncAll calls passed): the cores run concurrently " +
             "and nothing orders them (needs SyncAll between the two, or disjoint bytes)");
}

void cross_access(const uint8_t* base, const char* name, uint64_t a, uint64_t b, bool write, bool atomic) {
    if (a >= b) return;
    const Acc& cur = g_core->pipes.cur;
    const XAcc now{g_core->idx, g_core->syncs, cur.api, cur.file, cur.line, atomic ? g_core->atomic_type : DType::Other};
    XShadow& sh = g_xgm[base];
    const auto where = [&](uint64_t lo, uint64_t hi) {
        return "GM '" + std::string(name) + "' bytes [" + str(lo) + ", " + str(hi) + ")";
    };
    const auto other = [&](const XAcc& p) { return p.core != -1 && p.core != now.core && p.phase == now.phase; };
    // How an access is named in a report (built only when one is made: this runs on every GM access).
    const auto added = [](const XAcc& x) { return "atomically added (" + std::string(dtype_name(x.type)) + ")"; };
    const auto how = [&] { return !write ? std::string("read") : atomic ? added(now) : std::string("written"); };
    const auto check = [&](const XSeg& g, uint64_t lo, uint64_t hi) {
        if (write && other(g.r)) cross_race("WAR", g.r, "read", now, how().c_str(), where(lo, hi));
        if (other(g.w)) {
            if (atomic) cross_race("plain and atomic writes", g.w, "written", now, how().c_str(), where(lo, hi));
            cross_race(write ? "WAW" : "RAW", g.w, "written", now, how().c_str(), where(lo, hi));
        }
        if (other(g.a)) {
            if (!write) cross_race("RAW", g.a, added(g.a).c_str(), now, how().c_str(), where(lo, hi));
            if (!atomic || g.a.type != now.type) {
                cross_race("plain and atomic writes", g.a, added(g.a).c_str(), now, how().c_str(), where(lo, hi));
            }
        }
    };
    // What an atomic add or a read records in a segment it covers.
    const auto record = [&](XSeg& g) {
        XAcc& slot = write ? g.a : g.r;  // an atomic add keeps the plain write: a later core's add must see it
        const bool several = slot.core != -1 && slot.phase == now.phase && slot.core != now.core;
        slot = now;
        if (several) slot.core = -2;  // several cores in this phase: any later access of another core conflicts
    };
    // Fast path: [a, b) is exactly one segment (a buffer accessed again as a whole), as in access().
    if (auto one = sh.find(a); one != sh.end() && one->second.end == b) {
        check(one->second, a, b);
        if (write && !atomic) {
            one->second = XSeg{};
            one->second.end = b;
            one->second.w = now;
        } else {
            record(one->second);
        }
        return;
    }
    split_at(sh, a);
    split_at(sh, b);
    for (auto it = sh.lower_bound(a); it != sh.end() && it->first < b; ++it) {
        check(it->second, std::max(a, it->first), std::min(b, it->second.end));
    }
    if (write && !atomic) {
        sh.erase(sh.lower_bound(a), sh.lower_bound(b));
        XSeg g;
        g.end = b;
        g.w = now;
        sh.emplace(a, g);
        return;
    }
    uint64_t at = a;
    auto it = sh.lower_bound(a);
    while (at < b) {
        if (it == sh.end() || it->first > at) {
            const uint64_t end = (it == sh.end() || it->first >= b) ? b : it->first;
            XSeg g;
            g.end = end;
            it = sh.emplace_hint(it, at, g);
        }
        XSeg& g = it->second;
        record(g);
        at = g.end;
        ++it;
    }
}

// The baton. Leaked on purpose: a core thread that fail()s calls std::exit while the others
// wait on it, and destroying a condition variable that threads wait on is undefined.
enum class CoreState : uint8_t { NotStarted, Running, Waiting, Finished };
struct Baton {
    std::mutex m;
    std::condition_variable cv;
    int64_t turn = -1;  // the core that may run; -1: the launching thread
    uint32_t level = 0;  // SyncAll calls every core may pass now
    std::vector<CoreState> state;
    std::vector<std::unique_ptr<Core>> cores;
    std::exception_ptr error;
    uint64_t gen = 0;  // launch number: threads of an abandoned launch never take a later baton
    bool active = false;
};
Baton& baton() {
    static Baton* b = new Baton;
    return *b;
}

// Picks who runs next (with the baton's lock held, by the thread giving the baton up): the
// lowest core that can run; when every live core waits in SyncAll level+1, the barrier opens.
int64_t next_turn(Baton& b) {
    for (;;) {
        const int64_t n = int64_t(b.state.size());
        for (int64_t i = 0; i < n; ++i) {
            const CoreState s = b.state[size_t(i)];
            if (s == CoreState::NotStarted || (s == CoreState::Waiting && b.cores[size_t(i)]->syncs <= b.level)) return i;
        }
        int64_t waiting = -1;
        for (int64_t i = 0; i < n && waiting < 0; ++i) {
            if (b.state[size_t(i)] == CoreState::Waiting) waiting = i;
        }
        if (waiting < 0) return -1;  // every core returned
        for (int64_t i = 0; i < n; ++i) {
            const Core& c = *b.cores[size_t(i)];
            if (b.state[size_t(i)] == CoreState::Finished && c.syncs <= b.level) {
                // The barrier never opens on the NPU: the returned core never arrives.
                fail("SyncAll", "SyncAll count differs between cores",
                     "core " + std::to_string(waiting) + " waits in SyncAll #" + str(b.level + 1) + " (at " +
                         base_name(b.cores[size_t(waiting)]->sync_at.file) + ":" +
                         str(b.cores[size_t(waiting)]->sync_at.line) + ") but core " +
                         std::to_string(i) + " returned after " + count_of(c.syncs, "SyncAll call") +
                         " (every core of the launch must call SyncAll equally often; the NPU hangs)");
            }
        }
        ++b.level;
    }
}

// The calling core (now in state `now`) hands the baton on, and unless it has finished waits
// until the baton comes back to it.
void pass_baton(int64_t me, CoreState now) {
    Baton& b = baton();
    std::unique_lock<std::mutex> lock(b.m);
    b.state[size_t(me)] = now;
    b.turn = next_turn(b);
    b.cv.notify_all();
    if (now == CoreState::Finished) return;
    const uint64_t gen = b.gen;
    b.cv.wait(lock, [&] { return b.gen == gen && b.turn == me; });
    b.state[size_t(me)] = CoreState::Running;
    g_core = b.cores[size_t(me)].get();
    block_idx = g_core->idx;
}

// One simulated core's thread: waits for the baton, runs the kernel, hands the baton on. A
// failure that throws (a fail handler) ends the launch: the launching thread gets it back.
void core_main(int64_t me, int64_t num, uint64_t gen, const std::function<void()>* kernel) {
    Baton& b = baton();
    {
        std::unique_lock<std::mutex> lock(b.m);
        b.cv.wait(lock, [&] { return b.gen == gen && b.turn == me; });
        b.state[size_t(me)] = CoreState::Running;
        g_core = b.cores[size_t(me)].get();
    }
    try {
        begin_core(me, num);
        (*kernel)();
        end_core();
        pass_baton(me, CoreState::Finished);
    } catch (...) {
        std::unique_lock<std::mutex> lock(b.m);
        b.error = std::current_exception();
        b.turn = -1;
        b.cv.notify_all();
    }
}

}  // namespace

// ---------------------------------------------------------------- runtime.h

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

void abandon_launch() {
    g_core->active = false;
    g_core->pipe = nullptr;
    g_core->counters = nullptr;
    g_core = &g_sequential_core;
    g_gm.clear();
    g_xgm.clear();
}

void run_cores(int64_t block_num, const std::function<void()>& kernel) {
    Baton& b = baton();
    g_xgm.clear();
    std::vector<std::thread> threads;
    uint64_t gen = 0;
    {
        std::unique_lock<std::mutex> lock(b.m);
        gen = ++b.gen;
        b.state.assign(size_t(block_num), CoreState::NotStarted);
        b.cores.clear();
        for (int64_t i = 0; i < block_num; ++i) b.cores.push_back(std::make_unique<Core>());
        b.level = 0;
        b.error = nullptr;
        b.active = true;
    }
    for (int64_t i = 0; i < block_num; ++i) threads.emplace_back(core_main, i, block_num, gen, &kernel);
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(b.m);
        b.turn = next_turn(b);
        b.cv.notify_all();
        b.cv.wait(lock, [&] { return b.turn == -1; });
        error = b.error;
        b.active = false;
    }
    if (error) {
        // The other cores wait for a baton that never comes (their gen is over); the failed
        // core stays current until abandon_launch, as it would after a sequential launch.
        for (std::thread& t : threads) t.detach();
        std::rethrow_exception(error);
    }
    for (std::thread& t : threads) t.join();
    g_core = &g_sequential_core;
}

void set_soc(const SocConfig& soc) { g_soc = soc; }
void set_auto_sync(bool on) { g_auto_sync = on; }
bool auto_sync() { return g_auto_sync; }
const SocConfig& soc() { return g_soc; }

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

void gm_free_all() {
    g_gm.clear();
    g_xgm.clear();
}

const GmBuffer* gm_find(const void* addr, size_t bytes) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (const GmEntry& e : g_gm) {
        const uintptr_t base = reinterpret_cast<uintptr_t>(e.view.base);
        if (a >= base && a <= base + e.view.bytes && bytes <= base + e.view.bytes - a) return &e.view;
    }
    return nullptr;
}

void begin_core(int64_t idx, int64_t num) {
    if (g_core->active) fail("begin_core", "core already running", "end_core was not called for core " + str(g_core->idx));
    g_core->active = true;
    g_core->idx = idx;
    g_core->ub.assign(g_soc.ub_bytes, kPoison);
    g_core->bufs.clear();
    g_core->ques.clear();
    g_core->pipe = nullptr;
    g_core->next_que = 0;
    g_core->next_tbuf = 0;
    std::memset(g_core->flags, 0, sizeof g_core->flags);
    // Each core starts with no pipe history; the cross-core shadow (see "cores") orders its GM
    // accesses against the other cores'.
    g_core->pipes = Pipes{};
    g_core->syncs = 0;
    g_core->atomic_add = false;
    g_core->atomic_type = DType::Other;
    Counters& c = g_counters[idx];
    c = Counters{};
    g_core->counters = &c;
    release_all();
    block_idx = idx;
    block_num = num;
    trace::core_begin(idx);
}

void end_core() {
    core("end_core");
    audit_leaks("end_core");
    if (g_core->atomic_add) {
        // The docs ask for SetAtomicNone after the adds (SetAtomicAdd 注意事项: "以免影响后续相关指令
        // 功能"); the mode is core state that only a TPipe constructor or Reset clears
        // (InitSocState), so a later copy-out on this core, of this kernel or of one without a
        // TPipe, would add instead of store. Stricter than proven necessary, on purpose.
        fail("end_core", "atomic add left on at kernel end",
             std::string("SetAtomicAdd<") + dtype_name(g_core->atomic_type) + "> at " +
                 base_name(g_core->atomic_at.file) + ":" + str(g_core->atomic_at.line) +
                 " was never followed by SetAtomicNone()");
    }
    gm_check_guards();
    g_core->active = false;
    g_core->pipe = nullptr;
    g_core->counters = nullptr;
}

int64_t current_core() { return g_core->active ? g_core->idx : -1; }

// The keys are the fields of CoreCounters in src/verify/protocol.rs (tests/twin_protocol.rs
// compares the two lists).
void write_counters(JsonWriter& json) {
    json.begin_object();
    json.key("cores").begin_array();
    for (const auto& kv : g_counters) {
        const Counters& c = kv.second;
        json.begin_object();
        json.key("core").integer(kv.first);
        json_map(json, "gm_read_bytes", c.gm_read);
        json_map(json, "gm_write_bytes", c.gm_write);
        json.key("transfers_in").uint(c.transfers_in);
        json.key("transfer_in_bytes").uint(c.transfer_in_bytes);
        json.key("transfers_out").uint(c.transfers_out);
        json.key("transfer_out_bytes").uint(c.transfer_out_bytes);
        json_map(json, "vector_instructions", c.vec_instr);
        json_map(json, "vector_elements", c.vec_elems);
        json.key("scalar_gm_accesses").uint(c.scalar_gm);
        json.key("scalar_ub_accesses").uint(c.scalar_ub);
        json.key("ub_high_water_bytes").uint(c.ub_high);
        json.key("queue_handoffs").uint(c.handoffs);
        json.key("barriers").uint(c.barriers);
        json.key("copy_in_overlapped").uint(c.copy_in_overlapped);
        json.key("copy_in_total").uint(c.copy_in_total);
        json.key("copy_in_queues").uint(c.copy_in_queues);
        json.key("transfer_in_min_bytes").uint(c.transfer_in_min);
        json.key("transfer_in_max_bytes").uint(c.transfer_in_max);
        json.key("transfer_out_min_bytes").uint(c.transfer_out_min);
        json.key("transfer_out_max_bytes").uint(c.transfer_out_max);
        json_map(json, "gm_read_transfers", c.read_transfers);
        json_map(json, "gm_write_transfers", c.write_transfers);
        json_map(json, "flag_waits", c.flag_waits);
        json_map(json, "hidden_flag_waits", c.hidden_waits);
        json.end_object();
    }
    json.end_array();
    json.end_object();
}

void write_counters_json(FILE* out) {
    JsonWriter json;
    write_counters(json);
    json.flush(out);
    std::fputc('\n', out);
}

uint64_t float_atomic_adds(int64_t core) {
    const auto it = g_counters.find(core);
    return it == g_counters.end() ? 0 : it->second.float_atomic_adds;
}

void reset_counters() {
    g_counters.clear();
    if (g_core->active) g_core->counters = &g_counters[g_core->idx];
}

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

// ---------------------------------------------------------------- TPipe / TQue / TBuf

void pipe_open(const void* pipe) {
    Core& c = core("TPipe");
    if (c.pipe != nullptr) fail("TPipe", "second TPipe while one is alive", "A2 kernels have one TPipe per core");
    // A pipe that ended before this one must have returned its tensors; then UB starts afresh.
    audit_leaks("TPipe");
    release_all();
    c.pipe = pipe;
    // CANN 8.1 TPipe::TPipe() calls InitSocState(), which starts with set_atomic_none()
    // (impl/kernel_tpipe_impl.h).
    c.atomic_add = false;
}

void pipe_close(const void* pipe) {
    if (g_core->active && g_core->pipe == pipe) g_core->pipe = nullptr;
}

void* pipe_current() {
    Core& c = core("GetTPipePtr");
    if (c.pipe == nullptr) fail("GetTPipePtr", "no TPipe", "no TPipe is alive on this core");
    return const_cast<void*>(c.pipe);
}

void pipe_reset(const void*) {
    core("TPipe::Reset");
    audit_leaks("TPipe::Reset");
    release_all();
    g_core->atomic_add = false;  // TPipe::Reset() calls InitSocState() too
}

void que_init(Handle& que, uint8_t pos, int32_t depth, uint32_t num, uint32_t len, uint8_t enq_evt,
              uint8_t free_evt) {
    const char* api = "TPipe::InitBuffer";
    Core& c = core(api);
    QueRec q;
    q.pos = pos;
    q.enq_evt = enq_evt;
    q.free_evt = free_evt;
    q.depth = depth;
    q.num = int32_t(num);
    q.ordinal = c.next_que;
    const std::string what = que_desc(q);
    if (que.epoch == c.epoch && que.rec >= 0) fail(api, "queue initialised twice", what + " already has buffers");
    if (depth < 1) fail(api, "queue depth out of range", what + ": a TQue needs depth >= 1");
    const uint32_t start = ub_reserve(api, what, pos, num, len, true);
    const uint32_t bytes = uint32_t(round_up(len, 32));
    q.first = int32_t(c.bufs.size());
    for (uint32_t i = 0; i < num; ++i) {
        BufRec b;
        b.queue = int32_t(c.ques.size());
        b.pos = pos;
        b.index = i;
        b.ordinal = q.ordinal;
        b.ub_off = start + i * bytes;
        b.bytes = bytes;
        c.bufs.push_back(b);
    }
    ++c.next_que;
    que = Handle{int32_t(c.ques.size()), c.epoch};
    c.ques.push_back(std::move(q));
}

void tbuf_init(Handle& buf, uint8_t pos, uint32_t len) {
    const char* api = "TPipe::InitBuffer";
    Core& c = core(api);
    BufRec b;
    b.pos = pos;
    b.ordinal = c.next_tbuf;
    const std::string what = buf_name(b);
    if (buf.epoch == c.epoch && buf.rec >= 0) fail(api, "TBuf initialised twice", what + " already has a buffer");
    b.ub_off = ub_reserve(api, what, pos, 1, len, false);
    b.bytes = uint32_t(round_up(len, 32));
    b.state = BufState::Fixed;
    ++c.next_tbuf;
    buf = Handle{int32_t(c.bufs.size()), c.epoch};
    c.bufs.push_back(b);
}

TensorRef que_alloc(const Handle& que) {
    const char* api = "TQue::AllocTensor";
    QueRec& q = que_of(que, api);
    for (int32_t k = 0; k < q.num; ++k) {
        const int32_t i = (q.cursor + k) % q.num;
        BufRec& b = g_core->bufs[size_t(q.first + i)];
        if (b.state != BufState::Free) continue;
        q.cursor = (i + 1) % q.num;
        b.state = BufState::Allocated;
        ++b.gen;
        // CANN's AllocTensor waits for the buffer's FreeTensor event (freeBufEvt) if one was set.
        if (b.free_set) flag_pair(q.free_evt, b.free_snap);
        if (b.free_set) trace::flag(false, kEventNames[q.free_evt], trace::kQueueKey + q.first + i);
        b.free_set = false;
        poison(b.ub_off, b.bytes);
        return TensorRef{q.first + i, b.gen, b.ub_off, b.bytes};
    }
    fail(api, "AllocTensor with no free buffer",
         que_desc(q) + ": every buffer is allocated or in the queue (the NPU would wait forever for a FreeTensor)");
}

void que_enque(const Handle& que, const TensorRef& t) {
    const char* api = "TQue::EnQue";
    QueRec& q = que_of(que, api);
    if (!in_queue(q, t.buf)) {
        fail(api, "EnQue of a tensor not allocated from this queue",
             tensor_desc(t) + " was not produced by AllocTensor of " + que_desc(q));
    }
    BufRec& b = g_core->bufs[size_t(t.buf)];
    if (b.state != BufState::Allocated || b.gen != t.gen) {
        fail(api, "EnQue of a tensor not allocated from this queue",
             tensor_desc(t) + " is " + (b.gen != t.gen ? "a stale view of an earlier allocation" : state_name(b.state)) +
                 "; only a tensor between AllocTensor and EnQue can be EnQue'd");
    }
    if (int32_t(q.fifo.size()) >= q.depth) {
        fail(api, "EnQue beyond the queue depth",
             que_desc(q) + " already holds " + count_of(q.fifo.size(), "EnQue'd tensor") +
                 " (the NPU queue would overwrite one; DeQue first or raise the depth)");
    }
    q.fifo.push_back(t.buf);
    b.state = BufState::Enqueued;
    b.enq_snap = flag_carries(q.enq_evt);
    trace::flag(true, kEventNames[q.enq_evt], trace::kQueueKey + t.buf);
    ++counters().handoffs;
}

TensorRef que_deque(const Handle& que) {
    const char* api = "TQue::DeQue";
    QueRec& q = que_of(que, api);
    if (q.fifo.empty()) {
        fail(api, "DeQue on an empty queue", que_desc(q) + " holds no EnQue'd tensor (the NPU would wait forever)");
    }
    const int32_t id = q.fifo.front();
    q.fifo.pop_front();
    BufRec& b = g_core->bufs[size_t(id)];
    b.state = BufState::Dequeued;
    flag_pair(q.enq_evt, b.enq_snap);
    trace::flag(false, kEventNames[q.enq_evt], trace::kQueueKey + id);
    ++counters().handoffs;
    return TensorRef{id, b.gen, b.ub_off, b.bytes};
}

void que_free(const Handle& que, const TensorRef& t) {
    const char* api = "TQue::FreeTensor";
    QueRec& q = que_of(que, api);
    if (!in_queue(q, t.buf)) {
        fail(api, "FreeTensor of a tensor not allocated from this queue",
             tensor_desc(t) + " does not belong to " + que_desc(q));
    }
    BufRec& b = g_core->bufs[size_t(t.buf)];
    if (b.state == BufState::Free || b.gen != t.gen) {
        fail(api, "double FreeTensor",
             tensor_desc(t) + ": this allocation was already freed" +
                 (b.state == BufState::Free ? "" : " and the buffer has been allocated again since"));
    }
    if (b.state == BufState::Enqueued) {
        fail(api, "FreeTensor of a tensor not allocated or dequeued",
             tensor_desc(t) + " is still in the queue; DeQue it before FreeTensor");
    }
    b.state = BufState::Free;
    b.free_snap = flag_carries(q.free_evt);
    b.free_set = true;
    trace::flag(true, kEventNames[q.free_evt], trace::kQueueKey + t.buf);
}

int32_t que_count(const Handle& que) { return int32_t(que_of(que, "TQue::GetTensorCountInQue").fifo.size()); }

TensorRef tbuf_get(const Handle& buf, const char* api, uint64_t offset_bytes, uint64_t bytes) {
    BufRec& b = tbuf_of(buf, api);
    if (b.state == BufState::Released) fail(api, "use of a buffer released by TPipe::Reset", buf_name(b));
    if (offset_bytes % 32 != 0) {
        fail(api, "UB address not 32-byte aligned", buf_name(b) + ": bufOffset " + str(offset_bytes) + " B");
    }
    if (bytes == UINT64_MAX) bytes = offset_bytes <= b.bytes ? b.bytes - offset_bytes : 0;
    if (offset_bytes + bytes > b.bytes) {
        fail(api, "Get beyond the TBuf size",
             buf_name(b) + ": bytes [" + str(offset_bytes) + ", " + str(offset_bytes + bytes) + ") of " + str(b.bytes));
    }
    return TensorRef{int32_t(&b - g_core->bufs.data()), b.gen, uint32_t(b.ub_off + offset_bytes), uint32_t(bytes)};
}

// ---------------------------------------------------------------- pipes (kernel side)

Call::Call(const char* api, Pipe pipe, const Here& here) {
    Core& c = core(api);
    outer_ = c.pipes.depth == 0;
    ++c.pipes.depth;
    if (outer_) start_instruction(pipe, api, here);
}

Call::~Call() {
    if (g_core->active && g_core->pipes.depth > 0) --g_core->pipes.depth;
}

void call_on(Pipe pipe) {
    Pipes& ps = core("call_on").pipes;
    const Acc cur = ps.cur;
    start_instruction(pipe, cur.api, Here(cur.file, cur.line));
}

void hidden_sync(uint8_t evt) {
    core("hidden_sync");
    flag_pair(evt, flag_carries(evt));
    ++counters().hidden_waits[kEventNames[evt]];
    trace::hidden(kEventNames[evt]);
}

namespace {
Pipes& running(const char* what) {
    Pipes& ps = core(what).pipes;
    if (ps.depth == 0) {
        // twin rule untested: an internal check of the twin headers (every API opens a kern::Call); no kernel can reach it
        fail(what, "twin: access outside an API call",
             "a twin API touched memory without a kern::Call naming its pipe (a bug in the twin headers)");
    }
    return ps;
}
}  // namespace

void track_ub(uint64_t off, uint64_t bytes, bool write) {
    Pipes& ps = running("track_ub");
    access(ps.ub, off, off + bytes, write, [](uint64_t a, uint64_t b) {
        return "UB [" + hex(a) + ", " + hex(b) + ") of " + ub_region(a);
    });
}

void track_gm(const void* addr, uint64_t bytes, bool write) {
    Pipes& ps = running("track_gm");
    const GmBuffer* g = gm_find(addr, bytes);
    if (g == nullptr || bytes == 0) return;  // gm_operand already refused accesses outside GM buffers
    const uint64_t off = uint64_t(static_cast<const uint8_t*>(addr) - g->base);
    const char* name = g->name;
    access(ps.gm[g->base], off, off + bytes, write, [name](uint64_t a, uint64_t b) {
        return "GM '" + std::string(name) + "' bytes [" + str(a) + ", " + str(b) + ")";
    });
    // Only MTE3 writes GM (copy-outs); under SetAtomicAdd they are adds (see "atomic").
    const bool atomic = write && ps.pipe == Pipe::MTE3 && g_core->atomic_add;
    cross_access(g->base, name, off, off + bytes, write, atomic);
}

// dav_c220: TOTAL_VEC_LOCAL_SIZE = TMP_UB_OFFSET = 184 KiB (CANN 8.1 impl/utils/
// kernel_utils_constants.h l.136-138); APIs that need scratch write it there, whatever the
// kernel's TPipe put there.
constexpr uint64_t kTmpUbOffset = 184 * 1024;

void api_scratch(const char* api, uint64_t bytes) {
    Core& c = core(api);
    const uint64_t a = kTmpUbOffset, b = kTmpUbOffset + bytes;
    if (b > c.ub.size()) return;
    for (const BufRec& buf : c.bufs) {
        if (buf.state == BufState::Released) continue;
        if (buf.ub_off < b && a < uint64_t(buf.ub_off) + buf.bytes) {
            fail(api, "buffer overlaps the API scratch at TMP_UB_OFFSET",
                 buf_name(buf) + " [UB " + hex(buf.ub_off) + ", " + str(buf.bytes) + " B] covers UB [" + hex(a) + ", " +
                     hex(b) + "), which " + api + " overwrites on dav_c220 (TMP_UB_OFFSET = 184 KiB); keep the " +
                     "TPipe's buffers below 184 KiB in kernels that use it");
        }
    }
    track_ub(a, bytes, true);
    poison(uint32_t(a), bytes);
}

// ---------------------------------------------------------------- SyncAll and the workspace

namespace {
const GmBuffer* launch_workspace() {
    for (const GmEntry& e : g_gm) {
        if (e.name == "workspace") return &e.view;
    }
    return nullptr;
}
}  // namespace

void sync_all(const Here& here) {
    Core& c = core("SyncAll");
    Baton& b = baton();
    if (!b.active || g_core == &g_sequential_core) {
        fail("SyncAll", "SyncAll outside a concurrent launch",
             "the cores of this launch run one after another (begin_core / end_core), so none can wait for "
             "the others; launch the kernel with run_cores");
    }
    const GmBuffer* ws = launch_workspace();
    if (ws == nullptr || ws->bytes < kSysWorkspaceBytes) {
        fail("SyncAll", "SyncAll without the system workspace",
             std::string("at ") + base_name(here.file) + ":" + str(here.line) + ": the launch's workspace has " +
                 (ws ? str(ws->bytes) + " B" : std::string("no buffer")) + "; the TilingFunc must reserve " +
                 "PlatformAscendC::GetLibApiWorkSpaceSize() (" + str(kSysWorkspaceBytes) +
                 " B on A2/A3) in GetWorkspaceSizes(1)[0] besides its own bytes");
    }
    // dav_c220 SyncAllImpl starts with PipeBarrier<PIPE_ALL>: every pipe of this core drains.
    barrier(PIPE_ALL);
    ++c.syncs;
    c.sync_at = here;
    pass_baton(c.idx, CoreState::Waiting);
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


// ---------------------------------------------------------------- checks

uint8_t* ub_base() { return core("LocalTensor").ub.data(); }

std::string tensor_desc(const TensorRef& t) {
    if (!g_core->active || t.buf < 0 || size_t(t.buf) >= g_core->bufs.size()) return "an unbacked LocalTensor";
    const BufRec& b = g_core->bufs[size_t(t.buf)];
    std::string s = buf_name(b) + " [UB " + hex(b.ub_off) + ", " + str(b.bytes) + " B]";
    if (t.off != b.ub_off) s += " at +" + str(t.off - b.ub_off) + " B";
    return s;
}

uint8_t* ub_operand(const char* api, const char* role, const TensorRef& t, uint64_t bytes, bool aligned,
                    Extent extent, bool track) {
    const BufRec& b = live_buffer(api, role, t);
    if (aligned && t.off % 32 != 0) {
        fail(api, "UB address not 32-byte aligned",
             std::string(role) + " " + tensor_desc(t) + " starts at UB " + hex(t.off));
    }
    uint64_t limit = extent == Extent::BlockPadded ? round_up(t.bytes, 32) : t.bytes;
    limit = std::min<uint64_t>(limit, uint64_t(b.ub_off) + b.bytes - t.off);
    if (bytes > limit) {
        fail(api, "access outside the LocalTensor",
             std::string(role) + " " + tensor_desc(t) + ": the access covers " + str(bytes) + " B, the tensor " +
                 str(limit) + " B");
    }
    if (track && bytes > 0) track_ub(t.off, bytes, std::strncmp(role, "dst", 3) == 0);
    return g_core->ub.data() + t.off;
}

void check_overlap(const char* api, const char* role_a, const TensorRef& a, uint64_t bytes_a, const char* role_b,
                   const TensorRef& b, uint64_t bytes_b, bool identical_ok) {
    if (bytes_a == 0 || bytes_b == 0) return;
    const uint64_t a0 = a.off, a1 = a.off + bytes_a, b0 = b.off, b1 = b.off + bytes_b;
    if (a1 <= b0 || b1 <= a0) return;
    if (identical_ok && a0 == b0 && bytes_a == bytes_b) return;
    fail(api, "partial overlap of dst and src",
         std::string(role_a) + " UB [" + hex(a0) + ", " + hex(a1) + ") and " + role_b + " UB [" + hex(b0) + ", " +
             hex(b1) + ") overlap" + (identical_ok ? " without being the same range" : " (different element types)"));
}

void check_count(const char* api, int64_t count) {
    if (count < 0) fail(api, "negative count", "count " + std::to_string(count));
}

void fail_dtype(const char* api, const char* role, DType t) {
    fail(api, "dtype not supported on A2",
         std::string(role) + " = " + dtype_name(t) +
             (t == DType::BF16 ? " (A2 has no bfloat16_t arithmetic: Cast to float, compute, Cast back with CAST_RINT)"
                               : ""));
}

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

uint8_t* ub_element(const char* api, const TensorRef& t, uint64_t index, uint32_t elem_size, bool write) {
    live_buffer(api, "tensor", t);
    if ((index + 1) * elem_size > t.bytes) {
        fail(api, "index out of bounds",
             tensor_desc(t) + ": index " + str(index) + ", size " + str(t.bytes / elem_size) + " elements");
    }
    count_scalar_ub();
    track_ub(t.off + index * elem_size, elem_size, write);
    return g_core->ub.data() + t.off + index * elem_size;
}

void check_resize(const char* api, const TensorRef& t, uint64_t bytes) {
    const BufRec& b = live_buffer(api, "tensor", t);
    if (t.off + bytes > uint64_t(b.ub_off) + b.bytes) {
        fail(api, "SetSize beyond the buffer", tensor_desc(t) + ": " + str(bytes) + " B would pass the buffer's end");
    }
}

int32_t buffer_position(const TensorRef& t) {
    if (!g_core->active || t.buf < 0 || size_t(t.buf) >= g_core->bufs.size()) return -1;
    return g_core->bufs[size_t(t.buf)].pos;
}

// ---------------------------------------------------------------- events

void event_set(uint8_t evt, int32_t id) {
    check_event("SetFlag", evt, id);
    bool& flag = core("SetFlag").flags[evt][id];
    if (flag) {
        fail("SetFlag", "SetFlag twice without WaitFlag",
             event_desc(evt, id) + " is already set (each SetFlag needs its WaitFlag before the next SetFlag)");
    }
    flag = true;
    g_core->pipes.flag_snap[evt][id] = flag_carries(evt);
    trace::flag(true, kEventNames[evt], id);
}

void event_wait(uint8_t evt, int32_t id) {
    check_event("WaitFlag", evt, id);
    bool& flag = core("WaitFlag").flags[evt][id];
    if (!flag) {
        fail("WaitFlag", "WaitFlag without a matching SetFlag",
             event_desc(evt, id) + " was not set (the NPU would wait forever)");
    }
    flag = false;
    flag_pair(evt, g_core->pipes.flag_snap[evt][id]);
    ++counters().flag_waits[kEventNames[evt]];
    trace::flag(false, kEventNames[evt], id);
}

int8_t event_fetch(uint8_t evt) {
    check_event("TPipe::FetchEventID", evt, 0);
    const Core& c = core("TPipe::FetchEventID");
    for (int id = 0; id < kEventIds; ++id) {
        if (!c.reserved[evt][id]) return int8_t(id);
    }
    fail("TPipe::FetchEventID", "no free event id", std::string("all ids of HardEvent::") + kEventNames[evt] + " are allocated");
}

int8_t event_alloc(uint8_t evt) {
    const int8_t id = event_fetch(evt);
    g_core->reserved[evt][id] = true;
    return id;
}

void event_release(uint8_t evt, int32_t id) {
    check_event("TPipe::ReleaseEventID", evt, id);
    core("TPipe::ReleaseEventID").reserved[evt][id] = false;
}

void barrier(int pipe) {
    if (pipe == PIPE_S) fail("PipeBarrier", "PipeBarrier<PIPE_S> is not allowed", "the scalar pipe has no barrier");
    ++counters().barriers;
    Pipes& ps = g_core->pipes;
    if (pipe == PIPE_ALL) {
        trace::barrier("ALL");
        // Every pipe drains and the scalar unit waits for it: everything is ordered before.
        Clock all;
        for (int q = 0; q < kP; ++q) all.c[q] = ps.cnt[q];
        for (int q = 0; q < kP; ++q) ps.vc[q] = all;
        return;
    }
    int p = -1;
    switch (pipe) {
        case PIPE_V: p = int(Pipe::V); break;
        case PIPE_MTE2: p = int(Pipe::MTE2); break;
        case PIPE_MTE3: p = int(Pipe::MTE3); break;
        case PIPE_MTE1: p = int(Pipe::MTE1); break;
        case PIPE_M: p = int(Pipe::M); break;
        case PIPE_FIX: p = int(Pipe::FIX); break;
        default: fail("PipeBarrier", "pipe not modelled", "pipe_t value " + std::to_string(pipe));
    }
    // A barrier is an instruction of that pipe: its later instructions wait for its earlier ones.
    ps.vc[p].c[p] = ps.cnt[p];
    trace::barrier(pipe_name(p));
}

// ---------------------------------------------------------------- counters

void count_vector(const char* api, uint64_t elements) {
    Counters& c = counters();
    auto it = c.vec_instr.find(api);
    if (it == c.vec_instr.end()) it = c.vec_instr.emplace(api, 0).first;
    ++it->second;
    c.vec_elems[api] += elements;
    trace::vector_elements(elements);
}

namespace {
// Smallest and largest transfer so far (0 = none yet).
void note_transfer_size(uint64_t bytes, uint64_t& min, uint64_t& max) {
    if (min == 0 || bytes < min) min = bytes;
    if (bytes > max) max = bytes;
}
}  // namespace

void count_copy_in(const char* gm_name, uint64_t bytes, const TensorRef& dst) {
    Counters& c = counters();
    ++c.transfers_in;
    c.transfer_in_bytes += bytes;
    c.gm_read[gm_name] += bytes;
    ++c.read_transfers[gm_name];
    note_transfer_size(bytes, c.transfer_in_min, c.transfer_in_max);
    trace::transfer(gm_name, bytes);
    const BufRec& b = g_core->bufs[size_t(dst.buf)];
    if (b.queue < 0) return;
    QueRec& q = g_core->ques[size_t(b.queue)];
    // A tile may be filled by several copies (a transpose gathers strided runs): a copy into the
    // allocation the queue's previous copy-in filled continues that tile's fill. It is issued
    // right behind the tile's first copy, so it waits for nothing the first one did not.
    if (q.last_copy_in == dst.buf && q.last_copy_gen == b.gen) return;
    ++c.copy_in_total;
    // Double-buffering evidence. The twin runs a core's instructions one after another, but on the
    // NPU the scalar unit only issues them: MTE2 runs the copy-in of tile i+1 as soon as its buffer
    // is free, while the vector pipe still computes tile i. That holds when the copy goes into a
    // different buffer of the queue than the previous copy-in did (so it need not wait for tile
    // i's FreeTensor); with one buffer, or the same buffer again, MTE2 waits for the vector pipe.
    // The first copy-in of each queue has no predecessor and is never counted.
    if (q.last_copy_in < 0) {
        ++c.copy_in_queues;
    } else if (q.num >= 2 && q.last_copy_in != dst.buf) {
        ++c.copy_in_overlapped;
    }
    q.last_copy_in = dst.buf;
    q.last_copy_gen = b.gen;
}

void count_copy_out(const char* gm_name, uint64_t bytes) {
    Counters& c = counters();
    ++c.transfers_out;
    c.transfer_out_bytes += bytes;
    c.gm_write[gm_name] += bytes;
    ++c.write_transfers[gm_name];
    note_transfer_size(bytes, c.transfer_out_min, c.transfer_out_max);
    trace::transfer(gm_name, bytes);
}

void count_scalar_gm(const char* gm_name, uint64_t bytes, bool write) {
    Counters& c = counters();
    ++c.scalar_gm;
    trace::scalar_access(true);
    (write ? c.gm_write : c.gm_read)[gm_name] += bytes;
}

void count_scalar_ub() {
    ++counters().scalar_ub;
    trace::scalar_access(false);
}

}  // namespace kern
}  // namespace opgen_twin
