// The bridge between the kernel-side API templates and the per-core state kept in runtime.cpp:
// UB buffer records, queue records, events, counters and the shared strictness checks. Keeping
// the checks out of line keeps the templates small and every failure message in one place.
#ifndef OPGEN_TWIN_KERNEL_STATE_H
#define OPGEN_TWIN_KERNEL_STATE_H

#include <cstdint>
#include <cstring>
#include <string>

#include "opgen_twin/kernel/types.h"
#include "opgen_twin/runtime.h"

namespace opgen_twin {
namespace kern {

// A view of UB as a LocalTensor sees it. `gen` is the generation of the buffer when the view was
// made, so a view kept across FreeTensor / AllocTensor is recognised as stale.
struct TensorRef {
    int32_t buf = -1;
    uint32_t gen = 0;
    uint32_t off = 0;    // byte offset from the UB base
    uint32_t bytes = 0;  // bytes the view covers (GetSize() * sizeof(T))
};

// Identifies a TQue / TBuf object's record; epoch changes with every core and TPipe::Reset so
// a handle from an earlier pipe is never mistaken for a live one.
struct Handle {
    int32_t rec = -1;
    uint32_t epoch = 0;
};

// ---- pipes and the happens-before checker (runtime.cpp, "pipes") ----
// The pipes of an AI Core that touch UB or GM. The vector core (dav_c220 AIV) has S, V, MTE2 and
// MTE3; the cube pipes are reserved so an AIC model can tag its accesses the same way.
enum class Pipe : uint8_t { S, V, MTE2, MTE3, MTE1, M, FIX };
constexpr int kPipes = 7;

// The kernel source location of an API call. Every public API takes `Here here = {}` as its last
// parameter: __builtin_FILE/__builtin_LINE in a default argument are evaluated at the call site,
// so a race report names the generated kernel's line, not the twin header's.
struct Here {
    const char* file;
    uint32_t line;
    Here(const char* f = __builtin_FILE(), uint32_t l = __builtin_LINE()) : file(f), line(l) {}
};

// One API call the kernel makes is one instruction on `pipe` (a new logical time on that pipe):
// every UB/GM access the API performs until the Call ends is tagged with that pipe, time and
// location. Calls nest (an API implemented by another one); only the outermost counts, so the
// kernel's call site is the one reported.
class Call {
public:
    Call(const char* api, Pipe pipe, const Here& here);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

private:
    bool outer_;
};
// "<file>:<line>" of the kernel's running API call (for rule messages that name the source line).
std::string call_site();
// The running API continues as a new instruction on `pipe` (dav_c220 ReduceSum/ReduceMax finish
// with a scalar store of the result).
void call_on(Pipe pipe);
// A SetFlag/WaitFlag pair an API performs internally on dav_c220 (counted as a hidden wait).
void hidden_sync(uint8_t evt);
// Records an access of the running API to UB bytes [off, off + bytes) (explicit row tracking).
void track_ub(uint64_t off, uint64_t bytes, bool write);
// Records an access to GM [addr, addr + bytes) (must lie in a registered buffer).
void track_gm(const void* addr, uint64_t bytes, bool write);
// DataCacheCleanAndInvalid of the running core's scalar DataCache (runtime_dcache.cpp): the line
// holding `addr` or, with `entire`, every line; `gm_lines` false (a DcciDst naming another cache)
// leaves GM's lines as they are.
void data_cache_clean_invalid(const void* addr, bool entire, bool gm_lines, const Here& here);
// Fills `bytes` of DataCopyPad padding lanes (elements of `elem` bytes) with garbage (runtime.h
// set_pad_seed).
void pad_garbage(uint8_t* to, uint64_t bytes, uint32_t elem);
// The vector mask register (runtime_mask.cpp): set by SetVectorMask, level-0 calls with
// isSetMask = true, ResetMask and TPipe (all lanes); the count-form APIs leave it undefined for
// the twin (count_vector); mask_lanes gives the lanes a level-0 call with isSetMask = false runs.
void mask_set(const char* api, uint64_t high, uint64_t low, bool counter);
void mask_set_prefix(const char* api, uint64_t lanes);
void mask_mode(const char* api, bool counter);
uint64_t mask_lanes(const char* api, uint64_t lanes_per_repeat);
// The dav_c220 API scratch at TMP_UB_OFFSET (184 KiB): APIs that write it clobber UB there.
void api_scratch(const char* api, uint64_t bytes);

// ---- TPipe / TQue / TBuf ----
void pipe_open(const void* pipe);
void pipe_close(const void* pipe);
void* pipe_current();
void pipe_reset(const void* pipe);
// enq_evt / free_evt: the HardEvents CANN's queue sets on EnQue and FreeTensor (GetQueEvt).
void que_init(Handle& que, uint8_t pos, int32_t depth, uint32_t num, uint32_t len, uint8_t enq_evt, uint8_t free_evt);
void tbuf_init(Handle& buf, uint8_t pos, uint32_t len);
TensorRef que_alloc(const Handle& que);
void que_enque(const Handle& que, const TensorRef& t, const Here& here);
TensorRef que_deque(const Handle& que);
void que_free(const Handle& que, const TensorRef& t, const Here& here);
int32_t que_count(const Handle& que);
TensorRef tbuf_get(const Handle& buf, const char* api, uint64_t offset_bytes, uint64_t bytes);

// ---- strictness checks (each fails the run with a message naming API, tensor and rule) ----
enum class Extent : uint8_t {
    Exact,        // the access must stay inside GetSize() elements
    BlockPadded,  // DMA slots may use the padding up to the view's next 32-byte boundary
};
uint8_t* ub_base();
std::string tensor_desc(const TensorRef& t);
// Checks that a UB operand is live, 32-byte aligned when asked, and covers `bytes`. With `track`
// the access is recorded for the running API: a role starting with "dst" is a write, any other a
// read (the DMA copies track their rows themselves).
uint8_t* ub_operand(const char* api, const char* role, const TensorRef& t, uint64_t bytes, bool aligned = true,
                    Extent extent = Extent::Exact, bool track = true);
// Fails unless the two byte ranges are disjoint or (when allowed) identical.
void check_overlap(const char* api, const char* role_a, const TensorRef& a, uint64_t bytes_a, const char* role_b,
                   const TensorRef& b, uint64_t bytes_b, bool identical_ok);
void check_count(const char* api, int64_t count);
// Scalar access to element `index` of a view (bounds and liveness checked, counted, tracked).
uint8_t* ub_element(const char* api, const TensorRef& t, uint64_t index, uint32_t elem_size, bool write);
// SetSize may shrink a view or grow it up to the end of its buffer, never past it.
void check_resize(const char* api, const TensorRef& t, uint64_t bytes);
int32_t buffer_position(const TensorRef& t);
[[noreturn]] void fail_dtype(const char* api, const char* role, DType t);
// A view of a GlobalTensor: `region` is what SetGlobalBuffer was given (`region_bytes` 0 = no size).
struct GmView {
    const uint8_t* region;
    uint64_t region_bytes;
};
// Checks [addr, addr + bytes) against the GlobalTensor size and the registered GM buffer and
// returns the buffer's name.
const char* gm_operand(const char* api, const char* role, const GmView& view, const void* addr, uint64_t bytes,
                       const char* size_rule);

// ---- events ----
void event_set(uint8_t evt, int32_t id, const Here& here);
void event_wait(uint8_t evt, int32_t id, const Here& here);
int8_t event_fetch(uint8_t evt);
int8_t event_alloc(uint8_t evt);
void event_release(uint8_t evt, int32_t id);
void barrier(int pipe);

// ---- cross-core (runtime.cpp, "cores") ----
// SyncAll<true>(): a barrier of every core of the launch (run_cores), after PipeBarrier<PIPE_ALL>.
void sync_all(const Here& here);
// GetUserWorkspace: the user's part of the workspace, after the system workspace (16 MiB).
uint8_t* user_workspace(uint8_t* workspace);

// ---- atomic copy-out (runtime.cpp, "atomic") ----
// SetAtomicAdd<T> (type_only = false) / SetAtomicType<T> (true): checks T against the A2 list.
void atomic_set(const char* api, DType t, bool type_only, const Here& here);
void atomic_none();
// Writes one copy-out row of `bytes` from UB to GM: a store, or under SetAtomicAdd an element-wise
// add in the atomic dtype, which must be the copy's `t`.
void copy_out_row(const char* api, uint8_t* to, const uint8_t* from, uint64_t bytes, DType t);

// ---- counters ----
// A count-form (or other non-level-0) vector API ran: counted, and the mask register becomes
// undefined for the twin (dav_c220's count forms end with ResetMask, other APIs are not known).
void count_vector(const char* api, uint64_t elements);
// A level-0 call ran: counted; the mask register is as the call left it.
void count_level0(const char* api, uint64_t elements);
// A level-0 call of `repeats` repeats ran: counted by the lanes it occupies, since a repeat holds
// the vector unit for a whole 256-byte repeat whatever its mask (so the cycle model, which costs
// elements as float32 repeats, costs a masked repeat as one).
template <typename T>
inline void count_level0_repeats(const char* api, uint64_t repeats) {
    count_level0(api, repeats * (256 / sizeof(T)));
}
void count_copy_in(const char* gm_name, uint64_t bytes, const TensorRef& dst);
void count_copy_out(const char* gm_name, uint64_t bytes);
void count_scalar_gm(const char* gm_name, uint64_t bytes, bool write);
void count_scalar_ub();

// Element access without aliasing assumptions: UB and GM are byte arrays.
template <typename T>
inline T load(const uint8_t* p) {
    T v;
    std::memcpy(static_cast<void*>(&v), p, sizeof(T));
    return v;
}
template <typename T>
inline void store(uint8_t* p, const T& v) {
    std::memcpy(static_cast<void*>(p), static_cast<const void*>(&v), sizeof(T));
}

}  // namespace kern
}  // namespace opgen_twin

#endif
