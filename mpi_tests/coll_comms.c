/* Blocking collectives on communicators other than world, which take the
 * shared-memory pool areas, and rooted calls that run ahead on world's and a
 * pool area: two disjoint halves of world made by one split
 * (so they share a context id) with their ranks reversed; more live
 * communicators at once than there are pool areas (the rest use messages);
 * and create / use / free cycles that recycle the areas. Every collective
 * with a shared-memory form is run at sizes on both sides of its 128 KiB
 * limit, with a non-commutative user op whose result shows the rank order.
 * Every value is checked against one computed here. */
#include "util.h"
#include <unistd.h>

/* a op b = the decimal digits of a followed by those of b (numbers made of
 * the digits 1-9, at most 8 of them): associative, and only the rank order
 * gives the expected number. */
static void concat(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        int p = 1;
        while (p <= b[i]) p *= 10;
        b[i] = a[i] * p + b[i];
    }
}

static int digit(int r, int i, int salt) { return 1 + (r * 3 + i + salt) % 9; }

/* Runs every collective once on `comm` with `n` ints per block and checks. */
static void round_on(MPI_Comm comm, int n, int salt, MPI_Op cat) {
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int *a = malloc(sizeof(int) * (size_t)(n * size + 1));
    int *b = malloc(sizeof(int) * (size_t)(n * size + 1));

    MPI_Barrier(comm);

    int root = (salt + 1) % size;
    for (int i = 0; i < n; i++) a[i] = me == root ? salt * 7 + i : -1;
    MPI_Bcast(a, n, MPI_INT, root, comm);
    for (int i = 0; i < n; i++) CHECK(a[i] == salt * 7 + i, "bcast n=%d [%d]=%d", n, i, a[i]);

    /* Above the area's 128 KiB: pieces, the last one partial (or, on three
     * or more ranks, the single copy). */
    int big = 50001 + salt % 3;
    int *v = malloc(sizeof(int) * (size_t)big);
    for (int i = 0; i < big; i++) v[i] = me == root ? salt * 13 + i : -1;
    MPI_Bcast(v, big, MPI_INT, root, comm);
    for (int i = 0; i < big; i++) CHECK(v[i] == salt * 13 + i, "bcast n=%d [%d]=%d", big, i, v[i]);
    free(v);

    /* Non-commutative: digits in rank order. */
    for (int i = 0; i < n; i++) a[i] = digit(me, i, salt);
    MPI_Allreduce(a, b, n, MPI_INT, cat, comm);
    for (int i = 0; i < n; i++) {
        int want = 0;
        for (int r = 0; r < size; r++) want = want * 10 + digit(r, i, salt);
        CHECK(b[i] == want, "allreduce(concat) size %d n=%d [%d]=%d want %d", size, n, i, b[i], want);
    }

    for (int i = 0; i < n; i++) b[i] = -5;
    MPI_Reduce(a, b, n, MPI_INT, cat, root, comm);
    for (int i = 0; i < n; i++) {
        int want = 0;
        for (int r = 0; r < size; r++) want = want * 10 + digit(r, i, salt);
        CHECK(b[i] == (me == root ? want : -5), "reduce(concat) root %d n=%d [%d]=%d", root, n, i, b[i]);
    }

    int blk = n / size + 1;
    int *s = malloc(sizeof(int) * (size_t)(blk * size));
    int *r = malloc(sizeof(int) * (size_t)(blk * size));
    for (int i = 0; i < blk; i++) s[i] = me * 1000 + i + salt;
    MPI_Allgather(s, blk, MPI_INT, r, blk, MPI_INT, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++)
            CHECK(r[p * blk + i] == p * 1000 + i + salt, "allgather blk=%d from %d [%d]=%d", blk, p, i, r[p * blk + i]);

    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++) s[p * blk + i] = me * 100000 + p * 1000 + i + salt;
    MPI_Alltoall(s, blk, MPI_INT, r, blk, MPI_INT, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++)
            CHECK(r[p * blk + i] == p * 100000 + me * 1000 + i + salt, "alltoall blk=%d from %d [%d]=%d", blk, p, i,
                  r[p * blk + i]);

    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++) s[p * blk + i] = digit(me, p + i, salt);
    MPI_Reduce_scatter_block(s, r, blk, MPI_INT, cat, comm);
    for (int i = 0; i < blk; i++) {
        int want = 0;
        for (int q = 0; q < size; q++) want = want * 10 + digit(q, me + i, salt);
        CHECK(r[i] == want, "reduce_scatter_block(concat) size %d salt %d blk=%d [%d]=%d want %d", size, salt, blk, i, r[i], want);
    }
    free(s);
    free(r);
    free(a);
    free(b);
}

/* Rooted calls back to back with sizes crossing the area's region sizes
 * (1 KiB, 4 KiB, 32 KiB, 120 KiB), while a reader (bcast) or the root (reduce) is
 * late now and then: the writers run ahead by up to 64 calls and must not
 * overwrite data still unread. */
static void run_ahead(MPI_Comm comm, MPI_Op cat) {
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int lens[] = {2, 256, 257, 1024, 1025, 3000, 8, 5000, 0, 1, 8000, 30000};
    const int nl = sizeof lens / sizeof lens[0];
    int *a = malloc(sizeof(int) * 32768), *b = malloc(sizeof(int) * 32768);
    for (int it = 0; it < 400; it++) {
        int n = lens[it % nl], root = (it / 100) % size;
        if (it % 37 == 0 && me == (root + 1) % size) usleep(3000); /* a late reader */
        for (int i = 0; i < n; i++) a[i] = me == root ? it * 977 + i : -1;
        MPI_Bcast(a, n, MPI_INT, root, comm);
        for (int i = 0; i < n; i++) CHECK(a[i] == it * 977 + i, "run-ahead bcast it %d n=%d [%d]=%d", it, n, i, a[i]);
    }
    for (int it = 0; it < 400; it++) {
        int n = lens[it % nl], root = (it / 100) % size;
        if (it % 41 == 0 && me == root) usleep(3000); /* a late root */
        for (int i = 0; i < n; i++) a[i] = digit(me, i, it);
        MPI_Reduce(a, b, n, MPI_INT, cat, root, comm);
        if (me == root)
            for (int i = 0; i < n; i++) {
                int want = 0;
                for (int r = 0; r < size; r++) want = want * 10 + digit(r, i, it);
                CHECK(b[i] == want, "run-ahead reduce it %d n=%d [%d]=%d want %d", it, n, i, b[i], want);
            }
    }
    free(a);
    free(b);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Op cat;
    MPI_Op_create(concat, 0, &cat);
    /* 40000 ints: above the 128 KiB shared area for every call. */
    const int sizes[] = {0, 1, 7, 300, 9000, 40000};
    const int nsizes = sizeof sizes / sizeof sizes[0];

    /* Two halves, ranks reversed; one split call gives both the same context id. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    for (int k = 0; k < nsizes; k++) round_on(half, sizes[k], k, cat);
    run_ahead(MPI_COMM_WORLD, cat);
    run_ahead(half, cat);

    /* More live communicators than pool areas, used in interleaved order. */
    enum { NCOMMS = 11 };
    MPI_Comm many[NCOMMS];
    for (int c = 0; c < NCOMMS; c++) {
        if (c % 2) MPI_Comm_dup(half, &many[c]);
        else MPI_Comm_split(MPI_COMM_WORLD, 0, (rank * 5 + c) % size, &many[c]);
    }
    for (int it = 0; it < 3; it++)
        for (int c = 0; c < NCOMMS; c++) round_on(many[(c * 7 + it) % NCOMMS], sizes[(c + it) % 4], c + it, cat);
    for (int c = 0; c < NCOMMS; c++) MPI_Comm_free(&many[c]);

    /* Create / use / free: the areas are handed back and taken again. */
    for (int it = 0; it < 24; it++) {
        MPI_Comm c;
        int color = it % 3 == 2 ? (rank < size / 2 ? 0 : MPI_UNDEFINED) : 0;
        MPI_Comm_split(MPI_COMM_WORLD, color, it % 2 ? -rank : rank, &c);
        if (c != MPI_COMM_NULL) {
            round_on(c, sizes[it % 4], it, cat);
            round_on(c, 5, it + 1, cat);
            MPI_Comm_free(&c);
        }
        round_on(half, 3, it, cat);
    }
    MPI_Comm_free(&half);
    MPI_Op_free(&cat);
    MPI_Finalize();
    if (rank == 0) printf("coll_comms ok\n");
    return 0;
}
