//! The MPI-4 large-count forms (`MPI_Xxx_c`) outside the collectives
//! (those are in `coll/large.rs`): point-to-point, whose counts go the int
//! forms' paths (`__oxmpi_body_MPI_Xxx`) and so are refused above
//! 2147483647 by name, and the status and datatype queries, which answer in
//! `MPI_Count` as their `_x` forms do, exactly.

use super::coll::int_count;
use super::{datatype, p2p, request};
use super::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count_c(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> c_int {
    request::get_count_x(status, datatype, count, false)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_c(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> c_int {
    request::get_count_x(status, datatype, count, true)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    datatype::__oxmpi_body_MPI_Type_size_x(datatype, size)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_c(
    datatype: MPI_Datatype,
    lb: *mut MPI_Count,
    extent: *mut MPI_Count,
) -> c_int {
    datatype::__oxmpi_body_MPI_Type_get_extent_x(datatype, lb, extent)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_c(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    datatype::__oxmpi_body_MPI_Type_get_true_extent_x(datatype, true_lb, true_extent)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Send_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Send(buf, count, datatype, dest, tag, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Ssend(buf, count, datatype, dest, tag, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Rsend(buf, count, datatype, dest, tag, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Bsend(buf, count, datatype, dest, tag, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Isend(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Issend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Issend(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Irsend(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Ibsend(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Send_init(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_init_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Ssend_init(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_init_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Rsend_init(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_init_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Bsend_init(buf, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Recv(buf, count, datatype, source, tag, comm, status)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Irecv(buf, count, datatype, source, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Recv_init(buf, count, datatype, source, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_c(
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
    status: *mut MPI_Status,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    p2p::__oxmpi_body_MPI_Sendrecv(
        sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
        comm, status,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Sendrecv_replace(
        buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Mrecv(buf, count, datatype, message, status)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Imrecv(buf, count, datatype, message, request)
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
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    p2p::__oxmpi_body_MPI_Isendrecv(
        sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
        comm, request,
    )
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
    let count = int_count(count, "count")?;
    p2p::__oxmpi_body_MPI_Isendrecv_replace(
        buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
    )
}
