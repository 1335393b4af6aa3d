//! The minijinja environment: templates embedded in the binary (output never depends on the
//! working directory), strict undefined (a misspelt field is an error, not an empty string),
//! and the filters that turn spec values into C++.

use crate::dtype::DType;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior, Value};

/// Every template, embedded at compile time. Adding a family = one entry per template here.
pub(crate) const TEMPLATES: &[(&str, &str)] = &[
    ("host/opgen_host_common.h.j2", include_str!("../../templates/host/opgen_host_common.h.j2")),
    ("kernel/opgen_kernel_common.h.j2", include_str!("../../templates/kernel/opgen_kernel_common.h.j2")),
    ("kernel/row_norm.cpp.j2", include_str!("../../templates/kernel/row_norm.cpp.j2")),
    ("kernel/row_norm_batched.j2", include_str!("../../templates/kernel/row_norm_batched.j2")),
    ("kernel/row_norm_grad_batched.j2", include_str!("../../templates/kernel/row_norm_grad_batched.j2")),
    ("kernel/row_norm_grad_plain.j2", include_str!("../../templates/kernel/row_norm_grad_plain.j2")),
    ("kernel/row_norm_grad_exact.j2", include_str!("../../templates/kernel/row_norm_grad_exact.j2")),
    ("host/row_norm.cpp.j2", include_str!("../../templates/host/row_norm.cpp.j2")),
    ("host/row_norm_batched.j2", include_str!("../../templates/host/row_norm_batched.j2")),
    ("kernel/row_norm_grad.cpp.j2", include_str!("../../templates/kernel/row_norm_grad.cpp.j2")),
    ("host/row_norm_grad.cpp.j2", include_str!("../../templates/host/row_norm_grad.cpp.j2")),
    ("kernel/permute.cpp.j2", include_str!("../../templates/kernel/permute.cpp.j2")),
    ("kernel/paged_cache.cpp.j2", include_str!("../../templates/kernel/paged_cache.cpp.j2")),
    ("kernel/dequant.cpp.j2", include_str!("../../templates/kernel/dequant.cpp.j2")),
    ("host/permute.cpp.j2", include_str!("../../templates/host/permute.cpp.j2")),
    ("host/paged_cache.cpp.j2", include_str!("../../templates/host/paged_cache.cpp.j2")),
    ("host/dequant.cpp.j2", include_str!("../../templates/host/dequant.cpp.j2")),
    ("kernel/rotary.cpp.j2", include_str!("../../templates/kernel/rotary.cpp.j2")),
    ("host/rotary.cpp.j2", include_str!("../../templates/host/rotary.cpp.j2")),
    ("host/rotary_checks.j2", include_str!("../../templates/host/rotary_checks.j2")),
    ("host/paged_cache_checks.j2", include_str!("../../templates/host/paged_cache_checks.j2")),
    ("host/check_why.j2", include_str!("../../templates/host/check_why.j2")),
    ("host/check_dims.j2", include_str!("../../templates/host/check_dims.j2")),
    ("host/dequant_checks.j2", include_str!("../../templates/host/dequant_checks.j2")),
    ("kernel/vocab_reduce.cpp.j2", include_str!("../../templates/kernel/vocab_reduce.cpp.j2")),
    ("kernel/vocab_reduce_grad.cpp.j2", include_str!("../../templates/kernel/vocab_reduce_grad.cpp.j2")),
    ("host/vocab_reduce.cpp.j2", include_str!("../../templates/host/vocab_reduce.cpp.j2")),
    ("host/vocab_reduce_checks.j2", include_str!("../../templates/host/vocab_reduce_checks.j2")),
    ("kernel/reverse_scan.cpp.j2", include_str!("../../templates/kernel/reverse_scan.cpp.j2")),
    ("host/reverse_scan.cpp.j2", include_str!("../../templates/host/reverse_scan.cpp.j2")),
    ("host/reverse_scan_checks.j2", include_str!("../../templates/host/reverse_scan_checks.j2")),
    ("host/row_norm_rows.j2", include_str!("../../templates/host/row_norm_rows.j2")),
    ("host/row_norm_checks.j2", include_str!("../../templates/host/row_norm_checks.j2")),
    ("host/row_norm_grad_checks.j2", include_str!("../../templates/host/row_norm_grad_checks.j2")),
    ("host/elementwise_checks.j2", include_str!("../../templates/host/elementwise_checks.j2")),
    ("host/permute_checks.j2", include_str!("../../templates/host/permute_checks.j2")),
    ("kernel/rotary_dot2.j2", include_str!("../../templates/kernel/rotary_dot2.j2")),
    ("kernel/rotary_grad.cpp.j2", include_str!("../../templates/kernel/rotary_grad.cpp.j2")),
    ("host/rotary_grad.cpp.j2", include_str!("../../templates/host/rotary_grad.cpp.j2")),
    ("kernel/elementwise.cpp.j2", include_str!("../../templates/kernel/elementwise.cpp.j2")),
    ("host/elementwise.cpp.j2", include_str!("../../templates/host/elementwise.cpp.j2")),
    ("host/opdef.j2", include_str!("../../templates/host/opdef.j2")),
    ("host/reject.j2", include_str!("../../templates/host/reject.j2")),
    ("kernel/tiling_data.j2", include_str!("../../templates/kernel/tiling_data.j2")),
    ("host/tiling.h.j2", include_str!("../../templates/host/tiling.h.j2")),
    ("project/CMakeLists.txt.j2", include_str!("../../templates/project/CMakeLists.txt.j2")),
    ("project/op_host.CMakeLists.txt.j2", include_str!("../../templates/project/op_host.CMakeLists.txt.j2")),
    (
        "project/op_kernel.CMakeLists.txt.j2",
        include_str!("../../templates/project/op_kernel.CMakeLists.txt.j2"),
    ),
    ("project/build.sh.j2", include_str!("../../templates/project/build.sh.j2")),
    ("twin/launch.cpp.j2", include_str!("../../templates/twin/launch.cpp.j2")),
    ("torch/CMakeLists.txt.j2", include_str!("../../templates/torch/CMakeLists.txt.j2")),
    ("torch/opgen_torch.h.j2", include_str!("../../templates/torch/opgen_torch.h.j2")),
    ("torch/opgen_schema.cpp.j2", include_str!("../../templates/torch/opgen_schema.cpp.j2")),
    ("torch/opgen_npu.cpp.j2", include_str!("../../templates/torch/opgen_npu.cpp.j2")),
    ("torch/opgen_cpu.cpp.j2", include_str!("../../templates/torch/opgen_cpu.cpp.j2")),
    ("torch/package_init.py.j2", include_str!("../../templates/torch/package_init.py.j2")),
    ("torch/package_ops.py.j2", include_str!("../../templates/torch/package_ops.py.j2")),
    ("torch/package_transformers.py.j2", include_str!("../../templates/torch/package_transformers.py.j2")),
    ("torch/package_rl.py.j2", include_str!("../../templates/torch/package_rl.py.j2")),
    ("torch/pyproject.toml.j2", include_str!("../../templates/torch/pyproject.toml.j2")),
    ("torch/setup.py.j2", include_str!("../../templates/torch/setup.py.j2")),
];

pub(crate) fn environment(templates: &[(&'static str, String)]) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    // C++, CMake and shell: nothing is HTML-escaped.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    for (name, text) in templates {
        env.add_template_owned(*name, text.clone())?;
    }
    env.add_filter("ge_type", |name: String| -> Result<String, Error> {
        Ok(dtype(&name)?.ge_type().to_string())
    });
    env.add_filter("cpp_type", |name: String| -> Result<String, Error> {
        Ok(dtype(&name)?.cpp_type().to_string())
    });
    env.add_filter("attr_setter", |kind: String| -> Result<String, Error> {
        match kind.as_str() {
            "float" => Ok("Float".into()),
            "int" => Ok("Int".into()),
            "bool" => Ok("Bool".into()),
            "string" => Ok("String".into()),
            other => Err(Error::new(ErrorKind::InvalidOperation, format!("unknown attr kind `{other}`"))),
        }
    });
    env.add_filter("cpp_literal", cpp_literal);
    Ok(env)
}

fn dtype(name: &str) -> Result<DType, Error> {
    DType::parse(name)
        .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, format!("unknown dtype `{name}`")))
}

/// An attr default as a C++ literal of the attr's type.
fn cpp_literal(value: Value, kind: String) -> Result<String, Error> {
    let bad =
        || Error::new(ErrorKind::InvalidOperation, format!("default {value} does not fit attr kind {kind}"));
    match kind.as_str() {
        "float" => {
            let v = f64::try_from(value.clone()).map_err(|_| bad())?;
            Ok(float_literal(v))
        }
        "int" => Ok(format!("{}", i64::try_from(value.clone()).map_err(|_| bad())?)),
        "bool" => Ok(if value.is_true() { "true".into() } else { "false".into() }),
        "string" => {
            let s = value.as_str().ok_or_else(bad)?;
            Ok(format!("\"{}\"", s.escape_default()))
        }
        _ => Err(bad()),
    }
}

/// Shortest text that reads back as the same f64, with an `f` suffix (OpDef's Float takes a
/// float): `1e-6` → `1e-6f`, `2` → `2.0f`.
pub(crate) fn float_literal(v: f64) -> String {
    let text = format!("{v:?}");
    if text.contains(['.', 'e', 'E']) {
        format!("{text}f")
    } else {
        format!("{text}.0f")
    }
}

#[cfg(test)]
mod tests {
    use super::float_literal;

    #[test]
    fn float_literals() {
        assert_eq!(float_literal(1e-6), "1e-6f");
        assert_eq!(float_literal(2.0), "2.0f");
        assert_eq!(float_literal(0.5), "0.5f");
    }
}
