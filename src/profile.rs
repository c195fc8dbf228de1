//! The profile at finalize (`OXMPI_PROFILE`): per MPI function, the calls
//! of this process, the time in them, the bytes its messages carried and
//! the time it waited; per destination rank, the bytes sent there.
//!
//! Off (the default) each entry point pays one relaxed load (`on`). On,
//! `abi::guard::enter` times the outermost MPI call of a thread (`begin`,
//! `end`); the point-to-point engine adds each message's payload (`sent`),
//! to the call in progress and to its destination; `backoff` adds the time
//! from a wait's first poll in vain to its end (`wait_began`, `waited`).
//! `abi::profile` gathers every rank's record at `MPI_Finalize` and rank 0
//! prints the table. Calls `sys` only; `core` re-exports it.

use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// What diagnosis is on, decided once from the environment: `DECIDED`,
/// and `PROFILE` (`OXMPI_PROFILE`) and `CHECK` (`OXMPI_CHECK`, the
/// collective checks of `abi::check`). One byte, so that an entry point
/// with both off pays one relaxed load. Relaxed: a thread that reads it
/// before another has decided decides alike.
static DIAG: AtomicU8 = AtomicU8::new(0);
const DECIDED: u8 = 1;
/// cbindgen:ignore
pub const PROFILE: u8 = 2;
/// cbindgen:ignore
pub const CHECK: u8 = 4;
/// The check of nonblocking send buffers (`OXMPI_CHECK_BUFFERS`,
/// `abi::bufcheck`).
/// cbindgen:ignore
pub const BUFFERS: u8 = 16;
/// The tools interface's performance variables count (`MPI_T_init_thread`
/// was called: `set_tools`).
/// cbindgen:ignore
pub const TOOLS: u8 = 8;

/// The diagnosis bits (`PROFILE`, `CHECK`).
#[inline(always)]
pub fn diag() -> u8 {
    match DIAG.load(Relaxed) {
        0 => decide(),
        d => d,
    }
}

/// Turns the collective checks (`OXMPI_CHECK`) on or off from the next
/// collective (the tools interface's control variable; every rank must
/// do alike).
pub fn set_check(on: bool) {
    let d = diag();
    // Relaxed: as `set_tools`.
    if on {
        DIAG.fetch_or(d | CHECK, Relaxed);
    } else {
        DIAG.fetch_and(!CHECK, Relaxed);
    }
}

/// Whether the tools interface's counters count (`pv_add`).
#[inline(always)]
pub fn tools_on() -> bool {
    diag() & TOOLS != 0
}

/// Turns the tools interface's counters on (`MPI_T_init_thread`); they
/// stay on, so that a later session of the tool reads on from there.
pub fn set_tools() {
    let d = diag();
    // Relaxed: a flag; a thread that misses it for a moment counts a
    // message less.
    DIAG.fetch_or(d | TOOLS, Relaxed);
}

/// The counters behind the tools interface's performance variables
/// (`abi::tools`), counted only while `tools_on`.
///
/// cbindgen:ignore
pub mod pv {
    pub const SEND_SHM_MSGS: usize = 0;
    pub const SEND_SHM_BYTES: usize = 1;
    pub const SEND_UCX_MSGS: usize = 2;
    pub const SEND_UCX_BYTES: usize = 3;
    pub const SEND_SELF_MSGS: usize = 4;
    pub const SEND_SELF_BYTES: usize = 5;
    pub const EAGER: usize = 6;
    pub const RNDV: usize = 7;
    pub const RECV_MSGS: usize = 8;
    pub const RECV_BYTES: usize = 9;
    pub const UNEXPECTED: usize = 10;
    pub const UNEXPECTED_HWM: usize = 11;
    pub const WAIT_NS: usize = 12;
    pub const N: usize = 13;
}

static PV: [std::sync::atomic::AtomicU64; pv::N] =
    [const { std::sync::atomic::AtomicU64::new(0) }; pv::N];

/// Adds `n` to counter `i` (of `pv`) while the tools interface counts.
#[inline(always)]
pub fn pv_add(i: usize, n: u64) {
    if tools_on() {
        note_pv(i, n);
    }
}

#[inline(never)]
fn note_pv(i: usize, n: u64) {
    // Relaxed: counters; readers want a value, not an order.
    PV[i].fetch_add(n, Relaxed);
}

/// The unexpected queue holds `len` messages now (while counting).
#[inline(always)]
pub fn pv_level(i: usize, len: u64) {
    if tools_on() {
        // Relaxed: as `note_pv`.
        PV[i].fetch_max(len, Relaxed);
    }
}

/// Counter `i` now.
pub fn pv_get(i: usize) -> u64 {
    // Relaxed: as `note_pv`.
    PV[i].load(Relaxed)
}

/// The collective algorithms chosen while counting, by (family, name).
static ALGOS: Mutex<BTreeMap<(&'static str, &'static str), u64>> = Mutex::new(BTreeMap::new());

/// A collective of `family` chose algorithm `name`.
#[inline(always)]
pub fn algo_chosen(family: &'static str, name: &'static str) {
    if tools_on() {
        *ALGOS.lock().entry((family, name)).or_insert(0) += 1;
        ev::raise(ev::COLL_ALGO, [0; 3], (family, name));
    }
}

/// A message of `bytes` from world rank `src` with `tag` found no posted
/// receive (while the tools interface counts).
#[inline(always)]
pub fn unexpected_arrived(src: i64, tag: i64, bytes: u64) {
    if tools_on() {
        ev::raise(ev::UNEXPECTED, [src, tag, bytes as i64], ("", ""));
    }
}

/// The tools interface's events (MPI-4 `MPI_T_event_*`, `abi::tools`):
/// the event types this library raises, the registrations' callbacks, and
/// the instance a callback is handed. An event is raised only while the
/// tools interface counts (`tools_on`, after `MPI_T_init_thread`) and
/// costs one relaxed load more then when no registration of its type has
/// a callback. Callbacks run in the thread that raised the event, inside
/// an MPI call that may hold the library's state: the context of
/// `MPI_T_CB_REQUIRE_MPI_RESTRICTED` (the callback may only read the
/// event), so the callback a registration has for that level, or else for
/// the strictest level it has above, is the one called; a registration
/// with callbacks for `MPI_T_CB_REQUIRE_NONE` only misses the event and
/// counts it as dropped.
///
/// cbindgen:ignore
pub mod ev {
    use parking_lot::Mutex;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    pub const UNEXPECTED: usize = 0;
    pub const COLL_ALGO: usize = 1;
    pub const N: usize = 2;

    /// The safety level of the context events are raised in
    /// (MPI_T_CB_REQUIRE_MPI_RESTRICTED).
    pub const CONTEXT_LEVEL: usize = 1;
    /// Safety levels (MPI_T_CB_REQUIRE_NONE ... ASYNC_SIGNAL_SAFE).
    pub const LEVELS: usize = 4;

    /// One occurrence, valid while its callbacks run: the type, when
    /// (monotonic ns), three numbers and two names (the type's layout in
    /// `abi::tools` says which mean what).
    pub struct Instance {
        pub kind: usize,
        pub time_ns: i64,
        pub words: [i64; 3],
        pub names: (&'static str, &'static str),
    }

    /// `MPI_T_event_cb_function`: (instance, registration, safety level, user data).
    pub type Callback = unsafe extern "C" fn(*mut c_void, *mut c_void, i32, *mut c_void);
    /// `MPI_T_event_dropped_cb_function`: (count, registration, source
    /// index, safety level, user data).
    pub type Dropped = unsafe extern "C" fn(i64, *mut c_void, i32, i32, *mut c_void);

    /// A registration (`MPI_T_event_handle_alloc`): its type, a callback
    /// and its user data per safety level, the events it missed and the
    /// handler told of them (with the next event it gets).
    pub struct Registration {
        pub kind: usize,
        pub callbacks: [Option<(Callback, usize)>; LEVELS],
        pub dropped: u64,
        pub dropped_cb: Option<Dropped>,
        /// Its number among all registrations (a freed one's handle may
        /// come back for a new one).
        serial: u64,
    }

    /// The next registration's `serial`.
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// Live registrations (their handles: the boxes' addresses).
    static REGS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    /// Registrations with at least one callback, per type. Relaxed: a
    /// registration made while an event is raised may miss that one.
    static LIVE: [AtomicUsize; N] = [const { AtomicUsize::new(0) }; N];

    /// A new registration for type `kind`; its handle.
    pub fn alloc(kind: usize) -> *mut c_void {
        let r = Box::into_raw(Box::new(Registration {
            kind,
            callbacks: [None; LEVELS],
            dropped: 0,
            dropped_cb: None,
            // Relaxed: only distinctness matters.
            serial: SERIAL.fetch_add(1, Relaxed),
        }));
        REGS.lock().push(r as usize);
        r.cast()
    }

    /// Runs `f` on the registration behind handle `h`, if it is live.
    pub fn with<T>(h: *mut c_void, f: impl FnOnce(&mut Registration) -> T) -> Option<T> {
        let regs = REGS.lock();
        if !regs.contains(&(h as usize)) {
            return None;
        }
        // SAFETY: a live handle is a box made by `alloc` and not yet freed
        // (freeing removes it from REGS under the same lock, held here).
        Some(f(unsafe { &mut *(h as *mut Registration) }))
    }

    /// Sets (or clears) the callback of registration `h` for `level`.
    pub fn set_callback(h: *mut c_void, level: usize, cb: Option<(Callback, usize)>) -> bool {
        with(h, |r| {
            let had = r.callbacks.iter().any(|c| c.is_some());
            r.callbacks[level] = cb;
            let has = r.callbacks.iter().any(|c| c.is_some());
            // Relaxed: see LIVE.
            match (had, has) {
                (false, true) => {
                    LIVE[r.kind].fetch_add(1, Relaxed);
                }
                (true, false) => {
                    LIVE[r.kind].fetch_sub(1, Relaxed);
                }
                _ => {}
            }
        })
        .is_some()
    }

    /// Frees registration `h`; false if it is not live.
    pub fn free(h: *mut c_void) -> bool {
        let mut regs = REGS.lock();
        let Some(i) = regs.iter().position(|&x| x == h as usize) else {
            return false;
        };
        regs.swap_remove(i);
        // SAFETY: made by `alloc`, live until just now, and no longer
        // reachable through REGS.
        let r = unsafe { Box::from_raw(h as *mut Registration) };
        if r.callbacks.iter().any(|c| c.is_some()) {
            // Relaxed: see LIVE.
            LIVE[r.kind].fetch_sub(1, Relaxed);
        }
        true
    }

    /// Raises an event of type `kind`.
    #[inline(always)]
    pub fn raise(kind: usize, words: [i64; 3], names: (&'static str, &'static str)) {
        // Relaxed: see LIVE.
        if LIVE[kind].load(Relaxed) != 0 {
            deliver(kind, words, names);
        }
    }

    #[inline(never)]
    fn deliver(kind: usize, words: [i64; 3], names: (&'static str, &'static str)) {
        let mut inst = Instance {
            kind,
            time_ns: (crate::sys::now() * 1e9) as i64,
            words,
            names,
        };
        // The callbacks to call, taken under the lock and called after it
        // (a callback may read the event, which takes no lock).
        type Call = (usize, u64, usize, Option<(Dropped, u64)>);
        let calls: Vec<Call> = {
            let regs = REGS.lock();
            regs.iter()
                .filter_map(|&h| {
                    // SAFETY: live under the lock held (see `with`).
                    let r = unsafe { &mut *(h as *mut Registration) };
                    if r.kind != kind {
                        return None;
                    }
                    match (CONTEXT_LEVEL..LEVELS).find(|&l| r.callbacks[l].is_some()) {
                        Some(l) => {
                            let missed = r
                                .dropped_cb
                                .filter(|_| r.dropped > 0)
                                .map(|d| (d, std::mem::take(&mut r.dropped)));
                            Some((h, r.serial, l, missed))
                        }
                        None => {
                            r.dropped += 1;
                            None
                        }
                    }
                })
                .collect()
        };
        for (h, serial, level, missed) in calls {
            // The callback as it is now: an earlier callback of this event
            // may have freed this registration (MPI_T_event_handle_free;
            // its tool may have released what the callback uses) or
            // changed its callback; a freed one is not called.
            let now = with(h as *mut c_void, |r| {
                (r.serial == serial).then_some(r.callbacks[level]).flatten()
            });
            let Some(Some((cb, user))) = now else {
                continue;
            };
            if let Some((d, n)) = missed {
                // SAFETY: the tool's dropped handler with the standard's
                // arguments (source 0: the one source).
                unsafe {
                    d(
                        n as i64,
                        h as *mut c_void,
                        0,
                        level as i32,
                        user as *mut c_void,
                    )
                };
            }
            // SAFETY: the tool's callback with the arguments the standard
            // gives it; `inst` lives until the callbacks return.
            unsafe {
                cb(
                    (&mut inst as *mut Instance).cast(),
                    h as *mut c_void,
                    level as i32,
                    user as *mut c_void,
                )
            };
        }
    }
}

/// How often `family` chose `name` while counting.
pub fn algo_count(family: &str, name: &str) -> u64 {
    ALGOS
        .lock()
        .iter()
        .find(|((f, n), _)| *f == family && *n == name)
        .map_or(0, |(_, c)| *c)
}

/// Whether the profile is on (`OXMPI_PROFILE` set, not "0").
#[inline(always)]
pub fn on() -> bool {
    diag() & PROFILE != 0
}

#[cold]
fn decide() -> u8 {
    let set = |name: &str| {
        std::env::var(name).is_ok_and(|v| {
            let v = v.trim();
            !v.is_empty() && v != "0"
        })
    };
    let d = DECIDED
        | if target().is_some() { PROFILE } else { 0 }
        | if set("OXMPI_CHECK") { CHECK } else { 0 }
        | if set("OXMPI_CHECK_BUFFERS") {
            BUFFERS
        } else {
            0
        };
    DIAG.store(d, Relaxed);
    d
}

/// What `OXMPI_PROFILE` asks for: None (off), Some(None) (the table),
/// Some(Some(path)) (the table and a JSON file at `path`).
pub fn target() -> Option<Option<String>> {
    let v = std::env::var("OXMPI_PROFILE").ok()?;
    let v = v.trim();
    match v {
        "" | "0" => None,
        "1" => Some(None),
        p => Some(Some(p.to_string())),
    }
}

/// One function's record in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stat {
    pub calls: u64,
    pub ns: u64,
    pub bytes: u64,
    pub wait_ns: u64,
}

struct Record {
    funcs: BTreeMap<&'static str, Stat>,
    /// Bytes sent to each world rank.
    to: Vec<u64>,
}

static RECORD: Mutex<Record> = Mutex::new(Record {
    funcs: BTreeMap::new(),
    to: Vec::new(),
});

thread_local! {
    /// MPI calls this thread is inside (a call from a callback nests).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Bytes sent and time waited in the outermost call so far.
    static BYTES: Cell<u64> = const { Cell::new(0) };
    static WAIT_NS: Cell<u64> = const { Cell::new(0) };
    /// Waits this thread is inside (a wait may run another inside it).
    static WAITS: Cell<u32> = const { Cell::new(0) };
}

/// An MPI call being timed: the outermost one of its thread.
pub struct Call {
    start: f64,
    outer: bool,
}

/// Starts timing a call (profile on).
pub fn begin() -> Call {
    let outer = DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get() == 1
    });
    if outer {
        BYTES.with(|b| b.set(0));
        WAIT_NS.with(|w| w.set(0));
    }
    Call {
        start: crate::sys::now(),
        outer,
    }
}

/// Ends call `c` of function `name`: the outermost call adds its time,
/// bytes and waits to the record.
pub fn end(name: &'static str, c: Call) {
    DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    if !c.outer {
        return;
    }
    let ns = ((crate::sys::now() - c.start) * 1e9).max(0.0) as u64;
    let bytes = BYTES.with(|b| b.get());
    let wait = WAIT_NS.with(|w| w.get()).min(ns);
    let mut r = RECORD.lock();
    let s = r.funcs.entry(name).or_default();
    s.calls += 1;
    s.ns += ns;
    s.bytes += bytes;
    s.wait_ns += wait;
}

/// A message of `bytes` bytes to world rank `w` (profile on or off).
#[inline(always)]
pub fn sent(w: usize, bytes: usize) {
    if on() {
        note_sent(w, bytes);
    }
}

#[inline(never)]
fn note_sent(w: usize, bytes: usize) {
    BYTES.with(|b| b.set(b.get() + bytes as u64));
    let mut r = RECORD.lock();
    if r.to.len() <= w {
        r.to.resize(w + 1, 0);
    }
    r.to[w] += bytes as u64;
}

/// A wait began (the first poll in vain of a `Backoff`, profile on): true
/// for the outermost wait of the thread, whose time counts (`waited`).
pub fn wait_began() -> bool {
    WAITS.with(|w| {
        w.set(w.get() + 1);
        w.get() == 1
    })
}

/// A wait that `wait_began` ends after `secs` seconds; `outer` as it said.
pub fn waited(outer: bool, secs: f64) {
    WAITS.with(|w| w.set(w.get().saturating_sub(1)));
    if outer {
        let ns = (secs * 1e9).max(0.0) as u64;
        WAIT_NS.with(|w| w.set(w.get() + ns));
        pv_add(pv::WAIT_NS, ns);
    }
}

/// This process's record so far: the functions by name, and the bytes sent
/// to each of `world` ranks.
pub fn snapshot(world: usize) -> (Vec<(&'static str, Stat)>, Vec<u64>) {
    let r = RECORD.lock();
    let mut to = r.to.clone();
    to.resize(world.max(to.len()), 0);
    (r.funcs.iter().map(|(k, v)| (*k, *v)).collect(), to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_calls_count_once_with_their_bytes_and_waits() {
        let outer = begin();
        BYTES.with(|b| b.set(b.get() + 100));
        let inner = begin();
        BYTES.with(|b| b.set(b.get() + 20));
        WAIT_NS.with(|w| w.set(w.get() + 1));
        end("PROFILE_TEST_inner", inner);
        end("PROFILE_TEST_outer", outer);
        let (funcs, _) = snapshot(0);
        let get = |n: &str| funcs.iter().find(|(k, _)| *k == n).map(|(_, s)| *s);
        assert_eq!(get("PROFILE_TEST_inner"), None);
        let s = get("PROFILE_TEST_outer").unwrap();
        assert_eq!((s.calls, s.bytes, s.wait_ns), (1, 120, 1));
    }
}
