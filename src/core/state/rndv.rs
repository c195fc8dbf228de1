//! Rendezvous: the matched receiver's single copy (contiguous, vectored or
//! streamed), the split copy both sides share, and the CTS fallback.

use super::*;
use crate::core::request::STREAM_CHUNK;

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
        ipc: Option<Box<crate::gpu::ipc::IpcRef>>,
    ) {
        let (mut addr, mut niov) = (addr, niov);
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
        let caps = self.net.caps(w);
        if let Some(ipc) = ipc {
            if self.recv_ipc(rid, w, sreq, &ipc, n) {
                return;
            }
            // No mapping: nothing to read directly; the CTS below asks the
            // sender for cells.
            (addr, niov) = (0, 0);
        }
        let r = self.reqs.get_mut(rid).unwrap();
        if caps.fetch && addr != 0 {
            // The link holds the message (a descriptor in `addr`): it lands
            // in a contiguous device receive buffer as it is where the link
            // takes device memory, else in the receive buffer, or in a
            // bounce buffer for a streamed receive (no landing area) or a
            // truncated one, stored when the link is done.
            let device = r
                .staged
                .as_ref()
                .filter(|_| caps.device && total <= r.cap)
                .and_then(|s| s.device_direct());
            if let Some(dst) = device {
                r.staged.as_mut().unwrap().direct = true;
                // SAFETY: as below; `dst` is the user's contiguous device
                // receive buffer of `cap` >= total bytes.
                unsafe { self.net.fetch(w, addr, dst, total, token, true) };
                return;
            }
            let dst = if r.streamed() || total > r.cap {
                // A device pipeline's bounce is pinned: it is copied to the
                // device straight from there (`Request::land`).
                let piped = r.staged.as_ref().is_some_and(|s| s.pipe.is_some());
                let mut b = if piped {
                    crate::core::pool::take_pinned(total)
                } else {
                    crate::core::pool::take(total)
                };
                let p = b.as_mut_ptr();
                self.fetch_bounce.insert(token, (b, total));
                p
            } else {
                buf
            };
            // SAFETY: `addr` is this message's descriptor, fetched only here
            // (the message left the unexpected store or was never in it);
            // `dst` holds `total` bytes until the request completes (the
            // receive buffer's `cap`, or the bounce kept in `fetch_bounce`).
            unsafe { self.net.fetch(w, addr, dst, total, token, false) };
            return;
        }
        // The single copies below are the kernel's copies of host memory.
        debug_assert!(crate::gpu::host_only(r.mem, "single copy").is_ok());
        // A streamed receive (no landing area) reads a contiguous sender's
        // buffer a chunk at a time and unpacks each; from a sender that
        // streams (addr 0: nothing contiguous to read) or sends vectored, it
        // takes the cells the CTS below asks for.
        if r.streamed() {
            if caps.get && addr != 0 && niov == 0 {
                let piped = r.staged.as_ref().is_some_and(|s| s.pipe.is_some());
                let mut bounce = if piped {
                    Vec::new()
                } else {
                    crate::core::pool::take(STREAM_CHUNK.min(n))
                };
                let mut off = 0;
                let mut res = Ok(());
                while off < n && res.is_ok() {
                    // A device pipeline's chunks are read into in place: the
                    // copy of each to the device runs while the next is read.
                    let pipe = r.staged.as_mut().and_then(|s| s.pipe.as_mut());
                    let (at, len) = match pipe {
                        Some(p) => {
                            let room = p.room(off);
                            (room.as_mut_ptr(), room.len().min(n - off))
                        }
                        None => (bounce.as_mut_ptr(), (n - off).min(bounce.len())),
                    };
                    if len == 0 {
                        break;
                    }
                    // SAFETY: `at` holds at least `len` bytes (the bounce or
                    // the chunk's room); the sender keeps its `total` bytes
                    // at `addr` until our FIN.
                    res = unsafe { self.net.copy.read(w, addr as usize + off, at, len) };
                    if res.is_ok() {
                        match r.staged.as_mut().and_then(|s| s.pipe.as_mut()) {
                            Some(p) => p.advance(len),
                            None => r.store(off, &bounce[..len]),
                        }
                        off += len;
                    }
                }
                crate::core::pool::give(bounce);
                match res {
                    Ok(()) => {
                        self.net.copy.mark_proven(w);
                        self.send_ctrl(w, kind::FIN, sreq, 0);
                        self.complete(rid);
                        return;
                    }
                    // Nothing was unpacked out of order: the cells start over.
                    Err(_) if off == 0 => self.net.copy.refuse(w),
                    Err(e) => {
                        let r = self.reqs.get_mut(rid).unwrap();
                        r.status.error = MPI_ERR_OTHER;
                        if std::env::var_os("OXMPI_DEBUG").is_some() {
                            say!("oxmpi[{}]: process_vm_readv from rank {w} failed after {off} bytes ({e})", self.rank);
                        }
                        self.send_ctrl(w, kind::FIN, sreq, 0);
                        self.complete(rid);
                        return;
                    }
                }
            }
        } else if (addr != 0 && caps.get) || (niov != 0 && caps.vectored) {
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
                unsafe { self.net.copy.read(w, addr as usize, buf, n) }
            } else {
                // SAFETY: the local segments are the receive buffer's typemap (or
                // the contiguous buffer), `cap` >= n bytes in all.
                unsafe {
                    self.net
                        .copy
                        .read_vectored(w, addr, niov, local.as_deref(), buf, n)
                }
            };
            let r = self.reqs.get_mut(rid).unwrap();
            if let (Some(l), Some(s)) = (local, r.staged.as_mut()) {
                s.direct = res.is_ok();
                s.iov = l;
            }
            match res {
                Ok(()) => {
                    self.net.copy.mark_proven(w);
                    self.send_ctrl(w, kind::FIN, sreq, 0);
                    self.complete(rid);
                    return;
                }
                Err(e) => {
                    if std::env::var_os("OXMPI_DEBUG").is_some() {
                        say!("oxmpi[{}]: process_vm_readv from rank {w} refused ({e}); using copies through shared memory", self.rank);
                    }
                    self.net.copy.refuse(w);
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
        // A peer with a rendezvous message of ours in flight is copying it
        // (an exchange): splitting would only add calls on two busy cores.
        if n < self.cfg.cma_split || !self.net.caps(w).coop || self.rndv_out[w] > 0 {
            return false;
        }
        let Some(k) = self.net.split_claim(w) else {
            return false;
        };
        // Chunks: at least 4 (so that both sides get a share), 32 KiB to 2 MiB.
        let chunk = (n / 4).clamp(32 << 10, 2 << 20).next_multiple_of(4096);
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
        // SAFETY: the receive buffer holds `cap` >= n bytes until the request
        // completes.
        let ok = unsafe { self.net.split_receive(w, k, rid, addr, buf, n, chunk) };
        if !ok {
            if let Some(r) = self.reqs.get_mut(rid) {
                r.status.error = MPI_ERR_OTHER;
            }
        }
        self.poll_split();
        true
    }

    /// Sender: the receiver asked to copy together; take chunks until none is left.
    pub(super) fn split_as_sender(&mut self, w: usize, h: &Hdr) {
        let Some(rid) = self.reqs.from_token(h.sreq) else {
            return;
        };
        let src = self.reqs.get(rid).unwrap().buf as *const u8;
        let (n, chunk, k) = (h.total as usize, h.rreq as usize, h.tag as usize);
        // SAFETY: the send buffer holds n bytes until the request completes.
        unsafe { self.net.split_give(w, k, rid, src, h.addr, n, chunk) };
        self.poll_split();
    }

    /// Completes split copies whose bytes are all in.
    pub(super) fn poll_split(&mut self) -> bool {
        let did = self.net.split_poll();
        while let Some((rid, failed)) = self.net.split_take_done() {
            if failed {
                if let Some(q) = self.reqs.get_mut(rid) {
                    q.status.error = MPI_ERR_OTHER;
                }
            }
            self.complete(rid);
        }
        did
    }
}
