//! The MPI-4 large-count collectives (`MPI_Xxx_c`): counts as `MPI_Count`,
//! displacements as `MPI_Aint`. Each takes the path of its int form
//! (`__oxmpi_body_MPI_Xxx`), so every algorithm, check and message is the
//! same, and reports errors under its own name. The collectives carry
//! counts and displacements as C ints inside, so a count or displacement
//! above 2147483647 is refused with MPI_ERR_COUNT or MPI_ERR_ARG naming the
//! argument and its value (docs/status.md).

use super::{basic_size, in_place, local_size, neighbors, root_info};
use crate::abi::consts::*;
use crate::abi::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Op, MPI_Request};
use crate::core::error::Result;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

/// A count argument as the int paths take it.
pub(crate) fn int_count(v: MPI_Count, name: &str) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| {
        if v < 0 {
            err!(MPI_ERR_COUNT, "{name}={v} must be non-negative")
        } else {
            err!(
                MPI_ERR_COUNT,
                "{name}={v}: counts above {} are not supported",
                c_int::MAX
            )
        }
    })
}

/// A per-rank array converted to ints; NULL stays NULL, for the int path
/// to report (or to ignore where the array is not significant).
pub(crate) struct Ints(Option<Vec<c_int>>);

impl Ints {
    fn none() -> Self {
        Ints(None)
    }
    pub(crate) fn ptr(&self) -> *const c_int {
        self.0.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
    }
}

/// # Safety
/// `p` is NULL or points to `n` entries.
pub(crate) unsafe fn convert<T: Copy>(
    p: *const T,
    n: usize,
    name: &str,
    conv: impl Fn(T, &str) -> Result<c_int>,
) -> Result<Ints> {
    if p.is_null() {
        return Ok(Ints::none());
    }
    // SAFETY: the caller's contract.
    let a = unsafe { std::slice::from_raw_parts(p, n) };
    let v = a
        .iter()
        .enumerate()
        .map(|(i, &x)| conv(x, &format!("{name}[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Ints(Some(v)))
}

/// `n` counts of an `MPI_Count` array.
///
/// # Safety
/// `p` is NULL or points to `n` entries.
unsafe fn int_counts(p: *const MPI_Count, n: usize, name: &str) -> Result<Ints> {
    // SAFETY: the caller's contract.
    unsafe { convert(p, n, name, int_count) }
}

/// `n` displacements of an `MPI_Aint` array.
///
/// # Safety
/// `p` is NULL or points to `n` entries.
unsafe fn int_displs(p: *const MPI_Aint, n: usize, name: &str) -> Result<Ints> {
    // SAFETY: the caller's contract.
    unsafe {
        convert(p, n, name, |v, name| {
            c_int::try_from(v).map_err(|_| {
                err!(
                    MPI_ERR_ARG,
                    "{name}={v}: displacements beyond {} are not supported",
                    c_int::MAX
                )
            })
        })
    }
}

/// Keeps the converted arrays of a persistent collective alive as long as
/// its request: the int path reads them at each MPI_Start.
///
/// # Safety
/// `request` holds the handle the int path just wrote.
unsafe fn keep<T: 'static>(request: *mut MPI_Request, arrays: T) -> Result<()> {
    // SAFETY: written by the successful call before.
    let h = unsafe { *request };
    crate::core::runtime::with(|st| {
        let rid = crate::abi::handles::index(h, crate::abi::handles::KIND_REQUEST)
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request={h} is not a request"))?;
        let r = st
            .reqs
            .get_mut(rid)
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request={h} is gone"))?;
        let f = r
            .coll_factory
            .take()
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request={h} is not a persistent collective"))?;
        let inner = *f;
        r.coll_factory = Some(Box::new(std::rc::Rc::new(move || {
            let _ = &arrays;
            inner()
        })));
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_c(
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    super::__oxmpi_body_MPI_Bcast(buffer, count, datatype, root, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast_c(
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Ibcast(buffer, count, datatype, root, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    super::__oxmpi_body_MPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Ireduce(
        sendbuf, recvbuf, count, datatype, op, root, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    super::__oxmpi_body_MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Gather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Igather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Igather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let (n, root_here) = root_info(comm, root)?;
    let recvcounts = if root_here {
        int_counts(recvcounts, n, "recvcounts")?
    } else {
        Ints::none()
    };
    let displs = if root_here {
        int_displs(displs, n, "displs")?
    } else {
        Ints::none()
    };
    super::__oxmpi_body_MPI_Gatherv(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        root,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Igatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let (n, root_here) = root_info(comm, root)?;
    let recvcounts = if root_here {
        int_counts(recvcounts, n, "recvcounts")?
    } else {
        Ints::none()
    };
    let displs = if root_here {
        int_displs(displs, n, "displs")?
    } else {
        Ints::none()
    };
    super::forms::__oxmpi_body_MPI_Igatherv(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        root,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Scatter(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatter_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Iscatter(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let recvcount = int_count(recvcount, "recvcount")?;
    let (n, root_here) = root_info(comm, root)?;
    let sendcounts = if root_here {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let displs = if root_here {
        int_displs(displs, n, "displs")?
    } else {
        Ints::none()
    };
    super::__oxmpi_body_MPI_Scatterv(
        sendbuf,
        sendcounts.ptr(),
        displs.ptr(),
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatterv_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let recvcount = int_count(recvcount, "recvcount")?;
    let (n, root_here) = root_info(comm, root)?;
    let sendcounts = if root_here {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let displs = if root_here {
        int_displs(displs, n, "displs")?
    } else {
        Ints::none()
    };
    super::forms::__oxmpi_body_MPI_Iscatterv(
        sendbuf,
        sendcounts.ptr(),
        displs.ptr(),
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Allgather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Iallgather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let n = basic_size(comm)?;
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let displs = int_displs(displs, n, "displs")?;
    super::__oxmpi_body_MPI_Allgatherv(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let n = basic_size(comm)?;
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let displs = int_displs(displs, n, "displs")?;
    super::forms::__oxmpi_body_MPI_Iallgatherv(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Alltoall(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoall_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Ialltoall(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let n = basic_size(comm)?;
    let sendcounts = if !in_place(sendbuf) {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let sdispls = if !in_place(sendbuf) {
        int_displs(sdispls, n, "sdispls")?
    } else {
        Ints::none()
    };
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let rdispls = int_displs(rdispls, n, "rdispls")?;
    super::__oxmpi_body_MPI_Alltoallv(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtype,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let n = basic_size(comm)?;
    let sendcounts = if !in_place(sendbuf) {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let sdispls = if !in_place(sendbuf) {
        int_displs(sdispls, n, "sdispls")?
    } else {
        Ints::none()
    };
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let rdispls = int_displs(rdispls, n, "rdispls")?;
    super::forms::__oxmpi_body_MPI_Ialltoallv(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtype,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_block_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Ireduce_scatter_block(
        sendbuf, recvbuf, recvcount, datatype, op, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let n = local_size(comm)?;
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    super::__oxmpi_body_MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts.ptr(), datatype, op, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let n = local_size(comm)?;
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    super::forms::__oxmpi_body_MPI_Ireduce_scatter(
        sendbuf,
        recvbuf,
        recvcounts.ptr(),
        datatype,
        op,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    super::__oxmpi_body_MPI_Scan(sendbuf, recvbuf, count, datatype, op, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let count = int_count(count, "count")?;
    super::__oxmpi_body_MPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iexscan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let n = basic_size(comm)?;
    let sendcounts = if !in_place(sendbuf) {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let sdispls = if !in_place(sendbuf) {
        int_displs(sdispls, n, "sdispls")?
    } else {
        Ints::none()
    };
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let rdispls = int_displs(rdispls, n, "rdispls")?;
    super::__oxmpi_body_MPI_Alltoallw(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtypes,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtypes,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let n = basic_size(comm)?;
    let sendcounts = if !in_place(sendbuf) {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let sdispls = if !in_place(sendbuf) {
        int_displs(sdispls, n, "sdispls")?
    } else {
        Ints::none()
    };
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let rdispls = int_displs(rdispls, n, "rdispls")?;
    super::forms::__oxmpi_body_MPI_Ialltoallw(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtypes,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtypes,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Neighbor_allgather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_allgather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Ineighbor_allgather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let (si, _) = neighbors(comm)?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    let displs = int_displs(displs, si.len(), "displs")?;
    super::__oxmpi_body_MPI_Neighbor_allgatherv(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_allgatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let (si, _) = neighbors(comm)?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    let displs = int_displs(displs, si.len(), "displs")?;
    super::forms::__oxmpi_body_MPI_Ineighbor_allgatherv(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoall_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::__oxmpi_body_MPI_Neighbor_alltoall(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_alltoall_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Ineighbor_alltoall(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let (si, so) = neighbors(comm)?;
    let sendcounts = int_counts(sendcounts, so.len(), "sendcounts")?;
    let sdispls = int_displs(sdispls, so.len(), "sdispls")?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    let rdispls = int_displs(rdispls, si.len(), "rdispls")?;
    super::__oxmpi_body_MPI_Neighbor_alltoallv(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtype,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let (si, so) = neighbors(comm)?;
    let sendcounts = int_counts(sendcounts, so.len(), "sendcounts")?;
    let sdispls = int_displs(sdispls, so.len(), "sdispls")?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    let rdispls = int_displs(rdispls, si.len(), "rdispls")?;
    super::forms::__oxmpi_body_MPI_Ineighbor_alltoallv(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtype,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let (si, so) = neighbors(comm)?;
    let sendcounts = int_counts(sendcounts, so.len(), "sendcounts")?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    super::__oxmpi_body_MPI_Neighbor_alltoallw(
        sendbuf,
        sendcounts.ptr(),
        sdispls,
        sendtypes,
        recvbuf,
        recvcounts.ptr(),
        rdispls,
        recvtypes,
        comm,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let (si, so) = neighbors(comm)?;
    let sendcounts = int_counts(sendcounts, so.len(), "sendcounts")?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    super::forms::__oxmpi_body_MPI_Ineighbor_alltoallw(
        sendbuf,
        sendcounts.ptr(),
        sdispls,
        sendtypes,
        recvbuf,
        recvcounts.ptr(),
        rdispls,
        recvtypes,
        comm,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_init_c(
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Bcast_init(buffer, count, datatype, root, comm, info, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Reduce_init(
        sendbuf, recvbuf, count, datatype, op, root, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Allreduce_init(
        sendbuf, recvbuf, count, datatype, op, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Gather_init(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let (n, root_here) = root_info(comm, root)?;
    let recvcounts = if root_here {
        int_counts(recvcounts, n, "recvcounts")?
    } else {
        Ints::none()
    };
    let displs = if root_here {
        int_displs(displs, n, "displs")?
    } else {
        Ints::none()
    };
    super::forms::__oxmpi_body_MPI_Gatherv_init(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        root,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (recvcounts, displs))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Scatter_init(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv_init_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let recvcount = int_count(recvcount, "recvcount")?;
    let (n, root_here) = root_info(comm, root)?;
    let sendcounts = if root_here {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let displs = if root_here {
        int_displs(displs, n, "displs")?
    } else {
        Ints::none()
    };
    super::forms::__oxmpi_body_MPI_Scatterv_init(
        sendbuf,
        sendcounts.ptr(),
        displs.ptr(),
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (sendcounts, displs))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Allgather_init(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let n = basic_size(comm)?;
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let displs = int_displs(displs, n, "displs")?;
    super::forms::__oxmpi_body_MPI_Allgatherv_init(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (recvcounts, displs))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Alltoall_init(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv_init_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let n = basic_size(comm)?;
    let sendcounts = if !in_place(sendbuf) {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let sdispls = if !in_place(sendbuf) {
        int_displs(sdispls, n, "sdispls")?
    } else {
        Ints::none()
    };
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let rdispls = int_displs(rdispls, n, "rdispls")?;
    super::forms::__oxmpi_body_MPI_Alltoallv_init(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtype,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (sendcounts, sdispls, recvcounts, rdispls))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Reduce_scatter_block_init(
        sendbuf, recvbuf, recvcount, datatype, op, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let n = local_size(comm)?;
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    super::forms::__oxmpi_body_MPI_Reduce_scatter_init(
        sendbuf,
        recvbuf,
        recvcounts.ptr(),
        datatype,
        op,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (recvcounts,))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Scan_init(
        sendbuf, recvbuf, count, datatype, op, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let count = int_count(count, "count")?;
    super::forms::__oxmpi_body_MPI_Exscan_init(
        sendbuf, recvbuf, count, datatype, op, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw_init_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let n = basic_size(comm)?;
    let sendcounts = if !in_place(sendbuf) {
        int_counts(sendcounts, n, "sendcounts")?
    } else {
        Ints::none()
    };
    let sdispls = if !in_place(sendbuf) {
        int_displs(sdispls, n, "sdispls")?
    } else {
        Ints::none()
    };
    let recvcounts = int_counts(recvcounts, n, "recvcounts")?;
    let rdispls = int_displs(rdispls, n, "rdispls")?;
    super::forms::__oxmpi_body_MPI_Alltoallw_init(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtypes,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtypes,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (sendcounts, sdispls, recvcounts, rdispls))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgather_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Neighbor_allgather_init(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoall_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let recvcount = int_count(recvcount, "recvcount")?;
    super::forms::__oxmpi_body_MPI_Neighbor_alltoall_init(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgatherv_init_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    displs: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let sendcount = int_count(sendcount, "sendcount")?;
    let (si, _) = neighbors(comm)?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    let displs = int_displs(displs, si.len(), "displs")?;
    super::forms::__oxmpi_body_MPI_Neighbor_allgatherv_init(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        displs.ptr(),
        recvtype,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (recvcounts, displs))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallv_init_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let (si, so) = neighbors(comm)?;
    let sendcounts = int_counts(sendcounts, so.len(), "sendcounts")?;
    let sdispls = int_displs(sdispls, so.len(), "sdispls")?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    let rdispls = int_displs(rdispls, si.len(), "rdispls")?;
    super::forms::__oxmpi_body_MPI_Neighbor_alltoallv_init(
        sendbuf,
        sendcounts.ptr(),
        sdispls.ptr(),
        sendtype,
        recvbuf,
        recvcounts.ptr(),
        rdispls.ptr(),
        recvtype,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (sendcounts, sdispls, recvcounts, rdispls))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallw_init_c(
    sendbuf: *const c_void,
    sendcounts: *const MPI_Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const MPI_Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let (si, so) = neighbors(comm)?;
    let sendcounts = int_counts(sendcounts, so.len(), "sendcounts")?;
    let recvcounts = int_counts(recvcounts, si.len(), "recvcounts")?;
    super::forms::__oxmpi_body_MPI_Neighbor_alltoallw_init(
        sendbuf,
        sendcounts.ptr(),
        sdispls,
        sendtypes,
        recvbuf,
        recvcounts.ptr(),
        rdispls,
        recvtypes,
        comm,
        info,
        request,
    )?;
    // The int path reads the arrays at each MPI_Start.
    keep(request, (sendcounts, recvcounts))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local_c(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> c_int {
    let count = int_count(count, "count")?;
    crate::abi::op::__oxmpi_body_MPI_Reduce_local(inbuf, inoutbuf, count, datatype, op)
}
