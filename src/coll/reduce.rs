//! What a reduction op is applied with inside the collectives
//! (`Operand`: the datatype handle the op sees, the size of its elements and,
//! for a user op on a type with holes, the type) and `apply_packed`, which
//! lays packed operands out as the type describes before a user op sees
//! them. Calls `op` and `datatype`.

use crate::base::error::Result;
use crate::datatype::Type;
use crate::op::user::{apply, OpKind};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// What a reduction op is applied with (see `operand`).
#[derive(Clone, Default)]
pub struct Operand {
    /// The datatype handle the op is called with.
    pub dt: c_int,
    /// Packed bytes of one of its elements.
    pub size: usize,
    /// For a user op on a derived type whose packed stream is not laid out
    /// as its buffers are: the type, to unpack operands before the call and
    /// pack the result after.
    pub native: Option<Arc<Type>>,
}

/// inout = in op inout for `count` elements of `o.dt`, both operands in
/// packed form. A user op on a type with holes or padding sees its operands
/// laid out as the type describes them (in scratch buffers), as it would in
/// the user's own buffers. Must be called without the library lock.
pub fn apply_packed(
    k: &OpKind,
    o: &Operand,
    count: usize,
    inbuf: &[u8],
    inout: &mut [u8],
) -> Result<()> {
    let (Some(t), OpKind::User(u)) = (&o.native, k) else {
        return apply(k, o.dt, count, inbuf, inout);
    };
    if count == 0 {
        return Ok(());
    }
    // The bytes `count` elements touch, relative to the buffer address.
    let ext = t.extent();
    let last = (count as isize - 1) * ext;
    let lo = last.min(0) + t.true_lb;
    let hi = last.max(0) + t.true_ub;
    let span = (hi - lo) as usize;
    let mut a = vec![0u8; span];
    let mut b = vec![0u8; span];
    let (pa, pb) = (
        a.as_mut_ptr().wrapping_offset(-lo),
        b.as_mut_ptr().wrapping_offset(-lo),
    );
    // SAFETY: `span` bytes from `lo` cover every byte of `count` elements of
    // `t` placed at pa / pb; the packed operands hold count * size bytes.
    unsafe {
        crate::datatype::unpack(t, count, inbuf, pa);
        crate::datatype::unpack(t, count, inout, pb);
    }
    // SAFETY: two buffers each holding `count` elements of `o.dt` (built above).
    unsafe { u.call(pa as *mut c_void, pb as *mut c_void, count, o.dt) };
    // SAFETY: pb holds count elements of t; inout takes their packed bytes.
    unsafe { crate::datatype::pack(t, count, pb, inout) };
    Ok(())
}
