/* Buffered sends: attach, Bsend/Ibsend/Bsend_init, detach waits for the
 * data to leave, and a buffer that is too small gives MPI_ERR_BUFFER. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size, sz;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* Room for every message that may still be in flight: 10 large, 5 small. */
    int bufsize = 10 * (40000 + MPI_BSEND_OVERHEAD) + 5 * (4 + MPI_BSEND_OVERHEAD);
    char *buf = malloc(bufsize);
    MPI_Buffer_attach(buf, bufsize);

    static int data[10][10000], in[10][10000];
    MPI_Request rq[10];
    for (int i = 0; i < 10; i++) {
        for (int k = 0; k < 10000; k++) data[i][k] = rank * 7 + i * 100 + k;
        if (i < 5) MPI_Bsend(data[i], 10000, MPI_INT, right, i, MPI_COMM_WORLD);
        else MPI_Ibsend(data[i], 10000, MPI_INT, right, i, MPI_COMM_WORLD, &rq[i]);
    }
    /* The user buffers may be reused at once: overwrite them before the receiver runs. */
    memset(data, 0, sizeof data);
    for (int i = 0; i < 10; i++) {
        MPI_Recv(in[i], 10000, MPI_INT, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 10000; k++) CHECK(in[i][k] == left * 7 + i * 100 + k, "bsend %d elem %d", i, k);
    }
    MPI_Waitall(5, &rq[5], MPI_STATUSES_IGNORE);

    /* Persistent buffered send. */
    MPI_Request p;
    int v = 0, w = 0;
    MPI_Bsend_init(&v, 1, MPI_INT, right, 77, MPI_COMM_WORLD, &p);
    for (int it = 0; it < 5; it++) {
        v = rank + it;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        MPI_Recv(&w, 1, MPI_INT, left, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(w == left + it, "bsend_init value %d", w);
    }
    MPI_Request_free(&p);

    /* Too large for the buffer: MPI_ERR_BUFFER through MPI_ERRORS_RETURN. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static int huge[200000];
    int rc = MPI_Bsend(huge, 200000, MPI_INT, right, 88, MPI_COMM_WORLD);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "oversized bsend gave %d", rc);

    void *got;
    MPI_Buffer_detach(&got, &sz);
    CHECK(got == buf && sz == bufsize, "detach returned %p %d", got, sz);
    rc = MPI_Buffer_detach(&got, &sz);
    CHECK(rc == MPI_ERR_BUFFER, "second detach gave %d", rc);
    rc = MPI_Bsend(&v, 1, MPI_INT, right, 89, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_BUFFER, "bsend without a buffer gave %d", rc);
    free(buf);
    MPI_Finalize();
    return 0;
}
