//! How a typed buffer moves (the point-to-point staging policy): as it is
//! (contiguous), by a vectored single copy from or into its pieces, packed
//! into a staging buffer, or streamed a cell or a chunk at a time. Chosen
//! once per message where the buffer is described (without the library
//! lock: packing runs outside it); the send path then reads the link's
//! capabilities (`State::launch_send`): a vectored rendezvous where the link
//! has vectored copies, a streamed one where it carries cells, else packed.
//! Device memory is always packed into (or unpacked from) host bytes.

use crate::core::error::Result;
use crate::core::request::{Staged, Stream};
use crate::datatype::{MemKind, Type};
use std::sync::Arc;

/// Messages at least this long may move by a vectored single copy instead
/// of being packed, when their pieces are long enough on average: the kernel
/// pins the pages of each remote piece separately (about 0.7 us per piece
/// measured, so a sender's pieces must be long), while the receiver's own
/// pieces cost it little. Above `IOV_MAX_BYTES_RECV` a receiver with short
/// pieces measured faster packed (docs/performance.md).
const IOV_MIN_BYTES: usize = 16 << 10;
const IOV_MIN_PIECE_SEND: usize = 32 << 10;
const IOV_MIN_PIECE_RECV: usize = 256;
const IOV_MAX_BYTES_RECV: usize = 2 << 20;
const IOV_MAX_PIECES: usize = 1 << 16;

/// The staging of `count` elements of `t` at `user` (`bytes` bytes packed)
/// for a receive (`recv`) or a send: the pointer and length the message
/// moves from or to, and the staging area, if any.
///
/// # Safety
/// `user` holds `count` elements of `t` (readable for a send, writable for
/// a receive until its request completes).
pub unsafe fn stage(
    t: &Arc<Type>,
    count: usize,
    user: *mut u8,
    bytes: usize,
    recv: bool,
    kind: MemKind,
) -> Result<(*mut u8, usize, Option<Box<Staged>>)> {
    let mut s = Staged::default();
    s.kind = kind;
    if kind == MemKind::Device {
        // Device memory moves through host memory with the driver's copies,
        // never by the CPU's vectored copies: a receive lands in a host
        // area unpacked when the message is in, or (a large non-contiguous
        // one) is unpacked cell by cell as it arrives; a send is packed
        // when it starts (`State::launch_send`), cell by cell as it goes
        // out where it is large and non-contiguous, or not at all where it
        // goes by CUDA IPC to a rank of this node. A large one moves
        // through the device pipeline (`core::pipe`): a receive lands in
        // pinned chunks copied to the device as each fills, a send is read
        // ahead into them as its cells go out.
        let streamed = !t.is_contiguous(count) && bytes > crate::config::pack_stream();
        let piped = bytes > crate::config::gpu_pipeline().0;
        if recv && (piped || streamed) {
            let mut st = Stream::new(t.clone(), count, user);
            st.kind = kind;
            // SAFETY: `user` is the user's device receive buffer of `count`
            // elements of `t`, writable until the request completes (which
            // outlives its staging).
            s.pipe = Some(unsafe { crate::core::pipe::RecvPipe::new(st, bytes) });
        } else if recv {
            s.data = crate::core::pool::take_pinned(bytes);
            s.unpack = Some((t.clone(), count, user));
        } else {
            s.pack = Some((t.clone(), count, user));
            if t.is_contiguous(count) && bytes > 0 && crate::gpu::ipc::enabled() {
                s.ipc_src = Some(user.wrapping_offset(t.start()) as *const u8);
            }
        }
        let ptr = s.data.as_mut_ptr();
        return Ok((ptr, bytes, Some(Box::new(s))));
    }
    let pieces = t.pieces().saturating_mul(count);
    let min_piece = if recv {
        IOV_MIN_PIECE_RECV
    } else {
        IOV_MIN_PIECE_SEND
    };
    let long_pieces = pieces.saturating_mul(min_piece) <= bytes;
    let short_recv = recv && pieces.saturating_mul(IOV_MIN_PIECE_SEND) > bytes;
    // A segment list is only made when it stays short (long pieces, at most
    // 64 Ki of them): never one entry per element of a large message.
    if bytes >= IOV_MIN_BYTES
        && long_pieces
        && pieces <= IOV_MAX_PIECES
        && !(short_recv && bytes > IOV_MAX_BYTES_RECV)
    {
        s.iov = crate::datatype::segments(t, count, user as usize);
    }
    let streamed = bytes > crate::config::pack_stream() && s.iov.is_empty();
    if recv && streamed {
        // Unpacked as it arrives: no landing area for the whole message.
        s.stream = Some(Stream::new(t.clone(), count, user));
    } else if recv {
        // The landing area is used only if the message does not come by a
        // vectored copy; its pages are not touched otherwise.
        s.data = crate::core::pool::take(bytes);
        s.unpack = Some((t.clone(), count, user));
    } else if s.iov.is_empty() && !streamed {
        s.data = crate::core::pool::take(bytes);
        // SAFETY: the user buffer holds `count` elements of `t` (MPI's rule).
        unsafe { crate::datatype::pack(t, count, user, &mut s.data[..bytes]) };
    } else {
        // Packed only if the send goes neither by a vectored copy nor
        // streamed cell by cell (`launch_send`).
        s.pack = Some((t.clone(), count, user));
    }
    let ptr = s.data.as_mut_ptr();
    Ok((ptr, bytes, Some(Box::new(s))))
}
