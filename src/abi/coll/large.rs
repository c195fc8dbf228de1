//! The MPI-4 large-count collectives (`MPI_Xxx_c`): counts as `MPI_Count`,
//! displacements as `MPI_Aint`; the entry points (generated from tables)
//! are in `large_forms.rs`. Each takes the path of its int form, so every
//! algorithm, check and message is the same, and reports errors under its
//! own name. The forms with one count per
//! buffer (MPI_Bcast_c, MPI_Reduce_c, MPI_Allreduce_c, MPI_Scan_c,
//! MPI_Exscan_c, MPI_Gather_c, MPI_Scatter_c, MPI_Allgather_c,
//! MPI_Alltoall_c, MPI_Reduce_scatter_block_c and the neighbour
//! allgather and alltoall, and their nonblocking and persistent forms)
//! pass a count above 2147483647 as one element of a temporary type
//! holding them all (`abi::large::big`); the v and w forms build their
//! schedules from 64-bit count and displacement arrays, as their int forms
//! do after widening theirs.

use crate::abi::consts::*;
use crate::abi::{MPI_Count, MPI_Datatype, MPI_Op};
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
