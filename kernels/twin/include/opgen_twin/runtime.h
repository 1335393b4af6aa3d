// The CPU twin's shared runtime: failure reporting, the simulated cores, the global-memory
// registry and the per-core counters. The kernel-side API (kernel_operator.h) and the runner
// (src/runner.cpp) both build on this header; nothing here is part of the AscendC API.
#ifndef OPGEN_TWIN_RUNTIME_H
#define OPGEN_TWIN_RUNTIME_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace opgen_twin {

class JsonWriter;

// Exit codes of the runner, shared with the Rust side (src/verify/twin.rs).
constexpr int EXIT_OK = 0;
constexpr int EXIT_HOST_REJECTED = 2;   // InferShape/InferDataType/TilingFunc returned GRAPH_FAILED
constexpr int EXIT_TWIN_RULE = 3;       // a strictness rule of the twin was broken
constexpr int EXIT_USAGE = 4;           // the runner was called wrongly

// Stops the run: prints one line
//   "opgen-twin: core <i>: <api>: <rule>: <detail>"
// (or "opgen-twin: host: ..." outside a core) to stderr and exits with EXIT_TWIN_RULE.
[[noreturn]] void fail(const char* api, const char* rule, const std::string& detail);

// In-process hosts (the torch CPU backend) cannot let a broken rule end the Python process: a
// handler set here is called by fail() with the line it would print (without "opgen-twin: ")
// and is expected to throw. The thrower must then call abandon_launch(). If the handler
// returns, fail() prints and exits as without one. nullptr restores the default.
using FailHandler = void (*)(const std::string& message);
void set_fail_handler(FailHandler handler);
// Forgets a launch that a failure interrupted: the running core (if any) stops and every GM
// buffer is freed, so the next launch starts clean.
void abandon_launch();

// ---- the SoC the twin models (set by the runner before any core runs) ----
struct SocConfig {
    std::string name = "Ascend910B2";
    uint32_t vector_cores = 48;
    uint64_t ub_bytes = 196608;  // physical UB per vector core
};
void set_soc(const SocConfig& soc);
const SocConfig& soc();

// ---- compiler auto-sync ----
// Off by default (strict): the happens-before checker accepts only the kernel's own flags,
// barriers and queue hand-offs. On (OPGEN_TWIN_AUTO_SYNC=1 in the environment, or this call)
// it also assumes what bisheng --cce-auto-sync inserts: V->V barriers and S<->{V, MTE2, MTE3}.
void set_auto_sync(bool on);
bool auto_sync();

// ---- global memory ----
// Allocates a GM buffer of `bytes` bytes named `name`, 32-byte aligned, surrounded by poisoned
// guard regions that are checked by gm_check_guards(). Contents start zeroed.
uint8_t* gm_alloc(const char* name, size_t bytes);
// Every registered buffer is checked for guard damage; a damaged guard fails the run.
void gm_check_guards();
void gm_free_all();
struct GmBuffer {
    const char* name;
    uint8_t* base;
    size_t bytes;
};
// The registered buffer containing [addr, addr + bytes), or nullptr.
const GmBuffer* gm_find(const void* addr, size_t bytes);
// Marks the buffer at `base` an input the kernel overwrites in place (the runner's --inplace:
// CANN passes one buffer as the input and its ref output). From then on no byte of it may be
// read after it was written, by the writing core or any other, in any order the cores run: on
// the NPU such a read gets the kernel's results (or, across cores, whichever lands first), not
// the input ("in-place input read after it was overwritten"; reads of bytes another core writes
// later are the cross-core WAR rule).
void gm_mark_in_place(const uint8_t* base);

// ---- cores ----
// Runs before each simulated core: resets that core's UB, pipe, queue and event state, sets
// block_idx / block_num. Cores run one after another; GM is shared.
void begin_core(int64_t block_idx, int64_t block_num);
// Runs after the kernel returned on that core: checks that every queue tensor was freed and
// that no queue still holds an EnQue'd tensor (a leak would hang the next launch on the NPU).
void end_core();
int64_t current_core();  // -1 outside a core
// Runs `kernel` on block_num simulated cores that may order their GM accesses with SyncAll:
// each core is its own thread (begin_core / kernel / end_core), but a baton lets one run at a
// time, deterministically: core 0 runs until its first SyncAll or its end, then core 1, ...;
// when every live core waits in its k-th SyncAll they all go on in index order. GM accesses of
// two cores between the same SyncAlls race unless both only read ("... between cores without
// SyncAll"); a core that returns while others wait in a SyncAll is "SyncAll count differs
// between cores". A kernel without SyncAll runs exactly as in a begin_core / end_core loop.
// A failure that throws (set_fail_handler) is rethrown here; then call abandon_launch().
void run_cores(int64_t block_num, const std::function<void()>& kernel);

// ---- counters ----
// Writes the counters of every core of the last launch as one JSON object:
// {"cores":[{"core":0,"gm_read_bytes":{"x":N,...},"gm_write_bytes":{...},"transfers_in":N,
//   "transfer_in_bytes":N,"transfers_out":N,"transfer_out_bytes":N,
//   "vector_instructions":{"Add":N,...},"vector_elements":{"Add":N,...},
//   "scalar_gm_accesses":N,"scalar_ub_accesses":N,"ub_high_water_bytes":N,
//   "queue_handoffs":N,"barriers":N,"copy_in_overlapped":N,"copy_in_total":N,"copy_in_queues":N,
//   "transfer_in_min_bytes":N,"transfer_in_max_bytes":N,"transfer_out_min_bytes":N,
//   "transfer_out_max_bytes":N,"gm_read_transfers":{"x":N,...},"gm_write_transfers":{...},
//   "flag_waits":{"V_S":N,...},"hidden_flag_waits":{"V_S":N,...}}, ...]}
// hidden_flag_waits counts the SetFlag/WaitFlag pairs AscendC APIs perform internally on dav_c220
// (ReduceSum, ReduceMax, ReduceMin: V_S, S_V, S_MTE3 each call); flag_waits only the kernel's own.
// A transfer is one GM<->UB DataCopy/DataCopyPad call (however many blocks it has). copy_in_total
// counts the tile fills of queue buffers: consecutive GM->UB copies of a queue into one allocation
// (a tile gathered by several copies) are one fill. copy_in_overlapped counts the fills that go
// into a different buffer of a queue with >= 2 buffers than that queue's previous fill (MTE2 can
// fill it while the vector pipe still works on the previous tile); copy_in_queues the queues that
// had a fill (their first fill has no predecessor). Double buffering is in effect on a core when
// copy_in_overlapped == copy_in_total - copy_in_queues.
void write_counters(JsonWriter& json);
// write_counters as text with a newline (the twin's C++ tests print it).
void write_counters_json(FILE* out);
void reset_counters();

// ---- DataCopyPad's padding lanes ----
// With left/right padding and isPad = false the NPU leaves the padding lanes as it finds them
// ("random", DataCopyPad 参数解释); the twin fills them with garbage that is a function of this
// seed and of the fills so far (finite values, infinities and NaN, 0xFF bytes in one element of
// four), so a kernel that reads them shows, and the same seed gives the same garbage. The runner
// seeds it from its input bytes (a case's inputs come from its seed); this call also restarts
// the fill count.
void set_pad_seed(uint64_t seed);
// Float elements (float, half, bfloat16_t) a core of the last launch added into GM by atomic
// copy-outs (SetAtomicAdd): their sums depend on the order the cores reach GM, which the hardware
// leaves unspecified (the twin uses the baton's order). Not in the JSON counters yet.
uint64_t float_atomic_adds(int64_t core);

}  // namespace opgen_twin

#endif
