//! Criterion benches of the hot internals: ring push/pop, matching with 1 and
//! 1000 posted receives.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use oxmpi::core::matching::Matcher;
use oxmpi::transport::ring::{self, CellHeader, Consumer, Producer};

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
    c.bench_function("ring push+pop 8B", |b| {
        b.iter(|| {
            let h = CellHeader {
                len: 8,
                ..Default::default()
            };
            assert!(p.push(&h, &payload));
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

criterion_group!(benches, ring_push_pop, matching);
criterion_main!(benches);
