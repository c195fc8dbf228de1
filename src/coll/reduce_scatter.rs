//! Reduce-scatter: ring, pairwise, recursive halving, linear.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::blocks::*;
use super::sched::{Loc, Sched, Step};

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
