//! Requests and what they report: the status of a completed operation, send
//! modes, persistent arguments, packed data of non-contiguous types and the
//! streamed form of large ones.

use crate::base::consts::*;
use crate::core::state::CollFactory;
use std::os::raw::c_int;

pub type ReqId = u32;

/// What a completed operation reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub error: i32,
    pub bytes: u64,
    pub cancelled: bool,
}

impl Status {
    /// The empty status of MPI_PROC_NULL and inactive requests.
    pub fn empty() -> Status {
        Status {
            source: MPI_ANY_SOURCE,
            tag: MPI_ANY_TAG,
            error: MPI_SUCCESS,
            bytes: 0,
            cancelled: false,
        }
    }
    pub fn proc_null() -> Status {
        Status {
            source: MPI_PROC_NULL,
            tag: MPI_ANY_TAG,
            error: MPI_SUCCESS,
            bytes: 0,
            cancelled: false,
        }
    }
}

/// What `State::try_recv_now` found.
pub enum RecvNow {
    Got(Status),
    /// Nothing from that rank yet.
    Empty,
    /// Something the general path must handle.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    Sync,
    Ready,
    Buffered,
}

/// The arguments of a persistent request, replayed by MPI_Start.
#[derive(Clone, Debug)]
pub struct Persist {
    pub recv: bool,
    pub mode: SendMode,
    pub buf: *mut u8,
    pub bytes: usize,
    pub peer: i32,
    pub tag: i32,
    pub comm: c_int,
    /// What memory `buf` is.
    pub kind: crate::gpu::MemKind,
    /// Non-contiguous datatype (or a device buffer's) and count, packed or
    /// unpacked at each start.
    pub layout: Option<(std::sync::Arc<crate::datatype::Type>, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReqKind {
    Send,
    Recv,
    /// A collective operation driven by a schedule in `State::scheds`.
    Coll,
    /// A matched message (MPI_Mprobe); `uid` names it in the unexpected store.
    Message {
        uid: u64,
    },
}

pub struct Request {
    pub kind: ReqKind,
    pub done: bool,
    /// False for a persistent request between completion and the next Start.
    pub active: bool,
    pub status: Status,
    pub comm: c_int,
    pub buf: *mut u8,
    pub cap: usize,
    /// Receive: bytes of the message being received and bytes in so far.
    pub total: usize,
    pub got: usize,
    pub persist: Option<Box<Persist>>,
    /// Persistent collective: builds the schedule for each MPI_Start.
    pub coll_factory: Option<Box<CollFactory>>,
    /// Persistent collective: the tag its schedules use (`Comm::persistent_tag`).
    pub coll_tag: i32,
    pub user_freed: bool,
    /// Buffered send: the region of the attached buffer it occupies.
    pub bsend_region: Option<u32>,
    /// The user's request of a buffered send (complete at once): where its
    /// message went (world rank, header token), for MPI_Cancel.
    pub bsend_msg: Option<(u32, u64)>,
    /// Rendezvous send: the world rank it goes to, counted in
    /// `State::rndv_out` until the request completes.
    pub rndv_peer: Option<u32>,
    /// Receive: posted in the matching engine and not matched yet (cancellable).
    pub posted: bool,
    /// Non-contiguous data: the packed bytes (send) or the landing area (receive).
    pub staged: Option<Box<Staged>>,
    /// What memory `buf` is (`gpu::classify`, from the buffer's description).
    pub mem: crate::gpu::MemKind,
    /// A generalized request's callbacks (MPI_Grequest_start).
    pub greq: Option<Box<Greq>>,
    /// Send: the world rank it goes to, where MPI_Cancel can reach the
    /// message (`State::cancel_send`); u32::MAX otherwise.
    pub peer_w: u32,
    /// Send being cancelled: 0 no, 1 it was pending, 2 it had completed
    /// (the request is pending again until the receiver answers), 3 it
    /// completed while the cancel was in flight.
    pub cancel: u8,
}

/// The callbacks of a generalized request: the query function is run by
/// MPI_Grequest_complete (and again after a cancel of a completed one),
/// whose status the request then reports; the free function runs when the
/// request is released (dropped), outside the library's lock
/// (`runtime::defer`). Function pointers as addresses; `fortran`: they
/// take every argument by reference and report through a trailing ierror.
pub struct Greq {
    pub query: usize,
    pub free: usize,
    pub cancel: usize,
    pub extra: usize,
    pub fortran: bool,
}

type CFree = unsafe extern "C" fn(usize) -> c_int;
type FFree = unsafe extern "C" fn(*const usize, *mut c_int);

impl Drop for Greq {
    fn drop(&mut self) {
        if self.free == 0 {
            return;
        }
        let (f, extra, fortran) = (self.free, self.extra, self.fortran);
        crate::core::runtime::defer(Box::new(move || {
            // SAFETY: `f` is the free function MPI_Grequest_start was given,
            // with the C or Fortran signature `fortran` says; `extra` is its
            // extra state.
            unsafe {
                if fortran {
                    let mut ierr = 0;
                    std::mem::transmute::<usize, FFree>(f)(&extra, &mut ierr);
                } else {
                    std::mem::transmute::<usize, CFree>(f)(extra);
                }
            }
        }));
    }
}

/// Packed data of a non-contiguous datatype, owned by its request.
#[derive(Debug, Default)]
pub struct Staged {
    pub data: Vec<u8>,
    /// Receive: unpack into (type, count, user buffer) when the message is in.
    pub unpack: Option<(std::sync::Arc<crate::datatype::Type>, usize, *mut u8)>,
    /// What memory the user buffer is (device memory is unpacked with the
    /// driver's copies).
    pub kind: crate::datatype::MemKind,
    /// The user buffer as [address, length] segments, when a large message may
    /// move between it and the peer by one vectored copy instead of packing.
    pub iov: Vec<[usize; 2]>,
    /// Send: `data` is not packed yet: (type, count, user buffer).
    pub pack: Option<(std::sync::Arc<crate::datatype::Type>, usize, *const u8)>,
    /// Send of a contiguous device buffer, not packed yet: where its data
    /// starts, for a CUDA IPC rendezvous to a rank of this node.
    pub ipc_src: Option<*const u8>,
    /// Send of a derived type's device buffer by CUDA IPC: its packed copy
    /// on the device, kept until the receiver's FIN.
    pub dev: Option<crate::gpu::DevBuf>,
    /// Receive: the message went straight into the user buffer (no unpack).
    pub direct: bool,
    /// Receive of a large non-contiguous message: unpacked as it arrives,
    /// with no landing area (`config::pack_stream`).
    pub stream: Option<Stream>,
    /// Receive into a large device buffer: lands in pinned
    /// chunks copied to the device as each fills (`core::pipe`), with no
    /// landing area.
    pub pipe: Option<crate::core::pipe::RecvPipe>,
}

impl Staged {
    /// A receive into a contiguous device buffer: where its data starts,
    /// for a copy (CUDA IPC) or a transfer (UCX with CUDA memory) of the
    /// whole message straight into it.
    pub fn device_direct(&self) -> Option<*mut u8> {
        if self.kind != crate::gpu::MemKind::Device {
            return None;
        }
        self.unpack
            .as_ref()
            .filter(|(t, count, _)| t.is_contiguous(*count))
            .map(|(t, _, p)| p.wrapping_offset(t.start()))
            .or_else(|| self.pipe.as_ref().and_then(|p| p.direct))
    }

    /// A receive into a device buffer of a derived type: (type, count,
    /// buffer), for the driver's strided copies from device to device.
    pub fn device_typed(&self) -> Option<(std::sync::Arc<crate::datatype::Type>, usize, *mut u8)> {
        if self.kind != crate::gpu::MemKind::Device {
            return None;
        }
        self.unpack
            .clone()
            .or_else(|| self.pipe.as_ref().map(|p| p.typed()))
    }
}

/// Bytes a streamed receive reads from a contiguous sender at a time.
pub(crate) const STREAM_CHUNK: usize = 1 << 20;

/// A large non-contiguous message moved a cell (or a chunk) at a time: its
/// type, count, typed buffer and how far the cursor got. Receives unpack
/// into it as bytes arrive (in order: one message from one peer is FIFO);
/// sends pack out of it as cells go out.
#[derive(Debug)]
pub struct Stream {
    pub t: std::sync::Arc<crate::datatype::Type>,
    pub count: usize,
    pub base: *mut u8,
    pub at: crate::datatype::CursorState,
    /// What memory the typed buffer is (a device buffer packs with the
    /// driver's copies).
    pub kind: crate::datatype::MemKind,
}

impl Stream {
    pub fn new(t: std::sync::Arc<crate::datatype::Type>, count: usize, base: *mut u8) -> Stream {
        Stream {
            t,
            count,
            base,
            at: Default::default(),
            kind: crate::datatype::MemKind::Host,
        }
    }

    /// A cursor over the typed buffer where the stream stands.
    pub(crate) fn cursor(&self) -> crate::datatype::Cursor<'_> {
        crate::datatype::Cursor::resume(&self.t, self.count, self.base, self.kind, self.at)
    }

    /// Unpacks bytes [off, off + len) of the message into the typed buffer;
    /// bytes past the typemap are dropped (a truncated message).
    pub(crate) fn unpack(&mut self, off: usize, data: &[u8]) {
        if off != self.at.position() {
            return;
        }
        let mut c = self.cursor();
        // SAFETY: `base` is the user's receive buffer of `count` elements of
        // `t`, valid until the request completes; host memory cannot fail.
        let _ = unsafe { c.unpack(data) };
        self.at = c.state();
    }

    /// Packs the next `out.len()` bytes of a device buffer's message into
    /// `out` with the driver's copies queued on the library's stream; the
    /// returned event is done when they are. `out` stays valid until then.
    pub(crate) fn pack_queued(
        &mut self,
        out: &mut [u8],
    ) -> crate::core::error::Result<crate::gpu::Pending> {
        let mut c = self.cursor().queued();
        // SAFETY: `base` is the user's device send buffer of `count`
        // elements of `t`, valid until the request completes (which waits
        // for the event).
        let n = unsafe { c.pack(out) }?;
        self.at = c.state();
        debug_assert_eq!(n, out.len());
        crate::gpu::mark()
    }

    /// Unpacks `data` (the next bytes of the message) into a device
    /// buffer with the driver's copies queued on the library's stream, as
    /// `pack_queued`; bytes past the typemap are dropped.
    pub(crate) fn unpack_queued(
        &mut self,
        data: &[u8],
    ) -> crate::core::error::Result<crate::gpu::Pending> {
        let mut c = self.cursor().queued();
        // SAFETY: `base` is the user's device receive buffer of `count`
        // elements of `t`, valid until the request completes (which waits
        // for the event).
        unsafe { c.unpack(data) }?;
        self.at = c.state();
        crate::gpu::mark()
    }

    /// Packs the next bytes of the message into `out`; returns how many.
    pub(crate) fn pack(&mut self, out: &mut [u8]) -> usize {
        let mut c = self.cursor();
        // SAFETY: `base` is the user's send buffer of `count` elements of
        // `t`, valid until the request completes. A failed device copy
        // packs nothing (the message then ends short).
        let n = unsafe { c.pack(out) }.unwrap_or(0);
        self.at = c.state();
        n
    }
}

impl Staged {
    /// Packs the send data if that has not happened yet; returns its address.
    pub fn ensure_packed(&mut self) -> crate::core::error::Result<*mut u8> {
        if let Some((t, count, src)) = self.pack.take() {
            let n = t.size * count;
            self.data = if self.kind == crate::datatype::MemKind::Device {
                super::pool::take_pinned(n)
            } else {
                super::pool::take(n)
            };
            // SAFETY: `src` holds `count` elements of `t` until the send completes.
            unsafe { crate::datatype::pack_mem(&t, count, src, self.kind, &mut self.data[..n])? };
        }
        Ok(self.data.as_mut_ptr())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        super::pool::give(std::mem::take(&mut self.data));
    }
}

impl Request {
    /// Stores a piece of the incoming message at `off` (what lies beyond the
    /// buffer is dropped: the status already says MPI_ERR_TRUNCATE) and counts it.
    pub(crate) fn take_piece(&mut self, off: usize, payload: &[u8]) {
        self.store(off, payload);
        self.got += payload.len();
    }

    /// Writes bytes [off, off + len) of the incoming message into the
    /// receive buffer, or unpacks them into the typed buffer of a streamed
    /// receive; what lies beyond the buffer is dropped.
    #[inline]
    pub(crate) fn store(&mut self, off: usize, payload: &[u8]) {
        if let Some(s) = self
            .staged
            .as_mut()
            .filter(|s| s.stream.is_some() || s.pipe.is_some())
        {
            match (s.stream.as_mut(), s.pipe.as_mut()) {
                (Some(st), _) => st.unpack(off, payload),
                (None, Some(p)) => p.store(off, payload),
                _ => {}
            }
            return;
        }
        if off < self.cap {
            let n = payload.len().min(self.cap - off);
            // A device buffer is refused when it is described; this copy is
            // the CPU's.
            debug_assert!(crate::gpu::host_only(self.mem, "receive copy").is_ok());
            // SAFETY: a receive buffer holds `cap` bytes (checked when it was posted)
            // and stays valid until the request completes.
            unsafe { crate::sys::copy(self.buf.add(off), payload.as_ptr(), n) };
        }
    }

    /// A receive unpacked (or copied to the device) as it arrives: no
    /// landing area.
    pub fn streamed(&self) -> bool {
        self.staged
            .as_ref()
            .is_some_and(|s| s.stream.is_some() || s.pipe.is_some())
    }

    /// The whole message arrived in `b` (`n` bytes; a fetch's bounce):
    /// stored, or copied to the device from it where the receive is a
    /// device pipeline (`b` is then pinned and kept until that copy ends).
    pub(crate) fn land(&mut self, b: Vec<u8>, n: usize) {
        if let Some(p) = self.staged.as_mut().and_then(|s| s.pipe.as_mut()) {
            p.adopt(b, n);
            return;
        }
        self.store(0, &b[..n]);
        super::pool::give(b);
    }

    /// A send that completed when it was started (its cell is in the ring).
    pub fn sent(comm: c_int) -> Request {
        let mut r = Request::new(ReqKind::Send, comm, std::ptr::null_mut(), 0);
        r.done = true;
        r
    }

    pub fn new(kind: ReqKind, comm: c_int, buf: *mut u8, cap: usize) -> Request {
        Request {
            kind,
            done: false,
            active: true,
            status: Status::empty(),
            comm,
            buf,
            cap,
            total: 0,
            got: 0,
            persist: None,
            user_freed: false,
            bsend_region: None,
            bsend_msg: None,
            rndv_peer: None,
            posted: false,
            staged: None,
            mem: crate::gpu::MemKind::Host,
            coll_factory: None,
            coll_tag: 0,
            greq: None,
            peer_w: u32::MAX,
            cancel: 0,
        }
    }
}
