//! The UCX link's foundation (issue 18, first step): the site's
//! `libucp.so.0` loaded at run time, a context and a worker restricted to
//! network transports (shared memory stays ours) unless the user set
//! `UCX_TLS`, the worker's address for the business card, endpoints with
//! peer error handling, and active messages carrying an envelope and a
//! payload. `link` is the `Link::Ucx` arm `Net` routes to: ranks on other
//! hosts, or every other rank with OXMPI_TEST_UCX=1 (the conformance and
//! point-to-point programs run that way in the suite, over tcp on lo).
//!
//! Loading: `libucp.so.0` (the soname, never the development link;
//! `OXMPI_UCX_LIB` names another) through
//! the generated bindings in `sys` (tools/gen_ucx_sys.sh); every function
//! the link calls is checked present once, since a generated call of a
//! missing one would panic. A machine without UCX gets an error naming what
//! to install, never a panic, and single-node jobs never load it.

pub mod link;
pub mod rma;
/// cbindgen:ignore
pub mod sys;

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

/// What to install where libucp is missing.
const INSTALL_HINT: &str =
    "install UCX (Debian/Ubuntu: apt-get install libucx0; clusters: load the site's ucx module)";

/// The loaded library, or why it could not be loaded (once per process).
pub fn lib() -> Result<&'static sys::Ucp, String> {
    static LIB: OnceLock<Result<sys::Ucp, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        let name = crate::config::get_str("OXMPI_UCX_LIB").unwrap_or_else(|| "libucp.so.0".into());
        load(&name)
    })
    .as_ref()
    .map_err(|e| e.clone())
}

/// Opens the UCX library `name` and checks that it has every function the
/// link calls.
fn load(name: &str) -> Result<sys::Ucp, String> {
    // SAFETY: loading a shared library runs its constructors; libucp's are
    // UCX's own initialisation, safe to run at any time in a process.
    let l = unsafe { sys::Ucp::new(name) }
        .map_err(|e| format!("{name} could not be loaded ({e}): {INSTALL_HINT}"))?;
    if let Some(f) = l.missing() {
        return Err(format!(
            "{name} lacks {f} (UCX 1.13 or newer is needed): {INSTALL_HINT}"
        ));
    }
    Ok(l)
}

/// UCX's message for a status code.
pub fn status_text(l: &sys::Ucp, s: sys::ucs_status_t) -> String {
    // SAFETY: ucs_status_string returns a static NUL-terminated string for any code.
    let p = unsafe { l.ucs_status_string(s) };
    if p.is_null() {
        return format!("status {s}");
    }
    // SAFETY: as above.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// `UCS_PTR_IS_ERR`: a pointer-sized status in [UCS_ERR_LAST, 0).
/// Tells UCX that an operation's buffer is CUDA device memory (`device`,
/// given only where UCX reports CUDA memory), which spares it the lookup
/// of the buffer's memory type; a host buffer is left to that lookup
/// (UCX's default). A test's device memory that UCX does not know
/// (OXMPI_TEST_UCX_CUDA) is host memory to it.
fn memory_type(p: &mut sys::ucp_request_param_t, device: bool) {
    if device {
        p.op_attr_mask |= sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p.memory_type = sys::ucs_memory_type_UCS_MEMORY_TYPE_CUDA;
    }
}

fn ptr_is_err(p: sys::ucs_status_ptr_t) -> bool {
    (p as usize) >= (sys::ucs_status_t_UCS_ERR_LAST as isize as usize)
}

/// `UCS_PTR_STATUS`.
fn ptr_status(p: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
    p as isize as sys::ucs_status_t
}

/// One arrival, copied out of UCX's buffers in the receive callback.
pub struct Arrival {
    pub header: Vec<u8>,
    pub data: Vec<u8>,
    /// A rendezvous arrival: UCX's descriptor of the data (still at the
    /// sender) and its length, for `fetch` (`data` is then empty).
    pub rndv: Option<(usize, usize)>,
}

/// A context and one worker.
pub struct Ucx {
    lib: &'static sys::Ucp,
    context: sys::ucp_context_h,
    /// UCX reports CUDA memory among its memory types
    /// (`UCP_ATTR_FIELD_MEMORY_TYPES`; Debian's 1.13 does not).
    cuda: bool,
    worker: sys::ucp_worker_h,
    address: Vec<u8>,
    /// Arrivals since the last `take_arrivals`, in callback order. Boxed so
    /// that the callback's argument (the Vec's own address) stays valid
    /// while `Ucx` moves.
    #[allow(clippy::box_collection)]
    inbox: Box<Vec<Arrival>>,
    /// Endpoints UCX reported failed (their peer died, or its host or the
    /// network did), with the status: boxed like the inbox, for the error
    /// callback's argument.
    #[allow(clippy::box_collection)]
    failures: Box<Vec<(usize, sys::ucs_status_t)>>,
    /// Sends UCX still holds: their buffers live until completion; the
    /// endpoint's id names the peer when one fails; a whole-buffer send's
    /// token goes to `done` when it completes.
    pending: Vec<(sys::ucs_status_ptr_t, Vec<u8>, usize, Option<u64>)>,
    /// Rendezvous receives in flight (`fetch`): the request and its token.
    fetching: Vec<(sys::ucs_status_ptr_t, u64)>,
    /// Tokens of whole-buffer sends and fetches that completed, in order.
    done: Vec<u64>,
    /// The worker's event fd (UCP_FEATURE_WAKEUP): readable when something
    /// arrives after `arm`; -1 when UCX gave none.
    efd: i32,
}

/// A peer's endpoint failed.
#[derive(Debug)]
pub struct Failure {
    /// `Endpoint::id` of the failed endpoint.
    pub ep: usize,
    pub what: String,
}

/// The endpoint error callback: records the endpoint and the status for
/// `progress` to report (called from ucp_worker_progress on the worker's
/// thread).
///
/// # Safety
/// UCX calls it with the `arg` registered in `connect`: the boxed failure
/// list of the worker's `Ucx`.
unsafe extern "C" fn on_peer_error(arg: *mut c_void, ep: sys::ucp_ep_h, status: sys::ucs_status_t) {
    // SAFETY: `arg` is the boxed failure list registered with the endpoint,
    // alive while the worker exists; called on the worker's thread only.
    let list = unsafe { &mut *(arg as *mut Vec<(usize, sys::ucs_status_t)>) };
    list.push((ep as usize, status));
}

/// The active-message id of every protocol message.
const AM_ID: u32 = 0;

/// The receive callback: copies the envelope and the payload (eager data,
/// valid only during the callback) into the inbox.
///
/// # Safety
/// UCX calls it with the `arg` registered in `new` (the boxed inbox) and
/// buffers of the given lengths, valid during the call.
unsafe extern "C" fn on_am(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: `arg` is the boxed inbox registered with this handler, alive
    // while the worker exists; UCX calls back only from ucp_worker_progress
    // on the thread that owns the worker.
    let inbox = unsafe { &mut *(arg as *mut Vec<Arrival>) };
    // SAFETY: UCX passes a valid parameter block.
    let rndv = unsafe { (*param).recv_attr }
        & sys::ucp_am_recv_attr_t_UCP_AM_RECV_ATTR_FLAG_RNDV as u64
        != 0;
    let copy = |p: *const c_void, n: usize| -> Vec<u8> {
        if n == 0 || p.is_null() {
            Vec::new()
        } else {
            // SAFETY: header and data hold the given lengths during the callback.
            unsafe { std::slice::from_raw_parts(p as *const u8, n) }.to_vec()
        }
    };
    if rndv {
        // The data is still at the sender: the descriptor stays valid (UCS_INPROGRESS)
        // until `fetch` receives it into the buffer the matching engine chose.
        inbox.push(Arrival {
            header: copy(header, header_length),
            data: Vec::new(),
            rndv: Some((data as usize, length)),
        });
        return sys::ucs_status_t_UCS_INPROGRESS;
    }
    inbox.push(Arrival {
        header: copy(header, header_length),
        data: copy(data, length),
        rndv: None,
    });
    sys::ucs_status_t_UCS_OK
}

/// A context with `features` and one worker in thread `mode` with wakeup
/// events (RX and TX), and the worker's address: the part our two UCX
/// contexts share (the link's, `Ucx::new`, and the RMA worker's,
/// `rma::Rma`). Without the user's `UCX_TLS`, UCX may use every transport
/// but shared memory (`^sm`: shared memory between the ranks of a node is
/// ours); tcp's receive segment as `set_rx_segment` says. `what` follows
/// the failing call's name in an error ("" or " (RMA)"); nothing is left
/// made on an error.
///
/// # Safety
/// Plain C calls on the loaded library; the caller owns the context and
/// worker returned (destroys them, or keeps them for the process's life).
pub(crate) unsafe fn open_worker(
    lib: &'static sys::Ucp,
    features: u32,
    mode: sys::ucs_thread_mode_t,
    what: &str,
) -> Result<(sys::ucp_context_h, sys::ucp_worker_h, Vec<u8>), String> {
    let fail = |call: &str, s: sys::ucs_status_t| format!("{call}{what}: {}", status_text(lib, s));
    // SAFETY: plain C calls with valid out-pointers; what is made is
    // destroyed on the error paths below.
    unsafe {
        let mut config: *mut sys::ucp_config_t = std::ptr::null_mut();
        let s = lib.ucp_config_read(std::ptr::null(), std::ptr::null(), &mut config);
        if s != sys::ucs_status_t_UCS_OK {
            return Err(fail("ucp_config_read", s));
        }
        if std::env::var_os("UCX_TLS").is_none() {
            let (k, v) = (CString::new("TLS").unwrap(), CString::new("^sm").unwrap());
            let s = lib.ucp_config_modify(config, k.as_ptr(), v.as_ptr());
            if s != sys::ucs_status_t_UCS_OK {
                lib.ucp_config_release(config);
                return Err(fail("ucp_config_modify(TLS)", s));
            }
        }
        set_rx_segment(lib, config);
        let mut params: sys::ucp_params_t = std::mem::zeroed();
        params.field_mask = sys::ucp_params_field_UCP_PARAM_FIELD_FEATURES as u64;
        params.features = features as u64;
        let mut context: sys::ucp_context_h = std::ptr::null_mut();
        let s = lib.ucp_init_version(
            sys::UCP_API_MAJOR,
            sys::UCP_API_MINOR,
            &params,
            config,
            &mut context,
        );
        lib.ucp_config_release(config);
        if s != sys::ucs_status_t_UCS_OK {
            return Err(fail("ucp_init", s));
        }
        let mut wp: sys::ucp_worker_params_t = std::mem::zeroed();
        wp.field_mask = (sys::ucp_worker_params_field_UCP_WORKER_PARAM_FIELD_THREAD_MODE
            | sys::ucp_worker_params_field_UCP_WORKER_PARAM_FIELD_EVENTS)
            as u64;
        wp.thread_mode = mode;
        wp.events =
            sys::ucp_wakeup_event_types_UCP_WAKEUP_RX | sys::ucp_wakeup_event_types_UCP_WAKEUP_TX;
        let mut worker: sys::ucp_worker_h = std::ptr::null_mut();
        let s = lib.ucp_worker_create(context, &wp, &mut worker);
        if s != sys::ucs_status_t_UCS_OK {
            lib.ucp_cleanup(context);
            return Err(fail("ucp_worker_create", s));
        }
        let mut a: *mut sys::ucp_address_t = std::ptr::null_mut();
        let mut alen = 0usize;
        let s = lib.ucp_worker_get_address(worker, &mut a, &mut alen);
        if s != sys::ucs_status_t_UCS_OK {
            lib.ucp_worker_destroy(worker);
            lib.ucp_cleanup(context);
            return Err(fail("ucp_worker_get_address", s));
        }
        let address = std::slice::from_raw_parts(a as *const u8, alen).to_vec();
        lib.ucp_worker_release_address(worker, a);
        Ok((context, worker, address))
    }
}

/// The tcp transport's receive segment for our contexts, unless the user
/// set `UCX_TCP_RX_SEG_SIZE`: over tcp an active message travels as one
/// fragment up to the receive segment, headers included (64 KiB by
/// default), so the link's 64 KiB fragments and a 64 KiB get's answer went
/// as two, put together again by copies at the receiver. With 256 KiB,
/// across two pretend hosts, point-to-point bandwidth went from 2.5-3.4 to
/// 3.6-3.7 GB/s at 64 KiB and from 2.0-3.3 to 5.6-5.9 GB/s at 4 MiB, and
/// 64 KiB gets from 0.9 to 1.2 GB/s (docs/performance.md). UCX keeps a
/// few such buffers per interface (they grow by 8).
///
/// # Safety
/// `config` is a live configuration from `ucp_config_read`.
pub(crate) unsafe fn set_rx_segment(lib: &sys::Ucp, config: *mut sys::ucp_config_t) {
    if std::env::var_os("UCX_TCP_RX_SEG_SIZE").is_some() {
        return;
    }
    // The tcp interface's own name for it (`ucp_config_modify` hands names
    // it does not know to the transports).
    let (k, v) = (
        CString::new("RX_SEG_SIZE").unwrap(),
        CString::new("256k").unwrap(),
    );
    // SAFETY: the caller's contract; both strings live through the call.
    // A UCX that refuses it keeps its default (nothing else changes).
    unsafe { lib.ucp_config_modify(config, k.as_ptr(), v.as_ptr()) };
}

impl Ucx {
    /// A context with active messages and one single-threaded worker.
    /// Without the user's `UCX_TLS`, UCX may use every transport but shared
    /// memory (`^sm`).
    pub fn new() -> Result<Ucx, String> {
        let lib = lib()?;
        let fail = |what: &str, s: sys::ucs_status_t| format!("{what}: {}", status_text(lib, s));
        // SAFETY: plain C calls with valid out-pointers; every object made
        // here is destroyed in Drop (or on the error paths below).
        unsafe {
            let (context, worker, address) = open_worker(
                lib,
                sys::ucp_feature_UCP_FEATURE_AM | sys::ucp_feature_UCP_FEATURE_WAKEUP,
                sys::ucs_thread_mode_t_UCS_THREAD_MODE_SINGLE,
                "",
            )?;
            let mut efd = -1;
            if lib.ucp_worker_get_efd(worker, &mut efd) != sys::ucs_status_t_UCS_OK {
                efd = -1; // waiting then sleeps in short steps, as without UCX
            }
            let mut attr: sys::ucp_context_attr_t = std::mem::zeroed();
            attr.field_mask = sys::ucp_context_attr_field_UCP_ATTR_FIELD_MEMORY_TYPES as u64;
            let cuda = lib.ucp_context_query(context, &mut attr) == sys::ucs_status_t_UCS_OK
                && attr.memory_types & (1u64 << sys::ucs_memory_type_UCS_MEMORY_TYPE_CUDA) != 0;
            let mut u = Ucx {
                lib,
                context,
                cuda,
                worker,
                address,
                inbox: Box::default(),
                failures: Box::default(),
                pending: Vec::new(),
                fetching: Vec::new(),
                done: Vec::new(),
                efd,
            };
            let mut hp: sys::ucp_am_handler_param_t = std::mem::zeroed();
            hp.field_mask = (sys::ucp_am_handler_param_field_UCP_AM_HANDLER_PARAM_FIELD_ID
                | sys::ucp_am_handler_param_field_UCP_AM_HANDLER_PARAM_FIELD_CB
                | sys::ucp_am_handler_param_field_UCP_AM_HANDLER_PARAM_FIELD_ARG)
                as u64;
            hp.id = AM_ID;
            hp.cb = Some(on_am);
            hp.arg = &mut *u.inbox as *mut Vec<Arrival> as *mut c_void;
            let s = lib.ucp_worker_set_am_recv_handler(u.worker, &hp);
            if s != sys::ucs_status_t_UCS_OK {
                return Err(fail("ucp_worker_set_am_recv_handler", s));
            }
            Ok(u)
        }
    }

    /// Whether this UCX moves CUDA device memory itself. Device buffers to
    /// other hosts are staged in host memory either way (passing them to a
    /// UCX that reports CUDA support is not built yet).
    pub fn cuda_memory(&self) -> bool {
        self.cuda
    }

    /// This worker's address, for the business card.
    pub fn address(&self) -> &[u8] {
        &self.address
    }

    /// An endpoint to the worker at `address`, with peer error handling (a
    /// failed peer is reported, not waited for).
    pub fn connect(&mut self, address: &[u8]) -> Result<Endpoint, String> {
        // SAFETY: `address` is a worker address (UCX copies what it needs
        // during the call); the out-pointer is valid.
        unsafe {
            let mut ep_params: sys::ucp_ep_params_t = std::mem::zeroed();
            ep_params.field_mask = (sys::ucp_ep_params_field_UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | sys::ucp_ep_params_field_UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                | sys::ucp_ep_params_field_UCP_EP_PARAM_FIELD_ERR_HANDLER)
                as u64;
            ep_params.address = address.as_ptr() as *const sys::ucp_address_t;
            ep_params.err_mode = sys::ucp_err_handling_mode_t_UCP_ERR_HANDLING_MODE_PEER;
            ep_params.err_handler.cb = Some(on_peer_error);
            ep_params.err_handler.arg =
                &mut *self.failures as *mut Vec<(usize, sys::ucs_status_t)> as *mut c_void;
            let mut ep: sys::ucp_ep_h = std::ptr::null_mut();
            let s = self.lib.ucp_ep_create(self.worker, &ep_params, &mut ep);
            if s != sys::ucs_status_t_UCS_OK {
                return Err(format!("ucp_ep_create: {}", status_text(self.lib, s)));
            }
            Ok(Endpoint(ep))
        }
    }

    /// Sends `header` and `payload` as one active message on `ep`; the
    /// caller's buffers are free on return. A send UCX completes at once
    /// (the common small one) goes from them as they are; otherwise they
    /// are copied into a buffer held until UCX is done with it.
    pub fn send(&mut self, ep: &Endpoint, header: &[u8], payload: &[u8]) -> Result<(), String> {
        // SAFETY: with FORCE_IMM_CMPL UCX either completes the send during
        // the call or refuses it (UCS_ERR_NO_RESOURCE), so the borrowed
        // buffers are not used after it returns.
        let r = unsafe {
            self.am_send(
                ep,
                header,
                payload,
                sys::ucp_op_attr_t_UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL,
            )
        };
        if r.is_null() {
            return Ok(());
        }
        if !ptr_is_err(r) || ptr_status(r) != sys::ucs_status_t_UCS_ERR_NO_RESOURCE {
            return self.settle(r, Vec::new(), ep.id(), None);
        }
        let mut buf = Vec::with_capacity(header.len() + payload.len());
        buf.extend_from_slice(header);
        buf.extend_from_slice(payload);
        let (h, p) = buf.split_at(header.len());
        // SAFETY: `buf` moves into `pending` (its heap bytes stay put) until
        // UCX completes the request.
        let r = unsafe { self.am_send(ep, h, p, 0) };
        self.settle(r, buf, ep.id(), None)
    }

    /// Sends `header` and the `len` bytes at `data` as one active message
    /// by UCX's rendezvous (the receiver fetches the bytes straight from
    /// `data` into its buffer). `token` goes to `take_done` when UCX is
    /// done with `data`; the header is copied here. `data` is CUDA device
    /// memory where `device` (only when `cuda_memory` says UCX takes it).
    ///
    /// # Safety
    /// `data` holds `len` readable bytes until `token` is reported done.
    pub unsafe fn send_whole(
        &mut self,
        ep: &Endpoint,
        header: &[u8],
        data: *const u8,
        len: usize,
        token: u64,
        device: bool,
    ) -> Result<(), String> {
        // UCX 1.13 reads the header until the send completes (no
        // COPY_HEADER flag there): it lives in `pending` with the request.
        let head = header.to_vec();
        // SAFETY: the parameter block is read during the call; `head` moves
        // into `pending` (its heap bytes stay put) and `data` is valid per
        // the contract until completion.
        let r = unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = sys::ucp_send_am_flags_UCP_AM_SEND_FLAG_RNDV;
            memory_type(&mut p, device && self.cuda);
            self.lib.ucp_am_send_nbx(
                ep.0,
                AM_ID,
                head.as_ptr() as *const c_void,
                head.len(),
                data as *const c_void,
                len,
                &p,
            )
        };
        if r.is_null() {
            self.done.push(token);
            return Ok(());
        }
        self.settle(r, head, ep.id(), Some(token))
    }

    /// Receives the rendezvous data of an arrival (`Arrival::rndv`'s
    /// descriptor, `len` bytes) into `dst`; `token` goes to `take_done`
    /// when the bytes are in. `dst` is CUDA device memory where `device`
    /// (as for `send_whole`).
    ///
    /// # Safety
    /// `desc` is a descriptor from an arrival not fetched yet; `dst` holds
    /// `len` writable bytes until `token` is reported done.
    pub unsafe fn fetch(
        &mut self,
        desc: usize,
        dst: *mut u8,
        len: usize,
        token: u64,
        device: bool,
    ) -> Result<(), String> {
        // SAFETY: per the contract; the parameter block is read during the call.
        let r = unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            memory_type(&mut p, device && self.cuda);
            self.lib.ucp_am_recv_data_nbx(
                self.worker,
                desc as *mut c_void,
                dst as *mut c_void,
                len,
                &p,
            )
        };
        if r.is_null() {
            self.done.push(token);
            return Ok(());
        }
        if ptr_is_err(r) {
            return Err(format!(
                "ucp_am_recv_data_nbx: {}",
                status_text(self.lib, ptr_status(r))
            ));
        }
        self.fetching.push((r, token));
        Ok(())
    }

    /// Drops the rendezvous data of an arrival without receiving it (a
    /// cancelled send): UCX ends the rendezvous, and the sender's send
    /// completes without its bytes moving.
    ///
    /// # Safety
    /// `desc` is a descriptor from an arrival not fetched nor dropped yet.
    pub unsafe fn drop_arrival(&mut self, desc: usize) {
        // SAFETY: per the contract.
        unsafe {
            self.lib
                .ucp_am_data_release(self.worker, desc as *mut c_void)
        }
    }

    /// Tokens of the whole-buffer sends and fetches completed since the
    /// last call.
    pub fn take_done(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.done)
    }

    /// One `ucp_am_send_nbx` of `header` and `payload` (eager) with the
    /// extra operation flags `attr`.
    ///
    /// # Safety
    /// The buffers stay valid until the returned request completes.
    unsafe fn am_send(
        &self,
        ep: &Endpoint,
        header: &[u8],
        payload: &[u8],
        attr: u32,
    ) -> sys::ucs_status_ptr_t {
        // SAFETY: the parameter block is read during the call; the buffers
        // per the contract.
        unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_FLAGS | attr;
            p.flags = sys::ucp_send_am_flags_UCP_AM_SEND_FLAG_EAGER;
            self.lib.ucp_am_send_nbx(
                ep.0,
                AM_ID,
                header.as_ptr() as *const c_void,
                header.len(),
                payload.as_ptr() as *const c_void,
                payload.len(),
                &p,
            )
        }
    }

    /// What `ucp_am_send_nbx` returned: done, an error, or a request kept
    /// (with the buffer it reads) until `progress` sees it complete.
    fn settle(
        &mut self,
        r: sys::ucs_status_ptr_t,
        buf: Vec<u8>,
        ep: usize,
        token: Option<u64>,
    ) -> Result<(), String> {
        if r.is_null() {
            return Ok(());
        }
        if ptr_is_err(r) {
            return Err(format!(
                "ucp_am_send_nbx: {}",
                status_text(self.lib, ptr_status(r))
            ));
        }
        self.pending.push((r, buf, ep, token));
        Ok(())
    }

    /// Drives the worker once and retires completed sends; true if anything
    /// happened. Err: a peer's endpoint failed (reported by UCX's error
    /// callback, or by a send to it).
    pub fn progress(&mut self) -> Result<bool, Failure> {
        // SAFETY: the worker is ours and used by this thread only.
        let n = unsafe { self.lib.ucp_worker_progress(self.worker) };
        let lib = self.lib;
        if let Some(&(ep, s)) = self.failures.first() {
            return Err(Failure {
                ep,
                what: status_text(lib, s),
            });
        }
        let before = self.pending.len() + self.fetching.len();
        let mut failed = None;
        let done = &mut self.done;
        self.pending.retain(|&(r, _, ep, token)| {
            // SAFETY: `r` is a request UCX returned and we have not freed.
            let s = unsafe { lib.ucp_request_check_status(r) };
            if s == sys::ucs_status_t_UCS_INPROGRESS {
                return true;
            }
            if s != sys::ucs_status_t_UCS_OK {
                failed = Some((ep, format!("a send failed: {}", status_text(lib, s))));
            }
            done.extend(token);
            // SAFETY: completed: ours to free.
            unsafe { lib.ucp_request_free(r) };
            false
        });
        self.fetching.retain(|&(r, token)| {
            // SAFETY: as above.
            let s = unsafe { lib.ucp_request_check_status(r) };
            if s == sys::ucs_status_t_UCS_INPROGRESS {
                return true;
            }
            if s != sys::ucs_status_t_UCS_OK {
                // The sender's endpoint is not known here; its own failure
                // report (if it died) names it first.
                failed = Some((
                    0,
                    format!("a rendezvous receive failed: {}", status_text(lib, s)),
                ));
            }
            done.push(token);
            // SAFETY: completed: ours to free.
            unsafe { lib.ucp_request_free(r) };
            false
        });
        if let Some((ep, what)) = failed {
            return Err(Failure { ep, what });
        }
        Ok(n > 0
            || self.pending.len() + self.fetching.len() != before
            || !self.inbox.is_empty()
            || !self.done.is_empty())
    }

    /// Prepares to sleep on `efd`: Some(fd) when the worker is armed (the fd
    /// turns readable on the next event), None when events are pending (or
    /// there is no fd): progress again instead of sleeping.
    pub fn arm(&mut self) -> Option<i32> {
        if self.efd < 0 || !self.inbox.is_empty() || !self.done.is_empty() {
            return None;
        }
        // SAFETY: the worker is ours and used by this thread only.
        let s = unsafe { self.lib.ucp_worker_arm(self.worker) };
        (s == sys::ucs_status_t_UCS_OK).then_some(self.efd)
    }

    pub fn take_arrivals(&mut self) -> Vec<Arrival> {
        std::mem::take(&mut *self.inbox)
    }

    /// Sends still held by UCX.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Closes `ep` (forcibly: peers may be gone), driving the worker until
    /// UCX lets it go.
    pub fn close(&mut self, ep: Endpoint) {
        // SAFETY: `ep` is ours; the request, if any, is progressed to
        // completion and freed here.
        unsafe {
            let mut p: sys::ucp_request_param_t = std::mem::zeroed();
            p.op_attr_mask = sys::ucp_op_attr_t_UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = sys::ucp_ep_close_flags_t_UCP_EP_CLOSE_FLAG_FORCE;
            let r = self.lib.ucp_ep_close_nbx(ep.0, &p);
            if r.is_null() || ptr_is_err(r) {
                return;
            }
            while self.lib.ucp_request_check_status(r) == sys::ucs_status_t_UCS_INPROGRESS {
                self.lib.ucp_worker_progress(self.worker);
            }
            self.lib.ucp_request_free(r);
        }
    }
}

impl Drop for Ucx {
    fn drop(&mut self) {
        // SAFETY: the objects were made in `new` and are destroyed once;
        // pending requests are cancelled and freed first.
        unsafe {
            for (r, _, _, _) in self.pending.drain(..) {
                self.lib.ucp_request_cancel(self.worker, r);
                self.lib.ucp_request_free(r);
            }
            for (r, _) in self.fetching.drain(..) {
                self.lib.ucp_request_cancel(self.worker, r);
                self.lib.ucp_request_free(r);
            }
            self.lib.ucp_worker_destroy(self.worker);
            self.lib.ucp_cleanup(self.context);
        }
    }
}

/// An endpoint of a worker (closed by `Ucx::close`).
pub struct Endpoint(sys::ucp_ep_h);

impl Endpoint {
    /// Names the endpoint in a `Failure`.
    pub fn id(&self) -> usize {
        self.0 as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two workers in one process exchange active messages over tcp on the
    /// loopback device: every envelope and payload arrives whole and in
    /// order. Skipped (with a note) where libucp is not installed.
    /// A library that is not there is an error naming it and what to
    /// install, not a panic.
    #[test]
    fn a_missing_library_is_a_clear_error() {
        let e = load("liboxmpi-no-such-ucp.so.0")
            .err()
            .expect("a missing library loaded");
        assert!(e.contains("liboxmpi-no-such-ucp.so.0"), "{e}");
        assert!(e.contains("apt-get install libucx0"), "{e}");
        // A library without UCX's functions is refused by name, not called.
        let e = load("libc.so.6").err().expect("libc taken for libucp");
        assert!(e.contains("lacks ucp_"), "{e}");
    }

    /// Two workers over tcp on the loopback device; None (with a note)
    /// where libucp is not installed.
    fn two_workers() -> Option<(Ucx, Ucx)> {
        if let Err(e) = lib() {
            eprintln!("skipped: {e}");
            return None;
        }
        std::env::set_var("UCX_TLS", "tcp");
        std::env::set_var("UCX_NET_DEVICES", "lo");
        Some((Ucx::new().expect("worker a"), Ucx::new().expect("worker b")))
    }

    #[test]
    fn active_messages_arrive_in_order() {
        let Some((mut a, mut b)) = two_workers() else {
            return;
        };
        assert!(!a.address().is_empty());
        let ep = a.connect(b.address()).expect("endpoint");
        const N: usize = 200;
        for i in 0..N {
            let header = (i as u64).to_le_bytes();
            let payload: Vec<u8> = (0..(i * 37) % 3000).map(|k| (k + i) as u8).collect();
            a.send(&ep, &header, &payload).expect("send");
        }
        let mut got = Vec::new();
        let start = std::time::Instant::now();
        while got.len() < N {
            a.progress().expect("progress a");
            b.progress().expect("progress b");
            got.extend(b.take_arrivals());
            assert!(
                start.elapsed().as_secs() < 30,
                "only {} of {N} arrived",
                got.len()
            );
        }
        for (i, m) in got.iter().enumerate() {
            assert_eq!(
                m.header,
                (i as u64).to_le_bytes(),
                "message {i} out of order"
            );
            let want: Vec<u8> = (0..(i * 37) % 3000).map(|k| (k + i) as u8).collect();
            assert_eq!(m.data, want, "payload of message {i}");
        }
        while a.pending() > 0 {
            a.progress().expect("progress a");
            b.progress().expect("progress b");
        }
        a.close(ep);
    }

    /// A whole-buffer send by UCX's rendezvous arrives as a descriptor,
    /// is fetched into the receiver's buffer, and both sides are told done
    /// by their tokens.
    #[test]
    fn rendezvous_lands_in_the_fetching_buffer() {
        let Some((mut a, mut b)) = two_workers() else {
            return;
        };
        let ep = a.connect(b.address()).expect("endpoint");
        let n = (1 << 20) + 13;
        let src: Vec<u8> = (0..n).map(|k| (k * 7 + 3) as u8).collect();
        // SAFETY: `src` outlives the send (the loop below waits for its token).
        unsafe { a.send_whole(&ep, b"head", src.as_ptr(), n, 7, false) }.expect("send");
        let mut dst = vec![0u8; n];
        let (mut sent, mut fetched, mut arrived) = (false, false, false);
        let start = std::time::Instant::now();
        while !(sent && fetched) {
            a.progress().expect("progress a");
            b.progress().expect("progress b");
            sent |= a.take_done().contains(&7);
            fetched |= b.take_done().contains(&9);
            for m in b.take_arrivals() {
                assert!(!arrived, "a second arrival");
                arrived = true;
                assert_eq!(m.header, b"head");
                let (desc, len) = m.rndv.expect("not a rendezvous arrival");
                assert_eq!(len, n);
                // SAFETY: the descriptor is fetched once; `dst` holds n bytes
                // until token 9 is done.
                unsafe { b.fetch(desc, dst.as_mut_ptr(), n, 9, false) }.expect("fetch");
            }
            assert!(
                start.elapsed().as_secs() < 30,
                "sent {sent} fetched {fetched}"
            );
        }
        assert!(dst == src, "the fetched bytes differ");
        a.close(ep);
    }
}
