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
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_int, c_void};

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local_c(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> c_int {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "count={count} must be non-negative"));
    }
    // Element-wise: above 2^31 - 1 elements, in pieces of 2^30 (a user
    // op sees the program's datatype and an int length each time).
    const PIECE: MPI_Count = 1 << 30;
    let ext = crate::abi::datatype::lookup(datatype)?.extent() as MPI_Count;
    let mut done: MPI_Count = 0;
    loop {
        let n = (count - done).min(PIECE);
        let off = (done * ext) as isize;
        crate::abi::op::__oxmpi_body_MPI_Reduce_local(
            (inbuf as *const u8).wrapping_offset(off) as *const c_void,
            (inoutbuf as *mut u8).wrapping_offset(off) as *mut c_void,
            n as c_int,
            datatype,
            op,
        )?;
        done += n;
        if done >= count {
            return Ok(());
        }
    }
}
