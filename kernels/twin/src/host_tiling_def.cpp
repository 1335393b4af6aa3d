// The byte image behind a tiling class (see register/tilingdata_base.h for the layout rule).
#include <cstring>
#include <string>

#include "opgen_twin/runtime.h"
#include "register/tilingdata_base.h"

namespace optiling {

namespace {

size_t align_up(size_t value, size_t alignment) {
    return alignment == 0 ? value : (value + alignment - 1) / alignment * alignment;
}

}  // namespace

size_t TilingDef::OpgenTwinAddField(const char* c_type, const char* name, size_t elem_size,
                                    size_t count, bool array, opgen_twin::ScalarKind kind) {
    opgen_twin::TilingField field;
    field.name = name;
    field.c_type = c_type;
    field.kind = kind;
    field.offset = align_up(data_size_, elem_size);
    field.elem_size = elem_size;
    field.count = count;
    field.array = array;
    data_size_ = field.offset + elem_size * count;
    bytes_.resize(data_size_, 0);
    fields_.push_back(field);
    return field.offset;
}

void TilingDef::OpgenTwinFinish(const char* class_name) {
    class_name_ = class_name;
    data_size_ = align_up(data_size_, 8);
    bytes_.resize(data_size_, 0);
}

void TilingDef::OpgenTwinStore(size_t offset, const void* src, size_t bytes) {
    if (src == nullptr) {
        opgen_twin::fail("TilingDef::set_", "null source", std::string("class ") + class_name_);
    }
    std::memcpy(bytes_.data() + offset, src, bytes);
}

void TilingDef::OpgenTwinLoad(size_t offset, void* dst, size_t bytes) const {
    std::memcpy(dst, bytes_.data() + offset, bytes);
}

void TilingDef::SaveToBuffer(void* pdata, size_t capacity) {
    if (pdata == nullptr) {
        opgen_twin::fail("TilingDef::SaveToBuffer", "null buffer",
                         std::string("class ") + class_name_);
    }
    if (capacity < data_size_) {
        opgen_twin::fail("TilingDef::SaveToBuffer", "tiling data larger than the buffer",
                         std::string("class ") + class_name_ + " needs " +
                             std::to_string(data_size_) + " bytes, capacity " +
                             std::to_string(capacity));
    }
    std::memcpy(pdata, bytes_.data(), data_size_);
}

}  // namespace optiling
