//! Outgoing messages: what waits for room on its link, pushed cell by cell.

use super::*;

/// One outgoing message (or the rest of one) waiting for ring space.
pub(super) struct Out {
    pub(super) hdr: Hdr,
    pub(super) first_kind: u16,
    pub(super) rest_kind: u16,
    pub(super) data: *const u8,
    pub(super) total: usize,
    pub(super) sent: usize,
    pub(super) started: bool,
    pub(super) done_req: Option<ReqId>,
    /// A non-contiguous message packed a cell at a time instead of read
    /// from `data`: the stream, and a packed cell that did not fit yet.
    pub(super) pack: Option<Box<(Stream, Vec<u8>)>>,
    /// What memory `data` is (the request's buffer kind).
    pub(super) mem: crate::gpu::MemKind,
    /// An RTS that takes its `total` bytes at `data` with it in one push
    /// (`Net::push_whole`, on a link with `Caps::fetch`).
    pub(super) whole: bool,
    /// The copy of a device buffer into `data` on the library's stream:
    /// nothing is pushed before it is done (and what is queued behind this
    /// message to the same peer waits too, so the pair's order holds).
    pub(super) gate: Option<crate::gpu::Pending>,
    /// A contiguous device buffer read ahead into pinned chunks as its
    /// cells go out (`core::pipe`), instead of from `data`.
    pub(super) pipe: Option<Box<crate::core::pipe::SendPipe>>,
}

impl State {
    pub(super) fn send_ctrl(&mut self, w: usize, k: u16, sreq: u64, rreq: u64) {
        if self.net.link(w) == Link::Local {
            if let Some(rid) = self.reqs.from_token(sreq) {
                self.complete(rid);
            }
            return;
        }
        let hdr = Hdr {
            kind: k,
            sreq,
            rreq,
            ..Default::default()
        };
        self.send_out(w, Out::ctrl(hdr));
    }

    /// Sends `out` now if the ring has room and nothing is queued before it; else queues it.
    pub(super) fn send_out(&mut self, w: usize, mut out: Out) {
        if self.outq[w].is_empty() {
            if self.push_cells(w, &mut out) {
                if let Some(rid) = out.done_req {
                    self.complete(rid);
                }
                return;
            }
            self.out_busy += 1;
        }
        self.outq[w].push_back(out);
    }

    /// Pushes as many cells of `out` as fit. True when it is fully sent.
    pub(super) fn push_cells(&mut self, w: usize, out: &mut Out) -> bool {
        if !self.net.carries(w) {
            return true;
        }
        if let Some(g) = out.gate.as_ref() {
            match g.done() {
                Ok(false) => return false,
                Ok(true) => {}
                Err(e) => say!("oxmpi[{}]: {} (a send to world rank {w})", self.rank, e.msg),
            }
            out.gate = None;
        }
        if out.whole {
            // Device memory only where the link takes it
            // (`State::try_send_device_whole`).
            let device = out.mem == crate::gpu::MemKind::Device;
            // SAFETY: `data` holds `total` bytes until the send's request
            // completes, which waits for the link's `done`.
            unsafe {
                self.net
                    .push_whole(w, &out.hdr, out.data, out.total, device)
            };
            return true;
        }
        let cap = self.net.frag(w);
        if let Some(p) = out.pipe.as_mut() {
            loop {
                if out.started && out.sent >= out.total {
                    if let (Some(e), Some(rid)) = (p.failed.take(), out.done_req) {
                        say!("oxmpi[{}]: {} (a send to world rank {w})", self.rank, e.msg);
                        if let Some(r) = self.reqs.get_mut(rid) {
                            r.status.error = e.class;
                        }
                    }
                    return true;
                }
                // The chunk's bytes once its copy from the device is done.
                let Some(bytes) = p.chunk_at(out.sent) else {
                    return false;
                };
                let payload = &bytes[..bytes.len().min(cap)];
                let mut h = out.hdr;
                h.kind = if out.started {
                    out.rest_kind
                } else {
                    out.first_kind
                };
                h.offset = out.sent as u64;
                h.len = payload.len() as u32;
                if !self.net.push(w, &h, payload, false) {
                    return false;
                }
                out.started = true;
                out.sent += payload.len();
            }
        }
        loop {
            if out.started && out.sent >= out.total {
                return true;
            }
            let n = (out.total - out.sent).min(cap);
            let mut h = out.hdr;
            h.kind = if out.started {
                out.rest_kind
            } else {
                out.first_kind
            };
            h.offset = out.sent as u64;
            if let Some(p) = out.pack.as_mut() {
                // The next cell's bytes, packed once (kept if the ring is full).
                let (stream, cell) = &mut **p;
                if cell.is_empty() && n > 0 {
                    cell.resize(n, 0);
                    let got = stream.pack(cell);
                    cell.truncate(got);
                }
            }
            let payload: &[u8] = if n == 0 {
                &[]
            } else if let Some(p) = out.pack.as_ref() {
                &p.1
            } else {
                // The cells are filled by the CPU (a device buffer is staged
                // before it gets here).
                debug_assert!(crate::gpu::host_only(out.mem, "cell copy").is_ok());
                // SAFETY: `data` holds `total` bytes for as long as the message is
                // outgoing (user buffer of an incomplete request, per MPI rules).
                unsafe { std::slice::from_raw_parts(out.data.add(out.sent), n) }
            };
            let n = payload.len();
            h.len = n as u32;
            // EAGER and FRAG cells use none of the fields an inline payload covers.
            let inline = h.kind == kind::EAGER || h.kind == kind::FRAG;
            if !self.net.push(w, &h, payload, inline) {
                return false;
            }
            if let Some(p) = out.pack.as_mut() {
                p.1.clear();
                if n == 0 && out.started {
                    // The typemap ended before `total` (cannot happen for a
                    // valid send); stop rather than loop.
                    return true;
                }
            }
            out.started = true;
            out.sent += n;
        }
    }

    pub(super) fn pump(&mut self, w: usize) -> bool {
        let mut did = false;
        while let Some(mut out) = self.outq[w].pop_front() {
            let done = self.push_cells(w, &mut out);
            if !done {
                self.outq[w].push_front(out);
                break;
            }
            did = true;
            if let Some(rid) = out.done_req {
                self.complete(rid);
            }
        }
        if self.outq[w].is_empty() {
            self.out_busy -= 1;
        }
        did
    }
}

impl Out {
    pub(super) fn ctrl(hdr: Hdr) -> Out {
        Out {
            first_kind: hdr.kind,
            rest_kind: hdr.kind,
            hdr,
            data: std::ptr::null(),
            total: 0,
            sent: 0,
            started: false,
            done_req: None,
            pack: None,
            mem: crate::gpu::MemKind::Host,
            whole: false,
            gate: None,
            pipe: None,
        }
    }
}
