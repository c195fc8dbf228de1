//! Collectives on intercommunicators, as schedules over both groups.
//!
//! Both groups number every process of the two groups alike: the group
//! holding the lower world rank first, then the other (`Inter::all`). A
//! schedule over that merged numbering sends and receives with one context
//! (the intercommunicator's collective context) and one tag (both groups
//! count the collectives on the intercommunicator alike), and no two
//! processes share a number, so traffic within a group and between the
//! groups never mixes up. Steps within one group come from the
//! intracommunicator builders, renumbered by `on_group`.
//!
//! | call | schedule |
//! |---|---|
//! | barrier | dissemination over both groups |
//! | bcast | root → remote rank 0, binomial tree in the remote group |
//! | reduce | binomial reduce in the sending group to its rank 0 → root |
//! | allreduce | reduce in each group to rank 0, the two ranks 0 swap, bcast in each group |
//! | gather(v), scatter(v) | linear between the root and the remote group |
//! | allgather(v), alltoall(v,w) | every process with every remote process |
//! | reduce_scatter(_block) | reduce in each group to rank 0, the ranks 0 swap, scatterv in each group |
//!
//! Scan and exscan are not defined on intercommunicators (MPI_ERR_COMM).
//! The abi layer converts each call's buffers into schedule locations
//! (packing what is not contiguous) and calls the builders here with them.

use super::basic::{self, View};
use super::sched::{Loc, Sched, Step};
use super::{allreduce, barrier as barrier_algos, bcast as bcast_algos, gather as gather_algos};
use crate::base::consts::*;
use crate::base::error::Result;
use crate::core::runtime::with;
use crate::err;
use std::os::raw::c_int;

/// An intercommunicator as one collective call sees it.
pub struct Inter {
    /// Both groups in the merged numbering.
    pub all: View,
    /// First merged index of the local and of the remote group.
    pub lbase: usize,
    pub rbase: usize,
    /// Sizes of the local and remote groups; this process's local rank.
    pub nl: usize,
    pub nr: usize,
    pub lr: usize,
}

impl Inter {
    /// An empty schedule over both groups.
    pub fn sched(&self) -> Sched {
        basic::sched(&self.all)
    }

    /// Merged index of remote rank `j`.
    pub fn remote(&self, j: usize) -> usize {
        self.rbase + j
    }

    /// The merged indices of the remote group.
    pub fn remote_peers(&self) -> Vec<i32> {
        (0..self.nr).map(|j| self.remote(j) as i32).collect()
    }
}

/// The intercommunicator view of `comm` for its next collective call, or
/// None for an intracommunicator (which then takes the usual path).
pub fn view(comm: c_int) -> Result<Option<Inter>> {
    with(|st| {
        let c = st.comm_mut(comm)?;
        let Some((world, lbase, rbase)) = c.both_groups() else {
            return Ok(None);
        };
        let tag = c.next_coll_tag();
        let (nl, lr) = (c.size as usize, c.rank as usize);
        let nr = world.len() - nl;
        Ok(Some(Inter {
            all: View {
                ctx: c.ctx + 1,
                size: world.len(),
                world,
                rank: lbase + lr,
                tag,
                comm,
            },
            lbase,
            rbase,
            nl,
            nr,
            lr,
        }))
    })
}

/// Runs an intracommunicator builder on the local group: the peers of the
/// sends and receives it adds (local ranks) become merged indices.
pub fn on_group(s: &mut Sched, base: usize, build: impl FnOnce(&mut Sched)) {
    let stage = s.stages.len().saturating_sub(1);
    let from = s.stages.last().map_or(0, |st| st.len());
    build(s);
    for (k, st) in s.stages.iter_mut().enumerate().skip(stage) {
        let skip = if k == stage { from } else { 0 };
        for step in st.iter_mut().skip(skip) {
            match step {
                Step::Send { peer, .. } | Step::Recv { peer, .. } => *peer += base,
                _ => {}
            }
        }
    }
}

/// What a process is in a rooted call on an intercommunicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The root (`MPI_ROOT`).
    Root,
    /// Another process of the root's group (`MPI_PROC_NULL`): takes no part.
    Idle,
    /// A process of the other group; the root is this remote rank.
    Remote(usize),
}

/// The role the root argument gives: `MPI_ROOT`, `MPI_PROC_NULL`, or a rank
/// of the remote group (checked).
pub fn root_role(v: &Inter, root: c_int) -> Result<Role> {
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        r if r >= 0 && (r as usize) < v.nr => Ok(Role::Remote(r as usize)),
        r => Err(err!(
            MPI_ERR_ROOT,
            "root={r} must be MPI_ROOT, MPI_PROC_NULL or a rank of the remote group (size {}) on an intercommunicator",
            v.nr
        )),
    }
}

/// Block j of `at` (offset and length `bl[j]`) to remote rank j (`send`)
/// or from it, for every j, into stage `st`.
pub fn per_remote(st: &mut Vec<Step>, v: &Inter, at: Loc, bl: &[(usize, usize)], send: bool) {
    for (j, &(off, len)) in bl.iter().enumerate() {
        let (peer, at) = (v.remote(j), at.offset(off));
        st.push(if send {
            Step::Send { peer, at, len }
        } else {
            Step::Recv { peer, at, len }
        });
    }
}

pub fn barrier(v: &Inter) -> Sched {
    let mut s = v.sched();
    barrier_algos::b_barrier(&mut s, v.all.size, v.all.rank);
    s
}

/// Bcast at the root: its `len` bytes at `b` to remote rank 0.
pub fn bcast_from_root(s: &mut Sched, v: &Inter, b: Loc, len: usize) {
    s.stage().push(Step::Send {
        peer: v.remote(0),
        at: b,
        len,
    });
}

/// Bcast in the other group: local rank 0 receives from remote rank
/// `root`, then a binomial tree in the group.
pub fn bcast_to_group(s: &mut Sched, v: &Inter, root: usize, b: Loc, len: usize) {
    if v.lr == 0 {
        s.stage().push(Step::Recv {
            peer: v.remote(root),
            at: b,
            len,
        });
    }
    on_group(s, v.lbase, |s| {
        bcast_algos::b_bcast(s, v.nl, v.lr, b, len, 0)
    });
}

/// Reduces this group's `len` bytes (`ne` elements) from `src` to local
/// rank 0, into a scratch accumulator it returns.
pub fn reduce_group(
    s: &mut Sched,
    v: &Inter,
    src: Loc,
    len: usize,
    ne: usize,
    commutative: bool,
) -> Loc {
    let acc = basic::scratch_copy(s, src, len);
    let tmp = Loc::Scratch(s.buffer_reused(len), 0);
    on_group(s, v.lbase, |s| {
        allreduce::b_reduce(s, v.nl, v.lr, acc, tmp, len, ne, 0, commutative)
    });
    acc
}

/// Reduce at the root: the result from remote rank 0 into `b`.
pub fn reduce_at_root(s: &mut Sched, v: &Inter, b: Loc, len: usize) {
    s.stage().push(Step::Recv {
        peer: v.remote(0),
        at: b,
        len,
    });
}

/// Reduce in the other group, after `reduce_group`: local rank 0 sends the
/// accumulator to remote rank `root`.
pub fn reduce_to_root(s: &mut Sched, v: &Inter, root: usize, acc: Loc, len: usize) {
    if v.lr == 0 {
        s.stage().push(Step::Send {
            peer: v.remote(root),
            at: acc,
            len,
        });
    }
}

/// Allreduce after `reduce_group`: the two ranks 0 swap their groups'
/// results (the remote one into `res`), then a bcast in each group.
pub fn allreduce_swap(s: &mut Sched, v: &Inter, acc: Loc, len: usize, res: Loc, rlen: usize) {
    if v.lr == 0 {
        let st = s.stage();
        st.push(Step::Recv {
            peer: v.remote(0),
            at: res,
            len: rlen,
        });
        st.push(Step::Send {
            peer: v.remote(0),
            at: acc,
            len,
        });
    }
    on_group(s, v.lbase, |s| {
        bcast_algos::b_bcast(s, v.nl, v.lr, res, rlen, 0)
    });
}

/// Gather or scatter in the other group: this process's `len` bytes at
/// `at` to remote rank `root` (`send`) or from it.
pub fn with_root(s: &mut Sched, v: &Inter, root: usize, at: Loc, len: usize, send: bool) {
    let peer = v.remote(root);
    s.stage().push(if send {
        Step::Send { peer, at, len }
    } else {
        Step::Recv { peer, at, len }
    });
}

/// Reduce_scatter after `reduce_group` of `len` bytes: the ranks 0 swap
/// (the remote group's reduced `end` bytes into `got`), then each group
/// scatters `got` by `bl` (one block per local rank), this process's block
/// into `out`.
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter_swap(
    s: &mut Sched,
    v: &Inter,
    acc: Loc,
    len: usize,
    got: Loc,
    end: usize,
    bl: &[(usize, usize)],
    out: (Loc, usize),
) {
    if v.lr == 0 {
        let st = s.stage();
        st.push(Step::Recv {
            peer: v.remote(0),
            at: got,
            len: end,
        });
        st.push(Step::Send {
            peer: v.remote(0),
            at: acc,
            len,
        });
    }
    on_group(s, v.lbase, |s| {
        gather_algos::b_scatterv(s, v.nl, v.lr, got, bl, Some(out), 0)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `on_group` renumbers only the steps the builder added, in the stage
    /// that was open and in the ones it started.
    #[test]
    fn on_group_renumbers_only_new_steps() {
        let mut s = Sched::new(1, -1, vec![10, 11, 12, 13, 14], 3);
        let at = Loc::User(std::ptr::null_mut());
        s.stage().push(Step::Send {
            peer: 0,
            at,
            len: 0,
        });
        on_group(&mut s, 3, |s| {
            s.push(Step::Recv {
                peer: 1,
                at,
                len: 0,
            });
            s.stage().push(Step::Send {
                peer: 0,
                at,
                len: 0,
            });
        });
        let peers: Vec<Vec<usize>> = s
            .stages
            .iter()
            .map(|st| {
                st.iter()
                    .map(|x| match x {
                        Step::Send { peer, .. } | Step::Recv { peer, .. } => *peer,
                        _ => usize::MAX,
                    })
                    .collect()
            })
            .collect();
        assert_eq!(peers, vec![vec![0, 4], vec![3]]);
    }
}
