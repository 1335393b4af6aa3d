//! Build script, three jobs:
//!
//! - The table of templates (`$OUT_DIR/templates.rs`, included by `src/codegen/env.rs`): every
//!   file under `templates/`, sorted by path, embedded with `include_str!`, so a new family's
//!   templates need no list kept by hand.
//! - The aclnn argument patterns `opgen run --device npu` can call (`$OUT_DIR/aclnn_patterns.rs`
//!   for `app::run_npu::CALLABLE_PATTERNS`, `$OUT_DIR/aclnn_typed_calls.rs` for
//!   `acl::aclnn`): every op of up to [`MAX_INPUTS`] inputs, [`MAX_ATTRS`] attrs and
//!   [`MAX_OUTPUTS`] outputs, so a new op's signature needs no line kept by hand.
//! - When ACL headers are at hand, Rust bindings for the ACL runtime calls that src/acl uses,
//!   and `cfg(opgen_acl)` on. Never required: without headers the crate builds without the NPU
//!   path, and `opgen run --device npu` says how to get it.
//!
//! Headers come from OPGEN_ACL_INCLUDE (a directory holding acl/acl.h: a toolkit's
//! `<arch>-linux/include`, or the torch_npu wheel's `torch_npu/include`), else from a CANN
//! toolkit at $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME or the standard root. With
//! OPGEN_ACL_INCLUDE set, failing to generate is an error; with a discovered toolkit, a warning.
//!
//! The library is loaded at run time (bindgen's dynamic loading), not linked: the crate links
//! and its tests run on machines without CANN even when the bindings are compiled in.

use std::path::{Path, PathBuf};

/// The ACL functions src/acl calls.
const FUNCTIONS: &[&str] = &[
    "aclInit",
    "aclFinalize",
    "aclGetRecentErrMsg",
    "aclrtGetDeviceCount",
    "aclrtSetDevice",
    "aclrtResetDevice",
    "aclrtGetSocName",
    "aclrtCreateStream",
    "aclrtDestroyStream",
    "aclrtSynchronizeStream",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMemcpy",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(opgen_acl)");
    println!("cargo::rerun-if-changed=build.rs");
    write_template_table();
    write_aclnn_patterns();
    for var in ["OPGEN_ACL_INCLUDE", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let explicit = std::env::var_os("OPGEN_ACL_INCLUDE").filter(|v| !v.is_empty()).map(PathBuf::from);
    let include = match &explicit {
        Some(dir) if dir.join("acl/acl.h").is_file() => dir.clone(),
        Some(dir) => panic!(
            "OPGEN_ACL_INCLUDE={}: no acl/acl.h there (give the directory that holds acl/, e.g. \
             <toolkit>/<arch>-linux/include or <site-packages>/torch_npu/include)",
            dir.display()
        ),
        None => match toolkit_include() {
            Some(dir) => dir,
            None => return,
        },
    };
    println!("cargo::rerun-if-changed={}", include.join("acl").display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("acl_bindings.rs");
    match generate(&include, &out) {
        Ok(()) => println!("cargo::rustc-cfg=opgen_acl"),
        Err(e) if explicit.is_some() => {
            panic!("OPGEN_ACL_INCLUDE={}: bindgen failed: {e}", include.display())
        }
        Err(e) => println!(
            "cargo::warning=ACL headers found in {} but bindgen failed ({e}); building without the NPU \
             path (install libclang-dev, or set OPGEN_ACL_INCLUDE to make this an error)",
            include.display()
        ),
    }
}

/// Writes `$OUT_DIR/templates.rs`: a `&[(name, text)]` expression with one entry per file under
/// `templates/` (name = its path below that directory, `/`-separated), sorted, so the binary and
/// everything rendered from it are the same whatever order the file system lists them in.
/// Cargo re-runs this when any file below `templates/` is added, removed or changed.
fn write_template_table() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = root.join("templates");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut files = Vec::new();
    collect_files(&dir, &mut files);
    files.sort();
    let mut table = String::from("&[\n");
    for path in &files {
        let name = path.strip_prefix(&dir).expect("below templates/");
        let name: Vec<String> =
            name.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        table.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            name.join("/"),
            path.display().to_string()
        ));
    }
    table.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("templates.rs");
    std::fs::write(&out, table).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// The bounds of the aclnn signatures with a typed call: the catalogue's largest today are 8
/// tensors (6 in + 2 out), 2 attrs and 3 outputs; an in-place op has none (its ref outputs are
/// its inputs, `<name>Ref`). Each pattern costs one match arm.
const MAX_INPUTS: usize = 8;
const MAX_ATTRS: usize = 2;
const MAX_OUTPUTS: usize = 4;

/// Writes every aclnn argument pattern within the bounds above (inputs, attrs, outputs as T
/// tensor, D double, I int64, B bool, S string): `aclnn_patterns.rs`, a sorted `&[&str]`
/// expression, and `aclnn_typed_calls.rs`, the `typed_calls!` invocation over the same list, so
/// the list of callable patterns and the typed calls never disagree. Without attrs, inputs and
/// outputs make one run of T (`TTT` is 2 in + 1 out or 1 in + 2 out: the same prototype).
fn write_aclnn_patterns() {
    let mut attr_runs = vec![String::new()];
    let mut longest = vec![String::new()];
    for _ in 0..MAX_ATTRS {
        longest = longest.iter().flat_map(|a| "DIBS".chars().map(move |k| format!("{a}{k}"))).collect();
        attr_runs.extend(longest.iter().cloned());
    }
    let mut patterns = std::collections::BTreeSet::new();
    for inputs in 1..=MAX_INPUTS {
        for attrs in &attr_runs {
            for outputs in 0..=MAX_OUTPUTS {
                patterns.insert(format!("{}{attrs}{}", "T".repeat(inputs), "T".repeat(outputs)));
            }
        }
    }
    let list: String = patterns.iter().map(|p| format!("    {p:?},\n")).collect();
    let calls: String = patterns
        .iter()
        .map(|p| {
            let kinds: Vec<String> = p.chars().map(String::from).collect();
            format!("    {p:?} => [{}],\n", kinds.join(" "))
        })
        .collect();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (file, text) in [
        ("aclnn_patterns.rs", format!("&[\n{list}]")),
        ("aclnn_typed_calls.rs", format!("typed_calls! {{\n{calls}}}\n")),
    ] {
        let path = out.join(file);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// `<root>/<arch>-linux/include` or `<root>/include` of the first toolkit root that has acl/acl.h.
fn toolkit_include() -> Option<PathBuf> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let roots = ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).filter(|s| !s.is_empty()).map(PathBuf::from))
        .chain([PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest")]);
    roots
        .flat_map(|r| [r.join(format!("{arch}-linux/include")), r.join("include")])
        .find(|d| d.join("acl/acl.h").is_file())
}

fn generate(include: &Path, out: &Path) -> Result<(), String> {
    let builder = bindgen::Builder::default()
        .header(include.join("acl/acl.h").display().to_string())
        .clang_arg(format!("-I{}", include.display()))
        .clang_arg("-xc")
        .allowlist_function(FUNCTIONS.join("|"))
        .allowlist_type("aclDataType|aclFormat|aclrtMemcpyKind|aclrtMemMallocPolicy")
        .allowlist_var("ACL_SUCCESS|ACL_ERROR_.*")
        .dynamic_library_name("AclLibrary")
        .dynamic_link_require_all(true)
        .wrap_unsafe_ops(true)
        .layout_tests(false)
        .generate_comments(false);
    let bindings = builder.generate().map_err(|e| e.to_string())?;
    bindings.write_to_file(out).map_err(|e| format!("{}: {e}", out.display()))
}
