//! What memory a pointer names, for every buffer the library moves: the
//! null backend of a build without CUDA, which answers "host" for every
//! pointer and touches no driver. `classify` is called once where a buffer
//! is described (`abi::datatype::describe`); the kind travels with the
//! request, the outgoing queue and the schedule, and every byte-moving
//! site either calls `host_only` (which the CUDA work will turn into a
//! dispatch) or dispatches on the kind itself. Calls only `base`.

use crate::base::consts::MPI_ERR_BUFFER;
use crate::base::error::Result;
use crate::err;

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemKind {
    #[default]
    Host,
    Device,
}

/// The kind of memory of the `len` bytes at `p`. The null backend: host.
#[inline(always)]
pub fn classify(_p: *const u8, _len: usize) -> MemKind {
    MemKind::Host
}

/// A site that moves bytes with the CPU: refuses device memory, naming
/// the site. Every such site calls it, so the places the CUDA work must
/// visit are the callers of this function.
#[inline(always)]
pub fn host_only(kind: MemKind, site: &'static str) -> Result<()> {
    match kind {
        MemKind::Host => Ok(()),
        MemKind::Device => Err(refused(site)),
    }
}

#[cold]
fn refused(site: &'static str) -> crate::base::error::Error {
    err!(
        MPI_ERR_BUFFER,
        "{site}: a device buffer needs the CUDA transport, which this build does not have"
    )
}
