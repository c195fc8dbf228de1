/* The README demo: 4 ranks sum their ranks with MPI_Allreduce and ranks 0 and
 * 1 measure bandwidth with 4 MiB messages. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long mine = rank, sum = 0, other;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: MPI_Allreduce sum of ranks = %ld (expected %d)\n", rank, size, sum, size * (size - 1) / 2);
    const int n = 4 << 20, iters = 50;
    char *buf = malloc(n);
    for (int i = 0; i < n; i++) buf[i] = (char)i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters && rank < 2; i++) {
        if (rank == 0) MPI_Send(buf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
        else MPI_Recv(buf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 1) MPI_Send(&sum, 1, MPI_LONG, 0, 3, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(&other, 1, MPI_LONG, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double dt = MPI_Wtime() - t0;
        printf("bandwidth rank 0 -> 1, 4 MiB messages: %.1f GB/s\n", (double)n * iters / dt / 1e9);
    }
    free(buf);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
