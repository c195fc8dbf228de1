//! Partitioned communication (MPI-4.0 4.2): a persistent send whose buffer
//! is handed over partition by partition (MPI_Pready from any thread), and
//! a persistent receive that says which of its partitions have arrived
//! (MPI_Parrived). The two sides may cut the message into different
//! numbers of partitions; only the bytes must agree.
//!
//! Each ready send partition goes at once as two messages in the
//! communicator's collective context, with an internal tag made from the
//! user's: a 16-byte header (byte offset, length, the sender's partition
//! count) and the data, straight from the user buffer (a device buffer or
//! a non-contiguous type is packed first). Both go in one locked section,
//! so the pair stays together on the link; the receiver takes a header,
//! then that partition's data straight into place (a device buffer or a
//! non-contiguous type lands in a packed area and is unpacked per receive
//! partition), and so on until it has had every sender partition. The
//! internal tag keeps the user's modulo 2^28: two partitioned operations
//! of one side with one peer whose tags are equal modulo 2^28 are refused
//! while both are initialised (MPI_ERR_TAG), and a header carries the
//! full tag, so a sender and a receiver whose tags differ only above
//! 2^28 get MPI_ERR_TAG instead of each other's data.

use super::consts::*;
use super::datatype::describe;
use super::ptr::out;
use super::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Request};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::core::state::{Progress, ReqId, ReqKind, Request, SendMode, State};
use crate::datatype::Type;
use crate::err;
use crate::gpu::MemKind;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// Internal tags of partitioned traffic: below the group-creation ranges
/// of `coll::create` and `abi::comm` (which end at -0x2fff_fffe). Tags
/// equal modulo 2^28 share one: `Live` refuses two such operations
/// between one pair at once, and the header's full tag catches a sender
/// and a receiver whose tags differ only above that.
fn part_tag(tag: c_int) -> i32 {
    -0x3000_0000 - (tag & 0x0fff_ffff)
}

/// A partition's header: byte offset, length, the sender's partition
/// count, the sender's full tag.
const HDR: usize = 20;

/// A partitioned operation initialised and not freed: (context, peer's
/// world rank, send side, user tag, id).
type LiveOp = (u32, usize, bool, c_int, u64);

/// The partitioned operations initialised and not freed in this process.
static LIVE: std::sync::Mutex<Vec<LiveOp>> = std::sync::Mutex::new(Vec::new());
static LIVE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One partitioned operation in `LIVE`, for as long as its request (which
/// holds this in its factory) lives.
struct Live(u64);

impl Live {
    /// Registers an operation; refused while another one of the same side
    /// with the same peer and communicator has a different tag equal to
    /// this one modulo 2^28 (their messages could not be told apart).
    fn new(env: &Env, send: bool, tag: c_int) -> Result<Live> {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, _, _, other, _)) = live.iter().find(|&&(ctx, w, sd, t, _)| {
            ctx == env.ctx
                && w == env.peer_w
                && sd == send
                && t != tag
                && part_tag(t) == part_tag(tag)
        }) {
            return Err(err!(
                MPI_ERR_TAG,
                "tag={tag}: a partitioned {} with tag={other} and the same {}={} is initialised already; partitioned operations active at once between one pair need tags that differ below 2^28",
                if send { "send" } else { "receive" },
                if send { "dest" } else { "source" },
                env.peer
            ));
        }
        // Relaxed: a counter for distinct ids only.
        let id = LIVE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        live.push((env.ctx, env.peer_w, send, tag, id));
        Ok(Live(id))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|e| e.4 != self.0);
    }
}

/// What both sides know of their buffer.
#[derive(Clone)]
struct Layout {
    buf: *mut u8,
    parts: usize,
    count: usize,
    /// Packed bytes of one partition.
    pbytes: usize,
    /// Bytes of one partition's elements in the buffer (its extent).
    pext: isize,
    /// The type, where partitions are packed or unpacked (a non-contiguous
    /// type, or device memory).
    staged: Option<Arc<Type>>,
    kind: MemKind,
}

impl Layout {
    fn new(buf: *const c_void, parts: c_int, count: MPI_Count, dt: MPI_Datatype) -> Result<Layout> {
        if parts < 0 {
            return Err(err!(MPI_ERR_ARG, "partitions={parts} must be non-negative"));
        }
        if count < 0 {
            return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
        }
        let total = (parts as i64).checked_mul(count).ok_or_else(|| {
            err!(
                MPI_ERR_COUNT,
                "partitions={parts} x count={count} elements overflow"
            )
        })?;
        // Above 2^31 - 1 elements in all: described as one element of a
        // temporary type holding them (the bytes and layout are the same).
        let big = super::large::big(total, dt, "partitions x count")?;
        let d = describe(buf, big.count, big.dt, "buf")?;
        let t = super::datatype::lookup(dt)?;
        // Partitions are packed with the program's own type.
        let staged = (d.staged.is_some() || d.kind == MemKind::Device).then(|| t.clone());
        Ok(Layout {
            buf: if staged.is_some() {
                buf as *mut u8
            } else {
                d.ptr
            },
            parts: parts as usize,
            count: count as usize,
            pbytes: d.bytes / (parts.max(1) as usize),
            pext: t.extent() * count as isize,
            staged,
            kind: d.kind,
        })
    }

    fn total(&self) -> usize {
        self.pbytes * self.parts
    }
}

/// Envelope of one partitioned operation: context, my rank as the peer
/// matches it, the peer (world rank, and its rank in the communicator),
/// the internal tag.
#[derive(Clone, Copy)]
struct Env {
    ctx: u32,
    me: i32,
    peer_w: usize,
    peer: i32,
    tag: i32,
    /// The user's tag (`tag` is the internal one).
    user_tag: i32,
    comm: MPI_Comm,
}

fn env_of(comm: MPI_Comm, peer: c_int, tag: c_int, what: &str) -> Result<Env> {
    if tag < 0 {
        return Err(err!(MPI_ERR_TAG, "tag={tag} must be non-negative"));
    }
    with(|st| {
        let c = st.comm(comm)?;
        if peer < 0 || peer >= c.peer_size() {
            return Err(err!(
                MPI_ERR_RANK,
                "{what}={peer} is not a rank of the communicator (size {}){}",
                c.peer_size(),
                if peer == MPI_ANY_SOURCE {
                    ": partitioned receives name their source"
                } else {
                    ""
                }
            ));
        }
        Ok(Env {
            ctx: c.ctx + 1,
            me: c.rank,
            peer_w: c.peer_world(peer) as usize,
            peer,
            tag: part_tag(tag),
            user_tag: tag,
            comm,
        })
    })
}

// ------------------------------------------------------------------ send side

struct PartSend {
    env: Env,
    l: Layout,
    ready: Vec<bool>,
    nready: usize,
    /// Headers and packed partitions, alive until their sends complete.
    hdrs: Vec<[u8; HDR]>,
    packed: Vec<Vec<u8>>,
    pending: Vec<ReqId>,
}

impl PartSend {
    fn send(&mut self, st: &mut State, p: *const u8, len: usize) -> Result<()> {
        let rid = st.reqs.insert(Request::new(
            ReqKind::Send,
            self.env.comm,
            p as *mut u8,
            len,
        ));
        // SAFETY: `p` holds `len` bytes (a header or packed partition of
        // this job, or the user's partition, valid until the request
        // completes: MPI's rule for partitioned buffers), and this job ends
        // only when its sends have completed.
        unsafe {
            st.start_send_to(
                rid,
                self.env.ctx,
                self.env.me,
                self.env.peer_w,
                self.env.tag,
                p,
                len,
                SendMode::Standard,
            )?
        };
        self.pending.push(rid);
        Ok(())
    }
}

impl Progress for PartSend {
    fn step(&mut self, st: &mut State) -> Result<bool> {
        if self.nready < self.l.parts
            || !self
                .pending
                .iter()
                .all(|&r| st.reqs.get(r).is_none_or(|q| q.done))
        {
            return Ok(false);
        }
        let mut bad = None;
        for r in self.pending.drain(..) {
            if let Some(q) = st.reqs.remove(r) {
                if q.status.error != MPI_SUCCESS {
                    bad = Some(q.status.error);
                }
            }
        }
        match bad {
            Some(e) => Err(err!(e, "a partition's message failed")),
            None => Ok(true),
        }
    }

    fn pready(&mut self, st: &mut State, p: usize) -> Result<()> {
        if p >= self.l.parts {
            return Err(err!(
                MPI_ERR_ARG,
                "partition={p} is not a partition of the request (0..{})",
                self.l.parts
            ));
        }
        if self.ready[p] {
            return Err(err!(
                MPI_ERR_ARG,
                "partition={p} was marked ready already in this round"
            ));
        }
        self.ready[p] = true;
        self.nready += 1;
        let (off, len) = (p * self.l.pbytes, self.l.pbytes);
        let mut h = [0u8; HDR];
        h[..8].copy_from_slice(&(off as u64).to_le_bytes());
        h[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(self.l.parts as u32).to_le_bytes());
        h[16..].copy_from_slice(&self.env.user_tag.to_le_bytes());
        self.hdrs[p] = h;
        let data = match &self.l.staged {
            None => self.l.buf.wrapping_add(off) as *const u8,
            Some(t) => {
                let mut v = vec![0u8; len];
                let src = self.l.buf.wrapping_offset(p as isize * self.l.pext);
                // SAFETY: partition p's `count` elements of `t` are at `src`
                // (the request's buffer); `v` holds their packed bytes.
                unsafe { crate::datatype::pack_mem(t, self.l.count, src, self.l.kind, &mut v)? };
                self.packed[p] = v;
                self.packed[p].as_ptr()
            }
        };
        let hp = self.hdrs[p].as_ptr();
        self.send(st, hp, HDR)?;
        self.send(st, data, len)
    }
}

// ------------------------------------------------------------------ receive side

enum RecvState {
    Idle,
    Hdr(ReqId),
    Data(ReqId, usize, usize),
}

struct PartRecv {
    env: Env,
    l: Layout,
    /// Packed landing area (staged layouts).
    landing: Vec<u8>,
    /// Bytes still to come per receive partition.
    left: Vec<usize>,
    /// The sender's partition count (from the first header) and how many
    /// of its partitions are in.
    sender_parts: Option<usize>,
    nrecv: usize,
    got: usize,
    hdr: Box<[u8; HDR]>,
    state: RecvState,
}

impl PartRecv {
    /// Receive partitions [lo, hi] overlapped by bytes [off, off + len)
    /// got them; those now complete are unpacked.
    fn arrived(&mut self, off: usize, len: usize) -> Result<()> {
        let pb = self.l.pbytes;
        if pb == 0 {
            return Ok(());
        }
        let (lo, hi) = (off / pb, (off + len).div_ceil(pb));
        for j in lo..hi.min(self.l.parts) {
            let a = off.max(j * pb);
            let b = (off + len).min((j + 1) * pb);
            self.left[j] -= b - a;
            if self.left[j] == 0 {
                if let Some(t) = &self.l.staged {
                    let dst = self.l.buf.wrapping_offset(j as isize * self.l.pext);
                    // SAFETY: partition j's elements lie at `dst` (the
                    // request's buffer); its packed bytes are in.
                    unsafe {
                        crate::datatype::unpack_mem(
                            t,
                            self.l.count,
                            &self.landing[j * pb..(j + 1) * pb],
                            dst,
                            self.l.kind,
                        )?
                    };
                }
            }
        }
        Ok(())
    }

    fn post(&mut self, st: &mut State, p: *mut u8, len: usize) -> ReqId {
        let rid = st
            .reqs
            .insert(Request::new(ReqKind::Recv, self.env.comm, p, len));
        st.start_recv_ctx(rid, self.env.ctx, self.env.peer, self.env.tag);
        rid
    }
}

impl Progress for PartRecv {
    fn step(&mut self, st: &mut State) -> Result<bool> {
        loop {
            match self.state {
                RecvState::Idle => {
                    if self.sender_parts == Some(self.nrecv) {
                        if self.got != self.l.total() {
                            return Err(err!(
                                MPI_ERR_TRUNCATE,
                                "partitioned receive of {} bytes got {} from rank {} (the two sides' sizes differ)",
                                self.l.total(),
                                self.got,
                                self.env.peer
                            ));
                        }
                        return Ok(true);
                    }
                    let hp = self.hdr.as_mut_ptr();
                    self.state = RecvState::Hdr(self.post(st, hp, HDR));
                }
                RecvState::Hdr(rid) => {
                    if !st.reqs.get(rid).is_some_and(|q| q.done) {
                        return Ok(false);
                    }
                    let q = st.reqs.remove(rid).unwrap();
                    if q.status.error != MPI_SUCCESS || q.status.bytes as usize != HDR {
                        return Err(err!(
                            MPI_ERR_OTHER,
                            "partitioned receive from rank {}: a partition header was damaged",
                            self.env.peer
                        ));
                    }
                    let h = *self.hdr;
                    let off = u64::from_le_bytes(h[..8].try_into().unwrap()) as usize;
                    let len = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
                    let n = u32::from_le_bytes(h[12..16].try_into().unwrap()) as usize;
                    let tag = i32::from_le_bytes(h[16..].try_into().unwrap());
                    if tag != self.env.user_tag {
                        return Err(err!(
                            MPI_ERR_TAG,
                            "partitioned receive with tag={} from rank {} got a partition of its partitioned send with tag={tag} (tags equal modulo 2^28 between one pair are not told apart)",
                            self.env.user_tag,
                            self.env.peer
                        ));
                    }
                    self.sender_parts = Some(n);
                    if off + len > self.l.total() {
                        return Err(err!(
                            MPI_ERR_TRUNCATE,
                            "partitioned receive of {} bytes: rank {} sends bytes {off}..{} (the two sides' sizes differ)",
                            self.l.total(),
                            self.env.peer,
                            off + len
                        ));
                    }
                    let at = if self.l.staged.is_some() {
                        self.landing.as_mut_ptr().wrapping_add(off)
                    } else {
                        self.l.buf.wrapping_add(off)
                    };
                    self.state = RecvState::Data(self.post(st, at, len), off, len);
                }
                RecvState::Data(rid, off, len) => {
                    if !st.reqs.get(rid).is_some_and(|q| q.done) {
                        return Ok(false);
                    }
                    let q = st.reqs.remove(rid).unwrap();
                    if q.status.error != MPI_SUCCESS {
                        return Err(err!(q.status.error, "a partition's message failed"));
                    }
                    self.got += len;
                    self.nrecv += 1;
                    self.arrived(off, len)?;
                    self.state = RecvState::Idle;
                }
            }
        }
    }

    fn parrived(&mut self, st: &mut State, p: usize) -> Result<bool> {
        if p >= self.l.parts {
            return Err(err!(
                MPI_ERR_ARG,
                "partition={p} is not a partition of the request (0..{})",
                self.l.parts
            ));
        }
        let _ = st;
        Ok(self.left[p] == 0)
    }
}

// ------------------------------------------------------------------ entry points

/// Registers an inactive partitioned request whose every MPI_Start makes
/// a job with `make`.
fn register(
    comm: MPI_Comm,
    make: impl Fn() -> Box<dyn Progress> + 'static,
    request: *mut MPI_Request,
) -> Result<()> {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = with(|st| {
        let mut r = Request::new(ReqKind::Coll, comm, std::ptr::null_mut(), 0);
        r.active = false;
        r.coll_factory = Some(Box::new(std::rc::Rc::new(move || Ok(make()))));
        Ok(st.reqs.insert(r))
    })?;
    out(
        request,
        "request",
        super::handles::make(super::handles::KIND_REQUEST, rid),
    )
}

#[allow(clippy::too_many_arguments)]
fn psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> Result<()> {
    let l = Layout::new(buf, partitions, count, datatype)?;
    let env = env_of(comm, dest, tag, "dest")?;
    let live = Live::new(&env, true, tag)?;
    register(
        comm,
        move || {
            let _ = &live;
            let n = l.parts;
            Box::new(PartSend {
                env,
                l: l.clone(),
                ready: vec![false; n],
                nready: 0,
                hdrs: vec![[0u8; HDR]; n],
                packed: vec![Vec::new(); n],
                pending: Vec::new(),
            })
        },
        request,
    )
}

#[allow(clippy::too_many_arguments)]
fn precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> Result<()> {
    let l = Layout::new(buf, partitions, count, datatype)?;
    let env = env_of(comm, source, tag, "source")?;
    let live = Live::new(&env, false, tag)?;
    register(
        comm,
        move || {
            let _ = &live;
            let landing = if l.staged.is_some() {
                vec![0u8; l.total()]
            } else {
                Vec::new()
            };
            Box::new(PartRecv {
                env,
                l: l.clone(),
                landing,
                left: vec![l.pbytes; l.parts],
                sender_parts: None,
                nrecv: 0,
                got: 0,
                hdr: Box::new([0u8; HDR]),
                state: RecvState::Idle,
            })
        },
        request,
    )
}

/// Runs `f` on the active job of partitioned request `h`.
fn with_job<R>(
    h: MPI_Request,
    f: impl FnOnce(&mut dyn Progress, &mut State) -> Result<R>,
) -> Result<R> {
    with(|st| {
        let rid = super::request::lookup(st, h)?;
        let r = st.reqs.get(rid).unwrap();
        if !r.active || r.coll_factory.is_none() {
            return Err(err!(
                MPI_ERR_REQUEST,
                "request=0x{:08x} is not an active partitioned request (call MPI_Start first)",
                h as u32
            ));
        }
        let Some(i) = st.scheds.iter().position(|a| a.rid == rid) else {
            // Its job has ended: every partition was sent or received.
            return Err(err!(
                MPI_ERR_REQUEST,
                "request=0x{:08x} has completed this round",
                h as u32
            ));
        };
        let mut a = st.scheds.swap_remove(i);
        let res = f(&mut *a.sched, st);
        st.scheds.push(a);
        st.progress();
        res
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let _ = info;
    psend_init(buf, partitions, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    // MPICH's prototype names the source `dest`.
    let _ = info;
    precv_init(buf, partitions, count, datatype, dest, tag, comm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready(partition: c_int, request: MPI_Request) -> c_int {
    let p = usize::try_from(partition)
        .map_err(|_| err!(MPI_ERR_ARG, "partition={partition} must be non-negative"))?;
    with_job(request, |j, st| j.pready(st, p))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_range(
    partition_low: c_int,
    partition_high: c_int,
    request: MPI_Request,
) -> c_int {
    if partition_low < 0 || partition_high < partition_low {
        return Err(err!(
            MPI_ERR_ARG,
            "partitions {partition_low}..={partition_high} are not a range"
        ));
    }
    with_job(request, |j, st| {
        (partition_low..=partition_high).try_for_each(|p| j.pready(st, p as usize))
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_list(
    length: c_int,
    array_of_partitions: *mut c_int,
    request: MPI_Request,
) -> c_int {
    if length < 0 {
        return Err(err!(MPI_ERR_ARG, "length={length} must be non-negative"));
    }
    let list = super::ptr::in_slice(
        array_of_partitions as *const c_int,
        length as usize,
        "array_of_partitions",
    )?;
    with_job(request, |j, st| {
        list.iter().try_for_each(|&p| {
            let p = usize::try_from(p)
                .map_err(|_| err!(MPI_ERR_ARG, "partition={p} must be non-negative"))?;
            j.pready(st, p)
        })
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Parrived(
    request: MPI_Request,
    partition: c_int,
    flag: *mut c_int,
) -> c_int {
    if flag.is_null() {
        return Err(err!(MPI_ERR_ARG, "flag=NULL"));
    }
    let p = usize::try_from(partition)
        .map_err(|_| err!(MPI_ERR_ARG, "partition={partition} must be non-negative"))?;
    // A receive whose job has ended has every partition, as has an
    // inactive one (MPI-4.0 4.2.3).
    let done = with(|st| {
        let rid = super::request::lookup(st, request)?;
        let r = st.reqs.get(rid).unwrap();
        Ok(r.coll_factory.is_some() && (r.done || !r.active))
    })?;
    let got = if done {
        true
    } else {
        with_job(request, |j, st| j.parrived(st, p))?
    };
    out(flag, "flag", got as c_int)
}
