//! Collective mismatch checks (`OXMPI_CHECK=1`): before a collective does
//! anything, its ranks exchange a small description of the call (an
//! allgather of `WORDS` words on the same communicator, which every rank
//! makes at the same point, whatever collective it called) and compare:
//! the collective (its blocking, nonblocking and persistent forms count as
//! one), the root, the op, and the type signatures and counts where the
//! standard requires them to agree. Persistent collectives are checked at
//! their initialisation (`at_init`), intercommunicators over both groups
//! (`inter_verdict`). A
//! mismatch is an MPI error on every rank, naming the ranks and the
//! differing arguments, instead of a hang or wrong data:
//!
//! "MPI_Bcast on rank 0 but MPI_Allreduce on rank 1 in MPI_COMM_WORLD, call 3"
//!
//! A type signature is compared as the number of elements of each basic
//! type (order within the signature is not compared) and its bytes; where
//! either side is MPI_BYTE or MPI_PACKED, by bytes alone. The v and w forms
//! (their counts differ per rank by design) are compared pair by pair:
//! after the allgather, an alltoall hands each rank what every other rank
//! will send it, which it compares with what it expects from that rank,
//! and an allgather of the findings gives every rank the same error
//! ("MPI_Alltoallv: rank 2 sends 3 x MPI_INT (12 bytes) to rank 0, which
//! expects 2 x MPI_INT (8 bytes) from it"). The neighbourhood collectives
//! likewise, the blocks between two ranks (one per edge) taken as one.
//! Off, each collective pays one relaxed load.

use super::consts::*;
use super::{MPI_Comm, MPI_Datatype, MPI_Op};
use crate::core::error::Result;
use crate::err;
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_int;

/// Whether `OXMPI_CHECK` asks for the checks (decided with the profile's
/// switch, `core::profile::diag`).
#[inline(always)]
pub fn on() -> bool {
    crate::core::profile::diag() & crate::core::profile::CHECK != 0
}

thread_local! {
    /// Inside a checked collective: the collective's own inner calls (and
    /// the check's allgather) are not checked again.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// The MPI function this thread is in (set by `abi::guard` while the
    /// checks are on), for the messages.
    static CURRENT: Cell<&'static str> = const { Cell::new("") };
    /// A persistent collective's initialisation being checked (`at_init`).
    static PROBE: Cell<u8> = const { Cell::new(0) };
}

/// Notes the entry point being called (checks on).
pub fn entering(func: &'static str) -> &'static str {
    CURRENT.with(|c| c.replace(func))
}

/// Restores what `entering` replaced.
pub fn leaving(prev: &'static str) {
    CURRENT.with(|c| c.set(prev));
}

/// Held for the duration of a checked collective.
pub struct Guard(bool);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0 {
            INSIDE.with(|i| i.set(false));
        }
    }
}

/// A type signature: bytes, a hash of the elements of each basic type, and
/// whether it is untyped (MPI_BYTE or MPI_PACKED inside).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sig {
    pub count: u64,
    pub dt: u64,
    pub bytes: u64,
    pub hash: u64,
    pub untyped: bool,
}

/// The signature of `count` elements of `dt`; None where the arguments are
/// not valid (the collective itself reports them).
pub fn sig(count: impl Into<i64>, dt: MPI_Datatype) -> Option<Sig> {
    let count: i64 = count.into();
    if count < 0 {
        return None;
    }
    let t = super::datatype::lookup(dt).ok()?;
    let mut per: Vec<(c_int, u64)> = Vec::new();
    let reps = (t.reps as u64).max(1) * count as u64;
    for r in &t.runs {
        let n = r.count as u64 * reps;
        match per.iter_mut().find(|(b, _)| *b == r.basic) {
            Some(e) => e.1 += n,
            None => per.push((r.basic, n)),
        }
    }
    per.sort();
    let untyped = per.iter().any(|&(b, _)| b == MPI_BYTE || b == MPI_PACKED);
    // The (basic type, elements) pairs.
    let h = fnv(per
        .iter()
        .flat_map(|(b, n)| (*b as u32).to_le_bytes().into_iter().chain(n.to_le_bytes())));
    Some(Sig {
        count: count as u64,
        dt: dt as u32 as u64,
        bytes: t.size as u64 * count as u64,
        hash: h,
        untyped,
    })
}

impl Sig {
    /// Two blocks between one pair of ranks as one (a neighbourhood
    /// collective's edges between them): their bytes and elements summed;
    /// compared as a whole, whatever the blocks' order.
    pub fn and(self, o: Sig) -> Sig {
        Sig {
            count: self.count + o.count,
            dt: if self.dt == o.dt { self.dt } else { MIXED },
            bytes: self.bytes + o.bytes,
            hash: self.hash.wrapping_add(o.hash),
            untyped: self.untyped || o.untyped,
        }
    }
}

/// The datatype of a `Sig` made of blocks of different types.
const MIXED: u64 = u64::MAX;

/// What a collective's ranks must agree on beyond the collective itself.
pub enum Shape {
    /// Nothing more (barrier, v and w forms, neighbourhood collectives).
    None,
    /// Every rank's signature alike (bcast, the reductions).
    Same(Option<Sig>),
    /// Every rank's send and receive blocks alike (allgather, alltoall);
    /// `send` None for MPI_IN_PLACE.
    Blocks {
        send: Option<Sig>,
        recv: Option<Sig>,
    },
    /// Every rank's send block like the root's receive block (gather).
    ToRoot {
        send: Option<Sig>,
        recv: Option<Sig>,
    },
    /// The root's send block like every rank's receive block (scatter).
    FromRoot {
        send: Option<Sig>,
        recv: Option<Sig>,
    },
    /// Identical counts on every rank (reduce_scatter's recvcounts), and
    /// the element's signature.
    Counts(u64, Option<Sig>),
    /// Per rank of the communicator: what this rank sends it and what it
    /// expects from it (the v and w forms); None where nothing is
    /// significant (MPI_IN_PLACE, not the root).
    Pairs {
        send: Vec<Option<Sig>>,
        recv: Vec<Option<Sig>>,
    },
}

/// Whether the entry point this thread is in is a v or w collective or a
/// neighbourhood one, whose builder describes its call as `Shape::Pairs`
/// (called only with the checks on).
pub fn per_peer() -> bool {
    family_of(CURRENT.with(|c| c.get()))
        .is_some_and(|f| f.ends_with('v') || f.ends_with('w') || f.starts_with("MPI_Neighbor"))
}

const WORDS: usize = 19;

/// Calls per communicator so far (by handle), for the messages.
static CALLS: parking_lot::Mutex<Option<HashMap<c_int, u64>>> = parking_lot::Mutex::new(None);

/// The families of collectives: a call's kind is its index here.
const FAMILIES: &[&str] = &[
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Alltoallw",
    "MPI_Reduce_scatter",
    "MPI_Reduce_scatter_block",
    "MPI_Scan",
    "MPI_Exscan",
    "MPI_Neighbor_allgather",
    "MPI_Neighbor_allgatherv",
    "MPI_Neighbor_alltoall",
    "MPI_Neighbor_alltoallv",
    "MPI_Neighbor_alltoallw",
];

/// The collective family of entry point `name` (its blocking name), if it
/// is a collective's.
fn family_of(name: &str) -> Option<&'static str> {
    let base = name.strip_suffix("_c").unwrap_or(name);
    let base = base.strip_suffix("_init").unwrap_or(base);
    FAMILIES.iter().copied().find(|f| {
        *f == base
            || base.strip_prefix("MPI_I").is_some_and(|rest| {
                f.strip_prefix("MPI_")
                    .is_some_and(|g| g.eq_ignore_ascii_case(rest))
            })
    })
}

/// Checks that every rank of `comm` makes the same collective (the family
/// of the entry point this thread is in) with agreeing arguments; the
/// guard keeps the collective's own inner calls from being checked again.
/// Nothing happens with the checks off, inside a checked collective, or
/// where the call is not a collective's entry point (`MPI_Start` of a
/// persistent collective, checked at its initialisation instead).
#[inline(always)]
pub fn collective(
    comm: MPI_Comm,
    root: Option<c_int>,
    op: Option<MPI_Op>,
    shape: impl FnOnce() -> Shape,
) -> Result<Guard> {
    if !on() {
        return Ok(Guard(false));
    }
    checked(comm, root, op, shape)
}

#[inline(never)]
fn checked(
    comm: MPI_Comm,
    root: Option<c_int>,
    op: Option<MPI_Op>,
    shape: impl FnOnce() -> Shape,
) -> Result<Guard> {
    if INSIDE.with(|i| i.get()) {
        return Ok(Guard(false));
    }
    let name = CURRENT.with(|c| c.get());
    let Some(family) = family_of(name) else {
        return Ok(Guard(false));
    };
    let (inter, size, label) = crate::core::runtime::with(|st| {
        let c = st.comm(comm)?;
        let label = match comm {
            MPI_COMM_WORLD => "MPI_COMM_WORLD".to_string(),
            MPI_COMM_SELF => "MPI_COMM_SELF".to_string(),
            _ if !c.name.is_empty() => format!("communicator {} (0x{:08x})", c.name, comm as u32),
            _ => format!("communicator 0x{:08x}", comm as u32),
        };
        Ok((c.remote.is_some(), c.peer_size() as usize, label))
    })?;
    INSIDE.with(|i| i.set(true));
    let guard = Guard(true);
    let shape = shape();
    let kind = FAMILIES
        .iter()
        .position(|f| *f == family)
        .unwrap_or(usize::MAX) as u64;
    let call = {
        let mut g = CALLS.lock();
        let m = g.get_or_insert_with(HashMap::new);
        let n = m.entry(comm).or_insert(0);
        *n += 1;
        *n
    };
    let name_id = NAMES.iter().position(|n| *n == name).unwrap_or(usize::MAX) as u64;
    let mut pairs = None;
    let (tag, a, b, counts) = match shape {
        Shape::None => (0, None, None, 0),
        Shape::Pairs { send, recv } => {
            pairs = Some((send, recv));
            (0, None, None, 0)
        }
        Shape::Same(s) => (1, s, None, 0),
        Shape::Blocks { send, recv } => (2, send, recv, 0),
        Shape::ToRoot { send, recv } => (3, send, recv, 0),
        Shape::FromRoot { send, recv } => (4, send, recv, 0),
        Shape::Counts(h, s) => (5, s, None, h),
    };
    let mut mine = [0u64; WORDS];
    mine[0] = kind;
    mine[1] = call;
    mine[2] = root.map_or(u64::MAX, |r| r as u32 as u64);
    mine[3] = op.map_or(u64::MAX, |o| o as u32 as u64);
    mine[4] = tag;
    put(&mut mine[5..11], a);
    put(&mut mine[11..17], b);
    mine[17] = counts;
    mine[18] = name_id;
    if inter {
        // Both groups' descriptions, in the merged numbering.
        let (d, sides) = inter_words(comm, &mine)?;
        inter_verdict(&d, &sides, &label)?;
    } else {
        let all = words(comm, &mine, WORDS, size, false, name)?;
        let d: Vec<Desc> = all.chunks(WORDS).map(Desc::from).collect();
        verdict(&d, &label)?;
        if let Some((send, recv)) = pairs {
            // Every rank is here: the verdict above is the same on all.
            pairwise(comm, size, &send, &recv, name, &label, call)?;
        }
    }
    if PROBE.with(|p| p.get()) == PROBING {
        // A persistent collective's initialisation (`at_init`): checked,
        // and its schedule is built at each MPI_Start, not now.
        PROBE.with(|p| p.set(PROBED));
        return Err(err!(MPI_ERR_OTHER, "{name}: checked at initialisation"));
    }
    Ok(guard)
}

/// Checks a persistent collective's arguments at its initialisation
/// (checks on): the initialisations are collective and made in the same
/// order on every rank, where the starts need not be. `build` is the
/// request's factory: it runs up to its check and stops there (nothing is
/// built, no tag is taken but the check's own); its error before or in the
/// check is the initialisation's.
pub fn at_init<T>(build: impl FnOnce() -> Result<T>) -> Result<()> {
    PROBE.with(|p| p.set(PROBING));
    let r = build();
    let state = PROBE.with(|p| p.replace(0));
    match r {
        Err(_) if state == PROBED => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    }
}

/// `PROBE`: a persistent collective's initialisation is being checked;
/// its check has passed.
const PROBING: u8 = 1;
const PROBED: u8 = 2;

/// Where each rank of an intercommunicator's two groups is, for the
/// messages: (this rank's group, rank within its group, world rank).
struct Side {
    local: bool,
    rank: usize,
    world: i32,
}

impl Side {
    fn text(&self) -> String {
        format!(
            "rank {} of the {} group (world rank {})",
            self.rank,
            if self.local { "local" } else { "remote" },
            self.world
        )
    }
}

/// The check's exchange on an intercommunicator: an allgather over both
/// groups (the merged numbering of its collectives, `coll::inter`), so
/// every rank of either group sees every description.
fn inter_words(comm: MPI_Comm, mine: &[u64; WORDS]) -> Result<(Vec<Desc>, Vec<Side>)> {
    let iv = crate::coll::inter::view(comm)?.ok_or_else(|| {
        err!(
            MPI_ERR_COMM,
            "the collective check: not an intercommunicator"
        )
    })?;
    let n = iv.all.size;
    let me = iv.all.rank;
    let block = WORDS * 8;
    let mut all = vec![0u8; block * n];
    for (k, w) in mine.iter().enumerate() {
        all[me * block + 8 * k..me * block + 8 * (k + 1)].copy_from_slice(&w.to_le_bytes());
    }
    let blocks: Vec<(usize, usize)> = (0..n).map(|i| (i * block, block)).collect();
    crate::coll::basic::allgatherv(&iv.all, &mut all, &blocks)?;
    let words: Vec<u64> = all
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let d = words.chunks(WORDS).map(Desc::from).collect();
    let sides = (0..n)
        .map(|i| {
            let local = (iv.lbase..iv.lbase + iv.nl).contains(&i);
            Side {
                local,
                rank: if local { i - iv.lbase } else { i - iv.rbase },
                world: iv.all.world[i],
            }
        })
        .collect();
    Ok((d, sides))
}

/// The check's own exchange of `per` words per rank on `comm` (of `size`
/// ranks): an allgather of `mine` (`per` words), or with `alltoall` an
/// alltoall of `mine` (`per` words for each rank).
fn words(
    comm: MPI_Comm,
    mine: &[u64],
    per: usize,
    size: usize,
    alltoall: bool,
    name: &str,
) -> Result<Vec<u64>> {
    let mut all = vec![0u64; per * size];
    let (sb, rb, n) = (mine.as_ptr().cast(), all.as_mut_ptr().cast(), per as c_int);
    // SAFETY: `mine` holds `per` words (for each rank with `alltoall`) and
    // `all` `per` words per rank.
    let rc = unsafe {
        if alltoall {
            super::coll::MPI_Alltoall(sb, n, MPI_UINT64_T, rb, n, MPI_UINT64_T, comm)
        } else {
            super::coll::MPI_Allgather(sb, n, MPI_UINT64_T, rb, n, MPI_UINT64_T, comm)
        }
    };
    if rc != MPI_SUCCESS {
        return Err(err!(
            MPI_ERR_OTHER,
            "{name}: the collective check's exchange failed (error {rc})"
        ));
    }
    Ok(all)
}

/// Words per signature in the pairwise exchange (`put` / `get`).
const SIG_WORDS: usize = 5;

/// The pair-by-pair comparison of a v or w collective (`Shape::Pairs`).
fn pairwise(
    comm: MPI_Comm,
    size: usize,
    send: &[Option<Sig>],
    recv: &[Option<Sig>],
    name: &str,
    label: &str,
    call: u64,
) -> Result<()> {
    let mut out = vec![0u64; SIG_WORDS * size];
    for (j, s) in send.iter().enumerate().take(size) {
        put(&mut out[SIG_WORDS * j..SIG_WORDS * (j + 1)], *s);
    }
    let got = words(comm, &out, SIG_WORDS, size, true, name)?;
    // This rank's first disagreement: (found, peer, expected, sent).
    const FIND: usize = 2 + 2 * SIG_WORDS;
    let mut mine = [0u64; FIND];
    for (j, e) in recv.iter().enumerate().take(size) {
        let g = get(&got[SIG_WORDS * j..SIG_WORDS * (j + 1)]);
        if let (Some(e), Some(g)) = (e, g) {
            if !agree(e, &g) {
                mine[0] = 1;
                mine[1] = j as u64;
                put(&mut mine[2..2 + SIG_WORDS], Some(*e));
                put(&mut mine[2 + SIG_WORDS..], Some(g));
                break;
            }
        }
    }
    let all = words(comm, &mine, FIND, size, false, name)?;
    match all.chunks(FIND).enumerate().find(|(_, f)| f[0] == 1) {
        None => Ok(()),
        Some((i, f)) => Err(err!(
            MPI_ERR_TYPE,
            "collective mismatch: {name}: rank {} sends {} to rank {i}, which expects {} from it, in {label}, call {call}",
            f[1],
            sig_text(&get(&f[2 + SIG_WORDS..])),
            sig_text(&get(&f[2..2 + SIG_WORDS]))
        )),
    }
}

fn put(w: &mut [u64], s: Option<Sig>) {
    if let Some(s) = s {
        w[0] = 1 | (s.untyped as u64) << 1;
        w[1] = s.count;
        w[2] = s.dt;
        w[3] = s.bytes;
        w[4] = s.hash;
    }
}

fn get(w: &[u64]) -> Option<Sig> {
    (w[0] & 1 == 1).then(|| Sig {
        count: w[1],
        dt: w[2],
        bytes: w[3],
        hash: w[4],
        untyped: w[0] & 2 != 0,
    })
}

/// One rank's description of its call.
struct Desc {
    kind: u64,
    call: u64,
    root: u64,
    op: u64,
    tag: u64,
    a: Option<Sig>,
    b: Option<Sig>,
    counts: u64,
    name: u64,
}

impl From<&[u64]> for Desc {
    fn from(w: &[u64]) -> Desc {
        Desc {
            kind: w[0],
            call: w[1],
            root: w[2],
            op: w[3],
            tag: w[4],
            a: get(&w[5..11]),
            b: get(&w[11..17]),
            counts: w[17],
            name: w[18],
        }
    }
}

/// Entry points a description may name (the collectives' blocking,
/// nonblocking, persistent and large-count forms).
const NAMES: &[&str] = &[
    "MPI_Barrier",
    "MPI_Ibarrier",
    "MPI_Barrier_init",
    "MPI_Bcast",
    "MPI_Ibcast",
    "MPI_Bcast_init",
    "MPI_Bcast_c",
    "MPI_Ibcast_c",
    "MPI_Bcast_init_c",
    "MPI_Reduce",
    "MPI_Ireduce",
    "MPI_Reduce_init",
    "MPI_Reduce_c",
    "MPI_Ireduce_c",
    "MPI_Reduce_init_c",
    "MPI_Allreduce",
    "MPI_Iallreduce",
    "MPI_Allreduce_init",
    "MPI_Allreduce_c",
    "MPI_Iallreduce_c",
    "MPI_Allreduce_init_c",
    "MPI_Gather",
    "MPI_Igather",
    "MPI_Gather_init",
    "MPI_Gather_c",
    "MPI_Igather_c",
    "MPI_Gather_init_c",
    "MPI_Gatherv",
    "MPI_Igatherv",
    "MPI_Gatherv_init",
    "MPI_Gatherv_c",
    "MPI_Igatherv_c",
    "MPI_Gatherv_init_c",
    "MPI_Scatter",
    "MPI_Iscatter",
    "MPI_Scatter_init",
    "MPI_Scatter_c",
    "MPI_Iscatter_c",
    "MPI_Scatter_init_c",
    "MPI_Scatterv",
    "MPI_Iscatterv",
    "MPI_Scatterv_init",
    "MPI_Scatterv_c",
    "MPI_Iscatterv_c",
    "MPI_Scatterv_init_c",
    "MPI_Allgather",
    "MPI_Iallgather",
    "MPI_Allgather_init",
    "MPI_Allgather_c",
    "MPI_Iallgather_c",
    "MPI_Allgather_init_c",
    "MPI_Allgatherv",
    "MPI_Iallgatherv",
    "MPI_Allgatherv_init",
    "MPI_Allgatherv_c",
    "MPI_Iallgatherv_c",
    "MPI_Allgatherv_init_c",
    "MPI_Alltoall",
    "MPI_Ialltoall",
    "MPI_Alltoall_init",
    "MPI_Alltoall_c",
    "MPI_Ialltoall_c",
    "MPI_Alltoall_init_c",
    "MPI_Alltoallv",
    "MPI_Ialltoallv",
    "MPI_Alltoallv_init",
    "MPI_Alltoallv_c",
    "MPI_Ialltoallv_c",
    "MPI_Alltoallv_init_c",
    "MPI_Alltoallw",
    "MPI_Ialltoallw",
    "MPI_Alltoallw_init",
    "MPI_Alltoallw_c",
    "MPI_Ialltoallw_c",
    "MPI_Alltoallw_init_c",
    "MPI_Reduce_scatter",
    "MPI_Ireduce_scatter",
    "MPI_Reduce_scatter_init",
    "MPI_Reduce_scatter_c",
    "MPI_Ireduce_scatter_c",
    "MPI_Reduce_scatter_init_c",
    "MPI_Reduce_scatter_block",
    "MPI_Ireduce_scatter_block",
    "MPI_Reduce_scatter_block_init",
    "MPI_Reduce_scatter_block_c",
    "MPI_Ireduce_scatter_block_c",
    "MPI_Reduce_scatter_block_init_c",
    "MPI_Scan",
    "MPI_Iscan",
    "MPI_Scan_init",
    "MPI_Scan_c",
    "MPI_Iscan_c",
    "MPI_Scan_init_c",
    "MPI_Exscan",
    "MPI_Iexscan",
    "MPI_Exscan_init",
    "MPI_Exscan_c",
    "MPI_Iexscan_c",
    "MPI_Exscan_init_c",
    "MPI_Neighbor_allgather",
    "MPI_Ineighbor_allgather",
    "MPI_Neighbor_allgather_init",
    "MPI_Neighbor_allgatherv",
    "MPI_Ineighbor_allgatherv",
    "MPI_Neighbor_allgatherv_init",
    "MPI_Neighbor_alltoall",
    "MPI_Ineighbor_alltoall",
    "MPI_Neighbor_alltoall_init",
    "MPI_Neighbor_alltoallv",
    "MPI_Ineighbor_alltoallv",
    "MPI_Neighbor_alltoallv_init",
    "MPI_Neighbor_alltoallw",
    "MPI_Ineighbor_alltoallw",
    "MPI_Neighbor_alltoallw_init",
];

/// The entry point rank `d` was in (else its collective's blocking name).
fn called(d: &Desc) -> &'static str {
    NAMES
        .get(d.name as usize)
        .or_else(|| FAMILIES.get(d.kind as usize))
        .copied()
        .unwrap_or("an unknown collective")
}

fn sig_text(s: &Option<Sig>) -> String {
    match s {
        None => "MPI_IN_PLACE".into(),
        Some(s) if s.dt == MIXED => format!("{} bytes of several datatypes", s.bytes),
        Some(s) => {
            let dt = s.dt as u32 as c_int;
            let builtin = crate::base::type_names::builtin_name(dt);
            let name = if builtin.starts_with("MPI_") {
                builtin.to_string()
            } else {
                super::datatype::lookup(dt)
                    .ok()
                    .map(|t| t.name.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| format!("datatype 0x{:08x}", s.dt))
            };
            format!("{} x {name} ({} bytes)", s.count, s.bytes)
        }
    }
}

fn agree(x: &Sig, y: &Sig) -> bool {
    if x.untyped || y.untyped {
        x.bytes == y.bytes
    } else {
        x.bytes == y.bytes && x.hash == y.hash
    }
}

/// The same verdict on every rank: the first disagreement found, in rank
/// order, as an error.
fn verdict(d: &[Desc], label: &str) -> Result<()> {
    let first = &d[0];
    let at = |call: u64| format!("in {label}, call {call}");
    for (j, x) in d.iter().enumerate().skip(1) {
        if x.kind != first.kind {
            return Err(err!(
                MPI_ERR_OTHER,
                "collective mismatch: {} on rank 0 but {} on rank {j} {}",
                called(first),
                called(x),
                at(first.call)
            ));
        }
    }
    let name = called(first);
    for (j, x) in d.iter().enumerate().skip(1) {
        if x.root != first.root {
            return Err(err!(
                MPI_ERR_ROOT,
                "collective mismatch: {name} with root {} on rank 0 but root {} on rank {j} {}",
                first.root as u32 as i32,
                x.root as u32 as i32,
                at(first.call)
            ));
        }
        if x.op != first.op {
            return Err(err!(
                MPI_ERR_OP,
                "collective mismatch: {name} with {} on rank 0 but {} on rank {j} {}",
                op_text(first.op),
                op_text(x.op),
                at(first.call)
            ));
        }
    }
    let mismatch = |what: &str, i: usize, si: &Option<Sig>, j: usize, sj: &Option<Sig>| {
        err!(
            MPI_ERR_TYPE,
            "collective mismatch: {name}: {what} {} on rank {i} but {} on rank {j} {}",
            sig_text(si),
            sig_text(sj),
            at(first.call)
        )
    };
    match first.tag {
        1 => {
            for (j, x) in d.iter().enumerate().skip(1) {
                if let (Some(p), Some(q)) = (&first.a, &x.a) {
                    if !agree(p, q) {
                        return Err(mismatch("data", 0, &first.a, j, &x.a));
                    }
                }
            }
        }
        2 => {
            // Every send block and every receive block like rank 0's receive block.
            for (j, x) in d.iter().enumerate() {
                for (what, s) in [("send block", &x.a), ("receive block", &x.b)] {
                    if let (Some(p), Some(q)) = (&first.b, s) {
                        if !agree(p, q) {
                            return Err(mismatch(what, j, s, 0, &first.b));
                        }
                    }
                }
            }
        }
        3 => {
            let r = first.root as usize;
            if let Some(root) = d.get(r) {
                for (j, x) in d.iter().enumerate() {
                    if let (Some(p), Some(q)) = (&root.b, &x.a) {
                        if !agree(p, q) {
                            return Err(mismatch("send block", j, &x.a, r, &root.b));
                        }
                    }
                }
            }
        }
        4 => {
            let r = first.root as usize;
            if let Some(root) = d.get(r) {
                for (j, x) in d.iter().enumerate() {
                    if let (Some(p), Some(q)) = (&root.a, &x.b) {
                        if !agree(p, q) {
                            return Err(mismatch("receive block", j, &x.b, r, &root.a));
                        }
                    }
                }
            }
        }
        5 => {
            for (j, x) in d.iter().enumerate().skip(1) {
                if x.counts != first.counts {
                    return Err(err!(
                        MPI_ERR_COUNT,
                        "collective mismatch: {name}: recvcounts differ between rank 0 and rank {j} {}",
                        at(first.call)
                    ));
                }
                if let (Some(p), Some(q)) = (&first.a, &x.a) {
                    if !agree(p, q) {
                        return Err(mismatch("element", 0, &first.a, j, &x.a));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The verdict on an intercommunicator, `d` and `sides` in the merged
/// numbering of both groups: the collective and the op alike everywhere;
/// the roots as the standard has them (MPI_ROOT on one rank, MPI_PROC_NULL
/// on the rest of its group, that rank's number on every rank of the other
/// group); the signatures between the groups: the root's data against
/// every remote rank's (bcast, reduce, gather, scatter), each rank's send
/// block against every remote rank's receive block (allgather, alltoall),
/// every rank's data alike (allreduce) and reduce_scatter's element. The
/// v and w forms and reduce_scatter_block's counts (which differ between
/// the groups by design) are not compared.
fn inter_verdict(d: &[Desc], sides: &[Side], label: &str) -> Result<()> {
    let first = &d[0];
    let at = format!("in {label}, call {}", first.call);
    let who = |i: usize| sides[i].text();
    for (j, x) in d.iter().enumerate().skip(1) {
        if x.kind != first.kind {
            return Err(err!(
                MPI_ERR_OTHER,
                "collective mismatch: {} on {} but {} on {} {at}",
                called(first),
                who(0),
                called(x),
                who(j)
            ));
        }
    }
    let name = called(first);
    for (j, x) in d.iter().enumerate().skip(1) {
        if x.op != first.op {
            return Err(err!(
                MPI_ERR_OP,
                "collective mismatch: {name} with {} on {} but {} on {} {at}",
                op_text(first.op),
                who(0),
                op_text(x.op),
                who(j)
            ));
        }
    }
    let root_of = |x: &Desc| x.root as u32 as i32;
    let mut root = None;
    if first.root != u64::MAX {
        let roots: Vec<usize> = (0..d.len())
            .filter(|&i| root_of(&d[i]) == MPI_ROOT)
            .collect();
        let r = match roots[..] {
            [] => {
                return Err(err!(
                    MPI_ERR_ROOT,
                    "collective mismatch: {name}: no rank passed root=MPI_ROOT {at}"
                ))
            }
            [r] => r,
            [r, q, ..] => {
                return Err(err!(
                    MPI_ERR_ROOT,
                    "collective mismatch: {name}: root=MPI_ROOT on {} and on {} {at}",
                    who(r),
                    who(q)
                ))
            }
        };
        for (j, x) in d.iter().enumerate() {
            if sides[j].local == sides[r].local {
                if j != r && root_of(x) != MPI_PROC_NULL {
                    return Err(err!(
                        MPI_ERR_ROOT,
                        "collective mismatch: {name}: root={} on {}, in the group of the root ({}), whose other ranks pass MPI_PROC_NULL {at}",
                        root_of(x),
                        who(j),
                        who(r)
                    ));
                }
            } else if root_of(x) != sides[r].rank as i32 {
                return Err(err!(
                    MPI_ERR_ROOT,
                    "collective mismatch: {name}: root={} on {} but the root (MPI_ROOT) is {} {at}",
                    root_of(x),
                    who(j),
                    who(r)
                ));
            }
        }
        root = Some(r);
    }
    let mismatch =
        |what: &str, i: usize, si: &Option<Sig>, other: &str, j: usize, sj: &Option<Sig>| {
            err!(
                MPI_ERR_TYPE,
                "collective mismatch: {name}: {what} {} on {} but {other} {} on {} {at}",
                sig_text(si),
                who(i),
                sig_text(sj),
                who(j)
            )
        };
    let remote = |i: usize, j: usize| sides[i].local != sides[j].local;
    // (tag, the root's or rank i's signature, the remote rank's)
    let pairs: &[Between] = match (first.tag, first.kind) {
        // bcast, reduce: the data; reduce_scatter_block: counts differ.
        (1, 1) | (1, 2) => &[("data", |x| &x.a, "data", |x| &x.a)],
        (1, 3) | (5, _) => {
            for (j, x) in d.iter().enumerate().skip(1) {
                if let (Some(p), Some(q)) = (&first.a, &x.a) {
                    if !agree(p, q) {
                        let what = if first.tag == 5 { "element" } else { "data" };
                        return Err(mismatch(what, 0, &first.a, what, j, &x.a));
                    }
                }
            }
            &[]
        }
        (2, _) => &[("send block", |x| &x.a, "receive block", |x| &x.b)],
        (3, _) => &[("receive block", |x| &x.b, "send block", |x| &x.a)],
        (4, _) => &[("send block", |x| &x.a, "receive block", |x| &x.b)],
        _ => &[],
    };
    for &(what, mine, other, theirs) in pairs {
        // From the root only where there is one; else from every rank.
        let from: Vec<usize> = match root {
            Some(r) => vec![r],
            None => (0..d.len()).collect(),
        };
        for &i in &from {
            for j in (0..d.len()).filter(|&j| remote(i, j)) {
                if let (Some(p), Some(q)) = (mine(&d[i]), theirs(&d[j])) {
                    if !agree(p, q) {
                        return Err(mismatch(what, i, mine(&d[i]), other, j, theirs(&d[j])));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Signatures compared between the groups of an intercommunicator: what
/// the root's (or every rank's) description says, and the other group's.
type Between = (
    &'static str,
    fn(&Desc) -> &Option<Sig>,
    &'static str,
    fn(&Desc) -> &Option<Sig>,
);

/// An op's name for the messages.
fn op_text(o: u64) -> String {
    let o = o as u32 as c_int;
    let n = crate::op::op_name(o);
    if n.starts_with("MPI_") {
        n.to_string()
    } else {
        format!("op 0x{:08x}", o as u32)
    }
}

/// A hash of a counts array (reduce_scatter's recvcounts).
pub fn counts_hash(c: &[i64]) -> u64 {
    fnv(c.iter().flat_map(|v| v.to_le_bytes()))
}

/// FNV-1a of `bytes`.
fn fnv(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_points_map_to_their_collective() {
        assert_eq!(family_of("MPI_Ibcast"), Some("MPI_Bcast"));
        assert_eq!(family_of("MPI_Allreduce_init"), Some("MPI_Allreduce"));
        assert_eq!(family_of("MPI_Iallgatherv_c"), Some("MPI_Allgatherv"));
        assert_eq!(
            family_of("MPI_Reduce_scatter_block"),
            Some("MPI_Reduce_scatter_block")
        );
        assert_eq!(
            family_of("MPI_Ineighbor_alltoall"),
            Some("MPI_Neighbor_alltoall")
        );
        assert_eq!(family_of("MPI_Iexscan"), Some("MPI_Exscan"));
        assert_eq!(family_of("MPI_Iprobe"), None);
        assert_eq!(
            family_of("MPI_Neighbor_alltoall"),
            Some("MPI_Neighbor_alltoall")
        );
        assert_eq!(family_of("MPI_Start"), None);
        assert_eq!(family_of("MPI_Send"), None);
    }

    fn desc(kind: u64, root: u64, op: u64, tag: u64, a: Option<Sig>, b: Option<Sig>) -> Desc {
        Desc {
            kind,
            call: 7,
            root,
            op,
            tag,
            a,
            b,
            counts: 0,
            name: u64::MAX,
        }
    }

    fn int_sig(count: u64, hash: u64) -> Option<Sig> {
        Some(Sig {
            count,
            dt: 0,
            bytes: 4 * count,
            hash,
            untyped: false,
        })
    }

    #[test]
    fn the_first_disagreement_is_named() {
        let ok = [
            desc(1, 0, 0, 1, int_sig(4, 9), None),
            desc(1, 0, 0, 1, int_sig(4, 9), None),
        ];
        assert!(verdict(&ok, "MPI_COMM_WORLD").is_ok());
        let kinds = [desc(1, 0, 0, 1, None, None), desc(3, 0, 0, 1, None, None)];
        let e = verdict(&kinds, "MPI_COMM_WORLD").unwrap_err();
        assert_eq!(e.class, MPI_ERR_OTHER);
        assert!(
            e.msg.contains(
                "MPI_Bcast on rank 0 but MPI_Allreduce on rank 1 in MPI_COMM_WORLD, call 7"
            ),
            "{}",
            e.msg
        );
        let roots = [
            desc(1, 0, 0, 1, None, None),
            desc(1, 0, 0, 1, None, None),
            desc(1, 2, 0, 1, None, None),
        ];
        let e = verdict(&roots, "MPI_COMM_WORLD").unwrap_err();
        assert_eq!(e.class, MPI_ERR_ROOT);
        assert!(
            e.msg.contains("root 0 on rank 0 but root 2 on rank 2"),
            "{}",
            e.msg
        );
        let counts = [
            desc(1, 0, 0, 1, int_sig(4, 9), None),
            desc(1, 0, 0, 1, int_sig(5, 9), None),
        ];
        assert_eq!(verdict(&counts, "x").unwrap_err().class, MPI_ERR_TYPE);
        // Untyped (MPI_BYTE) data agrees with anything of as many bytes.
        let bytes = Some(Sig {
            count: 16,
            dt: 0,
            bytes: 16,
            hash: 1,
            untyped: true,
        });
        let untyped = [
            desc(1, 0, 0, 1, int_sig(4, 9), None),
            desc(1, 0, 0, 1, bytes, None),
        ];
        assert!(verdict(&untyped, "x").is_ok());
    }

    #[test]
    fn intercommunicator_roots_follow_the_standard() {
        // Merged numbering: ranks 0-1 the local group, 2-3 the remote one.
        let sides: Vec<Side> = (0..4)
            .map(|i| Side {
                local: i < 2,
                rank: i % 2,
                world: i as i32,
            })
            .collect();
        let r = |v: c_int| v as u32 as u64;
        let bcast = |roots: [c_int; 4], counts: [u64; 4]| -> Vec<Desc> {
            (0..4)
                .map(|i| desc(1, r(roots[i]), u64::MAX, 1, int_sig(counts[i], 9), None))
                .collect()
        };
        let good = bcast([MPI_PROC_NULL, MPI_ROOT, 1, 1], [0, 4, 4, 4]);
        assert!(inter_verdict(&good, &sides, "x").is_ok());
        let none = bcast([MPI_PROC_NULL, MPI_PROC_NULL, 1, 1], [4; 4]);
        let e = inter_verdict(&none, &sides, "x").unwrap_err();
        assert_eq!(e.class, MPI_ERR_ROOT);
        assert!(e.msg.contains("no rank passed root=MPI_ROOT"), "{}", e.msg);
        let two = bcast([MPI_ROOT, MPI_PROC_NULL, MPI_ROOT, 0], [4; 4]);
        let e = inter_verdict(&two, &sides, "x").unwrap_err();
        assert!(e.msg.contains("root=MPI_ROOT on rank 0 of the local group (world rank 0) and on rank 0 of the remote group (world rank 2)"), "{}", e.msg);
        let wrong = bcast([MPI_PROC_NULL, MPI_ROOT, 1, 0], [4; 4]);
        let e = inter_verdict(&wrong, &sides, "x").unwrap_err();
        assert!(e.msg.contains("root=0 on rank 1 of the remote group (world rank 3) but the root (MPI_ROOT) is rank 1 of the local group"), "{}", e.msg);
        let group = bcast([0, MPI_ROOT, 1, 1], [4; 4]);
        assert_eq!(
            inter_verdict(&group, &sides, "x").unwrap_err().class,
            MPI_ERR_ROOT
        );
        // The root's data against the other group's; its own group's
        // (MPI_PROC_NULL) buffers are not significant.
        let count = bcast([MPI_PROC_NULL, MPI_ROOT, 1, 1], [9, 4, 4, 5]);
        let e = inter_verdict(&count, &sides, "x").unwrap_err();
        assert_eq!(e.class, MPI_ERR_TYPE);
        assert!(e.msg.contains("data 4 x"), "{}", e.msg);
        assert!(e.msg.contains("but data 5 x"), "{}", e.msg);
    }
}
