//! Shared-memory collectives for intracommunicators whose ranks are all on
//! this node: barrier, bcast, reduce, allreduce, allgather, alltoall and
//! reduce_scatter_block of up to `COLL_HALF` bytes (bcast up to `BCAST_MAX`
//! in pieces) move through a collective area of the segment instead of
//! messages. World (and
//! communicators shaped like it) use world's area, others a pool area of
//! their own (`eligible`).
//!
//! Protocol. Blocking collectives on one communicator are called in the
//! same order by every rank, so each call gets the same generation number g
//! (1, 2, ...) on all ranks. Slot i belongs to rank i of the communicator
//! (its layout is `transport::shm::layout::SlotHeader`): `done` (g once it
//! has finished reading for call g), 64 call lines of 128 bytes
//! (`CallLine`), and `COLL_DATA` bytes of data. Call g uses call line g % 64: its
//! `seq` word (g once the rank's input is in), the communicator's context
//! id, and a payload of up to `INLINE` (112) bytes, so a small call's reader
//! finds all it needs in one pair of cache lines, which the adjacent-line
//! prefetcher fetches together. A larger payload takes the next free region of
//! the data, used as a ring (`AreaClock::advance`; every rank computes the
//! same regions). A rank that only writes (the root of a bcast, a non-root
//! of a reduce) can thus run up to 64 calls ahead of the readers. Before
//! writing, a rank waits until every `done` has reached g - 64 (whose call
//! line it reuses) and the last call whose region the new one overlaps; it
//! keeps the lowest `done` it last read, so most calls read none. Readers
//! wait for `seq` = g on the call lines they need: a `seq` word only ever
//! holds a generation that used that line, so stale data never passes.
//! Reductions combine the slots in rank order on every rank, so the result
//! is bitwise identical everywhere and correct for non-commutative ops.
//!
//! Single copy. Above the sizes that the copies serve best, allgather,
//! alltoall and bcast move their data with one `process_vm_readv` or
//! `process_vm_writev` per block instead of two copies through the slots
//! (`allgather_cma`, `alltoall_cma`, `bcast_cma`): the payload in call g's
//! line is then only the addresses of the rank's source and output buffers
//! and its process id (`single_area`); each rank reads what it needs
//! straight out of the others' buffers, or writes into theirs, as soon as
//! they have published, marks `done`, and returns only when every rank is
//! done, so no one touches a buffer its owner has got back. Reductions
//! above the copies' limit take the same road (`allreduce_cma`,
//! `reduce_cma`, `reduce_scatter_block_cma`, builtin ops): rank r reduces slice
//! r (or block r) of the vector piece by piece, reading the others' parts
//! of it into a buffer that stays in cache, and writes each finished piece
//! into the other ranks' outputs (allreduce) or the root's (reduce) with
//! `process_vm_writev`. They run only where every local rank could read
//! every other's memory at MPI_Init (`cma_all`, agreed through the
//! segment).
//!
//! Waits drive the progress engine (`runtime::wait_for`), so point-to-point
//! operations that other ranks need keep moving, and yield the CPU like any
//! other wait.

use super::reduce::{apply_packed, Operand};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::core::comm::{AreaClock, CollArea};
use crate::core::runtime::{wait_for, with};
use crate::op::user::{apply, OpKind};
use crate::transport::shm::{
    CallLine, SlotHeader, COLL_DATA, COLL_HALF, COLL_HDR, COLL_LINES, COLL_LINE_BYTES, COLL_SLOT,
};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Largest payload a shared-memory collective carries (per slot).
pub const MAX_BYTES: usize = COLL_HALF;
/// Largest allgather block and alltoall total (of a communicator of `n`
/// ranks) that go through the slots by copies by default; above them the
/// single copy. With a core per rank the single copy is faster above 8 KiB
/// per block (allgather) and 16 KiB in all (alltoall); when ranks outnumber
/// cores each of its extra waits costs a trip through the scheduler, so
/// copies serve up to 32 KiB per block and 64 KiB in all
/// (docs/performance.md, fourth round).
pub fn allgather_copy_max() -> usize {
    if crate::core::progress::oversubscribed() {
        32 << 10
    } else {
        8 << 10
    }
}
pub fn alltoall_copy_max() -> usize {
    if crate::core::progress::oversubscribed() {
        64 << 10
    } else {
        16 << 10
    }
}

/// Largest allgather block that the single copy writes into the other
/// ranks' outputs (`process_vm_writev`) instead of reading theirs: any with
/// a core per rank (at 2 ranks, 64-512 KiB blocks took 0.67-0.92 of the
/// time the reads took, 2-16 MiB 0.91-0.96 over 11 launches, 1 MiB the
/// same), none when ranks outnumber cores (there writing was 1.04-1.11
/// times slower from 1 MiB); OXMPI_ALLGATHER_PUSH sets it
/// (docs/performance.md, fifth round). The same on every rank of the node.
pub fn allgather_push_max() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| match crate::config::get_str("OXMPI_ALLGATHER_PUSH") {
        Some(v) => v.trim().parse().unwrap_or(0),
        None if crate::core::progress::oversubscribed() => 0,
        None => usize::MAX,
    })
}

/// Largest allgather block that the writing single copy sends whole; above
/// it, piece by piece, each piece copied into my own output first and then,
/// still in cache, into every other rank's, so my block is read from memory
/// once instead of n times. That pays only when the buffers do not stay in
/// the last-level cache anyway: by default above the block at which the
/// n ranks' inputs and outputs (n * (n + 1) blocks) fill it. At 2 ranks
/// with a 48 MiB cache, 16 MiB blocks took 0.89-0.93 of the time of whole
/// writes; 4 MiB blocks, which stay in cache, 1.03-1.15 times
/// (docs/performance.md, sixth round). OXMPI_ALLGATHER_FUSE sets it.
pub fn allgather_fuse_min(n: usize) -> usize {
    static MIN: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let set = *MIN.get_or_init(|| {
        crate::config::get_str("OXMPI_ALLGATHER_FUSE")
            .map(|v| v.trim().parse().unwrap_or(usize::MAX))
    });
    set.unwrap_or_else(|| crate::sys::last_cache_bytes() / (n * (n + 1)).max(1))
}

/// The broadcasts that take the single copy by default, by communicator
/// size: above 64 KiB at 2 ranks, above 128 KiB at more (below, one call
/// through the slots is faster), up to 4 MiB (above, the message algorithms
/// with split copies are as fast). With the root writing a share of every
/// reader's buffer, 2 ranks took 0.43-0.71 of the time of the readers alone
/// at 128 KiB-1 MiB, 4 ranks on 2 cores 0.71-0.82 of the message
/// algorithms' at 512 KiB-2 MiB (docs/performance.md, fifth round).
pub fn bcast_single_copy(n: usize, len: usize) -> bool {
    let low = if n == 2 { 64 << 10 } else { 128 << 10 };
    low < len && len <= 4 << 20
}

/// Calls that may be in flight on one area (call lines per slot).
const DEPTH: u64 = COLL_LINES as u64;
/// Data bytes of a slot, used as a ring of regions.
const DATA: usize = COLL_DATA;
/// Largest payload carried in the call line itself (after `seq` and the
/// context id).
const INLINE: usize = COLL_LINE_BYTES - 16;
/// Payload of a single-copy call: source and output addresses and pid
/// (`Area::publish_buffers`).
const BUFFERS: usize = 24;

/// A rank's buffers in a single-copy call.
struct Buffers {
    src: usize,
    dst: usize,
    pid: i32,
    /// The buffers are device memory (the reductions then go by CUDA IPC,
    /// `ipc`).
    dev: bool,
    /// For device buffers: their GPU where it runs without MPS, else 0
    /// (`gpu::ipc::gpu_without_mps`).
    gpu: u32,
    /// A device source's bytes also lie in host memory of its process, at
    /// `dst` (a device rank's output address is read by no one): made
    /// where CUDA IPC copies from it could each wait for a switch of a
    /// shared GPU (`bounce_for`).
    bounce: bool,
}

/// Marks device buffers in the pid word of a single-copy call's payload.
const DEV_BIT: u64 = 1 << 63;
/// Marks a payload that carries the IPC reference of its source buffer
/// after the three words (a device bcast root's, `bcast_cma`).
const REF_BIT: u64 = 1 << 62;
/// Marks a device source whose host copy's address is its third word
/// (`Buffers::bounce`).
const BOUNCE_BIT: u64 = 1 << 61;
/// Where the `Buffers::gpu` word lies in the pid word: the 29 bits from 32.
const GPU_SHIFT: u32 = 32;
const GPU_MASK: u64 = (1 << 29) - 1;
const _: () = assert!((GPU_MASK << GPU_SHIFT) & (BOUNCE_BIT | REF_BIT | DEV_BIT) == 0);
const _: () = assert!(crate::gpu::ipc::NO_MPS as u64 <= GPU_MASK);

/// Whether CUDA IPC copies of `len` bytes between device ranks `a` and `b`
/// would each wait for a switch of the GPU between their contexts: both
/// on one GPU that runs without MPS, and `len` below
/// `OXMPI_CUDA_IPC_SHARED_MIN` (as for point-to-point, where staging
/// through host memory measured the faster there: docs/gpu.md).
fn switches(a: &Buffers, b: &Buffers, len: usize) -> bool {
    a.dev && b.dev && a.gpu != 0 && a.gpu == b.gpu && len < crate::config::cuda_ipc_shared_min()
}

/// Whether a device source of IPC copies of `len` bytes publishes a host
/// copy of itself too (`Buffers::bounce`): its GPU runs without MPS and
/// `len` is below `OXMPI_CUDA_IPC_SHARED_MIN`, so that a device reader on
/// the same GPU (which only the readers learn) reads it through host
/// memory instead. Its GPU word comes back with the answer.
fn bounce_for(src: *const u8, len: usize) -> (bool, u32) {
    let gpu = crate::gpu::ipc::gpu_without_mps(src);
    (gpu != 0 && len < crate::config::cuda_ipc_shared_min(), gpu)
}
/// Payload of a single-copy bcast: the buffers and room for one IPC
/// reference, still inside the call line.
const BUFFERS_REF: usize = BUFFERS + crate::gpu::ipc::WIRE;
const _: () = assert!(BUFFERS_REF <= INLINE);

/// Whether the ranks of a single-copy reduction, whose IPC copies would
/// be of `len` bytes, published host buffers (Some(false)), all device
/// buffers (Some(true)), or a mix (None: every rank then stages its device
/// buffers in host memory and calls again). Device buffers of two ranks
/// whose copies would wait for a switch of their shared GPU (`switches`)
/// count as a mix. Every rank reads the same payloads, so every rank gets
/// the same answer.
fn kinds(bufs: &[Buffers], len: usize) -> Option<bool> {
    let dev = bufs.iter().filter(|b| b.dev).count();
    match dev {
        0 => Some(false),
        d if d == bufs.len() => {
            let shared = bufs
                .iter()
                .enumerate()
                .any(|(i, a)| bufs[i + 1..].iter().any(|b| switches(a, b, len)));
            (!shared).then_some(true)
        }
        _ => None,
    }
}

/// `kinds` for a reduction's first step: None where every rank's buffers
/// are host memory (the host form goes on), Some(true) where all are
/// device memory, Some(false) for a mix.
fn device_or_mixed(bufs: &[Buffers], len: usize) -> Option<bool> {
    match kinds(bufs, len) {
        Some(false) => None,
        Some(true) => Some(true),
        None => Some(false),
    }
}

mod ipc;

impl AreaClock {
    /// Starts the next call (of `len` bytes per slot): its generation, the
    /// byte offset of its data region (unused for payloads of up to
    /// `INLINE` bytes, which ride in the call line), and the call every
    /// rank must have finished before this one writes (see the module
    /// comment).
    ///
    /// Regions are taken one after the other (64-byte aligned) from a ring
    /// over the slot's data, skipping to the start where one would not fit;
    /// the calls whose regions the new one reaches are the oldest in flight,
    /// so they leave the queue from the front. A call left the queue is
    /// covered for every later call too: each rank makes the calls in
    /// order, a writer waits for the call returned, and a rank that writes
    /// nothing in a call (a bcast non-root) waits for the root, who did.
    fn advance(&mut self, len: usize) -> (u64, usize, u64) {
        const MASK: usize = DATA - 1;
        const QMASK: usize = 63;
        self.g += 1;
        let g = self.g;
        let mut need = g.saturating_sub(DEPTH);
        if len <= INLINE {
            return (g, 0, need);
        }
        let len = len.next_multiple_of(64);
        let start = if self.head + len > DATA { 0 } else { self.head };
        // Bytes from `head` round the ring to the region's end.
        let reach = (start.wrapping_sub(self.head) & MASK) + len;
        // The queue holds at most 63 calls; any older is covered by g - 64.
        while self.len > 0 {
            let (eg, es) = self.q[self.front];
            let free = (es as usize).wrapping_sub(self.head) & MASK;
            if free >= reach && self.len <= QMASK {
                break;
            }
            need = need.max(eg);
            self.front = (self.front + 1) & QMASK;
            self.len -= 1;
        }
        self.q[(self.front + self.len) & QMASK] = (g, start as u32);
        self.len += 1;
        self.head = (start + len) & MASK;
        (g, start, need)
    }
}

/// The slots of a communicator's ranks: slot i (rank i) at
/// `base + i * COLL_SLOT`.
struct Area {
    base: usize,
    n: usize,
    me: usize,
    g: u64,
    /// Byte offset of this call's region in each slot's data, unless the
    /// payload is `inline` in the call line.
    off: usize,
    inline: bool,
    /// Every rank must have finished this call before this one writes.
    need: u64,
    /// Every rank had finished this call when this rank last read the
    /// `done` counters (the area's `AreaClock::min_done`).
    min_done: u64,
    /// The communicator of this call: its handle (to record `min_done`)
    /// and context id (several communicators may share the area, see
    /// `eligible`).
    comm: std::os::raw::c_int,
    ctx: u32,
}

impl Area {
    /// Rank i's slot header (`transport::shm::layout::SlotHeader`).
    fn header(&self, i: usize) -> *mut SlotHeader {
        (self.base + i * COLL_SLOT) as *mut SlotHeader
    }
    /// Rank i's call line for this call (line g % 64 of its slot).
    fn line(&self, i: usize) -> *mut CallLine {
        // SAFETY: a place projection inside the slot header (no reference
        // made); the mapping lives until MPI_Finalize, after every collective.
        unsafe { std::ptr::addr_of_mut!((*self.header(i)).lines[(self.g % DEPTH) as usize]) }
    }
    /// Rank i's `seq` word for this call: g once its payload is in.
    fn seq(&self, i: usize) -> &AtomicU64 {
        // SAFETY: the line lies in the mapping (see `line`); an atomic is
        // shared by reference.
        unsafe { &(*self.line(i)).seq }
    }
    /// Context id of the communicator rank i published this call on.
    fn ctx_of(&self, i: usize) -> &AtomicU32 {
        // SAFETY: as for `seq`.
        unsafe { &(*self.line(i)).ctx }
    }
    fn done(&self, i: usize) -> &AtomicU64 {
        // SAFETY: as for `seq`; `done` sits on the header's second cache line.
        unsafe { &(*self.header(i)).done }
    }
    /// This call's payload in rank i's slot: in its call line, or its
    /// region of the data (after the header).
    fn half(&self, i: usize) -> *mut u8 {
        if self.inline {
            // SAFETY: a place projection, as in `line`.
            unsafe { std::ptr::addr_of_mut!((*self.line(i)).payload) as *mut u8 }
        } else {
            (self.header(i) as usize + COLL_HDR + self.off) as *mut u8
        }
    }
    /// Waits until `f(i)` holds for every i in `who`: polls the counters
    /// alone at first (no lock: the other ranks are usually microseconds
    /// away; every 256 polls the progress engine runs once), then drives the
    /// progress engine between polls, so messages that other ranks wait for
    /// keep moving.
    fn wait_all(
        &self,
        who: impl Iterator<Item = usize> + Clone,
        f: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let mut backoff = crate::core::progress::Backoff::new_default();
        for polls in 0..4096u32 {
            if who.clone().all(&f) {
                return Ok(());
            }
            if polls % 256 == 255 {
                with(|st| {
                    st.progress();
                    Ok(())
                })?;
            }
            backoff.snooze();
        }
        wait_for(|st| {
            let done = who.clone().all(&f);
            if !done && crate::core::hang::asked() {
                // The ranks this collective still waits for, by world rank.
                let item = st.comm(self.comm).ok().map(|c| {
                    let missing: Vec<String> = who
                        .clone()
                        .filter(|&i| !f(i))
                        .map(|i| c.peer_world(i as i32).to_string())
                        .collect();
                    format!(
                        "coll comm={} wranks={}",
                        crate::core::hang::label(c),
                        missing.join(",")
                    )
                });
                let waited = backoff.waited();
                crate::core::hang::report(st, waited, &item.into_iter().collect::<Vec<_>>());
            }
            Ok(done.then_some(()))
        })
    }
    /// Call entry for a rank that writes its half: every rank must be done
    /// with call `need`. Reads the counters only when the lowest seen last
    /// time is too old, and records the new lowest.
    fn before_write(&self) -> Result<()> {
        let need = self.need;
        if need <= self.min_done {
            return Ok(());
        }
        // Acquire: pairs with the Release stores of `done` in `finish`.
        self.wait_all(0..self.n, |i| self.done(i).load(Ordering::Acquire) >= need)?;
        let low = (0..self.n)
            // Relaxed: every value is >= need, which the Acquire loads above ordered.
            .map(|i| self.done(i).load(Ordering::Relaxed))
            .min()
            .unwrap_or(need);
        note_done(self.comm, low)
    }
    fn publish(&self) {
        // Relaxed: published by the Release store of seq below.
        self.ctx_of(self.me).store(self.ctx, Ordering::Relaxed);
        // Release: my payload is visible to whoever sees seq = g; pairs
        // with the Acquire loads in `wait_seq`.
        self.seq(self.me).store(self.g, Ordering::Release);
    }
    /// Waits for the ranks in `who` to publish call g, then checks that they
    /// made it on this call's communicator: blocking collectives called in
    /// different orders on communicators sharing the area are an error, not
    /// a mix of their data. A call line is not written again before
    /// everyone is done with its call (`before_write`).
    fn wait_seq(&self, who: impl Iterator<Item = usize> + Clone) -> Result<()> {
        let g = self.g;
        // Acquire: pairs with `publish`'s Release store.
        self.wait_all(who.clone(), |i| self.seq(i).load(Ordering::Acquire) == g)?;
        for i in who {
            // Relaxed: ordered after the Acquire load of seq above.
            let theirs = self.ctx_of(i).load(Ordering::Relaxed);
            if theirs != self.ctx {
                self.finish();
                return Err(crate::err!(
                    MPI_ERR_OTHER,
                    "blocking collectives were called in different orders on communicators with the same ranks: context {} here met context {theirs} on rank {i}",
                    self.ctx
                ));
            }
        }
        Ok(())
    }
    fn finish(&self) {
        // Release: my reads of others' halves are over; pairs with the
        // Acquire loads in `before_write` and `finish_single`.
        self.done(self.me).store(self.g, Ordering::Release);
    }

    /// Single copy, first step: this call's line gets the addresses of my
    /// source (input) and output buffers and my process id.
    /// Device buffers (`dev`) add their GPU's word (`Buffers::gpu`).
    fn publish_buffers(&self, src: *const u8, dst: *mut u8, dev: bool) -> Result<()> {
        let gpu = if dev {
            crate::gpu::ipc::gpu_without_mps(src)
        } else {
            0
        };
        self.publish_buffers_ref(src, dst, dev, None, gpu, false)
    }
    /// `publish_buffers` with the IPC reference of my source buffer after
    /// the three words (the call's payload holds `BUFFERS_REF` bytes), my
    /// GPU's word, and whether `dst` is the address of a host copy of my
    /// device source (`Buffers::bounce`).
    fn publish_buffers_ref(
        &self,
        src: *const u8,
        dst: *mut u8,
        dev: bool,
        r: Option<&crate::gpu::ipc::IpcRef>,
        gpu: u32,
        bounce: bool,
    ) -> Result<()> {
        self.before_write()?;
        let w = self.half(self.me) as *mut u64;
        let dev = if dev { DEV_BIT } else { 0 }
            | if r.is_some() { REF_BIT } else { 0 }
            | if bounce { BOUNCE_BIT } else { 0 }
            | (gpu as u64 & GPU_MASK) << GPU_SHIFT;
        if let Some(r) = r {
            // SAFETY: the payload holds BUFFERS_REF bytes (the caller's
            // contract), mine as below.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    r.to_bytes().as_ptr(),
                    w.add(3) as *mut u8,
                    crate::gpu::ipc::WIRE,
                )
            };
        }
        // SAFETY: the payload (in the call line: INLINE >= BUFFERS bytes,
        // 16-byte aligned) is mine; nobody reads it before `publish`, and
        // nobody still reads the call 64 back (before_write waited for them).
        unsafe {
            w.write(src as u64);
            w.add(1).write(crate::sys::pid() as u32 as u64 | dev);
            w.add(2).write(dst as u64);
        }
        self.publish();
        Ok(())
    }
    /// The IPC reference rank i published with `publish_buffers_ref`, if
    /// any; after `wait_seq`.
    fn buffer_ref(&self, i: usize) -> Option<crate::gpu::ipc::IpcRef> {
        let r = self.half(i) as *const u64;
        // SAFETY: as in `buffers`; the reference's bytes follow the three
        // words where REF_BIT is set.
        unsafe {
            if r.add(1).read() & REF_BIT == 0 {
                return None;
            }
            let b = std::slice::from_raw_parts(r.add(3) as *const u8, crate::gpu::ipc::WIRE);
            crate::gpu::ipc::IpcRef::from_bytes(b)
        }
    }
    /// What every rank published with `publish_buffers`, once all have.
    fn all_buffers(&self) -> Result<Vec<Buffers>> {
        self.wait_seq(0..self.n)?;
        Ok((0..self.n).map(|i| self.buffers(i)).collect())
    }
    /// What rank i published with `publish_buffers`; after `wait_seq`.
    fn buffers(&self, i: usize) -> Buffers {
        let r = self.half(i) as *const u64;
        // SAFETY: rank i wrote these words before its Release store of seq,
        // which `wait_seq` saw with Acquire; they stay until everyone is done.
        unsafe {
            let pid = r.add(1).read();
            Buffers {
                src: r.read() as usize,
                pid: pid as u32 as i32,
                dst: r.add(2).read() as usize,
                dev: pid & DEV_BIT != 0,
                gpu: (pid >> GPU_SHIFT & GPU_MASK) as u32,
                bounce: pid & BOUNCE_BIT != 0,
            }
        }
    }

    /// Single copy: `len` bytes at byte `off` of rank i's source buffer into
    /// `dst`, once rank i has published it.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes; rank i's buffer holds `off + len`
    /// bytes (every rank passes matching sizes, as MPI requires).
    unsafe fn read_source(&self, i: usize, off: usize, dst: *mut u8, len: usize) -> Result<()> {
        self.wait_seq(std::iter::once(i))?;
        let r = self.half(i) as *const u64;
        // SAFETY: rank i wrote both words before its Release store of seq,
        // which `wait_seq` saw with Acquire; they stay until everyone is done.
        let (addr, pid) = unsafe { (r.read(), r.add(1).read() as u32 as i32) };
        // SAFETY: the caller's contract; the remote range is rank i's buffer,
        // which it does not give back before every rank is done.
        unsafe { crate::sys::cma_read(pid, addr as usize + off, dst, len) }.map_err(|e| {
            crate::err!(
                MPI_ERR_OTHER,
                "process_vm_readv of {len} bytes from rank {i} of the communicator failed: {e}"
            )
        })
    }

    /// Single copy, last step: my reads are over; runs `local` (work that
    /// reads no other rank's buffer, such as my own block's copy, overlapped
    /// with the others' last reads), then waits until every rank's reads are
    /// over, so nobody reads my buffer once this returns. `r` is the outcome
    /// of my reads, returned after the wait (others still read my buffer).
    fn finish_single(&self, r: Result<()>, local: impl FnOnce()) -> Result<()> {
        self.finish();
        local();
        let g = self.g;
        // Acquire: pairs with the other ranks' Release stores in `finish`.
        self.wait_all(0..self.n, |i| self.done(i).load(Ordering::Acquire) >= g)?;
        r
    }
}

/// The area for the next single-copy call on `comm`, with my buffers
/// published (`Area::publish_buffers`; `dev`: they are device memory);
/// None where `area` has none.
fn single_area(
    comm: std::os::raw::c_int,
    src: *const u8,
    dst: *mut u8,
    dev: bool,
) -> Result<Option<Area>> {
    let Some(a) = area(comm, |_| BUFFERS)? else {
        return Ok(None);
    };
    a.publish_buffers(src, dst, dev)?;
    Ok(Some(a))
}

/// Whether the single-copy forms may run: every local rank read every
/// other's memory at MPI_Init (`Shm::probe_cma`). The same answer on every
/// rank; computed once.
pub fn cma_all() -> bool {
    /// 0 not known yet, 1 yes, 2 no.
    static CMA_ALL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    // Relaxed: a cache of a value every thread computes the same way.
    match CMA_ALL.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // Every rank records its probe during MPI_Init, so this wait is short.
            let ok = wait_for(|st| Ok(st.net.shm.as_ref().map_or(Some(false), |s| s.cma_agreed())))
                .unwrap_or(false);
            CMA_ALL.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            ok
        }
    }
}

/// The ranks other than me in the order I read them: me + 1, me + 2, ...,
/// so that not everyone reads rank 0 first.
fn others(a: &Area) -> impl Iterator<Item = usize> + '_ {
    (1..a.n).map(move |k| (a.me + k) % a.n)
}

/// The area for the next blocking collective on `comm` (one that
/// `eligible` accepted), moving `len(communicator size)` bytes per slot.
fn area(comm: std::os::raw::c_int, len: impl FnOnce(usize) -> usize) -> Result<Option<Area>> {
    with(|st| {
        // World's context id is 0 (`State::new`); no lookup on its path.
        let ctx = if comm == MPI_COMM_WORLD {
            0
        } else {
            let c = st.comm_mut(comm)?;
            if let CollArea::Pool(k) = c.coll_area {
                let len = len(c.size as usize);
                let (g, off, need) = c.coll_clock.advance(len);
                let min_done = c.coll_clock.min_done;
                let (n, me, ctx) = (c.size as usize, c.rank as usize, c.ctx);
                let Some(shm) = st.net.shm.as_ref() else {
                    return Ok(None);
                };
                return Ok(Some(Area {
                    base: shm.pool_slot(k, 0) as usize,
                    n,
                    me,
                    g,
                    off,
                    inline: len <= INLINE,
                    need,
                    min_done,
                    comm,
                    ctx,
                }));
            }
            c.ctx
        };
        let Some(shm) = st.net.shm.as_ref() else {
            return Ok(None);
        };
        if shm.nlocal() != st.size as usize {
            return Ok(None);
        }
        let (base, n) = (shm.coll_slot(0) as usize, shm.nlocal());
        let len = len(n);
        let (g, off, need) = st.shm_clock.advance(len);
        Ok(Some(Area {
            base,
            n,
            me: st.rank as usize,
            g,
            off,
            inline: len <= INLINE,
            need,
            min_done: st.shm_clock.min_done,
            comm,
            ctx,
        }))
    })
}

/// Records that every rank of the area `comm` uses has finished call `low`
/// (see `Area::before_write`).
#[cold]
fn note_done(comm: std::os::raw::c_int, low: u64) -> Result<()> {
    with(|st| {
        let clock = match st.comm_mut(comm)? {
            c if matches!(c.coll_area, CollArea::Pool(_)) => &mut c.coll_clock,
            _ => &mut st.shm_clock,
        };
        clock.min_done = clock.min_done.max(low);
        Ok(())
    })
}

/// World's ranks never change: 0 not known yet, 1 all local, 2 not.
static WORLD_LOCAL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether every rank of the job shares this node's segment (and no test
/// assignment of ranks to pretend nodes is in force).
#[inline]
fn world_local() -> bool {
    // Relaxed: a cache of a value computed the same way by every thread.
    match WORLD_LOCAL.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => world_local_first(),
    }
}

#[cold]
fn world_local_first() -> bool {
    let ok = with(|st| {
        let all: Vec<i32> = (0..st.size).collect();
        Ok(world_local_in(st) && super::hier::nodes(&all).is_none())
    })
    .unwrap_or(false);
    WORLD_LOCAL.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
    ok
}

/// Whether blocking collectives on `comm` of `len` bytes (equal on every
/// rank) can use a shared-memory area.
///
/// MPI_COMM_WORLD and every communicator with world's ranks in world's
/// order (a duplicate of world, for one) share world's area and its
/// generation count, when all ranks share this node. That is sound because
/// blocking collectives on communicators with the same processes must be
/// called in the same order on every process (a program that orders them
/// differently deadlocks once they synchronize, MPI-4.0 section 6.14), and
/// a program that does so anyway gets MPI_ERR_OTHER (`wait_seq`), not mixed
/// data. Under MPI_THREAD_MULTIPLE threads may run collectives on different
/// communicators at once, so there only world itself uses that area.
///
/// Any other intracommunicator of two or more ranks on this node gets a
/// pool area of its own: the first blocking collective that asks (every
/// member asks at the same call, whatever the size) lets rank 0 claim a
/// free one and tells the others which, or that none was free (the
/// communicator then always uses schedules). `MPI_Comm_free` gives it back
/// once every member has freed the communicator. Nonblocking collectives
/// never use an area.
pub fn eligible(comm: std::os::raw::c_int, len: usize) -> bool {
    if comm == MPI_COMM_WORLD {
        return len <= MAX_BYTES && world_local();
    }
    // Some(area state), or None for a communicator shaped like world.
    let own = with(|st| {
        let c = st.comm(comm)?;
        let world_like = c.remote.is_none()
            && c.identity
            && c.size == st.size
            && st.thread_level < MPI_THREAD_MULTIPLE;
        Ok((!world_like).then_some(c.coll_area))
    });
    let ok = match own {
        // An invalid handle: the schedule path reports it.
        Err(_) => false,
        Ok(None) => world_local(),
        Ok(Some(CollArea::Pool(_))) => true,
        Ok(Some(CollArea::No)) => false,
        Ok(Some(CollArea::Unknown)) => claim(comm).unwrap_or(false),
    };
    ok && len <= MAX_BYTES
}

/// Agrees with the other members of `comm` on its pool area (see
/// `eligible`); records and returns whether it has one.
fn claim(comm: std::os::raw::c_int) -> Result<bool> {
    let (members, me, ctx, can) = with(|st| {
        let c = st.comm(comm)?;
        let can = c.remote.is_none()
            && c.size > 1
            && world_local_in(st)
            && super::hier::nodes(&c.world).is_none();
        Ok((c.world.clone(), c.rank as usize, c.ctx, can))
    })?;
    let area = if !can {
        None
    } else {
        // Rank 0 claims and the others learn the area from it; the key
        // (context id, rank 0's world rank) only labels the holder for
        // whoever reads the segment (an entry is free when it is 0).
        let mine = if me == 0 {
            with(|st| {
                let key = ((ctx as u64) << 32) | (members[0] as u64 + 1);
                Ok(st
                    .net
                    .shm
                    .as_ref()
                    .and_then(|s| s.pool_claim(key, members.len() as u64)))
            })?
        } else {
            None
        };
        let word = mine.map(|k| k as u32).unwrap_or(u32::MAX);
        let all = super::create::allgather(
            &members,
            me,
            ctx + 1,
            super::create::TAG_AREA,
            &word.to_le_bytes(),
        )?;
        let k = u32::from_le_bytes([all[0], all[1], all[2], all[3]]);
        (k != u32::MAX).then_some(k as usize)
    };
    with(|st| {
        st.comm_mut(comm)?.coll_area = area.map(CollArea::Pool).unwrap_or(CollArea::No);
        Ok(area.is_some())
    })
}

/// `world_local` inside `with`: every rank of the job is on this node.
fn world_local_in(st: &crate::core::state::State) -> bool {
    st.net
        .shm
        .as_ref()
        .is_some_and(|s| s.nlocal() == st.size as usize)
}

pub fn barrier(comm: std::os::raw::c_int) -> Result<()> {
    let Some(a) = area(comm, |_| 0)? else {
        return Ok(());
    };
    // No data, but the call line of g - 64 may still be read.
    a.before_write()?;
    a.publish();
    a.wait_seq(0..a.n)?;
    a.finish();
    Ok(())
}

/// Largest broadcast through the area: above `MAX_BYTES` it goes in
/// `BCAST_PIECE` pieces, each a call of its own, so the root fills pieces
/// ahead while the others copy out (at 2 and 4 ranks up to 256 KiB this beat
/// the message algorithms; see docs/performance.md).
pub const BCAST_MAX: usize = 256 << 10;
const BCAST_PIECE: usize = 16 << 10;

/// # Safety
/// `buf` holds `len` bytes (<= BCAST_MAX).
pub unsafe fn bcast(
    comm: std::os::raw::c_int,
    buf: *mut u8,
    len: usize,
    root: usize,
) -> Result<()> {
    if len <= MAX_BYTES {
        // SAFETY: forwarded contract.
        return unsafe { bcast_one(comm, buf, len, root) };
    }
    for off in (0..len).step_by(BCAST_PIECE) {
        // SAFETY: the piece lies inside `buf` (contract).
        unsafe { bcast_one(comm, buf.add(off), (len - off).min(BCAST_PIECE), root)? };
    }
    Ok(())
}

/// # Safety
/// `buf` holds `len` bytes (<= MAX_BYTES).
unsafe fn bcast_one(
    comm: std::os::raw::c_int,
    buf: *mut u8,
    len: usize,
    root: usize,
) -> Result<()> {
    let Some(a) = area(comm, |_| len)? else {
        return Ok(());
    };
    if a.me == root {
        a.before_write()?;
        // SAFETY: the region holds MAX_BYTES >= len; buf holds len (contract).
        unsafe { crate::sys::copy(a.half(root), buf, len) };
        a.publish();
    } else {
        a.wait_seq(std::iter::once(root))?;
        // SAFETY: as above; the root's region is complete (seq seen).
        unsafe { crate::sys::copy(buf, a.half(root), len) };
    }
    a.finish();
    Ok(())
}

/// Reduction of `count` elements of `dt` (`len` bytes); the result goes to
/// `out` at `root`, or on every rank when `root` is None.
///
/// # Safety
/// `input` holds `len` bytes; `out` (where the result goes) holds `len`
/// bytes and may equal `input`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    comm: std::os::raw::c_int,
    input: *const u8,
    out: *mut u8,
    len: usize,
    count: usize,
    dt: &Operand,
    op: &OpKind,
    root: Option<usize>,
) -> Result<()> {
    let Some(a) = area(comm, |_| len)? else {
        return Ok(());
    };
    let n = a.n;
    // Nobody reads the root's half of a reduce: unless its input is also
    // its output (in place), the root reduces its input where it lies and
    // writes nothing (one copy less).
    let direct = root == Some(a.me) && !std::ptr::eq(input, out);
    if !direct {
        a.before_write()?;
        // SAFETY: the half holds MAX_BYTES >= len; input holds len (contract).
        unsafe { crate::sys::copy(a.half(a.me), input, len) };
        a.publish();
    }
    if root.is_none_or(|r| r == a.me) {
        let me = a.me;
        let part = |i: usize| {
            if direct && i == me {
                input
            } else {
                a.half(i) as *const u8
            }
        };
        if direct {
            a.wait_seq((0..n).filter(|&i| i != me))?;
        } else {
            a.wait_seq(0..n)?;
        }
        // Rank order: out = s0 op (s1 op (... op s_{n-1})). In place my input
        // is in my half already, so `out` may be the input buffer.
        // SAFETY: every half holds len bytes of call g (seq seen), `input`
        // len bytes; out holds len and overlaps input only in place.
        let acc = unsafe {
            crate::sys::copy(out, part(n - 1), len);
            std::slice::from_raw_parts_mut(out, len)
        };
        for i in (0..n - 1).rev() {
            // SAFETY: as above.
            let x = unsafe { std::slice::from_raw_parts(part(i), len) };
            apply_packed(op, dt, count, x, acc)?;
        }
    }
    a.finish();
    Ok(())
}

/// Allgather of `blk`-byte blocks: mine (at `mine`) and everyone's into
/// `out` (n * blk bytes, rank order). `mine` may be my block inside `out`.
///
/// # Safety
/// `mine` holds `blk` bytes, `out` n * blk; blk <= MAX_BYTES.
pub unsafe fn allgather(
    comm: std::os::raw::c_int,
    mine: *const u8,
    out: *mut u8,
    blk: usize,
) -> Result<()> {
    let Some(a) = area(comm, |_| blk)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: the half holds MAX_BYTES >= blk (contract).
    unsafe { crate::sys::copy(a.half(a.me), mine, blk) };
    a.publish();
    a.wait_seq(0..a.n)?;
    for i in 0..a.n {
        // SAFETY: every half holds blk bytes of call g (seq seen); out holds n * blk.
        unsafe { std::ptr::copy(a.half(i), out.add(i * blk), blk) };
    }
    a.finish();
    Ok(())
}

/// Alltoall of `blk`-byte blocks: my n blocks at `send`, block i of every
/// rank's into `out` at i * blk. `send` may equal `out` (in place).
///
/// # Safety
/// `send` and `out` hold n * blk bytes; n * blk <= MAX_BYTES.
pub unsafe fn alltoall(
    comm: std::os::raw::c_int,
    send: *const u8,
    out: *mut u8,
    blk: usize,
) -> Result<()> {
    let Some(a) = area(comm, |n| n * blk)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: as above.
    unsafe { crate::sys::copy(a.half(a.me), send, a.n * blk) };
    a.publish();
    a.wait_seq(0..a.n)?;
    for i in 0..a.n {
        // SAFETY: rank i's half holds its n blocks of call g (seq seen).
        unsafe { crate::sys::copy(out.add(i * blk), a.half(i).add(a.me * blk), blk) };
    }
    a.finish();
    Ok(())
}

/// Reduce-scatter of equal blocks: my n blocks (`count` elements of `dt`,
/// `blk` bytes each) at `input`; block `me` reduced over all ranks, in rank
/// order, into `out`.
///
/// # Safety
/// `input` holds n * blk bytes (n * blk <= MAX_BYTES), `out` blk bytes;
/// `out` may lie inside `input`.
pub unsafe fn reduce_scatter_block(
    comm: std::os::raw::c_int,
    input: *const u8,
    out: *mut u8,
    blk: usize,
    count: usize,
    dt: &Operand,
    op: &OpKind,
) -> Result<()> {
    let Some(a) = area(comm, |n| n * blk)? else {
        return Ok(());
    };
    a.before_write()?;
    // SAFETY: as above.
    unsafe { crate::sys::copy(a.half(a.me), input, a.n * blk) };
    a.publish();
    a.wait_seq(0..a.n)?;
    let n = a.n;
    let off = a.me * blk;
    // SAFETY: every half holds n blocks of call g; out holds blk bytes.
    let acc = unsafe {
        crate::sys::copy(out, a.half(n - 1).add(off), blk);
        std::slice::from_raw_parts_mut(out, blk)
    };
    for i in (0..n - 1).rev() {
        // SAFETY: as above.
        let x = unsafe { std::slice::from_raw_parts(a.half(i).add(off), blk) };
        apply_packed(op, dt, count, x, acc)?;
    }
    a.finish();
    Ok(())
}

/// Who moves a block from a source rank into a destination rank's output
/// in a single-copy allgather or alltoall, settled from the two payloads
/// both read: a device destination pulls (the CPU cannot write device
/// memory from another process); a device source pushes into a host
/// destination; between host ranks the form's own choice (`push`).
fn pusher(src_dev: bool, dst_dev: bool, push: bool) -> bool {
    !dst_dev && (src_dev || push)
}

/// `len` bytes at byte `off` of rank i's source buffer (described by `b`)
/// into my `dst`, which is device memory where `dev`: `process_vm_readv`
/// between host buffers; through host pieces into device memory from a
/// host source, or from a device source's host copy where we share a GPU
/// without MPS (`Buffers::bounce`); by CUDA IPC between other device
/// buffers (the source's reference published with its buffers).
///
/// # Safety
/// `dst` holds `len` bytes; rank i's source holds off + len and is not
/// given back before I am done.
#[allow(clippy::too_many_arguments)]
unsafe fn pull(
    a: &Area,
    comm: std::os::raw::c_int,
    b: &Buffers,
    i: usize,
    off: usize,
    dst: *mut u8,
    len: usize,
    dev: bool,
) -> Result<()> {
    // A host source, or a device source's host copy (which lies at its
    // output's address, `Buffers::bounce`), into my device memory.
    let host_pieces = |from: usize| {
        by_host_pieces(len, |tmp, at, l| {
            // SAFETY: tmp holds l bytes; [at, at + l) lies in both ranges.
            unsafe {
                cma_from(b, i, from + off + at, tmp, l)?;
                crate::gpu::copy(dst.add(at), tmp, l)
            }
        })
    };
    match (b.dev, dev) {
        // SAFETY: the caller's contract.
        (false, false) => unsafe { cma_from(b, i, b.src + off, dst, len) },
        (false, true) => host_pieces(b.src),
        (true, true) if b.bounce && a.buffers(a.me).gpu == b.gpu => host_pieces(b.dst),
        (true, _) => {
            let r = a.buffer_ref(i).ok_or_else(|| {
                crate::err!(
                    MPI_ERR_OTHER,
                    "rank {i} of the communicator could not export its device buffer for CUDA IPC"
                )
            })?;
            let world = ipc::world_ranks(comm)?;
            let src = crate::gpu::ipc::open(world[i], &r)?;
            // SAFETY: the caller's contract; `src` maps rank i's source.
            unsafe { crate::gpu::copy(dst, src.add(off), len) }
        }
    }
}

/// `len` bytes at my `src` (device memory where `dev`) into byte `off` of
/// host rank i's output: `process_vm_writev`, from host pieces of a device
/// source.
///
/// # Safety
/// `src` holds `len` bytes; rank i's output holds off + len, which no one
/// else writes in this call and rank i does not give back before I am done.
unsafe fn push(
    b: &Buffers,
    i: usize,
    off: usize,
    src: *const u8,
    len: usize,
    dev: bool,
) -> Result<()> {
    if !dev {
        // SAFETY: the caller's contract.
        return unsafe { cma_to(b, i, b.dst + off, src, len) };
    }
    by_host_pieces(len, |tmp, at, l| {
        // SAFETY: tmp holds l bytes; [at, at + l) lies in both ranges.
        unsafe {
            crate::gpu::copy(tmp, src.add(at), l)?;
            cma_to(b, i, b.dst + off + at, tmp, l)
        }
    })
}

/// Moves `len` bytes a piece at a time through a host buffer from the
/// pool (between device memory and another process): `step(tmp, at, l)`
/// moves bytes [at, at + l) through `tmp`, which holds `l` bytes; the
/// first error ends it.
fn by_host_pieces(
    len: usize,
    mut step: impl FnMut(*mut u8, usize, usize) -> Result<()>,
) -> Result<()> {
    let piece = piece_bytes(1) * 16;
    let mut tmp = crate::core::pool::take(piece.min(len));
    let mut at = 0;
    let mut r = Ok(());
    while at < len && r.is_ok() {
        let l = piece.min(len - at);
        r = step(tmp.as_mut_ptr(), at, l);
        at += l;
    }
    crate::core::pool::give(tmp);
    r
}

/// What `pair_area` returns: the area, the outcome of exporting my
/// source (returned once the call is finished), and my source's host copy.
type Paired = (Area, Result<()>, Option<Vec<u8>>);

/// The area of a single-copy allgather, alltoall or bcast with my buffers
/// published: a device rank that is a source (every rank, or the `root`)
/// adds its source's IPC reference (a rank that
/// cannot export it publishes none; the error comes back with the area,
/// to be returned once the call is finished), its GPU's word, and where
/// its copies of `len` bytes could wait for a switch of a shared GPU
/// (`bounce_for`), a host copy of its source's first `whole(n)` bytes
/// (n ranks), returned
/// with the area: it is read until the call is finished, and goes back to
/// the pool then (`give_bounce`).
fn pair_area(
    comm: std::os::raw::c_int,
    src: *const u8,
    dst: *mut u8,
    dev: bool,
    root: Option<usize>,
    len: usize,
    whole: impl FnOnce(usize) -> usize,
) -> Result<Option<Paired>> {
    let Some(a) = area(comm, |_| BUFFERS_REF)? else {
        return Ok(None);
    };
    let (mut reference, mut status, mut host) = (None, Ok(()), None);
    let (bounce, gpu) = if dev {
        bounce_for(src, len)
    } else {
        (false, 0)
    };
    if dev && root.is_none_or(|r| r == a.me) {
        match crate::gpu::ipc::export(src) {
            Ok(r) => reference = Some(r),
            Err(e) => status = Err(e),
        }
        let whole = whole(a.n);
        if bounce && whole > 0 {
            let mut v = crate::core::pool::take(whole);
            // SAFETY: src holds `whole` bytes of device memory; v as many.
            match unsafe { crate::gpu::copy(v.as_mut_ptr(), src, whole) } {
                Ok(()) => host = Some(v),
                Err(e) => {
                    crate::core::pool::give(v);
                    status = status.and(Err(e));
                }
            }
        }
    }
    let at = host.as_mut().map_or(dst, |v| v.as_mut_ptr());
    a.publish_buffers_ref(src, at, dev, reference.as_ref(), gpu, host.is_some())?;
    Ok(Some((a, status, host)))
}

/// Gives a source's host copy (`pair_area`) back to the pool.
fn give_bounce(host: Option<Vec<u8>>) {
    if let Some(v) = host {
        crate::core::pool::give(v);
    }
}

/// A copy within my own buffers (device memory where `dev`).
///
/// # Safety
/// Both hold `len` bytes and do not overlap.
unsafe fn local_copy(dst: *mut u8, src: *const u8, len: usize, dev: bool) -> Result<()> {
    if dev {
        // SAFETY: the caller's contract.
        unsafe { crate::gpu::copy(dst, src, len) }
    } else {
        // SAFETY: the caller's contract.
        unsafe { crate::sys::copy(dst, src, len) };
        Ok(())
    }
}

/// Single-copy allgather of `blk`-byte blocks (see the module comment): mine
/// (at `mine`, which may be my block inside `out`) and everyone's into `out`
/// (n * blk bytes, rank order).
///
/// Device buffers (`dev`) are settled pair by pair (`pusher`); a rank
/// that is one pushes block by block, never in fused pieces.
///
/// # Safety
/// `mine` holds `blk` bytes, `out` n * blk (device memory where `dev`);
/// `cma_all()` holds.
pub unsafe fn allgather_cma(
    comm: std::os::raw::c_int,
    mine: *const u8,
    out: *mut u8,
    blk: usize,
    dev: bool,
) -> Result<()> {
    let pushes = blk <= allgather_push_max();
    // Both forms publish my block's address (and my output's, for the
    // pushers); a rank writes into rank i's output, or reads rank i's
    // block, as soon as rank i has published.
    let Some((a, status, host)) = pair_area(comm, mine, out, dev, None, blk, |_| blk)? else {
        return Ok(());
    };
    // SAFETY: out holds n * blk bytes.
    let at = unsafe { out.add(a.me * blk) };
    // `mine` either is my block of out (in place) or does not overlap out
    // (MPI forbids aliasing other than MPI_IN_PLACE).
    let own = !std::ptr::eq(at, mine);
    let fused = pushes && !dev && blk > allgather_fuse_min(a.n);
    let r = status.and_then(|()| {
        if fused {
            // Piece by piece: my own copy, then the same piece, still in
            // cache, into every other host rank's output (device ranks
            // pull; every other rank pushes to me, a host rank).
            a.all_buffers().and_then(|bufs| {
                let piece = piece_bytes(1);
                // The pieces of a block that `sys::copy` would copy whole with
                // non-temporal stores go the same way (2 ranks, 16 MiB blocks:
                // 0.91 of the time with ordinary stores).
                let stream = crate::sys::streams(blk);
                (0..blk).step_by(piece).try_for_each(|off| {
                    let len = piece.min(blk - off);
                    if own {
                        // SAFETY: bytes [off, off + len) of my block and of my
                        // block of out, which do not overlap.
                        unsafe {
                            if stream {
                                crate::sys::copy_streaming(at.add(off), mine.add(off), len)
                            } else {
                                crate::sys::copy(at.add(off), mine.add(off), len)
                            }
                        }
                    }
                    others(&a).filter(|&i| !bufs[i].dev).try_for_each(|i| {
                        let b = &bufs[i];
                        // SAFETY: as below, for a part of block me.
                        unsafe { cma_to(b, i, b.dst + a.me * blk + off, mine.add(off), len) }
                    })
                })
            })
        } else {
            others(&a).try_for_each(|i| {
                a.wait_seq(std::iter::once(i))?;
                let b = a.buffers(i);
                if pusher(dev, b.dev, pushes) {
                    // SAFETY: block me of rank i's output, written by me alone
                    // in this call; rank i does not return before I am done.
                    unsafe { push(&b, i, a.me * blk, mine, blk, dev)? };
                }
                if !pusher(b.dev, dev, pushes) {
                    // SAFETY: block i of out; rank i's source holds blk bytes.
                    unsafe { pull(&a, comm, &b, i, 0, out.add(i * blk), blk, dev)? };
                }
                Ok(())
            })
        }
    });
    let mut local = Ok(());
    let r = a.finish_single(r, || {
        if own && !fused {
            // SAFETY: as above.
            local = unsafe { local_copy(at, mine, blk, dev) };
        }
    });
    give_bounce(host);
    r.and(local)
}

/// Single-copy alltoall of `blk`-byte blocks: block i of my `send` goes to
/// rank i, block `me` of rank i's into `out` at i * blk. Not in place.
/// Device buffers (`dev`) are settled pair by pair (`pusher`, with
/// pulling as the host ranks' choice).
///
/// # Safety
/// `send` and `out` hold n * blk bytes (device memory where `dev`) and do
/// not overlap; `cma_all()` holds.
pub unsafe fn alltoall_cma(
    comm: std::os::raw::c_int,
    send: *const u8,
    out: *mut u8,
    blk: usize,
    dev: bool,
) -> Result<()> {
    let Some((a, status, host)) = pair_area(comm, send, out, dev, None, blk, |n| n * blk)? else {
        return Ok(());
    };
    // My own block first here (allgather copies it last): at 4 ranks on 2
    // cores this order measured 5-10% faster for alltoall from 64 KiB, the
    // other one 10-25% for allgather (docs/performance.md, fourth round).
    // SAFETY: both hold n * blk bytes.
    let r = status
        .and_then(|()| unsafe { local_copy(out.add(a.me * blk), send.add(a.me * blk), blk, dev) })
        .and_then(|()| {
            others(&a).try_for_each(|i| {
                a.wait_seq(std::iter::once(i))?;
                let b = a.buffers(i);
                if pusher(dev, b.dev, false) {
                    // SAFETY: block me of rank i's output, written by me alone.
                    unsafe { push(&b, i, a.me * blk, send.add(i * blk), blk, dev)? };
                }
                if !pusher(b.dev, dev, false) {
                    // SAFETY: block i of out; rank i's send buffer holds n * blk.
                    unsafe { pull(&a, comm, &b, i, a.me * blk, out.add(i * blk), blk, dev)? };
                }
                Ok(())
            })
        });
    let r = a.finish_single(r, || ());
    give_bounce(host);
    r
}

/// Single-copy allreduce of `count` elements of `esize` bytes (a builtin,
/// hence commutative, op): rank r reduces slice r of the vector, a
/// `REDUCE_PIECE` at a time (`reduce_part`, reading the others' parts of it
/// straight out of their input buffers, so the copies stay in cache), into
/// its own output, and writes each finished piece into every other rank's
/// output (`process_vm_writev`) while it is still in cache. Every slice is
/// computed once, so the result is bitwise identical on every rank; a rank
/// returns once every rank is done, when every slice has arrived
/// everywhere. `input` may equal `out` (in place): slice r of anyone's
/// input is read by rank r alone, piece by piece, before rank r writes that
/// piece.
///
/// Device buffers (`dev`, as every rank says in its payload) go by CUDA IPC
/// instead (`ipc::allreduce`); false (nothing done) where some ranks
/// published device buffers and others host ones (`kinds`).
///
/// # Safety
/// `input` and `out` hold `count * esize` bytes (of device memory where
/// `dev`); `cma_all()` holds.
#[allow(clippy::too_many_arguments)]
pub unsafe fn allreduce_cma(
    comm: std::os::raw::c_int,
    input: *const u8,
    out: *mut u8,
    count: usize,
    esize: usize,
    dt: std::os::raw::c_int,
    op: &OpKind,
    dev: bool,
) -> Result<bool> {
    let Some(a) = single_area(comm, input, out, dev)? else {
        return Ok(true);
    };
    let bufs = a.all_buffers();
    let slice = count * esize / a.n;
    if let Some(device) = bufs.as_ref().ok().and_then(|b| device_or_mixed(b, slice)) {
        a.finish_single(Ok(()), || ())?;
        return match device {
            true => {
                // SAFETY: forwarded contract; every rank's buffers are device memory.
                unsafe { ipc::allreduce(comm, input, out, count, esize, dt, op) }.map(|()| true)
            }
            false => Ok(false),
        };
    }
    let (lo, len) = reduce_slice(count, a.n, esize, a.me);
    let r = bufs.and_then(|bufs| {
        let piece = piece_bytes(esize);
        let mut at = 0;
        while at < len {
            let l = piece.min(len - at);
            // SAFETY: bytes lo + at .. + l of my buffers and every rank's
            // (the caller's contract; every rank passes the same count).
            unsafe {
                let (acc, mine) = (out.add(lo + at), input.add(lo + at));
                reduce_part(&a, &bufs, lo + at, l, acc, mine, esize, dt, op)?;
                for j in others(&a) {
                    cma_to(&bufs[j], j, bufs[j].dst + lo + at, acc, l)?;
                }
            }
            at += l;
        }
        Ok(())
    });
    a.finish_single(r, || ()).map(|()| true)
}

/// Single-copy reduce of `count` elements of `esize` bytes (a builtin op)
/// to `root`: rank r reduces slice r of the vector (`rooted_slice`: the
/// root's is longer) as in `allreduce_cma`,
/// a `REDUCE_PIECE` at a time, and writes each finished piece straight into
/// the root's output (`process_vm_writev`), so the root does 1/n of the
/// work instead of all of it. `out` is null except at the root; there it
/// may equal `input` (in place): slice j of the root's input is read by
/// rank j alone, piece by piece, before rank j writes that piece.
///
/// Device buffers go by CUDA IPC, and a mix is refused, as in
/// `allreduce_cma`.
///
/// # Safety
/// `input` holds `count * esize` bytes, as does `out` at the root (device
/// memory where `dev`); `cma_all()` holds.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce_cma(
    comm: std::os::raw::c_int,
    input: *const u8,
    out: *mut u8,
    count: usize,
    esize: usize,
    dt: std::os::raw::c_int,
    op: &OpKind,
    root: usize,
    dev: bool,
) -> Result<bool> {
    let Some(a) = single_area(comm, input, out, dev)? else {
        return Ok(true);
    };
    let bufs = a.all_buffers();
    let slice = count * esize / a.n;
    if let Some(device) = bufs.as_ref().ok().and_then(|b| device_or_mixed(b, slice)) {
        a.finish_single(Ok(()), || ())?;
        return match device {
            true => {
                // SAFETY: forwarded contract; every rank's buffers are device memory.
                unsafe { ipc::reduce(comm, input, out, count, esize, dt, op, root) }.map(|()| true)
            }
            false => Ok(false),
        };
    }
    let (lo, len) = rooted_slice(count, a.n, esize, a.me, root);
    let r = bufs.and_then(|bufs| {
        if a.me == root {
            // SAFETY: my slice of my input and output (the caller's contract).
            return unsafe {
                reduce_part(
                    &a,
                    &bufs,
                    lo,
                    len,
                    out.add(lo),
                    input.add(lo),
                    esize,
                    dt,
                    op,
                )
            };
        }
        let piece = piece_bytes(esize);
        let mut acc = crate::core::pool::take(piece.min(len));
        let r = (|| -> Result<()> {
            let mut at = 0;
            while at < len {
                let l = piece.min(len - at);
                // SAFETY: bytes lo + at .. + l of my input and every rank's; acc
                // holds l bytes and is my own.
                unsafe {
                    let mine = input.add(lo + at);
                    reduce_part(&a, &bufs, lo + at, l, acc.as_mut_ptr(), mine, esize, dt, op)?;
                }
                // SAFETY: the root's output holds count * esize bytes and the
                // root does not return before I am done.
                unsafe { cma_to(&bufs[root], root, bufs[root].dst + lo + at, acc.as_ptr(), l)? };
                at += l;
            }
            Ok(())
        })();
        crate::core::pool::give(acc);
        r
    });
    a.finish_single(r, || ()).map(|()| true)
}

/// Single-copy reduce-scatter of equal blocks of `blk` bytes (`count`
/// elements of `dt`, a builtin op): rank r reduces block r of every rank's
/// input (`reduce_part`, reading the others' straight out of their
/// buffers) into `out`. In place (`out` is the start of `input`), the
/// result waits in a scratch block until every rank has finished reading
/// my input, whose first block others still read.
///
/// Device buffers go by CUDA IPC, and a mix is refused, as in
/// `allreduce_cma`.
///
/// # Safety
/// `input` holds n * blk bytes, `out` blk (device memory where `dev`);
/// `cma_all()` holds.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce_scatter_block_cma(
    comm: std::os::raw::c_int,
    input: *const u8,
    out: *mut u8,
    blk: usize,
    count: usize,
    dt: std::os::raw::c_int,
    op: &OpKind,
    dev: bool,
) -> Result<bool> {
    let Some(a) = single_area(comm, input, out, dev)? else {
        return Ok(true);
    };
    let bufs = a.all_buffers();
    if let Some(device) = bufs.as_ref().ok().and_then(|b| device_or_mixed(b, blk)) {
        a.finish_single(Ok(()), || ())?;
        return match device {
            // SAFETY: forwarded contract; every rank's buffers are device memory.
            true => unsafe { ipc::reduce_scatter_block(comm, input, out, blk, count, dt, op) }
                .map(|()| true),
            false => Ok(false),
        };
    }
    let in_place = std::ptr::eq(input, out);
    let mut scratch = crate::core::pool::take(if in_place { blk } else { 0 });
    let acc = if in_place { scratch.as_mut_ptr() } else { out };
    let esize = blk.checked_div(count).unwrap_or(1);
    let r = bufs.and_then(|bufs| {
        // SAFETY: block me of my input and every rank's (n * blk bytes
        // each); acc holds blk bytes and overlaps neither.
        unsafe {
            reduce_part(
                &a,
                &bufs,
                a.me * blk,
                blk,
                acc,
                input.add(a.me * blk),
                esize,
                dt,
                op,
            )
        }
    });
    a.finish_single(r, || ())?;
    if in_place {
        // SAFETY: out holds blk bytes; nobody reads my input any more.
        unsafe { crate::sys::copy(out, acc, blk) };
    }
    crate::core::pool::give(scratch);
    Ok(true)
}

/// Bytes [lo, lo + len) of the slice rank i reduces in a single-copy
/// reduction of `count` elements of `esize` bytes over n ranks: near-equal
/// slices, cut at 64-byte multiples where the element size allows.
fn reduce_slice(count: usize, n: usize, esize: usize, i: usize) -> (usize, usize) {
    let unit = if esize > 0 && 64 % esize == 0 {
        64 / esize
    } else {
        1
    };
    let per = count.div_ceil(n).next_multiple_of(unit);
    let start = (i * per).min(count);
    let end = ((i + 1) * per).min(count);
    (start * esize, (end - start) * esize)
}

/// Bytes [lo, lo + len) of the slice rank i reduces in a single-copy reduce
/// to `root`: a non-root reads, reduces and then writes its slice into the
/// root's buffer, the root only reads and reduces, so the root's slice is
/// longer in that proportion (per element, a non-root takes one step
/// more than the root's 2(n - 1)). Slices follow rank order, cut at
/// 64-byte multiples where the element size allows; every rank computes
/// the same ones. At 2 ranks, 256 KiB-4 MiB took 0.62-0.93 of the time of
/// equal slices (docs/performance.md, fifth round).
fn rooted_slice(count: usize, n: usize, esize: usize, i: usize, root: usize) -> (usize, usize) {
    let unit = if esize > 0 && 64 % esize == 0 {
        64 / esize
    } else {
        1
    };
    let steps = 2 * (n as u128).saturating_sub(1);
    // Weights inverse to each rank's steps per element.
    let weight = |j: usize| if j == root { steps + 1 } else { steps.max(1) };
    let total: u128 = (0..n).map(weight).sum();
    let edge = |k: usize| -> usize {
        if k >= n {
            return count;
        }
        let before: u128 = (0..k).map(weight).sum();
        let e = (before * count as u128 / total) as usize;
        (e / unit * unit).min(count)
    };
    let (start, end) = (edge(i), edge(i + 1));
    (start * esize, (end - start) * esize)
}

/// Bytes read from each rank per step of a single-copy reduction: the
/// piece, the accumulator and my part (768 KiB) stay in a core's L2 (1.25
/// MiB here). At 4 ranks on 2 cores, 512 KiB-16 MiB allreduces took
/// 0.72-0.92 of the time they took with 64 KiB pieces (docs/performance.md,
/// fifth round).
const REDUCE_PIECE: usize = 256 << 10;

/// `REDUCE_PIECE` rounded down to whole elements of `esize` bytes (at least
/// one).
fn piece_bytes(esize: usize) -> usize {
    let esize = esize.max(1);
    (REDUCE_PIECE / esize).max(1) * esize
}

/// Reduces bytes [lo, lo + len) of every rank's input into `acc`,
/// `REDUCE_PIECE` bytes at a time: the next ranks' parts (me + 1, me + 2,
/// ...) each op the accumulator, which starts as my own part. `mine` is
/// that range of my own input; it may equal `acc` (in place), which then
/// holds my part already. A builtin op is commutative, and the slice is
/// reduced by this rank alone, in an order fixed by its rank, so every rank
/// gets the same bits whatever the timing; no part is copied before it is
/// reduced.
///
/// # Safety
/// `acc` and `mine` hold `len` bytes; every rank's input holds lo + len.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_part(
    a: &Area,
    bufs: &[Buffers],
    lo: usize,
    len: usize,
    acc: *mut u8,
    mine: *const u8,
    esize: usize,
    dt: std::os::raw::c_int,
    op: &OpKind,
) -> Result<()> {
    let esize = esize.max(1);
    let piece = piece_bytes(esize);
    let in_place = std::ptr::eq(acc, mine);
    // Reused (`pool`): a fresh buffer of this size costs a page fault per
    // 4 KiB, at 512 KiB more than the reduction itself.
    let mut tmp = crate::core::pool::take(piece.min(len));
    let r = (|| -> Result<()> {
        let mut at = 0;
        while at < len {
            let l = piece.min(len - at);
            let cnt = l / esize;
            // SAFETY: [at, at + l) lies in both ranges (the caller's contract).
            let (acc_p, mine_p) = unsafe { (acc.add(at), mine.add(at)) };
            let mut rest = others(a);
            if !in_place {
                match rest.next() {
                    // SAFETY: acc holds l bytes here; rank i's input lo + at + l.
                    Some(i) => unsafe { cma_from(&bufs[i], i, bufs[i].src + lo + at, acc_p, l)? },
                    // SAFETY: both hold l bytes and do not overlap (MPI's rule).
                    None => unsafe { crate::sys::copy(acc_p, mine_p, l) },
                }
            }
            // SAFETY: acc_p holds l bytes, written only here.
            let accs = unsafe { std::slice::from_raw_parts_mut(acc_p, l) };
            for i in rest {
                // SAFETY: tmp holds l bytes; rank i's input lo + at + l.
                unsafe { cma_from(&bufs[i], i, bufs[i].src + lo + at, tmp.as_mut_ptr(), l)? };
                apply(op, dt, cnt, &tmp[..l], accs)?;
            }
            if !in_place && a.n > 1 {
                // SAFETY: mine_p holds l bytes and does not overlap acc.
                let x = unsafe { std::slice::from_raw_parts(mine_p, l) };
                apply(op, dt, cnt, x, accs)?;
            }
            at += l;
        }
        Ok(())
    })();
    crate::core::pool::give(tmp);
    r
}

/// `len` bytes at `src` to address `remote` of rank i (described by `b`).
///
/// # Safety
/// `src` is readable for `len` bytes; the remote range lies in a buffer
/// rank i published for this call, which it does not give back before I am
/// done, and no one else writes or reads it in this call.
unsafe fn cma_to(b: &Buffers, i: usize, remote: usize, src: *const u8, len: usize) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { crate::sys::cma_write(b.pid, remote, src, len) }.map_err(|e| {
        crate::err!(
            MPI_ERR_OTHER,
            "process_vm_writev of {len} bytes to rank {i} of the communicator failed: {e}"
        )
    })
}

/// `len` bytes at address `remote` of rank i (described by `b`) into `dst`.
///
/// # Safety
/// `dst` is writable for `len` bytes; the remote range lies in a buffer
/// rank i published for this call and does not give back before I am done.
unsafe fn cma_from(b: &Buffers, i: usize, remote: usize, dst: *mut u8, len: usize) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { crate::sys::cma_read(b.pid, remote, dst, len) }.map_err(|e| {
        crate::err!(
            MPI_ERR_OTHER,
            "process_vm_readv of {len} bytes from rank {i} of the communicator failed: {e}"
        )
    })
}

/// Single-copy bcast of `len` bytes, the copying split between the root
/// and the readers (the root would idle otherwise): every rank but the
/// root reads the first len - len / n bytes (cut at 64 bytes) out of the
/// root's `buf`, while the root writes the last len / n into each reader's
/// (`process_vm_writev`) as soon as that reader has published its buffer.
/// Everyone returns once every rank is done, so every write has landed.
///
/// Device buffers (`dev`, published with the buffers) are settled pair by
/// pair, from the two payloads both sides of a pair read, so both agree: a
/// device reader takes the whole message itself (by CUDA IPC out of a
/// device root's buffer, whose reference the root publishes; through host
/// pieces out of a host root's, or out of a device root's host copy where
/// the two share a GPU without MPS, `pull`), and a device root writes the
/// whole message into each host reader (from one host copy of its buffer).
///
/// # Safety
/// `buf` holds `len` bytes (of device memory where `dev`); `cma_all()`
/// holds.
pub unsafe fn bcast_cma(
    comm: std::os::raw::c_int,
    buf: *mut u8,
    len: usize,
    root: usize,
    dev: bool,
) -> Result<()> {
    // A device root publishes its buffer's reference for device readers
    // (one that cannot export it publishes none, and they fail), and its
    // host copy where they might share its GPU without MPS (`pair_area`).
    let Some((a, export_err, bounce)) = pair_area(comm, buf, buf, dev, Some(root), len, |_| len)?
    else {
        return Ok(());
    };
    let share = (len / a.n) & !63;
    let r = if a.me == root {
        // My device buffer's bytes in host memory, made for the first host
        // reader (or already made for readers of my GPU).
        let mut host_copy: Option<Vec<u8>> = bounce;
        let r = others(&a).try_for_each(|i| {
            a.wait_seq(std::iter::once(i))?;
            let b = a.buffers(i);
            match (dev, b.dev) {
                // SAFETY: the last `share` bytes of rank i's buffer (len
                // bytes, as MPI requires), which it does not read or write
                // in this call and does not give back before I am done.
                (false, false) => unsafe {
                    cma_to(&b, i, b.dst + len - share, buf.add(len - share), share)
                },
                // A device reader takes it all.
                (_, true) => Ok(()),
                (true, false) => {
                    if host_copy.is_none() {
                        let mut v = crate::core::pool::take(len);
                        // SAFETY: buf holds len bytes of device memory.
                        unsafe { crate::gpu::copy(v.as_mut_ptr(), buf, len)? };
                        host_copy = Some(v);
                    }
                    let h = host_copy.as_ref().unwrap();
                    // SAFETY: rank i's buffer holds len bytes; it reads none
                    // of it in this call (its root is a device one).
                    unsafe { cma_to(&b, i, b.dst, h.as_ptr(), len) }
                }
            }
        });
        // Readers may still read my host copy: given back once all are done.
        let r = export_err.and(r);
        let r = a.finish_single(r, || ());
        give_bounce(host_copy);
        return r;
    } else {
        (|| -> Result<()> {
            a.wait_seq(std::iter::once(root))?;
            let rb = a.buffers(root);
            match (rb.dev, dev) {
                // SAFETY: buf holds len bytes, as does the root's.
                (false, false) => unsafe { a.read_source(root, 0, buf, len - share) },
                // The device root writes it all.
                (true, false) => Ok(()),
                // A device reader takes it all (`pull`).
                // SAFETY: buf holds len bytes, as does the root's.
                (_, true) => unsafe { pull(&a, comm, &rb, root, 0, buf, len, true) },
            }
        })()
    };
    a.finish_single(r, || ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slices of a single-copy reduce cover the vector once, in rank
    /// order, cut at 64-byte multiples, with the root's the longest
    /// (up to rounding) and the others' equal within a cut.
    #[test]
    fn rooted_slices_tile_the_vector() {
        for n in 1..=9 {
            for root in 0..n {
                for &(count, esize) in &[
                    (0, 4),
                    (1, 4),
                    (7, 8),
                    (1000, 4),
                    (100003, 8),
                    (65536, 2),
                    (999, 3),
                ] {
                    let unit = if 64 % esize == 0 { 64 / esize } else { 1 };
                    let mut next = 0;
                    let mut lens = Vec::new();
                    for i in 0..n {
                        let (lo, len) = rooted_slice(count, n, esize, i, root);
                        assert_eq!(
                            lo, next,
                            "n {n} root {root} count {count}: slice {i} starts at {lo}"
                        );
                        assert!(
                            lo % (unit * esize) == 0 || len == 0,
                            "slice {i} at {lo} not cut at 64 bytes"
                        );
                        next = lo + len;
                        lens.push(len / esize);
                    }
                    assert_eq!(
                        next,
                        count * esize,
                        "n {n} root {root} count {count}: slices end at {next}"
                    );
                    let others = (0..n).filter(|&i| i != root).map(|i| lens[i]);
                    if let Some(most) = others.clone().max() {
                        assert!(
                            lens[root] + unit >= most,
                            "n {n} root {root} count {count}: {lens:?}"
                        );
                        let least = others.min().unwrap();
                        assert!(
                            most - least <= 2 * unit,
                            "n {n} root {root} count {count}: {lens:?}"
                        );
                    }
                }
            }
        }
    }

    /// `AreaClock::advance` against a naive model that remembers every
    /// region: over random call sizes (inline, small, up to `MAX_BYTES`),
    /// each region lies inside the data, 64-byte aligned; the call it waits
    /// for is earlier than itself and at least g - 64; and the calls waited
    /// for so far (each rank makes every call in order, and one that does
    /// not write in a call waits for one that did) cover the last earlier
    /// call whose region it overlaps, so nothing still read is overwritten.
    #[test]
    fn advance_never_overwrites_a_region_in_use() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..20 {
            let mut clock = AreaClock::default();
            // (g, start, end) of every call with a region.
            let mut regions: Vec<(u64, usize, usize)> = Vec::new();
            let mut waited = 0;
            for _ in 0..3000 {
                let len = match rnd() % 4 {
                    0 => (rnd() % (INLINE as u64 + 1)) as usize,
                    1 => (rnd() % 4096) as usize,
                    2 => (rnd() % (32 << 10)) as usize,
                    _ => (rnd() % (MAX_BYTES as u64 + 1)) as usize,
                };
                let (g, start, need) = clock.advance(len);
                assert!(
                    need < g,
                    "round {round}: call {g} waits for itself ({need})"
                );
                assert!(
                    need >= g.saturating_sub(DEPTH),
                    "call {g}: need {need} below g - 64"
                );
                waited = waited.max(need);
                if len <= INLINE {
                    continue;
                }
                let end = start + len;
                assert!(
                    start % 64 == 0 && end <= DATA,
                    "call {g}: region {start}..{end}"
                );
                let last = regions
                    .iter()
                    .filter(|&&(_, s, e)| s < end && start < e)
                    .map(|&(g2, _, _)| g2)
                    .max()
                    .unwrap_or(0);
                assert!(
                    waited >= last,
                    "round {round}: call {g} ({start}..{end}) after waiting for {waited}, but call {last} overlaps it"
                );
                regions.push((g, start, end));
            }
        }
    }
}
