//! What memory a pointer names, and moving bytes of device memory.
//!
//! `classify` is called once where a buffer is described
//! (`abi::datatype::describe`). With the driver absent or `OXMPI_CUDA=0`
//! it answers "host" after one relaxed load; otherwise it asks the driver
//! (`cuPointerGetAttributes`: memory type, managed, context), once per
//! buffer, as MPICH and Open MPI do: an answer of "host" cannot be cached
//! safely without hooks on the application's allocations, since an address
//! may later be device memory. Managed memory is CPU-accessible and counts
//! as host; pinned and registered host memory are host.
//!
//! The driver is opened on the first classification (`OXMPI_CUDA=auto`),
//! at `MPI_Init` with `OXMPI_CUDA=1` (which then fails when the driver is
//! unusable), never with `OXMPI_CUDA=0`. Opening it calls `cuInit` and
//! counts devices; it creates no context and allocates nothing. Copies use
//! the context current on the calling thread, or else the context of the
//! last device buffer seen.
//!
//! The kind travels with the request, the outgoing queue and the schedule;
//! every CPU byte-moving site below the abi calls `host_only`: device
//! buffers reach the transports as host staging areas (`datatype::Cursor`
//! over device memory packs and unpacks with the driver's strided copies).
//! Calls `base`, `config` and `op`'s element kinds (for the kernels).

pub mod driver;
pub mod ipc;
pub mod kernels;

use crate::base::consts::{MPI_ERR_BUFFER, MPI_ERR_OTHER};
use crate::base::error::{Error, Result};
use crate::err;
use driver::*;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering::Relaxed};
use std::sync::OnceLock;

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemKind {
    #[default]
    Host,
    Device,
}

const UNTRIED: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// Whether classification asks the driver: UNTRIED until the first
/// classification (or MPI_Init with OXMPI_CUDA=1) opens it. Relaxed: the
/// driver itself is published by `DRIVER`'s OnceLock, which `driver()`
/// reads before any use.
static STATE: AtomicU8 = AtomicU8::new(UNTRIED);
static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();
/// The context of the last device buffer classified, for copies made on a
/// thread with no current context. Relaxed: a context handle is the
/// driver's, valid for the process; nothing else is published with it.
static LAST_CTX: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// OXMPI_CUDA as a mode: 0 off, 1 required, anything else auto.
fn mode() -> &'static str {
    static M: OnceLock<String> = OnceLock::new();
    M.get_or_init(|| std::env::var("OXMPI_CUDA").unwrap_or_default())
}

/// The driver, opened on first use; None when off or unusable.
fn driver() -> Option<&'static Driver> {
    let r = DRIVER.get_or_init(|| {
        if mode() == "0" {
            return Err("OXMPI_CUDA=0".into());
        }
        let name =
            crate::config::get_str("OXMPI_CUDA_LIB").unwrap_or_else(|| "libcuda.so.1".into());
        driver::load(&name)
    });
    let d = r.as_ref().ok();
    STATE.store(if d.is_some() { ON } else { OFF }, Relaxed);
    d
}

/// MPI_Init's check: with OXMPI_CUDA=1 the driver must be usable.
pub fn init_check() -> Result<()> {
    if mode() != "1" {
        return Ok(());
    }
    driver();
    match DRIVER.get() {
        Some(Err(e)) => Err(err!(
            MPI_ERR_OTHER,
            "OXMPI_CUDA=1 but the CUDA driver cannot be used: {e}"
        )),
        _ => Ok(()),
    }
}

/// Whether device buffers are supported in this process: the driver is
/// usable (opening it if that was not tried yet).
pub fn supported() -> bool {
    driver().is_some()
}

/// The kind of memory of the `len` bytes at `p`.
#[inline(always)]
pub fn classify(p: *const u8, _len: usize) -> MemKind {
    if p.is_null() || STATE.load(Relaxed) == OFF {
        return MemKind::Host;
    }
    classify_driver(p)
}

#[inline(never)]
fn classify_driver(p: *const u8) -> MemKind {
    let Some(d) = driver() else {
        return MemKind::Host;
    };
    let mut mt: c_uint = 0;
    let mut managed: c_uint = 0;
    let mut ctx: CUcontext = std::ptr::null_mut();
    let mut id: u64 = 0;
    // SAFETY: each out pointer has its attribute's type (unsigned int,
    // unsigned int, CUcontext, unsigned long long).
    let r = unsafe {
        d.attributes(
            p as u64,
            [
                (
                    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    (&mut mt as *mut c_uint).cast(),
                ),
                (
                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                    (&mut managed as *mut c_uint).cast(),
                ),
                (
                    CU_POINTER_ATTRIBUTE_CONTEXT,
                    (&mut ctx as *mut CUcontext).cast(),
                ),
                (CU_POINTER_ATTRIBUTE_BUFFER_ID, (&mut id as *mut u64).cast()),
            ],
        )
    };
    if r != CUDA_SUCCESS || mt != CU_MEMORYTYPE_DEVICE || managed != 0 {
        return MemKind::Host;
    }
    if !ctx.is_null() {
        LAST_CTX.store(ctx, Relaxed);
    }
    first_sight(d, p, id);
    MemKind::Device
}

/// The first time an allocation reaches the library (by buffer id, new
/// for every allocation): its synchronous memory operations are made to
/// synchronize (`CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, as other CUDA-aware
/// MPIs do), so that a `cuMemcpy` into it or a `cuMemset` of it has
/// landed when it returns, and the ones already queued on the legacy
/// default stream are waited for. The library's own stream does not
/// synchronize with that stream: without this, a receive into a buffer
/// the program had just set with `cuMemsetD8` could be overwritten by the
/// late memset.
fn first_sight(d: &Driver, p: *const u8, id: u64) {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SEEN: Mutex<Option<HashSet<u64>>> = Mutex::new(None);
    let new = {
        let mut g = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        let set = g.get_or_insert_with(HashSet::new);
        if set.len() >= 1 << 16 {
            // Ids are never reused: forgetting them only repeats the work.
            set.clear();
        }
        set.insert(id)
    };
    if !new || for_copy().is_err() {
        return;
    }
    let one: c_uint = 1;
    // SAFETY: the attribute's value is an unsigned int; `p` is device
    // memory the driver just described.
    unsafe {
        (d.pointer_set_attribute)(
            (&one as *const c_uint).cast(),
            CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
            p as u64,
        )
    };
    let mut ev: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out pointer; a context is current (`for_copy`).
    if unsafe { (d.event_create)(&mut ev, CU_EVENT_DISABLE_TIMING) } != CUDA_SUCCESS {
        return;
    }
    // The null stream is the legacy default stream.
    let wait = Pending { event: ev };
    // SAFETY: the event is live; the null stream always exists.
    if unsafe { (d.event_record)(wait.event, std::ptr::null_mut()) } == CUDA_SUCCESS {
        while matches!(wait.done(), Ok(false)) {
            std::hint::spin_loop();
        }
    }
}

/// A site that moves bytes with the CPU: refuses device memory, naming
/// the site. Every such site below the abi calls it.
#[inline(always)]
pub fn host_only(kind: MemKind, site: &'static str) -> Result<()> {
    match kind {
        MemKind::Host => Ok(()),
        MemKind::Device => Err(refused(site)),
    }
}

#[cold]
fn refused(site: &'static str) -> Error {
    err!(
        MPI_ERR_BUFFER,
        "{site}: a device buffer reached a copy made by the CPU"
    )
}

/// The driver for a copy, with a context current on this thread.
pub(crate) fn for_copy() -> Result<&'static Driver> {
    let d = driver().ok_or_else(|| err!(MPI_ERR_OTHER, "a device copy without a CUDA driver"))?;
    let mut cur: CUcontext = std::ptr::null_mut();
    // SAFETY: `cur` is a valid out pointer.
    unsafe { (d.ctx_get_current)(&mut cur) };
    if cur.is_null() {
        let c = LAST_CTX.load(Relaxed);
        if !c.is_null() {
            // SAFETY: `c` is a context the driver reported for a live buffer.
            unsafe { (d.ctx_set_current)(c) };
        }
    }
    Ok(d)
}

fn failed(d: &Driver, what: &str, r: CUresult) -> Error {
    err!(MPI_ERR_OTHER, "CUDA {what} failed: {}", d.error(r))
}

/// Copies `n` bytes from `src` to `dst`, either of them device or host
/// memory (unified addressing); returns when the copy is done.
///
/// # Safety
/// `src` and `dst` name `n` bytes each, not overlapping.
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let d = for_copy()?;
    // On the library's stream, then waited for: `cuMemcpy` may return
    // before a copy into device memory has landed (from pageable host
    // memory, or between device buffers), which a copy that others read
    // next (an accumulate under its lock, a collective's flag) cannot have.
    let s = stream(d)?;
    // SAFETY: forwarded contract; `s` is the library's stream.
    let mut r = unsafe { (d.memcpy_async)(dst as u64, src as u64, n, s) };
    if r == CUDA_SUCCESS {
        // SAFETY: `s` is the library's stream.
        r = unsafe { (d.stream_synchronize)(s) };
    }
    if r != CUDA_SUCCESS {
        return Err(failed(
            d,
            &format!("copy of {n} bytes from {src:p} to {dst:p}"),
            r,
        ));
    }
    Ok(())
}

/// Page-locks the `len` host bytes at `p` for every context (the driver's
/// DMA then reads and writes them directly: an asynchronous copy to or from
/// them does not wait for the device, as one with pageable memory does).
/// False where the driver refuses; the bytes then stay pageable.
///
/// # Safety
/// `p` names `len` bytes that stay allocated until `unpin(p)`.
pub unsafe fn pin(p: *mut u8, len: usize) -> bool {
    const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 1;
    let Ok(d) = for_copy() else {
        return false;
    };
    // SAFETY: forwarded contract.
    unsafe { (d.mem_host_register)(p.cast(), len, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS }
}

/// Undoes `pin(p, _)`.
///
/// # Safety
/// `p` was pinned by `pin` and no copy in flight uses it.
pub unsafe fn unpin(p: *mut u8) {
    if let Some(d) = driver() {
        // SAFETY: forwarded contract.
        unsafe { (d.mem_host_unregister)(p.cast()) };
    }
}

/// Whether the device memory at `p` (an allocation of this process or an
/// opened IPC mapping) lies on the device of the current context, so a
/// kernel here may read or write it directly.
pub fn on_current_device(p: *const u8) -> bool {
    let Ok(d) = for_copy() else {
        return false;
    };
    let mut dev: c_int = -2;
    // SAFETY: `dev` is a valid out pointer.
    let here = unsafe { (d.ctx_get_device)(&mut dev) } == CUDA_SUCCESS;
    here && ordinal_of(d, p as CUdeviceptr) == Some(dev)
}

/// The ordinal of the device that holds the device memory at `p` (an
/// allocation of this process or an opened IPC mapping), as the driver
/// reports it; None where it reports none.
pub(crate) fn ordinal_of(d: &Driver, p: CUdeviceptr) -> Option<c_int> {
    let mut ordinal: c_int = -1;
    // SAFETY: the out pointer has the attribute's type (int).
    let r = unsafe {
        d.attributes(
            p,
            [(
                CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                (&mut ordinal as *mut c_int).cast(),
            )],
        )
    };
    (r == CUDA_SUCCESS).then_some(ordinal)
}

/// A device allocation of the library's own, on the current context's
/// device, freed when dropped: scratch space for device reductions.
#[derive(Debug)]
pub struct DeviceScratch {
    p: CUdeviceptr,
    len: usize,
}

impl DeviceScratch {
    /// `len` bytes (at least one) of device memory.
    pub fn new(len: usize) -> Result<DeviceScratch> {
        let d = for_copy()?;
        let mut p: CUdeviceptr = 0;
        // SAFETY: `p` is a valid out pointer.
        let r = unsafe { (d.mem_alloc)(&mut p, len.max(1)) };
        if r != CUDA_SUCCESS {
            return Err(failed(
                d,
                &format!("allocation of {len} bytes of scratch"),
                r,
            ));
        }
        Ok(DeviceScratch { p, len })
    }
    pub fn ptr(&self) -> *mut u8 {
        self.p as *mut u8
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A `DeviceScratch` lent from the process's cache (one allocation kept,
/// the largest given back, on the device it was made on): allocating and
/// freeing device memory at every call costs a synchronization of the
/// device each time.
pub struct Scratch {
    s: Option<DeviceScratch>,
    dev: c_int,
}

static SCRATCH: std::sync::Mutex<Option<(c_int, DeviceScratch)>> = std::sync::Mutex::new(None);

/// At least `len` bytes of device scratch on the current device.
pub fn scratch(len: usize) -> Result<Scratch> {
    let d = for_copy()?;
    let mut dev: c_int = -1;
    // SAFETY: `dev` is a valid out pointer.
    unsafe { (d.ctx_get_device)(&mut dev) };
    let cached = SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).take();
    let s = match cached {
        Some((on, s)) if on == dev && s.len() >= len => s,
        // Freed before the new one is made (the cache holds one).
        _ => DeviceScratch::new(len)?,
    };
    Ok(Scratch { s: Some(s), dev })
}

impl Scratch {
    pub fn ptr(&self) -> *mut u8 {
        self.s.as_ref().map_or(std::ptr::null_mut(), |s| s.ptr())
    }
    pub fn len(&self) -> usize {
        self.s.as_ref().map_or(0, |s| s.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(s) = self.s.take() else {
            return;
        };
        let mut g = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        if g.as_ref().is_none_or(|(_, c)| c.len() <= s.len()) {
            *g = Some((self.dev, s));
        }
    }
}

/// A device buffer lent to one message from the process's pool (a
/// non-contiguous device send packed on the device for CUDA IPC), given
/// back when dropped. The pool keeps up to `POOL_KEEP` buffers, each a
/// power of two of at least 64 KiB, so a buffer keeps its IPC buffer id
/// from message to message and the receiver's mapping of it stays cached.
#[derive(Debug)]
pub struct DevBuf {
    s: Option<DeviceScratch>,
    dev: c_int,
}

const POOL_KEEP: usize = 8;
static POOL: std::sync::Mutex<Vec<(c_int, DeviceScratch)>> = std::sync::Mutex::new(Vec::new());

/// At least `len` bytes of device memory on the current device, from the
/// pool where it holds a buffer large enough (the smallest such).
pub fn take_device(len: usize) -> Result<DevBuf> {
    let d = for_copy()?;
    let mut dev: c_int = -1;
    // SAFETY: `dev` is a valid out pointer.
    unsafe { (d.ctx_get_device)(&mut dev) };
    let kept = {
        let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let best = g
            .iter()
            .enumerate()
            .filter(|(_, (on, b))| *on == dev && b.len() >= len)
            .min_by_key(|(_, (_, b))| b.len())
            .map(|(i, _)| i);
        best.map(|i| g.swap_remove(i).1)
    };
    let s = match kept {
        Some(s) => s,
        None => DeviceScratch::new(len.max(64 << 10).next_power_of_two())?,
    };
    Ok(DevBuf { s: Some(s), dev })
}

impl DevBuf {
    pub fn ptr(&self) -> *mut u8 {
        self.s.as_ref().map_or(std::ptr::null_mut(), |s| s.ptr())
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        let Some(s) = self.s.take() else {
            return;
        };
        let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() < POOL_KEEP {
            g.push((self.dev, s));
        } else if let Some(i) = (0..g.len()).min_by_key(|&i| g[i].1.len()) {
            // Full: the larger of this one and the smallest kept stays; the
            // other is freed here.
            if g[i].1.len() < s.len() {
                g[i] = (self.dev, s);
            }
        }
    }
}

impl Drop for DeviceScratch {
    fn drop(&mut self) {
        if let Some(d) = driver() {
            // SAFETY: `p` came from cuMemAlloc and nothing uses it now (every
            // user's copies and kernels were waited for).
            unsafe { (d.mem_free)(self.p) };
        }
    }
}

/// A copy in flight on the library's own stream: done when `done` says so.
#[derive(Debug)]
pub struct Pending {
    event: *mut c_void,
}

// SAFETY: an event handle is the driver's, usable from any thread of the
// process; the library's state (which holds it) is behind one lock.
unsafe impl Send for Pending {}

impl Pending {
    /// Whether the copy has finished; an error for a copy that failed.
    pub fn done(&self) -> Result<bool> {
        let d = for_copy()?;
        // SAFETY: `event` was created and recorded by `copy_async`.
        match unsafe { (d.event_query)(self.event) } {
            CUDA_SUCCESS => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            r => Err(failed(d, "asynchronous copy", r)),
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(Ok(d)) = DRIVER.get() {
            // SAFETY: the event is ours and destroyed once; the driver
            // releases it when the work before it is done.
            unsafe { (d.event_destroy)(self.event) };
        }
    }
}

/// The library's own stream (non-blocking with respect to the legacy
/// default stream), made at the first asynchronous copy.
fn stream(d: &Driver) -> Result<*mut c_void> {
    static S: std::sync::atomic::AtomicPtr<c_void> =
        std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
    // Acquire/Release: the stream handle published by the store below is
    // read here; the handle is the driver's, so nothing else rides on it.
    let s = S.load(std::sync::atomic::Ordering::Acquire);
    if !s.is_null() {
        return Ok(s);
    }
    let mut st: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out pointer; a context is current (`for_copy`).
    let r = unsafe { (d.stream_create)(&mut st, CU_STREAM_NON_BLOCKING) };
    if r != CUDA_SUCCESS {
        return Err(failed(d, "stream creation", r));
    }
    // Release: pairs with the Acquire load above. Callers hold the state's
    // lock, so two threads never both create one.
    S.store(st, std::sync::atomic::Ordering::Release);
    Ok(st)
}

/// Starts copying `n` bytes from `src` to `dst` (either side device or host
/// memory) on the library's own stream; the copy is done when the returned
/// `Pending` says so.
///
/// # Safety
/// `src` and `dst` name `n` bytes each, not overlapping, and stay valid
/// until the copy is done.
pub unsafe fn copy_async(dst: *mut u8, src: *const u8, n: usize) -> Result<Pending> {
    let d = for_copy()?;
    let s = stream(d)?;
    // SAFETY: forwarded contract; `s` is the library's stream.
    let r = unsafe { (d.memcpy_async)(dst as u64, src as u64, n, s) };
    if r != CUDA_SUCCESS {
        return Err(failed(d, "asynchronous copy", r));
    }
    mark()
}

/// Most value writes in one `write_words` (the driver's cost grows by
/// about 0.7 µs per write, measured on an H200).
const MEMOP_MAX_WRITES: usize = 16;

/// Set when the driver refused a batch of writes: copies from then on.
static MEMOP_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes the host bytes `src` (read now) into the device memory at `dst`
/// on the library's stream as the driver's stream memory operations (one
/// `cuStreamBatchMemOp` of 64- or 32-bit value writes) instead of a copy;
/// done when the returned `Pending` is. `None` where that does not apply:
/// longer than `OXMPI_GPU_MEMOP_MAX` (or 16 words), not whole aligned
/// words, a driver without the call or one that refused it (the caller
/// copies instead). Ranks sharing one GPU without MPS pay a switch of the
/// GPU's context (about 140 µs on an H200) each time copies into device
/// memory alternate between their processes; value writes do not
/// (`benches/gpu_pingpong_probe.c`, docs/gpu.md).
///
/// # Safety
/// `dst` names `src.len()` bytes of device memory that stay valid until
/// the writes are done.
pub unsafe fn write_words(dst: *mut u8, src: &[u8]) -> Option<Result<Pending>> {
    // SAFETY: forwarded contract.
    Some(unsafe { write_words_queued(dst, src)? }.and_then(|_| mark()))
}

/// `write_words`, done when a later `mark` (or the stream's
/// synchronization) is.
///
/// # Safety
/// As `write_words`.
pub unsafe fn write_words_queued(dst: *mut u8, src: &[u8]) -> Option<Result<()>> {
    let n = src.len();
    if n == 0 || n > crate::config::gpu_memop_max() || MEMOP_REFUSED.load(Relaxed) {
        return None;
    }
    let at = dst as usize;
    let (w, op) = if at % 8 == 0 && n % 8 == 0 {
        (8, CU_STREAM_MEM_OP_WRITE_VALUE_64)
    } else if at % 4 == 0 && n % 4 == 0 {
        (4, CU_STREAM_MEM_OP_WRITE_VALUE_32)
    } else {
        return None;
    };
    if n / w > MEMOP_MAX_WRITES {
        return None;
    }
    let d = for_copy().ok()?;
    let batch = d.batch_mem_op?;
    let s = match stream(d) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let mut ops = [MemOpWrite::default(); MEMOP_MAX_WRITES];
    for (i, word) in src.chunks_exact(w).enumerate() {
        let mut v = [0u8; 8];
        v[..w].copy_from_slice(word);
        ops[i] = MemOpWrite {
            operation: op,
            address: (at + i * w) as u64,
            value: u64::from_le_bytes(v),
            ..MemOpWrite::default()
        };
    }
    // SAFETY: `ops` holds n / w writes into the `n` device bytes at `dst`
    // (contract), each aligned to its width; flags 0 keeps the driver's
    // memory barrier; `s` is the library's stream.
    let r = unsafe { batch(s, (n / w) as c_uint, ops.as_mut_ptr(), 0) };
    if r != CUDA_SUCCESS {
        MEMOP_REFUSED.store(true, Relaxed);
        if std::env::var_os("OXMPI_DEBUG").is_some() {
            say!(
                "oxmpi: cuStreamBatchMemOp refused ({}): small device writes are copies",
                d.error(r)
            );
        }
        return None;
    }
    Some(Ok(()))
}

/// `copy` of host bytes, final now, into device memory: a short one as
/// value writes (`write_words`).
///
/// # Safety
/// `dst` names `src.len()` bytes of device memory.
pub unsafe fn copy_from_host(dst: *mut u8, src: &[u8]) -> Result<()> {
    // SAFETY: forwarded contract; `src` is host memory.
    match unsafe { write_words_queued(dst, src) } {
        Some(r) => r.and_then(|_| finish_stream()),
        // SAFETY: forwarded contract.
        None => unsafe { copy(dst, src.as_ptr(), src.len()) },
    }
}

/// `copy_async` of host bytes, final now, into device memory: a short one
/// as value writes (`write_words`).
///
/// # Safety
/// `dst` names `src.len()` bytes of device memory, and `src` stays valid,
/// until the returned copy is done.
pub unsafe fn copy_from_host_async(dst: *mut u8, src: &[u8]) -> Result<Pending> {
    // SAFETY: forwarded contract.
    unsafe { write_words(dst, src).unwrap_or_else(|| copy_async(dst, src.as_ptr(), src.len())) }
}

/// Waits for everything queued on the library's stream.
pub fn finish_stream() -> Result<()> {
    let d = for_copy()?;
    let s = stream(d)?;
    // SAFETY: `s` is the library's stream.
    match unsafe { (d.stream_synchronize)(s) } {
        CUDA_SUCCESS => Ok(()),
        r => Err(failed(d, "stream synchronization", r)),
    }
}

/// An event on the library's own stream after every copy queued on it so
/// far: done when they all are (the stream runs its copies in order).
pub fn mark() -> Result<Pending> {
    let d = for_copy()?;
    let s = stream(d)?;
    let mut ev: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out pointer; a context is current.
    let r = unsafe { (d.event_create)(&mut ev, CU_EVENT_DISABLE_TIMING) };
    if r != CUDA_SUCCESS {
        return Err(failed(d, "event creation", r));
    }
    let p = Pending { event: ev };
    // SAFETY: the event and the stream are live.
    let r = unsafe { (d.event_record)(p.event, s) };
    if r != CUDA_SUCCESS {
        return Err(failed(d, "event record", r));
    }
    Ok(p)
}

/// `height` rows of `width` bytes, `spitch` apart at `src` and `dpitch`
/// apart at `dst` (either side device or host memory); `queued`: on the
/// library's stream, done when a later `mark` is (else made in the call).
///
/// # Safety
/// Every row lies in memory of its side; rows do not overlap; for a queued
/// copy both sides stay valid until it is done.
pub unsafe fn copy_2d(
    dst: *mut u8,
    dpitch: usize,
    src: *const u8,
    spitch: usize,
    width: usize,
    height: usize,
    queued: bool,
) -> Result<()> {
    if width == 0 || height == 0 {
        return Ok(());
    }
    let d = for_copy()?;
    if height == 1 {
        if !queued {
            // SAFETY: forwarded contract.
            return unsafe { copy(dst, src, width) };
        }
        let s = stream(d)?;
        // SAFETY: forwarded contract; `s` is the library's stream.
        let r = unsafe { (d.memcpy_async)(dst as u64, src as u64, width, s) };
        if r != CUDA_SUCCESS {
            return Err(failed(
                d,
                &format!("queued copy of {width} bytes from {src:p} to {dst:p}"),
                r,
            ));
        }
        return Ok(());
    }
    let c = Memcpy2D {
        src_x_in_bytes: 0,
        src_y: 0,
        src_memory_type: CU_MEMORYTYPE_UNIFIED,
        src_host: std::ptr::null(),
        src_device: src as u64,
        src_array: std::ptr::null_mut(),
        src_pitch: spitch,
        dst_x_in_bytes: 0,
        dst_y: 0,
        dst_memory_type: CU_MEMORYTYPE_UNIFIED,
        dst_host: std::ptr::null_mut(),
        dst_device: dst as u64,
        dst_array: std::ptr::null_mut(),
        dst_pitch: dpitch,
        width_in_bytes: width,
        height,
    };
    // The copy goes on the library's stream, and one made in the call is
    // waited for there (as in `copy`).
    let s = stream(d)?;
    // SAFETY: `c` describes rows inside the two buffers (contract).
    let mut r = unsafe { (d.memcpy_2d_async)(&c, s) };
    if r == CUDA_SUCCESS && !queued {
        // SAFETY: `s` is the library's stream.
        r = unsafe { (d.stream_synchronize)(s) };
    }
    if r != CUDA_SUCCESS {
        return Err(failed(
            d,
            &format!("strided copy of {height} rows of {width} bytes from {src:p} (pitch {spitch}) to {dst:p} (pitch {dpitch})"),
            r,
        ));
    }
    Ok(())
}

/// Moves pieces between a device buffer and contiguous host bytes: each
/// (device address, offset in `host`, length) piece, `to_device` or from
/// it. Runs of pieces of one length at a constant stride, back to back in
/// `host`, go as one strided copy each (a vector type is one copy, not one
/// per block). `queued`: on the library's stream (`copy_2d`).
///
/// # Safety
/// Each piece lies in device memory of the buffer and in `host` (valid
/// until a queued copy is done).
pub unsafe fn copy_pieces(
    pieces: &[(*mut u8, usize, usize)],
    host: *mut u8,
    to_device: bool,
    queued: bool,
) -> Result<()> {
    for (i, rows, pitch) in strided_runs(pieces) {
        let (a, pos, len) = pieces[i];
        let h = host.wrapping_add(pos);
        // SAFETY: the rows are pieces i..i + rows (contract).
        unsafe {
            if to_device {
                copy_2d(a, pitch, h, len, len, rows, queued)?
            } else {
                copy_2d(h, len, a, pitch, len, rows, queued)?
            }
        }
    }
    Ok(())
}

/// `pieces` cut into runs that one strided copy moves: (first piece, rows,
/// device pitch), each run's pieces of one length, at a constant stride of
/// at least that length, and back to back in the host bytes.
pub fn strided_runs(pieces: &[(*mut u8, usize, usize)]) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        let (a, pos, len) = pieces[i];
        let stride = pieces
            .get(i + 1)
            .map_or(0, |p| (p.0 as isize).wrapping_sub(a as isize));
        let mut j = i + 1;
        while j < pieces.len()
            && stride >= len as isize
            && pieces[j].2 == len
            && pieces[j].1 == pos + (j - i) * len
            && pieces[j].0 as isize == (a as isize).wrapping_add(stride * (j - i) as isize)
        {
            j += 1;
        }
        let pitch = if j - i > 1 { stride as usize } else { len };
        v.push((i, j - i, pitch));
        i = j;
    }
    v
}

/// The query functions' answer: 1 when device buffers work in this process.
pub fn support_flag() -> c_int {
    supported() as c_int
}

/// MPI-4.1's `mpi_memory_alloc_kinds` value for this process.
pub fn alloc_kinds() -> String {
    let mut v = String::from("mpi,system");
    if supported() {
        v.push_str(",cuda:device,cuda:host,cuda:managed");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_runs_group_a_vector_and_split_the_rest() {
        let p = |a: usize, pos: usize, len: usize| (a as *mut u8, pos, len);
        // A vector of 4 blocks of 8 bytes, 32 apart; then a lone piece of
        // another length; then two pieces too close for a stride.
        let pieces = [
            p(1000, 0, 8),
            p(1032, 8, 8),
            p(1064, 16, 8),
            p(1096, 24, 8),
            p(5000, 32, 4),
            p(6000, 36, 16),
            p(6008, 52, 16),
        ];
        assert_eq!(
            strided_runs(&pieces),
            vec![(0, 4, 32), (4, 1, 4), (5, 1, 16), (6, 1, 16)]
        );
        // A descending stride is not one strided copy.
        let down = [p(2000, 0, 8), p(1000, 8, 8)];
        assert_eq!(strided_runs(&down), vec![(0, 1, 8), (1, 1, 8)]);
        assert!(strided_runs(&[]).is_empty());
    }
}
