//! Collective layer. Written against core's point-to-point primitives
//! (`State::start_send_to`, `State::start_recv_ctx`) and waits through
//! `core::runtime`; never touches a transport.
//!
//! For now it holds the internal exchanges that communicator creation needs
//! (`create`). Collective algorithms for the MPI calls arrive with issue 4.
pub mod basic;
pub mod create;
pub mod sched;
