//! Single-producer single-consumer ring of fixed-size cells in shared memory.
//!
//! Owns: the layout of one ring (control words + cells) and the producer and
//! consumer cursors. Calls nothing but atomics. Used by `transport::shm`, one
//! ring per ordered pair of ranks on a node.
//!
//! Hot-path budget: `push` and `peek`/`release` are a few loads and one
//! Release store each (`skip` + `publish` give a batch of cells back with
//! one store); no syscall, lock or allocation. A cell is published by
//! the sequence word in its own header, so the consumer polls the cell it
//! expects next and a small message costs one cache line between the cores:
//! header, envelope and (up to `INLINE_BYTES`) payload together. The consumer's
//! index is cached by the producer and re-read only when the ring looks full.
//! The consumer prefetches the header `PREFETCH_AHEAD` cells past the one it
//! reads, so that the lines of a stream of small messages travel from the
//! producer's cache while earlier ones are handled (8 B message rate +16%).

pub use super::layout::{CellHeader, Padded, RingCtl};
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes of one cell's header.
pub const HEADER_BYTES: usize = 64;

const _: () = assert!(std::mem::size_of::<CellHeader>() == HEADER_BYTES);

/// Offset of `seq` in a cell.
const SEQ_AT: usize = 4;
/// Where an inline payload starts in the header (over `rreq`, `addr` and
/// `offset`, which a cell pushed with `inline` must not need).
const INLINE_AT: usize = 40;
/// Largest payload carried inside the header.
pub const INLINE_BYTES: usize = HEADER_BYTES - INLINE_AT;
/// Flag bit: the payload sits in the header.
pub const INLINE: u16 = 0x8000;

/// Start of cell `idx`'s payload area in a ring whose cells start at `cells`.
///
/// # Safety
/// `idx < ncells` of that ring.
#[inline]
unsafe fn payload_at(cells: *mut u8, ncells: u64, cell_size: usize, idx: usize) -> *mut u8 {
    // SAFETY: the payload areas follow the ncells headers inside the ring.
    unsafe { cells.add(ncells as usize * HEADER_BYTES + idx * cell_size) }
}

/// How many cells ahead of the one being read the consumer prefetches.
const PREFETCH_AHEAD: u64 = 4;

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults and `p` lies in the ring.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn seq_of(pos: u64) -> u32 {
    (pos as u32).wrapping_add(1)
}

/// Bytes a ring of `cells` cells with `cell_size` payload bytes each
/// occupies. The headers of all cells come first, one cache line each and
/// consecutive (so a stream of small messages moves consecutive lines, which
/// the prefetchers follow), then the payload areas, `cell_size` bytes each
/// (`OXMPI_CELL_BYTES`: 8 or 4 KiB, so a message of that size fits one cell).
pub const fn ring_bytes(cells: usize, cell_size: usize) -> usize {
    std::mem::size_of::<RingCtl>() + cells * (HEADER_BYTES + cell_size)
}

/// Producer cursor (lives in the sender's private memory).
pub struct Producer {
    ctl: *const RingCtl,
    cells: *mut u8,
    ncells: u64,
    cell_size: usize,
    tail: u64,
    cached_head: u64,
}

/// Consumer cursor (lives in the receiver's private memory).
pub struct Consumer {
    ctl: *const RingCtl,
    cells: *mut u8,
    ncells: u64,
    cell_size: usize,
    head: u64,
}

// SAFETY: the cursors refer to shared memory that outlives them (the transport
// owns both the mapping and the cursors) and each is used by one thread at a time.
unsafe impl Send for Producer {}
// SAFETY: as for Producer.
unsafe impl Send for Consumer {}

/// Initialises a ring at `base` (zeroed control words).
///
/// # Safety
/// `base` must point to `ring_bytes(..)` writable bytes, 128-aligned, not yet in use.
pub unsafe fn init(base: *mut u8) {
    let ctl = base as *mut RingCtl;
    // SAFETY: per the contract, ctl is valid and unshared.
    unsafe {
        (*ctl).spare.0.store(0, Ordering::Relaxed);
        (*ctl).head.0.store(0, Ordering::Relaxed);
    }
}

impl Producer {
    /// # Safety
    /// `base` is an initialised ring of `ncells` cells of `cell_size` bytes that
    /// stays mapped while the producer exists; this is its only producer.
    /// `ncells` is a power of two.
    pub unsafe fn new(base: *mut u8, ncells: usize, cell_size: usize) -> Producer {
        assert!(ncells.is_power_of_two(), "ring of {ncells} cells");
        let ctl = base as *const RingCtl;
        // A ring starts empty (`init`), and cursors are made once per ring.
        // SAFETY: ctl valid per the contract.
        let tail = unsafe { (*ctl).head.0.load(Ordering::Relaxed) };
        Producer {
            ctl,
            // SAFETY: cells start right after the control block, inside the ring.
            cells: unsafe { base.add(std::mem::size_of::<RingCtl>()) },
            ncells: ncells as u64,
            cell_size,
            tail,
            cached_head: tail,
        }
    }

    /// Payload bytes per cell.
    pub fn payload(&self) -> usize {
        self.cell_size
    }

    /// Start of cell `idx`'s payload area.
    ///
    /// # Safety
    /// `idx < ncells`.
    #[inline]
    unsafe fn payload_of(&self, idx: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { payload_at(self.cells, self.ncells, self.cell_size, idx) }
    }

    /// Free cells, re-reading the consumer's index only when the cache says full.
    #[inline]
    pub fn free_cells(&mut self) -> u64 {
        let mut free = self.ncells - (self.tail - self.cached_head);
        if free == 0 {
            // Acquire: pairs with the Release store of `head` in `Consumer::release`,
            // so the consumer is done reading the cells it gave back.
            // SAFETY: ctl valid while self lives.
            self.cached_head = unsafe { (*self.ctl).head.0.load(Ordering::Acquire) };
            free = self.ncells - (self.tail - self.cached_head);
        }
        free
    }

    /// Writes one cell if there is room. `payload.len()` must fit in a cell.
    /// With `inline`, a payload of at most `INLINE_BYTES` goes into the
    /// header's last 24 bytes (the cell must not need `rreq`, `addr`, `offset`).
    #[inline]
    pub fn push(&mut self, hdr: &CellHeader, payload: &[u8], inline: bool) -> bool {
        debug_assert!(payload.len() <= self.payload());
        if self.free_cells() == 0 {
            return false;
        }
        let idx = (self.tail & (self.ncells - 1)) as usize;
        // SAFETY: cell `idx` is owned by the producer until its `seq` is
        // published below (the consumer reads a cell only once `seq` says it is
        // full, and gives it back through `head`); it lies in the ring. The
        // plain writes skip the `seq` word, which the consumer may be polling.
        unsafe {
            let cell = self.cells.add(idx * HEADER_BYTES);
            let mut h = *hdr;
            let n = payload.len();
            let at = if inline && n <= INLINE_BYTES {
                h.flags |= INLINE;
                INLINE_AT
            } else {
                crate::sys::copy(self.payload_of(idx), payload.as_ptr(), n);
                HEADER_BYTES
            };
            let src = &h as *const CellHeader as *const u8;
            std::ptr::copy_nonoverlapping(src, cell, SEQ_AT);
            // Constant lengths, so the compiler emits plain moves.
            if at == INLINE_AT {
                let rest = INLINE_AT - SEQ_AT - 4;
                std::ptr::copy_nonoverlapping(src.add(SEQ_AT + 4), cell.add(SEQ_AT + 4), rest);
                crate::sys::copy(cell.add(INLINE_AT), payload.as_ptr(), n);
            } else {
                let rest = HEADER_BYTES - SEQ_AT - 4;
                std::ptr::copy_nonoverlapping(src.add(SEQ_AT + 4), cell.add(SEQ_AT + 4), rest);
            }
            self.tail += 1;
            // Release: publishes the cell's header and payload; pairs with the
            // Acquire load of `seq` in `Consumer::peek`.
            (*(cell.add(SEQ_AT) as *const AtomicU32))
                .store(seq_of(self.tail - 1), Ordering::Release);
        }
        true
    }
}

impl Consumer {
    /// # Safety
    /// As for `Producer::new`, with this being the ring's only consumer.
    pub unsafe fn new(base: *mut u8, ncells: usize, cell_size: usize) -> Consumer {
        assert!(ncells.is_power_of_two(), "ring of {ncells} cells");
        let ctl = base as *const RingCtl;
        // SAFETY: ctl valid per the contract.
        let head = unsafe { (*ctl).head.0.load(Ordering::Relaxed) };
        Consumer {
            ctl,
            // SAFETY: cells start right after the control block.
            cells: unsafe { base.add(std::mem::size_of::<RingCtl>()) },
            ncells: ncells as u64,
            cell_size,
            head,
        }
    }

    /// Start of cell `idx`'s payload area.
    ///
    /// # Safety
    /// `idx < ncells`.
    #[inline]
    unsafe fn payload_of(&self, idx: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { payload_at(self.cells, self.ncells, self.cell_size, idx) }
    }

    /// The oldest unread cell, if any: its header and payload. Valid until `release`.
    #[inline]
    pub fn peek(&mut self) -> Option<(CellHeader, *const u8)> {
        let idx = (self.head & (self.ncells - 1)) as usize;
        // SAFETY: cell `idx` lies in the ring. Its `seq` word is only written
        // atomically; the rest is read only once `seq` shows that the producer
        // published it, and the producer does not rewrite it until `release`.
        unsafe {
            let cell = self.cells.add(idx * HEADER_BYTES);
            // Acquire: pairs with the Release store of `seq` in `Producer::push`,
            // making the cell's contents visible.
            let seq = (*(cell.add(SEQ_AT) as *const AtomicU32)).load(Ordering::Acquire);
            if seq != seq_of(self.head) {
                return None;
            }
            // The next cells' headers are most likely written already
            // (a sender runs ahead): ask for them now, so that their trip
            // from the producer's cache overlaps this cell's handling.
            let ahead = ((self.head + PREFETCH_AHEAD) & (self.ncells - 1)) as usize;
            prefetch(self.cells.add(ahead * HEADER_BYTES));
            let hdr = std::ptr::read(cell as *const CellHeader);
            let data = if hdr.flags & INLINE != 0 {
                cell.add(INLINE_AT)
            } else {
                self.payload_of(idx)
            };
            Some((hdr, data as *const u8))
        }
    }

    /// Gives the cell returned by `peek` back to the producer.
    #[inline]
    pub fn release(&mut self) {
        self.skip();
        self.publish();
    }

    /// Moves past the cell returned by `peek` without telling the producer
    /// yet: a batch of cells is given back by one `publish`, so a producer
    /// that runs ahead does not pull the index's line across per message.
    #[inline]
    pub fn skip(&mut self) {
        self.head += 1;
    }

    /// Gives every cell skipped so far back to the producer.
    #[inline]
    pub fn publish(&mut self) {
        // Release: our reads of the cells happen before the producer may reuse
        // them; pairs with the Acquire load of `head` in `Producer::free_cells`.
        // SAFETY: ctl valid while self lives.
        unsafe { (*self.ctl).head.0.store(self.head, Ordering::Release) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skipped cells stay the consumer's until `publish`: a full ring stays
    /// full for the producer, then all of them come back at once.
    #[test]
    fn skipped_cells_return_on_publish() {
        let (cells, cs) = (4, 128);
        let mut mem = vec![0u128; ring_bytes(cells, cs) / 16 + 16];
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: as in `fifo_wraps_and_reports_full`.
        let (mut p, mut c) = unsafe {
            init(base);
            (
                Producer::new(base, cells, cs),
                Consumer::new(base, cells, cs),
            )
        };
        let h = CellHeader::default();
        for _ in 0..cells {
            assert!(p.push(&h, &[], true));
        }
        for k in 0..3 {
            assert!(c.peek().is_some(), "cell {k}");
            c.skip();
        }
        assert!(!p.push(&h, &[], true), "skipped cells are not free yet");
        c.publish();
        for k in 0..3 {
            assert!(p.push(&h, &[], true), "cell {k} free after publish");
        }
        assert!(!p.push(&h, &[], true));
    }

    #[test]
    fn fifo_wraps_and_reports_full() {
        let cells = 4;
        let cs = 128;
        let mut mem = vec![0u128; ring_bytes(cells, cs) / 16 + 16];
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: mem is large enough, 16-aligned is enough for atomics used here,
        // and outlives both cursors.
        let (mut p, mut c) = unsafe {
            init(base);
            (
                Producer::new(base, cells, cs),
                Consumer::new(base, cells, cs),
            )
        };
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        for round in 0..50 {
            let n = (round % 6) as u32;
            for _ in 0..n {
                let h = CellHeader {
                    tag: next_in as i32,
                    len: 4,
                    ..Default::default()
                };
                if p.push(&h, &next_in.to_le_bytes(), round % 2 == 0) {
                    next_in += 1;
                } else {
                    assert_eq!(
                        next_in - next_out,
                        cells as u32,
                        "push refused only when full"
                    );
                }
            }
            while let Some((h, data)) = c.peek() {
                assert_eq!(h.tag as u32, next_out);
                // SAFETY: payload of a peeked cell is readable for len bytes.
                let v = unsafe { std::ptr::read_unaligned(data as *const u32) };
                assert_eq!(v, next_out);
                c.release();
                next_out += 1;
                if round % 3 == 0 {
                    break;
                }
            }
        }
        assert!(next_out > 40);
    }

    #[test]
    fn threads_transfer_in_order() {
        let cells = 8;
        let cs = 128;
        let mut mem = vec![0u128; ring_bytes(cells, cs) / 16 + 16];
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: as above; the threads are joined before mem is dropped.
        unsafe { init(base) };
        // SAFETY: see above.
        let mut p = unsafe { Producer::new(base, cells, cs) };
        // SAFETY: see above.
        let mut c = unsafe { Consumer::new(base, cells, cs) };
        const N: u64 = 100_000;
        let t = std::thread::spawn(move || {
            let mut i = 0;
            while i < N {
                let h = CellHeader {
                    total: i,
                    ..Default::default()
                };
                if p.push(&h, &[], false) {
                    i += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        let mut i = 0;
        while i < N {
            if let Some((h, _)) = c.peek() {
                assert_eq!(h.total, i);
                c.release();
                i += 1;
            }
        }
        t.join().unwrap();
        drop(mem);
    }
}
