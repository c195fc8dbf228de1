//! More collective algorithms, one builder each, written as schedule steps
//! (see `basic` for the first ones and `choose`, the selection helper).
//!
//! Block layouts are byte ranges (offset, len) in rank order. Reductions use
//! `Step::Reduce { src, dst }`, which computes dst = src op dst (src is the
//! left operand): non-commutative callers keep operands in rank order.

use super::fold::{combine_ordered, fold, unfold};
use super::sched::{Loc, Sched, Step};

/// Byte range of chunk `c` when `count` elements of `esize` bytes are split
/// into `parts` nearly equal chunks.
fn chunk(count: usize, parts: usize, esize: usize, c: usize) -> (usize, usize) {
    let base = count / parts;
    let extra = count % parts;
    let start = c * base + c.min(extra);
    let len = base + usize::from(c < extra);
    (start * esize, len * esize)
}

/// Bytes spanned by chunks [a, b) of a layout.
fn span(bl: &[(usize, usize)], a: usize, b: usize) -> (usize, usize) {
    let start = bl[a].0;
    let end = bl[b - 1].0 + bl[b - 1].1;
    (start, end - start)
}

/// Reduce-scatter by recursive halving among `p2` participants: at the end
/// participant `nr` holds the reduced chunk `nr` of layout `bl` in `acc`.
/// Commutative ops only.
#[allow(clippy::too_many_arguments)]
fn halving(
    s: &mut Sched,
    p2: usize,
    nr: usize,
    real: &impl Fn(usize) -> usize,
    acc: Loc,
    tmp: Loc,
    bl: &[(usize, usize)],
    esize: usize,
) {
    let (mut lo, mut hi) = (0, p2);
    let mut mask = p2 / 2;
    while mask > 0 {
        let partner = real(nr ^ mask);
        let mid = lo + mask;
        let (keep, give) = if nr & mask == 0 {
            ((lo, mid), (mid, hi))
        } else {
            ((mid, hi), (lo, mid))
        };
        let (ko, kl) = span(bl, keep.0, keep.1);
        let (go, gl) = span(bl, give.0, give.1);
        let st = s.stage();
        st.push(Step::Recv {
            peer: partner,
            at: tmp.offset(ko),
            len: kl,
        });
        st.push(Step::Send {
            peer: partner,
            at: acc.offset(go),
            len: gl,
        });
        s.stage().push(Step::Reduce {
            src: tmp.offset(ko),
            dst: acc.offset(ko),
            count: kl / esize.max(1),
        });
        (lo, hi) = keep;
        mask /= 2;
    }
}

/// Allgather by recursive doubling among `p2` participants of the chunks of
/// layout `bl` in `buf` (participant `nr` holds chunk `nr`).
fn doubling(
    s: &mut Sched,
    p2: usize,
    nr: usize,
    real: &impl Fn(usize) -> usize,
    buf: Loc,
    bl: &[(usize, usize)],
) {
    let mut mask = 1;
    while mask < p2 {
        let partner = nr ^ mask;
        let mine = nr & !(mask - 1);
        let theirs = partner & !(mask - 1);
        let (so, sl) = span(bl, mine, mine + mask);
        let (ro, rl) = span(bl, theirs, theirs + mask);
        let st = s.stage();
        st.push(Step::Recv {
            peer: real(partner),
            at: buf.offset(ro),
            len: rl,
        });
        st.push(Step::Send {
            peer: real(partner),
            at: buf.offset(so),
            len: sl,
        });
        mask <<= 1;
    }
}

/// Rabenseifner allreduce: reduce-scatter by recursive halving, then
/// allgather by recursive doubling (ranks beyond a power of two fold in
/// first). Each chunk is reduced on one rank and copied to all, so every
/// rank gets identical bits. Commutative ops only.
#[allow(clippy::too_many_arguments)]
pub fn allreduce_rabenseifner(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    count: usize,
    esize: usize,
) {
    let len = count * esize;
    let (nr, p2, real) = fold(s, n, r, acc, tmp, len, count);
    if let Some(nr) = nr {
        let bl: Vec<(usize, usize)> = (0..p2).map(|c| chunk(count, p2, esize, c)).collect();
        halving(s, p2, nr, &real, acc, tmp, &bl, esize);
        doubling(s, p2, nr, &real, acc, &bl);
    }
    unfold(s, n, r, acc, len);
}

/// Copies `n` blocks of `blk` bytes from `src` to `dst` rotated by `k`:
/// block i lands at block (i + k) % n.
fn rotate(st: &mut Vec<Step>, src: Loc, dst: Loc, n: usize, k: usize, blk: usize) {
    st.push(Step::Copy {
        src,
        dst: dst.offset(k * blk),
        len: (n - k) * blk,
    });
    st.push(Step::Copy {
        src: src.offset((n - k) * blk),
        dst,
        len: k * blk,
    });
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

/// Bruck alltoall of equal blocks (ceil(log2 n) steps of n/2 blocks each):
/// good for small blocks, where the number of messages dominates.
pub fn alltoall_bruck(s: &mut Sched, n: usize, r: usize, sbuf: Loc, rbuf: Loc, blk: usize) {
    let t = Loc::Scratch(s.buffer(vec![0u8; n * blk]), 0);
    let half = n.div_ceil(2);
    let pk = Loc::Scratch(s.buffer(vec![0u8; half * blk]), 0);
    let rv = Loc::Scratch(s.buffer(vec![0u8; half * blk]), 0);
    // t[i] = the block for rank (r + i) % n.
    rotate(s.stage(), sbuf, t, n, (n - r) % n, blk);
    let mut k = 1;
    while k < n {
        let idx: Vec<usize> = (0..n).filter(|i| i & k != 0).collect();
        let st = s.stage();
        for (j, &i) in idx.iter().enumerate() {
            st.push(Step::Copy {
                src: t.offset(i * blk),
                dst: pk.offset(j * blk),
                len: blk,
            });
        }
        let st = s.stage();
        st.push(Step::Recv {
            peer: (r + n - k) % n,
            at: rv,
            len: idx.len() * blk,
        });
        st.push(Step::Send {
            peer: (r + k) % n,
            at: pk,
            len: idx.len() * blk,
        });
        let st = s.stage();
        for (j, &i) in idx.iter().enumerate() {
            st.push(Step::Copy {
                src: rv.offset(j * blk),
                dst: t.offset(i * blk),
                len: blk,
            });
        }
        k <<= 1;
    }
    // t[i] now holds the block from rank (r - i) % n.
    let st = s.stage();
    for i in 0..n {
        st.push(Step::Copy {
            src: t.offset(i * blk),
            dst: rbuf.offset(((r + n - i) % n) * blk),
            len: blk,
        });
    }
}

/// Ring reduce-scatter: n-1 steps, in each every rank sends one block to its
/// right neighbour and receives one from its left. A block travels from
/// `input` (step 0) or from `tmp`, where the previous step reduced it; the
/// block received in a step is reduced with this rank's input block into
/// `tmp`, and at the last step (this rank's own block) straight into `out`,
/// so neither the input nor the result is copied. Commutative ops only;
/// `input` must not overlap `out` (in place: a copy of the input).
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter_ring(
    s: &mut Sched,
    n: usize,
    r: usize,
    input: Loc,
    tmp: Loc,
    out: Loc,
    bl: &[(usize, usize)],
    esize: usize,
) {
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    for step in 0..n.saturating_sub(1) {
        let sb = (r + 2 * n - step - 1) % n;
        let rb = (r + 2 * n - step - 2) % n;
        let from = if step == 0 { input } else { tmp };
        let into = if step == n - 2 {
            out
        } else {
            tmp.offset(bl[rb].0)
        };
        let st = s.stage();
        st.push(Step::Recv {
            peer: left,
            at: into,
            len: bl[rb].1,
        });
        st.push(Step::Send {
            peer: right,
            at: from.offset(bl[sb].0),
            len: bl[sb].1,
        });
        s.stage().push(Step::Reduce {
            src: input.offset(bl[rb].0),
            dst: into,
            count: bl[rb].1 / esize.max(1),
        });
    }
}

/// Reduce-scatter by pairwise exchange: in step k every rank sends the
/// block of rank r+k and reduces the block that rank r-k sends it; n-1
/// steps of one block each. Commutative ops only.
pub fn reduce_scatter_pairwise(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    bl: &[(usize, usize)],
    esize: usize,
) {
    let (mo, ml) = bl[r];
    for k in 1..n {
        let dest = (r + k) % n;
        let src = (r + n - k) % n;
        let st = s.stage();
        st.push(Step::Recv {
            peer: src,
            at: tmp.offset(mo),
            len: ml,
        });
        st.push(Step::Send {
            peer: dest,
            at: acc.offset(bl[dest].0),
            len: bl[dest].1,
        });
        s.stage().push(Step::Reduce {
            src: tmp.offset(mo),
            dst: acc.offset(mo),
            count: ml / esize.max(1),
        });
    }
}

/// Reduce-scatter by recursive halving (power-of-two rank counts);
/// commutative ops only.
pub fn reduce_scatter_halving(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    bl: &[(usize, usize)],
    esize: usize,
) {
    debug_assert!(n.is_power_of_two());
    halving(s, n, r, &|x| x, acc, tmp, bl, esize);
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

/// Binomial-tree gather of equal blocks at `root`: each rank forwards its
/// subtree's blocks in one message. `mine` is my block (None at an in-place
/// root, whose block is already in `rbuf`).
pub fn gather_binomial(
    s: &mut Sched,
    n: usize,
    r: usize,
    mine: Option<Loc>,
    rbuf: Loc,
    blk: usize,
    root: usize,
) {
    let vr = (r + n - root) % n;
    let t = Loc::Scratch(s.buffer(vec![0u8; n * blk]), 0);
    s.stage().push(Step::Copy {
        src: mine.unwrap_or(rbuf.offset(r * blk)),
        dst: t,
        len: blk,
    });
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            let cnt = mask.min(n - vr);
            s.stage().push(Step::Send {
                peer: (vr - mask + root) % n,
                at: t,
                len: cnt * blk,
            });
            return;
        }
        if vr + mask < n {
            let cnt = mask.min(n - vr - mask);
            s.stage().push(Step::Recv {
                peer: (vr + mask + root) % n,
                at: t.offset(mask * blk),
                len: cnt * blk,
            });
        }
        mask <<= 1;
    }
    // Root: t[i] is the block of rank (root + i) % n.
    rotate(s.stage(), t, rbuf, n, root, blk);
}

/// Binomial-tree scatter of equal blocks from `root`; my block lands in `out`
/// (None at an in-place root).
pub fn scatter_binomial(
    s: &mut Sched,
    n: usize,
    r: usize,
    sbuf: Loc,
    out: Option<Loc>,
    blk: usize,
    root: usize,
) {
    let vr = (r + n - root) % n;
    let t = Loc::Scratch(s.buffer(vec![0u8; n * blk]), 0);
    let mut mask = 1;
    if vr == 0 {
        // t[i] = the block for rank (root + i) % n.
        rotate(s.stage(), sbuf, t, n, (n - root) % n, blk);
        while mask < n {
            mask <<= 1;
        }
    } else {
        while mask < n {
            if vr & mask != 0 {
                let cnt = mask.min(n - vr);
                s.stage().push(Step::Recv {
                    peer: (vr - mask + root) % n,
                    at: t,
                    len: cnt * blk,
                });
                break;
            }
            mask <<= 1;
        }
    }
    mask >>= 1;
    let st = s.stage();
    while mask > 0 {
        if vr + mask < n {
            let cnt = mask.min(n - vr - mask);
            st.push(Step::Send {
                peer: (vr + mask + root) % n,
                at: t.offset(mask * blk),
                len: cnt * blk,
            });
        }
        mask >>= 1;
    }
    if let Some(o) = out {
        s.stage().push(Step::Copy {
            src: t,
            dst: o,
            len: blk,
        });
    }
}

/// Prefix reduction by recursive doubling (log2 n steps); operands stay in
/// rank order, so non-commutative ops are fine. `acc` holds my contribution
/// and ends with the inclusive result, or for `exclusive` the result over
/// lower ranks (unchanged at rank 0).
#[allow(clippy::too_many_arguments)]
pub fn scan_doubling(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    len: usize,
    count: usize,
    exclusive: bool,
) {
    // part: what I send (reduction over my aligned group so far);
    // excl: the reduction over lower ranks seen so far.
    let part = Loc::Scratch(s.buffer(vec![0u8; len]), 0);
    let tmp = Loc::Scratch(s.buffer(vec![0u8; len]), 0);
    let excl = Loc::Scratch(s.buffer(vec![0u8; len]), 0);
    s.stage().push(Step::Copy {
        src: acc,
        dst: part,
        len,
    });
    let mut have_excl = false;
    let mut mask = 1;
    while mask < n {
        let partner = r ^ mask;
        if partner < n {
            let st = s.stage();
            st.push(Step::Recv {
                peer: partner,
                at: tmp,
                len,
            });
            st.push(Step::Send {
                peer: partner,
                at: part,
                len,
            });
            let st = s.stage();
            if partner < r {
                // Lower ranks' data is the left operand; excl takes it too
                // (before `combine_ordered` may overwrite `tmp`).
                if have_excl {
                    st.push(Step::Reduce {
                        src: tmp,
                        dst: excl,
                        count,
                    });
                } else {
                    st.push(Step::Copy {
                        src: tmp,
                        dst: excl,
                        len,
                    });
                    have_excl = true;
                }
            }
            combine_ordered(st, partner < r, tmp, part, count, len);
        }
        mask <<= 1;
    }
    if have_excl {
        let st = s.stage();
        if exclusive {
            st.push(Step::Copy {
                src: excl,
                dst: acc,
                len,
            });
        } else {
            st.push(Step::Reduce {
                src: excl,
                dst: acc,
                count,
            });
        }
    }
}

// ------------------------------------------------------------------ node-aware (hierarchical) forms

/// Node of each member (world ranks in communicator order), or None when
/// all are on one node. Ranks are assigned to nodes by the launcher's host
/// (one host for now) or, for tests, by OXMPI_TEST_RANKS_PER_NODE=k, which
/// puts world ranks [0, k) on node 0, [k, 2k) on node 1, and so on.
pub fn nodes(world: &[i32]) -> Option<Vec<usize>> {
    static PER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let per = *PER.get_or_init(|| {
        crate::config::get_str("OXMPI_TEST_RANKS_PER_NODE")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    if per == 0 {
        return None;
    }
    let ids: Vec<usize> = world.iter().map(|&w| w as usize / per).collect();
    (ids.iter().any(|&i| i != ids[0])).then_some(ids)
}

/// The communicator's node structure: members of my node (communicator
/// ranks, ascending) and one representative per node (the first member, or
/// `root` for the root's node), in node order of first appearance.
pub struct Nodes {
    pub local: Vec<usize>,
    pub reps: Vec<usize>,
}

impl Nodes {
    pub fn new(ids: &[usize], r: usize, root: usize) -> Nodes {
        let local = (0..ids.len()).filter(|&i| ids[i] == ids[r]).collect();
        let mut seen: Vec<usize> = Vec::new();
        let mut reps = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            if !seen.contains(&id) {
                seen.push(id);
                reps.push(if ids[root] == id { root } else { i });
            }
        }
        Nodes { local, reps }
    }

    /// My node's representative.
    pub fn my_rep(&self, ids: &[usize], r: usize) -> usize {
        *self.reps.iter().find(|&&x| ids[x] == ids[r]).unwrap()
    }
}

/// Appends the stages of `sub` (from `group_sched`, built by a builder for
/// a group of ranks numbered 0..g.len()) to `s`: group ranks become
/// communicator ranks through `g`; the scratch buffers the group schedule
/// added become `s`'s under the same indices.
pub fn append_group(s: &mut Sched, mut sub: Sched, g: &[usize]) {
    let base = s.scratch.len();
    s.scratch.extend(sub.scratch.drain(base..));
    for stage in std::mem::take(&mut sub.stages) {
        let st = s.stage();
        for step in stage {
            st.push(match step {
                Step::Send { peer, at, len } => Step::Send {
                    peer: g[peer],
                    at,
                    len,
                },
                Step::Recv { peer, at, len } => Step::Recv {
                    peer: g[peer],
                    at,
                    len,
                },
                other => other,
            });
        }
    }
}

/// A schedule for a group's builder: it shares `s`'s scratch numbering
/// (placeholders for `s`'s buffers), so locations of `s` stay valid in it.
fn group_sched(s: &Sched, me: usize) -> Sched {
    let mut g = Sched::new(s.ctx, s.tag, Vec::new(), me);
    g.scratch = vec![Vec::new(); s.scratch.len()];
    g
}

fn index_in(g: &[usize], r: usize) -> Option<usize> {
    g.iter().position(|&x| x == r)
}

/// Hierarchical allreduce: reduce to one leader per node, allreduce among
/// the leaders, broadcast on each node. Commutative ops only (the leaders'
/// recursive doubling keeps lower ranks on the left, so all get identical bits).
#[allow(clippy::too_many_arguments)]
pub fn allreduce_hier(
    s: &mut Sched,
    ids: &[usize],
    r: usize,
    acc: Loc,
    tmp: Loc,
    len: usize,
    count: usize,
) {
    let nd = Nodes::new(ids, r, 0);
    let li = index_in(&nd.local, r).unwrap();
    let mut sub = group_sched(s, li);
    super::basic::b_reduce(&mut sub, nd.local.len(), li, acc, tmp, len, count, 0, true);
    append_group(s, sub, &nd.local);
    if let Some(ri) = index_in(&nd.reps, r) {
        let mut sub = group_sched(s, ri);
        super::basic::b_allreduce(&mut sub, nd.reps.len(), ri, acc, tmp, len, count, true);
        append_group(s, sub, &nd.reps);
    }
    let mut sub = group_sched(s, li);
    super::basic::b_bcast(&mut sub, nd.local.len(), li, acc, len, 0);
    append_group(s, sub, &nd.local);
}

/// Hierarchical broadcast: among one representative per node (the root for
/// its own node), then within each node.
pub fn bcast_hier(s: &mut Sched, ids: &[usize], r: usize, buf: Loc, len: usize, root: usize) {
    let nd = Nodes::new(ids, r, root);
    if let Some(ri) = index_in(&nd.reps, r) {
        let mut sub = group_sched(s, ri);
        let rr = index_in(&nd.reps, root).unwrap();
        super::basic::b_bcast(&mut sub, nd.reps.len(), ri, buf, len, rr);
        append_group(s, sub, &nd.reps);
    }
    let li = index_in(&nd.local, r).unwrap();
    let lr = index_in(&nd.local, nd.my_rep(ids, r)).unwrap();
    let mut sub = group_sched(s, li);
    super::basic::b_bcast(&mut sub, nd.local.len(), li, buf, len, lr);
    append_group(s, sub, &nd.local);
}

/// Whether every node's members are consecutive communicator ranks (what
/// the hierarchical allgather needs to move a node's blocks as one span).
pub fn nodes_consecutive(ids: &[usize]) -> bool {
    (1..ids.len()).all(|i| ids[i] == ids[i - 1] || !ids[..i].contains(&ids[i]))
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
    super::basic::b_gatherv(&mut sub, nd.local.len(), li, mine, rbuf, &local_bl, 0);
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
        super::basic::b_allgatherv(&mut sub, nd.reps.len(), ri, rbuf, &spans);
        append_group(s, sub, &nd.reps);
    }
    let total = bl.iter().map(|b| b.0 + b.1).max().unwrap_or(0);
    let mut sub = group_sched(s, li);
    super::basic::b_bcast(&mut sub, nd.local.len(), li, rbuf, total, 0);
    append_group(s, sub, &nd.local);
}

/// Linear reduce-scatter: every rank's block j goes straight to rank j in
/// one stage, then each rank combines the n contributions to its block in
/// rank order (c0 op (c1 op (... op c_{n-1}))), so non-commutative ops are
/// served too. `input` holds the n blocks `bl` (byte offset, length) and is
/// only read; the result goes to `out` (`bl[r].1` bytes, which may be my
/// block of `input`).
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter_linear(
    s: &mut Sched,
    n: usize,
    r: usize,
    input: Loc,
    out: Loc,
    bl: &[(usize, usize)],
    esize: usize,
) {
    let ml = bl[r].1;
    // Slot i: rank i's contribution to my block; slot r: the accumulator.
    let slots = Loc::Scratch(s.buffer_reused(n * ml), 0);
    let slot = |i: usize| slots.offset(i * ml);
    let st = s.stage();
    for k in 1..n {
        let from = (r + n - k) % n;
        let to = (r + k) % n;
        st.push(Step::Recv {
            peer: from,
            at: slot(from),
            len: ml,
        });
        st.push(Step::Send {
            peer: to,
            at: input.offset(bl[to].0),
            len: bl[to].1,
        });
    }
    let part = |i: usize| {
        if i == r {
            input.offset(bl[r].0)
        } else {
            slot(i)
        }
    };
    let st = s.stage();
    st.push(Step::Copy {
        src: part(n - 1),
        dst: slot(r),
        len: ml,
    });
    for i in (0..n - 1).rev() {
        st.push(Step::Reduce {
            src: part(i),
            dst: slot(r),
            count: ml / esize.max(1),
        });
    }
    st.push(Step::Copy {
        src: slot(r),
        dst: out,
        len: ml,
    });
}

/// Linear allreduce: `reduce_scatter_linear` over n near-equal chunks of
/// the vector, then every chunk straight to every rank (two exchange
/// stages, whatever the rank count). Rank order is kept, but the caller
/// uses it for commutative ops only, since it cuts the vector. `input` (read only, may equal `acc`) and `acc` hold `count`
/// elements of `esize` bytes; the result ends in `acc`.
pub fn allreduce_linear(
    s: &mut Sched,
    n: usize,
    r: usize,
    input: Loc,
    acc: Loc,
    count: usize,
    esize: usize,
) {
    let bl: Vec<(usize, usize)> = (0..n).map(|c| chunk(count, n, esize, c)).collect();
    reduce_scatter_linear(s, n, r, input, acc.offset(bl[r].0), &bl, esize);
    super::basic::b_allgatherv_linear(s, n, r, acc, &bl, None);
}
