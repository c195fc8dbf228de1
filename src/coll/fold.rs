//! Pieces shared by the reduction algorithms (`allreduce`, `reduce_scatter`): the
//! fold that brings a non-power-of-two rank count to a power of two and back
//! (`fold`, `unfold`), and the combine step that keeps rank order for
//! non-commutative ops (`combine_ordered`). Calls only `sched`.

use super::sched::{Loc, Sched, Step};

/// Combines a partner's data `got` into mine (`mine`) keeping rank order:
/// mine = got op mine when the partner is the lower rank, else mine op got
/// (through `got`, which it overwrites). Every pair computes the same bits.
pub(crate) fn combine_ordered(
    st: &mut Vec<Step>,
    partner_lower: bool,
    got: Loc,
    mine: Loc,
    count: usize,
    len: usize,
) {
    if partner_lower {
        st.push(Step::Reduce {
            src: got,
            dst: mine,
            count,
        });
    } else {
        st.push(Step::Reduce {
            src: mine,
            dst: got,
            count,
        });
        st.push(Step::Copy {
            src: got,
            dst: mine,
            len,
        });
    }
}

/// Folds ranks beyond the largest power of two into their neighbours (even
/// rank r < 2*rem sends to r+1, which reduces); returns my rank among the
/// power-of-two participants (None when folded away), the power of two and
/// the map from participant rank to real rank.
pub(crate) fn fold(
    s: &mut Sched,
    n: usize,
    r: usize,
    acc: Loc,
    tmp: Loc,
    len: usize,
    count: usize,
) -> (Option<usize>, usize, impl Fn(usize) -> usize) {
    let mut p2 = 1;
    while p2 * 2 <= n {
        p2 *= 2;
    }
    let rem = n - p2;
    let nr = if r < 2 * rem {
        if r % 2 == 0 {
            s.stage().push(Step::Send {
                peer: r + 1,
                at: acc,
                len,
            });
            None
        } else {
            s.stage().push(Step::Recv {
                peer: r - 1,
                at: tmp,
                len,
            });
            s.stage().push(Step::Reduce {
                src: tmp,
                dst: acc,
                count,
            });
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    (
        nr,
        p2,
        move |x: usize| if x < rem { x * 2 + 1 } else { x + rem },
    )
}

/// Sends the result back to the ranks `fold` set aside.
pub(crate) fn unfold(s: &mut Sched, n: usize, r: usize, acc: Loc, len: usize) {
    let mut p2 = 1;
    while p2 * 2 <= n {
        p2 *= 2;
    }
    let rem = n - p2;
    if r < 2 * rem {
        if r % 2 == 1 {
            s.stage().push(Step::Send {
                peer: r - 1,
                at: acc,
                len,
            });
        } else {
            s.stage().push(Step::Recv {
                peer: r + 1,
                at: acc,
                len,
            });
        }
    }
}
