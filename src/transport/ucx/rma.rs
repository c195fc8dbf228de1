//! One-sided operations over UCX, for windows whose ranks span nodes.
//!
//! A context of its own (RMA and 32- and 64-bit atomics besides wakeup)
//! and one worker in UCX's multi-threaded mode, made at the first such
//! window (single-node jobs never make it). Puts, gets and atomics go
//! straight to the target's registered memory (`ucp_mem_map`, the rkeys
//! from `ucp_rkey_pack`); where the fabric does them in hardware the target
//! takes no part. Where UCX emulates them in software (tcp, and Debian's
//! UCX on most fabrics) the target's worker must be driven: a progress
//! thread per process does it, asleep on the worker's event fd between
//! arrivals, so passive target progresses while the target computes and
//! no CPU is burnt while nothing arrives.
//!
//! Every operation here returns once it is complete at the origin (a get's
//! bytes are in, a put's buffer may be reused, a fetching atomic's old
//! value is in); `flush` makes the puts to a peer complete at the target.

use super::sys;
use super::{ptr_is_err, ptr_status, status_text};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The RMA worker of this process.
pub struct Rma {
    lib: &'static sys::Ucp,
    context: sys::ucp_context_h,
    worker: sys::ucp_worker_h,
    address: Vec<u8>,
    /// Endpoints by world rank (made once, kept for the process's life).
    eps: Mutex<HashMap<usize, usize>>,
    /// Endpoints UCX reported failed (the error callback's argument).
    failed: Box<Mutex<Vec<usize>>>,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Callers driving the worker in a wait now (`Driving`), and when the
    /// last one stopped (ns since `born`): the progress thread stands
    /// aside meanwhile (`stand_aside`).
    driving: AtomicU32,
    drove_at: AtomicU64,
    born: std::time::Instant,
    /// Requests served for peers and replies to ours (the active-message
    /// callbacks' argument: boxed, so it stays put).
    am: Box<Am>,
}

/// The target's side of a request: (header, data) -> reply; set once by
/// the layer above (`set_server`).
pub type Serve = fn(&[u8], &[u8]) -> Vec<u8>;
static SERVE: OnceLock<Serve> = OnceLock::new();

/// Sets what serves the requests of peers (`Rma::request`).
pub fn set_server(f: Serve) {
    let _ = SERVE.set(f);
}

/// The target's side of a plain get: (header, data) -> the address and
/// length in this process of the memory that answers it as it lies, with
/// a status byte of `ok`; None for any other request (`Serve` takes it).
/// The memory stays until the origin has the answer (MPI's rules: the
/// window lives until every origin's epoch on it is over).
pub type ServeMemory = fn(&[u8], &[u8]) -> Option<(usize, usize, u8)>;
static SERVE_MEMORY: OnceLock<ServeMemory> = OnceLock::new();

/// Sets `ServeMemory`.
pub fn set_memory_server(f: ServeMemory) {
    let _ = SERVE_MEMORY.set(f);
}

/// A reply to a peer's request: bytes ending with their status byte, or
/// memory of this process sent as it lies (`ServeMemory`), its status
/// byte in the reply's header.
enum Reply {
    Bytes(Vec<u8>),
    Memory { at: usize, len: usize, status: u8 },
}

/// Active-message ids of the RMA worker: a request, its reply.
const AM_REQ: u32 = 1;
const AM_REP: u32 = 2;

/// Where a reply's bytes go (`Rma::send_into`): (address, length) of each
/// piece in order, and the byte that ends a reply that lands.
struct Landing {
    dsts: Vec<(usize, usize)>,
    ok: u8,
}

/// A reply UCX still sends: its request, header and bytes (none for
/// memory sent as it lies).
type Sending = (usize, Vec<u8>, Vec<u8>);
/// A request UCX still sends: (request, header, data).
type Posted = (usize, Vec<u8>, Vec<u8>);

/// What the active-message callbacks share with the worker's users.
#[derive(Default)]
struct Am {
    /// Replies that arrived, by token.
    replies: Mutex<HashMap<u64, Vec<u8>>>,
    /// Where the replies to some requests land (`send_into`), by token.
    landing: Mutex<HashMap<u64, Landing>>,
    /// Replies to send (the peer's reply endpoint, token, bytes): sent by
    /// `pump` after the worker's progress returns, not from its callback.
    todo: Mutex<Vec<(usize, u64, Reply)>>,
    /// Replies UCX still sends, with their buffers.
    sending: Mutex<Vec<Sending>>,
    /// Requests sent without waiting (`send`) that UCX still sends,
    /// with their header and data.
    posted: Mutex<Vec<Posted>>,
    next: std::sync::atomic::AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn bytes<'a>(p: *const c_void, n: usize) -> &'a [u8] {
    if n == 0 || p.is_null() {
        &[]
    } else {
        // SAFETY: UCX passes buffers of the given lengths, valid during
        // the callback (the only place this is called from).
        unsafe { std::slice::from_raw_parts(p as *const u8, n) }
    }
}

/// A peer's request: served at once (the server only touches window
/// memory under its own lock); the reply is queued for `pump`.
///
/// # Safety
/// UCX calls it from `ucp_worker_progress` with the `arg` registered in
/// `new` (the Rma's boxed `Am`) and buffers of the given lengths.
unsafe extern "C" fn on_request(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: `arg` is the Rma's boxed Am, alive until exit (leaked).
    let am = unsafe { &*(arg as *const Am) };
    let h = bytes(header, header_length);
    // SAFETY: UCX passes a valid parameter block.
    let (attr, ep) = unsafe { ((*param).recv_attr, (*param).reply_ep) };
    if h.len() < 8 || attr & sys::ucp_am_recv_attr_t_UCP_AM_RECV_ATTR_FIELD_REPLY_EP as u64 == 0 {
        return sys::ucs_status_t_UCS_OK; // not ours: nothing to answer
    }
    let token = u64::from_le_bytes(h[..8].try_into().unwrap());
    // Requests are sent eager (UCP_AM_SEND_FLAG_EAGER): the data is here.
    let eager = attr & sys::ucp_am_recv_attr_t_UCP_AM_RECV_ATTR_FLAG_RNDV as u64 == 0;
    let (head, body) = (&h[8..], bytes(data, length));
    let memory = SERVE_MEMORY
        .get()
        .filter(|_| eager)
        .and_then(|f| f(head, body));
    let reply = match (memory, SERVE.get()) {
        (Some((at, len, status)), _) => Reply::Memory { at, len, status },
        (None, Some(f)) if eager => Reply::Bytes(f(head, body)),
        // Its status byte last, 1: failed (`rma::net` reads replies).
        _ => Reply::Bytes(b"no server for one-sided requests in this process\x01".to_vec()),
    };
    lock(&am.todo).push((ep as usize, token, reply));
    sys::ucs_status_t_UCS_OK
}

/// A reply to one of our requests.
///
/// # Safety
/// As `on_request`.
unsafe extern "C" fn on_reply(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    _param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: as in `on_request`.
    let am = unsafe { &*(arg as *const Am) };
    let h = bytes(header, header_length);
    // The token, then the status byte where the bytes are memory sent as
    // it lies (`Reply::Memory`); else the status byte ends the bytes.
    if h.len() == 8 || h.len() == 9 {
        let token = u64::from_le_bytes(h[..8].try_into().unwrap());
        let v = bytes(data, length);
        let (payload, status) = match (h.get(8), v.split_last()) {
            (Some(&s), _) => (v, Some(s)),
            (None, Some((&s, rest))) => (rest, Some(s)),
            (None, None) => (v, None),
        };
        let reply = match (lock(&am.landing).remove(&token), status) {
            (Some(l), Some(s)) if s == l.ok && land(&l, payload) => vec![l.ok],
            _ => {
                let mut r = payload.to_vec();
                r.extend(status);
                r
            }
        };
        lock(&am.replies).insert(token, reply);
    }
    sys::ucs_status_t_UCS_OK
}

/// Copies a reply's bytes `v` (its status byte apart, `Landing::ok`) into
/// its landing places where it is exactly their bytes; false (nothing
/// copied) otherwise.
fn land(l: &Landing, v: &[u8]) -> bool {
    let want: usize = l.dsts.iter().map(|d| d.1).sum();
    if v.len() != want {
        return false;
    }
    let mut at = 0;
    for &(dst, n) in &l.dsts {
        // SAFETY: each landing place is n writable bytes that the sender
        // of the request keeps for the reply (`send_into`'s contract);
        // [at, at + n) lies in `v`.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().add(at), dst as *mut u8, n) };
        at += n;
    }
    true
}

// SAFETY: the worker was created in UCS_THREAD_MODE_MULTI (checked in
// `new`): UCX serializes every call on it and on its endpoints; the rest
// is behind mutexes or atomics.
unsafe impl Send for Rma {}
// SAFETY: as above.
unsafe impl Sync for Rma {}

/// A peer's endpoint on the RMA worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ep(usize);

impl Ep {
    fn h(self) -> sys::ucp_ep_h {
        self.0 as sys::ucp_ep_h
    }
}

/// Registered local memory: its handle and packed remote key.
pub struct Reg {
    memh: usize,
    pub packed: Vec<u8>,
}

/// A peer's remote key, unpacked on our endpoint to it.
pub struct Rkey(usize);

impl Rkey {
    fn h(&self) -> sys::ucp_rkey_h {
        self.0 as sys::ucp_rkey_h
    }
}

/// The atomic operations UCX has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amo {
    Add,
    Swap,
    And,
    Or,
    Xor,
}

/// The endpoint error callback: records the failed endpoint.
///
/// # Safety
/// UCX calls it with the `arg` registered in `ep`: the Rma's boxed list.
unsafe extern "C" fn on_error(arg: *mut c_void, ep: sys::ucp_ep_h, _status: sys::ucs_status_t) {
    // SAFETY: `arg` is the boxed list of the process's Rma, which lives
    // until exit (it is leaked).
    let list = unsafe { &*(arg as *const Mutex<Vec<usize>>) };
    list.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ep as usize);
}

/// `ucp_dt_make_contig(n)`.
fn contig(n: usize) -> sys::ucp_datatype_t {
    (n as sys::ucp_datatype_t) << 3
}

impl Rma {
    /// The process's RMA worker, made (with its progress thread) on first use.
    pub fn worker() -> Result<&'static Rma, String> {
        static R: OnceLock<Result<&'static Rma, String>> = OnceLock::new();
        R.get_or_init(|| {
            let r: &'static Rma = Box::leak(Box::new(Rma::new()?));
            let t = std::thread::Builder::new()
                .name("oxmpi-rma".into())
                .spawn(move || r.serve())
                .map_err(|e| format!("the RMA progress thread could not start: {e}"))?;
            *r.thread.lock().unwrap() = Some(t);
            Ok(r)
        })
        .clone()
    }

    /// The worker if it was made (MPI_Finalize stops its thread).
    pub fn shutdown() {
        // Only a worker that exists is stopped; none is made here.
        if let Some(Ok(r)) = RMA_MADE.get().map(|_| Rma::worker()) {
            r.stop.store(true, Ordering::Relaxed);
            // SAFETY: multi-threaded worker; wakes the thread from its wait.
            unsafe { r.lib.ucp_worker_signal(r.worker) };
            if let Some(t) = r.thread.lock().unwrap().take() {
                let _ = t.join();
            }
        }
    }

    fn new() -> Result<Rma, String> {
        let lib = super::lib()?;
        let fail = |what: &str, s: sys::ucs_status_t| format!("{what}: {}", status_text(lib, s));
        // SAFETY: plain C calls with valid out-pointers; objects made here
        // live until the process ends.
        unsafe {
            let (context, worker, address) = super::open_worker(
                lib,
                sys::ucp_feature_UCP_FEATURE_RMA
                    | sys::ucp_feature_UCP_FEATURE_AM
                    | sys::ucp_feature_UCP_FEATURE_AMO32
                    | sys::ucp_feature_UCP_FEATURE_AMO64
                    | sys::ucp_feature_UCP_FEATURE_WAKEUP,
                sys::ucs_thread_mode_t_UCS_THREAD_MODE_MULTI,
                " (RMA)",
            )?;
            let mut wa: sys::ucp_worker_attr_t = std::mem::zeroed();
            wa.field_mask = sys::ucp_worker_attr_field_UCP_WORKER_ATTR_FIELD_THREAD_MODE as u64;
            let s = lib.ucp_worker_query(worker, &mut wa);
            if s != sys::ucs_status_t_UCS_OK
                || wa.thread_mode != sys::ucs_thread_mode_t_UCS_THREAD_MODE_MULTI
            {
                lib.ucp_worker_destroy(worker);
                lib.ucp_cleanup(context);
                return Err(
                    "this UCX has no multi-threaded workers (built without --enable-mt): one-sided operations across nodes need one"
                        .into(),
                );
            }
            let am: Box<Am> = Box::default();
            let handlers: [(u32, sys::ucp_am_recv_callback_t); 2] =
                [(AM_REQ, Some(on_request)), (AM_REP, Some(on_reply))];
            for (id, cb) in handlers {
                let mut hp: sys::ucp_am_handler_param_t = std::mem::zeroed();
                hp.field_mask = (sys::ucp_am_handler_param_field_UCP_AM_HANDLER_PARAM_FIELD_ID
                    | sys::ucp_am_handler_param_field_UCP_AM_HANDLER_PARAM_FIELD_CB
                    | sys::ucp_am_handler_param_field_UCP_AM_HANDLER_PARAM_FIELD_ARG)
                    as u64;
                hp.id = id;
                hp.cb = cb;
                hp.arg = &*am as *const Am as *mut c_void;
                let s = lib.ucp_worker_set_am_recv_handler(worker, &hp);
                if s != sys::ucs_status_t_UCS_OK {
                    lib.ucp_worker_destroy(worker);
                    lib.ucp_cleanup(context);
                    return Err(fail("ucp_worker_set_am_recv_handler (RMA)", s));
                }
            }
            let _ = RMA_MADE.set(());
            Ok(Rma {
                lib,
                context,
                worker,
                address,
                eps: Mutex::new(HashMap::new()),
                failed: Box::default(),
                stop: AtomicBool::new(false),
                thread: Mutex::new(None),
                driving: AtomicU32::new(0),
                drove_at: AtomicU64::new(0),
                born: std::time::Instant::now(),
                am,
            })
        }
    }

    /// The progress thread: drives the worker while it has work, else
    /// sleeps on its event fd (UCX's wakeup), until `shutdown`.
    fn serve(&self) {
        let mut efd = -1;
        // SAFETY: multi-threaded worker; valid out-pointer.
        if unsafe { self.lib.ucp_worker_get_efd(self.worker, &mut efd) } != sys::ucs_status_t_UCS_OK
        {
            efd = -1;
        }
        // Relaxed: `stop` only ends the loop; `ucp_worker_signal` wakes it.
        while !self.stop.load(Ordering::Relaxed) {
            if self.stand_aside() {
                continue;
            }
            // SAFETY: as above.
            while unsafe { self.lib.ucp_worker_progress(self.worker) } != 0 {
                self.pump();
            }
            if self.pump() {
                continue;
            }
            // Right after work, the next request of a busy origin usually
            // follows within a round trip: poll for a short while before
            // sleeping (sleep and wake-up cost about as much as the round
            // trip), so only a burst of traffic keeps the CPU busy.
            let t0 = std::time::Instant::now();
            let mut more = false;
            while t0.elapsed() < SPIN_AFTER_WORK {
                // Relaxed: a hint (see `stand_aside`).
                if self.driving.load(Ordering::Relaxed) != 0 {
                    more = true;
                    break;
                }
                // SAFETY: as above.
                if unsafe { self.lib.ucp_worker_progress(self.worker) } != 0 || self.pump() {
                    more = true;
                    break;
                }
                std::hint::spin_loop();
            }
            if more {
                continue;
            }
            if efd < 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            // SAFETY: as above.
            if unsafe { self.lib.ucp_worker_arm(self.worker) } != sys::ucs_status_t_UCS_OK {
                continue; // events pending: progress again
            }
            let mut p = libc::pollfd {
                fd: efd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd. The timeout is a backstop only.
            unsafe { libc::poll(&mut p, 1, 1000) };
        }
    }

    /// While a caller drives the worker (it waits for a reply or a
    /// request: `Driving`), and for `LEASE` after the last one stopped,
    /// the progress thread sleeps in steps of `LEASE` instead of driving
    /// the worker too: it would wake at every arrival and contend for the
    /// worker's lock, and on the caller's own core (a rank bound to one)
    /// take that core from it while it polls after its work (an 8-byte
    /// fetch-and-op across two pretend hosts, each rank bound to a CPU of
    /// its own: 33 us against 17 unbound; docs/performance.md). The caller
    /// serves the peers' requests meanwhile (`pump` in its waits), and a
    /// rank that stops calling is served again within two `LEASE`s.
    /// True when it slept.
    fn stand_aside(&self) -> bool {
        // Relaxed, both: hints of when to drive; a stale value only moves
        // the thread's next look by one step. The worker's own lock
        // orders the progress itself.
        let busy = self.driving.load(Ordering::Relaxed) != 0 || {
            let now = self.born.elapsed().as_nanos() as u64;
            now.saturating_sub(self.drove_at.load(Ordering::Relaxed)) < LEASE.as_nanos() as u64
        };
        if busy {
            std::thread::sleep(LEASE);
        }
        busy
    }

    /// Notes a caller driving the worker until the guard is dropped.
    fn driving(&self) -> Driving<'_> {
        // Relaxed: a hint (see `stand_aside`).
        self.driving.fetch_add(1, Ordering::Relaxed);
        Driving(self)
    }

    /// This worker's address, for the window's exchange.
    pub fn address(&self) -> &[u8] {
        &self.address
    }

    /// The endpoint to world rank `w` at worker `address` (made once).
    pub fn ep(&self, w: usize, address: &[u8]) -> Result<Ep, String> {
        let mut eps = self.eps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&e) = eps.get(&w) {
            return Ok(Ep(e));
        }
        // SAFETY: `address` is a worker address (copied during the call);
        // the failure list lives until exit.
        unsafe {
            let mut p: sys::ucp_ep_params_t = std::mem::zeroed();
            p.field_mask = (sys::ucp_ep_params_field_UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | sys::ucp_ep_params_field_UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                | sys::ucp_ep_params_field_UCP_EP_PARAM_FIELD_ERR_HANDLER)
                as u64;
            p.address = address.as_ptr() as *const sys::ucp_address_t;
            p.err_mode = sys::ucp_err_handling_mode_t_UCP_ERR_HANDLING_MODE_PEER;
            p.err_handler.cb = Some(on_error);
            p.err_handler.arg = &*self.failed as *const Mutex<Vec<usize>> as *mut c_void;
            let mut ep: sys::ucp_ep_h = std::ptr::null_mut();
            let s = self.lib.ucp_ep_create(self.worker, &p, &mut ep);
            if s != sys::ucs_status_t_UCS_OK {
                return Err(format!(
                    "ucp_ep_create to world rank {w}: {}",
                    status_text(self.lib, s)
                ));
            }
            eps.insert(w, ep as usize);
            Ok(Ep(ep as usize))
        }
    }

    /// Registers `len` bytes at `addr` for remote access.
    pub fn map(&self, addr: usize, len: usize) -> Result<Reg, String> {
        // SAFETY: the caller keeps the memory for the registration's life;
        // valid out-pointers; the packed key is copied, then released.
        unsafe {
            let mut p: sys::ucp_mem_map_params_t = std::mem::zeroed();
            p.field_mask = (sys::ucp_mem_map_params_field_UCP_MEM_MAP_PARAM_FIELD_ADDRESS
                | sys::ucp_mem_map_params_field_UCP_MEM_MAP_PARAM_FIELD_LENGTH)
                as u64;
            p.address = addr as *mut c_void;
            p.length = len.max(1);
            let mut memh: sys::ucp_mem_h = std::ptr::null_mut();
            let s = self.lib.ucp_mem_map(self.context, &p, &mut memh);
            if s != sys::ucs_status_t_UCS_OK {
                return Err(format!(
                    "ucp_mem_map of {len} bytes at {addr:#x}: {}",
                    status_text(self.lib, s)
                ));
            }
            let mut kb: *mut c_void = std::ptr::null_mut();
            let mut kl = 0usize;
            let s = self.lib.ucp_rkey_pack(self.context, memh, &mut kb, &mut kl);
            if s != sys::ucs_status_t_UCS_OK {
                self.lib.ucp_mem_unmap(self.context, memh);
                return Err(format!("ucp_rkey_pack: {}", status_text(self.lib, s)));
            }
            let packed = std::slice::from_raw_parts(kb as *const u8, kl).to_vec();
            self.lib.ucp_rkey_buffer_release(kb);
            Ok(Reg {
                memh: memh as usize,
                packed,
            })
        }
    }

    /// Ends a registration (no peer uses its key any more).
    pub fn unmap(&self, r: Reg) {
        // SAFETY: `memh` came from `map` and is unmapped once.
        unsafe {
            self.lib
                .ucp_mem_unmap(self.context, r.memh as sys::ucp_mem_h)
        };
    }

    /// A peer's packed key, for use on `ep`.
    pub fn unpack(&self, ep: Ep, packed: &[u8]) -> Result<Rkey, String> {
        let mut k: sys::ucp_rkey_h = std::ptr::null_mut();
        // SAFETY: `packed` is a key packed by `map` on the peer; valid out-pointer.
        let s = unsafe {
            self.lib
                .ucp_ep_rkey_unpack(ep.h(), packed.as_ptr() as *const c_void, &mut k)
        };
        if s != sys::ucs_status_t_UCS_OK {
            return Err(format!("ucp_ep_rkey_unpack: {}", status_text(self.lib, s)));
        }
        Ok(Rkey(k as usize))
    }

    pub fn drop_key(&self, k: Rkey) {
        // SAFETY: `k` came from `unpack` and is destroyed once.
        unsafe { self.lib.ucp_rkey_destroy(k.h()) };
    }

    /// Waits for every request of `reqs` (driving the worker), frees them;
    /// the first failure, if any, is the result.
    fn wait_all(&self, reqs: &mut Vec<sys::ucs_status_ptr_t>, what: &str) -> Result<(), String> {
        let mut err = None;
        let _driving = (!reqs.is_empty()).then(|| self.driving());
        let mut spins = 0u32;
        while !reqs.is_empty() {
            let lib = self.lib;
            reqs.retain(|&r| {
                // SAFETY: a live request of ours.
                let s = unsafe { lib.ucp_request_check_status(r) };
                if s == sys::ucs_status_t_UCS_INPROGRESS {
                    return true;
                }
                if s != sys::ucs_status_t_UCS_OK && err.is_none() {
                    err = Some(format!("{what}: {}", status_text(lib, s)));
                }
                // SAFETY: completed: ours to free.
                unsafe { lib.ucp_request_free(r) };
                false
            });
            if reqs.is_empty() {
                break;
            }
            // SAFETY: multi-threaded worker.
            let n = unsafe { self.lib.ucp_worker_progress(self.worker) };
            if n == 0 && !self.pump() {
                spins += 1;
                if spins > 256 {
                    crate::sys::yield_now();
                }
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// What an operation returned: done, an error, or a request to wait for.
    fn keep(
        &self,
        r: sys::ucs_status_ptr_t,
        reqs: &mut Vec<sys::ucs_status_ptr_t>,
        what: &str,
    ) -> Result<(), String> {
        if r.is_null() {
            return Ok(());
        }
        if ptr_is_err(r) {
            return Err(format!("{what}: {}", status_text(self.lib, ptr_status(r))));
        }
        reqs.push(r);
        Ok(())
    }

    /// Puts each (local address, length, remote address) of `segs`; returns
    /// when the local buffers may be reused.
    ///
    /// # Safety
    /// The local ranges are readable; the remote ones lie in the memory
    /// `key` registers.
    pub unsafe fn put(
        &self,
        ep: Ep,
        key: &Rkey,
        segs: &[(usize, usize, u64)],
    ) -> Result<(), String> {
        // SAFETY: forwarded contract.
        unsafe { self.transfer(ep, key, segs, false) }
    }

    /// Gets each (local address, length, remote address) of `segs`; returns
    /// when the bytes are in.
    ///
    /// # Safety
    /// The local ranges are writable; the remote ones lie in the memory
    /// `key` registers.
    pub unsafe fn get(
        &self,
        ep: Ep,
        key: &Rkey,
        segs: &[(usize, usize, u64)],
    ) -> Result<(), String> {
        // SAFETY: forwarded contract.
        unsafe { self.transfer(ep, key, segs, true) }
    }

    /// Puts (or with `get`, gets) every segment, all issued before any is
    /// waited for; those issued are waited for also when a later one fails.
    ///
    /// # Safety
    /// As `put` or `get`.
    unsafe fn transfer(
        &self,
        ep: Ep,
        key: &Rkey,
        segs: &[(usize, usize, u64)],
        get: bool,
    ) -> Result<(), String> {
        let mut reqs = Vec::new();
        let mut res = Ok(());
        for &(a, n, ra) in segs {
            // SAFETY: per the contract; the parameter block is read during the call.
            let r = unsafe {
                let p: sys::ucp_request_param_t = std::mem::zeroed();
                if get {
                    self.lib
                        .ucp_get_nbx(ep.h(), a as *mut c_void, n, ra, key.h(), &p)
                } else {
                    self.lib
                        .ucp_put_nbx(ep.h(), a as *const c_void, n, ra, key.h(), &p)
                }
            };
            let what = if get { "ucp_get_nbx" } else { "ucp_put_nbx" };
            if let Err(e) = self.keep(r, &mut reqs, what) {
                res = Err(e);
                break;
            }
        }
        let w = self.wait_all(&mut reqs, if get { "a get" } else { "a put" });
        res.and(w)
    }

    /// Fetching atomics of `size` bytes (4 or 8): each (operand, remote
    /// address) of `ops` becomes the old value there.
    ///
    /// # Safety
    /// The remote addresses lie in the memory `key` registers, aligned.
    pub unsafe fn atomics(
        &self,
        ep: Ep,
        key: &Rkey,
        op: Amo,
        size: usize,
        ops: &mut [(u64, u64)],
    ) -> Result<(), String> {
        let code = match op {
            Amo::Add => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_ADD,
            Amo::Swap => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_SWAP,
            Amo::And => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_AND,
            Amo::Or => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_OR,
            Amo::Xor => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_XOR,
        };
        // Operands and replies stay in place until every request is done.
        let operands: Vec<u64> = ops.iter().map(|o| o.0).collect();
        let mut reqs = Vec::new();
        let mut res = Ok(());
        for (i, o) in ops.iter_mut().enumerate() {
            let opnd = &operands[i] as *const u64 as *const c_void;
            o.0 = 0;
            // SAFETY: per the contract; `o.0` (the reply, its low `size`
            // bytes on this little-endian machine) and the operand live
            // until `wait_all` below returns.
            let r = unsafe {
                let mut p: sys::ucp_request_param_t = std::mem::zeroed();
                p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_DATATYPE
                    | sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_REPLY_BUFFER;
                p.datatype = contig(size);
                p.reply_buffer = &mut o.0 as *mut u64 as *mut c_void;
                self.lib
                    .ucp_atomic_op_nbx(ep.h(), code, opnd, 1, o.1, key.h(), &p)
            };
            if let Err(e) = self.keep(r, &mut reqs, "ucp_atomic_op_nbx") {
                res = Err(e);
                break;
            }
        }
        let w = self.wait_all(&mut reqs, "an atomic operation");
        res.and(w)
    }

    /// A non-fetching atomic of 8 bytes at `raddr`: returns once UCX has
    /// taken the operand (it reaches the target in its time; a flush of
    /// `ep` waits for it).
    /// Not `Amo::Swap`: UCX's emulation posts add, and, or and xor only.
    ///
    /// # Safety
    /// As `atomics`.
    pub unsafe fn post(
        &self,
        ep: Ep,
        key: &Rkey,
        op: Amo,
        v: u64,
        raddr: u64,
    ) -> Result<(), String> {
        let code = match op {
            Amo::Add => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_ADD,
            Amo::Swap => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_SWAP,
            Amo::And => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_AND,
            Amo::Or => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_OR,
            Amo::Xor => sys::ucp_atomic_op_t_UCP_ATOMIC_OP_XOR,
        };
        let mut reqs = Vec::new();
        // SAFETY: per the contract; `v` lives until the request's local
        // completion, waited for below.
        let r = unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_DATATYPE;
            p.datatype = contig(8);
            self.lib.ucp_atomic_op_nbx(
                ep.h(),
                code,
                &v as *const u64 as *const c_void,
                1,
                raddr,
                key.h(),
                &p,
            )
        };
        self.keep(r, &mut reqs, "ucp_atomic_op_nbx")?;
        self.wait_all(&mut reqs, "an atomic operation")
    }

    /// Compare-and-swap of `size` bytes (4 or 8) at `raddr`: the old value.
    ///
    /// # Safety
    /// As `atomics`.
    pub unsafe fn cswap(
        &self,
        ep: Ep,
        key: &Rkey,
        size: usize,
        cmp: u64,
        new: u64,
        raddr: u64,
    ) -> Result<u64, String> {
        let mut reply = new;
        let mut reqs = Vec::new();
        // SAFETY: per the contract; `cmp` and `reply` live until the wait.
        let r = unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_DATATYPE
                | sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            p.datatype = contig(size);
            p.reply_buffer = &mut reply as *mut u64 as *mut c_void;
            self.lib.ucp_atomic_op_nbx(
                ep.h(),
                sys::ucp_atomic_op_t_UCP_ATOMIC_OP_CSWAP,
                &cmp as *const u64 as *const c_void,
                1,
                raddr,
                key.h(),
                &p,
            )
        };
        self.keep(r, &mut reqs, "ucp_atomic_op_nbx(CSWAP)")?;
        self.wait_all(&mut reqs, "a compare-and-swap")?;
        Ok(if size == 4 {
            reply & 0xffff_ffff
        } else {
            reply
        })
    }

    /// Compare-and-swaps of `size` bytes (4 or 8), all issued before any
    /// is waited for: each (compare, new, remote address) of `ops` has the
    /// old value in place of `new` on return.
    ///
    /// # Safety
    /// As `atomics`.
    pub unsafe fn cswaps(
        &self,
        ep: Ep,
        key: &Rkey,
        size: usize,
        ops: &mut [(u64, u64, u64)],
    ) -> Result<(), String> {
        let mut reqs = Vec::new();
        let mut res = Ok(());
        for o in ops.iter_mut() {
            // SAFETY: per the contract; the compare value and the reply
            // (in place in `ops`) live until `wait_all` below returns.
            let r = unsafe {
                let mut p: sys::ucp_request_param_t = std::mem::zeroed();
                p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_DATATYPE
                    | sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_REPLY_BUFFER;
                p.datatype = contig(size);
                p.reply_buffer = &mut o.1 as *mut u64 as *mut c_void;
                self.lib.ucp_atomic_op_nbx(
                    ep.h(),
                    sys::ucp_atomic_op_t_UCP_ATOMIC_OP_CSWAP,
                    &o.0 as *const u64 as *const c_void,
                    1,
                    o.2,
                    key.h(),
                    &p,
                )
            };
            if let Err(e) = self.keep(r, &mut reqs, "ucp_atomic_op_nbx(CSWAP)") {
                res = Err(e);
                break;
            }
        }
        let w = self.wait_all(&mut reqs, "a compare-and-swap");
        if size == 4 {
            ops.iter_mut().for_each(|o| o.1 &= 0xffff_ffff);
        }
        res.and(w)
    }

    /// Sends the replies the callbacks queued and retires those UCX has
    /// sent; true if it sent any.
    fn pump(&self) -> bool {
        let todo = std::mem::take(&mut *lock(&self.am.todo));
        let sent = !todo.is_empty();
        for (ep, token, reply) in todo {
            let mut head = token.to_le_bytes().to_vec();
            let (at, len, reply) = match reply {
                Reply::Bytes(v) => (v.as_ptr() as usize, v.len(), v),
                Reply::Memory { at, len, status } => {
                    head.push(status);
                    (at, len, Vec::new())
                }
            };
            // SAFETY: `ep` is the reply endpoint UCX gave with the request;
            // the header and reply bytes live in `sending` until completion
            // (their heap bytes stay put), memory sent as it lies stays
            // until the origin has it (`ServeMemory`).
            let r = unsafe {
                let mut p: sys::ucp_request_param_t = std::mem::zeroed();
                p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_FLAGS;
                p.flags = sys::ucp_send_am_flags_UCP_AM_SEND_FLAG_EAGER;
                self.lib.ucp_am_send_nbx(
                    ep as sys::ucp_ep_h,
                    AM_REP,
                    head.as_ptr() as *const c_void,
                    head.len(),
                    at as *const c_void,
                    len,
                    &p,
                )
            };
            if !r.is_null() && !ptr_is_err(r) {
                lock(&self.am.sending).push((r as usize, head, reply));
            } else {
                // Sent already, or an error: the origin is gone, and its
                // failure ends the job.
                give_reply_buffer(reply);
            }
        }
        let lib = self.lib;
        let done = |r: usize| {
            let r = r as sys::ucs_status_ptr_t;
            // SAFETY: a live request of ours.
            if unsafe { lib.ucp_request_check_status(r) } == sys::ucs_status_t_UCS_INPROGRESS {
                return false;
            }
            // SAFETY: completed: ours to free. A failed one's endpoint
            // failed: its waiter learns it from `failed`.
            unsafe { lib.ucp_request_free(r) };
            true
        };
        let mut spare = Vec::new();
        lock(&self.am.sending).retain_mut(|(r, _, reply)| {
            let d = done(*r);
            if d {
                spare.push(std::mem::take(reply));
            }
            !d
        });
        for v in spare {
            give_reply_buffer(v);
        }
        lock(&self.am.posted).retain(|&(r, _, _)| !done(r));
        sent
    }

    /// Sends `header` and `data` to the peer at `ep` as a request and
    /// waits for its reply (the server's bytes).
    pub fn request(&self, ep: Ep, header: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        let token = self.am.next.fetch_add(1, Ordering::Relaxed);
        let mut head = token.to_le_bytes().to_vec();
        head.extend_from_slice(header);
        let mut reqs = Vec::new();
        // SAFETY: `head` and `data` live until the send completes (waited
        // for below, before the reply is).
        let r = unsafe { self.send_request(ep, &head, data) };
        self.keep(r, &mut reqs, "ucp_am_send_nbx")?;
        self.wait_all(&mut reqs, "a one-sided request")?;
        self.reply(ep, token)
    }

    /// Sends `header` and `data` to the peer at `ep` as a request and
    /// returns at once with its token, for `reply`. The buffers stay with
    /// the worker until UCX has sent them (`pump` retires them).
    pub fn send(&self, ep: Ep, header: &[u8], data: Vec<u8>) -> Result<u64, String> {
        let token = self.am.next.fetch_add(1, Ordering::Relaxed);
        self.post_request(ep, token, header, data)
    }

    /// `send`'s sending, under `token`.
    fn post_request(
        &self,
        ep: Ep,
        token: u64,
        header: &[u8],
        data: Vec<u8>,
    ) -> Result<u64, String> {
        let mut head = token.to_le_bytes().to_vec();
        head.extend_from_slice(header);
        // SAFETY: `head` and `data` move into `posted` below (their heap
        // bytes stay put) until the send completes.
        let r = unsafe { self.send_request(ep, &head, &data) };
        if ptr_is_err(r) {
            return Err(format!(
                "ucp_am_send_nbx: {}",
                status_text(self.lib, ptr_status(r))
            ));
        }
        if !r.is_null() {
            lock(&self.am.posted).push((r as usize, head, data));
        }
        Ok(token)
    }

    /// `send`, with the reply's bytes copied into `dsts` ((address, length)
    /// of each piece, in order) as it arrives, where it is those bytes and
    /// then `ok`: the reply is then `[ok]` alone; otherwise (an error's
    /// text) it is kept whole, nothing copied.
    ///
    /// # Safety
    /// Each of `dsts` is writable for its length until `reply(token)`
    /// returns.
    pub unsafe fn send_into(
        &self,
        ep: Ep,
        header: &[u8],
        data: Vec<u8>,
        dsts: Vec<(usize, usize)>,
        ok: u8,
    ) -> Result<u64, String> {
        let token = self.am.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.am.landing).insert(token, Landing { dsts, ok });
        self.post_request(ep, token, header, data).inspect_err(|_| {
            lock(&self.am.landing).remove(&token);
        })
    }

    /// Waits for the reply to request `token` sent to `ep`.
    pub fn reply(&self, ep: Ep, token: u64) -> Result<Vec<u8>, String> {
        let mut spins = 0u32;
        let _driving = self.driving();
        loop {
            if let Some(v) = lock(&self.am.replies).remove(&token) {
                return Ok(v);
            }
            if self.failed(ep) {
                // Its reply can no longer arrive: nothing lands later.
                lock(&self.am.landing).remove(&token);
                return Err("the target's endpoint failed (its process or host is gone)".into());
            }
            // SAFETY: multi-threaded worker.
            let n = unsafe { self.lib.ucp_worker_progress(self.worker) };
            if n == 0 && !self.pump() {
                spins += 1;
                if spins > 256 {
                    crate::sys::yield_now();
                }
            }
        }
    }

    /// One request's `ucp_am_send_nbx` (eager, with a reply endpoint).
    ///
    /// # Safety
    /// `head` and `data` stay valid until the returned request completes.
    unsafe fn send_request(&self, ep: Ep, head: &[u8], data: &[u8]) -> sys::ucs_status_ptr_t {
        // SAFETY: forwarded contract; the parameter block is read during the call.
        unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = sys::ucp_send_am_flags_UCP_AM_SEND_FLAG_REPLY
                | sys::ucp_send_am_flags_UCP_AM_SEND_FLAG_EAGER;
            self.lib.ucp_am_send_nbx(
                ep.h(),
                AM_REQ,
                head.as_ptr() as *const c_void,
                head.len(),
                data.as_ptr() as *const c_void,
                data.len(),
                &p,
            )
        }
    }

    /// Every operation issued to `ep` is complete at the target.
    pub fn flush(&self, ep: Ep) -> Result<(), String> {
        let mut reqs = Vec::new();
        // SAFETY: a live endpoint; the parameter block is read during the call.
        let r = unsafe {
            let p: sys::ucp_request_param_t = std::mem::zeroed();
            self.lib.ucp_ep_flush_nbx(ep.h(), &p)
        };
        self.keep(r, &mut reqs, "ucp_ep_flush_nbx")?;
        self.wait_all(&mut reqs, "a flush")
    }

    /// A peer's endpoint failed (it died, or its host did).
    pub fn failed(&self, ep: Ep) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&ep.0)
    }
}

/// Reply buffers whose sends are over, kept for the next replies
/// (`reply_buffer`): a 64 KiB get's answer otherwise took a fresh
/// allocation each time, which the heap gave back to the kernel and took
/// again, a page fault per 4 KiB.
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// Kept buffers: at most this many, of at least `SPARE_MIN` bytes.
const SPARE_MAX: usize = 16;
const SPARE_MIN: usize = 4096;

/// An empty buffer with room for `cap` bytes, for a reply to a peer's
/// request (a kept one where one is large enough).
pub fn reply_buffer(cap: usize) -> Vec<u8> {
    if cap >= SPARE_MIN {
        let mut s = lock(&SPARE);
        if let Some(i) = s.iter().position(|v| v.capacity() >= cap) {
            let mut v = s.swap_remove(i);
            v.clear();
            return v;
        }
    }
    Vec::with_capacity(cap)
}

/// Keeps a sent reply's buffer for `reply_buffer`.
fn give_reply_buffer(v: Vec<u8>) {
    if v.capacity() >= SPARE_MIN {
        let mut s = lock(&SPARE);
        if s.len() < SPARE_MAX {
            s.push(v);
        }
    }
}

/// A caller driving the worker (`Rma::driving`).
struct Driving<'a>(&'a Rma);

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        let r = self.0;
        // Relaxed, both: hints (see `stand_aside`).
        r.drove_at
            .store(r.born.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r.driving.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How long the progress thread stands aside after a caller last drove
/// the worker, and the step of its sleep meanwhile (`stand_aside`).
const LEASE: std::time::Duration = std::time::Duration::from_micros(200);

/// How long the progress thread polls after its last piece of work
/// before it sleeps on the event fd.
const SPIN_AFTER_WORK: std::time::Duration = std::time::Duration::from_micros(50);

/// Set once the RMA worker exists (so `shutdown` makes none).
static RMA_MADE: OnceLock<()> = OnceLock::new();
