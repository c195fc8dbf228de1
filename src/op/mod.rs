//! Reduction kernels: every predefined op on every type the standard allows it
//! for, plus user ops. `reduce(op, elem, n, inbuf, inout)` computes
//! `inout[i] = in[i] op inout[i]` element by element (`in` is the left
//! operand: for a non-commutative op it comes from the lower rank).
//!
//! Kernels are plain loops over slices of the element type, which the
//! compiler vectorises. 16-bit floats (MPIX_C_FLOAT16 and bfloat16) are
//! widened to f32, combined, and rounded back to nearest-even for each element,
//! as the element-wise rule requires. Owns no state; calls nothing.

pub mod f80;
pub mod user;

use crate::base::consts::*;
use crate::base::error::Result;
use crate::err;
use std::os::raw::c_int;

/// OxMPI's bfloat16 datatype handle: builtin datatype encoding with size 2 and
/// an index above MPICH's builtins.
pub const OXMPI_BFLOAT16: c_int = 0x4c00_02f0;

/// Element kinds the kernels know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    F16,
    BF16,
    C32,
    C64,
    /// C `long double` (x87 80-bit in a 16-byte slot) and its complex form.
    F80,
    C80,
    /// C _Bool / C++ bool (1 byte).
    Bool,
    /// Fortran LOGICAL (4 bytes, non-zero is true).
    Logical,
    /// Raw bytes (MPI_BYTE): bitwise ops only.
    Byte,
    /// (value, int index) pairs for MAXLOC/MINLOC: value kind, value size, int offset, pair size.
    Pair(PairKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairKind {
    FloatInt,
    DoubleInt,
    LongInt,
    ShortInt,
    TwoInt,
    TwoFloat,
    TwoDouble,
    LongDoubleInt,
}

/// What kernel family a builtin datatype belongs to.
pub fn elem_of(dt: c_int) -> Option<Elem> {
    use Elem::*;
    Some(match dt {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_INT8_T | MPI_INTEGER1 => I8,
        MPI_UNSIGNED_CHAR | MPI_UINT8_T | MPI_CHARACTER => U8,
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => I16,
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => U16,
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 => I32,
        MPI_UNSIGNED | MPI_UINT32_T => U32,
        MPI_LONG | MPI_LONG_LONG | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET
        | MPI_COUNT => I64,
        MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => U64,
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => F32,
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => F64,
        MPIX_C_FLOAT16 => F16,
        OXMPI_BFLOAT16 => BF16,
        MPI_C_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 | MPI_CXX_FLOAT_COMPLEX => C32,
        MPI_C_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 | MPI_CXX_DOUBLE_COMPLEX => C64,
        MPI_C_BOOL | MPI_CXX_BOOL => Bool,
        MPI_LOGICAL => Logical,
        MPI_BYTE => Byte,
        MPI_WCHAR => U32,
        MPI_FLOAT_INT => Pair(PairKind::FloatInt),
        MPI_DOUBLE_INT => Pair(PairKind::DoubleInt),
        MPI_LONG_INT => Pair(PairKind::LongInt),
        MPI_SHORT_INT => Pair(PairKind::ShortInt),
        MPI_2INT | MPI_2INTEGER => Pair(PairKind::TwoInt),
        MPI_2REAL => Pair(PairKind::TwoFloat),
        MPI_2DOUBLE_PRECISION => Pair(PairKind::TwoDouble),
        MPI_LONG_DOUBLE if f80::SUPPORTED => F80,
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX if f80::SUPPORTED => C80,
        MPI_LONG_DOUBLE_INT if f80::SUPPORTED => Pair(PairKind::LongDoubleInt),
        _ => return None,
    })
}

pub fn is_builtin_op(op: c_int) -> bool {
    (MPI_MAX..=MPI_NO_OP).contains(&op)
}

pub fn op_name(op: c_int) -> &'static str {
    match op {
        MPI_MAX => "MPI_MAX",
        MPI_MIN => "MPI_MIN",
        MPI_SUM => "MPI_SUM",
        MPI_PROD => "MPI_PROD",
        MPI_LAND => "MPI_LAND",
        MPI_BAND => "MPI_BAND",
        MPI_LOR => "MPI_LOR",
        MPI_BOR => "MPI_BOR",
        MPI_LXOR => "MPI_LXOR",
        MPI_BXOR => "MPI_BXOR",
        MPI_MAXLOC => "MPI_MAXLOC",
        MPI_MINLOC => "MPI_MINLOC",
        MPI_REPLACE => "MPI_REPLACE",
        MPI_NO_OP => "MPI_NO_OP",
        _ => "user op",
    }
}

/// Checks that builtin `op` is defined on datatype `dt`; returns its element kind.
pub fn check(op: c_int, dt: c_int) -> Result<Elem> {
    applies(op, dt).ok_or_else(|| {
        err!(
            MPI_ERR_OP,
            "op={} is not defined for datatype 0x{:08x}",
            op_name(op),
            dt as u32
        )
    })
}

/// The element kind of datatype `dt` where builtin `op` is defined on it
/// (`check` without its error: the fast paths'). A table of the kinds'
/// classes each builtin op takes (MPI-4.1 6.9.2), one test of a bit.
#[inline]
pub fn applies(op: c_int, dt: c_int) -> Option<Elem> {
    let e = elem_of(dt)?;
    let i = usize::try_from(op.wrapping_sub(MPI_MAX)).ok()?;
    (OP_CLASSES.get(i)? & class_of(e) != 0).then_some(e)
}

/// The class of an element kind, one bit each (`OP_CLASSES`).
const INT: u8 = 1;
const FLOAT: u8 = 2;
const COMPLEX: u8 = 4;
const LOGICAL: u8 = 8;
const BYTE: u8 = 16;
const PAIR: u8 = 32;

#[inline]
fn class_of(e: Elem) -> u8 {
    use Elem::*;
    match e {
        I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64 => INT,
        F32 | F64 | F16 | BF16 | F80 => FLOAT,
        C32 | C64 | C80 => COMPLEX,
        Bool | Logical => LOGICAL,
        Byte => BYTE,
        Pair(_) => PAIR,
    }
}

/// The classes each builtin op takes, by op from MPI_MAX to MPI_NO_OP (the
/// handles are consecutive).
const fn op_slot(op: c_int) -> usize {
    (op - MPI_MAX) as usize
}
const OP_CLASSES: [u8; 14] = {
    let mut t = [0u8; 14];
    t[op_slot(MPI_MAX)] = INT | FLOAT;
    t[op_slot(MPI_MIN)] = INT | FLOAT;
    t[op_slot(MPI_SUM)] = INT | FLOAT | COMPLEX;
    t[op_slot(MPI_PROD)] = INT | FLOAT | COMPLEX;
    t[op_slot(MPI_LAND)] = INT | LOGICAL;
    t[op_slot(MPI_LOR)] = INT | LOGICAL;
    t[op_slot(MPI_LXOR)] = INT | LOGICAL;
    t[op_slot(MPI_BAND)] = INT | BYTE;
    t[op_slot(MPI_BOR)] = INT | BYTE;
    t[op_slot(MPI_BXOR)] = INT | BYTE;
    t[op_slot(MPI_MAXLOC)] = PAIR;
    t[op_slot(MPI_MINLOC)] = PAIR;
    t[op_slot(MPI_REPLACE)] = u8::MAX;
    t[op_slot(MPI_NO_OP)] = u8::MAX;
    t
};

macro_rules! int_kernel {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        let a: &[$t] = $a;
        let b: &mut [$t] = $b;
        match $op {
            MPI_MAX => b.iter_mut().zip(a).for_each(|(y, x)| *y = (*x).max(*y)),
            MPI_MIN => b.iter_mut().zip(a).for_each(|(y, x)| *y = (*x).min(*y)),
            MPI_SUM => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = x.wrapping_add(*y)),
            MPI_PROD => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = x.wrapping_mul(*y)),
            MPI_LAND => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = ((*x != 0) && (*y != 0)) as $t),
            MPI_LOR => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = ((*x != 0) || (*y != 0)) as $t),
            MPI_LXOR => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = ((*x != 0) != (*y != 0)) as $t),
            MPI_BAND => b.iter_mut().zip(a).for_each(|(y, x)| *y &= *x),
            MPI_BOR => b.iter_mut().zip(a).for_each(|(y, x)| *y |= *x),
            MPI_BXOR => b.iter_mut().zip(a).for_each(|(y, x)| *y ^= *x),
            _ => unreachable!(),
        }
    }};
}

macro_rules! float_kernel {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        let a: &[$t] = $a;
        let b: &mut [$t] = $b;
        match $op {
            // max/min with C semantics (fmax-like: a NaN operand loses).
            MPI_MAX => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = if *x > *y { *x } else { *y }),
            MPI_MIN => b
                .iter_mut()
                .zip(a)
                .for_each(|(y, x)| *y = if *x < *y { *x } else { *y }),
            MPI_SUM => b.iter_mut().zip(a).for_each(|(y, x)| *y += *x),
            MPI_PROD => b.iter_mut().zip(a).for_each(|(y, x)| *y *= *x),
            _ => unreachable!(),
        }
    }};
}

/// Reinterprets raw bytes as slices of `T`: the bytes themselves where both
/// are aligned for `T`, else copies in `tmp` (which `write_back` copies
/// into `b` afterwards).
#[inline(always)]
fn slices<'x, T: Copy + Default>(
    a: &'x [u8],
    b: &'x mut [u8],
    n: usize,
    tmp: &'x mut Option<(Vec<T>, Vec<T>)>,
) -> (&'x [T], &'x mut [T]) {
    let sz = std::mem::size_of::<T>();
    debug_assert!(a.len() >= n * sz && b.len() >= n * sz);
    let aligned = |p: *const u8| (p as usize) % std::mem::align_of::<T>() == 0;
    if aligned(a.as_ptr()) && aligned(b.as_ptr()) {
        // SAFETY: both ranges hold n * size_of::<T>() bytes, are aligned for T, and
        // every bit pattern is a valid T for the numeric types used here.
        unsafe {
            (
                std::slice::from_raw_parts(a.as_ptr() as *const T, n),
                std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut T, n),
            )
        }
    } else {
        let mut x = vec![T::default(); n];
        let mut y = vec![T::default(); n];
        // SAFETY: the vectors hold n elements of T; the byte ranges hold as many bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(a.as_ptr(), x.as_mut_ptr() as *mut u8, n * sz);
            std::ptr::copy_nonoverlapping(b.as_ptr(), y.as_mut_ptr() as *mut u8, n * sz);
        }
        let (x, y) = tmp.insert((x, y));
        (x, y)
    }
}

/// The result left in `tmp` by `slices`, into `b`.
fn write_back<T>(tmp: Option<(Vec<T>, Vec<T>)>, b: &mut [u8]) {
    if let Some((_, y)) = tmp {
        let len = std::mem::size_of_val(&y[..]);
        // SAFETY: `y` holds `len` bytes and `b` at least as many (`slices`).
        unsafe { std::ptr::copy_nonoverlapping(y.as_ptr() as *const u8, b.as_mut_ptr(), len) };
    }
}

/// Runs `$body` with `$x`, `$y` the bytes `$a`, `$b` as `$n` elements of
/// `$t` (`slices`): expanded in place, so the kernel is compiled with the
/// CPU features of the function it is in (`reduce_builtin`).
macro_rules! on_slices {
    ($t:ty, $a:expr, $b:expr, $n:expr, |$x:ident, $y:ident| $body:expr) => {{
        let mut tmp: Option<(Vec<$t>, Vec<$t>)> = None;
        {
            let ($x, $y) = slices::<$t>($a, $b, $n, &mut tmp);
            $body;
        }
        write_back(tmp, $b);
    }};
}

pub fn f16_to_f32(h: u16) -> f32 {
    let s = ((h >> 15) as u32) << 31;
    let e = ((h >> 10) & 0x1f) as u32;
    let m = (h & 0x3ff) as u32;
    let bits = if e == 0 {
        if m == 0 {
            s
        } else {
            // subnormal: normalise
            let mut e2 = 127 - 15 + 1;
            let mut m2 = m;
            while m2 & 0x400 == 0 {
                m2 <<= 1;
                e2 -= 1;
            }
            s | (e2 << 23) | ((m2 & 0x3ff) << 13)
        }
    } else if e == 31 {
        s | 0x7f80_0000 | (m << 13)
    } else {
        s | ((e + 127 - 15) << 23) | (m << 13)
    };
    f32::from_bits(bits)
}

pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let s = ((x >> 16) & 0x8000) as u16;
    let e = ((x >> 23) & 0xff) as i32;
    let m = x & 0x7f_ffff;
    if e == 0xff {
        return s | 0x7c00 | if m != 0 { 0x200 } else { 0 };
    }
    let e16 = e - 127 + 15;
    if e16 >= 31 {
        return s | 0x7c00;
    }
    if e16 <= 0 {
        if e16 < -10 {
            return s;
        }
        let m = m | 0x80_0000;
        let shift = (14 - e16) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return s | r as u16;
    }
    let mut r = ((e16 as u32) << 10) | (m >> 13);
    let rest = m & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1; // may carry into the exponent, which is the correct rounding
    }
    s | r as u16
}

pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

pub fn f32_to_bf16(f: f32) -> u16 {
    let x = f.to_bits();
    if f.is_nan() {
        return ((x >> 16) as u16) | 0x40;
    }
    let rest = x & 0xffff;
    let mut r = x >> 16;
    if rest > 0x8000 || (rest == 0x8000 && r & 1 == 1) {
        r += 1;
    }
    r as u16
}

fn half_kernel(op: c_int, a: &[u16], b: &mut [u16], to: fn(u16) -> f32, from: fn(f32) -> u16) {
    for (y, x) in b.iter_mut().zip(a) {
        let (p, q) = (to(*x), to(*y));
        let r = match op {
            MPI_MAX => {
                if p > q {
                    p
                } else {
                    q
                }
            }
            MPI_MIN => {
                if p < q {
                    p
                } else {
                    q
                }
            }
            MPI_SUM => p + q,
            MPI_PROD => p * q,
            _ => unreachable!(),
        };
        *y = from(r);
    }
}

fn complex_kernel<
    T: Copy
        + Default
        + std::ops::Add<Output = T>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<Output = T>,
>(
    op: c_int,
    a: &[T],
    b: &mut [T],
) {
    for (y, x) in b.chunks_exact_mut(2).zip(a.chunks_exact(2)) {
        match op {
            MPI_SUM => {
                y[0] = x[0] + y[0];
                y[1] = x[1] + y[1];
            }
            _ => {
                let re = x[0] * y[0] - x[1] * y[1];
                let im = x[0] * y[1] + x[1] * y[0];
                y[0] = re;
                y[1] = im;
            }
        }
    }
}

/// MAXLOC/MINLOC on pairs: the value wins by op; on a tie the smaller index.
fn loc_kernel<V: Copy + PartialOrd>(
    op: c_int,
    n: usize,
    a: &[u8],
    b: &mut [u8],
    voff_idx: usize,
    size: usize,
    read: fn(&[u8]) -> V,
) {
    for i in 0..n {
        let pa = &a[i * size..(i + 1) * size];
        let (va, ia) = (
            read(pa),
            i32::from_ne_bytes(pa[voff_idx..voff_idx + 4].try_into().unwrap()),
        );
        let pb = &mut b[i * size..(i + 1) * size];
        let (vb, ib) = (
            read(pb),
            i32::from_ne_bytes(pb[voff_idx..voff_idx + 4].try_into().unwrap()),
        );
        let take_a = if op == MPI_MAXLOC {
            va > vb || (va == vb && ia < ib)
        } else {
            va < vb || (va == vb && ia < ib)
        };
        if take_a {
            pb.copy_from_slice(pa);
        }
    }
}

/// Applies builtin `op` to `n` elements of kind `e`: inout = in op inout.
///
/// The kernels are compiled for the baseline x86-64 (SSE2: two doubles per
/// instruction) and again for AVX2 and AVX-512, and the widest the CPU has
/// is taken at run time (`OXMPI_SIMD`): an accumulate of 8192 doubles took
/// 1.27 µs with SSE2 and 0.71 µs with AVX-512 here (docs/performance.md).
#[inline(always)]
pub fn reduce_builtin(op: c_int, e: Elem, n: usize, inbuf: &[u8], inout: &mut [u8]) {
    // One element (an accumulate or fetch-and-op of one) by value, not
    // through the slices' alignment logic: the same kernels' code, inlined
    // into the caller (the rest is out of line, with its large frame).
    if n == 1 && reduce_one(op, e, inbuf, inout) {
        return;
    }
    reduce_many(op, e, n, inbuf, inout)
}

/// `reduce_builtin` past its one-element case.
#[inline(never)]
fn reduce_many(op: c_int, e: Elem, n: usize, inbuf: &[u8], inout: &mut [u8]) {
    // Operands not aligned for their elements (an accumulate's data in a
    // network buffer) go through aligned copies a chunk at a time; the
    // kernels below then see aligned ones (their own fallback copies
    // whole operands).
    if n > 1 {
        if let Some(es) = scalar_size(e) {
            if (inbuf.as_ptr() as usize | inout.as_ptr() as usize) & (es - 1) != 0 {
                return reduce_unaligned(op, e, es, n, inbuf, inout);
            }
        }
    }
    // A few elements (an accumulate of one) gain nothing from vectors.
    #[cfg(target_arch = "x86_64")]
    if n >= 8 {
        match simd::width() {
            // SAFETY: `width` reports a level only where the CPU has its features.
            simd::Width::Avx512 => return unsafe { simd::avx512(op, e, n, inbuf, inout) },
            // SAFETY: as above.
            simd::Width::Avx2 => return unsafe { simd::avx2(op, e, n, inbuf, inout) },
            simd::Width::Base => {}
        }
    }
    reduce_kernels(op, e, n, inbuf, inout)
}

/// `reduce_builtin` of one element of the 4- and 8-byte integer and float
/// kinds, read and written by value (either operand may be unaligned) and
/// reduced by the kernels' own expansion on one-element arrays, so the
/// result is the kernels' bit for bit; false, having done nothing, for any
/// other kind, an op the kinds do not take, or operands shorter than one
/// element (`reduce_kernels` then takes it).
#[inline]
fn reduce_one(op: c_int, e: Elem, inbuf: &[u8], inout: &mut [u8]) -> bool {
    use Elem::*;
    macro_rules! one {
        ($t:ty, $kernel:ident) => {{
            const N: usize = std::mem::size_of::<$t>();
            let (Some(x), Some(y)) = (inbuf.get(..N), inout.get_mut(..N)) else {
                return false;
            };
            let (Ok(xb), Ok(yb)) = (<[u8; N]>::try_from(x), <[u8; N]>::try_from(&*y)) else {
                return false;
            };
            let a = [<$t>::from_ne_bytes(xb)];
            let mut b = [<$t>::from_ne_bytes(yb)];
            $kernel!($t, op, &a[..], &mut b[..]);
            y.copy_from_slice(&b[0].to_ne_bytes());
            true
        }};
    }
    let float = matches!(op, MPI_MAX | MPI_MIN | MPI_SUM | MPI_PROD);
    let int = float
        || matches!(
            op,
            MPI_LAND | MPI_LOR | MPI_LXOR | MPI_BAND | MPI_BOR | MPI_BXOR
        );
    match e {
        F64 if float => one!(f64, float_kernel),
        F32 if float => one!(f32, float_kernel),
        I64 if int => one!(i64, int_kernel),
        U64 if int => one!(u64, int_kernel),
        I32 | Logical if int => one!(i32, int_kernel),
        U32 if int => one!(u32, int_kernel),
        _ => false,
    }
}

/// The alignment the kernels want of a numeric element kind `e` (its
/// scalar's size: a complex number's part's); None for the kinds whose
/// kernels read bytes (pairs, `long double`).
fn scalar_size(e: Elem) -> Option<usize> {
    use Elem::*;
    Some(match e {
        I8 | U8 | Bool | Byte => 1,
        I16 | U16 | F16 | BF16 => 2,
        I32 | U32 | Logical | F32 | C32 => 4,
        I64 | U64 | F64 | C64 => 8,
        F80 | C80 | Pair(_) => return None,
    })
}

/// Bytes of each aligned chunk `reduce_unaligned` copies the operands
/// into: a whole number of elements of every kind (complex ones too).
const CHUNK_BYTES: usize = 4096;

/// `reduce_builtin` of operands that are not aligned for their elements
/// (each `es`-byte scalar; `n` elements of `e`): through aligned copies on
/// the stack, `CHUNK_BYTES` at a time, the result copied back after each.
/// Two zeroed heap copies of whole 64 KiB operands made each such
/// accumulate across hosts pay page faults (docs/performance.md); kept
/// out of line so the aligned path's frame stays small.
#[inline(never)]
#[cold]
fn reduce_unaligned(op: c_int, e: Elem, es: usize, n: usize, inbuf: &[u8], inout: &mut [u8]) {
    #[repr(C, align(64))]
    struct Chunk([u8; CHUNK_BYTES]);
    let per = if matches!(e, Elem::C32 | Elem::C64) {
        2 * es
    } else {
        es
    };
    let len = n * per;
    let (mut x, mut y) = (Chunk([0; CHUNK_BYTES]), Chunk([0; CHUNK_BYTES]));
    let step = CHUNK_BYTES / per * per;
    let mut at = 0;
    while at < len {
        let l = step.min(len - at);
        x.0[..l].copy_from_slice(&inbuf[at..at + l]);
        y.0[..l].copy_from_slice(&inout[at..at + l]);
        reduce_builtin(op, e, l / per, &x.0[..l], &mut y.0[..l]);
        inout[at..at + l].copy_from_slice(&y.0[..l]);
        at += l;
    }
}

/// The kernels at the vector width of the CPU features of their caller
/// (`reduce_builtin`, `simd`): inlined there, with every kernel it calls.
#[inline(always)]
fn reduce_kernels(op: c_int, e: Elem, n: usize, inbuf: &[u8], inout: &mut [u8]) {
    use Elem::*;
    if op == MPI_NO_OP {
        return;
    }
    if op == MPI_REPLACE {
        let len = inbuf.len().min(inout.len());
        inout[..len].copy_from_slice(&inbuf[..len]);
        return;
    }
    match e {
        I8 => on_slices!(i8, inbuf, inout, n, |a, b| int_kernel!(i8, op, a, b)),
        U8 | Bool | Byte => on_slices!(u8, inbuf, inout, n, |a, b| int_kernel!(u8, op, a, b)),
        I16 => on_slices!(i16, inbuf, inout, n, |a, b| int_kernel!(i16, op, a, b)),
        U16 => on_slices!(u16, inbuf, inout, n, |a, b| int_kernel!(u16, op, a, b)),
        I32 | Logical => on_slices!(i32, inbuf, inout, n, |a, b| int_kernel!(i32, op, a, b)),
        U32 => on_slices!(u32, inbuf, inout, n, |a, b| int_kernel!(u32, op, a, b)),
        I64 => on_slices!(i64, inbuf, inout, n, |a, b| int_kernel!(i64, op, a, b)),
        U64 => on_slices!(u64, inbuf, inout, n, |a, b| int_kernel!(u64, op, a, b)),
        F32 => on_slices!(f32, inbuf, inout, n, |a, b| float_kernel!(f32, op, a, b)),
        F64 => on_slices!(f64, inbuf, inout, n, |a, b| float_kernel!(f64, op, a, b)),
        F16 => on_slices!(u16, inbuf, inout, n, |a, b| {
            half_kernel(op, a, b, f16_to_f32, f32_to_f16)
        }),
        BF16 => on_slices!(u16, inbuf, inout, n, |a, b| {
            half_kernel(op, a, b, bf16_to_f32, f32_to_bf16)
        }),
        C32 => on_slices!(f32, inbuf, inout, 2 * n, |a, b| complex_kernel(op, a, b)),
        C64 => on_slices!(f64, inbuf, inout, 2 * n, |a, b| complex_kernel(op, a, b)),
        F80 => f80::real_kernel(op, n, inbuf, inout),
        C80 => f80::complex_kernel(op, n, inbuf, inout),
        Pair(k) => match k {
            PairKind::FloatInt => loc_kernel(op, n, inbuf, inout, 4, 8, |p| {
                f32::from_ne_bytes(p[0..4].try_into().unwrap())
            }),
            PairKind::DoubleInt => loc_kernel(op, n, inbuf, inout, 8, 12, |p| {
                f64::from_ne_bytes(p[0..8].try_into().unwrap())
            }),
            PairKind::LongInt => loc_kernel(op, n, inbuf, inout, 8, 12, |p| {
                i64::from_ne_bytes(p[0..8].try_into().unwrap())
            }),
            PairKind::ShortInt => loc_kernel(op, n, inbuf, inout, 2, 6, |p| {
                i16::from_ne_bytes(p[0..2].try_into().unwrap())
            }),
            PairKind::TwoInt => loc_kernel(op, n, inbuf, inout, 4, 8, |p| {
                i32::from_ne_bytes(p[0..4].try_into().unwrap())
            }),
            PairKind::TwoFloat => loc_kernel(op, n, inbuf, inout, 4, 8, |p| {
                f32::from_ne_bytes(p[0..4].try_into().unwrap())
            }),
            PairKind::TwoDouble => loc_kernel_f64_idx(op, n, inbuf, inout),
            PairKind::LongDoubleInt => loc_kernel(op, n, inbuf, inout, 16, 20, f80::Ld::read),
        },
    }
}

/// MPI_2DOUBLE_PRECISION: the index is a double too.
fn loc_kernel_f64_idx(op: c_int, n: usize, a: &[u8], b: &mut [u8]) {
    for i in 0..n {
        let pa = &a[i * 16..(i + 1) * 16];
        let va = f64::from_ne_bytes(pa[0..8].try_into().unwrap());
        let ia = f64::from_ne_bytes(pa[8..16].try_into().unwrap());
        let pb = &mut b[i * 16..(i + 1) * 16];
        let vb = f64::from_ne_bytes(pb[0..8].try_into().unwrap());
        let ib = f64::from_ne_bytes(pb[8..16].try_into().unwrap());
        let take_a = if op == MPI_MAXLOC {
            va > vb || (va == vb && ia < ib)
        } else {
            va < vb || (va == vb && ia < ib)
        };
        if take_a {
            pb.copy_from_slice(pa);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Copy>(op: c_int, dt: c_int, a: &[T], b: &[T]) -> Vec<T> {
        let e = check(op, dt).unwrap();
        // SAFETY: viewing plain numeric slices as bytes.
        let ab = unsafe {
            std::slice::from_raw_parts(a.as_ptr() as *const u8, std::mem::size_of_val(a))
        };
        let mut bb: Vec<T> = b.to_vec();
        // SAFETY: as above.
        let bbytes = unsafe {
            std::slice::from_raw_parts_mut(bb.as_mut_ptr() as *mut u8, std::mem::size_of_val(b))
        };
        let n = ab.len() / crate::base::handles::type_size(dt).unwrap();
        reduce_builtin(op, e, n, ab, bbytes);
        bb
    }

    /// Every compilation of the kernels the CPU runs gives the baseline's
    /// bytes, for every op and basic type, aligned and not, on lengths that
    /// leave vector remainders, floats with NaNs, infinities and signed
    /// zeros among them.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wider_kernels_give_the_baselines_bytes() {
        use crate::base::consts::*;
        let types = [
            MPI_INT8_T,
            MPI_UINT8_T,
            MPI_INT16_T,
            MPI_UINT16_T,
            MPI_INT,
            MPI_UNSIGNED,
            MPI_INT64_T,
            MPI_UINT64_T,
            MPI_FLOAT,
            MPI_DOUBLE,
            MPI_C_BOOL,
            MPI_BYTE,
            MPI_C_FLOAT_COMPLEX,
            MPI_C_DOUBLE_COMPLEX,
            MPI_2INT,
            MPI_DOUBLE_INT,
        ];
        let ops = [
            MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR,
            MPI_BXOR, MPI_MAXLOC, MPI_MINLOC,
        ];
        let specials = [f64::NAN, f64::INFINITY, -0.0, 0.0, 1e300, -1e-300];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut checked = 0;
        for &dt in &types {
            let size = crate::base::handles::type_size(dt).unwrap();
            for &op in &ops {
                let Ok(e) = check(op, dt) else { continue };
                for n in [1usize, 3, 17, 64, 131] {
                    for off in [0usize, 1] {
                        let mut a = vec![0u8; n * size + 1];
                        let mut b = vec![0u8; n * size + 1];
                        for x in a.iter_mut().chain(b.iter_mut()) {
                            *x = next() as u8;
                        }
                        if dt == MPI_DOUBLE {
                            for (i, v) in specials.iter().enumerate().take(n) {
                                a[off + 8 * i..off + 8 * i + 8].copy_from_slice(&v.to_ne_bytes());
                            }
                        }
                        let (a, b) = (&a[off..off + n * size], &b[off..off + n * size]);
                        let mut base = b.to_vec();
                        reduce_kernels(op, e, n, a, &mut base);
                        if std::arch::is_x86_feature_detected!("avx2") {
                            let mut w = b.to_vec();
                            // SAFETY: the CPU has AVX2 (checked).
                            unsafe { simd::avx2(op, e, n, a, &mut w) };
                            assert_eq!(w, base, "avx2: op {op:#x} type {dt:#x} n {n} off {off}");
                        }
                        if std::arch::is_x86_feature_detected!("avx512f")
                            && std::arch::is_x86_feature_detected!("avx512bw")
                            && std::arch::is_x86_feature_detected!("avx512dq")
                            && std::arch::is_x86_feature_detected!("avx512vl")
                        {
                            let mut w = b.to_vec();
                            // SAFETY: the CPU has the AVX-512 subsets (checked).
                            unsafe { simd::avx512(op, e, n, a, &mut w) };
                            assert_eq!(w, base, "avx512: op {op:#x} type {dt:#x} n {n} off {off}");
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 200, "{checked}");
    }

    /// Unaligned operands (either or both) give the bytes that aligned
    /// copies of them give, across the stack chunks' boundaries
    /// (`reduce_unaligned`), for each element size and complex pairs.
    #[test]
    fn unaligned_operands_reduce_like_aligned_ones() {
        use crate::base::consts::*;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let cases = [
            (MPI_DOUBLE, MPI_SUM),
            (MPI_FLOAT, MPI_MAX),
            (MPI_INT, MPI_PROD),
            (MPI_INT16_T, MPI_SUM),
            (MPI_INT8_T, MPI_BXOR),
            (MPI_C_DOUBLE_COMPLEX, MPI_PROD),
            (MPI_C_FLOAT_COMPLEX, MPI_PROD),
        ];
        for (dt, op) in cases {
            let size = crate::base::handles::type_size(dt).unwrap();
            let e = check(op, dt).unwrap();
            // Below, at and across the 4 KiB chunks.
            for n in [5usize, 4096 / size, 4096 / size + 3, 3 * 4096 / size + 7] {
                for (oa, ob) in [(1usize, 0usize), (0, 3), (5, 2)] {
                    let a: Vec<u8> = (0..n * size + 8).map(|_| next() as u8).collect();
                    let b: Vec<u8> = (0..n * size + 8).map(|_| next() as u8).collect();
                    let want = {
                        let (x, mut y) =
                            (a[oa..oa + n * size].to_vec(), b[ob..ob + n * size].to_vec());
                        reduce_builtin(op, e, n, &x, &mut y);
                        y
                    };
                    let mut bb = b.clone();
                    reduce_builtin(op, e, n, &a[oa..oa + n * size], &mut bb[ob..ob + n * size]);
                    assert_eq!(
                        &bb[ob..ob + n * size],
                        &want[..],
                        "type {dt:#x} op {op:#x} n {n} offsets {oa} {ob}"
                    );
                    assert_eq!(&bb[..ob], &b[..ob], "bytes before the operand changed");
                    assert_eq!(
                        &bb[ob + n * size..],
                        &b[ob + n * size..],
                        "bytes after changed"
                    );
                }
            }
        }
    }

    /// One element reduced by value (`reduce_one`) gives the bytes the
    /// kernels give it (`reduce_kernels`), for every op on every kind it
    /// takes, with NaNs, infinities, signed zeros and integer extremes,
    /// aligned and not.
    #[test]
    fn one_element_reduces_like_the_kernels() {
        use crate::base::consts::*;
        let doubles = [
            0.0f64,
            -0.0,
            1.5,
            -2.25,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::MIN,
            1e-310,
        ];
        let ints = [0i64, 1, -1, 7, i64::MAX, i64::MIN, 0x5555_5555_5555_5555];
        let types = [
            MPI_DOUBLE,
            MPI_FLOAT,
            MPI_INT64_T,
            MPI_UINT64_T,
            MPI_INT,
            MPI_UNSIGNED,
            MPI_LOGICAL,
        ];
        let ops = [
            MPI_MAX,
            MPI_MIN,
            MPI_SUM,
            MPI_PROD,
            MPI_LAND,
            MPI_LOR,
            MPI_LXOR,
            MPI_BAND,
            MPI_BOR,
            MPI_BXOR,
            MPI_REPLACE,
            MPI_NO_OP,
        ];
        let mut checked = 0;
        for dt in types {
            let size = crate::base::handles::type_size(dt).unwrap();
            let vals: Vec<Vec<u8>> = match dt {
                MPI_DOUBLE => doubles.iter().map(|v| v.to_ne_bytes().to_vec()).collect(),
                MPI_FLOAT => doubles
                    .iter()
                    .map(|&v| (v as f32).to_ne_bytes().to_vec())
                    .collect(),
                _ => ints
                    .iter()
                    .map(|v| v.to_ne_bytes()[..size].to_vec())
                    .collect(),
            };
            for op in ops {
                let Ok(e) = check(op, dt) else { continue };
                for x in &vals {
                    for y in &vals {
                        let mut want = y.clone();
                        reduce_kernels(op, e, 1, x, &mut want);
                        // Unaligned: one byte into each buffer.
                        let (mut xa, mut ya) = (vec![0u8; size + 1], vec![0u8; size + 1]);
                        xa[1..].copy_from_slice(x);
                        ya[1..].copy_from_slice(y);
                        reduce_builtin(op, e, 1, &xa[1..], &mut ya[1..]);
                        assert_eq!(&ya[1..], &want[..], "type {dt:#x} op {op:#x} {x:?} {y:?}");
                        let mut yb = y.clone();
                        reduce_builtin(op, e, 1, x, &mut yb);
                        assert_eq!(yb, want, "type {dt:#x} op {op:#x} {x:?} {y:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 2000, "{checked}");
    }

    /// The op table (`applies`) says what the standard's list says, for
    /// every builtin op (and a few that are not) on every kind of datatype.
    #[test]
    fn op_table_matches_the_standards_list() {
        use Elem::*;
        let reference = |op: c_int, e: Elem| {
            let int = matches!(e, I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64);
            let float = matches!(e, F32 | F64 | F16 | BF16 | F80);
            match op {
                MPI_MAX | MPI_MIN => int || float,
                MPI_SUM | MPI_PROD => int || float || matches!(e, C32 | C64 | C80),
                MPI_LAND | MPI_LOR | MPI_LXOR => int || matches!(e, Bool | Logical),
                MPI_BAND | MPI_BOR | MPI_BXOR => int || e == Byte,
                MPI_MAXLOC | MPI_MINLOC => matches!(e, Pair(_)),
                MPI_REPLACE | MPI_NO_OP => true,
                _ => false,
            }
        };
        let types = [
            MPI_INT8_T,
            MPI_UINT8_T,
            MPI_SHORT,
            MPI_UNSIGNED_SHORT,
            MPI_INT,
            MPI_UNSIGNED,
            MPI_INT64_T,
            MPI_UINT64_T,
            MPI_FLOAT,
            MPI_DOUBLE,
            MPIX_C_FLOAT16,
            OXMPI_BFLOAT16,
            MPI_C_FLOAT_COMPLEX,
            MPI_C_DOUBLE_COMPLEX,
            MPI_C_BOOL,
            MPI_LOGICAL,
            MPI_BYTE,
            MPI_DOUBLE_INT,
            MPI_2INT,
            MPI_LONG_DOUBLE,
        ];
        let mut n = 0;
        for op in (MPI_MAX - 2)..=(MPI_NO_OP + 2) {
            for dt in types {
                let Some(e) = elem_of(dt) else { continue };
                assert_eq!(
                    applies(op, dt),
                    reference(op, e).then_some(e),
                    "op {op:#x} type {dt:#x}"
                );
                n += 1;
            }
        }
        assert!(n > 300, "{n}");
    }

    #[test]
    fn integer_ops_match_the_definitions() {
        let a = [1i32, -5, 7, 0];
        let b = [3i32, -2, 7, 9];
        assert_eq!(run(MPI_SUM, MPI_INT, &a, &b), vec![4, -7, 14, 9]);
        assert_eq!(run(MPI_PROD, MPI_INT, &a, &b), vec![3, 10, 49, 0]);
        assert_eq!(run(MPI_MAX, MPI_INT, &a, &b), vec![3, -2, 7, 9]);
        assert_eq!(run(MPI_MIN, MPI_INT, &a, &b), vec![1, -5, 7, 0]);
        assert_eq!(run(MPI_LAND, MPI_INT, &a, &b), vec![1, 1, 1, 0]);
        assert_eq!(run(MPI_LXOR, MPI_INT, &a, &b), vec![0, 0, 0, 1]);
        assert_eq!(run(MPI_BXOR, MPI_INT, &a, &b), vec![1 ^ 3, -5 ^ -2, 0, 9]);
        assert_eq!(
            run(MPI_SUM, MPI_UNSIGNED_CHAR, &[200u8], &[100u8]),
            vec![44]
        );
    }

    #[test]
    fn wrong_combinations_are_mpi_err_op() {
        assert_eq!(check(MPI_BAND, MPI_DOUBLE).unwrap_err().class, MPI_ERR_OP);
        assert_eq!(check(MPI_MAXLOC, MPI_INT).unwrap_err().class, MPI_ERR_OP);
        assert_eq!(
            check(MPI_MAX, MPI_C_DOUBLE_COMPLEX).unwrap_err().class,
            MPI_ERR_OP
        );
        assert_eq!(check(MPI_SUM, MPI_BYTE).unwrap_err().class, MPI_ERR_OP);
        assert!(check(MPI_BOR, MPI_BYTE).is_ok());
        assert!(check(MPI_LOR, MPI_C_BOOL).is_ok());
    }

    #[test]
    fn maxloc_prefers_lower_index_on_ties() {
        // Packed MPI_DOUBLE_INT elements: 8 bytes of value, 4 of index, no padding.
        let pack = |v: &[(f64, i32)]| -> Vec<u8> {
            v.iter()
                .flat_map(|&(x, i)| x.to_ne_bytes().into_iter().chain(i.to_ne_bytes()))
                .collect()
        };
        let unpack = |b: &[u8]| -> Vec<(f64, i32)> {
            b.chunks(12)
                .map(|c| {
                    (
                        f64::from_ne_bytes(c[..8].try_into().unwrap()),
                        i32::from_ne_bytes(c[8..].try_into().unwrap()),
                    )
                })
                .collect()
        };
        let x = pack(&[(5.0, 3), (5.0, 1)]);
        let y = pack(&[(5.0, 2), (4.0, 0)]);
        let r = unpack(&run(MPI_MAXLOC, MPI_DOUBLE_INT, &x, &y));
        assert_eq!(r, vec![(5.0, 2), (5.0, 1)]);
        let r = unpack(&run(MPI_MINLOC, MPI_DOUBLE_INT, &x, &y));
        assert_eq!(r, vec![(5.0, 2), (4.0, 0)]);
        // MPI_SHORT_INT: 2 bytes of value, then the index (6 bytes).
        let x: Vec<u8> = 7i16
            .to_ne_bytes()
            .into_iter()
            .chain(4i32.to_ne_bytes())
            .collect();
        let y: Vec<u8> = 7i16
            .to_ne_bytes()
            .into_iter()
            .chain(2i32.to_ne_bytes())
            .collect();
        let r = run(MPI_MAXLOC, MPI_SHORT_INT, &x, &y);
        assert_eq!(i32::from_ne_bytes(r[2..6].try_into().unwrap()), 2);
    }

    #[test]
    fn complex_product() {
        let r = run(MPI_PROD, MPI_C_DOUBLE_COMPLEX, &[1.0f64, 2.0], &[3.0, -1.0]);
        assert_eq!(r, vec![5.0, 5.0]);
    }

    #[test]
    fn half_precision_rounds_each_step() {
        for &v in &[0.0f32, 1.0, -2.5, 65504.0, 6.1e-5, 1e-7, 0.333] {
            let h = f32_to_f16(v);
            let back = f16_to_f32(h);
            assert!((back - v).abs() <= v.abs() * 1e-3 + 6e-8, "{v} -> {back}");
        }
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), f32_to_f16(1.0)); // tie to even
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        // 2048 + 1 is not representable in f16: the sum stays 2048.
        let r = run(
            MPI_SUM,
            MPIX_C_FLOAT16,
            &[f32_to_f16(1.0)],
            &[f32_to_f16(2048.0)],
        );
        assert_eq!(f16_to_f32(r[0]), 2048.0);
        let r = run(
            MPI_SUM,
            OXMPI_BFLOAT16,
            &[f32_to_bf16(1.5)],
            &[f32_to_bf16(2.25)],
        );
        assert_eq!(bf16_to_f32(r[0]), 3.75);
    }
}

/// The wider compilations of the reduction kernels and the choice among
/// them.
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{reduce_kernels, Elem};
    use std::os::raw::c_int;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// Ordered by width.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub enum Width {
        Base,
        Avx2,
        Avx512,
    }

    /// The widest kernels this CPU runs, or the narrower ones
    /// `OXMPI_SIMD` asks for (avx512, avx2, none; auto: the widest).
    #[inline(always)]
    pub fn width() -> Width {
        /// 0 not decided yet, else 1 + the level.
        static LEVEL: AtomicU8 = AtomicU8::new(0);
        // Relaxed: a cache of a value every thread computes the same way.
        match LEVEL.load(Ordering::Relaxed) {
            1 => Width::Base,
            2 => Width::Avx2,
            3 => Width::Avx512,
            _ => {
                let w = decide();
                LEVEL.store(1 + w as u8, Ordering::Relaxed);
                w
            }
        }
    }

    #[cold]
    fn decide() -> Width {
        let avx512 = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl");
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        let want = crate::config::get_str("OXMPI_SIMD").unwrap_or_default();
        let widest = match (avx512, avx2) {
            (true, _) => Width::Avx512,
            (false, true) => Width::Avx2,
            _ => Width::Base,
        };
        match want.trim() {
            "none" | "0" => Width::Base,
            "avx2" => widest.min(Width::Avx2),
            _ => widest,
        }
    }

    /// # Safety
    /// The CPU has AVX2 (`width`).
    #[target_feature(enable = "avx2")]
    pub unsafe fn avx2(op: c_int, e: Elem, n: usize, a: &[u8], b: &mut [u8]) {
        reduce_kernels(op, e, n, a, b)
    }

    /// # Safety
    /// The CPU has AVX-512 F, BW, DQ and VL (`width`).
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2")]
    pub unsafe fn avx512(op: c_int, e: Elem, n: usize, a: &[u8], b: &mut [u8]) {
        reduce_kernels(op, e, n, a, b)
    }
}
