// CPU twin of the tiling-data macros (BEGIN_TILING_DATA_DEF ... REGISTER_TILING_DATA_CLASS).
//
// A tiling class keeps its fields in one byte image laid out like the plain C struct the kernel
// reads: fields in declaration order, each at an offset aligned to its element size, the total
// rounded up to 8 bytes. set_/get_ write and read that image; SaveToBuffer copies it out.
// Each field records its name, C type, offset and size, and REGISTER_TILING_DATA_CLASS ties the
// class to an op type, so the runner can decode the raw tiling bytes by field name.
// TILING_DATA_FIELD_DEF_STRUCT is not modelled.
#ifndef OPGEN_TWIN_REGISTER_TILINGDATA_BASE_H
#define OPGEN_TWIN_REGISTER_TILINGDATA_BASE_H

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "opgen_twin/host_registry.h"

namespace opgen_twin {

template <typename T>
ScalarKind scalar_kind_of() {
    static_assert(std::is_arithmetic<T>::value, "a tiling field must have an arithmetic type");
    return std::is_same<T, bool>::value             ? ScalarKind::Bool
           : std::is_floating_point<T>::value       ? ScalarKind::Float
           : std::is_signed<T>::value               ? ScalarKind::Signed
                                                    : ScalarKind::Unsigned;
}

}  // namespace opgen_twin

namespace optiling {

class TilingDef {
 public:
    // Copies the byte image to pdata; a capacity below GetDataSize() stops the run.
    void SaveToBuffer(void* pdata, size_t capacity);
    size_t GetDataSize() const { return data_size_; }
    const char* GetTilingClassName() const { return class_name_; }

    // Twin-only: the recorded layout.
    const std::vector<opgen_twin::TilingField>& OpgenTwinFields() const { return fields_; }

 protected:
    TilingDef() = default;
    // Appends a field at the next offset aligned to elem_size and returns that offset.
    size_t OpgenTwinAddField(const char* c_type, const char* name, size_t elem_size, size_t count,
                             bool array, opgen_twin::ScalarKind kind);
    // Runs once every field is added: names the class and rounds the size up to 8.
    void OpgenTwinFinish(const char* class_name);
    void OpgenTwinStore(size_t offset, const void* src, size_t bytes);
    void OpgenTwinLoad(size_t offset, void* dst, size_t bytes) const;
    uint8_t* OpgenTwinBytes(size_t offset) { return bytes_.data() + offset; }

 private:
    const char* class_name_ = "";
    std::vector<opgen_twin::TilingField> fields_;
    std::vector<uint8_t> bytes_;
    size_t data_size_ = 0;
};

}  // namespace optiling

#define BEGIN_TILING_DATA_DEF(class_name)               \
    class class_name : public ::optiling::TilingDef {   \
     public:                                            \
        class_name() { OpgenTwinFinish(#class_name); }

#define TILING_DATA_FIELD_DEF(data_type, field_name)                                        \
 public:                                                                                    \
    void set_##field_name(data_type field_name) {                                           \
        OpgenTwinStore(field_name##_offset_, &field_name, sizeof(data_type));               \
    }                                                                                       \
    data_type get_##field_name() {                                                          \
        data_type value;                                                                    \
        OpgenTwinLoad(field_name##_offset_, &value, sizeof(data_type));                     \
        return value;                                                                       \
    }                                                                                       \
                                                                                            \
 private:                                                                                   \
    size_t field_name##_offset_ = OpgenTwinAddField(#data_type, #field_name, sizeof(data_type), \
                                                    1, false,                               \
                                                    ::opgen_twin::scalar_kind_of<data_type>());

#define TILING_DATA_FIELD_DEF_ARR(arr_type, arr_size, field_name)                           \
 public:                                                                                    \
    void set_##field_name(arr_type* field_name) {                                           \
        OpgenTwinStore(field_name##_offset_, field_name, sizeof(arr_type) * (arr_size));    \
    }                                                                                       \
    arr_type* get_##field_name() {                                                          \
        return reinterpret_cast<arr_type*>(OpgenTwinBytes(field_name##_offset_));           \
    }                                                                                       \
                                                                                            \
 private:                                                                                   \
    size_t field_name##_offset_ = OpgenTwinAddField(#arr_type, #field_name, sizeof(arr_type), \
                                                    (arr_size), true,                       \
                                                    ::opgen_twin::scalar_kind_of<arr_type>());

#define END_TILING_DATA_DEF \
    }                       \
    ;

#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                       \
    namespace {                                                                               \
    struct OpgenTwinTilingReg_##op_type##_##class_name {                                      \
        OpgenTwinTilingReg_##op_type##_##class_name() {                                       \
            ::opgen_twin::register_tiling_class(#op_type, class_name());                      \
        }                                                                                     \
    };                                                                                        \
    OpgenTwinTilingReg_##op_type##_##class_name g_opgen_twin_tiling_##op_type##_##class_name; \
    }

#endif
