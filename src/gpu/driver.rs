//! The CUDA driver, opened at run time: our own small table of the driver
//! functions the library calls, resolved by name from `libcuda.so.1` (or
//! `OXMPI_CUDA_LIB`) with libloading. Nothing is linked: a machine without
//! a driver never loads one, and a driver that lacks a function is refused
//! with a message naming it (cudarc, the crate that would give these, panics
//! on a missing library or symbol, and a panic in a C library is an abort;
//! see docs/gpu.md).
//!
//! `load` opens the library, resolves every function, calls `cuInit(0)` and
//! checks that a device exists. It creates no context and allocates nothing.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

pub type CUresult = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;

/// cbindgen:ignore
pub const CUDA_SUCCESS: CUresult = 0;
/// cbindgen:ignore
pub const CU_MEMORYTYPE_HOST: c_uint = 1;
/// cbindgen:ignore
pub const CU_MEMORYTYPE_DEVICE: c_uint = 2;
/// cbindgen:ignore
pub const CU_MEMORYTYPE_UNIFIED: c_uint = 4;

/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_CONTEXT: c_int = 1;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: c_int = 6;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_BUFFER_ID: c_int = 7;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_IS_MANAGED: c_int = 8;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
/// cbindgen:ignore
pub const CU_POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;

/// `CUipcMemHandle`: 64 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpcHandle {
    pub reserved: [u8; 64],
}

/// cbindgen:ignore
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
/// cbindgen:ignore
pub const CU_STREAM_NON_BLOCKING: c_uint = 1;
/// cbindgen:ignore
pub const CU_EVENT_DISABLE_TIMING: c_uint = 2;
/// cbindgen:ignore
pub const CU_DEVICE_ATTRIBUTE_MPS_ENABLED: c_int = 133;
/// cbindgen:ignore
pub const CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: c_int = 33;
/// cbindgen:ignore
pub const CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: c_int = 34;
/// cbindgen:ignore
pub const CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: c_int = 50;
/// cbindgen:ignore
pub const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: c_uint = 1;

/// `CUDA_MEMCPY2D` (the v2 layout, current since CUDA 3.2).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Memcpy2D {
    pub src_x_in_bytes: usize,
    pub src_y: usize,
    pub src_memory_type: c_uint,
    pub src_host: *const c_void,
    pub src_device: CUdeviceptr,
    pub src_array: *mut c_void,
    pub src_pitch: usize,
    pub dst_x_in_bytes: usize,
    pub dst_y: usize,
    pub dst_memory_type: c_uint,
    pub dst_host: *mut c_void,
    pub dst_device: CUdeviceptr,
    pub dst_array: *mut c_void,
    pub dst_pitch: usize,
    pub width_in_bytes: usize,
    pub height: usize,
}

/// `CUstreamBatchMemOpParams` as a write of a value (its
/// `writeValue` member; the union is 48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MemOpWrite {
    pub operation: c_uint,
    pub _pad: c_uint,
    pub address: CUdeviceptr,
    /// The value (a 32-bit write takes the low half: little-endian).
    pub value: u64,
    pub flags: c_uint,
    pub _pad2: c_uint,
    pub alias: CUdeviceptr,
    pub _rest: u64,
}

/// cbindgen:ignore
pub const CU_STREAM_MEM_OP_WRITE_VALUE_32: c_uint = 2;
/// cbindgen:ignore
pub const CU_STREAM_MEM_OP_WRITE_VALUE_64: c_uint = 5;

/// `cuStreamBatchMemOp_v2(stream, count, params, flags)`.
pub type BatchMemOp =
    unsafe extern "C" fn(*mut c_void, c_uint, *mut MemOpWrite, c_uint) -> CUresult;

/// Declares the table: one field per driver function, resolved by its
/// exported name (the versioned name where the driver has several).
macro_rules! table {
    ($($field:ident = $sym:literal : fn($($a:ty),*);)*) => {
        /// The driver functions the library calls.
        pub struct Driver {
            _lib: libloading::Library,
            $(pub $field: unsafe extern "C" fn($($a),*) -> CUresult,)*
            /// `cuStreamBatchMemOp_v2` (CUDA 11.7 and later), optional:
            /// without it small device writes are copies (`gpu::write_words`).
            pub batch_mem_op: Option<BatchMemOp>,
        }

        /// Resolves every function of the table in `lib`.
        ///
        /// # Safety
        /// `lib` is a CUDA driver: each symbol has the C signature declared here.
        unsafe fn resolve(lib: libloading::Library) -> Result<Driver, String> {
            $(
                // SAFETY: the symbol is the driver function of this name, whose
                // signature the table declares (CUDA's cuda.h).
                let $field = *unsafe {
                    lib.get::<unsafe extern "C" fn($($a),*) -> CUresult>(concat!($sym, "\0").as_bytes())
                }
                .map_err(|_| format!("lacks {}", $sym))?;
            )*
            // SAFETY: as above, `cuStreamBatchMemOp_v2`'s signature.
            let batch_mem_op = unsafe { lib.get::<BatchMemOp>(b"cuStreamBatchMemOp_v2\0") }
                .ok()
                .map(|f| *f);
            Ok(Driver { _lib: lib, $($field,)* batch_mem_op })
        }
    };
}

table! {
    init = "cuInit": fn(c_uint);
    driver_get_version = "cuDriverGetVersion": fn(*mut c_int);
    device_get_count = "cuDeviceGetCount": fn(*mut c_int);
    pointer_get_attributes = "cuPointerGetAttributes": fn(c_uint, *mut c_int, *mut *mut c_void, CUdeviceptr);
    pointer_set_attribute = "cuPointerSetAttribute": fn(*const c_void, c_int, CUdeviceptr);
    ctx_get_current = "cuCtxGetCurrent": fn(*mut CUcontext);
    ctx_set_current = "cuCtxSetCurrent": fn(CUcontext);
    memcpy_2d_async = "cuMemcpy2DAsync_v2": fn(*const Memcpy2D, *mut c_void);
    get_error_string = "cuGetErrorString": fn(CUresult, *mut *const c_char);
    ipc_get_mem_handle = "cuIpcGetMemHandle": fn(*mut IpcHandle, CUdeviceptr);
    ipc_open_mem_handle = "cuIpcOpenMemHandle_v2": fn(*mut CUdeviceptr, IpcHandle, c_uint);
    ipc_close_mem_handle = "cuIpcCloseMemHandle": fn(CUdeviceptr);
    ctx_get_device = "cuCtxGetDevice": fn(*mut c_int);
    device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, c_int);
    module_load_data = "cuModuleLoadData": fn(*mut *mut c_void, *const c_void);
    module_get_function = "cuModuleGetFunction": fn(*mut *mut c_void, *mut c_void, *const c_char);
    launch_kernel = "cuLaunchKernel": fn(*mut c_void, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, *mut c_void, *mut *mut c_void, *mut *mut c_void);
    stream_synchronize = "cuStreamSynchronize": fn(*mut c_void);
    stream_create = "cuStreamCreate": fn(*mut *mut c_void, c_uint);
    memcpy_async = "cuMemcpyAsync": fn(CUdeviceptr, CUdeviceptr, usize, *mut c_void);
    event_create = "cuEventCreate": fn(*mut *mut c_void, c_uint);
    event_record = "cuEventRecord": fn(*mut c_void, *mut c_void);
    event_query = "cuEventQuery": fn(*mut c_void);
    event_destroy = "cuEventDestroy_v2": fn(*mut c_void);
    mem_alloc = "cuMemAlloc_v2": fn(*mut CUdeviceptr, usize);
    mem_free = "cuMemFree_v2": fn(CUdeviceptr);
    mem_host_register = "cuMemHostRegister_v2": fn(*mut c_void, usize, c_uint);
    mem_host_unregister = "cuMemHostUnregister": fn(*mut c_void);
}

/// Opens the driver `name`, resolves the table, initialises the driver and
/// checks for a device; the message says what failed.
pub fn load(name: &str) -> Result<Driver, String> {
    // SAFETY: opening the driver runs its constructors, which only set up
    // the library itself; nothing of ours depends on their effects.
    let lib = unsafe { libloading::Library::new(name) }.map_err(|e| e.to_string())?;
    // SAFETY: a library that calls itself libcuda has the driver's functions.
    let d = unsafe { resolve(lib) }.map_err(|e| format!("{name} {e}"))?;
    // SAFETY: cuInit(0) is the driver's documented first call; it creates
    // no context.
    let r = unsafe { (d.init)(0) };
    if r != CUDA_SUCCESS {
        return Err(format!("cuInit failed: {}", d.error(r)));
    }
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out pointer.
    let r = unsafe { (d.device_get_count)(&mut n) };
    if r != CUDA_SUCCESS {
        return Err(format!("cuDeviceGetCount failed: {}", d.error(r)));
    }
    if n < 1 {
        return Err("the driver reports no device".into());
    }
    Ok(d)
}

impl Driver {
    /// The driver's text for error code `r`.
    pub fn error(&self, r: CUresult) -> String {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: `p` is a valid out pointer; the driver returns a static string.
        let ok = unsafe { (self.get_error_string)(r, &mut p) } == CUDA_SUCCESS;
        if ok && !p.is_null() {
            // SAFETY: a NUL-terminated static string of the driver.
            let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
            format!("{s} (CUresult {r})")
        } else {
            format!("CUresult {r}")
        }
    }

    /// `cuPointerGetAttributes` of the memory at address `p`: each (attribute, out
    /// pointer) pair in `want` is filled in one call.
    ///
    /// # Safety
    /// Each out pointer is valid for the type the driver writes for its
    /// attribute (cuda.h).
    pub unsafe fn attributes<const N: usize>(
        &self,
        p: CUdeviceptr,
        want: [(c_int, *mut c_void); N],
    ) -> CUresult {
        // On the stack: this is called for every buffer a call is given.
        let mut attrs = want.map(|w| w.0);
        let mut data = want.map(|w| w.1);
        // SAFETY: as many attributes as out pointers (contract); the driver
        // answers null values for memory it does not know.
        unsafe {
            (self.pointer_get_attributes)(N as c_uint, attrs.as_mut_ptr(), data.as_mut_ptr(), p)
        }
    }

    /// The driver's version as CUDA reports it (12040 is 12.4).
    pub fn version(&self) -> i32 {
        let mut v = 0;
        // SAFETY: `v` is a valid out pointer.
        unsafe { (self.driver_get_version)(&mut v) };
        v
    }
}
