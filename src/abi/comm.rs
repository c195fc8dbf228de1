//! Communicator management: dup, split, create, free, compare, names, info.

use super::consts::*;
use super::ptr::{cstr, inp, out, write_cstr};
use super::{MPI_Comm, MPI_Group, MPI_Info, MPI_Request};
use crate::coll::create::{self, agree_ctx, TAG_AGREE, TAG_CREATE_GROUP, TAG_INTER, TAG_SPLIT};
use crate::core::comm::Comm;
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::core::state::{ReqKind, Request};
use crate::err;
use oxmpi_macros::mpi_fn;
use std::os::raw::{c_char, c_int};

/// Members (world ranks), my index and the collective context of `comm`.
fn coll_view(comm: MPI_Comm) -> Result<(Vec<i32>, usize, u32)> {
    with(|st| {
        let c = st.comm(comm)?;
        if c.remote.is_some() {
            return Err(err!(
                MPI_ERR_COMM,
                "comm=0x{:08x} is an intercommunicator; this call needs an intracommunicator",
                comm as u32
            ));
        }
        Ok((c.world.clone(), c.rank as usize, c.ctx + 1))
    })
}

/// The duplicate of `comm` before its context id is agreed on: group, name,
/// error handler, topology, info and attributes (copied through their callbacks,
/// which run here, outside the library lock).
fn dup_template(comm: MPI_Comm, info: Option<Vec<(String, String)>>) -> Result<Comm> {
    let (name, errh, topo, old_info, attrs, members) = with(|st| {
        let c = st.comm(comm)?;
        Ok((
            c.name.clone(),
            c.errhandler,
            c.topo.clone(),
            c.info.clone(),
            c.attrs.clone(),
            c.world.clone(),
        ))
    })?;
    let me_w = with(|st| Ok(st.rank))?;
    let mut c = Comm::new(0, members, me_w, &format!("dup of {name}"));
    c.errhandler = errh;
    c.topo = topo;
    c.info = info.unwrap_or(old_info);
    c.attrs = super::attr::copy_attrs(comm, &attrs)?;
    Ok(c)
}

/// The processes that agree on a duplicate's context id (`both_sides`),
/// this process's index there, the collective context, and the remote
/// group of an intercommunicator.
#[allow(clippy::type_complexity)]
fn dup_members(comm: MPI_Comm) -> Result<(Vec<i32>, usize, u32, Option<Vec<i32>>)> {
    let (members, me, ctx, sides) = both_sides(comm)?;
    let remote = sides.map(|(_, r)| members[r].to_vec());
    Ok((members, me, ctx, remote))
}

/// Duplicates `comm` (attributes copied through their callbacks); an
/// intercommunicator's duplicate agrees on its context id over both groups.
fn dup(comm: MPI_Comm, info: Option<Vec<(String, String)>>) -> Result<MPI_Comm> {
    let (members, me, cctx, remote) = dup_members(comm)?;
    let ctx = agree_ctx(&members, me, cctx, TAG_AGREE)?;
    let mut c = match dup_template(comm, info) {
        Ok(c) => c,
        Err(e) => {
            with(|st| {
                st.release_ctx(ctx);
                Ok(())
            })?;
            return Err(e);
        }
    };
    c.ctx = ctx;
    c.remote = remote;
    with(|st| Ok(st.add_comm(c)))
}

fn info_pairs(info: MPI_Info) -> Result<Vec<(String, String)>> {
    if info == MPI_INFO_NULL {
        Ok(Vec::new())
    } else {
        crate::core::info::get(info)
    }
}

/// Starts a nonblocking duplicate: the context id is agreed on by the
/// progress engine (`coll::create::Idup`); `newcomm` is written when the
/// request completes.
fn idup(
    comm: MPI_Comm,
    info: Option<Vec<(String, String)>>,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> Result<()> {
    if newcomm.is_null() || request.is_null() {
        return Err(err!(
            MPI_ERR_ARG,
            "{}=NULL",
            if request.is_null() {
                "request"
            } else {
                "newcomm"
            }
        ));
    }
    let (members, me, cctx, remote) = dup_members(comm)?;
    let mut c = dup_template(comm, info)?;
    c.remote = remote;
    // Both groups of an intercommunicator count its collectives alike.
    let tag = with(|st| Ok(st.comm_mut(comm)?.next_coll_tag()))?;
    let job = create::Idup::new(members, me, cctx, tag, c, newcomm);
    let rid = with(|st| {
        let rid = st
            .reqs
            .insert(Request::new(ReqKind::Coll, comm, std::ptr::null_mut(), 0));
        st.scheds.push(crate::core::state::Active {
            rid,
            sched: Box::new(job),
        });
        st.progress();
        Ok(rid)
    })?;
    out(
        request,
        "request",
        super::handles::make(super::handles::KIND_REQUEST, rid),
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    let h = dup(comm, None)?;
    out(newcomm, "newcomm", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    let kv = info_pairs(info)?;
    let h = dup(comm, Some(kv))?;
    out(newcomm, "newcomm", h)
}

/// MPI_Comm_idup: returns at once; the duplicate exists when the request completes.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup(
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded OUT pointers (checked for NULL inside).
    idup(comm, None, newcomm, request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let kv = info_pairs(info)?;
    idup(comm, Some(kv), newcomm, request)
}

/// Splits `comm` by (color, key); returns the new handle or MPI_COMM_NULL.
/// On an intercommunicator (MPI-4.0 7.4.2) every process of both groups
/// takes part: the result joins the local processes of my color (ordered
/// by key, then old rank) to the remote ones of that color, and is
/// MPI_COMM_NULL where either side has none.
pub(crate) fn split(comm: MPI_Comm, color: c_int, key: c_int) -> Result<MPI_Comm> {
    if color < 0 && color != MPI_UNDEFINED {
        return Err(err!(
            MPI_ERR_ARG,
            "color={color} must be non-negative or MPI_UNDEFINED"
        ));
    }
    let (members, me, cctx, sides) = both_sides(comm)?;
    let mut mine = Vec::with_capacity(8);
    mine.extend_from_slice(&color.to_le_bytes());
    mine.extend_from_slice(&key.to_le_bytes());
    let all = create::allgather(&members, me, cctx, TAG_SPLIT, &mine)?;
    let ctx = agree_ctx(&members, me, cctx, TAG_AGREE)?;
    if color == MPI_UNDEFINED {
        return Ok(MPI_COMM_NULL);
    }
    // The members of index range `r` with my color, by (key, index).
    let chosen = |r: std::ops::Range<usize>| -> Vec<i32> {
        let mut v: Vec<(i32, usize)> = Vec::new();
        for i in r {
            let ck = &all[8 * i..8 * i + 8];
            let c = i32::from_le_bytes([ck[0], ck[1], ck[2], ck[3]]);
            let k = i32::from_le_bytes([ck[4], ck[5], ck[6], ck[7]]);
            if c == color {
                v.push((k, i));
            }
        }
        v.sort();
        v.iter().map(|&(_, i)| members[i]).collect()
    };
    let (world, remote) = match sides {
        None => (chosen(0..members.len()), None),
        Some((local, remote)) => {
            let (l, r) = (chosen(local), chosen(remote));
            if r.is_empty() {
                return Ok(MPI_COMM_NULL);
            }
            (l, Some(r))
        }
    };
    with(|st| {
        let errh = st.comm(comm)?.errhandler;
        let mut c = Comm::new(ctx, world, st.rank, "split communicator");
        c.remote = remote;
        c.errhandler = errh;
        Ok(st.add_comm(c))
    })
}

/// The processes a communicator-creating call runs over: `comm`'s group,
/// or both groups of an intercommunicator (in `Comm::both_groups`'s order);
/// my index there; the collective context; for an intercommunicator the
/// index ranges of the local and the remote group among the members.
#[allow(clippy::type_complexity)]
fn both_sides(
    comm: MPI_Comm,
) -> Result<(
    Vec<i32>,
    usize,
    u32,
    Option<(std::ops::Range<usize>, std::ops::Range<usize>)>,
)> {
    with(|st| {
        let c = st.comm(comm)?;
        let (me, ctx) = (c.rank as usize, c.ctx + 1);
        Ok(match c.both_groups() {
            None => (c.world.clone(), me, ctx, None),
            Some((all, lbase, rbase)) => {
                let (ln, rn) = (c.world.len(), all.len() - c.world.len());
                (
                    all,
                    lbase + me,
                    ctx,
                    Some((lbase..lbase + ln, rbase..rbase + rn)),
                )
            }
        })
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    let h = split(comm, color, key)?;
    out(newcomm, "newcomm", h)
}

/// MPI_COMM_TYPE_SHARED groups the ranks of one node; other split types
/// (hardware-guided ones) are not supported and give MPI_COMM_NULL, as the
/// standard allows.
/// MPI-4.1's split kind for a named process set or hardware resource
/// (MPICH 4.0 has none; 5 keeps clear of MPIX_COMM_TYPE_NEIGHBORHOOD).
pub const MPI_COMM_TYPE_RESOURCE_GUIDED: c_int = 5;

/// The levels of the hardware hierarchy that MPI_Comm_split_type knows.
#[derive(Clone, Copy)]
enum HwLevel {
    /// The node: ranks that can share memory.
    Node,
    /// The processor package (socket) of the CPU a rank runs on.
    Package,
    /// The NUMA node of the CPU a rank runs on.
    Numa,
}

impl HwLevel {
    /// The level an `mpi_hw_resource_type` value names (the standard's
    /// `mpi_shared_memory` and hwloc's names).
    fn named(v: &str) -> Option<HwLevel> {
        Some(match v {
            "mpi_shared_memory" | "Machine" | "machine" => HwLevel::Node,
            "Package" | "package" | "Socket" | "socket" => HwLevel::Package,
            "NUMANode" | "numanode" | "NUMA" | "numa" => HwLevel::Numa,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            HwLevel::Node => "mpi_shared_memory",
            HwLevel::Package => "Package",
            HwLevel::Numa => "NUMANode",
        }
    }

    /// This rank's place at the level, within its node (from sysfs, for
    /// the CPU it runs on; 0 where the kernel does not say).
    fn local_id(self) -> i64 {
        let cpu = crate::sys::current_cpu();
        match self {
            HwLevel::Node => 0,
            HwLevel::Package => crate::sys::package_of(cpu),
            HwLevel::Numa => crate::sys::numa_of(cpu),
        }
    }
}

/// Splits `comm` by hardware level `l`; the new communicator's info says
/// the level (`mpi_hw_resource_type`).
fn split_level(comm: MPI_Comm, l: HwLevel, key: c_int) -> Result<MPI_Comm> {
    let node = with(|st| Ok(st.node_of(st.rank)))?;
    let color = node
        .checked_mul(1024)
        .and_then(|c| c.checked_add(l.local_id().clamp(0, 1023) as i32))
        .unwrap_or(node);
    let h = split(comm, color, key)?;
    if h != MPI_COMM_NULL {
        with(|st| {
            let c = st.comm_mut(h)?;
            c.name = match l {
                HwLevel::Node => "shared-memory communicator".into(),
                _ => format!("{} communicator", l.name()),
            };
            c.info
                .push(("mpi_hw_resource_type".into(), l.name().into()));
            Ok(())
        })?;
    }
    Ok(h)
}

/// Frees a communicator the library made and did not hand out (it has no
/// attributes).
fn free_quiet(h: MPI_Comm) -> Result<()> {
    if h == MPI_COMM_NULL {
        return Ok(());
    }
    with(|st| st.remove_comm(h).map(|_| ()))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    let get = |key: &str| -> Result<Option<String>> {
        if info == MPI_INFO_NULL {
            return Ok(None);
        }
        Ok(crate::core::info::get(info)?
            .into_iter()
            .find(|e| e.0 == key)
            .map(|e| e.1))
    };
    // MPI-4.0 7.4.2: the guided kinds name a resource (the same on every
    // rank); one we do not know gives MPI_COMM_NULL, as does a kind with no
    // resource named.
    let h = match split_type {
        MPI_COMM_TYPE_SHARED => split_level(comm, HwLevel::Node, key)?,
        MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => {
            let hw = get("mpi_hw_resource_type")?;
            let pset = if split_type == MPI_COMM_TYPE_RESOURCE_GUIDED {
                get("mpi_pset_name")?
            } else {
                None
            };
            match (hw.as_deref().and_then(HwLevel::named), pset.as_deref()) {
                (Some(l), _) => split_level(comm, l, key)?,
                (None, Some("mpi://WORLD")) if hw.is_none() => split(comm, 0, key)?,
                (None, Some("mpi://SELF")) if hw.is_none() => {
                    let r = with(|st| Ok(st.comm(comm)?.rank as c_int))?;
                    split(comm, r, key)?
                }
                _ => split(comm, MPI_UNDEFINED, key)?,
            }
        }
        // The first level of the hierarchy that cuts the communicator into
        // strict subsets (every rank sees the same sizes, so all agree).
        MPI_COMM_TYPE_HW_UNGUIDED => {
            let size = with(|st| Ok(st.comm(comm)?.world.len()))?;
            let mut found = MPI_COMM_NULL;
            for l in [HwLevel::Node, HwLevel::Package, HwLevel::Numa] {
                let h = split_level(comm, l, key)?;
                if with(|st| Ok(st.comm(h)?.world.len()))? < size {
                    found = h;
                    break;
                }
                free_quiet(h)?;
            }
            if found == MPI_COMM_NULL {
                // Still collective: every rank takes part in the split.
                split(comm, MPI_UNDEFINED, key)?
            } else {
                found
            }
        }
        MPI_UNDEFINED | MPIX_COMM_TYPE_NEIGHBORHOOD => split(comm, MPI_UNDEFINED, key)?,
        _ => {
            return Err(err!(
                MPI_ERR_ARG,
                "split_type={split_type} is not a split type"
            ))
        }
    };
    out(newcomm, "newcomm", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(
    comm: MPI_Comm,
    group: MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    let (members, me, cctx, sides) = both_sides(comm)?;
    let (g, local) = with(|st| Ok((st.group(group)?.to_vec(), st.comm(comm)?.world.clone())))?;
    if let Some(w) = g.iter().find(|w| !local.contains(w)) {
        return Err(err!(
            MPI_ERR_GROUP,
            "group contains world rank {w}, which is not in the {}",
            if sides.is_some() {
                "local group of the intercommunicator"
            } else {
                "communicator"
            }
        ));
    }
    if let Some((lr, rr)) = sides {
        // MPI-4.0 7.4.2: each group names its part; both sides learn the
        // other's (every process gives its rank in its side's group).
        let me_w = members[me];
        let pos = g.iter().position(|&w| w == me_w).map_or(-1, |p| p as i32);
        let all = create::allgather(&members, me, cctx, TAG_SPLIT - 2, &pos.to_le_bytes())?;
        let ctx = agree_ctx(&members, me, cctx, TAG_AGREE)?;
        let side = |r: std::ops::Range<usize>| -> Vec<i32> {
            let mut v: Vec<(i32, i32)> = r
                .map(|i| {
                    let b = &all[4 * i..4 * i + 4];
                    (i32::from_le_bytes([b[0], b[1], b[2], b[3]]), members[i])
                })
                .filter(|&(p, _)| p >= 0)
                .collect();
            v.sort();
            v.into_iter().map(|(_, w)| w).collect()
        };
        let (l, r) = (side(lr), side(rr));
        let h = if pos < 0 || r.is_empty() {
            MPI_COMM_NULL
        } else {
            with(|st| {
                let errh = st.comm(comm)?.errhandler;
                let mut c = Comm::new(ctx, l, st.rank, "created intercommunicator");
                c.remote = Some(r);
                c.errhandler = errh;
                Ok(st.add_comm(c))
            })?
        };
        return out(newcomm, "newcomm", h);
    }
    let ctx = agree_ctx(&members, me, cctx, TAG_AGREE)?;
    let h = with(|st| {
        if !g.contains(&st.rank) {
            return Ok(MPI_COMM_NULL);
        }
        let errh = st.comm(comm)?.errhandler;
        let mut c = Comm::new(ctx, g.clone(), st.rank, "created communicator");
        c.errhandler = errh;
        Ok(st.add_comm(c))
    })?;
    out(newcomm, "newcomm", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(
    comm: MPI_Comm,
    group: MPI_Group,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    if tag < 0 {
        return Err(err!(MPI_ERR_TAG, "tag={tag} must be non-negative"));
    }
    let (members, _, cctx) = coll_view(comm)?;
    let (g, me_w, errh) = with(|st| {
        Ok((
            st.group(group)?.to_vec(),
            st.rank,
            st.comm(comm)?.errhandler,
        ))
    })?;
    if let Some(w) = g.iter().find(|w| !members.contains(w)) {
        return Err(err!(
            MPI_ERR_GROUP,
            "group contains world rank {w}, which is not in the communicator"
        ));
    }
    let Some(me) = g.iter().position(|&w| w == me_w) else {
        return out(newcomm, "newcomm", MPI_COMM_NULL);
    };
    let ctx = agree_ctx(&g, me, cctx, TAG_CREATE_GROUP - 2 * (tag & 0x7ff_ffff))?;
    let h = with(|st| {
        let mut c = Comm::new(ctx, g.clone(), me_w, "created communicator");
        c.errhandler = errh;
        Ok(st.add_comm(c))
    })?;
    out(newcomm, "newcomm", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    let h = inp(comm, "comm")?;
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err!(
            MPI_ERR_COMM,
            "comm={} is predefined and cannot be freed",
            if h == MPI_COMM_WORLD {
                "MPI_COMM_WORLD"
            } else {
                "MPI_COMM_SELF"
            }
        ));
    }
    let attrs = with(|st| Ok(st.comm(h)?.attrs.clone()))?;
    super::attr::delete_attrs(h, &attrs)?;
    with(|st| st.remove_comm(h).map(|_| ()))?;
    out(comm, "comm", MPI_COMM_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(
    comm1: MPI_Comm,
    comm2: MPI_Comm,
    result: *mut c_int,
) -> c_int {
    let r = with(|st| {
        let a = st.comm(comm1)?;
        let b = st.comm(comm2)?;
        Ok(if comm1 == comm2 {
            MPI_IDENT
        } else if a.world == b.world && a.remote == b.remote {
            MPI_CONGRUENT
        } else {
            let mut x = a.world.clone();
            let mut y = b.world.clone();
            x.sort();
            y.sort();
            if x == y && a.remote.is_none() == b.remote.is_none() {
                MPI_SIMILAR
            } else {
                MPI_UNEQUAL
            }
        })
    })?;
    out(result, "result", r)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    let f = with(|st| Ok(st.comm(comm)?.remote.is_some()))?;
    out(flag, "flag", f as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    let name: String = cstr(comm_name, "comm_name")?
        .chars()
        .take(MPI_MAX_OBJECT_NAME as usize - 1)
        .collect();
    with(|st| {
        st.comm_mut(comm)?.name = name;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(
    comm: MPI_Comm,
    comm_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let name = with(|st| Ok(st.comm(comm)?.name.clone()))?;
    let n = write_cstr(comm_name, MPI_MAX_OBJECT_NAME as usize, &name)?;
    out(resultlen, "resultlen", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    let kv = crate::core::info::get(info)?;
    with(|st| {
        st.comm_mut(comm)?.info = kv;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    let h = with(|st| {
        let mut kv = st.comm(comm)?.info.clone();
        // MPI-4.1's memory kinds: what this process supports, on every
        // communicator (the CUDA kinds once a driver is usable).
        if !kv.iter().any(|(k, _)| k == "mpi_memory_alloc_kinds") {
            kv.push(("mpi_memory_alloc_kinds".into(), crate::gpu::alloc_kinds()));
        }
        Ok(kv)
    })?;
    let h = crate::core::info::insert(h);
    out(info_used, "info_used", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let g = with(|st| {
        let w = st.comm(comm)?.world.clone();
        Ok(st.add_group(w))
    })?;
    out(group, "group", g)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    let n = with(|st| {
        st.comm(comm)?
            .remote
            .as_ref()
            .map(|r| r.len() as c_int)
            .ok_or_else(|| {
                err!(
                    MPI_ERR_COMM,
                    "comm=0x{:08x} is not an intercommunicator",
                    comm as u32
                )
            })
    })?;
    out(size, "size", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let g = with(|st| {
        let r = st.comm(comm)?.remote.clone().ok_or_else(|| {
            err!(
                MPI_ERR_COMM,
                "comm=0x{:08x} is not an intercommunicator",
                comm as u32
            )
        })?;
        Ok(st.add_group(r))
    })?;
    out(group, "group", g)
}

fn i32s_to_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_to_i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    if newintercomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newintercomm=NULL"));
    }
    let (local, me, lctx) = coll_view(local_comm)?;
    if local_leader < 0 || local_leader as usize >= local.len() {
        return Err(err!(
            MPI_ERR_RANK,
            "local_leader={local_leader} is not a rank of local_comm (size {})",
            local.len()
        ));
    }
    let leader = me == local_leader as usize;
    // The leaders talk through peer_comm's point-to-point context with the user's tag.
    let peer = if leader {
        Some(with(|st| {
            let p = st.comm(peer_comm)?;
            if remote_leader < 0 || remote_leader >= p.peer_size() {
                return Err(err!(
                    MPI_ERR_RANK,
                    "remote_leader={remote_leader} is not a rank of peer_comm (size {})",
                    p.peer_size()
                ));
            }
            Ok((p.ctx, p.rank, p.peer_world(remote_leader)))
        })?)
    } else {
        None
    };
    let lv = crate::coll::basic::view(local_comm)?;
    // 1. Leaders swap group sizes, then the groups (world ranks).
    let mut remote: Vec<i32> = Vec::new();
    let mut sizes = [0u8; 4];
    if let Some((pctx, prank, pw)) = peer {
        create::sendrecv(
            pctx,
            prank,
            pw,
            &(local.len() as i32).to_le_bytes(),
            remote_leader,
            &mut sizes,
            tag,
        )?;
        let n = i32::from_le_bytes(sizes) as usize;
        let mut rb = vec![0u8; 4 * n];
        create::sendrecv(
            pctx,
            prank,
            pw,
            &i32s_to_bytes(&local),
            remote_leader,
            &mut rb,
            tag,
        )?;
        remote = bytes_to_i32s(&rb);
    }
    crate::coll::basic::bcast(&lv, &mut sizes, local_leader as usize)?;
    let mut rb = if leader {
        i32s_to_bytes(&remote)
    } else {
        vec![0u8; 4 * i32::from_le_bytes(sizes) as usize]
    };
    crate::coll::basic::bcast(&lv, &mut rb, local_leader as usize)?;
    remote = bytes_to_i32s(&rb);
    // 2. Context id agreed over both groups: local maxima, swapped by the leaders.
    let mut floor = 0u32;
    let ctx = loop {
        let prop = with(|st| {
            let p = st.next_ctx.max(floor);
            st.next_ctx = p + 2;
            Ok(p)
        })?;
        let all = create::allgather(&local, me, lctx, TAG_INTER, &prop.to_le_bytes())?;
        let mut x = all
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .max()
            .unwrap();
        let mut xb = x.to_le_bytes();
        if let Some((pctx, prank, pw)) = peer {
            let mut other = [0u8; 4];
            create::sendrecv(pctx, prank, pw, &xb, remote_leader, &mut other, tag)?;
            x = x.max(u32::from_le_bytes(other));
            xb = x.to_le_bytes();
        }
        crate::coll::basic::bcast(&lv, &mut xb, local_leader as usize)?;
        x = u32::from_le_bytes(xb);
        let ok = with(|st| Ok(st.reserve_ctx(x)))?;
        let oks = create::allgather(&local, me, lctx, TAG_INTER - 1, &[ok as u8])?;
        let mut all_ok = [oks.iter().all(|&b| b == 1) as u8];
        if let Some((pctx, prank, pw)) = peer {
            let mut other = [0u8; 1];
            create::sendrecv(pctx, prank, pw, &all_ok, remote_leader, &mut other, tag)?;
            all_ok[0] &= other[0];
        }
        crate::coll::basic::bcast(&lv, &mut all_ok, local_leader as usize)?;
        if all_ok[0] == 1 {
            with(|st| {
                st.next_ctx = st.next_ctx.max(x + 2);
                Ok(())
            })?;
            break x;
        }
        if ok {
            with(|st| {
                st.release_ctx(x);
                Ok(())
            })?;
        }
        floor = x + 2;
    };
    let h = with(|st| {
        let errh = st.comm(local_comm)?.errhandler;
        let mut c = Comm::new(ctx, local.clone(), st.rank, "intercommunicator");
        c.remote = Some(remote.clone());
        c.errhandler = errh;
        Ok(st.add_comm(c))
    })?;
    out(newintercomm, "newintercomm", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(
    intercomm: MPI_Comm,
    high: c_int,
    newintracomm: *mut MPI_Comm,
) -> c_int {
    if newintracomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newintracomm=NULL"));
    }
    let (local, remote, rank, ctx) = with(|st| {
        let c = st.comm(intercomm)?;
        let r = c.remote.clone().ok_or_else(|| {
            err!(
                MPI_ERR_COMM,
                "comm=0x{:08x} is not an intercommunicator",
                intercomm as u32
            )
        })?;
        Ok((c.world.clone(), r, c.rank as usize, c.ctx + 1))
    })?;
    // Local ranks 0 swap the "high" flags over the intercommunicator, then tell their group.
    let me_high = (high != 0) as u8;
    let mut flags = [me_high, 0u8];
    // Local-group traffic shares the collective context with distinct tags.
    let lgroup_view = crate::coll::basic::View {
        ctx,
        world: local.clone(),
        rank,
        size: local.len(),
        tag: TAG_INTER - 6,
        comm: intercomm,
    };
    if rank == 0 {
        let mut other = [0u8; 1];
        create::sendrecv(ctx, 0, remote[0], &[me_high], 0, &mut other, TAG_INTER - 2)?;
        flags[1] = other[0];
    }
    crate::coll::basic::bcast(&lgroup_view, &mut flags, 0)?;
    let (lh, rh) = (flags[0], flags[1]);
    // Low group first; on a tie, the group whose first member has the lower world rank.
    let local_first = if lh != rh {
        lh == 0
    } else {
        local[0] < remote[0]
    };
    let merged: Vec<i32> = if local_first {
        local.iter().chain(remote.iter()).copied().collect()
    } else {
        remote.iter().chain(local.iter()).copied().collect()
    };
    let me_w = with(|st| Ok(st.rank))?;
    let me = merged.iter().position(|&w| w == me_w).unwrap();
    let nctx = agree_ctx(&merged, me, ctx, TAG_INTER - 4)?;
    let h = with(|st| {
        let errh = st.comm(intercomm)?.errhandler;
        let mut c = Comm::new(nctx, merged.clone(), me_w, "merged intercommunicator");
        c.errhandler = errh;
        Ok(st.add_comm(c))
    })?;
    out(newintracomm, "newintracomm", h)
}

/// The tag of a group-based creation (MPI_Comm_create_from_group,
/// MPI_Intercomm_create_from_groups) named `stringtag`: a hash of it, in a
/// range of internal tags of its own (below MPI_Comm_create_group's), so
/// calls with different tags over overlapping groups do not meet.
fn string_tag(stringtag: &str) -> i32 {
    // FNV-1a: the same on every process.
    let mut h: u32 = 0x811c_9dc5;
    for b in stringtag.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    TAG_CREATE_GROUP - 0x1000_0000 - 2 * (h & 0x7ff_ffff) as i32
}

/// What a group-based creation starts from: the group's world ranks,
/// the error handler checked (MPI_ERRHANDLER_NULL: the default), the info
/// pairs and the context its agreement runs in (MPI_COMM_WORLD's
/// collective one: every process of the job has it, under sessions too).
#[allow(clippy::type_complexity)]
fn from_group_args(
    group: MPI_Group,
    name: &str,
    info: MPI_Info,
    errhandler: super::MPI_Errhandler,
) -> Result<(Vec<i32>, c_int, Vec<(String, String)>, u32, i32)> {
    let kv = info_pairs(info)?;
    with(|st| {
        let g = st.group(group)?.to_vec();
        let errh = if errhandler == MPI_ERRHANDLER_NULL {
            MPI_ERRORS_ARE_FATAL
        } else {
            super::errh::check_errhandler(st, errhandler)?;
            errhandler
        };
        if !g.contains(&st.rank) {
            return Err(err!(
                MPI_ERR_GROUP,
                "{name}=0x{:08x} does not contain the calling process (world rank {})",
                group as u32,
                st.rank
            ));
        }
        Ok((g, errh, kv, st.comm(MPI_COMM_WORLD)?.ctx + 1, st.rank))
    })
}

/// MPI-4.0 11.4: a communicator of `group`'s processes, made without a
/// parent communicator (the sessions model's way in).
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    group: MPI_Group,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: super::MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if newcomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newcomm=NULL"));
    }
    let tag = string_tag(&cstr(stringtag, "stringtag")?);
    let (g, errh, kv, wctx, me_w) = from_group_args(group, "group", info, errhandler)?;
    let me = g.iter().position(|&w| w == me_w).unwrap();
    let ctx = agree_ctx(&g, me, wctx, tag)?;
    let h = with(|st| {
        let mut c = Comm::new(ctx, g, me_w, "communicator from group");
        c.errhandler = errh;
        c.info = kv;
        Ok(st.add_comm(c))
    })?;
    out(newcomm, "newcomm", h)
}

/// MPI-4.0 11.4: an intercommunicator between two disjoint groups, made
/// without a parent communicator; every process of both groups calls it.
/// The leaders are checked, but as both sides name both groups, the
/// agreement on the context id runs over all of them.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: super::MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    if newintercomm.is_null() {
        return Err(err!(MPI_ERR_ARG, "newintercomm=NULL"));
    }
    let tag = string_tag(&cstr(stringtag, "stringtag")?);
    let (local, errh, kv, wctx, me_w) =
        from_group_args(local_group, "local_group", info, errhandler)?;
    let remote = with(|st| Ok(st.group(remote_group)?.to_vec()))?;
    for (name, v, n) in [
        ("local_leader", local_leader, local.len()),
        ("remote_leader", remote_leader, remote.len()),
    ] {
        if v < 0 || v as usize >= n {
            return Err(err!(
                MPI_ERR_RANK,
                "{name}={v} is not a rank of its group (size {n})"
            ));
        }
    }
    if remote.is_empty() {
        return Err(err!(MPI_ERR_GROUP, "remote_group is empty"));
    }
    if let Some(w) = remote.iter().find(|w| local.contains(w)) {
        return Err(err!(
            MPI_ERR_GROUP,
            "world rank {w} is in both local_group and remote_group (they must be disjoint)"
        ));
    }
    // Both sides order the union alike: the group holding the lower world
    // rank first (as `Comm::both_groups`).
    let local_first = local.iter().min() < remote.iter().min();
    let all: Vec<i32> = if local_first {
        local.iter().chain(&remote).copied().collect()
    } else {
        remote.iter().chain(&local).copied().collect()
    };
    let me = all.iter().position(|&w| w == me_w).unwrap();
    let ctx = agree_ctx(&all, me, wctx, tag)?;
    let h = with(|st| {
        let mut c = Comm::new(ctx, local, me_w, "intercommunicator from groups");
        c.remote = Some(remote);
        c.errhandler = errh;
        c.info = kv;
        Ok(st.add_comm(c))
    })?;
    out(newintercomm, "newintercomm", h)
}

/// MPI_Comm_disconnect: collective; waits until the communication this
/// process started on `comm` (requests not yet complete, freed by the user
/// or not) has completed, then frees the communicator as MPI_Comm_free does
/// and sets the handle to MPI_COMM_NULL.
#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    let h = inp(comm, "comm")?;
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err!(
            MPI_ERR_COMM,
            "comm={} is predefined and cannot be disconnected",
            if h == MPI_COMM_WORLD {
                "MPI_COMM_WORLD"
            } else {
                "MPI_COMM_SELF"
            }
        ));
    }
    with(|st| st.comm(h).map(|_| ()))?;
    crate::core::runtime::wait_for(|st| {
        let busy = st
            .reqs
            .iter()
            .any(|(_, r)| r.comm == h && r.active && !r.done);
        Ok((!busy).then_some(()))
    })?;
    // Every member has finished its communication on `comm` before any
    // frees it.
    super::coll::__oxmpi_body_MPI_Barrier(h)?;
    super::comm::__oxmpi_body_MPI_Comm_free(comm)
}
