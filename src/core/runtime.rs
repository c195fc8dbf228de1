//! The process-wide runtime: one `State`, plus lock-free init/finalize flags.
//!
//! Under MPI_THREAD_MULTIPLE a coarse mutex serialises every call. At the
//! lower levels the application promises that one thread at a time calls MPI,
//! so the state is entered without a locked instruction: a locked
//! read-modify-write after the stores into a ring cell would wait for those
//! shared cache lines to arrive, about a cache-line trip per message
//! (docs/performance.md). A plain flag still turns a re-entrant call (an MPI
//! call from inside a callback the library is running) into an error.
//!
//! Blocking calls wait with `wait_for`: each round enters, drives progress,
//! tests the condition, leaves, and backs off (spin, yield, sleep), so other
//! threads of the rank can enter between rounds.

use super::error::{Error, Result};
use super::progress::Backoff;
use super::state::State;
use crate::base::consts::*;
use crate::err;
use crate::transport::Wake;
use parking_lot::lock_api::{RawMutex as _, RawMutexTimed as _};
use parking_lot::RawMutex;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

struct Runtime {
    /// Taken only when `LOCKED` is set.
    lock: RawMutex,
    /// Set while a thread is inside the state (owner of `state`).
    inside: UnsafeCell<bool>,
    state: UnsafeCell<Option<State>>,
}

// SAFETY: `state` and `inside` are touched only by the thread that entered:
// under the mutex when LOCKED is set, and otherwise by the one thread the
// application lets call MPI at a time (MPI_THREAD_SINGLE/FUNNELED/SERIALIZED);
// their happens-before edges come from the application's own synchronisation.
unsafe impl Sync for Runtime {}

static RT: Runtime = Runtime {
    lock: RawMutex::INIT,
    inside: UnsafeCell::new(false),
    state: UnsafeCell::new(None),
};

/// True under MPI_THREAD_MULTIPLE. Written only by MPI_Init* and MPI_Finalize,
/// when no other thread may be inside MPI.
static LOCKED: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// This thread holds the mutex (MPI_THREAD_MULTIPLE): a call it makes
    /// from inside a callback the library runs must fail, not wait for
    /// itself.
    static HOLDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Entry into the state; leaves on drop (also when unwinding from a panic).
struct Entered {
    locked: bool,
}

impl Entered {
    #[inline]
    fn enter() -> Option<Entered> {
        let locked = LOCKED.load(Ordering::Relaxed);
        if locked {
            if HOLDS.get() {
                return None;
            }
            RT.lock.lock();
        }
        Self::claim(locked)
    }

    #[inline]
    fn try_enter_for(d: std::time::Duration) -> Option<Entered> {
        let locked = LOCKED.load(Ordering::Relaxed);
        if locked && (HOLDS.get() || !RT.lock.try_lock_for(d)) {
            return None;
        }
        Self::claim(locked)
    }

    /// With the mutex taken (when `locked`): enters unless this thread is
    /// already inside, in which case it gives the mutex back.
    #[inline]
    fn claim(locked: bool) -> Option<Entered> {
        // SAFETY: we hold the mutex or are the only calling thread (see `Runtime`).
        let inside = unsafe { &mut *RT.inside.get() };
        if *inside {
            if locked {
                // SAFETY: taken by this thread in the caller.
                unsafe { RT.lock.unlock() };
            }
            return None;
        }
        *inside = true;
        if locked {
            HOLDS.set(true);
        }
        Some(Entered { locked })
    }

    #[inline]
    #[allow(clippy::mut_from_ref)]
    fn state(&self) -> &mut Option<State> {
        // SAFETY: entered (see `Runtime`); `inside` keeps a second entry out, so
        // this is the only reference while `self` lives.
        unsafe { &mut *RT.state.get() }
    }
}

impl Drop for Entered {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: entered by this thread.
        unsafe { *RT.inside.get() = false };
        if self.locked {
            HOLDS.set(false);
            // SAFETY: taken by this thread in `enter`.
            unsafe { RT.lock.unlock() };
        }
        if DEFERRED_ANY.load(Ordering::Relaxed) {
            run_deferred();
        }
    }
}

/// User callbacks the library met while it held its state (a generalized
/// request's free function, when the request was released), run once
/// the state is let go, so that they may call MPI.
static DEFERRED: parking_lot::Mutex<Vec<Box<dyn FnOnce() + Send>>> =
    parking_lot::Mutex::new(Vec::new());
/// Whether `DEFERRED` may hold something. Relaxed: a hint; the thread that
/// queues a callback sees its own store when it lets the state go, and the
/// queue itself is behind its mutex.
static DEFERRED_ANY: AtomicBool = AtomicBool::new(false);

/// Queues `f` to run when the calling thread lets the library's state go.
pub fn defer(f: Box<dyn FnOnce() + Send>) {
    DEFERRED.lock().push(f);
    DEFERRED_ANY.store(true, Ordering::Relaxed);
}

#[cold]
fn run_deferred() {
    loop {
        let list = {
            let mut q = DEFERRED.lock();
            DEFERRED_ANY.store(false, Ordering::Relaxed);
            std::mem::take(&mut *q)
        };
        if list.is_empty() {
            return;
        }
        for f in list {
            f();
        }
    }
}

fn reentered() -> Error {
    err!(
        MPI_ERR_OTHER,
        "MPI called from inside a callback that the library is running (a user reduction op, attribute or error handler); this call is not allowed there"
    )
}

/// 0: before MPI_Init, 1: initialised, 2: finalised.
static PHASE: AtomicU8 = AtomicU8::new(0);

pub fn phase() -> u8 {
    // Acquire: pairs with the Release stores in `set_phase`.
    PHASE.load(Ordering::Acquire)
}

pub fn set_phase(p: u8) {
    // Release: the state installed before is visible to whoever sees the phase.
    PHASE.store(p, Ordering::Release);
}

fn not_ready() -> Error {
    match phase() {
        0 => err!(
            MPI_ERR_OTHER,
            "MPI is not initialized (call MPI_Init first)"
        ),
        _ => err!(MPI_ERR_OTHER, "MPI has been finalized"),
    }
}

/// Calls take the library's mutex (MPI_THREAD_MULTIPLE); at the lower
/// levels one thread at a time is inside MPI.
#[inline]
pub fn locked() -> bool {
    // Relaxed: written only by MPI_Init* and MPI_Finalize (see `install`).
    LOCKED.load(Ordering::Relaxed)
}

/// Runs `f` on the state.
#[inline]
pub fn with<R>(f: impl FnOnce(&mut State) -> Result<R>) -> Result<R> {
    let e = Entered::enter().ok_or_else(reentered)?;
    match e.state().as_mut() {
        Some(st) => f(st),
        None => Err(not_ready()),
    }
}

/// Installs the state (MPI_Init) or takes it out (MPI_Finalize). `locked`:
/// whether calls from now on take the mutex (MPI_THREAD_MULTIPLE).
pub fn install(st: Option<State>, locked: bool) -> Option<State> {
    let e = Entered::enter().expect("install runs outside any callback");
    let old = std::mem::replace(e.state(), st);
    drop(e);
    // Relaxed: MPI_Init and MPI_Finalize run while no other thread is in MPI;
    // the phase flag's Release/Acquire pair publishes the change with the state.
    LOCKED.store(locked, Ordering::Relaxed);
    old
}

/// Waits until `f` returns Some, driving progress between tries.
#[inline]
pub fn wait_for<R>(mut f: impl FnMut(&mut State) -> Result<Option<R>>) -> Result<R> {
    let mut backoff = Backoff::new_default();
    loop {
        let wake = {
            let e = Entered::enter().ok_or_else(reentered)?;
            let st = e.state().as_mut().ok_or_else(not_ready)?;
            if let Some(r) = f(st)? {
                return Ok(r);
            }
            if st.progress() {
                if let Some(r) = f(st)? {
                    return Ok(r);
                }
            }
            if crate::core::hang::asked() {
                crate::core::hang::report(st, backoff.waited(), &[]);
            }
            // About to sleep: on UCX's event fd when there is one, armed
            // under the lock (the worker is the state's).
            if backoff.sleeps_next() {
                st.net.arm_wait()
            } else {
                Wake::Sleep
            }
        };
        match wake {
            Wake::Sleep => backoff.snooze(),
            Wake::Fd(fd) => backoff.snooze_on(fd),
            Wake::Busy => {}
        }
    }
}

/// Tries to enter for a bounded time (used on the abort path, where another
/// thread of a failing rank may hold the lock, or this thread be inside).
pub fn try_with<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    let e = Entered::try_enter_for(std::time::Duration::from_millis(500))?;
    e.state().as_mut().map(f)
}
