//! The part of a window that spans nodes: every rank's memory and control
//! words registered with the process's UCX RMA worker
//! (`transport::ucx::rma`), and each rank's endpoint and remote keys.
//!
//! In such a window the words that order and exclude (passive-target
//! locks, the accumulate mutex, post and complete counters) go through
//! UCX's atomics for every target, the rank's own and its node's included:
//! then one agent (the fabric's atomics, or the target's UCX worker where
//! they are emulated) applies every atomic on a word, whatever the fabric
//! guarantees about atomics of the CPU beside its own. Accumulates are
//! active messages that the target's process applies under a mutex of its
//! own (`serve`; with `acc_single_intrinsic`, single elements go as UCX
//! atomics instead). Puts and gets to ranks of the node still go by
//! load/store and single copy; to other nodes by `ucp_put_nbx`/`get_nbx`.

use super::AccOp;
use crate::base::consts::*;
use crate::base::error::Result;
use crate::err;
use crate::transport::ucx::rma::{Amo, Ep, Reg, Rkey, Rma};
use std::borrow::Cow;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Index of the passive-target lock word in a rank's control words.
pub const LOCK: usize = 0;
/// Index of the accumulate mutex.
pub const ACC: usize = 1;

/// One rank of the window as reached through UCX.
pub struct Peer {
    pub ep: Ep,
    /// The key of its window memory (None when it has none).
    pub data: Option<Rkey>,
    /// Its window memory's address in its own process.
    pub base: u64,
    /// Its control words' address and key.
    pub ctl: u64,
    pub ctl_key: Rkey,
    /// Its window memory is CUDA device memory (not registered: reached
    /// by active messages it applies with the driver's copies).
    pub device: bool,
}

/// What a spanning window holds of UCX.
pub struct Remote {
    /// The window's key in every process (its communicator's context).
    key: u64,
    rank: usize,
    pub rma: &'static Rma,
    /// This rank's control words: lock, accumulate mutex, then per window
    /// rank the posts it made to us and the completes it made on us.
    pub ctl: Box<[AtomicU64]>,
    regs: Vec<Reg>,
    pub peers: Vec<Peer>,
    /// Puts issued to each rank since its last flush.
    dirty: Vec<std::cell::Cell<bool>>,
    /// Puts and gets go as active messages the target applies, not as
    /// UCX's RMA (`rma_by_messages`); the requests to each rank whose
    /// answers the next flush waits for: (token, where the answer's bytes
    /// go in order: (address, length) of each get it carries; none for
    /// puts).
    am: bool,
    inflight: Vec<std::cell::RefCell<Vec<Sent>>>,
    /// Small operations to each rank not sent yet, all of one kind.
    batch: Vec<std::cell::RefCell<Batch>>,
    /// Accumulates sent to each rank whose answers no flush has waited
    /// for yet: UCX's atomics on its memory wait for them first.
    acc_sent: Vec<std::cell::Cell<bool>>,
    n: usize,
    /// A window of `MPI_Win_create_dynamic`: its memory is what each rank
    /// attaches, reached by active messages that the target's process
    /// checks against its attached regions (`served`).
    dynamic: bool,
    served: Arc<Served>,
}

/// Exchanges one byte string per rank over the window's communicator.
pub type Gather<'a> = dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>> + 'a;

/// What each rank sends the others when a spanning window is made.
struct Record {
    base: u64,
    ctl: u64,
    address: Vec<u8>,
    data_key: Vec<u8>,
    ctl_key: Vec<u8>,
    device: bool,
}

impl Record {
    fn bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&self.base.to_le_bytes());
        b.extend_from_slice(&self.ctl.to_le_bytes());
        for v in [&self.address, &self.data_key, &self.ctl_key] {
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v);
        }
        b.push(self.device as u8);
        b
    }

    fn from(b: &[u8]) -> Record {
        let u64at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let mut at = 16;
        let mut next = || {
            let n = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
            let v = b[at + 4..at + 4 + n].to_vec();
            at += 4 + n;
            v
        };
        let (address, data_key, ctl_key) = (next(), next(), next());
        Record {
            base: u64at(0),
            ctl: u64at(8),
            address,
            data_key,
            ctl_key,
            device: b.get(at) == Some(&1),
        }
    }
}

fn ucx_err(what: String) -> crate::base::error::Error {
    err!(MPI_ERR_OTHER, "one-sided operation across nodes: {what}")
}

impl Remote {
    /// This rank's part of a spanning window of `n` ranks whose memory is
    /// `size` bytes at `base`; `gather` exchanges byte strings over the
    /// window's communicator (every rank's, in rank order). Collective.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        key: u64,
        n: usize,
        rank: usize,
        world: &[i32],
        base: usize,
        size: usize,
        dynamic: bool,
        device: bool,
        gather: &mut Gather,
    ) -> Result<Remote> {
        // Every rank learns whether every other could start UCX.
        let rma = Rma::worker();
        let why = rma.as_ref().err().cloned().unwrap_or_default();
        let oks = gather(why.as_bytes())?;
        if let Some(r) = oks.iter().position(|w| !w.is_empty()) {
            return Err(err!(
                MPI_ERR_OTHER,
                "the window spans nodes but rank {r} could not start UCX for one-sided operations: {}",
                String::from_utf8_lossy(&oks[r])
            ));
        }
        let rma = rma.unwrap();
        let ctl: Box<[AtomicU64]> = (0..2 + 2 * n).map(|_| AtomicU64::new(0)).collect();
        let mut regs = Vec::new();
        let mut fail = String::new();
        let ctl_reg = rma.map(ctl.as_ptr() as usize, ctl.len() * 8);
        // Device memory is not registered (UCX here has no CUDA memory):
        // its puts and gets are active messages the target applies with
        // the driver's copies (`moved`).
        let data_reg = if size > 0 && !device {
            Some(rma.map(base, size))
        } else {
            None
        };
        let mut mine = Record {
            base: base as u64,
            ctl: ctl.as_ptr() as u64,
            address: rma.address().to_vec(),
            data_key: Vec::new(),
            ctl_key: Vec::new(),
            device,
        };
        match ctl_reg {
            Ok(r) => {
                mine.ctl_key = r.packed.clone();
                regs.push(r);
            }
            Err(e) => fail = e,
        }
        match data_reg {
            Some(Ok(r)) => {
                mine.data_key = r.packed.clone();
                regs.push(r);
            }
            Some(Err(e)) => fail = e,
            None => {}
        }
        let failed = gather(fail.as_bytes())?;
        if let Some(r) = failed.iter().position(|w| !w.is_empty()) {
            for g in regs {
                rma.unmap(g);
            }
            return Err(err!(
                MPI_ERR_OTHER,
                "rank {r} could not register its window memory with UCX: {}",
                String::from_utf8_lossy(&failed[r])
            ));
        }
        // This rank serves requests from here on: another rank may issue
        // its first operation as soon as this exchange ends for it, before
        // this rank has left `new`.
        crate::transport::ucx::rma::set_server(serve);
        crate::transport::ucx::rma::set_memory_server(serve_memory);
        let served = Arc::new(Served {
            base,
            size,
            dynamic,
            device,
            lock: parking_lot::Mutex::new(Vec::new()),
        });
        lock_served().insert(key, served.clone());
        let all = match gather(&mine.bytes()) {
            Ok(a) => a,
            Err(e) => {
                lock_served().remove(&key);
                return Err(e);
            }
        };
        let mut peers = Vec::with_capacity(n);
        for (r, b) in all.iter().enumerate() {
            let rec = Record::from(b);
            let made = (|| -> std::result::Result<Peer, String> {
                let ep = rma.ep(world[r] as usize, &rec.address)?;
                let data = if rec.data_key.is_empty() {
                    None
                } else {
                    Some(rma.unpack(ep, &rec.data_key)?)
                };
                Ok(Peer {
                    ep,
                    data,
                    base: rec.base,
                    ctl: rec.ctl,
                    ctl_key: rma.unpack(ep, &rec.ctl_key)?,
                    device: rec.device,
                })
            })();
            match made {
                Ok(p) => peers.push(p),
                Err(e) => {
                    for p in peers {
                        rma.drop_key(p.ctl_key);
                        if let Some(k) = p.data {
                            rma.drop_key(k);
                        }
                    }
                    for g in regs {
                        rma.unmap(g);
                    }
                    lock_served().remove(&key);
                    return Err(ucx_err(format!(
                        "rank {rank} could not reach rank {r} of the window: {e}"
                    )));
                }
            }
        }
        Ok(Remote {
            key,
            rank,
            rma,
            ctl,
            regs,
            peers,
            dirty: (0..n).map(|_| std::cell::Cell::new(false)).collect(),
            am: rma_by_messages(),
            inflight: (0..n)
                .map(|_| std::cell::RefCell::new(Vec::new()))
                .collect(),
            batch: (0..n).map(|_| std::cell::RefCell::default()).collect(),
            acc_sent: (0..n).map(|_| std::cell::Cell::new(false)).collect(),
            n,
            dynamic,
            served,
        })
    }

    /// Index of the post counter of window rank `o` (posts it made to us).
    pub fn post_word(&self, o: usize) -> usize {
        2 + o
    }

    /// Index of the complete counter of window rank `o`.
    pub fn complete_word(&self, o: usize) -> usize {
        2 + self.n + o
    }

    /// One of this rank's control words, as UCX at the origins updates it.
    pub fn word(&self, i: usize) -> &AtomicU64 {
        &self.ctl[i]
    }

    /// Puts the packed `data` into the target segments `segs` (addresses
    /// in rank `r`'s process).
    pub fn put(&self, r: usize, segs: &[[usize; 2]], data: &[u8]) -> Result<()> {
        if self.dynamic || self.peers[r].device {
            return self.moved(r, KIND_PUT, segs, data, None);
        }
        if self.am {
            return self.sent_put(r, segs, data);
        }
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        let v = pairs(data.as_ptr() as usize, segs, data.len());
        self.dirty[r].set(true);
        // SAFETY: `data` is readable for the segments' total; `place`
        // checked the remote ranges against rank r's window memory.
        unsafe { self.rma.put(p.ep, key, &v) }.map_err(ucx_err)
    }

    /// Gets the target segments `segs` of rank `r` packed into `out`.
    pub fn get(&self, r: usize, segs: &[[usize; 2]], out: &mut [u8]) -> Result<()> {
        if self.dynamic || self.peers[r].device || self.am {
            return self.moved(r, KIND_GET, segs, &[], Some(out));
        }
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        let v = pairs(out.as_mut_ptr() as usize, segs, out.len());
        // SAFETY: `out` is writable for the segments' total; the remote
        // ranges were checked as for `put`.
        unsafe { self.rma.get(p.ep, key, &v) }.map_err(ucx_err)
    }

    /// Fetching atomics on rank `r`'s window memory: each (operand, remote
    /// address) becomes (old value, address).
    pub fn atomics(&self, r: usize, op: Amo, size: usize, ops: &mut [(u64, u64)]) -> Result<()> {
        self.settle_acc(r)?;
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        // SAFETY: the addresses were checked by `place` and are aligned to `size`.
        unsafe { self.rma.atomics(p.ep, key, op, size, ops) }.map_err(ucx_err)
    }

    /// Compare-and-swap on rank `r`'s window memory at `raddr`.
    pub fn cswap(&self, r: usize, size: usize, cmp: u64, new: u64, raddr: u64) -> Result<u64> {
        self.settle_acc(r)?;
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        // SAFETY: as for `atomics`.
        unsafe { self.rma.cswap(p.ep, key, size, cmp, new, raddr) }.map_err(ucx_err)
    }

    /// Compare-and-swaps on rank `r`'s window memory, all issued at once:
    /// each (compare, new, remote address) gets the old value for `new`.
    pub fn cswaps(&self, r: usize, size: usize, ops: &mut [(u64, u64, u64)]) -> Result<()> {
        self.settle_acc(r)?;
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        // SAFETY: as for `atomics`.
        unsafe { self.rma.cswaps(p.ep, key, size, ops) }.map_err(ucx_err)
    }

    /// A fetching atomic on control word `i` of rank `r`: the old value.
    pub fn ctl_op(&self, r: usize, i: usize, op: Amo, v: u64) -> Result<u64> {
        let p = &self.peers[r];
        let mut one = [(v, p.ctl + 8 * i as u64)];
        // SAFETY: the control words are registered, 8-byte aligned, and
        // `i` lies among them (2 + 2n words on every rank).
        unsafe { self.rma.atomics(p.ep, &p.ctl_key, op, 8, &mut one) }.map_err(ucx_err)?;
        Ok(one[0].0)
    }

    /// A non-fetching atomic on control word `i` of rank `r` (it lands in
    /// its time: a flush of `r` waits for it, and it follows everything
    /// flushed before it).
    pub fn ctl_post(&self, r: usize, i: usize, op: Amo, v: u64) -> Result<()> {
        let p = &self.peers[r];
        self.dirty[r].set(true);
        // SAFETY: as for `ctl_op`.
        unsafe { self.rma.post(p.ep, &p.ctl_key, op, v, p.ctl + 8 * i as u64) }.map_err(ucx_err)
    }

    /// Compare-and-swap on control word `i` of rank `r`.
    pub fn ctl_cswap(&self, r: usize, i: usize, cmp: u64, new: u64) -> Result<u64> {
        let p = &self.peers[r];
        // SAFETY: as for `ctl_op`.
        unsafe {
            self.rma
                .cswap(p.ep, &p.ctl_key, 8, cmp, new, p.ctl + 8 * i as u64)
        }
        .map_err(ucx_err)
    }

    /// The operations to rank `r` (all ranks: None) are complete at their
    /// targets. Every target's answers are waited for even when one
    /// reports an error (the first is returned): none lands in a result
    /// buffer after the call.
    pub fn flush(&self, r: Option<usize>) -> Result<()> {
        let mut first = Ok(());
        for t in 0..self.n {
            if r.is_some_and(|r| r != t) {
                continue;
            }
            let sent = self.drain(t);
            let waited = self.wait(t);
            let done = sent.and(waited).and_then(|_| {
                if self.dirty[t].get() {
                    self.rma.flush(self.peers[t].ep).map_err(ucx_err)?;
                    self.dirty[t].set(false);
                }
                Ok(())
            });
            if let (Err(e), true) = (done, first.is_ok()) {
                first = Err(e);
            }
        }
        first
    }

    /// Waits for the answers to every request sent to `t` so far; the
    /// first error is reported.
    fn wait(&self, t: usize) -> Result<()> {
        self.acc_sent[t].set(false);
        if self.inflight[t].borrow().is_empty() {
            return Ok(());
        }
        let tokens = std::mem::take(&mut *self.inflight[t].borrow_mut());
        let mut first = Ok(());
        for (k, dsts) in tokens {
            let got = self
                .rma
                .reply(self.peers[t].ep, k)
                .map_err(ucx_err)
                .and_then(|v| self.answer(t, v))
                .and_then(|v| {
                    // A put's or accumulate's answer has no bytes; a get's
                    // or fetching accumulate's landed in its buffers as it
                    // arrived (`send_into`), its status byte alone left,
                    // which `answer` took.
                    if v.is_empty() {
                        return Ok(());
                    }
                    let want: usize = dsts.iter().map(|d| d.1).sum();
                    Err(err!(
                        MPI_ERR_INTERN,
                        "rank {t} returned {} bytes for fetches of {want}",
                        v.len()
                    ))
                });
            if let (Err(e), true) = (got, first.is_ok()) {
                first = Err(e);
            }
        }
        first
    }

    /// The accumulates issued to `r` so far are applied there: before
    /// UCX's atomics on its memory, which the target's process does not
    /// see (MPI orders an origin's accumulates to one location).
    fn settle_acc(&self, r: usize) -> Result<()> {
        self.drain(r)?;
        if self.acc_sent[r].get() {
            self.wait(r)?;
        }
        Ok(())
    }

    /// Rank `r`'s address for an address `at` of its memory as this rank
    /// maps it at `mapped` (the node's segment), or as it is (other nodes).
    pub fn their(&self, r: usize, mapped: usize, at: usize) -> u64 {
        self.peers[r]
            .base
            .wrapping_add(at.wrapping_sub(mapped) as u64)
    }

    /// Takes rank `r`'s accumulate mutex.
    pub fn lock_acc(&self, r: usize) -> Result<()> {
        self.settle_acc(r)?;
        let mut spins = 0u32;
        while self.ctl_cswap(r, ACC, 0, 1)? != 0 {
            spins += 1;
            if spins > 8 {
                crate::sys::yield_now();
            }
        }
        // SeqCst: orders this rank's loads and stores of a node's memory
        // after taking the mutex (the partner is the fence in `unlock_acc`).
        std::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }

    pub fn unlock_acc(&self, r: usize) -> Result<()> {
        // SeqCst: this rank's stores are visible before the release (its
        // partner is the fence in `lock_acc` of the next holder).
        std::sync::atomic::fence(Ordering::SeqCst);
        self.flush(Some(r))?;
        // Not waited for: the next holder sees it a moment later; this
        // rank's own next compare-and-swap at worst goes round once more.
        self.ctl_post(r, ACC, Amo::And, 0)
    }
}

/// This process's window memory as the accumulates of spanning windows
/// reach it: every accumulate, fetch-and-op and compare-and-swap on it,
/// from any origin (this rank's own included), is applied here by this
/// process under `lock`, so they are element-wise atomic whatever the
/// fabric's atomics are. A dynamic window's puts and gets come here too,
/// checked against the regions attached (which `lock` holds: a detach
/// waits for the operation being applied).
struct Served {
    base: usize,
    size: usize,
    dynamic: bool,
    /// The memory is CUDA device memory: copied with the driver.
    device: bool,
    /// A dynamic window's attached regions: (address, length, device memory).
    lock: parking_lot::Mutex<Vec<(usize, usize, bool)>>,
}

impl Served {
    /// Copies `n` bytes between the window memory and a host buffer, with
    /// the driver where the window memory is device memory (`device`: an
    /// attached region of device memory).
    ///
    /// # Safety
    /// Both ranges are valid for `n` bytes.
    unsafe fn copy(
        &self,
        dst: *mut u8,
        src: *const u8,
        n: usize,
        device: bool,
    ) -> std::result::Result<(), String> {
        if self.device || device {
            // SAFETY: forwarded contract.
            unsafe { crate::gpu::copy(dst, src, n) }.map_err(|e| e.msg)
        } else {
            // SAFETY: forwarded contract.
            unsafe { crate::sys::copy(dst, src, n) };
            Ok(())
        }
    }
}

static SERVED: std::sync::LazyLock<Mutex<HashMap<u64, Arc<Served>>>> =
    std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));

fn lock_served() -> std::sync::MutexGuard<'static, HashMap<u64, Arc<Served>>> {
    SERVED.lock().unwrap_or_else(|e| e.into_inner())
}

const KIND_ACC: u8 = 0;
const KIND_CAS: u8 = 1;
/// A dynamic window's put (the data is stored) and get (fetched).
const KIND_PUT: u8 = 2;
const KIND_GET: u8 = 3;

/// A reply's status byte, its last (so that neither side moves the bytes
/// before it): done, failed (the text precedes it), or a range not in the
/// target's window memory (MPI_ERR_RMA_RANGE; the text precedes it).
const DONE: u8 = 0;
const FAILED: u8 = 1;
const RANGE: u8 = 2;

/// A request's header: the window, what to do, the target segments
/// (offsets from the window's base and lengths).
/// Puts and gets move bytes as they are.
const REPLACE_BYTES: AccOp = AccOp {
    op: MPI_REPLACE,
    elem: crate::op::Elem::Byte,
    esize: 1,
    basic: MPI_BYTE,
};

/// A compare-and-swap's request names its element's size.
pub fn cas_op(esize: usize) -> AccOp {
    AccOp {
        op: MPI_REPLACE,
        elem: crate::op::Elem::Byte,
        esize,
        basic: MPI_BYTE,
    }
}

/// Small operations gathered into one request per target (`Remote::later`):
/// operations of at most `BATCH_PIECE` bytes, up to `BATCH_BYTES` bytes
/// (sent, and fetched) and `BATCH_SEGS` segments a request (its header
/// grows by 16 bytes a segment).
const BATCH_PIECE: usize = 8192;
const BATCH_BYTES: usize = 65536;
const BATCH_SEGS: usize = 64;

/// The operations gathered for one target: all of one kind (`what`: the
/// request's kind, whether it fetches, and its op), the target segments in
/// order, the data that goes with them, and where the answer's bytes go
/// (`bytes` in all).
#[derive(Default)]
struct Batch {
    what: Option<(u8, bool, c_int, c_int, usize)>,
    segs: Vec<(u64, u64)>,
    data: Vec<u8>,
    dsts: Vec<(usize, usize)>,
    bytes: usize,
}

/// A request whose answer a flush waits for: its token, and where the
/// answer's bytes go, in order ((address, length) of each get it carries;
/// none for puts).
type Sent = (u64, Vec<(usize, usize)>);

/// Segment lists longer than this go at the start of a request's data
/// instead of in its header (flag byte 10): UCX's active-message header
/// must fit in one fragment of the transport (about 8 KiB over tcp; UCX
/// aborts the process beyond it).
const HEADER_SEGS: usize = 64;

/// A request's header and data: the window, what to do, the target
/// segments (offsets from the window's base, or addresses of a dynamic
/// window's target, and lengths), and the operation's bytes.
fn request<'a>(
    key: u64,
    kind: u8,
    fetch: bool,
    a: AccOp,
    segs: &[(u64, u64)],
    data: Cow<'a, [u8]>,
) -> (Vec<u8>, Cow<'a, [u8]>) {
    let inline = segs.len() <= HEADER_SEGS;
    let mut list = Vec::with_capacity(16 * segs.len());
    for &(o, l) in segs {
        list.extend_from_slice(&o.to_le_bytes());
        list.extend_from_slice(&l.to_le_bytes());
    }
    let mut h = Vec::with_capacity(28 + if inline { list.len() } else { 0 });
    h.extend_from_slice(&key.to_le_bytes());
    h.extend_from_slice(&[kind, fetch as u8, !inline as u8, 0]);
    h.extend_from_slice(&a.op.to_le_bytes());
    h.extend_from_slice(&a.basic.to_le_bytes());
    h.extend_from_slice(&(a.esize as u32).to_le_bytes());
    h.extend_from_slice(&(segs.len() as u32).to_le_bytes());
    if inline {
        h.extend_from_slice(&list);
        return (h, data);
    }
    list.extend_from_slice(&data);
    (h, Cow::Owned(list))
}

/// Applies a request to this process's window memory: the reply is the
/// fetched bytes (or an error's text) and a status byte.
fn serve(h: &[u8], data: &[u8]) -> Vec<u8> {
    match serve_inner(h, data) {
        Ok(mut v) => {
            v.push(DONE);
            v
        }
        Err((status, e)) => {
            let mut v = e.into_bytes();
            v.push(status);
            v
        }
    }
}

/// A get of one range of a window's host memory (allocated or created,
/// not dynamic): answered with that memory as it lies, not a copy of it
/// (`ServeMemory`; the window lives until every origin's epoch on it is
/// over, by MPI's rules). None for anything else, or a range outside the
/// window (`serve` then reports it).
fn serve_memory(h: &[u8], _data: &[u8]) -> Option<(usize, usize, u8)> {
    let u64at = |i: usize| {
        h.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let u32at = |i: usize| {
        h.get(i..i + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let flags = h.get(8..11)?;
    // A get (kind, no inline data flag) of one segment listed in the header.
    if flags[0] != KIND_GET || flags[2] != 0 || u32at(24)? != 1 {
        return None;
    }
    let (o, l) = (u64at(28)? as usize, u64at(36)? as usize);
    let w = lock_served().get(&u64at(0)?).cloned()?;
    if w.dynamic || w.device || l == 0 || o.checked_add(l).is_none_or(|e| e > w.size) {
        return None;
    }
    Some((w.base + o, l, DONE))
}

fn serve_inner(h: &[u8], data: &[u8]) -> std::result::Result<Vec<u8>, (u8, String)> {
    serve_checked(h, data).map_err(|e| (FAILED, e))?
}

/// `serve`'s work: Err is a malformed request, Ok(Err) an operation the
/// window refuses (status and text).
#[allow(clippy::type_complexity)]
fn serve_checked(
    h: &[u8],
    data: &[u8],
) -> std::result::Result<std::result::Result<Vec<u8>, (u8, String)>, String> {
    let u32at = |i: usize| -> std::result::Result<u32, String> {
        h.get(i..i + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .ok_or_else(|| "a short request".to_string())
    };
    let u64at = |i: usize| -> std::result::Result<u64, String> {
        h.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .ok_or_else(|| "a short request".to_string())
    };
    let key = u64at(0)?;
    let flags = h.get(8..11).ok_or_else(|| "a short request".to_string())?;
    let (kind, fetch, in_data) = (flags[0], flags[1] != 0, flags[2] != 0);
    let (op, basic) = (u32at(12)? as c_int, u32at(16)? as c_int);
    let esize = u32at(20)? as usize;
    let nseg = u32at(24)? as usize;
    // The segment list: in the header, or at the start of the data.
    let (list, data): (&[u8], &[u8]) = if in_data {
        let n = nseg
            .checked_mul(16)
            .filter(|&n| n <= data.len())
            .ok_or_else(|| "a short request".to_string())?;
        data.split_at(n)
    } else {
        (h.get(28..).unwrap_or(&[]), data)
    };
    let segat = |i: usize| -> std::result::Result<u64, String> {
        list.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .ok_or_else(|| "a short request".to_string())
    };
    let w = lock_served()
        .get(&key)
        .cloned()
        .ok_or_else(|| format!("no window {key} here (freed?)"))?;
    let attached = w.lock.lock();
    let mut segs = Vec::with_capacity(nseg);
    let mut n = 0usize;
    for i in 0..nseg {
        let (o, l) = (segat(16 * i)? as usize, segat(16 * i + 8)? as usize);
        let end = o.checked_add(l);
        if w.dynamic {
            // `o` is an address of this process: within one attached region.
            let Some(&(_, _, dev)) =
                end.and_then(|e| attached.iter().find(|&&(a, m, _)| o >= a && e <= a + m))
            else {
                return Ok(Err((
                    RANGE,
                    format!(
                        "bytes [{o:#x}, {:#x}) are not in memory attached to the window there",
                        o.saturating_add(l)
                    ),
                )));
            };
            segs.push((o, l, dev));
            n += l;
            continue;
        } else if end.is_none_or(|e| e > w.size) {
            return Ok(Err((
                RANGE,
                format!(
                    "bytes [{o}, {}) are outside the window's {} bytes",
                    o.saturating_add(l),
                    w.size
                ),
            )));
        }
        segs.push((w.base + o, l, false));
        n += l;
    }
    if kind == KIND_PUT {
        if data.len() != n {
            return Err(format!(
                "{} bytes of data for {n} bytes of window",
                data.len()
            ));
        }
        let mut at = 0;
        for &(p, l, dev) in &segs {
            // SAFETY: the segment lies in window memory (checked above),
            // attached memory staying attached while `lock` is held.
            unsafe { w.copy(p as *mut u8, data.as_ptr().add(at), l, dev)? };
            at += l;
        }
        return Ok(Ok(Vec::new()));
    }
    // Room for the status byte `serve` adds; not zeroed (every byte is
    // copied in below).
    let mut cur = crate::transport::ucx::rma::reply_buffer(n + 1);
    if kind == KIND_GET {
        let mut at = 0;
        for &(p, l, dev) in &segs {
            // SAFETY: the segment lies in this process's window memory
            // (checked above), alive while the window is registered
            // (attached memory: while `lock` is held); `cur` has room for n
            // bytes.
            unsafe { w.copy(cur.as_mut_ptr().add(at), p as *const u8, l, dev)? };
            at += l;
        }
        // SAFETY: the segments' n bytes were written above.
        unsafe { cur.set_len(n) };
        return Ok(Ok(cur));
    }
    // Accumulates and compare-and-swaps: the data has, per segment, its
    // operand (accumulates other than MPI_NO_OP), or its new value then
    // its compare value (compare-and-swaps). The segments are applied one
    // after another, as the operations they belong to were issued (a
    // request may carry several, on the same elements), each reading what
    // the ones before it left.
    let per = match kind {
        KIND_CAS => 2,
        _ if op == MPI_NO_OP => 0,
        _ => 1,
    };
    let elem = if per == 1 {
        Some(crate::op::check(op, basic).map_err(|e| e.msg)?)
    } else {
        None
    };
    if data.len() != per * n || (per == 1 && esize == 0) {
        return Err(format!(
            "{} bytes of data for {n} bytes of window",
            data.len()
        ));
    }
    // A fetching accumulate's results are computed beside the fetched
    // elements (kept for the reply); the others' in place.
    let mut scratch = Vec::new();
    let mut at = 0;
    for &(p, l, dev) in &segs {
        // SAFETY: as for a get above.
        unsafe { w.copy(cur.as_mut_ptr().add(at), p as *const u8, l, dev)? };
        // SAFETY: those l bytes were just written; nothing else refers to
        // them while `old` lives.
        let old = unsafe { std::slice::from_raw_parts_mut(cur.as_mut_ptr().add(at), l) };
        let d = &data[per * at..per * (at + l)];
        let result: Option<&[u8]> = match elem {
            _ if kind == KIND_CAS => {
                let (nv, cmp) = d.split_at(l);
                (*old == *cmp).then_some(nv)
            }
            Some(e) if fetch => {
                scratch.clear();
                scratch.extend_from_slice(old);
                crate::op::reduce_builtin(op, e, l / esize, d, &mut scratch);
                Some(&scratch)
            }
            Some(e) => {
                crate::op::reduce_builtin(op, e, l / esize, d, old);
                Some(old)
            }
            None => None,
        };
        if let Some(v) = result {
            // SAFETY: as above; `v` holds the segment's l bytes.
            unsafe { w.copy(p as *mut u8, v.as_ptr(), l, dev)? };
        }
        at += l;
    }
    // SAFETY: the segments' n bytes were written above.
    unsafe { cur.set_len(n) };
    Ok(Ok(if fetch { cur } else { Vec::new() }))
}

impl Remote {
    /// Sends a request to rank `r` (or serves it here, for this rank) and
    /// returns the fetched bytes.
    fn call(&self, r: usize, h: &[u8], data: &[u8]) -> Result<Vec<u8>> {
        // Puts gathered for `r` go first: the target applies them in order.
        self.drain(r)?;
        let reply = if r == self.rank {
            serve(h, data)
        } else {
            self.rma
                .request(self.peers[r].ep, h, data)
                .map_err(ucx_err)?
        };
        self.answer(r, reply)
    }

    /// What rank `r`'s reply `reply` to a request says: its bytes, or the
    /// error the target found.
    fn answer(&self, r: usize, mut reply: Vec<u8>) -> Result<Vec<u8>> {
        let status = reply.pop();
        let text = || String::from_utf8_lossy(&reply).into_owned();
        match status {
            Some(DONE) => Ok(reply),
            Some(RANGE) => Err(err!(
                MPI_ERR_RMA_RANGE,
                "target rank {r}: {} (window {})",
                text(),
                self.key
            )),
            _ => Err(err!(
                MPI_ERR_OTHER,
                "rank {r} could not apply the operation: {}",
                text()
            )),
        }
    }

    /// A put (`KIND_PUT`, `data` stored) or get (`KIND_GET`, into `out`)
    /// on the segments `segs` (addresses of rank `r`'s process) of a
    /// dynamic window or of device memory, applied by the target's process
    /// after it checks them against its attached regions or its window's
    /// size: one round trip, done at the target when it returns.
    fn moved(
        &self,
        r: usize,
        kind: u8,
        segs: &[[usize; 2]],
        data: &[u8],
        out: Option<&mut [u8]>,
    ) -> Result<()> {
        let rel = self.rel(r, segs);
        let (h, d) = request(
            self.key,
            kind,
            out.is_some(),
            REPLACE_BYTES,
            &rel,
            Cow::Borrowed(data),
        );
        let got = self.call(r, &h, &d)?;
        if let Some(o) = out {
            if got.len() != o.len() {
                return Err(err!(
                    MPI_ERR_INTERN,
                    "rank {r} returned {} bytes for {}",
                    got.len(),
                    o.len()
                ));
            }
            o.copy_from_slice(&got);
        }
        Ok(())
    }

    /// A put by active message that returns at once (`Remote::am`): the
    /// data goes with the request, and the next flush to `r` waits for the
    /// target's answer (done at the target, or the error it found).
    ///
    /// Small puts (up to `BATCH_PIECE` bytes) are gathered per target into
    /// one request of several segments (`Batch`), sent when it is full, at
    /// the flush, or before any other request to that target (so the
    /// target applies this origin's operations in their order): a run of
    /// small puts costs one message, not one each.
    fn sent_put(&self, r: usize, segs: &[[usize; 2]], data: &[u8]) -> Result<()> {
        if r == self.rank {
            return self.moved(r, KIND_PUT, segs, data, None);
        }
        let rel = self.rel(r, segs);
        // SAFETY: nothing is fetched.
        unsafe { self.later(r, KIND_PUT, false, REPLACE_BYTES, &rel, data, None) }
    }

    /// Sends the operations gathered for `r`, if any.
    fn drain(&self, r: usize) -> Result<()> {
        if self.batch[r].borrow().segs.is_empty() {
            return Ok(());
        }
        let b = std::mem::take(&mut *self.batch[r].borrow_mut());
        let (kind, fetch, op, basic, esize) = b.what.unwrap_or_default();
        // The target takes the op, the basic type and the element's size.
        let a = AccOp {
            op,
            elem: crate::op::Elem::Byte,
            esize,
            basic,
        };
        self.send(r, kind, fetch, a, &b.segs, b.data, b.dsts)
    }

    /// An operation of kind `kind` (`fetch`: it fetches, its `dst.1`
    /// answered bytes going to `dst.0`) with op `a` on the target segments
    /// `rel` (as the target takes them) and its packed `data`, answered at
    /// the next flush to `r`: gathered with the operations of the same
    /// kind and op before it when small (so a run of them costs one
    /// message, not one each), sent at once otherwise; the operations
    /// gathered before it go first either way (the target applies this
    /// origin's operations in their order).
    ///
    /// # Safety
    /// `dst` is writable until that flush.
    #[allow(clippy::too_many_arguments)]
    unsafe fn later(
        &self,
        r: usize,
        kind: u8,
        fetch: bool,
        a: AccOp,
        rel: &[(u64, u64)],
        data: &[u8],
        dst: Option<(usize, usize)>,
    ) -> Result<()> {
        if self.gather(r, kind, fetch, a, rel, data, dst) {
            return Ok(());
        }
        self.drain(r)?;
        if self.gather(r, kind, fetch, a, rel, data, dst) {
            return Ok(());
        }
        self.send(
            r,
            kind,
            fetch,
            a,
            rel,
            data.to_vec(),
            dst.into_iter().collect(),
        )
    }

    /// `later`'s gathering: the operation joins the request gathered for
    /// `r` where it is small and fits there as that request stands (none
    /// yet, or one of the same kind and op with room); false, having done
    /// nothing, otherwise. It sends nothing and cannot fail.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn gather(
        &self,
        r: usize,
        kind: u8,
        fetch: bool,
        a: AccOp,
        rel: &[(u64, u64)],
        data: &[u8],
        dst: Option<(usize, usize)>,
    ) -> bool {
        let got = dst.map_or(0, |d| d.1);
        if data.len().max(got) > BATCH_PIECE || rel.len() > BATCH_SEGS {
            return false;
        }
        let Some(cell) = self.batch.get(r) else {
            return false;
        };
        let Ok(mut b) = cell.try_borrow_mut() else {
            return false;
        };
        let what = Some((kind, fetch, a.op, a.basic, a.esize));
        let fits = b.segs.is_empty()
            || (b.what == what
                && b.segs.len() + rel.len() <= BATCH_SEGS
                && b.data.len() + data.len() <= BATCH_BYTES
                && b.bytes + got <= BATCH_BYTES);
        if !fits {
            return false;
        }
        b.what = what;
        b.segs.extend_from_slice(rel);
        b.data.extend_from_slice(data);
        b.dsts.extend(dst);
        b.bytes += got;
        true
    }

    /// The fast entries' put of `data` to offset `off` of rank `r`'s
    /// window memory (another node's, not a dynamic window's), gathered
    /// into the request for `r` as `later` would; false, having done
    /// nothing, where it is not gathered as the request stands (UCX's RMA
    /// for puts, device memory there, a request of another kind or full):
    /// the general path then takes it.
    #[inline]
    pub fn gather_put(&self, r: usize, off: u64, data: &[u8]) -> bool {
        self.am
            && self.defers(r)
            && self.gather(
                r,
                KIND_PUT,
                false,
                REPLACE_BYTES,
                &[(off, data.len() as u64)],
                data,
                None,
            )
    }

    /// `gather_put`'s get: the `n` bytes at offset `off` go to `dst` at the
    /// next flush to `r`.
    ///
    /// # Safety
    /// `dst` holds `n` writable bytes until that flush.
    #[inline]
    pub unsafe fn gather_get(&self, r: usize, off: u64, dst: *mut u8, n: usize) -> bool {
        let at = Some((dst as usize, n));
        self.am
            && self.defers(r)
            && n > 0
            && self.gather(
                r,
                KIND_GET,
                true,
                REPLACE_BYTES,
                &[(off, n as u64)],
                &[],
                at,
            )
    }

    /// `gather_put`'s accumulate of the `n` bytes of `data` (none for
    /// `MPI_NO_OP`) at offset `off`, fetching into `got` when it is not
    /// null (at the next flush to `r`). Not for single elements that go as
    /// UCX's atomics (`Win::intrinsic`: the caller's check).
    ///
    /// # Safety
    /// `got`, when not null, holds `n` writable bytes until that flush.
    #[inline]
    pub unsafe fn gather_acc(
        &self,
        r: usize,
        off: u64,
        a: AccOp,
        n: usize,
        data: &[u8],
        got: *mut u8,
    ) -> bool {
        let at = (!got.is_null()).then_some((got as usize, n));
        self.defers(r)
            && n > 0
            && self.gather(r, KIND_ACC, at.is_some(), a, &[(off, n as u64)], data, at)
    }

    /// `gather_acc`'s compare-and-swap of the element at offset `off`: the
    /// old element goes to `got` (`new.len()` bytes, at most 8).
    ///
    /// # Safety
    /// As `gather_acc`'s.
    #[inline]
    pub unsafe fn gather_cas(
        &self,
        r: usize,
        off: u64,
        new: &[u8],
        cmp: &[u8],
        got: *mut u8,
    ) -> bool {
        let es = new.len();
        if es == 0 || es > 8 || cmp.len() != es || !self.defers(r) {
            return false;
        }
        let mut data = [0u8; 16];
        data[..es].copy_from_slice(new);
        data[es..2 * es].copy_from_slice(cmp);
        let at = Some((got as usize, es));
        self.gather(
            r,
            KIND_CAS,
            true,
            cas_op(es),
            &[(off, es as u64)],
            &data[..2 * es],
            at,
        )
    }

    /// One request of the segments `rel` with their packed `data`, its
    /// answer's bytes going to `dsts` in order, waited for at the next
    /// flush.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        r: usize,
        kind: u8,
        fetch: bool,
        a: AccOp,
        rel: &[(u64, u64)],
        data: Vec<u8>,
        dsts: Vec<(usize, usize)>,
    ) -> Result<()> {
        let (h, d) = request(self.key, kind, fetch, a, rel, Cow::Owned(data));
        let t = if dsts.is_empty() {
            self.rma.send(self.peers[r].ep, &h, d.into_owned())
        } else {
            // SAFETY: every destination stays writable until the flush that
            // waits for this reply (`later`'s contract).
            unsafe {
                self.rma
                    .send_into(self.peers[r].ep, &h, d.into_owned(), dsts.clone(), DONE)
            }
        }
        .map_err(ucx_err)?;
        self.inflight[r].borrow_mut().push((t, dsts));
        if kind == KIND_ACC || kind == KIND_CAS {
            self.acc_sent[r].set(true);
        }
        Ok(())
    }

    /// A get of the segments `segs` of rank `r` whose `n` packed bytes go
    /// to `dst` at the next flush to `r` (the request goes now, its answer
    /// is waited for then): a run of gets costs one round trip, not one
    /// each. False, having done nothing, where gets are not active
    /// messages answered later (UCX's RMA, a dynamic window or device
    /// memory there, whose errors the call reports).
    ///
    /// # Safety
    /// `dst` holds `n` writable bytes until that flush.
    pub unsafe fn get_later(
        &self,
        r: usize,
        segs: &[[usize; 2]],
        dst: *mut u8,
        n: usize,
    ) -> Result<bool> {
        if !self.am || !self.defers(r) || n == 0 {
            return Ok(false);
        }
        let rel = self.rel(r, segs);
        let dst = Some((dst as usize, n));
        // SAFETY: forwarded contract.
        unsafe { self.later(r, KIND_GET, true, REPLACE_BYTES, &rel, &[], dst) }?;
        Ok(true)
    }

    /// The segments `segs` (addresses in rank `r`'s process) as its
    /// requests name them: a dynamic window's target takes its own
    /// addresses, the others offsets from their window's base.
    fn rel(&self, r: usize, segs: &[[usize; 2]]) -> Vec<(u64, u64)> {
        let from = if self.dynamic { 0 } else { self.peers[r].base };
        segs.iter()
            .map(|&[p, l]| ((p as u64).wrapping_sub(from), l as u64))
            .collect()
    }

    /// `len` bytes at `base` of this process (device memory: `device`)
    /// were attached to the dynamic window: the other ranks' operations
    /// may reach them.
    pub fn attach(&self, base: usize, len: usize, device: bool) {
        self.served.lock.lock().push((base, len, device));
    }

    /// The region at `base` was detached; an operation being applied to it
    /// ends first (it holds the lock).
    pub fn detach(&self, base: usize) {
        self.served.lock.lock().retain(|&(a, _, _)| a != base);
    }

    /// Whether operations on rank `r` may wait for their answers until the
    /// next flush (`later`): not on this rank (served in the call), on
    /// device memory or on a dynamic window's (whose errors the call
    /// reports).
    fn defers(&self, r: usize) -> bool {
        !self.dynamic && !self.peers[r].device && r != self.rank
    }

    /// The segments `segs` of rank `r`'s memory that this rank sees at
    /// `tbase`, as offsets from its window's base.
    fn offsets(tbase: usize, segs: &[[usize; 2]]) -> Vec<(u64, u64)> {
        segs.iter()
            .map(|&[p, l]| (p.wrapping_sub(tbase) as u64, l as u64))
            .collect()
    }

    /// An accumulate (with `fetch`, a get-accumulate) of the packed `data`
    /// into the segments `segs` of rank `r`, whose memory this rank sees
    /// at `tbase`: applied by the target's process (`serve`). Without
    /// `fetch` it is complete at the next flush to `r` (`later`: a run of
    /// them costs one message), with it when the call returns.
    pub fn accumulate(
        &self,
        r: usize,
        tbase: usize,
        segs: &[[usize; 2]],
        a: AccOp,
        data: &[u8],
        fetch: Option<&mut [u8]>,
    ) -> Result<()> {
        let rel = Self::offsets(tbase, segs);
        if fetch.is_none() && self.defers(r) {
            // SAFETY: nothing is fetched.
            return unsafe { self.later(r, KIND_ACC, false, a, &rel, data, None) };
        }
        let (h, d) = request(
            self.key,
            KIND_ACC,
            fetch.is_some(),
            a,
            &rel,
            Cow::Borrowed(data),
        );
        let got = self.call(r, &h, &d)?;
        if let Some(f) = fetch {
            if got.len() != f.len() {
                return Err(err!(
                    MPI_ERR_INTERN,
                    "rank {r} returned {} bytes for {}",
                    got.len(),
                    f.len()
                ));
            }
            f.copy_from_slice(&got);
        }
        Ok(())
    }

    /// A get-accumulate as `accumulate`'s, its `n` fetched bytes going to
    /// `dst` at the next flush to `r` (a run of them costs one round trip);
    /// false, having done nothing, where `r` is not reached that way
    /// (`defers`).
    ///
    /// # Safety
    /// `dst` holds `n` writable bytes until that flush.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn accumulate_later(
        &self,
        r: usize,
        tbase: usize,
        segs: &[[usize; 2]],
        a: AccOp,
        data: &[u8],
        dst: *mut u8,
        n: usize,
    ) -> Result<bool> {
        if !self.defers(r) || n == 0 {
            return Ok(false);
        }
        let rel = Self::offsets(tbase, segs);
        let dst = Some((dst as usize, n));
        // SAFETY: forwarded contract.
        unsafe { self.later(r, KIND_ACC, true, a, &rel, data, dst) }?;
        Ok(true)
    }

    /// The request of a compare-and-swap of the element at `segs`: its
    /// op (the element's size), segments and data (new, then compare).
    fn cas_request(
        tbase: usize,
        segs: &[[usize; 2]],
        new: &[u8],
        cmp: &[u8],
    ) -> (AccOp, Vec<(u64, u64)>, Vec<u8>) {
        let mut data = new.to_vec();
        data.extend_from_slice(cmp);
        (cas_op(new.len()), Self::offsets(tbase, segs), data)
    }

    /// Compare-and-swap of the element at `segs` of rank `r`.
    pub fn compare_swap(
        &self,
        r: usize,
        tbase: usize,
        segs: &[[usize; 2]],
        new: &[u8],
        cmp: &[u8],
        old: &mut [u8],
    ) -> Result<()> {
        let (a, rel, data) = Self::cas_request(tbase, segs, new, cmp);
        let (h, d) = request(self.key, KIND_CAS, true, a, &rel, Cow::Owned(data));
        let got = self.call(r, &h, &d)?;
        if got.len() != old.len() {
            return Err(err!(
                MPI_ERR_INTERN,
                "rank {r} returned {} bytes",
                got.len()
            ));
        }
        old.copy_from_slice(&got);
        Ok(())
    }

    /// `compare_swap`, the old element going to `dst` (`new.len()` bytes)
    /// at the next flush to `r`; false, having done nothing, where `r` is
    /// not reached that way (`defers`).
    ///
    /// # Safety
    /// `dst` holds `new.len()` writable bytes until that flush.
    pub unsafe fn compare_swap_later(
        &self,
        r: usize,
        tbase: usize,
        segs: &[[usize; 2]],
        new: &[u8],
        cmp: &[u8],
        dst: *mut u8,
    ) -> Result<bool> {
        if !self.defers(r) || new.is_empty() {
            return Ok(false);
        }
        let (a, rel, data) = Self::cas_request(tbase, segs, new, cmp);
        let dst = Some((dst as usize, new.len()));
        // SAFETY: forwarded contract.
        unsafe { self.later(r, KIND_CAS, true, a, &rel, &data, dst) }?;
        Ok(true)
    }
}

/// The target segments `segs` paired with consecutive pieces of the
/// `len` packed bytes at `local`: (local address, length, remote address).
fn pairs(local: usize, segs: &[[usize; 2]], len: usize) -> Vec<(usize, usize, u64)> {
    let mut at = 0usize;
    let v = segs
        .iter()
        .map(|&[a, n]| {
            let s = (local + at, n, a as u64);
            at += n;
            s
        })
        .collect();
    debug_assert!(at <= len);
    v
}

/// Whether puts and gets across nodes go as active messages that the
/// target's process applies (`OXMPI_RMA_AM`: 1, 0, or auto). Auto: where
/// UCX has no RDMA transport to use, so that its RMA is emulated over
/// messages anyway (tcp: a put then costs two round trips, its flush
/// included, where ours costs one, and large ones move at a third of the
/// rate; docs/performance.md). That is when `UCX_TLS` names no RDMA
/// transport, or, with `UCX_TLS` unset (or all), when the host has no
/// InfiniBand/RoCE device (`/sys/class/infiniband`).
pub fn rma_by_messages() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        match crate::config::get_str("OXMPI_RMA_AM").as_deref() {
            Some("0") => return false,
            Some("1") => return true,
            _ => {}
        }
        let rdma = |t: &str| {
            let t = t.trim();
            ["rc", "dc", "ud", "ib", "ugni"]
                .iter()
                .any(|p| t.starts_with(p))
        };
        let tls = std::env::var("UCX_TLS").unwrap_or_default();
        if !tls.is_empty() && tls != "all" && !tls.starts_with('^') {
            return !tls.split(',').any(rdma);
        }
        std::fs::read_dir("/sys/class/infiniband").map_or(true, |mut d| d.next().is_none())
    })
}

fn no_memory(r: usize) -> crate::base::error::Error {
    err!(
        MPI_ERR_RMA_RANGE,
        "rank {r} brought no memory to the window (size 0)"
    )
}

impl Drop for Remote {
    fn drop(&mut self) {
        lock_served().remove(&self.key);
        for p in self.peers.drain(..) {
            self.rma.drop_key(p.ctl_key);
            if let Some(k) = p.data {
                self.rma.drop_key(k);
            }
        }
        for g in self.regs.drain(..) {
            self.rma.unmap(g);
        }
    }
}
