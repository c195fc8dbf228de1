//! Process topologies: Cartesian grids, graphs and distributed graphs
//! attached to communicators (no reordering: rank i keeps rank i).

use super::consts::*;
use super::ptr::{in_slice, out, out_slice};
use super::{MPI_Comm, MPI_Info};
use crate::coll::basic;
use crate::core::comm::Topo;
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::c_int;

/// Address-only sentinels (compared, never dereferenced).
#[repr(transparent)]
pub struct Sentinel(pub *mut c_int);
// SAFETY: the pointer is only compared, never dereferenced or written through.
unsafe impl Sync for Sentinel {}
static mut UNWEIGHTED_TARGET: c_int = 0x46618;
static mut WEIGHTS_EMPTY_TARGET: c_int = 0x22284;
/// `MPI_UNWEIGHTED` (MPICH: `extern int * const MPI_UNWEIGHTED`).
#[no_mangle]
pub static MPI_UNWEIGHTED: Sentinel = Sentinel(std::ptr::addr_of_mut!(UNWEIGHTED_TARGET));
/// `MPI_WEIGHTS_EMPTY`.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: Sentinel = Sentinel(std::ptr::addr_of_mut!(WEIGHTS_EMPTY_TARGET));

fn ints<'a>(p: *const c_int, n: usize, name: &str) -> Result<&'a [c_int]> {
    in_slice(p, n, name)
}

fn write_ints(p: *mut c_int, v: &[c_int], max: usize, name: &str) -> Result<()> {
    let n = v.len().min(max);
    out_slice(p, n, name)?.copy_from_slice(&v[..n]);
    Ok(())
}

fn cart(comm: MPI_Comm) -> Result<(Vec<i32>, Vec<bool>, i32)> {
    with(|st| {
        let c = st.comm(comm)?;
        match &c.topo {
            Some(Topo::Cart { dims, periods }) => Ok((dims.clone(), periods.clone(), c.rank)),
            _ => Err(err!(
                MPI_ERR_TOPOLOGY,
                "comm=0x{:08x} has no Cartesian topology",
                comm as u32
            )),
        }
    })
}

fn coords_of(dims: &[i32], mut rank: i32) -> Vec<i32> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = rank % dims[d];
        rank /= dims[d];
    }
    c
}

fn rank_of(dims: &[i32], periods: &[bool], coords: &[i32]) -> Result<i32> {
    let mut r = 0;
    for d in 0..dims.len() {
        let mut x = coords[d];
        if periods[d] {
            x = x.rem_euclid(dims[d]);
        } else if x < 0 || x >= dims[d] {
            return Err(err!(
                MPI_ERR_ARG,
                "coords[{d}]={x} is outside the non-periodic dimension of size {}",
                dims[d]
            ));
        }
        r = r * dims[d] + x;
    }
    Ok(r)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    if nnodes <= 0 || ndims < 0 {
        return Err(err!(MPI_ERR_ARG, "nnodes={nnodes} ndims={ndims}"));
    }
    let d = out_slice(dims, ndims as usize, "dims")?;
    let mut rest = nnodes;
    for &x in d.iter() {
        if x < 0 {
            return Err(err!(MPI_ERR_DIMS, "dims contains {x}"));
        }
        if x > 0 {
            if rest % x != 0 {
                return Err(err!(
                    MPI_ERR_DIMS,
                    "nnodes={nnodes} is not divisible by the fixed dims"
                ));
            }
            rest /= x;
        }
    }
    let free: Vec<usize> = (0..d.len()).filter(|&i| d[i] == 0).collect();
    if free.is_empty() {
        if rest != 1 {
            return Err(err!(
                MPI_ERR_DIMS,
                "dims do not multiply to nnodes={nnodes}"
            ));
        }
        return Ok(());
    }
    let vals = balanced(rest, free.len());
    for (k, &i) in free.iter().enumerate() {
        d[i] = vals[k];
    }
    Ok(())
}

/// `n` as a product of `k` factors as close to each other as possible (the
/// smallest difference between the largest and the smallest, then the
/// smallest largest), in non-increasing order: every factorization with
/// factors from the k-th root of what is left up to the factor before is
/// tried, which is quick for any `int` (72 in 2: 9 x 8; 180: 15 x 12).
fn balanced(n: i32, k: usize) -> Vec<i32> {
    struct Search {
        divisors: Vec<i64>,
        cur: Vec<i64>,
        best: Option<(i64, i64, Vec<i64>)>,
    }
    fn go(s: &mut Search, n: i64, k: usize, cap: i64) {
        if k == 1 {
            if n <= cap {
                let first = s.cur.first().copied().unwrap_or(n);
                let key = (first - n, first);
                if s.best.as_ref().is_none_or(|b| key < (b.0, b.1)) {
                    let mut v = s.cur.clone();
                    v.push(n);
                    s.best = Some((key.0, key.1, v));
                }
            }
            return;
        }
        // The largest remaining factor is at least the k-th root of n.
        let mut lo = ((n as f64).powf(1.0 / k as f64).floor() as i64).max(1);
        while lo.checked_pow(k as u32).is_some_and(|p| p < n) {
            lo += 1;
        }
        let hi = cap.min(n);
        let from = s.divisors.partition_point(|&d| d < lo);
        let to = s.divisors.partition_point(|&d| d <= hi);
        for j in (from..to).rev() {
            let d = s.divisors[j];
            if n % d != 0 {
                continue;
            }
            // The spread can only grow below: cut what cannot beat the best.
            let spread_floor = s.cur.first().copied().unwrap_or(d) - d;
            if s.best.as_ref().is_some_and(|b| spread_floor > b.0) {
                continue;
            }
            s.cur.push(d);
            go(s, n / d, k - 1, d);
            s.cur.pop();
        }
    }
    if k == 0 {
        return Vec::new();
    }
    let n = n as i64;
    let mut divisors: Vec<i64> = (1..)
        .take_while(|i: &i64| i * i <= n)
        .filter(|i| n % i == 0)
        .flat_map(|i| [i, n / i])
        .collect();
    divisors.sort_unstable();
    divisors.dedup();
    let mut s = Search {
        divisors,
        cur: Vec::new(),
        best: None,
    };
    go(&mut s, n, k, n);
    s.best.map_or_else(
        || vec![1; k],
        |b| b.2.into_iter().map(|x| x as i32).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::balanced;

    #[test]
    fn dims_are_balanced() {
        assert_eq!(balanced(72, 2), vec![9, 8]);
        assert_eq!(balanced(180, 2), vec![15, 12]);
        assert_eq!(balanced(24, 3), vec![4, 3, 2]);
        assert_eq!(balanced(64, 3), vec![4, 4, 4]);
        assert_eq!(balanced(7, 3), vec![7, 1, 1]);
        assert_eq!(balanced(1, 2), vec![1, 1]);
        assert_eq!(balanced(2147483647, 2), vec![2147483647, 1]);
        assert_eq!(balanced(1 << 30, 4), vec![256, 256, 128, 128]);
        // Against every factorization into two, by brute force.
        for n in 1..400 {
            let best = (1..=n)
                .filter(|d| n % d == 0 && d * d >= n)
                .min_by_key(|d| d - n / d)
                .unwrap();
            assert_eq!(balanced(n, 2), vec![best, n / best], "{n}");
        }
    }
}

/// A new communicator of the first `n` ranks of `comm` (MPI_COMM_NULL for the others) with `topo`.
fn with_topology(comm: MPI_Comm, n: i32, topo: Topo) -> Result<MPI_Comm> {
    let rank = with(|st| Ok(st.comm(comm)?.rank))?;
    let h = super::comm::split(comm, if rank < n { 0 } else { MPI_UNDEFINED }, rank)?;
    if h != MPI_COMM_NULL {
        with(|st| {
            st.comm_mut(h)?.topo = Some(topo);
            Ok(())
        })?;
    }
    Ok(h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    let _ = reorder;
    if ndims < 0 {
        return Err(err!(MPI_ERR_DIMS, "ndims={ndims}"));
    }
    let d = ints(dims, ndims as usize, "dims")?.to_vec();
    let p: Vec<bool> = ints(periods, ndims as usize, "periods")?
        .iter()
        .map(|&x| x != 0)
        .collect();
    if let Some(x) = d.iter().find(|&&x| x <= 0) {
        return Err(err!(MPI_ERR_DIMS, "dims contains {x}"));
    }
    let n: i32 = d.iter().product();
    let size = with(|st| Ok(st.comm(comm_old)?.size))?;
    if n > size {
        return Err(err!(
            MPI_ERR_DIMS,
            "the grid has {n} processes but comm_old only {size}"
        ));
    }
    let h = with_topology(
        comm_old,
        n,
        Topo::Cart {
            dims: d,
            periods: p,
        },
    )?;
    out(comm_cart, "comm_cart", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    let (d, _, _) = cart(comm)?;
    out(ndims, "ndims", d.len() as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(
    comm: MPI_Comm,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    let (d, p, r) = cart(comm)?;
    let m = maxdims.max(0) as usize;
    write_ints(dims, &d, m, "dims")?;
    write_ints(
        periods,
        &p.iter().map(|&b| b as c_int).collect::<Vec<_>>(),
        m,
        "periods",
    )?;
    write_ints(coords, &coords_of(&d, r), m, "coords")
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(
    comm: MPI_Comm,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    let (d, p, _) = cart(comm)?;
    let c = ints(coords, d.len(), "coords")?;
    out(rank, "rank", rank_of(&d, &p, c)?)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(
    comm: MPI_Comm,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    let (d, _, _) = cart(comm)?;
    let n: i32 = d.iter().product();
    if rank < 0 || rank >= n {
        return Err(err!(
            MPI_ERR_RANK,
            "rank={rank} is not in the grid of {n} processes"
        ));
    }
    write_ints(
        coords,
        &coords_of(&d, rank),
        maxdims.max(0) as usize,
        "coords",
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(
    comm: MPI_Comm,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> c_int {
    let (d, p, r) = cart(comm)?;
    if direction < 0 || direction as usize >= d.len() {
        return Err(err!(
            MPI_ERR_ARG,
            "direction={direction} is not a dimension (ndims {})",
            d.len()
        ));
    }
    let c = coords_of(&d, r);
    let at = |delta: i32| -> c_int {
        let mut cc = c.clone();
        cc[direction as usize] += delta;
        rank_of(&d, &p, &cc).unwrap_or(MPI_PROC_NULL)
    };
    out(rank_source, "rank_source", at(-disp))?;
    out(rank_dest, "rank_dest", at(disp))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(
    comm: MPI_Comm,
    remain_dims: *const c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let (d, p, r) = cart(comm)?;
    let keep: Vec<bool> = ints(remain_dims, d.len(), "remain_dims")?
        .iter()
        .map(|&x| x != 0)
        .collect();
    let c = coords_of(&d, r);
    // Color: the coordinates in the dropped dimensions; key: the rank (keeps grid order).
    let mut color = 0;
    for i in 0..d.len() {
        if !keep[i] {
            color = color * d[i] + c[i];
        }
    }
    let h = super::comm::split(comm, color, r)?;
    let nd: Vec<i32> = (0..d.len()).filter(|&i| keep[i]).map(|i| d[i]).collect();
    let np: Vec<bool> = (0..d.len()).filter(|&i| keep[i]).map(|i| p[i]).collect();
    with(|st| {
        st.comm_mut(h)?.topo = Some(Topo::Cart {
            dims: nd,
            periods: np,
        });
        Ok(())
    })?;
    out(newcomm, "newcomm", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_map(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    let d = ints(dims, ndims.max(0) as usize, "dims")?;
    let _ = periods;
    let n: i32 = d.iter().product();
    let (rank, size) = with(|st| {
        let c = st.comm(comm)?;
        Ok((c.rank, c.size))
    })?;
    if n > size {
        return Err(err!(
            MPI_ERR_DIMS,
            "the grid has {n} processes but comm only {size}"
        ));
    }
    out(
        newrank,
        "newrank",
        if rank < n { rank } else { MPI_UNDEFINED },
    )
}

fn graph(comm: MPI_Comm) -> Result<(Vec<i32>, Vec<i32>)> {
    with(|st| match &st.comm(comm)?.topo {
        Some(Topo::Graph { index, edges }) => Ok((index.clone(), edges.clone())),
        _ => Err(err!(
            MPI_ERR_TOPOLOGY,
            "comm=0x{:08x} has no graph topology",
            comm as u32
        )),
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(
    comm_old: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> c_int {
    let _ = reorder;
    if nnodes < 0 {
        return Err(err!(MPI_ERR_ARG, "nnodes={nnodes}"));
    }
    let idx = ints(index, nnodes as usize, "index")?.to_vec();
    let ne = idx.last().copied().unwrap_or(0).max(0) as usize;
    let e = ints(edges, ne, "edges")?.to_vec();
    if let Some(x) = e.iter().find(|&&x| x < 0 || x >= nnodes) {
        return Err(err!(
            MPI_ERR_TOPOLOGY,
            "edges contains {x}, not a node of the graph"
        ));
    }
    let size = with(|st| Ok(st.comm(comm_old)?.size))?;
    if nnodes > size {
        return Err(err!(
            MPI_ERR_ARG,
            "nnodes={nnodes} exceeds the communicator size {size}"
        ));
    }
    let h = with_topology(
        comm_old,
        nnodes,
        Topo::Graph {
            index: idx,
            edges: e,
        },
    )?;
    out(comm_graph, "comm_graph", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(
    comm: MPI_Comm,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    let (i, e) = graph(comm)?;
    out(nnodes, "nnodes", i.len() as c_int)?;
    out(nedges, "nedges", e.len() as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(
    comm: MPI_Comm,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    let (i, e) = graph(comm)?;
    write_ints(index, &i, maxindex.max(0) as usize, "index")?;
    write_ints(edges, &e, maxedges.max(0) as usize, "edges")
}

fn graph_neighbors(i: &[i32], e: &[i32], rank: c_int) -> Result<Vec<i32>> {
    if rank < 0 || rank as usize >= i.len() {
        return Err(err!(MPI_ERR_RANK, "rank={rank} is not a node of the graph"));
    }
    let start = if rank == 0 {
        0
    } else {
        i[rank as usize - 1] as usize
    };
    Ok(e[start..i[rank as usize] as usize].to_vec())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(
    comm: MPI_Comm,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    let (i, e) = graph(comm)?;
    out(
        nneighbors,
        "nneighbors",
        graph_neighbors(&i, &e, rank)?.len() as c_int,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors(
    comm: MPI_Comm,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    let (i, e) = graph(comm)?;
    write_ints(
        neighbors,
        &graph_neighbors(&i, &e, rank)?,
        maxneighbors.max(0) as usize,
        "neighbors",
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_map(
    comm: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    let _ = (index, edges);
    let rank = with(|st| Ok(st.comm(comm)?.rank))?;
    out(
        newrank,
        "newrank",
        if rank < nnodes { rank } else { MPI_UNDEFINED },
    )
}

fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_UNWEIGHTED.0)
}

fn weights(p: *const c_int, n: usize, name: &str) -> Result<Option<Vec<i32>>> {
    if is_unweighted(p) {
        return Ok(None);
    }
    if std::ptr::eq(p, MPI_WEIGHTS_EMPTY.0) || n == 0 {
        return Ok(Some(vec![1; n]));
    }
    // SAFETY: a weights array of n ints (caller's contract).
    Ok(Some(ints(p, n, name)?.to_vec()))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let _ = (info, reorder);
    if indegree < 0 || outdegree < 0 {
        return Err(err!(
            MPI_ERR_ARG,
            "indegree={indegree} outdegree={outdegree}"
        ));
    }
    let s = ints(sources, indegree as usize, "sources")?.to_vec();
    let d = ints(destinations, outdegree as usize, "destinations")?.to_vec();
    let sw = weights(sourceweights, s.len(), "sourceweights")?;
    let dw = weights(destweights, d.len(), "destweights")?;
    let weighted = sw.is_some() || dw.is_some();
    let size = with(|st| Ok(st.comm(comm_old)?.size))?;
    let topo = Topo::DistGraph {
        sources: s,
        sweights: sw.unwrap_or_default(),
        dests: d,
        dweights: dw.unwrap_or_default(),
        weighted,
    };
    let h = with_topology(comm_old, size, topo)?;
    out(comm_dist_graph, "comm_dist_graph", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let _ = (info, reorder);
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "n={n}"));
    }
    let src = ints(sources, n as usize, "sources")?;
    let deg = ints(degrees, n as usize, "degrees")?;
    let total: usize = deg.iter().map(|&x| x.max(0) as usize).sum();
    let dst = ints(destinations, total, "destinations")?;
    let w = weights(weights_, total, "weights")?;
    let weighted_here = w.is_some() as i32;
    // My edges as (source, dest, weight) triples; everyone learns all edges.
    let mut mine: Vec<i32> = Vec::with_capacity(3 * total);
    let mut k = 0;
    for i in 0..n as usize {
        for _ in 0..deg[i] {
            mine.extend_from_slice(&[src[i], dst[k], w.as_ref().map(|w| w[k]).unwrap_or(1)]);
            k += 1;
        }
    }
    let v = basic::view(comm_old)?;
    let mut counts = vec![0u8; 8 * v.size];
    counts[8 * v.rank..8 * v.rank + 4].copy_from_slice(&(mine.len() as i32).to_ne_bytes());
    counts[8 * v.rank + 4..8 * v.rank + 8].copy_from_slice(&weighted_here.to_ne_bytes());
    let blocks8: Vec<(usize, usize)> = (0..v.size).map(|r| (8 * r, 8)).collect();
    basic::allgatherv(&v, &mut counts, &blocks8)?;
    let lens: Vec<usize> = (0..v.size)
        .map(|r| i32::from_ne_bytes(counts[8 * r..8 * r + 4].try_into().unwrap()) as usize)
        .collect();
    let weighted = (0..v.size)
        .any(|r| i32::from_ne_bytes(counts[8 * r + 4..8 * r + 8].try_into().unwrap()) != 0);
    let mut blocks = Vec::new();
    let mut off = 0;
    for &l in &lens {
        blocks.push((off * 4, l * 4));
        off += l;
    }
    let mut all = vec![0u8; off * 4];
    let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_ne_bytes()).collect();
    all[blocks[v.rank].0..blocks[v.rank].0 + bytes.len()].copy_from_slice(&bytes);
    basic::allgatherv(&v, &mut all, &blocks)?;
    let edges: Vec<i32> = all
        .chunks_exact(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    let me = v.rank as i32;
    let (mut s, mut sw, mut d, mut dw) = (vec![], vec![], vec![], vec![]);
    for e in edges.chunks_exact(3) {
        if e[1] == me {
            s.push(e[0]);
            sw.push(e[2]);
        }
        if e[0] == me {
            d.push(e[1]);
            dw.push(e[2]);
        }
    }
    let topo = Topo::DistGraph {
        sources: s,
        sweights: sw,
        dests: d,
        dweights: dw,
        weighted,
    };
    let h = with_topology(comm_old, v.size as i32, topo)?;
    out(comm_dist_graph, "comm_dist_graph", h)
}

/// (sources, source weights, destinations, destination weights, weighted).
type DistGraph = (Vec<i32>, Vec<i32>, Vec<i32>, Vec<i32>, bool);

fn dist(comm: MPI_Comm) -> Result<DistGraph> {
    with(|st| match &st.comm(comm)?.topo {
        Some(Topo::DistGraph {
            sources,
            sweights,
            dests,
            dweights,
            weighted,
        }) => Ok((
            sources.clone(),
            sweights.clone(),
            dests.clone(),
            dweights.clone(),
            *weighted,
        )),
        _ => Err(err!(
            MPI_ERR_TOPOLOGY,
            "comm=0x{:08x} has no distributed graph topology",
            comm as u32
        )),
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: MPI_Comm,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    let (s, _, d, _, w) = dist(comm)?;
    out(indegree, "indegree", s.len() as c_int)?;
    out(outdegree, "outdegree", d.len() as c_int)?;
    out(weighted, "weighted", w as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    let (s, sw, d, dw, w) = dist(comm)?;
    write_ints(sources, &s, maxindegree.max(0) as usize, "sources")?;
    write_ints(
        destinations,
        &d,
        maxoutdegree.max(0) as usize,
        "destinations",
    )?;
    if w && !is_unweighted(sourceweights) {
        write_ints(
            sourceweights,
            &sw,
            maxindegree.max(0) as usize,
            "sourceweights",
        )?;
    }
    if w && !is_unweighted(destweights) {
        write_ints(
            destweights,
            &dw,
            maxoutdegree.max(0) as usize,
            "destweights",
        )?;
    }
    Ok(())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> c_int {
    let t = with(|st| {
        Ok(match &st.comm(comm)?.topo {
            Some(Topo::Cart { .. }) => MPI_CART,
            Some(Topo::Graph { .. }) => MPI_GRAPH,
            Some(Topo::DistGraph { .. }) => MPI_DIST_GRAPH,
            None => MPI_UNDEFINED,
        })
    })?;
    out(status, "status", t)
}
