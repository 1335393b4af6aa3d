// Concurrent cores: the cross-core GM history, the baton that runs one core at a time, core
// begin/end, and SyncAll.
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
namespace rt {

std::map<const uint8_t*, XShadow> g_xgm;

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
    trace::core_resume(me);  // this core's events after the barrier are its own
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

}  // namespace rt

using namespace rt;

void abandon_launch() {
    g_core->active = false;
    g_core->pipe = nullptr;
    g_core->counters = nullptr;
    g_core = &g_sequential_core;
    g_gm.clear();
    g_xgm.clear();
    dcache_reset();
}

void run_cores(int64_t block_num, const std::function<void()>& kernel) {
    Baton& b = baton();
    g_xgm.clear();
    dcache_reset();
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
    g_core->vmask_known = false;  // whatever the previous kernel left
    g_core->vmask_counter = false;
    g_core->vmask_at = Acc{};
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

namespace kern {

// ---------------------------------------------------------------- SyncAll and the workspace

void sync_all(const Here& here) {
    Core& c = core("SyncAll");
    Baton& b = baton();
    if (!b.active || g_core == &g_sequential_core) {
        fail("SyncAll", "SyncAll outside a concurrent launch",
             "the cores of this launch run one after another (begin_core / end_core), so none can wait for "
             "the others; launch the kernel with run_cores");
    }
    // SyncAll<true> waits for every block of the launch, so all of them must be resident at
    // once: one per vector core. Blocks past the core count start only when a core's block
    // returns, which no block waiting in the barrier ever does (the NPU hangs).
    if (b.cores.size() > g_soc.vector_cores) {
        fail("SyncAll", "SyncAll with more blocks than vector cores",
             std::string("at ") + base_name(here.file) + ":" + str(here.line) + ": the launch has " +
                 count_of(b.cores.size(), "block") + " but " + g_soc.name + " has " +
                 count_of(g_soc.vector_cores, "vector core") +
                 "; the blocks past them wait for a free core that SyncAll never frees (blockDim <= GetCoreNumAiv())");
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

}  // namespace kern
}  // namespace opgen_twin
