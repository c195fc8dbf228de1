//! Node-aware schedules: the nodes of a communicator and how a sub-schedule
//! of one group of ranks joins the whole.
//!
//! Each algorithm is one schedule builder (`coll::sched`) that the
//! blocking, nonblocking and persistent entry points all run; `select`
//! says which one a call takes.

use super::sched::{Sched, Step};

/// Node of each member (world ranks in communicator order), or None when
/// all are on one node. Ranks are on the nodes of their hosts (the
/// transport's node map: ranks on different hosts, or with
/// OXMPI_TEST_UCX=1 every rank its own node) or, for tests, as
/// OXMPI_TEST_RANKS_PER_NODE=k says: world ranks [0, k) on node 0, [k, 2k)
/// on node 1, and so on.
pub fn nodes(world: &[i32]) -> Option<Vec<usize>> {
    static PER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let per = *PER.get_or_init(|| {
        crate::config::get_str("OXMPI_TEST_RANKS_PER_NODE")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    let ids: Vec<usize> = if per > 0 {
        world.iter().map(|&w| w as usize / per).collect()
    } else {
        let map = crate::transport::node_map()?;
        world.iter().map(|&w| map[w as usize] as usize).collect()
    };
    (ids.iter().any(|&i| i != ids[0])).then_some(ids)
}

/// Whether some node of `ids` (from `nodes`) holds more than one member.
pub fn groups(ids: &[usize]) -> bool {
    let mut seen = std::collections::HashSet::new();
    ids.iter().any(|i| !seen.insert(*i))
}

/// The communicator's node structure: members of my node (communicator
/// ranks, ascending) and one representative per node (the first member, or
/// `root` for the root's node), in node order of first appearance.
pub struct Nodes {
    pub local: Vec<usize>,
    pub reps: Vec<usize>,
}

impl Nodes {
    pub fn new(ids: &[usize], r: usize, root: usize) -> Nodes {
        let local = (0..ids.len()).filter(|&i| ids[i] == ids[r]).collect();
        let mut seen: Vec<usize> = Vec::new();
        let mut reps = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            if !seen.contains(&id) {
                seen.push(id);
                reps.push(if ids[root] == id { root } else { i });
            }
        }
        Nodes { local, reps }
    }

    /// My node's representative.
    pub fn my_rep(&self, ids: &[usize], r: usize) -> usize {
        *self.reps.iter().find(|&&x| ids[x] == ids[r]).unwrap()
    }
}

/// Appends the stages of `sub` (from `group_sched`, built by a builder for
/// a group of ranks numbered 0..g.len()) to `s`: group ranks become
/// communicator ranks through `g`; the scratch buffers the group schedule
/// added become `s`'s under the same indices.
pub fn append_group(s: &mut Sched, mut sub: Sched, g: &[usize]) {
    let base = s.scratch.len();
    s.scratch.extend(sub.scratch.drain(base..));
    for stage in std::mem::take(&mut sub.stages) {
        let st = s.stage();
        for step in stage {
            st.push(match step {
                Step::Send { peer, at, len } => Step::Send {
                    peer: g[peer],
                    at,
                    len,
                },
                Step::Recv { peer, at, len } => Step::Recv {
                    peer: g[peer],
                    at,
                    len,
                },
                other => other,
            });
        }
    }
}

/// A schedule for a group's builder: it shares `s`'s scratch numbering
/// (placeholders for `s`'s buffers), so locations of `s` stay valid in it.
pub(super) fn group_sched(s: &Sched, me: usize) -> Sched {
    let mut g = Sched::new(s.ctx, s.tag, Vec::new(), me);
    g.scratch = vec![Vec::new(); s.scratch.len()];
    g
}

pub(super) fn index_in(g: &[usize], r: usize) -> Option<usize> {
    g.iter().position(|&x| x == r)
}

/// Whether every node's members are consecutive communicator ranks (what
/// the hierarchical allgather needs to move a node's blocks as one span).
pub fn nodes_consecutive(ids: &[usize]) -> bool {
    (1..ids.len()).all(|i| ids[i] == ids[i - 1] || !ids[..i].contains(&ids[i]))
}
