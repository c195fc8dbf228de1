//! Split copy: a large contiguous message between two ranks of one node
//! copied by receiver and sender together. The receiver claims a slot of
//! the segment (`SplitSlot`, 64 per ordered pair), sends a CTS naming it
//! and its buffer, and both take chunks from the slot's counter
//! (`fetch_add`), the receiver reading with `process_vm_readv`, the sender
//! writing with `process_vm_writev`; both add what they copied to `done`,
//! and each side's request completes when `done` reaches the length. The
//! receiver frees the slot once the sender has marked that it left it.

use super::layout::SplitSlot;
use super::SPLIT_SLOTS;
use crate::transport::{Link, Net};
use std::sync::atomic::Ordering;

/// Receiver side of a split copy: the request completes when `done` reaches
/// `n`; the slot is free again once the sender has also left it.
struct SplitRecv {
    rid: Option<u32>,
    li: usize,
    k: usize,
    n: u64,
}

/// Sender side of a split copy: the request completes when `done` reaches `n`.
struct SplitSend {
    rid: u32,
    li: usize,
    k: usize,
    n: u64,
}

/// The split copies of this rank, and the free slots of messages to it.
pub struct Split {
    /// Free slots of messages from each local rank to this one.
    free: Vec<Vec<u16>>,
    /// Split copies in flight or whose slot the sender has not left yet.
    recv: Vec<SplitRecv>,
    send: Vec<SplitSend>,
    /// Requests whose copies `split_poll` found complete (and whether one
    /// of the copies failed), for `split_take_done`.
    done: std::collections::VecDeque<(u32, bool)>,
}

impl Split {
    pub fn new(nlocal: usize) -> Split {
        Split {
            free: vec![(0..SPLIT_SLOTS as u16).rev().collect(); nlocal],
            recv: Vec::new(),
            send: Vec::new(),
            done: Default::default(),
        }
    }
}

impl Net {
    /// Receiver: a free split-copy slot for a message from world rank `w`,
    /// reset for a new copy; None when `w` is not on this node or no slot is free.
    pub fn split_claim(&mut self, w: usize) -> Option<usize> {
        let Link::Shm(li) = self.links[w] else {
            return None;
        };
        let k = self.split.free[li].pop()? as usize;
        let shm = self.shm.as_ref()?;
        let slot = shm.split_slot(li, shm.me(), k);
        // Relaxed: the CTS that names the slot is published by the ring's
        // Release store, which the sender Acquires before it looks at the slot.
        slot.claimed.store(0, Ordering::Relaxed);
        slot.done.store(0, Ordering::Relaxed);
        slot.failed.store(0, Ordering::Relaxed);
        slot.sender_left.store(0, Ordering::Relaxed);
        Some(k)
    }

    /// Receiver, after its CTS for slot `k` went out: copies its share of
    /// the `n` bytes at `addr` in `w`'s memory into `buf`, `chunk` bytes at
    /// a time, and keeps the copy until `split_poll` completes request
    /// `rid`. False if one of its copies failed.
    ///
    /// # Safety
    /// `buf` is writable for `n` bytes until request `rid` completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn split_receive(
        &mut self,
        w: usize,
        k: usize,
        rid: u32,
        addr: u64,
        buf: *mut u8,
        n: usize,
        chunk: usize,
    ) -> bool {
        let Link::Shm(li) = self.links[w] else {
            return false;
        };
        let shm = self.shm.as_ref().unwrap();
        let slot = shm.split_slot(li, shm.me(), k);
        let copier = &self.copy;
        let ok = split_copy(slot, n, chunk, |off, len| {
            // SAFETY: `buf` holds n bytes (off + len <= n); the sender keeps
            // its buffer until the copy is done (its request is incomplete).
            unsafe { copier.read(w, addr as usize + off, buf.add(off), len) }
        });
        self.split.recv.push(SplitRecv {
            rid: Some(rid),
            li,
            k,
            n: n as u64,
        });
        ok
    }

    /// Sender: the receiver asked to copy together (a CTS with `SPLIT`):
    /// takes chunks of the `n` bytes at `src` into `dst` in `w`'s memory
    /// until none is left, and keeps the copy until `split_poll` completes
    /// request `rid`.
    ///
    /// # Safety
    /// `src` is readable for `n` bytes until request `rid` completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn split_give(
        &mut self,
        w: usize,
        k: usize,
        rid: u32,
        src: *const u8,
        dst: u64,
        n: usize,
        chunk: usize,
    ) {
        let Link::Shm(li) = self.links[w] else {
            return;
        };
        let shm = self.shm.as_ref().unwrap();
        let slot = shm.split_slot(shm.me(), li, k);
        let copier = &self.copy;
        let ok = split_copy(slot, n, chunk, |off, len| {
            // SAFETY: the send buffer holds n bytes until the request completes.
            unsafe { copier.write(w, dst as usize + off, src.add(off), len) }
        });
        if !ok {
            // Release: pairs with the receiver's Acquire load after `done` is full.
            slot.failed.store(1, Ordering::Release);
        }
        self.split.send.push(SplitSend {
            rid,
            li,
            k,
            n: n as u64,
        });
    }

    /// A request whose split copy `split_poll` found complete, and whether
    /// one of its copies failed.
    pub fn split_take_done(&mut self) -> Option<(u32, bool)> {
        self.split.done.pop_front()
    }

    /// Split copies are in flight.
    #[inline]
    pub fn split_busy(&self) -> bool {
        !self.split.recv.is_empty() || !self.split.send.is_empty()
    }

    /// Finds the split copies whose bytes are all in (their requests come
    /// out of `split_take_done`) and frees the slots the sender left. True
    /// if anything completed.
    pub fn split_poll(&mut self) -> bool {
        let Some(shm) = self.shm.as_ref() else {
            return false;
        };
        let me = shm.me();
        let mut did = false;
        let mut i = 0;
        while i < self.split.send.len() {
            let s = &self.split.send[i];
            let slot = shm.split_slot(me, s.li, s.k);
            // Acquire: pairs with the Release `fetch_add`s of both copiers, so
            // no copy reads the send buffer any more.
            if slot.done.load(Ordering::Acquire) == s.n {
                // Release: our last touch of the slot; pairs with the receiver's
                // Acquire load before it reuses the slot.
                slot.sender_left.store(1, Ordering::Release);
                let rid = s.rid;
                self.split.send.swap_remove(i);
                self.split.done.push_back((rid, false));
                did = true;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.split.recv.len() {
            let s = &self.split.recv[i];
            let (li, k, n, rid) = (s.li, s.k, s.n, s.rid);
            let slot = shm.split_slot(li, me, k);
            // Acquire: pairs with the Release `fetch_add`s of both copiers:
            // every byte of the message is in the receive buffer.
            let full = slot.done.load(Ordering::Acquire) == n;
            // Acquire: pairs with the sender's Release store of `failed`.
            let failed = slot.failed.load(Ordering::Acquire) != 0;
            // Acquire: pairs with the sender's Release store of `sender_left`.
            let left = slot.sender_left.load(Ordering::Acquire) != 0;
            if let (Some(rid), true) = (rid, full) {
                self.split.recv[i].rid = None;
                self.split.done.push_back((rid, failed));
                did = true;
            }
            if full && left {
                self.split.recv.swap_remove(i);
                self.split.free[li].push(k as u16);
            } else {
                i += 1;
            }
        }
        did
    }
}

/// Takes chunks of a split copy (`chunk` bytes each, of `n`) from the shared
/// counter until none is left, copying each with `copy(offset, len)` and
/// adding it to `done`. False if a copy failed (its bytes still count as
/// done, so that both sides finish; the request reports the error).
fn split_copy(
    slot: &SplitSlot,
    n: usize,
    chunk: usize,
    mut copy: impl FnMut(usize, usize) -> std::io::Result<()>,
) -> bool {
    let chunks = n.div_ceil(chunk.max(1)) as u64;
    let mut ok = true;
    loop {
        // Relaxed: the counter only hands out distinct indices.
        let i = slot.claimed.fetch_add(1, Ordering::Relaxed);
        if i >= chunks {
            return ok;
        }
        let off = i as usize * chunk;
        let len = chunk.min(n - off);
        if ok {
            ok = copy(off, len).is_ok();
        }
        // Release: our copy happens before whoever sees `done` complete;
        // pairs with the Acquire loads in `Net::split_poll`.
        slot.done.fetch_add(len as u64, Ordering::Release);
    }
}
