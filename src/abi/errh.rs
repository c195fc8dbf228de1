//! Error classes, strings and error handlers.

use super::consts::*;
use super::handles::{self, KIND_ERRHANDLER};
use super::ptr::{inp, out, write_cstr};
use super::{MPI_Comm, MPI_Comm_errhandler_function, MPI_Errhandler};
use crate::core::error::class_string;
use crate::core::runtime::with;
use crate::core::state::ErrhFn;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int};

fn valid_class(code: c_int) -> bool {
    class_string(code).is_some()
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    if !valid_class(errorcode) {
        return Err(err!(
            MPI_ERR_ARG,
            "errorcode={errorcode} is not an error code"
        ));
    }
    out(errorclass, "errorclass", errorcode)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(
    errorcode: c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let s = class_string(errorcode)
        .ok_or_else(|| err!(MPI_ERR_ARG, "errorcode={errorcode} is not an error code"))?;
    let n = write_cstr(string, MPI_MAX_ERROR_STRING as usize, s)?;
    out(resultlen, "resultlen", n)
}

fn check_errhandler(
    st: &crate::core::state::State,
    h: MPI_Errhandler,
) -> crate::core::error::Result<()> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
        MPI_ERRHANDLER_NULL => Err(err!(MPI_ERR_ARG, "errhandler=MPI_ERRHANDLER_NULL")),
        _ => match handles::errh_index(h) {
            Some(i) if st.errhandlers.get(i).is_some() => Ok(()),
            _ => Err(err!(
                MPI_ERR_ARG,
                "errhandler=0x{:08x} is not a valid error handler{}",
                h as u32,
                handles::kind_hint(h, KIND_ERRHANDLER)
            )),
        },
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_errhandler(
    comm: MPI_Comm,
    errhandler: MPI_Errhandler,
) -> c_int {
    with(|st| {
        st.comm(comm)?;
        check_errhandler(st, errhandler)?;
        st.comm_mut(comm)?.errhandler = errhandler;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let h = with(|st| Ok(st.comm(comm)?.errhandler))?;
    out(errhandler, "errhandler", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(
    comm_errhandler_fn: *mut MPI_Comm_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    if comm_errhandler_fn.is_null() {
        return Err(err!(MPI_ERR_ARG, "comm_errhandler_fn=NULL"));
    }
    // SAFETY: a non-NULL MPI_Comm_errhandler_function pointer is a C function
    // taking (MPI_Comm *, int *, ...); the first two arguments are all it reads.
    let f: ErrhFn =
        std::mem::transmute::<*mut MPI_Comm_errhandler_function, ErrhFn>(comm_errhandler_fn);
    let idx = with(|st| Ok(st.errhandlers.insert(f)))?;
    out(
        errhandler,
        "errhandler",
        handles::make(KIND_ERRHANDLER, idx),
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    let h = inp(errhandler, "errhandler")?;
    with(|st| {
        match h {
            // Freeing a predefined handler only nulls the caller's handle.
            MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
            _ => {
                check_errhandler(st, h)?;
                // Communicators still using it keep a valid copy of the function:
                // the slot is only released when no communicator refers to it.
                if !st.comms.iter().flatten().any(|c| c.errhandler == h) {
                    st.errhandlers.remove(handles::errh_index(h).unwrap());
                }
                Ok(())
            }
        }
    })?;
    out(errhandler, "errhandler", MPI_ERRHANDLER_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    with(|st| st.comm(comm).map(|_| ()))?;
    // The handler runs through the same path as a library error; for
    // MPI_ERRORS_RETURN the call itself succeeds.
    let e = crate::core::error::Error::new(
        errorcode,
        format!("MPI_Comm_call_errhandler(errorcode={errorcode})"),
    );
    super::guard::raise("MPI_Comm_call_errhandler", Some(comm), e);
    Ok(())
}
