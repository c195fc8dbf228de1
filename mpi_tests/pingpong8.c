/* Oversubscription: ranks 0 and 1 ping-pong while the others wait in
 * MPI_Recv; it must finish in seconds on 2 cores. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    const int iters = 2000;
    if (rank < 2) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                v = i;
                MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(v == i + 1, "pong %d", v);
            } else {
                MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                v++;
                MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
            }
        }
        double dt = MPI_Wtime() - t0;
        if (rank == 0) {
            printf("pingpong with %d ranks: %.2f us one-way\n", size, dt / iters / 2 * 1e6);
            for (int r = 2; r < size; r++) MPI_Send(&v, 1, MPI_INT, r, 1, MPI_COMM_WORLD);
        }
    } else {
        MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == iters, "release value %d", v);
    }
    MPI_Finalize();
    return 0;
}
