/* Node-level figures of issue 5, our own program, built against any MPI:
 *   rss      resident memory of each rank after MPI_Init and one barrier (KiB;
 *            rank 0 prints the largest and the mean)
 *   oversub  rank 0 and 1 ping-pong 8 B while every other rank waits in
 *            MPI_Recv; then rank 2 reports the CPU time it used while blocked
 *            for 2 s in MPI_Recv (percent of one core)
 * Usage: node_bench rss|oversub. Output: "<name> <value>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
    if (f) fclose(f);
    return v;
}

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "rss";
    if (!strcmp(what, "rss")) {
        MPI_Barrier(MPI_COMM_WORLD);
        long mine = rss_kib(), mx = 0, sum = 0;
        MPI_Reduce(&mine, &mx, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("rss_max_kib %ld\nrss_mean_kib %ld\n", mx, sum / size);
    } else if (size >= 3) {
        char b[8] = {0};
        int iters = 20000;
        if (rank < 2) {
            double t0 = 0;
            for (int i = 0; i < iters + 1000; i++) {
                if (i == 1000) t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            if (rank == 0) printf("pair_latency_us %.3f\n", (MPI_Wtime() - t0) / iters / 2 * 1e6);
            if (rank == 0)
                for (int r = 2; r < size; r++) MPI_Send(b, 1, MPI_BYTE, r, 2, MPI_COMM_WORLD);
        } else {
            MPI_Recv(b, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* Blocked receive of 2 s: rank 2 waits for rank 1, which sleeps. */
        if (rank == 1) {
            usleep(2000000);
            MPI_Send(b, 1, MPI_BYTE, 2, 3, MPI_COMM_WORLD);
        } else if (rank == 2) {
            double c0 = cpu_s(), w0 = MPI_Wtime();
            MPI_Recv(b, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double c = cpu_s() - c0, w = MPI_Wtime() - w0;
            printf("blocked_recv_cpu_percent %.1f\n", 100 * c / w);
        }
    }
    MPI_Finalize();
    return 0;
}
