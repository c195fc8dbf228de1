//! First collective algorithms, blocking, on contiguous data, written against
//! core's point-to-point primitives in the communicator's collective context:
//!
//! | collective | algorithm | restriction |
//! |---|---|---|
//! | barrier | dissemination | |
//! | bcast | binomial tree | |
//! | reduce | binomial tree, lower ranks' data on the left | non-commutative ops reduce at rank 0, then move to root |
//! | allreduce | recursive doubling with the fold for non-powers of two, lower rank on the left (identical bits on every rank) | commutative ops; others: reduce + bcast |
//! | gather(v), scatter(v) | linear at the root | |
//! | allgather(v) | ring | |
//! | alltoall(v) | pairwise exchange | |
//! | reduce_scatter(_block) | reduce + scatterv | |
//! | scan, exscan | linear chain | |
//!
//! Size- and topology-based selection, nonblocking and persistent forms come
//! with the collective framework (issue 4).

use crate::abi::consts::*;
use crate::abi::op::{apply, OpKind};
use crate::core::error::Result;
use crate::core::runtime::{wait_for, with};
use crate::core::state::{ReqId, ReqKind, Request, SendMode};
use crate::err;
use std::os::raw::c_int;

pub const TAG_BARRIER: i32 = -100;
pub const TAG_BCAST: i32 = -101;
pub const TAG_REDUCE: i32 = -102;
pub const TAG_ALLREDUCE: i32 = -103;
pub const TAG_GATHER: i32 = -104;
pub const TAG_SCATTER: i32 = -105;
pub const TAG_ALLGATHER: i32 = -106;
pub const TAG_ALLTOALL: i32 = -107;
pub const TAG_SCAN: i32 = -108;

/// A communicator as the algorithms see it.
pub struct View {
    pub ctx: u32,
    pub world: Vec<i32>,
    pub rank: usize,
    pub size: usize,
}

pub fn view(comm: c_int) -> Result<View> {
    with(|st| {
        let c = st.comm(comm)?;
        if c.remote.is_some() {
            return Err(err!(
                MPI_ERR_COMM,
                "collectives on intercommunicators are not implemented"
            ));
        }
        Ok(View {
            ctx: c.ctx + 1,
            world: c.world.clone(),
            rank: c.rank as usize,
            size: c.size as usize,
        })
    })
}

fn isend(v: &View, dest: usize, tag: i32, buf: &[u8]) -> Result<ReqId> {
    with(|st| {
        let s = st.reqs.insert(Request::new(
            ReqKind::Send,
            MPI_COMM_WORLD,
            buf.as_ptr() as *mut u8,
            buf.len(),
        ));
        // SAFETY: the caller keeps `buf` alive until it waits for the request.
        unsafe {
            st.start_send_to(
                s,
                v.ctx,
                v.rank as i32,
                v.world[dest] as usize,
                tag,
                buf.as_ptr(),
                buf.len(),
                SendMode::Standard,
            )?
        };
        Ok(s)
    })
}

fn irecv(v: &View, src: usize, tag: i32, buf: &mut [u8]) -> Result<ReqId> {
    with(|st| {
        let r = st.reqs.insert(Request::new(
            ReqKind::Recv,
            MPI_COMM_WORLD,
            buf.as_mut_ptr(),
            buf.len(),
        ));
        st.start_recv_ctx(r, v.ctx, src as i32, tag);
        Ok(r)
    })
}

fn waitall(ids: &[ReqId]) -> Result<()> {
    wait_for(|st| {
        if !ids.iter().all(|&i| st.reqs.get(i).is_some_and(|r| r.done)) {
            return Ok(None);
        }
        let mut bad = None;
        for &i in ids {
            let r = st.reqs.remove(i).unwrap();
            if r.status.error != MPI_SUCCESS {
                bad = Some(r.status.error);
            }
        }
        match bad {
            Some(e) => Err(err!(e, "a collective message did not fit its buffer (counts or datatypes differ between ranks)")),
            None => Ok(Some(())),
        }
    })
}

fn send(v: &View, dest: usize, tag: i32, buf: &[u8]) -> Result<()> {
    let s = isend(v, dest, tag, buf)?;
    waitall(&[s])
}

fn recv(v: &View, src: usize, tag: i32, buf: &mut [u8]) -> Result<()> {
    let r = irecv(v, src, tag, buf)?;
    waitall(&[r])
}

fn sendrecv(
    v: &View,
    dest: usize,
    sbuf: &[u8],
    src: usize,
    rbuf: &mut [u8],
    tag: i32,
) -> Result<()> {
    let r = irecv(v, src, tag, rbuf)?;
    let s = isend(v, dest, tag, sbuf)?;
    waitall(&[r, s])
}

pub fn barrier(v: &View) -> Result<()> {
    let mut k = 1;
    while k < v.size {
        sendrecv(
            v,
            (v.rank + k) % v.size,
            &[],
            (v.rank + v.size - k) % v.size,
            &mut [],
            TAG_BARRIER,
        )?;
        k <<= 1;
    }
    Ok(())
}

pub fn bcast(v: &View, buf: &mut [u8], root: usize) -> Result<()> {
    let n = v.size;
    let vr = (v.rank + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            recv(v, (vr - mask + root) % n, TAG_BCAST, buf)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    let mut reqs = Vec::new();
    while mask > 0 {
        if vr + mask < n {
            reqs.push(isend(v, (vr + mask + root) % n, TAG_BCAST, buf)?);
        }
        mask >>= 1;
    }
    waitall(&reqs)
}

/// Combines `lower op higher` into `higher`'s place and returns it in `acc`.
fn combine_lower_first(
    op: &OpKind,
    dt: c_int,
    count: usize,
    lower: &[u8],
    higher: &mut [u8],
) -> Result<()> {
    apply(op, dt, count, lower, higher)
}

/// Reduce into `acc` (holding this rank's contribution) at `root`.
pub fn reduce(
    v: &View,
    acc: &mut Vec<u8>,
    op: &OpKind,
    dt: c_int,
    count: usize,
    root: usize,
    commutative: bool,
) -> Result<()> {
    let n = v.size;
    let eff_root = if commutative { root } else { 0 };
    let vr = (v.rank + n - eff_root) % n;
    let mut tmp = vec![0u8; acc.len()];
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < n {
                recv(v, (child + eff_root) % n, TAG_REDUCE, &mut tmp)?;
                // acc covers ranks [vr, vr+mask), the child [vr+mask, ...): acc op child.
                combine_lower_first(op, dt, count, acc, &mut tmp)?;
                std::mem::swap(acc, &mut tmp);
            }
        } else {
            send(v, (vr - mask + eff_root) % n, TAG_REDUCE, acc)?;
            break;
        }
        mask <<= 1;
    }
    if eff_root != root {
        if v.rank == 0 {
            send(v, root, TAG_REDUCE, acc)?;
        } else if v.rank == root {
            recv(v, 0, TAG_REDUCE, acc)?;
        }
    }
    Ok(())
}

pub fn allreduce(
    v: &View,
    acc: &mut Vec<u8>,
    op: &OpKind,
    dt: c_int,
    count: usize,
    commutative: bool,
) -> Result<()> {
    let n = v.size;
    if !commutative {
        reduce(v, acc, op, dt, count, 0, false)?;
        return bcast(v, acc, 0);
    }
    let mut p2 = 1;
    while p2 * 2 <= n {
        p2 *= 2;
    }
    let rem = n - p2;
    let r = v.rank;
    let mut tmp = vec![0u8; acc.len()];
    // Fold: among the first 2*rem ranks, even ranks hand their data to the next odd one.
    let newrank: Option<usize> = if r < 2 * rem {
        if r % 2 == 0 {
            send(v, r + 1, TAG_ALLREDUCE, acc)?;
            None
        } else {
            recv(v, r - 1, TAG_ALLREDUCE, &mut tmp)?;
            combine_lower_first(op, dt, count, &tmp, acc)?;
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    let real = |nr: usize| if nr < rem { nr * 2 + 1 } else { nr + rem };
    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < p2 {
            let partner = nr ^ mask;
            let pr = real(partner);
            sendrecv(v, pr, acc, pr, &mut tmp, TAG_ALLREDUCE)?;
            if partner < nr {
                combine_lower_first(op, dt, count, &tmp, acc)?;
            } else {
                combine_lower_first(op, dt, count, acc, &mut tmp)?;
                std::mem::swap(acc, &mut tmp);
            }
            mask <<= 1;
        }
    }
    if r < 2 * rem {
        if r % 2 == 1 {
            send(v, r - 1, TAG_ALLREDUCE, acc)?;
        } else {
            recv(v, r + 1, TAG_ALLREDUCE, acc)?;
        }
    }
    Ok(())
}

/// Gathers blocks to `root`: `blocks[i]` = (offset, len) in `rbuf` for rank i. `mine`
/// is None when the root's block is already in place.
pub fn gatherv(
    v: &View,
    mine: Option<&[u8]>,
    rbuf: &mut [u8],
    blocks: &[(usize, usize)],
    root: usize,
) -> Result<()> {
    if v.rank != root {
        return send(v, root, TAG_GATHER, mine.unwrap_or(&[]));
    }
    let mut reqs = Vec::new();
    let base = rbuf.as_mut_ptr();
    for (i, &(off, len)) in blocks.iter().enumerate() {
        if i == root {
            if let Some(m) = mine {
                rbuf[off..off + len].copy_from_slice(&m[..len]);
            }
            continue;
        }
        // SAFETY: blocks lie inside rbuf (checked by the caller) and do not overlap
        // (the standard forbids it for the receive buffer).
        let part = unsafe { std::slice::from_raw_parts_mut(base.add(off), len) };
        reqs.push(irecv(v, i, TAG_GATHER, part)?);
    }
    waitall(&reqs)
}

/// Scatters blocks from `root`; `out` is None at a root receiving in place.
pub fn scatterv(
    v: &View,
    sbuf: &[u8],
    blocks: &[(usize, usize)],
    out: Option<&mut [u8]>,
    root: usize,
) -> Result<()> {
    if v.rank != root {
        return recv(v, root, TAG_SCATTER, out.unwrap());
    }
    let mut reqs = Vec::new();
    for (i, &(off, len)) in blocks.iter().enumerate() {
        if i == root {
            continue;
        }
        reqs.push(isend(v, i, TAG_SCATTER, &sbuf[off..off + len])?);
    }
    if let Some(o) = out {
        let (off, len) = blocks[root];
        o[..len].copy_from_slice(&sbuf[off..off + len]);
    }
    waitall(&reqs)
}

/// Ring allgather: `rbuf` already holds this rank's block at `blocks[rank]`.
pub fn allgatherv(v: &View, rbuf: &mut [u8], blocks: &[(usize, usize)]) -> Result<()> {
    let n = v.size;
    let right = (v.rank + 1) % n;
    let left = (v.rank + n - 1) % n;
    let base = rbuf.as_mut_ptr();
    for step in 0..n.saturating_sub(1) {
        let sb = (v.rank + n - step) % n;
        let rb = (v.rank + n - step - 1) % n;
        let (so, sl) = blocks[sb];
        let (ro, rl) = blocks[rb];
        // SAFETY: distinct blocks of rbuf (rb != sb), both inside it.
        let (s, r) = unsafe {
            (
                std::slice::from_raw_parts(base.add(so), sl),
                std::slice::from_raw_parts_mut(base.add(ro), rl),
            )
        };
        sendrecv(v, right, s, left, r, TAG_ALLGATHER)?;
    }
    Ok(())
}

/// Pairwise exchange: send block (soff, slen)[j] to j, receive (roff, rlen)[j] from j.
pub fn alltoallv(
    v: &View,
    sbuf: &[u8],
    sblocks: &[(usize, usize)],
    rbuf: &mut [u8],
    rblocks: &[(usize, usize)],
) -> Result<()> {
    let n = v.size;
    let (so, sl) = sblocks[v.rank];
    let (ro, _) = rblocks[v.rank];
    rbuf[ro..ro + sl].copy_from_slice(&sbuf[so..so + sl]);
    let base = rbuf.as_mut_ptr();
    for step in 1..n {
        let dest = (v.rank + step) % n;
        let src = (v.rank + n - step) % n;
        let (so, sl) = sblocks[dest];
        let (ro, rl) = rblocks[src];
        // SAFETY: the block lies inside rbuf.
        let r = unsafe { std::slice::from_raw_parts_mut(base.add(ro), rl) };
        sendrecv(v, dest, &sbuf[so..so + sl], src, r, TAG_ALLTOALL)?;
    }
    Ok(())
}

/// Inclusive (or exclusive) prefix reduction along the ranks. `acc` holds this
/// rank's contribution on entry and its result on return (unchanged at rank 0 for exscan).
pub fn scan(
    v: &View,
    acc: &mut Vec<u8>,
    op: &OpKind,
    dt: c_int,
    count: usize,
    exclusive: bool,
) -> Result<()> {
    let mine = acc.clone();
    let mut prefix = mine.clone();
    if v.rank > 0 {
        let mut before = vec![0u8; acc.len()];
        recv(v, v.rank - 1, TAG_SCAN, &mut before)?;
        if exclusive {
            *acc = before.clone();
        }
        combine_lower_first(op, dt, count, &before, &mut prefix)?;
        if !exclusive {
            *acc = prefix.clone();
        }
    }
    if v.rank + 1 < v.size {
        send(v, v.rank + 1, TAG_SCAN, &prefix)?;
    }
    Ok(())
}
