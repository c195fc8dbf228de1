//! The node-area forms of the blocking collectives: whether a call goes
//! through the node's shared-memory area and in which form (copies through
//! the slots, "shm", or one `process_vm_readv` per block out of the owner's
//! buffer, "shm_cma"), decided from the selection table (`select::area`,
//! so a forced `OXMPI_<COLLECTIVE>` picks either form) and from facts that
//! are the same on every rank; then running that form on contiguous bytes.
//! The abi layer converts the arguments (buffers, datatypes, MPI_IN_PLACE,
//! roots) and calls in; `shm` holds the algorithms themselves.

use super::reduce::Operand;
use super::select::{self, Family};
use super::shm;
use crate::base::error::Result;
use crate::op::user::OpKind;
use std::os::raw::c_int;

/// The node area's forms move bytes with the CPU (copies through the slots,
/// `process_vm_readv`): the abi stages device buffers in host memory
/// before calling in, which debug builds check here (release builds skip
/// the second classification, a driver call per buffer).
#[inline(always)]
fn host(bufs: &[(*const u8, usize)]) -> Result<()> {
    for &(p, n) in bufs {
        if !p.is_null() && n > 0 {
            crate::gpu::host_only(crate::gpu::classify(p, n), "node-area collective")?;
        }
    }
    Ok(())
}

/// How a blocking call moves its data through the node's area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AreaForm {
    /// Copies through the slots ("shm").
    Copies,
    /// One `process_vm_readv` per block out of the owner's buffer ("shm_cma").
    Single,
}

/// The form a blocking call on `comm` takes: "shm_cma" where the call has
/// that form (`cma` is Some), it is preferred (`Some(true)`) and every local
/// rank can read the others' memory; else "shm" when each slot's part,
/// `bytes`, is at most `copy_max`; else None, a schedule.
pub fn area_form(
    comm: c_int,
    coll: &Family,
    bytes: usize,
    copy_max: usize,
    cma: Option<bool>,
) -> Option<AreaForm> {
    if !shm::eligible(comm, 0) {
        return None;
    }
    eligible_form(coll, bytes, copy_max, cma)
}

/// `area_form` for a caller that has found `comm` eligible itself.
pub fn eligible_form(
    coll: &Family,
    bytes: usize,
    copy_max: usize,
    cma: Option<bool>,
) -> Option<AreaForm> {
    let default = if cma == Some(true) && shm::cma_all() {
        Some("shm_cma")
    } else if bytes <= copy_max {
        Some("shm")
    } else {
        None
    };
    let single = cma.is_some() && shm::cma_all();
    form_of(select::area(coll, default, bytes <= copy_max, single))
}

/// The form an area algorithm's name stands for.
fn form_of(name: Option<&str>) -> Option<AreaForm> {
    match name? {
        "shm" => Some(AreaForm::Copies),
        _ => Some(AreaForm::Single),
    }
}

/// The form of a blocking reduce (`rooted`) or allreduce of `len` bytes on
/// an eligible communicator; `builtin`: the op is predefined (the single
/// copy cuts the vector in slices, which a user function may not expect).
pub fn reduce_form(rooted: bool, len: usize, builtin: bool) -> Option<AreaForm> {
    let family = if rooted {
        &select::REDUCE
    } else {
        &select::ALLREDUCE
    };
    // The single copy: a builtin op, every local rank able to read the
    // others' memory. The same answer on every rank.
    let single = len > 0 && builtin && shm::cma_all();
    // Above the copies' limit the single copy: at 4 ranks on 2 cores
    // 0.66-0.75 of the linear algorithm's time from 256 KiB to 16 MiB (a
    // first form that read the finished slices); at 2 ranks that form was
    // within the noise of the ring, and writing them took 0.76-1.01 of it
    // (docs/performance.md, fifth round).
    let copies = len <= shm::MAX_BYTES;
    let default = if copies {
        Some("shm")
    } else if single {
        Some("shm_cma")
    } else {
        None
    };
    form_of(select::area(family, default, copies, single))
}

/// Runs a reduce (to `root`) or allreduce of `ne` elements (`len` bytes) in
/// `form`.
///
/// `dev`: the buffers are device memory, which only the single copy takes
/// (by CUDA IPC, where every rank's are); false (nothing done) where the
/// ranks' buffers were a mix of device and host memory, which every rank
/// then learns alike: the caller stages its device buffers in host memory
/// and calls again.
///
/// # Safety
/// `input` holds `len` bytes; `out` too where the result lands (every rank
/// for allreduce, the root for reduce); the single-copy form was chosen by
/// `reduce_form` (which checked `cma_all`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    form: AreaForm,
    comm: c_int,
    input: *const u8,
    out: *mut u8,
    len: usize,
    ne: usize,
    et: &Operand,
    k: &OpKind,
    root: Option<usize>,
    dev: bool,
) -> Result<bool> {
    debug_assert!(dev && form == AreaForm::Single || host(&[(input, len), (out, len)]).is_ok());
    // SAFETY: forwarded contract.
    unsafe {
        match (form, root) {
            (AreaForm::Single, Some(r)) => {
                shm::reduce_cma(comm, input, out, ne, len / ne, et.dt, k, r, dev)
            }
            (AreaForm::Single, None) => {
                shm::allreduce_cma(comm, input, out, ne, len / ne, et.dt, k, dev)
            }
            (AreaForm::Copies, _) => {
                shm::reduce(comm, input, out, len, ne, et, k, root).map(|()| true)
            }
        }
    }
}

/// The form of a blocking allgather of `blk` bytes per rank.
pub fn allgather_form(comm: c_int, blk: usize) -> Option<AreaForm> {
    area_form(
        comm,
        &select::ALLGATHER,
        blk,
        shm::MAX_BYTES,
        Some(blk > shm::allgather_copy_max()),
    )
}

/// Runs an allgather of `blk` bytes per rank in `form`; `dev`: the buffers
/// are device memory, which only the single copy takes.
///
/// # Safety
/// `mine` holds `blk` bytes, `out` one block per rank; the single copy was
/// chosen by `allgather_form`.
pub unsafe fn allgather(
    form: AreaForm,
    comm: c_int,
    mine: *const u8,
    out: *mut u8,
    blk: usize,
    dev: bool,
) -> Result<()> {
    debug_assert!(dev && form == AreaForm::Single || host(&[(mine, blk), (out, blk)]).is_ok());
    // SAFETY: forwarded contract.
    unsafe {
        match form {
            AreaForm::Copies => shm::allgather(comm, mine, out, blk),
            AreaForm::Single => shm::allgather_cma(comm, mine, out, blk, dev),
        }
    }
}

/// The form of a blocking alltoall of `blk` bytes per pair of ranks among
/// `n`; the single copy reads other ranks' send buffers while they fill
/// their receive buffers, so it cannot serve MPI_IN_PLACE (`in_place`).
pub fn alltoall_form(comm: c_int, blk: usize, n: usize, in_place: bool) -> Option<AreaForm> {
    let cma = (!in_place).then_some(blk * n > shm::alltoall_copy_max());
    area_form(comm, &select::ALLTOALL, blk * n, shm::MAX_BYTES, cma)
}

/// Runs an alltoall of `blk` bytes per pair in `form`; `dev` as for
/// `allgather`.
///
/// # Safety
/// `send` and `out` hold one block per rank; for the single copy they are
/// distinct buffers and the form came from `alltoall_form`.
pub unsafe fn alltoall(
    form: AreaForm,
    comm: c_int,
    send: *const u8,
    out: *mut u8,
    blk: usize,
    dev: bool,
) -> Result<()> {
    debug_assert!(dev && form == AreaForm::Single || host(&[(send, blk), (out, blk)]).is_ok());
    // SAFETY: forwarded contract.
    unsafe {
        match form {
            AreaForm::Copies => shm::alltoall(comm, send, out, blk),
            AreaForm::Single => shm::alltoall_cma(comm, send, out, blk, dev),
        }
    }
}

/// The form of a blocking reduce_scatter_block of `blk` bytes per rank
/// among `n`, on an eligible communicator. The single copy reads the blocks
/// in an order of its own: builtin (commutative) ops only; the default
/// above the copies' limit.
pub fn reduce_scatter_form(blk: usize, n: usize, builtin: bool) -> Option<AreaForm> {
    let bytes = blk * n;
    eligible_form(
        &select::REDUCE_SCATTER,
        bytes,
        shm::MAX_BYTES,
        (builtin && blk > 0).then_some(bytes > shm::MAX_BYTES),
    )
}

/// Runs a reduce_scatter_block in `form`.
///
/// `dev` and the answer as for `reduce`.
///
/// # Safety
/// `input` holds one block per rank, `out` one block; the single copy was
/// chosen by `reduce_scatter_form`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce_scatter_block(
    form: AreaForm,
    comm: c_int,
    input: *const u8,
    out: *mut u8,
    blk: usize,
    ne: usize,
    et: &Operand,
    k: &OpKind,
    dev: bool,
) -> Result<bool> {
    debug_assert!(dev && form == AreaForm::Single || host(&[(input, blk), (out, blk)]).is_ok());
    // SAFETY: forwarded contract.
    unsafe {
        match form {
            AreaForm::Single => {
                shm::reduce_scatter_block_cma(comm, input, out, blk, ne, et.dt, k, dev)
            }
            AreaForm::Copies => {
                shm::reduce_scatter_block(comm, input, out, blk, ne, et, k).map(|()| true)
            }
        }
    }
}

/// The form of a blocking broadcast of `bytes` among `n` ranks on an
/// eligible communicator (only the byte count, equal on all ranks, counts).
pub fn bcast_form(n: usize, bytes: usize) -> Option<AreaForm> {
    let cma = shm::bcast_single_copy(n, bytes);
    eligible_form(&select::BCAST, bytes, shm::BCAST_MAX, Some(cma))
}

/// Runs a broadcast of `len` bytes at `p` from `root` in `form`.
///
/// `dev`: `p` is device memory, which only the single copy takes.
///
/// # Safety
/// `p` holds `len` bytes; the single copy was chosen by `bcast_form`.
pub unsafe fn bcast(
    form: AreaForm,
    comm: c_int,
    p: *mut u8,
    len: usize,
    root: usize,
    dev: bool,
) -> Result<()> {
    debug_assert!(dev && form == AreaForm::Single || host(&[(p, len)]).is_ok());
    // SAFETY: forwarded contract.
    unsafe {
        match form {
            AreaForm::Copies => shm::bcast(comm, p, len, root),
            AreaForm::Single => shm::bcast_cma(comm, p, len, root, dev),
        }
    }
}

/// Whether a blocking barrier on `comm` goes through the area.
pub fn barrier_in_area(comm: c_int) -> bool {
    shm::eligible(comm, 0) && select::area(&select::BARRIER, Some("shm"), true, false).is_some()
}
