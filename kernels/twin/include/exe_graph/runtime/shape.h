// CPU twin of gert::Shape: a small fixed-capacity list of int64 dims.
// Where CANN's Shape quietly accepts a mistake (reading a dim past GetDimNum(), SetDim past the
// end, which leaves the rank short), the twin stops the run and names the rule.
#ifndef OPGEN_TWIN_EXE_GRAPH_SHAPE_H
#define OPGEN_TWIN_EXE_GRAPH_SHAPE_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "opgen_twin/runtime.h"

namespace gert {

struct Shape {
 public:
    static constexpr size_t kMaxDimNum = 25;
    static constexpr int64_t kInvalidDimValue = std::numeric_limits<int64_t>::min();

    Shape() : dim_num_(0), dims_{} {}
    Shape(const std::initializer_list<int64_t>& dims) : Shape() {
        for (int64_t d : dims) {
            AppendDim(d);
        }
    }

    bool operator==(const Shape& other) const {
        if (dim_num_ != other.dim_num_) {
            return false;
        }
        for (size_t i = 0; i < dim_num_; ++i) {
            if (dims_[i] != other.dims_[i]) {
                return false;
            }
        }
        return true;
    }
    bool operator!=(const Shape& other) const { return !(*this == other); }

    // Product of the dims (1 for a scalar); kInvalidDimValue when it overflows int64.
    int64_t GetShapeSize() const {
        int64_t size = 1;
        for (size_t i = 0; i < dim_num_; ++i) {
            if (__builtin_mul_overflow(size, dims_[i], &size)) {
                return kInvalidDimValue;
            }
        }
        return size;
    }
    bool IsScalar() const { return dim_num_ == 0; }
    void SetScalar() { dim_num_ = 0; }

    size_t GetDimNum() const { return dim_num_; }
    void SetDimNum(const size_t dim_num) {
        if (dim_num > kMaxDimNum) {
            opgen_twin::fail("Shape::SetDimNum", "rank above 25",
                             "asked for " + std::to_string(dim_num) + " dims");
        }
        for (size_t i = dim_num_; i < dim_num; ++i) {
            dims_[i] = 0;
        }
        dim_num_ = dim_num;
    }

    int64_t GetDim(const size_t idx) const { return dims_[Checked(idx, "Shape::GetDim")]; }
    void SetDim(size_t idx, const int64_t dim_value) {
        dims_[Checked(idx, "Shape::SetDim")] = dim_value;
    }
    const int64_t& operator[](const size_t idx) const {
        return dims_[Checked(idx, "Shape::operator[]")];
    }
    int64_t& operator[](const size_t idx) { return dims_[Checked(idx, "Shape::operator[]")]; }

    Shape& AppendDim(const int64_t value) {
        if (dim_num_ >= kMaxDimNum) {
            opgen_twin::fail("Shape::AppendDim", "rank above 25", "shape already has 25 dims");
        }
        dims_[dim_num_++] = value;
        return *this;
    }

 private:
    // Index checks: on CANN an index in [GetDimNum(), 25) reads stale memory or (SetDim) writes a
    // dim that GetDimNum() does not count, so the twin treats both as errors.
    size_t Checked(size_t idx, const char* api) const {
        if (idx >= dim_num_) {
            opgen_twin::fail(api, "dim index not below GetDimNum()",
                             "index " + std::to_string(idx) + ", rank " + std::to_string(dim_num_) +
                                 " (call SetDimNum or AppendDim first)");
        }
        return idx;
    }

    size_t dim_num_;
    int64_t dims_[kMaxDimNum];
};

}  // namespace gert

#endif
