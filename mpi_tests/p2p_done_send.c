/* Small nonblocking sends that complete in the call that starts them get a
 * request handle all the same, and every request function treats it as a
 * completed send: Wait, Test, the Wait and Test families, Request_free,
 * Request_get_status, Cancel with Test_cancelled, Start (refused). The
 * messages arrive with their values and in order, also between large
 * messages that take the general path. Run with 2 or more ranks; ranks
 * other than 0 and 1 only take part in the final barrier. */
#include "util.h"

#define N 16

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    enum { BIG = 1 << 20 };
    static int big[BIG / 4];
    if (rank == 0) {
        int v[N], token;
        MPI_Request r[N];
        /* The ready send goes out once rank 1's receive is posted. */
        MPI_Recv(&token, 1, MPI_INT, 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++) {
            v[i] = 1000 + i;
            if (i == 5)
                /* A large one between the small ones: general path. */
                CHECK(MPI_Isend(big, BIG / 4, MPI_INT, 1, 7, MPI_COMM_WORLD, &r[i]) == MPI_SUCCESS, "isend big");
            else if (i == 6)
                CHECK(MPI_Irsend(&v[i], 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &r[i]) == MPI_SUCCESS, "irsend");
            else
                CHECK(MPI_Isend(&v[i], 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &r[i]) == MPI_SUCCESS, "isend %d", i);
            CHECK(r[i] != MPI_REQUEST_NULL, "send %d got MPI_REQUEST_NULL", i);
        }
        MPI_Status st;
        int flag = -1;
        /* Request_get_status leaves the handle as it is (a small send is
           complete at once; a rendezvous one once rank 1 has taken it). */
        MPI_Request keep = r[0];
        flag = 0;
        while (!flag)
            CHECK(MPI_Request_get_status(r[0], &flag, &st) == MPI_SUCCESS, "get_status");
        CHECK(r[0] == keep, "get_status changed the handle");
        /* Wait. */
        CHECK(MPI_Wait(&r[0], &st) == MPI_SUCCESS, "wait");
        CHECK(r[0] == MPI_REQUEST_NULL, "wait left the handle");
        /* Test. */
        /* Test (a small send is complete at once; a rendezvous one, with
           OXMPI_EAGER_LIMIT=0, once rank 1 has taken it). */
        flag = 0;
        for (int k = 0; !flag; k++) {
            CHECK(MPI_Test(&r[1], &flag, &st) == MPI_SUCCESS, "test");
            CHECK(flag == 1 || r[1] != MPI_REQUEST_NULL, "pending test cleared the handle");
        }
        CHECK(r[1] == MPI_REQUEST_NULL, "test left the handle");
        /* Cancel of a send no receive has taken: rank 1 takes message 2
           only after it has been told (tag 14) whether the cancel dropped
           it; a dropped one goes out again on tag 13. */
        CHECK(MPI_Cancel(&r[2]) == MPI_SUCCESS, "cancel");
        CHECK(MPI_Wait(&r[2], &st) == MPI_SUCCESS, "wait after cancel");
        CHECK(MPI_Test_cancelled(&st, &flag) == MPI_SUCCESS, "test_cancelled");
        MPI_Send(&flag, 1, MPI_INT, 1, 14, MPI_COMM_WORLD);
        if (flag)
            MPI_Isend(&v[2], 1, MPI_INT, 1, 13, MPI_COMM_WORLD, &r[2]);
        /* Start refuses it: it is not persistent. */
        int e = MPI_Start(&r[3]);
        int cls = -1;
        MPI_Error_class(e, &cls);
        CHECK(cls == MPI_ERR_REQUEST, "MPI_Start on a send request: class %d", cls);
        /* Request_free. */
        CHECK(MPI_Request_free(&r[3]) == MPI_SUCCESS && r[3] == MPI_REQUEST_NULL, "free");
        /* Waitany, Testany, Waitsome, Testsome, Testall, Waitall. */
        int idx = -1;
        CHECK(MPI_Waitany(2, &r[4], &idx, &st) == MPI_SUCCESS, "waitany");
        CHECK(idx == 0 || idx == 1, "waitany index %d", idx);
        CHECK(r[4 + idx] == MPI_REQUEST_NULL, "waitany left the handle");
        int out = 0, ids[N];
        CHECK(MPI_Waitsome(N - 7, &r[7], &out, ids, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitsome");
        CHECK(out >= 1, "waitsome outcount %d", out);
        for (int k = 0; k < out; k++) CHECK(r[7 + ids[k]] == MPI_REQUEST_NULL, "waitsome %d", ids[k]);
        CHECK(MPI_Testsome(N - 7, &r[7], &out, ids, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "testsome");
        flag = 0;
        CHECK(MPI_Testall(N - 7, &r[7], &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "testall");
        CHECK(MPI_Waitall(N, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
        for (int i = 0; i < N; i++) CHECK(r[i] == MPI_REQUEST_NULL, "request %d left", i);
        /* Testany and Waitall over a mix of null and completed sends. */
        MPI_Request m[3];
        int x = 5;
        MPI_Isend(&x, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, &m[0]);
        m[1] = MPI_REQUEST_NULL;
        MPI_Isend(&x, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, &m[2]);
        flag = 0;
        while (!flag) CHECK(MPI_Testany(3, m, &idx, &flag, &st) == MPI_SUCCESS, "testany");
        CHECK(idx == 0 || idx == 2, "testany index %d", idx);
        CHECK(m[idx] == MPI_REQUEST_NULL && m[1] == MPI_REQUEST_NULL, "testany handles");
        CHECK(MPI_Waitall(3, m, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall mix");
    } else if (rank == 1) {
        int ready = -1, token = 1;
        MPI_Request rr;
        MPI_Irecv(&ready, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &rr);
        MPI_Send(&token, 1, MPI_INT, 0, 10, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) {
            MPI_Status st;
            if (i == 6) {
                CHECK(MPI_Wait(&rr, &st) == MPI_SUCCESS, "wait ready");
                CHECK(ready == 1006, "ready message carried %d", ready);
                continue;
            }
            if (i == 5) {
                CHECK(MPI_Recv(big, BIG / 4, MPI_INT, 0, 7, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "recv big");
                continue;
            }
            int got = -1, tag = 7;
            if (i == 2) {
                int dropped = -1;
                MPI_Recv(&dropped, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (dropped) tag = 13;
            }
            CHECK(MPI_Recv(&got, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "recv %d", i);
            CHECK(got == 1000 + i, "message %d carried %d", i, got);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == tag, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
        }
        for (int k = 0; k < 2; k++) {
            int got = -1;
            MPI_Recv(&got, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got == 5, "mix message %d carried %d", k, got);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("ok\n");
    MPI_Finalize();
    return 0;
}
