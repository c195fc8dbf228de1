//! Runtime state of one rank and the point-to-point protocols.
//!
//! Owns: communicators, requests, the matching engine's queues (through
//! `core::matching`), per-peer outgoing queues, unexpected messages, the
//! buffered-send pool, error handlers. Calls `transport`, `bootstrap`,
//! `datatype`, `sys`; from `abi` it takes only the constants, the handle
//! encoding and the user op type (no entry points).
//!
//! Protocols (cell kinds in `kind`):
//! * eager (≤ OXMPI_EAGER_LIMIT): EAGER cell with the envelope and the first
//!   payload, FRAG cells with the rest; an Ssend sets `SYNC` and completes on ACK.
//! * rendezvous: RTS with the sender's address; the receiver, once matched,
//!   copies with one `process_vm_readv` and answers FIN; where CMA is refused
//!   (or OXMPI_CMA=0) it answers CTS and the sender streams DATA cells.
//! * self: delivered in place through the same matching path.
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
use crate::core::error::{Error, Result};
use crate::core::matching::Matcher;
use crate::core::slab::Slab;
use crate::err;
use crate::transport::hdr::Hdr;
use crate::transport::shm::{self, Shm};
use std::collections::{HashMap, VecDeque};
use std::os::raw::c_int;
use std::sync::atomic::Ordering;

pub mod kind {
    pub const EAGER: u16 = 1;
    pub const FRAG: u16 = 2;
    pub const RTS: u16 = 3;
    pub const CTS: u16 = 4;
    pub const DATA: u16 = 5;
    pub const FIN: u16 = 6;
    pub const ACK: u16 = 7;
}
pub mod flag {
    pub const SYNC: u16 = 1;
    /// RTS: `addr` is the address of the sender's [address, length] segment
    /// list and `rreq` its length (a non-contiguous send buffer).
    pub const IOV: u16 = 2;
    /// CTS: copy together (split copy). `addr` is the receive buffer, `total`
    /// the bytes to copy, `rreq` the chunk size, `tag` the slot index.
    pub const SPLIT: u16 = 4;
}

pub type ReqId = u32;

/// Appends `b` to `v` with `sys::copy` (see there for why not memcpy).
fn append(v: &mut Vec<u8>, b: &[u8]) {
    let at = v.len();
    v.reserve(b.len());
    // SAFETY: `reserve` made room for b.len() more bytes after `at`, all of
    // which the copy writes before the length covers them.
    unsafe {
        crate::sys::copy(v.as_mut_ptr().add(at), b.as_ptr(), b.len());
        v.set_len(at + b.len());
    }
}

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
    /// Non-contiguous datatype and count, packed or unpacked at each start.
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
    /// Rendezvous send: the world rank it goes to, counted in
    /// `State::rndv_out` until the request completes.
    pub rndv_peer: Option<u32>,
    /// Receive: posted in the matching engine and not matched yet (cancellable).
    pub posted: bool,
    /// Non-contiguous data: the packed bytes (send) or the landing area (receive).
    pub staged: Option<Box<Staged>>,
    /// What memory `buf` is (`gpu::classify`, from the buffer's description).
    pub mem: crate::gpu::MemKind,
}

/// Packed data of a non-contiguous datatype, owned by its request.
#[derive(Debug, Default)]
pub struct Staged {
    pub data: Vec<u8>,
    /// Receive: unpack into (type, count, user buffer) when the message is in.
    pub unpack: Option<(std::sync::Arc<crate::datatype::Type>, usize, *mut u8)>,
    /// The user buffer as [address, length] segments, when a large message may
    /// move between it and the peer by one vectored copy instead of packing.
    pub iov: Vec<[usize; 2]>,
    /// Send: `data` is not packed yet: (type, count, user buffer).
    pub pack: Option<(std::sync::Arc<crate::datatype::Type>, usize, *const u8)>,
    /// Receive: the message went straight into the user buffer (no unpack).
    pub direct: bool,
    /// Receive of a large non-contiguous message: unpacked as it arrives,
    /// with no landing area (`config::pack_stream`).
    pub stream: Option<Stream>,
}

/// Bytes a streamed receive reads from a contiguous sender at a time.
const STREAM_CHUNK: usize = 1 << 20;

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
}

impl Stream {
    pub fn new(t: std::sync::Arc<crate::datatype::Type>, count: usize, base: *mut u8) -> Stream {
        Stream {
            t,
            count,
            base,
            at: Default::default(),
        }
    }

    /// A cursor over the typed buffer where the stream stands.
    fn cursor(&self) -> crate::datatype::Cursor<'_> {
        crate::datatype::Cursor::resume(
            &self.t,
            self.count,
            self.base,
            crate::datatype::MemKind::Host,
            self.at,
        )
    }

    /// Unpacks bytes [off, off + len) of the message into the typed buffer;
    /// bytes past the typemap are dropped (a truncated message).
    fn unpack(&mut self, off: usize, data: &[u8]) {
        if off != self.at.position() {
            return;
        }
        let mut c = self.cursor();
        // SAFETY: `base` is the user's receive buffer of `count` elements of
        // `t`, valid until the request completes; host memory cannot fail.
        let _ = unsafe { c.unpack(data) };
        self.at = c.state();
    }

    /// Packs the next bytes of the message into `out`; returns how many.
    fn pack(&mut self, out: &mut [u8]) -> usize {
        let mut c = self.cursor();
        // SAFETY: `base` is the user's send buffer of `count` elements of
        // `t`, valid until the request completes; host memory cannot fail.
        let n = unsafe { c.pack(out) }.unwrap_or(0);
        self.at = c.state();
        n
    }
}

impl Staged {
    /// Packs the send data if that has not happened yet; returns its address.
    pub fn ensure_packed(&mut self) -> *mut u8 {
        if let Some((t, count, src)) = self.pack.take() {
            let n = t.size * count;
            self.data = super::pool::take(n);
            // SAFETY: `src` holds `count` elements of `t` until the send completes.
            unsafe { crate::datatype::pack(&t, count, src, &mut self.data[..n]) };
        }
        self.data.as_mut_ptr()
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
    fn take_piece(&mut self, off: usize, payload: &[u8]) {
        self.store(off, payload);
        self.got += payload.len();
    }

    /// Writes bytes [off, off + len) of the incoming message into the
    /// receive buffer, or unpacks them into the typed buffer of a streamed
    /// receive; what lies beyond the buffer is dropped.
    fn store(&mut self, off: usize, payload: &[u8]) {
        if let Some(s) = self.staged.as_mut().and_then(|s| s.stream.as_mut()) {
            s.unpack(off, payload);
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

    /// A receive unpacked as it arrives (no landing area).
    pub fn streamed(&self) -> bool {
        self.staged.as_ref().is_some_and(|s| s.stream.is_some())
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
            rndv_peer: None,
            posted: false,
            staged: None,
            mem: crate::gpu::MemKind::Host,
            coll_factory: None,
            coll_tag: 0,
        }
    }
}

enum UKind {
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
    },
}

/// A message that arrived before its receive.
struct Unexp {
    src: i32,
    tag: i32,
    peer: usize,
    total: usize,
    sync_sreq: Option<u64>,
    kind: UKind,
}

#[derive(Clone, Copy)]
enum AsmTarget {
    Req(ReqId),
    Unexp(u64),
}

/// The multi-cell eager message currently arriving from one peer.
struct Asm {
    target: AsmTarget,
    total: usize,
    got: usize,
    /// Ssend token to acknowledge once the whole message is in.
    sync: Option<u64>,
}

/// One outgoing message (or the rest of one) waiting for ring space.
struct Out {
    hdr: Hdr,
    first_kind: u16,
    rest_kind: u16,
    data: *const u8,
    total: usize,
    sent: usize,
    started: bool,
    done_req: Option<ReqId>,
    /// A non-contiguous message packed a cell at a time instead of read
    /// from `data`: the stream, and a packed cell that did not fit yet.
    pack: Option<Box<(Stream, Vec<u8>)>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Local,
    Shm(usize),
    Unreachable,
}

pub type ErrhFn = unsafe extern "C" fn(*mut c_int, *mut c_int);

/// Receiver side of a split copy: the request completes when `done` reaches
/// `n`; the slot is free again once the sender has also left it.
struct SplitRecv {
    rid: Option<ReqId>,
    li: usize,
    k: usize,
    n: u64,
}

/// Sender side of a split copy: the request completes when `done` reaches `n`.
struct SplitSend {
    rid: ReqId,
    li: usize,
    k: usize,
    n: u64,
}

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
    pub host: String,
    pub shm: Option<Shm>,
    pub paths: Vec<Path>,
    pids: Vec<i32>,
    cma_ok: Vec<bool>,
    /// A process_vm_readv from this world rank has worked (split copies
    /// start only then, so that a refusal never strands a half-copied message).
    cma_proven: Vec<bool>,
    /// Free split-copy slots of messages from each local rank to this one.
    split_free: Vec<Vec<u16>>,
    /// Split copies in flight or whose slot the sender has not left yet.
    split_recv: Vec<SplitRecv>,
    split_send: Vec<SplitSend>,
    /// Rendezvous sends in flight to each world rank: while we have one, that
    /// rank is busy copying our message, so we do not ask it to split one.
    rndv_out: Vec<u32>,
    local_peers: Vec<(usize, usize)>,
    matcher: Matcher<ReqId, u64>,
    /// Unexpected messages by id (a cheap hasher: ids are small counters).
    unexp: HashMap<u64, Unexp, std::hash::BuildHasherDefault<crate::core::matching::KeyHasher>>,
    next_uid: u64,
    asm: Vec<Option<Asm>>,
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
    pub infos: Slab<Vec<(String, String)>>,
    pub ops: Slab<crate::op::user::UserOp>,
    pub types: Slab<std::sync::Arc<crate::datatype::Type>>,
    pub builtin_type_names: HashMap<c_int, String>,
    /// Attributes on predefined datatypes (keyval, value), in the order set.
    pub builtin_type_attrs: HashMap<c_int, Vec<(c_int, usize)>>,
    /// Collective schedules in flight.
    pub scheds: Vec<Active>,
    pub info_env: Vec<(String, String)>,
    /// Node id (lowest world rank on the same host) of every world rank.
    pub node: Vec<i32>,
    pub errhandlers: Slab<ErrhFn>,
    pub bsend: Option<Bsend>,
    pub thread_level: c_int,
    pub main_thread: std::thread::ThreadId,
}

/// Something the progress engine advances: a collective schedule (coll::sched).
/// `step` starts what it can and returns true once finished.
pub trait Progress {
    fn step(&mut self, st: &mut State) -> Result<bool>;
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

fn bad_init(e: std::io::Error) -> Error {
    err!(MPI_ERR_INTERN, "{e}")
}

impl State {
    /// MPI_Init: bootstrap through PMI, find node-local ranks, set up shared memory.
    pub fn init(thread_level: c_int) -> Result<State> {
        let cfg = Config::from_env();
        let mut pmi =
            Pmi::init().map_err(|e| err!(MPI_ERR_INTERN, "PMI initialisation failed: {e}"))?;
        crate::sys::allow_cma_peers();
        let rank = pmi.rank;
        let size = pmi.size;
        let host = crate::sys::host_id();
        let mut hosts = vec![String::new(); size as usize];
        let mut pids = vec![0; size as usize];
        hosts[rank as usize] = host.clone();
        pids[rank as usize] = crate::sys::pid();
        if size > 1 {
            pmi.put(
                &format!("oxmpi-card-{rank}"),
                &format!("{},{}", host, crate::sys::pid()),
            )
            .map_err(bad_init)?;
            pmi.barrier().map_err(bad_init)?;
            for r in 0..size {
                if r == rank {
                    continue;
                }
                let v = pmi
                    .get(&format!("oxmpi-card-{r}"))
                    .map_err(bad_init)?
                    .ok_or_else(|| err!(MPI_ERR_INTERN, "rank {r} published no business card"))?;
                let (h, p) = v
                    .rsplit_once(',')
                    .ok_or_else(|| err!(MPI_ERR_INTERN, "bad business card of rank {r}: {v}"))?;
                hosts[r as usize] = h.to_string();
                pids[r as usize] = p.parse().unwrap_or(0);
            }
        }
        let local: Vec<usize> = (0..size as usize).filter(|&r| hosts[r] == host).collect();
        let me_local = local.iter().position(|&r| r == rank as usize).unwrap();
        let mut paths = vec![Path::Unreachable; size as usize];
        for (li, &r) in local.iter().enumerate() {
            paths[r] = Path::Shm(li);
        }
        paths[rank as usize] = Path::Local;
        let shm = if local.len() > 1 {
            let name = shm::segment_name(&pmi.kvsname, local[0] as i32);
            let cell = match cfg.cell_bytes {
                0 if local.len() <= 8 => 8192,
                0 => 4096,
                n => n,
            };
            Some(
                Shm::setup(&name, me_local, local.len(), cfg.ring_cells, cell).map_err(|e| {
                    err!(MPI_ERR_INTERN, "shared memory setup failed ({name}): {e}")
                })?,
            )
        } else {
            None
        };
        if let Some(s) = shm.as_ref() {
            s.publish_base();
        }
        // Every local rank has attached once all ranks pass this barrier: the
        // creator removes the segment's name now, so nothing is left behind
        // whatever happens later.
        pmi.barrier().map_err(bad_init)?;
        let mut shm = shm;
        if let Some(s) = shm.as_mut() {
            s.try_unlink();
            let local_pids: Vec<i32> = local.iter().map(|&r| pids[r]).collect();
            s.probe_cma(&local_pids, cfg.cma);
        }
        let local_peers = local
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != rank as usize)
            .map(|(li, &r)| (li, r))
            .collect();
        // mpirun says how many CPUs the job has (its ranks may be pinned to one each).
        let node_cpus: Option<usize> = std::env::var("OXMPI_NODE_CPUS")
            .ok()
            .and_then(|v| v.parse().ok());
        let cpus = node_cpus.unwrap_or_else(crate::sys::cpus_available);
        let oversub = local.len() > cpus;
        // For the collectives' choices, a count every local rank sees alike.
        let node_oversub = local.len() > node_cpus.unwrap_or_else(crate::sys::cpus_online);
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
        let node: Vec<i32> = (0..size as usize)
            .map(|r| (0..size as usize).find(|&q| hosts[q] == hosts[r]).unwrap() as i32)
            .collect();
        let info_env = vec![
            (
                "command".to_string(),
                std::env::args().next().unwrap_or_default(),
            ),
            ("maxprocs".to_string(), size.to_string()),
            ("host".to_string(), crate::sys::hostname()),
        ];
        Ok(State {
            cma_ok: vec![cfg.cma; n],
            cma_proven: vec![false; n],
            split_free: vec![(0..shm::SPLIT_SLOTS as u16).rev().collect(); local.len()],
            split_recv: Vec::new(),
            split_send: Vec::new(),
            rndv_out: vec![0; n],
            cfg,
            rank,
            size,
            pmi,
            host,
            shm,
            shm_clock: Default::default(),
            paths,
            pids,
            local_peers,
            matcher: Matcher::new(),
            unexp: HashMap::default(),
            next_uid: 1,
            asm: (0..n).map(|_| None).collect(),
            outq: (0..n).map(|_| VecDeque::new()).collect(),
            out_busy: 0,
            reqs: Slab::default(),
            comms: vec![Some(world), Some(selfc)],
            next_ctx: 4,
            used_ctx: [0u32, 2].into_iter().collect(),
            groups: Slab::default(),
            keyvals: Slab::default(),
            infos: Slab::default(),
            ops: Slab::default(),
            types: Slab::default(),
            builtin_type_names: HashMap::new(),
            builtin_type_attrs: HashMap::new(),
            scheds: Vec::new(),
            info_env,
            node,
            errhandlers: Slab::default(),
            bsend: None,
            thread_level,
            main_thread: std::thread::current().id(),
        })
    }

    /// Nothing left to push to any peer and no buffered send in flight.
    pub fn quiescent(&self) -> bool {
        self.out_busy == 0 && self.bsend.as_ref().is_none_or(|b| b.regions.is_empty())
    }

    // ---------------------------------------------------------------- progress

    /// Moves arriving cells into the matching engine and pushes queued cells.
    /// Returns true if anything happened.
    pub fn progress(&mut self) -> bool {
        let mut did = false;
        if self.shm.is_some() {
            for i in 0..self.local_peers.len() {
                let (li, w) = self.local_peers[i];
                let mut got = false;
                for _ in 0..64 {
                    let Some((hdr, data)) = self.shm.as_mut().unwrap().peek(li) else {
                        break;
                    };
                    self.handle_cell(w, &hdr, data);
                    self.shm.as_mut().unwrap().skip(li);
                    got = true;
                }
                if got {
                    // The cells read in this round go back to the sender at once.
                    self.shm.as_mut().unwrap().publish(li);
                    did = true;
                }
            }
            if !self.split_recv.is_empty() || !self.split_send.is_empty() {
                did |= self.poll_split();
            }
            if self.out_busy > 0 {
                for w in 0..self.outq.len() {
                    if !self.outq[w].is_empty() {
                        did |= self.pump(w);
                    }
                }
            }
        }
        if !self.scheds.is_empty() {
            did |= self.step_schedules();
        }
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

    fn handle_cell(&mut self, w: usize, h: &Hdr, data: *const u8) {
        // SAFETY: the cell's payload holds `len` bytes and stays valid until release.
        let payload = unsafe { std::slice::from_raw_parts(data, h.len as usize) };
        match h.kind {
            kind::EAGER => {
                let sync = (h.flags & flag::SYNC != 0).then_some(h.sreq);
                self.incoming_eager(w, h.ctx, h.src, h.tag, h.total as usize, payload, sync);
            }
            kind::FRAG => self.incoming_frag(w, payload),
            kind::RTS => self.incoming_rts(w, h),
            kind::CTS if h.flags & flag::SPLIT != 0 => self.split_as_sender(w, h),
            kind::CTS => {
                if let Some(rid) = self.reqs.from_token(h.sreq) {
                    let r = self.reqs.get_mut(rid).unwrap();
                    // A non-contiguous send not packed yet (a streamed one,
                    // or a vectored one the receiver could not copy
                    // directly) is packed cell by cell as it goes out.
                    let pack =
                        r.staged
                            .as_mut()
                            .and_then(|s| s.pack.take())
                            .map(|(t, count, src)| {
                                Box::new((Stream::new(t, count, src as *mut u8), Vec::new()))
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
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn incoming_eager(
        &mut self,
        w: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        total: usize,
        first: &[u8],
        sync: Option<u64>,
    ) {
        let multi = total > first.len();
        let uid = self.next_uid;
        match self.matcher.arrive(ctx, src, tag, uid) {
            Some(rid) => {
                let r = self.reqs.get_mut(rid).unwrap();
                r.posted = false;
                r.status.source = src;
                r.status.tag = tag;
                r.status.bytes = total as u64;
                if total > r.cap {
                    r.status.error = MPI_ERR_TRUNCATE;
                }
                r.store(0, first);
                if multi {
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

    fn incoming_frag(&mut self, w: usize, payload: &[u8]) {
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

    fn incoming_rts(&mut self, w: usize, h: &Hdr) {
        let uid = self.next_uid;
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
            ),
            None => {
                self.next_uid += 1;
                self.unexp.insert(
                    uid,
                    Unexp {
                        src: h.src,
                        tag: h.tag,
                        peer: w,
                        total: h.total as usize,
                        sync_sreq: None,
                        kind: UKind::Rts {
                            sreq: h.sreq,
                            addr: h.addr,
                            niov: if h.flags & flag::IOV != 0 { h.rreq } else { 0 },
                        },
                    },
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start_rndv(
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
                let mut bounce = super::pool::take(STREAM_CHUNK.min(n));
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
                super::pool::give(bounce);
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
    fn split_as_receiver(
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

    fn me_local(&self) -> usize {
        self.shm.as_ref().unwrap().me()
    }

    /// Sender: the receiver asked to copy together; take chunks until none is left.
    fn split_as_sender(&mut self, w: usize, h: &Hdr) {
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
    fn poll_split(&mut self) -> bool {
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
    unsafe fn cma_vectored(
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

    fn send_ctrl(&mut self, w: usize, k: u16, sreq: u64, rreq: u64) {
        if w == self.rank as usize {
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
    fn send_out(&mut self, w: usize, mut out: Out) {
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
    fn push_cells(&mut self, w: usize, out: &mut Out) -> bool {
        let Path::Shm(li) = self.paths[w] else {
            return true;
        };
        let shm = self.shm.as_mut().unwrap();
        let cap = shm.payload();
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
                // SAFETY: `data` holds `total` bytes for as long as the message is
                // outgoing (user buffer of an incomplete request, per MPI rules).
                unsafe { std::slice::from_raw_parts(out.data.add(out.sent), n) }
            };
            let n = payload.len();
            h.len = n as u32;
            // EAGER and FRAG cells use none of the fields an inline payload covers.
            let inline = h.kind == kind::EAGER || h.kind == kind::FRAG;
            if !shm.push(li, &h, payload, inline) {
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

    fn pump(&mut self, w: usize) -> bool {
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

    pub fn complete(&mut self, rid: ReqId) {
        let Some(r) = self.reqs.get_mut(rid) else {
            return;
        };
        r.done = true;
        if let Some(w) = r.rndv_peer.take() {
            self.rndv_out[w as usize] -= 1;
        }
        if let Some(st) = r.staged.as_ref().filter(|s| !s.direct) {
            if let Some((t, count, dst)) = &st.unpack {
                let n = (r.status.bytes as usize).min(r.cap);
                // SAFETY: dst is the user's receive buffer of `count` elements of `t`,
                // valid until this request completes (now).
                unsafe { crate::datatype::unpack(t, *count, &st.data[..n], *dst) };
            }
        }
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
        let Path::Shm(li) = self.paths[w] else {
            return false;
        };
        if !self.outq[w].is_empty() || bytes > self.cfg.eager_limit {
            return false;
        }
        let shm = self.shm.as_mut().unwrap();
        if bytes > shm.payload() {
            return false;
        }
        let hdr = Hdr {
            kind: kind::EAGER,
            ctx,
            src,
            tag,
            len: bytes as u32,
            total: bytes as u64,
            ..Default::default()
        };
        let payload = if bytes == 0 {
            &[][..]
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(buf, bytes) }
        };
        shm.push(li, &hdr, payload, true)
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
        let Path::Shm(li) = self.paths[w] else {
            return RecvNow::Other;
        };
        let shm = self.shm.as_mut().unwrap();
        let Some((h, data)) = shm.peek(li) else {
            return RecvNow::Empty;
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
        shm.release(li);
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
        match self.paths[w] {
            Path::Local => {
                let data = if bytes == 0 {
                    &[][..]
                } else {
                    // SAFETY: the send buffer holds `bytes` bytes (checked by the caller).
                    unsafe { std::slice::from_raw_parts(buf, bytes) }
                };
                self.incoming_eager(w, ctx, src, tag, bytes, data, sync.then_some(token));
                if !sync {
                    self.complete(rid);
                }
                Ok(())
            }
            Path::Shm(_) => {
                let mut hdr = Hdr {
                    ctx,
                    src,
                    tag,
                    total: bytes as u64,
                    sreq: token,
                    ..Default::default()
                };
                let out = if bytes <= self.cfg.eager_limit {
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
                    }
                } else {
                    hdr.kind = kind::RTS;
                    hdr.addr = buf as u64;
                    self.count_rndv(rid, w);
                    Out::ctrl(hdr)
                };
                self.send_out(w, out);
                Ok(())
            }
            Path::Unreachable => Err(err!(
                MPI_ERR_OTHER,
                "world rank {w} is on another host and no inter-node transport is available"
            )),
        }
    }

    /// Whether rank `dest` of `comm` is reached through this node's rings
    /// (where a send can stream its packed cells).
    pub fn via_rings(&self, comm: c_int, dest: i32) -> bool {
        self.comm(comm)
            .ok()
            .filter(|c| dest >= 0 && dest < c.peer_size())
            .is_some_and(|c| matches!(self.paths[c.peer_world(dest) as usize], Path::Shm(_)))
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
        if !matches!(self.paths[w], Path::Shm(_)) || !self.cma_ok[w] {
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
        match self.matcher.post(ctx, src, tag, rid) {
            None => self.reqs.get_mut(rid).unwrap().posted = true,
            Some(uid) => self.deliver_unexp(rid, uid),
        }
    }

    /// Hands unexpected message `uid` to receive request `rid`.
    fn deliver_unexp(&mut self, rid: ReqId, uid: u64) {
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
            UKind::Rts { sreq, addr, niov } => {
                self.start_rndv(rid, u.peer, u.src, u.tag, u.total, sreq, addr, niov)
            }
        }
    }

    /// The status a receive of unexpected message `u` would report.
    fn envelope(u: &Unexp) -> Status {
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

/// Takes chunks of a split copy (`chunk` bytes each, of `n`) from the shared
/// counter until none is left, copying each with `copy(offset, len)` and
/// adding it to `done`. False if a copy failed (its bytes still count as
/// done, so that both sides finish; the request reports the error).
fn split_copy(
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

impl Out {
    fn ctrl(hdr: Hdr) -> Out {
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
        }
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
