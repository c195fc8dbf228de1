/* The eager fast paths of MPI_Send and MPI_Recv against the general path:
 * sizes around the inline limit (24 B) and the one-cell limit, wildcard
 * tags, a receive for a later tag while an earlier one is ahead, a receive
 * posted by MPI_Irecv before a blocking one, truncation, synchronous sends,
 * and (3+ ranks) a rank blocked in MPI_Recv from one peer that must keep
 * draining another peer's flood so that the job can finish. */
#include "util.h"

/* The one-cell limit: 8192 by default up to 8 local ranks, 4096 above or
 * with OXMPI_CELL_BYTES=4096 (testlist). */
static const int sizes[] = {0, 1, 7, 8, 23, 24, 25, 63, 64, 65, 1000, 4095, 4096, 4097,
                            8191, 8192, 8193, 20000};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    if (size < 2) {
        MPI_Finalize();
        return 0;
    }
    unsigned char *b = malloc(65536), *r = malloc(65536);
    MPI_Status st;
    int n;

    /* 1. Every size, both directions, data and status exact. */
    for (int k = 0; k < NSIZES; k++) {
        int len = sizes[k];
        if (rank == 0) {
            fill(b, len, 0, k);
            MPI_Send(b, len, MPI_BYTE, 1, k, MPI_COMM_WORLD);
            memset(r, 0xee, len + 8);
            MPI_Recv(r, 65536, MPI_BYTE, 1, k, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK(n == len && st.MPI_SOURCE == 1 && st.MPI_TAG == k, "size %d: count %d source %d tag %d", len, n, st.MPI_SOURCE, st.MPI_TAG);
            CHECK(verify(r, len, 1, k) < 0, "size %d: byte %ld wrong", len, verify(r, len, 1, k));
            CHECK(r[len] == 0xee, "size %d: wrote past the message", len);
        } else if (rank == 1) {
            memset(r, 0xee, len + 8);
            MPI_Recv(r, len, MPI_BYTE, 0, k, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK(n == len && st.MPI_SOURCE == 0 && st.MPI_TAG == k, "size %d: count %d", len, n);
            CHECK(verify(r, len, 0, k) < 0, "size %d: byte %ld wrong", len, verify(r, len, 0, k));
            CHECK(r[len] == 0xee, "size %d: wrote past the message", len);
            fill(b, len, 1, k);
            MPI_Send(b, len, MPI_BYTE, 0, k, MPI_COMM_WORLD);
        }
    }

    /* 2. Wildcard tag takes messages in order; a receive for tag 12 while
     *    tag 11 is ahead; an Irecv posted before a blocking Recv wins. */
    if (rank == 0) {
        for (int t = 0; t < 3; t++) {
            int v = 100 + t;
            MPI_Send(&v, 1, MPI_INT, 1, 5 + t, MPI_COMM_WORLD);
        }
        int v = 11;
        MPI_Send(&v, 1, MPI_INT, 1, 11, MPI_COMM_WORLD);
        v = 12;
        MPI_Send(&v, 1, MPI_INT, 1, 12, MPI_COMM_WORLD);
        /* Sent only once rank 1 has posted its Irecv and is about to block. */
        MPI_Recv(&v, 1, MPI_INT, 1, 19, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v = 21;
        MPI_Send(&v, 1, MPI_INT, 1, 20, MPI_COMM_WORLD);
        v = 22;
        MPI_Send(&v, 1, MPI_INT, 1, 20, MPI_COMM_WORLD);
    } else if (rank == 1) {
        for (int t = 0; t < 3; t++) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(v == 100 + t && st.MPI_TAG == 5 + t, "any-tag receive %d got %d tag %d", t, v, st.MPI_TAG);
        }
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &st);
        CHECK(v == 12 && st.MPI_TAG == 12, "tag 12 got %d", v);
        MPI_Recv(&v, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, &st);
        CHECK(v == 11 && st.MPI_TAG == 11, "tag 11 got %d", v);
        int first = -1;
        MPI_Request rq;
        MPI_Irecv(&first, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &rq);
        MPI_Send(&v, 1, MPI_INT, 0, 19, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &st);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(first == 21 && v == 22, "posted Irecv got %d, later Recv got %d (want 21, 22)", first, v);
    }

    /* 3. Truncation is an error of class MPI_ERR_TRUNCATE; the next message
     *    still arrives intact. A synchronous send to a blocking receive. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        fill(b, 16, 0, 30);
        MPI_Send(b, 16, MPI_BYTE, 1, 30, MPI_COMM_WORLD);
        fill(b, 8, 0, 31);
        MPI_Send(b, 8, MPI_BYTE, 1, 31, MPI_COMM_WORLD);
        fill(b, 40, 0, 32);
        MPI_Ssend(b, 40, MPI_BYTE, 1, 32, MPI_COMM_WORLD);
    } else if (rank == 1) {
        int rc = MPI_Recv(r, 8, MPI_BYTE, 0, 30, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "16 B into 8 B: class %d", cls);
        rc = MPI_Recv(r, 8, MPI_BYTE, 0, 31, MPI_COMM_WORLD, &st);
        CHECK(rc == MPI_SUCCESS && verify(r, 8, 0, 31) < 0, "message after a truncation: rc %d", rc);
        rc = MPI_Recv(r, 40, MPI_BYTE, 0, 32, MPI_COMM_WORLD, &st);
        CHECK(rc == MPI_SUCCESS && verify(r, 40, 0, 32) < 0, "synchronous message: rc %d", rc);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* 4. Rank 1 waits in MPI_Recv for rank 0, which first waits for rank 2;
     *    rank 2 first sends rank 1 more small messages than its ring holds,
     *    so rank 1 must drain them while blocked on rank 0. */
    if (size >= 3) {
        const int flood = 300;
        if (rank == 2) {
            for (int i = 0; i < flood; i++) MPI_Send(&i, 1, MPI_INT, 1, 40, MPI_COMM_WORLD);
            int go = 1;
            MPI_Send(&go, 1, MPI_INT, 0, 41, MPI_COMM_WORLD);
        } else if (rank == 0) {
            int go = 0;
            MPI_Recv(&go, 1, MPI_INT, 2, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&go, 1, MPI_INT, 1, 42, MPI_COMM_WORLD);
        } else if (rank == 1) {
            int go = 0;
            MPI_Recv(&go, 1, MPI_INT, 0, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(go == 1, "go %d", go);
            for (int i = 0; i < flood; i++) {
                int v = -1;
                MPI_Recv(&v, 1, MPI_INT, 2, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(v == i, "flood message %d came as %d", i, v);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(b);
    free(r);
    if (rank == 0) printf("ok\n");
    MPI_Finalize();
    return 0;
}
