//! Communicators, groups, keyvals/attributes and info objects: their storage
//! and lookup by handle. Creation protocols that need messages (context-id
//! agreement, split) live in `coll::create`.
//!
//! Context ids: each communicator owns an even id for point-to-point and the
//! next odd one for collectives. A new id is agreed on by all members as the
//! maximum of their `next_ctx` counters, and each member moves its counter past
//! it; ids therefore grow strictly on every process, and two communicators that
//! share a member never share an id. Ids are not reused.

use super::error::Result;
use super::state::State;
use crate::base::consts::*;
use crate::base::handles::{self, KIND_COMM, KIND_GROUP};
use crate::err;
use std::os::raw::{c_int, c_void};

/// Process topology attached to a communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topo {
    Cart {
        dims: Vec<i32>,
        periods: Vec<bool>,
    },
    Graph {
        index: Vec<i32>,
        edges: Vec<i32>,
    },
    DistGraph {
        sources: Vec<i32>,
        sweights: Vec<i32>,
        dests: Vec<i32>,
        dweights: Vec<i32>,
        weighted: bool,
    },
}

pub struct Comm {
    /// Point-to-point context id (even); collectives use `ctx + 1`.
    pub ctx: u32,
    pub rank: i32,
    pub size: i32,
    /// World rank of each rank of the (local) group.
    pub world: Vec<i32>,
    /// Intercommunicator: world ranks of the remote group.
    pub remote: Option<Vec<i32>>,
    /// Rank i of the group is world rank i (world itself, a duplicate, a
    /// split that kept every rank in order, or a prefix of world).
    pub identity: bool,
    pub errhandler: c_int,
    pub name: String,
    /// (keyval, attribute value) in the order they were set.
    pub attrs: Vec<(c_int, usize)>,
    pub info: Vec<(String, String)>,
    pub topo: Option<Topo>,
    /// Collective calls made on this communicator so far; every member makes
    /// them in the same order, so the count tells concurrent collectives apart.
    pub coll_seq: u32,
    /// Persistent collectives initialised on this communicator so far (in
    /// the same order everywhere): each keeps its own tag for all its starts.
    pub pcoll_seq: u32,
    /// This communicator's shared-memory collective area (`coll::shm`).
    pub coll_area: CollArea,
    /// Calls made through the pool area so far and where their data went.
    pub coll_clock: AreaClock,
}

/// The calls made through one collective area (`coll::shm`), the same on
/// every member: the generation of the last call, where the next region
/// starts, and the calls whose regions may still be read, oldest first
/// (generation, start; a ring of `len` entries from `front`); also the
/// lowest `done` counter this rank last read (`min_done`; every rank had
/// finished that call).
#[derive(Clone, Debug)]
pub struct AreaClock {
    pub g: u64,
    pub head: usize,
    pub q: [(u64, u32); 64],
    pub front: usize,
    pub len: usize,
    pub min_done: u64,
}

impl Default for AreaClock {
    fn default() -> Self {
        AreaClock {
            g: 0,
            head: 0,
            q: [(0, 0); 64],
            front: 0,
            len: 0,
            min_done: 0,
        }
    }
}

/// Whether a communicator other than world has a pool area of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollArea {
    /// Not asked yet: the first blocking collective agrees on it.
    Unknown,
    /// None: world's area, a communicator that cannot use one, or no free area.
    No,
    /// Pool area k of the node's segment.
    Pool(usize),
}

thread_local! {
    /// Set while a persistent collective's schedule is built (`with_pinned_tag`).
    static PINNED_TAG: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` (building a persistent collective's schedule) with every
/// collective tag taken on this thread being `tag`.
pub fn with_pinned_tag<R>(tag: i32, f: impl FnOnce() -> R) -> R {
    let old = PINNED_TAG.with(|p| p.replace(Some(tag)));
    let r = f();
    PINNED_TAG.with(|p| p.set(old));
    r
}

impl Comm {
    /// The tag of the collective being built on this communicator: the
    /// next of the 1024 cycling tags (every member makes its collective
    /// calls in one order), or, while a persistent collective's schedule is
    /// built at MPI_Start (`with_pinned_tag`), the tag it got at its
    /// initialisation, so that starts in different orders on different
    /// ranks still match, and the count of calls is not moved by a start.
    pub fn next_coll_tag(&mut self) -> i32 {
        if let Some(t) = PINNED_TAG.with(|p| p.get()) {
            return t;
        }
        self.coll_seq = self.coll_seq.wrapping_add(1);
        -1000 - (self.coll_seq & 0x3ff) as i32
    }

    /// The tag of a persistent collective being initialised: its own for as
    /// long as it lives (2^24 of them, apart from the cycling tags).
    pub fn persistent_tag(&mut self) -> i32 {
        self.pcoll_seq = self.pcoll_seq.wrapping_add(1);
        -0x0100_0000 - (self.pcoll_seq & 0xff_ffff) as i32
    }

    pub fn new(ctx: u32, world: Vec<i32>, me_world: i32, name: &str) -> Comm {
        let rank = world
            .iter()
            .position(|&w| w == me_world)
            .map(|p| p as i32)
            .unwrap_or(MPI_UNDEFINED);
        Comm {
            ctx,
            rank,
            size: world.len() as i32,
            identity: world.iter().enumerate().all(|(i, &w)| w as usize == i),
            world,
            remote: None,
            errhandler: MPI_ERRORS_ARE_FATAL,
            name: name.to_string(),
            attrs: Vec::new(),
            info: Vec::new(),
            topo: None,
            coll_seq: 0,
            pcoll_seq: 0,
            coll_area: CollArea::Unknown,
            coll_clock: AreaClock::default(),
        }
    }

    /// Size of the group a point-to-point rank refers to (remote group for intercommunicators).
    pub fn peer_size(&self) -> i32 {
        self.remote
            .as_ref()
            .map(|r| r.len() as i32)
            .unwrap_or(self.size)
    }

    /// An intercommunicator's two groups in the numbering both groups agree
    /// on: the group holding the lower world rank first, then the other.
    /// Returns (world ranks in that order, first index of the local group,
    /// first index of the remote group); None for an intracommunicator.
    pub fn both_groups(&self) -> Option<(Vec<i32>, usize, usize)> {
        let remote = self.remote.as_ref()?;
        Some(if self.world[0] < remote[0] {
            let all = self.world.iter().chain(remote).copied().collect();
            (all, 0, self.world.len())
        } else {
            let all = remote.iter().chain(&self.world).copied().collect();
            (all, remote.len(), 0)
        })
    }

    /// World rank of point-to-point peer `r`.
    pub fn peer_world(&self, r: i32) -> i32 {
        match &self.remote {
            Some(rem) => rem[r as usize],
            None => self.world[r as usize],
        }
    }
}

/// Keyval of attributes (communicator, datatype or window).
#[derive(Clone, Copy)]
pub struct Keyval {
    pub copy_fn: Option<CopyFn>,
    pub delete_fn: Option<DeleteFn>,
    pub extra_state: usize,
    /// KIND_COMM, KIND_DATATYPE, KIND_WIN.
    pub object: u32,
    pub freed: bool,
    /// Attributes still holding this keyval.
    pub refs: usize,
    /// Created from Fortran: callbacks take every argument by reference
    /// (values as INTEGER(KIND=MPI_ADDRESS_KIND)) and report through `ierror`.
    pub fortran: bool,
}

pub type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
pub type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// Handle of the communicator in slot `idx`.
pub fn comm_handle(idx: usize) -> c_int {
    match idx {
        0 => MPI_COMM_WORLD,
        1 => MPI_COMM_SELF,
        i => handles::make(KIND_COMM, i as u32),
    }
}

/// Keyval handles: MPICH's layout `0xa4000000 | object << 22 | index`.
pub fn keyval_handle(object: u32, idx: u32) -> c_int {
    (0xa400_0000u32 | (object << 22) | (idx & 0x3f_ffff)) as c_int
}

pub fn keyval_index(h: c_int) -> Option<(u32, u32)> {
    let u = h as u32;
    (u >> 26 == 0xa400_0000 >> 26).then_some(((u >> 22) & 0xf, u & 0x3f_ffff))
}

#[cold]
#[inline(never)]
fn bad_comm(h: c_int) -> super::error::Error {
    if h == MPI_COMM_NULL {
        return err!(MPI_ERR_COMM, "comm=MPI_COMM_NULL");
    }
    err!(
        MPI_ERR_COMM,
        "comm=0x{:08x} is not a valid communicator{}",
        h as u32,
        handles::kind_hint(h, KIND_COMM)
    )
}

impl State {
    /// Slot of a communicator handle.
    #[inline]
    pub fn comm_idx(&self, h: c_int) -> Result<usize> {
        let idx = match h {
            MPI_COMM_WORLD => 0,
            MPI_COMM_SELF => 1,
            _ => handles::index(h, KIND_COMM).ok_or_else(|| bad_comm(h))? as usize,
        };
        match self.comms.get(idx) {
            Some(Some(_)) if idx >= 2 || h == comm_handle(idx) => Ok(idx),
            _ => Err(bad_comm(h)),
        }
    }

    #[inline]
    pub fn comm(&self, h: c_int) -> Result<&Comm> {
        let i = self.comm_idx(h)?;
        Ok(self.comms[i].as_ref().unwrap())
    }

    pub fn comm_mut(&mut self, h: c_int) -> Result<&mut Comm> {
        let i = self.comm_idx(h)?;
        Ok(self.comms[i].as_mut().unwrap())
    }

    /// Stores a new communicator; returns its handle.
    pub fn add_comm(&mut self, c: Comm) -> c_int {
        let slot = self
            .comms
            .iter()
            .skip(2)
            .position(|c| c.is_none())
            .map(|p| p + 2);
        let idx = match slot {
            Some(i) => {
                self.comms[i] = Some(c);
                i
            }
            None => {
                self.comms.push(Some(c));
                self.comms.len() - 1
            }
        };
        crate::core::hang::coll_reset(idx);
        comm_handle(idx)
    }

    pub fn remove_comm(&mut self, h: c_int) -> Result<Comm> {
        let i = self.comm_idx(h)?;
        if i < 2 {
            return Err(err!(
                MPI_ERR_COMM,
                "comm={} is predefined and cannot be freed",
                self.comms[i].as_ref().unwrap().name
            ));
        }
        let c = self.comms[i].take().unwrap();
        if let CollArea::Pool(k) = c.coll_area {
            self.net.release_area(k, c.size as usize);
        }
        Ok(c)
    }

    /// Marks context id `x` as used by this process; false if it already was.
    pub fn reserve_ctx(&mut self, x: u32) -> bool {
        self.used_ctx.insert(x)
    }

    pub fn release_ctx(&mut self, x: u32) {
        self.used_ctx.remove(&x);
    }

    /// World ranks of group `h`.
    pub fn group(&self, h: c_int) -> Result<&[i32]> {
        if h == MPI_GROUP_EMPTY {
            return Ok(&[]);
        }
        handles::index(h, KIND_GROUP)
            .and_then(|i| self.groups.get(i))
            .map(|g| g.as_slice())
            .ok_or_else(|| {
                if h == MPI_GROUP_NULL {
                    err!(MPI_ERR_GROUP, "group=MPI_GROUP_NULL")
                } else {
                    err!(
                        MPI_ERR_GROUP,
                        "group=0x{:08x} is not a valid group{}",
                        h as u32,
                        handles::kind_hint(h, KIND_GROUP)
                    )
                }
            })
    }

    pub fn add_group(&mut self, g: Vec<i32>) -> c_int {
        if g.is_empty() {
            return MPI_GROUP_EMPTY;
        }
        handles::make(KIND_GROUP, self.groups.insert(g))
    }

    /// My rank in a group (MPI_UNDEFINED if not a member).
    pub fn rank_in(&self, g: &[i32]) -> i32 {
        g.iter()
            .position(|&w| w == self.rank)
            .map(|p| p as i32)
            .unwrap_or(MPI_UNDEFINED)
    }

    pub fn keyval(&self, h: c_int, object: u32) -> Result<&Keyval> {
        self.keyval_in_use(h, object).and_then(|k| {
            if k.freed {
                Err(self.bad_keyval(h))
            } else {
                Ok(k)
            }
        })
    }

    /// A keyval that may have been freed while attributes still use it
    /// (getting and deleting those attributes goes on working).
    pub fn keyval_in_use(&self, h: c_int, object: u32) -> Result<&Keyval> {
        keyval_index(h)
            .filter(|(o, _)| *o == object)
            .and_then(|(_, i)| self.keyvals.get(i))
            .ok_or_else(|| self.bad_keyval(h))
    }

    fn bad_keyval(&self, h: c_int) -> crate::core::error::Error {
        let _ = self;
        err!(
            MPI_ERR_KEYVAL,
            "keyval={} is not a valid keyval for this object",
            h
        )
    }

    /// Node of a world rank: the lowest world rank on the same host.
    pub fn node_of(&self, w: i32) -> i32 {
        crate::transport::node_map().map_or(0, |m| m[w as usize])
    }
}
