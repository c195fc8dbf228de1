//! Generalized requests (MPI-4.0 13.2): a request the program completes
//! itself with MPI_Grequest_complete, reported by the Wait and Test
//! families like any other. The query function runs when the request is
//! completed (its status is what the request then reports, its return code
//! the request's error); the free function when the request is released
//! (by a Wait or Test that returns it, or MPI_Request_free), outside the
//! library's lock (`core::request::Greq`); the cancel function from
//! MPI_Cancel, told whether the request is complete (and, if it is, the
//! query function runs again for the status after the cancel).

use super::consts::*;
use super::handles::{self, KIND_REQUEST};
use super::ptr::{out, read_status};
use super::request::lookup;
use super::{MPI_Request, MPI_Status};
use crate::core::error::Result;
use crate::core::request::Greq;
use crate::core::runtime::with;
use crate::core::state::{ReqKind, Request, Status};
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

type CQuery = unsafe extern "C" fn(usize, *mut MPI_Status) -> c_int;
type FQuery = unsafe extern "C" fn(*const usize, *mut MPI_Status, *mut c_int);
type CCancel = unsafe extern "C" fn(usize, c_int) -> c_int;
type FCancel = unsafe extern "C" fn(*const usize, *const c_int, *mut c_int);

/// Starts a generalized request; `fortran`: the callbacks are Fortran's.
pub(crate) fn start(
    query: usize,
    free: usize,
    cancel: usize,
    extra: usize,
    fortran: bool,
    request: *mut MPI_Request,
) -> Result<()> {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    if query == 0 || free == 0 || cancel == 0 {
        return Err(err!(
            MPI_ERR_ARG,
            "{}=NULL: a generalized request needs all three callbacks",
            if query == 0 {
                "query_fn"
            } else if free == 0 {
                "free_fn"
            } else {
                "cancel_fn"
            }
        ));
    }
    let rid = with(|st| {
        Ok(st.reqs.insert_with(|| Request {
            greq: Some(Box::new(Greq {
                query,
                free,
                cancel,
                extra,
                fortran,
            })),
            ..Request::new(ReqKind::Coll, MPI_COMM_WORLD, std::ptr::null_mut(), 0)
        }))
    })?;
    out(request, "request", handles::make(KIND_REQUEST, rid))
}

/// Runs the query function of a generalized request (outside the lock):
/// the status it gives, with its return code as the error.
fn query(query: usize, extra: usize, fortran: bool) -> Status {
    let mut s = MPI_Status {
        count_lo: 0,
        count_hi_and_cancelled: 0,
        MPI_SOURCE: MPI_UNDEFINED,
        MPI_TAG: MPI_UNDEFINED,
        MPI_ERROR: MPI_SUCCESS,
    };
    // SAFETY: `query` is the query function MPI_Grequest_start was given,
    // with the signature `fortran` says; `s` is a writable status.
    let rc = unsafe {
        if fortran {
            let mut ierr = 0;
            std::mem::transmute::<usize, FQuery>(query)(&extra, &mut s, &mut ierr);
            ierr
        } else {
            std::mem::transmute::<usize, CQuery>(query)(extra, &mut s)
        }
    };
    let (bytes, cancelled) = read_status(&s);
    Status {
        source: s.MPI_SOURCE,
        tag: s.MPI_TAG,
        error: rc,
        bytes,
        cancelled,
    }
}

/// The generalized request named by `h`: its slot and callbacks.
fn lookup_greq(h: MPI_Request) -> Result<(u32, usize, usize, usize, bool, bool)> {
    with(|st| {
        // One the program freed (MPI_Request_free) still takes
        // MPI_Grequest_complete through the handle it kept.
        let rid = super::request::req_index(h)
            .filter(|&i| st.reqs.get(i).is_some_and(|r| r.greq.is_some()))
            .map_or_else(|| lookup(st, h), Ok)?;
        let r = st.reqs.get(rid).unwrap();
        let g = r.greq.as_ref().ok_or_else(|| {
            err!(
                MPI_ERR_REQUEST,
                "request=0x{:08x} is not a generalized request",
                h as u32
            )
        })?;
        Ok((rid, g.query, g.cancel, g.extra, g.fortran, r.done))
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: *mut super::MPI_Grequest_query_function,
    free_fn: *mut super::MPI_Grequest_free_function,
    cancel_fn: *mut super::MPI_Grequest_cancel_function,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    start(
        query_fn as usize,
        free_fn as usize,
        cancel_fn as usize,
        extra_state as usize,
        false,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_complete(request: MPI_Request) -> c_int {
    let (rid, q, _, extra, fortran, done) = lookup_greq(request)?;
    if done {
        return Err(err!(
            MPI_ERR_REQUEST,
            "request=0x{:08x} was completed already (MPI_Grequest_complete called twice)",
            request as u32
        ));
    }
    let s = query(q, extra, fortran);
    with(|st| {
        if let Some(r) = st.reqs.get_mut(rid) {
            r.status = s;
            r.done = true;
            if r.user_freed {
                // Released by MPI_Request_free before it completed: the
                // free function runs now (`Greq`'s drop).
                st.reqs.remove(rid);
            }
        }
        Ok(())
    })
}

/// MPI_Cancel of a generalized request: its cancel function, told whether
/// the request is complete; a complete one is queried again.
pub(crate) fn cancel(h: MPI_Request) -> Result<bool> {
    let Ok((rid, q, c, extra, fortran, done)) = lookup_greq(h) else {
        return Ok(false);
    };
    // SAFETY: `c` is the cancel function MPI_Grequest_start was given, with
    // the signature `fortran` says.
    let rc = unsafe {
        if fortran {
            let (flag, mut ierr) = (done as c_int, 0);
            std::mem::transmute::<usize, FCancel>(c)(&extra, &flag, &mut ierr);
            ierr
        } else {
            std::mem::transmute::<usize, CCancel>(c)(extra, done as c_int)
        }
    };
    if rc != MPI_SUCCESS {
        return Err(err!(
            rc,
            "the generalized request's cancel_fn returned {rc}"
        ));
    }
    if done {
        let s = query(q, extra, fortran);
        with(|st| {
            if let Some(r) = st.reqs.get_mut(rid) {
                r.status = s;
            }
            Ok(())
        })?;
    }
    Ok(true)
}
