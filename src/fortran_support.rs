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

/// MPI_PCONTROL(LEVEL): no IERROR in any Fortran binding (C's form is
/// variadic, so the generated layer has no entry point for it).
unsafe fn pcontrol(level: *const c_int) {
    let l = if level.is_null() {
        0
    } else {
        // SAFETY: Fortran passes LEVEL by reference (non-NULL here).
        unsafe { *level }
    };
    // SAFETY: MPI_Pcontrol takes any level.
    unsafe { crate::abi::misc::MPI_Pcontrol(l) };
}

alias!(pcontrol(level: *const c_int);
    mpi_pcontrol_, mpi_pcontrol__, mpi_pcontrol, MPI_PCONTROL,
    pmpi_pcontrol_, pmpi_pcontrol__, pmpi_pcontrol, PMPI_PCONTROL);

// Attributes from Fortran: values are INTEGER(KIND=MPI_ADDRESS_KIND), callbacks
// take every argument by reference and report through a trailing ierror.

/// A Fortran copy callback: (oldcomm, keyval, extra_state, value_in, value_out, flag, ierror).
pub type FCopy = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *const isize,
    *const isize,
    *mut isize,
    *mut c_int,
    *mut c_int,
);
/// A Fortran delete callback: (comm, keyval, value, extra_state, ierror).
pub type FDelete =
    unsafe extern "C" fn(*const c_int, *const c_int, *const isize, *const isize, *mut c_int);

/// The Fortran view of a callback stored by a Fortran keyval.
pub fn as_fortran_copy(f: crate::core::comm::CopyFn) -> FCopy {
    // SAFETY: keyvals created from Fortran store Fortran callbacks in this slot;
    // only the calling convention's view of the pointer changes.
    unsafe { std::mem::transmute::<crate::core::comm::CopyFn, FCopy>(f) }
}

pub fn as_fortran_delete(f: crate::core::comm::DeleteFn) -> FDelete {
    // SAFETY: as for as_fortran_copy.
    unsafe { std::mem::transmute::<crate::core::comm::DeleteFn, FDelete>(f) }
}

unsafe fn create_keyval(
    copy: *mut c_void,
    delete: *mut c_void,
    keyval: *mut c_int,
    extra: *const isize,
    ierr: *mut c_int,
    object: u32,
) {
    use crate::core::comm::{keyval_handle, CopyFn, DeleteFn, Keyval};
    // SAFETY: Fortran passes procedures of the documented Fortran callback types;
    // they are stored as pointers and called through as_fortran_*.
    let copy_fn =
        (!copy.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, CopyFn>(copy) });
    // SAFETY: as above.
    let delete_fn = (!delete.is_null())
        .then(|| unsafe { std::mem::transmute::<*mut c_void, DeleteFn>(delete) });
    let extra_state = if extra.is_null() {
        0
    } else {
        // SAFETY: Fortran passes a valid reference.
        unsafe { *extra as usize }
    };
    let r = crate::core::runtime::with(|st| {
        let i = st.keyvals.insert(Keyval {
            copy_fn,
            delete_fn,
            extra_state,
            object,
            freed: false,
            refs: 0,
            fortran: true,
        });
        Ok(keyval_handle(object, i))
    });
    // SAFETY: valid references from Fortran.
    unsafe {
        match r {
            Ok(h) => {
                *keyval = h;
                *ierr = 0;
            }
            Err(e) => *ierr = crate::abi::guard::raise("MPI_COMM_CREATE_KEYVAL", None, e),
        }
    }
}

unsafe fn comm_create_keyval(
    copy: *mut c_void,
    delete: *mut c_void,
    keyval: *mut c_int,
    extra: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: forwarded.
    unsafe { create_keyval(copy, delete, keyval, extra, ierr, 1) }
}

unsafe fn type_create_keyval(
    copy: *mut c_void,
    delete: *mut c_void,
    keyval: *mut c_int,
    extra: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: forwarded.
    unsafe { create_keyval(copy, delete, keyval, extra, ierr, 3) }
}

unsafe fn win_create_keyval(
    copy: *mut c_void,
    delete: *mut c_void,
    keyval: *mut c_int,
    extra: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe {
        create_keyval(
            copy,
            delete,
            keyval,
            extra,
            ierr,
            crate::base::handles::KIND_WIN,
        )
    }
}

unsafe fn win_set_attr(
    win: *const c_int,
    keyval: *const c_int,
    val: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe { *ierr = crate::abi::win::MPI_Win_set_attr(*win, *keyval, *val as *mut c_void) };
}

/// A window's predefined attribute keys: Fortran's are the C ones plus one.
fn predefined_win_key(k: c_int) -> Option<c_int> {
    use crate::abi::consts::*;
    [
        MPI_WIN_BASE,
        MPI_WIN_SIZE,
        MPI_WIN_DISP_UNIT,
        MPI_WIN_CREATE_FLAVOR,
        MPI_WIN_MODEL,
    ]
    .into_iter()
    .find(|&c| c + 1 == k || c == k)
}

unsafe fn win_get_attr(
    win: *const c_int,
    keyval: *const c_int,
    val: *mut isize,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    use crate::abi::consts::*;
    // SAFETY: valid references from Fortran.
    unsafe {
        let pre = predefined_win_key(*keyval);
        let mut p: *mut c_void = std::ptr::null_mut();
        *ierr = crate::abi::win::MPI_Win_get_attr(
            *win,
            pre.unwrap_or(*keyval),
            &mut p as *mut _ as *mut c_void,
            flag,
        );
        if *ierr == 0 && *flag != 0 {
            // C gives the base itself, the size as a pointer to an MPI_Aint
            // and the rest as pointers to ints; Fortran gets the values.
            *val = match pre {
                Some(MPI_WIN_BASE) | None => p as isize,
                Some(MPI_WIN_SIZE) => *(p as *const isize),
                Some(_) => *(p as *const c_int) as isize,
            };
        }
    }
}

unsafe fn comm_set_attr(
    comm: *const c_int,
    keyval: *const c_int,
    val: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe { *ierr = crate::abi::attr::MPI_Comm_set_attr(*comm, *keyval, *val as *mut c_void) };
}

unsafe fn type_set_attr(
    dt: *const c_int,
    keyval: *const c_int,
    val: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe { *ierr = crate::abi::attr::MPI_Type_set_attr(*dt, *keyval, *val as *mut c_void) };
}

/// Fortran's predefined attribute keys are the C ones plus one (MPICH's numbering).
fn predefined_c_key(k: c_int) -> Option<c_int> {
    use crate::abi::consts::*;
    [
        MPI_TAG_UB,
        MPI_HOST,
        MPI_IO,
        MPI_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE,
        MPI_APPNUM,
        MPI_LASTUSEDCODE,
    ]
    .into_iter()
    .find(|&c| c + 1 == k || c == k)
}

unsafe fn comm_get_attr(
    comm: *const c_int,
    keyval: *const c_int,
    val: *mut isize,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe {
        let pre = predefined_c_key(*keyval);
        let mut p: *mut c_void = std::ptr::null_mut();
        *ierr = crate::abi::attr::MPI_Comm_get_attr(
            *comm,
            pre.unwrap_or(*keyval),
            &mut p as *mut _ as *mut c_void,
            flag,
        );
        if *ierr == 0 && *flag != 0 {
            // A predefined attribute's C value points to the integer; Fortran gets the integer.
            *val = if pre.is_some() {
                *(p as *const c_int) as isize
            } else {
                p as isize
            };
        }
    }
}

unsafe fn type_get_attr(
    dt: *const c_int,
    keyval: *const c_int,
    val: *mut isize,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe {
        let mut p: *mut c_void = std::ptr::null_mut();
        *ierr = crate::abi::attr::MPI_Type_get_attr(
            *dt,
            *keyval,
            &mut p as *mut _ as *mut c_void,
            flag,
        );
        if *ierr == 0 && *flag != 0 {
            *val = p as isize;
        }
    }
}

unsafe fn null_copy_fn(
    _o: *const c_int,
    _k: *const c_int,
    _e: *const isize,
    _i: *const isize,
    _v: *mut isize,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from the library's caller.
    unsafe {
        *flag = 0;
        *ierr = 0;
    }
}

unsafe fn dup_fn(
    _o: *const c_int,
    _k: *const c_int,
    _e: *const isize,
    vin: *const isize,
    vout: *mut isize,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from the library's caller.
    unsafe {
        *vout = *vin;
        *flag = 1;
        *ierr = 0;
    }
}

unsafe fn null_delete_fn(
    _c: *const c_int,
    _k: *const c_int,
    _v: *const isize,
    _e: *const isize,
    ierr: *mut c_int,
) {
    // SAFETY: valid reference from the library's caller.
    unsafe { *ierr = 0 };
}

alias!(comm_create_keyval(copy: *mut c_void, delete: *mut c_void, keyval: *mut c_int, extra: *const isize, ierr: *mut c_int);
    mpi_comm_create_keyval_, mpi_comm_create_keyval__, mpi_comm_create_keyval, MPI_COMM_CREATE_KEYVAL,
    pmpi_comm_create_keyval_, pmpi_comm_create_keyval__, pmpi_comm_create_keyval, PMPI_COMM_CREATE_KEYVAL);
alias!(type_create_keyval(copy: *mut c_void, delete: *mut c_void, keyval: *mut c_int, extra: *const isize, ierr: *mut c_int);
    mpi_type_create_keyval_, mpi_type_create_keyval__, mpi_type_create_keyval, MPI_TYPE_CREATE_KEYVAL,
    pmpi_type_create_keyval_, pmpi_type_create_keyval__, pmpi_type_create_keyval, PMPI_TYPE_CREATE_KEYVAL);
alias!(comm_set_attr(comm: *const c_int, keyval: *const c_int, val: *const isize, ierr: *mut c_int);
    mpi_comm_set_attr_, mpi_comm_set_attr__, mpi_comm_set_attr, MPI_COMM_SET_ATTR,
    pmpi_comm_set_attr_, pmpi_comm_set_attr__, pmpi_comm_set_attr, PMPI_COMM_SET_ATTR);
alias!(comm_get_attr(comm: *const c_int, keyval: *const c_int, val: *mut isize, flag: *mut c_int, ierr: *mut c_int);
    mpi_comm_get_attr_, mpi_comm_get_attr__, mpi_comm_get_attr, MPI_COMM_GET_ATTR,
    pmpi_comm_get_attr_, pmpi_comm_get_attr__, pmpi_comm_get_attr, PMPI_COMM_GET_ATTR);
alias!(type_set_attr(dt: *const c_int, keyval: *const c_int, val: *const isize, ierr: *mut c_int);
    mpi_type_set_attr_, mpi_type_set_attr__, mpi_type_set_attr, MPI_TYPE_SET_ATTR,
    pmpi_type_set_attr_, pmpi_type_set_attr__, pmpi_type_set_attr, PMPI_TYPE_SET_ATTR);
alias!(type_get_attr(dt: *const c_int, keyval: *const c_int, val: *mut isize, flag: *mut c_int, ierr: *mut c_int);
    mpi_type_get_attr_, mpi_type_get_attr__, mpi_type_get_attr, MPI_TYPE_GET_ATTR,
    pmpi_type_get_attr_, pmpi_type_get_attr__, pmpi_type_get_attr, PMPI_TYPE_GET_ATTR);
alias!(win_create_keyval(copy: *mut c_void, delete: *mut c_void, keyval: *mut c_int, extra: *const isize, ierr: *mut c_int);
    mpi_win_create_keyval_, mpi_win_create_keyval__, mpi_win_create_keyval, MPI_WIN_CREATE_KEYVAL,
    pmpi_win_create_keyval_, pmpi_win_create_keyval__, pmpi_win_create_keyval, PMPI_WIN_CREATE_KEYVAL);
alias!(win_set_attr(win: *const c_int, keyval: *const c_int, val: *const isize, ierr: *mut c_int);
    mpi_win_set_attr_, mpi_win_set_attr__, mpi_win_set_attr, MPI_WIN_SET_ATTR,
    pmpi_win_set_attr_, pmpi_win_set_attr__, pmpi_win_set_attr, PMPI_WIN_SET_ATTR);
alias!(win_get_attr(win: *const c_int, keyval: *const c_int, val: *mut isize, flag: *mut c_int, ierr: *mut c_int);
    mpi_win_get_attr_, mpi_win_get_attr__, mpi_win_get_attr, MPI_WIN_GET_ATTR,
    pmpi_win_get_attr_, pmpi_win_get_attr__, pmpi_win_get_attr, PMPI_WIN_GET_ATTR);
alias!(null_copy_fn(o: *const c_int, k: *const c_int, e: *const isize, i: *const isize, v: *mut isize, flag: *mut c_int, ierr: *mut c_int);
    mpi_null_copy_fn_, mpi_null_copy_fn__, mpi_null_copy_fn, MPI_NULL_COPY_FN,
    mpi_comm_null_copy_fn_, mpi_comm_null_copy_fn__, mpi_comm_null_copy_fn, MPI_COMM_NULL_COPY_FN,
    mpi_type_null_copy_fn_, mpi_type_null_copy_fn__, mpi_type_null_copy_fn, MPI_TYPE_NULL_COPY_FN,
    mpi_win_null_copy_fn_, mpi_win_null_copy_fn__, mpi_win_null_copy_fn, MPI_WIN_NULL_COPY_FN);
alias!(dup_fn(o: *const c_int, k: *const c_int, e: *const isize, vin: *const isize, vout: *mut isize, flag: *mut c_int, ierr: *mut c_int);
    mpi_dup_fn_, mpi_dup_fn__, mpi_dup_fn, MPI_DUP_FN,
    mpi_comm_dup_fn_, mpi_comm_dup_fn__, mpi_comm_dup_fn, MPI_COMM_DUP_FN,
    mpi_type_dup_fn_, mpi_type_dup_fn__, mpi_type_dup_fn, MPI_TYPE_DUP_FN,
    mpi_win_dup_fn_, mpi_win_dup_fn__, mpi_win_dup_fn, MPI_WIN_DUP_FN);
alias!(null_delete_fn(c: *const c_int, k: *const c_int, v: *const isize, e: *const isize, ierr: *mut c_int);
    mpi_null_delete_fn_, mpi_null_delete_fn__, mpi_null_delete_fn, MPI_NULL_DELETE_FN,
    mpi_comm_null_delete_fn_, mpi_comm_null_delete_fn__, mpi_comm_null_delete_fn, MPI_COMM_NULL_DELETE_FN,
    mpi_type_null_delete_fn_, mpi_type_null_delete_fn__, mpi_type_null_delete_fn, MPI_TYPE_NULL_DELETE_FN,
    mpi_win_null_delete_fn_, mpi_win_null_delete_fn__, mpi_win_null_delete_fn, MPI_WIN_NULL_DELETE_FN);

// MPI-1's Fortran forms with default INTEGER values where their successors
// take INTEGER(KIND=MPI_ADDRESS_KIND): attribute values and extra state
// (MPI_KEYVAL_CREATE, MPI_ATTR_PUT/GET), addresses, displacements, strides
// and bounds (MPI_ADDRESS, MPI_TYPE_HVECTOR/HINDEXED/STRUCT,
// MPI_TYPE_EXTENT/LB/UB). Callbacks of such keyvals are called with values
// in 8-byte slots, of which an INTEGER callback reads and writes the low
// half (little-endian), so MPI_ATTR_GET takes the low half back.

unsafe fn keyval_create(
    copy: *mut c_void,
    delete: *mut c_void,
    keyval: *mut c_int,
    extra: *const c_int,
    ierr: *mut c_int,
) {
    let e: isize = if extra.is_null() {
        0
    } else {
        // SAFETY: a valid reference from Fortran.
        unsafe { *extra as isize }
    };
    // SAFETY: forwarded.
    unsafe { create_keyval(copy, delete, keyval, &e, ierr, 1) }
}

unsafe fn attr_put(comm: *const c_int, keyval: *const c_int, val: *const c_int, ierr: *mut c_int) {
    // SAFETY: valid references from Fortran.
    unsafe { *ierr = crate::abi::mpi1::MPI_Attr_put(*comm, *keyval, *val as isize as *mut c_void) };
}

unsafe fn attr_get(
    comm: *const c_int,
    keyval: *const c_int,
    val: *mut c_int,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    let mut v: isize = 0;
    // SAFETY: valid references from Fortran; `v` is the address-sized slot.
    unsafe {
        comm_get_attr(comm, keyval, &mut v, flag, ierr);
        if *ierr == 0 && *flag != 0 {
            *val = v as c_int;
        }
    }
}

/// An address-sized value for a default INTEGER, or MPI_ERR_ARG through
/// the error handler of `func` where it does not fit.
fn fit_int(v: isize, func: &str, what: &str) -> Result<c_int, c_int> {
    c_int::try_from(v).map_err(|_| {
        crate::abi::guard::raise(
            func,
            None,
            crate::err!(
                crate::abi::consts::MPI_ERR_ARG,
                "{what}={v} does not fit in a default INTEGER (use the INTEGER(KIND=MPI_ADDRESS_KIND) form of the MPI-2 routine)"
            ),
        )
    })
}

unsafe fn address(loc: *mut c_void, addr: *mut c_int, ierr: *mut c_int) {
    let mut a: i64 = 0;
    // SAFETY: valid references from Fortran (MPI_BOTTOM translated by `buf`).
    unsafe {
        *ierr = crate::abi::datatype::MPI_Get_address(buf(loc), &mut a);
        if *ierr == 0 {
            match fit_int(a as isize, "MPI_ADDRESS", "address") {
                Ok(v) => *addr = v,
                Err(e) => *ierr = e,
            }
        }
    }
}

/// MPI_TYPE_EXTENT (0), MPI_TYPE_LB (1), MPI_TYPE_UB (2).
unsafe fn type_bound(dt: *const c_int, out: *mut c_int, ierr: *mut c_int, which: u8) {
    let (mut lb, mut ext): (i64, i64) = (0, 0);
    let name = ["MPI_TYPE_EXTENT", "MPI_TYPE_LB", "MPI_TYPE_UB"][which as usize];
    // SAFETY: valid references from Fortran.
    unsafe {
        *ierr = crate::abi::datatype::MPI_Type_get_extent(*dt, &mut lb, &mut ext);
        if *ierr == 0 {
            let v = [ext, lb, lb + ext][which as usize];
            match fit_int(v as isize, name, "the bound") {
                Ok(v) => *out = v,
                Err(e) => *ierr = e,
            }
        }
    }
}

unsafe fn type_extent(dt: *const c_int, out: *mut c_int, ierr: *mut c_int) {
    // SAFETY: forwarded.
    unsafe { type_bound(dt, out, ierr, 0) }
}
unsafe fn type_lb(dt: *const c_int, out: *mut c_int, ierr: *mut c_int) {
    // SAFETY: forwarded.
    unsafe { type_bound(dt, out, ierr, 1) }
}
unsafe fn type_ub(dt: *const c_int, out: *mut c_int, ierr: *mut c_int) {
    // SAFETY: forwarded.
    unsafe { type_bound(dt, out, ierr, 2) }
}

/// `n` default INTEGERs at `p` as addresses; None where `p` is NULL with
/// elements to read (the C routine then reports it). An empty array's
/// pointer is dangling but not NULL, as a count of 0 allows.
unsafe fn widen(p: *const c_int, n: c_int) -> Option<Vec<i64>> {
    if n <= 0 {
        return Some(Vec::new());
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: Fortran passes an array of at least `n` INTEGERs.
    let v = unsafe { std::slice::from_raw_parts(p, n as usize) };
    Some(v.iter().map(|&v| v as i64).collect())
}

unsafe fn type_hvector(
    count: *const c_int,
    bl: *const c_int,
    stride: *const c_int,
    old: *const c_int,
    new: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe { *ierr = crate::abi::mpi1::MPI_Type_hvector(*count, *bl, *stride as i64, *old, new) };
}

unsafe fn type_hindexed(
    count: *const c_int,
    bls: *mut c_int,
    displs: *const c_int,
    old: *const c_int,
    new: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran; the displacements widened.
    unsafe {
        let mut d = widen(displs, *count);
        let dp = d.as_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
        *ierr = crate::abi::mpi1::MPI_Type_hindexed(*count, bls, dp, *old, new);
    }
}

unsafe fn type_struct(
    count: *const c_int,
    bls: *mut c_int,
    displs: *const c_int,
    types: *mut c_int,
    new: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran; the displacements widened.
    unsafe {
        let mut d = widen(displs, *count);
        let dp = d.as_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
        *ierr = crate::abi::datatype::MPI_Type_struct(*count, bls, dp, types, new);
    }
}

alias!(keyval_create(copy: *mut c_void, delete: *mut c_void, keyval: *mut c_int, extra: *const c_int, ierr: *mut c_int);
    mpi_keyval_create_, mpi_keyval_create__, mpi_keyval_create, MPI_KEYVAL_CREATE,
    pmpi_keyval_create_, pmpi_keyval_create__, pmpi_keyval_create, PMPI_KEYVAL_CREATE);
alias!(attr_put(comm: *const c_int, keyval: *const c_int, val: *const c_int, ierr: *mut c_int);
    mpi_attr_put_, mpi_attr_put__, mpi_attr_put, MPI_ATTR_PUT,
    pmpi_attr_put_, pmpi_attr_put__, pmpi_attr_put, PMPI_ATTR_PUT);
alias!(attr_get(comm: *const c_int, keyval: *const c_int, val: *mut c_int, flag: *mut c_int, ierr: *mut c_int);
    mpi_attr_get_, mpi_attr_get__, mpi_attr_get, MPI_ATTR_GET,
    pmpi_attr_get_, pmpi_attr_get__, pmpi_attr_get, PMPI_ATTR_GET);
alias!(address(loc: *mut c_void, addr: *mut c_int, ierr: *mut c_int);
    mpi_address_, mpi_address__, mpi_address, MPI_ADDRESS,
    pmpi_address_, pmpi_address__, pmpi_address, PMPI_ADDRESS);
alias!(type_extent(dt: *const c_int, out: *mut c_int, ierr: *mut c_int);
    mpi_type_extent_, mpi_type_extent__, mpi_type_extent, MPI_TYPE_EXTENT,
    pmpi_type_extent_, pmpi_type_extent__, pmpi_type_extent, PMPI_TYPE_EXTENT);
alias!(type_lb(dt: *const c_int, out: *mut c_int, ierr: *mut c_int);
    mpi_type_lb_, mpi_type_lb__, mpi_type_lb, MPI_TYPE_LB,
    pmpi_type_lb_, pmpi_type_lb__, pmpi_type_lb, PMPI_TYPE_LB);
alias!(type_ub(dt: *const c_int, out: *mut c_int, ierr: *mut c_int);
    mpi_type_ub_, mpi_type_ub__, mpi_type_ub, MPI_TYPE_UB,
    pmpi_type_ub_, pmpi_type_ub__, pmpi_type_ub, PMPI_TYPE_UB);
alias!(type_hvector(count: *const c_int, bl: *const c_int, stride: *const c_int, old: *const c_int, new: *mut c_int, ierr: *mut c_int);
    mpi_type_hvector_, mpi_type_hvector__, mpi_type_hvector, MPI_TYPE_HVECTOR,
    pmpi_type_hvector_, pmpi_type_hvector__, pmpi_type_hvector, PMPI_TYPE_HVECTOR);
alias!(type_hindexed(count: *const c_int, bls: *mut c_int, displs: *const c_int, old: *const c_int, new: *mut c_int, ierr: *mut c_int);
    mpi_type_hindexed_, mpi_type_hindexed__, mpi_type_hindexed, MPI_TYPE_HINDEXED,
    pmpi_type_hindexed_, pmpi_type_hindexed__, pmpi_type_hindexed, PMPI_TYPE_HINDEXED);
alias!(type_struct(count: *const c_int, bls: *mut c_int, displs: *const c_int, types: *mut c_int, new: *mut c_int, ierr: *mut c_int);
    mpi_type_struct_, mpi_type_struct__, mpi_type_struct, MPI_TYPE_STRUCT,
    pmpi_type_struct_, pmpi_type_struct__, pmpi_type_struct, PMPI_TYPE_STRUCT);

/// MPI_GREQUEST_START: the callbacks are Fortran procedures (arguments by
/// reference, ierror last); extra_state is INTEGER(KIND=MPI_ADDRESS_KIND).
unsafe fn grequest_start(
    query: *mut c_void,
    free: *mut c_void,
    cancel: *mut c_void,
    extra: *const isize,
    request: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: valid references from Fortran.
    unsafe {
        let e = if extra.is_null() { 0 } else { *extra as usize };
        *ierr = match crate::abi::greq::start(
            query as usize,
            free as usize,
            cancel as usize,
            e,
            true,
            request,
        ) {
            Ok(()) => 0,
            Err(e) => crate::abi::guard::raise("MPI_GREQUEST_START", None, e),
        };
    }
}

alias!(grequest_start(query: *mut c_void, free: *mut c_void, cancel: *mut c_void, extra: *const isize, request: *mut c_int, ierr: *mut c_int);
    mpi_grequest_start_, mpi_grequest_start__, mpi_grequest_start, MPI_GREQUEST_START,
    pmpi_grequest_start_, pmpi_grequest_start__, pmpi_grequest_start, PMPI_GREQUEST_START);

/// The head of a Fortran 2018 C descriptor (`CFI_cdesc_t` of gfortran's
/// ISO_Fortran_binding.h); `CfiDim`s follow it, one per dimension.
#[repr(C)]
pub struct CfiHead {
    base_addr: *mut c_void,
    elem_len: usize,
    version: c_int,
    rank: i8,
    attribute: i8,
    ty: i16,
}

/// One dimension of a C descriptor: lower bound, extent, byte stride.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CfiDim {
    lower_bound: isize,
    extent: isize,
    sm: isize,
}

/// `mpi_f08`'s non-contiguous choice buffers (MPI_SUBARRAYS_SUPPORTED):
/// the array section `desc` describes, as a new committed datatype made of
/// `datatype` elements at the section's addresses in array element order
/// (nested `MPI_Type_create_hvector`s of its extents and byte strides), and
/// the address of its first element. The call then passes `base`, one
/// element of `newtype`. Takes a predefined `datatype` of the section's
/// element size and `count` equal to the section's number of elements;
/// anything else is MPI_ERR_BUFFER (the answer), nothing made.
///
/// # Safety
/// `desc` is a C descriptor gfortran made for an assumed-rank dummy;
/// `newtype` and `base` are writable.
#[no_mangle]
pub unsafe extern "C" fn oxmpi_f08_section(
    desc: *const CfiHead,
    count: i64,
    datatype: c_int,
    newtype: *mut c_int,
    base: *mut *mut c_void,
) -> c_int {
    use crate::abi::consts::{MPI_ERR_BUFFER, MPI_SUCCESS};
    // SAFETY: the caller's contract: a descriptor with `rank` dimensions
    // after its head.
    let (head, dims) = unsafe {
        let h = &*desc;
        let d = (desc as *const u8).add(std::mem::size_of::<CfiHead>()) as *const CfiDim;
        (h, std::slice::from_raw_parts(d, h.rank.max(0) as usize))
    };
    let n: i64 = dims.iter().map(|d| d.extent.max(0) as i64).product();
    let size = crate::base::handles::builtin_size(datatype);
    if size != Some(head.elem_len) || count != n || head.rank <= 0 {
        return MPI_ERR_BUFFER;
    }
    let mut t = datatype;
    let mut made: Vec<c_int> = Vec::new();
    if dims.iter().any(|d| d.extent > c_int::MAX as isize) {
        return MPI_ERR_BUFFER;
    }
    for d in dims {
        let mut next: c_int = 0;
        // SAFETY: `t` is a valid datatype; `next` is writable.
        let rc = unsafe {
            crate::abi::datatype::PMPI_Type_create_hvector(
                d.extent as c_int,
                1,
                d.sm as _,
                t,
                &mut next,
            )
        };
        if rc != MPI_SUCCESS {
            for mut m in made {
                // SAFETY: a type made above.
                unsafe { crate::abi::datatype::PMPI_Type_free(&mut m) };
            }
            return rc;
        }
        made.push(next);
        t = next;
    }
    // SAFETY: `t` is the last type made above.
    let rc = unsafe { crate::abi::datatype::PMPI_Type_commit(&mut t) };
    // The inner types are held by the outer one.
    for mut m in made.into_iter().filter(|&m| m != t) {
        // SAFETY: a type made above.
        unsafe { crate::abi::datatype::PMPI_Type_free(&mut m) };
    }
    // SAFETY: the caller's contract.
    unsafe {
        *newtype = t;
        *base = head.base_addr;
    }
    rc
}
