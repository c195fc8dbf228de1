//! Which host each rank runs on: host lists (`--host h1:2,h2`), host files
//! (Open MPI's `host slots=N` and MPICH's `host:N` lines), ranks per node
//! (`-ppn`, `--map-by ppr:N:node`) and the order ranks fill the hosts in (by
//! slot, one host after the other, or round robin by node).

/// A host as the user named it, with its slot count if one was given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostSpec {
    pub(crate) name: String,
    pub(crate) slots: Option<usize>,
}

/// How ranks are laid on the hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MapBy {
    /// Fill each host's slots before the next host's (block).
    Slot,
    /// One rank per host in turn (round robin).
    Node,
}

/// `h1:2,h2,h1`: names with optional slot counts (a name without one, each
/// time it appears, is one slot).
pub(crate) fn parse_host_list(s: &str) -> Result<Vec<HostSpec>, String> {
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        v.push(host_item(item, item)?);
    }
    if v.is_empty() {
        return Err(format!("'{s}' names no host"));
    }
    Ok(v)
}

fn host_item(item: &str, whole: &str) -> Result<HostSpec, String> {
    match item.rsplit_once(':') {
        Some((h, n)) if !h.is_empty() => {
            let slots = n
                .parse::<usize>()
                .ok()
                .filter(|&k| k > 0)
                .ok_or_else(|| format!("'{whole}': '{n}' is not a number of slots"))?;
            Ok(HostSpec {
                name: h.to_string(),
                slots: Some(slots),
            })
        }
        _ => Ok(HostSpec {
            name: item.to_string(),
            slots: None,
        }),
    }
}

/// A host file: one host per line, `host`, `host:N` (MPICH) or
/// `host slots=N [max_slots=M]` (Open MPI); `#` starts a comment.
pub(crate) fn parse_hostfile(text: &str) -> Result<Vec<HostSpec>, String> {
    let mut v = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        let mut h = host_item(first, line).map_err(|e| format!("line {}: {e}", no + 1))?;
        for w in words {
            match w.split_once('=') {
                Some(("slots", n)) | Some(("cpu", n)) => {
                    h.slots =
                        Some(n.parse().ok().filter(|&k: &usize| k > 0).ok_or_else(|| {
                            format!("line {}: '{w}': not a number of slots", no + 1)
                        })?);
                }
                Some(("max_slots", _)) | Some(("max-slots", _)) => {}
                _ => return Err(format!("line {}: '{w}' is not slots=N", no + 1)),
            }
        }
        v.push(h);
    }
    if v.is_empty() {
        return Err("it names no host".into());
    }
    Ok(v)
}

/// Hosts in order of first appearance, with their slots added up.
fn merge(specs: &[HostSpec]) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = Vec::new();
    for s in specs {
        let k = s.slots.unwrap_or(1);
        match v.iter_mut().find(|(n, _)| *n == s.name) {
            Some(e) => e.1 += k,
            None => v.push((s.name.clone(), k)),
        }
    }
    v
}

/// The outcome: the hosts (in order) and each rank's host index.
#[derive(Debug, PartialEq)]
pub(crate) struct Placement {
    pub(crate) hosts: Vec<String>,
    pub(crate) host_of: Vec<usize>,
}

/// Places `n` ranks (all the slots, or `ppn` per host, when `n` is None).
/// More ranks than slots is an error unless `oversubscribe`; with `ppn` the
/// ranks wrap around the hosts as MPICH's do.
pub(crate) fn place(
    specs: &[HostSpec],
    n: Option<usize>,
    ppn: Option<usize>,
    map: MapBy,
    oversubscribe: bool,
) -> Result<Placement, String> {
    let mut hosts = merge(specs);
    if let Some(p) = ppn {
        for h in &mut hosts {
            h.1 = p;
        }
    }
    let total: usize = hosts.iter().map(|h| h.1).sum();
    let n = n.unwrap_or(total);
    if n > total && !oversubscribe && ppn.is_none() {
        return Err(format!(
            "{n} ranks but only {total} slots on {} ({}); add slots, or --oversubscribe",
            if hosts.len() == 1 {
                "the host"
            } else {
                "the hosts"
            },
            hosts
                .iter()
                .map(|(h, k)| format!("{h}:{k}"))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    let mut host_of = Vec::with_capacity(n);
    // Rounds over the hosts, each filling every host's slots once.
    while host_of.len() < n {
        match map {
            MapBy::Slot => {
                for (i, h) in hosts.iter().enumerate() {
                    for _ in 0..h.1 {
                        if host_of.len() < n {
                            host_of.push(i);
                        }
                    }
                }
            }
            MapBy::Node => {
                let mut left: Vec<usize> = hosts.iter().map(|h| h.1).collect();
                while host_of.len() < n && left.iter().any(|&k| k > 0) {
                    for (i, k) in left.iter_mut().enumerate() {
                        if *k > 0 && host_of.len() < n {
                            *k -= 1;
                            host_of.push(i);
                        }
                    }
                }
            }
        }
    }
    Ok(Placement {
        hosts: hosts.into_iter().map(|h| h.0).collect(),
        host_of,
    })
}

/// PMI's `PMI_process_mapping` for a placement: `(vector,(node,nodes,ppn),...)`,
/// each block a run of `nodes` consecutive nodes with `ppn` consecutive
/// ranks on each.
pub(crate) fn process_mapping(host_of: &[usize]) -> String {
    // Runs of ranks on one node: (node, count).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &h in host_of {
        match runs.last_mut() {
            Some((n, c)) if *n == h => *c += 1,
            _ => runs.push((h, 1)),
        }
    }
    // Runs on consecutive nodes with the same count form one block.
    let mut blocks: Vec<(usize, usize, usize)> = Vec::new();
    for (node, c) in runs {
        match blocks.last_mut() {
            Some((start, nodes, ppn)) if *ppn == c && *start + *nodes == node => *nodes += 1,
            _ => blocks.push((node, 1, c)),
        }
    }
    let mut s = String::from("(vector");
    for (a, b, c) in blocks {
        s.push_str(&format!(",({a},{b},{c})"));
    }
    s.push(')');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, slots: Option<usize>) -> HostSpec {
        HostSpec {
            name: name.into(),
            slots,
        }
    }

    #[test]
    fn host_lists_and_files() {
        assert_eq!(
            parse_host_list("a:2,b,a").unwrap(),
            vec![h("a", Some(2)), h("b", None), h("a", None)]
        );
        assert!(parse_host_list("a:x").unwrap_err().contains("'x'"));
        assert!(parse_host_list("a:0").is_err());
        assert!(parse_host_list(",").is_err());
        let f = "# nodes\nn1 slots=4 max_slots=8\nn2:2\n\n  n3  # one slot\n";
        assert_eq!(
            parse_hostfile(f).unwrap(),
            vec![h("n1", Some(4)), h("n2", Some(2)), h("n3", None)]
        );
        assert!(parse_hostfile("n1 slot=4").unwrap_err().contains("line 1"));
        assert!(parse_hostfile("n1\nn2 slots=x")
            .unwrap_err()
            .contains("line 2"));
        assert!(parse_hostfile("# nothing\n").is_err());
    }

    #[test]
    fn block_and_round_robin() {
        let s = parse_host_list("a:2,b:2").unwrap();
        let p = place(&s, None, None, MapBy::Slot, false).unwrap();
        assert_eq!(p.hosts, vec!["a", "b"]);
        assert_eq!(p.host_of, vec![0, 0, 1, 1]);
        let p = place(&s, Some(3), None, MapBy::Node, false).unwrap();
        assert_eq!(p.host_of, vec![0, 1, 0]);
        // Uneven slots, round robin: hosts drop out when full.
        let s = parse_host_list("a:3,b:1").unwrap();
        let p = place(&s, None, None, MapBy::Node, false).unwrap();
        assert_eq!(p.host_of, vec![0, 1, 0, 0]);
        // Repeated names add up.
        let s = parse_host_list("a,b,a").unwrap();
        let p = place(&s, None, None, MapBy::Slot, false).unwrap();
        assert_eq!(p.host_of, vec![0, 0, 1]);
    }

    #[test]
    fn too_many_ranks() {
        let s = parse_host_list("a:1,b:1").unwrap();
        let e = place(&s, Some(3), None, MapBy::Slot, false).unwrap_err();
        assert!(
            e.contains("3 ranks but only 2 slots") && e.contains("a:1,b:1"),
            "{e}"
        );
        let p = place(&s, Some(5), None, MapBy::Slot, true).unwrap();
        assert_eq!(p.host_of, vec![0, 1, 0, 1, 0]);
        // ppn: N per host, wrapping like MPICH's -ppn.
        let p = place(&s, None, Some(2), MapBy::Slot, false).unwrap();
        assert_eq!(p.host_of, vec![0, 0, 1, 1]);
        let p = place(&s, Some(6), Some(2), MapBy::Slot, false).unwrap();
        assert_eq!(p.host_of, vec![0, 0, 1, 1, 0, 0]);
    }

    #[test]
    fn mapping_strings() {
        assert_eq!(process_mapping(&[0, 0, 0, 0]), "(vector,(0,1,4))");
        assert_eq!(process_mapping(&[0, 0, 1, 1]), "(vector,(0,2,2))");
        assert_eq!(process_mapping(&[0, 1, 0, 1]), "(vector,(0,2,1),(0,2,1))");
        assert_eq!(
            process_mapping(&[0, 0, 1, 2, 2]),
            "(vector,(0,1,2),(1,1,1),(2,1,2))"
        );
    }
}
