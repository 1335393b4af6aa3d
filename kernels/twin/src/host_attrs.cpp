// Attribute kind names and the parsing of attribute values given on the runner's command line.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "opgen_twin/host_attrs.h"

namespace opgen_twin {

const char* attr_kind_name(AttrKind kind) {
    switch (kind) {
        case AttrKind::Bool:
            return "bool";
        case AttrKind::Float:
            return "float";
        case AttrKind::Int:
            return "int";
        case AttrKind::String:
            return "string";
        default:
            return "none";
    }
}

AttrKind parse_attr_kind(const std::string& name) {
    for (AttrKind kind : {AttrKind::Bool, AttrKind::Float, AttrKind::Int, AttrKind::String}) {
        if (name == attr_kind_name(kind)) {
            return kind;
        }
    }
    return AttrKind::None;
}

bool parse_attr_value(AttrKind kind, const std::string& text, AttrValue& value) {
    value.kind = kind;
    switch (kind) {
        case AttrKind::Bool:
            if (text == "true" || text == "1") {
                value.b = true;
                return true;
            }
            if (text == "false" || text == "0") {
                value.b = false;
                return true;
            }
            return false;
        case AttrKind::Float: {
            if (text.empty()) {
                return false;
            }
            char* end = nullptr;
            errno = 0;
            value.f = std::strtof(text.c_str(), &end);
            return *end == '\0' && errno == 0;
        }
        case AttrKind::Int: {
            if (text.empty()) {
                return false;
            }
            char* end = nullptr;
            errno = 0;
            value.i = std::strtoll(text.c_str(), &end, 10);
            return *end == '\0' && errno == 0;
        }
        case AttrKind::String:
            value.s = text;
            return true;
        default:
            return false;
    }
}

}  // namespace opgen_twin
