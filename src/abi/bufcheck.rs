//! The check of send buffers modified before their nonblocking send
//! completed (`OXMPI_CHECK_BUFFERS=1`, apart from `OXMPI_CHECK`, since it
//! reads every such buffer twice): `MPI_Isend`, `MPI_Issend`, `MPI_Irsend`
//! and `MPI_Ibsend` note a checksum of the buffer's bytes (packed first for
//! a derived type; device buffers are not checked) under the request's
//! handle; the call that completes the request (the Wait and Test
//! families) computes it again and reports a difference as
//! `MPI_ERR_BUFFER` on the send's communicator, naming the send. The
//! nonblocking collectives likewise note the user memory their schedule
//! only reads (its send buffers, contiguous ones: a packed copy is taken
//! at the start anyway) and check it when their request completes.
//! `MPI_Request_free` forgets a request (its completion is not seen).
//! Off, each of those calls pays one relaxed load (`on`).

use super::consts::*;
use super::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::core::error::Result;
use crate::core::profile::{diag, BUFFERS};
use crate::err;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::raw::{c_int, c_void};

/// Whether the check is on.
#[inline(always)]
pub fn on() -> bool {
    diag() & BUFFERS != 0
}

struct Entry {
    src: Src,
    comm: MPI_Comm,
    sum: u64,
    what: String,
}

/// What a followed request's buffer is.
enum Src {
    /// A send's `count` elements of `datatype` at `buf`.
    Typed {
        buf: usize,
        count: c_int,
        datatype: MPI_Datatype,
    },
    /// A collective's byte ranges (address, bytes).
    Bytes(Vec<(usize, usize)>),
}

impl Src {
    fn sum(&self) -> Option<u64> {
        match *self {
            Src::Typed {
                buf,
                count,
                datatype,
            } => sum_of(buf as *const c_void, count, datatype),
            Src::Bytes(ref r) => Some(r.iter().fold(0u64, |h, &(p, n)| {
                // SAFETY: ranges the collective reads from user memory,
                // which its request keeps valid until it completes (MPI's rule).
                let b = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
                h.rotate_left(7) ^ checksum(b)
            })),
        }
    }
}

static FOLLOWED: Mutex<Option<HashMap<MPI_Request, Entry>>> = Mutex::new(None);

/// A checksum of `b` (eight bytes at a time; not cryptographic).
fn checksum(b: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().unwrap());
        h = (h ^ x).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ x as u64)
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(29);
    }
    h
}

/// The checksum of `count` elements of `datatype` at `buf` (None for
/// device memory or a buffer `describe` refuses).
fn sum_of(buf: *const c_void, count: c_int, datatype: MPI_Datatype) -> Option<u64> {
    let d = super::datatype::describe(buf, count, datatype, "buf").ok()?;
    if d.kind != crate::gpu::MemKind::Host {
        return None;
    }
    Some(match &d.staged {
        None if d.bytes == 0 => checksum(&[]),
        // SAFETY: `describe` checked that the buffer holds `d.bytes`
        // contiguous bytes at `d.ptr`.
        None => checksum(unsafe { std::slice::from_raw_parts(d.ptr, d.bytes) }),
        Some(t) => {
            let mut v = vec![0u8; d.bytes];
            // SAFETY: the buffer holds `count` elements of `t` (checked by
            // `describe`, MPI's rule for send buffers).
            unsafe { crate::datatype::pack(t, count as usize, buf as *const u8, &mut v) };
            checksum(&v)
        }
    })
}

/// A nonblocking send of `count` elements of `datatype` at `buf` to
/// `dest` (tag `tag`, on `comm`) started as request `h` (`func`): followed
/// while the check is on.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn note(
    h: MPI_Request,
    func: &str,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) {
    if on() {
        follow(h, func, buf, count, datatype, dest, tag, comm);
    }
}

#[allow(clippy::too_many_arguments)]
#[cold]
fn follow(
    h: MPI_Request,
    func: &str,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) {
    if h == MPI_REQUEST_NULL {
        return;
    }
    let Some(sum) = sum_of(buf, count, datatype) else {
        return;
    };
    let label = comm_label(comm);
    let what = format!("{func}(buf={buf:p}, count={count}, dest={dest}, tag={tag}, comm={label})");
    FOLLOWED.lock().get_or_insert_with(HashMap::new).insert(
        h,
        Entry {
            src: Src::Typed {
                buf: buf as usize,
                count,
                datatype,
            },
            comm,
            sum,
            what,
        },
    );
}

/// A nonblocking collective (`func`, on `comm`) started as request `h`,
/// whose schedule only reads the host memory `ranges`: followed while the
/// check is on (the caller asks `on` first).
#[cold]
pub fn note_collective(h: MPI_Request, func: &str, ranges: Vec<(usize, usize)>, comm: MPI_Comm) {
    if h == MPI_REQUEST_NULL || ranges.is_empty() {
        return;
    }
    if ranges
        .iter()
        .any(|&(p, _)| crate::gpu::classify(p as *const u8, 0) != crate::gpu::MemKind::Host)
    {
        return;
    }
    let src = Src::Bytes(ranges);
    let Some(sum) = src.sum() else { return };
    let label = comm_label(comm);
    FOLLOWED.lock().get_or_insert_with(HashMap::new).insert(
        h,
        Entry {
            src,
            comm,
            sum,
            what: format!("{func}(comm={label})"),
        },
    );
}

/// Communicator `comm` as the messages name it.
fn comm_label(comm: MPI_Comm) -> String {
    crate::core::runtime::try_with(|st| {
        st.comm(comm)
            .map(crate::core::hang::label)
            .unwrap_or_else(|_| format!("{comm:#x}"))
    })
    .unwrap_or_default()
}

/// Stops following request `h` (freed by `MPI_Request_free`).
#[cold]
pub fn forget(h: MPI_Request) {
    if let Some(m) = FOLLOWED.lock().as_mut() {
        m.remove(&h);
    }
}

/// Runs `f`, a call that completes some of the `n` requests at `reqs`
/// (the Wait and Test families), then checks the buffers of the followed
/// sends among those it completed; `f`'s own error comes first.
#[inline(always)]
pub fn around(reqs: *mut MPI_Request, n: c_int, f: impl FnOnce() -> Result<()>) -> Result<()> {
    let snap = before(reqs, n);
    let r = f();
    if snap.is_some() {
        after(snap, reqs)?;
    }
    r
}

/// Before a completion call on the `n` handles at `reqs`: those the check
/// follows (None when it is off or follows none of them).
#[inline(always)]
fn before(reqs: *const MPI_Request, n: c_int) -> Option<Vec<MPI_Request>> {
    if !on() || reqs.is_null() || n <= 0 {
        return None;
    }
    snapshot(reqs, n)
}

#[cold]
fn snapshot(reqs: *const MPI_Request, n: c_int) -> Option<Vec<MPI_Request>> {
    // SAFETY: the call's array of `n` handles (validated by the call too).
    let v = unsafe { std::slice::from_raw_parts(reqs, n as usize) }.to_vec();
    let g = FOLLOWED.lock();
    let m = g.as_ref()?;
    v.iter().any(|h| m.contains_key(h)).then_some(v)
}

/// After the completion call: every followed request whose handle changed
/// (it completed and was freed) has its buffer checked; the first that
/// differs is the error.
#[cold]
fn after(snap: Option<Vec<MPI_Request>>, reqs: *const MPI_Request) -> Result<()> {
    let Some(v) = snap else {
        return Ok(());
    };
    // SAFETY: as in `snapshot`, the same array.
    let now = unsafe { std::slice::from_raw_parts(reqs, v.len()) };
    let done: Vec<Entry> = {
        let mut g = FOLLOWED.lock();
        let Some(m) = g.as_mut() else {
            return Ok(());
        };
        v.iter()
            .zip(now)
            .filter(|(a, b)| a != b)
            .filter_map(|(a, _)| m.remove(a))
            .collect()
    };
    for e in done {
        let again = e.src.sum();
        if again.is_some_and(|s| s != e.sum) {
            let what = if matches!(e.src, Src::Bytes(_)) {
                "collective"
            } else {
                "send"
            };
            return Err(err!(
                MPI_ERR_BUFFER,
                "the send buffer of {} was modified before the {what} completed (OXMPI_CHECK_BUFFERS)",
                e.what
            )
            .on_comm(e.comm));
        }
    }
    Ok(())
}
