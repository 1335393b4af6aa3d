//! Dependencies point one way (ARCHITECTURE.md "Layers"): every `crate::<module>` a source file
//! names outside its unit tests must be in its own layer or one below. Read from the source
//! text, so a new upward `use` fails here with the file and line.

use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use its own layer and those below it.
const LAYERS: &[&[&str]] = &[
    &["dtype", "tensor", "npy", "toolchain"],
    &["spec"],
    &["plan"],
    &["reference"],
    &["compare"],
    &["family"],
    &["codegen"],
    &["verify"],
    &["perf"],
    &["report"],
    &["app", "acl"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under src/ belongs to (`src/family/rotary.rs` → `family`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// `crate::<name>` references on a line of code (comments and string text after `//` ignored).
fn crate_refs(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut refs = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            refs.push(name);
        }
        rest = after;
    }
    // `use crate::{a, b::c}`: every name in the braces.
    if let Some(at) = code.find("crate::{") {
        let inner = &code[at + "crate::{".len()..];
        for part in inner.split([',', '}']) {
            let name: String =
                part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                refs.push(name);
            }
        }
    }
    refs
}

/// Upward references of the crate's sources: (file:line, from, to).
fn upward_references(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let Some(module) = module_of(src, &file) else { continue };
        let Some(own) = layer_of(&module) else { continue };
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            // Unit tests may reach further up (a spec test loading the catalogue).
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            for target in crate_refs(line) {
                if let Some(layer) = layer_of(&target) {
                    if layer > own {
                        found.push(format!("{}:{}: {module} uses crate::{target}", file.display(), i + 1));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_module_imports_one_above_it() {
    let src = ascend_opgen::repo_root().join("src");
    let found = upward_references(&src);
    assert!(found.is_empty(), "upward references:\n{}", found.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = ascend_opgen::repo_root().join("src");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().trim_end_matches(".rs").to_string();
        if ["lib", "main"].contains(&name.as_str()) {
            continue;
        }
        if layer_of(&name).is_none() {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "modules without a layer in tests/it/layering.rs: {missing:?}");
}

#[test]
fn the_checker_sees_an_upward_use() {
    // A spec file naming the family layer is flagged; one naming the layer below is not.
    let dir = crate::support::TempDir::new("layering");
    let spec = dir.join("spec");
    std::fs::create_dir_all(&spec).unwrap();
    std::fs::write(spec.join("mod.rs"), "use crate::dtype::DType;\nuse crate::{family, tensor};\n").unwrap();
    let found = upward_references(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("mod.rs:2: spec uses crate::family"), "{found:?}");
}

/// `Result<T, String>` spots on a line of code: a `Result<` whose last top-level type argument
/// is `String` (comments after `//` ignored).
fn string_error_results(line: &str) -> usize {
    let code = line.split("//").next().unwrap_or("");
    let bytes = code.as_bytes();
    let mut found = 0;
    let mut rest = 0;
    while let Some(at) = code[rest..].find("Result<") {
        let start = rest + at;
        // `FooResult<` is another type.
        let word_before = start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut depth = 0usize;
        let mut last_arg = String::new();
        let mut args = 0;
        for c in code[start + "Result".len()..].chars() {
            match c {
                '<' | '(' | '[' => {
                    depth += 1;
                    if depth == 1 {
                        continue;
                    }
                }
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => {
                    args += 1;
                    last_arg.clear();
                    continue;
                }
                _ => {}
            }
            if depth >= 1 {
                last_arg.push(c);
            }
        }
        if !word_before && args >= 1 && last_arg.trim() == "String" {
            found += 1;
        }
        rest = start + "Result<".len();
    }
    found
}

/// Every `Result<_, String>` in the crate's sources, unit tests included: (file:line).
fn string_errors(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if string_error_results(line) > 0 {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn library_code_has_typed_errors_not_strings() {
    // ARCHITECTURE.md "Errors and exit codes": each layer has its own error type.
    let src = ascend_opgen::repo_root().join("src");
    let found = string_errors(&src);
    assert!(
        found.is_empty(),
        "Result<_, String> in src/ (use the layer's typed error):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_sees_a_string_error() {
    assert_eq!(string_error_results("pub fn f() -> Result<u8, String> {"), 1);
    assert_eq!(string_error_results("fn g() -> Result<Vec<(String, u8)>, String>"), 1);
    assert_eq!(string_error_results("let r: Vec<Result<Row, String>> = x; // Result<a, String>"), 1);
    assert_eq!(string_error_results(".collect::<Result<Vec<Value>, String>>()"), 1);
    assert_eq!(string_error_results("fn h() -> Result<String, SpecError>"), 0);
    assert_eq!(string_error_results("fn k() -> Result<BTreeMap<String, String>, FamilyError>"), 0);
    assert_eq!(string_error_results("fn m() -> io::Result<String>"), 0);
    assert_eq!(string_error_results("type R = TryResult<u8, String>;"), 0);
}

/// The one call that makes a directory nobody removes when a test panics; spelled in two
/// halves so this file does not match itself.
const TEMP_DIR_CALL: &str = concat!("temp_", "dir()");

/// Lines under `dir` (recursively) that call the system temp dir directly, outside the files
/// that own scratch directories (`allowed`, paths relative to `dir`). Comments are ignored.
fn direct_temp_dirs(dir: &Path, allowed: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
        if allowed.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains(TEMP_DIR_CALL) {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

/// Test modules make scratch directories through `support::TempDir` (removed on drop, so on a
/// panic too) and library code through `toolchain::scratch::ScratchDir`; nothing else names the
/// system temp dir.
#[test]
fn scratch_directories_are_made_by_the_guards_only() {
    let root = ascend_opgen::repo_root();
    let mut found = direct_temp_dirs(&root.join("tests/it"), &["toolchain_support/mod.rs"]);
    found.extend(direct_temp_dirs(&root.join("src"), &["toolchain/scratch.rs"]));
    assert!(
        found.is_empty(),
        "use support::TempDir (tests) or toolchain::scratch::ScratchDir (src) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_sees_a_direct_call() {
    let dir = crate::support::TempDir::new("layering-temp");
    let call = format!("    let d = std::env::{TEMP_DIR_CALL}.join(\"x\");\n");
    std::fs::write(dir.join("a.rs"), &call).unwrap();
    std::fs::write(dir.join("owner.rs"), &call).unwrap();
    std::fs::write(dir.join("b.rs"), format!("// std::env::{TEMP_DIR_CALL} in a comment\n")).unwrap();
    let found = direct_temp_dirs(&dir, &["owner.rs"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a.rs:1:"), "{found:?}");
}

/// The patch helper refuses a needle that is absent or ambiguous (a silent no-op replace would
/// make a mutant test that cannot fail), naming the file, the needle and the count.
#[test]
fn a_patch_whose_needle_does_not_match_once_fails() {
    use crate::support::{patch, patch_all, Patched};
    let message = |f: fn() -> String| {
        let err = std::panic::catch_unwind(f).expect_err("the patch must fail");
        err.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let absent = message(|| patch("op_kernel/k.cpp", "Add(a, b);\n", "Sub(", "Mul("));
    assert!(absent.contains("op_kernel/k.cpp") && absent.contains("\"Sub(\" occurs 0 time(s)"), "{absent}");
    let twice = message(|| "x = 1\nx = 1\n".patched("x = 1", "x = 2"));
    assert!(twice.contains("occurs 2 time(s), the patch expects 1"), "{twice}");
    assert_eq!(patch_all("t", "x = 1\nx = 1\n", "x = 1", "x = 2", 2), "x = 2\nx = 2\n");
    assert_eq!("a b".patched("b", "c"), "a c");
}

/// `support::TempDir` is removed when the test holding it panics.
#[test]
fn a_temp_dir_is_removed_when_its_test_panics() {
    let kept = std::sync::Mutex::new(PathBuf::new());
    let result = std::panic::catch_unwind(|| {
        let dir = crate::support::TempDir::new("layering-panic");
        std::fs::write(dir.join("f"), "x").unwrap();
        *kept.lock().unwrap() = dir.to_path_buf();
        panic!("a failing test");
    });
    assert!(result.is_err());
    let path = kept.lock().unwrap().clone();
    // Unless the developer asked to keep failed tests' directories.
    if std::env::var_os(crate::support::KEEP_TEMP_VAR).is_none() {
        assert!(!path.as_os_str().is_empty() && !path.exists(), "{}", path.display());
    }
}

/// The code lines of `text` (before its unit tests) that name a family, as `line: text`: a
/// `Family` made from a name (`Family::named(`), a registry lookup by a literal name
/// (`family::family("`), a comparison with one (`family.name() == "`), or an enum-style
/// variant (`Family::RowNorm`, as before the registry).
fn family_variants_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        let variant = code.match_indices("Family::").any(|(at, m)| {
            let ident: String =
                code[at + m.len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            ident.starts_with(|c: char| c.is_ascii_uppercase())
                && ident.chars().any(|c| c.is_ascii_lowercase())
        });
        let by_name =
            ["Family::named(", "family::family(\"", "family.name() == \""].iter().any(|n| code.contains(n));
        if variant || by_name {
            found.push(format!("{}: {}", i + 1, line.trim()));
        }
    }
    found
}

/// Family knowledge lives in `src/family/` (issue 25 point 5): the shared layers reach a
/// family through `FamilyOps`, and the spec layer holds a family as the name its registry
/// (`family::FAMILIES`) gave, so nothing outside `src/family/` names one. A `match` on a family
/// in codegen or an `if spec.family.name() == "elementwise"` rule in validation fails here with
/// the file and line.
#[test]
fn only_the_family_layer_names_a_family() {
    let src = ascend_opgen::repo_root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("family") {
            continue;
        }
        for hit in family_variants_named(&std::fs::read_to_string(&file).unwrap()) {
            found.push(format!("src/{}:{hit}", rel.display()));
        }
    }
    assert!(found.is_empty(), "family variants named outside src/family/:\n{}", found.join("\n"));
}

#[test]
fn a_family_variant_outside_the_family_layer_is_found() {
    let code = "let x = match spec.family {\n    Family::RowNorm => 1,\n    _ => families().len(),\n};\n";
    assert_eq!(family_variants_named(code), vec!["2: Family::RowNorm => 1,".to_string()]);
    assert!(family_variants_named("// Family::RowNorm in a comment\n").is_empty());
    let code = "let a = Family::named(\"x\");\nif spec.family.name() == \"rotary\" {}\nlet b = family::family(\"whiten\");\nlet c = spec.family.name();\n";
    assert_eq!(family_variants_named(code).len(), 3, "{:?}", family_variants_named(code));
}
