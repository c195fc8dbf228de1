/* MPI-4 persistent collectives: initialised once, started many times with
 * new data, started together with MPI_Startall, freed. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    double in[100], out[100];
    int b[10];
    MPI_Request rq[3];
    MPI_Allreduce_init(in, out, 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
    MPI_Bcast_init(b, 10, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]);
    for (int it = 0; it < 10; it++) {
        for (int i = 0; i < 100; i++) in[i] = rank + it + i;
        for (int i = 0; i < 10; i++) b[i] = rank == size - 1 ? it * 100 + i : -1;
        if (it % 2) {
            MPI_Startall(3, rq);
        } else {
            MPI_Start(&rq[1]);
            MPI_Start(&rq[0]);
            MPI_Start(&rq[2]);
        }
        MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        CHECK(rq[0] != MPI_REQUEST_NULL, "persistent collective request freed by wait");
        for (int i = 0; i < 100; i++) CHECK(out[i] == size * (it + i) + size * (size - 1) / 2, "iteration %d elem %d: %g", it, i, out[i]);
        for (int i = 0; i < 10; i++) CHECK(b[i] == it * 100 + i, "bcast iteration %d", it);
    }
    int s = rank, t = -1;
    MPI_Request sc;
    MPI_Scan_init(&s, &t, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &sc);
    MPI_Start(&sc);
    MPI_Wait(&sc, MPI_STATUS_IGNORE);
    CHECK(t == rank * (rank + 1) / 2, "scan_init %d", t);
    MPI_Request_free(&sc);
    for (int k = 0; k < 3; k++) MPI_Request_free(&rq[k]);
    CHECK(rq[0] == MPI_REQUEST_NULL, "free");
    MPI_Finalize();
    return 0;
}
