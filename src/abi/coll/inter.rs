//! Collectives on intercommunicators, as schedules over both groups.
//!
//! Both groups number every process of the two groups alike: the group
//! holding the lower world rank first, then the other (`Inter::all`). A
//! schedule over that merged numbering sends and receives with one context
//! (the intercommunicator's collective context) and one tag (both groups
//! count the collectives on the intercommunicator alike), and no two
//! processes share a number, so traffic within a group and between the
//! groups never mixes up. Steps within one group come from the
//! intracommunicator builders, renumbered by `on_group`.
//!
//! | call | schedule |
//! |---|---|
//! | barrier | dissemination over both groups |
//! | bcast | root → remote rank 0, binomial tree in the remote group |
//! | reduce | binomial reduce in the sending group to its rank 0 → root |
//! | allreduce | reduce in each group to rank 0, the two ranks 0 swap, bcast in each group |
//! | gather(v), scatter(v) | linear between the root and the remote group |
//! | allgather(v), alltoall(v,w) | every process with every remote process |
//! | reduce_scatter(_block) | reduce in each group to rank 0, the ranks 0 swap, scatterv in each group |
//!
//! Scan and exscan are not defined on intercommunicators (MPI_ERR_COMM).

use super::*;
use crate::coll::{allreduce, barrier, bcast, gather};

/// An intercommunicator as one collective call sees it.
pub(super) struct Inter {
    /// Both groups in the merged numbering.
    pub all: View,
    /// First merged index of the local and of the remote group.
    pub lbase: usize,
    pub rbase: usize,
    /// Sizes of the local and remote groups; this process's local rank.
    pub nl: usize,
    pub nr: usize,
    pub lr: usize,
}

impl Inter {
    fn sched(&self) -> Sched {
        basic::sched(&self.all)
    }

    /// Merged index of remote rank `j`.
    fn remote(&self, j: usize) -> usize {
        self.rbase + j
    }
}

/// The intercommunicator view of `comm` for its next collective call, or
/// None for an intracommunicator (which then takes the usual path).
pub(super) fn view(comm: MPI_Comm) -> Result<Option<Inter>> {
    with(|st| {
        let c = st.comm_mut(comm)?;
        let Some((world, lbase, rbase)) = c.both_groups() else {
            return Ok(None);
        };
        let tag = c.next_coll_tag();
        let (nl, lr) = (c.size as usize, c.rank as usize);
        let nr = world.len() - nl;
        Ok(Some(Inter {
            all: View {
                ctx: c.ctx + 1,
                size: world.len(),
                world,
                rank: lbase + lr,
                tag,
                comm,
            },
            lbase,
            rbase,
            nl,
            nr,
            lr,
        }))
    })
}

/// Runs an intracommunicator builder on the local group: the peers of the
/// sends and receives it adds (local ranks) become merged indices.
fn on_group(s: &mut Sched, base: usize, build: impl FnOnce(&mut Sched)) {
    let stage = s.stages.len().saturating_sub(1);
    let from = s.stages.last().map_or(0, |st| st.len());
    build(s);
    for (k, st) in s.stages.iter_mut().enumerate().skip(stage) {
        let skip = if k == stage { from } else { 0 };
        for step in st.iter_mut().skip(skip) {
            match step {
                Step::Send { peer, .. } | Step::Recv { peer, .. } => *peer += base,
                _ => {}
            }
        }
    }
}

/// The root argument of a rooted call: Some(true) at MPI_ROOT, Some(false)
/// at MPI_PROC_NULL (the root's group), None in the other group (the root
/// is then a remote rank, checked).
fn root_role(v: &Inter, root: c_int) -> Result<Option<bool>> {
    match root {
        MPI_ROOT => Ok(Some(true)),
        MPI_PROC_NULL => Ok(Some(false)),
        r if r >= 0 && (r as usize) < v.nr => Ok(None),
        r => Err(err!(
            MPI_ERR_ROOT,
            "root={r} must be MPI_ROOT, MPI_PROC_NULL or a rank of the remote group (size {}) on an intercommunicator",
            v.nr
        )),
    }
}

/// Block j of `at` (offset and length `bl[j]`) to remote rank j (`send`)
/// or from it, for every j, into stage `st`.
fn per_remote(st: &mut Vec<Step>, v: &Inter, at: Loc, bl: &[(usize, usize)], send: bool) {
    for (j, &(off, len)) in bl.iter().enumerate() {
        let (peer, at) = (v.remote(j), at.offset(off));
        st.push(if send {
            Step::Send { peer, at, len }
        } else {
            Step::Recv { peer, at, len }
        });
    }
}

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
    let mut s = v.sched();
    barrier::b_barrier(&mut s, v.all.size, v.all.rank);
    s
}

pub(super) fn bcast(
    v: &Inter,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match root_role(v, root)? {
        Some(false) => {}
        Some(true) => {
            let (b, len) = input(&mut s, buffer, count, datatype, "buffer")?;
            s.stage().push(Step::Send {
                peer: v.remote(0),
                at: b,
                len,
            });
        }
        None => {
            let (b, len, unpack) = output(&mut s, buffer, count, datatype, "buffer")?;
            if v.lr == 0 {
                s.stage().push(Step::Recv {
                    peer: v.remote(root as usize),
                    at: b,
                    len,
                });
            }
            on_group(&mut s, v.lbase, |s| {
                bcast::b_bcast(s, v.nl, v.lr, b, len, 0)
            });
            finish(&mut s, unpack);
        }
    }
    Ok(s)
}

/// Reduces this group's `sendbuf` to local rank 0 (into the returned
/// accumulator, `len` bytes).
fn reduce_group(
    s: &mut Sched,
    v: &Inter,
    sendbuf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Result<(Loc, usize)> {
    no_in_place(sendbuf, "sendbuf")?;
    let (ne, commutative) = reduction_setup(s, op, datatype, count)?;
    let (src, len) = input(s, sendbuf, count, datatype, "sendbuf")?;
    let acc = scratch_copy(s, src, len);
    let tmp = Loc::Scratch(s.buffer_reused(len), 0);
    on_group(s, v.lbase, |s| {
        allreduce::b_reduce(s, v.nl, v.lr, acc, tmp, len, ne, 0, commutative)
    });
    Ok((acc, len))
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
    match root_role(v, root)? {
        Some(false) => {}
        Some(true) => {
            let (b, len, unpack) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
            s.stage().push(Step::Recv {
                peer: v.remote(0),
                at: b,
                len,
            });
            finish(&mut s, unpack);
        }
        None => {
            let (acc, len) = reduce_group(&mut s, v, sendbuf, count, datatype, op)?;
            if v.lr == 0 {
                s.stage().push(Step::Send {
                    peer: v.remote(root as usize),
                    at: acc,
                    len,
                });
            }
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
    let (acc, len) = reduce_group(&mut s, v, sendbuf, count, datatype, op)?;
    let (res, rlen, unpack) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
    if v.lr == 0 {
        let st = s.stage();
        st.push(Step::Recv {
            peer: v.remote(0),
            at: res,
            len: rlen,
        });
        st.push(Step::Send {
            peer: v.remote(0),
            at: acc,
            len,
        });
    }
    on_group(&mut s, v.lbase, |s| {
        bcast::b_bcast(s, v.nl, v.lr, res, rlen, 0)
    });
    finish(&mut s, unpack);
    Ok(s)
}

/// Gather (counts given at the root) between the root and the remote group.
#[allow(clippy::too_many_arguments)]
pub(super) fn gather(
    v: &Inter,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: Option<&[c_int]>,
    displs: Option<&[c_int]>,
    recvtype: MPI_Datatype,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match root_role(v, root)? {
        Some(false) => {}
        Some(true) => {
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
            per_remote(s.stage(), v, rbuf, &bl, false);
            finish_all(&mut s, unpacks);
        }
        None => {
            no_in_place(sendbuf, "sendbuf")?;
            let (m, n) = input(&mut s, sendbuf, sendcount, sendtype, "sendbuf")?;
            s.stage().push(Step::Send {
                peer: v.remote(root as usize),
                at: m,
                len: n,
            });
        }
    }
    Ok(s)
}

/// Scatter (counts given at the root) between the root and the remote group.
#[allow(clippy::too_many_arguments)]
pub(super) fn scatter(
    v: &Inter,
    sendbuf: *const c_void,
    counts: Option<&[c_int]>,
    displs: Option<&[c_int]>,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
) -> Result<Sched> {
    let mut s = v.sched();
    match root_role(v, root)? {
        Some(false) => {}
        Some(true) => {
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
            per_remote(s.stage(), v, sbuf, &bl, true);
        }
        None => {
            no_in_place(recvbuf, "recvbuf")?;
            let (o, n, unpack) = output(&mut s, recvbuf, recvcount, recvtype, "recvbuf")?;
            s.stage().push(Step::Recv {
                peer: v.remote(root as usize),
                at: o,
                len: n,
            });
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
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: &[c_int],
    displs: Option<&[c_int]>,
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
    per_remote(st, v, rbuf, &bl, false);
    per_remote(st, v, m, &vec![(0, n); v.nr], true);
    finish_all(&mut s, unpacks);
    Ok(s)
}

/// Alltoall(v): block j to remote rank j, block j from it.
#[allow(clippy::too_many_arguments)]
pub(super) fn alltoall(
    v: &Inter,
    sendbuf: *const c_void,
    scounts: &[c_int],
    sdispls: Option<&[c_int]>,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    rcounts: &[c_int],
    rdispls: Option<&[c_int]>,
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
    per_remote(st, v, rbuf, &rbl, false);
    per_remote(st, v, sbuf, &sbl, true);
    finish_all(&mut s, unpacks);
    Ok(s)
}

/// The merged indices of the remote group, for `alltoallw_s`'s exchange.
pub(super) fn remote_peers(v: &Inter) -> Vec<i32> {
    (0..v.nr).map(|j| v.remote(j) as i32).collect()
}

/// Reduce_scatter(_block): each group's data reduced to its rank 0, the
/// ranks 0 swap the results, each scatters what it got by `counts` (one
/// entry per local rank; both groups' totals must agree).
pub(super) fn reduce_scatter(
    v: &Inter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[c_int],
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Result<Sched> {
    let mut s = v.sched();
    let (bl, end, total) = scatter_layout(counts, datatype)?;
    let (acc, len) = reduce_group(&mut s, v, sendbuf, total, datatype, op)?;
    let got = Loc::Scratch(s.buffer_reused(end), 0);
    if v.lr == 0 {
        let st = s.stage();
        st.push(Step::Recv {
            peer: v.remote(0),
            at: got,
            len: end,
        });
        st.push(Step::Send {
            peer: v.remote(0),
            at: acc,
            len,
        });
    }
    let (out, mylen, unpack) = output(&mut s, recvbuf, counts[v.lr], datatype, "recvbuf")?;
    on_group(&mut s, v.lbase, |s| {
        gather::b_scatterv(s, v.nl, v.lr, got, &bl, Some((out, mylen)), 0)
    });
    finish(&mut s, unpack);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `on_group` renumbers only the steps the builder added, in the stage
    /// that was open and in the ones it started.
    #[test]
    fn on_group_renumbers_only_new_steps() {
        let mut s = Sched::new(1, -1, vec![10, 11, 12, 13, 14], 3);
        let at = Loc::User(std::ptr::null_mut());
        s.stage().push(Step::Send {
            peer: 0,
            at,
            len: 0,
        });
        on_group(&mut s, 3, |s| {
            s.push(Step::Recv {
                peer: 1,
                at,
                len: 0,
            });
            s.stage().push(Step::Send {
                peer: 0,
                at,
                len: 0,
            });
        });
        let peers: Vec<Vec<usize>> = s
            .stages
            .iter()
            .map(|st| {
                st.iter()
                    .map(|x| match x {
                        Step::Send { peer, .. } | Step::Recv { peer, .. } => *peer,
                        _ => usize::MAX,
                    })
                    .collect()
            })
            .collect();
        assert_eq!(peers, vec![vec![0, 4], vec![3]]);
    }
}
