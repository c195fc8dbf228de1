//! The process-wide runtime: one `State` behind one mutex (a coarse lock that
//! makes MPI_THREAD_MULTIPLE correct), plus lock-free init/finalize flags.
//!
//! Blocking calls wait with `wait_for`: each round takes the lock, drives
//! progress, tests the condition, releases the lock, and backs off (spin,
//! yield, sleep), so other threads of the rank can enter between rounds.

use super::error::{Error, Result};
use super::progress::Backoff;
use super::state::State;
use crate::abi::consts::*;
use crate::err;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

static STATE: Mutex<Option<State>> = Mutex::new(None);

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

/// Runs `f` on the state under the lock.
#[inline]
pub fn with<R>(f: impl FnOnce(&mut State) -> Result<R>) -> Result<R> {
    let mut g = STATE.lock();
    match g.as_mut() {
        Some(st) => f(st),
        None => Err(not_ready()),
    }
}

/// Installs the state (MPI_Init) or takes it out (MPI_Finalize).
pub fn install(st: Option<State>) -> Option<State> {
    std::mem::replace(&mut *STATE.lock(), st)
}

/// Waits until `f` returns Some, driving progress between tries.
#[inline]
pub fn wait_for<R>(mut f: impl FnMut(&mut State) -> Result<Option<R>>) -> Result<R> {
    let mut backoff = Backoff::new_default();
    loop {
        {
            let mut g = STATE.lock();
            let st = g.as_mut().ok_or_else(not_ready)?;
            if let Some(r) = f(st)? {
                return Ok(r);
            }
            if st.progress() {
                if let Some(r) = f(st)? {
                    return Ok(r);
                }
            }
        }
        backoff.snooze();
    }
}

/// Tries to get the lock for a bounded time (used on the abort path, where
/// another thread of a failing rank may hold it).
pub fn try_with<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    let mut g = STATE.try_lock_for(std::time::Duration::from_millis(500))?;
    g.as_mut().map(f)
}
