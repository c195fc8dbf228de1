//! Runtime state of one rank and the point-to-point protocols.
//!
//! Owns: communicators, requests, the matching engine's queues (through
//! `core::matching`), per-peer outgoing queues, unexpected messages, the
//! buffered-send pool, error handlers; the links to the other ranks sit in
//! `net` (`transport::Net`), which hands arrivals to this engine as its
//! `transport::Sink`. Calls `transport`, `bootstrap`, `datatype`, `op`,
//! `base`, `sys`; never `abi`.
//!
//! The engine is split by concern: `p2p` (arrivals, matching, the
//! operations), `rndv` (rendezvous copies), `outq` (what waits for room on
//! a link); requests live in `core::request`.
//!
//! Protocols (message kinds in `kind`):
//! * eager (≤ OXMPI_EAGER_LIMIT): EAGER cell with the envelope and the first
//!   payload, FRAG cells with the rest; an Ssend sets `SYNC` and completes on ACK.
//! * rendezvous: RTS with the sender's address; the receiver, once matched,
//!   copies with one `process_vm_readv` and answers FIN; where CMA is refused
//!   (or OXMPI_CMA=0) it answers CTS and the sender streams DATA cells. On a
//!   link that carries a message whole (`Caps::fetch`, UCX's rendezvous)
//!   the RTS takes the send buffer with it; the matched receiver fetches it
//!   into its buffer and each side completes when the link says it is done
//!   (`Sink::done`), with no FIN.
//! * self: delivered in place through the same matching path (or, with
//!   OXMPI_LOOPBACK=1, through the loopback link with the protocols above).
//! * non-contiguous messages above OXMPI_PACK_STREAM: RTS with address 0,
//!   the receiver answers CTS, DATA cells packed as they go out and
//!   unpacked as they arrive (`Stream`), in bounded memory.
//!
//! Hot path budget (eager send into a ring with room): no allocation, no
//! syscall; the one lock is the library-wide mutex taken by the abi layer.

use crate::base::consts::*;
use crate::bootstrap::pmi::Pmi;
use crate::config::Config;
use crate::core::comm::Comm;
use crate::core::error::Result;
use crate::core::matching::Matcher;
use crate::core::slab::Slab;
use crate::err;
use crate::transport::hdr::Hdr;
use crate::transport::{Link, Net};
use std::collections::{HashMap, VecDeque};
use std::os::raw::c_int;

pub mod kind {
    pub const EAGER: u16 = 1;
    pub const FRAG: u16 = 2;
    pub const RTS: u16 = 3;
    pub const CTS: u16 = 4;
    pub const DATA: u16 = 5;
    pub const FIN: u16 = 6;
    pub const ACK: u16 = 7;
    /// The sender cancels its send `sreq` (MPI_Cancel): the receiver drops
    /// the message if no receive has taken it and answers CANCEL_ACK.
    pub const CANCEL: u16 = 8;
    /// The answer: `rreq` 1 if the message was dropped, 0 if matched.
    pub const CANCEL_ACK: u16 = 9;
}
pub mod flag {
    pub const SYNC: u16 = 1;
    /// RTS: `addr` is the address of the sender's [address, length] segment
    /// list and `rreq` its length (a non-contiguous send buffer).
    pub const IOV: u16 = 2;
    /// CTS: copy together (split copy). `addr` is the receive buffer, `total`
    /// the bytes to copy, `rreq` the chunk size, `tag` the slot index.
    pub const SPLIT: u16 = 4;
    /// RTS: the payload is the sender's device buffer as a CUDA IPC
    /// reference (`gpu::ipc::IpcRef`); the receiver copies out of it with
    /// the driver and answers FIN.
    /// cbindgen:ignore
    pub const CUDA_IPC: u16 = 8;
}

/// A request whose data is still being copied on the library's CUDA
/// stream: complete when the copy is done; `fin`: a CUDA IPC receive's
/// FIN to send then (the sender's buffer is read until the copy ends).
struct GpuWait {
    rid: ReqId,
    copy: crate::gpu::Pending,
    fin: Option<(usize, u64)>,
}

mod ipc;
mod outq;
mod p2p;
mod rndv;
mod send;

pub use crate::core::request::{
    Persist, RecvNow, ReqId, ReqKind, Request, SendMode, Staged, Status, Stream,
};
use outq::Out;
use p2p::{Asm, Unexp};

pub type ErrhFn = unsafe extern "C" fn(*mut c_int, *mut c_int);

/// The attached buffer of MPI_Buffer_attach and its live regions (offset, len).
pub struct Bsend {
    pub base: *mut u8,
    pub size: usize,
    regions: Vec<(usize, usize)>,
}

pub struct State {
    pub cfg: Config,
    pub rank: i32,
    pub size: i32,
    pub pmi: Pmi,
    /// The links to every world rank and the transports behind them.
    pub net: Net,
    /// Rendezvous sends in flight to each world rank: while we have one, that
    /// rank is busy copying our message, so we do not ask it to split one.
    rndv_out: Vec<u32>,
    matcher: Matcher<ReqId, u64>,
    /// Unexpected messages by id (a cheap hasher: ids are small counters).
    unexp: HashMap<u64, Unexp, std::hash::BuildHasherDefault<crate::core::matching::KeyHasher>>,
    next_uid: u64,
    asm: Vec<Option<Asm>>,
    /// Fetches (`Net::fetch`) into a bounce buffer instead of the receive
    /// buffer (a streamed or truncated receive), by the receive's token:
    /// stored into the request when the fetch is done.
    /// (The pool's buffer may be longer than the message: its length is kept.)
    fetch_bounce: HashMap<u64, (Vec<u8>, usize)>,
    /// Requests waiting for a copy on the library's CUDA stream.
    gpu_pending: Vec<GpuWait>,
    /// The copy of the send being started into its staging area, for the
    /// message's `Out` to wait on (`launch_send` to `start_send_to`).
    send_gate: Option<crate::gpu::Pending>,
    outq: Vec<VecDeque<Out>>,
    out_busy: usize,
    pub reqs: Slab<Request>,
    pub comms: Vec<Option<Comm>>,
    pub next_ctx: u32,
    /// Blocking collectives run through world's area so far (`coll::shm`).
    pub shm_clock: crate::core::comm::AreaClock,
    /// Context ids this process has ever used (ids are never reused).
    pub used_ctx: std::collections::HashSet<u32>,
    pub groups: Slab<Vec<i32>>,
    pub keyvals: Slab<crate::core::comm::Keyval>,
    pub ops: Slab<crate::op::user::UserOp>,
    pub types: Slab<std::sync::Arc<crate::datatype::Type>>,
    pub builtin_type_names: HashMap<c_int, String>,
    /// Attributes on predefined datatypes (keyval, value), in the order set.
    pub builtin_type_attrs: HashMap<c_int, Vec<(c_int, usize)>>,
    /// Collective schedules in flight.
    pub scheds: Vec<Active>,
    /// Nonblocking sends completed on the eager fast path (no request):
    /// (world rank, header token) by `fast_seq` modulo FAST_RING, so that
    /// MPI_Cancel of such a send can still name its message.
    pub fast_ring: Vec<(u32, u64)>,
    pub fast_seq: u64,
    /// Cancels of fast-path sends in flight: header token -> the request
    /// made for the answer.
    pub fast_cancels: HashMap<u64, ReqId>,
    /// Cancels of buffered sends in flight: the message's header token ->
    /// the user's request, which completes with the answer.
    pub bsend_cancels: HashMap<u64, ReqId>,
    pub errhandlers: Slab<ErrhFn>,
    pub bsend: Option<Bsend>,
    pub thread_level: c_int,
    pub main_thread: std::thread::ThreadId,
}

/// Something the progress engine advances: a collective schedule (coll::sched).
/// `step` starts what it can and returns true once finished.
pub trait Progress {
    fn step(&mut self, st: &mut State) -> Result<bool>;

    /// Partitioned send: partition `p` is ready (MPI_Pready).
    fn pready(&mut self, _st: &mut State, _p: usize) -> Result<()> {
        Err(crate::err!(
            MPI_ERR_REQUEST,
            "the request is not a partitioned send"
        ))
    }

    /// Partitioned receive: whether partition `p` has arrived (MPI_Parrived).
    fn parrived(&mut self, _st: &mut State, _p: usize) -> Result<bool> {
        Err(crate::err!(
            MPI_ERR_REQUEST,
            "the request is not a partitioned receive"
        ))
    }
}

/// Builds a persistent collective's schedule (called without the library lock).
pub type CollFactory = std::rc::Rc<dyn Fn() -> Result<Box<dyn Progress>>>;

/// An active schedule and the request that completes with it.
pub struct Active {
    pub rid: ReqId,
    pub sched: Box<dyn Progress>,
}

// SAFETY: the raw pointers a State holds are user buffers passed to MPI calls
// (valid until their request completes, by MPI's rules) and the shared segment;
// State is only ever reached through the library-wide mutex (core::runtime).
unsafe impl Send for State {}

impl State {
    /// MPI_Init: bootstrap through PMI, find node-local ranks, set up shared memory.
    pub fn init(thread_level: c_int) -> Result<State> {
        let cfg = Config::from_env();
        let mut pmi =
            Pmi::init().map_err(|e| err!(MPI_ERR_INTERN, "PMI initialisation failed: {e}"))?;
        let rank = pmi.rank;
        let size = pmi.size;
        let net = Net::init(&mut pmi, &cfg)?;
        // mpirun says how many CPUs the job has (its ranks may be pinned to one each).
        let node_cpus: Option<usize> = std::env::var("OXMPI_NODE_CPUS")
            .ok()
            .and_then(|v| v.parse().ok());
        let cpus = node_cpus.unwrap_or_else(crate::sys::cpus_available);
        let oversub = net.nlocal > cpus;
        // For the collectives' choices, a count every local rank sees alike.
        let node_oversub = net.nlocal > node_cpus.unwrap_or_else(crate::sys::cpus_online);
        let spin = if oversub {
            cfg.oversub_spin_us
        } else {
            cfg.spin_us
        };
        crate::core::progress::configure(
            spin,
            cfg.yield_us,
            cfg.sleep_max_us,
            oversub,
            node_oversub,
        );
        let n = size as usize;
        let world = Comm::new(0, (0..size).collect(), rank, "MPI_COMM_WORLD");
        let selfc = Comm::new(2, vec![rank], rank, "MPI_COMM_SELF");
        Ok(State {
            rndv_out: vec![0; n],
            cfg,
            rank,
            size,
            pmi,
            net,
            shm_clock: Default::default(),
            matcher: Matcher::new(),
            unexp: HashMap::default(),
            next_uid: 1,
            asm: (0..n).map(|_| None).collect(),
            fetch_bounce: HashMap::new(),
            gpu_pending: Vec::new(),
            send_gate: None,
            outq: (0..n).map(|_| VecDeque::new()).collect(),
            out_busy: 0,
            reqs: Slab::default(),
            comms: vec![Some(world), Some(selfc)],
            next_ctx: 4,
            used_ctx: [0u32, 2].into_iter().collect(),
            groups: Slab::default(),
            keyvals: Slab::default(),
            ops: Slab::default(),
            types: Slab::default(),
            builtin_type_names: HashMap::new(),
            builtin_type_attrs: HashMap::new(),
            scheds: Vec::new(),
            fast_ring: vec![(u32::MAX, 0); p2p::FAST_RING],
            fast_seq: 0,
            fast_cancels: HashMap::new(),
            bsend_cancels: HashMap::new(),
            errhandlers: Slab::default(),
            bsend: None,
            thread_level,
            main_thread: std::thread::current().id(),
        })
    }

    /// Messages waiting in the unexpected queue (the tools interface).
    pub fn unexpected_len(&self) -> usize {
        self.matcher.unexpected_len()
    }

    /// Nothing left to push to any peer and no buffered send in flight.
    /// The envelopes of the posted receives (the hang report).
    pub fn posted_keys(&self) -> Vec<(u32, i32, i32)> {
        self.matcher.posted_keys()
    }

    pub fn quiescent(&self) -> bool {
        self.out_busy == 0
            && self.bsend.as_ref().is_none_or(|b| b.regions.is_empty())
            && !self.net.sending()
    }

    // ---------------------------------------------------------------- progress

    /// Polls the links (arrivals go to the matching engine), pushes queued
    /// sends, steps the collective schedules. True if anything happened.
    pub fn progress(&mut self) -> bool {
        let mut did = Net::poll(self);
        if !self.gpu_pending.is_empty() {
            did |= self.poll_gpu();
        }
        if self.net.split_busy() {
            did |= self.poll_split();
        }
        if self.out_busy > 0 {
            for w in 0..self.outq.len() {
                if !self.outq[w].is_empty() {
                    did |= self.pump(w);
                }
            }
        }
        if !self.scheds.is_empty() {
            did |= self.step_schedules();
        }
        did
    }

    /// Completes the requests whose copies on the library's stream are done
    /// (answering FIN first for a CUDA IPC receive).
    fn poll_gpu(&mut self) -> bool {
        let mut list = std::mem::take(&mut self.gpu_pending);
        let before = list.len();
        list.retain(|g| {
            let res = g.copy.done();
            if matches!(res, Ok(false)) {
                return true;
            }
            if let (Err(e), Some(r)) = (&res, self.reqs.get_mut(g.rid)) {
                say!("oxmpi: {}", e.msg);
                r.status.error = e.class;
            }
            match g.fin {
                Some((w, sreq)) => {
                    self.send_ctrl(w, kind::FIN, sreq, 0);
                    self.complete(g.rid);
                }
                None => {
                    if let Some(r) = self.reqs.get_mut(g.rid) {
                        r.done = true;
                    }
                    self.complete_tail(g.rid);
                }
            }
            false
        });
        let did = list.len() != before;
        list.append(&mut self.gpu_pending);
        self.gpu_pending = list;
        did
    }

    /// Advances every collective schedule; completes the requests of finished ones.
    fn step_schedules(&mut self) -> bool {
        let mut list = std::mem::take(&mut self.scheds);
        let before = list.len();
        list.retain_mut(|a| match a.sched.step(self) {
            Ok(false) => true,
            Ok(true) => {
                self.complete(a.rid);
                false
            }
            Err(e) => {
                if let Some(r) = self.reqs.get_mut(a.rid) {
                    r.status.error = e.class;
                }
                self.complete(a.rid);
                false
            }
        });
        let did = list.len() != before;
        list.append(&mut self.scheds);
        self.scheds = list;
        did
    }

    // ---------------------------------------------------------------- completion

    /// Counts rendezvous send `rid` to world rank `w` in `rndv_out`.
    fn count_rndv(&mut self, rid: ReqId, w: usize) {
        if let Some(r) = self.reqs.get_mut(rid) {
            if r.rndv_peer.is_none() {
                r.rndv_peer = Some(w as u32);
                self.rndv_out[w] += 1;
            }
        }
    }

    #[inline]
    pub fn complete(&mut self, rid: ReqId) {
        let Some(r) = self.reqs.get_mut(rid) else {
            return;
        };
        if r.cancel == 1 {
            // Its cancel is in flight: the receiver's answer completes it
            // (`cancel_answered`).
            r.cancel = 3;
            return;
        }
        r.done = true;
        if r.rndv_peer.is_some() || r.staged.is_some() || r.bsend_region.is_some() || r.user_freed {
            self.complete_rest(rid);
        }
    }

    /// What completing request `rid` (marked done) takes beyond that: the
    /// rendezvous count, unpacking, the buffered-send region, a request
    /// the user freed already.
    #[inline(never)]
    fn complete_rest(&mut self, rid: ReqId) {
        let r = self.reqs.get_mut(rid).unwrap();
        if let Some(w) = r.rndv_peer.take() {
            self.rndv_out[w as usize] -= 1;
        }
        let mut failed = None;
        let mut copying = None;
        if let Some(p) = r
            .staged
            .as_mut()
            .filter(|s| !s.direct)
            .and_then(|s| s.pipe.as_mut())
        {
            // The last chunk's copy starts; the request completes when
            // every chunk's copy is done (`poll_gpu`).
            match p.finish() {
                Ok(c) => copying = c,
                Err(e) => failed = Some(e),
            }
        } else if let Some(st) = r.staged.as_ref().filter(|s| !s.direct) {
            if let Some((t, count, dst)) = &st.unpack {
                let n = (r.status.bytes as usize).min(r.cap);
                if st.kind == crate::gpu::MemKind::Device && t.is_contiguous(*count) && n > 0 {
                    // Into a contiguous device buffer: a copy on the library's
                    // stream (a short message: value writes, `write_words`);
                    // the request completes when it is done (`poll_gpu`).
                    let at = dst.wrapping_offset(t.start());
                    // SAFETY: `at` holds the buffer's `n` bytes; the landing
                    // area is the request's own and outlives the copy.
                    match unsafe { crate::gpu::copy_from_host_async(at, &st.data[..n]) } {
                        Ok(p) => copying = Some(p),
                        Err(e) => failed = Some(e),
                    }
                } else if st.kind == crate::gpu::MemKind::Device && n > 0 {
                    // A derived type's device buffer: the strided copies go
                    // on the library's stream, and the request completes
                    // when they are done (`poll_gpu`).
                    // SAFETY: dst is the user's receive buffer of `count`
                    // elements of `t`, valid until this request completes
                    // (after the copies); the landing area is the request's.
                    let q = unsafe {
                        crate::datatype::unpack_queued(t, *count, &st.data[..n], *dst)
                            .and_then(|_| crate::gpu::mark())
                    };
                    match q {
                        Ok(p) => copying = Some(p),
                        Err(e) => failed = Some(e),
                    }
                } else {
                    // SAFETY: dst is the user's receive buffer of `count` elements of `t`,
                    // valid until this request completes (now).
                    let u = unsafe {
                        crate::datatype::unpack_mem(t, *count, &st.data[..n], *dst, st.kind)
                    };
                    failed = u.err();
                }
            }
        }
        if let Some(e) = failed {
            // A device copy that failed: the receive fails with its class
            // (the driver's message is on stderr, as the status has no room).
            say!("oxmpi: {}", e.msg);
            r.status.error = e.class;
        }
        if let Some(copy) = copying {
            r.done = false;
            self.gpu_pending.push(GpuWait {
                rid,
                copy,
                fin: None,
            });
            return;
        }
        self.complete_tail(rid);
    }

    /// The end of completing request `rid`: its buffered-send region, and
    /// the request itself if the user freed it already.
    fn complete_tail(&mut self, rid: ReqId) {
        let Some(r) = self.reqs.get_mut(rid) else {
            return;
        };
        if let Some(off) = r.bsend_region.take() {
            if let Some(b) = self.bsend.as_mut() {
                b.regions.retain(|&(o, _)| o != off as usize);
            }
            self.reqs.remove(rid);
            return;
        }
        if r.user_freed {
            self.reqs.remove(rid);
        }
    }

    // ---------------------------------------------------------------- buffered send

    /// Reserves `len` bytes of the attached buffer (first fit). None if it does not fit.
    pub fn bsend_alloc(&mut self, len: usize) -> Option<(usize, *mut u8)> {
        let b = self.bsend.as_mut()?;
        let need = len + MPI_BSEND_OVERHEAD as usize;
        let mut off = 0;
        let mut at = 0;
        for (i, &(o, l)) in b.regions.iter().enumerate() {
            if o - off >= need {
                break;
            }
            off = o + l;
            at = i + 1;
        }
        if off + need > b.size {
            return None;
        }
        b.regions.insert(at, (off, need));
        // SAFETY: off + need <= size, inside the attached buffer.
        Some((off, unsafe { b.base.add(off) }))
    }
}

impl Bsend {
    pub fn new(base: *mut u8, size: usize) -> Bsend {
        Bsend {
            base,
            size,
            regions: Vec::new(),
        }
    }
    pub fn in_use(&self) -> bool {
        !self.regions.is_empty()
    }
}
