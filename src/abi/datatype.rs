//! Datatype entry points: constructors, commit/free, queries, envelope and
//! contents, addresses, pack/unpack (native and external32), and the
//! descriptors the communication calls use.

use super::consts::*;
use super::handles::{self, KIND_DATATYPE};
use super::ptr::{bytes_at, cstr, in_slice, inp, out, out_slice, write_cstr};
use super::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::datatype::{self as dtm, external32, Envelope, Type, TypeRef};
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

/// User datatype handles start after MPICH's five pair types (0x8c000000..4).
const FIRST_USER: u32 = 5;

pub fn is_predefined(dt: MPI_Datatype) -> bool {
    handles::builtin_size(dt).is_some()
        || handles::index(dt, KIND_DATATYPE).is_some_and(|i| i < FIRST_USER)
}

/// The type behind a handle (predefined ones are built on the fly).
pub fn lookup(dt: MPI_Datatype) -> Result<Arc<Type>> {
    if is_predefined(dt) {
        return Ok(Arc::new(Type::builtin(dt)?));
    }
    let i = handles::index(dt, KIND_DATATYPE).filter(|&i| i >= FIRST_USER);
    i.and_then(|i| {
        with(|st| Ok(st.types.get(i - FIRST_USER).cloned()))
            .ok()
            .flatten()
    })
    .ok_or_else(|| {
        if dt == MPI_DATATYPE_NULL {
            err!(MPI_ERR_TYPE, "datatype=MPI_DATATYPE_NULL")
        } else {
            err!(
                MPI_ERR_TYPE,
                "datatype=0x{:08x} is not a valid datatype{}",
                dt as u32,
                handles::kind_hint(dt, KIND_DATATYPE)
            )
        }
    })
}

fn add(t: Type) -> Result<MPI_Datatype> {
    with(|st| {
        Ok(handles::make(
            KIND_DATATYPE,
            st.types.insert(Arc::new(t)) + FIRST_USER,
        ))
    })
}

/// Whether a derived type may be used with MPI_BOTTOM (a NULL buffer): its
/// data lies at displacements that can be absolute addresses (MPI_Get_address
/// values), that is, past the first page, which is never mapped.
pub fn from_bottom(t: &Type) -> bool {
    t.true_lb >= 4096
}

/// How a (buffer, count, datatype) triple is moved.
pub struct Desc {
    /// Start of the data when it is one contiguous range.
    pub ptr: *mut u8,
    /// Bytes of the message.
    pub bytes: usize,
    /// The type, when the data must be packed or unpacked.
    pub staged: Option<Arc<Type>>,
    /// What memory the buffer is (`gpu::classify`, asked once here).
    pub kind: crate::gpu::MemKind,
}

/// Validates and describes a communication buffer, asking once what
/// memory it is (`gpu::classify`).
#[inline(always)]
pub fn describe(buf: *const c_void, count: c_int, dt: MPI_Datatype, name: &str) -> Result<Desc> {
    // The common case first: a builtin type whose size sits in its handle, a
    // real buffer and a valid count. Anything else takes the checks below.
    if let Some(sz) = handles::builtin_size(dt) {
        if count >= 0 && !buf.is_null() && buf as isize != -1 {
            // Checked where it is classified, so that a backend that knows
            // the answer at compile time (the null one) costs nothing here:
            // a check after the general path's call measured 10 ns per call
            // on 8 B collectives.
            if crate::gpu::classify(buf as *const u8, 0) == crate::gpu::MemKind::Host {
                return Ok(Desc {
                    ptr: buf as *mut u8,
                    // At most i32::MAX * 255: no overflow.
                    bytes: count as usize * sz,
                    kind: crate::gpu::MemKind::Host,
                    staged: None,
                });
            }
        }
    }
    describe_general(buf, count, dt, name)
}

/// `describe` of everything but the common case, kept out of line so that
/// the common case stays small where it is inlined. A device buffer is
/// always staged, whatever its type: the layers below move host bytes, and
/// the staging area is packed from it and unpacked into it with the
/// driver's copies (`datatype::pack_mem`, `unpack_mem`).
#[inline(never)]
fn describe_general(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<Desc> {
    let mut d = describe_checked(buf, count, dt, name)?;
    if d.kind == crate::gpu::MemKind::Device && d.staged.is_none() {
        d.staged = Some(lookup(dt)?);
        d.ptr = buf as *mut u8;
    }
    Ok(d)
}

#[inline(never)]
fn describe_checked(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    name: &str,
) -> Result<Desc> {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
    }
    if buf as isize == -1 {
        return Err(err!(
            MPI_ERR_BUFFER,
            "{name}=MPI_IN_PLACE is not allowed here"
        ));
    }
    // No data, no type needed (MPICH accepts MPI_DATATYPE_NULL here too).
    if count == 0 && dt == MPI_DATATYPE_NULL {
        return Ok(Desc {
            ptr: buf as *mut u8,
            bytes: 0,
            kind: crate::gpu::MemKind::Host,
            staged: None,
        });
    }
    if is_predefined(dt) && handles::pair_parts(dt).is_none() {
        let sz = handles::type_size(dt)?;
        if buf.is_null() && count > 0 && sz > 0 {
            return Err(err!(MPI_ERR_BUFFER, "{name}=NULL with count={count}"));
        }
        let bytes = (count as usize)
            .checked_mul(sz)
            .ok_or_else(|| err!(MPI_ERR_COUNT, "count={count} overflows"))?;
        return Ok(Desc {
            ptr: buf as *mut u8,
            bytes,
            kind: crate::gpu::classify(buf as *const u8, 0),
            staged: None,
        });
    }
    let t = lookup(dt)?;
    if !t.committed {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x} is not committed (call MPI_Type_commit)",
            dt as u32
        ));
    }
    let bytes = count as usize * t.size;
    if bytes > 0 && buf.is_null() && !from_bottom(&t) {
        return Err(err!(MPI_ERR_BUFFER, "{name}=NULL with count={count}"));
    }
    // Classified where the data starts: with a true lower bound the
    // buffer's address may lie outside the allocation its data is in (or be
    // MPI_BOTTOM, with absolute displacements).
    let kind = crate::gpu::classify((buf as *const u8).wrapping_offset(t.true_lb), 0);
    if t.is_contiguous(count as usize) {
        let start = t.start();
        return Ok(Desc {
            ptr: (buf as *mut u8).wrapping_offset(start),
            bytes,
            kind,
            staged: None,
        });
    }
    Ok(Desc {
        ptr: buf as *mut u8,
        bytes,
        kind,
        staged: Some(t),
    })
}

/// Size in bytes and the type (for element counts) of a datatype; None for
/// a predefined type whose data is its extent (the pair types have padding).
pub fn size_and_type(dt: MPI_Datatype) -> Result<(usize, Option<Arc<Type>>)> {
    if is_predefined(dt) && handles::pair_parts(dt).is_none() {
        return Ok((handles::type_size(dt)?, None));
    }
    let t = lookup(dt)?;
    Ok((t.size, Some(t)))
}

fn arr<'a, T>(p: *const T, n: usize, name: &str) -> Result<&'a [T]> {
    in_slice(p, n, name)
}

fn nonneg(v: c_int, name: &str) -> Result<usize> {
    if v < 0 {
        return Err(err!(MPI_ERR_COUNT, "{name}={v} must be non-negative"));
    }
    Ok(v as usize)
}

// ------------------------------------------------------------------ constructors
//
// Each constructor's work is done once, on 64-bit values (`make_*`): the
// int forms widen their arguments, the large-count forms (`large_types`)
// pass theirs as they are, so a count above 2147483647 builds the same
// type an int count would (the engine counts in usize and keeps large
// repetitions as one repeated unit, not written out).

/// A count argument of a constructor, checked non-negative.
fn count_arg(v: i64, name: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| err!(MPI_ERR_COUNT, "{name}={v} must be non-negative"))
}

/// Counts of an array argument, each checked non-negative.
fn count_args(v: &[i64], name: &str) -> Result<Vec<usize>> {
    v.iter()
        .enumerate()
        .map(|(i, &b)| count_arg(b, &format!("{name}[{i}]")))
        .collect()
}

/// A displacement or stride in extents of `old`, as bytes.
fn in_bytes(v: i64, old: &Type, name: &str) -> Result<isize> {
    isize::try_from(v)
        .ok()
        .and_then(|v| v.checked_mul(old.extent()))
        .ok_or_else(|| {
            err!(
                MPI_ERR_ARG,
                "{name}={v} times the old type's extent {} does not fit an address",
                old.extent()
            )
        })
}

fn widen(v: &[c_int]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

/// Stores a constructed type and writes its handle; `large` marks one made
/// by a large-count constructor (its `_c` envelope lists large counts).
pub(crate) fn install(mut t: Type, large: bool, newtype: *mut MPI_Datatype) -> Result<()> {
    t.env.large = large;
    out(newtype, "newtype", add(t)?)
}

pub(crate) fn make_contiguous(count: i64, oldtype: MPI_Datatype) -> Result<Type> {
    let n = count_arg(count, "count")?;
    let old = lookup(oldtype)?;
    Ok(dtm::contiguous(n, oldtype, &old))
}

pub(crate) fn make_vector(count: i64, bl: i64, stride: i64, oldtype: MPI_Datatype) -> Result<Type> {
    let (n, b) = (count_arg(count, "count")?, count_arg(bl, "blocklength")?);
    let old = lookup(oldtype)?;
    let bytes = in_bytes(stride, &old, "stride")?;
    Ok(dtm::hvector(n, b, bytes, oldtype, &old, Some(stride)))
}

pub(crate) fn make_hvector(
    count: i64,
    bl: i64,
    stride: isize,
    oldtype: MPI_Datatype,
) -> Result<Type> {
    let (n, b) = (count_arg(count, "count")?, count_arg(bl, "blocklength")?);
    let old = lookup(oldtype)?;
    Ok(dtm::hvector(n, b, stride, oldtype, &old, None))
}

pub(crate) fn make_indexed(bl: &[i64], ds: &[i64], oldtype: MPI_Datatype) -> Result<Type> {
    let bls = count_args(bl, "array_of_blocklengths")?;
    let old = lookup(oldtype)?;
    let bytes = ds
        .iter()
        .enumerate()
        .map(|(i, &d)| in_bytes(d, &old, &format!("array_of_displacements[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let mut ints = vec![bl.len() as i64];
    ints.extend_from_slice(bl);
    ints.extend_from_slice(ds);
    let e = Envelope {
        combiner: MPI_COMBINER_INDEXED,
        ints,
        ..Default::default()
    };
    Ok(dtm::hindexed(&bls, &bytes, oldtype, &old, e))
}

pub(crate) fn make_hindexed(bl: &[i64], ds: &[isize], oldtype: MPI_Datatype) -> Result<Type> {
    let bls = count_args(bl, "array_of_blocklengths")?;
    let old = lookup(oldtype)?;
    let mut ints = vec![bl.len() as i64];
    ints.extend_from_slice(bl);
    let e = Envelope {
        combiner: MPI_COMBINER_HINDEXED,
        ints,
        aints: ds.to_vec(),
        ..Default::default()
    };
    Ok(dtm::hindexed(&bls, ds, oldtype, &old, e))
}

pub(crate) fn make_indexed_block(bl: i64, ds: &[i64], oldtype: MPI_Datatype) -> Result<Type> {
    let b = count_arg(bl, "blocklength")?;
    let old = lookup(oldtype)?;
    let bytes = ds
        .iter()
        .enumerate()
        .map(|(i, &d)| in_bytes(d, &old, &format!("array_of_displacements[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let mut ints = vec![ds.len() as i64, bl];
    ints.extend_from_slice(ds);
    let e = Envelope {
        combiner: MPI_COMBINER_INDEXED_BLOCK,
        ints,
        ..Default::default()
    };
    Ok(dtm::hindexed(&vec![b; ds.len()], &bytes, oldtype, &old, e))
}

pub(crate) fn make_hindexed_block(bl: i64, ds: &[isize], oldtype: MPI_Datatype) -> Result<Type> {
    let b = count_arg(bl, "blocklength")?;
    let old = lookup(oldtype)?;
    let e = Envelope {
        combiner: MPI_COMBINER_HINDEXED_BLOCK,
        ints: vec![ds.len() as i64, bl],
        aints: ds.to_vec(),
        ..Default::default()
    };
    Ok(dtm::hindexed(&vec![b; ds.len()], ds, oldtype, &old, e))
}

pub(crate) fn make_struct(bl: &[i64], ds: &[isize], ts: &[MPI_Datatype]) -> Result<Type> {
    let bls = count_args(bl, "array_of_blocklengths")?;
    let types: Vec<(c_int, Arc<Type>)> = ts
        .iter()
        .map(|&h| lookup(h).map(|t| (h, t)))
        .collect::<Result<_>>()?;
    Ok(dtm::structure(&bls, ds, &types))
}

pub(crate) fn make_subarray(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    order: c_int,
    oldtype: MPI_Datatype,
) -> Result<Type> {
    if sizes.is_empty() {
        return Err(err!(MPI_ERR_DIMS, "ndims=0 must be positive"));
    }
    if order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN {
        return Err(err!(
            MPI_ERR_ARG,
            "order={order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"
        ));
    }
    let (sz, sub, st) = (
        count_args(sizes, "array_of_sizes")?,
        count_args(subsizes, "array_of_subsizes")?,
        count_args(starts, "array_of_starts")?,
    );
    let old = lookup(oldtype)?;
    dtm::subarray(&sz, &sub, &st, order, oldtype, &old)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn make_darray(
    size: c_int,
    rank: c_int,
    gsizes: &[i64],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[c_int],
    order: c_int,
    oldtype: MPI_Datatype,
) -> Result<Type> {
    let ndims = gsizes.len();
    if ndims == 0 || size <= 0 || rank < 0 || rank >= size {
        return Err(err!(
            MPI_ERR_ARG,
            "darray: size={size} rank={rank} ndims={ndims} are not consistent"
        ));
    }
    if order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN {
        return Err(err!(
            MPI_ERR_ARG,
            "order={order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"
        ));
    }
    let g = count_args(gsizes, "array_of_gsizes")?;
    let ps = count_args(&widen(psizes), "array_of_psizes")?;
    let old = lookup(oldtype)?;
    dtm::darray(
        size as usize,
        rank as usize,
        &g,
        distribs,
        dargs,
        &ps,
        order,
        oldtype,
        &old,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(
    count: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    install(make_contiguous(count as i64, oldtype)?, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector(
    count: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let t = make_vector(count as i64, blocklength as i64, stride as i64, oldtype)?;
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    count: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let t = make_hvector(count as i64, blocklength as i64, stride as isize, oldtype)?;
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = nonneg(count, "count")?;
    let bl = arr(array_of_blocklengths, n, "array_of_blocklengths")?;
    let ds = arr(array_of_displacements, n, "array_of_displacements")?;
    install(
        make_indexed(&widen(bl), &widen(ds), oldtype)?,
        false,
        newtype,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = nonneg(count, "count")?;
    let bl = arr(array_of_blocklengths, n, "array_of_blocklengths")?;
    let ds = arr(array_of_displacements, n, "array_of_displacements")?;
    let ds: Vec<isize> = ds.iter().map(|&x| x as isize).collect();
    install(make_hindexed(&widen(bl), &ds, oldtype)?, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: *const c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = nonneg(count, "count")?;
    let ds = arr(array_of_displacements, n, "array_of_displacements")?;
    let t = make_indexed_block(blocklength as i64, &widen(ds), oldtype)?;
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = nonneg(count, "count")?;
    let ds = arr(array_of_displacements, n, "array_of_displacements")?;
    let ds: Vec<isize> = ds.iter().map(|&x| x as isize).collect();
    let t = make_hindexed_block(blocklength as i64, &ds, oldtype)?;
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const MPI_Aint,
    array_of_types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = nonneg(count, "count")?;
    let bl = arr(array_of_blocklengths, n, "array_of_blocklengths")?;
    let ds = arr(array_of_displacements, n, "array_of_displacements")?;
    let ts = arr(array_of_types, n, "array_of_types")?;
    let ds: Vec<isize> = ds.iter().map(|&x| x as isize).collect();
    install(make_struct(&widen(bl), &ds, ts)?, false, newtype)
}

/// MPI-1's MPI_Type_struct (removed in MPI-3, still exported by MPICH): as
/// MPI_Type_create_struct, and the MPI-1 bound markers `MPI_LB` and
/// `MPI_UB` may be among the types: the lowest `MPI_LB` displacement is
/// the lower bound, the highest `MPI_UB` one the upper bound (no alignment
/// padding then), in place of the data's.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_struct(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    array_of_types: *mut MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let n = nonneg(count, "count")?;
    let bl = arr(
        array_of_blocklengths as *const c_int,
        n,
        "array_of_blocklengths",
    )?;
    let ds = arr(
        array_of_displacements as *const MPI_Aint,
        n,
        "array_of_displacements",
    )?;
    let ts = arr(array_of_types as *const MPI_Datatype, n, "array_of_types")?;
    let (mut lbm, mut ubm): (Option<isize>, Option<isize>) = (None, None);
    let (mut bls, mut d, mut types) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let b = nonneg(bl[i], "blocklength")?;
        match ts[i] {
            MPI_LB => lbm = Some(lbm.map_or(ds[i] as isize, |m| m.min(ds[i] as isize))),
            MPI_UB => ubm = Some(ubm.map_or(ds[i] as isize, |m| m.max(ds[i] as isize))),
            h => {
                bls.push(b);
                d.push(ds[i] as isize);
                types.push((h, lookup(h)?));
            }
        }
    }
    let mut t = dtm::structure(&bls, &d, &types);
    if lbm.is_some() || ubm.is_some() {
        let data = (!bls.iter().all(|&b| b == 0)).then_some((t.true_lb, t.true_ub));
        let lb = lbm.unwrap_or(if data.is_some() { t.lb } else { ubm.unwrap() });
        let ub = ubm.unwrap_or(if data.is_some() { t.ub } else { lb });
        if ub < lb {
            return Err(err!(
                MPI_ERR_ARG,
                "MPI_UB displacement {ub} is below the lower bound {lb}"
            ));
        }
        t.lb = lb;
        t.ub = ub;
    }
    out(newtype, "newtype", add(t)?)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(
    oldtype: MPI_Datatype,
    lb: MPI_Aint,
    extent: MPI_Aint,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let old = lookup(oldtype)?;
    let t = dtm::resized(oldtype, &old, lb as isize, extent as isize);
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    array_of_sizes: *const c_int,
    array_of_subsizes: *const c_int,
    array_of_starts: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    if ndims <= 0 {
        return Err(err!(MPI_ERR_DIMS, "ndims={ndims} must be positive"));
    }
    let n = ndims as usize;
    let (sz, sub, st) = (
        arr(array_of_sizes, n, "array_of_sizes")?,
        arr(array_of_subsizes, n, "array_of_subsizes")?,
        arr(array_of_starts, n, "array_of_starts")?,
    );
    let t = make_subarray(&widen(sz), &widen(sub), &widen(st), order, oldtype)?;
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const c_int,
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
    let g = arr(array_of_gsizes, n, "array_of_gsizes")?;
    let ps = arr(array_of_psizes, n, "array_of_psizes")?;
    let dis = arr(array_of_distribs, n, "array_of_distribs")?;
    let da = arr(array_of_dargs, n, "array_of_dargs")?;
    let t = make_darray(size, rank, &widen(g), dis, da, ps, order, oldtype)?;
    install(t, false, newtype)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    let old = lookup(oldtype)?;
    let mut t = dtm::dup(oldtype, &old);
    t.committed = old.committed || is_predefined(oldtype);
    t.attrs = super::attr::copy_attrs(oldtype, &old.attrs)?;
    out(newtype, "newtype", add(t)?)
}

fn user_index(dt: MPI_Datatype, what: &str) -> Result<u32> {
    if is_predefined(dt) {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x} is predefined; {what} needs a derived datatype",
            dt as u32
        ));
    }
    lookup(dt)?;
    Ok(handles::index(dt, KIND_DATATYPE).unwrap() - FIRST_USER)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    let h = inp(datatype, "datatype")?;
    if is_predefined(h) {
        return Ok(());
    }
    let i = user_index(h, "MPI_Type_commit")?;
    with(|st| {
        let t = st.types.get_mut(i).unwrap();
        Arc::make_mut(t).committed = true;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    let h = inp(datatype, "datatype")?;
    let i = user_index(h, "MPI_Type_free")?;
    let attrs = lookup(h)?.attrs.clone();
    super::attr::delete_attrs(h, &attrs)?;
    with(|st| {
        // Communication in flight keeps its own reference to the type.
        st.types.remove(i);
        Ok(())
    })?;
    out(datatype, "datatype", MPI_DATATYPE_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    let t = lookup(datatype)?;
    out(
        size,
        "size",
        if t.size > i32::MAX as usize {
            MPI_UNDEFINED
        } else {
            t.size as c_int
        },
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    let t = lookup(datatype)?;
    out(size, "size", t.size as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent(
    datatype: MPI_Datatype,
    lb: *mut MPI_Aint,
    extent: *mut MPI_Aint,
) -> c_int {
    let t = lookup(datatype)?;
    out(lb, "lb", t.lb as MPI_Aint)?;
    out(extent, "extent", t.extent() as MPI_Aint)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_x(
    datatype: MPI_Datatype,
    lb: *mut MPI_Count,
    extent: *mut MPI_Count,
) -> c_int {
    let t = lookup(datatype)?;
    out(lb, "lb", t.lb as MPI_Count)?;
    out(extent, "extent", t.extent() as MPI_Count)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Aint,
    true_extent: *mut MPI_Aint,
) -> c_int {
    let t = lookup(datatype)?;
    out(true_lb, "true_lb", t.true_lb as MPI_Aint)?;
    out(
        true_extent,
        "true_extent",
        (t.true_ub - t.true_lb) as MPI_Aint,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    let t = lookup(datatype)?;
    out(true_lb, "true_lb", t.true_lb as MPI_Count)?;
    out(
        true_extent,
        "true_extent",
        (t.true_ub - t.true_lb) as MPI_Count,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    let t = lookup(datatype)?;
    out(num_integers, "num_integers", t.env.ints.len() as c_int)?;
    out(num_addresses, "num_addresses", t.env.aints.len() as c_int)?;
    out(num_datatypes, "num_datatypes", t.env.types.len() as c_int)?;
    out(combiner, "combiner", t.env.combiner)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    let t = lookup(datatype)?;
    if t.env.combiner == MPI_COMBINER_NAMED {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x} is predefined (MPI_COMBINER_NAMED has no contents)",
            datatype as u32
        ));
    }
    let e = &t.env;
    if (max_integers as usize) < e.ints.len()
        || (max_addresses as usize) < e.aints.len()
        || (max_datatypes as usize) < e.types.len()
    {
        return Err(err!(MPI_ERR_ARG, "max_integers/max_addresses/max_datatypes are smaller than MPI_Type_get_envelope's counts"));
    }
    let ints = out_slice(array_of_integers, e.ints.len(), "array_of_integers")?;
    let aints = out_slice(array_of_addresses, e.aints.len(), "array_of_addresses")?;
    let types = out_slice(array_of_datatypes, e.types.len(), "array_of_datatypes")?;
    for (k, (slot, &v)) in ints.iter_mut().zip(&e.ints).enumerate() {
        // A large-count constructor's count may not fit (MPI_Type_get_contents_c gives it).
        *slot = c_int::try_from(v).map_err(|_| {
            err!(
                MPI_ERR_VALUE_TOO_LARGE,
                "array_of_integers[{k}]={v} does not fit an int (the type was made by a large-count constructor; use MPI_Type_get_contents_c)"
            )
        })?;
    }
    for (a, &v) in aints.iter_mut().zip(&e.aints) {
        *a = v as MPI_Aint;
    }
    types.copy_from_slice(&component_handles(e)?);
    Ok(())
}

/// The component types of an envelope as `MPI_Type_get_contents` gives
/// them: predefined handles as they are, a derived component as a new
/// handle the caller frees.
pub(crate) fn component_handles(e: &Envelope) -> Result<Vec<MPI_Datatype>> {
    e.types
        .iter()
        .map(|tr| match tr {
            TypeRef::Builtin(h) => Ok(*h),
            TypeRef::Derived(d) => add((**d).clone()),
        })
        .collect()
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(
    datatype: MPI_Datatype,
    type_name: *const c_char,
) -> c_int {
    let name: String = cstr(type_name, "type_name")?
        .chars()
        .take(MPI_MAX_OBJECT_NAME as usize - 1)
        .collect();
    if is_predefined(datatype) {
        handles::type_size(datatype)?;
        return with(|st| {
            st.builtin_type_names.insert(datatype, name);
            Ok(())
        });
    }
    let i = user_index(datatype, "MPI_Type_set_name")?;
    with(|st| {
        Arc::make_mut(st.types.get_mut(i).unwrap()).name = name;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(
    datatype: MPI_Datatype,
    type_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let name = if is_predefined(datatype) {
        handles::type_size(datatype)?;
        with(|st| Ok(st.builtin_type_names.get(&datatype).cloned()))?
            .unwrap_or_else(|| handles::builtin_name(datatype).to_string())
    } else {
        lookup(datatype)?.name.clone()
    };
    let n = write_cstr(type_name, MPI_MAX_OBJECT_NAME as usize, &name)?;
    out(resultlen, "resultlen", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    out(address, "address", location as MPI_Aint)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

// ------------------------------------------------------------------ pack and unpack
//
// Done once on 64-bit sizes and positions (`pack_into`, ...): the int
// forms widen their arguments, the large-count forms (`large_types`) pass
// theirs as they are.

/// A size or position argument, checked non-negative.
fn size_arg(v: i64, name: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| err!(MPI_ERR_ARG, "{name}={v} must be non-negative"))
}

/// That `need` bytes at position `pos` fit a buffer of `size` bytes, else
/// MPI_ERR_TRUNCATE (`doing` the pack or unpack, `what` the size's name).
fn within(pos: usize, need: usize, size: i64, doing: &str, what: &str) -> Result<()> {
    if pos
        .checked_add(need)
        .is_none_or(|end| end as i64 > size.max(0))
    {
        return Err(err!(
            MPI_ERR_TRUNCATE,
            "{doing} {need} bytes at position {pos} {what}={size}"
        ));
    }
    Ok(())
}

/// A size for an int result, or MPI_ERR_VALUE_TOO_LARGE naming the `_c` form.
fn int_result(v: usize, name: &str, wide: &str) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| {
        err!(
            MPI_ERR_VALUE_TOO_LARGE,
            "{name}={v} does not fit an int (use {wide})"
        )
    })
}

/// Bytes `incount` elements of `datatype` pack into.
pub(crate) fn pack_size(
    incount: i64,
    datatype: MPI_Datatype,
    comm: super::MPI_Comm,
) -> Result<usize> {
    with(|st| st.comm(comm).map(|_| ()))?;
    let n = count_arg(incount, "incount")?;
    let t = lookup(datatype)?;
    n.checked_mul(t.size).ok_or_else(|| {
        err!(
            MPI_ERR_COUNT,
            "incount={incount} overflows the address space"
        )
    })
}

/// Packs `incount` elements at `inbuf` into `outbuf[position..outsize]`;
/// the position after them.
pub(crate) unsafe fn pack_into(
    inbuf: *const c_void,
    incount: i64,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    position: i64,
    comm: super::MPI_Comm,
) -> Result<i64> {
    let need = pack_size(incount, datatype, comm)?;
    let n = incount as usize;
    let t = lookup(datatype)?;
    if !t.committed {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x} is not committed",
            datatype as u32
        ));
    }
    let pos = size_arg(position, "position")?;
    within(pos, need, outsize, "packing", "overflows outsize")?;
    if need > 0 {
        let ik = crate::gpu::classify((inbuf as *const u8).wrapping_offset(t.true_lb), 0);
        let at = (outbuf as *mut u8).wrapping_add(pos);
        if crate::gpu::classify(at, need) == crate::gpu::MemKind::Host {
            let dst = bytes_at(outbuf, pos, need);
            // SAFETY: `inbuf` holds `n` elements of `t` (the caller's contract).
            unsafe { dtm::pack_mem(&t, n, inbuf as *const u8, ik, dst)? };
        } else {
            // Packed on the host, then one copy into the device buffer.
            let mut tmp = vec![0u8; need];
            // SAFETY: as above; `at` names `need` bytes of the output buffer.
            unsafe {
                dtm::pack_mem(&t, n, inbuf as *const u8, ik, &mut tmp)?;
                crate::gpu::copy(at, tmp.as_ptr(), need)?;
            }
        }
    }
    Ok((pos + need) as i64)
}

/// Unpacks `outcount` elements from `inbuf[position..insize]` into
/// `outbuf`; the position after them.
pub(crate) unsafe fn unpack_from(
    inbuf: *const c_void,
    insize: i64,
    position: i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: MPI_Datatype,
    comm: super::MPI_Comm,
) -> Result<i64> {
    let need = pack_size(outcount, datatype, comm)?;
    let n = outcount as usize;
    let t = lookup(datatype)?;
    let pos = size_arg(position, "position")?;
    within(pos, need, insize, "unpacking", "overruns insize")?;
    if need > 0 {
        let ok = crate::gpu::classify((outbuf as *const u8).wrapping_offset(t.true_lb), 0);
        let at = (inbuf as *const u8).wrapping_add(pos);
        let tmp;
        let src = if crate::gpu::classify(at, need) == crate::gpu::MemKind::Host {
            &*bytes_at(inbuf as *mut c_void, pos, need)
        } else {
            let mut v = vec![0u8; need];
            // SAFETY: `at` names `need` bytes of the input buffer.
            unsafe { crate::gpu::copy(v.as_mut_ptr(), at, need)? };
            tmp = v;
            &tmp[..]
        };
        // SAFETY: `outbuf` holds `n` elements of `t` (the caller's contract).
        unsafe { dtm::unpack_mem(&t, n, src, outbuf as *mut u8, ok)? };
    }
    Ok((pos + need) as i64)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(
    incount: c_int,
    datatype: MPI_Datatype,
    comm: super::MPI_Comm,
    size: *mut c_int,
) -> c_int {
    let n = pack_size(incount as i64, datatype, comm)?;
    out(size, "size", int_result(n, "size", "MPI_Pack_size_c")?)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: super::MPI_Comm,
) -> c_int {
    let pos = inp(position, "position")? as i64;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe {
        pack_into(
            inbuf,
            incount as i64,
            datatype,
            outbuf,
            outsize as i64,
            pos,
            comm,
        )?
    };
    // At most outsize: an int.
    out(position, "position", end as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
    comm: super::MPI_Comm,
) -> c_int {
    let pos = inp(position, "position")? as i64;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe {
        unpack_from(
            inbuf,
            insize as i64,
            pos,
            outbuf,
            outcount as i64,
            datatype,
            comm,
        )?
    };
    // At most insize: an int.
    out(position, "position", end as c_int)
}

fn check_datarep(datarep: *const c_char) -> Result<()> {
    let s = cstr(datarep, "datarep")?;
    if s != "external32" {
        return Err(err!(
            MPI_ERR_UNSUPPORTED_DATAREP,
            "datarep=\"{s}\": only \"external32\" is supported"
        ));
    }
    Ok(())
}

/// Bytes `incount` elements of `datatype` take in external32.
pub(crate) fn external_size(
    datarep: *const c_char,
    incount: i64,
    datatype: MPI_Datatype,
) -> Result<usize> {
    check_datarep(datarep)?;
    let n = count_arg(incount, "incount")?;
    let t = lookup(datatype)?;
    external32::size(&t, n)
}

/// Packs `incount` elements into `outbuf[position..outsize]` in
/// external32; the position after them.
pub(crate) unsafe fn pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    position: i64,
) -> Result<i64> {
    let need = external_size(datarep, incount, datatype)?;
    let t = lookup(datatype)?;
    let pos = size_arg(position, "position")?;
    within(pos, need, outsize, "packing", "overflows outsize")?;
    if need > 0 {
        let dst = bytes_at(outbuf, pos, need);
        // SAFETY: `inbuf` holds `incount` elements of `t` (the caller's contract).
        unsafe { external32::pack(&t, incount as usize, inbuf as *const u8, dst) }?;
    }
    Ok((pos + need) as i64)
}

/// Unpacks `outcount` elements from `inbuf[position..insize]` (external32)
/// into `outbuf`; the position after them.
pub(crate) unsafe fn unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position: i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: MPI_Datatype,
) -> Result<i64> {
    check_datarep(datarep)?;
    let n = count_arg(outcount, "outcount")?;
    let t = lookup(datatype)?;
    let need = external32::size(&t, n)?;
    let pos = size_arg(position, "position")?;
    within(pos, need, insize, "unpacking", "overruns insize")?;
    if need > 0 {
        let src = bytes_at(inbuf as *mut c_void, pos, need);
        // SAFETY: `outbuf` holds `n` elements of `t` (the caller's contract).
        unsafe { external32::unpack(&t, n, src, outbuf as *mut u8) }?;
    }
    Ok((pos + need) as i64)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    datatype: MPI_Datatype,
    size: *mut MPI_Aint,
) -> c_int {
    let n = external_size(datarep, incount as i64, datatype)?;
    out(size, "size", n as MPI_Aint)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> c_int {
    let pos = inp(position, "position")?;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe {
        pack_external(
            datarep,
            inbuf,
            incount as i64,
            datatype,
            outbuf,
            outsize,
            pos,
        )?
    };
    out(position, "position", end as MPI_Aint)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    let pos = inp(position, "position")?;
    // SAFETY: the caller's buffers (MPI's contract).
    let end = unsafe {
        unpack_external(
            datarep,
            inbuf,
            insize,
            pos,
            outbuf,
            outcount as i64,
            datatype,
        )?
    };
    out(position, "position", end as MPI_Aint)
}
