//! OxMPI: an MPI library with the MPICH ABI.
//!
//! Layers, data flowing downward only (docs/architecture.md):
//! `abi` (C entry points) → `coll` (collectives) → `core` (state, matching,
//! protocols, progress) → `datatype` → `op` → `transport` (self, shared
//! memory) → `bootstrap` (PMI-1) → `sys` (libc); `base` (constants, handles,
//! the error type) under them all.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![allow(clippy::missing_safety_doc)]

/// Writes one line to stderr in a single write, so that lines of ranks
/// sharing one stderr (mpirun's, srun's, Hydra's) never interleave mid-line
/// (`eprintln!` writes each formatted piece apart on unbuffered stderr).
macro_rules! say {
    ($($t:tt)*) => {
        $crate::sys::say_line(format!($($t)*))
    };
}

pub mod abi;
pub mod backoff;
pub mod base;
pub mod bootstrap;
pub mod coll;
pub mod config;
pub mod core;
pub mod datatype;
/// cbindgen:ignore
#[rustfmt::skip]
pub mod fortran;
/// cbindgen:ignore
pub mod fortran_support;
pub mod gpu;
pub mod op;
pub mod profile;
pub mod rma;
pub mod sys;
pub mod transport;
