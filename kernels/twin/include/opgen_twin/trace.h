// The event trace of a launch (opgen report's cycle model, src/perf/): per simulated core, every
// API call in program order with its pipe and size, and the synchronisation between pipes (the
// kernel's SetFlag/WaitFlag, the flag pairs behind TQue EnQue/DeQue/AllocTensor/FreeTensor, the
// pairs AscendC APIs perform inside, PipeBarrier). Off unless OPGEN_TWIN_TRACE names the file to
// write; the hooks then cost one branch. The format is read by src/perf/trace.rs (deny_unknown_fields):
// {"cores":[{"core":0,"events":[{"op":"vec","api":"Add","elements":N}, ...]}, ...]} with events
//   {"op":"vec","api":A,"elements":N}                 a vector instruction (elements as counted)
//   {"op":"dma","pipe":"MTE2"|"MTE3","api":A,"gm":NAME,"bytes":N,"blocks":B,"block_bytes":L,"gm_offset":O}
//   {"op":"scalar","api":A,"gm_accesses":N,"ub_accesses":N}   an instruction of the scalar unit
//   {"op":"set"|"wait","event":"MTE2_V","key":K}      K < 1000000: the kernel's event id;
//                                                     otherwise 1000000 + the queue buffer's index
//   {"op":"hidden","event":"V_S"}                     a SetFlag/WaitFlag pair inside an API
//   {"op":"barrier","pipe":"V"|"MTE2"|"MTE3"|"ALL"|...}
#ifndef OPGEN_TWIN_TRACE_H
#define OPGEN_TWIN_TRACE_H

#include <cstdint>

namespace opgen_twin {
namespace trace {

// Key offset of the flag pairs behind queue buffers (apart from the kernel's event ids 0..7).
constexpr int64_t kQueueKey = 1000000;

extern const bool g_on;
inline bool on() { return g_on; }

void core_begin(int64_t idx);
// Core `idx` runs again after a SyncAll (cores take turns): its events go to its own list again.
void core_resume(int64_t idx);
// A new instruction (the outermost API call) on pipe `pipe` (kern::Pipe value).
void instruction(int pipe, const char* api);
// Sizes of the running instruction.
void vector_elements(uint64_t n);
void transfer(const char* gm, uint64_t bytes);
void dma_shape(uint64_t blocks, uint64_t block_bytes, const void* gm);
void scalar_access(bool gm);
// Synchronisation (event names as HardEvent spells them; pipe names S, V, MTE2, MTE3, ALL, ...).
void flag(bool set, const char* event, int64_t key);
void hidden(const char* event);
void barrier(const char* pipe);
// Writes the trace of the launch to OPGEN_TWIN_TRACE (no-op when off).
void write_launch();

}  // namespace trace
}  // namespace opgen_twin

#endif
