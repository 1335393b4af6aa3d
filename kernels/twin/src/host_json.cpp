// A compact JSON writer for the runner's documents.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "opgen_twin/json_writer.h"

namespace opgen_twin {

void JsonWriter::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!container_has_items_.empty()) {
        if (container_has_items_.back()) {
            out_ += ',';
        }
        container_has_items_.back() = true;
    }
}

JsonWriter& JsonWriter::begin_object() {
    before_value();
    out_ += '{';
    container_has_items_.push_back(false);
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    out_ += '}';
    container_has_items_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::begin_array() {
    before_value();
    out_ += '[';
    container_has_items_.push_back(false);
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    out_ += ']';
    container_has_items_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::key(const std::string& name) {
    string(name);
    out_ += ':';
    after_key_ = true;
    return *this;
}

JsonWriter& JsonWriter::string(const std::string& value) {
    before_value();
    out_ += '"';
    for (unsigned char c : value) {
        switch (c) {
            case '"':
                out_ += "\\\"";
                break;
            case '\\':
                out_ += "\\\\";
                break;
            case '\n':
                out_ += "\\n";
                break;
            case '\r':
                out_ += "\\r";
                break;
            case '\t':
                out_ += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
                    out_ += escaped;
                } else {
                    out_ += static_cast<char>(c);
                }
        }
    }
    out_ += '"';
    return *this;
}

JsonWriter& JsonWriter::uint(uint64_t value) {
    before_value();
    out_ += std::to_string(value);
    return *this;
}

JsonWriter& JsonWriter::integer(int64_t value) {
    before_value();
    out_ += std::to_string(value);
    return *this;
}

JsonWriter& JsonWriter::boolean(bool value) {
    before_value();
    out_ += value ? "true" : "false";
    return *this;
}

JsonWriter& JsonWriter::float32(float value) {
    if (std::isnan(value)) {
        return string("nan");
    }
    if (std::isinf(value)) {
        return string(value > 0 ? "inf" : "-inf");
    }
    char text[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(text, sizeof(text), "%.*g", digits, static_cast<double>(value));
        if (std::strtof(text, nullptr) == value) {
            break;
        }
    }
    before_value();
    out_ += text;
    return *this;
}

JsonWriter& JsonWriter::float64(double value) {
    if (std::isnan(value)) {
        return string("nan");
    }
    if (std::isinf(value)) {
        return string(value > 0 ? "inf" : "-inf");
    }
    char text[40];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof(text), "%.*g", digits, value);
        if (std::strtod(text, nullptr) == value) {
            break;
        }
    }
    before_value();
    out_ += text;
    return *this;
}

void JsonWriter::flush(FILE* out) {
    std::fwrite(out_.data(), 1, out_.size(), out);
    out_.clear();
}

JsonWriter& JsonWriter::raw(const std::string& json) {
    before_value();
    out_ += json;
    return *this;
}

}  // namespace opgen_twin
