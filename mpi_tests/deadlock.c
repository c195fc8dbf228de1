/* Deliberate hangs for the hang report (mpi_tests/diagnosis.sh): with
 * DEADLOCK=recv, ranks 0 and 1 each wait in MPI_Recv for the other (tag
 * 7); with DEADLOCK=coll, rank 0 waits in MPI_Barrier while rank 1 waits
 * in MPI_Recv from rank 0; with DEADLOCK=compute, rank 1 spins outside MPI
 * while rank 0 waits for it; with DEADLOCK=steps, every rank makes an
 * MPI_Allreduce, then rank 1 waits in MPI_Recv from rank 0 while the
 * others wait in MPI_Barrier (their collectives out of step: call 1 on
 * rank 1, call 2 on the others). Other ranks wait in MPI_Barrier. The job
 * never ends by itself: mpirun --timeout ends it. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = getenv("DEADLOCK") ? getenv("DEADLOCK") : "recv";
    if (rank == 0) printf("deadlock: %s\n", mode);
    fflush(stdout);
    if (!strcmp(mode, "steps")) {
        int y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 1) MPI_Recv(&x, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(mode, "recv") && rank < 2) {
        MPI_Recv(&x, 1, MPI_INT, 1 - rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "coll") && rank == 1) {
        MPI_Recv(&x, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "compute") && rank == 1) {
        volatile unsigned long spin = 0;
        for (;;) spin++;
    } else if (!strcmp(mode, "compute") && rank == 0) {
        MPI_Recv(&x, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
