//! Reduction operations: user ops, MPI_Reduce_local, MPI_Op_commutative.

use super::consts::*;
use super::handles::{self, KIND_OP};
use super::ptr::{in_slice, inp, out, out_slice};
use super::{MPI_Datatype, MPI_Op};
use crate::coll::reduce::Operand;
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::err;
use crate::gpu::MemKind;
use crate::op;
pub use crate::op::user::{apply, is_commutative, OpKind, UserFn, UserOp};
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

pub type MPI_User_function = c_void;

pub fn lookup(op: MPI_Op) -> Result<OpKind> {
    if op::is_builtin_op(op) {
        return Ok(OpKind::Builtin(op));
    }
    if op == MPI_OP_NULL {
        return Err(err!(MPI_ERR_OP, "op=MPI_OP_NULL"));
    }
    handles::index(op, KIND_OP)
        .and_then(|i| with(|st| Ok(st.ops.get(i).copied())).ok().flatten())
        .map(OpKind::User)
        .ok_or_else(|| {
            err!(
                MPI_ERR_OP,
                "op=0x{:08x} is not a valid op{}",
                op as u32,
                handles::kind_hint(op, KIND_OP)
            )
        })
}

/// Checks (op, datatype) before any data moves.
pub fn check(k: &OpKind, dt: MPI_Datatype) -> Result<()> {
    match k {
        OpKind::Builtin(o) => op::check(*o, dt).map(|_| ()),
        OpKind::User(_) => crate::abi::datatype::size_and_type(dt).map(|_| ()),
    }
}

/// The datatype a reduction op is applied with, and the count of its
/// elements, for `count` elements of the user's `dt`: a builtin op works on
/// the one basic type a derived type is made of (so many per element; a
/// type mixing basic types has no builtin reduction); a user op is called
/// with the user's own handle and count, whatever the type is made of.
pub fn operand(k: &OpKind, dt: MPI_Datatype, count: impl Into<i64>) -> Result<(Operand, usize)> {
    let n = count.into().max(0) as usize;
    let (size, t) = crate::abi::datatype::size_and_type(dt)?;
    let Some(t) = t else {
        return Ok((
            Operand {
                dt,
                size,
                native: None,
            },
            n,
        ));
    };
    match k {
        OpKind::Builtin(o) => {
            let (b, per) = t.homogeneous().ok_or_else(|| {
                err!(
                    MPI_ERR_OP,
                    "op={} is not defined for datatype 0x{:08x}, which mixes basic types (a user op can reduce it)",
                    op::op_name(*o),
                    dt as u32
                )
            })?;
            Ok((
                Operand {
                    dt: b,
                    size: handles::type_size(b)?,
                    native: None,
                },
                per * n,
            ))
        }
        // A packed stream of elements is laid out as the user's buffers
        // only when the elements lie back to back from offset 0.
        OpKind::User(_) => {
            // A count above 2^31 - 1 came as one element of a temporary
            // type (`large::big`): the user's function sees its own type.
            if let Some((orig, per)) = crate::abi::large::of_big(dt) {
                let (osize, ot) = crate::abi::datatype::size_and_type(orig)?;
                let native = ot.filter(|t| !t.is_dense());
                return Ok((
                    Operand {
                        dt: orig,
                        size: osize,
                        native,
                    },
                    n * per as usize,
                ));
            }
            let dense = t.is_dense();
            Ok((
                Operand {
                    dt,
                    size,
                    native: (!dense).then_some(t),
                },
                n,
            ))
        }
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(
    user_fn: *mut MPI_User_function,
    commute: c_int,
    op: *mut MPI_Op,
) -> c_int {
    if user_fn.is_null() {
        return Err(err!(MPI_ERR_ARG, "user_fn=NULL"));
    }
    // SAFETY: a non-NULL MPI_User_function pointer is a C function of that type.
    let f = unsafe { std::mem::transmute::<*mut c_void, UserFn>(user_fn) };
    let h = with(|st| {
        Ok(handles::make(
            KIND_OP,
            st.ops.insert(UserOp {
                f,
                commute: commute != 0,
                big: false,
            }),
        ))
    })?;
    out(op, "op", h)
}

/// The large-count form: the function's `len` is an `MPI_Count`.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create_c(
    user_fn: *mut super::MPI_User_function_c,
    commute: c_int,
    op: *mut MPI_Op,
) -> c_int {
    if user_fn.is_null() {
        return Err(err!(MPI_ERR_ARG, "user_fn=NULL"));
    }
    // SAFETY: a non-NULL MPI_User_function_c pointer is a C function of that
    // type; it is called as one (`UserOp::call`, `big`).
    let f = unsafe { std::mem::transmute::<*mut c_void, UserFn>(user_fn as *mut c_void) };
    let h = with(|st| {
        Ok(handles::make(
            KIND_OP,
            st.ops.insert(UserOp {
                f,
                commute: commute != 0,
                big: true,
            }),
        ))
    })?;
    out(op, "op", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    let h = inp(op, "op")?;
    if op::is_builtin_op(h) {
        return Err(err!(
            MPI_ERR_OP,
            "op={} is predefined and cannot be freed",
            op::op_name(h)
        ));
    }
    lookup(h)?;
    with(|st| {
        st.ops.remove(handles::index(h, KIND_OP).unwrap());
        Ok(())
    })?;
    out(op, "op", MPI_OP_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> c_int {
    let k = lookup(op)?;
    out(commute, "commute", is_commutative(&k) as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> c_int {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
    }
    let k = lookup(op)?;
    let (o, n) = operand(&k, datatype, count)?;
    check(&k, o.dt)?;
    let (size, t) = crate::abi::datatype::size_and_type(datatype)?;
    let bytes = count as usize * size;
    if bytes == 0 {
        return Ok(());
    }
    if inbuf.is_null() || inoutbuf.is_null() {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{}=NULL",
            if inbuf.is_null() { "inbuf" } else { "inoutbuf" }
        ));
    }
    // Where the data starts (see `describe`).
    let lb = t.as_ref().map_or(0, |t| t.true_lb);
    let ik = crate::gpu::classify((inbuf as *const u8).wrapping_offset(lb), bytes);
    let ok = crate::gpu::classify((inoutbuf as *const u8).wrapping_offset(lb), bytes);
    if ik == MemKind::Device || ok == MemKind::Device {
        // SAFETY: both buffers hold `count` elements of `datatype` (MPI's rule).
        return unsafe { reduce_local_staged(&k, &o, n, datatype, count, inbuf, inoutbuf, ik, ok) };
    }
    match (&k, t) {
        // The user's function on the user's buffers, as they are.
        (OpKind::User(u), _) => {
            // SAFETY: both buffers hold `count` elements of `datatype` (MPI's rule).
            unsafe { u.call(inbuf as *mut c_void, inoutbuf, count as usize, datatype) };
            Ok(())
        }
        // A derived type: its basic elements, packed, and the result unpacked.
        (OpKind::Builtin(_), Some(t)) if !t.is_contiguous(count as usize) || t.true_lb != 0 => {
            let mut a = vec![0u8; bytes];
            let mut b = vec![0u8; bytes];
            // SAFETY: both buffers hold `count` elements of `t` (MPI's rule).
            unsafe {
                crate::datatype::pack(&t, count as usize, inbuf as *const u8, &mut a);
                crate::datatype::pack(&t, count as usize, inoutbuf as *const u8, &mut b);
            }
            apply(&k, o.dt, n, &a, &mut b)?;
            // SAFETY: as above.
            unsafe { crate::datatype::unpack(&t, count as usize, &b, inoutbuf as *mut u8) };
            Ok(())
        }
        (OpKind::Builtin(_), t) => {
            let start = t.and_then(|t| t.segs.first().map(|s| s.0)).unwrap_or(0);
            // The data of `count` elements is one run of `bytes` bytes from
            // `start` in both buffers (MPI's rule).
            let a = in_slice((inbuf as *const u8).wrapping_offset(start), bytes, "inbuf")?;
            let b = out_slice(
                (inoutbuf as *mut u8).wrapping_offset(start),
                bytes,
                "inoutbuf",
            )?;
            apply(&k, o.dt, n, a, b)
        }
    }
}

/// MPI_Reduce_local with either buffer in device memory: a kernel on the
/// device where both are, the type is contiguous and the op builtin
/// (`gpu::kernels`); otherwise both operands packed into host copies (with
/// the driver's copies), the op applied there (a user-defined op too, on
/// host copies laid out as its datatype says), and the result unpacked into
/// `inoutbuf`.
///
/// # Safety
/// Both buffers hold `count` elements of `datatype`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_local_staged(
    k: &OpKind,
    o: &Operand,
    n: usize,
    datatype: MPI_Datatype,
    count: c_int,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    ik: MemKind,
    ok: MemKind,
) -> Result<()> {
    let t = crate::abi::datatype::lookup(datatype)?;
    // Both in device memory, contiguous, a builtin op: a kernel on the device.
    if let (OpKind::Builtin(op), MemKind::Device, MemKind::Device) = (k, ik, ok) {
        let elem = crate::op::elem_of(o.dt);
        if let Some(e) = elem.filter(|_| t.is_contiguous(count as usize) && o.native.is_none()) {
            let off = t.start();
            // SAFETY: both buffers hold `count` elements of `t`, which are
            // `n` elements of kind `e` from `off` (contiguous).
            let done = unsafe {
                crate::gpu::kernels::reduce(
                    *op,
                    e,
                    n,
                    (inbuf as *const u8).wrapping_offset(off),
                    (inoutbuf as *mut u8).wrapping_offset(off),
                )
            };
            if done {
                return Ok(());
            }
        }
    }
    let bytes = t.size * count as usize;
    let mut a = vec![0u8; bytes];
    let mut b = vec![0u8; bytes];
    // SAFETY: both buffers hold `count` elements of `t` (contract).
    unsafe {
        crate::datatype::pack_mem(&t, count as usize, inbuf as *const u8, ik, &mut a)?;
        crate::datatype::pack_mem(&t, count as usize, inoutbuf as *const u8, ok, &mut b)?;
    }
    crate::coll::reduce::apply_packed(k, o, n, &a, &mut b)?;
    // SAFETY: as above.
    unsafe { crate::datatype::unpack_mem(&t, count as usize, &b, inoutbuf as *mut u8, ok) }
}
