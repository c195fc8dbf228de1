//! Moves bytes between two ranks. Knows no tags or communicators: every
//! message carries an envelope (`hdr::Hdr`) that the core fills in and
//! interprets; each link packs it into its own wire form and hands what
//! arrives to the core's matching engine through `Sink` (links never match).
//!
//! A link per peer (`Link`), chosen once at MPI_Init by reachability from
//! the business cards (`card`): the rank itself (delivered in place by the
//! core, or through `loopback` with OXMPI_LOOPBACK=1), shared memory on the
//! same node (`shm`: rings, the segment, single and split copies), else
//! unreachable. The protocols read a link's capabilities (`Caps`) instead of
//! transport facts. Ranks on other hosts go through the UCX link (`ucx`,
//! `Link::Ucx`). Device buffers reach the links as host staging areas; the
//! CUDA IPC protocol between the ranks of a node is the core's, carried on
//! the shared-memory rings (`core::state::ipc`).
//!
//! Calls `sys`, `bootstrap` (the cards), `base`, `backoff`.
pub mod card;
pub mod hdr;
pub mod loopback;
pub mod shm;
pub mod ucx;

use crate::base::consts::*;
use crate::base::error::Result;
use crate::bootstrap::pmi::Pmi;
use crate::config::Config;
use crate::err;
use hdr::Hdr;
use loopback::Loopback;
use shm::copy::Copier;
use shm::split::Split;
use shm::Shm;

/// How this rank reaches one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The rank itself, delivered in place by the core's matching engine.
    Local,
    /// The rank itself, through the in-process loopback link.
    Loopback,
    /// A rank on this node, through the rings of the shared segment
    /// (its local index).
    Shm(usize),
    /// A rank on another host (or every other rank, with OXMPI_TEST_UCX=1),
    /// through UCX.
    Ucx,
    /// No transport reaches it.
    Unreachable,
}

/// Payload bytes one push over UCX carries.
const UCX_FRAG: usize = 64 << 10;

/// What a link can do, read by the protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Payload bytes one push carries: eager messages above go in fragments.
    pub frag: usize,
    /// Eager payloads up to this many bytes travel inside the envelope
    /// where the core allows the overlay (`push`'s `inline`: the envelope
    /// needs none of the fields it covers); the link applies it itself.
    pub inline: usize,
    /// The receiver can copy straight out of the sender's buffer (single
    /// copy, a get), given its address.
    pub get: bool,
    /// The same between segment lists on both sides.
    pub vectored: bool,
    /// A rendezvous message travels whole with its envelope (`push_whole`)
    /// and arrives as a descriptor in the envelope's `addr`, which the
    /// matched receiver hands to `fetch` with its buffer; both sides learn
    /// of the end through `Sink::done` (UCX's rendezvous).
    pub fetch: bool,
    /// Receiver and sender can share the copy of one message (split copy).
    pub coop: bool,
    /// The link's rendezvous (`push_whole`/`fetch`) takes device memory as
    /// it is: UCX that reports CUDA memory. Every other copy of every link
    /// is a host copy: device buffers are staged in host memory where they
    /// are described, and a send's start checks this before handing one to
    /// the link.
    pub device: bool,
}

/// Where a link delivers what arrives: the core's point-to-point engine.
pub trait Sink {
    /// The transport layer of the sink's rank (links look themselves up
    /// through it between arrivals).
    fn net(&mut self) -> &mut Net;
    /// One message from world rank `w`; `payload` holds `h.len` bytes and
    /// is valid during the call only.
    fn arrive(&mut self, w: usize, h: &Hdr, payload: &[u8]);
    /// A whole send's `h.sreq` or a fetch's token: the link is done with
    /// the buffer (`Net::push_whole`, `Net::fetch`).
    fn done(&mut self, token: u64);
}

/// This rank's links and the transports behind them.
pub struct Net {
    /// The link to each world rank.
    pub links: Vec<Link>,
    /// The node's segment (rings, collective areas, split-copy slots) when
    /// other ranks share this node.
    pub shm: Option<Shm>,
    /// Single copy with the ranks of this node.
    pub copy: Copier,
    split: Split,
    loopback: Loopback,
    /// (local index, world rank) of the other ranks on this node.
    peers: Vec<(usize, usize)>,
    me: usize,
    /// Ranks on this node, this one included.
    pub nlocal: usize,
    /// The inter-node link, when some rank is on another host.
    ucx: Option<ucx::link::UcxLink>,
    /// Rendezvous over UCX by `push_whole`/`fetch` (OXMPI_UCX_RNDV).
    ucx_rndv: bool,
    /// UCX takes device buffers as they are in that rendezvous: it
    /// reports CUDA memory (or a test says so) and OXMPI_UCX_CUDA allows it.
    ucx_device: bool,
}

impl Net {
    /// MPI_Init: exchanges business cards, chooses a link per peer and sets
    /// up the transports they need.
    pub fn init(pmi: &mut Pmi, cfg: &Config) -> Result<Net> {
        crate::sys::allow_cma_peers();
        let (rank, size) = (pmi.rank as usize, pmi.size as usize);
        let cards = card::exchange(pmi)?;
        let host = &cards[rank].host;
        // OXMPI_TEST_UCX=1: every other rank counts as on another host.
        let forced = cfg.test_ucx;
        let same = |r: usize| {
            if forced {
                r == rank
            } else {
                &cards[r].host == host
            }
        };
        let local: Vec<usize> = (0..size).filter(|&r| same(r)).collect();
        let me_local = local.iter().position(|&r| r == rank).unwrap();
        let mut links = vec![Link::Unreachable; size];
        for (li, &r) in local.iter().enumerate() {
            links[r] = Link::Shm(li);
        }
        links[rank] = if cfg.loopback {
            Link::Loopback
        } else {
            Link::Local
        };
        let shm = if local.len() > 1 {
            let name = shm::segment_name(&pmi.kvsname, local[0] as i32);
            let cell = match cfg.cell_bytes {
                0 if local.len() <= 8 => 8192,
                0 => 4096,
                n => n,
            };
            let s = Shm::setup(&name, me_local, local.len(), cfg.ring_cells, cell)
                .map_err(|e| err!(MPI_ERR_INTERN, "shared memory setup failed ({name}): {e}"))?;
            s.publish_base();
            Some(s)
        } else {
            None
        };
        // Every local rank has attached once all ranks pass this barrier: the
        // creator removes the segment's name now, so nothing is left behind
        // whatever happens later.
        pmi.barrier().map_err(|e| err!(MPI_ERR_INTERN, "{e}"))?;
        // Every local rank has attached: the name goes now, before the UCX
        // round, so a rank killed after it (the launcher then kills the
        // rest, Hydra's or Slurm's too) leaves no file in /dev/shm.
        let mut shm = shm;
        if let Some(s) = shm.as_mut() {
            s.try_unlink();
        }
        // More than one host: every rank has a peer on another, so all of
        // them take part in this round of the exchange.
        let ucx = if forced || cards.iter().any(|c| c.host != cards[0].host) {
            let far = (0..size).find(|&r| !same(r)).unwrap_or(rank);
            let u = ucx::Ucx::new().map_err(|e| {
                err!(
                    MPI_ERR_OTHER,
                    "ranks on host {} and host {} need an inter-node transport: {e}",
                    cards[rank].host_name(),
                    cards[far].host_name()
                )
            })?;
            if std::env::var_os("OXMPI_DEBUG").is_some() && rank == 0 {
                let passed = cfg.ucx_rndv && cfg.ucx_cuda && u.cuda_memory();
                say!(
                    "oxmpi: UCX {} CUDA memory; device buffers to other hosts {}",
                    if u.cuda_memory() {
                        "reports"
                    } else {
                        "does not report"
                    },
                    if passed {
                        "above the eager limit go to it as they are"
                    } else {
                        "are staged in host memory"
                    }
                );
            }
            let addrs = card::exchange_ucx(pmi, u.address(), |r| !same(r))?;
            for (r, a) in addrs.iter().enumerate() {
                if !a.is_empty() {
                    links[r] = Link::Ucx;
                }
            }
            Some(ucx::link::UcxLink::new(u, rank, addrs))
        } else {
            None
        };
        if let Some(s) = shm.as_mut() {
            let local_pids: Vec<i32> = local.iter().map(|&r| cards[r].pid).collect();
            s.probe_cma(&local_pids, cfg.cma);
        }
        let peers = local
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != rank)
            .map(|(li, &r)| (li, r))
            .collect();
        let node: Vec<i32> = (0..size)
            .map(|r| {
                if forced {
                    r as i32
                } else {
                    (0..size).find(|&q| cards[q].host == cards[r].host).unwrap() as i32
                }
            })
            .collect();
        let _ = NODE_MAP.set(node);
        Ok(Net {
            links,
            shm,
            copy: Copier::new(cards.iter().map(|c| c.pid).collect(), cfg.cma),
            split: Split::new(local.len()),
            loopback: Loopback::default(),
            peers,
            me: rank,
            nlocal: local.len(),
            ucx_rndv: cfg.ucx_rndv,
            ucx_device: ucx_device(cfg, ucx.as_ref().is_some_and(|u| u.cuda_memory())),
            ucx,
        })
    }

    /// A communicator that held collective area `k` of the node's pool,
    /// with `n` members, is freed here (`coll::shm` claims the areas).
    pub fn release_area(&self, k: usize, n: usize) {
        if let Some(s) = self.shm.as_ref() {
            s.pool_release(k, n);
        }
    }

    /// The link to world rank `w`.
    #[inline]
    pub fn link(&self, w: usize) -> Link {
        self.links[w]
    }

    /// What the link to `w` can do now (single copy may have been refused).
    pub fn caps(&self, w: usize) -> Caps {
        match self.links[w] {
            Link::Shm(_) => Caps {
                frag: self.frag(w),
                inline: shm::ring::INLINE_BYTES,
                get: self.copy.usable(w),
                vectored: self.copy.usable(w),
                fetch: false,
                coop: self.copy.usable(w) && self.copy.proven(w),
                device: false,
            },
            Link::Loopback => Caps {
                frag: self.frag(w),
                inline: 0,
                get: self.copy.usable(w),
                vectored: self.copy.usable(w),
                fetch: false,
                coop: false,
                device: false,
            },
            Link::Ucx => Caps {
                frag: UCX_FRAG,
                inline: 0,
                get: false,
                vectored: false,
                fetch: self.ucx_rndv,
                coop: false,
                device: self.ucx_device,
            },
            Link::Local | Link::Unreachable => Caps {
                frag: 0,
                inline: 0,
                get: false,
                vectored: false,
                fetch: false,
                coop: false,
                device: false,
            },
        }
    }

    /// The link to `w` carries messages (pushes and arrivals).
    #[inline]
    pub fn carries(&self, w: usize) -> bool {
        matches!(self.links[w], Link::Shm(_) | Link::Loopback | Link::Ucx)
    }

    /// Payload bytes one push to `w` carries.
    #[inline]
    pub fn frag(&self, w: usize) -> usize {
        match self.links[w] {
            Link::Shm(_) => self.shm.as_ref().map_or(0, |s| s.payload()),
            Link::Loopback => loopback::FRAG_BYTES,
            Link::Ucx => UCX_FRAG,
            _ => 0,
        }
    }

    /// Pushes one message of at most `frag(w)` payload bytes to `w`; false
    /// when the link has no room now. `inline`: the envelope's `rreq`,
    /// `addr` and `offset` are unused (the payload may travel over them).
    #[inline]
    pub fn push(&mut self, w: usize, h: &Hdr, payload: &[u8], inline: bool) -> bool {
        match self.links[w] {
            Link::Shm(li) => self.shm.as_mut().unwrap().push(li, h, payload, inline),
            Link::Loopback => self.loopback.push(h, payload),
            Link::Ucx => {
                self.ucx.as_mut().unwrap().push(w, h, payload);
                true
            }
            Link::Local | Link::Unreachable => true,
        }
    }

    /// Pushes a message of one fragment to `w` if the link takes it now
    /// (a link that carries messages, `payload` within one fragment, room):
    /// the eager fast path's single dispatch. `inline` as for `push`.
    #[inline]
    pub fn push_now(&mut self, w: usize, h: &Hdr, payload: &[u8], inline: bool) -> bool {
        match self.links[w] {
            Link::Shm(li) => {
                let s = self.shm.as_mut().unwrap();
                payload.len() <= s.payload() && s.push(li, h, payload, inline)
            }
            Link::Loopback => {
                payload.len() <= loopback::FRAG_BYTES && self.loopback.push(h, payload)
            }
            Link::Ucx => {
                if payload.len() > UCX_FRAG {
                    return false;
                }
                self.ucx.as_mut().unwrap().push(w, h, payload);
                true
            }
            Link::Local | Link::Unreachable => false,
        }
    }

    /// Sends envelope `h` (a rendezvous) with the `len` bytes at `data` to
    /// `w` whole, on a link with `Caps::fetch`; `h.sreq` comes back through
    /// `Sink::done` when the link no longer reads `data`, which is device
    /// memory where `device` (only on a link with `Caps::device`).
    ///
    /// # Safety
    /// `data` holds `len` readable bytes until then.
    pub unsafe fn push_whole(
        &mut self,
        w: usize,
        h: &Hdr,
        data: *const u8,
        len: usize,
        device: bool,
    ) {
        if let (Link::Ucx, Some(u)) = (self.links[w], self.ucx.as_mut()) {
            // SAFETY: forwarded contract.
            unsafe { u.push_whole(w, h, data, len, device) }
        }
    }

    /// Receives the data of a rendezvous arrival from `w` (its envelope's
    /// `addr`, `len` = the envelope's `total` bytes) into `dst`, on a link
    /// with `Caps::fetch`; `token` comes back through `Sink::done` when
    /// the bytes are in. `dst` is device memory where `device` (only on a
    /// link with `Caps::device`).
    ///
    /// # Safety
    /// `addr` came from one arrival and is fetched once; `dst` holds `len`
    /// writable bytes until then.
    pub unsafe fn fetch(
        &mut self,
        w: usize,
        addr: u64,
        dst: *mut u8,
        len: usize,
        token: u64,
        device: bool,
    ) {
        if let (Link::Ucx, Some(u)) = (self.links[w], self.ucx.as_mut()) {
            // SAFETY: forwarded contract.
            unsafe { u.fetch(addr, dst, len, token, device) }
        }
    }

    /// Drops the data of a rendezvous arrival from `w` (its envelope's
    /// `addr`) that will never be fetched, on a link with `Caps::fetch`.
    ///
    /// # Safety
    /// `addr` came from one arrival, not fetched nor dropped yet.
    pub unsafe fn drop_arrival(&mut self, w: usize, addr: u64) {
        if let (Link::Ucx, Some(u)) = (self.links[w], self.ucx.as_mut()) {
            // SAFETY: forwarded contract.
            unsafe { u.drop_arrival(addr as usize) }
        }
    }

    /// The oldest message from `w` not handled yet, left in place: its
    /// envelope and payload (valid until `release(w)`). Only links whose
    /// messages stay in place answer (shared memory).
    #[inline]
    pub fn peek(&mut self, w: usize) -> Option<(Hdr, *const u8)> {
        match self.links[w] {
            Link::Shm(li) => self.shm.as_mut().unwrap().peek(li),
            _ => None,
        }
    }

    /// Consumes the message `peek(w)` showed.
    #[inline]
    pub fn release(&mut self, w: usize) {
        if let Link::Shm(li) = self.links[w] {
            self.shm.as_mut().unwrap().release(li)
        }
    }

    /// Hands what arrived on every link to `sink` (at most 64 messages per
    /// peer per call). True if anything arrived.
    pub fn poll<S: Sink>(sink: &mut S) -> bool {
        let mut did = false;
        let npeers = sink.net().peers.len();
        for i in 0..npeers {
            let (li, w) = sink.net().peers[i];
            let mut got = false;
            for _ in 0..64 {
                let Some((h, data)) = sink.net().shm.as_mut().unwrap().peek(li) else {
                    break;
                };
                // SAFETY: the cell's payload holds `len` bytes and stays in
                // place until `skip` below (the ring's memory is the mapping,
                // which nothing in `arrive` moves or writes).
                let payload = unsafe { std::slice::from_raw_parts(data, h.len as usize) };
                sink.arrive(w, &h, payload);
                sink.net().shm.as_mut().unwrap().skip(li);
                got = true;
            }
            if got {
                // The cells read in this round go back to the sender at once.
                sink.net().shm.as_mut().unwrap().publish(li);
                did = true;
            }
        }
        if !sink.net().loopback.is_empty() {
            let me = sink.net().me;
            // At most 64 per call, as from each ring.
            for _ in 0..64 {
                let Some((h, data)) = sink.net().loopback.pop() else {
                    break;
                };
                sink.arrive(me, &h, &data);
                did = true;
            }
        }
        if sink.net().ucx.is_some() {
            match sink.net().ucx.as_mut().unwrap().poll() {
                Ok(v) => {
                    for (w, h, data) in v {
                        sink.arrive(w, &h, &data);
                        did = true;
                    }
                }
                Err(e) => fail_job(sink.net().me, &e),
            }
            for token in sink.net().ucx.as_mut().unwrap().take_done() {
                sink.done(token);
                did = true;
            }
        }
        did
    }

    /// Before a waiting rank sleeps: what it may sleep on. With the
    /// inter-node link, UCX's event fd once armed (an arrival wakes the
    /// rank at once; shared memory is still looked at when the sleep's
    /// time is up, as without it), or `Busy` when UCX has events pending
    /// (progress again instead).
    pub fn arm_wait(&mut self) -> Wake {
        match self.ucx.as_mut() {
            None => Wake::Sleep,
            Some(u) => match u.arm() {
                Some(fd) => Wake::Fd(fd),
                None => Wake::Busy,
            },
        }
    }

    /// MPI_Finalize, after the last barrier: the inter-node link lets its
    /// endpoints go, the RMA worker's thread stops.
    pub fn close(&mut self) {
        if let Some(u) = self.ucx.as_mut() {
            u.close();
        }
        // The RMA worker's progress thread, if windows spanned nodes.
        ucx::rma::Rma::shutdown();
    }

    /// A link still holds messages this rank reported sent (UCX sends
    /// that need this rank's progress to leave): MPI_Finalize waits.
    pub fn sending(&self) -> bool {
        self.ucx.as_ref().is_some_and(|u| u.sending())
    }

    /// Whether the oldest message from `w` can be looked at in place
    /// (`peek`): the receive fast path waits on such links only.
    #[inline]
    pub fn peeks(&self, w: usize) -> bool {
        matches!(self.links[w], Link::Shm(_))
    }
}

/// The node of every world rank (the lowest world rank on its host), set
/// once at init (the one copy: `State::node_of` reads it too), so the
/// collectives' choice of node-aware forms reads it without the state's
/// lock.
static NODE_MAP: std::sync::OnceLock<Vec<i32>> = std::sync::OnceLock::new();

/// The node of every world rank (`Net::node`), once MPI_Init has found them.
/// Whether device buffers go to UCX's rendezvous as they are: it reports
/// CUDA memory (`reports`, or OXMPI_TEST_UCX_CUDA for tests), OXMPI_UCX_CUDA
/// allows it, and large messages go by that rendezvous (OXMPI_UCX_RNDV;
/// the fragments of the other form are host copies).
fn ucx_device(cfg: &Config, reports: bool) -> bool {
    cfg.ucx_rndv && cfg.ucx_cuda && (reports || cfg.test_ucx_cuda)
}

pub fn node_map() -> Option<&'static [i32]> {
    NODE_MAP.get().map(Vec::as_slice)
}

/// What a waiting rank may sleep on (`Net::arm_wait`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Wake {
    /// A plain timed sleep.
    Sleep,
    /// A timed wait for this fd to turn readable.
    Fd(i32),
    /// Do not sleep: there is work.
    Busy,
}

/// A link failed under a running job: the rank ends with a message naming
/// it, and mpirun ends the job (a failed peer must not leave this rank
/// waiting for it).
#[cold]
fn fail_job(me: usize, e: &str) -> ! {
    say!("OxMPI: rank {me}: the inter-node link failed: {e}");
    // SAFETY: _exit ends the process at once; nothing here needs unwinding.
    unsafe { libc::_exit(1) }
}
