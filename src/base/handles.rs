//! Decoding of integer handles (MPICH encoding, docs/abi.md): kind bits
//! [31:30], object type [29:26], index [25:0]. Builtin datatypes are
//! `0x4c00SSII` with SS the size in bytes; pair types are `0x8c00000N`.
//! User-created objects get direct handles `0x80000000 | type << 26 | index`,
//! which never collide with predefined ones and carry their kind.

use super::consts::*;
use crate::base::error::Result;
use crate::err;
use std::os::raw::c_int;

pub const KIND_COMM: u32 = 1;
pub const KIND_GROUP: u32 = 2;
pub const KIND_DATATYPE: u32 = 3;
pub const KIND_ERRHANDLER: u32 = 5;
pub const KIND_OP: u32 = 6;
pub const KIND_INFO: u32 = 7;
pub const KIND_WIN: u32 = 8;
pub const KIND_REQUEST: u32 = 0xb;

const DIRECT: u32 = 0x8000_0000;

pub fn object_type(h: c_int) -> u32 {
    ((h as u32) >> 26) & 0xf
}

pub fn make(kind: u32, idx: u32) -> c_int {
    (DIRECT | (kind << 26) | (idx & 0x03ff_ffff)) as c_int
}

/// Builtin handle `idx` of `kind` (kind bits 01, as MPICH's predefined objects).
pub const fn builtin(kind: u32, idx: u32) -> c_int {
    (0x4000_0000 | (kind << 26) | (idx & 0x03ff_ffff)) as c_int
}

/// Index of a user handle of `kind`, if `h` is one.
pub fn index(h: c_int, kind: u32) -> Option<u32> {
    let u = h as u32;
    (u >> 30 == 2 && object_type(h) == kind).then_some(u & 0x03ff_ffff)
}

pub fn errh_index(h: c_int) -> Option<u32> {
    index(h, KIND_ERRHANDLER)
}

/// " (it is a datatype handle)" when the handle names another kind of object than `expected`.
pub fn kind_hint(h: c_int, expected: u32) -> &'static str {
    if h as u32 >> 30 == 0 && h != 0 {
        return " (it is a null handle)";
    }
    let t = object_type(h);
    if t == expected {
        return "";
    }
    match t {
        KIND_COMM => " (it is a communicator handle)",
        KIND_GROUP => " (it is a group handle)",
        KIND_DATATYPE => " (it is a datatype handle)",
        KIND_ERRHANDLER => " (it is an error handler handle)",
        KIND_OP => " (it is an op handle)",
        KIND_INFO => " (it is an info handle)",
        KIND_REQUEST => " (it is a request handle)",
        KIND_WIN => " (it is a window handle)",
        _ => "",
    }
}

/// Size of a builtin datatype whose handle carries it (MPICH's layout
/// `0x4c00SS..`, SS the size in bytes), else None.
#[inline]
pub fn builtin_size(dt: c_int) -> Option<usize> {
    let u = dt as u32;
    (u >> 26 == 0x4c00_0000 >> 26).then_some(((u >> 8) & 0xff) as usize)
}

/// Size in bytes of one element of datatype `dt`.
pub fn type_size(dt: c_int) -> Result<usize> {
    if let Some(sz) = builtin_size(dt) {
        return Ok(sz);
    }
    Ok(match dt {
        // The pair types: the sum of their parts (the extent keeps the
        // padding; see `pair_parts`).
        MPI_FLOAT_INT => 8,
        MPI_DOUBLE_INT => 12,
        MPI_LONG_INT => 12,
        MPI_SHORT_INT => 6,
        MPI_LONG_DOUBLE_INT => 20,
        MPI_DATATYPE_NULL => return Err(err!(MPI_ERR_TYPE, "datatype=MPI_DATATYPE_NULL")),
        _ => {
            return Err(err!(
                MPI_ERR_TYPE,
                "datatype=0x{:08x} is not a known datatype{}",
                dt as u32,
                kind_hint(dt, KIND_DATATYPE)
            ))
        }
    })
}

/// The data of a C pair type (value, int) as (offset, length) byte runs,
/// and its extent: the C struct's layout, padding between or after the
/// parts not part of the data.
pub fn pair_parts(dt: c_int) -> Option<(&'static [(usize, usize)], usize)> {
    Some(match dt {
        MPI_FLOAT_INT => (&[(0, 8)], 8),
        MPI_DOUBLE_INT | MPI_LONG_INT => (&[(0, 12)], 16),
        MPI_SHORT_INT => (&[(0, 2), (4, 4)], 8),
        MPI_LONG_DOUBLE_INT => (&[(0, 20)], 32),
        _ => return None,
    })
}

pub use super::type_names::builtin_name;

/// Basic elements per datatype element (2 for the pair types).
pub fn type_elements(dt: c_int) -> usize {
    match dt {
        MPI_FLOAT_INT | MPI_DOUBLE_INT | MPI_LONG_INT | MPI_SHORT_INT | MPI_LONG_DOUBLE_INT => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn builtin_sizes_come_from_the_handle() {
        assert_eq!(type_size(MPI_INT).unwrap(), 4);
        assert_eq!(type_size(MPI_DOUBLE).unwrap(), 8);
        assert_eq!(type_size(MPI_CHAR).unwrap(), 1);
        assert_eq!(type_size(MPI_LONG_DOUBLE).unwrap(), 16);
        assert_eq!(type_size(MPI_C_DOUBLE_COMPLEX).unwrap(), 16);
        assert_eq!(type_size(MPI_DOUBLE_INT).unwrap(), 12);
        assert_eq!(type_size(MPI_SHORT_INT).unwrap(), 6);
        assert_eq!(type_size(MPI_LONG_DOUBLE_INT).unwrap(), 20);
        assert_eq!(pair_parts(MPI_LONG_DOUBLE_INT).unwrap().1, 32);
        assert_eq!(
            type_size(MPI_DATATYPE_NULL).unwrap_err().class,
            MPI_ERR_TYPE
        );
        assert_eq!(type_size(MPI_COMM_WORLD).unwrap_err().class, MPI_ERR_TYPE);
        assert!(type_size(MPI_COMM_WORLD)
            .unwrap_err()
            .msg
            .contains("communicator handle"));
        assert_eq!(index(make(KIND_REQUEST, 7), KIND_REQUEST), Some(7));
        assert_eq!(index(make(KIND_REQUEST, 7), KIND_COMM), None);
        assert_eq!(make(KIND_REQUEST, 0) as u32, 0xac00_0000);
        assert_eq!(builtin(KIND_REQUEST, 1) as u32, 0x6c00_0001);
        assert_eq!(index(builtin(KIND_REQUEST, 1), KIND_REQUEST), None);
    }
}
