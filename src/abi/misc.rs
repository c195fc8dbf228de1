//! Smaller MPI-2 services: memory allocation (`MPI_Alloc_mem`,
//! `MPI_Free_mem`), generalized-status setters, `MPI_Type_match_size` and
//! `MPI_Comm_get_parent` (no process is ever spawned, so there is no parent)
//! and `MPI_Pcontrol`.

use super::consts::*;
use super::ptr::{out, out_ptr, status_ignored, status_mut};
use super::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Status};
use crate::core::error::Result;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

/// Memory for the application (`MPI_Free_mem` gives it back): plain
/// `malloc`, 64-byte aligned, since no transport here registers memory. The
/// pointer is written to `*baseptr` (a `void **` in disguise, as the
/// standard declares it). `info` is accepted and ignored.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(
    size: MPI_Aint,
    info: MPI_Info,
    baseptr: *mut c_void,
) -> c_int {
    if size < 0 {
        return Err(err!(MPI_ERR_SIZE, "size={size} must be non-negative"));
    }
    if baseptr.is_null() {
        return Err(err!(MPI_ERR_ARG, "baseptr=NULL"));
    }
    // A cache line, or the `mpi_minimum_memory_alignment` asked for.
    let kv = super::win::info_of(info)?;
    let align = super::win::min_alignment(&kv).unwrap_or(64).max(64);
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign writes p on success; `align` is a power of two
    // and a multiple of the pointer size.
    let rc = unsafe { libc::posix_memalign(&mut p, align, (size as usize).max(1)) };
    if rc != 0 {
        return Err(err!(MPI_ERR_NO_MEM, "size={size}: out of memory"));
    }
    out_ptr(baseptr, "baseptr", p)
}

/// Frees memory from `MPI_Alloc_mem` (NULL is allowed and does nothing).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    // SAFETY: `base` came from MPI_Alloc_mem (posix_memalign) or is NULL.
    unsafe { libc::free(base) };
    Ok(())
}

/// Sets a status's cancelled flag (for generalized requests' query functions).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    let st = status_mut(status)?;
    st.count_hi_and_cancelled = (st.count_hi_and_cancelled & !1) | (flag != 0) as c_int;
    Ok(())
}

/// Sets a status to `count` items of `datatype` (their bytes, as MPICH
/// does), so that MPI_Get_count gives `count` and MPI_Get_elements the
/// basic elements in them.
///
/// # Boundary
/// `status` is NULL, a sentinel (both refused) or writable.
fn set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> Result<()> {
    if status.is_null() || status_ignored(status) {
        return Err(err!(MPI_ERR_ARG, "status={status:p} is not a status"));
    }
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
    }
    let (size, _) = super::datatype::size_and_type(datatype)?;
    let bytes = (count as u64)
        .checked_mul(size as u64)
        .filter(|&b| b < 1 << 63)
        .ok_or_else(|| {
            err!(
                MPI_ERR_COUNT,
                "count={count} of {size}-byte items overflows a status"
            )
        })?;
    let st = status_mut(status)?;
    st.count_lo = bytes as u32 as c_int;
    st.count_hi_and_cancelled =
        ((((bytes >> 32) as u32) << 1) | (st.count_hi_and_cancelled as u32 & 1)) as c_int;
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: c_int,
) -> c_int {
    set_elements(status, datatype, count as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: MPI_Count,
) -> c_int {
    set_elements(status, datatype, count)
}

/// The predefined (Fortran) type of a class and size: MPI_REAL4/8/16,
/// MPI_INTEGER1/2/4/8, MPI_COMPLEX8/16/32 (MPICH's answers);
/// `MPI_ERR_ARG` for a size the class has not.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_match_size(
    typeclass: c_int,
    size: c_int,
    datatype: *mut MPI_Datatype,
) -> c_int {
    let t = match (typeclass, size) {
        (MPI_TYPECLASS_REAL, 4) => MPI_REAL4,
        (MPI_TYPECLASS_REAL, 8) => MPI_REAL8,
        (MPI_TYPECLASS_REAL, 16) => MPI_REAL16,
        (MPI_TYPECLASS_INTEGER, 1) => MPI_INTEGER1,
        (MPI_TYPECLASS_INTEGER, 2) => MPI_INTEGER2,
        (MPI_TYPECLASS_INTEGER, 4) => MPI_INTEGER4,
        (MPI_TYPECLASS_INTEGER, 8) => MPI_INTEGER8,
        (MPI_TYPECLASS_COMPLEX, 8) => MPI_COMPLEX8,
        (MPI_TYPECLASS_COMPLEX, 16) => MPI_COMPLEX16,
        (MPI_TYPECLASS_COMPLEX, 32) => MPI_COMPLEX32,
        (MPI_TYPECLASS_REAL | MPI_TYPECLASS_INTEGER | MPI_TYPECLASS_COMPLEX, _) => {
            return Err(err!(
                MPI_ERR_ARG,
                "size={size}: no predefined type of class {typeclass} has it"
            ));
        }
        _ => {
            return Err(err!(
                MPI_ERR_ARG,
                "typeclass={typeclass} is not MPI_TYPECLASS_REAL, _INTEGER or _COMPLEX"
            ))
        }
    };
    out(datatype, "datatype", t)
}

/// The communicator to the parent of a spawned process: MPI_COMM_NULL, as no
/// process here is started by MPI_Comm_spawn.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    crate::core::runtime::with(|_| Ok(()))?;
    out(parent, "parent", MPI_COMM_NULL)
}

/// Profiling control: OxMPI has no profiling levels of its own, so every
/// level is accepted and changes nothing (the standard allows that); a
/// profiling library that interposes MPI_Pcontrol sees the call. C declares
/// it variadic (`int MPI_Pcontrol(const int level, ...)`, written into
/// mpi.h by cbindgen.toml); on the x86-64 and AArch64 Linux calling
/// conventions the extra arguments of such a call are ignored by a callee
/// that takes the level alone.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    let _ = level;
    Ok(())
}

/// MPI_Status_c2f: the C status as MPI_F_STATUS_SIZE Fortran integers
/// (MPICH's layout: the same five ints in the same order).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f(
    c_status: *const super::MPI_Status,
    f_status: *mut super::MPI_Fint,
) -> c_int {
    if super::ptr::status_ignored(c_status) {
        return Err(err!(
            MPI_ERR_ARG,
            "c_status={}: there is no status to convert",
            if c_status.is_null() {
                "NULL"
            } else {
                "MPI_STATUS_IGNORE"
            }
        ));
    }
    let s = super::ptr::inp(c_status, "c_status")?;
    let v = [
        s.count_lo,
        s.count_hi_and_cancelled,
        s.MPI_SOURCE,
        s.MPI_TAG,
        s.MPI_ERROR,
    ];
    super::ptr::out_slice(f_status, 5, "f_status")?.copy_from_slice(&v);
    Ok(())
}

/// MPI_Status_f2c: the inverse of MPI_Status_c2f.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2c(
    f_status: *const super::MPI_Fint,
    c_status: *mut super::MPI_Status,
) -> c_int {
    let v = super::ptr::in_slice(f_status, 5, "f_status")?;
    if super::ptr::status_ignored(c_status) {
        return Err(err!(MPI_ERR_ARG, "c_status=NULL or MPI_STATUS_IGNORE"));
    }
    let s = super::MPI_Status {
        count_lo: v[0],
        count_hi_and_cancelled: v[1],
        MPI_SOURCE: v[2],
        MPI_TAG: v[3],
        MPI_ERROR: v[4],
    };
    super::ptr::out(c_status, "c_status", s)
}

/// The predefined type of the smallest kind with at least `need` (one of
/// `kinds`: (type, precision, range)), for MPI_Type_create_f90_*;
/// MPI_UNDEFINED asks nothing of a property.
fn f90_kind(
    name: &str,
    p: c_int,
    r: c_int,
    kinds: &[(c_int, c_int, c_int)],
    newtype: *mut super::MPI_Datatype,
) -> crate::core::error::Result<()> {
    for (n, v) in [("p", p), ("r", r)] {
        if v < 0 && v != MPI_UNDEFINED {
            return Err(err!(
                MPI_ERR_ARG,
                "{n}={v} must be non-negative or MPI_UNDEFINED"
            ));
        }
    }
    let ok = |need: c_int, have: c_int| need == MPI_UNDEFINED || need <= have;
    let t = kinds
        .iter()
        .find(|&&(_, kp, kr)| ok(p, kp) && ok(r, kr))
        .map(|k| k.0)
        .ok_or_else(|| {
            err!(
                MPI_ERR_ARG,
                "no {name} kind has precision {p} and range {r} (MPI_UNDEFINED: any)"
            )
        })?;
    super::ptr::out(newtype, "newtype", t)
}

/// MPI_Type_create_f90_integer: INTEGER(KIND=SELECTED_INT_KIND(r)) as
/// the predefined MPI_INTEGER1/2/4/8 (a predefined type: not freed).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(
    r: c_int,
    newtype: *mut super::MPI_Datatype,
) -> c_int {
    if r == MPI_UNDEFINED {
        return Err(err!(
            MPI_ERR_ARG,
            "r=MPI_UNDEFINED: an integer kind needs a range"
        ));
    }
    let kinds = [
        (MPI_INTEGER1, 0, 2),
        (MPI_INTEGER2, 0, 4),
        (MPI_INTEGER4, 0, 9),
        (MPI_INTEGER8, 0, 18),
    ];
    f90_kind("INTEGER", MPI_UNDEFINED, r, &kinds, newtype)
}

/// MPI_Type_create_f90_real: REAL(KIND=SELECTED_REAL_KIND(p, r)) as
/// MPI_REAL4/8/16.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_real(
    p: c_int,
    r: c_int,
    newtype: *mut super::MPI_Datatype,
) -> c_int {
    let kinds = [
        (MPI_REAL4, 6, 37),
        (MPI_REAL8, 15, 307),
        (MPI_REAL16, 33, 4931),
    ];
    f90_kind("REAL", p, r, &kinds, newtype)
}

/// MPI_Type_create_f90_complex: COMPLEX of that REAL kind, as
/// MPI_COMPLEX8/16/32.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(
    p: c_int,
    r: c_int,
    newtype: *mut super::MPI_Datatype,
) -> c_int {
    let kinds = [
        (MPI_COMPLEX8, 6, 37),
        (MPI_COMPLEX16, 15, 307),
        (MPI_COMPLEX32, 33, 4931),
    ];
    f90_kind("COMPLEX", p, r, &kinds, newtype)
}
