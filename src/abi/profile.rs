//! The profile's report at `MPI_Finalize` (`OXMPI_PROFILE`): every rank's
//! record (`core::profile`) is gathered to rank 0 of MPI_COMM_WORLD, which
//! prints the table to stderr (under `mpirun`, after the job's other
//! output) and, for `OXMPI_PROFILE=FILE`, writes it as JSON to FILE.
//!
//! Per function: calls, total and mean time, bytes sent in messages during
//! the calls, the share of that time spent waiting, and each rank's time
//! (min, median, max, and which ranks). Then the heaviest pairs of ranks by
//! bytes sent, and for up to 64 ranks the whole matrix.

use super::consts::*;
use crate::core::error::Result;
use crate::core::profile::{self, Stat};
use crate::err;
use std::ffi::{c_int, c_void};
use std::fmt::Write as _;

/// Gathers the record and reports it (profile on; called by MPI_Finalize
/// while the runtime is up).
pub fn report() -> Result<()> {
    let Some(target) = profile::target() else {
        return Ok(());
    };
    let (rank, size) = crate::core::runtime::with(|st| Ok((st.rank as usize, st.size as usize)))?;
    let (funcs, to) = profile::snapshot(size);
    let mut mine = String::new();
    for (name, s) in &funcs {
        let _ = writeln!(
            mine,
            "F\t{name}\t{}\t{}\t{}\t{}",
            s.calls, s.ns, s.bytes, s.wait_ns
        );
    }
    let _ = writeln!(
        mine,
        "P\t{}",
        to.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    );
    let all = gather(mine.as_bytes(), rank, size)?;
    if rank != 0 {
        return Ok(());
    }
    let ranks: Vec<Parsed> = all.iter().map(|b| parse(b, size)).collect();
    let table = Table::new(&ranks);
    let text = table.text();
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    if let Some(path) = target {
        std::fs::write(&path, table.json()).map_err(|e| {
            err!(
                MPI_ERR_OTHER,
                "OXMPI_PROFILE={path}: the JSON profile could not be written: {e}"
            )
        })?;
    }
    Ok(())
}

/// Every rank's bytes at rank 0 (empty elsewhere).
fn gather(mine: &[u8], rank: usize, size: usize) -> Result<Vec<Vec<u8>>> {
    let len = mine.len() as c_int;
    let mut lens = vec![0 as c_int; if rank == 0 { size } else { 0 }];
    let ok = |rc: c_int, what: &str| {
        if rc == MPI_SUCCESS {
            Ok(())
        } else {
            Err(err!(
                MPI_ERR_OTHER,
                "the profile's {what} at MPI_Finalize failed (error {rc})"
            ))
        }
    };
    // SAFETY: one int each way; the receive array holds `size` ints at rank 0.
    let rc = unsafe {
        super::coll::MPI_Gather(
            (&len as *const c_int).cast(),
            1,
            MPI_INT,
            lens.as_mut_ptr().cast(),
            1,
            MPI_INT,
            0,
            MPI_COMM_WORLD,
        )
    };
    ok(rc, "gather of lengths")?;
    let displs: Vec<c_int> = lens
        .iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let total: usize = lens.iter().map(|&l| l as usize).sum();
    let mut buf = vec![0u8; total.max(1)];
    // SAFETY: `mine` holds `len` bytes; at rank 0 `buf` holds the sum of
    // the lengths, placed at `displs`.
    let rc = unsafe {
        super::coll::MPI_Gatherv(
            mine.as_ptr() as *const c_void,
            len,
            MPI_BYTE,
            buf.as_mut_ptr().cast(),
            lens.as_ptr(),
            displs.as_ptr(),
            MPI_BYTE,
            0,
            MPI_COMM_WORLD,
        )
    };
    ok(rc, "gather of records")?;
    Ok(lens
        .iter()
        .zip(&displs)
        .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
        .collect())
}

/// One rank's record as it arrived.
#[derive(Default)]
struct Parsed {
    funcs: Vec<(String, Stat)>,
    to: Vec<u64>,
}

fn parse(b: &[u8], size: usize) -> Parsed {
    let mut p = Parsed::default();
    for line in String::from_utf8_lossy(b).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["F", name, calls, ns, bytes, wait] => {
                let n = |s: &str| s.parse::<u64>().unwrap_or(0);
                p.funcs.push((
                    name.to_string(),
                    Stat {
                        calls: n(calls),
                        ns: n(ns),
                        bytes: n(bytes),
                        wait_ns: n(wait),
                    },
                ));
            }
            ["P", list] => {
                p.to = list
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse().unwrap_or(0))
                    .collect();
            }
            _ => {}
        }
    }
    p.to.resize(size, 0);
    p
}

/// One function over the ranks.
struct Row {
    name: String,
    per_rank: Vec<Stat>,
    total: Stat,
}

struct Table {
    rows: Vec<Row>,
    /// bytes[from][to]
    pairs: Vec<Vec<u64>>,
}

impl Table {
    fn new(ranks: &[Parsed]) -> Table {
        let n = ranks.len();
        let mut names: Vec<String> = ranks
            .iter()
            .flat_map(|r| r.funcs.iter().map(|(k, _)| k.clone()))
            .collect();
        names.sort();
        names.dedup();
        let mut rows: Vec<Row> = names
            .into_iter()
            .map(|name| {
                let per_rank: Vec<Stat> = ranks
                    .iter()
                    .map(|r| {
                        r.funcs
                            .iter()
                            .find(|(k, _)| *k == name)
                            .map(|(_, s)| *s)
                            .unwrap_or_default()
                    })
                    .collect();
                let total = per_rank.iter().fold(Stat::default(), |a, s| Stat {
                    calls: a.calls + s.calls,
                    ns: a.ns + s.ns,
                    bytes: a.bytes + s.bytes,
                    wait_ns: a.wait_ns + s.wait_ns,
                });
                Row {
                    name,
                    per_rank,
                    total,
                }
            })
            .collect();
        rows.sort_by(|a, b| b.total.ns.cmp(&a.total.ns).then(a.name.cmp(&b.name)));
        let pairs = (0..n).map(|i| ranks[i].to[..n].to_vec()).collect();
        Table { rows, pairs }
    }

    /// (min, its rank, median, max, its rank) of the ranks' times in `row`.
    fn spread(row: &Row) -> (u64, usize, u64, u64, usize) {
        let mut v: Vec<(u64, usize)> = row
            .per_rank
            .iter()
            .enumerate()
            .map(|(i, s)| (s.ns, i))
            .collect();
        v.sort();
        let (lo, hi) = (v[0], v[v.len() - 1]);
        (lo.0, lo.1, v[v.len() / 2].0, hi.0, hi.1)
    }

    /// The heaviest pairs (from, to, bytes), most first.
    fn top_pairs(&self, k: usize) -> Vec<(usize, usize, u64)> {
        let mut v: Vec<(usize, usize, u64)> = self
            .pairs
            .iter()
            .enumerate()
            .flat_map(|(i, row)| row.iter().enumerate().map(move |(j, &b)| (i, j, b)))
            .filter(|&(_, _, b)| b > 0)
            .collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        v.truncate(k);
        v
    }

    fn text(&self) -> String {
        let n = self.pairs.len();
        let mut o = String::new();
        let in_mpi: Vec<u64> = (0..n)
            .map(|r| self.rows.iter().map(|row| row.per_rank[r].ns).sum())
            .collect();
        let mut sorted = in_mpi
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i))
            .collect::<Vec<_>>();
        sorted.sort();
        let _ = writeln!(
            o,
            "\nOxMPI profile: {n} ranks; time in MPI per rank: min {:.6} s (rank {}), median {:.6} s, max {:.6} s (rank {})",
            secs(sorted[0].0),
            sorted[0].1,
            secs(sorted[n / 2].0),
            secs(sorted[n - 1].0),
            sorted[n - 1].1
        );
        let _ = writeln!(
            o,
            "{:<26} {:>10} {:>12} {:>11} {:>12} {:>6}   {:>21} {:>10} {:>21}",
            "function",
            "calls",
            "total s",
            "mean us",
            "bytes sent",
            "wait%",
            "rank s: min (rank)",
            "median",
            "max (rank)"
        );
        for row in &self.rows {
            let t = &row.total;
            let (lo, lr, med, hi, hr) = Self::spread(row);
            let mean_us = if t.calls > 0 {
                t.ns as f64 / t.calls as f64 / 1e3
            } else {
                0.0
            };
            let wait = if t.ns > 0 {
                100.0 * t.wait_ns as f64 / t.ns as f64
            } else {
                0.0
            };
            let _ = writeln!(
                o,
                "{:<26} {:>10} {:>12.6} {:>11.2} {:>12} {:>6.1}   {:>14.6} ({:>4}) {:>10.6} {:>14.6} ({:>4})",
                row.name, t.calls, secs(t.ns), mean_us, t.bytes, wait, secs(lo), lr, secs(med), secs(hi), hr
            );
        }
        let top = self.top_pairs(10);
        if top.is_empty() {
            let _ = writeln!(o, "no messages between ranks");
        } else {
            let _ = writeln!(o, "heaviest pairs (bytes sent in messages, from -> to):");
            for (i, j, b) in top {
                let _ = writeln!(o, "  {i:>4} -> {j:<4} {b:>14}");
            }
            if n <= 64 {
                let _ = writeln!(o, "bytes sent, row: from, column: to");
                let _ = write!(o, "{:>5}", "");
                for j in 0..n {
                    let _ = write!(o, " {j:>6}");
                }
                let _ = writeln!(o);
                for (i, row) in self.pairs.iter().enumerate() {
                    let _ = write!(o, "{i:>5}");
                    for &b in row {
                        let _ = write!(o, " {:>6}", human(b));
                    }
                    let _ = writeln!(o);
                }
            }
        }
        o
    }

    fn json(&self) -> String {
        let mut o = String::new();
        let _ = write!(o, "{{\"ranks\": {}, \"functions\": [", self.pairs.len());
        for (k, row) in self.rows.iter().enumerate() {
            let t = &row.total;
            let list = |f: &dyn Fn(&Stat) -> u64| {
                row.per_rank
                    .iter()
                    .map(|s| f(s).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = write!(
                o,
                "{}\n  {{\"name\": \"{}\", \"calls\": {}, \"time_ns\": {}, \"bytes\": {}, \"wait_ns\": {}, \"per_rank\": {{\"calls\": [{}], \"time_ns\": [{}], \"bytes\": [{}], \"wait_ns\": [{}]}}}}",
                if k > 0 { "," } else { "" },
                row.name,
                t.calls,
                t.ns,
                t.bytes,
                t.wait_ns,
                list(&|s| s.calls),
                list(&|s| s.ns),
                list(&|s| s.bytes),
                list(&|s| s.wait_ns)
            );
        }
        let _ = write!(o, "\n], \"bytes_sent\": [");
        for (i, row) in self.pairs.iter().enumerate() {
            let _ = write!(
                o,
                "{}\n  [{}]",
                if i > 0 { "," } else { "" },
                row.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(o, "\n]}}");
        o
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Bytes in at most 6 characters (B, K, M, G, T by 1024).
fn human(b: u64) -> String {
    let units = ["", "K", "M", "G", "T"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 10000.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{}{}", v.round() as u64, units[u])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_add_up_over_ranks() {
        let a = parse(
            b"F\tMPI_Send\t3\t3000\t24\t1000\nF\tMPI_Barrier\t1\t500\t0\t400\nP\t0,24\n",
            2,
        );
        let b = parse(
            b"F\tMPI_Recv\t3\t9000\t0\t8000\nF\tMPI_Barrier\t1\t700\t0\t600\nP\t0,0\n",
            2,
        );
        let t = Table::new(&[a, b]);
        let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["MPI_Recv", "MPI_Send", "MPI_Barrier"]);
        let barrier = &t.rows[2];
        assert_eq!((barrier.total.calls, barrier.total.ns), (2, 1200));
        assert_eq!(Table::spread(barrier), (500, 0, 700, 700, 1));
        assert_eq!(t.top_pairs(10), vec![(0, 1, 24)]);
        let text = t.text();
        assert!(text.contains("OxMPI profile: 2 ranks"), "{text}");
        assert!(text.contains("0 -> 1"), "{text}");
        assert!(t.json().contains("\"name\": \"MPI_Send\", \"calls\": 3"));
        assert_eq!(human(123), "123");
        assert_eq!(human(20480), "20K");
    }
}
