//! Runtime state, requests, communicators, the matching engine, protocols,
//! progress and errors. Calls `transport`, `bootstrap`, `datatype`, `sys`;
//! it still imports from `abi` the constant table, the handle encoding and
//! the user op type (a ground floor for them is the transport-seam issue's
//! work).
pub mod comm;
pub use crate::base::error;
pub mod matching;
pub mod pool;
pub mod request;
pub use crate::backoff as progress;
pub mod runtime;
pub mod slab;
pub mod staging;
pub mod state;
