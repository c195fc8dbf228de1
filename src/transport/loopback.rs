//! The in-process loopback link: a rank's messages to itself carried with
//! the full protocol (eager, fragments, rendezvous with single copy or the
//! cells' fallback, control messages) through a queue in this process,
//! instead of being delivered in place. Chosen for the rank itself with
//! `OXMPI_LOOPBACK=1`, so the protocols can be tested without a second rank
//! (the transport conformance suite runs against it); it is also the
//! smallest example of a link: one folder-sized file and one `Link` arm.

use super::hdr::Hdr;
use std::collections::VecDeque;

/// Payload bytes one push carries (as a shared-memory cell does).
pub(crate) const FRAG_BYTES: usize = 8192;

#[derive(Default)]
pub struct Loopback {
    queue: VecDeque<(Hdr, Vec<u8>)>,
}

impl Loopback {
    pub fn push(&mut self, hdr: &Hdr, payload: &[u8]) -> bool {
        debug_assert!(payload.len() <= FRAG_BYTES);
        self.queue.push_back((*hdr, payload.to_vec()));
        true
    }

    /// The oldest message, taken out of the queue (so that what arrives
    /// while it is handled cannot move it).
    pub fn pop(&mut self) -> Option<(Hdr, Vec<u8>)> {
        self.queue.pop_front()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}
