//! Info objects, outside the library's state: MPI-4 lets a program use
//! the `MPI_Info_*` functions before MPI_Init (and with sessions alone),
//! so the table has a lock of its own. MPI_INFO_ENV is read-only and
//! describes how the process was started (MPI-4.0 11.2.1).

use super::slab::Slab;
use crate::base::consts::*;
use crate::base::error::Result;
use crate::base::handles::{self, KIND_INFO};
use crate::err;
use std::os::raw::c_int;

pub type Pairs = Vec<(String, String)>;

static INFOS: parking_lot::Mutex<Slab<Pairs>> = parking_lot::Mutex::new(Slab::new());

fn bad(h: c_int) -> crate::base::error::Error {
    err!(
        MPI_ERR_INFO,
        "info=0x{:08x} is not a valid info object{}",
        h as u32,
        handles::kind_hint(h, KIND_INFO)
    )
}

/// MPI_INFO_ENV's pairs: the command, its arguments, the number of
/// processes started with it, the host, the working directory and the
/// thread level asked for (`OXMPI_THREAD_LEVEL`, if the launcher says).
pub fn env_pairs() -> Pairs {
    let mut args = std::env::args();
    let mut v = vec![("command".to_string(), args.next().unwrap_or_default())];
    let rest: Vec<String> = args.collect();
    if !rest.is_empty() {
        v.push(("argv".to_string(), rest.join(" ")));
    }
    let size = ["PMI_SIZE", "SLURM_NTASKS"]
        .iter()
        .find_map(|k| std::env::var(k).ok());
    if let Some(n) = size {
        v.push(("maxprocs".to_string(), n));
    }
    v.push(("host".to_string(), crate::sys::hostname()));
    if let Ok(d) = std::env::current_dir() {
        v.push(("wdir".to_string(), d.display().to_string()));
    }
    v
}

/// A copy of info `h`'s pairs (MPI_INFO_ENV included).
pub fn get(h: c_int) -> Result<Pairs> {
    if h == MPI_INFO_ENV {
        return Ok(env_pairs());
    }
    handles::index(h, KIND_INFO)
        .and_then(|i| INFOS.lock().get(i).cloned())
        .ok_or_else(|| bad(h))
}

/// Runs `f` on info `h`'s pairs to change them.
pub fn with_mut<R>(h: c_int, f: impl FnOnce(&mut Pairs) -> R) -> Result<R> {
    if h == MPI_INFO_ENV {
        return Err(err!(MPI_ERR_INFO, "info=MPI_INFO_ENV is read-only"));
    }
    let i = handles::index(h, KIND_INFO).ok_or_else(|| bad(h))?;
    let mut t = INFOS.lock();
    let kv = t.get_mut(i).ok_or_else(|| bad(h))?;
    Ok(f(kv))
}

/// A new info object holding `kv`; its handle.
pub fn insert(kv: Pairs) -> c_int {
    handles::make(KIND_INFO, INFOS.lock().insert(kv))
}

/// Frees info `h`.
pub fn remove(h: c_int) -> Result<()> {
    if h == MPI_INFO_ENV {
        return Err(err!(MPI_ERR_INFO, "info=MPI_INFO_ENV cannot be freed"));
    }
    let i = handles::index(h, KIND_INFO).ok_or_else(|| bad(h))?;
    INFOS.lock().remove(i).map(|_| ()).ok_or_else(|| bad(h))
}
