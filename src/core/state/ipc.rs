//! Device buffers between the ranks of one node by CUDA IPC: the sender's
//! RTS carries its buffer as an IPC reference (flag CUDA_IPC, the
//! reference in the payload) on the same ring as every other message to
//! that peer, so the pair's order holds; the matched receiver maps the
//! allocation (cached by peer and buffer id, `gpu::ipc`), copies out of it
//! with the driver into its buffer (device or host) on the library's
//! stream, and answers FIN when that copy is done (`State::poll_gpu`). If
//! the mapping fails, the receiver answers CTS instead and the sender
//! streams cells packed from its device buffer; so it does for a message
//! below OXMPI_CUDA_IPC_SHARED_MIN when both processes use one GPU that
//! runs without MPS.

use super::*;

impl State {
    /// Starts the send of request `rid` as a CUDA IPC rendezvous of the
    /// contiguous device buffer at `src`; false, having done nothing, where
    /// that does not apply: a message within the eager limit, a peer not on
    /// this node's shared memory, a buffer the driver cannot export.
    pub(super) fn try_send_ipc(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        tag: i32,
        src: *const u8,
        bytes: usize,
    ) -> Result<bool> {
        if dest == MPI_PROC_NULL || bytes <= self.cfg.eager_limit {
            return Ok(false);
        }
        let c = self.comm(comm)?;
        let (ctx, me, w) = (c.ctx, c.rank, c.peer_world(dest) as usize);
        if !matches!(self.net.link(w), Link::Shm(_)) {
            return Ok(false);
        }
        let r = match crate::gpu::ipc::export(src) {
            Ok(r) => r,
            Err(e) => {
                if std::env::var_os("OXMPI_DEBUG").is_some() {
                    say!(
                        "oxmpi[{}]: no CUDA IPC for a send to world rank {w} ({}); staging it",
                        self.rank,
                        e.msg
                    );
                }
                return Ok(false);
            }
        };
        self.send_ipc_rts(rid, w, ctx, me, tag, bytes, &r, None);
        Ok(true)
    }

    /// Starts the send of request `rid`, a device buffer of a derived type
    /// not packed yet, as a CUDA IPC rendezvous of a packed copy made on
    /// the device: its strided copies go from device to device into a
    /// buffer of the pool (`gpu::take_device`), on the library's stream,
    /// and the RTS waits for them. The pair never crosses PCIe. False,
    /// having done nothing, where `try_send_ipc` would not apply; the
    /// typed buffer stays in the request, so a receiver that cannot map the
    /// copy gets cells packed from it (the CTS's device pipeline).
    pub(super) fn try_send_ipc_packed(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        tag: i32,
        bytes: usize,
    ) -> Result<bool> {
        let staged = self.reqs.get(rid).unwrap().staged.as_ref();
        let device =
            staged.is_some_and(|s| s.kind == crate::gpu::MemKind::Device && s.pack.is_some());
        if !device
            || dest == MPI_PROC_NULL
            || bytes <= self.cfg.eager_limit
            || !crate::gpu::ipc::enabled()
        {
            return Ok(false);
        }
        let c = self.comm(comm)?;
        let (ctx, me, w) = (c.ctx, c.rank, c.peer_world(dest) as usize);
        if !matches!(self.net.link(w), Link::Shm(_)) {
            return Ok(false);
        }
        let (t, count, src) = self
            .reqs
            .get(rid)
            .unwrap()
            .staged
            .as_ref()
            .unwrap()
            .pack
            .clone()
            .unwrap();
        let packed = (|| {
            let buf = crate::gpu::take_device(bytes)?;
            // SAFETY: the send buffer holds `count` elements of `t` until
            // the request completes; `buf` holds at least `bytes` bytes and
            // stays in the request until then (after the copies are done:
            // the receiver's FIN follows its copy, which follows the RTS,
            // which waits for `gate`).
            unsafe { crate::datatype::pack_queued_to(&t, count, src, buf.ptr(), bytes)? };
            let gate = crate::gpu::mark()?;
            let r = crate::gpu::ipc::export(buf.ptr())?;
            Ok::<_, crate::core::error::Error>((buf, gate, r))
        })();
        let (buf, gate, r) = match packed {
            Ok(v) => v,
            Err(e) => {
                if std::env::var_os("OXMPI_DEBUG").is_some() {
                    say!(
                        "oxmpi[{}]: no CUDA IPC for a send of a derived type to world rank {w} ({}); staging it",
                        self.rank, e.msg
                    );
                }
                return Ok(false);
            }
        };
        self.reqs.get_mut(rid).unwrap().staged.as_mut().unwrap().dev = Some(buf);
        self.send_ipc_rts(rid, w, ctx, me, tag, bytes, &r, Some(gate));
        Ok(true)
    }

    /// Sends the RTS of a CUDA IPC rendezvous of request `rid` to world
    /// rank `w`, with reference `r` as its payload, once `gate` is done.
    #[allow(clippy::too_many_arguments)]
    fn send_ipc_rts(
        &mut self,
        rid: ReqId,
        w: usize,
        ctx: u32,
        me: i32,
        tag: i32,
        bytes: usize,
        r: &crate::gpu::ipc::IpcRef,
        gate: Option<crate::gpu::Pending>,
    ) {
        let token = self.reqs.token(rid);
        let req = self.reqs.get_mut(rid).unwrap();
        // The peer, for MPI_Cancel (`cancel_send`).
        req.peer_w = w as u32;
        let st = req.staged.as_mut().unwrap();
        // The reference lives in the request until the RTS is pushed.
        st.data = r.to_bytes().to_vec();
        let payload = st.data.as_ptr();
        let hdr = Hdr {
            kind: kind::RTS,
            flags: flag::CUDA_IPC,
            ctx,
            src: me,
            tag,
            total: bytes as u64,
            sreq: token,
            ..Default::default()
        };
        self.count_rndv(rid, w);
        self.send_out(
            w,
            Out {
                data: payload,
                total: crate::gpu::ipc::WIRE,
                gate,
                ..Out::ctrl(hdr)
            },
        );
    }

    /// The matched receive `rid` of a CUDA IPC rendezvous from world rank
    /// `w`: copies `n` bytes out of the sender's mapped buffer and answers
    /// FIN; false where the mapping failed (the caller answers CTS).
    pub(super) fn recv_ipc(
        &mut self,
        rid: ReqId,
        w: usize,
        sreq: u64,
        r: &crate::gpu::ipc::IpcRef,
        n: usize,
    ) -> bool {
        let src = match crate::gpu::ipc::open(w, r) {
            Ok(p) => p,
            Err(e) => {
                if std::env::var_os("OXMPI_DEBUG").is_some() {
                    say!(
                        "oxmpi[{}]: {}; the sender streams cells instead",
                        self.rank,
                        e.msg
                    );
                }
                return false;
            }
        };
        // Two processes on one GPU without MPS: a short message is cheaper
        // staged than copied across the contexts' switch (the sender then
        // streams cells, as after a failed mapping).
        if n < crate::config::cuda_ipc_shared_min() && crate::gpu::ipc::shares_gpu(w, r.id) {
            return false;
        }
        let q = self.reqs.get_mut(rid).unwrap();
        // Where the bytes go: straight into a contiguous device (or host)
        // receive buffer, else into the landing area that completion
        // unpacks (a device buffer of a derived type, a host one), or a
        // bounce stored piece by piece (a streamed receive).
        // A device pipeline's buffer takes the copy whole, from device to
        // device, as a contiguous one does.
        let direct = q.staged.as_ref().and_then(|s| s.device_direct());
        // A device buffer of a derived type: unpacked straight out of the
        // sender's packed bytes by the driver's strided copies from device
        // to device, on the library's stream.
        let typed = q
            .staged
            .as_ref()
            .filter(|_| direct.is_none())
            .and_then(|s| s.device_typed());
        if let Some((t, count, dst)) = typed {
            // SAFETY: `dst` is the user's device receive buffer of `count`
            // elements of `t` until the request completes (after the
            // copies); `src` maps the sender's `n` packed bytes, kept until
            // our FIN, which waits for them.
            let q2 = unsafe {
                crate::datatype::unpack_queued_from(&t, count, src, n, dst)
                    .and_then(|_| crate::gpu::mark())
            };
            match q2 {
                Ok(copy) => {
                    q.staged.as_mut().unwrap().direct = true;
                    self.gpu_pending.push(super::GpuWait {
                        rid,
                        copy,
                        fin: Some((w, sreq)),
                    });
                    return true;
                }
                Err(e) => {
                    say!("oxmpi[{}]: {}", self.rank, e.msg);
                    q.status.error = e.class;
                    self.send_ctrl(w, kind::FIN, sreq, 0);
                    self.complete(rid);
                    return true;
                }
            }
        }
        let res = if q.streamed() && direct.is_none() {
            let mut b = crate::core::pool::take(n);
            // SAFETY: `src` maps the sender's `n`-byte buffer; `b` holds `n` bytes.
            let res = unsafe { crate::gpu::copy(b.as_mut_ptr(), src, n) };
            if res.is_ok() {
                q.store(0, &b[..n]);
            }
            crate::core::pool::give(b);
            res
        } else {
            let dst = direct.unwrap_or(q.buf);
            // On the library's stream: the FIN and the completion wait for
            // the copy (`State::poll_gpu`), so no call blocks on it.
            // SAFETY: the destination holds `cap` >= n bytes (the receive
            // buffer, its device data or its landing area) until the request
            // completes; `src` maps the sender's buffer of at least `n`
            // bytes, kept until our FIN.
            match unsafe { crate::gpu::copy_async(dst, src, n) } {
                Ok(copy) => {
                    if let (Some(_), Some(s)) = (direct, q.staged.as_mut()) {
                        s.direct = true;
                    }
                    self.gpu_pending.push(super::GpuWait {
                        rid,
                        copy,
                        fin: Some((w, sreq)),
                    });
                    return true;
                }
                Err(e) => Err(e),
            }
        };
        match res {
            Ok(()) => {
                if let (Some(_), Some(s)) = (direct, q.staged.as_mut()) {
                    s.direct = true;
                }
            }
            Err(e) => {
                say!("oxmpi[{}]: {}", self.rank, e.msg);
                q.status.error = e.class;
            }
        }
        self.send_ctrl(w, kind::FIN, sreq, 0);
        self.complete(rid);
        true
    }
}
