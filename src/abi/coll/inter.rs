//! Collectives on intercommunicators: the arguments of each call
//! converted into schedule locations (packing what is not contiguous, the
//! root argument's role), then the schedule built by `coll::inter` (whose
//! module doc has the algorithms).

use super::*;
use crate::coll::inter::{self as ci, Inter, Role};

pub(super) use crate::coll::inter::view;

fn no_in_place(p: *const c_void, name: &str) -> Result<()> {
    if in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed on an intercommunicator"
        ));
    }
    Ok(())
}

pub(super) fn barrier(v: &Inter) -> Sched {
    ci::barrier(v)
}

pub(super) fn bcast(
    v: &Inter,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match ci::root_role(v, root)? {
        Role::Idle => {}
        Role::Root => {
            let (b, len) = input(&mut s, buffer, count, datatype, "buffer")?;
            ci::bcast_from_root(&mut s, v, b, len);
        }
        Role::Remote(r) => {
            let (b, len, unpack) = output(&mut s, buffer, count, datatype, "buffer")?;
            ci::bcast_to_group(&mut s, v, r, b, len);
            finish(&mut s, unpack);
        }
    }
    Ok(s)
}

/// This group's `sendbuf` reduced to local rank 0 (the accumulator and its
/// length).
fn reduce_group(
    s: &mut Sched,
    v: &Inter,
    sendbuf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Result<(Loc, usize)> {
    no_in_place(sendbuf, "sendbuf")?;
    let (ne, commutative) = reduction_setup(s, op, datatype, count)?;
    let (src, len) = input(s, sendbuf, count, datatype, "sendbuf")?;
    Ok((ci::reduce_group(s, v, src, len, ne, commutative), len))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn reduce(
    v: &Inter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match ci::root_role(v, root)? {
        Role::Idle => {}
        Role::Root => {
            let (b, len, unpack) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
            ci::reduce_at_root(&mut s, v, b, len);
            finish(&mut s, unpack);
        }
        Role::Remote(r) => {
            let (acc, len) = reduce_group(&mut s, v, sendbuf, count.into(), datatype, op)?;
            ci::reduce_to_root(&mut s, v, r, acc, len);
        }
    }
    Ok(s)
}

pub(super) fn allreduce(
    v: &Inter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Result<Sched> {
    let mut s = v.sched();
    let (acc, len) = reduce_group(&mut s, v, sendbuf, count.into(), datatype, op)?;
    let (res, rlen, unpack) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
    ci::allreduce_swap(&mut s, v, acc, len, res, rlen);
    finish(&mut s, unpack);
    Ok(s)
}

/// Gather (counts given at the root) between the root and the remote group.
#[allow(clippy::too_many_arguments)]
pub(super) fn gather(
    v: &Inter,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: Option<&[i64]>,
    displs: Option<&[i64]>,
    recvtype: MPI_Datatype,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match ci::root_role(v, root)? {
        Role::Idle => {}
        Role::Root => {
            let counts = counts.unwrap_or(&[]);
            let (rbuf, bl, _, unpacks) = block_array(
                &mut s,
                recvbuf,
                counts,
                displs,
                recvtype,
                "recvbuf",
                true,
                &[],
            )?;
            ci::per_remote(s.stage(), v, rbuf, &bl, false);
            finish_all(&mut s, unpacks);
        }
        Role::Remote(r) => {
            no_in_place(sendbuf, "sendbuf")?;
            let (m, n) = input(&mut s, sendbuf, sendcount, sendtype, "sendbuf")?;
            ci::with_root(&mut s, v, r, m, n, true);
        }
    }
    Ok(s)
}

/// Scatter (counts given at the root) between the root and the remote group.
#[allow(clippy::too_many_arguments)]
pub(super) fn scatter(
    v: &Inter,
    sendbuf: *const c_void,
    counts: Option<&[i64]>,
    displs: Option<&[i64]>,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match ci::root_role(v, root)? {
        Role::Idle => {}
        Role::Root => {
            let counts = counts.unwrap_or(&[]);
            let (sbuf, bl, _, _) = block_array(
                &mut s,
                sendbuf,
                counts,
                displs,
                sendtype,
                "sendbuf",
                false,
                &[],
            )?;
            ci::per_remote(s.stage(), v, sbuf, &bl, true);
        }
        Role::Remote(r) => {
            no_in_place(recvbuf, "recvbuf")?;
            let (o, n, unpack) = output(&mut s, recvbuf, recvcount, recvtype, "recvbuf")?;
            ci::with_root(&mut s, v, r, o, n, false);
            finish(&mut s, unpack);
        }
    }
    Ok(s)
}

/// Allgather(v): this process's block to every remote process, one block
/// from each (`counts`/`displs` index the remote group).
#[allow(clippy::too_many_arguments)]
pub(super) fn allgather(
    v: &Inter,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: &[i64],
    displs: Option<&[i64]>,
    recvtype: MPI_Datatype,
) -> Result<Sched> {
    no_in_place(sendbuf, "sendbuf")?;
    let mut s = v.sched();
    let (rbuf, bl, _, unpacks) = block_array(
        &mut s,
        recvbuf,
        counts,
        displs,
        recvtype,
        "recvbuf",
        true,
        &[],
    )?;
    let (m, n) = input(&mut s, sendbuf, sendcount, sendtype, "sendbuf")?;
    let st = s.stage();
    ci::per_remote(st, v, rbuf, &bl, false);
    ci::per_remote(st, v, m, &vec![(0, n); v.nr], true);
    finish_all(&mut s, unpacks);
    Ok(s)
}

/// Alltoall(v): block j to remote rank j, block j from it.
#[allow(clippy::too_many_arguments)]
pub(super) fn alltoall(
    v: &Inter,
    sendbuf: *const c_void,
    scounts: &[i64],
    sdispls: Option<&[i64]>,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    rcounts: &[i64],
    rdispls: Option<&[i64]>,
    recvtype: MPI_Datatype,
) -> Result<Sched> {
    no_in_place(sendbuf, "sendbuf")?;
    let mut s = v.sched();
    let (rbuf, rbl, _, unpacks) = block_array(
        &mut s,
        recvbuf,
        rcounts,
        rdispls,
        recvtype,
        "recvbuf",
        true,
        &[],
    )?;
    let (sbuf, sbl, _, _) = block_array(
        &mut s,
        sendbuf,
        scounts,
        sdispls,
        sendtype,
        "sendbuf",
        false,
        &[],
    )?;
    let st = s.stage();
    ci::per_remote(st, v, rbuf, &rbl, false);
    ci::per_remote(st, v, sbuf, &sbl, true);
    finish_all(&mut s, unpacks);
    Ok(s)
}

/// The merged indices of the remote group, for `alltoallw_s`'s exchange.
pub(super) fn remote_peers(v: &Inter) -> Vec<i32> {
    v.remote_peers()
}

/// Reduce_scatter(_block): `counts` has one entry per local rank; both
/// groups' totals must agree.
pub(super) fn reduce_scatter(
    v: &Inter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[i64],
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Result<Sched> {
    let mut s = v.sched();
    let (bl, end, total) = scatter_layout(counts, datatype)?;
    let (acc, len) = reduce_group(&mut s, v, sendbuf, total, datatype, op)?;
    let got = Loc::Scratch(s.buffer_reused(end), 0);
    let (out, mylen, unpack) = output(&mut s, recvbuf, counts[v.lr], datatype, "recvbuf")?;
    ci::reduce_scatter_swap(&mut s, v, acc, len, got, end, &bl, (out, mylen));
    finish(&mut s, unpack);
    Ok(s)
}
