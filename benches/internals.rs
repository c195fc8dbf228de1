//! Criterion benches of the hot internals: ring push/pop, matching with 1 and
//! 1000 posted receives, reduction kernels, and packing of a contiguous and a
//! strided datatype.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use oxmpi::core::matching::Matcher;
use oxmpi::transport::shm::ring::{self, CellHeader, Consumer, Producer};

fn ring_push_pop(c: &mut Criterion) {
    let cells = 64;
    let cs = 4096;
    let mut mem = vec![0u128; ring::ring_bytes(cells, cs) / 16 + 16];
    let base = mem.as_mut_ptr() as *mut u8;
    // SAFETY: mem outlives the cursors and is large enough.
    let (mut p, mut q) = unsafe {
        ring::init(base);
        (
            Producer::new(base, cells, cs),
            Consumer::new(base, cells, cs),
        )
    };
    let payload = [7u8; 8];
    c.bench_function("ring push+pop 8B (inline)", |b| {
        b.iter(|| {
            let h = CellHeader {
                len: 8,
                ..Default::default()
            };
            assert!(p.push(&h, &payload, true));
            let (hh, _) = q.peek().unwrap();
            black_box(hh);
            q.release();
        })
    });
    drop(mem);
}

fn matching(c: &mut Criterion) {
    for posted in [1usize, 1000] {
        let mut m: Matcher<u32, u64> = Matcher::new();
        for i in 0..posted as i32 - 1 {
            m.post(0, 1, 1000 + i, 0);
        }
        c.bench_function(&format!("match arrival with {posted} posted"), |b| {
            b.iter(|| {
                m.post(0, 1, 5, 1);
                black_box(m.arrive(0, 1, 5, 9));
            })
        });
    }
}

/// MPI_SUM on f32/f64 at 4 KiB and 4 MiB, next to a plain copy of the same
/// bytes (the memory-bandwidth bound: the kernel reads two streams and writes one).
fn reduction(c: &mut Criterion) {
    use criterion::Throughput;
    use oxmpi::abi::consts::{MPI_DOUBLE, MPI_FLOAT, MPI_SUM};
    let mut g = c.benchmark_group("reduce");
    for bytes in [4096usize, 4 << 20] {
        g.throughput(Throughput::Bytes(bytes as u64));
        let a = vec![1u8; bytes];
        let mut b = vec![2u8; bytes];
        for (name, dt, esz) in [("f32", MPI_FLOAT, 4usize), ("f64", MPI_DOUBLE, 8)] {
            let e = oxmpi::op::check(MPI_SUM, dt).unwrap();
            g.bench_function(format!("sum {name} {bytes}B"), |x| {
                x.iter(|| {
                    oxmpi::op::reduce_builtin(
                        MPI_SUM,
                        e,
                        bytes / esz,
                        black_box(&a),
                        black_box(&mut b),
                    )
                })
            });
        }
        g.bench_function(format!("copy {bytes}B (bound)"), |x| {
            x.iter(|| b.copy_from_slice(black_box(&a)))
        });
    }
    g.finish();
}

fn packing(c: &mut Criterion) {
    use criterion::Throughput;
    use oxmpi::abi::consts::MPI_BYTE;
    use oxmpi::datatype::{self, Type};
    use std::sync::Arc;
    let mut g = c.benchmark_group("pack");
    let byte = Arc::new(Type::builtin(MPI_BYTE).unwrap());
    for bytes in [64usize << 10, 4 << 20] {
        g.throughput(Throughput::Bytes(bytes as u64));
        let src = vec![7u8; 2 * bytes];
        let mut out = vec![0u8; bytes];
        let contig = datatype::contiguous(bytes, MPI_BYTE, &byte);
        // 512 B blocks at a 1 KiB stride (the vbw benchmark's layout).
        let strided = datatype::hvector(bytes / 512, 512, 1024, MPI_BYTE, &byte, None);
        for (name, t) in [("contiguous", &contig), ("strided 512B/1KiB", &strided)] {
            g.bench_function(format!("{name} {bytes}B"), |x| {
                // SAFETY: `src` covers the typemap of one element of `t`.
                x.iter(|| unsafe { datatype::pack(t, 1, black_box(src.as_ptr()), &mut out) })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, ring_push_pop, matching, reduction, packing);
criterion_main!(benches);
