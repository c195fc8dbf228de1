//! Error classes, strings and error handlers.

use super::consts::*;
use super::handles::{self, KIND_ERRHANDLER};
use super::ptr::{cstr, inp, out, write_cstr};
use super::{MPI_Comm, MPI_Comm_errhandler_function, MPI_Errhandler};
use crate::core::error::{class_string, Result};
use crate::core::runtime::with;
use crate::core::state::ErrhFn;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int};

/// Error classes and codes added by the application (`MPI_Add_error_class`,
/// `MPI_Add_error_code`): value `FIRST_USER_ERROR + i` is entry i, with the
/// class it belongs to (itself, for a class) and its string. Values grow
/// from above MPI_ERR_LASTCODE and are never reused; MPI_LASTUSEDCODE
/// follows the largest.
struct UserError {
    class: c_int,
    text: String,
}
static USER_ERRORS: parking_lot::Mutex<Vec<UserError>> = parking_lot::Mutex::new(Vec::new());
const FIRST_USER_ERROR: c_int = MPI_ERR_LASTCODE + 1;

fn user_error(code: c_int) -> Option<(c_int, String)> {
    let i = usize::try_from(code.checked_sub(FIRST_USER_ERROR)?).ok()?;
    USER_ERRORS.lock().get(i).map(|e| (e.class, e.text.clone()))
}

fn add_user_error(class: Option<c_int>) -> Result<c_int> {
    let mut v = USER_ERRORS.lock();
    let code = c_int::try_from(v.len())
        .ok()
        .and_then(|i| FIRST_USER_ERROR.checked_add(i))
        .ok_or_else(|| err!(MPI_ERR_OTHER, "no error codes are left to add"))?;
    v.push(UserError {
        class: class.unwrap_or(code),
        text: String::new(),
    });
    crate::abi::attr::ATTR_LASTUSED.store(code, std::sync::atomic::Ordering::Relaxed);
    Ok(code)
}

/// The error classes: every value MPICH keeps for classes (0-127: the
/// standard's, MPI_T_'s, its MPIX_ ones and those between, which MPICH
/// answers for too), MPI_ERR_LASTCODE, and the added ones. The library's
/// own error codes are its classes.
fn valid_class(code: c_int) -> bool {
    (0..=127).contains(&code) || code == MPI_ERR_LASTCODE || user_error(code).is_some()
}

/// A new error class, above every predefined one.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    if errorclass.is_null() {
        return Err(err!(MPI_ERR_ARG, "errorclass=NULL"));
    }
    let c = add_user_error(None)?;
    out(errorclass, "errorclass", c)
}

/// A new error code of `errorclass` (predefined or added).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    let is_class = class_string(errorclass).is_some()
        || user_error(errorclass).is_some_and(|(c, _)| c == errorclass);
    if !is_class {
        return Err(err!(
            MPI_ERR_ARG,
            "errorclass={errorclass} is not an error class"
        ));
    }
    if errorcode.is_null() {
        return Err(err!(MPI_ERR_ARG, "errorcode=NULL"));
    }
    let c = add_user_error(Some(errorclass))?;
    out(errorcode, "errorcode", c)
}

/// The string of an added class or code (predefined ones keep theirs).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    if class_string(errorcode).is_some() {
        return Err(err!(
            MPI_ERR_ARG,
            "errorcode={errorcode} is predefined; its string cannot change"
        ));
    }
    let text = cstr(string, "string")?;
    if text.len() >= MPI_MAX_ERROR_STRING as usize {
        return Err(err!(
            MPI_ERR_ARG,
            "string of {} bytes: at most {} fit",
            text.len(),
            MPI_MAX_ERROR_STRING - 1
        ));
    }
    let i = errorcode
        .checked_sub(FIRST_USER_ERROR)
        .and_then(|i| usize::try_from(i).ok());
    let mut v = USER_ERRORS.lock();
    match i.and_then(|i| v.get_mut(i)) {
        Some(e) => {
            e.text = text;
            Ok(())
        }
        None => Err(err!(
            MPI_ERR_ARG,
            "errorcode={errorcode} is not an error code"
        )),
    }
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
    let class = user_error(errorcode).map_or(errorcode, |(c, _)| c);
    out(errorclass, "errorclass", class)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(
    errorcode: c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let other;
    let s = match class_string(errorcode) {
        Some(s) => s,
        None if valid_class(errorcode) && user_error(errorcode).is_none() => {
            other = format!("error class {errorcode}: no error of this library has this class");
            &other
        }
        None => {
            other = user_error(errorcode)
                .ok_or_else(|| err!(MPI_ERR_ARG, "errorcode={errorcode} is not an error code"))?
                .1;
            &other
        }
    };
    let n = write_cstr(string, MPI_MAX_ERROR_STRING as usize, s)?;
    out(resultlen, "resultlen", n)
}

pub(crate) fn check_errhandler(
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
    let f: ErrhFn = unsafe {
        std::mem::transmute::<*mut MPI_Comm_errhandler_function, ErrhFn>(comm_errhandler_fn)
    };
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
    // Asked before the state is entered: a window is held apart from it.
    let on_win = crate::rma::uses_errhandler(h) || super::session::uses_errhandler(h);
    with(|st| {
        match h {
            // Freeing a predefined handler only nulls the caller's handle.
            MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
            _ => {
                check_errhandler(st, h)?;
                // Communicators still using it keep a valid copy of the function:
                // the slot is only released when no communicator refers to it.
                if !st.comms.iter().flatten().any(|c| c.errhandler == h) && !on_win {
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
