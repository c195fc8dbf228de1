//! The window segment: one POSIX shared-memory file per window per node,
//! mapped by every rank of the window on that node. It holds each local
//! rank's control words (the passive-target lock, the accumulate mutex),
//! the post and complete counters of general active-target
//! synchronization, and, for `MPI_Win_allocate` and
//! `MPI_Win_allocate_shared`, the window memory itself, so that every
//! rank of the node reads and writes it with loads and stores and the
//! target takes no part. Every struct placed in it is `#[repr(C)]` with
//! no pointers: it sits at different addresses in each process.
//!
//! The file starts zeroed (`ftruncate`), which is every word's initial
//! state: unlocked, free, no post and no complete yet.

use std::sync::atomic::{AtomicU32, AtomicU64};

/// One target rank's control words, on a pair of cache lines of its own.
#[repr(C, align(128))]
pub struct Ctl {
    /// `MPI_Win_lock`: `EXCL`, or the number of shared holders.
    pub lock: AtomicU64,
    /// The accumulate mutex of this rank's window memory: 0 free, 1 held.
    pub acc: AtomicU32,
    _pad: [u8; 116],
}

/// The regions a local rank has attached to a dynamic window, which the
/// node's other ranks check their operations against: a slot is free
/// while its length is 0. One page per rank.
#[repr(C)]
pub struct Attached {
    /// Set when a rank attached more regions than there are slots: its
    /// operations are then checked by the kernel's copy only.
    pub overflow: AtomicU64,
    _pad: u64,
    /// (address in the owner's process, length).
    pub regs: [[AtomicU64; 2]; ATTACH_SLOTS],
}

/// Regions per rank in `Attached`.
pub const ATTACH_SLOTS: usize = 255;

/// The regions of CUDA device memory a local rank has attached to a
/// dynamic window, with what the node's other ranks need to map them
/// (`gpu::ipc::IpcRef`, which the kernel's copy cannot reach). The page
/// after the rank's `Attached`.
#[repr(C)]
pub struct DevAttached {
    /// Slots in use: origins skip the table while it is 0.
    pub used: AtomicU64,
    _pad: u64,
    pub regs: [DevSlot; DEV_SLOTS],
}

/// One attached region of device memory: free while `len` is 0, which is
/// stored last (Release) and cleared first.
#[repr(C)]
pub struct DevSlot {
    pub len: AtomicU64,
    /// Address in the owner's process.
    pub addr: AtomicU64,
    /// The region's `IpcRef` in its wire form, as 64-bit words.
    pub ipc: [AtomicU64; IPC_WORDS],
}

/// Words of an `IpcRef`'s wire form.
pub const IPC_WORDS: usize = crate::gpu::ipc::WIRE.div_ceil(8);

/// Device regions per rank in `DevAttached`.
pub const DEV_SLOTS: usize = (PAGE - 16) / std::mem::size_of::<DevSlot>();

/// The exclusive holder's bit of `Ctl::lock`.
pub const EXCL: u64 = 1 << 63;

const PAGE: usize = 4096;

/// Where the memory of an `MPI_Win_allocate` window starts in its page: half
/// a page (and a cache line) away from the page offsets of the buffers
/// programs mostly move to and from it (0 from page-aligned allocators, 16
/// from large mallocs). A copy whose destination lies a few bytes past its
/// source modulo 4096 stalls on the CPU's 4K aliasing: a 64 KiB get into a
/// buffer 16 bytes into its page took 0.66 µs from page-aligned window
/// memory and 0.50 from a base 264 bytes into its page (Open MPI's there);
/// half a page away, puts and gets are both far from it.
/// cbindgen:ignore
pub const WIN_SKEW: usize = 2048 + 64;

/// Where a rank's `MPI_Win_allocate` memory starts in its page: at
/// `WIN_SKEW`, moved up to a multiple of the alignment asked for
/// (`mpi_minimum_memory_alignment`); on the page itself from an alignment
/// of a page (larger ones get a page: the segment's mappings are page
/// aligned).
pub fn skew_for(align: Option<usize>) -> usize {
    let a = align.unwrap_or(1).min(PAGE);
    WIN_SKEW.next_multiple_of(a) % PAGE
}

fn round_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Where things lie in a window segment of `n` local ranks (the same on
/// every rank: it follows from the sizes every rank was told).
#[derive(Clone, Debug)]
pub struct Layout {
    pub n: usize,
    /// `n * n` counters: `post[t * n + o]` counts the exposure epochs
    /// target `t` has opened to origin `o` (`MPI_Win_post`).
    pub post: usize,
    /// `complete[t * n + o]` counts the access epochs origin `o` has
    /// closed on target `t` (`MPI_Win_complete`).
    pub complete: usize,
    /// Offset of each local rank's `Attached` table, followed by its
    /// `DevAttached` (dynamic windows): two pages per rank.
    pub attached: Option<usize>,
    /// Offset of each local rank's window memory (allocated flavors).
    pub data: Vec<usize>,
    pub len: usize,
}

impl Layout {
    /// `sizes`: each local rank's window memory in this segment (0 for
    /// memory the ranks bring themselves); `contiguous`: one rank's memory
    /// right after the one before (`MPI_Win_allocate_shared` without
    /// `alloc_shared_noncontig`), else each on a page of its own.
    /// `dynamic`: with a table of attached regions per rank. `skews`: how
    /// far past its page each rank's memory starts (`MPI_Win_allocate`;
    /// not with `contiguous`; none: 0).
    pub fn new(sizes: &[usize], contiguous: bool, dynamic: bool, skews: &[usize]) -> Layout {
        let n = sizes.len();
        let post = round_up(n * std::mem::size_of::<Ctl>(), 128);
        let complete = round_up(post + n * n * 4, 128);
        let mut at = round_up(complete + n * n * 4, PAGE);
        let attached = dynamic.then_some(at);
        if dynamic {
            at += n * 2 * PAGE;
        }
        let mut data = Vec::with_capacity(n);
        for (i, &s) in sizes.iter().enumerate() {
            if !contiguous {
                at += skews.get(i).copied().unwrap_or(0) % PAGE;
            }
            data.push(at);
            at += s;
            if !contiguous {
                at = round_up(at, PAGE);
            }
        }
        Layout {
            n,
            post,
            complete,
            attached,
            data,
            len: round_up(at, PAGE).max(PAGE),
        }
    }

    /// Local rank `i`'s control words in the segment mapped at `base`.
    ///
    /// # Safety
    /// `base` maps a segment of this layout and `i < n`.
    pub unsafe fn ctl<'a>(&self, base: *mut u8, i: usize) -> &'a Ctl {
        debug_assert!(i < self.n);
        // SAFETY: the control words start the segment, 128-byte aligned
        // (the mapping is page aligned); zeroed memory is a valid Ctl.
        unsafe { &*(base.add(i * std::mem::size_of::<Ctl>()) as *const Ctl) }
    }

    /// Local rank `i`'s table of attached regions (dynamic windows).
    ///
    /// # Safety
    /// As `ctl`.
    pub unsafe fn attached<'a>(&self, base: *mut u8, i: usize) -> Option<&'a Attached> {
        debug_assert!(i < self.n);
        // SAFETY: each table is a page of its own inside the segment, page
        // aligned; zeroed memory is an empty table.
        self.attached
            .map(|a| unsafe { &*(base.add(a + i * 2 * PAGE) as *const Attached) })
    }

    /// Local rank `i`'s table of attached device memory (dynamic windows).
    ///
    /// # Safety
    /// As `ctl`.
    pub unsafe fn dev_attached<'a>(&self, base: *mut u8, i: usize) -> Option<&'a DevAttached> {
        debug_assert!(i < self.n);
        // SAFETY: each table is the page after the rank's `Attached`,
        // inside the segment; zeroed memory is an empty table.
        self.attached
            .map(|a| unsafe { &*(base.add(a + i * 2 * PAGE + PAGE) as *const DevAttached) })
    }

    /// A post (`complete` false) or complete counter of target `t` and origin `o`.
    ///
    /// # Safety
    /// As `ctl`, and `t, o < n`.
    pub unsafe fn counter<'a>(
        &self,
        base: *mut u8,
        complete: bool,
        t: usize,
        o: usize,
    ) -> &'a AtomicU32 {
        let at = if complete { self.complete } else { self.post };
        // SAFETY: the counters lie inside the segment, 4-byte aligned.
        unsafe { &*(base.add(at + (t * self.n + o) * 4) as *const AtomicU32) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn layout_places_memory_after_the_counters() {
        let l = Layout::new(&[10, 0, 4096], false, false, &[]);
        assert_eq!(std::mem::size_of::<Ctl>(), 128);
        assert_eq!(l.post, 384);
        assert!(l.complete >= l.post + 36);
        assert_eq!(l.data[0] % PAGE, 0);
        assert_eq!(l.data[1], l.data[0] + PAGE);
        assert_eq!(l.data[2], l.data[1]);
        assert_eq!(l.len, l.data[2] + PAGE);
        let c = Layout::new(&[10, 6, 3], true, false, &[WIN_SKEW; 3]);
        assert_eq!(c.data[1], c.data[0] + 10);
        assert_eq!(c.data[2], c.data[0] + 16);
        assert_eq!(c.len % PAGE, 0);
        assert!(std::mem::size_of::<Attached>() <= PAGE);
        assert!(std::mem::size_of::<DevAttached>() <= PAGE);
        const { assert!(DEV_SLOTS >= 32) };
        let k = Layout::new(&[10, 4096], false, false, &[WIN_SKEW, 0]);
        assert_eq!(k.data[0] % PAGE, WIN_SKEW);
        assert_eq!(k.data[1] % PAGE, 0);
        assert!(k.data[1] >= k.data[0] + 10 && k.len >= k.data[1] + 4096);
        let d = Layout::new(&[0, 0], false, true, &[]);
        let a = d.attached.unwrap();
        assert!(a >= d.complete + 16 && a % PAGE == 0);
        assert_eq!(d.data[0], a + 4 * PAGE);
    }
}
