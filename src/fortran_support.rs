//! Support of the Fortran entry points (src/fortran.rs): the sentinel common
//! blocks of mpif.h and the conversions of sentinels and strings.
//!
//! Every program that includes mpif.h (or uses the `mpi` module) defines the
//! common blocks /MPIPRIV1/, /MPIPRIV2/, /MPIPRIVC/, /MPIFCMB5/, /MPIFCMB9/;
//! the library defines them too, with MPICH's sizes, and the dynamic linker
//! binds every reference to the program's copy. Their addresses, taken through
//! the GOT, are the Fortran MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE,
//! MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY.
#![allow(non_upper_case_globals)]

use std::os::raw::{c_char, c_int, c_void};
use std::ptr::addr_of_mut;

/// MPI_BOTTOM (+0), MPI_IN_PLACE (+4), MPI_STATUS_IGNORE (+8, 5 ints).
#[no_mangle]
pub static mut mpipriv1_: [c_int; 7] = [0; 7];
/// MPI_STATUSES_IGNORE (+0, 5 ints), MPI_ERRCODES_IGNORE (+20).
#[no_mangle]
pub static mut mpipriv2_: [c_int; 6] = [0; 6];
/// MPI_ARGVS_NULL (+0), MPI_ARGV_NULL (+1).
#[no_mangle]
pub static mut mpiprivc_: [u8; 2] = [0; 2];
/// MPI_UNWEIGHTED.
#[no_mangle]
pub static mut mpifcmb5_: c_int = 0;
/// MPI_WEIGHTS_EMPTY.
#[no_mangle]
pub static mut mpifcmb9_: c_int = 0;

fn at(base: *mut c_int, words: usize) -> *mut c_void {
    base.wrapping_add(words) as *mut c_void
}

/// MPI_BOTTOM and MPI_IN_PLACE from Fortran become the C sentinels.
pub fn buf(p: *mut c_void) -> *mut c_void {
    let b = addr_of_mut!(mpipriv1_) as *mut c_int;
    if p == at(b, 0) {
        std::ptr::null_mut()
    } else if p == at(b, 1) {
        usize::MAX as *mut c_void
    } else {
        p
    }
}

/// MPI_STATUS_IGNORE (and MPI_STATUSES_IGNORE passed for one status).
pub fn status(p: *mut c_void) -> *mut c_void {
    let b = addr_of_mut!(mpipriv1_) as *mut c_int;
    if p == at(b, 2) || p == addr_of_mut!(mpipriv2_) as *mut c_void {
        // MPI_STATUS_IGNORE is the address 1 in the C ABI.
        #[allow(clippy::manual_dangling_ptr)]
        let ignore = 1usize as *mut c_void;
        ignore
    } else {
        p
    }
}

pub fn statuses(p: *mut c_void) -> *mut c_void {
    status(p)
}

/// MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY from Fortran become the C ones.
pub fn weights(p: *mut c_void) -> *mut c_void {
    if p == addr_of_mut!(mpifcmb5_) as *mut c_void {
        crate::abi::topo::MPI_UNWEIGHTED.0 as *mut c_void
    } else if p == addr_of_mut!(mpifcmb9_) as *mut c_void {
        crate::abi::topo::MPI_WEIGHTS_EMPTY.0 as *mut c_void
    } else {
        p
    }
}

/// A Fortran CHARACTER argument as a C string (trailing blanks removed).
///
/// # Safety
/// `p` points to `len` readable bytes.
pub unsafe fn fstring(p: *const c_char, len: usize) -> std::ffi::CString {
    let bytes = if p.is_null() {
        &[][..]
    } else {
        // SAFETY: per the contract.
        unsafe { std::slice::from_raw_parts(p as *const u8, len) }
    };
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != 0)
        .map(|i| i + 1)
        .unwrap_or(0);
    let trimmed: Vec<u8> = bytes[..end]
        .iter()
        .copied()
        .take_while(|&b| b != 0)
        .collect();
    std::ffi::CString::new(trimmed).unwrap_or_default()
}

/// Copies a C result string into a Fortran CHARACTER of length `len`, blank padded.
///
/// # Safety
/// `dst` points to `len` writable bytes.
pub unsafe fn fstring_out(src: &[c_char], dst: *mut c_char, len: usize) {
    if dst.is_null() {
        return;
    }
    let n = src
        .iter()
        .position(|&c| c == 0)
        .unwrap_or(src.len())
        .min(len);
    // SAFETY: per the contract, len bytes are writable.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, n);
        std::ptr::write_bytes(dst.add(n), b' ', len - n);
    }
}

// Fortran-only entry points.

unsafe fn init(ierr: *mut c_int) {
    // SAFETY: MPI_Init accepts NULL argc/argv.
    let rc = unsafe { crate::abi::init::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    if !ierr.is_null() {
        // SAFETY: Fortran passes a valid ierror.
        unsafe { *ierr = rc };
    }
}

unsafe fn init_thread(required: *const c_int, provided: *mut c_int, ierr: *mut c_int) {
    // SAFETY: Fortran passes valid references.
    let rc = unsafe {
        crate::abi::init::MPI_Init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            *required,
            provided,
        )
    };
    if !ierr.is_null() {
        // SAFETY: as above.
        unsafe { *ierr = rc };
    }
}

macro_rules! alias1 {
    ($imp:ident ($($a:ident: $t:ty),*); $sym:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $sym($($a: $t),*) {
            // SAFETY: same contract as the Fortran caller's.
            unsafe { $imp($($a),*) }
        }
    };
}

macro_rules! alias {
    ($imp:ident $args:tt; $($sym:ident),*) => {
        $( alias1!($imp $args; $sym); )*
    };
}

alias!(init(ierr: *mut c_int); mpi_init_, mpi_init__, mpi_init, MPI_INIT, pmpi_init_, pmpi_init__, pmpi_init, PMPI_INIT);
alias!(init_thread(required: *const c_int, provided: *mut c_int, ierr: *mut c_int);
    mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD,
    pmpi_init_thread_, pmpi_init_thread__, pmpi_init_thread, PMPI_INIT_THREAD);
