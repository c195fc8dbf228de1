//! The transport-neutral envelope of every protocol message (`Hdr`): what
//! the core fills in and interprets, whatever link carries it. A link packs
//! it into its own wire form (the shared-memory ring into its 64-byte cell
//! header, `ring::CellHeader`, whose sequence word and inline overlay are
//! the ring's business) and gives it back on arrival.

/// The key of a remote buffer description (`Hdr::addr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Key {
    /// The peer's process id, which the link knows (single copy on one
    /// node: `process_vm_readv`).
    #[default]
    Pid = 0,
    /// A packed remote key of the inter-node transport, carried in the
    /// message's payload (`len` bytes).
    Rkey = 1,
    /// A CUDA IPC handle of the buffer's allocation and an offset, carried
    /// in the message's payload.
    CudaIpc = 2,
}

/// One protocol message's envelope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hdr {
    /// Protocol message kind (`core::state::kind`).
    pub kind: u16,
    /// Protocol flags (`core::state::flag`).
    pub flags: u16,
    /// Context id of the communicator.
    pub ctx: u32,
    /// Sender's rank in that communicator.
    pub src: i32,
    pub tag: i32,
    /// Payload bytes carried with this envelope.
    pub len: u32,
    /// Bytes of the whole message.
    pub total: u64,
    /// Sender-side request token.
    pub sreq: u64,
    /// Receiver-side request token.
    pub rreq: u64,
    /// The remote buffer of a rendezvous: its address in the sender (or,
    /// for a split copy's CTS, the receiver), read with `key`.
    pub addr: u64,
    /// How the remote buffer at `addr` is reached.
    pub key: Key,
    /// Byte offset of this payload in the message.
    pub offset: u64,
}
