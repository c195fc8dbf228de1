//! The first collective algorithms, each written once as a schedule builder
//! (`coll::sched`) that the blocking, nonblocking and persistent entry points
//! all run, plus the communicator view (`view`: context, members, the
//! call's tag) and `choose`, which applies a forced `OXMPI_<COLL>`
//! algorithm. More algorithms are in `algos`; the selection rules that pick
//! one by size, ranks and topology are still in `abi::coll`'s builders.
//!
//! | collective | algorithm | restriction |
//! |---|---|---|
//! | barrier | dissemination | |
//! | bcast | binomial tree, linear, scatter + allgather | |
//! | reduce | binomial tree, lower ranks' data on the left | non-commutative ops reduce at rank 0, then move to root |
//! | allreduce | recursive doubling with the fold for non-powers of two, lower rank on the left (identical bits on every rank); ring | ring: commutative ops |
//! | gather(v), scatter(v) | linear at the root | |
//! | allgather(v) | ring, recursive doubling, linear | recursive doubling: blocks back to back |
//! | alltoall(v) | pairwise exchange, linear | |
//! | scan, exscan | linear chain | |

use super::sched::{run, Loc, Sched, Step};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::core::runtime::with;
use crate::err;
use std::os::raw::c_int;

/// A communicator as the algorithms see it, for one collective call.
pub struct View {
    pub ctx: u32,
    pub world: Vec<i32>,
    pub rank: usize,
    pub size: usize,
    /// Distinguishes this call from other collectives in flight on the communicator.
    pub tag: i32,
    pub comm: c_int,
}

/// The view of `comm` for its next collective call.
pub fn view(comm: c_int) -> Result<View> {
    with(|st| {
        let c = st.comm_mut(comm)?;
        if c.remote.is_some() {
            // Every collective the standard defines on intercommunicators
            // takes `abi::coll::inter` first; this one is not defined there.
            return Err(err!(
                MPI_ERR_COMM,
                "this collective (scan, exscan, neighbourhood) is not defined on intercommunicators"
            ));
        }
        // Tags cycle through 1024 values: enough to tell apart the collectives
        // in flight on one communicator, few enough for the matching engine to
        // reuse its per-envelope queues.
        let tag = c.next_coll_tag();
        Ok(View {
            ctx: c.ctx + 1,
            world: c.world.clone(),
            rank: c.rank as usize,
            size: c.size as usize,
            tag,
            comm,
        })
    })
}

pub fn sched(v: &View) -> Sched {
    Sched::new(v.ctx, v.tag, v.world.clone(), v.rank)
}

// ------------------------------------------------------------------ builders

pub fn b_barrier(s: &mut Sched, n: usize, r: usize) {
    let mut k = 1;
    while k < n {
        let st = s.stage();
        st.push(Step::Recv {
            peer: (r + n - k) % n,
            at: Loc::User(std::ptr::null_mut()),
            len: 0,
        });
        st.push(Step::Send {
            peer: (r + k) % n,
            at: Loc::User(std::ptr::null_mut()),
            len: 0,
        });
        k <<= 1;
    }
}

pub fn b_bcast(s: &mut Sched, n: usize, r: usize, buf: Loc, len: usize, root: usize) {
    let vr = (r + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            s.stage().push(Step::Recv {
                peer: (vr - mask + root) % n,
                at: buf,
                len,
            });
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    let st = s.stage();
    while mask > 0 {
        if vr + mask < n {
            st.push(Step::Send {
                peer: (vr + mask + root) % n,
                at: buf,
                len,
            });
        }
        mask >>= 1;
    }
}

/// Linear broadcast: the root sends to every rank in one stage, each rank
/// receives from the root (no forwarding: with single-copy transfers every
/// rank copies straight from the root's buffer, and a rank that is not
/// running delays nobody but itself).
pub fn b_bcast_linear(s: &mut Sched, n: usize, r: usize, buf: Loc, len: usize, root: usize) {
    let st = s.stage();
    if r == root {
        for k in 1..n {
            st.push(Step::Send {
                peer: (root + k) % n,
                at: buf,
                len,
            });
        }
    } else {
        st.push(Step::Recv {
            peer: root,
            at: buf,
            len,
        });
    }
}

/// Reduce into `acc` (this rank's contribution on entry) at `root`; `tmp` has the same size.
#[allow(clippy::too_many_arguments)]
pub fn b_reduce(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    len: usize,
    count: usize,
    root: usize,
    commutative: bool,
) {
    let eff_root = if commutative { root } else { 0 };
    let vr = (r + n - eff_root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < n {
                s.stage().push(Step::Recv {
                    peer: (child + eff_root) % n,
                    at: tmp,
                    len,
                });
                // acc covers ranks [vr, vr+mask), the child the ranks after: acc op child.
                let st = s.stage();
                st.push(Step::Reduce {
                    src: acc,
                    dst: tmp,
                    count,
                });
                st.push(Step::Copy {
                    src: tmp,
                    dst: acc,
                    len,
                });
            }
        } else {
            s.stage().push(Step::Send {
                peer: (vr - mask + eff_root) % n,
                at: acc,
                len,
            });
            break;
        }
        mask <<= 1;
    }
    if eff_root != root {
        if r == 0 {
            s.stage().push(Step::Send {
                peer: root,
                at: acc,
                len,
            });
        } else if r == root {
            s.stage().push(Step::Recv {
                peer: 0,
                at: acc,
                len,
            });
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn b_allreduce(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    len: usize,
    count: usize,
    commutative: bool,
) {
    if !commutative {
        b_reduce(s, n, r, acc, tmp, len, count, 0, false);
        b_bcast(s, n, r, acc, len, 0);
        return;
    }
    let (newrank, p2, real) = super::fold::fold(s, n, r, acc, tmp, len, count);
    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < p2 {
            let partner = nr ^ mask;
            let pr = real(partner);
            let st = s.stage();
            st.push(Step::Recv {
                peer: pr,
                at: tmp,
                len,
            });
            st.push(Step::Send {
                peer: pr,
                at: acc,
                len,
            });
            super::fold::combine_ordered(s.stage(), partner < nr, tmp, acc, count, len);
            mask <<= 1;
        }
    }
    super::fold::unfold(s, n, r, acc, len);
}

/// Gathers blocks (offset, len) of `rbuf` at `root`; `mine` is None when the root's block is in place.
pub fn b_gatherv(
    s: &mut Sched,
    n: usize,
    r: usize,
    mine: Option<(Loc, usize)>,
    rbuf: Loc,
    blocks: &[(usize, usize)],
    root: usize,
) {
    let st = s.stage();
    if r != root {
        let (m, l) = mine.unwrap_or((Loc::User(std::ptr::null_mut()), 0));
        st.push(Step::Send {
            peer: root,
            at: m,
            len: l,
        });
        return;
    }
    for (i, &(off, len)) in blocks.iter().enumerate().take(n) {
        if i == root {
            if let Some((m, _)) = mine {
                st.push(Step::Copy {
                    src: m,
                    dst: rbuf.offset(off),
                    len,
                });
            }
        } else {
            st.push(Step::Recv {
                peer: i,
                at: rbuf.offset(off),
                len,
            });
        }
    }
}

pub fn b_scatterv(
    s: &mut Sched,
    n: usize,
    r: usize,
    sbuf: Loc,
    blocks: &[(usize, usize)],
    out: Option<(Loc, usize)>,
    root: usize,
) {
    let st = s.stage();
    if r != root {
        let (o, l) = out.unwrap_or((Loc::User(std::ptr::null_mut()), 0));
        st.push(Step::Recv {
            peer: root,
            at: o,
            len: l,
        });
        return;
    }
    for (i, &(off, len)) in blocks.iter().enumerate().take(n) {
        if i == root {
            if let Some((o, _)) = out {
                st.push(Step::Copy {
                    src: sbuf.offset(off),
                    dst: o,
                    len,
                });
            }
        } else {
            st.push(Step::Send {
                peer: i,
                at: sbuf.offset(off),
                len,
            });
        }
    }
}

/// Ring allgather: `rbuf` holds this rank's block at `blocks[r]` when it starts.
pub fn b_allgatherv(s: &mut Sched, n: usize, r: usize, rbuf: Loc, blocks: &[(usize, usize)]) {
    b_allgatherv_from(s, n, r, rbuf, blocks, None)
}

/// Ring allgather whose first send (my own block) reads `mine` when given:
/// the caller's unchanged input, so the neighbour's copy does not pull the
/// lines this rank has just written into `rbuf` from its cache.
pub fn b_allgatherv_from(
    s: &mut Sched,
    n: usize,
    r: usize,
    rbuf: Loc,
    blocks: &[(usize, usize)],
    mine: Option<Loc>,
) {
    let right = (r + 1) % n;
    let left = (r + n - 1) % n;
    for step in 0..n.saturating_sub(1) {
        let sb = (r + n - step) % n;
        let rb = (r + n - step - 1) % n;
        let st = s.stage();
        st.push(Step::Recv {
            peer: left,
            at: rbuf.offset(blocks[rb].0),
            len: blocks[rb].1,
        });
        st.push(Step::Send {
            peer: right,
            at: match mine {
                Some(m) if step == 0 => m,
                _ => rbuf.offset(blocks[sb].0),
            },
            len: blocks[sb].1,
        });
    }
}

/// Linear allgather(v): my block to every rank and every rank's block from
/// it, all in one stage (`mine`: my block when it is not yet in `rbuf`).
pub fn b_allgatherv_linear(
    s: &mut Sched,
    n: usize,
    r: usize,
    rbuf: Loc,
    blocks: &[(usize, usize)],
    mine: Option<Loc>,
) {
    let st = s.stage();
    for k in 1..n {
        let from = (r + n - k) % n;
        st.push(Step::Recv {
            peer: from,
            at: rbuf.offset(blocks[from].0),
            len: blocks[from].1,
        });
        st.push(Step::Send {
            peer: (r + k) % n,
            at: mine.unwrap_or(rbuf.offset(blocks[r].0)),
            len: blocks[r].1,
        });
    }
}

/// Alltoall(v): the own block copied, then the exchange with rank r + k
/// (sending) and r - k (receiving) for k = 1..n: one stage each (pairwise),
/// or all in one stage (`linear`: no exchange waits for another).
#[allow(clippy::too_many_arguments)]
pub fn b_alltoallv(
    s: &mut Sched,
    n: usize,
    r: usize,
    sbuf: Loc,
    sblocks: &[(usize, usize)],
    rbuf: Loc,
    rblocks: &[(usize, usize)],
    linear: bool,
) {
    s.stage().push(Step::Copy {
        src: sbuf.offset(sblocks[r].0),
        dst: rbuf.offset(rblocks[r].0),
        len: sblocks[r].1,
    });
    if linear {
        s.stage();
    }
    for step in 1..n {
        let dest = (r + step) % n;
        let src = (r + n - step) % n;
        if !linear {
            s.stage();
        }
        s.push(Step::Recv {
            peer: src,
            at: rbuf.offset(rblocks[src].0),
            len: rblocks[src].1,
        });
        s.push(Step::Send {
            peer: dest,
            at: sbuf.offset(sblocks[dest].0),
            len: sblocks[dest].1,
        });
    }
}

/// Prefix reduction along the ranks: `acc` holds this rank's contribution and
/// ends with the result (unchanged at rank 0 for exscan); `tmp` and `pre` are scratch.
#[allow(clippy::too_many_arguments)]
pub fn b_scan(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    pre: Loc,
    len: usize,
    count: usize,
    exclusive: bool,
) {
    s.stage().push(Step::Copy {
        src: acc,
        dst: pre,
        len,
    });
    if r > 0 {
        s.stage().push(Step::Recv {
            peer: r - 1,
            at: tmp,
            len,
        });
        let st = s.stage();
        st.push(Step::Reduce {
            src: tmp,
            dst: pre,
            count,
        });
        st.push(Step::Copy {
            src: if exclusive { tmp } else { pre },
            dst: acc,
            len,
        });
    }
    if r + 1 < n {
        s.stage().push(Step::Send {
            peer: r + 1,
            at: pre,
            len,
        });
    }
}

// ------------------------------------------------------------------ blocking facade

fn user(b: &[u8]) -> Loc {
    Loc::User(b.as_ptr() as *mut u8)
}

pub fn bcast(v: &View, buf: &mut [u8], root: usize) -> Result<()> {
    let mut s = sched(v);
    b_bcast(&mut s, v.size, v.rank, user(buf), buf.len(), root);
    run(v.comm, s)
}

pub fn allgatherv(v: &View, rbuf: &mut [u8], blocks: &[(usize, usize)]) -> Result<()> {
    let mut s = sched(v);
    b_allgatherv(&mut s, v.size, v.rank, user(rbuf), blocks);
    run(v.comm, s)
}

// ------------------------------------------------------------------ more algorithms and selection

/// Ring allreduce (reduce-scatter ring, then allgather ring) on `count`
/// elements of `esize` bytes: bandwidth-optimal for large messages. Each
/// chunk is reduced on one rank in a fixed order and then copied to all, so
/// every rank gets identical bits. Commutative ops only.
///
/// `input`: where this rank's data is when it is not in `acc` already. The
/// reduce-scatter half then sends from it at the first step and reduces it
/// with each chunk received straight into `acc`, so `acc` needs no copy of
/// the input first (a pass over the whole vector saved); `tmp` goes unused.
#[allow(clippy::too_many_arguments)]
pub fn b_allreduce_ring(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    input: Option<Loc>,
    count: usize,
    esize: usize,
) {
    let chunk = |c: usize| -> (usize, usize) {
        let base = count / n;
        let extra = count % n;
        let start = c * base + c.min(extra);
        let len = base + usize::from(c < extra);
        (start * esize, len)
    };
    let right = (r + 1) % n;
    let left = (r + n - 1) % n;
    for step in 0..n - 1 {
        let sc = (r + n - step) % n;
        let rc = (r + n - step - 1) % n;
        let (so, sl) = chunk(sc);
        let (ro, rl) = chunk(rc);
        // Chunk sc was reduced into acc at the step before (or is the input's).
        let (from, into) = match input {
            Some(inp) if step == 0 => (inp, acc),
            Some(_) => (acc, acc),
            None => (acc, tmp),
        };
        let st = s.stage();
        st.push(Step::Recv {
            peer: left,
            at: into.offset(ro),
            len: rl * esize,
        });
        st.push(Step::Send {
            peer: right,
            at: from.offset(so),
            len: sl * esize,
        });
        let (src, dst) = match input {
            // acc = mine op received (commutative ops only).
            Some(inp) => (inp.offset(ro), acc.offset(ro)),
            None => (tmp.offset(ro), acc.offset(ro)),
        };
        s.stage().push(Step::Reduce {
            src,
            dst,
            count: rl,
        });
    }
    // Rank r now holds the reduced chunk (r + 1) % n; ring allgather of the chunks.
    let blocks: Vec<(usize, usize)> = (0..n)
        .map(|c| {
            let (o, l) = chunk((c + 1) % n);
            (o, l * esize)
        })
        .collect();
    b_allgatherv(s, n, r, acc, &blocks);
}

/// Broadcast of a large buffer: the root sends chunk i to rank i, then a ring allgather.
pub fn b_bcast_scatter_allgather(
    s: &mut Sched,
    n: usize,
    r: usize,
    buf: Loc,
    len: usize,
    root: usize,
) {
    // Chunks are assigned to ranks relative to the root, so the ring starts at the root.
    let rel = |x: usize| (x + n - root) % n;
    let per = len.div_ceil(n);
    let blocks: Vec<(usize, usize)> = (0..n)
        .map(|x| {
            let c = rel(x);
            let o = (c * per).min(len);
            (o, per.min(len - o))
        })
        .collect();
    let (mo, ml) = blocks[r];
    b_scatterv(s, n, r, buf, &blocks, Some((buf.offset(mo), ml)), root);
    b_allgatherv(s, n, r, buf, &blocks);
}

/// Recursive-doubling allgather (power-of-two sizes): log2(n) exchanges of growing blocks.
pub fn b_allgather_rd(s: &mut Sched, n: usize, r: usize, rbuf: Loc, blocks: &[(usize, usize)]) {
    let mut mask = 1;
    while mask < n {
        let partner = r ^ mask;
        // I hold the blocks of my aligned group of `mask` ranks; swap groups with the partner.
        let mine = r & !(mask - 1);
        let theirs = partner & !(mask - 1);
        let span = |g: usize| -> (usize, usize) {
            let start = blocks[g].0;
            let end = blocks[g + mask - 1].0 + blocks[g + mask - 1].1;
            (start, end - start)
        };
        let (so, sl) = span(mine);
        let (ro, rl) = span(theirs);
        let st = s.stage();
        st.push(Step::Recv {
            peer: partner,
            at: rbuf.offset(ro),
            len: rl,
        });
        st.push(Step::Send {
            peer: partner,
            at: rbuf.offset(so),
            len: sl,
        });
        mask <<= 1;
    }
}
