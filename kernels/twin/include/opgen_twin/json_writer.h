// Twin-only: the one JSON writer of the twin (the runner's plan and report, the counters, the
// event trace; no third-party library). Output is compact; commas are placed automatically.
// What it writes is read by src/verify/protocol.rs and src/perf/trace.rs, whose structs refuse
// unknown and missing fields.
#ifndef OPGEN_TWIN_JSON_WRITER_H
#define OPGEN_TWIN_JSON_WRITER_H

#include <cstdint>
#include <cstdio>
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
    // Writes the text so far to `out` and forgets it (the nesting state is kept), so a long
    // document (the event trace) is streamed instead of held in memory.
    void flush(FILE* out);

 private:
    void before_value();
    std::string out_;
    std::vector<bool> container_has_items_;
    bool after_key_ = false;
};

}  // namespace opgen_twin

#endif
