//! Bcast: binomial tree, linear, scatter + allgather, pipeline (chain),
//! hierarchical.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::allgather::*;
use super::gather::*;
use super::hier::*;
use super::sched::{Loc, Sched, Step};
use super::select;

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

/// Pipelined chain broadcast: the buffer moves in chunks of `piece` bytes
/// along root -> root+1 -> ..., each rank forwarding chunk j while it
/// receives chunk j+1.
pub fn bcast_pipeline(
    s: &mut Sched,
    n: usize,
    r: usize,
    buf: Loc,
    len: usize,
    root: usize,
    piece: usize,
) {
    let vr = (r + n - root) % n;
    let prev = (r + n - 1) % n;
    let next = (r + 1) % n;
    let last = vr + 1 == n;
    let chunks = len.div_ceil(piece.max(1)).max(1);
    let at = |j: usize| {
        let o = (j * piece).min(len);
        (o, piece.min(len - o))
    };
    for j in 0..=chunks {
        let st = s.stage();
        if vr > 0 && j < chunks {
            let (o, l) = at(j);
            st.push(Step::Recv {
                peer: prev,
                at: buf.offset(o),
                len: l,
            });
        }
        if !last && j > 0 {
            let (o, l) = at(j - 1);
            st.push(Step::Send {
                peer: next,
                at: buf.offset(o),
                len: l,
            });
        }
    }
}

/// Hierarchical broadcast: among one representative per node (the root for
/// its own node), then within each node.
/// The flat bcast algorithm `algo` (a name from `select::BCAST`; binomial
/// for any other).
pub fn by_name(s: &mut Sched, algo: &str, n: usize, r: usize, buf: Loc, len: usize, root: usize) {
    match algo {
        "scatter_allgather" => b_bcast_scatter_allgather(s, n, r, buf, len, root),
        "pipeline" => bcast_pipeline(s, n, r, buf, len, root, select::PIECE),
        "linear" => b_bcast_linear(s, n, r, buf, len, root),
        _ => b_bcast(s, n, r, buf, len, root),
    }
}

pub fn bcast_hier(s: &mut Sched, ids: &[usize], r: usize, buf: Loc, len: usize, root: usize) {
    let nd = Nodes::new(ids, r, root);
    if let Some(ri) = index_in(&nd.reps, r) {
        let mut sub = group_sched(s, ri);
        let rr = index_in(&nd.reps, root).unwrap();
        // The leaders talk across nodes: the cost model picks their algorithm.
        let call = select::Call {
            size: nd.reps.len(),
            bytes: len,
            ..Default::default()
        };
        let algo = select::across(&select::BCAST, &call, select::Wire::get());
        by_name(&mut sub, algo, nd.reps.len(), ri, buf, len, rr);
        append_group(s, sub, &nd.reps);
    }
    let li = index_in(&nd.local, r).unwrap();
    let lr = index_in(&nd.local, nd.my_rep(ids, r)).unwrap();
    let mut sub = group_sched(s, li);
    super::bcast::b_bcast(&mut sub, nd.local.len(), li, buf, len, lr);
    append_group(s, sub, &nd.local);
}
