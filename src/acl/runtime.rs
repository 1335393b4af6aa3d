//! ACL runtime handles: the library with one device set ([`Acl`]), streams, device memory.

use super::error::{AclError, Result};
use super::sys;
use std::ffi::{c_void, CStr};
use std::ptr;

/// Where libascendcl.so comes from, for the load error.
pub(crate) const CANN_HINT: &str =
    "the CANN runtime must be on LD_LIBRARY_PATH: source <CANN>/set_env.sh (ascend-toolkit/set_env.sh) first";

/// The ACL runtime, initialised, with one device set. Dropping it resets the device and
/// finalises ACL; streams and buffers borrow it, so they are released first.
pub struct Acl {
    lib: sys::AclLibrary,
    device: i32,
}

impl Acl {
    /// Loads libascendcl.so, calls aclInit and aclrtSetDevice(device).
    pub fn open(device: i32) -> Result<Acl> {
        // SAFETY: loading runs the library's initialisers; libascendcl.so is CANN's runtime,
        // whose initialisers have no preconditions. Every symbol is checked at load
        // (dynamic_link_require_all), so the struct holds valid function pointers.
        let lib = unsafe { sys::AclLibrary::new("libascendcl.so") }.map_err(|e| AclError::Load {
            library: "libascendcl.so".into(),
            message: e.to_string(),
            hint: CANN_HINT,
        })?;
        // SAFETY: a null config path means "no config file" (acl_rt.h).
        let code = unsafe { lib.aclInit(ptr::null()) };
        if code != sys::ACL_SUCCESS {
            return Err(AclError::call("aclInit", code, recent(&lib)));
        }
        // From here on, drop finalises ACL (and resets the device once it is set).
        let mut acl = Acl { lib, device: -1 };
        // SAFETY: ACL is initialised; the id is checked by ACL.
        acl.check("aclrtSetDevice", unsafe { acl.lib.aclrtSetDevice(device) })?;
        acl.device = device;
        Ok(acl)
    }

    pub fn device(&self) -> i32 {
        self.device
    }

    /// The SoC of the current device, e.g. `Ascend910B2`.
    pub fn soc_name(&self) -> Option<String> {
        // SAFETY: returns a static NUL-terminated string or null.
        let p = unsafe { self.lib.aclrtGetSocName() };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    pub fn device_count(&self) -> Result<u32> {
        let mut n = 0u32;
        // SAFETY: writes one u32.
        self.check("aclrtGetDeviceCount", unsafe { self.lib.aclrtGetDeviceCount(&mut n) })?;
        Ok(n)
    }

    pub fn stream(&self) -> Result<Stream<'_>> {
        let mut raw: sys::aclrtStream = ptr::null_mut();
        // SAFETY: writes one stream handle.
        self.check("aclrtCreateStream", unsafe { self.lib.aclrtCreateStream(&mut raw) })?;
        Ok(Stream { acl: self, raw })
    }

    /// `bytes` of device memory (at least one byte: ACL rejects zero-size allocations).
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer<'_>> {
        let mut p: *mut c_void = ptr::null_mut();
        // SAFETY: writes one device pointer.
        let code = unsafe {
            self.lib.aclrtMalloc(&mut p, bytes.max(1), sys::aclrtMemMallocPolicy_ACL_MEM_MALLOC_HUGE_FIRST)
        };
        self.check("aclrtMalloc", code)?;
        Ok(DeviceBuffer { acl: self, ptr: p, len: bytes })
    }

    pub(crate) fn check(&self, call: &str, code: sys::aclError) -> Result<()> {
        if code == sys::ACL_SUCCESS {
            Ok(())
        } else {
            Err(AclError::call(call, code, recent(&self.lib)))
        }
    }
}

impl Drop for Acl {
    fn drop(&mut self) {
        // SAFETY: every stream and buffer borrowed self and is gone; errors on teardown have
        // nowhere to go.
        unsafe {
            if self.device >= 0 {
                self.lib.aclrtResetDevice(self.device);
            }
            self.lib.aclFinalize();
        }
    }
}

/// ACL's own description of the last error on this thread.
fn recent(lib: &sys::AclLibrary) -> Option<String> {
    // SAFETY: returns a thread-local NUL-terminated string or null.
    let p = unsafe { lib.aclGetRecentErrMsg() };
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A stream on the device of its [`Acl`].
pub struct Stream<'a> {
    acl: &'a Acl,
    raw: sys::aclrtStream,
}

impl Stream<'_> {
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// Waits for everything queued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is live.
        self.acl.check("aclrtSynchronizeStream", unsafe { self.acl.lib.aclrtSynchronizeStream(self.raw) })
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        // SAFETY: created by aclrtCreateStream, destroyed once.
        unsafe { self.acl.lib.aclrtDestroyStream(self.raw) };
    }
}

/// Device memory, freed on drop.
pub struct DeviceBuffer<'a> {
    acl: &'a Acl,
    ptr: *mut c_void,
    len: usize,
}

impl DeviceBuffer<'_> {
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` (exactly the buffer's size) to the device.
    pub fn copy_from_host(&mut self, data: &[u8]) -> Result<()> {
        self.same_len("copy_from_host", data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: both ranges are `len` bytes; the device range is ours.
        let code = unsafe {
            self.acl.lib.aclrtMemcpy(
                self.ptr,
                self.len,
                data.as_ptr().cast(),
                data.len(),
                sys::aclrtMemcpyKind_ACL_MEMCPY_HOST_TO_DEVICE,
            )
        };
        self.acl.check("aclrtMemcpy (host to device)", code)
    }

    /// Copies the buffer (exactly `out`'s size) back to the host.
    pub fn copy_to_host(&self, out: &mut [u8]) -> Result<()> {
        self.same_len("copy_to_host", out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: both ranges are `len` bytes.
        let code = unsafe {
            self.acl.lib.aclrtMemcpy(
                out.as_mut_ptr().cast(),
                out.len(),
                self.ptr,
                self.len,
                sys::aclrtMemcpyKind_ACL_MEMCPY_DEVICE_TO_HOST,
            )
        };
        self.acl.check("aclrtMemcpy (device to host)", code)
    }

    fn same_len(&self, what: &str, n: usize) -> Result<()> {
        if n == self.len {
            Ok(())
        } else {
            Err(AclError::Usage(format!("{what}: host buffer has {n} bytes, device buffer {}", self.len)))
        }
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by aclrtMalloc, freed once.
        unsafe { self.acl.lib.aclrtFree(self.ptr) };
    }
}
