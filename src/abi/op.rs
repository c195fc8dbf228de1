//! Reduction operations: user ops, MPI_Reduce_local, MPI_Op_commutative.

use super::consts::*;
use super::handles::{self, KIND_OP};
use super::ptr::{inp, out};
use super::{MPI_Datatype, MPI_Op};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::err;
use crate::op;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

/// A user reduction function: (invec, inoutvec, len, datatype).
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);
pub type MPI_User_function = c_void;

#[derive(Clone, Copy)]
pub struct UserOp {
    pub f: UserFn,
    pub commute: bool,
}

/// What an op handle names.
#[derive(Clone, Copy)]
pub enum OpKind {
    Builtin(c_int),
    User(UserOp),
}

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

pub fn is_commutative(k: &OpKind) -> bool {
    match k {
        OpKind::Builtin(_) => true,
        OpKind::User(u) => u.commute,
    }
}

/// Checks (op, datatype) before any data moves.
pub fn check(k: &OpKind, dt: MPI_Datatype) -> Result<()> {
    match k {
        OpKind::Builtin(o) => op::check(*o, dt).map(|_| ()),
        OpKind::User(_) => handles::type_size(dt).map(|_| ()),
    }
}

/// inout = in op inout for `count` elements of `dt`. Must be called without the library lock.
pub fn apply(
    k: &OpKind,
    dt: MPI_Datatype,
    count: usize,
    inbuf: &[u8],
    inout: &mut [u8],
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    match k {
        OpKind::Builtin(o) => {
            let e = op::check(*o, dt)?;
            op::reduce_builtin(*o, e, count, inbuf, inout);
        }
        OpKind::User(u) => {
            let mut len = count as c_int;
            let mut d = dt;
            // SAFETY: a user function with the MPI_User_function signature; both
            // buffers hold `count` elements of `dt`, and the input is not written.
            unsafe {
                (u.f)(
                    inbuf.as_ptr() as *mut c_void,
                    inout.as_mut_ptr() as *mut c_void,
                    &mut len,
                    &mut d,
                )
            };
        }
    }
    Ok(())
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
    let f = std::mem::transmute::<*mut c_void, UserFn>(user_fn);
    let h = with(|st| {
        Ok(handles::make(
            KIND_OP,
            st.ops.insert(UserOp {
                f,
                commute: commute != 0,
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
    check(&k, datatype)?;
    let bytes = count as usize * handles::type_size(datatype)?;
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
    let a = std::slice::from_raw_parts(inbuf as *const u8, bytes);
    let b = std::slice::from_raw_parts_mut(inoutbuf as *mut u8, bytes);
    apply(&k, datatype, count as usize, a, b)
}
