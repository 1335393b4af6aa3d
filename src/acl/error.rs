//! ACL failures as values.

use std::fmt;

pub type Result<T> = std::result::Result<T, AclError>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclError {
    /// A shared library (libascendcl.so, libnnopbase.so, libcust_opapi.so) or one of its
    /// functions could not be loaded.
    Load { library: String, message: String, hint: &'static str },
    /// An ACL or aclnn call returned a non-zero status.
    Call { call: String, code: i32, recent: Option<String> },
    /// Something this layer checks itself (sizes, shapes).
    Usage(String),
}

impl AclError {
    pub(crate) fn call(call: impl Into<String>, code: i32, recent: Option<String>) -> AclError {
        AclError::Call { call: call.into(), code, recent: recent.filter(|m| !m.trim().is_empty()) }
    }
}

/// Names of the codes a user is most likely to meet (acl_base_rt.h, rt_error_codes.h).
fn code_name(code: i32) -> Option<&'static str> {
    Some(match code {
        100000 => "ACL_ERROR_INVALID_PARAM",
        100002 => "ACL_ERROR_UNINITIALIZE",
        100003 => "ACL_ERROR_REPEAT_INITIALIZE",
        107001 => "ACL_ERROR_RT_PARAM_INVALID",
        107002 => "ACL_ERROR_RT_INVALID_DEVICEID",
        207001 => "ACL_ERROR_RT_MEMORY_ALLOCATION",
        507033 => "ACL_ERROR_RT_DEV_SETUP_ERROR",
        561000 => "ACLNN_ERR_PARAM_NULLPTR",
        561001 => "ACLNN_ERR_PARAM_INVALID",
        561003 => "ACLNN_ERR_RUNTIME_ERROR",
        _ => return None,
    })
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AclError::Load { library, message, hint } => {
                write!(f, "cannot load {library}: {message}; {hint}")
            }
            AclError::Call { call, code, recent } => {
                write!(f, "{call} failed with error {code}")?;
                if let Some(name) = code_name(*code) {
                    write!(f, " ({name})")?;
                }
                if let Some(m) = recent {
                    write!(f, ": {}", m.trim())?;
                }
                Ok(())
            }
            AclError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AclError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_call_and_the_code() {
        let e = AclError::call("aclrtMalloc", 207001, Some("out of memory\n".into()));
        assert_eq!(
            e.to_string(),
            "aclrtMalloc failed with error 207001 (ACL_ERROR_RT_MEMORY_ALLOCATION): out of memory"
        );
        assert_eq!(
            AclError::call("aclInit", 42, Some(" ".into())).to_string(),
            "aclInit failed with error 42"
        );
    }
}
