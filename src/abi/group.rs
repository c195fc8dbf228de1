//! Groups: ordered sets of processes, stored as world ranks.

use super::consts::*;
use super::handles::{self, KIND_GROUP};
use super::ptr::{in_slice, inp, out, out_slice};
use super::MPI_Group;
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::c_int;

fn ints<'a>(p: *const c_int, n: c_int, name: &str) -> Result<&'a [c_int]> {
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "n={n} must be non-negative"));
    }
    if n > 0 && p.is_null() {
        return Err(err!(MPI_ERR_ARG, "{name}=NULL with n={n}"));
    }
    in_slice(p, n as usize, name)
}

fn new_group(g: Vec<i32>) -> Result<MPI_Group> {
    with(|st| Ok(st.add_group(g)))
}

fn get(h: MPI_Group) -> Result<Vec<i32>> {
    with(|st| st.group(h).map(|g| g.to_vec()))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    let n = get(group)?.len() as c_int;
    out(size, "size", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    let r = with(|st| {
        let g = st.group(group)?;
        Ok(st.rank_in(g))
    })?;
    out(rank, "rank", r)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(group: *mut MPI_Group) -> c_int {
    let h = inp(group, "group")?;
    with(|st| {
        st.group(h)?;
        if let Some(i) = handles::index(h, KIND_GROUP) {
            st.groups.remove(i);
        }
        Ok(())
    })?;
    out(group, "group", MPI_GROUP_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    group1: MPI_Group,
    n: c_int,
    ranks1: *const c_int,
    group2: MPI_Group,
    ranks2: *mut c_int,
) -> c_int {
    let r1 = ints(ranks1, n, "ranks1")?;
    let (g1, g2) = (get(group1)?, get(group2)?);
    let mut res = Vec::with_capacity(r1.len());
    for &r in r1 {
        if r == MPI_PROC_NULL {
            res.push(MPI_PROC_NULL);
            continue;
        }
        if r < 0 || r as usize >= g1.len() {
            return Err(err!(
                MPI_ERR_RANK,
                "ranks1 contains {r}, not a rank of group1 (size {})",
                g1.len()
            ));
        }
        let w = g1[r as usize];
        res.push(
            g2.iter()
                .position(|&x| x == w)
                .map(|p| p as c_int)
                .unwrap_or(MPI_UNDEFINED),
        );
    }
    out_slice(ranks2, res.len(), "ranks2")?.copy_from_slice(&res);
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(
    group1: MPI_Group,
    group2: MPI_Group,
    result: *mut c_int,
) -> c_int {
    let (a, b) = (get(group1)?, get(group2)?);
    let r = if a == b {
        MPI_IDENT
    } else {
        let (mut x, mut y) = (a.clone(), b.clone());
        x.sort();
        y.sort();
        if x == y {
            MPI_SIMILAR
        } else {
            MPI_UNEQUAL
        }
    };
    out(result, "result", r)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_union(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
) -> c_int {
    let (mut a, b) = (get(group1)?, get(group2)?);
    for w in b {
        if !a.contains(&w) {
            a.push(w);
        }
    }
    out(newgroup, "newgroup", new_group(a)?)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_intersection(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
) -> c_int {
    let (a, b) = (get(group1)?, get(group2)?);
    let g = a.into_iter().filter(|w| b.contains(w)).collect();
    out(newgroup, "newgroup", new_group(g)?)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_difference(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
) -> c_int {
    let (a, b) = (get(group1)?, get(group2)?);
    let g = a.into_iter().filter(|w| !b.contains(w)).collect();
    out(newgroup, "newgroup", new_group(g)?)
}

fn check_ranks(g: &[i32], ranks: &[c_int], distinct: bool) -> Result<()> {
    let mut seen = vec![false; g.len()];
    for &r in ranks {
        if r < 0 || r as usize >= g.len() {
            return Err(err!(
                MPI_ERR_RANK,
                "ranks contains {r}, not a rank of the group (size {})",
                g.len()
            ));
        }
        if distinct && std::mem::replace(&mut seen[r as usize], true) {
            return Err(err!(MPI_ERR_RANK, "ranks contains {r} twice"));
        }
    }
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> c_int {
    let g = get(group)?;
    let r = ints(ranks, n, "ranks")?;
    check_ranks(&g, r, true)?;
    out(
        newgroup,
        "newgroup",
        new_group(r.iter().map(|&i| g[i as usize]).collect())?,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> c_int {
    let g = get(group)?;
    let r = ints(ranks, n, "ranks")?;
    check_ranks(&g, r, true)?;
    let keep = (0..g.len() as c_int)
        .filter(|i| !r.contains(i))
        .map(|i| g[i as usize])
        .collect();
    out(newgroup, "newgroup", new_group(keep)?)
}

/// Expands (first, last, stride) triplets into ranks.
fn ranges(g: &[i32], n: c_int, r: *const [c_int; 3]) -> Result<Vec<c_int>> {
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "n={n} must be non-negative"));
    }
    if n > 0 && r.is_null() {
        return Err(err!(MPI_ERR_ARG, "ranges=NULL with n={n}"));
    }
    let triplets = in_slice(r, n as usize, "ranges")?;
    let mut v = Vec::new();
    for (i, &[first, last, stride]) in triplets.iter().enumerate() {
        if stride == 0 {
            return Err(err!(MPI_ERR_ARG, "ranges[{i}] has stride 0"));
        }
        let mut x = first;
        while (stride > 0 && x <= last) || (stride < 0 && x >= last) {
            v.push(x);
            x += stride;
        }
    }
    check_ranks(g, &v, true)?;
    Ok(v)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(
    group: MPI_Group,
    n: c_int,
    ranges_: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> c_int {
    let g = get(group)?;
    let r = ranges(&g, n, ranges_)?;
    out(
        newgroup,
        "newgroup",
        new_group(r.iter().map(|&i| g[i as usize]).collect())?,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(
    group: MPI_Group,
    n: c_int,
    ranges_: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> c_int {
    let g = get(group)?;
    let r = ranges(&g, n, ranges_)?;
    let keep = (0..g.len() as c_int)
        .filter(|i| !r.contains(i))
        .map(|i| g[i as usize])
        .collect();
    out(newgroup, "newgroup", new_group(keep)?)
}
