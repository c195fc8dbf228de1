/* One-sided benchmark, our own (after the OSU one-sided tests): rank 0
 * reaches rank 1's window (MPI_Win_allocate) in one passive-target epoch
 * (MPI_Win_lock_all), each operation followed by MPI_Win_flush; rank 1
 * waits in MPI_Barrier meanwhile. For each size:
 *   put, get   latency of one operation and its flush, us
 *   acc        MPI_Accumulate of doubles (MPI_SUM) and its flush, us
 *   putbw, getbw, accbw  64 operations, then one flush, MB/s
 * and at 8 B only:
 *   fop        MPI_Fetch_and_op (int64, MPI_SUM) and its flush, us
 *   cas        MPI_Compare_and_swap (int64) and its flush, us
 *   foprate    64 MPI_Fetch_and_op (each its own result), then one flush:
 *              thousands of operations per second
 * Usage: rma_bench [max_bytes] [allocate|create|dynamic]   (2 ranks): the
 * window's flavor, MPI_Win_allocate by default; "create": MPI_Win_create of
 * memory from malloc; "dynamic": MPI_Win_create_dynamic with rank 1's
 * memory (from malloc) attached, its address the base of every
 * displacement. Output lines "<test> <size> <value>".
 * Builds against any MPI. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

static int iters_for(long n, int base) {
    if (n <= 8192) return base;
    long it = base * 8192L / n;
    return it < 20 ? 20 : (int)it;
}

enum { PUT, GET, ACC, FOP, CAS };

/* The target's displacement of byte 0 of its memory: 0, or its address in
 * a dynamic window. */
static MPI_Aint tbase;

static double lat(int op, long n, int iters, char *buf, MPI_Win win) {
    int64_t one = 1, old = 0, cmp = 0;
    double t0 = 0;
    for (int i = -iters / 10 - 1; i < iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        switch (op) {
        case PUT: MPI_Put(buf, (int)n, MPI_BYTE, 1, tbase, (int)n, MPI_BYTE, win); break;
        case GET: MPI_Get(buf, (int)n, MPI_BYTE, 1, tbase, (int)n, MPI_BYTE, win); break;
        case ACC:
            MPI_Accumulate(buf, (int)(n / 8), MPI_DOUBLE, 1, tbase, (int)(n / 8), MPI_DOUBLE, MPI_SUM, win);
            break;
        case FOP: MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, tbase, MPI_SUM, win); break;
        case CAS: MPI_Compare_and_swap(&one, &cmp, &old, MPI_INT64_T, 1, tbase, win); break;
        }
        MPI_Win_flush(1, win);
    }
    return (MPI_Wtime() - t0) / iters * 1e6;
}

static double bw(int op, long n, int iters, char *buf, MPI_Win win) {
    double t0 = 0;
    int64_t one = 1;
    for (int i = -2; i < iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        for (int w = 0; w < WINDOW; w++) {
            switch (op) {
            case PUT: MPI_Put(buf, (int)n, MPI_BYTE, 1, tbase + (MPI_Aint)w * n, (int)n, MPI_BYTE, win); break;
            case GET:
                MPI_Get(buf + (long)w * n, (int)n, MPI_BYTE, 1, tbase + (MPI_Aint)w * n, (int)n, MPI_BYTE, win);
                break;
            case ACC:
                MPI_Accumulate(buf, (int)(n / 8), MPI_DOUBLE, 1, tbase + (MPI_Aint)w * n, (int)(n / 8), MPI_DOUBLE,
                               MPI_SUM, win);
                break;
            case FOP:
                MPI_Fetch_and_op(&one, (int64_t *)buf + w, MPI_INT64_T, 1, tbase + (MPI_Aint)w * 8, MPI_SUM, win);
                break;
            }
        }
        MPI_Win_flush(1, win);
    }
    double t = MPI_Wtime() - t0;
    return (double)n * WINDOW * iters / t / 1e6;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long maxn = argc > 1 ? atol(argv[1]) : (1L << 20);
    if (size < 2) { if (rank == 0) printf("needs 2 ranks\n"); MPI_Finalize(); return 1; }
    long winbytes = maxn * WINDOW;
    if (winbytes < 4096) winbytes = 4096;
    char *mem;
    MPI_Win win;
    const char *flavor = argc > 2 ? argv[2] : "allocate";
    int dynamic = strcmp(flavor, "dynamic") == 0, create = strcmp(flavor, "create") == 0;
    if (create) {
        mem = malloc(winbytes);
        MPI_Win_create(mem, winbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else if (dynamic) {
        mem = malloc(winbytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, mem, winbytes);
        MPI_Get_address(mem, &tbase);
        MPI_Bcast(&tbase, 1, MPI_AINT, 1, MPI_COMM_WORLD);
    } else {
        MPI_Win_allocate(winbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    }
    memset(mem, 0, winbytes);
    char *buf = calloc(1, winbytes);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        printf("fop 8 %.3f\n", lat(FOP, 8, 20000, buf, win));
        printf("cas 8 %.3f\n", lat(CAS, 8, 20000, buf, win));
        /* 8 bytes a fetch-and-op: MB/s / 8 * 1000 is thousands per second */
        printf("foprate 8 %.1f\n", bw(FOP, 8, 400, buf, win) / 8 * 1000);
        for (long n = 8; n <= maxn; n *= 2) {
            int it = iters_for(n, 10000);
            printf("put %ld %.3f\n", n, lat(PUT, n, it, buf, win));
            printf("get %ld %.3f\n", n, lat(GET, n, it, buf, win));
            printf("acc %ld %.3f\n", n, lat(ACC, n, it, buf, win));
            int bit = iters_for(n * WINDOW / 8, 200);
            printf("putbw %ld %.1f\n", n, bw(PUT, n, bit, buf, win));
            printf("getbw %ld %.1f\n", n, bw(GET, n, bit, buf, win));
            printf("accbw %ld %.1f\n", n, bw(ACC, n, bit, buf, win));
            fflush(stdout);
        }
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    if (dynamic || create) free(mem);
    free(buf);
    MPI_Finalize();
    return 0;
}
