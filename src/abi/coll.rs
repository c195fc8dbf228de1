//! Collective entry points (blocking): validate, then run the algorithms of
//! `coll::basic` outside the library lock. Contiguous (predefined) datatypes.

use super::consts::*;
use super::handles;
use super::op::{check as op_check, is_commutative, lookup};
use super::{MPI_Comm, MPI_Datatype, MPI_Op};
use crate::coll::basic::{self, View};
use crate::core::error::Result;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

fn in_place(p: *const c_void) -> bool {
    p as isize == -1
}

fn size_of(count: c_int, dt: MPI_Datatype, what: &str) -> Result<usize> {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "{what}={count} must be non-negative"));
    }
    Ok(count as usize * handles::type_size(dt)?)
}

/// A byte view of a user buffer; NULL is allowed for zero bytes.
unsafe fn bytes<'a>(p: *const c_void, n: usize, name: &str) -> Result<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}={} with {n} bytes to transfer",
            if p.is_null() { "NULL" } else { "MPI_IN_PLACE" }
        ));
    }
    // SAFETY: the caller passes a buffer of n bytes (MPI's contract).
    Ok(unsafe { std::slice::from_raw_parts(p as *const u8, n) })
}

unsafe fn bytes_mut<'a>(p: *mut c_void, n: usize, name: &str) -> Result<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}={} with {n} bytes to transfer",
            if p.is_null() { "NULL" } else { "MPI_IN_PLACE" }
        ));
    }
    // SAFETY: as above.
    Ok(unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) })
}

fn check_root(v: &View, root: c_int) -> Result<usize> {
    if root < 0 || root as usize >= v.size {
        return Err(err!(
            MPI_ERR_ROOT,
            "root={root} is not a rank of the communicator (size {})",
            v.size
        ));
    }
    Ok(root as usize)
}

unsafe fn ints<'a>(p: *const c_int, n: usize, name: &str) -> Result<&'a [c_int]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL"));
    }
    // SAFETY: an array of one entry per rank (caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// (offset, len) in bytes of each rank's block from counts and displacements.
fn blocks(
    counts: &[c_int],
    displs: Option<&[c_int]>,
    esize: usize,
) -> Result<(Vec<(usize, usize)>, usize)> {
    let mut v = Vec::with_capacity(counts.len());
    let mut end = 0;
    let mut off = 0usize;
    for (i, &c) in counts.iter().enumerate() {
        if c < 0 {
            return Err(err!(MPI_ERR_COUNT, "counts[{i}]={c} must be non-negative"));
        }
        let o = match displs {
            Some(d) => {
                if d[i] < 0 {
                    return Err(err!(
                        MPI_ERR_ARG,
                        "displs[{i}]={} must be non-negative",
                        d[i]
                    ));
                }
                d[i] as usize * esize
            }
            None => off,
        };
        let l = c as usize * esize;
        v.push((o, l));
        off = o + l;
        end = end.max(o + l);
    }
    Ok((v, end))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    let v = basic::view(comm)?;
    basic::barrier(&v)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let n = size_of(count, datatype, "count")?;
    let b = bytes_mut(buffer, n, "buffer")?;
    basic::bcast(&v, b, root)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let n = size_of(count, datatype, "count")?;
    let k = lookup(op)?;
    op_check(&k, datatype)?;
    let me_root = v.rank == root;
    let mut acc = if me_root && in_place(sendbuf) {
        bytes(recvbuf, n, "recvbuf")?.to_vec()
    } else {
        bytes(sendbuf, n, "sendbuf")?.to_vec()
    };
    basic::reduce(
        &v,
        &mut acc,
        &k,
        datatype,
        count as usize,
        root,
        is_commutative(&k),
    )?;
    if me_root {
        bytes_mut(recvbuf, n, "recvbuf")?.copy_from_slice(&acc);
    }
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let n = size_of(count, datatype, "count")?;
    let k = lookup(op)?;
    op_check(&k, datatype)?;
    let mut acc = if in_place(sendbuf) {
        bytes(recvbuf, n, "recvbuf")?.to_vec()
    } else {
        bytes(sendbuf, n, "sendbuf")?.to_vec()
    };
    basic::allreduce(
        &v,
        &mut acc,
        &k,
        datatype,
        count as usize,
        is_commutative(&k),
    )?;
    bytes_mut(recvbuf, n, "recvbuf")?.copy_from_slice(&acc);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let me_root = v.rank == root;
    let rn = if me_root {
        size_of(recvcount, recvtype, "recvcount")?
    } else {
        0
    };
    let counts = vec![recvcount.max(0); v.size];
    let (bl, end) = blocks(
        &counts,
        None,
        if me_root {
            handles::type_size(recvtype)?
        } else {
            0
        },
    )?;
    let _ = rn;
    let mine = if me_root && in_place(sendbuf) {
        None
    } else {
        Some(bytes(
            sendbuf,
            size_of(sendcount, sendtype, "sendcount")?,
            "sendbuf",
        )?)
    };
    let rbuf = if me_root {
        bytes_mut(recvbuf, end, "recvbuf")?
    } else {
        &mut [][..]
    };
    basic::gatherv(&v, mine, rbuf, &bl, root)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let me_root = v.rank == root;
    let (bl, end) = if me_root {
        blocks(
            ints(recvcounts, v.size, "recvcounts")?,
            Some(ints(displs, v.size, "displs")?),
            handles::type_size(recvtype)?,
        )?
    } else {
        (vec![(0, 0); v.size], 0)
    };
    let mine = if me_root && in_place(sendbuf) {
        None
    } else {
        Some(bytes(
            sendbuf,
            size_of(sendcount, sendtype, "sendcount")?,
            "sendbuf",
        )?)
    };
    let rbuf = if me_root {
        bytes_mut(recvbuf, end, "recvbuf")?
    } else {
        &mut [][..]
    };
    basic::gatherv(&v, mine, rbuf, &bl, root)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let me_root = v.rank == root;
    let (bl, end) = if me_root {
        blocks(
            &vec![sendcount; v.size],
            None,
            handles::type_size(sendtype)?,
        )?
    } else {
        (vec![(0, 0); v.size], 0)
    };
    let sbuf = if me_root {
        bytes(sendbuf, end, "sendbuf")?
    } else {
        &[][..]
    };
    let outb = if me_root && in_place(recvbuf) {
        None
    } else {
        Some(bytes_mut(
            recvbuf,
            size_of(recvcount, recvtype, "recvcount")?,
            "recvbuf",
        )?)
    };
    basic::scatterv(&v, sbuf, &bl, outb, root)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let me_root = v.rank == root;
    let (bl, end) = if me_root {
        blocks(
            ints(sendcounts, v.size, "sendcounts")?,
            Some(ints(displs, v.size, "displs")?),
            handles::type_size(sendtype)?,
        )?
    } else {
        (vec![(0, 0); v.size], 0)
    };
    let sbuf = if me_root {
        bytes(sendbuf, end, "sendbuf")?
    } else {
        &[][..]
    };
    let outb = if me_root && in_place(recvbuf) {
        None
    } else {
        Some(bytes_mut(
            recvbuf,
            size_of(recvcount, recvtype, "recvcount")?,
            "recvbuf",
        )?)
    };
    basic::scatterv(&v, sbuf, &bl, outb, root)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let (bl, end) = blocks(
        &vec![recvcount; v.size],
        None,
        handles::type_size(recvtype)?,
    )?;
    let rbuf = bytes_mut(recvbuf, end, "recvbuf")?;
    if !in_place(sendbuf) {
        let s = bytes(
            sendbuf,
            size_of(sendcount, sendtype, "sendcount")?,
            "sendbuf",
        )?;
        let (o, l) = bl[v.rank];
        if s.len() != l {
            return Err(err!(
                MPI_ERR_TRUNCATE,
                "sendcount gives {} bytes but recvcount {l}",
                s.len()
            ));
        }
        rbuf[o..o + l].copy_from_slice(s);
    }
    basic::allgatherv(&v, rbuf, &bl)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let (bl, end) = blocks(
        ints(recvcounts, v.size, "recvcounts")?,
        Some(ints(displs, v.size, "displs")?),
        handles::type_size(recvtype)?,
    )?;
    let rbuf = bytes_mut(recvbuf, end, "recvbuf")?;
    if !in_place(sendbuf) {
        let s = bytes(
            sendbuf,
            size_of(sendcount, sendtype, "sendcount")?,
            "sendbuf",
        )?;
        let (o, l) = bl[v.rank];
        if s.len() != l {
            return Err(err!(
                MPI_ERR_TRUNCATE,
                "sendcount gives {} bytes but recvcounts[{}] {l}",
                s.len(),
                v.rank
            ));
        }
        rbuf[o..o + l].copy_from_slice(s);
    }
    basic::allgatherv(&v, rbuf, &bl)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let (rbl, rend) = blocks(
        &vec![recvcount; v.size],
        None,
        handles::type_size(recvtype)?,
    )?;
    let rbuf = bytes_mut(recvbuf, rend, "recvbuf")?;
    let (sbl, sdata) = if in_place(sendbuf) {
        (rbl.clone(), rbuf.to_vec())
    } else {
        let (sbl, send) = blocks(
            &vec![sendcount; v.size],
            None,
            handles::type_size(sendtype)?,
        )?;
        (sbl, bytes(sendbuf, send, "sendbuf")?.to_vec())
    };
    basic::alltoallv(&v, &sdata, &sbl, rbuf, &rbl)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let (rbl, rend) = blocks(
        ints(recvcounts, v.size, "recvcounts")?,
        Some(ints(rdispls, v.size, "rdispls")?),
        handles::type_size(recvtype)?,
    )?;
    let rbuf = bytes_mut(recvbuf, rend, "recvbuf")?;
    let (sbl, sdata) = if in_place(sendbuf) {
        (rbl.clone(), rbuf.to_vec())
    } else {
        let (sbl, send) = blocks(
            ints(sendcounts, v.size, "sendcounts")?,
            Some(ints(sdispls, v.size, "sdispls")?),
            handles::type_size(sendtype)?,
        )?;
        (sbl, bytes(sendbuf, send, "sendbuf")?.to_vec())
    };
    basic::alltoallv(&v, &sdata, &sbl, rbuf, &rbl)
}

unsafe fn reduce_scatter_impl(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[c_int],
    datatype: MPI_Datatype,
    op: MPI_Op,
    v: &View,
) -> Result<()> {
    // SAFETY: the buffers and arrays are valid as MPI requires of the caller.
    unsafe {
        let es = handles::type_size(datatype)?;
        let (bl, end) = blocks(counts, None, es)?;
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let k = lookup(op)?;
        op_check(&k, datatype)?;
        let mut acc = if in_place(sendbuf) {
            bytes(recvbuf, end, "recvbuf")?.to_vec()
        } else {
            bytes(sendbuf, end, "sendbuf")?.to_vec()
        };
        basic::reduce(v, &mut acc, &k, datatype, total, 0, is_commutative(&k))?;
        let (_, mylen) = bl[v.rank];
        let out = bytes_mut(recvbuf, mylen, "recvbuf")?;
        basic::scatterv(v, &acc, &bl, Some(out), 0)
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    reduce_scatter_impl(sendbuf, recvbuf, &vec![recvcount; v.size], datatype, op, &v)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let v = basic::view(comm)?;
    let counts = ints(recvcounts, v.size, "recvcounts")?.to_vec();
    reduce_scatter_impl(sendbuf, recvbuf, &counts, datatype, op, &v)
}

unsafe fn scan_impl(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> Result<()> {
    // SAFETY: the buffers and arrays are valid as MPI requires of the caller.
    unsafe {
        let v = basic::view(comm)?;
        let n = size_of(count, datatype, "count")?;
        let k = lookup(op)?;
        op_check(&k, datatype)?;
        let mut acc = if in_place(sendbuf) {
            bytes(recvbuf, n, "recvbuf")?.to_vec()
        } else {
            bytes(sendbuf, n, "sendbuf")?.to_vec()
        };
        basic::scan(&v, &mut acc, &k, datatype, count as usize, exclusive)?;
        if !(exclusive && v.rank == 0) {
            bytes_mut(recvbuf, n, "recvbuf")?.copy_from_slice(&acc);
        }
        Ok(())
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    scan_impl(sendbuf, recvbuf, count, datatype, op, comm, false)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    scan_impl(sendbuf, recvbuf, count, datatype, op, comm, true)
}
