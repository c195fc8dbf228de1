//! Moves bytes between two ranks. Knows no tags or communicators: every
//! message carries an envelope (`hdr::Hdr`) that the core fills in and
//! interprets; each link packs it into its own wire form.
//!
//! Paths, chosen once per peer at MPI_Init by reachability: the rank itself
//! (handled in `core::state`), shared memory on the same node (`shm`).
//! Inter-node (UCX) and device-buffer (CUDA IPC) transports are not built yet.
pub mod hdr;
pub mod ring;
pub mod shm;
