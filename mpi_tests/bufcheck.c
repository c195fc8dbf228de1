/* OXMPI_CHECK_BUFFERS=1: a send buffer changed between a nonblocking send
 * and the call that completes it is an MPI_ERR_BUFFER error naming the
 * send (MPI_Isend, MPI_Issend, MPI_Ibsend), from MPI_Wait, MPI_Waitall,
 * MPI_Waitany and MPI_Test alike,
 * eager, rendezvous and derived types; an unchanged one is not; a freed
 * request is not followed. Nonblocking collectives' send buffers alike
 * (MPI_Iallreduce on every rank, MPI_Ibcast at its root; receive buffers
 * and in-place ones are not followed). Without the variable nothing is checked (the
 * same changes pass). With BUFCHECK_FATAL=1 the first change goes to the
 * default (fatal) error handler, whose message the testlist checks
 * (BUFCHECK_FATAL=coll: the first collective's).
 * 2 or 3 ranks: rank 0 sends, rank 1 receives; the collectives on all. */
#include "util.h"

static int rank;
static int checking;

/* The class of `rc`, and that its text names the send when checking. */
static void expect(int rc, const char *what, const char *func) {
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (!checking) {
        CHECK(rc == MPI_SUCCESS, "%s: error %d without OXMPI_CHECK_BUFFERS", what, cls);
        return;
    }
    (void)func; /* the message's text is checked on the fatal path (BUFCHECK_FATAL) */
    CHECK(cls == MPI_ERR_BUFFER, "%s: class %d, not MPI_ERR_BUFFER", what, cls);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    test_rank = rank;
    const char *e = getenv("OXMPI_CHECK_BUFFERS");
    checking = e && !strcmp(e, "1");
    if (!getenv("BUFCHECK_FATAL")) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    enum { SMALL = 1000, LARGE = 100000 };
    int *a = calloc(LARGE, sizeof(int)), *b = calloc(LARGE, sizeof(int));
    MPI_Datatype vec;
    MPI_Type_vector(100, 2, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    /* BUFCHECK_FATAL=coll: the collectives' change is the first. */
    const char *fatal = getenv("BUFCHECK_FATAL");
    int coll_first = fatal && !strcmp(fatal, "coll");
    if (coll_first) {
    } else if (rank == 0) {
        static char bsend[1 << 16];
        MPI_Buffer_attach(bsend, sizeof bsend);
        MPI_Request q, qs[3];
        /* Unchanged: fine. */
        MPI_Isend(a, SMALL, MPI_INT, 1, 1, MPI_COMM_WORLD, &q);
        CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "unchanged eager send");
        /* Eager, changed: MPI_Wait. */
        MPI_Isend(a, SMALL, MPI_INT, 1, 2, MPI_COMM_WORLD, &q);
        a[5] = 42;
        expect(MPI_Wait(&q, MPI_STATUS_IGNORE), "eager send changed", "MPI_Isend");
        CHECK(q == MPI_REQUEST_NULL, "request not freed");
        /* Rendezvous, changed: MPI_Test until done. */
        MPI_Issend(a, LARGE, MPI_INT, 1, 3, MPI_COMM_WORLD, &q);
        a[LARGE - 1] = 7;
        int flag = 0, rc = MPI_SUCCESS;
        while (!flag) rc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        expect(rc, "synchronous rendezvous send changed", "MPI_Issend");
        /* A derived type: one changed send among three, in MPI_Waitall. */
        MPI_Isend(a, 1, vec, 1, 4, MPI_COMM_WORLD, &qs[0]);
        MPI_Isend(b, 1, vec, 1, 5, MPI_COMM_WORLD, &qs[1]);
        MPI_Isend(a + 2000, 10, MPI_INT, 1, 6, MPI_COMM_WORLD, &qs[2]);
        b[5] += 1; /* element 5 is in the vector (blocks 0-1, 5-6, ...) */
        b[3] += 1; /* a gap: not part of the message */
        rc = MPI_Waitall(3, qs, MPI_STATUSES_IGNORE);
        expect(rc, "vector send changed (Waitall)", "MPI_Isend");
        /* A gap alone changed: fine. */
        MPI_Isend(b, 1, vec, 1, 7, MPI_COMM_WORLD, &q);
        b[4] += 1;
        CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "only a gap of the vector changed");
        /* MPI_Waitany. */
        MPI_Ibsend(NULL, 0, MPI_INT, 1, 8, MPI_COMM_WORLD, &qs[0]);
        int idx = -1;
        CHECK(MPI_Waitany(1, qs, &idx, MPI_STATUS_IGNORE) == MPI_SUCCESS && idx == 0, "empty Ibsend");
        MPI_Isend(a, 10, MPI_INT, 1, 9, MPI_COMM_WORLD, &qs[0]);
        a[0] = -1;
        expect(MPI_Waitany(1, qs, &idx, MPI_STATUS_IGNORE), "send changed (Waitany)", "MPI_Isend");
        /* MPI_Ibsend's buffer (copied at the call) is checked alike. */
        MPI_Ibsend(a, 10, MPI_INT, 1, 11, MPI_COMM_WORLD, &q);
        a[2] = -1;
        expect(MPI_Wait(&q, MPI_STATUS_IGNORE), "buffered send changed", "MPI_Ibsend");
        /* A freed request is not followed. */
        MPI_Isend(a, 10, MPI_INT, 1, 10, MPI_COMM_WORLD, &q);
        MPI_Request_free(&q);
        a[1] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank == 1) {
        for (int tag = 1; tag <= 2; tag++) MPI_Recv(b, SMALL, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, LARGE, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 1, vec, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 1, vec, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 10, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 1, vec, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 0, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 10, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 10, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(b, 10, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Nonblocking collectives: unchanged, then changed after the start. */
    {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        for (int i = 0; i < 100; i++) a[i] = rank + i;
        MPI_Request q;
        MPI_Iallreduce(a, b, 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "unchanged iallreduce");
        CHECK(b[7] == size * 7 + size * (size - 1) / 2, "iallreduce gave %d", b[7]);
        MPI_Iallreduce(a, b, 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        a[50] += 1;
        expect(MPI_Wait(&q, MPI_STATUS_IGNORE), "iallreduce send buffer changed", "MPI_Iallreduce");
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Ibcast(a, 100, MPI_INT, 0, MPI_COMM_WORLD, &q);
        if (rank == 0) {
            a[99] = -5;
            expect(MPI_Wait(&q, MPI_STATUS_IGNORE), "ibcast root buffer changed", "MPI_Ibcast");
        } else {
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "ibcast receive buffer (written by the call)");
        }
        /* In place: the buffer is written by the call, not followed. */
        for (int i = 0; i < 100; i++) b[i] = 1;
        MPI_Iallreduce(MPI_IN_PLACE, b, 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && b[0] == size, "iallreduce in place gave %d", b[0]);
    }
    MPI_Type_free(&vec);
    free(a);
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("bufcheck ok\n");
    MPI_Finalize();
    return 0;
}
