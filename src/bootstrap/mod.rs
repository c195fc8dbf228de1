//! PMI-1 bootstrap: the wire format (shared with `mpirun`) and the client.
pub mod pmi;
pub mod wire;
