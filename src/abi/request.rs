//! Completion: the Wait and Test families, request lifetime (free, cancel,
//! start), and status queries.

use super::consts::*;
use super::handles::{self, KIND_REQUEST};
use super::ptr::{inp, out, out_slice, read_status, set_status_error, status_at, write_status};
use super::{MPI_Count, MPI_Datatype, MPI_Request, MPI_Status};
use crate::core::error::{Error, Result};
use crate::core::runtime::{wait_for, with};
use crate::core::state::{ReqId, ReqKind, State, Status};
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::c_int;

/// The handle of a send that completed in the call that started it (a
/// small message pushed whole by `MPI_Isend` or `MPI_Irsend`): a builtin
/// request, as MPICH hands out for such sends, so the common small send
/// takes no request from the table. Waiting on it, testing it and freeing
/// it report the empty status and set the handle to MPI_REQUEST_NULL;
/// `MPI_Request_get_status` reports it complete; cancelling it does nothing
/// (the send is complete: `MPI_Test_cancelled` says false); it is not
/// persistent, so `MPI_Start` refuses it.
pub const DONE_SEND: MPI_Request = handles::builtin(KIND_REQUEST, 1);

/// The handle of a nonblocking send completed on the eager fast path: a
/// DONE_SEND-like handle that also carries the low 24 bits of the send's
/// number, by which MPI_Cancel finds its message (`State::cancel_fast_send`).
pub fn done_send_handle(seq: u64) -> MPI_Request {
    handles::builtin(KIND_REQUEST, 2 + (seq & 0xff_ffff) as u32)
}

/// Whether `h` is DONE_SEND or a fast-path send's handle (`done_send_handle`).
#[inline]
pub fn is_done_send(h: MPI_Request) -> bool {
    let u = h as u32;
    u >> 26 == (DONE_SEND as u32) >> 26 && u & 0x03ff_ffff >= 1
}

pub fn req_index(h: MPI_Request) -> Option<ReqId> {
    handles::index(h, KIND_REQUEST)
}

enum Poll {
    Null,
    Pending,
    Done(Status, c_int),
}

#[inline]
pub(crate) fn lookup(st: &State, h: MPI_Request) -> Result<ReqId> {
    req_index(h)
        .filter(|&i| st.reqs.get(i).is_some_and(usable))
        .ok_or_else(|| bad_request(h))
}

/// `lookup` with the request itself, for a caller that changes it.
#[inline]
fn lookup_mut(
    st: &mut State,
    h: MPI_Request,
) -> Result<(ReqId, &mut crate::core::request::Request)> {
    let i = req_index(h).ok_or_else(|| bad_request(h))?;
    match st.reqs.get_mut(i) {
        Some(r) if usable(r) => Ok((i, r)),
        _ => Err(bad_request(h)),
    }
}

/// A request the user may name: not a matched message (MPI_Mprobe's) and
/// not freed.
#[inline]
fn usable(r: &crate::core::request::Request) -> bool {
    !matches!(r.kind, ReqKind::Message { .. }) && !r.user_freed
}

#[cold]
#[inline(never)]
fn bad_request(h: MPI_Request) -> Error {
    err!(
        MPI_ERR_REQUEST,
        "request=0x{:08x} is not a valid request{}",
        h as u32,
        handles::kind_hint(h, KIND_REQUEST)
    )
}

fn poll(st: &State, h: MPI_Request) -> Result<Poll> {
    if h == MPI_REQUEST_NULL {
        return Ok(Poll::Null);
    }
    if is_done_send(h) {
        return Ok(Poll::Done(Status::empty(), MPI_COMM_WORLD));
    }
    let r = st.reqs.get(lookup(st, h)?).unwrap();
    Ok(if !r.active {
        Poll::Null
    } else if r.done {
        Poll::Done(r.status, r.comm)
    } else {
        Poll::Pending
    })
}

/// Releases a completed request: a persistent one becomes inactive, others are freed
/// and the caller's handle becomes MPI_REQUEST_NULL.
fn retire(st: &mut State, h: &mut MPI_Request) {
    if is_done_send(*h) {
        *h = MPI_REQUEST_NULL;
        return;
    }
    if let Some(rid) = req_index(*h).filter(|&rid| st.reqs.get(rid).is_some()) {
        retire_rid(st, rid, h);
    }
}

/// `retire` of request `rid` (occupied), named by the caller's handle `h`.
#[inline]
fn retire_rid(st: &mut State, rid: ReqId, h: &mut MPI_Request) {
    let r = st.reqs.get_mut(rid).unwrap();
    if r.persist.is_some() || r.coll_factory.is_some() {
        r.active = false;
    } else {
        st.reqs.discard(rid);
        *h = MPI_REQUEST_NULL;
    }
}

/// Retires request `*h` if it is complete, with one lookup; returns its status
/// and communicator (the empty status for a null or inactive request), or None
/// while it is pending.
#[inline]
fn take_if_done(st: &mut State, h: &mut MPI_Request) -> Result<Option<(Status, c_int)>> {
    if *h == MPI_REQUEST_NULL {
        return Ok(Some((Status::empty(), MPI_COMM_WORLD)));
    }
    if is_done_send(*h) {
        *h = MPI_REQUEST_NULL;
        return Ok(Some((Status::empty(), MPI_COMM_WORLD)));
    }
    let (rid, r) = lookup_mut(st, *h)?;
    if !r.active {
        return Ok(Some((Status::empty(), MPI_COMM_WORLD)));
    }
    if !r.done {
        return Ok(None);
    }
    let got = (r.status, r.comm);
    if r.persist.is_some() || r.coll_factory.is_some() {
        r.active = false;
    } else {
        st.reqs.discard(rid);
        *h = MPI_REQUEST_NULL;
    }
    Ok(Some(got))
}

/// Retires request `*h`, known valid and complete (or null, or inactive);
/// returns its status and communicator.
#[inline]
fn take_done(st: &mut State, h: &mut MPI_Request) -> (Status, c_int) {
    if is_done_send(*h) {
        *h = MPI_REQUEST_NULL;
        return (Status::empty(), MPI_COMM_WORLD);
    }
    let got = req_index(*h).and_then(|rid| {
        let r = st.reqs.get(rid).filter(|r| r.active)?;
        Some((rid, r.status, r.comm))
    });
    match got {
        Some((rid, s, c)) => {
            retire_rid(st, rid, h);
            (s, c)
        }
        None => (Status::empty(), MPI_COMM_WORLD),
    }
}

fn status_error(s: &Status, comm: c_int) -> Result<()> {
    if s.error != MPI_SUCCESS {
        return Err(Error::new(s.error, super::p2p::trunc_msg(s)).on_comm(comm));
    }
    Ok(())
}

/// Waits for one request; retires it; returns its status.
///
/// # Boundary
/// `request` is valid for reads and writes.
pub fn finish_wait(request: *mut MPI_Request) -> Result<(Status, c_int)> {
    let mut h = inp(request, "request")?;
    let r = wait_for(|st| {
        Ok(match poll(st, h)? {
            Poll::Null => Some((Status::empty(), MPI_COMM_WORLD)),
            Poll::Pending => None,
            Poll::Done(s, c) => {
                retire(st, &mut h);
                Some((s, c))
            }
        })
    })?;
    out(request, "request", h)?;
    Ok(r)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    super::bufcheck::around(request, 1, || {
        let (s, comm) = finish_wait(request)?;
        write_status(status, &s, false);
        status_error(&s, comm)
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(request, 1, || {
        let mut h = inp(request, "request")?;
        if flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "flag=NULL"));
        }
        let r = with(|st| {
            let mut p = poll(st, h)?;
            if matches!(p, Poll::Pending) {
                st.progress();
                p = poll(st, h)?;
            }
            Ok(match p {
                Poll::Null => Some((Status::empty(), MPI_COMM_WORLD)),
                Poll::Pending => None,
                Poll::Done(s, c) => {
                    retire(st, &mut h);
                    Some((s, c))
                }
            })
        })?;
        out(request, "request", h)?;
        match r {
            Some((s, c)) => {
                write_status(status, &s, false);
                out(flag, "flag", 1)?;
                status_error(&s, c)
            }
            None => out(flag, "flag", 0),
        }
    })
}

/// When no request of the array is pending: retires them all and returns their
/// statuses (the empty status for null and inactive ones). Otherwise None,
/// having retired nothing (MPI_Testall).
fn retire_all(st: &mut State, reqs: &mut [MPI_Request]) -> Result<Option<Vec<(Status, c_int)>>> {
    for &h in reqs.iter() {
        if matches!(poll(st, h)?, Poll::Pending) {
            return Ok(None);
        }
    }
    // Every handle was validated by `poll` above and nothing ran since.
    let mut v = Vec::with_capacity(reqs.len());
    for h in reqs.iter_mut() {
        v.push(take_done(st, h));
    }
    Ok(Some(v))
}

fn req_slice<'a>(count: c_int, reqs: *mut MPI_Request) -> Result<&'a mut [MPI_Request]> {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    if reqs.is_null() {
        return Err(err!(
            MPI_ERR_ARG,
            "array_of_requests=NULL with count={count}"
        ));
    }
    out_slice(reqs, count as usize, "array_of_requests")
}

/// Writes the statuses of a multi-request completion; with an error among
/// them, every MPI_ERROR field is set and MPI_ERR_IN_STATUS is returned.
fn write_many(statuses: *mut MPI_Status, idx: &[usize], got: &[(Status, c_int)]) -> Result<()> {
    let failed = got.iter().find(|(s, _)| s.error != MPI_SUCCESS);
    for (k, (s, _)) in got.iter().enumerate() {
        write_status(status_at(statuses, idx[k]), s, failed.is_some());
    }
    match failed {
        Some((s, c)) => Err(in_status(s, *c)),
        None => Ok(()),
    }
}

/// MPI_ERR_IN_STATUS of a multi-request call, naming the first failure `s`
/// (of a request on `comm`).
fn in_status(s: &Status, comm: c_int) -> Error {
    Error::new(
        MPI_ERR_IN_STATUS,
        format!(
            "a request failed ({}); see the MPI_ERROR field of each status",
            super::p2p::trunc_msg(s)
        ),
    )
    .on_comm(comm)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(array_of_requests, count, || {
        let reqs = req_slice(count, array_of_requests)?;
        // Requests are retired in order as they are found complete, each polled
        // once it is reached (a wait cannot return before all are complete, so
        // retiring early changes nothing the caller can see on success). Statuses
        // are written as they come; only failures are kept, for MPI_ERR_IN_STATUS.
        let mut next = 0;
        let mut failed: Vec<(usize, Status, c_int)> = Vec::new();
        wait_for(|st| {
            while next < reqs.len() {
                let Some((s, c)) = take_if_done(st, &mut reqs[next])? else {
                    return Ok(None);
                };
                write_status(status_at(array_of_statuses, next), &s, false);
                if s.error != MPI_SUCCESS {
                    failed.push((next, s, c));
                }
                next += 1;
            }
            Ok(Some(()))
        })?;
        let Some(&(_, first, comm)) = failed.first() else {
            return Ok(());
        };
        // On MPI_ERR_IN_STATUS every status carries its MPI_ERROR field.
        let mut bad = failed.iter().peekable();
        for i in 0..reqs.len() {
            let e = match bad.peek() {
                Some(&&(k, s, _)) if k == i => {
                    bad.next();
                    s.error
                }
                _ => MPI_SUCCESS,
            };
            set_status_error(status_at(array_of_statuses, i), e);
        }
        Err(in_status(&first, comm))
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(array_of_requests, count, || {
        let reqs = req_slice(count, array_of_requests)?;
        if flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "flag=NULL"));
        }
        let got = with(|st| {
            st.progress();
            retire_all(st, reqs)
        })?;
        match got {
            None => out(flag, "flag", 0),
            Some(v) => {
                out(flag, "flag", 1)?;
                let idx: Vec<usize> = (0..reqs.len()).collect();
                write_many(array_of_statuses, &idx, &v)
            }
        }
    })
}

/// First completed request of the array: Some(Some(i, status)) or Some(None) when all are null.
fn any_done(
    st: &mut State,
    reqs: &mut [MPI_Request],
) -> Result<Option<Option<(usize, Status, c_int)>>> {
    let mut all_null = true;
    for (i, h) in reqs.iter_mut().enumerate() {
        match poll(st, *h)? {
            Poll::Null => {}
            Poll::Pending => all_null = false,
            Poll::Done(s, c) => {
                retire(st, h);
                return Ok(Some(Some((i, s, c))));
            }
        }
    }
    Ok(if all_null { Some(None) } else { None })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(array_of_requests, count, || {
        let reqs = req_slice(count, array_of_requests)?;
        if index.is_null() {
            return Err(err!(MPI_ERR_ARG, "index=NULL"));
        }
        match wait_for(|st| any_done(st, reqs))? {
            None => {
                write_status(status, &Status::empty(), false);
                out(index, "index", MPI_UNDEFINED)
            }
            Some((i, s, c)) => {
                write_status(status, &s, false);
                out(index, "index", i as c_int)?;
                status_error(&s, c)
            }
        }
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(array_of_requests, count, || {
        let reqs = req_slice(count, array_of_requests)?;
        if index.is_null() || flag.is_null() {
            return Err(err!(
                MPI_ERR_ARG,
                "{}=NULL",
                if flag.is_null() { "flag" } else { "index" }
            ));
        }
        let r = with(|st| {
            st.progress();
            any_done(st, reqs)
        })?;
        match r {
            None => {
                out(flag, "flag", 0)?;
                out(index, "index", MPI_UNDEFINED)
            }
            Some(None) => {
                write_status(status, &Status::empty(), false);
                out(flag, "flag", 1)?;
                out(index, "index", MPI_UNDEFINED)
            }
            Some(Some((i, s, c))) => {
                write_status(status, &s, false);
                out(flag, "flag", 1)?;
                out(index, "index", i as c_int)?;
                status_error(&s, c)
            }
        }
    })
}

/// All completed requests: Some(list) (possibly empty when none is done yet) or None when all are null.
fn some_done(
    st: &mut State,
    reqs: &mut [MPI_Request],
) -> Result<Option<Vec<(usize, Status, c_int)>>> {
    let mut all_null = true;
    let mut v = Vec::new();
    for (i, h) in reqs.iter_mut().enumerate() {
        match poll(st, *h)? {
            Poll::Null => {}
            Poll::Pending => all_null = false,
            Poll::Done(s, c) => {
                all_null = false;
                retire(st, h);
                v.push((i, s, c));
            }
        }
    }
    Ok(if all_null { None } else { Some(v) })
}

fn check_some_args(incount: c_int, outcount: *mut c_int, indices: *mut c_int) -> Result<()> {
    if outcount.is_null() || (incount > 0 && indices.is_null()) {
        let which = if outcount.is_null() {
            "outcount"
        } else {
            "array_of_indices"
        };
        return Err(err!(MPI_ERR_ARG, "{which}=NULL"));
    }
    Ok(())
}

fn write_some(
    done: Option<Vec<(usize, Status, c_int)>>,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> Result<()> {
    match done {
        // SAFETY: outcount checked non-NULL by the caller.
        None => out(outcount, "outcount", MPI_UNDEFINED),
        Some(v) => {
            for (k, (i, _, _)) in v.iter().enumerate() {
                // SAFETY: indices has room for incount entries; k < incount.
                unsafe { *indices.add(k) = *i as c_int };
            }
            // SAFETY: outcount checked non-NULL by the caller.
            unsafe { *outcount = v.len() as c_int };
            let idx: Vec<usize> = (0..v.len()).collect();
            let got: Vec<(Status, c_int)> = v.iter().map(|(_, s, c)| (*s, *c)).collect();
            write_many(statuses, &idx, &got)
        }
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(array_of_requests, incount, || {
        let reqs = req_slice(incount, array_of_requests)?;
        check_some_args(incount, outcount, array_of_indices)?;
        let done = wait_for(|st| {
            Ok(match some_done(st, reqs)? {
                None => Some(None),
                Some(v) if v.is_empty() => None,
                Some(v) => Some(Some(v)),
            })
        })?;
        write_some(done, outcount, array_of_indices, array_of_statuses)
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    super::bufcheck::around(array_of_requests, incount, || {
        let reqs = req_slice(incount, array_of_requests)?;
        check_some_args(incount, outcount, array_of_indices)?;
        let done = with(|st| {
            st.progress();
            some_done(st, reqs)
        })?;
        write_some(done, outcount, array_of_indices, array_of_statuses)
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if flag.is_null() {
        return Err(err!(MPI_ERR_ARG, "flag=NULL"));
    }
    let p = with(|st| {
        st.progress();
        poll(st, request)
    })?;
    match p {
        Poll::Null => {
            write_status(status, &Status::empty(), false);
            out(flag, "flag", 1)
        }
        Poll::Pending => out(flag, "flag", 0),
        Poll::Done(s, _) => {
            write_status(status, &s, false);
            out(flag, "flag", 1)
        }
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    let h = inp(request, "request")?;
    if h == MPI_REQUEST_NULL {
        return Err(err!(
            MPI_ERR_REQUEST,
            "request=MPI_REQUEST_NULL cannot be freed"
        ));
    }
    if super::bufcheck::on() {
        super::bufcheck::forget(h);
    }
    if is_done_send(h) {
        return out(request, "request", MPI_REQUEST_NULL);
    }
    with(|st| {
        let rid = lookup(st, h)?;
        let r = st.reqs.get_mut(rid).unwrap();
        if r.done || !r.active {
            st.reqs.remove(rid);
        } else {
            // Completes in the background; the slot is released then.
            r.user_freed = true;
        }
        Ok(())
    })?;
    out(request, "request", MPI_REQUEST_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    let h = inp(request, "request")?;
    if h == MPI_REQUEST_NULL {
        return Err(err!(
            MPI_ERR_REQUEST,
            "request=MPI_REQUEST_NULL cannot be cancelled"
        ));
    }
    if is_done_send(h) {
        // Complete on the fast path: its message may still wait at the
        // receiver. The cancel gets a request for the answer, which takes
        // the handle's place.
        let idx = (h as u32) & 0x03ff_ffff;
        if idx >= 2 {
            let rid = with(|st| {
                let r = st.cancel_fast_send((idx - 2) as u64);
                st.progress();
                Ok(r)
            })?;
            if let Some(rid) = rid {
                return out(request, "request", handles::make(KIND_REQUEST, rid));
            }
        }
        return Ok(());
    }
    if super::greq::cancel(h)? {
        return Ok(());
    }
    with(|st| {
        let rid = lookup(st, h)?;
        // A receive that has not matched is removed from the queues; a send
        // asks its receiver to drop the message if no receive has taken it
        // (the request completes with the answer; MPI_Test_cancelled says
        // which).
        match st.reqs.get(rid).map(|r| r.kind) {
            Some(ReqKind::Recv) => {
                st.cancel_recv(rid);
            }
            Some(ReqKind::Send) => {
                st.cancel_send(rid);
                st.progress();
            }
            _ => {}
        }
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    let s = inp(status, "status")?;
    out(flag, "flag", read_status(&s).1 as c_int)
}

fn count_of(s: &MPI_Status, datatype: MPI_Datatype, elements: bool) -> Result<i64> {
    let (size, t) = super::datatype::size_and_type(datatype)?;
    let (bytes, _) = read_status(s);
    if size == 0 {
        return Ok(0);
    }
    if !elements {
        if bytes % size as u64 != 0 {
            return Ok(MPI_UNDEFINED as i64);
        }
        return Ok((bytes / size as u64) as i64);
    }
    Ok(match t {
        Some(t) => crate::datatype::elements_in(&t, bytes as usize)
            .map(|n| n as i64)
            .unwrap_or(MPI_UNDEFINED as i64),
        None if bytes % size as u64 != 0 => MPI_UNDEFINED as i64,
        None => (bytes / size as u64) as i64 * handles::type_elements(datatype) as i64,
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut c_int,
) -> c_int {
    let s = inp(status, "status")?;
    let n = count_of(&s, datatype, false)?;
    out(
        count,
        "count",
        if n > i32::MAX as i64 {
            MPI_UNDEFINED
        } else {
            n as c_int
        },
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut c_int,
) -> c_int {
    let s = inp(status, "status")?;
    let n = count_of(&s, datatype, true)?;
    out(
        count,
        "count",
        if n > i32::MAX as i64 {
            MPI_UNDEFINED
        } else {
            n as c_int
        },
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> c_int {
    get_count_x(status, datatype, count, true)
}

/// The count (`elements`: of basic elements) a status holds, in full.
///
/// # Boundary
/// `status` and `count` are NULL or valid (checked).
pub(crate) fn get_count_x(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
    elements: bool,
) -> Result<()> {
    let s = inp(status, "status")?;
    let n = count_of(&s, datatype, elements)?;
    out(count, "count", n as MPI_Count)
}

/// Starts persistent request `h`: point-to-point under the lock; a collective's
/// schedule is built outside it (building reads communicator state through the lock).
fn start_one(h: MPI_Request) -> Result<()> {
    let factory = with(|st| {
        let rid = lookup(st, h)?;
        let r = st.reqs.get(rid).unwrap();
        match r.coll_factory.as_deref().cloned() {
            Some(f) => {
                if r.active {
                    return Err(err!(
                        MPI_ERR_REQUEST,
                        "request is already active (MPI_Start on an active persistent request)"
                    ));
                }
                Ok(Some((rid, f, r.coll_tag)))
            }
            None => super::p2p::start_persistent(st, rid).map(|_| None),
        }
    })?;
    if let Some((rid, f, tag)) = factory {
        let sched = crate::core::comm::with_pinned_tag(tag, || f())?;
        with(|st| {
            let r = st.reqs.get_mut(rid).unwrap();
            r.active = true;
            r.done = false;
            r.status = Status::empty();
            st.scheds.push(crate::core::state::Active { rid, sched });
            st.progress();
            Ok(())
        })?;
    }
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    let h = inp(request, "request")?;
    start_one(h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) -> c_int {
    let reqs = req_slice(count, array_of_requests)?;
    for &h in reqs.iter() {
        start_one(h)?;
    }
    Ok(())
}
