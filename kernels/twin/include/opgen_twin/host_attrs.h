// The twin's model of op attributes: the four scalar kinds an OpDef can declare that the twin
// supports, the C type op_host code must read each kind with, and one attribute value.
// Twin-only; no CANN header has this.
#ifndef OPGEN_TWIN_HOST_ATTRS_H
#define OPGEN_TWIN_HOST_ATTRS_H

#include <cstdint>
#include <string>

namespace opgen_twin {

enum class AttrKind { None, Bool, Float, Int, String };

// "bool", "float", "int", "string" (the runner's --attr type names), or "none".
const char* attr_kind_name(AttrKind kind);
// The kind with that name; AttrKind::None for an unknown name.
AttrKind parse_attr_kind(const std::string& name);

// The C type that reads an attribute of each kind through RuntimeAttrs::GetAttrPointer<T>:
// bool, float, int64_t and char (a NUL-terminated string). Any other T is a mistake.
template <typename T>
struct AttrCType {
    static AttrKind kind() { return AttrKind::None; }
    static const char* name() { return "a type no attribute has"; }
};
template <>
struct AttrCType<bool> {
    static AttrKind kind() { return AttrKind::Bool; }
    static const char* name() { return "bool"; }
};
template <>
struct AttrCType<float> {
    static AttrKind kind() { return AttrKind::Float; }
    static const char* name() { return "float"; }
};
template <>
struct AttrCType<int64_t> {
    static AttrKind kind() { return AttrKind::Int; }
    static const char* name() { return "int64_t"; }
};
template <>
struct AttrCType<char> {
    static AttrKind kind() { return AttrKind::String; }
    static const char* name() { return "char"; }
};

struct AttrValue {
    std::string name;
    AttrKind kind = AttrKind::None;
    bool b = false;
    float f = 0.0f;
    int64_t i = 0;
    std::string s;
};

// Reads the text of a value of the given kind into value (decimal numbers; true/false/1/0 for
// bool; any text for string). false when the text is not a value of that kind.
bool parse_attr_value(AttrKind kind, const std::string& text, AttrValue& value);

}  // namespace opgen_twin

#endif
