//! Collective entry points (blocking): validate, then run the algorithms of
//! `coll::basic` outside the library lock. Contiguous (predefined) datatypes.

use super::consts::*;
use super::datatype::{describe, size_and_type};
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

/// Bytes of `count` elements of a predefined or dense datatype (see `block_size`).
fn size_of(count: c_int, dt: MPI_Datatype, what: &str) -> Result<usize> {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "{what}={count} must be non-negative"));
    }
    Ok(count as usize * block_size(dt)?)
}

/// Size of one element for the block arithmetic of gather/scatter-like calls,
/// which supports predefined and dense (contiguous, extent == size) types.
fn block_size(dt: MPI_Datatype) -> Result<usize> {
    let (size, t) = size_and_type(dt)?;
    if let Some(t) = t {
        if !(t.is_contiguous(2) && t.lb == 0) {
            return Err(err!(
                MPI_ERR_TYPE,
                "non-contiguous derived datatypes in this collective are not implemented yet"
            ));
        }
    }
    Ok(size)
}

/// The element type and count a reduction works on (derived types must be made of one basic type).
fn reduction_type(dt: MPI_Datatype, count: c_int) -> Result<(MPI_Datatype, usize)> {
    let (_, t) = size_and_type(dt)?;
    match t {
        None => Ok((dt, count.max(0) as usize)),
        Some(t) => t
            .homogeneous()
            .map(|(b, n)| (b, n * count.max(0) as usize))
            .ok_or_else(|| {
                err!(
                    MPI_ERR_OP,
                    "reductions on a datatype mixing basic types are not defined"
                )
            }),
    }
}

/// The bytes of `count` elements of `dt` at `p`, packed if the type is not contiguous.
unsafe fn bytes_typed<'a>(
    p: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    if in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed here"
        ));
    }
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        None if d.bytes == 0 => std::borrow::Cow::Borrowed(&[][..]),
        // SAFETY: a contiguous range of d.bytes bytes (describe checked NULL).
        None => std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(d.ptr, d.bytes) }),
        Some(t) => {
            let mut v = vec![0u8; d.bytes];
            // SAFETY: the buffer holds count elements of t (MPI's rule).
            unsafe { crate::datatype::pack(&t, count as usize, p as *const u8, &mut v) };
            std::borrow::Cow::Owned(v)
        }
    })
}

/// A receive area for `count` elements of `dt` at `p`: the user memory when
/// contiguous, else a staging buffer unpacked by `finish`.
struct OutBuf<'a> {
    direct: Option<&'a mut [u8]>,
    staged: Vec<u8>,
    unpack: Option<(std::sync::Arc<crate::datatype::Type>, usize, *mut u8)>,
}

impl OutBuf<'_> {
    fn slice(&mut self) -> &mut [u8] {
        match self.direct.as_mut() {
            Some(d) => d,
            None => &mut self.staged,
        }
    }
    fn finish(self) {
        if let Some((t, n, dst)) = self.unpack {
            // SAFETY: dst holds n elements of t (MPI's rule for receive buffers).
            unsafe { crate::datatype::unpack(&t, n, &self.staged, dst) };
        }
    }
}

unsafe fn out_typed<'a>(
    p: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<OutBuf<'a>> {
    if in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed here"
        ));
    }
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        None if d.bytes == 0 => OutBuf {
            direct: Some(&mut []),
            staged: vec![],
            unpack: None,
        },
        None => OutBuf {
            // SAFETY: a contiguous range of d.bytes bytes (describe checked NULL).
            direct: Some(unsafe { std::slice::from_raw_parts_mut(d.ptr, d.bytes) }),
            staged: vec![],
            unpack: None,
        },
        Some(t) => {
            let mut v = vec![0u8; d.bytes];
            // Start from the current contents (in-place reductions read them).
            // SAFETY: as for bytes_typed.
            unsafe { crate::datatype::pack(&t, count as usize, p as *const u8, &mut v) };
            OutBuf {
                direct: None,
                staged: v,
                unpack: Some((t, count as usize, p as *mut u8)),
            }
        }
    })
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
    let mut b = out_typed(buffer, count, datatype, "buffer")?;
    basic::bcast(&v, b.slice(), root)?;
    b.finish();
    Ok(())
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
    let (et, ne) = reduction_type(datatype, count)?;
    let k = lookup(op)?;
    op_check(&k, et)?;
    let me_root = v.rank == root;
    let mut acc = if me_root && in_place(sendbuf) {
        bytes_typed(recvbuf, count, datatype, "recvbuf")?.into_owned()
    } else {
        bytes_typed(sendbuf, count, datatype, "sendbuf")?.into_owned()
    };
    basic::reduce(&v, &mut acc, &k, et, ne, root, is_commutative(&k))?;
    if me_root {
        let mut o = out_typed(recvbuf, count, datatype, "recvbuf")?;
        o.slice().copy_from_slice(&acc);
        o.finish();
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
    let (et, ne) = reduction_type(datatype, count)?;
    let k = lookup(op)?;
    op_check(&k, et)?;
    let mut acc = if in_place(sendbuf) {
        bytes_typed(recvbuf, count, datatype, "recvbuf")?.into_owned()
    } else {
        bytes_typed(sendbuf, count, datatype, "sendbuf")?.into_owned()
    };
    basic::allreduce(&v, &mut acc, &k, et, ne, is_commutative(&k))?;
    let mut o = out_typed(recvbuf, count, datatype, "recvbuf")?;
    o.slice().copy_from_slice(&acc);
    o.finish();
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
        if me_root { block_size(recvtype)? } else { 0 },
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
            block_size(recvtype)?,
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
        blocks(&vec![sendcount; v.size], None, block_size(sendtype)?)?
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
            block_size(sendtype)?,
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
    let (bl, end) = blocks(&vec![recvcount; v.size], None, block_size(recvtype)?)?;
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
        block_size(recvtype)?,
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
    let (rbl, rend) = blocks(&vec![recvcount; v.size], None, block_size(recvtype)?)?;
    let rbuf = bytes_mut(recvbuf, rend, "recvbuf")?;
    let (sbl, sdata) = if in_place(sendbuf) {
        (rbl.clone(), rbuf.to_vec())
    } else {
        let (sbl, send) = blocks(&vec![sendcount; v.size], None, block_size(sendtype)?)?;
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
        block_size(recvtype)?,
    )?;
    let rbuf = bytes_mut(recvbuf, rend, "recvbuf")?;
    let (sbl, sdata) = if in_place(sendbuf) {
        (rbl.clone(), rbuf.to_vec())
    } else {
        let (sbl, send) = blocks(
            ints(sendcounts, v.size, "sendcounts")?,
            Some(ints(sdispls, v.size, "sdispls")?),
            block_size(sendtype)?,
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
        let es = block_size(datatype)?;
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
        let (et, ne) = reduction_type(datatype, count)?;
        let k = lookup(op)?;
        op_check(&k, et)?;
        let mut acc = if in_place(sendbuf) {
            bytes_typed(recvbuf, count, datatype, "recvbuf")?.into_owned()
        } else {
            bytes_typed(sendbuf, count, datatype, "sendbuf")?.into_owned()
        };
        basic::scan(&v, &mut acc, &k, et, ne, exclusive)?;
        if !(exclusive && v.rank == 0) {
            let mut o = out_typed(recvbuf, count, datatype, "recvbuf")?;
            o.slice().copy_from_slice(&acc);
            o.finish();
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
