// Core identity and synchronisation. The twin runs each core's instructions in program order, so
// barriers and flags never change results; they are still checked (a WaitFlag that nothing set
// hangs the NPU) and counted for the performance report. SyncAll is the one cross-core barrier
// (the cores of a launch run concurrently: runtime.h run_cores); the workspace calls give the
// kernel the part of the workspace past the system's reserve, as on the NPU.
#ifndef OPGEN_TWIN_KERNEL_SYNC_H
#define OPGEN_TWIN_KERNEL_SYNC_H

#include <cstdint>

#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/types.h"

namespace AscendC {

inline int64_t GetBlockIdx() { return block_idx; }
inline int64_t GetBlockNum() { return block_num; }

template <pipe_t pipe>
void PipeBarrier() {
    opgen_twin::kern::barrier(int(pipe));
}

template <HardEvent event>
void SetFlag(int32_t eventID, opgen_twin::kern::Here here = {}) {
    opgen_twin::kern::event_set(uint8_t(event), eventID, here);
}

template <HardEvent event>
void WaitFlag(int32_t eventID, opgen_twin::kern::Here here = {}) {
    opgen_twin::kern::event_wait(uint8_t(event), eventID, here);
}

// The hardware all-core barrier (dav_c220 SyncAllImpl); the soft variant taking a GM/UB
// workspace is not modelled. Mixed AIC/AIV launches are not modelled either.
template <bool isAIVOnly = true>
void SyncAll(opgen_twin::kern::Here here = {}) {
    static_assert(isAIVOnly, "the twin models vector-only kernels: SyncAll<true>");
    opgen_twin::kern::sync_all(here);
}

// Atomic copy-out (runtime.cpp, "atomic"): after SetAtomicAdd<T>() every DataCopy / DataCopyPad
// UB -> GM adds into GM in T until SetAtomicNone(); SetAtomicType<T>() changes T only. Atomic
// adds of several cores to the same bytes in one SyncAll phase do not race (their order is
// unspecified; the twin's is the baton's). SetAtomicMax/Min are not modelled.
template <typename T>
void SetAtomicAdd(opgen_twin::kern::Here here = {}) {
    opgen_twin::kern::atomic_set("SetAtomicAdd", opgen_twin::dtype_of<T>(), false, here);
}

template <typename T>
void SetAtomicType(opgen_twin::kern::Here here = {}) {
    opgen_twin::kern::atomic_set("SetAtomicType", opgen_twin::dtype_of<T>(), true, here);
}

inline void SetAtomicNone() { opgen_twin::kern::atomic_none(); }

// On the NPU the framework (or this call, if it has not) records the workspace start as the
// system workspace; GetUserWorkspace then returns the address RESERVED_WORKSPACE past it. The
// twin takes the kernel's workspace argument as that start.
inline void SetSysWorkspace(GM_ADDR workspace) { (void)workspace; }
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return opgen_twin::kern::user_workspace(workspace); }

}  // namespace AscendC

#endif
