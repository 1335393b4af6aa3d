// The pipes' happens-before model of one core, SetFlag/WaitFlag events and PipeBarrier.
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
namespace rt {

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

}  // namespace rt

using namespace rt;

void set_auto_sync(bool on) { g_auto_sync = on; }
bool auto_sync() { return g_auto_sync; }

namespace kern {

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

std::string call_site() {
    const Acc& cur = core("call_site").pipes.cur;
    return base_name(cur.file) + ":" + str(cur.line);
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
    in_place_access(g->base, name, off, off + bytes, write);
    dcache_access(g->base, name, off, off + bytes, write, ps.pipe == Pipe::S);
}

// ---------------------------------------------------------------- events
//
// One id pool per HardEvent, as CANN 8.1's TPipe keeps (eventPool_, impl/kernel_tpipe_impl.h):
// AllocEventID takes its lowest free id and ReleaseEventID gives it back; FetchEventID names that
// id without taking it; and on dav_c220 every TQue hand-off takes one too (EnQue and FreeTensor:
// AllocEventID + SetFlag; DeQue and the next AllocTensor: WaitFlag + ReleaseEventID;
// kernel_tquebind_impl.h). A kernel id that is a constant, or fetched and held across a queue
// operation, can name the id a queue holds: the two SetFlags of one flag hang or race on the NPU
// (the docs forbid user ids in TQue code). The twin refuses the collision, naming both sites.

}  // namespace kern

namespace rt {
namespace {
Acc site(const char* api, const kern::Here& here) { return Acc{0, api, here.file, here.line}; }

std::string site_desc(const Acc& a) { return std::string(a.api ? a.api : "?") + " at " + base_name(a.file) + ":" + str(a.line); }

// `first` holds or set the flag, `then` (the failing call) touches it; one of them is a queue's.
[[noreturn]] void id_collision(uint8_t evt, int32_t id, const Acc& first, const Acc& then, bool queue_first) {
    fail(then.api, "event id collides with a TQue's",
         event_desc(evt, id) + ": " + (queue_first ? "held by the TQue's " : "set by ") + site_desc(first) +
             ", then " + (queue_first ? "" : "taken by the TQue's ") + site_desc(then) +
             " (a TQue takes its ids from the TPipe's pool; a kernel's id must come from AllocEventID, or "
             "FetchEventID used before any queue operation, never a constant)");
}
}  // namespace

int8_t queue_flag_set(const char* api, uint8_t evt, const kern::Here& here) {
    Core& c = core(api);
    int id = 0;
    while (id < kEventIds && c.holder[evt][id] != IdHolder::None) ++id;
    if (id == kEventIds) {
        fail(api, "no free event id",
             std::string("all ids of HardEvent::") + kEventNames[evt] + " are held (AllocEventID or queue hand-offs)");
    }
    if (c.flags[evt][id]) id_collision(evt, id, c.flag_at[evt][id], site(api, here), false);
    c.holder[evt][id] = IdHolder::Queue;
    c.flags[evt][id] = true;
    c.flag_at[evt][id] = site(api, here);
    return int8_t(id);
}

void queue_flag_wait(uint8_t evt, int8_t id) {
    if (id < 0) return;
    g_core->flags[evt][id] = false;
    g_core->holder[evt][id] = IdHolder::None;
}

}  // namespace rt

namespace kern {

void event_set(uint8_t evt, int32_t id, const Here& here) {
    check_event("SetFlag", evt, id);
    Core& c = core("SetFlag");
    if (c.holder[evt][id] == IdHolder::Queue) id_collision(evt, id, c.flag_at[evt][id], site("SetFlag", here), true);
    bool& flag = c.flags[evt][id];
    if (flag) {
        fail("SetFlag", "SetFlag twice without WaitFlag",
             event_desc(evt, id) + " is already set (each SetFlag needs its WaitFlag before the next SetFlag)");
    }
    flag = true;
    c.flag_at[evt][id] = site("SetFlag", here);
    g_core->pipes.flag_snap[evt][id] = flag_carries(evt);
    trace::flag(true, kEventNames[evt], id);
}

void event_wait(uint8_t evt, int32_t id, const Here& here) {
    check_event("WaitFlag", evt, id);
    Core& c = core("WaitFlag");
    if (c.holder[evt][id] == IdHolder::Queue) id_collision(evt, id, c.flag_at[evt][id], site("WaitFlag", here), true);
    bool& flag = c.flags[evt][id];
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
        if (c.holder[evt][id] == IdHolder::None) return int8_t(id);
    }
    fail("TPipe::FetchEventID", "no free event id", std::string("all ids of HardEvent::") + kEventNames[evt] + " are allocated");
}

int8_t event_alloc(uint8_t evt) {
    const int8_t id = event_fetch(evt);
    g_core->holder[evt][id] = IdHolder::Kernel;
    return id;
}

void event_release(uint8_t evt, int32_t id) {
    check_event("TPipe::ReleaseEventID", evt, id);
    IdHolder& h = core("TPipe::ReleaseEventID").holder[evt][id];
    if (h == IdHolder::Queue) {
        id_collision(evt, id, g_core->flag_at[evt][id], Acc{0, "TPipe::ReleaseEventID", nullptr, 0}, true);
    }
    h = IdHolder::None;
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

}  // namespace kern
}  // namespace opgen_twin
