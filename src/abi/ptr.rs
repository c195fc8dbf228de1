//! Raw-pointer helpers of the C boundary; sentinels are resolved here and
//! nowhere else (MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_IN_PLACE, MPI_BOTTOM).
//!
//! The boundary's contract. Every raw pointer an entry point receives is the
//! C caller's, and MPI's rules for that argument say what it may be: NULL
//! where the standard allows it, a sentinel, or valid for what the argument
//! describes (one status, an array of `count` ints, a string) for the
//! duration the standard gives. The helpers here, and the array readers and
//! launchers beside the entry points in `abi`, take such pointers as safe
//! functions (as the C libraries written in Rust do at their boundary): they
//! check NULL and the sentinels, and each dereference sits in one `unsafe`
//! block that relies on the contract ("# Boundary" in their docs). Entry-point
//! bodies are safe code built on them (`#[mpi_fn]` adds no `unsafe`); what
//! else they do that is unsafe (a call into the core with a user buffer, a C
//! function pointer taken from an argument) is in its own block with its
//! reason. Nothing outside `abi` takes a C caller's pointer this way.

use super::consts::*;
use super::MPI_Status;
use crate::core::error::Result;
use crate::core::state::Status;
use crate::err;
use std::os::raw::c_int;

/// MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are `(MPI_Status *)1`.
pub fn status_ignored(p: *const MPI_Status) -> bool {
    p as usize == 1 || p.is_null()
}

/// Writes `s` to `p` unless `p` is MPI_STATUS_IGNORE. The MPI_ERROR field is
/// written only when `with_error` (multi-request calls).
///
/// # Boundary
/// `p` is MPI_STATUS_IGNORE or valid for writes of one MPI_Status.
pub fn write_status(p: *mut MPI_Status, s: &Status, with_error: bool) {
    if status_ignored(p) {
        return;
    }
    // SAFETY: per the contract, p is a writable status.
    let st = unsafe { &mut *p };
    st.count_lo = s.bytes as u32 as c_int;
    st.count_hi_and_cancelled = (((s.bytes >> 32) as u32) << 1 | s.cancelled as u32) as c_int;
    st.MPI_SOURCE = s.source;
    st.MPI_TAG = s.tag;
    if with_error {
        st.MPI_ERROR = s.error;
    }
}

/// Sets the MPI_ERROR field of `*p` unless `p` is MPI_STATUS_IGNORE.
///
/// # Boundary
/// As for `write_status`.
pub fn set_status_error(p: *mut MPI_Status, error: c_int) {
    if !status_ignored(p) {
        // SAFETY: per the contract, p is a writable status.
        unsafe { (*p).MPI_ERROR = error };
    }
}

/// Element `i` of a status array, or MPI_STATUSES_IGNORE.
///
/// # Boundary
/// `p` is MPI_STATUSES_IGNORE or an array of more than `i` statuses.
pub fn status_at(p: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if status_ignored(p) {
        // MPI_STATUSES_IGNORE is the address 1 in the MPICH ABI.
        #[allow(clippy::manual_dangling_ptr)]
        let ignore = 1 as *mut MPI_Status;
        ignore
    } else {
        // SAFETY: per the contract.
        unsafe { p.add(i) }
    }
}

/// Reads the byte count and cancelled flag back from a C status.
pub fn read_status(st: &MPI_Status) -> (u64, bool) {
    let hi = (st.count_hi_and_cancelled as u32 >> 1) as u64;
    (
        (hi << 32) | st.count_lo as u32 as u64,
        st.count_hi_and_cancelled & 1 != 0,
    )
}

/// Writes an output argument, failing with MPI_ERR_ARG on NULL.
///
/// # Boundary
/// `p` is NULL or valid for writes of one T.
pub fn out<T>(p: *mut T, name: &str, v: T) -> Result<()> {
    if p.is_null() {
        return Err(err!(
            MPI_ERR_ARG,
            "{name}=NULL: an output argument may not be NULL"
        ));
    }
    // SAFETY: non-null and valid per the contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Reads an input argument, failing with MPI_ERR_ARG on NULL.
///
/// # Boundary
/// `p` is NULL or valid for reads of one T.
pub fn inp<T: Copy>(p: *const T, name: &str) -> Result<T> {
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL"));
    }
    // SAFETY: non-null and valid per the contract.
    Ok(unsafe { p.read() })
}

/// Checks that a buffer of `count` elements can be used: a non-zero count needs a
/// non-NULL address.
pub fn check_buf(buf: *const u8, count: c_int, name: &str) -> Result<()> {
    if buf.is_null() && count > 0 {
        return Err(err!(MPI_ERR_BUFFER, "{name}=NULL with count={count}"));
    }
    if buf as isize == -1 {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed here"
        ));
    }
    Ok(())
}

/// Reads a NUL-terminated C string argument (bytes that are not UTF-8 are
/// replaced), failing with MPI_ERR_ARG on NULL.
///
/// # Boundary
/// `p` is NULL or a NUL-terminated string.
pub fn cstr(p: *const std::os::raw::c_char, name: &str) -> Result<String> {
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL"));
    }
    // SAFETY: non-null and NUL-terminated per the contract.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned())
}

/// A status argument to update in place, failing with MPI_ERR_ARG on NULL
/// and on the MPI_STATUS_IGNORE sentinel.
///
/// # Boundary
/// `p` is NULL, a sentinel or a writable status not otherwise referenced
/// while the reference lives.
pub fn status_mut<'a>(p: *mut MPI_Status) -> Result<&'a mut MPI_Status> {
    if status_ignored(p) {
        return Err(err!(MPI_ERR_ARG, "status={p:p} is not a status"));
    }
    // SAFETY: neither NULL nor a sentinel: writable per the contract.
    Ok(unsafe { &mut *p })
}

/// Writes a pointer-sized output through a `void *` argument that names a
/// pointer (`MPI_Alloc_mem`'s `baseptr`), which C does not promise to align.
///
/// # Boundary
/// `p` is NULL or valid for writes of one pointer.
pub fn out_ptr(
    p: *mut std::os::raw::c_void,
    name: &str,
    v: *mut std::os::raw::c_void,
) -> Result<()> {
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL"));
    }
    // SAFETY: non-null, a pointer-sized slot per the contract.
    unsafe { (p as *mut *mut std::os::raw::c_void).write_unaligned(v) };
    Ok(())
}

/// An input array argument of `n` elements as a slice, failing with
/// MPI_ERR_ARG on NULL when `n` > 0.
///
/// # Boundary
/// `p` is NULL or valid for reads of `n` elements, not written while the
/// slice lives.
pub fn in_slice<'a, T>(p: *const T, n: usize, name: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL"));
    }
    // SAFETY: non-null and valid for n elements per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// An output array argument of `n` elements as a slice, failing with
/// MPI_ERR_ARG on NULL when `n` > 0.
///
/// # Boundary
/// `p` is NULL or valid for reads and writes of `n` elements, not used
/// through another reference while the slice lives.
pub fn out_slice<'a, T>(p: *mut T, n: usize, name: &str) -> Result<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL"));
    }
    // SAFETY: non-null and valid for n elements per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Bytes [at, at + n) of a buffer argument as a slice (`MPI_Pack` and
/// `MPI_Unpack`'s packed buffer, whose bounds the caller checked).
///
/// # Boundary
/// `p` is valid for `at + n` bytes; nothing else uses them while the slice lives.
pub fn bytes_at<'a>(p: *mut std::os::raw::c_void, at: usize, n: usize) -> &'a mut [u8] {
    if n == 0 {
        return &mut [];
    }
    // SAFETY: per the contract, [at, at + n) lies in the caller's buffer.
    unsafe { std::slice::from_raw_parts_mut((p as *mut u8).add(at), n) }
}

/// Copies a Rust string into a C buffer of `max` bytes, NUL-terminated; returns the length.
///
/// # Boundary
/// `dst` is valid for writes of `max` bytes.
pub fn write_cstr(dst: *mut std::os::raw::c_char, max: usize, s: &str) -> Result<c_int> {
    if dst.is_null() {
        return Err(err!(MPI_ERR_ARG, "string buffer=NULL"));
    }
    let b = s.as_bytes();
    let n = b.len().min(max.saturating_sub(1));
    // SAFETY: n + 1 <= max bytes of dst are writable.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), dst as *mut u8, n);
        *dst.add(n) = 0;
    }
    Ok(n as c_int)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn status_round_trips_large_counts_and_cancel() {
        for &(bytes, c) in &[
            (0u64, false),
            (5, true),
            (0xffff_ffff, false),
            (0x7_0000_0003, true),
        ] {
            let mut st = MPI_Status::default();
            let s = Status {
                source: 3,
                tag: 9,
                error: 0,
                bytes,
                cancelled: c,
            };
            write_status(&mut st, &s, false);
            assert_eq!(read_status(&st), (bytes, c));
            assert_eq!((st.MPI_SOURCE, st.MPI_TAG), (3, 9));
        }
    }
}
