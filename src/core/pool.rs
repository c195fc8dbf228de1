//! Reused staging buffers for packed data. A fresh large buffer costs a page
//! fault per 4 KiB the first time it is written (the allocator maps new
//! zeroed pages for every large allocation and unmaps them on free), which
//! for a 1 MiB message is about as long as the copy itself. Buffers of at
//! least `MIN` bytes are kept here for the next message instead.
//!
//! A buffer handed out may be longer than asked for and holds stale bytes
//! from earlier use; callers use the prefix they write.

use parking_lot::Mutex;

const MIN: usize = 64 << 10;
/// Buffers kept, and the largest one kept.
const KEEP: usize = 8;
const MAX: usize = 64 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

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

/// Returns a buffer for reuse.
pub fn give(v: Vec<u8>) {
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
