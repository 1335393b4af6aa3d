// CPU twin of gert::TilingData: the raw tiling buffer a TilingFunc fills. Declaring more bytes
// than the buffer holds stops the run (CANN would copy past the buffer to the device).
#ifndef OPGEN_TWIN_EXE_GRAPH_TILING_DATA_H
#define OPGEN_TWIN_EXE_GRAPH_TILING_DATA_H

#include <cstddef>
#include <string>

#include "opgen_twin/runtime.h"

namespace gert {

class TilingData {
 public:
    // Twin-only: the runner owns the buffer.
    TilingData(void* data, size_t capacity) : data_(data), capacity_(capacity), data_size_(0) {}
    TilingData(const TilingData&) = delete;
    TilingData& operator=(const TilingData&) = delete;

    size_t GetCapacity() const { return capacity_; }
    size_t GetDataSize() const { return data_size_; }
    void SetDataSize(const size_t size) {
        if (size > capacity_) {
            opgen_twin::fail("TilingData::SetDataSize", "tiling data larger than the buffer",
                             std::to_string(size) + " bytes declared, capacity " +
                                 std::to_string(capacity_));
        }
        data_size_ = size;
    }
    void* GetData() { return data_; }
    const void* GetData() const { return data_; }

 private:
    void* data_;
    size_t capacity_;
    size_t data_size_;
};

}  // namespace gert

#endif
