/* Device-buffer benchmarks.
 *   gpu_bench [dd|hh|dh] [MAX]
 *                          2 ranks: point-to-point one-way latency (half the
 *                          ping-pong) and bandwidth (a window of 8
 *                          nonblocking sends per round), with buffers of
 *                          the kind given: "dd" device on both ranks, "hh"
 *                          host on both, "dh" device send / host receive;
 *                          sizes 8 B to 64 MiB, or to MAX bytes
 *   gpu_bench copy         1 rank: cuMemcpyDtoD of 64 MiB in one process,
 *                          the bandwidth the "dd" figures are measured against
 *   gpu_bench allreduce    any ranks: MPI_Allreduce (float sum) on device
 *                          buffers from 1 KiB to 256 MiB, checked
 * Needs a CUDA driver (skips without one). */
#include "../mpi_tests/gpu_util.h"
#include <sys/time.h>

static int rank, size;

static void copy_bench(void) {
    CHECK(cu.dtod && cu.ctx_sync, "the driver lacks cuMemcpyDtoD_v2 or cuCtxSynchronize");
    long n = 64L << 20;
    void *a = dalloc(n, 1), *b = dalloc(n, 2);
    for (int w = 0; w < 3; w++) cu.dtod((devptr)(uintptr_t)b, (devptr)(uintptr_t)a, n);
    cu.ctx_sync();
    int iters = 50;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) CHECK(cu.dtod((devptr)(uintptr_t)b, (devptr)(uintptr_t)a, n) == 0, "cuMemcpyDtoD");
    cu.ctx_sync();
    double bw = (double)n * iters / (MPI_Wtime() - t0) / 1e6;
    printf("cuMemcpyDtoD %ld bytes in one process: bandwidth %9.1f MB/s\n", n, bw);
    dfree(a);
    dfree(b);
}

static void allreduce_bench(void) {
    for (long bytes = 1024; bytes <= (256L << 20); bytes *= 4) {
        long n = bytes / 4;
        float *h = malloc(bytes);
        for (long i = 0; i < n; i++) h[i] = (float)(rank + 1);
        float *s = dcopy(h, bytes), *r = dalloc(bytes, 0);
        int iters = bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 5;
        MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = (MPI_Wtime() - t0) / iters, worst;
        MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        from_dev(h, r, bytes);
        float want = (float)size * (size + 1) / 2;
        for (long i = 0; i < n; i += n / 7 + 1) CHECK(h[i] == want, "allreduce %ld bytes: element %ld is %g, not %g", bytes, i, h[i], want);
        if (rank == 0)
            printf("allreduce %d ranks %10ld bytes: %10.1f us, %9.1f MB/s\n", size, bytes, worst * 1e6, bytes / worst / 1e6);
        dfree(s);
        dfree(r);
        free(h);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    const char *kind = argc > 1 ? argv[1] : "dd";
    GPU_OR_SKIP(rank);
    if (!strcmp(kind, "copy") || !strcmp(kind, "allreduce")) {
        if (kind[0] == 'c') {
            if (rank == 0) copy_bench();
        } else {
            allreduce_bench();
        }
        MPI_Finalize();
        return 0;
    }
    int dev_send = kind[0] == 'd', dev_recv = kind[1] == 'd';
    int mine_dev = rank == 0 ? dev_send : dev_recv;
    long sizes[] = {8, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
    long max = argc > 2 ? atol(argv[2]) : 64L << 20;
    for (int k = 0; k < 6 && sizes[k] <= max; k++) {
        long n = sizes[k];
        void *b = mine_dev ? dalloc(n * 8, 1) : calloc(8, n);
        int iters = n <= 65536 ? 2000 : n <= (1 << 20) ? 200 : 20;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(b, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(b, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double lat = (MPI_Wtime() - t0) / iters / 2 * 1e6;
        MPI_Request q[8];
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        int rounds = iters / 8 + 1;
        for (int r = 0; r < rounds; r++) {
            for (int w = 0; w < 8; w++) {
                char *p = (char *)b + (n <= (16 << 20) ? w * n : 0);
                if (rank == 0) MPI_Isend(p, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &q[w]);
                else MPI_Irecv(p, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &q[w]);
            }
            MPI_Waitall(8, q, MPI_STATUSES_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double bw = (double)n * 8 * rounds / (MPI_Wtime() - t0) / 1e6;
        if (rank == 0) printf("%s %8ld bytes: latency %9.2f us, bandwidth %9.1f MB/s\n", kind, n, lat, bw);
        if (mine_dev) dfree(b); else free(b);
    }
    MPI_Finalize();
    return 0;
}
