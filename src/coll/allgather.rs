//! Allgather(v): ring, recursive doubling (blocks back to back), Bruck (equal
//! blocks), linear, hierarchical.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::blocks::*;
use super::hier::*;
use super::sched::{Loc, Sched, Step};
use super::select;

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

/// Bruck allgather of equal blocks (any rank count, ceil(log2 n) steps):
/// blocks gather in `t` rotated so my block is first, then rotate into
/// `rbuf`, which holds my block at `r * blk` when it starts.
pub fn allgather_bruck(s: &mut Sched, n: usize, r: usize, rbuf: Loc, blk: usize) {
    let t = Loc::Scratch(s.buffer(vec![0u8; n * blk]), 0);
    s.stage().push(Step::Copy {
        src: rbuf.offset(r * blk),
        dst: t,
        len: blk,
    });
    let mut k = 1;
    while k < n {
        let m = k.min(n - k);
        let st = s.stage();
        st.push(Step::Recv {
            peer: (r + k) % n,
            at: t.offset(k * blk),
            len: m * blk,
        });
        st.push(Step::Send {
            peer: (r + n - k) % n,
            at: t,
            len: m * blk,
        });
        k <<= 1;
    }
    // t[i] is the block of rank (r + i) % n.
    rotate(s.stage(), t, rbuf, n, r, blk);
}

/// Hierarchical allgather (nodes of consecutive ranks): gather a node's
/// blocks at its leader, ring allgather of node spans among the leaders,
/// broadcast of the whole buffer on each node. `rbuf` holds my block.
pub fn allgather_hier(s: &mut Sched, ids: &[usize], r: usize, rbuf: Loc, bl: &[(usize, usize)]) {
    let nd = Nodes::new(ids, r, 0);
    let li = index_in(&nd.local, r).unwrap();
    let mine = Some((rbuf.offset(bl[r].0), bl[r].1));
    let local_bl: Vec<(usize, usize)> = nd.local.iter().map(|&m| bl[m]).collect();
    let mut sub = group_sched(s, li);
    super::gather::b_gatherv(&mut sub, nd.local.len(), li, mine, rbuf, &local_bl, 0);
    append_group(s, sub, &nd.local);
    if let Some(ri) = index_in(&nd.reps, r) {
        let spans: Vec<(usize, usize)> = nd
            .reps
            .iter()
            .map(|&lead| {
                let members: Vec<usize> = (0..ids.len()).filter(|&i| ids[i] == ids[lead]).collect();
                span(bl, members[0], members[members.len() - 1] + 1)
            })
            .collect();
        let mut sub = group_sched(s, ri);
        let n = nd.reps.len();
        let total = spans.iter().map(|b| b.1).sum();
        // The leaders talk across nodes: the cost model picks their
        // algorithm (the spans are back to back: the members of each node
        // are consecutive).
        let call = select::Call {
            size: n,
            bytes: total,
            dense: true,
            ..Default::default()
        };
        match select::across(&select::ALLGATHER, &call, select::Wire::get()) {
            "recursive_doubling" if n.is_power_of_two() => {
                b_allgather_rd(&mut sub, n, ri, rbuf, &spans)
            }
            "linear" => b_allgatherv_linear(&mut sub, n, ri, rbuf, &spans, None),
            _ => b_allgatherv(&mut sub, n, ri, rbuf, &spans),
        }
        append_group(s, sub, &nd.reps);
    }
    let total = bl.iter().map(|b| b.0 + b.1).max().unwrap_or(0);
    let mut sub = group_sched(s, li);
    super::bcast::b_bcast(&mut sub, nd.local.len(), li, rbuf, total, 0);
    append_group(s, sub, &nd.local);
}
