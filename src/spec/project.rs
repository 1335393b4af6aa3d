//! The project's names, in one place: `project.toml` beside the specs (optional; every key
//! optional). Two projects generated with different names can be loaded into one process: their
//! torch libraries, Python packages, CANN vendor packages and op types do not collide.
//!
//! ```toml
//! library = "opgen"            # torch.ops.<library>.<op>, TORCH_LIBRARY(<library>, m)
//! package = "opgen_torch"      # import <package>; lib<package>.so, lib<package>_cpu.so
//! vendor = "opgen"             # <install>/vendors/<vendor>, msOpGen's vendor_name
//! op_type_prefix = "Opgen"     # CANN op type <prefix><OpName>, aclnn<prefix><OpName>
//! ```
//!
//! Validated like a spec (file:line:column and the key of every problem, all of them at once).

use super::error::{Reporter, SpecError, SpecErrors};
use super::idents::{is_c_identifier, is_cpp_keyword};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The file name looked for in the specs directory (never read as an op spec).
pub const PROJECT_FILE: &str = "project.toml";

/// The names every generated file, build step and loader takes from here.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProjectNames {
    /// The torch library namespace: `torch.ops.<library>.<op>`.
    pub library: String,
    /// The Python package (and the extension's library stem).
    pub package: String,
    /// The CANN vendor name of the op package.
    pub vendor: String,
    /// The prefix of every op type that does not set `op_type` itself.
    pub op_type_prefix: String,
    /// The project file the names came from (`None`: the defaults).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

impl Default for ProjectNames {
    fn default() -> Self {
        ProjectNames {
            library: "opgen".into(),
            package: "opgen_torch".into(),
            vendor: "opgen".into(),
            op_type_prefix: "Opgen".into(),
            source: None,
        }
    }
}

impl ProjectNames {
    /// Whether these are the defaults (a project without `project.toml`).
    pub fn is_default(&self) -> bool {
        let d = ProjectNames::default();
        (&self.library, &self.package, &self.vendor, &self.op_type_prefix)
            == (&d.library, &d.package, &d.vendor, &d.op_type_prefix)
    }

    /// The CPU twin runtime library of the torch CPU build, `lib<it>.so`: one per project, so
    /// two projects' packages in one process each keep their own op registry.
    pub fn twin_library(&self) -> String {
        format!("{}_twin", self.library)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    #[serde(default)]
    library: Option<Spanned<String>>,
    #[serde(default)]
    package: Option<Spanned<String>>,
    #[serde(default)]
    vendor: Option<Spanned<String>>,
    #[serde(default)]
    op_type_prefix: Option<Spanned<String>>,
}

/// The project file for a specs path: `<dir>/project.toml` for a directory, the one beside a
/// spec file for a file.
pub fn project_file_for(specs: &Path) -> PathBuf {
    if specs.is_dir() {
        specs.join(PROJECT_FILE)
    } else {
        specs.parent().unwrap_or(Path::new(".")).join(PROJECT_FILE)
    }
}

/// The names for a specs path: its project file's, or the defaults when there is none.
pub fn load_project(specs: &Path) -> Result<ProjectNames, SpecErrors> {
    let path = project_file_for(specs);
    if !path.is_file() {
        return Ok(ProjectNames::default());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        SpecErrors::one(SpecError::whole_file(&path, format!("cannot read the project file: {e}")))
    })?;
    parse_project(&path, &text)
}

/// Parses and validates project file text; `path` is used in messages.
pub fn parse_project(path: &Path, text: &str) -> Result<ProjectNames, SpecErrors> {
    let raw: RawProject = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        let field = super::raw::field_path_at(text, offset);
        SpecErrors::one(SpecError::at(path, text, offset, &field, e.message().trim().to_string()))
    })?;
    let mut r = Reporter { path, text, errors: SpecErrors::default() };
    let d = ProjectNames::default();
    let mut take =
        |value: Option<Spanned<String>>, key: &str, default: String, rule: fn(&str) -> Option<String>| {
            match value {
                None => default,
                Some(v) => {
                    if let Some(why) = rule(v.get_ref()) {
                        r.error(&v, key, format!("{key} `{}` {why}", v.get_ref()));
                    }
                    v.into_inner()
                }
            }
        };
    let names = ProjectNames {
        library: take(raw.library, "library", d.library, snake_identifier),
        package: take(raw.package, "package", d.package, python_package),
        vendor: take(raw.vendor, "vendor", d.vendor, snake_identifier),
        op_type_prefix: take(raw.op_type_prefix, "op_type_prefix", d.op_type_prefix, camel_prefix),
        source: Some(path.to_path_buf()),
    };
    r.errors.into_result(names)
}

/// A torch namespace and a vendor directory: lower snake case, a C identifier, not a keyword.
fn snake_identifier(name: &str) -> Option<String> {
    let snake = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !snake {
        Some("must be snake_case: [a-z][a-z0-9_]*".into())
    } else if is_cpp_keyword(name) || name == "torch" || name == "aten" || name == "npu" {
        Some("is a C++ keyword or a name torch or CANN reserves".into())
    } else {
        None
    }
}

/// An importable Python package that does not shadow the ones the loader imports.
fn python_package(name: &str) -> Option<String> {
    const TAKEN: &[&str] = &["torch", "torch_npu", "transformers", "numpy", "ctypes", "os", "sys"];
    snake_identifier(name).or_else(|| {
        TAKEN.contains(&name).then(|| "is a package the generated loader imports itself".to_string())
    })
}

/// UpperCamelCase: the op types it starts stay C identifiers with no underscore (msOpGen derives
/// file names from them by splitting at capitals).
fn camel_prefix(name: &str) -> Option<String> {
    let ok = is_c_identifier(name)
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric());
    (!ok).then(|| "must be UpperCamelCase: [A-Z][A-Za-z0-9]* (a vendor prefix keeps op types apart from CANN's built-ins)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_gives_the_defaults() {
        let names = parse_project(Path::new("specs/project.toml"), "").unwrap();
        assert!(names.is_default());
        assert_eq!(names.twin_library(), "opgen_twin");
    }

    #[test]
    fn every_bad_name_is_reported_with_its_place() {
        let text =
            "library = \"My-Lib\"\npackage = \"torch\"\nvendor = \"ok_vendor\"\nop_type_prefix = \"my_\"\n";
        let errs = parse_project(Path::new("specs/project.toml"), text).unwrap_err();
        let shown = errs.to_string();
        let at: Vec<(usize, &str)> = errs.0.iter().map(|e| (e.line, e.field.as_str())).collect();
        assert_eq!(at, [(1, "library"), (2, "package"), (4, "op_type_prefix")], "{shown}");
        assert!(
            shown.contains("specs/project.toml:1:11: field `library`: library `My-Lib` must be snake_case"),
            "{shown}"
        );
        assert!(
            shown.contains("package `torch` is a C++ keyword or a name torch or CANN reserves"),
            "{shown}"
        );
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let errs = parse_project(Path::new("p/project.toml"), "libary = \"x\"\n").unwrap_err();
        let e = &errs.0[0];
        assert_eq!((e.line, e.column, e.field.as_str()), (1, 1, "libary"), "{errs}");
        assert!(e.message.contains("unknown field `libary`"), "{errs}");
    }
}
