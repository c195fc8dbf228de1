//! Reused staging buffers for packed data. A fresh large buffer costs a page
//! fault per 4 KiB the first time it is written (the allocator maps new
//! zeroed pages for every large allocation and unmaps them on free), which
//! for a 1 MiB message is about as long as the copy itself. Buffers of at
//! least `MIN` bytes are kept here for the next message instead.
//!
//! A buffer handed out may be longer than asked for and holds stale bytes
//! from earlier use; callers use the prefix they write.
//!
//! Staging areas of device buffers come from a second list, of buffers
//! page-locked with the driver (`take_pinned`): the driver's asynchronous
//! copies to and from pageable memory wait for the device, which a
//! nonblocking call must not. Pinning costs much more than a page fault, so
//! pinned buffers are kept (up to `PINNED_KEEP` of them) and unpinned only
//! when dropped from the list; areas longer than `MAX` are not pinned.

use parking_lot::Mutex;

const MIN: usize = 64 << 10;
/// Buffers kept, and the largest one kept.
const KEEP: usize = 8;
const MAX: usize = 64 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

const PINNED_KEEP: usize = 16;

/// Pinned buffers: `free` ones ready for use, and the addresses of those
/// handed out (`give` knows them by address).
struct Pinned {
    free: Vec<Vec<u8>>,
    out: Vec<usize>,
}

static PINNED: Mutex<Pinned> = Mutex::new(Pinned {
    free: Vec::new(),
    out: Vec::new(),
});

/// Whether a pinned buffer was ever made: `give` looks at the pinned list
/// only then, so a host-only process never takes its lock.
static ANY_PINNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A buffer of at least `len` bytes.
pub fn take(len: usize) -> Vec<u8> {
    if len >= MIN {
        let mut p = POOL.lock();
        let best = p
            .iter()
            .enumerate()
            .filter(|(_, v)| v.len() >= len)
            .min_by_key(|(_, v)| v.len())
            .map(|(i, _)| i);
        if let Some(i) = best {
            return p.swap_remove(i);
        }
    }
    vec![0u8; len]
}

/// A buffer of at least `len` bytes page-locked with the CUDA driver, for
/// staging device data; a pageable one where the driver refuses to pin.
/// Handed back with `give` (a pinned buffer must not simply be dropped).
pub fn take_pinned(len: usize) -> Vec<u8> {
    if len > MAX {
        // Pinning a buffer this long costs more than it saves once (it is
        // not kept); such messages stay pageable (docs/gpu.md).
        return take(len);
    }
    let mut p = PINNED.lock();
    let best = p
        .free
        .iter()
        .enumerate()
        .filter(|(_, v)| v.len() >= len)
        .min_by_key(|(_, v)| v.len())
        .map(|(i, _)| i);
    if let Some(i) = best {
        let v = p.free.swap_remove(i);
        p.out.push(v.as_ptr() as usize);
        return v;
    }
    // Small areas are made 64 KiB long, so one serves many small messages.
    let mut v = vec![0u8; len.max(MIN)];
    // SAFETY: `v` stays allocated while pinned: `give` unpins it before
    // it is dropped, and the pinned list owns it otherwise.
    if unsafe { crate::gpu::pin(v.as_mut_ptr(), v.len()) } {
        // Relaxed: the flag only tells `give` to look at the list, whose
        // lock orders the rest.
        ANY_PINNED.store(true, std::sync::atomic::Ordering::Relaxed);
        p.out.push(v.as_ptr() as usize);
    }
    v
}

/// Returns a buffer for reuse.
pub fn give(mut v: Vec<u8>) {
    if ANY_PINNED.load(std::sync::atomic::Ordering::Relaxed) && !v.is_empty() {
        let mut p = PINNED.lock();
        let addr = v.as_ptr() as usize;
        if let Some(i) = p.out.iter().position(|&a| a == addr) {
            p.out.swap_remove(i);
            if p.free.len() < PINNED_KEEP {
                p.free.push(v);
            } else {
                // SAFETY: pinned by `take_pinned`; the copies that used it are
                // done (its owner handed it back).
                unsafe { crate::gpu::unpin(v.as_mut_ptr()) };
            }
            return;
        }
    }
    if v.len() < MIN || v.len() > MAX {
        return;
    }
    let mut p = POOL.lock();
    if p.len() < KEEP {
        p.push(v);
    } else if let Some((i, _)) = p.iter().enumerate().min_by_key(|(_, b)| b.len()) {
        if p[i].len() < v.len() {
            p[i] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_large_enough_buffer() {
        let mut a = take(1 << 20);
        a[0] = 7;
        let addr = a.as_ptr();
        give(a);
        let b = take(300 << 10);
        assert!(b.len() >= 300 << 10);
        // Another test thread may have taken it first; when we got it, it is the same memory.
        if b.as_ptr() == addr {
            assert_eq!(b[0], 7);
        }
        give(b);
        assert_eq!(take(100).len(), 100);
    }
}
