//! The single-copy reductions on device buffers: where every rank of a
//! single-copy allreduce, reduce or reduce_scatter_block published device
//! buffers (`Buffers::dev`), the ranks reach each other's buffers through
//! CUDA IPC instead of `process_vm_readv`. One more call of the area
//! carries each rank's IPC references (input and output: the allocation's
//! handle, buffer id and offset, `gpu::ipc`); each rank opens the others'
//! (cached by (peer, buffer id)) and reduces its slice of the vector on the
//! device, as the host forms do: the same slices, the same order of
//! operands, each slice computed once, so the result is bitwise identical
//! on every rank. Kernels (`gpu::kernels`) combine the parts where the op
//! and type have one and the part lies on this rank's device; a part on
//! another device is first copied here; without a kernel each step runs on
//! host copies, which give the same bits. Finished slices go into the other
//! ranks' outputs by device copies.

use super::{area, others, piece_bytes, reduce_slice, rooted_slice, Area};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::gpu::ipc::{IpcRef, WIRE};
use crate::gpu::{scratch, Scratch};
use crate::op::user::{apply, OpKind};
use std::os::raw::c_int;

/// Payload of the references call: a presence word, then the input's and
/// the output's references.
const REFS: usize = 8 + 2 * WIRE;

/// What one rank published in the references call.
struct Refs {
    src: Option<IpcRef>,
    dst: Option<IpcRef>,
}

/// The references call: publishes mine (`src` and `dst` where not null)
/// and returns everyone's, once all have published. A buffer that cannot
/// be exported is published as absent, so the others fail too rather than
/// wait; the error is returned after the call is finished.
fn exchange(comm: c_int, src: *const u8, dst: *mut u8) -> Result<Option<(Area, Vec<Refs>)>> {
    let Some(a) = area(comm, |_| REFS)? else {
        return Ok(None);
    };
    a.before_write()?;
    let mut failed = None;
    let mut export = |p: *const u8| -> Option<IpcRef> {
        if p.is_null() {
            return None;
        }
        match crate::gpu::ipc::export(p) {
            Ok(r) => Some(r),
            Err(e) => {
                failed.get_or_insert(e);
                None
            }
        }
    };
    let (s, d) = (export(src), export(dst));
    let mut payload = [0u8; REFS];
    let present = s.is_some() as u64 | (d.is_some() as u64) << 1;
    payload[..8].copy_from_slice(&present.to_le_bytes());
    if let Some(r) = s {
        payload[8..8 + WIRE].copy_from_slice(&r.to_bytes());
    }
    if let Some(r) = d {
        payload[8 + WIRE..].copy_from_slice(&r.to_bytes());
    }
    // SAFETY: this call's region of my slot holds REFS bytes (`area` was
    // asked for them); nobody reads it before `publish`, and nobody still
    // reads an earlier call there (`before_write`).
    unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), a.half(a.me), REFS) };
    a.publish();
    let all = a.wait_seq(0..a.n).map(|()| {
        (0..a.n)
            .map(|i| {
                let mut b = [0u8; REFS];
                // SAFETY: rank i wrote REFS bytes before its Release store of
                // seq, which `wait_seq` saw with Acquire; they stay until
                // everyone is done with this call.
                unsafe { std::ptr::copy_nonoverlapping(a.half(i), b.as_mut_ptr(), REFS) };
                let present = u64::from_le_bytes(b[..8].try_into().unwrap());
                Refs {
                    src: (present & 1 != 0)
                        .then(|| IpcRef::from_bytes(&b[8..8 + WIRE]))
                        .flatten(),
                    dst: (present & 2 != 0)
                        .then(|| IpcRef::from_bytes(&b[8 + WIRE..]))
                        .flatten(),
                }
            })
            .collect()
    });
    match (failed, all) {
        (None, Ok(all)) => Ok(Some((a, all))),
        // Finished (everyone's wait included) before the error goes up.
        (Some(e), _) | (None, Err(e)) => {
            Err(a.finish_single(Err(e), || ()).err().unwrap_or_else(|| {
                crate::err!(MPI_ERR_OTHER, "CUDA IPC references could not be exchanged")
            }))
        }
    }
}

/// The world ranks of `comm`'s ranks (the IPC cache's peers).
pub(super) fn world_ranks(comm: c_int) -> Result<Vec<usize>> {
    crate::core::runtime::with(|st| {
        if comm == MPI_COMM_WORLD {
            return Ok((0..st.size as usize).collect());
        }
        Ok(st.comm(comm)?.world.iter().map(|&w| w as usize).collect())
    })
}

/// Rank i's input (or output, `dst`) of this call, mapped here.
fn mapped(world: &[usize], refs: &[Refs], i: usize, dst: bool) -> Result<*mut u8> {
    let r = if dst { &refs[i].dst } else { &refs[i].src };
    let r = r.as_ref().ok_or_else(|| {
        crate::err!(
            MPI_ERR_OTHER,
            "rank {i} of the communicator could not export its device {} buffer for CUDA IPC",
            if dst { "output" } else { "input" }
        )
    })?;
    crate::gpu::ipc::open(world[i], r)
}

/// How a slice is combined: the op, its datatype, and whether kernels are
/// still tried (false after the first that could not run).
struct Combine<'a> {
    op: &'a OpKind,
    dt: c_int,
    esize: usize,
    kernel: bool,
    /// Device space for a part that lies on another device (from the cache).
    near: Option<Scratch>,
}

impl<'a> Combine<'a> {
    fn new(op: &'a OpKind, dt: c_int, esize: usize) -> Combine<'a> {
        Combine {
            op,
            dt,
            esize,
            kernel: true,
            near: None,
        }
    }

    /// `acc = part op acc` on `len` bytes: `acc` is device memory of this
    /// rank's device, `part` device memory here or mapped from a peer.
    ///
    /// # Safety
    /// Both name `len` bytes of device memory, not overlapping.
    unsafe fn step(&mut self, part: *const u8, acc: *mut u8, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let cnt = len / self.esize.max(1);
        if self.kernel {
            let e = crate::op::elem_of(self.dt);
            if let (OpKind::Builtin(op), Some(e)) = (self.op, e) {
                let src = if crate::gpu::on_current_device(part) {
                    part
                } else {
                    if self.near.as_ref().is_none_or(|s| s.len() < len) {
                        self.near = Some(scratch(len)?);
                    }
                    let near = self.near.as_ref().unwrap().ptr();
                    // SAFETY: `near` holds len bytes; `part` names len bytes.
                    unsafe { crate::gpu::copy(near, part, len)? };
                    near as *const u8
                };
                // SAFETY: both are device memory of this device, `cnt`
                // elements of kind e.
                if unsafe { crate::gpu::kernels::reduce(*op, e, cnt, src, acc) } {
                    return Ok(());
                }
            }
            self.kernel = false;
        }
        // Host copies, a piece at a time; the host kernels give the same
        // bits as the device ones.
        let piece = piece_bytes(self.esize) * 16;
        let mut a = crate::core::pool::take(piece.min(len));
        let mut b = crate::core::pool::take(piece.min(len));
        let r = (|| -> Result<()> {
            let mut at = 0;
            while at < len {
                let l = piece.min(len - at);
                // SAFETY: [at, at + l) lies in both ranges; a and b hold l bytes.
                unsafe {
                    crate::gpu::copy(a.as_mut_ptr(), part.add(at), l)?;
                    crate::gpu::copy(b.as_mut_ptr(), acc.add(at), l)?;
                }
                apply(
                    self.op,
                    self.dt,
                    l / self.esize.max(1),
                    &a[..l],
                    &mut b[..l],
                )?;
                // SAFETY: as above.
                unsafe { crate::gpu::copy(acc.add(at), b.as_ptr(), l)? };
                at += l;
            }
            Ok(())
        })();
        crate::core::pool::give(a);
        crate::core::pool::give(b);
        r
    }
}

/// Reduces bytes [lo, lo + len) of every rank's input into `acc` (device
/// memory here), in the order `reduce_part` uses: the next ranks' parts
/// (me + 1, me + 2, ...) each op the accumulator, which starts as the first
/// of them, then my own part; in place (`acc` is that range of my input) the
/// accumulator starts as mine. Each peer's input is opened just before it
/// is read (a small mapping cache may close an earlier one).
///
/// # Safety
/// `acc` and `mine` hold `len` bytes of device memory; every rank's input
/// holds lo + len.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_slice_ipc(
    a: &Area,
    world: &[usize],
    refs: &[Refs],
    c: &mut Combine,
    lo: usize,
    len: usize,
    acc: *mut u8,
    mine: *const u8,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    let in_place = std::ptr::eq(acc, mine);
    let mut rest = others(a);
    if !in_place {
        match rest.next() {
            Some(i) => {
                let src = mapped(world, refs, i, false)?;
                // SAFETY: rank i's input holds lo + len bytes; acc holds len.
                unsafe { crate::gpu::copy(acc, src.add(lo), len)? };
            }
            // SAFETY: both hold len bytes and do not overlap (MPI's rule).
            None => unsafe { crate::gpu::copy(acc, mine, len)? },
        }
    }
    for i in rest {
        let src = mapped(world, refs, i, false)?;
        // SAFETY: as above.
        unsafe { c.step(src.add(lo), acc, len)? };
    }
    if !in_place && a.n > 1 {
        // SAFETY: mine holds len bytes and does not overlap acc.
        unsafe { c.step(mine, acc, len)? };
    }
    Ok(())
}

/// `allreduce_cma` on device buffers: rank r reduces slice r into its own
/// output and copies it into every other rank's.
///
/// # Safety
/// `input` and `out` hold `count * esize` bytes of device memory.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn allreduce(
    comm: c_int,
    input: *const u8,
    out: *mut u8,
    count: usize,
    esize: usize,
    dt: c_int,
    op: &OpKind,
) -> Result<()> {
    let world = world_ranks(comm)?;
    let Some((a, refs)) = exchange(comm, input, out)? else {
        return Ok(());
    };
    let (lo, len) = reduce_slice(count, a.n, esize, a.me);
    let mut c = Combine::new(op, dt, esize);
    let r = (|| -> Result<()> {
        // SAFETY: my slice of my buffers; every rank's hold count * esize.
        unsafe {
            let acc = out.add(lo);
            reduce_slice_ipc(&a, &world, &refs, &mut c, lo, len, acc, input.add(lo))?;
            for j in others(&a) {
                let dst = mapped(&world, &refs, j, true)?;
                crate::gpu::copy(dst.add(lo), acc, len)?;
            }
        }
        Ok(())
    })();
    a.finish_single(r, || ())
}

/// `reduce_cma` on device buffers: rank r reduces its slice (`rooted_slice`)
/// into the root's output, the root straight into its own, the others
/// through device scratch copied into the root's.
///
/// # Safety
/// `input` holds `count * esize` bytes of device memory, as does `out` at
/// the root (null elsewhere).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce(
    comm: c_int,
    input: *const u8,
    out: *mut u8,
    count: usize,
    esize: usize,
    dt: c_int,
    op: &OpKind,
    root: usize,
) -> Result<()> {
    let world = world_ranks(comm)?;
    let me_root = with_me(comm)? == root;
    let Some((a, refs)) = exchange(
        comm,
        input,
        if me_root { out } else { std::ptr::null_mut() },
    )?
    else {
        return Ok(());
    };
    let (lo, len) = rooted_slice(count, a.n, esize, a.me, root);
    let mut c = Combine::new(op, dt, esize);
    let r = (|| -> Result<()> {
        if a.me == root {
            // SAFETY: my slice of my input and output.
            return unsafe {
                reduce_slice_ipc(
                    &a,
                    &world,
                    &refs,
                    &mut c,
                    lo,
                    len,
                    out.add(lo),
                    input.add(lo),
                )
            };
        }
        let acc = scratch(len)?;
        // SAFETY: acc holds len bytes, my input lo + len; the root's output
        // holds count * esize bytes.
        unsafe {
            reduce_slice_ipc(&a, &world, &refs, &mut c, lo, len, acc.ptr(), input.add(lo))?;
            let dst = mapped(&world, &refs, root, true)?;
            crate::gpu::copy(dst.add(lo), acc.ptr(), len)
        }
    })();
    a.finish_single(r, || ())
}

/// `reduce_scatter_block_cma` on device buffers: rank r reduces block r of
/// every rank's input into its output (through device scratch in place,
/// where the output is my first block, which rank 0 still reads).
///
/// # Safety
/// `input` holds n * blk bytes of device memory, `out` blk.
pub(super) unsafe fn reduce_scatter_block(
    comm: c_int,
    input: *const u8,
    out: *mut u8,
    blk: usize,
    count: usize,
    dt: c_int,
    op: &OpKind,
) -> Result<()> {
    let world = world_ranks(comm)?;
    let Some((a, refs)) = exchange(comm, input, std::ptr::null_mut())? else {
        return Ok(());
    };
    let in_place = std::ptr::eq(input, out);
    let esize = blk.checked_div(count).unwrap_or(1);
    let mut c = Combine::new(op, dt, esize);
    let mut scratch_blk = None;
    let r = (|| -> Result<()> {
        let acc = if in_place {
            scratch_blk.insert(scratch(blk)?).ptr()
        } else {
            out
        };
        // SAFETY: block me of my input and every rank's; acc holds blk bytes.
        unsafe {
            let mine = input.add(a.me * blk);
            reduce_slice_ipc(&a, &world, &refs, &mut c, a.me * blk, blk, acc, mine)
        }
    })();
    a.finish_single(r, || ())?;
    if let Some(s) = scratch_blk {
        // SAFETY: out holds blk bytes; nobody reads my input any more.
        unsafe { crate::gpu::copy(out, s.ptr(), blk)? };
    }
    Ok(())
}

/// My rank in `comm`.
fn with_me(comm: c_int) -> Result<usize> {
    crate::core::runtime::with(|st| {
        if comm == MPI_COMM_WORLD {
            return Ok(st.rank as usize);
        }
        Ok(st.comm(comm)?.rank as usize)
    })
}
