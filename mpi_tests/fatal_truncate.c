/* A message longer than the receive buffer is fatal by default (MPI_ERR_TRUNCATE). */
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, v[4] = {1, 2, 3, 4};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) MPI_Send(v, 4, MPI_INT, 1, 0, MPI_COMM_WORLD);
    else MPI_Recv(v, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
