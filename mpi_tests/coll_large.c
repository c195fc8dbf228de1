/* Collectives at a few MiB per rank (where the bandwidth algorithms run):
 * Bcast, Allreduce (SUM on doubles, exact because the values are small
 * integers), Reduce_scatter_block, Allgather and Alltoall; results checked
 * element by element. The testlist runs it with each algorithm forced. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    const int n = 3 << 18; /* 786432 doubles: 6 MiB */
    double *a = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
    int root = size - 1;

    for (int i = 0; i < n; i++) a[i] = rank == root ? (double)(i % 1000003) : -1;
    MPI_Bcast(a, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(a[i] == (double)(i % 1000003), "bcast [%d]=%g", i, a[i]);

    for (int i = 0; i < n; i++) a[i] = (double)((rank + 1) * (i % 4099));
    MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        CHECK(b[i] == (double)(size * (size + 1) / 2 * (i % 4099)), "allreduce [%d]=%g", i, b[i]);

    int blk = n / size;
    MPI_Reduce_scatter_block(a, b, blk, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < blk; k++) {
        int i = rank * blk + k;
        CHECK(b[k] == (double)(size * (size + 1) / 2 * (i % 4099)), "reduce_scatter_block [%d]=%g", k, b[k]);
    }

    for (int k = 0; k < blk; k++) a[k] = rank * 1e6 + k;
    MPI_Allgather(a, blk, MPI_DOUBLE, b, blk, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < blk; k++) CHECK(b[r * blk + k] == r * 1e6 + k, "allgather [%d][%d]", r, k);

    for (int d = 0; d < size; d++)
        for (int k = 0; k < blk; k++) a[d * blk + k] = rank * 1e6 + d * 1e3 + k % 1000;
    MPI_Alltoall(a, blk, MPI_DOUBLE, b, blk, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++)
        for (int k = 0; k < blk; k++)
            CHECK(b[s * blk + k] == s * 1e6 + rank * 1e3 + k % 1000, "alltoall [%d][%d]", s, k);

    free(a);
    free(b);
    MPI_Finalize();
    if (rank == 0) printf("coll_large ok\n");
    return 0;
}
