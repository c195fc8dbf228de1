//! Reductions on device buffers run on the device: kernels for the
//! builtin ops on every element kind a GPU has (integers, float, double,
//! float16, bfloat16, float and double complex, C bool, Fortran LOGICAL,
//! bytes), generated as CUDA C here and compiled at run time with NVRTC
//! (`libnvrtc.so.13` or `.12`, or `OXMPI_NVRTC_LIB`) into a CUBIN for the device's
//! exact architecture (`sm_XY`: no PTX that a driver older than NVRTC could
//! not load), once per element kind and process, cached.
//!
//! The kernels compute what `op::reduce_builtin` computes, bit for bit:
//! integer sums and products wrap, 16-bit floats are widened to float,
//! combined and rounded to nearest-even by the same bit manipulations, and
//! NVRTC is told not to contract multiplies and adds (`--fmad=false`).
//! MAXLOC/MINLOC pairs and `long double` have no kernel here (their packed
//! forms are not aligned, and GPUs have no x87 type): they run on host
//! copies.
//!
//! Where a kernel cannot be had (no NVRTC, a compile or load error, a
//! launch error), the caller falls back to host copies; the first such
//! failure prints one line to stderr, later ones are silent.

use super::driver::*;
use crate::base::consts::*;
use crate::op::Elem;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Mutex, OnceLock};

/// The kernel name of builtin `op` on element kind `e`.
pub fn name(op: c_int, e: Elem) -> Option<String> {
    Some(format!("oxmpi_{}_{}", op_tag(op)?, elem_tag(e)?))
}

fn op_tag(op: c_int) -> Option<&'static str> {
    Some(match op {
        MPI_MAX => "max",
        MPI_MIN => "min",
        MPI_SUM => "sum",
        MPI_PROD => "prod",
        MPI_LAND => "land",
        MPI_BAND => "band",
        MPI_LOR => "lor",
        MPI_BOR => "bor",
        MPI_LXOR => "lxor",
        MPI_BXOR => "bxor",
        MPI_REPLACE => "replace",
        _ => return None,
    })
}

fn elem_tag(e: Elem) -> Option<&'static str> {
    use Elem::*;
    Some(match e {
        I8 => "i8",
        U8 => "u8",
        I16 => "i16",
        U16 => "u16",
        I32 => "i32",
        U32 => "u32",
        I64 => "i64",
        U64 => "u64",
        F32 => "f32",
        F64 => "f64",
        F16 => "f16",
        BF16 => "bf16",
        C32 => "c32",
        C64 => "c64",
        Bool => "bool",
        Logical => "logical",
        Byte => "byte",
        _ => return None,
    })
}

/// Every element kind with kernels.
pub const ELEMS: &[Elem] = &[
    Elem::I8,
    Elem::U8,
    Elem::I16,
    Elem::U16,
    Elem::I32,
    Elem::U32,
    Elem::I64,
    Elem::U64,
    Elem::F32,
    Elem::F64,
    Elem::F16,
    Elem::BF16,
    Elem::C32,
    Elem::C64,
    Elem::Bool,
    Elem::Logical,
    Elem::Byte,
];

/// The builtin ops with a kernel on `e` (the ones MPI defines on it).
pub fn ops(e: Elem) -> Vec<c_int> {
    use Elem::*;
    let int = matches!(e, I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64);
    let float = matches!(e, F32 | F64 | F16 | BF16);
    let mut v = Vec::new();
    if int || float {
        v.extend([MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD]);
    } else if matches!(e, C32 | C64) {
        v.extend([MPI_SUM, MPI_PROD]);
    }
    if int || matches!(e, Bool | Logical) {
        v.extend([MPI_LAND, MPI_LOR, MPI_LXOR]);
    }
    if int || e == Byte {
        v.extend([MPI_BAND, MPI_BOR, MPI_BXOR]);
    }
    v.push(MPI_REPLACE);
    v
}

/// (C type of an element, unsigned type of the same width) for `e`.
fn ctype(e: Elem) -> (&'static str, &'static str) {
    use Elem::*;
    match e {
        I8 => ("signed char", "unsigned char"),
        U8 | Bool | Byte => ("unsigned char", "unsigned char"),
        I16 => ("short", "unsigned short"),
        U16 | F16 | BF16 => ("unsigned short", "unsigned short"),
        I32 | Logical => ("int", "unsigned int"),
        U32 => ("unsigned int", "unsigned int"),
        I64 => ("long long", "unsigned long long"),
        U64 => ("unsigned long long", "unsigned long long"),
        F32 => ("float", "float"),
        F64 => ("double", "double"),
        C32 => ("cf", "cf"),
        C64 => ("cd", "cd"),
        _ => ("unsigned char", "unsigned char"),
    }
}

/// The statement computing `b[i] = a[i] op b[i]` for `op` on `e`.
fn body(op: c_int, e: Elem) -> String {
    use Elem::*;
    let (t, u) = ctype(e);
    if op == MPI_REPLACE {
        return "b[i] = a[i];".into();
    }
    match e {
        F16 | BF16 => {
            let (to, from) = if e == F16 {
                ("h2f", "f2h")
            } else {
                ("b2f", "f2b")
            };
            let r = match op {
                MPI_MAX => "x > y ? x : y",
                MPI_MIN => "x < y ? x : y",
                MPI_SUM => "x + y",
                _ => "x * y",
            };
            format!("float x = {to}(a[i]), y = {to}(b[i]); b[i] = {from}({r});")
        }
        C32 | C64 => match op {
            MPI_SUM => "b[i].re = a[i].re + b[i].re; b[i].im = a[i].im + b[i].im;".into(),
            _ => format!(
                "{t} x = a[i], y = b[i]; b[i].re = x.re * y.re - x.im * y.im; b[i].im = x.re * y.im + x.im * y.re;"
            ),
        },
        F32 | F64 => match op {
            MPI_MAX => "b[i] = a[i] > b[i] ? a[i] : b[i];".into(),
            MPI_MIN => "b[i] = a[i] < b[i] ? a[i] : b[i];".into(),
            MPI_SUM => "b[i] = a[i] + b[i];".into(),
            _ => "b[i] = a[i] * b[i];".into(),
        },
        _ => match op {
            MPI_MAX => "b[i] = a[i] > b[i] ? a[i] : b[i];".into(),
            MPI_MIN => "b[i] = a[i] < b[i] ? a[i] : b[i];".into(),
            // Wrapping, as on the host: the arithmetic of the unsigned type.
            MPI_SUM => format!("b[i] = ({t})(({u})a[i] + ({u})b[i]);"),
            MPI_PROD => format!("b[i] = ({t})(({u})a[i] * ({u})b[i]);"),
            MPI_LAND => format!("b[i] = ({t})((a[i] != 0) && (b[i] != 0));"),
            MPI_LOR => format!("b[i] = ({t})((a[i] != 0) || (b[i] != 0));"),
            MPI_LXOR => format!("b[i] = ({t})((a[i] != 0) != (b[i] != 0));"),
            MPI_BAND => "b[i] &= a[i];".into(),
            MPI_BOR => "b[i] |= a[i];".into(),
            _ => "b[i] ^= a[i];".into(),
        },
    }
}

/// The helpers every module has: complex types and the 16-bit float
/// conversions of `op` (the same bit manipulations, so results match).
const PRELUDE: &str = r#"
struct cf { float re, im; };
struct cd { double re, im; };
__device__ float h2f(unsigned short h) {
    unsigned s = ((unsigned)(h >> 15)) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0) {
        if (m == 0) bits = s;
        else { unsigned e2 = 127 - 15 + 1, m2 = m; while (!(m2 & 0x400)) { m2 <<= 1; e2 -= 1; } bits = s | (e2 << 23) | ((m2 & 0x3ff) << 13); }
    } else if (e == 31) bits = s | 0x7f800000u | (m << 13);
    else bits = s | ((e + 127 - 15) << 23) | (m << 13);
    return __uint_as_float(bits);
}
__device__ unsigned short f2h(float f) {
    unsigned x = __float_as_uint(f);
    unsigned short s = (unsigned short)((x >> 16) & 0x8000);
    int e = (int)((x >> 23) & 0xff);
    unsigned m = x & 0x7fffff;
    if (e == 0xff) return s | 0x7c00 | (m ? 0x200 : 0);
    int e16 = e - 127 + 15;
    if (e16 >= 31) return s | 0x7c00;
    if (e16 <= 0) {
        if (e16 < -10) return s;
        unsigned mm = m | 0x800000, shift = (unsigned)(14 - e16), half = 1u << (shift - 1);
        unsigned rest = mm & ((1u << shift) - 1), r = mm >> shift;
        if (rest > half || (rest == half && (r & 1))) r += 1;
        return s | (unsigned short)r;
    }
    unsigned r = ((unsigned)e16 << 10) | (m >> 13), rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1))) r += 1;
    return s | (unsigned short)r;
}
__device__ float b2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ unsigned short f2b(float f) {
    unsigned x = __float_as_uint(f);
    if (f != f) return (unsigned short)(x >> 16) | 0x40;
    unsigned rest = x & 0xffff, r = x >> 16;
    if (rest > 0x8000 || (rest == 0x8000 && (r & 1))) r += 1;
    return (unsigned short)r;
}
"#;

/// The CUDA C of every kernel on element kind `e`.
pub fn source(e: Elem) -> String {
    let (t, _) = ctype(e);
    let mut s = String::from(PRELUDE);
    for op in ops(e) {
        let n = name(op, e).unwrap();
        s.push_str(&format!(
            "extern \"C\" __global__ void {n}(const {t} *__restrict__ a, {t} *__restrict__ b, unsigned long long n) {{\n    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += (unsigned long long)gridDim.x * blockDim.x) {{ {} }}\n}}\n",
            body(op, e)
        ));
    }
    s
}

// ------------------------------------------------------------------ NVRTC

type NvrtcResult = c_int;
type Program = *mut c_void;

/// The NVRTC functions the kernels need, resolved by name.
struct Nvrtc {
    _lib: libloading::Library,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcResult,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> NvrtcResult,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult,
    log: unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult,
    destroy: unsafe extern "C" fn(*mut Program) -> NvrtcResult,
}

/// The NVRTC libraries tried in turn when `OXMPI_NVRTC_LIB` names none.
pub const DEFAULT_NVRTC: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12"];

fn nvrtc() -> Result<&'static Nvrtc, String> {
    static N: OnceLock<Result<Nvrtc, String>> = OnceLock::new();
    N.get_or_init(|| {
        // A named library, or the first NVRTC found of the CUDA versions
        // whose CUBINs the drivers of today load (13, then 12).
        let names: Vec<String> = match crate::config::get_str("OXMPI_NVRTC_LIB") {
            Some(n) if !n.is_empty() => vec![n],
            _ => DEFAULT_NVRTC.iter().map(|n| n.to_string()).collect(),
        };
        let mut last = String::new();
        let mut found = None;
        for n in &names {
            // SAFETY: opening NVRTC runs its constructors, which set up only itself.
            match unsafe { libloading::Library::new(n) } {
                Ok(l) => {
                    found = Some((n.clone(), l));
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let (name, lib) = found.ok_or(last)?;
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the symbol is NVRTC's function of this name with the
                // signature of the field it fills (nvrtc.h).
                *unsafe { lib.get(concat!($s, "\0").as_bytes()) }
                    .map_err(|_| format!("{name} lacks {}", $s))?
            };
        }
        Ok(Nvrtc {
            create: sym!("nvrtcCreateProgram"),
            compile: sym!("nvrtcCompileProgram"),
            cubin_size: sym!("nvrtcGetCUBINSize"),
            cubin: sym!("nvrtcGetCUBIN"),
            log_size: sym!("nvrtcGetProgramLogSize"),
            log: sym!("nvrtcGetProgramLog"),
            destroy: sym!("nvrtcDestroyProgram"),
            _lib: lib,
        })
    })
    .as_ref()
    .map_err(|e| e.clone())
}

/// Compiles the kernels of `e` for architecture `arch` ("sm_90") into a CUBIN.
pub fn compile(e: Elem, arch: &str) -> Result<Vec<u8>, String> {
    let n = nvrtc()?;
    let src = CString::new(source(e)).unwrap();
    let pname = CString::new(format!("oxmpi_{}.cu", elem_tag(e).unwrap_or("x"))).unwrap();
    let mut prog: Program = std::ptr::null_mut();
    // SAFETY: valid out pointer and NUL-terminated strings; no headers.
    let r = unsafe {
        (n.create)(
            &mut prog,
            src.as_ptr(),
            pname.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(format!("nvrtcCreateProgram failed ({r})"));
    }
    let opts: Vec<CString> = [
        format!("--gpu-architecture={arch}"),
        "--fmad=false".into(),
        "-default-device".into(),
    ]
    .into_iter()
    .map(|o| CString::new(o).unwrap())
    .collect();
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `prog` was created above; the options are NUL-terminated strings.
    let r = unsafe { (n.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
    let out = if r != 0 {
        let mut len = 0usize;
        // SAFETY: `prog` is valid; the log buffer holds `len` bytes.
        let log = unsafe {
            (n.log_size)(prog, &mut len);
            let mut b = vec![0u8; len.max(1)];
            (n.log)(prog, b.as_mut_ptr() as *mut c_char);
            CStr::from_bytes_until_nul(&b)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        Err(format!(
            "NVRTC could not compile the {} kernels for {arch}: {}",
            elem_tag(e).unwrap_or("?"),
            log.trim()
        ))
    } else {
        let mut len = 0usize;
        // SAFETY: `prog` compiled; the buffer holds `len` bytes.
        unsafe {
            (n.cubin_size)(prog, &mut len);
            let mut b = vec![0u8; len];
            (n.cubin)(prog, b.as_mut_ptr() as *mut c_char);
            Ok(b)
        }
    };
    // SAFETY: `prog` is destroyed once.
    unsafe { (n.destroy)(&mut prog) };
    out
}

// ------------------------------------------------------------------ launching

/// Loaded modules per (device, element kind); None where loading failed.
type Modules = HashMap<(c_int, u8), Option<usize>>;
static MODULES: Mutex<Option<Modules>> = Mutex::new(None);

fn elem_key(e: Elem) -> u8 {
    ELEMS.iter().position(|&x| x == e).unwrap_or(255) as u8
}

/// Says once why device reductions run on host copies.
fn warn_once(why: &str) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        say!("oxmpi: reductions on device buffers run on host copies: {why}");
    }
}

/// The loaded module of `e`'s kernels on the current device.
fn module(d: &Driver, e: Elem) -> Option<usize> {
    let mut dev: c_int = 0;
    // SAFETY: valid out pointer; a context is current (`for_copy`).
    if unsafe { (d.ctx_get_device)(&mut dev) } != CUDA_SUCCESS {
        return None;
    }
    let key = (dev, elem_key(e));
    let mut g = MODULES.lock().unwrap_or_else(|x| x.into_inner());
    let m = g.get_or_insert_with(HashMap::new);
    if let Some(v) = m.get(&key) {
        return *v;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out pointers; 75 and 76 are the compute capability's parts.
    unsafe {
        (d.device_get_attribute)(&mut major, 75, dev);
        (d.device_get_attribute)(&mut minor, 76, dev);
    }
    let loaded = compile(e, &format!("sm_{major}{minor}")).and_then(|cubin| {
        let mut module: *mut c_void = std::ptr::null_mut();
        // SAFETY: `cubin` is a complete CUBIN image; valid out pointer.
        let r = unsafe { (d.module_load_data)(&mut module, cubin.as_ptr() as *const c_void) };
        if r != CUDA_SUCCESS {
            return Err(format!("cuModuleLoadData failed: {}", d.error(r)));
        }
        Ok(module as usize)
    });
    let v = match loaded {
        Ok(m) => Some(m),
        Err(why) => {
            warn_once(&why);
            None
        }
    };
    m.insert(key, v);
    v
}

/// `inout[i] = in[i] op inout[i]` for `n` elements of kind `e`, both in
/// device memory, on the device; false (nothing done) where there is no
/// kernel for it or it could not be had or launched.
///
/// # Safety
/// `inbuf` and `inout` are device buffers of `n` elements of kind `e`.
pub unsafe fn reduce(op: c_int, e: Elem, n: usize, inbuf: *const u8, inout: *mut u8) -> bool {
    let Some(kname) = name(op, e).filter(|_| ops(e).contains(&op)) else {
        return false;
    };
    if n == 0 {
        return true;
    }
    let Ok(d) = super::for_copy() else {
        return false;
    };
    let Some(m) = module(d, e) else {
        return false;
    };
    let mut f: *mut c_void = std::ptr::null_mut();
    let cname = CString::new(kname).unwrap();
    // SAFETY: `m` is a loaded module; valid out pointer.
    if unsafe { (d.module_get_function)(&mut f, m as *mut c_void, cname.as_ptr()) } != CUDA_SUCCESS
    {
        warn_once("a kernel is missing from its module");
        return false;
    }
    let (mut a, mut b, mut count) = (inbuf as u64, inout as u64, n as u64);
    let mut params: [*mut c_void; 3] = [
        (&mut a as *mut u64).cast(),
        (&mut b as *mut u64).cast(),
        (&mut count as *mut u64).cast(),
    ];
    let threads = 256u32;
    let blocks = (n as u64).div_ceil(threads as u64).min(65535) as u32;
    // SAFETY: the kernel takes (const T*, T*, unsigned long long), given by
    // the three parameter pointers; the default stream.
    let r = unsafe {
        (d.launch_kernel)(
            f,
            blocks,
            1,
            1,
            threads,
            1,
            1,
            0,
            std::ptr::null_mut(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    let r = if r == CUDA_SUCCESS {
        // SAFETY: the default stream, on which the kernel was launched.
        unsafe { (d.stream_synchronize)(std::ptr::null_mut()) }
    } else {
        r
    };
    if r != CUDA_SUCCESS {
        warn_once(&format!("a kernel launch failed: {}", d.error(r)));
        return false;
    }
    true
}
