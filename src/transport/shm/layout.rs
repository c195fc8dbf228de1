//! Every structure placed in the node's shared segment, in one place:
//! `#[repr(C)]`, integers and atomics only, no pointers (each rank maps the
//! segment at its own address). The segment is laid out as
//!
//! | part | size |
//! |---|---|
//! | `SegHeader` | 4096 bytes |
//! | one ring per ordered pair of local ranks: `RingCtl`, then a `CellHeader` per cell, then the cells' payload areas | `ring::ring_bytes` each |
//! | world's collective area: one slot per local rank (`coll::shm`): a `SlotHeader` (with its `CallLine`s), then `COLL_DATA` bytes of data | `COLL_SLOT` each |
//! | split-copy slots: `SplitSlot`, `SPLIT_SLOTS` per ordered pair | 64 bytes each |
//! | the pool table: `PoolEntry`, `POOL_AREAS` of them, then their areas | 64 bytes + `nlocal * COLL_SLOT` each |

use super::{COLL_HDR, COLL_LINES, COLL_LINE_BYTES};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// One call line of a collective slot: one per call in flight (call g uses
/// line g % `COLL_LINES`). Two cache lines, which the adjacent-line
/// prefetcher fetches together.
#[repr(C, align(64))]
pub struct CallLine {
    /// g once this rank's payload of call g is in (Release store).
    pub seq: AtomicU64,
    /// Context id of the communicator the call was made on.
    pub ctx: AtomicU32,
    pub spare: u32,
    /// Small payloads travel here (`coll::shm`'s `INLINE` bytes).
    pub payload: [u8; COLL_LINE_BYTES - 16],
}

/// The header of one rank's collective slot; `COLL_DATA` bytes of data
/// (a ring of regions for larger payloads) follow it.
#[repr(C, align(64))]
pub struct SlotHeader {
    pub spare0: u64,
    /// World's slots: the rank's CMA probe result (1 every read worked,
    /// 2 one was refused), written once during MPI_Init.
    pub cma_probe: AtomicU64,
    /// World's slots: where the rank mapped the segment, for the others'
    /// CMA probe.
    pub base: AtomicU64,
    pub spare1: [u64; 5],
    /// The last call this rank has finished with (on its own line).
    pub done: AtomicU64,
    pub spare2: [u64; 7],
    pub lines: [CallLine; COLL_LINES],
}

const _: () = assert!(std::mem::size_of::<CallLine>() == COLL_LINE_BYTES);
const _: () = assert!(std::mem::size_of::<SlotHeader>() == COLL_HDR);
const _: () = assert!(std::mem::offset_of!(SlotHeader, done) == 64);
const _: () = assert!(std::mem::offset_of!(SlotHeader, lines) == 128);
const _: () = assert!(std::mem::offset_of!(SlotHeader, cma_probe) == 8);
const _: () = assert!(std::mem::offset_of!(SlotHeader, base) == 16);

/// Table entry of a pool area. `#[repr(C)]`, atomics only, one cache line.
#[repr(C, align(64))]
pub struct PoolEntry {
    /// 0 when free, else a nonzero label of the communicator that holds the
    /// area (the members learn the area by message, not by this key).
    pub key: AtomicU64,
    /// Members that have not yet freed that communicator.
    pub users: AtomicU64,
}

/// Shared counters of one split copy. `#[repr(C)]`, atomics only, one cache line.
#[repr(C, align(64))]
pub struct SplitSlot {
    /// Next chunk to copy; each side takes chunks with `fetch_add`.
    pub claimed: AtomicU64,
    /// Bytes copied so far by both sides.
    pub done: AtomicU64,
    /// Set by the sender when one of its copies failed.
    pub failed: AtomicU64,
    /// Set by the sender once it no longer touches the slot.
    pub sender_left: AtomicU64,
}

/// Segment header. Written by the creator before `magic` is published.
#[repr(C)]
pub struct SegHeader {
    /// MAGIC once the segment is initialised (Release store by the creator).
    pub magic: AtomicU64,
    pub version: u32,
    pub nlocal: u32,
    pub cells: u32,
    pub cell_bytes: u32,
    /// Ranks attached so far, creator included; each rank adds 1 once.
    pub attached: AtomicU32,
}

/// Envelope and protocol fields of a cell. `#[repr(C)]`, integers only.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellHeader {
    /// Protocol message kind (`core::state::kind`).
    pub kind: u16,
    /// Protocol flags (`core::state::flag`, and `INLINE` set by the ring).
    pub flags: u16,
    /// Position of the cell in the ring's stream plus one (low 32 bits), stored
    /// last by the producer: the cell is full when it equals what the consumer
    /// expects. Written by `Producer::push` only.
    pub seq: u32,
    /// Context id of the communicator.
    pub ctx: u32,
    /// Sender's rank in that communicator.
    pub src: i32,
    pub tag: i32,
    /// Payload bytes carried by this cell.
    pub len: u32,
    /// Bytes of the whole message.
    pub total: u64,
    /// Sender-side request token.
    pub sreq: u64,
    /// Receiver-side request token.
    pub rreq: u64,
    /// Sender buffer address (rendezvous).
    pub addr: u64,
    /// Byte offset of this payload in the message.
    pub offset: u64,
}

/// Control words of one ring; producer and consumer words on separate 128-byte lines.
#[repr(C, align(128))]
pub struct Padded(pub AtomicU64);

#[repr(C)]
pub struct RingCtl {
    /// Unused (kept so that the cells stay 128-byte aligned after the header).
    pub spare: Padded,
    /// Next cell the consumer will read. Written only by the consumer.
    pub head: Padded,
}
