//! Thin, safe wrappers over the libc calls OxMPI needs: POSIX shared memory,
//! `process_vm_readv` (CMA), clocks, host identity.
//!
//! Owns no state. May call only libc. Everything above uses these wrappers
//! instead of calling libc directly, so that each `unsafe` call is argued once.

use std::ffi::CString;
use std::io;

/// A mapping of a POSIX shared-memory object.
pub struct ShmMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is process-wide memory; concurrent access is mediated by
// the atomics of the structures placed in it (transport::ring).
unsafe impl Send for ShmMap {}
// SAFETY: as above; `ShmMap` itself hands out only a base pointer.
unsafe impl Sync for ShmMap {}

/// An error when the file system of shared-memory object `fd` has less
/// room than `len` bytes.
fn shm_space_short(fd: libc::c_int, len: usize) -> Option<io::Error> {
    // SAFETY: `st` is plain old data filled in by fstatvfs on an open fd.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; st is writable.
    if unsafe { libc::fstatvfs(fd, &mut st) } != 0 {
        return None;
    }
    let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
    (len as u64 > free).then(|| {
        io::Error::other(format!(
            "the shared segment needs {} MiB but the shared-memory file system (/dev/shm) has {} MiB free: enlarge it (docker --shm-size), or lower OXMPI_CELL_BYTES / OXMPI_RING_CELLS",
            len >> 20,
            free >> 20
        ))
    })
}

impl ShmMap {
    /// Creates `name` (must not exist) with mode 0600, sizes it to `len` and maps it.
    pub fn create(name: &str, len: usize) -> io::Result<ShmMap> {
        let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let fd = unsafe {
            libc::shm_open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is an open descriptor we own.
        let r = unsafe { libc::ftruncate(fd, len as libc::off_t) };
        // The file is sparse: pages are taken when first touched, and a full
        // file system then kills the process with SIGBUS. Refuse here instead
        // when the segment cannot fit at all.
        let short = if r == 0 {
            shm_space_short(fd, len)
        } else {
            None
        };
        if r != 0 || short.is_some() {
            let e = short.unwrap_or_else(io::Error::last_os_error);
            // SAFETY: fd is ours; name was created by us above.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(c.as_ptr());
            }
            return Err(e);
        }
        let m = Self::map_fd(fd, len);
        if m.is_err() {
            // SAFETY: the object was created by us above.
            unsafe { libc::shm_unlink(c.as_ptr()) };
        }
        m
    }

    /// Opens an existing object `name` and maps it if it already has at least `len` bytes.
    /// Returns `Ok(None)` while it does not exist or is not sized yet.
    pub fn open(name: &str, len: usize) -> io::Result<Option<ShmMap>> {
        let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDWR, 0o600) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOENT) {
                return Ok(None);
            }
            return Err(e);
        }
        // SAFETY: `st` is plain old data filled in by fstat on our open fd.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open, `st` is a valid out-pointer.
        if unsafe { libc::fstat(fd, &mut st) } != 0 || (st.st_size as usize) < len {
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
            return Ok(None);
        }
        Self::map_fd(fd, len).map(Some)
    }

    fn map_fd(fd: i32, len: usize) -> io::Result<ShmMap> {
        // SAFETY: mapping a shared object we hold open; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        // SAFETY: the mapping (if any) keeps its own reference; fd is ours.
        unsafe { libc::close(fd) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(ShmMap {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Maps the pages of `off..off + len` of the mapping into this process
    /// now (writable), so that first touches during collectives take no page
    /// faults: `MADV_POPULATE_WRITE` (Linux 5.14), else a read of each page.
    /// Contents are unchanged.
    pub fn populate(&self, off: usize, len: usize) {
        const MADV_POPULATE_WRITE: i32 = 23;
        const PAGE: usize = 4096;
        let start = off / PAGE * PAGE;
        let end = (off + len)
            .min(self.len)
            .next_multiple_of(PAGE)
            .min(self.len);
        if end <= start {
            return;
        }
        // SAFETY: the range lies inside our mapping; the advice changes no contents.
        let r = unsafe {
            libc::madvise(
                self.ptr.add(start) as *mut libc::c_void,
                end - start,
                MADV_POPULATE_WRITE,
            )
        };
        if r != 0 {
            for at in (start..end).step_by(PAGE) {
                // SAFETY: inside the mapping; a read of shared memory has no effect.
                unsafe { std::ptr::read_volatile(self.ptr.add(at)) };
            }
        }
    }

    /// Removes the name; the mapping stays valid until every process unmaps it.
    pub fn unlink(name: &str) {
        if let Ok(c) = CString::new(name) {
            // SAFETY: valid C string; failure (already gone) is harmless.
            unsafe { libc::shm_unlink(c.as_ptr()) };
        }
    }

    pub fn base(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for ShmMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; no references outlive self
        // (the transport that hands out pointers into it is dropped first).
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Copies `len` bytes from `src` to address `remote` in process `pid`
/// (process_vm_writev), retrying short writes.
///
/// # Safety
/// `src` is readable for `len` bytes.
pub unsafe fn cma_write(pid: i32, remote: usize, src: *const u8, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; a write only reads the local range.
    unsafe { cma_copy(pid, remote, src as *mut u8, len, true) }
}

/// Copies `len` bytes at address `remote` in process `pid` into `dst` with one
/// `process_vm_readv` call per kernel limit. Returns the error of the first failed call.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
pub unsafe fn cma_read(pid: i32, remote: usize, dst: *mut u8, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cma_copy(pid, remote, dst, len, false) }
}

/// `len` bytes between `local` and address `remote` in process `pid`:
/// process_vm_writev (`write`) or process_vm_readv, retrying short calls.
///
/// # Safety
/// `local` is readable (write) or writable (read) for `len` bytes.
unsafe fn cma_copy(
    pid: i32,
    remote: usize,
    local: *mut u8,
    len: usize,
    write: bool,
) -> io::Result<()> {
    let (dst, src) = if write {
        (remote, local as usize)
    } else {
        (local as usize, remote)
    };
    if len >= BOUNCE_MIN && slow_offset(dst, src) && bounce_enabled() {
        // SAFETY: forwarded contract.
        return unsafe { cma_bounced(pid, remote, local, len, write) };
    }
    // SAFETY: forwarded contract.
    unsafe { cma_direct(pid, remote, local, len, write) }
}

/// Copies shorter than this never bounce (the slow path costs them little).
const BOUNCE_MIN: usize = 4096;
/// Bytes per bounced piece: large enough that the fixed cost of a call is
/// small, small enough to stay in the L2 cache for the second copy.
const BOUNCE_PIECE: usize = 256 << 10;

/// On some machines (AMD EPYC measured here, kernel 6.18) copies run at
/// about 1.5-2 GB/s instead of 7-9 (the kernel's CMA copy) or 40-50 (`memcpy`)
/// when the destination lies 1 to 31 bytes past the source modulo 4096 (4K
/// aliasing between the copy's loads and its recent stores). Two `malloc` buffers in processes with the
/// same heap layout, one allocated right after the other, meet it
/// (docs/performance.md).
#[inline]
fn slow_offset(dst: usize, src: usize) -> bool {
    matches!(dst.wrapping_sub(src) % 4096, 1..=31)
}

static BACKWARD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Whether local copies at a slow offset run backwards (`copy_backward`):
/// `OXMPI_COPY_BACKWARD` 1 or 0, else (`auto`) when a probe of `memcpy`
/// at that offset finds it slow. Not every CPU of one family has the slow
/// path in user space: one AMD EPYC ran `memcpy` at 2 GB/s there, another
/// at 96 GB/s (against 126 at no offset), where the backward copy only
/// costs.
fn backward_enabled() -> bool {
    *BACKWARD.get_or_init(|| match std::env::var("OXMPI_COPY_BACKWARD").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => memcpy_offset_is_slow(),
    })
}

/// Times `memcpy` of 32 KiB with the destination 16 bytes past the source
/// (mod 4096) against 2048, best of 5 each (tens of microseconds, once):
/// slow when more than twice as long.
fn memcpy_offset_is_slow() -> bool {
    let copy = |src: *const u8, dst: *mut u8, n: usize| {
        // SAFETY: `offset_probe` hands ranges inside its vectors.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        true
    };
    matches!(offset_probe(32 << 10, 2048, copy), Some((fast, slow)) if slow > fast * 2)
}

/// Best of 5 timings of `copy` of `n` bytes from a page-aligned source to
/// a destination `far` bytes past a page boundary, then 16 bytes past one:
/// (far, 16) in ns; None where `copy` fails.
fn offset_probe(
    n: usize,
    far: usize,
    mut copy: impl FnMut(*const u8, *mut u8, usize) -> bool,
) -> Option<(u128, u128)> {
    let src = vec![1u8; n + 8192];
    let mut dst = vec![2u8; n + 8192];
    let s = (src.as_ptr() as usize).next_multiple_of(4096) - src.as_ptr() as usize;
    let d0 = (dst.as_ptr() as usize).next_multiple_of(4096) - dst.as_ptr() as usize;
    let mut time = |doff: usize| {
        let mut best = u128::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            // Both ranges lie inside their vectors (offsets below 4096 +
            // 4096, n bytes, vectors of n + 8192 bytes).
            if !copy(
                src.as_ptr().wrapping_add(s),
                dst.as_mut_ptr().wrapping_add(doff),
                n,
            ) {
                return None;
            }
            std::hint::black_box(&mut dst);
            best = best.min(t.elapsed().as_nanos());
        }
        Some(best)
    };
    Some((time(d0 + far)?, time(d0 + 16)?))
}

static BOUNCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Whether CMA copies with a slow offset go through a bounce buffer:
/// `OXMPI_CMA_BOUNCE` 1 or 0, else (`auto`) when a probe of the kernel's
/// copy shows the slow offset.
fn bounce_enabled() -> bool {
    *BOUNCE.get_or_init(|| match std::env::var("OXMPI_CMA_BOUNCE").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cma_offset_is_slow(),
    })
}

/// Times a 64 KiB `process_vm_readv` from this process into itself with the
/// destination 16 bytes past the source (mod 4096) against 0 bytes, best of
/// 5 each (about 0.3 ms, once). The kernel's copy is what is probed: `rep
/// movsb` in user space does not show the slow offset on the same CPU.
fn cma_offset_is_slow() -> bool {
    let me = pid();
    let copy = |src: *const u8, dst: *mut u8, n: usize| {
        // SAFETY: `offset_probe` hands ranges inside its vectors; this
        // process reads its own memory.
        unsafe { cma_direct(me, src as usize, dst, n, false) }.is_ok()
    };
    matches!(offset_probe(64 << 10, 0, copy), Some((fast, slow)) if slow > fast * 2)
}

/// A CMA copy in pieces through a bounce buffer placed at the remote
/// address's offset within a page, so the kernel's copy has no slow offset;
/// the local copy (`copy`) does not have the slow path.
///
/// # Safety
/// As for `cma_copy`.
unsafe fn cma_bounced(
    pid: i32,
    remote: usize,
    local: *mut u8,
    len: usize,
    write: bool,
) -> io::Result<()> {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < BOUNCE_PIECE + 8192 {
            *b = vec![0u8; BOUNCE_PIECE + 8192];
        }
        let base = b.as_mut_ptr();
        let mut done = 0;
        while done < len {
            let n = BOUNCE_PIECE.min(len - done);
            let r = remote + done;
            // The bounce piece at the remote address's offset within a page.
            let at = (base as usize).next_multiple_of(4096) - base as usize + r % 4096;
            // SAFETY: at + n < 8192 + BOUNCE_PIECE, inside the buffer; `local`
            // holds `len` bytes (the caller's contract).
            unsafe {
                let tmp = base.add(at);
                if write {
                    copy(tmp, local.add(done), n);
                    cma_direct(pid, r, tmp, n, true)?;
                } else {
                    cma_direct(pid, r, tmp, n, false)?;
                    copy(local.add(done), tmp, n);
                }
            }
            done += n;
        }
        Ok(())
    })
}

/// `cma_copy` without the bounce.
///
/// # Safety
/// As for `cma_copy`.
unsafe fn cma_direct(
    pid: i32,
    remote: usize,
    local: *mut u8,
    len: usize,
    write: bool,
) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let here = libc::iovec {
            // SAFETY: done < len, inside the caller's buffer.
            iov_base: unsafe { local.add(done) } as *mut libc::c_void,
            iov_len: len - done,
        };
        let there = libc::iovec {
            iov_base: (remote + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: the local iovec is accessible as the caller's contract says;
        // the kernel checks the remote range and reports EFAULT instead of faulting.
        let n = unsafe {
            if write {
                libc::process_vm_writev(pid, &here, 1, &there, 1, 0)
            } else {
                libc::process_vm_readv(pid, &here, 1, &there, 1, 0)
            }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::from(if write {
                io::ErrorKind::WriteZero
            } else {
                io::ErrorKind::UnexpectedEof
            }));
        }
        done += n as usize;
    }
    Ok(())
}

/// Copies `len` bytes from the segments `remote` ([address, length] in process
/// `pid`) into the segments `local` of this process, both walked in order,
/// with as few `process_vm_readv` calls as IOV_MAX allows.
///
/// # Safety
/// Every local segment is writable memory of this process; `local` and
/// `remote` each cover at least `len` bytes.
pub unsafe fn cma_readv(
    pid: i32,
    remote: &[[usize; 2]],
    local: &[[usize; 2]],
    len: usize,
) -> io::Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cma_vec(pid, remote, local, len, false) }
}

/// Copies `len` bytes from the segments `local` of this process into the
/// segments `remote` ([address, length] in process `pid`), both walked in
/// order, with as few `process_vm_writev` calls as IOV_MAX allows.
///
/// # Safety
/// Every local segment is readable memory of this process; `local` and
/// `remote` each cover at least `len` bytes.
pub unsafe fn cma_writev(
    pid: i32,
    remote: &[[usize; 2]],
    local: &[[usize; 2]],
    len: usize,
) -> io::Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cma_vec(pid, remote, local, len, true) }
}

/// `cma_readv` (`write` false) or `cma_writev`.
///
/// # Safety
/// As theirs.
unsafe fn cma_vec(
    pid: i32,
    remote: &[[usize; 2]],
    local: &[[usize; 2]],
    len: usize,
    write: bool,
) -> io::Result<()> {
    const MAX: usize = 1024; // IOV_MAX on Linux
                             // Cursors: (segment index, bytes of it already done).
    let (mut ri, mut ro, mut li, mut lo) = (0usize, 0usize, 0usize, 0usize);
    let mut left = len;
    let mut liov: Vec<libc::iovec> = Vec::with_capacity(MAX.min(local.len()));
    let mut riov: Vec<libc::iovec> = Vec::with_capacity(MAX.min(remote.len()));
    fn fill(
        v: &mut Vec<libc::iovec>,
        segs: &[[usize; 2]],
        mut i: usize,
        mut o: usize,
        mut want: usize,
    ) {
        v.clear();
        while want > 0 && i < segs.len() && v.len() < MAX {
            let n = (segs[i][1] - o).min(want);
            if n > 0 {
                v.push(libc::iovec {
                    iov_base: (segs[i][0] + o) as *mut libc::c_void,
                    iov_len: n,
                });
            }
            want -= n;
            i += 1;
            o = 0;
        }
    }
    fn advance(segs: &[[usize; 2]], i: &mut usize, o: &mut usize, mut n: usize) {
        while n > 0 {
            let room = segs[*i][1] - *o;
            if n < room {
                *o += n;
                return;
            }
            n -= room;
            *i += 1;
            *o = 0;
        }
        while *i < segs.len() && segs[*i][1] == *o {
            *i += 1;
            *o = 0;
        }
    }
    while left > 0 {
        fill(&mut liov, local, li, lo, left);
        fill(&mut riov, remote, ri, ro, left);
        if liov.is_empty() || riov.is_empty() {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        // SAFETY: local iovecs are writable (read) or readable (write), the
        // caller's contract; the kernel checks the remote ranges and reports
        // EFAULT instead of faulting.
        let n = unsafe {
            if write {
                libc::process_vm_writev(
                    pid,
                    liov.as_ptr(),
                    liov.len() as libc::c_ulong,
                    riov.as_ptr(),
                    riov.len() as libc::c_ulong,
                    0,
                )
            } else {
                libc::process_vm_readv(
                    pid,
                    liov.as_ptr(),
                    liov.len() as libc::c_ulong,
                    riov.as_ptr(),
                    riov.len() as libc::c_ulong,
                    0,
                )
            }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let n = n as usize;
        advance(local, &mut li, &mut lo, n);
        advance(remote, &mut ri, &mut ro, n);
        left -= n;
    }
    Ok(())
}

/// Copies `n` bytes like `memcpy`, avoiding a slow path: on this machine
/// (AMD EPYC) glibc's `memcpy` and `rep movsb` of 2 KiB to 1 MiB run at
/// about 2 GB/s instead of 40-50 when the destination lies 1 to 31 bytes past
/// the source modulo 4096 (4K aliasing: the loads wait on recent stores with
/// the same low address bits). Such copies run backwards (`copy_backward`:
/// 31-37 GB/s at those offsets), where each load lies below the stores
/// before it. Copies of `OXMPI_COPY_NT` bytes (1 MiB) or more use
/// non-temporal stores (`copy_streaming`): on an Intel Xeon, 2-rank
/// allgather and alltoall of 1-16 MiB blocks took 0.76-0.95 of the time of
/// ordinary stores, 128-256 KiB blocks 1.09-1.27 times (they stay in
/// cache). Measured in docs/performance.md.
///
/// # Safety
/// As for `ptr::copy_nonoverlapping`.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        if n <= 32 {
            small_copy(dst, src, n);
        } else if n < 1 << 20 && slow_offset(dst as usize, src as usize) && backward_enabled() {
            copy_backward(dst, src, n);
        } else if streams(n) {
            copy_streaming(dst, src, n);
        } else {
            std::ptr::copy_nonoverlapping(src, dst, n);
        }
    }
}

/// Whether `copy` makes a copy of `n` bytes with non-temporal stores.
pub fn streams(n: usize) -> bool {
    n >= nt_copy_min()
}

/// Smallest copy that `copy` makes with non-temporal stores
/// (`copy_streaming`); OXMPI_COPY_NT sets it.
fn nt_copy_min() -> usize {
    static MIN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| {
        crate::config::get_str("OXMPI_COPY_NT")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(NT_COPY_MIN)
    })
}
/// The default of OXMPI_COPY_NT: about the size of a core's L2 cache, above
/// which a copy evicts its own beginning anyway.
const NT_COPY_MIN: usize = 1 << 20;

/// Copies `n` bytes with non-temporal stores, which go to memory without
/// first reading each destination line into the cache (and later evicting
/// it): a copy this large leaves the cache anyway.
///
/// # Safety
/// As for `ptr::copy_nonoverlapping`.
#[inline(never)]
pub unsafe fn copy_streaming(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: every access lies within the first `n` bytes of `src` / `dst`;
    // the streaming stores go to 16-byte aligned addresses of `dst`.
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        // Up to the first 64-byte boundary of dst with ordinary stores.
        let head = (dst as usize).wrapping_neg() & 63;
        let head = head.min(n);
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut i = head;
        while i + 64 <= n {
            let s = src.add(i) as *const __m128i;
            let d = dst.add(i) as *mut __m128i;
            let (a, b, c, e) = (
                _mm_loadu_si128(s),
                _mm_loadu_si128(s.add(1)),
                _mm_loadu_si128(s.add(2)),
                _mm_loadu_si128(s.add(3)),
            );
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
            i += 64;
        }
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i);
        // Streaming stores are weakly ordered: the fence orders them before
        // every later store, so a Release store after the copy (a flag that
        // tells another rank the data is there) still publishes them.
        _mm_sfence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, n)
    }
}

/// Copies `n > 32` bytes from the end down, 64 bytes per step.
///
/// # Safety
/// As for `ptr::copy_nonoverlapping`, with `n > 32`.
#[inline(never)]
unsafe fn copy_backward(dst: *mut u8, src: *const u8, n: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY: every access lies within the first `n` bytes of `src` / `dst`.
    unsafe {
        let mut i = n;
        while i >= 64 {
            i -= 64;
            let s = src.add(i) as *const u128;
            let (a, b, c, d) = (rd(s), rd(s.add(1)), rd(s.add(2)), rd(s.add(3)));
            let t = dst.add(i) as *mut u128;
            wr(t, a);
            wr(t.add(1), b);
            wr(t.add(2), c);
            wr(t.add(3), d);
        }
        if i > 32 {
            small_copy(dst.add(32), src.add(32), i - 32);
            small_copy(dst, src, 32);
        } else {
            small_copy(dst, src, i);
        }
    }
}

/// Copies up to 32 bytes inline (a call into libc's `memcpy` costs more than
/// an 8-byte message's whole copy): two overlapping loads and stores.
///
/// # Safety
/// As for `ptr::copy_nonoverlapping`, with `n <= 32`.
#[inline(always)]
unsafe fn small_copy(dst: *mut u8, src: *const u8, n: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY: every access lies within the first `n` bytes of `src` / `dst`.
    unsafe {
        if n >= 16 {
            let (a, b) = (rd(src as *const u128), rd(src.add(n - 16) as *const u128));
            wr(dst as *mut u128, a);
            wr(dst.add(n - 16) as *mut u128, b);
        } else if n >= 8 {
            let (a, b) = (rd(src as *const u64), rd(src.add(n - 8) as *const u64));
            wr(dst as *mut u64, a);
            wr(dst.add(n - 8) as *mut u64, b);
        } else if n >= 4 {
            let (a, b) = (rd(src as *const u32), rd(src.add(n - 4) as *const u32));
            wr(dst as *mut u32, a);
            wr(dst.add(n - 4) as *mut u32, b);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// Lets any process of ours read this process's memory with CMA, where Yama
/// restricts ptrace to descendants (sibling ranks are not descendants).
pub fn allow_cma_peers() {
    // SAFETY: prctl with PR_SET_PTRACER only changes this process's Yama policy.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
    }
}

/// Seconds since an arbitrary fixed point (CLOCK_MONOTONIC).
pub fn now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Resolution of `now()` in seconds.
pub fn tick() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Writes `line` and a newline to stderr with one `write`; see `say!`.
pub fn say_line(mut line: String) {
    line.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length.
    unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len() - 1) };
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// An identifier of this machine's running kernel: ranks with equal ids can share memory.
pub fn host_id() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let mut s: String = hostname()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.push('_');
    s.extend(
        boot.trim()
            .chars()
            .filter(|c| c.is_ascii_hexdigit())
            .take(16),
    );
    s
}

/// Bytes of the largest cache level the C library reports (the same for
/// every process on the machine); 32 MiB where it reports none.
pub fn last_cache_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        [
            libc::_SC_LEVEL4_CACHE_SIZE,
            libc::_SC_LEVEL3_CACHE_SIZE,
            libc::_SC_LEVEL2_CACHE_SIZE,
        ]
        .into_iter()
        // SAFETY: sysconf has no memory effects.
        .map(|k| unsafe { libc::sysconf(k) })
        .find(|&b| b > 0)
        .map_or(32 << 20, |b| b as usize)
    })
}

/// The CPU this thread runs on now (0 if the kernel does not say).
pub fn current_cpu() -> usize {
    // SAFETY: sched_getcpu takes no arguments and only reads.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// The package (socket) of a CPU, from sysfs (0 if it does not say).
pub fn package_of(cpu: usize) -> i64 {
    std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    ))
    .ok()
    .and_then(|s| s.trim().parse().ok())
    .unwrap_or(0)
}

/// The NUMA node of a CPU: the `nodeN` entry of its sysfs directory (0 if
/// there is none).
pub fn numa_of(cpu: usize) -> i64 {
    std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}"))
        .ok()
        .and_then(|d| {
            d.flatten().find_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("node"))
                    .and_then(|k| k.parse().ok())
            })
        })
        .unwrap_or(0)
}

/// The CPUs online on this machine (the same for every process on it).
pub fn cpus_online() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        cpus_available()
    }
}

/// CPUs this process may run on.
pub fn cpus_available() -> usize {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set) as usize;
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Waits up to `ns` nanoseconds for `fd` to turn readable.
pub fn wait_readable(fd: i32, ns: u64) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timeout; no signal mask change.
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
}

pub fn yield_now() {
    // SAFETY: no arguments, no memory effects.
    unsafe { libc::sched_yield() };
}

pub fn pid() -> i32 {
    // SAFETY: always succeeds.
    unsafe { libc::getpid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounced CMA copies (read and write, this process into itself) of
    /// several pieces at a slow offset land exactly; the offset rule itself.
    #[test]
    fn cma_bounce_copies_exactly() {
        assert!(slow_offset(4096 + 16, 0) && slow_offset(1, 0) && slow_offset(31, 4096));
        assert!(!slow_offset(0, 0) && !slow_offset(32, 0) && !slow_offset(4080, 0));
        let n = 2 * BOUNCE_PIECE + 12345;
        let src: Vec<u8> = (0..n + 64).map(|i| (i * 7 + i / 4096) as u8).collect();
        let me = pid();
        for write in [false, true] {
            let mut dst = vec![0u8; n + 64];
            let (local, remote) = if write {
                (
                    src.as_ptr().wrapping_add(3) as *mut u8,
                    dst.as_mut_ptr() as usize + 19,
                )
            } else {
                (dst.as_mut_ptr().wrapping_add(19), src.as_ptr() as usize + 3)
            };
            // SAFETY: both ranges lie inside their vectors; a read writes only
            // `dst`, a write reads only `src`.
            let r = unsafe { cma_bounced(me, remote, local, n, write) };
            if r.is_err() {
                return; // CMA not permitted in this sandbox
            }
            assert_eq!(&dst[19..19 + n], &src[3..3 + n], "write={write}");
            assert!(dst[..19].iter().chain(&dst[19 + n..]).all(|&b| b == 0));
        }
    }

    /// The streaming copy of lengths around its 64-byte steps and of a
    /// large block, at every source and destination misalignment: exactly
    /// the bytes asked for, nothing around them.
    #[test]
    fn copy_streaming_exactly() {
        let big = (1 << 20) + 77;
        let src: Vec<u8> = (0..big + 192).map(|i| (i * 13 + i / 251) as u8).collect();
        let lens = (0..=200).chain([big]);
        for n in lens {
            for (so, doff) in [(0, 0), (1, 0), (0, 1), (5, 63), (17, 16), (63, 33)] {
                let mut dst = vec![0xEEu8; n + 192];
                // SAFETY: both ranges lie inside their (distinct) vectors.
                unsafe { copy_streaming(dst.as_mut_ptr().add(doff + 64), src.as_ptr().add(so), n) };
                assert!(
                    dst[..doff + 64].iter().all(|&b| b == 0xEE),
                    "n={n} so={so} doff={doff}"
                );
                assert!(
                    dst[doff + 64 + n..].iter().all(|&b| b == 0xEE),
                    "n={n} so={so} doff={doff}"
                );
                assert!(
                    dst[doff + 64..doff + 64 + n] == src[so..so + n],
                    "n={n} so={so} doff={doff}"
                );
            }
        }
    }

    /// `copy` of every length through the inline small path and just past it,
    /// at every misalignment: exactly the bytes asked for, nothing around them.
    #[test]
    fn copy_small_lengths() {
        let src: Vec<u8> = (0..80u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(1))
            .collect();
        for n in 0..=40 {
            for off in 0..8 {
                let mut dst = vec![0xEEu8; 96];
                // SAFETY: both ranges lie inside their (distinct) vectors.
                unsafe { copy(dst.as_mut_ptr().add(off + 8), src.as_ptr().add(off), n) };
                assert!(dst[..off + 8].iter().all(|&b| b == 0xEE), "n={n} off={off}");
                assert_eq!(
                    &dst[off + 8..off + 8 + n],
                    &src[off..off + n],
                    "n={n} off={off}"
                );
                assert!(
                    dst[off + 8 + n..].iter().all(|&b| b == 0xEE),
                    "n={n} off={off}"
                );
            }
        }
    }

    /// Vectored reads from this process into itself, with segment lists of
    /// different shapes on each side and more than IOV_MAX pieces.
    #[test]
    fn cma_readv_pairs_uneven_segment_lists() {
        let src: Vec<u8> = (0..300_000u32).map(|i| (i * 31 + 7) as u8).collect();
        let mut remote = Vec::new();
        let mut expect = Vec::new();
        let mut at = 0;
        let mut k = 0;
        while at + 200 < src.len() {
            let len = 1 + (k * 37) % 150;
            remote.push([src.as_ptr() as usize + at, len]);
            expect.extend_from_slice(&src[at..at + len]);
            at += len + 3;
            k += 1;
        }
        assert!(remote.len() > 2000);
        let mut dst = vec![0u8; expect.len() * 2];
        let local: Vec<[usize; 2]> = (0..expect.len().div_ceil(50))
            .map(|i| [dst.as_mut_ptr() as usize + i * 100, 50])
            .collect();
        // SAFETY: every local segment lies in `dst`; the remote ones in `src`.
        unsafe { cma_readv(std::process::id() as i32, &remote, &local, expect.len()) }.unwrap();
        let mut got = Vec::new();
        let mut left = expect.len();
        for &[a, l] in &local {
            let off = a - dst.as_ptr() as usize;
            let n = l.min(left);
            got.extend_from_slice(&dst[off..off + n]);
            left -= n;
        }
        assert_eq!(got, expect);
    }
}
