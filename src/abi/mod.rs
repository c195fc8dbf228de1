//! The C ABI: MPICH-compatible types, constants and entry points.
//!
//! The only place with `extern "C"`. Each entry point is written as
//! `#[mpi_fn] #[no_mangle] pub unsafe extern "C" fn MPI_Xxx(..) -> c_int { body }`
//! whose body validates arguments, converts handles, calls `core`, and writes
//! outputs last, only on success, returning `Result<()>`; the attribute adds
//! `PMPI_Xxx`, panic catching and error-handler dispatch (abi::guard).
//! Conventions (handles, NULL vs sentinels, threads, panics): docs/abi.md.
#![allow(non_camel_case_types, non_snake_case, clippy::not_unsafe_ptr_arg_deref)]

pub use crate::base::{consts, handles, type_names};

pub mod attr;
pub mod bufcheck;
pub mod check;
pub mod coll;
pub mod comm;
pub mod datatype;
pub mod errh;
pub mod greq;
pub mod group;
pub mod guard;
pub mod info;
pub mod init;
pub mod large;
pub mod large_types;
pub mod misc;
pub mod mpi1;
pub mod op;
pub mod p2p;
pub mod part;
pub mod profile;
pub mod ptr;
pub mod request;
pub mod session;
pub mod stubs;
pub mod tools;
pub mod topo;
pub mod win;

use std::os::raw::{c_int, c_long, c_void};

pub type MPI_Comm = c_int;
pub type MPI_Group = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Request = c_int;
pub type MPI_Op = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Info = c_int;
pub type MPI_Win = c_int;
pub type MPI_Message = c_int;
pub type MPI_Session = c_int;
pub type MPI_Fint = c_int;
pub type MPI_Aint = c_long;
pub type MPI_Count = c_long;
pub type MPI_Offset = c_long;

/// MPICH's status: the byte count split over two words (bit 0 of the second
/// is the cancelled flag), then source, tag, error.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

/// Opaque stand-ins for the C function types declared in mpi.h (see
/// cbindgen.toml); parameters are pointers to them, as in MPICH's prototypes.
pub type MPI_Comm_errhandler_function = c_void;
pub type MPI_Comm_copy_attr_function = c_void;
pub type MPI_Comm_delete_attr_function = c_void;
pub type MPI_Copy_function = c_void;
pub type MPI_Delete_function = c_void;
pub type MPI_Win_errhandler_function = c_void;
pub type MPI_File_errhandler_function = c_void;
pub type MPI_Session_errhandler_function = c_void;
pub type MPI_Win_copy_attr_function = c_void;
pub type MPI_Win_delete_attr_function = c_void;
pub type MPI_Grequest_query_function = c_void;
pub type MPI_Grequest_free_function = c_void;
pub type MPI_Grequest_cancel_function = c_void;
pub type MPI_Datarep_extent_function = c_void;
pub type MPI_Datarep_conversion_function = c_void;
pub type MPI_Datarep_conversion_function_c = c_void;
pub type MPI_User_function_c = c_void;
/// MPICH's file handle is a pointer (`struct ADIOI_FileD *`, typedef'd in mpi.h).
pub type MPI_File = *mut c_void;
