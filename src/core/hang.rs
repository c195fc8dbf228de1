//! The hang report's rank side: OxMPI's `mpirun` asks every rank, with
//! SIGURG (when `--timeout` fires or it gets SIGQUIT; a signal whose
//! default is to be ignored, so a shell around a rank, or a program that is
//! no MPI program, goes on unharmed), where it waits. The
//! signal only sets a flag; a rank that is waiting inside MPI sees it at its
//! next poll (the waits call `report`) and sends, over its PMI connection,
//! the MPI call it is in and what it waits for: its posted receives
//! (communicator, source, tag), its unfinished sends, and what the wait
//! itself names (a collective's missing ranks, a receive's source). A rank
//! computing outside MPI sends nothing, which `mpirun` says. `mpirun`
//! draws the wait-for graph from the ranks' reports.
//!
//! Under another launcher (Slurm's `srun`, MPICH's Hydra: no `mpirun` of
//! ours to collect the reports) `OXMPI_HANG_REPORT=SECONDS` in the ranks'
//! environment has each rank ask itself every SECONDS / 2 (a thread that
//! sleeps and sets the flag); a rank whose wait has lasted SECONDS writes
//! its report to its own stderr, once per wait, and the launcher's
//! per-rank output carries it.

use crate::core::state::State;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::Relaxed};

/// Set by the signal; taken by the next wait that polls. Relaxed: a flag
/// on its own; a wait that misses it by a poll reports at the next.
static ASKED: AtomicBool = AtomicBool::new(false);

/// The MPI function last entered in this process (`abi::guard::enter`):
/// one store of a pointer per call, where a thread-local in a shared
/// library costs a call into the loader. Relaxed: the name is a static
/// that never changes; under MPI_THREAD_MULTIPLE the report names the call
/// any thread entered last.
static CALL: AtomicPtr<&'static str> = AtomicPtr::new(std::ptr::null_mut());

/// Communicator slots whose collective calls are counted (`coll_entered`);
/// later slots are not (the report then leaves them out).
const COLL_SLOTS: usize = 1024;

/// Per communicator slot: the collective calls this rank entered on it
/// and the last one's name. Atomics, not fields of the communicator: a
/// collective's entry point counts before taking the library's state,
/// relaxed loads and stores (the counts are read only by the report, and
/// a count that is a call behind says the same).
static COLL_CALLS: [std::sync::atomic::AtomicU64; COLL_SLOTS] =
    [const { std::sync::atomic::AtomicU64::new(0) }; COLL_SLOTS];
static COLL_LAST: [AtomicPtr<&'static str>; COLL_SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; COLL_SLOTS];

/// Slot index of communicator handle `comm` (None for a handle of no
/// communicator or a slot past the counted ones).
#[inline(always)]
fn coll_slot(comm: c_int) -> Option<usize> {
    use crate::base::consts::{MPI_COMM_SELF, MPI_COMM_WORLD};
    let i = match comm {
        MPI_COMM_WORLD => 0,
        MPI_COMM_SELF => 1,
        _ => crate::base::handles::index(comm, crate::base::handles::KIND_COMM)? as usize,
    };
    (i < COLL_SLOTS).then_some(i)
}

/// A collective entry point `name` was entered on `comm`.
#[inline(always)]
pub fn coll_entered(name: &'static &'static str, comm: c_int) {
    if let Some(i) = coll_slot(comm) {
        // Relaxed: see COLL_CALLS. A load and a store, not a locked add:
        // the standard has a communicator's collectives made one at a time.
        COLL_CALLS[i].store(COLL_CALLS[i].load(Relaxed) + 1, Relaxed);
        COLL_LAST[i].store(name as *const &'static str as *mut &'static str, Relaxed);
    }
}

/// Communicator slot `i` was given to a new communicator: its count
/// starts again.
pub fn coll_reset(i: usize) {
    if i < COLL_SLOTS {
        // Relaxed: see COLL_CALLS.
        COLL_CALLS[i].store(0, Relaxed);
        COLL_LAST[i].store(std::ptr::null_mut(), Relaxed);
    }
}

/// The collective calls counted on slot `i` and the last one's name.
fn coll_count(i: usize) -> Option<(u64, &'static str)> {
    if i >= COLL_SLOTS {
        return None;
    }
    // Relaxed: see COLL_CALLS.
    let p = COLL_LAST[i].load(Relaxed);
    // SAFETY: a non-null pointer was stored from a `&'static &'static str`.
    let last = if p.is_null() { "none" } else { unsafe { *p } };
    Some((COLL_CALLS[i].load(Relaxed), last))
}

/// Notes the MPI function being entered (`name`: its static name).
#[inline(always)]
pub fn entering(name: &'static &'static str) {
    CALL.store(name as *const &'static str as *mut &'static str, Relaxed);
}

/// The MPI function last entered in this process ("" before any).
pub fn current_call() -> &'static str {
    call()
}

/// The MPI function last entered ("" before any).
fn call() -> &'static str {
    let p = CALL.load(Relaxed);
    if p.is_null() {
        return "";
    }
    // SAFETY: every pointer `entering` stores is the address of a static
    // `&'static str` (the entry point's name), valid for the program.
    unsafe { *p }
}

extern "C" fn on_signal(_: c_int) {
    ASKED.store(true, Relaxed);
}

/// Under another launcher, the seconds a wait lasts before the rank
/// reports it on its stderr (f64 bits; 0: off), and the `waited` of the
/// last report call (a smaller one is a new wait) with whether this wait
/// was reported. Relaxed: read and written by the waiting thread; the
/// watchdog only sets ASKED.
static SELF_AFTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static SELF_SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static SELF_DONE: AtomicBool = AtomicBool::new(false);

/// Starts the self-asking thread when `OXMPI_HANG_REPORT=SECONDS` is set
/// and no `mpirun` of ours launched the job.
fn install_self() {
    let Some(secs) = std::env::var("OXMPI_HANG_REPORT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
    else {
        return;
    };
    SELF_AFTER.store(secs.to_bits(), Relaxed);
    let every = std::time::Duration::from_secs_f64(secs / 2.0);
    let _ = std::thread::Builder::new()
        .name("oxmpi-hang".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            ASKED.store(true, Relaxed);
        });
}

/// Installs the SIGURG handler at MPI_Init under OxMPI's own `mpirun`
/// (`OXMPI_JOB` set), unless the program has its own handler; under
/// another launcher, the self-report (`install_self`).
pub fn install() {
    if std::env::var_os("OXMPI_JOB").is_none() {
        install_self();
        return;
    }
    // SAFETY: sigaction with valid pointers; the handler only stores to an
    // atomic, which is async-signal-safe.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGURG, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            return;
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGURG, &sa, std::ptr::null_mut());
    }
}

/// Whether a report was asked for and not sent yet.
#[inline(always)]
pub fn asked() -> bool {
    ASKED.load(Relaxed)
}

/// Sends this rank's report if one was asked for: the call and how long
/// this wait has lasted (`waited`, seconds), then one item per thing waited
/// for (`extra` first: what the wait itself names).
/// Items are `kind key=value ...`, separated by ';'.
#[cold]
pub fn report(st: &mut State, waited: f64, extra: &[String]) {
    if !ASKED.swap(false, Relaxed) {
        return;
    }
    let call = call();
    let mut items: Vec<String> = vec![format!("call name={call} waited={waited:.3}")];
    items.extend(extra.iter().cloned());
    for (ctx, src, tag) in st.posted_keys() {
        let c = st
            .comms
            .iter()
            .flatten()
            .find(|c| c.ctx == ctx || c.ctx + 1 == ctx);
        let (label, wsrc) = match c {
            Some(c) => (label(c), if src >= 0 { c.peer_world(src) } else { src }),
            None => (format!("ctx{ctx}"), src),
        };
        items.push(format!("recv comm={label} src={src} wsrc={wsrc} tag={tag}"));
    }
    // Each communicator's collective calls so far (world's always), so
    // that mpirun can tell ranks whose collectives are out of step.
    for (i, c) in st.comms.iter().enumerate() {
        let Some(c) = c else { continue };
        if let Some((n, last)) = coll_count(i).filter(|(n, _)| c.ctx == 0 || *n > 0) {
            items.push(format!("seq comm={} n={n} name={last}", label(c)));
        }
    }
    for (_, r) in st.reqs.iter() {
        if r.kind == crate::core::request::ReqKind::Send && r.active && !r.done {
            items.push(format!("send wdest={} bytes={}", r.peer_w, r.cap));
        }
    }
    let after = f64::from_bits(SELF_AFTER.load(Relaxed));
    if after > 0.0 {
        // Relaxed: see SELF_AFTER.
        let seen = f64::from_bits(SELF_SEEN.swap(waited.to_bits(), Relaxed));
        if waited < seen {
            SELF_DONE.store(false, Relaxed);
        }
        if waited >= after && !SELF_DONE.swap(true, Relaxed) {
            say!(
                "OxMPI hang report: rank {} ({}) has waited {waited:.1} s in {}: {}",
                st.rank,
                crate::sys::hostname(),
                if call.is_empty() { "MPI" } else { call },
                items[1..].join("; ")
            );
        }
        return;
    }
    let text = items.join(";");
    st.pmi.hang_note(&text);
}

/// A communicator as the report names it.
pub fn label(c: &crate::core::comm::Comm) -> String {
    if c.ctx == 0 {
        "MPI_COMM_WORLD".into()
    } else if !c.name.is_empty() {
        c.name.replace([';', ' ', '='], "_")
    } else {
        format!("comm{}", c.ctx)
    }
}
