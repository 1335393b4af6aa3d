//! The minijinja environment: templates embedded in the binary (output never depends on the
//! working directory), strict undefined (a misspelt field is an error, not an empty string),
//! and the filters that turn spec values into C++.

use crate::dtype::DType;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior, Value};

/// Every template (`templates/**`, by its path below that directory), embedded at compile time:
/// `build.rs` writes the table from the directory, so a new template needs no entry here.
pub(crate) const TEMPLATES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/templates.rs"));

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
