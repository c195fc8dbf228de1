//! Block arithmetic the families share: chunks of a vector, spans of block
//! lists, the halving and doubling exchanges, rotation.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::sched::{Loc, Sched, Step};

/// Byte range of chunk `c` when `count` elements of `esize` bytes are split
/// into `parts` nearly equal chunks.
pub(super) fn chunk(count: usize, parts: usize, esize: usize, c: usize) -> (usize, usize) {
    let base = count / parts;
    let extra = count % parts;
    let start = c * base + c.min(extra);
    let len = base + usize::from(c < extra);
    (start * esize, len * esize)
}

/// Bytes spanned by chunks [a, b) of a layout.
pub(super) fn span(bl: &[(usize, usize)], a: usize, b: usize) -> (usize, usize) {
    let start = bl[a].0;
    let end = bl[b - 1].0 + bl[b - 1].1;
    (start, end - start)
}

/// Reduce-scatter by recursive halving among `p2` participants: at the end
/// participant `nr` holds the reduced chunk `nr` of layout `bl` in `acc`.
/// Commutative ops only.
#[allow(clippy::too_many_arguments)]
pub(super) fn halving(
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
pub(super) fn doubling(
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

/// Copies `n` blocks of `blk` bytes from `src` to `dst` rotated by `k`:
/// block i lands at block (i + k) % n.
pub(super) fn rotate(st: &mut Vec<Step>, src: Loc, dst: Loc, n: usize, k: usize, blk: usize) {
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
