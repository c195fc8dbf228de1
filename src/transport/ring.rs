//! Single-producer single-consumer ring of fixed-size cells in shared memory.
//!
//! Owns: the layout of one ring (control words + cells) and the producer and
//! consumer cursors. Calls nothing but atomics. Used by `transport::shm`, one
//! ring per ordered pair of ranks on a node.
//!
//! Hot-path budget: `reserve`/`commit` and `peek`/`release` are a few loads and
//! one Release store each; no syscall, lock or allocation. The other side's
//! index is cached and re-read only when the ring looks full (producer) or
//! empty (consumer), as in rtrb and the UCX mm fifo.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of one cell's header.
pub const HEADER_BYTES: usize = 64;

/// Envelope and protocol fields of a cell. `#[repr(C)]`, integers only.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellHeader {
    /// Protocol message kind (`transport::shm::kind`).
    pub kind: u32,
    /// Protocol flags (`transport::shm::flag`).
    pub flags: u32,
    /// Context id of the communicator.
    pub ctx: u32,
    /// Sender's rank in that communicator.
    pub src: i32,
    pub tag: i32,
    /// Payload bytes carried by this cell.
    pub len: u32,
    /// Bytes of the whole message.
    pub total: u64,
    /// Sender-side request token.
    pub sreq: u64,
    /// Receiver-side request token.
    pub rreq: u64,
    /// Sender buffer address (rendezvous).
    pub addr: u64,
    /// Byte offset of this payload in the message.
    pub offset: u64,
}

const _: () = assert!(std::mem::size_of::<CellHeader>() == HEADER_BYTES);

/// Control words of one ring; producer and consumer words on separate 128-byte lines.
#[repr(C, align(128))]
pub struct Padded(pub AtomicU64);

#[repr(C)]
pub struct RingCtl {
    /// Next cell the producer will fill. Written only by the producer.
    pub tail: Padded,
    /// Next cell the consumer will read. Written only by the consumer.
    pub head: Padded,
}

/// Bytes a ring of `cells` cells of `cell_size` bytes occupies.
pub const fn ring_bytes(cells: usize, cell_size: usize) -> usize {
    std::mem::size_of::<RingCtl>() + cells * cell_size
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
    cached_tail: u64,
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
        (*ctl).tail.0.store(0, Ordering::Relaxed);
        (*ctl).head.0.store(0, Ordering::Relaxed);
    }
}

impl Producer {
    /// # Safety
    /// `base` is an initialised ring of `ncells` cells of `cell_size` bytes that
    /// stays mapped while the producer exists; this is its only producer.
    pub unsafe fn new(base: *mut u8, ncells: usize, cell_size: usize) -> Producer {
        let ctl = base as *const RingCtl;
        // SAFETY: ctl valid per the contract.
        let tail = unsafe { (*ctl).tail.0.load(Ordering::Relaxed) };
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
        self.cell_size - HEADER_BYTES
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
    #[inline]
    pub fn push(&mut self, hdr: &CellHeader, payload: &[u8]) -> bool {
        debug_assert!(payload.len() <= self.payload());
        if self.free_cells() == 0 {
            return false;
        }
        let idx = (self.tail % self.ncells) as usize;
        // SAFETY: cell `idx` is owned by the producer until `tail` is published
        // below (the consumer reads only cells before `tail`); it lies in the ring.
        unsafe {
            let cell = self.cells.add(idx * self.cell_size);
            std::ptr::write(cell as *mut CellHeader, *hdr);
            crate::sys::copy(cell.add(HEADER_BYTES), payload.as_ptr(), payload.len());
        }
        self.tail += 1;
        // Release: publishes the cell; pairs with the Acquire load of `tail` in `Consumer::peek`.
        // SAFETY: ctl valid while self lives.
        unsafe { (*self.ctl).tail.0.store(self.tail, Ordering::Release) };
        true
    }
}

impl Consumer {
    /// # Safety
    /// As for `Producer::new`, with this being the ring's only consumer.
    pub unsafe fn new(base: *mut u8, ncells: usize, cell_size: usize) -> Consumer {
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
            cached_tail: head,
        }
    }

    /// The oldest unread cell, if any: its header and payload. Valid until `release`.
    #[inline]
    pub fn peek(&mut self) -> Option<(CellHeader, *const u8)> {
        if self.head == self.cached_tail {
            // Acquire: pairs with the Release store of `tail` in `Producer::push`,
            // making the cell's contents visible.
            // SAFETY: ctl valid while self lives.
            self.cached_tail = unsafe { (*self.ctl).tail.0.load(Ordering::Acquire) };
            if self.head == self.cached_tail {
                return None;
            }
        }
        let idx = (self.head % self.ncells) as usize;
        // SAFETY: cell `idx` was published by the producer (head < tail) and is not
        // rewritten until we release it.
        unsafe {
            let cell = self.cells.add(idx * self.cell_size);
            let hdr = std::ptr::read(cell as *const CellHeader);
            Some((hdr, cell.add(HEADER_BYTES) as *const u8))
        }
    }

    /// Gives the cell returned by `peek` back to the producer.
    #[inline]
    pub fn release(&mut self) {
        self.head += 1;
        // Release: our reads of the cell happen before the producer may reuse it;
        // pairs with the Acquire load of `head` in `Producer::free_cells`.
        // SAFETY: ctl valid while self lives.
        unsafe { (*self.ctl).head.0.store(self.head, Ordering::Release) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                if p.push(&h, &next_in.to_le_bytes()) {
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
                if p.push(&h, &[]) {
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
