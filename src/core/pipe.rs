//! The device pipeline: a device buffer (of any datatype) staged through
//! host memory a chunk at a time (`config::gpu_pipeline`), so that the driver's
//! copies overlap the transfer instead of preceding (send) or following
//! (receive) the whole of it. Each message holds at most `SLOTS` pinned
//! chunks from `pool::take_pinned`; every copy goes on the library's own
//! stream and is waited for by its event, never inside a call that could
//! return instead.
//!
//! A sender's chunk is copied from the device ahead of the cells that carry
//! it (`SendPipe::chunk_at`); a receiver copies what arrives into the
//! current chunk and starts that chunk's copy to the device once it is full
//! (`RecvPipe::store`), or at the end of the message (`RecvPipe::finish`).
//! A chunk is packed from (or unpacked into) the typed buffer by a cursor
//! whose copies are queued (`datatype::Cursor::queued`): one copy for a
//! contiguous buffer, strided copies for a derived type.

use crate::core::error::{Error, Result};
use crate::core::request::Stream;
use crate::gpu::Pending;
use std::collections::VecDeque;

/// Chunks in flight per message.
const SLOTS: usize = 4;

/// One chunk: bytes [off, off + len) of the message in a pinned buffer, and
/// the copy that fills (send) or empties (receive) it while one runs.
#[derive(Debug)]
struct Slot {
    off: usize,
    len: usize,
    buf: Vec<u8>,
    copy: Option<Pending>,
}

/// Waits for a copy that reads or writes a buffer about to be handed back.
fn settle(copy: Option<Pending>) -> Option<Error> {
    let copy = copy?;
    loop {
        match copy.done() {
            Ok(true) => return None,
            Ok(false) => std::hint::spin_loop(),
            Err(e) => return Some(e),
        }
    }
}

/// A send of `total` packed bytes from a typed device buffer, read ahead
/// into pinned chunks as the cells go out.
#[derive(Debug)]
pub struct SendPipe {
    src: Stream,
    total: usize,
    chunk: usize,
    /// Bytes whose copies were started.
    issued: usize,
    /// The chunks held, in message order.
    slots: VecDeque<Slot>,
    /// Pinned buffers whose chunks went out.
    spare: Vec<Vec<u8>>,
    /// The first copy that failed (the message goes on with what the
    /// chunk held; the send's request reports it).
    pub failed: Option<Error>,
}

impl SendPipe {
    /// # Safety
    /// `src` is a device buffer holding its `count` elements (`total`
    /// packed bytes), valid and unchanged until the pipe is dropped.
    pub unsafe fn new(src: Stream, total: usize) -> SendPipe {
        SendPipe {
            src,
            total,
            chunk: crate::config::gpu_pipeline().1,
            issued: 0,
            slots: VecDeque::new(),
            spare: Vec::new(),
            failed: None,
        }
    }

    /// Starts the copies of the next chunks while fewer than `SLOTS` are held.
    fn fill(&mut self) {
        while self.slots.len() < SLOTS && self.issued < self.total {
            let len = (self.total - self.issued).min(self.chunk);
            let mut buf = self
                .spare
                .pop()
                .unwrap_or_else(|| crate::core::pool::take_pinned(self.chunk));
            let copy = match self.src.pack_queued(&mut buf[..len]) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.failed.get_or_insert(e);
                    None
                }
            };
            self.slots.push_back(Slot {
                off: self.issued,
                len,
                buf,
                copy,
            });
            self.issued += len;
        }
    }

    /// The message's bytes from `off` to the end of their chunk, once that
    /// chunk's copy is done; None while it runs. Chunks before `off` are
    /// done with (their bytes went out) and make room for later ones.
    pub fn chunk_at(&mut self, off: usize) -> Option<&[u8]> {
        while self.slots.front().is_some_and(|s| s.off + s.len <= off) {
            let s = self.slots.pop_front().unwrap();
            if let Some(e) = settle(s.copy) {
                self.failed.get_or_insert(e);
            }
            self.spare.push(s.buf);
        }
        self.fill();
        let s = self.slots.front_mut()?;
        if let Some(c) = s.copy.as_ref() {
            match c.done() {
                Ok(false) => return None,
                Ok(true) => {}
                Err(e) => {
                    self.failed.get_or_insert(e);
                }
            }
            s.copy = None;
        }
        let at = off.checked_sub(s.off)?;
        Some(&s.buf[at..s.len])
    }
}

impl Drop for SendPipe {
    fn drop(&mut self) {
        for s in self.slots.drain(..) {
            // A copy still running writes its buffer: it ends first.
            let _ = settle(s.copy);
            crate::core::pool::give(s.buf);
        }
        for b in self.spare.drain(..) {
            crate::core::pool::give(b);
        }
    }
}

/// A receive into a typed device buffer of `cap` packed bytes, landing in
/// pinned chunks whose copies to the device start as each fills.
#[derive(Debug)]
pub struct RecvPipe {
    dst: Stream,
    /// A contiguous buffer's first byte (past its lower bound), where a
    /// copy of the whole message may go straight (CUDA IPC).
    pub direct: Option<*mut u8>,
    cap: usize,
    chunk: usize,
    /// Bytes stored so far (arrivals come in order).
    pos: usize,
    /// The chunk being filled (`len` bytes in so far).
    cur: Option<Slot>,
    /// Chunks whose copies to the device run, oldest first.
    busy: VecDeque<Slot>,
    spare: Vec<Vec<u8>>,
    pub failed: Option<Error>,
}

impl RecvPipe {
    /// The typed device buffer it fills: (type, count, buffer).
    pub fn typed(&self) -> (std::sync::Arc<crate::datatype::Type>, usize, *mut u8) {
        (self.dst.t.clone(), self.dst.count, self.dst.base)
    }

    /// # Safety
    /// `dst` is a device buffer of its `count` elements (`cap` packed
    /// bytes), writable until the pipe is dropped.
    pub unsafe fn new(dst: Stream, cap: usize) -> RecvPipe {
        let direct = dst
            .t
            .is_contiguous(dst.count)
            .then(|| dst.base.wrapping_offset(dst.t.start()));
        RecvPipe {
            dst,
            direct,
            cap,
            chunk: crate::config::gpu_pipeline().1,
            pos: 0,
            cur: None,
            busy: VecDeque::new(),
            spare: Vec::new(),
            failed: None,
        }
    }

    /// A pinned chunk buffer: a spare one, a new one while fewer than
    /// `SLOTS` are held, else the oldest once its copy is done (waited for).
    fn take_buf(&mut self) -> Vec<u8> {
        // Chunks whose copies are done give their buffers back first.
        while self.busy.front().is_some_and(|s| {
            s.copy
                .as_ref()
                .is_none_or(|c| !matches!(c.done(), Ok(false)))
        }) {
            self.retire();
        }
        if let Some(b) = self.spare.pop() {
            return b;
        }
        if self.busy.len() < SLOTS {
            return crate::core::pool::take_pinned(self.chunk);
        }
        self.retire();
        self.spare.pop().unwrap()
    }

    /// Waits for the oldest chunk's copy and keeps its buffer.
    fn retire(&mut self) {
        let s = self.busy.pop_front().unwrap();
        if let Some(e) = settle(s.copy) {
            self.failed.get_or_insert(e);
        }
        self.spare.push(s.buf);
    }

    /// Starts the copy of the current chunk to the device.
    fn launch(&mut self) {
        let Some(mut s) = self.cur.take() else {
            return;
        };
        if s.len == 0 {
            self.spare.push(s.buf);
            return;
        }
        // The chunk stays in `busy` until its copy is done.
        match self.dst.unpack_queued(&s.buf[..s.len]) {
            Ok(p) => s.copy = Some(p),
            Err(e) => {
                self.failed.get_or_insert(e);
            }
        }
        self.busy.push_back(s);
    }

    /// The free room of the current chunk for bytes from message offset
    /// `off` (empty when `off` is not where the message stands, or lies
    /// past the buffer): the caller writes into it and calls `advance`.
    pub fn room(&mut self, off: usize) -> &mut [u8] {
        if off != self.pos || off >= self.cap {
            return &mut [];
        }
        if self.cur.is_none() {
            let buf = self.take_buf();
            self.cur = Some(Slot {
                off,
                len: 0,
                buf,
                copy: None,
            });
        }
        let limit = self.chunk.min(self.cap - self.cur.as_ref().unwrap().off);
        let s = self.cur.as_mut().unwrap();
        &mut s.buf[s.len..limit]
    }

    /// `n` bytes were written into `room`.
    pub fn advance(&mut self, n: usize) {
        let Some(s) = self.cur.as_mut() else {
            return;
        };
        s.len += n;
        self.pos += n;
        if s.len >= self.chunk.min(self.cap - s.off) {
            self.launch();
        }
    }

    /// Stores bytes [off, off + len) of the message; what lies past the
    /// buffer is dropped (a truncated message).
    pub fn store(&mut self, off: usize, data: &[u8]) {
        let mut data = data;
        let mut off = off;
        while !data.is_empty() {
            let room = self.room(off);
            if room.is_empty() {
                return;
            }
            let n = room.len().min(data.len());
            room[..n].copy_from_slice(&data[..n]);
            self.advance(n);
            data = &data[n..];
            off += n;
        }
    }

    /// The whole message (`n` bytes) arrived in `buf`, pinned and not
    /// stored yet: its first `cap` bytes are copied to the device straight
    /// from it, and the pipe keeps it until that copy ends.
    pub fn adopt(&mut self, buf: Vec<u8>, n: usize) {
        if self.pos != 0 || self.cur.is_some() {
            // Not a fresh message (cannot happen): stored the slow way.
            self.store(0, &buf[..n]);
            crate::core::pool::give(buf);
            return;
        }
        let len = n.min(self.cap);
        self.pos = len;
        self.cur = Some(Slot {
            off: 0,
            len,
            buf,
            copy: None,
        });
        self.launch();
    }

    /// The message is in: starts the last chunk's copy. The returned event
    /// is done when every copy of the message is.
    pub fn finish(&mut self) -> Result<Option<Pending>> {
        self.launch();
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.busy.iter().all(|s| s.copy.is_none()) {
            return Ok(None);
        }
        crate::gpu::mark().map(Some)
    }
}

impl Drop for RecvPipe {
    fn drop(&mut self) {
        for s in self.busy.drain(..).chain(self.cur.take()) {
            // A copy still running reads its buffer: it ends first.
            let _ = settle(s.copy);
            crate::core::pool::give(s.buf);
        }
        for b in self.spare.drain(..) {
            crate::core::pool::give(b);
        }
    }
}
