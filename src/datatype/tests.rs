//! Randomized differential tests: pack/unpack and bounds of nested types
//! against a naive element-by-element typemap expanded from each type's
//! envelope (an independent reading of the constructors' definitions).

use super::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The data bytes of one basic element as (offset, length): a pair type's
/// parts (its padding is not data), else the whole element.
fn pieces(b: c_int) -> Vec<(usize, usize)> {
    match crate::base::handles::pair_parts(b) {
        Some((p, _)) => p.to_vec(),
        None => vec![(0, basic_size(b))],
    }
}

/// (typemap of one element as (offset, basic), lb, ub), by definition.
fn naive(t: &TypeRef) -> (Vec<(isize, c_int)>, isize, isize) {
    let t = match t {
        TypeRef::Builtin(h) => {
            let s = basic_stride(*h) as isize;
            return (vec![(0, *h)], 0, s);
        }
        TypeRef::Derived(t) => t.clone(),
    };
    let e = &t.env;
    let sub = |i: usize| naive(&e.types[i]);
    let place = |map: &mut Vec<(isize, c_int)>,
                 lbub: &mut (isize, isize),
                 child: &(Vec<(isize, c_int)>, isize, isize),
                 disp: isize,
                 bl: usize| {
        let ext = child.2 - child.1;
        for j in 0..bl {
            let base = disp + j as isize * ext;
            for &(o, b) in &child.0 {
                map.push((base + o, b));
            }
            lbub.0 = lbub.0.min(base + child.1);
            lbub.1 = lbub.1.max(base + child.2);
        }
    };
    let mut map = Vec::new();
    let mut lu = (isize::MAX, isize::MIN);
    match e.combiner {
        MPI_COMBINER_CONTIGUOUS => {
            let c = sub(0);
            place(&mut map, &mut lu, &c, 0, e.ints[0] as usize);
        }
        MPI_COMBINER_VECTOR => {
            let c = sub(0);
            let ext = c.2 - c.1;
            for i in 0..e.ints[0] as isize {
                place(
                    &mut map,
                    &mut lu,
                    &c,
                    i * e.ints[2] as isize * ext,
                    e.ints[1] as usize,
                );
            }
        }
        MPI_COMBINER_HVECTOR => {
            let c = sub(0);
            for i in 0..e.ints[0] as isize {
                place(&mut map, &mut lu, &c, i * e.aints[0], e.ints[1] as usize);
            }
        }
        MPI_COMBINER_INDEXED => {
            let c = sub(0);
            let n = e.ints[0] as usize;
            let ext = c.2 - c.1;
            for i in 0..n {
                place(
                    &mut map,
                    &mut lu,
                    &c,
                    e.ints[1 + n + i] as isize * ext,
                    e.ints[1 + i] as usize,
                );
            }
        }
        MPI_COMBINER_HINDEXED => {
            let c = sub(0);
            let n = e.ints[0] as usize;
            for i in 0..n {
                place(&mut map, &mut lu, &c, e.aints[i], e.ints[1 + i] as usize);
            }
        }
        MPI_COMBINER_STRUCT => {
            let n = e.ints[0] as usize;
            for i in 0..n {
                let c = sub(i);
                place(&mut map, &mut lu, &c, e.aints[i], e.ints[1 + i] as usize);
            }
            // Padded as a C compiler pads the struct, unless a part was resized.
            let resized = (0..n).any(|i| {
                e.ints[1 + i] > 0
                    && matches!(&e.types[i], TypeRef::Derived(t) if t.env.combiner == MPI_COMBINER_RESIZED)
            });
            let align = map.iter().map(|&(_, b)| basic_align(b) as isize).max();
            if let (false, Some(a), true) = (resized, align, lu.0 <= lu.1) {
                while (lu.1 - lu.0) % a != 0 {
                    lu.1 += 1;
                }
            }
        }
        MPI_COMBINER_RESIZED => {
            let c = sub(0);
            place(&mut map, &mut lu, &c, 0, 1);
            lu = (e.aints[0], e.aints[0] + e.aints[1]);
        }
        MPI_COMBINER_DUP => return sub(0),
        MPI_COMBINER_NAMED => return naive(&TypeRef::Builtin(t.runs[0].basic)),
        other => panic!("naive: combiner {other}"),
    }
    if lu.0 > lu.1 {
        lu = (0, 0);
    }
    if e.combiner == MPI_COMBINER_RESIZED {
        return (map, lu.0, lu.1);
    }
    (map, lu.0, lu.1)
}

const BASICS: [c_int; 6] = [
    MPI_CHAR,
    MPI_SHORT,
    MPI_INT,
    MPI_DOUBLE,
    MPI_DOUBLE_INT,
    MPI_SHORT_INT,
];

fn random_type(r: &mut Rng, depth: u32) -> (c_int, Arc<Type>) {
    if depth == 0 || r.below(4) == 0 {
        let h = BASICS[r.below(BASICS.len() as u64) as usize];
        return (h, Arc::new(Type::builtin(h).unwrap()));
    }
    let (oh, old) = random_type(r, depth - 1);
    let t = match r.below(7) {
        0 => contiguous(r.below(4) as usize, oh, &old),
        1 => {
            let bl = 1 + r.below(3) as usize;
            let s = r.below(6) as i64 - 1;
            hvector(
                1 + r.below(3) as usize,
                bl,
                s as isize * old.extent(),
                oh,
                &old,
                Some(s),
            )
        }
        2 => hvector(
            1 + r.below(3) as usize,
            1 + r.below(2) as usize,
            r.below(64) as isize - 8,
            oh,
            &old,
            None,
        ),
        3 => {
            let n = 1 + r.below(3) as usize;
            let bls: Vec<usize> = (0..n).map(|_| r.below(3) as usize).collect();
            let ds: Vec<i64> = (0..n).map(|_| r.below(10) as i64 - 2).collect();
            let mut ints = vec![n as i64];
            ints.extend(bls.iter().map(|&b| b as i64));
            ints.extend(ds.iter().copied());
            let bytes: Vec<isize> = ds.iter().map(|&d| d as isize * old.extent()).collect();
            hindexed(
                &bls,
                &bytes,
                oh,
                &old,
                Envelope {
                    combiner: MPI_COMBINER_INDEXED,
                    ints,
                    aints: vec![],
                    types: vec![],
                    large: false,
                },
            )
        }
        4 => {
            let n = 1 + r.below(3) as usize;
            let bls: Vec<usize> = (0..n).map(|_| r.below(3) as usize).collect();
            let ds: Vec<isize> = (0..n).map(|_| r.below(100) as isize - 10).collect();
            let mut ints = vec![n as i64];
            ints.extend(bls.iter().map(|&b| b as i64));
            hindexed(
                &bls,
                &ds,
                oh,
                &old,
                Envelope {
                    combiner: MPI_COMBINER_HINDEXED,
                    ints,
                    aints: ds.clone(),
                    types: vec![],
                    large: false,
                },
            )
        }
        5 => {
            let n = 1 + r.below(3) as usize;
            let parts: Vec<(c_int, Arc<Type>)> =
                (0..n).map(|_| random_type(r, depth - 1)).collect();
            let bls: Vec<usize> = (0..n).map(|_| r.below(3) as usize).collect();
            let ds: Vec<isize> = (0..n).map(|_| r.below(80) as isize).collect();
            structure(&bls, &ds, &parts)
        }
        _ => resized(
            oh,
            &old,
            r.below(16) as isize - 4,
            old.extent() + r.below(16) as isize,
        ),
    };
    (0, Arc::new(t))
}

#[test]
fn pack_matches_naive_typemap() {
    let mut repeated = 0;
    for seed in 1..=400u64 {
        let mut r = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D));
        let (_, t) = random_type(&mut r, 3);
        repeated += (t.reps > 1) as usize;
        let (map, lb, ub) = naive(&TypeRef::Derived(t.clone()));
        let nsize: usize = map.iter().map(|&(_, b)| basic_size(b)).sum();
        assert_eq!(t.size, nsize, "seed {seed}: size");
        assert_eq!((t.lb, t.ub), (lb, ub), "seed {seed}: bounds");
        let count = 1 + r.below(3) as usize;
        let ext = t.extent();
        // A buffer covering every byte the typemap touches for `count` elements.
        let lo = map.iter().map(|&(o, _)| o).min().unwrap_or(0).min(0)
            + ext.min(0) * count as isize
            - 64;
        let hi = map
            .iter()
            .map(|&(o, b)| o + basic_stride(b) as isize)
            .max()
            .unwrap_or(0)
            .max(0)
            + ext.max(0) * count as isize
            + 64;
        let len = (hi - lo) as usize;
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + seed as usize) as u8).collect();
        let origin = (-lo) as usize;
        let mut packed = vec![0u8; t.size * count];
        // SAFETY: the buffer covers every element's typemap (see lo/hi above).
        unsafe { pack(&t, count, src.as_ptr().add(origin), &mut packed) };
        let mut expect = Vec::new();
        for i in 0..count {
            for &(o, b) in &map {
                let at = (origin as isize + i as isize * ext + o) as usize;
                for (po, pl) in pieces(b) {
                    expect.extend_from_slice(&src[at + po..at + po + pl]);
                }
            }
        }
        assert_eq!(packed, expect, "seed {seed}: pack");
        // Unpack into a zeroed buffer and check byte by byte against the typemap.
        let mut dst = vec![0u8; len];
        // SAFETY: as above.
        unsafe { unpack(&t, count, &packed, dst.as_mut_ptr().add(origin)) };
        let mut touched = vec![false; len];
        for i in 0..count {
            for &(o, b) in &map {
                let at = (origin as isize + i as isize * ext + o) as usize;
                for (po, pl) in pieces(b) {
                    for k in po..po + pl {
                        touched[at + k] = true;
                    }
                }
            }
        }
        for k in 0..len {
            if touched[k] {
                assert_eq!(dst[k], src[k], "seed {seed}: unpack byte {k}");
            } else {
                assert_eq!(
                    dst[k], 0,
                    "seed {seed}: unpack wrote outside the typemap at {k}"
                );
            }
        }
        // Elements: whole elements and a prefix.
        assert_eq!(elements_in(&t, t.size * count), Some(t.elements() * count));

        // The resumable cursor, stopped and resumed at random chunk sizes,
        // gives the same stream and the same typed buffer.
        let base = src.as_ptr().wrapping_add(origin) as *mut u8;
        let mut c = Cursor::new(&t, count, base, MemKind::Host);
        let mut stream = vec![0u8; t.size * count];
        let mut pos = 0;
        while pos < stream.len() {
            let chunk = 1 + r.below(97) as usize;
            let end = (pos + chunk).min(stream.len());
            // SAFETY: as above.
            let n = unsafe { c.pack(&mut stream[pos..end]) }.unwrap();
            assert_eq!(n, end - pos, "seed {seed}: cursor pack stopped early");
            pos = end;
            assert_eq!(c.position(), pos);
        }
        assert_eq!(c.remaining(), 0);
        assert_eq!(stream, expect, "seed {seed}: chunked pack");
        let mut dst2 = vec![0u8; len];
        let mut c = Cursor::new(
            &t,
            count,
            dst2.as_mut_ptr().wrapping_add(origin),
            MemKind::Host,
        );
        let mut pos = 0;
        while pos < stream.len() {
            let end = (pos + 1 + r.below(61) as usize).min(stream.len());
            // SAFETY: as above.
            unsafe { c.unpack(&stream[pos..end]) }.unwrap();
            pos = end;
        }
        assert_eq!(dst2, dst, "seed {seed}: chunked unpack");

        // Vectored segments list the same bytes in stream order.
        let segs = segments(&t, count, base as usize);
        let mut gathered = Vec::new();
        for &[a, l] in &segs {
            let at = a - src.as_ptr() as usize;
            gathered.extend_from_slice(&src[at..at + l]);
        }
        assert_eq!(gathered, expect, "seed {seed}: segments");
        for w in segs.windows(2) {
            assert_ne!(
                w[0][0] + w[0][1],
                w[1][0],
                "seed {seed}: unmerged neighbours"
            );
        }
    }
    // The small EXPAND_LIMIT of tests makes the constructors keep
    // repetitions: the comparison above covered such types.
    assert!(repeated >= 20, "only {repeated} of 400 types were repeated");
}

#[test]
fn device_cursor_without_a_driver_fails_and_stays_put() {
    // No CUDA driver in unit tests (OXMPI_CUDA_LIB names none here): a
    // cursor over device memory reports the failed copy as an error and
    // does not advance.
    std::env::set_var("OXMPI_CUDA_LIB", "/nonexistent/libcuda.so.1");
    let t = Type::builtin(MPI_INT).unwrap();
    let mut x = [0u8; 4];
    let mut c = Cursor::new(&t, 1, x.as_mut_ptr(), MemKind::Device);
    // SAFETY: without a driver the cursor fails before touching memory.
    let e = unsafe { c.pack(&mut [0u8; 4]) }.unwrap_err();
    assert_eq!(e.class, MPI_ERR_OTHER);
    assert_eq!(c.position(), 0);
}

#[test]
fn subarray_and_darray_cover_the_right_elements() {
    let int = Arc::new(Type::builtin(MPI_INT).unwrap());
    // 4x5 C array, 2x3 block at (1,1): elements 6,7,8,11,12,13.
    let t = subarray(&[4, 5], &[2, 3], &[1, 1], MPI_ORDER_C, MPI_INT, &int).unwrap();
    let offs: Vec<isize> = t
        .runs
        .iter()
        .flat_map(|r| (0..r.count).map(move |k| r.off / 4 + k as isize))
        .collect();
    assert_eq!(offs, vec![6, 7, 8, 11, 12, 13]);
    assert_eq!((t.lb, t.ub), (0, 80));
    // Fortran order: column-major, (1,1) start in a 4x5 array, 2x3 block: rows 1-2 of columns 1-3.
    let t = subarray(&[4, 5], &[2, 3], &[1, 1], MPI_ORDER_FORTRAN, MPI_INT, &int).unwrap();
    let offs: Vec<isize> = t
        .runs
        .iter()
        .flat_map(|r| (0..r.count).map(move |k| r.off / 4 + k as isize))
        .collect();
    assert_eq!(offs, vec![5, 6, 9, 10, 13, 14]);
    // 8 elements, block over 4 processes: rank 2 owns 4,5.
    let d = darray(
        4,
        2,
        &[8],
        &[MPI_DISTRIBUTE_BLOCK],
        &[MPI_DISTRIBUTE_DFLT_DARG],
        &[4],
        MPI_ORDER_C,
        MPI_INT,
        &int,
    )
    .unwrap();
    let offs: Vec<isize> = d
        .runs
        .iter()
        .flat_map(|r| (0..r.count).map(move |k| r.off / 4 + k as isize))
        .collect();
    assert_eq!(offs, vec![4, 5]);
    // cyclic(2) over 3 processes of 10 elements: rank 1 owns 2,3,8,9.
    let d = darray(
        3,
        1,
        &[10],
        &[MPI_DISTRIBUTE_CYCLIC],
        &[2],
        &[3],
        MPI_ORDER_C,
        MPI_INT,
        &int,
    )
    .unwrap();
    let offs: Vec<isize> = d
        .runs
        .iter()
        .flat_map(|r| (0..r.count).map(move |k| r.off / 4 + k as isize))
        .collect();
    assert_eq!(offs, vec![2, 3, 8, 9]);
    assert_eq!(d.extent(), 40);
}

#[test]
fn external32_is_big_endian_with_standard_sizes() {
    let t = Type::builtin(MPI_INT).unwrap();
    let v: i32 = 0x0102_0304;
    let mut out = vec![0u8; 4];
    // SAFETY: v is one int.
    unsafe { external32::pack(&t, 1, &v as *const i32 as *const u8, &mut out).unwrap() };
    assert_eq!(out, vec![1, 2, 3, 4]);
    let l = Type::builtin(MPI_LONG).unwrap();
    assert_eq!(external32::size(&l, 3).unwrap(), 12);
    let x: i64 = -5;
    let mut o = vec![0u8; 4];
    // SAFETY: x is one long.
    unsafe { external32::pack(&l, 1, &x as *const i64 as *const u8, &mut o).unwrap() };
    let mut back: i64 = 0;
    // SAFETY: back is one long.
    unsafe { external32::unpack(&l, 1, &o, &mut back as *mut i64 as *mut u8).unwrap() };
    assert_eq!(back, -5);
    // long double 1.5: binary128 0x3fff_8000_0000..., big-endian; back exactly.
    let ld = Type::builtin(MPI_LONG_DOUBLE).unwrap();
    assert_eq!(external32::size(&ld, 2).unwrap(), 32);
    let mut slot = [0u8; 16];
    slot[0..8].copy_from_slice(&(3u64 << 62).to_le_bytes());
    slot[8..10].copy_from_slice(&0x3fffu16.to_le_bytes());
    let mut e = vec![0u8; 16];
    // SAFETY: slot is one long double.
    unsafe { external32::pack(&ld, 1, slot.as_ptr(), &mut e).unwrap() };
    let mut expect = vec![0u8; 16];
    expect[0] = 0x3f;
    expect[1] = 0xff;
    expect[2] = 0x80;
    assert_eq!(e, expect);
    let mut got = [0x5au8; 16];
    // SAFETY: got is one long double.
    unsafe { external32::unpack(&ld, 1, &e, got.as_mut_ptr()).unwrap() };
    assert_eq!(got[..10], slot[..10]);
    assert_eq!(got[10..], [0x5a; 6], "padding untouched");
}
