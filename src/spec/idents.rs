//! Identifier rules: names in a spec become C++ identifiers in generated code, aclnn
//! parameter names and torch schema argument names.

/// `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_c_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// C++17 keywords and alternative tokens, plus names the generated code itself declares in
/// the same scope (kernel parameters `workspace` and `tiling`, AscendC types and macros), so
/// a spec name can never shadow or collide with them.
const RESERVED: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "const",
    "constexpr",
    "const_cast",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    // Declared by the generated code or the AscendC headers in the same scopes.
    "workspace",
    "tiling",
    "half",
    "bfloat16_t",
    "GM_ADDR",
    "context",
    "pipe",
    "self",
];

pub fn is_cpp_keyword(name: &str) -> bool {
    RESERVED.contains(&name)
}

/// Op types CANN ships as built-in operators (A2/A3 opp). A custom op registered under one
/// of these names would shadow or be shadowed by the built-in one, so the generator refuses
/// them. Not exhaustive: the ones this project's users are most likely to pick.
pub const CANN_BUILTIN_OP_TYPES: &[&str] = &[
    "Add",
    "AddLayerNorm",
    "AddRmsNorm",
    "AddRmsNormQuant",
    "ApplyRotaryPosEmb",
    "Cast",
    "Dequant",
    "DynamicQuant",
    "Erf",
    "Exp",
    "FastGelu",
    "FastGeluV2",
    "Gelu",
    "GeluV2",
    "LayerNorm",
    "LayerNormV3",
    "Mul",
    "Relu",
    "ReshapeAndCache",
    "RmsNorm",
    "RmsNormGrad",
    "RotaryMul",
    "RotaryPositionEmbedding",
    "ScatterPaKvCache",
    "Sigmoid",
    "Silu",
    "Softmax",
    "Sub",
    "SwiGlu",
    "Swiglu",
    "Tanh",
    "Transpose",
    "TransposeD",
];

/// `rms_norm` → `RmsNorm`.
pub fn camel_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// `RmsNormOpgen` → `rms_norm_opgen` (the msOpGen file-stem rule).
pub fn snake_case(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_c_identifier("x"));
        assert!(is_c_identifier("_key_cache2"));
        assert!(!is_c_identifier("2x"));
        assert!(!is_c_identifier("key-cache"));
        assert!(!is_c_identifier(""));
        assert!(is_cpp_keyword("class"));
        assert!(is_cpp_keyword("tiling"));
        assert!(!is_cpp_keyword("gamma"));
    }

    #[test]
    fn case_conversions() {
        assert_eq!(camel_case("rms_norm"), "RmsNorm");
        assert_eq!(camel_case("reshape_and_cache_int8"), "ReshapeAndCacheInt8");
        assert_eq!(snake_case("OpgenRmsNorm"), "opgen_rms_norm");
    }
}
