//! Agreement steps of communicator creation: fixed-size ring allgather over an
//! explicit member list and context-id agreement.
//!
//! Context-id agreement (see core::comm): every member proposes its next free
//! id; the maximum X is taken; each member then reserves X if it has never
//! used it; if any member could not, all retry above X. Messages travel in the
//! parent's collective context with negative tags, which user traffic (tags
//! >= 0, point-to-point context) can never match.

use crate::abi::consts::*;
use crate::core::error::Result;
use crate::core::runtime::{wait_for, with};
use crate::core::state::{ReqKind, Request, SendMode};
use crate::err;

/// Tags of the internal exchanges (negative: never a user tag).
pub const TAG_AGREE: i32 = -10;
pub const TAG_SPLIT: i32 = -20;
pub const TAG_INTER: i32 = -30;
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
/// my index. Returns the blocks in member order.
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
        sendrecv(
            ctx,
            me as i32,
            members[right],
            &send,
            left as i32,
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
