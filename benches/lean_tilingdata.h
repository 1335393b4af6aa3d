// Bench-only (benches/tiling.rs, force-included with -include): the tiling-data macros of
// register/tilingdata_base.h with the same layout rule and the same registration, but without
// the twin's per-object bookkeeping (a std::vector of fields with two std::strings each, a
// heap-allocated byte image), which perf shows is ~90% of a TilingFunc call on the twin. With
// it, the benchmark measures the generated TilingFunc's own logic plus the twin's (cheap)
// context accessors. Registration replays the recorded fields into a real optiling::TilingDef,
// so the runner-side checks (class size, field names) still see the same class.
#ifndef OPGEN_BENCH_LEAN_TILINGDATA_H
#define OPGEN_BENCH_LEAN_TILINGDATA_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "register/tilingdata_base.h"

namespace opgen_bench {

struct LeanField {
    const char* c_type;
    const char* name;
    size_t elem_size;
    size_t count;
    bool array;
    opgen_twin::ScalarKind kind;
};

// Set while the registration prototype is built: its fields are recorded there.
inline std::vector<LeanField>*& recording() {
    static std::vector<LeanField>* fields = nullptr;
    return fields;
}

class LeanTilingDef {
 public:
    void SaveToBuffer(void* pdata, size_t capacity) {
        if (pdata == nullptr || capacity < size_) {
            std::fprintf(stderr, "lean tiling data: %s does not fit the buffer\n", name_);
            std::abort();
        }
        std::memcpy(pdata, bytes_, size_);
    }
    size_t GetDataSize() const { return size_; }
    const char* GetTilingClassName() const { return name_; }

 protected:
    size_t OpgenTwinAddField(const char* c_type, const char* name, size_t elem_size, size_t count, bool array,
                             opgen_twin::ScalarKind kind) {
        const size_t offset = (next_ + elem_size - 1) / elem_size * elem_size;
        next_ = offset + elem_size * count;
        if (next_ > sizeof(bytes_)) {
            std::fprintf(stderr, "lean tiling data: more than %zu bytes\n", sizeof(bytes_));
            std::abort();
        }
        if (recording() != nullptr) recording()->push_back(LeanField{c_type, name, elem_size, count, array, kind});
        return offset;
    }
    void OpgenTwinFinish(const char* class_name) {
        name_ = class_name;
        size_ = (next_ + 7) / 8 * 8;
        std::memset(bytes_, 0, size_);
    }
    void OpgenTwinStore(size_t offset, const void* src, size_t bytes) { std::memcpy(bytes_ + offset, src, bytes); }
    void OpgenTwinLoad(size_t offset, void* dst, size_t bytes) const { std::memcpy(dst, bytes_ + offset, bytes); }
    uint8_t* OpgenTwinBytes(size_t offset) { return bytes_ + offset; }

 private:
    uint8_t bytes_[2048];
    size_t next_ = 0;
    size_t size_ = 0;
    const char* name_ = "";
};

// A real TilingDef with the recorded fields, for the registry.
class Replay : public optiling::TilingDef {
 public:
    Replay(const std::vector<LeanField>& fields, const char* class_name) {
        for (const LeanField& f : fields) OpgenTwinAddField(f.c_type, f.name, f.elem_size, f.count, f.array, f.kind);
        OpgenTwinFinish(class_name);
    }
};

template <typename Class>
int register_lean(const char* op_type, const char* class_name) {
    std::vector<LeanField> fields;
    recording() = &fields;
    Class prototype;
    recording() = nullptr;
    return opgen_twin::register_tiling_class(op_type, Replay(fields, class_name));
}

}  // namespace opgen_bench

#undef BEGIN_TILING_DATA_DEF
#undef REGISTER_TILING_DATA_CLASS

#define BEGIN_TILING_DATA_DEF(class_name)                   \
    class class_name : public ::opgen_bench::LeanTilingDef { \
     public:                                                \
        class_name() { OpgenTwinFinish(#class_name); }

#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                             \
    namespace {                                                                                     \
    const int g_opgen_bench_tiling_##op_type##_##class_name =                                       \
        ::opgen_bench::register_lean<class_name>(#op_type, #class_name);                            \
    }

#endif
