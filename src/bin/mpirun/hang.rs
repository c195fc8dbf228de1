//! The hang report: when `--timeout` fires, or mpirun gets SIGQUIT, every
//! rank is asked (SIGURG, forwarded to the other hosts) where it waits;
//! each rank waiting inside MPI answers over its PMI connection
//! (`cmd=oxmpi_hang`, the library's `core::hang`). After every running
//! rank answered, or 2 s, mpirun prints each rank's wait, the wait-for
//! graph (who waits for whom) and its cycles, by name:
//!
//! "deadlock: rank 0 waits in MPI_Recv(src=1, tag=7) while rank 1 waits
//! in MPI_Recv(src=0, tag=7)"

use std::fmt::Write as _;

/// Why the ranks were asked where they wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// `--timeout` fired: the report, then the job ends.
    Timeout,
    /// SIGQUIT to mpirun: the report, and the job goes on.
    Quit,
    /// `OXMPI_HANG_REPORT=SECONDS`: a look every half of SECONDS; the
    /// report only when every running rank has waited in MPI that long.
    Probe,
}

/// One thing a rank waits for.
#[derive(Debug, Clone, PartialEq)]
enum Wait {
    /// A receive on `comm` from comm rank `src` (world rank `wsrc`; negative:
    /// any source) with `tag` (negative: any tag).
    Recv {
        comm: String,
        src: i64,
        wsrc: i64,
        tag: i64,
    },
    /// An unfinished send to world rank `wdest`.
    Send { wdest: i64, bytes: i64 },
    /// A collective on `comm` waiting for these world ranks.
    Coll { comm: String, wranks: Vec<i64> },
}

/// A rank's report: the MPI call it is in and what it waits for.
#[derive(Debug, Default)]
pub(crate) struct Report {
    call: String,
    /// Seconds its current wait has lasted.
    pub(crate) waited: f64,
    waits: Vec<Wait>,
    /// Per communicator: the collective calls the rank has entered on it
    /// and the last one's name.
    seqs: Vec<(String, u64, String)>,
}

/// Parses a rank's report (`kind key=value ...` items separated by ';').
pub(crate) fn parse(text: &str) -> Report {
    let mut r = Report::default();
    for item in text.split(';') {
        let mut words = item.split(' ');
        let kind = words.next().unwrap_or("");
        let kv: Vec<(&str, &str)> = words.filter_map(|w| w.split_once('=')).collect();
        let get = |k: &str| {
            kv.iter()
                .find(|(a, _)| *a == k)
                .map(|(_, v)| *v)
                .unwrap_or("")
        };
        let num = |k: &str| get(k).parse::<i64>().unwrap_or(-1);
        match kind {
            "call" => {
                r.call = get("name").to_string();
                r.waited = get("waited").parse().unwrap_or(0.0);
            }
            "recv" => r.waits.push(Wait::Recv {
                comm: get("comm").to_string(),
                src: num("src"),
                wsrc: num("wsrc"),
                tag: num("tag"),
            }),
            "send" => r.waits.push(Wait::Send {
                wdest: num("wdest"),
                bytes: num("bytes"),
            }),
            "seq" => r.seqs.push((
                get("comm").to_string(),
                get("n").parse().unwrap_or(0),
                get("name").to_string(),
            )),
            "coll" => r.waits.push(Wait::Coll {
                comm: get("comm").to_string(),
                wranks: get("wranks")
                    .split(',')
                    .filter_map(|s| s.parse().ok())
                    .collect(),
            }),
            _ => {}
        }
    }
    r
}

/// The world ranks `w` makes its rank wait for.
fn targets(w: &Wait) -> Vec<i64> {
    match w {
        Wait::Recv { wsrc, .. } if *wsrc >= 0 => vec![*wsrc],
        Wait::Recv { .. } => vec![],
        Wait::Send { wdest, .. } => vec![*wdest],
        Wait::Coll { wranks, .. } => wranks.clone(),
    }
}

/// A tag as the report shows it: MPI_ANY_TAG, or the library's own
/// (negative) tags of a collective's messages.
fn any_tag(t: i64) -> String {
    match t {
        -1 => "MPI_ANY_TAG".into(),
        t if t < -1 => format!("{t} (a collective's)"),
        t => t.to_string(),
    }
}

/// How rank's wait `w` reads, in call `call`.
fn describe(call: &str, w: &Wait) -> String {
    let call = if call.is_empty() { "MPI" } else { call };
    match w {
        Wait::Recv { comm, src, tag, .. } => {
            let src = if *src < 0 {
                "MPI_ANY_SOURCE".to_string()
            } else {
                src.to_string()
            };
            let on = if comm == "MPI_COMM_WORLD" {
                String::new()
            } else {
                format!(", comm={comm}")
            };
            format!("{call}(src={src}, tag={}{on})", any_tag(*tag))
        }
        Wait::Send { wdest, bytes } => format!("{call}(a send of {bytes} bytes to rank {wdest})"),
        Wait::Coll { comm, wranks } => format!(
            "{call}(comm={comm}) for rank{} {}",
            if wranks.len() == 1 { "" } else { "s" },
            wranks
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The report mpirun prints: each rank's wait, the edges and the cycles.
/// `reports[r]` is None for a rank that did not answer; `exited[r]` for a
/// rank that is no longer running.
pub(crate) fn render(reports: &[Option<Report>], exited: &[bool]) -> String {
    let n = reports.len();
    let mut o = String::new();
    let _ = writeln!(o, "mpirun: hang report (where each rank waits):");
    for r in 0..n {
        match (&reports[r], exited[r]) {
            (_, true) => {
                let _ = writeln!(o, "  rank {r}: finalized or exited");
            }
            (None, false) => {
                let _ = writeln!(
                    o,
                    "  rank {r}: no answer (not waiting in MPI: computing, or blocked outside MPI)"
                );
            }
            (Some(rep), false) if rep.waits.is_empty() => {
                let _ = writeln!(o, "  rank {r}: in {} with nothing to wait for", rep.call);
            }
            (Some(rep), false) => {
                let list: Vec<String> = rep.waits.iter().map(|w| describe(&rep.call, w)).collect();
                let _ = writeln!(o, "  rank {r}: waits in {}", list.join("; "));
            }
        }
    }
    // The graph: an edge r -> t for each rank t that a wait of r names.
    let edges: Vec<Vec<(usize, String)>> = (0..n)
        .map(|r| match &reports[r] {
            Some(rep) => rep
                .waits
                .iter()
                .flat_map(|w| {
                    let d = describe(&rep.call, w);
                    targets(w)
                        .into_iter()
                        .filter(|&t| t >= 0 && (t as usize) < n)
                        .map(move |t| (t as usize, d.clone()))
                })
                .collect(),
            None => vec![],
        })
        .collect();
    let mut any = false;
    for (r, es) in edges.iter().enumerate() {
        for (t, _) in es {
            if !any {
                let _ = writeln!(o, "wait-for graph:");
                any = true;
            }
            let why = if reports[*t].is_none() && !exited[*t] {
                " (which does not wait in MPI)"
            } else if exited[*t] {
                " (which exited)"
            } else {
                ""
            };
            let _ = writeln!(o, "  rank {r} -> rank {t}{why}");
        }
    }
    for line in out_of_step(reports) {
        let _ = writeln!(o, "{line}");
    }
    for cycle in cycles(&edges) {
        let parts: Vec<String> = cycle
            .iter()
            .enumerate()
            .map(|(k, &r)| {
                let next = cycle[(k + 1) % cycle.len()];
                let d = edges[r]
                    .iter()
                    .find(|(t, _)| *t == next)
                    .map(|(_, d)| d.clone())
                    .unwrap_or_default();
                format!("rank {r} waits in {d}")
            })
            .collect();
        let _ = writeln!(o, "deadlock: {}", parts.join(" while "));
    }
    o
}

/// For each communicator on which the answering ranks have not all
/// entered the same number of collectives (or, at one count, the same
/// collective): "collectives out of step on MPI_COMM_WORLD: rank 1 at call
/// 1 (MPI_Allreduce); ranks 0, 2 at call 2 (MPI_Barrier)".
fn out_of_step(reports: &[Option<Report>]) -> Vec<String> {
    use std::collections::BTreeMap;
    // comm -> (calls, name) -> ranks
    let mut by: BTreeMap<&str, BTreeMap<(u64, &str), Vec<usize>>> = BTreeMap::new();
    for (r, rep) in reports.iter().enumerate() {
        for (comm, n, name) in rep.iter().flat_map(|rep| rep.seqs.iter()) {
            by.entry(comm)
                .or_default()
                .entry((*n, name))
                .or_default()
                .push(r);
        }
    }
    by.into_iter()
        .filter(|(_, steps)| steps.len() > 1)
        .map(|(comm, steps)| {
            let parts: Vec<String> = steps
                .iter()
                .map(|((n, name), ranks)| {
                    let who = if ranks.len() == 1 {
                        format!("rank {}", ranks[0])
                    } else {
                        let l: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
                        format!("ranks {}", l.join(", "))
                    };
                    if *n == 0 {
                        format!("{who} at no collective yet")
                    } else {
                        format!("{who} at call {n} ({name})")
                    }
                })
                .collect();
            format!("collectives out of step on {comm}: {}", parts.join("; "))
        })
        .collect()
}

/// The elementary cycles of the graph found by a depth-first search from
/// each rank in turn, each reported once (from its lowest rank).
fn cycles(edges: &[Vec<(usize, String)>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut found: Vec<Vec<usize>> = Vec::new();
    for start in 0..n {
        let mut path = vec![start];
        let mut next = vec![0usize];
        while let Some(&top) = path.last() {
            let k = next.last().copied().unwrap_or(0);
            if k >= edges[top].len() || found.len() >= 16 {
                path.pop();
                next.pop();
                continue;
            }
            *next.last_mut().unwrap() += 1;
            let t = edges[top][k].0;
            if t == start {
                if !found.contains(&path) {
                    found.push(path.clone());
                }
            } else if t > start && !path.contains(&t) {
                path.push(t);
                next.push(0);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_cycle_is_named() {
        let a = parse("call name=MPI_Recv;recv comm=MPI_COMM_WORLD src=1 wsrc=1 tag=7");
        let b = parse("call name=MPI_Recv;recv comm=MPI_COMM_WORLD src=0 wsrc=0 tag=7");
        let text = render(&[Some(a), Some(b), None], &[false, false, false]);
        assert!(
            text.contains("deadlock: rank 0 waits in MPI_Recv(src=1, tag=7) while rank 1 waits in MPI_Recv(src=0, tag=7)"),
            "{text}"
        );
        assert!(text.contains("rank 2: no answer"), "{text}");
    }

    #[test]
    fn a_collective_waiting_for_a_receiver_is_a_cycle() {
        let a = parse("call name=MPI_Barrier;coll comm=MPI_COMM_WORLD wranks=1");
        let b = parse("call name=MPI_Recv;recv comm=MPI_COMM_WORLD src=0 wsrc=0 tag=-1");
        let text = render(&[Some(a), Some(b)], &[false, false]);
        assert!(text.contains("rank 0 waits in MPI_Barrier(comm=MPI_COMM_WORLD) for rank 1 while rank 1 waits in MPI_Recv(src=0, tag=MPI_ANY_TAG)"), "{text}");
    }

    #[test]
    fn collectives_out_of_step_are_named() {
        let a =
            parse("call name=MPI_Barrier waited=1;seq comm=MPI_COMM_WORLD n=2 name=MPI_Barrier");
        let b = parse("call name=MPI_Recv waited=1;seq comm=MPI_COMM_WORLD n=1 name=MPI_Allreduce;seq comm=comm3 n=4 name=MPI_Bcast");
        let c = parse("call name=MPI_Barrier waited=1;seq comm=MPI_COMM_WORLD n=2 name=MPI_Barrier;seq comm=comm3 n=4 name=MPI_Bcast");
        let text = render(&[Some(a), Some(b), Some(c)], &[false; 3]);
        assert!(text.contains(
            "collectives out of step on MPI_COMM_WORLD: rank 1 at call 1 (MPI_Allreduce); ranks 0, 2 at call 2 (MPI_Barrier)"
        ), "{text}");
        assert!(!text.contains("on comm3"), "{text}");
    }

    #[test]
    fn no_cycle_without_one() {
        let a = parse("call name=MPI_Recv;recv comm=MPI_COMM_WORLD src=1 wsrc=1 tag=3");
        let text = render(&[Some(a), None], &[false, false]);
        assert!(!text.contains("deadlock"), "{text}");
        assert!(
            text.contains("rank 0 -> rank 1 (which does not wait in MPI)"),
            "{text}"
        );
    }
}
