//! One generated op through its aclnn API: `aclnn<Op>GetWorkspaceSize` then `aclnn<Op>` from the
//! vendor package's libcust_opapi.so, on tensors made by libnnopbase's `aclCreateTensor`.
//!
//! The prototypes are declared here from research §3 (`aclnn/acl_meta.h` is not among the
//! headers CI binds against: the torch_npu wheel does not ship it). The op's GetWorkspaceSize
//! takes inputs, attrs, outputs, then `uint64_t*` and `aclOpExecutor**`; Rust cannot build a
//! call of arbitrary arity, so the argument patterns of the catalogue's families are listed in
//! [`call_workspace_size`] and any other is an error naming its pattern.

use super::error::{AclError, Result};
use super::runtime::{Acl, DeviceBuffer, Stream};
use super::sys;
use crate::DType;
use libloading::Library;
use std::ffi::{c_char, c_void};
use std::path::Path;
use std::ptr;

type CreateTensor = unsafe extern "C" fn(
    view_dims: *const i64,
    view_dims_num: u64,
    data_type: sys::aclDataType,
    stride: *const i64,
    offset: i64,
    format: sys::aclFormat,
    storage_dims: *const i64,
    storage_dims_num: u64,
    tensor_data: *mut c_void,
) -> *mut c_void;
type DestroyTensor = unsafe extern "C" fn(tensor: *const c_void) -> i32;
type Execute = unsafe extern "C" fn(
    workspace: *mut c_void,
    workspace_size: u64,
    executor: *mut c_void,
    stream: *mut c_void,
) -> i32;

const NNOPBASE_HINT: &str = "libnnopbase.so is part of the CANN toolkit: source <CANN>/set_env.sh first";
const OPAPI_HINT: &str = "install the ops with `cargo xtask build-npu` and pass its --install DIR (or set \
                          ASCEND_CUSTOM_OPP_PATH to <DIR>/vendors/opgen)";

/// One argument of an aclnn call, in the op's order (inputs, attrs, outputs).
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    /// An `aclTensor*` from [`Aclnn::tensor`].
    Tensor(*mut c_void),
    F64(f64),
    I64(i64),
    Bool(bool),
    /// A NUL-terminated string the caller keeps alive through the call.
    Str(*const c_char),
}

impl Arg {
    fn letter(&self) -> char {
        match self {
            Arg::Tensor(_) => 'T',
            Arg::F64(_) => 'D',
            Arg::I64(_) => 'I',
            Arg::Bool(_) => 'B',
            Arg::Str(_) => 'S',
        }
    }
}

/// The aclnn libraries: libnnopbase.so (tensor descriptors) and the vendor's libcust_opapi.so.
pub struct Aclnn {
    // The function pointers below point into these libraries: keep them loaded.
    _nnopbase: Library,
    opapi: Library,
    create_tensor: CreateTensor,
    destroy_tensor: DestroyTensor,
}

/// An `aclTensor` descriptor over device memory, destroyed on drop.
pub struct AclTensor<'a> {
    aclnn: &'a Aclnn,
    raw: *mut c_void,
}

impl AclTensor<'_> {
    pub fn arg(&self) -> Arg {
        Arg::Tensor(self.raw)
    }
}

impl Drop for AclTensor<'_> {
    fn drop(&mut self) {
        // SAFETY: created by aclCreateTensor, destroyed once.
        unsafe { (self.aclnn.destroy_tensor)(self.raw) };
    }
}

fn load(path: &Path, hint: &'static str) -> Result<Library> {
    // SAFETY: CANN's libraries; their initialisers have no preconditions.
    unsafe { Library::new(path) }.map_err(|e| AclError::Load {
        library: path.display().to_string(),
        message: e.to_string(),
        hint,
    })
}

fn symbol<T: Copy>(lib: &Library, library: &str, name: &str, hint: &'static str) -> Result<T> {
    // SAFETY: T is the C prototype of `name` (research §3); the library outlives the copy
    // because Aclnn keeps it.
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| AclError::Load {
        library: library.to_string(),
        message: format!("no symbol {name}: {e}"),
        hint,
    })
}

/// The aclDataType of a dtype (acl_base_rt.h).
pub fn acl_dtype(d: DType) -> sys::aclDataType {
    match d {
        DType::Float16 => sys::aclDataType_ACL_FLOAT16,
        DType::BFloat16 => sys::aclDataType_ACL_BF16,
        DType::Float32 => sys::aclDataType_ACL_FLOAT,
        DType::Int8 => sys::aclDataType_ACL_INT8,
        DType::Int32 => sys::aclDataType_ACL_INT32,
        DType::Int64 => sys::aclDataType_ACL_INT64,
    }
}

impl Aclnn {
    /// Loads libnnopbase.so (from the loader's path) and `opapi` (the vendor's libcust_opapi.so).
    pub fn load(opapi: &Path) -> Result<Aclnn> {
        let nnopbase = load(Path::new("libnnopbase.so"), NNOPBASE_HINT)?;
        let create_tensor = symbol(&nnopbase, "libnnopbase.so", "aclCreateTensor", NNOPBASE_HINT)?;
        let destroy_tensor = symbol(&nnopbase, "libnnopbase.so", "aclDestroyTensor", NNOPBASE_HINT)?;
        let opapi = load(opapi, OPAPI_HINT)?;
        Ok(Aclnn { _nnopbase: nnopbase, opapi, create_tensor, destroy_tensor })
    }

    /// A contiguous ND tensor of `shape` over `buf`.
    pub fn tensor(&self, buf: &DeviceBuffer<'_>, dtype: DType, shape: &[usize]) -> Result<AclTensor<'_>> {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let mut strides = vec![1i64; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1];
        }
        // SAFETY: dims/strides live through the call (ACL copies them); buf outlives the tensor
        // in every use here (both are dropped at the end of the run, tensors first).
        let raw = unsafe {
            (self.create_tensor)(
                dims.as_ptr(),
                dims.len() as u64,
                acl_dtype(dtype),
                strides.as_ptr(),
                0,
                sys::aclFormat_ACL_FORMAT_ND,
                dims.as_ptr(),
                dims.len() as u64,
                buf.as_ptr(),
            )
        };
        if raw.is_null() {
            return Err(AclError::call(format!("aclCreateTensor ({dtype} {shape:?})"), -1, None));
        }
        Ok(AclTensor { aclnn: self, raw })
    }

    /// Runs `aclnn<op_type>` with `args` on `stream` and waits for it.
    pub fn run(&self, acl: &Acl, stream: &Stream<'_>, op_type: &str, args: &[Arg]) -> Result<()> {
        let ws_name = format!("aclnn{op_type}GetWorkspaceSize");
        let exec_name = format!("aclnn{op_type}");
        let get_ws: *const c_void = symbol(&self.opapi, "libcust_opapi.so", &ws_name, OPAPI_HINT)?;
        let exec: Execute = symbol(&self.opapi, "libcust_opapi.so", &exec_name, OPAPI_HINT)?;
        let mut ws_size = 0u64;
        let mut executor: *mut c_void = ptr::null_mut();
        // SAFETY: get_ws is aclnn<Op>GetWorkspaceSize, whose parameters are the op's args in
        // this order followed by the two out-pointers (research §3).
        let status = unsafe { call_workspace_size(get_ws, args, &mut ws_size, &mut executor) }?;
        if status != 0 {
            return Err(AclError::call(ws_name, status, None));
        }
        let workspace = if ws_size > 0 { Some(acl.alloc(ws_size as usize)?) } else { None };
        let ws_ptr = workspace.as_ref().map_or(ptr::null_mut(), |w| w.as_ptr());
        // SAFETY: the executor came from GetWorkspaceSize; the workspace is ws_size bytes.
        let status = unsafe { exec(ws_ptr, ws_size, executor, stream.raw()) };
        if status != 0 {
            return Err(AclError::call(exec_name, status, None));
        }
        stream.synchronize()
    }
}

macro_rules! arg_type {
    (T) => { *mut c_void };
    (D) => { f64 };
    (I) => { i64 };
    (B) => { bool };
    (S) => { *const c_char };
}

macro_rules! arg_value {
    (T, $a:expr) => {
        match $a {
            Some(Arg::Tensor(p)) => *p,
            _ => unreachable!("pattern checked"),
        }
    };
    (D, $a:expr) => {
        match $a {
            Some(Arg::F64(v)) => *v,
            _ => unreachable!("pattern checked"),
        }
    };
    (I, $a:expr) => {
        match $a {
            Some(Arg::I64(v)) => *v,
            _ => unreachable!("pattern checked"),
        }
    };
    (B, $a:expr) => {
        match $a {
            Some(Arg::Bool(v)) => *v,
            _ => unreachable!("pattern checked"),
        }
    };
    (S, $a:expr) => {
        match $a {
            Some(Arg::Str(v)) => *v,
            _ => unreachable!("pattern checked"),
        }
    };
}

/// From one list of argument patterns (T tensor, D double, I int64, B bool, S char*): the typed
/// call for each ([`call_workspace_size`]) and the test of whether a pattern has one
/// ([`has_typed_call`]), so the two never disagree.
macro_rules! typed_calls {
    ($($name:literal => [$($k:ident)*]),* $(,)?) => {
        /// Whether [`call_workspace_size`] can call a GetWorkspaceSize of this pattern.
        pub fn has_typed_call(pattern: &str) -> bool {
            matches!(pattern, $($name)|*)
        }

        /// Calls `f` (an `aclnn<Op>GetWorkspaceSize`) with `args` and the two out-pointers.
        ///
        /// # Safety
        /// `f` must be a GetWorkspaceSize function whose parameters are exactly `args`' kinds in
        /// order, then `uint64_t*`, `aclOpExecutor**`; pointer arguments must be valid.
        unsafe fn call_workspace_size(
            f: *const c_void,
            args: &[Arg],
            ws: *mut u64,
            exec: *mut *mut c_void,
        ) -> Result<i32> {
            let pattern: String = args.iter().map(Arg::letter).collect();
            match pattern.as_str() {
                $($name => {
                    type F = unsafe extern "C" fn($(arg_type!($k),)* *mut u64, *mut *mut c_void) -> i32;
                    // SAFETY: the caller guarantees `f` has this prototype.
                    let f: F = unsafe { std::mem::transmute::<*const c_void, F>(f) };
                    let mut it = args.iter();
                    // Arguments are evaluated left to right: `it` yields them in the op's order.
                    Ok(unsafe { f($(arg_value!($k, it.next()),)* ws, exec) })
                })*
                other => Err(AclError::Usage(format!(
                    "no typed call for the aclnn argument pattern {other} (T tensor, D double, I int64, \
                     B bool, S string); add it to src/acl/aclnn.rs (typed_calls!) and to \
                     app::run_npu::CALLABLE_PATTERNS, or run the op through torch (opgen_torch)"
                ))),
            }
        }
    };
}

// The catalogue's patterns (app::run_npu::CALLABLE_PATTERNS lists the same; a test checks).
typed_calls! {
    "TT" => [T T],
    "TTT" => [T T T],
    "TTTT" => [T T T T],
    "TTTTT" => [T T T T T],
    "TTTTTT" => [T T T T T T],
    "TTTTTTT" => [T T T T T T T],
    "TTTTTTTT" => [T T T T T T T T],
    "TDT" => [T D T],
    "TTDT" => [T T D T],
    "TTDTT" => [T T D T T],
    "TTTDTTT" => [T T T D T T T],
    "TTTDDTT" => [T T T D D T T],
    "TTDITTT" => [T T D I T T T],
    "TTTTTTDIT" => [T T T T T T D I T],
    "TIT" => [T I T],
    "TBT" => [T B T],
    "TTBT" => [T T B T],
    "TST" => [T S T],
    "TTST" => [T T S T],
    "TTTST" => [T T T S T],
    "TTTSST" => [T T T S S T],
    "TTDSTT" => [T T D S T T],
    "TTTDSTTT" => [T T T D S T T T],
    "TTTSTT" => [T T T S T T],
    "TTTTSBTTT" => [T T T T S B T T T],
    "TTTTSTT" => [T T T T S T T],
    "TTTTTSTT" => [T T T T T S T T],
    "TTTTTSTTT" => [T T T T T S T T T],
}

#[cfg(test)]
mod tests {
    use super::has_typed_call;
    use crate::app::run_npu::CALLABLE_PATTERNS;

    #[test]
    fn the_callable_patterns_are_the_typed_calls() {
        for p in CALLABLE_PATTERNS {
            assert!(has_typed_call(p), "{p} is listed as callable but has no typed call");
        }
        assert!(!has_typed_call("TXT"));
    }
}
