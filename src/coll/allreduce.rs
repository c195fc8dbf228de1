//! Reduce and allreduce: binomial reduce (lower ranks' data on the left; non-
//! commutative ops reduce at rank 0, then move to the root), recursive
//! doubling with the fold for non-powers of two, ring, Rabenseifner, linear,
//! hierarchical.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::allgather::*;
use super::bcast::*;
use super::blocks::*;
use super::fold::{fold, unfold};
use super::hier::*;
use super::reduce_scatter::*;
use super::sched::{Loc, Sched, Step};
use super::select;

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
    super::allgather::b_allgatherv_linear(s, n, r, acc, &bl, None);
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
    super::allreduce::b_reduce(&mut sub, nd.local.len(), li, acc, tmp, len, count, 0, true);
    append_group(s, sub, &nd.local);
    if let Some(ri) = index_in(&nd.reps, r) {
        let mut sub = group_sched(s, ri);
        let n = nd.reps.len();
        // The leaders talk across nodes: the cost model picks their algorithm.
        let call = select::Call {
            size: n,
            bytes: len,
            elems: count,
            commutative: true,
            ..Default::default()
        };
        let esize = len / count.max(1);
        match select::across(&select::ALLREDUCE, &call, select::Wire::get()) {
            _ if count == 0 || n < 2 => b_allreduce(&mut sub, n, ri, acc, tmp, len, count, true),
            "ring" => b_allreduce_ring(&mut sub, n, ri, acc, tmp, None, count, esize),
            "rabenseifner" => allreduce_rabenseifner(&mut sub, n, ri, acc, tmp, count, esize),
            "linear" => allreduce_linear(&mut sub, n, ri, acc, acc, count, esize),
            _ => b_allreduce(&mut sub, n, ri, acc, tmp, len, count, true),
        }
        append_group(s, sub, &nd.reps);
    }
    let mut sub = group_sched(s, li);
    super::bcast::b_bcast(&mut sub, nd.local.len(), li, acc, len, 0);
    append_group(s, sub, &nd.local);
}
