/* Nonblocking and persistent point-to-point with every Wait/Test form,
 * synchronous-mode semantics, Request_get_status and Request_free. */
#include "util.h"
#include <unistd.h>

#define N 16

int main(int argc, char **argv) {
    int rank, size, flag, idx, outc, indices[2 * N];
    MPI_Status st, sts[2 * N];
    MPI_Request rq[2 * N];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static int sbuf[N][20000], rbuf[N][20000];

    /* Waitall over a ring exchange, messages of growing size, posted out of order. */
    for (int i = 0; i < N; i++) {
        int n = 1 + i * 1200;
        for (int k = 0; k < n; k++) sbuf[i][k] = rank * 100000 + i * 1000 + k;
        MPI_Irecv(rbuf[N - 1 - i], 20000, MPI_INT, left, i, MPI_COMM_WORLD, &rq[i]);
    }
    for (int i = 0; i < N; i++) MPI_Isend(sbuf[i], 1 + i * 1200, MPI_INT, right, i, MPI_COMM_WORLD, &rq[N + i]);
    MPI_Waitall(2 * N, rq, sts);
    for (int i = 0; i < N; i++) {
        int n = 1 + i * 1200, c;
        CHECK(rq[i] == MPI_REQUEST_NULL, "request not nulled");
        CHECK(sts[i].MPI_SOURCE == left && sts[i].MPI_TAG == i, "status %d: src %d tag %d", i, sts[i].MPI_SOURCE, sts[i].MPI_TAG);
        MPI_Get_count(&sts[i], MPI_INT, &c);
        CHECK(c == n, "count %d != %d", c, n);
        for (int k = 0; k < n; k++) CHECK(rbuf[N - 1 - i][k] == left * 100000 + i * 1000 + k, "data tag %d elem %d", i, k);
    }

    /* Waitany / Testany / Waitsome / Testsome: every request reported exactly once. */
    int got[N];
    for (int round = 0; round < 4; round++) {
        memset(got, 0, sizeof got);
        for (int i = 0; i < N; i++) MPI_Irecv(&rbuf[i][0], 1, MPI_INT, left, 100 + i, MPI_COMM_WORLD, &rq[i]);
        for (int i = N - 1; i >= 0; i--) {
            sbuf[i][0] = rank * 1000 + i;
            MPI_Send(sbuf[i], 1, MPI_INT, right, 100 + i, MPI_COMM_WORLD);
        }
        int done = 0;
        while (done < N) {
            if (round == 0) {
                MPI_Waitany(N, rq, &idx, &st);
                CHECK(idx >= 0 && idx < N, "waitany index %d", idx);
                got[idx]++, done++;
                CHECK(st.MPI_TAG == 100 + idx && rbuf[idx][0] == left * 1000 + idx, "waitany data");
            } else if (round == 1) {
                MPI_Testany(N, rq, &idx, &flag, &st);
                if (flag) {
                    CHECK(idx >= 0 && idx < N, "testany index %d", idx);
                    got[idx]++, done++;
                }
            } else {
                if (round == 2) MPI_Waitsome(N, rq, &outc, indices, sts);
                else MPI_Testsome(N, rq, &outc, indices, sts);
                CHECK(outc != MPI_UNDEFINED, "outcount undefined while requests are active");
                for (int k = 0; k < outc; k++) {
                    got[indices[k]]++, done++;
                    CHECK(sts[k].MPI_TAG == 100 + indices[k], "some: tag %d for index %d", sts[k].MPI_TAG, indices[k]);
                    CHECK(rbuf[indices[k]][0] == left * 1000 + indices[k], "some: data");
                }
            }
        }
        for (int i = 0; i < N; i++) CHECK(got[i] == 1, "round %d: request %d reported %d times", round, i, got[i]);
        MPI_Waitany(N, rq, &idx, &st);
        CHECK(idx == MPI_UNDEFINED, "waitany on all-null gives %d", idx);
        MPI_Waitsome(N, rq, &outc, indices, sts);
        CHECK(outc == MPI_UNDEFINED, "waitsome on all-null gives %d", outc);
        MPI_Testall(N, rq, &flag, MPI_STATUSES_IGNORE);
        CHECK(flag == 1, "testall on all-null");
    }

    /* Issend does not complete before the receive is posted; Ssend completes after. */
    if (size >= 2 && rank < 2) {
        int v = 5, w = 0, go = 1;
        if (rank == 0) {
            MPI_Issend(&v, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &rq[0]);
            for (int i = 0; i < 50; i++) {
                MPI_Test(&rq[0], &flag, &st);
                CHECK(!flag, "Issend completed before the receive was posted");
                usleep(200);
            }
            MPI_Send(&go, 1, MPI_INT, 1, 51, MPI_COMM_WORLD);
            MPI_Wait(&rq[0], &st);
            /* A large synchronous send too. */
            static int big[50000];
            for (int i = 0; i < 50000; i++) big[i] = i;
            MPI_Ssend(big, 50000, MPI_INT, 1, 52, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&go, 1, MPI_INT, 0, 51, MPI_COMM_WORLD, &st);
            MPI_Recv(&w, 1, MPI_INT, 0, 50, MPI_COMM_WORLD, &st);
            CHECK(w == 5, "issend value %d", w);
            static int big[50000];
            MPI_Recv(big, 50000, MPI_INT, 0, 52, MPI_COMM_WORLD, &st);
            for (int i = 0; i < 50000; i++) CHECK(big[i] == i, "ssend data %d", i);
        }
    }

    /* Persistent requests reused 20 times, started with Start and Startall. */
    {
        int sv[1000], rv[1000];
        MPI_Send_init(sv, 1000, MPI_INT, right, 60, MPI_COMM_WORLD, &rq[0]);
        MPI_Recv_init(rv, 1000, MPI_INT, left, 60, MPI_COMM_WORLD, &rq[1]);
        for (int it = 0; it < 20; it++) {
            for (int k = 0; k < 1000; k++) sv[k] = rank + it * 7 + k;
            if (it % 2) MPI_Startall(2, rq);
            else { MPI_Start(&rq[1]); MPI_Start(&rq[0]); }
            MPI_Waitall(2, rq, sts);
            CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "persistent request freed by wait");
            for (int k = 0; k < 1000; k++) CHECK(rv[k] == left + it * 7 + k, "persistent iter %d elem %d", it, k);
        }
        /* Wait on an inactive persistent request returns at once with an empty status. */
        MPI_Wait(&rq[0], &st);
        CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "inactive wait status");
        MPI_Request_free(&rq[0]);
        MPI_Request_free(&rq[1]);
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "free nulls the handle");
    }

    /* Request_get_status does not free; Request_free of an active send still delivers. */
    {
        int v = rank + 1, w = 0;
        MPI_Irecv(&w, 1, MPI_INT, left, 70, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&v, 1, MPI_INT, right, 70, MPI_COMM_WORLD, &rq[1]);
        MPI_Request_free(&rq[1]);
        do { MPI_Request_get_status(rq[0], &flag, &st); } while (!flag);
        CHECK(rq[0] != MPI_REQUEST_NULL && st.MPI_SOURCE == left, "get_status");
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(rq[0] == MPI_REQUEST_NULL && w == left + 1, "value after free'd send: %d", w);
    }

    /* Rsend after a barrier-like handshake. */
    if (size >= 2) {
        int v = 0, w = 9;
        MPI_Irecv(&v, 1, MPI_INT, left, 80, MPI_COMM_WORLD, &rq[0]);
        MPI_Sendrecv(&w, 0, MPI_INT, left, 81, &w, 0, MPI_INT, right, 81, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Rsend(&w, 1, MPI_INT, right, 80, MPI_COMM_WORLD);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(v == 9, "rsend value %d", v);
    }
    MPI_Finalize();
    return 0;
}
