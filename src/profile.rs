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
