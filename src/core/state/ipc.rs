//! Device buffers between the ranks of one node by CUDA IPC: the sender's
//! RTS carries its buffer as an IPC reference (flag CUDA_IPC, the
//! reference in the payload) on the same ring as every other message to
//! that peer, so the pair's order holds; the matched receiver maps the
//! allocation (cached by peer and buffer id, `gpu::ipc`), copies out of it
//! with the driver into its buffer (device or host) on the library's
//! stream, and answers FIN when that copy is done (`State::poll_gpu`). If
//! the mapping fails, the receiver answers CTS instead and the sender
//! streams cells packed from its device buffer.

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
                    eprintln!(
                        "oxmpi[{}]: no CUDA IPC for a send to world rank {w} ({}); staging it",
                        self.rank, e.msg
                    );
                }
                return Ok(false);
            }
        };
        let token = self.reqs.token(rid);
        let req = self.reqs.get_mut(rid).unwrap();
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
                ..Out::ctrl(hdr)
            },
        );
        Ok(true)
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
                    eprintln!(
                        "oxmpi[{}]: {}; the sender streams cells instead",
                        self.rank, e.msg
                    );
                }
                return false;
            }
        };
        let q = self.reqs.get_mut(rid).unwrap();
        // Where the bytes go: straight into a contiguous device (or host)
        // receive buffer, else into the landing area that completion
        // unpacks (a device buffer of a derived type, a host one), or a
        // bounce stored piece by piece (a streamed receive).
        // A device pipeline's buffer takes the copy whole, from device to
        // device, as a contiguous one does.
        let direct = q.staged.as_ref().and_then(|s| s.device_direct());
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
                eprintln!("oxmpi[{}]: {}", self.rank, e.msg);
                q.status.error = e.class;
            }
        }
        self.send_ctrl(w, kind::FIN, sreq, 0);
        self.complete(rid);
        true
    }
}
