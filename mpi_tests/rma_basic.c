/* One-sided communication on every window flavor: put, get, accumulate,
 * get_accumulate, fetch_and_op, compare_and_swap and the request-based forms
 * under fence, post/start/complete/wait, lock/unlock and lock_all, with
 * predefined and derived datatypes; attributes, name, group, info. */
#include "util.h"
#include <stdint.h>

#define SLOT 8 /* ints per origin in each window */
static int rank, size;
/* All ranks share one node (else shared windows are not made, and dynamic
 * windows are also checked for their across-node errors). */
static int one_node;

enum { CREATE, ALLOCATE, SHARED, DYNAMIC, NFLAVORS };
static const char *fname[] = {"create", "allocate", "shared", "dynamic"};

/* A window of `n` ints on every rank, filled with -1; for dynamic windows
 * `disp[t]` is where rank t's memory is (its address), else 0. */
typedef struct {
    MPI_Win win;
    int *mem;
    MPI_Aint disp[64];
    int flavor;
} W;

static void make(W *w, int flavor, int n) {
    MPI_Aint bytes = (MPI_Aint)n * sizeof(int);
    w->flavor = flavor;
    for (int i = 0; i < size; i++) w->disp[i] = 0;
    switch (flavor) {
    case CREATE:
        w->mem = malloc(bytes);
        MPI_Win_create(w->mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        break;
    case ALLOCATE:
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win);
        break;
    case SHARED:
        MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win);
        break;
    case DYNAMIC: {
        w->mem = malloc(bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->mem, bytes);
        MPI_Aint a;
        MPI_Get_address(w->mem, &a);
        MPI_Allgather(&a, 1, MPI_AINT, w->disp, 1, MPI_AINT, MPI_COMM_WORLD);
        break;
    }
    }
    for (int i = 0; i < n; i++) w->mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Displacement of int `i` at target `t` (in the window's units). */
static MPI_Aint at(W *w, int t, int i) {
    return w->flavor == DYNAMIC ? w->disp[t] + (MPI_Aint)i * sizeof(int) : i;
}

static void drop(W *w) {
    if (w->flavor == DYNAMIC) MPI_Win_detach(w->win, w->mem);
    MPI_Win_free(&w->win);
    CHECK(w->win == MPI_WIN_NULL, "MPI_Win_free left the handle");
    if (w->flavor == CREATE || w->flavor == DYNAMIC) free(w->mem);
}

static int val(int origin, int target, int k) { return origin * 1000 + target * 10 + k; }

static void fence_put_get(int flavor) {
    W w;
    make(&w, flavor, SLOT * size);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win);
    int src[SLOT];
    for (int t = 0; t < size; t++) {
        for (int k = 0; k < SLOT; k++) src[k] = val(rank, t, k);
        MPI_Put(src, SLOT, MPI_INT, t, at(&w, t, rank * SLOT), SLOT, MPI_INT, w.win);
    }
    MPI_Win_fence(0, w.win);
    for (int s = 0; s < size; s++)
        for (int k = 0; k < SLOT; k++)
            CHECK(w.mem[s * SLOT + k] == val(s, rank, k), "%s fence put: mem[%d] = %d, want %d",
                  fname[flavor], s * SLOT + k, w.mem[s * SLOT + k], val(s, rank, k));
    /* get every target's whole window back */
    int *got = malloc(sizeof(int) * SLOT * size);
    for (int t = 0; t < size; t++) {
        MPI_Get(got, SLOT * size, MPI_INT, t, at(&w, t, 0), SLOT * size, MPI_INT, w.win);
        MPI_Win_fence(0, w.win);
        for (int s = 0; s < size; s++)
            for (int k = 0; k < SLOT; k++)
                CHECK(got[s * SLOT + k] == val(s, t, k), "%s fence get from %d: [%d] = %d, want %d",
                      fname[flavor], t, s * SLOT + k, got[s * SLOT + k], val(s, t, k));
    }
    /* derived types: every second int of the origin into 4 ints at the
     * target with stride 2 from my slot's start */
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int o8[8];
    for (int k = 0; k < 8; k++) o8[k] = 7000 + rank * 10 + k;
    int t = (rank + 1) % size;
    MPI_Put(o8, 1, vec, t, at(&w, t, rank * SLOT), 1, vec, w.win);
    MPI_Win_fence(0, w.win);
    int s = (rank + size - 1) % size;
    for (int k = 0; k < 8; k++) {
        int want = (k % 2 == 0) ? 7000 + s * 10 + k : val(s, rank, k);
        CHECK(w.mem[s * SLOT + k] == want, "%s vector put: [%d] = %d, want %d", fname[flavor], k,
              w.mem[s * SLOT + k], want);
    }
    MPI_Win_fence(0, w.win); /* the checks above read what the next put writes */
    /* a contiguous origin of 4 into the vector target, then get it back as vector into contiguous */
    int c4[4] = {rank, rank + 1, rank + 2, rank + 3}, back[4] = {0};
    MPI_Put(c4, 4, MPI_INT, t, at(&w, t, rank * SLOT + 1), 1, vec, w.win);
    MPI_Win_fence(0, w.win);
    MPI_Get(back, 4, MPI_INT, t, at(&w, t, rank * SLOT + 1), 1, vec, w.win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win);
    for (int k = 0; k < 4; k++) CHECK(back[k] == rank + k, "%s vector get: [%d] = %d", fname[flavor], k, back[k]);
    MPI_Type_free(&vec);
    free(got);
    drop(&w);
}

static void accumulates(int flavor) {
    W w;
    make(&w, flavor, SLOT * size);
    for (int i = 0; i < SLOT * size; i++) w.mem[i] = 0;
    MPI_Win_fence(0, w.win);
    int one[2] = {rank + 1, 2 * (rank + 1)};
    for (int t = 0; t < size; t++) {
        MPI_Accumulate(one, 2, MPI_INT, t, at(&w, t, 0), 2, MPI_INT, MPI_SUM, w.win);
        MPI_Accumulate(&rank, 1, MPI_INT, t, at(&w, t, 2), 1, MPI_INT, MPI_MAX, w.win);
        MPI_Accumulate(&rank, 1, MPI_INT, t, at(&w, t, 3), 1, MPI_INT, MPI_BOR, w.win);
    }
    MPI_Win_fence(0, w.win);
    int tri = size * (size + 1) / 2, bor = 0;
    for (int r = 0; r < size; r++) bor |= r;
    CHECK(w.mem[0] == tri && w.mem[1] == 2 * tri, "%s acc sum: %d %d, want %d %d", fname[flavor], w.mem[0],
          w.mem[1], tri, 2 * tri);
    CHECK(w.mem[2] == size - 1, "%s acc max: %d", fname[flavor], w.mem[2]);
    CHECK(w.mem[3] == bor, "%s acc bor: %d, want %d", fname[flavor], w.mem[3], bor);
    /* REPLACE from rank 0 only, then get_accumulate NO_OP reads it */
    if (rank == 0)
        for (int t = 0; t < size; t++) {
            int v = 4242 + t;
            MPI_Accumulate(&v, 1, MPI_INT, t, at(&w, t, 4), 1, MPI_INT, MPI_REPLACE, w.win);
        }
    MPI_Win_fence(0, w.win);
    int t = (rank + 1) % size, r0 = -5;
    MPI_Get_accumulate(NULL, 0, MPI_INT, &r0, 1, MPI_INT, t, at(&w, t, 4), 1, MPI_INT, MPI_NO_OP, w.win);
    MPI_Win_fence(0, w.win);
    CHECK(r0 == 4242 + t, "%s get_accumulate no_op: %d", fname[flavor], r0);
    /* fetch_and_op: each rank adds 1 to target 0's element 5, fetched values distinct */
    int inc = 1, old = -1;
    MPI_Fetch_and_op(&inc, &old, MPI_INT, 0, at(&w, 0, 5), MPI_SUM, w.win);
    MPI_Win_fence(0, w.win);
    int *olds = malloc(sizeof(int) * size);
    MPI_Allgather(&old, 1, MPI_INT, olds, 1, MPI_INT, MPI_COMM_WORLD);
    long seen = 0;
    for (int r = 0; r < size; r++) {
        CHECK(olds[r] >= 0 && olds[r] < size, "%s fetch_and_op old %d", fname[flavor], olds[r]);
        seen |= 1L << olds[r];
    }
    CHECK(seen == (1L << size) - 1, "%s fetch_and_op values not distinct", fname[flavor]);
    if (rank == 0) CHECK(w.mem[5] == size, "%s fetch_and_op total %d", fname[flavor], w.mem[5]);
    /* compare_and_swap: element 6 starts 0; exactly one rank swaps in its rank+1 */
    int mine = rank + 1, zero = 0, was = -1;
    MPI_Compare_and_swap(&mine, &zero, &was, MPI_INT, 0, at(&w, 0, 6), w.win);
    MPI_Win_fence(0, w.win);
    int won = (was == 0), wins;
    MPI_Allreduce(&won, &wins, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(wins == 1, "%s compare_and_swap: %d winners", fname[flavor], wins);
    if (rank == 0) CHECK(w.mem[6] >= 1 && w.mem[6] <= size, "%s cas value %d", fname[flavor], w.mem[6]);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win);
    free(olds);
    drop(&w);

    /* other basic types in windows of bytes: double (sum), int64 (sum, min),
     * short (sum), through the shared-word atomics or the mutex */
    MPI_Win wb;
    char *mem;
    MPI_Aint bytes = 64;
    if (flavor == CREATE || flavor == DYNAMIC) {
        mem = calloc(1, bytes);
        MPI_Win_create(mem, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wb);
    } else if (flavor == ALLOCATE) {
        MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &wb);
        memset(mem, 0, bytes);
    } else {
        MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &wb);
        memset(mem, 0, bytes);
    }
    int64_t big = (int64_t)1 << 60;
    memcpy(mem + 24, &big, 8);
    MPI_Win_fence(0, wb);
    double d = 0.5 * (rank + 1);
    int64_t l = (int64_t)1 << (40 + rank % 8), lm = 100 - rank;
    short sh = (short)(rank + 1);
    for (int t = 0; t < size; t++) {
        MPI_Accumulate(&d, 1, MPI_DOUBLE, t, 0, 1, MPI_DOUBLE, MPI_SUM, wb);
        MPI_Accumulate(&l, 1, MPI_INT64_T, t, 8, 1, MPI_INT64_T, MPI_SUM, wb);
        MPI_Accumulate(&sh, 1, MPI_SHORT, t, 16, 1, MPI_SHORT, MPI_SUM, wb);
        MPI_Accumulate(&lm, 1, MPI_INT64_T, t, 24, 1, MPI_INT64_T, MPI_MIN, wb);
    }
    MPI_Win_fence(0, wb);
    double dw = 0.5 * tri;
    int64_t lw = 0;
    for (int r = 0; r < size; r++) lw += (int64_t)1 << (40 + r % 8);
    double dg;
    int64_t lg, mg;
    short sg;
    memcpy(&dg, mem, 8);
    memcpy(&lg, mem + 8, 8);
    memcpy(&sg, mem + 16, 2);
    memcpy(&mg, mem + 24, 8);
    CHECK(dg == dw, "%s double sum %g, want %g", fname[flavor], dg, dw);
    CHECK(lg == lw, "%s int64 sum %lld, want %lld", fname[flavor], (long long)lg, (long long)lw);
    CHECK(sg == tri, "%s short sum %d", fname[flavor], sg);
    CHECK(mg == 100 - (size - 1), "%s int64 min %lld", fname[flavor], (long long)mg);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, wb);
    MPI_Win_free(&wb);
    if (flavor == CREATE || flavor == DYNAMIC) free(mem);
}

static void pscw(int flavor) {
    W w;
    make(&w, flavor, SLOT * size);
    MPI_Group world, left, right;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int l = (rank + size - 1) % size, r = (rank + 1) % size;
    MPI_Group_incl(world, 1, &l, &left);
    MPI_Group_incl(world, 1, &r, &right);
    for (int round = 0; round < 3; round++) {
        MPI_Win_post(left, 0, w.win);
        MPI_Win_start(right, 0, w.win);
        int v[2] = {val(rank, r, round), -round};
        MPI_Put(v, 2, MPI_INT, r, at(&w, r, 0), 2, MPI_INT, w.win);
        MPI_Win_complete(w.win);
        if (round == 1) {
            int flag = 0;
            for (long i = 0; !flag; i++) MPI_Win_test(w.win, &flag);
        } else {
            MPI_Win_wait(w.win);
        }
        CHECK(w.mem[0] == val(l, rank, round) && w.mem[1] == -round, "%s pscw round %d: got %d %d",
              fname[flavor], round, w.mem[0], w.mem[1]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Group_free(&left);
    MPI_Group_free(&right);
    MPI_Group_free(&world);
    drop(&w);
}

static void passive(int flavor) {
    W w;
    make(&w, flavor, SLOT * size);
    for (int i = 0; i < SLOT * size; i++) w.mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    /* exclusive lock: read-modify-write of a counter at rank 0, 20 times each */
    for (int it = 0; it < 20; it++) {
        int c;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win);
        MPI_Get(&c, 1, MPI_INT, 0, at(&w, 0, 0), 1, MPI_INT, w.win);
        MPI_Win_flush(0, w.win);
        c++;
        MPI_Put(&c, 1, MPI_INT, 0, at(&w, 0, 0), 1, MPI_INT, w.win);
        MPI_Win_unlock(0, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win);
        int c = w.mem[0];
        MPI_Win_unlock(0, w.win);
        CHECK(c == 20 * size, "%s exclusive counter %d, want %d", fname[flavor], c, 20 * size);
    }
    /* lock_all with request-based operations */
    MPI_Win_lock_all(0, w.win);
    MPI_Request rq[3];
    int t = (rank + 1) % size, v = val(rank, t, 9), g = -1, acc = 3, old = -1;
    MPI_Rput(&v, 1, MPI_INT, t, at(&w, t, 1), 1, MPI_INT, w.win, &rq[0]);
    MPI_Raccumulate(&acc, 1, MPI_INT, t, at(&w, t, 2), 1, MPI_INT, MPI_SUM, w.win, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_flush_all(w.win);
    MPI_Rget(&g, 1, MPI_INT, t, at(&w, t, 1), 1, MPI_INT, w.win, &rq[0]);
    MPI_Rget_accumulate(&acc, 1, MPI_INT, &old, 1, MPI_INT, t, at(&w, t, 2), 1, MPI_INT, MPI_SUM, w.win, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_flush_local_all(w.win);
    MPI_Win_unlock_all(w.win);
    CHECK(g == val(rank, t, 9), "%s rget %d", fname[flavor], g);
    CHECK(old == 3, "%s rget_accumulate old %d", fname[flavor], old);
    MPI_Barrier(MPI_COMM_WORLD);
    int l = (rank + size - 1) % size;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w.win);
    MPI_Win_sync(w.win);
    CHECK(w.mem[1] == val(l, rank, 9) && w.mem[2] == 6, "%s lock_all results %d %d", fname[flavor], w.mem[1],
          w.mem[2]);
    MPI_Win_unlock(rank, w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    drop(&w);
}

static int deleted = 0;
static int del_fn(MPI_Win win, int kv, void *val, void *extra) {
    (void)win; (void)kv; (void)extra;
    deleted += *(int *)val;
    return MPI_SUCCESS;
}

static void queries(void) {
    int *mem;
    MPI_Win win;
    MPI_Aint bytes = (rank + 1) * 12;
    MPI_Win_allocate_shared(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    void *base;
    MPI_Aint *sz;
    int *du, *fl, *model, flag;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == mem, "MPI_WIN_BASE %p, want %p", base, (void *)mem);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag);
    CHECK(flag && *sz == bytes, "MPI_WIN_SIZE %ld", (long)*sz);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag);
    CHECK(flag && *du == 4, "MPI_WIN_DISP_UNIT %d", *du);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &fl, &flag);
    CHECK(flag && *fl == MPI_WIN_FLAVOR_SHARED, "MPI_WIN_CREATE_FLAVOR %d", *fl);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED, "MPI_WIN_MODEL %d", *model);
    /* contiguous by default: each rank's memory right after the one before */
    char *prev = NULL;
    for (int r = 0; r < size; r++) {
        MPI_Aint s;
        int u;
        char *p;
        MPI_Win_shared_query(win, r, &s, &u, &p);
        CHECK(s == (r + 1) * 12 && u == 4, "shared_query(%d): size %ld unit %d", r, (long)s, u);
        if (prev) CHECK(p == prev + r * 12, "shared_query(%d) not contiguous: %p after %p", r, p, prev);
        prev = p;
        if (r == rank) CHECK(p == (char *)mem, "shared_query(me) %p != %p", p, (void *)mem);
    }
    /* load/store through the neighbour's pointer */
    MPI_Win_lock_all(0, win);
    int right = (rank + 1) % size;
    MPI_Aint s;
    int u;
    int *rp;
    MPI_Win_shared_query(win, right, &s, &u, &rp);
    rp[0] = 555 + rank;
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    CHECK(mem[0] == 555 + (rank + size - 1) % size, "store through shared_query: %d", mem[0]);
    MPI_Win_unlock_all(win);
    /* name, group, info */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 0, "default window name '%s'", name);
    MPI_Win_set_name(win, "halo");
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 4 && !strcmp(name, "halo"), "window name '%s'", name);
    MPI_Group g, wg;
    int cmp;
    MPI_Win_get_group(win, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group compare %d", cmp);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Info info;
    char v[64];
    MPI_Win_get_info(win, &info);
    MPI_Info_get(info, "accumulate_ordering", sizeof v, v, &flag);
    CHECK(flag && !strcmp(v, "rar,raw,war,waw"), "accumulate_ordering '%s'", v);
    MPI_Info_free(&info);
    /* keyval with a delete callback, run at MPI_Win_free */
    int kv, x = 5;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, del_fn, &kv, NULL);
    MPI_Win_set_attr(win, kv, &x);
    int *xp;
    MPI_Win_get_attr(win, kv, &xp, &flag);
    CHECK(flag && xp == &x, "user attribute");
    MPI_Win_free(&win);
    CHECK(deleted == 5, "delete callback ran %d", deleted);
    MPI_Win_free_keyval(&kv);

    /* noncontiguous: every rank's memory on its own page */
    MPI_Info nc;
    MPI_Info_create(&nc);
    MPI_Info_set(nc, "alloc_shared_noncontig", "true");
    MPI_Win_allocate_shared(bytes, 4, nc, MPI_COMM_WORLD, &mem, &win);
    MPI_Info_free(&nc);
    for (int r = 0; r < size; r++) {
        char *p;
        MPI_Win_shared_query(win, r, &s, &u, &p);
        CHECK(((uintptr_t)p & 4095) == 0, "noncontig base %p not page aligned", p);
    }
    MPI_Win_free(&win);
}

/* Across nodes, a dynamic window reaches what ranks on other nodes
 * attached, and only that: a put to an address not attached there, and
 * one to memory detached since, fail with MPI_ERR_RMA_RANGE; get,
 * accumulate and fetch-and-op reach the attached memory. */
/* On one node, a dynamic window's other ranks check their operations
 * against the regions the target attached (its table in the window's
 * segment): a put to memory the target has mapped but not attached, or
 * has detached since, fails with MPI_ERR_RMA_RANGE and leaves it alone. */
static void dynamic_bounds(void) {
    if (!one_node || size < 2) return;
    MPI_Win win;
    static int mem[4], other[4];
    int v = 99, cls;
    for (int i = 0; i < 4; i++) mem[i] = other[i] = -1;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, mem, sizeof mem);
    MPI_Aint mine[2], all[128];
    MPI_Get_address(mem, &mine[0]);
    MPI_Get_address(other, &mine[1]);
    MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    int t = (rank + 1) % size;
    MPI_Win_lock_all(0, win);
    MPI_Error_class(MPI_Put(&v, 1, MPI_INT, t, all[2 * t + 1], 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put to memory rank %d did not attach: class %d", t, cls);
    int two[2] = {7, 7};
    MPI_Error_class(MPI_Put(two, 2, MPI_INT, t, all[2 * t] + 3 * sizeof(int), 2, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put past rank %d's attached region: class %d", t, cls);
    MPI_Put(&v, 1, MPI_INT, t, all[2 * t] + sizeof(int), 1, MPI_INT, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[1] == 99 && mem[0] == -1 && mem[3] == -1, "dynamic put into the attached region: %d %d %d", mem[0], mem[1], mem[3]);
    for (int i = 0; i < 4; i++) CHECK(other[i] == -1, "memory not attached was written: other[%d] = %d", i, other[i]);
    MPI_Win_detach(win, mem);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    MPI_Error_class(MPI_Put(&v, 1, MPI_INT, t, all[2 * t], 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put to memory rank %d detached: class %d", t, cls);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[0] == -1, "detached memory was written: %d", mem[0]);
    /* More regions than the table's 255 slots at once: the table
     * overflows (only the kernel's copy checks then); after detaches bring
     * them back within the slots, a put to detached memory, still mapped,
     * is refused again. */
    enum { MANY = 260 };
    static int many[MANY][2];
    for (int i = 0; i < MANY; i++) {
        many[i][0] = many[i][1] = -1;
        MPI_Win_attach(win, many[i], sizeof(int));
    }
    for (int i = 0; i < 10; i++) MPI_Win_detach(win, many[i]);
    MPI_Get_address(many[0], &mine[0]);
    MPI_Get_address(many[MANY - 1], &mine[1]);
    MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    MPI_Error_class(MPI_Put(&v, 1, MPI_INT, t, all[2 * t], 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put to rank %d's region detached after an overflow: class %d", t, cls);
    MPI_Put(&v, 1, MPI_INT, t, all[2 * t + 1], 1, MPI_INT, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(many[0][0] == -1, "a region detached after an overflow was written: %d", many[0][0]);
    CHECK(many[MANY - 1][0] == 99, "a put into the last attached region: %d", many[MANY - 1][0]);
    for (int i = 10; i < MANY; i++) MPI_Win_detach(win, many[i]);
    MPI_Win_free(&win);
}

static void dynamic_across(void) {
    MPI_Win win;
    int mem[2] = {0, 0}, v = 7, cls;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, mem, sizeof mem);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Aint a;
    MPI_Get_address(mem, &a);
    MPI_Win_lock_all(0, win);
    MPI_Put(&v, 1, MPI_INT, rank, a, 1, MPI_INT, win);
    MPI_Win_flush(rank, win);
    CHECK(mem[0] == 7, "put to self in a dynamic window: %d", mem[0]);
    /* the first rank on another node */
    MPI_Comm node;
    MPI_Group wg, ng;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(node, &ng);
    int other = -1;
    for (int r = 0; r < size && other < 0; r++) {
        int in;
        MPI_Group_translate_ranks(wg, 1, &r, ng, &in);
        if (in == MPI_UNDEFINED) other = r;
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    MPI_Comm_free(&node);
    CHECK(other >= 0, "no rank on another node");
    MPI_Aint all[64];
    MPI_Allgather(&a, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_Error_class(MPI_Put(&v, 1, MPI_INT, other, 8, 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put across nodes to address 8: class %d", cls);
    /* The second int of `other`'s memory: one past its end is refused. */
    int two[2] = {7, 7};
    MPI_Error_class(MPI_Put(two, 2, MPI_INT, other, all[other] + 4, 2, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put across nodes past the attached region: class %d", cls);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Every rank adds its rank + 1 to mem[1] of every other rank; a get
     * and a fetch-and-op read what is there. */
    MPI_Win_lock_all(0, win);
    for (int r = 0; r < size; r++) {
        int add = rank + 1;
        MPI_Accumulate(&add, 1, MPI_INT, r, all[r] + 4, 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[1] == size * (size + 1) / 2, "dynamic accumulates across nodes: %d", mem[1]);
    MPI_Win_lock(MPI_LOCK_SHARED, other, 0, win);
    int got = -1, old = -1, one = 1;
    MPI_Get(&got, 1, MPI_INT, other, all[other] + 4, 1, MPI_INT, win);
    MPI_Win_flush(other, win);
    CHECK(got == size * (size + 1) / 2, "dynamic get across nodes: %d", got);
    MPI_Fetch_and_op(&one, &old, MPI_INT, other, all[other], MPI_NO_OP, win);
    MPI_Win_unlock(other, win);
    CHECK(old == 7, "dynamic fetch-and-op across nodes: %d", old);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_detach(win, mem);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    MPI_Error_class(MPI_Put(&v, 1, MPI_INT, other, all[other], 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "dynamic put across nodes to detached memory: class %d", cls);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

static int handler_calls = 0, handler_class = 0;
/* Accumulates, fetch-and-op and compare-and-swap on int and double
 * elements at unaligned and aligned addresses of an MPI_Win_allocate window
 * with disp_unit 1, from every rank at once under lock_all: the aligned
 * integers take the CPU's atomics, the rest the target's mutex; every
 * element ends with every rank's contribution, and the fetched tickets
 * are distinct. */
static void unaligned(void) {
    char *mem;
    MPI_Win win;
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    memset(mem, 0, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    int one = 1, tk[2] = {-1, -1}, old = -1, me = rank + 1, zero = 0;
    double d = 0.5;
    for (int rep = 0; rep < 10; rep++) {
        MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win);
        MPI_Accumulate(&one, 1, MPI_INT, 0, 8, 1, MPI_INT, MPI_SUM, win);
        MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, 17, 1, MPI_DOUBLE, MPI_SUM, win);
        MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, 32, 1, MPI_DOUBLE, MPI_SUM, win);
    }
    MPI_Fetch_and_op(&one, &tk[0], MPI_INT, 0, 41, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &tk[1], MPI_INT, 0, 48, MPI_SUM, win);
    MPI_Compare_and_swap(&me, &zero, &old, MPI_INT, 0, 53, win);
    MPI_Win_unlock_all(win);
    int *all = malloc(2 * size * sizeof(int));
    MPI_Allgather(tk, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int j = i + 1; j < size; j++)
            CHECK(all[2 * i] != all[2 * j] && all[2 * i + 1] != all[2 * j + 1], "fetch-and-op tickets of ranks %d and %d agree: %d %d", i, j, all[2 * i], all[2 * j]);
    free(all);
    int won = old == 0, wins = 0;
    MPI_Allreduce(&won, &wins, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(wins == 1, "compare-and-swap at an unaligned address succeeded on %d ranks", wins);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int a, b, f1, f2, c;
        double x, y;
        memcpy(&a, mem + 1, 4); memcpy(&b, mem + 8, 4);
        memcpy(&x, mem + 17, 8); memcpy(&y, mem + 32, 8);
        memcpy(&f1, mem + 41, 4); memcpy(&f2, mem + 48, 4); memcpy(&c, mem + 53, 4);
        CHECK(a == 10 * size && b == 10 * size, "int sums unaligned %d aligned %d, want %d", a, b, 10 * size);
        CHECK(x == 5.0 * size && y == 5.0 * size, "double sums unaligned %g aligned %g, want %g", x, y, 5.0 * size);
        CHECK(f1 == size && f2 == size, "fetch-and-op counters %d %d, want %d", f1, f2, size);
        CHECK(c >= 1 && c <= size, "compare-and-swap left %d", c);
    }
    MPI_Win_free(&win);
}

static void win_handler(MPI_Win *w, int *code, ...) {
    (void)w;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

static void errors(void) {
    int buf[4] = {0};
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int cls;
    MPI_Win_fence(0, win);
    MPI_Error_class(MPI_Put(buf, 1, MPI_INT, 0, 4, 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "put past the end: class %d", cls);
    MPI_Error_class(MPI_Put(buf, 2, MPI_INT, 0, 3, 2, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "put across the end: class %d", cls);
    MPI_Error_class(MPI_Put(buf, 1, MPI_INT, 0, -1, 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_DISP, "negative disp: class %d", cls);
    MPI_Error_class(MPI_Put(buf, 1, MPI_INT, size, 0, 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RANK, "target rank = size: class %d", cls);
    MPI_Error_class(MPI_Accumulate(buf, 1, MPI_INT, 0, 0, 1, MPI_FLOAT, MPI_SUM, win), &cls);
    CHECK(cls == MPI_ERR_TYPE, "accumulate int into float: class %d", cls);
    MPI_Error_class(MPI_Accumulate(buf, 1, MPI_FLOAT, 0, 0, 1, MPI_FLOAT, MPI_BAND, win), &cls);
    CHECK(cls == MPI_ERR_OP, "band on float: class %d", cls);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Error_class(MPI_Put(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "put outside an epoch: class %d", cls);
    MPI_Error_class(MPI_Win_unlock(0, win), &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "unlock without lock: class %d", cls);
    MPI_Error_class(MPI_Win_lock(99, 0, 0, win), &cls);
    CHECK(cls == MPI_ERR_LOCKTYPE, "bad lock type: class %d", cls);
    MPI_Error_class(MPI_Win_fence(0x7, win), &cls);
    CHECK(cls == MPI_ERR_ASSERT, "bad assert: class %d", cls);
    MPI_Error_class(MPI_Win_complete(win), &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "complete without start: class %d", cls);
    MPI_Request rq;
    MPI_Error_class(MPI_Rput(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, win, &rq), &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "rput outside passive epoch: class %d", cls);
    MPI_Error_class(MPI_Win_attach(win, buf, 4), &cls);
    CHECK(cls == MPI_ERR_RMA_FLAVOR, "attach to a create window: class %d", cls);
    /* a user handler gets the window's errors */
    MPI_Errhandler eh;
    MPI_Win_create_errhandler(win_handler, &eh);
    MPI_Win_set_errhandler(win, eh);
    MPI_Errhandler got;
    MPI_Win_get_errhandler(win, &got);
    CHECK(got == eh, "get_errhandler");
    MPI_Put(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    CHECK(handler_calls == 1 && handler_class == MPI_ERR_RMA_SYNC, "user handler: %d calls, class %d",
          handler_calls, handler_class);
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    CHECK(handler_calls == 2 && handler_class == MPI_ERR_OTHER, "call_errhandler");
    MPI_Errhandler_free(&eh);
    MPI_Win_free(&win);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Error_class(MPI_Win_fence(0, MPI_WIN_NULL), &cls);
    CHECK(cls == MPI_ERR_WIN, "fence on MPI_WIN_NULL: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Comm node;
    int nsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
    one_node = nsize == size;
    for (int f = 0; f < NFLAVORS; f++) {
        if (!one_node && f == SHARED) continue;
        if (!one_node && f == DYNAMIC) dynamic_across();
        if (f == DYNAMIC) dynamic_bounds();
        fence_put_get(f);
        accumulates(f);
        pscw(f);
        passive(f);
    }
    if (one_node) queries();
    unaligned();
    errors();
    MPI_Finalize();
    if (rank == 0) printf("rma_basic ok\n");
    return 0;
}
