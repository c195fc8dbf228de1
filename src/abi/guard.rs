//! The C boundary's error path: panics never cross it, errors go to the
//! error handler of the right communicator.
//!
//! `enter` runs an entry point's body. On `Err` it finds the handler: of the
//! error's own communicator, else of the call's `comm` (or `win`: a window's
//! handler) argument, else of MPI_COMM_WORLD. MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT print
//! "OxMPI error in <function>: <class>: <argument and value> (rank N)" and
//! abort the job; MPI_ERRORS_RETURN returns the class; a user handler is
//! called with the communicator and the code, without the library lock held.

use super::consts::*;
use crate::core::error::{class_name, Error, Result};
use crate::core::runtime;
use crate::core::state::ErrhFn;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set by the first panic caught at the boundary: the library's state may
/// be half updated, so every later call (but MPI_Abort) reports
/// MPI_ERR_INTERN instead of running on it.
static POISONED: AtomicBool = AtomicBool::new(false);
/// What the first panic said, for the later calls' messages.
static POISON_WHY: OnceLock<String> = OnceLock::new();

#[inline(always)]
pub fn enter(
    name: &'static &'static str,
    comm: Option<c_int>,
    f: impl FnOnce() -> Result<()>,
) -> c_int {
    let func: &'static str = name;
    // Relaxed: a flag that only ever goes from false to true; a call that
    // misses it by a moment runs as it would have before the panic.
    if POISONED.load(Ordering::Relaxed) && func != "MPI_Abort" {
        return poisoned(func, comm);
    }
    crate::core::hang::entering(name);
    use crate::core::profile::{diag, CHECK, PROFILE};
    // One copy of the body: the notes around it are calls of their own.
    let noted = (diag() & (PROFILE | CHECK) != 0).then(|| note_begin(func));
    let rc = run(func, comm, f);
    if let Some(n) = noted {
        note_end(func, n);
    }
    rc
}

/// Whether an entry point's fast path (`#[mpi_fn(fast = ...)]`) may run:
/// it runs outside the unwinding boundary when no diagnosis is on and no
/// panic poisoned the library, after the hang report's note of the call
/// (made here); its None (not for it) sends the call down the general
/// path, which does everything again. A test, not a function taking the
/// path as a closure: the closure was a call of its own, out of line, in
/// every fast call.
#[inline(always)]
pub fn fast_open(name: &'static &'static str) -> bool {
    // Relaxed: as in `enter`.
    use crate::core::profile::{diag, CHECK, PROFILE};
    if diag() & (PROFILE | CHECK) != 0 || POISONED.load(Ordering::Relaxed) {
        return false;
    }
    crate::core::hang::entering(name);
    true
}

/// A collective entry point was entered on `comm` (before its arguments
/// are checked): its communicator counts the call, for the hang report.
#[inline(always)]
pub fn coll_entered(name: &'static &'static str, comm: c_int) {
    crate::core::hang::coll_entered(name, comm);
}

/// What `note_begin` noted: the name it replaced for the collective checks
/// (`OXMPI_CHECK`), the timing of the call for the profile (`OXMPI_PROFILE`).
struct Noted(Option<&'static str>, Option<crate::core::profile::Call>);

#[cold]
#[inline(never)]
fn note_begin(func: &'static str) -> Noted {
    Noted(
        super::check::on().then(|| super::check::entering(func)),
        crate::core::profile::on().then(crate::core::profile::begin),
    )
}

#[cold]
#[inline(never)]
fn note_end(func: &'static str, n: Noted) {
    if let Some(c) = n.1 {
        crate::core::profile::end(func, c);
    }
    if let Some(p) = n.0 {
        super::check::leaving(p);
    }
}

#[inline(always)]
fn run(func: &'static str, comm: Option<c_int>, f: impl FnOnce() -> Result<()>) -> c_int {
    // The error is raised inside: what crosses the unwinding boundary is
    // the return code alone (a `Result` read back through catch_unwind's
    // slot stalled the store forwarding of every call, about 4 ns).
    let body = move || match f() {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(func, comm, e),
    };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(rc) => rc,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            let _ = POISON_WHY.set(format!("{func} panicked: {msg}"));
            POISONED.store(true, Ordering::Relaxed);
            raise(
                func,
                comm,
                Error::new(MPI_ERR_INTERN, format!("internal error (panic): {msg}")),
            )
        }
    }
}

#[cold]
#[inline(never)]
fn poisoned(func: &str, comm: Option<c_int>) -> c_int {
    let why = POISON_WHY
        .get()
        .map(String::as_str)
        .unwrap_or("a call panicked");
    raise(
        func,
        comm,
        Error::new(
            MPI_ERR_INTERN,
            format!("the library cannot be used after an internal error ({why})"),
        ),
    )
}

enum Handler {
    Fatal,
    Return,
    User(ErrhFn),
}

#[cold]
#[inline(never)]
pub fn raise(func: &str, comm: Option<c_int>, e: Error) -> c_int {
    let mut target = e.comm.or(comm).unwrap_or(MPI_COMM_WORLD);
    // A window's errors go to the window's handler (looked up before the
    // state's lock is taken: the window table has a lock of its own).
    // A session's errors go to the session's (its table has a lock of its
    // own too).
    let win_handler =
        crate::rma::errhandler_of(target).or_else(|| super::session::errhandler_of(target));
    let (handler, rank) = runtime::try_with(|st| {
        let h = match win_handler {
            Some(h) => h,
            None => {
                if st.comm(target).is_err() {
                    target = MPI_COMM_WORLD;
                }
                st.comm(target)
                    .map(|c| c.errhandler)
                    .unwrap_or(MPI_ERRORS_ARE_FATAL)
            }
        };
        let h = match h {
            MPI_ERRORS_RETURN => Handler::Return,
            MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => Handler::Fatal,
            other => match super::handles::errh_index(other)
                .and_then(|i| st.errhandlers.get(i).copied())
            {
                Some(f) => Handler::User(f),
                None => Handler::Fatal,
            },
        };
        (h, st.rank)
    })
    .unwrap_or((
        if runtime::phase() == 0 {
            Handler::Fatal
        } else {
            Handler::Return
        },
        -1,
    ));
    match handler {
        Handler::Return => e.class,
        Handler::User(f) => {
            let mut c = target;
            let mut code = e.class;
            // SAFETY: `f` was registered by MPI_Comm_create_errhandler as a C function
            // taking (MPI_Comm *, int *, ...); both pointers are valid for the call.
            unsafe { f(&mut c, &mut code) };
            e.class
        }
        Handler::Fatal => {
            let who = if rank >= 0 {
                format!("rank {rank}")
            } else {
                "before MPI_Init".to_string()
            };
            say!(
                "OxMPI error in {func}: {}: {} ({who})",
                class_name(e.class),
                e.msg
            );
            abort_job(e.class.max(1), &format!("{func}: {}", e.msg));
        }
    }
}

/// Kills the job: tells the process manager, then exits this process.
pub fn abort_job(code: c_int, why: &str) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    runtime::try_with(|st| st.pmi.abort(code, why));
    // SAFETY: _exit ends the process without running atexit handlers that could
    // block on state other threads hold.
    unsafe { libc::_exit(if code & 0xff == 0 { 1 } else { code & 0xff }) }
}
