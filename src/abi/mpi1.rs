//! The MPI-1 names that MPI-2 deprecated and MPI-3 removed, which MPICH
//! still exports and older codes (and binaries built against MPICH) call:
//! each is its successor with MPI-1's argument types, so each forwards to
//! the successor's body; errors name the function the program called.
//! `MPI_Type_struct`, with MPI-1's bound markers, is in `datatype`.

use super::{attr, datatype, errh};
use super::{MPI_Aint, MPI_Comm, MPI_Datatype, MPI_Errhandler};
use super::{MPI_Comm_errhandler_function, MPI_Copy_function, MPI_Delete_function};
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

/// MPI_Comm_create_keyval: MPI_Copy_function and MPI_Delete_function have
/// the communicator callbacks' arguments.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy_fn: *mut MPI_Copy_function,
    delete_fn: *mut MPI_Delete_function,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    attr::__oxmpi_body_MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    attr::__oxmpi_body_MPI_Comm_free_keyval(keyval)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_put(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    attr::__oxmpi_body_MPI_Comm_set_attr(comm, keyval, attribute_val)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    attr::__oxmpi_body_MPI_Comm_get_attr(comm, keyval, attribute_val, flag)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> c_int {
    attr::__oxmpi_body_MPI_Comm_delete_attr(comm, keyval)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_create(
    comm_errhandler_fn: *mut MPI_Comm_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    errh::__oxmpi_body_MPI_Comm_create_errhandler(comm_errhandler_fn, errhandler)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    errh::__oxmpi_body_MPI_Comm_set_errhandler(comm, errhandler)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_get(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    errh::__oxmpi_body_MPI_Comm_get_errhandler(comm, errhandler)
}

/// MPI_Get_address.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Address(location: *mut c_void, address: *mut MPI_Aint) -> c_int {
    datatype::__oxmpi_body_MPI_Get_address(location, address)
}

/// The extent (MPI_Type_get_extent's second result).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    if extent.is_null() {
        return Err(err!(crate::base::consts::MPI_ERR_ARG, "extent=NULL"));
    }
    let mut lb: MPI_Aint = 0;
    datatype::__oxmpi_body_MPI_Type_get_extent(datatype, &mut lb, extent)
}

/// The lower bound.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    let t = datatype::lookup(datatype)?;
    super::ptr::out(displacement, "displacement", t.lb as MPI_Aint)
}

/// The upper bound (lower bound plus extent).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    let t = datatype::lookup(datatype)?;
    super::ptr::out(displacement, "displacement", t.ub as MPI_Aint)
}

/// MPI_Type_create_hindexed.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hindexed(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    datatype::__oxmpi_body_MPI_Type_create_hindexed(
        count,
        array_of_blocklengths,
        array_of_displacements,
        oldtype,
        newtype,
    )
}

/// MPI_Type_create_hvector.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hvector(
    count: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    datatype::__oxmpi_body_MPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype)
}
