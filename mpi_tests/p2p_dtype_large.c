/* Large messages of non-contiguous datatypes between pairs of ranks, in
 * every combination of strided and contiguous sender and receiver, through
 * every send mode, persistent requests and a short (truncated) receive.
 * Large strided messages move by one vectored copy where the transport
 * allows it; with OXMPI_CMA=0 they are packed; both must deliver the same. */
#include "util.h"

/* Three shapes: 32 KiB pieces (vectored copy from the sender's and into the
 * receiver's pieces), 512 B pieces at 1 MiB (vectored into the receiver's
 * pieces, sender packs), 512 B pieces at 4 MiB (both sides pack). */
static const int shapes[3][2] = {{64, 4096}, {2048, 64}, {8192, 64}};
static int N, BL;

static double val(int src, int it, long i) { return src * 1e7 + it * 1e5 + (double)(i % 99991); }

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    if (size % 2) {
        MPI_Finalize();
        if (rank == 0) printf("p2p_dtype_large needs an even number of ranks; skipped\n");
        return 0;
    }
    int peer = rank ^ 1;
    for (int sh = 0; sh < 3; sh++) {
    N = shapes[sh][0];
    BL = shapes[sh][1];
    long total = (long)N * BL;
    /* strided: blocks of BL doubles every 2*BL; other: every 3*BL. */
    MPI_Datatype v2, v3;
    MPI_Type_vector(N, BL, 2 * BL, MPI_DOUBLE, &v2);
    MPI_Type_vector(N, BL, 3 * BL, MPI_DOUBLE, &v3);
    MPI_Type_commit(&v2);
    MPI_Type_commit(&v3);
    double *sbuf = malloc(sizeof(double) * 3 * total);
    double *rbuf = malloc(sizeof(double) * 3 * total);
    static char bsendbuf[(4 << 20) + 4096];
    MPI_Buffer_attach(bsendbuf, sizeof bsendbuf);

    for (int it = 0; it < 12; it++) {
        int sshape = it % 3, rshape = (it / 3) % 3; /* 0 contiguous, 1 v2, 2 v3 */
        int mode = it % 4;                         /* send, ssend, bsend, isend */
        MPI_Datatype st = sshape == 0 ? MPI_DOUBLE : sshape == 1 ? v2 : v3;
        MPI_Datatype rt = rshape == 0 ? MPI_DOUBLE : rshape == 1 ? v2 : v3;
        int scount = sshape == 0 ? (int)total : 1, rcount = rshape == 0 ? (int)total : 1;
        long sstride = sshape == 0 ? BL : sshape * BL + BL, rstride = rshape == 0 ? BL : rshape * BL + BL;
        for (long i = 0; i < 3 * total; i++) { sbuf[i] = -1; rbuf[i] = -2; }
        for (long b = 0; b < N; b++)
            for (int k = 0; k < BL; k++) sbuf[b * sstride + k] = val(rank, it, b * BL + k);
        MPI_Request rq;
        MPI_Irecv(rbuf, rcount, rt, peer, it, MPI_COMM_WORLD, &rq);
        if (mode == 0) MPI_Send(sbuf, scount, st, peer, it, MPI_COMM_WORLD);
        else if (mode == 1) MPI_Ssend(sbuf, scount, st, peer, it, MPI_COMM_WORLD);
        else if (mode == 2) MPI_Bsend(sbuf, scount, st, peer, it, MPI_COMM_WORLD);
        else {
            MPI_Request sq;
            MPI_Isend(sbuf, scount, st, peer, it, MPI_COMM_WORLD, &sq);
            MPI_Wait(&sq, MPI_STATUS_IGNORE);
        }
        MPI_Status s;
        MPI_Wait(&rq, &s);
        int cnt;
        MPI_Get_count(&s, MPI_DOUBLE, &cnt);
        CHECK(cnt == total, "shape %d iteration %d: count %d", sh, it, cnt);
        for (long b = 0; b < N; b++) {
            for (int k = 0; k < BL; k++) {
                double g = rbuf[b * rstride + k];
                CHECK(g == val(peer, it, b * BL + k), "shape %d iteration %d (send %d recv %d mode %d): block %ld elem %d = %g",
                      sh, it, sshape, rshape, mode, b, k, g);
            }
            for (long k = BL; k < rstride && b * rstride + k < 3 * total; k++)
                CHECK(rbuf[b * rstride + k] == -2, "iteration %d: gap written at block %ld", it, b);
        }
    }

    /* Persistent strided send and receive, started three times. */
    MPI_Request pr[2];
    MPI_Recv_init(rbuf, 1, v3, peer, 100, MPI_COMM_WORLD, &pr[0]);
    MPI_Send_init(sbuf, 1, v2, peer, 100, MPI_COMM_WORLD, &pr[1]);
    for (int rep = 0; rep < 3; rep++) {
        for (long b = 0; b < N; b++)
            for (int k = 0; k < BL; k++) sbuf[b * 2 * BL + k] = val(rank, 50 + rep, b * BL + k);
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        for (long b = 0; b < N; b += 97)
            for (int k = 0; k < BL; k++)
                CHECK(rbuf[b * 3 * BL + k] == val(peer, 50 + rep, b * BL + k), "persistent %d block %ld", rep, b);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);

    /* A receive shorter than the message: MPI_ERR_TRUNCATE, the prefix kept. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype half;
    MPI_Type_vector(N / 2, BL, 3 * BL, MPI_DOUBLE, &half);
    MPI_Type_commit(&half);
    for (long i = 0; i < 3 * total; i++) rbuf[i] = -2;
    for (long b = 0; b < N; b++)
        for (int k = 0; k < BL; k++) sbuf[b * 2 * BL + k] = val(rank, 77, b * BL + k);
    MPI_Request sq;
    MPI_Isend(sbuf, 1, v2, peer, 7, MPI_COMM_WORLD, &sq);
    MPI_Status s;
    int rc = MPI_Recv(rbuf, 1, half, peer, 7, MPI_COMM_WORLD, &s);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive gave class %d", cls);
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    for (long b = 0; b < N / 2; b += 31)
        CHECK(rbuf[b * 3 * BL] == val(peer, 77, b * BL), "truncated prefix block %ld", b);
    CHECK(rbuf[(N / 2) * 3 * BL] == -2, "truncated receive wrote past its buffer");

    MPI_Type_free(&half);
    void *bb;
    int bs;
    MPI_Buffer_detach(&bb, &bs);
    MPI_Type_free(&v2);
    MPI_Type_free(&v3);
    free(sbuf);
    free(rbuf);
    }
    MPI_Finalize();
    if (rank == 0) printf("p2p_dtype_large ok\n");
    return 0;
}
