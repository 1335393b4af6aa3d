//! Build script: when ACL headers are at hand, Rust bindings for the ACL runtime calls that
//! src/acl uses, and `cfg(opgen_acl)` on. Never required: without headers the crate builds
//! without the NPU path, and `opgen run --device npu` says how to get it.
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
