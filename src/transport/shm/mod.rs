//! Shared-memory transport between the ranks of one node.
//!
//! Owns: the job's segment (create, attach, unlink, `setup`), laid out as one
//! SPSC ring per ordered pair of local ranks, then the split-copy slots
//! (`SplitSlot`, 64 per ordered pair: the shared counters of a copy made by
//! both sides), world's collective area and the pool of areas for other
//! communicators (`coll::shm` reads and writes their slots and call lines),
//! and the table of pool entries (every shared struct in `layout`). Calls
//! `sys`, its `ring`, `copy` (single copy) and `split` (split copies). Knows
//! no tags or communicators: it moves cells whose header the core fills in;
//! the core's matching engine interprets them. The CMA probe that decides
//! whether the single-copy collectives may run (`probe_cma`) lives here too.
//!
//! Segment life: the lowest rank of the node creates `/oxmpi-<job>-<rank>`
//! (mode 0600, O_EXCL), initialises every ring, then publishes the magic word;
//! the others poll for it, attach and count themselves in `attached`; the
//! creator unlinks the name once the count is complete (at the latest after
//! the barrier that ends MPI_Init's setup), so a crash after MPI_Init leaks
//! nothing. `mpirun` also removes `/dev/shm/oxmpi-<job>-*` when
//! the job ends, for crashes during MPI_Init.

pub mod copy;
pub mod layout;
pub mod ring;
pub mod split;

use super::hdr::Hdr;
use crate::sys::ShmMap;
use layout::SegHeader;
pub use layout::{CallLine, PoolEntry, SlotHeader, SplitSlot};
use ring::{CellHeader, Consumer, Producer};
use std::io;
use std::sync::atomic::Ordering;

const MAGIC: u64 = 0x4f78_4d50_4953_484d; // "OxMPISHM"
const VERSION: u32 = 5;

/// Collective area, after the rings: one slot per local rank with its
/// `done` counter on the header's second cache line (at 64), `COLL_LINES`
/// call lines (at 128, one per call in flight: `seq`, context id, small
/// payloads) and `COLL_DATA` bytes of data, a ring of regions for larger
/// payloads (see `coll::shm`). World's slots also hold, written once during
/// MPI_Init, the rank's CMA probe result at byte 8 and the address of its
/// mapping at byte 16 (`publish_base`, `probe_cma`).
pub const COLL_LINES: usize = 64;
/// Bytes of a call line: two cache lines, which the adjacent-line
/// prefetcher fetches together.
pub const COLL_LINE_BYTES: usize = 128;
pub const COLL_HDR: usize = 128 + COLL_LINE_BYTES * COLL_LINES;
/// Largest payload of one call through the area.
pub const COLL_HALF: usize = 128 << 10;
/// Data bytes of a slot (a power of two): room for two calls of
/// `COLL_HALF` in flight, and many small ones. (The area is 9 * nlocal
/// slots: 8 local ranks take 19 MiB of /dev/shm for it, the rings 33 MiB.)
pub const COLL_DATA: usize = 2 * COLL_HALF;
pub const COLL_SLOT: usize = COLL_HDR + COLL_DATA;
const HEADER_BYTES: usize = 4096;

/// Split-copy slots per ordered pair of local ranks, after the collective
/// area: a large message copied by both sides keeps its shared counters in
/// one (see `split`). Allocated by the receiver.
pub const SPLIT_SLOTS: usize = 64;

/// Collective areas for communicators other than world (see `coll::shm`):
/// each has a table entry and `nlocal` slots laid out like world's area.
pub const POOL_AREAS: usize = 8;

pub struct Shm {
    map: ShmMap,
    name: String,
    creator: bool,
    unlinked: bool,
    nlocal: usize,
    /// Producer cursors, by destination local index (None for self).
    tx: Vec<Option<Producer>>,
    /// Consumer cursors, by source local index (None for self).
    rx: Vec<Option<Consumer>>,
    payload: usize,
    /// Offset of the collective area.
    coll: usize,
    /// This rank's local index.
    me: usize,
}

/// Name of the segment of job `job` whose creator has rank `leader`.
pub fn segment_name(job: &str, leader: i32) -> String {
    let j: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(160)
        .collect();
    format!("/oxmpi-{j}-{leader}")
}

fn seg_bytes(nlocal: usize, cells: usize, cell_bytes: usize) -> usize {
    HEADER_BYTES
        + nlocal * nlocal * ring::ring_bytes(cells, cell_bytes)
        + nlocal * COLL_SLOT
        + nlocal * nlocal * SPLIT_SLOTS * std::mem::size_of::<SplitSlot>()
        + POOL_AREAS * (std::mem::size_of::<PoolEntry>() + nlocal * COLL_SLOT)
}

impl Shm {
    /// Creates (me == 0) or attaches to the node's segment. `timeout_s` bounds the
    /// wait for the creator.
    pub fn setup(
        name: &str,
        me: usize,
        nlocal: usize,
        cells: usize,
        cell_bytes: usize,
    ) -> io::Result<Shm> {
        let len = seg_bytes(nlocal, cells, cell_bytes);
        let creator = me == 0;
        let map = if creator {
            let m = ShmMap::create(name, len)?;
            let h = m.base() as *mut SegHeader;
            // SAFETY: the fresh mapping is ours alone until `magic` is published,
            // it is zero-filled and large enough for the header and all rings.
            unsafe {
                (*h).version = VERSION;
                (*h).nlocal = nlocal as u32;
                (*h).cells = cells as u32;
                (*h).cell_bytes = cell_bytes as u32;
                (*h).attached.store(0, Ordering::Relaxed);
                for i in 0..nlocal * nlocal {
                    ring::init(
                        m.base()
                            .add(HEADER_BYTES + i * ring::ring_bytes(cells, cell_bytes)),
                    );
                }
                // Release: publishes the initialised header and rings; pairs with
                // the Acquire load of `magic` by attaching ranks below.
                (*h).magic.store(MAGIC, Ordering::Release);
            }
            m
        } else {
            let start = crate::sys::now();
            let mut backoff = crate::backoff::Backoff::new_default();
            loop {
                // The header first: a creator that counts another number of
                // ranks on the node made a segment of another size, which
                // the full-size open below would wait for in vain.
                if let Some(hm) = ShmMap::open(name, HEADER_BYTES)? {
                    let h = hm.base() as *const SegHeader;
                    // Acquire: pairs with the creator's Release store of `magic`.
                    // SAFETY: the mapping holds the header.
                    if unsafe { (*h).magic.load(Ordering::Acquire) } == MAGIC {
                        // SAFETY: header initialised (magic published).
                        let (v, n, c, b) =
                            unsafe { ((*h).version, (*h).nlocal, (*h).cells, (*h).cell_bytes) };
                        if v != VERSION || n as usize != nlocal {
                            return Err(io::Error::other(format!(
                                "shared segment {name} was made for {n} ranks on this node (layout {v}) where this rank counts {nlocal} (layout {VERSION}): the ranks disagree on which of them share the node"
                            )));
                        }
                        if c as usize != cells || b as usize != cell_bytes {
                            return Err(io::Error::other(format!(
                                "shared segment {name} has a different layout (OXMPI_RING_CELLS / OXMPI_CELL_BYTES must be equal on all ranks)"
                            )));
                        }
                        // The creator sized the object before publishing `magic`.
                        if let Some(m) = ShmMap::open(name, len)? {
                            break m;
                        }
                    }
                }
                if crate::sys::now() - start > 60.0 {
                    return Err(io::Error::other(format!(
                        "timed out waiting for shared segment {name}"
                    )));
                }
                backoff.snooze();
            }
        };
        let h = map.base() as *const SegHeader;
        // AcqRel: our attachment is counted after our mapping exists; pairs with the
        // creator's Acquire load in `try_unlink`.
        // SAFETY: header initialised.
        unsafe { (*h).attached.fetch_add(1, Ordering::AcqRel) };
        let rb = ring::ring_bytes(cells, cell_bytes);
        let ring_at = |s: usize, r: usize| {
            // SAFETY: (s, r) < nlocal², inside the mapping.
            unsafe { map.base().add(HEADER_BYTES + (s * nlocal + r) * rb) }
        };
        let mut tx = Vec::with_capacity(nlocal);
        let mut rx = Vec::with_capacity(nlocal);
        for p in 0..nlocal {
            if p == me {
                tx.push(None);
                rx.push(None);
            } else {
                // SAFETY: ring (me -> p) has this rank as its only producer, ring
                // (p -> me) has it as its only consumer; the mapping outlives the cursors.
                unsafe {
                    tx.push(Some(Producer::new(ring_at(me, p), cells, cell_bytes)));
                    rx.push(Some(Consumer::new(ring_at(p, me), cells, cell_bytes)));
                }
            }
        }
        let mut s = Shm {
            map,
            name: name.to_string(),
            creator,
            unlinked: !creator,
            nlocal,
            tx,
            rx,
            payload: cell_bytes,
            coll: HEADER_BYTES + nlocal * nlocal * rb,
            me,
        };
        // World's collective area serves every small collective from the
        // first call: its pages are mapped now, not one fault per page
        // during the first round of the region ring.
        s.map.populate(s.coll, nlocal * COLL_SLOT);
        s.try_unlink();
        Ok(s)
    }

    /// Creator: removes the name once every local rank has attached (called
    /// at setup and after the barrier that follows every rank's setup).
    pub fn try_unlink(&mut self) -> bool {
        if self.unlinked {
            return true;
        }
        let h = self.map.base() as *const SegHeader;
        // Acquire: pairs with the AcqRel increments of attaching ranks.
        // SAFETY: header initialised.
        if unsafe { (*h).attached.load(Ordering::Acquire) } as usize == self.nlocal {
            ShmMap::unlink(&self.name);
            self.unlinked = true;
        }
        self.unlinked
    }

    pub fn is_creator(&self) -> bool {
        self.creator
    }

    pub fn payload(&self) -> usize {
        self.payload
    }

    /// Free cells towards local rank `peer`.
    #[inline]
    pub fn free_cells(&mut self, peer: usize) -> u64 {
        self.tx[peer].as_mut().map(|p| p.free_cells()).unwrap_or(0)
    }

    /// Pushes one cell towards local rank `peer`; see `ring::Producer::push` for `inline`.
    #[inline]
    pub fn push(&mut self, peer: usize, hdr: &Hdr, payload: &[u8], inline: bool) -> bool {
        let hdr = &cell_of(hdr);
        match self.tx[peer].as_mut() {
            Some(p) => p.push(hdr, payload, inline),
            None => false,
        }
    }

    /// Oldest unread cell from local rank `peer`; valid until `release(peer)`.
    #[inline]
    pub fn peek(&mut self, peer: usize) -> Option<(Hdr, *const u8)> {
        self.rx[peer]
            .as_mut()
            .and_then(|c| c.peek())
            .map(|(h, p)| (hdr_of(&h), p))
    }

    #[inline]
    pub fn release(&mut self, peer: usize) {
        if let Some(c) = self.rx[peer].as_mut() {
            c.release()
        }
    }

    /// Moves past the oldest cell from `peer`; the cell goes back to the
    /// producer at the next `publish(peer)` (which must follow before this
    /// rank stops reading that ring).
    #[inline]
    pub fn skip(&mut self, peer: usize) {
        if let Some(c) = self.rx[peer].as_mut() {
            c.skip()
        }
    }

    #[inline]
    pub fn publish(&mut self, peer: usize) {
        if let Some(c) = self.rx[peer].as_mut() {
            c.publish()
        }
    }

    pub fn nlocal(&self) -> usize {
        self.nlocal
    }

    /// This rank's local index.
    pub fn me(&self) -> usize {
        self.me
    }

    /// Split-copy slot `k` of messages from local rank `from` to local rank `to`.
    pub fn split_slot(&self, from: usize, to: usize, k: usize) -> &SplitSlot {
        assert!(from < self.nlocal && to < self.nlocal && k < SPLIT_SLOTS);
        let at = self.coll
            + self.nlocal * COLL_SLOT
            + ((from * self.nlocal + to) * SPLIT_SLOTS + k) * std::mem::size_of::<SplitSlot>();
        // SAFETY: the slot area lies inside the mapping (seg_bytes), 64-byte
        // aligned (every area before it is a multiple of 64 bytes), zeroed at
        // creation; SplitSlot holds atomics only, shared by the two ranks.
        unsafe { &*(self.map.base().add(at) as *const SplitSlot) }
    }

    /// The header of local rank `li`'s slot in world's collective area.
    pub fn slot_header(&self, li: usize) -> &SlotHeader {
        // SAFETY: the slot starts 64-byte aligned inside the mapping (every
        // area before it is a multiple of 64 bytes) with a SlotHeader, which
        // holds atomics and plain bytes only, zeroed at creation; shared by
        // every local rank for the life of the mapping.
        unsafe { &*(self.coll_slot(li) as *const SlotHeader) }
    }

    /// Writes where this rank mapped the segment, for the others' CMA probe
    /// (before the barrier that ends the segment's setup).
    pub fn publish_base(&self) {
        // Release: pairs with the Acquire load in `probe_cma`, which runs
        // after the barrier (the barrier alone already orders it).
        self.slot_header(self.me)
            .base
            .store(self.map.base() as u64, Ordering::Release);
    }

    /// After every local rank has published its base: reads each peer's base
    /// word out of the peer's own memory with `process_vm_readv` and checks
    /// it, then records 1 (every read worked) or 2 (one was refused, or
    /// `enabled` is false) in this rank's probe word. `pids[li]` is local
    /// rank li's process id.
    pub fn probe_cma(&self, pids: &[i32], enabled: bool) {
        let mut ok = enabled;
        for (li, &pid) in pids.iter().enumerate().take(self.nlocal) {
            if li == self.me || !ok {
                continue;
            }
            // Acquire: pairs with `publish_base` of rank li.
            let base = self.slot_header(li).base.load(Ordering::Acquire);
            let at =
                base as usize + self.coll + li * COLL_SLOT + std::mem::offset_of!(SlotHeader, base);
            let mut got = 0u64;
            // SAFETY: `got` is a writable 8-byte local; the remote address is
            // rank li's own base word in its mapping.
            let r = unsafe { crate::sys::cma_read(pid, at, &mut got as *mut u64 as *mut u8, 8) };
            ok = r.is_ok() && got == base;
        }
        // Release: pairs with the Acquire loads in `cma_agreed`.
        self.slot_header(self.me)
            .cma_probe
            .store(if ok { 1 } else { 2 }, Ordering::Release);
    }

    /// Every local rank's probe result once all are in: Some(true) when
    /// every rank can read every other's memory, None while one is missing.
    pub fn cma_agreed(&self) -> Option<bool> {
        let mut all = true;
        for li in 0..self.nlocal {
            // Acquire: pairs with the Release store in `probe_cma`.
            match self.slot_header(li).cma_probe.load(Ordering::Acquire) {
                0 => return None,
                v => all &= v == 1,
            }
        }
        Some(all)
    }

    /// Start of local rank `li`'s collective slot (`COLL_SLOT` bytes, zeroed
    /// at creation, shared by every local rank for the life of the mapping).
    pub fn coll_slot(&self, li: usize) -> *mut u8 {
        assert!(li < self.nlocal);
        // SAFETY: the area holds nlocal slots inside the mapping.
        unsafe { self.map.base().add(self.coll + li * COLL_SLOT) }
    }
}

impl Shm {
    /// Offset of the pool table (after the split-copy slots).
    fn pool_at(&self) -> usize {
        self.coll
            + self.nlocal * COLL_SLOT
            + self.nlocal * self.nlocal * SPLIT_SLOTS * std::mem::size_of::<SplitSlot>()
    }

    fn pool_entry(&self, k: usize) -> &PoolEntry {
        assert!(k < POOL_AREAS);
        // SAFETY: the table lies inside the mapping (seg_bytes), 64-byte
        // aligned (every area before it is a multiple of 64 bytes), zeroed at
        // creation; PoolEntry holds atomics only, shared by every local rank.
        unsafe {
            &*(self
                .map
                .base()
                .add(self.pool_at() + k * std::mem::size_of::<PoolEntry>())
                as *const PoolEntry)
        }
    }

    /// Start of slot `i` of pool area `k` (`COLL_SLOT` bytes; counters and
    /// call lines zero whenever the area is free).
    pub fn pool_slot(&self, k: usize, i: usize) -> *mut u8 {
        assert!(k < POOL_AREAS && i < self.nlocal);
        let at = self.pool_at()
            + POOL_AREAS * std::mem::size_of::<PoolEntry>()
            + (k * self.nlocal + i) * COLL_SLOT;
        // SAFETY: the pool areas lie inside the mapping (seg_bytes).
        unsafe { self.map.base().add(at) }
    }

    /// Takes a free pool area for a communicator of `users` members,
    /// labelled `key` (nonzero); None when all are taken. The caller tells
    /// the other members which one.
    pub fn pool_claim(&self, key: u64, users: u64) -> Option<usize> {
        (0..POOL_AREAS).find(|&k| {
            let e = self.pool_entry(k);
            // Acquire on success: pairs with the Release store of 0 in
            // `pool_release`, so the counters it zeroed are seen as zero.
            let won = e
                .key
                .compare_exchange(0, key, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
            if won {
                // Relaxed: the members learn `k` from a message sent after this
                // store, and only then decrement `users` (`pool_release`).
                e.users.store(users, Ordering::Relaxed);
            }
            won
        })
    }

    /// A member of the communicator holding pool area `k` (of `n` members)
    /// no longer uses it; the last one zeroes the slot headers (counters
    /// and call lines) and frees it.
    pub fn pool_release(&self, k: usize, n: usize) {
        let e = self.pool_entry(k);
        // AcqRel: my reads of the area happen before my decrement, and the
        // last member's Acquire sees every other member's; pairs with itself.
        if e.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            for i in 0..n {
                // SAFETY: no member uses the area any more (users reached 0);
                // the slot header is COLL_HDR bytes inside the mapping.
                unsafe { std::ptr::write_bytes(self.pool_slot(k, i), 0, COLL_HDR) };
            }
            // Release: the zeroed counters are visible to the next claimer;
            // pairs with the Acquire compare-exchange in `pool_claim`.
            e.key.store(0, Ordering::Release);
        }
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        if !self.unlinked {
            ShmMap::unlink(&self.name);
        }
    }
}

/// The envelope in the ring's cell header (the ring sets `seq` and, for an
/// inline payload, its flag and overlay).
#[inline(always)]
fn cell_of(h: &Hdr) -> CellHeader {
    // Single copy on one node needs no key but the pid the link knows.
    debug_assert_eq!(h.key, super::hdr::Key::Pid);
    CellHeader {
        kind: h.kind,
        flags: h.flags,
        seq: 0,
        ctx: h.ctx,
        src: h.src,
        tag: h.tag,
        len: h.len,
        total: h.total,
        sreq: h.sreq,
        rreq: h.rreq,
        addr: h.addr,
        offset: h.offset,
    }
}

/// The envelope of an arrived cell.
#[inline(always)]
fn hdr_of(c: &CellHeader) -> Hdr {
    Hdr {
        kind: c.kind,
        flags: c.flags,
        ctx: c.ctx,
        src: c.src,
        tag: c.tag,
        len: c.len,
        total: c.total,
        sreq: c.sreq,
        rreq: c.rreq,
        addr: c.addr,
        key: super::hdr::Key::Pid,
        offset: c.offset,
    }
}
