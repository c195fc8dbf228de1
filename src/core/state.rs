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

mod outq;
mod p2p;
mod rndv;

pub use crate::core::request::{
    Persist, RecvNow, ReqId, ReqKind, Request, SendMode, Staged, Status, Stream,
};
use outq::Out;
use p2p::{Asm, Unexp};
use rndv::{SplitRecv, SplitSend};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Local,
    Shm(usize),
    Unreachable,
}

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
