//! The UCX link as `Net` uses it: one worker, the peers' worker addresses
//! (from the business-card round at `MPI_Init`), endpoints made on first
//! use, and the envelope's wire form. Every message carries its sender's
//! world rank and a sequence number per ordered pair of ranks, so arrivals
//! reach the matching engine in the order they were sent whatever order
//! UCX delivers them in.

use super::{Endpoint, Ucx};
use crate::transport::hdr::{Hdr, Key};
use std::collections::BTreeMap;

/// Bytes of the envelope on the wire.
const WIRE: usize = 72;

fn encode(h: &Hdr, from: u32, seq: u32) -> [u8; WIRE] {
    let mut b = [0u8; WIRE];
    let mut at = 0;
    let mut put = |v: &[u8]| {
        b[at..at + v.len()].copy_from_slice(v);
        at += v.len();
    };
    put(&h.kind.to_le_bytes());
    put(&h.flags.to_le_bytes());
    put(&h.ctx.to_le_bytes());
    put(&h.src.to_le_bytes());
    put(&h.tag.to_le_bytes());
    put(&h.len.to_le_bytes());
    put(&from.to_le_bytes());
    put(&seq.to_le_bytes());
    put(&(h.key as u32).to_le_bytes());
    put(&h.total.to_le_bytes());
    put(&h.sreq.to_le_bytes());
    put(&h.rreq.to_le_bytes());
    put(&h.addr.to_le_bytes());
    put(&h.offset.to_le_bytes());
    b
}

fn decode(b: &[u8]) -> Option<(Hdr, u32, u32)> {
    if b.len() != WIRE {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let key = match u32_at(28) {
        0 => Key::Pid,
        1 => Key::Rkey,
        _ => Key::CudaIpc,
    };
    let h = Hdr {
        kind: u16_at(0),
        flags: u16_at(2),
        ctx: u32_at(4),
        src: u32_at(8) as i32,
        tag: u32_at(12) as i32,
        len: u32_at(16),
        key,
        total: u64_at(32),
        sreq: u64_at(40),
        rreq: u64_at(48),
        addr: u64_at(56),
        offset: u64_at(64),
    };
    Some((h, u32_at(20), u32_at(24)))
}

/// The link's state in one rank.
pub struct UcxLink {
    ucx: Ucx,
    me: u32,
    /// Worker address of every world rank the link serves (empty: not served).
    addrs: Vec<Vec<u8>>,
    eps: Vec<Option<Endpoint>>,
    /// Next sequence number to send to, and expected from, each rank.
    sent: Vec<u32>,
    expect: Vec<u32>,
    /// Arrivals ahead of their turn, by (sender, sequence number).
    early: BTreeMap<(u32, u32), (Hdr, Vec<u8>)>,
    /// The first failure, reported by `poll`.
    failed: Option<String>,
}

impl UcxLink {
    /// A link for `size` ranks over worker `ucx`; `addrs[r]` is rank r's
    /// worker address (empty for ranks reached otherwise).
    pub fn new(ucx: Ucx, me: usize, addrs: Vec<Vec<u8>>) -> UcxLink {
        let size = addrs.len();
        UcxLink {
            ucx,
            me: me as u32,
            eps: (0..size).map(|_| None).collect(),
            addrs,
            sent: vec![0; size],
            expect: vec![0; size],
            early: BTreeMap::new(),
            failed: None,
        }
    }

    /// Sends one message to world rank `w` (copied: the buffers are free on
    /// return). A failure is kept for `poll` to report.
    pub fn push(&mut self, w: usize, h: &Hdr, payload: &[u8]) {
        let Some(wire) = self.next_wire(w, h) else {
            return;
        };
        let ep = self.eps[w].as_ref().unwrap();
        if let Err(e) = self.ucx.send(ep, &wire, payload) {
            self.failed = Some(format!("sending to world rank {w}: {e}"));
        }
    }

    /// Sends the envelope `h` with the `len` bytes at `data` by UCX's
    /// rendezvous: the receiver's `fetch` takes them straight from `data`
    /// into its buffer, and `h.sreq` is reported done (`take_done`) when
    /// UCX is done with them. A failure is kept for `poll` to report.
    ///
    /// # Safety
    /// `data` holds `len` readable bytes until `h.sreq` is reported done.
    pub unsafe fn push_whole(
        &mut self,
        w: usize,
        h: &Hdr,
        data: *const u8,
        len: usize,
        device: bool,
    ) {
        let Some(wire) = self.next_wire(w, h) else {
            return;
        };
        let ep = self.eps[w].as_ref().unwrap();
        // SAFETY: forwarded contract.
        if let Err(e) = unsafe { self.ucx.send_whole(ep, &wire, data, len, h.sreq, device) } {
            self.failed = Some(format!("sending to world rank {w}: {e}"));
        }
    }

    /// Receives the data of a rendezvous arrival (its envelope's `addr`,
    /// `len` bytes) into `dst`; `token` is reported done when it is in.
    ///
    /// # Safety
    /// `desc` came from an arrival and is fetched once; `dst` holds `len`
    /// writable bytes until `token` is reported done.
    pub unsafe fn fetch(&mut self, desc: u64, dst: *mut u8, len: usize, token: u64, device: bool) {
        if self.failed.is_some() {
            return;
        }
        // SAFETY: forwarded contract.
        if let Err(e) = unsafe { self.ucx.fetch(desc as usize, dst, len, token, device) } {
            self.failed = Some(e);
        }
    }

    /// Drops the data of a rendezvous arrival that will not be fetched
    /// (`Ucx::drop_arrival`).
    ///
    /// # Safety
    /// `desc` came from an arrival, not fetched nor dropped yet.
    pub unsafe fn drop_arrival(&mut self, desc: usize) {
        if self.failed.is_none() {
            // SAFETY: forwarded contract.
            unsafe { self.ucx.drop_arrival(desc) }
        }
    }

    /// UCX reports CUDA memory (`Ucx::cuda_memory`).
    pub fn cuda_memory(&self) -> bool {
        self.ucx.cuda_memory()
    }

    /// Tokens of whole sends and fetches completed since the last call.
    pub fn take_done(&mut self) -> Vec<u64> {
        self.ucx.take_done()
    }

    /// The wire form of the next message to `w` (its sequence number
    /// taken), with the endpoint made; None after a failure (kept for
    /// `poll`).
    fn next_wire(&mut self, w: usize, h: &Hdr) -> Option<[u8; WIRE]> {
        if self.failed.is_some() || !self.connected(w) {
            return None;
        }
        let seq = self.sent[w];
        self.sent[w] = seq.wrapping_add(1);
        Some(encode(h, self.me, seq))
    }

    /// Makes the endpoint to `w` on first use; false (the failure kept)
    /// if that fails.
    fn connected(&mut self, w: usize) -> bool {
        if self.eps[w].is_none() {
            match self.ucx.connect(&self.addrs[w]) {
                Ok(ep) => self.eps[w] = Some(ep),
                Err(e) => {
                    self.failed = Some(format!("connecting to world rank {w}: {e}"));
                    return false;
                }
            }
        }
        true
    }

    /// Drives the worker and returns the arrivals that are next in their
    /// senders' order, in order. A rendezvous arrival's envelope has the
    /// descriptor of its data in `addr` (non-zero) and no payload: the
    /// receiver's `fetch` takes the `total` bytes; every other arrival has
    /// `addr` 0. Err: a send or receive failed.
    pub fn poll(&mut self) -> Result<Vec<(usize, Hdr, Vec<u8>)>, String> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if let Err(f) = self.ucx.progress() {
            let who = self
                .eps
                .iter()
                .position(|e| e.as_ref().is_some_and(|e| e.id() == f.ep));
            return Err(match who {
                Some(w) => format!(
                    "lost world rank {w} on another host ({}): it died, or its host or the network did",
                    f.what
                ),
                None => format!("an endpoint failed: {}", f.what),
            });
        }
        let mut out = Vec::new();
        for a in self.ucx.take_arrivals() {
            let Some((mut h, from, seq)) = decode(&a.header) else {
                return Err(format!(
                    "a message with a {}-byte envelope arrived",
                    a.header.len()
                ));
            };
            let w = from as usize;
            if let Some((desc, len)) = a.rndv {
                // The sender's address means nothing here: the descriptor
                // takes its place.
                h.addr = desc as u64;
                h.len = 0;
                if len as u64 != h.total {
                    return Err(format!(
                        "a rendezvous of {len} bytes from world rank {w} announced {}",
                        h.total
                    ));
                }
            } else {
                // An address in the sender's memory means nothing on this
                // host (nothing sent over UCX reads one): zero, so that a
                // rendezvous envelope without its data (a streamed
                // sender's) is never taken for one with a descriptor.
                h.addr = 0;
            }
            if w >= self.expect.len() {
                return Err(format!("a message from world rank {w} arrived"));
            }
            if seq != self.expect[w] {
                self.early.insert((from, seq), (h, a.data));
                continue;
            }
            self.expect[w] = seq.wrapping_add(1);
            out.push((w, h, a.data));
            // Whatever was waiting behind it from the same sender.
            while let Some((h, d)) = self.early.remove(&(from, self.expect[w])) {
                self.expect[w] = self.expect[w].wrapping_add(1);
                out.push((w, h, d));
            }
        }
        Ok(out)
    }

    /// Arms the worker for a sleep on its event fd (`Ucx::arm`).
    pub fn arm(&mut self) -> Option<i32> {
        self.ucx.arm()
    }

    /// UCX still holds sends of this rank.
    pub fn sending(&self) -> bool {
        self.ucx.pending() > 0
    }

    /// Closes every endpoint and lets the sends still held finish.
    pub fn close(&mut self) {
        let start = std::time::Instant::now();
        while self.ucx.pending() > 0 && start.elapsed().as_secs() < 5 {
            if self.ucx.progress().is_err() {
                break;
            }
        }
        for ep in self.eps.iter_mut().filter_map(Option::take) {
            self.ucx.close(ep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips() {
        let h = Hdr {
            kind: 3,
            flags: 0x8001,
            ctx: 77,
            src: 5,
            tag: -1,
            len: 1234,
            total: 1 << 40,
            sreq: u64::MAX - 1,
            rreq: 42,
            addr: 0xdead_beef,
            key: Key::Rkey,
            offset: 99,
        };
        let b = encode(&h, 7, 0xffff_fffe);
        assert_eq!(decode(&b), Some((h, 7, 0xffff_fffe)));
        assert_eq!(decode(&b[..10]), None);
    }
}
