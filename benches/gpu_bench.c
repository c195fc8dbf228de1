/* Device-buffer point-to-point between 2 ranks: one-way latency (half the
 * ping-pong) and bandwidth (a window of 8 nonblocking sends per round),
 * with buffers of the kind given: "dd" device on both ranks, "hh" host on
 * both, "dh" device send / host receive.
 * Usage: gpu_bench [dd|hh|dh]   (2 ranks; needs a CUDA driver) */
#include "../mpi_tests/gpu_util.h"
#include <sys/time.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    test_rank = rank;
    const char *kind = argc > 1 ? argv[1] : "dd";
    GPU_OR_SKIP(rank);
    int dev_send = kind[0] == 'd', dev_recv = kind[1] == 'd';
    int mine_dev = rank == 0 ? dev_send : dev_recv;
    long sizes[] = {8, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
    for (int k = 0; k < 6; k++) {
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
