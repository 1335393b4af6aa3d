//! `opgen run OP --device npu`: one op on a real NPU through its aclnn API (the package
//! `build-npu` installed), its outputs compared with the Rust reference and written as .npy.
//!
//! Needs the ACL bindings (`cfg(opgen_acl)`, see build.rs). A binary built without them says
//! so and how to rebuild; it never pretends to run.

use super::AppError;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct RunNpuOptions {
    pub specs: Option<PathBuf>,
    pub op: String,
    /// `name=path.npy`, one per input.
    pub inputs: Vec<String>,
    /// `name=value`; attrs not given take their defaults.
    pub attrs: Vec<String>,
    pub out: PathBuf,
    /// The NPU (device id) to run on.
    pub device: i32,
    /// Where `build-npu` installed the package, when ASCEND_CUSTOM_OPP_PATH does not name it.
    pub install: Option<PathBuf>,
}

/// What a build without the bindings answers.
pub const UNAVAILABLE: &str = "opgen run --device npu: built without ACL: rebuild with CANN or OPGEN_ACL_INCLUDE \
     set (the directory holding acl/acl.h: <toolkit>/<arch>-linux/include, or the torch_npu wheel's \
     torch_npu/include), e.g. `OPGEN_ACL_INCLUDE=... cargo build`; `opgen run` without --device runs the op on \
     the CPU twin";

/// The aclnn argument patterns `opgen run --device npu` can call (inputs, attrs, outputs as
/// T tensor, D double, I int64, B bool, S string): one typed call each in src/acl/aclnn.rs.
pub const CALLABLE_PATTERNS: &[&str] = &[
    "TT",
    "TTT",
    "TTTT",
    "TTTTT",
    "TTTTTT",
    "TTTTTTT",
    "TTTTTTTT",
    "TDT",
    "TTDT",
    "TTDTT",
    "TTTDTTT",
    "TTTDDTT",
    "TTDITTT",
    "TTTTTTDIT",
    "TIT",
    "TBT",
    "TTBT",
    "TST",
    "TTST",
    "TTTST",
    "TTTSST",
    "TTDSTT",
    "TTTDSTTT",
    "TTTSTT",
    "TTTTSBTTT",
    "TTTTSTT",
    "TTTTTSTT",
    "TTTTTSTTT",
];

/// The op's aclnn argument pattern, e.g. `TTDSTT` for rms_norm (x, gamma, epsilon, rounding, y, rstd).
pub fn aclnn_pattern(spec: &crate::spec::OpSpec) -> String {
    use crate::spec::AttrKind;
    let tensors = |n: usize| "T".repeat(n);
    let attrs: String = spec
        .attrs
        .iter()
        .map(|a| match a.kind {
            AttrKind::Float => 'D',
            AttrKind::Int => 'I',
            AttrKind::Bool => 'B',
            AttrKind::String => 'S',
        })
        .collect();
    format!("{}{attrs}{}", tensors(spec.inputs.len()), tensors(spec.outputs.len()))
}

/// Whether this build has the ACL bindings.
pub fn available() -> bool {
    cfg!(opgen_acl)
}

#[cfg(not(opgen_acl))]
pub fn run_npu(_opts: &RunNpuOptions) -> Result<(), AppError> {
    Err(AppError::input(UNAVAILABLE))
}

#[cfg(opgen_acl)]
pub fn run_npu(opts: &RunNpuOptions) -> Result<(), AppError> {
    with_acl::run(opts)
}

#[cfg(opgen_acl)]
mod with_acl {
    use super::{AppError, RunNpuOptions};
    use crate::acl::aclnn::{Aclnn, Arg};
    use crate::acl::{Acl, AclError, DeviceBuffer};
    use crate::app::gen::load_specs;
    use crate::app::plan::combination;
    use crate::app::run::read_inputs;
    use crate::compare::compare;
    use crate::npy;
    use crate::spec::{AttrKind, AttrValue};
    use crate::tensor::HostTensor;
    use std::ffi::CString;
    use std::path::{Path, PathBuf};

    fn acl_err(what: &str) -> impl Fn(AclError) -> AppError + '_ {
        move |e| AppError::failed(format!("opgen run --device npu: {what}: {e}"))
    }

    /// libcust_opapi.so of the installed vendor package: ASCEND_CUSTOM_OPP_PATH first (what
    /// torch_npu uses too), then `--install` or build-npu's default install directory.
    fn opapi_library(install: Option<&Path>, vendor_name: &str) -> Result<PathBuf, AppError> {
        let mut tried = Vec::new();
        let from_env = std::env::var_os("ASCEND_CUSTOM_OPP_PATH")
            .map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
            .unwrap_or_default();
        let default_install = install
            .map(Path::to_path_buf)
            .unwrap_or_else(|| crate::repo_root().join(super::super::build_npu::DEFAULT_INSTALL_DIR));
        for vendor in from_env.into_iter().chain([default_install.join("vendors").join(vendor_name)]) {
            let lib = vendor.join("op_api/lib/libcust_opapi.so");
            if lib.is_file() {
                return Ok(lib);
            }
            tried.push(lib.display().to_string());
        }
        Err(AppError::input(format!(
            "opgen run --device npu: no installed vendor package: looked for {}; run `cargo xtask build-npu` \
             (and pass its --install DIR here)",
            tried.join(", ")
        )))
    }

    pub(super) fn run(opts: &RunNpuOptions) -> Result<(), AppError> {
        let specs = load_specs(opts.specs.as_deref(), std::slice::from_ref(&opts.op))?;
        let spec = &specs[0];
        let inputs = read_inputs(spec, &opts.inputs)?;
        // The combination checks the files' dtypes against the registered ones.
        let dtypes: Vec<(&str, crate::DType)> = inputs.iter().map(|(n, t)| (n.as_str(), t.dtype)).collect();
        let (_, attrs) = combination(spec, None, &dtypes, &opts.attrs)?;
        let expected = crate::family::expected(spec, &inputs, &attrs)
            .map_err(|e| AppError::failed(format!("op `{}`: reference: {e}", spec.name)))?;
        // The runtime first: without CANN there cannot be an installed package either.
        let acl = Acl::open(opts.device).map_err(acl_err("ACL setup"))?;
        let opapi = opapi_library(opts.install.as_deref(), &spec.project.vendor)?;
        println!(
            "device {} ({}), aclnn{} from {}",
            acl.device(),
            acl.soc_name().unwrap_or_else(|| "unknown SoC".into()),
            spec.op_type,
            opapi.display()
        );
        let aclnn = Aclnn::load(&opapi).map_err(acl_err("aclnn libraries"))?;
        let stream = acl.stream().map_err(acl_err("stream"))?;

        // Device copies of the inputs, then empty outputs shaped as the reference says.
        let mut buffers: Vec<(String, HostTensor, DeviceBuffer<'_>)> = Vec::new();
        for (name, t) in &inputs {
            let mut buf = acl.alloc(t.bytes.len()).map_err(acl_err(name))?;
            buf.copy_from_host(&t.bytes).map_err(acl_err(name))?;
            buffers.push((name.clone(), t.clone(), buf));
        }
        for out in &spec.outputs {
            let e = expected.iter().find(|e| e.name == out.name).ok_or_else(|| {
                AppError::failed(format!("op `{}`: the reference gives no output `{}`", spec.name, out.name))
            })?;
            let host = HostTensor::zeros(e.dtype, &e.shape);
            let buf = acl.alloc(host.bytes.len()).map_err(acl_err(&out.name))?;
            buffers.push((out.name.clone(), host, buf));
        }
        let descriptors = buffers
            .iter()
            .map(|(name, host, buf)| aclnn.tensor(buf, host.dtype, &host.shape).map_err(acl_err(name)))
            .collect::<Result<Vec<_>, _>>()?;

        // aclnn order: inputs, attrs (typed by the spec: a float attr is a double even when its
        // value was written as an integer), outputs. The strings outlive the call.
        let n_in = spec.inputs.len();
        let mut args: Vec<Arg> = descriptors[..n_in].iter().map(|d| d.arg()).collect();
        let mut strings: Vec<CString> = Vec::new();
        for (attr, (name, value)) in spec.attrs.iter().zip(&attrs) {
            let bad = || {
                AppError::input(format!(
                    "op `{}`: attr `{name}`: {value:?} is not a {}",
                    spec.name,
                    attr.kind.name()
                ))
            };
            args.push(match (attr.kind, value) {
                (AttrKind::Float, v) => Arg::F64(v.as_f64().ok_or_else(bad)?),
                (AttrKind::Int, AttrValue::Int(v)) => Arg::I64(*v),
                (AttrKind::Bool, AttrValue::Bool(v)) => Arg::Bool(*v),
                (AttrKind::String, AttrValue::String(v)) => {
                    strings.push(CString::new(v.as_str()).map_err(|_| bad())?);
                    Arg::Str(strings.last().expect("just pushed").as_ptr())
                }
                _ => return Err(bad()),
            });
        }
        args.extend(descriptors[n_in..].iter().map(|d| d.arg()));
        aclnn.run(&acl, &stream, &spec.op_type, &args).map_err(acl_err("run"))?;

        std::fs::create_dir_all(&opts.out)
            .map_err(|e| AppError::failed(format!("{}: {e}", opts.out.display())))?;
        let mut failed = Vec::new();
        for e in &expected {
            let Some((_, host, buf)) = buffers.iter().find(|(n, _, _)| *n == e.name) else { continue };
            let mut result = host.clone();
            buf.copy_to_host(&mut result.bytes).map_err(acl_err(&e.name))?;
            let cmp = compare(&result, &e.values, e.tolerance);
            println!("{:<10} {cmp}", e.name);
            if !cmp.passed() {
                failed.push(e.name.clone());
            }
            let path = opts.out.join(format!("{}.npy", e.name));
            npy::write_npy(&path, &result).map_err(|err| AppError::failed(err.to_string()))?;
            println!("wrote {}", path.display());
        }
        drop(descriptors);
        if failed.is_empty() {
            Ok(())
        } else {
            Err(AppError::failed(format!(
                "op `{}` on the NPU differs from the reference in: {}",
                spec.name,
                failed.join(", ")
            )))
        }
    }
}
