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
     * atomics (acc_single_intrinsic, set by rma_test_window); the
     * accumulates below are all single elements, as that hint requires. */
    c = rma_test_window(sizeof(Cell), allocate, &win);
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

/* The small operations in a passive epoch (the entry points' fast paths on
 * one node), every op on 4- and 8-byte integers and floats: each origin
 * sets an element of its right-hand neighbour's window by a put, then a
 * fetch-and-op, an accumulate of one and of three elements and a
 * get-accumulate of one and of three, each fetched value and the final
 * contents checked against the op computed here. Then in the same epoch the
 * errors that a fast path leaves to the general one: past the window's end
 * (MPI_ERR_RMA_RANGE), a negative displacement (MPI_ERR_DISP), a rank
 * outside the group (MPI_ERR_RANK), an op that the type does not take
 * (MPI_ERR_OP), and MPI_PROC_NULL (nothing done). */
enum { T_I64, T_U64, T_I32, T_U32, T_F64, T_F32 };
static const MPI_Datatype small_types[] = {MPI_INT64_T, MPI_UINT64_T, MPI_INT, MPI_UNSIGNED, MPI_DOUBLE, MPI_FLOAT};
static const char *small_names[] = {"int64", "uint64", "int", "unsigned", "double", "float"};

/* a op b in double for the float kinds, in int64/uint64 arithmetic for the integer ones */
static double apply_f(MPI_Op op, double a, double b) {
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_REPLACE) return a;
    return b; /* MPI_NO_OP */
}
static int64_t apply_i(MPI_Op op, int64_t a, int64_t b, int is_unsigned) {
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_MAX) return is_unsigned ? ((uint64_t)a > (uint64_t)b ? a : b) : (a > b ? a : b);
    if (op == MPI_MIN) return is_unsigned ? ((uint64_t)a < (uint64_t)b ? a : b) : (a < b ? a : b);
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    if (op == MPI_BXOR) return a ^ b;
    if (op == MPI_LAND) return (a && b);
    if (op == MPI_LOR) return (a || b);
    if (op == MPI_LXOR) return (!a != !b);
    if (op == MPI_REPLACE) return a;
    return b; /* MPI_NO_OP */
}

/* element k of a buffer of type kind t, as int64 (integers) or double */
static int64_t get_i(const void *b, int t, int k) {
    switch (t) {
    case T_I64: return ((const int64_t *)b)[k];
    case T_U64: return (int64_t)((const uint64_t *)b)[k];
    case T_I32: return ((const int32_t *)b)[k];
    default: return ((const uint32_t *)b)[k];
    }
}
static void set_i(void *b, int t, int k, int64_t v) {
    switch (t) {
    case T_I64: ((int64_t *)b)[k] = v; break;
    case T_U64: ((uint64_t *)b)[k] = (uint64_t)v; break;
    case T_I32: ((int32_t *)b)[k] = (int32_t)v; break;
    default: ((uint32_t *)b)[k] = (uint32_t)v; break;
    }
}
static double get_f(const void *b, int t, int k) { return t == T_F64 ? ((const double *)b)[k] : ((const float *)b)[k]; }
static void set_f(void *b, int t, int k, double v) {
    if (t == T_F64) ((double *)b)[k] = v; else ((float *)b)[k] = (float)v;
}
/* wrap an int64 result to the kind's width (the fetched values are read back through it) */
static int64_t wrap(int t, int64_t v) {
    char b[8];
    set_i(b, t, 0, v);
    return get_i(b, t, 0);
}

static void small_ops(int rank, int size) {
    const MPI_Op fops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_REPLACE, MPI_NO_OP};
    const MPI_Op iops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR,
                           MPI_LAND, MPI_LOR, MPI_LXOR, MPI_REPLACE, MPI_NO_OP};
    char *mem;
    MPI_Win win;
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    memset(mem, 0, 64);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    int t = (rank + 1) % size;
    MPI_Win_lock_all(0, win);
    int cases = 0;
    for (int ty = 0; ty < 6; ty++) {
        int isf = ty >= T_F64, esz = (ty == T_I64 || ty == T_U64 || ty == T_F64) ? 8 : 4;
        MPI_Datatype dt = small_types[ty];
        int nops = isf ? 6 : 12;
        for (int o = 0; o < nops; o++) {
            MPI_Op op = isf ? fops[o] : iops[o];
            /* initial target values, the origin's operands (distinct per rank) */
            char init[24], x[24], got[24], now3[24];
            for (int k = 0; k < 3; k++) {
                if (isf) {
                    set_f(init, ty, k, 1.5 + k + rank);
                    set_f(x, ty, k, -0.25 * (k + 1) + rank);
                } else {
                    set_i(init, ty, k, (int64_t)(0x35 + 17 * k + rank));
                    set_i(x, ty, k, (int64_t)((k == 1 ? 0 : 0x1c3) + 5 * rank + k));
                }
            }
            /* expected element k after one op of x on init */
            char after[24];
            for (int k = 0; k < 3; k++) {
                if (isf) set_f(after, ty, k, apply_f(op, get_f(x, ty, k), get_f(init, ty, k)));
                else set_i(after, ty, k, wrap(ty, apply_i(op, get_i(x, ty, k), get_i(init, ty, k), ty == T_U64 || ty == T_U32)));
            }
            /* 1: fetch-and-op of element 0 */
            MPI_Put(init, 3, dt, t, 0, 3, dt, win);
            MPI_Win_flush(t, win);
            memset(got, 0x77, sizeof got);
            int rc = MPI_Fetch_and_op(x, got, dt, t, 0, op, win);
            CHECK(rc == MPI_SUCCESS, "fetch_and_op %s op %d: rc %d", small_names[ty], o, rc);
            MPI_Win_flush(t, win);
            CHECK(memcmp(got, init, esz) == 0, "fetch_and_op %s op %d fetched a wrong value", small_names[ty], o);
            MPI_Get(now3, 3, dt, t, 0, 3, dt, win);
            MPI_Win_flush(t, win);
            CHECK(memcmp(now3, after, esz) == 0 && memcmp(now3 + esz, init + esz, 2 * esz) == 0,
                  "fetch_and_op %s op %d left a wrong value", small_names[ty], o);
            /* 2: get-accumulate of three, 3: accumulate of three (not NO_OP) */
            MPI_Put(init, 3, dt, t, 0, 3, dt, win);
            MPI_Win_flush(t, win);
            memset(got, 0x77, sizeof got);
            rc = MPI_Get_accumulate(x, 3, dt, got, 3, dt, t, 0, 3, dt, op, win);
            CHECK(rc == MPI_SUCCESS, "get_accumulate %s op %d: rc %d", small_names[ty], o, rc);
            MPI_Win_flush(t, win);
            CHECK(memcmp(got, init, 3 * esz) == 0, "get_accumulate of 3 %s op %d fetched wrong values", small_names[ty], o);
            MPI_Get(now3, 3, dt, t, 0, 3, dt, win);
            MPI_Win_flush(t, win);
            CHECK(memcmp(now3, after, 3 * esz) == 0, "get_accumulate of 3 %s op %d left wrong values", small_names[ty], o);
            if (op != MPI_NO_OP) {
                MPI_Put(init, 3, dt, t, 0, 3, dt, win);
                MPI_Win_flush(t, win);
                rc = MPI_Accumulate(x, 1, dt, t, esz, 1, dt, op, win); /* element 1 (disp unit 1) */
                rc |= MPI_Accumulate(x, 3, dt, t, 0, 3, dt, op, win);
                CHECK(rc == MPI_SUCCESS, "accumulate %s op %d: rc %d", small_names[ty], o, rc);
                MPI_Win_flush(t, win);
                MPI_Get(now3, 3, dt, t, 0, 3, dt, win);
                MPI_Win_flush(t, win);
                /* element 1 had x[0] applied first, then x[1] */
                char want1[8];
                if (isf) set_f(want1, ty, 0, apply_f(op, get_f(x, ty, 1), apply_f(op, get_f(x, ty, 0), get_f(init, ty, 1))));
                else {
                    int u = ty == T_U64 || ty == T_U32;
                    set_i(want1, ty, 0, wrap(ty, apply_i(op, get_i(x, ty, 1), wrap(ty, apply_i(op, get_i(x, ty, 0), get_i(init, ty, 1), u)), u)));
                }
                CHECK(memcmp(now3, after, esz) == 0 && memcmp(now3 + esz, want1, esz) == 0 &&
                          memcmp(now3 + 2 * esz, after + 2 * esz, esz) == 0,
                      "accumulate %s op %d left wrong values", small_names[ty], o);
            }
            cases++;
        }
    }
    CHECK(cases == 4 * 12 + 2 * 6, "%d cases", cases);
    /* errors in the passive epoch */
    int64_t one = 1, old = 0;
    double d = 1;
    int cls;
    MPI_Error_class(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, 60, MPI_SUM, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "fetch_and_op past the end: class %d", cls);
    MPI_Error_class(MPI_Accumulate(&d, 1, MPI_DOUBLE, t, 57, 1, MPI_DOUBLE, MPI_SUM, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "accumulate across the end: class %d", cls);
    MPI_Error_class(MPI_Get_accumulate(&d, 1, MPI_DOUBLE, &d, 1, MPI_DOUBLE, t, -1, 1, MPI_DOUBLE, MPI_SUM, win), &cls);
    CHECK(cls == MPI_ERR_DISP, "get_accumulate at a negative disp: class %d", cls);
    MPI_Error_class(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, size, 0, MPI_SUM, win), &cls);
    CHECK(cls == MPI_ERR_RANK, "fetch_and_op on rank = size: class %d", cls);
    MPI_Error_class(MPI_Fetch_and_op(&d, &d, MPI_DOUBLE, t, 0, MPI_BXOR, win), &cls);
    CHECK(cls == MPI_ERR_OP, "bxor on a double: class %d", cls);
    MPI_Error_class(MPI_Accumulate(&d, 1, MPI_DOUBLE, t, 0, 1, MPI_DOUBLE, MPI_LAND, win), &cls);
    CHECK(cls == MPI_ERR_OP, "land on a double: class %d", cls);
    old = 42;
    CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, MPI_PROC_NULL, 0, MPI_SUM, win) == MPI_SUCCESS && old == 42,
          "fetch_and_op on MPI_PROC_NULL");
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
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
    small_ops(rank, size);
    MPI_Finalize();
    if (rank == 0) printf("rma_passive ok\n");
    return 0;
}
