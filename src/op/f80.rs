//! C `long double` on x86-64: the x87 80-bit extended format in a 16-byte
//! slot (6 bytes of padding, never written). Arithmetic runs on the x87 unit
//! through inline assembly, so each operation rounds exactly as compiled C
//! code does; conversion to and from IEEE binary128 serves external32.

use std::cmp::Ordering;

/// Bytes of a `long double` slot and of its value.
pub const SLOT: usize = 16;
pub const BYTES: usize = 10;

#[cfg(target_arch = "x86_64")]
mod x87 {
    use std::arch::asm;

    /// out = x + y.
    ///
    /// # Safety
    /// Each pointer addresses 10 readable (out: writable) bytes.
    pub unsafe fn add(x: *const u8, y: *const u8, out: *mut u8) {
        // SAFETY: caller's contract; the x87 stack is left as found.
        unsafe {
            asm!("fld tbyte ptr [{x}]", "fld tbyte ptr [{y}]", "faddp st(1), st",
                 "fstp tbyte ptr [{o}]", x = in(reg) x, y = in(reg) y, o = in(reg) out,
                 out("st(0)") _, out("st(1)") _, options(nostack))
        }
    }

    /// out = x - y.
    ///
    /// # Safety
    /// As for `add`.
    pub unsafe fn sub(x: *const u8, y: *const u8, out: *mut u8) {
        // SAFETY: as for `add`. st(1) = x, st(0) = y; fsubp st(1), st leaves
        // st(1) - st(0) = x - y (checked by the tests below).
        unsafe {
            asm!("fld tbyte ptr [{x}]", "fld tbyte ptr [{y}]", "fsubp st(1), st",
                 "fstp tbyte ptr [{o}]", x = in(reg) x, y = in(reg) y, o = in(reg) out,
                 out("st(0)") _, out("st(1)") _, options(nostack))
        }
    }

    /// out = x * y.
    ///
    /// # Safety
    /// As for `add`.
    pub unsafe fn mul(x: *const u8, y: *const u8, out: *mut u8) {
        // SAFETY: as for `add`.
        unsafe {
            asm!("fld tbyte ptr [{x}]", "fld tbyte ptr [{y}]", "fmulp st(1), st",
                 "fstp tbyte ptr [{o}]", x = in(reg) x, y = in(reg) y, o = in(reg) out,
                 out("st(0)") _, out("st(1)") _, options(nostack))
        }
    }

    /// (x > y, x == y); both false when either is a NaN.
    ///
    /// # Safety
    /// Each pointer addresses 10 readable bytes.
    pub unsafe fn cmp(x: *const u8, y: *const u8) -> (bool, bool) {
        let (gt, eq, ord): (u8, u8, u8);
        // SAFETY: as for `add`; fucomip pops x, fstp pops y.
        unsafe {
            asm!("fld tbyte ptr [{y}]", "fld tbyte ptr [{x}]", "fucomip st, st(1)",
                 "fstp st(0)", "seta {gt}", "sete {eq}", "setnp {ord}",
                 x = in(reg) x, y = in(reg) y, gt = out(reg_byte) gt, eq = out(reg_byte) eq,
                 ord = out(reg_byte) ord, out("st(0)") _, out("st(1)") _, options(nostack))
        }
        (gt != 0, eq != 0 && ord != 0)
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x87 {
    pub unsafe fn add(_: *const u8, _: *const u8, _: *mut u8) {
        unreachable!("long double kernels exist on x86-64 only")
    }
    pub unsafe fn sub(_: *const u8, _: *const u8, _: *mut u8) {
        unreachable!("long double kernels exist on x86-64 only")
    }
    pub unsafe fn mul(_: *const u8, _: *const u8, _: *mut u8) {
        unreachable!("long double kernels exist on x86-64 only")
    }
    pub unsafe fn cmp(_: *const u8, _: *const u8) -> (bool, bool) {
        unreachable!("long double kernels exist on x86-64 only")
    }
}

/// Whether this build has the long double kernels.
pub const SUPPORTED: bool = cfg!(target_arch = "x86_64");

/// A long double value (its 10 significant bytes), ordered as the x87 compares.
#[derive(Clone, Copy)]
pub struct Ld(pub [u8; BYTES]);

impl Ld {
    pub fn read(p: &[u8]) -> Ld {
        Ld(p[..BYTES].try_into().unwrap())
    }
}

impl PartialEq for Ld {
    fn eq(&self, o: &Ld) -> bool {
        // SAFETY: both are 10-byte values.
        unsafe { x87::cmp(self.0.as_ptr(), o.0.as_ptr()).1 }
    }
}

impl PartialOrd for Ld {
    fn partial_cmp(&self, o: &Ld) -> Option<Ordering> {
        // SAFETY: both are 10-byte values.
        let (gt, eq) = unsafe { x87::cmp(self.0.as_ptr(), o.0.as_ptr()) };
        // SAFETY: as above.
        let (lt, _) = unsafe { x87::cmp(o.0.as_ptr(), self.0.as_ptr()) };
        match (gt, eq, lt) {
            (true, _, _) => Some(Ordering::Greater),
            (_, true, _) => Some(Ordering::Equal),
            (_, _, true) => Some(Ordering::Less),
            _ => None,
        }
    }
}

/// b = a op b for `n` long doubles in 16-byte slots (SUM, PROD, MAX, MIN).
pub fn real_kernel(op: std::os::raw::c_int, n: usize, a: &[u8], b: &mut [u8]) {
    use crate::base::consts::*;
    for i in 0..n {
        let (x, y) = (a[i * SLOT..].as_ptr(), b[i * SLOT..].as_mut_ptr());
        // SAFETY: both slices hold n slots; each slot starts with a 10-byte value.
        unsafe {
            match op {
                MPI_SUM => x87::add(x, y, y),
                MPI_PROD => x87::mul(x, y, y),
                MPI_MAX | MPI_MIN => {
                    let (gt, _) = if op == MPI_MAX {
                        x87::cmp(x, y)
                    } else {
                        x87::cmp(y, x)
                    };
                    if gt {
                        std::ptr::copy_nonoverlapping(x, y, BYTES);
                    }
                }
                _ => unreachable!(),
            }
        }
    }
}

/// b = a op b for `n` long double complex values (32 bytes: re, im): SUM, PROD.
pub fn complex_kernel(op: std::os::raw::c_int, n: usize, a: &[u8], b: &mut [u8]) {
    use crate::base::consts::*;
    for i in 0..n {
        let (x, y) = (a[2 * i * SLOT..].as_ptr(), b[2 * i * SLOT..].as_mut_ptr());
        // SAFETY: both slices hold n complex values of two slots each.
        unsafe {
            let (xr, xi, yr, yi) = (x, x.add(SLOT), y as *const u8, y.add(SLOT) as *const u8);
            if op == MPI_SUM {
                x87::add(xr, yr, y);
                x87::add(xi, yi, y.add(SLOT));
            } else {
                let mut t = [[0u8; SLOT]; 4];
                x87::mul(xr, yr, t[0].as_mut_ptr());
                x87::mul(xi, yi, t[1].as_mut_ptr());
                x87::mul(xr, yi, t[2].as_mut_ptr());
                x87::mul(xi, yr, t[3].as_mut_ptr());
                x87::sub(t[0].as_ptr(), t[1].as_ptr(), y);
                x87::add(t[2].as_ptr(), t[3].as_ptr(), y.add(SLOT));
            }
        }
    }
}

/// The x87 value (10 little-endian bytes) as IEEE binary128 bits.
pub fn to_binary128(v: &[u8]) -> u128 {
    let mant = u64::from_le_bytes(v[0..8].try_into().unwrap());
    let se = u16::from_le_bytes(v[8..10].try_into().unwrap()) as u128;
    (se << 112) | (((mant & !(1u64 << 63)) as u128) << 49)
}

/// IEEE binary128 bits as an x87 value (10 little-endian bytes), rounded to
/// nearest, ties to even.
pub fn from_binary128(q: u128) -> [u8; BYTES] {
    let sign = (q >> 127) as u16;
    let mut exp = ((q >> 112) & 0x7fff) as u16;
    let frac = q & ((1u128 << 112) - 1);
    let mut m = (frac >> 49) as u64;
    if exp == 0x7fff {
        if frac != 0 && m == 0 {
            m = 1 << 62; // a NaN stays a (quiet) NaN
        }
    } else {
        let rem = frac & ((1u128 << 49) - 1);
        let half = 1u128 << 48;
        if rem > half || (rem == half && m & 1 == 1) {
            m += 1;
            if m == 1 << 63 {
                m = 0;
                exp += 1;
            }
        }
    }
    if exp != 0 {
        m |= 1 << 63;
    }
    let mut out = [0u8; BYTES];
    out[0..8].copy_from_slice(&m.to_le_bytes());
    out[8..10].copy_from_slice(&((sign << 15) | exp).to_le_bytes());
    out
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// x87 bytes of a double (exact: every double is a long double).
    fn ld(d: f64) -> [u8; SLOT] {
        let b = d.to_bits();
        let sign = (b >> 63) as u16;
        let e = ((b >> 52) & 0x7ff) as i32;
        let f = b & ((1 << 52) - 1);
        let mut s = [0u8; SLOT];
        if e == 0 && f == 0 {
            s[8..10].copy_from_slice(&(sign << 15).to_le_bytes());
            return s;
        }
        assert!(e != 0 && e != 0x7ff, "normal doubles only");
        let m = (1u64 << 63) | (f << 11);
        let x = (e - 1023 + 16383) as u16;
        s[0..8].copy_from_slice(&m.to_le_bytes());
        s[8..10].copy_from_slice(&((sign << 15) | x).to_le_bytes());
        s
    }

    fn back(s: &[u8]) -> f64 {
        let m = u64::from_le_bytes(s[0..8].try_into().unwrap());
        let se = u16::from_le_bytes(s[8..10].try_into().unwrap());
        if m == 0 {
            return if se >> 15 == 1 { -0.0 } else { 0.0 };
        }
        let v = (m as f64) * 2f64.powi((se & 0x7fff) as i32 - 16383 - 63);
        if se >> 15 == 1 {
            -v
        } else {
            v
        }
    }

    #[test]
    fn arithmetic_and_order() {
        let mut o = [0u8; SLOT];
        // SAFETY: 16-byte slots.
        unsafe {
            x87::sub(ld(5.0).as_ptr(), ld(3.0).as_ptr(), o.as_mut_ptr());
            assert_eq!(back(&o), 2.0);
            x87::add(ld(1.5).as_ptr(), ld(-4.0).as_ptr(), o.as_mut_ptr());
            assert_eq!(back(&o), -2.5);
            x87::mul(ld(1.5).as_ptr(), ld(-4.0).as_ptr(), o.as_mut_ptr());
            assert_eq!(back(&o), -6.0);
        }
        // 1 + 2^-60 is exact in long double (not in double).
        let mut a = ld(1.0);
        let tiny = ld(2f64.powi(-60));
        let a2 = a;
        // SAFETY: 16-byte slots.
        unsafe { x87::add(a2.as_ptr(), tiny.as_ptr(), a.as_mut_ptr()) };
        assert_eq!(
            u64::from_le_bytes(a[0..8].try_into().unwrap()),
            (1u64 << 63) | 8
        );
        assert!(Ld::read(&a) > Ld::read(&ld(1.0)));
        assert!(Ld::read(&ld(-1.0)) < Ld::read(&ld(0.5)));
        assert!(Ld::read(&ld(2.0)) == Ld::read(&ld(2.0)));
        // Padding is never written.
        let mut b = ld(7.0);
        b[12] = 0xab;
        real_kernel(crate::base::consts::MPI_SUM, 1, &ld(1.0), &mut b);
        assert_eq!(back(&b), 8.0);
        assert_eq!(b[12], 0xab);
    }

    #[test]
    fn complex_product() {
        // (1 + 2i)(3 - 4i) = 11 + 2i
        let mut a = [0u8; 32];
        a[..16].copy_from_slice(&ld(1.0));
        a[16..].copy_from_slice(&ld(2.0));
        let mut b = [0u8; 32];
        b[..16].copy_from_slice(&ld(3.0));
        b[16..].copy_from_slice(&ld(-4.0));
        complex_kernel(crate::base::consts::MPI_PROD, 1, &a, &mut b);
        assert_eq!((back(&b[..16]), back(&b[16..])), (11.0, 2.0));
    }

    #[test]
    fn binary128_round_trip() {
        for d in [1.0, -2.5, 3.0e300, 1.0e-300, 0.1] {
            let s = ld(d);
            let q = to_binary128(&s);
            // binary128 of a double: same sign/exponent, fraction shifted.
            let b = d.to_bits();
            let e = ((b >> 52) & 0x7ff) as u128 + 16383 - 1023;
            let expect =
                ((b >> 63) as u128) << 127 | e << 112 | ((b & ((1 << 52) - 1)) as u128) << 60;
            assert_eq!(q, expect, "{d}");
            assert_eq!(from_binary128(q), s[..BYTES], "{d}");
        }
        // Rounding: the dropped half rounds to even, above half rounds up.
        let one = to_binary128(&ld(1.0));
        assert_eq!(from_binary128(one | (1 << 48)), ld(1.0)[..BYTES]);
        let up = from_binary128(one | (1 << 48) | 1);
        assert_eq!(
            u64::from_le_bytes(up[0..8].try_into().unwrap()),
            (1u64 << 63) | 1
        );
    }
}
