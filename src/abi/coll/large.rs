//! The MPI-4 large-count collectives (`MPI_Xxx_c`): counts as `MPI_Count`,
//! displacements as `MPI_Aint`; the conversions live here, the entry
//! points (generated from a table) in `large_forms.rs`. Each takes the path of its int form
//! (`__oxmpi_body_MPI_Xxx`), so every algorithm, check and message is the
//! same, and reports errors under its own name. The collectives carry
//! counts and displacements as C ints inside: the forms with one count per
//! buffer (MPI_Bcast_c, MPI_Reduce_c, MPI_Allreduce_c, MPI_Scan_c,
//! MPI_Exscan_c, MPI_Gather_c, MPI_Scatter_c, MPI_Allgather_c,
//! MPI_Alltoall_c, MPI_Reduce_scatter_block_c and the neighbour
//! allgather and alltoall, and their nonblocking and persistent forms)
//! pass a count above 2147483647 as one element of a temporary type
//! holding them all (`abi::large::big`); in the v and w forms a count or
//! displacement above 2147483647 is refused with MPI_ERR_COUNT or
//! MPI_ERR_ARG naming the argument and its value (docs/status.md).

use crate::abi::consts::*;
use crate::abi::{MPI_Aint, MPI_Count, MPI_Datatype, MPI_Op, MPI_Request};
use crate::core::error::Result;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

/// A count argument as the int paths take it.
pub(crate) fn int_count(v: MPI_Count, name: &str) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| {
        if v < 0 {
            err!(MPI_ERR_COUNT, "{name}={v} must be non-negative")
        } else {
            err!(
                MPI_ERR_COUNT,
                "{name}={v}: counts above {} are not supported",
                c_int::MAX
            )
        }
    })
}

/// A per-rank array converted to ints; NULL stays NULL, for the int path
/// to report (or to ignore where the array is not significant).
pub(crate) struct Ints(Option<Vec<c_int>>);

impl Ints {
    pub(super) fn none() -> Self {
        Ints(None)
    }
    pub(crate) fn ptr(&self) -> *const c_int {
        self.0.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
    }
}

/// # Boundary
/// `p` is NULL or points to `n` entries.
pub(crate) fn convert<T: Copy>(
    p: *const T,
    n: usize,
    name: &str,
    conv: impl Fn(T, &str) -> Result<c_int>,
) -> Result<Ints> {
    if p.is_null() {
        return Ok(Ints::none());
    }
    let a = crate::abi::ptr::in_slice(p, n, name)?;
    let v = a
        .iter()
        .enumerate()
        .map(|(i, &x)| conv(x, &format!("{name}[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Ints(Some(v)))
}

/// `n` counts of an `MPI_Count` array.
///
/// # Boundary
/// `p` is NULL or points to `n` entries.
pub(super) fn int_counts(p: *const MPI_Count, n: usize, name: &str) -> Result<Ints> {
    convert(p, n, name, int_count)
}

/// `n` displacements of an `MPI_Aint` array.
///
/// # Boundary
/// `p` is NULL or points to `n` entries.
pub(super) fn int_displs(p: *const MPI_Aint, n: usize, name: &str) -> Result<Ints> {
    convert(p, n, name, |v, name| {
        c_int::try_from(v).map_err(|_| {
            err!(
                MPI_ERR_ARG,
                "{name}={v}: displacements beyond {} are not supported",
                c_int::MAX
            )
        })
    })
}

/// Keeps the converted arrays of a persistent collective alive as long as
/// its request: the int path reads them at each MPI_Start.
///
/// # Boundary
/// `request` holds the handle the int path just wrote.
pub(super) fn keep<T: 'static>(request: *mut MPI_Request, arrays: T) -> Result<()> {
    // SAFETY: written by the successful call before.
    let h = unsafe { *request };
    crate::core::runtime::with(|st| {
        let rid = crate::abi::handles::index(h, crate::abi::handles::KIND_REQUEST)
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request={h} is not a request"))?;
        let r = st
            .reqs
            .get_mut(rid)
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request={h} is gone"))?;
        let f = r
            .coll_factory
            .take()
            .ok_or_else(|| err!(MPI_ERR_INTERN, "request={h} is not a persistent collective"))?;
        let inner = *f;
        r.coll_factory = Some(Box::new(std::rc::Rc::new(move || {
            let _ = &arrays;
            inner()
        })));
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local_c(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> c_int {
    let count = int_count(count, "count")?;
    crate::abi::op::__oxmpi_body_MPI_Reduce_local(inbuf, inoutbuf, count, datatype, op)
}
