//! The MPI-4 large-count forms (`MPI_Xxx_c`) outside the collectives
//! (those are in `coll/large.rs`): point-to-point, whose counts go the int
//! forms' paths (`__oxmpi_body_MPI_Xxx`) as they are up to 2147483647 and
//! above that as one element of a temporary type holding them all (`Big`:
//! the bytes are the same, a contiguous buffer still moves without a
//! packed copy, and the status counts bytes, so MPI_Get_count_c answers in
//! the program's type); and the status and datatype queries, which answer
//! in `MPI_Count` as their `_x` forms do, exactly.

use super::{datatype, p2p, request};
use super::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

/// A count and type the int paths take for `count` elements of `dt`: the
/// same up to 2147483647; above, one element of a temporary committed type
/// made of those elements (blocks of 2^20 of them, then the rest), freed
/// when this is dropped (a pending operation keeps what it needs of it).
pub(crate) struct Big {
    pub count: c_int,
    pub dt: MPI_Datatype,
    temp: bool,
}

impl Big {
    /// Keeps the temporary type for the life of the process (a persistent
    /// collective names it at each MPI_Start): one type object per call
    /// that moves 2^31 or more elements.
    pub(crate) fn keep(mut self) -> Big {
        self.temp = false;
        self
    }
}

impl Drop for Big {
    fn drop(&mut self) {
        if self.temp {
            if let Some(m) = BIG_TYPES.lock().as_mut() {
                m.remove(&self.dt);
            }
            let _ = datatype::__oxmpi_body_MPI_Type_free(&mut self.dt);
        }
    }
}

/// The temporary types of `big` alive now: handle -> (the program's type,
/// elements of it), so that a user op is called with the program's type
/// (`of_big`). Only types for counts above 2^31 - 1 are here.
static BIG_TYPES: parking_lot::Mutex<
    Option<std::collections::HashMap<MPI_Datatype, (MPI_Datatype, i64)>>,
> = parking_lot::Mutex::new(None);
/// Whether `BIG_TYPES` ever held a type (a user op's reduction asks only then).
static ANY_BIG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The program's type and element count behind a temporary type of `big`.
pub(crate) fn of_big(dt: MPI_Datatype) -> Option<(MPI_Datatype, i64)> {
    // Relaxed: set before the type's handle is handed out (same thread, or
    // through the lock of the handle table).
    if !ANY_BIG.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    BIG_TYPES.lock().as_ref()?.get(&dt).copied()
}

pub(crate) fn big(
    count: MPI_Count,
    dt: MPI_Datatype,
    name: &str,
) -> crate::core::error::Result<Big> {
    use crate::base::consts::MPI_ERR_COUNT;
    if count < 0 {
        return Err(crate::err!(
            MPI_ERR_COUNT,
            "{name}={count} must be non-negative"
        ));
    }
    if let Ok(c) = c_int::try_from(count) {
        return Ok(Big {
            count: c,
            dt,
            temp: false,
        });
    }
    const BLOCK: i64 = 1 << 20;
    let (q, r) = (count / BLOCK, count % BLOCK);
    let q = c_int::try_from(q).map_err(|_| {
        crate::err!(
            MPI_ERR_COUNT,
            "{name}={count} is more elements than OxMPI can name"
        )
    })?;
    let ext = datatype::lookup(dt)?.extent() as i64;
    let mut block: MPI_Datatype = 0;
    let mut t: MPI_Datatype = 0;
    {
        datatype::__oxmpi_body_MPI_Type_contiguous(BLOCK as c_int, dt, &mut block)?;
        let mut bls = [q, r as c_int];
        let mut disps = [0i64, q as i64 * BLOCK * ext];
        let mut types = [block, dt];
        let n = if r == 0 { 1 } else { 2 };
        let made = datatype::__oxmpi_body_MPI_Type_create_struct(
            n,
            bls.as_mut_ptr(),
            disps.as_mut_ptr(),
            types.as_mut_ptr(),
            &mut t,
        );
        datatype::__oxmpi_body_MPI_Type_free(&mut block)?;
        made?;
        datatype::__oxmpi_body_MPI_Type_commit(&mut t)?;
    }
    BIG_TYPES
        .lock()
        .get_or_insert_with(Default::default)
        .insert(t, (dt, count));
    // Relaxed: see `of_big`.
    ANY_BIG.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(Big {
        count: 1,
        dt: t,
        temp: true,
    })
}

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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let (bs, br) = (
        big(sendcount, sendtype, "sendcount")?,
        big(recvcount, recvtype, "recvcount")?,
    );
    let (sendcount, sendtype, recvcount, recvtype) = (bs.count, bs.dt, br.count, br.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
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
    let (bs, br) = (
        big(sendcount, sendtype, "sendcount")?,
        big(recvcount, recvtype, "recvcount")?,
    );
    let (sendcount, sendtype, recvcount, recvtype) = (bs.count, bs.dt, br.count, br.dt);
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
    let b = big(count, datatype, "count")?;
    let (count, datatype) = (b.count, b.dt);
    p2p::__oxmpi_body_MPI_Isendrecv_replace(
        buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
    )
}
