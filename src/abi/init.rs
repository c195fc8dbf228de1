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
    crate::gpu::init_check()?;
    let st = State::init(provided)?;
    let universe = if st.pmi.universe_size > 0 {
        st.pmi.universe_size
    } else {
        st.size
    };
    super::attr::init_predefined(universe, st.pmi.appnum.max(0));
    runtime::install(Some(st), provided == MPI_THREAD_MULTIPLE);
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
    super::attr::delete_at_finalize()?;
    wait_for(|st| Ok(st.quiescent().then_some(())))?;
    with(|st| {
        st.pmi
            .barrier()
            .map_err(|e| err!(MPI_ERR_INTERN, "PMI barrier failed: {e}"))?;
        st.net.close();
        st.pmi
            .finalize()
            .map_err(|e| err!(MPI_ERR_INTERN, "PMI finalize failed: {e}"))
    })?;
    set_phase(2);
    drop(runtime::install(None, true));
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
