//! Rendezvous: the matched receiver's single copy (contiguous, vectored or
//! streamed), the split copy both sides share, and the CTS fallback.

use super::*;
use crate::core::request::STREAM_CHUNK;

/// Receiver side of a split copy: the request completes when `done` reaches
/// `n`; the slot is free again once the sender has also left it.
pub(super) struct SplitRecv {
    pub(super) rid: Option<ReqId>,
    pub(super) li: usize,
    pub(super) k: usize,
    pub(super) n: u64,
}

/// Sender side of a split copy: the request completes when `done` reaches `n`.
pub(super) struct SplitSend {
    pub(super) rid: ReqId,
    pub(super) li: usize,
    pub(super) k: usize,
    pub(super) n: u64,
}

impl State {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_rndv(
        &mut self,
        rid: ReqId,
        w: usize,
        src: i32,
        tag: i32,
        total: usize,
        sreq: u64,
        addr: u64,
        niov: u64,
    ) {
        let token = self.reqs.token(rid);
        let r = self.reqs.get_mut(rid).unwrap();
        r.posted = false;
        r.status.source = src;
        r.status.tag = tag;
        r.status.bytes = total as u64;
        if total > r.cap {
            r.status.error = MPI_ERR_TRUNCATE;
        }
        let n = total.min(r.cap);
        let buf = r.buf;
        // The single copies below are the kernel's copies of host memory.
        debug_assert!(crate::gpu::host_only(r.mem, "single copy").is_ok());
        // A streamed receive (no landing area) reads a contiguous sender's
        // buffer a chunk at a time and unpacks each; from a sender that
        // streams (addr 0: nothing contiguous to read) or sends vectored, it
        // takes the cells the CTS below asks for.
        if r.streamed() {
            if self.cma_ok[w] && addr != 0 && niov == 0 {
                let pid = self.pids[w];
                let mut bounce = crate::core::pool::take(STREAM_CHUNK.min(n));
                let mut off = 0;
                let mut res = Ok(());
                while off < n && res.is_ok() {
                    let len = (n - off).min(bounce.len());
                    // SAFETY: `bounce` holds at least `len` bytes; the sender keeps
                    // its `total` bytes at `addr` until our FIN.
                    res = unsafe {
                        crate::sys::cma_read(pid, addr as usize + off, bounce.as_mut_ptr(), len)
                    };
                    if res.is_ok() {
                        r.store(off, &bounce[..len]);
                        off += len;
                    }
                }
                crate::core::pool::give(bounce);
                match res {
                    Ok(()) => {
                        self.cma_proven[w] = true;
                        self.send_ctrl(w, kind::FIN, sreq, 0);
                        self.complete(rid);
                        return;
                    }
                    // Nothing was unpacked out of order: the cells start over.
                    Err(_) if off == 0 => self.cma_ok[w] = false,
                    Err(e) => {
                        let r = self.reqs.get_mut(rid).unwrap();
                        r.status.error = MPI_ERR_OTHER;
                        if std::env::var_os("OXMPI_DEBUG").is_some() {
                            eprintln!("oxmpi[{}]: process_vm_readv from rank {w} failed after {off} bytes ({e})", self.rank);
                        }
                        self.send_ctrl(w, kind::FIN, sreq, 0);
                        self.complete(rid);
                        return;
                    }
                }
            }
        } else if self.cma_ok[w] && (addr != 0 || niov != 0) {
            let local = r
                .staged
                .as_mut()
                .filter(|s| !s.iov.is_empty())
                .map(|s| std::mem::take(&mut s.iov));
            if niov == 0 && local.is_none() && self.split_as_receiver(rid, w, sreq, addr, buf, n) {
                return;
            }
            let res = if niov == 0 && local.is_none() {
                // SAFETY: the receive buffer holds `cap` >= n bytes.
                unsafe { crate::sys::cma_read(self.pids[w], addr as usize, buf, n) }
            } else {
                // SAFETY: the local segments are the receive buffer's typemap (or
                // the contiguous buffer), `cap` >= n bytes in all.
                unsafe { self.cma_vectored(w, addr, niov, local.as_deref(), buf, n) }
            };
            let r = self.reqs.get_mut(rid).unwrap();
            if let (Some(l), Some(s)) = (local, r.staged.as_mut()) {
                s.direct = res.is_ok();
                s.iov = l;
            }
            match res {
                Ok(()) => {
                    self.cma_proven[w] = true;
                    self.send_ctrl(w, kind::FIN, sreq, 0);
                    self.complete(rid);
                    return;
                }
                Err(e) => {
                    if std::env::var_os("OXMPI_DEBUG").is_some() {
                        eprintln!("oxmpi[{}]: process_vm_readv from rank {w} refused ({e}); using copies through shared memory", self.rank);
                    }
                    self.cma_ok[w] = false;
                }
            }
        }
        let r = self.reqs.get_mut(rid).unwrap();
        r.total = total;
        r.got = 0;
        let hdr = Hdr {
            kind: kind::CTS,
            sreq,
            rreq: token,
            total: total as u64,
            ..Default::default()
        };
        self.send_out(w, Out::ctrl(hdr));
    }

    /// Receiver: starts a split copy of `n` contiguous bytes from the
    /// sender's `addr` into `buf` if it is worth it and possible (a proven
    /// CMA peer on this node, a free slot); copies its share of the chunks.
    /// False when the caller should copy alone.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_as_receiver(
        &mut self,
        rid: ReqId,
        w: usize,
        sreq: u64,
        addr: u64,
        buf: *mut u8,
        n: usize,
    ) -> bool {
        let Path::Shm(li) = self.paths[w] else {
            return false;
        };
        // A peer with a rendezvous message of ours in flight is copying it
        // (an exchange): splitting would only add calls on two busy cores.
        if n < self.cfg.cma_split || !self.cma_proven[w] || self.rndv_out[w] > 0 {
            return false;
        }
        let Some(k) = self.split_free[li].pop() else {
            return false;
        };
        let k = k as usize;
        // Chunks: at least 4 (so that both sides get a share), 32 KiB to 2 MiB.
        let chunk = (n / 4).clamp(32 << 10, 2 << 20).next_multiple_of(4096);
        let me = self.me_local();
        let slot = self.shm.as_ref().unwrap().split_slot(li, me, k);
        // Relaxed: the CTS below is published by the ring's Release store,
        // which the sender Acquires before it looks at the slot.
        slot.claimed.store(0, Ordering::Relaxed);
        slot.done.store(0, Ordering::Relaxed);
        slot.failed.store(0, Ordering::Relaxed);
        slot.sender_left.store(0, Ordering::Relaxed);
        let hdr = Hdr {
            kind: kind::CTS,
            flags: flag::SPLIT,
            sreq,
            rreq: chunk as u64,
            addr: buf as u64,
            total: n as u64,
            tag: k as i32,
            ..Default::default()
        };
        self.send_out(w, Out::ctrl(hdr));
        let pid = self.pids[w];
        // The slot again: `send_out` needed `self` in between.
        let slot = self.shm.as_ref().unwrap().split_slot(li, me, k);
        let ok = split_copy(slot, n, chunk, |off, len| {
            // SAFETY: `buf` holds n bytes (off + len <= n); the sender keeps
            // its buffer until the copy is done (its request is incomplete).
            unsafe { crate::sys::cma_read(pid, addr as usize + off, buf.add(off), len) }
        });
        if !ok {
            if let Some(r) = self.reqs.get_mut(rid) {
                r.status.error = MPI_ERR_OTHER;
            }
        }
        self.split_recv.push(SplitRecv {
            rid: Some(rid),
            li,
            k,
            n: n as u64,
        });
        self.poll_split();
        true
    }

    pub(super) fn me_local(&self) -> usize {
        self.shm.as_ref().unwrap().me()
    }

    /// Sender: the receiver asked to copy together; take chunks until none is left.
    pub(super) fn split_as_sender(&mut self, w: usize, h: &Hdr) {
        let Path::Shm(li) = self.paths[w] else {
            return;
        };
        let Some(rid) = self.reqs.from_token(h.sreq) else {
            return;
        };
        let src = self.reqs.get(rid).unwrap().buf as *const u8;
        let (n, chunk, k, dst) = (h.total as usize, h.rreq as usize, h.tag as usize, h.addr);
        let pid = self.pids[w];
        let shm = self.shm.as_ref().unwrap();
        let slot = shm.split_slot(shm.me(), li, k);
        let ok = split_copy(slot, n, chunk, |off, len| {
            // SAFETY: the send buffer holds n bytes until the request completes.
            unsafe { crate::sys::cma_write(pid, dst as usize + off, src.add(off), len) }
        });
        if !ok {
            // Release: pairs with the receiver's Acquire load after `done` is full.
            slot.failed.store(1, Ordering::Release);
        }
        self.split_send.push(SplitSend {
            rid,
            li,
            k,
            n: n as u64,
        });
        self.poll_split();
    }

    /// Completes split copies whose bytes are all in; frees slots the sender left.
    pub(super) fn poll_split(&mut self) -> bool {
        let me = self.me_local();
        let mut did = false;
        let mut i = 0;
        while i < self.split_send.len() {
            let s = &self.split_send[i];
            let slot = self.shm.as_ref().unwrap().split_slot(me, s.li, s.k);
            // Acquire: pairs with the Release `fetch_add`s of both copiers, so
            // no copy reads the send buffer any more.
            if slot.done.load(Ordering::Acquire) == s.n {
                // Release: our last touch of the slot; pairs with the receiver's
                // Acquire load before it reuses the slot.
                slot.sender_left.store(1, Ordering::Release);
                let rid = s.rid;
                self.split_send.swap_remove(i);
                self.complete(rid);
                did = true;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.split_recv.len() {
            let s = &self.split_recv[i];
            let (li, k, n, rid) = (s.li, s.k, s.n, s.rid);
            let slot = self.shm.as_ref().unwrap().split_slot(li, me, k);
            // Acquire: pairs with the Release `fetch_add`s of both copiers:
            // every byte of the message is in the receive buffer.
            let full = slot.done.load(Ordering::Acquire) == n;
            // Acquire: pairs with the sender's Release store of `failed`.
            let failed = slot.failed.load(Ordering::Acquire) != 0;
            // Acquire: pairs with the sender's Release store of `sender_left`.
            let left = slot.sender_left.load(Ordering::Acquire) != 0;
            if let (Some(rid), true) = (rid, full) {
                if failed {
                    if let Some(q) = self.reqs.get_mut(rid) {
                        q.status.error = MPI_ERR_OTHER;
                    }
                }
                self.split_recv[i].rid = None;
                self.complete(rid);
                did = true;
            }
            if full && left {
                self.split_recv.swap_remove(i);
                self.split_free[li].push(k as u16);
            } else {
                i += 1;
            }
        }
        did
    }

    /// Single copy between segment lists: the sender's (`niov` segments listed
    /// at `addr` in its memory, or one contiguous range at `addr`) and mine
    /// (`local`, or `n` bytes at `buf`).
    ///
    /// # Safety
    /// `local` (or `buf`) is writable for `n` bytes.
    pub(super) unsafe fn cma_vectored(
        &self,
        w: usize,
        addr: u64,
        niov: u64,
        local: Option<&[[usize; 2]]>,
        buf: *mut u8,
        n: usize,
    ) -> std::io::Result<()> {
        let pid = self.pids[w];
        let remote: Vec<[usize; 2]> = if niov == 0 {
            vec![[addr as usize, n]]
        } else {
            let mut v = vec![[0usize; 2]; niov as usize];
            // SAFETY: `v` holds `niov` segments; the sender keeps its list
            // alive until our FIN.
            unsafe {
                crate::sys::cma_read(
                    pid,
                    addr as usize,
                    v.as_mut_ptr() as *mut u8,
                    v.len() * std::mem::size_of::<[usize; 2]>(),
                )?
            };
            v
        };
        let one = [[buf as usize, n]];
        // SAFETY: forwarded contract.
        unsafe { crate::sys::cma_readv(pid, &remote, local.unwrap_or(&one), n) }
    }
}

/// Takes chunks of a split copy (`chunk` bytes each, of `n`) from the shared
/// counter until none is left, copying each with `copy(offset, len)` and
/// adding it to `done`. False if a copy failed (its bytes still count as
/// done, so that both sides finish; the request reports the error).
pub(super) fn split_copy(
    slot: &shm::SplitSlot,
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
        // pairs with the Acquire loads in `State::poll_split`.
        slot.done.fetch_add(len as u64, Ordering::Release);
    }
}
