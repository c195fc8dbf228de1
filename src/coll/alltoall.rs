//! Alltoall(v): pairwise exchange, linear, Bruck (equal blocks).
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::blocks::*;
use super::sched::{Loc, Sched, Step};

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
