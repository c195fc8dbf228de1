//! Environment: init/finalize, thread level, abort, version, clocks, and the
//! rank/size/attribute queries of MPI_COMM_WORLD and MPI_COMM_SELF.

use super::consts::*;
use super::ptr::{out, write_cstr};
use super::{MPI_Comm, MPI_Fint};
use crate::core::runtime::{self, phase, set_phase, wait_for, with};
use crate::core::state::State;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int};

/// The library version string (MPI_Get_library_version).
pub const LIBRARY_VERSION: &str = concat!(
    "OxMPI ",
    env!("CARGO_PKG_VERSION"),
    " (MPICH ABI 4.0 compatible; shared memory transport)"
);

/// Who holds the library's runtime: the world model (between MPI_Init and
/// MPI_Finalize) and the live sessions. The runtime starts with the first
/// of them and ends with the last; it cannot start again after that (the
/// process manager's connection is closed), as with MPI_Init after
/// MPI_Finalize.
static HOLDERS: std::sync::Mutex<Holders> = std::sync::Mutex::new(Holders {
    world: false,
    sessions: 0,
    ended: false,
});

struct Holders {
    world: bool,
    sessions: usize,
    ended: bool,
}

/// Starts the runtime if nothing holds it yet (`locked`: calls take the
/// library's mutex, MPI_THREAD_MULTIPLE); `required` is the thread level
/// asked for.
fn start_runtime(h: &Holders, required: c_int, locked: bool) -> crate::core::error::Result<()> {
    if h.ended {
        return Err(err!(
            MPI_ERR_OTHER,
            "MPI cannot be initialized again: it was finalized (MPI_Finalize, or the last MPI_Session_finalize)"
        ));
    }
    if h.world || h.sessions > 0 {
        return Ok(());
    }
    crate::gpu::init_check()?;
    let st = State::init(required)?;
    let universe = if st.pmi.universe_size > 0 {
        st.pmi.universe_size
    } else {
        st.size
    };
    super::attr::init_predefined(universe, st.pmi.appnum.max(0));
    runtime::install(Some(st), locked);
    crate::core::hang::install();
    Ok(())
}

/// Ends the runtime when nothing holds it any more (its callers have
/// waited for their sends to leave): every rank's PMI barrier (so no peer
/// is still sending), the links closed, PMI finalized.
fn end_runtime(h: &mut Holders) -> crate::core::error::Result<()> {
    if h.world || h.sessions > 0 {
        return Ok(());
    }
    with(|st| {
        st.pmi
            .barrier()
            .map_err(|e| err!(MPI_ERR_INTERN, "PMI barrier failed: {e}"))?;
        st.net.close();
        st.pmi
            .finalize()
            .map_err(|e| err!(MPI_ERR_INTERN, "PMI finalize failed: {e}"))
    })?;
    h.ended = true;
    drop(runtime::install(None, true));
    Ok(())
}

/// A session takes hold of the runtime (starting it, with every thread
/// level: calls take the library's mutex).
pub(crate) fn session_hold() -> crate::core::error::Result<()> {
    let mut h = HOLDERS.lock().unwrap_or_else(|p| p.into_inner());
    start_runtime(&h, MPI_THREAD_MULTIPLE, true)?;
    h.sessions += 1;
    Ok(())
}

/// A session lets go of the runtime (ending it if it was the last holder).
pub(crate) fn session_release() -> crate::core::error::Result<()> {
    let mut h = HOLDERS.lock().unwrap_or_else(|p| p.into_inner());
    h.sessions = h.sessions.saturating_sub(1);
    end_runtime(&mut h)
}

fn do_init(required: c_int) -> crate::core::error::Result<c_int> {
    if phase() != 0 {
        return Err(err!(
            MPI_ERR_OTHER,
            "MPI_Init called twice (MPI is already {})",
            if phase() == 1 {
                "initialized"
            } else {
                "finalized"
            }
        ));
    }
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        return Err(err!(
            MPI_ERR_ARG,
            "required={required} is not a thread level"
        ));
    }
    // Every level can be provided: under MPI_THREAD_MULTIPLE one library-wide
    // lock serialises the calls (core::runtime).
    let provided = required;
    let mut h = HOLDERS.lock().unwrap_or_else(|p| p.into_inner());
    start_runtime(&h, provided, provided == MPI_THREAD_MULTIPLE)?;
    h.world = true;
    // Sessions may have started the runtime at a higher level already.
    let provided = with(|st| {
        st.thread_level = st.thread_level.max(provided);
        Ok(st.thread_level)
    })?;
    set_phase(1);
    Ok(provided)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let _ = (argc, argv);
    do_init(MPI_THREAD_SINGLE)?;
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let _ = (argc, argv);
    if provided.is_null() {
        return Err(err!(MPI_ERR_ARG, "provided=NULL"));
    }
    let p = do_init(required)?;
    out(provided, "provided", p)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    if phase() != 1 {
        return Err(err!(
            MPI_ERR_OTHER,
            "MPI_Finalize without MPI_Init (or called twice)"
        ));
    }
    super::attr::delete_at_finalize()?;
    super::profile::report()?;
    wait_for(|st| Ok(st.quiescent().then_some(())))?;
    let mut h = HOLDERS.lock().unwrap_or_else(|p| p.into_inner());
    h.world = false;
    // Live sessions keep the runtime; the last one ends it.
    end_runtime(&mut h)?;
    set_phase(2);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    out(flag, "flag", (phase() >= 1) as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    out(flag, "flag", (phase() == 2) as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    let p = with(|st| Ok(st.thread_level))?;
    out(provided, "provided", p)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    let m = with(|st| Ok(st.main_thread == std::thread::current().id()))?;
    out(flag, "flag", m as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let rank = runtime::try_with(|st| st.rank).unwrap_or(0);
    // One write, so that ranks aborting together do not interleave.
    let line = format!(
        "OxMPI: MPI_Abort(comm=0x{:08x}, errorcode={errorcode}) called by rank {rank}\n",
        comm as u32
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    super::guard::abort_job(
        errorcode,
        &format!("MPI_Abort called by rank {rank} with errorcode {errorcode}"),
    );
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    out(version, "version", MPI_VERSION)?;
    out(subversion, "subversion", MPI_SUBVERSION)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(
    version: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let n = write_cstr(
        version,
        MPI_MAX_LIBRARY_VERSION_STRING as usize,
        LIBRARY_VERSION,
    )?;
    out(resultlen, "resultlen", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let n = write_cstr(
        name,
        MPI_MAX_PROCESSOR_NAME as usize,
        &crate::sys::hostname(),
    )?;
    out(resultlen, "resultlen", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Wtime() -> f64 {
    crate::sys::now()
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Wtick() -> f64 {
    crate::sys::tick()
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    let r = with(|st| Ok(st.comm(comm)?.rank))?;
    out(rank, "rank", r)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    let s = with(|st| Ok(st.comm(comm)?.size))?;
    out(size, "size", s)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_c2f(comm: MPI_Comm) -> MPI_Fint {
    comm
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_f2c(comm: MPI_Fint) -> MPI_Comm {
    comm
}

/// Open MPI's query (mpi-ext.h): 1 when device buffers may be passed to MPI
/// calls in this process (a CUDA driver is usable), else 0. May be called
/// at any time, also before MPI_Init.
#[no_mangle]
pub extern "C" fn MPIX_Query_cuda_support() -> c_int {
    crate::gpu::support_flag()
}

/// MPICH's query: `is_supported` is 1 for MPIX_GPU_SUPPORT_CUDA when a CUDA
/// driver is usable, 0 for the other GPU kinds (not built).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPIX_GPU_query_support(
    gpu_type: c_int,
    is_supported: *mut c_int,
) -> c_int {
    let v = match gpu_type {
        MPIX_GPU_SUPPORT_CUDA => crate::gpu::support_flag(),
        MPIX_GPU_SUPPORT_ZE | MPIX_GPU_SUPPORT_HIP => 0,
        _ => {
            return Err(err!(
                MPI_ERR_ARG,
                "gpu_type={gpu_type} is not MPIX_GPU_SUPPORT_CUDA, _ZE or _HIP"
            ))
        }
    };
    out(is_supported, "is_supported", v)
}
