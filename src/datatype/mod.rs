//! Datatype engine: type trees flattened at construction into runs of basic
//! elements, with cached size, bounds and merged byte segments, and the
//! pack/unpack cursor that moves data between a typed buffer and a
//! contiguous byte stream.
//!
//! A type's typemap for one element is `runs` (offset, basic type, count),
//! adjacent runs of one basic type merged; `segs` is the same map as byte
//! segments, merged where adjacent, which drives pack/unpack. `count`
//! elements of a type lie at `i * extent` for i in 0..count.
//! Owns no global state; the handle table is in `core::state`.

pub mod external32;

use crate::abi::consts::*;
use crate::abi::handles;
use crate::core::error::Result;
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
    pub ints: Vec<c_int>,
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
    pub runs: Vec<Run>,
    pub segs: Vec<(isize, usize)>,
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

    /// True when `count` elements are one contiguous byte range starting at `segs[0].0`.
    pub fn is_contiguous(&self, count: usize) -> bool {
        self.size == 0
            || (self.segs.len() == 1 && (count <= 1 || self.extent() == self.size as isize))
    }

    /// The one basic type all data is made of, if there is one (for reductions).
    pub fn homogeneous(&self) -> Option<(c_int, usize)> {
        let b = self.runs.first()?.basic;
        if self.runs.iter().all(|r| r.basic == b) {
            Some((b, self.runs.iter().map(|r| r.count).sum()))
        } else {
            None
        }
    }

    /// Basic elements in one element of the type.
    pub fn elements(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.count * basic_elements(r.basic))
            .sum()
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
    for (disp, bl) in blocks {
        if bl == 0 {
            continue;
        }
        let first = disp;
        let last = disp + (bl as isize - 1) * ext;
        lb = lb.min(first.min(last) + old.lb);
        ub = ub.max(first.max(last) + old.ub);
        if old.runs.len() == 1 && old.size as isize == ext && old.runs[0].off == old.lb {
            // Copies of a dense type are one run.
            let r = old.runs[0];
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
            for r in &old.runs {
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

fn env(combiner: c_int, ints: Vec<c_int>, aints: Vec<isize>, types: Vec<TypeRef>) -> Envelope {
    Envelope {
        combiner,
        ints,
        aints,
        types,
        large: false,
    }
}

pub fn contiguous(count: usize, oh: c_int, old: &Arc<Type>) -> Type {
    let (runs, lb, ub) = replicate(old, std::iter::once((0, count)));
    Type::from_runs(
        runs,
        Some((lb, ub)),
        env(
            MPI_COMBINER_CONTIGUOUS,
            vec![count as c_int],
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
    elem_stride: Option<c_int>,
) -> Type {
    let (runs, lb, ub) = replicate(old, (0..count).map(|i| (i as isize * stride, bl)));
    let e = match elem_stride {
        Some(s) => env(
            MPI_COMBINER_VECTOR,
            vec![count as c_int, bl as c_int, s],
            vec![],
            vec![tref(oh, old)],
        ),
        None => env(
            MPI_COMBINER_HVECTOR,
            vec![count as c_int, bl as c_int],
            vec![stride],
            vec![tref(oh, old)],
        ),
    };
    Type::from_runs(runs, Some((lb, ub)), e, false)
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
        std::iter::once(bls.len() as c_int)
            .chain(bls.iter().map(|&b| b as c_int))
            .collect(),
        displs.to_vec(),
        types.iter().map(|(h, t)| tref(*h, t)).collect(),
    );
    Type::from_runs(runs, Some((lb, ub)), e, false)
}

pub fn resized(oh: c_int, old: &Arc<Type>, lb: isize, extent: isize) -> Type {
    let mut t = Type::from_runs(
        old.runs.clone(),
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
                let mut ints = vec![nd as c_int];
                ints.extend(sizes.iter().map(|&x| x as c_int));
                ints.extend(subsizes.iter().map(|&x| x as c_int));
                ints.extend(starts.iter().map(|&x| x as c_int));
                ints.push(order);
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
    let mut ints = vec![size as c_int, rank as c_int, nd as c_int];
    ints.extend(gsizes.iter().map(|&x| x as c_int));
    ints.extend_from_slice(distribs);
    ints.extend_from_slice(dargs);
    ints.extend(psizes.iter().map(|&x| x as c_int));
    ints.push(order);
    Ok(Type::from_runs(
        runs,
        Some((0, total)),
        env(MPI_COMBINER_DARRAY, ints, vec![], vec![tref(oh, old)]),
        false,
    ))
}

/// Where a buffer lives. The cursor moves host memory with the CPU; device
/// memory needs the GPU transport, which this build does not have, so a
/// cursor over device memory refuses to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    Host,
    Device,
}

/// A resumable position in the typemap of `count` elements of a type at a
/// base address: packing or unpacking may stop after any number of bytes
/// (a pipeline chunk, a ring cell) and go on later from the same place.
pub struct Cursor<'a> {
    t: &'a Type,
    count: usize,
    base: *mut u8,
    kind: MemKind,
    /// Current element, segment in it, and bytes of that segment done.
    elem: usize,
    seg: usize,
    off: usize,
    /// Bytes of the packed stream done so far.
    done: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(t: &'a Type, count: usize, base: *mut u8, kind: MemKind) -> Cursor<'a> {
        Cursor {
            t,
            count,
            base,
            kind,
            elem: 0,
            seg: 0,
            off: 0,
            done: 0,
        }
    }

    /// Bytes of the packed stream done so far.
    pub fn position(&self) -> usize {
        self.done
    }

    /// Bytes of the packed stream still to go.
    pub fn remaining(&self) -> usize {
        self.t.size * self.count - self.done
    }

    /// Visits up to `n` bytes of the typemap from the current position as
    /// (address in the typed buffer, offset in `n`, length) pieces.
    fn walk(&mut self, n: usize, mut f: impl FnMut(*mut u8, usize, usize)) -> usize {
        let ext = self.t.extent();
        let mut moved = 0;
        while moved < n && self.elem < self.count {
            if self.t.segs.is_empty() {
                break;
            }
            let (off, len) = self.t.segs[self.seg];
            let k = (len - self.off).min(n - moved);
            let at = self
                .base
                .wrapping_offset(self.elem as isize * ext + off + self.off as isize);
            f(at, moved, k);
            moved += k;
            self.off += k;
            if self.off == len {
                self.off = 0;
                self.seg += 1;
                if self.seg == self.t.segs.len() {
                    self.seg = 0;
                    self.elem += 1;
                }
            }
        }
        self.done += moved;
        moved
    }

    fn host(&self) -> Result<()> {
        match self.kind {
            MemKind::Host => Ok(()),
            MemKind::Device => Err(err!(
                MPI_ERR_BUFFER,
                "a device buffer needs the GPU transport, which this build does not have"
            )),
        }
    }

    /// Packs the next bytes into `out` (as many as fit); returns how many.
    ///
    /// # Safety
    /// The base address holds `count` elements of the type.
    pub unsafe fn pack(&mut self, out: &mut [u8]) -> Result<usize> {
        self.host()?;
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
        self.host()?;
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

/// The typemap of `count` elements of `t` at `base` as [address, length]
/// segments in stream order, adjacent ones merged (for vectored copies).
pub fn segments(t: &Type, count: usize, base: usize) -> Vec<[usize; 2]> {
    let ext = t.extent();
    let mut v: Vec<[usize; 2]> = Vec::with_capacity(t.segs.len() * count.min(1 << 16));
    for i in 0..count {
        let b = base.wrapping_add_signed(i as isize * ext);
        for &(off, len) in &t.segs {
            let a = b.wrapping_add_signed(off);
            match v.last_mut() {
                Some(l) if l[0] + l[1] == a => l[1] += len,
                _ => v.push([a, len]),
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
    let whole = bytes / t.size;
    let mut rest = bytes % t.size;
    let mut n = whole * t.elements();
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
