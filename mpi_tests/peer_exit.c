/* Rank 1 exchanges a message with rank 0, then exits with code 3 while
 * rank 0 waits in MPI_Recv for another message from it. Under a launcher
 * that leaves rank 0 running, the link to rank 1 (an endpoint UCX reports
 * failed) ends rank 0 with a message naming rank 1, never a hang. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, v = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("peer_exit: rank 0 received what rank 1 never sent\n");
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        exit(3);
    }
    MPI_Finalize();
    return 0;
}
