//! Barrier: dissemination.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::sched::{Loc, Sched, Step};

pub fn b_barrier(s: &mut Sched, n: usize, r: usize) {
    let mut k = 1;
    while k < n {
        let st = s.stage();
        st.push(Step::Recv {
            peer: (r + n - k) % n,
            at: Loc::User(std::ptr::null_mut()),
            len: 0,
        });
        st.push(Step::Send {
            peer: (r + k) % n,
            at: Loc::User(std::ptr::null_mut()),
            len: 0,
        });
        k <<= 1;
    }
}
