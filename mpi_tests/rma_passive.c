/* Passive target makes progress while the target computes and makes no MPI
 * call: rank 0 spins on its own window memory (no MPI call) until every
 * origin's accumulates have landed. The origins' accumulates run
 * concurrently under shared locks, so they are also a check of
 * element-wise atomicity: int64 (CPU atomics on allocated windows), double
 * and short (the accumulate mutex), and fetch_and_op, whose fetched values
 * must all be distinct. */
#include "util.h"
#include <sched.h>
#include <stdint.h>
#include <time.h>

#define ITERS 300

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef struct {
    int64_t count;  /* int64 sums */
    double dsum;    /* double sums */
    int64_t ticket; /* fetch_and_op */
    short ssum;     /* short sums */
    short pad[3];
} Cell;

static void run(int rank, int size, int allocate) {
    MPI_Win win;
    Cell *c;
    /* RMA_TEST_INTRINSIC=1: single-element accumulates as the fabric's
     * atomics (acc_single_intrinsic); the accumulates below are all single
     * elements, as that hint requires. */
    MPI_Info info = MPI_INFO_NULL;
    if (getenv("RMA_TEST_INTRINSIC")) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "acc_single_intrinsic", "true");
    }
    if (allocate) {
        MPI_Win_allocate(sizeof(Cell), 1, info, MPI_COMM_WORLD, &c, &win);
    } else {
        c = malloc(sizeof(Cell));
        MPI_Win_create(c, sizeof(Cell), 1, info, MPI_COMM_WORLD, &win);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    memset(c, 0, sizeof *c);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t want = (int64_t)(size - 1) * ITERS;
    int64_t *tickets = malloc(sizeof(int64_t) * ITERS);
    if (rank == 0) {
        /* compute: no MPI call until the origins are done */
        double t0 = now();
        volatile int64_t *cnt = &c->count;
        long spins = 0;
        while (__atomic_load_n(cnt, __ATOMIC_ACQUIRE) < want) {
            if (++spins % 1024 == 0) {
                sched_yield();
                CHECK(now() - t0 < 60, "%s: no passive-target progress: count %lld of %lld after 60 s",
                      allocate ? "allocate" : "create", (long long)*cnt, (long long)want);
            }
        }
    } else {
        int64_t one = 1;
        double d = 1.0;
        short s = 1;
        MPI_Win_lock_all(0, win);
        for (int i = 0; i < ITERS; i++) {
            MPI_Fetch_and_op(&one, &tickets[i], MPI_INT64_T, 0, offsetof(Cell, ticket), MPI_SUM, win);
            MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, offsetof(Cell, dsum), 1, MPI_DOUBLE, MPI_SUM, win);
            MPI_Accumulate(&s, 1, MPI_SHORT, 0, offsetof(Cell, ssum), 1, MPI_SHORT, MPI_SUM, win);
            /* the count last: when the target sees it complete, all else is in */
            MPI_Win_flush(0, win);
            MPI_Accumulate(&one, 1, MPI_INT64_T, 0, offsetof(Cell, count), 1, MPI_INT64_T, MPI_SUM, win);
        }
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        CHECK(c->count == want, "count %lld, want %lld", (long long)c->count, (long long)want);
        CHECK(c->dsum == (double)want, "double sum %g, want %lld (lost updates)", c->dsum, (long long)want);
        CHECK(c->ssum == (short)want, "short sum %d, want %lld (lost updates)", c->ssum, (long long)want);
        CHECK(c->ticket == want, "tickets %lld, want %lld", (long long)c->ticket, (long long)want);
        MPI_Win_unlock(0, win);
    }
    /* every fetched ticket distinct: 0 .. want-1 once each */
    int64_t *all = rank == 0 ? malloc(sizeof(int64_t) * ITERS * size) : NULL;
    MPI_Gather(tickets, ITERS, MPI_INT64_T, all, ITERS, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char *seen = calloc(want, 1);
        for (long i = ITERS; i < (long)ITERS * size; i++) {
            int64_t t = all[i];
            CHECK(t >= 0 && t < want && !seen[t], "fetch_and_op ticket %lld repeated or out of range",
                  (long long)t);
            seen[t] = 1;
        }
        free(seen);
        free(all);
    }
    free(tickets);
    MPI_Win_free(&win);
    if (!allocate) free(c);
}

/* Many small puts in one passive epoch (across nodes they are gathered
 * into requests of up to 64 segments): every rank puts 300 single ints,
 * in a scattered order, into its own column of every other rank's window,
 * then flushes, and gets them back one by one (across nodes the answers
 * are waited for by the flush); a put followed (after a flush) by an
 * accumulate and a get-accumulate on one element; the owner checks every
 * value. */
static void small_puts(int rank, int size) {
    enum { N = 300 };
    int *mem;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)size * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < size * N; i++) mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < size; t++) {
        if (t == rank) continue;
        for (int k = 0; k < N; k++) {
            int i = (k * 7) % N; /* 7 and 300 are coprime: each i once */
            int v = rank * 100000 + t * 1000 + i;
            MPI_Put(&v, 1, MPI_INT, t, rank * N + i, 1, MPI_INT, win);
        }
        MPI_Win_flush(t, win);
        /* Many small gets, all waited for by one flush. */
        int got[N];
        for (int k = 0; k < N; k++) got[k] = -2;
        for (int k = 0; k < N; k++) {
            int i = (k * 7) % N;
            MPI_Get(&got[i], 1, MPI_INT, t, rank * N + i, 1, MPI_INT, win);
        }
        MPI_Win_flush(t, win);
        for (int i = 0; i < N; i++)
            CHECK(got[i] == rank * 100000 + t * 1000 + i, "small get %d from rank %d: %d", i, t, got[i]);
        int add = 5, before = 0;
        MPI_Accumulate(&add, 1, MPI_INT, t, rank * N, 1, MPI_INT, MPI_SUM, win);
        MPI_Get_accumulate(&add, 1, MPI_INT, &before, 1, MPI_INT, t, rank * N + 1, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_flush(t, win);
        CHECK(before == rank * 100000 + t * 1000 + 1, "get-accumulate after small puts to rank %d: %d", t, before);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int o = 0; o < size; o++)
        for (int i = 0; i < N; i++) {
            int want = o == rank ? -1 : o * 100000 + rank * 1000 + i + (i < 2 ? 5 : 0);
            CHECK(mem[o * N + i] == want, "small puts from rank %d: int %d is %d, not %d", o, i, mem[o * N + i], want);
        }
    MPI_Win_free(&win);
}

/* Large transfers (256 KiB): a put into the next rank, a get of it back,
 * and a get-accumulate (MPI_NO_OP) fetching it (across nodes the large
 * answers come by UCX's rendezvous). */
static void large(int rank, int size) {
    enum { M = 65536 };
    int *mem, *src = malloc(M * sizeof(int)), *got = malloc(M * sizeof(int));
    MPI_Win win;
    MPI_Win_allocate(M * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    int t = (rank + 1) % size;
    for (int i = 0; i < M; i++) src[i] = rank * 1000003 + i;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
    MPI_Put(src, M, MPI_INT, t, 0, M, MPI_INT, win);
    MPI_Win_flush(t, win);
    for (int i = 0; i < M; i++) got[i] = -1;
    MPI_Get(got, M, MPI_INT, t, 0, M, MPI_INT, win);
    MPI_Win_flush(t, win);
    for (int i = 0; i < M; i++) CHECK(got[i] == src[i], "large get from rank %d: int %d is %d", t, i, got[i]);
    for (int i = 0; i < M; i++) got[i] = -1;
    MPI_Get_accumulate(NULL, 0, MPI_INT, got, M, MPI_INT, t, 0, M, MPI_INT, MPI_NO_OP, win);
    MPI_Win_unlock(t, win);
    for (int i = 0; i < M; i++) CHECK(got[i] == src[i], "large fetch from rank %d: int %d is %d", t, i, got[i]);
    MPI_Win_free(&win);
    free(src);
    free(got);
}

/* A target datatype of 5000 blocks (a vector of single ints at stride 2):
 * put, get and accumulate with it into the next rank. Across nodes each is
 * one request whose segment list (80 KB) is longer than a UCX header may
 * be: it must travel in the request's data (UCX aborts the process on a
 * header longer than a fragment). */
static void many_segments(int rank, int size) {
    enum { B = 5000 };
    int *mem, *src = malloc(B * sizeof(int)), *got = malloc(B * sizeof(int));
    MPI_Win win;
    MPI_Win_allocate(2 * B * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < 2 * B; i++) mem[i] = -1;
    MPI_Datatype v;
    MPI_Type_vector(B, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    for (int i = 0; i < B; i++) src[i] = rank * 1000000 + i;
    MPI_Barrier(MPI_COMM_WORLD);
    int t = (rank + 1) % size, p = (rank + size - 1) % size;
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    MPI_Put(src, B, MPI_INT, t, 0, 1, v, win);
    MPI_Win_flush(t, win);
    MPI_Get(got, B, MPI_INT, t, 0, 1, v, win);
    MPI_Win_flush(t, win);
    MPI_Accumulate(src, B, MPI_INT, t, 0, 1, v, MPI_SUM, win);
    MPI_Win_unlock(t, win);
    for (int i = 0; i < B; i++) CHECK(got[i] == src[i], "get of 5000 blocks: int %d is %d", i, got[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < B; i++) {
        CHECK(mem[2 * i] == 2 * (p * 1000000 + i), "put and accumulate of 5000 blocks: int %d is %d", 2 * i, mem[2 * i]);
        CHECK(mem[2 * i + 1] == -1, "a gap of the vector was written: int %d is %d", 2 * i + 1, mem[2 * i + 1]);
    }
    MPI_Type_free(&v);
    MPI_Win_free(&win);
    free(src);
    free(got);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    run(rank, size, 1);
    run(rank, size, 0);
    small_puts(rank, size);
    large(rank, size);
    many_segments(rank, size);
    MPI_Finalize();
    if (rank == 0) printf("rma_passive ok\n");
    return 0;
}
