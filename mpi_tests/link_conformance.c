/* The transport conformance suite: the same point-to-point protocol tests
 * against every link. Each rank exchanges with a partner (rank ^ 1; the last
 * rank of an odd job, and the only rank of a singleton, with itself), so one
 * program covers the shared-memory link (2+ ranks), the rank itself
 * delivered in place (1 rank) and the loopback link (1 rank with
 * OXMPI_LOOPBACK=1); the testlist runs it under each, with and without
 * single copy, split copies and the eager path. Every operation is
 * nonblocking so that a rank paired with itself cannot deadlock.
 *
 * Covered: eager (inline, one cell, fragments), rendezvous (single copy,
 * split copy, the cells' fallback), ordering per (communicator, source,
 * tag) across eager and rendezvous, expected and unexpected, truncation of
 * both, zero bytes, many outstanding, cancel of receives, synchronous sends
 * (not complete before the match), non-contiguous types (also above
 * OXMPI_PACK_STREAM, streamed), probe. */
#include "util.h"

static int rank, size, peer;
static MPI_Comm comm;

static void exchange(long n, int tag, int unexpected) {
    unsigned char *s = malloc(n ? n : 1), *r = malloc(n + 16);
    fill(s, n, rank, tag);
    memset(r, 0xee, n + 16);
    MPI_Request q[2];
    MPI_Status st[2];
    if (unexpected) {
        MPI_Isend(s, (int)n, MPI_BYTE, peer, tag, comm, &q[0]);
        /* The partner's message arrives before the receive is posted. */
        MPI_Barrier(comm);
        MPI_Irecv(r, (int)n, MPI_BYTE, peer, tag, comm, &q[1]);
    } else {
        MPI_Irecv(r, (int)n, MPI_BYTE, peer, tag, comm, &q[1]);
        MPI_Barrier(comm);
        MPI_Isend(s, (int)n, MPI_BYTE, peer, tag, comm, &q[0]);
    }
    CHECK(MPI_Waitall(2, q, st) == MPI_SUCCESS, "waitall n=%ld", n);
    int cnt;
    MPI_Get_count(&st[1], MPI_BYTE, &cnt);
    CHECK(cnt == n, "n=%ld: count %d", n, cnt);
    CHECK(st[1].MPI_SOURCE == peer && st[1].MPI_TAG == tag, "n=%ld: envelope %d/%d", n,
          st[1].MPI_SOURCE, st[1].MPI_TAG);
    long bad = verify(r, n, peer, tag);
    CHECK(bad < 0, "n=%ld (%s): byte %ld wrong", n, unexpected ? "unexpected" : "expected", bad);
    for (int i = 0; i < 16; i++) CHECK(r[n + i] == 0xee, "n=%ld: wrote past the message", n);
    free(s);
    free(r);
}

/* Messages of alternating protocols on one (source, tag) arrive in order. */
static void ordering(int unexpected) {
    enum { N = 24 };
    static const long sizes[N] = {8,      100000, 0,     40000, 24,     1 << 20, 25,     8193,
                                  70000,  1,      33000, 32768, 32769,  4096,    300000, 7,
                                  65536,  9000,   2,     200000, 8192,  64,      50000,  3};
    unsigned char *s[N], *r[N];
    MPI_Request q[2 * N];
    MPI_Status st[2 * N];
    for (int i = 0; i < N; i++) {
        s[i] = malloc(sizes[i] + 1);
        r[i] = malloc(sizes[i] + 1);
        /* The content names the message's position (tag argument i). */
        fill(s[i], sizes[i], rank, 100 + i);
    }
    if (!unexpected)
        for (int i = 0; i < N; i++)
            MPI_Irecv(r[i], (int)sizes[i], MPI_BYTE, peer, 5, comm, &q[N + i]);
    for (int i = 0; i < N; i++) MPI_Isend(s[i], (int)sizes[i], MPI_BYTE, peer, 5, comm, &q[i]);
    if (unexpected) {
        MPI_Barrier(comm);
        for (int i = 0; i < N; i++)
            MPI_Irecv(r[i], (int)sizes[i], MPI_BYTE, peer, 5, comm, &q[N + i]);
    }
    CHECK(MPI_Waitall(2 * N, q, st) == MPI_SUCCESS, "ordering waitall");
    for (int i = 0; i < N; i++) {
        int cnt;
        MPI_Get_count(&st[N + i], MPI_BYTE, &cnt);
        CHECK(cnt == sizes[i], "ordering: message %d has %d bytes, sent %ld", i, cnt, sizes[i]);
        CHECK(verify(r[i], sizes[i], peer, 100 + i) < 0, "ordering: message %d out of order", i);
        free(s[i]);
        free(r[i]);
    }
}

static void truncation(long n, long cap) {
    unsigned char *s = malloc(n), *r = malloc(cap + 8);
    fill(s, n, rank, 9);
    memset(r, 0xee, cap + 8);
    MPI_Request qs, qr;
    MPI_Status st;
    MPI_Irecv(r, (int)cap, MPI_BYTE, peer, 9, comm, &qr);
    MPI_Isend(s, (int)n, MPI_BYTE, peer, 9, comm, &qs);
    int rc = MPI_Wait(&qr, &st), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation n=%ld cap=%ld: class %d", n, cap, cls);
    CHECK(verify(r, cap, peer, 9) < 0, "truncation n=%ld: the bytes that fit are wrong", n);
    for (int i = 0; i < 8; i++) CHECK(r[cap + i] == 0xee, "truncation n=%ld wrote past", n);
    CHECK(MPI_Wait(&qs, MPI_STATUS_IGNORE) == MPI_SUCCESS, "truncated send n=%ld", n);
    free(s);
    free(r);
}

static void many_outstanding(void) {
    enum { N = 300 };
    unsigned char *s[N], *r[N];
    long len[N];
    MPI_Request q[2 * N];
    MPI_Status st[2 * N];
    for (int i = 0; i < N; i++) {
        len[i] = (i * 7919L) % 70001;
        s[i] = malloc(len[i] + 1);
        r[i] = malloc(len[i] + 1);
        fill(s[i], len[i], rank, 1000 + i);
    }
    /* Receives posted in the reverse order of the tags, half before the sends. */
    for (int i = N - 1; i >= N / 2; i--)
        MPI_Irecv(r[i], (int)len[i], MPI_BYTE, peer, 1000 + i, comm, &q[N + i]);
    for (int i = 0; i < N; i++)
        MPI_Isend(s[i], (int)len[i], MPI_BYTE, peer, 1000 + i, comm, &q[i]);
    for (int i = N / 2 - 1; i >= 0; i--)
        MPI_Irecv(r[i], (int)len[i], MPI_BYTE, peer, 1000 + i, comm, &q[N + i]);
    CHECK(MPI_Waitall(2 * N, q, st) == MPI_SUCCESS, "many outstanding");
    for (int i = 0; i < N; i++) {
        CHECK(st[N + i].MPI_TAG == 1000 + i, "many: tag %d", st[N + i].MPI_TAG);
        CHECK(verify(r[i], len[i], peer, 1000 + i) < 0, "many: message %d wrong", i);
        free(s[i]);
        free(r[i]);
    }
}

static void cancel_recv(void) {
    int x = -1, flag = 0;
    MPI_Request q;
    MPI_Status st;
    MPI_Irecv(&x, 1, MPI_INT, peer, 77, comm, &q);
    MPI_Cancel(&q);
    MPI_Wait(&q, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "a receive nothing matched was not cancelled");
    /* Both partners have cancelled before either sends on tag 77. */
    MPI_Barrier(comm);
    /* The message sent afterwards goes to the next receive, not the cancelled one. */
    int v = 4242 + rank, got = -1;
    MPI_Request qq[2];
    MPI_Isend(&v, 1, MPI_INT, peer, 77, comm, &qq[0]);
    MPI_Irecv(&got, 1, MPI_INT, peer, 77, comm, &qq[1]);
    MPI_Waitall(2, qq, MPI_STATUSES_IGNORE);
    CHECK(got == 4242 + peer && x == -1, "after cancel: got %d, cancelled buffer %d", got, x);
    /* A matched receive is not cancelled. */
    MPI_Irecv(&got, 1, MPI_INT, peer, 78, comm, &qq[1]);
    MPI_Isend(&v, 1, MPI_INT, peer, 78, comm, &qq[0]);
    MPI_Wait(&qq[0], MPI_STATUS_IGNORE);
    MPI_Wait(&qq[1], &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && got == 4242 + peer, "a completed receive reported cancelled");
}

static void synchronous(long n) {
    unsigned char *s = malloc(n + 1), *r = malloc(n + 1);
    fill(s, n, rank, 11);
    MPI_Request q[2];
    int flag = 0;
    MPI_Issend(s, (int)n, MPI_BYTE, peer, 11, comm, &q[0]);
    /* No receive is posted anywhere yet: the send must stay incomplete. */
    for (int i = 0; i < 200 && !flag; i++) MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "Issend of %ld bytes completed before its receive was posted", n);
    MPI_Barrier(comm);
    MPI_Irecv(r, (int)n, MPI_BYTE, peer, 11, comm, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    CHECK(verify(r, n, peer, 11) < 0, "ssend %ld: data wrong", n);
    free(s);
    free(r);
}

static void noncontig(int blocks) {
    MPI_Datatype v;
    MPI_Type_vector(blocks, 3, 5, MPI_INT, &v);
    MPI_Type_commit(&v);
    long n = 5L * blocks, m = 3L * blocks;
    int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int)), *c = malloc(m * sizeof(int));
    int *cs = malloc(m * sizeof(int)), *r2 = malloc(n * sizeof(int));
    for (long i = 0; i < n; i++) s[i] = (int)(rank * 1000003 + i), r[i] = -1, r2[i] = -1;
    for (long k = 0; k < m; k++) cs[k] = (int)(rank * 7919 + k);
    MPI_Request q[6];
    /* Vector to vector, vector to contiguous, and contiguous to vector. */
    MPI_Irecv(r, 1, v, peer, 12, comm, &q[0]);
    MPI_Irecv(c, 3 * blocks, MPI_INT, peer, 13, comm, &q[1]);
    MPI_Irecv(r2, 1, v, peer, 15, comm, &q[4]);
    MPI_Isend(s, 1, v, peer, 12, comm, &q[2]);
    MPI_Isend(s, 1, v, peer, 13, comm, &q[3]);
    MPI_Isend(cs, 3 * blocks, MPI_INT, peer, 15, comm, &q[5]);
    MPI_Waitall(6, q, MPI_STATUSES_IGNORE);
    for (long b = 0, k = 0; b < blocks; b++)
        for (long j = 0; j < 5; j++) {
            long i = b * 5 + j;
            int want = j < 3 ? (int)(peer * 1000003 + i) : -1;
            CHECK(r[i] == want, "vector %d blocks: element %ld is %d, want %d", blocks, i, r[i], want);
            int want2 = j < 3 ? (int)(peer * 7919 + k) : -1;
            CHECK(r2[i] == want2, "contiguous to vector %d blocks: element %ld is %d, want %d", blocks, i, r2[i],
                  want2);
            if (j < 3) {
                CHECK(c[k] == want, "vector to contiguous %d blocks: element %ld", blocks, k);
                k++;
            }
        }
    MPI_Type_free(&v);
    free(s);
    free(r);
    free(c);
    free(cs);
    free(r2);
}

static void probe(long n) {
    unsigned char *s = malloc(n + 1), *r = malloc(n + 1);
    fill(s, n, rank, 14);
    MPI_Request q;
    MPI_Status st;
    int flag = 0, cnt;
    MPI_Isend(s, (int)n, MPI_BYTE, peer, 14, comm, &q);
    while (!flag) MPI_Iprobe(peer, 14, comm, &flag, &st);
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == n && st.MPI_SOURCE == peer, "probe %ld: count %d source %d", n, cnt, st.MPI_SOURCE);
    MPI_Recv(r, (int)n, MPI_BYTE, peer, 14, comm, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(verify(r, n, peer, 14) < 0, "probe %ld: data wrong", n);
    free(s);
    free(r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    peer = rank ^ 1;
    if (peer >= size) peer = rank;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    static const long eager[] = {0, 1, 8, 24, 25, 64, 100, 4095, 4096, 8192, 8193, 20000, 32768};
    static const long rndv[] = {32769, 65536, 100001, 1 << 20, (4 << 20) + 3};
    for (int u = 0; u < 2; u++) {
        for (unsigned i = 0; i < sizeof eager / sizeof *eager; i++) exchange(eager[i], 1, u);
        /* Twice each: the second time single copy from this peer is proven. */
        for (int k = 0; k < 2; k++)
            for (unsigned i = 0; i < sizeof rndv / sizeof *rndv; i++) exchange(rndv[i], 2, u);
        ordering(u);
    }
    truncation(1000, 100);
    truncation(100000, 40000);
    truncation(3 << 20, 1 << 20);
    many_outstanding();
    cancel_recv();
    synchronous(0);
    synchronous(8);
    synchronous(10000);
    synchronous(200000);
    noncontig(4);
    noncontig(5000);
    noncontig(300000);
    /* 4.8 MB packed: above OXMPI_PACK_STREAM, streamed on both sides. */
    noncontig(400000);
    probe(16);
    probe(500000);

    MPI_Comm_free(&comm);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("link_conformance: ok at %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
