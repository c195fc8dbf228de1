//! Collective selection as data: for each collective family the algorithms
//! it has, what each needs of a call (`needs`), and the rule that prefers
//! one from the call's shape (`rule`). `OXMPI_<FAMILY>` forces an
//! algorithm; a forced one whose needs the call does not meet gives way to
//! the rule's choice. The node-area forms ("shm_cma", "shm") are listed
//! last with `AREA`: only the blocking calls' shared-memory path offers
//! them (their rules, which weigh the area's limits, sit with that path);
//! schedules choose among the others. `mpirun --tunables` prints its
//! collective lines from these tables (`tunable_lines`).
//!
//! Calls `config` only, and `profile` to count the choices for the tools
//! interface (`MPI_T`). The algorithms themselves are in `basic`, `algos`
//! and `shm`; the callers describe the call (`Call`) and dispatch on the
//! name `select` returns.

/// What an algorithm needs of a call (bits).
///
/// cbindgen:ignore
pub mod need {
    /// A commutative op.
    pub const COMMUTATIVE: u16 = 1;
    /// A power-of-two number of ranks.
    pub const POW2: u16 = 2;
    /// Equal blocks on every rank (known alike on every rank).
    pub const EQUAL_BLOCKS: u16 = 4;
    /// The blocks back to back in rank order.
    pub const DENSE: u16 = 8;
    /// Ranks on several nodes, consecutive per node where it matters.
    pub const NODES: u16 = 16;
    /// At least one element and two ranks (the vector is cut in chunks).
    pub const CHUNKS: u16 = 32;
    /// Every rank of the communicator on this node: a blocking call through
    /// the node's area.
    pub const AREA: u16 = 64;
    /// Every local rank can read the others' memory (single copy), and a
    /// builtin op where there is one.
    pub const CMA: u16 = 128;
}

/// One algorithm of a family.
pub struct Algo {
    pub name: &'static str,
    pub needs: u16,
    /// When the rule prefers it and what it does (for `--tunables`).
    pub what: &'static str,
}

/// The shape of one call, alike on every rank of the communicator.
#[derive(Clone, Copy, Debug, Default)]
pub struct Call {
    pub size: usize,
    /// Bytes the rule weighs (the family says which: the message, a
    /// rank's block, or all blocks).
    pub bytes: usize,
    /// Elements of the reduction (0 where there is none).
    pub elems: usize,
    pub commutative: bool,
    /// Equal blocks on every rank: their size.
    pub block: Option<usize>,
    pub dense: bool,
    /// Several nodes (in the layout the family's hierarchical form needs).
    pub nodes: bool,
    /// Some node holds more than one member: the hierarchical forms save
    /// inter-node messages only then (with one rank per node they are the
    /// flat algorithm plus empty stages: 0.3-0.5 µs more per 8-byte
    /// allreduce, bcast and allgather at 2 pretend hosts x 1 rank, 3 of 3
    /// alternated launches, docs/performance.md, across hosts).
    pub node_groups: bool,
    /// The members are on several nodes (in any layout): messages cross
    /// the inter-node link, and the family's cost model (`Family::model`)
    /// chooses among the flat algorithms where it has one.
    pub across: bool,
}

impl Call {
    /// Whether the call meets `needs` (the bits a schedule can check).
    pub fn meets(&self, needs: u16) -> bool {
        let has = |b: u16| needs & b == 0;
        (has(need::COMMUTATIVE) || self.commutative)
            && (has(need::POW2) || self.size.is_power_of_two())
            && (has(need::EQUAL_BLOCKS) || self.block.is_some())
            && (has(need::DENSE) || self.dense)
            && (has(need::NODES) || self.nodes)
            && (has(need::CHUNKS) || (self.elems > 0 && self.size > 1))
            && has(need::AREA)
            && has(need::CMA)
    }
}

/// A collective family: its algorithms and the rule among the schedules.
pub struct Family {
    /// Lower-case name; `OXMPI_<NAME>` forces an algorithm.
    pub name: &'static str,
    /// What the variable covers (for `--tunables`).
    pub covers: &'static str,
    pub algos: &'static [Algo],
    pub rule: fn(&Call) -> &'static str,
    /// The modelled time (µs) of an algorithm for a call whose messages
    /// cross the inter-node link (`Wire`), None for one without a model:
    /// `across` picks the cheapest. The rules above were measured over
    /// shared memory, whose copies cost little next to a network's
    /// bandwidth; across nodes the model weighs both.
    pub model: Option<Model>,
}

/// A family's cost model: the time (µs) of the named algorithm for a call
/// over the link, None where it has no model for it.
pub type Model = fn(&str, &Call, Wire) -> Option<f64>;

/// The inter-node link as the cost models weigh it: each message costs
/// `alpha` µs, each byte 1/`beta` µs (Hockney's model). From
/// OXMPI_NET_LATENCY_US and OXMPI_NET_BANDWIDTH; the defaults are the
/// pretend hosts' TCP here (docs/performance.md, across hosts). Only the
/// product alpha * beta (the bytes a message's latency is worth) moves a
/// choice, and it is similar on common fabrics (about 17 KB here, 18 KB
/// for 1.5 µs and 12 GB/s).
#[derive(Clone, Copy, Debug)]
pub struct Wire {
    pub alpha: f64,
    pub beta: f64,
}

impl Wire {
    /// The tunables' values, read once (alike on every rank: mpirun passes
    /// the environment to all).
    pub fn get() -> Wire {
        static W: std::sync::OnceLock<Wire> = std::sync::OnceLock::new();
        *W.get_or_init(|| {
            let (a, b) = crate::config::net_cost();
            Wire {
                alpha: a.max(0.01),
                beta: b.max(1.0),
            }
        })
    }

    /// One message of `m` bytes.
    fn msg(&self, m: f64) -> f64 {
        self.alpha + m / self.beta
    }
}

/// ceil(log2 n).
fn log2c(n: usize) -> f64 {
    (usize::BITS - n.max(1).saturating_sub(1).leading_zeros()) as f64
}

/// The schedule algorithm the family's model finds cheapest for `call`
/// over `w` (among those the call meets, first in the table on a tie), or
/// the rule's choice where the family has no model.
pub fn across(family: &Family, call: &Call, w: Wire) -> &'static str {
    let Some(model) = family.model else {
        return (family.rule)(call);
    };
    let mut best: Option<(&'static str, f64)> = None;
    for a in family.schedules() {
        if a.needs & NODES != 0 || !call.meets(a.needs) {
            continue;
        }
        if let Some(t) = model(a.name, call, w) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((a.name, t));
            }
        }
    }
    best.map_or_else(|| (family.rule)(call), |(n, _)| n)
}

impl Family {
    /// The algorithm named `name`, if the family has it.
    pub fn algo(&self, name: &str) -> Option<&'static Algo> {
        self.algos.iter().find(|a| a.name == name)
    }

    /// The algorithms a schedule can run (all but the node-area forms).
    pub fn schedules(&self) -> impl Iterator<Item = &'static Algo> {
        self.algos.iter().filter(|a| a.needs & need::AREA == 0)
    }
}

/// The algorithm forced for `family` by OXMPI_<FAMILY>, if any (read once
/// per process: the variables are set before MPI_Init).
pub fn forced(family: &Family) -> Option<&'static str> {
    static FORCED: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    let f = FORCED.get_or_init(|| {
        FAMILIES
            .iter()
            .filter_map(|fam| {
                let v = crate::config::get_str(&format!("OXMPI_{}", fam.name.to_uppercase()))?;
                Some((fam.name, v))
            })
            .collect()
    });
    // Usually empty, so a call costs one length test.
    if f.is_empty() {
        return None;
    }
    let v = &f.iter().find(|(k, _)| *k == family.name)?.1;
    family.algo(v).map(|a| a.name)
}

/// The schedule algorithm for `call`: the forced one where the call meets
/// its needs, else the rule's.
pub fn select(family: &Family, call: &Call) -> &'static str {
    let pick = choose(family, call);
    crate::profile::algo_chosen(family.name, pick);
    pick
}

fn choose(family: &Family, call: &Call) -> &'static str {
    if let Some(a) = forced(family).and_then(|n| family.algo(n)) {
        if call.meets(a.needs) {
            return a.name;
        }
    }
    let pick = (family.rule)(call);
    if call.across && pick != "hierarchical" {
        return across(family, call, Wire::get());
    }
    pick
}

/// Which node-area form a blocking call takes, if any: a forced one (that
/// the call can serve: `copies` for "shm", `single` for "shm_cma"),
/// else `default`, the area rule's choice.
pub fn area(
    family: &Family,
    default: Option<&'static str>,
    copies: bool,
    single: bool,
) -> Option<&'static str> {
    let ok = |n: &str| (n == "shm" && copies) || (n == "shm_cma" && single);
    let form = match forced(family) {
        Some(n) if family.algo(n).is_some_and(|a| a.needs & need::AREA != 0) => ok(n).then_some(n),
        Some(_) => None,
        None => default.filter(|n| ok(n)),
    };
    if let Some(n) = form {
        crate::profile::algo_chosen(family.name, n);
    }
    form
}

use need::*;

const KI: usize = 1 << 10;

#[rustfmt::skip]
pub static BARRIER: Family = Family {
    name: "barrier",
    covers: "barrier",
    algos: &[
        Algo { name: "dissemination", needs: 0, what: "" },
        Algo { name: "shm", needs: AREA, what: "all ranks of the communicator on this node" },
    ],
    rule: |_| "dissemination",
    model: None,
};

#[rustfmt::skip]
pub static BCAST: Family = Family {
    name: "bcast",
    covers: "bcast",
    algos: &[
        Algo { name: "binomial", needs: 0, what: "< 128 KiB or 2 ranks" },
        Algo { name: "scatter_allgather", needs: 0, what: "more than 8 ranks" },
        Algo { name: "pipeline", needs: 0, what: "chain, 64 KiB chunks" },
        Algo { name: "hierarchical", needs: NODES, what: "several nodes; chosen when some node has more than one rank" },
        Algo { name: "linear", needs: 0, what: "3-8 ranks" },
        Algo { name: "shm_cma", needs: AREA | CMA, what: "all ranks on this node and CMA works; above 64 KiB at 2 ranks, 128 KiB at more, up to 4 MiB: the readers read most of the root's buffer while the root writes the rest of theirs" },
        Algo { name: "shm", needs: AREA, what: "all ranks on this node, <= 256 KiB, in 16 KiB pieces above 128 KiB" },
    ],
    rule: |c| {
        if c.nodes && c.node_groups {
            "hierarchical"
        } else if c.bytes >= 128 * KI && c.size > 8 {
            "scatter_allgather"
        } else if c.bytes >= 128 * KI && c.size > 2 {
            // Up to 8 ranks every rank copying from the root at once beat
            // the scatter and ring (docs/performance.md, third round).
            "linear"
        } else {
            "binomial"
        }
    },
    model: Some(|a, c, w| {
        let (n, m) = (c.size.max(1) as f64, c.bytes as f64);
        let p = log2c(c.size);
        Some(match a {
            "binomial" => p * w.msg(m),
            // A binomial scatter, then a ring allgather of the pieces.
            "scatter_allgather" => (p + n - 1.0) * w.alpha + 2.0 * (n - 1.0) / n * m / w.beta,
            // A chain of 64 KiB pieces: the last rank has the first piece
            // after n - 1 hops, then one more per piece.
            "pipeline" => {
                let k = (m / PIECE as f64).ceil().max(1.0);
                (n - 2.0 + k) * w.msg(m.min(PIECE as f64))
            }
            // The root's link carries every copy.
            "linear" if c.size <= 8 => w.alpha + (n - 1.0) * m / w.beta,
            _ => return None,
        })
    }),
};

/// Bytes of a vector a rank reduces per µs (a memory-bound pass reading
/// two operands and writing one), for the allreduce model.
const REDUCE_RATE: f64 = 4000.0;

/// The bcast pipeline's piece (bytes).
///
/// cbindgen:ignore
pub const PIECE: usize = 64 << 10;

#[rustfmt::skip]
pub static REDUCE: Family = Family {
    name: "reduce",
    covers: "reduce",
    algos: &[
        Algo { name: "binomial", needs: 0, what: "" },
        Algo { name: "shm_cma", needs: AREA | CMA, what: "all ranks on this node, CMA works, a builtin op, above 128 KiB: every rank reduces a slice out of the others' buffers and writes it into the root's" },
        Algo { name: "shm", needs: AREA, what: "all ranks on this node, <= 128 KiB" },
    ],
    rule: |_| "binomial",
    model: None,
};

#[rustfmt::skip]
pub static ALLREDUCE: Family = Family {
    name: "allreduce",
    covers: "allreduce",
    algos: &[
        Algo { name: "recursive_doubling", needs: 0, what: "< 16 KiB, or a non-commutative op" },
        Algo { name: "ring", needs: COMMUTATIVE | CHUNKS, what: "2 ranks from 64 KiB, any from 1 MiB" },
        Algo { name: "rabenseifner", needs: COMMUTATIVE | CHUNKS, what: "< 1 MiB" },
        Algo { name: "hierarchical", needs: COMMUTATIVE | NODES, what: "several nodes; chosen when some node has more than one rank" },
        Algo { name: "linear", needs: COMMUTATIVE | CHUNKS, what: "3-8 ranks, >= 64 KiB" },
        Algo { name: "shm_cma", needs: AREA | CMA, what: "all ranks on this node, CMA works, a builtin op, above 128 KiB: every rank reduces a slice out of the others' buffers and writes it into theirs" },
        Algo { name: "shm", needs: AREA, what: "all ranks on this node, <= 128 KiB" },
    ],
    rule: |c| {
        if c.commutative && c.nodes && c.node_groups {
            "hierarchical"
        } else if !c.commutative || c.bytes < 16 * KI || c.elems < c.size {
            "recursive_doubling"
        } else if (3..=8).contains(&c.size) && c.bytes >= 64 * KI {
            // Two exchange stages instead of 2(n-1) dependent steps
            // (docs/performance.md, third round).
            "linear"
        } else if c.size == 2 && c.bytes >= 64 * KI {
            // One exchange each way, reading the input in place (no copy
            // first): 0.56-0.62 of Rabenseifner at 128-512 KiB.
            "ring"
        } else if c.bytes < 1 << 20 {
            "rabenseifner"
        } else {
            "ring"
        }
    },
    model: Some(|a, c, w| {
        let (n, m) = (c.size.max(1) as f64, c.bytes as f64);
        // A rank count not a power of two folds the extra ranks in and
        // out first: two more whole-vector steps.
        let fold = if c.size.is_power_of_two() { 0.0 } else { 2.0 * w.msg(m) };
        let p = (usize::BITS - 1 - c.size.max(1).leading_zeros()) as f64;
        // Reducing: every byte reduced costs 1/REDUCE_RATE µs as well.
        let g = 1.0 / REDUCE_RATE;
        let split = (n - 1.0) / n * m;
        Some(match a {
            "recursive_doubling" => fold + p * (w.msg(m) + m * g),
            "rabenseifner" => fold + 2.0 * p * w.alpha + 2.0 * split / w.beta + split * g,
            "ring" => 2.0 * (n - 1.0) * w.alpha + 2.0 * split / w.beta + split * g,
            // A reduce-scatter and an allgather, each every exchange at once.
            "linear" if c.size <= 8 => 2.0 * w.alpha + 2.0 * split / w.beta + split * g,
            _ => return None,
        })
    }),
};

#[rustfmt::skip]
pub static ALLGATHER: Family = Family {
    name: "allgather",
    covers: "allgather(v)",
    algos: &[
        Algo { name: "ring", needs: 0, what: "more than 8 ranks from 64 KiB in all, and what nothing else takes" },
        Algo { name: "recursive_doubling", needs: POW2 | DENSE, what: "power-of-two ranks, < 64 KiB" },
        Algo { name: "bruck", needs: EQUAL_BLOCKS, what: "equal blocks, < 64 KiB" },
        Algo { name: "hierarchical", needs: NODES | DENSE, what: "several nodes; chosen when some node has more than one rank" },
        Algo { name: "linear", needs: 0, what: "up to 8 ranks, >= 64 KiB in all" },
        Algo { name: "shm_cma", needs: AREA | CMA, what: "MPI_Allgather, all ranks on this node and CMA works, above that: single copy between the ranks' buffers, see OXMPI_ALLGATHER_PUSH" },
        Algo { name: "shm", needs: AREA, what: "MPI_Allgather, all ranks on this node, <= 8 KiB per rank, 32 KiB when ranks outnumber cores" },
    ],
    rule: |c| {
        if c.nodes && c.node_groups {
            "hierarchical"
        } else if c.bytes >= 64 * KI && c.size <= 8 {
            "linear"
        } else if c.bytes >= 64 * KI {
            "ring"
        } else if c.size.is_power_of_two() && c.dense {
            "recursive_doubling"
        } else if c.block.is_some() {
            "bruck"
        } else {
            "ring"
        }
    },
    // `bytes` is every block together.
    model: Some(|a, c, w| {
        let (n, m) = (c.size.max(1) as f64, c.bytes as f64);
        let rest = (n - 1.0) / n * m / w.beta;
        Some(match a {
            "ring" => (n - 1.0) * w.alpha + rest,
            "recursive_doubling" | "bruck" => log2c(c.size) * w.alpha + rest,
            "linear" if c.size <= 8 => w.alpha + rest,
            _ => return None,
        })
    }),
};

#[rustfmt::skip]
pub static ALLTOALL: Family = Family {
    name: "alltoall",
    covers: "alltoall(v)",
    algos: &[
        Algo { name: "pairwise", needs: 0, what: "more than 8 ranks" },
        Algo { name: "bruck", needs: EQUAL_BLOCKS, what: "equal blocks <= 256 B, > 2 ranks" },
        Algo { name: "linear", needs: 0, what: "all exchanges at once, up to 8 ranks" },
        Algo { name: "shm_cma", needs: AREA | CMA, what: "MPI_Alltoall not in place, all ranks on this node and CMA works, above that: single copy out of the others' buffers" },
        Algo { name: "shm", needs: AREA, what: "MPI_Alltoall, all ranks on this node, <= 16 KiB in all, 64 KiB when ranks outnumber cores" },
    ],
    rule: |c| match c.block {
        Some(b) if b <= 256 && c.size > 2 => "bruck",
        // Up to 8 ranks all exchanges at once beat the pairwise steps
        // (docs/performance.md, third round).
        _ if c.size <= 8 => "linear",
        _ => "pairwise",
    },
    // Equal blocks only (`block`): a v-form's blocks are not alike on
    // every rank, so it keeps the rule.
    model: Some(|a, c, w| {
        let b = c.block? as f64;
        let n = c.size.max(1) as f64;
        Some(match a {
            "pairwise" => (n - 1.0) * w.msg(b),
            // Each of the log2(n) steps moves about half of the blocks.
            "bruck" => log2c(c.size) * w.msg(n / 2.0 * b),
            "linear" if c.size <= 8 => w.alpha + (n - 1.0) * b / w.beta,
            _ => return None,
        })
    }),
};

#[rustfmt::skip]
pub static REDUCE_SCATTER: Family = Family {
    name: "reduce_scatter",
    covers: "reduce_scatter(_block)",
    algos: &[
        Algo { name: "reduce_scatterv", needs: 0, what: "a non-commutative op: reduce, then scatter" },
        Algo { name: "ring", needs: COMMUTATIVE | CHUNKS, what: ">= 512 KiB in all" },
        Algo { name: "pairwise", needs: COMMUTATIVE | CHUNKS, what: "< 512 KiB" },
        Algo { name: "recursive_halving", needs: COMMUTATIVE | CHUNKS | POW2, what: "power-of-two ranks, < 512 KiB" },
        Algo { name: "linear", needs: COMMUTATIVE | CHUNKS, what: "3-8 ranks, >= 64 KiB in all" },
        Algo { name: "shm_cma", needs: AREA | CMA, what: "MPI_Reduce_scatter_block, all ranks on this node, CMA works, a builtin op, above that: every rank reduces its block out of the others' buffers" },
        Algo { name: "shm", needs: AREA, what: "MPI_Reduce_scatter_block, all ranks on this node, <= 128 KiB in all" },
    ],
    rule: |c| {
        if !c.commutative || c.elems == 0 {
            "reduce_scatterv"
        } else if (3..=8).contains(&c.size) && c.bytes >= 64 * KI {
            "linear"
        } else if c.bytes >= 512 * KI {
            "ring"
        } else if c.size.is_power_of_two() {
            "recursive_halving"
        } else {
            "pairwise"
        }
    },
    model: None,
};

// Gather and scatter: only the root knows the whole layout, so the choice
// cannot depend on it; the binomial tree runs where the call has equal
// blocks (MPI_Gather / MPI_Scatter), which the schedule checks itself.
#[rustfmt::skip]
pub static GATHER: Family = Family {
    name: "gather",
    covers: "gather",
    algos: &[
        Algo { name: "linear", needs: 0, what: "" },
        Algo { name: "binomial", needs: 0, what: "MPI_Gather (equal blocks)" },
    ],
    rule: |_| "linear",
    model: None,
};

#[rustfmt::skip]
pub static SCATTER: Family = Family {
    name: "scatter",
    covers: "scatter",
    algos: &[
        Algo { name: "linear", needs: 0, what: "" },
        Algo { name: "binomial", needs: 0, what: "MPI_Scatter (equal blocks)" },
    ],
    rule: |_| "linear",
    model: None,
};

#[rustfmt::skip]
pub static SCAN: Family = Family {
    name: "scan",
    covers: "scan/exscan",
    algos: &[
        Algo { name: "linear", needs: 0, what: "2 ranks" },
        Algo { name: "recursive_doubling", needs: 0, what: "more ranks" },
    ],
    rule: |c| if c.size > 2 { "recursive_doubling" } else { "linear" },
    model: None,
};

/// Every family, in `--tunables` order.
#[rustfmt::skip]
pub static FAMILIES: &[&Family] = &[
    &BARRIER,
    &BCAST,
    &REDUCE,
    &ALLREDUCE,
    &ALLGATHER,
    &ALLTOALL,
    &REDUCE_SCATTER,
    &GATHER,
    &SCATTER,
    &SCAN,
];

/// The `--tunables` lines of the collective variables: (variable, default,
/// meaning), the algorithms with the node-area forms first.
pub fn tunable_lines() -> Vec<(String, String, String)> {
    FAMILIES
        .iter()
        .map(|f| {
            let mut order: Vec<&Algo> = f.algos.iter().filter(|a| a.needs & AREA != 0).collect();
            order.extend(f.schedules());
            let list: Vec<String> = order
                .iter()
                .map(|a| {
                    if a.what.is_empty() {
                        a.name.to_string()
                    } else {
                        format!("{} ({})", a.name, a.what)
                    }
                })
                .collect();
            (
                format!("OXMPI_{}", f.name.to_uppercase()),
                "auto".to_string(),
                format!("{}: {}", f.covers, list.join(" | ")),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_lists_its_rules_choices_and_area_forms_last() {
        for f in FAMILIES {
            let mut seen_area = false;
            for a in f.algos {
                if a.needs & AREA != 0 {
                    seen_area = true;
                } else {
                    assert!(!seen_area, "{}: {} after an area form", f.name, a.name);
                }
            }
            for size in [1, 2, 3, 4, 8, 9, 16] {
                for bytes in [0, 8, 16 << 10, 64 << 10, 512 << 10, 1 << 20, 4 << 20] {
                    for commutative in [false, true] {
                        for (nodes, node_groups) in [(false, false), (true, false), (true, true)] {
                            let c = Call {
                                size,
                                bytes,
                                elems: bytes / 8,
                                commutative,
                                block: Some(bytes / size.max(1)),
                                dense: true,
                                nodes,
                                node_groups,
                                across: nodes,
                            };
                            let pick = (f.rule)(&c);
                            let a = f.algo(pick).unwrap_or_else(|| {
                                panic!("{}: rule picks {pick}, not in the table", f.name)
                            });
                            assert_eq!(
                                a.needs & AREA,
                                0,
                                "{}: the rule picks an area form",
                                f.name
                            );
                        }
                    }
                }
            }
        }
    }

    /// Across nodes the models weigh the link: a big bcast to 3 nodes is
    /// not the root sending every copy (the shared-memory rule's linear),
    /// small messages take the fewest steps, and every pick is one the
    /// call meets and a schedule (never an area form or the hierarchical
    /// form).
    #[test]
    fn across_nodes_the_models_weigh_latency_and_bandwidth() {
        let w = Wire {
            alpha: 7.0,
            beta: 2500.0,
        };
        let call = |size, bytes| Call {
            size,
            bytes,
            elems: bytes / 8,
            commutative: true,
            block: Some(bytes / size),
            dense: true,
            across: true,
            ..Default::default()
        };
        assert_eq!((BCAST.rule)(&call(3, 1 << 20)), "linear");
        let big = across(&BCAST, &call(3, 1 << 20), w);
        assert!(big == "pipeline" || big == "scatter_allgather", "{big}");
        assert_eq!(across(&BCAST, &call(2, 8), w), "binomial");
        assert_eq!(across(&ALLREDUCE, &call(2, 8), w), "recursive_doubling");
        assert_eq!(across(&ALLREDUCE, &call(2, 1 << 20), w), "ring");
        assert_eq!(across(&ALLREDUCE, &call(16, 4 << 20), w), "rabenseifner");
        assert_eq!(
            across(&ALLGATHER, &call(16, 16 * 8), w),
            "recursive_doubling"
        );
        assert_eq!(across(&ALLTOALL, &call(16, 16 * 8), w), "bruck");
        assert_eq!(across(&ALLTOALL, &call(16, 16 << 20), w), "pairwise");
        // A slower link per message moves the bcast's choice towards fewer
        // messages: 256 KiB to 3 nodes at 1 ms per message goes binomial
        // or linear rather than in 64 KiB pieces.
        let slow = Wire {
            alpha: 1000.0,
            beta: 2500.0,
        };
        assert_ne!(across(&BCAST, &call(3, 256 << 10), slow), "pipeline");
        for f in FAMILIES {
            for size in [2, 3, 4, 8, 9, 16, 64] {
                for bytes in [0, 8, 4 << 10, 64 << 10, 1 << 20, 16 << 20] {
                    let c = call(size, bytes);
                    let pick = across(f, &c, w);
                    let a = f.algo(pick).unwrap_or_else(|| panic!("{}: {pick}", f.name));
                    assert!(
                        c.meets(a.needs),
                        "{}: {pick} at {size} ranks, {bytes} B",
                        f.name
                    );
                    assert_eq!(a.needs & (AREA | NODES), 0, "{}: {pick}", f.name);
                }
            }
        }
    }

    #[test]
    fn a_forced_algorithm_needs_what_the_table_says() {
        let c = Call {
            size: 3,
            bytes: 8,
            elems: 1,
            commutative: false,
            ..Default::default()
        };
        assert!(!c.meets(ALLREDUCE.algo("ring").unwrap().needs));
        assert!(!c.meets(ALLGATHER.algo("recursive_doubling").unwrap().needs));
        assert!(c.meets(ALLREDUCE.algo("recursive_doubling").unwrap().needs));
        let lines = tunable_lines();
        assert_eq!(lines.len(), FAMILIES.len());
        assert!(
            lines[3].2.starts_with("allreduce: shm_cma ("),
            "{}",
            lines[3].2
        );
    }
}
