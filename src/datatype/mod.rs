//! Datatype engine: type trees flattened at construction into runs of basic
//! elements, with cached size, bounds and merged byte segments, and the
//! pack/unpack cursor that moves data between a typed buffer and a
//! contiguous byte stream.
//!
//! A type's typemap for one element is `reps` copies of a unit, copy k at
//! `k * rep_stride`; the unit is `runs` (offset, basic type, count),
//! adjacent runs of one basic type merged, and `segs`, the same map as byte
//! segments, merged where adjacent, which drives pack/unpack. Small types
//! are one unit (`reps` = 1); a constructor whose result would have more
//! than `EXPAND_LIMIT` pieces keeps its outermost repetition as `reps`
//! instead (a vector of 135 M `long long` is one run repeated, not 135 M
//! runs), so a type's memory is bounded by its inner levels. `count`
//! elements of a type lie at `i * extent` for i in 0..count.
//! Owns no global state; the handle table is in `core::state`.

pub mod external32;

use crate::base::consts::*;
use crate::base::error::Result;
use crate::base::handles;
use crate::err;
use std::os::raw::c_int;
use std::sync::Arc;

/// `count` consecutive basic elements of `basic` starting at byte `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub off: isize,
    pub basic: c_int,
    pub count: usize,
}

/// How the type was built (MPI_Type_get_envelope / get_contents).
#[derive(Clone, Debug, Default)]
pub struct Envelope {
    pub combiner: c_int,
    /// The constructor's integer arguments, wide enough for the large-count
    /// constructors' counts (the int queries refuse what does not fit).
    pub ints: Vec<i64>,
    pub aints: Vec<isize>,
    pub types: Vec<TypeRef>,
    /// Built by a large-count constructor (`MPI_Type_xxx_c`): the
    /// `_c` queries give its counts and displacements as large counts.
    pub large: bool,
}

/// A component type as remembered by the envelope.
#[derive(Clone, Debug)]
pub enum TypeRef {
    Builtin(c_int),
    Derived(Arc<Type>),
}

#[derive(Clone, Debug)]
pub struct Type {
    /// The unit's runs and byte segments (offsets from the element's start).
    pub runs: Vec<Run>,
    pub segs: Vec<(isize, usize)>,
    /// Copies of the unit in one element (at least 1), `rep_stride` apart.
    pub reps: usize,
    pub rep_stride: isize,
    /// Bytes of data in one element (all its copies of the unit).
    pub size: usize,
    pub lb: isize,
    pub ub: isize,
    pub true_lb: isize,
    pub true_ub: isize,
    pub committed: bool,
    pub name: String,
    pub env: Envelope,
    pub attrs: Vec<(c_int, usize)>,
}

/// Basic elements counted by MPI_Get_elements for one unit of `basic`.
pub fn basic_elements(basic: c_int) -> usize {
    handles::type_elements(basic)
}

fn basic_size(basic: c_int) -> usize {
    handles::type_size(basic).unwrap_or(0)
}

/// The alignment a C compiler gives a basic type: a pair's or a complex
/// number's that of its widest part, otherwise its size (capped at 16).
pub(crate) fn basic_align(basic: c_int) -> usize {
    match basic {
        MPI_FLOAT_INT | MPI_SHORT_INT => 4,
        MPI_DOUBLE_INT | MPI_LONG_INT => 8,
        MPI_LONG_DOUBLE_INT => 16,
        MPI_C_FLOAT_COMPLEX
        | MPI_COMPLEX
        | MPI_COMPLEX8
        | MPI_CXX_FLOAT_COMPLEX
        | MPI_2INT
        | MPI_2INTEGER
        | MPI_2REAL => 4,
        MPI_C_DOUBLE_COMPLEX
        | MPI_DOUBLE_COMPLEX
        | MPI_COMPLEX16
        | MPI_CXX_DOUBLE_COMPLEX
        | MPI_2DOUBLE_PRECISION => 8,
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX | MPI_COMPLEX32 => 16,
        _ => basic_size(basic).clamp(1, 16).next_power_of_two(),
    }
}

/// Bytes from one element of a basic type to the next in memory: a pair
/// type's extent (its padding is not data), otherwise its size.
pub(crate) fn basic_stride(basic: c_int) -> usize {
    handles::pair_parts(basic).map_or_else(|| basic_size(basic), |p| p.1)
}

impl Type {
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// The type of a predefined datatype handle.
    pub fn builtin(dt: c_int) -> Result<Type> {
        let s = handles::type_size(dt)?;
        let runs = if s == 0 {
            vec![]
        } else {
            vec![Run {
                off: 0,
                basic: dt,
                count: 1,
            }]
        };
        Ok(Type::from_runs(
            runs,
            Some((0, basic_stride(dt) as isize)),
            Envelope {
                combiner: MPI_COMBINER_NAMED,
                ..Default::default()
            },
            true,
        ))
    }

    /// Builds a type from its runs; `bounds` (lb, ub) default to the data's true bounds.
    pub fn from_runs(
        runs: Vec<Run>,
        bounds: Option<(isize, isize)>,
        env: Envelope,
        committed: bool,
    ) -> Type {
        let mut segs: Vec<(isize, usize)> = Vec::new();
        let mut size = 0usize;
        let (mut tlb, mut tub) = (isize::MAX, isize::MIN);
        let mut add = |off: isize, len: usize| {
            tlb = tlb.min(off);
            tub = tub.max(off + len as isize);
            match segs.last_mut() {
                Some(l) if l.0 + l.1 as isize == off => l.1 += len,
                _ => segs.push((off, len)),
            }
        };
        for r in &runs {
            let len = r.count * basic_size(r.basic);
            if len == 0 {
                continue;
            }
            size += len;
            match handles::pair_parts(r.basic) {
                // A pair type's parts, element by element at its extent.
                Some((parts, ext)) => {
                    for j in 0..r.count {
                        for &(po, pl) in parts {
                            add(r.off + (j * ext + po) as isize, pl);
                        }
                    }
                }
                None => add(r.off, len),
            }
        }
        if tlb > tub {
            tlb = 0;
            tub = 0;
        }
        let (lb, ub) = bounds.unwrap_or((tlb, tub));
        Type {
            runs,
            segs,
            reps: 1,
            rep_stride: 0,
            size,
            lb,
            ub,
            true_lb: tlb,
            true_ub: tub,
            committed,
            name: String::new(),
            env,
            attrs: Vec::new(),
        }
    }

    /// Where the data of a contiguous buffer starts, relative to the
    /// buffer's address (the first segment's offset; 0 for no data).
    pub fn start(&self) -> isize {
        self.segs.first().map_or(0, |s| s.0)
    }

    /// True when `count` elements are one contiguous byte range starting at `start()`.
    pub fn is_contiguous(&self, count: usize) -> bool {
        // One segment per unit, the copies of the unit back to back.
        let one_range =
            self.segs.len() == 1 && (self.reps == 1 || self.segs[0].1 as isize == self.rep_stride);
        self.size == 0 || (one_range && (count <= 1 || self.extent() == self.size as isize))
    }

    /// True when elements lie back to back from the buffer's address, so
    /// that the packed stream of any count is the buffer itself.
    pub fn is_dense(&self) -> bool {
        self.is_contiguous(2) && self.lb == 0 && self.segs.first().is_none_or(|g| g.0 == 0)
    }

    /// The one basic type all data is made of, if there is one (for reductions).
    pub fn homogeneous(&self) -> Option<(c_int, usize)> {
        let b = self.runs.first()?.basic;
        if self.runs.iter().all(|r| r.basic == b) {
            Some((
                b,
                self.runs.iter().map(|r| r.count).sum::<usize>() * self.reps,
            ))
        } else {
            None
        }
    }

    /// Basic elements in one element of the type.
    pub fn elements(&self) -> usize {
        self.unit_elements() * self.reps
    }

    fn unit_elements(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.count * basic_elements(r.basic))
            .sum()
    }

    /// Bytes of data in one copy of the unit.
    pub fn unit_size(&self) -> usize {
        self.size / self.reps.max(1)
    }

    /// Byte pieces of one element (before merging across copies of the unit).
    pub fn pieces(&self) -> usize {
        self.segs.len().saturating_mul(self.reps)
    }

    /// The runs of one whole element, every copy of the unit written out
    /// (for building types from this one when that stays small).
    pub fn expanded_runs(&self) -> Vec<Run> {
        if self.reps == 1 {
            return self.runs.clone();
        }
        let mut v = Vec::with_capacity(self.runs.len() * self.reps);
        for k in 0..self.reps {
            let base = k as isize * self.rep_stride;
            for r in &self.runs {
                push_run(
                    &mut v,
                    Run {
                        off: base + r.off,
                        ..*r
                    },
                );
            }
        }
        v
    }

    /// `reps` copies of a unit made of `runs`, `stride` apart; one unit
    /// when that is as compact (a single dense run).
    pub fn repeated(
        runs: Vec<Run>,
        reps: usize,
        stride: isize,
        bounds: Option<(isize, isize)>,
        env: Envelope,
        committed: bool,
    ) -> Type {
        if reps <= 1 {
            return Type::from_runs(runs, bounds, env, committed);
        }
        if let [r] = runs.as_slice() {
            if (r.count * basic_stride(r.basic)) as isize == stride {
                let one = Run {
                    count: r.count * reps,
                    ..*r
                };
                return Type::from_runs(vec![one], bounds, env, committed);
            }
        }
        let mut t = Type::from_runs(runs, None, env, committed);
        let (ulb, uub) = (t.true_lb, t.true_ub);
        let last = (reps as isize - 1) * stride;
        t.true_lb = ulb + last.min(0);
        t.true_ub = uub + last.max(0);
        t.size *= reps;
        t.reps = reps;
        t.rep_stride = stride;
        (t.lb, t.ub) = bounds.unwrap_or((t.true_lb, t.true_ub));
        t
    }
}

fn push_run(runs: &mut Vec<Run>, r: Run) {
    if r.count == 0 {
        return;
    }
    if let Some(l) = runs.last_mut() {
        if l.basic == r.basic && l.off + (l.count * basic_stride(l.basic)) as isize == r.off {
            l.count += r.count;
            return;
        }
    }
    runs.push(r);
}

/// Places `bl` consecutive copies of `old` at each displacement (bytes).
/// Returns the runs and the (lb, ub) bounds of the result.
fn replicate(old: &Type, blocks: impl Iterator<Item = (isize, usize)>) -> (Vec<Run>, isize, isize) {
    let mut runs = Vec::new();
    let (mut lb, mut ub) = (isize::MAX, isize::MIN);
    let ext = old.extent();
    let old_runs = old.expanded_runs();
    for (disp, bl) in blocks {
        if bl == 0 {
            continue;
        }
        let first = disp;
        let last = disp + (bl as isize - 1) * ext;
        lb = lb.min(first.min(last) + old.lb);
        ub = ub.max(first.max(last) + old.ub);
        if old_runs.len() == 1 && old.size as isize == ext && old_runs[0].off == old.lb {
            // Copies of a dense type are one run.
            let r = old_runs[0];
            push_run(
                &mut runs,
                Run {
                    off: disp + r.off,
                    basic: r.basic,
                    count: r.count * bl,
                },
            );
            continue;
        }
        for j in 0..bl {
            let base = disp + j as isize * ext;
            for r in &old_runs {
                push_run(
                    &mut runs,
                    Run {
                        off: base + r.off,
                        basic: r.basic,
                        count: r.count,
                    },
                );
            }
        }
    }
    if lb > ub {
        lb = 0;
        ub = 0;
    }
    (runs, lb, ub)
}

fn tref(h: c_int, t: &Arc<Type>) -> TypeRef {
    if t.env.combiner == MPI_COMBINER_NAMED {
        TypeRef::Builtin(h)
    } else {
        TypeRef::Derived(t.clone())
    }
}

fn env(combiner: c_int, ints: Vec<i64>, aints: Vec<isize>, types: Vec<TypeRef>) -> Envelope {
    Envelope {
        combiner,
        ints,
        aints,
        types,
        large: false,
    }
}

/// More pieces than this in one element and a constructor keeps its
/// outermost repetition (`Type::reps`) instead of writing every copy out.
#[cfg(not(test))]
const EXPAND_LIMIT: usize = 4096;
/// Small in tests, so that the randomized tests build repeated types.
#[cfg(test)]
const EXPAND_LIMIT: usize = 6;

/// Pieces (runs and segments) of `copies` copies of `old`, written out.
fn expanded_size(old: &Type, copies: usize) -> usize {
    (old.runs.len() + old.segs.len())
        .saturating_mul(old.reps)
        .saturating_mul(copies)
}

/// The typemap of `reps` copies, `stride` apart, of a block of `bl`
/// consecutive copies of `old` (the vectors and contiguous): written out
/// when small, else the block is the unit and the copies its repetition.
/// Returns the type's runs, repetition, and (lb, ub).
fn repeat_blocks(
    old: &Type,
    reps: usize,
    bl: usize,
    stride: isize,
) -> (Vec<Run>, usize, isize, isize, isize) {
    if reps <= 1 || expanded_size(old, reps.saturating_mul(bl)) <= EXPAND_LIMIT {
        let (runs, lb, ub) = replicate(old, (0..reps).map(|i| (i as isize * stride, bl)));
        return (runs, 1, 0, lb, ub);
    }
    let (unit, ulb, uub) = replicate(old, std::iter::once((0, bl)));
    if bl == 0 || ulb > uub {
        return (Vec::new(), 1, 0, 0, 0);
    }
    let last = (reps as isize - 1) * stride;
    (unit, reps, stride, ulb + last.min(0), uub + last.max(0))
}

pub fn contiguous(count: usize, oh: c_int, old: &Arc<Type>) -> Type {
    let (runs, reps, stride, lb, ub) = repeat_blocks(old, count, 1, old.extent());
    Type::repeated(
        runs,
        reps,
        stride,
        Some((lb, ub)),
        env(
            MPI_COMBINER_CONTIGUOUS,
            vec![count as i64],
            vec![],
            vec![tref(oh, old)],
        ),
        false,
    )
}

pub fn hvector(
    count: usize,
    bl: usize,
    stride: isize,
    oh: c_int,
    old: &Arc<Type>,
    elem_stride: Option<i64>,
) -> Type {
    let (runs, reps, rstride, lb, ub) = repeat_blocks(old, count, bl, stride);
    let e = match elem_stride {
        Some(s) => env(
            MPI_COMBINER_VECTOR,
            vec![count as i64, bl as i64, s],
            vec![],
            vec![tref(oh, old)],
        ),
        None => env(
            MPI_COMBINER_HVECTOR,
            vec![count as i64, bl as i64],
            vec![stride],
            vec![tref(oh, old)],
        ),
    };
    Type::repeated(runs, reps, rstride, Some((lb, ub)), e, false)
}

/// Indexed family: block i has `bls[i]` elements at byte displacement `displs[i]`.
pub fn hindexed(bls: &[usize], displs: &[isize], oh: c_int, old: &Arc<Type>, e: Envelope) -> Type {
    let (runs, lb, ub) = replicate(old, displs.iter().copied().zip(bls.iter().copied()));
    let mut e = e;
    e.types = vec![tref(oh, old)];
    Type::from_runs(runs, Some((lb, ub)), e, false)
}

pub fn structure(bls: &[usize], displs: &[isize], types: &[(c_int, Arc<Type>)]) -> Type {
    let mut runs = Vec::new();
    let (mut lb, mut ub) = (isize::MAX, isize::MIN);
    for i in 0..bls.len() {
        let (r, l, u) = replicate(&types[i].1, std::iter::once((displs[i], bls[i])));
        if bls[i] > 0 {
            lb = lb.min(l);
            ub = ub.max(u);
        }
        for x in r {
            push_run(&mut runs, x);
        }
    }
    if lb > ub {
        lb = 0;
        ub = 0;
    }
    // The standard's alignment rule (MPI-4.1 5.1.6), as C lays out an
    // array of the struct: the extent is rounded up to a multiple of the
    // strictest alignment among the basic types, unless a part's bounds
    // were set explicitly (resized).
    let explicit = types
        .iter()
        .zip(bls)
        .any(|((_, t), &b)| b > 0 && t.env.combiner == MPI_COMBINER_RESIZED);
    let align = runs.iter().map(|r| basic_align(r.basic)).max().unwrap_or(1) as isize;
    if !explicit && (ub - lb) % align != 0 {
        ub += align - (ub - lb).rem_euclid(align);
    }
    let e = env(
        MPI_COMBINER_STRUCT,
        std::iter::once(bls.len() as i64)
            .chain(bls.iter().map(|&b| b as i64))
            .collect(),
        displs.to_vec(),
        types.iter().map(|(h, t)| tref(*h, t)).collect(),
    );
    Type::from_runs(runs, Some((lb, ub)), e, false)
}

pub fn resized(oh: c_int, old: &Arc<Type>, lb: isize, extent: isize) -> Type {
    let mut t = Type::repeated(
        old.runs.clone(),
        old.reps,
        old.rep_stride,
        Some((lb, lb + extent)),
        env(
            MPI_COMBINER_RESIZED,
            vec![],
            vec![lb, extent],
            vec![tref(oh, old)],
        ),
        false,
    );
    t.true_lb = old.true_lb;
    t.true_ub = old.true_ub;
    t
}

pub fn dup(oh: c_int, old: &Arc<Type>) -> Type {
    let mut t = (**old).clone();
    t.env = env(MPI_COMBINER_DUP, vec![], vec![], vec![tref(oh, old)]);
    t.attrs.clear();
    t.name.clear();
    t
}

/// Subarray: `subsizes` starting at `starts` inside an array of `sizes` (C or Fortran order).
pub fn subarray(
    sizes: &[usize],
    subsizes: &[usize],
    starts: &[usize],
    order: c_int,
    oh: c_int,
    old: &Arc<Type>,
) -> Result<Type> {
    let nd = sizes.len();
    for d in 0..nd {
        if subsizes[d] == 0 || starts[d] + subsizes[d] > sizes[d] {
            return Err(err!(
                MPI_ERR_ARG,
                "subarray dimension {d}: start {} + subsize {} exceeds size {}",
                starts[d],
                subsizes[d],
                sizes[d]
            ));
        }
    }
    let ext = old.extent();
    // Dimension order from slowest to fastest.
    let dims: Vec<usize> = if order == MPI_ORDER_C {
        (0..nd).collect()
    } else {
        (0..nd).rev().collect()
    };
    let mut stride = vec![0isize; nd];
    let mut s = ext;
    for &d in dims.iter().rev() {
        stride[d] = s;
        s *= sizes[d] as isize;
    }
    let total = s;
    let fast = *dims.last().unwrap();
    let mut blocks = Vec::new();
    let mut idx = vec![0usize; nd];
    loop {
        // idx[fast] stays 0: each block is a run of subsizes[fast] along the fastest dimension.
        let off: isize = (0..nd)
            .map(|d| (starts[d] + idx[d]) as isize * stride[d])
            .sum();
        blocks.push((off, subsizes[fast]));
        // advance the slower dimensions
        let mut k = dims.len() as isize - 2;
        loop {
            if k < 0 {
                let (runs, _, _) = replicate(old, blocks.into_iter());
                let mut ints = vec![nd as i64];
                ints.extend(sizes.iter().map(|&x| x as i64));
                ints.extend(subsizes.iter().map(|&x| x as i64));
                ints.extend(starts.iter().map(|&x| x as i64));
                ints.push(order as i64);
                return Ok(Type::from_runs(
                    runs,
                    Some((0, total)),
                    env(MPI_COMBINER_SUBARRAY, ints, vec![], vec![tref(oh, old)]),
                    false,
                ));
            }
            let d = dims[k as usize];
            idx[d] += 1;
            if idx[d] < subsizes[d] {
                break;
            }
            idx[d] = 0;
            k -= 1;
        }
    }
}

/// Global indices along one dimension owned by process coordinate `p` of `np`.
fn dist_indices(g: usize, distrib: c_int, darg: c_int, p: usize, np: usize) -> Result<Vec<usize>> {
    Ok(match distrib {
        MPI_DISTRIBUTE_NONE => (0..g).collect(),
        MPI_DISTRIBUTE_BLOCK => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                g.div_ceil(np)
            } else {
                darg as usize
            };
            if b * np < g {
                return Err(err!(
                    MPI_ERR_ARG,
                    "darray block size {b} x {np} processes does not cover {g} elements"
                ));
            }
            (p * b..((p + 1) * b).min(g)).collect()
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                1
            } else {
                darg as usize
            };
            let mut v = Vec::new();
            let mut start = p * b;
            while start < g {
                v.extend(start..(start + b).min(g));
                start += b * np;
            }
            v
        }
        _ => return Err(err!(MPI_ERR_ARG, "distrib={distrib} is not a distribution")),
    })
}

/// Distributed array (HPF-style block / cyclic distributions over a process grid).
#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: usize,
    rank: usize,
    gsizes: &[usize],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[usize],
    order: c_int,
    oh: c_int,
    old: &Arc<Type>,
) -> Result<Type> {
    let nd = gsizes.len();
    if psizes.iter().product::<usize>() != size {
        return Err(err!(
            MPI_ERR_ARG,
            "darray process grid {:?} does not have {size} processes",
            psizes
        ));
    }
    // Process coordinates, row-major over psizes (the standard's rule for both orders).
    let mut coords = vec![0usize; nd];
    let mut r = rank;
    for d in (0..nd).rev() {
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    let owned: Vec<Vec<usize>> = (0..nd)
        .map(|d| dist_indices(gsizes[d], distribs[d], dargs[d], coords[d], psizes[d]))
        .collect::<Result<_>>()?;
    let ext = old.extent();
    let dims: Vec<usize> = if order == MPI_ORDER_C {
        (0..nd).collect()
    } else {
        (0..nd).rev().collect()
    };
    let mut stride = vec![0isize; nd];
    let mut s = ext;
    for &d in dims.iter().rev() {
        stride[d] = s;
        s *= gsizes[d] as isize;
    }
    let total = s;
    let mut blocks = Vec::new();
    if owned.iter().all(|o| !o.is_empty()) {
        let mut idx = vec![0usize; nd];
        'outer: loop {
            let off: isize = (0..nd).map(|d| owned[d][idx[d]] as isize * stride[d]).sum();
            blocks.push((off, 1));
            let mut k = nd as isize - 1;
            loop {
                if k < 0 {
                    break 'outer;
                }
                let d = dims[k as usize];
                idx[d] += 1;
                if idx[d] < owned[d].len() {
                    break;
                }
                idx[d] = 0;
                k -= 1;
            }
        }
    }
    let (runs, _, _) = replicate(old, blocks.into_iter());
    let mut ints = vec![size as i64, rank as i64, nd as i64];
    ints.extend(gsizes.iter().map(|&x| x as i64));
    ints.extend(distribs.iter().map(|&x| x as i64));
    ints.extend(dargs.iter().map(|&x| x as i64));
    ints.extend(psizes.iter().map(|&x| x as i64));
    ints.push(order as i64);
    Ok(Type::from_runs(
        runs,
        Some((0, total)),
        env(MPI_COMBINER_DARRAY, ints, vec![], vec![tref(oh, old)]),
        false,
    ))
}

/// Where a buffer lives (`gpu`). The cursor moves host memory with the
/// CPU and device memory with the driver's copies.
pub use crate::gpu::MemKind;

/// A resumable position in the typemap of `count` elements of a type at a
/// base address: packing or unpacking may stop after any number of bytes
/// (a pipeline chunk, a ring cell) and go on later from the same place.
pub struct Cursor<'a> {
    t: &'a Type,
    count: usize,
    base: *mut u8,
    kind: MemKind,
    s: CursorState,
    /// Device copies go on the library's stream, done at a later
    /// `gpu::mark` (`queued`), instead of in the call.
    queued: bool,
}

/// Where a cursor stands, kept between calls (a message streamed through
/// ring cells packs or unpacks a cell at a time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CursorState {
    /// Current element, copy of the unit in it, segment in that, and bytes
    /// of that segment done.
    elem: usize,
    rep: usize,
    seg: usize,
    off: usize,
    /// Bytes of the packed stream done so far.
    done: usize,
}

impl CursorState {
    /// Bytes of the packed stream done so far.
    pub fn position(&self) -> usize {
        self.done
    }
}

impl<'a> Cursor<'a> {
    pub fn new(t: &'a Type, count: usize, base: *mut u8, kind: MemKind) -> Cursor<'a> {
        Cursor::resume(t, count, base, kind, CursorState::default())
    }

    /// A cursor that goes on from `s` (a state of a cursor over the same
    /// type, count and buffer).
    pub fn resume(
        t: &'a Type,
        count: usize,
        base: *mut u8,
        kind: MemKind,
        s: CursorState,
    ) -> Cursor<'a> {
        Cursor {
            t,
            count,
            base,
            kind,
            s,
            queued: false,
        }
    }

    /// The same cursor with its device copies queued on the library's
    /// stream: the bytes are moved once a `gpu::mark` made after the call
    /// is done, and both sides must stay valid until then.
    pub fn queued(mut self) -> Cursor<'a> {
        self.queued = true;
        self
    }

    /// Where it stands, to resume later.
    pub fn state(&self) -> CursorState {
        self.s
    }

    /// Bytes of the packed stream done so far.
    pub fn position(&self) -> usize {
        self.s.done
    }

    /// Bytes of the packed stream still to go.
    pub fn remaining(&self) -> usize {
        self.t.size * self.count - self.s.done
    }

    /// Visits up to `n` bytes of the typemap from the current position as
    /// (address in the typed buffer, offset in `n`, length) pieces.
    fn walk(&mut self, n: usize, mut f: impl FnMut(*mut u8, usize, usize)) -> usize {
        let ext = self.t.extent();
        let reps = self.t.reps.max(1);
        let c = &mut self.s;
        let mut moved = 0;
        while moved < n && c.elem < self.count {
            if self.t.segs.is_empty() {
                break;
            }
            let (off, len) = self.t.segs[c.seg];
            let k = (len - c.off).min(n - moved);
            let at = self.base.wrapping_offset(
                c.elem as isize * ext + c.rep as isize * self.t.rep_stride + off + c.off as isize,
            );
            f(at, moved, k);
            moved += k;
            c.off += k;
            if c.off == len {
                c.off = 0;
                c.seg += 1;
                if c.seg == self.t.segs.len() {
                    c.seg = 0;
                    c.rep += 1;
                    if c.rep == reps {
                        c.rep = 0;
                        c.elem += 1;
                    }
                }
            }
        }
        c.done += moved;
        moved
    }

    /// Packs from (or unpacks into, `to_device`) a typed buffer in device
    /// memory: the pieces the walk visits go as the driver's strided copies
    /// (`gpu::copy_pieces`), not piece by piece where they repeat at a
    /// stride. On a failed copy the position is left where it was.
    ///
    /// `from_host`: `host` is host memory whose bytes are final now, so a
    /// short contiguous unpack may write them as values
    /// (`gpu::write_words_queued`) instead of copying.
    ///
    /// # Safety
    /// The base address holds `count` elements of the type in device
    /// memory; `host` holds `n` bytes (host memory, or device memory: the
    /// driver's copies take either).
    unsafe fn device(
        &mut self,
        host: *mut u8,
        n: usize,
        to_device: bool,
        from_host: bool,
    ) -> Result<usize> {
        let before = self.s;
        let mut pieces: Vec<(*mut u8, usize, usize)> = Vec::new();
        let moved = if self.t.is_contiguous(self.count) && self.t.size > 0 {
            // One range: one copy, without walking the elements.
            let k = n.min(self.remaining());
            let start = self.t.start() + self.s.done as isize;
            pieces.push((self.base.wrapping_offset(start), 0, k));
            let p = self.s.done + k;
            let (seg_len, reps) = (self.t.segs[0].1, self.t.reps.max(1));
            let unit = p / seg_len;
            self.s = CursorState {
                elem: unit / reps,
                rep: unit % reps,
                seg: 0,
                off: p % seg_len,
                done: p,
            };
            k
        } else {
            // Pieces that continue each other (in the buffer and in `host`)
            // are one piece.
            self.walk(n, |at, pos, k| match pieces.last_mut() {
                Some(l) if l.0.wrapping_add(l.2) == at && l.1 + l.2 == pos => l.2 += k,
                _ => pieces.push((at, pos, k)),
            })
        };
        let words = match pieces[..] {
            [(at, 0, k)] if to_device && from_host => {
                // SAFETY: `host` holds the piece's `k` bytes, host memory
                // (contract); `at` is their place in the device buffer.
                unsafe { crate::gpu::write_words_queued(at, std::slice::from_raw_parts(host, k)) }
            }
            _ => None,
        };
        let moved_now = match words {
            Some(r) if self.queued => r,
            Some(r) => r.and_then(|_| crate::gpu::finish_stream()),
            // SAFETY: each piece lies in the typed buffer and in `host` (contract).
            None => unsafe { crate::gpu::copy_pieces(&pieces, host, to_device, self.queued) },
        };
        if let Err(e) = moved_now {
            self.s = before;
            return Err(e);
        }
        Ok(moved)
    }

    /// Packs the next bytes into `out` (as many as fit); returns how many.
    ///
    /// # Safety
    /// The base address holds `count` elements of the type.
    pub unsafe fn pack(&mut self, out: &mut [u8]) -> Result<usize> {
        if self.kind == MemKind::Device {
            // SAFETY: forwarded contract.
            return unsafe { self.device(out.as_mut_ptr(), out.len(), false, false) };
        }
        let o = out.as_mut_ptr();
        Ok(self.walk(out.len(), |at, pos, k| {
            // SAFETY: `at` lies in the typed buffer (contract); pos + k <= out.len().
            unsafe { crate::sys::copy(o.add(pos), at, k) }
        }))
    }

    /// Unpacks the bytes of `inp` into the next part of the typemap; returns
    /// how many were used (fewer when the typemap ends first).
    ///
    /// # Safety
    /// The base address holds `count` elements of the type.
    pub unsafe fn unpack(&mut self, inp: &[u8]) -> Result<usize> {
        if self.kind == MemKind::Device {
            // SAFETY: forwarded contract; the driver only reads `inp`.
            return unsafe { self.device(inp.as_ptr() as *mut u8, inp.len(), true, true) };
        }
        let i = inp.as_ptr();
        Ok(self.walk(inp.len(), |at, pos, k| {
            // SAFETY: `at` lies in the typed buffer (contract); pos + k <= inp.len().
            unsafe { crate::sys::copy(at, i.add(pos), k) }
        }))
    }
}

/// Copies `count` elements of `t` at `src` into the contiguous `out`.
///
/// # Safety
/// `src` is a buffer holding `count` elements of `t` (MPI's rule for send buffers).
pub unsafe fn pack(t: &Type, count: usize, src: *const u8, out: &mut [u8]) {
    let mut c = Cursor::new(t, count, src as *mut u8, MemKind::Host);
    // SAFETY: forwarded contract; a host cursor cannot fail.
    let _ = unsafe { c.pack(out) };
}

/// Copies contiguous bytes `inp` into `count` elements of `t` at `dst`; stops
/// when `inp` runs out (a short message fills a prefix of the typemap).
///
/// # Safety
/// `dst` is a buffer holding `count` elements of `t`.
pub unsafe fn unpack(t: &Type, count: usize, inp: &[u8], dst: *mut u8) {
    let mut c = Cursor::new(t, count, dst, MemKind::Host);
    // SAFETY: forwarded contract; a host cursor cannot fail.
    let _ = unsafe { c.unpack(inp) };
}

/// `pack` of a buffer of either kind of memory.
///
/// # Safety
/// As `pack`.
pub unsafe fn pack_mem(
    t: &Type,
    count: usize,
    src: *const u8,
    kind: MemKind,
    out: &mut [u8],
) -> Result<()> {
    let mut c = Cursor::new(t, count, src as *mut u8, kind);
    // SAFETY: forwarded contract.
    unsafe { c.pack(out) }.map(|_| ())
}

/// `pack_mem` of device memory with the driver's copies queued on the
/// library's stream: `out` holds the bytes once a `gpu::mark` made after
/// this call is done.
///
/// # Safety
/// As `pack_mem`; `src` and `out` stay valid until then.
pub unsafe fn pack_queued(t: &Type, count: usize, src: *const u8, out: &mut [u8]) -> Result<()> {
    let mut c = Cursor::new(t, count, src as *mut u8, MemKind::Device).queued();
    // SAFETY: forwarded contract.
    unsafe { c.pack(out) }.map(|_| ())
}

/// `pack_queued` into `n` packed bytes at `out`, which may be device memory
/// too (the driver's copies then go from device to device).
///
/// # Safety
/// As `pack_queued`; `out` holds `n` bytes (host or device memory), valid
/// until the copies are done.
pub unsafe fn pack_queued_to(
    t: &Type,
    count: usize,
    src: *const u8,
    out: *mut u8,
    n: usize,
) -> Result<()> {
    let mut c = Cursor::new(t, count, src as *mut u8, MemKind::Device).queued();
    // SAFETY: forwarded contract.
    unsafe { c.device(out, n, false, false) }.map(|_| ())
}

/// `unpack_queued` from `n` packed bytes at `inp`, which may be device
/// memory too (the driver's copies then go from device to device).
///
/// # Safety
/// As `unpack_queued`; `inp` holds `n` bytes (host or device memory),
/// valid until the copies are done.
pub unsafe fn unpack_queued_from(
    t: &Type,
    count: usize,
    inp: *const u8,
    n: usize,
    dst: *mut u8,
) -> Result<()> {
    let mut c = Cursor::new(t, count, dst, MemKind::Device).queued();
    // SAFETY: forwarded contract; the driver only reads `inp`.
    unsafe { c.device(inp as *mut u8, n, true, false) }.map(|_| ())
}

/// `unpack_mem` into device memory with the driver's copies queued on the
/// library's stream (as `pack_queued`).
///
/// # Safety
/// As `unpack_mem`; `inp` and `dst` stay valid until the copies are done.
pub unsafe fn unpack_queued(t: &Type, count: usize, inp: &[u8], dst: *mut u8) -> Result<()> {
    let mut c = Cursor::new(t, count, dst, MemKind::Device).queued();
    // SAFETY: forwarded contract.
    unsafe { c.unpack(inp) }.map(|_| ())
}

/// `unpack` into a buffer of either kind of memory.
///
/// # Safety
/// As `unpack`.
pub unsafe fn unpack_mem(
    t: &Type,
    count: usize,
    inp: &[u8],
    dst: *mut u8,
    kind: MemKind,
) -> Result<()> {
    let mut c = Cursor::new(t, count, dst, kind);
    // SAFETY: forwarded contract.
    unsafe { c.unpack(inp) }.map(|_| ())
}

/// The typemap of `count` elements of `t` at `base` as [address, length]
/// segments in stream order, adjacent ones merged (for vectored copies).
pub fn segments(t: &Type, count: usize, base: usize) -> Vec<[usize; 2]> {
    if t.is_contiguous(count) {
        // One range, without a step per element (65,536 of MPI_BYTE took
        // 230 us).
        let n = t.size.saturating_mul(count);
        return match n {
            0 => Vec::new(),
            _ => vec![[base.wrapping_add_signed(t.start()), n]],
        };
    }
    let ext = t.extent();
    let mut v: Vec<[usize; 2]> = Vec::with_capacity(t.pieces().saturating_mul(count).min(1 << 16));
    for i in 0..count {
        for k in 0..t.reps.max(1) {
            let b = base.wrapping_add_signed(i as isize * ext + k as isize * t.rep_stride);
            for &(off, len) in &t.segs {
                let a = b.wrapping_add_signed(off);
                match v.last_mut() {
                    Some(l) if l[0] + l[1] == a => l[1] += len,
                    _ => v.push([a, len]),
                }
            }
        }
    }
    v
}

/// Basic elements in the first `bytes` bytes of a stream of elements of `t`
/// (MPI_Get_elements); None if it stops inside a basic element.
pub fn elements_in(t: &Type, bytes: usize) -> Option<usize> {
    if t.size == 0 {
        return Some(0);
    }
    // Whole copies of the unit, then a prefix of one.
    let unit = t.unit_size();
    let whole = bytes / unit;
    let mut rest = bytes % unit;
    let mut n = whole * t.unit_elements();
    for r in &t.runs {
        if rest == 0 {
            break;
        }
        let bs = basic_size(r.basic);
        let full = (rest / bs).min(r.count);
        n += full * basic_elements(r.basic);
        rest -= full * bs;
        if full < r.count && rest > 0 {
            return None;
        }
    }
    (rest == 0).then_some(n)
}

#[cfg(test)]
mod tests;
