//! The part of a window that spans nodes: every rank's memory and control
//! words registered with the process's UCX RMA worker
//! (`transport::ucx::rma`), and each rank's endpoint and remote keys.
//!
//! In such a window the words that order and exclude (passive-target
//! locks, the accumulate mutex, post and complete counters) go through
//! UCX's atomics for every target, the rank's own and its node's included:
//! then one agent (the fabric's atomics, or the target's UCX worker where
//! they are emulated) applies every atomic on a word, whatever the fabric
//! guarantees about atomics of the CPU beside its own. Accumulates take the
//! target's mutex (with `acc_single_intrinsic`, single elements go as UCX
//! atomics instead). Puts and gets to ranks of the node still go by
//! load/store and single copy; to other nodes by `ucp_put_nbx`/`get_nbx`.

use crate::base::consts::*;
use crate::base::error::Result;
use crate::err;
use crate::transport::ucx::rma::{Amo, Ep, Reg, Rkey, Rma};
use std::sync::atomic::{AtomicU64, Ordering};

/// Index of the passive-target lock word in a rank's control words.
pub const LOCK: usize = 0;
/// Index of the accumulate mutex.
pub const ACC: usize = 1;

/// One rank of the window as reached through UCX.
pub struct Peer {
    pub ep: Ep,
    /// The key of its window memory (None when it has none).
    pub data: Option<Rkey>,
    /// Its window memory's address in its own process.
    pub base: u64,
    /// Its control words' address and key.
    pub ctl: u64,
    pub ctl_key: Rkey,
}

/// What a spanning window holds of UCX.
pub struct Remote {
    pub rma: &'static Rma,
    /// This rank's control words: lock, accumulate mutex, then per window
    /// rank the posts it made to us and the completes it made on us.
    pub ctl: Box<[AtomicU64]>,
    regs: Vec<Reg>,
    pub peers: Vec<Peer>,
    /// Puts issued to each rank since its last flush.
    dirty: Vec<std::cell::Cell<bool>>,
    n: usize,
}

/// Exchanges one byte string per rank over the window's communicator.
pub type Gather<'a> = dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>> + 'a;

/// What each rank sends the others when a spanning window is made.
struct Record {
    base: u64,
    ctl: u64,
    address: Vec<u8>,
    data_key: Vec<u8>,
    ctl_key: Vec<u8>,
}

impl Record {
    fn bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&self.base.to_le_bytes());
        b.extend_from_slice(&self.ctl.to_le_bytes());
        for v in [&self.address, &self.data_key, &self.ctl_key] {
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v);
        }
        b
    }

    fn from(b: &[u8]) -> Record {
        let u64at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let mut at = 16;
        let mut next = || {
            let n = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
            let v = b[at + 4..at + 4 + n].to_vec();
            at += 4 + n;
            v
        };
        let (address, data_key, ctl_key) = (next(), next(), next());
        Record {
            base: u64at(0),
            ctl: u64at(8),
            address,
            data_key,
            ctl_key,
        }
    }
}

fn ucx_err(what: String) -> crate::base::error::Error {
    err!(MPI_ERR_OTHER, "one-sided operation across nodes: {what}")
}

impl Remote {
    /// This rank's part of a spanning window of `n` ranks whose memory is
    /// `size` bytes at `base`; `gather` exchanges byte strings over the
    /// window's communicator (every rank's, in rank order). Collective.
    pub fn new(
        n: usize,
        rank: usize,
        world: &[i32],
        base: usize,
        size: usize,
        gather: &mut Gather,
    ) -> Result<Remote> {
        // Every rank learns whether every other could start UCX.
        let rma = Rma::worker();
        let why = rma.as_ref().err().cloned().unwrap_or_default();
        let oks = gather(why.as_bytes())?;
        if let Some(r) = oks.iter().position(|w| !w.is_empty()) {
            return Err(err!(
                MPI_ERR_OTHER,
                "the window spans nodes but rank {r} could not start UCX for one-sided operations: {}",
                String::from_utf8_lossy(&oks[r])
            ));
        }
        let rma = rma.unwrap();
        let ctl: Box<[AtomicU64]> = (0..2 + 2 * n).map(|_| AtomicU64::new(0)).collect();
        let mut regs = Vec::new();
        let mut fail = String::new();
        let ctl_reg = rma.map(ctl.as_ptr() as usize, ctl.len() * 8);
        let data_reg = if size > 0 {
            Some(rma.map(base, size))
        } else {
            None
        };
        let mut mine = Record {
            base: base as u64,
            ctl: ctl.as_ptr() as u64,
            address: rma.address().to_vec(),
            data_key: Vec::new(),
            ctl_key: Vec::new(),
        };
        match ctl_reg {
            Ok(r) => {
                mine.ctl_key = r.packed.clone();
                regs.push(r);
            }
            Err(e) => fail = e,
        }
        match data_reg {
            Some(Ok(r)) => {
                mine.data_key = r.packed.clone();
                regs.push(r);
            }
            Some(Err(e)) => fail = e,
            None => {}
        }
        let failed = gather(fail.as_bytes())?;
        if let Some(r) = failed.iter().position(|w| !w.is_empty()) {
            for g in regs {
                rma.unmap(g);
            }
            return Err(err!(
                MPI_ERR_OTHER,
                "rank {r} could not register its window memory with UCX: {}",
                String::from_utf8_lossy(&failed[r])
            ));
        }
        let all = gather(&mine.bytes())?;
        let mut peers = Vec::with_capacity(n);
        for (r, b) in all.iter().enumerate() {
            let rec = Record::from(b);
            let made = (|| -> std::result::Result<Peer, String> {
                let ep = rma.ep(world[r] as usize, &rec.address)?;
                let data = if rec.data_key.is_empty() {
                    None
                } else {
                    Some(rma.unpack(ep, &rec.data_key)?)
                };
                Ok(Peer {
                    ep,
                    data,
                    base: rec.base,
                    ctl: rec.ctl,
                    ctl_key: rma.unpack(ep, &rec.ctl_key)?,
                })
            })();
            match made {
                Ok(p) => peers.push(p),
                Err(e) => {
                    for p in peers {
                        rma.drop_key(p.ctl_key);
                        if let Some(k) = p.data {
                            rma.drop_key(k);
                        }
                    }
                    for g in regs {
                        rma.unmap(g);
                    }
                    return Err(ucx_err(format!(
                        "rank {rank} could not reach rank {r} of the window: {e}"
                    )));
                }
            }
        }
        Ok(Remote {
            rma,
            ctl,
            regs,
            peers,
            dirty: (0..n).map(|_| std::cell::Cell::new(false)).collect(),
            n,
        })
    }

    /// Index of the post counter of window rank `o` (posts it made to us).
    pub fn post_word(&self, o: usize) -> usize {
        2 + o
    }

    /// Index of the complete counter of window rank `o`.
    pub fn complete_word(&self, o: usize) -> usize {
        2 + self.n + o
    }

    /// One of this rank's control words, as UCX at the origins updates it.
    pub fn word(&self, i: usize) -> &AtomicU64 {
        &self.ctl[i]
    }

    /// Puts the packed `data` into the target segments `segs` (addresses
    /// in rank `r`'s process).
    pub fn put(&self, r: usize, segs: &[[usize; 2]], data: &[u8]) -> Result<()> {
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        let mut at = 0usize;
        let v: Vec<(usize, usize, u64)> = segs
            .iter()
            .map(|&[a, n]| {
                let s = (data.as_ptr() as usize + at, n, a as u64);
                at += n;
                s
            })
            .collect();
        debug_assert!(at <= data.len());
        self.dirty[r].set(true);
        // SAFETY: `data` is readable for the segments' total; `place`
        // checked the remote ranges against rank r's window memory.
        unsafe { self.rma.put(p.ep, key, &v) }.map_err(ucx_err)
    }

    /// Gets the target segments `segs` of rank `r` packed into `out`.
    pub fn get(&self, r: usize, segs: &[[usize; 2]], out: &mut [u8]) -> Result<()> {
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        let mut at = 0usize;
        let v: Vec<(usize, usize, u64)> = segs
            .iter()
            .map(|&[a, n]| {
                let s = (out.as_mut_ptr() as usize + at, n, a as u64);
                at += n;
                s
            })
            .collect();
        debug_assert!(at <= out.len());
        // SAFETY: `out` is writable for the segments' total; the remote
        // ranges were checked as for `put`.
        unsafe { self.rma.get(p.ep, key, &v) }.map_err(ucx_err)
    }

    /// Fetching atomics on rank `r`'s window memory: each (operand, remote
    /// address) becomes (old value, address).
    pub fn atomics(&self, r: usize, op: Amo, size: usize, ops: &mut [(u64, u64)]) -> Result<()> {
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        // SAFETY: the addresses were checked by `place` and are aligned to `size`.
        unsafe { self.rma.atomics(p.ep, key, op, size, ops) }.map_err(ucx_err)
    }

    /// Compare-and-swap on rank `r`'s window memory at `raddr`.
    pub fn cswap(&self, r: usize, size: usize, cmp: u64, new: u64, raddr: u64) -> Result<u64> {
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        // SAFETY: as for `atomics`.
        unsafe { self.rma.cswap(p.ep, key, size, cmp, new, raddr) }.map_err(ucx_err)
    }

    /// Compare-and-swaps on rank `r`'s window memory, all issued at once:
    /// each (compare, new, remote address) gets the old value for `new`.
    pub fn cswaps(&self, r: usize, size: usize, ops: &mut [(u64, u64, u64)]) -> Result<()> {
        let p = &self.peers[r];
        let key = p.data.as_ref().ok_or_else(|| no_memory(r))?;
        // SAFETY: as for `atomics`.
        unsafe { self.rma.cswaps(p.ep, key, size, ops) }.map_err(ucx_err)
    }

    /// A fetching atomic on control word `i` of rank `r`: the old value.
    pub fn ctl_op(&self, r: usize, i: usize, op: Amo, v: u64) -> Result<u64> {
        let p = &self.peers[r];
        let mut one = [(v, p.ctl + 8 * i as u64)];
        // SAFETY: the control words are registered, 8-byte aligned, and
        // `i` lies among them (2 + 2n words on every rank).
        unsafe { self.rma.atomics(p.ep, &p.ctl_key, op, 8, &mut one) }.map_err(ucx_err)?;
        Ok(one[0].0)
    }

    /// A non-fetching atomic on control word `i` of rank `r` (it lands in
    /// its time: a flush of `r` waits for it, and it follows everything
    /// flushed before it).
    pub fn ctl_post(&self, r: usize, i: usize, op: Amo, v: u64) -> Result<()> {
        let p = &self.peers[r];
        self.dirty[r].set(true);
        // SAFETY: as for `ctl_op`.
        unsafe { self.rma.post(p.ep, &p.ctl_key, op, v, p.ctl + 8 * i as u64) }.map_err(ucx_err)
    }

    /// Compare-and-swap on control word `i` of rank `r`.
    pub fn ctl_cswap(&self, r: usize, i: usize, cmp: u64, new: u64) -> Result<u64> {
        let p = &self.peers[r];
        // SAFETY: as for `ctl_op`.
        unsafe {
            self.rma
                .cswap(p.ep, &p.ctl_key, 8, cmp, new, p.ctl + 8 * i as u64)
        }
        .map_err(ucx_err)
    }

    /// Puts to rank `r` (all ranks: None) are complete at their targets.
    pub fn flush(&self, r: Option<usize>) -> Result<()> {
        for t in 0..self.n {
            if self.dirty[t].get() && r.is_none_or(|r| r == t) {
                self.rma.flush(self.peers[t].ep).map_err(ucx_err)?;
                self.dirty[t].set(false);
            }
        }
        Ok(())
    }

    /// Rank `r`'s address for an address `at` of its memory as this rank
    /// maps it at `mapped` (the node's segment), or as it is (other nodes).
    pub fn their(&self, r: usize, mapped: usize, at: usize) -> u64 {
        self.peers[r]
            .base
            .wrapping_add(at.wrapping_sub(mapped) as u64)
    }

    /// Takes rank `r`'s accumulate mutex.
    pub fn lock_acc(&self, r: usize) -> Result<()> {
        let mut spins = 0u32;
        while self.ctl_cswap(r, ACC, 0, 1)? != 0 {
            spins += 1;
            if spins > 8 {
                crate::sys::yield_now();
            }
        }
        // SeqCst: orders this rank's loads and stores of a node's memory
        // after taking the mutex (the partner is the fence in `unlock_acc`).
        std::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }

    pub fn unlock_acc(&self, r: usize) -> Result<()> {
        // SeqCst: this rank's stores are visible before the release (its
        // partner is the fence in `lock_acc` of the next holder).
        std::sync::atomic::fence(Ordering::SeqCst);
        self.flush(Some(r))?;
        // Not waited for: the next holder sees it a moment later; this
        // rank's own next compare-and-swap at worst goes round once more.
        self.ctl_post(r, ACC, Amo::And, 0)
    }
}

fn no_memory(r: usize) -> crate::base::error::Error {
    err!(
        MPI_ERR_RMA_RANGE,
        "rank {r} brought no memory to the window (size 0)"
    )
}

impl Drop for Remote {
    fn drop(&mut self) {
        for p in self.peers.drain(..) {
            self.rma.drop_key(p.ctl_key);
            if let Some(k) = p.data {
                self.rma.drop_key(k);
            }
        }
        for g in self.regs.drain(..) {
            self.rma.unmap(g);
        }
    }
}
