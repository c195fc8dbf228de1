//! The one error type of OxMPI and its mapping to MPI error classes.
//!
//! Every failure inside the library is an `Error { class, msg }`; `msg` names the
//! argument and its value. The C boundary (abi::guard) adds the function name
//! and the rank and hands it to the error handler.

use crate::base::consts::*;
use std::os::raw::c_int;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// An MPI error class (MPI_ERR_*).
    pub class: c_int,
    pub msg: String,
    /// Communicator whose error handler is invoked, when not the call's `comm`
    /// argument (e.g. a request's communicator in MPI_Wait).
    pub comm: Option<c_int>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(class: c_int, msg: impl Into<String>) -> Error {
        Error {
            class,
            msg: msg.into(),
            comm: None,
        }
    }

    pub fn on_comm(mut self, comm: c_int) -> Error {
        self.comm = Some(comm);
        self
    }
}

/// `err!(MPI_ERR_RANK, "dest={dest} ...")` builds an `Error`.
#[macro_export]
macro_rules! err {
    ($class:expr, $($fmt:tt)*) => {
        $crate::base::error::Error::new($class, format!($($fmt)*))
    };
}

/// MPI-4.1's error class for an invalid error handler (MPICH 4.1's value;
/// MPICH 4.0 has none).
pub const MPI_ERR_ERRHANDLER: c_int = 80;

/// The standard's short text for an error class.
pub fn class_string(class: c_int) -> Option<&'static str> {
    Some(match class {
        MPI_SUCCESS => "MPI_SUCCESS: no errors",
        MPI_ERR_BUFFER => "MPI_ERR_BUFFER: invalid buffer pointer",
        MPI_ERR_COUNT => "MPI_ERR_COUNT: invalid count argument",
        MPI_ERR_TYPE => "MPI_ERR_TYPE: invalid datatype",
        MPI_ERR_TAG => "MPI_ERR_TAG: invalid tag",
        MPI_ERR_COMM => "MPI_ERR_COMM: invalid communicator",
        MPI_ERR_RANK => "MPI_ERR_RANK: invalid rank",
        MPI_ERR_ROOT => "MPI_ERR_ROOT: invalid root",
        MPI_ERR_GROUP => "MPI_ERR_GROUP: invalid group",
        MPI_ERR_OP => "MPI_ERR_OP: invalid reduce operation",
        MPI_ERR_TOPOLOGY => "MPI_ERR_TOPOLOGY: invalid topology",
        MPI_ERR_DIMS => "MPI_ERR_DIMS: invalid dimension argument",
        MPI_ERR_ARG => "MPI_ERR_ARG: invalid argument of some other kind",
        MPI_ERR_UNKNOWN => "MPI_ERR_UNKNOWN: unknown error",
        MPI_ERR_TRUNCATE => "MPI_ERR_TRUNCATE: message truncated",
        MPI_ERR_OTHER => "MPI_ERR_OTHER: known error not in this list",
        MPI_ERR_INTERN => "MPI_ERR_INTERN: internal error",
        MPI_ERR_IN_STATUS => "MPI_ERR_IN_STATUS: error code is in status",
        MPI_ERR_PENDING => "MPI_ERR_PENDING: pending request",
        MPI_ERR_REQUEST => "MPI_ERR_REQUEST: invalid request",
        MPI_ERR_ACCESS => "MPI_ERR_ACCESS: permission denied",
        MPI_ERR_AMODE => "MPI_ERR_AMODE: invalid file access mode",
        MPI_ERR_BAD_FILE => "MPI_ERR_BAD_FILE: invalid file name",
        MPI_ERR_CONVERSION => "MPI_ERR_CONVERSION: data conversion error",
        MPI_ERR_DUP_DATAREP => "MPI_ERR_DUP_DATAREP: duplicate data representation",
        MPI_ERR_FILE_EXISTS => "MPI_ERR_FILE_EXISTS: file exists",
        MPI_ERR_FILE_IN_USE => "MPI_ERR_FILE_IN_USE: file in use",
        MPI_ERR_FILE => "MPI_ERR_FILE: invalid file",
        MPI_ERR_INFO => "MPI_ERR_INFO: invalid info object",
        MPI_ERR_INFO_KEY => "MPI_ERR_INFO_KEY: invalid info key",
        MPI_ERR_INFO_VALUE => "MPI_ERR_INFO_VALUE: invalid info value",
        MPI_ERR_INFO_NOKEY => "MPI_ERR_INFO_NOKEY: no such info key",
        MPI_ERR_IO => "MPI_ERR_IO: I/O error",
        MPI_ERR_NAME => "MPI_ERR_NAME: invalid service name",
        MPI_ERR_NO_MEM => "MPI_ERR_NO_MEM: out of memory",
        MPI_ERR_NOT_SAME => "MPI_ERR_NOT_SAME: arguments not identical across processes",
        MPI_ERR_NO_SPACE => "MPI_ERR_NO_SPACE: no space left",
        MPI_ERR_NO_SUCH_FILE => "MPI_ERR_NO_SUCH_FILE: no such file",
        MPI_ERR_PORT => "MPI_ERR_PORT: invalid port",
        MPI_ERR_QUOTA => "MPI_ERR_QUOTA: quota exceeded",
        MPI_ERR_READ_ONLY => "MPI_ERR_READ_ONLY: read-only file or file system",
        MPI_ERR_SERVICE => "MPI_ERR_SERVICE: invalid service",
        MPI_ERR_SPAWN => "MPI_ERR_SPAWN: spawn error",
        MPI_ERR_UNSUPPORTED_DATAREP => {
            "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation"
        }
        MPI_ERR_UNSUPPORTED_OPERATION => "MPI_ERR_UNSUPPORTED_OPERATION: unsupported operation",
        MPI_ERR_WIN => "MPI_ERR_WIN: invalid window",
        MPI_ERR_BASE => "MPI_ERR_BASE: invalid base",
        MPI_ERR_LOCKTYPE => "MPI_ERR_LOCKTYPE: invalid lock type",
        MPI_ERR_KEYVAL => "MPI_ERR_KEYVAL: invalid keyval",
        MPI_ERR_RMA_CONFLICT => "MPI_ERR_RMA_CONFLICT: conflicting RMA accesses",
        MPI_ERR_RMA_SYNC => "MPI_ERR_RMA_SYNC: wrong RMA synchronization",
        MPI_ERR_SIZE => "MPI_ERR_SIZE: invalid size",
        MPI_ERR_DISP => "MPI_ERR_DISP: invalid displacement",
        MPI_ERR_ASSERT => "MPI_ERR_ASSERT: invalid assert",
        MPI_ERR_RMA_RANGE => "MPI_ERR_RMA_RANGE: target memory outside the window",
        MPI_ERR_RMA_ATTACH => "MPI_ERR_RMA_ATTACH: memory cannot be attached",
        MPI_ERR_RMA_SHARED => "MPI_ERR_RMA_SHARED: memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "MPI_ERR_RMA_FLAVOR: wrong window flavor",
        MPI_ERR_SESSION => "MPI_ERR_SESSION: invalid session",
        MPI_ERR_PROC_ABORTED => "MPI_ERR_PROC_ABORTED: a peer process aborted",
        MPI_ERR_VALUE_TOO_LARGE => "MPI_ERR_VALUE_TOO_LARGE: value too large",
        MPI_ERR_ERRHANDLER => "MPI_ERR_ERRHANDLER: invalid error handler",
        MPI_T_ERR_MEMORY => "MPI_T_ERR_MEMORY: out of memory in the tools interface",
        MPI_T_ERR_NOT_INITIALIZED => {
            "MPI_T_ERR_NOT_INITIALIZED: the tools interface is not initialized"
        }
        MPI_T_ERR_CANNOT_INIT => "MPI_T_ERR_CANNOT_INIT: the tools interface cannot be initialized",
        MPI_T_ERR_INVALID_INDEX => "MPI_T_ERR_INVALID_INDEX: invalid tools interface index",
        MPI_T_ERR_INVALID_ITEM => "MPI_T_ERR_INVALID_ITEM: invalid tools interface item",
        MPI_T_ERR_INVALID_HANDLE => "MPI_T_ERR_INVALID_HANDLE: invalid tools interface handle",
        MPI_T_ERR_OUT_OF_HANDLES => "MPI_T_ERR_OUT_OF_HANDLES: no tools interface handles left",
        MPI_T_ERR_OUT_OF_SESSIONS => "MPI_T_ERR_OUT_OF_SESSIONS: no tools interface sessions left",
        MPI_T_ERR_INVALID_SESSION => "MPI_T_ERR_INVALID_SESSION: invalid tools interface session",
        MPI_T_ERR_CVAR_SET_NOT_NOW => {
            "MPI_T_ERR_CVAR_SET_NOT_NOW: control variable cannot be set now"
        }
        MPI_T_ERR_CVAR_SET_NEVER => "MPI_T_ERR_CVAR_SET_NEVER: control variable can never be set",
        MPI_T_ERR_PVAR_NO_STARTSTOP => {
            "MPI_T_ERR_PVAR_NO_STARTSTOP: performance variable cannot be started or stopped"
        }
        MPI_T_ERR_PVAR_NO_WRITE => {
            "MPI_T_ERR_PVAR_NO_WRITE: performance variable cannot be written or reset"
        }
        MPI_T_ERR_PVAR_NO_ATOMIC => {
            "MPI_T_ERR_PVAR_NO_ATOMIC: performance variable cannot be read and written atomically"
        }
        MPI_T_ERR_INVALID_NAME => "MPI_T_ERR_INVALID_NAME: invalid tools interface name",
        MPI_T_ERR_INVALID => "MPI_T_ERR_INVALID: invalid use of the tools interface",
        MPI_T_ERR_NOT_SUPPORTED => "MPI_T_ERR_NOT_SUPPORTED: not supported by the tools interface",
        MPIX_ERR_PROC_FAILED => "MPIX_ERR_PROC_FAILED: a process has failed",
        MPIX_ERR_PROC_FAILED_PENDING => {
            "MPIX_ERR_PROC_FAILED_PENDING: a process has failed; the request is pending"
        }
        MPIX_ERR_REVOKED => "MPIX_ERR_REVOKED: the communicator was revoked",
        MPIX_ERR_EAGAIN => "MPIX_ERR_EAGAIN: resource temporarily unavailable",
        MPIX_ERR_NOREQ => "MPIX_ERR_NOREQ: no request available",
        MPI_ERR_LASTCODE => "MPI_ERR_LASTCODE: last error code",
        _ => return None,
    })
}

/// The name of an error class, for messages ("MPI_ERR_RANK").
pub fn class_name(class: c_int) -> &'static str {
    class_string(class)
        .and_then(|s| s.split(':').next())
        .unwrap_or("MPI_ERR_UNKNOWN")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_up_to_last_has_a_string() {
        // Every class of MPICH's header (no class 54; MPI_T_ERR_* are 59-74
        // and 78), MPI-4.1's MPI_ERR_ERRHANDLER, MPICH's MPIX_ERR_*.
        for c in (0..=MPICH_ERR_LAST_CLASS)
            .chain([80, MPI_ERR_LASTCODE])
            .chain(101..=105)
        {
            if c == 54 {
                continue;
            }
            assert!(class_string(c).is_some(), "class {c} has no string");
        }
        assert_eq!(class_name(MPI_ERR_TRUNCATE), "MPI_ERR_TRUNCATE");
    }
}
