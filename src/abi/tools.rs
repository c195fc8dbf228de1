//! The MPI tool information interface (`MPI_T_`), for tools such as TAU,
//! Score-P and Caliper:
//!
//! - control variables: every tunable of `config::TUNABLES` and the
//!   collectives' algorithm choices (`OXMPI_<FAMILY>`), by their
//!   environment names. Each reads the value in force (the environment's,
//!   else the default); the wait's phases (`OXMPI_SPIN_US`,
//!   `OXMPI_YIELD_US`, `OXMPI_SLEEP_MAX_US`, scope local) and the
//!   collective checks (`OXMPI_CHECK`, scope all-equal) can be written at
//!   run time; the rest are read once at start (scope constant: writing
//!   them answers `MPI_T_ERR_CVAR_SET_NEVER`).
//! - performance variables, counted from `MPI_T_init_thread` on (before
//!   it each counting site pays one relaxed load, `profile::tools_on`):
//!   messages and bytes sent per link (shared memory, UCX, to itself),
//!   eager and rendezvous sends, messages and bytes received, unexpected
//!   messages, the unexpected queue's length and high-water mark, the time
//!   waited in MPI calls, and how often each collective algorithm was
//!   chosen. All are continuous (no start or stop); counters and the timer
//!   read relative to their handle (allocation, reset or write).
//! - categories grouping them; the event interface with one source (the
//!   process's monotonic clock) and no event types, so that it costs
//!   nothing.
//!
//! Errors are returned as `MPI_T_ERR_*` codes, never passed to an error
//! handler (`enter`). The functions work before `MPI_Init` and after
//! `MPI_Finalize`, as the standard allows. C only: MPI has no Fortran
//! bindings for `MPI_T_`.

use super::consts::*;
use super::{MPI_Count, MPI_Datatype, MPI_Info};
use crate::core::error::{Error, Result};
use crate::core::profile::{ev, pv};
use crate::err;
use oxmpi_macros::mpi_fn;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

pub type MPI_T_enum = *mut c_void;
pub type MPI_T_cvar_handle = *mut c_void;
pub type MPI_T_pvar_handle = *mut c_void;
pub type MPI_T_pvar_session = *mut c_void;
pub type MPI_T_event_registration = *mut c_void;
pub type MPI_T_event_instance = *mut c_void;
pub type MPI_T_cb_safety = c_int;
pub type MPI_T_source_order = c_int;
pub type MPI_T_event_cb_function = c_void;
pub type MPI_T_event_free_cb_function = c_void;
pub type MPI_T_event_dropped_cb_function = c_void;

static mut ALL_HANDLES_TARGET: c_int = 0x7a11;
/// `MPI_T_PVAR_ALL_HANDLES` (MPICH: an `extern` handle constant).
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: super::topo::Sentinel =
    super::topo::Sentinel(std::ptr::addr_of_mut!(ALL_HANDLES_TARGET));

fn all_handles() -> *mut c_void {
    MPI_T_PVAR_ALL_HANDLES.0.cast()
}

/// Runs an `MPI_T_` function: its error's class is the return code, and
/// no error handler is called (a panic answers `MPI_ERR_INTERN`).
pub fn enter(name: &'static &'static str, f: impl FnOnce() -> Result<()>) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => {
            if std::env::var_os("OXMPI_DEBUG").is_some() {
                say!("oxmpi: {name}: {}", e.msg);
            }
            e.class
        }
        Err(_) => {
            say!("oxmpi: {name}: internal error");
            MPI_ERR_INTERN
        }
    }
}

/// Nesting of `MPI_T_init_thread` / `MPI_T_finalize`.
static INITS: AtomicUsize = AtomicUsize::new(0);

fn ready() -> Result<()> {
    // Relaxed: a count the tool itself orders (init before use).
    if INITS.load(Relaxed) == 0 {
        return Err(err!(
            MPI_T_ERR_NOT_INITIALIZED,
            "MPI_T_init_thread has not been called"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- tables

/// A control variable.
struct Cvar {
    name: String,
    default: String,
    desc: String,
    /// Integer (`MPI_UNSIGNED_LONG_LONG`) or string (`MPI_CHAR`).
    int: bool,
    verbosity: c_int,
    scope: c_int,
    category: usize,
}

/// A performance variable.
struct Pvar {
    name: String,
    desc: String,
    class: c_int,
    datatype: c_int,
    readonly: bool,
    source: Source,
    category: usize,
}

#[derive(Clone, Copy)]
enum Source {
    Counter(usize),
    /// The unexpected queue's length (read from the library's state).
    QueueLength,
    /// The wait timer (`pv::WAIT_NS`), in seconds as a double.
    WaitSeconds,
    /// How often collective family `FAMILIES[f]` chose algorithm `a`.
    Algo(usize, usize),
}

const CATEGORIES: &[(&str, &str)] = &[
    (
        "oxmpi_point_to_point",
        "point-to-point protocols on one node: eager and rendezvous, shared-memory cells, single copy",
    ),
    (
        "oxmpi_waiting",
        "how a waiting rank spins, yields and sleeps",
    ),
    (
        "oxmpi_collectives",
        "collective algorithms and their selection",
    ),
    ("oxmpi_ucx", "ranks on other hosts through UCX"),
    ("oxmpi_cuda", "device (CUDA) buffers"),
    (
        "oxmpi_diagnosis",
        "profile at finalize, hang report, collective checks, debugging",
    ),
    (
        "oxmpi_traffic",
        "messages, bytes and waits of this process (performance variables)",
    ),
];

fn category_of(name: &str) -> usize {
    let n = name.trim_start_matches("OXMPI_");
    if n.contains("CUDA") || n.starts_with("GPU") || n.starts_with("NVRTC") {
        4
    } else if n.contains("UCX") || n.starts_with("RMA") {
        3
    } else if [
        "SPIN_US",
        "OVERSUB_SPIN_US",
        "YIELD_US",
        "SLEEP_MAX_US",
        "NODE_CPUS",
    ]
    .contains(&n)
    {
        1
    } else if ["DEBUG", "CHECK", "HANG_REPORT", "PROFILE", "TIMEOUT", "JOB"].contains(&n) {
        5
    } else if n.starts_with("ALLGATHER_")
        || n.starts_with("NET_")
        || n.starts_with("TEST_RANKS")
        || crate::coll::select::FAMILIES
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(n))
    {
        2
    } else {
        0
    }
}

/// The variables a run-time write changes: (name, scope).
const WRITABLE: &[(&str, c_int)] = &[
    ("OXMPI_SPIN_US", MPI_T_SCOPE_LOCAL),
    ("OXMPI_YIELD_US", MPI_T_SCOPE_LOCAL),
    ("OXMPI_SLEEP_MAX_US", MPI_T_SCOPE_LOCAL),
    ("OXMPI_CHECK", MPI_T_SCOPE_ALL_EQ),
];

/// The variables a user sets most (verbosity user-basic).
const USER: &[&str] = &[
    "OXMPI_EAGER_LIMIT",
    "OXMPI_CUDA",
    "OXMPI_PROFILE",
    "OXMPI_CHECK",
    "OXMPI_HANG_REPORT",
    "OXMPI_TIMEOUT",
];

fn cvars() -> &'static [Cvar] {
    static V: OnceLock<Vec<Cvar>> = OnceLock::new();
    V.get_or_init(|| {
        let mut v: Vec<Cvar> = crate::config::TUNABLES
            .iter()
            .map(|(n, d, desc)| (n.to_string(), d.to_string(), desc.to_string()))
            .chain(crate::coll::select::tunable_lines())
            .map(|(name, default, desc)| {
                let int = !default.is_empty() && default.parse::<u64>().is_ok();
                let verbosity = if name.contains("TEST") {
                    MPI_T_VERBOSITY_MPIDEV_DETAIL
                } else if USER.contains(&name.as_str()) {
                    MPI_T_VERBOSITY_USER_BASIC
                } else {
                    MPI_T_VERBOSITY_TUNER_BASIC
                };
                let scope = WRITABLE
                    .iter()
                    .find(|w| w.0 == name)
                    .map_or(MPI_T_SCOPE_CONSTANT, |w| w.1);
                Cvar {
                    category: category_of(&name),
                    name,
                    default,
                    desc,
                    int,
                    verbosity,
                    scope,
                }
            })
            .collect();
        v.dedup_by(|a, b| a.name == b.name);
        v
    })
}

fn pvars() -> &'static [Pvar] {
    static V: OnceLock<Vec<Pvar>> = OnceLock::new();
    V.get_or_init(|| {
        let c = |name: &str, desc: &str, i: usize| Pvar {
            name: name.into(),
            desc: desc.into(),
            class: MPI_T_PVAR_CLASS_COUNTER,
            datatype: MPI_UNSIGNED_LONG_LONG,
            readonly: false,
            source: Source::Counter(i),
            category: 6,
        };
        let mut v = vec![
            c("oxmpi_sent_messages_shm", "messages sent to ranks of this node (shared memory)", pv::SEND_SHM_MSGS),
            c("oxmpi_sent_bytes_shm", "bytes sent to ranks of this node (shared memory)", pv::SEND_SHM_BYTES),
            c("oxmpi_sent_messages_ucx", "messages sent to ranks on other hosts (UCX)", pv::SEND_UCX_MSGS),
            c("oxmpi_sent_bytes_ucx", "bytes sent to ranks on other hosts (UCX)", pv::SEND_UCX_BYTES),
            c("oxmpi_sent_messages_self", "messages sent by a rank to itself", pv::SEND_SELF_MSGS),
            c("oxmpi_sent_bytes_self", "bytes sent by a rank to itself", pv::SEND_SELF_BYTES),
            c("oxmpi_eager_sends", "point-to-point messages sent eagerly (within the link's eager limit)", pv::EAGER),
            c("oxmpi_rendezvous_sends", "point-to-point messages sent by rendezvous (above the link's eager limit)", pv::RNDV),
            c("oxmpi_received_messages", "point-to-point messages that arrived from other ranks (and from this one)", pv::RECV_MSGS),
            c("oxmpi_received_bytes", "bytes of the messages that arrived", pv::RECV_BYTES),
            c("oxmpi_unexpected_messages", "messages that arrived before a matching receive was posted", pv::UNEXPECTED),
            Pvar {
                name: "oxmpi_unexpected_queue_length".into(),
                desc: "messages waiting in the unexpected queue now".into(),
                class: MPI_T_PVAR_CLASS_LEVEL,
                datatype: MPI_UNSIGNED_LONG_LONG,
                readonly: true,
                source: Source::QueueLength,
                category: 6,
            },
            Pvar {
                name: "oxmpi_unexpected_queue_hwm".into(),
                desc: "the most messages the unexpected queue held at once since MPI_T_init_thread".into(),
                class: MPI_T_PVAR_CLASS_HIGHWATERMARK,
                datatype: MPI_UNSIGNED_LONG_LONG,
                readonly: true,
                source: Source::Counter(pv::UNEXPECTED_HWM),
                category: 6,
            },
            Pvar {
                name: "oxmpi_wait_time".into(),
                desc: "seconds this process waited inside MPI calls (from a wait's first poll in vain to its end)".into(),
                class: MPI_T_PVAR_CLASS_TIMER,
                datatype: MPI_DOUBLE,
                readonly: false,
                source: Source::WaitSeconds,
                category: 6,
            },
        ];
        for (f, fam) in crate::coll::select::FAMILIES.iter().enumerate() {
            for (a, algo) in fam.algos.iter().enumerate() {
                v.push(Pvar {
                    name: format!("oxmpi_coll_{}_{}", fam.name, algo.name),
                    desc: format!(
                        "times a {} chose the algorithm {}{}",
                        fam.name,
                        algo.name,
                        if algo.what.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", algo.what)
                        }
                    ),
                    class: MPI_T_PVAR_CLASS_COUNTER,
                    datatype: MPI_UNSIGNED_LONG_LONG,
                    readonly: false,
                    source: Source::Algo(f, a),
                    category: 2,
                });
            }
        }
        v
    })
}

/// A performance variable's value now, as 64 bits (a double's bits for
/// the timer).
fn raw(p: &Pvar) -> u64 {
    match p.source {
        Source::Counter(i) => crate::core::profile::pv_get(i),
        Source::QueueLength => {
            crate::core::runtime::try_with(|st| st.unexpected_len() as u64).unwrap_or(0)
        }
        Source::WaitSeconds => crate::core::profile::pv_get(pv::WAIT_NS),
        Source::Algo(f, a) => {
            let fam = crate::coll::select::FAMILIES[f];
            crate::core::profile::algo_count(fam.name, fam.algos[a].name)
        }
    }
}

/// The current value of control variable `c`, as text.
fn cvar_value(c: &Cvar) -> String {
    let phase = |i: usize| {
        let (s, y, m) = crate::backoff::phases_us();
        [s, y, m][i].to_string()
    };
    match c.name.as_str() {
        // Live values once MPI is initialized: what the start or the last
        // write set.
        "OXMPI_SPIN_US" if crate::core::runtime::phase() == 1 => phase(0),
        "OXMPI_YIELD_US" if crate::core::runtime::phase() == 1 => phase(1),
        "OXMPI_SLEEP_MAX_US" if crate::core::runtime::phase() == 1 => phase(2),
        "OXMPI_CHECK" => {
            if crate::core::profile::diag() & crate::core::profile::CHECK != 0 {
                "1".to_string()
            } else {
                "0".to_string()
            }
        }
        n => std::env::var(n)
            .ok()
            .filter(|v| !c.int || v.trim().parse::<u64>().is_ok())
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| c.default.clone()),
    }
}

// ---------------------------------------------------------------- handles

struct CvarHandle {
    index: usize,
}

struct PvarHandle {
    session: usize,
    index: usize,
    /// The value (as `raw`) its reads count from.
    base: u64,
    /// A written value (the timer's bits) added to what it reads.
    offset: u64,
}

#[derive(Default)]
struct Handles {
    cvars: HashSet<usize>,
    sessions: HashSet<usize>,
    pvars: HashSet<usize>,
}

static HANDLES: Mutex<Option<Handles>> = Mutex::new(None);

fn handles<R>(f: impl FnOnce(&mut Handles) -> R) -> R {
    f(HANDLES.lock().get_or_insert_with(Handles::default))
}

fn cvar_handle<'a>(h: MPI_T_cvar_handle) -> Result<&'a mut CvarHandle> {
    if !handles(|t| t.cvars.contains(&(h as usize))) {
        return Err(err!(
            MPI_T_ERR_INVALID_HANDLE,
            "cvar handle {h:p} is not allocated"
        ));
    }
    // SAFETY: a live handle is a Box<CvarHandle> leaked by
    // MPI_T_cvar_handle_alloc and not freed (it is in the set).
    Ok(unsafe { &mut *(h as *mut CvarHandle) })
}

fn session_of(s: MPI_T_pvar_session) -> Result<usize> {
    if s.is_null() || !handles(|t| t.sessions.contains(&(s as usize))) {
        return Err(err!(
            MPI_T_ERR_INVALID_SESSION,
            "pvar session {s:p} is not open"
        ));
    }
    Ok(s as usize)
}

fn pvar_handle<'a>(s: usize, h: MPI_T_pvar_handle) -> Result<&'a mut PvarHandle> {
    if !handles(|t| t.pvars.contains(&(h as usize))) {
        return Err(err!(
            MPI_T_ERR_INVALID_HANDLE,
            "pvar handle {h:p} is not allocated"
        ));
    }
    // SAFETY: a live handle is a Box<PvarHandle> leaked by
    // MPI_T_pvar_handle_alloc and not freed (it is in the set).
    let p = unsafe { &mut *(h as *mut PvarHandle) };
    if p.session != s {
        return Err(err!(
            MPI_T_ERR_INVALID_HANDLE,
            "pvar handle {h:p} belongs to another session"
        ));
    }
    Ok(p)
}

// ---------------------------------------------------------------- helpers

/// Writes `v` at `p` unless `p` is NULL (any out argument of the get_info
/// functions may be NULL: that item is not returned).
fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: a non-NULL out argument points to a writable T (the
        // caller's contract).
        unsafe { p.write(v) };
    }
}

/// The standard's string out argument: `buf` of `*len` bytes gets as much
/// of `s` as fits and a NUL (nothing where `buf` is NULL or `*len` is 0);
/// `*len` becomes the length `s` needs, NUL included.
fn put_str(buf: *mut c_char, len: *mut c_int, s: &str) {
    if len.is_null() {
        return;
    }
    // SAFETY: `len` is non-NULL (checked), a readable and writable int.
    let room = unsafe { *len };
    if !buf.is_null() && room > 0 {
        let n = s.len().min(room as usize - 1);
        // SAFETY: `buf` holds `room` > n bytes (the caller's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    // SAFETY: as above.
    unsafe { *len = s.len() as c_int + 1 };
}

fn index<T>(list: &[T], i: c_int, what: &str) -> Result<usize> {
    if i < 0 || i as usize >= list.len() {
        return Err(err!(
            MPI_T_ERR_INVALID_INDEX,
            "{what} index {i} is not in [0, {})",
            list.len()
        ));
    }
    Ok(i as usize)
}

fn name_arg(name: *const c_char) -> Result<String> {
    super::ptr::cstr(name, "name").map_err(|e| Error {
        class: MPI_T_ERR_INVALID,
        ..e
    })
}

fn out_arg<T>(p: *mut T, what: &str) -> Result<&'static mut T> {
    if p.is_null() {
        return Err(err!(MPI_T_ERR_INVALID, "{what}=NULL"));
    }
    // SAFETY: non-NULL out argument (the caller's contract).
    Ok(unsafe { &mut *p })
}

// ---------------------------------------------------------------- setup

/// Starts the tools interface (nested calls count); its performance
/// variables count from the first call on.
#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        return Err(err!(
            MPI_T_ERR_INVALID,
            "required={required} is not a thread level"
        ));
    }
    crate::core::profile::set_tools();
    // Relaxed: as `ready`.
    INITS.fetch_add(1, Relaxed);
    // The interface takes its own locks: any level is served.
    put(provided, required);
    Ok(())
}

/// Ends one `MPI_T_init_thread`.
#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_finalize() -> c_int {
    ready()?;
    // Relaxed: as `ready`.
    INITS.fetch_sub(1, Relaxed);
    Ok(())
}

// ---------------------------------------------------------------- enums

/// No variable has an enumeration type: every handle is invalid.
#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_info(
    enumtype: MPI_T_enum,
    num: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    ready()?;
    let _ = (num, name, name_len);
    Err(err!(
        MPI_T_ERR_INVALID_HANDLE,
        "enum {enumtype:p}: no variable has an enumeration type"
    ))
}

/// As `MPI_T_enum_get_info`.
#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_item(
    enumtype: MPI_T_enum,
    index: c_int,
    value: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    ready()?;
    let _ = (index, value, name, name_len);
    Err(err!(
        MPI_T_ERR_INVALID_HANDLE,
        "enum {enumtype:p}: no variable has an enumeration type"
    ))
}

// ---------------------------------------------------------------- control variables

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    ready()?;
    *out_arg(num_cvar, "num_cvar")? = cvars().len() as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    ready()?;
    let c = &cvars()[index(cvars(), cvar_index, "cvar")?];
    put_str(name, name_len, &c.name);
    put(verbosity, c.verbosity);
    put(
        datatype,
        if c.int {
            MPI_UNSIGNED_LONG_LONG
        } else {
            MPI_CHAR
        },
    );
    put(enumtype, std::ptr::null_mut());
    put_str(desc, desc_len, &c.desc);
    put(bind, MPI_T_BIND_NO_OBJECT);
    put(scope, c.scope);
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_index(
    name: *const c_char,
    cvar_index: *mut c_int,
) -> c_int {
    ready()?;
    let n = name_arg(name)?;
    let i = cvars()
        .iter()
        .position(|c| c.name == n)
        .ok_or_else(|| err!(MPI_T_ERR_INVALID_NAME, "no control variable is named {n:?}"))?;
    *out_arg(cvar_index, "cvar_index")? = i as c_int;
    Ok(())
}

/// String variables are read into buffers of this many bytes (`count`).
const STRING_COUNT: c_int = 256;

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(
    cvar_index: c_int,
    obj_handle: *mut c_void,
    handle: *mut MPI_T_cvar_handle,
    count: *mut c_int,
) -> c_int {
    ready()?;
    let _ = obj_handle; // every variable binds to no object
    let i = index(cvars(), cvar_index, "cvar")?;
    let h = out_arg(handle, "handle")?;
    let n = out_arg(count, "count")?;
    let p = Box::into_raw(Box::new(CvarHandle { index: i })) as *mut c_void;
    handles(|t| t.cvars.insert(p as usize));
    *h = p;
    *n = if cvars()[i].int { 1 } else { STRING_COUNT };
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_free(handle: *mut MPI_T_cvar_handle) -> c_int {
    ready()?;
    let h = out_arg(handle, "handle")?;
    cvar_handle(*h)?;
    handles(|t| t.cvars.remove(&(*h as usize)));
    // SAFETY: allocated by MPI_T_cvar_handle_alloc, removed from the live
    // set just now, so freed once.
    drop(unsafe { Box::from_raw(*h as *mut CvarHandle) });
    *h = std::ptr::null_mut();
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_read(handle: MPI_T_cvar_handle, buf: *mut c_void) -> c_int {
    ready()?;
    let c = &cvars()[cvar_handle(handle)?.index];
    if buf.is_null() {
        return Err(err!(MPI_T_ERR_INVALID, "buf=NULL"));
    }
    let v = cvar_value(c);
    if c.int {
        let x = v.parse::<u64>().unwrap_or(0);
        // SAFETY: the buffer holds `count` (1) unsigned long long.
        unsafe { (buf as *mut u64).write_unaligned(x) };
    } else {
        let mut room = STRING_COUNT;
        put_str(buf.cast(), &mut room, &v);
    }
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_write(handle: MPI_T_cvar_handle, buf: *const c_void) -> c_int {
    ready()?;
    let c = &cvars()[cvar_handle(handle)?.index];
    if c.scope == MPI_T_SCOPE_CONSTANT {
        return Err(err!(
            MPI_T_ERR_CVAR_SET_NEVER,
            "{} is read once at start; set it in the environment",
            c.name
        ));
    }
    if crate::core::runtime::phase() != 1 {
        return Err(err!(
            MPI_T_ERR_CVAR_SET_NOT_NOW,
            "{} can be written only while MPI is initialized",
            c.name
        ));
    }
    if buf.is_null() {
        return Err(err!(MPI_T_ERR_INVALID, "buf=NULL"));
    }
    // SAFETY: the buffer holds `count` (1) unsigned long long.
    let x = unsafe { (buf as *const u64).read_unaligned() };
    match c.name.as_str() {
        "OXMPI_SPIN_US" => crate::backoff::set_phase_us(0, x),
        "OXMPI_YIELD_US" => crate::backoff::set_phase_us(1, x),
        "OXMPI_SLEEP_MAX_US" => crate::backoff::set_phase_us(2, x),
        "OXMPI_CHECK" => crate::core::profile::set_check(x != 0),
        n => return Err(err!(MPI_T_ERR_CVAR_SET_NEVER, "{n} cannot be written")),
    }
    Ok(())
}

// ---------------------------------------------------------------- performance variables

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    ready()?;
    *out_arg(num_pvar, "num_pvar")? = pvars().len() as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    ready()?;
    let p = &pvars()[index(pvars(), pvar_index, "pvar")?];
    put_str(name, name_len, &p.name);
    put(verbosity, MPI_T_VERBOSITY_USER_BASIC);
    put(var_class, p.class);
    put(datatype, p.datatype);
    put(enumtype, std::ptr::null_mut());
    put_str(desc, desc_len, &p.desc);
    put(bind, MPI_T_BIND_NO_OBJECT);
    put(readonly, p.readonly as c_int);
    put(continuous, 1);
    put(atomic, 0);
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_index(
    name: *const c_char,
    var_class: c_int,
    pvar_index: *mut c_int,
) -> c_int {
    ready()?;
    let n = name_arg(name)?;
    let i = pvars()
        .iter()
        .position(|p| p.name == n && p.class == var_class)
        .ok_or_else(|| {
            err!(
                MPI_T_ERR_INVALID_NAME,
                "no performance variable of class {var_class} is named {n:?}"
            )
        })?;
    *out_arg(pvar_index, "pvar_index")? = i as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) -> c_int {
    ready()?;
    let s = out_arg(session, "session")?;
    // A session is an address of its own (never dereferenced).
    let p = Box::into_raw(Box::new(0u8)) as *mut c_void;
    handles(|t| t.sessions.insert(p as usize));
    *s = p;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) -> c_int {
    ready()?;
    let s = out_arg(session, "session")?;
    let id = session_of(*s)?;
    // Its handles go with it.
    let mine: Vec<usize> = handles(|t| {
        t.sessions.remove(&id);
        t.pvars
            .iter()
            .copied()
            // SAFETY: every live pvar handle is a Box<PvarHandle>.
            .filter(|&h| unsafe { (*(h as *const PvarHandle)).session } == id)
            .collect()
    });
    for h in mine {
        handles(|t| t.pvars.remove(&h));
        // SAFETY: allocated by MPI_T_pvar_handle_alloc, removed from the
        // live set just now.
        drop(unsafe { Box::from_raw(h as *mut PvarHandle) });
    }
    // SAFETY: allocated by MPI_T_pvar_session_create, removed above.
    drop(unsafe { Box::from_raw(id as *mut u8) });
    *s = std::ptr::null_mut();
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_alloc(
    session: MPI_T_pvar_session,
    pvar_index: c_int,
    obj_handle: *mut c_void,
    handle: *mut MPI_T_pvar_handle,
    count: *mut c_int,
) -> c_int {
    ready()?;
    let _ = obj_handle; // every variable binds to no object
    let s = session_of(session)?;
    let i = index(pvars(), pvar_index, "pvar")?;
    let h = out_arg(handle, "handle")?;
    let n = out_arg(count, "count")?;
    let p = &pvars()[i];
    let base = match p.class {
        MPI_T_PVAR_CLASS_COUNTER | MPI_T_PVAR_CLASS_TIMER => raw(p),
        _ => 0,
    };
    let b = Box::into_raw(Box::new(PvarHandle {
        session: s,
        index: i,
        base,
        offset: 0,
    })) as *mut c_void;
    handles(|t| t.pvars.insert(b as usize));
    *h = b;
    *n = 1;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_free(
    session: MPI_T_pvar_session,
    handle: *mut MPI_T_pvar_handle,
) -> c_int {
    ready()?;
    let s = session_of(session)?;
    let h = out_arg(handle, "handle")?;
    pvar_handle(s, *h)?;
    handles(|t| t.pvars.remove(&(*h as usize)));
    // SAFETY: allocated by MPI_T_pvar_handle_alloc, removed from the live
    // set just now, so freed once.
    drop(unsafe { Box::from_raw(*h as *mut PvarHandle) });
    *h = std::ptr::null_mut();
    Ok(())
}

/// Every variable is continuous: starting or stopping one handle is an
/// error; `MPI_T_PVAR_ALL_HANDLES` (which skips continuous ones) succeeds.
fn start_stop(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, what: &str) -> Result<()> {
    ready()?;
    let s = session_of(session)?;
    if handle == all_handles() {
        return Ok(());
    }
    let p = &pvars()[pvar_handle(s, handle)?.index];
    Err(err!(
        MPI_T_ERR_PVAR_NO_STARTSTOP,
        "{} is continuous: it cannot be {what}",
        p.name
    ))
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_start(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    start_stop(session, handle, "started")
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_stop(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    start_stop(session, handle, "stopped")
}

/// The handle's value: a counter's or the timer's since its base (plus a
/// written value), a level's or a high-water mark's as it stands.
fn value(h: &PvarHandle) -> (c_int, u64) {
    let p = &pvars()[h.index];
    let now = raw(p);
    match (p.class, p.source) {
        (MPI_T_PVAR_CLASS_TIMER, _) => {
            let secs = now.saturating_sub(h.base) as f64 * 1e-9 + f64::from_bits(h.offset);
            (MPI_DOUBLE, secs.to_bits())
        }
        (MPI_T_PVAR_CLASS_COUNTER, _) => (
            MPI_UNSIGNED_LONG_LONG,
            now.saturating_sub(h.base).wrapping_add(h.offset),
        ),
        _ => (MPI_UNSIGNED_LONG_LONG, now),
    }
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_read(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
    buf: *mut c_void,
) -> c_int {
    ready()?;
    let s = session_of(session)?;
    if handle == all_handles() {
        return Err(err!(
            MPI_T_ERR_INVALID_HANDLE,
            "MPI_T_PVAR_ALL_HANDLES cannot be read"
        ));
    }
    let h = pvar_handle(s, handle)?;
    if buf.is_null() {
        return Err(err!(MPI_T_ERR_INVALID, "buf=NULL"));
    }
    let (_, bits) = value(h);
    // SAFETY: the buffer holds `count` (1) element of the variable's type,
    // 8 bytes (unsigned long long or double).
    unsafe { (buf as *mut u64).write_unaligned(bits) };
    Ok(())
}

/// Sets handle `h` to read `bits` (its type's) from now on.
fn set(h: &mut PvarHandle, bits: u64) -> Result<()> {
    let p = &pvars()[h.index];
    if p.readonly {
        return Err(err!(MPI_T_ERR_PVAR_NO_WRITE, "{} is read-only", p.name));
    }
    h.base = raw(p);
    h.offset = bits;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_write(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
    buf: *const c_void,
) -> c_int {
    ready()?;
    let s = session_of(session)?;
    if handle == all_handles() {
        return Err(err!(
            MPI_T_ERR_INVALID_HANDLE,
            "MPI_T_PVAR_ALL_HANDLES cannot be written"
        ));
    }
    let h = pvar_handle(s, handle)?;
    if buf.is_null() {
        return Err(err!(MPI_T_ERR_INVALID, "buf=NULL"));
    }
    // SAFETY: the buffer holds one element of the variable's type (8 bytes).
    let bits = unsafe { (buf as *const u64).read_unaligned() };
    set(h, bits)
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_reset(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    ready()?;
    let s = session_of(session)?;
    if handle == all_handles() {
        // Every writable handle of the session (read-only ones are skipped).
        let mine: Vec<usize> = handles(|t| t.pvars.iter().copied().collect());
        for p in mine {
            // SAFETY: every live pvar handle is a Box<PvarHandle>.
            let h = unsafe { &mut *(p as *mut PvarHandle) };
            if h.session == s && !pvars()[h.index].readonly {
                set(h, 0)?;
            }
        }
        return Ok(());
    }
    set(pvar_handle(s, handle)?, 0)
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_readreset(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
    buf: *mut c_void,
) -> c_int {
    ready()?;
    let s = session_of(session)?;
    let _ = buf;
    if handle == all_handles() {
        return Err(err!(
            MPI_T_ERR_INVALID_HANDLE,
            "MPI_T_PVAR_ALL_HANDLES cannot be read"
        ));
    }
    let p = &pvars()[pvar_handle(s, handle)?.index];
    Err(err!(
        MPI_T_ERR_PVAR_NO_ATOMIC,
        "{} cannot be read and reset atomically",
        p.name
    ))
}

// ---------------------------------------------------------------- categories

fn cat_members(cat: usize) -> (Vec<c_int>, Vec<c_int>) {
    let cv = cvars()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.category == cat)
        .map(|(i, _)| i as c_int)
        .collect();
    let pv = pvars()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.category == cat)
        .map(|(i, _)| i as c_int)
        .collect();
    (cv, pv)
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    ready()?;
    *out_arg(num_cat, "num_cat")? = CATEGORIES.len() as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    ready()?;
    let i = index(CATEGORIES, cat_index, "category")?;
    let (cv, pv) = cat_members(i);
    put_str(name, name_len, CATEGORIES[i].0);
    put_str(desc, desc_len, CATEGORIES[i].1);
    put(num_cvars, cv.len() as c_int);
    put(num_pvars, pv.len() as c_int);
    put(num_categories, 0);
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num_events(
    cat_index: c_int,
    num_events: *mut c_int,
) -> c_int {
    ready()?;
    let c = index(CATEGORIES, cat_index, "category")?;
    *out_arg(num_events, "num_events")? = event_members(c).len() as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_index(
    name: *const c_char,
    cat_index: *mut c_int,
) -> c_int {
    ready()?;
    let n = name_arg(name)?;
    let i = CATEGORIES
        .iter()
        .position(|c| c.0 == n)
        .ok_or_else(|| err!(MPI_T_ERR_INVALID_NAME, "no category is named {n:?}"))?;
    *out_arg(cat_index, "cat_index")? = i as c_int;
    Ok(())
}

/// Writes the first `len` of `v` into `indices`.
fn put_indices(v: &[c_int], len: c_int, indices: *mut c_int) -> Result<()> {
    if len < 0 {
        return Err(err!(MPI_T_ERR_INVALID, "len={len} is negative"));
    }
    let n = v.len().min(len as usize);
    if n > 0 {
        if indices.is_null() {
            return Err(err!(MPI_T_ERR_INVALID, "indices=NULL"));
        }
        // SAFETY: `indices` holds `len` >= n ints (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), indices, n) };
    }
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_cvars(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
) -> c_int {
    ready()?;
    let i = index(CATEGORIES, cat_index, "category")?;
    put_indices(&cat_members(i).0, len, indices)
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_pvars(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
) -> c_int {
    ready()?;
    let i = index(CATEGORIES, cat_index, "category")?;
    put_indices(&cat_members(i).1, len, indices)
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_categories(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
) -> c_int {
    ready()?;
    index(CATEGORIES, cat_index, "category")?;
    put_indices(&[], len, indices)
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_events(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
) -> c_int {
    ready()?;
    let c = index(CATEGORIES, cat_index, "category")?;
    put_indices(&event_members(c), len, indices)
}

/// The event types of category `c`.
fn event_members(c: usize) -> Vec<c_int> {
    (0..EVENTS.len() as c_int)
        .filter(|&i| EVENTS[i as usize].category == c)
        .collect()
}

/// The categories never change after start: the stamp is constant.
#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_changed(update_number: *mut c_int) -> c_int {
    ready()?;
    *out_arg(update_number, "update_number")? = 0;
    Ok(())
}

// ---------------------------------------------------------------- events

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    ready()?;
    *out_arg(num_sources, "num_sources")? = 1;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_info(
    source_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    ordering: *mut MPI_T_source_order,
    ticks_per_second: *mut MPI_Count,
    max_ticks: *mut MPI_Count,
    info: *mut MPI_Info,
) -> c_int {
    ready()?;
    if source_index != 0 {
        return Err(err!(
            MPI_T_ERR_INVALID_INDEX,
            "source index {source_index} is not 0"
        ));
    }
    put_str(name, name_len, "oxmpi_clock");
    put_str(
        desc,
        desc_len,
        "this process's monotonic clock, in nanoseconds",
    );
    put(ordering, MPI_T_SOURCE_ORDERED);
    put(ticks_per_second, 1_000_000_000);
    put(max_ticks, MPI_Count::MAX);
    put(info, MPI_INFO_NULL);
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_timestamp(
    source_index: c_int,
    timestamp: *mut MPI_Count,
) -> c_int {
    ready()?;
    if source_index != 0 {
        return Err(err!(
            MPI_T_ERR_INVALID_INDEX,
            "source index {source_index} is not 0"
        ));
    }
    *out_arg(timestamp, "timestamp")? = (crate::sys::now() * 1e9) as MPI_Count;
    Ok(())
}

/// An event type (`profile::ev`): its name, what it says, and its
/// elements (datatype, displacement) in the buffer `MPI_T_event_copy`
/// fills.
struct EventType {
    name: &'static str,
    desc: &'static str,
    elements: &'static [(MPI_Datatype, super::MPI_Aint)],
    category: usize,
}

const EVENTS: [EventType; ev::N] = [
    EventType {
        name: "oxmpi_unexpected_message",
        desc: "a message arrived before a matching receive was posted: the sender's rank in MPI_COMM_WORLD (int), the tag (int) and the bytes (uint64)",
        elements: &[(MPI_INT, 0), (MPI_INT, 4), (MPI_UINT64_T, 8)],
        category: 6,
    },
    EventType {
        name: "oxmpi_coll_algorithm",
        desc: "a collective chose an algorithm: the index of the performance variable that counts the choice (int; its name is oxmpi_coll_FAMILY_ALGORITHM)",
        elements: &[(MPI_INT, 0)],
        category: 2,
    },
];

/// The bytes of an instance's elements, laid out as `EVENTS` says.
fn event_bytes(inst: &ev::Instance) -> Vec<u8> {
    let mut b = Vec::with_capacity(16);
    match inst.kind {
        ev::UNEXPECTED => {
            b.extend_from_slice(&(inst.words[0] as i32).to_ne_bytes());
            b.extend_from_slice(&(inst.words[1] as i32).to_ne_bytes());
            b.extend_from_slice(&(inst.words[2] as u64).to_ne_bytes());
        }
        _ => {
            let (fam, algo) = inst.names;
            let want = format!("oxmpi_coll_{fam}_{algo}");
            let i = pvars()
                .iter()
                .position(|v| v.name == want)
                .map_or(-1, |i| i as i32);
            b.extend_from_slice(&i.to_ne_bytes());
        }
    }
    b
}

/// The instance behind a callback's handle.
fn instance<'a>(h: MPI_T_event_instance) -> Result<&'a ev::Instance> {
    if h.is_null() {
        return Err(err!(MPI_T_ERR_INVALID_HANDLE, "event_instance=NULL"));
    }
    // SAFETY: an instance handle is valid only inside the callback it was
    // given to, where it points to the raising thread's `ev::Instance`
    // (the standard's rule for the tool).
    Ok(unsafe { &*(h as *const ev::Instance) })
}

fn no_registration(h: *mut c_void) -> Error {
    err!(
        MPI_T_ERR_INVALID_HANDLE,
        "event_registration={h:p} is not a live registration"
    )
}

/// A callback safety level argument.
fn safety(level: MPI_T_cb_safety) -> Result<usize> {
    if (MPI_T_CB_REQUIRE_NONE..=MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE).contains(&level) {
        Ok(level as usize)
    } else {
        Err(err!(
            MPI_T_ERR_INVALID,
            "cb_safety={level} is not an MPI_T_CB_REQUIRE_* level"
        ))
    }
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    ready()?;
    *out_arg(num_events, "num_events")? = EVENTS.len() as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_info(
    event_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    array_of_datatypes: *mut MPI_Datatype,
    array_of_displacements: *mut super::MPI_Aint,
    num_elements: *mut c_int,
    enumtype: *mut MPI_T_enum,
    info: *mut MPI_Info,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
) -> c_int {
    ready()?;
    let e = &EVENTS[index(&EVENTS, event_index, "event")?];
    put_str(name, name_len, e.name);
    put(verbosity, MPI_T_VERBOSITY_USER_DETAIL);
    if !num_elements.is_null() {
        // SAFETY: non-NULL: the arrays' length on input (the caller's contract).
        let room = unsafe { *num_elements }.max(0) as usize;
        for (k, &(dt, disp)) in e.elements.iter().enumerate().take(room) {
            // SAFETY: each non-NULL array holds `room` entries.
            unsafe {
                if !array_of_datatypes.is_null() {
                    *array_of_datatypes.add(k) = dt;
                }
                if !array_of_displacements.is_null() {
                    *array_of_displacements.add(k) = disp;
                }
            }
        }
        put(num_elements, e.elements.len() as c_int);
    }
    put(enumtype, std::ptr::null_mut());
    put(info, MPI_INFO_NULL);
    put_str(desc, desc_len, e.desc);
    put(bind, MPI_T_BIND_NO_OBJECT);
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_index(
    name: *const c_char,
    event_index: *mut c_int,
) -> c_int {
    ready()?;
    let n = name_arg(name)?;
    let i = EVENTS
        .iter()
        .position(|e| e.name == n)
        .ok_or_else(|| err!(MPI_T_ERR_INVALID_NAME, "no event type is named {n:?}"))?;
    *out_arg(event_index, "event_index")? = i as c_int;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_alloc(
    event_index: c_int,
    obj_handle: *mut c_void,
    info: MPI_Info,
    event_registration: *mut MPI_T_event_registration,
) -> c_int {
    ready()?;
    // Every event type is bound to no object: obj_handle and info are not used.
    let _ = (obj_handle, info);
    let i = index(&EVENTS, event_index, "event")?;
    let out = out_arg(event_registration, "event_registration")?;
    *out = ev::alloc(i);
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_set_info(
    event_registration: MPI_T_event_registration,
    info: MPI_Info,
) -> c_int {
    ready()?;
    let _ = info;
    ev::with(event_registration, |_| ()).ok_or_else(|| no_registration(event_registration))
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_get_info(
    event_registration: MPI_T_event_registration,
    info_used: *mut MPI_Info,
) -> c_int {
    ready()?;
    ev::with(event_registration, |_| ()).ok_or_else(|| no_registration(event_registration))?;
    *out_arg(info_used, "info_used")? = MPI_INFO_NULL;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_register_callback(
    event_registration: MPI_T_event_registration,
    cb_safety: MPI_T_cb_safety,
    info: MPI_Info,
    user_data: *mut c_void,
    event_cb_function: *mut MPI_T_event_cb_function,
) -> c_int {
    ready()?;
    let _ = info;
    let level = safety(cb_safety)?;
    let cb = (!event_cb_function.is_null()).then(|| {
        // SAFETY: a non-NULL MPI_T_event_cb_function (the caller's contract).
        let f: ev::Callback = unsafe { std::mem::transmute(event_cb_function) };
        (f, user_data as usize)
    });
    if ev::set_callback(event_registration, level, cb) {
        Ok(())
    } else {
        Err(no_registration(event_registration))
    }
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_callback_set_info(
    event_registration: MPI_T_event_registration,
    cb_safety: MPI_T_cb_safety,
    info: MPI_Info,
) -> c_int {
    ready()?;
    let _ = info;
    safety(cb_safety)?;
    ev::with(event_registration, |_| ()).ok_or_else(|| no_registration(event_registration))
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_callback_get_info(
    event_registration: MPI_T_event_registration,
    cb_safety: MPI_T_cb_safety,
    info_used: *mut MPI_Info,
) -> c_int {
    ready()?;
    safety(cb_safety)?;
    ev::with(event_registration, |_| ()).ok_or_else(|| no_registration(event_registration))?;
    *out_arg(info_used, "info_used")? = MPI_INFO_NULL;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_free(
    event_registration: MPI_T_event_registration,
    user_data: *mut c_void,
    free_cb_function: *mut MPI_T_event_free_cb_function,
) -> c_int {
    ready()?;
    if !ev::free(event_registration) {
        return Err(no_registration(event_registration));
    }
    if !free_cb_function.is_null() {
        // SAFETY: a non-NULL MPI_T_event_free_cb_function (the caller's contract).
        let f: unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) =
            unsafe { std::mem::transmute(free_cb_function) };
        // Called here, in the tool's own call: no restriction on it.
        // SAFETY: the tool's callback with the standard's arguments.
        unsafe { f(event_registration, MPI_T_CB_REQUIRE_NONE, user_data) };
    }
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_set_dropped_handler(
    event_registration: MPI_T_event_registration,
    dropped_cb_function: *mut MPI_T_event_dropped_cb_function,
) -> c_int {
    ready()?;
    let cb = (!dropped_cb_function.is_null()).then(|| {
        // SAFETY: a non-NULL MPI_T_event_dropped_cb_function (the caller's contract).
        let f: ev::Dropped = unsafe { std::mem::transmute(dropped_cb_function) };
        f
    });
    ev::with(event_registration, |r| r.dropped_cb = cb)
        .ok_or_else(|| no_registration(event_registration))
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_read(
    event_instance: MPI_T_event_instance,
    element_index: c_int,
    buffer: *mut c_void,
) -> c_int {
    let inst = instance(event_instance)?;
    let e = &EVENTS[inst.kind];
    let k = index(e.elements, element_index, "element")?;
    let (dt, disp) = e.elements[k];
    let size = if dt == MPI_UINT64_T { 8 } else { 4 };
    let bytes = event_bytes(inst);
    let out = out_arg(buffer.cast::<u8>(), "buffer")?;
    // SAFETY: `buffer` holds one element of the element's datatype (the
    // caller's contract); `bytes` holds every element.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().add(disp as usize), out, size) };
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_copy(
    event_instance: MPI_T_event_instance,
    buffer: *mut c_void,
) -> c_int {
    let bytes = event_bytes(instance(event_instance)?);
    let out = out_arg(buffer.cast::<u8>(), "buffer")?;
    // SAFETY: `buffer` holds the event's elements at their displacements
    // (the caller's contract), `bytes.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_timestamp(
    event_instance: MPI_T_event_instance,
    event_timestamp: *mut MPI_Count,
) -> c_int {
    let inst = instance(event_instance)?;
    *out_arg(event_timestamp, "event_timestamp")? = inst.time_ns;
    Ok(())
}

#[mpi_fn(tools)]
#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_source(
    event_instance: MPI_T_event_instance,
    source_index: *mut c_int,
) -> c_int {
    instance(event_instance)?;
    // The one source: this process's monotonic clock.
    *out_arg(source_index, "source_index")? = 0;
    Ok(())
}
