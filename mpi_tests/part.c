/* Partitioned communication (MPI-4): MPI_Psend_init / MPI_Precv_init with
 * different partition counts on the two sides, MPI_Pready (reverse order),
 * MPI_Pready_range, MPI_Pready_list, MPI_Parrived polled per partition
 * with each arrived partition's data checked at once, several rounds of
 * one persistent pair, partitions that go as they become ready (the
 * receiver sees the first before the sender readies the rest), threads
 * calling MPI_Pready concurrently, a non-contiguous type, and errors. */
#include "util.h"
#include <pthread.h>
#include <stdlib.h>

#define SP 8   /* sender partitions */
#define RP 4   /* receiver partitions */
#define N 1000 /* ints per sender partition */

struct th {
    MPI_Request r;
    int first;
};
static void *ready_thread(void *arg) {
    struct th *t = arg;
    for (int p = t->first; p < SP; p += 4) MPI_Pready(p, t->r);
    return NULL;
}

static int value(int round, int i) { return round * 1000003 + i * 7; }

int main(int argc, char **argv) {
    int rank, size, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = rank ^ 1, sender = rank % 2 == 0;
    if (peer >= size) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    int *buf = malloc(sizeof(int) * SP * N);
    MPI_Request r;
    int rc;
    if (sender)
        rc = MPI_Psend_init(buf, SP, N, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    else
        rc = MPI_Precv_init(buf, RP, SP * N / RP, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    CHECK(rc == MPI_SUCCESS, "init rc %d", rc);

    /* Pready before MPI_Start is an error. */
    if (sender) {
        rc = MPI_Pready(0, r);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_REQUEST, "pready on an inactive request: class %d", cls);
    }

    for (int round = 0; round < 4; round++) {
        if (sender)
            for (int i = 0; i < SP * N; i++) buf[i] = value(round, i);
        else
            for (int i = 0; i < SP * N; i++) buf[i] = -1;
        MPI_Start(&r);
        if (sender) {
            if (round == 0) {
                /* Partitions 0 and 1 first (the receiver's partition 0);
                 * the receiver answers once it has them. */
                MPI_Pready(1, r);
                MPI_Pready(0, r);
                int go;
                MPI_Recv(&go, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (int p = SP - 1; p >= 2; p--) MPI_Pready(p, r);
            } else if (round == 1) {
                MPI_Pready_range(4, SP - 1, r);
                int list[4] = {3, 0, 2, 1};
                MPI_Pready_list(4, list, r);
            } else if (round == 2) {
                pthread_t t[4];
                struct th a[4];
                for (int k = 0; k < 4; k++) {
                    a[k].r = r;
                    a[k].first = k;
                    pthread_create(&t[k], NULL, ready_thread, &a[k]);
                }
                for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
            } else {
                for (int p = SP - 1; p >= 0; p--) MPI_Pready(p, r);
                /* Marking one twice is an error. */
                rc = MPI_Pready(0, r);
                CHECK(rc != MPI_SUCCESS, "pready twice accepted");
            }
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            int seen[RP] = {0}, nseen = 0, told = 0;
            while (nseen < RP) {
                for (int p = 0; p < RP; p++) {
                    if (seen[p]) continue;
                    int flag = 0;
                    rc = MPI_Parrived(r, p, &flag);
                    CHECK(rc == MPI_SUCCESS, "parrived rc %d", rc);
                    if (!flag) continue;
                    seen[p] = 1;
                    nseen++;
                    int per = SP * N / RP, bad = -1;
                    for (int i = p * per; i < (p + 1) * per && bad < 0; i++)
                        if (buf[i] != value(round, i)) bad = i;
                    CHECK(bad < 0, "round %d partition %d: buf[%d]=%d, expected %d", round, p, bad,
                          bad < 0 ? 0 : buf[bad], bad < 0 ? 0 : value(round, bad));
                    if (round == 0 && p == 0 && !told) {
                        int go = 1;
                        MPI_Send(&go, 1, MPI_INT, peer, 9, MPI_COMM_WORLD);
                        told = 1;
                    }
                }
                if (round == 0 && !told) {
                    /* Only the first receive partition can arrive first:
                     * the sender holds the rest back until told. */
                    for (int p = 1; p < RP; p++) CHECK(!seen[p], "partition %d arrived before it was ready", p);
                }
            }
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            int flag = 0;
            MPI_Parrived(r, RP - 1, &flag);
            CHECK(flag, "parrived after completion");
        }
    }
    MPI_Request_free(&r);

    /* A non-contiguous type: every other int of a 2*64-int buffer, in 4
     * partitions of 16 vectors' worth each (sender) and 2 (receiver). */
    MPI_Datatype two;
    MPI_Type_vector(1, 1, 2, MPI_INT, &two);
    MPI_Datatype strided;
    MPI_Type_create_resized(two, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    int sb[128];
    for (int i = 0; i < 128; i++) sb[i] = sender ? i : -1;
    if (sender)
        MPI_Psend_init(sb, 4, 16, strided, peer, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    else
        MPI_Precv_init(sb, 2, 32, strided, peer, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    if (sender) MPI_Pready_range(0, 3, r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (!sender)
        for (int i = 0; i < 128; i++)
            CHECK(sb[i] == (i % 2 == 0 ? i : -1), "strided: sb[%d]=%d", i, sb[i]);
    MPI_Request_free(&r);
    MPI_Type_free(&strided);
    MPI_Type_free(&two);

    /* Errors. */
    int cls = -1;
    rc = MPI_Precv_init(buf, 2, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "any-source partitioned receive: class %d", cls);
    if (sender) {
        MPI_Psend_init(buf, 2, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        MPI_Start(&r);
        rc = MPI_Pready(2, r);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG, "partition out of range: class %d", cls);
        MPI_Pready_range(0, 1, r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
    } else {
        int two_ints[2];
        MPI_Precv_init(two_ints, 1, 2, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
    }
    /* Tags equal modulo 2^28: a second operation of one side with the
     * same peer is refused while the first is initialised, accepted once
     * it is freed; a sender and a receiver whose tags differ only above
     * 2^28 get MPI_ERR_TAG at the receiver instead of the data. */
    int hi = 5 + (1 << 28);
    MPI_Request r2;
    if (sender) {
        MPI_Psend_init(buf, 1, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        rc = MPI_Psend_init(buf, 1, 1, MPI_INT, peer, hi, MPI_COMM_WORLD, MPI_INFO_NULL, &r2);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "two partitioned sends with tags equal modulo 2^28: class %d", cls);
        MPI_Request_free(&r);
        CHECK(MPI_Psend_init(buf, 1, 1, MPI_INT, peer, hi, MPI_COMM_WORLD, MPI_INFO_NULL, &r2) == MPI_SUCCESS,
              "a partitioned send with the other tag once the first is freed");
        buf[0] = 4242;
        MPI_Start(&r2);
        MPI_Pready(0, r2);
        MPI_Wait(&r2, MPI_STATUS_IGNORE);
        MPI_Request_free(&r2);
    } else {
        MPI_Precv_init(buf, 1, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        rc = MPI_Precv_init(buf, 1, 1, MPI_INT, peer, hi, MPI_COMM_WORLD, MPI_INFO_NULL, &r2);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "two partitioned receives with tags equal modulo 2^28: class %d", cls);
        buf[0] = -1;
        MPI_Start(&r);
        MPI_Status st;
        rc = MPI_Wait(&r, &st);
        MPI_Error_class(rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "a partitioned receive of tag 5 from a send of tag 5 + 2^28: class %d", cls);
        CHECK(buf[0] == -1, "the other tag's data was delivered: %d", buf[0]);
        MPI_Request_free(&r);
    }
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("part: OK\n");
    MPI_Finalize();
    return 0;
}
