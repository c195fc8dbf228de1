//! Scan and exscan: linear chain, recursive doubling.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::fold::combine_ordered;
use super::sched::{Loc, Sched, Step};

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
