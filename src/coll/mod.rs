//! Collective layer. Written against core's point-to-point primitives
//! (`State::start_send_to`, `State::start_recv_ctx`) and waits through
//! `core::runtime`; never touches a transport.
//!
//! One file per collective family holds its algorithms (one schedule
//! builder each): `barrier`, `bcast`, `allreduce` (reduce too), `gather`
//! (scatter too), `allgather`, `alltoall`, `reduce_scatter`, `scan`; `hier`
//! the node-aware pieces, `node` which node-area form a blocking call takes
//! (and running it; `shm` holds those algorithms), `blocks` the block
//! arithmetic they share, `basic`
//! the communicator view and the blocking helpers;
//! `select` the table of algorithms per collective, what each needs and
//! the rule that prefers one; `create` the internal exchanges of communicator
//! creation; `sched` the schedules the progress engine runs.
//!
//! Block layouts are byte ranges (offset, len) in rank order. Reductions use
//! `Step::Reduce { src, dst }`, which computes dst = src op dst (src is the
//! left operand): non-commutative callers keep operands in rank order, and
//! recursive doubling puts the lower rank on the left, so every rank gets
//! identical bits.
pub mod allgather;
pub mod allreduce;
pub mod alltoall;
pub mod barrier;
pub mod basic;
pub mod bcast;
mod blocks;
pub mod create;
pub mod fold;
pub mod gather;
pub mod hier;
pub mod inter;
pub mod node;
pub mod reduce;
pub mod reduce_scatter;
pub mod scan;
pub mod sched;
pub mod select;
pub mod shm;
