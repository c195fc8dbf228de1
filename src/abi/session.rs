//! Sessions (MPI-4.0 11.3): a way into MPI without MPI_Init. A session
//! holds the library's runtime (started by the first session or MPI_Init,
//! ended by the last of them: `init::session_hold`), names the process sets
//! `mpi://WORLD` and `mpi://SELF`, makes groups of them, from which
//! `MPI_Comm_create_from_group` makes communicators; it has an error
//! handler of its own, which takes the errors of the calls naming it.

use super::consts::*;
use super::ptr::{cstr, inp, out};
use super::{MPI_Errhandler, MPI_Group, MPI_Info, MPI_Session};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::core::slab::Slab;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int};

/// Handle kind of sessions (MPICH's: MPI_SESSION_NULL is 0x38000000).
pub const KIND_SESSION: u32 = 0xe;

struct Session {
    errhandler: c_int,
    thread_level: c_int,
}

static SESSIONS: parking_lot::Mutex<Slab<Session>> = parking_lot::Mutex::new(Slab::new());

fn bad(h: MPI_Session) -> crate::core::error::Error {
    err!(
        MPI_ERR_SESSION,
        "session=0x{:08x} is not a valid session{}",
        h as u32,
        if h == MPI_SESSION_NULL {
            " (it is MPI_SESSION_NULL)"
        } else {
            ""
        }
    )
}

fn index(h: MPI_Session) -> Result<u32> {
    super::handles::index(h, KIND_SESSION)
        .filter(|&i| SESSIONS.lock().get(i).is_some())
        .ok_or_else(|| bad(h))
}

/// The error handler of session `h`, if `h` is a live session (for the
/// guard, which routes a call's errors to it).
pub(crate) fn errhandler_of(h: c_int) -> Option<c_int> {
    let i = super::handles::index(h, KIND_SESSION)?;
    SESSIONS.lock().get(i).map(|s| s.errhandler)
}

/// Whether a live session uses error handler `h` (which then outlives
/// MPI_Errhandler_free, as a communicator's does).
pub(crate) fn uses_errhandler(h: c_int) -> bool {
    SESSIONS.lock().iter().any(|(_, s)| s.errhandler == h)
}

fn level_name(l: c_int) -> &'static str {
    match l {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// The process sets every session knows, in order.
const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The process set `name` names (case-insensitive, as URIs' schemes).
fn pset(name: &str) -> Result<usize> {
    PSETS
        .iter()
        .position(|p| p.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            err!(
                MPI_ERR_ARG,
                "pset_name=\"{name}\" is not a process set (there are mpi://WORLD and mpi://SELF)"
            )
        })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    if session.is_null() {
        return Err(err!(MPI_ERR_ARG, "session=NULL"));
    }
    // The thread level asked for ("thread_level"): every level is given.
    let kv = if info == MPI_INFO_NULL {
        Vec::new()
    } else {
        crate::core::info::get(info)?
    };
    let asked = kv
        .iter()
        .find(|(k, _)| k == "thread_level")
        .map(|e| e.1.clone());
    let level = match asked.as_deref().map(str::trim) {
        None | Some("MPI_THREAD_MULTIPLE") => MPI_THREAD_MULTIPLE,
        Some("MPI_THREAD_SINGLE") => MPI_THREAD_SINGLE,
        Some("MPI_THREAD_FUNNELED") => MPI_THREAD_FUNNELED,
        Some("MPI_THREAD_SERIALIZED") => MPI_THREAD_SERIALIZED,
        Some(v) => {
            return Err(err!(
                MPI_ERR_ARG,
                "info key thread_level=\"{v}\" is not a thread level"
            ))
        }
    };
    let eh = if errhandler == MPI_ERRHANDLER_NULL {
        MPI_ERRORS_ARE_FATAL
    } else {
        errhandler
    };
    super::init::session_hold()?;
    if eh != MPI_ERRORS_ARE_FATAL {
        if let Err(e) = with(|st| super::errh::check_errhandler(st, eh)) {
            super::init::session_release()?;
            return Err(e);
        }
    }
    // The runtime a session starts is locked (every level); one MPI_Init
    // started may be at a lower level, which the session then reports.
    let have = with(|st| Ok(st.thread_level))?;
    let i = SESSIONS.lock().insert(Session {
        errhandler: eh,
        thread_level: if crate::core::runtime::locked() {
            level
        } else {
            level.min(have)
        },
    });
    out(session, "session", super::handles::make(KIND_SESSION, i))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    let h = inp(session, "session")?;
    let i = index(h)?;
    crate::core::runtime::wait_for(|st| Ok(st.quiescent().then_some(())))?;
    SESSIONS.lock().remove(i);
    super::init::session_release()?;
    out(session, "session", MPI_SESSION_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(
    session: MPI_Session,
    info: MPI_Info,
    npset_names: *mut c_int,
) -> c_int {
    let _ = info;
    index(session)?;
    out(npset_names, "npset_names", PSETS.len() as c_int)
}

/// MPI-4.0 11.3.2: with *pset_len 0 the length the name needs (with its
/// terminating NUL) is returned in it; otherwise the name is copied,
/// truncated to *pset_len - 1 characters.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    session: MPI_Session,
    info: MPI_Info,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    let _ = info;
    index(session)?;
    let Some(name) = usize::try_from(n).ok().and_then(|n| PSETS.get(n)) else {
        return Err(err!(
            MPI_ERR_ARG,
            "n={n} is not a process set number (0..{})",
            PSETS.len()
        ));
    };
    let len = inp(pset_len, "pset_len")?;
    if len <= 0 {
        return out(pset_len, "pset_len", name.len() as c_int + 1);
    }
    if pset_name.is_null() {
        return Err(err!(MPI_ERR_ARG, "pset_name=NULL"));
    }
    super::ptr::write_cstr(pset_name, len as usize, name).map(|_| ())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    session: MPI_Session,
    pset_name: *const c_char,
    info: *mut MPI_Info,
) -> c_int {
    index(session)?;
    let p = pset(&cstr(pset_name, "pset_name")?)?;
    let size = if p == 0 { with(|st| Ok(st.size))? } else { 1 };
    let h = crate::core::info::insert(vec![("mpi_size".into(), size.to_string())]);
    out(info, "info", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(
    session: MPI_Session,
    info_used: *mut MPI_Info,
) -> c_int {
    let i = index(session)?;
    let level = SESSIONS
        .lock()
        .get(i)
        .map_or(MPI_THREAD_SINGLE, |s| s.thread_level);
    let h = crate::core::info::insert(vec![
        ("thread_level".into(), level_name(level).into()),
        ("mpi_memory_alloc_kinds".into(), crate::gpu::alloc_kinds()),
    ]);
    out(info_used, "info_used", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    session: MPI_Session,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> c_int {
    index(session)?;
    let p = pset(&cstr(pset_name, "pset_name")?)?;
    let h = with(|st| {
        let members: Vec<i32> = if p == 0 {
            (0..st.size).collect()
        } else {
            vec![st.rank]
        };
        Ok(st.add_group(members))
    })?;
    out(newgroup, "newgroup", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_create_errhandler(
    session_errhandler_fn: *mut super::MPI_Session_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    // The same kind of handler as a communicator's: (handle *, code *, ...).
    super::errh::__oxmpi_body_MPI_Comm_create_errhandler(session_errhandler_fn, errhandler)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_set_errhandler(
    session: MPI_Session,
    errhandler: MPI_Errhandler,
) -> c_int {
    let i = index(session)?;
    with(|st| super::errh::check_errhandler(st, errhandler))?;
    if let Some(s) = SESSIONS.lock().get_mut(i) {
        s.errhandler = errhandler;
    }
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_errhandler(
    session: MPI_Session,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let i = index(session)?;
    let eh = SESSIONS
        .lock()
        .get(i)
        .map_or(MPI_ERRORS_ARE_FATAL, |s| s.errhandler);
    out(errhandler, "errhandler", eh)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_call_errhandler(
    session: MPI_Session,
    errorcode: c_int,
) -> c_int {
    index(session)?;
    let e = crate::core::error::Error::new(
        errorcode,
        format!("MPI_Session_call_errhandler(errorcode={errorcode})"),
    );
    super::guard::raise("MPI_Session_call_errhandler", Some(session), e);
    Ok(())
}
