//! Keyvals and attributes on communicators, with copy callbacks on dup and
//! delete callbacks on delete/free; the predefined attributes of MPI_COMM_WORLD.
//! Callbacks run without the library lock held (they may call MPI).

use super::consts::*;
use super::ptr::{inp, out};
use super::{MPI_Comm, MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function};
use crate::core::comm::{keyval_handle, keyval_index, CopyFn, DeleteFn, Keyval};
use crate::core::error::{Error, Result};
use crate::core::runtime::with;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

const OBJ_COMM: u32 = 1;

pub static ATTR_TAG_UB: AtomicI32 = AtomicI32::new(i32::MAX);
pub static ATTR_HOST: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
pub static ATTR_IO: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
pub static ATTR_WTIME_GLOBAL: AtomicI32 = AtomicI32::new(0);
pub static ATTR_UNIVERSE: AtomicI32 = AtomicI32::new(1);
pub static ATTR_APPNUM: AtomicI32 = AtomicI32::new(0);
/// MPI_LASTUSEDCODE: the largest error code in use (`errh::add_user_error`).
pub static ATTR_LASTUSED: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

fn predefined(keyval: c_int) -> Option<&'static AtomicI32> {
    Some(match keyval {
        MPI_TAG_UB => &ATTR_TAG_UB,
        MPI_HOST => &ATTR_HOST,
        MPI_IO => &ATTR_IO,
        MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_GLOBAL,
        MPI_UNIVERSE_SIZE => &ATTR_UNIVERSE,
        MPI_APPNUM => &ATTR_APPNUM,
        MPI_LASTUSEDCODE => &ATTR_LASTUSED,
        _ => return None,
    })
}

/// MPI_DUP_FN, MPI_COMM_DUP_FN, MPI_TYPE_DUP_FN, MPI_WIN_DUP_FN: copy the value, keep it.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: c_int,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // The library calls copy functions with valid out-pointers; a user
    // calling this one with NULL gets MPI_ERR_ARG.
    match super::ptr::out_ptr(attribute_val_out, "attribute_val_out", attribute_val_in)
        .and_then(|()| out(flag, "flag", 1))
    {
        Ok(()) => MPI_SUCCESS,
        Err(e) => e.class,
    }
}

fn callback_error(what: &str, rc: c_int) -> Error {
    err!(
        if rc > 0 && rc <= MPI_ERR_LASTCODE {
            rc
        } else {
            MPI_ERR_OTHER
        },
        "{what} callback returned {rc}"
    )
}

/// Runs the copy callbacks of `attrs` for a duplicate of `comm`; returns the attributes to keep.
pub fn copy_attrs(comm: MPI_Comm, attrs: &[(c_int, usize)]) -> Result<Vec<(c_int, usize)>> {
    let mut kept = Vec::new();
    for &(kv, val) in attrs {
        let k = with(|st| Ok(keyval_index(kv).and_then(|(_, i)| st.keyvals.get(i).copied())))?;
        let Some(k) = k else { continue };
        let Some(f) = k.copy_fn else { continue };
        let mut newval: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        let rc = if k.fortran {
            let ff = crate::fortran_support::as_fortran_copy(f);
            let (mut ierr, extra, vin) = (0, k.extra_state as isize, val as isize);
            let mut vout: isize = 0;
            // SAFETY: a Fortran copy callback; every argument is a valid reference.
            unsafe { ff(&comm, &kv, &extra, &vin, &mut vout, &mut flag, &mut ierr) };
            newval = vout as *mut c_void;
            ierr
        } else {
            // SAFETY: a user copy function with the MPI_Comm_copy_attr_function signature.
            unsafe {
                f(
                    comm,
                    kv,
                    k.extra_state as *mut c_void,
                    val as *mut c_void,
                    &mut newval as *mut _ as *mut c_void,
                    &mut flag,
                )
            }
        };
        if rc != MPI_SUCCESS {
            return Err(callback_error("attribute copy", rc));
        }
        if flag != 0 {
            kept.push((kv, newval as usize));
            with(|st| {
                if let Some((_, i)) = keyval_index(kv) {
                    if let Some(k) = st.keyvals.get_mut(i) {
                        k.refs += 1;
                    }
                }
                Ok(())
            })?;
        }
    }
    Ok(kept)
}

/// Runs one attribute's delete callback and drops its keyval reference.
pub(crate) fn delete_one(comm: MPI_Comm, kv: c_int, val: usize) -> Result<()> {
    let k = with(|st| Ok(keyval_index(kv).and_then(|(_, i)| st.keyvals.get(i).copied())))?;
    if let Some(Keyval {
        delete_fn: Some(f),
        extra_state,
        fortran,
        ..
    }) = k
    {
        let rc = if fortran {
            let ff = crate::fortran_support::as_fortran_delete(f);
            let (mut ierr, extra, v) = (0, extra_state as isize, val as isize);
            // SAFETY: a Fortran delete callback; every argument is a valid reference.
            unsafe { ff(&comm, &kv, &v, &extra, &mut ierr) };
            ierr
        } else {
            // SAFETY: a user delete function with the MPI_Comm_delete_attr_function signature.
            unsafe { f(comm, kv, val as *mut c_void, extra_state as *mut c_void) }
        };
        if rc != MPI_SUCCESS {
            return Err(callback_error("attribute delete", rc));
        }
    }
    with(|st| {
        if let Some((_, i)) = keyval_index(kv) {
            let gone = st.keyvals.get_mut(i).map(|k| {
                k.refs = k.refs.saturating_sub(1);
                k.freed && k.refs == 0
            });
            if gone == Some(true) {
                st.keyvals.remove(i);
            }
        }
        Ok(())
    })
}

/// Deletes all attributes of a communicator being freed (last set, first deleted).
pub fn delete_attrs(comm: MPI_Comm, attrs: &[(c_int, usize)]) -> Result<()> {
    for &(kv, val) in attrs.iter().rev() {
        delete_one(comm, kv, val)?;
    }
    Ok(())
}

pub(crate) fn create_keyval(
    copy: *mut c_void,
    del: *mut c_void,
    extra: *mut c_void,
    object: u32,
) -> Result<c_int> {
    // SAFETY: non-NULL pointers of these C function types are functions with the
    // signatures CopyFn / DeleteFn describe; NULL means "no callback".
    let copy_fn =
        (!copy.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, CopyFn>(copy) });
    // SAFETY: as above.
    let delete_fn =
        (!del.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, DeleteFn>(del) });
    with(|st| {
        let i = st.keyvals.insert(Keyval {
            copy_fn,
            delete_fn,
            extra_state: extra as usize,
            object,
            freed: false,
            refs: 0,
            fortran: false,
        });
        Ok(keyval_handle(object, i))
    })
}

/// Marks keyval `kv` freed; its slot goes when no attribute uses it any more.
pub(crate) fn free_keyval(kv: c_int, object: u32) -> Result<()> {
    with(|st| {
        st.keyval(kv, object)?;
        let (_, i) = keyval_index(kv).unwrap();
        let k = st.keyvals.get_mut(i).unwrap();
        k.freed = true;
        if k.refs == 0 {
            st.keyvals.remove(i);
        }
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: *mut MPI_Comm_copy_attr_function,
    comm_delete_attr_fn: *mut MPI_Comm_delete_attr_function,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    if comm_keyval.is_null() {
        return Err(err!(MPI_ERR_ARG, "comm_keyval=NULL"));
    }
    let h = create_keyval(
        comm_copy_attr_fn,
        comm_delete_attr_fn,
        extra_state,
        OBJ_COMM,
    )?;
    out(comm_keyval, "comm_keyval", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int {
    let kv = inp(comm_keyval, "comm_keyval")?;
    if predefined(kv).is_some() {
        return Err(err!(
            MPI_ERR_KEYVAL,
            "comm_keyval={kv} is predefined and cannot be freed"
        ));
    }
    free_keyval(kv, OBJ_COMM)?;
    out(comm_keyval, "comm_keyval", MPI_KEYVAL_INVALID)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    if predefined(comm_keyval).is_some() {
        return Err(err!(
            MPI_ERR_KEYVAL,
            "comm_keyval={comm_keyval} is a predefined attribute and cannot be set"
        ));
    }
    let old = with(|st| {
        st.keyval(comm_keyval, OBJ_COMM)?;
        Ok(st
            .comm(comm)?
            .attrs
            .iter()
            .find(|a| a.0 == comm_keyval)
            .map(|a| a.1))
    })?;
    if let Some(v) = old {
        delete_one(comm, comm_keyval, v)?;
    }
    with(|st| {
        let c = st.comm_mut(comm)?;
        c.attrs.retain(|a| a.0 != comm_keyval);
        c.attrs.push((comm_keyval, attribute_val as usize));
        let (_, i) = keyval_index(comm_keyval).unwrap();
        st.keyvals.get_mut(i).unwrap().refs += 1;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if flag.is_null() {
        return Err(err!(MPI_ERR_ARG, "flag=NULL"));
    }
    if let Some(a) = predefined(comm_keyval) {
        with(|st| st.comm(comm).map(|_| ()))?;
        // The value of a predefined attribute is a pointer to an int
        // (AtomicI32 has the layout of an int).
        out(
            attribute_val as *mut *const c_void,
            "attribute_val",
            a.as_ptr() as *const c_void,
        )?;
        return out(flag, "flag", 1);
    }
    if comm_keyval == MPI_KEYVAL_INVALID {
        return Err(err!(MPI_ERR_KEYVAL, "comm_keyval=MPI_KEYVAL_INVALID"));
    }
    let v = with(|st| {
        st.keyval_in_use(comm_keyval, OBJ_COMM)?;
        Ok(st
            .comm(comm)?
            .attrs
            .iter()
            .find(|a| a.0 == comm_keyval)
            .map(|a| a.1))
    })?;
    match v {
        Some(v) => {
            out(attribute_val as *mut usize, "attribute_val", v)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) -> c_int {
    if predefined(comm_keyval).is_some() {
        return Err(err!(
            MPI_ERR_KEYVAL,
            "comm_keyval={comm_keyval} is predefined and cannot be deleted"
        ));
    }
    let v = with(|st| {
        st.keyval_in_use(comm_keyval, OBJ_COMM)?;
        Ok(st
            .comm(comm)?
            .attrs
            .iter()
            .find(|a| a.0 == comm_keyval)
            .map(|a| a.1))
    })?;
    let v = v.ok_or_else(|| {
        err!(
            MPI_ERR_KEYVAL,
            "comm_keyval={comm_keyval} has no attribute on this communicator"
        )
    })?;
    delete_one(comm, comm_keyval, v)?;
    with(|st| {
        st.comm_mut(comm)?.attrs.retain(|a| a.0 != comm_keyval);
        Ok(())
    })
}

/// Sets the values of the predefined attributes at MPI_Init.
pub fn init_predefined(universe: i32, appnum: i32) {
    ATTR_UNIVERSE.store(universe, Ordering::Relaxed);
    ATTR_APPNUM.store(appnum, Ordering::Relaxed);
}

const OBJ_DATATYPE: u32 = 3;

pub type MPI_Type_copy_attr_function = c_void;
pub type MPI_Type_delete_attr_function = c_void;

/// Where a datatype's attributes live: a derived type's own list, or the
/// library's table for a predefined type (attributes are allowed on those).
enum TypeSlot {
    Derived(u32),
    Predefined(c_int),
}

fn type_slot(dt: c_int) -> Result<TypeSlot> {
    if super::datatype::is_predefined(dt) {
        crate::abi::handles::type_size(dt)?;
        return Ok(TypeSlot::Predefined(dt));
    }
    let i = crate::abi::handles::index(dt, crate::abi::handles::KIND_DATATYPE)
        .filter(|&i| i >= 5)
        .ok_or_else(|| {
            err!(
                MPI_ERR_TYPE,
                "datatype=0x{:08x} is not a datatype",
                dt as u32
            )
        })?;
    super::datatype::lookup(dt)?;
    Ok(TypeSlot::Derived(i - 5))
}

fn type_attrs(dt: c_int) -> Result<Vec<(c_int, usize)>> {
    let slot = type_slot(dt)?;
    with(|st| {
        Ok(match slot {
            TypeSlot::Derived(i) => st.types.get(i).map(|t| t.attrs.clone()),
            TypeSlot::Predefined(h) => st.builtin_type_attrs.get(&h).cloned(),
        }
        .unwrap_or_default())
    })
}

fn set_type_attrs(dt: c_int, f: impl FnOnce(&mut Vec<(c_int, usize)>)) -> Result<()> {
    let slot = type_slot(dt)?;
    with(|st| {
        match slot {
            TypeSlot::Derived(i) => {
                if let Some(t) = st.types.get_mut(i) {
                    f(&mut std::sync::Arc::make_mut(t).attrs);
                }
            }
            TypeSlot::Predefined(h) => f(st.builtin_type_attrs.entry(h).or_default()),
        }
        Ok(())
    })
}

/// MPI_Finalize's first step: the attributes on MPI_COMM_SELF are deleted
/// (as if it were freed), last set first, their delete callbacks run; then
/// those on MPI_COMM_WORLD, as MPICH does.
pub fn delete_at_finalize() -> Result<()> {
    for comm in [MPI_COMM_SELF, MPI_COMM_WORLD] {
        let attrs = with(|st| Ok(std::mem::take(&mut st.comm_mut(comm)?.attrs)))?;
        delete_attrs(comm, &attrs)?;
    }
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    type_copy_attr_fn: *mut MPI_Type_copy_attr_function,
    type_delete_attr_fn: *mut MPI_Type_delete_attr_function,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    if type_keyval.is_null() {
        return Err(err!(MPI_ERR_ARG, "type_keyval=NULL"));
    }
    let h = create_keyval(
        type_copy_attr_fn,
        type_delete_attr_fn,
        extra_state,
        OBJ_DATATYPE,
    )?;
    out(type_keyval, "type_keyval", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
    let kv = inp(type_keyval, "type_keyval")?;
    free_keyval(kv, OBJ_DATATYPE)?;
    out(type_keyval, "type_keyval", MPI_KEYVAL_INVALID)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_attr(
    datatype: c_int,
    type_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    with(|st| st.keyval(type_keyval, OBJ_DATATYPE).map(|_| ()))?;
    let old = type_attrs(datatype)?
        .iter()
        .find(|a| a.0 == type_keyval)
        .map(|a| a.1);
    if let Some(v) = old {
        delete_one(datatype, type_keyval, v)?;
    }
    set_type_attrs(datatype, |a| {
        a.retain(|x| x.0 != type_keyval);
        a.push((type_keyval, attribute_val as usize));
    })?;
    with(|st| {
        let (_, i) = keyval_index(type_keyval).unwrap();
        st.keyvals.get_mut(i).unwrap().refs += 1;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(
    datatype: c_int,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    with(|st| st.keyval_in_use(type_keyval, OBJ_DATATYPE).map(|_| ()))?;
    let v = type_attrs(datatype)?
        .iter()
        .find(|a| a.0 == type_keyval)
        .map(|a| a.1);
    match v {
        Some(v) => {
            out(attribute_val as *mut usize, "attribute_val", v)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_delete_attr(datatype: c_int, type_keyval: c_int) -> c_int {
    with(|st| st.keyval_in_use(type_keyval, OBJ_DATATYPE).map(|_| ()))?;
    let v = type_attrs(datatype)?
        .iter()
        .find(|a| a.0 == type_keyval)
        .map(|a| a.1)
        .ok_or_else(|| {
            err!(
                MPI_ERR_KEYVAL,
                "type_keyval={type_keyval} has no attribute on this datatype"
            )
        })?;
    delete_one(datatype, type_keyval, v)?;
    set_type_attrs(datatype, |a| a.retain(|x| x.0 != type_keyval))
}
