//! The communicator as the algorithms see it (`View`: context, members,
//! the call's tag), the schedule it starts (`sched`), and the blocking
//! helpers other layers call (`bcast`, `allgatherv`, for communicator
//! creation and intercommunicator setup). The algorithms are in one file
//! per family (`coll`'s module doc); `select` chooses among them.

use super::sched::{run, Loc, Sched, Step};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::core::runtime::with;
use crate::err;
use std::os::raw::c_int;

/// A communicator as the algorithms see it, for one collective call.
pub struct View {
    pub ctx: u32,
    pub world: Vec<i32>,
    pub rank: usize,
    pub size: usize,
    /// Distinguishes this call from other collectives in flight on the communicator.
    pub tag: i32,
    pub comm: c_int,
}

/// The view of `comm` for its next collective call.
pub fn view(comm: c_int) -> Result<View> {
    with(|st| {
        let c = st.comm_mut(comm)?;
        if c.remote.is_some() {
            // Every collective the standard defines on intercommunicators
            // takes `abi::coll::inter` first; this one is not defined there.
            return Err(err!(
                MPI_ERR_COMM,
                "this collective (scan, exscan, neighbourhood) is not defined on intercommunicators"
            ));
        }
        // Tags cycle through 1024 values: enough to tell apart the collectives
        // in flight on one communicator, few enough for the matching engine to
        // reuse its per-envelope queues.
        let tag = c.next_coll_tag();
        Ok(View {
            ctx: c.ctx + 1,
            world: c.world.clone(),
            rank: c.rank as usize,
            size: c.size as usize,
            tag,
            comm,
        })
    })
}

pub fn sched(v: &View) -> Sched {
    Sched::new(v.ctx, v.tag, v.world.clone(), v.rank)
}

// ------------------------------------------------------------------ builders

// ------------------------------------------------------------------ blocking facade

fn user(b: &[u8]) -> Loc {
    Loc::User(b.as_ptr() as *mut u8)
}

pub fn bcast(v: &View, buf: &mut [u8], root: usize) -> Result<()> {
    let mut s = sched(v);
    super::bcast::b_bcast(&mut s, v.size, v.rank, user(buf), buf.len(), root);
    run(v.comm, s)
}

pub fn allgatherv(v: &View, rbuf: &mut [u8], blocks: &[(usize, usize)]) -> Result<()> {
    let mut s = sched(v);
    super::allgather::b_allgatherv(&mut s, v.size, v.rank, user(rbuf), blocks);
    run(v.comm, s)
}

/// A scratch copy of `len` bytes at `src` (made when the schedule runs its first stage).
pub fn scratch_copy(s: &mut Sched, src: Loc, len: usize) -> Loc {
    let i = s.buffer_reused(len);
    s.push(Step::Copy {
        src,
        dst: Loc::Scratch(i, 0),
        len,
    });
    Loc::Scratch(i, 0)
}
