/* The MPI-4 large-count point-to-point forms and queries (MPI_Xxx_c):
 * every send mode blocking, nonblocking and persistent, receives of each
 * kind, sendrecv(_replace), matched receives; values checked exactly, with
 * MPI_Get_count_c / MPI_Get_elements_c on the statuses. Type_size_c and
 * the extent queries against known layouts. Errors: a count above 2^51
 * (MPI_ERR_COUNT) and a negative one. Ranks pair up (0-1, 2-3, ...); an odd
 * last rank talks to itself. */
#include "util.h"

static int me, np;
static int val(int who, int k, int i) { return who * 100000 + k * 1000 + i; }

static void expect_count(MPI_Status *st, MPI_Count want, const char *what) {
    MPI_Count c = -1, e = -1;
    MPI_Get_count_c(st, MPI_INT, &c);
    MPI_Get_elements_c(st, MPI_INT, &e);
    CHECK(c == want && e == want, "%s: Get_count_c %ld, Get_elements_c %ld, want %ld", what, (long)c, (long)e,
          (long)want);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    test_rank = me;
    int peer = (me % 2 == 0) ? (me + 1 < np ? me + 1 : me) : me - 1;
    int s[64], r[64], n = 7;
    MPI_Status st;
    static char bbuf[1 << 16];
    MPI_Buffer_attach(bbuf, sizeof bbuf);
    /* the 4 blocking modes, then the 4 nonblocking, then the 4 persistent
     * (twice over); the receiver alternates Irecv_c, Recv_init_c and
     * a longer Irecv_c */
    for (int k = 0; k < 12 + 4; k++) {
        int mode = k < 4 ? k : k < 8 ? k - 4 : (k - 8) % 4;
        for (int i = 0; i < n; i++) s[i] = val(me, k, i);
        for (int i = 0; i < n + 5; i++) r[i] = -1;
        MPI_Request sq = MPI_REQUEST_NULL, rq = MPI_REQUEST_NULL;
        /* post the receive first: Rsend needs it, and a self pair needs it */
        if (k % 3 == 0)
            MPI_Irecv_c(r, n, MPI_INT, peer, k, MPI_COMM_WORLD, &rq);
        else if (k % 3 == 1)
            MPI_Recv_init_c(r, n, MPI_INT, peer, k, MPI_COMM_WORLD, &rq), MPI_Start(&rq);
        else
            MPI_Irecv_c(r, n + 5, MPI_INT, peer, k, MPI_COMM_WORLD, &rq); /* longer than the message */
        MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before any Rsend */
        if (k < 4) {
            if (peer == me) { /* blocking to self would wait on itself only for ssend; use the nonblocking */
                MPI_Request q;
                if (mode == 0) MPI_Isend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &q);
                else if (mode == 1) MPI_Issend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &q);
                else if (mode == 2) MPI_Irsend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &q);
                else MPI_Ibsend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &q);
                sq = q;
            } else if (mode == 0) MPI_Send_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD);
            else if (mode == 1) MPI_Ssend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD);
            else if (mode == 2) MPI_Rsend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD);
            else MPI_Bsend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD);
        } else if (k < 8) {
            if (mode == 0) MPI_Isend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            else if (mode == 1) MPI_Issend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            else if (mode == 2) MPI_Irsend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            else MPI_Ibsend_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
        } else {
            if (mode == 0) MPI_Send_init_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            else if (mode == 1) MPI_Ssend_init_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            else if (mode == 2) MPI_Rsend_init_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            else MPI_Bsend_init_c(s, n, MPI_INT, peer, k, MPI_COMM_WORLD, &sq);
            MPI_Start(&sq);
        }
        MPI_Wait(&rq, &st);
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        if (k >= 8) MPI_Request_free(&sq);
        if (k % 3 == 1) MPI_Request_free(&rq);
        for (int i = 0; i < n; i++) CHECK(r[i] == val(peer, k, i), "message %d [%d] = %d", k, i, r[i]);
        CHECK(r[n] == -1, "message %d wrote past its %d ints", k, n);
        expect_count(&st, n, "send/recv");
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* blocking Recv_c (the peer sends with Isend_c) */
    {
        MPI_Request q;
        for (int i = 0; i < n; i++) s[i] = val(me, 20, i), r[i] = -1;
        MPI_Isend_c(s, n, MPI_INT, peer, 20, MPI_COMM_WORLD, &q);
        MPI_Recv_c(r, 64, MPI_INT, peer, 20, MPI_COMM_WORLD, &st);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) CHECK(r[i] == val(peer, 20, i), "Recv_c [%d] = %d", i, r[i]);
        expect_count(&st, n, "Recv_c");
    }
    /* sendrecv and sendrecv_replace */
    for (int i = 0; i < n; i++) s[i] = val(me, 21, i), r[i] = -1;
    MPI_Sendrecv_c(s, n, MPI_INT, peer, 21, r, n, MPI_INT, peer, 21, MPI_COMM_WORLD, &st);
    for (int i = 0; i < n; i++) CHECK(r[i] == val(peer, 21, i), "Sendrecv_c [%d] = %d", i, r[i]);
    expect_count(&st, n, "Sendrecv_c");
    for (int i = 0; i < n; i++) s[i] = val(me, 22, i);
    MPI_Sendrecv_replace_c(s, n, MPI_INT, peer, 22, peer, 22, MPI_COMM_WORLD, &st);
    for (int i = 0; i < n; i++) CHECK(s[i] == val(peer, 22, i), "Sendrecv_replace_c [%d] = %d", i, s[i]);
    /* matched receives */
    for (int form = 0; form < 2; form++) {
        MPI_Request q;
        MPI_Message m;
        for (int i = 0; i < n; i++) s[i] = val(me, 23 + form, i), r[i] = -1;
        MPI_Isend_c(s, n, MPI_INT, peer, 23 + form, MPI_COMM_WORLD, &q);
        MPI_Mprobe(peer, 23 + form, MPI_COMM_WORLD, &m, &st);
        expect_count(&st, n, "Mprobe");
        if (form == 0) {
            MPI_Mrecv_c(r, n, MPI_INT, &m, &st);
        } else {
            MPI_Request rq;
            MPI_Imrecv_c(r, n, MPI_INT, &m, &rq);
            MPI_Wait(&rq, &st);
        }
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) CHECK(r[i] == val(peer, 23 + form, i), "%s [%d] = %d", form ? "Imrecv_c" : "Mrecv_c", i, r[i]);
    }
    /* an empty message and a count that is not whole */
    {
        MPI_Request q;
        MPI_Isend_c(s, 0, MPI_INT, peer, 25, MPI_COMM_WORLD, &q);
        MPI_Recv_c(r, n, MPI_INT, peer, 25, MPI_COMM_WORLD, &st);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        expect_count(&st, 0, "empty message");
        MPI_Isend_c(s, 6, MPI_BYTE, peer, 26, MPI_COMM_WORLD, &q);
        MPI_Recv_c(r, 64, MPI_BYTE, peer, 26, MPI_COMM_WORLD, &st);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Count c;
        MPI_Get_count_c(&st, MPI_INT, &c);
        CHECK(c == MPI_UNDEFINED, "6 bytes as ints: Get_count_c %ld, want MPI_UNDEFINED", (long)c);
    }
    /* datatype queries */
    {
        MPI_Datatype v;
        MPI_Type_vector(3, 2, 5, MPI_INT, &v); /* 6 ints over 12 ints' span */
        MPI_Count size, lb, ext, tlb, text;
        MPI_Type_size_c(v, &size);
        MPI_Type_get_extent_c(v, &lb, &ext);
        MPI_Type_get_true_extent_c(v, &tlb, &text);
        CHECK(size == 24 && lb == 0 && ext == 48 && tlb == 0 && text == 48, "vector: size %ld lb %ld extent %ld true %ld %ld",
              (long)size, (long)lb, (long)ext, (long)tlb, (long)text);
        MPI_Datatype rz;
        MPI_Type_create_resized(MPI_INT, -8, 32, &rz);
        MPI_Type_get_extent_c(rz, &lb, &ext);
        MPI_Type_get_true_extent_c(rz, &tlb, &text);
        CHECK(lb == -8 && ext == 32 && tlb == 0 && text == 4, "resized: lb %ld extent %ld true %ld %ld", (long)lb,
              (long)ext, (long)tlb, (long)text);
        MPI_Type_free(&v);
        MPI_Type_free(&rz);
    }
    /* errors */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc, cls;
    MPI_Request q;
    /* Counts above 2^31 - 1 work (p2p_huge_c); above 2^51 elements they
       are more than OxMPI can name. */
    rc = MPI_Send_c(s, (MPI_Count)1 << 52, MPI_INT, peer, 30, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Send_c of 2^52 ints: class %d, want MPI_ERR_COUNT", cls);
    rc = MPI_Irecv_c(r, (MPI_Count)1 << 60, MPI_INT, peer, 30, MPI_COMM_WORLD, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Irecv_c of 2^60 ints: class %d, want MPI_ERR_COUNT", cls);
    rc = MPI_Isend_c(s, -2, MPI_INT, peer, 30, MPI_COMM_WORLD, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Isend_c of -2 ints: class %d, want MPI_ERR_COUNT", cls);
    void *b;
    int bs;
    MPI_Buffer_detach(&b, &bs);
    MPI_Finalize();
    if (me == 0) printf("p2p_bigcount ok\n");
    return 0;
}
