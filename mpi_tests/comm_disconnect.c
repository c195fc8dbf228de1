/* MPI_Comm_disconnect: completes the pending communication on the
 * communicator (a freed send request's rendezvous, a receive the caller
 * never waited for), frees it, sets MPI_COMM_NULL; works on an
 * intercommunicator; refuses MPI_COMM_WORLD with MPI_ERR_COMM. */
#include "util.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    size_t n = 1 << 19;
    int *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        out[i] = (int)(rank + i);
        in[i] = -1;
    }
    MPI_Request s, r;
    MPI_Irecv(in, (int)n, MPI_INT, left, 1, c, &r);
    MPI_Isend(out, (int)n, MPI_INT, right, 1, c, &s);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    int rc = MPI_Comm_disconnect(&c);
    CHECK(rc == MPI_SUCCESS && c == MPI_COMM_NULL, "disconnect rc %d", rc);
    /* The receive completed before the disconnect returned. */
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i] != (int)(left + i)) bad = 1;
    CHECK(!bad, "receive not complete at disconnect");
    free(out);
    free(in);

    if (size >= 2) {
        MPI_Comm local, inter;
        int color = rank % 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 3, &inter);
        int v = rank, got = -1;
        MPI_Request q[2];
        MPI_Irecv(&got, 1, MPI_INT, 0, 4, inter, &q[0]);
        int lr;
        MPI_Comm_rank(local, &lr);
        if (lr == 0) {
            int rs;
            MPI_Comm_remote_size(inter, &rs);
            for (int i = 0; i < rs; i++) MPI_Send(&v, 1, MPI_INT, i, 4, inter);
        }
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        CHECK(got == 1 - color, "intercomm message %d", got);
        rc = MPI_Comm_disconnect(&inter);
        CHECK(rc == MPI_SUCCESS && inter == MPI_COMM_NULL, "intercomm disconnect rc %d", rc);
        MPI_Comm_free(&local);
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm w = MPI_COMM_WORLD;
    rc = MPI_Comm_disconnect(&w);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM && w == MPI_COMM_WORLD, "disconnect of MPI_COMM_WORLD: class %d", cls);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_disconnect: OK\n");
    MPI_Finalize();
    return 0;
}
