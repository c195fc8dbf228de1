//! The point-to-point engine: arrivals from the links (eager, fragments,
//! control messages) matched against posted receives, the unexpected store,
//! and the operations the abi layer starts (sends, receives, probes, cancel).

use super::*;
use crate::transport::Sink;

/// Appends `b` to `v` with `sys::copy` (see there for why not memcpy).
pub(super) fn append(v: &mut Vec<u8>, b: &[u8]) {
    let at = v.len();
    v.reserve(b.len());
    // SAFETY: `reserve` made room for b.len() more bytes after `at`, all of
    // which the copy writes before the length covers them.
    unsafe {
        crate::sys::copy(v.as_mut_ptr().add(at), b.as_ptr(), b.len());
        v.set_len(at + b.len());
    }
}

/// Header tokens of fast-path sends (no request) have this bit: the
/// answer to their cancel is looked up in `State::fast_cancels`.
pub const FAST_SEND: u64 = 1 << 63;
/// Fast-path sends remembered for MPI_Cancel.
pub const FAST_RING: usize = 4096;
/// The header token of a message no MPI_Cancel can name (a blocking
/// send's on the fast path).
pub const NO_TOKEN: u64 = u64::MAX;

pub(super) enum UKind {
    Eager {
        data: Vec<u8>,
        complete: bool,
        claimed: Option<ReqId>,
    },
    Rts {
        sreq: u64,
        addr: u64,
        /// Segments in the sender's list at `addr` (0: contiguous at `addr`).
        niov: u64,
        /// The sender's device buffer, to reach by CUDA IPC.
        ipc: Option<Box<crate::gpu::ipc::IpcRef>>,
    },
}

/// A message that arrived before its receive.
pub(super) struct Unexp {
    pub(super) src: i32,
    pub(super) tag: i32,
    pub(super) peer: usize,
    pub(super) total: usize,
    pub(super) sync_sreq: Option<u64>,
    /// The sender's token (0: unknown), which its MPI_Cancel names.
    pub(super) sreq: u64,
    pub(super) kind: UKind,
}

#[derive(Clone, Copy)]
pub(super) enum AsmTarget {
    Req(ReqId),
    Unexp(u64),
}

/// The multi-cell eager message currently arriving from one peer.
pub(super) struct Asm {
    pub(super) target: AsmTarget,
    pub(super) total: usize,
    pub(super) got: usize,
    /// Ssend token to acknowledge once the whole message is in.
    pub(super) sync: Option<u64>,
}

impl Sink for State {
    #[inline]
    fn net(&mut self) -> &mut Net {
        &mut self.net
    }

    /// The common case first, inline in the links' poll loops: a whole
    /// eager message (not synchronous) that a posted receive takes. The
    /// rest, and a message no receive takes yet, go through `handle_cell`.
    #[inline]
    fn arrive(&mut self, w: usize, h: &Hdr, payload: &[u8]) {
        if h.kind == kind::EAGER && h.flags & flag::SYNC == 0 && h.total == payload.len() as u64 {
            if let Some(rid) = self.matcher.take_posted(h.ctx, h.src, h.tag) {
                self.deliver_eager(rid, h.src, h.tag, payload.len(), payload);
                self.complete(rid);
                return;
            }
        }
        self.handle_cell(w, h, payload)
    }

    fn done(&mut self, token: u64) {
        self.link_done(token)
    }
}

impl State {
    /// The link is done with a whole send's buffer or a fetch's receive
    /// buffer: that request completes (a fetch into a bounce buffer first
    /// stores what came).
    pub(super) fn link_done(&mut self, token: u64) {
        let Some(rid) = self.reqs.from_token(token) else {
            return;
        };
        if let Some((b, n)) = self.fetch_bounce.remove(&token) {
            self.reqs.get_mut(rid).unwrap().land(b, n);
        }
        self.complete(rid);
    }

    pub(super) fn handle_cell(&mut self, w: usize, h: &Hdr, payload: &[u8]) {
        match h.kind {
            kind::EAGER => {
                let sync = (h.flags & flag::SYNC != 0).then_some(h.sreq);
                self.incoming_eager(
                    w,
                    h.ctx,
                    h.src,
                    h.tag,
                    h.total as usize,
                    payload,
                    sync,
                    h.sreq,
                );
            }
            kind::FRAG => self.incoming_frag(w, payload),
            kind::RTS => self.incoming_rts(w, h, payload),
            kind::CTS if h.flags & flag::SPLIT != 0 => self.split_as_sender(w, h),
            kind::CTS => {
                if let Some(rid) = self.reqs.from_token(h.sreq) {
                    let r = self.reqs.get_mut(rid).unwrap();
                    // A non-contiguous send not packed yet (a streamed one,
                    // or a vectored one the receiver could not copy
                    // directly) is packed cell by cell as it goes out.
                    // A device buffer goes through the device pipeline:
                    // chunks packed ahead on the library's stream.
                    let pipe = r
                        .staged
                        .as_mut()
                        .filter(|s| s.kind == crate::gpu::MemKind::Device)
                        .and_then(|s| s.pack.take())
                        .map(|(t, count, src)| {
                            let mut st = Stream::new(t, count, src as *mut u8);
                            st.kind = crate::gpu::MemKind::Device;
                            // SAFETY: the send buffer holds its `count`
                            // elements until the request completes, which
                            // waits for this `Out`.
                            Box::new(unsafe {
                                crate::core::pipe::SendPipe::new(st, h.total as usize)
                            })
                        });
                    let pack = r.staged.as_mut().and_then(|s| {
                        let kind = s.kind;
                        s.pack.take().map(|(t, count, src)| {
                            let mut st = Stream::new(t, count, src as *mut u8);
                            st.kind = kind;
                            Box::new((st, Vec::new()))
                        })
                    });
                    let hdr = Hdr {
                        rreq: h.rreq,
                        total: h.total,
                        ..Default::default()
                    };
                    let out = Out {
                        hdr,
                        first_kind: kind::DATA,
                        rest_kind: kind::DATA,
                        data: r.buf,
                        total: h.total as usize,
                        sent: 0,
                        started: false,
                        done_req: Some(rid),
                        pack,
                        mem: r.mem,
                        whole: false,
                        gate: None,
                        pipe,
                    };
                    self.send_out(w, out);
                }
            }
            kind::DATA => {
                if let Some(rid) = self.reqs.from_token(h.rreq) {
                    let r = self.reqs.get_mut(rid).unwrap();
                    r.take_piece(h.offset as usize, payload);
                    if r.got >= r.total {
                        self.complete(rid);
                    }
                }
            }
            kind::FIN | kind::ACK => {
                if let Some(rid) = self.reqs.from_token(h.sreq) {
                    self.complete(rid);
                }
            }
            kind::CANCEL => {
                let dropped = self.drop_unexpected(w, h.sreq);
                self.send_ctrl(w, kind::CANCEL_ACK, h.sreq, dropped as u64);
            }
            kind::CANCEL_ACK => self.cancel_answered(h.sreq, h.rreq == 1),
            _ => {}
        }
    }

    /// Receive `rid`, matched by an eager message of `total` bytes from
    /// (src, tag), takes its envelope and the first piece, `first`.
    #[inline]
    fn deliver_eager(&mut self, rid: ReqId, src: i32, tag: i32, total: usize, first: &[u8]) {
        let r = self.reqs.get_mut(rid).unwrap();
        r.posted = false;
        r.status.source = src;
        r.status.tag = tag;
        r.status.bytes = total as u64;
        if total > r.cap {
            r.status.error = MPI_ERR_TRUNCATE;
        }
        r.store(0, first);
    }

    /// The tools interface's counters of a message of `total` bytes that
    /// arrived.
    #[inline(always)]
    fn note_arrival(&self, total: usize) {
        use crate::core::profile::{pv, pv_add};
        pv_add(pv::RECV_MSGS, 1);
        pv_add(pv::RECV_BYTES, total as u64);
    }

    /// The tools interface's counters of a message that found no receive
    /// (now in the unexpected queue).
    #[inline(always)]
    fn note_unexpected(&self, w: usize, tag: i32, bytes: usize) {
        use crate::core::profile::{pv, pv_add, pv_level};
        pv_add(pv::UNEXPECTED, 1);
        pv_level(pv::UNEXPECTED_HWM, self.matcher.unexpected_len() as u64);
        crate::core::profile::unexpected_arrived(w as i64, tag as i64, bytes as u64);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn incoming_eager(
        &mut self,
        w: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        total: usize,
        first: &[u8],
        sync: Option<u64>,
        sreq: u64,
    ) {
        let multi = total > first.len();
        let uid = self.next_uid;
        self.note_arrival(total);
        match self.matcher.arrive(ctx, src, tag, uid) {
            Some(rid) => {
                self.deliver_eager(rid, src, tag, total, first);
                if multi {
                    let r = self.reqs.get_mut(rid).unwrap();
                    r.total = total;
                    r.got = first.len();
                    self.asm[w] = Some(Asm {
                        target: AsmTarget::Req(rid),
                        total,
                        got: first.len(),
                        sync,
                    });
                } else {
                    self.complete(rid);
                    if let Some(s) = sync {
                        self.send_ctrl(w, kind::ACK, s, 0);
                    }
                }
            }
            None => {
                self.note_unexpected(w, tag, total);
                self.next_uid += 1;
                let mut data = Vec::with_capacity(total);
                append(&mut data, first);
                if multi {
                    self.asm[w] = Some(Asm {
                        target: AsmTarget::Unexp(uid),
                        total,
                        got: first.len(),
                        sync: None,
                    });
                }
                self.unexp.insert(
                    uid,
                    Unexp {
                        src,
                        tag,
                        peer: w,
                        total,
                        sync_sreq: sync,
                        sreq,
                        kind: UKind::Eager {
                            data,
                            complete: !multi,
                            claimed: None,
                        },
                    },
                );
            }
        }
    }

    pub(super) fn incoming_frag(&mut self, w: usize, payload: &[u8]) {
        let Some(a) = self.asm[w].as_mut() else {
            return;
        };
        let off = a.got;
        a.got += payload.len();
        let finished = a.got >= a.total;
        let target = a.target;
        let sync = a.sync;
        if finished {
            self.asm[w] = None;
        }
        match target {
            AsmTarget::Req(rid) => {
                let Some(r) = self.reqs.get_mut(rid) else {
                    return;
                };
                r.take_piece(off, payload);
                if finished {
                    self.complete(rid);
                    if let Some(s) = sync {
                        self.send_ctrl(w, kind::ACK, s, 0);
                    }
                }
            }
            AsmTarget::Unexp(uid) => {
                let Some(u) = self.unexp.get_mut(&uid) else {
                    return;
                };
                if let UKind::Eager {
                    data,
                    complete,
                    claimed,
                } = &mut u.kind
                {
                    append(data, payload);
                    if finished {
                        *complete = true;
                        if let Some(rid) = claimed.take() {
                            self.deliver_unexp(rid, uid);
                        }
                    }
                }
            }
        }
    }

    pub(super) fn incoming_rts(&mut self, w: usize, h: &Hdr, payload: &[u8]) {
        let uid = self.next_uid;
        let ipc = (h.flags & flag::CUDA_IPC != 0)
            .then(|| crate::gpu::ipc::IpcRef::from_bytes(payload))
            .flatten()
            .map(Box::new);
        self.note_arrival(h.total as usize);
        match self.matcher.arrive(h.ctx, h.src, h.tag, uid) {
            Some(rid) => self.start_rndv(
                rid,
                w,
                h.src,
                h.tag,
                h.total as usize,
                h.sreq,
                h.addr,
                if h.flags & flag::IOV != 0 { h.rreq } else { 0 },
                ipc,
            ),
            None => {
                self.note_unexpected(w, h.tag, h.total as usize);
                self.next_uid += 1;
                self.unexp.insert(
                    uid,
                    Unexp {
                        src: h.src,
                        tag: h.tag,
                        peer: w,
                        total: h.total as usize,
                        sync_sreq: None,
                        sreq: h.sreq,
                        kind: UKind::Rts {
                            sreq: h.sreq,
                            addr: h.addr,
                            niov: if h.flags & flag::IOV != 0 { h.rreq } else { 0 },
                            ipc,
                        },
                    },
                );
            }
        }
    }

    // ---------------------------------------------------------------- operations

    /// Starts a send of `bytes` bytes at `buf` to rank `dest` of `comm`.
    ///
    /// # Safety
    /// `buf` is readable for `bytes` bytes until request `rid` completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn start_send(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        tag: i32,
        buf: *const u8,
        bytes: usize,
        mode: SendMode,
    ) -> Result<()> {
        if dest == MPI_PROC_NULL {
            let r = self.reqs.get_mut(rid).unwrap();
            r.status = Status::proc_null();
            self.complete(rid);
            return Ok(());
        }
        let c = self.comm(comm)?;
        let (ctx, src, w) = (c.ctx, c.rank, c.peer_world(dest) as usize);
        // SAFETY: forwarded contract.
        unsafe { self.start_send_to(rid, ctx, src, w, tag, buf, bytes, mode) }
    }

    /// The eager fast path of a standard or ready send of contiguous bytes:
    /// when the message fits in one cell to a peer on this node, nothing is
    /// queued before it, and the arguments are valid, pushes the cell and
    /// returns true (the send is complete). Otherwise returns false having
    /// done nothing, and the caller takes the general path, which also
    /// reports invalid arguments.
    ///
    /// # Safety
    /// `buf` is readable for `bytes` bytes.
    #[inline]
    pub unsafe fn try_send_now(
        &mut self,
        comm: c_int,
        dest: i32,
        tag: i32,
        buf: *const u8,
        bytes: usize,
        cancellable: bool,
    ) -> bool {
        if tag < 0 {
            return false;
        }
        let Ok(c) = self.comm(comm) else {
            return false;
        };
        if dest < 0 || dest >= c.peer_size() {
            return false;
        }
        let (ctx, src, w) = (c.ctx, c.rank, c.peer_world(dest) as usize);
        if !self.outq[w].is_empty() || bytes > self.cfg.eager_limit {
            return false;
        }
        // A nonblocking send's message keeps a token MPI_Cancel can name
        // (`cancel_fast_send`); a blocking one's cannot be cancelled.
        let sreq = if cancellable {
            FAST_SEND | (self.fast_seq + 1)
        } else {
            NO_TOKEN
        };
        let hdr = Hdr {
            kind: kind::EAGER,
            ctx,
            src,
            tag,
            len: bytes as u32,
            total: bytes as u64,
            sreq,
            ..Default::default()
        };
        let payload = if bytes == 0 {
            &[][..]
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(buf, bytes) }
        };
        let sent = self.net.push_now(w, &hdr, payload, true);
        if sent && crate::core::profile::tools_on() {
            self.note_send(w, bytes);
        }
        if sent && cancellable {
            self.fast_seq += 1;
            self.fast_ring[self.fast_seq as usize % FAST_RING] = (w as u32, sreq);
        }
        sent
    }

    /// The eager fast path of a blocking receive from one rank of this node:
    /// when no receive is posted and no message waits, the next cell from
    /// that rank is taken straight into `buf` if it is a whole eager message
    /// the receive accepts. `Other` when the cell (or the state) needs the
    /// general path; the caller then posts the receive as usual, and the cell
    /// is still in the ring for it.
    ///
    /// # Safety
    /// `buf` is writable for `cap` bytes.
    #[inline]
    pub unsafe fn try_recv_now(
        &mut self,
        ctx: u32,
        src: i32,
        w: usize,
        tag: i32,
        buf: *mut u8,
        cap: usize,
    ) -> RecvNow {
        if !self.matcher.is_idle() {
            return RecvNow::Other;
        }
        let Some((h, data)) = self.net.peek(w) else {
            return if self.net.peeks(w) {
                RecvNow::Empty
            } else {
                RecvNow::Other
            };
        };
        let n = h.len as usize;
        if h.kind != kind::EAGER
            || h.flags & flag::SYNC != 0
            || h.total != n as u64
            || n > cap
            || h.ctx != ctx
            || h.src != src
            || (tag != MPI_ANY_TAG && tag != h.tag)
        {
            return RecvNow::Other;
        }
        // SAFETY: the cell's payload holds `n` <= `cap` bytes until release;
        // `buf` holds `cap` (the caller's contract).
        unsafe { crate::sys::copy(buf, data, n) };
        self.net.release(w);
        crate::core::profile::pv_add(crate::core::profile::pv::RECV_MSGS, 1);
        crate::core::profile::pv_add(crate::core::profile::pv::RECV_BYTES, n as u64);
        RecvNow::Got(Status {
            source: src,
            tag: h.tag,
            error: MPI_SUCCESS,
            bytes: n as u64,
            cancelled: false,
        })
    }

    /// Starts a send with an explicit envelope: context `ctx`, source rank `src`
    /// as the receiver will match it, destination world rank `w`.
    ///
    /// # Safety
    /// As for `start_send`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn start_send_to(
        &mut self,
        rid: ReqId,
        ctx: u32,
        src: i32,
        w: usize,
        tag: i32,
        buf: *const u8,
        bytes: usize,
        mode: SendMode,
    ) -> Result<()> {
        let token = self.reqs.token(rid);
        let sync = mode == SendMode::Sync;
        if let Some(r) = self.reqs.get_mut(rid) {
            r.peer_w = w as u32;
        }
        crate::core::profile::sent(w, bytes);
        if crate::core::profile::tools_on() {
            self.note_send(w, bytes);
        }
        match self.net.link(w) {
            Link::Local => {
                let data = if bytes == 0 {
                    &[][..]
                } else {
                    // SAFETY: the send buffer holds `bytes` bytes (checked by the caller).
                    unsafe { std::slice::from_raw_parts(buf, bytes) }
                };
                self.incoming_eager(w, ctx, src, tag, bytes, data, sync.then_some(token), token);
                if !sync {
                    self.complete(rid);
                }
                Ok(())
            }
            Link::Shm(_) | Link::Loopback | Link::Ucx => {
                let mut hdr = Hdr {
                    ctx,
                    src,
                    tag,
                    total: bytes as u64,
                    sreq: token,
                    ..Default::default()
                };
                let mem = self
                    .reqs
                    .get(rid)
                    .map_or(crate::gpu::MemKind::Host, |r| r.mem);
                // A link whose copies do not serve device memory (none does
                // yet) never gets a device buffer.
                if mem != crate::gpu::MemKind::Host && !self.net.caps(w).device {
                    crate::gpu::host_only(mem, "send to this peer's link")?;
                }
                // Over UCX eager goes further: a rendezvous costs a round
                // trip more there than the copies it saves, up to about
                // 128 KiB (docs/performance.md, across hosts).
                let eager = if self.net.link(w) == Link::Ucx {
                    self.cfg.ucx_eager_limit
                } else {
                    self.cfg.eager_limit
                };
                let out = if bytes <= eager {
                    if sync {
                        hdr.flags = flag::SYNC;
                    }
                    Out {
                        hdr,
                        first_kind: kind::EAGER,
                        rest_kind: kind::FRAG,
                        data: buf,
                        total: bytes,
                        sent: 0,
                        started: false,
                        done_req: (!sync).then_some(rid),
                        pack: None,
                        mem,
                        whole: false,
                        gate: None,
                        pipe: None,
                    }
                } else {
                    hdr.kind = kind::RTS;
                    hdr.addr = buf as u64;
                    self.count_rndv(rid, w);
                    if !buf.is_null() && self.net.caps(w).fetch {
                        // The whole buffer goes with the RTS; the request
                        // completes at the link's `done` for its token.
                        Out {
                            data: buf,
                            total: bytes,
                            mem,
                            whole: true,
                            ..Out::ctrl(hdr)
                        }
                    } else {
                        Out::ctrl(hdr)
                    }
                };
                let mut out = out;
                // A staged device buffer still being copied into its staging
                // area (`launch_send`): the message waits for that copy.
                out.gate = self.send_gate.take();
                self.send_out(w, out);
                Ok(())
            }
            Link::Unreachable => Err(err!(
                MPI_ERR_OTHER,
                "world rank {w} is on another host and no inter-node transport is available"
            )),
        }
    }

    /// The tools interface's counters of a send of `bytes` to world rank
    /// `w`: by link, and eager or rendezvous.
    #[cold]
    #[inline(never)]
    fn note_send(&self, w: usize, bytes: usize) {
        use crate::core::profile::{pv, pv_add};
        let (msgs, by, eager) = match self.net.link(w) {
            Link::Local => (pv::SEND_SELF_MSGS, pv::SEND_SELF_BYTES, usize::MAX),
            Link::Ucx => (
                pv::SEND_UCX_MSGS,
                pv::SEND_UCX_BYTES,
                self.cfg.ucx_eager_limit,
            ),
            Link::Shm(_) | Link::Loopback => {
                (pv::SEND_SHM_MSGS, pv::SEND_SHM_BYTES, self.cfg.eager_limit)
            }
            Link::Unreachable => return,
        };
        pv_add(msgs, 1);
        pv_add(by, bytes as u64);
        pv_add(if bytes <= eager { pv::EAGER } else { pv::RNDV }, 1);
    }

    /// Whether rank `dest` of `comm` is reached through a link that carries
    /// messages (where a send can stream its packed cells).
    pub fn carries_to(&self, comm: c_int, dest: i32) -> bool {
        self.comm(comm)
            .ok()
            .filter(|c| dest >= 0 && dest < c.peer_size())
            .is_some_and(|c| self.net.carries(c.peer_world(dest) as usize))
    }

    /// Starts the send of request `rid`, whose staged data is a segment list
    /// not packed yet, as a vectored rendezvous (the receiver copies from the
    /// segments directly). Returns false, having done nothing, where that
    /// cannot work: a short message, a peer without CMA, MPI_PROC_NULL.
    pub fn try_send_iov(
        &mut self,
        rid: ReqId,
        comm: c_int,
        dest: i32,
        tag: i32,
        bytes: usize,
    ) -> Result<bool> {
        if dest == MPI_PROC_NULL || bytes <= self.cfg.eager_limit {
            return Ok(false);
        }
        let c = self.comm(comm)?;
        let (ctx, src, w) = (c.ctx, c.rank, c.peer_world(dest) as usize);
        if !self.net.caps(w).vectored {
            return Ok(false);
        }
        let token = self.reqs.token(rid);
        let r = self.reqs.get(rid).unwrap();
        let Some(iov) = r.staged.as_ref().map(|s| &s.iov).filter(|v| !v.is_empty()) else {
            return Ok(false);
        };
        let hdr = Hdr {
            kind: kind::RTS,
            flags: flag::IOV,
            ctx,
            src,
            tag,
            total: bytes as u64,
            sreq: token,
            addr: iov.as_ptr() as u64,
            rreq: iov.len() as u64,
            ..Default::default()
        };
        self.count_rndv(rid, w);
        self.send_out(w, Out::ctrl(hdr));
        Ok(true)
    }

    /// Posts a receive (or matches an arrived message).
    pub fn start_recv(&mut self, rid: ReqId, comm: c_int, src: i32, tag: i32) -> Result<()> {
        if src == MPI_PROC_NULL {
            self.reqs.get_mut(rid).unwrap().status = Status::proc_null();
            self.complete(rid);
            return Ok(());
        }
        let ctx = self.comm(comm)?.ctx;
        self.start_recv_ctx(rid, ctx, src, tag);
        Ok(())
    }

    /// Posts a receive in context `ctx` (source and tag may be wildcards).
    pub fn start_recv_ctx(&mut self, rid: ReqId, ctx: u32, src: i32, tag: i32) {
        self.reqs.get_mut(rid).unwrap().posted = true;
        self.post_recv(rid, ctx, src, tag);
    }

    /// `start_recv_ctx` of a request made with `posted` set already (the
    /// delivery of an arrived message clears it).
    #[inline]
    pub fn post_recv(&mut self, rid: ReqId, ctx: u32, src: i32, tag: i32) {
        if let Some(uid) = self.matcher.post(ctx, src, tag, rid) {
            self.deliver_unexp(rid, uid);
        }
    }

    /// MPI_Cancel of a send reached this receiver: drops the message the
    /// sender's request `sreq` sent from world rank `w` if no receive (nor
    /// MPI_Mprobe) has taken it. True if dropped.
    pub(super) fn drop_unexpected(&mut self, w: usize, sreq: u64) -> bool {
        if sreq == NO_TOKEN {
            return false;
        }
        let Some(uid) = self
            .unexp
            .iter()
            .find(|(_, u)| u.peer == w && u.sreq == sreq)
            .map(|(&uid, _)| uid)
        else {
            return false;
        };
        if self.matcher.cancel_unexpected(|&u| u == uid).is_none() {
            // Taken already (a receive waiting for its last pieces, or a
            // matched probe): it is delivered, not cancelled.
            return false;
        }
        if let Some(Unexp {
            kind: UKind::Rts { addr, .. },
            ..
        }) = self.unexp.remove(&uid)
        {
            if addr != 0 && self.net.caps(w).fetch {
                // The link holds the message's data (UCX's rendezvous):
                // dropped there, which completes the sender's send.
                // SAFETY: the descriptor came with this arrival and was
                // neither fetched (it was unexpected) nor dropped.
                unsafe { self.net.drop_arrival(w, addr) };
            }
        }
        true
    }

    /// MPI_Cancel of buffered send `rid` (complete since the call), whose
    /// message (header token `msg`, to world rank `w`) went out from the
    /// attached buffer: the user's request waits for the receiver's answer
    /// again, and the message's own request, if it is still sending,
    /// completes with a drop (its region of the buffer then freed).
    fn cancel_bsend(&mut self, rid: ReqId, w: usize, msg: u64) {
        let r = self.reqs.get(rid).unwrap();
        if r.cancel != 0 || r.status.cancelled || w == u32::MAX as usize {
            return;
        }
        let inner = self.reqs.from_token(msg);
        if !matches!(
            self.net.link(w),
            Link::Local | Link::Shm(_) | Link::Loopback | Link::Ucx
        ) {
            return;
        }
        let r = self.reqs.get_mut(rid).unwrap();
        r.cancel = 2;
        r.done = false;
        self.bsend_cancels.insert(msg, rid);
        if let Some(i) = inner.and_then(|i| self.reqs.get_mut(i)) {
            if i.cancel == 0 && !i.done {
                i.cancel = 1;
            }
        }
        self.ask_cancel(w, msg);
    }

    /// The receiver answered the cancel of send `sreq`: the request
    /// completes, cancelled (its buffer no longer read) or as it would have.
    pub(super) fn cancel_answered(&mut self, sreq: u64, dropped: bool) {
        if let Some(user) = self.bsend_cancels.remove(&sreq) {
            // A buffered send's request: done again, cancelled or not.
            if let Some(u) = self.reqs.get_mut(user) {
                u.cancel = 0;
                u.status.cancelled = dropped;
                u.done = true;
            }
        }
        let rid = if sreq & FAST_SEND != 0 {
            self.fast_cancels.remove(&sreq)
        } else {
            self.reqs.from_token(sreq)
        };
        let Some(rid) = rid else {
            return;
        };
        let r = self.reqs.get_mut(rid).unwrap();
        let was = std::mem::take(&mut r.cancel);
        if dropped {
            r.status.cancelled = true;
        }
        match was {
            // It had completed before the cancel: done again.
            2 => r.done = true,
            // Pending: a dropped message completes it now, else it goes
            // on as it would have. A rendezvous over UCX completes when
            // UCX ends its send, which the receiver's drop makes happen
            // (the link holds the buffer until then).
            1 if dropped => {
                let ucx = r
                    .rndv_peer
                    .is_some_and(|w| self.net.link(w as usize) == Link::Ucx);
                if !ucx {
                    self.complete(rid);
                }
            }
            // It completed while the cancel was in flight.
            3 => self.complete(rid),
            _ => {}
        }
    }

    /// MPI_Cancel of a send that completed on the eager fast path (the
    /// low 24 bits of its `seq`, from the handle): a request for the
    /// receiver's answer, or None where the ring no longer holds it or it
    /// cannot be reached.
    pub fn cancel_fast_send(&mut self, seq24: u64) -> Option<ReqId> {
        let &(w, token) = self.fast_ring.get(seq24 as usize % FAST_RING)?;
        if token & FAST_SEND == 0 || token & 0xff_ffff != seq24 || w == u32::MAX {
            return None;
        }
        // Cancelled once is enough.
        self.fast_ring[seq24 as usize % FAST_RING] = (u32::MAX, 0);
        let mut r = Request::new(ReqKind::Send, MPI_COMM_WORLD, std::ptr::null_mut(), 0);
        r.cancel = 2;
        r.peer_w = w;
        let rid = self.reqs.insert(r);
        self.fast_cancels.insert(token, rid);
        // The message went out on the fast path: its link carries messages.
        self.ask_cancel(w as usize, token);
        Some(rid)
    }

    /// Asks world rank `w` to drop the message with header token `token`,
    /// whose request is marked for the answer (`cancel_answered`); a
    /// message to this rank is looked for at once.
    fn ask_cancel(&mut self, w: usize, token: u64) {
        if self.net.link(w) == Link::Local {
            let dropped = self.drop_unexpected(w, token);
            self.cancel_answered(token, dropped);
        } else {
            self.send_ctrl(w, kind::CANCEL, token, 0);
        }
    }

    /// MPI_Cancel of send request `rid`: asks the receiver to drop the
    /// message if no receive has taken it; the request completes when it
    /// answers (cancelled, or as it would have). A device buffer's
    /// rendezvous on this node (CUDA IPC or staged in pieces) is dropped
    /// like any: the CANCEL follows its RTS on the ring, after any packed
    /// copy the RTS waited for, and a dropped RTS is never answered, so
    /// nothing reads the buffer afterwards. A rendezvous over UCX is
    /// dropped by the receiver releasing UCX's descriptor; the request
    /// then completes when UCX ends its send (`cancel_answered`).
    pub fn cancel_send(&mut self, rid: ReqId) {
        let token = self.reqs.token(rid);
        let Some(r) = self.reqs.get(rid) else {
            return;
        };
        if let Some((w, msg)) = r.bsend_msg {
            self.cancel_bsend(rid, w as usize, msg);
            return;
        }
        if r.cancel != 0
            || r.peer_w == u32::MAX
            || r.bsend_region.is_some()
            || r.status.cancelled
            || !r.active
        {
            return;
        }
        let w = r.peer_w as usize;
        let link = self.net.link(w);
        if !matches!(
            link,
            Link::Local | Link::Shm(_) | Link::Loopback | Link::Ucx
        ) {
            return;
        }
        let r = self.reqs.get_mut(rid).unwrap();
        r.cancel = if r.done { 2 } else { 1 };
        r.done = false;
        self.ask_cancel(w, token);
    }

    /// Hands unexpected message `uid` to receive request `rid`.
    pub(super) fn deliver_unexp(&mut self, rid: ReqId, uid: u64) {
        let incomplete = matches!(
            self.unexp.get(&uid),
            Some(Unexp {
                kind: UKind::Eager {
                    complete: false,
                    ..
                },
                ..
            })
        );
        if incomplete {
            if let Some(Unexp {
                kind: UKind::Eager { claimed, .. },
                ..
            }) = self.unexp.get_mut(&uid)
            {
                *claimed = Some(rid);
            }
            self.reqs.get_mut(rid).unwrap().posted = false;
            return;
        }
        let Some(u) = self.unexp.remove(&uid) else {
            return;
        };
        match u.kind {
            UKind::Eager { data, .. } => {
                let r = self.reqs.get_mut(rid).unwrap();
                r.posted = false;
                r.status.source = u.src;
                r.status.tag = u.tag;
                r.status.bytes = u.total as u64;
                if u.total > r.cap {
                    r.status.error = MPI_ERR_TRUNCATE;
                }
                r.store(0, &data);
                self.complete(rid);
                if let Some(s) = u.sync_sreq {
                    self.send_ctrl(u.peer, kind::ACK, s, 0);
                }
            }
            UKind::Rts {
                sreq,
                addr,
                niov,
                ipc,
            } => self.start_rndv(rid, u.peer, u.src, u.tag, u.total, sreq, addr, niov, ipc),
        }
    }

    /// The status a receive of unexpected message `u` would report.
    pub(super) fn envelope(u: &Unexp) -> Status {
        Status {
            source: u.src,
            tag: u.tag,
            error: 0,
            bytes: u.total as u64,
            cancelled: false,
        }
    }

    /// Envelope of the earliest arrived message matching (src, tag) on `comm`, left in place.
    pub fn iprobe(&self, comm: c_int, src: i32, tag: i32) -> Result<Option<Status>> {
        let ctx = self.comm(comm)?.ctx;
        Ok(self
            .matcher
            .peek_unexpected(ctx, src, tag)
            .map(|(_, uid)| Self::envelope(&self.unexp[uid])))
    }

    /// Takes the earliest arrived message matching (src, tag) out of the queues (mprobe).
    pub fn improbe(&mut self, comm: c_int, src: i32, tag: i32) -> Result<Option<(u64, Status)>> {
        let ctx = self.comm(comm)?.ctx;
        Ok(self
            .matcher
            .take_unexpected(ctx, src, tag)
            .map(|uid| (uid, Self::envelope(&self.unexp[&uid]))))
    }

    /// Receives message `uid` (from improbe) with request `rid`.
    pub fn start_mrecv(&mut self, rid: ReqId, uid: u64) {
        self.deliver_unexp(rid, uid);
    }

    /// Cancels a receive that has not matched. True if it was cancelled.
    pub fn cancel_recv(&mut self, rid: ReqId) -> bool {
        let posted = self.reqs.get(rid).map(|r| r.posted).unwrap_or(false);
        if posted && self.matcher.cancel_posted(|&p| p == rid) {
            let r = self.reqs.get_mut(rid).unwrap();
            r.posted = false;
            r.status.cancelled = true;
            self.complete(rid);
            return true;
        }
        false
    }
}
