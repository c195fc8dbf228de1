//! Gather(v) and scatter(v): linear at the root, binomial trees for equal
//! blocks.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::blocks::*;
use super::sched::{Loc, Sched, Step};

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
