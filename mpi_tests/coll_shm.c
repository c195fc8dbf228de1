/* Blocking collectives on MPI_COMM_WORLD back to back, as the shared-memory
 * collectives see them: 600 rounds mixing Barrier, Bcast, Reduce and
 * Allreduce with rotating roots and sizes on both sides of the shared
 * area's 128 KiB limit, a nonblocking allreduce in flight across the calls,
 * and a rank that arrives late now and then. The rounds rotate over world,
 * a duplicate of world (which shares world's area) and a split with the
 * ranks reversed (which takes messages). Every value is checked. */
#include "util.h"
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    const int maxn = 40000; /* ints: 160 KB */
    int *a = malloc(sizeof(int) * maxn), *b = malloc(sizeof(int) * maxn);
    int pend_in = rank, pend_out = -1;
    MPI_Request pend;
    MPI_Iallreduce(&pend_in, &pend_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &pend);
    MPI_Comm comms[3];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    for (int it = 0; it < 600; it++) {
        MPI_Comm comm = comms[(it / 4) % 3];
        int me;
        MPI_Comm_rank(comm, &me);
        int n = (it * 7919) % maxn;
        if (it % 5 == 0) n = it % 9;
        int root = it % size;
        if (it % 97 == rank) usleep(2000); /* a late rank */
        switch (it % 4) {
        case 0:
            MPI_Barrier(comm);
            break;
        case 1:
            for (int i = 0; i < n; i++) a[i] = me == root ? it * 31 + i : -1;
            MPI_Bcast(a, n, MPI_INT, root, comm);
            for (int i = 0; i < n; i++) CHECK(a[i] == it * 31 + i, "it %d bcast n=%d [%d]=%d", it, n, i, a[i]);
            break;
        case 2:
            for (int i = 0; i < n; i++) a[i] = rank * 3 + i + it;
            for (int i = 0; i < n; i++) b[i] = -5;
            MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
            if (me == root)
                for (int i = 0; i < n; i++)
                    CHECK(b[i] == 3 * size * (size - 1) / 2 + size * (i + it), "it %d reduce n=%d [%d]=%d", it, n, i, b[i]);
            else
                for (int i = 0; i < n; i++) CHECK(b[i] == -5, "it %d: reduce wrote a non-root's recvbuf", it);
            break;
        case 3:
            for (int i = 0; i < n; i++) a[i] = (rank + 1) * (i % 13 + it % 7);
            if (it % 8 == 3) {
                MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INT, MPI_MAX, comm);
                for (int i = 0; i < n; i++) CHECK(a[i] == size * (i % 13 + it % 7), "it %d allreduce in place [%d]=%d", it, i, a[i]);
            } else {
                MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, comm);
                for (int i = 0; i < n; i++)
                    CHECK(b[i] == size * (size + 1) / 2 * (i % 13 + it % 7), "it %d allreduce [%d]=%d", it, i, b[i]);
            }
            break;
        }
        if (it == 300) {
            MPI_Wait(&pend, MPI_STATUS_IGNORE);
            CHECK(pend_out == size * (size - 1) / 2, "pending iallreduce %d", pend_out);
        }
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    free(a);
    free(b);
    MPI_Finalize();
    if (rank == 0) printf("coll_shm ok\n");
    return 0;
}
