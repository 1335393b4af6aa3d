// Twin-only: a small JSON writer for the runner's plan and report (no third-party library).
// Output is compact; commas are placed automatically.
#ifndef OPGEN_TWIN_JSON_WRITER_H
#define OPGEN_TWIN_JSON_WRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace opgen_twin {

class JsonWriter {
 public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(const std::string& name);
    JsonWriter& string(const std::string& value);
    JsonWriter& uint(uint64_t value);
    JsonWriter& integer(int64_t value);
    JsonWriter& boolean(bool value);
    // Shortest decimal that reads back as the same float; NaN and infinities (not JSON numbers)
    // are written as the strings "nan", "inf", "-inf".
    JsonWriter& float32(float value);
    // The same for a double (17 significant digits at most).
    JsonWriter& float64(double value);
    // A value that is already JSON text.
    JsonWriter& raw(const std::string& json);
    const std::string& str() const { return out_; }

 private:
    void before_value();
    std::string out_;
    std::vector<bool> container_has_items_;
    bool after_key_ = false;
};

}  // namespace opgen_twin

#endif
