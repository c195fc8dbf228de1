/* Runs of accumulates, fetch-and-ops and compare-and-swaps issued before
 * one flush: the library may gather them (across nodes it sends a run of
 * them to one target as one request, answered at the flush), and every
 * result must still be what the operations applied one after another, in
 * their order, give:
 *  - fetch-and-ops on one counter from every origin at once: each origin's
 *    fetched values increase in its order, and all fetched values together
 *    are 0 .. total-1, each once (atomicity across origins);
 *  - a chain of compare-and-swaps on one word, each expecting what the one
 *    before it stored: every one succeeds;
 *  - accumulates into overlapping elements within one run (several on the
 *    same element), of several lengths, small and large, with sums checked
 *    exactly;
 *  - an accumulate, then a get-accumulate (replace), then a fetch-and-op
 *    (no-op) on the same elements, then a get-accumulate into a result of a
 *    derived type, with no flush between them: each sees the one before it
 *    (MPI's accumulate ordering);
 *  - MPI_Raccumulate and MPI_Rget_accumulate, whose results are there when
 *    their requests complete;
 *  - fetch-and-ops of 4-byte integers with MPI_MAX and MPI_MIN, and on a
 *    window of MPI_Win_create memory.
 * Then runs of puts and gets before one flush on MPI_Win_create memory
 * (on one node the library may gather them into one single copy per
 * target at the flush): more of them than one gathering holds, at
 * scattered and at adjacent places, a put's buffer changed right after
 * each call (a put's bytes are its buffer's at the call), a put of a
 * derived type, the gets' values and the target's memory checked.
 * RMA_TEST_INTRINSIC=1 sets acc_single_intrinsic: single elements then go
 * as the fabric's atomics while the longer accumulates do not, and the
 * ordering checks above span the two. */
#include "util.h"
#include <stddef.h>
#include <stdint.h>

#define RUN 64         /* operations before each flush */
#define BIG 4096       /* doubles in a large accumulate (past any gathering) */
#define SLOTS 32       /* doubles the small accumulates land on */

typedef struct {
    int64_t ticket;        /* fetch-and-op from every origin */
    int64_t chain[16];     /* per origin: compare-and-swap chain */
    int64_t order[16][4];  /* per origin: the ordering checks */
    int32_t imax, imin;    /* 4-byte fetch-and-ops */
    int32_t pad[2];
    double slots[SLOTS];   /* small accumulates, overlapping */
    double big[BIG];       /* large accumulates */
} Cell;

static void run(int rank, int size, int allocate) {
    const char *how = allocate ? "allocate" : "create";
    CHECK(size <= 16, "at most 16 ranks");
    MPI_Win win;
    Cell *c;
    c = rma_test_window(sizeof(Cell), allocate, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(c, 0, sizeof *c);
    c->imin = 1 << 30;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    const int root = 0;
    /* the target of the per-origin checks: another rank where there is one */
    const int t = (rank + 1) % size;

    MPI_Win_lock_all(0, win);

    /* 1. fetch-and-ops from every origin on one counter */
    int64_t one = 1, tickets[3 * RUN];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < RUN; i++)
            MPI_Fetch_and_op(&one, &tickets[k * RUN + i], MPI_INT64_T, root, offsetof(Cell, ticket),
                             MPI_SUM, win);
        MPI_Win_flush(root, win);
    }
    for (int i = 1; i < 3 * RUN; i++)
        CHECK(tickets[i] > tickets[i - 1], "%s: fetch-and-op %d fetched %lld after %lld", how, i,
              (long long)tickets[i], (long long)tickets[i - 1]);

    /* 2. a chain of compare-and-swaps, each expecting the one before */
    int64_t olds[RUN];
    for (int i = 0; i < RUN; i++) {
        int64_t cmp = i, nv = i + 1;
        MPI_Compare_and_swap(&nv, &cmp, &olds[i], MPI_INT64_T, t,
                             offsetof(Cell, chain) + rank * sizeof(int64_t), win);
    }
    MPI_Win_flush(t, win);
    for (int i = 0; i < RUN; i++)
        CHECK(olds[i] == i, "%s: compare-and-swap %d of the chain fetched %lld", how, i,
              (long long)olds[i]);

    /* 3. small accumulates onto overlapping slots of every rank, and large
     * ones between them: origin o adds (o + 1) * (len) to slots [s, s+len) */
    static double src[BIG];
    for (int i = 0; i < BIG; i++) src[i] = rank + 1;
    for (int tr = 0; tr < size; tr++) {
        for (int i = 0; i < RUN; i++) {
            int len = 1 + i % 8, s = (i * 5) % (SLOTS - len);
            MPI_Accumulate(src, len, MPI_DOUBLE, tr, offsetof(Cell, slots) + s * sizeof(double), len,
                           MPI_DOUBLE, MPI_SUM, win);
            if (i % 16 == 15)
                MPI_Accumulate(src, BIG, MPI_DOUBLE, tr, offsetof(Cell, big), BIG, MPI_DOUBLE, MPI_SUM,
                               win);
        }
    }
    MPI_Win_flush_all(win);

    /* 4. accumulate, get-accumulate, fetch-and-op, derived get-accumulate,
     * with no flush between: each sees the one before */
    {
        MPI_Aint at = offsetof(Cell, order) + rank * 4 * sizeof(int64_t);
        int64_t add[2] = {5, 7}, rep[2] = {100, 200}, got[2] = {-1, -1}, nop = 0, fop = -1;
        int64_t pair[4] = {-1, -1, -1, -1};
        MPI_Datatype strided;
        MPI_Type_vector(2, 1, 2, MPI_INT64_T, &strided);
        MPI_Type_commit(&strided);
        MPI_Accumulate(add, 2, MPI_INT64_T, t, at, 2, MPI_INT64_T, MPI_SUM, win);
        MPI_Get_accumulate(rep, 2, MPI_INT64_T, got, 2, MPI_INT64_T, t, at, 2, MPI_INT64_T, MPI_REPLACE,
                           win);
        MPI_Fetch_and_op(&nop, &fop, MPI_INT64_T, t, at + sizeof(int64_t), MPI_NO_OP, win);
        MPI_Get_accumulate(add, 2, MPI_INT64_T, pair, 1, strided, t, at, 2, MPI_INT64_T, MPI_SUM, win);
        MPI_Win_flush(t, win);
        CHECK(got[0] == 5 && got[1] == 7, "%s: get-accumulate after accumulate fetched %lld %lld", how,
              (long long)got[0], (long long)got[1]);
        CHECK(fop == 200, "%s: fetch-and-op after get-accumulate fetched %lld", how, (long long)fop);
        CHECK(pair[0] == 100 && pair[1] == -1 && pair[2] == 200 && pair[3] == -1,
              "%s: strided get-accumulate fetched %lld %lld %lld %lld", how, (long long)pair[0],
              (long long)pair[1], (long long)pair[2], (long long)pair[3]);
        MPI_Type_free(&strided);
    }

    /* 5. request-based forms: results there at completion */
    {
        MPI_Request rq[2];
        MPI_Aint at = offsetof(Cell, order) + (rank * 4 + 2) * sizeof(int64_t);
        int64_t v = 11, w = 0, got = -1;
        MPI_Raccumulate(&v, 1, MPI_INT64_T, t, at, 1, MPI_INT64_T, MPI_SUM, win, &rq[0]);
        MPI_Rget_accumulate(&w, 1, MPI_INT64_T, &got, 1, MPI_INT64_T, t, at, 1, MPI_INT64_T, MPI_NO_OP,
                            win, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(got == 11, "%s: MPI_Rget_accumulate after MPI_Raccumulate fetched %lld", how,
              (long long)got);
    }

    /* 6. 4-byte fetch-and-ops, max and min, from every origin */
    int32_t mx = rank + 1, mn = rank + 1, gmx[RUN], gmn[RUN];
    for (int i = 0; i < RUN; i++) {
        MPI_Fetch_and_op(&mx, &gmx[i], MPI_INT32_T, root, offsetof(Cell, imax), MPI_MAX, win);
        MPI_Fetch_and_op(&mn, &gmn[i], MPI_INT32_T, root, offsetof(Cell, imin), MPI_MIN, win);
    }
    MPI_Win_flush(root, win);
    for (int i = 1; i < RUN; i++) {
        CHECK(gmx[i] >= mx, "%s: max fetch-and-op %d fetched %d, under this rank's %d", how, i, gmx[i], mx);
        CHECK(gmn[i] <= mn, "%s: min fetch-and-op %d fetched %d, over this rank's %d", how, i, gmn[i], mn);
    }
    MPI_Win_unlock_all(win);

    /* every origin's tickets together: 0 .. total-1, each once */
    int total = 3 * RUN * size;
    int64_t *all = malloc(sizeof(int64_t) * total);
    MPI_Allgather(tickets, 3 * RUN, MPI_INT64_T, all, 3 * RUN, MPI_INT64_T, MPI_COMM_WORLD);
    char *seen = calloc(total, 1);
    for (int i = 0; i < total; i++) {
        CHECK(all[i] >= 0 && all[i] < total && !seen[all[i]], "%s: ticket %lld fetched twice or out of range",
              how, (long long)all[i]);
        seen[all[i]] = 1;
    }
    free(seen);
    free(all);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    if (rank == root) {
        CHECK(c->ticket == total, "%s: counter %lld, want %d", how, (long long)c->ticket, total);
        CHECK(c->imax == size && c->imin == 1, "%s: max %d min %d", how, c->imax, c->imin);
    }
    /* rank `rank` got the chain and the order cells of origin `rank - 1` */
    int o = (rank + size - 1) % size;
    CHECK(c->chain[o] == RUN, "%s: chain of origin %d ended at %lld", how, o, (long long)c->chain[o]);
    CHECK(c->order[o][0] == 105 && c->order[o][1] == 207 && c->order[o][2] == 11,
          "%s: order cells of origin %d: %lld %lld %lld", how, o, (long long)c->order[o][0],
          (long long)c->order[o][1], (long long)c->order[o][2]);
    /* every origin's (o + 1) over the slots it covered */
    double want[SLOTS] = {0};
    double per = (double)size * (size + 1) / 2;
    for (int i = 0; i < RUN; i++) {
        int len = 1 + i % 8, s = (i * 5) % (SLOTS - len);
        for (int k = 0; k < len; k++) want[s + k] += per;
    }
    for (int i = 0; i < SLOTS; i++)
        CHECK(c->slots[i] == want[i], "%s: slot %d is %g, want %g", how, i, c->slots[i], want[i]);
    for (int i = 0; i < BIG; i++)
        CHECK(c->big[i] == per * (RUN / 16), "%s: big[%d] is %g, want %g", how, i, c->big[i],
              per * (RUN / 16));
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    if (!allocate) free(c);
}

#define PG_REGION 3072 /* ints of each origin's region at a target */
#define PG_PUTS (PG_REGION / 2)

static int pg_val(int origin, int i) { return origin * 100000 + i; }

static void puts_gets(int rank, int size) {
    CHECK(size <= 16, "at most 16 ranks");
    int n = PG_REGION * size;
    int *mem = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) mem[i] = -1;
    MPI_Win win;
    MPI_Win_create(mem, sizeof(int) * n, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int t = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Aint region = (MPI_Aint)rank * PG_REGION;
    MPI_Win_lock_all(0, win);
    /* every second int of my region at t, one put each from one buffer
     * that changes right after each call */
    int v;
    for (int i = 0; i < PG_PUTS; i++) {
        v = pg_val(rank, 2 * i);
        MPI_Put(&v, 1, MPI_INT, t, region + 2 * i, 1, MPI_INT, win);
        v = -7;
    }
    /* a derived origin type: ints 1, 3, 5, 7 of `src` into the odd ints
     * 1..7 of my region (vector at the target too) */
    int src[8];
    for (int k = 0; k < 8; k++) src[k] = (k % 2) ? pg_val(rank, k) : -9;
    MPI_Datatype odd;
    MPI_Type_vector(4, 1, 2, MPI_INT, &odd);
    MPI_Type_commit(&odd);
    MPI_Put(&src[1], 1, odd, t, region + 1, 1, odd, win);
    MPI_Win_flush(t, win);
    /* gets: every second int one by one into scattered results, then the
     * odd ints 1..7 one by one into adjacent results */
    int *got = malloc(sizeof(int) * PG_PUTS);
    for (int i = 0; i < PG_PUTS; i++) got[i] = -5;
    for (int i = 0; i < PG_PUTS; i++) MPI_Get(&got[i], 1, MPI_INT, t, region + 2 * i, 1, MPI_INT, win);
    int odds[4] = {-5, -5, -5, -5};
    for (int k = 0; k < 4; k++) MPI_Get(&odds[k], 1, MPI_INT, t, region + 1 + 2 * k, 1, MPI_INT, win);
    MPI_Win_flush_all(win);
    for (int i = 0; i < PG_PUTS; i++)
        CHECK(got[i] == pg_val(rank, 2 * i), "get %d from %d: %d, want %d", i, t, got[i], pg_val(rank, 2 * i));
    for (int k = 0; k < 4; k++)
        CHECK(odds[k] == pg_val(rank, 1 + 2 * k), "odd get %d from %d: %d, want %d", k, t, odds[k],
              pg_val(rank, 1 + 2 * k));
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* my memory: `from`'s region as it put it, every other region untouched */
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < n; i++) {
        int o = i / PG_REGION, k = i % PG_REGION;
        int want = (o == from && (k % 2 == 0 || k < 8)) ? pg_val(from, k) : -1;
        if (size == 1) want = (o == rank && (k % 2 == 0 || k < 8)) ? pg_val(rank, k) : -1;
        CHECK(mem[i] == want, "int %d (region of %d, %d) is %d, want %d", i, o, k, mem[i], want);
    }
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&odd);
    MPI_Win_free(&win);
    free(got);
    free(mem);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    run(rank, size, 1);
    run(rank, size, 0);
    puts_gets(rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_batch ok\n");
    MPI_Finalize();
    return 0;
}
