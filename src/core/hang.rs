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

/// Notes the MPI function being entered (`name`: its static name).
#[inline(always)]
pub fn entering(name: &'static &'static str) {
    CALL.store(name as *const &'static str as *mut &'static str, Relaxed);
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

/// Installs the SIGURG handler at MPI_Init under OxMPI's own `mpirun`
/// (`OXMPI_JOB` set), unless the program has its own handler.
pub fn install() {
    if std::env::var_os("OXMPI_JOB").is_none() {
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
    for (_, r) in st.reqs.iter() {
        if r.kind == crate::core::request::ReqKind::Send && r.active && !r.done {
            items.push(format!("send wdest={} bytes={}", r.peer_w, r.cap));
        }
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
