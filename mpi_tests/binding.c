/* mpirun's default binding: every rank pinned to one CPU; when the ranks
 * outnumber the CPUs, consecutive ranks share one in blocks that differ by
 * at most one rank, and every CPU gets some. */
#define _GNU_SOURCE
#include "util.h"
#include <sched.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity failed");
    int mine = -1, count = CPU_COUNT(&set);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) mine = c;
    CHECK(count == 1, "rank %d may run on %d CPUs, want 1", rank, count);
    int *all = malloc(sizeof(int) * size);
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *nc = getenv("OXMPI_NODE_CPUS");
        int ncpus = nc ? atoi(nc) : 0;
        CHECK(ncpus > 0, "OXMPI_NODE_CPUS not set");
        int want = size < ncpus ? size : ncpus;
        int distinct = 1, run = 1, lo = size, hi = 0;
        for (int r = 1; r <= size; r++) {
            if (r < size) CHECK(all[r] >= all[r - 1], "rank %d on CPU %d after rank %d on %d", r, all[r], r - 1,
                                all[r - 1]);
            if (r < size && all[r] == all[r - 1]) {
                run++;
                continue;
            }
            lo = run < lo ? run : lo;
            hi = run > hi ? run : hi;
            run = 1;
            if (r < size) distinct++;
        }
        CHECK(distinct == want, "%d ranks on %d CPUs, want %d", size, distinct, want);
        CHECK(hi - lo <= 1, "ranks per CPU from %d to %d", lo, hi);
        printf("binding ok (%d ranks on %d CPUs, %d-%d each)\n", size, distinct, lo, hi);
    }
    free(all);
    MPI_Finalize();
    return 0;
}
