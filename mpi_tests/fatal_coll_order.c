/* Blocking collectives called in different orders on MPI_COMM_WORLD and a
 * duplicate of it (an erroneous program): they share the shared-memory
 * collective area, which reports the mismatch (MPI_ERR_OTHER, fatal by
 * default) instead of handing one call the other's data. */
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, a, b = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    a = rank;
    MPI_Comm first = rank == 0 ? MPI_COMM_WORLD : dup, second = rank == 0 ? dup : MPI_COMM_WORLD;
    MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, first);
    MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, second);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
