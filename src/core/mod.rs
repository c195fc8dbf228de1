//! Runtime state, requests, communicators, the matching engine, protocols,
//! progress and errors. Calls `transport`, `bootstrap` and `sys`; never `abi`
//! (except for the constant table it shares).
pub mod comm;
pub mod error;
pub mod matching;
pub mod pool;
pub mod progress;
pub mod runtime;
pub mod slab;
pub mod state;
