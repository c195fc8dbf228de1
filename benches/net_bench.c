/* Benchmarks for jobs across hosts, where single iterations stall now and
 * then (TCP): every figure is the median (and 10th/90th percentile) of
 * per-iteration times, not their mean.
 *
 * A third argument divides the iteration counts (default 1).
 *
 *   net_bench p2p [MAXBYTES]   ranks 0 and size/2 (on different hosts when
 *                              the ranks are placed in blocks):
 *     lat N med p10 p90        one-way latency in us (half of each round
 *                              trip of a back-to-back ping-pong)
 *     bw N med p10 p90         MB/s of a window of 16 sends (per-window time)
 *     rate 8 med p10 p90       messages/s of a window of 64 8-byte sends
 *   net_bench coll [MAXBYTES]  every rank:
 *     allreduce|bcast|allgather|alltoall N med p10 p90
 *                              us per call (slowest rank of each iteration);
 *                              N = bytes of the vector (allreduce, bcast) or
 *                              of each rank's block (allgather, alltoall)
 * Percentiles of rates and bandwidths are of the per-iteration figures
 * (p10 is the slow end). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts t[0..n) and prints "name N median p10 p90" of f(t). */
static void report(const char *name, long n, double *t, int k, double scale, int invert) {
    for (int i = 0; i < k; i++) t[i] = invert ? scale / t[i] : t[i] * scale;
    qsort(t, k, sizeof *t, cmp);
    printf("%s %ld %.3f %.3f %.3f\n", name, n, t[k / 2], t[k / 10], t[k - 1 - k / 10]);
    fflush(stdout);
}

static int div_iters = 1;

static int iters_for(long n, int small) {
    int k = n <= 4096 ? small : n <= 65536 ? small / 4 : n <= 1 << 20 ? 100 : 30;
    k /= div_iters;
    return k < 10 ? 10 : k;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "p2p";
    long maxn = argc > 2 ? atol(argv[2]) : (4L << 20);
    if (argc > 3 && atoi(argv[3]) > 0) div_iters = atoi(argv[3]);
    /* Room for the rate test's 64 receives of 8 bytes at any MAXBYTES. */
    long room = maxn * 2 + 1024;
    char *a = malloc(room), *b = malloc(room);
    memset(a, 1, room);
    memset(b, 2, room);
    double *t = malloc(sizeof(double) * 20000);
    if (strcmp(what, "p2p") == 0) {
        int peer = size / 2, me = rank == 0 ? 0 : rank == peer ? 1 : -1;
        if (size < 2) { if (rank == 0) printf("needs 2 ranks\n"); MPI_Finalize(); return 1; }
        for (long n = 0; n <= maxn; n = n ? n * 4 : 8) {
            int it = iters_for(n, 4000), warm = it / 10 + 2;
            MPI_Barrier(MPI_COMM_WORLD);
            /* Back-to-back round trips, each timed (as ucx_perftest does). */
            for (int i = -warm; i < it; i++) {
                double t0 = MPI_Wtime();
                if (me == 0) {
                    MPI_Send(a, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(b, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (me == 1) {
                    MPI_Recv(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(a, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
                if (i >= 0) t[i] = (MPI_Wtime() - t0) / 2;
            }
            if (rank == 0) report("lat", n, t, it, 1e6, 0);
        }
        enum { W = 16 };
        MPI_Request rq[64];
    (void)rq;
        for (long n = 4096; n <= maxn; n *= 4) {
            int it = iters_for(n, 2000) / 2 + 10, warm = 5;
            for (int i = -warm; i < it; i++) {
                double t0 = MPI_Wtime();
                if (me == 0) {
                    for (int w = 0; w < W; w++) MPI_Isend(a, n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &rq[w]);
                    MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (me == 1) {
                    for (int w = 0; w < W; w++) MPI_Irecv(b, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[w]);
                    MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
                    MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
                }
                if (i >= 0) t[i] = MPI_Wtime() - t0;
            }
            if (rank == 0) report("bw", n, t, it, (double)n * W / 1e6, 1);
        }
        int rit = 2000 / div_iters;
        for (int i = -50; i < rit; i++) {
            double t0 = MPI_Wtime();
            if (me == 0) {
                for (int w = 0; w < 64; w++) MPI_Isend(a, 8, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &rq[w]);
                MPI_Waitall(64, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (me == 1) {
                for (int w = 0; w < 64; w++) MPI_Irecv(b + 8 * w, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &rq[w]);
                MPI_Waitall(64, rq, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            }
            if (i >= 0) t[i] = MPI_Wtime() - t0;
        }
        if (rank == 0) report("rate", 8, t, rit, 64, 1);
    } else {
        const char *names[] = {"allreduce", "bcast", "allgather", "alltoall"};
        long sizes[] = {8, 1L << 20};
        double *mx = malloc(sizeof(double) * 20000);
        for (int c = 0; c < 4; c++) {
            for (int s = 0; s < 2; s++) {
                long n = sizes[s];
                if (n > maxn) continue;
                long per = c >= 2 ? n * size : n; /* bytes of the result */
                char *x = realloc(a, per + 64), *y = realloc(b, per + 64);
                a = x; b = y;
                memset(a, 1, per + 64);
                int it = (n <= 4096 ? 1000 : 40) / div_iters, warm = it / 10 + 2;
                if (it < 10) it = 10;
                for (int i = -warm; i < it; i++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    switch (c) {
                    case 0: MPI_Allreduce(a, b, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
                    case 1: MPI_Bcast(a, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
                    case 2: MPI_Allgather(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD); break;
                    case 3: MPI_Alltoall(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD); break;
                    }
                    if (i >= 0) t[i] = MPI_Wtime() - t0;
                }
                MPI_Reduce(t, mx, it, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                if (rank == 0) report(names[c], n, mx, it, 1e6, 0);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
