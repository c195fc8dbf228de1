//! The general send path: the staging policy's choice for one message,
//! read against the link's capabilities, and buffered sends through the
//! attached buffer.

use super::*;

impl State {
    /// Starts a send on request `rid` (already validated).
    ///
    /// # Safety
    /// `buf` holds `bytes` bytes (or the request's staged type map) and stays
    /// valid until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch_send(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        tag: i32,
        buf: *const u8,
        bytes: usize,
        mode: SendMode,
    ) -> Result<()> {
        let mut buf = buf;
        let unpacked = self
            .reqs
            .get(rid)
            .unwrap()
            .staged
            .as_ref()
            .is_some_and(|s| s.pack.is_some());
        if unpacked {
            let ipc_src = self
                .reqs
                .get(rid)
                .unwrap()
                .staged
                .as_ref()
                .and_then(|s| s.ipc_src);
            if let Some(src) = ipc_src.filter(|_| mode != SendMode::Buffered) {
                if self.try_send_ipc(rid, comm, dest, tag, src, bytes)? {
                    return Ok(());
                }
            }
            if mode != SendMode::Buffered
                && (self.try_send_device_whole(rid, comm, dest, tag, bytes)?
                    || self.try_send_ipc_packed(rid, comm, dest, tag, bytes)?)
            {
                return Ok(());
            }
            if mode != SendMode::Buffered && self.try_send_iov(rid, comm, dest, tag, bytes)? {
                return Ok(());
            }
            // A contiguous device buffer above the pipeline's threshold
            // streams too: its cells are read ahead from the device in
            // pinned chunks (`core::pipe`) instead of after one copy of the
            // whole buffer.
            let piped = bytes > crate::config::gpu_pipeline().0
                && self
                    .reqs
                    .get(rid)
                    .unwrap()
                    .staged
                    .as_ref()
                    .is_some_and(|s| {
                        s.kind == crate::gpu::MemKind::Device
                            && s.pack.as_ref().is_some_and(|(t, c, _)| t.is_contiguous(*c))
                    });
            if mode != SendMode::Buffered
                && (bytes > crate::config::pack_stream() || piped)
                && bytes > self.cfg.eager_limit
                && self.carries_to(comm, dest)
            {
                // A rendezvous with no contiguous source (address 0): the
                // receiver answers CTS and the cells are packed as they go out.
                // SAFETY: a rendezvous send reads no bytes at `buf` before the
                // CTS, whose handler packs from the typed buffer instead.
                return unsafe {
                    self.start_send(rid, comm, dest, tag, std::ptr::null(), bytes, mode)
                };
            }
            buf = self.pack_staged(rid, comm, dest, bytes, mode)?;
        }
        if mode == SendMode::Buffered && dest != MPI_PROC_NULL {
            // Space held by earlier buffered messages is released as they complete:
            // drain what progress can finish before deciding that the buffer is full.
            let mut slot = self.bsend_alloc(bytes);
            while slot.is_none() && self.progress() {
                slot = self.bsend_alloc(bytes);
            }
            let (off, region) = slot.ok_or_else(|| {
                err!(
                    MPI_ERR_BUFFER,
                    "a buffered send of {bytes} bytes (+{MPI_BSEND_OVERHEAD} overhead) does not fit in the attached buffer ({})",
                    self.bsend.as_ref().map(|b| format!("{} bytes", b.size)).unwrap_or_else(|| "none attached".into())
                )
            })?;
            // SAFETY: region has room for `bytes`; buf holds `bytes` (validated).
            unsafe { std::ptr::copy_nonoverlapping(buf, region, bytes) };
            let mut inner = Request::new(ReqKind::Send, comm, region, bytes);
            // Attached buffers hold at most i32::MAX bytes (MPI_Buffer_attach's int size).
            inner.bsend_region = Some(off as u32);
            let irid = self.reqs.insert(inner);
            let token = self.reqs.token(irid);
            // SAFETY: region holds `bytes` bytes until the inner request completes.
            unsafe { self.start_send(irid, comm, dest, tag, region, bytes, SendMode::Standard)? };
            let w = self
                .comm(comm)
                .map_or(u32::MAX, |c| c.peer_world(dest) as u32);
            if let Some(r) = self.reqs.get_mut(rid) {
                r.bsend_msg = Some((w, token));
            }
            self.complete(rid);
            return Ok(());
        }
        // SAFETY: buf holds `bytes` bytes (validated) and, by MPI's rules, stays valid
        // until the request completes.
        let res = unsafe { self.start_send(rid, comm, dest, tag, buf, bytes, mode) };
        if let Some(g) = self.send_gate.take() {
            // The message did not take the copy (an error, MPI_PROC_NULL):
            // it must end before the staging area can go.
            while matches!(g.done(), Ok(false)) {
                std::hint::spin_loop();
            }
        }
        res
    }

    /// Starts the send of request `rid`, a contiguous device buffer, as a
    /// rendezvous whose buffer the link takes as it is (UCX that reports
    /// CUDA memory: `Caps::device`); false, having done nothing, where
    /// that does not apply: a message within the link's eager limit (staged
    /// through host cells, as UCX would), a non-contiguous or host buffer,
    /// a link that takes no device memory.
    fn try_send_device_whole(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        tag: i32,
        bytes: usize,
    ) -> Result<bool> {
        let device = self
            .reqs
            .get(rid)
            .unwrap()
            .staged
            .as_ref()
            .is_some_and(|s| s.kind == crate::gpu::MemKind::Device);
        if !device || dest == MPI_PROC_NULL || bytes <= self.cfg.ucx_eager_limit {
            return Ok(false);
        }
        let c = self.comm(comm)?;
        let (ctx, me, w) = (c.ctx, c.rank, c.peer_world(dest) as usize);
        let caps = self.net.caps(w);
        if !(caps.device && caps.fetch) {
            return Ok(false);
        }
        let token = self.reqs.token(rid);
        let st = self.reqs.get_mut(rid).unwrap().staged.as_mut().unwrap();
        let src = match st.pack.as_ref() {
            Some((t, count, u))
                if st.kind == crate::gpu::MemKind::Device && t.is_contiguous(*count) =>
            {
                u.wrapping_offset(t.start())
            }
            _ => return Ok(false),
        };
        // Nothing is packed: the link reads the device buffer.
        st.pack = None;
        let hdr = Hdr {
            kind: kind::RTS,
            ctx,
            src: me,
            tag,
            total: bytes as u64,
            sreq: token,
            addr: src as u64,
            ..Default::default()
        };
        self.count_rndv(rid, w);
        self.send_out(
            w,
            Out {
                data: src,
                total: bytes,
                mem: crate::gpu::MemKind::Device,
                whole: true,
                ..Out::ctrl(hdr)
            },
        );
        Ok(true)
    }

    /// Packs the staged send data of request `rid` (not packed yet) and
    /// returns its address. A device buffer going to another rank by a
    /// message is copied on the library's stream instead, and the
    /// message waits for that copy (`send_gate`), so the call does not
    /// block on the GPU; a buffered send, or one to this rank delivered in
    /// place, is copied at once.
    fn pack_staged(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        bytes: usize,
        mode: SendMode,
    ) -> Result<*mut u8> {
        let to_link = dest != MPI_PROC_NULL
            && mode != SendMode::Buffered
            && self
                .comm(comm)
                .ok()
                .filter(|c| dest >= 0 && dest < c.peer_size())
                .is_some_and(|c| self.net.link(c.peer_world(dest) as usize) != Link::Local);
        let r = self.reqs.get_mut(rid).unwrap();
        let st = r.staged.as_mut().unwrap();
        if to_link && st.kind == crate::gpu::MemKind::Device && bytes > 0 {
            // A device buffer: its copies (one for a contiguous buffer,
            // strided ones for a derived type) go on the library's stream,
            // and the message waits for them.
            let (t, count, src) = st.pack.take().unwrap();
            st.data = crate::core::pool::take_pinned(bytes);
            // SAFETY: the device buffer holds `count` elements of `t` until
            // the send completes; the staging area is the request's own.
            let queued = unsafe {
                crate::datatype::pack_queued(&t, count, src, &mut st.data[..bytes])
                    .and_then(|_| crate::gpu::mark())
            };
            r.buf = st.data.as_mut_ptr();
            match queued {
                Ok(p) => self.send_gate = Some(p),
                // SAFETY: as above; made at once instead (after what was
                // queued, which the synchronous copies follow on the device).
                Err(_) => unsafe {
                    crate::datatype::pack_mem(&t, count, src, st.kind, &mut st.data[..bytes])?
                },
            }
            return Ok(r.buf);
        }
        r.buf = st.ensure_packed()?;
        Ok(r.buf)
    }
}
