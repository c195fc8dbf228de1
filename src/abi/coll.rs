//! Collective entry points, blocking, nonblocking (`MPI_I*`) and persistent
//! (`*_init`), and their schedule builders (`*_s`): validate the arguments,
//! describe the buffers (any committed datatype: contiguous ones in place,
//! others packed and unpacked), take the algorithm `coll::select` picks
//! by size, ranks and topology (or a node-area form of `coll::shm`), and
//! run the schedule outside the library lock. The
//! intercommunicator forms are in `coll/inter.rs`, the large-count `_c`
//! forms in `coll/large.rs`.

use super::consts::*;
use super::datatype::{describe, size_and_type, Desc};
use super::op::{check as op_check, is_commutative, lookup, operand};
use super::ptr::{in_slice, out, out_slice};
use super::MPI_Request;
use super::{MPI_Comm, MPI_Datatype, MPI_Op};
use crate::coll::basic::{self, View};
use crate::coll::sched::{self, Loc, Sched, Step};
use crate::coll::select;
use crate::coll::{
    allgather, allreduce, alltoall, barrier, bcast, gather, hier, reduce_scatter, scan,
};
use crate::coll::{node, shm};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

mod forms;
mod inter;
pub use forms::*;
mod large;
pub use large::{MPI_Reduce_local_c, PMPI_Reduce_local_c};
mod large_forms;
pub use large_forms::*;

fn in_place(p: *const c_void) -> bool {
    p as isize == -1
}

/// The array of per-rank blocks of a gather/scatter-like call (block i is
/// `counts[i]` elements of `dt` at `displs[i]` extents from `p`), as the
/// byte layout the builders use: (where, (offset, len) per block, bytes in
/// all, steps to run last). A predefined or dense type (contiguous, lb 0)
/// is used in place; any other type is packed block by block into a
/// scratch area, rank order, back to back: send blocks now, receive blocks
/// unpacked by the returned steps (`preload` lists receive blocks whose
/// current contents are read, as with MPI_IN_PLACE).
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn block_array(
    s: &mut Sched,
    p: *const c_void,
    counts: &[i64],
    displs: Option<&[i64]>,
    dt: MPI_Datatype,
    name: &str,
    recv: bool,
    preload: &[usize],
) -> Result<(Loc, Vec<(usize, usize)>, usize, Vec<Step>)> {
    let (size, t) = size_and_type(dt)?;
    // A device buffer is staged like a non-dense type: packed into and
    // unpacked from scratch with the driver's copies.
    let kind = if in_place(p) {
        crate::gpu::MemKind::Host
    } else {
        // Where the data starts (see `describe`).
        let lb = t.as_ref().map_or(0, |t| t.true_lb);
        crate::gpu::classify((p as *const u8).wrapping_offset(lb), 0)
    };
    let t = match t {
        None if kind == crate::gpu::MemKind::Device => super::datatype::lookup(dt)?,
        Some(t) if !t.committed => {
            return Err(err!(
                MPI_ERR_TYPE,
                "{name} datatype=0x{:08x} is not committed (call MPI_Type_commit)",
                dt as u32
            ))
        }
        Some(t) if !t.is_dense() || kind == crate::gpu::MemKind::Device => t,
        _ => {
            let (bl, end) = blocks(counts, displs, size)?;
            let loc = if recv {
                Loc::User(bytes_mut(p as *mut c_void, end, name)?.as_mut_ptr())
            } else {
                Loc::User(bytes(p, end, name)?.as_ptr() as *mut u8)
            };
            return Ok((loc, bl, end, Vec::new()));
        }
    };
    // Packed layout: validated counts, user displacements in extents.
    let (packed, end) = blocks(counts, None, size)?;
    let ext = t.extent();
    let user = |i: usize| -> Result<*mut u8> {
        let d = match displs {
            Some(d) => d[i],
            None => (0..i).map(|j| counts[j]).sum(),
        };
        if d < 0 {
            return Err(err!(MPI_ERR_ARG, "displs[{i}]={d} must be non-negative"));
        }
        let at = (d as isize).checked_mul(ext).ok_or_else(|| {
            err!(
                MPI_ERR_ARG,
                "displs[{i}]={d} extents of {ext} bytes is beyond the address space"
            )
        })?;
        Ok((p as *mut u8).wrapping_offset(at))
    };
    if end > 0 && p.is_null() && !super::datatype::from_bottom(&t) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=NULL with {end} bytes to transfer"
        ));
    }
    let mut area = scratch_for(kind, end);
    let mut steps = Vec::new();
    for (i, &(off, len)) in packed.iter().enumerate() {
        let n = counts[i] as usize;
        if n == 0 {
            continue;
        }
        let u = user(i)?;
        if !recv || preload.contains(&i) {
            // SAFETY: block i of the user buffer holds counts[i] elements of t.
            unsafe { pack_for(s, &t, n, u, kind, &mut area[off..off + len])? };
        }
        if recv {
            steps.push((off, len, n, u));
        }
    }
    let idx = s.buffer(area);
    let steps = steps
        .into_iter()
        .map(|(off, len, n, u)| Step::Unpack {
            src: Loc::Scratch(idx, off),
            len,
            ty: t.clone(),
            count: n,
            dst: u,
            kind,
        })
        .collect();
    Ok((Loc::Scratch(idx, 0), packed, end, steps))
}

/// A schedule's scratch area of `len` bytes for a buffer of memory `kind`:
/// pinned for a device buffer (its copies are queued on the library's
/// stream, which pageable memory would make wait in the call).
fn scratch_for(kind: crate::gpu::MemKind, len: usize) -> Vec<u8> {
    if kind == crate::gpu::MemKind::Device {
        crate::core::pool::take_pinned(len)
    } else {
        vec![0u8; len]
    }
}

/// Packs `count` elements of `t` at `src` (memory `kind`) into `out`, an
/// area of schedule `s`: a device buffer's copies are queued on the
/// library's stream and the schedule's first stage waits for them
/// (`Sched::gate_device`), so a nonblocking call does not wait for the GPU.
///
/// # Safety
/// `src` holds `count` elements of `t`; `out` is (or will be) scratch of
/// `s`, so it outlives the queued copies.
unsafe fn pack_for(
    s: &mut Sched,
    t: &crate::datatype::Type,
    count: usize,
    src: *const u8,
    kind: crate::gpu::MemKind,
    out: &mut [u8],
) -> Result<()> {
    if kind == crate::gpu::MemKind::Device {
        // SAFETY: forwarded contract.
        unsafe { crate::datatype::pack_queued(t, count, src, out)? };
        return s.gate_device();
    }
    // SAFETY: forwarded contract.
    unsafe { crate::datatype::pack_mem(t, count, src, kind, out) }
}

/// A scratch buffer of schedule `s` holding the packed copy of the staged
/// buffer `d` (`count` elements of `t` at `p`); its index.
///
/// # Safety
/// `p` holds `count` elements of `t`.
unsafe fn staged_copy(
    s: &mut Sched,
    d: &Desc,
    t: &crate::datatype::Type,
    count: c_int,
    p: *const c_void,
) -> Result<usize> {
    let mut v = scratch_for(d.kind, d.bytes);
    // SAFETY: forwarded contract; `v` joins the schedule's scratch below.
    unsafe {
        pack_for(
            s,
            t,
            count as usize,
            p as *const u8,
            d.kind,
            &mut v[..d.bytes],
        )?
    };
    Ok(s.buffer(v))
}

/// A byte view of a user buffer; NULL is allowed for zero bytes.
fn bytes<'a>(p: *const c_void, n: usize, name: &str) -> Result<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}={} with {n} bytes to transfer",
            if p.is_null() { "NULL" } else { "MPI_IN_PLACE" }
        ));
    }
    in_slice(p as *const u8, n, name)
}

fn bytes_mut<'a>(p: *mut c_void, n: usize, name: &str) -> Result<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}={} with {n} bytes to transfer",
            if p.is_null() { "NULL" } else { "MPI_IN_PLACE" }
        ));
    }
    out_slice(p as *mut u8, n, name)
}

fn check_root(v: &View, root: c_int) -> Result<usize> {
    if root < 0 || root as usize >= v.size {
        return Err(err!(
            MPI_ERR_ROOT,
            "root={root} is not a rank of the communicator (size {})",
            v.size
        ));
    }
    Ok(root as usize)
}

/// An element of a per-rank count or displacement array: a C int in the
/// int forms, 64 bits (`MPI_Count`, `MPI_Aint`) in the large-count ones.
pub(crate) trait Wide: Copy {
    fn wide(self) -> i64;
}

impl Wide for c_int {
    fn wide(self) -> i64 {
        self as i64
    }
}

impl Wide for i64 {
    fn wide(self) -> i64 {
        self
    }
}

/// The `n` entries of a per-rank array argument, as 64-bit values (the
/// builders take both forms' arrays so).
fn ints<T: Wide>(p: *const T, n: usize, name: &str) -> Result<Vec<i64>> {
    Ok(in_slice(p, n, name)?.iter().map(|&x| x.wide()).collect())
}

/// (offset, len) in bytes of each rank's block from counts and displacements.
fn blocks(
    counts: &[i64],
    displs: Option<&[i64]>,
    esize: usize,
) -> Result<(Vec<(usize, usize)>, usize)> {
    let mut v = Vec::with_capacity(counts.len());
    let mut end = 0;
    let mut off = 0usize;
    for (i, &c) in counts.iter().enumerate() {
        if c < 0 {
            return Err(err!(MPI_ERR_COUNT, "counts[{i}]={c} must be non-negative"));
        }
        let o = match displs {
            Some(d) => {
                if d[i] < 0 {
                    return Err(err!(
                        MPI_ERR_ARG,
                        "displs[{i}]={} must be non-negative",
                        d[i]
                    ));
                }
                scaled(d[i], esize).ok_or_else(|| {
                    err!(
                        MPI_ERR_ARG,
                        "displs[{i}]={} elements of {esize} bytes is beyond the address space",
                        d[i]
                    )
                })?
            }
            None => off,
        };
        let l = scaled(c, esize)
            .filter(|&l| o + l <= isize::MAX as usize)
            .ok_or_else(|| {
                err!(
                    MPI_ERR_COUNT,
                    "counts[{i}]={c} elements of {esize} bytes reach beyond the address space"
                )
            })?;
        v.push((o, l));
        off = o + l;
        end = end.max(o + l);
    }
    Ok((v, end))
}

/// `n` (non-negative) units of `unit` bytes, when that is within the
/// address space.
fn scaled(n: i64, unit: usize) -> Option<usize> {
    (n as usize)
        .checked_mul(unit)
        .filter(|&b| b <= isize::MAX as usize)
}

// ------------------------------------------------------------------ schedule inputs and outputs

/// Where `count` elements of `dt` at `p` are read from: the user buffer when
/// contiguous (it may not change until the collective completes), else a packed copy.
fn input(
    s: &mut Sched,
    p: *const c_void,
    count: impl Into<i64>,
    dt: MPI_Datatype,
    name: &str,
) -> Result<(Loc, usize)> {
    if in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed here"
        ));
    }
    // Above 2^31 - 1 elements: one element of a temporary type holding
    // them (the packed copy keeps the type it needs).
    let big = super::large::big(count.into(), dt, name)?;
    let (count, dt) = (big.count, big.dt);
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        None => (Loc::User(d.ptr), d.bytes),
        // SAFETY: the buffer holds count elements of t (MPI's rule).
        Some(ref t) => (
            Loc::Scratch(unsafe { staged_copy(s, &d, t, count, p)? }, 0),
            d.bytes,
        ),
    })
}

/// Where results for `count` elements of `dt` at `p` go; the step to run last
/// (unpacking) when the type is not contiguous. The area starts with the
/// buffer's current contents (in-place operations read them).
fn output(
    s: &mut Sched,
    p: *mut c_void,
    count: impl Into<i64>,
    dt: MPI_Datatype,
    name: &str,
) -> Result<(Loc, usize, Option<Step>)> {
    if in_place(p) {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed here"
        ));
    }
    // As in `input`; the unpack step keeps the type it needs.
    let big = super::large::big(count.into(), dt, name)?;
    let (count, dt) = (big.count, big.dt);
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        None => (Loc::User(d.ptr), d.bytes, None),
        Some(ref t) => {
            // SAFETY: as for input.
            let i = unsafe { staged_copy(s, &d, t, count, p)? };
            let step = Step::Unpack {
                src: Loc::Scratch(i, 0),
                len: d.bytes,
                ty: t.clone(),
                count: count as usize,
                dst: p as *mut u8,
                kind: d.kind,
            };
            (Loc::Scratch(i, 0), d.bytes, Some(step))
        }
    })
}

/// Blocking reduce (root Some) or allreduce through the shared-memory area
/// when it can take the call; false when the caller must use a schedule.
/// MPI forbids a send buffer that is the receive buffer (MPI_IN_PLACE asks
/// for that); like MPICH, a reduction is refused when given one, since its
/// algorithms may read input that they have already overwritten. Only the
/// root's buffers meet at a rooted call; not checked on intercommunicators.
fn aliased(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    nonempty: bool,
    root: Option<c_int>,
    comm: MPI_Comm,
) -> Result<()> {
    if !nonempty || sendbuf.is_null() || in_place(sendbuf) || !std::ptr::eq(sendbuf, recvbuf) {
        return Ok(());
    }
    let (inter, rank) = with(|st| {
        let c = st.comm(comm)?;
        Ok((c.remote.is_some(), c.rank))
    })?;
    if inter || root.is_some_and(|r| r != rank) {
        return Ok(());
    }
    Err(err!(
        MPI_ERR_BUFFER,
        "sendbuf=recvbuf={sendbuf:p}: the send and receive buffers must differ (MPI_IN_PLACE as sendbuf asks for an in-place call)"
    ))
}

fn shm_reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: Option<c_int>,
    comm: MPI_Comm,
) -> Result<bool> {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
    }
    aliased(sendbuf, recvbuf, count > 0, root, comm)?;
    let (size, t) = size_and_type(datatype)?;
    let len = size * count.max(0) as usize;
    if !shm::eligible(comm, 0)
        || t.is_some_and(|t| !t.is_contiguous(count.max(0) as usize) || t.lb != 0 || t.true_lb != 0)
    {
        return Ok(false);
    }
    let builtin = matches!(lookup(op), Ok(crate::abi::op::OpKind::Builtin(_)));
    let Some(form) = node::reduce_form(root.is_some(), len, builtin) else {
        return Ok(false);
    };
    let n = basic_size(comm)?;
    let root = match root {
        Some(r) if r < 0 || r as usize >= n => {
            return Err(err!(
                MPI_ERR_ROOT,
                "root={r} is not a rank of the communicator (size {n})"
            ))
        }
        Some(r) => Some(r as usize),
        None => None,
    };
    let k = lookup(op)?;
    let (et, ne) = operand(&k, datatype, count)?;
    op_check(&k, et.dt)?;
    let me = my_rank(comm)?;
    let gets = root.is_none_or(|r| r == me);
    let mut input = if in_place(sendbuf) && gets {
        recvbuf as *const u8
    } else {
        bytes(sendbuf, len, "sendbuf")?.as_ptr()
    };
    let user_out = if gets {
        bytes_mut(recvbuf, len, "recvbuf")?.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    };
    if len > 0 && input.is_null() {
        return Err(err!(
            MPI_ERR_BUFFER,
            "recvbuf=NULL with {len} bytes to reduce"
        ));
    }
    // Device buffers: the single copy takes them as they are, by CUDA IPC,
    // where every rank's are device memory; otherwise (smaller calls, or a
    // mix of device and host buffers across the ranks, which the single
    // copy reports alike on every rank) they are staged in host copies.
    // The form is decided alike on every rank, whatever memory each rank's
    // buffers are.
    let dev = |p: *const u8| len > 0 && crate::gpu::classify(p, len) == crate::gpu::MemKind::Device;
    if form == node::AreaForm::Single
        && crate::gpu::ipc::enabled()
        && dev(input)
        && (user_out.is_null() || dev(user_out))
    {
        // SAFETY: as below, device memory.
        if unsafe { node::reduce(form, comm, input, user_out, len, ne, &et, &k, root, true)? } {
            return Ok(true);
        }
    }
    let staged_in = if dev(input) {
        let mut v = vec![0u8; len];
        // SAFETY: `input` names `len` bytes of device memory (checked above).
        unsafe { crate::gpu::copy(v.as_mut_ptr(), input, len)? };
        Some(v)
    } else {
        None
    };
    if let Some(v) = &staged_in {
        input = v.as_ptr();
    }
    let mut staged_out = Vec::new();
    let out = if !user_out.is_null() && dev(user_out) {
        staged_out = vec![0u8; len];
        staged_out.as_mut_ptr()
    } else {
        user_out
    };
    // SAFETY: input and out (at the root, or everywhere for allreduce)
    // hold `len` bytes (checked above); the form came from reduce_form.
    // A mix of device and host buffers across the ranks: the first call
    // did nothing on any rank, the second runs on host memory everywhere.
    for _ in 0..2 {
        // SAFETY: as above.
        if unsafe { node::reduce(form, comm, input, out, len, ne, &et, &k, root, false)? } {
            break;
        }
    }
    if !staged_out.is_empty() {
        // SAFETY: `user_out` names `len` bytes of device memory.
        unsafe { crate::gpu::copy_from_host(user_out, &staged_out)? };
    }
    Ok(true)
}

/// Contiguous bytes of `count` elements of `dt` at `p`: the user's memory,
/// or a packed copy (kept alive in the returned vector).
fn contiguous_in(
    p: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<(*const u8, usize, Vec<u8>)> {
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        None => (d.ptr, d.bytes, Vec::new()),
        Some(t) => {
            let mut v = vec![0u8; d.bytes];
            // SAFETY: the buffer holds `count` elements of `t` (MPI's rule).
            unsafe {
                crate::datatype::pack_mem(&t, count as usize, p as *const u8, d.kind, &mut v)?
            };
            (v.as_ptr(), d.bytes, v)
        }
    })
}

/// Where `count` elements of `dt` at `p` are produced as contiguous bytes:
/// the user's memory, or a landing area that `contiguous_flush` unpacks.
type Landing = Option<(
    Vec<u8>,
    std::sync::Arc<crate::datatype::Type>,
    crate::gpu::MemKind,
)>;
fn contiguous_out(
    p: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<(*mut u8, Landing)> {
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        None => (d.ptr, None),
        Some(t) => {
            let mut v = vec![0u8; d.bytes];
            (v.as_mut_ptr(), Some((v, t, d.kind)))
        }
    })
}

fn contiguous_flush(p: *mut c_void, count: c_int, l: Landing) -> Result<()> {
    if let Some((v, t, kind)) = l {
        // SAFETY: the buffer holds `count` elements of `t` (MPI's rule).
        unsafe { crate::datatype::unpack_mem(&t, count as usize, &v, p as *mut u8, kind)? };
    }
    Ok(())
}

/// Where `count` elements of `dt` at `p` start, when they are device memory
/// laid out contiguously (the single-copy forms then take them as they are).
fn device_span(
    p: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<Option<*mut u8>> {
    if p.is_null() || in_place(p) || !crate::gpu::ipc::enabled() {
        return Ok(None);
    }
    let d = describe(p, count, dt, name)?;
    Ok(match d.staged {
        Some(t)
            if d.kind == crate::gpu::MemKind::Device && t.is_contiguous(count.max(0) as usize) =>
        {
            Some((p as *mut u8).wrapping_offset(t.start()))
        }
        _ => None,
    })
}

/// Blocking allgather through the shared-memory area; false when the call
/// must use a schedule.
#[allow(clippy::too_many_arguments)]
fn shm_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<bool> {
    let (rsize, rt) = size_and_type(recvtype)?;
    let blk = rsize * recvcount.max(0) as usize;
    let Some(form) = node::allgather_form(comm, blk) else {
        return Ok(false);
    };
    let (n, me) = with(|st| {
        let c = st.comm(comm)?;
        Ok((c.size, c.rank))
    })?;
    let (mine_p, mine_n, mine_t) = if in_place(sendbuf) {
        let ext = rt.as_ref().map(|t| t.extent()).unwrap_or(rsize as isize);
        let at = (recvbuf as *const u8).wrapping_offset(me as isize * recvcount as isize * ext);
        (at as *const c_void, recvcount, recvtype)
    } else {
        (sendbuf, sendcount, sendtype)
    };
    // Device buffers, contiguous, go as they are in the single copy
    // (device and host ranks settle each pair, `shm::allgather_cma`).
    if form == node::AreaForm::Single && size_and_type(mine_t)?.0 * mine_n.max(0) as usize == blk {
        let m = device_span(mine_p, mine_n, mine_t, "sendbuf")?;
        let o = device_span(recvbuf, n * recvcount, recvtype, "recvbuf")?;
        if let (Some(m), Some(o)) = (m, o) {
            // SAFETY: `m` holds blk bytes of device memory, `o` n * blk.
            unsafe { node::allgather(form, comm, m, o, blk, true)? };
            return Ok(true);
        }
    }
    let (mine, len, _keep) = contiguous_in(mine_p, mine_n, mine_t, "sendbuf")?;
    if len != blk {
        return Err(err!(
            MPI_ERR_TRUNCATE,
            "sendcount gives {len} bytes but each receive block has {blk}"
        ));
    }
    // SAFETY: the caller's receive buffer holds n * recvcount elements.
    let (out, land) = contiguous_out(recvbuf, n * recvcount, recvtype, "recvbuf")?;
    // SAFETY: `mine` holds blk bytes, `out` n * blk; the form came from
    // allgather_form.
    unsafe { node::allgather(form, comm, mine, out, blk, false)? };
    contiguous_flush(recvbuf, n * recvcount, land)?;
    Ok(true)
}

/// Blocking alltoall through the shared-memory area; false when the call
/// must use a schedule.
#[allow(clippy::too_many_arguments)]
fn shm_alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<bool> {
    let (rsize, _) = size_and_type(recvtype)?;
    let blk = rsize * recvcount.max(0) as usize;
    let n = local_size(comm)? as c_int;
    let Some(form) = node::alltoall_form(comm, blk, n as usize, in_place(sendbuf)) else {
        return Ok(false);
    };
    // Device buffers, contiguous, go as they are in the single copy (not
    // in place there, `alltoall_form`).
    if form == node::AreaForm::Single
        && size_and_type(sendtype)?.0 * (n * sendcount).max(0) as usize == blk * n as usize
    {
        let s = device_span(sendbuf, n * sendcount, sendtype, "sendbuf")?;
        let o = device_span(recvbuf, n * recvcount, recvtype, "recvbuf")?;
        if let (Some(s), Some(o)) = (s, o) {
            // SAFETY: both hold n * blk bytes of device memory, distinct
            // buffers (MPI's rule).
            unsafe { node::alltoall(form, comm, s, o, blk, true)? };
            return Ok(true);
        }
    }
    let (send, len, _keep) = if in_place(sendbuf) {
        contiguous_in(recvbuf, n * recvcount, recvtype, "recvbuf")?
    } else {
        contiguous_in(sendbuf, n * sendcount, sendtype, "sendbuf")?
    };
    if len != blk * n as usize {
        return Err(err!(
            MPI_ERR_TRUNCATE,
            "sendcount gives {len} bytes in all but the receive blocks have {}",
            blk * n as usize
        ));
    }
    // SAFETY: as above.
    let (out, land) = contiguous_out(recvbuf, n * recvcount, recvtype, "recvbuf")?;
    // SAFETY: `send` and `out` hold n * blk bytes; for the single copy they
    // are distinct buffers (not in place; alltoall_form).
    unsafe { node::alltoall(form, comm, send, out, blk, false)? };
    contiguous_flush(recvbuf, n * recvcount, land)?;
    Ok(true)
}

/// Blocking reduce_scatter_block through the shared-memory area.
fn shm_reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Result<bool> {
    aliased(sendbuf, recvbuf, recvcount > 0, None, comm)?;
    if !shm::eligible(comm, 0) {
        return Ok(false);
    }
    let (size, _) = size_and_type(datatype)?;
    let blk = size * recvcount.max(0) as usize;
    let n = local_size(comm)? as c_int;
    let builtin = matches!(lookup(op), Ok(crate::abi::op::OpKind::Builtin(_)));
    let Some(form) = node::reduce_scatter_form(blk, n as usize, builtin) else {
        return Ok(false);
    };
    let k = lookup(op)?;
    let (et, ne) = operand(&k, datatype, recvcount)?;
    op_check(&k, et.dt)?;
    let src = if in_place(sendbuf) {
        recvbuf as *const c_void
    } else {
        sendbuf
    };
    // Device buffers of a contiguous type: the single copy takes them as
    // they are where every rank's are (see `shm_reduce`).
    let (_, t) = size_and_type(datatype)?;
    let dense = t.is_none_or(|t| {
        t.is_contiguous(n as usize * recvcount.max(0) as usize) && t.lb == 0 && t.true_lb == 0
    });
    let dev = |p: *const c_void| {
        blk > 0 && crate::gpu::classify(p as *const u8, blk) == crate::gpu::MemKind::Device
    };
    if form == node::AreaForm::Single
        && crate::gpu::ipc::enabled()
        && dense
        && dev(src)
        && dev(recvbuf)
    {
        let (input, out) = (src as *const u8, recvbuf as *mut u8);
        // SAFETY: the input holds n * blk bytes of device memory, the
        // output blk (contiguous from the buffers' starts).
        if unsafe { node::reduce_scatter_block(form, comm, input, out, blk, ne, &et, &k, true)? } {
            return Ok(true);
        }
    }
    // SAFETY: the input holds n * recvcount elements.
    let (input, _, _keep) = contiguous_in(src, n * recvcount, datatype, "sendbuf")?;
    // SAFETY: the receive buffer holds recvcount elements.
    let (out, land) = contiguous_out(recvbuf, recvcount, datatype, "recvbuf")?;
    // SAFETY: `input` holds n * blk bytes, `out` blk; the form came from
    // reduce_scatter_form.
    // A mix of device and host buffers: as in `shm_reduce`.
    for _ in 0..2 {
        // SAFETY: as above.
        if unsafe { node::reduce_scatter_block(form, comm, input, out, blk, ne, &et, &k, false)? } {
            break;
        }
    }
    contiguous_flush(recvbuf, recvcount, land)?;
    Ok(true)
}

/// The block size when every block has it and they lie back to back in rank order.
fn equal_blocks(bl: &[(usize, usize)]) -> Option<usize> {
    let b = bl.first()?.1;
    bl.iter()
        .enumerate()
        .all(|(i, &(o, l))| l == b && o == i * b)
        .then_some(b)
}

/// Runs the unpack steps of a packed receive area in a last stage.
fn finish_all(s: &mut Sched, unpacks: Vec<Step>) {
    if !unpacks.is_empty() {
        let st = s.stage();
        st.extend(unpacks);
    }
}

fn finish(s: &mut Sched, unpack: Option<Step>) {
    if let Some(u) = unpack {
        s.stage().push(u);
    }
}

/// Runs the schedule (blocking form) or starts it and returns its request.
fn launch(comm: MPI_Comm, s: Sched, request: Option<*mut MPI_Request>) -> Result<()> {
    match request {
        None => sched::run(comm, s),
        Some(r) => {
            if r.is_null() {
                return Err(err!(MPI_ERR_ARG, "request=NULL"));
            }
            let reads = super::bufcheck::on().then(|| s.read_only_user());
            let rid = with(|st| {
                let rid = sched::start(st, comm, s);
                st.progress();
                Ok(rid)
            })?;
            let h = super::handles::make(super::handles::KIND_REQUEST, rid);
            if let Some(ranges) = reads {
                super::bufcheck::note_collective(
                    h,
                    crate::core::hang::current_call(),
                    ranges,
                    comm,
                );
            }
            out(r, "request", h)
        }
    }
}

fn reduction_setup(
    s: &mut Sched,
    op: MPI_Op,
    datatype: MPI_Datatype,
    count: impl Into<i64>,
) -> Result<(usize, bool)> {
    let k = lookup(op)?;
    let (et, ne) = operand(&k, datatype, count)?;
    op_check(&k, et.dt)?;
    s.op = Some(k);
    s.operand = et;
    Ok((ne, is_commutative(&k)))
}

// ------------------------------------------------------------------ builders per call

/// The collective check's signature of `count` elements of `dt` at a send
/// buffer (None for MPI_IN_PLACE).
fn send_sig(
    sendbuf: *const c_void,
    count: impl Into<i64>,
    dt: MPI_Datatype,
) -> Option<super::check::Sig> {
    if in_place(sendbuf) {
        None
    } else {
        super::check::sig(count, dt)
    }
}

fn barrier_s(comm: MPI_Comm) -> Result<Sched> {
    let _check = super::check::collective(comm, None, None, || super::check::Shape::None)?;
    if let Some(iv) = inter::view(comm)? {
        return Ok(inter::barrier(&iv));
    }
    let v = basic::view(comm)?;
    let mut s = basic::sched(&v);
    barrier::b_barrier(&mut s, v.size, v.rank);
    Ok(s)
}

fn bcast_s(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Result<Sched> {
    let _check = super::check::collective(comm, Some(root), None, || {
        super::check::Shape::Same(super::check::sig(count, datatype))
    })?;
    if let Some(iv) = inter::view(comm)? {
        return inter::bcast(&iv, buffer, count, datatype, root);
    }
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let mut s = basic::sched(&v);
    let (b, len, unpack) = output(&mut s, buffer, count, datatype, "buffer")?;
    let ids = hier::nodes(&v.world);
    let algo = select::select(
        &select::BCAST,
        &select::Call {
            size: v.size,
            bytes: len,
            nodes: ids.is_some(),
            node_groups: ids.as_deref().is_some_and(hier::groups),
            across: ids.is_some(),
            ..Default::default()
        },
    );
    if let (Some(ids), "hierarchical") = (&ids, algo) {
        bcast::bcast_hier(&mut s, ids, v.rank, b, len, root);
    } else {
        bcast::by_name(&mut s, algo, v.size, v.rank, b, len, root);
    }
    if v.rank != root {
        finish(&mut s, unpack);
    }
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn reduce_s(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    all: bool,
) -> Result<Sched> {
    let _check = super::check::collective(comm, (!all).then_some(root), Some(op), || {
        super::check::Shape::Same(super::check::sig(count, datatype))
    })?;
    aliased(sendbuf, recvbuf, count > 0, (!all).then_some(root), comm)?;
    if let Some(iv) = inter::view(comm)? {
        return if all {
            inter::allreduce(&iv, sendbuf, recvbuf, count, datatype, op)
        } else {
            inter::reduce(&iv, sendbuf, recvbuf, count, datatype, op, root)
        };
    }
    let v = basic::view(comm)?;
    let root = if all { 0 } else { check_root(&v, root)? };
    let mut s = basic::sched(&v);
    let (ne, commutative) = reduction_setup(&mut s, op, datatype, count)?;
    let gets = all || v.rank == root;
    let (src, len) = if gets && in_place(sendbuf) {
        let (l, n, _) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
        (l, n)
    } else {
        input(&mut s, sendbuf, count, datatype, "sendbuf")?
    };
    // Reduce straight in a contiguous receive buffer; otherwise in a scratch accumulator.
    let out = if gets {
        Some(output(&mut s, recvbuf, count, datatype, "recvbuf")?)
    } else {
        None
    };
    let ids = if all { hier::nodes(&v.world) } else { None };
    // The allreduce algorithm (reduce has one).
    let algo = all.then(|| {
        select::select(
            &select::ALLREDUCE,
            &select::Call {
                size: v.size,
                bytes: len,
                elems: ne,
                commutative,
                nodes: ids.is_some(),
                node_groups: ids.as_deref().is_some_and(hier::groups),
                across: ids.is_some(),
                ..Default::default()
            },
        )
    });
    // The ring and the linear form read the input where it is (not in
    // place): no copy first.
    let ring = algo == Some("ring") && commutative && ne > 0 && v.size > 1;
    // Both split the vector into chunks: commutative (builtin) ops only, as
    // a user op may rely on seeing the whole vector (order is kept anyway).
    let linear = algo == Some("linear") && commutative && ne > 0 && v.size > 1;
    let direct = (ring || linear) && !in_place(sendbuf);
    let acc = match &out {
        Some((dst, _, None)) if direct => *dst,
        Some((dst, _, None)) => {
            s.push(Step::Copy {
                src,
                dst: *dst,
                len,
            });
            *dst
        }
        _ if direct => Loc::Scratch(s.buffer_reused(len), 0),
        _ => basic::scratch_copy(&mut s, src, len),
    };
    let tmp = Loc::Scratch(s.buffer_reused(if direct || linear { 0 } else { len }), 0);
    match algo {
        None => allreduce::b_reduce(&mut s, v.size, v.rank, acc, tmp, len, ne, root, commutative),
        Some("hierarchical") if commutative && ids.is_some() => {
            allreduce::allreduce_hier(&mut s, ids.as_ref().unwrap(), v.rank, acc, tmp, len, ne)
        }
        Some(_) if linear => {
            let input = if direct { src } else { acc };
            allreduce::allreduce_linear(&mut s, v.size, v.rank, input, acc, ne, len / ne);
        }
        Some(_) if ring => {
            let input = direct.then_some(src);
            allreduce::b_allreduce_ring(&mut s, v.size, v.rank, acc, tmp, input, ne, len / ne);
        }
        Some("rabenseifner") if commutative && ne > 0 => {
            allreduce::allreduce_rabenseifner(&mut s, v.size, v.rank, acc, tmp, ne, len / ne)
        }
        Some(_) => allreduce::b_allreduce(&mut s, v.size, v.rank, acc, tmp, len, ne, commutative),
    }
    if let Some((dst, _, Some(unpack))) = out {
        s.stage().push(Step::Copy { src: acc, dst, len });
        finish(&mut s, Some(unpack));
    }
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn gather_s(
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: Option<&[i64]>,
    displs: Option<&[i64]>,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Result<Sched> {
    let sendcount = sendcount.wide();
    let _check = super::check::collective(comm, Some(root), None, || {
        let mine = send_sig(sendbuf, sendcount, sendtype);
        if super::check::per_peer() {
            return rooted_pairs(comm, root, mine, counts, recvtype, true, in_place(sendbuf));
        }
        super::check::Shape::ToRoot {
            send: mine,
            recv: counts
                .and_then(|c| c.first())
                .and_then(|&c| super::check::sig(c, recvtype)),
        }
    })?;
    if let Some(iv) = inter::view(comm)? {
        return inter::gather(
            &iv, sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root,
        );
    }
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let me_root = v.rank == root;
    let mut s = basic::sched(&v);
    let inplace = me_root && in_place(sendbuf);
    let (rbuf, bl, _, unpacks) = if me_root {
        let pre: &[usize] = if inplace { &[root] } else { &[] };
        block_array(
            &mut s,
            recvbuf,
            counts.unwrap(),
            displs,
            recvtype,
            "recvbuf",
            true,
            pre,
        )?
    } else {
        (
            Loc::User(std::ptr::null_mut()),
            vec![(0, 0); v.size],
            0,
            Vec::new(),
        )
    };
    let mine = if inplace {
        None
    } else {
        Some(input(&mut s, sendbuf, sendcount, sendtype, "sendbuf")?)
    };
    // Only the root knows the layout; the choice must not depend on it.
    let algo = select::select(&select::GATHER, &select::Call::default());
    match (
        algo,
        counts.is_some() && displs.is_none(),
        mine.map(|m| m.1).or(bl.get(root).map(|b| b.1)),
    ) {
        ("binomial", true, Some(b)) => {
            gather::gather_binomial(&mut s, v.size, v.rank, mine.map(|m| m.0), rbuf, b, root)
        }
        _ => gather::b_gatherv(&mut s, v.size, v.rank, mine, rbuf, &bl, root),
    }
    finish_all(&mut s, unpacks);
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn scatter_s(
    sendbuf: *const c_void,
    counts: Option<&[i64]>,
    displs: Option<&[i64]>,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Result<Sched> {
    let recvcount = recvcount.wide();
    let _check = super::check::collective(comm, Some(root), None, || {
        let mine = if in_place(recvbuf) {
            None
        } else {
            super::check::sig(recvcount, recvtype)
        };
        if super::check::per_peer() {
            return rooted_pairs(comm, root, mine, counts, sendtype, false, in_place(recvbuf));
        }
        super::check::Shape::FromRoot {
            send: counts
                .and_then(|c| c.first())
                .and_then(|&c| super::check::sig(c, sendtype)),
            recv: mine,
        }
    })?;
    if let Some(iv) = inter::view(comm)? {
        return inter::scatter(
            &iv, sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root,
        );
    }
    let v = basic::view(comm)?;
    let root = check_root(&v, root)?;
    let me_root = v.rank == root;
    let mut s = basic::sched(&v);
    let (sbuf, bl, _, _) = if me_root {
        block_array(
            &mut s,
            sendbuf,
            counts.unwrap(),
            displs,
            sendtype,
            "sendbuf",
            false,
            &[],
        )?
    } else {
        (
            Loc::User(std::ptr::null_mut()),
            vec![(0, 0); v.size],
            0,
            Vec::new(),
        )
    };
    let (outb, unpack) = if me_root && in_place(recvbuf) {
        (None, None)
    } else {
        let (l, n, u) = output(&mut s, recvbuf, recvcount, recvtype, "recvbuf")?;
        (Some((l, n)), u)
    };
    let algo = select::select(&select::SCATTER, &select::Call::default());
    match (
        algo,
        counts.is_some() && displs.is_none(),
        outb.map(|o| o.1).or(bl.get(root).map(|b| b.1)),
    ) {
        ("binomial", true, Some(b)) => {
            gather::scatter_binomial(&mut s, v.size, v.rank, sbuf, outb.map(|o| o.0), b, root)
        }
        _ => gather::b_scatterv(&mut s, v.size, v.rank, sbuf, &bl, outb, root),
    }
    finish(&mut s, unpack);
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn allgather_s(
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: &[i64],
    displs: Option<&[i64]>,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<Sched> {
    let sendcount = sendcount.wide();
    let _check = super::check::collective(comm, None, None, || {
        if super::check::per_peer() {
            let me = my_rank(comm).unwrap_or(0);
            let mine = if in_place(sendbuf) {
                counts.get(me).and_then(|&c| super::check::sig(c, recvtype))
            } else {
                send_sig(sendbuf, sendcount, sendtype)
            };
            return super::check::Shape::Pairs {
                send: vec![mine; counts.len()],
                recv: counts
                    .iter()
                    .map(|&c| super::check::sig(c, recvtype))
                    .collect(),
            };
        }
        super::check::Shape::Blocks {
            send: send_sig(sendbuf, sendcount, sendtype),
            recv: counts.first().and_then(|&c| super::check::sig(c, recvtype)),
        }
    })?;
    if let Some(iv) = inter::view(comm)? {
        return inter::allgather(
            &iv, sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype,
        );
    }
    let v = basic::view(comm)?;
    let mut s = basic::sched(&v);
    let pre: &[usize] = if in_place(sendbuf) { &[v.rank] } else { &[] };
    let (rbuf, bl, end, unpacks) = block_array(
        &mut s, recvbuf, counts, displs, recvtype, "recvbuf", true, pre,
    )?;
    let mut mine = None;
    if !in_place(sendbuf) {
        let (m, n) = input(&mut s, sendbuf, sendcount, sendtype, "sendbuf")?;
        let (o, l) = bl[v.rank];
        if n != l {
            return Err(err!(
                MPI_ERR_TRUNCATE,
                "sendcount gives {n} bytes but the receive block of rank {} has {l}",
                v.rank
            ));
        }
        s.push(Step::Copy {
            src: m,
            dst: rbuf.offset(o),
            len: l,
        });
        mine = Some(m);
    }
    // Recursive doubling needs the blocks in rank order, back to back.
    let dense = bl.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0);
    let pow2 = v.size.is_power_of_two();
    let blk = equal_blocks(&bl);
    let spread = hier::nodes(&v.world);
    let across = spread.is_some();
    let ids = spread.filter(|i| dense && hier::nodes_consecutive(i));
    let algo = select::select(
        &select::ALLGATHER,
        &select::Call {
            size: v.size,
            bytes: end,
            block: blk,
            dense,
            nodes: ids.is_some(),
            node_groups: ids.as_deref().is_some_and(hier::groups),
            across,
            ..Default::default()
        },
    );
    if let (Some(ids), "hierarchical") = (&ids, algo) {
        allgather::allgather_hier(&mut s, ids, v.rank, rbuf, &bl);
    } else if algo == "recursive_doubling" && pow2 && dense {
        allgather::b_allgather_rd(&mut s, v.size, v.rank, rbuf, &bl);
    } else if let (Some(b), "bruck") = (blk, algo) {
        allgather::allgather_bruck(&mut s, v.size, v.rank, rbuf, b);
    } else if algo == "linear" {
        allgather::b_allgatherv_linear(&mut s, v.size, v.rank, rbuf, &bl, mine);
    } else {
        allgather::b_allgatherv_from(&mut s, v.size, v.rank, rbuf, &bl, mine);
    }
    finish_all(&mut s, unpacks);
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn alltoall_s(
    sendbuf: *const c_void,
    scounts: &[i64],
    sdispls: Option<&[i64]>,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    rcounts: &[i64],
    rdispls: Option<&[i64]>,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<Sched> {
    let _check = super::check::collective(comm, None, None, || {
        if super::check::per_peer() {
            let recv: Vec<_> = rcounts
                .iter()
                .map(|&c| super::check::sig(c, recvtype))
                .collect();
            let send = if in_place(sendbuf) {
                recv.clone()
            } else {
                scounts
                    .iter()
                    .map(|&c| super::check::sig(c, sendtype))
                    .collect()
            };
            return super::check::Shape::Pairs { send, recv };
        }
        super::check::Shape::Blocks {
            send: scounts
                .first()
                .and_then(|&c| send_sig(sendbuf, c, sendtype)),
            recv: rcounts
                .first()
                .and_then(|&c| super::check::sig(c, recvtype)),
        }
    })?;
    if let Some(iv) = inter::view(comm)? {
        return inter::alltoall(
            &iv, sendbuf, scounts, sdispls, sendtype, recvbuf, rcounts, rdispls, recvtype,
        );
    }
    let v = basic::view(comm)?;
    let mut s = basic::sched(&v);
    let all: Vec<usize> = if in_place(sendbuf) {
        (0..v.size).collect()
    } else {
        Vec::new()
    };
    let (rbuf, rbl, rend, unpacks) = block_array(
        &mut s, recvbuf, rcounts, rdispls, recvtype, "recvbuf", true, &all,
    )?;
    let (sbl, sloc) = if in_place(sendbuf) {
        (rbl.clone(), basic::scratch_copy(&mut s, rbuf, rend))
    } else {
        let (sloc, sbl, _, _) = block_array(
            &mut s,
            sendbuf,
            scounts,
            sdispls,
            sendtype,
            "sendbuf",
            false,
            &[],
        )?;
        (sbl, sloc)
    };
    let blk = equal_blocks(&sbl).filter(|b| equal_blocks(&rbl) == Some(*b));
    let call = select::Call {
        size: v.size,
        block: blk,
        across: hier::nodes(&v.world).is_some(),
        ..Default::default()
    };
    match (select::select(&select::ALLTOALL, &call), blk) {
        ("bruck", Some(b)) => alltoall::alltoall_bruck(&mut s, v.size, v.rank, sloc, rbuf, b),
        (algo, _) => alltoall::b_alltoallv(
            &mut s,
            v.size,
            v.rank,
            sloc,
            &sbl,
            rbuf,
            &rbl,
            algo == "linear",
        ),
    }
    finish_all(&mut s, unpacks);
    Ok(s)
}

/// A reduce-scatter's result blocks: (offset, bytes) per rank, bytes in all,
/// elements in all.
#[allow(clippy::type_complexity)]
fn scatter_layout(
    counts: &[i64],
    datatype: MPI_Datatype,
) -> Result<(Vec<(usize, usize)>, usize, i64)> {
    let (es, _) = size_and_type(datatype)?;
    let (bl, end) = blocks(counts, None, es)?;
    Ok((bl, end, counts.iter().map(|&c| c.max(0)).sum()))
}

fn reduce_scatter_s(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[i64],
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Result<Sched> {
    let _check = super::check::collective(comm, None, Some(op), || {
        super::check::Shape::Counts(
            super::check::counts_hash(counts),
            super::check::sig(1, datatype),
        )
    })?;
    aliased(sendbuf, recvbuf, counts.iter().any(|&c| c > 0), None, comm)?;
    if let Some(iv) = inter::view(comm)? {
        return inter::reduce_scatter(&iv, sendbuf, recvbuf, counts, datatype, op);
    }
    let v = basic::view(comm)?;
    let mut s = basic::sched(&v);
    let (bl, end, total) = scatter_layout(counts, datatype)?;
    let (ne, commutative) = reduction_setup(&mut s, op, datatype, total)?;
    // The whole input (in place: the receive buffer holds all of it), packed
    // if the type is not contiguous.
    let (src, _) = if in_place(sendbuf) {
        let (l, n, _) = output(&mut s, recvbuf, total, datatype, "recvbuf")?;
        (l, n)
    } else {
        input(&mut s, sendbuf, total, datatype, "sendbuf")?
    };
    let pow2 = v.size.is_power_of_two();
    let algo = select::select(
        &select::REDUCE_SCATTER,
        &select::Call {
            size: v.size,
            bytes: end,
            elems: ne,
            commutative,
            ..Default::default()
        },
    );
    let esize = end.checked_div(ne).unwrap_or(1);
    if algo == "linear" && ne > 0 && v.size > 1 {
        let (out, _, unpack) = output(&mut s, recvbuf, counts[v.rank], datatype, "recvbuf")?;
        reduce_scatter::reduce_scatter_linear(&mut s, v.size, v.rank, src, out, &bl, esize);
        finish(&mut s, unpack);
        return Ok(s);
    }
    let tmp = Loc::Scratch(s.buffer_reused(end), 0);
    if algo == "ring" && commutative && v.size > 1 {
        // In place the input shares the receive buffer with the result: a copy.
        let input = if in_place(sendbuf) {
            basic::scratch_copy(&mut s, src, end)
        } else {
            src
        };
        let (out, _, unpack) = output(&mut s, recvbuf, counts[v.rank], datatype, "recvbuf")?;
        reduce_scatter::reduce_scatter_ring(&mut s, v.size, v.rank, input, tmp, out, &bl, esize);
        finish(&mut s, unpack);
        return Ok(s);
    }
    let acc = basic::scratch_copy(&mut s, src, end);
    let (out, mylen, unpack) = output(&mut s, recvbuf, counts[v.rank], datatype, "recvbuf")?;
    match algo {
        "pairwise" if commutative => {
            reduce_scatter::reduce_scatter_pairwise(&mut s, v.size, v.rank, acc, tmp, &bl, esize)
        }
        "recursive_halving" if commutative && pow2 => {
            reduce_scatter::reduce_scatter_halving(&mut s, v.size, v.rank, acc, tmp, &bl, esize)
        }
        _ => {
            allreduce::b_reduce(&mut s, v.size, v.rank, acc, tmp, end, ne, 0, commutative);
            gather::b_scatterv(&mut s, v.size, v.rank, acc, &bl, Some((out, mylen)), 0);
            finish(&mut s, unpack);
            return Ok(s);
        }
    }
    s.stage().push(Step::Copy {
        src: acc.offset(bl[v.rank].0),
        dst: out,
        len: mylen,
    });
    finish(&mut s, unpack);
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn scan_s(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> Result<Sched> {
    let _check = super::check::collective(comm, None, Some(op), || {
        super::check::Shape::Same(super::check::sig(count, datatype))
    })?;
    aliased(sendbuf, recvbuf, count > 0, None, comm)?;
    let v = basic::view(comm)?;
    let mut s = basic::sched(&v);
    let (ne, _) = reduction_setup(&mut s, op, datatype, count)?;
    let (src, len) = if in_place(sendbuf) {
        let (l, n, _) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
        (l, n)
    } else {
        input(&mut s, sendbuf, count, datatype, "sendbuf")?
    };
    let acc = basic::scratch_copy(&mut s, src, len);
    let tmp = Loc::Scratch(s.buffer_reused(len), 0);
    let pre = Loc::Scratch(s.buffer(vec![0u8; len]), 0);
    let call = select::Call {
        size: v.size,
        ..Default::default()
    };
    if select::select(&select::SCAN, &call) == "recursive_doubling" {
        scan::scan_doubling(&mut s, v.size, v.rank, acc, len, ne, exclusive);
    } else {
        scan::b_scan(&mut s, v.size, v.rank, acc, tmp, pre, len, ne, exclusive);
    }
    if !(exclusive && v.rank == 0) {
        let (dst, _, unpack) = output(&mut s, recvbuf, count, datatype, "recvbuf")?;
        s.stage().push(Step::Copy { src: acc, dst, len });
        finish(&mut s, unpack);
    }
    Ok(s)
}

/// Entries of a per-rank array argument: the communicator's size, or the
/// remote group's on an intercommunicator.
fn basic_size(comm: MPI_Comm) -> Result<usize> {
    with(|st| Ok(st.comm(comm)?.peer_size() as usize))
}

/// The collective check's description of a rooted v form (gatherv:
/// `to_root`, scatterv): every rank's block for the root or from it
/// (`mine`), and at the root the blocks of `counts` elements of `dt` per
/// rank (its own skipped when in place).
#[allow(clippy::too_many_arguments)]
fn rooted_pairs(
    comm: MPI_Comm,
    root: c_int,
    mine: Option<super::check::Sig>,
    counts: Option<&[i64]>,
    dt: MPI_Datatype,
    to_root: bool,
    in_place_here: bool,
) -> super::check::Shape {
    let n = basic_size(comm).unwrap_or(0);
    let me = my_rank(comm).unwrap_or(0);
    let mut one = vec![None; n];
    if let Some(r) = usize::try_from(root).ok().filter(|&r| r < n) {
        one[r] = mine;
    }
    let many: Vec<_> = match counts {
        Some(c) if me as c_int == root => c
            .iter()
            .enumerate()
            .map(|(j, &k)| {
                if in_place_here && j == me {
                    None
                } else {
                    super::check::sig(k, dt)
                }
            })
            .collect(),
        _ => vec![None; n],
    };
    if to_root {
        super::check::Shape::Pairs {
            send: one,
            recv: many,
        }
    } else {
        super::check::Shape::Pairs {
            send: many,
            recv: one,
        }
    }
}

/// This process's rank in `comm`.
fn my_rank(comm: MPI_Comm) -> Result<usize> {
    with(|st| Ok(st.comm(comm)?.rank as usize))
}

/// Size of this process's own group (Reduce_scatter's counts on an
/// intercommunicator).
fn local_size(comm: MPI_Comm) -> Result<usize> {
    with(|st| Ok(st.comm(comm)?.size as usize))
}

/// Entries of the root's per-rank arrays and whether this rank is `root`
/// (checked; on an intercommunicator the root is MPI_ROOT, the rest of its
/// group passes MPI_PROC_NULL, the other group the root's rank).
fn root_info(comm: MPI_Comm, root: c_int) -> Result<(usize, bool)> {
    let (n, inter, rank) = with(|st| {
        let c = st.comm(comm)?;
        Ok((c.peer_size() as usize, c.remote.is_some(), c.rank))
    })?;
    if inter {
        return Ok((n, root == MPI_ROOT));
    }
    if root < 0 || root as usize >= n {
        return Err(err!(
            MPI_ERR_ROOT,
            "root={root} is not a rank of the communicator (size {n})"
        ));
    }
    Ok((n, rank == root))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    let _check = super::check::collective(comm, None, None, || super::check::Shape::None)?;
    if node::barrier_in_area(comm) {
        return shm::barrier(comm);
    }
    let s = barrier_s(comm)?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let _check = super::check::collective(comm, Some(root), None, || {
        super::check::Shape::Same(super::check::sig(count, datatype))
    })?;
    if shm::eligible(comm, 0) {
        let d = describe(buffer, count, datatype, "buffer")?;
        let n = basic_size(comm)?;
        if root < 0 || root as usize >= n {
            return Err(err!(
                MPI_ERR_ROOT,
                "root={root} is not a rank of the communicator (size {n})"
            ));
        }
        // Every rank must decide alike: only the byte count (equal on all
        // ranks) matters, not whether this rank's datatype is contiguous.
        if let Some(form) = node::bcast_form(n, d.bytes) {
            // SAFETY: the pointer holds `len` bytes; the form came from
            // bcast_form.
            let go = |p: *mut u8, len: usize, dev: bool| unsafe {
                node::bcast(form, comm, p, len, root as usize, dev)
            };
            let Some(t) = d.staged else {
                // `d` describes `d.bytes` contiguous bytes of the user's buffer.
                return go(d.ptr, d.bytes, false);
            };
            // A contiguous device buffer goes as it is in the single copy
            // (device and host ranks settle each pair, `shm::bcast_cma`).
            if form == node::AreaForm::Single
                && d.kind == crate::gpu::MemKind::Device
                && t.is_contiguous(count as usize)
                && crate::gpu::ipc::enabled()
            {
                let start = (buffer as *mut u8).wrapping_offset(t.start());
                return go(start, d.bytes, true);
            }
            // Reused: a fresh large buffer costs a page fault per 4 KiB.
            let mut pool = crate::core::pool::take(d.bytes);
            let v = &mut pool[..d.bytes];
            let me = my_rank(comm)? as c_int;
            let mut r = Ok(());
            if me == root {
                // SAFETY: the buffer holds `count` elements of `t`.
                r = unsafe {
                    crate::datatype::pack_mem(&t, count as usize, buffer as *const u8, d.kind, v)
                };
            }
            // Every rank takes part, also a root whose packing failed.
            let sent = go(v.as_mut_ptr(), d.bytes, false);
            r = r.and(sent);
            if r.is_ok() && me != root {
                // SAFETY: as above.
                r = unsafe {
                    crate::datatype::unpack_mem(&t, count as usize, v, buffer as *mut u8, d.kind)
                };
            }
            crate::core::pool::give(pool);
            return r;
        }
    }
    let s = bcast_s(buffer, count, datatype, root, comm)?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let _check = super::check::collective(comm, Some(root), Some(op), || {
        super::check::Shape::Same(super::check::sig(count, datatype))
    })?;
    if shm_reduce(sendbuf, recvbuf, count, datatype, op, Some(root), comm)? {
        return Ok(());
    }
    let s = reduce_s(sendbuf, recvbuf, count, datatype, op, root, comm, false)?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let _check = super::check::collective(comm, None, Some(op), || {
        super::check::Shape::Same(super::check::sig(count, datatype))
    })?;
    if shm_reduce(sendbuf, recvbuf, count, datatype, op, None, comm)? {
        return Ok(());
    }
    let s = reduce_s(sendbuf, recvbuf, count, datatype, op, 0, comm, true)?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let n = basic_size(comm)?;
        gather_s(
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            Some(&vec![recvcount.wide(); n]),
            None,
            recvtype,
            root,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (n, me_root) = root_info(comm, root)?;
        let (c, d) = if me_root {
            (
                Some(ints(recvcounts, n, "recvcounts")?),
                Some(ints(displs, n, "displs")?),
            )
        } else {
            (None, None)
        };
        gather_s(
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            c.as_deref(),
            d.as_deref(),
            recvtype,
            root,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let n = basic_size(comm)?;
        scatter_s(
            sendbuf,
            Some(&vec![sendcount.wide(); n]),
            None,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            root,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (n, me_root) = root_info(comm, root)?;
        let (c, d) = if me_root {
            (
                Some(ints(sendcounts, n, "sendcounts")?),
                Some(ints(displs, n, "displs")?),
            )
        } else {
            (None, None)
        };
        scatter_s(
            sendbuf,
            c.as_deref(),
            d.as_deref(),
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            root,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let _check = super::check::collective(comm, None, None, || super::check::Shape::Blocks {
        send: send_sig(sendbuf, sendcount, sendtype),
        recv: super::check::sig(recvcount, recvtype),
    })?;
    if shm_allgather(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    )? {
        return Ok(());
    }
    let s = {
        let n = basic_size(comm)?;
        allgather_s(
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            &vec![recvcount.wide(); n],
            None,
            recvtype,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let n = basic_size(comm)?;
        let c = ints(recvcounts, n, "recvcounts")?;
        let d = ints(displs, n, "displs")?;
        allgather_s(
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            &c,
            Some(&d),
            recvtype,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let _check = super::check::collective(comm, None, None, || super::check::Shape::Blocks {
        send: send_sig(sendbuf, sendcount, sendtype),
        recv: super::check::sig(recvcount, recvtype),
    })?;
    if shm_alltoall(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    )? {
        return Ok(());
    }
    let s = {
        let n = basic_size(comm)?;
        alltoall_s(
            sendbuf,
            &vec![sendcount.wide(); n],
            None,
            sendtype,
            recvbuf,
            &vec![recvcount.wide(); n],
            None,
            recvtype,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let n = basic_size(comm)?;
        let rc = ints(recvcounts, n, "recvcounts")?;
        let rd = ints(rdispls, n, "rdispls")?;
        let (sc, sd) = if in_place(sendbuf) {
            (rc.clone(), rd.clone())
        } else {
            (
                ints(sendcounts, n, "sendcounts")?,
                ints(sdispls, n, "sdispls")?,
            )
        };
        alltoall_s(
            sendbuf,
            &sc,
            Some(&sd),
            sendtype,
            recvbuf,
            &rc,
            Some(&rd),
            recvtype,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let _check = super::check::collective(comm, None, Some(op), || {
        super::check::Shape::Same(super::check::sig(recvcount, datatype))
    })?;
    if shm_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm)? {
        return Ok(());
    }
    let s = {
        let n = local_size(comm)?;
        reduce_scatter_s(
            sendbuf,
            recvbuf,
            &vec![recvcount.wide(); n],
            datatype,
            op,
            comm,
        )
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let n = local_size(comm)?;
        let c = ints(recvcounts, n, "recvcounts")?;
        reduce_scatter_s(sendbuf, recvbuf, &c, datatype, op, comm)
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let s = scan_s(sendbuf, recvbuf, count, datatype, op, comm, false)?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let s = scan_s(sendbuf, recvbuf, count, datatype, op, comm, true)?;
    launch(comm, s, None)
}

// ------------------------------------------------------------------ w-variants and neighbourhood collectives

/// One stage: every receive and send at once (PROC_NULL peers skipped).
fn exchange(s: &mut Sched, sends: Vec<(i32, Loc, usize)>, recvs: Vec<(i32, Loc, usize)>) {
    let st = s.stage();
    for (p, at, len) in recvs {
        if p != MPI_PROC_NULL {
            st.push(Step::Recv {
                peer: p as usize,
                at,
                len,
            });
        }
    }
    for (p, at, len) in sends {
        if p != MPI_PROC_NULL {
            st.push(Step::Send {
                peer: p as usize,
                at,
                len,
            });
        }
    }
}

/// In- and out-neighbours of a communicator's topology, in the standard's order.
fn neighbors(comm: MPI_Comm) -> Result<(Vec<i32>, Vec<i32>)> {
    use crate::core::comm::Topo;
    with(|st| {
        let c = st.comm(comm)?;
        match &c.topo {
            Some(Topo::Cart { dims, periods }) => {
                let mut coords = vec![0; dims.len()];
                let mut r = c.rank;
                for d in (0..dims.len()).rev() {
                    coords[d] = r % dims[d];
                    r /= dims[d];
                }
                let at = |d: usize, delta: i32| -> i32 {
                    let mut cc = coords.clone();
                    cc[d] += delta;
                    if periods[d] {
                        cc[d] = cc[d].rem_euclid(dims[d]);
                    } else if cc[d] < 0 || cc[d] >= dims[d] {
                        return MPI_PROC_NULL;
                    }
                    cc.iter().zip(dims).fold(0, |acc, (&x, &n)| acc * n + x)
                };
                let mut v = Vec::new();
                for d in 0..dims.len() {
                    v.push(at(d, -1));
                    v.push(at(d, 1));
                }
                Ok((v.clone(), v))
            }
            Some(Topo::Graph { index, edges }) => {
                let r = c.rank as usize;
                let start = if r == 0 { 0 } else { index[r - 1] as usize };
                let v = edges[start..index[r] as usize].to_vec();
                Ok((v.clone(), v))
            }
            Some(Topo::DistGraph { sources, dests, .. }) => Ok((sources.clone(), dests.clone())),
            None => Err(err!(
                MPI_ERR_TOPOLOGY,
                "comm=0x{:08x} has no topology (neighbourhood collectives need one)",
                comm as u32
            )),
        }
    })
}

/// Per-block (count, datatype, byte displacement) descriptions → schedule locations.
#[allow(clippy::type_complexity)]
fn typed_blocks(
    s: &mut Sched,
    base: *mut c_void,
    blocks: &[(i64, MPI_Datatype, isize)],
    recv: bool,
    name: &str,
) -> Result<(Vec<(Loc, usize)>, Vec<Step>)> {
    let mut locs = Vec::with_capacity(blocks.len());
    let mut unpacks = Vec::new();
    for &(count, dt, disp) in blocks {
        let p = (base as *mut u8).wrapping_offset(disp) as *mut c_void;
        if recv {
            let (l, n, u) = output(s, p, count, dt, name)?;
            locs.push((l, n));
            unpacks.extend(u);
        } else {
            let (l, n) = input(s, p, count, dt, name)?;
            locs.push((l, n));
        }
    }
    Ok((locs, unpacks))
}

#[allow(clippy::too_many_arguments)]
fn alltoallw_s(
    sendbuf: *const c_void,
    sblocks: &[(i64, MPI_Datatype, isize)],
    recvbuf: *mut c_void,
    rblocks: &[(i64, MPI_Datatype, isize)],
    comm: MPI_Comm,
    peers: Option<(Vec<i32>, Vec<i32>)>,
) -> Result<Sched> {
    let _check = super::check::collective(comm, None, None, || {
        if !super::check::per_peer() {
            return super::check::Shape::None;
        }
        let sigs = |b: &[(i64, MPI_Datatype, isize)]| -> Vec<_> {
            b.iter()
                .map(|&(c, dt, _)| super::check::sig(c, dt))
                .collect()
        };
        let recv = sigs(rblocks);
        let send = if in_place(sendbuf) {
            recv.clone()
        } else {
            sigs(sblocks)
        };
        match &peers {
            None => super::check::Shape::Pairs { send, recv },
            // A neighbourhood collective: its blocks per edge, summed per
            // pair of ranks.
            Some((srcs, dsts)) => {
                let n = basic_size(comm).unwrap_or(0);
                let per_rank = |ranks: &[i32], blocks: Vec<Option<super::check::Sig>>| {
                    let mut v: Vec<Option<super::check::Sig>> = vec![None; n];
                    for (&r, b) in ranks.iter().zip(blocks) {
                        let slot = usize::try_from(r).ok().and_then(|r| v.get_mut(r));
                        if let (Some(slot), Some(b)) = (slot, b) {
                            *slot = Some(slot.map_or(b, |a| a.and(b)));
                        }
                    }
                    v
                };
                super::check::Shape::Pairs {
                    send: per_rank(dsts, send),
                    recv: per_rank(srcs, recv),
                }
            }
        }
    })?;
    // Whether the neighbours come from a Cartesian topology (see below).
    let mut cart = false;
    let (v, (srcs, dsts)) = match peers {
        Some(p) => {
            let c = with(|st| {
                let c = st.comm_mut(comm)?;
                let tag = c.next_coll_tag();
                cart = matches!(c.topo, Some(crate::core::comm::Topo::Cart { .. }));
                Ok(View {
                    ctx: c.ctx + 1,
                    world: c.world.clone(),
                    rank: c.rank as usize,
                    size: c.size as usize,
                    tag,
                    comm,
                })
            })?;
            (c, p)
        }
        None => match inter::view(comm)? {
            Some(iv) => {
                if in_place(sendbuf) {
                    return Err(err!(
                        MPI_ERR_BUFFER,
                        "sendbuf=MPI_IN_PLACE is not allowed on an intercommunicator"
                    ));
                }
                let remote = inter::remote_peers(&iv);
                (iv.all, (remote.clone(), remote))
            }
            None => {
                let v = basic::view(comm)?;
                let all: Vec<i32> = (0..v.size as i32).collect();
                (v, (all.clone(), all))
            }
        },
    };
    let mut s = basic::sched(&v);
    let (rl, unpacks) = typed_blocks(&mut s, recvbuf, rblocks, true, "recvbuf")?;
    let sl = if in_place(sendbuf) {
        // In place: send from a snapshot of the receive blocks.
        rl.iter()
            .map(|&(l, n)| (basic::scratch_copy(&mut s, l, n), n))
            .collect()
    } else {
        typed_blocks(&mut s, sendbuf as *mut c_void, sblocks, false, "sendbuf")?.0
    };
    if sl.len() != dsts.len() || rl.len() != srcs.len() {
        return Err(err!(
            MPI_ERR_ARG,
            "block counts do not match the number of neighbours"
        ));
    }
    let sends = dsts
        .iter()
        .zip(&sl)
        .map(|(&p, &(l, n))| (p, l, n))
        .collect();
    let mut recvs: Vec<_> = srcs
        .iter()
        .zip(&rl)
        .map(|(&p, &(l, n))| (p, l, n))
        .collect();
    if cart {
        // On a Cartesian topology the block a rank sends in the negative
        // direction of a dimension lands in its neighbour's block for the
        // positive one and the other way round (MPI-4.0 errata, MPI-4.1
        // section 8.6). Where both neighbours of a periodic dimension of
        // size 1 or 2 are the same rank, only the order in which the two
        // receives from it are posted decides that: so they are posted with
        // each dimension's pair swapped, to match its sends in order.
        for pair in recvs.chunks_mut(2) {
            pair.reverse();
        }
    }
    exchange(&mut s, sends, recvs);
    // Unpacking waits for the receives: a stage of its own (a step in the
    // exchange's stage would run when it starts, before the data is in).
    finish_all(&mut s, unpacks);
    Ok(s)
}

/// Block descriptions for counts/displacements in units of the datatype's extent.
fn extent_blocks(
    counts: &[i64],
    displs: Option<&[i64]>,
    dt: MPI_Datatype,
) -> Result<Vec<(i64, MPI_Datatype, isize)>> {
    let t = super::datatype::lookup(dt)?;
    let ext = t.extent();
    let mut off = 0isize;
    let mut v = Vec::new();
    for (i, &c) in counts.iter().enumerate() {
        if c < 0 {
            return Err(err!(MPI_ERR_COUNT, "counts[{i}]={c} must be non-negative"));
        }
        let far = || {
            err!(
                MPI_ERR_ARG,
                "counts[{i}]={c} or its displacement is beyond the address space (extent {ext})"
            )
        };
        let d = match displs {
            Some(d) => (d[i] as isize).checked_mul(ext).ok_or_else(far)?,
            None => off,
        };
        v.push((c, dt, d));
        off = (c as isize)
            .checked_mul(ext)
            .and_then(|l| l.checked_add(d))
            .ok_or_else(far)?;
    }
    Ok(v)
}

fn byte_blocks(
    counts: *const impl Wide,
    displs: *const impl Wide,
    types: *const MPI_Datatype,
    n: usize,
    name: &str,
) -> Result<Vec<(i64, MPI_Datatype, isize)>> {
    let (c, d, t) = (
        ints(counts, n, name)?,
        ints(displs, n, name)?,
        in_slice(types, n, name)?,
    );
    Ok((0..n).map(|i| (c[i], t[i], d[i] as isize)).collect())
}

fn byte_blocks_aint(
    counts: *const impl Wide,
    displs: *const super::MPI_Aint,
    types: *const MPI_Datatype,
    n: usize,
    name: &str,
) -> Result<Vec<(i64, MPI_Datatype, isize)>> {
    if n > 0 && (displs.is_null() || types.is_null()) {
        return Err(err!(MPI_ERR_ARG, "{name}: NULL displacement or type array"));
    }
    let (c, d, t) = (
        ints(counts, n, name)?,
        in_slice(displs, n, name)?,
        in_slice(types, n, name)?,
    );
    Ok((0..n).map(|i| (c[i], t[i], d[i] as isize)).collect())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let n = basic_size(comm)?;
        let rb = byte_blocks(recvcounts, rdispls, recvtypes, n, "recvcounts")?;
        let sb = if in_place(sendbuf) {
            vec![]
        } else {
            byte_blocks(sendcounts, sdispls, sendtypes, n, "sendcounts")?
        };
        alltoallw_s(sendbuf, &sb, recvbuf, &rb, comm, None)
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (si, so) = neighbors(comm)?;
        let sb = vec![(sendcount.wide(), sendtype, 0isize); so.len()];
        let rb = extent_blocks(&vec![recvcount.wide(); si.len()], None, recvtype)?;
        alltoallw_s(sendbuf, &sb, recvbuf, &rb, comm, Some((si, so)))
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (si, so) = neighbors(comm)?;
        let sb = vec![(sendcount.wide(), sendtype, 0isize); so.len()];
        let rc = ints(recvcounts, si.len(), "recvcounts")?;
        let rd = ints(displs, si.len(), "displs")?;
        let rb = extent_blocks(&rc, Some(&rd), recvtype)?;
        alltoallw_s(sendbuf, &sb, recvbuf, &rb, comm, Some((si, so)))
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (si, so) = neighbors(comm)?;
        let sb = extent_blocks(&vec![sendcount.wide(); so.len()], None, sendtype)?;
        let rb = extent_blocks(&vec![recvcount.wide(); si.len()], None, recvtype)?;
        alltoallw_s(sendbuf, &sb, recvbuf, &rb, comm, Some((si, so)))
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (si, so) = neighbors(comm)?;
        let sc = ints(sendcounts, so.len(), "sendcounts")?;
        let sd = ints(sdispls, so.len(), "sdispls")?;
        let rc = ints(recvcounts, si.len(), "recvcounts")?;
        let rd = ints(rdispls, si.len(), "rdispls")?;
        let sb = extent_blocks(&sc, Some(&sd), sendtype)?;
        let rb = extent_blocks(&rc, Some(&rd), recvtype)?;
        alltoallw_s(sendbuf, &sb, recvbuf, &rb, comm, Some((si, so)))
    }?;
    launch(comm, s, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const super::MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const super::MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let s = {
        let (si, so) = neighbors(comm)?;
        let sb = byte_blocks_aint(sendcounts, sdispls, sendtypes, so.len(), "sendcounts")?;
        let rb = byte_blocks_aint(recvcounts, rdispls, recvtypes, si.len(), "recvcounts")?;
        alltoallw_s(sendbuf, &sb, recvbuf, &rb, comm, Some((si, so)))
    }?;
    launch(comm, s, None)
}

/// Registers an inactive persistent collective request.
fn persistent(
    comm: MPI_Comm,
    factory: crate::core::state::CollFactory,
    request: *mut MPI_Request,
) -> Result<()> {
    if super::check::on() {
        // The collective check runs at the initialisation, which every rank
        // makes in the same order (the starts need not be).
        super::check::at_init(&*factory)?;
    }
    let rid = with(|st| {
        // The tag is fixed now, in the order of initialisation (the same on
        // every rank), not at each MPI_Start.
        let tag = st.comm_mut(comm)?.persistent_tag();
        let mut r = crate::core::state::Request::new(
            crate::core::state::ReqKind::Coll,
            comm,
            std::ptr::null_mut(),
            0,
        );
        r.active = false;
        r.coll_factory = Some(Box::new(factory));
        r.coll_tag = tag;
        Ok(st.reqs.insert(r))
    })?;
    out(
        request,
        "request",
        super::handles::make(super::handles::KIND_REQUEST, rid),
    )
}
