/* Rank 2 is killed by SIGKILL in the middle of the job. */
#include <mpi.h>
#include <signal.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 2) kill(getpid(), SIGKILL);
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
