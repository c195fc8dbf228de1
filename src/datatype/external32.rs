//! The "external32" representation (MPI_Pack_external): big-endian, fixed
//! sizes per the standard's table (C `long` and `unsigned long` are 4 bytes,
//! `long long` 8, `wchar_t` 4, `MPI_Aint`/`MPI_Offset`/`MPI_Count` 8).
//! `long double` (x87 80-bit in a 16-byte slot) travels as IEEE binary128
//! (16 bytes), rounded to nearest on the way back; Fortran REAL*16 and
//! COMPLEX*32 (already binary128 natively) are byte-swapped like any other
//! type.

use super::{basic_size, basic_stride, Type};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::err;
use std::os::raw::c_int;

const LD: usize = crate::op::f80::BYTES;

/// (native offset, native size, external size, signed integer) of each field of a basic type.
fn fields(basic: c_int) -> Result<Vec<(usize, usize, usize, bool)>> {
    let s = basic_size(basic);
    Ok(match basic {
        MPI_LONG => vec![(0, 8, 4, true)],
        MPI_UNSIGNED_LONG => vec![(0, 8, 4, false)],
        MPI_LONG_INT => vec![(0, 8, 4, true), (8, 4, 4, true)],
        MPI_FLOAT_INT => vec![(0, 4, 4, false), (4, 4, 4, true)],
        MPI_DOUBLE_INT => vec![(0, 8, 8, false), (8, 4, 4, true)],
        MPI_SHORT_INT => vec![(0, 2, 2, true), (4, 4, 4, true)],
        MPI_2INT | MPI_2INTEGER | MPI_2REAL => vec![(0, 4, 4, false), (4, 4, 4, false)],
        MPI_2DOUBLE_PRECISION => vec![(0, 8, 8, false), (8, 8, 8, false)],
        MPI_C_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 | MPI_CXX_FLOAT_COMPLEX => {
            vec![(0, 4, 4, false), (4, 4, 4, false)]
        }
        MPI_C_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 | MPI_CXX_DOUBLE_COMPLEX => {
            vec![(0, 8, 8, false), (8, 8, 8, false)]
        }
        // A native size of `LD` marks an x87 value converted to binary128.
        MPI_LONG_DOUBLE
        | MPI_C_LONG_DOUBLE_COMPLEX
        | MPI_CXX_LONG_DOUBLE_COMPLEX
        | MPI_LONG_DOUBLE_INT
            if !crate::op::f80::SUPPORTED =>
        {
            return Err(err!(
                MPI_ERR_CONVERSION,
                "external32 conversion of long double is not available on this architecture"
            ))
        }
        MPI_LONG_DOUBLE => vec![(0, LD, 16, false)],
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => {
            vec![(0, LD, 16, false), (16, LD, 16, false)]
        }
        MPI_LONG_DOUBLE_INT => vec![(0, LD, 16, false), (16, 4, 4, true)],
        MPI_REAL16 => vec![(0, 16, 16, false)],
        MPI_COMPLEX32 => vec![(0, 16, 16, false), (16, 16, 16, false)],
        _ => vec![(0, s, s, false)],
    })
}

/// Bytes of `count` elements of `t` in external32.
pub fn size(t: &Type, count: usize) -> Result<usize> {
    let mut n = 0;
    for r in &t.runs {
        n += r.count * fields(r.basic)?.iter().map(|f| f.2).sum::<usize>();
    }
    Ok(n * t.reps.max(1) * count)
}

/// Converts `count` elements of `t` at `src` to external32 in `out` (which has `size(t, count)` bytes).
///
/// # Safety
/// `src` holds `count` elements of `t`.
pub unsafe fn pack(t: &Type, count: usize, src: *const u8, out: &mut [u8]) -> Result<()> {
    let mut pos = 0;
    let ext = t.extent();
    for i in 0..count {
        for rep in 0..t.reps.max(1) {
            for r in &t.runs {
                let f = fields(r.basic)?;
                let bs = basic_stride(r.basic);
                for k in 0..r.count {
                    let at =
                        i as isize * ext + rep as isize * t.rep_stride + r.off + (k * bs) as isize;
                    for &(fo, ns, es, _) in &f {
                        let mut v = [0u8; 16];
                        // SAFETY: the element lies in the caller's buffer.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                src.offset(at + fo as isize),
                                v.as_mut_ptr(),
                                ns,
                            )
                        };
                        if ns == LD {
                            v = crate::op::f80::to_binary128(&v).to_le_bytes();
                        }
                        // little-endian native: the low `es` bytes, reversed
                        for b in 0..es {
                            out[pos + b] = v[es - 1 - b];
                        }
                        pos += es;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Converts external32 bytes back into `count` elements of `t` at `dst`.
///
/// # Safety
/// `dst` holds `count` elements of `t`.
pub unsafe fn unpack(t: &Type, count: usize, inp: &[u8], dst: *mut u8) -> Result<()> {
    let mut pos = 0;
    let ext = t.extent();
    for i in 0..count {
        for rep in 0..t.reps.max(1) {
            for r in &t.runs {
                let f = fields(r.basic)?;
                let bs = basic_stride(r.basic);
                for k in 0..r.count {
                    let at =
                        i as isize * ext + rep as isize * t.rep_stride + r.off + (k * bs) as isize;
                    for &(fo, ns, es, signed) in &f {
                        let mut v = [0u8; 16];
                        for b in 0..es {
                            v[b] = inp[pos + es - 1 - b];
                        }
                        if ns == LD {
                            let x = crate::op::f80::from_binary128(u128::from_le_bytes(v));
                            v[..LD].copy_from_slice(&x);
                        }
                        if ns > es && signed && v[es - 1] & 0x80 != 0 {
                            for b in v.iter_mut().take(ns).skip(es) {
                                *b = 0xff;
                            }
                        }
                        // SAFETY: the element lies in the caller's buffer.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                v.as_ptr(),
                                dst.offset(at + fo as isize),
                                ns,
                            )
                        };
                        pos += es;
                    }
                }
            }
        }
    }
    Ok(())
}
