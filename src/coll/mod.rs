//! Collective layer. Written against core's point-to-point primitives
//! (`State::start_send_to`, `State::start_recv_ctx`) and waits through
//! `core::runtime`; never touches a transport.
//!
//! `basic` and `algos` hold the algorithms (one schedule builder each);
//! `select` the table of algorithms per collective, what each needs and
//! the rule that prefers one; `create` the internal exchanges of communicator
//! creation; `sched` the schedules the progress engine runs.
pub mod algos;
pub mod basic;
pub mod create;
pub mod fold;
pub mod reduce;
pub mod sched;
pub mod select;
pub mod shm;
