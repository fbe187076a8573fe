//! Conversions shared by the wrappers.
use crate::error::{check, count_error, Error, ErrorKind, Result};
use alpa_sys as sys;
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;

/// A NUL-terminated copy of `s`; an interior NUL is an InvalidArgument error.
pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(ErrorKind::InvalidArgument, format!("{}: contains a NUL byte: {:?}", what, s))
    })
}

/// Copies a `const char*` the library returned (never NULL by its conventions).
pub(crate) unsafe fn string_from(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A static `const char*` the library returned (static storage by the header).
pub(crate) unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        ""
    } else {
        CStr::from_ptr(p).to_str().unwrap_or("")
    }
}

/// Runs a call producing an `alpa_buffer` and copies it out (freeing the buffer).
pub(crate) fn buffer_bytes<F>(f: F) -> Result<Vec<u8>>
where
    F: FnOnce(*mut *mut sys::alpa_buffer, *mut *mut sys::alpa_error) -> i32,
{
    let mut buf: *mut sys::alpa_buffer = ptr::null_mut();
    let result = check(|err| f(&mut buf, err));
    // SAFETY: buf is NULL or a buffer the call made; we copy it and free it exactly once.
    let bytes = unsafe {
        let bytes = if buf.is_null() {
            Vec::new()
        } else {
            let size = sys::alpa_buffer_size(buf);
            let data = sys::alpa_buffer_data(buf) as *const u8;
            if size == 0 || data.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(data, size).to_vec()
            }
        };
        sys::alpa_buffer_free(buf);
        bytes
    };
    result.map(|_| bytes)
}

/// As [`buffer_bytes`], as UTF-8 text (the library writes UTF-8 JSON / SVG).
pub(crate) fn buffer_string<F>(f: F) -> Result<String>
where
    F: FnOnce(*mut *mut sys::alpa_buffer, *mut *mut sys::alpa_error) -> i32,
{
    let bytes = buffer_bytes(f)?;
    String::from_utf8(bytes)
        .map_err(|e| Error::new(ErrorKind::Internal, format!("the library wrote invalid UTF-8: {}", e)))
}

/// Count-then-fill: asks for the count, then fills a vector of that many entries. `f(out,
/// capacity)` returns the full count or a negative status.
pub(crate) fn fill<T, F>(what: &str, mut f: F) -> Result<Vec<T>>
where
    T: Clone + Default,
    F: FnMut(*mut T, i64) -> i64,
{
    let mut capacity = 0i64;
    let mut out: Vec<T> = Vec::new();
    loop {
        let ptr = if capacity == 0 { ptr::null_mut() } else { out.as_mut_ptr() };
        let count = f(ptr, capacity);
        if count < 0 {
            return Err(count_error(count, what));
        }
        if count <= capacity {
            out.truncate(count as usize);
            return Ok(out);
        }
        capacity = count;
        out = vec![T::default(); count as usize];
    }
}

/// Converts a length to the C ABI's int64 count.
pub(crate) fn len_i64(n: usize) -> i64 {
    n as i64
}
