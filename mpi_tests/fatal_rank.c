/* Default MPI_ERRORS_ARE_FATAL: an invalid rank aborts the job with a message
 * naming the function, the argument, its value and the rank. */
#include <mpi.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, v = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) MPI_Send(&v, 1, MPI_INT, 5, 0, MPI_COMM_WORLD);
    else MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* never satisfied */
    MPI_Finalize();
    return 0;
}
