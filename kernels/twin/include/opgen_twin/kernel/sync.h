// Core identity and synchronisation. The twin runs each core's instructions in program order, so
// barriers and flags never change results; they are still checked (a WaitFlag that nothing set
// hangs the NPU) and counted for the performance report.
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
void SetFlag(int32_t eventID) {
    opgen_twin::kern::event_set(uint8_t(event), eventID);
}

template <HardEvent event>
void WaitFlag(int32_t eventID) {
    opgen_twin::kern::event_wait(uint8_t(event), eventID);
}

}  // namespace AscendC

#endif
