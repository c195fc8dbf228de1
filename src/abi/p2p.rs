//! Point-to-point entry points: send modes, receives, probes, persistent
//! requests and the buffered-send pool.

use super::consts::*;
use super::datatype::{describe, Desc};
use super::handles::{self, KIND_REQUEST};
use super::ptr::{inp, out, out_slice, write_status};
use super::request::req_index;
use super::{MPI_Comm, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
use crate::core::error::Result;
use crate::core::runtime::{wait_for, with};
use crate::core::state::{
    Bsend, Persist, RecvNow, ReqId, ReqKind, Request, SendMode, Staged, State, Status,
};
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

pub const TAG_UB: c_int = i32::MAX;

fn comm_desc(st: &State, comm: MPI_Comm) -> String {
    st.comm(comm)
        .map(|c| format!("{} (size {})", c.name, c.peer_size()))
        .unwrap_or_default()
}

/// Validates (buf, count, datatype); for a non-contiguous type also returns
/// the staging area: packed data for a send, a landing buffer for a receive.
fn prepare(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    recv: bool,
) -> Result<(*mut u8, usize, Option<Box<Staged>>)> {
    let d = describe(buf, count, datatype, "buf")?;
    staging(d, buf, count, recv)
}

/// The staging area of an already validated buffer (see `prepare`).
fn staging(
    d: Desc,
    buf: *const c_void,
    count: c_int,
    recv: bool,
) -> Result<(*mut u8, usize, Option<Box<Staged>>)> {
    match d.staged {
        None => Ok((d.ptr, d.bytes, None)),
        // SAFETY: `describe` validated `count` elements of `t` at `buf`.
        Some(t) => unsafe {
            crate::core::staging::stage(&t, count as usize, buf as *mut u8, d.bytes, recv, d.kind)
        },
    }
}

/// What memory a request moves: its buffer's, or the host's where the
/// buffer is staged (device memory always is).
fn moved_kind(d: &Desc) -> crate::gpu::MemKind {
    if d.staged.is_some() {
        crate::gpu::MemKind::Host
    } else {
        d.kind
    }
}

fn check_dest(st: &State, comm: MPI_Comm, dest: c_int, tag: c_int) -> Result<()> {
    let c = st.comm(comm)?;
    if dest != MPI_PROC_NULL && (dest < 0 || dest >= c.peer_size()) {
        return Err(err!(
            MPI_ERR_RANK,
            "dest={dest} is not a rank of {}",
            comm_desc(st, comm)
        ));
    }
    if !(0..=TAG_UB).contains(&tag) {
        return Err(err!(
            MPI_ERR_TAG,
            "tag={tag} must be in 0..={TAG_UB} for a send"
        ));
    }
    Ok(())
}

fn check_source(st: &State, comm: MPI_Comm, source: c_int, tag: c_int) -> Result<()> {
    let c = st.comm(comm)?;
    if source != MPI_PROC_NULL
        && source != MPI_ANY_SOURCE
        && (source < 0 || source >= c.peer_size())
    {
        return Err(err!(
            MPI_ERR_RANK,
            "source={source} is not a rank of {}",
            comm_desc(st, comm)
        ));
    }
    if tag != MPI_ANY_TAG && !(0..=TAG_UB).contains(&tag) {
        return Err(err!(
            MPI_ERR_TAG,
            "tag={tag} must be MPI_ANY_TAG or in 0..={TAG_UB}"
        ));
    }
    Ok(())
}

/// What the eager fast path of a send did.
enum Fast {
    /// The message went out and the send is complete (with its request, if
    /// one was asked for).
    Sent(Option<ReqId>),
    /// Nothing: the send takes the general path.
    General,
}

/// The eager fast path (`State::try_send_now`) for a contiguous standard or
/// ready send, in one entry into the state; `request`: make the completed
/// request of a nonblocking send.
#[inline]
fn send_now(
    d: &Desc,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
    request: bool,
) -> Result<Fast> {
    send_now_as(d, dest, tag, comm, mode, request, None)
}

/// `send_now`; `seq`: remember the message for MPI_Cancel (the send's
/// handle names it: `done_send_handle`), and return its number there.
#[inline]
fn send_now_as(
    d: &Desc,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
    request: bool,
    seq: Option<&mut u64>,
) -> Result<Fast> {
    if !matches!(mode, SendMode::Standard | SendMode::Ready) || d.staged.is_some() {
        return Ok(Fast::General);
    }
    with(|st| {
        // SAFETY: `describe` checked that the buffer holds `d.bytes` contiguous bytes.
        if !unsafe { st.try_send_now(comm, dest, tag, d.ptr, d.bytes, seq.is_some()) } {
            return Ok(Fast::General);
        }
        if let Some(s) = seq {
            *s = st.fast_seq;
        }
        if crate::profile::on() {
            note_fast_send(st, comm, dest, d.bytes);
        }
        Ok(Fast::Sent(
            request.then(|| st.reqs.insert(Request::sent(comm))),
        ))
    })
}

/// The hang report of a blocking receive waiting in the fast path (which
/// posts no receive the report would find).
#[cold]
#[inline(never)]
fn hang_report_recv(
    st: &mut State,
    comm: MPI_Comm,
    source: c_int,
    w: usize,
    tag: c_int,
    waited: f64,
) {
    let label = st
        .comm(comm)
        .map(crate::core::hang::label)
        .unwrap_or_default();
    let item = format!("recv comm={label} src={source} wsrc={w} tag={tag}");
    crate::core::hang::report(st, waited, &[item]);
}

/// The profile's record of a message the fast path sent.
#[cold]
fn note_fast_send(st: &State, comm: MPI_Comm, dest: c_int, bytes: usize) {
    if let Ok(c) = st.comm(comm) {
        crate::profile::sent(c.peer_world(dest) as usize, bytes);
    }
}

#[allow(clippy::too_many_arguments)]
fn isend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Result<ReqId> {
    let d = describe(buf, count, datatype, "buf")?;
    if let Fast::Sent(Some(rid)) = send_now(&d, dest, tag, comm, mode, true)? {
        return Ok(rid);
    }
    isend_queued(d, buf, count, dest, tag, comm, mode)
}

/// `isend` for the entry points: the handle of the request, or
/// `DONE_SEND` for a send that completed on the fast path (no request).
#[allow(clippy::too_many_arguments)]
#[inline]
fn isend_handle(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Result<MPI_Request> {
    let d = describe(buf, count, datatype, "buf")?;
    let mut seq = 0;
    if let Fast::Sent(_) = send_now_as(&d, dest, tag, comm, mode, false, Some(&mut seq))? {
        return Ok(super::request::done_send_handle(seq));
    }
    isend_queued(d, buf, count, dest, tag, comm, mode).map(new_handle)
}

/// A send through the general path (request, rendezvous, queueing) of a
/// buffer `describe` validated as `d`.
#[allow(clippy::too_many_arguments)]
fn isend_queued(
    d: Desc,
    buf: *const c_void,
    count: c_int,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Result<ReqId> {
    let mem = moved_kind(&d);
    let (ptr, bytes, staged) = staging(d, buf, count, false)?;
    with(|st| {
        check_dest(st, comm, dest, tag)?;
        let mut req = Request::new(ReqKind::Send, comm, ptr, bytes);
        req.staged = staged;
        req.mem = mem;
        let rid = st.reqs.insert(req);
        // SAFETY: `describe` validated the buffer; MPI's rules keep it until
        // the request completes.
        if let Err(e) = unsafe { st.launch_send(rid, comm, dest, tag, ptr, bytes, mode) } {
            st.reqs.remove(rid);
            return Err(e);
        }
        Ok(rid)
    })
}

fn irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Result<ReqId> {
    let d = describe(buf, count, datatype, "buf")?;
    irecv_desc(d, buf, count, source, tag, comm)
}

/// `irecv` of a buffer `describe` validated as `d`.
fn irecv_desc(
    d: Desc,
    buf: *mut c_void,
    count: c_int,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Result<ReqId> {
    let mem = moved_kind(&d);
    let (ptr, bytes, staged) = staging(d, buf, count, true)?;
    with(|st| {
        // The common case is checked once here: a valid rank (or wildcard) and
        // tag; anything else (errors, MPI_PROC_NULL) goes through the full checks.
        let ctx = match st.comm(comm) {
            Ok(c)
                if (source == MPI_ANY_SOURCE || (0..c.peer_size()).contains(&source))
                    && (tag == MPI_ANY_TAG || tag >= 0) =>
            {
                Some(c.ctx)
            }
            _ => {
                check_source(st, comm, source, tag)?;
                None
            }
        };
        let rid = st.reqs.insert_with(|| Request {
            staged,
            mem,
            posted: ctx.is_some(),
            ..Request::new(ReqKind::Recv, comm, ptr, bytes)
        });
        match ctx {
            Some(ctx) => st.post_recv(rid, ctx, source, tag),
            None => st.start_recv(rid, comm, source, tag)?,
        }
        Ok(rid)
    })
}

/// Waits for request `rid` and retires it; returns its status.
fn wait_rid(rid: ReqId) -> Result<Status> {
    wait_for(|st| {
        let r = st
            .reqs
            .get(rid)
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request vanished"))?;
        if r.done {
            let s = r.status;
            let comm = r.comm;
            st.reqs.remove(rid);
            if s.error != MPI_SUCCESS {
                return Err(crate::core::error::Error::new(s.error, trunc_msg(&s)).on_comm(comm));
            }
            return Ok(Some(s));
        }
        Ok(None)
    })
}

pub fn trunc_msg(s: &Status) -> String {
    if s.error == MPI_ERR_TRUNCATE {
        format!(
            "message of {} bytes from source={} tag={} is longer than the receive buffer",
            s.bytes, s.source, s.tag
        )
    } else {
        format!("request failed with error class {}", s.error)
    }
}

fn new_handle(rid: ReqId) -> MPI_Request {
    handles::make(KIND_REQUEST, rid)
}

#[allow(clippy::too_many_arguments)]
fn persistent_send(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Result<ReqId> {
    let d = describe(buf, count, datatype, "buf")?;
    let bytes = d.bytes;
    with(|st| {
        check_dest(st, comm, dest, tag)?;
        let mut r = Request::new(ReqKind::Send, comm, d.ptr, bytes);
        r.mem = moved_kind(&d);
        r.active = false;
        r.persist = Some(Box::new(Persist {
            recv: false,
            mode,
            buf: if d.staged.is_some() {
                buf as *mut u8
            } else {
                d.ptr
            },
            bytes,
            peer: dest,
            tag,
            comm,
            kind: d.kind,
            layout: d.staged.map(|t| (t, count as usize)),
        }));
        Ok(st.reqs.insert(r))
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let d = describe(buf, count, datatype, "buf")?;
    if let Fast::Sent(_) = send_now(&d, dest, tag, comm, SendMode::Standard, false)? {
        return Ok(());
    }
    let rid = isend_queued(d, buf, count, dest, tag, comm, SendMode::Standard)?;
    wait_rid(rid).map(|_| ())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let rid = isend(buf, count, datatype, dest, tag, comm, SendMode::Sync)?;
    wait_rid(rid).map(|_| ())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let rid = isend(buf, count, datatype, dest, tag, comm, SendMode::Ready)?;
    wait_rid(rid).map(|_| ())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let rid = isend(buf, count, datatype, dest, tag, comm, SendMode::Buffered)?;
    wait_rid(rid).map(|_| ())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let h = isend_handle(buf, count, datatype, dest, tag, comm, SendMode::Standard)?;
    super::bufcheck::note(h, "MPI_Isend", buf, count, datatype, dest, tag, comm);
    out(request, "request", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Issend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let h = new_handle(isend(
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        SendMode::Sync,
    )?);
    super::bufcheck::note(h, "MPI_Issend", buf, count, datatype, dest, tag, comm);
    out(request, "request", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let h = isend_handle(buf, count, datatype, dest, tag, comm, SendMode::Ready)?;
    super::bufcheck::note(h, "MPI_Irsend", buf, count, datatype, dest, tag, comm);
    out(request, "request", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let h = new_handle(isend(
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        SendMode::Buffered,
    )?);
    super::bufcheck::note(h, "MPI_Ibsend", buf, count, datatype, dest, tag, comm);
    out(request, "request", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = persistent_send(buf, count, datatype, dest, tag, comm, SendMode::Standard)?;
    out(request, "request", new_handle(rid))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_init(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = persistent_send(buf, count, datatype, dest, tag, comm, SendMode::Sync)?;
    out(request, "request", new_handle(rid))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_init(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = persistent_send(buf, count, datatype, dest, tag, comm, SendMode::Ready)?;
    out(request, "request", new_handle(rid))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_init(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = persistent_send(buf, count, datatype, dest, tag, comm, SendMode::Buffered)?;
    out(request, "request", new_handle(rid))
}

/// Starts persistent request `rid` (MPI_Start).
pub fn start_persistent(st: &mut State, rid: ReqId) -> Result<()> {
    let r = st
        .reqs
        .get_mut(rid)
        .ok_or_else(|| err!(MPI_ERR_REQUEST, "request is not valid"))?;
    let p = r
        .persist
        .clone()
        .ok_or_else(|| err!(MPI_ERR_REQUEST, "request is not a persistent request"))?;
    if r.active {
        return Err(err!(
            MPI_ERR_REQUEST,
            "request is already active (MPI_Start on an active persistent request)"
        ));
    }
    r.active = true;
    r.done = false;
    r.status = Status::empty();
    r.got = 0;
    r.total = 0;
    let mut ptr = p.buf;
    if let Some((t, count)) = &p.layout {
        // Pack the current contents (send) or make a landing area (receive) anew.
        // SAFETY: the persistent request's buffer was validated at its init
        // and, by MPI's rules, holds `count` elements of `t` at each start.
        let (sp, _, staged) =
            unsafe { crate::core::staging::stage(t, *count, p.buf, p.bytes, p.recv, p.kind)? };
        ptr = sp;
        r.staged = staged;
    }
    r.buf = ptr;
    r.cap = p.bytes;
    if p.recv {
        st.start_recv(rid, p.comm, p.peer, p.tag)
    } else {
        // SAFETY: as at the request's init; the staged data is the request's own.
        unsafe { st.launch_send(rid, p.comm, p.peer, p.tag, ptr, p.bytes, p.mode) }
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let d = describe(buf, count, datatype, "buf")?;
    if let Some(s) = recv_now(&d, source, tag, comm)? {
        write_status(status, &s, false);
        return Ok(());
    }
    let rid = irecv_desc(d, buf, count, source, tag, comm)?;
    let s = wait_rid(rid)?;
    write_status(status, &s, false);
    Ok(())
}

/// The eager fast path of MPI_Recv (`State::try_recv_now`) for a contiguous
/// buffer and one source rank: waits on that rank's ring while nothing else
/// is pending, driving the general progress now and then. None when the
/// receive must take the general path.
fn recv_now(d: &Desc, source: c_int, tag: c_int, comm: MPI_Comm) -> Result<Option<Status>> {
    if d.staged.is_some() || source < 0 || (tag < 0 && tag != MPI_ANY_TAG) {
        return Ok(None);
    }
    let Some((ctx, w)) = with(|st| {
        Ok(st
            .comm(comm)
            .ok()
            .filter(|c| source < c.peer_size())
            .map(|c| (c.ctx, c.peer_world(source) as usize)))
    })?
    else {
        return Ok(None);
    };
    let mut backoff = crate::core::progress::Backoff::new_default();
    let mut round = 0u32;
    loop {
        let got = with(|st| {
            // SAFETY: `describe` checked that the buffer holds `d.bytes` bytes.
            let r = unsafe { st.try_recv_now(ctx, source, w, tag, d.ptr, d.bytes) };
            Ok(match r {
                RecvNow::Got(s) => Some(Some(s)),
                RecvNow::Other => Some(None),
                RecvNow::Empty => {
                    if crate::core::hang::asked() {
                        hang_report_recv(st, comm, source, w, tag, backoff.waited());
                    }
                    round = round.saturating_add(1);
                    // Other peers' traffic and queued sends move on too: now
                    // and then while spinning, every round once waiting longer.
                    if (round % 16 == 0 || round > 256) && st.progress() {
                        Some(None)
                    } else {
                        None
                    }
                }
            })
        })?;
        if let Some(s) = got {
            return Ok(s);
        }
        backoff.snooze();
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = irecv(buf, count, datatype, source, tag, comm)?;
    out(request, "request", new_handle(rid))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let d = describe(buf, count, datatype, "buf")?;
    let bytes = d.bytes;
    let rid = with(|st| {
        check_source(st, comm, source, tag)?;
        let mut r = Request::new(ReqKind::Recv, comm, d.ptr, bytes);
        r.mem = moved_kind(&d);
        r.active = false;
        r.persist = Some(Box::new(Persist {
            recv: true,
            mode: SendMode::Standard,
            buf: if d.staged.is_some() {
                buf as *mut u8
            } else {
                d.ptr
            },
            bytes,
            peer: source,
            tag,
            comm,
            kind: d.kind,
            layout: d.staged.map(|t| (t, count as usize)),
        }));
        Ok(st.reqs.insert(r))
    })?;
    out(request, "request", new_handle(rid))
}

/// The landing area of a replacing send-receive: the message comes in
/// here and is unpacked into the user buffer once the send is done with it.
struct Replace {
    tmp: Vec<u8>,
    d: Desc,
    count: c_int,
}

impl Replace {
    fn new(buf: *mut c_void, count: c_int, datatype: MPI_Datatype) -> Result<Replace> {
        let d = describe(buf, count, datatype, "buf")?;
        Ok(Replace {
            tmp: vec![0u8; d.bytes],
            d,
            count,
        })
    }

    /// Puts the `bytes` that came into the user buffer.
    fn unpack(&self, bytes: u64) -> Result<()> {
        let n = (bytes as usize).min(self.d.bytes);
        match &self.d.staged {
            // SAFETY: the user buffer holds `count` elements of `t`
            // (`describe` checked the arguments; the buffer is the caller's
            // until the operation completes).
            Some(t) => unsafe {
                crate::datatype::unpack_mem(
                    t,
                    self.count as usize,
                    &self.tmp[..n],
                    self.d.ptr,
                    self.d.kind,
                )
            },
            None => {
                out_slice(self.d.ptr, n, "buf")?.copy_from_slice(&self.tmp[..n]);
                Ok(())
            }
        }
    }
}

/// Starts a send-receive pair: the receive (into `landing`'s area where
/// given) posted first, then the send; a send that cannot start takes the
/// receive back. Returns (send, receive).
fn start_pair(
    send: (*const c_void, c_int, MPI_Datatype, c_int, c_int),
    recv: (*mut c_void, c_int, MPI_Datatype, c_int, c_int),
    comm: MPI_Comm,
    landing: Option<&Replace>,
) -> Result<(ReqId, ReqId)> {
    let (rbuf, rcount, rtype, source, rtag) = recv;
    let r = match landing {
        None => irecv(rbuf, rcount, rtype, source, rtag, comm)?,
        Some(rep) => with(|st| {
            check_source(st, comm, source, rtag)?;
            let rid = st.reqs.insert(Request::new(
                ReqKind::Recv,
                comm,
                rep.tmp.as_ptr() as *mut u8,
                rep.tmp.len(),
            ));
            st.start_recv(rid, comm, source, rtag)?;
            Ok(rid)
        })?,
    };
    let (sbuf, scount, stype, dest, stag) = send;
    match isend(sbuf, scount, stype, dest, stag, comm, SendMode::Standard) {
        Ok(s) => Ok((s, r)),
        Err(e) => {
            with(|st| {
                st.cancel_recv(r);
                st.reqs.remove(r);
                Ok(())
            })?;
            Err(e)
        }
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let (s, r) = start_pair(
        (sendbuf, sendcount, sendtype, dest, sendtag),
        (recvbuf, recvcount, recvtype, source, recvtag),
        comm,
        None,
    )?;
    wait_rid(s)?;
    let st = wait_rid(r)?;
    write_status(status, &st, false);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let rep = Replace::new(buf, count, datatype)?;
    let (s, r) = start_pair(
        (buf, count, datatype, dest, sendtag),
        (std::ptr::null_mut(), 0, datatype, source, recvtag),
        comm,
        Some(&rep),
    )?;
    wait_rid(s)?;
    let st = wait_rid(r)?;
    rep.unpack(st.bytes)?;
    write_status(status, &st, false);
    Ok(())
}

/// The request of MPI_Isendrecv and MPI_Isendrecv_replace: a send and a
/// receive started together (`start_pair`), advanced by the progress
/// engine; it completes when both have, with the receive's status (and the
/// send's error, if the receive had none). The replacing form unpacks once
/// the send is done with the user buffer.
struct SendRecv {
    out: ReqId,
    send: ReqId,
    recv: ReqId,
    replace: Option<Replace>,
}

impl crate::core::state::Progress for SendRecv {
    fn step(&mut self, st: &mut State) -> Result<bool> {
        let done = |st: &State, r: ReqId| st.reqs.get(r).is_none_or(|q| q.done);
        if !done(st, self.send) || !done(st, self.recv) {
            return Ok(false);
        }
        let mut status = st
            .reqs
            .remove(self.recv)
            .map_or(Status::empty(), |q| q.status);
        if let Some(q) = st.reqs.remove(self.send) {
            if status.error == MPI_SUCCESS {
                status.error = q.status.error;
            }
        }
        if let Some(rep) = self.replace.take() {
            if status.error == MPI_SUCCESS || status.error == MPI_ERR_TRUNCATE {
                rep.unpack(status.bytes)?;
            }
        }
        if let Some(r) = st.reqs.get_mut(self.out) {
            r.status = status;
        }
        Ok(true)
    }
}

/// Starts the pair under one request that completes with both; writes its
/// handle.
fn start_sendrecv(
    send: (*const c_void, c_int, MPI_Datatype, c_int, c_int),
    recv: (*mut c_void, c_int, MPI_Datatype, c_int, c_int),
    comm: MPI_Comm,
    replace: Option<Replace>,
    request: *mut MPI_Request,
) -> Result<()> {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let (s, r) = start_pair(send, recv, comm, replace.as_ref())?;
    let rid = with(|st| {
        let out = st
            .reqs
            .insert(Request::new(ReqKind::Coll, comm, std::ptr::null_mut(), 0));
        st.scheds.push(crate::core::state::Active {
            rid: out,
            sched: Box::new(SendRecv {
                out,
                send: s,
                recv: r,
                replace,
            }),
        });
        st.progress();
        Ok(out)
    })?;
    out(request, "request", new_handle(rid))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    start_sendrecv(
        (sendbuf, sendcount, sendtype, dest, sendtag),
        (recvbuf, recvcount, recvtype, source, recvtag),
        comm,
        None,
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let rep = Replace::new(buf, count, datatype)?;
    start_sendrecv(
        (buf, count, datatype, dest, sendtag),
        (std::ptr::null_mut(), 0, datatype, source, recvtag),
        comm,
        Some(rep),
        request,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    with(|st| check_source(st, comm, source, tag))?;
    let s = if source == MPI_PROC_NULL {
        Status::proc_null()
    } else {
        wait_for(|st| st.iprobe(comm, source, tag))?
    };
    write_status(status, &s, false);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if flag.is_null() {
        return Err(err!(MPI_ERR_ARG, "flag=NULL"));
    }
    let s = with(|st| {
        check_source(st, comm, source, tag)?;
        if source == MPI_PROC_NULL {
            return Ok(Some(Status::proc_null()));
        }
        st.progress();
        st.iprobe(comm, source, tag)
    })?;
    if let Some(s) = s {
        write_status(status, &s, false);
    }
    out(flag, "flag", s.is_some() as c_int)
}

fn message_handle(st: &mut State, comm: MPI_Comm, uid: u64) -> MPI_Message {
    let rid = st.reqs.insert(Request::new(
        ReqKind::Message { uid },
        comm,
        std::ptr::null_mut(),
        0,
    ));
    new_handle(rid)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    if message.is_null() {
        return Err(err!(MPI_ERR_ARG, "message=NULL"));
    }
    with(|st| check_source(st, comm, source, tag))?;
    if source == MPI_PROC_NULL {
        write_status(status, &Status::proc_null(), false);
        return out(message, "message", MPI_MESSAGE_NO_PROC);
    }
    let (h, s) = wait_for(|st| {
        Ok(st
            .improbe(comm, source, tag)?
            .map(|(uid, s)| (message_handle(st, comm, uid), s)))
    })?;
    write_status(status, &s, false);
    out(message, "message", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    if message.is_null() || flag.is_null() {
        return Err(err!(
            MPI_ERR_ARG,
            "{}=NULL",
            if flag.is_null() { "flag" } else { "message" }
        ));
    }
    with(|st| check_source(st, comm, source, tag))?;
    if source == MPI_PROC_NULL {
        write_status(status, &Status::proc_null(), false);
        out(flag, "flag", 1)?;
        return out(message, "message", MPI_MESSAGE_NO_PROC);
    }
    let r = with(|st| {
        st.progress();
        Ok(st
            .improbe(comm, source, tag)?
            .map(|(uid, s)| (message_handle(st, comm, uid), s)))
    })?;
    match r {
        Some((h, s)) => {
            write_status(status, &s, false);
            out(message, "message", h)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

/// Turns a message handle into a receive request on `buf`.
fn mrecv_start(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
) -> Result<Option<ReqId>> {
    let m = inp(message, "message")?;
    let (ptr, bytes, staged) = prepare(buf, count, datatype, true)?;
    if m == MPI_MESSAGE_NO_PROC {
        return Ok(None);
    }
    let rid = with(|st| {
        let rid = req_index(m).filter(|&i| {
            matches!(
                st.reqs.get(i).map(|r| r.kind),
                Some(ReqKind::Message { .. })
            )
        });
        let rid = rid.ok_or_else(|| {
            err!(
                MPI_ERR_REQUEST,
                "message=0x{:08x} is not a matched message",
                m as u32
            )
        })?;
        let r = st.reqs.get_mut(rid).unwrap();
        let ReqKind::Message { uid } = r.kind else {
            unreachable!()
        };
        r.kind = ReqKind::Recv;
        r.buf = ptr;
        r.staged = staged;
        r.cap = bytes;
        st.start_mrecv(rid, uid);
        Ok(rid)
    })?;
    Ok(Some(rid))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    let s = match mrecv_start(buf, count, datatype, message)? {
        None => Status::proc_null(),
        Some(rid) => {
            out(message, "message", MPI_MESSAGE_NULL)?;
            wait_rid(rid)?
        }
    };
    out(message, "message", MPI_MESSAGE_NULL)?;
    write_status(status, &s, false);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    let rid = match mrecv_start(buf, count, datatype, message)? {
        Some(rid) => rid,
        None => with(|st| {
            let rid = st.reqs.insert(Request::new(
                ReqKind::Recv,
                MPI_COMM_SELF,
                std::ptr::null_mut(),
                0,
            ));
            st.reqs.get_mut(rid).unwrap().status = Status::proc_null();
            st.complete(rid);
            Ok(rid)
        })?,
    };
    out(message, "message", MPI_MESSAGE_NULL)?;
    out(request, "request", new_handle(rid))
}

/// Attaches the Bsend buffer (`MPI_Buffer_attach` and its `_c` form).
pub(crate) fn buffer_attach(buffer: *mut c_void, size: i64) -> Result<()> {
    if size < 0 {
        return Err(err!(MPI_ERR_ARG, "size={size} must be non-negative"));
    }
    if buffer.is_null() && size > 0 {
        return Err(err!(MPI_ERR_BUFFER, "buffer=NULL with size={size}"));
    }
    with(|st| {
        if st.bsend.is_some() {
            return Err(err!(
                MPI_ERR_BUFFER,
                "a buffer is already attached (detach it first)"
            ));
        }
        st.bsend = Some(Bsend::new(buffer as *mut u8, size as usize));
        Ok(())
    })
}

/// Detaches the Bsend buffer once every buffered message has left it:
/// its address and size.
pub(crate) fn buffer_detach(
    buffer_addr: *mut c_void,
    size_given: bool,
) -> Result<(*mut u8, usize)> {
    if buffer_addr.is_null() || !size_given {
        return Err(err!(
            MPI_ERR_ARG,
            "{}=NULL",
            if !size_given { "size" } else { "buffer_addr" }
        ));
    }
    // Detach waits until every buffered message has left the buffer.
    wait_for(|st| match st.bsend.as_ref() {
        None => Err(err!(MPI_ERR_BUFFER, "no buffer is attached")),
        Some(b) if b.in_use() => Ok(None),
        Some(_) => Ok(Some(())),
    })?;
    let b = with(|st| Ok(st.bsend.take().unwrap()))?;
    out(
        buffer_addr as *mut *mut c_void,
        "buffer_addr",
        b.base as *mut c_void,
    )?;
    Ok((b.base, b.size))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    buffer_attach(buffer, size as i64)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    let (_, n) = buffer_detach(buffer_addr, !size.is_null())?;
    // Attached through the int form, or the _c form with at most 2^31 - 1 bytes.
    out(
        size,
        "size",
        c_int::try_from(n).map_err(|_| {
            err!(
                MPI_ERR_VALUE_TOO_LARGE,
                "size={n} does not fit an int (use MPI_Buffer_detach_c)"
            )
        })?,
    )
}
