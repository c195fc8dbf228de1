//! One-sided communication's entry points: window creation and freeing,
//! the window's attributes, info, name, group and error handlers, the
//! operations and the synchronization calls. The mechanics (segment,
//! targets, locks, counters, atomics) are `crate::rma`.

use super::consts::*;
use super::datatype::lookup;
use super::handles::{self, KIND_ERRHANDLER};
use super::ptr::{cstr, inp, out, write_cstr};
use super::{
    MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Errhandler, MPI_Group, MPI_Info, MPI_Op,
    MPI_Request, MPI_Win,
};
use super::{
    MPI_Win_copy_attr_function, MPI_Win_delete_attr_function, MPI_Win_errhandler_function,
};
use crate::core::error::Result;
use crate::core::runtime::with;
use crate::datatype::{self as dtm, Type};
use crate::err;
use crate::rma::{self, layout::Layout, AccOp, Epochs, Target, Win};
use oxmpi_macros::mpi_fn;
use std::borrow::Cow;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{fence, AtomicPtr, Ordering};
use std::sync::Arc;

const OBJ_WIN: u32 = handles::KIND_WIN;

/// What each rank tells the others when a window is created.
#[derive(Clone, Copy, Default)]
struct Card {
    pid: i32,
    node: i32,
    unit: i64,
    size: u64,
    base: u64,
    /// Where an `MPI_Win_allocate` rank's memory starts in its page
    /// (`skew_for`).
    skew: u64,
}

impl Card {
    const LEN: usize = 40;
    fn bytes(&self) -> [u8; 40] {
        let mut b = [0u8; 40];
        b[0..4].copy_from_slice(&self.pid.to_le_bytes());
        b[4..8].copy_from_slice(&self.node.to_le_bytes());
        b[8..16].copy_from_slice(&self.unit.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&self.base.to_le_bytes());
        b[32..40].copy_from_slice(&self.skew.to_le_bytes());
        b
    }
    fn from(b: &[u8]) -> Card {
        let i = |r: std::ops::Range<usize>| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..r.len()].copy_from_slice(&b[r]);
            a
        };
        Card {
            pid: i32::from_le_bytes(b[0..4].try_into().unwrap()),
            node: i32::from_le_bytes(b[4..8].try_into().unwrap()),
            unit: i64::from_le_bytes(i(8..16)),
            size: u64::from_le_bytes(i(16..24)),
            base: u64::from_le_bytes(i(24..32)),
            skew: u64::from_le_bytes(i(32..40)),
        }
    }
}

/// Every rank's `mine` (equal lengths) on communicator `comm`, in rank order.
fn allgather_bytes(comm: MPI_Comm, mine: &[u8]) -> Result<Vec<u8>> {
    let n = with(|st| Ok(st.comm(comm)?.size as usize))?;
    let mut all = vec![0u8; n * mine.len()];
    super::coll::__oxmpi_body_MPI_Allgather(
        mine.as_ptr() as *const c_void,
        mine.len() as c_int,
        MPI_BYTE,
        all.as_mut_ptr() as *mut c_void,
        mine.len() as c_int,
        MPI_BYTE,
        comm,
    )?;
    Ok(all)
}

/// Every rank's `mine` (any lengths) on communicator `comm`, in rank order.
fn allgatherv_bytes(comm: MPI_Comm, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
    let lens = allgather_bytes(comm, &(mine.len() as u32).to_le_bytes())?;
    let lens: Vec<usize> = lens
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize)
        .collect();
    let max = lens.iter().copied().max().unwrap_or(0);
    if max == 0 {
        return Ok(vec![Vec::new(); lens.len()]);
    }
    let mut padded = mine.to_vec();
    padded.resize(max, 0);
    let all = allgather_bytes(comm, &padded)?;
    Ok(all
        .chunks_exact(max)
        .zip(&lens)
        .map(|(c, &n)| c[..n].to_vec())
        .collect())
}

fn free_comm(mut c: MPI_Comm) {
    let _ = super::comm::__oxmpi_body_MPI_Comm_free(&mut c);
}

pub(crate) fn info_of(info: MPI_Info) -> Result<Vec<(String, String)>> {
    if info == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    crate::core::info::get(info)
}

/// The `mpi_minimum_memory_alignment` info value (MPI 4.0): a power of
/// two, else None (the hint is ignored).
pub(crate) fn min_alignment(kv: &[(String, String)]) -> Option<usize> {
    kv.iter()
        .find(|(k, _)| k == "mpi_minimum_memory_alignment")
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .filter(|a| a.is_power_of_two())
}

fn info_true(kv: &[(String, String)], key: &str) -> bool {
    kv.iter()
        .any(|(k, v)| k == key && v.trim().eq_ignore_ascii_case("true"))
}

/// Which ranks of window communicator `wcomm` bring CUDA device memory to
/// an `MPI_Win_create` (this rank `size` bytes at `base`), with its IPC
/// reference. Collective. A rank whose device memory cannot be exported
/// fails the call on every rank.
fn device_refs(
    wcomm: MPI_Comm,
    base: usize,
    size: usize,
) -> Result<Vec<Option<crate::gpu::ipc::IpcRef>>> {
    use crate::gpu::ipc::{IpcRef, WIRE};
    // [0]: 0 host, 1 device, 2 device memory that could not be exported.
    let mut mine = [0u8; 1 + WIRE];
    let mut why = String::new();
    if size > 0 && crate::gpu::classify(base as *const u8, size) == crate::gpu::MemKind::Device {
        match crate::gpu::ipc::export(base as *const u8) {
            Ok(r) => {
                mine[0] = 1;
                mine[1..].copy_from_slice(&r.to_bytes());
            }
            Err(e) => {
                mine[0] = 2;
                why = e.msg;
            }
        }
    }
    let all = allgather_bytes(wcomm, &mine)?;
    let recs: Vec<&[u8]> = all.chunks_exact(1 + WIRE).collect();
    if let Some(r) = recs.iter().position(|c| c[0] == 2) {
        return Err(err!(
            MPI_ERR_OTHER,
            "rank {r} brings device memory to MPI_Win_create that CUDA IPC cannot describe{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            }
        ));
    }
    Ok(recs
        .iter()
        .map(|c| (c[0] == 1).then(|| IpcRef::from_bytes(&c[1..])).flatten())
        .collect())
}

/// The collective part of every window creation. `base`: the memory the
/// rank brings (create), else 0. Returns the handle and this rank's base.
fn create(
    comm: MPI_Comm,
    flavor: c_int,
    base: usize,
    size: MPI_Aint,
    unit: MPI_Aint,
    info: MPI_Info,
) -> Result<(MPI_Win, usize)> {
    if size < 0 {
        return Err(err!(MPI_ERR_SIZE, "size={size} is negative"));
    }
    if unit <= 0 {
        return Err(err!(MPI_ERR_DISP, "disp_unit={unit} must be positive"));
    }
    let kv = info_of(info)?;
    with(|st| {
        if st.comm(comm)?.remote.is_some() {
            return Err(err!(
                MPI_ERR_COMM,
                "comm=0x{:08x} is an intercommunicator: windows are created on intracommunicators",
                comm as u32
            ));
        }
        Ok(())
    })?;
    let mut wcomm: MPI_Comm = MPI_COMM_NULL;
    super::comm::__oxmpi_body_MPI_Comm_dup(comm, &mut wcomm)?;
    let r = build(wcomm, flavor, base, size as usize, unit as usize, kv);
    if r.is_err() {
        free_comm(wcomm);
    }
    r
}

fn build(
    wcomm: MPI_Comm,
    flavor: c_int,
    base: usize,
    size: usize,
    unit: usize,
    kv: Vec<(String, String)>,
) -> Result<(MPI_Win, usize)> {
    let (rank, world, ctx, kvs) = with(|st| {
        let c = st.comm(wcomm)?;
        Ok((
            c.rank as usize,
            c.world.clone(),
            c.ctx,
            st.pmi.kvsname.clone(),
        ))
    })?;
    let node = with(|st| Ok(st.node_of(world[rank])))?;
    let mine = Card {
        pid: crate::sys::pid(),
        node,
        unit: unit as i64,
        size: size as u64,
        base: base as u64,
        skew: if flavor == MPI_WIN_FLAVOR_ALLOCATE {
            crate::rma::layout::skew_for(min_alignment(&kv)) as u64
        } else {
            0
        },
    };
    let all = allgather_bytes(wcomm, &mine.bytes())?;
    let cards: Vec<Card> = all.chunks_exact(Card::LEN).map(Card::from).collect();
    if flavor == MPI_WIN_FLAVOR_SHARED {
        if let Some(r) = cards.iter().position(|c| c.node != node) {
            return Err(err!(
                MPI_ERR_RMA_SHARED,
                "MPI_Win_allocate_shared needs every rank of comm on one node: rank {r} (world rank {}) is on another node than rank {rank}",
                world[r]
            ));
        }
    }
    let local: Vec<usize> = (0..cards.len())
        .filter(|&r| cards[r].node == node)
        .collect();
    let me_local = local.iter().position(|&r| r == rank).unwrap();
    let allocated = flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED;
    let sizes: Vec<usize> = local
        .iter()
        .map(|&r| if allocated { cards[r].size as usize } else { 0 })
        .collect();
    let contiguous = flavor == MPI_WIN_FLAVOR_SHARED && !info_true(&kv, "alloc_shared_noncontig");
    let skews: Vec<usize> = local.iter().map(|&r| cards[r].skew as usize).collect();
    let layout = Layout::new(&sizes, contiguous, flavor == MPI_WIN_FLAVOR_DYNAMIC, &skews);
    let name = format!(
        "{}-w{}",
        crate::transport::shm::segment_name(&kvs, world[local[0]]),
        ctx
    );
    // The node's lowest rank creates the segment, the others map it once
    // it exists; a failure anywhere fails the call on every rank.
    let leader = me_local == 0;
    let mut why = String::new();
    let mut seg = if leader {
        crate::sys::ShmMap::create(&name, layout.len)
            .map_err(|e| why = format!("{e}"))
            .ok()
    } else {
        None
    };
    let oks = allgather_bytes(wcomm, &[seg.is_some() as u8 | !leader as u8])?;
    if let Some(r) = oks.iter().position(|&b| b == 0) {
        return Err(err!(
            MPI_ERR_NO_MEM,
            "the window's shared segment ({} bytes) could not be created on rank {r}'s node{}",
            layout.len,
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        ));
    }
    if !leader {
        seg = crate::sys::ShmMap::open(&name, layout.len)
            .map_err(|e| why = format!("{e}"))
            .ok()
            .flatten();
    }
    let oks = allgather_bytes(wcomm, &[seg.is_some() as u8])?;
    if leader {
        crate::sys::ShmMap::unlink(&name);
    }
    if let Some(r) = oks.iter().position(|&b| b == 0) {
        return Err(err!(
            MPI_ERR_OTHER,
            "rank {r} could not map the window's shared segment {name}{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        ));
    }
    let seg = seg.unwrap();
    let sbase = seg.base() as usize;
    // MPI_Win_create of device memory: every rank learns which ranks'
    // memory is device memory, with its CUDA IPC reference.
    let dev = if flavor == MPI_WIN_FLAVOR_CREATE {
        device_refs(wcomm, base, size)?
    } else {
        vec![None; cards.len()]
    };
    let targets: Vec<Target> = cards
        .iter()
        .enumerate()
        .map(|(r, c)| {
            let li = local.iter().position(|&q| q == r);
            let (addr, direct) = match li {
                Some(i) if allocated => (sbase + layout.data[i], true),
                _ if r == rank => (base, true),
                _ => (c.base as usize, false),
            };
            Target {
                world: world[r],
                pid: c.pid,
                local: li,
                addr,
                direct,
                device: dev[r].is_some(),
                size: if flavor == MPI_WIN_FLAVOR_DYNAMIC {
                    usize::MAX
                } else {
                    c.size as usize
                },
                unit: if flavor == MPI_WIN_FLAVOR_DYNAMIC {
                    1
                } else {
                    c.unit as usize
                },
            }
        })
        .collect();
    let mut targets = targets;
    // The node's other ranks' device memory: mapped here by CUDA IPC for
    // the window's life (pinned in the mapping cache).
    let mut dev_maps = rma::DevMaps::default();
    let mut why = String::new();
    for (r, t) in targets.iter_mut().enumerate() {
        if let (Some(rf), Some(_), false) = (dev[r].as_ref(), t.local, r == rank) {
            match crate::gpu::ipc::pin(t.world as usize, rf) {
                Ok(p) => {
                    dev_maps.0.push((t.world as usize, rf.id));
                    t.addr = p as usize;
                    t.direct = true;
                }
                Err(e) => why = format!("rank {r}'s device memory: {}", e.msg),
            }
        }
    }
    let oks = allgather_bytes(wcomm, &[why.is_empty() as u8])?;
    if let Some(bad) = oks.iter().position(|&b| b == 0) {
        return Err(err!(
            MPI_ERR_OTHER,
            "rank {bad} of the window could not map the device memory of a rank of its node by CUDA IPC{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" (here, {why})")
            }
        ));
    }
    let my_base = if allocated {
        sbase + layout.data[me_local]
    } else {
        base
    };
    let n = cards.len();
    // Ranks on other nodes: UCX reaches every rank of the window (memory
    // attached to a dynamic window by active messages its target checks).
    let spans = cards.iter().any(|c| c.node != node);
    let remote = if spans {
        let mut gather = |b: &[u8]| allgatherv_bytes(wcomm, b);
        Some(rma::net::Remote::new(
            ctx as u64,
            n,
            rank,
            &world,
            my_base,
            size,
            flavor == MPI_WIN_FLAVOR_DYNAMIC,
            dev[rank].is_some(),
            &mut gather,
        )?)
    } else {
        None
    };
    if let Some(net) = remote.as_ref() {
        for (r, t) in targets.iter_mut().enumerate() {
            if t.local.is_none() {
                t.addr = net.peers[r].base as usize;
            }
        }
    }
    let w = Win {
        comm: wcomm,
        rank,
        world,
        flavor,
        targets,
        seg,
        layout,
        me_local,
        atomics: allocated,
        // A dynamic window's memory, and device memory, have no keys for
        // the fabric's atomics.
        single_intrinsic: info_true(&kv, "acc_single_intrinsic")
            && flavor != MPI_WIN_FLAVOR_DYNAMIC
            && dev.iter().all(|d| d.is_none()),
        base: my_base,
        size_attr: if flavor == MPI_WIN_FLAVOR_DYNAMIC {
            0
        } else {
            size as isize
        },
        unit_attr: unit as c_int,
        flavor_attr: flavor,
        model_attr: MPI_WIN_UNIFIED,
        errhandler: MPI_ERRORS_ARE_FATAL,
        name: String::new(),
        attrs: Vec::new(),
        info: kv,
        ep: Epochs {
            start_seen: vec![false; n],
            posts_seen: vec![0; n],
            posted: vec![0; n],
            locks: vec![None; n],
            ..Default::default()
        },
        attached: Vec::new(),
        remote,
        dev_maps,
        stored: std::cell::Cell::new(false),
        cma: Default::default(),
    };
    Ok((rma::insert(w)?, my_base))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    if win.is_null() {
        return Err(err!(MPI_ERR_ARG, "win=NULL"));
    }
    if base.is_null() && size > 0 {
        return Err(err!(MPI_ERR_BASE, "base=NULL with size={size}"));
    }
    let (h, _) = create(
        comm,
        MPI_WIN_FLAVOR_CREATE,
        base as usize,
        size,
        disp_unit as MPI_Aint,
        info,
    )?;
    out(win, "win", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_c(
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    if win.is_null() {
        return Err(err!(MPI_ERR_ARG, "win=NULL"));
    }
    if base.is_null() && size > 0 {
        return Err(err!(MPI_ERR_BASE, "base=NULL with size={size}"));
    }
    let (h, _) = create(
        comm,
        MPI_WIN_FLAVOR_CREATE,
        base as usize,
        size,
        disp_unit,
        info,
    )?;
    out(win, "win", h)
}

fn allocate(
    flavor: c_int,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> Result<()> {
    if win.is_null() {
        return Err(err!(MPI_ERR_ARG, "win=NULL"));
    }
    if baseptr.is_null() {
        return Err(err!(MPI_ERR_ARG, "baseptr=NULL"));
    }
    let (h, b) = create(comm, flavor, 0, size, disp_unit, info)?;
    out(baseptr as *mut usize, "baseptr", b)?;
    out(win, "win", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    allocate(
        MPI_WIN_FLAVOR_ALLOCATE,
        size,
        disp_unit as MPI_Aint,
        info,
        comm,
        baseptr,
        win,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_c(
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    allocate(
        MPI_WIN_FLAVOR_ALLOCATE,
        size,
        disp_unit,
        info,
        comm,
        baseptr,
        win,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(
    size: MPI_Aint,
    disp_unit: c_int,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    allocate(
        MPI_WIN_FLAVOR_SHARED,
        size,
        disp_unit as MPI_Aint,
        info,
        comm,
        baseptr,
        win,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared_c(
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> c_int {
    allocate(
        MPI_WIN_FLAVOR_SHARED,
        size,
        disp_unit,
        info,
        comm,
        baseptr,
        win,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    if win.is_null() {
        return Err(err!(MPI_ERR_ARG, "win=NULL"));
    }
    let (h, _) = create(comm, MPI_WIN_FLAVOR_DYNAMIC, 0, 0, 1, info)?;
    out(win, "win", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    rma::with_win(win, |w| {
        if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            return Err(err!(
                MPI_ERR_RMA_FLAVOR,
                "MPI_Win_attach needs a window of MPI_Win_create_dynamic"
            ));
        }
        if size < 0 {
            return Err(err!(MPI_ERR_SIZE, "size={size} is negative"));
        }
        if base.is_null() && size > 0 {
            return Err(err!(MPI_ERR_BASE, "base=NULL with size={size}"));
        }
        let (a, n) = (base as usize, size as usize);
        if let Some(&(b, m, _)) = w.attached.iter().find(|&&(b, m, _)| a < b + m && b < a + n) {
            return Err(err!(
                MPI_ERR_RMA_ATTACH,
                "base={a:#x} size={n} overlaps the region {b:#x} (size {m}) already attached"
            ));
        }
        let device =
            n > 0 && crate::gpu::classify(a as *const u8, n) == crate::gpu::MemKind::Device;
        if device {
            // The node's other ranks of the window map it by CUDA IPC.
            let ipc = if w.layout.n > 1 {
                Some(crate::gpu::ipc::export(a as *const u8).map_err(|e| {
                    err!(
                        MPI_ERR_OTHER,
                        "base={a:#x} is CUDA device memory that the window's other ranks on this node cannot map: {}",
                        e.msg
                    )
                })?)
            } else {
                None
            };
            w.attach_device(a, n, ipc.as_ref())?;
        } else {
            w.attach_region(a, n);
        }
        if let Some(net) = w.remote.as_ref() {
            net.attach(a, n, device);
        }
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    rma::with_win(win, |w| {
        if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            return Err(err!(
                MPI_ERR_RMA_FLAVOR,
                "MPI_Win_detach needs a window of MPI_Win_create_dynamic"
            ));
        }
        let a = base as usize;
        if !w.attached.iter().any(|&(b, _, _)| b == a) {
            return Err(err!(
                MPI_ERR_RMA_ATTACH,
                "base={a:#x} is not the start of memory attached to this window"
            ));
        }
        w.detach_region(a);
        if let Some(net) = w.remote.as_ref() {
            net.detach(a);
        }
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    let h = inp(win, "win")?;
    let wcomm = rma::with_win(h, |w| {
        if let Some(why) = w.open_epoch() {
            return Err(err!(MPI_ERR_RMA_SYNC, "win=0x{:08x}: {why}", h as u32));
        }
        w.settle(None)?;
        Ok(w.comm)
    })?;
    // Every rank has finished with the window memory of all others.
    fence(Ordering::SeqCst);
    super::coll::__oxmpi_body_MPI_Barrier(wcomm)?;
    let attrs = rma::with_win(h, |w| Ok(std::mem::take(&mut w.attrs)))?;
    for &(kv, val) in attrs.iter().rev() {
        super::attr::delete_one(h, kv, val)?;
    }
    rma::remove(h)?;
    free_comm(wcomm);
    out(win, "win", MPI_WIN_NULL)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    let (s, u, b) = shared_query(win, rank)?;
    out(size, "size", s as MPI_Aint)?;
    out(disp_unit, "disp_unit", u as c_int)?;
    out(baseptr as *mut usize, "baseptr", b)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query_c(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut MPI_Aint,
    baseptr: *mut c_void,
) -> c_int {
    let (s, u, b) = shared_query(win, rank)?;
    out(size, "size", s as MPI_Aint)?;
    out(disp_unit, "disp_unit", u as MPI_Aint)?;
    out(baseptr as *mut usize, "baseptr", b)
}

/// (size, disp_unit, address in this process) of rank `rank`'s window
/// memory where this process can load and store it, else (0, unit, 0).
/// MPI_PROC_NULL: the lowest rank with memory.
fn shared_query(win: MPI_Win, rank: c_int) -> Result<(usize, usize, usize)> {
    rma::with_win(win, |w| {
        let n = w.targets.len();
        let shared = |t: &Target| t.direct && t.local.is_some();
        let r = if rank == MPI_PROC_NULL {
            match (0..n).find(|&r| w.targets[r].size > 0 && shared(&w.targets[r])) {
                Some(r) => r,
                None => return Ok((0, w.unit_attr as usize, 0)),
            }
        } else if rank < 0 || rank as usize >= n {
            return Err(err!(
                MPI_ERR_RANK,
                "rank={rank} is not a rank of the window (size {n})"
            ));
        } else {
            rank as usize
        };
        let t = &w.targets[r];
        if w.flavor == MPI_WIN_FLAVOR_DYNAMIC || !shared(t) {
            return Ok((0, t.unit, 0));
        }
        Ok((t.size, t.unit, t.addr))
    })
}

// ---------------------------------------------------------------- attributes

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    win_copy_attr_fn: *mut MPI_Win_copy_attr_function,
    win_delete_attr_fn: *mut MPI_Win_delete_attr_function,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    if win_keyval.is_null() {
        return Err(err!(MPI_ERR_ARG, "win_keyval=NULL"));
    }
    let h = super::attr::create_keyval(win_copy_attr_fn, win_delete_attr_fn, extra_state, OBJ_WIN)?;
    out(win_keyval, "win_keyval", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> c_int {
    let kv = inp(win_keyval, "win_keyval")?;
    if predefined(kv) {
        return Err(err!(
            MPI_ERR_KEYVAL,
            "win_keyval={kv:#x} is predefined and cannot be freed"
        ));
    }
    super::attr::free_keyval(kv, OBJ_WIN)?;
    out(win_keyval, "win_keyval", MPI_KEYVAL_INVALID)
}

fn predefined(kv: c_int) -> bool {
    matches!(
        kv,
        MPI_WIN_BASE | MPI_WIN_SIZE | MPI_WIN_DISP_UNIT | MPI_WIN_CREATE_FLAVOR | MPI_WIN_MODEL
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_attr(
    win: MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    if predefined(win_keyval) {
        return Err(err!(
            MPI_ERR_KEYVAL,
            "win_keyval={win_keyval:#x} is predefined and cannot be set"
        ));
    }
    with(|st| st.keyval(win_keyval, OBJ_WIN).map(|_| ()))?;
    let old = rma::with_win(win, |w| {
        Ok(w.attrs.iter().find(|a| a.0 == win_keyval).map(|a| a.1))
    })?;
    if let Some(v) = old {
        super::attr::delete_one(win, win_keyval, v)?;
    }
    rma::with_win(win, |w| {
        w.attrs.retain(|x| x.0 != win_keyval);
        w.attrs.push((win_keyval, attribute_val as usize));
        Ok(())
    })?;
    with(|st| {
        let (_, i) = crate::core::comm::keyval_index(win_keyval).unwrap();
        st.keyvals.get_mut(i).unwrap().refs += 1;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let v = rma::with_win(win, |g| {
        Ok(match win_keyval {
            // The base itself; the others as the address of their value.
            MPI_WIN_BASE => Some(g.base),
            MPI_WIN_SIZE => Some(&g.size_attr as *const isize as usize),
            MPI_WIN_DISP_UNIT => Some(&g.unit_attr as *const c_int as usize),
            MPI_WIN_CREATE_FLAVOR => Some(&g.flavor_attr as *const c_int as usize),
            MPI_WIN_MODEL => Some(&g.model_attr as *const c_int as usize),
            kv => {
                with(|st| st.keyval_in_use(kv, OBJ_WIN).map(|_| ()))?;
                g.attrs.iter().find(|a| a.0 == kv).map(|a| a.1)
            }
        })
    })?;
    match v {
        Some(v) => {
            out(attribute_val as *mut usize, "attribute_val", v)?;
            out(flag, "flag", 1)
        }
        None => out(flag, "flag", 0),
    }
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_delete_attr(win: MPI_Win, win_keyval: c_int) -> c_int {
    with(|st| st.keyval_in_use(win_keyval, OBJ_WIN).map(|_| ()))?;
    let v = rma::with_win(win, |w| {
        w.attrs
            .iter()
            .find(|a| a.0 == win_keyval)
            .map(|a| a.1)
            .ok_or_else(|| {
                err!(
                    MPI_ERR_KEYVAL,
                    "win_keyval={win_keyval:#x} has no attribute on this window"
                )
            })
    })?;
    super::attr::delete_one(win, win_keyval, v)?;
    rma::with_win(win, |w| {
        w.attrs.retain(|x| x.0 != win_keyval);
        Ok(())
    })
}

// ------------------------------------------------- name, group, info, errors

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> c_int {
    let s = cstr(win_name, "win_name")?;
    let s: String = s.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
    rma::with_win(win, |w| {
        w.name = s;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(
    win: MPI_Win,
    win_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let s = rma::with_win(win, |w| Ok(w.name.clone()))?;
    let n = write_cstr(win_name, MPI_MAX_OBJECT_NAME as usize, &s)?;
    out(resultlen, "resultlen", n)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    let world = rma::with_win(win, |w| Ok(w.world.clone()))?;
    let g = with(|st| Ok(st.add_group(world)))?;
    out(group, "group", g)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    let kv = info_of(info)?;
    rma::with_win(win, |w| {
        for (k, v) in kv {
            w.info.retain(|x| x.0 != k);
            w.info.push((k, v));
        }
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    let mut kv = rma::with_win(win, |w| {
        let mut kv = w.info.clone();
        let defaults: [(&str, &str); 5] = [
            ("no_locks", "false"),
            ("accumulate_ordering", "rar,raw,war,waw"),
            ("accumulate_ops", "same_op_no_op"),
            ("same_size", "false"),
            ("same_disp_unit", "false"),
        ];
        for (k, v) in defaults {
            if !kv.iter().any(|x| x.0 == k) {
                kv.push((k.into(), v.into()));
            }
        }
        if w.flavor == MPI_WIN_FLAVOR_SHARED && !kv.iter().any(|x| x.0 == "alloc_shared_noncontig")
        {
            kv.push(("alloc_shared_noncontig".into(), "false".into()));
        }
        Ok(kv)
    })?;
    if !kv.iter().any(|(k, _)| k == "mpi_memory_alloc_kinds") {
        kv.push(("mpi_memory_alloc_kinds".into(), "mpi,system".into()));
    }
    let h = crate::core::info::insert(kv);
    out(info_used, "info_used", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    win_errhandler_fn: *mut MPI_Win_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    if win_errhandler_fn.is_null() {
        return Err(err!(MPI_ERR_ARG, "win_errhandler_fn=NULL"));
    }
    // SAFETY: a non-NULL MPI_Win_errhandler_function pointer is a C function
    // taking (MPI_Win *, int *, ...); the first two arguments are all it reads.
    let f: crate::core::state::ErrhFn = unsafe { std::mem::transmute(win_errhandler_fn) };
    let idx = with(|st| Ok(st.errhandlers.insert(f)))?;
    out(
        errhandler,
        "errhandler",
        handles::make(KIND_ERRHANDLER, idx),
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    with(|st| super::errh::check_errhandler(st, errhandler))?;
    rma::with_win(win, |w| {
        w.errhandler = errhandler;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(
    win: MPI_Win,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let h = rma::with_win(win, |w| Ok(w.errhandler))?;
    out(errhandler, "errhandler", h)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    rma::check(win)?;
    let e = crate::core::error::Error::new(
        errorcode,
        format!("MPI_Win_call_errhandler(errorcode={errorcode})"),
    );
    super::guard::raise("MPI_Win_call_errhandler", Some(win), e);
    Ok(())
}

// ---------------------------------------------------------------- operations

fn count_of(c: i64, name: &str) -> Result<usize> {
    if c < 0 {
        return Err(err!(MPI_ERR_COUNT, "{name}={c} is negative"));
    }
    Ok(c as usize)
}

/// A datatype for one operation: predefined ones from a per-thread table,
/// so that an operation on one takes no reference count (an atomic
/// instruction each way) and allocates nothing.
enum Ty {
    Builtin(&'static Type),
    Derived(Arc<Type>),
}

impl std::ops::Deref for Ty {
    type Target = Type;
    fn deref(&self) -> &Type {
        match self {
            Ty::Builtin(t) => t,
            Ty::Derived(t) => t,
        }
    }
}

/// A predefined type as built once for the process's life.
struct Builtin {
    dt: MPI_Datatype,
    t: Type,
}

/// Predefined types built so far (a few dozen at most), by a hash of the
/// handle with linear probing: a lookup is a few loads, with no lock and
/// no thread-local access (which costs a call in a shared library).
static BUILTIN: [AtomicPtr<Builtin>; 256] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 256];
static BUILTIN_ADD: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn slot_of(dt: MPI_Datatype) -> usize {
    ((dt as u32).wrapping_mul(0x9e37_79b1) >> 24) as usize
}

/// The built predefined type `dt`, if it is in the table.
fn builtin_find(dt: MPI_Datatype) -> Option<&'static Type> {
    let h = slot_of(dt);
    for k in 0..BUILTIN.len() {
        // Acquire: pairs with the Release store in `builtin`, so the
        // type the pointer names is seen whole.
        let p = BUILTIN[(h + k) % BUILTIN.len()].load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: non-null slots hold leaked, never freed entries.
        let e: &'static Builtin = unsafe { &*p };
        if e.dt == dt {
            return Some(&e.t);
        }
    }
    None
}

fn builtin(dt: MPI_Datatype) -> Result<&'static Type> {
    if let Some(t) = builtin_find(dt) {
        return Ok(t);
    }
    let _g = BUILTIN_ADD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = builtin_find(dt) {
        return Ok(t);
    }
    let t = (*lookup(dt)?).clone();
    let h = slot_of(dt);
    for k in 0..BUILTIN.len() {
        let s = &BUILTIN[(h + k) % BUILTIN.len()];
        // Relaxed: slots are written only under BUILTIN_ADD, which we hold.
        if s.load(Ordering::Relaxed).is_null() {
            let e: &'static mut Builtin = Box::leak(Box::new(Builtin { dt, t }));
            // Release: pairs with the Acquire load in `builtin_find`.
            s.store(e, Ordering::Release);
            return Ok(&e.t);
        }
    }
    Err(err!(
        MPI_ERR_INTERN,
        "the table of predefined types is full"
    ))
}

fn committed(dt: MPI_Datatype, name: &str) -> Result<Ty> {
    if super::datatype::is_predefined(dt) {
        return builtin(dt).map(Ty::Builtin);
    }
    let t = lookup(dt)?;
    if !t.committed {
        return Err(err!(
            MPI_ERR_TYPE,
            "{name}=0x{:08x} is not committed",
            dt as u32
        ));
    }
    Ok(Ty::Derived(t))
}

/// The packed bytes of `count` elements of `t` at `buf` (the buffer itself when contiguous host memory).
fn packed<'a>(buf: *const c_void, count: usize, t: &Type) -> Result<Cow<'a, [u8]>> {
    let n = count * t.size;
    if n == 0 {
        return Ok(Cow::Borrowed(&[]));
    }
    let at = (buf as *const u8).wrapping_offset(t.true_lb);
    let kind = crate::gpu::classify(at, 0);
    if kind == crate::gpu::MemKind::Host && t.is_contiguous(count) {
        // SAFETY: `buf` holds `count` elements of `t` (the caller's contract),
        // which are `n` bytes from its start offset.
        return Ok(Cow::Borrowed(unsafe {
            std::slice::from_raw_parts((buf as *const u8).wrapping_offset(t.start()), n)
        }));
    }
    let mut v = vec![0u8; n];
    // SAFETY: as above.
    unsafe { dtm::pack_mem(t, count, buf as *const u8, kind, &mut v)? };
    Ok(Cow::Owned(v))
}

/// Stores the packed `data` into `count` elements of `t` at `buf`.
fn unpacked(buf: *mut c_void, count: usize, t: &Type, data: &[u8]) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let kind = crate::gpu::classify((buf as *const u8).wrapping_offset(t.true_lb), 0);
    if kind == crate::gpu::MemKind::Host && t.is_contiguous(count) {
        // SAFETY: `buf` holds `count` elements of `t` (the caller's
        // contract), `data.len()` contiguous bytes from its start offset.
        unsafe {
            crate::sys::copy(
                (buf as *mut u8).wrapping_offset(t.start()),
                data.as_ptr(),
                data.len(),
            )
        };
        return Ok(());
    }
    // SAFETY: `buf` holds `count` elements of `t` (the caller's contract).
    unsafe { dtm::unpack_mem(t, count, data, buf as *mut u8, kind) }
}

fn same_bytes(ob: usize, tb: usize) -> Result<()> {
    if ob != tb {
        return Err(err!(
            MPI_ERR_TYPE,
            "the origin describes {ob} bytes but the target {tb}: their type signatures must match"
        ));
    }
    Ok(())
}

/// Request-based operations are allowed in passive-target epochs only.
fn passive(win: MPI_Win, rank: c_int, request: *mut MPI_Request) -> Result<()> {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "request=NULL"));
    }
    if rank == MPI_PROC_NULL {
        return Ok(());
    }
    rma::with_win(win, |w| {
        let r = w.check_rank(rank)?;
        if w.ep.lock_all.is_none() && w.ep.locks[r].is_none() {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "request-based operations need a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all) on rank {rank}"
            ));
        }
        Ok(())
    })
}

/// The request of an operation that completed in its call.
fn done_request(request: *mut MPI_Request) -> Result<()> {
    out(request, "request", super::request::DONE_SEND)
}

/// The bytes of `oc` elements of `ot` against `tc` of `tt` when both are
/// basic predefined types (contiguous, no lower bound) of the same total
/// size: the operations' fast path (`rma::Win::direct_bytes`).
#[inline]
fn plain_bytes(ot: MPI_Datatype, oc: usize, tt: MPI_Datatype, tc: usize) -> Option<usize> {
    use crate::base::handles::builtin_size;
    let (os, ts) = (builtin_size(ot)?, builtin_size(tt)?);
    let n = oc.checked_mul(os)?;
    (os > 0 && ts > 0 && n > 0 && tc.checked_mul(ts) == Some(n)).then_some(n)
}

/// An operation on the fast path (`f`: `Win::direct_bytes`, `direct_acc`
/// or `direct_cas` on the checked target rank), after the checks every
/// operation makes; true when done (MPI_PROC_NULL: nothing to do), false
/// where the general path must take it.
fn direct(
    target_rank: c_int,
    win: MPI_Win,
    f: impl FnOnce(&rma::Win, usize) -> Result<bool>,
) -> Result<bool> {
    rma::with_win(win, |w| {
        if target_rank == MPI_PROC_NULL {
            return Ok(true);
        }
        let r = w.check_rank(target_rank)?;
        w.access(r)?;
        f(w, r)
    })
}

#[allow(clippy::too_many_arguments)]
fn put(
    origin_addr: *const c_void,
    oc: usize,
    ot: MPI_Datatype,
    target_rank: c_int,
    disp: MPI_Aint,
    tc: usize,
    tt: MPI_Datatype,
    win: MPI_Win,
) -> Result<()> {
    if let Some(n) = plain_bytes(ot, oc, tt, tc) {
        let put = |w: &rma::Win, r| {
            // SAFETY: the origin buffer holds the `n` bytes of its
            // elements (the caller's contract).
            Ok(unsafe { w.direct_bytes(r, disp, origin_addr as *mut u8, n, true) })
        };
        if direct(target_rank, win, put)? {
            return Ok(());
        }
    }
    let (o, t) = (
        committed(ot, "origin_datatype")?,
        committed(tt, "target_datatype")?,
    );
    rma::with_win(win, |w| {
        if target_rank == MPI_PROC_NULL {
            return Ok(());
        }
        let r = w.check_rank(target_rank)?;
        same_bytes(oc * o.size, tc * t.size)?;
        w.access(r)?;
        let addr = w.place(r, disp, &t, tc)?;
        let data = packed(origin_addr, oc, &o)?;
        // A put to a rank of this node reached by single copy may be made
        // at the flush, its bytes copied now (MPI_Rput's too: its request
        // completes at the origin in the call, the bytes being copied).
        // SAFETY: `addr` came from `place` for `t` and `tc`.
        if unsafe { w.write_later(r, addr, &t, tc, &data)? } {
            return Ok(());
        }
        // SAFETY: `addr` came from `place` for `t` and `tc`.
        unsafe { w.write(r, addr, &t, tc, &data) }
    })
}

#[allow(clippy::too_many_arguments)]
fn get(
    origin_addr: *mut c_void,
    oc: usize,
    ot: MPI_Datatype,
    target_rank: c_int,
    disp: MPI_Aint,
    tc: usize,
    tt: MPI_Datatype,
    win: MPI_Win,
    later: bool,
) -> Result<()> {
    if let Some(n) = plain_bytes(ot, oc, tt, tc) {
        let get = |w: &rma::Win, r| {
            // SAFETY: the origin buffer holds room for the `n` bytes (the
            // caller's contract).
            Ok(unsafe { w.direct_bytes(r, disp, origin_addr as *mut u8, n, false) })
        };
        if direct(target_rank, win, get)? {
            return Ok(());
        }
    }
    let (o, t) = (
        committed(ot, "origin_datatype")?,
        committed(tt, "target_datatype")?,
    );
    rma::with_win(win, |w| {
        if target_rank == MPI_PROC_NULL {
            return Ok(());
        }
        let r = w.check_rank(target_rank)?;
        same_bytes(oc * o.size, tc * t.size)?;
        w.access(r)?;
        let addr = w.place(r, disp, &t, tc)?;
        let n = tc * t.size;
        let into = (origin_addr as *mut u8).wrapping_offset(o.start());
        if n > 0
            && o.is_contiguous(oc)
            && crate::gpu::classify(into, 0) == crate::gpu::MemKind::Host
        {
            // MPI_Get (not MPI_Rget, whose request completes in the call)
            // to another node may complete at the flush.
            // SAFETY: `into` holds `n` bytes (below) until the flush or the
            // epoch's end, by MPI's rules; `addr` came from `place`.
            if later && unsafe { w.read_later(r, addr, &t, tc, into, n)? } {
                return Ok(());
            }
            // Straight into the origin buffer.
            // SAFETY: `origin_addr` holds `oc` elements of `o` (the caller's
            // contract): `n` contiguous bytes from its start offset.
            let dst = unsafe { std::slice::from_raw_parts_mut(into, n) };
            // SAFETY: `addr` came from `place` for `t` and `tc`.
            return unsafe { w.read(r, addr, &t, tc, dst) };
        }
        let mut data = vec![0u8; n];
        // SAFETY: `addr` came from `place` for `t` and `tc`.
        unsafe { w.read(r, addr, &t, tc, &mut data)? };
        unpacked(origin_addr, oc, &o, &data)
    })
}

/// The element kind of an accumulate of `op` between types `a` and `b`
/// (each made of one basic type, the same).
fn acc_op(op: MPI_Op, types: &[(&Type, &str)]) -> Result<AccOp> {
    if !crate::op::is_builtin_op(op) {
        return Err(err!(
            MPI_ERR_OP,
            "op=0x{:08x}: accumulate operations take predefined ops only",
            op as u32
        ));
    }
    let mut basic = None;
    for &(t, name) in types {
        if t.size == 0 {
            continue;
        }
        let (b, _) = t.homogeneous().ok_or_else(|| {
            err!(
                MPI_ERR_TYPE,
                "{name} mixes basic types: accumulate operations take types of one basic type"
            )
        })?;
        match basic {
            None => basic = Some(b),
            Some(x) if x != b => {
                return Err(err!(
                    MPI_ERR_TYPE,
                    "{name} is made of 0x{:08x} but the other datatype of 0x{:08x}",
                    b as u32,
                    x as u32
                ))
            }
            _ => {}
        }
    }
    let b = basic.unwrap_or(MPI_BYTE);
    let elem = crate::op::check(op, b)?;
    Ok(AccOp {
        op,
        elem,
        esize: handles::type_size(b)?,
        basic: b,
    })
}

/// MPI_(R)accumulate, MPI_(R)get_accumulate and MPI_Fetch_and_op
/// (`result`: where the fetched elements go); `later`: the fetched elements
/// may land at the flush (not the request forms, whose requests complete
/// in the call).
#[allow(clippy::too_many_arguments)]
fn get_accumulate(
    origin_addr: *const c_void,
    oc: usize,
    ot: MPI_Datatype,
    result: Option<(*mut c_void, usize, MPI_Datatype)>,
    target_rank: c_int,
    disp: MPI_Aint,
    tc: usize,
    tt: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    later: bool,
) -> Result<()> {
    // The fast path: one basic type everywhere, the same count, a
    // predefined op, window memory this process maps.
    let same = |dt: MPI_Datatype, c: usize| dt == tt && c == tc;
    if let (Some(es), true, true) = (
        handles::builtin_size(tt).filter(|&es| es > 0 && tc > 0),
        op == MPI_NO_OP || same(ot, oc),
        result.is_none_or(|(_, c, dt)| same(dt, c)),
    ) {
        // Scalar elements only (pairs take the general path); `check`
        // reports an op that does not apply to the type.
        let elem = match crate::op::is_builtin_op(op) {
            true => Some(crate::op::check(op, tt)?),
            false => None,
        };
        if let Some(elem) = elem.filter(|e| !matches!(e, crate::op::Elem::Pair(_))) {
            let a = AccOp {
                op,
                elem,
                esize: es,
                basic: tt,
            };
            let n = tc.checked_mul(es);
            let got = result.map_or(std::ptr::null_mut(), |(b, _, _)| b as *mut u8);
            let src = origin_addr as *const u8;
            let acc = |w: &rma::Win, r| match n {
                Some(n) => {
                    // SAFETY: the origin and result buffers hold `tc`
                    // elements of `tt` (the caller's contract).
                    let done = unsafe { w.direct_acc(r, disp, a, n, src, got) };
                    Ok(done)
                }
                None => Ok(false),
            };
            if direct(target_rank, win, acc)? {
                return Ok(());
            }
        }
    }
    let t = committed(tt, "target_datatype")?;
    let o = if op == MPI_NO_OP {
        None
    } else {
        Some(committed(ot, "origin_datatype")?)
    };
    let res = match result {
        Some((b, c, dt)) => Some((b, c, committed(dt, "result_datatype")?)),
        None => None,
    };
    let mut types: [(&Type, &str); 3] = [(&*t, "target_datatype"); 3];
    let mut nt = 1;
    if let Some(o) = o.as_deref() {
        types[nt] = (o, "origin_datatype");
        nt += 1;
    }
    if let Some((_, _, r)) = res.as_ref() {
        types[nt] = (&**r, "result_datatype");
        nt += 1;
    }
    let a = acc_op(op, &types[..nt])?;
    rma::with_win(win, |w| {
        if target_rank == MPI_PROC_NULL {
            return Ok(());
        }
        let r = w.check_rank(target_rank)?;
        let tb = tc * t.size;
        if let Some(o) = o.as_ref() {
            same_bytes(oc * o.size, tb)?;
        }
        if let Some((_, rc, rt)) = res.as_ref() {
            same_bytes(rc * rt.size, tb)?;
        }
        w.access(r)?;
        let addr = w.place(r, disp, &t, tc)?;
        let data = match o.as_ref() {
            Some(o) => packed(origin_addr, oc, o)?,
            None => Cow::Borrowed(&[][..]),
        };
        if let (true, Some((b, c, rt))) = (later, res.as_ref()) {
            let into = (*b as *mut u8).wrapping_offset(rt.start());
            if tb > 0
                && rt.is_contiguous(*c)
                && crate::gpu::classify(into, 0) == crate::gpu::MemKind::Host
            {
                // MPI_Get_accumulate and MPI_Fetch_and_op (not the request
                // forms, whose requests complete in the call) to another
                // node may complete at the flush, the fetched elements
                // landing straight in the result buffer.
                // SAFETY: `into` holds `tb` bytes (its `c` elements of `rt`,
                // contiguous) until the flush or the epoch's end, by MPI's
                // rules; `addr` came from `place` for `t` and `tc`.
                if unsafe { w.accumulate_later(r, addr, &t, tc, a, &data, into, tb)? } {
                    return Ok(());
                }
            }
        }
        // The fetched elements: on the stack when few (fetch-and-op).
        let mut small = [0u8; 64];
        let mut big = Vec::new();
        let mut old: Option<&mut [u8]> = match res.as_ref() {
            None => None,
            Some(_) if tb <= small.len() => Some(&mut small[..tb]),
            Some(_) => {
                big.resize(tb, 0);
                Some(&mut big[..])
            }
        };
        // SAFETY: `addr` came from `place` for `t` and `tc`.
        unsafe { w.accumulate(r, addr, &t, tc, a, &data, old.as_deref_mut())? };
        if let (Some((b, c, rt)), Some(old)) = (res.as_ref(), old) {
            unpacked(*b, *c, rt, old)?;
        }
        Ok(())
    })
}

// The fast paths of the small operations (`#[mpi_fn(fast = ...)]`, tried
// before the unwinding boundary): basic types between host memory and
// window memory this process maps, in a passive epoch that covers the
// target (`Win::ready`). Each answers None, having done nothing, where
// anything else holds, and the general path then takes the call; none can
// panic (no indexing that is not checked, no unwrap). Put + flush of 8
// bytes: 17.2 -> 13.7 ns; accumulate, get-accumulate and fetch-and-op of
// one element 20-30% faster once the general path is out of line (the
// entry's frame is then the fast path's alone) and one element reduces by
// value (docs/performance.md).
//
// A target on another node takes a fast path of its own (`Win::remote_bytes`,
// `remote_acc`, `remote_cas`): the operation joins the request gathered
// for that target, which its flush sends, where it fits there as that
// request stands (nothing is sent in the call and nothing can fail); 64
// one-double accumulates and their flush over UCX on one node: 34.7 ->
// 18.1 us (docs/performance.md).

/// MPI_Put's and MPI_Get's fast path (`put`: which).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bytes_fast(
    buf: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    put: bool,
) -> Option<c_int> {
    let n = plain_bytes(
        origin_datatype,
        usize::try_from(origin_count).ok()?,
        target_datatype,
        usize::try_from(target_count).ok()?,
    )?;
    let w = rma::try_win(win)?;
    let buf = buf as *mut u8;
    let done = match w.ready(target_rank) {
        // SAFETY: the origin buffer holds the `n` bytes of its elements,
        // writable for a get (the caller's contract).
        Some(r) => unsafe {
            w.direct_bytes(r, target_disp, buf, n, put) || w.cma_bytes(r, target_disp, buf, n, put)
        },
        // SAFETY: as above; a get's stays writable until its flush (MPI's rule).
        None => unsafe { w.remote_bytes(target_rank, target_disp, buf, n, put) },
    };
    done.then_some(MPI_SUCCESS)
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn put_fast(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> Option<c_int> {
    bytes_fast(
        origin_addr as *mut c_void,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
        true,
    )
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn get_fast(
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> Option<c_int> {
    bytes_fast(
        origin_addr,
        origin_count,
        origin_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        win,
        false,
    )
}

/// The fast path of MPI_Accumulate, MPI_Get_accumulate and
/// MPI_Fetch_and_op: as the general path's first try (`get_accumulate`),
/// one basic type everywhere, the same counts, a builtin op on scalar
/// elements, and a passive epoch on a rank of this node (`Win::ready`), or
/// an epoch open to a rank of another node (`Win::remote_acc`).
/// `result`: the result buffer, count and datatype (None: an accumulate).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn acc_fast(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    result: Option<(*mut c_void, c_int, MPI_Datatype)>,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    let same = |dt: MPI_Datatype, c: c_int| dt == target_datatype && c == target_count;
    if !(op == MPI_NO_OP || same(origin_datatype, origin_count))
        || !result.is_none_or(|(_, c, dt)| same(dt, c))
        || target_count <= 0
    {
        return None;
    }
    let es = handles::builtin_size(target_datatype).filter(|&es| es > 0)?;
    let elem = crate::op::applies(op, target_datatype)
        .filter(|e| !matches!(e, crate::op::Elem::Pair(_)))?;
    let n = (target_count as usize).checked_mul(es)?;
    let a = AccOp {
        op,
        elem,
        esize: es,
        basic: target_datatype,
    };
    let got = result.map_or(std::ptr::null_mut(), |(b, _, _)| b as *mut u8);
    let src = origin_addr as *const u8;
    let w = rma::try_win(win)?;
    let Some(r) = w.ready(target_rank) else {
        // SAFETY: as below; the result buffer stays writable until the
        // flush (MPI's rule).
        return unsafe { w.remote_acc(target_rank, target_disp, a, n, src, got) }
            .then_some(MPI_SUCCESS);
    };
    // SAFETY: the origin and result buffers hold `target_count`
    // elements of `target_datatype` (the caller's contract).
    let done = (n == es && unsafe { w.direct_one(r, target_disp, a, src, got) })
        || unsafe { w.direct_acc(r, target_disp, a, n, src, got) }
        || unsafe { w.cma_acc(r, target_disp, a, n, src, got) };
    done.then_some(MPI_SUCCESS)
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn accumulate_fast(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    if op == MPI_NO_OP {
        return None;
    }
    acc_fast(
        origin_addr,
        origin_count,
        origin_datatype,
        None,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
    )
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn get_accumulate_fast(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: c_int,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    acc_fast(
        origin_addr,
        origin_count,
        origin_datatype,
        Some((result_addr, result_count, result_datatype)),
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
    )
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fetch_and_op_fast(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> Option<c_int> {
    acc_fast(
        origin_addr,
        1,
        datatype,
        Some((result_addr, 1, datatype)),
        target_rank,
        target_disp,
        1,
        datatype,
        op,
        win,
    )
}

/// Whether MPI_Compare_and_swap takes `datatype`: a predefined integer,
/// logical or byte type.
#[inline(always)]
fn cas_type(datatype: MPI_Datatype) -> bool {
    use crate::op::Elem::*;
    matches!(
        crate::op::elem_of(datatype),
        Some(I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64 | Bool | Logical | Byte)
    )
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn compare_and_swap_fast(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> Option<c_int> {
    let es = handles::builtin_size(datatype)?;
    if !cas_type(datatype) {
        return None;
    }
    let w = rma::try_win(win)?;
    let (new, cmp, old) = (
        origin_addr as *const u8,
        compare_addr as *const u8,
        result_addr as *mut u8,
    );
    let done = match w.ready(target_rank) {
        // SAFETY: the three buffers hold one element of `datatype` (the
        // caller's contract).
        Some(r) => unsafe {
            w.direct_cas(r, target_disp, es, new, cmp, old)
                || w.cma_cas(r, target_disp, es, new, cmp, old)
        },
        // SAFETY: as above; the result buffer stays writable until the
        // flush (MPI's rule).
        None => unsafe { w.remote_cas(target_rank, target_disp, es, new, cmp, old) },
    };
    done.then_some(MPI_SUCCESS)
}

#[mpi_fn(fast = put_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Put(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    put(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        win,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Put_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    put(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        win,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rput(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    put(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        win,
    )?;
    done_request(request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rput_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    put(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        win,
    )?;
    done_request(request)
}

#[mpi_fn(fast = get_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get(
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    get(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        win,
        true,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    get(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        win,
        true,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget(
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    get(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        win,
        false,
    )?;
    done_request(request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    get(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        win,
        false,
    )?;
    done_request(request)
}

#[mpi_fn(fast = accumulate_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    get_accumulate(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        None,
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        op,
        win,
        true,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    get_accumulate(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        None,
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        op,
        win,
        true,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    get_accumulate(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        None,
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        op,
        win,
        false,
    )?;
    done_request(request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    get_accumulate(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        None,
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        op,
        win,
        false,
    )?;
    done_request(request)
}

#[mpi_fn(fast = get_accumulate_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: c_int,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    get_accumulate(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        Some((
            result_addr,
            count_of(result_count as i64, "result_count")?,
            result_datatype,
        )),
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        op,
        win,
        true,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    get_accumulate(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        Some((
            result_addr,
            count_of(result_count, "result_count")?,
            result_datatype,
        )),
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        op,
        win,
        true,
    )
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: c_int,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    get_accumulate(
        origin_addr,
        count_of(origin_count as i64, "origin_count")?,
        origin_datatype,
        Some((
            result_addr,
            count_of(result_count as i64, "result_count")?,
            result_datatype,
        )),
        target_rank,
        target_disp,
        count_of(target_count as i64, "target_count")?,
        target_datatype,
        op,
        win,
        false,
    )?;
    done_request(request)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    passive(win, target_rank, request)?;
    get_accumulate(
        origin_addr,
        count_of(origin_count, "origin_count")?,
        origin_datatype,
        Some((
            result_addr,
            count_of(result_count, "result_count")?,
            result_datatype,
        )),
        target_rank,
        target_disp,
        count_of(target_count, "target_count")?,
        target_datatype,
        op,
        win,
        false,
    )?;
    done_request(request)
}

#[mpi_fn(fast = fetch_and_op_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    if handles::builtin_size(datatype).is_none() && handles::type_elements(datatype) != 2 {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x}: MPI_Fetch_and_op takes a predefined datatype",
            datatype as u32
        ));
    }
    get_accumulate(
        origin_addr,
        1,
        datatype,
        Some((result_addr, 1, datatype)),
        target_rank,
        target_disp,
        1,
        datatype,
        op,
        win,
        true,
    )
}

#[mpi_fn(fast = compare_and_swap_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    if !cas_type(datatype) {
        return Err(err!(
            MPI_ERR_TYPE,
            "datatype=0x{:08x}: MPI_Compare_and_swap takes a predefined integer, logical or byte datatype",
            datatype as u32
        ));
    }
    if let Some(es) = handles::builtin_size(datatype) {
        let (new, cmp, old) = (
            origin_addr as *const u8,
            compare_addr as *const u8,
            result_addr as *mut u8,
        );
        let cas = |w: &rma::Win, r| {
            // SAFETY: the three buffers hold one element of `datatype`
            // (the caller's contract).
            Ok(unsafe { w.direct_cas(r, target_disp, es, new, cmp, old) })
        };
        if direct(target_rank, win, cas)? {
            return Ok(());
        }
    }
    let t = committed(datatype, "datatype")?;
    let es = t.size;
    rma::with_win(win, |w| {
        if target_rank == MPI_PROC_NULL {
            return Ok(());
        }
        let r = w.check_rank(target_rank)?;
        w.access(r)?;
        let addr = w.place(r, target_disp, &t, 1)?;
        let new = packed(origin_addr, 1, &t)?;
        let cmp = packed(compare_addr, 1, &t)?;
        let into = (result_addr as *mut u8).wrapping_offset(t.start());
        if t.is_contiguous(1) && crate::gpu::classify(into, 0) == crate::gpu::MemKind::Host {
            // To another node it may complete at the flush, the old element
            // landing straight in the result buffer.
            // SAFETY: `into` holds the element until the flush or the
            // epoch's end, by MPI's rules; `addr` came from `place`.
            if unsafe { w.compare_swap_later(r, addr, &t, &new, &cmp, into)? } {
                return Ok(());
            }
        }
        let mut old = vec![0u8; es];
        // SAFETY: `addr` came from `place` for one element of `t`.
        unsafe { w.compare_swap(r, addr, &t, &new, &cmp, &mut old)? };
        unpacked(result_addr, 1, &t, &old)
    })
}

// ----------------------------------------------------------- synchronization

fn check_assert(assert: c_int, allowed: c_int, call: &str) -> Result<()> {
    if assert & !allowed != 0 {
        return Err(err!(
            MPI_ERR_ASSERT,
            "assert={assert:#x} has bits {call} does not know ({:#x})",
            assert & !allowed
        ));
    }
    Ok(())
}

/// Window ranks of the members of `group` (world ranks).
fn group_ranks(w: &Win, group: MPI_Group) -> Result<Vec<usize>> {
    let g = with(|st| Ok(st.group(group)?.to_vec()))?;
    g.iter()
        .map(|&wr| {
            w.world.iter().position(|&x| x == wr).ok_or_else(|| {
                err!(
                    MPI_ERR_GROUP,
                    "group member world rank {wr} is not a rank of the window"
                )
            })
        })
        .collect()
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    check_assert(
        assert,
        MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED,
        "MPI_Win_fence",
    )?;
    rma::with_win(win, |w| {
        if w.ep.lock_all.is_some()
            || w.ep.locks.iter().any(Option::is_some)
            || w.ep.start.is_some()
            || w.ep.post.is_some()
        {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "MPI_Win_fence inside another epoch: {}",
                w.open_epoch().unwrap_or("")
            ));
        }
        w.settle(None)?;
        // Nothing to separate when no epoch ends and none begins.
        let quiet = assert & MPI_MODE_NOPRECEDE != 0 && assert & MPI_MODE_NOSUCCEED != 0;
        if !quiet {
            super::coll::__oxmpi_body_MPI_Barrier(w.comm)?;
        }
        fence(Ordering::SeqCst);
        w.ep.fence = assert & MPI_MODE_NOSUCCEED == 0;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    check_assert(
        assert,
        MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT,
        "MPI_Win_post",
    )?;
    rma::with_win(win, |w| {
        let g = group_ranks(w, group)?;
        w.post(g)
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    check_assert(assert, MPI_MODE_NOCHECK, "MPI_Win_start")?;
    rma::with_win(win, |w| {
        let g = group_ranks(w, group)?;
        w.start(g)
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_complete(win: MPI_Win) -> c_int {
    rma::with_win(win, |w| w.complete())
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_wait(win: MPI_Win) -> c_int {
    rma::with_win(win, |g| {
        g.exposure_done()?;
        crate::core::runtime::wait_for(|_| Ok(g.exposure_done()?.then_some(())))?;
        fence(Ordering::SeqCst);
        g.ep.post = None;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    let done = rma::with_win(win, |w| {
        let d = w.exposure_done()?;
        if d {
            fence(Ordering::SeqCst);
            w.ep.post = None;
        } else {
            // Let other work move while the application polls.
            with(|st| {
                st.progress();
                Ok(())
            })?;
        }
        Ok(d)
    })?;
    out(flag, "flag", done as c_int)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(
    lock_type: c_int,
    rank: c_int,
    assert: c_int,
    win: MPI_Win,
) -> c_int {
    if lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE {
        return Err(err!(
            MPI_ERR_LOCKTYPE,
            "lock_type={lock_type} is neither MPI_LOCK_SHARED nor MPI_LOCK_EXCLUSIVE"
        ));
    }
    check_assert(assert, MPI_MODE_NOCHECK, "MPI_Win_lock")?;
    rma::with_win(win, |w| {
        if rank == MPI_PROC_NULL {
            return Ok(());
        }
        let r = w.check_rank(rank)?;
        if w.ep.locks[r].is_some() || w.ep.lock_all.is_some() {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "rank {rank} is already locked by this rank (MPI_Win_unlock first)"
            ));
        }
        let nocheck = assert & MPI_MODE_NOCHECK != 0;
        if !nocheck {
            w.acquire(r, lock_type == MPI_LOCK_EXCLUSIVE)?;
        }
        w.ep.locks[r] = Some((lock_type, nocheck));
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    rma::with_win(win, |w| {
        if rank == MPI_PROC_NULL {
            return Ok(());
        }
        let r = w.check_rank(rank)?;
        let Some((ty, nocheck)) = w.ep.locks[r] else {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "rank {rank} is not locked by this rank (MPI_Win_unlock without MPI_Win_lock)"
            ));
        };
        w.settle(Some(r))?;
        if !nocheck {
            w.release(r, ty == MPI_LOCK_EXCLUSIVE)?;
        }
        w.ep.locks[r] = None;
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    check_assert(assert, MPI_MODE_NOCHECK, "MPI_Win_lock_all")?;
    rma::with_win(win, |w| {
        if w.ep.lock_all.is_some() || w.ep.locks.iter().any(Option::is_some) {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "a passive-target epoch is already open on this window"
            ));
        }
        let nocheck = assert & MPI_MODE_NOCHECK != 0;
        if !nocheck {
            for r in 0..w.targets.len() {
                if w.targets[r].local.is_some() || w.remote.is_some() {
                    w.acquire(r, false)?;
                }
            }
        }
        w.ep.lock_all = Some(nocheck);
        Ok(())
    })
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    rma::with_win(win, |w| {
        let Some(nocheck) = w.ep.lock_all else {
            return Err(err!(
                MPI_ERR_RMA_SYNC,
                "MPI_Win_unlock_all without MPI_Win_lock_all"
            ));
        };
        w.settle(None)?;
        if !nocheck {
            for r in 0..w.targets.len() {
                if w.targets[r].local.is_some() || w.remote.is_some() {
                    w.release(r, false)?;
                }
            }
        }
        w.ep.lock_all = None;
        Ok(())
    })
}

/// `flush`'s error outside a passive-target epoch.
#[cold]
#[inline(never)]
fn no_passive_epoch(rank: Option<c_int>) -> crate::base::error::Error {
    err!(
        MPI_ERR_RMA_SYNC,
        "no passive-target epoch is open{} (MPI_Win_lock or MPI_Win_lock_all first)",
        rank.map_or(String::new(), |r| format!(" on rank {r}"))
    )
}

/// Flush of `rank` (None: all): every operation is complete when its call
/// returns, so a flush orders memory; it needs a passive-target epoch.
fn flush(win: MPI_Win, rank: Option<c_int>) -> Result<()> {
    rma::with_win(win, |w| {
        let open = match rank {
            Some(MPI_PROC_NULL) => true,
            Some(r) => {
                let r = w.check_rank(r)?;
                w.ep.lock_all.is_some() || w.ep.locks[r].is_some()
            }
            None => w.ep.lock_all.is_some() || w.ep.locks.iter().any(Option::is_some),
        };
        if !open {
            return Err(no_passive_epoch(rank));
        }
        match rank {
            Some(MPI_PROC_NULL) => Ok(()),
            Some(r) => w.settle(Some(r as usize)),
            None => w.settle(None),
        }
    })
}

/// MPI_Win_flush's fast path (`#[mpi_fn(fast)]`): a window of this node
/// in a passive epoch that covers `rank`.
#[inline(always)]
fn flush_fast(rank: c_int, win: MPI_Win) -> Option<c_int> {
    let w = rma::try_win(win)?;
    w.ready(rank)?;
    w.settle_local()?;
    Some(MPI_SUCCESS)
}

#[mpi_fn(fast = flush_fast)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    flush(win, Some(rank))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    flush(win, Some(rank))
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_all(win: MPI_Win) -> c_int {
    flush(win, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    flush(win, None)
}

#[mpi_fn]
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_sync(win: MPI_Win) -> c_int {
    rma::check(win)?;
    fence(Ordering::SeqCst);
    Ok(())
}
