//! One-sided communication: windows and the operations on them.
//!
//! Within a node every operation is carried out by the origin alone (at
//! once, or at the flush where gathered), so passive target needs nothing
//! from the target (no call and no progress thread):
//!
//! * memory of `MPI_Win_allocate` and `MPI_Win_allocate_shared` lives in
//!   the window's segment on the node (`layout`), which every local rank
//!   maps: put and get are copies, accumulates on 4- and 8-byte integers
//!   at aligned addresses are the CPU's atomic instructions;
//! * memory of `MPI_Win_create` and `MPI_Win_create_dynamic` is the
//!   application's own: other ranks of the node reach it by single copy
//!   (`process_vm_readv`/`writev`), the rank itself directly; small
//!   operations by single copy are gathered per target and made at the
//!   flush (`CmaGather`: one call for a run of them);
//! * accumulates that are not one atomic instruction take the target's
//!   accumulate mutex in the segment around read, reduce and write back,
//!   so accumulates with the same op and basic type are element-wise
//!   atomic (MPI-4 11.7.1) and, done in call order, keep every ordering of
//!   `accumulate_ordering`;
//! * `MPI_Win_lock` is a reader-writer word per target in the segment;
//!   post/start/complete/wait are counters per (target, origin) pair;
//!   fence is a barrier on the window's own communicator.
//!
//! An operation is complete at the origin when its call returns, except
//! the gathered ones (their bytes are copied at the call; fetched bytes
//! land at the flush); flush and the ends of epochs make the gathered
//! ones, order memory and, across nodes, wait for the targets' answers. A window whose ranks span nodes reaches the
//! other nodes through UCX (`net`): puts and gets on registered memory (a
//! dynamic window's as active messages its target checks), and
//! for every target the control words and the accumulate mutex by UCX's
//! atomics (docs/architecture.md says why).

pub mod layout;
pub mod net;

use crate::base::consts::*;
use crate::base::error::Result;
use crate::datatype::Type;
use crate::err;
use crate::gpu::ipc::IpcRef;
use crate::gpu::MemKind;
use crate::sys::ShmMap;
use crate::transport::ucx::rma::Amo;
use layout::{Layout, EXCL};
use parking_lot::lock_api::RawMutex as _;
use parking_lot::RawMutex;
use std::cell::{Cell, UnsafeCell};
use std::os::raw::c_int;
use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One rank of a window as the others see it.
#[derive(Clone, Debug)]
pub struct Target {
    pub world: i32,
    pub pid: i32,
    /// Index among the window's ranks on this node (None: another node).
    pub local: Option<usize>,
    /// Address of the window memory: in this process when `direct` (the
    /// node's segment, or this rank's own memory), else in the target's.
    pub addr: usize,
    pub direct: bool,
    /// The window memory is CUDA device memory (`MPI_Win_create` of a
    /// device buffer): a direct target's is this rank's own or a CUDA IPC
    /// mapping of it, moved with the driver's copies.
    pub device: bool,
    pub size: usize,
    pub unit: usize,
}

impl Target {
    /// The offset in the window memory of the `n` bytes at displacement
    /// `disp` where they lie inside it (not a dynamic window's: its
    /// displacements are addresses); the fast paths' range check.
    #[inline(always)]
    fn offset(&self, disp: i64, n: usize) -> Option<u64> {
        let off = u64::try_from(disp).ok()?.checked_mul(self.unit as u64)?;
        (off <= self.size as u64 && n as u64 <= self.size as u64 - off).then_some(off)
    }
}

/// Where an operation's target bytes are reached from this process
/// (`Win::route`): `addr` translated into a CUDA IPC mapping for a local
/// rank's attached device memory.
struct Route {
    addr: usize,
    direct: bool,
    device: bool,
    _pin: Option<Pinned>,
}

/// A pin of a peer's mapped allocation (world rank, buffer id) while an
/// operation copies through it; unpinned when dropped.
struct Pinned(usize, u64);

impl Drop for Pinned {
    fn drop(&mut self) {
        crate::gpu::ipc::unpin(self.0, self.1);
    }
}

/// The CUDA IPC mappings of other ranks' device window memory that a
/// window holds open: (world rank, buffer id), unpinned when it is freed.
#[derive(Default)]
pub struct DevMaps(pub Vec<(usize, u64)>);

impl Drop for DevMaps {
    fn drop(&mut self) {
        for &(w, id) in &self.0 {
            crate::gpu::ipc::unpin(w, id);
        }
    }
}

/// What synchronization is open on a window at this rank.
#[derive(Default)]
pub struct Epochs {
    /// A fence opened an access and exposure epoch (the last fence did
    /// not assert MPI_MODE_NOSUCCEED).
    pub fence: bool,
    /// MPI_Win_start's group (window ranks), and for each window rank
    /// whether its post for this epoch has been seen.
    pub start: Option<Vec<usize>>,
    pub start_seen: Vec<bool>,
    /// Posts seen so far from each target (one per access epoch).
    pub posts_seen: Vec<u32>,
    /// MPI_Win_post's group, and posts made so far to each origin.
    pub post: Option<Vec<usize>>,
    pub posted: Vec<u32>,
    /// Passive target: the lock held on each rank (MPI_LOCK_SHARED or
    /// MPI_LOCK_EXCLUSIVE; with MPI_MODE_NOCHECK nothing was taken: `nocheck`).
    pub locks: Vec<Option<(c_int, bool)>>,
    pub lock_all: Option<bool>,
}

pub struct Win {
    /// The window's own communicator (a duplicate of the user's).
    pub comm: c_int,
    pub rank: usize,
    pub world: Vec<i32>,
    pub flavor: c_int,
    pub targets: Vec<Target>,
    pub seg: ShmMap,
    pub layout: Layout,
    pub me_local: usize,
    /// Accumulates may use the CPU's atomics on target memory (every
    /// origin maps it: the allocated flavors).
    pub atomics: bool,
    /// Across nodes, single-element accumulates, fetch-and-op and
    /// compare-and-swap on 4- and 8-byte elements go as the fabric's
    /// atomics without the mutex (info `acc_single_intrinsic`: the
    /// application does not mix them with longer accumulates on the same
    /// elements).
    pub single_intrinsic: bool,
    /// The values behind the predefined attributes (their addresses are
    /// handed out: the window is never moved, it sits in a `Box`).
    pub base: usize,
    pub size_attr: isize,
    pub unit_attr: c_int,
    pub flavor_attr: c_int,
    pub model_attr: c_int,
    pub errhandler: c_int,
    pub name: String,
    pub attrs: Vec<(c_int, usize)>,
    pub info: Vec<(String, String)>,
    pub ep: Epochs,
    /// This rank's attached regions (dynamic windows): (address, length,
    /// CUDA device memory).
    pub attached: Vec<(usize, usize, bool)>,
    /// The window spans nodes: UCX reaches every rank (`net`).
    pub remote: Option<net::Remote>,
    /// Mappings of the node's ranks' device window memory.
    pub dev_maps: DevMaps,
    /// This process stored into window memory by plain stores since the
    /// last flush (`settle` fences only then: gets are loads, complete
    /// when they return, and atomic instructions are full barriers).
    pub stored: Cell<bool>,
    /// Puts and gets to ranks of this node by single copy, not yet made.
    pub cma: CmaGather,
}

/// Puts and gets to ranks of this node whose window memory this process
/// does not map (`MPI_Win_create` memory, a dynamic window's attached
/// memory), gathered per target until the next flush that covers it
/// (`Win::settle`, `complete`): there a target's puts go as one
/// `process_vm_writev` and its gets as one `process_vm_readv`. A call
/// costs about 2 us on the machines measured whatever it moves up to a few
/// KiB, so 64 8-byte puts and a flush cost one call, not 64. A put's bytes
/// are copied at the call (programs reuse a put's origin buffer before the
/// flush, which MPI forbids but other implementations tolerate for small
/// puts); a get's land in the user's buffer, which MPI leaves unread until
/// then. The request form of a get (`MPI_Rget`, whose request completes in
/// the call) is not gathered.
#[derive(Default)]
pub struct CmaGather {
    /// Some target has pieces gathered (the flush's fast path looks).
    any: Cell<bool>,
    per: std::cell::RefCell<Vec<CmaBatch>>,
}

#[derive(Default)]
struct CmaBatch {
    put: CmaList,
    get: CmaList,
    acc: AccList,
}

impl CmaBatch {
    fn is_empty(&self) -> bool {
        self.put.bytes == 0 && self.get.bytes == 0 && self.acc.ops.is_empty()
    }
}

/// Accumulates, get-accumulates, fetch-and-ops and compare-and-swaps to one
/// target reached by single copy, gathered like its puts (`CmaGather`): at
/// the flush the target's accumulate mutex is taken once, the union of
/// their target ranges read in one call, the operations applied to that
/// image one after another in their order (each sees the ones before it,
/// several may name the same element; a fetching one's old elements go to
/// its result buffer), and the image written back in one call.
#[derive(Default)]
struct AccList {
    ops: Vec<AccPiece>,
    /// Every operation's target segments, in order.
    segs: Vec<[usize; 2]>,
    /// Their operands (none for MPI_NO_OP; new, then compare value, for a
    /// compare-and-swap).
    data: Vec<u8>,
}

struct AccPiece {
    a: AccOp,
    cas: bool,
    /// Its segments in `AccList::segs` and its operand's start in `data`.
    segs: std::ops::Range<usize>,
    data: usize,
    /// Where its old elements go (0: nothing fetched).
    dst: usize,
}

/// The target's segments of one direction in the order they were issued,
/// and this process's side: the puts' bytes (`data`) or the pieces of the
/// gets' buffers (`local`); `bytes` in all.
#[derive(Default)]
struct CmaList {
    remote: Vec<[usize; 2]>,
    local: Vec<[usize; 2]>,
    data: Vec<u8>,
    bytes: usize,
}

/// An accumulate's operand of `n` bytes at `src` (none for `MPI_NO_OP`),
/// where it and the result buffer `got` (null: none) are host memory: the
/// fast paths' common check. None leaves the operation to the general
/// path.
///
/// # Safety
/// `src` holds `n` readable bytes unless `a.op` is `MPI_NO_OP`.
#[inline]
unsafe fn acc_operand<'a>(a: AccOp, n: usize, src: *const u8, got: *mut u8) -> Option<&'a [u8]> {
    let host = |p: *const u8| p.is_null() || crate::gpu::classify(p, n) == MemKind::Host;
    if !host(got) || (a.op != MPI_NO_OP && !host(src)) {
        return None;
    }
    Some(if a.op == MPI_NO_OP {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(src, n) }
    })
}

/// Whether every one of `bufs`, `n` bytes each, is host memory.
#[inline]
fn all_host(bufs: &[*const u8], n: usize) -> bool {
    bufs.iter()
        .all(|&p| crate::gpu::classify(p, n) == MemKind::Host)
}

/// Appends the range `r` ([address, length]) to `v`, merged with the last
/// one where it continues it.
fn push_range(v: &mut Vec<[usize; 2]>, r: [usize; 2]) {
    match v.last_mut() {
        Some(p) if p[0].wrapping_add(p[1]) == r[0] => p[1] += r[1],
        _ => v.push(r),
    }
}

/// Gathered single copies: the largest piece, and the most target segments
/// one list holds (IOV_MAX: one call moves them).
const CMA_PIECE: usize = 65536;
const CMA_SEGS: usize = 1024;

// SAFETY: a Win is only reached through its WinCell; the raw addresses it
// holds name the window's segment (owned by `seg`) and user memory the
// application keeps valid for the window's life.
unsafe impl Send for Win {}

/// Most windows alive at once in one process.
const MAX_WINS: usize = 16384;

/// A window and what guards it: under MPI_THREAD_MULTIPLE a mutex; at the
/// lower levels one thread at a time calls MPI, so an operation takes no
/// locked instruction (on the machines measured each costs about as much
/// as the rest of an 8-byte put), as the library's own entry does
/// (`core::runtime`). `busy` turns a re-entrant use into an error.
pub struct WinCell {
    lock: RawMutex,
    busy: Cell<bool>,
    win: UnsafeCell<Win>,
}

// SAFETY: `win` and `busy` are touched only by the thread that holds the
// window: under `lock` when the library is locked (MPI_THREAD_MULTIPLE),
// else by the one thread the application lets call MPI at a time, whose
// happens-before edges come from the application's own synchronisation.
unsafe impl Sync for WinCell {}

/// The windows of this process, by handle index: one pointer each, read
/// without a lock (an operation's lookup is one load), set and cleared
/// under `INSERT`. A window is freed only by `MPI_Win_free`, which MPI
/// forbids to overlap other calls on the same window.
static WINS: [AtomicPtr<WinCell>; MAX_WINS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_WINS];
static INSERT: Mutex<()> = Mutex::new(());

fn lock_ignoring_poison<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn handle(idx: usize) -> c_int {
    crate::base::handles::make(crate::base::handles::KIND_WIN, idx as u32)
}

/// Registers a new window; returns its handle.
pub fn insert(w: Win) -> Result<c_int> {
    let _g = lock_ignoring_poison(&INSERT);
    // Relaxed: slots change only under INSERT, which we hold.
    let i = WINS
        .iter()
        .position(|p| p.load(Ordering::Relaxed).is_null())
        .ok_or_else(|| {
            err!(
                MPI_ERR_NO_MEM,
                "{MAX_WINS} windows are alive in this process: free some with MPI_Win_free"
            )
        })?;
    let p = Box::into_raw(Box::new(WinCell {
        lock: RawMutex::INIT,
        busy: Cell::new(false),
        win: UnsafeCell::new(w),
    }));
    // Release: pairs with the Acquire load in `get`, so a lookup that sees
    // the pointer sees the window it points to.
    WINS[i].store(p, Ordering::Release);
    Ok(handle(i))
}

fn slot(h: c_int) -> Option<usize> {
    crate::base::handles::index(h, crate::base::handles::KIND_WIN)
        .map(|i| i as usize)
        .filter(|&i| i < MAX_WINS)
}

/// The window behind handle `h`.
#[inline]
fn get(h: c_int) -> Result<&'static WinCell> {
    find(h).ok_or_else(|| bad_win(h))
}

/// `get` without its error (a fast path's lookup builds none).
#[inline(always)]
fn find(h: c_int) -> Option<&'static WinCell> {
    // Acquire: pairs with the Release store in `insert`.
    let p = WINS.get(slot(h)?)?.load(Ordering::Acquire);
    // SAFETY: a non-null slot points to a live window (Box::into_raw in
    // `insert`); it is freed only by `remove`, which MPI_Win_free calls
    // when no other call may use the window.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// `with_win`'s error for a window already held by this thread.
#[cold]
#[inline(never)]
fn in_use(h: c_int) -> crate::base::error::Error {
    err!(
        MPI_ERR_OTHER,
        "win=0x{:08x} is in use by a call on this thread (an MPI call on a window from a callback of a call on it)",
        h as u32
    )
}

/// `get`'s error.
#[cold]
#[inline(never)]
fn bad_win(h: c_int) -> crate::base::error::Error {
    if h == MPI_WIN_NULL {
        err!(MPI_ERR_WIN, "win=MPI_WIN_NULL")
    } else {
        err!(
            MPI_ERR_WIN,
            "win=0x{:08x} is not a valid window{}",
            h as u32,
            crate::base::handles::kind_hint(h, crate::base::handles::KIND_WIN)
        )
    }
}

/// `h` is a valid window handle.
pub fn check(h: c_int) -> Result<()> {
    get(h).map(|_| ())
}

/// Leaves a window on drop (also when unwinding from a panic).
struct Held<'a>(&'a WinCell, bool);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.busy.set(false);
        if self.1 {
            // SAFETY: this thread locked it in `hold`.
            unsafe { self.0.lock.unlock() };
        }
    }
}

/// Holds window cell `c` for this thread (under MPI_THREAD_MULTIPLE, its
/// lock too) until the `Held` is dropped; None, holding nothing, where
/// this thread holds it already (a call on the window from a callback of
/// a call on it).
#[inline(always)]
fn hold(c: &WinCell) -> Option<Held<'_>> {
    let locked = crate::core::runtime::locked();
    if locked {
        c.lock.lock();
    }
    if c.busy.get() {
        if locked {
            // SAFETY: locked just above by this thread.
            unsafe { c.lock.unlock() };
        }
        return None;
    }
    c.busy.set(true);
    Some(Held(c, locked))
}

/// Runs `f` on window `h`, holding it.
pub fn with_win<R>(h: c_int, f: impl FnOnce(&mut Win) -> Result<R>) -> Result<R> {
    let c = get(h)?;
    let _held = hold(c).ok_or_else(|| in_use(h))?;
    // SAFETY: this thread holds the window (see WinCell).
    f(unsafe { &mut *c.win.get() })
}

/// `with_win` for a fast path (`abi::win`'s `#[mpi_fn(fast)]` functions):
/// the window, held until the `HeldWin` is dropped; None, holding nothing,
/// where the window is not valid or already held by this thread. Panics
/// nowhere. A guard, not a function taking the fast path as a closure: the
/// closure was a call of its own, out of line, in every fast call.
#[inline(always)]
pub fn try_win(h: c_int) -> Option<HeldWin> {
    hold(find(h)?).map(HeldWin)
}

/// A window this thread holds (`try_win`).
pub struct HeldWin(Held<'static>);

impl std::ops::Deref for HeldWin {
    type Target = Win;
    #[inline(always)]
    fn deref(&self) -> &Win {
        // SAFETY: this thread holds the window (see WinCell) while the
        // guard lives, and the reference cannot outlive the guard.
        unsafe { &*self.0 .0.win.get() }
    }
}

impl std::ops::DerefMut for HeldWin {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Win {
        // SAFETY: as for `deref`; `&mut self` makes it the only one.
        unsafe { &mut *self.0 .0.win.get() }
    }
}

/// Removes window `h` from the table and frees it (MPI_Win_free).
pub fn remove(h: c_int) -> Result<()> {
    get(h)?;
    let i = slot(h).unwrap();
    let p = {
        let _g = lock_ignoring_poison(&INSERT);
        WINS[i].swap(std::ptr::null_mut(), Ordering::AcqRel)
    };
    // SAFETY: `p` came from Box::into_raw in `insert` and has just left
    // the table; MPI_Win_free is the window's last call.
    drop(unsafe { Box::from_raw(p) });
    Ok(())
}

/// The error handler of window `h`, if it is one (for the error path,
/// which runs after the failed call has left the window).
pub fn errhandler_of(h: c_int) -> Option<c_int> {
    slot(h)?;
    get(h).ok()?;
    with_win(h, |w| Ok(w.errhandler)).ok()
}

/// Some window uses error handler `h` (MPI_Errhandler_free keeps its slot).
pub fn uses_errhandler(h: c_int) -> bool {
    let live: Vec<c_int> = {
        let _g = lock_ignoring_poison(&INSERT);
        (0..MAX_WINS)
            // Relaxed: slots change only under INSERT, which we hold.
            .filter(|&i| !WINS[i].load(Ordering::Relaxed).is_null())
            .map(handle)
            .collect()
    };
    live.into_iter()
        .any(|w| with_win(w, |w| Ok(w.errhandler == h)).unwrap_or(true))
}

/// Waits (progressing the library, yielding the CPU as other waits do)
/// until `f` says done.
fn wait_until(mut f: impl FnMut() -> bool) -> Result<()> {
    if f() {
        return Ok(());
    }
    crate::core::runtime::wait_for(|_| Ok(f().then_some(())))
}

/// `n` bytes as elements of `esize` bytes: (elements, bytes left over). A
/// shift and a mask for the sizes of basic types, which are powers of two
/// (a division cost an 8-byte accumulate about 2 ns).
#[inline(always)]
fn elems(n: usize, esize: usize) -> (usize, usize) {
    if esize.is_power_of_two() {
        (n >> esize.trailing_zeros(), n & (esize - 1))
    } else {
        (n / esize, n % esize)
    }
}

/// Element kinds whose accumulates use the CPU's atomics: 4- and 8-byte
/// integers (the fetch-and-op and compare-and-swap of counters, queues and
/// locks that PGAS runtimes build). Every other kind takes the accumulate
/// mutex and moves whole vectors: per-element compare-and-swap loops on
/// floats measured slower from a few elements on. The choice depends on
/// the basic type alone (and the element's alignment), so every access to
/// one element with one basic type takes the same path.
fn atomic_elem(e: crate::op::Elem) -> bool {
    use crate::op::Elem::*;
    matches!(e, I32 | U32 | I64 | U64)
}

/// What an accumulate does at each target element.
#[derive(Clone, Copy)]
pub struct AccOp {
    pub op: c_int,
    pub elem: crate::op::Elem,
    pub esize: usize,
    /// The basic datatype (the target derives `elem` from it again).
    pub basic: c_int,
}

impl Win {
    fn target(&self, r: usize) -> &Target {
        &self.targets[r]
    }

    fn wname(&self) -> &str {
        &self.name
    }

    /// Rank `r` of the window as a target: a valid rank on this node.
    #[inline]
    pub fn check_rank(&self, r: c_int) -> Result<usize> {
        match self.targets.get(r as usize) {
            Some(t) if r >= 0 && (t.local.is_some() || self.remote.is_some()) => Ok(r as usize),
            _ => Err(self.bad_rank(r)),
        }
    }

    /// `check_rank`'s error (apart, so that the check's own code stays
    /// small: it runs in every operation).
    #[cold]
    #[inline(never)]
    fn bad_rank(&self, r: c_int) -> crate::base::error::Error {
        if r < 0 || r as usize >= self.targets.len() {
            return err!(
                MPI_ERR_RANK,
                "target_rank={r} is not a rank of window {} (size {})",
                self.wname(),
                self.targets.len()
            );
        }
        // A window that spans nodes always has its UCX part.
        err!(
            MPI_ERR_INTERN,
            "target_rank={r} of window {} is on another node (world rank {}) but the window has no link there",
            self.wname(),
            self.target(r as usize).world
        )
    }

    /// An access epoch to `r` is open; waits for its post in a general
    /// active-target epoch.
    #[inline]
    pub fn access(&mut self, r: usize) -> Result<()> {
        if self.ep.fence || self.ep.lock_all.is_some() || self.ep.locks[r].is_some() {
            return Ok(());
        }
        self.access_started(r)
    }

    /// `access` in a general active-target epoch, or its error.
    #[cold]
    #[inline(never)]
    fn access_started(&mut self, r: usize) -> Result<()> {
        if self.ep.start.as_ref().is_some_and(|g| g.contains(&r)) {
            if !self.ep.start_seen[r] {
                self.see_post(r)?;
            }
            return Ok(());
        }
        Err(err!(
            MPI_ERR_RMA_SYNC,
            "no access epoch to rank {r} is open on window {}: call MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first",
            self.wname()
        ))
    }

    /// Waits for target `r`'s post of this access epoch.
    fn see_post(&mut self, r: usize) -> Result<()> {
        if let Some(net) = self.remote.as_ref() {
            let want = self.ep.posts_seen[r] as u64 + 1;
            let c = net.word(net.post_word(r));
            // Acquire: pairs with the target's SeqCst fence before its
            // post (the counter is written by UCX on its behalf).
            wait_until(|| c.load(Ordering::Acquire) >= want)?;
            self.ep.posts_seen[r] += 1;
            self.ep.start_seen[r] = true;
            return Ok(());
        }
        let (lt, me) = (self.target(r).local.unwrap(), self.me_local);
        let want = self.ep.posts_seen[r] + 1;
        let (base, l) = (self.seg.base(), self.layout.clone());
        // SAFETY: the segment is mapped for the window's life; lt, me < n.
        let c = unsafe { l.counter(base, false, lt, me) };
        // Acquire: pairs with the Release increment in `post`, so the
        // target's stores before its post are seen by our accesses.
        wait_until(|| c.load(Ordering::Acquire) >= want)?;
        self.ep.posts_seen[r] = want;
        self.ep.start_seen[r] = true;
        Ok(())
    }

    /// The address here of the `n` bytes at displacement `disp` of target
    /// `r`, where its window memory is host memory this process maps (not
    /// a dynamic window's) and the bytes lie inside it: the fast paths'
    /// common check. None leaves the operation to the general path.
    #[inline]
    fn mapped(&self, r: usize, disp: i64, n: usize) -> Option<usize> {
        let tg = self.target(r);
        if !tg.direct || tg.device || self.flavor == MPI_WIN_FLAVOR_DYNAMIC {
            return None;
        }
        tg.offset(disp, n).map(|off| tg.addr + off as usize)
    }

    /// A put (`put`) or get of `n` contiguous bytes at displacement `disp`
    /// of target `r`, moved at once between host memory at `buf` and
    /// window memory this process maps (the allocated flavors, its own
    /// `MPI_Win_create` memory); false, having done nothing, where that
    /// does not apply or the bytes fall outside the window: the general
    /// path (`place`, `write`, `read`) then takes the operation and reports
    /// what is wrong.
    ///
    /// # Safety
    /// `buf` holds `n` bytes, readable for a put, writable for a get.
    #[inline(always)]
    pub unsafe fn direct_bytes(
        &self,
        r: usize,
        disp: i64,
        buf: *mut u8,
        n: usize,
        put: bool,
    ) -> bool {
        let Some(at) = self.mapped(r, disp, n) else {
            return false;
        };
        if crate::gpu::classify(buf, n) != MemKind::Host {
            return false;
        }
        let at = at as *mut u8;
        // SAFETY: the `n` bytes at `at` lie in window memory this process
        // maps (checked above); `buf` holds `n` bytes (the caller's contract).
        unsafe {
            if put {
                self.stored.set(true);
                crate::sys::copy(at, buf, n)
            } else {
                crate::sys::copy(buf, at, n)
            }
        };
        true
    }

    /// An accumulate (with `got`, a get-accumulate) of `n` contiguous bytes
    /// of basic elements at displacement `disp` of target `r`, applied at
    /// once to window memory this process maps, as `accumulate` would
    /// (the CPU's atomics on aligned integer elements of the allocated
    /// flavors, else in place under the target's accumulate mutex); false,
    /// having done nothing, where that does not apply (the general path
    /// then takes it). It cannot fail: a window of this node only.
    ///
    /// # Safety
    /// `src` holds `n` readable bytes unless `a.op` is `MPI_NO_OP`; `got`,
    /// when not null, `n` writable ones.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub unsafe fn direct_acc(
        &self,
        r: usize,
        disp: i64,
        a: AccOp,
        n: usize,
        src: *const u8,
        got: *mut u8,
    ) -> bool {
        if self.remote.is_some() || a.esize == 0 || elems(n, a.esize).1 != 0 {
            return false;
        }
        let (Some(at), Some(l)) = (self.mapped(r, disp, n), self.target(r).local) else {
            return false;
        };
        // SAFETY: the caller's contract.
        let Some(data) = (unsafe { acc_operand(a, n, src, got) }) else {
            return false;
        };
        // SAFETY: the caller's contract.
        let mut fetch = (!got.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(got, n) });
        if self.atomics && atomic_elem(a.elem) && elems(at, a.esize).1 == 0 {
            let es = a.esize;
            // Element by element (a while loop: `step_by` divides).
            let mut k = 0;
            while k < n {
                let one = data.get(k..k + es).unwrap_or(&[]);
                let old = fetch.as_deref_mut().and_then(|f| f.get_mut(k..k + es));
                // SAFETY: `at + k` lies in mapped window memory (checked
                // above), aligned to the element.
                unsafe { atomic_apply((at + k) as *mut u8, a, one, old) };
                k += es;
            }
            return true;
        }
        // SAFETY: the `n` bytes at `at` lie in window memory this process
        // maps (checked above).
        unsafe { self.reduce_in_place(l, at as *mut u8, n, a, data, fetch) };
        true
    }

    /// `direct_acc` of one element, as a path of its own inlined into the
    /// fast entries: by the CPU's atomics where `direct_acc` uses them (4-
    /// and 8-byte integers of the allocated flavors at an aligned address:
    /// a fetch-and-op, a counter's accumulate), else under the target's
    /// accumulate mutex; false, having done nothing, where `direct_acc`
    /// would not apply.
    ///
    /// # Safety
    /// `src` holds one element unless `a.op` is `MPI_NO_OP`; `got`, when
    /// not null, room for one.
    #[inline(always)]
    pub unsafe fn direct_one(
        &self,
        r: usize,
        disp: i64,
        a: AccOp,
        src: *const u8,
        got: *mut u8,
    ) -> bool {
        let es = a.esize;
        if self.remote.is_some() {
            return false;
        }
        let Some(at) = self.mapped(r, disp, es) else {
            return false;
        };
        let host = |p: *const u8| crate::gpu::classify(p, es) == MemKind::Host;
        if !host(got) || (a.op != MPI_NO_OP && !host(src)) {
            return false;
        }
        if !(self.atomics && atomic_elem(a.elem) && at & (es - 1) == 0) {
            // Under the mutex, as `direct_acc` would, the element by value.
            let Some(l) = self.target(r).local else {
                return false;
            };
            let one: &[u8] = match a.op {
                MPI_NO_OP => &[],
                // SAFETY: the caller's contract (`src` is not read for MPI_NO_OP).
                _ => unsafe { std::slice::from_raw_parts(src, es) },
            };
            self.stored.set(true);
            self.local_acc_lock(l, || {
                // SAFETY: `at` names one element of mapped window memory
                // (checked above); the mutex keeps other accumulates out.
                let cur = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, es) };
                if !got.is_null() {
                    // SAFETY: `got` has room for one element (the caller's contract).
                    unsafe { std::ptr::copy_nonoverlapping(cur.as_ptr(), got, es) };
                }
                if a.op != MPI_NO_OP {
                    crate::op::reduce_builtin(a.op, a.elem, 1, one, cur);
                }
            });
            return true;
        }
        let one: &[u8] = match a.op {
            MPI_NO_OP => &[],
            // SAFETY: the caller's contract (`src` is not read for MPI_NO_OP).
            _ => unsafe { std::slice::from_raw_parts(src, es) },
        };
        // SAFETY: as above.
        let old = (!got.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(got, es) });
        // SAFETY: `at` lies in mapped window memory, aligned to the element
        // (checked above).
        unsafe { atomic_apply(at as *mut u8, a, one, old) };
        true
    }

    /// Reduces the packed `data` into the `n` bytes at `at` of the window
    /// memory of local rank `l`, in place under its accumulate mutex (one
    /// pass over the target's elements, not a copy out and back); `fetch`
    /// gets them as they were.
    ///
    /// # Safety
    /// `at` names `n` bytes of local rank `l`'s window memory that this
    /// process maps.
    #[inline]
    unsafe fn reduce_in_place(
        &self,
        l: usize,
        at: *mut u8,
        n: usize,
        a: AccOp,
        data: &[u8],
        fetch: Option<&mut [u8]>,
    ) {
        self.stored.set(true);
        self.local_acc_lock(l, || {
            // SAFETY: the caller's contract; the mutex keeps other
            // accumulates out.
            let cur = unsafe { std::slice::from_raw_parts_mut(at, n) };
            if let Some(f) = fetch {
                f.copy_from_slice(cur);
            }
            if a.op != MPI_NO_OP {
                crate::op::reduce_builtin(a.op, a.elem, elems(n, a.esize).0, data, cur);
            }
        })
    }

    /// A compare-and-swap of one 4- or 8-byte element at displacement
    /// `disp` of target `r` by the CPU's atomic instruction on window
    /// memory this process maps (the allocated flavors); false, having done
    /// nothing, where that does not apply (`compare_swap` then takes it).
    ///
    /// # Safety
    /// `new`, `cmp` and `old` hold `es` bytes each, `old` writable.
    pub unsafe fn direct_cas(
        &self,
        r: usize,
        disp: i64,
        es: usize,
        new: *const u8,
        cmp: *const u8,
        old: *mut u8,
    ) -> bool {
        if !self.atomics || self.remote.is_some() || !(es == 4 || es == 8) {
            return false;
        }
        let Some(at) = self.mapped(r, disp, es).filter(|at| at % es == 0) else {
            return false;
        };
        if !all_host(&[new, cmp, old as *const u8], es) {
            return false;
        }
        // SAFETY: `at` is aligned window memory this process maps (checked
        // above); the three buffers hold `es` bytes (the caller's contract).
        unsafe { cas_word(at, es, new, cmp, old) };
        true
    }

    /// The address in target `r`'s process of the `n` bytes at
    /// displacement `disp`, where `r` is a rank of this node reached by
    /// single copy (its `MPI_Win_create` memory or the host memory it
    /// attached to a dynamic window: not mapped here, not device memory)
    /// and the bytes lie in its window memory: the single-copy fast paths'
    /// common check. None leaves
    /// the operation to the general path.
    #[inline]
    fn cma_at(&self, r: usize, disp: i64, n: usize) -> Option<usize> {
        let tg = self.targets.get(r)?;
        if tg.local.is_none()
            || tg.direct
            || tg.device
            || self.remote.is_some()
            || n == 0
            || n > CMA_PIECE
        {
            return None;
        }
        if self.flavor == MPI_WIN_FLAVOR_DYNAMIC {
            // An address of the target's: within one region of host memory
            // it attached, as its table in the segment has them (`place`'s
            // check; a table that overflowed leaves it to the general path).
            let at = tg.addr.checked_add(usize::try_from(disp).ok()?)?;
            let end = at.checked_add(n)?;
            // SAFETY: the segment is mapped for the window's life; the
            // local index is below the node's rank count.
            let t = unsafe { self.layout.attached(self.seg.base(), tg.local?) }?;
            // Acquire: pairs with the Release store of the overflow flag.
            if t.overflow.load(Ordering::Acquire) != 0 {
                return None;
            }
            let inside = t.regs.iter().any(|s| {
                // Acquire: pairs with the Release store of the length in
                // `attach_region`, after its address.
                let len = s[1].load(Ordering::Acquire) as usize;
                let base = s[0].load(Ordering::Relaxed) as usize;
                len > 0 && at >= base && end - base <= len
            });
            return inside.then_some(at);
        }
        tg.offset(disp, n).map(|off| tg.addr + off as usize)
    }

    /// A put (`put`) or get of `n` contiguous bytes of host memory at `buf`
    /// with displacement `disp` of target `r`, a rank of this node reached
    /// by single copy, gathered for the next flush to it (`CmaGather`);
    /// false, having done nothing, where that does not apply as things
    /// stand (the general path then takes it). Nothing is copied to the
    /// target here and nothing can fail.
    ///
    /// # Safety
    /// `buf` holds `n` bytes, readable for a put; for a get, writable
    /// until the next flush to `r` (MPI's rule for a get's buffer).
    #[inline(never)]
    pub unsafe fn cma_bytes(&self, r: usize, disp: i64, buf: *mut u8, n: usize, put: bool) -> bool {
        let Some(at) = self.cma_at(r, disp, n) else {
            return false;
        };
        if crate::gpu::classify(buf, n) != MemKind::Host {
            return false;
        }
        // SAFETY: forwarded contract.
        let done = unsafe { self.cma_gather(r, &[[at, n]], buf as usize, n, put, false) };
        matches!(done, Ok(true))
    }

    /// An accumulate (with `got`, a get-accumulate) of `n` contiguous bytes
    /// of basic elements at displacement `disp` of target `r`, a rank of
    /// this node reached by single copy, gathered as `cma_bytes` gathers a
    /// put (`AccList`); false, having done nothing, where that does not
    /// apply.
    ///
    /// # Safety
    /// `src` holds `n` readable bytes unless `a.op` is `MPI_NO_OP`; `got`,
    /// when not null, `n` writable ones until the next flush to `r`.
    #[inline(never)]
    pub unsafe fn cma_acc(
        &self,
        r: usize,
        disp: i64,
        a: AccOp,
        n: usize,
        src: *const u8,
        got: *mut u8,
    ) -> bool {
        if a.esize == 0 || elems(n, a.esize).1 != 0 {
            return false;
        }
        let Some(at) = self.cma_at(r, disp, n) else {
            return false;
        };
        if got.is_null() && a.op == MPI_NO_OP {
            return false;
        }
        // SAFETY: the caller's contract.
        let Some(data) = (unsafe { acc_operand(a, n, src, got) }) else {
            return false;
        };
        // SAFETY: forwarded contract.
        let done =
            unsafe { self.acc_gather(r, &[[at, n]], a, false, data, n, got as usize, false) };
        matches!(done, Ok(true))
    }

    /// A compare-and-swap of one `es`-byte element at displacement `disp`
    /// of target `r`, a rank of this node reached by single copy, gathered
    /// as `cma_acc` gathers an accumulate; false, having done nothing,
    /// where that does not apply.
    ///
    /// # Safety
    /// `new` and `cmp` hold `es` readable bytes; `old` `es` writable ones
    /// until the next flush to `r`.
    #[inline(never)]
    pub unsafe fn cma_cas(
        &self,
        r: usize,
        disp: i64,
        es: usize,
        new: *const u8,
        cmp: *const u8,
        old: *mut u8,
    ) -> bool {
        if es == 0 || es > 8 {
            return false;
        }
        let Some(at) = self.cma_at(r, disp, es) else {
            return false;
        };
        if !all_host(&[new, cmp, old as *const u8], es) {
            return false;
        }
        let mut data = [0u8; 16];
        // SAFETY: the caller's contract.
        unsafe {
            std::ptr::copy_nonoverlapping(new, data.as_mut_ptr(), es);
            std::ptr::copy_nonoverlapping(cmp, data.as_mut_ptr().add(es), es);
        }
        let a = net::cas_op(es);
        let d = &data[..2 * es];
        // SAFETY: forwarded contract.
        let done = unsafe { self.acc_gather(r, &[[at, es]], a, true, d, es, old as usize, false) };
        matches!(done, Ok(true))
    }

    /// The offset in target `r`'s window memory of the `n` bytes at
    /// displacement `disp`, where `r` is on another node, an epoch open
    /// here covers it without a wait (a fence, a lock or lock_all), and the
    /// bytes lie in its window memory (not a dynamic window's): the remote
    /// fast paths' common check. None leaves the operation to the general
    /// path, which reports what is wrong.
    #[inline]
    fn remote_off(&self, r: c_int, disp: i64, n: usize) -> Option<(&net::Remote, usize, u64)> {
        let net = self.remote.as_ref()?;
        let i = usize::try_from(r).ok()?;
        let tg = self.targets.get(i)?;
        let open = self.ep.fence
            || self.ep.lock_all.is_some()
            || self.ep.locks.get(i).is_some_and(Option::is_some);
        if !open || tg.local.is_some() || tg.device || self.flavor == MPI_WIN_FLAVOR_DYNAMIC {
            return None;
        }
        tg.offset(disp, n).map(|off| (net, i, off))
    }

    /// A put (`put`) or get of `n` contiguous bytes between host memory at
    /// `buf` and displacement `disp` of target `r` on another node, gathered
    /// into the request that the next flush to `r` sends
    /// (`net::Remote::gather_put`, `gather_get`); false, having done
    /// nothing, where that does not apply as things stand (the general
    /// path then takes it). Nothing is sent here and nothing can fail.
    ///
    /// # Safety
    /// `buf` holds `n` bytes, readable for a put; for a get, writable
    /// until the next flush to `r` (MPI's rule for a get's buffer).
    #[inline(never)]
    pub unsafe fn remote_bytes(
        &self,
        r: c_int,
        disp: i64,
        buf: *mut u8,
        n: usize,
        put: bool,
    ) -> bool {
        let Some((net, i, off)) = self.remote_off(r, disp, n) else {
            return false;
        };
        if n == 0 || crate::gpu::classify(buf, n) != MemKind::Host {
            return false;
        }
        if put {
            // SAFETY: the caller's contract.
            let data = unsafe { std::slice::from_raw_parts(buf, n) };
            self.stored.set(true);
            net.gather_put(i, off, data)
        } else {
            // SAFETY: forwarded contract.
            unsafe { net.gather_get(i, off, buf, n) }
        }
    }

    /// An accumulate (with `got`, a get-accumulate) of `n` contiguous bytes
    /// of basic elements at displacement `disp` of target `r` on another
    /// node, gathered as `remote_bytes` gathers a put
    /// (`net::Remote::gather_acc`; single elements that go as UCX's
    /// atomics take the general path); false, having done nothing, where
    /// that does not apply.
    ///
    /// # Safety
    /// `src` holds `n` readable bytes unless `a.op` is `MPI_NO_OP`; `got`,
    /// when not null, `n` writable ones until the next flush to `r`.
    #[inline(never)]
    pub unsafe fn remote_acc(
        &self,
        r: c_int,
        disp: i64,
        a: AccOp,
        n: usize,
        src: *const u8,
        got: *mut u8,
    ) -> bool {
        if a.esize == 0 || elems(n, a.esize).1 != 0 || self.intrinsic(a.esize, n) {
            return false;
        }
        let Some((net, i, off)) = self.remote_off(r, disp, n) else {
            return false;
        };
        // SAFETY: the caller's contract.
        let Some(data) = (unsafe { acc_operand(a, n, src, got) }) else {
            return false;
        };
        self.stored.set(true);
        // SAFETY: forwarded contract.
        unsafe { net.gather_acc(i, off, a, n, data, got) }
    }

    /// A compare-and-swap of one `es`-byte element at displacement `disp`
    /// of target `r` on another node, gathered as `remote_acc` gathers an
    /// accumulate (`net::Remote::gather_cas`); false, having done nothing,
    /// where that does not apply.
    ///
    /// # Safety
    /// `new` and `cmp` hold `es` readable bytes; `old` `es` writable ones
    /// until the next flush to `r`.
    #[inline(never)]
    pub unsafe fn remote_cas(
        &self,
        r: c_int,
        disp: i64,
        es: usize,
        new: *const u8,
        cmp: *const u8,
        old: *mut u8,
    ) -> bool {
        if es == 0 || es > 8 || self.intrinsic(es, es) {
            return false;
        }
        let Some((net, i, off)) = self.remote_off(r, disp, es) else {
            return false;
        };
        if !all_host(&[new, cmp, old as *const u8], es) {
            return false;
        }
        // SAFETY: the caller's contract.
        let (new, cmp) = unsafe {
            (
                std::slice::from_raw_parts(new, es),
                std::slice::from_raw_parts(cmp, es),
            )
        };
        self.stored.set(true);
        // SAFETY: forwarded contract.
        unsafe { net.gather_cas(i, off, new, cmp, old) }
    }

    /// Address of `count` elements of `t` at displacement `disp` of target
    /// `r`, checked against the window's bounds.
    pub fn place(&self, r: usize, disp: i64, t: &Type, count: usize) -> Result<usize> {
        let disp = disp as isize;
        let tg = self.target(r);
        let dynamic = self.flavor == MPI_WIN_FLAVOR_DYNAMIC;
        if disp < 0 && !dynamic {
            return Err(err!(
                MPI_ERR_DISP,
                "target_disp={disp} is negative (rank {r} of window {})",
                self.wname()
            ));
        }
        let off = disp.wrapping_mul(tg.unit as isize);
        if count == 0 || t.size == 0 {
            return Ok(tg.addr.wrapping_add_signed(off));
        }
        let lo = off as i128 + t.true_lb as i128;
        let hi = off as i128 + (count as i128 - 1) * t.extent() as i128 + t.true_ub as i128;
        if dynamic {
            let inside = |a: usize, n: usize| lo >= a as i128 && hi <= (a as i128 + n as i128);
            let ok = if r == self.rank {
                self.attached.iter().any(|&(a, n, _)| inside(a, n))
            } else if let Some(l) = tg.local {
                // Another rank of this node: its table in the segment (the
                // other nodes' targets check their own, `net`).
                // SAFETY: the segment is mapped for the window's life; l < n.
                let host = match unsafe { self.layout.attached(self.seg.base(), l) } {
                    // Acquire: pairs with the Release store of the overflow flag.
                    Some(t) if t.overflow.load(Ordering::Acquire) == 0 => t.regs.iter().any(|s| {
                        // Acquire: pairs with the Release store of the length
                        // in `attach_region`, after its address.
                        let n = s[1].load(Ordering::Acquire) as usize;
                        n > 0 && inside(s[0].load(Ordering::Relaxed) as usize, n)
                    }),
                    _ => true,
                };
                host || self.dev_region(l, inside).is_some()
            } else {
                true
            };
            if !ok {
                return Err(err!(
                    MPI_ERR_RMA_RANGE,
                    "target_disp=0x{:x}: bytes [0x{:x}, 0x{:x}) are not in memory attached to window {} at rank {r}",
                    disp,
                    lo,
                    hi,
                    self.wname()
                ));
            }
        } else if lo < 0 || hi > tg.size as i128 {
            return Err(err!(
                MPI_ERR_RMA_RANGE,
                "target_disp={disp} with target_count={count} reaches bytes [{lo}, {hi}) of rank {r}'s window memory, which has {} bytes (window {})",
                tg.size,
                self.wname()
            ));
        }
        Ok(tg.addr.wrapping_add_signed(off))
    }

    /// Copies the packed bytes `data` into `count` elements of `t` at `addr` of target `r`.
    ///
    /// # Safety
    /// `addr` came from `place` for these `t` and `count`.
    pub unsafe fn write(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        data: &[u8],
    ) -> Result<()> {
        self.stored.set(true);
        let tg = self.target(r);
        let rt = self.route(r, addr, t, count)?;
        let addr = rt.addr;
        if rt.direct && rt.device {
            // SAFETY: `place` checked the range lies in the window memory,
            // device memory this process reaches.
            return unsafe {
                crate::datatype::unpack_mem(t, count, data, addr as *mut u8, MemKind::Device)
            };
        }
        if rt.direct {
            if t.is_contiguous(count) {
                // SAFETY: `place` checked the range lies in the window memory.
                unsafe {
                    crate::sys::copy(
                        (addr as *mut u8).wrapping_offset(t.start()),
                        data.as_ptr(),
                        data.len(),
                    )
                };
            } else {
                // SAFETY: as above, element by element of the typemap.
                unsafe { crate::datatype::unpack(t, count, data, addr as *mut u8) };
            }
            return Ok(());
        }
        if let (None, Some(net)) = (tg.local, self.remote.as_ref()) {
            return net.put(r, &self.segs(t, count, addr, data.len()), data);
        }
        let segs = crate::datatype::segments(t, count, addr);
        let local = [[data.as_ptr() as usize, data.len()]];
        // SAFETY: `data` is readable; the kernel checks the target's ranges.
        unsafe { crate::sys::cma_writev(tg.pid, &segs, &local, data.len()) }
            .map_err(|e| self.cma_error(r, addr, e))
    }

    /// Packs `count` elements of `t` at `addr` of target `r` into `out`.
    ///
    /// # Safety
    /// As `write`.
    pub unsafe fn read(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let tg = self.target(r);
        let rt = self.route(r, addr, t, count)?;
        let addr = rt.addr;
        if rt.direct && rt.device {
            // SAFETY: as in `write`.
            return unsafe {
                crate::datatype::pack_mem(t, count, addr as *const u8, MemKind::Device, out)
            };
        }
        if rt.direct {
            if t.is_contiguous(count) {
                // SAFETY: `place` checked the range lies in the window memory.
                unsafe {
                    crate::sys::copy(
                        out.as_mut_ptr(),
                        (addr as *const u8).wrapping_offset(t.start()),
                        out.len(),
                    )
                };
            } else {
                // SAFETY: as above.
                unsafe { crate::datatype::pack(t, count, addr as *const u8, out) };
            }
            return Ok(());
        }
        if let (None, Some(net)) = (tg.local, self.remote.as_ref()) {
            return net.get(r, &self.segs(t, count, addr, out.len()), out);
        }
        let segs = crate::datatype::segments(t, count, addr);
        let local = [[out.as_mut_ptr() as usize, out.len()]];
        let n = out.len();
        // SAFETY: `out` is writable; the kernel checks the target's ranges.
        unsafe { crate::sys::cma_readv(tg.pid, &segs, &local, n) }
            .map_err(|e| self.cma_error(r, addr, e))
    }

    /// Starts packing `count` elements of `t` at `addr` of target `r`
    /// into the `n` bytes at `dst`, complete at the next flush of `r` (or
    /// the epoch's end); false, having done nothing, where the target is
    /// not reached that way (`net::Remote::get_later` to another node,
    /// single copy gathered for a rank of this node: `CmaGather`).
    ///
    /// # Safety
    /// As `read`; `dst` holds `n` writable bytes until then.
    pub unsafe fn read_later(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        dst: *mut u8,
        n: usize,
    ) -> Result<bool> {
        match (self.target(r).local, self.remote.as_ref()) {
            // SAFETY: forwarded contract.
            (None, Some(net)) => unsafe { net.get_later(r, &self.segs(t, count, addr, n), dst, n) },
            // SAFETY: forwarded contract.
            (Some(_), _) => unsafe { self.copy_later(r, addr, t, count, dst as usize, n, false) },
            _ => Ok(false),
        }
    }

    /// This rank attached `len` bytes of CUDA device memory at `base`
    /// (`ipc`: its reference) to its dynamic window: the node's other
    /// ranks find the region, and map it, through its table of device
    /// regions in the segment.
    /// (`ipc` None: the rank is alone on its node.)
    pub fn attach_device(&mut self, base: usize, len: usize, ipc: Option<&IpcRef>) -> Result<()> {
        // SAFETY: the segment is mapped for the window's life.
        let table = unsafe { self.layout.dev_attached(self.seg.base(), self.me_local) };
        if let (Some(t), Some(ipc)) = (table, ipc) {
            let Some(s) = t.regs.iter().find(|s| s.len.load(Ordering::Relaxed) == 0) else {
                return Err(err!(
                    MPI_ERR_RMA_ATTACH,
                    "base={base:#x}: {} regions of device memory are attached to window {} already, the most one rank may attach",
                    layout::DEV_SLOTS,
                    self.wname()
                ));
            };
            s.addr.store(base as u64, Ordering::Relaxed);
            let b = ipc.to_bytes();
            for (i, w) in s.ipc.iter().enumerate() {
                let mut x = [0u8; 8];
                let end = (8 * i + 8).min(b.len());
                x[..end - 8 * i].copy_from_slice(&b[8 * i..end]);
                w.store(u64::from_le_bytes(x), Ordering::Relaxed);
            }
            // Release: pairs with the Acquire load in `dev_region`: the
            // address and the reference are seen with the length.
            s.len.store(len as u64, Ordering::Release);
            // Release: pairs with the Acquire load in `dev_region`.
            t.used.fetch_add(1, Ordering::Release);
        }
        self.attached.push((base, len, true));
        Ok(())
    }

    /// This rank attached `len` bytes at `base` to its dynamic window: the
    /// node's other ranks see the region in its table of the segment.
    pub fn attach_region(&mut self, base: usize, len: usize) {
        self.attached.push((base, len, false));
        // SAFETY: the segment is mapped for the window's life.
        let Some(t) = (unsafe { self.layout.attached(self.seg.base(), self.me_local) }) else {
            return;
        };
        match t.regs.iter().find(|s| s[1].load(Ordering::Relaxed) == 0) {
            Some(s) => {
                s[0].store(base as u64, Ordering::Relaxed);
                // Release: pairs with the Acquire load in `place`: the
                // address is seen with the length.
                s[1].store(len as u64, Ordering::Release);
            }
            // Release: pairs with the Acquire load in `place`.
            None => t.overflow.store(1, Ordering::Release),
        }
    }

    /// This rank detached the region at `base` from its dynamic window.
    pub fn detach_region(&mut self, base: usize) {
        let device = self.attached.iter().any(|&(a, _, d)| a == base && d);
        self.attached.retain(|&(a, _, _)| a != base);
        if device {
            // SAFETY: as in `attach_region`.
            if let Some(t) = unsafe { self.layout.dev_attached(self.seg.base(), self.me_local) } {
                if let Some(s) = t.regs.iter().find(|s| {
                    s.len.load(Ordering::Relaxed) != 0
                        && s.addr.load(Ordering::Relaxed) == base as u64
                }) {
                    // Release: pairs with the Acquire load in `dev_region`.
                    s.len.store(0, Ordering::Release);
                    // Relaxed: a count that only lets origins skip the table.
                    t.used.fetch_sub(1, Ordering::Relaxed);
                }
            }
            return;
        }
        // SAFETY: as in `attach_region`.
        let Some(t) = (unsafe { self.layout.attached(self.seg.base(), self.me_local) }) else {
            return;
        };
        if let Some(s) = t.regs.iter().find(|s| {
            s[1].load(Ordering::Relaxed) != 0 && s[0].load(Ordering::Relaxed) == base as u64
        }) {
            // Release: pairs with the Acquire load in `place`.
            s[1].store(0, Ordering::Release);
        }
        // The table overflowed once: when the host regions fit again, it
        // is written anew and checked again. While the flag is still set
        // the origins do not read the slots.
        // Relaxed: only this rank writes its flag.
        if t.overflow.load(Ordering::Relaxed) == 0 {
            return;
        }
        let host: Vec<(usize, usize)> = self
            .attached
            .iter()
            .filter(|r| !r.2)
            .map(|&(a, n, _)| (a, n))
            .collect();
        if host.len() <= layout::ATTACH_SLOTS {
            for (i, s) in t.regs.iter().enumerate() {
                let (a, n) = host.get(i).copied().unwrap_or((0, 0));
                s[0].store(a as u64, Ordering::Relaxed);
                // Relaxed: published by the flag's Release store below.
                s[1].store(n as u64, Ordering::Relaxed);
            }
            // Release: pairs with the Acquire load of the flag in `place`,
            // which then sees the slots written above.
            t.overflow.store(0, Ordering::Release);
        }
    }

    /// The region of device memory attached by local rank `l` for which
    /// `hit(address, length)` holds: (its address there, its reference).
    fn dev_region(&self, l: usize, hit: impl Fn(usize, usize) -> bool) -> Option<(usize, IpcRef)> {
        // SAFETY: the segment is mapped for the window's life; l < n.
        let t = unsafe { self.layout.dev_attached(self.seg.base(), l) }?;
        // Acquire: pairs with the Release increment in `attach_device`.
        if t.used.load(Ordering::Acquire) == 0 {
            return None;
        }
        t.regs.iter().find_map(|s| {
            // Acquire: pairs with the Release store of the length in
            // `attach_device`, after the address and the reference.
            let n = s.len.load(Ordering::Acquire) as usize;
            let a = s.addr.load(Ordering::Relaxed) as usize;
            if n == 0 || !hit(a, n) {
                return None;
            }
            let mut b = [0u8; 8 * layout::IPC_WORDS];
            for (i, w) in s.ipc.iter().enumerate() {
                b[8 * i..8 * i + 8].copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            IpcRef::from_bytes(&b).map(|r| (a, r))
        })
    }

    /// Where the bytes of `count` elements of `t` at `addr` of target `r`
    /// (as `place` gave it) are reached from this process.
    fn route(&self, r: usize, addr: usize, t: &Type, count: usize) -> Result<Route> {
        if count == 0 || t.size == 0 {
            return Ok(self.plain_route(r, addr));
        }
        self.route_at(r, addr, addr.wrapping_add_signed(t.true_lb))
    }

    /// The target's own reach of `addr` (every window but a dynamic one's
    /// device regions).
    fn plain_route(&self, r: usize, addr: usize) -> Route {
        let tg = self.target(r);
        Route {
            addr,
            direct: tg.direct,
            device: tg.device,
            _pin: None,
        }
    }

    /// `route` of an operation at `addr` whose first byte is at `first`:
    /// a dynamic window's region of device memory is this rank's own, or
    /// another local rank's mapped by CUDA IPC (pinned in the mapping
    /// cache while the operation runs).
    fn route_at(&self, r: usize, addr: usize, first: usize) -> Result<Route> {
        let tg = self.target(r);
        let plain = self.plain_route(r, addr);
        if self.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            return Ok(plain);
        }
        let inside = |a: usize, n: usize| first >= a && first - a < n;
        if r == self.rank {
            let device = self.attached.iter().any(|&(a, n, d)| d && inside(a, n));
            return Ok(Route { device, ..plain });
        }
        let Some((a, rf)) = tg.local.and_then(|l| self.dev_region(l, inside)) else {
            return Ok(plain);
        };
        let world = tg.world as usize;
        let m = crate::gpu::ipc::pin(world, &rf)?;
        Ok(Route {
            addr: (m as usize).wrapping_add(addr.wrapping_sub(a)),
            direct: true,
            device: true,
            _pin: Some(Pinned(world, rf.id)),
        })
    }

    /// The target segments of `count` elements of `t` at `addr`, `n` bytes.
    fn segs(&self, t: &Type, count: usize, addr: usize, n: usize) -> Vec<[usize; 2]> {
        if t.is_contiguous(count) {
            vec![[addr.wrapping_add_signed(t.start()), n]]
        } else {
            crate::datatype::segments(t, count, addr)
        }
    }

    /// Rank `r`'s own address of `addr` (as `place` gave it), for UCX.
    fn their(&self, r: usize, addr: usize) -> u64 {
        let net = self.remote.as_ref().unwrap();
        net.their(r, self.target(r).addr, addr)
    }

    fn cma_error(&self, r: usize, addr: usize, e: std::io::Error) -> crate::base::error::Error {
        if e.raw_os_error() == Some(libc::EFAULT) {
            err!(
                MPI_ERR_RMA_RANGE,
                "address 0x{addr:x} of rank {r} is not mapped in that process (window {})",
                self.wname()
            )
        } else {
            err!(
                MPI_ERR_OTHER,
                "single copy with rank {r} (pid {}) failed: {e}; one-sided operations on MPI_Win_create memory need process_vm_readv/writev between the ranks of a node",
                self.target(r).pid,
            )
        }
    }

    /// Holds target `r`'s accumulate mutex while `f` runs.
    fn with_acc_lock<R>(&self, r: usize, f: impl FnOnce() -> Result<R>) -> Result<R> {
        if let Some(net) = self.remote.as_ref() {
            net.lock_acc(r)?;
            let res = f();
            let un = net.unlock_acc(r);
            return res.and_then(|v| un.map(|_| v));
        }
        self.local_acc_lock(self.target(r).local.unwrap(), f)
    }

    /// Holds local rank `l`'s accumulate mutex (in this node's segment)
    /// while `f` runs.
    #[inline]
    fn local_acc_lock<R>(&self, l: usize, f: impl FnOnce() -> R) -> R {
        // SAFETY: the segment is mapped for the window's life; l < n.
        let m = unsafe { self.layout.ctl(self.seg.base(), l) };
        let mut spins = 0u32;
        // Acquire: pairs with the Release store below by the previous
        // holder, so its writes to the target memory are seen.
        while m
            .acc
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                crate::sys::yield_now();
            }
        }
        let r = f();
        // Release: pairs with the Acquire exchange above of the next holder.
        m.acc.store(0, Ordering::Release);
        r
    }

    /// Accumulate of the packed origin elements `data` into `count`
    /// elements of `t` at `addr` of target `r`; with `fetch`, the target's
    /// elements before the operation are packed into it.
    ///
    /// # Safety
    /// As `write`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn accumulate(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        a: AccOp,
        data: &[u8],
        mut fetch: Option<&mut [u8]>,
    ) -> Result<()> {
        self.stored.set(true);
        let n = data.len().max(fetch.as_ref().map_or(0, |f| f.len()));
        if n == 0 {
            return Ok(());
        }
        if let Some(net) = self.remote.as_ref() {
            // Across nodes every accumulate takes the target's mutex (one
            // path for every element whatever the count), unless the window
            // said single elements may go as the fabric's atomics.
            if self.intrinsic(a.esize, n) {
                // SAFETY: forwarded contract.
                return unsafe { self.net_accumulate(r, addr, t, count, a, data, fetch) };
            }
            let segs = self.segs(t, count, addr, n);
            return net.accumulate(r, self.target(r).addr, &segs, a, data, fetch);
        } else if self.atomics && atomic_elem(a.elem) && self.target(r).direct {
            // Element by element with the CPU's atomics, at aligned addresses;
            // an element at an unaligned address (every access to it is) takes the mutex.
            let one;
            let many;
            let segs: &[[usize; 2]] = if t.is_contiguous(count) {
                one = [[addr.wrapping_add_signed(t.start()), n]];
                &one
            } else {
                many = crate::datatype::segments(t, count, addr);
                &many
            };
            let mut pos = 0usize;
            for &[sa, sl] in segs {
                let mut k = 0;
                while k + a.esize <= sl && pos + a.esize <= n {
                    let p = (sa + k) as *mut u8;
                    let src = data.get(pos..pos + a.esize).unwrap_or(&[]);
                    let got = fetch.as_deref_mut().map(|f| &mut f[pos..pos + a.esize]);
                    if (p as usize) % a.esize == 0 {
                        // SAFETY: `p` lies in mapped window memory, aligned to the element.
                        unsafe { atomic_apply(p, a, src, got) };
                    } else {
                        self.with_acc_lock(r, || {
                            // SAFETY: as above, without alignment: plain accesses under the mutex.
                            unsafe { locked_apply(p, a, src, got) };
                            Ok(())
                        })?;
                    }
                    pos += a.esize;
                    k += a.esize;
                }
            }
            return Ok(());
        }
        let rt = self.route(r, addr, t, count)?;
        let local = self.target(r).local;
        if let (true, false, true, Some(l)) = (rt.direct, rt.device, t.is_contiguous(count), local)
        {
            let at = (addr as *mut u8).wrapping_offset(t.start());
            // SAFETY: `place` checked that the `n` bytes from the data's
            // start lie in the window memory, which this process maps.
            unsafe { self.reduce_in_place(l, at, n, a, data, fetch) };
            return Ok(());
        }
        if let (false, false, Some(_), None) = (rt.direct, rt.device, local, self.remote.as_ref()) {
            // A rank of this node reached by single copy: a non-fetching
            // accumulate waits for the flush with the others gathered for
            // it; any other first applies those (MPI's ordering).
            if fetch.is_none() {
                let segs = crate::datatype::segments(t, count, rt.addr);
                // SAFETY: nothing is fetched.
                if unsafe { self.acc_gather(r, &segs, a, false, data, n, 0, true)? } {
                    return Ok(());
                }
            }
            self.acc_settle(r)?;
        }
        self.with_acc_lock(r, || {
            // The target's elements: on the stack when few.
            let mut small = [0u8; 256];
            let mut big = Vec::new();
            let cur: &mut [u8] = if n <= small.len() {
                &mut small[..n]
            } else {
                big.resize(n, 0);
                &mut big
            };
            // SAFETY: forwarded contract.
            unsafe { self.read(r, addr, t, count, cur)? };
            if let Some(f) = fetch {
                f.copy_from_slice(cur);
            }
            if a.op != MPI_NO_OP {
                crate::op::reduce_builtin(a.op, a.elem, elems(n, a.esize).0, data, cur);
                // SAFETY: forwarded contract.
                unsafe { self.write(r, addr, t, count, cur)? };
            }
            Ok(())
        })
    }

    /// Whether an accumulate of `n` bytes of `esize`-byte elements in a
    /// spanning window goes as the fabric's atomics: a single 4- or 8-byte
    /// element, where the window said `acc_single_intrinsic`.
    #[inline]
    fn intrinsic(&self, esize: usize, n: usize) -> bool {
        self.single_intrinsic && (esize == 4 || esize == 8) && n == esize
    }

    /// A get-accumulate as `accumulate`'s, its `n` fetched bytes going to
    /// `dst` at the next flush of `r` (or the epoch's end); false, having
    /// done nothing, where the target is not reached that way
    /// (`net::Remote::accumulate_later`; single elements as the fabric's
    /// atomics neither).
    ///
    /// # Safety
    /// As `write`; `dst` holds `n` writable bytes until then.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn accumulate_later(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        a: AccOp,
        data: &[u8],
        dst: *mut u8,
        n: usize,
    ) -> Result<bool> {
        let Some(net) = self.remote.as_ref() else {
            // A rank of this node reached by single copy (`AccList`).
            return match self.cma_segs(r, addr, t, count)? {
                // SAFETY: forwarded contract.
                Some(segs) if n > 0 => unsafe {
                    self.acc_gather(r, &segs, a, false, data, n, dst as usize, true)
                },
                _ => Ok(false),
            };
        };
        if n == 0 || self.intrinsic(a.esize, n) {
            return Ok(false);
        }
        self.stored.set(true);
        let segs = self.segs(t, count, addr, n);
        // SAFETY: forwarded contract.
        unsafe { net.accumulate_later(r, self.target(r).addr, &segs, a, data, dst, n) }
    }

    /// A compare-and-swap as `compare_swap`'s, the old element going to
    /// `dst` at the next flush of `r` (or the epoch's end); false, having
    /// done nothing, where the target is not reached that way.
    ///
    /// # Safety
    /// As `write`; `dst` holds `new.len()` writable bytes until then.
    pub unsafe fn compare_swap_later(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        new: &[u8],
        cmp: &[u8],
        dst: *mut u8,
    ) -> Result<bool> {
        let es = new.len();
        let Some(net) = self.remote.as_ref() else {
            // A rank of this node reached by single copy (`AccList`).
            let Some(segs) = self.cma_segs(r, addr, t, 1)? else {
                return Ok(false);
            };
            let mut data = new.to_vec();
            data.extend_from_slice(cmp);
            let a = net::cas_op(es);
            // SAFETY: forwarded contract.
            return unsafe { self.acc_gather(r, &segs, a, true, &data, es, dst as usize, true) };
        };
        if self.intrinsic(es, es) && addr % es == 0 {
            return Ok(false);
        }
        self.stored.set(true);
        let segs = self.segs(t, 1, addr, es);
        // SAFETY: forwarded contract.
        unsafe { net.compare_swap_later(r, self.target(r).addr, &segs, new, cmp, dst) }
    }

    /// Compare-and-swap of one element of `esize` bytes at `addr` of target
    /// `r`: `old` gets the element; it becomes `new` when it equalled `cmp`.
    ///
    /// # Safety
    /// As `write`.
    pub unsafe fn compare_swap(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        new: &[u8],
        cmp: &[u8],
        old: &mut [u8],
    ) -> Result<()> {
        self.stored.set(true);
        let es = new.len();
        if let (Some(net), true) = (
            self.remote.as_ref(),
            self.intrinsic(es, es) && addr % es == 0,
        ) {
            let v = |b: &[u8]| {
                let mut x = [0u8; 8];
                x[..es].copy_from_slice(b);
                u64::from_le_bytes(x)
            };
            let o = net.cswap(r, es, v(cmp), v(new), self.their(r, addr))?;
            old.copy_from_slice(&o.to_le_bytes()[..es]);
            return Ok(());
        }
        if let Some(net) = self.remote.as_ref() {
            let segs = self.segs(t, 1, addr, es);
            return net.compare_swap(r, self.target(r).addr, &segs, new, cmp, old);
        }
        if self.remote.is_none()
            && self.atomics
            && (es == 4 || es == 8)
            && self.target(r).direct
            && addr % es == 0
        {
            // SAFETY: aligned, mapped window memory; `new`, `cmp` and `old`
            // hold `es` bytes each (`old` is as long as `new`).
            unsafe { cas_word(addr, es, new.as_ptr(), cmp.as_ptr(), old.as_mut_ptr()) };
            return Ok(());
        }
        if self.remote.is_none() {
            self.acc_settle(r)?;
        }
        self.with_acc_lock(r, || {
            // SAFETY: forwarded contract.
            unsafe { self.read(r, addr, t, 1, old)? };
            if old == cmp {
                // SAFETY: forwarded contract.
                unsafe { self.write(r, addr, t, 1, new)? };
            }
            Ok(())
        })
    }

    /// A single-element accumulate on a 4- or 8-byte element (integer,
    /// float, complex float, pair) in a spanning window with
    /// `acc_single_intrinsic`: UCX's fetching atomics (replace, and on
    /// integers sum, and, or and xor, directly; the other ops as
    /// compare-and-swap rounds); an element at an unaligned address takes
    /// the mutex (every access to it does). Written for any number of
    /// elements, all issued before any is waited for (the fabric's message
    /// rate then decides: over tcp here each costs about 12 us, so longer
    /// accumulates take the mutex and one get and put instead).
    ///
    /// # Safety
    /// As `write`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn net_accumulate(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        a: AccOp,
        data: &[u8],
        mut fetch: Option<&mut [u8]>,
    ) -> Result<()> {
        let net = self.remote.as_ref().unwrap();
        let es = a.esize;
        let n = data.len().max(fetch.as_ref().map_or(0, |f| f.len()));
        let le = |b: &[u8]| {
            let mut x = [0u8; 8];
            x[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(x)
        };
        let (mut elems, mut at, mut odd) = (Vec::new(), Vec::new(), Vec::new());
        let mut pos = 0usize;
        for [sa, sl] in self.segs(t, count, addr, n) {
            let mut k = 0;
            while k + es <= sl && pos + es <= n {
                let p = sa + k;
                let v = data.get(pos..pos + es).map_or(0, le);
                if p % es == 0 {
                    elems.push((v, self.their(r, p)));
                    at.push(pos);
                } else {
                    odd.push((p, pos));
                }
                pos += es;
                k += es;
            }
        }
        let int = atomic_elem(a.elem);
        let direct = match a.op {
            MPI_REPLACE => Some(Amo::Swap),
            // Adding integer 0 reads any element's bits unchanged.
            MPI_NO_OP => Some(Amo::Add),
            MPI_SUM if int => Some(Amo::Add),
            MPI_BAND if int => Some(Amo::And),
            MPI_BOR if int => Some(Amo::Or),
            MPI_BXOR if int => Some(Amo::Xor),
            _ => None,
        };
        let mask = if es == 8 { u64::MAX } else { 0xffff_ffff };
        if let Some(op) = direct {
            if a.op == MPI_NO_OP {
                elems.iter_mut().for_each(|e| e.0 = 0);
            }
            if !elems.is_empty() {
                net.atomics(r, op, es, &mut elems)?;
            }
        } else if !elems.is_empty() {
            // Read every element, reduce, compare-and-swap every one at
            // once; those another origin changed meanwhile go round again.
            let mut cur: Vec<(u64, u64)> = elems.iter().map(|e| (0, e.1)).collect();
            net.atomics(r, Amo::Add, es, &mut cur)?;
            let mut todo: Vec<usize> = (0..elems.len()).collect();
            while !todo.is_empty() {
                let mut ops: Vec<(u64, u64, u64)> = todo
                    .iter()
                    .map(|&i| {
                        let c = cur[i].0 & mask;
                        let mut b = c.to_le_bytes();
                        crate::op::reduce_builtin(
                            a.op,
                            a.elem,
                            1,
                            &elems[i].0.to_le_bytes()[..es],
                            &mut b[..es],
                        );
                        (c, u64::from_le_bytes(b) & mask, elems[i].1)
                    })
                    .collect();
                net.cswaps(r, es, &mut ops)?;
                let mut again = Vec::new();
                for (&i, o) in todo.iter().zip(&ops) {
                    if o.1 != o.0 {
                        cur[i].0 = o.1;
                        again.push(i);
                    }
                }
                todo = again;
            }
            for (e, c) in elems.iter_mut().zip(&cur) {
                e.0 = c.0 & mask;
            }
        }
        if let Some(f) = fetch.as_deref_mut() {
            for (e, &p) in elems.iter().zip(&at) {
                f[p..p + es].copy_from_slice(&e.0.to_le_bytes()[..es]);
            }
        }
        if odd.is_empty() {
            return Ok(());
        }
        self.with_acc_lock(r, || {
            for &(p, pos) in &odd {
                let mut cur = vec![0u8; es];
                self.raw(r, p, &mut cur, false)?;
                if let Some(f) = fetch.as_deref_mut() {
                    f[pos..pos + es].copy_from_slice(&cur);
                }
                if a.op != MPI_NO_OP {
                    crate::op::reduce_builtin(a.op, a.elem, 1, &data[pos..pos + es], &mut cur);
                    self.raw(r, p, &mut cur, true)?;
                }
            }
            Ok(())
        })
    }

    /// Reads (`write` false) or writes `buf` at address `p` of target `r`
    /// (as `place` gives addresses).
    fn raw(&self, r: usize, p: usize, buf: &mut [u8], write: bool) -> Result<()> {
        if write {
            self.stored.set(true);
        }
        let tg = self.target(r);
        let seg = [[p, buf.len()]];
        if let (None, Some(net)) = (tg.local, self.remote.as_ref()) {
            return if write {
                net.put(r, &seg, buf)
            } else {
                net.get(r, &seg, buf)
            };
        }
        let rt = self.route_at(r, p, p)?;
        let p = rt.addr;
        if rt.direct && rt.device {
            // SAFETY: `p` lies in device window memory this process
            // reaches (`place`); `buf` holds its bytes.
            return unsafe {
                if write {
                    crate::gpu::copy(p as *mut u8, buf.as_ptr(), buf.len())
                } else {
                    crate::gpu::copy(buf.as_mut_ptr(), p as *const u8, buf.len())
                }
            };
        }
        if rt.direct {
            // SAFETY: `p` lies in window memory this process maps (`place`).
            unsafe {
                if write {
                    crate::sys::copy(p as *mut u8, buf.as_ptr(), buf.len())
                } else {
                    crate::sys::copy(buf.as_mut_ptr(), p as *const u8, buf.len())
                }
            }
            return Ok(());
        }
        let local = [[buf.as_mut_ptr() as usize, buf.len()]];
        // SAFETY: `buf` is valid; the kernel checks the target's ranges.
        unsafe {
            if write {
                crate::sys::cma_writev(tg.pid, &seg, &local, buf.len())
            } else {
                crate::sys::cma_readv(tg.pid, &seg, &local, buf.len())
            }
        }
        .map_err(|e| self.cma_error(r, p, e))
    }

    /// Local rank `i`'s passive-target lock word.
    fn lock_word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: the segment is mapped for the window's life; i < n.
        &unsafe { self.layout.ctl(self.seg.base(), i) }.lock
    }

    /// Takes target `r`'s lock (MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE).
    pub fn acquire(&self, r: usize, exclusive: bool) -> Result<()> {
        if let Some(net) = self.remote.as_ref() {
            return net_acquire(net, r, exclusive);
        }
        let w = self.lock_word(self.target(r).local.unwrap());
        // Acquire: pairs with the Release in `release` by the previous
        // holder, whose accesses to the target then happen before ours.
        let try_take = || {
            let v = w.load(Ordering::Relaxed);
            if exclusive {
                v == 0
                    && w.compare_exchange(0, EXCL, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
            } else {
                v & EXCL == 0
                    && w.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
            }
        };
        wait_until(try_take)
    }

    pub fn release(&self, r: usize, exclusive: bool) -> Result<()> {
        if let Some(net) = self.remote.as_ref() {
            fence(Ordering::SeqCst);
            net.flush(Some(r))?;
            return if exclusive {
                net.ctl_post(r, net::LOCK, Amo::And, !EXCL)
            } else {
                net.ctl_post(r, net::LOCK, Amo::Add, u64::MAX)
            };
        }
        let w = self.lock_word(self.target(r).local.unwrap());
        // Release: pairs with the Acquire in `acquire` of the next holder.
        if exclusive {
            w.fetch_and(!EXCL, Ordering::Release);
        } else {
            w.fetch_sub(1, Ordering::Release);
        }
        Ok(())
    }

    /// Target rank `r` of a fast path: a rank of this window mapped here
    /// (no other host), in a passive epoch (lock or lock_all) that covers
    /// it; None otherwise (the general path reports or handles it).
    #[inline(always)]
    pub fn ready(&self, r: c_int) -> Option<usize> {
        let i = usize::try_from(r).ok()?;
        let t = self.targets.get(i)?;
        (self.remote.is_none()
            && t.local.is_some()
            && (self.ep.lock_all.is_some() || self.ep.locks.get(i).is_some_and(Option::is_some)))
        .then_some(i)
    }

    /// `settle` of a window on this node (None: one with ranks elsewhere).
    #[inline(always)]
    pub fn settle_local(&self) -> Option<()> {
        if self.remote.is_some() || self.cma.any.get() {
            return None;
        }
        self.fence_stores();
        Some(())
    }

    /// The plain stores into window memory made since the last call are
    /// complete (for every observer) before this process's later accesses.
    #[inline(always)]
    fn fence_stores(&self) {
        if self.stored.replace(false) {
            // SeqCst: orders this process's stores into window memory before
            // its later loads and stores; pairs with the target's fence in
            // MPI_Win_sync and the Acquire side of whatever synchronizes the
            // two next (a message ring, a lock word, a barrier).
            fence(Ordering::SeqCst);
        }
    }

    /// Puts to rank `r` (all: None) are complete at the target (flush).
    pub fn settle(&self, r: Option<usize>) -> Result<()> {
        let copied = self.cma_drain(r);
        self.fence_stores();
        let flushed = match self.remote.as_ref() {
            Some(net) => net.flush(r),
            None => Ok(()),
        };
        copied.and(flushed)
    }

    /// Target `r`'s gathered single copies, for adding to (None where `r`
    /// is not a window rank, or the gathering is in use: the caller then
    /// does not gather).
    fn batch_of(&self, r: usize) -> Option<std::cell::RefMut<'_, CmaBatch>> {
        let mut per = self.cma.per.try_borrow_mut().ok()?;
        if per.len() <= r {
            per.resize_with(self.targets.len(), Default::default);
        }
        std::cell::RefMut::filter_map(per, |p| p.get_mut(r)).ok()
    }

    /// A put (`put`, of the `n` bytes at `local`, copied now) or get (into
    /// `local`) with the target segments `segs` of rank `r`, a rank of this
    /// node reached by single copy, gathered for its next flush
    /// (`CmaGather`); false, having done nothing, where it is too large to
    /// gather. With `issue` false (the fast entries), also false where the
    /// pieces gathered before would first have to be made: then nothing is
    /// sent and nothing can fail.
    ///
    /// # Safety
    /// The `n` bytes at `local` are readable (a put), or writable until
    /// that flush (a get).
    unsafe fn cma_gather(
        &self,
        r: usize,
        segs: &[[usize; 2]],
        local: usize,
        n: usize,
        put: bool,
        issue: bool,
    ) -> Result<bool> {
        if n == 0 || n > CMA_PIECE || segs.len() > CMA_SEGS || r >= self.targets.len() {
            return Ok(false);
        }
        let Some(mut b) = self.batch_of(r) else {
            return Ok(false);
        };
        let b = &mut *b;
        let list = if put { &mut b.put } else { &mut b.get };
        if list.remote.len() + segs.len() > CMA_SEGS
            || list.local.len() >= CMA_SEGS
            || list.bytes + n > 16 * CMA_PIECE
        {
            if !issue {
                return Ok(false);
            }
            // SAFETY: the gathered pieces are valid until the flush (the
            // contract of the calls that gathered them).
            unsafe { self.cma_issue(r, list, put)? };
        }
        if put {
            self.stored.set(true);
        }
        // Both sides are byte streams (the kernel pairs them byte for
        // byte), so a piece that continues the one before is merged with it:
        // the kernel pins each target segment's pages apart, about 0.4 us a
        // segment here.
        for &sg in segs {
            push_range(&mut list.remote, sg);
        }
        if put {
            // SAFETY: the caller's contract.
            list.data
                .extend_from_slice(unsafe { std::slice::from_raw_parts(local as *const u8, n) });
        } else {
            push_range(&mut list.local, [local, n]);
        }
        list.bytes += n;
        self.cma.any.set(true);
        Ok(true)
    }

    /// Makes the single copies gathered in `list` for rank `r` and empties it.
    ///
    /// # Safety
    /// Its local pieces are valid as `cma_gather`'s contract says.
    unsafe fn cma_issue(&self, r: usize, list: &mut CmaList, put: bool) -> Result<()> {
        if list.bytes == 0 {
            return Ok(());
        }
        let pid = self.target(r).pid;
        // SAFETY: forwarded contract (a put's bytes are `data`'s); the
        // kernel checks the target's ranges.
        let done = unsafe {
            if put {
                let data = [[list.data.as_ptr() as usize, list.data.len()]];
                crate::sys::cma_writev(pid, &list.remote, &data, list.bytes)
            } else {
                crate::sys::cma_readv(pid, &list.remote, &list.local, list.bytes)
            }
        };
        let at = list.remote.first().map_or(0, |s| s[0]);
        list.remote.clear();
        list.local.clear();
        list.data.clear();
        list.bytes = 0;
        done.map_err(|e| self.cma_error(r, at, e))
    }

    /// Makes the single copies gathered for rank `r` (all: None): puts,
    /// then gets. Every target's are made even when one fails (the first
    /// error is returned).
    fn cma_drain(&self, r: Option<usize>) -> Result<()> {
        if !self.cma.any.get() {
            return Ok(());
        }
        let mut per = self.cma.per.borrow_mut();
        let mut first = Ok(());
        for (t, b) in per.iter_mut().enumerate() {
            if r.is_some_and(|r| r != t) {
                continue;
            }
            // SAFETY: gathered by `cma_gather` and `acc_gather`, valid until
            // this flush.
            let done = unsafe { self.cma_issue(t, &mut b.put, true) }
                .and(unsafe { self.cma_issue(t, &mut b.get, false) })
                .and(unsafe { self.acc_issue(t, &mut b.acc) });
            if let (Err(e), true) = (done, first.is_ok()) {
                first = Err(e);
            }
        }
        self.cma.any.set(per.iter().any(|b| !b.is_empty()));
        first
    }

    /// An accumulate (`cas`: a compare-and-swap, `data` its new then its
    /// compare value) with op `a` of `n` bytes on the target segments
    /// `segs` of rank `r`, a rank of this node reached by single copy,
    /// gathered for its next flush (`AccList`); `dst` (0: none) gets the
    /// old elements then. False, having done nothing, where it is too
    /// large to gather; with `issue` false (the fast entries), also where
    /// the operations gathered before would first have to be applied: then
    /// nothing is done and nothing can fail.
    ///
    /// # Safety
    /// `dst`, when not 0, holds `n` writable bytes until that flush.
    #[allow(clippy::too_many_arguments)]
    unsafe fn acc_gather(
        &self,
        r: usize,
        segs: &[[usize; 2]],
        a: AccOp,
        cas: bool,
        data: &[u8],
        n: usize,
        dst: usize,
        issue: bool,
    ) -> Result<bool> {
        if n == 0
            || n > CMA_PIECE
            || segs.len() > CMA_SEGS
            || (a.esize == 0 && !cas)
            || r >= self.targets.len()
        {
            return Ok(false);
        }
        let Some(mut b) = self.batch_of(r) else {
            return Ok(false);
        };
        let list = &mut b.acc;
        if list.ops.len() >= CMA_SEGS
            || list.segs.len() + segs.len() > CMA_SEGS
            || list.data.len() + data.len() > 16 * CMA_PIECE
        {
            if !issue {
                return Ok(false);
            }
            // SAFETY: the gathered operations' result buffers are valid
            // until the flush (the contract of the calls that gathered them).
            unsafe { self.acc_issue(r, list)? };
        }
        let at = list.segs.len();
        list.segs.extend_from_slice(segs);
        list.ops.push(AccPiece {
            a,
            cas,
            segs: at..list.segs.len(),
            data: list.data.len(),
            dst,
        });
        list.data.extend_from_slice(data);
        self.stored.set(true);
        self.cma.any.set(true);
        Ok(true)
    }

    /// Applies the operations gathered in `list` for rank `r` (`AccList`)
    /// and empties it.
    ///
    /// # Safety
    /// Their result buffers are valid as `acc_gather`'s contract says.
    unsafe fn acc_issue(&self, r: usize, list: &mut AccList) -> Result<()> {
        if list.ops.is_empty() {
            return Ok(());
        }
        // The union of the target ranges, each with its offset in the image.
        let mut union: Vec<[usize; 2]> = list.segs.clone();
        union.sort_unstable_by_key(|s| s[0]);
        let mut merged: Vec<[usize; 2]> = Vec::with_capacity(union.len());
        for s in union {
            match merged.last_mut() {
                Some(p) if s[0] <= p[0] + p[1] => p[1] = p[1].max(s[0] + s[1] - p[0]),
                _ => merged.push(s),
            }
        }
        let mut offs = Vec::with_capacity(merged.len());
        let mut total = 0usize;
        for m in &merged {
            offs.push(total);
            total += m[1];
        }
        let pid = self.target(r).pid;
        let mut image = vec![0u8; total];
        let at = merged.first().map_or(0, |m| m[0]);
        let done = self.with_acc_lock(r, || {
            let whole = [[image.as_mut_ptr() as usize, total]];
            // SAFETY: `image` holds `total` bytes; the kernel checks the
            // target's ranges.
            unsafe { crate::sys::cma_readv(pid, &merged, &whole, total) }
                .map_err(|e| self.cma_error(r, at, e))?;
            // Written back only where something changed it (a run of
            // fetches, or of compare-and-swaps that all failed, writes nothing).
            let mut changed = false;
            for o in &list.ops {
                let mut d = o.data;
                let mut got = o.dst;
                for s in &list.segs[o.segs.clone()] {
                    // The merged range holding this segment, wholly.
                    let i = merged.partition_point(|m| m[0] <= s[0]) - 1;
                    let off = offs[i] + (s[0] - merged[i][0]);
                    let cur = &mut image[off..off + s[1]];
                    if got != 0 {
                        // SAFETY: the result buffer holds the operation's
                        // bytes (`acc_gather`'s contract), its segments'
                        // lengths in all.
                        unsafe {
                            std::ptr::copy_nonoverlapping(cur.as_ptr(), got as *mut u8, s[1])
                        };
                        got += s[1];
                    }
                    if o.cas {
                        let (nv, cmp) =
                            (&list.data[d..d + s[1]], &list.data[d + s[1]..d + 2 * s[1]]);
                        if *cur == *cmp {
                            cur.copy_from_slice(nv);
                            changed = true;
                        }
                    } else if o.a.op != MPI_NO_OP {
                        changed = true;
                        let e = elems(s[1], o.a.esize).0;
                        crate::op::reduce_builtin(
                            o.a.op,
                            o.a.elem,
                            e,
                            &list.data[d..d + s[1]],
                            cur,
                        );
                        d += s[1];
                    }
                }
            }
            if changed {
                // SAFETY: as for the read above.
                unsafe { crate::sys::cma_writev(pid, &merged, &whole, total) }
                    .map_err(|e| self.cma_error(r, at, e))?;
            }
            Ok(())
        });
        list.ops.clear();
        list.segs.clear();
        list.data.clear();
        done
    }

    /// Applies the accumulates gathered for rank `r` now: before an
    /// accumulate on it that is not gathered (MPI orders an origin's
    /// accumulates to one location).
    fn acc_settle(&self, r: usize) -> Result<()> {
        if !self.cma.any.get() {
            return Ok(());
        }
        let mut per = self.cma.per.borrow_mut();
        match per.get_mut(r) {
            // SAFETY: gathered by `acc_gather`, valid until a flush.
            Some(b) => unsafe { self.acc_issue(r, &mut b.acc) },
            None => Ok(()),
        }
    }

    /// Whether rank `r` is reached by single copy for the `count` elements
    /// of `t` at `addr` (a rank of this node whose window memory this
    /// process does not map, host memory): the target segments then.
    fn cma_segs(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
    ) -> Result<Option<Vec<[usize; 2]>>> {
        if self.target(r).local.is_none() || self.remote.is_some() {
            return Ok(None);
        }
        let rt = self.route(r, addr, t, count)?;
        if rt.direct || rt.device {
            return Ok(None);
        }
        Ok(Some(crate::datatype::segments(t, count, rt.addr)))
    }

    /// `write` of the packed `data` (copied now), gathered for the next
    /// flush of `r` where `r` is a rank of this node reached by single copy
    /// (`CmaGather`); false, having done nothing, otherwise.
    ///
    /// # Safety
    /// As `write`.
    pub unsafe fn write_later(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        data: &[u8],
    ) -> Result<bool> {
        // SAFETY: forwarded contract.
        unsafe { self.copy_later(r, addr, t, count, data.as_ptr() as usize, data.len(), true) }
    }

    /// `write_later`'s and `read_later`'s single copy.
    ///
    /// # Safety
    /// As theirs.
    #[allow(clippy::too_many_arguments)]
    unsafe fn copy_later(
        &self,
        r: usize,
        addr: usize,
        t: &Type,
        count: usize,
        local: usize,
        n: usize,
        put: bool,
    ) -> Result<bool> {
        if self.target(r).local.is_none() || n == 0 || n > CMA_PIECE {
            return Ok(false);
        }
        let rt = self.route(r, addr, t, count)?;
        if rt.direct || rt.device || crate::gpu::classify(local as *const u8, n) != MemKind::Host {
            return Ok(false);
        }
        let segs = crate::datatype::segments(t, count, rt.addr);
        // SAFETY: forwarded contract.
        unsafe { self.cma_gather(r, &segs, local, n, put, true) }
    }

    /// MPI_Win_post to the window ranks `origins`.
    pub fn post(&mut self, origins: Vec<usize>) -> Result<()> {
        if self.ep.post.is_some() {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "an exposure epoch is already open on window {} (MPI_Win_post without MPI_Win_wait)",
                self.wname()
            ));
        }
        for &o in &origins {
            self.check_rank(o as c_int)?;
        }
        fence(Ordering::SeqCst);
        if let Some(net) = self.remote.as_ref() {
            for &o in &origins {
                net.ctl_post(o, net.post_word(self.rank), Amo::Add, 1)?;
                self.ep.posted[o] += 1;
            }
            self.ep.post = Some(origins);
            return Ok(());
        }
        for &o in &origins {
            let lo = self.target(o).local.unwrap();
            // SAFETY: the segment is mapped for the window's life.
            let c = unsafe {
                self.layout
                    .counter(self.seg.base(), false, self.me_local, lo)
            };
            // Release: pairs with the Acquire load in `see_post` at origin `o`.
            c.fetch_add(1, Ordering::Release);
            self.ep.posted[o] += 1;
        }
        self.ep.post = Some(origins);
        Ok(())
    }

    /// MPI_Win_start with the window ranks `targets`.
    pub fn start(&mut self, targets: Vec<usize>) -> Result<()> {
        if self.ep.start.is_some() {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "an access epoch is already open on window {} (MPI_Win_start without MPI_Win_complete)",
                self.wname()
            ));
        }
        for &t in &targets {
            self.check_rank(t as c_int)?;
            self.ep.start_seen[t] = false;
        }
        self.ep.start = Some(targets);
        Ok(())
    }

    /// MPI_Win_complete.
    pub fn complete(&mut self) -> Result<()> {
        let Some(g) = self.ep.start.clone() else {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "no access epoch was started on window {} (MPI_Win_complete without MPI_Win_start)",
                self.wname()
            ));
        };
        for &t in &g {
            if !self.ep.start_seen[t] {
                self.see_post(t)?;
            }
        }
        self.cma_drain(None)?;
        fence(Ordering::SeqCst);
        if let Some(net) = self.remote.as_ref() {
            net.flush(None)?;
            for &t in &g {
                net.ctl_post(t, net.complete_word(self.rank), Amo::Add, 1)?;
            }
            self.ep.start = None;
            return Ok(());
        }
        for &t in &g {
            let lt = self.target(t).local.unwrap();
            // SAFETY: the segment is mapped for the window's life.
            let c = unsafe {
                self.layout
                    .counter(self.seg.base(), true, lt, self.me_local)
            };
            // Release: pairs with the Acquire load in `exposure_done` at target `t`.
            c.fetch_add(1, Ordering::Release);
        }
        self.ep.start = None;
        Ok(())
    }

    /// Every origin of the exposure epoch has completed (MPI_Win_wait/test).
    pub fn exposure_done(&self) -> Result<bool> {
        let Some(g) = self.ep.post.as_ref() else {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "no exposure epoch is open on window {} (MPI_Win_wait or MPI_Win_test without MPI_Win_post)",
                self.wname()
            ));
        };
        if let Some(net) = self.remote.as_ref() {
            return Ok(g.iter().all(|&o| {
                // Acquire: pairs with the origin's flush and SeqCst fence
                // before its complete (written by UCX on its behalf).
                net.word(net.complete_word(o)).load(Ordering::Acquire) >= self.ep.posted[o] as u64
            }));
        }
        Ok(g.iter().all(|&o| {
            let lo = self.target(o).local.unwrap();
            // SAFETY: the segment is mapped for the window's life.
            let c = unsafe {
                self.layout
                    .counter(self.seg.base(), true, self.me_local, lo)
            };
            // Acquire: pairs with the Release increment in `complete` at origin `o`.
            c.load(Ordering::Acquire) >= self.ep.posted[o]
        }))
    }

    /// Any epoch still open at this rank (for MPI_Win_free), named.
    pub fn open_epoch(&self) -> Option<&'static str> {
        if self.ep.lock_all.is_some() || self.ep.locks.iter().any(Option::is_some) {
            Some("a passive-target lock is held (MPI_Win_unlock / MPI_Win_unlock_all first)")
        } else if self.ep.start.is_some() {
            Some("an access epoch is open (MPI_Win_complete first)")
        } else if self.ep.post.is_some() {
            Some("an exposure epoch is open (MPI_Win_wait first)")
        } else {
            None
        }
    }
}

/// Takes rank `r`'s passive-target lock through UCX (spanning windows):
/// exclusive by compare-and-swap from free, shared by compare-and-swap of
/// the holders' count while no exclusive holder has it.
fn net_acquire(net: &net::Remote, r: usize, exclusive: bool) -> Result<()> {
    let try_take = || -> Result<bool> {
        Ok(if exclusive {
            net.ctl_cswap(r, net::LOCK, 0, EXCL)? == 0
        } else {
            let v = net.ctl_op(r, net::LOCK, Amo::Add, 0)?;
            v & EXCL == 0 && net.ctl_cswap(r, net::LOCK, v, v + 1)? == v
        })
    };
    let taken = if try_take()? {
        Ok(())
    } else {
        crate::core::runtime::wait_for(|_| Ok(try_take()?.then_some(())))
    };
    // SeqCst: this rank's accesses to the target's memory by load and
    // store come after the lock (the holder's fence in `release` pairs).
    fence(Ordering::SeqCst);
    taken
}

/// Compare-and-swap of the 4- or 8-byte word at `at` by the CPU's atomic
/// instruction: `old` gets the word; it becomes `new` when it equalled
/// `cmp`.
///
/// # Safety
/// `at` is aligned window memory this process maps; `new`, `cmp` and `old`
/// hold `es` bytes each, `old` writable.
unsafe fn cas_word(at: usize, es: usize, new: *const u8, cmp: *const u8, old: *mut u8) {
    // AcqRel: pairs with the other origins' atomics on this word and,
    // through the epoch's synchronization, the target's own accesses.
    // SAFETY: the caller's contract.
    unsafe {
        if es == 8 {
            let w = AtomicU64::from_ptr(at as *mut u64);
            let (c, v) = (
                std::ptr::read_unaligned(cmp as *const u64),
                std::ptr::read_unaligned(new as *const u64),
            );
            let (Ok(o) | Err(o)) = w.compare_exchange(c, v, Ordering::AcqRel, Ordering::Acquire);
            std::ptr::write_unaligned(old as *mut u64, o);
        } else {
            let w = AtomicU32::from_ptr(at as *mut u32);
            let (c, v) = (
                std::ptr::read_unaligned(cmp as *const u32),
                std::ptr::read_unaligned(new as *const u32),
            );
            let (Ok(o) | Err(o)) = w.compare_exchange(c, v, Ordering::AcqRel, Ordering::Acquire);
            std::ptr::write_unaligned(old as *mut u32, o);
        }
    }
}

/// One element of an accumulate by the CPU's atomics (`a.esize` 4 or 8):
/// the ops with an instruction of their own inline (the fast entries'
/// fetch-and-op and counters), the others by a compare-and-swap loop out
/// of line (`atomic_loop`); `got` gets the element as it was.
///
/// # Safety
/// `p` is valid, mapped memory aligned to `a.esize` (4 or 8).
#[inline(always)]
unsafe fn atomic_apply(p: *mut u8, a: AccOp, src: &[u8], got: Option<&mut [u8]>) {
    use crate::op::Elem::*;
    let int = matches!(a.elem, I32 | U32 | I64 | U64);
    // AcqRel on every read-modify-write: pairs with the other origins'
    // atomics on the same word (and, through the epoch's synchronization,
    // with the target's own accesses); Acquire loads pair with them too.
    macro_rules! go {
        ($at:ty, $t:ty) => {{
            // SAFETY: the caller's contract.
            let w = unsafe { <$at>::from_ptr(p as *mut $t) };
            let v = <$t>::from_ne_bytes(src.try_into().unwrap_or([0; std::mem::size_of::<$t>()]));
            let old = match a.op {
                MPI_NO_OP => w.load(Ordering::Acquire),
                MPI_REPLACE => w.swap(v, Ordering::AcqRel),
                MPI_SUM if int => w.fetch_add(v, Ordering::AcqRel),
                MPI_BAND if int => w.fetch_and(v, Ordering::AcqRel),
                MPI_BOR if int => w.fetch_or(v, Ordering::AcqRel),
                MPI_BXOR if int => w.fetch_xor(v, Ordering::AcqRel),
                // SAFETY: the caller's contract.
                _ => return unsafe { atomic_loop(p, a, src, got) },
            };
            if let Some(g) = got {
                g.copy_from_slice(&old.to_ne_bytes());
            }
        }};
    }
    if a.esize == 8 {
        go!(AtomicU64, u64)
    } else {
        go!(AtomicU32, u32)
    }
}

/// `atomic_apply` of an op without an instruction of its own (max, min,
/// product, the logical ops): the reduction of the element as read,
/// installed by compare-and-swap until no other origin changed it between.
///
/// # Safety
/// As `atomic_apply`.
#[inline(never)]
unsafe fn atomic_loop(p: *mut u8, a: AccOp, src: &[u8], got: Option<&mut [u8]>) {
    macro_rules! go {
        ($at:ty, $t:ty) => {{
            // SAFETY: the caller's contract.
            let w = unsafe { <$at>::from_ptr(p as *mut $t) };
            // Relaxed: the exchange below (AcqRel) is what publishes.
            let mut cur = w.load(Ordering::Relaxed);
            let old = loop {
                let mut b = cur.to_ne_bytes();
                crate::op::reduce_builtin(a.op, a.elem, 1, src, &mut b);
                // AcqRel: as in `atomic_apply`.
                match w.compare_exchange_weak(
                    cur,
                    <$t>::from_ne_bytes(b),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break cur,
                    Err(x) => cur = x,
                }
            };
            if let Some(g) = got {
                g.copy_from_slice(&old.to_ne_bytes());
            }
        }};
    }
    if a.esize == 8 {
        go!(AtomicU64, u64)
    } else {
        go!(AtomicU32, u32)
    }
}

/// One element of an accumulate with plain accesses (the mutex is held).
///
/// # Safety
/// `p` is valid for `a.esize` bytes.
unsafe fn locked_apply(p: *mut u8, a: AccOp, src: &[u8], got: Option<&mut [u8]>) {
    let mut cur = vec![0u8; a.esize];
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(p, cur.as_mut_ptr(), a.esize) };
    if let Some(g) = got {
        g.copy_from_slice(&cur);
    }
    if a.op != MPI_NO_OP {
        crate::op::reduce_builtin(a.op, a.elem, 1, src, &mut cur);
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(cur.as_ptr(), p, a.esize) };
    }
}
