//! CUDA IPC between the ranks of one node: a sender describes a device
//! buffer as its allocation's IPC handle, the allocation's buffer id and
//! the offset in it (`export`); the receiver maps the allocation
//! (`open`) and copies out of it with the driver.
//!
//! Both sides cache. The sender keeps the handle of each allocation it has
//! exported, by buffer id (`cuIpcGetMemHandle` is costly). The receiver
//! keeps the mappings it opened, keyed by (peer, buffer id): a buffer id is
//! new for every allocation, so an address the peer freed and allocated
//! again is a new key and never reads the old mapping. A mapping is closed
//! when it is evicted (least recently used, `OXMPI_CUDA_IPC_CACHE`
//! entries; never while a window over that memory pins it), when a new
//! allocation of the same peer overlaps its range in the peer's address
//! space (the old one was freed there, and the driver maps one allocation
//! per address range of a peer), or at exit.

use super::driver::*;
use super::for_copy;
use crate::base::consts::MPI_ERR_OTHER;
use crate::base::error::Result;
use crate::err;
use std::collections::HashMap;
use std::ffi::{c_int, c_uint};
use std::sync::Mutex;

/// What a receiver needs to reach a sender's device buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpcRef {
    pub handle: IpcHandle,
    /// The allocation's buffer id in the sender.
    pub id: u64,
    /// Where the buffer starts in the allocation.
    pub offset: u64,
    /// The allocation's size.
    pub size: u64,
    /// The allocation's start in the sender's address space.
    pub base: u64,
}

/// Bytes of an `IpcRef` on the wire: the handle, then the id, the offset,
/// the size and the base in 48 bits each (buffer ids count allocations;
/// offsets, sizes and user-space addresses stay below 2^48), so that a
/// single-copy collective's call line still has room for one.
/// cbindgen:ignore
pub const WIRE: usize = 64 + 4 * 6;

/// Largest value of a 48-bit field of the wire form.
const FIELD_MAX: u64 = (1 << 48) - 1;

impl IpcRef {
    pub fn to_bytes(&self) -> [u8; WIRE] {
        let mut b = [0u8; WIRE];
        b[..64].copy_from_slice(&self.handle.reserved);
        for (i, v) in [self.id, self.offset, self.size, self.base]
            .into_iter()
            .enumerate()
        {
            debug_assert!(v <= FIELD_MAX);
            b[64 + 6 * i..70 + 6 * i].copy_from_slice(&v.to_le_bytes()[..6]);
        }
        b
    }

    pub fn from_bytes(b: &[u8]) -> Option<IpcRef> {
        if b.len() < WIRE {
            return None;
        }
        let field = |i: usize| {
            let mut w = [0u8; 8];
            w[..6].copy_from_slice(&b[64 + 6 * i..70 + 6 * i]);
            u64::from_le_bytes(w)
        };
        let mut handle = IpcHandle { reserved: [0; 64] };
        handle.reserved.copy_from_slice(&b[..64]);
        Some(IpcRef {
            handle,
            id: field(0),
            offset: field(1),
            size: field(2),
            base: field(3),
        })
    }
}

struct Opened {
    base: CUdeviceptr,
    /// The sender's allocation: its start there and its size.
    from: u64,
    len: u64,
    used: u64,
    /// Holders that keep the mapping open whatever the cache's limit (a
    /// window over the peer's device memory, `pin`).
    pins: u32,
    /// The peer's allocation is on the GPU of this process's context, and
    /// that GPU runs without MPS (`shares_gpu`).
    shared: bool,
}

#[derive(Default)]
struct Caches {
    /// Sender: buffer id -> handle of the allocation.
    exported: HashMap<u64, IpcHandle>,
    /// Receiver: (peer, buffer id) -> mapping.
    opened: HashMap<(usize, u64), Opened>,
    clock: u64,
    opens: u64,
}

static CACHES: Mutex<Option<Caches>> = Mutex::new(None);

fn caches<T>(f: impl FnOnce(&mut Caches) -> T) -> T {
    let mut g = CACHES.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Caches::default))
}

fn cache_limit() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("OXMPI_CUDA_IPC_CACHE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or(64)
    })
}

/// Whether device buffers may go by IPC to the ranks of this node
/// (`OXMPI_CUDA_IPC`, default 1).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("OXMPI_CUDA_IPC").map_or(true, |v| v.trim() != "0"))
}

/// The IPC description of the device buffer at `p`.
pub fn export(p: *const u8) -> Result<IpcRef> {
    let d = for_copy()?;
    let mut id: u64 = 0;
    let mut start: CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: each out pointer has its attribute's type (unsigned long
    // long, CUdeviceptr, size_t).
    let r = unsafe {
        d.attributes(
            p as u64,
            [
                (CU_POINTER_ATTRIBUTE_BUFFER_ID, (&mut id as *mut u64).cast()),
                (
                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                    (&mut start as *mut CUdeviceptr).cast(),
                ),
                (
                    CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                    (&mut size as *mut usize).cast(),
                ),
            ],
        )
    };
    if r != CUDA_SUCCESS
        || start == 0
        || id == 0
        || [id, start, size as u64, start + size as u64]
            .iter()
            .any(|&v| v > FIELD_MAX)
    {
        return Err(err!(
            MPI_ERR_OTHER,
            "CUDA: no allocation range for device buffer {p:p} ({})",
            d.error(r)
        ));
    }
    let cached = caches(|c| c.exported.get(&id).copied());
    let handle = match cached {
        Some(h) => h,
        None => {
            let mut h = IpcHandle { reserved: [0; 64] };
            // SAFETY: `h` is a valid out handle; `start` is an allocation's base.
            let r = unsafe { (d.ipc_get_mem_handle)(&mut h, start) };
            if r != CUDA_SUCCESS {
                return Err(err!(
                    MPI_ERR_OTHER,
                    "cuIpcGetMemHandle failed: {}",
                    d.error(r)
                ));
            }
            caches(|c| {
                if c.exported.len() >= 4096 {
                    c.exported.clear();
                }
                c.exported.insert(id, h);
            });
            h
        }
    };
    Ok(IpcRef {
        handle,
        id,
        offset: p as u64 - start,
        size: size as u64,
        base: start,
    })
}

/// `open`, and the mapping stays open until as many `unpin`s (for memory
/// used for a long time: a window's).
pub fn pin(peer: usize, r: &IpcRef) -> Result<*mut u8> {
    open_with(peer, r, 1)
}

/// Ends one `pin` of peer `peer`'s allocation `id`; the mapping is then
/// the cache's again (evicted in its turn).
pub fn unpin(peer: usize, id: u64) {
    caches(|c| {
        if let Some(o) = c.opened.get_mut(&(peer, id)) {
            o.pins = o.pins.saturating_sub(1);
        }
    });
}

/// The start of peer `peer`'s buffer `r` in this process, mapping its
/// allocation if this (peer, buffer id) is not mapped yet.
pub fn open(peer: usize, r: &IpcRef) -> Result<*mut u8> {
    open_with(peer, r, 0)
}

/// `open`, adding `pins` to the mapping's pins in the same step.
fn open_with(peer: usize, r: &IpcRef, pins: u32) -> Result<*mut u8> {
    let d = for_copy()?;
    let hit = caches(|c| {
        c.clock += 1;
        let now = c.clock;
        c.opened.get_mut(&(peer, r.id)).map(|o| {
            o.used = now;
            o.pins += pins;
            o.base
        })
    });
    let base = match hit {
        Some(b) => b,
        None => {
            // A mapping of an allocation the peer has freed since, where the
            // new one lies (a sender's addresses are reused), is stale, and
            // the driver refuses to map the new one while it is open
            // (CUDA_ERROR_ALREADY_MAPPED): close those first. A live
            // allocation of the peer never overlaps another, so no copy is
            // using them.
            let stale: Vec<CUdeviceptr> = caches(|c| {
                let keys: Vec<(usize, u64)> = c
                    .opened
                    .iter()
                    .filter(|(&(p, id), o)| {
                        p == peer
                            && id != r.id
                            && o.pins == 0
                            && o.from < r.base.saturating_add(r.size.max(1))
                            && r.base < o.from.saturating_add(o.len.max(1))
                    })
                    .map(|(k, _)| *k)
                    .collect();
                keys.iter()
                    .filter_map(|k| c.opened.remove(k))
                    .map(|o| o.base)
                    .collect()
            });
            for old in stale {
                // SAFETY: `old` was mapped by cuIpcOpenMemHandle and is no
                // longer in the cache; its allocation is gone at the peer.
                unsafe { (d.ipc_close_mem_handle)(old) };
            }
            let mut b: CUdeviceptr = 0;
            // SAFETY: `b` is a valid out pointer; the handle came from the
            // peer's cuIpcGetMemHandle.
            let res = unsafe {
                (d.ipc_open_mem_handle)(
                    &mut b,
                    r.handle,
                    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as c_uint,
                )
            };
            if res != CUDA_SUCCESS {
                return Err(err!(
                    MPI_ERR_OTHER,
                    "cuIpcOpenMemHandle of world rank {peer}'s buffer failed: {}",
                    d.error(res)
                ));
            }
            let shared = same_gpu_without_mps(d, b);
            let evicted = caches(|c| {
                c.opens += 1;
                let mut out = None;
                if c.opened.len() >= cache_limit() {
                    // Pinned mappings stay (the cache then grows past its limit).
                    let oldest = c
                        .opened
                        .iter()
                        .filter(|(_, o)| o.pins == 0)
                        .min_by_key(|(_, o)| o.used)
                        .map(|(k, _)| *k);
                    out = oldest.and_then(|k| c.opened.remove(&k)).map(|o| o.base);
                }
                let now = c.clock;
                c.opened.insert(
                    (peer, r.id),
                    Opened {
                        base: b,
                        from: r.base,
                        len: r.size,
                        used: now,
                        pins,
                        shared,
                    },
                );
                out
            });
            if let Some(old) = evicted {
                // SAFETY: `old` was mapped by cuIpcOpenMemHandle and is no
                // longer in the cache, so no copy uses it.
                unsafe { (d.ipc_close_mem_handle)(old) };
            }
            b
        }
    };
    Ok((base + r.offset) as *mut u8)
}

/// Whether the mapping of `peer`'s allocation `id` (opened) lies on the GPU
/// of this process's context while that GPU runs without MPS: the two
/// processes' contexts then take turns on the GPU, and each copy out of
/// the mapping waits for a switch between them.
pub fn shares_gpu(peer: usize, id: u64) -> bool {
    caches(|c| c.opened.get(&(peer, id)).is_some_and(|o| o.shared))
}

/// Marks a `gpu_without_mps` word: the GPU runs without MPS; the bits
/// below name it.
/// cbindgen:ignore
pub const NO_MPS: u32 = 1 << 28;

/// For the single-copy collectives, which publish it beside their device
/// buffers: 0 where the GPU that holds the device memory at `p` runs with
/// MPS (or a driver before CUDA 12.3 does not say), else `NO_MPS` and the
/// GPU's PCI domain (low 15 bits), bus and device, which name it alike in
/// every process of the node (a device ordinal depends on each process's
/// `CUDA_VISIBLE_DEVICES`). Two device ranks that publish the same nonzero
/// word take turns on one GPU, and every CUDA IPC copy between them waits
/// for a switch of its context. Asked once per device ordinal.
pub fn gpu_without_mps(p: *const u8) -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    /// Per device ordinal: 0 not asked yet, else the word with bit 31 set.
    static WORDS: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];
    const ASKED: u32 = 1 << 31;
    let Ok(d) = for_copy() else {
        return 0;
    };
    let Some(ordinal) = super::ordinal_of(d, p as CUdeviceptr).filter(|o| (0..64).contains(o))
    else {
        return 0;
    };
    let slot = &WORDS[ordinal as usize];
    // Relaxed: a cache of a value every thread computes the same way.
    let w = slot.load(Ordering::Relaxed);
    if w != 0 {
        return w & !ASKED;
    }
    let attr = |a: c_int| -> Option<c_int> {
        let mut v: c_int = 0;
        // SAFETY: `v` is a valid out pointer; `ordinal` is a device ordinal
        // the driver reported.
        let r = unsafe { (d.device_get_attribute)(&mut v, a, ordinal) };
        (r == CUDA_SUCCESS).then_some(v)
    };
    let word = match attr(CU_DEVICE_ATTRIBUTE_MPS_ENABLED) {
        Some(0) => {
            let f = |a| attr(a).unwrap_or(0) as u32;
            NO_MPS
                | (f(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID) & 0x7fff) << 13
                | (f(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) & 0xff) << 5
                | f(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID) & 0x1f
        }
        _ => 0,
    };
    // Relaxed: as above.
    slot.store(word | ASKED, Ordering::Relaxed);
    word
}

/// Whether the mapped device memory at `b` is on the current context's
/// device and that device reports MPS off. A driver that does not know
/// the attribute (before CUDA 12.3) answers an error: taken as "not known
/// to share", which keeps IPC.
fn same_gpu_without_mps(d: &Driver, b: CUdeviceptr) -> bool {
    let mut mine: c_int = -1;
    // SAFETY: `mine` is a valid out pointer.
    let here = unsafe { (d.ctx_get_device)(&mut mine) } == CUDA_SUCCESS;
    here && super::ordinal_of(d, b) == Some(mine) && gpu_without_mps(b as *const u8) != 0
}

/// Mappings opened so far (for tests and diagnostics).
pub fn opens() -> u64 {
    caches(|c| c.opens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_survives_the_wire() {
        let mut handle = IpcHandle { reserved: [0; 64] };
        for (i, b) in handle.reserved.iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        let r = IpcRef {
            handle,
            id: 123_456_789,
            offset: 4096 + 7,
            size: 3 << 30,
            base: 0x7f12_3456_0000,
        };
        let b = r.to_bytes();
        assert_eq!(IpcRef::from_bytes(&b), Some(r));
        assert_eq!(IpcRef::from_bytes(&b[..WIRE - 1]), None);
    }
}
