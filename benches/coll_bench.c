/* Collective benchmark (OSU-style): average latency in microseconds of
 * Barrier, Bcast, Allreduce (SUM on floats), Reduce_scatter_block,
 * Allgather and Alltoall for message sizes 8 B .. max (per rank).
 * Usage: coll_bench [max_bytes] [world|reversed] [colls] [min_bytes] [scale]:
 * "reversed" runs every call on a communicator of world's ranks in reverse
 * order (MPI_Comm_split), as codes that renumber their ranks have; colls is
 * "all" (default) or a comma-separated list of the names below (barrier
 * included, and reduce: SUM on floats to rank 0, and alltoallv: equal
 * blocks, only when named); min_bytes is the first size (default 8); scale multiplies the
 * iteration counts (default 1), for steadier figures at large sizes. Output:
 * "<coll> <bytes> <usec>". Builds against any MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the comma-separated list has the name. */
static int wanted(const char *list, const char *name) {
    size_t k = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, k) == 0 && (p[k] == ',' || p[k] == 0)) return 1;
    return 0;
}

static int iters_for(long n) { return n <= 8192 ? 2000 : (int)(2000 * 8192L / n) + 10; }

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long maxn = argc > 1 ? atol(argv[1]) : (1L << 24);
    MPI_Comm comm = MPI_COMM_WORLD;
    if (argc > 2 && strcmp(argv[2], "reversed") == 0) MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comm);
    char *a = malloc(maxn * size + 64), *b = malloc(maxn * size + 64);
    memset(a, 1, maxn * size);
    memset(b, 0, maxn * size);
    const char *only = argc > 3 && strcmp(argv[3], "all") != 0 ? argv[3] : NULL;
    long minn = argc > 4 ? atol(argv[4]) : 8;
    if (minn < 8) minn = 8;
    double scale = argc > 5 ? atof(argv[5]) : 1.0;
    if (scale <= 0) scale = 1.0;
    double t0;
    int it = 2000;
    if (!only || wanted(only, "barrier")) {
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
        for (int i = 0; i < it; i++) MPI_Barrier(comm);
        if (rank == 0) printf("barrier 0 %.3f\n", (MPI_Wtime() - t0) / it * 1e6);
    }
    const char *names[] = {"bcast", "allreduce", "reduce_scatter_block", "allgather", "alltoall", "reduce", "alltoallv"};
    int *vc = malloc(sizeof(int) * size), *vd = malloc(sizeof(int) * size);
    for (int c = 0; c < 7; c++) {
        if (only ? !wanted(only, names[c]) : c >= 5) continue;
        for (long n = minn; n <= maxn; n *= 2) {
            int iters = (int)(iters_for(n * (c >= 3 ? size : 1)) * scale);
            if (iters < 1) iters = 1;
            int cnt = (int)(n / 4);
            for (int r = 0; r < size; r++) {
                vc[r] = (int)n;
                vd[r] = (int)(r * n);
            }
            double best = 0;
            for (int rep = 0; rep < 2; rep++) {
                MPI_Barrier(comm);
                t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++) {
                    switch (c) {
                    case 0: MPI_Bcast(a, (int)n, MPI_BYTE, 0, comm); break;
                    case 1: MPI_Allreduce(a, b, cnt, MPI_FLOAT, MPI_SUM, comm); break;
                    case 2: MPI_Reduce_scatter_block(a, b, cnt / size > 0 ? cnt / size : 1, MPI_FLOAT, MPI_SUM, comm); break;
                    case 3: MPI_Allgather(a, (int)n, MPI_BYTE, b, (int)n, MPI_BYTE, comm); break;
                    case 4: MPI_Alltoall(a, (int)n, MPI_BYTE, b, (int)n, MPI_BYTE, comm); break;
                    case 5: MPI_Reduce(a, b, cnt, MPI_FLOAT, MPI_SUM, 0, comm); break;
                    case 6: MPI_Alltoallv(a, vc, vd, MPI_BYTE, b, vc, vd, MPI_BYTE, comm); break;
                    }
                }
                double dt = (MPI_Wtime() - t0) / iters * 1e6, mx;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
                if (rep == 1 || mx < best || best == 0) best = rep == 0 ? mx : (mx < best ? mx : best);
            }
            if (rank == 0) printf("%s %ld %.3f\n", names[c], n, best);
            fflush(stdout);
        }
    }
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    free(a);
    free(b);
    free(vc);
    free(vd);
    MPI_Finalize();
    return 0;
}
