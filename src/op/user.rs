//! User reduction ops as the library keeps them, what an op handle names,
//! and `apply`, which runs a builtin kernel or the user's function on two
//! operands. Calls the kernels of `op` and nothing above.

use crate::base::error::Result;
use std::os::raw::{c_int, c_void};

/// A user reduction function: (invec, inoutvec, len, datatype).
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);

#[derive(Clone, Copy)]
pub struct UserOp {
    pub f: UserFn,
    pub commute: bool,
    /// Made by MPI_Op_create_c: `len` is an `MPI_Count`.
    pub big: bool,
}

impl UserOp {
    /// Calls the user's function on `len` elements of `dt`.
    ///
    /// # Safety
    /// `a` and `b` each hold `len` elements of `dt`, laid out as it says.
    pub unsafe fn call(&self, a: *mut c_void, b: *mut c_void, len: usize, dt: c_int) {
        let mut d = dt;
        if self.big {
            let mut n = len as i64;
            // SAFETY: an MPI_User_function_c (its `len` is an MPI_Count).
            unsafe {
                let f = std::mem::transmute::<UserFn, UserFnC>(self.f);
                f(a, b, &mut n, &mut d)
            }
        } else {
            let mut n = len as c_int;
            // SAFETY: an MPI_User_function; the buffers are the caller's contract.
            unsafe { (self.f)(a, b, &mut n, &mut d) }
        }
    }
}

/// The large-count user function: (invec, inoutvec, len, datatype).
type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut c_int);

/// What an op handle names.
#[derive(Clone, Copy)]
pub enum OpKind {
    Builtin(c_int),
    User(UserOp),
}

pub fn is_commutative(k: &OpKind) -> bool {
    match k {
        OpKind::Builtin(_) => true,
        OpKind::User(u) => u.commute,
    }
}

/// inout = in op inout for `count` elements of `dt`, whose packed stream is
/// laid out as its buffers are. Must be called without the library lock.
pub fn apply(k: &OpKind, dt: c_int, count: usize, inbuf: &[u8], inout: &mut [u8]) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    match k {
        OpKind::Builtin(o) => {
            let e = super::check(*o, dt)?;
            super::reduce_builtin(*o, e, count, inbuf, inout);
        }
        OpKind::User(u) => {
            // An int `len` holds at most 2^31 - 1: more elements go in
            // pieces (the op is element-wise); the buffers hold `count`
            // elements back to back.
            let piece = if u.big { count } else { c_int::MAX as usize };
            let stride = inout.len() / count;
            let mut done = 0;
            while done < count {
                let n = (count - done).min(piece);
                // SAFETY: both buffers hold `count` elements of `dt`,
                // `stride` bytes apart; the input is not written.
                unsafe {
                    u.call(
                        inbuf.as_ptr().add(done * stride) as *mut c_void,
                        inout.as_mut_ptr().add(done * stride) as *mut c_void,
                        n,
                        dt,
                    )
                };
                done += n;
            }
        }
    }
    Ok(())
}
