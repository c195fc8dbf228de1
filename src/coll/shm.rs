//! Shared-memory collectives for MPI_COMM_WORLD when every rank is on this
//! node: barrier, bcast, reduce and allreduce of up to `COLL_HALF` bytes
//! move through the segment's collective area instead of messages.
//!
//! Protocol. Blocking collectives on one communicator are called in the
//! same order by every rank, so each call gets the same generation number g
//! (1, 2, ...) on all ranks. Rank i's slot has `seq` (g once its input for
//! call g is in) and `done` (g once it has finished reading for call g), and
//! two data halves used alternately (call g uses half g % 2). Before writing
//! half g % 2 a rank waits until every `done` >= g - 2: nobody still reads
//! what call g - 2 left there. Readers wait for the `seq` they need.
//! Reductions combine the slots in rank order on every rank, so the result
//! is bitwise identical everywhere and correct for non-commutative ops.
//!
//! Waits drive the progress engine (`runtime::wait_for`), so point-to-point
//! operations that other ranks need keep moving, and yield the CPU like any
//! other wait.

use crate::abi::consts::*;
use crate::abi::op::{apply, OpKind};
use crate::core::error::Result;
use crate::core::runtime::{wait_for, with};
use crate::transport::shm::{COLL_HALF, COLL_HDR, COLL_SLOT};
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest payload a shared-memory collective carries.
pub const MAX_BYTES: usize = COLL_HALF;

/// The slots of every rank (all ranks are local: slot i is world rank i,
/// at `base + i * COLL_SLOT`).
struct Area {
    base: usize,
    n: usize,
    me: usize,
    g: u64,
}

impl Area {
    fn seq(&self, i: usize) -> &AtomicU64 {
        // SAFETY: slot i starts with an 8-byte aligned counter; the mapping
        // lives until MPI_Finalize, after every collective.
        unsafe { &*((self.base + i * COLL_SLOT) as *const AtomicU64) }
    }
    fn done(&self, i: usize) -> &AtomicU64 {
        // SAFETY: as for `seq`; `done` is at byte 64 of the slot.
        unsafe { &*(((self.base + i * COLL_SLOT) + 64) as *const AtomicU64) }
    }
    fn half(&self, i: usize) -> *mut u8 {
        ((self.base + i * COLL_SLOT) + COLL_HDR + (self.g as usize % 2) * COLL_HALF) as *mut u8
    }
    /// Waits until `f(i)` holds for every i in `who`: polls the counters
    /// alone at first (no lock: the other ranks are usually microseconds
    /// away; every 256 polls the progress engine runs once), then drives the
    /// progress engine between polls, so messages that other ranks wait for
    /// keep moving.
    fn wait_all(
        &self,
        who: impl Iterator<Item = usize> + Clone,
        f: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let mut backoff = crate::core::progress::Backoff::new_default();
        for polls in 0..4096u32 {
            if who.clone().all(&f) {
                return Ok(());
            }
            if polls % 256 == 255 {
                with(|st| {
                    st.progress();
                    Ok(())
                })?;
            }
            backoff.snooze();
        }
        wait_for(|_| Ok(who.clone().all(&f).then_some(())))
    }
    /// Call entry for a rank that writes its half.
    fn before_write(&self) -> Result<()> {
        let g = self.g;
        // Acquire: pairs with the Release stores of `done` in `finish`.
        self.wait_all(0..self.n, |i| self.done(i).load(Ordering::Acquire) + 2 >= g)
    }
    fn publish(&self) {
        // Release: my half's contents are visible to whoever sees seq = g;
        // pairs with the Acquire loads in `wait_seq`.
        self.seq(self.me).store(self.g, Ordering::Release);
    }
    fn wait_seq(&self, who: impl Iterator<Item = usize> + Clone) -> Result<()> {
        let g = self.g;
        // Acquire: pairs with `publish`'s Release store.
        self.wait_all(who, |i| self.seq(i).load(Ordering::Acquire) >= g)
    }
    fn finish(&self) {
        // Release: my reads of others' halves are over; pairs with the
        // Acquire loads in `before_write`.
        self.done(self.me).store(self.g, Ordering::Release);
    }
}

/// The area for the next blocking collective on `comm`, if it can take one.
fn area(comm: std::os::raw::c_int) -> Result<Option<Area>> {
    if comm != MPI_COMM_WORLD {
        return Ok(None);
    }
    with(|st| {
        let Some(shm) = st.shm.as_ref() else {
            return Ok(None);
        };
        if shm.nlocal() != st.size as usize {
            return Ok(None);
        }
        st.shm_gen += 1;
        Ok(Some(Area {
            base: shm.coll_slot(0) as usize,
            n: shm.nlocal(),
            me: st.rank as usize,
            g: st.shm_gen,
        }))
    })
}

/// Whether blocking collectives on `comm` of `len` bytes can use the area.
pub fn eligible(comm: std::os::raw::c_int, len: usize) -> bool {
    // World's ranks never change: 0 not known yet, 1 all local, 2 not.
    static WORLD_LOCAL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    if len > MAX_BYTES || comm != MPI_COMM_WORLD {
        return false;
    }
    // Relaxed: a cache of a value computed the same way by every thread.
    match WORLD_LOCAL.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // Pretend nodes (tests of the hierarchical forms) also rule it out.
            let ok = with(|st| {
                let all: Vec<i32> = (0..st.size).collect();
                Ok(st
                    .shm
                    .as_ref()
                    .is_some_and(|s| s.nlocal() == st.size as usize)
                    && super::algos::nodes(&all).is_none())
            })
            .unwrap_or(false);
            WORLD_LOCAL.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            ok
        }
    }
}

pub fn barrier() -> Result<()> {
    let Some(a) = area(MPI_COMM_WORLD)? else {
        return Ok(());
    };
    a.publish();
    a.wait_seq(0..a.n)?;
    a.finish();
    Ok(())
}

/// # Safety
/// `buf` holds `len` bytes (<= MAX_BYTES).
pub unsafe fn bcast(buf: *mut u8, len: usize, root: usize) -> Result<()> {
    let Some(a) = area(MPI_COMM_WORLD)? else {
        return Ok(());
    };
    if a.me == root {
        a.before_write()?;
        // SAFETY: the half holds MAX_BYTES >= len; buf holds len (contract).
        unsafe { crate::sys::copy(a.half(root), buf, len) };
        a.publish();
    } else {
        a.wait_seq(std::iter::once(root))?;
        // SAFETY: as above; the root's half is complete (seq seen).
        unsafe { crate::sys::copy(buf, a.half(root), len) };
    }
    a.finish();
    Ok(())
}

/// Reduction of `count` elements of `dt` (`len` bytes); the result goes to
/// `out` at `root`, or on every rank when `root` is None.
///
/// # Safety
/// `input` holds `len` bytes; `out` (where the result goes) holds `len`
/// bytes and may equal `input`.
pub unsafe fn reduce(
    input: *const u8,
    out: *mut u8,
    len: usize,
    count: usize,
    dt: std::os::raw::c_int,
    op: &OpKind,
    root: Option<usize>,
) -> Result<()> {
    let Some(a) = area(MPI_COMM_WORLD)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: the half holds MAX_BYTES >= len; input holds len (contract).
    unsafe { crate::sys::copy(a.half(a.me), input, len) };
    a.publish();
    let n = a.n;
    if root.is_none_or(|r| r == a.me) {
        a.wait_seq(0..n)?;
        // Rank order: out = s0 op (s1 op (... op s_{n-1})). My input is in my
        // half already, so `out` may be the input buffer.
        // SAFETY: every half holds len bytes of call g (seq seen); out holds len.
        let acc = unsafe {
            crate::sys::copy(out, a.half(n - 1), len);
            std::slice::from_raw_parts_mut(out, len)
        };
        for i in (0..n - 1).rev() {
            // SAFETY: as above.
            let x = unsafe { std::slice::from_raw_parts(a.half(i), len) };
            apply(op, dt, count, x, acc)?;
        }
    }
    a.finish();
    Ok(())
}

/// Allgather of `blk`-byte blocks: mine (at `mine`) and everyone's into
/// `out` (n * blk bytes, rank order). `mine` may be my block inside `out`.
///
/// # Safety
/// `mine` holds `blk` bytes, `out` n * blk; blk <= MAX_BYTES.
pub unsafe fn allgather(mine: *const u8, out: *mut u8, blk: usize) -> Result<()> {
    let Some(a) = area(MPI_COMM_WORLD)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: the half holds MAX_BYTES >= blk (contract).
    unsafe { crate::sys::copy(a.half(a.me), mine, blk) };
    a.publish();
    a.wait_seq(0..a.n)?;
    for i in 0..a.n {
        // SAFETY: every half holds blk bytes of call g (seq seen); out holds n * blk.
        unsafe { std::ptr::copy(a.half(i), out.add(i * blk), blk) };
    }
    a.finish();
    Ok(())
}

/// Alltoall of `blk`-byte blocks: my n blocks at `send`, block i of every
/// rank's into `out` at i * blk. `send` may equal `out` (in place).
///
/// # Safety
/// `send` and `out` hold n * blk bytes; n * blk <= MAX_BYTES.
pub unsafe fn alltoall(send: *const u8, out: *mut u8, blk: usize) -> Result<()> {
    let Some(a) = area(MPI_COMM_WORLD)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: as above.
    unsafe { crate::sys::copy(a.half(a.me), send, a.n * blk) };
    a.publish();
    a.wait_seq(0..a.n)?;
    for i in 0..a.n {
        // SAFETY: rank i's half holds its n blocks of call g (seq seen).
        unsafe { crate::sys::copy(out.add(i * blk), a.half(i).add(a.me * blk), blk) };
    }
    a.finish();
    Ok(())
}

/// Reduce-scatter of equal blocks: my n blocks (`count` elements of `dt`,
/// `blk` bytes each) at `input`; block `me` reduced over all ranks, in rank
/// order, into `out`.
///
/// # Safety
/// `input` holds n * blk bytes (n * blk <= MAX_BYTES), `out` blk bytes;
/// `out` may lie inside `input`.
pub unsafe fn reduce_scatter_block(
    input: *const u8,
    out: *mut u8,
    blk: usize,
    count: usize,
    dt: std::os::raw::c_int,
    op: &OpKind,
) -> Result<()> {
    let Some(a) = area(MPI_COMM_WORLD)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: as above.
    unsafe { crate::sys::copy(a.half(a.me), input, a.n * blk) };
    a.publish();
    a.wait_seq(0..a.n)?;
    let n = a.n;
    let off = a.me * blk;
    // SAFETY: every half holds n blocks of call g; out holds blk bytes.
    let acc = unsafe {
        crate::sys::copy(out, a.half(n - 1).add(off), blk);
        std::slice::from_raw_parts_mut(out, blk)
    };
    for i in (0..n - 1).rev() {
        // SAFETY: as above.
        let x = unsafe { std::slice::from_raw_parts(a.half(i).add(off), blk) };
        apply(op, dt, count, x, acc)?;
    }
    a.finish();
    Ok(())
}
