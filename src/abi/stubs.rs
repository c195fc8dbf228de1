//! Exported but not implemented: every other `MPI_` function of MPICH
//! 4.0.2's library (RMA, I/O, dynamic processes, sessions, generalized
//! requests, the MPI-1 names MPI-3 removed, the remaining large-count
//! forms), with MPICH's prototypes, so that a program or binding built
//! against MPICH loads and runs up to the first call of one. Each reports
//! "not implemented: MPI_Xxx" as MPI_ERR_UNSUPPORTED_OPERATION through the
//! error handler (of `comm` where it has one) and writes no output.
//! docs/functions.md lists them apart from the implemented functions.

use super::consts::*;
use super::{
    MPI_Aint, MPI_Comm, MPI_Comm_errhandler_function, MPI_Copy_function, MPI_Count,
    MPI_Datarep_conversion_function, MPI_Datarep_conversion_function_c,
    MPI_Datarep_extent_function, MPI_Datatype, MPI_Delete_function, MPI_Errhandler, MPI_File,
    MPI_File_errhandler_function, MPI_Fint, MPI_Grequest_cancel_function,
    MPI_Grequest_free_function, MPI_Grequest_query_function, MPI_Group, MPI_Info, MPI_Offset,
    MPI_Op, MPI_Request, MPI_Session, MPI_Session_errhandler_function, MPI_Status, MPI_Win,
    MPI_Win_copy_attr_function, MPI_Win_delete_attr_function, MPI_Win_errhandler_function,
};
use crate::core::error::Error;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int, c_void};

#[cold]
fn not_implemented(name: &str) -> Error {
    err!(MPI_ERR_UNSUPPORTED_OPERATION, "not implemented: {name}")
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
    );
    Err(not_implemented("MPI_Accumulate"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
    );
    Err(not_implemented("MPI_Accumulate_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Address(location: *mut c_void, address: *mut MPI_Aint) -> c_int {
    let _ = (location, address);
    Err(not_implemented("MPI_Address"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> c_int {
    let _ = (comm, keyval);
    Err(not_implemented("MPI_Attr_delete"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let _ = (comm, keyval, attribute_val, flag);
    Err(not_implemented("MPI_Attr_get"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_put(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    let _ = (comm, keyval, attribute_val);
    Err(not_implemented("MPI_Attr_put"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    let _ = (port_name,);
    Err(not_implemented("MPI_Close_port"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_accept(
    port_name: *const c_char,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let _ = (port_name, info, root, comm, newcomm);
    Err(not_implemented("MPI_Comm_accept"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_connect(
    port_name: *const c_char,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let _ = (port_name, info, root, comm, newcomm);
    Err(not_implemented("MPI_Comm_connect"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    group: MPI_Group,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let _ = (group, stringtag, info, errhandler, newcomm);
    Err(not_implemented("MPI_Comm_create_from_group"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    // The argument is checked first, as a real call would check it.
    if super::ptr::inp(comm, "comm")? == MPI_COMM_NULL {
        return Err(err!(MPI_ERR_COMM, "comm=MPI_COMM_NULL"));
    }
    Err(not_implemented("MPI_Comm_disconnect"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    let _ = (fd, intercomm);
    Err(not_implemented("MPI_Comm_join"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let _ = (
        command,
        argv,
        maxprocs,
        info,
        root,
        comm,
        intercomm,
        array_of_errcodes,
    );
    Err(not_implemented("MPI_Comm_spawn"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let _ = (
        count,
        array_of_commands,
        array_of_argv,
        array_of_maxprocs,
        array_of_info,
        root,
        comm,
        intercomm,
        array_of_errcodes,
    );
    Err(not_implemented("MPI_Comm_spawn_multiple"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        compare_addr,
        result_addr,
        datatype,
        target_rank,
        target_disp,
        win,
    );
    Err(not_implemented("MPI_Compare_and_swap"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_create(
    comm_errhandler_fn: *mut MPI_Comm_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (comm_errhandler_fn, errhandler);
    Err(not_implemented("MPI_Errhandler_create"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_get(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (comm, errhandler);
    Err(not_implemented("MPI_Errhandler_get"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    let _ = (comm, errhandler);
    Err(not_implemented("MPI_Errhandler_set"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        result_addr,
        datatype,
        target_rank,
        target_disp,
        op,
        win,
    );
    Err(not_implemented("MPI_Fetch_and_op"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> c_int {
    let _ = (fh, errorcode);
    Err(not_implemented("MPI_File_call_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_close(fh: *mut MPI_File) -> c_int {
    let _ = (fh,);
    Err(not_implemented("MPI_File_close"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_create_errhandler(
    file_errhandler_fn: *mut MPI_File_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (file_errhandler_fn, errhandler);
    Err(not_implemented("MPI_File_create_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_delete(filename: *const c_char, info: MPI_Info) -> c_int {
    let _ = (filename, info);
    Err(not_implemented("MPI_File_delete"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_amode(fh: MPI_File, amode: *mut c_int) -> c_int {
    let _ = (fh, amode);
    Err(not_implemented("MPI_File_get_amode"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) -> c_int {
    let _ = (fh, flag);
    Err(not_implemented("MPI_File_get_atomicity"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_byte_offset(
    fh: MPI_File,
    offset: MPI_Offset,
    disp: *mut MPI_Offset,
) -> c_int {
    let _ = (fh, offset, disp);
    Err(not_implemented("MPI_File_get_byte_offset"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_errhandler(
    file: MPI_File,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (file, errhandler);
    Err(not_implemented("MPI_File_get_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) -> c_int {
    let _ = (fh, group);
    Err(not_implemented("MPI_File_get_group"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) -> c_int {
    let _ = (fh, info_used);
    Err(not_implemented("MPI_File_get_info"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    let _ = (fh, offset);
    Err(not_implemented("MPI_File_get_position"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_position_shared(
    fh: MPI_File,
    offset: *mut MPI_Offset,
) -> c_int {
    let _ = (fh, offset);
    Err(not_implemented("MPI_File_get_position_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) -> c_int {
    let _ = (fh, size);
    Err(not_implemented("MPI_File_get_size"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent(
    fh: MPI_File,
    datatype: MPI_Datatype,
    extent: *mut MPI_Aint,
) -> c_int {
    let _ = (fh, datatype, extent);
    Err(not_implemented("MPI_File_get_type_extent"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent_c(
    fh: MPI_File,
    datatype: MPI_Datatype,
    extent: *mut MPI_Count,
) -> c_int {
    let _ = (fh, datatype, extent);
    Err(not_implemented("MPI_File_get_type_extent_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_view(
    fh: MPI_File,
    disp: *mut MPI_Offset,
    etype: *mut MPI_Datatype,
    filetype: *mut MPI_Datatype,
    datarep: *mut c_char,
) -> c_int {
    let _ = (fh, disp, etype, filetype, datarep);
    Err(not_implemented("MPI_File_get_view"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_all(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_all_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_at(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_at"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_at_all(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_at_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_at_all_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_at_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_at_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_at_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_shared(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iread_shared_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iread_shared_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_all(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_all_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_at(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_at"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_at_all(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_at_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_at_all_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_at_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_at_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_at_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_shared(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_iwrite_shared_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (fh, buf, count, datatype, request);
    Err(not_implemented("MPI_File_iwrite_shared_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_open(
    comm: MPI_Comm,
    filename: *const c_char,
    amode: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> c_int {
    let _ = (comm, filename, amode, info, fh);
    Err(not_implemented("MPI_File_open"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> c_int {
    let _ = (fh, size);
    Err(not_implemented("MPI_File_preallocate"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_all(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_all_begin(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_read_all_begin"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_all_begin_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_read_all_begin_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_all_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_all_end(
    fh: MPI_File,
    buf: *mut c_void,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, status);
    Err(not_implemented("MPI_File_read_all_end"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_at"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at_all(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_at_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at_all_begin(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype);
    Err(not_implemented("MPI_File_read_at_all_begin"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at_all_begin_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype);
    Err(not_implemented("MPI_File_read_at_all_begin_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at_all_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_at_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at_all_end(
    fh: MPI_File,
    buf: *mut c_void,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, status);
    Err(not_implemented("MPI_File_read_at_all_end"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_at_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_at_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_ordered(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_ordered"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_ordered_begin(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_read_ordered_begin"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_ordered_begin_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_read_ordered_begin_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_ordered_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_ordered_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_ordered_end(
    fh: MPI_File,
    buf: *mut c_void,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, status);
    Err(not_implemented("MPI_File_read_ordered_end"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_shared(
    fh: MPI_File,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_read_shared_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_read_shared_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let _ = (fh, offset, whence);
    Err(not_implemented("MPI_File_seek"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_seek_shared(
    fh: MPI_File,
    offset: MPI_Offset,
    whence: c_int,
) -> c_int {
    let _ = (fh, offset, whence);
    Err(not_implemented("MPI_File_seek_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> c_int {
    let _ = (fh, flag);
    Err(not_implemented("MPI_File_set_atomicity"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_errhandler(
    file: MPI_File,
    errhandler: MPI_Errhandler,
) -> c_int {
    let _ = (file, errhandler);
    Err(not_implemented("MPI_File_set_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_info(fh: MPI_File, info: MPI_Info) -> c_int {
    let _ = (fh, info);
    Err(not_implemented("MPI_File_set_info"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_size(fh: MPI_File, size: MPI_Offset) -> c_int {
    let _ = (fh, size);
    Err(not_implemented("MPI_File_set_size"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_view(
    fh: MPI_File,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
    datarep: *const c_char,
    info: MPI_Info,
) -> c_int {
    let _ = (fh, disp, etype, filetype, datarep, info);
    Err(not_implemented("MPI_File_set_view"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_sync(fh: MPI_File) -> c_int {
    let _ = (fh,);
    Err(not_implemented("MPI_File_sync"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_all(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_all_begin(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_write_all_begin"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_all_begin_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_write_all_begin_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_all_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_all_end(
    fh: MPI_File,
    buf: *const c_void,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, status);
    Err(not_implemented("MPI_File_write_all_end"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_at"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at_all(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_at_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at_all_begin(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype);
    Err(not_implemented("MPI_File_write_at_all_begin"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at_all_begin_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype);
    Err(not_implemented("MPI_File_write_at_all_begin_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at_all_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_at_all_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at_all_end(
    fh: MPI_File,
    buf: *const c_void,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, status);
    Err(not_implemented("MPI_File_write_at_all_end"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_at_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, offset, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_at_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_ordered(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_ordered"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_ordered_begin(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_write_ordered_begin"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_ordered_begin_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    let _ = (fh, buf, count, datatype);
    Err(not_implemented("MPI_File_write_ordered_begin_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_ordered_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_ordered_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_ordered_end(
    fh: MPI_File,
    buf: *const c_void,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, status);
    Err(not_implemented("MPI_File_write_ordered_end"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_shared(
    fh: MPI_File,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_File_write_shared_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> c_int {
    let _ = (fh, buf, count, datatype, status);
    Err(not_implemented("MPI_File_write_shared_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get(
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
    );
    Err(not_implemented("MPI_Get"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: c_int,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        result_addr,
        result_count,
        result_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
    );
    Err(not_implemented("MPI_Get_accumulate"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        result_addr,
        result_count,
        result_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
    );
    Err(not_implemented("MPI_Get_accumulate_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
    );
    Err(not_implemented("MPI_Get_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_complete(request: MPI_Request) -> c_int {
    let _ = (request,);
    Err(not_implemented("MPI_Grequest_complete"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: *mut MPI_Grequest_query_function,
    free_fn: *mut MPI_Grequest_free_function,
    cancel_fn: *mut MPI_Grequest_cancel_function,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (query_fn, free_fn, cancel_fn, extra_state, request);
    Err(not_implemented("MPI_Grequest_start"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    session: MPI_Session,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> c_int {
    let _ = (session, pset_name, newgroup);
    Err(not_implemented("MPI_Group_from_session_pset"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(
    argc: c_int,
    argv: *mut *mut c_char,
    info: *mut MPI_Info,
) -> c_int {
    let _ = (argc, argv, info);
    Err(not_implemented("MPI_Info_create_env"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    let _ = (
        local_group,
        local_leader,
        remote_group,
        remote_leader,
        stringtag,
        info,
        errhandler,
        newintercomm,
    );
    Err(not_implemented("MPI_Intercomm_create_from_groups"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
        comm, request,
    );
    Err(not_implemented("MPI_Isendrecv"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
        comm, request,
    );
    Err(not_implemented("MPI_Isendrecv_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
    );
    Err(not_implemented("MPI_Isendrecv_replace"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
    );
    Err(not_implemented("MPI_Isendrecv_replace_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy_fn: *mut MPI_Copy_function,
    delete_fn: *mut MPI_Delete_function,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let _ = (copy_fn, delete_fn, keyval, extra_state);
    Err(not_implemented("MPI_Keyval_create"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    let _ = (keyval,);
    Err(not_implemented("MPI_Keyval_free"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Lookup_name(
    service_name: *const c_char,
    info: MPI_Info,
    port_name: *mut c_char,
) -> c_int {
    let _ = (service_name, info, port_name);
    Err(not_implemented("MPI_Lookup_name"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Open_port(info: MPI_Info, port_name: *mut c_char) -> c_int {
    let _ = (info, port_name);
    Err(not_implemented("MPI_Open_port"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Parrived(
    request: MPI_Request,
    partition: c_int,
    flag: *mut c_int,
) -> c_int {
    let _ = (request, partition, flag);
    Err(not_implemented("MPI_Parrived"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready(partition: c_int, request: MPI_Request) -> c_int {
    let _ = (partition, request);
    Err(not_implemented("MPI_Pready"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_list(
    length: c_int,
    array_of_partitions: *mut c_int,
    request: MPI_Request,
) -> c_int {
    let _ = (length, array_of_partitions, request);
    Err(not_implemented("MPI_Pready_list"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_range(
    partition_low: c_int,
    partition_high: c_int,
    request: MPI_Request,
) -> c_int {
    let _ = (partition_low, partition_high, request);
    Err(not_implemented("MPI_Pready_range"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        buf, partitions, count, datatype, dest, tag, comm, info, request,
    );
    Err(not_implemented("MPI_Precv_init"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        buf, partitions, count, datatype, dest, tag, comm, info, request,
    );
    Err(not_implemented("MPI_Psend_init"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Publish_name(
    service_name: *const c_char,
    info: MPI_Info,
    port_name: *const c_char,
) -> c_int {
    let _ = (service_name, info, port_name);
    Err(not_implemented("MPI_Publish_name"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Put(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
    );
    Err(not_implemented("MPI_Put"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Put_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
    );
    Err(not_implemented("MPI_Put_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
        request,
    );
    Err(not_implemented("MPI_Raccumulate"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
        request,
    );
    Err(not_implemented("MPI_Raccumulate_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: *mut MPI_Datarep_conversion_function,
    write_conversion_fn: *mut MPI_Datarep_conversion_function,
    dtype_file_extent_fn: *mut MPI_Datarep_extent_function,
    extra_state: *mut c_void,
) -> c_int {
    let _ = (
        datarep,
        read_conversion_fn,
        write_conversion_fn,
        dtype_file_extent_fn,
        extra_state,
    );
    Err(not_implemented("MPI_Register_datarep"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: *mut MPI_Datarep_conversion_function_c,
    write_conversion_fn: *mut MPI_Datarep_conversion_function_c,
    dtype_file_extent_fn: *mut MPI_Datarep_extent_function,
    extra_state: *mut c_void,
) -> c_int {
    let _ = (
        datarep,
        read_conversion_fn,
        write_conversion_fn,
        dtype_file_extent_fn,
        extra_state,
    );
    Err(not_implemented("MPI_Register_datarep_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget(
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
        request,
    );
    Err(not_implemented("MPI_Rget"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: c_int,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        result_addr,
        result_count,
        result_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
        request,
    );
    Err(not_implemented("MPI_Rget_accumulate"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        result_addr,
        result_count,
        result_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
        request,
    );
    Err(not_implemented("MPI_Rget_accumulate_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
        request,
    );
    Err(not_implemented("MPI_Rget_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rput(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
        request,
    );
    Err(not_implemented("MPI_Rput"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rput_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let _ = (
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
        request,
    );
    Err(not_implemented("MPI_Rput_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_call_errhandler(
    session: MPI_Session,
    errorcode: c_int,
) -> c_int {
    let _ = (session, errorcode);
    Err(not_implemented("MPI_Session_call_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_create_errhandler(
    session_errhandler_fn: *mut MPI_Session_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (session_errhandler_fn, errhandler);
    Err(not_implemented("MPI_Session_create_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    let _ = (session,);
    Err(not_implemented("MPI_Session_finalize"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_errhandler(
    session: MPI_Session,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (session, errhandler);
    Err(not_implemented("MPI_Session_get_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(
    session: MPI_Session,
    info_used: *mut MPI_Info,
) -> c_int {
    let _ = (session, info_used);
    Err(not_implemented("MPI_Session_get_info"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    session: MPI_Session,
    info: MPI_Info,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    let _ = (session, info, n, pset_len, pset_name);
    Err(not_implemented("MPI_Session_get_nth_pset"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(
    session: MPI_Session,
    info: MPI_Info,
    npset_names: *mut c_int,
) -> c_int {
    let _ = (session, info, npset_names);
    Err(not_implemented("MPI_Session_get_num_psets"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    session: MPI_Session,
    pset_name: *const c_char,
    info: *mut MPI_Info,
) -> c_int {
    let _ = (session, pset_name, info);
    Err(not_implemented("MPI_Session_get_pset_info"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    let _ = (info, errhandler, session);
    Err(not_implemented("MPI_Session_init"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_set_errhandler(
    session: MPI_Session,
    errhandler: MPI_Errhandler,
) -> c_int {
    let _ = (session, errhandler);
    Err(not_implemented("MPI_Session_set_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f(
    c_status: *const MPI_Status,
    f_status: *mut MPI_Fint,
) -> c_int {
    let _ = (c_status, f_status);
    Err(not_implemented("MPI_Status_c2f"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2c(
    f_status: *const MPI_Fint,
    c_status: *mut MPI_Status,
) -> c_int {
    let _ = (f_status, c_status);
    Err(not_implemented("MPI_Status_f2c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let _ = (p, r, newtype);
    Err(not_implemented("MPI_Type_create_f90_complex"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let _ = (r, newtype);
    Err(not_implemented("MPI_Type_create_f90_integer"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_real(
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let _ = (p, r, newtype);
    Err(not_implemented("MPI_Type_create_f90_real"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    let _ = (datatype, extent);
    Err(not_implemented("MPI_Type_extent"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hindexed(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let _ = (
        count,
        array_of_blocklengths,
        array_of_displacements,
        oldtype,
        newtype,
    );
    Err(not_implemented("MPI_Type_hindexed"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hvector(
    count: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let _ = (count, blocklength, stride, oldtype, newtype);
    Err(not_implemented("MPI_Type_hvector"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    let _ = (datatype, displacement);
    Err(not_implemented("MPI_Type_lb"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_struct(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    array_of_types: *mut MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let _ = (
        count,
        array_of_blocklengths,
        array_of_displacements,
        array_of_types,
        newtype,
    );
    Err(not_implemented("MPI_Type_struct"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    let _ = (datatype, displacement);
    Err(not_implemented("MPI_Type_ub"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpublish_name(
    service_name: *const c_char,
    info: MPI_Info,
    port_name: *const c_char,
) -> c_int {
    let _ = (service_name, info, port_name);
    Err(not_implemented("MPI_Unpublish_name"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (size, disp_unit, info, comm, baseptr, win);
    Err(not_implemented("MPI_Win_allocate"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_c(
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (size, disp_unit, info, comm, baseptr, win);
    Err(not_implemented("MPI_Win_allocate_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (size, disp_unit, info, comm, baseptr, win);
    Err(not_implemented("MPI_Win_allocate_shared"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared_c(
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (size, disp_unit, info, comm, baseptr, win);
    Err(not_implemented("MPI_Win_allocate_shared_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    let _ = (win, base, size);
    Err(not_implemented("MPI_Win_attach"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    let _ = (win, errorcode);
    Err(not_implemented("MPI_Win_call_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_complete(win: MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_complete"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (base, size, disp_unit, info, comm, win);
    Err(not_implemented("MPI_Win_create"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_c(
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (base, size, disp_unit, info, comm, win);
    Err(not_implemented("MPI_Win_create_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    let _ = (info, comm, win);
    Err(not_implemented("MPI_Win_create_dynamic"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    win_errhandler_fn: *mut MPI_Win_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (win_errhandler_fn, errhandler);
    Err(not_implemented("MPI_Win_create_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    win_copy_attr_fn: *mut MPI_Win_copy_attr_function,
    win_delete_attr_fn: *mut MPI_Win_delete_attr_function,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let _ = (
        win_copy_attr_fn,
        win_delete_attr_fn,
        win_keyval,
        extra_state,
    );
    Err(not_implemented("MPI_Win_create_keyval"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_delete_attr(win: MPI_Win, win_keyval: c_int) -> c_int {
    let _ = (win, win_keyval);
    Err(not_implemented("MPI_Win_delete_attr"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    let _ = (win, base);
    Err(not_implemented("MPI_Win_detach"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    let _ = (assert, win);
    Err(not_implemented("MPI_Win_fence"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    let _ = (rank, win);
    Err(not_implemented("MPI_Win_flush"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_all(win: MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_flush_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    let _ = (rank, win);
    Err(not_implemented("MPI_Win_flush_local"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_flush_local_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_free"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> c_int {
    let _ = (win_keyval,);
    Err(not_implemented("MPI_Win_free_keyval"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let _ = (win, win_keyval, attribute_val, flag);
    Err(not_implemented("MPI_Win_get_attr"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(
    win: MPI_Win,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let _ = (win, errhandler);
    Err(not_implemented("MPI_Win_get_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    let _ = (win, group);
    Err(not_implemented("MPI_Win_get_group"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    let _ = (win, info_used);
    Err(not_implemented("MPI_Win_get_info"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(
    win: MPI_Win,
    win_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let _ = (win, win_name, resultlen);
    Err(not_implemented("MPI_Win_get_name"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(
    lock_type: c_int,
    rank: c_int,
    assert: c_int,
    win: MPI_Win,
) -> c_int {
    let _ = (lock_type, rank, assert, win);
    Err(not_implemented("MPI_Win_lock"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    let _ = (assert, win);
    Err(not_implemented("MPI_Win_lock_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    let _ = (group, assert, win);
    Err(not_implemented("MPI_Win_post"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_attr(
    win: MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    let _ = (win, win_keyval, attribute_val);
    Err(not_implemented("MPI_Win_set_attr"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    let _ = (win, errhandler);
    Err(not_implemented("MPI_Win_set_errhandler"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    let _ = (win, info);
    Err(not_implemented("MPI_Win_set_info"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> c_int {
    let _ = (win, win_name);
    Err(not_implemented("MPI_Win_set_name"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    let _ = (win, rank, size, disp_unit, baseptr);
    Err(not_implemented("MPI_Win_shared_query"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query_c(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut MPI_Aint,
    baseptr: *mut c_void,
) -> c_int {
    let _ = (win, rank, size, disp_unit, baseptr);
    Err(not_implemented("MPI_Win_shared_query_c"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    let _ = (group, assert, win);
    Err(not_implemented("MPI_Win_start"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_sync(win: MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_sync"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    let _ = (win, flag);
    Err(not_implemented("MPI_Win_test"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    let _ = (rank, win);
    Err(not_implemented("MPI_Win_unlock"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_unlock_all"))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_wait(win: MPI_Win) -> c_int {
    let _ = (win,);
    Err(not_implemented("MPI_Win_wait"))
}
