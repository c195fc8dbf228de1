//! The MPI-4 large-count forms of the datatype constructors, the envelope
//! and contents queries, pack/unpack and the Bsend buffer. Constructors and
//! pack/unpack pass their `MPI_Count` arguments as they are to the work the
//! int forms share (`datatype::make_*`, `pack_into`, ...), which counts in
//! 64 bits; the type they make is marked large (`Envelope::large`), and `MPI_Type_get_envelope_c` /
//! `MPI_Type_get_contents_c` give its counts and displacements in the
//! large-count array, in the standard's layout (MPI-4.1 table 5.1).

use super::consts::*;
use super::ptr::{in_slice, inp, out, out_slice};
use super::{datatype, p2p, MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype};
use crate::core::error::Result;
use crate::datatype::Envelope;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int, c_void};

/// The envelope as the `_c` queries give it: (integers, addresses, large
/// counts). A type from an int constructor keeps its int layout; one from a
/// large-count constructor has every count and displacement among the large
/// counts, but for the subarray's and darray's other integers.
fn large_layout(e: &Envelope) -> (Vec<c_int>, Vec<MPI_Aint>, Vec<MPI_Count>) {
    // The integers that stay ints (ndims, order, the process grid) are
    // small by construction.
    let small = |v: &[i64]| v.iter().map(|&x| x as c_int).collect::<Vec<_>>();
    if !e.large {
        return (
            small(&e.ints),
            e.aints.iter().map(|&a| a as MPI_Aint).collect(),
            Vec::new(),
        );
    }
    match e.combiner {
        // ints: ndims, sizes, subsizes, starts, order
        MPI_COMBINER_SUBARRAY => {
            let nd = e.ints[0] as usize;
            (
                small(&[e.ints[0], e.ints[1 + 3 * nd]]),
                Vec::new(),
                e.ints[1..1 + 3 * nd].to_vec(),
            )
        }
        // ints: size, rank, ndims, gsizes, distribs, dargs, psizes, order
        MPI_COMBINER_DARRAY => {
            let nd = e.ints[2] as usize;
            let mut i = small(&e.ints[..3]);
            i.extend(small(&e.ints[3 + nd..]));
            (i, Vec::new(), e.ints[3..3 + nd].to_vec())
        }
        _ => {
            let mut c = e.ints.clone();
            c.extend(e.aints.iter().map(|&a| a as MPI_Count));
            (Vec::new(), Vec::new(), c)
        }
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope_c(
    dt: MPI_Datatype,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> c_int {
    let t = datatype::lookup(dt)?;
    let (i, a, c) = large_layout(&t.env);
    out(num_integers, "num_integers", i.len() as MPI_Count)?;
    out(num_addresses, "num_addresses", a.len() as MPI_Count)?;
    out(num_large_counts, "num_large_counts", c.len() as MPI_Count)?;
    out(
        num_datatypes,
        "num_datatypes",
        t.env.types.len() as MPI_Count,
    )?;
    out(combiner, "combiner", t.env.combiner)
}

#[mpi_fn]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    dt: MPI_Datatype,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_large_counts: *mut MPI_Count,
    array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    let t = datatype::lookup(dt)?;
    if t.env.combiner == MPI_COMBINER_NAMED {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x} is predefined (MPI_COMBINER_NAMED has no contents)",
            dt as u32
        ));
    }
    let (i, a, c) = large_layout(&t.env);
    if max_integers < i.len() as MPI_Count
        || max_addresses < a.len() as MPI_Count
        || max_large_counts < c.len() as MPI_Count
        || max_datatypes < t.env.types.len() as MPI_Count
    {
        return Err(err!(
            MPI_ERR_ARG,
            "max_integers/max_addresses/max_large_counts/max_datatypes are smaller than MPI_Type_get_envelope_c's counts"
        ));
    }
    out_slice(array_of_integers, i.len(), "array_of_integers")?.copy_from_slice(&i);
    out_slice(array_of_addresses, a.len(), "array_of_addresses")?.copy_from_slice(&a);
    out_slice(array_of_large_counts, c.len(), "array_of_large_counts")?.copy_from_slice(&c);
    let n = t.env.types.len();
    let td = datatype::component_handles(&t.env)?;
    out_slice(array_of_datatypes, n, "array_of_datatypes")?.copy_from_slice(&td);
    Ok(())
}

/// `n` large counts or displacements at `p`.
fn wide<'a>(p: *const MPI_Count, n: MPI_Count, name: &str) -> Result<&'a [MPI_Count]> {
    let n =
        usize::try_from(n).map_err(|_| err!(MPI_ERR_COUNT, "count={n} must be non-negative"))?;
    in_slice(p, n, name)
}

/// `n` large displacements in bytes at `p`, as addresses.
fn addrs(p: *const MPI_Count, n: MPI_Count, name: &str) -> Result<Vec<isize>> {
    Ok(wide(p, n, name)?.iter().map(|&x| x as isize).collect())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous_c(
    count: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    datatype::install(datatype::make_contiguous(count, oldtype)?, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    stride: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let t = datatype::make_vector(count, blocklength, stride, oldtype)?;
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    stride: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let t = datatype::make_hvector(count, blocklength, stride as isize, oldtype)?;
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed_c(
    count: MPI_Count,
    array_of_blocklengths: *const MPI_Count,
    array_of_displacements: *const MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let bl = wide(array_of_blocklengths, count, "array_of_blocklengths")?;
    let ds = wide(array_of_displacements, count, "array_of_displacements")?;
    datatype::install(datatype::make_indexed(bl, ds, oldtype)?, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_c(
    count: MPI_Count,
    array_of_blocklengths: *const MPI_Count,
    array_of_displacements: *const MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let bl = wide(array_of_blocklengths, count, "array_of_blocklengths")?;
    let ds = addrs(array_of_displacements, count, "array_of_displacements")?;
    datatype::install(datatype::make_hindexed(bl, &ds, oldtype)?, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    array_of_displacements: *const MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let ds = wide(array_of_displacements, count, "array_of_displacements")?;
    let t = datatype::make_indexed_block(blocklength, ds, oldtype)?;
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    array_of_displacements: *const MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let ds = addrs(array_of_displacements, count, "array_of_displacements")?;
    let t = datatype::make_hindexed_block(blocklength, &ds, oldtype)?;
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct_c(
    count: MPI_Count,
    array_of_blocklengths: *const MPI_Count,
    array_of_displacements: *const MPI_Count,
    array_of_types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let bl = wide(array_of_blocklengths, count, "array_of_blocklengths")?;
    let ds = addrs(array_of_displacements, count, "array_of_displacements")?;
    let ts = in_slice(array_of_types, bl.len(), "array_of_types")?;
    datatype::install(datatype::make_struct(bl, &ds, ts)?, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized_c(
    oldtype: MPI_Datatype,
    lb: MPI_Count,
    extent: MPI_Count,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let old = datatype::lookup(oldtype)?;
    let t = crate::datatype::resized(oldtype, &old, lb as isize, extent as isize);
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray_c(
    ndims: c_int,
    array_of_sizes: *const MPI_Count,
    array_of_subsizes: *const MPI_Count,
    array_of_starts: *const MPI_Count,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    if ndims <= 0 {
        return Err(err!(MPI_ERR_DIMS, "ndims={ndims} must be positive"));
    }
    let n = ndims as MPI_Count;
    let (sz, sub, st) = (
        wide(array_of_sizes, n, "array_of_sizes")?,
        wide(array_of_subsizes, n, "array_of_subsizes")?,
        wide(array_of_starts, n, "array_of_starts")?,
    );
    let t = datatype::make_subarray(sz, sub, st, order, oldtype)?;
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const MPI_Count,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    if ndims <= 0 {
        return Err(err!(
            MPI_ERR_ARG,
            "darray: size={size} rank={rank} ndims={ndims} are not consistent"
        ));
    }
    let n = ndims as usize;
    let g = wide(array_of_gsizes, n as MPI_Count, "array_of_gsizes")?;
    let dis = in_slice(array_of_distribs, n, "array_of_distribs")?;
    let da = in_slice(array_of_dargs, n, "array_of_dargs")?;
    let ps = in_slice(array_of_psizes, n, "array_of_psizes")?;
    let t = datatype::make_darray(size, rank, g, dis, da, ps, order, oldtype)?;
    datatype::install(t, true, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size_c(
    incount: MPI_Count,
    dt: MPI_Datatype,
    comm: MPI_Comm,
    size: *mut MPI_Count,
) -> c_int {
    let n = datatype::pack_size(incount, dt, comm)?;
    out(size, "size", n as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_c(
    inbuf: *const c_void,
    incount: MPI_Count,
    dt: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
    comm: MPI_Comm,
) -> c_int {
    let p = inp(position, "position")?;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe { datatype::pack_into(inbuf, incount, dt, outbuf, outsize, p, comm)? };
    out(position, "position", end)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_c(
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    dt: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let p = inp(position, "position")?;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe { datatype::unpack_from(inbuf, insize, p, outbuf, outcount, dt, comm)? };
    out(position, "position", end)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size_c(
    datarep: *const c_char,
    incount: MPI_Count,
    dt: MPI_Datatype,
    size: *mut MPI_Count,
) -> c_int {
    let n = datatype::external_size(datarep, incount, dt)?;
    out(size, "size", n as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: MPI_Count,
    dt: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
) -> c_int {
    let p = inp(position, "position")?;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe { datatype::pack_external(datarep, inbuf, incount, dt, outbuf, outsize, p)? };
    out(position, "position", end)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    dt: MPI_Datatype,
) -> c_int {
    let p = inp(position, "position")?;
    // SAFETY: the caller's buffers (MPI's contract).
    let end =
        unsafe { datatype::unpack_external(datarep, inbuf, insize, p, outbuf, outcount, dt)? };
    out(position, "position", end)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach_c(buffer: *mut c_void, size: MPI_Count) -> c_int {
    p2p::buffer_attach(buffer, size)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach_c(
    buffer_addr: *mut c_void,
    size: *mut MPI_Count,
) -> c_int {
    let (_, n) = p2p::buffer_detach(buffer_addr, !size.is_null())?;
    out(size, "size", n as MPI_Count)
}
