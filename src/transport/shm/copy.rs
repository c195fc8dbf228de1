//! Single copy between the address spaces of two ranks on one node: the
//! kernel's `process_vm_readv` / `process_vm_writev` (CMA), with the bounce
//! through a buffer at the remote page offset that `sys::cma_read` applies
//! where the kernel's copy is slow. A CUDA IPC copier for device buffers
//! slots in beside it.
//!
//! Per peer it remembers whether single copy is allowed (OXMPI_CMA, and
//! not refused by the kernel yet) and whether a copy from that peer has
//! worked (split copies start only then, so that a refusal never strands a
//! half-copied message).

use std::io;

pub struct Copier {
    pids: Vec<i32>,
    ok: Vec<bool>,
    proven: Vec<bool>,
}

impl Copier {
    /// `pids` by world rank; `enabled` is OXMPI_CMA.
    pub fn new(pids: Vec<i32>, enabled: bool) -> Copier {
        let n = pids.len();
        Copier {
            pids,
            ok: vec![enabled; n],
            proven: vec![false; n],
        }
    }

    /// Single copy with world rank `w` is allowed (and not refused yet).
    #[inline]
    pub fn usable(&self, w: usize) -> bool {
        self.ok[w]
    }

    /// A copy from `w` has worked.
    #[inline]
    pub fn proven(&self, w: usize) -> bool {
        self.proven[w]
    }

    pub fn mark_proven(&mut self, w: usize) {
        self.proven[w] = true;
    }

    /// The kernel refused a copy with `w`: later messages take the cells.
    pub fn refuse(&mut self, w: usize) {
        self.ok[w] = false;
    }

    pub fn pid(&self, w: usize) -> i32 {
        self.pids[w]
    }

    /// Copies `len` bytes at `remote` in `w`'s memory to `dst`.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes.
    pub unsafe fn read(&self, w: usize, remote: usize, dst: *mut u8, len: usize) -> io::Result<()> {
        // SAFETY: forwarded contract.
        unsafe { crate::sys::cma_read(self.pids[w], remote, dst, len) }
    }

    /// Copies `len` bytes from `src` to `remote` in `w`'s memory.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes.
    pub unsafe fn write(
        &self,
        w: usize,
        remote: usize,
        src: *const u8,
        len: usize,
    ) -> io::Result<()> {
        // SAFETY: forwarded contract.
        unsafe { crate::sys::cma_write(self.pids[w], remote, src, len) }
    }

    /// Single copy between segment lists: the sender's (`niov` segments listed
    /// at `addr` in its memory, or one contiguous range at `addr`) and mine
    /// (`local`, or `n` bytes at `buf`).
    ///
    /// # Safety
    /// `local` (or `buf`) is writable for `n` bytes.
    pub unsafe fn read_vectored(
        &self,
        w: usize,
        addr: u64,
        niov: u64,
        local: Option<&[[usize; 2]]>,
        buf: *mut u8,
        n: usize,
    ) -> io::Result<()> {
        let pid = self.pids[w];
        let remote: Vec<[usize; 2]> = if niov == 0 {
            vec![[addr as usize, n]]
        } else {
            let mut v = vec![[0usize; 2]; niov as usize];
            // SAFETY: `v` holds `niov` segments; the sender keeps its list
            // alive until our FIN.
            unsafe {
                crate::sys::cma_read(
                    pid,
                    addr as usize,
                    v.as_mut_ptr() as *mut u8,
                    v.len() * std::mem::size_of::<[usize; 2]>(),
                )?
            };
            v
        };
        let one = [[buf as usize, n]];
        // SAFETY: forwarded contract.
        unsafe { crate::sys::cma_readv(pid, &remote, local.unwrap_or(&one), n) }
    }
}
