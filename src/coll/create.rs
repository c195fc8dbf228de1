//! Agreement steps of communicator creation: fixed-size ring allgather over an
//! explicit member list and context-id agreement.
//!
//! Context-id agreement (see core::comm): every member proposes its next free
//! id; the maximum X is taken; each member then reserves X if it has never
//! used it; if any member could not, all retry above X. Messages travel in the
//! parent's collective context with negative tags, which user traffic (tags
//! >= 0, point-to-point context) can never match.

use crate::base::consts::*;
use crate::base::error::Result;
use crate::core::runtime::{wait_for, with};
use crate::core::state::{ReqKind, Request, SendMode};
use crate::err;

/// Tags of the internal exchanges (negative: never a user tag).
pub const TAG_AGREE: i32 = -10;
pub const TAG_SPLIT: i32 = -20;
pub const TAG_INTER: i32 = -30;
/// Which pool area a communicator's shared-memory collectives use (`coll::shm`).
pub const TAG_AREA: i32 = -40;
/// MPI_Comm_create_group: base, minus the user's tag.
pub const TAG_CREATE_GROUP: i32 = -0x1000_0000;

/// Blocking exchange in context `ctx`: send `sbuf` to world rank `dest_w`
/// (as source `me`), receive `rbuf` from member index `src` with the same tag.
pub fn sendrecv(
    ctx: u32,
    me: i32,
    dest_w: i32,
    sbuf: &[u8],
    src: i32,
    rbuf: &mut [u8],
    tag: i32,
) -> Result<()> {
    let (s, r) = with(|st| {
        let r = st.reqs.insert(Request::new(
            ReqKind::Recv,
            MPI_COMM_WORLD,
            rbuf.as_mut_ptr(),
            rbuf.len(),
        ));
        st.start_recv_ctx(r, ctx, src, tag);
        let s = st.reqs.insert(Request::new(
            ReqKind::Send,
            MPI_COMM_WORLD,
            sbuf.as_ptr() as *mut u8,
            sbuf.len(),
        ));
        // SAFETY: sbuf outlives the request: we wait for it below.
        unsafe {
            st.start_send_to(
                s,
                ctx,
                me,
                dest_w as usize,
                tag,
                sbuf.as_ptr(),
                sbuf.len(),
                SendMode::Standard,
            )?
        };
        Ok((s, r))
    })?;
    wait_for(|st| {
        let done = st.reqs.get(s).is_some_and(|q| q.done) && st.reqs.get(r).is_some_and(|q| q.done);
        if !done {
            return Ok(None);
        }
        st.reqs.remove(s);
        let rq = st.reqs.remove(r).unwrap();
        if rq.status.error != MPI_SUCCESS || rq.status.bytes as usize != rbuf.len() {
            return Err(err!(
                MPI_ERR_INTERN,
                "internal exchange got {} bytes, expected {}",
                rq.status.bytes,
                rbuf.len()
            ));
        }
        Ok(Some(()))
    })
}

/// Ring allgather of equal-size blocks among `members` (world ranks); `me` is
/// my index. Returns the blocks in member order. Messages name their
/// source by world rank.
pub fn allgather(members: &[i32], me: usize, ctx: u32, tag: i32, mine: &[u8]) -> Result<Vec<u8>> {
    let n = members.len();
    let len = mine.len();
    let mut out = vec![0u8; n * len];
    out[me * len..(me + 1) * len].copy_from_slice(mine);
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    for step in 0..n.saturating_sub(1) {
        let sb = (me + n - step) % n;
        let rb = (me + n - step - 1) % n;
        let send = out[sb * len..(sb + 1) * len].to_vec();
        let mut recv = vec![0u8; len];
        // Sources are world ranks, not member indices: calls over different
        // member lists in one context (MPI_Comm_create_group of different
        // groups, one after another) must not take each other's messages,
        // and a member that skipped a call may already be in the next one.
        sendrecv(
            ctx,
            members[me],
            members[right],
            &send,
            members[left],
            &mut recv,
            tag,
        )?;
        out[rb * len..(rb + 1) * len].copy_from_slice(&recv);
    }
    Ok(out)
}

fn u32s(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Agrees on a context id that no member has used; every member gets the same value.
pub fn agree_ctx(members: &[i32], me: usize, ctx: u32, tag: i32) -> Result<u32> {
    let mut floor = 0u32;
    loop {
        let prop = with(|st| {
            let p = st.next_ctx.max(floor);
            st.next_ctx = p + 2;
            Ok(p)
        })?;
        let all = allgather(members, me, ctx, tag, &prop.to_le_bytes())?;
        let x = u32s(&all).max().unwrap();
        let ok = with(|st| Ok(st.reserve_ctx(x)))?;
        let oks = allgather(members, me, ctx, tag - 1, &[ok as u8])?;
        if oks.iter().all(|&b| b == 1) {
            with(|st| {
                st.next_ctx = st.next_ctx.max(x + 2);
                Ok(())
            })?;
            return Ok(x);
        }
        if ok {
            with(|st| {
                st.release_ctx(x);
                Ok(())
            })?;
        }
        floor = x + 2;
    }
}

/// The nonblocking form of `agree_ctx` followed by installing a prepared
/// communicator (MPI_Comm_idup): a small state machine run by the progress
/// engine. Each round is two ring allgathers (proposals, then whether each
/// member could reserve the maximum), each a schedule in the parent's
/// collective context with the tag of this collective call.
pub struct Idup {
    members: Vec<i32>,
    me: usize,
    ctx: u32,
    tag: i32,
    floor: u32,
    /// The agreed candidate of the current round, once proposals are in.
    x: Option<u32>,
    reserved: bool,
    round: Option<crate::coll::sched::Sched>,
    comm: Option<crate::core::comm::Comm>,
    out: *mut std::os::raw::c_int,
}

impl Idup {
    /// `comm` is the new communicator without its context id; its handle is
    /// written to `out` when the request completes.
    pub fn new(
        members: Vec<i32>,
        me: usize,
        ctx: u32,
        tag: i32,
        comm: crate::core::comm::Comm,
        out: *mut std::os::raw::c_int,
    ) -> Idup {
        Idup {
            members,
            me,
            ctx,
            tag,
            floor: 0,
            x: None,
            reserved: false,
            round: None,
            comm: Some(comm),
            out,
        }
    }

    fn ring(&self, mine: &[u8]) -> crate::coll::sched::Sched {
        use crate::coll::sched::{Loc, Sched, Step};
        let n = self.members.len();
        let len = mine.len();
        let me = self.me;
        let mut s = Sched::new(self.ctx, self.tag, self.members.clone(), me);
        let mut all = vec![0u8; n * len];
        all[me * len..(me + 1) * len].copy_from_slice(mine);
        let b = s.buffer(all);
        for step in 0..n.saturating_sub(1) {
            let sb = (me + n - step) % n;
            let rb = (me + n - step - 1) % n;
            let st = s.stage();
            st.push(Step::Send {
                peer: (me + 1) % n,
                at: Loc::Scratch(b, sb * len),
                len,
            });
            st.push(Step::Recv {
                peer: (me + n - 1) % n,
                at: Loc::Scratch(b, rb * len),
                len,
            });
        }
        s
    }
}

impl crate::core::state::Progress for Idup {
    fn step(&mut self, st: &mut crate::core::state::State) -> Result<bool> {
        loop {
            let Some(round) = self.round.as_mut() else {
                // A new round: propose my next free id (at least the floor).
                let p = st.next_ctx.max(self.floor);
                st.next_ctx = p + 2;
                self.x = None;
                self.round = Some(self.ring(&p.to_le_bytes()));
                continue;
            };
            if !round.step(st)? {
                return Ok(false);
            }
            let all = std::mem::take(&mut round.scratch[0]);
            self.round = None;
            match self.x {
                None => {
                    let x = u32s(&all).max().unwrap();
                    self.x = Some(x);
                    self.reserved = st.reserve_ctx(x);
                    self.round = Some(self.ring(&[self.reserved as u8]));
                }
                Some(x) => {
                    if all.iter().all(|&b| b == 1) {
                        st.next_ctx = st.next_ctx.max(x + 2);
                        let mut c = self.comm.take().unwrap();
                        c.ctx = x;
                        let h = st.add_comm(c);
                        // SAFETY: MPI_Comm_idup's caller keeps `newcomm` valid
                        // until the request completes (MPI's rule for OUT
                        // arguments of nonblocking calls).
                        unsafe { *self.out = h };
                        return Ok(true);
                    }
                    if self.reserved {
                        st.release_ctx(x);
                    }
                    self.floor = x + 2;
                }
            }
        }
    }
}
