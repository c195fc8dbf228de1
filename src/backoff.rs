//! Waiting without burning the machine (used by the core's waits and the
//! transport's setup; calls only `sys` and, with the profile or the tools
//! interface's counters on, `profile`
//! for the time waited): spin briefly, then `sched_yield`, then
//! sleep with growing intervals (OXMPI_SPIN_US, OXMPI_YIELD_US, OXMPI_SLEEP_MAX_US).
//! When ranks on the node outnumber its cores the spin phase lasts at most
//! OXMPI_OVERSUB_SPIN_US instead, so `mpirun -n 8` on 2 cores hands the CPU
//! over (almost) at once, and it adapts: a wait that ends while spinning
//! doubles the spin (up to that bound: the peer is running, as in a
//! ping-pong pair), a wait that had to yield halves it (down to
//! `ADAPT_MIN_NS`: the peer needs this core, as when 4 ranks share 2 cores
//! in a collective).

use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static SPIN_NS: AtomicU64 = AtomicU64::new(50_000);
static SPIN_MAX_NS: AtomicU64 = AtomicU64::new(50_000);
static ADAPT: AtomicBool = AtomicBool::new(false);
static YIELD_NS: AtomicU64 = AtomicU64::new(5_000_000);
static SLEEP_MAX_NS: AtomicU64 = AtomicU64::new(1_000_000);

/// Shortest adaptive spin phase.
const ADAPT_MIN_NS: u64 = 500;

/// Whether the node's ranks outnumber its CPUs, counted alike on every rank
/// (`configure`).
static OVERSUB: AtomicBool = AtomicBool::new(false);

/// Sets the phase lengths (called once at init); `adapt`: ranks outnumber
/// the CPUs this rank may use, the spin phase adapts (module doc);
/// `node_oversub`: they outnumber the node's CPUs as every rank counts them
/// (`oversubscribed`).
pub fn configure(spin_us: u64, yield_us: u64, sleep_max_us: u64, adapt: bool, node_oversub: bool) {
    // Relaxed: set once at init, before any collective.
    OVERSUB.store(node_oversub, Ordering::Relaxed);
    // Relaxed, all of them: tuning values, read by the same thread or
    // harmlessly stale in another.
    SPIN_NS.store(spin_us * 1000, Ordering::Relaxed);
    SPIN_MAX_NS.store(spin_us * 1000, Ordering::Relaxed);
    ADAPT.store(adapt, Ordering::Relaxed);
    YIELD_NS.store(yield_us * 1000, Ordering::Relaxed);
    SLEEP_MAX_NS.store(sleep_max_us * 1000, Ordering::Relaxed);
}

/// The wait's phases now, in µs: (spin, yield, longest sleep) (the tools
/// interface's control variables).
pub fn phases_us() -> (u64, u64, u64) {
    // Relaxed: tuning values (see `configure`).
    (
        SPIN_MAX_NS.load(Ordering::Relaxed) / 1000,
        YIELD_NS.load(Ordering::Relaxed) / 1000,
        SLEEP_MAX_NS.load(Ordering::Relaxed) / 1000,
    )
}

/// Sets one of the wait's phases, in µs: 0 the spin, 1 the yield, 2 the
/// longest sleep (at least 1 µs), from the next wait on.
pub fn set_phase_us(which: usize, us: u64) {
    // Relaxed: tuning values (see `configure`).
    match which {
        0 => {
            SPIN_NS.store(us * 1000, Ordering::Relaxed);
            SPIN_MAX_NS.store(us * 1000, Ordering::Relaxed);
        }
        1 => YIELD_NS.store(us * 1000, Ordering::Relaxed),
        _ => SLEEP_MAX_NS.store(us.max(1) * 1000, Ordering::Relaxed),
    }
}

/// Whether this node's ranks outnumber its cores (set at init). Counted
/// from what every rank sees alike (mpirun's `OXMPI_NODE_CPUS`, else the
/// CPUs online), not from a rank's own affinity, which a launcher may set
/// differently per rank: the collectives choose their forms by it, and
/// every rank must choose alike.
pub fn oversubscribed() -> bool {
    // Relaxed: set once by `configure` before any collective runs.
    OVERSUB.load(Ordering::Relaxed)
}

pub struct Backoff {
    start: f64,
    iters: u32,
    spinning: bool,
    sleep_ns: u64,
    /// Profile on: this wait was noted (`profile::wait_began`), and whether
    /// it is the thread's outermost.
    noted: Option<bool>,
}

impl Backoff {
    pub fn new_default() -> Backoff {
        Backoff {
            start: 0.0,
            iters: 0,
            spinning: true,
            sleep_ns: 20_000,
            noted: None,
        }
    }

    /// Seconds since this wait's first poll in vain (0 before it).
    pub fn waited(&self) -> f64 {
        if self.iters == 0 {
            0.0
        } else {
            (sys::now() - self.start).max(0.0)
        }
    }

    /// Whether the next `snooze` sleeps (past the spin and yield phases):
    /// the caller may then arm an fd to sleep on (`snooze_on`).
    #[inline]
    pub fn sleeps_next(&self) -> bool {
        !self.spinning && {
            let waited = ((sys::now() - self.start) * 1e9) as u64;
            waited >= SPIN_NS.load(Ordering::Relaxed) + YIELD_NS.load(Ordering::Relaxed)
        }
    }

    /// Called after each unsuccessful poll.
    #[inline]
    pub fn snooze(&mut self) {
        self.snooze_on(-1)
    }

    /// `snooze`, but a sleep ends early when `fd` (if not -1) turns readable.
    #[inline]
    pub fn snooze_on(&mut self, fd: i32) {
        self.iters = self.iters.wrapping_add(1);
        // While spinning, read the clock only every 64 polls.
        if self.spinning && self.iters & 63 != 1 {
            std::hint::spin_loop();
            return;
        }
        let now = sys::now();
        if self.iters == 1 {
            self.start = now;
            if crate::profile::diag() & (crate::profile::PROFILE | crate::profile::TOOLS) != 0 {
                self.noted = Some(crate::profile::wait_began());
            }
        }
        let waited = ((now - self.start) * 1e9) as u64;
        let spin = SPIN_NS.load(Ordering::Relaxed);
        if waited < spin {
            std::hint::spin_loop();
        } else if waited < spin + YIELD_NS.load(Ordering::Relaxed) {
            self.spinning = false;
            sys::yield_now();
        } else {
            self.spinning = false;
            if fd >= 0 {
                sys::wait_readable(fd, self.sleep_ns);
            } else {
                std::thread::sleep(std::time::Duration::from_nanos(self.sleep_ns));
            }
            self.sleep_ns = (self.sleep_ns * 2).min(SLEEP_MAX_NS.load(Ordering::Relaxed));
        }
    }
}

impl Drop for Backoff {
    /// The wait is over: adapts the spin phase (oversubscribed only). A wait
    /// that never polled in vain says nothing.
    fn drop(&mut self) {
        if let Some(outer) = self.noted {
            crate::profile::waited(outer, sys::now() - self.start);
        }
        // Relaxed: tuning values only (see `configure`); a lost update
        // between threads costs one wait's adaptation.
        if self.iters == 0 || !ADAPT.load(Ordering::Relaxed) {
            return;
        }
        let spin = SPIN_NS.load(Ordering::Relaxed);
        let next = if self.spinning {
            (spin * 2).min(SPIN_MAX_NS.load(Ordering::Relaxed))
        } else {
            (spin / 2).max(ADAPT_MIN_NS)
        };
        SPIN_NS.store(next, Ordering::Relaxed);
    }
}
