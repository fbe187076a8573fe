//! Errors: every fallible call returns `Result<T, Error>`; an [`Error`] carries the library's
//! status code and its message (docs/error-handling.md).
use alpa_sys as sys;
use std::ffi::CStr;
use std::fmt;
use std::ptr;

/// The `ALPA_ERR_*` status of a failed call, as an enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `ALPA_ERR_INVALID_ARGUMENT`: a bad length, an unknown option, a bad model spec, ...
    InvalidArgument,
    /// `ALPA_ERR_INVALID_PROBLEM`: inconsistent problem data (the message names the element).
    InvalidProblem,
    /// `ALPA_ERR_INFEASIBLE`: no answer meets the constraints (the message says why).
    Infeasible,
    /// `ALPA_ERR_TIMEOUT`: the time limit ran out before any answer.
    Timeout,
    /// `ALPA_ERR_CANCELLED`: cancelled (token or progress callback) before any answer.
    Cancelled,
    /// `ALPA_ERR_UNSUPPORTED`.
    Unsupported,
    /// `ALPA_ERR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// `ALPA_ERR_INTERNAL`.
    Internal,
    /// `ALPA_ERR_IO`: a file could not be read or written.
    Io,
    /// `ALPA_ERR_PARSE`: not valid JSON or not the expected format.
    Parse,
    /// `ALPA_ERR_INVALID_GRAPH`: an inconsistent operator graph (the message names the op).
    InvalidGraph,
    /// A status this binding does not know (a newer library).
    Other(i32),
}

impl ErrorKind {
    /// The kind of an `ALPA_ERR_*` status code.
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            sys::ALPA_ERR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::ALPA_ERR_INVALID_PROBLEM => ErrorKind::InvalidProblem,
            sys::ALPA_ERR_INFEASIBLE => ErrorKind::Infeasible,
            sys::ALPA_ERR_TIMEOUT => ErrorKind::Timeout,
            sys::ALPA_ERR_CANCELLED => ErrorKind::Cancelled,
            sys::ALPA_ERR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::ALPA_ERR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            sys::ALPA_ERR_INTERNAL => ErrorKind::Internal,
            sys::ALPA_ERR_IO => ErrorKind::Io,
            sys::ALPA_ERR_PARSE => ErrorKind::Parse,
            sys::ALPA_ERR_INVALID_GRAPH => ErrorKind::InvalidGraph,
            other => ErrorKind::Other(other),
        }
    }

    /// The `ALPA_ERR_*` status code.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::InvalidArgument => sys::ALPA_ERR_INVALID_ARGUMENT,
            ErrorKind::InvalidProblem => sys::ALPA_ERR_INVALID_PROBLEM,
            ErrorKind::Infeasible => sys::ALPA_ERR_INFEASIBLE,
            ErrorKind::Timeout => sys::ALPA_ERR_TIMEOUT,
            ErrorKind::Cancelled => sys::ALPA_ERR_CANCELLED,
            ErrorKind::Unsupported => sys::ALPA_ERR_UNSUPPORTED,
            ErrorKind::OutOfMemory => sys::ALPA_ERR_OUT_OF_MEMORY,
            ErrorKind::Internal => sys::ALPA_ERR_INTERNAL,
            ErrorKind::Io => sys::ALPA_ERR_IO,
            ErrorKind::Parse => sys::ALPA_ERR_PARSE,
            ErrorKind::InvalidGraph => sys::ALPA_ERR_INVALID_GRAPH,
            ErrorKind::Other(code) => code,
        }
    }
}

/// A failed call: the status (`ALPA_ERR_*`) and the library's message, which names the
/// offending element ("node 12 has no strategies", "op 7 'fc1' (dot_general): ...").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: i32,
    message: String,
}

/// `std::result::Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message` (for checks this binding makes before calling the
    /// library, such as a string with an interior NUL or slices of inconsistent lengths).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { code: kind.code(), message: message.into() }
    }

    /// The status code (`ALPA_ERR_*`, positive).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The status as an [`ErrorKind`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_code(self.code)
    }

    /// The library's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The library's short name of the status ("invalid argument", ...).
    pub fn status_name(&self) -> &'static str {
        status_string(self.code)
    }

    /// Takes ownership of an `alpa_error` (may be NULL) returned with status `status`.
    pub(crate) unsafe fn from_raw(status: i32, err: *mut sys::alpa_error) -> Error {
        if err.is_null() {
            return Error { code: status, message: status_string(status).to_string() };
        }
        let message = CStr::from_ptr(sys::alpa_error_message(err)).to_string_lossy().into_owned();
        sys::alpa_error_free(err);
        Error { code: status, message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (status {}: {})", self.message, self.code, self.status_name())
    }
}

impl std::error::Error for Error {}

/// The library's short English name of a status code ("ok", "invalid argument", ...).
pub fn status_string(code: i32) -> &'static str {
    // SAFETY: alpa_status_string returns static storage, never NULL.
    unsafe { CStr::from_ptr(sys::alpa_status_string(code)).to_str().unwrap_or("?") }
}

/// Runs one fallible C call with an `alpa_error**` out-parameter and maps its status.
pub(crate) fn check<F>(f: F) -> Result<()>
where
    F: FnOnce(*mut *mut sys::alpa_error) -> i32,
{
    let mut err: *mut sys::alpa_error = ptr::null_mut();
    let status = f(&mut err);
    if status == sys::ALPA_OK {
        if !err.is_null() {
            // Not expected (success leaves *err untouched), but never leak it.
            unsafe { sys::alpa_error_free(err) };
        }
        Ok(())
    } else {
        Err(unsafe { Error::from_raw(status, err) })
    }
}

/// Maps the negative status of a count-then-fill call.
pub(crate) fn count_error(count: i64, what: &str) -> Error {
    let code = i32::try_from(-count).unwrap_or(sys::ALPA_ERR_INTERNAL);
    Error { code, message: format!("{}: {}", what, status_string(code)) }
}
