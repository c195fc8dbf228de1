//! Collective schedules: a small program of stages, each a list of steps
//! (send, receive, reduce, copy, unpack) run in order; the sends and
//! receives of a stage are started together and the next stage begins when
//! they have all completed. The progress engine advances schedules
//! (`core::state::Progress`), so one algorithm serves the blocking call
//! (start, then wait) and the nonblocking one (start, return a request).
//!
//! Steps address memory as `Loc`: user buffers by address, or scratch
//! buffers the schedule owns (so a nonblocking collective outlives its call).

use super::reduce::{apply_packed, Operand};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::core::state::{Progress, ReqId, ReqKind, Request, SendMode, State};
use crate::datatype::Type;
use crate::err;
use crate::op::user::OpKind;
use std::os::raw::c_int;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
pub enum Loc {
    /// An address in user memory.
    User(*mut u8),
    /// (scratch buffer, byte offset).
    Scratch(usize, usize),
}

impl Loc {
    /// What memory this location is: user memory is the collective's
    /// buffers' kind (`user`), scratch buffers are the host's.
    pub fn kind(self, user: crate::gpu::MemKind) -> crate::gpu::MemKind {
        match self {
            Loc::User(_) => user,
            Loc::Scratch(..) => crate::gpu::MemKind::Host,
        }
    }

    pub fn offset(self, off: usize) -> Loc {
        match self {
            Loc::User(p) => Loc::User(p.wrapping_add(off)),
            Loc::Scratch(i, o) => Loc::Scratch(i, o + off),
        }
    }
}

pub enum Step {
    Send {
        peer: usize,
        at: Loc,
        len: usize,
    },
    Recv {
        peer: usize,
        at: Loc,
        len: usize,
    },
    /// dst = src op dst for `count` elements (src is the left operand).
    Reduce {
        src: Loc,
        dst: Loc,
        count: usize,
    },
    Copy {
        src: Loc,
        dst: Loc,
        len: usize,
    },
    /// Scatter packed bytes into a user buffer of a non-contiguous datatype
    /// (or any buffer in device memory, `kind`).
    Unpack {
        src: Loc,
        len: usize,
        ty: Arc<Type>,
        count: usize,
        dst: *mut u8,
        kind: crate::gpu::MemKind,
    },
}

pub struct Sched {
    pub ctx: u32,
    pub tag: i32,
    pub world: Vec<i32>,
    pub rank: usize,
    pub op: Option<OpKind>,
    /// What the op is applied with (set with `op`).
    pub operand: Operand,
    /// What memory the user buffers of this collective are: the entry
    /// points stage device buffers in scratch (packed in, unpacked by
    /// `Step::Unpack`), so the copy and reduce steps are the CPU's.
    pub mem: crate::gpu::MemKind,
    pub stages: Vec<Vec<Step>>,
    pub scratch: Vec<Vec<u8>>,
    /// Device copies queued on the library's stream (device buffers
    /// packed into scratch when the call starts, unpacked by a stage's
    /// `Step::Unpack`): no stage begins, and the schedule does not end,
    /// before this event is done (`gate_device`).
    pub gate: Option<crate::gpu::Pending>,
    cur: usize,
    entered: bool,
    pending: Vec<ReqId>,
}

impl Sched {
    /// The user memory this schedule reads and never writes, as
    /// (address, bytes) ranges: a nonblocking collective's send buffers,
    /// for the buffer check (`abi::bufcheck`).
    pub fn read_only_user(&self) -> Vec<(usize, usize)> {
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        let esize = self.operand.size;
        for step in self.stages.iter().flatten() {
            match *step {
                Step::Send {
                    at: Loc::User(p),
                    len,
                    ..
                } => reads.push((p as usize, len)),
                Step::Recv {
                    at: Loc::User(p),
                    len,
                    ..
                } => writes.push((p as usize, len)),
                Step::Copy { src, dst, len } => {
                    if let Loc::User(p) = src {
                        reads.push((p as usize, len));
                    }
                    if let Loc::User(p) = dst {
                        writes.push((p as usize, len));
                    }
                }
                Step::Reduce { src, dst, count } => {
                    if let Loc::User(p) = src {
                        reads.push((p as usize, count * esize));
                    }
                    if let Loc::User(p) = dst {
                        writes.push((p as usize, count * esize));
                    }
                }
                Step::Unpack {
                    ref ty, count, dst, ..
                } => {
                    let span =
                        (ty.true_ub - ty.true_lb) + ty.extent() * (count as isize - 1).max(0);
                    writes.push((
                        (dst as usize).wrapping_add_signed(ty.true_lb),
                        span.max(0) as usize,
                    ));
                }
                _ => {}
            }
        }
        let overlaps = |a: &(usize, usize), b: &(usize, usize)| a.0 < b.0 + b.1 && b.0 < a.0 + a.1;
        reads.retain(|r| r.1 > 0 && !writes.iter().any(|w| overlaps(r, w)));
        reads.sort_unstable();
        reads.dedup();
        reads
    }

    pub fn new(ctx: u32, tag: i32, world: Vec<i32>, rank: usize) -> Sched {
        Sched {
            ctx,
            tag,
            world,
            rank,
            op: None,
            operand: Operand::default(),
            mem: crate::gpu::MemKind::Host,
            stages: Vec::new(),
            scratch: Vec::new(),
            gate: None,
            cur: 0,
            entered: false,
            pending: Vec::new(),
        }
    }

    /// Adds a scratch buffer; returns its index.
    pub fn buffer(&mut self, data: Vec<u8>) -> usize {
        self.scratch.push(data);
        self.scratch.len() - 1
    }

    /// Adds a scratch buffer of at least `len` bytes whose contents are
    /// undefined (a reused one: no page faults on large sizes); for areas the
    /// schedule writes before it reads them. Returns its index.
    pub fn buffer_reused(&mut self, len: usize) -> usize {
        self.buffer(crate::core::pool::take(len))
    }

    /// Device copies were queued on the library's stream for this schedule
    /// (they read or write its scratch): what follows waits for them.
    pub fn gate_device(&mut self) -> Result<()> {
        // A later event covers the earlier copies (one stream, in order).
        self.gate = Some(crate::gpu::mark()?);
        Ok(())
    }

    /// Starts a new stage and returns it for steps to be pushed.
    pub fn stage(&mut self) -> &mut Vec<Step> {
        self.stages.push(Vec::new());
        self.stages.last_mut().unwrap()
    }

    /// Appends a step to the last stage (opening one if there is none).
    pub fn push(&mut self, s: Step) {
        if self.stages.is_empty() {
            self.stages.push(Vec::new());
        }
        self.stages.last_mut().unwrap().push(s);
    }

    fn ptr(&mut self, l: Loc) -> *mut u8 {
        match l {
            Loc::User(p) => p,
            Loc::Scratch(i, o) => self.scratch[i].as_mut_ptr().wrapping_add(o),
        }
    }

    fn enter(&mut self, st: &mut State) -> Result<()> {
        crate::gpu::host_only(self.mem, "collective copy")?;
        let steps = std::mem::take(&mut self.stages[self.cur]);
        for s in &steps {
            match *s {
                Step::Send { peer, at, len } => {
                    let p = self.ptr(at);
                    let mut req = Request::new(ReqKind::Send, MPI_COMM_WORLD, p, len);
                    req.mem = at.kind(self.mem);
                    let rid = st.reqs.insert(req);
                    // SAFETY: user buffers stay valid until the collective completes
                    // (MPI's rule); scratch buffers live as long as the schedule.
                    unsafe {
                        st.start_send_to(
                            rid,
                            self.ctx,
                            self.rank as i32,
                            self.world[peer] as usize,
                            self.tag,
                            p,
                            len,
                            SendMode::Standard,
                        )?
                    };
                    self.pending.push(rid);
                }
                Step::Recv { peer, at, len } => {
                    let p = self.ptr(at);
                    let mut req = Request::new(ReqKind::Recv, MPI_COMM_WORLD, p, len);
                    req.mem = at.kind(self.mem);
                    let rid = st.reqs.insert(req);
                    st.start_recv_ctx(rid, self.ctx, peer as i32, self.tag);
                    self.pending.push(rid);
                }
                Step::Reduce { src, dst, count } => {
                    let op = self
                        .op
                        .ok_or_else(|| err!(MPI_ERR_INTERN, "reduce step without an op"))?;
                    let size = count * self.operand.size;
                    let (a, b) = (self.ptr(src), self.ptr(dst));
                    // SAFETY: both locations hold `count` elements (built by the algorithm).
                    let (x, y) = unsafe {
                        (
                            std::slice::from_raw_parts(a, size),
                            std::slice::from_raw_parts_mut(b, size),
                        )
                    };
                    apply_packed(&op, &self.operand, count, x, y)?;
                }
                Step::Copy { src, dst, len } => {
                    let (a, b) = (self.ptr(src), self.ptr(dst));
                    if len > 0 && a != b {
                        // SAFETY: both locations hold `len` bytes (built by the algorithm).
                        unsafe {
                            if (a as usize).abs_diff(b as usize) >= len {
                                crate::sys::copy(b, a, len)
                            } else {
                                std::ptr::copy(a, b, len)
                            }
                        };
                    }
                }
                Step::Unpack {
                    src,
                    len,
                    ref ty,
                    count,
                    dst,
                    kind,
                } => {
                    let a = self.ptr(src);
                    // SAFETY: `src` holds `len` packed bytes; `dst` holds `count` elements of `ty`.
                    let inp = unsafe { std::slice::from_raw_parts(a, len) };
                    if kind == crate::gpu::MemKind::Device {
                        // Queued on the library's stream: the schedule ends
                        // when the copies are done (its scratch outlives them).
                        // SAFETY: as above; both stay valid until the gate is done.
                        unsafe { crate::datatype::unpack_queued(ty, count, inp, dst)? };
                        self.gate_device()?;
                    } else {
                        // SAFETY: as above.
                        unsafe { crate::datatype::unpack_mem(ty, count, inp, dst, kind)? };
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for Sched {
    fn drop(&mut self) {
        if let Some(g) = self.gate.take() {
            // Queued copies read or write the scratch: they end first.
            while matches!(g.done(), Ok(false)) {
                std::hint::spin_loop();
            }
        }
        for b in self.scratch.drain(..) {
            crate::core::pool::give(b);
        }
    }
}

impl Progress for Sched {
    fn step(&mut self, st: &mut State) -> Result<bool> {
        loop {
            if let Some(g) = self.gate.as_ref() {
                // Device copies queued before this point end first.
                if !g.done()? {
                    return Ok(false);
                }
                self.gate = None;
            }
            if !self.entered {
                if self.cur == self.stages.len() {
                    return Ok(true);
                }
                self.enter(st)?;
                self.entered = true;
            }
            if !self
                .pending
                .iter()
                .all(|&r| st.reqs.get(r).is_some_and(|q| q.done))
            {
                return Ok(false);
            }
            let mut bad = None;
            for r in self.pending.drain(..) {
                if let Some(q) = st.reqs.remove(r) {
                    if q.status.error != MPI_SUCCESS {
                        bad = Some(q.status.error);
                    }
                }
            }
            if let Some(e) = bad {
                return Err(step_error(e));
            }
            self.cur += 1;
            self.entered = false;
        }
    }
}

/// The error of a collective whose message (or step) failed with class `e`.
fn step_error(e: c_int) -> crate::base::error::Error {
    if e == MPI_ERR_TRUNCATE {
        err!(
            e,
            "a collective message did not fit its buffer (counts or datatypes differ between ranks)"
        )
    } else {
        err!(
            e,
            "a step of the collective failed ({})",
            crate::base::error::class_name(e)
        )
    }
}

/// Starts schedule `s` as request of communicator `comm`; returns the request.
pub fn start(st: &mut State, comm: c_int, s: Sched) -> ReqId {
    let rid = st
        .reqs
        .insert(Request::new(ReqKind::Coll, comm, std::ptr::null_mut(), 0));
    st.scheds.push(crate::core::state::Active {
        rid,
        sched: Box::new(s),
    });
    rid
}

/// Runs `s` to completion (the blocking form of a collective).
pub fn run(comm: c_int, s: Sched) -> Result<()> {
    let rid = crate::core::runtime::with(|st| {
        let rid = start(st, comm, s);
        st.progress();
        Ok(rid)
    })?;
    crate::core::runtime::wait_for(|st| {
        let r = st
            .reqs
            .get(rid)
            .ok_or_else(|| err!(MPI_ERR_INTERN, "collective request vanished"))?;
        if !r.done {
            return Ok(None);
        }
        let e = r.status.error;
        st.reqs.remove(rid);
        if e != MPI_SUCCESS {
            return Err(step_error(e));
        }
        Ok(Some(()))
    })
}
