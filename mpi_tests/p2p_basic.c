/* Blocking send/recv between every pair, at sizes around every protocol
 * switch (eager cell, multi-cell eager, rendezvous), with status fields,
 * wildcards, self messages, non-overtaking order and MPI_PROC_NULL. */
#include "util.h"

static const long sizes[] = {0, 1, 8, 63, 4032, 4033, 8192, 32768, 32769, 65536, 1 << 20, 3 * (1 << 20) + 5};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

int main(int argc, char **argv) {
    int rank, size, count;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    long maxn = sizes[NSIZES - 1];
    unsigned char *sb = malloc(maxn), *rb = malloc(maxn + 16);

    /* Every ordered pair (including self through Sendrecv), every size. */
    for (int peer = 0; peer < size; peer++) {
        for (unsigned s = 0; s < NSIZES; s++) {
            long n = sizes[s];
            int tag = (int)s + 3;
            fill(sb, n, rank, tag);
            memset(rb, 0xEE, maxn + 16);
            MPI_Sendrecv(sb, (int)n, MPI_BYTE, peer, tag, rb, (int)maxn, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == n, "count %d expected %ld", count, n);
            long bad = verify(rb, n, peer, tag);
            CHECK(bad < 0, "size %ld from %d: byte %ld wrong", n, peer, bad);
            CHECK(rb[n] == 0xEE, "wrote past the message end at size %ld", n);
        }
    }

    /* Typed counts: doubles, with Get_count / Get_elements. */
    if (size >= 2 && rank < 2) {
        double d[100];
        int other = 1 - rank;
        for (int i = 0; i < 100; i++) d[i] = rank * 1000 + i + 0.5;
        if (rank == 0) {
            MPI_Send(d, 100, MPI_DOUBLE, other, 1, MPI_COMM_WORLD);
            MPI_Recv(d, 100, MPI_DOUBLE, other, 2, MPI_COMM_WORLD, &st);
            for (int i = 0; i < 37; i++) CHECK(d[i] == 1000 + i + 0.5, "double %d = %f", i, d[i]);
            MPI_Get_count(&st, MPI_DOUBLE, &count);
            CHECK(count == 37, "count %d", count);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count == 74, "int count %d", count);
            MPI_Count ce;
            MPI_Get_elements_x(&st, MPI_DOUBLE, &ce);
            CHECK(ce == 37, "elements %ld", (long)ce);
        } else {
            double r[100];
            MPI_Recv(r, 100, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &st);
            for (int i = 0; i < 100; i++) CHECK(r[i] == i + 0.5, "double %d = %f", i, r[i]);
            MPI_Send(d, 37, MPI_DOUBLE, other, 2, MPI_COMM_WORLD);
        }
    }

    /* Non-overtaking: one sender, mixed sizes on one tag, received with wildcards. */
    if (size >= 2) {
        const int nmsg = 40;
        if (rank == 1) {
            for (int i = 0; i < nmsg; i++) {
                long n = (i % 4 == 3) ? 100000 + i : i * 17;
                fill(sb, n, i, 5);
                MPI_Send(sb, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            }
        } else if (rank == 0) {
            for (int i = 0; i < nmsg; i++) {
                long n = (i % 4 == 3) ? 100000 + i : i * 17;
                if (i % 2) MPI_Recv(rb, (int)maxn, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                else MPI_Recv(rb, (int)maxn, MPI_BYTE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK(count == n && st.MPI_SOURCE == 1 && st.MPI_TAG == 5, "message %d: count %d src %d", i, count, st.MPI_SOURCE);
                CHECK(verify(rb, n, i, 5) < 0, "message %d overtaken or corrupt", i);
            }
        }
    }

    /* ANY_SOURCE gathering at rank 0 from everyone, tags select. */
    if (rank == 0) {
        int seen[64] = {0};
        for (int i = 1; i < size; i++) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 42, MPI_COMM_WORLD, &st);
            CHECK(v == st.MPI_SOURCE * 3, "value %d from %d", v, st.MPI_SOURCE);
            seen[st.MPI_SOURCE]++;
        }
        for (int i = 1; i < size; i++) CHECK(seen[i] == 1, "rank %d seen %d times", i, seen[i]);
    } else {
        int v = rank * 3;
        MPI_Send(&v, 1, MPI_INT, 0, 42, MPI_COMM_WORLD);
    }

    /* Self: send to myself before receiving (buffered internally). */
    int a = 11, b = 0;
    MPI_Request rq;
    MPI_Isend(&a, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &rq);
    MPI_Recv(&b, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(b == 11 && st.MPI_SOURCE == rank, "self message %d", b);
    /* MPI_COMM_SELF */
    MPI_Sendrecv(&a, 1, MPI_INT, 0, 1, &b, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &st);
    CHECK(b == 11 && st.MPI_SOURCE == 0, "COMM_SELF message");

    /* PROC_NULL: completes at once with the empty status. */
    MPI_Send(&a, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    b = 77;
    MPI_Recv(&b, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(b == 77 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0, "PROC_NULL status");

    /* Sendrecv_replace around the ring. */
    if (size > 1) {
        int v[3] = {rank, rank * 2, rank * 3};
        MPI_Sendrecv_replace(v, 3, MPI_INT, (rank + 1) % size, 4, (rank + size - 1) % size, 4, MPI_COMM_WORLD, &st);
        int from = (rank + size - 1) % size;
        CHECK(v[0] == from && v[1] == from * 2 && v[2] == from * 3, "replace got %d", v[0]);
    }
    /* Single copies where the receive buffer sits 1-31 bytes past the send
     * buffer modulo a page (a slow offset for the kernel's copy on some
     * machines, taken through a bounce buffer there), in both directions and
     * at sizes that take one and several bounce pieces. */
    if (size > 1 && rank < 2) {
        const long lens[] = {70000, 600001};
        char *pa, *pb;
        if (posix_memalign((void **)&pa, 4096, 700000) || posix_memalign((void **)&pb, 4096, 700000)) return 1;
        for (int k = 0; k < 2; k++) {
            long n = lens[k];
            for (int dir = 0; dir < 2; dir++) {
                int sender = dir, off = 16 + 15 * k;
                if (rank == sender) {
                    for (long i = 0; i < n; i++) pa[i] = (char)(i * 13 + k + dir);
                    MPI_Send(pa, (int)n, MPI_BYTE, 1 - rank, 30, MPI_COMM_WORLD);
                } else {
                    memset(pb, 0x5A, 700000);
                    MPI_Recv(pb + off, (int)n, MPI_BYTE, 1 - rank, 30, MPI_COMM_WORLD, &st);
                    long bad = -1;
                    for (long i = 0; i < n && bad < 0; i++)
                        if (pb[off + i] != (char)(i * 13 + k + dir)) bad = i;
                    CHECK(bad < 0, "offset %d size %ld: byte %ld wrong", off, n, bad);
                    CHECK(pb[off - 1] == 0x5A && pb[off + n] == 0x5A, "offset copy wrote outside the message");
                }
            }
        }
        free(pa);
        free(pb);
    }
    free(sb);
    free(rb);
    MPI_Finalize();
    if (rank == 0) printf("p2p_basic ok\n");
    return 0;
}
