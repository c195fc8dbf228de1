//! The ground floor every layer may use: the MPICH ABI's constants
//! (`consts`, generated), the handle encoding and builtin datatype facts
//! (`handles`, `type_names`), and the one error type with its mapping to
//! MPI error classes (`error`, the `err!` macro). Calls nothing but `std`.
pub mod consts;
pub mod error;
pub mod handles;
pub mod type_names;
