//! Runtime state, requests, communicators, the matching engine, protocols,
//! the staging policy, progress and errors. Calls `transport` (through
//! `Net`, its links and capabilities: no ring or segment type), `bootstrap`,
//! `datatype`, `op`, `gpu`, `base`, `sys`; never `abi`. `profile` holds the
//! record of `OXMPI_PROFILE` that the entry points and the engine fill.
pub mod comm;
pub mod hang;
pub mod info;
pub use crate::base::error;
pub mod matching;
pub mod pipe;
pub mod pool;
pub use crate::profile;
pub mod request;
pub use crate::backoff as progress;
pub mod runtime;
pub mod slab;
pub mod staging;
pub mod state;
