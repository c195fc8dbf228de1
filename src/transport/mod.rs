//! Moves bytes between two ranks. Knows no tags or communicators: cells carry
//! an envelope header that the core fills in and interprets.
//!
//! Paths, chosen once per peer at MPI_Init by reachability: the rank itself
//! (handled in `core::state`), shared memory on the same node (`shm`).
//! Inter-node (UCX) and device-buffer (CUDA IPC) transports are not built yet.
pub mod ring;
pub mod shm;
