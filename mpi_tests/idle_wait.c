/* A rank waiting long for a message burns (almost) no CPU: rank 0 sleeps
 * 2 s before sending to every other rank, which waits in MPI_Recv and
 * measures its own CPU time over the wait. Over shared memory and over the
 * UCX link alike, a waiting rank spins briefly, yields, then sleeps (on
 * UCX's event fd where there is one). */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    int rank, size, v = 0, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        sleep(2);
        for (int r = 1; r < size; r++) {
            v = 100 + r;
            MPI_Send(&v, 1, MPI_INT, r, 5, MPI_COMM_WORLD);
        }
    } else {
        double c0 = cpu(), w0 = MPI_Wtime();
        MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double c = cpu() - c0, w = MPI_Wtime() - w0;
        if (v != 100 + rank) {
            printf("rank %d: got %d, want %d\n", rank, v, 100 + rank);
            bad = 1;
        }
        /* A spinning rank would use the whole wait; allow a fifth. */
        if (w < 1.5 || c > 0.2 * w) {
            printf("rank %d: waited %.2f s using %.3f s of CPU\n", rank, w, c);
            bad = 1;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !bad) printf("idle_wait ok at %d ranks\n", size);
    MPI_Finalize();
    return bad;
}
