/* One-sided communication on windows over CUDA device memory
 * (MPI_Win_create of a device buffer): put and get with host and device
 * origin buffers, a vector datatype at the target, accumulate, fetch-and-op
 * and compare-and-swap under fence and passive target; then device memory
 * attached to a dynamic window (with a host region beside it), attached
 * again after a free. Every rank's window memory is device memory; its
 * contents are read back with the driver. */
#include "gpu_util.h"

#define SLOT 8

static int rank, size;

static int pat(int origin, int target, int i) { return origin * 1000 + target * 10 + i; }

/* A dynamic window with device memory attached on every rank, twice: the
 * second time after a detach, a free and a new allocation (whose address
 * may be the old one: a stale mapping at an origin would miss its data).
 * Under lock_all every origin puts its slot into every target's device
 * region (host and device origin buffers by turns), accumulates and
 * fetches-and-adds its counters, and reads its slot back; each target then
 * checks its device memory. A host region attached beside it keeps
 * working; bytes past the device region are an MPI_ERR_RMA_RANGE. */
static void dynamic(void) {
    int A = size * SLOT, n = A + 2, one = 1;
    MPI_Win dyn;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
    int hreg[2] = {0, 0};
    CHECK(MPI_Win_attach(dyn, hreg, sizeof hreg) == MPI_SUCCESS, "MPI_Win_attach of host memory");
    MPI_Aint *addrs = malloc(2 * size * sizeof(MPI_Aint));
    for (int round = 0; round < 2; round++) {
        int *dmem = dalloc((size_t)n * sizeof(int), 0);
        CHECK(MPI_Win_attach(dyn, dmem, (MPI_Aint)n * sizeof(int)) == MPI_SUCCESS, "MPI_Win_attach of device memory (round %d)", round);
        MPI_Aint mine[2];
        MPI_Get_address(dmem, &mine[0]);
        MPI_Get_address(hreg, &mine[1]);
        MPI_Allgather(mine, 2, MPI_AINT, addrs, 2, MPI_AINT, MPI_COMM_WORLD);
        MPI_Win_lock_all(0, dyn);
        for (int t = 0; t < size; t++) {
            MPI_Aint at = addrs[2 * t];
            int hsrc[SLOT], tk = -1;
            for (int i = 0; i < SLOT; i++) hsrc[i] = pat(rank, t, i) + round * 100000;
            if ((t + round) % 2) {
                CHECK(MPI_Put(hsrc, SLOT, MPI_INT, t, at + rank * SLOT * sizeof(int), SLOT, MPI_INT, dyn) == MPI_SUCCESS, "put to rank %d", t);
            } else {
                int *d = dcopy(hsrc, sizeof hsrc);
                CHECK(MPI_Put(d, SLOT, MPI_INT, t, at + rank * SLOT * sizeof(int), SLOT, MPI_INT, dyn) == MPI_SUCCESS, "put from device memory to rank %d", t);
                MPI_Win_flush_local(t, dyn);
                dfree(d);
            }
            MPI_Accumulate(&one, 1, MPI_INT, t, at + A * sizeof(int), 1, MPI_INT, MPI_SUM, dyn);
            MPI_Fetch_and_op(&one, &tk, MPI_INT, t, at + (A + 1) * sizeof(int), MPI_SUM, dyn);
            CHECK(tk >= 0 && tk < size, "fetch-and-op on rank %d's device memory gave %d", t, tk);
            MPI_Accumulate(&one, 1, MPI_INT, t, addrs[2 * t + 1], 1, MPI_INT, MPI_SUM, dyn);
        }
        MPI_Win_flush_all(dyn);
        for (int t = 0; t < size; t++) {
            int got[SLOT];
            MPI_Get(got, SLOT, MPI_INT, t, addrs[2 * t] + rank * SLOT * sizeof(int), SLOT, MPI_INT, dyn);
            MPI_Win_flush(t, dyn);
            for (int i = 0; i < SLOT; i++)
                CHECK(got[i] == pat(rank, t, i) + round * 100000, "round %d: get from rank %d's device memory: [%d] = %d", round, t, i, got[i]);
        }
        /* Past the end of this rank's own device region. */
        int cls = -1, v = 0;
        MPI_Error_class(MPI_Put(&v, 1, MPI_INT, rank, addrs[2 * rank] + n * sizeof(int), 1, MPI_INT, dyn), &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE, "a put past the attached device memory: class %d", cls);
        MPI_Win_unlock_all(dyn);
        MPI_Barrier(MPI_COMM_WORLD);
        int *h = hcopy(dmem, (size_t)n * sizeof(int));
        for (int o = 0; o < size; o++)
            for (int i = 0; i < SLOT; i++)
                CHECK(h[o * SLOT + i] == pat(o, rank, i) + round * 100000, "round %d: rank %d's slot [%d] = %d", round, o, i, h[o * SLOT + i]);
        CHECK(h[A] == size && h[A + 1] == size, "round %d: counters %d %d, not %d", round, h[A], h[A + 1], size);
        free(h);
        CHECK(MPI_Win_detach(dyn, dmem) == MPI_SUCCESS, "MPI_Win_detach of device memory");
        dfree(dmem);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK(hreg[0] == 2 * size, "the host region beside: %d, not %d", hreg[0], 2 * size);
    MPI_Win_detach(dyn, hreg);
    MPI_Win_free(&dyn);
    free(addrs);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    GPU_OR_SKIP(rank);
    /* [0, A): contiguous puts, one slot per origin; [A, 2A): vector puts;
     * [2A, 2A + 8): accumulate, fetch-and-op, compare-and-swap. */
    int A = size * SLOT, n = 2 * A + 8;
    int *wmem = dalloc((size_t)n * sizeof(int), 0);
    MPI_Win win;
    CHECK(MPI_Win_create(wmem, (MPI_Aint)n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS,
          "MPI_Win_create of device memory");

    /* Fence: every origin puts its slot into every target, from a host
     * buffer to even targets and from a device buffer to odd ones, and a
     * vector (4 blocks of 1 int, stride 2) from a device buffer. */
    int hsrc[SLOT];
    int *dsrc[64];
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; t++) {
        for (int i = 0; i < SLOT; i++) hsrc[i] = pat(rank, t, i);
        if (t % 2 == 0) {
            MPI_Put(hsrc, SLOT, MPI_INT, t, rank * SLOT, SLOT, MPI_INT, win);
            dsrc[t] = NULL;
        } else {
            dsrc[t] = dcopy(hsrc, sizeof hsrc);
            MPI_Put(dsrc[t], SLOT, MPI_INT, t, rank * SLOT, SLOT, MPI_INT, win);
        }
        int v[4];
        for (int i = 0; i < 4; i++) v[i] = -pat(rank, t, i);
        int *dv = dcopy(v, sizeof v);
        MPI_Put(dv, 4, MPI_INT, t, A + rank * SLOT, 1, vec, win);
        MPI_Win_fence(0, win); /* one epoch per target keeps dv's lifetime simple */
        dfree(dv);
    }
    for (int t = 0; t < size; t++)
        if (dsrc[t]) dfree(dsrc[t]);
    int *got = hcopy(wmem, (size_t)n * sizeof(int));
    for (int o = 0; o < size; o++)
        for (int i = 0; i < SLOT; i++) {
            CHECK(got[o * SLOT + i] == pat(o, rank, i), "put from rank %d: int %d is %d, not %d", o, i, got[o * SLOT + i], pat(o, rank, i));
            int want = (i % 2 == 0 && i / 2 < 4) ? -pat(o, rank, i / 2) : 0;
            CHECK(got[A + o * SLOT + i] == want, "vector put from rank %d: int %d is %d, not %d", o, i, got[A + o * SLOT + i], want);
        }
    free(got);

    /* Get: the slot this rank put into the next rank, into a device buffer
     * and into a host one. */
    int next = (rank + 1) % size;
    int *dget = dalloc(SLOT * sizeof(int), 0x11);
    int hget[SLOT];
    MPI_Win_fence(0, win);
    MPI_Get(dget, SLOT, MPI_INT, next, rank * SLOT, SLOT, MPI_INT, win);
    MPI_Get(hget, SLOT, MPI_INT, next, rank * SLOT, SLOT, MPI_INT, win);
    MPI_Win_fence(0, win);
    int *g = hcopy(dget, SLOT * sizeof(int));
    for (int i = 0; i < SLOT; i++) {
        CHECK(g[i] == pat(rank, next, i), "get into device memory: int %d is %d", i, g[i]);
        CHECK(hget[i] == pat(rank, next, i), "get into host memory: int %d is %d", i, hget[i]);
    }
    free(g);
    dfree(dget);

    /* Accumulate (fence): every rank adds rank + 1 to C[0] of every rank,
     * from a device buffer, and its rank with MPI_MAX to C[1]. */
    int C = 2 * A;
    int one = rank + 1;
    int *done = dcopy(&one, sizeof one);
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; t++) {
        MPI_Accumulate(done, 1, MPI_INT, t, C, 1, MPI_INT, MPI_SUM, win);
        MPI_Accumulate(&rank, 1, MPI_INT, t, C + 1, 1, MPI_INT, MPI_MAX, win);
    }
    MPI_Win_fence(0, win);
    dfree(done);
    int c[8];
    from_dev(c, wmem + C, sizeof c);
    CHECK(c[0] == size * (size + 1) / 2, "accumulate SUM: %d, not %d", c[0], size * (size + 1) / 2);
    CHECK(c[1] == size - 1, "accumulate MAX: %d", c[1]);
    MPI_Win_fence(0, win);

    /* Passive target: fetch-and-op tickets on rank 0's C[2] are distinct;
     * compare-and-swap of 0 -> rank + 1 on C[3] succeeds on one rank. */
    int inc = 1, ticket = -1, old = -1, zero = 0, mine = rank + 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&inc, &ticket, MPI_INT, 0, C + 2, MPI_SUM, win);
    MPI_Compare_and_swap(&mine, &zero, &old, MPI_INT, 0, C + 3, win);
    MPI_Win_unlock(0, win);
    int *tickets = malloc(size * sizeof(int));
    MPI_Allgather(&ticket, 1, MPI_INT, tickets, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int j = i + 1; j < size; j++) CHECK(tickets[i] != tickets[j], "fetch-and-op tickets of ranks %d and %d are both %d", i, j, tickets[i]);
    int won = old == 0, wins = 0;
    MPI_Allreduce(&won, &wins, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(wins == 1, "compare-and-swap succeeded on %d ranks", wins);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        from_dev(c, wmem + C, sizeof c);
        CHECK(c[2] == size, "fetch-and-op: %d, not %d", c[2], size);
        CHECK(c[3] >= 1 && c[3] <= size, "compare-and-swap left %d", c[3]);
    }
    /* Exclusive locks: each rank puts into every target's C[4] in turn. */
    for (int t = 0; t < size; t++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
        int cur = 0;
        MPI_Get(&cur, 1, MPI_INT, t, C + 4, 1, MPI_INT, win);
        MPI_Win_flush(t, win);
        cur += rank + 1;
        MPI_Put(&cur, 1, MPI_INT, t, C + 4, 1, MPI_INT, win);
        MPI_Win_unlock(t, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    from_dev(c, wmem + C, sizeof c);
    CHECK(c[4] == size * (size + 1) / 2, "read-modify-write under exclusive locks: %d", c[4]);
    MPI_Win_free(&win);
    MPI_Type_free(&vec);

    dynamic();
    dfree(wmem);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("gpu_rma ok\n");
    MPI_Finalize();
    return 0;
}
