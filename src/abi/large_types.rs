//! The MPI-4 large-count forms of the datatype constructors, the envelope
//! and contents queries, pack/unpack and the Bsend buffer. Constructors
//! convert their `MPI_Count` arguments and run the int forms' bodies
//! (`__oxmpi_body_MPI_Xxx`), so counts above 2147483647 are refused by
//! name until the internal count type widens; the type they make is marked
//! large (`Envelope::large`), and `MPI_Type_get_envelope_c` /
//! `MPI_Type_get_contents_c` give its counts and displacements in the
//! large-count array, in the standard's layout (MPI-4.1 table 5.1).

use super::coll::{convert, int_count, Ints};
use super::consts::*;
use super::handles::{self, KIND_DATATYPE};
use super::ptr::{in_slice, inp, out, out_slice};
use super::{datatype, p2p, MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::datatype::Envelope;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int, c_void};

/// A count, displacement or stride that may be negative, as an int.
fn int_value(v: MPI_Count, name: &str) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| {
        err!(
            MPI_ERR_COUNT,
            "{name}={v}: values beyond {}..{} are not supported",
            c_int::MIN,
            c_int::MAX
        )
    })
}

/// `n` large counts at `p` as ints (`signed`: displacements may be
/// negative); NULL stays NULL for the int path to report.
fn ints(p: *const MPI_Count, n: usize, name: &str, signed: bool) -> Result<Ints> {
    let conv: fn(MPI_Count, &str) -> Result<c_int> = if signed { int_value } else { int_count };
    convert(p, n, name, conv)
}

/// `n` large counts at `p` as addresses (the same width).
fn aints(p: *const MPI_Count, n: usize, name: &str) -> Result<Vec<MPI_Aint>> {
    Ok(in_slice(p, n, name)?
        .iter()
        .map(|&x| x as MPI_Aint)
        .collect())
}

/// Marks the type just made at `*newtype` as built by a large-count constructor.
fn mark_large(newtype: *mut MPI_Datatype) -> Result<()> {
    // Written by the int form's body just before.
    let h = inp(newtype, "newtype")?;
    let i = handles::index(h, KIND_DATATYPE)
        .and_then(|i| i.checked_sub(5))
        .ok_or_else(|| {
            err!(
                MPI_ERR_INTERN,
                "new datatype 0x{:08x} has no slot",
                h as u32
            )
        })?;
    with(|st| {
        if let Some(t) = st.types.get_mut(i) {
            std::sync::Arc::make_mut(t).env.large = true;
        }
        Ok(())
    })
}

/// The envelope as the `_c` queries give it: (integers, addresses, large
/// counts). A type from an int constructor keeps its int layout; one from a
/// large-count constructor has every count and displacement among the large
/// counts, but for the subarray's and darray's other integers.
fn large_layout(e: &Envelope) -> (Vec<c_int>, Vec<MPI_Aint>, Vec<MPI_Count>) {
    if !e.large {
        return (
            e.ints.clone(),
            e.aints.iter().map(|&a| a as MPI_Aint).collect(),
            Vec::new(),
        );
    }
    let all = |v: &[c_int]| v.iter().map(|&x| x as MPI_Count).collect::<Vec<_>>();
    match e.combiner {
        // ints: ndims, sizes, subsizes, starts, order
        MPI_COMBINER_SUBARRAY => {
            let nd = e.ints[0] as usize;
            (
                vec![e.ints[0], e.ints[1 + 3 * nd]],
                Vec::new(),
                all(&e.ints[1..1 + 3 * nd]),
            )
        }
        // ints: size, rank, ndims, gsizes, distribs, dargs, psizes, order
        MPI_COMBINER_DARRAY => {
            let nd = e.ints[2] as usize;
            let mut i = e.ints[..3].to_vec();
            i.extend_from_slice(&e.ints[3 + nd..]);
            (i, Vec::new(), all(&e.ints[3..3 + nd]))
        }
        _ => {
            let mut c = all(&e.ints);
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
    // The component types as the int form gives them (new handles for derived ones).
    let n = t.env.types.len();
    let mut ti = vec![0; t.env.ints.len()];
    let mut ta = vec![0; t.env.aints.len()];
    let mut td = vec![0; n];
    datatype::__oxmpi_body_MPI_Type_get_contents(
        dt,
        ti.len() as c_int,
        ta.len() as c_int,
        n as c_int,
        ti.as_mut_ptr(),
        ta.as_mut_ptr(),
        td.as_mut_ptr(),
    )?;
    out_slice(array_of_datatypes, n, "array_of_datatypes")?.copy_from_slice(&td);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous_c(
    count: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let count = int_count(count, "count")?;
    datatype::__oxmpi_body_MPI_Type_contiguous(count, oldtype, newtype)?;
    mark_large(newtype)
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
    let (count, bl) = (
        int_count(count, "count")?,
        int_count(blocklength, "blocklength")?,
    );
    let stride = int_value(stride, "stride")?;
    datatype::__oxmpi_body_MPI_Type_vector(count, bl, stride, oldtype, newtype)?;
    mark_large(newtype)
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
    let (count, bl) = (
        int_count(count, "count")?,
        int_count(blocklength, "blocklength")?,
    );
    datatype::__oxmpi_body_MPI_Type_create_hvector(
        count,
        bl,
        stride as MPI_Aint,
        oldtype,
        newtype,
    )?;
    mark_large(newtype)
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
    let count = int_count(count, "count")?;
    let n = count as usize;
    let bl = ints(array_of_blocklengths, n, "array_of_blocklengths", false)?;
    let ds = ints(array_of_displacements, n, "array_of_displacements", true)?;
    datatype::__oxmpi_body_MPI_Type_indexed(count, bl.ptr(), ds.ptr(), oldtype, newtype)?;
    mark_large(newtype)
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
    let count = int_count(count, "count")?;
    let n = count as usize;
    let bl = ints(array_of_blocklengths, n, "array_of_blocklengths", false)?;
    let ds = aints(array_of_displacements, n, "array_of_displacements")?;
    datatype::__oxmpi_body_MPI_Type_create_hindexed(
        count,
        bl.ptr(),
        ds.as_ptr(),
        oldtype,
        newtype,
    )?;
    mark_large(newtype)
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
    let (count, bl) = (
        int_count(count, "count")?,
        int_count(blocklength, "blocklength")?,
    );
    let ds = ints(
        array_of_displacements,
        count as usize,
        "array_of_displacements",
        true,
    )?;
    datatype::__oxmpi_body_MPI_Type_create_indexed_block(count, bl, ds.ptr(), oldtype, newtype)?;
    mark_large(newtype)
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
    let (count, bl) = (
        int_count(count, "count")?,
        int_count(blocklength, "blocklength")?,
    );
    let ds = aints(
        array_of_displacements,
        count as usize,
        "array_of_displacements",
    )?;
    datatype::__oxmpi_body_MPI_Type_create_hindexed_block(
        count,
        bl,
        ds.as_ptr(),
        oldtype,
        newtype,
    )?;
    mark_large(newtype)
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
    let count = int_count(count, "count")?;
    let n = count as usize;
    let bl = ints(array_of_blocklengths, n, "array_of_blocklengths", false)?;
    let ds = aints(array_of_displacements, n, "array_of_displacements")?;
    datatype::__oxmpi_body_MPI_Type_create_struct(
        count,
        bl.ptr(),
        ds.as_ptr(),
        array_of_types,
        newtype,
    )?;
    mark_large(newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized_c(
    oldtype: MPI_Datatype,
    lb: MPI_Count,
    extent: MPI_Count,
    newtype: *mut MPI_Datatype,
) -> c_int {
    datatype::__oxmpi_body_MPI_Type_create_resized(
        oldtype,
        lb as MPI_Aint,
        extent as MPI_Aint,
        newtype,
    )?;
    mark_large(newtype)
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
    let n = ndims.max(0) as usize;
    let sz = ints(array_of_sizes, n, "array_of_sizes", false)?;
    let sub = ints(array_of_subsizes, n, "array_of_subsizes", false)?;
    let st = ints(array_of_starts, n, "array_of_starts", false)?;
    datatype::__oxmpi_body_MPI_Type_create_subarray(
        ndims,
        sz.ptr(),
        sub.ptr(),
        st.ptr(),
        order,
        oldtype,
        newtype,
    )?;
    mark_large(newtype)
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
    let g = ints(
        array_of_gsizes,
        ndims.max(0) as usize,
        "array_of_gsizes",
        false,
    )?;
    datatype::__oxmpi_body_MPI_Type_create_darray(
        size,
        rank,
        ndims,
        g.ptr(),
        array_of_distribs,
        array_of_dargs,
        array_of_psizes,
        order,
        oldtype,
        newtype,
    )?;
    mark_large(newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size_c(
    incount: MPI_Count,
    dt: MPI_Datatype,
    comm: MPI_Comm,
    size: *mut MPI_Count,
) -> c_int {
    let incount = int_count(incount, "incount")?;
    let mut s: c_int = 0;
    datatype::__oxmpi_body_MPI_Pack_size(incount, dt, comm, &mut s)?;
    out(size, "size", s as MPI_Count)
}

/// A large-count position, read for an int path.
fn position_in(position: *mut MPI_Count) -> Result<c_int> {
    int_count(inp(position, "position")?, "position")
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
    let incount = int_count(incount, "incount")?;
    let outsize = int_count(outsize, "outsize")?;
    let mut p = position_in(position)?;
    datatype::__oxmpi_body_MPI_Pack(inbuf, incount, dt, outbuf, outsize, &mut p, comm)?;
    out(position, "position", p as MPI_Count)
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
    let insize = int_count(insize, "insize")?;
    let outcount = int_count(outcount, "outcount")?;
    let mut p = position_in(position)?;
    datatype::__oxmpi_body_MPI_Unpack(inbuf, insize, &mut p, outbuf, outcount, dt, comm)?;
    out(position, "position", p as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size_c(
    datarep: *const c_char,
    incount: MPI_Count,
    dt: MPI_Datatype,
    size: *mut MPI_Count,
) -> c_int {
    let incount = int_count(incount, "incount")?;
    let mut s: MPI_Aint = 0;
    datatype::__oxmpi_body_MPI_Pack_external_size(datarep, incount, dt, &mut s)?;
    out(size, "size", s as MPI_Count)
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
    let incount = int_count(incount, "incount")?;
    let mut p = inp(position, "position")? as MPI_Aint;
    datatype::__oxmpi_body_MPI_Pack_external(
        datarep,
        inbuf,
        incount,
        dt,
        outbuf,
        outsize as MPI_Aint,
        &mut p,
    )?;
    out(position, "position", p as MPI_Count)
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
    let outcount = int_count(outcount, "outcount")?;
    let mut p = inp(position, "position")? as MPI_Aint;
    datatype::__oxmpi_body_MPI_Unpack_external(
        datarep,
        inbuf,
        insize as MPI_Aint,
        &mut p,
        outbuf,
        outcount,
        dt,
    )?;
    out(position, "position", p as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach_c(buffer: *mut c_void, size: MPI_Count) -> c_int {
    let size = int_count(size, "size")?;
    p2p::__oxmpi_body_MPI_Buffer_attach(buffer, size)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach_c(
    buffer_addr: *mut c_void,
    size: *mut MPI_Count,
) -> c_int {
    if size.is_null() {
        return Err(err!(MPI_ERR_ARG, "size=NULL"));
    }
    let mut s: c_int = 0;
    p2p::__oxmpi_body_MPI_Buffer_detach(buffer_addr, &mut s)?;
    out(size, "size", s as MPI_Count)
}
